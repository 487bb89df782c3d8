//===- Interpreter.h - Reference semantics in double precision -*- C++ -*-===//
//
// The textbook attention block, as plain loops in double precision:
//   q = x Wq + bq, k = x_kv Wk + bk, v = x_kv Wv + bv   (per head h;
//                                    x_kv = x unless cross-attention)
//   o_h = softmax(q_h k_hᵀ · scale + M) v_h
//   y = concat_h(o_h) Wo + bo, rows past a sequence's length set to 0
// written independently of the compiler's lowering. M is the mask of the
// metadata plus the per-call valid lengths (padding), as docs/abi.md
// ("The attention variants") defines them. Two faces use these naive
// kernels: runtime checks of compiled kernels (from metadata) and the
// compiler's IR evaluator (attn-dialect stages).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_INTERPRETER_H
#define ATTNC_RUNTIME_INTERPRETER_H

#include "attnc/runtime/Block.h"
#include "attnc/runtime/abi.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace attnrt {
namespace naive {

/// y[m, n] = sum_k x[m, k] * w[k, n] + (b ? b[n] : 0), all row-major.
void linear(const double *x, const double *w, const double *b, double *y,
            int64_t m, int64_t k, int64_t n);

/// Scaled dot-product attention over [B, H, T, D] tensors (row-major):
/// q [B, Hq, Tq, D], k/v [B, Hkv, Tkv, D], o [B, Hq, Tq, D]. Query head h
/// reads kv head h / (Hq / Hkv).
///
/// Valid lengths (padding): sequence b has qValid[b] valid queries and
/// kvValid[b] valid keys (null: Tq and Tkv; callers check 0 <= qValid[b]
/// <= Tq and 0 <= kvValid[b] <= Tkv). Query i < qValid[b] sees key j iff
/// j < kvValid[b] and the mask lets it through:
///  * ATTNC_MASK_NONE, _PADDING: nothing more;
///  * _CAUSAL, _CAUSAL_PADDING: j <= i + off_b, off_b = kvValid[b] -
///    qValid[b] (bottom-right alignment) or 0 when topLeft;
///  * _SLIDING_WINDOW(_PADDING): causal, and j > i + off_b - window (the
///    `window` most recent keys; window <= 0: no restriction);
///  * _CHUNKED(_PADDING): causal, and j >= floor((i + off_b) / window) *
///    window (the query's own chunk).
/// (The _PADDING forms differ only in that forward takes the lengths.)
/// Query rows i >= qValid[b], and rows that see no key, are zero (and so
/// are their probs rows). `probs`, when not null, receives the softmax
/// weights [B, Hq, Tq, Tkv], 0 for masked keys.
/// The rotary embedding of abi.h (ATTNC_FEATURE_ROPE) in place on x
/// [B, H, T, D]: row t of sequence b at position start[b] + t (start null:
/// 0), with the frequencies r.invFreqAt(max_b start[b] + T), the batch's
/// length. No-op for
/// ATTNC_ROPE_NONE.
void rope(double *x, int64_t batch, int64_t heads, int64_t seq, int64_t d,
          const RopeParams &r, const int64_t *start = nullptr);

/// clip_qkv in place on n values: min(max(x, -limit), limit) (NaN stays).
void clip(double *x, int64_t n, double limit);

/// How a QK-norm normalises (attn.rms_norm's attributes, the kernel's
/// ATTNC_QK_NORM_* bits).
struct NormParams {
  double eps = 1e-6, offset = 0;
  bool acrossHeads = false; ///< over all H*D values of a token (OLMo 2)
  bool center = false;      ///< LayerNorm: x - mean(x) in place of x
  bool perHead = false;     ///< w (and bias) [H*D]: head h reads [h*D, (h+1)*D)
  bool noWeight = false;    ///< w is not read: 1 (Llama 4's L2 norm)
};

/// A block's NormParams (BlockParams::qkNorm and its eps and offset).
NormParams normParamsOf(const BlockParams &p);

/// QK-norm in place on x [B, H, T, D]: per (b, t) and head (or over all H*D
/// values with acrossHeads), with xc = x (LayerNorm, center: x - mean(x)),
/// x' = xc / sqrt(mean(xc^2) + eps) * (w + offset) + bias; w and bias [D]
/// (acrossHeads or perHead: [H*D]); bias may be null.
void rmsNorm(double *x, const double *w, int64_t batch, int64_t heads,
             int64_t seq, int64_t d, const NormParams &np, const double *bias = nullptr);

/// T5's bucket of rel = j - i (HF _relative_position_bucket, float32 as
/// torch computes it).
int32_t t5Bucket(int64_t rel, int64_t buckets, int64_t maxDistance, bool bidirectional);

/// How a score changes before the mask (abi.h, ATTNC_FEATURE_SCORE_MODS):
/// the reference's one description, used by sdpa and the error bound.
struct ScoreMods {
  double softcap = 0;              ///< 0: none
  const double *slopes = nullptr;  ///< [Hq] ALiBi slopes, or null
  bool beforeScale = false;
  /// [Hq] sink logits (gpt-oss): one more term exp(sink[h]) in each row's
  /// softmax denominator, with no value (not a score modifier: any() does
  /// not count it).
  const double *sinks = nullptr;
  /// T5: rel_bias [buckets, Hq] (row-major) and the bucket of rel = j - i'
  /// for rel in [-relRange, relRange] (the edges beyond): added after the
  /// scale, before softcap.
  const double *relBias = nullptr;
  const int32_t *relBuckets = nullptr;
  int64_t relRange = 0, hq = 0;
  /// BERT's relative_key: relEmb [d, relCols] (E transposed, relCols = 2P
  /// - 1); the score's dot q.k gains q.E[r] (and k.E[r] with
  /// relKeyQuery), r = qpos - j + P - 1 clamped to the table, before the
  /// scale (not a modifier of the scaled score: any() does not count it).
  const double *relEmb = nullptr;
  int64_t relCols = 0;
  bool relKeyQuery = false;
  /// The column r of E for the query at key position qpos and key j.
  int64_t relColumn(int64_t qpos, int64_t j) const {
    int64_t r = qpos - j + relCols / 2;
    return r < 0 ? 0 : r >= relCols ? relCols - 1 : r;
  }
  bool any() const { return softcap > 0 || slopes || relBias; }
  /// The score of query head h for q.k = dot, key j, query at key position
  /// qpos, with the softmax scale.
  double apply(double dot, double scale, int64_t h, int64_t qpos, int64_t j) const {
    double s = dot * scale;
    if (slopes)
      s = beforeScale ? (dot + slopes[h] * double(j - qpos)) * scale
                      : s + slopes[h] * double(j - qpos);
    if (relBias) {
      int64_t rel = j - qpos;
      rel = rel < -relRange ? -relRange : rel > relRange ? relRange : rel;
      s += relBias[relBuckets[rel + relRange] * hq + h];
    }
    if (softcap > 0)
      s = softcap * std::tanh(s / softcap);
    return s;
  }
};

void sdpa(const double *q, const double *k, const double *v, double *o,
          int64_t batch, int64_t hq, int64_t hkv, int64_t tq, int64_t tkv,
          int64_t d, double scale, uint32_t mask, bool topLeft = false,
          int64_t window = 0, const int64_t *qValid = nullptr,
          const int64_t *kvValid = nullptr, double *probs = nullptr,
          const ScoreMods &mods = ScoreMods());

} // namespace naive

