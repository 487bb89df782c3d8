//===- attnc-dump.cpp - print (and check) the IR at every stage -----------===//
//
//   attnc-dump SPEC.yaml [--stage NAME|all] [--list-stages] [--check]
//
// Prints a banner line `// ===== stage: NAME (summary)` and the IR of each
// selected stage (all of them by default). --check follows the function
// through the pipeline on the same random weights and input and prints one
// line per stage with its max abs error against the conceptual stage (and
// no IR unless --stage asks for some): the IR evaluator (double) runs the
// attn-level stages and each code path of the targeted stage (they must agree
// to --check-tol), then the finished module is linked into a temporary
// kernel and each of its code paths runs (it must pass the float32 gate of
// attnc-run --check). Exit 1 at the first stage that computes something
// else.
//
//===----------------------------------------------------------------------===//
#include <csignal>
#include "attnc/Dialect/Attn/IR/AttnOps.h"
#include "attnc/Eval/IREvaluator.h"
#include "attnc/Eval/ObjectCheck.h"
#include "attnc/Target/PackPlan.h"
#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Runtime.h"
#include "attnc/Pipeline/Pipeline.h"
#include "ToolSupport.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;
using attnc::attn::AttnDialect;

static cl::OptionCategory cat("attnc-dump options");
static cl::opt<std::string> input(cl::Positional, cl::desc("SPEC.yaml"), cl::cat(cat));
static cl::opt<std::string> hfDir("hf",
    cl::desc("the spec of an attention module of a Hugging Face model directory "
             "(as attnc --hf)"),
    cl::value_desc("DIR"), cl::cat(cat));
static cl::opt<std::string> hfModule("module",
    cl::desc("with --hf: the attention module (model.layers.5.self_attn, ...)"),
    cl::value_desc("PATH"), cl::cat(cat));
static cl::opt<int> hfLayer("layer",
    cl::desc("with --hf: the N-th self-attention module of a decoder-only model "
             "(as attnc --layer)"),
    cl::value_desc("N"), cl::init(-1), cl::cat(cat));
static cl::list<std::string> setKeys("set",
    cl::desc("with --hf: override or add a top-level spec key (repeatable, each key once)"),
    cl::value_desc("KEY=VALUE"), cl::cat(cat));
static cl::opt<std::string> stage("stage",
    cl::desc("stage to print: a name from --list-stages, or all (the default "
             "without --check; with --check, nothing unless asked)"),
    cl::init(""), cl::cat(cat));
static cl::opt<bool> listStages("list-stages", cl::desc("list the stages and exit"),
                                cl::cat(cat));
