//===- PackedGemm.cpp - attn.linear as a GEMM over packed panels ----------===//
//
// y[b, t, n] = bias[n] + sum_k x[b, t, k] * W[k, n]
//
// NAME_pack stores W as panels of `panel` columns, wp[p][k][j] =
// W[k, p*panel + j] (zeros past the last column), so the micro-kernel reads
// each k-row of its block as `panel`*4 contiguous bytes; a panel slice of
// gemm_kc rows stays in L1 while the row blocks of a task stream past it.
//
//   task (b, row block rb, panel group pg):
//     for kc0 in K step KC:                          (cache block; one pass
//                                                     for a one-row task)
//       for p in panels of pg:
//         for r0 in rows of rb step MR:
//           for half (NR columns of the panel; one when NR = panel):
//             acc[MR][NR/VL] = kc0 == 0 ? bias : y[..]  (registers)
//             for k in kc0..kc0+KC: acc[i][v] += bcast(x[b, r0+i, k]) * wp[p, k, v*VL..]
//             y[..] = acc
//
// The halves are innermost so that a kernel narrower than the panel (AVX2:
// 16 of 32 columns, one 64-byte line of each 128-byte panel row) finds the
// row block's x in L1 for every half after the first, and the slice's
// lines are all in use at once (one half alone touches every other line,
// so half of L1's sets).
//
// On the vdpbf16ps path (bf16 pairs, NR = panel) the whole panels of a
// group go two at a time: MR/2 rows x 2 panels per kernel over the rows
// of whole MR-row blocks, so that each broadcast pair of A feeds 4 dot
// products instead of 2 (rowsOfPair; the odd panel and the rows left
// over take the MR x NR kernels' shapes, and every output sums the same
// products in the same order).
//
// On the AMX-BF16 path (x86-amx-bf16) the task's whole 32-row blocks of
// every whole panel go first, on tiles (amxBlock: 2 x 2 C tiles of 16 x 16
// float32 loaded from y, per 32 of K two A tiles of x's rows and the
// panel's two 16-column halves as B tiles, the panel's pair rows being
// AMX's pair-interleaved B layout), then the rows left over as above.
//
// A float32 x against bf16 pairs (W_O after the attention; a float32
// block with bf16 weights) is rounded to bf16 once per call, in a phase
// of its own, into a workspace copy that the vdpbf16ps kernels read as
// pairs (packedGemmStagesInput): every panel group's task rounded its
// rows again before, 12 times over for GPT-2 small's W_O. Other code
// paths keep float32 x and run that phase with no tasks.
//
// The float32 kernels with an f16 x (or a bf16 one off the vdpbf16ps
// path) widen the task's A block to float32 once per K block into a stack
// buffer and broadcast from it (widenA): a scalar load and conversion per
// broadcast made GPT-2 small's f16 block 1.36x (AVX-512) and 1.9x (AVX2)
// the float32 one's time at T = 512; now within 6% of it, bit for bit the
// same results.
//
// Row tails (fewer than MR rows left) dispatch to a kernel of exactly that
// many rows up to max(MR/2, 5), else to two of about half as many
// (tailRows); the last, partial panel uses masked loads and stores, so
// nothing outside y is read or written whatever T and n are.
//
//===----------------------------------------------------------------------===//
#include "CpuBuilders.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

using namespace mlir;

namespace {

struct Gemm {
  ImplicitLocOpBuilder &b;
  attnc::attn::CpuTargetAttr t;
  Value x, wp, bias, y, rowLens;
  int64_t n, kDim, panel, vl, nr, mr, kc;
  VectorType vt;
  /// bf16 panels hold (k, k+1) pairs per column ([P][ceil(K/2)][panel][2]):
  /// `dot` multiplies them with vdpbf16ps (AVX512-BF16), else they are
  /// widened in registers (lo = bits << 16, hi = bits & 0xffff0000).
  bool pairs = false, dot = false;
  /// dot: A (x) read as bf16 pairs straight from x (bf16, even K), or
  /// from `scratch` (a row block's K block rounded to bf16 by the task).
  bool directPairs = false;
  /// dot on the AMX-BF16 path: 32-row blocks of whole panels on tiles
  /// (amxBlock); the rows left over and a partial last panel as on the
  /// AVX512-BF16 path.
  bool amx = false;

  VectorType ivt() { return VectorType::get({vl}, b.getI32Type()); }
  VectorType pairVt() { return VectorType::get({2 * vl}, b.getBF16Type()); }

  /// Column vector v of the panel half at k-pair kp: W[2kp, cols] and
  /// W[2kp+1, cols] as f32 (pairs, no dot).
  std::pair<Value, Value> widenPair(ImplicitLocOpBuilder &c, Value p, Value kp, int64_t col) {
    Value raw = vector::LoadOp::create(c, pairVt(), wp, ValueRange{p, kp, idx(c, 2 * col)});
    Value bits = vector::BitCastOp::create(c, ivt(), raw);
    Value sh = arith::ConstantOp::create(c, DenseElementsAttr::get(ivt(), c.getI32IntegerAttr(16)));
    Value hiMask = arith::ConstantOp::create(
        c, DenseElementsAttr::get(ivt(), c.getI32IntegerAttr(int32_t(0xffff0000u))));
    Value lo = arith::ShLIOp::create(c, bits, sh);
    Value hi = arith::AndIOp::create(c, bits, hiMask);
    return {vector::BitCastOp::create(c, vt, lo), vector::BitCastOp::create(c, vt, hi)};
  }

