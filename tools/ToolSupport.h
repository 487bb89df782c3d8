//===- ToolSupport.h - shared bits of the attnc tool mains ------*- C++ -*-===//
#ifndef ATTNC_TOOLS_TOOLSUPPORT_H
#define ATTNC_TOOLS_TOOLSUPPORT_H

#include "attnc/Pipeline/Pipeline.h"
#include "attnc/runtime/Checkpoint.h"
#include "attnc/runtime/Files.h"
#include "attnc/Spec/Spec.h"
#include "attnc/Support/Registration.h"
#include "attnc/Target/Outputs.h"
#include "attnc/Target/Target.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>
#include <memory>
#include <optional>

namespace attnc::tools {

/// A parsed spec, or its one located error printed on stderr (with `note`
/// after it when not empty); also rejects features this version cannot
/// lower yet.
inline std::optional<Spec> checkedSpec(SpecResult r, const std::string &note = "") {
  if (!r) {
    llvm::errs() << r.error << "\n" << note;
    return std::nullopt;
  }
  std::string unsupported = unsupportedFeature(*r.spec);
  if (!unsupported.empty()) {
    llvm::errs() << unsupported << "\n";
    return std::nullopt;
  }
  return r.spec;
}

/// The input options attnc and attnc-dump share: a SPEC.yaml or --hf DIR
/// (exactly one), --layer N >= 0, the --hf-only options (`hfOnly`, e.g.
/// "--module, --layer and --set", with `hfOnlyGiven` saying whether any
/// was given) only with --hf, and one of --module and --layer. Prints the
/// error and returns false on a misuse.
inline bool checkHfOptions(const char *tool, const std::string &input,
                           const std::string &hfDir, const std::string &hfModule,
                           bool layerGiven, int64_t layer, const char *hfOnly,
                           bool hfOnlyGiven) {
  if (input.empty() == hfDir.empty()) {
    llvm::errs() << tool << ": error: expected a SPEC.yaml or --hf DIR (exactly one; "
                 << "see --help)\n";
    return false;
  }
  if (layerGiven && layer < 0) {
    llvm::errs() << tool << ": error: --layer " << layer
                 << ": expected a layer index >= 0 (the N-th self-attention module)\n";
    return false;
  }
  if (hfDir.empty() && hfOnlyGiven) {
    llvm::errs() << tool << ": error: " << hfOnly << " go with --hf\n";
    return false;
  }
  if (!hfModule.empty() && layer >= 0) {
    llvm::errs() << tool << ": error: --module and --layer name the module twice: give one\n";
    return false;
  }
  return true;
}

/// Parses and validates a spec file (checkedSpec).
inline std::optional<Spec> loadSpec(const std::string &path) {
  return checkedSpec(parseSpecFile(path));
}

/// The spec of `attnc --hf DIR --module PATH [--layer N] [--set K=V]...`:
/// derived from the checkpoint's config.json, written to `emitSpec` when
/// not empty, then parsed and checked like any spec (messages point into
/// the derived YAML, named after `emitSpec` or "<derived spec of
/// DIR/config.json, PATH>").
///
/// A bf16/f16 checkpoint's weights pack as such (weight_dtype from its
/// torch_dtype), on every target.
inline std::optional<Spec> loadHfSpec(const std::string &dir, const std::string &module,
                                      int64_t layer, std::vector<std::string> sets,
                                      const std::string &emitSpec,
                                      const std::string &tool = "attnc") {
  // (the import's messages name attnc: another tool's are its own)
  auto named = [&](const std::string &msg) {
    return tool != "attnc" && msg.rfind("attnc: ", 0) == 0 ? tool + msg.substr(5) : msg;
  };
  HfReaders readers;
  readers.tensorNames = [](const std::string &d, std::vector<std::string> &names) {
    std::string why;
    return attnrt::checkpointTensorNames(d, names, why);
  };
  readers.checkJson = attnrt::checkJson;
  HfSpec hf = specFromHf(dir, module, layer, sets, readers);
  if (!hf.error.empty()) {
    llvm::errs() << named(hf.error) << "\n";
    return std::nullopt;
  }
  for (const std::string &note : hf.notes)
    llvm::errs() << named(note) << "\n";
  if (!emitSpec.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(emitSpec, ec);
    if (!ec)
      os << hf.yaml;
    if (ec || (os.close(), os.has_error())) {
      llvm::errs() << tool << ": error: --emit-spec " << emitSpec << ": cannot write: "
                   << (ec ? ec.message() : os.error().message()) << "\n";
      return std::nullopt;
    }
  }
  // Without --emit-spec the lines are those of the derived YAML, printed
  // numbered after the error (not config.json's lines).
  std::string name = !emitSpec.empty()
                         ? emitSpec
                         : "<derived spec of " + dir + "/config.json, " +
                               hf.weightsPrefix.substr(0, hf.weightsPrefix.size() - 1) + ">";
  std::string numbered;
  int line = 0;
  for (size_t at = 0; at < hf.yaml.size();) {
    size_t end = hf.yaml.find('\n', at);
    if (end == std::string::npos)
      end = hf.yaml.size();
    numbered += llvm::formatv("{0,4} | ", ++line).str() + hf.yaml.substr(at, end - at) + "\n";
    at = end + 1;
  }
  return checkedSpec(parseSpecString(hf.yaml, name),
                     emitSpec.empty() ? std::string(tool) + ": note: the derived spec was:\n" + numbered : "");
}

/// Prints MLIR diagnostics as `FILE:LINE:COL: error: message`, using the
/// innermost file location (attnc's IR points at spec lines).
inline void installDiagnostics(mlir::MLIRContext &ctx) {
  ctx.getDiagEngine().registerHandler([](mlir::Diagnostic &d) {
    std::string where;
    d.getLocation()->walk([&](mlir::Location l) {
      if (auto f = llvm::dyn_cast<mlir::FileLineColLoc>(l)) {
        where = (f.getFilename().str() + ":" + std::to_string(f.getLine()) +
                 ":" + std::to_string(f.getColumn()) + ": ");
        return mlir::WalkResult::interrupt();
      }
      return mlir::WalkResult::advance();
    });
    const char *sev = d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error"
                      : d.getSeverity() == mlir::DiagnosticSeverity::Warning
                          ? "warning"
                          : "note";
    llvm::errs() << where << sev << ": " << d.str() << "\n";
    // Notes that dump whole operations are for compiler developers
    // (--mlir-print-op-on-diagnostic in attnc-opt); users get the message.
    for (auto &n : d.getNotes())
      if (!llvm::StringRef(n.str()).starts_with("see current operation"))
        llvm::errs() << "  note: " << n.str() << "\n";
    return mlir::success();
  });
}

/// MLIR's pass-manager, context and printer options (--mlir-timing,
/// --mlir-print-ir-after-all, --mlir-pass-statistics, ...) as attnc-opt has
/// them; the pipeline applies them to every pass manager it runs. Call
/// before parsing the command line.
inline void registerMLIROptions() {
  registerAllAttncPasses(); // --mlir-print-ir-after=PASS names them
  mlir::registerPassManagerCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
}

/// The command line, parsed; an option that takes one value given more
/// than once (`-o a.so -o b.so`: LLVM's parser keeps the last) is bad
/// usage as well, as attnc-run has it. False: say why on errs(), exit 2.
inline bool parseCommandLine(int argc, char **argv, const char *tool,
                             llvm::StringRef overview) {
  // LLVM's own messages ("TOOL: Unknown command line argument ...", a
  // "Did you mean" line after it, "for the -o option: must be specified
  // at least once!") become one line in the tools' form, TOOL: error: ...
  // (docs/exit-codes.md).
  // (an option that needs a value given last: LLVM prints its "requires
  // a value!" straight to stderr, before our line)
  if (argc > 1 && argv[argc - 1][0] == '-' && argv[argc - 1][1] != '\0') {
    llvm::StringRef last(argv[argc - 1]);
    llvm::StringRef name = last.ltrim('-');
    auto &opts = llvm::cl::getRegisteredOptions();
    auto it = opts.find(name);
    if (!name.contains('=') && it != opts.end() &&
        it->second->getValueExpectedFlag() == llvm::cl::ValueRequired) {
      llvm::errs() << tool << ": error: " << last << " needs a value (see --help)\n";
      return false;
    }
  }
  // LLVM reads an unknown --hXYZ as -h (its alias of --help) and prints
  // the help, exit 0: a mistyped option (attnc-translate --hf) looked like
  // success. Such a name is an unknown option here.
  {
    auto &opts = llvm::cl::getRegisteredOptions();
    for (int i = 1; i < argc; ++i) {
      llvm::StringRef a(argv[i]);
      if (a == "--")
        break;
      if (!a.starts_with("-") || a.size() < 3)
        continue;
      llvm::StringRef name = a.ltrim('-').split('=').first;
      if (name.size() > 1 && name.starts_with("h") && !opts.count(name)) {
        llvm::errs() << tool << ": error: unknown option '" << a << "' (see --help)\n";
        return false;
      }
    }
  }
  std::string parseErrors;
  llvm::raw_string_ostream errs(parseErrors);
  // A bad value ("for the --layer option: 'x' value invalid for integer
  // argument!") is printed by the option itself, to stderr, not to errs:
  // stderr goes to a temporary file while the parser runs, and what it
  // wrote joins the one line (or goes on to stderr when the parse passed).
  std::string direct;
  bool parsed;
  {
    llvm::errs().flush();
    std::FILE *tmp = std::tmpfile();
    const int saved = tmp ? ::dup(2) : -1;
    const bool captured = saved >= 0 && ::dup2(::fileno(tmp), 2) >= 0;
    parsed = llvm::cl::ParseCommandLineOptions(argc, argv, overview, &errs);
    llvm::errs().flush();
    if (captured) {
      ::dup2(saved, 2);
      std::rewind(tmp);
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;)
        direct.append(buf, n);
    }
    if (saved >= 0)
      ::close(saved);
    if (tmp)
      std::fclose(tmp);
  }
  if (parsed && !direct.empty())
    llvm::errs() << direct;
  if (!parsed) {
    errs.flush();
    parseErrors = direct + parseErrors;
    std::string line;
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(parseErrors).split(parts, '\n', -1, /*KeepEmpty=*/false);
    const std::string prefix = std::string(argc > 0 ? argv[0] : tool) + ": ";
    for (llvm::StringRef p : parts) {
      p = p.trim();
      p.consume_front(prefix);
      p.consume_front(std::string(tool) + ": ");
      p.consume_front("error: ");
      if (!p.empty())
        line += (line.empty() ? "" : "; ") + p.str();
    }
    if (line.empty())
      line = "bad command line";
    llvm::errs() << tool << ": error: " << line
                 << (llvm::StringRef(line).contains("--help") ? "" : " (see --help)") << "\n";
    return false;
  }
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *o = entry.second;
    if (o->getNumOccurrences() > 1 && !o->isPositional() &&
        o->getNumOccurrencesFlag() != llvm::cl::ZeroOrMore &&
        o->getNumOccurrencesFlag() != llvm::cl::OneOrMore &&
        o->ArgStr == entry.first) {
      llvm::errs() << tool << ": error: " << (o->ArgStr.size() == 1 ? "-" : "--") << o->ArgStr
                   << " is given more than once (see --help)\n";
      return false;
    }
  }
  return true;
}

