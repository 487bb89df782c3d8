//===- AttnKernelsInterface.h - a target's kernels --------------*- C++ -*-===//
//
// attn::TargetKernelsInterface (AttnKernelsInterface.td): the kernels a
// kind of target attribute builds each computing attn op with. The models
// live with each target's kernels (compiler/lib/Conversion/Cpu, Cuda).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DIALECT_ATTN_IR_ATTNKERNELSINTERFACE_H
#define ATTNC_DIALECT_ATTN_IR_ATTNKERNELSINTERFACE_H

#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace attnc::attn {

/// The buffers of one attn.sdpa or attn.probs as attn-to-loops hands them
/// to a target's kernels: memrefs, null for an absent optional operand.
/// TiledOps.cpp fills it from the op in one place, and the interface and
/// the targets' models pass it through whole: a new operand of the two ops
/// is one field here, one line there, and the kernels that read it.
struct AttentionBuffers {
  mlir::Value q, k;    ///< [B, Hq, Tq, D], [B, Hkv, Tkv, D]
  mlir::Value v;       ///< [B, Hkv, Tkv, D] (attn.sdpa; null for attn.probs)
  mlir::Value o;       ///< the result: attn.sdpa's o, attn.probs' p
  mlir::Value qLens;   ///< valid query rows per sequence (memref<?xi32>)
  mlir::Value kvLens;  ///< valid keys per sequence (memref<?xi32>)
  mlir::Value sinks;   ///< gpt-oss: one logit per query head [Hq]
  mlir::Value relBias; ///< T5: the bias table [buckets, Hq]
  mlir::Value relEmb;  ///< BERT relative_key: E transposed [D, 2P - 1]
  /// attn.sdpa's keys and values staged as bf16 in the workspace when the
  /// target asked for them (TargetKernelsInterface::sdpaStagedWidth, else
  /// null): K's rows [B, Hkv, Tkv, W] and V's rows in interleaved pairs
  /// [B, Hkv, (Tkv + 1) / 2, 2 * W].
  mlir::Value kStaged, vStaged;
};

} // namespace attnc::attn

#include "attnc/Dialect/Attn/IR/AttnKernelsInterface.h.inc"

#endif
