/*===- abi.h - The C ABI of an attnc-generated kernel library ---*- C -*-===*
 *
 * ABI version 7. Every kernel library (shared object or static archive)
 * that attnc produces for a spec named NAME exports:
 *
 *   const attnc_kernel_info *NAME_query(uint32_t max_abi_version);
 *   int     NAME_pack(const void *const *weights,
 *                     const int64_t *weight_elems, int64_t num_weights,
 *                     void *packed, int64_t packed_bytes);
 *   int64_t NAME_workspace_size(int64_t batch, int64_t seq_len,
 *                               int64_t kv_seq_len);
 *   int     NAME_forward(const attnc_forward_args *args);
 *
 * and, when info->features has ATTNC_FEATURE_DECODE (spec: decode: true),
 *
 *   int64_t NAME_decode_workspace_bytes(int64_t batch, int64_t seq_len,
 *                                       int64_t cache_len);
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
 * Version 2 (over 1): every buffer comes with its size; forward takes one
 * sized argument struct with a parallel-for hook; the metadata names the
 * instruction set each code path needs and which one runs on this CPU;
 * then the KV cache, the decode entry and CUDA kernels.
 *
 * Version 3 (over 2): the metadata describes the attention of real
 * checkpoints: which projections carry a bias, the rotary embedding (its
 * frequency tables computed at compile time), the score modifiers (ALiBi,
 * soft-capping, T5's bucketed bias), QK-norm and attention sinks.
 *
 * Version 4 (over 3), designed once for low precision, positions,
 * tensor parallelism and one description of every field:
 *  - element types: activations are arrays of info->dtype (f32, bf16 or
 *    f16), the projection weights NAME_pack reads and packs of
 *    info->weight_dtype; the buffers are `void *`, every count is in
 *    elements (`*_elems`) and the packed buffer's in bytes;
 *  - positions: forward takes each sequence's first position (rotary
 *    embeddings at start + t, HF's position_ids), decode a chunk of
 *    seq_len tokens per sequence (chunked prefill) as well as one;
 *  - tensor parallelism: tp_size / tp_rank name one rank's share of a
 *    Megatron-style split (docs/abi.md);
 *  - the struct fields are listed once, in abi_*.def beside this file,
 *    from which this header, the kernel glue and the Python package's
 *    mirror are built.
 *
 * Version 5 (over 4): dynamic-NTK rotary embeddings, whose frequencies
 * follow each call's sequence length (rope_dynamic_factor,
 * rope_dynamic_from).
 *
 * Version 6 (over 5): Llama 4's attention: the chunked mask
 * (ATTNC_MASK_CHUNKED, the chunk size in `window`), QK-norm without a
 * weight (ATTNC_QK_NORM_NO_WEIGHT) and the temperature tuning of the
 * queries (temperature_floor_scale, temperature_attn_scale).
 *
 * Version 7 (over 6): BERT's relative_key and relative_key_query
 * (rel_key_positions, rel_key_query; the storage tensor
 * distance_embedding.weight); within it, the masks
 * ATTNC_MASK_SLIDING_WINDOW_PADDING and ATTNC_MASK_CHUNKED_PADDING (a
 * runtime that predates them refuses them as an unknown mask), and
 * ATTNC_MASK_BIDIRECTIONAL_WINDOW(_PADDING) likewise.
 * A runtime of another version refuses the library as an ABI mismatch,
 * never by computing something else.
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

#define ATTNC_ABI_VERSION 7u

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
#define ATTNC_MASK_CHUNKED 5u /* causal, and only keys of the query's chunk:
                                 floor(j / window) == floor(i' / window) */
/* A window or chunk with each sequence's valid lengths (right padding), as
 * causal+padding adds them to causal. Added within version 7: a runtime
 * that predates them refuses the library (unknown mask value). */
#define ATTNC_MASK_SLIDING_WINDOW_PADDING 6u
#define ATTNC_MASK_CHUNKED_PADDING 7u
/* Keys within `window` on either side, |j - i'| < window (EmbeddingGemma's
 * sliding layers), and the same with the valid lengths: not causal. Added
 * within version 7 like the two above. */
