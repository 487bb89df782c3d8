//===- SdpaToLoops.cpp - attn.sdpa as scf loops on buffers ----------------===//
//
// The attention part of attn-to-loops: one query row at a time, scores of
// the visible keys in a scratch row (never the T×T matrix), max-subtracted
// softmax, then the weighted sum of V rows accumulated into the output.
//
//===----------------------------------------------------------------------===//
#include "LoopBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace attnc::attn;

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

// For each (b, h, i): s_j = scale * q_i·k_j for visible j, m = max s,
// p_j = exp(s_j - m), o_i = (sum_j p_j v_j) / sum_j p_j. One score row lives
// in `scratch`; fully masked rows produce zeros.
void attnc::buildSdpaLoops(ImplicitLocOpBuilder &c, SdpaOp op, Value q,
                           Value k, Value v, Value o, Value scratch, Value kT) {
  Type et = cast<MemRefType>(q.getType()).getElementType();
  auto fconst = [&](ImplicitLocOpBuilder &ib, double x) -> Value {
    return arith::ConstantOp::create(ib, ib.getFloatAttr(et, x));
  };
  auto dimv = [&](Value buf, int64_t i) -> Value {
    return memref::DimOp::create(c, buf, i);
  };
  Value zero = arith::ConstantIndexOp::create(c, 0);
  Value one = arith::ConstantIndexOp::create(c, 1);
  Value nb = dimv(q, 0), hq = dimv(q, 1), tq = dimv(q, 2), d = dimv(q, 3);
  Value hkv = dimv(k, 1), tkv = dimv(k, 2);
  Value group = arith::DivUIOp::create(c, hq, hkv);
  bool causal = op.getMask() == MaskKind::causal;
  bool topLeft = op.getCausalAlign() == CausalAlign::top_left;
  bool bthd = op.getLayout() == HeadLayout::bthd;
  double scale = op.getScale().convertToDouble();

  // Vector path: head_dim a static multiple of the vector width and unit
  // stride along it (true for every buffer and view attn-to-loops makes).
  constexpr int64_t kVL = 16;
  auto unitInner = [](Value buf) {
    auto t = cast<MemRefType>(buf.getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    return succeeded(t.getStridesAndOffset(strides, offset)) &&
           strides.back() == 1;
  };
  int64_t headDim = cast<MemRefType>(q.getType()).getDimSize(3);
  bool vec = et.isF32() && !ShapedType::isDynamic(headDim) &&
             headDim % kVL == 0 && unitInner(q) && unitInner(k) &&
             unitInner(v) && unitInner(o);
  int64_t chunks = vec ? headDim / kVL : 0;
  auto vt = VectorType::get({kVL}, et);

  loop(c, zero, nb, {}, [&](ImplicitLocOpBuilder &c1, Value bi, ValueRange) {
    loop(c1, zero, hq, {}, [&](ImplicitLocOpBuilder &c2, Value h, ValueRange) {
      Value kh = arith::DivUIOp::create(c2, h, group);
      // kT[(j/VL*D + dd)*VL + j%VL] = k[b, kh, j, dd]: once per head, O(T·D);
      // each block of VL keys is then D contiguous vectors.
      auto kTIndex = [&](ImplicitLocOpBuilder &cc, Value jBlockStart, Value lane,
                         int64_t dd) -> Value {
        Value base = arith::MulIOp::create(cc, jBlockStart,
                                           arith::ConstantIndexOp::create(cc, headDim));
        return arith::AddIOp::create(
            cc, base, arith::AddIOp::create(cc, lane, arith::ConstantIndexOp::create(cc, dd * kVL)));
      };
      if (vec)
        loop(c2, zero, tkv, {}, [&](ImplicitLocOpBuilder &c3, Value j, ValueRange) {
          Value vl = arith::ConstantIndexOp::create(c3, kVL);
          Value lane = arith::RemUIOp::create(c3, j, vl);
          Value start = arith::SubIOp::create(c3, j, lane);
          for (int64_t dd = 0; dd < headDim; ++dd) {
            Value di = arith::ConstantIndexOp::create(c3, dd);
            memref::StoreOp::create(
                c3, memref::LoadOp::create(c3, k, ValueRange{bi, kh, j, di}), kT,
                ValueRange{kTIndex(c3, start, lane, dd)});
          }
          return SmallVector<Value>{};
        });
      loop(c2, zero, tq, {}, [&](ImplicitLocOpBuilder &c3, Value i, ValueRange) {
        // Keys visible to query i: [0, jEnd).
        Value jEnd = tkv;
        if (causal) {
          Value lim = arith::AddIOp::create(c3, i, one);
          if (!topLeft)
            lim = arith::SubIOp::create(c3, arith::AddIOp::create(c3, lim, tkv), tq);
          lim = arith::MaxSIOp::create(c3, lim, zero);
          jEnd = arith::MinSIOp::create(c3, lim, tkv);
        }
        Value scaleV = fconst(c3, scale);
        Value negInf = fconst(c3, -std::numeric_limits<double>::infinity());
        // q_i, loaded once per row on the vector path.
        SmallVector<Value> qc;
        for (int64_t ch = 0; ch < chunks; ++ch)
          qc.push_back(vector::LoadOp::create(
              c3, vt, q,
              ValueRange{bi, h, i, arith::ConstantIndexOp::create(c3, ch * kVL)}));
        // s_j = scale * q_i·k_j: independent products per chunk, one
        // horizontal reduction (vector path), or a scalar reduction.
        auto dotQK = [&](ImplicitLocOpBuilder &c4, Value j) -> Value {
          if (vec) {
            Value sum;
            for (int64_t ch = 0; ch < chunks; ++ch) {
              Value kc = vector::LoadOp::create(
                  c4, vt, k,
                  ValueRange{bi, kh, j, arith::ConstantIndexOp::create(c4, ch * kVL)});
              Value prod = arith::MulFOp::create(c4, qc[ch], kc);
              sum = sum ? Value(arith::AddFOp::create(c4, sum, prod)) : prod;
            }
            return vector::ReductionOp::create(c4, vector::CombiningKind::ADD, sum);
          }
          return loop(c4, zero, d, {fconst(c4, 0.0)},
                           [&](ImplicitLocOpBuilder &c5, Value dd, ValueRange acc) {
            Value qv = memref::LoadOp::create(c5, q, ValueRange{bi, h, i, dd});
            Value kv = memref::LoadOp::create(c5, k, ValueRange{bi, kh, j, dd});
            Value p = arith::MulFOp::create(c5, qv, kv);
            return SmallVector<Value>{arith::AddFOp::create(c5, acc[0], p)};
          }).getResult(0);
        };
        // Vector path: scores of VL keys at once from kT, as FMAs over d
        // (four independent accumulators), no horizontal reductions.
        Value jMain = zero, mInit = negInf;
        if (vec) {
          Value vl = arith::ConstantIndexOp::create(c3, kVL);
          jMain = arith::MulIOp::create(c3, arith::DivUIOp::create(c3, jEnd, vl), vl);
          SmallVector<Value> qs;
          for (int64_t dd = 0; dd < headDim; ++dd)
            qs.push_back(vector::BroadcastOp::create(
                c3, vt,
                memref::LoadOp::create(
                    c3, q, ValueRange{bi, h, i, arith::ConstantIndexOp::create(c3, dd)})));
          Value scaleVec = vector::BroadcastOp::create(c3, vt, scaleV);
          Value mv = loop(c3, zero, jMain, vl,
              ValueRange{vector::BroadcastOp::create(c3, vt, negInf)},
              [&](ImplicitLocOpBuilder &c4, Value j0, ValueRange a) {
                Value zv = vector::BroadcastOp::create(c4, vt, fconst(c4, 0.0));
                SmallVector<Value> acc(4, zv);
                for (int64_t dd = 0; dd < headDim; ++dd) {
                  Value kv = vector::LoadOp::create(c4, vt, kT,
                                                    ValueRange{kTIndex(c4, j0, zero, dd)});
                  acc[dd % 4] = vector::FMAOp::create(c4, qs[dd], kv, acc[dd % 4]);
                }
                Value sv = arith::MulFOp::create(
                    c4,
                    arith::AddFOp::create(c4, arith::AddFOp::create(c4, acc[0], acc[1]),
                                          arith::AddFOp::create(c4, acc[2], acc[3])),
                    scaleVec);
                vector::StoreOp::create(c4, sv, scratch, ValueRange{j0});
                return SmallVector<Value>{arith::MaximumFOp::create(c4, a[0], sv)};
              }).getResult(0);
          mInit = vector::ReductionOp::create(c3, vector::CombiningKind::MAXIMUMF, mv);
        }
        Value m = loop(c3, jMain, jEnd, {mInit},
                       [&](ImplicitLocOpBuilder &c4, Value j, ValueRange a) {
          Value s = arith::MulFOp::create(c4, dotQK(c4, j), scaleV);
          memref::StoreOp::create(c4, s, scratch, ValueRange{j});
          return SmallVector<Value>{arith::MaximumFOp::create(c4, a[0], s)};
        }).getResult(0);
        // p_j = exp(s_j - m), l = sum_j p_j: VL keys at a time on the vector
        // path (then the leftover keys one by one).
        Value lInit = fconst(c3, 0.0);
        if (vec) {
          Value mv = vector::BroadcastOp::create(c3, vt, m);
          Value sums = loop(c3, zero, jMain, arith::ConstantIndexOp::create(c3, kVL),
              ValueRange{vector::BroadcastOp::create(c3, vt, fconst(c3, 0.0))},
              [&](ImplicitLocOpBuilder &c4, Value j, ValueRange a) {
                Value sv = vector::LoadOp::create(c4, vt, scratch, ValueRange{j});
                Value pv = math::ExpOp::create(c4, arith::SubFOp::create(c4, sv, mv));
                vector::StoreOp::create(c4, pv, scratch, ValueRange{j});
                return SmallVector<Value>{arith::AddFOp::create(c4, a[0], pv)};
              }).getResult(0);
          lInit = vector::ReductionOp::create(c3, vector::CombiningKind::ADD, sums);
        }
        Value l = loop(c3, jMain, jEnd, {lInit},
                       [&](ImplicitLocOpBuilder &c4, Value j, ValueRange a) {
          Value s = memref::LoadOp::create(c4, scratch, ValueRange{j});
          Value p = math::ExpOp::create(c4, arith::SubFOp::create(c4, s, m));
          memref::StoreOp::create(c4, p, scratch, ValueRange{j});
          return SmallVector<Value>{arith::AddFOp::create(c4, a[0], p)};
        }).getResult(0);
        Value pos = arith::CmpFOp::create(c3, arith::CmpFPredicate::OGT, l,
                                          fconst(c3, 0.0));
        Value inv = arith::SelectOp::create(
            c3, pos, arith::DivFOp::create(c3, fconst(c3, 1.0), l), fconst(c3, 0.0));
        auto oIdx = [&](Value dd) {
          return bthd ? SmallVector<Value>{bi, i, h, dd}
                      : SmallVector<Value>{bi, h, i, dd};
        };
        if (vec) {
          // o_i = inv * sum_j p_j v_j with the row of o in registers.
          SmallVector<Value> init(chunks, vector::BroadcastOp::create(c3, vt, fconst(c3, 0.0)));
          scf::ForOp acc = loop(c3, zero, jEnd, init,
                                [&](ImplicitLocOpBuilder &c4, Value j, ValueRange a) {
            Value p = vector::BroadcastOp::create(
                c4, vt, memref::LoadOp::create(c4, scratch, ValueRange{j}));
            SmallVector<Value> next;
            for (int64_t ch = 0; ch < chunks; ++ch) {
              Value vc = vector::LoadOp::create(
                  c4, vt, v,
                  ValueRange{bi, kh, j, arith::ConstantIndexOp::create(c4, ch * kVL)});
              next.push_back(vector::FMAOp::create(c4, p, vc, a[ch]));
            }
            return next;
          });
          Value invV = vector::BroadcastOp::create(c3, vt, inv);
          for (int64_t ch = 0; ch < chunks; ++ch)
            vector::StoreOp::create(
                c3, arith::MulFOp::create(c3, acc.getResult(ch), invV), o,
                oIdx(arith::ConstantIndexOp::create(c3, ch * kVL)));
          return SmallVector<Value>{};
        }
        loop(c3, zero, d, {}, [&](ImplicitLocOpBuilder &c4, Value dd, ValueRange) {
          memref::StoreOp::create(c4, fconst(c4, 0.0), o, oIdx(dd));
          return SmallVector<Value>{};
        });
        loop(c3, zero, jEnd, {}, [&](ImplicitLocOpBuilder &c4, Value j, ValueRange) {
          Value p = arith::MulFOp::create(
              c4, memref::LoadOp::create(c4, scratch, ValueRange{j}), inv);
          loop(c4, zero, d, {}, [&](ImplicitLocOpBuilder &c5, Value dd, ValueRange) {
            Value vv = memref::LoadOp::create(c5, v, ValueRange{bi, kh, j, dd});
            Value ov = memref::LoadOp::create(c5, o, oIdx(dd));
            Value r = arith::AddFOp::create(c5, ov, arith::MulFOp::create(c5, p, vv));
            memref::StoreOp::create(c5, r, o, oIdx(dd));
            return SmallVector<Value>{};
          });
          return SmallVector<Value>{};
        });
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

