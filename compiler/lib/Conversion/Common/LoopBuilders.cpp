//===- LoopBuilders.cpp - loop helpers shared by the kernels --------------===//
#include "LoopBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include <limits>
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"
#include "llvm/ADT/bit.h"
#include "llvm/ADT/StringExtras.h"

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

Value attnc::bf16PairBroadcast(ImplicitLocOpBuilder &c, Value src, ValueRange at,
                               int64_t vl) {
  Value two = vector::LoadOp::create(c, VectorType::get({2}, c.getBF16Type()), src, at);
  Value one = vector::BitCastOp::create(c, VectorType::get({1}, c.getI32Type()), two);
  Value bits = vector::ExtractOp::create(c, one, ArrayRef<int64_t>{0});
  Value all = vector::BroadcastOp::create(c, VectorType::get({vl}, c.getI32Type()), bits);
  return vector::BitCastOp::create(c, VectorType::get({2 * vl}, c.getBF16Type()), all);
}

Value attnc::roundToBf16(ImplicitLocOpBuilder &c, Value v) {
  auto vt = cast<VectorType>(v.getType());
  return x86vector::CvtPackedF32ToBF16Op::create(
      c, VectorType::get(vt.getShape(), c.getBF16Type()), v);
}

Value attnc::convertFloat(ImplicitLocOpBuilder &c, Value v, Type to) {
  Type from = getElementTypeOrSelf(v.getType());
  if (from == to)
    return v;
  Type t = to;
  if (auto vt = dyn_cast<VectorType>(v.getType()))
    t = VectorType::get(vt.getShape(), to);
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(c, t, v);
  return arith::TruncFOp::create(c, t, v);
}

/// 2^r on [-0.5, 0.5]: exp2NonPositive's polynomial (and the soft-cap's).
static const double kExp2Coef[] = {1.0, 0.6931471824645996, 0.24022646248340607,
                                   0.05550328642129898, 0.009618489071726799,
                                   0.0013399930903688073, 0.0001534581242594868};

static Type elementOf(Value mem) { return cast<MemRefType>(mem.getType()).getElementType(); }

Value attnc::loadF32(ImplicitLocOpBuilder &c, Value mem, ValueRange at) {
  return convertFloat(c, memref::LoadOp::create(c, mem, at), c.getF32Type());
}

Value attnc::loadVecF32(ImplicitLocOpBuilder &c, VectorType vt, Value mem, ValueRange at) {
  auto st = VectorType::get(vt.getShape(), elementOf(mem));
  return convertFloat(c, vector::LoadOp::create(c, st, mem, at), vt.getElementType());
}

Value attnc::maskedLoadVecF32(ImplicitLocOpBuilder &c, VectorType vt, Value mem,
                              ValueRange at, Value mask) {
  auto st = VectorType::get(vt.getShape(), elementOf(mem));
  Value pass = arith::ConstantOp::create(
      c, DenseElementsAttr::get(st, c.getFloatAttr(st.getElementType(), 0.0)));
  return convertFloat(c, vector::MaskedLoadOp::create(c, st, mem, at, mask, pass),
                      vt.getElementType());
}

