//===- LinearToLoops.cpp - attn.linear as a register-blocked GEMM ---------===//
//
// y[b, t, n] = bias[n] + sum_k x[b, t, k] * w[k, n]   (x: [B, T, K], w: [K, N])
//
// The main loop nest computes an MR x NR block of y in registers:
//   for b, for n0 (NR columns), for t0 (MR rows):
//     acc[MR][NR/VL] = bias                          (vector<VL x f32>)
//     for k: w_v = w[k, n0 + v*VL ...]; acc[i][v] += broadcast(x[b,t0+i,k]) * w_v
//     y[b, t0 + i, n0 + v*VL ...] = acc[i][v]
// with MR x NR/VL = 12 independent accumulators (FMA latency 4 x 2 ports
// needs >= 8). Leftover rows use MR = 1, leftover columns a scalar loop.
// VL = 16 matches AVX-512; LLVM splits the vectors on narrower targets.
//
//===----------------------------------------------------------------------===//
#include "LoopBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace {
constexpr int64_t kVL = 16; ///< vector lanes
constexpr int64_t kNV = 2;  ///< vectors per row of the block (NR = 32)
constexpr int64_t kMR = 6;  ///< rows per block

/// Emits the MR x NR block at rows [t0, t0 + mr), columns [n0, n0 + NR).
void block(ImplicitLocOpBuilder &c, Value x, Value w, Value y, Value b,
           Value t0, Value n0, int64_t mr, ArrayRef<Value> init, Value kEnd) {
  auto vt = VectorType::get({kVL}, c.getF32Type());
  Value zero = arith::ConstantIndexOp::create(c, 0);
  SmallVector<Value> rows, cols;
  for (int64_t i = 0; i < mr; ++i)
    rows.push_back(arith::AddIOp::create(c, t0, arith::ConstantIndexOp::create(c, i)));
  for (int64_t v = 0; v < kNV; ++v)
    cols.push_back(arith::AddIOp::create(c, n0, arith::ConstantIndexOp::create(c, v * kVL)));
  SmallVector<Value> accInit;
  for (int64_t i = 0; i < mr; ++i)
    accInit.append(init.begin(), init.end());
  scf::ForOp kLoop = attnc::loop(c, zero, kEnd, accInit,
      [&](ImplicitLocOpBuilder &ck, Value k, ValueRange acc) {
        SmallVector<Value> wv, next;
        for (int64_t v = 0; v < kNV; ++v)
          wv.push_back(vector::LoadOp::create(ck, vt, w, ValueRange{k, cols[v]}));
        for (int64_t i = 0; i < mr; ++i) {
          Value a = memref::LoadOp::create(ck, x, ValueRange{b, rows[i], k});
          Value ab = vector::BroadcastOp::create(ck, vt, a);
          for (int64_t v = 0; v < kNV; ++v)
            next.push_back(vector::FMAOp::create(ck, ab, wv[v], acc[i * kNV + v]));
        }
        return next;
      });
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t v = 0; v < kNV; ++v)
      vector::StoreOp::create(c, kLoop.getResult(i * kNV + v), y,
                              ValueRange{b, rows[i], cols[v]});
}
} // namespace

bool attnc::buildBlockedLinear(ImplicitLocOpBuilder &c, Value x, Value w,
                               Value bias, Value y) {
  auto xt = cast<MemRefType>(x.getType()), wt = cast<MemRefType>(w.getType()),
       yt = cast<MemRefType>(y.getType());
  if (xt.getRank() != 3 || yt.getRank() != 3 || !xt.getElementType().isF32() ||
      !wt.getElementType().isF32() || wt.isDynamicDim(0) || wt.isDynamicDim(1) ||
      !wt.getLayout().isIdentity() || !yt.getLayout().isIdentity() ||
      (bias && !cast<MemRefType>(bias.getType()).getLayout().isIdentity()))
    return false;
  int64_t kDim = wt.getDimSize(0), nDim = wt.getDimSize(1);
  int64_t nr = kNV * kVL, nMain = nDim - nDim % nr;
  auto vt = VectorType::get({kVL}, c.getF32Type());
  auto idx = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(c, v); };
  Value zero = idx(0), kEnd = idx(kDim);
  Value nb = memref::DimOp::create(c, x, 0), nt = memref::DimOp::create(c, x, 1);
  Value tMain = arith::MulIOp::create(c, arith::DivUIOp::create(c, nt, idx(kMR)), idx(kMR));
  Value fzero = arith::ConstantOp::create(c, c.getF32FloatAttr(0.0f));

  loop(c, zero, nb, {}, [&](ImplicitLocOpBuilder &c1, Value b, ValueRange) {
    // Full NR-column panels.
    loop(c1, zero, idx(nMain), idx(nr), {},
        [&](ImplicitLocOpBuilder &c2, Value n0, ValueRange) {
          SmallVector<Value> init;
          for (int64_t v = 0; v < kNV; ++v) {
            Value col = arith::AddIOp::create(c2, n0, idx(v * kVL));
            init.push_back(bias ? Value(vector::LoadOp::create(c2, vt, bias, ValueRange{col}))
                                : Value(vector::BroadcastOp::create(c2, vt, fzero)));
          }
          loop(c2, zero, tMain, idx(kMR), {},
              [&](ImplicitLocOpBuilder &c3, Value t0, ValueRange) {
                block(c3, x, w, y, b, t0, n0, kMR, init, kEnd);
                return SmallVector<Value>{};
              });
          loop(c2, tMain, nt, {}, [&](ImplicitLocOpBuilder &c3, Value t, ValueRange) {
            block(c3, x, w, y, b, t, n0, 1, init, kEnd);
            return SmallVector<Value>{};
          });
          return SmallVector<Value>{};
        });
    // Leftover columns, scalar.
    if (nMain < nDim)
      loop(c1, zero, nt, {}, [&](ImplicitLocOpBuilder &c2, Value t, ValueRange) {
        loop(c2, idx(nMain), idx(nDim), {}, [&](ImplicitLocOpBuilder &c3, Value n, ValueRange) {
          Value init = bias ? Value(memref::LoadOp::create(c3, bias, ValueRange{n})) : fzero;
          Value sum = loop(c3, zero, kEnd, {init},
              [&](ImplicitLocOpBuilder &c4, Value k, ValueRange acc) {
                Value a = memref::LoadOp::create(c4, x, ValueRange{b, t, k});
                Value wv = memref::LoadOp::create(c4, w, ValueRange{k, n});
                return SmallVector<Value>{arith::AddFOp::create(
                    c4, acc[0], arith::MulFOp::create(c4, a, wv))};
              }).getResult(0);
          memref::StoreOp::create(c3, sum, y, ValueRange{b, t, n});
          return SmallVector<Value>{};
        });
        return SmallVector<Value>{};
      });
    return SmallVector<Value>{};
  });
  return true;
}
