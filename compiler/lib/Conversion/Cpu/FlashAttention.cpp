//===- FlashAttention.cpp - attn.sdpa as tiled online-softmax attention ---===//
//
// One task = (batch b, query head h, block of MQ queries i0..i0+MQ). With
// lanes along queries, every step is plain vector arithmetic (no
// horizontal reductions):
//
//   QT[d][r]  = scale * log2(e) * q[b, h, i0+r, d]       (stack, once)
//   m = -inf, l = 0, O[r][:] = 0                         (m, l: registers)
//   for key block j0 in [0, kEnd) step NK:               (mask -> key range)
//     ST[j][r] = sum_d k[b, hk, j0+j, d] * QT[d][r]      (KR keys x MQ lanes)
//     ST[j][r] = -inf where the mask hides key j0+j from query i0+r
//                (only in blocks that straddle the mask's boundary; a
//                causal mask's query vectors that see none of KR keys get
//                -inf without the dot products)
//     mNew = max(m, max_j ST[j]);  alpha = 2^(m - mNew)
//     ST[j] = 2^(ST[j] - mNew);    l = alpha*l + sum_j ST[j]
//     O[r][:] = alpha[r]*O[r][:] + sum_j ST[j][r] * v[b, hk, j0+j, :]
//                (causal: each register block of rows stops at its last
//                row's last key)
//     m = mNew
//   o[b, h, i0+r, :] = O[r][:] / l[r]   (0 for rows that see no key)
//
// Scores are in log2 units, so the exponentials are 2^x (exp2NonPositive:
// a cheaper polynomial than a general exp). K and V are read in place
// through their views into the fused QKV buffer; nothing of size T x T is
// ever stored. (With bf16 dot products, a phase before the tasks rounds K
// and V to bf16 pairs once per call into the workspace: QueryBlockKernel,
// "Staged".)
//
//===----------------------------------------------------------------------===//
#include "CpuBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

#include "llvm/Support/MathExtras.h"

#include <limits>
#include <optional>

using namespace mlir;
using namespace attnc::attn;
using attnc::exp2NonPositive;
using attnc::f32Const;
using attnc::indexConst;

namespace {

Value add(ImplicitLocOpBuilder &c, Value a, int64_t x) {
  return x == 0 ? a
                : arith::AddIOp::create(c, a, arith::ConstantIndexOp::create(c, x))
                      .getResult();
}

bool unitInner(Value buf) {
  auto t = cast<MemRefType>(buf.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(t.getStridesAndOffset(strides, offset)) && strides.back() == 1;
}
} // namespace

/// What the kernels multiply Q by: the op's scale times log2(e), so that
/// scores are in log2 units and exp(s) = 2^(s') (exp2NonPositive).
static double log2Scale(SdpaOp op) {
  return op.getScale().convertToDouble() * llvm::numbers::log2e;
}

namespace {
/// How a kernel builder emits its one parallel phase: `tasks` tasks, each
/// running `body`. The plain emitter is a taskLoop; a KV-cache decode call
/// whose query count is known only at run time builds both kernels and
/// emits one phase that picks per call (buildFlashAttention).
using TaskBody = llvm::function_ref<void(ImplicitLocOpBuilder &, Value)>;
using TaskEmitter = llvm::function_ref<void(Value tasks, TaskBody body)>;
} // namespace

namespace {
/// The decode kernel's shape (buildDecodeAttention): lanes along head_dim;
/// a task is hp query heads of one kv head's group, run gq at a time.
struct DecodeKernel {
  DecodeKernel(ImplicitLocOpBuilder &b, CpuTargetAttr t, SdpaOp op, Value q, Value k,
               Value v);

  /// Tasks per sequence the head split aims for (kv heads x tasks per kv
  /// head): enough for the threads of a small machine, few enough that a
  /// kv head's keys and values are not streamed once per register group.
  static constexpr int64_t kMinTasks = 8;

  int64_t D, vl, nk;
  int64_t dv, dTail; // head_dim vectors, lanes of the last one
  int64_t gq = 1;    // query heads whose state is in registers at once
  int64_t G = 0;     // query heads per kv head (0: known at run time)
  int64_t hp = 1;    // query heads per task (the last of a group may have fewer)
  int64_t perKv = 1; // tasks per kv head (G static)
  bool inRegs = true; // a task is one group of gq heads: state in registers
  bool tree = false;  // scores of VL keys at once by a transposing sum tree
  bool stageK = false; // tree over a bf16/f16 cache: VL key rows widened once
  /// bf16 dot products (dot_type = bf16, a bf16 cache, AVX512-BF16, head_dim
  /// a multiple of 32): Q·K and P·V on vdpbf16ps straight from the cache
  /// rows (DecodeTask::scores, keyBlock).
  bool bf16 = false;
  bool avx512 = false; // 16 lanes of an AVX-512 code path (vscalefps)
  attnc::KeyVisibility vis;
  bool bthd;
  double scale;
  attnc::ScoreMods mods;
  Type f32, bf16T;
  VectorType vt, bvt; // vector<VL x f32>, vector<2VL x bf16>

  Value splat(ImplicitLocOpBuilder &c, double x) const {
    return arith::ConstantOp::create(
        c, DenseElementsAttr::get(vt, c.getF32FloatAttr(static_cast<float>(x))));
  }
  Value laneMask(ImplicitLocOpBuilder &c, Value n) const {
    return vector::CreateMaskOp::create(c, VectorType::get({vl}, c.getI1Type()),
                                        ValueRange{n});
  }
  /// Row `at` of a [.., D] operand as dv vectors (the last one masked when
  /// D is not a multiple of VL).
  SmallVector<Value> loadRow(ImplicitLocOpBuilder &c, Value buf, SmallVector<Value> at) const {
    SmallVector<Value> out;
    for (int64_t ch = 0; ch < dv; ++ch) {
      SmallVector<Value> pos(at);
      pos.push_back(indexConst(c, ch * vl));
      if (ch + 1 < dv || dTail == vl)
        out.push_back(attnc::loadVecF32(c, vt, buf, pos));
      else
        out.push_back(attnc::maskedLoadVecF32(c, vt, buf, pos, laneMask(c, indexConst(c, dTail))));
    }
    return out;
  }
};

DecodeKernel::DecodeKernel(ImplicitLocOpBuilder &b, CpuTargetAttr t, SdpaOp op, Value q, Value k,
                           Value v)
    : vis(attnc::KeyVisibility::of(op)), mods(attnc::ScoreMods::of(op)) {
  auto qt = cast<MemRefType>(q.getType());
  f32 = b.getF32Type();
  D = qt.getDimSize(3);
  vl = t.getVectorWidth();
  // (the ISA table's AVX-512 rows and an AVX-512 host: 16 lanes, 32 registers)
  avx512 = mods.avx512 = vl == 16 && t.getRegisters() == 32;
  nk = t.getAttnNk();
  dv = (D + vl - 1) / vl;
  dTail = D - (dv - 1) * vl;
  bthd = op.getLayout() == HeadLayout::bthd;
  scale = log2Scale(op);
  bf16T = b.getBF16Type();
  bvt = VectorType::get({2 * vl}, bf16T);
  bf16 = op.getDotType() && vl == 16 && D % 32 == 0 &&
         cast<MemRefType>(k.getType()).getElementType().isBF16() &&
         cast<MemRefType>(v.getType()).getElementType().isBF16() &&
         t.getFeatures().contains("+avx512bf16");
  // Heads in registers at once: as many as keep g*dv output accumulators +
  // dv value vectors + g query rows (dv vectors, dv/2 of bf16 pairs) in
  // registers.
  const int64_t qVecs = bf16 ? dv / 2 : dv;
  int64_t gMax = 1;
  while ((gMax + 1) * (dv + qVecs) + dv + 2 <= t.getRegisters())
    ++gMax;
  // Heads per task: a kv head's group split into perKv tasks, at least
  // kMinTasks per sequence where the group allows. Each task streams its
  // kv head's keys and values once, key block by key block, and runs its
  // hp heads over each block in groups of gq (the state of the others
  // waits on the stack): G/gq register groups no longer mean G/gq passes
  // over the cache.
  auto kt = cast<MemRefType>(k.getType());
  int64_t hqS = qt.getDimSize(1), hkvS = kt.getDimSize(1);
  if (!ShapedType::isDynamic(hqS) && !ShapedType::isDynamic(hkvS) && hkvS > 0 &&
      hqS % hkvS == 0) {
    G = hqS / hkvS;
    int64_t split = std::clamp<int64_t>((kMinTasks + hkvS - 1) / hkvS, 1, G);
    hp = (G + split - 1) / split;
    perKv = (G + hp - 1) / hp;
    // The fewest groups (full ones of gq heads, then single heads), then
    // the fewest single heads.
    int64_t best = std::numeric_limits<int64_t>::max();
    for (int64_t g = 1; g <= std::min(gMax, hp); ++g) {
      int64_t cost = 2 * (hp / g + hp % g) + (hp % g ? 1 : 0);
      if (cost <= best) {
        best = cost;
        gq = g;
      }
    }
    inRegs = gq == hp && G % hp == 0;
  }
  vt = VectorType::get({vl}, f32);
  // T5's bias is looked up per score: those keep one sum per key.
  tree = (vl == 4 || vl == 8 || vl == 16) && mods.relBuckets.empty();
  stageK = tree && !bf16 && !cast<MemRefType>(k.getType()).getElementType().isF32();
}

/// The bf16 P·V operands of two value rows a = v[j], b = v[j+1] (32 bf16
/// each): (a[i], b[i]) pairs in unpck{l,h}wd order, so that vdpbf16ps's
/// lane 4L+i sums d = 8L+i (half 0) or 8L+4+i (half 1) of the 32.
static Value pairRows(ImplicitLocOpBuilder &c, Value a, Value b, int64_t half) {
  SmallVector<int64_t> m;
  for (int64_t L = 0; L < 4; ++L)
    for (int64_t i = 0; i < 4; ++i)
      m.append({8 * L + 4 * half + i, 32 + 8 * L + 4 * half + i});
  return vector::ShuffleOp::create(c, a, b, m);
}

/// One level of the score tree: a and b hold the partial sums of 2^d keys
/// each (every key in VL / 2^d lanes); the result holds the 2^(d+1) keys'
/// sums, each in half as many lanes. The lane patterns are x86's
/// immediate shuffles (unpck{l,h}ps at d = 0, unpck{l,h}pd at d = 1, then
/// 128-bit chunk selects), and VL = 4, 8, 16 end with key r in lane r:
/// the 16 keys' sums cost 15 adds and 30 shuffles, not 16 reductions of 4
/// shuffles and 4 adds each.
static Value treeLevel(ImplicitLocOpBuilder &c, Value a, Value b, int64_t d, int64_t vl) {
  SmallVector<int64_t> lo(vl), hi(vl);
  for (int64_t i = 0; i < vl; ++i) {
    int64_t chunk = i / 4, p = i % 4, src, lane, step;
    if (d == 0) { // [a0 b0 a1 b1] + [a2 b2 a3 b3] per 128 bits
      src = p % 2, lane = chunk * 4 + p / 2, step = 2;
    } else if (d == 1) { // [a0 a1 b0 b1] + [a2 a3 b2 b3] per 128 bits
      src = p / 2, lane = chunk * 4 + p % 2, step = 2;
    } else { // chunks: a's pairs, then b's, each pair summed
      int64_t half = std::max<int64_t>(vl / 8, 1);
      src = chunk / half, lane = (chunk % half) * 8 + p, step = 4;
    }
    lo[i] = src * vl + lane;
    hi[i] = lo[i] + step;
  }
  return arith::AddFOp::create(c, vector::ShuffleOp::create(c, a, b, lo),
                               vector::ShuffleOp::create(c, a, b, hi));
}

/// One group of gw query heads [h0, h0 + gw) of sequence bi (kv head hk),
/// their one query row each, whose visible keys end at kEnd, at key
/// position off. The state per head: m (splat), l (splat), O (dv vectors).
struct DecodeTask : AttentionBuffers {
  const DecodeKernel &K;
  int64_t gw; // heads in this group
  Value bi, h0, hk, zero, off, kEnd;
  Value S;  // [>= gw, NK]: the block's scores, then P
  Value Kf; // [VL, dv * VL] f32: VL key rows widened (K.stageK)
  Value Pb; // [>= gw, NK] bf16: P rounded (K.bf16)
  SmallVector<attnc::ScoreMods::Head> heads;
  SmallVector<SmallVector<Value>> qs; // q_g, scaled
  SmallVector<SmallVector<Value>> qb; // q_g rounded to bf16, 32 per vector (K.bf16)