#define ATTNC_MASK_BIDIRECTIONAL_WINDOW 8u
#define ATTNC_MASK_BIDIRECTIONAL_WINDOW_PADDING 9u
#define ATTNC_MASK_LAST ATTNC_MASK_BIDIRECTIONAL_WINDOW_PADDING

/* The parts of a mask value, which everything that reads one asks (marked
 * unused: a program that includes this header need not call them, and
 * the generated NAME.h carries this text as its own). */
#if defined(__GNUC__) || defined(__clang__)
#define ATTNC_MAYBE_UNUSED __attribute__((unused))
#else
#define ATTNC_MAYBE_UNUSED
#endif
/* a window that reaches window - 1 keys past the query's position too */
ATTNC_MAYBE_UNUSED static inline int attnc_mask_bidirectional(uint32_t m) {
  return m == ATTNC_MASK_BIDIRECTIONAL_WINDOW || m == ATTNC_MASK_BIDIRECTIONAL_WINDOW_PADDING;
}
/* a query sees no later key (every mask but none, padding and the
 * bidirectional windows) */
ATTNC_MAYBE_UNUSED static inline int attnc_mask_causal(uint32_t m) {
  return m != ATTNC_MASK_NONE && m != ATTNC_MASK_PADDING && m <= ATTNC_MASK_LAST &&
         !attnc_mask_bidirectional(m);
}
/* forward takes lengths (and kv_lengths): ATTNC_FEATURE_LENGTHS */
ATTNC_MAYBE_UNUSED static inline int attnc_mask_lengths(uint32_t m) {
  return m == ATTNC_MASK_PADDING || m == ATTNC_MASK_CAUSAL_PADDING ||
         m == ATTNC_MASK_SLIDING_WINDOW_PADDING || m == ATTNC_MASK_CHUNKED_PADDING ||
         m == ATTNC_MASK_BIDIRECTIONAL_WINDOW_PADDING;
}
/* keys older than the last `window` are hidden (and, bidirectional, keys
 * `window` or more ahead) */
ATTNC_MAYBE_UNUSED static inline int attnc_mask_sliding(uint32_t m) {
  return m == ATTNC_MASK_SLIDING_WINDOW || m == ATTNC_MASK_SLIDING_WINDOW_PADDING ||
         attnc_mask_bidirectional(m);
}
/* keys of earlier chunks (of `window` positions) are hidden */
ATTNC_MAYBE_UNUSED static inline int attnc_mask_chunked(uint32_t m) {
  return m == ATTNC_MASK_CHUNKED || m == ATTNC_MASK_CHUNKED_PADDING;
}

/* attnc_kernel_info.weight_layout */
#define ATTNC_LAYOUT_GPT2_CONV1D 0u
#define ATTNC_LAYOUT_TORCH_IN_PROJ 1u
#define ATTNC_LAYOUT_SEPARATE 2u

/* attnc_kernel_info.dtype and .weight_dtype */
#define ATTNC_DTYPE_F32 0u
#define ATTNC_DTYPE_BF16 1u /* bfloat16: float32's top 16 bits, round to nearest even */
#define ATTNC_DTYPE_F16 2u  /* IEEE binary16 */

/* attnc_kernel_info.bias_flags: the projections that carry a bias. */
#define ATTNC_BIAS_Q 1u
#define ATTNC_BIAS_K 2u
#define ATTNC_BIAS_V 4u
#define ATTNC_BIAS_O 8u

/* attnc_kernel_info.qk_norm: RMSNorm (or LayerNorm) of q and k before the
 * rotary embedding (the weights q_norm.weight, k_norm.weight, and with
 * ATTNC_QK_NORM_BIAS q_norm.bias, k_norm.bias, are in the weights table,
 * after the projections'). The width (ATTNC_QK_NORM_WIDTH_MASK bits) ORed
 * with the flags. */
