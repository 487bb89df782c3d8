//===- Pipeline.cpp - the named stages from spec to object ----------------===//
//
//   spec ──► conceptual ──► fused ──► viewed ──► targeted ──► loops ──► llvm
//   (YAML)   (3 linears,    (1 QKV    (strided   (#attn.      (memrefs, packed
//             split/sdpa/    GEMM +    views,     target,      GEMMs, flash
//             merge)         slices)   no copies) one fn       attention as
//                                                 per ISA)     scf.forall
//                                                              phases ->
//                                                              ws/tasks/run)
//        ──► llvm-ir ──► llvm-ir-opt ──► asm/.o  (+ C glue: ABI entry
//            (wrappers)  (O3, per-ISA            points, metadata, pool)
//                         function attrs)
//
// CUDA targets (cuda-sm80, cuda-sm90) add three stages after loops, whose
// task bodies are CUDA blocks made of thread regions (GpuKernels.cpp):
//
//   loops ──► gpu ──────────► nvvm ─────────► ptx ──► llvm (host part) ...
//             (gpu.func per   (LLVM + NVVM    (NVPTX back end;
//              phase, block/   dialects in     embedded in the
//              thread ids,     the gpu.module) C glue, launched
//              barriers)                       via libcuda)
//
// Every arrow is a pass pipeline (MLIR) or a translation step (LLVM); the
// same list drives attnc, attnc-dump and attnc-opt.
//
//===----------------------------------------------------------------------===//
#include "attnc/Pipeline/Pipeline.h"
#include "attnc/FrontEnd/MLIRGen.h"
#include "attnc/Target/PackPlan.h"
#include "attnc/Target/CodePaths.h"
#include "attnc/Target/Target.h"

#include "attnc/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "attnc/Conversion/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;
using attnc::attn::AttnDialect;

const std::vector<attnc::StageInfo> &attnc::stageList() {
  static const std::vector<StageInfo> stages = {
      {"spec", "the validated spec, defaults resolved", false},
      {"conceptual", "textbook attn IR: 3 projections, split heads, sdpa, "
                     "merge heads, output projection", true},
      {"fused", "attn-fuse-qkv: one QKV projection + slices", true},
      {"viewed", "attn-heads-as-views: slices and head split/merge as strided "
                 "views", true},
      {"targeted", "attnc-set-target: the target description (attn.target, a "
                   "#attn.cpu_target or #attn.cuda_target: ISA, tiles, caches) on one function per code "
                   "path; the tiling happens in `loops`", true},
      {"loops", "attn-to-loops (attnc-encode-weights, attnc-plan-memory) + "
                "attnc-outline-tasks: packed weight layouts, buffers in a caller "
                "workspace, packed-panel GEMMs and flash attention as "
                "parallel task phases (ws/tasks/run functions); plus the "
                "pack function", false},
      {"gpu", "CUDA targets: attnc-map-to-gpu (outline, map threads, private "
              "buffers, fast math), each phase a gpu.func kernel "
              "(task = block id, thread regions guarded by the thread id and "
              "separated by barriers, shared and per-thread buffers as "
              "attributions); ws/tasks stay host functions", false, true},
      {"nvvm", "CUDA targets: the kernels in the LLVM and NVVM dialects "
               "(convert-gpu-to-nvvm)", false, true},
      {"ptx", "CUDA targets: PTX from LLVM's NVPTX back end, embedded in the "
              "library and loaded through the CUDA driver", false, true},
      {"llvm", "the LLVM dialect (for CUDA targets, the host part)", false},
      {"llvm-ir", "LLVM IR with the C entry points and metadata record", false},
      {"llvm-ir-opt", "LLVM IR after O3 for the target CPU", false},
      {"asm", "target assembly", false},
  };
  return stages;
}

int attnc::stageIndex(const std::string &name) {
  const auto &s = stageList();
  // `tiled`: the name `targeted` had before it said what the stage does
  // (scripts still pass --stage tiled).
  const std::string &want = name == "tiled" ? std::string("targeted") : name;
  for (size_t i = 0; i < s.size(); ++i)
    if (want == s[i].name)
      return static_cast<int>(i);
  return -1;
}