/// An input file other than stdin ("-") must be a regular file: a FIFO
/// would block the read and a device (/dev/zero) never end it. False: said
/// why on errs() (exit 2).
inline bool checkInputFile(const char *tool, const std::string &path) {
  if (path == "-")
    return true;
  std::string why;
  int fd = attnrt::openRegularFile(path, why);
  if (fd < 0) {
    llvm::errs() << tool << ": error: " << path << ": " << why << "\n";
    return false;
  }
  ::close(fd);
  return true;
}

/// An output named on the command line (`opt` its option) must be a path
/// whose directory exists: refused before the compilation (a usage error,
/// exit 2), not a failure after it. An empty path (an unset shell variable)
/// would write nothing. False: said why on errs().
inline bool checkOutputPath(const char *tool, llvm::StringRef opt, const std::string &path) {
  if (path.empty()) {
    llvm::errs() << tool << ": error: " << opt << ": expected a path, found ''\n";
    return false;
  }
  llvm::StringRef parent = llvm::sys::path::parent_path(path);
  if (!parent.empty() && !llvm::sys::fs::is_directory(parent)) {
    llvm::errs() << tool << ": error: " << opt << " " << path
                 << ": cannot write: no directory " << parent << "\n";
    return false;
  }
  return true;
}

/// `--version` prints attnc's version (and the MLIR/LLVM it was built with).
inline void setVersionPrinter() {
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "attnc " << ATTNC_VERSION << " (MLIR/LLVM " << LLVM_VERSION_STRING
       << ")\n";
  });
}

