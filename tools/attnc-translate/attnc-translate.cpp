//===- attnc-translate.cpp - a kernel library from attn IR ----------------===//
//
//   attnc-translate IN.mlir --emit-library -o libNAME.so [--header NAME.h]
//                   [--from loops] [--target T]
//
// The back half of attnc on its own, as IREE's LLVMCPU target builds an
// executable from a lowered variant: the input is a module as one of
// attnc's stages leaves it (attnc-dump --stage S, or attnc-opt running the
// stage pipelines), and the stages after it run: LLVM dialect, LLVM IR, O3,
// object code, the C glue and the link. The library is built from the IR
// alone: the block description (attn.block), the weights' storage
// (attn.weight_storage) and the lowered functions' attributes, never from a
// spec. So `attnc-dump --stage loops SPEC | attnc-translate - --emit-library
// -o lib.so` writes the library `attnc SPEC -o lib.so` writes, byte for byte.
//
// Exit codes: 0 ok; 2 bad usage or IR that cannot be parsed; 1 other
// failures. A failed run leaves every output as it was.
//
//===----------------------------------------------------------------------===//
#include <csignal>
#include "attnc/Dialect/Attn/IR/AttnDialect.h"
#include "attnc/Pipeline/Pipeline.h"
#include "attnc/Target/Isa.h"
#include "attnc/Target/Outputs.h"
#include "attnc/Target/Target.h"
#include "ToolSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory cat("attnc-translate options");
static cl::opt<std::string> input(cl::Positional, cl::desc("IN.mlir (- for stdin)"),
                                  cl::init("-"), cl::cat(cat));
static cl::opt<bool> emitLibrary("emit-library",
    cl::desc("write the kernel library (the one translation there is; required)"),
    cl::cat(cat));
static cl::opt<std::string> from("from",
    cl::desc("the stage the input is at: conceptual, fused, viewed, targeted or "
             "loops (default); the stages after it run. --target must be the "
             "one the input was targeted for when it is past `targeted`"),
    cl::value_desc("STAGE"), cl::init("loops"), cl::cat(cat));
static cl::opt<std::string> output("o",
    cl::desc("output library: libNAME.so (shared object) or libNAME.a (static archive)"),
    cl::value_desc("file"), cl::cat(cat)); // required: checked after parsing (one-line error)
static cl::opt<std::string> header("header", cl::desc("also write the C99 header here"),
                                   cl::value_desc("NAME.h"), cl::cat(cat));
static cl::opt<bool> verbose("v", cl::desc("print progress per stage on stderr"),
                             cl::cat(cat));