#define ATTNC_QK_NORM_NONE 0u
#define ATTNC_QK_NORM_HEAD 1u       /* over each head's head_dim (Qwen3, Gemma 3) */
#define ATTNC_QK_NORM_PROJECTION 2u /* over the whole projection (OLMo 2) */
#define ATTNC_QK_NORM_WIDTH_MASK 0xfu
#define ATTNC_QK_NORM_LAYER 0x10u    /* LayerNorm: the mean subtracted first (Phi, StableLM, Cohere) */
#define ATTNC_QK_NORM_PER_HEAD 0x20u /* weight (and bias) [heads, head_dim]: one per head (StableLM, Cohere) */
#define ATTNC_QK_NORM_BIAS 0x40u     /* + bias after the weight (Phi's LayerNorm) */
#define ATTNC_QK_NORM_NO_WEIGHT 0x80u /* no weight tensors: the factor is 1
                                         (+ qk_norm_offset; Llama 4's L2 norm) */
#define ATTNC_QK_NORM_FLAGS 0xf0u

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
#define ATTNC_ISA_AVX512_BF16 7u /* x86-64-v4 + AVX512-BF16 (vdpbf16ps) */
#define ATTNC_ISA_AMX_BF16 8u /* x86-avx512-bf16 + AMX-BF16 tiles (tdpbf16ps)
                                 for the GEMMs (Sapphire Rapids and newer) */
#define ATTNC_ISA_NONE 0xffffffffu /* selected_isa(): no code path fits */

/* attnc_kernel_info.features: optional attnc_forward_args fields the
 * kernel reads, and what it computes. A variant field outside this set
 * must be NULL / 0. */
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
                                       forward at positions[b] + t (0 + t
                                       without positions), decode likewise;
                                       the cached keys are stored rotated */
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
 * dims[1] is 1. Row-major (C order), elements of type dtype. */
typedef struct attnc_tensor_info {
  const char *name; /* as the ecosystem spells it: "c_attn.weight", ... */
  uint32_t rank;
  uint32_t dtype;   /* ATTNC_DTYPE_*: info->weight_dtype */
  int64_t dims[2];
} attnc_tensor_info;

/* selected_isa of attnc_kernel_info. */
typedef uint32_t (*attnc_selected_isa_fn)(void);

typedef struct attnc_kernel_info {
#define ATTNC_FIELD(type, name) type name;
#include "attnc/runtime/abi_kernel_info.def"
#undef ATTNC_FIELD
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

/* The arguments of NAME_forward (abi_forward_args.def says what each
 * field holds). */
typedef struct attnc_forward_args {
#define ATTNC_FIELD(type, name) type name;
#include "attnc/runtime/abi_forward_args.def"
#undef ATTNC_FIELD
} attnc_forward_args;

/* One decode step (ATTNC_FEATURE_DECODE): seq_len new tokens per sequence
 * (1 for a step of generation; a chunk of a chunked prefill). For each
 * sequence b, the tokens' K and V are written into rows [positions[b],
 * positions[b] + seq_len) of the caches (the caller's, in the layout of
 * attnc_forward_args), then the query of its token t attends over rows
 * [0, positions[b] + t] (the causal mask's bottom-right alignment; a
 * sliding window keeps the last `window` of them), and y gets the block's
 * output for the tokens. Q is never cached. After forward over n tokens,
 * positions[b] = n (or lengths[b]) continues the sequence; each call then
 * adds its seq_len. Prefill + decode calls equal one forward over all the
 * tokens (up to float rounding). */
typedef struct attnc_decode_args {
#define ATTNC_FIELD(type, name) type name;
#include "attnc/runtime/abi_decode_args.def"
#undef ATTNC_FIELD
} attnc_decode_args;

typedef const attnc_kernel_info *(*attnc_query_fn)(uint32_t max_abi_version);
typedef int (*attnc_pack_fn)(const void *const *weights,
                             const int64_t *weight_elems, int64_t num_weights,
                             void *packed, int64_t packed_bytes);
typedef int64_t (*attnc_workspace_size_fn)(int64_t batch, int64_t seq_len,
                                           int64_t kv_seq_len);
typedef int (*attnc_forward_fn)(const attnc_forward_args *args);
typedef int64_t (*attnc_decode_workspace_bytes_fn)(int64_t batch,
                                                  int64_t seq_len,
                                                  int64_t cache_len);
typedef int (*attnc_decode_fn)(const attnc_decode_args *args);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_RUNTIME_ABI_H */