const char *attnc::stagePipeline(const std::string &stage) {
  if (stage == "fused")
    return "attn-fuse-qkv,func.func(canonicalize)";
  if (stage == "viewed")
    return "func.func(attn-heads-as-views,canonicalize,cse)";
  if (stage == "targeted")
    return "attnc-set-target{isa=multi}";
  if (stage == "loops")
    return "attnc-encode-weights,attnc-plan-memory," // attn-to-loops
           "attnc-outline-tasks,attnc-pack-weights,"
           "func.func(canonicalize,cse)";
  if (stage == "llvm")
    return "func.func(convert-linalg-to-loops),"
           "expand-strided-metadata,lower-affine,"
           "func.func(canonicalize,cse,loop-invariant-code-motion),"
           "attnc-approximate-exp,"
           // f32 <-> bf16 as integer ops (RNE), the same on every code
           // path (LLVM would otherwise call __truncsfbf2 where the CPU
           // lacks AVX512-BF16).
           "attnc-expand-bf16,"
           // The AMX-BF16 path's tiles, and the loops that carry them
           // (upstream's scf/cf lowering cannot type them).
           "attnc-lower-amx,"
           "convert-scf-to-cf,convert-vector-to-llvm{enable-x86vector=true},"
           "convert-math-to-llvm,"
           "convert-arith-to-llvm,"
           "convert-index-to-llvm,finalize-memref-to-llvm,convert-func-to-llvm,"
           "convert-cf-to-llvm,reconcile-unrealized-casts,canonicalize";
  return nullptr;
}

const char *attnc::nvvmPipeline() {
  // attnc-map-to-gpu already made every f32 exp an ex2.approx call;
  // attnc-approximate-exp only catches what would otherwise become a
  // libdevice call (convert-gpu-to-nvvm's math lowering).
  return "attnc-approximate-exp,"
         "gpu.module(expand-strided-metadata,lower-affine,canonicalize,cse,"
         "loop-invariant-code-motion,convert-scf-to-cf,"
         // math.fma, math.floor as LLVM intrinsics (fma.rn, cvt.rmi), not
         // libdevice calls: the PTX has no external references.
         "convert-math-to-llvm,"
         "convert-gpu-to-nvvm{index-bitwidth=64},canonicalize,cse,"
         "reconcile-unrealized-casts)";
}

std::string attnc::targetedPipeline(Isa isa) {
  return std::string("attnc-set-target{isa=") + isaName(isa) + "}";
}

void attnc::registerStagePipelines() {
  // One named pipeline per MLIR-level stage, the same pass lists attnc runs:
  // attnc-opt --attnc-stage-fused, ... --attnc-stage-llvm.
  static const char *stages[] = {"fused", "viewed", "targeted", "loops", "llvm"};
  for (const char *stage : stages) {
    std::string name = std::string("attnc-stage-") + stage;
    std::string desc = std::string("attnc's `") + stage + "` stage: " + stagePipeline(stage);
    PassPipelineRegistration<>(name, desc, [stage](OpPassManager &pm) {
      (void)parsePassPipeline(stagePipeline(stage), pm);
    });
  }
}

attnc::Compilation::Compilation(MLIRContext &ctx, const Spec &spec,
                                CompileOptions opts)
    : ctx_(ctx), spec_(&spec), opts_(std::move(opts)), name_(spec.name) {}

attnc::Compilation::Compilation(MLIRContext &ctx, OwningOpRef<ModuleOp> module,
                                std::string from, CompileOptions opts)
    : ctx_(ctx), spec_(nullptr), opts_(std::move(opts)),
      module_(std::move(module)), from_(std::move(from)) {}

const std::vector<std::string> &attnc::irEntryStages() {
  static const std::vector<std::string> s = {"conceptual", "fused", "viewed",
                                             "targeted", "loops"};
  return s;
}

attnc::Compilation::~Compilation() = default;

