//===- Passes.h - attn -> upstream conversions ------------------*- C++ -*-===//
#ifndef ATTNC_CONVERSION_PASSES_H
#define ATTNC_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace attnc {

#define GEN_PASS_DECL
#include "attnc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attnc/Conversion/Passes.h.inc"

} // namespace attnc

#endif
