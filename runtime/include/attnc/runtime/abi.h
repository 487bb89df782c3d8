/*===- abi.h - The C ABI of an attnc-generated kernel library ---*- C -*-===*
 *
 * ABI version 3. Every kernel library (shared object or static archive)
 * that attnc produces for a spec named NAME exports:
 *
 *   const attnc_kernel_info *NAME_query(uint32_t max_abi_version);
 *   int     NAME_pack(const float *const *weights,
 *                     const int64_t *weight_floats, int64_t num_weights,
 *                     float *packed, int64_t packed_floats);
 *   int64_t NAME_workspace_size(int64_t batch, int64_t seq_len,
 *                               int64_t kv_seq_len);
 *   int     NAME_forward(const attnc_forward_args *args);
 *
 * and, when info->features has ATTNC_FEATURE_DECODE (spec: decode: true),
 *
 *   int64_t NAME_decode_workspace_bytes(int64_t batch, int64_t cache_len);
 *   int     NAME_decode(const attnc_decode_args *args);
 *
 * (no exported suffix ends with another one, so no kernel's NAME_suffix
 * spells another kernel's symbol: a kernel named NAME_decode exports
 * NAME_decode_workspace_size, never NAME_decode_workspace_bytes)
 *
 * and, in shared objects only, attnc_query (the same as NAME_query) so a
 * loader can open a library without knowing NAME. Static archives export
 * only NAME_-prefixed symbols, so several kernels link into one program.
 *
 * Version 2 (over 1): every buffer comes with its size, so a kernel checks
 * what a caller passes instead of trusting it; forward takes one argument
 * struct (sized, so later fields can be added without a new entry point)
 * with a parallel-for hook through which the embedding application runs the
 * kernel's tiles on its own threads (NULL: a small built-in pthread pool);
 * the metadata names the instruction set each code path needs and which one
 * runs on this CPU.
 *
 * Additions within version 2 (older callers keep working): the KV-cache
 * fields at the end of attnc_forward_args and the decode entry points;
 * then CUDA kernels (ATTNC_FEATURE_CUDA, ATTNC_ISA_CUDA_*, the stream
 * fields of both argument structs, ATTNC_ERR_NO_DRIVER / _NO_DEVICE /
 * _DEVICE). NAME_decode accepts sizeof(attnc_decode_args) and
 * ATTNC_DECODE_ARGS_SIZE_V2_0.
 * A kernel accepts struct_size = sizeof(attnc_forward_args),
 * ATTNC_FORWARD_ARGS_SIZE_V2_1 (without the stream) or
 * ATTNC_FORWARD_ARGS_SIZE_V2_0 (without the cache fields either, as the
 * first version-2 header declared it), so a caller that does not use the
 * newer fields can pass a smaller size to kernels of any age.
 * A runtime older than these additions refuses a library that declares
 * ATTNC_FEATURE_DECODE (an unknown features bit) as bad metadata.
 *
 * Version 3 (over 2): the metadata describes the attention of real
 * checkpoints and the storage of their data, designed once for all of it:
 * bias_flags (which of the q/k/v/o projections carry a bias), the rotary
 * embedding (style, rotated width, the frequency tables computed at compile
 * time, the attention factor), weight_dtype beside dtype, and the
 * tensor-parallel split (tp_size, tp_rank). A version-2 runtime refuses a
 * version-3 library (and the reverse) as an ABI mismatch, never by
 * computing something else.
 *
 * Plain C99; no C++ types cross this boundary.
 *===---------------------------------------------------------------------===*/
#ifndef ATTNC_RUNTIME_ABI_H
#define ATTNC_RUNTIME_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNC_ABI_VERSION 3u

/* Return codes of NAME_pack / NAME_forward. */
#define ATTNC_OK 0
#define ATTNC_ERR_NULL_ARG 1    /* a required pointer is NULL */
#define ATTNC_ERR_BAD_SHAPE 2   /* batch or seq_len < 1, > max_seq_len, or the
                                   sizes overflow 64-bit byte counts; a KV
                                   cache shorter than seq_len */
#define ATTNC_ERR_WORKSPACE 3   /* workspace smaller than NAME_workspace_size */
#define ATTNC_ERR_BUFFER_SIZE 4 /* a buffer's stated size is not what the
                                   shapes need (x, y, packed, a weight) */