  int64_t per() const { return 2 + K.dv; }
  void stageQueries(ImplicitLocOpBuilder &c);
  SmallVector<Value> initialState(ImplicitLocOpBuilder &c) const;
  SmallVector<Value> keyBlock(ImplicitLocOpBuilder &cb, Value j0, ValueRange st) const;
  void write(ImplicitLocOpBuilder &c, ValueRange st) const;

private:
  void scores(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const;
  /// Head g's softmax statistics over the block, lanes along keys (masked
  /// tail); S[g] becomes P. Appends m and l to `next`, returns alpha.
  Value statistics(ImplicitLocOpBuilder &cb, int64_t g, Value cnt, ValueRange st,
                   SmallVectorImpl<Value> &next) const;
};

/// Each head's score modifiers, q_g = scale * log2(e) * q.
void DecodeTask::stageQueries(ImplicitLocOpBuilder &c) {
  for (int64_t g = 0; g < gw; ++g)
    heads.push_back(K.mods.head(c, add(c, h0, g), relBias, llvm::numbers::log2e));
  for (int64_t g = 0; g < gw; ++g) {
    SmallVector<Value> row = K.loadRow(c, q, {bi, add(c, h0, g), zero});
    for (Value &x : row)
      x = arith::MulFOp::create(c, x, K.splat(c, K.scale));
    if (K.bf16) {
      SmallVector<int64_t> cat;
      for (int64_t i = 0; i < 2 * K.vl; ++i)
        cat.push_back(i);
      qb.emplace_back();
      for (int64_t ch = 0; ch < K.dv; ch += 2)
        qb.back().push_back(vector::ShuffleOp::create(
            c, attnc::roundToBf16(c, row[ch]), attnc::roundToBf16(c, row[ch + 1]), cat));
    }
    qs.push_back(row);
  }
}

/// m = -inf, l = 0, O = 0; a sink starts the row as one more "key" of
/// weight 1 at its logit.
SmallVector<Value> DecodeTask::initialState(ImplicitLocOpBuilder &c) const {
  SmallVector<Value> init;
  for (int64_t g = 0; g < gw; ++g) {
    if (sinks) {
      Value sk = attnc::loadF32(c, sinks, ValueRange{add(c, h0, g)});
      init.push_back(vector::BroadcastOp::create(
          c, K.vt, arith::MulFOp::create(c, sk, f32Const(c, llvm::numbers::log2e))));
      init.push_back(K.splat(c, 1.0));
    } else {
      init.push_back(K.splat(c, -std::numeric_limits<double>::infinity()));
      init.push_back(K.splat(c, 0.0));
    }
    for (int64_t ch = 0; ch < K.dv; ++ch)
      init.push_back(K.splat(c, 0.0));
  }
  return init;
}

/// S[g][j] = reduce_add(q_g * k[j0 + j]) with the score modifiers (the one
/// query sits at key position off): VL keys at a time through treeLevel,
/// the block's last cnt % VL keys (and every key under T5's bias) one sum
/// each.
void DecodeTask::scores(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t vl = K.vl, dv = K.dv;
  // Key j's row: dv float32 vectors, or dv/2 vectors of 32 bf16 (K.bf16).
  auto keyRow = [&](ImplicitLocOpBuilder &c, Value j) {
    if (!K.bf16)
      return K.loadRow(c, k, {bi, hk, j});
    SmallVector<Value> out;
    for (int64_t ch = 0; ch < dv; ch += 2)
      out.push_back(vector::LoadOp::create(c, K.bvt, k, ValueRange{bi, hk, j, idx(c, ch * vl)}));
    return out;
  };
  auto dot = [&](ImplicitLocOpBuilder &c, int64_t g, ArrayRef<Value> kr) {
    if (K.bf16) {
      Value acc = K.splat(c, 0.0);
      for (size_t i = 0; i < kr.size(); ++i)
        acc = x86vector::DotBF16Op::create(c, K.vt, acc, qb[g][i], kr[i]);
      return acc;
    }
    Value acc = arith::MulFOp::create(c, qs[g][0], kr[0]);
    for (int64_t ch = 1; ch < dv; ++ch)
      acc = vector::FMAOp::create(c, qs[g][ch], kr[ch], acc);
    return acc;
  };
  Value from = zero;
  if (K.tree) {
    from = arith::MulIOp::create(cb, arith::DivUIOp::create(cb, cnt, idx(cb, vl)), idx(cb, vl));
    loop(cb, zero, from, idx(cb, vl), {}, [&](ImplicitLocOpBuilder &c1, Value jb, ValueRange) {
      Value kb = arith::AddIOp::create(c1, j0, jb);
      auto row = [&](int64_t r) {
        if (!Kf)
          return keyRow(c1, add(c1, kb, r));
        return K.loadRow(c1, Kf, {idx(c1, r)});
      };
      if (Kf) // widened once for the group's heads
        for (int64_t r = 0; r < vl; ++r) {
          SmallVector<Value> kr = K.loadRow(c1, k, {bi, hk, add(c1, kb, r)});
          for (int64_t ch = 0; ch < dv; ++ch)
            vector::StoreOp::create(c1, kr[ch], Kf, ValueRange{idx(c1, r), idx(c1, ch * vl)});
        }
      Value delta;
      if (K.mods.any()) { // j - off for the VL keys
        Value base = arith::SIToFPOp::create(
            c1, K.f32, arith::IndexCastOp::create(c1, c1.getI64Type(),
                                                   arith::SubIOp::create(c1, kb, off)));
        SmallVector<float> iota;
        for (int64_t r = 0; r < vl; ++r)
          iota.push_back(static_cast<float>(r));
        delta = arith::AddFOp::create(
            c1, vector::BroadcastOp::create(c1, K.vt, base),
            arith::ConstantOp::create(c1, DenseElementsAttr::get(K.vt, ArrayRef<float>(iota))));
      }
      for (int64_t g = 0; g < gw; ++g) {
        // A binary counter over the keys: at most log2(VL) + 1 partial
        // vectors live at once.
        SmallVector<std::pair<int64_t, Value>> stack;
        for (int64_t r = 0; r < vl; ++r) {
          Value x = dot(c1, g, row(r));
          int64_t d = 0;
          for (; !stack.empty() && stack.back().first == d; ++d) {
            x = treeLevel(c1, stack.back().second, x, d, vl);
            stack.pop_back();
          }
          stack.push_back({d, x});
        }
        Value s = stack.front().second;
        if (K.mods.any())
          s = K.mods.apply(c1, s, heads[g].slope, delta, llvm::numbers::log2e);
        vector::StoreOp::create(c1, s, S, ValueRange{idx(c1, g), jb});
      }
      return SmallVector<Value>{};
    });
  }
  loop(cb, from, cnt, {}, [&](ImplicitLocOpBuilder &c1, Value jj, ValueRange) {
    SmallVector<Value> kr = keyRow(c1, arith::AddIOp::create(c1, j0, jj));
    for (int64_t g = 0; g < gw; ++g) {
      // reassoc: a tree of shuffles and adds (log2 VL deep), not
      // VL scalar adds in a row (an ordered reduction).
      Value s = vector::ReductionOp::create(c1, vector::CombiningKind::ADD, dot(c1, g, kr),
                                            arith::FastMathFlags::reassoc);
      if (K.mods.any())
        s = K.mods.applyAt(c1, s, heads[g], arith::AddIOp::create(c1, j0, jj), off,
                           llvm::numbers::log2e);
      memref::StoreOp::create(c1, s, S, ValueRange{idx(c1, g), jj});
    }
    return SmallVector<Value>{};
  });
}

Value DecodeTask::statistics(ImplicitLocOpBuilder &cb, int64_t g, Value cnt, ValueRange st,
                             SmallVectorImpl<Value> &next) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t vl = K.vl;
  Value gi = idx(cb, g);
  Value mOld = st[g * per()], lOld = st[g * per() + 1];
  scf::ForOp mx = loop(cb, zero, cnt, idx(cb, vl), ValueRange{mOld},
      [&](ImplicitLocOpBuilder &c1, Value jj, ValueRange a) {
        Value n = arith::SubIOp::create(c1, cnt, jj);
        Value sv = vector::MaskedLoadOp::create(
            c1, K.vt, S, ValueRange{gi, jj}, K.laneMask(c1, n),
            K.splat(c1, -std::numeric_limits<double>::infinity()));
        return SmallVector<Value>{attnc::runningMax(c1, a[0], sv)};
      });
  Value mNew = attnc::splatMax(cb, mx.getResult(0));
  Value alpha = exp2NonPositive(cb, arith::SubFOp::create(cb, mOld, mNew), K.avx512);
  scf::ForOp ps = loop(cb, zero, cnt, idx(cb, vl), ValueRange{K.splat(cb, 0.0)},
      [&](ImplicitLocOpBuilder &c1, Value jj, ValueRange a) {
        Value n = arith::SubIOp::create(c1, cnt, jj);
        Value msk = K.laneMask(c1, n);
        // Lanes past the block read -inf (2^x's argument stays <= 0).
        Value sv = vector::MaskedLoadOp::create(
            c1, K.vt, S, ValueRange{gi, jj}, msk,
            K.splat(c1, -std::numeric_limits<double>::infinity()));
        Value p = arith::SelectOp::create(
            c1, msk, exp2NonPositive(c1, arith::SubFOp::create(c1, sv, mNew), K.avx512),
            K.splat(c1, 0.0));
        // bf16 dot products read P rounded, zeros past cnt (an odd block's
        // last pair): stored so here, in the pass that computes it.
        if (K.bf16)
          vector::StoreOp::create(c1, attnc::roundToBf16(c1, p), Pb, ValueRange{gi, jj});
        else
          vector::MaskedStoreOp::create(c1, S, ValueRange{gi, jj}, msk, p);
        return SmallVector<Value>{arith::AddFOp::create(c1, a[0], p)};
      });
  Value lBlk = vector::BroadcastOp::create(
      cb, K.vt, vector::ReductionOp::create(cb, vector::CombiningKind::ADD, ps.getResult(0),
                                            arith::FastMathFlags::reassoc));
  next.push_back(mNew);
  next.push_back(arith::AddFOp::create(cb, arith::MulFOp::create(cb, lOld, alpha), lBlk));
  return alpha;
}

/// One key block [j0, j0 + NK): scores, statistics, then O = alpha*O +
/// P·V with each value row loaded once for the G heads.
SmallVector<Value> DecodeTask::keyBlock(ImplicitLocOpBuilder &cb, Value j0,
                                        ValueRange st) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t gq = gw, dv = K.dv;
  Value cnt = arith::MinUIOp::create(cb, idx(cb, K.nk), arith::SubIOp::create(cb, kEnd, j0));
  scores(cb, j0, cnt);
  SmallVector<Value> next;
  SmallVector<Value> alphas;
  for (int64_t g = 0; g < gq; ++g)
    alphas.push_back(statistics(cb, g, cnt, st, next));
  SmallVector<Value> acc;
  for (int64_t g = 0; g < gq; ++g)
    for (int64_t ch = 0; ch < dv; ++ch)
      acc.push_back(arith::MulFOp::create(cb, st[g * per() + 2 + ch], alphas[g]));
  scf::ForOp pv;
  if (K.bf16) {
    // P rounded to bf16 (Pb, by statistics()), then O += (p_j, p_j+1) .
    // (v_j, v_j+1) on vdpbf16ps, O's lanes in pairRows' order (write()
    // restores head_dim's).
    Value pairs = arith::DivUIOp::create(cb, add(cb, cnt, 1), idx(cb, 2));
    Value last = arith::SubIOp::create(cb, cnt, idx(cb, 1));
    pv = loop(cb, zero, pairs, acc, [&](ImplicitLocOpBuilder &c1, Value jp, ValueRange a) {
      Value ja = arith::MulIOp::create(c1, jp, idx(c1, 2));
      // The second row of an odd block's last pair is its first again (P
      // is 0 there): no read past the block.
      Value jb = arith::MinUIOp::create(c1, add(c1, ja, 1), last);
      SmallVector<Value> vp;
      for (int64_t ch = 0; ch < dv; ch += 2) {
        Value d0 = idx(c1, ch * K.vl);
        Value ra = vector::LoadOp::create(c1, K.bvt, v,
                                          ValueRange{bi, hk, arith::AddIOp::create(c1, j0, ja), d0});
        Value rb = vector::LoadOp::create(c1, K.bvt, v,
                                          ValueRange{bi, hk, arith::AddIOp::create(c1, j0, jb), d0});
        vp.push_back(pairRows(c1, ra, rb, 0));
        vp.push_back(pairRows(c1, ra, rb, 1));
      }
      SmallVector<Value> out(a.begin(), a.end());
      for (int64_t g = 0; g < gq; ++g) {
        Value pp = attnc::bf16PairBroadcast(c1, Pb, ValueRange{idx(c1, g), ja}, K.vl);
        for (int64_t ch = 0; ch < dv; ++ch)
          out[g * dv + ch] = x86vector::DotBF16Op::create(c1, K.vt, a[g * dv + ch], pp, vp[ch]);
      }
      return out;
    });
  } else {
    pv = loop(cb, zero, cnt, acc, [&](ImplicitLocOpBuilder &c1, Value jj, ValueRange a) {
      SmallVector<Value> vr = K.loadRow(c1, v, {bi, hk, arith::AddIOp::create(c1, j0, jj)});
      SmallVector<Value> out(a.begin(), a.end());
      for (int64_t g = 0; g < gq; ++g) {
        Value p = vector::BroadcastOp::create(
            c1, K.vt, memref::LoadOp::create(c1, S, ValueRange{idx(c1, g), jj}));
        for (int64_t ch = 0; ch < dv; ++ch)
          out[g * dv + ch] = vector::FMAOp::create(c1, p, vr[ch], a[g * dv + ch]);
      }
      return out;
    });
  }
  SmallVector<Value> state;
  for (int64_t g = 0; g < gq; ++g) {
    state.push_back(next[2 * g]);
    state.push_back(next[2 * g + 1]);
    for (int64_t ch = 0; ch < dv; ++ch)
      state.push_back(pv.getResult(g * dv + ch));
  }
  return state;
}

/// o = O / l (zeros when no key was visible: l = 0).
void DecodeTask::write(ImplicitLocOpBuilder &c, ValueRange st) const {
  auto idx = indexConst;
  const int64_t dv = K.dv, vl = K.vl;
  for (int64_t g = 0; g < gw; ++g) {
    Value l = st[g * per() + 1];
    Value pos = arith::CmpFOp::create(c, arith::CmpFPredicate::OGT, l, K.splat(c, 0.0));
    Value inv = arith::SelectOp::create(c, pos, arith::DivFOp::create(c, K.splat(c, 1.0), l),
                                        K.splat(c, 0.0));
    Value h = add(c, h0, g);
    SmallVector<Value> ov(st.begin() + g * per() + 2, st.begin() + (g + 1) * per());
    if (K.bf16) // pairRows' lane order back to head_dim's
      for (int64_t ch = 0; ch < dv; ch += 2) {
        SmallVector<int64_t> m0, m1;
        for (int64_t L = 0; L < 2; ++L)
          for (int64_t half = 0; half < 2; ++half)
            for (int64_t i = 0; i < 4; ++i) {
              m0.push_back(half * vl + 4 * L + i);
              m1.push_back(half * vl + 4 * (L + 2) + i);
            }
        Value lo = ov[ch], hi = ov[ch + 1];
        ov[ch] = vector::ShuffleOp::create(c, lo, hi, m0);
        ov[ch + 1] = vector::ShuffleOp::create(c, lo, hi, m1);
      }
    for (int64_t ch = 0; ch < dv; ++ch) {
      Value val = arith::MulFOp::create(c, ov[ch], inv);
      Value dIdx = idx(c, ch * vl);
      SmallVector<Value> at = K.bthd ? SmallVector<Value>{bi, zero, h, dIdx}
                                     : SmallVector<Value>{bi, h, zero, dIdx};
      if (ch + 1 < dv || K.dTail == vl)
        vector::StoreOp::create(c, val, o, at);
      else
        vector::MaskedStoreOp::create(c, o, at, K.laneMask(c, idx(c, K.dTail)), val);
    }
  }
}
} // namespace

