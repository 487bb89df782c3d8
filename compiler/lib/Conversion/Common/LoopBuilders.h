//===- LoopBuilders.h - the kernels attn-to-loops emits ---------*- C++ -*-===//
//
// Each builder emits one phase of the computation as a top-level
// `scf.forall` over independent tasks (attnc-outline-tasks later turns each
// phase into a function a thread pool can call on task ranges). Tile sizes
// come from the function's attn.target (#attn.cpu_target or
// #attn.cuda_target).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CONVERSION_LOOPBUILDERS_H
#define ATTNC_CONVERSION_LOOPBUILDERS_H

#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <optional>
#include <vector>

namespace attnc {

/// An index / f32 constant: the kernel builders' shorthand.
inline mlir::Value indexConst(mlir::ImplicitLocOpBuilder &c, int64_t x) {
  return mlir::arith::ConstantIndexOp::create(c, x);
}
inline mlir::Value f32Const(mlir::ImplicitLocOpBuilder &c, double x) {
  return mlir::arith::ConstantOp::create(c, c.getF32FloatAttr(static_cast<float>(x)));
}

/// Body of a loop: gets the induction variable and the iter_args, returns
/// the values to yield.
using LoopBody = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::ImplicitLocOpBuilder &, mlir::Value, mlir::ValueRange)>;

/// scf.for lb..ub with iter_args `init`, step 1 or `step`.
mlir::scf::ForOp loop(mlir::ImplicitLocOpBuilder &c, mlir::Value lb,
                      mlir::Value ub, mlir::ValueRange init, LoopBody fn);
mlir::scf::ForOp loop(mlir::ImplicitLocOpBuilder &c, mlir::Value lb,
                      mlir::Value ub, mlir::Value step, mlir::ValueRange init,
                      LoopBody fn);

/// scf.index_switch on `v` (no results): `caseFn(builder, k)` builds case k
/// for k in 1..n-1, `defaultFn` (nothing if null) every other value. How
/// kernels pick a variant specialized for a small count (a row tail, a
/// number of masked query vectors).
void switchOnCount(
    mlir::ImplicitLocOpBuilder &c, mlir::Value v, int64_t n,
    llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, int64_t)> caseFn,
    llvm::function_ref<void(mlir::ImplicitLocOpBuilder &)> defaultFn = nullptr);

/// One phase: `scf.forall (%t) in (numTasks)` whose body `fn` builds for
/// task %t. Tasks must be independent (they run on any thread, in any
/// order).
mlir::scf::ForallOp
taskLoop(mlir::ImplicitLocOpBuilder &b, mlir::Value numTasks,
         llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, mlir::Value)> fn);

/// One phase of a task per (sequence, block of `rows` rows) of x, whose
/// dimension 0 is the batch and `seqDim` the sequence ([B, H, T, D]:
/// attn.rope, attn.rms_norm, attn.clip; [B, T, K]: a GEMM's staged
/// input): fn(c, bi, r0, r1) builds the task's body over rows [r0, r1) of
/// sequence bi.
void rowBlockTasks(
    mlir::ImplicitLocOpBuilder &b, mlir::Value x, int64_t seqDim, int64_t rows,
    llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, mlir::Value, mlir::Value, mlir::Value)>
        fn);

/// Storage types (dtype, weight_dtype): buffers may hold bf16 or f16; the
/// kernels compute in float32. These load a scalar or a VL-vector as f32
/// (arith.extf when the buffer is narrower) and store an f32 value or vector
/// rounded to the buffer's type (arith.truncf, round to nearest even).
mlir::Value loadF32(mlir::ImplicitLocOpBuilder &c, mlir::Value mem,
                    mlir::ValueRange at);
mlir::Value loadVecF32(mlir::ImplicitLocOpBuilder &c, mlir::VectorType vt,
                       mlir::Value mem, mlir::ValueRange at);
/// Masked: lanes off in `mask` read as 0.
mlir::Value maskedLoadVecF32(mlir::ImplicitLocOpBuilder &c, mlir::VectorType vt,
                             mlir::Value mem, mlir::ValueRange at, mlir::Value mask);
void storeF32(mlir::ImplicitLocOpBuilder &c, mlir::Value v, mlir::Value mem,
              mlir::ValueRange at);
/// `v` (a float or a vector of floats) converted to `to`'s element type.
mlir::Value convertFloat(mlir::ImplicitLocOpBuilder &c, mlir::Value v, mlir::Type to);

