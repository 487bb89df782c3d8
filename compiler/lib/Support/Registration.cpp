//===- Registration.cpp - dialects and passes attnc uses ------------------===//
#include "attnc/Support/Registration.h"
#include "attnc/Conversion/Passes.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"
#include "attnc/Dialect/Attn/Transforms/Passes.h"
#include "attnc/Target/CodePaths.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

void attnc::registerAllAttncDialects(mlir::DialectRegistry &registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<attnc::attn::AttnDialect>();
  attnc::registerTiledOpModels(registry);
  attnc::registerTargetKernels(registry);
  attnc::registerCpuCodePaths();  // the back end's kinds of code path
  attnc::registerCudaCodePaths(); // (Target/Cpu, Target/Cuda)
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry); // CUDA kernels -> PTX
}

void attnc::registerAllAttncPasses() {
  static bool done = false; // the registries reject a second registration
  if (done)
    return;
  done = true;
  mlir::registerAllPasses();
  attnc::attn::registerAttnPasses();
  attnc::registerAttnConversionPasses();
  attnc::registerAttnToLoopsPipeline();
  attnc::registerGpuPipeline();
}

void attnc::registerTargetKernels(mlir::DialectRegistry &registry) {
  attnc::registerCpuKernels(registry);
  attnc::registerCudaKernels(registry);
}