/// One query row per (batch, head): a decode step against a KV cache. The
/// query-block kernel below would spend its MQ lanes on one row, so here
/// lanes run along head_dim instead, and the query heads that share a kv
/// head (GQA) share each key/value load. A task is hp heads of one kv
/// head's group (DecodeKernel), run gq at a time:
///
///   q_g = scale * log2(e) * q[b, h0+g, 0, :]            (registers)
///   for key block j0 in [kStart, kEnd) step NK:        (mask -> key range)
///     for each group of gq heads (state in registers; between groups on
///     the stack, unless the task is one group):
///       S[g][j] = reduce_add(q_g * k[b, hk, j0+j, :])   (16 keys' sums
///                                     at once: treeLevel; bf16: vdpbf16ps)
///       mNew = max(m, max_j S[g][j]);  alpha = 2^(m - mNew)
///       S[g][j] = 2^(S[g][j] - mNew) (lanes along keys); l = alpha*l + sum
///       O_g = alpha*O_g + sum_j S[g][j] * v[b, hk, j0+j, :]
///                                     (bf16: pairs of keys, pairRows)
///   o[b, h0+g, 0, :] = O_g / l   (0 when no key is visible)
///
/// Keys and values stream once per task from the cache, contiguous per head
/// in the [B, Hkv, L, D] layout (a key block stays in cache across the
/// task's groups).
static LogicalResult buildDecodeAttention(ImplicitLocOpBuilder &b, CpuTargetAttr t,
                                          SdpaOp op, const AttentionBuffers &bufs,
                                          TaskEmitter emit) {
  Value q = bufs.q, k = bufs.k, v = bufs.v, qLens = bufs.qLens, kvLens = bufs.kvLens;
  using attnc::loop;
  using attnc::validLength;
  auto idx = indexConst;
  if (op.getRelEmb())
    return op.emitOpError("attn-to-loops: the decode kernel has no relative_key "
                          "(the front end refuses it with decode)");
  const DecodeKernel K(b, t, op, q, k, v);
  Value nb = memref::DimOp::create(b, q, 0), hq = memref::DimOp::create(b, q, 1);
  Value hkv = memref::DimOp::create(b, k, 1), tkv = memref::DimOp::create(b, k, 2);
  Value group = K.G ? idx(b, K.G) : arith::DivUIOp::create(b, hq, hkv).getResult();
  Value perKv = K.G ? idx(b, K.perKv) : group; // G at run time: one head per task
  Value perSeq = arith::MulIOp::create(b, hkv, perKv);
  Value tasks = arith::MulIOp::create(b, nb, perSeq);
  const int64_t per = 2 + K.dv;

  emit(tasks, [&](ImplicitLocOpBuilder &c, Value task) {
    Value zero = idx(c, 0), one = idx(c, 1);
    Value bi = arith::DivUIOp::create(c, task, perSeq);
    Value r = arith::RemUIOp::create(c, task, perSeq);
    Value hk = arith::DivUIOp::create(c, r, perKv);
    Value hBeg = arith::AddIOp::create(
        c, arith::MulIOp::create(c, hk, group),
        arith::MulIOp::create(c, arith::RemUIOp::create(c, r, perKv), idx(c, K.hp)));
    Value hEnd = arith::MinUIOp::create(c, add(c, hBeg, K.hp),
                                        arith::MulIOp::create(c, add(c, hk, 1), group));
    Value qv = qLens ? validLength(c, qLens, bi, one) : one;
    Value kvv = kvLens ? validLength(c, kvLens, bi, tkv) : tkv;
    // The one query row sees keys [kStart, kEnd) (KeyVisibility); none
    // when the row is padding.
    Value off = K.vis.offset(c, qv, kvv);
    attnc::KeyVisibility::Range keys = K.vis.row(c, off, kvv);
    Value rowValid = arith::CmpIOp::create(c, arith::CmpIPredicate::sgt, qv, zero);
    Value kEnd = arith::SelectOp::create(c, rowValid, keys.end, keys.start);
    Value S = memref::AllocaOp::create(c, MemRefType::get({K.gq, K.nk}, K.f32));
    Value Kf = K.stageK ? memref::AllocaOp::create(
                              c, MemRefType::get({K.vl, K.dv * K.vl}, K.f32)).getResult()
                        : Value();
    Value Pb = K.bf16 ? memref::AllocaOp::create(c, MemRefType::get({K.gq, K.nk}, K.bf16T)).getResult()
                      : Value();
    auto groupAt = [&](int64_t gw, Value h0) {
      DecodeTask dt{bufs, K, gw};
      dt.bi = bi;
      dt.h0 = h0;
      dt.hk = hk;
      dt.zero = zero;
      dt.off = off;
      dt.kEnd = kEnd;
      dt.S = S;
      dt.Kf = Kf;
      dt.Pb = Pb;
      return dt;
    };
    if (K.inRegs) {
      DecodeTask dt = groupAt(K.gq, hBeg);
      dt.stageQueries(c);
      SmallVector<Value> init = dt.initialState(c);
      scf::ForOp blocks = loop(c, keys.start, kEnd, idx(c, K.nk), init,
          [&](ImplicitLocOpBuilder &cb, Value j0, ValueRange st) {
        return dt.keyBlock(cb, j0, st);
      });
      dt.write(c, blocks.getResults());
      return;
    }
    // St[i][e]: head hBeg+i's m, l and O vectors between its groups' turns.
    Value St = memref::AllocaOp::create(c, MemRefType::get({K.hp, per, K.vl}, K.f32));
    auto loadState = [&](ImplicitLocOpBuilder &cc, Value slot, int64_t gw) {
      SmallVector<Value> st;
      for (int64_t g = 0; g < gw; ++g)
        for (int64_t e = 0; e < per; ++e)
          st.push_back(vector::LoadOp::create(cc, K.vt, St,
                                              ValueRange{add(cc, slot, g), idx(cc, e), zero}));
      return st;
    };
    auto storeState = [&](ImplicitLocOpBuilder &cc, Value slot, ValueRange st) {
      for (size_t i = 0; i < st.size(); ++i)
        vector::StoreOp::create(cc, st[i], St,
                                ValueRange{add(cc, slot, static_cast<int64_t>(i) / per),
                                           idx(cc, static_cast<int64_t>(i) % per), zero});
    };
    // The task's heads: full groups of gq, then single heads.
    Value nFull = arith::DivUIOp::create(c, arith::SubIOp::create(c, hEnd, hBeg), idx(c, K.gq));
    Value fullEnd = arith::AddIOp::create(c, hBeg, arith::MulIOp::create(c, nFull, idx(c, K.gq)));
    auto forEachGroup = [&](ImplicitLocOpBuilder &cc,
                            llvm::function_ref<void(ImplicitLocOpBuilder &, DecodeTask &, Value)> fn) {
      loop(cc, zero, nFull, {}, [&](ImplicitLocOpBuilder &c1, Value sg, ValueRange) {
        Value slot = arith::MulIOp::create(c1, sg, idx(c1, K.gq));
        DecodeTask dt = groupAt(K.gq, arith::AddIOp::create(c1, hBeg, slot));
        fn(c1, dt, slot);
        return SmallVector<Value>{};
      });
      if (K.gq > 1)
        loop(cc, fullEnd, hEnd, {}, [&](ImplicitLocOpBuilder &c1, Value h, ValueRange) {
          DecodeTask dt = groupAt(1, h);
          fn(c1, dt, arith::SubIOp::create(c1, h, hBeg));
          return SmallVector<Value>{};
        });
    };
    forEachGroup(c, [&](ImplicitLocOpBuilder &c1, DecodeTask &dt, Value slot) {
      storeState(c1, slot, dt.initialState(c1));
    });
    loop(c, keys.start, kEnd, idx(c, K.nk), {},
         [&](ImplicitLocOpBuilder &cb, Value j0, ValueRange) {
      forEachGroup(cb, [&](ImplicitLocOpBuilder &c1, DecodeTask &dt, Value slot) {
        dt.stageQueries(c1);
        storeState(c1, slot, dt.keyBlock(c1, j0, loadState(c1, slot, dt.gw)));
      });
      return SmallVector<Value>{};
    });
    forEachGroup(c, [&](ImplicitLocOpBuilder &c1, DecodeTask &dt, Value slot) {
      dt.write(c1, loadState(c1, slot, dt.gw));
    });
  });
  return success();
}

