//===- attnc-dump.cpp - print (and check) the IR at every stage -----------===//
//
//   attnc-dump SPEC.yaml [--stage NAME|all] [--list-stages] [--check]
//
// Prints a banner line `// ===== stage: NAME (summary)` and the IR of each
// selected stage. --check runs the IR evaluator (double precision) on every
// attn-level stage with the same random weights and input and reports the
// max abs error against the conceptual stage; it exits 1 when a stage
// changes the function (error above --check-tol).
//
//===----------------------------------------------------------------------===//
#include "attnc/Dialect/Attn/IR/AttnOps.h"
#include "attnc/Eval/IREvaluator.h"
#include "attnc/Pipeline/Pipeline.h"
#include "ToolSupport.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;

static cl::OptionCategory cat("attnc-dump options");
static cl::opt<std::string> input(cl::Positional, cl::desc("SPEC.yaml"), cl::cat(cat));
static cl::opt<std::string> stage("stage",
    cl::desc("stage to print: a name from --list-stages, or all (default)"),
    cl::init("all"), cl::cat(cat));
static cl::opt<bool> listStages("list-stages", cl::desc("list the stages and exit"),
                                cl::cat(cat));
static cl::opt<bool> check("check",
    cl::desc("evaluate every attn-level stage and compare with the conceptual one"),
    cl::cat(cat));
static cl::opt<double> checkTol("check-tol",
    cl::desc("max abs error (double) a stage may differ by (default 1e-9)"),
    cl::init(1e-9), cl::cat(cat));
static cl::opt<int64_t> seqLen("seq-len", cl::desc("sequence length for --check (default 7)"),
                               cl::init(7), cl::cat(cat));
static cl::opt<int64_t> batch("batch", cl::desc("batch for --check (default 2)"),
                              cl::init(2), cl::cat(cat));
static cl::opt<uint64_t> seed("seed", cl::desc("random seed for --check (default 1)"),
                              cl::init(1), cl::cat(cat));
static cl::opt<std::string> target("target",
    cl::desc("instruction set for the LLVM stages: host, x86-64, x86-avx2, x86-avx512"),
    cl::init("host"), cl::cat(cat));
static cl::opt<bool> locations("locations",
    cl::desc("print MLIR locations (they point at the spec's YAML lines)"),
    cl::cat(cat));
static cl::opt<std::string> testingBreakStage("testing-break-stage", cl::Hidden,
    cl::desc("testing only: swap the key and value operands of the attention "
             "after this stage, so --check must fail"),
    cl::cat(cat));
static cl::opt<bool> noFuse("no-fuse-qkv", cl::desc("skip attn-fuse-qkv"), cl::cat(cat));
static cl::opt<bool> noViews("no-heads-as-views", cl::desc("skip attn-heads-as-views"),
                             cl::cat(cat));

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(cat);
  attnc::tools::setVersionPrinter();
  cl::ParseCommandLineOptions(argc, argv,
      "attnc-dump: print the IR of an attention spec at each pipeline stage\n\n"
      "  attnc-dump SPEC.yaml [--stage NAME|all] [--check] [--list-stages]\n");
  if (listStages) {
    for (const auto &s : attnc::stageList())
      outs() << left_justify(s.name, 12) << " " << s.summary << "\n";
    return 0;
  }
  if (input.empty()) {
    errs() << "attnc-dump: error: no spec given (see --help)\n";
    return 2;
  }
  bool all = stage == "all";
  int want = attnc::stageIndex(stage);
  if (!all && want < 0) {
    errs() << "attnc-dump: error: --stage: unknown stage '" << stage
           << "' (see --list-stages)\n";
    return 2;
  }
  std::optional<attnc::CompileOptions> optsOr =
      attnc::tools::compileOptions("attnc-dump", target, noFuse, noViews);
  if (!optsOr)
    return 2;
  attnc::CompileOptions opts = *optsOr;
  std::optional<attnc::Spec> spec = attnc::tools::loadSpec(input);
  if (!spec)
    return 2;
  if (seqLen < 1 || batch < 1) {
    errs() << "attnc-dump: error: --seq-len and --batch must be >= 1\n";
    return 2;
  }

  auto ctx = attnc::tools::makeContext();
  // With --check alone, stop after the last attn-level stage.
  int last = all ? static_cast<int>(attnc::stageList().size()) - 1 : want;
  if (check && (all || want <= attnc::stageIndex("viewed")))
    last = std::max(last, attnc::stageIndex("viewed"));
  opts.lastStage = attnc::stageList()[last].name;

  attnc::EvalInputs inputs;
  std::vector<double> reference;
  bool checkFailed = false;
  if (check) {
    // Sizes are checked (overflow-safe, bounded) before anything is allocated.
    std::string err;
    if (!attnc::randomInputs(*spec, batch, seqLen, seed, inputs, err)) {
      errs() << "attnc-dump: error: --check: " << err << "\n";
      return 2;
    }
  }

  attnc::Compilation comp(*ctx, *spec, opts);
  auto onStage = [&](const attnc::StageView &v) -> bool {
    int idx = attnc::stageIndex(v.stage->name);
    bool print = all || idx == want;
    if (print) {
      outs() << "// ===== stage: " << v.stage->name << " (" << v.stage->summary
             << ")\n";
      if (!v.text.empty())
        outs() << v.text;
      else if (v.llvmModule && idx >= attnc::stageIndex("llvm-ir"))
        v.llvmModule->print(outs(), nullptr);
      else if (v.module)
        mlir::ModuleOp(v.module).print(
            outs(), locations ? mlir::OpPrintingFlags().enableDebugInfo(true, false).useLocalScope()
                            : mlir::OpPrintingFlags());
      outs() << "\n";
    }
    if (testingBreakStage == v.stage->name)
      mlir::ModuleOp(v.module).walk([](attnc::attn::SdpaOp op) {
        mlir::Value k = op.getKey(), val = op.getValue();
        op.getKeyMutable().assign(val);
        op.getValueMutable().assign(k);
      });
    if (check && v.stage->attnLevel) {
      std::vector<double> out;
      std::string err;
      if (!attnc::evaluateAttnIR(v.module, *spec, inputs, out, err)) {
        errs() << "attnc-dump: error: --check: stage " << v.stage->name << ": "
               << err << "\n";
        checkFailed = true;
        return false;
      }
      if (reference.empty())
        reference = out;
      double maxAbs = 0, maxRef = 0;
      bool sizeOk = out.size() == reference.size();
      for (size_t i = 0; sizeOk && i < out.size(); ++i) {
        double d = std::fabs(out[i] - reference[i]);
        maxAbs = std::isnan(d) ? INFINITY : std::max(maxAbs, d);
        maxRef = std::max(maxRef, std::fabs(reference[i]));
      }
      bool ok = sizeOk && maxAbs <= checkTol;
      outs() << "// check: stage " << left_justify(v.stage->name, 10)
             << " max_abs_err vs conceptual = " << format("%.3e", maxAbs)
             << " (max |y| = " << format("%.3g", maxRef) << ", batch " << batch
             << ", seq_len " << seqLen << ", seed " << seed << ") "
             << (ok ? "OK" : "FAILED: this stage changes the function") << "\n";
      if (!ok)
        checkFailed = true;
    }
    return true;
  };
  if (mlir::failed(comp.run(onStage)))
    return 1;
  return checkFailed ? 1 : 0;
}
