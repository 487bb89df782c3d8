//===- Interpreter.cpp - Reference attention in double precision *- C++ -*-===//
//
// The reference semantics every compiled kernel is checked against. Plain
// loops, double precision, no cleverness: if this file and a kernel disagree,
// this file should be obviously right.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/T5Bucket.h"
#include "attnc/runtime/Checked.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>

namespace attnrt {
namespace naive {

/// The mask as a predicate: query i sees key j unless a causal mask hides
/// later keys (j > i + offset) or a window hides keys too far back.
/// A chunked mask (Llama 4) hides keys before the first of the query's
/// chunk: j < floor((i + offset) / window) * window (window = the chunk).
/// A bidirectional window (not causal) also hides keys `window` or more
/// ahead: j >= i + offset + window.
inline bool keyVisible(bool causal, bool windowed, int64_t offset,
                       int64_t window, int64_t i, int64_t j, bool chunked = false,
                       bool bidirectional = false) {
  return !(causal && j > i + offset) && !(windowed && j <= i + offset - window) &&
         !(bidirectional && j >= i + offset + window) &&
         !(chunked && i + offset >= 0 && j < (i + offset) / window * window);
}

// The kernels are templates so that the same loops also run in float
// (interpretFloat32: the "naive32" baseline of the accuracy gate).
template <typename T>
void linearT(const T *x, const T *w, const T *b, T *y, int64_t m, int64_t k,
             int64_t n) {
  // y[i][j] = b[j] + x[i][0] w[0][j] + x[i][1] w[1][j] + ... in that order
  // (t ascending), every output's sum on its own; the j loop innermost
  // reads W's rows in order (a walk down W's columns misses the TLB on
  // every element of a 4096-wide layer).
  for (int64_t i = 0; i < m; ++i) {
    T *yr = y + i * n;
    for (int64_t j = 0; j < n; ++j)
      yr[j] = b ? b[j] : T(0);
    for (int64_t t = 0; t < k; ++t) {
      const T xv = x[i * k + t];
      const T *wr = w + t * n;
      for (int64_t j = 0; j < n; ++j)
        yr[j] += xv * wr[j];
    }
  }
}

/// The causal/window parts of the mask (docs: naive::sdpa).
inline bool isCausal(uint32_t mask) { return attnc_mask_causal(mask); }

/// Sequence b's valid queries and keys, and where query i sits among the
/// keys (i + offset): bottom-right alignment lines the last valid query up
/// with the last valid key.
struct RowRange {
  int64_t qValid, kvValid, offset;
};
inline RowRange rowRange(int64_t b, int64_t tq, int64_t tkv,
                         const int64_t *qValid, const int64_t *kvValid,
                         bool topLeft) {
  RowRange r;
  r.qValid = qValid ? qValid[b] : tq;
  r.kvValid = kvValid ? kvValid[b] : tkv;
  r.offset = topLeft ? 0 : r.kvValid - r.qValid;
  return r;
}

template <typename T>
void sdpaT(const T *q, const T *k, const T *v, T *o, int64_t batch, int64_t hq,
           int64_t hkv, int64_t tq, int64_t tkv, int64_t d, double scale,
           uint32_t mask, bool topLeft, int64_t window, const int64_t *qValid,
           const int64_t *kvValid, T *probs, const ScoreMods &mods = ScoreMods()) {
  assert(hkv > 0 && hq % hkv == 0 && "query heads must be a multiple of kv");
  const int64_t group = hq / hkv;
  const bool causal = isCausal(mask);
  const bool windowed = attnc_mask_sliding(mask) && window > 0;
  const bool chunked = attnc_mask_chunked(mask) && window > 0;
  const bool ahead = attnc_mask_bidirectional(mask) && window > 0;
  std::vector<T> scores(static_cast<size_t>(tkv));
  std::vector<char> visible(static_cast<size_t>(tkv));

  for (int64_t b = 0; b < batch; ++b) {
    const RowRange rr = rowRange(b, tq, tkv, qValid, kvValid, topLeft);
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kvh = h / group;
      const T *qh = q + (b * hq + h) * tq * d;
      const T *kh = k + (b * hkv + kvh) * tkv * d;
      const T *vh = v + (b * hkv + kvh) * tkv * d;
      T *oh = o + (b * hq + h) * tq * d;
      T *ph = probs ? probs + (b * hq + h) * tq * tkv : nullptr;
      for (int64_t i = 0; i < tq; ++i) {
        // Scores and the mask. Padding: only valid queries see anything,
        // and only valid keys are seen.
        T maxScore = -std::numeric_limits<T>::infinity();
        bool any = false;
        for (int64_t j = 0; j < tkv; ++j) {
          bool see = i < rr.qValid && j < rr.kvValid &&
                     keyVisible(causal, windowed, rr.offset, window, i, j, chunked, ahead);
          visible[j] = see;
          if (!see)
            continue;
          T s = 0;
          for (int64_t c = 0; c < d; ++c)
            s += qh[i * d + c] * kh[j * d + c];
          if (mods.relEmb) { // relative_key: + q.E[r] (+ k.E[r])
            const int64_t r = mods.relColumn(i + rr.offset, j);
            for (int64_t c = 0; c < d; ++c)
              s += (qh[i * d + c] + (mods.relKeyQuery ? kh[j * d + c] : T(0))) *
                   T(mods.relEmb[c * mods.relCols + r]);
          }
          if (mods.any())
            s = T(mods.apply(double(s), scale, h, i + rr.offset, j));
          else
            s *= T(scale);
          scores[j] = s;
          if (!any || s > maxScore)
            maxScore = s;
          any = true;
        }
        T *orow = oh + i * d;
        for (int64_t c = 0; c < d; ++c)
          orow[c] = 0;
        T *prow = ph ? ph + i * tkv : nullptr;
        if (prow)
          for (int64_t j = 0; j < tkv; ++j)
            prow[j] = 0;
        if (!any)
          continue; // Every key masked: the row is zero.
        // Softmax with the maximum subtracted, then the weighted sum of V;
        // a sink is one more term of the denominator.
        const T sink = mods.sinks ? T(mods.sinks[h]) : T(0);
        if (mods.sinks && sink > maxScore)
          maxScore = sink;
        T sum = mods.sinks ? std::exp(sink - maxScore) : T(0);
        for (int64_t j = 0; j < tkv; ++j) {
          if (!visible[j])
            continue;
          scores[j] = std::exp(scores[j] - maxScore);
          sum += scores[j];
        }
        for (int64_t j = 0; j < tkv; ++j) {
          if (!visible[j])
            continue;
          T p = scores[j] / sum;
          if (prow)
            prow[j] = p;
          for (int64_t c = 0; c < d; ++c)
            orow[c] += p * vh[j * d + c];
        }
      }
    }
  }
}

void linear(const double *x, const double *w, const double *b, double *y,
            int64_t m, int64_t k, int64_t n) {
  linearT<double>(x, w, b, y, m, k, n);
}

/// The rotation of pair (i0, i1) of row t: calls fn(i0, i1, c, s) with c, s
/// = cos, sin of the angle times the attention factor (double precision).
/// Row t of sequence b is at position start[b] + t and uses the frequencies
/// of the call's length, the batch's: max_b start[b] + (callEnd ? callEnd[t]
/// : seq) (Hugging Face's max(position_ids) + 1).
template <typename Fn>
void forEachRopePair(int64_t batch, int64_t seq, const RopeParams &r,
                     const int64_t *start, const int64_t *callEnd, Fn fn) {
  if (r.style == ATTNC_ROPE_NONE)
    return;
  const int64_t half = r.rotaryDim / 2;
  int64_t last = 0;
  for (int64_t b = 0; start && b < batch; ++b)
    last = std::max(last, start[b]);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t s0 = start ? start[b] : 0;
    std::vector<double> freq;
    int64_t freqLen = -1;
    for (int64_t t = 0; t < seq; ++t) {
      const int64_t len = last + (callEnd ? callEnd[t] : seq);
      if (len != freqLen) {
        freq = r.invFreqAt(len);
        freqLen = len;
      }
      for (int64_t i = 0; i < half; ++i) {
        const double a = double(s0 + t) * freq[size_t(i)];
        const int64_t i0 = r.style == ATTNC_ROPE_INTERLEAVED ? 2 * i : i;
        const int64_t i1 = r.style == ATTNC_ROPE_INTERLEAVED ? 2 * i + 1 : i + half;
        fn(b, t, i0, i1, std::cos(a) * r.attentionFactor, std::sin(a) * r.attentionFactor);
      }
    }
  }
}

template <typename T>
void ropeT(T *x, int64_t batch, int64_t heads, int64_t seq, int64_t d, const RopeParams &r,
           const int64_t *start, const int64_t *callEnd = nullptr) {
  forEachRopePair(batch, seq, r, start, callEnd,
                  [&](int64_t b, int64_t t, int64_t i0, int64_t i1, double c, double s) {
                    for (int64_t h = 0; h < heads; ++h) {
                      T *row = x + ((b * heads + h) * seq + t) * d;
                      const T x0 = row[i0], x1 = row[i1];
                      row[i0] = T(x0 * T(c) - x1 * T(s));
                      row[i1] = T(x1 * T(c) + x0 * T(s));
                    }
                  });
}

template <typename T>
void clipT(T *x, int64_t n, double limit) {
  const T hi = T(limit), lo = T(-limit);
  for (int64_t i = 0; i < n; ++i)
    x[i] = x[i] > hi ? hi : x[i] < lo ? lo : x[i];
}

template <typename T>
void rmsNormT(T *x, const T *w, int64_t batch, int64_t heads, int64_t seq, int64_t d,
              const NormParams &np, const T *bias) {
  const bool across = np.acrossHeads;
  const int64_t groups = across ? 1 : heads, per = across ? heads : 1;
  const int64_t n = per * d;
  // The weight (and bias) entry of head g * per + hh, column c.
  auto wi = [&](int64_t g, int64_t hh, int64_t c) {
    return (across ? hh : np.perHead ? g : 0) * d + c;
  };
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t g = 0; g < groups; ++g) {
        auto at = [&](int64_t hh, int64_t c) -> T & {
          return x[((b * heads + g * per + hh) * seq + t) * d + c];
        };
        T mean = 0;
        if (np.center) {
          for (int64_t hh = 0; hh < per; ++hh)
            for (int64_t c = 0; c < d; ++c)
              mean += at(hh, c);
          mean /= T(n);
        }
        T ss = 0;
        for (int64_t hh = 0; hh < per; ++hh)
          for (int64_t c = 0; c < d; ++c) {
            const T v = at(hh, c) - mean;
            ss += v * v;
          }
        const T r = T(1) / std::sqrt(ss / T(n) + T(np.eps));
        for (int64_t hh = 0; hh < per; ++hh)
          for (int64_t c = 0; c < d; ++c) {
            T &v = at(hh, c);
            const int64_t i = wi(g, hh, c);
            v = (v - mean) * r * ((np.noWeight ? T(1) : w[i]) + T(np.offset)) +
                (bias ? bias[i] : T(0));
          }
      }
}

int32_t t5Bucket(int64_t rel, int64_t nb, int64_t maxDistance, bool bidirectional) {
  return attnc::t5RelativeBucket(rel, nb, maxDistance, bidirectional);
}

void clip(double *x, int64_t n, double limit) { clipT<double>(x, n, limit); }

