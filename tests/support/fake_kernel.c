/*===- fake_kernel.c - A hand-written ABI-v2 kernel library for tests ----===*
 *
 * A small, honest attnc kernel written by hand in C (naive float32 loops),
 * so that the runtime and attnc-run can be tested without the compiler:
 *   name fake_attn, d_model 16, heads 2, kv_heads 2, head_dim 8,
 *   mask causal (bottom_right), bias, out_proj, gpt2_conv1d weights,
 *   packed buffer = the storage tensors back to back.
 *
 * The environment variable ATTNC_FAKE_KERNEL (read by every query call)
 * changes or corrupts it on purpose, one comma-separated item at a time:
 *   metadata:  packed_bytes=N workspace_per_row=N workspace_fixed=N weight_dtype=N
 *              stack_bytes=N max_seq_len=N mask=N isa=N dtype=N
 *              layout=N features=N num_weights=N out_dim=N scale=X
 *              causal_align=N window=N long_name no_selected_isa
 *              null_triple unterminated_name selected_isa=N (what
 *              selected_isa() returns; forward then fails with
 *              ATTNC_ERR_ISA for 0xffffffff)
 *   entries:   workspace_size=N (what NAME_workspace_size returns)
 *   results:   nan (y[0] = NaN), inf (y[0] = +inf), wrong_scale (the
 *              softmax uses 1.05 x scale), scale_error=X (the softmax
 *              uses (1 + X) x scale: a relative scale error, e.g. 1e-3),
 *              drop_key (each query ignores its first visible key unless
 *              it is its only one), perturb=X (y[0] += X)
 *   variants:  ignore_lengths (every token valid whatever lengths says),
 *              pad_bias (padded query rows get the output bias, not 0),
 *              wrong_align (the other causal alignment), probs_off=X (the
 *              first valid weight of every probs row += X)
 *   device:    isa=6,features=16 plays a CUDA kernel (cuda-sm90; with
 *              selected_isa=6 or =0xffffffff): the runtime must hand it
 *              only "device" pointers (forwardDevice, decodeDevice), which
 *              here are host memory all the same
 *   decode:    features with bit 8 (ATTNC_FEATURE_DECODE; 24 with cuda):
 *              forward fills args->k_cache / v_cache, and
 *              fake_attn_decode / _decode_workspace_bytes run one token
 *              per sequence against them (causal or sliding-window masks
 *              only; seq_len 1), decode_skip_self (the decode step's key
 *              range ends one short: the new token does not see itself)
 *   state:     shared_scratch (q/k/v in one static buffer instead of the
 *              caller's workspace: concurrent calls race), call_counter
 *              (y[0] += calls so far: no two calls agree)
 *
 * The mask, causal_align, window and features it declares are the ones it
 * computes (docs/abi.md, the attention variants): padding lengths
 * (ATTNC_FEATURE_LENGTHS), K/V from x_kv (ATTNC_FEATURE_CROSS) and the
 * attention weights (ATTNC_FEATURE_PROBS), in plain loops of its own.
 *===---------------------------------------------------------------------===*/
#include "attnc/runtime/abi.h"

