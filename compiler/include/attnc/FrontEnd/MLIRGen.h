//===- MLIRGen.h - Spec -> conceptual attn IR -------------------*- C++ -*-===//
#ifndef ATTNC_FRONTEND_MLIRGEN_H
#define ATTNC_FRONTEND_MLIRGEN_H

#include "attnc/Spec/Spec.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace attnc {

/// Emits the textbook form of the block as one function named after the
/// spec: three projections, split heads, sdpa, merge heads, output
/// projection. Arguments: x [?, ?, d_model], then the weights in compute
/// layout ([in, out]), each tagged `attn.weight = "wq" | "bq" | ... | "bo"`.
/// Every op's location is the spec line of the key that determines it.
mlir::OwningOpRef<mlir::ModuleOp> buildConceptualIR(mlir::MLIRContext &ctx,
                                                    const Spec &spec);

} // namespace attnc

#endif