/// AVX512-BF16 helpers for `vdpbf16ps` operands. bf16PairBroadcast: the bf16
/// pair at `at` (and the element after it) of a bf16 buffer, as one 32-bit
/// value broadcast to every lane of a vector<2*vl x bf16>. roundToBf16: a
/// vector<vl x f32> rounded to bf16 in one instruction (vcvtneps2bf16:
/// round to nearest even; denormal inputs become zero).
mlir::Value bf16PairBroadcast(mlir::ImplicitLocOpBuilder &c, mlir::Value src,
                              mlir::ValueRange at, int64_t vl);
mlir::Value roundToBf16(mlir::ImplicitLocOpBuilder &c, mlir::Value v);


/// attn.cache_append in place on x86: one task per (sequence, kv head);
/// rows [pos, pos + Tn) of both caches kc/vc take k/v's rows (pos =
/// positions[b], 0 for a null `pos`), the head-0 task writes lens[b] =
/// pos + Tn; a NULL cache buffer is not written.
void buildCacheAppend(mlir::ImplicitLocOpBuilder &b, mlir::Value k,
                      mlir::Value v, mlir::Value kc, mlir::Value vc,
                      mlir::Value lens, mlir::Value pos);

/// attn.mask_rows in place on x86: one task per sequence; rows
/// t >= lens[b] of y [B, T, N] become zeros.
void buildMaskRows(mlir::ImplicitLocOpBuilder &b, mlir::Value y, mlir::Value lens);

/// attn.rms_norm in place on x [B, H, T, D] (a strided view) with weight w
/// [D] or [H*D] (across_heads, per_head_weight) and bias (null: none):
/// tasks (batch, block of rows); per row and head (or all heads) the mean
/// (center: LayerNorm), the sum of squares in f32, one sqrt, then the
/// products.
/// min(max(v, -limit), limit) for a scalar f32 v (compares and selects).
mlir::Value clampSymmetric(mlir::ImplicitLocOpBuilder &c, mlir::Value v, double limit);
/// attn.clip in place on x [B, H, T, D]: one task per (sequence, block of
/// 16 rows), every head's D values of a row clamped (a compare and a
/// select each side: no libm fminf/fmaxf).
void buildClip(mlir::ImplicitLocOpBuilder &b, attn::ClipOp op, mlir::Value x);
/// attn.temperature's factor (f32) for the row at position pos (index):
/// 1 + attn_scale * ln(floor((pos + 1) / floor_scale) + 1), the floor an
/// integer division, the log in f64 without a libm call.
mlir::Value temperatureFactor(mlir::ImplicitLocOpBuilder &c, attn::TemperatureOp op,
                              mlir::Value pos);
/// attn.temperature in place on x [B, H, T, D]: one task per (sequence,
/// block of 16 rows), each row's factor once, times every head's D values.
void buildTemperature(mlir::ImplicitLocOpBuilder &b, attn::TemperatureOp op, mlir::Value x,
                      mlir::Value positions);
void buildRmsNorm(mlir::ImplicitLocOpBuilder &b, attn::RmsNormOp op, mlir::Value x,
                  mlir::Value w, mlir::Value bias);

