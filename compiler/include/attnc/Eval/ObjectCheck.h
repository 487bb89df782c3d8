//===- ObjectCheck.h - run what a compilation produced ----------*- C++ -*-===//
//
// attnc-dump --check follows the function past the attn-level stages: the
// IR evaluator runs each code path of the `targeted` stage, and this file
// compiles the finished module (after llvm-ir-opt) into a temporary kernel
// library, loads it through libattnrt and runs each of its code paths on the
// same inputs, so a lowering bug shows up as a wrong compiled stage even
// when every attn-level stage agrees.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_EVAL_OBJECTCHECK_H
#define ATTNC_EVAL_OBJECTCHECK_H

#include "attnc/Eval/IREvaluator.h"
#include "attnc/Pipeline/Pipeline.h"

#include <string>
#include <vector>

namespace attnc {

struct CompiledRun {
  std::string isa;        ///< the code path that ran (avx512, avx2, ...)
  std::vector<float> y;   ///< its output on the inputs
};

/// Links `comp`'s LLVM module (run to llvm-ir-opt) with the C glue into a
/// temporary shared object and runs every code path this CPU supports
/// (capping ATTNC_ISA per path) on `in`. False with `error` on failure.
bool runCompiledPaths(Compilation &comp, const Spec &spec, Isa isa,
                      const EvalInputs &in, std::vector<CompiledRun> &runs,
                      std::string &error);

} // namespace attnc

#endif