/// A context with every dialect, pass and translation attnc uses, printing
/// diagnostics as above.
inline std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  registerAllAttncDialects(registry);
  registerAllAttncPasses();
  auto ctx = std::make_unique<mlir::MLIRContext>(registry);
  installDiagnostics(*ctx);
  return ctx;
}

/// The options attnc and attnc-dump share, declared once (each tool that
/// includes this header gets them, in this category).
inline llvm::cl::OptionCategory sharedCategory("compile options (attnc, attnc-dump)");
inline llvm::cl::opt<std::string> targetOpt("target",
    llvm::cl::desc("instruction sets: multi (default: AVX-512 and AVX2 code in one "
                   "library, the path chosen at load time from CPUID; also spelled "
                   "x86-avx512,x86-avx2; with dtype bf16 also x86-avx512-bf16, first, "
                   "and with bf16 weights too x86-amx-bf16 before it), "
                   "x86-avx512, x86-avx512-bf16 (AVX512-BF16's vdpbf16ps for bf16 "
                   "weights), x86-amx-bf16 (that plus AMX-BF16 tiles for the GEMMs), "
                   "x86-avx2, x86-64, host (this CPU: its bf16 dot products and AMX "
                   "tiles where multi would take them); "
                   "cuda-sm90, cuda-sm80 (PTX kernels for NVIDIA GPUs, launched "
                   "through the CUDA driver: forward takes device pointers)"),
    llvm::cl::init("multi"), llvm::cl::cat(sharedCategory));