/// Which keys the queries see (attn.sdpa's and attn.probs' mask, window and
/// causal_align): the one description every kernel builder asks for a
/// block's key range (x86 flash and decode, attn.probs, the CUDA attention
/// and decode kernels). Of the valid queries [0, qv) and keys [0, kvv),
/// query i sees key j when j <= i + off under a causal mask (off = 0 for
/// top_left, kvv - qv for bottom_right: the last valid query sees the last
/// valid key) and j > i + off - window under a sliding window, and j >=
/// floor((i + off) / C) * C under a chunked mask (chunk C in `window`);
/// a bidirectional window (not causal) sees i + off - window < j < i + off
/// + window; other masks see every valid key.
struct KeyVisibility {
  bool causal = false, windowed = false, chunked = false, topLeft = false;
  bool bidirectional = false; ///< the window reaches window - 1 keys ahead
  int64_t window = 0; ///< the window, or the chunk size when chunked
  template <typename Op> static KeyVisibility of(Op op) {
    KeyVisibility v;
    attn::MaskKind m = op.getMask();
    v.causal = attn::maskIsCausal(m);
    v.bidirectional = attn::maskIsBidirectional(m);
    v.windowed = attn::maskIsSliding(m);
    v.chunked = attn::maskIsChunked(m);
    v.window = v.windowed || v.chunked ? *op.getWindow() : 0;
    v.topLeft = op.getCausalAlign() == attn::CausalAlign::top_left;
    return v;
  }
  /// Rows see keys from a lower edge too (a window or a chunk).
  bool lowEdge() const { return windowed || chunked; }
  /// Rows see keys up to an upper edge (causal, or a bidirectional window):
  /// the element-wise masks compare j with lastKey.
  bool highEdge() const { return causal || bidirectional; }
  /// The last key the row whose diagonal is `diag` sees (unclamped): diag,
  /// or diag + window - 1 for a bidirectional window. `diag` as for
  /// firstKey. Only with highEdge().
  mlir::Value lastKey(mlir::ImplicitLocOpBuilder &c, mlir::Value diag) const;
  /// The first key the row whose diagonal is `diag` sees (unclamped):
  /// diag + 1 - window, or floor(diag / C) * C. `diag` is an index, an
  /// integer or a vector of integers (the element-wise masks); the
  /// chunk's floor is exact for diag >= 0 (a row with diag < 0 sees no
  /// key under the causal part anyway). Only with lowEdge().
  mlir::Value firstKey(mlir::ImplicitLocOpBuilder &c, mlir::Value diag) const;
  /// off: the key position of query 0's diagonal, given the valid lengths.
  mlir::Value offset(mlir::ImplicitLocOpBuilder &c, mlir::Value qv, mlir::Value kvv) const;
  /// The keys of rows [i0, i0 + rows) (rows >= 1) whose first row's
  /// diagonal is diag0 = i0 + off, clamped to [0, kvv): some row sees
  /// [start, end), every row sees [low, full) (empty when low >= full): the
  /// tiles a kernel walks, and the ones it need not mask element-wise.
  struct Range {
    mlir::Value start, end, low, full;
  };
  Range block(mlir::ImplicitLocOpBuilder &c, mlir::Value diag0, mlir::Value rows,
              mlir::Value kvv) const;
  /// One row whose diagonal is diag: its keys [start, end) (low = start,
  /// full = end).
  Range row(mlir::ImplicitLocOpBuilder &c, mlir::Value diag, mlir::Value kvv) const;
};

/// The score modifiers of attn.sdpa and attn.probs (softcap, alibi_slopes,
/// alibi_before_scale; the ops' description says what they mean): the one
/// place every CPU kernel asks how a score changes. Kernels keep scores in
/// `unit`s per natural logit (log2 e for the flash kernels, whose Q is
/// pre-scaled by scale * log2 e; 1 for attn.probs).
struct ScoreMods {
  std::optional<double> softcap;
  std::vector<double> slopes; ///< per query head; empty: no ALiBi
  bool beforeScale = false;
  double scale = 1;
  /// T5: the bucket of rel = j - i' for rel in [-relRange, relRange].
  std::vector<int32_t> relBuckets;
  int64_t relRange = 0;
  /// The vector form may use AVX-512 instructions (vscalefps): set by the
  /// x86 kernels of 16-lane code paths (x86-avx512, x86-avx512-bf16, a host
  /// with AVX-512), whose vectors are then vector<16xf32>.
  bool avx512 = false;
  bool any() const { return softcap.has_value() || !slopes.empty() || !relBuckets.empty(); }
  template <typename Op> static ScoreMods of(Op op) {
    ScoreMods m;
    if (auto c = op.getSoftcap())
      m.softcap = c->convertToDouble();
    if (auto s = op.getAlibiSlopes())
      m.slopes.assign(s->begin(), s->end());
    m.beforeScale = op.getAlibiBeforeScale();
    m.scale = op.getScale().convertToDouble();
    if (auto b = op.getRelBuckets()) {
      m.relBuckets.assign(b->begin(), b->end());
      m.relRange = int64_t(b->size() / 2);
    }
    return m;
  }
  /// T5's table entry for head `head` (index) and rel = j - i' (index),
  /// clamped to the table's range, times `unit` (f32 scalar).
  mlir::Value relBias(mlir::ImplicitLocOpBuilder &c, mlir::Value table, mlir::Value buckets,
                      mlir::Value head, mlir::Value rel, double unit) const;
  /// The bucket table (a constant global, f64 entries) for relBias: get it
  /// where the module is reachable (a task's body, not inside a loop being
  /// built).
  mlir::Value buckets(mlir::ImplicitLocOpBuilder &c) const;
  /// The flash kernel's per-task copy of head `head`'s biases by
  /// d = i' - j: a stack vector BR of relRange*2 + 2*vl + 1 entries with
  /// BR[k] = bias(d = k - (relRange + vl)) * unit, so that a query vector's
  /// biases against key j are the contiguous BR[d0 + relRange + vl ...]
  /// (clamped: the edges hold the saturated buckets).
  mlir::Value relBiasRow(mlir::ImplicitLocOpBuilder &c, mlir::Value table, mlir::Value head,
                         int64_t vl, double unit) const;
  /// Head `head`'s ALiBi slope in score units per key (f32 scalar), or a
  /// null Value without ALiBi: read once per task.
  mlir::Value slope(mlir::ImplicitLocOpBuilder &c, mlir::Value head, double unit) const;
  /// s' = the modified scores `s` (f32 scalar or vector) of keys j for
  /// queries at key position i', `delta` = j - i' (f32, the shape of s).
  mlir::Value apply(mlir::ImplicitLocOpBuilder &c, mlir::Value s, mlir::Value slope,
                    mlir::Value delta, double unit) const;

