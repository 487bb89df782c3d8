/*===- fake_kernel.c - A hand-written ABI-v2 kernel library for tests ----===*
 *
 * A small, honest attnc kernel written by hand in C (naive float32 loops),
 * so that the runtime and attnc-run can be tested without the compiler:
 *   name fake_attn, d_model 16, heads 2, kv_heads 2, head_dim 8,
 *   mask causal (bottom_right), bias, out_proj, gpt2_conv1d weights,
 *   packed buffer = the storage tensors back to back.
 *
 * The environment variable ATTNC_FAKE_KERNEL (read by every query call)
 * corrupts it on purpose, one comma-separated item at a time:
 *   metadata:  packed_floats=N workspace_per_row=N workspace_fixed=N
 *              stack_bytes=N max_seq_len=N mask=N isa=N dtype=N
 *              layout=N features=N num_weights=N out_dim=N scale=X
 *              causal_align=N long_name no_selected_isa null_triple
 *              unterminated_name selected_isa=N (what selected_isa()
 *              returns; forward then fails with ATTNC_ERR_ISA for 0xffffffff)
 *   entries:   workspace_size=N (what NAME_workspace_size returns)
 *   results:   nan (y[0] = NaN), inf (y[0] = +inf), wrong_scale (the
 *              softmax uses 1.05 x scale), drop_key (each query ignores
 *              key 0 unless it is its only key), perturb=X (y[0] += X)
 *   state:     shared_scratch (q/k/v in one static buffer instead of the
 *              caller's workspace: concurrent calls race), call_counter
 *              (y[0] += calls so far: no two calls agree)
 *===---------------------------------------------------------------------===*/
#include "attnc/runtime/abi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define D 16
#define H 2
#define HD 8
#define N3 (3 * H * HD)
#define QW (H * HD)

static attnc_tensor_info g_tensors[4] = {
    {"c_attn.weight", 2, 0, {D, N3}},
    {"c_attn.bias", 1, 0, {N3, 1}},
    {"c_proj.weight", 2, 0, {QW, D}},
    {"c_proj.bias", 1, 0, {D, 1}},
};
#define PACKED (D * N3 + N3 + QW * D + D)

static uint32_t g_selected = ATTNC_ISA_X86_64;
static uint32_t select_isa(void) { return g_selected; }

static attnc_kernel_info g_info;
static char g_long_name[400];
static char g_unterminated[300];
static int64_t g_ws_override = -1;
static int g_have_ws_override = 0;
static int g_nan = 0, g_inf = 0, g_wrong_scale = 0, g_drop_key = 0;
static double g_perturb = 0;
static int g_shared = 0, g_counter = 0;
static float g_scratch[1 << 20];
static long g_calls = 0;

static int item(const char *s, const char *key, const char **val) {
  size_t n = strlen(key);
  if (strncmp(s, key, n) != 0)
    return 0;
  if (s[n] == '=') {
    *val = s + n + 1;
    return 1;
  }
  if (s[n] == ',' || s[n] == '\0') {
    *val = 0;
    return 1;
  }
  return 0;
}