int main(int argc, char **argv) {
  // A reader that went away (`| head -1`) is a write error on stdout,
  // reported in the tool's own form and exit code (docs/exit-codes.md),
  // not a death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  cl::HideUnrelatedOptions({&cat, &attnc::tools::sharedCategory});
  attnc::tools::registerMLIROptions();
  attnc::tools::setVersionPrinter();
  // A parse error (unknown option, missing value) is bad usage: exit 2.
  if (!attnc::tools::parseCommandLine(argc, argv, "attnc-translate",
      "attnc-translate: build a kernel library from attn IR\n\n"
      "  attnc-dump --stage loops SPEC.yaml | attnc-translate - --emit-library -o libNAME.so\n"
      "  attnc-translate IN.mlir --from targeted --emit-library -o libNAME.so --header NAME.h\n\n"
      "The input is a module as an attnc stage leaves it (attnc-dump --stage S,\n"
      "attnc-opt with the stage pipelines); it carries the block description\n"
      "(attn.block) the front end wrote, and nothing else is read.\n\n"
      "Exit codes: 0 ok; 2 bad usage or unparsable IR; 1 other failure. A\n"
      "failed run leaves every output as it was.\n"))
    return 2;
  if (output.empty()) {
    errs() << "attnc-translate: error: -o FILE is required: the library to write (see --help)\n";
    return 2;
  }
  if (!emitLibrary) {
    errs() << "attnc-translate: error: expected --emit-library (the one "
              "translation attnc-translate makes)\n";
    return 2;
  }
  std::optional<attnc::CompileOptions> opts =
      attnc::tools::compileOptions("attnc-translate");
  if (!opts)
    return 2;
  opts->verbose = verbose;
  opts->lastStage = "llvm-ir-opt";
  if (!StringRef(output).ends_with(".so") && !StringRef(output).ends_with(".a")) {
    errs() << "attnc-translate: error: -o " << output
           << ": expected a .so (shared object) or .a (static archive) file name\n";
    return 2;
  }
  const auto &entry = attnc::irEntryStages();
  if (llvm::find(entry, from) == entry.end()) {
    errs() << "attnc-translate: error: --from " << from << ": expected one of "
           << llvm::join(entry, ", ") << "\n";
    return 2;
  }
  for (auto [opt, path] : {std::pair<const char *, std::string>{"-o", output},
                           {"--header", header}})
    if (!path.empty() && input != "-" && attnc::samePath(path, input)) {
      errs() << "attnc-translate: error: " << opt << " " << path
             << " is the input: refusing to overwrite it\n";
      return 2;
    }
  const bool headerEmpty = header.getNumOccurrences() && header.empty();
  if ((headerEmpty && !attnc::tools::checkOutputPath("attnc-translate", "--header", header)) ||
      !attnc::tools::checkOutputPath("attnc-translate", "-o", output) ||
      (!header.empty() && !attnc::tools::checkOutputPath("attnc-translate", "--header", header)))
    return 2;
  if (!header.empty() && attnc::samePath(output, header)) {
    errs() << "attnc-translate: error: -o and --header name the same file '"
           << header << "'\n";
    return 2;
  }

  if (!attnc::tools::checkInputFile("attnc-translate", input))
    return 2;
  auto ctx = attnc::tools::makeContext();
  std::string err;
  auto buf = MemoryBuffer::getFileOrSTDIN(input);
  if (!buf) {
    errs() << "attnc-translate: error: " << input << ": "
           << buf.getError().message() << "\n";
    return 2;
  }
  SourceMgr sm;
  sm.AddNewSourceBuffer(std::move(*buf), SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sm, ctx.get());
  if (!module)
    return 2;

  // The stage the input is at, as far as the IR tells: before `targeted`
  // no function carries attn.target; at `targeted` they do and attn ops
  // remain; at `loops` none remain. An input past --from's stage (or one
  // not yet at a targeted --from) would fail deep in a pass with errors
  // about the passes' own output: name the stage instead.
  {
    bool targeted = false, attnOps = false;
    module->walk([&](mlir::Operation *op) {
      targeted |= mlir::isa<mlir::func::FuncOp>(op) && op->hasAttr("attn.target");
      attnOps |= mlir::isa_and_nonnull<attnc::attn::AttnDialect>(op->getDialect());
    });
    const int at = !targeted ? 0 : attnOps ? 1 : 2;
    const int given = attnc::stageIndex(from) < attnc::stageIndex("targeted") ? 0
                      : from == "targeted"                                    ? 1
                                                                              : 2;
    // (A targeted module given an earlier --from went through the earlier
    // stages' passes unchanged, and --target then relabelled its code.)
    if (at != given) {
      const char *stage[] = {"before `targeted` (no function carries attn.target)",
                             "at `targeted` (attn ops with code paths)",
                             "at `loops` (code paths lowered, no attn ops left)"};
      const char *use[] = {"conceptual, fused or viewed, the stage it was printed at",
                           "targeted", "loops"};
      errs() << "attnc-translate: error: " << input << ": the input is " << stage[at]
             << ", not at --from " << from << ": give --from " << use[at] << "\n";
      return 2;
    }
  }

  // Past `targeted` the input's functions carry their code paths
  // (attn.target); --target must name the same ones, or the library's
  // metadata would describe code it does not hold.
  if (attnc::stageIndex(from) >= attnc::stageIndex("targeted")) {
    std::vector<std::string> inIr;
    module->walk([&](mlir::func::FuncOp f) {
      auto a = f->getAttrOfType<attnc::attn::TargetAttrInterface>("attn.target");
      std::string isa = a ? a.getIsa().str() : "";
      if (!isa.empty() && llvm::find(inIr, isa) == inIr.end())
        inIr.push_back(isa);
    });
    std::vector<std::string> want;
    for (attnc::Isa p : attnc::codePaths(opts->isa))
      want.push_back(attnc::isaName(p));
    // multi adds the AVX512-BF16 path to a block with bf16 activations and
    // weights, or bf16 dot products, and the AMX-BF16 path to one with bf16
    // activations and weights (attnc-set-target).
    for (attnc::Isa extra : {attnc::Isa::Avx512Bf16, attnc::Isa::AmxBf16}) {
      const std::string path = attnc::isaName(extra);
      if (opts->isa == attnc::Isa::Multi && llvm::find(inIr, path) != inIr.end() &&
          llvm::find(want, path) == want.end())
        want.push_back(path);
    }
    auto sorted = [](std::vector<std::string> v) {
      llvm::sort(v);
      return v;
    };
    if (!inIr.empty() && sorted(inIr) != sorted(want)) {
      errs() << "attnc-translate: error: --target " << std::string(attnc::tools::targetOpt)
             << " gives the code paths " << llvm::join(want, ", ")
             << ", but the input (--from " << from << ") was targeted for "
             << llvm::join(inIr, ", ") << ": give the --target it was targeted with\n";
      return 2;
    }
  }

  attnc::OutputFiles outs;
  int soOut = outs.add(output, err);
  int hOut = soOut < 0 || header.empty() ? -1 : outs.add(header, err);
  if (soOut < 0 || (!header.empty() && hOut < 0)) {
    errs() << "attnc-translate: error: " << err << "\n";
    return 1;
  }
  attnc::Compilation comp(*ctx, std::move(module), from, *opts);
  if (mlir::failed(comp.run([](const attnc::StageView &) { return true; })))
    return 1;
  if (!attnc::tools::writeLibrary(comp, outs, soOut, hOut, output, err) ||
      !outs.commit(err)) {
    errs() << "attnc-translate: error: " << err << "\n";
    return 1;
  }
  if (verbose)
    errs() << "attnc-translate: wrote " << output
           << (header.empty() ? "" : " and " + header) << "\n";
  return 0;
}