/// The block's score modifiers as the naive kernels take them (pointing
/// into p, which must outlive the result).
naive::ScoreMods scoreModsOf(const BlockParams &p);

/// Deterministic test data: N(0, 1) values (the input x) and storage
/// weights scaled by 1/sqrt(min(rows, cols)) (1/4 for biases), so that
/// activations stay O(1) like in a trained layer. Both draw from `rng` in
/// order, so the same seed gives the same data in every tool.
std::vector<float> randomNormal(int64_t n, std::mt19937_64 &rng);
std::vector<std::vector<float>> randomWeights(const std::vector<TensorShape> &tensors,
                                              std::mt19937_64 &rng);

/// Runs the block in double precision. weights[i] holds storageTensors(p)[i]
/// (float32, row-major). x is [batch, seqLen, dModel]; returns y as
/// [batch, seqLen, dModel] (or heads*headDim when !outProj). Returns an empty
/// vector for an unknown layout or a weights count that does not match.
std::vector<double> interpret(const BlockParams &p,
                              const std::vector<const float *> &weights,
                              const float *x, int64_t batch, int64_t seqLen);
/// The same with the variants' inputs: K/V from in.xKv for a cross block,
/// padding lengths; y rows past lengths[b] are zero. `probs`, when not
/// null, receives the attention weights [batch, heads, seqLen, T_kv].
/// Empty (and probs untouched) when checkVariantInputs refuses `in`.
std::vector<double> interpret(const BlockParams &p,
                              const std::vector<const float *> &weights,
                              const float *x, int64_t batch, int64_t seqLen,
                              const VariantInputs &in,
                              std::vector<double> *probs = nullptr);