#define ATTNC_ERR_ISA 5         /* this CPU lacks every instruction set the
                                   library has code for */
#define ATTNC_ERR_THREADS 6     /* the parallel-for hook returned non-zero,
                                   or the built-in pool could not start */
#define ATTNC_ERR_ARGS 7        /* args->struct_size unknown, or a field set
                                   that this kernel does not take, or a
                                   length / position out of its range */
/* CUDA kernels (ATTNC_FEATURE_CUDA) only: */
#define ATTNC_ERR_NO_DRIVER 8   /* no CUDA driver: libcuda.so.1 cannot be
                                   loaded, or cuInit failed */
#define ATTNC_ERR_NO_DEVICE 9   /* no CUDA device, or the current device is
                                   older than the kernel's sm_XY */
#define ATTNC_ERR_DEVICE 10     /* a CUDA driver call failed (loading the
                                   PTX, a launch, a pointer that is not
                                   device memory) */

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

/* attnc_kernel_info.dtype and .weight_dtype */
#define ATTNC_DTYPE_F32 0u

/* attnc_kernel_info.bias_flags: the projections that carry a bias. */
#define ATTNC_BIAS_Q 1u
#define ATTNC_BIAS_K 2u
#define ATTNC_BIAS_V 4u
#define ATTNC_BIAS_O 8u

/* attnc_kernel_info.qk_norm: RMSNorm of q and k before the rotary
 * embedding (the weights q_norm.weight, k_norm.weight are in the weights
 * table, after the projections'). */
#define ATTNC_QK_NORM_NONE 0u
#define ATTNC_QK_NORM_HEAD 1u       /* over each head's head_dim (Qwen3, Gemma 3) */
#define ATTNC_QK_NORM_PROJECTION 2u /* over the whole projection (OLMo 2) */

/* attnc_kernel_info.rope_style: how a head's rotated dimensions pair up. */
#define ATTNC_ROPE_NONE 0u
#define ATTNC_ROPE_HALF_SPLIT 1u  /* dim i with i + rotary_dim/2 (rotate_half:
                                     Llama, NeoX, Qwen, Mistral, Gemma, ...) */
#define ATTNC_ROPE_INTERLEAVED 2u /* dims 2i and 2i+1 (GPT-J) */

/* Instruction sets: attnc_kernel_info.isa (what the library was built
 * for) and the value selected_isa() returns (what runs on this CPU). */
#define ATTNC_ISA_X86_64 0u   /* baseline x86-64 (SSE2) */
#define ATTNC_ISA_AVX2 1u     /* x86-64-v3 (AVX2 + FMA) */
#define ATTNC_ISA_AVX512 2u   /* x86-64-v4 (AVX-512 F/BW/CD/DQ/VL) */
#define ATTNC_ISA_HOST 3u     /* the compiling machine's CPU (-mcpu=native) */
#define ATTNC_ISA_MULTI 4u    /* AVX-512 and AVX2 code, chosen at run time */
#define ATTNC_ISA_CUDA_SM80 5u /* CUDA, PTX for sm_80 (Ampere and newer) */
#define ATTNC_ISA_CUDA_SM90 6u /* CUDA, PTX for sm_90 (Hopper and newer) */
#define ATTNC_ISA_NONE 0xffffffffu /* selected_isa(): no code path fits */

/* attnc_kernel_info.features: optional attnc_forward_args fields the
 * kernel reads. A field outside this set must be NULL / 0. */
#define ATTNC_FEATURE_LENGTHS 1u    /* args->lengths (padding masks) */
#define ATTNC_FEATURE_CROSS 2u      /* args->x_kv, kv_seq_len, kv_lengths */
#define ATTNC_FEATURE_PROBS 4u      /* args->probs (attention weights) */
#define ATTNC_FEATURE_DECODE 8u     /* args->k_cache, v_cache, cache_len and
                                       the NAME_decode entry points */