void attnc::storeF32(ImplicitLocOpBuilder &c, Value v, Value mem, ValueRange at) {
  memref::StoreOp::create(c, convertFloat(c, v, elementOf(mem)), mem, at);
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
            // (the cache may be bf16/f16: rounded to it here)
            Value x = attnc::loadF32(c3, src, ValueRange{bi, h, t, d});
            attnc::storeF32(c3, x, dst, ValueRange{bi, h, row, d});
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

//===----------------------------------------------------------------------===//
// attn.rope
//===----------------------------------------------------------------------===//

namespace {

/// A private constant global holding `values` (f64), shared by every
/// function of the module that asks for the same table.
Value constantTable(ImplicitLocOpBuilder &b, ArrayRef<double> values,
                    const char *prefix) {
  auto module = b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  uint64_t h = 0xcbf29ce484222325ull; // FNV-1a over the doubles' bits
  for (double v : values)
    for (int i = 0; i < 64; i += 8) {
      h ^= (llvm::bit_cast<uint64_t>(v) >> i) & 0xff;
      h *= 0x100000001b3ull;
    }
  std::string name = prefix + llvm::utohexstr(h);
  auto type = MemRefType::get({int64_t(values.size())}, b.getF64Type());
  if (!module.lookupSymbol(name)) {
    OpBuilder mb(module.getBodyRegion());
    auto tensorTy = RankedTensorType::get(type.getShape(), b.getF64Type());
    memref::GlobalOp::create(mb, b.getLoc(), name, mb.getStringAttr("private"),
                             type, DenseElementsAttr::get(tensorTy, values),
                             /*constant=*/true, /*alignment=*/IntegerAttr());
  }
  return memref::GetGlobalOp::create(b, type, name);
}

/// sin(a), cos(a) for a in [-pi, pi] in double precision: Taylor series to
/// a^21 and a^22 (truncation below 1.1e-11 at |a| = pi).
Value f64Const(ImplicitLocOpBuilder &c, double v) {
  return arith::ConstantOp::create(c, c.getF64FloatAttr(v)).getResult();
}
Value i64Const(ImplicitLocOpBuilder &c, int64_t v) {
  return arith::ConstantOp::create(c, c.getI64IntegerAttr(v)).getResult();
}

/// p(x) by Horner's rule, coefficients lowest first (mul + add: no
/// llvm.fma, a libm call on SSE2).
Value hornerF64(ImplicitLocOpBuilder &c, Value x, ArrayRef<double> coef) {
  Value p = f64Const(c, coef.back());
  for (int i = int(coef.size()) - 2; i >= 0; --i)
    p = arith::AddFOp::create(c, arith::MulFOp::create(c, p, x), f64Const(c, coef[size_t(i)]));
  return p;
}

std::pair<Value, Value> sinCos(ImplicitLocOpBuilder &c, Value a) {
  Value a2 = arith::MulFOp::create(c, a, a);
  // Coefficients (-1)^k / (2k+1)! and (-1)^k / (2k)!, lowest first.
  double fact = 1;
  SmallVector<double> sinC, cosC;
  for (int n = 0; n <= 22; ++n) {
    if (n > 0)
      fact *= n;
    double sign = ((n / 2) % 2) ? -1.0 : 1.0;
    (n % 2 ? sinC : cosC).push_back(sign / fact);
  }
  Value s = arith::MulFOp::create(c, a, hornerF64(c, a2, sinC));
  return {s, hornerF64(c, a2, cosC)};
}

/// log2(x) for a scalar f64 x >= 1 (finite), to about 1e-16 relative: x =
/// m * 2^e with m in [sqrt(1/2), sqrt(2)], ln m = 2 atanh(z), z = (m - 1) /
/// (m + 1), |z| < 0.172, by its series to z^21. No libm call.
Value log2AtLeastOne(ImplicitLocOpBuilder &c, Value x) {
  Value bits = arith::BitcastOp::create(c, c.getI64Type(), x);
  Value e = arith::SubIOp::create(c, arith::ShRUIOp::create(c, bits, i64Const(c, 52)),
                                  i64Const(c, 1023));
  Value mBits = arith::OrIOp::create(
      c, arith::AndIOp::create(c, bits, i64Const(c, 0x000FFFFFFFFFFFFFLL)),
      i64Const(c, 0x3FF0000000000000LL));
  Value m = arith::BitcastOp::create(c, c.getF64Type(), mBits);
  Value big = arith::CmpFOp::create(c, arith::CmpFPredicate::OGT, m,
                                    f64Const(c, 1.4142135623730951));
  m = arith::SelectOp::create(c, big, arith::MulFOp::create(c, m, f64Const(c, 0.5)), m);
  e = arith::SelectOp::create(c, big, arith::AddIOp::create(c, e, i64Const(c, 1)), e);
  Value one = f64Const(c, 1.0);
  Value z = arith::DivFOp::create(c, arith::SubFOp::create(c, m, one),
                                  arith::AddFOp::create(c, m, one));
  Value z2 = arith::MulFOp::create(c, z, z);
  SmallVector<double> coef; // 1/(2k+1)
  for (int k = 0; k <= 10; ++k)
    coef.push_back(1.0 / double(2 * k + 1));
  Value lnM = arith::MulFOp::create(c, arith::MulFOp::create(c, f64Const(c, 2.0), z),
                                    hornerF64(c, z2, coef));
  return arith::AddFOp::create(c, arith::SIToFPOp::create(c, c.getF64Type(), e),
                               arith::MulFOp::create(c, lnM, f64Const(c, 1.4426950408889634)));
}

/// 2^y for a scalar f64 y <= 0 (y >= -1022 exact to about 1e-16 relative;
/// below, 2^-1022): 2^floor(y) from its exponent bits times 2^f, f in [0, 1),
/// as exp(f ln 2) by its Taylor series to degree 17. No libm call.
Value exp2NonPositiveF64(ImplicitLocOpBuilder &c, Value y) {
  Value low = f64Const(c, -1022.0); // (a compare and select: no libm fmaximum)
  y = arith::SelectOp::create(c, arith::CmpFOp::create(c, arith::CmpFPredicate::OLT, y, low),
                              low, y);
  Value k = arith::FPToSIOp::create(c, c.getI64Type(), y); // toward zero: k >= y
  Value kf = arith::SIToFPOp::create(c, c.getF64Type(), k);
  Value above = arith::CmpFOp::create(c, arith::CmpFPredicate::OGT, kf, y);
  k = arith::SelectOp::create(c, above, arith::SubIOp::create(c, k, i64Const(c, 1)), k);
  kf = arith::SIToFPOp::create(c, c.getF64Type(), k);
  Value x = arith::MulFOp::create(c, arith::SubFOp::create(c, y, kf),
                                  f64Const(c, 0.6931471805599453));
  SmallVector<double> coef; // 1/n!
  double fact = 1;
  for (int n = 0; n <= 17; ++n) {
    if (n > 0)
      fact *= n;
    coef.push_back(1.0 / fact);
  }
  Value scale = arith::BitcastOp::create(
      c, c.getF64Type(),
      arith::ShLIOp::create(c, arith::AddIOp::create(c, k, i64Const(c, 1023)),
                            i64Const(c, 52)));
  return arith::MulFOp::create(c, hornerF64(c, x, coef), scale);
}

} // namespace

static constexpr double twoPi = 6.283185307179586476925286766559;

attnc::RopeAngles attnc::RopeAngles::of(ImplicitLocOpBuilder &b, attn::RopeOp op) {
  auto turnsOf = [&](ArrayRef<double> f) {
    SmallVector<double> t;
    for (double v : f)
      t.push_back(v / twoPi);
    return t;
  };
  RopeAngles r;
  r.turns = constantTable(b, turnsOf(op.getInvFreq()), "__attnc_rope_turns_");
  if (auto l = op.getLongInvFreq())
    r.longTurns = constantTable(b, turnsOf(*l), "__attnc_rope_turns_");
  r.half = op.getRotaryDim() / 2;
  r.interleaved = op.getInterleaved();
  r.factor = op.getAttentionFactor().convertToDouble();
  r.longFrom = op.getLongFrom();
  r.dynamicFactor = op.getDynamicFactor().convertToDouble();
  r.dynamicFrom = op.getDynamicFrom();
  r.rotaryDim = op.getRotaryDim();
  return r;
}

attnc::RopeAngles::Sequence attnc::RopeAngles::sequence(ImplicitLocOpBuilder &c,
                                                       Value positions, Value batch,
                                                       Value t) const {
  Sequence s;
  if (!longTurns && dynamicFactor <= 0)
    return s;
  // The call's length: the batch's last position + 1 (a scalar loop over
  // the batch's positions, once per task).
  Value zero = arith::ConstantIndexOp::create(c, 0);
  Value last = zero;
  if (positions)
    last = attnc::loop(c, zero, batch, {zero},
                       [&](ImplicitLocOpBuilder &c1, Value bi, ValueRange it) {
                         Value p = attnc::validLength(c1, positions, bi, zero);
                         return SmallVector<Value>{arith::MaxUIOp::create(c1, it[0], p)};
                       })
               .getResult(0);
  Value len = arith::AddIOp::create(c, last, t);
  if (longTurns) // longrope: past long_from
    s.useLong = arith::CmpIOp::create(c, arith::CmpIPredicate::sgt, len,
                                      arith::ConstantIndexOp::create(c, longFrom));
  if (dynamicFactor > 0) {
    // Dynamic NTK: log2(s), s = factor * L / dynamic_from - (factor - 1)
    // past dynamic_from, else 0 (s = 1).
    Value lenF = position(c, len);
    Value sc = arith::SubFOp::create(
        c, arith::MulFOp::create(c, lenF, f64Const(c, dynamicFactor / double(dynamicFrom))),
        f64Const(c, dynamicFactor - 1));
    Value past = arith::CmpIOp::create(c, arith::CmpIPredicate::sgt, len,
                                       arith::ConstantIndexOp::create(c, dynamicFrom));
    s.ntkLog2 = log2AtLeastOne(c, arith::SelectOp::create(c, past, sc, f64Const(c, 1.0)));
  }
  return s;
}

Value attnc::RopeAngles::position(ImplicitLocOpBuilder &c, Value pos) const {
  return arith::SIToFPOp::create(c, c.getF64Type(),
                                 arith::IndexCastOp::create(c, c.getI64Type(), pos));
}

std::pair<Value, Value> attnc::RopeAngles::cosSin(ImplicitLocOpBuilder &c, Value posF, Value i,
                                                  const Sequence &seq) const {
  auto f64c = [&](double v) { return f64Const(c, v); };
  Value f = memref::LoadOp::create(c, turns, ValueRange{i});
  if (longTurns)
    f = arith::SelectOp::create(c, seq.useLong,
                                memref::LoadOp::create(c, longTurns, ValueRange{i}), f);
  if (seq.ntkLog2) // dynamic NTK: times s^(-2i / (r - 2))
    f = arith::MulFOp::create(
        c, f,
        exp2NonPositiveF64(
            c, arith::MulFOp::create(
                   c, seq.ntkLog2,
                   arith::MulFOp::create(c, position(c, i),
                                         f64c(-2.0 / double(rotaryDim - 2))))));
  // The angle in turns, reduced to [-1/2, 1/2] exactly enough in double
  // (positions < 2^40), then in radians.
  Value tt = arith::MulFOp::create(c, posF, f);
  Value k = arith::FPToSIOp::create(c, c.getI64Type(), arith::AddFOp::create(c, tt, f64c(0.5)));
  Value red = arith::SubFOp::create(c, tt, arith::SIToFPOp::create(c, c.getF64Type(), k));
  Value a = arith::MulFOp::create(c, red, f64c(twoPi));
  auto [sn, cs] = sinCos(c, a);
  Value cf = arith::TruncFOp::create(c, c.getF32Type(), arith::MulFOp::create(c, cs, f64c(factor)));
  Value sf = arith::TruncFOp::create(c, c.getF32Type(), arith::MulFOp::create(c, sn, f64c(factor)));
  return {cf, sf};
}

std::pair<Value, Value> attnc::RopeAngles::columns(ImplicitLocOpBuilder &c, Value i) const {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(c, v).getResult(); };
  Value i0 = interleaved ? arith::MulIOp::create(c, i, idx(2)).getResult() : i;
  Value i1 = arith::AddIOp::create(c, i0, idx(interleaved ? 1 : half));
  return {i0, i1};
}