  Value idx(ImplicitLocOpBuilder &c, int64_t v) {
    return arith::ConstantIndexOp::create(c, v);
  }
  Value add(ImplicitLocOpBuilder &c, Value a, int64_t v) {
    return v == 0 ? a : arith::AddIOp::create(c, a, idx(c, v)).getResult();
  }
  /// lo + the largest multiple of m that fits in [lo, hi): where the whole
  /// m-sized blocks from lo end.
  Value wholeEnd(ImplicitLocOpBuilder &c, Value lo, Value hi, int64_t m) {
    return arith::AddIOp::create(
        c, lo, arith::MulIOp::create(
                   c, arith::DivUIOp::create(c, arith::SubIOp::create(c, hi, lo), idx(c, m)),
                   idx(c, m)));
  }
  Value mask(ImplicitLocOpBuilder &c, int64_t valid) {
    return vector::CreateMaskOp::create(
        c, VectorType::get({vl}, c.getI1Type()), ValueRange{idx(c, valid)});
  }

  /// The bf16 pair (A[row, 2kp], A[row, 2kp+1]) broadcast to every lane
  /// (dot): from x directly, or from the task's scratch [rows][kc] (row
  /// index relative to the scratch's first row, kp relative to its K block).
  Value pairBroadcast(ImplicitLocOpBuilder &c, Value src, ValueRange at) {
    return attnc::bf16PairBroadcast(c, src, at, vl);
  }

  Value scratch; ///< dot without directPairs: this task's A block in bf16
  Value scratchRow0, scratchK0;

  /// The float32 kernels with a bf16 or f16 x: the task's A block widened
  /// to float32 once per K block into `wide`, from which each row's value
  /// is broadcast as a float32 x's would be (a scalar load and conversion
  /// per broadcast cost the f16 block a third more time than the float32
  /// one). `wide` is flat: row r of the block at r * wideLd (wideLd: kc
  /// rounded up to whole vectors), sized for gemm_mc rows of a K block or for
  /// one row of all K (the one-row task's single pass).
  bool widenA = false;
  Value wide, wideRow0, wideK0;
  int64_t wideLd = 0;

  /// A[row, k] as float32 (the float32 kernels' broadcast operand).
  Value loadA(ImplicitLocOpBuilder &c, Value bi, Value row, Value k) {
    if (widenA)
      return memref::LoadOp::create(c, wide, ValueRange{wideAt(c, arith::SubIOp::create(c, row, wideRow0),
                                                               arith::SubIOp::create(c, k, wideK0))});
    return attnc::loadF32(c, x, ValueRange{bi, row, k});
  }
  Value wideAt(ImplicitLocOpBuilder &c, Value row, Value kk) {
    return arith::AddIOp::create(c, arith::MulIOp::create(c, row, idx(c, wideLd)), kk);
  }