#define ATTNC_FEATURE_CUDA 16u      /* the device kind: a CUDA kernel. forward
                                       takes device pointers (packed, x, y,
                                       workspace and the variants' buffers)
                                       and args->stream; NAME_pack stays a
                                       host function (copy its result to the
                                       device once). Without this bit every
                                       pointer is host memory. */
#define ATTNC_FEATURE_ROPE 32u      /* Q and K are rotated (the rope_* fields):
                                       forward at positions 0..seq_len-1,
                                       decode at positions[b]; the cached
                                       keys are stored rotated */
#define ATTNC_FEATURE_SCORE_MODS 64u /* scores modified before the mask
                                        (softcap, alibi_* fields) */
#define ATTNC_FEATURE_CHECKSUM 128u /* the shared object carries a CRC-32 of
                                       its whole file in the section
                                       ATTNC_CHECKSUM_SECTION, which the
                                       loader verifies before dlopen()
                                       (a corrupt library is refused, never
                                       run). Static archives: not set. */

/* The checksum record of a shared object attnc writes: in its own ELF
 * section (so a loader finds it from the section headers, before any of the
 * library's code runs). crc32 is zlib's CRC-32 of the whole file with the
 * crc32 field's own four bytes read as zero; attnc stamps it after linking. */
#define ATTNC_CHECKSUM_SECTION ".attnc.checksum"
#define ATTNC_CHECKSUM_MAGIC "ATTNCSUM" /* 8 bytes, no NUL */
typedef struct attnc_checksum {
  char magic[8];
  uint32_t crc32;
  uint32_t reserved; /* 0 */
} attnc_checksum;

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
  int64_t out_dim;       /* columns of y: d_model, or heads*head_dim
                            without out_proj */
  uint32_t mask;         /* ATTNC_MASK_* */
  uint32_t causal_align; /* 0 = bottom_right, 1 = top_left */
  int64_t window;        /* sliding window size; 0 when unused */
  uint32_t bias;         /* 1 when any projection carries a bias
                            (bias_flags != 0), else 0 */
  uint32_t out_proj;     /* W_O applied */
  double scale;          /* the softmax scale actually used */
  uint32_t dtype;        /* ATTNC_DTYPE_* */
  uint32_t isa;          /* ATTNC_ISA_*: what the library was built for */
  uint32_t weight_layout; /* ATTNC_LAYOUT_* */
  uint32_t features;     /* ATTNC_FEATURE_* */
  uint32_t num_weights;
  uint32_t reserved0;
  const attnc_tensor_info *weights; /* num_weights entries */
  int64_t packed_floats; /* floats in the packed (compute-layout) buffer:
                            the weights cut into 32-column panels (zero
                            padded) and 16-float aligned */
  int64_t max_seq_len;   /* 0 = unbounded */
  /* A bound the runtime checks NAME_workspace_size against:
   *   NAME_workspace_size(batch, T, 0)
   *     <= workspace_fixed + 4 * batch * T * workspace_per_row
   * (workspace_per_row floats per (batch, token) row over all buffers;
   * workspace_fixed = 64 bytes of alignment per buffer). */
  int64_t workspace_per_row;
  int64_t workspace_fixed;
  /* Bytes of stack one task uses at most (per thread; the built-in pool's
   * threads get twice this plus 1 MiB). */
  int64_t stack_bytes;
  /* The instruction set of the code path that runs on this CPU: a concrete
   * ATTNC_ISA_AVX512 / _AVX2 / _X86_64 / _HOST (never _MULTI), or
   * ATTNC_ISA_NONE when this CPU has none of them: forward then returns
   * ATTNC_ERR_ISA. ATTNC_ISA=avx2 (or x86-64) in the environment caps the
   * choice. */
  uint32_t (*selected_isa)(void);
  const char *target_triple;
  const char *target_cpu;       /* e.g. "x86-64-v4", "x86-64-v4,x86-64-v3" */
  const char *compiler_version;
  /* Version 3. */
  uint32_t bias_flags;   /* ATTNC_BIAS_*: which projections carry a bias */
  uint32_t weight_dtype; /* ATTNC_DTYPE_* of the packed weights */
  int32_t tp_size;       /* tensor-parallel ranks the block is split over
                            (1: not split) */
  int32_t tp_rank;       /* this kernel's rank, 0 <= tp_rank < tp_size */
  /* Rotary position embedding (ATTNC_FEATURE_ROPE; otherwise NONE, 0 and
   * NULL). Position p rotates pair i of each head of Q and K by the angle
   * p * rope_inv_freq[i] (radians), cos and sin multiplied by
   * rope_attention_factor; dims past rotary_dim pass through. A call of
   * length L (forward: seq_len; decode: positions[b] + 1) with
   * L > rope_long_from uses rope_long_inv_freq when it is not NULL
   * (longrope). */
  uint32_t rope_style;   /* ATTNC_ROPE_* */
  uint32_t rope_pairs;   /* rotary_dim / 2: entries of each table */
  int64_t rotary_dim;
  const double *rope_inv_freq;      /* [rope_pairs] */
  const double *rope_long_inv_freq; /* [rope_pairs] or NULL */
  int64_t rope_long_from;
  double rope_attention_factor;
  /* Score modifiers (ATTNC_FEATURE_SCORE_MODS; otherwise 0 and NULL),
   * applied to the score of query i and key j before the mask, with
   * i' = i's position among the keys (i + kv_len - q_len bottom-right, i
   * top-left):
   *   ALiBi:  s = scale * q.k + alibi_slopes[h] * (j - i')
   *           (alibi_before_scale: s = scale * (q.k + slope * (j - i')))
   *   softcap: s = softcap * tanh(s / softcap) */
  double softcap;              /* 0: none */
  const double *alibi_slopes;  /* [heads], or NULL: no ALiBi */
  uint32_t alibi_before_scale; /* 0 or 1 */
  /* T5's bucketed relative bias (0: none; this version has none yet). */
  int32_t t5_num_buckets;
  int32_t t5_max_distance;
  uint32_t t5_bidirectional;
  /* QK-norm: x' = x / sqrt(mean(x^2) + qk_norm_eps) * (w + qk_norm_offset). */
  uint32_t qk_norm;       /* ATTNC_QK_NORM_* */
  uint32_t sinks;         /* 1: a per-head sink logit in each softmax's
                             denominator (gpt-oss); 0 in this version */
  double qk_norm_eps;     /* 0 without qk_norm */
  double qk_norm_offset;  /* 1 for Gemma 3's (1 + w), else 0 */
} attnc_kernel_info;

