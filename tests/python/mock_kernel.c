/* mock_kernel.c - a hand-written ABI v2 kernel library, for testing the
 * Python package (and anything else that calls the C ABI) without attnc.
 *
 * torch_in_proj layout (or gpt2_conv1d with -DGPT2=1), biases, out_proj;
 * mask none or causal; naive loops in double. Shapes come from macros:
 *   cc -shared -fPIC -DNAME=mock -DD_MODEL=16 -DHEADS=4 -DCAUSAL=1 \
 *      -I runtime/include mock_kernel.c -o libmock.so -lm
 * Like a generated kernel it checks every size it is given, runs the
 * parallel_for hook when one is set (one task per batch row) and keeps no
 * global state besides its constant metadata. */
#include "attnc/runtime/abi.h"

#include <math.h>
#include <string.h>

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define STR2(x) #x
#define STR(x) STR2(x)
#define D D_MODEL
#define H HEADS
#define DH (D_MODEL / HEADS)
#define PACKED (3 * D * D + 3 * D + D * D + D)
#ifndef GPT2
#define GPT2 0
#endif
/* Element (j, k) of the math's W (out j, in k) in the stored matrix. */
#if GPT2
#define WI(j, k) wi[(k) * 3 * D + (j)]
#define WO(j, k) wo[(k) * D + (j)]
#else
#define WI(j, k) wi[(j) * D + (k)]
#define WO(j, k) wo[(j) * D + (k)]
#endif

static const attnc_tensor_info weights[4] = {
#if GPT2
    {"c_attn.weight", 2, 0, {D, 3 * D}},
    {"c_attn.bias", 1, 0, {3 * D, 1}},
    {"c_proj.weight", 2, 0, {D, D}},
    {"c_proj.bias", 1, 0, {D, 1}},
#else
    {"in_proj_weight", 2, 0, {3 * D, D}},
    {"in_proj_bias", 1, 0, {3 * D, 1}},
    {"out_proj.weight", 2, 0, {D, D}},
    {"out_proj.bias", 1, 0, {D, 1}},
#endif
};

static uint32_t selected(void) { return ATTNC_ISA_X86_64; }

static const attnc_kernel_info info = {
    .abi_version = ATTNC_ABI_VERSION, .struct_size = sizeof(attnc_kernel_info),
    .name = STR(NAME), .spec_hash = 0x1234u, .d_model = D, .heads = H, .kv_heads = H,
    .head_dim = DH, .out_dim = D, .mask = CAUSAL ? ATTNC_MASK_CAUSAL : ATTNC_MASK_NONE,
    .bias_flags = ATTNC_BIAS_Q | ATTNC_BIAS_K | ATTNC_BIAS_V | ATTNC_BIAS_O, .out_proj = 1,
    .scale = 0.0 /* set below */, .dtype = ATTNC_DTYPE_F32, .weight_dtype = ATTNC_DTYPE_F32,
    .isa = ATTNC_ISA_X86_64,
    .weight_layout = GPT2 ? ATTNC_LAYOUT_GPT2_CONV1D : ATTNC_LAYOUT_TORCH_IN_PROJ,
    .num_weights = 4, .weights = weights, .packed_bytes = PACKED * 4,
    .workspace_per_row = 4 * D, .selected_isa = selected,
    .target_triple = "x86_64-unknown-linux-gnu", .target_cpu = "x86-64",
    .compiler_version = "mock", .tp_size = 1, .tp_rank = 0,
    .tp_heads = H, .tp_kv_heads = H};

const attnc_kernel_info *CAT(NAME, query)(uint32_t max_abi_version) {
  static attnc_kernel_info i;
  if (max_abi_version < ATTNC_ABI_VERSION)
    return NULL;
  i = info;
  i.scale = 1.0 / sqrt((double)DH);
  return &i;
}

#ifndef MOCK_STATIC /* static archives export NAME_-prefixed symbols only */
const attnc_kernel_info *attnc_query(uint32_t v) { return CAT(NAME, query)(v); }
#endif