LogicalResult attnc::Compilation::runPasses(StringRef pipeline) {
  PassManager pm(&ctx_, ModuleOp::getOperationName());
  // --mlir-timing, --mlir-print-ir-after-all, --mlir-pass-statistics, ...
  // when the tool registered them (registerPassManagerCLOptions).
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  // --mlir-timing: one report per stage's pass pipeline.
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope root = timing.getRootScope();
  pm.enableTiming(root);
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    return failure();
  return pm.run(*module_);
}

/// The `conceptual` stage: the spec as textbook attn IR.
LogicalResult attnc::Compilation::buildConceptual() {
  module_ = buildConceptualIR(ctx_, *spec_);
  if (!module_ || failed(verify(*module_)))
    return failure();
  return success();
}

namespace {
/// Where the block description and the lowered entries disagree ("" when
/// they agree): the storage tensors, and each run-time buffer's widths
/// and presence.
std::string descMismatch(const attnc::KernelDesc &d, const attnc::PackPlan &plan) {
  const attnrt::BlockParams &p = d.block;
  std::vector<attnrt::TensorShape> want = attnrt::storageTensors(p);
  if (want.size() != plan.storage.size())
    return "it has " + std::to_string(want.size()) + " storage tensors, "
           "attn.weight_storage " + std::to_string(plan.storage.size());
  auto text = [](const attnrt::TensorShape &t) {
    std::string dims;
    for (int64_t x : t.shape)
      dims += (dims.empty() ? "" : ", ") + std::to_string(x);
    return t.name + " [" + dims + "]";
  };
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i].name != plan.storage[i].name || want[i].shape != plan.storage[i].shape)
      return "storage tensor " + std::to_string(i) + " is " + text(want[i]) +
             " in it, " + text(plan.storage[i]) + " in attn.weight_storage";
  if (int64_t(attnrt::dtypeBytes(p.weightDtype)) != plan.packedElementBytes)
    return "its weight_dtype is not the packed weights' element type";
  for (const auto *args : {&plan.forwardArgs, &plan.decodeArgs}) {
    bool lengths = false, xKv = false, probs = false;
    for (const attnc::ForwardArg &a : *args) {
      const std::vector<int64_t> &s = a.shape;
      auto bad = [&](const char *what, int64_t want) {
        return "the lowered " + a.input + " has " + what + " " +
               std::to_string(s.empty() ? -1 : s.back()) + ", the block " +
               std::to_string(want);
      };
      if ((a.input == "x" || a.input == "x_kv") && (s.empty() || s.back() != p.dModel))
        return bad("width", p.dModel);
      if (a.input == "y" && (s.empty() || s.back() != d.outDim()))
        return bad("width", d.outDim());
      if ((a.input == "k_cache" || a.input == "v_cache") &&
          (s.size() != 4 || s[1] != p.kvHeads || s[3] != p.headDim))
        return bad("head_dim", p.headDim) + " (kv_heads " + std::to_string(p.kvHeads) + ")";
      if (a.input == "probs" && (s.size() != 4 || s[1] != p.heads))
        return "the lowered probs do not have the block's " + std::to_string(p.heads) +
               " heads";
      // The activations' element type is the block's dtype: f32 code
      // labelled bf16 would write 4-byte elements into the caller's
      // 2-byte buffers (and the header and attnc-run size them so).
      const bool activation = a.input == "x" || a.input == "x_kv" || a.input == "y" ||
                              a.input == "k_cache" || a.input == "v_cache" ||
                              a.input == "probs";
      const std::string want = attnrt::nameOf("dtype", p.dtype); // (MLIR's spelling too)
      if (activation && a.elem != want)
        return "the lowered " + a.input + " holds " + a.elem + ", the block's dtype is " +
               want;
      lengths |= a.input == "lengths";
      xKv |= a.input == "x_kv";
      probs |= a.input == "probs";
    }
    // (The decode entry takes positions, not lengths or x_kv.)
    if (args == &plan.forwardArgs &&
        (lengths != d.paddingMask() || xKv != d.cross() || probs != d.wantsProbs()))
      return "its mask, cross_attention or outputs are not the lowered entries' "
             "inputs and outputs";
  }
  return "";
}
/// Where an attn.sdpa or attn.probs of IR input before `loops` computes
/// another block than the description (attn.block) says ("" when they
/// agree): its scale, mask, alignment, window, soft-capping, ALiBi and
/// relative positions. The metadata, the header and attnc-run --check
/// take the description; a hand-edited op that disagrees would compile
/// into a library that computes something else than it says.
std::string sdpaMismatch(ModuleOp module, const attnrt::BlockParams &p, Location &where) {
  using namespace attnc::attn;
  std::string why;
  auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b); };
  auto check = [&](Operation *op, MaskKind mask, double scale, CausalAlign align,
                   std::optional<int64_t> window, std::optional<double> softcap,
                   std::optional<ArrayRef<double>> slopes, bool alibiBefore,
                   bool relBuckets, bool relKeyQuery) {
    if (!why.empty())
      return;
    where = op->getLoc();
    // The decode entry (it takes positions) attends over the cache's filled
    // rows: its mask has no lengths, and it is aligned at the bottom right.
    bool decode = false;
    if (auto f = op->getParentOfType<func::FuncOp>())
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        if (auto in = f.getArgAttrOfType<StringAttr>(i, "attn.input"))
          decode |= in.getValue() == "positions";
    auto wantMask = static_cast<MaskKind>(p.mask);
    if (decode)
      wantMask = maskWithoutLengths(wantMask);
    const double wantScale = p.scale != 0 ? p.scale : 1.0 / std::sqrt(double(p.headDim));
    const bool windowed = attnc_mask_sliding(p.mask) || attnc_mask_chunked(p.mask);
    const std::string name = op->getName().getStringRef().str();
    if (mask != wantMask)
      why = name + "'s mask is " + stringifyMaskKind(mask).str() + ", the block's " +
            stringifyMaskKind(wantMask).str();
    else if (!near(scale, wantScale))
      why = name + "'s scale is " + std::to_string(scale) + ", the block's " +
            std::to_string(wantScale);
    else if ((align == CausalAlign::top_left) != (p.topLeft && !decode))
      why = name + "'s causal_align is not the block's";
    else if (windowed != window.has_value() || (window && *window != p.window))
      why = name + "'s window is not the block's (" + std::to_string(p.window) + ")";
    else if (softcap.has_value() != (p.softcap != 0) || (softcap && !near(*softcap, p.softcap)))
      why = name + "'s softcap is not the block's";
    else if (slopes.has_value() != !p.alibiSlopes.empty() ||
             (slopes && (slopes->size() != p.alibiSlopes.size() ||
                         !std::equal(slopes->begin(), slopes->end(), p.alibiSlopes.begin(),
                                     near))) ||
             (slopes && alibiBefore != p.alibiBeforeScale))
      why = name + "'s ALiBi slopes are not the block's";
    else if (relBuckets != (p.t5Buckets > 0) || relKeyQuery != p.relKeyQuery)
      why = name + "'s relative positions are not the block's";
  };
  // attn.probs carries attn.sdpa's attributes (the same accessors).
  auto visit = [&](auto s) {
    check(s.getOperation(), s.getMask(), s.getScale().convertToDouble(), s.getCausalAlign(),
          s.getWindow(),
          s.getSoftcap() ? std::optional<double>(s.getSoftcap()->convertToDouble())
                         : std::nullopt,
          s.getAlibiSlopes(), s.getAlibiBeforeScale(), s.getRelBuckets().has_value(),
          s.getRelKeyQuery());
  };
  module.walk([&](SdpaOp s) { visit(s); });
  module.walk([&](ProbsOp s) { visit(s); });
  return why;
}
} // namespace