  /// What a kernel that modifies one score at a time reads once per task
  /// for query head `index`: the slope (null without ALiBi), T5's table
  /// [buckets, Hq] and the bucket table (null without T5's bias).
  struct Head {
    mlir::Value index, slope, table, buckets;
  };
  Head head(mlir::ImplicitLocOpBuilder &c, mlir::Value index, mlir::Value relTable,
            double unit) const;
  /// The scalar entry point: score s (f32) of key j for the query at key
  /// position qpos (index values) with T5's bias added, then apply() with
  /// delta = j - qpos.
  mlir::Value applyAt(mlir::ImplicitLocOpBuilder &c, mlir::Value s, const Head &h,
                      mlir::Value j, mlir::Value qpos, double unit) const;
};

/// BERT's relative_key (attn.sdpa's and attn.probs' rel_emb and
/// rel_key_query): the term q.E[r] (+ k.E[r]) that every kernel adds to
/// q.k before the scale, r = i' - j + P - 1 clamped to the table. The
/// operand is E transposed, ET [D, 2P - 1], so that consecutive queries'
/// entries against one key are consecutive (the x86 kernel's vectors).
struct RelKey {
  int64_t cols = 0; ///< 2P - 1 (0: none)
  bool keyQuery = false;
  template <typename Op> static RelKey of(Op op) {
    RelKey r;
    if (mlir::Value e = op.getRelEmb())
      r.cols = mlir::cast<mlir::ShapedType>(e.getType()).getDimSize(1);
    r.keyQuery = op.getRelKeyQuery();
    return r;
  }
  bool any() const { return cols > 0; }
  /// P - 1: the column of distance 0.
  int64_t center() const { return cols / 2; }
  /// r for the query at key position qpos and key j (index values),
  /// clamped to [0, 2P - 2].
  mlir::Value column(mlir::ImplicitLocOpBuilder &c, mlir::Value qpos, mlir::Value j) const;
  using RowAt = llvm::function_ref<mlir::Value(mlir::ImplicitLocOpBuilder &, mlir::Value)>;
  /// acc + (q + kScale * k) * ET[d][r] (k only with keyQuery): element d
  /// of one score's term, folded into the loop of its q.k.
  mlir::Value fold(mlir::ImplicitLocOpBuilder &c, mlir::Value acc, mlir::Value q, mlir::Value k,
                   mlir::Value table, mlir::Value d, mlir::Value r, double kScale) const;
  /// One score's dot product for the kernels that take one score at a
  /// time: sum_d qAt(d) kAt(d), with fold() for the query at key position
  /// qpos and key j when any() (table: the rel_emb buffer), in one loop.
  mlir::Value scoreDot(mlir::ImplicitLocOpBuilder &c, int64_t D, RowAt qAt, RowAt kAt,
                       mlir::Value table, mlir::Value qpos, mlir::Value j, double kScale) const;
};

/// exp(x) for a scalar f32 x <= 0, clamped at -87 where f32 exp is still
/// normal (the result is then ~1e-38, not a denormal): the CUDA kernels'
/// exponential and ScoreMods' scalar soft-cap. attnc-map-to-gpu makes it
/// the hardware's ex2.approx.ftz and refuses an exp without this clamp.
mlir::Value expClamped(mlir::ImplicitLocOpBuilder &c, mlir::Value x);

