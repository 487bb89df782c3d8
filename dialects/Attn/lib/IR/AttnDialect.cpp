//===- AttnDialect.cpp - attn dialect registration ------------------------===//
//
// Registers the attn ops and enum attributes with the MLIR context.
//
//===----------------------------------------------------------------------===//
#include "attnc/Dialect/Attn/IR/AttnDialect.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

//===----------------------------------------------------------------------===//
// Argument attributes
//===----------------------------------------------------------------------===//

/// `attn.input` marks the input of an attention function: a function
/// attn-to-loops lowers. Whatever the lowering cannot handle in it must be
/// rejected here, by the verifier, rather than read past an array there:
/// tensor.dim's index must be in [0, rank) of its source (upstream's
/// verifier accepts any index: out of range is undefined behaviour there).
LogicalResult AttnDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName() != "attn.input" || regionIndex >= op->getNumRegions())
    return success();
  LogicalResult result = success();
  op->getRegion(regionIndex).walk([&](tensor::DimOp d) {
    std::optional<int64_t> c = d.getConstantIndex();
    auto ty = dyn_cast<RankedTensorType>(d.getSource().getType());
    if (!c || !ty || (*c >= 0 && *c < ty.getRank()))
      return WalkResult::advance();
    d.emitOpError("index ")
        << *c << " is out of range for a tensor of rank " << ty.getRank()
        << " (in a function with attn.input, which attn-to-loops lowers: "
           "expected 0 <= index < rank)";
    result = failure();
    return WalkResult::interrupt();
  });
  return result;
}
