//===- EmitPtx.cpp - a CUDA code path's kernels as PTX --------------------===//
//
// Translates the kernels (LLVM and NVVM dialects, in the gpu.module that
// attnc-map-to-gpu made) to LLVM IR, runs O3 for the ISA table's sm and
// writes PTX with LLVM's NVPTX back end: the device code that the glue
// embeds and loads through the CUDA driver.
//
//===----------------------------------------------------------------------===//
#include "CudaCodePaths.h"
#include "attnc/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"

using namespace llvm;

bool attnc::emitPtx(mlir::gpu::GPUModuleOp gm, Isa isa, std::string &ptx,
                    std::string &error) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  // The kernels (llvm.func in the gpu.module) as a module of their own.
  mlir::OpBuilder b(gm.getContext());
  mlir::OwningOpRef<mlir::ModuleOp> m = mlir::ModuleOp::create(gm.getLoc());
  b.setInsertionPointToEnd(m->getBody());
  for (mlir::Operation &op : gm.getBody()->getOperations())
    b.clone(op);
  LLVMContext ctx;
  std::unique_ptr<Module> lm =
      mlir::translateModuleToLLVMIR(*m, ctx, gm.getName());
  if (!lm) {
    error = "translation of the kernels to LLVM IR failed";
    return false;
  }
  Triple triple("nvptx64-nvidia-cuda");
  const Target *target = TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return false;
  // The ISA table's sm and PTX version.
  const char *sm = isaInfo(isa).cpu;
  TargetOptions opts;
  std::unique_ptr<TargetMachine> tm(target->createTargetMachine(
      triple, sm, isaInfo(isa).features, opts, std::nullopt, std::nullopt,
      CodeGenOptLevel::Aggressive));
  if (!tm) {
    error = std::string("cannot create an NVPTX target machine for ") + sm;
    return false;
  }
  lm->setTargetTriple(triple);
  lm->setDataLayout(tm->createDataLayout());
  optimizeModule(*lm, *tm);
  SmallVector<char, 0> text;
  if (!emitCode(*lm, *tm, /*assembly=*/true, text, error))
    return false;
  ptx.assign(text.begin(), text.end());
  return true;
}

