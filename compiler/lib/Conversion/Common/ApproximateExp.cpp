//===- ApproximateExp.cpp - math.exp as polynomial arithmetic -------------===//
//
// exp(x) -> 2^n * p(r) (MLIR's ExpApproximation): plain arithmetic that
// vectorizes, instead of a call to libm's expf per element. The x86
// attention kernels emit their own 2^x (FlashAttention.cpp); this covers
// the probs output's loop and the CUDA kernels' host form.
//
//===----------------------------------------------------------------------===//
#include "attnc/Conversion/Passes.h"

#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace attnc {
#define GEN_PASS_DEF_ATTNAPPROXIMATEEXPPASS
#include "attnc/Conversion/Passes.h.inc"
} // namespace attnc

using namespace mlir;

namespace {
struct ApproximateExpPass final
    : attnc::impl::AttnApproximateExpPassBase<ApproximateExpPass> {
  using Base::Base;
  void runOnOperation() override {
    auto isExp = [](StringRef name) {
      return name == "exp" || name == "math.exp";
    };
    SmallVector<Operation *> ops;
    getOperation()->walk([&](math::ExpOp op) {
      if (getElementTypeOrSelf(op.getType()).isF32())
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, isExp);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config)))
      return signalPassFailure();
    // Every f32 exp must be gone: a leftover would silently be a libm call.
    WalkResult left = getOperation()->walk([](math::ExpOp op) {
      return getElementTypeOrSelf(op.getType()).isF32() ? WalkResult::interrupt()
                                                        : WalkResult::advance();
    });
    if (left.wasInterrupted()) {
      getOperation()->emitError("attnc-approximate-exp: math.exp was not expanded");
      signalPassFailure();
    }
  }
};
} // namespace