void rmsNorm(double *x, const double *w, int64_t batch, int64_t heads, int64_t seq,
             int64_t d, const NormParams &np, const double *bias) {
  rmsNormT<double>(x, w, batch, heads, seq, d, np, bias);
}

NormParams normParamsOf(const BlockParams &p) {
  NormParams np;
  np.eps = p.qkNormEps;
  np.offset = p.qkNormOffset;
  np.acrossHeads = (p.qkNorm & ATTNC_QK_NORM_WIDTH_MASK) == ATTNC_QK_NORM_PROJECTION;
  np.center = (p.qkNorm & ATTNC_QK_NORM_LAYER) != 0;
  np.perHead = (p.qkNorm & ATTNC_QK_NORM_PER_HEAD) != 0;
  np.noWeight = (p.qkNorm & ATTNC_QK_NORM_NO_WEIGHT) != 0;
  return np;
}

void rope(double *x, int64_t batch, int64_t heads, int64_t seq, int64_t d,
          const RopeParams &r, const int64_t *start) {
  ropeT<double>(x, batch, heads, seq, d, r, start);
}

void sdpa(const double *q, const double *k, const double *v, double *o,
          int64_t batch, int64_t hq, int64_t hkv, int64_t tq, int64_t tkv,
          int64_t d, double scale, uint32_t mask, bool topLeft,
          int64_t window, const int64_t *qValid, const int64_t *kvValid,
          double *probs, const ScoreMods &mods) {
  sdpaT<double>(q, k, v, o, batch, hq, hkv, tq, tkv, d, scale, mask, topLeft,
                window, qValid, kvValid, probs, mods);
}

} // namespace naive

std::vector<float> randomNormal(int64_t n, std::mt19937_64 &rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (n < 0)
    return {};
  std::vector<float> v(static_cast<size_t>(n));
  for (float &f : v)
    f = normal(rng);
  return v;
}

std::vector<std::vector<float>>
randomWeights(const std::vector<TensorShape> &tensors, std::mt19937_64 &rng) {
  std::vector<std::vector<float>> out;
  for (const TensorShape &t : tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape)
      if (!checkedMul(n, d, n))
        return {}; // callers pass validated shapes
    float scale = 1.0f / std::sqrt(static_cast<float>(
                             t.shape.size() == 2 ? std::min(t.shape[0], t.shape[1])
                                                 : 16));
    std::vector<float> v = randomNormal(n, rng);
    for (float &f : v)
      f *= scale;
    out.push_back(std::move(v));
  }
  return out;
}

/// The block's score modifiers as the naive kernels take them (pointing
/// into p, which must outlive the result).
naive::ScoreMods scoreModsOf(const BlockParams &p) {
  naive::ScoreMods m;
  m.softcap = p.softcap;
  m.slopes = p.alibiSlopes.empty() ? nullptr : p.alibiSlopes.data();
  m.beforeScale = p.alibiBeforeScale;
  return m;
}

/// Role `role` of the block in compute layout ([in, out] for a projection
/// weight, a vector for a bias or norm weight, [buckets, heads] for T5's
/// table), as doubles read straight from the storage tensors through the
/// block's one layout table (Block.h); empty when the block has no such
/// role.
static std::vector<double> roleOf(const StorageLayout &layout,
                           const std::vector<const float *> &weights,
                           const char *role) {
  const RoleRect *r = layout.find(role);
  if (!r || r->tensor < 0 || static_cast<size_t>(r->tensor) >= weights.size())
    return {};
  const float *t = weights[static_cast<size_t>(r->tensor)];
  const std::vector<int64_t> &shape = layout.tensors[static_cast<size_t>(r->tensor)].shape;
  const int64_t stride = shape.back();
  std::vector<double> m(static_cast<size_t>(r->rows * r->cols));
  for (int64_t k = 0; k < r->rows; ++k)
    for (int64_t n = 0; n < r->cols; ++n)
      m[k * r->cols + n] = r->vector       ? t[r->colOff + n]
                           : r->transposed ? t[(r->rowOff + n) * stride + r->colOff + k]
                                           : t[(r->rowOff + k) * stride + r->colOff + n];
  return m;
}

/// The block's T5 bucket table (rel in [-max_distance, max_distance]).
std::vector<int32_t> t5Buckets(const BlockParams &p) {
  std::vector<int32_t> b;
  for (int64_t rel = -p.t5MaxDistance; p.t5Buckets && rel <= p.t5MaxDistance; ++rel)
    b.push_back(naive::t5Bucket(rel, p.t5Buckets, p.t5MaxDistance, p.t5Bidirectional));
  return b;
}

/// A block's score modifiers, sinks, T5 table and relative_key table as the
/// naive kernels take them (naive::ScoreMods points into the tables this
/// owns).
struct BlockMods {
  std::vector<double> sinks, relTable, relEmb;
  std::vector<int32_t> buckets;
  naive::ScoreMods mods;
  BlockMods(const BlockParams &p, const std::vector<const float *> &weights) {
    mods = scoreModsOf(p);
    if (p.sinks)
      sinks = roleOf(storageLayout(p), weights, "ss");
    mods.sinks = sinks.empty() ? nullptr : sinks.data();
    if (p.t5Buckets)
      relTable = roleOf(storageLayout(p), weights, "rb");
    buckets = t5Buckets(p);
    if (!relTable.empty()) {
      mods.relBias = relTable.data();
      mods.relBuckets = buckets.data();
      mods.relRange = p.t5MaxDistance;
      mods.hq = p.heads;
    }
    if (p.relKeyPositions)
      relEmb = roleOf(storageLayout(p), weights, "re");
    if (!relEmb.empty()) {
      mods.relEmb = relEmb.data();
      mods.relCols = 2 * p.relKeyPositions - 1;
      mods.relKeyQuery = p.relKeyQuery;
    }
  }
  BlockMods(const BlockMods &) = delete;
  BlockMods &operator=(const BlockMods &) = delete;
};

namespace {

/// Projection weights in [in, out] form (what naive::linear takes).
struct Projections {
  std::vector<double> wq, wk, wv, wo; // [d, qW], [d, kvW], [d, kvW], [qW, d]
  std::vector<double> bq, bk, bv, bo; // empty when !bias
  std::vector<double> nq, nk;         // QK-norm weights (empty: none)
  std::vector<double> nbq, nbk;       // QK-norm biases (empty: none)
};

Projections unpack(const BlockParams &p,
                   const std::vector<const float *> &weights) {
  const StorageLayout layout = storageLayout(p);
  assert(weights.size() == layout.tensors.size() && "one buffer per storage tensor");
  Projections r;
  r.wq = roleOf(layout, weights, "wq");
  r.wk = roleOf(layout, weights, "wk");
  r.wv = roleOf(layout, weights, "wv");
  r.wo = roleOf(layout, weights, "wo");
  r.bq = roleOf(layout, weights, "bq");
  r.bk = roleOf(layout, weights, "bk");
  r.bv = roleOf(layout, weights, "bv");
  r.bo = roleOf(layout, weights, "bo");
  r.nq = roleOf(layout, weights, "nq");
  r.nk = roleOf(layout, weights, "nk");
  r.nbq = roleOf(layout, weights, "nbq");
  r.nbk = roleOf(layout, weights, "nbk");
  return r;
}

/// [B, T, H*D] -> [B, H, T, D].
template <typename T>
std::vector<T> splitHeads(const std::vector<T> &x, int64_t batch, int64_t seq,
                          int64_t heads, int64_t hd) {
  std::vector<T> r(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t c = 0; c < hd; ++c)
          r[((b * heads + h) * seq + t) * hd + c] =
              x[(b * seq + t) * heads * hd + h * hd + c];
  return r;
}

/// [B, H, T, D] -> [B, T, H*D].
template <typename T>
std::vector<T> mergeHeads(const std::vector<T> &x, int64_t batch, int64_t seq,
                          int64_t heads, int64_t hd) {
  std::vector<T> r(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t c = 0; c < hd; ++c)
          r[(b * seq + t) * heads * hd + h * hd + c] =
              x[((b * heads + h) * seq + t) * hd + c];
  return r;
}

template <typename T> const T *orNull(const std::vector<T> &v) {
  return v.empty() ? nullptr : v.data();
}

template <typename T> std::vector<T> as(const std::vector<double> &v) {
  return std::vector<T>(v.begin(), v.end());
}

} // namespace

namespace {

/// True when the block's shapes are sane and every buffer of a
/// [batch*seqLen, width] activation (width up to d_model, the QKV width or
/// out_dim), of the K/V input's [batch*kvSeqLen, width] ones and of the
/// attention weights [batch, heads, seqLen, kvSeqLen] fits in 64-bit byte
/// counts of doubles; rows is batch*seqLen, kvRows batch*kvSeqLen.
bool sizesOk(const BlockParams &p, int64_t batch, int64_t seqLen,
             int64_t kvSeqLen, int64_t &rows, int64_t &kvRows) {
  int64_t qW, kvW, width, bytes;
  if (p.dModel <= 0 || p.heads <= 0 || p.kvHeads <= 0 || p.headDim <= 0 ||
      p.heads % p.kvHeads != 0 || batch < 1 || seqLen < 1 || kvSeqLen < 1)
    return false;
  if (!checkedMul(p.heads, p.headDim, qW) ||
      !checkedMul(p.kvHeads, p.headDim, kvW) ||
      !checkedSum({qW, kvW, kvW, p.dModel}, width) ||
      !checkedMul(batch, seqLen, rows) ||
      !checkedMul(batch, kvSeqLen, kvRows) ||
      !checkedProduct({rows, width, 8}, bytes) ||
      !checkedProduct({kvRows, width, 8}, bytes) ||
      !checkedProduct({rows, p.heads, kvSeqLen, 8}, bytes))
    return false;
  return true;
}

/// A block's run, once its inputs are checked: the K/V source and length,
/// and the valid lengths as the naive kernels take them (empty: all valid).
struct Run {
  int64_t rows = 0, kvRows = 0, kvSeq = 0;
  const float *kvSource = nullptr;
  std::vector<int64_t> qValid, kvValid;
  /// Each sequence's first position (rotary embedding), empty: 0.
  std::vector<int64_t> start;
  const int64_t *qStart() const { return start.empty() ? nullptr : start.data(); }
  /// The keys' first positions: the queries' for self-attention.
  const int64_t *q() const { return qValid.empty() ? nullptr : qValid.data(); }
  const int64_t *kv() const {
    return kvValid.empty() ? nullptr : kvValid.data();
  }
  bool cross = false;
  const int64_t *kvStart() const { return cross ? nullptr : qStart(); }
  /// Per row, the end of the call that computed it (VariantInputs::
  /// ropeCallEnds; empty: one call).
  std::vector<int64_t> callEnd;
  const int64_t *qCallEnd() const { return callEnd.empty() ? nullptr : callEnd.data(); }
  const int64_t *kvCallEnd() const { return cross ? nullptr : qCallEnd(); }
};

/// Checks everything interpret() needs; false when it cannot run.
bool prepare(const BlockParams &p, const std::vector<const float *> &weights,
             const float *x, int64_t batch, int64_t seqLen,
             const VariantInputs &in, Run &r) {
  if (p.layout > ATTNC_LAYOUT_SEPARATE ||
      weights.size() != storageTensors(p).size() || !x ||
      !checkVariantInputs(p, batch, seqLen, in).empty())
    return false;
  r.kvSeq = p.cross ? in.kvSeqLen : seqLen;
  r.kvSource = p.cross ? static_cast<const float *>(in.xKv) : x;
  r.cross = p.cross;
  if (in.positions)
    r.start.assign(in.positions, in.positions + batch);
  if (in.ropeCallEnds)
    r.callEnd.assign(in.ropeCallEnds, in.ropeCallEnds + seqLen);
  if (!sizesOk(p, batch, seqLen, r.kvSeq, r.rows, r.kvRows))
    return false;
  if (in.lengths)
    r.qValid.assign(in.lengths, in.lengths + batch);
  // Self-attention: the valid tokens are the valid keys too.
  if (!p.cross && in.lengths)
    r.kvValid = r.qValid;
  if (p.cross && in.kvLengths)
    r.kvValid.assign(in.kvLengths, in.kvLengths + batch);
  return true;
}

/// Zeroes the rows t >= qValid[b] of a [batch, seq, width] tensor: padded
/// queries give zero output rows (not the output bias).
template <typename T>
void zeroPaddedRows(std::vector<T> &y, const Run &r, int64_t batch,
                    int64_t seq, int64_t width) {
  if (r.qValid.empty())
    return;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = r.qValid[size_t(b)]; t < seq; ++t)
      for (int64_t c = 0; c < width; ++c)
        y[size_t((b * seq + t) * width + c)] = 0;
}