void attnc::RopeAngles::rotate(ImplicitLocOpBuilder &c, Value x, ValueRange at,
                               std::pair<Value, Value> cols, std::pair<Value, Value> cs) const {
  SmallVector<Value> a0(at), a1(at);
  a0.push_back(cols.first);
  a1.push_back(cols.second);
  auto [cf, sf] = cs;
  Value x0 = memref::LoadOp::create(c, x, a0);
  Value x1 = memref::LoadOp::create(c, x, a1);
  Value y0 = arith::SubFOp::create(c, arith::MulFOp::create(c, x0, cf),
                                   arith::MulFOp::create(c, x1, sf));
  Value y1 = arith::AddFOp::create(c, arith::MulFOp::create(c, x1, cf),
                                   arith::MulFOp::create(c, x0, sf));
  memref::StoreOp::create(c, y0, x, a0);
  memref::StoreOp::create(c, y1, x, a1);
}

void attnc::rowBlockTasks(
    ImplicitLocOpBuilder &b, Value x, int64_t seqDim, int64_t kRows,
    llvm::function_ref<void(ImplicitLocOpBuilder &, Value, Value, Value)> fn) {
  auto idx = indexConst;
  Value nb = memref::DimOp::create(b, x, 0), t = memref::DimOp::create(b, x, seqDim);
  Value blocks = arith::CeilDivUIOp::create(b, t, idx(b, kRows));
  Value tasks = arith::MulIOp::create(b, nb, blocks);
  attnc::taskLoop(b, tasks, [&](ImplicitLocOpBuilder &c, Value task) {
    Value bi = arith::DivUIOp::create(c, task, blocks);
    Value r0 = arith::MulIOp::create(c, arith::RemUIOp::create(c, task, blocks), idx(c, kRows));
    Value r1 = arith::MinUIOp::create(c, arith::AddIOp::create(c, r0, idx(c, kRows)), t);
    fn(c, bi, r0, r1);
  });
}

/// Half-split rotation of one row, vl pairs at a time: cs [2][nv*vl]
/// holds the row's factor*cos (row 0) and factor*sin (row 1) of each pair
/// (lanes past `half` zero); per head, x[.., i] and x[.., i + half] as two
/// vectors, rotated as RopeAngles::rotate does one pair, the last vector
/// masked when half is not a multiple of vl.
static void rotateRowVectors(ImplicitLocOpBuilder &c, const attnc::RopeAngles &ang, Value x,
                             Value bi, Value row, Value nh, Value cs, int64_t vl) {
  auto idx = [&](ImplicitLocOpBuilder &cc, int64_t v) {
    return arith::ConstantIndexOp::create(cc, v).getResult();
  };
  const int64_t half = ang.half, nv = (half + vl - 1) / vl, tail = half - (nv - 1) * vl;
  auto vt = VectorType::get({vl}, c.getF32Type());
  attnc::loop(c, idx(c, 0), nh, {}, [&](ImplicitLocOpBuilder &c1, Value h, ValueRange) {
    for (int64_t v = 0; v < nv; ++v) {
      Value mask;
      if (v + 1 == nv && tail != vl)
        mask = vector::CreateMaskOp::create(c1, VectorType::get({vl}, c1.getI1Type()),
                                            ValueRange{idx(c1, tail)});
      SmallVector<Value> a0{bi, h, row, idx(c1, v * vl)}, a1{bi, h, row, idx(c1, half + v * vl)};
      Value zeros = arith::ConstantOp::create(
          c1, DenseElementsAttr::get(vt, c1.getF32FloatAttr(0.0f)));
      auto load = [&](ArrayRef<Value> at) -> Value {
        return mask ? vector::MaskedLoadOp::create(c1, vt, x, at, mask, zeros).getResult()
                    : vector::LoadOp::create(c1, vt, x, at).getResult();
      };
      auto store = [&](Value val, ArrayRef<Value> at) {
        if (mask)
          vector::MaskedStoreOp::create(c1, x, at, mask, val);
        else
          vector::StoreOp::create(c1, val, x, at);
      };
      Value cf = vector::LoadOp::create(c1, vt, cs, ValueRange{idx(c1, 0), idx(c1, v * vl)});
      Value sf = vector::LoadOp::create(c1, vt, cs, ValueRange{idx(c1, 1), idx(c1, v * vl)});
      Value x0 = load(a0), x1 = load(a1);
      Value y0 = arith::SubFOp::create(c1, arith::MulFOp::create(c1, x0, cf),
                                       arith::MulFOp::create(c1, x1, sf));
      Value y1 = arith::AddFOp::create(c1, arith::MulFOp::create(c1, x1, cf),
                                       arith::MulFOp::create(c1, x0, sf));
      store(y0, a0);
      store(y1, a1);
    }
    return SmallVector<Value>{};
  });
}