static cl::opt<bool> check("check",
    cl::desc("run every stage on the same inputs (IR evaluator for the attn "
             "stages and the targeted code paths, the compiled kernel's code "
             "paths after that) and compare with the conceptual one"),
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
static cl::opt<bool> locations("locations",
    cl::desc("print MLIR locations (they point at the spec's YAML lines)"),
    cl::cat(cat));
static cl::opt<std::string> testingBreakStage("testing-break-stage", cl::Hidden,
    cl::desc("testing only: swap the key and value operands of the attention "
             "after this stage, so --check must fail"),
    cl::cat(cat));
static cl::opt<std::string> testingBreakAfter("testing-break-after-check", cl::Hidden,
    cl::desc("testing only: swap the key and value operands of the attention "
             "after this stage was checked, so a later stage must fail"),
    cl::cat(cat));

static int dumpMain(int argc, char **argv) {
  cl::HideUnrelatedOptions({&cat, &attnc::tools::sharedCategory});
  attnc::tools::registerMLIROptions();
  attnc::tools::setVersionPrinter();
  // A parse error (unknown option, missing value) is bad usage: exit 2.
  if (!attnc::tools::parseCommandLine(argc, argv, "attnc-dump",
      "attnc-dump: print the IR of an attention spec at each pipeline stage\n\n"
      "  attnc-dump SPEC.yaml [--stage NAME|all] [--check] [--list-stages]\n"
      "  attnc-dump --hf DIR --module PATH [--stage ...] [--check]\n"
      "  attnc-dump --hf DIR --layer N [--stage ...] [--check]\n"))
    return 2;
  if (listStages) {
    for (const auto &s : attnc::stageList())
      outs() << left_justify(s.name, 12) << " " << s.summary << "\n";
    return 0;
  }
  if (!attnc::tools::checkHfOptions("attnc-dump", input, hfDir, hfModule,
                                    hfLayer.getNumOccurrences() > 0, hfLayer,
                                    "--module, --layer and --set",
                                    !hfModule.empty() || hfLayer >= 0 || !setKeys.empty()))
    return 2;
  if (stage.getNumOccurrences() && stage.empty()) {
    errs() << "attnc-dump: error: --stage: expected a stage name or 'all' (see "
              "--list-stages)\n";
    return 2;
  }
  // Options of --check without it would do nothing: refused, not ignored.
  for (const cl::Option *o : std::initializer_list<const cl::Option *>{
           &checkTol, &seqLen, &batch, &seed})
    if (o->getNumOccurrences() && !check) {
      errs() << "attnc-dump: error: --" << o->ArgStr
             << " applies to --check, which is not given\n";
      return 2;
    }
  if (!(checkTol >= 0) || !std::isfinite(checkTol)) {
    errs() << "attnc-dump: error: --check-tol " << checkTol
           << ": expected a finite tolerance >= 0\n";
    return 2;
  }
  bool printNone = check && stage.empty();
  bool all = stage == "all" || (stage.empty() && !check);
  int want = stage.empty() ? -1 : attnc::stageIndex(stage);
  if (!all && !printNone && want < 0) {
    errs() << "attnc-dump: error: --stage: unknown stage '" << stage
           << "' (see --list-stages)\n";
    return 2;
  }
  std::optional<attnc::CompileOptions> optsOr =
      attnc::tools::compileOptions("attnc-dump");
  if (!optsOr)
    return 2;
  attnc::CompileOptions opts = *optsOr;
  std::optional<attnc::Spec> spec =
      hfDir.empty() ? attnc::tools::loadSpec(input)
                    : attnc::tools::loadHfSpec(hfDir, hfModule, hfLayer,
                                               std::vector<std::string>(setKeys.begin(),
                                                                        setKeys.end()),
                                               "", "attnc-dump");
  if (!spec)
    return 2;
  if (seqLen < 1 || batch < 1) {
    errs() << "attnc-dump: error: --seq-len and --batch must be >= 1\n";
    return 2;
  }
  // Checked before any stage runs: the compiled kernel would refuse it.
  if (check && spec->maxSeqLen > 0 && seqLen > spec->maxSeqLen) {
    errs() << "attnc-dump: error: --seq-len " << seqLen << " exceeds the spec's max_seq_len "
           << spec->maxSeqLen << " (see --help)\n";
    return 2;
  }

  if (want >= 0 && attnc::stageList()[want].cudaOnly && !attnc::isCuda(opts.isa)) {
    errs() << "attnc-dump: error: --stage " << stage
           << ": this stage exists only for --target cuda-sm80 / cuda-sm90\n";
    return 2;
  }
  if (check && attnc::isCuda(opts.isa)) {
    // The CUDA pipeline is checked on this CPU: the attn stages as always,
    // then the tiled GPU loops (blocks, thread regions, shared and private
    // buffers) compiled for the host and run sequentially, which is what
    // they mean; gpu/nvvm/ptx (the mapping to blocks and threads and the
    // code generation) need a GPU (tests/gpu/run.sh).
    if (want >= 0 && attnc::stageList()[want].cudaOnly) {
      errs() << "attnc-dump: error: --check runs a CUDA target on the host up "
                "to the loops stage; print --stage "
             << stage << " without --check\n";
      return 2;
    }
    opts.emulateGpuOnHost = true;
  }
  auto ctx = attnc::tools::makeContext();
  // --check runs through llvm-ir-opt (the compiled kernel is checked too).
  int last = all ? static_cast<int>(attnc::stageList().size()) - 1 : want;
  if (check)
    last = std::max(last, attnc::stageIndex("llvm-ir-opt"));
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
    bool print = !printNone && (all || idx == want);
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
      // The attn-level stages have one function; the targeted stage one clone
      // per code path (attn.variant_of), each evaluated.
      std::vector<std::pair<std::string, std::string>> fns; // label, function
      if (v.stage->name == std::string("targeted")) {
        for (auto f : mlir::ModuleOp(v.module).getOps<mlir::func::FuncOp>())
          if (auto of = f->getAttrOfType<mlir::StringAttr>(AttnDialect::VariantOfAttrHelper::getNameStr()))
            if (of.getValue() == spec->name) {
              auto t = f->getAttrOfType<attnc::attn::TargetAttrInterface>(AttnDialect::TargetAttrHelper::getNameStr());
              fns.push_back({std::string("targeted[") + (t ? t.getIsa().str() : "?") + "]",
                             f.getName().str()});
            }
      } else {
        fns.push_back({v.stage->name, ""});
      }
      for (auto &[label, fn] : fns) {
        std::vector<double> out;
        std::string err;
        if (!attnc::evaluateAttnIR(v.module, *spec, inputs, out, err, fn)) {
          errs() << "attnc-dump: error: --check: stage " << label << ": " << err << "\n";
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
        outs() << "// check: stage " << left_justify(label, 18)
               << " max_abs_err vs conceptual = " << format("%.3e", maxAbs)
               << " (max |y| = " << format("%.3g", maxRef) << ", batch " << batch
               << ", seq_len " << seqLen << ", seed " << seed << ") "
               << (ok ? "OK" : "FAILED: this stage changes the function") << "\n";
        if (!ok) {
          checkFailed = true;
          return false; // the first stage that computes something else
        }
      }
    }
    if (testingBreakAfter == v.stage->name)
      mlir::ModuleOp(v.module).walk([](attnc::attn::SdpaOp op) {
        mlir::Value k = op.getKey(), val = op.getValue();
        op.getKeyMutable().assign(val);
        op.getValueMutable().assign(k);
      });
    return true;
  };
  if (mlir::failed(comp.run(onStage)))
    return 1;
  if (check && !checkFailed) {
    // The finished module, linked and run: loops -> llvm -> object, per
    // code path, against the float32 gate of attnc-run --check.
    std::vector<attnc::CompiledRun> runs;
    std::string err;
    if (!attnc::runCompiledPaths(comp, *spec, comp.objectIsa(), inputs, runs, err)) {
      errs() << "attnc-dump: error: --check: compiled kernel: " << err << "\n";
      return 1;
    }
    std::vector<const float *> w;
    for (const auto &t : inputs.storage)
      w.push_back(t.data());
    const attnrt::BlockParams bp = attnc::blockParams(*spec);
    attnrt::Reference ref;
    bool refDots = false;
    for (const attnc::CompiledRun &r : runs) {
      // A bf16 block on the AVX512-BF16 path rounds Q, K, P and V for its
      // dot products (as attnc-run --check bounds it); the other paths, and
      // CUDA's, multiply them in float32.
      attnrt::BoundOptions bopt;
      bopt.bf16Dots = !attnc::isCuda(opts.isa) && spec->dtype == attnc::DType::BF16 &&
                      attnc::hasBf16Dots(r.isa);
      if (ref.y.empty() || bopt.bf16Dots != refDots)
        ref = attnrt::referenceWithBound(bp, w, inputs.x.data(), batch, seqLen,
                                         attnc::variantInputs(*spec, inputs), {}, bopt);
      refDots = bopt.bf16Dots;
      int64_t n = static_cast<int64_t>(r.y.size());
      bool sizeOk = n == static_cast<int64_t>(reference.size()) &&
                    n == static_cast<int64_t>(ref.y.size());
      double maxAbs = 0;
      for (int64_t i = 0; sizeOk && i < n; ++i) {
        double d = std::fabs(double(r.y[i]) - reference[i]);
        maxAbs = std::isnan(d) ? INFINITY : std::max(maxAbs, d);
      }
      attnrt::CompareResult c;
      if (sizeOk)
        c = attnrt::compare(r.y.data(), ref.y.data(), ref.bound.data(), n, 1e-5, 1e-4);
      bool ok = sizeOk && c.ok;
      std::string label = attnc::isCuda(opts.isa)
                              ? std::string("loops[") + attnc::isaName(opts.isa) + " on host]"
                              : "object[" + r.isa + "]";
      outs() << "// check: stage " << left_justify(label, 18)
             << " max_abs_err vs conceptual = " << format("%.3e", maxAbs)
             << " (" << (spec->dtype == attnc::DType::F32 ? "float32" : attnc::toString(spec->dtype))
             << " kernel; gate |err| <= 1e-5 + 1e-4*|ref| + bound, max bound "
             << format("%.2e", c.maxBound) << ") "
             << (ok ? "OK" : "FAILED: the compiled kernel computes something else") << "\n";
      if (!ok)
        checkFailed = true;
    }
  }
  return checkFailed ? 1 : 0;
}

int main(int argc, char **argv) {
  // A reader that went away (`| head -1`) is a write error on stdout,
  // reported in the tool's own form and exit code (docs/exit-codes.md),
  // not a death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  int rc = dumpMain(argc, argv);
  // The IR went to stdout: a full disk or a closed stdout is a failure in
  // the tools' one-line form (LLVM would report it as a fatal error at
  // exit), not exit 0.
  llvm::outs().flush();
  if (llvm::outs().has_error()) {
    std::error_code ec = llvm::outs().error();
    llvm::outs().clear_error();
    llvm::errs() << "attnc-dump: error: cannot write standard output: " << ec.message() << "\n";
    if (rc == 0)
      rc = 1;
  }
  return rc;
}