/// Llama 4's temperature tuning on the queries x [B, H, T, D]: row t of
/// sequence b (at start[b] + t; start null: t) times p.temperatureAt(pos);
/// with ex (the bound path), the errors scaled likewise plus the kernel's
/// rounding of the factor to float32 and of the product (2u |x'|).
template <typename T>
void temperatureT(T *x, double *ex, const BlockParams &p, int64_t batch, int64_t heads,
                  int64_t seq, const int64_t *start) {
  if (p.temperatureFloorScale <= 0)
    return;
  const int64_t d = p.headDim;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t) {
      const double f = p.temperatureAt((start ? start[b] : 0) + t);
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t c = 0; c < d; ++c) {
          const size_t i = size_t(((b * heads + h) * seq + t) * d + c);
          x[i] = T(double(x[i]) * f);
          if (ex)
            ex[i] = ex[i] * f + 2 * (0x1p-24 + 0x1p-53) * std::fabs(double(x[i]));
        }
    }
}

template <typename T>
std::vector<double> interpretT(const BlockParams &p,
                               const std::vector<const float *> &weights,
                               const float *x, int64_t batch, int64_t seqLen,
                               const VariantInputs &in,
                               std::vector<double> *probs) {
  const int64_t d = p.dModel;
  const int64_t qW = p.heads * p.headDim;
  const int64_t kvW = p.kvHeads * p.headDim;
  Run run;
  if (!prepare(p, weights, x, batch, seqLen, in, run))
    return {}; // Not a block we can run; callers validate first.
  const int64_t rows = run.rows, kvRows = run.kvRows, kvSeq = run.kvSeq;
  Projections w = unpack(p, weights);
  std::vector<T> wq = as<T>(w.wq), wk = as<T>(w.wk), wv = as<T>(w.wv),
                 wo = as<T>(w.wo), bq = as<T>(w.bq), bk = as<T>(w.bk),
                 bv = as<T>(w.bv), bo = as<T>(w.bo);

  std::vector<T> xd(x, x + rows * d);
  // K/V's source: x_kv for cross-attention, else x itself (no second copy).
  std::vector<T> xkvCopy;
  if (p.cross)
    xkvCopy.assign(run.kvSource, run.kvSource + kvRows * d);
  const T *xkv = p.cross ? xkvCopy.data() : xd.data();
  std::vector<T> q(static_cast<size_t>(rows * qW));
  std::vector<T> k(static_cast<size_t>(kvRows * kvW));
  std::vector<T> v(static_cast<size_t>(kvRows * kvW));
  naive::linearT<T>(xd.data(), wq.data(), orNull(bq), q.data(), rows, d, qW);
  naive::linearT<T>(xkv, wk.data(), orNull(bk), k.data(), kvRows, d,
                    kvW);
  naive::linearT<T>(xkv, wv.data(), orNull(bv), v.data(), kvRows, d,
                    kvW);

  std::vector<T> qh = splitHeads(q, batch, seqLen, p.heads, p.headDim);
  std::vector<T> kh = splitHeads(k, batch, kvSeq, p.kvHeads, p.headDim);
  std::vector<T> vh = splitHeads(v, batch, kvSeq, p.kvHeads, p.headDim);
  // clip_qkv before a QK-norm, or (OLMoE) after it.
  const bool norm = p.qkNorm != ATTNC_QK_NORM_NONE;
  auto clipAll = [&] {
    if (p.clipQkv > 0)
      for (std::vector<T> *t : {&qh, &kh, &vh})
        naive::clipT<T>(t->data(), int64_t(t->size()), p.clipQkv);
  };
  if (!norm)
    clipAll();
  if (norm) {
    const naive::NormParams np = naive::normParamsOf(p);
    std::vector<T> nq = as<T>(w.nq), nk = as<T>(w.nk), nbq = as<T>(w.nbq),
                   nbk = as<T>(w.nbk);
    naive::rmsNormT<T>(qh.data(), nq.data(), batch, p.heads, seqLen, p.headDim, np,
                       nbq.empty() ? nullptr : nbq.data());
    naive::rmsNormT<T>(kh.data(), nk.data(), batch, p.kvHeads, kvSeq, p.headDim, np,
                       nbk.empty() ? nullptr : nbk.data());
    clipAll();
  }
  naive::ropeT<T>(qh.data(), batch, p.heads, seqLen, p.headDim, p.rope, run.qStart(),
                  run.qCallEnd());
  naive::ropeT<T>(kh.data(), batch, p.kvHeads, kvSeq, p.headDim, p.rope, run.kvStart(),
                  run.kvCallEnd());
  temperatureT<T>(qh.data(), nullptr, p, batch, p.heads, seqLen, run.qStart());
  std::vector<T> oh(qh.size());
  std::vector<T> ph(probs ? size_t(batch * p.heads * seqLen * kvSeq) : 0);
  double scale = p.scale != 0 ? p.scale : 1.0 / std::sqrt(double(p.headDim));
  const BlockMods blockMods(p, weights);
  const naive::ScoreMods &mods = blockMods.mods;
  naive::sdpaT<T>(qh.data(), kh.data(), vh.data(), oh.data(), batch, p.heads,
                  p.kvHeads, seqLen, kvSeq, p.headDim, scale, p.mask,
                  p.topLeft, p.window, run.q(), run.kv(),
                  probs ? ph.data() : nullptr, mods);
  if (probs)
    probs->assign(ph.begin(), ph.end());
  std::vector<T> o = mergeHeads(oh, batch, seqLen, p.heads, p.headDim);
  if (!p.outProj) {
    zeroPaddedRows(o, run, batch, seqLen, qW);
    return std::vector<double>(o.begin(), o.end());
  }

  std::vector<T> y(static_cast<size_t>(rows * d));
  naive::linearT<T>(o.data(), wo.data(), orNull(bo), y.data(), rows, qW, d);
  zeroPaddedRows(y, run, batch, seqLen, d);
  return std::vector<double>(y.begin(), y.end());
}
} // namespace

std::vector<double> interpret(const BlockParams &p,
                              const std::vector<const float *> &weights,
                              const float *x, int64_t batch, int64_t seqLen) {
  return interpret(p, weights, x, batch, seqLen, VariantInputs(), nullptr);
}

/// A bf16/f16 block computes on its inputs and weights as stored: copies
/// of them rounded to dtype and weight_dtype (RNE, as the kernels' callers
/// convert), which the reference then takes as exact.
struct StorageRounded {
  std::vector<std::vector<float>> w;
  std::vector<const float *> weights;
  std::vector<float> x, xKv;
  VariantInputs in;
  const float *xp = nullptr;

  bool apply(const BlockParams &p, const std::vector<const float *> &wIn,
             const float *xIn, int64_t batch, int64_t seqLen,
             const VariantInputs &inIn) {
    if ((p.dtype == ATTNC_DTYPE_F32 && p.weightDtype == ATTNC_DTYPE_F32) || !xIn ||
        wIn.size() != storageTensors(p).size() ||
        !checkVariantInputs(p, batch, seqLen, inIn).empty())
      return false;
    Run run;
    if (!prepare(p, wIn, xIn, batch, seqLen, inIn, run))
      return false;
    auto rounded = [](uint32_t dtype, const float *src, int64_t n) {
      std::vector<float> out(src, src + n);
      for (float &v : out)
        v = roundTo(dtype, v);
      return out;
    };
    std::vector<TensorShape> shapes = storageTensors(p);
    for (size_t i = 0; i < shapes.size(); ++i) {
      int64_t n = 1;
      for (int64_t s : shapes[i].shape)
        n *= s;
      w.push_back(rounded(p.weightDtype, wIn[i], n));
    }
    for (const auto &t : w)
      weights.push_back(t.data());
    x = rounded(p.dtype, xIn, run.rows * p.dModel);
    xp = x.data();
    in = inIn;
    if (p.cross && inIn.xKv) {
      xKv = rounded(p.dtype, static_cast<const float *>(inIn.xKv), run.kvRows * p.dModel);
      in.xKv = xKv.data();
    }
    return true;
  }
};

std::vector<double> interpret(const BlockParams &p,
                              const std::vector<const float *> &weights,
                              const float *x, int64_t batch, int64_t seqLen,
                              const VariantInputs &in,
                              std::vector<double> *probs) {
  StorageRounded r;
  if (r.apply(p, weights, x, batch, seqLen, in))
    return interpretT<double>(p, r.weights, r.xp, batch, seqLen, r.in, probs);
  return interpretT<double>(p, weights, x, batch, seqLen, in, probs);
}

//===----------------------------------------------------------------------===//
// The float32 error bound (docs/checking.md)
//===----------------------------------------------------------------------===//