/* The parallel-for hook. A kernel splits each phase of its work into
 * num_tasks independent tasks and calls
 *     parallel_for(parallel_ctx, num_tasks, task, task_ctx)
 * which must call task(task_ctx, begin, end) over disjoint ranges that
 * together cover [0, num_tasks), from any threads, in any order, and
 * return 0 once every call has returned (non-zero: the kernel fails with
 * ATTNC_ERR_THREADS). Results do not depend on how the tasks are split. */
typedef void (*attnc_task_fn)(void *task_ctx, int64_t begin, int64_t end);
typedef int (*attnc_parallel_for_fn)(void *parallel_ctx, int64_t num_tasks,
                                     attnc_task_fn task, void *task_ctx);

typedef struct attnc_forward_args {
  uint32_t struct_size;   /* sizeof(attnc_forward_args) */
  uint32_t reserved0;     /* 0 */
  const float *packed;    /* from NAME_pack */
  int64_t packed_floats;  /* must equal info->packed_floats */
  const float *x;         /* [batch, seq_len, d_model] */
  int64_t x_floats;       /* must equal batch * seq_len * d_model */
  float *y;               /* [batch, seq_len, out_dim] */
  int64_t y_floats;       /* must equal batch * seq_len * out_dim */
  int64_t batch, seq_len;
  void *workspace;        /* caller-owned scratch, 64-byte aligned is best */
  int64_t workspace_bytes; /* >= NAME_workspace_size(batch, seq_len, ...) */
  /* Threads. parallel_for NULL: the library's built-in pthread pool with
   * num_threads threads (0: one per online CPU; 1: the calling thread
   * only). Otherwise the hook runs the tasks and num_threads is ignored. */
  attnc_parallel_for_fn parallel_for;
  void *parallel_ctx;
  int32_t num_threads;
  int32_t reserved1;      /* 0 */
  /* Variants, read only when info->features says so; otherwise NULL / 0. */
  const int32_t *lengths; /* [batch] valid tokens per sequence (padding) */
  const float *x_kv;      /* [batch, kv_seq_len, d_model] (cross-attention) */
  int64_t x_kv_floats;
  int64_t kv_seq_len;
  const int32_t *kv_lengths; /* [batch] */
  float *probs;           /* [batch, heads, seq_len, kv_seq_len] */
  int64_t probs_floats;
  /* KV cache (ATTNC_FEATURE_DECODE; optional: NULL = not filled). Forward
   * writes rows [0, seq_len) of each sequence's K and V into the caches, so
   * NAME_decode can continue at position seq_len (with a padding mask, at
   * position lengths[b]; rows past it hold unspecified values). Layout of
   * each cache: [batch, kv_heads, cache_len, head_dim], row-major, so one
   * head's keys are contiguous and a decode step reads them as one stream.
   * cache_len >= seq_len; cache_floats = batch*kv_heads*cache_len*head_dim
   * (each cache). */
  float *k_cache;
  float *v_cache;
  int64_t cache_floats;
  int64_t cache_len;
  /* CUDA kernels (ATTNC_FEATURE_CUDA): the CUstream the kernels are
   * launched on (NULL: the default stream). forward returns once the
   * launches are queued; the caller synchronizes the stream before reading
   * y. Must be NULL for a CPU kernel. */
  void *stream;
} attnc_forward_args;