#include <math.h>
#include <stdint.h>
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
static double g_perturb = 0, g_scale_error = 0;
static int g_shared = 0, g_counter = 0;
static int g_ignore_lengths = 0, g_pad_bias = 0, g_wrong_align = 0;
static float g_probs_off = 0;
static int g_decode_skip_self = 0;
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
  i.bias_flags = ATTNC_BIAS_Q | ATTNC_BIAS_K | ATTNC_BIAS_V | ATTNC_BIAS_O;
  i.tp_size = 1;
  i.tp_heads = H;
  i.tp_kv_heads = H;
  i.weight_dtype = ATTNC_DTYPE_F32;
  for (int t = 0; t < 4; ++t)
    g_tensors[t].dtype = ATTNC_DTYPE_F32; /* (weight_dtype=N below sets them) */
  i.out_proj = 1;
  i.scale = 0.35355339059327373; /* 1/sqrt(8) */
  i.dtype = ATTNC_DTYPE_F32;
  i.isa = ATTNC_ISA_X86_64;
  i.weight_layout = ATTNC_LAYOUT_GPT2_CONV1D;
  i.num_weights = 4;
  i.weights = g_tensors;
  i.packed_bytes = PACKED * 4;
  i.workspace_per_row = N3 + QW;
  i.workspace_fixed = 0;
  i.stack_bytes = 4096;
  i.selected_isa = select_isa;
  i.target_triple = "x86_64-unknown-linux-gnu";
  i.target_cpu = "x86-64";
  i.compiler_version = "fake_kernel.c (tests)";
  g_have_ws_override = 0;
  g_nan = g_inf = g_wrong_scale = g_drop_key = 0;
  g_perturb = g_scale_error = 0;
  g_shared = g_counter = 0;
  g_ignore_lengths = g_pad_bias = g_wrong_align = 0;
  g_probs_off = 0;
  g_decode_skip_self = 0;
  g_selected = ATTNC_ISA_X86_64;

  const char *env = getenv("ATTNC_FAKE_KERNEL");
  for (const char *s = env; s && *s;) {
    const char *v = 0;
    if (item(s, "packed_bytes", &v) && v) i.packed_bytes = strtoll(v, 0, 0);
    else if (item(s, "workspace_per_row", &v) && v) i.workspace_per_row = strtoll(v, 0, 0);
    else if (item(s, "workspace_fixed", &v) && v) i.workspace_fixed = strtoll(v, 0, 0);
    else if (item(s, "workspace_size", &v) && v) { g_ws_override = strtoll(v, 0, 0); g_have_ws_override = 1; }
    else if (item(s, "stack_bytes", &v) && v) i.stack_bytes = strtoll(v, 0, 0);
    else if (item(s, "max_seq_len", &v) && v) i.max_seq_len = strtoll(v, 0, 0);
    else if (item(s, "mask", &v) && v) i.mask = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "weight_dtype", &v) && v) {
      i.weight_dtype = (uint32_t)strtoul(v, 0, 0);
      for (int t = 0; t < 4; ++t)
        g_tensors[t].dtype = i.weight_dtype; /* the table states it per tensor */
    }
    else if (item(s, "causal_align", &v) && v) i.causal_align = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "window", &v) && v) i.window = strtoll(v, 0, 0);
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
    else if (item(s, "scale_error", &v) && v) g_scale_error = strtod(v, 0);
    else if (item(s, "shared_scratch", &v)) g_shared = 1;
    else if (item(s, "selected_isa", &v) && v) g_selected = (uint32_t)strtoul(v, 0, 0);
    else if (item(s, "call_counter", &v)) g_counter = 1;
    else if (item(s, "ignore_lengths", &v)) g_ignore_lengths = 1;
    else if (item(s, "pad_bias", &v)) g_pad_bias = 1;
    else if (item(s, "wrong_align", &v)) g_wrong_align = 1;
    else if (item(s, "probs_off", &v) && v) g_probs_off = (float)strtod(v, 0);
    else if (item(s, "decode_skip_self", &v)) g_decode_skip_self = 1;
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

int fake_attn_pack(const void *const *weights, const int64_t *weight_elems,
                   int64_t num_weights, void *packed, int64_t packed_bytes) {
  static const int64_t want[4] = {D * N3, N3, QW * D, D};
  int64_t off = 0, k;
  if (!weights || !weight_elems || !packed)
    return ATTNC_ERR_NULL_ARG;
  if (num_weights != 4 || packed_bytes != PACKED * 4)
    return ATTNC_ERR_BUFFER_SIZE;
  for (k = 0; k < 4; ++k) {
    if (!weights[k])
      return ATTNC_ERR_NULL_ARG;
    if (weight_elems[k] != want[k])
      return ATTNC_ERR_BUFFER_SIZE;
  }
  for (k = 0; k < 4; ++k) {
    memcpy((float *)packed + off, weights[k], (size_t)want[k] * sizeof(float));
    off += want[k];
  }
  return ATTNC_OK;
}

