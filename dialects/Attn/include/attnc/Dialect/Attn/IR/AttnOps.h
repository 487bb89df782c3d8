//===- AttnOps.h - attn dialect operations ----------------------*- C++ -*-===//
//
// Declares the attn ops generated from AttnOps.td.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DIALECT_ATTN_IR_ATTNOPS_H
#define ATTNC_DIALECT_ATTN_IR_ATTNOPS_H

#include "attnc/Dialect/Attn/IR/AttnDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define GET_OP_CLASSES
#include "attnc/Dialect/Attn/IR/AttnOps.h.inc"

#endif // ATTNC_DIALECT_ATTN_IR_ATTNOPS_H