/// attn.rope's angles, read by the x86 and the CUDA kernels: the frequency
/// tables in turns per position (constant globals), the pairing and the
/// attention factor. The angle p * inv_freq is reduced exactly in turns (in
/// double, exact for positions < 2^40), sin and cos are Taylor polynomials
/// on [-pi, pi] in double, rounded to float once: no libm call, no table of
/// size max_seq_len.
struct RopeAngles {
  mlir::Value turns, longTurns; ///< longTurns: null without longrope
  int64_t half = 0, longFrom = 0, rotaryDim = 0;
  bool interleaved = false;
  double factor = 1;
  double dynamicFactor = 0; ///< dynamic NTK (0: none)
  int64_t dynamicFrom = 0;
  /// The tables: get them where the module is reachable.
  static RopeAngles of(mlir::ImplicitLocOpBuilder &b, attn::RopeOp op);
  /// What the frequencies depend on in a call: its length L, the batch's
  /// last position + 1 = max_b positions[b] + t (t rows per sequence;
  /// positions null: every sequence at 0), Hugging Face's
  /// max(position_ids) + 1, the same for every sequence of the batch.
  /// useLong: L > long_from (longrope; null without); ntkLog2: log2(s) of
  /// dynamic NTK (0 when L <= dynamic_from; null without). Nothing is
  /// built for the other scalings.
  struct Sequence {
    mlir::Value useLong, ntkLog2;
  };
  Sequence sequence(mlir::ImplicitLocOpBuilder &c, mlir::Value positions, mlir::Value batch,
                    mlir::Value t) const;
  /// Position pos (index) as the f64 the angles take.
  mlir::Value position(mlir::ImplicitLocOpBuilder &c, mlir::Value pos) const;
  /// factor * cos and factor * sin (f32) of pair i (index) at position
  /// posF (f64).
  std::pair<mlir::Value, mlir::Value> cosSin(mlir::ImplicitLocOpBuilder &c, mlir::Value posF,
                                             mlir::Value i, const Sequence &seq) const;
  /// The columns of pair i: (i, i + half) half-split, (2i, 2i + 1) interleaved.
  std::pair<mlir::Value, mlir::Value> columns(mlir::ImplicitLocOpBuilder &c, mlir::Value i) const;
  /// x[at..., i0] and x[at..., i1] rotated in place by (cf, sf).
  void rotate(mlir::ImplicitLocOpBuilder &c, mlir::Value x, mlir::ValueRange at,
              std::pair<mlir::Value, mlir::Value> cols,
              std::pair<mlir::Value, mlir::Value> cs) const;
};

/// The running maximum of the flash kernels' softmax: a > b ? a : b, one
/// maxps on x86 (arith.maximumf's NaN propagation costs five more
/// operations in a loop-carried chain). A NaN score can drop out of the
/// maximum, never out of the result: its exponential is NaN, and so are
/// the row's sum and output.
mlir::Value runningMax(mlir::ImplicitLocOpBuilder &c, mlir::Value a, mlir::Value b);
/// The maximum of a vector's lanes, splat to every lane: log2(lanes)
/// steps of a lane permutation and runningMax. (With a NaN lane the lanes
/// may differ, NaN among them; the softmax's exponentials make the row NaN
/// either way.)
mlir::Value splatMax(mlir::ImplicitLocOpBuilder &c, mlir::Value v);

/// 2^x for a vector of x <= 0 (-inf included): the flash kernels' exp.
/// `avx512` (a vector<16xf32> on an AVX-512 code path): 2^n applied by
/// vscalefps instead of built from n's bits, with the same result.
mlir::Value exp2NonPositive(mlir::ImplicitLocOpBuilder &c, mlir::Value x, bool avx512 = false);

/// attn.rope in place on x [B, H, T, D] (a strided view; unit innermost
/// stride): tasks (batch, block of rows); per row, each pair's cos and sin
/// are computed once (double precision: the angle reduced in turns, then
/// polynomials on [-pi, pi]) and applied to every head. positions
/// (memref<?xi32> or null): each sequence's first position. vl > 0 (a
/// CPU's vector width): half-split pairs are rotated vl at a time (the
/// row's cos and sin into a stack buffer first, then two vectors of a head
/// per step: the same operations on the same values as one pair at a
/// time); interleaved pairs and vl = 0 one pair at a time.
void buildRope(mlir::ImplicitLocOpBuilder &b, attn::RopeOp op, mlir::Value x,
               mlir::Value positions, int64_t vl = 0);

/// lens[b] as an index, or `full` when lens is a null buffer (the C ABI
/// passes NULL for "every token valid"; the caller checked the values).
mlir::Value validLength(mlir::ImplicitLocOpBuilder &c, mlir::Value lens,
                        mlir::Value b, mlir::Value full);

} // namespace attnc

#endif