namespace {

/// Unit roundoff of float32, plus that of double so that the bound also
/// covers the reference's own rounding.
constexpr double kU = 0x1p-24 + 0x1p-53;

double gammaN(int64_t n) {
  double nu = double(n) * kU;
  return nu < 0.5 ? nu / (1 - nu) : std::numeric_limits<double>::infinity();
}

/// The error model (docs/checking.md). Rigorous: the worst case, gamma(n)
/// per length-n reduction and errors added with their absolute values.
/// Probabilistic (Higham & Mary 2019): rounding errors as independent,
/// mean-zero random variables; a length-n reduction is within
/// gammaTilde(n) = expm1(lambda sqrt(n) u + n u^2 / (1 - u)) times its sum
/// of absolute products except with probability 2n exp(-lambda^2 (1-u)^2/2),
/// and independent errors propagate as a root sum of squares.
struct Model {
  bool rigorous;
  double lambda;
  /// The relative rounding bound of a length-n reduction.
  double g(int64_t n) const {
    if (rigorous)
      return gammaN(n);
    return std::expm1(lambda * std::sqrt(double(n)) * kU +
                      double(n) * kU * kU / (1 - kU));
  }
  /// How `count` independent error sources of one ulp each add up (never
  /// more than their plain sum).
  double count(int64_t n) const {
    return rigorous ? double(n)
                    : std::min(double(n), lambda * std::sqrt(double(n)));
  }
  /// Accumulates one propagated error term (a bound for one source).
  void add(double &acc, double term) const {
    acc += rigorous ? term : term * term;
  }
  double total(double acc) const { return rigorous ? acc : std::sqrt(acc); }
};

/// The partial sums of one reduction, for the probabilistic model's
/// rounding term: a sum of n terms rounds once per addition (error u times
/// the partial sum) and once per product (u times the product). The
/// kernel's order is unknown; forward and reverse partial sums of the
/// reference's order stand for it, whichever is larger.
struct PartialSums {
  double sumS = 0, sumS2 = 0, prod2 = 0, last = 0;
  int64_t n = 0;
  /// Before adding `term` to the running sum `before`.
  void add(double before, double term) {
    sumS += before;
    sumS2 += before * before;
    prod2 += term * term;
    ++n;
  }
  /// lambda * u * sqrt(max(forward, reverse) sum of squared partial sums +
  /// products * sum of squared products) for the final value `total` (the
  /// default 2: a product and a scale folded into a weight).
  double rounding(double lambda, double total, int products = 2) const {
    double fwd = sumS2 + total * total;
    double rev = double(n) * total * total - 2 * total * sumS + sumS2;
    double worst = std::max(fwd, std::max(rev, 0.0));
    return lambda * kU * std::sqrt(worst + double(products) * prod2);
  }
};

/// y = x W + b (as naive::linear, same loop order, so y is bit-identical to
/// the reference) and, per element, a bound on |float32 result - exact|
/// when x carries absolute errors ex (nullptr: x exact): the errors
/// propagated through W plus g(k+2) times the sum of absolute products (the
/// +2: the bias add and a scale folded into the weights). The inputs'
/// errors are correlated within groups of `group` consecutive inputs (one
/// attention head) and independent across groups: they add linearly within
/// a group, and across groups as the model says. `rowExtra`, when set,
/// may fill extra[g * n + j] (groups g of the row's inputs) with an error
/// of output j already carried through W exactly (added to group g's
/// propagated error) and return true; `exMag`, when not null, holds the
/// inputs' whole errors for the magnitude of the rounding term (ex may
/// leave out what rowExtra carries).
void linearBound(const Model &model, const double *x, const double *ex,
                 const double *w, const double *b, double *y, double *ey,
                 int64_t m, int64_t k, int64_t n, int64_t group,
                 const std::function<void(double)> &rowDone,
                 const std::function<bool(int64_t, double *)> &rowExtra = {},
                 const double *exMag = nullptr) {
  const double g = model.g(k + 2);
  const int64_t groups = (k + group - 1) / group;
  std::vector<double> extra(rowExtra ? size_t(groups * n) : 0);
  // Each output's sums run over t in order, as naive::linear's; the j loop
  // innermost reads W's rows in order (linearT).
  const size_t cols = static_cast<size_t>(n);
  std::vector<double> mag(cols), prop(cols), groupProp(cols);
  // PartialSums per output, as columns (n is k for every one of them)
  std::vector<double> sumS(model.rigorous ? 0 : cols), sumS2(sumS.size()),
      prod2(sumS.size());
  for (int64_t i = 0; i < m; ++i) {
    if (i > 0 && rowDone)
      rowDone(double(k) * double(n));
    const bool hasExtra = rowExtra && rowExtra(i, extra.data());
    double *acc = y + i * n;
    for (int64_t j = 0; j < n; ++j) {
      acc[j] = b ? b[j] : 0.0;
      mag[size_t(j)] = b ? std::fabs(b[j]) : 0.0;
      prop[size_t(j)] = groupProp[size_t(j)] = 0;
    }
    std::fill(sumS.begin(), sumS.end(), 0.0);
    std::fill(sumS2.begin(), sumS2.end(), 0.0);
    std::fill(prod2.begin(), prod2.end(), 0.0);
    for (int64_t t = 0; t < k; ++t) {
      const double xv = x[i * k + t];
      const double e = ex ? ex[i * k + t] : 0.0;
      const double eMag = exMag ? exMag[i * k + t] : e;
      const double ax = std::fabs(xv) + eMag;
      const double *wr = w + t * n;
      for (int64_t j = 0; j < n; ++j) {
        const double wv = wr[j], term = xv * wv;
        if (!model.rigorous) { // PartialSums::add, before the term is added
          const double before = acc[j];
          sumS[size_t(j)] += before;
          sumS2[size_t(j)] += before * before;
          prod2[size_t(j)] += term * term;
        }
        acc[j] += term;
        mag[size_t(j)] += ax * std::fabs(wv);
        groupProp[size_t(j)] += e * std::fabs(wv);
      }
      if ((t + 1) % group == 0 || t + 1 == k) {
        const double *ext = hasExtra ? extra.data() + size_t((t / group) * n) : nullptr;
        for (int64_t j = 0; j < n; ++j) {
          double gp = groupProp[size_t(j)];
          if (ext)
            gp += ext[j];
          model.add(prop[size_t(j)], gp);
          groupProp[size_t(j)] = 0;
        }
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      // Probabilistic: the model's rounding term, never more than the
      // worst case.
      double rounding = g * mag[size_t(j)];
      if (!model.rigorous) {
        PartialSums ps;
        ps.sumS = sumS[size_t(j)];
        ps.sumS2 = sumS2[size_t(j)];
        ps.prod2 = prod2[size_t(j)];
        ps.n = k;
        rounding = std::min(ps.rounding(model.lambda, acc[j]), gammaN(k + 2) * mag[size_t(j)]);
      }
      ey[i * n + j] = model.total(prop[size_t(j)]) + rounding;
    }
  }
  if (m > 0 && rowDone)
    rowDone(double(k) * double(n));
}

/// QK-norm (naive::rmsNorm) on x [B, H, T, D] with its bound: the input
/// errors (LayerNorm: plus the mean's, their average) scaled by |w +
/// offset| / rms, plus their first-order effect on the rms itself, plus
/// the kernel's rounding ((n + 8) u of each output: a length-n sum of
/// squares, the square root and three products; LayerNorm another n for
/// the mean and its subtraction; a bias one more rounding of the sum).
void normBound(std::vector<double> &x, std::vector<double> &ex,
               const std::vector<double> &w, const std::vector<double> &bias,
               const BlockParams &p, int64_t batch, int64_t heads, int64_t seq) {
  if (p.qkNorm == ATTNC_QK_NORM_NONE)
    return;
  const naive::NormParams np = naive::normParamsOf(p);
  const bool all = np.acrossHeads;
  const int64_t d = p.headDim, groups = all ? 1 : heads, per = all ? heads : 1;
  const int64_t n = per * d;
  const double steps = double(n + 8 + (np.center ? n + 2 : 0) + (bias.empty() ? 0 : 1));
  auto at = [&](int64_t b, int64_t h, int64_t t, int64_t c) {
    return size_t(((b * heads + h) * seq + t) * d + c);
  };
  auto wi = [&](int64_t g, int64_t hh, int64_t c) {
    return size_t((all ? hh : np.perHead ? g : 0) * d + c);
  };
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t g = 0; g < groups; ++g) {
        double mean = 0, emean = 0;
        if (np.center) {
          for (int64_t hh = 0; hh < per; ++hh)
            for (int64_t c = 0; c < d; ++c) {
              const size_t i = at(b, g * per + hh, t, c);
              mean += x[i];
              emean += ex[i];
            }
          mean /= double(n);
          emean /= double(n);
        }
        double ss = 0, cross = 0;
        for (int64_t hh = 0; hh < per; ++hh)
          for (int64_t c = 0; c < d; ++c) {
            const size_t i = at(b, g * per + hh, t, c);
            const double xc = x[i] - mean;
            ss += xc * xc;
            cross += std::fabs(xc) * (ex[i] + emean);
          }
        const double rms = std::sqrt(ss / double(n) + p.qkNormEps);
        for (int64_t hh = 0; hh < per; ++hh)
          for (int64_t c = 0; c < d; ++c) {
            const size_t i = at(b, g * per + hh, t, c);
            const size_t j = wi(g, hh, c);
            const double wj = (np.noWeight ? 1.0 : w[j]) + p.qkNormOffset;
            const double wv = std::fabs(wj);
            const double xhat = (x[i] - mean) / rms;
            const double scaled = xhat * wj;
            const double out = scaled + (bias.empty() ? 0.0 : bias[j]);
            ex[i] = wv * (ex[i] + emean + std::fabs(xhat) * cross / (double(n) * rms)) / rms +
                    steps * kU * (std::fabs(scaled) + std::fabs(out));
            x[i] = out;
          }
      }
}

/// The rotary embedding (naive::rope) on x [B, H, T, D] with its bound: the
/// inputs' errors rotated (|c| e0 + |s| e1), plus the kernel's rounding of
/// cos and sin to float32 and its two products and one sum (4u of the
/// magnitudes), plus 1e-10 for the kernel's sin/cos polynomial and angle
/// reduction (docs/checking.md).
void ropeBound(std::vector<double> &x, std::vector<double> &ex,
               const BlockParams &p, int64_t batch, int64_t heads, int64_t seq,
               const int64_t *start, const int64_t *callEnd) {
  const int64_t d = p.headDim;
  naive::forEachRopePair(
      batch, seq, p.rope, start, callEnd,
      [&](int64_t b, int64_t t, int64_t i0, int64_t i1, double c, double s) {
        const double af = p.rope.attentionFactor;
        for (int64_t h = 0; h < heads; ++h) {
          const size_t o = size_t(((b * heads + h) * seq + t) * d);
          const double x0 = x[o + i0], x1 = x[o + i1];
          const double e0 = ex[o + i0], e1 = ex[o + i1];
          const double mag = std::fabs(x0 * c) + std::fabs(x1 * s) +
                             std::fabs(x1 * c) + std::fabs(x0 * s);
          const double round = 4 * kU * mag + 1e-10 * af * (std::fabs(x0) + std::fabs(x1));
          x[o + i0] = x0 * c - x1 * s;
          x[o + i1] = x1 * c + x0 * s;
          ex[o + i0] = std::fabs(c) * e0 + std::fabs(s) * e1 + round;
          ex[o + i1] = std::fabs(c) * e1 + std::fabs(s) * e0 + round;
        }
      });
}

/// naive::sdpa (same loops, same order, so o and the weights are
/// bit-identical to the reference) with the bound of docs/checking.md,
/// stage 3: per row, each key's logit error split into the part that comes
/// from q's error (shared by every key of the row) and a key-specific
/// part; the output's first-order change sum_j w_j eps_j (v_j - o), in
/// which a shift common to every logit cancels, so q's error enters only
/// through k_j - kbar (kbar = sum_j w_j k_j); a second-order remainder; the
/// zeroth-order bound of each weight (pivoted on the row's largest logit)
/// when it is smaller; plus the errors of v, the exp arguments (relative
/// to the logits' spread, and to the running maxima an online softmax
/// subtracts), the exps themselves (kExpUlps each, one per running-max
/// change that can still follow the key), the normalisation and the
/// weighted sum. `tick(1)` after each query row. Valid lengths and the
/// mask as in naive::sdpa; `probs`/`eprobs`, when not null, receive the
/// softmax weights [B, Hq, Tq, Tkv] and their bounds.
constexpr double kExpUlps = 4;
/// An exp within kExpUlps ulp: relative error 2 kExpUlps u (one ulp of a
/// float32 value is at most 2u of it).
constexpr double kExpRel = 2 * kExpUlps * kU;

/// The few keys of one query row (and head) that carry nearly all of the
/// softmax part of its output's error: that part goes through W_O exactly
/// (stage 4 of docs/checking.md) instead of with absolute values per
/// component. Per key: its weight and w D, w kind, w klin, w |R|, P0.
struct ExactKeys {
  static constexpr int kMax = 4;
  int n = 0;
  int64_t key[kMax] = {};  ///< key index; tkv: the sink (v = 0)
  double w[kMax] = {}, wD[kMax] = {}, wKind[kMax] = {}, wKlin[kMax] = {},
         rw[kMax] = {}, p0[kMax] = {};
  double a1c = 0;    ///< the residual's factor A
  double scale = 1;  ///< 1 + r: the normalisation's rounding
};

/// a * b, but 0 when either is 0 (an infinite bound times a zero
/// difference moves nothing).
double mulz(double a, double b) { return a == 0 || b == 0 ? 0.0 : a * b; }

void sdpaBound(const Model &model, const double *q, const double *eq,
               const double *k, const double *ek, const double *v,
               const double *ev, double *o, double *eo, int64_t batch,
               int64_t hq, int64_t hkv, int64_t tq, int64_t tkv, int64_t d,
               double scale, uint32_t mask, bool topLeft, int64_t window,
               const int64_t *qValid, const int64_t *kvValid, double *probs,
               double *eprobs, const std::function<void(int64_t)> &tick,
               const naive::ScoreMods &mods, ExactKeys *exact = nullptr,
               double *eoMag = nullptr, double pRound = 0) {
  const int64_t group = hq / hkv;
  const bool causal = naive::isCausal(mask);
  const bool windowed = attnc_mask_sliding(mask) && window > 0;
  const bool chunked = attnc_mask_chunked(mask) && window > 0;
  const bool ahead = attnc_mask_bidirectional(mask) && window > 0;
  const bool prob = !model.rigorous;
  const double inf = std::numeric_limits<double>::infinity();
  // Softcap multiplies q's error by a slope that differs from key to key:
  // there, q's part of the logit error is not centred on kbar.
  const bool centred = !(mods.softcap > 0);
  // Per key of a row; index tkv is the sink (a key with k = v = 0).
  const size_t nk = size_t(tkv) + 1;
  const int64_t S = tkv;
  std::vector<double> logit(nk), ex(nk), eS(nk), kind(nk), klin(nk), w(nk),
      lw(nk), D(nk), aB(nk), P0(nk), Rw(nk), P(nk), impv(nk), hiSorted;
  std::vector<int64_t> nCorr(nk), order;
  std::vector<char> visible(nk), inS(nk);
  const size_t nd = static_cast<size_t>(d);
  std::vector<double> eqp(nd), kbar(nd), ktop(nd);
  auto kAt = [&](size_t ko, int64_t j, int64_t c) {
    return j == S ? 0.0 : k[ko + size_t(j * d + c)];
  };
  auto vAt = [&](size_t ko, int64_t j, int64_t c) {
    return j == S ? 0.0 : v[ko + size_t(j * d + c)];
  };
  auto evAt = [&](size_t ko, int64_t j, int64_t c) {
    return j == S ? 0.0 : ev[ko + size_t(j * d + c)];
  };
  for (int64_t b = 0; b < batch; ++b) {
    const naive::RowRange rr =
        naive::rowRange(b, tq, tkv, qValid, kvValid, topLeft);
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kvh = h / group;
      const size_t qo = size_t((b * hq + h) * tq * d);
      const size_t ko = size_t((b * hkv + kvh) * tkv * d);
      for (int64_t i = 0; i < tq; ++i) {
        if (tick && i > 0)
          tick(1);
        double *prow =
            probs ? probs + size_t(((b * hq + h) * tq + i) * tkv) : nullptr;
        double *eprow =
            eprobs ? eprobs + size_t(((b * hq + h) * tq + i) * tkv) : nullptr;
        for (int64_t j = 0; prow && j < tkv; ++j)
          prow[j] = eprow[j] = 0;
        // q's errors and (probabilistic) the rounding of a kernel's Q
        // pre-scaling, u |q_c|: shared by every key of the row. (The
        // rigorous dot bound gamma(dh + 2) covers the pre-scaling.)
        for (int64_t c = 0; c < d; ++c)
          eqp[size_t(c)] = eq[qo + size_t(i * d + c)] +
                           (prob ? kU * std::fabs(q[qo + size_t(i * d + c)]) : 0.0);
        double maxScore = -inf;
        bool any = false;
        int64_t nVis = 0, top = -1;
        for (int64_t j = 0; j < tkv; ++j) {
          bool see = i < rr.qValid && j < rr.kvValid &&
                     naive::keyVisible(causal, windowed, rr.offset, window,
                                       i, j, chunked, ahead);
          visible[size_t(j)] = see;
          if (!see)
            continue;
          ++nVis;
          double s = 0, mag = 0, propQ = 0, propK = 0, second = 0;
          PartialSums ps;
          // relative_key: q.E[r] (+ k.E[r]) rides on the dot product, so
          // q's error multiplies k + E[r] (k's, q + E[r]) and the sum has
          // two (three) products per element (E is a weight: exact).
          const int64_t rc = mods.relEmb ? mods.relColumn(i + rr.offset, j) : 0;
          const int terms = mods.relEmb ? (mods.relKeyQuery ? 3 : 2) : 1;
          for (int64_t c = 0; c < d; ++c) {
            const double qv = q[qo + size_t(i * d + c)], kv = k[ko + size_t(j * d + c)];
            const double qe = eq[qo + size_t(i * d + c)], ke = ek[ko + size_t(j * d + c)];
            const double e = mods.relEmb ? mods.relEmb[c * mods.relCols + rc] : 0.0;
            const double ek2 = mods.relKeyQuery ? e : 0.0;
            if (prob)
              ps.add(s, qv * kv);
            s += qv * kv;
            if (mods.relEmb) {
              if (prob)
                ps.add(s, qv * e);
              s += qv * e;
              if (mods.relKeyQuery) {
                if (prob)
                  ps.add(s, kv * e);
                s += kv * e;
              }
            }
            mag += (std::fabs(qv) + qe) * (std::fabs(kv) + ke + std::fabs(e)) +
                   (std::fabs(kv) + ke) * std::fabs(ek2);
            // The errors of q_c and k_c (independent for different c, and
            // between q and k): first-order terms by the model, the
            // second-order one linearly.
            model.add(propQ, eqp[size_t(c)] * std::fabs(kv + e));
            model.add(propK, std::fabs(qv + ek2) * ke);
            second += qe * ke;
          }
          const double dot = s;
          s *= scale;
          // The dot product's own rounding: the model's, and never more
          // than the worst case.
          const double round =
              prob ? std::min(ps.rounding(model.lambda, dot, 1),
                              gammaN(terms * d + 1) * mag)
                   : model.g(terms * d + 2) * mag;
          // Key-specific: k's error and the dot's rounding (independent
          // of other keys'), and linearly the second-order term and the
          // scale multiply's rounding (one rounding: u |s|).
          kind[size_t(j)] = scale * (prob ? std::hypot(model.total(propK), round)
                                          : model.total(propK) + round);
          klin[size_t(j)] = scale * second + (prob ? kU * std::fabs(s) : 0.0);
          const double qPart = scale * model.total(propQ);
          if (mods.any()) {
            // ALiBi's term is rounded to float32 once and added; softcap
            // shrinks the errors it is given (its slope is at most 1) and
            // adds its own evaluation's: a few ulps of the capped score
            // (tanh's series where |s| < cap/4; past it the exp form, whose
            // few ulps of cap are at most 4.1 times the score's): 8u of each
            // magnitude, and 40u of the capped score, cover both, in log2 or
            // natural units.
            const double modded = mods.apply(dot, scale, h, i + rr.offset, j);
            // The added bias (ALiBi's term, T5's table entry) and softcap's
            // change: |modded - s| bounds them all.
            const double bias = std::fabs(modded - s);
            klin[size_t(j)] += 8 * kU * (std::fabs(s) + std::fabs(modded) + bias) +
                               (mods.softcap > 0 ? 40 * kU * std::fabs(modded) : 0.0);
            s = modded;
          }
          logit[size_t(j)] = s;
          eS[size_t(j)] = qPart + kind[size_t(j)] + klin[size_t(j)];
          if (!any || s > maxScore) {
            maxScore = s;
            top = j;
          }
          any = true;
        }
        double *orow = o + qo + size_t(i * d);
        double *erow = eo + qo + size_t(i * d);
        double *mrow = eoMag ? eoMag + qo + size_t(i * d) : nullptr;
        ExactKeys *exk = exact ? exact + size_t((b * hq + h) * tq + i) : nullptr;
        if (exk)
          *exk = ExactKeys();
        for (int64_t c = 0; c < d; ++c) {
          orow[c] = erow[c] = 0;
          if (mrow)
            mrow[c] = 0;
        }
        if (!any)
          continue;
        // The sink: one more term of the denominator, with no value.
        visible[size_t(S)] = mods.sinks != nullptr;
        const double sink = mods.sinks ? mods.sinks[h] : 0.0;
        if (mods.sinks) {
          logit[size_t(S)] = sink;
          eS[size_t(S)] = kind[size_t(S)] = klin[size_t(S)] = 0;
          if (sink > maxScore) {
            maxScore = sink;
            top = S;
          }
        }
        const double sinkExp = mods.sinks ? std::exp(sink - maxScore) : 0.0;
        double sum = sinkExp;
        for (int64_t j = 0; j < tkv; ++j) {
          if (!visible[size_t(j)])
            continue;
          ex[size_t(j)] = std::exp(logit[size_t(j)] - maxScore);
          sum += ex[size_t(j)];
        }
        ex[size_t(S)] = sinkExp;
        PartialSums expSum;
        {
          double run = 0;
          for (int64_t j = 0; j < tkv; ++j)
            if (visible[size_t(j)]) {
              expSum.add(run, ex[size_t(j)]);
              run += ex[size_t(j)];
            }
        }
        std::vector<PartialSums> wsum(prob ? size_t(d) : 0);
        for (int64_t j = 0; j < tkv; ++j) {
          if (!visible[size_t(j)])
            continue;
          const double pj = ex[size_t(j)] / sum;
          for (int64_t c = 0; c < d; ++c) {
            if (prob)
              wsum[size_t(c)].add(orow[c], pj * v[ko + size_t(j * d + c)]);
            orow[c] += pj * v[ko + size_t(j * d + c)];
          }
        }
        // The weights (the sink's too) and their logarithms.
        const double logSum = std::log(sum);
        int64_t nTerms = 0; // keys and sink
        for (int64_t j = 0; j <= S; ++j) {
          if (!visible[size_t(j)])
            continue;
          ++nTerms;
          w[size_t(j)] = ex[size_t(j)] / sum;
          lw[size_t(j)] = (logit[size_t(j)] - maxScore) - logSum;
          if (j == S)
            eS[size_t(S)] = 0;
        }
        // The largest float32 logit can be, and for each key how many
        // running-max changes can still follow it in an online softmax
        // (each needs a key whose float32 logit can exceed this one's).
        double mHi = -inf;
        hiSorted.clear();
        for (int64_t j = 0; j <= S; ++j)
          if (visible[size_t(j)]) {
            mHi = std::max(mHi, logit[size_t(j)] + eS[size_t(j)]);
            hiSorted.push_back(logit[size_t(j)] + eS[size_t(j)]);
          }
        std::sort(hiSorted.begin(), hiSorted.end());
        // |the smallest the largest float32 logit can be|
        const double mLo = std::fabs(maxScore - eS[size_t(top)]);
        for (int64_t j = 0; j <= S; ++j) {
          if (!visible[size_t(j)])
            continue;
          const double lo = logit[size_t(j)] - eS[size_t(j)];
          nCorr[size_t(j)] =
              int64_t(hiSorted.end() -
                      std::lower_bound(hiSorted.begin(), hiSorted.end(), lo)) -
              1;
          // The exp argument, relative to the spread (max - s_j, as
          // float32 logits): the kernel's float32 scale constant (the same
          // relative error for every logit), the argument's own rounding
          // (a subtraction and a multiply by log2 e or an FMA) and the
          // online corrections' (two each, telescoping to the same
          // spread): 5u. A kernel that subtracts its running maximum m
          // scaled and rounded once (FlashAttention-2's m * scale): u |m|,
          // m between this key's logit and the row's largest. The exps:
          // the key's own and one per correction that can follow it,
          // each kExpUlps ulp plus the multiply by the correction.
          const double spread = mHi - lo;
          const double m = std::max(std::fabs(logit[size_t(j)]) + eS[size_t(j)],
                                    std::max(std::fabs(mHi), mLo));
          const double x = 5 * kU * spread + kU * m +
                           model.count(1 + nCorr[size_t(j)]) * (kExpRel + kU);
          klin[size_t(j)] += x;
        }
        // kbar = sum_j w_j k_j (the sink's k is 0) and the pivot's k.
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < tkv; ++j)
            if (visible[size_t(j)])
              acc += w[size_t(j)] * k[ko + size_t(j * d + c)];
          kbar[size_t(c)] = acc;
          ktop[size_t(c)] = kAt(ko, top, c);
        }
        // D_j: q's part of the logit error, centred on kbar (what moves the
        // output: a shift common to all logits cancels), and aB_j: a bound
        // on |eps_j - eps_top| for the zeroth-order and second-order terms.
        double dTop = 0; // softcap: q's part of the pivot's own error
        if (!centred) {
          double acc = 0;
          for (int64_t c = 0; c < d; ++c)
            model.add(acc, eqp[size_t(c)] * std::fabs(ktop[size_t(c)]));
          dTop = scale * model.total(acc);
        }
        const double kTop = kind[size_t(top)] + klin[size_t(top)];
        double sumWD = 0;
        for (int64_t j = 0; j <= S; ++j) {
          if (!visible[size_t(j)])
            continue;
          double accC = 0, accT = 0;
          for (int64_t c = 0; c < d; ++c) {
            const double kc = kAt(ko, j, c);
            model.add(accC, eqp[size_t(c)] *
                                std::fabs(centred ? kc - kbar[size_t(c)] : kc));
            if (centred)
              model.add(accT, eqp[size_t(c)] * std::fabs(kc - ktop[size_t(c)]));
          }
          D[size_t(j)] = scale * model.total(accC);
          const double dB = centred ? scale * model.total(accT)
                                    : D[size_t(j)] + dTop;
          aB[size_t(j)] = j == top ? 0.0
                                   : dB + kind[size_t(j)] + klin[size_t(j)] + kTop;
          sumWD += w[size_t(j)] * D[size_t(j)];
        }
        // The zeroth-order bound of each weight's change, and the
        // second-order remainder (docs/checking.md).
        double zHi = 0, zLo = 0, a1 = 0, q2 = 0;
        for (int64_t j = 0; j <= S; ++j) {
          if (!visible[size_t(j)])
            continue;
          const double a = aB[size_t(j)];
          const double up = std::exp(lw[size_t(j)] + a);
          zHi += up;
          zLo += std::exp(lw[size_t(j)] - a);
          a1 += w[size_t(j)] * a;
          q2 += up * a * a / 2;
        }
        // First-order sums over the keys: sum (w kind)^2, sum w klin, and
        // (centred) sum_j w_j (D_j + kind_j + klin_j) for the residual of
        // sum_j w_j (v_j - o) = 0 in double.
        double s2 = 0, s1 = 0, a1c = 0;
        for (int64_t j = 0; j <= S; ++j)
          if (visible[size_t(j)]) {
            s2 += std::pow(w[size_t(j)] * kind[size_t(j)], 2);
            s1 += w[size_t(j)] * klin[size_t(j)];
            a1c += w[size_t(j)] *
                   (D[size_t(j)] + kind[size_t(j)] + klin[size_t(j)]);
          }
        double nonTop = 0; // sum of the other terms' perturbed weights
        bool undetermined = false;
        for (int64_t j = 0; j <= S; ++j) {
          if (!visible[size_t(j)])
            continue;
          const double wj = w[size_t(j)], a = aB[size_t(j)];
          // Zeroth order: w'_j grows with eps_j and falls with the others,
          // so it lies between w_j e^{-a} / (w_j e^{-a} + the others'
          // e^{+a}) and w_j e^{a} / (w_j e^{a} + the others' e^{-a}) (at
          // most 1 - w_j up and w_j down). The others' sums lose j's term
          // by a subtraction: a margin of 4 double ulps, in the safe
          // direction.
          double p0 = 0;
          if (wj > 0) {
            const double restLo =
                std::max(0.0, zLo - std::exp(lw[size_t(j)] - a) - 0x1p-51 * zLo);
            const double restHi =
                std::max(0.0, zHi - std::exp(lw[size_t(j)] + a)) + 0x1p-51 * zHi;
            const double up = 1 / (1 + mulz(restLo, std::exp(-(lw[size_t(j)] + a))));
            const double lo = 1 / (1 + mulz(restHi, std::exp(-(lw[size_t(j)] - a))));
            p0 = std::max(0.0, std::max(up - wj, wj - lo));
          }
          P0[size_t(j)] = p0;
          Rw[size_t(j)] = (std::exp(lw[size_t(j)] + a) * a * a / 2 +
                           wj * (a1 * (a + a1) + q2 * (1 + a + a1))) /
                          zLo;
          // |eps_j - mean eps| to first order: q's part (centred: D_j;
          // softcap: D_j + sum_k w_k D_k) and the key-specific parts,
          // (1 - w_j) eps_j - sum_{k != j} w_k eps_k.
          const double dp = centred ? D[size_t(j)] : D[size_t(j)] + sumWD;
          const double om = 1 - wj;
          const double first =
              prob ? std::sqrt(dp * dp + std::pow(om * kind[size_t(j)], 2) +
                               std::max(0.0, s2 - std::pow(wj * kind[size_t(j)], 2))) +
                         om * klin[size_t(j)] + std::max(0.0, s1 - wj * klin[size_t(j)])
                   : dp + om * (kind[size_t(j)] + klin[size_t(j)]) +
                         std::max(0.0, a1c - sumWD - wj * (kind[size_t(j)] + klin[size_t(j)]));
          P[size_t(j)] = std::min(P0[size_t(j)], wj * first + Rw[size_t(j)]);
          if (!(P[size_t(j)] >= 0))
            P[size_t(j)] = inf; // NaN: nothing is known
          // A weight that may be anything in [0, 1]: float32 cannot tell
          // which key wins, and the row's output is not bounded at all.
          if (P[size_t(j)] > 0 && P[size_t(j)] >= std::max(wj, 1 - wj))
            undetermined = true;
          if (j != top)
            nonTop += wj + P[size_t(j)];
        }
        // Rounding of the sum of the exps, the division, and (per output)
        // of the weighted sum, with an online softmax's rescaling of the
        // partial sums (n more roundings). When no float32 logit can
        // exceed the largest one, every partial sum that holds its term is
        // never rescaled after it, and each rounding is at most the
        // operand without it: at most 2(n + 1) times the other terms.
        const bool pinned = nCorr[size_t(top)] == 0;
        const double g2n = gammaN(2 * nTerms + 2);
        double normRel =
            prob ? std::min(std::sqrt(2.0) * expSum.rounding(model.lambda, sum) / sum,
                            g2n) +
                       kU
                 : g2n;
        if (pinned)
          normRel = std::min(normRel, 2 * double(nTerms + 1) * (1 + g2n) * nonTop + 2 * kU);
        // The keys whose share of the softmax part goes through W_O
        // exactly: at most ExactKeys::kMax of them, taken when they hold
        // 90% of it (peaky rows); the rest stays per component below.
        for (int64_t j = 0; j <= S; ++j)
          inS[size_t(j)] = 0;
        if (exk && !undetermined) {
          double total = 0;
          order.clear();
          for (int64_t j = 0; j <= S; ++j) {
            if (!visible[size_t(j)])
              continue;
            double spread = 0;
            for (int64_t c = 0; c < d; ++c)
              spread += std::fabs(vAt(ko, j, c) - orow[c]);
            const double imp =
                (P0[size_t(j)] + w[size_t(j)] * (D[size_t(j)] + kind[size_t(j)] +
                                                 klin[size_t(j)]) +
                 Rw[size_t(j)]) *
                spread;
            if (!(imp >= 0) || std::isinf(imp)) {
              total = inf; // nothing to gain: keep the row per component
              break;
            }
            total += imp;
            order.push_back(j);
            impv[size_t(j)] = imp;
          }
          if (std::isfinite(total) && total > 0) {
            const size_t top4 = std::min(order.size(), size_t(ExactKeys::kMax));
            std::partial_sort(order.begin(), order.begin() + long(top4), order.end(),
                              [&](int64_t a, int64_t c) { return impv[size_t(a)] > impv[size_t(c)]; });
            double cum = 0;
            size_t take = 0;
            while (take < top4 && cum < 0.999 * total)
              cum += impv[size_t(order[take++])];
            if (cum >= 0.9 * total) {
              exk->n = int(take);
              exk->a1c = a1c;
              exk->scale = 1 + normRel;
              for (size_t m = 0; m < take; ++m) {
                const int64_t j = order[m];
                inS[size_t(j)] = 1;
                exk->key[m] = j;
                exk->w[m] = w[size_t(j)];
                exk->wD[m] = w[size_t(j)] * D[size_t(j)];
                exk->wKind[m] = w[size_t(j)] * kind[size_t(j)];
                exk->wKlin[m] = w[size_t(j)] * klin[size_t(j)];
                exk->rw[m] = Rw[size_t(j)];
                exk->p0[m] = P0[size_t(j)];
              }
            }
          }
        }
        for (int64_t c = 0; c < d; ++c) {
          double dsum = 0, kind2 = 0, klinS = 0, rem = 0, zero = 0, resid = 0,
                 vErr = 0, mag = 0, ntv = 0, vmax = 0, pSq = 0;
          // The same sums over every key, for the magnitude (eoMag).
          double dsumA = 0, kind2A = 0, klinA = 0, remA = 0, zeroA = 0,
                 residA = 0;
          for (int64_t j = 0; j <= S; ++j) {
            if (!visible[size_t(j)])
              continue;
            const double wj = w[size_t(j)];
            const double vv = vAt(ko, j, c), ve = evAt(ko, j, c);
            const double dv = vv - orow[c];
            const double adv = std::fabs(dv);
            if (!inS[size_t(j)])
              resid += wj * dv;
            const double wdv = wj * adv;
            const double dD = mulz(wdv, D[size_t(j)]),
                         dK = mulz(wdv, kind[size_t(j)]),
                         dL = mulz(wdv, klin[size_t(j)]),
                         dR = mulz(Rw[size_t(j)], adv),
                         dZ = mulz(P0[size_t(j)], adv);
            dsumA += dD + (prob ? 0.0 : dK);
            kind2A += prob ? dK * dK : 0.0;
            klinA += dL;
            remA += dR;
            zeroA += dZ;
            residA += wj * dv;
            if (!inS[size_t(j)]) {
              dsum += dD + (prob ? 0.0 : dK);
              kind2 += prob ? dK * dK : 0.0;
              klinS += dL;
              rem += dR;
              zero += dZ;
            }
            const double wUp = wj + P[size_t(j)];
            model.add(vErr, mulz(wUp, ve));
            mag += mulz(wUp, std::fabs(vv) + ve);
            pSq += std::pow(mulz(wUp, std::fabs(vv) + ve), 2);
            if (j != top)
              ntv += mulz(wUp, std::fabs(vv) + ve);
            if (j != S)
              vmax = std::max(vmax, std::fabs(vv) + ve);
          }
          const double firstOrder = (prob ? std::sqrt(dsum * dsum + kind2) : dsum) +
                                    klinS + rem + mulz(a1c, std::fabs(resid));
          const double logitPart = std::min(zero, firstOrder);
          const double logitAll =
              std::min(zeroA, (prob ? std::sqrt(dsumA * dsumA + kind2A) : dsumA) +
                                  klinA + remA + mulz(a1c, std::fabs(residA)));
          double roundW =
              prob ? std::min(std::sqrt(2.0) * wsum[size_t(c)].rounding(model.lambda, orow[c]),
                              g2n * mag)
                   : g2n * mag;
          if (pinned)
            roundW = std::min(roundW, 2 * double(nTerms + 1) * (1 + g2n) * ntv);
          // bf16 softmax numerators (pRound = bf16's u): P·V multiplies
          // p_j (1 + delta_j), |delta_j| <= u independent, and the
          // denominator sums the unrounded p_j, so o_c moves by
          // sum_j delta_j w_j v_jc: at most u sum_j w_j |v_jc|, and in the
          // probabilistic model a reduction's lambda u sqrt(sum (w_j
          // v_jc)^2), whichever is smaller (the weights and values with
          // their own errors).
          const double pErr =
              pRound > 0 ? pRound * (prob ? std::min(mag, model.lambda * std::sqrt(pSq)) : mag)
                         : 0.0;
          const double rest = model.total(vErr) + roundW + pErr;
          const double tail = normRel * std::fabs(orow[c]) +
                              // Weights that underflow (or flush) to zero
                              // in float32.
                              double(nVis) * 0x1p-125 * vmax;
          erow[c] = (1 + normRel) * (logitPart + rest) + tail;
          if (!(erow[c] >= 0) || undetermined)
            erow[c] = inf;
          if (mrow) {
            mrow[c] = (1 + normRel) * (logitAll + rest) + tail;
            if (!(mrow[c] >= 0) || undetermined)
              mrow[c] = inf;
          }
        }
        // The weights themselves: the perturbation above, the rounding of
        // the sum and the division, and a weight that underflows or
        // flushes to zero in float32. A bound that lets the weight be
        // anything in [0, 1] says nothing: infinite (unbounded).
        for (int64_t j = 0; prow && j < tkv; ++j)
          if (visible[size_t(j)]) {
            const double wj = w[size_t(j)];
            prow[j] = wj;
            eprow[j] = P[size_t(j)] >= std::max(wj, 1 - wj)
                           ? inf
                           : P[size_t(j)] + wj * normRel + 0x1p-125;
          }
      }
      if (tick)
        tick(1); // the head's last row
    }
  }
}

} // namespace