  /// `rows` x (NR columns from col) block at rows r0.., k in [k0, k1).
  /// `valid[v]`: columns of vector v inside y (vl = full, 0 = none).
  /// With `p2` (dot, NR = panel): the whole panels p and p2 side by side,
  /// 2 NR columns (col, then p2's), `valid` covering both.
  void block(ImplicitLocOpBuilder &c, Value bi, Value r0, int64_t rows,
             Value p, int64_t half, Value col, ArrayRef<int64_t> valid,
             Value k0, Value k1, Value first, Value p2 = {}) {
    const int64_t perPanel = nr / vl;
    int64_t nv = p2 ? 2 * perPanel : perPanel;
    Value col2 = p2 ? arith::MulIOp::create(c, p2, idx(c, panel)).getResult() : Value();
    // Column of vector v's first lane, and its panel and offset in it.
    auto colOf = [&](ImplicitLocOpBuilder &cc, int64_t v) -> Value {
      return v < perPanel ? add(cc, col, v * vl) : add(cc, col2, (v - perPanel) * vl);
    };
    auto panelOf = [&](int64_t v) { return v < perPanel ? p : p2; };
    auto laneOf = [&](int64_t v) {
      return v < perPanel ? half * nr + v * vl : (v - perPanel) * vl;
    };
    auto store = [&](ImplicitLocOpBuilder &cc, Value val, int64_t i, int64_t v) {
      SmallVector<Value> at{bi, add(cc, r0, i), colOf(cc, v)};
      if (valid[v] == vl)
        vector::StoreOp::create(cc, val, y, at);
      else if (valid[v] > 0)
        vector::MaskedStoreOp::create(cc, y, at, mask(cc, valid[v]), val);
    };
    // Accumulators start from the bias (first K block) or from y.
    SmallVector<Type> types(rows * nv, vt);
    auto init = scf::IfOp::create(c, types, first, /*withElse=*/true);
    {
      ImplicitLocOpBuilder tb(c.getLoc(), init.getThenBodyBuilder());
      SmallVector<Value> vals;
      Value zero = arith::ConstantOp::create(
          tb, DenseElementsAttr::get(vt, tb.getF32FloatAttr(0.0f)));
      for (int64_t v = 0; v < nv; ++v) {
        Value bv = bias ? attnc::loadVecF32(tb, vt, bias, ValueRange{colOf(tb, v)}) : zero;
        for (int64_t i = 0; i < rows; ++i)
          vals.push_back(bv);
      }
      // vals is [v][i]; reorder to [i][v].
      SmallVector<Value> ordered;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t v = 0; v < nv; ++v)
          ordered.push_back(vals[v * rows + i]);
      scf::YieldOp::create(tb, ordered);
      ImplicitLocOpBuilder eb(c.getLoc(), init.getElseBodyBuilder());
      SmallVector<Value> loaded;
      Value pass = arith::ConstantOp::create(
          eb, DenseElementsAttr::get(vt, eb.getF32FloatAttr(0.0f)));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t v = 0; v < nv; ++v) {
          SmallVector<Value> at{bi, add(eb, r0, i), colOf(eb, v)};
          if (valid[v] == vl)
            loaded.push_back(vector::LoadOp::create(eb, vt, y, at));
          else if (valid[v] > 0)
            loaded.push_back(vector::MaskedLoadOp::create(
                eb, vt, y, at, mask(eb, valid[v]), pass));
          else
            loaded.push_back(pass);
        }
      scf::YieldOp::create(eb, loaded);
    }
    // The K loop over [lo, hi) with `step` as its body. A block of few
    // accumulators (rows * nv < 8: the one-row GEMV of a decode step) would
    // wait on each FMA's latency; it keeps `ways` independent copies
    // instead (copy w takes k = lo + w, lo + w + ways, ...), summed in a
    // fixed order at the end, so the result does not depend on threads.
    using StepFn = llvm::function_ref<SmallVector<Value>(ImplicitLocOpBuilder &, Value, ValueRange)>;
    auto kLoopOf = [&](Value lo, Value hi, StepFn step) -> SmallVector<Value> {
      const int64_t nacc = rows * nv;
      const int64_t ways = nacc >= 8 ? 1 : std::min<int64_t>(4, (8 + nacc - 1) / nacc);
      if (ways == 1)
        return attnc::loop(c, lo, hi, init.getResults(),
                           [&](ImplicitLocOpBuilder &ck, Value k, ValueRange acc) {
                             return step(ck, k, acc);
                           })
            .getResults();
      SmallVector<Value> state(init.getResults());
      Value zero = arith::ConstantOp::create(c, DenseElementsAttr::get(vt, c.getF32FloatAttr(0.0f)));
      for (int64_t w = 1; w < ways; ++w)
        state.append(nacc, zero);
      Value n = arith::SubIOp::create(c, hi, lo);
      Value mid = arith::AddIOp::create(
          c, lo, arith::MulIOp::create(c, arith::DivUIOp::create(c, n, idx(c, ways)), idx(c, ways)));
      scf::ForOp main = attnc::loop(c, lo, mid, idx(c, ways), state,
          [&](ImplicitLocOpBuilder &ck, Value k, ValueRange acc) {
            SmallVector<Value> next;
            for (int64_t w = 0; w < ways; ++w) {
              SmallVector<Value> part = step(ck, add(ck, k, w), acc.slice(w * nacc, nacc));
              next.append(part.begin(), part.end());
            }
            return next;
          });
      scf::ForOp rest = attnc::loop(c, mid, hi, main.getResults().take_front(nacc),
          [&](ImplicitLocOpBuilder &ck, Value k, ValueRange acc) { return step(ck, k, acc); });
      SmallVector<Value> sum(rest.getResults());
      for (int64_t w = 1; w < ways; ++w)
        for (int64_t a = 0; a < nacc; ++a)
          sum[a] = arith::AddFOp::create(c, sum[a], main.getResult(w * nacc + a));
      return sum;
    };
    SmallVector<Value> kResults;
    if (pairs) {
      // k-pairs kp in [k0/2, ceil(k1/2)); K blocks start even (gemm_kc is).
      Value kp0 = arith::DivUIOp::create(c, k0, idx(c, 2));
      Value kp1 = arith::DivUIOp::create(c, add(c, k1, 1), idx(c, 2));
      kResults = kLoopOf(
          kp0, kp1,
          [&](ImplicitLocOpBuilder &ck, Value kp, ValueRange acc) {
            SmallVector<Value> next(acc.begin(), acc.end());
            if (dot) {
              SmallVector<Value> wv;
              for (int64_t v = 0; v < nv; ++v)
                wv.push_back(vector::LoadOp::create(
                    ck, pairVt(), wp, ValueRange{panelOf(v), kp, idx(ck, 2 * laneOf(v))}));
              for (int64_t i = 0; i < rows; ++i) {
                Value a = directPairs
                              ? pairBroadcast(ck, x, ValueRange{bi, add(ck, r0, i),
                                                                arith::MulIOp::create(ck, kp, idx(ck, 2))})
                              : pairBroadcast(ck, scratch,
                                              ValueRange{add(ck, arith::SubIOp::create(ck, r0, scratchRow0), i),
                                                         arith::MulIOp::create(
                                                             ck, arith::SubIOp::create(ck, kp, scratchK0),
                                                             idx(ck, 2))});
                for (int64_t v = 0; v < nv; ++v)
                  next[i * nv + v] = x86vector::DotBF16Op::create(ck, vt, acc[i * nv + v], a, wv[v]);
              }
              return next;
            }
            SmallVector<std::pair<Value, Value>> wv;
            for (int64_t v = 0; v < nv; ++v)
              wv.push_back(widenPair(ck, p, kp, half * nr + v * vl));
            Value k = arith::MulIOp::create(ck, kp, idx(ck, 2));
            Value k1i = add(ck, k, 1);
            // Odd K: the last pair's second element is past the row.
            Value inRow, kHi = k1i;
            if (kDim % 2) {
              inRow = arith::CmpIOp::create(ck, arith::CmpIPredicate::ult, k1i, idx(ck, kDim));
              kHi = arith::MinUIOp::create(ck, k1i, idx(ck, kDim - 1));
            }
            for (int64_t i = 0; i < rows; ++i) {
              Value a0 = loadA(ck, bi, add(ck, r0, i), k);
              Value a1 = loadA(ck, bi, add(ck, r0, i), kHi);
              if (inRow)
                a1 = arith::SelectOp::create(ck, inRow, a1,
                                             arith::ConstantOp::create(ck, ck.getF32FloatAttr(0.0f)));
              Value b0 = vector::BroadcastOp::create(ck, vt, a0);
              Value b1 = vector::BroadcastOp::create(ck, vt, a1);
              for (int64_t v = 0; v < nv; ++v)
                next[i * nv + v] = vector::FMAOp::create(
                    ck, b1, wv[v].second,
                    vector::FMAOp::create(ck, b0, wv[v].first, acc[i * nv + v]));
            }
            return next;
          });
    } else {
      kResults = kLoopOf(
          k0, k1,
          [&](ImplicitLocOpBuilder &ck, Value k, ValueRange acc) {
            SmallVector<Value> wv, next;
            for (int64_t v = 0; v < nv; ++v)
              wv.push_back(attnc::loadVecF32(ck, vt, wp,
                                             ValueRange{p, k, idx(ck, half * nr + v * vl)}));
            for (int64_t i = 0; i < rows; ++i) {
              Value a = loadA(ck, bi, add(ck, r0, i), k);
              Value ab = vector::BroadcastOp::create(ck, vt, a);
              for (int64_t v = 0; v < nv; ++v)
                next.push_back(vector::FMAOp::create(ck, ab, wv[v], acc[i * nv + v]));
            }
            return next;
          });
    }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t v = 0; v < nv; ++v)
        store(c, kResults[i * nv + v], i, v);
  }

  /// The stride of dimension `dim` of memref `m`, in elements (static where
  /// the type has it).
  Value strideOf(ImplicitLocOpBuilder &c, Value m, unsigned dim) {
    auto mt = cast<MemRefType>(m.getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (succeeded(mt.getStridesAndOffset(strides, offset)) &&
        !ShapedType::isDynamic(strides[dim]))
      return idx(c, strides[dim]);
    auto md = memref::ExtractStridedMetadataOp::create(c, m);
    return md.getStrides()[dim];
  }

  /// AMX-BF16: rows [r, r + 32) by the 32 columns of whole panel p, over
  /// k in [k0, k1), on tiles: C[i][j] (16 x 16 float32, rows r + 16i,
  /// columns 16j of the panel) += A[i] (16 rows x 32 bf16 of x, k pairs in
  /// order) x B[j] (16 k-pair rows of the panel, 64 bytes each: the
  /// panel's pairs layout [ceil(K/2)][2 x 32] is the tile's pair-interleaved
  /// B, read with a 128-byte stride). 8 tiles: 2 A + 2 B + 4 C. The C
  /// tiles are loaded from y and stored back (y starts from the bias, or
  /// zero, at the first K block); a K tail shorter than a tile's 32 goes
  /// through the vdpbf16ps kernels onto y.
  void amxBlock(ImplicitLocOpBuilder &c, Value bi, Value r, Value p, Value k0, Value k1,
                Value first) {
    auto bf16Tile = amx::TileType::get({16, 32}, c.getBF16Type());
    auto f32Tile = amx::TileType::get({16, 16}, c.getF32Type());
    Value col = arith::MulIOp::create(c, p, idx(c, panel));
    // y's block starts from the bias (or zero) at the first K block.
    auto init = scf::IfOp::create(c, first, /*withElse=*/false);
    {
      ImplicitLocOpBuilder tb(c.getLoc(), init.getThenBodyBuilder());
      Value zero = arith::ConstantOp::create(tb, DenseElementsAttr::get(vt, tb.getF32FloatAttr(0.0f)));
      for (int64_t v = 0; v < panel / vl; ++v) {
        Value cv = add(tb, col, v * vl);
        Value bv = bias ? attnc::loadVecF32(tb, vt, bias, ValueRange{cv}) : zero;
        for (int64_t i = 0; i < 32; ++i)
          vector::StoreOp::create(tb, bv, y, ValueRange{bi, add(tb, r, i), cv});
      }
    }
    Value kT = wholeEnd(c, k0, k1, 32);
    // The tiles, where the K block has a whole tile's 32 (a K, or a last K
    // block, shorter than that is all tail).
    auto onTiles = scf::IfOp::create(
        c, arith::CmpIOp::create(c, arith::CmpIPredicate::ugt, kT, k0), /*withElse=*/false);
    {
      ImplicitLocOpBuilder tc(c.getLoc(), onTiles.getThenBodyBuilder());
      Value yStride = strideOf(tc, y, 1);
      SmallVector<Value> acc;
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j)
          acc.push_back(amx::TileLoadOp::create(
              tc, f32Tile, y, ValueRange{bi, add(tc, r, 16 * i), add(tc, col, 16 * j)}, yStride));
      Value aStride = directPairs ? strideOf(tc, x, 1) : strideOf(tc, scratch, 0);
      Value bStride = idx(tc, 2 * panel);
      auto kLoop = attnc::loop(tc, k0, kT, idx(tc, 32), acc,
          [&](ImplicitLocOpBuilder &ck, Value k, ValueRange cs) {
            SmallVector<Value> a, bt;
            for (int64_t i = 0; i < 2; ++i) {
              Value row = add(ck, r, 16 * i);
              a.push_back(directPairs
                              ? amx::TileLoadOp::create(ck, bf16Tile, x, ValueRange{bi, row, k}, aStride)
                                    .getResult()
                              : amx::TileLoadOp::create(
                                    ck, bf16Tile, scratch,
                                    ValueRange{arith::SubIOp::create(ck, row, scratchRow0),
                                               arith::SubIOp::create(ck, k, k0)},
                                    aStride)
                                    .getResult());
            }
            Value kp = arith::DivUIOp::create(ck, k, idx(ck, 2));
            for (int64_t j = 0; j < 2; ++j)
              bt.push_back(amx::TileLoadOp::create(ck, bf16Tile, wp,
                                                   ValueRange{p, kp, idx(ck, 32 * j)}, bStride));
            SmallVector<Value> next;
            for (int64_t i = 0; i < 2; ++i)
              for (int64_t j = 0; j < 2; ++j)
                next.push_back(amx::TileMulFOp::create(ck, f32Tile, a[i], bt[j], cs[2 * i + j]));
            return next;
          });
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j)
          amx::TileStoreOp::create(tc, y, ValueRange{bi, add(tc, r, 16 * i), add(tc, col, 16 * j)},
                                   kLoop.getResult(2 * i + j), yStride);
    }
    // The K tail (k1 - kT < 32), onto y.
    auto tail = scf::IfOp::create(
        c, arith::CmpIOp::create(c, arith::CmpIPredicate::ult, kT, k1), /*withElse=*/false);
    ImplicitLocOpBuilder tb(c.getLoc(), tail.getThenBodyBuilder());
    SmallVector<Half> whole{{0, SmallVector<int64_t>(nr / vl, vl)}};
    rowsOf(tb, bi, r, add(tb, r, 32), p, whole, kT, k1,
           arith::ConstantIntOp::create(tb, 0, 1));
  }

  /// The NR-column part of a panel that one kernel call computes.
  struct Half {
    int64_t half;               // columns half*NR.. of the panel
    SmallVector<int64_t> valid; // per vector: columns inside y (VL = all)
  };

  /// Rows [r0, r1) in whole MR-row blocks, `step` rows per `whole` call
  /// (MR, or MR/2 for the pair kernels); the rows left over are tailRows'.
  void wholeRows(ImplicitLocOpBuilder &c, Value r0, Value r1, int64_t step,
                 llvm::function_ref<void(ImplicitLocOpBuilder &, Value)> whole) {
    attnc::loop(c, r0, wholeEnd(c, r0, r1, mr), idx(c, step), {},
                [&](ImplicitLocOpBuilder &cr, Value r, ValueRange) {
                  whole(cr, r);
                  return SmallVector<Value>{};
                });
  }

  /// The rows of [r0, r1) after its whole MR-row blocks (fewer than MR)
  /// through `tail`: at their exact count up to H = max(MR/2, 5) rows,
  /// else in two kernels of about half each (11 rows on AVX-512: 6, then
  /// 5; 7: 4, 3), so that neither is a one- or two-row kernel that reads
  /// the panel again for little arithmetic. Kernels of every count below
  /// MR were 1 + 2 + ... + 11 = 66 rows of unrolled code per GEMM on
  /// AVX-512; the two switches here are 21 + 15. A row's products are
  /// summed by one kernel whatever the threads.
  void tailRows(ImplicitLocOpBuilder &c, Value r0, Value r1,
                llvm::function_ref<void(ImplicitLocOpBuilder &, Value, int64_t)> tail) {
    if (mr == 1)
      return;
    Value full = wholeEnd(c, r0, r1, mr);
    Value left = arith::SubIOp::create(c, r1, full);
    const int64_t h = std::min(mr - 1, std::max<int64_t>(mr / 2, 5));
    if (mr - 1 == h) { // every count at its own kernel
      attnc::switchOnCount(c, left, mr, [&](ImplicitLocOpBuilder &cb, int64_t rows) {
        tail(cb, full, rows);
      });
      return;
    }
    // second = left > H ? left / 2 : 0 (at most (MR - 1) / 2 rows), first
    // the rest (at most H).
    Value big = arith::CmpIOp::create(c, arith::CmpIPredicate::ugt, left, idx(c, h));
    Value second = arith::SelectOp::create(
        c, big, arith::DivUIOp::create(c, left, idx(c, 2)), idx(c, 0));
    Value first = arith::SubIOp::create(c, left, second);
    attnc::switchOnCount(c, first, h + 1, [&](ImplicitLocOpBuilder &cb, int64_t rows) {
      tail(cb, full, rows);
    });
    Value at = arith::AddIOp::create(c, full, first);
    attnc::switchOnCount(c, second, (mr - 1) / 2 + 1, [&](ImplicitLocOpBuilder &cb, int64_t rows) {
      tail(cb, at, rows);
    });
  }

  /// Which rows of [r0, r1) rowsOf computes: all, the whole MR-row blocks
  /// or the rows left over after them.
  enum class Rows { All, Whole, Tail };

  /// Rows [r0, r1) of panel p (`which` of them), each block through the
  /// given halves in turn.
  void rowsOf(ImplicitLocOpBuilder &c, Value bi, Value r0, Value r1, Value p,
              ArrayRef<Half> halves, Value k0, Value k1, Value first,
              Rows which = Rows::All) {
    auto blocks = [&](ImplicitLocOpBuilder &cb, Value r, int64_t rows) {
      Value pcol = arith::MulIOp::create(cb, p, idx(cb, panel));
      for (const Half &h : halves)
        block(cb, bi, r, rows, p, h.half, add(cb, pcol, h.half * nr), h.valid,
              k0, k1, first);
    };
    if (which != Rows::Tail)
      wholeRows(c, r0, r1, mr, [&](ImplicitLocOpBuilder &cr, Value r) { blocks(cr, r, mr); });
    if (which != Rows::Whole)
      tailRows(c, r0, r1, blocks);
  }

  /// dot, NR = panel: the whole panels p and p + 1 at once, MR/2 rows by
  /// 2 NR columns per kernel (half the A broadcasts per vdpbf16ps of the
  /// MR x NR kernel) over the rows that rowsOf gives MR-row kernels. The
  /// rows left over (fewer than MR) are the caller's, through rowsOf's
  /// one-panel kernels (one loop over the task's whole panels: the tail
  /// kernels' code once per GEMM). So each row's kernel sums its products
  /// in the same order as rowsOf's (a kernel of few accumulators splits
  /// its K loop: kLoopOf).
  void rowsOfPair(ImplicitLocOpBuilder &c, Value bi, Value r0, Value r1, Value p,
                  Value k0, Value k1, Value first) {
    Value p2 = add(c, p, 1);
    SmallVector<int64_t> both(2 * nr / vl, vl);
    wholeRows(c, r0, r1, mr / 2, [&](ImplicitLocOpBuilder &cr, Value r) {
      block(cr, bi, r, mr / 2, p, 0, arith::MulIOp::create(cr, p, idx(cr, panel)), both,
            k0, k1, first, p2);
    });
  }

  void build() {
    int64_t numPanels = (n + panel - 1) / panel;
    int64_t fullPanels = n / panel;
    int64_t mc = t.getGemmMc();
    // Panels per task: a group's K x panel slices fill at most half of L2,
    // and there are at least 8 groups where N allows (so a few threads can
    // share even a short GEMM evenly; tasks are taken dynamically).
    int64_t panelBytes =
        kDim * panel * (cast<MemRefType>(wp.getType()).getElementTypeBitWidth() / 8);
    int64_t group = std::max<int64_t>(1, (t.getL2Bytes() / 2) / panelBytes);
    group = std::min({group, numPanels, (numPanels + 7) / 8});
    // The vdpbf16ps path's panels go in pairs (rowsOfPair): an even group
    // leaves no panel to the narrower kernel (GPT-2 small's W_O: 3 -> 2).
    const bool pairedPanels = dot && nr == panel;
    if (pairedPanels && group > 2)
      group &= ~int64_t(1);
    // An even number of groups where a group of at least half the size
    // gives one: a one-row GEMM (a decode step's) has one task per group,
    // and two threads split an odd count unevenly (GPT-2 small's bf16 QKV:
    // 9 groups of 8 panels -> 12 of 6). Paired panels keep an even group
    // of at least 2 (one panel per group would leave them all to the
    // narrower kernel).
    auto groupsOf = [&](int64_t g) { return (numPanels + g - 1) / g; };
    const int64_t g0 = group;
    const int64_t least =
        std::max<int64_t>(pairedPanels ? std::min<int64_t>(2, g0) : 1, g0 / 2);
    const int64_t step = pairedPanels && g0 % 2 == 0 ? 2 : 1;
    for (int64_t g = g0; g >= least && groupsOf(group) % 2; g -= step)
      if (groupsOf(g) % 2 == 0)
        group = g;
    int64_t groups = groupsOf(group);

    Value nb = memref::DimOp::create(b, x, 0), nt = memref::DimOp::create(b, x, 1);
    Value rowBlocks = arith::DivUIOp::create(
        b, arith::AddIOp::create(b, nt, idx(b, mc - 1)), idx(b, mc));
    Value perBatch = arith::MulIOp::create(b, rowBlocks, idx(b, groups));
    Value tasks = arith::MulIOp::create(b, nb, perBatch);
    attnc::taskLoop(b, tasks, [&](ImplicitLocOpBuilder &c, Value task) {
      Value bi = arith::DivUIOp::create(c, task, perBatch);
      Value rest = arith::RemUIOp::create(c, task, perBatch);
      Value pg = arith::DivUIOp::create(c, rest, rowBlocks);
      Value rb = arith::RemUIOp::create(c, rest, rowBlocks);
      Value r0 = arith::MulIOp::create(c, rb, idx(c, mc));
      Value r1 = arith::MinUIOp::create(c, arith::AddIOp::create(c, r0, idx(c, mc)), nt);
      // Rows past the sequence's valid length are skipped (a block wholly
      // past it does nothing).
      if (rowLens)
        r1 = arith::MaxSIOp::create(
            c, r0, arith::MinSIOp::create(c, r1, attnc::validLength(c, rowLens, bi, nt)));
      Value p0 = arith::MulIOp::create(c, pg, idx(c, group));
      Value p1 = arith::MinUIOp::create(c, arith::AddIOp::create(c, p0, idx(c, group)),
                                        idx(c, numPanels));
      Value pFullEnd = arith::MinUIOp::create(c, p1, idx(c, fullPanels));
      // A task of one row (a decode step's GEMV) reads each panel once
      // from top to bottom: K blocks keep a panel slice in L1 for the rows
      // of a block, and with one row there is nothing to keep, while each
      // block restarts the panels' streams (GPT-2 small's bf16 QKV GEMV
      // 45.0 -> 39.0 us, 79 -> 91 GB/s from L3). Not where the task rounds
      // its A block to bf16 into a buffer of K-block size, nor where a
      // kernel covers half a panel row (AVX2: the second half's lines come
      // from L1 after a K block, from L2 after all of K: GPT-2's float32
      // QKV GEMV 123 -> 150 us).
      Value kStep = idx(c, kc);
      if (!(dot && !directPairs) && nr == panel && kc < kDim)
        kStep = arith::SelectOp::create(
            c, arith::CmpIOp::create(c, arith::CmpIPredicate::eq, arith::SubIOp::create(c, r1, r0),
                                     idx(c, 1)),
            idx(c, kDim), kStep);
      attnc::loop(c, idx(c, 0), idx(c, kDim), kStep, {},
          [&](ImplicitLocOpBuilder &ck, Value k0, ValueRange) {
            Value k1 = arith::MinUIOp::create(ck, arith::AddIOp::create(ck, k0, kStep),
                                              idx(ck, kDim));
            Value first = arith::CmpIOp::create(ck, arith::CmpIPredicate::eq, k0, idx(ck, 0));
            if (dot && !directPairs) {
              // This task's rows of A in [k0, k1), rounded to bf16 once
              // (zero past k1) for every panel of the group.
              scratch = memref::AllocaOp::create(
                  ck, MemRefType::get({mc, (kc + vl - 1) / vl * vl}, ck.getBF16Type()));
              scratchRow0 = r0;
              scratchK0 = arith::DivUIOp::create(ck, k0, idx(ck, 2));
              Value kLen = arith::SubIOp::create(ck, k1, k0);
              attnc::loop(ck, r0, r1, {}, [&](ImplicitLocOpBuilder &cr, Value r, ValueRange) {
                Value row = arith::SubIOp::create(cr, r, r0);
                attnc::loop(cr, idx(cr, 0), kLen, idx(cr, vl), {},
                    [&](ImplicitLocOpBuilder &cc, Value kk, ValueRange) {
                      Value m = vector::CreateMaskOp::create(
                          cc, VectorType::get({vl}, cc.getI1Type()),
                          ValueRange{arith::SubIOp::create(cc, kLen, kk)});
                      Value v = attnc::maskedLoadVecF32(
                          cc, vt, x, ValueRange{bi, r, arith::AddIOp::create(cc, k0, kk)}, m);
                      vector::StoreOp::create(cc, attnc::roundToBf16(cc, v), scratch,
                                              ValueRange{row, kk});
                      return SmallVector<Value>{};
                    });
                return SmallVector<Value>{};
              });
            }
            if (widenA) {
              // This task's rows of A in [k0, k1) as float32, once for
              // every panel of the group.
              wideLd = (kc + vl - 1) / vl * vl;
              wide = memref::AllocaOp::create(
                  ck, MemRefType::get({std::max(mc * wideLd, kDim)}, ck.getF32Type()));
              wideRow0 = r0;
              wideK0 = k0;
              // Whole vectors, then the K tail element by element (no
              // masked bf16 load: without AVX512-BF16, LLVM would promote
              // it through float and back, a libcall).
              Value kLen = arith::SubIOp::create(ck, k1, k0);
              Value whole = arith::MulIOp::create(
                  ck, arith::DivUIOp::create(ck, kLen, idx(ck, vl)), idx(ck, vl));
              attnc::loop(ck, r0, r1, {}, [&](ImplicitLocOpBuilder &cr, Value r, ValueRange) {
                Value row = arith::SubIOp::create(cr, r, r0);
                attnc::loop(cr, idx(cr, 0), whole, idx(cr, vl), {},
                    [&](ImplicitLocOpBuilder &cc, Value kk, ValueRange) {
                      Value v = attnc::loadVecF32(
                          cc, vt, x, ValueRange{bi, r, arith::AddIOp::create(cc, k0, kk)});
                      vector::StoreOp::create(cc, v, wide, ValueRange{wideAt(cc, row, kk)});
                      return SmallVector<Value>{};
                    });
                attnc::loop(cr, whole, kLen, {},
                    [&](ImplicitLocOpBuilder &cc, Value kk, ValueRange) {
                      Value v = attnc::loadF32(
                          cc, x, ValueRange{bi, r, arith::AddIOp::create(cc, k0, kk)});
                      memref::StoreOp::create(cc, v, wide, ValueRange{wideAt(cc, row, kk)});
                      return SmallVector<Value>{};
                    });
                return SmallVector<Value>{};
              });
            }
            SmallVector<Half> wholeHalves;
            for (int64_t half = 0; half < panel / nr; ++half)
              wholeHalves.push_back({half, SmallVector<int64_t>(nr / vl, vl)});
            // AMX: the task's whole 32-row blocks of every whole panel on
            // tiles; the rows after them as below.
            Value rRest = r0;
            if (amx) {
              rRest = wholeEnd(ck, r0, r1, 32);
              attnc::loop(ck, p0, pFullEnd, {}, [&](ImplicitLocOpBuilder &cp, Value p, ValueRange) {
                attnc::loop(cp, r0, rRest, idx(cp, 32), {},
                    [&](ImplicitLocOpBuilder &cr, Value r, ValueRange) {
                      amxBlock(cr, bi, r, p, k0, k1, first);
                      return SmallVector<Value>{};
                    });
                return SmallVector<Value>{};
              });
            }
            // Whole panels: in pairs on the vdpbf16ps path (rowsOfPair; the
            // group's odd one out alone), else one by one.
            Value singleFrom = p0;
            const bool pairs = dot && nr == panel && mr >= 2 && mr % 2 == 0;
            if (pairs) {
              singleFrom = arith::AddIOp::create(
                  ck, p0, arith::MulIOp::create(
                              ck, arith::DivUIOp::create(
                                      ck, arith::SubIOp::create(ck, pFullEnd, p0), idx(ck, 2)),
                              idx(ck, 2)));
              attnc::loop(ck, p0, singleFrom, idx(ck, 2), {},
                  [&](ImplicitLocOpBuilder &cp, Value p, ValueRange) {
                    rowsOfPair(cp, bi, rRest, r1, p, k0, k1, first);
                    return SmallVector<Value>{};
                  });
            }
            attnc::loop(ck, singleFrom, pFullEnd, {},
                [&](ImplicitLocOpBuilder &cp, Value p, ValueRange) {
                  rowsOf(cp, bi, rRest, r1, p, wholeHalves, k0, k1, first,
                         pairs ? Rows::Whole : Rows::All);
                  return SmallVector<Value>{};
                });
            if (pairs) // the rows left over of every whole panel, paired or not
              attnc::loop(ck, p0, pFullEnd, {},
                  [&](ImplicitLocOpBuilder &cp, Value p, ValueRange) {
                    rowsOf(cp, bi, rRest, r1, p, wholeHalves, k0, k1, first, Rows::Tail);
                    return SmallVector<Value>{};
                  });
            // The last panel when n is not a multiple of the panel width:
            // the halves with any column inside y, masked per vector.
            if (fullPanels < numPanels) {
              Value has = arith::CmpIOp::create(ck, arith::CmpIPredicate::ugt, p1,
                                                idx(ck, fullPanels));
              auto ifOp = scf::IfOp::create(ck, has, /*withElse=*/false);
              ImplicitLocOpBuilder ct(ck.getLoc(), ifOp.getThenBodyBuilder());
              int64_t left = n - fullPanels * panel;
              SmallVector<Half> lastHalves;
              for (int64_t half = 0; half < panel / nr && half * nr < left; ++half) {
                Half h{half, {}};
                for (int64_t v = 0; v < nr / vl; ++v)
                  h.valid.push_back(std::clamp<int64_t>(left - half * nr - v * vl, 0, vl));
                lastHalves.push_back(h);
              }
              rowsOf(ct, bi, r0, r1, idx(ct, fullPanels), lastHalves, k0, k1, first);
            }
            return SmallVector<Value>{};
          });
    });
  }
};

} // namespace

