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

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  attnc::registerAllAttncDialects(registry);
  attnc::registerAllAttncPasses();
  attnc::registerStagePipelines();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "attnc-opt: the attn dialect's optimizer driver\n", registry));
}
