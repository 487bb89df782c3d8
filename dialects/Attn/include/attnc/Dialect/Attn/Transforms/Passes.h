//===- Passes.h - attn -> attn rewrites -------------------------*- C++ -*-===//
#ifndef ATTNC_DIALECT_ATTN_TRANSFORMS_PASSES_H
#define ATTNC_DIALECT_ATTN_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace attnc::attn {

#define GEN_PASS_DECL
#include "attnc/Dialect/Attn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attnc/Dialect/Attn/Transforms/Passes.h.inc"

} // namespace attnc::attn

#endif // ATTNC_DIALECT_ATTN_TRANSFORMS_PASSES_H
