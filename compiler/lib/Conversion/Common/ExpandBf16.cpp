//===- ExpandBf16.cpp - bf16 <-> f32 conversions as integer arithmetic ----===//
//
// arith.truncf f32 -> bf16 (round to nearest even, NaN kept quiet) and
// arith.extf bf16 -> f32 as integer operations (upstream's bf16 expansion
// patterns, and only those: arith-expand would also rewrite maximumf and
// friends in the float32 kernels). Every code path then rounds the same
// way, and no code path needs __truncsfbf2, which a kernel library cannot
// link (its only NEEDED entry is libc).
//
//===----------------------------------------------------------------------===//
#include "attnc/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace attnc {
#define GEN_PASS_DEF_ATTNEXPANDBF16PASS
#include "attnc/Conversion/Passes.h.inc"
} // namespace attnc

using namespace mlir;

namespace {
struct ExpandBf16Pass final : attnc::impl::AttnExpandBf16PassBase<ExpandBf16Pass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      auto bf16 = [](Type t) { return getElementTypeOrSelf(t).isBF16(); };
      if (isa<arith::TruncFOp, arith::ExtFOp>(op) &&
          (llvm::any_of(op->getOperandTypes(), bf16) ||
           llvm::any_of(op->getResultTypes(), bf16)))
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config)))
      return signalPassFailure();
  }
};
} // namespace
