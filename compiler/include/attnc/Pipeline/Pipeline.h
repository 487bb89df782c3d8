//===- Pipeline.h - the named stages from spec to object --------*- C++ -*-===//
//
// One list of stages, shared by attnc (compile), attnc-dump (print/check)
// and attnc-opt (the MLIR-level lowering is registered as a pipeline):
//
//   spec -> conceptual -> fused -> viewed -> targeted -> loops
//        [-> gpu -> nvvm -> ptx: CUDA targets] -> llvm -> llvm-ir
//        -> llvm-ir-opt -> asm
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_PIPELINE_PIPELINE_H
#define ATTNC_PIPELINE_PIPELINE_H

#include "attnc/Spec/Spec.h"
#include "attnc/Target/Isa.h"
#include "attnc/Target/KernelDesc.h"
#include "attnc/Target/PackPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/IR/Module.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class TargetMachine;
}

namespace attnc {

struct StageInfo {
  const char *name;
  const char *summary;
  bool attnLevel; ///< the IR evaluator can run this stage
  bool cudaOnly = false; ///< exists only for CUDA targets (gpu, nvvm, ptx)
};

/// Every stage in order.
const std::vector<StageInfo> &stageList();
/// The stages a module can be compiled on from (Compilation's IR input):
/// conceptual, fused, viewed, targeted, loops.
const std::vector<std::string> &irEntryStages();
/// Index of `name` in stageList(), or -1.
int stageIndex(const std::string &name);

struct CompileOptions {
  Isa isa = Isa::Multi; ///< AVX-512 + AVX2 code, chosen at load time
  bool fuseQKV = true;     ///< run attn-fuse-qkv in the `fused` stage
  bool headsAsViews = true; ///< run attn-heads-as-views in the `viewed` stage
  bool verbose = false;    ///< progress on stderr
  /// CUDA targets only (attnc-dump --check): after the loops stage, lower
  /// the GPU-shaped loops for the host CPU instead of to PTX, so the tiled
  /// kernels run sequentially (one block after another, the threads of a
  /// block one region after another) and can be checked without a GPU.
  bool emulateGpuOnHost = false;
  std::string lastStage = "asm"; ///< stop after this stage
};

/// What the pipeline shows after a stage. Exactly one of the pointers (or
/// `text`) is meaningful, depending on the stage kind.
struct StageView {
  const StageInfo *stage = nullptr;
  mlir::ModuleOp module;       ///< MLIR stages
  llvm::Module *llvmModule = nullptr; ///< LLVM IR stages
  std::string text;            ///< spec and asm stages
};

/// Runs the stages in order up to `opts.lastStage`, calling `onStage` after
/// each (return false to stop early). Diagnostics go to the context's
/// handler. On success `plan` holds the weight packing plan (once the loops
/// stage ran) and `llvmOut` the final LLVM module (once llvm-ir ran).
class Compilation {
public:
  Compilation(mlir::MLIRContext &ctx, const Spec &spec, CompileOptions opts);
  /// From IR: `module` is what stage `from` (one of irEntryStages()) left,
  /// as attnc-dump --stage FROM prints it or attnc-opt's stage pipelines
  /// make it; run() runs the stages after it. The module must carry the
  /// front end's attn.block and attn.weight_storage.
  Compilation(mlir::MLIRContext &ctx, mlir::OwningOpRef<mlir::ModuleOp> module,
              std::string from, CompileOptions opts);
  ~Compilation();

  mlir::LogicalResult run(const std::function<bool(const StageView &)> &onStage);

  const PackPlan &plan() const { return plan_; }
  /// The block as the IR describes it (attn.block, read once the loops
  /// stage ran): what the glue, the header and the entry points are built
  /// from.
  const KernelDesc &desc() const { return desc_; }
  llvm::Module *llvmModule() { return llvm_.get(); }
  llvm::TargetMachine *targetMachine() { return tm_.get(); }
  /// CUDA targets: the PTX (once the ptx stage ran).
  const std::string &ptx() const { return ptx_; }
  /// The instruction set the compiled object's code paths are for (the
  /// host CPU when a CUDA target is emulated on the host).
  Isa objectIsa() const {
    return opts_.emulateGpuOnHost && isCuda(opts_.isa) ? Isa::Host : opts_.isa;
  }
  /// The target whose kernels the loops are (the CUDA target even when
  /// emulated on the host).
  Isa kernelsIsa() const { return opts_.isa; }
  mlir::ModuleOp module() { return *module_; }

private:
  mlir::LogicalResult runPasses(llvm::StringRef pipeline);
  // The stages that do more than run a pass pipeline (Pipeline.cpp).
  mlir::LogicalResult buildConceptual();
  mlir::LogicalResult readLowered();
  mlir::LogicalResult readGpuKernels();
  mlir::LogicalResult translateToPtx();
  mlir::LogicalResult translateToLLVMIR();
  mlir::MLIRContext &ctx_;
  const Spec *spec_; ///< null for IR input
  CompileOptions opts_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  std::string from_; ///< IR input: the stage the module is at
  std::string name_; ///< the kernel's (progress lines)
  std::unique_ptr<llvm::LLVMContext> llvmCtx_;
  std::unique_ptr<llvm::Module> llvm_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  PackPlan plan_;
  KernelDesc desc_;
  std::string ptx_;
};

/// The textual pass pipeline (on builtin.module) that produces an MLIR-level
/// stage from the previous one: "fused", "viewed", "targeted" (default
/// target: multi), "loops" (with @NAME_pack, from the module's
/// attn.weight_storage) or "llvm"; null for other stages.
const char *stagePipeline(const std::string &stage);
/// The `nvvm` stage's pipeline (CUDA targets): the gpu.module's kernels to
/// the LLVM and NVVM dialects.
const char *nvvmPipeline();
/// The `targeted` stage's pipeline for a given instruction set.
std::string targetedPipeline(Isa isa);

/// Registers `attnc-stage-<stage>` for every stage with a pipeline, so
/// attnc-opt can replay any step of attnc on a .mlir file.
void registerStagePipelines();

} // namespace attnc

#endif