Reference referenceWithBound(const BlockParams &p,
                             const std::vector<const float *> &weights,
                             const float *x, int64_t batch, int64_t seqLen,
                             const std::function<void(double)> &progress,
                             const BoundOptions &options) {
  return referenceWithBound(p, weights, x, batch, seqLen, VariantInputs(),
                            progress, options);
}

/// Unit roundoff of a storage dtype (RNE: half an ulp of 1) and the
/// absolute rounding error below its smallest normal (half its smallest
/// subnormal; bf16 has float32's exponent range).
static void storageRounding(uint32_t dtype, double &rel, double &abs) {
  rel = dtype == ATTNC_DTYPE_BF16 ? 0x1p-8 : dtype == ATTNC_DTYPE_F16 ? 0x1p-11 : 0.0;
  abs = dtype == ATTNC_DTYPE_BF16 ? 0x1p-134 : dtype == ATTNC_DTYPE_F16 ? 0x1p-25 : 0.0;
}

/// A rounding to a storage type inside the computation (a KV cache's keys
/// and values, the bf16 operands of the dot products and GEMMs) as the
/// per-element error it enters the model with. The probabilistic model
/// adds independent per-element errors as a root sum of squares, which
/// holds with its confidence for terms that are lambda-scaled bounds (the
/// float32 roundings' gammaTilde), not for a rounding's plain bound u|x|:
/// taken at u|x|, a user probe saw a correct bf16 kernel (out_proj:
/// false, AVX512-BF16 path, --x-scale 3) fail 1 to 2 seeds in 20 at 1.05x
/// to 1.12x its allowance. Taken as spread evenly over +-half an ulp
/// (<= u|x|: variance <= (u|x|)^2 / 3, sub-Gaussian with that variance),
/// a sum of independent roundings exceeds kStorageKappa times the root sum
/// of squares of their bounds with probability below 2 exp(-3 kappa^2 /
/// 2) = 7.6e-11 at kappa = 4; with only mean zero and |error| <= u|x|
/// (Hoeffding, what lambda assumes of the float32 terms) the odds are
/// 2 exp(-kappa^2 / 2) = 6.7e-4 per sum. (lambda / sqrt 3 = 5.8, the
/// float32 terms' odds under the first assumption, widened the bound past
/// max |y| (unbounded) on GPT-2 small in bf16 at --x-scale 3.) The
/// rigorous model adds errors linearly: u|x|.
static constexpr double kStorageKappa = 4.0;

