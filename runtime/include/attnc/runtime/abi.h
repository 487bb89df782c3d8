/*===- abi.h - The C ABI of an attnc-generated kernel library ---*- C -*-===*
 *
 * Every shared object that attnc produces exports, for a spec named NAME:
 *
 *   const attnc_kernel_info *NAME_query(uint32_t max_abi_version);
 *   const attnc_kernel_info *attnc_query(uint32_t max_abi_version);  (loaders)
 *   int     NAME_pack(const float *const *weights, float *packed);
 *   int64_t NAME_workspace_size(int64_t batch, int64_t seq_len);
 *   int     NAME_forward(const float *packed, const float *x, float *y,
 *                        int64_t batch, int64_t seq_len,
 *                        void *workspace, int64_t workspace_bytes);
 *
 * The metadata record below is what the runtime reads before calling
 * anything; its layout is versioned by ATTNC_ABI_VERSION and struct_size.
 * Plain C99; no C++ types cross this boundary.
 *===---------------------------------------------------------------------===*/
#ifndef ATTNC_RUNTIME_ABI_H
#define ATTNC_RUNTIME_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNC_ABI_VERSION 1u

/* Return codes of NAME_pack / NAME_forward. */
#define ATTNC_OK 0
#define ATTNC_ERR_NULL_ARG 1        /* a required pointer is NULL */
#define ATTNC_ERR_BAD_SHAPE 2       /* batch or seq_len < 1, or > max_seq_len */
#define ATTNC_ERR_WORKSPACE 3       /* workspace smaller than NAME_workspace_size */

/* attnc_kernel_info.mask */
#define ATTNC_MASK_NONE 0u
#define ATTNC_MASK_CAUSAL 1u
#define ATTNC_MASK_PADDING 2u
#define ATTNC_MASK_CAUSAL_PADDING 3u
#define ATTNC_MASK_SLIDING_WINDOW 4u

/* attnc_kernel_info.weight_layout */
#define ATTNC_LAYOUT_GPT2_CONV1D 0u
#define ATTNC_LAYOUT_TORCH_IN_PROJ 1u
#define ATTNC_LAYOUT_SEPARATE 2u

/* attnc_kernel_info.dtype */
#define ATTNC_DTYPE_F32 0u

/* attnc_kernel_info.isa */
#define ATTNC_ISA_X86_64 0u   /* baseline x86-64 (SSE2) */
#define ATTNC_ISA_AVX2 1u     /* x86-64-v3 */
#define ATTNC_ISA_AVX512 2u   /* x86-64-v4 */
#define ATTNC_ISA_HOST 3u     /* the compiling machine's CPU (-mcpu=native) */

/* One storage-layout weight tensor the pack entry reads, in the order of
 * the `weights` array passed to NAME_pack. rank is 1 or 2; for rank 1,
 * dims[1] is 1. Row-major (C order), float32. */
typedef struct attnc_tensor_info {
  const char *name; /* as the ecosystem spells it: "c_attn.weight", ... */
  uint32_t rank;
  uint32_t reserved;
  int64_t dims[2];
} attnc_tensor_info;

typedef struct attnc_kernel_info {
  uint32_t abi_version; /* ATTNC_ABI_VERSION the library was built for */
  uint32_t struct_size; /* sizeof(attnc_kernel_info) of that version */
  const char *name;     /* the spec's name: prefix of every symbol */
  uint64_t spec_hash;   /* FNV-1a over the spec's semantic fields */
  int64_t d_model, heads, kv_heads, head_dim;
  uint32_t mask;         /* ATTNC_MASK_* */
  uint32_t causal_align; /* 0 = bottom_right, 1 = top_left */
  int64_t window;        /* sliding window size; 0 when unused */
  uint32_t bias;         /* projections carry biases */
  uint32_t out_proj;     /* W_O applied */
  double scale;          /* the softmax scale actually used */
  uint32_t dtype;        /* ATTNC_DTYPE_* */
  uint32_t isa;          /* ATTNC_ISA_* */
  uint32_t weight_layout; /* ATTNC_LAYOUT_* */
  uint32_t num_weights;
  const attnc_tensor_info *weights; /* num_weights entries */
  int64_t packed_floats; /* floats in the packed (compute-layout) buffer */
  int64_t max_seq_len;   /* 0 = unbounded */
  const char *target_triple;
  const char *target_cpu;
  const char *compiler_version;
} attnc_kernel_info;

typedef const attnc_kernel_info *(*attnc_query_fn)(uint32_t max_abi_version);
typedef int (*attnc_pack_fn)(const float *const *weights, float *packed);
typedef int64_t (*attnc_workspace_size_fn)(int64_t batch, int64_t seq_len);
typedef int (*attnc_forward_fn)(const float *packed, const float *x, float *y,
                                int64_t batch, int64_t seq_len,
                                void *workspace, int64_t workspace_bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_RUNTIME_ABI_H */