inline llvm::cl::opt<bool> noFuseOpt("no-fuse-qkv",
    llvm::cl::desc("skip attn-fuse-qkv (three projection GEMMs)"),
    llvm::cl::cat(sharedCategory));
inline llvm::cl::opt<bool> noViewsOpt("no-heads-as-views",
    llvm::cl::desc("skip attn-heads-as-views (head split/merge are copies)"),
    llvm::cl::cat(sharedCategory));

inline llvm::cl::opt<bool> gpuOnHostOpt("testing-gpu-on-host", llvm::cl::Hidden,
    llvm::cl::desc("with --target cuda-*: build the CUDA target's tiled loops "
                   "as a host (CPU) library, thread regions run one after "
                   "another (for testing the CUDA tiling without a GPU)"),
    llvm::cl::cat(sharedCategory));

/// The end of a compilation that ran to llvm-ir-opt: the object code,
/// the C glue compiled and linked with it into the temporary of output
/// `soOut` (a .so, or a static archive when `output` ends in .a), and the
/// C header into `hOut` (when >= 0). attnc and attnc-translate both end so.
inline bool writeLibrary(Compilation &comp, OutputFiles &outs, int soOut, int hOut,
                         const std::string &output, std::string &err) {
  llvm::SmallVector<char, 0> obj;
  bool ok = emitCode(*comp.llvmModule(), *comp.targetMachine(), false, obj, err) &&
            linkSharedObject(obj,
                             emitKernelGlue(comp.desc(), comp.plan(), comp.objectIsa(),
                                            comp.ptx(), comp.kernelsIsa()),
                             llvm::sys::path::filename(output).str(),
                             llvm::StringRef(output).ends_with(".a"),
                             outs.tempPath(soOut), err);
  if (ok && hOut >= 0)
    ok = outs.write(hOut, emitHeader(comp.desc(), comp.plan(), comp.objectIsa()), err);
  return ok;
}

/// Compile options from the shared command-line options (--target,
/// --no-fuse-qkv, --no-heads-as-views, --testing-gpu-on-host). Prints the
/// error and returns nullopt for an unknown target.
inline std::optional<CompileOptions> compileOptions(const char *tool) {
  const std::string &target = targetOpt;
  bool noFuse = noFuseOpt, noViews = noViewsOpt;
  CompileOptions opts;
  if (!parseIsa(target, opts.isa)) {
    llvm::errs() << tool << ": error: --target: expected multi (= x86-avx512,x86-avx2), "
                 << "x86-avx512, x86-avx512-bf16, x86-amx-bf16, x86-avx2, x86-64, host, "
                 << "cuda-sm90 or "
                 << "cuda-sm80, found '"
                 << target << "'\n";
    return std::nullopt;
  }
  opts.fuseQKV = !noFuse;
  opts.headsAsViews = !noViews;
  // The CUDA kernels read the heads as views of the projections: the
  // copies' ops have no CUDA kernels.
  if (noViews && isCuda(opts.isa)) {
    llvm::errs() << tool << ": error: --no-heads-as-views is not supported with --target "
                 << target << " (the CUDA kernels read the heads as views)\n";
    return std::nullopt;
  }
  if (gpuOnHostOpt) {
    if (!isCuda(opts.isa)) {
      llvm::errs() << tool << ": error: --testing-gpu-on-host needs --target cuda-sm90 or cuda-sm80\n";
      return std::nullopt;
    }
    opts.emulateGpuOnHost = true;
  }
  return opts;
}

} // namespace attnc::tools

#endif