/// After the `loops` stage: what the C glue needs, read off the lowered
/// functions, and the pack plan attnc-pack-weights built.
LogicalResult attnc::Compilation::readLowered() {
  // From here on the block is what the IR says (attn.block), not the Spec.
  FailureOr<KernelDesc> desc = readKernelDesc(*module_);
  if (failed(desc))
    return failure();
  desc_ = *desc;
  // The entry table's functions. Every code path has the same arguments
  // and workspace.
  FailureOr<LoweredEntries> table = readEntryTable(*module_);
  if (failed(table))
    return failure();
  const LoweredEntries &entries = *table;
  // Each path's functions are compiled for the path's ISA (their
  // attn.target): a path relabelled by hand would put AVX-512 code behind
  // the AVX2 CPUID check (or make LLVM abort on 512-bit vectors of an
  // AVX2 function).
  for (const CodePathSymbols &p : entries.paths)
    for (const std::string &sym : {p.ws, p.tasks, p.run}) {
      auto f = sym.empty() ? func::FuncOp() : module_->lookupSymbol<func::FuncOp>(sym);
      auto t = f ? f->getAttrOfType<attn::TargetAttrInterface>(
                       AttnDialect::TargetAttrHelper::getNameStr())
                 : attn::TargetAttrInterface();
      StringRef isa = t ? t.getIsa() : StringRef();
      if (f && isa != p.isa)
        return f.emitError("attn.entry_points: the ")
               << p.isa << " path's @" << sym << " is compiled for "
               << (isa.empty() ? StringRef("no target (no attn.target)") : isa);
    }
  LoweredInfo info;
  auto intAttr = [](func::FuncOp f, StringRef n) {
    auto a = f->getAttrOfType<IntegerAttr>(n);
    return a ? a.getInt() : int64_t(0);
  };
  // The glue runs one phase count (K_PHASES, K_DECODE_PHASES) whatever
  // code path CPUID picks: every path must have the same.
  auto samePhases = [&](ArrayRef<func::FuncOp> runs, int64_t &phases) -> LogicalResult {
    for (size_t i = 0; i < runs.size(); ++i) {
      func::FuncOp f = runs[i]; // a handle: copying it is free, and non-const
      int64_t n = intAttr(f, AttnDialect::PhasesAttrHelper::getNameStr());
      if (i > 0 && n != phases)
        return f.emitError("code path @")
               << f.getName() << " has " << n << " phases, @"
               << func::FuncOp(runs.front()).getName() << " " << phases
               << ": every code path of an entry must have the same";
      phases = n;
      info.stackBytes = std::max(info.stackBytes, intAttr(f, AttnDialect::StackBytesAttrHelper::getNameStr()));
    }
    return success();
  };
  if (failed(samePhases(entries.decodeRuns, info.decodePhases)) ||
      failed(samePhases(entries.forwardRuns, info.phases)))
    return failure();
  for (const CodePathSymbols &p : entries.paths)
    if (!p.decode)
      info.variants.push_back(p.isa);
  if (!entries.forward)
    return emitError(module_->getLoc(), "attn.entry_points has no forward code path for @")
           << desc_.name;
  info.wsPerRow = intAttr(entries.forward, AttnDialect::WorkspacePerRowAttrHelper::getNameStr());
  info.wsBuffers = intAttr(entries.forward, AttnDialect::WorkspaceBuffersAttrHelper::getNameStr());
  if (entries.decode) { // one bound (abi.h) covers both entries, per token
    info.wsPerRow =
        std::max(info.wsPerRow, intAttr(entries.decode, AttnDialect::WorkspacePerRowAttrHelper::getNameStr()));
    info.wsBuffers =
        std::max(info.wsBuffers, intAttr(entries.decode, AttnDialect::WorkspaceBuffersAttrHelper::getNameStr()));
  }
  if (desc_.decode() != static_cast<bool>(entries.decode))
    return emitError(module_->getLoc(), "decode: ")
           << desc_.decode() << " but the decode entry was "
           << (entries.decode ? "" : "not ") << "lowered";
  FailureOr<PackPlan> plan = readPackPlan(*module_, entries);
  if (failed(plan))
    return failure();
  plan_ = *plan;
  info.paths = plan_.lowered.paths;
  info.pack = plan_.lowered.pack;
  plan_.lowered = info;
  // The description the glue and the header are built from must be the
  // block the lowered code computes: a hand-edited attn.block (IR input)
  // that disagrees would let the glue accept buffers the code overruns.
  if (std::string why = descMismatch(desc_, plan_); !why.empty())
    return emitError(module_->getLoc(), "attn.block does not describe the "
                                        "lowered code: ")
           << why;
  if (failed(verify(*module_)))
    return failure();
  return success();
}