/// The reference y (bit-identical to interpret()) and, per element, a bound
/// on how far a correct float32 implementation of the block may be from it,
/// whatever its summation order, blocking, FMA use or online-softmax
/// rescaling: a forward error analysis run in double alongside the
/// reference, a posteriori from its own intermediate values (errors
/// propagated stage to stage over each reduction length: d_model,
/// head_dim, T_kv, heads*head_dim; per softmax row the logits' errors
/// split into q's part, shared by every key, and each key's own, of which
/// only what differs between the keys moves the weights, so q's error
/// enters through the keys' weighted spread k_j - sum w k; the exp
/// arguments' rounding relative to the logits' spread; each exp within 4
/// ulp, one per running-max change that can follow a key; the softmax part
/// of peaky rows carried through W_O exactly). Two models
/// (docs/checking.md):
///  * probabilistic (default): rounding errors as independent mean-zero
///    random variables (Higham & Mary 2019), lambda*sqrt(n)*u per length-n
///    reduction and root-sum-square propagation of independent errors;
///    with lambda = 10 a reduction exceeds it with probability below
///    2n*exp(-50);
///  * rigorous: the worst case, gamma_n = n*u/(1-n*u) and absolute values
///    throughout; never exceeded, but at GPT-2 sizes so wide (tens of
///    percent, or unbounded for peaky inputs) that it checks little.
/// `progress`, when set, is called with the fraction of the work done
/// (0..1). Empty vectors when the block cannot be run (as interpret()).
/// With p.wantProbs, also the attention weights [batch, heads, seqLen, T_kv]
/// and per weight a bound on a correct float32 kernel's error: P_j (the
/// softmax perturbation of the y bound, docs/checking.md; about 0 in a
/// one-hot row) plus the rounding of the normalisation and 2^-125; 0 for
/// masked keys; infinite where it would let the weight be anything in
/// [0, 1].
struct Reference {
  std::vector<double> y, bound;
  std::vector<double> probs, probsBound;
};
struct BoundOptions {
  bool rigorous = false;
  double lambda = 10; ///< probabilistic model's confidence parameter
  /// The kernel multiplies bf16-rounded Q, K, P and V (a bf16 block on the
  /// AVX512-BF16 code path: ATTNC_ISA_AVX512_BF16 selected): their
  /// rounding joins the bound (docs/checking.md).
  bool bf16Dots = false;
  /// bf16 weights: what the kernel's GEMMs multiplied them with.
  ///  * Unknown (attnc-dump, which checks several code paths against one
  ///    reference): x's rounding to bf16 joins the bound as u|x|, the
  ///    attention output's before W_O as u|o| (each 4u in the probabilistic
  ///    model: roundings inside the computation, docs/checking.md);
  ///  * Bf16 (the AVX512-BF16 code path ran: selected_isa() is
  ///    ATTNC_ISA_AVX512_BF16): the reference multiplies x and x_kv rounded
  ///    to bf16 exactly as the kernel does (RNE; exact inputs, so no bound
  ///    term), and u|o| before W_O (4u, as above);
  ///  * Float32 (any other code path): the weights are converted to
  ///    float32 and nothing is rounded to bf16.
  enum class GemmInputs { Unknown, Float32, Bf16 };
  GemmInputs bf16Gemm = GemmInputs::Unknown;
};
Reference referenceWithBound(const BlockParams &p,
                             const std::vector<const float *> &weights,
                             const float *x, int64_t batch, int64_t seqLen,
                             const std::function<void(double)> &progress = {},
                             const BoundOptions &options = BoundOptions());
/// The same with the variants' inputs (as interpret()). Masked keys shorten
/// each row's softmax and weighted sum to its visible keys; rows past
/// lengths[b] are zero with a zero bound.
Reference referenceWithBound(const BlockParams &p,
                             const std::vector<const float *> &weights,
                             const float *x, int64_t batch, int64_t seqLen,
                             const VariantInputs &in,
                             const std::function<void(double)> &progress = {},
                             const BoundOptions &options = BoundOptions());

/// The same loops in float arithmetic ("naive32"): what a straightforward
/// float32 implementation of the formula gets (kept for experiments and
/// tests; the --check gate uses referenceWithBound, not this).
std::vector<double> interpretFloat32(const BlockParams &p,
                                     const std::vector<const float *> &weights,
                                     const float *x, int64_t batch,
                                     int64_t seqLen);
std::vector<double> interpretFloat32(const BlockParams &p,
                                     const std::vector<const float *> &weights,
                                     const float *x, int64_t batch,
                                     int64_t seqLen, const VariantInputs &in);

} // namespace attnrt

#endif // ATTNC_RUNTIME_INTERPRETER_H