static int64_t align64(int64_t n) { return (n + 63) / 64 * 64; }

/* The workspace: q/k/v of x's rows, the attention output, and (cross)
 * q/k/v of x_kv's rows. */
int64_t fake_attn_workspace_size(int64_t batch, int64_t seq, int64_t kv_seq) {
  int64_t rows, kv_rows = 0;
  const int cross = (g_info.features & ATTNC_FEATURE_CROSS) != 0;
  if (g_have_ws_override)
    return g_ws_override;
  if (batch < 1 || seq < 1 || (cross ? kv_seq < 1 : kv_seq != seq))
    return -1;
  if (__builtin_mul_overflow(batch, seq, &rows) || rows > (INT64_MAX / 4) / (N3 + QW + 64))
    return -1;
  if (cross && (__builtin_mul_overflow(batch, kv_seq, &kv_rows) ||
                kv_rows > (INT64_MAX / 4) / (N3 + QW + 64) - rows))
    return -1;
  return align64(rows * N3 * 4) + align64(rows * QW * 4) +
         (cross ? align64(kv_rows * N3 * 4) : 0);
}

struct attn_ctx {
  const float *qkv;    /* [batch * seq, N3]: q of x (and k, v for self) */
  const float *kv;     /* [batch * kv_seq, N3]: k, v (cross: of x_kv) */
  float *o;
  float *probs;        /* [batch, H, seq, kv_seq] or NULL */
  const int32_t *lengths, *kv_lengths;
  int64_t seq, kv_seq;
  float scale;
};