/// After attnc-map-to-gpu: each phase kernel's block size, in phase order.
LogicalResult attnc::Compilation::readGpuKernels() {
  LoweredInfo &lw = plan_.lowered;
  // attnc-map-to-gpu replaced each CUDA path's run by its kernels.
  FailureOr<LoweredEntries> table = readEntryTable(*module_);
  if (failed(table))
    return failure();
  lw.paths = table->paths;
  std::string isa = isaName(opts_.isa);
  for (bool decode : {false, true}) {
    const CodePathSymbols *p = lw.path(isa, decode);
    auto tasks = p ? module_->lookupSymbol<func::FuncOp>(p->tasks) : func::FuncOp();
    auto a = tasks ? AttnDialect::BlockThreadsAttrHelper(&ctx_).getAttr(tasks)
                   : DenseI64ArrayAttr();
    if (a)
      (decode ? lw.decodeBlockThreads : lw.blockThreads)
          .assign(a.asArrayRef().begin(), a.asArrayRef().end());
  }
  if (lw.blockThreads.size() != static_cast<size_t>(lw.phases) ||
      lw.decodeBlockThreads.size() != static_cast<size_t>(lw.decodePhases))
    return emitError(module_->getLoc(), "attnc-map-to-gpu: ")
           << lw.blockThreads.size() << " + " << lw.decodeBlockThreads.size()
           << " kernels for " << lw.phases << " + " << lw.decodePhases
           << " phases";
  return success();
}

