//===- PackWeights.cpp - the pack plan and NAME_pack ----------------------===//
//
// After attnc-outline-tasks the forward (and decode) functions take their
// weights in the layout the kernels read: arguments with `attn.weight`
// roles, fused parts (`attn.concat_of`) and 32-column panels (`attn.panel`,
// `attn.logical_shape`). The module's `attn.weight_storage` says where each
// role lives in the tensors the user has. This pass places every weight
// argument in one packed buffer (16-float aligned offsets, in argument
// order) and emits @NAME_pack(storage tensors..., packed) that fills it:
//
//   packed[off_a + panel layout of (k, n)] = role(k, n - start_of_part)
//
// for every part of every weight argument, with role(k, n) read from its
// storage rectangle (transposed for [out, in] layouts). The decode entry
// must read the same buffer: its weights are matched to the forward's by
// role and packed type, or the pass fails.
//
//===----------------------------------------------------------------------===//
#include "attnc/Conversion/Passes.h"
#include "attnc/Dialect/Attn/IR/AttnDialect.h"
#include "attnc/Target/PackPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace attnc {
#define GEN_PASS_DEF_ATTNPACKWEIGHTSPASS
#include "attnc/Conversion/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using attnc::attn::AttnDialect;

namespace {
struct PackWeightsPass final
    : attnc::impl::AttnPackWeightsPassBase<PackWeightsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto name = module->getAttrOfType<StringAttr>(AttnDialect::SpecNameAttrHelper::getNameStr());
    if (!name) {
      module.emitError("attnc-pack-weights: the module has no attn.spec_name");
      return signalPassFailure();
    }
    if (module.lookupSymbol((name.getValue() + "_pack").str())) {
      module.emitError("attnc-pack-weights: @") << name.getValue() << "_pack already exists";
      return signalPassFailure();
    }
    FailureOr<attnc::WeightStorage> storage = attnc::readWeightStorage(module);
    if (failed(storage))
      return signalPassFailure();
    FailureOr<attnc::LoweredEntries> entries = attnc::readEntryTable(module);
    if (failed(entries))
      return signalPassFailure();
    attnc::LoweredEntries &e = *entries;
    if (!e.forward) {
      module.emitError("attnc-pack-weights: attn.entry_points has no forward "
                       "code path (run attn-to-loops and attnc-outline-tasks first)");
      return signalPassFailure();
    }
    // One NAME_pack serves every code path: their weight arguments (and so
    // their whole signatures) must be the first path's, panels included.
    for (auto [first, paths] : {std::pair(e.forward, &e.forwardWs),
                                std::pair(e.decode, &e.decodeWs)})
      for (func::FuncOp f : *paths)
        if (f.getFunctionType() != first.getFunctionType()) {
          f.emitError("attnc-pack-weights: @")
              << f.getName() << " takes " << f.getFunctionType() << " but @"
              << first.getName() << " takes " << first.getFunctionType()
              << ": one packed buffer serves every code path, so their weight "
                 "layouts (the targets' panel) must agree";
          return signalPassFailure();
        }
    FailureOr<attnc::PackPlan> plan = attnc::computePackPlan(e.forward, *storage);
    if (failed(plan) || failed(attnc::recordForwardSignature(e.forward, *plan)) ||
        (e.decode &&
         failed(attnc::recordForwardSignature(e.decode, *plan, /*decode=*/true))) ||
        failed(attnc::addPackFunction(module, name.getValue(), *plan, *storage)))
      return signalPassFailure();
  }
};
} // namespace