int CAT(NAME, pack)(const void *const *w, const int64_t *elems, int64_t n,
                    void *packed, int64_t packed_bytes) {
  if (!w || !elems || !packed)
    return ATTNC_ERR_NULL_ARG;
  if (n != 4 || packed_bytes != PACKED * 4)
    return ATTNC_ERR_BUFFER_SIZE;
  int64_t off = 0;
  for (int i = 0; i < 4; ++i) {
    int64_t want = weights[i].dims[0] * weights[i].dims[1];
    if (!w[i])
      return ATTNC_ERR_NULL_ARG;
    if (elems[i] != want)
      return ATTNC_ERR_BUFFER_SIZE;
    memcpy((float *)packed + off, w[i], sizeof(float) * (size_t)want);
    off += want;
  }
  return ATTNC_OK;
}

int64_t CAT(NAME, workspace_size)(int64_t batch, int64_t seq, int64_t kv) {
  if (batch < 1 || seq < 1 || kv != seq)
    return -1;
  return batch * seq * 4 * D * (int64_t)sizeof(float);
}

struct task {
  const attnc_forward_args *a;
};

/* Batch row b: qkv = x W^T + b, per-head softmax attention, out proj. */
static void row(void *ctx, int64_t begin, int64_t end) {
  const attnc_forward_args *a = ((struct task *)ctx)->a;
  const float *wi = (const float *)a->packed, *bi = wi + 3 * D * D, *wo = bi + 3 * D, *bo = wo + D * D;
  int64_t T = a->seq_len;
  for (int64_t b = begin; b < end; ++b) {
    const float *x = (const float *)a->x + b * T * D;
    float *qkv = (float *)a->workspace + b * T * 4 * D, *o = qkv + T * 3 * D;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < 3 * D; ++j) {
        double s = bi[j];
        for (int64_t k = 0; k < D; ++k)
          s += (double)x[t * D + k] * WI(j, k);
        qkv[t * 3 * D + j] = (float)s;
      }
    double scale = 1.0 / sqrt((double)DH);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        double p[4096], m = -INFINITY, sum = 0;
        int64_t last = CAUSAL ? i : T - 1;
        for (int64_t j = 0; j <= last; ++j) {
          double s = 0;
          for (int64_t d = 0; d < DH; ++d)
            s += (double)qkv[i * 3 * D + h * DH + d] * qkv[j * 3 * D + D + h * DH + d];
          p[j] = s * scale;
          if (p[j] > m)
            m = p[j];
        }
        for (int64_t j = 0; j <= last; ++j)
          sum += (p[j] = exp(p[j] - m));
        for (int64_t d = 0; d < DH; ++d) {
          double s = 0;
          for (int64_t j = 0; j <= last; ++j)
            s += p[j] * qkv[j * 3 * D + 2 * D + h * DH + d];
          o[i * D + h * DH + d] = (float)(s / sum);
        }
      }
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < D; ++j) {
        double s = bo[j];
        for (int64_t k = 0; k < D; ++k)
          s += (double)o[t * D + k] * WO(j, k);
        ((float *)a->y)[(b * T + t) * D + j] = (float)s;
      }
  }
}

int CAT(NAME, forward)(const attnc_forward_args *a) {
  if (!a)
    return ATTNC_ERR_NULL_ARG;
  if (a->struct_size != sizeof(attnc_forward_args))
    return ATTNC_ERR_ARGS;
  if (!a->packed || !a->x || !a->y)
    return ATTNC_ERR_NULL_ARG;
  if (a->batch < 1 || a->seq_len < 1 || a->seq_len > 4096)
    return ATTNC_ERR_BAD_SHAPE;
  if (a->packed_bytes != PACKED * 4 || a->x_elems != a->batch * a->seq_len * D ||
      a->y_elems != a->batch * a->seq_len * D)
    return ATTNC_ERR_BUFFER_SIZE;
  if (!a->workspace ||
      a->workspace_bytes < CAT(NAME, workspace_size)(a->batch, a->seq_len, a->seq_len))
    return ATTNC_ERR_WORKSPACE;
  if (a->lengths || a->x_kv || a->probs)
    return ATTNC_ERR_ARGS;
  struct task t = {a};
  if (a->parallel_for)
    return a->parallel_for(a->parallel_ctx, a->batch, row, &t) ? ATTNC_ERR_THREADS
                                                               : ATTNC_OK;
  row(&t, 0, a->batch);
  return ATTNC_OK;
}