/// The `ptx` stage: the gpu.module's kernels to PTX (ptx_); the host
/// part goes on alone.
LogicalResult attnc::Compilation::translateToPtx() {
  gpu::GPUModuleOp gm;
  for (auto m : module_->getOps<gpu::GPUModuleOp>())
    gm = m;
  if (!gm)
    return emitError(module_->getLoc(), "no gpu.module to translate");
  std::string err;
  if (!codePathKind(opts_.isa).emitDeviceCode(gm, opts_.isa, ptx_, err))
    return emitError(gm.getLoc(), err);
  // The host part goes on alone: the kernels now live in the PTX.
  gm.erase();
  (*module_)->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  return success();
}

/// The `llvm-ir` stage: the target machine, the LLVM IR of the module and
/// the C entry points around the lowered functions.
LogicalResult attnc::Compilation::translateToLLVMIR() {
  std::string err;
  tm_ = createTargetMachine(objectIsa(), err);
  if (!tm_)
    return emitError(module_->getLoc(), err);
  // attn.* argument tags have served their purpose (pack plan, ABI);
  // LLVM IR has no use for them.
  module_->walk([](LLVM::LLVMFuncOp f) {
    auto fi = cast<FunctionOpInterface>(f.getOperation());
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      for (NamedAttribute a : llvm::to_vector(fi.getArgAttrs(i)))
        if (a.getName().strref().starts_with("attn."))
          fi.removeArgAttr(i, a.getName());
  });
  llvmCtx_ = std::make_unique<llvm::LLVMContext>();
  llvm_ = translateModuleToLLVMIR(*module_, *llvmCtx_, desc_.name);
  if (!llvm_)
    return emitError(module_->getLoc(), "translation to LLVM IR failed");
  if (!addEntryPoints(*llvm_, desc_, plan_, *tm_, err))
    return emitError(module_->getLoc(), err);
  return success();
}

