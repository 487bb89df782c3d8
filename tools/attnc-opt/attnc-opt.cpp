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
#include "ToolSupport.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  attnc::registerAllAttncDialects(registry);
  attnc::registerAllAttncPasses();
  attnc::registerStagePipelines();
  auto [in, out] = mlir::registerAndParseCLIOptions(
      argc, argv, "attnc-opt: the attn dialect's optimizer driver\n", registry);
  // Only regular files (or stdin): a FIFO would block, /dev/zero never end.
  if (!attnc::tools::checkInputFile("attnc-opt", in))
    return 2;
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, in, out, registry));
}
