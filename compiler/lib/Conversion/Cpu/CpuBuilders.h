//===- CpuBuilders.h - the CPU target's kernel builders -----*- C++ -*-===//
//
// The x86 kernels (PackedGemm.cpp, FlashAttention.cpp), each one phase of
// tasks shaped by the #attn.cpu_target; CpuKernels.cpp calls them for the
// target's TargetKernelsInterface model.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CONVERSION_CPU_CPUBUILDERS_H
#define ATTNC_CONVERSION_CPU_CPUBUILDERS_H

#include "Common/LoopBuilders.h"
#include "attnc/Dialect/Attn/IR/AttnKernelsInterface.h"

namespace attnc {

/// y[b, t, :] = x[b, t, :] · W + bias over packed weights: wp is
/// [P, K, panel] with wp[p, k, j] = W[k, p*panel + j] (zero past column n),
/// bias (optional) [P*panel] zero-padded; x [B, T, K] and y [B, T, n] any
/// strides with a unit innermost one. Tasks: (batch, row block of gemm_mc
/// rows, group of panels); inside, K is blocked by gemm_kc and each
/// gemm_mr x gemm_nr block of y accumulates in registers.
/// rowLens (memref<?xi32> or null): only rows t < rowLens[b] are computed.
/// xStaged (or null): a bf16 [B, T, K] workspace buffer
/// (packedGemmStagesInput): a phase before the GEMM rounds x into it once
/// per call and the vdpbf16ps kernels read it; on other code paths that
/// phase has no tasks.
void buildPackedGemm(mlir::ImplicitLocOpBuilder &b, attn::CpuTargetAttr target,
                     mlir::Value x, mlir::Value wp, mlir::Value bias,
                     mlir::Value y, int64_t n, mlir::Value rowLens = {},
                     mlir::Value xStaged = {});

/// Whether buildPackedGemm wants x staged as bf16 (xStaged): float32 x
/// with an even static K against bf16 pair panels, whatever the code
/// path (every x86 path has the same buffers and phases).
bool packedGemmStagesInput(mlir::Value x, mlir::Value wp);

/// attn.sdpa as flash attention: q [B, Hq, Tq, D], k/v [B, Hkv, Tkv, D]
/// (strided views, unit innermost stride, static D), o [B, Hq, Tq, D] or
/// [B, Tq, Hq, D] per the op's layout. Tasks: (batch, head, block of attn_mq
/// queries). Each task keeps Q (pre-scaled, transposed), one block of
/// scores and its output rows on the stack, walks only the key blocks its
/// mask leaves visible with an online softmax, and masks element-wise only
/// the blocks that straddle the mask's boundary. qLens/kvLens (memref<?xi32>
/// or null): valid lengths per sequence; query blocks past qLens[b] are
/// skipped and keys past kvLens[b] never read. The buffers (q, k, v, o and
/// the optional ones) come as one AttentionBuffers.
mlir::LogicalResult buildFlashAttention(mlir::ImplicitLocOpBuilder &b,
                                        attn::CpuTargetAttr target, attn::SdpaOp op,
                                        const attn::AttentionBuffers &bufs);

/// The row width of the bf16 copies of K and V that buildFlashAttention
/// reads when the op has bf16 dot products (attn.sdpa's dot_type) and its
/// keys are a forward's, not a cache's: head_dim rounded up to 16, or 0 for
/// none. The same on every x86 code path (TargetKernelsInterface::
/// sdpaStagedWidth); only the AVX512-BF16 path fills and reads them.
int64_t flashAttentionStagedWidth(attn::SdpaOp op, mlir::Value q);

/// attn.probs: p [B, Hq, Tq, Tkv] = softmax weights, 0 where masked and on
/// rows past qLens[b]. Tasks: (batch, head); each row takes three passes
/// over its visible keys (max, sum, write), recomputing the scores. A null
/// p buffer (the caller did not ask) gives no tasks.
mlir::LogicalResult buildProbs(mlir::ImplicitLocOpBuilder &b,
                               attn::CpuTargetAttr target, attn::ProbsOp op,
                               const attn::AttentionBuffers &bufs);

} // namespace attnc

#endif