LogicalResult attnc::Compilation::run(
    const std::function<bool(const StageView &)> &onStage) {
  int last = stageIndex(opts_.lastStage);
  if (last < 0)
    return emitError(UnknownLoc::get(&ctx_), "unknown stage '")
           << opts_.lastStage << "'";
  const auto &stages = stageList();
  auto progress = [&](const char *name) {
    if (opts_.verbose)
      llvm::errs() << "attnc: [" << name_ << "] " << name << "\n";
  };
  auto show = [&](int i) -> bool {
    StageView v;
    v.stage = &stages[i];
    if (module_)
      v.module = *module_;
    v.llvmModule = llvm_.get();
    return onStage(v);
  };

  // IR input (the module as stage from_ left it): the stages after it.
  int first = 0;
  if (!spec_) {
    if (!module_ ||
        llvm::find(irEntryStages(), from_) == irEntryStages().end())
      return emitError(UnknownLoc::get(&ctx_), "cannot start from stage '")
             << from_ << "' (one of " << llvm::join(irEntryStages(), ", ") << ")";
    if (failed(verify(*module_)))
      return failure();
    if (from_ == "loops") { // the lowered module: its block and entry table
      if (failed(readLowered()))
        return failure();
      name_ = desc_.name;
    } else {
      FailureOr<KernelDesc> desc = readKernelDesc(*module_);
      if (failed(desc))
        return failure();
      name_ = desc->name;
      Location where = module_->getLoc();
      if (std::string why = sdpaMismatch(*module_, desc->block, where); !why.empty())
        return emitError(where, "attn.block does not describe the code: ") << why;
    }
    first = stageIndex(from_) + 1;
  }
  for (int i = first; i <= last; ++i) {
    std::string name = stages[i].name;
    // The CUDA stages (gpu, nvvm, ptx) are not stages of a CPU target (nor
    // of attnc-dump --check's host emulation): -v lists only what runs.
    if (stages[i].cudaOnly && (!isCuda(opts_.isa) || opts_.emulateGpuOnHost))
      continue;
    progress(name.c_str());
    if (name == "spec") {
      StageView v;
      v.stage = &stages[i];
      v.text = printSpec(*spec_);
      if (!onStage(v))
        return success();
      continue;
    }
    if (name == "conceptual") {
      if (failed(buildConceptual()))
        return failure();
    } else if (name == "fused") {
      if (opts_.fuseQKV &&
          failed(runPasses(stagePipeline("fused"))))
        return failure();
    } else if (name == "viewed") {
      if (opts_.headsAsViews &&
          failed(runPasses(stagePipeline("viewed"))))
        return failure();
    } else if (name == "targeted") {
      if (failed(runPasses(targetedPipeline(opts_.isa))))
        return failure();
    } else if (name == "loops") {
      if (failed(runPasses(stagePipeline("loops"))))
        return failure();
      // attnc-dump --check of a CUDA target: the same loops, run by the host.
      if (isCuda(opts_.isa) && opts_.emulateGpuOnHost &&
          failed(runPasses("attnc-gpu-on-host,func.func(canonicalize,cse)")))
        return failure();
      if (failed(readLowered()))
        return failure();
    } else if (stages[i].cudaOnly) {
      if (name == "gpu") {
        if (failed(runPasses(kMapToGpuPipeline)))
          return failure();
        if (failed(readGpuKernels()))
          return failure();
      } else if (name == "nvvm") {
        if (failed(runPasses(nvvmPipeline())))
          return failure();
      } else if (name == "ptx") {
        if (failed(translateToPtx()))
          return failure();
        StageView v;
        v.stage = &stages[i];
        v.text = ptx_;
        if (!onStage(v))
          return success();
        continue;
      }
    } else if (name == "llvm") {
      if (failed(runPasses(stagePipeline("llvm"))))
        return failure();
    } else if (name == "llvm-ir") {
      if (failed(translateToLLVMIR()))
        return failure();
    } else if (name == "llvm-ir-opt") {
      optimizeModule(*llvm_, *tm_);
    } else if (name == "asm") {
      llvm::SmallVector<char, 0> text;
      std::string err;
      if (!emitCode(*llvm_, *tm_, /*assembly=*/true, text, err))
        return emitError(module_->getLoc(), err);
      StageView v;
      v.stage = &stages[i];
      v.text.assign(text.begin(), text.end());
      if (!onStage(v))
        return success();
      continue;
    }
    if (!show(i))
      return success();
  }
  return success();
}