/// Whether the op's Q·Kᵀ and P·V may take bf16 dot products, whatever
/// the code path: its dot_type asks for them, head_dim splits into the
/// (d, d+1) pairs the instruction reads, and no relative_key (its distance
/// terms ride on the float32 dot products). The planner
/// (flashAttentionStagedWidth) and the kernel (QueryBlockKernel) both ask
/// this, the kernel adding what its path has.
static bool bf16DotOperands(SdpaOp op, int64_t D) {
  return op.getDotType() && !ShapedType::isDynamic(D) && D % 2 == 0 &&
         !attnc::RelKey::of(op).any();
}

namespace {
/// The query-block kernel's shape, fixed at compile time by the target and
/// the op: vector width, block sizes, the P·V register block, what the
/// mask and the score modifiers need, and the bf16 dot-product variant.
///
/// bf16 dot products (dot_type = bf16 on a target with AVX512-BF16): the
/// task rounds its scaled Q (once), each key block's K and V and the
/// block's P to bf16 into (k, k+1) pair layouts on its stack, and the two
/// inner loops run vdpbf16ps (two products per float32 lane) over pairs:
///   QTp[d/2][2r+e]  = QT[2(d/2)+e][r]     (lanes r, pairs along head_dim)
///   Kb[j][d]        = K[j0+j][d]          (a key's pair broadcast)
///   Pp[j/2][2r+e]   = P[2(j/2)+e][r]      (a row's pair of keys broadcast)
///   Vp[j/2][2c+e]   = V[j0+2(j/2)+e][c]   (lanes c, pairs of keys)
/// m, l and the rescaling stay float32 on the unrounded scores and P.
///
/// Staged (a forward's keys, AttentionBuffers::kStaged): a phase before
/// the tasks rounds K and V once per call into the workspace, in the same
/// layouts over the whole sequence (kS[b][hk][j][d], vS[b][hk][j/2][2c+e]),
/// and the tasks read them in place instead of staging Kb and Vp per key
/// block: every query block of a head used to round and copy the same
/// strided float32 rows again. Key blocks then start at an even key (a
/// window's first block one key early, masked element-wise) so that P's
/// pairs line up with vS's.
struct QueryBlockKernel {
  QueryBlockKernel(ImplicitLocOpBuilder &b, CpuTargetAttr t, SdpaOp op, Value q,
                   bool stagedBuffers);

  int64_t D, vl, mq, kr, nk;
  int64_t mv;    // query vectors per task
  int64_t dv;    // head_dim vectors (last may be partial)
  int64_t dTail; // lanes of the last one
  int64_t dp;
  // P·V in register blocks of RR rows x DC head_dim vectors.
  int64_t rr = 1, dc = 1;
  attnc::KeyVisibility vis;
  bool bthd, bf16;
  bool staged = false; // bf16 reading the per-call kS/vS (above)
  bool avx512 = false; // 16 lanes of an AVX-512 code path (vscalefps)
  double scale;
  attnc::ScoreMods mods;
  attnc::RelKey rel;
  /// relative_key: the columns of the table a key block reads (ETb).
  int64_t relCols = 0;
  Type f32, bf16T;
  VectorType vt, ivt, bvt;

  Value splat(ImplicitLocOpBuilder &c, double x) const {
    return arith::ConstantOp::create(
        c, DenseElementsAttr::get(vt, c.getF32FloatAttr(static_cast<float>(x))));
  }
  Value negInf(ImplicitLocOpBuilder &c) const {
    return splat(c, -std::numeric_limits<double>::infinity());
  }
  Value add(ImplicitLocOpBuilder &c, Value a, int64_t x) const {
    return x == 0 ? a : arith::AddIOp::create(c, a, indexConst(c, x)).getResult();
  }
  Value tailMask(ImplicitLocOpBuilder &c) const {
    return vector::CreateMaskOp::create(c, VectorType::get({vl}, c.getI1Type()),
                                        ValueRange{indexConst(c, dTail)});
  }
  /// Head_dim vector ch of a K or V row at `at` (the last one masked when
  /// partial).
  Value loadChunk(ImplicitLocOpBuilder &c, Value buf, int64_t ch,
                  ArrayRef<Value> at) const {
    return ch + 1 < dv || dTail == vl
               ? attnc::loadVecF32(c, vt, buf, at)
               : attnc::maskedLoadVecF32(c, vt, buf, at, tailMask(c));
  }
  /// (a0, b0, a1, b1, ...) of two float32 vectors, rounded to bf16
  /// (denormal inputs become zero: no value here needs them).
  Value interleave(ImplicitLocOpBuilder &c, Value a, Value bb) const {
    SmallVector<int64_t> m;
    for (int64_t r = 0; r < vl; ++r)
      m.append({r, vl + r});
    return vector::ShuffleOp::create(c, attnc::roundToBf16(c, a),
                                     attnc::roundToBf16(c, bb), m);
  }
};

QueryBlockKernel::QueryBlockKernel(ImplicitLocOpBuilder &b, CpuTargetAttr t, SdpaOp op, Value q,
                                   bool stagedBuffers)
    : vis(attnc::KeyVisibility::of(op)), mods(attnc::ScoreMods::of(op)),
      rel(attnc::RelKey::of(op)) {
  auto qt = cast<MemRefType>(q.getType());
  f32 = b.getF32Type();
  D = qt.getDimSize(3);
  vl = t.getVectorWidth();
  avx512 = mods.avx512 = vl == 16 && t.getRegisters() == 32; // (as DecodeKernel's)
  mq = t.getAttnMq();
  kr = t.getAttnKr();
  nk = t.getAttnNk();
  bf16 = bf16DotOperands(op, D) && vl == 16 && t.getFeatures().contains("+avx512bf16");
  // bf16 dot products (vdpbf16ps) with 32 registers: 4 query vectors per
  // task and 6 keys per score group (24 accumulators) instead of the
  // target's float32 tile (3 and 8): a task's staged bf16 keys and values
  // serve 64 queries. Attention phase, GPT-2 small 1 thread, Zen 5: T =
  // 512 2.17 -> 1.98 ms, 1024 8.81 -> 7.57, 2048 29.1 -> 26.6; the Llama
  // shape 6.43 -> 5.83 (512), 79.8 -> 74.0 (2048). The float32 attention
  // of the same path keeps 3 and 8 (4 and 6 ran 11% slower there).
  if (bf16 && t.getRegisters() >= 32 && mq == 3 * vl && kr == 8) {
    mq = 4 * vl;
    kr = 6;
  }
  staged = bf16 && stagedBuffers && nk % 2 == 0;
  mv = mq / vl;
  dv = (D + vl - 1) / vl;
  dTail = D - (dv - 1) * vl;
  dp = dv * vl;
  // RR*DC accumulators + DC V vectors + 1 broadcast within the register
  // file (head_dim in DC-vector chunks when a whole row of O does not fit,
  // as with AVX2's 16 registers and head_dim 64). The largest RR*DC wins,
  // a wider DC on ties (fewer passes over the block's scores).
  for (int64_t d = dv; d >= 1; --d) {
    if (dv % d != 0)
      continue;
    for (int64_t c = mq; c >= 1; --c)
      if (mq % c == 0 && c * d + d + 1 <= t.getRegisters()) {
        if (c * d > rr * dc)
          rr = c, dc = d;
        break;
      }
  }
  bthd = op.getLayout() == HeadLayout::bthd;
  scale = log2Scale(op);
  vt = VectorType::get({vl}, f32);
  ivt = VectorType::get({vl}, b.getI32Type());
  // A key block's queries and keys are at distances spanning MQ + NK + KR
  // - 1 columns (keys past the block's count included), in vectors.
  relCols = rel.any() ? (mq + nk + kr - 1 + vl - 1) / vl * vl : 0;
  bf16T = b.getBF16Type();
  bvt = VectorType::get({2 * vl}, bf16T);
}

/// One task of the query-block kernel: queries [i0, i0 + rows) of head h
/// of sequence bi (kv head hk), their buffers on the task's stack, and
/// the phases of its key loop in the order they run (the file comment).
struct QueryBlockTask : AttentionBuffers {
  const QueryBlockKernel &K;
  Value tq, tkv;
  Value bi, h, hk, i0, off, rows, zero;
  // QT: the scaled Q^T; ST: the block's scores, then P; O: the output
  // rows; aux: alpha (row 0) and 1/l (row 1) per query. bf16: QTp, Kb,
  // Pp, Vp (QueryBlockKernel). ETb: relative_key's table columns of the
  // key block's distances (stageRel).
  Value QT, ST, O, aux, QTp, Kb, Pp, Vp, ETb;
  Value kvValid; // keys [0, kvValid) of the sequence
  Value diag0, lastKey, laneIdx, slopeV, relRow;
  attnc::KeyVisibility::Range keys;
  // Query vector m's first query, at key position i0 + off + m*VL (i32).
  SmallVector<Value> qpos0;