bool attnc::packedGemmStagesInput(Value x, Value wp) {
  auto xt = cast<ShapedType>(x.getType());
  int64_t k = xt.getRank() == 3 ? xt.getDimSize(2) : ShapedType::kDynamic;
  return xt.getElementType().isF32() &&
         cast<ShapedType>(wp.getType()).getElementType().isBF16() &&
         !ShapedType::isDynamic(k) && k % 2 == 0;
}

/// x rounded to bf16 into xs ([B, T, K], K static): tasks of 64 rows of
/// one sequence, rows past its valid length skipped (the GEMM skips them
/// too).
static void stageInput(ImplicitLocOpBuilder &b, Value x, Value xs, Value rowLens, int64_t vl) {
  auto idx = attnc::indexConst;
  int64_t k = cast<MemRefType>(xs.getType()).getDimSize(2);
  auto vt = VectorType::get({vl}, b.getF32Type());
  Value nt = memref::DimOp::create(b, x, 1);
  attnc::rowBlockTasks(b, x, /*seqDim=*/1, /*rows=*/64, [&](ImplicitLocOpBuilder &c, Value bi,
                                                             Value r0, Value r1) {
    if (rowLens)
      r1 = arith::MaxSIOp::create(
          c, r0, arith::MinSIOp::create(c, r1, attnc::validLength(c, rowLens, bi, nt)));
    const int64_t whole = k / vl * vl;
    attnc::loop(c, r0, r1, {}, [&](ImplicitLocOpBuilder &cr, Value r, ValueRange) {
      attnc::loop(cr, idx(cr, 0), idx(cr, whole), idx(cr, vl), {},
          [&](ImplicitLocOpBuilder &ck, Value at, ValueRange) {
            Value v = vector::LoadOp::create(ck, vt, x, ValueRange{bi, r, at});
            vector::StoreOp::create(ck, attnc::roundToBf16(ck, v), xs, ValueRange{bi, r, at});
            return SmallVector<Value>{};
          });
      if (whole < k) {
        Value at = idx(cr, whole);
        Value m = vector::CreateMaskOp::create(cr, VectorType::get({vl}, cr.getI1Type()),
                                               ValueRange{idx(cr, k - whole)});
        Value v = attnc::maskedLoadVecF32(cr, vt, x, ValueRange{bi, r, at}, m);
        vector::MaskedStoreOp::create(cr, xs, ValueRange{bi, r, at}, m, attnc::roundToBf16(cr, v));
      }
      return SmallVector<Value>{};
    });
  });
}

