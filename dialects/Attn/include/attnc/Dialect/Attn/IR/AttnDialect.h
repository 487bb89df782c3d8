//===- AttnDialect.h - attn dialect declaration -----------------*- C++ -*-===//
//
// Declares the attn dialect class and its enum attributes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DIALECT_ATTN_IR_ATTNDIALECT_H
#define ATTNC_DIALECT_ATTN_IR_ATTNDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "mlir/IR/BuiltinOps.h"

#include "attnc/Dialect/Attn/IR/AttnEnums.h.inc"

// The target attribute interface, then the attribute classes (which
// implement it), then the dialect: the dialect's discardable-attribute helpers
// (AttnBase.td, discardableAttrs) name two of them.
#include "attnc/Dialect/Attn/IR/AttnTargetInterface.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/Attn/IR/AttnAttrs.h.inc"

#include "attnc/Dialect/Attn/IR/AttnDialect.h.inc"

#endif // ATTNC_DIALECT_ATTN_IR_ATTNDIALECT_H
