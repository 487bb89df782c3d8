//===- attnc.cpp - compile an attention spec into a shared object ---------===//
//
//   attnc SPEC.yaml -o libNAME.so [--header NAME.h] [--target T] [-v]
//
// Exit codes: 0 success, 2 bad spec (one located error, nothing written),
// 1 any other failure (nothing written).
//
//===----------------------------------------------------------------------===//
#include "attnc/Pipeline/Pipeline.h"
#include "attnc/Target/Target.h"
#include "ToolSupport.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory cat("attnc options");
static cl::opt<std::string> input(cl::Positional, cl::desc("SPEC.yaml"),
                                  cl::Required, cl::cat(cat));
static cl::opt<std::string> output("o",
    cl::desc("output library: libNAME.so (shared object) or libNAME.a (static archive)"),
                                   cl::value_desc("file"), cl::Required, cl::cat(cat));
static cl::opt<std::string> header("header", cl::desc("also write the C99 header here"),
                                   cl::value_desc("NAME.h"), cl::cat(cat));
static cl::opt<std::string> target("target",
    cl::desc("instruction set: multi (default: AVX-512 and AVX2 code in one library, "
             "chosen at load time from CPUID), x86-avx512, x86-avx2, x86-64, host (this CPU)"),
    cl::init("multi"), cl::cat(cat));
static cl::opt<bool> noFuse("no-fuse-qkv", cl::desc("skip attn-fuse-qkv (three projection GEMMs)"),
                            cl::cat(cat));
static cl::opt<bool> noViews("no-heads-as-views",
    cl::desc("skip attn-heads-as-views (head split/merge are copies)"), cl::cat(cat));
static cl::opt<bool> verbose("v", cl::desc("print progress per stage on stderr"), cl::cat(cat));

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(cat);
  attnc::tools::registerMLIROptions();
  attnc::tools::setVersionPrinter();
  cl::ParseCommandLineOptions(argc, argv,
      "attnc: compile an attention-block spec (YAML) into a shared object\n\n"
      "  attnc SPEC.yaml -o libNAME.so [--header NAME.h] [--target T]\n\n"
      "Exit codes: 0 ok; 2 invalid spec (one error FILE:LINE:COL, nothing "
      "written); 1 other failure.\n");
  std::optional<attnc::CompileOptions> opts =
      attnc::tools::compileOptions("attnc", target, noFuse, noViews);
  if (!opts)
    return 1;
  opts->verbose = verbose;
  opts->lastStage = "llvm-ir-opt";
  if (!StringRef(output).ends_with(".so") && !StringRef(output).ends_with(".a")) {
    errs() << "attnc: error: -o " << output
           << ": expected a .so (shared object) or .a (static archive) file name\n";
    return 2;
  }
  std::optional<attnc::Spec> spec = attnc::tools::loadSpec(input);
  if (!spec)
    return 2;
  auto ctx = attnc::tools::makeContext();
  attnc::Compilation comp(*ctx, *spec, *opts);
  if (mlir::failed(comp.run([](const attnc::StageView &) { return true; })))
    return 1;
  SmallVector<char, 0> obj;
  std::string err;
  if (verbose)
    errs() << "attnc: [" << spec->name << "] object code + link\n";
  if (!attnc::emitCode(*comp.llvmModule(), *comp.targetMachine(), false, obj, err) ||
      !attnc::linkSharedObject(obj,
                               attnc::emitKernelGlue(*spec, comp.plan(), opts->isa,
                                                     comp.targetMachine()->getTargetCPU().str()),
                               sys::path::filename(output).str(), output, err)) {
    errs() << "attnc: error: " << err << "\n";
    return 1;
  }
  if (!header.empty() &&
      !attnc::writeFileAtomic(header, attnc::emitHeader(*spec, comp.plan(), opts->isa), err)) {
    sys::fs::remove(output);
    errs() << "attnc: error: " << err << "\n";
    return 1;
  }
  if (verbose)
    errs() << "attnc: wrote " << output << (header.empty() ? "" : " and " + header)
           << "\n";
  return 0;
}
