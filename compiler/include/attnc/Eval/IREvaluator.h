//===- IREvaluator.h - run attn-dialect IR in double precision --*- C++ -*-===//
//
// Walks an attn-level function op by op and executes each op with the
// runtime's naive double-precision kernels (attnrt::naive). attnc-dump
// --check uses it to show that every graph rewrite keeps the function:
// conceptual, fused and viewed IR must agree to rounding (~1e-12).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_EVAL_IREVALUATOR_H
#define ATTNC_EVAL_IREVALUATOR_H

#include "attnc/Spec/Spec.h"
#include "attnc/runtime/Interpreter.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace attnc {

struct EvalInputs {
  std::vector<std::vector<float>> storage; ///< storageTensors(spec) order
  std::vector<float> x;                    ///< [batch, seq, d_model]
  int64_t batch = 1, seq = 1;
  /// Cross-attention: x_kv [batch, kvSeq, d_model].
  std::vector<float> xKv;
  int64_t kvSeq = 0;
  /// Padding masks: valid lengths per sequence (empty: every token valid).
  std::vector<int32_t> lengths, kvLengths;
  /// Each sequence's first position (rotary embeddings; empty: 0).
  std::vector<int32_t> positions;
};

/// The run-time inputs of the variants (padding lengths, x_kv) as the
/// runtime's interpreter and loader take them; points into `in`.
attnrt::VariantInputs variantInputs(const Spec &spec, const EvalInputs &in);

/// Most elements the evaluator holds in one tensor (values in double: 1 GiB),
/// and in all weight tensors together. Larger inputs are refused with an
/// error before anything is allocated.
constexpr int64_t kMaxEvalElements = int64_t(1) << 27;

/// Random storage weights and input for `spec` (deterministic in `seed`);
/// for cross-attention also x_kv with kvSeq = seq + 2 tokens, and for
/// padding masks mixed lengths (seq for the first sequence, shorter ones
/// after it).
/// Returns false with `error` set, allocating nothing, when batch or seq is
/// not positive or a tensor of the evaluation (the input, the widest
/// activation [batch, seq, max(d_model, (heads + 2*kv_heads) * head_dim)],
/// the attention's [batch, heads, seq, head_dim], or all weights together)
/// would exceed kMaxEvalElements (sizes multiply without overflow).
bool randomInputs(const Spec &spec, int64_t batch, int64_t seq, uint64_t seed,
                  EvalInputs &out, std::string &error);

/// Evaluates @<spec.name> of `module` (or @<function>: a code path's clone
/// in the tiled stage); returns false with `error` set when an op is not
/// supported, the IR is inconsistent (an operand with no value, shapes that
/// do not fit, a view outside its source) or a tensor would exceed
/// kMaxEvalElements. Never reads or writes out of bounds, whatever the
/// (verified) IR says.
bool evaluateAttnIR(mlir::ModuleOp module, const Spec &spec,
                    const EvalInputs &in, std::vector<double> &out,
                    std::string &error, const std::string &function = "");

} // namespace attnc

#endif