static void configure(void) {
  attnc_kernel_info i;
  memset(&i, 0, sizeof i);
  i.abi_version = ATTNC_ABI_VERSION;
  i.struct_size = sizeof(attnc_kernel_info);
  i.name = "fake_attn";
  i.spec_hash = 0xfa4e;
  i.d_model = D;
  i.heads = H;
  i.kv_heads = H;
  i.head_dim = HD;
  i.out_dim = D;
  i.mask = ATTNC_MASK_CAUSAL;
  i.causal_align = 0;
  i.bias = 1;
  i.out_proj = 1;
  i.scale = 0.35355339059327373; /* 1/sqrt(8) */
  i.dtype = ATTNC_DTYPE_F32;
  i.isa = ATTNC_ISA_X86_64;
  i.weight_layout = ATTNC_LAYOUT_GPT2_CONV1D;
  i.num_weights = 4;
  i.weights = g_tensors;
  i.packed_floats = PACKED;
  i.workspace_per_row = N3 + QW;
  i.workspace_fixed = 0;
  i.stack_bytes = 4096;
  i.selected_isa = select_isa;
  i.target_triple = "x86_64-unknown-linux-gnu";
  i.target_cpu = "x86-64";
  i.compiler_version = "fake_kernel.c (tests)";
  g_have_ws_override = 0;
  g_nan = g_inf = g_wrong_scale = g_drop_key = 0;
  g_perturb = 0;
  g_shared = g_counter = 0;
  g_selected = ATTNC_ISA_X86_64;

  const char *env = getenv("ATTNC_FAKE_KERNEL");
  for (const char *s = env; s && *s;) {
    const char *v = 0;
    if (item(s, "packed_floats", &v) && v) i.packed_floats = strtoll(v, 0, 0);
    else if (item(s, "workspace_per_row", &v) && v) i.workspace_per_row = strtoll(v, 0, 0);
    else if (item(s, "workspace_fixed", &v) && v) i.workspace_fixed = strtoll(v, 0, 0);
    else if (item(s, "workspace_size", &v) && v) { g_ws_override = strtoll(v, 0, 0); g_have_ws_override = 1; }
    else if (item(s, "stack_bytes", &v) && v) i.stack_bytes = strtoll(v, 0, 0);
    else if (item(s, "max_seq_len", &v) && v) i.max_seq_len = strtoll(v, 0, 0);
    else if (item(s, "mask", &v) && v) i.mask = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "causal_align", &v) && v) i.causal_align = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "isa", &v) && v) i.isa = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "dtype", &v) && v) i.dtype = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "layout", &v) && v) i.weight_layout = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "features", &v) && v) i.features = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "num_weights", &v) && v) i.num_weights = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "out_dim", &v) && v) i.out_dim = strtoll(v, 0, 0);
    else if (item(s, "scale", &v) && v) i.scale = strtod(v, 0);
    else if (item(s, "long_name", &v)) {
      memset(g_long_name, 'a', sizeof g_long_name - 1);
      i.name = g_long_name;
    } else if (item(s, "unterminated_name", &v)) {
      memset(g_unterminated, 'b', sizeof g_unterminated); /* no NUL inside */
      i.target_cpu = g_unterminated;
    } else if (item(s, "no_selected_isa", &v)) i.selected_isa = 0;
    else if (item(s, "null_triple", &v)) i.target_triple = 0;
    else if (item(s, "nan", &v)) g_nan = 1;
    else if (item(s, "inf", &v)) g_inf = 1;
    else if (item(s, "wrong_scale", &v)) g_wrong_scale = 1;
    else if (item(s, "drop_key", &v)) g_drop_key = 1;
    else if (item(s, "perturb", &v) && v) g_perturb = strtod(v, 0);
    else if (item(s, "shared_scratch", &v)) g_shared = 1;
    else if (item(s, "selected_isa", &v) && v) g_selected = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "call_counter", &v)) g_counter = 1;
    s = strchr(s, ',');
    if (s) ++s;
  }
  g_info = i;
}

const attnc_kernel_info *fake_attn_query(uint32_t max_abi_version) {
  configure();
  return max_abi_version >= ATTNC_ABI_VERSION ? &g_info : 0;
}
const attnc_kernel_info *attnc_query(uint32_t v) { return fake_attn_query(v); }

int fake_attn_pack(const float *const *weights, const int64_t *weight_floats,
                   int64_t num_weights, float *packed, int64_t packed_floats) {
  static const int64_t want[4] = {D * N3, N3, QW * D, D};
  int64_t off = 0, k;
  if (!weights || !weight_floats || !packed)
    return ATTNC_ERR_NULL_ARG;
  if (num_weights != 4 || packed_floats != PACKED)
    return ATTNC_ERR_BUFFER_SIZE;
  for (k = 0; k < 4; ++k) {
    if (!weights[k])
      return ATTNC_ERR_NULL_ARG;
    if (weight_floats[k] != want[k])
      return ATTNC_ERR_BUFFER_SIZE;
  }
  for (k = 0; k < 4; ++k) {
    memcpy(packed + off, weights[k], (size_t)want[k] * sizeof(float));
    off += want[k];
  }
  return ATTNC_OK;
}

static int64_t align64(int64_t n) { return (n + 63) / 64 * 64; }

int64_t fake_attn_workspace_size(int64_t batch, int64_t seq, int64_t kv_seq) {
  int64_t rows;
  if (g_have_ws_override)
    return g_ws_override;
  if (batch < 1 || seq < 1 || kv_seq != seq)
    return -1;
  if (__builtin_mul_overflow(batch, seq, &rows) || rows > (INT64_MAX / 4) / (N3 + QW + 64))
    return -1;
  return align64(rows * N3 * 4) + align64(rows * QW * 4);
}

struct attn_ctx {
  const float *qkv;
  float *o;
  int64_t seq;
  float scale;
};

