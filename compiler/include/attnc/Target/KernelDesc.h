//===- KernelDesc.h - the block as the back end reads it from the IR -*- C++ -*-===//
//
// The back end (the C glue and its metadata record, the C header, the LLVM
// entry points) reads one description of the kernel: the block in the
// runtime's terms (attnrt::BlockParams, the leaf Block.h) plus the kernel's
// name, its max_seq_len and the spec's hash. The front end writes it into
// the module as the attribute `attn.block` (a dictionary, one entry per
// field below); the pipeline reads it back from the module, so everything
// after the conceptual IR is built from the IR, not from the Spec.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TARGET_KERNELDESC_H
#define ATTNC_TARGET_KERNELDESC_H

#include "attnc/Spec/Spec.h"
#include "attnc/runtime/Block.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace attnc {

struct KernelDesc {
  std::string name;          ///< C identifier, prefix of every symbol
  attnrt::BlockParams block; ///< the block, ABI codes
  int64_t maxSeqLen = 0;     ///< 0 = unbounded
  uint64_t specHash = 0;     ///< attnc::specHash of the spec it came from

  bool decode() const { return block.kvCache; }
  bool cross() const { return block.cross; }
  bool wantsProbs() const { return block.wantProbs; }
  bool hasRope() const { return block.rope.style != ATTNC_ROPE_NONE; }
  bool paddingMask() const {
    return attnc_mask_lengths(block.mask) != 0;
  }
  bool scoreMods() const { return !block.alibiSlopes.empty() || block.softcap > 0; }
  /// Columns of y: d_model with W_O, else the concatenated heads.
  int64_t outDim() const { return block.outProj ? block.dModel : block.qWidth(); }
};

/// The description of a spec's kernel.
KernelDesc kernelDesc(const Spec &spec);

/// `attn.block`: the description as a module attribute, and back. The
/// reader emits an error at the module when the attribute is missing or a
/// field is absent or of the wrong type.
mlir::DictionaryAttr kernelDescAttr(mlir::MLIRContext *ctx, const KernelDesc &d);
mlir::FailureOr<KernelDesc> readKernelDesc(mlir::ModuleOp module);

} // namespace attnc

#endif
