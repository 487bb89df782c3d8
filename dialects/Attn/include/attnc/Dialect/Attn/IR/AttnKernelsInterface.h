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

#include "attnc/Dialect/Attn/IR/AttnKernelsInterface.h.inc"

#endif