void attnc::buildRope(ImplicitLocOpBuilder &b, attn::RopeOp op, Value x,
                      Value positions, int64_t vl) {
  const RopeAngles ang = RopeAngles::of(b, op);
  auto idx = [&](ImplicitLocOpBuilder &c, int64_t v) {
    return arith::ConstantIndexOp::create(c, v).getResult();
  };
  Value nh = memref::DimOp::create(b, x, 1), t = memref::DimOp::create(b, x, 2);
  const bool vectors =
      vl > 0 && !ang.interleaved && cast<MemRefType>(x.getType()).getElementType().isF32();
  rowBlockTasks(b, x, /*seqDim=*/2, /*rows=*/16, [&](ImplicitLocOpBuilder &c, Value bi, Value r0,
                                                      Value r1) {
    Value zero = idx(c, 0);
    Value p0 = positions ? attnc::validLength(c, positions, bi, zero) : zero;
    const RopeAngles::Sequence seq = ang.sequence(c, positions, memref::DimOp::create(c, x, 0), t);
    Value cs;
    if (vectors) {
      // The row's cos and sin, zero past half (read by masked-off lanes).
      const int64_t width = (ang.half + vl - 1) / vl * vl;
      cs = memref::AllocaOp::create(c, MemRefType::get({2, width}, c.getF32Type()));
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t i = ang.half; i < width; ++i)
          memref::StoreOp::create(
              c, arith::ConstantOp::create(c, c.getF32FloatAttr(0.0f)), cs,
              ValueRange{idx(c, r), idx(c, i)});
    }
    attnc::loop(c, r0, r1, {}, [&](ImplicitLocOpBuilder &c1, Value row, ValueRange) {
      Value posF = ang.position(c1, arith::AddIOp::create(c1, p0, row));
      if (vectors) {
        attnc::loop(c1, idx(c1, 0), idx(c1, ang.half), {},
                    [&](ImplicitLocOpBuilder &c2, Value i, ValueRange) {
          auto [cf, sf] = ang.cosSin(c2, posF, i, seq);
          memref::StoreOp::create(c2, cf, cs, ValueRange{idx(c2, 0), i});
          memref::StoreOp::create(c2, sf, cs, ValueRange{idx(c2, 1), i});
          return SmallVector<Value>{};
        });
        rotateRowVectors(c1, ang, x, bi, row, nh, cs, vl);
        return SmallVector<Value>{};
      }
      attnc::loop(c1, idx(c1, 0), idx(c1, ang.half), {},
                  [&](ImplicitLocOpBuilder &c2, Value i, ValueRange) {
        // Each pair's cos and sin once per row, applied to every head.
        auto cs = ang.cosSin(c2, posF, i, seq);
        auto cols = ang.columns(c2, i);
        attnc::loop(c2, idx(c2, 0), nh, {},
                    [&](ImplicitLocOpBuilder &c3, Value h, ValueRange) {
          ang.rotate(c3, x, ValueRange{bi, h, row}, cols, cs);
          return SmallVector<Value>{};
        });
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{};
    });
  });
}

//===----------------------------------------------------------------------===//
// Score modifiers
//===----------------------------------------------------------------------===//

Value attnc::ScoreMods::slope(ImplicitLocOpBuilder &c, Value head, double unit) const {
  if (slopes.empty())
    return {};
  SmallVector<double> scaled;
  for (double s : slopes)
    scaled.push_back(s * unit * (beforeScale ? scale : 1.0));
  Value table = constantTable(c, scaled, "__attnc_alibi_slopes_");
  Value s = memref::LoadOp::create(c, table, ValueRange{head});
  return arith::TruncFOp::create(c, c.getF32Type(), s);
}

Value attnc::ScoreMods::buckets(ImplicitLocOpBuilder &c) const {
  SmallVector<double> b(relBuckets.begin(), relBuckets.end());
  return constantTable(c, b, "__attnc_t5_buckets_");
}

Value attnc::ScoreMods::relBias(ImplicitLocOpBuilder &c, Value table, Value buckets,
                                Value head, Value rel, double unit) const {
  Value lo = arith::ConstantIndexOp::create(c, -relRange);
  Value hi = arith::ConstantIndexOp::create(c, relRange);
  Value r = arith::MinSIOp::create(c, arith::MaxSIOp::create(c, rel, lo), hi);
  Value at = arith::AddIOp::create(c, r, hi);
  // (the bucket table is a constant f64 global, exact for bucket numbers)
  Value bucket = arith::FPToSIOp::create(c, c.getI64Type(),
                                         memref::LoadOp::create(c, buckets, ValueRange{at}));
  Value bi = arith::IndexCastOp::create(c, c.getIndexType(), bucket);
  Value v = attnc::loadF32(c, table, ValueRange{bi, head});
  return arith::MulFOp::create(
      c, v, arith::ConstantOp::create(c, c.getF32FloatAttr(static_cast<float>(unit))));
}

Value attnc::ScoreMods::relBiasRow(ImplicitLocOpBuilder &c, Value table, Value head,
                                   int64_t vl, double unit) const {
  const int64_t len = 2 * relRange + 2 * vl + 1, off = relRange + vl;
  auto row = memref::AllocaOp::create(c, MemRefType::get({len}, c.getF32Type()));
  Value bt = buckets(c);
  attnc::loop(c, arith::ConstantIndexOp::create(c, 0), arith::ConstantIndexOp::create(c, len), {},
              [&](ImplicitLocOpBuilder &c1, Value k, ValueRange) {
                // d = k - off = i' - j, so rel = j - i' = off - k.
                Value rel = arith::SubIOp::create(c1, arith::ConstantIndexOp::create(c1, off), k);
                memref::StoreOp::create(c1, relBias(c1, table, bt, head, rel, unit), row,
                                        ValueRange{k});
                return SmallVector<Value>{};
              });
  return row;
}

/// p * 2^n (vector<16xf32>, n integral) by vscalefps. The op's operands
/// go to llvm.x86.avx512.mask.scalef.ps.512 in order: value, exponent,
/// pass-through, mask, rounding (4: the current direction).
static Value scaleByPow2(ImplicitLocOpBuilder &c, Value p, Value n) {
  return x86vector::MaskScaleFOp::create(
      c, p.getType(), p, n, p, arith::ConstantOp::create(c, c.getI16IntegerAttr(-1)),
      arith::ConstantOp::create(c, c.getI32IntegerAttr(4)));
}

/// 2^r for a vector r in [-1/2, 1/2]: kExp2Coef's polynomial in Horner form.
static Value exp2Poly(ImplicitLocOpBuilder &c, Value r) {
  auto vt = cast<VectorType>(r.getType());
  auto splat = [&](double v) -> Value {
    return arith::ConstantOp::create(
        c, DenseElementsAttr::get(vt, c.getF32FloatAttr(static_cast<float>(v))));
  };
  Value p = splat(kExp2Coef[6]);
  for (int i = 5; i >= 0; --i)
    p = vector::FMAOp::create(c, p, r, splat(kExp2Coef[i]));
  return p;
}

/// 2^x on AVX-512 (vector<16xf32>): n = roundeven(x), 2^(x - n) by
/// exp2Poly, times 2^n by vscalefps, which saturates to inf or 0 by itself.
static Value exp2Scalef(ImplicitLocOpBuilder &c, Value x) {
  Value n = math::RoundEvenOp::create(c, x);
  return scaleByPow2(c, exp2Poly(c, arith::SubFOp::create(c, x, n)), n);
}

Value attnc::ScoreMods::apply(ImplicitLocOpBuilder &c, Value s, Value slopeV,
                              Value delta, double unit) const {
  Type ty = s.getType();
  auto vt = dyn_cast<VectorType>(ty);
  auto cst = [&](double v) -> Value {
    auto attr = c.getF32FloatAttr(static_cast<float>(v));
    if (vt)
      return arith::ConstantOp::create(c, DenseElementsAttr::get(vt, attr));
    return arith::ConstantOp::create(c, attr);
  };
  if (slopeV) {
    Value sl = vt ? vector::BroadcastOp::create(c, vt, slopeV).getResult() : slopeV;
    s = arith::AddFOp::create(c, s, arith::MulFOp::create(c, sl, delta));
  }
  // Where |y| < 1/4 the formulas below cancel (C - 2C / (1 + E) with E
  // near 1: an absolute error of about C * 2^-24, 6e-4 at a cap of 10000):
  // there the capped score is s (1 + y^2 q(y^2)), tanh's odd series to y^11
  // (its next term is below 10^-8 of y at |y| = 1/4), so the score keeps its
  // own precision whatever the cap. Chosen per score after the formula.
  Value small, isSmall;
  if (softcap) {
    const double C = *softcap * unit;
    Value y = arith::MulFOp::create(c, s, cst(1.0 / C));
    Value y2 = arith::MulFOp::create(c, y, y);
    auto fma = [&](Value a, Value b, Value d) -> Value {
      return vt ? vector::FMAOp::create(c, a, b, d).getResult()
                : math::FmaOp::create(c, a, b, d).getResult();
    };
    Value q = cst(-1382.0 / 155925.0);
    for (double coef : {62.0 / 2835.0, -17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0})
      q = fma(q, y2, cst(coef));
    small = fma(s, arith::MulFOp::create(c, y2, q), s);
    isSmall = arith::CmpFOp::create(c, arith::CmpFPredicate::OLT, math::AbsFOp::create(c, s),
                                    cst(0.25 * C));
  }
  if (softcap && vt && avx512 && vt.getNumElements() == 16 && vt.getElementType().isF32()) {
    // AVX-512: cap * tanh(y), y = x / cap, x = s / unit, in scaled units:
    // C - 2C / (1 + E) with C = cap * unit and E = exp(2y) = 2^(k s) =
    // 2^r * 2^n, n = round(k s), r = k s - n in [-1/2, 1/2] (the softmax's
    // degree-6 polynomial), 2^n applied by vscalefps, which saturates to
    // inf or 0 by itself: no clamps, no exponent bits. E = inf gives C, E
    // = 0 gives -C: tanh's sign comes out of the subtraction. 13 vector
    // operations per 16 scores, the division among them. -inf (a hidden
    // key) would give NaN: the flash kernels apply this to computed scores
    // only.
    const double cap = *softcap, C = cap * unit, k = 2.0 * 1.4426950408889634 / C;
    Value e = exp2Scalef(c, arith::MulFOp::create(c, s, cst(k)));
    Value den = arith::AddFOp::create(c, e, cst(1.0));
    s = arith::SubFOp::create(c, cst(C), arith::DivFOp::create(c, cst(2.0 * C), den));
  } else if (softcap && vt) {
    // AVX2 (8 lanes, no vscalefps): the same, with 2^n built from n's bits, so k s is
    // clamped to [-126, 64] first (E stays a finite normal; 2C / (1 + 2^64)
    // is below C's rounding). The clamp is on s, so that k s - n comes out
    // of one FMA and 1 + E out of another (exp2NonPositive's polynomial,
    // inlined): 16 vector operations.
    const double cap = *softcap, C = cap * unit, k = 2.0 * 1.4426950408889634 / C;
    auto ivt = VectorType::get(vt.getShape(), c.getI32Type());
    auto icst = [&](int32_t v) -> Value {
      return arith::ConstantOp::create(c, DenseElementsAttr::get(ivt, v));
    };
    Value sc = arith::MaximumFOp::create(c, arith::MinimumFOp::create(c, s, cst(64.0 / k)),
                                         cst(-126.0 / k));
    // n = round(k s) by adding 1.5 * 2^23 (as exp2NonPositive), r = k s - n.
    const double magic = 12582912.0;
    Value t = vector::FMAOp::create(c, sc, cst(k), cst(magic));
    Value negN = arith::SubFOp::create(c, cst(magic), t);
    Value p = exp2Poly(c, vector::FMAOp::create(c, sc, cst(k), negN));
    Value e = arith::ShLIOp::create(
        c, arith::AddIOp::create(c, arith::BitcastOp::create(c, ivt, t), icst(127)), icst(23));
    Value den = vector::FMAOp::create(c, p, arith::BitcastOp::create(c, vt, e), cst(1.0));
    s = arith::SubFOp::create(c, cst(C), arith::DivFOp::create(c, cst(2.0 * C), den));
  } else if (softcap) {
    // Scalar (the probs kernels and the CUDA threads): tanh(y) = sign(y)
    // (1 - e) / (1 + e), e = exp(-2|y|) <= 1. A score already -inf (a key
    // hidden before its dot product) stays so.
    const double cap = *softcap;
    Value a = math::AbsFOp::create(c, s);
    Value e = expClamped(c, arith::MulFOp::create(c, a, cst(-2.0 / (unit * cap))));
    Value one = cst(1.0);
    Value t = arith::DivFOp::create(c, arith::SubFOp::create(c, one, e),
                                    arith::AddFOp::create(c, one, e));
    // tanh's sign is y's: copy its sign bit (and, xor: no compare, no select).
    Value sign = arith::AndIOp::create(c, arith::BitcastOp::create(c, c.getI32Type(), s),
                                       arith::ConstantIntOp::create(
                                           c, std::numeric_limits<int32_t>::min(), 32));
    t = arith::BitcastOp::create(
        c, ty, arith::XOrIOp::create(c, arith::BitcastOp::create(c, c.getI32Type(), t), sign));
    Value capped = arith::MulFOp::create(c, t, cst(cap * unit));
    Value ninf = arith::CmpFOp::create(c, arith::CmpFPredicate::OEQ, s,
                                       cst(-std::numeric_limits<double>::infinity()));
    s = arith::SelectOp::create(c, ninf, s, capped);
  }
  if (softcap)
    s = arith::SelectOp::create(c, isSmall, small, s);
  return s;
}

Value attnc::RelKey::column(ImplicitLocOpBuilder &c, Value qpos, Value j) const {
  Value r = arith::AddIOp::create(c, arith::SubIOp::create(c, qpos, j),
                                  arith::ConstantIndexOp::create(c, center()));
  return arith::MinSIOp::create(
      c, arith::MaxSIOp::create(c, r, arith::ConstantIndexOp::create(c, 0)),
      arith::ConstantIndexOp::create(c, cols - 1));
}

Value attnc::RelKey::fold(ImplicitLocOpBuilder &c, Value acc, Value q, Value k, Value table,
                          Value d, Value r, double kScale) const {
  Value x = keyQuery ? math::FmaOp::create(
                           c, k,
                           arith::ConstantOp::create(
                               c, c.getF32FloatAttr(static_cast<float>(kScale))),
                           q)
                           .getResult()
                     : q;
  return math::FmaOp::create(c, x, attnc::loadF32(c, table, ValueRange{d, r}), acc);
}

Value attnc::RelKey::scoreDot(ImplicitLocOpBuilder &c, int64_t D, RowAt qAt, RowAt kAt,
                              Value table, Value qpos, Value j, double kScale) const {
  Value zero = arith::ConstantOp::create(c, c.getF32FloatAttr(0.0f));
  Value r = any() ? column(c, qpos, j) : Value();
  scf::ForOp dot = attnc::loop(
      c, arith::ConstantIndexOp::create(c, 0), arith::ConstantIndexOp::create(c, D),
      ValueRange{zero}, [&](ImplicitLocOpBuilder &c1, Value d, ValueRange a) {
        Value q = qAt(c1, d), k = kAt(c1, d);
        Value acc = math::FmaOp::create(c1, q, k, a[0]);
        return SmallVector<Value>{any() ? fold(c1, acc, q, k, table, d, r, kScale) : acc};
      });
  return dot.getResult(0);
}

attnc::ScoreMods::Head attnc::ScoreMods::head(ImplicitLocOpBuilder &c, Value index,
                                              Value relTable, double unit) const {
  Head h;
  h.index = index;
  h.slope = slope(c, index, unit);
  if (relTable) {
    h.table = relTable;
    h.buckets = buckets(c);
  }
  return h;
}

Value attnc::ScoreMods::applyAt(ImplicitLocOpBuilder &c, Value s, const Head &h, Value j,
                                Value qpos, double unit) const {
  Value rel = arith::SubIOp::create(c, j, qpos);
  if (h.table) // T5's bias, before softcap (as the reference)
    s = arith::AddFOp::create(c, s, relBias(c, h.table, h.buckets, h.index, rel, unit));
  Value delta = arith::SIToFPOp::create(c, c.getF32Type(),
                                        arith::IndexCastOp::create(c, c.getI64Type(), rel));
  return apply(c, s, h.slope, delta, unit);
}

Value attnc::expClamped(ImplicitLocOpBuilder &c, Value x) {
  Value lo = arith::ConstantOp::create(c, c.getF32FloatAttr(-87.0f));
  return math::ExpOp::create(c, arith::MaximumFOp::create(c, x, lo));
}

//===----------------------------------------------------------------------===//
// attn.clip
//===----------------------------------------------------------------------===//

Value attnc::clampSymmetric(ImplicitLocOpBuilder &c, Value v, double limit) {
  Value hi = arith::ConstantOp::create(c, c.getF32FloatAttr(static_cast<float>(limit)));
  Value lo = arith::ConstantOp::create(c, c.getF32FloatAttr(static_cast<float>(-limit)));
  // NaN compares false both ways and stays NaN (as torch's clamp).
  v = arith::SelectOp::create(c, arith::CmpFOp::create(c, arith::CmpFPredicate::OGT, v, hi), hi,
                              v);
  return arith::SelectOp::create(c, arith::CmpFOp::create(c, arith::CmpFPredicate::OLT, v, lo),
                                 lo, v);
}

void attnc::buildClip(ImplicitLocOpBuilder &b, attn::ClipOp op, Value x) {
  const double limit = op.getLimit().convertToDouble();
  Value nh = memref::DimOp::create(b, x, 1), d = memref::DimOp::create(b, x, 3);
  rowBlockTasks(b, x, /*seqDim=*/2, /*rows=*/16, [&](ImplicitLocOpBuilder &c, Value bi, Value r0,
                                                      Value r1) {
    Value zero = arith::ConstantIndexOp::create(c, 0);
    attnc::loop(c, r0, r1, {}, [&](ImplicitLocOpBuilder &c1, Value row, ValueRange) {
      attnc::loop(c1, zero, nh, {}, [&](ImplicitLocOpBuilder &c2, Value h, ValueRange) {
        attnc::loop(c2, zero, d, {}, [&](ImplicitLocOpBuilder &c3, Value e, ValueRange) {
          SmallVector<Value> at{bi, h, row, e};
          Value v = memref::LoadOp::create(c3, x, at);
          memref::StoreOp::create(c3, clampSymmetric(c3, v, limit), x, at);
          return SmallVector<Value>{};
        });
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{};
    });
  });
}

//===----------------------------------------------------------------------===//
// attn.temperature
//===----------------------------------------------------------------------===//

Value attnc::temperatureFactor(ImplicitLocOpBuilder &c, attn::TemperatureOp op, Value pos) {
  const int64_t floorScale = op.getFloorScale();
  const double attnScale = op.getAttnScale().convertToDouble();
  // n = floor((pos + 1) / floor_scale) (both non-negative integers), then
  // ln(n + 1) = log2(n + 1) * ln 2 with n + 1 >= 1.
  Value n = arith::DivUIOp::create(
      c, arith::AddIOp::create(c, pos, arith::ConstantIndexOp::create(c, 1)),
      arith::ConstantIndexOp::create(c, floorScale));
  Value nf = arith::UIToFPOp::create(c, c.getF64Type(),
                                     arith::IndexCastOp::create(c, c.getI64Type(), n));
  Value lg = log2AtLeastOne(c, arith::AddFOp::create(c, nf, f64Const(c, 1.0)));
  Value f = arith::AddFOp::create(
      c, f64Const(c, 1.0),
      arith::MulFOp::create(c, lg, f64Const(c, attnScale * 0.6931471805599453)));
  return arith::TruncFOp::create(c, c.getF32Type(), f);
}

void attnc::buildTemperature(ImplicitLocOpBuilder &b, attn::TemperatureOp op, Value x,
                             Value positions) {
  Value nh = memref::DimOp::create(b, x, 1), d = memref::DimOp::create(b, x, 3);
  rowBlockTasks(b, x, /*seqDim=*/2, /*rows=*/16, [&](ImplicitLocOpBuilder &c, Value bi, Value r0,
                                                      Value r1) {
    Value zero = arith::ConstantIndexOp::create(c, 0);
    Value p0 = positions ? attnc::validLength(c, positions, bi, zero) : zero;
    attnc::loop(c, r0, r1, {}, [&](ImplicitLocOpBuilder &c1, Value row, ValueRange) {
      Value f = temperatureFactor(c1, op, arith::AddIOp::create(c1, p0, row));
      attnc::loop(c1, zero, nh, {}, [&](ImplicitLocOpBuilder &c2, Value h, ValueRange) {
        attnc::loop(c2, zero, d, {}, [&](ImplicitLocOpBuilder &c3, Value e, ValueRange) {
          SmallVector<Value> at{bi, h, row, e};
          Value v = attnc::loadF32(c3, x, at);
          attnc::storeF32(c3, arith::MulFOp::create(c3, v, f), x, at);
          return SmallVector<Value>{};
        });
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{};
    });
  });
}

//===----------------------------------------------------------------------===//
// attn.rms_norm
//===----------------------------------------------------------------------===//

void attnc::buildRmsNorm(ImplicitLocOpBuilder &b, attn::RmsNormOp op, Value x, Value w,
                         Value bias) {
  auto idx = [&](ImplicitLocOpBuilder &c, int64_t v) {
    return arith::ConstantIndexOp::create(c, v).getResult();
  };
  auto f32c = [&](ImplicitLocOpBuilder &c, double v) {
    return arith::ConstantOp::create(c, c.getF32FloatAttr(static_cast<float>(v))).getResult();
  };
  auto xt = cast<MemRefType>(x.getType());
  const int64_t D = xt.getDimSize(3);
  const bool across = op.getAcrossHeads();
  const bool center = op.getCenter(), perHead = op.getPerHeadWeight();
  const double eps = op.getEps().convertToDouble();
  const double offset = op.getWeightOffset().convertToDouble();
  Value nh = memref::DimOp::create(b, x, 1);
  rowBlockTasks(b, x, /*seqDim=*/2, /*rows=*/16, [&](ImplicitLocOpBuilder &c, Value bi, Value r0,
                                                      Value r1) {
    Value zero = idx(c, 0), one = idx(c, 1);
    attnc::loop(c, r0, r1, {}, [&](ImplicitLocOpBuilder &c1, Value row, ValueRange) {
      // Groups: each head, or one group of all heads.
      Value groups = across ? one : nh;
      Value per = across ? nh : one;
      Value n = arith::UIToFPOp::create(
          c1, c1.getF32Type(),
          arith::IndexCastOp::create(c1, c1.getI64Type(),
                                     arith::MulIOp::create(c1, per, idx(c1, D))));
      attnc::loop(c1, zero, groups, {}, [&](ImplicitLocOpBuilder &c2, Value g, ValueRange) {
        Value h0 = arith::MulIOp::create(c2, g, per);
        auto heads = [&](ImplicitLocOpBuilder &cc, ValueRange init,
                         llvm::function_ref<SmallVector<Value>(ImplicitLocOpBuilder &, Value,
                                                               Value, ValueRange)> fn) {
          return attnc::loop(cc, zero, per, init,
                             [&](ImplicitLocOpBuilder &c3, Value hh, ValueRange a) {
            Value h = arith::AddIOp::create(c3, h0, hh);
            return attnc::loop(c3, zero, idx(c3, D), a,
                               [&](ImplicitLocOpBuilder &c4, Value d, ValueRange a2) {
                                 return fn(c4, h, arith::AddIOp::create(
                                                      c4, arith::MulIOp::create(c4, hh, idx(c4, D)), d),
                                           a2);
                               }).getResults();
          });
        };
        // LayerNorm (center): the mean first, subtracted from every value.
        Value mu;
        if (center) {
          scf::ForOp s1 = heads(c2, ValueRange{f32c(c2, 0.0)},
              [&](ImplicitLocOpBuilder &c4, Value h, Value wi, ValueRange a) {
                Value d = arith::RemUIOp::create(c4, wi, idx(c4, D));
                Value v = memref::LoadOp::create(c4, x, ValueRange{bi, h, row, d});
                return SmallVector<Value>{arith::AddFOp::create(c4, a[0], v)};
              });
          mu = arith::DivFOp::create(c2, s1.getResult(0), n);
        }
        auto centered = [&](ImplicitLocOpBuilder &c4, Value v) -> Value {
          return mu ? arith::SubFOp::create(c4, v, mu).getResult() : v;
        };
        scf::ForOp ss = heads(c2, ValueRange{f32c(c2, 0.0)},
            [&](ImplicitLocOpBuilder &c4, Value h, Value wi, ValueRange a) {
              Value d = arith::RemUIOp::create(c4, wi, idx(c4, D));
              Value v = centered(c4, memref::LoadOp::create(c4, x, ValueRange{bi, h, row, d}));
              return SmallVector<Value>{
                  arith::AddFOp::create(c4, a[0], arith::MulFOp::create(c4, v, v))};
            });
        Value mean = arith::DivFOp::create(c2, ss.getResult(0), n);
        Value r = arith::DivFOp::create(
            c2, f32c(c2, 1.0),
            math::SqrtOp::create(c2, arith::AddFOp::create(c2, mean, f32c(c2, eps))));
        heads(c2, ValueRange{}, [&](ImplicitLocOpBuilder &c4, Value h, Value wi, ValueRange) {
          Value d = arith::RemUIOp::create(c4, wi, idx(c4, D));
          Value v = centered(c4, memref::LoadOp::create(c4, x, ValueRange{bi, h, row, d}));
          // One weight per head: head h's entries h*D..h*D+D-1.
          Value wIdx = perHead ? arith::AddIOp::create(
                                     c4, arith::MulIOp::create(c4, h, idx(c4, D)), d)
                                     .getResult()
                               : wi;
          // No weight (Llama 4's L2 norm): the factor is 1 (+ offset).
          Value wv = w ? attnc::loadF32(c4, w, ValueRange{wIdx}) : f32c(c4, 1.0);
          if (offset != 0)
            wv = arith::AddFOp::create(c4, wv, f32c(c4, offset));
          Value y = arith::MulFOp::create(c4, v, r);
          if (w || offset != 0)
            y = arith::MulFOp::create(c4, y, wv);
          if (bias)
            y = arith::AddFOp::create(c4, y, attnc::loadF32(c4, bias, ValueRange{wIdx}));
          memref::StoreOp::create(c4, y, x, ValueRange{bi, h, row, d});
          return SmallVector<Value>{};
        });
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{};
    });
  });
}

//===----------------------------------------------------------------------===//
// KeyVisibility
//===----------------------------------------------------------------------===//

Value attnc::KeyVisibility::offset(ImplicitLocOpBuilder &c, Value qv, Value kvv) const {
  return topLeft ? arith::ConstantIndexOp::create(c, 0).getResult()
                 : arith::SubIOp::create(c, kvv, qv).getResult();
}

attnc::KeyVisibility::Range attnc::KeyVisibility::block(ImplicitLocOpBuilder &c, Value diag0,
                                                       Value rows, Value kvv) const {
  Value zero = arith::ConstantIndexOp::create(c, 0);
  auto clamp = [&](Value x) -> Value {
    return arith::MinSIOp::create(c, arith::MaxSIOp::create(c, x, zero), kvv);
  };
  auto plus = [&](Value x, int64_t k) -> Value {
    return arith::AddIOp::create(c, x, arith::ConstantIndexOp::create(c, k));
  };
  Range r{zero, kvv, zero, kvv};
  Value last = arith::AddIOp::create(c, diag0, rows); // past the last row's diagonal
  if (causal) {
    r.end = clamp(last);
    r.full = clamp(plus(diag0, 1));
  }
  if (bidirectional) { // the last row's window ahead, and the first row's
    r.end = clamp(plus(last, window - 1));
    r.full = clamp(plus(diag0, window));
  }
  if (windowed) {
    r.start = clamp(plus(diag0, 1 - window));
    r.low = clamp(plus(last, -window));
  }
  if (chunked) { // the first row's chunk, and the last row's
    r.start = clamp(firstKey(c, diag0));
    r.low = clamp(firstKey(c, plus(last, -1)));
  }
  return r;
}

Value attnc::KeyVisibility::lastKey(ImplicitLocOpBuilder &c, Value diag) const {
  if (!bidirectional)
    return diag;
  Type t = diag.getType();
  Value w1;
  if (t.isIndex())
    w1 = arith::ConstantIndexOp::create(c, window - 1);
  else if (auto vt = dyn_cast<VectorType>(t))
    w1 = arith::ConstantOp::create(
        c, DenseElementsAttr::get(vt, c.getIntegerAttr(vt.getElementType(), window - 1)));
  else
    w1 = arith::ConstantOp::create(c, c.getIntegerAttr(t, window - 1));
  return arith::AddIOp::create(c, diag, w1);
}

Value attnc::KeyVisibility::firstKey(ImplicitLocOpBuilder &c, Value diag) const {
  Type t = diag.getType();
  auto cst = [&](int64_t v) -> Value {
    if (t.isIndex())
      return arith::ConstantIndexOp::create(c, v);
    if (auto vt = dyn_cast<VectorType>(t))
      return arith::ConstantOp::create(
          c, DenseElementsAttr::get(vt, c.getIntegerAttr(vt.getElementType(), v)));
    return arith::ConstantOp::create(c, c.getIntegerAttr(t, v));
  };
  if (windowed)
    return arith::AddIOp::create(c, diag, cst(1 - window));
  // floor(diag / C) * C: signed division rounds toward zero, which floors
  // for diag >= 0, the rows that see keys (a negative diagonal gives 0: its
  // row sees nothing under the causal part).
  return arith::MulIOp::create(c, arith::DivSIOp::create(c, diag, cst(window)), cst(window));
}

attnc::KeyVisibility::Range attnc::KeyVisibility::row(ImplicitLocOpBuilder &c, Value diag,
                                                     Value kvv) const {
  Value one = arith::ConstantIndexOp::create(c, 1);
  Range r = block(c, diag, one, kvv);
  r.low = r.start;
  r.full = r.end;
  return r;
}

Value attnc::runningMax(ImplicitLocOpBuilder &c, Value a, Value b) {
  return arith::SelectOp::create(c, arith::CmpFOp::create(c, arith::CmpFPredicate::OGT, a, b),
                                 a, b);
}

Value attnc::splatMax(ImplicitLocOpBuilder &c, Value v) {
  const int64_t n = cast<VectorType>(v.getType()).getNumElements();
  for (int64_t step = n / 2; step >= 1; step /= 2) {
    // lane i takes lane i ^ step: the halves, quarters, ... swapped
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < n; ++i)
      perm.push_back(i ^ step);
    v = runningMax(c, v, vector::ShuffleOp::create(c, v, v, perm));
  }
  return v;
}

/// 2^x for the softmax exponentials, whose arguments are never positive
/// (a score minus a running maximum; -inf where masked): x is clamped to
/// -126, so 2^n is a normal float built from n's bits (-inf gives 2^-126,
/// and rows that see no key at all are zeroed at the end), and 2^r with
/// r = x - round(x) in [-1/2, 1/2] is a degree-6 polynomial (a minimax fit
/// of relative error 2e-9; at most 1 ulp in float32 Horner form, checked
/// over 2e5 points). 13 vector ops where math.exp's general expansion (any
/// x: its own range clamps and overflow selects) took 25; 10 on AVX-512,
/// where n = roundeven(x) and p * 2^n is one vscalefps (the same values:
/// x - n is exact either way, and p * 2^n is one correctly rounded
/// scaling, by a multiplication or by vscalefps).
/// The kernels pre-scale Q by log2(e) so that 2^x is all they need.
Value attnc::exp2NonPositive(ImplicitLocOpBuilder &c, Value x, bool avx512) {
  auto vt = cast<VectorType>(x.getType());
  auto ivt = VectorType::get(vt.getShape(), c.getI32Type());
  auto splat = [&](double v) -> Value {
    return arith::ConstantOp::create(
        c, DenseElementsAttr::get(vt, c.getF32FloatAttr(static_cast<float>(v))));
  };
  auto isplat = [&](int32_t v) -> Value {
    return arith::ConstantOp::create(c, DenseElementsAttr::get(ivt, v));
  };
  // n = round(x) by adding 1.5 * 2^23 (exact IEEE arithmetic, no rounding
  // instruction: the SSE2 path has none); the sum's low mantissa bits are
  // then n itself, so 2^n's bits are (bits + 127) << 23.
  const double magic = 12582912.0;
  Value xc = arith::MaximumFOp::create(c, x, splat(-126.0));
  if (avx512 && vt.getNumElements() == 16 && vt.getElementType().isF32())
    return exp2Scalef(c, xc);
  Value t = arith::AddFOp::create(c, xc, splat(magic));
  Value n = arith::SubFOp::create(c, t, splat(magic));
  Value p = exp2Poly(c, arith::SubFOp::create(c, xc, n));
  Value e = arith::ShLIOp::create(
      c, arith::AddIOp::create(c, arith::BitcastOp::create(c, ivt, t), isplat(127)),
      isplat(23));
  return arith::MulFOp::create(c, p, arith::BitcastOp::create(c, vt, e));
}
