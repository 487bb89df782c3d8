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
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace attnc {

struct EvalInputs {
  std::vector<std::vector<float>> storage; ///< storageTensors(spec) order
  std::vector<float> x;                    ///< [batch, seq, d_model]
  int64_t batch = 1, seq = 1;
};

/// Random storage weights and input for `spec` (deterministic in `seed`).
EvalInputs randomInputs(const Spec &spec, int64_t batch, int64_t seq,
                        uint64_t seed);

/// Evaluates @<spec.name> of `module` (or @<function>: a code path's clone
/// in the tiled stage); returns false with `error` set when an op is not
/// supported or the IR is inconsistent.
bool evaluateAttnIR(mlir::ModuleOp module, const Spec &spec,
                    const EvalInputs &in, std::vector<double> &out,
                    std::string &error, const std::string &function = "");

} // namespace attnc

#endif
