//===- LoopBuilders.cpp - loop helpers shared by the kernels --------------===//
#include "LoopBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

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

void attnc::switchOnCount(
    ImplicitLocOpBuilder &c, Value v, int64_t n,
    llvm::function_ref<void(ImplicitLocOpBuilder &, int64_t)> caseFn,
    llvm::function_ref<void(ImplicitLocOpBuilder &)> defaultFn) {
  SmallVector<int64_t> cases;
  for (int64_t i = 1; i < n; ++i)
    cases.push_back(i);
  auto sw = scf::IndexSwitchOp::create(c, TypeRange{}, v, cases, cases.size());
  auto build = [&](Region &r, llvm::function_ref<void(ImplicitLocOpBuilder &)> fn) {
    ImplicitLocOpBuilder b(c.getLoc(), c.getContext());
    b.setInsertionPointToStart(&r.emplaceBlock());
    if (fn)
      fn(b);
    scf::YieldOp::create(b);
  };
  for (auto [ci, k] : llvm::enumerate(cases))
    build(sw.getCaseRegions()[ci], [&, k = k](ImplicitLocOpBuilder &b) { caseFn(b, k); });
  build(sw.getDefaultRegion(), defaultFn);
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

void attnc::buildCacheAppend(ImplicitLocOpBuilder &b, Value k, Value v,
                             Value kc, Value vc, Value lens, Value pos) {
  // One task per (sequence, kv head): rows [pos, pos + Tn) of both caches
  // take the new rows (pos = positions[b], 0 without positions); the
  // head-0 task also writes lens[b] = pos + Tn. A NULL cache (forward
  // called without one) is not written.
  Value nb = memref::DimOp::create(b, k, 0), hkv = memref::DimOp::create(b, k, 1);
  Value tn = memref::DimOp::create(b, k, 2), dd = memref::DimOp::create(b, k, 3);
  attnc::taskLoop(b, arith::MulIOp::create(b, nb, hkv),
                  [&](ImplicitLocOpBuilder &c, Value task) {
    Value bi = arith::DivUIOp::create(c, task, hkv);
    Value h = arith::RemUIOp::create(c, task, hkv);
    Value zero = arith::ConstantIndexOp::create(c, 0);
    Value p0 = pos ? attnc::validLength(c, pos, bi, zero) : zero;
    Value end = arith::AddIOp::create(c, p0, tn);
    Value first = arith::CmpIOp::create(c, arith::CmpIPredicate::eq, h, zero);
    scf::IfOp::create(c, first, [&](OpBuilder &nb2, Location loc) {
      Value l = arith::IndexCastOp::create(nb2, loc, nb2.getI32Type(), end);
      memref::StoreOp::create(nb2, loc, l, lens, ValueRange{bi});
      scf::YieldOp::create(nb2, loc);
    });
    auto notNull = [&](Value buf) -> Value {
      Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(c, buf);
      return arith::CmpIOp::create(c, arith::CmpIPredicate::ne, ptr, zero);
    };
    for (auto [src, dst] : {std::pair{k, kc}, std::pair{v, vc}}) {
      scf::IfOp::create(c, notNull(dst), [&, src = src, dst = dst](OpBuilder &nb2, Location loc) {
        ImplicitLocOpBuilder c1(loc, nb2);
        attnc::loop(c1, zero, tn, {}, [&](ImplicitLocOpBuilder &c2, Value t, ValueRange) {
          Value row = arith::AddIOp::create(c2, p0, t);
          attnc::loop(c2, zero, dd, {}, [&](ImplicitLocOpBuilder &c3, Value d, ValueRange) {
            Value x = memref::LoadOp::create(c3, src, ValueRange{bi, h, t, d});
            memref::StoreOp::create(c3, x, dst, ValueRange{bi, h, row, d});
            return SmallVector<Value>{};
          });
          return SmallVector<Value>{};
        });
        scf::YieldOp::create(c1);
      });
    }
  });
}

void attnc::buildMaskRows(ImplicitLocOpBuilder &b, Value y, Value lens) {
  // One task per sequence: rows [lens[b], T) of y become zeros.
  Value nb = memref::DimOp::create(b, y, 0), t = memref::DimOp::create(b, y, 1);
  Value n = memref::DimOp::create(b, y, 2);
  attnc::taskLoop(b, nb, [&](ImplicitLocOpBuilder &c, Value bi) {
    Value len = attnc::validLength(c, lens, bi, t);
    Value zero = arith::ConstantOp::create(
        c, c.getFloatAttr(cast<MemRefType>(y.getType()).getElementType(), 0.0));
    Value start = arith::MinSIOp::create(
        c, arith::MaxSIOp::create(c, len, arith::ConstantIndexOp::create(c, 0)), t);
    attnc::loop(c, start, t, {}, [&](ImplicitLocOpBuilder &c1, Value r, ValueRange) {
      attnc::loop(c1, arith::ConstantIndexOp::create(c1, 0), n, {},
                  [&](ImplicitLocOpBuilder &c2, Value col, ValueRange) {
                    memref::StoreOp::create(c2, zero, y, ValueRange{bi, r, col});
                    return SmallVector<Value>{};
                  });
      return SmallVector<Value>{};
    });
  });
}