  void allocate(ImplicitLocOpBuilder &c);
  void stageQuery(ImplicitLocOpBuilder &c);
  void locateKeys(ImplicitLocOpBuilder &c);
  SmallVector<Value> initialState(ImplicitLocOpBuilder &c) const;
  /// One key block [j0, j0 + NK): the loop state (m, l per query vector)
  /// after it.
  SmallVector<Value> keyBlock(ImplicitLocOpBuilder &cb, Value j0, ValueRange ml) const;
  void write(ImplicitLocOpBuilder &c, scf::ForOp blocks) const;

private:
  void stageKeysBf16(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const;
  void stageRel(ImplicitLocOpBuilder &cb, Value j0) const;
  void scoreGroup(ImplicitLocOpBuilder &c1, Value j0, Value jg, int64_t s) const;
  void scores(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const;
  void maskBoundary(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const;
  void stageVBf16(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const;
  void accumulatePV(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const;
};

void QueryBlockTask::allocate(ImplicitLocOpBuilder &c) {
  const int64_t D = K.D, mq = K.mq, nk = K.nk, kr = K.kr, dp = K.dp;
  QT = memref::AllocaOp::create(c, MemRefType::get({D, mq}, K.f32));
  ST = memref::AllocaOp::create(c, MemRefType::get({nk + kr, mq}, K.f32));
  O = memref::AllocaOp::create(c, MemRefType::get({mq, dp}, K.f32));
  aux = memref::AllocaOp::create(c, MemRefType::get({2, mq}, K.f32));
  if (K.rel.any())
    ETb = memref::AllocaOp::create(c, MemRefType::get({D, K.relCols}, K.f32));
  if (K.bf16) {
    QTp = memref::AllocaOp::create(c, MemRefType::get({D / 2, 2 * mq}, K.bf16T));
    Pp = memref::AllocaOp::create(c, MemRefType::get({nk / 2 + 1, 2 * mq}, K.bf16T));
    if (!K.staged) {
      Kb = memref::AllocaOp::create(c, MemRefType::get({nk + kr, dp}, K.bf16T));
      Vp = memref::AllocaOp::create(c, MemRefType::get({nk / 2 + 1, 2 * dp}, K.bf16T));
    }
  }
}

/// QT = scale * log2(e) * Q^T (rows past Tq read the last row; never
/// stored), O = 0; bf16: QT's pairs into QTp.
void QueryBlockTask::stageQuery(ImplicitLocOpBuilder &c) {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t vl = K.vl;
  Value lastRow = arith::SubIOp::create(c, tq, idx(c, 1));
  loop(c, zero, idx(c, K.mq), {}, [&](ImplicitLocOpBuilder &c1, Value r, ValueRange) {
    Value i = arith::MinUIOp::create(c1, arith::AddIOp::create(c1, i0, r), lastRow);
    loop(c1, zero, idx(c1, K.D), {}, [&](ImplicitLocOpBuilder &c2, Value d, ValueRange) {
      Value x = memref::LoadOp::create(c2, q, ValueRange{bi, h, i, d});
      memref::StoreOp::create(c2, arith::MulFOp::create(c2, x, f32Const(c2, K.scale)), QT,
                              ValueRange{d, r});
      return SmallVector<Value>{};
    });
    for (int64_t ch = 0; ch < K.dv; ++ch)
      vector::StoreOp::create(c1, K.splat(c1, 0.0), O, ValueRange{r, idx(c1, ch * vl)});
    return SmallVector<Value>{};
  });
  if (K.bf16)
    loop(c, zero, idx(c, K.D / 2), {}, [&](ImplicitLocOpBuilder &c1, Value dpi, ValueRange) {
      Value d0 = arith::MulIOp::create(c1, dpi, idx(c1, 2));
      for (int64_t m = 0; m < K.mv; ++m)
        vector::StoreOp::create(
            c1,
            K.interleave(c1, vector::LoadOp::create(c1, K.vt, QT, ValueRange{d0, idx(c1, m * vl)}),
                         vector::LoadOp::create(c1, K.vt, QT, ValueRange{K.add(c1, d0, 1), idx(c1, m * vl)})),
            QTp, ValueRange{dpi, idx(c1, 2 * m * vl)});
      return SmallVector<Value>{};
    });
}

/// Visible keys: [start, end) for some row of the block; [low, full) for
/// all of them (the window's lower edge and the causal diagonal). And what
/// the score modifiers need: each lane's query position, the head's ALiBi
/// slope, T5's bias row.
void QueryBlockTask::locateKeys(ImplicitLocOpBuilder &c) {
  const int64_t vl = K.vl;
  diag0 = arith::AddIOp::create(c, i0, off); // row i0's last key
  keys = K.vis.block(c, diag0, rows, /*kvv=*/kvValid);
  lastKey = arith::SubIOp::create(c, tkv, indexConst(c, 1));
  // Lane r of query vector m is query i0 + m*VL + r.
  SmallVector<int32_t> lanes;
  for (int64_t r = 0; r < vl; ++r)
    lanes.push_back(static_cast<int32_t>(r));
  laneIdx = arith::ConstantOp::create(c, DenseElementsAttr::get(K.ivt, ArrayRef<int32_t>(lanes)));
  slopeV = K.mods.slope(c, h, llvm::numbers::log2e);
  relRow = relBias ? K.mods.relBiasRow(c, relBias, h, vl, llvm::numbers::log2e) : Value();
  if (K.mods.any())
    for (int64_t m = 0; m < K.mv; ++m)
      qpos0.push_back(arith::IndexCastOp::create(
          c, c.getI32Type(), K.add(c, arith::AddIOp::create(c, i0, off), m * vl)));
}

/// m and l per query vector: -inf and 0, or with a sink one more "key" of
/// weight 1 at its logit (log2 units; it has no value).
SmallVector<Value> QueryBlockTask::initialState(ImplicitLocOpBuilder &c) const {
  SmallVector<Value> init;
  Value sinkM = sinks ? vector::BroadcastOp::create(
                            c, K.vt, arith::MulFOp::create(
                                         c, attnc::loadF32(c, sinks, ValueRange{h}),
                                         f32Const(c, llvm::numbers::log2e))).getResult()
                      : Value();
  for (int64_t m = 0; m < K.mv; ++m)
    init.push_back(sinks ? sinkM : K.negInf(c));
  for (int64_t m = 0; m < K.mv; ++m)
    init.push_back(K.splat(c, sinks ? 1.0 : 0.0));
  return init;
}

/// bf16: the block's keys (KR-rounded, rows past kEnd clamped) into Kb.
void QueryBlockTask::stageKeysBf16(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t kr = K.kr, vl = K.vl;
  Value cntR = arith::MulIOp::create(
      cb, arith::DivUIOp::create(cb, K.add(cb, cnt, kr - 1), idx(cb, kr)), idx(cb, kr));
  loop(cb, zero, cntR, {}, [&](ImplicitLocOpBuilder &c1, Value jl, ValueRange) {
    Value row = arith::MinUIOp::create(c1, arith::AddIOp::create(c1, j0, jl), lastKey);
    for (int64_t ch = 0; ch < K.dv; ++ch) {
      SmallVector<Value> at{bi, hk, row, idx(c1, ch * vl)};
      Value kv = K.loadChunk(c1, k, ch, at);
      vector::StoreOp::create(c1, attnc::roundToBf16(c1, kv), Kb,
                              ValueRange{jl, idx(c1, ch * vl)});
    }
    return SmallVector<Value>{};
  });
}

/// relative_key: ETb[d][x] = ET[d][r] for the block's distance columns r =
/// rlo + x, rlo = i0 + off - (j0 + NK + KR - 1) + P - 1, so that query
/// vector m's entries against key j0 + jg + jj are the contiguous
/// ETb[d][m*VL - jg - jj + NK + KR - 1 ...]. Columns outside the table
/// (rows or keys past the valid ones: their scores are never used) read its
/// edge; whole vectors inside it are copied as vectors.
void QueryBlockTask::stageRel(ImplicitLocOpBuilder &cb, Value j0) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t vl = K.vl, cols = K.rel.cols;
  Value rlo = arith::AddIOp::create(
      cb, arith::SubIOp::create(cb, arith::AddIOp::create(cb, i0, off), j0),
      idx(cb, K.rel.center() - (K.nk + K.kr - 1)));
  loop(cb, zero, idx(cb, K.relCols / vl), {}, [&](ImplicitLocOpBuilder &c1, Value ch, ValueRange) {
    Value x0 = arith::MulIOp::create(c1, ch, idx(c1, vl));
    Value rs = arith::AddIOp::create(c1, rlo, x0);
    Value inside = arith::AndIOp::create(
        c1, arith::CmpIOp::create(c1, arith::CmpIPredicate::sge, rs, zero),
        arith::CmpIOp::create(c1, arith::CmpIPredicate::sle, rs, idx(c1, cols - vl)));
    auto ifOp = scf::IfOp::create(c1, inside, /*withElse=*/true);
    ImplicitLocOpBuilder ct(c1.getLoc(), ifOp.getThenBodyBuilder());
    loop(ct, zero, idx(ct, K.D), {}, [&](ImplicitLocOpBuilder &c2, Value d, ValueRange) {
      vector::StoreOp::create(c2, attnc::loadVecF32(c2, K.vt, relEmb, ValueRange{d, rs}), ETb,
                              ValueRange{d, x0});
      return SmallVector<Value>{};
    });
    ImplicitLocOpBuilder ce(c1.getLoc(), ifOp.getElseBodyBuilder());
    loop(ce, zero, idx(ce, K.D), {}, [&](ImplicitLocOpBuilder &c2, Value d, ValueRange) {
      for (int64_t l = 0; l < vl; ++l) {
        Value r = arith::MinSIOp::create(
            c2, arith::MaxSIOp::create(c2, K.add(c2, rs, l), zero), idx(c2, cols - 1));
        memref::StoreOp::create(c2, attnc::loadF32(c2, relEmb, ValueRange{d, r}), ETb,
                                ValueRange{d, K.add(c2, x0, l)});
      }
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

/// Scores of KR keys at j0 + jg (rows past kEnd are clamped reads and are
/// never used), for query vectors [s, MV): under a causal mask the first s
/// vectors' rows see none of the group's keys (the diagonal block), so
/// their scores are -inf without being computed. The score modifiers
/// (ALiBi, soft-capping, T5) apply to the computed scores in registers,
/// before the mask: delta = j - i'.
void QueryBlockTask::scoreGroup(ImplicitLocOpBuilder &c1, Value j0, Value jg,
                                int64_t s) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t kr = K.kr, mv = K.mv, vl = K.vl, D = K.D;
  const attnc::ScoreMods &mods = K.mods;
  SmallVector<Value> keyRow;
  for (int64_t jj = 0; jj < kr; ++jj)
    keyRow.push_back(arith::MinUIOp::create(
        c1, K.add(c1, arith::AddIOp::create(c1, j0, jg), jj), lastKey));
  const int64_t nv = mv - s;
  SmallVector<Value> acc(kr * nv, K.splat(c1, 0.0));
  scf::ForOp dl = K.bf16 ? loop(c1, zero, idx(c1, D / 2), acc,
      [&](ImplicitLocOpBuilder &c2, Value dpi, ValueRange a) {
        SmallVector<Value> qv, next(a.begin(), a.end());
        for (int64_t m = s; m < mv; ++m)
          qv.push_back(vector::LoadOp::create(c2, K.bvt, QTp,
                                              ValueRange{dpi, idx(c2, 2 * m * vl)}));
        Value d0 = arith::MulIOp::create(c2, dpi, idx(c2, 2));
        for (int64_t jj = 0; jj < kr; ++jj) {
          Value kb = K.staged ? attnc::bf16PairBroadcast(c2, kStaged,
                                                         ValueRange{bi, hk, keyRow[jj], d0}, vl)
                              : attnc::bf16PairBroadcast(c2, Kb,
                                                         ValueRange{K.add(c2, jg, jj), d0}, vl);
          for (int64_t m = 0; m < nv; ++m)
            next[jj * nv + m] =
                x86vector::DotBF16Op::create(c2, K.vt, a[jj * nv + m], qv[m], kb);
        }
        return next;
      }) : loop(c1, zero, idx(c1, D), acc,
      [&](ImplicitLocOpBuilder &c2, Value d, ValueRange a) {
        SmallVector<Value> qv, next(a.begin(), a.end());
        for (int64_t m = s; m < mv; ++m)
          qv.push_back(vector::LoadOp::create(c2, K.vt, QT, ValueRange{d, idx(c2, m * vl)}));
        for (int64_t jj = 0; jj < kr; ++jj) {
          Value kb = vector::BroadcastOp::create(
              c2, K.vt, attnc::loadF32(c2, k, ValueRange{bi, hk, keyRow[jj], d}));
          for (int64_t m = 0; m < nv; ++m) {
            next[jj * nv + m] = vector::FMAOp::create(c2, kb, qv[m], next[jj * nv + m]);
            if (!K.rel.any())
              continue;
            // relative_key: + (q' + scale' k) . E[r] (q' = scale' q is QT;
            // scale' = scale * log2 e), E's columns from ETb.
            Value e = vector::LoadOp::create(
                c2, K.vt, ETb, ValueRange{d, arith::SubIOp::create(
                                                 c2, idx(c2, (m + s) * vl - jj + K.nk + K.kr - 1),
                                                 jg)});
            Value t = K.rel.keyQuery ? vector::FMAOp::create(c2, kb, K.splat(c2, K.scale), qv[m])
                                             .getResult()
                                     : qv[m];
            next[jj * nv + m] = vector::FMAOp::create(c2, t, e, next[jj * nv + m]);
          }
        }
        return next;
      });
  Value negInf = K.negInf(c1);
  for (int64_t jj = 0; jj < kr; ++jj) {
    Value jv;
    if (mods.any())
      jv = vector::BroadcastOp::create(
          c1, K.ivt,
          arith::IndexCastOp::create(
              c1, c1.getI32Type(), K.add(c1, arith::AddIOp::create(c1, j0, jg), jj)));
    for (int64_t m = 0; m < mv; ++m) {
      Value sc = m < s ? negInf : dl.getResult(jj * nv + m - s);
      if (mods.any() && m >= s) {
        Value qpos = arith::AddIOp::create(
            c1, vector::BroadcastOp::create(c1, K.ivt, qpos0[m]), laneIdx);
        Value delta = arith::SIToFPOp::create(c1, K.vt, arith::SubIOp::create(c1, jv, qpos));
        if (relRow) { // T5: the contiguous biases of d = i' - j
          Value jIdx = K.add(c1, arith::AddIOp::create(c1, j0, jg), jj);
          Value k0 = arith::AddIOp::create(
              c1, arith::SubIOp::create(
                      c1, arith::IndexCastOp::create(c1, c1.getIndexType(), qpos0[m]), jIdx),
              idx(c1, mods.relRange + vl));
          k0 = arith::MinSIOp::create(
              c1, arith::MaxSIOp::create(c1, k0, zero),
              idx(c1, 2 * mods.relRange + vl + 1));
          sc = arith::AddFOp::create(c1, sc, vector::LoadOp::create(c1, K.vt, relRow, ValueRange{k0}));
        }
        sc = mods.apply(c1, sc, slopeV, delta, llvm::numbers::log2e);
      }
      vector::StoreOp::create(c1, sc, ST, ValueRange{K.add(c1, jg, jj), idx(c1, m * vl)});
    }
  }
}

/// The block's scores, KR keys at a time; under a causal mask the groups
/// skip the query vectors that see none of their keys (scf.index_switch
/// on the count).
void QueryBlockTask::scores(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t mv = K.mv, vl = K.vl;
  loop(cb, zero, cnt, idx(cb, K.kr), {}, [&](ImplicitLocOpBuilder &c1, Value jg, ValueRange) {
    if (!K.vis.causal || mv == 1) {
      scoreGroup(c1, j0, jg, 0);
      return SmallVector<Value>{};
    }
    // s = the vectors whose last row's last key (diag0 + (m+1)*VL - 1)
    // comes before the group's first key, in [0, MV - 1].
    Value ahead = arith::SubIOp::create(c1, arith::AddIOp::create(c1, j0, jg), diag0);
    Value sv = arith::MinSIOp::create(
        c1, idx(c1, mv - 1),
        arith::MaxSIOp::create(c1, zero, arith::DivSIOp::create(c1, ahead, idx(c1, vl))));
    attnc::switchOnCount(
        c1, sv, mv, [&](ImplicitLocOpBuilder &cs, int64_t sk) { scoreGroup(cs, j0, jg, sk); },
        [&](ImplicitLocOpBuilder &cd) { scoreGroup(cd, j0, jg, 0); });
    return SmallVector<Value>{};
  });
}

/// The mask, element-wise, only where this block crosses its boundary
/// (keys outside [low, full)).
void QueryBlockTask::maskBoundary(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t mv = K.mv, vl = K.vl;
  Value crosses = arith::CmpIOp::create(
      cb, arith::CmpIPredicate::sgt, arith::AddIOp::create(cb, j0, cnt), keys.full);
  if (K.vis.lowEdge())
    crosses = arith::OrIOp::create(
        cb, crosses, arith::CmpIOp::create(cb, arith::CmpIPredicate::slt, j0, keys.low));
  auto ifOp = scf::IfOp::create(cb, crosses, /*withElse=*/false);
  ImplicitLocOpBuilder ci(cb.getLoc(), ifOp.getThenBodyBuilder());
  Value base = arith::IndexCastOp::create(
      ci, ci.getI32Type(), arith::AddIOp::create(ci, i0, off));
  Value negInf = K.negInf(ci);
  loop(ci, zero, cnt, {}, [&](ImplicitLocOpBuilder &c1, Value jj, ValueRange) {
    Value j = arith::IndexCastOp::create(c1, c1.getI32Type(),
                                         arith::AddIOp::create(c1, j0, jj));
    Value jv = vector::BroadcastOp::create(c1, K.ivt, j);
    for (int64_t m = 0; m < mv; ++m) {
      Value lim = arith::AddIOp::create(
          c1, vector::BroadcastOp::create(
                  c1, K.ivt, arith::AddIOp::create(
                                 c1, base, arith::ConstantIntOp::create(c1, m * vl, 32))),
          laneIdx);
      Value ok = arith::CmpIOp::create(c1, arith::CmpIPredicate::sle, jv,
                                       K.vis.lastKey(c1, lim));
      if (K.vis.lowEdge())
        ok = arith::AndIOp::create(
            c1, ok, arith::CmpIOp::create(c1, arith::CmpIPredicate::sge, jv,
                                          K.vis.firstKey(c1, lim)));
      Value s = vector::LoadOp::create(c1, K.vt, ST, ValueRange{jj, idx(c1, m * vl)});
      vector::StoreOp::create(c1, arith::SelectOp::create(c1, ok, s, negInf), ST,
                              ValueRange{jj, idx(c1, m * vl)});
    }
    return SmallVector<Value>{};
  });
}

/// bf16 without the per-call staging (a chunk over a cache): the block's
/// V as pairs of keys (a zero second key past an odd count) into Vp.
void QueryBlockTask::stageVBf16(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t vl = K.vl;
  Value pairs = arith::DivUIOp::create(cb, K.add(cb, cnt, 1), idx(cb, 2));
  loop(cb, zero, pairs, {}, [&](ImplicitLocOpBuilder &c1, Value jp, ValueRange) {
    Value jl = arith::MulIOp::create(c1, jp, idx(c1, 2)), jl1 = K.add(c1, jl, 1);
    Value second = arith::CmpIOp::create(c1, arith::CmpIPredicate::ult, jl1, cnt);
    Value row0 = arith::AddIOp::create(c1, j0, jl);
    Value row1 = arith::MinUIOp::create(c1, K.add(c1, row0, 1), lastKey);
    for (int64_t ch = 0; ch < K.dv; ++ch) {
      auto load = [&](Value row) -> Value {
        SmallVector<Value> at{bi, hk, row, idx(c1, ch * vl)};
        return K.loadChunk(c1, v, ch, at);
      };
      Value v1 = arith::SelectOp::create(c1, second, load(row1), K.splat(c1, 0.0));
      vector::StoreOp::create(c1, K.interleave(c1, load(row0), v1), Vp,
                              ValueRange{jp, idx(c1, 2 * ch * vl)});
    }
    return SmallVector<Value>{};
  });
}

/// O = alpha*O + P·V, RR rows x DC vectors at a time in registers (alpha
/// from aux row 0).
void QueryBlockTask::accumulatePV(ImplicitLocOpBuilder &cb, Value j0, Value cnt) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t rr = K.rr, dc = K.dc, dv = K.dv, vl = K.vl;
  for (int64_t c0 = 0; c0 < dv; c0 += dc)
  loop(cb, zero, idx(cb, K.mq), idx(cb, rr), {}, [&](ImplicitLocOpBuilder &c1, Value r0, ValueRange) {
    SmallVector<Value> acc;
    for (int64_t i = 0; i < rr; ++i) {
      Value a = vector::BroadcastOp::create(
          c1, K.vt, memref::LoadOp::create(c1, aux, ValueRange{idx(c1, 0), K.add(c1, r0, i)}));
      for (int64_t ch = c0; ch < c0 + dc; ++ch)
        acc.push_back(arith::MulFOp::create(
            c1, vector::LoadOp::create(c1, K.vt, O, ValueRange{K.add(c1, r0, i), idx(c1, ch * vl)}),
            a));
    }
    // Under a causal mask rows r0..r0+RR-1 see no key past
    // diag0 + r0 + RR - 1: the block's keys beyond that have P = 2^-126
    // (masked) for all of them and are not read.
    Value pvEnd = cnt;
    if (K.vis.causal)
      pvEnd = arith::MinSIOp::create(
          c1, cnt,
          arith::MaxSIOp::create(
              c1, zero,
              arith::SubIOp::create(
                  c1, K.add(c1, arith::AddIOp::create(c1, diag0, r0), rr), j0)));
    scf::ForOp pv = K.bf16 ? loop(c1, zero,
        arith::DivUIOp::create(c1, K.add(c1, pvEnd, 1), idx(c1, 2)), acc,
        [&](ImplicitLocOpBuilder &c2, Value jp, ValueRange a) {
      SmallVector<Value> vv, next(a.begin(), a.end());
      Value pairRow = K.staged ? arith::AddIOp::create(
                                     c2, arith::DivUIOp::create(c2, j0, idx(c2, 2)), jp)
                               : Value();
      for (int64_t ch = c0; ch < c0 + dc; ++ch)
        vv.push_back(K.staged ? vector::LoadOp::create(c2, K.bvt, vStaged,
                                                       ValueRange{bi, hk, pairRow,
                                                                  idx(c2, 2 * ch * vl)})
                              : vector::LoadOp::create(c2, K.bvt, Vp,
                                                       ValueRange{jp, idx(c2, 2 * ch * vl)}));
      for (int64_t i = 0; i < rr; ++i) {
        Value pp = attnc::bf16PairBroadcast(
            c2, Pp, ValueRange{jp, arith::MulIOp::create(c2, K.add(c2, r0, i), idx(c2, 2))}, vl);
        for (int64_t ch = 0; ch < dc; ++ch)
          next[i * dc + ch] = x86vector::DotBF16Op::create(c2, K.vt, a[i * dc + ch], pp, vv[ch]);
      }
      return next;
    }) : loop(c1, zero, pvEnd, acc, [&](ImplicitLocOpBuilder &c2, Value jj, ValueRange a) {
      Value j = arith::AddIOp::create(c2, j0, jj);
      SmallVector<Value> vv, next(a.begin(), a.end());
      for (int64_t ch = c0; ch < c0 + dc; ++ch) {
        SmallVector<Value> at{bi, hk, j, idx(c2, ch * vl)};
        vv.push_back(K.loadChunk(c2, v, ch, at));
      }
      for (int64_t i = 0; i < rr; ++i) {
        Value p = vector::BroadcastOp::create(
            c2, K.vt, memref::LoadOp::create(c2, ST, ValueRange{jj, K.add(c2, r0, i)}));
        for (int64_t ch = 0; ch < dc; ++ch)
          next[i * dc + ch] = vector::FMAOp::create(c2, p, vv[ch], a[i * dc + ch]);
      }
      return next;
    });
    for (int64_t i = 0; i < rr; ++i)
      for (int64_t ch = 0; ch < dc; ++ch)
        vector::StoreOp::create(c1, pv.getResult(i * dc + ch), O,
                                ValueRange{K.add(c1, r0, i), idx(c1, (c0 + ch) * vl)});
    // Two keys per iteration and a remainder loop (unrolled after the
    // stores exist, so that they read the remainder loop's results):
    // half the loop overhead per FMA. AVX2's attention phase 2-4%
    // faster at T = 512-1024 (Zen 4), AVX-512 unchanged; unrolling the
    // score loop over head_dim as well gained nothing. Should unrolling
    // be refused, the loop stays as built.
    (void)mlir::loopUnrollByFactor(pv, 2);
    return SmallVector<Value>{};
  });
}

SmallVector<Value> QueryBlockTask::keyBlock(ImplicitLocOpBuilder &cb, Value j0,
                                            ValueRange ml) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t mv = K.mv, vl = K.vl;
  Value cnt = arith::MinUIOp::create(cb, idx(cb, K.nk), arith::SubIOp::create(cb, keys.end, j0));
  if (K.bf16 && !K.staged)
    stageKeysBf16(cb, j0, cnt);
  if (K.rel.any())
    stageRel(cb, j0);
  scores(cb, j0, cnt);
  if (K.vis.highEdge())
    maskBoundary(cb, j0, cnt);
  // Online softmax over the block: mNew = max(m, max_j ST[j]), alpha =
  // 2^(m - mNew) (into aux row 0), ST[j] = 2^(ST[j] - mNew).
  SmallVector<Value> mOld(ml.begin(), ml.begin() + mv), lOld(ml.begin() + mv, ml.end());
  scf::ForOp mx = loop(cb, zero, cnt, mOld, [&](ImplicitLocOpBuilder &c1, Value jj, ValueRange a) {
    SmallVector<Value> next;
    for (int64_t m = 0; m < mv; ++m)
      next.push_back(attnc::runningMax(
          c1, a[m], vector::LoadOp::create(c1, K.vt, ST, ValueRange{jj, idx(c1, m * vl)})));
    return next;
  });
  SmallVector<Value> mNew(mx.getResults()), mSafe, alpha;
  Value negInf = K.negInf(cb);
  for (int64_t m = 0; m < mv; ++m) {
    Value none = arith::CmpFOp::create(cb, arith::CmpFPredicate::OEQ, mNew[m], negInf);
    mSafe.push_back(arith::SelectOp::create(cb, none, K.splat(cb, 0.0), mNew[m]));
    alpha.push_back(
        exp2NonPositive(cb, arith::SubFOp::create(cb, mOld[m], mSafe[m]), K.avx512));
    vector::StoreOp::create(cb, alpha[m], aux, ValueRange{idx(cb, 0), idx(cb, m * vl)});
  }
  SmallVector<Value> zeros(mv, K.splat(cb, 0.0));
  // P = 2^(S - mNew) and its sums; bf16: straight into P's pairs (Pp),
  // two keys per step (a zero second key past an odd count, added to the
  // sum as +0: the same sums as one key per step).
  scf::ForOp ps = K.bf16 ? loop(cb, zero,
      arith::DivUIOp::create(cb, K.add(cb, cnt, 1), idx(cb, 2)), zeros,
      [&](ImplicitLocOpBuilder &c1, Value jp, ValueRange a) {
    Value jl = arith::MulIOp::create(c1, jp, idx(c1, 2)), jl1 = K.add(c1, jl, 1);
    Value second = arith::CmpIOp::create(c1, arith::CmpIPredicate::ult, jl1, cnt);
    SmallVector<Value> next;
    for (int64_t m = 0; m < mv; ++m) {
      auto expOf = [&](Value row) {
        Value s = vector::LoadOp::create(c1, K.vt, ST, ValueRange{row, idx(c1, m * vl)});
        return exp2NonPositive(c1, arith::SubFOp::create(c1, s, mSafe[m]), K.avx512);
      };
      Value p0 = expOf(jl);
      Value p1 = arith::SelectOp::create(c1, second, expOf(jl1), K.splat(c1, 0.0));
      vector::StoreOp::create(c1, K.interleave(c1, p0, p1), Pp,
                              ValueRange{jp, idx(c1, 2 * m * vl)});
      next.push_back(arith::AddFOp::create(c1, arith::AddFOp::create(c1, a[m], p0), p1));
    }
    return next;
  }) : loop(cb, zero, cnt, zeros, [&](ImplicitLocOpBuilder &c1, Value jj, ValueRange a) {
    SmallVector<Value> next;
    for (int64_t m = 0; m < mv; ++m) {
      Value s = vector::LoadOp::create(c1, K.vt, ST, ValueRange{jj, idx(c1, m * vl)});
      Value p = exp2NonPositive(c1, arith::SubFOp::create(c1, s, mSafe[m]), K.avx512);
      vector::StoreOp::create(c1, p, ST, ValueRange{jj, idx(c1, m * vl)});
      next.push_back(arith::AddFOp::create(c1, a[m], p));
    }
    return next;
  });
  if (K.bf16 && !K.staged)
    stageVBf16(cb, j0, cnt);
  accumulatePV(cb, j0, cnt);
  SmallVector<Value> next(mNew);
  for (int64_t m = 0; m < mv; ++m)
    next.push_back(arith::AddFOp::create(
        cb, arith::MulFOp::create(cb, lOld[m], alpha[m]), ps.getResult(m)));
  return next;
}

/// o = O / l; rows that saw no key (m = -inf) or l = 0 give zeros.
void QueryBlockTask::write(ImplicitLocOpBuilder &c, scf::ForOp blocks) const {
  using attnc::loop;
  auto idx = indexConst;
  const int64_t mv = K.mv, vl = K.vl, dv = K.dv;
  Value negInf = K.negInf(c);
  for (int64_t m = 0; m < mv; ++m) {
    Value none = arith::CmpFOp::create(c, arith::CmpFPredicate::OEQ,
                                       blocks.getResult(m), negInf);
    Value l = blocks.getResult(mv + m);
    Value pos = arith::CmpFOp::create(c, arith::CmpFPredicate::OGT, l, K.splat(c, 0.0));
    Value inv = arith::SelectOp::create(
        c, arith::AndIOp::create(c, pos, arith::XOrIOp::create(
                                             c, none, arith::ConstantOp::create(
                                                          c, DenseElementsAttr::get(
                                                                 VectorType::get({vl}, c.getI1Type()), true)))),
        arith::DivFOp::create(c, K.splat(c, 1.0), l), K.splat(c, 0.0));
    vector::StoreOp::create(c, inv, aux, ValueRange{idx(c, 1), idx(c, m * vl)});
  }
  loop(c, zero, rows, {}, [&](ImplicitLocOpBuilder &c1, Value r, ValueRange) {
    Value inv = vector::BroadcastOp::create(
        c1, K.vt, memref::LoadOp::create(c1, aux, ValueRange{idx(c1, 1), r}));
    Value i = arith::AddIOp::create(c1, i0, r);
    for (int64_t ch = 0; ch < dv; ++ch) {
      Value val = arith::MulFOp::create(
          c1, vector::LoadOp::create(c1, K.vt, O, ValueRange{r, idx(c1, ch * vl)}), inv);
      Value dIdx = idx(c1, ch * vl);
      SmallVector<Value> at = K.bthd ? SmallVector<Value>{bi, i, h, dIdx}
                                     : SmallVector<Value>{bi, h, i, dIdx};
      if (ch + 1 < dv || K.dTail == vl)
        vector::StoreOp::create(c1, val, o, at);
      else
        vector::MaskedStoreOp::create(c1, o, at, K.tailMask(c1), val);
    }
    return SmallVector<Value>{};
  });
}
} // namespace

/// The per-call bf16 copies of K and V (QueryBlockKernel, "Staged"): tasks
/// of (batch, kv head, 64 keys); rows past the sequence's valid keys are
/// zeros (P·V reads a pair's second row with P = 0 there).
static void stageKeysAndValues(ImplicitLocOpBuilder &b, const QueryBlockKernel &K,
                               const AttentionBuffers &bufs) {
  using attnc::loop;
  auto idx = indexConst;
  if (!K.staged) {
    attnc::taskLoop(b, idx(b, 0), [](ImplicitLocOpBuilder &, Value) {});
    return;
  }
  constexpr int64_t rowsPerTask = 64;
  const int64_t vl = K.vl;
  Value k = bufs.k, v = bufs.v;
  Value nb = memref::DimOp::create(b, k, 0), hkv = memref::DimOp::create(b, k, 1);
  Value tkv = memref::DimOp::create(b, k, 2);
  Value blocks = arith::DivUIOp::create(b, K.add(b, tkv, rowsPerTask - 1), idx(b, rowsPerTask));
  Value perBatch = arith::MulIOp::create(b, hkv, blocks);
  attnc::taskLoop(b, arith::MulIOp::create(b, nb, perBatch), [&](ImplicitLocOpBuilder &c,
                                                                 Value task) {
    Value bi = arith::DivUIOp::create(c, task, perBatch);
    Value rest = arith::RemUIOp::create(c, task, perBatch);
    Value hk = arith::DivUIOp::create(c, rest, blocks);
    Value r0 = arith::MulIOp::create(c, arith::RemUIOp::create(c, rest, blocks),
                                     idx(c, rowsPerTask));
    Value kvv = bufs.kvLens ? attnc::validLength(c, bufs.kvLens, bi, tkv) : tkv;
    Value zero = idx(c, 0);
    Value zeroB = arith::ConstantOp::create(
        c, DenseElementsAttr::get(VectorType::get({vl}, K.bf16T), c.getFloatAttr(K.bf16T, 0.0)));
    Value zeroF = K.splat(c, 0.0);
    // Keys [r0, r0 + rows), rows = min(64, Tkv - r0).
    Value rows = arith::MinUIOp::create(c, idx(c, rowsPerTask), arith::SubIOp::create(c, tkv, r0));
    loop(c, zero, rows, {}, [&](ImplicitLocOpBuilder &c1, Value jl, ValueRange) {
      Value j = arith::AddIOp::create(c1, r0, jl);
      Value valid = arith::CmpIOp::create(c1, arith::CmpIPredicate::ult, j, kvv);
      for (int64_t ch = 0; ch < K.dv; ++ch) {
        SmallVector<Value> at{bi, hk, j, idx(c1, ch * vl)};
        Value kb = attnc::roundToBf16(c1, K.loadChunk(c1, k, ch, at));
        vector::StoreOp::create(c1, arith::SelectOp::create(c1, valid, kb, zeroB),
                                bufs.kStaged, at);
      }
      return SmallVector<Value>{};
    });
    // Pairs [r0 / 2, (r0 + rows + 1) / 2): rows 2p and 2p + 1 (a zero row
    // past the valid keys or past Tkv).
    Value p0 = arith::DivUIOp::create(c, r0, idx(c, 2));
    Value pairs = arith::DivUIOp::create(c, K.add(c, rows, 1), idx(c, 2));
    loop(c, zero, pairs, {}, [&](ImplicitLocOpBuilder &c1, Value pl, ValueRange) {
      Value p = arith::AddIOp::create(c1, p0, pl);
      Value j0 = arith::MulIOp::create(c1, p, idx(c1, 2)), j1 = K.add(c1, j0, 1);
      Value valid0 = arith::CmpIOp::create(c1, arith::CmpIPredicate::ult, j0, kvv);
      Value valid1 = arith::CmpIOp::create(c1, arith::CmpIPredicate::ult, j1, kvv);
      Value last = arith::SubIOp::create(c1, tkv, idx(c1, 1));
      Value j1c = arith::MinUIOp::create(c1, j1, last);
      for (int64_t ch = 0; ch < K.dv; ++ch) {
        SmallVector<Value> at0{bi, hk, j0, idx(c1, ch * vl)}, at1{bi, hk, j1c, idx(c1, ch * vl)};
        Value v0 = arith::SelectOp::create(c1, valid0, K.loadChunk(c1, v, ch, at0), zeroF);
        Value v1 = arith::SelectOp::create(c1, valid1, K.loadChunk(c1, v, ch, at1), zeroF);
        vector::StoreOp::create(c1, K.interleave(c1, v0, v1), bufs.vStaged,
                                ValueRange{bi, hk, p, idx(c1, 2 * ch * vl)});
      }
      return SmallVector<Value>{};
    });
  });
}

/// The query-block kernel (the file comment): tasks of (batch, head, MQ
/// queries).
static void buildQueryBlockAttention(ImplicitLocOpBuilder &b, CpuTargetAttr t, SdpaOp op,
                                     const AttentionBuffers &bufs, TaskEmitter emit) {
  Value q = bufs.q, k = bufs.k, qLens = bufs.qLens, kvLens = bufs.kvLens;
  auto idx = indexConst;
  const QueryBlockKernel K(b, t, op, q, static_cast<bool>(bufs.kStaged));
  const int64_t mq = K.mq;
  // The staged keys and values: a phase of their own (tasks of 64 rows
  // of one kv head), with no tasks on a code path that does not read them
  // (every path has the same phases).
  if (bufs.kStaged)
    stageKeysAndValues(b, K, bufs);
  Value nb = memref::DimOp::create(b, q, 0), hq = memref::DimOp::create(b, q, 1);
  Value tq = memref::DimOp::create(b, q, 2);
  Value hkv = memref::DimOp::create(b, k, 1), tkv = memref::DimOp::create(b, k, 2);
  Value group = arith::DivUIOp::create(b, hq, hkv);
  Value qBlocks = arith::DivUIOp::create(b, arith::AddIOp::create(b, tq, idx(b, mq - 1)),
                                         idx(b, mq));
  Value perBatch = arith::MulIOp::create(b, hq, qBlocks);
  Value tasks = arith::MulIOp::create(b, nb, perBatch);

  emit(tasks, [&](ImplicitLocOpBuilder &ct, Value task) {
    QueryBlockTask at{bufs, K};
    at.tq = tq;
    at.tkv = tkv;
    at.bi = arith::DivUIOp::create(ct, task, perBatch);
    Value rest = arith::RemUIOp::create(ct, task, perBatch);
    at.h = arith::DivUIOp::create(ct, rest, qBlocks);
    at.i0 = arith::MulIOp::create(ct, arith::RemUIOp::create(ct, rest, qBlocks), idx(ct, mq));
    at.hk = arith::DivUIOp::create(ct, at.h, group);
    // Valid lengths of this sequence (padding): queries [0, qv), keys
    // [0, kvv). A query block wholly past qv is skipped (its rows are
    // padding, zeroed by attn.mask_rows), not computed and masked.
    auto length = [&](Value lens, Value full) -> Value {
      return lens ? attnc::validLength(ct, lens, at.bi, full) : full;
    };
    Value qv = length(qLens, tq);
    at.kvValid = length(kvLens, tkv);
    // Keys a query i sees under a causal mask: j <= i + off (bottom-right:
    // the last valid query sees the last valid key).
    at.off = K.vis.offset(ct, qv, at.kvValid);
    std::optional<ImplicitLocOpBuilder> inner;
    if (qLens) {
      Value active = arith::CmpIOp::create(ct, arith::CmpIPredicate::slt, at.i0, qv);
      auto ifOp = scf::IfOp::create(ct, active, /*withElse=*/false);
      inner.emplace(ct.getLoc(), ifOp.getThenBodyBuilder());
    }
    ImplicitLocOpBuilder &c = inner ? *inner : ct;
    at.rows = arith::MinUIOp::create(c, idx(c, mq), arith::SubIOp::create(c, qv, at.i0));
    at.zero = idx(c, 0);
    at.allocate(c);
    at.stageQuery(c);
    at.locateKeys(c);
    SmallVector<Value> init = at.initialState(c);
    // Staged: key blocks start at an even key (vS's pairs; a window's
    // extra key is masked as any key below its edge).
    Value firstBlock = K.staged ? arith::MulIOp::create(
                                      c, arith::DivUIOp::create(c, at.keys.start, idx(c, 2)),
                                      idx(c, 2))
                                : at.keys.start;
    scf::ForOp blocks = attnc::loop(c, firstBlock, at.keys.end, idx(c, K.nk), init,
        [&](ImplicitLocOpBuilder &cb, Value j0, ValueRange ml) {
      return at.keyBlock(cb, j0, ml);
    });
    at.write(c, blocks);
  });
}

int64_t attnc::flashAttentionStagedWidth(SdpaOp op, Value q) {
  auto qt = cast<MemRefType>(q.getType());
  int64_t D = qt.getDimSize(3);
  // bf16 dot products on a forward's keys (not a cache's), more than one
  // query per call. Whether a code path reads the buffers is its own
  // business (QueryBlockKernel::staged): this says only whether it may.
  if (!bf16DotOperands(op, D) || qt.getDimSize(2) == 1 ||
      op.getKey().getDefiningOp<CacheAppendOp>())
    return 0;
  return llvm::alignTo(D, 16);
}

LogicalResult attnc::buildFlashAttention(ImplicitLocOpBuilder &b, CpuTargetAttr t, SdpaOp op,
                                         const AttentionBuffers &bufs) {
  Value q = bufs.q, k = bufs.k, v = bufs.v, o = bufs.o;
  auto qt = cast<MemRefType>(q.getType());
  int64_t D = qt.getDimSize(3);
  if (!qt.getElementType().isF32() || ShapedType::isDynamic(D) ||
      !unitInner(q) || !unitInner(k) || !unitInner(v) || !unitInner(o))
    return op.emitOpError("attn-to-loops needs f32 operands with a static "
                          "head_dim and unit innermost stride");
  auto plain = [&](Value tasks, TaskBody body) { attnc::taskLoop(b, tasks, body); };
  // One query per (batch, head): the decode kernel.
  if (qt.getDimSize(2) == 1)
    return buildDecodeAttention(b, t, op, bufs, plain);
  // Queries against a KV cache (the decode entry), their count known per
  // call: a step of generation (one query) takes the decode kernel, a
  // chunk of a chunked prefill the query-block kernel. Both are built; one
  // phase of select(Tq == 1, decode tasks, query-block tasks) tasks runs
  // the one the call needs.
  if (ShapedType::isDynamic(qt.getDimSize(2)) && op.getKey().getDefiningOp<CacheAppendOp>()) {
    Value step = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                       memref::DimOp::create(b, q, 2), indexConst(b, 1));
    return buildDecodeAttention(
        b, t, op, bufs,
        [&](Value stepTasks, TaskBody stepBody) {
          buildQueryBlockAttention(
              b, t, op, bufs,
              [&](Value chunkTasks, TaskBody chunkBody) {
                Value tasks = arith::SelectOp::create(b, step, stepTasks, chunkTasks);
                attnc::taskLoop(b, tasks, [&](ImplicitLocOpBuilder &c, Value task) {
                  auto ifOp = scf::IfOp::create(c, step, /*withElse=*/true);
                  ImplicitLocOpBuilder ct(c.getLoc(), ifOp.getThenBodyBuilder());
                  stepBody(ct, task);
                  ImplicitLocOpBuilder ce(c.getLoc(), ifOp.getElseBodyBuilder());
                  chunkBody(ce, task);
                });
              });
        });
  }
  buildQueryBlockAttention(b, t, op, bufs, plain);
  return success();
}

// attn.probs: plain loops (an inspection output; its T x T store dominates
// anyway). Row i of head h: visible keys [jLo, jHi) (the same range the
// flash kernel walks), max of the scores, sum of their exponentials, then
// the normalised weights; everything else in the row is zero.
LogicalResult attnc::buildProbs(ImplicitLocOpBuilder &b, CpuTargetAttr, ProbsOp op,
                                const AttentionBuffers &bufs) {
  Value q = bufs.q, k = bufs.k, p = bufs.o, qLens = bufs.qLens, kvLens = bufs.kvLens;
  Value sinks = bufs.sinks, relBias = bufs.relBias, relEmb = bufs.relEmb;
  auto qt = cast<MemRefType>(q.getType());
  int64_t D = qt.getDimSize(3);
  if (!qt.getElementType().isF32() || ShapedType::isDynamic(D))
    return op.emitOpError("attn-to-loops needs f32 operands with a static head_dim");
  const attnc::KeyVisibility vis = attnc::KeyVisibility::of(op);
  const bool f32Probs = cast<MemRefType>(p.getType()).getElementType().isF32();
  auto idx = indexConst;
  auto fc = f32Const;
  Value nb = memref::DimOp::create(b, q, 0), hq = memref::DimOp::create(b, q, 1);
  Value tq = memref::DimOp::create(b, q, 2);
  Value hkv = memref::DimOp::create(b, k, 1), tkv = memref::DimOp::create(b, k, 2);
  Value group = arith::DivUIOp::create(b, hq, hkv);
  // No output buffer (NULL probs in the C ABI): no tasks.
  Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, p);
  Value none = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, ptr, idx(b, 0));
  Value tasks = arith::SelectOp::create(b, none, idx(b, 0),
                                        arith::MulIOp::create(b, nb, hq));
  double scale = op.getScale().convertToDouble();
  const attnc::ScoreMods mods = attnc::ScoreMods::of(op);
  const attnc::RelKey rel = attnc::RelKey::of(op);

  taskLoop(b, tasks, [&](ImplicitLocOpBuilder &c, Value task) {
    Value bi = arith::DivUIOp::create(c, task, hq);
    Value h = arith::RemUIOp::create(c, task, hq);
    const attnc::ScoreMods::Head head = mods.head(c, h, relBias, 1.0);
    Value hk = arith::DivUIOp::create(c, h, group);
    Value qv = qLens ? validLength(c, qLens, bi, tq) : tq;
    Value kvv = kvLens ? validLength(c, kvLens, bi, tkv) : tkv;
    Value off = vis.offset(c, qv, kvv);
    Value zero = idx(c, 0);
    loop(c, zero, tq, {}, [&](ImplicitLocOpBuilder &c1, Value i, ValueRange) {
      loop(c1, zero, tkv, {}, [&](ImplicitLocOpBuilder &c2, Value j, ValueRange) {
        attnc::storeF32(c2, fc(c2, 0.0), p, ValueRange{bi, h, i, j});
        return SmallVector<Value>{};
      });
      Value diag = arith::AddIOp::create(c1, i, off);
      attnc::KeyVisibility::Range keys = vis.row(c1, diag, kvv);
      Value jHi = keys.end, jLo = keys.start;
      // Rows past the valid queries stay zero.
      jHi = arith::SelectOp::create(
          c1, arith::CmpIOp::create(c1, arith::CmpIPredicate::slt, i, qv), jHi, jLo);
      auto score = [&](ImplicitLocOpBuilder &c2, Value j) -> Value {
        // q.k (+ relative_key's q.E[r] (+ k.E[r])), then the scale.
        Value s = rel.scoreDot(
            c2, D,
            [&](ImplicitLocOpBuilder &c3, Value d) -> Value {
              return attnc::loadF32(c3, q, ValueRange{bi, h, i, d});
            },
            [&](ImplicitLocOpBuilder &c3, Value d) -> Value {
              return attnc::loadF32(c3, k, ValueRange{bi, hk, j, d});
            },
            relEmb, diag, j, 1.0);
        Value sc = arith::MulFOp::create(c2, s, fc(c2, scale));
        return mods.any() ? mods.applyAt(c2, sc, head, j, diag, 1.0) : sc;
      };
      scf::ForOp mx = loop(c1, jLo, jHi, ValueRange{fc(c1, -std::numeric_limits<double>::infinity())},
          [&](ImplicitLocOpBuilder &c2, Value j, ValueRange a) {
            return SmallVector<Value>{arith::MaximumFOp::create(c2, a[0], score(c2, j))};
          });
      Value m = mx.getResult(0);
      Value sum0 = fc(c1, 0.0);
      if (sinks) { // the sink: one more term of the denominator
        Value sk = attnc::loadF32(c1, sinks, ValueRange{h});
        m = arith::MaximumFOp::create(c1, m, sk);
        sum0 = math::ExpOp::create(c1, arith::SubFOp::create(c1, sk, m));
      }
      scf::ForOp sum = loop(c1, jLo, jHi, ValueRange{sum0},
          [&](ImplicitLocOpBuilder &c2, Value j, ValueRange a) {
            Value e = math::ExpOp::create(c2, arith::SubFOp::create(c2, score(c2, j), m));
            if (f32Probs)
              memref::StoreOp::create(c2, e, p, ValueRange{bi, h, i, j});
            return SmallVector<Value>{arith::AddFOp::create(c2, a[0], e)};
          });
      Value inv = arith::DivFOp::create(c1, fc(c1, 1.0), sum.getResult(0));
      // A bf16/f16 output is rounded once: the exponential is computed
      // again instead of read back rounded.
      loop(c1, jLo, jHi, {}, [&](ImplicitLocOpBuilder &c2, Value j, ValueRange) {
        Value e = f32Probs ? Value(memref::LoadOp::create(c2, p, ValueRange{bi, h, i, j}))
                           : Value(math::ExpOp::create(
                                 c2, arith::SubFOp::create(c2, score(c2, j), m)));
        attnc::storeF32(c2, arith::MulFOp::create(c2, e, inv), p, ValueRange{bi, h, i, j});
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{};
    });
  });
  return success();
}