static void attn_task(void *ctx, int64_t begin, int64_t end) {
  const struct attn_ctx *x = (const struct attn_ctx *)ctx;
  const uint32_t mask = g_info.mask;
  const int causal = attnc_mask_causal(mask);
  const int top_left = (g_info.causal_align == 1) != g_wrong_align;
  int64_t bh, t, j, c;
  for (bh = begin; bh < end; ++bh) {
    int64_t b = bh / H, h = bh % H;
    /* Valid queries and keys of this sequence (self-attention: the same). */
    int64_t qv = x->lengths ? x->lengths[b] : x->seq;
    int64_t kvv = x->kv_lengths ? x->kv_lengths[b]
                  : x->kv == x->qkv ? qv : x->kv_seq;
    int64_t off = top_left ? 0 : kvv - qv;
    for (t = 0; t < x->seq; ++t) {
      const float *q = x->qkv + (b * x->seq + t) * N3 + h * HD;
      float *orow = x->o + (b * x->seq + t) * QW + h * HD;
      float *prow = x->probs ? x->probs + ((b * H + h) * x->seq + t) * x->kv_seq : 0;
      float m = -INFINITY, sum = 0, acc[HD];
      int64_t lo = 0, hi = t < qv ? kvv : 0; /* visible keys: [lo, hi) */
      if (causal && hi > t + off + 1)
        hi = t + off + 1;
      if (attnc_mask_sliding(mask) && lo < t + off - g_info.window + 1)
        lo = t + off - g_info.window + 1;
      if (attnc_mask_chunked(mask) && t + off >= 0 && lo < (t + off) / g_info.window * g_info.window)
        lo = (t + off) / g_info.window * g_info.window;
      if (g_drop_key && hi - lo > 1)
        ++lo;
      for (c = 0; c < HD; ++c)
        acc[c] = 0;
      if (prow)
        for (j = 0; j < x->kv_seq; ++j)
          prow[j] = 0;
      /* online softmax: one pass over the visible keys */
      for (j = lo; j < hi; ++j) {
        const float *k = x->kv + (b * x->kv_seq + j) * N3 + QW + h * HD;
        const float *v = x->kv + (b * x->kv_seq + j) * N3 + 2 * QW + h * HD;
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
        orow[c] = hi > lo ? acc[c] / sum : 0.0f;
      /* the weights: a second pass with the final max and sum */
      if (prow && hi > lo) {
        for (j = lo; j < hi; ++j) {
          const float *k = x->kv + (b * x->kv_seq + j) * N3 + QW + h * HD;
          float s = 0;
          for (c = 0; c < HD; ++c)
            s += q[c] * k[c];
          prow[j] = expf(s * x->scale - m) / sum;
        }
        prow[lo] += g_probs_off;
      }
    }
  }
}

/* rows [r0, r1) of out = in Wa + ba (the fused q/k/v projection) */
static void project(const float *in, const float *wa, const float *ba,
                    float *out, int64_t rows) {
  int64_t r, c, j;
  for (r = 0; r < rows; ++r)
    for (c = 0; c < N3; ++c) {
      float acc = ba[c];
      for (j = 0; j < D; ++j)
        acc += in[r * D + j] * wa[j * N3 + c];
      out[r * N3 + c] = acc;
    }
}

static int fake_attn_forward_f32(const attnc_forward_args *a);

/* dtype=1 (bf16): x, x_kv in and y, probs out as bfloat16 (RNE), the
 * arithmetic in float as for float32; everything else the same. */
static float bf16_to_f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float v;
  memcpy(&v, &u, 4);
  return v;
}
static uint16_t f_to_bf16(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static float *widened(const void *p, int64_t n) {
  float *f = (float *)malloc((size_t)(n > 0 ? n : 1) * 4);
  int64_t i;
  for (i = 0; f && i < n; ++i)
    f[i] = bf16_to_f(((const uint16_t *)p)[i]);
  return f;
}

int fake_attn_forward(const attnc_forward_args *a) {
  attnc_forward_args c;
  float *x, *xkv = 0, *y, *probs = 0;
  int64_t i;
  int rc;
  if (!a || g_info.dtype != ATTNC_DTYPE_BF16 || !a->x || !a->y)
    return fake_attn_forward_f32(a);
  c = *a;
  x = widened(a->x, a->x_elems);
  y = (float *)calloc((size_t)(a->y_elems > 0 ? a->y_elems : 1), 4);
  if (a->x_kv)
    xkv = widened(a->x_kv, a->x_kv_elems);
  if (a->probs)
    probs = (float *)calloc((size_t)(a->probs_elems > 0 ? a->probs_elems : 1), 4);
  c.x = x;
  c.y = y;
  if (a->x_kv)
    c.x_kv = xkv;
  if (a->probs)
    c.probs = probs;
  rc = fake_attn_forward_f32(&c);
  for (i = 0; rc == ATTNC_OK && i < a->y_elems; ++i)
    ((uint16_t *)a->y)[i] = f_to_bf16(y[i]);
  for (i = 0; rc == ATTNC_OK && probs && i < a->probs_elems; ++i)
    ((uint16_t *)a->probs)[i] = f_to_bf16(probs[i]);
  free(x);
  free(y);
  free(xkv);
  free(probs);
  return rc;
}

static int fake_attn_forward_f32(const attnc_forward_args *a) {
  int64_t rows, kv_rows = 0, kv_seq, j, c, r, b;
  float *qkv, *o, *kvbuf, *k_cache, *v_cache, *y;
  int64_t cache_elems, cache_len;
  const float *wa, *ba, *wp, *bp;
  const uint32_t f = g_info.features;
  const int32_t *lengths;
  if (!a)
    return ATTNC_ERR_NULL_ARG;
  /* Without the decode feature the cache fields must be empty, and so
   * must the stream unless it plays a CUDA kernel (features=16: it still
   * computes on the host, which lets the runtime's device path be tested
   * without a GPU; the stream is ignored). */
  if (a->struct_size != sizeof(attnc_forward_args))
    return ATTNC_ERR_ARGS;
  k_cache = (float *)a->k_cache;
  v_cache = (float *)a->v_cache;
  cache_elems = a->cache_elems;
  cache_len = a->cache_len;
  y = (float *)a->y;
  if ((!(f & ATTNC_FEATURE_DECODE) || (f & ATTNC_FEATURE_CROSS)) &&
      (k_cache || v_cache || cache_elems || cache_len))
    return ATTNC_ERR_ARGS;
  if ((k_cache != 0) != (v_cache != 0))
    return ATTNC_ERR_NULL_ARG;
  if (k_cache && k_cache == v_cache)
    return ATTNC_ERR_ARGS;
  if (k_cache && (cache_len < a->seq_len || a->batch < 1 ||
                  cache_len > INT64_MAX / 1024 / a->batch))
    return ATTNC_ERR_BAD_SHAPE;
  if (k_cache ? cache_elems != a->batch * H * cache_len * HD
              : cache_elems || cache_len)
    return ATTNC_ERR_BUFFER_SIZE;
  if (a->stream && !(f & ATTNC_FEATURE_CUDA))
    return ATTNC_ERR_ARGS;
  if (g_selected == ATTNC_ISA_NONE)
    return ATTNC_ERR_ISA;
  /* A variant field this kernel does not read must be NULL / 0. */
  if ((!(f & ATTNC_FEATURE_LENGTHS) && (a->lengths || a->kv_lengths)) ||
      (!(f & ATTNC_FEATURE_CROSS) &&
       (a->x_kv || a->x_kv_elems || a->kv_seq_len || a->kv_lengths)) ||
      (!(f & ATTNC_FEATURE_PROBS) && (a->probs || a->probs_elems)))
    return ATTNC_ERR_ARGS;
  if (!a->packed || !a->x || !a->y || !a->workspace)
    return ATTNC_ERR_NULL_ARG;
  if ((f & ATTNC_FEATURE_CROSS) && !a->x_kv)
    return ATTNC_ERR_NULL_ARG;
  kv_seq = (f & ATTNC_FEATURE_CROSS) ? a->kv_seq_len : a->seq_len;
  if (a->batch < 1 || a->seq_len < 1 || kv_seq < 1 ||
      __builtin_mul_overflow(a->batch, a->seq_len, &rows) || rows > INT64_MAX / 1024 ||
      __builtin_mul_overflow(a->batch, kv_seq, &kv_rows) || kv_rows > INT64_MAX / 1024 ||
      (a->probs && (a->seq_len > INT64_MAX / 1024 / kv_seq ||
                    a->seq_len * kv_seq > INT64_MAX / 1024 / a->batch)))
    return ATTNC_ERR_BAD_SHAPE;
  if (a->packed_bytes != PACKED * 4 || a->x_elems != rows * D || a->y_elems != rows * D)
    return ATTNC_ERR_BUFFER_SIZE;
  if ((f & ATTNC_FEATURE_CROSS) && a->x_kv_elems != kv_rows * D)
    return ATTNC_ERR_BUFFER_SIZE;
  if (a->probs && a->probs_elems != a->batch * H * a->seq_len * kv_seq)
    return ATTNC_ERR_BUFFER_SIZE;
  for (b = 0; b < a->batch; ++b)
    if ((a->lengths && (a->lengths[b] < 0 || a->lengths[b] > a->seq_len)) ||
        (a->kv_lengths && (a->kv_lengths[b] < 0 || a->kv_lengths[b] > kv_seq)))
      return ATTNC_ERR_ARGS;
  if (a->workspace_bytes < fake_attn_workspace_size(a->batch, a->seq_len, kv_seq))
    return ATTNC_ERR_WORKSPACE;
  lengths = g_ignore_lengths ? 0 : a->lengths;
  wa = (const float *)a->packed;
  ba = wa + D * N3;
  wp = ba + N3;
  bp = wp + QW * D;
  qkv = (float *)a->workspace;
  if (g_shared && rows * N3 <= (int64_t)(sizeof g_scratch / sizeof *g_scratch))
    qkv = g_scratch; /* deliberately wrong: global state */
  o = (float *)((char *)a->workspace + align64(rows * N3 * 4));
  kvbuf = qkv;
  /* qkv = x Wa + ba; cross: also of x_kv (only its k, v columns are read) */
  project((const float *)a->x, wa, ba, qkv, rows);
  if (f & ATTNC_FEATURE_CROSS) {
    kvbuf = (float *)((char *)a->workspace + align64(rows * N3 * 4) +
                      align64(rows * QW * 4));
    project((const float *)a->x_kv, wa, ba, kvbuf, kv_rows);
  }
  /* the KV cache: rows [0, seq) of each sequence's K and V */
  if (k_cache)
    for (r = 0; r < rows; ++r) {
      int64_t bb = r / a->seq_len, t = r % a->seq_len, h;
      for (h = 0; h < H; ++h)
        for (c = 0; c < HD; ++c) {
          int64_t at = ((bb * H + h) * cache_len + t) * HD + c;
          k_cache[at] = qkv[r * N3 + QW + h * HD + c];
          v_cache[at] = qkv[r * N3 + 2 * QW + h * HD + c];
        }
    }
  /* attention: one task per (batch, head), through the caller's
   * parallel-for hook when there is one */
  {
    struct attn_ctx c;
    c.qkv = qkv;
    c.kv = kvbuf;
    c.o = o;
    c.probs = a->probs;
    c.lengths = lengths;
    c.kv_lengths = g_ignore_lengths ? 0 : a->kv_lengths;
    c.seq = a->seq_len;
    c.kv_seq = kv_seq;
    c.scale = (float)(g_info.scale * (1 + g_scale_error)) *
              (g_wrong_scale ? 1.05f : 1.0f);
    if (a->parallel_for) {
      if (a->parallel_for(a->parallel_ctx, a->batch * H, attn_task, &c) != 0)
        return ATTNC_ERR_THREADS;
    } else {
      attn_task(&c, 0, a->batch * H);
    }
  }
  /* y = o Wp + bp; padded query rows are zero */
  for (r = 0; r < rows; ++r) {
    int64_t t = r % a->seq_len, len = lengths ? lengths[r / a->seq_len] : a->seq_len;
    for (c = 0; c < D; ++c) {
      float acc = bp[c];
      for (j = 0; j < QW; ++j)
        acc += o[r * QW + j] * wp[j * D + c];
      y[r * D + c] = t < len || g_pad_bias ? acc : 0.0f;
    }
  }
  if (g_nan)
    y[0] = NAN;
  if (g_inf)
    y[0] = INFINITY;
  y[0] += (float)g_perturb;
  if (g_counter)
    y[0] += (float)++g_calls;
  return ATTNC_OK;
}

/* KV-cache decode (features & ATTNC_FEATURE_DECODE): q/k/v of each
 * sequence's new token, then its attention output. */
int64_t fake_attn_decode_workspace_bytes(int64_t batch, int64_t seq_len,
                                         int64_t cache_len) {
  if (batch < 1 || seq_len != 1 || cache_len < 1 || batch > INT64_MAX / 1024 / (N3 + QW))
    return -1;
  return align64(batch * N3 * 4) + align64(batch * QW * 4);
}

int fake_attn_decode(const attnc_decode_args *a) {
  const uint32_t f = g_info.features;
  const float *wa, *ba, *wp, *bp;
  float *qkv, *o;
  int64_t b, h, c, j;
  if (!a)
    return ATTNC_ERR_NULL_ARG;
  if (a->struct_size != sizeof(attnc_decode_args))
    return ATTNC_ERR_ARGS;
  if (a->reserved0 || a->reserved1 || a->num_threads < 0)
    return ATTNC_ERR_ARGS;
  if (a->stream && !(f & ATTNC_FEATURE_CUDA))
    return ATTNC_ERR_ARGS;
  if (!(f & ATTNC_FEATURE_DECODE))
    return ATTNC_ERR_ARGS;
  if (g_selected == ATTNC_ISA_NONE)
    return ATTNC_ERR_ISA;
  if (!a->packed || !a->x || !a->y || !a->positions || !a->k_cache ||
      !a->v_cache || !a->workspace)
    return ATTNC_ERR_NULL_ARG;
  if (a->k_cache == a->v_cache)
    return ATTNC_ERR_ARGS;
  if (fake_attn_decode_workspace_bytes(a->batch, a->seq_len, a->cache_len) < 0 ||
      a->cache_len > INT64_MAX / 1024 / a->batch)
    return ATTNC_ERR_BAD_SHAPE;
  if (a->packed_bytes != PACKED * 4 || a->x_elems != a->batch * D ||
      a->y_elems != a->batch * D ||
      a->cache_elems != a->batch * H * a->cache_len * HD)
    return ATTNC_ERR_BUFFER_SIZE;
  for (b = 0; b < a->batch; ++b)
    if (a->positions[b] < 0 || a->positions[b] >= a->cache_len)
      return ATTNC_ERR_ARGS;
  if (a->workspace_bytes <
      fake_attn_decode_workspace_bytes(a->batch, a->seq_len, a->cache_len))
    return ATTNC_ERR_WORKSPACE;
  wa = (const float *)a->packed;
  ba = wa + D * N3;
  wp = ba + N3;
  bp = wp + QW * D;
  qkv = (float *)a->workspace;
  o = (float *)((char *)a->workspace + align64(a->batch * N3 * 4));
  project((const float *)a->x, wa, ba, qkv, a->batch);
  for (b = 0; b < a->batch; ++b) {
    const int64_t pos = a->positions[b];
    /* visible keys [lo, hi): the causal mask's bottom-right alignment */
    int64_t lo = 0, hi = g_decode_skip_self && pos > 0 ? pos : pos + 1;
    if (attnc_mask_sliding(g_info.mask) && lo < pos - g_info.window + 1)
      lo = pos - g_info.window + 1;
    if (attnc_mask_chunked(g_info.mask) && lo < pos / g_info.window * g_info.window)
      lo = pos / g_info.window * g_info.window;
    for (h = 0; h < H; ++h) {
      float *kc = (float *)a->k_cache + (b * H + h) * a->cache_len * HD;
      float *vc = (float *)a->v_cache + (b * H + h) * a->cache_len * HD;
      const float *q = qkv + b * N3 + h * HD;
      float m = -INFINITY, sum = 0, acc[HD];
      for (c = 0; c < HD; ++c) {
        kc[pos * HD + c] = qkv[b * N3 + QW + h * HD + c];
        vc[pos * HD + c] = qkv[b * N3 + 2 * QW + h * HD + c];
        acc[c] = 0;
      }
      for (j = lo; j < hi; ++j) {
        float s = 0, mnew, corr, p;
        for (c = 0; c < HD; ++c)
          s += q[c] * kc[j * HD + c];
        s *= (float)g_info.scale;
        mnew = s > m ? s : m;
        corr = expf(m - mnew);
        p = expf(s - mnew);
        sum = sum * corr + p;
        for (c = 0; c < HD; ++c)
          acc[c] = acc[c] * corr + p * vc[j * HD + c];
        m = mnew;
      }
      for (c = 0; c < HD; ++c)
        o[b * QW + h * HD + c] = acc[c] / sum;
    }
  }
  for (b = 0; b < a->batch; ++b)
    for (c = 0; c < D; ++c) {
      float acc = bp[c];
      for (j = 0; j < QW; ++j)
        acc += o[b * QW + j] * wp[j * D + c];
      ((float *)a->y)[b * D + c] = acc;
    }
  return ATTNC_OK;
}