static void attn_task(void *ctx, int64_t begin, int64_t end) {
  const struct attn_ctx *x = (const struct attn_ctx *)ctx;
  int64_t bh, t, j, c;
  for (bh = begin; bh < end; ++bh) {
    int64_t b = bh / H, h = bh % H;
    for (t = 0; t < x->seq; ++t) {
      const float *q = x->qkv + (b * x->seq + t) * N3 + h * HD;
      float m = -INFINITY, sum = 0, acc[HD];
      int64_t first = (g_drop_key && t > 0) ? 1 : 0;
      for (c = 0; c < HD; ++c)
        acc[c] = 0;
      /* online softmax: one pass over the visible keys */
      for (j = first; j <= t; ++j) {
        const float *k = x->qkv + (b * x->seq + j) * N3 + QW + h * HD;
        const float *v = x->qkv + (b * x->seq + j) * N3 + 2 * QW + h * HD;
        float s = 0, mnew, corr, p;
        for (c = 0; c < HD; ++c)
          s += q[c] * k[c];
        s *= x->scale;
        mnew = s > m ? s : m;
        corr = expf(m - mnew);
        p = expf(s - mnew);
        sum = sum * corr + p;
        for (c = 0; c < HD; ++c)
          acc[c] = acc[c] * corr + p * v[c];
        m = mnew;
      }
      for (c = 0; c < HD; ++c)
        x->o[(b * x->seq + t) * QW + h * HD + c] = acc[c] / sum;
    }
  }
}

int fake_attn_forward(const attnc_forward_args *a) {
  int64_t rows, j, c, r;
  float *qkv, *o;
  const float *wa, *ba, *wp, *bp;
  if (!a)
    return ATTNC_ERR_NULL_ARG;
  if (a->struct_size != sizeof(attnc_forward_args))
    return ATTNC_ERR_ARGS;
  if (g_selected == ATTNC_ISA_NONE)
    return ATTNC_ERR_ISA;
  if (!a->packed || !a->x || !a->y || !a->workspace)
    return ATTNC_ERR_NULL_ARG;
  if (a->batch < 1 || a->seq_len < 1 ||
      __builtin_mul_overflow(a->batch, a->seq_len, &rows) || rows > INT64_MAX / 1024)
    return ATTNC_ERR_BAD_SHAPE;
  if (a->packed_floats != PACKED || a->x_floats != rows * D || a->y_floats != rows * D)
    return ATTNC_ERR_BUFFER_SIZE;
  if (a->workspace_bytes < fake_attn_workspace_size(a->batch, a->seq_len, a->seq_len))
    return ATTNC_ERR_WORKSPACE;
  wa = a->packed;
  ba = wa + D * N3;
  wp = ba + N3;
  bp = wp + QW * D;
  qkv = (float *)a->workspace;
  if (g_shared && rows * N3 <= (int64_t)(sizeof g_scratch / sizeof *g_scratch))
    qkv = g_scratch; /* deliberately wrong: global state */
  o = (float *)((char *)a->workspace + align64(rows * N3 * 4));
  /* qkv = x Wa + ba */
  for (r = 0; r < rows; ++r)
    for (c = 0; c < N3; ++c) {
      float acc = ba[c];
      for (j = 0; j < D; ++j)
        acc += a->x[r * D + j] * wa[j * N3 + c];
      qkv[r * N3 + c] = acc;
    }
  /* causal attention: one task per (batch, head), through the caller's
   * parallel-for hook when there is one */
  {
    struct attn_ctx c;
    c.qkv = qkv;
    c.o = o;
    c.seq = a->seq_len;
    c.scale = (float)g_info.scale * (g_wrong_scale ? 1.05f : 1.0f);
    if (a->parallel_for) {
      if (a->parallel_for(a->parallel_ctx, a->batch * H, attn_task, &c) != 0)
        return ATTNC_ERR_THREADS;
    } else {
      attn_task(&c, 0, a->batch * H);
    }
  }
  /* y = o Wp + bp */
  for (r = 0; r < rows; ++r)
    for (c = 0; c < D; ++c) {
      float acc = bp[c];
      for (j = 0; j < QW; ++j)
        acc += o[r * QW + j] * wp[j * D + c];
      a->y[r * D + c] = acc;
    }
  if (g_nan)
    a->y[0] = NAN;
  if (g_inf)
    a->y[0] = INFINITY;
  a->y[0] += (float)g_perturb;
  if (g_counter)
    a->y[0] += (float)++g_calls;
  return ATTNC_OK;
}
