//===- FuzzAttnIR.cpp - libFuzzer harness: attnc-opt's input path ---------===//
//
// Input: MLIR source text. Parsed in a context with every dialect attnc
// registers (attn, func, arith, tensor, ...), verified, and when it verifies,
// run through attnc's attn-level stage pipelines exactly as attnc runs them
// (fused: attn-fuse-qkv + canonicalize; viewed: attn-heads-as-views +
// canonicalize + cse; loops: attn-to-loops, attnc-outline-tasks,
// attnc-pack-weights), verifying after each pass.
// Verifiers must reject what the passes cannot handle: any crash or
// sanitizer report here is a bug in a verifier or a pass.
//
//===----------------------------------------------------------------------===//
#include "attnc/Pipeline/Pipeline.h"
#include "attnc/Support/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cstdint>
#include <string>

namespace {
struct Setup {
  mlir::DialectRegistry registry;
  Setup() {
    attnc::registerAllAttncDialects(registry);
    attnc::registerAllAttncPasses();
  }
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Setup setup;
  // Longer inputs only slow the search down (and MLIR's recursive-descent
  // parser has no nesting bound of its own).
  if (size > 8192)
    return 0;
  mlir::MLIRContext ctx(setup.registry, mlir::MLIRContext::Threading::DISABLED);
  ctx.getDiagEngine().registerHandler(
      [](mlir::Diagnostic &) { return mlir::success(); });
  // MLIR's lexer relies on a NUL after the buffer (files are read that way,
  // with RequiresNullTerminator); libFuzzer's bytes have none, so copy them
  // into a std::string (found by this fuzzer: a symbol name at the very end
  // of the input read past it, regressions/attn-ir/symbol-at-end.mlir).
  std::string owned(reinterpret_cast<const char *>(data), size);
  llvm::StringRef text(owned.c_str(), owned.size());
  mlir::ParserConfig config(&ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, config);
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;
  for (const char *stage : {"fused", "viewed", "loops"}) {
    mlir::PassManager pm(&ctx, mlir::ModuleOp::getOperationName());
    if (mlir::failed(mlir::parsePassPipeline(attnc::stagePipeline(stage), pm)))
      __builtin_trap(); // attnc's own pipelines always parse
    if (mlir::failed(pm.run(*module)))
      return 0;
  }
  return 0;
}
