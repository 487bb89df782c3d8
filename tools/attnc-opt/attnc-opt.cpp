//===- attnc-opt.cpp - mlir-opt with the attn dialect and passes ----------===//
//
// Usage: attnc-opt [options] FILE.mlir   (all of mlir-opt's flags; --help)
// Registers upstream dialects/passes plus attn's (--attn-fuse-qkv,
// --attn-heads-as-views, --attn-to-loops) and the named attnc pipelines
// (--attnc-pipeline=STAGE).
//
//===----------------------------------------------------------------------===//
#include "attnc/Pipeline/Pipeline.h"
#include "attnc/Support/Registration.h"
#include "attnc/runtime/Files.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  attnc::registerAllAttncDialects(registry);
  attnc::registerAllAttncPasses();
  attnc::registerStagePipelines();
  auto [in, out] = mlir::registerAndParseCLIOptions(
      argc, argv, "attnc-opt: the attn dialect's optimizer driver\n", registry);
  // Only regular files (or stdin): a FIFO would block, /dev/zero never end.
  if (in != "-") {
    std::string why;
    int fd = attnrt::openRegularFile(in, why);
    if (fd < 0) {
      llvm::errs() << "attnc-opt: error: " << in << ": " << why << "\n";
      return 2;
    }
    ::close(fd);
  }
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, in, out, registry));
}
