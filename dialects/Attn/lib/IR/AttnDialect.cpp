//===- AttnDialect.cpp - attn dialect registration ------------------------===//
//
// Registers the attn ops and enum attributes with the MLIR context.
//
//===----------------------------------------------------------------------===//
#include "attnc/Dialect/Attn/IR/AttnDialect.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace attnc::attn;

#include "attnc/Dialect/Attn/IR/AttnDialect.cpp.inc"
#include "attnc/Dialect/Attn/IR/AttnEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/Attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attnc/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attnc/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
}
