//===- EncodeWeights.cpp - the packed layout of weight arguments ----------===//
//
// attnc-encode-weights: the weight-encoding half of attn-to-loops. Decides,
// for each function with an attn.target, which weight arguments the kernels
// read in the target's packed panel layout, and records it on the argument
// (attn.panel, attn.pairs). attnc-plan-memory materializes the layout in the
// argument's memref type; attnc-pack-weights writes it.
//
//===----------------------------------------------------------------------===//
#include "attnc/Conversion/Passes.h"
#include "attnc/Dialect/Attn/IR/AttnInterfaces.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace attnc {
#define GEN_PASS_DEF_ATTNENCODEWEIGHTSPASS
#include "attnc/Conversion/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc::attn;

bool attnc::packableWeight(BlockArgument arg) {
  auto ty = dyn_cast<RankedTensorType>(arg.getType());
  if (!ty || !ty.hasStaticShape() || !isa<FloatType>(ty.getElementType()) ||
      arg.use_empty() || (ty.getRank() != 1 && ty.getRank() != 2))
    return false;
  for (OpOperand &use : arg.getUses()) {
    auto l = dyn_cast<LinearOp>(use.getOwner());
    if (!l || use.get() != (ty.getRank() == 2 ? l.getWeight() : l.getBias()))
      return false;
  }
  return true;
}

namespace {
struct EncodeWeightsPass final
    : attnc::impl::AttnEncodeWeightsPassBase<EncodeWeightsPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      auto target = f->getAttrOfType<TargetAttrInterface>(
          AttnDialect::TargetAttrHelper::getNameStr());
      if (f.isExternal() || !target)
        continue;
      for (BlockArgument a : f.getArguments()) {
        unsigned i = a.getArgNumber();
        if (!f.getArgAttr(i, AttnDialect::WeightAttrHelper::getNameStr()) ||
            !attnc::packableWeight(a))
          continue;
        f.setArgAttr(i, AttnDialect::PanelAttrHelper::getNameStr(),
                     IntegerAttr::get(IndexType::get(ctx), target.getPanel()));
        auto ty = cast<RankedTensorType>(a.getType());
        if (ty.getRank() == 2 && ty.getElementType().isBF16())
          f.setArgAttr(i, AttnDialect::PairsAttrHelper::getNameStr(), UnitAttr::get(ctx));
      }
    }
  }
};
} // namespace