static void roundingInModel(const Model &model, uint32_t dtype, double &rel, double &abs) {
  storageRounding(dtype, rel, abs);
  const double kappa = model.rigorous ? 1.0 : kStorageKappa;
  rel *= kappa;
  abs *= kappa;
}

static Reference referenceWithBoundImpl(const BlockParams &p,
                                        const std::vector<const float *> &weights,
                                        const float *x, int64_t batch, int64_t seqLen,
                                        const VariantInputs &in,
                                        const std::function<void(double)> &progress,
                                        const BoundOptions &options);

Reference referenceWithBound(const BlockParams &p,
                             const std::vector<const float *> &weights,
                             const float *x, int64_t batch, int64_t seqLen,
                             const VariantInputs &in,
                             const std::function<void(double)> &progress,
                             const BoundOptions &options) {
  StorageRounded sr;
  Reference r = sr.apply(p, weights, x, batch, seqLen, in)
                    ? referenceWithBoundImpl(p, sr.weights, sr.xp, batch, seqLen, sr.in,
                                             progress, options)
                    : referenceWithBoundImpl(p, weights, x, batch, seqLen, in, progress,
                                             options);
  // y and probs are rounded to the dtype on the way out: once each.
  double rel, abs;
  storageRounding(p.dtype, rel, abs);
  if (rel > 0) {
    for (size_t i = 0; i < r.y.size(); ++i)
      r.bound[i] += rel * std::fabs(r.y[i]) + abs;
    for (size_t i = 0; i < r.probs.size(); ++i)
      r.probsBound[i] += rel * std::fabs(r.probs[i]) + abs;
  }
  return r;
}

