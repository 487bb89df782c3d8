//===- CudaBuilders.h - the CUDA target's kernel builders -----*- C++ -*-===//
//
// The CUDA kernels (GpuKernels.cpp): phases of CUDA blocks with thread
// regions, shaped by the #attn.cuda_target; CudaKernels.cpp calls them for
// the target's TargetKernelsInterface model.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CONVERSION_CUDA_CUDABUILDERS_H
#define ATTNC_CONVERSION_CUDA_CUDABUILDERS_H

#include "Common/LoopBuilders.h"
#include "attnc/Dialect/Attn/IR/AttnKernelsInterface.h"

namespace attnc {

/// The CUDA target's GEMM (GpuKernels.cpp): the same contract as
/// buildPackedGemm (no row lengths), as one phase of CUDA blocks of
/// gemm_tile_m x gemm_tile_n outputs with gemm_threads threads of
/// gemm_thread_n adjacent columns each (#attn.cuda_target's verifier
/// checks that the tile divides among them); thread regions and
/// shared/private buffers as GpuKernels.cpp describes.
void buildGpuGemm(mlir::ImplicitLocOpBuilder &b, attn::CudaTargetAttr target,
                  mlir::Value x, mlir::Value wp, mlir::Value bias,
                  mlir::Value y, int64_t n);

/// The CUDA target's flash attention: blocks of attn_threads queries of one
/// (batch, head), one thread per query, K/V staged attn_keys rows at a time
/// in shared memory, online softmax, only the mask's visible key range.
/// qLens/kvLens (memref<?xi32> in device memory, or null): valid lengths,
/// clamped to [0, T] by the kernel. The score modifiers (ScoreMods, natural
/// log units), sinks [Hq] and T5's rel_bias table (or null) as the CPU
/// kernels apply them.
mlir::LogicalResult buildGpuAttention(mlir::ImplicitLocOpBuilder &b,
                                      attn::CudaTargetAttr target, attn::SdpaOp op,
                                      const attn::AttentionBuffers &bufs);

/// The CUDA target's attn.probs: p [B, Hq, Tq, Tkv] as buildProbs defines
/// it, one block per (batch, head, query row) whose threads stride over the
/// row's keys; three passes over the visible keys (max, exponentials, scale)
/// with block-wide max and sum through shared memory.
mlir::LogicalResult buildGpuProbs(mlir::ImplicitLocOpBuilder &b, attn::CudaTargetAttr target,
                                  attn::ProbsOp op, const attn::AttentionBuffers &bufs);

/// The CUDA target's attn.rope in place on x [B, H, T, D]: one block per
/// (sequence, block of rows), one thread per (row, pair) computing the
/// pair's cos and sin once (RopeAngles, as buildRope) for every head.
void buildGpuRope(mlir::ImplicitLocOpBuilder &b, attn::CudaTargetAttr target, attn::RopeOp op,
                  mlir::Value x, mlir::Value positions);

/// The CUDA target's attn.rms_norm in place on x [B, H, T, D]: one block per
/// (sequence, row, group of heads normalised together), its threads
/// striding over the group's elements; the sum (center: LayerNorm's mean
/// first) and the sum of squares through shared memory; bias may be null.
void buildGpuRmsNorm(mlir::ImplicitLocOpBuilder &b, attn::CudaTargetAttr target,
                     attn::RmsNormOp op, mlir::Value x, mlir::Value w, mlir::Value bias);
/// attn.temperature in place on x [B, H, T, D]: one block per (sequence,
/// head), its threads striding over the T * D elements, each row's factor
/// from temperatureFactor (as the x86 kernel).
void buildGpuTemperature(mlir::ImplicitLocOpBuilder &b, attn::CudaTargetAttr target,
                         attn::TemperatureOp op, mlir::Value x, mlir::Value positions);
/// attn.clip in place on x [B, H, T, D]: one block per (sequence, head),
/// its threads striding over the T * D elements.
void buildGpuClip(mlir::ImplicitLocOpBuilder &b, attn::CudaTargetAttr target, attn::ClipOp op,
                  mlir::Value x);

/// The CUDA target's attn.mask_rows: rows t >= lens[b] of y [B, T, N]
/// become zeros (one block per row).
mlir::LogicalResult buildGpuMaskRows(mlir::ImplicitLocOpBuilder &b,
                                     attn::CudaTargetAttr target, mlir::Value y,
                                     mlir::Value lens);

/// The CUDA target's copy of a [B, T, N] buffer into another of the same
/// shape (the result of a block without W_O into y): one block per
/// (b, t) row, block_threads threads striding over N.
mlir::LogicalResult buildGpuCopy(mlir::ImplicitLocOpBuilder &b,
                                 attn::CudaTargetAttr target, mlir::Value src,
                                 mlir::Value dst);

/// The CUDA target's attn.cache_append (in place into the caller's caches):
/// one block per (sequence, kv head); positions (device memory, or null for
/// 0) clamped so every write stays inside the cache.
void buildGpuCacheAppend(mlir::ImplicitLocOpBuilder &b, attn::CudaTargetAttr target,
                         mlir::Value k, mlir::Value v, mlir::Value kc,
                         mlir::Value vc, mlir::Value lens, mlir::Value positions);

} // namespace attnc

#endif
