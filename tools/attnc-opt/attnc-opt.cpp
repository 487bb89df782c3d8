//===- attnc-opt.cpp - mlir-opt with the attn dialect and passes ----------===//
//
// Usage: attnc-opt [options] FILE.mlir   (all of mlir-opt's flags; --help)
// Registers upstream dialects/passes plus attn's (--attn-fuse-qkv,
// --attn-heads-as-views, --attn-to-loops) and the named attnc pipelines
// (--attnc-pipeline=STAGE). -o FILE is written all or nothing: a run that
// fails leaves an existing FILE as it was, and -o naming the input is
// refused.
//
//===----------------------------------------------------------------------===//
#include <csignal>
#include "attnc/Pipeline/Pipeline.h"
#include "attnc/Support/Registration.h"
#include "attnc/Target/Outputs.h"
#include "ToolSupport.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  // A reader that went away (`| head -1`) is a write error on stdout,
  // reported in the tool's own form and exit code (docs/exit-codes.md),
  // not a death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  mlir::DialectRegistry registry;
  attnc::registerAllAttncDialects(registry);
  attnc::registerAllAttncPasses();
  attnc::registerStagePipelines();
  // attnc's and attnc-dump's compile options (ToolSupport.h declares them
  // for every tool that includes it) mean nothing to a pass driver: hidden,
  // and refused with the pass that does their work.
  namespace tools = attnc::tools;
  for (llvm::cl::Option *o : std::initializer_list<llvm::cl::Option *>{
           &tools::targetOpt, &tools::noFuseOpt, &tools::noViewsOpt, &tools::gpuOnHostOpt})
    o->setHiddenFlag(llvm::cl::ReallyHidden);
  auto [in, out] = mlir::registerAndParseCLIOptions(
      argc, argv, "attnc-opt: the attn dialect's optimizer driver\n", registry);
  struct Moved {
    llvm::cl::Option &opt;
    const char *instead;
  } moved[] = {
      {tools::targetOpt, "give --attnc-set-target=isa=NAME (what --attnc-stage-targeted runs "
                         "with isa=multi)"},
      {tools::noFuseOpt, "leave --attn-fuse-qkv out of the passes (--attnc-stage-fused "
                         "runs it)"},
      {tools::noViewsOpt, "leave --attn-heads-as-views out of the passes "
                          "(--attnc-stage-viewed runs it)"},
      {tools::gpuOnHostOpt, "use attnc or attnc-dump"},
  };
  for (const Moved &m : moved)
    if (m.opt.getNumOccurrences()) {
      llvm::errs() << "attnc-opt: error: --" << m.opt.ArgStr
                   << " is a compile option of attnc and attnc-dump; attnc-opt runs the "
                      "passes given to it: "
                   << m.instead << "\n";
      return 2;
    }
  // Only regular files (or stdin): a FIFO would block, /dev/zero never end.
  if (!attnc::tools::checkInputFile("attnc-opt", in))
    return 2;
  if (out != "-" && in != "-" && attnc::samePath(out, in)) {
    llvm::errs() << "attnc-opt: error: -o " << out
                 << " is the input: refusing to overwrite it\n";
    return 2;
  }
  // A regular (or new) output file is written as a temporary beside it,
  // renamed over it (with the old file's permissions) once the run has
  // succeeded and written something (--show-dialects, --list-passes write
  // nothing there); stdout, special files (/dev/null, a FIFO) and symbolic
  // links (/dev/stdout) are written directly, as mlir-opt does.
  namespace fs = llvm::sys::fs;
  fs::file_status st;
  const bool exists = !fs::status(out, st, /*follow=*/false) && fs::exists(st);
  const bool viaTemp = out != "-" && (!exists || fs::is_regular_file(st));
  std::string target = out;
  if (viaTemp) {
    int fd = -1;
    llvm::SmallString<256> tmp;
    if (std::error_code ec = fs::createUniqueFile(out + ".tmp-%%%%%%", fd, tmp)) {
      llvm::errs() << "attnc-opt: error: -o " << out << ": cannot write: " << ec.message()
                   << "\n";
      return 2;
    }
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    target = std::string(tmp);
  }
  mlir::LogicalResult r = mlir::MlirOptMain(argc, argv, in, target, registry);
  if (viaTemp) {
    uint64_t written = 0;
    if (mlir::succeeded(r) && !fs::file_size(target, written) && written > 0) {
      if (exists)
        (void)fs::setPermissions(target, st.permissions());
      if (std::error_code ec = fs::rename(target, out)) {
        llvm::errs() << "attnc-opt: error: -o " << out << ": cannot write: " << ec.message()
                     << "\n";
        fs::remove(target);
        return 2;
      }
    } else {
      fs::remove(target);
    }
  }
  return mlir::asMainReturnCode(r);
}
