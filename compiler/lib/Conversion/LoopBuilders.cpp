//===- LoopBuilders.cpp - loop helpers shared by the kernels --------------===//
#include "LoopBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

scf::ForOp attnc::loop(ImplicitLocOpBuilder &c, Value lb, Value ub,
                       Value step, ValueRange init, LoopBody fn) {
  return scf::ForOp::create(
      c, lb, ub, step, init,
      [&](OpBuilder &nb, Location loc, Value iv, ValueRange args) {
        ImplicitLocOpBuilder ib(loc, nb);
        SmallVector<Value> res = fn(ib, iv, args);
        scf::YieldOp::create(ib, res);
      });
}

scf::ForOp attnc::loop(ImplicitLocOpBuilder &c, Value lb, Value ub,
                       ValueRange init, LoopBody fn) {
  return loop(c, lb, ub, arith::ConstantIndexOp::create(c, 1), init, fn);
}

scf::ForallOp attnc::taskLoop(
    ImplicitLocOpBuilder &b, Value numTasks,
    llvm::function_ref<void(ImplicitLocOpBuilder &, Value)> fn) {
  auto forall = scf::ForallOp::create(b, ArrayRef<OpFoldResult>{numTasks},
                                      ValueRange{}, std::nullopt);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPoint(forall.getBody()->getTerminator());
  ImplicitLocOpBuilder ib(b.getLoc(), b);
  ib.setInsertionPoint(forall.getBody()->getTerminator());
  fn(ib, forall.getInductionVar(0));
  return forall;
}

Value attnc::validLength(ImplicitLocOpBuilder &c, Value lens, Value b,
                         Value full) {
  Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(c, lens);
  Value isNull = arith::CmpIOp::create(c, arith::CmpIPredicate::eq, ptr,
                                       arith::ConstantIndexOp::create(c, 0));
  auto ifOp = scf::IfOp::create(
      c, isNull,
      [&](OpBuilder &nb, Location loc) { scf::YieldOp::create(nb, loc, full); },
      [&](OpBuilder &nb, Location loc) {
        Value l = memref::LoadOp::create(nb, loc, lens, ValueRange{b});
        Value i = arith::IndexCastOp::create(nb, loc, nb.getIndexType(), l);
        scf::YieldOp::create(nb, loc, i);
      });
  return ifOp.getResult(0);
}