/* sizeof(attnc_forward_args) without the KV-cache fields (see above). */
#define ATTNC_FORWARD_ARGS_SIZE_V2_0 \
  ((uint32_t)offsetof(attnc_forward_args, k_cache))
/* sizeof(attnc_forward_args) without the stream field. */
#define ATTNC_FORWARD_ARGS_SIZE_V2_1 \
  ((uint32_t)offsetof(attnc_forward_args, stream))

/* One decode step (ATTNC_FEATURE_DECODE): one new token per sequence.
 * For each sequence b, the token's K and V are written into row
 * positions[b] of the caches (the caller's, in the layout above), then its
 * query attends over rows [0, positions[b]] (the causal mask's bottom-right
 * alignment; a sliding window keeps the last `window` of them), and y gets
 * the block's output for the token. Q is never cached. After forward over
 * n tokens, positions[b] = n (or lengths[b]) continues the sequence; each
 * step then adds 1. Prefill + decode steps equal one forward over all the
 * tokens (up to float rounding). */
typedef struct attnc_decode_args {
  uint32_t struct_size;   /* sizeof(attnc_decode_args) */
  uint32_t reserved0;     /* 0 */
  const float *packed;    /* from NAME_pack (the same buffer forward reads) */
  int64_t packed_floats;
  const float *x;         /* [batch, 1, d_model]: each sequence's new token */
  int64_t x_floats;       /* batch * d_model */
  float *y;               /* [batch, 1, out_dim] */
  int64_t y_floats;       /* batch * out_dim */
  int64_t batch;
  const int32_t *positions; /* [batch]: 0 <= positions[b] < cache_len */
  float *k_cache;         /* [batch, kv_heads, cache_len, head_dim] */
  float *v_cache;
  int64_t cache_floats;   /* each cache: batch*kv_heads*cache_len*head_dim */
  int64_t cache_len;
  void *workspace;
  int64_t workspace_bytes; /* >= NAME_decode_workspace_bytes(batch, cache_len) */
  attnc_parallel_for_fn parallel_for; /* as in attnc_forward_args */
  void *parallel_ctx;
  int32_t num_threads;
  int32_t reserved1;      /* 0 */
  /* CUDA kernels: the CUstream (NULL: the default stream); as in
   * attnc_forward_args. Must be NULL for a CPU kernel. */
  void *stream;
} attnc_decode_args;

/* sizeof(attnc_decode_args) without the stream field (every kernel
 * accepts both sizes). */
#define ATTNC_DECODE_ARGS_SIZE_V2_0 \
  ((uint32_t)offsetof(attnc_decode_args, stream))

typedef const attnc_kernel_info *(*attnc_query_fn)(uint32_t max_abi_version);
typedef int (*attnc_pack_fn)(const float *const *weights,
                             const int64_t *weight_floats, int64_t num_weights,
                             float *packed, int64_t packed_floats);
typedef int64_t (*attnc_workspace_size_fn)(int64_t batch, int64_t seq_len,
                                           int64_t kv_seq_len);
typedef int (*attnc_forward_fn)(const attnc_forward_args *args);
typedef int64_t (*attnc_decode_workspace_bytes_fn)(int64_t batch,
                                                  int64_t cache_len);
typedef int (*attnc_decode_fn)(const attnc_decode_args *args);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_RUNTIME_ABI_H */