static Reference referenceWithBoundImpl(const BlockParams &p,
                                        const std::vector<const float *> &weights,
                                        const float *x, int64_t batch, int64_t seqLen,
                                        const VariantInputs &in,
                                        const std::function<void(double)> &progress,
                                        const BoundOptions &options) {
  Reference r;
  const Model model{options.rigorous, options.lambda};
  const int64_t d = p.dModel;
  const int64_t qW = p.heads * p.headDim;
  const int64_t kvW = p.kvHeads * p.headDim;
  Run run;
  if (!prepare(p, weights, x, batch, seqLen, in, run))
    return r;
  const int64_t rows = run.rows, kvRows = run.kvRows, kvSeq = run.kvSeq;
  Projections w = unpack(p, weights);
  // Progress: the projections (rows * d * qW + kvRows * d * 2 kvW), the
  // attention (batch * heads * T * T_kv * dh) and the output projection
  // (rows * qW * d); the attention twice when the probs' bound is apart.
  const double total = double(rows) * d * double(qW) +
                       double(kvRows) * d * double(2 * kvW) +
                       double(batch) * p.heads * double(seqLen) * kvSeq * p.headDim *
                           (options.bf16Dots && p.wantProbs ? 2 : 1) +
                       (p.outProj ? double(rows) * qW * d : 0.0);
  double done = 0;
  std::function<void(double)> report = [&](double work) {
    done += work;
    if (progress && total > 0)
      progress(std::min(1.0, done / total));
  };

  // bf16 weights: the GEMMs' other operand as the code path that ran
  // multiplied it (BoundOptions::bf16Gemm).
  using GemmInputs = BoundOptions::GemmInputs;
  const bool bf16Gemm = p.weightDtype == ATTNC_DTYPE_BF16 &&
                        options.bf16Gemm != GemmInputs::Float32;
  const bool roundX = p.weightDtype == ATTNC_DTYPE_BF16 && p.dtype != ATTNC_DTYPE_BF16 &&
                      options.bf16Gemm == GemmInputs::Bf16;
  auto input = [&](const float *src, int64_t n) {
    std::vector<double> out(src, src + n);
    for (size_t i = 0; roundX && i < out.size(); ++i)
      out[i] = roundTo(ATTNC_DTYPE_BF16, float(out[i]));
    return out;
  };
  std::vector<double> xd = input(x, rows * d);
  // K/V's source: x_kv for cross-attention, else x itself (no second copy).
  std::vector<double> xkvCopy;
  if (p.cross)
    xkvCopy = input(run.kvSource, kvRows * d);
  const double *xkv = p.cross ? xkvCopy.data() : xd.data();
  std::vector<double> q(size_t(rows * qW)), eq(q.size());
  std::vector<double> k(size_t(kvRows * kvW)), ek(k.size());
  std::vector<double> v(size_t(kvRows * kvW)), ev(v.size());
  // bf16 weights: the AVX512-BF16 GEMMs multiply bf16 pairs, so a float32
  // A operand (x with dtype f32, the attention output before W_O) is
  // rounded to bf16 first: u|a| more on each of its elements, unless the
  // reference rounded x itself (roundX) or the path multiplies in float32.
  // bf16's rounding as the model takes it (roundingInModel), on x, the
  // dot products' operands and o before W_O; the softmax numerators'
  // term (sdpaBound's pRound) takes the plain u, with its own lambda.
  double uA = 0, absA = 0, uP = 0, absUnused = 0;
  if (options.bf16Dots)
    storageRounding(ATTNC_DTYPE_BF16, uP, absUnused);
  if (bf16Gemm || options.bf16Dots)
    roundingInModel(model, ATTNC_DTYPE_BF16, uA, absA);
  std::vector<double> exd, exkv;
  if (bf16Gemm && !roundX && p.dtype != ATTNC_DTYPE_BF16) { // x not already bf16
    for (double v : xd)
      exd.push_back(uA * std::fabs(v) + absA);
    for (int64_t i = 0; p.cross && i < kvRows * d; ++i)
      exkv.push_back(uA * std::fabs(xkv[i]) + absA);
  }
  const double *exq = exd.empty() ? nullptr : exd.data();
  const double *exk = p.cross ? (exkv.empty() ? nullptr : exkv.data()) : exq;
  linearBound(model, xd.data(), exq, w.wq.data(), orNull(w.bq),
              q.data(), eq.data(), rows, d, qW, 1, report);
  linearBound(model, xkv, exk, w.wk.data(), orNull(w.bk),
              k.data(), ek.data(), kvRows, d, kvW, 1, report);
  linearBound(model, xkv, exk, w.wv.data(), orNull(w.bv),
              v.data(), ev.data(), kvRows, d, kvW, 1, report);

  auto split = [&](const std::vector<double> &t, int64_t seq, int64_t heads) {
    return splitHeads(t, batch, seq, heads, p.headDim);
  };
  std::vector<double> qh = split(q, seqLen, p.heads),
                      eqh = split(eq, seqLen, p.heads);
  std::vector<double> kh = split(k, kvSeq, p.kvHeads),
                      ekh = split(ek, kvSeq, p.kvHeads);
  std::vector<double> vh = split(v, kvSeq, p.kvHeads),
                      evh = split(ev, kvSeq, p.kvHeads);
  // clip_qkv: 1-Lipschitz, so the values clamp and their errors carry
  // over; before a QK-norm, or (OLMoE) after it.
  auto clipAll = [&] {
    if (p.clipQkv > 0)
      for (std::vector<double> *t : {&qh, &kh, &vh})
        naive::clip(t->data(), int64_t(t->size()), p.clipQkv);
  };
  if (p.qkNorm == ATTNC_QK_NORM_NONE)
    clipAll();
  normBound(qh, eqh, w.nq, w.nbq, p, batch, p.heads, seqLen);
  normBound(kh, ekh, w.nk, w.nbk, p, batch, p.kvHeads, kvSeq);
  if (p.qkNorm != ATTNC_QK_NORM_NONE)
    clipAll();
  ropeBound(qh, eqh, p, batch, p.heads, seqLen, run.qStart(), run.qCallEnd());
  ropeBound(kh, ekh, p, batch, p.kvHeads, kvSeq, run.kvStart(), run.kvCallEnd());
  temperatureT<double>(qh.data(), eqh.data(), p, batch, p.heads, seqLen, run.qStart());
  // A bf16/f16 KV cache: a decode step reads keys and values rounded to
  // the dtype (the forward pass reads them unrounded; the bound covers
  // both).
  if (p.kvCache) {
    double rel, abs;
    roundingInModel(model, p.dtype, rel, abs);
    for (size_t i = 0; rel > 0 && i < kh.size(); ++i) {
      ekh[i] += rel * std::fabs(kh[i]) + abs;
      evh[i] += rel * std::fabs(vh[i]) + abs;
    }
  }
  // bf16 dot products (options.bf16Dots: the AVX512-BF16 flash kernel of
  // a bf16 block, attn.sdpa's dot_type): the scaled Q, K, V and the
  // softmax numerators P are rounded to bf16 (float32 accumulation):
  // u|q|, u|k|, u|v| more on their elements (K and V once: a bf16 cache's
  // are already rounded), and P's rounding below.
  const bool bf16Attn = options.bf16Dots;
  // attn.probs has no dot_type: the attention weights a probs kernel
  // writes come from float32 dot products on every path, so their bound
  // leaves the bf16 dot products out (computed apart below).
  const bool probsApart = bf16Attn && p.wantProbs;
  const std::vector<double> eqhF = probsApart ? eqh : std::vector<double>(),
                            ekhF = probsApart ? ekh : std::vector<double>();
  if (bf16Attn) {
    for (size_t i = 0; i < qh.size(); ++i)
      eqh[i] += uA * std::fabs(qh[i]) + absA;
    for (size_t i = 0; !p.kvCache && i < kh.size(); ++i) {
      ekh[i] += uA * std::fabs(kh[i]) + absA;
      evh[i] += uA * std::fabs(vh[i]) + absA;
    }
  }
  std::vector<double> oh(qh.size()), eoh(qh.size());
  if (p.wantProbs) {
    r.probs.assign(size_t(batch * p.heads * seqLen * kvSeq), 0.0);
    r.probsBound.assign(r.probs.size(), 0.0);
  }
  double scale = p.scale != 0 ? p.scale : 1.0 / std::sqrt(double(p.headDim));
  const double perRow = double(kvSeq) * p.headDim;
  const BlockMods blockMods(p, weights);
  const naive::ScoreMods &mods = blockMods.mods;
  // With W_O, the softmax part of the error of peaky rows goes through it
  // exactly (ExactKeys); eoMag keeps the whole per-component bound for
  // the rounding term's magnitude.
  std::vector<ExactKeys> exact(p.outProj ? size_t(batch * p.heads * seqLen) : 0);
  std::vector<double> eohMag(p.outProj ? qh.size() : 0);
  sdpaBound(model, qh.data(), eqh.data(), kh.data(), ekh.data(), vh.data(),
            evh.data(), oh.data(), eoh.data(), batch, p.heads, p.kvHeads,
            seqLen, kvSeq, p.headDim, scale, p.mask, p.topLeft, p.window,
            run.q(), run.kv(), p.wantProbs && !probsApart ? r.probs.data() : nullptr,
            p.wantProbs && !probsApart ? r.probsBound.data() : nullptr,
            [&](int64_t n) { report(double(n) * perRow); }, mods,
            p.outProj ? exact.data() : nullptr,
            p.outProj ? eohMag.data() : nullptr, uP);
  if (probsApart) {
    std::vector<double> o2(qh.size()), eo2(qh.size());
    sdpaBound(model, qh.data(), eqhF.data(), kh.data(), ekhF.data(), vh.data(),
              evh.data(), o2.data(), eo2.data(), batch, p.heads, p.kvHeads, seqLen, kvSeq,
              p.headDim, scale, p.mask, p.topLeft, p.window, run.q(), run.kv(),
              r.probs.data(), r.probsBound.data(),
              [&](int64_t n) { report(double(n) * perRow); }, mods, nullptr, nullptr);
  }
  std::vector<double> o = mergeHeads(oh, batch, seqLen, p.heads, p.headDim);
  std::vector<double> eo = mergeHeads(eoh, batch, seqLen, p.heads, p.headDim);
  if (bf16Gemm && p.outProj)
    for (size_t i = 0; i < o.size(); ++i)
      eo[i] += uA * (std::fabs(o[i]) + eo[i]) + absA;
  if (!p.outProj) {
    r.y = std::move(o);
    r.bound = std::move(eo);
    zeroPaddedRows(r.y, run, batch, seqLen, qW);
    zeroPaddedRows(r.bound, run, batch, seqLen, qW);
    return r;
  }
  r.y.resize(size_t(rows * d));
  r.bound.resize(r.y.size());
  // The attention output's errors: correlated within a head (shared
  // softmax weights), independent across heads.
  std::vector<double> eoMag = mergeHeads(eohMag, batch, seqLen, p.heads, p.headDim);
  // Row r, head h with exact keys: the softmax part of y_j's error is
  // sum_k |w'_k - w_k| |vt_kj - ot_j| with vt_k = v_k Wo_h, ot = o_h Wo_h
  // (the same first-order / zeroth-order bounds as in sdpaBound, on the
  // projected values): one direction, not head_dim absolute values.
  const int64_t dh = p.headDim, group = p.heads / p.kvHeads;
  std::vector<double> ot(static_cast<size_t>(d)),
      dvt(static_cast<size_t>(d) * ExactKeys::kMax);
  auto rowExtra = [&](int64_t row, double *extra) {
    const int64_t b = row / seqLen, t = row % seqLen;
    bool any = false;
    for (int64_t h = 0; h < p.heads; ++h) {
      const ExactKeys &ek = exact[size_t((b * p.heads + h) * seqLen + t)];
      double *out = extra + h * d;
      std::fill(out, out + d, 0.0);
      if (!ek.n)
        continue;
      any = true;
      const double *orow = oh.data() + size_t(((b * p.heads + h) * seqLen + t) * dh);
      const double *wo = w.wo.data() + size_t(h * dh * d); // rows h*dh.., [qW, d]
      std::fill(ot.begin(), ot.end(), 0.0);
      for (int64_t c = 0; c < dh; ++c)
        for (int64_t j = 0; j < d; ++j)
          ot[size_t(j)] += orow[c] * wo[c * d + j];
      for (int m = 0; m < ek.n; ++m) {
        double *dv = dvt.data() + size_t(m) * size_t(d);
        for (int64_t j = 0; j < d; ++j)
          dv[j] = -ot[size_t(j)];
        if (ek.key[m] == kvSeq)
          continue; // the sink: v = 0
        const double *vrow =
            vh.data() + size_t(((b * p.kvHeads + h / group) * kvSeq + ek.key[m]) * dh);
        for (int64_t c = 0; c < dh; ++c)
          for (int64_t j = 0; j < d; ++j)
            dv[j] += vrow[c] * wo[c * d + j];
      }
      for (int64_t j = 0; j < d; ++j) {
        double dsum = 0, kind2 = 0, klin = 0, rem = 0, zero = 0, resid = 0;
        for (int m = 0; m < ek.n; ++m) {
          const double dv = dvt[size_t(m) * size_t(d) + size_t(j)];
          const double adv = std::fabs(dv);
          dsum += mulz(ek.wD[m], adv) + (model.rigorous ? mulz(ek.wKind[m], adv) : 0.0);
          if (!model.rigorous)
            kind2 += std::pow(mulz(ek.wKind[m], adv), 2);
          klin += mulz(ek.wKlin[m], adv);
          rem += mulz(ek.rw[m], adv);
          zero += mulz(ek.p0[m], adv);
          resid += ek.w[m] * dv;
        }
        const double first = (model.rigorous ? dsum : std::sqrt(dsum * dsum + kind2)) +
                             klin + rem + mulz(ek.a1c, std::fabs(resid));
        const double part = ek.scale * std::min(zero, first);
        out[j] = part >= 0 ? part : std::numeric_limits<double>::infinity();
      }
    }
    return any;
  };
  linearBound(model, o.data(), eo.data(), w.wo.data(), orNull(w.bo),
              r.y.data(), r.bound.data(), rows, qW, d, p.headDim, report,
              rowExtra, eoMag.data());
  // Padded query rows are exactly zero: nothing to round.
  zeroPaddedRows(r.y, run, batch, seqLen, d);
  zeroPaddedRows(r.bound, run, batch, seqLen, d);
  return r;
}

std::vector<double> interpretFloat32(const BlockParams &p,
                                     const std::vector<const float *> &weights,
                                     const float *x, int64_t batch,
                                     int64_t seqLen) {
  return interpretT<float>(p, weights, x, batch, seqLen, VariantInputs(),
                           nullptr);
}

std::vector<double> interpretFloat32(const BlockParams &p,
                                     const std::vector<const float *> &weights,
                                     const float *x, int64_t batch,
                                     int64_t seqLen, const VariantInputs &in) {
  return interpretT<float>(p, weights, x, batch, seqLen, in, nullptr);
}

} // namespace attnrt
