//===- Interpreter.h - Reference semantics in double precision -*- C++ -*-===//
//
// The textbook attention block, as plain loops in double precision:
//   q = x Wq + bq, k = x Wk + bk, v = x Wv + bv      (per head h)
//   o_h = softmax(q_h k_hᵀ · scale + M) v_h
//   y = concat_h(o_h) Wo + bo
// written independently of the compiler's lowering. Two faces use these
// naive kernels: runtime checks of compiled kernels (from metadata) and the
// compiler's IR evaluator (attn-dialect stages).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_INTERPRETER_H
#define ATTNC_RUNTIME_INTERPRETER_H

#include "attnc/runtime/abi.h"

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
/// reads kv head h / (Hq / Hkv). mask: ATTNC_MASK_NONE, _CAUSAL or
/// _SLIDING_WINDOW (_PADDING / _CAUSAL_PADDING with every token valid are
/// the same as _NONE / _CAUSAL). Causal uses bottom-right alignment (query i
/// sees keys j <= i + Tkv - Tq) unless topLeft (then j <= i). The sliding
/// window is causal and further restricts query i to the `window` most
/// recent keys: j > i + off - window (window <= 0: no restriction). A row
/// whose keys are all masked yields zeros.
void sdpa(const double *q, const double *k, const double *v, double *o,
          int64_t batch, int64_t hq, int64_t hkv, int64_t tq, int64_t tkv,
          int64_t d, double scale, uint32_t mask, bool topLeft = false,
          int64_t window = 0);

} // namespace naive

/// Storage-layout weights of one block, by the ecosystem's tensor names.
struct BlockParams {
  int64_t dModel = 0, heads = 0, kvHeads = 0, headDim = 0;
  uint32_t mask = ATTNC_MASK_NONE;
  bool topLeft = false;
  int64_t window = 0; ///< sliding-window size (ATTNC_MASK_SLIDING_WINDOW)
  bool bias = true, outProj = true;
  double scale = 0;   ///< 0 = 1/sqrt(headDim)
  uint32_t layout = ATTNC_LAYOUT_GPT2_CONV1D;
};

BlockParams paramsFromInfo(const attnc_kernel_info &info);

/// The storage tensors (names and shapes) a block of this shape takes, in
/// the order the pack entry expects. Must agree with the compiler's list.
struct TensorShape {
  std::string name;
  std::vector<int64_t> shape;
};
std::vector<TensorShape> storageTensors(const BlockParams &p);

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

/// The reference y (bit-identical to interpret()) and, per element, a bound
/// on how far a correct float32 implementation of the block may be from it,
/// whatever its summation order, blocking, FMA use or online-softmax
/// rescaling: a forward error analysis run in double alongside the
/// reference (errors propagated stage to stage over each reduction length:
/// d_model, head_dim, T_kv, heads*head_dim; the exp arguments' rounding
/// scaled by the logits' magnitude; each exp within 4 ulp). Two models
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
struct Reference {
  std::vector<double> y, bound;
};
struct BoundOptions {
  bool rigorous = false;
  double lambda = 10; ///< probabilistic model's confidence parameter
};
Reference referenceWithBound(const BlockParams &p,
                             const std::vector<const float *> &weights,
                             const float *x, int64_t batch, int64_t seqLen,
                             const std::function<void(double)> &progress = {},
                             const BoundOptions &options = BoundOptions());

/// The same loops in float arithmetic ("naive32"): what a straightforward
/// float32 implementation of the formula gets (kept for experiments and
/// tests; the --check gate uses referenceWithBound, not this).
std::vector<double> interpretFloat32(const BlockParams &p,
                                     const std::vector<const float *> &weights,
                                     const float *x, int64_t batch,
                                     int64_t seqLen);

} // namespace attnrt

#endif // ATTNC_RUNTIME_INTERPRETER_H
