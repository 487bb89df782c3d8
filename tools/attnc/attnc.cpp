//===- attnc.cpp - compile an attention spec into a shared object ---------===//
//
//   attnc SPEC.yaml -o libNAME.so [--header NAME.h] [--target T] [-v]
//
// Exit codes: 0 success, 2 bad spec (one located error) or bad usage, 1 any
// other failure. An output that is an input (the spec, a file of --hf DIR)
// or another output is refused (exit 2). On any failure every output is
// left exactly as it was: all
// outputs go to temporaries that are moved into place only when all of them
// are complete (attnc/Target/Outputs.h); an existing output that is not a
// regular file (/dev/null, a FIFO) is written straight to, never replaced.
//
//===----------------------------------------------------------------------===//
#include <csignal>
#include "attnc/Pipeline/Pipeline.h"
#include "attnc/Target/Outputs.h"
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
                                  cl::cat(cat));
static cl::opt<std::string> hfDir("hf",
    cl::desc("compile an attention module of a Hugging Face model directory "
             "(config.json; docs/models.md) instead of a spec"),
    cl::value_desc("DIR"), cl::cat(cat));
static cl::opt<std::string> hfModule("module",
    cl::desc("with --hf: the attention module as the checkpoint's tensor names "
             "spell it (model.layers.5.self_attn, h.3.attn, "
             "model.decoder.layers.1.encoder_attn, bert.encoder.layer.4.attention)"),
    cl::value_desc("PATH"), cl::cat(cat));
static cl::opt<int> hfLayer("layer",
    cl::desc("with --hf: the N-th self-attention module of a decoder-only model "
             "(under the root DIR's tensors use; a note names it)"),
    cl::value_desc("N"), cl::init(-1), cl::cat(cat));
static cl::opt<std::string> emitSpec("emit-spec",
    cl::desc("with --hf: also write the derived spec (YAML) here"),
    cl::value_desc("FILE"), cl::cat(cat));
static cl::list<std::string> setKeys("set",
    cl::desc("with --hf: override or add a top-level spec key after the import "
             "(--set decode=true, --set max_seq_len=8192); repeatable, each key once"),
    cl::value_desc("KEY=VALUE"), cl::cat(cat));
static cl::opt<std::string> output("o",
    cl::desc("output library: libNAME.so (shared object) or libNAME.a (static archive)"),
                                   cl::value_desc("file"), cl::cat(cat)); // required: checked after parsing (one-line error)
static cl::opt<std::string> header("header", cl::desc("also write the C99 header here"),
                                   cl::value_desc("NAME.h"), cl::cat(cat));
static cl::opt<bool> testingOutputsOnly("testing-outputs-only", cl::Hidden,
    cl::desc("testing only: skip the compilation and write the line "
             "'attnc test output: NAME' to each output, so the handling of "
             "outputs is tested on its own"),
    cl::cat(cat));
static cl::opt<bool> verbose("v", cl::desc("print progress per stage on stderr"), cl::cat(cat));

