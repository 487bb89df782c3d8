//===- AttnInterfaces.h - how attn ops are tiled ----------------*- C++ -*-===//
#ifndef ATTNC_DIALECT_ATTN_IR_ATTNINTERFACES_H
#define ATTNC_DIALECT_ATTN_IR_ATTNINTERFACES_H

#include "attnc/Dialect/Attn/IR/AttnDialect.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"

namespace attnc::attn {

/// What a TiledOpInterface model sees of the function being lowered
/// (attn-to-loops implements it).
class PhaseContext {
public:
  virtual ~PhaseContext();
  /// Builder at the point where the op's phases go.
  virtual mlir::ImplicitLocOpBuilder &builder() = 0;
  /// The code path's target description (#attn.cpu_target or
  /// #attn.cuda_target).
  virtual TargetAttrInterface target() const = 0;
  /// The target if it is a CUDA one (else null), and if it is a CPU one.
  CudaTargetAttr cudaTarget() const { return llvm::dyn_cast<CudaTargetAttr>(target()); }
  CpuTargetAttr cpuTarget() const { return llvm::dyn_cast<CpuTargetAttr>(target()); }
  /// The buffer (memref) an operand or result of the op lives in; null for
  /// a null value (an absent optional operand).
  virtual mlir::Value buffer(mlir::Value tensorValue) = 0;
  /// Columns N of a packed weight or bias buffer (its attn.logical_shape);
  /// 0 when the buffer is not in the packed panel layout.
  virtual int64_t packedColumns(mlir::Value buffer) = 0;
  /// Workspace buffers the planner set aside for the op at the target's
  /// request (attn.sdpa: its staged keys and values), in order; empty when
  /// none.
  virtual llvm::ArrayRef<mlir::Value> scratch(mlir::Operation *op) = 0;
};

} // namespace attnc::attn

#include "attnc/Dialect/Attn/IR/AttnInterfaces.h.inc"

#endif