void attnc::buildPackedGemm(ImplicitLocOpBuilder &b, attn::CpuTargetAttr t,
                            Value x, Value wp, Value bias, Value y, int64_t n,
                            Value rowLens, Value xStaged) {
  auto wt = cast<MemRefType>(wp.getType());
  auto xt = cast<MemRefType>(x.getType());
  int64_t vl = t.getVectorWidth();
  const bool pairs = wt.getElementType().isBF16();
  // Pairs: [P, ceil(K/2), 2 * panel]; K is x's (static) last dimension.
  int64_t kDim = pairs ? xt.getDimSize(2) : wt.getDimSize(1);
  int64_t panel = pairs ? wt.getDimSize(2) / 2 : wt.getDimSize(2);
  Gemm g{b, t, x, wp, bias, y, rowLens, n, kDim, panel, vl,
         t.getGemmNr(), t.getGemmMr(), t.getGemmKc(),
         VectorType::get({vl}, b.getF32Type())};
  g.pairs = pairs;
  g.dot = pairs && vl == 16 && t.getFeatures().contains("+avx512bf16");
  // vdpbf16ps reads a panel row of bf16 pairs in half the bytes of a
  // float32 one: twice gemm_kc's rows (512, 32 KiB of pairs) fill the same
  // share of L1 and halve the passes over y. On the Zen 4 machine (bf16
  // peak 236 GFLOP/s per thread), interleaved A/B runs of the phases on
  // one thread: the Llama shape's QKV / W_O 220 / 216 -> 224 / 222 GFLOP/s
  // at T = 512, 215 / 212 -> 221 / 220 at 1024, 200 / 195 -> 208 / 209 at
  // 2048; GPT-2 small's 193 / 200 -> 196 / 201 at 512 (1024 rows measured
  // within 2% of 512).
  if (g.dot)
    g.kc = 2 * g.kc;
  // The staged copy of x: a phase of its own, with tasks on the vdpbf16ps
  // path only (every path has the same phases).
  if (xStaged) {
    if (g.dot) {
      stageInput(b, x, xStaged, rowLens, vl);
      g.x = xStaged;
      xt = cast<MemRefType>(xStaged.getType());
    } else {
      attnc::taskLoop(b, arith::ConstantIndexOp::create(b, 0), [](ImplicitLocOpBuilder &, Value) {});
    }
  }
  g.directPairs = xt.getElementType().isBF16() && kDim % 2 == 0;
  // AMX-BF16 tiles need whole panels of 32 columns (two 16-column C tiles),
  // 32-row blocks within a task (gemm_mc a multiple of 32) and a float32 y
  // (the C tiles are loaded from and stored to it).
  g.amx = g.dot && g.nr == panel && panel == 32 && t.getGemmMc() % 32 == 0 &&
          cast<MemRefType>(y.getType()).getElementType().isF32() &&
          t.getFeatures().contains("+amx-bf16");
  g.widenA = !g.dot && !xt.getElementType().isF32();
  g.build();
}