int main(int argc, char **argv) {
  // A reader that went away (`| head -1`) is a write error on stdout,
  // reported in the tool's own form and exit code (docs/exit-codes.md),
  // not a death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  cl::HideUnrelatedOptions({&cat, &attnc::tools::sharedCategory});
  attnc::tools::registerMLIROptions();
  attnc::tools::setVersionPrinter();
  // A parse error (unknown option, missing value) is bad usage: exit 2.
  if (!attnc::tools::parseCommandLine(argc, argv, "attnc",
      "attnc: compile an attention-block spec (YAML) into a kernel library\n\n"
      "  attnc SPEC.yaml -o libNAME.so [--header NAME.h] [--target T]\n"
      "  attnc SPEC.yaml -o libNAME.a  (static archive: only NAME_* symbols)\n"
      "  attnc --hf DIR --module PATH -o libNAME.so [--emit-spec F] [--set K=V]...\n\n"
      "The library holds AVX-512 and AVX2 code by default (--target multi) and\n"
      "runs the first path this CPU supports (ATTNC_ISA=avx2 caps the choice;\n"
      "amxbf16, avx512bf16, avx512, avx2 or x86-64 in any case, or x86-amx-bf16, ...;\n"
      "another value selects no path; a bf16 block also has the AVX512-BF16 path,\n"
      "and with bf16 weights the AMX-BF16 path before it).\n"
      "MLIR's --mlir-* options (timing, IR printing, statistics) apply to every\n"
      "pass pipeline of the compilation.\n\n"
      "Exit codes: 0 ok; 2 invalid spec (one error FILE:LINE:COL) or bad "
      "usage (also: an output that is the spec, a file of --hf DIR or another\n"
      "output, or in no directory); 1 other failure. A failed run leaves every output as it was (--emit-spec's file\n"
      "is written before the derived spec is checked, for its errors' line:col).\n"
      "The spec (and config.json) must be a regular file: a FIFO is refused.\n"))
    return 2;
  if (output.empty()) {
    errs() << "attnc: error: -o FILE is required: the library to write (see --help)\n";
    return 2;
  }
  // (their directories are checked with the other outputs, below)
  for (auto *o : {&header, &emitSpec})
    if (o->getNumOccurrences() && o->empty() &&
        !attnc::tools::checkOutputPath("attnc", "--" + o->ArgStr.str(), *o))
      return 2;
  std::optional<attnc::CompileOptions> opts =
      attnc::tools::compileOptions("attnc");
  if (!opts)
    return 2;
  if (!header.empty() && attnc::samePath(output, header)) {
    errs() << "attnc: error: -o and --header name the same file '" << header
           << "'\n";
    return 2;
  }
  // No output may be an input (the spec, the checkpoint's config.json or
  // the checkpoint's files beside it: JSON, safetensors shards, torch
  // checkpoints; not, say, a library an earlier run wrote there) or
  // another output: whatever the spelling or link.
  {
    std::vector<std::string> inputs;
    if (!input.empty())
      inputs.push_back(input);
    if (!hfDir.empty()) {
      std::error_code ec;
      for (sys::fs::directory_iterator it(hfDir, ec), end; !ec && it != end;
           it.increment(ec)) {
        StringRef ext = sys::path::extension(it->path());
        if (ext == ".json" || ext == ".safetensors" || ext == ".bin" || ext == ".pt" ||
            ext == ".pth" || ext == ".ckpt" || ext == ".npz")
          inputs.push_back(it->path());
      }
    }
    std::vector<std::pair<const char *, std::string>> outputs = {{"-o", output}};
    if (!header.empty())
      outputs.push_back({"--header", header});
    if (!emitSpec.empty())
      outputs.push_back({"--emit-spec", emitSpec});
    for (size_t i = 0; i < outputs.size(); ++i) {
      for (const std::string &in : inputs)
        if (attnc::samePath(outputs[i].second, in)) {
          errs() << "attnc: error: " << outputs[i].first << " " << outputs[i].second
                 << " is the input " << in << ": refusing to overwrite it\n";
          return 2;
        }
      for (size_t j = 0; j < i; ++j)
        if (attnc::samePath(outputs[i].second, outputs[j].second)) {
          errs() << "attnc: error: " << outputs[j].first << " and " << outputs[i].first
                 << " name the same file '" << outputs[i].second << "'\n";
          return 2;
        }
      if (!attnc::tools::checkOutputPath("attnc", outputs[i].first, outputs[i].second))
        return 2;
    }
  }
  opts->verbose = verbose;
  opts->lastStage = "llvm-ir-opt";
  // The extension says what to write; an existing non-regular file
  // (/dev/null, a FIFO) gets a shared object whatever its name.
  sys::fs::file_status st;
  bool special = !sys::fs::status(output, st) && sys::fs::exists(st) &&
                 !sys::fs::is_regular_file(st) && !sys::fs::is_directory(st);
  if (!special && !StringRef(output).ends_with(".so") &&
      !StringRef(output).ends_with(".a")) {
    errs() << "attnc: error: -o " << output
           << ": expected a .so (shared object) or .a (static archive) file name\n";
    return 2;
  }
  if (!attnc::tools::checkHfOptions(
          "attnc", input, hfDir, hfModule, hfLayer.getNumOccurrences() > 0, hfLayer,
          "--module, --layer, --emit-spec and --set",
          !hfModule.empty() || hfLayer >= 0 || !emitSpec.empty() || !setKeys.empty()))
    return 2;
  std::optional<attnc::Spec> spec =
      hfDir.empty() ? attnc::tools::loadSpec(input)
                    : attnc::tools::loadHfSpec(hfDir, hfModule, hfLayer,
                                               std::vector<std::string>(setKeys.begin(),
                                                                        setKeys.end()),
                                               emitSpec);
  if (!spec)
    return 2;
  // Temporaries for every output first: an unwritable directory fails here,
  // before any work, and nothing is touched until commit().
  attnc::OutputFiles outs;
  std::string err;
  int soOut = outs.add(output, err);
  int hOut = soOut < 0 || header.empty() ? -1 : outs.add(header, err);
  if (soOut < 0 || (!header.empty() && hOut < 0)) {
    errs() << "attnc: error: " << err << "\n";
    return 1;
  }
  if (testingOutputsOnly) {
    std::string text = "attnc test output: " + output + "\n";
    bool ok = outs.write(soOut, text, err) &&
              (hOut < 0 || outs.write(hOut, "attnc test output: " + header + "\n", err)) &&
              outs.commit(err);
    if (!ok)
      errs() << "attnc: error: " << err << "\n";
    return ok ? 0 : 1;
  }
  auto ctx = attnc::tools::makeContext();
  attnc::Compilation comp(*ctx, *spec, *opts);
  if (mlir::failed(comp.run([](const attnc::StageView &) { return true; })))
    return 1;
  if (verbose)
    errs() << "attnc: [" << spec->name << "] object code + link\n";
  // linkSharedObject renames its own temporary over ours (same directory).
  bool ok = attnc::tools::writeLibrary(comp, outs, soOut, hOut, output, err);
  if (!ok || !outs.commit(err)) {
    errs() << "attnc: error: " << err << "\n";
    return 1;
  }
  if (verbose)
    errs() << "attnc: wrote " << output << (header.empty() ? "" : " and " + header)
           << "\n";
  return 0;
}
