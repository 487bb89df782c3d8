//===- MapToGpu.cpp - CUDA code paths: phases -> gpu.func kernels ---------===//
//
// attnc-map-to-gpu, four passes: after attnc-outline-tasks, a CUDA code
// path is
//
//   @f__ws(args) -> index, @f__tasks(args, %phase) -> index,
//   @f__run(args, %phase, %lo, %hi) {
//     %wg = memref.alloca() : memref<..., #gpu.address_space<workgroup>>
//     %pv = memref.alloca() : memref<NT x ..., #gpu.address_space<private>>
//     scf.index_switch %phase
//     case i { scf.for %t = %lo to %hi { <task body with thread regions> } }
//   }
//
// attnc-gpu-outline: each case becomes `gpu.func @f__k<i>(args) kernel`
// with %t = block id, workgroup and private buffers its attributions. The
// code paths come from the module's `attn.entry_points` table; each CUDA
// path's `run` is replaced there by its `kernels`, in phase order.
//
// attnc-gpu-map-threads:
//   thread region  scf.forall (%tid) in (N) {B} {mapping = [#gpu.thread<x>]}
//   becomes        %tid = gpu.thread_id x; scf.if %tid < N {B}; gpu.barrier
// (a region completes for every thread before the next starts: the barrier
// is what makes the GPU program mean what the sequential one does).
//
// attnc-gpu-private-buffers: a private [NT, ...] attribution becomes [...]
// (its first index is the thread id in every access, which the pass checks).
//
// attnc-gpu-fast-math: f32 exp, sqrt and |x| as NVVM intrinsics.
//
// attnc-gpu-on-host: the inverse view for checking on a CPU (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "attnc/Conversion/Passes.h"
#include "attnc/Dialect/Attn/IR/AttnDialect.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <set>

namespace attnc {
#define GEN_PASS_DEF_ATTNGPUOUTLINEPASS
#define GEN_PASS_DEF_ATTNGPUMAPTHREADSPASS
#define GEN_PASS_DEF_ATTNGPUPRIVATEBUFFERSPASS
#define GEN_PASS_DEF_ATTNGPUFASTMATHPASS
#define GEN_PASS_DEF_ATTNSTRIPGPUSPACESPASS
#include "attnc/Conversion/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using attnc::attn::AttnDialect;

namespace {

bool isCudaFn(func::FuncOp f) {
  return f->getAttrOfType<attnc::attn::CudaTargetAttr>(
             AttnDialect::TargetAttrHelper::getNameStr()) != nullptr;
}

std::optional<gpu::AddressSpace> spaceOf(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  if (!m)
    return std::nullopt;
  if (auto s = dyn_cast_or_null<gpu::AddressSpaceAttr>(m.getMemorySpace()))
    return s.getValue();
  return std::nullopt;
}

bool isThreadRegion(scf::ForallOp fa) {
  auto m = fa.getMapping();
  return m && m->size() == 1 && isa<gpu::GPUThreadMappingAttr>((*m)[0]);
}

/// Replaces a thread region by its body for thread `tid` (guarded when the
/// region has fewer threads than the block) followed by a barrier.
void lowerThreadRegion(scf::ForallOp fa, Value tid, int64_t blockThreads) {
  OpBuilder b(fa);
  Location loc = fa.getLoc();
  int64_t n = *getConstantIntValue(fa.getMixedUpperBound()[0]);
  Block *body = fa.getBody();
  body->getTerminator()->erase();
  fa.getInductionVar(0).replaceAllUsesWith(tid);
  if (n >= blockThreads) {
    b.getInsertionBlock()->getOperations().splice(b.getInsertionPoint(),
                                                  body->getOperations());
  } else {
    Value bound = arith::ConstantIndexOp::create(b, loc, n);
    Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid, bound);
    auto ifOp = scf::IfOp::create(b, loc, in, /*withElse=*/false);
    Block *dst = ifOp.thenBlock();
    dst->getOperations().splice(dst->getTerminator()->getIterator(),
                                body->getOperations());
  }
  gpu::BarrierOp::create(b, loc);
  fa.erase();
}

/// The constant tables a kernel reads (memref.get_global: RoPE's
/// frequencies, ALiBi's slopes, T5's buckets) copied into the GPU module,
/// where its symbol references resolve; only constant globals (device
/// memory the host never writes).
LogicalResult copyGlobals(gpu::GPUFuncOp kernel, ModuleOp module, gpu::GPUModuleOp gm) {
  WalkResult r = kernel.walk([&](memref::GetGlobalOp g) {
    StringRef name = g.getName();
    if (SymbolTable::lookupSymbolIn(gm, name))
      return WalkResult::advance();
    auto global = dyn_cast_or_null<memref::GlobalOp>(SymbolTable::lookupSymbolIn(module, name));
    if (!global || !global.getConstant()) {
      g.emitOpError("attnc-gpu-outline: a kernel may read only constant globals");
      return WalkResult::interrupt();
    }
    OpBuilder::atBlockBegin(gm.getBody()).clone(*global);
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

/// The kernels' f32 math as the hardware's instructions, never libdevice
/// calls (convert-gpu-to-nvvm would make math.exp, math.sqrt and math.absf
/// __nv_* calls, and refuses their LLVM intrinsics):
///   exp(x) = 2^(x log2 e) with ex2.approx (what CUDA's __expf does), for
///     exp(max(x, c)) with c >= -87: then no denormal reaches its
///     flush-to-zero form (the kernels clamp every exponential this way:
///     attnc::expClamped); any other exp is refused;
///   sqrt: sqrt.rn (IEEE round to nearest, as sqrtf), the QK-norm's;
///   |x|: abs (the soft-cap's).
LogicalResult lowerMath(gpu::GPUFuncOp kernel) {
  SmallVector<Operation *> ops;
  kernel.walk([&](Operation *op) {
    if (isa<math::ExpOp, math::SqrtOp, math::AbsFOp>(op) && op->getResult(0).getType().isF32())
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder ob(op);
    Location loc = op->getLoc();
    Value x = op->getOperand(0);
    const char *intrinsic = isa<math::SqrtOp>(op) ? "llvm.nvvm.sqrt.rn.f"
                            : isa<math::AbsFOp>(op) ? "llvm.fabs.f32"
                                                    : "llvm.nvvm.ex2.approx.ftz.f";
    if (isa<math::ExpOp>(op)) {
      auto mx = x.getDefiningOp<arith::MaximumFOp>();
      APFloat c(0.0f);
      bool clamped = mx && (matchPattern(mx.getRhs(), m_ConstantFloat(&c)) ||
                            matchPattern(mx.getLhs(), m_ConstantFloat(&c))) &&
                     c.convertToDouble() >= -87.0;
      if (!clamped)
        return op->emitOpError("attnc-gpu-fast-math: exp of an argument not clamped "
                               "to >= -87 (ex2.approx.ftz would flush denormals)");
      Value log2e = arith::ConstantOp::create(ob, loc, ob.getF32FloatAttr(1.4426950408889634f));
      x = arith::MulFOp::create(ob, loc, x, log2e);
    }
    auto call = LLVM::CallIntrinsicOp::create(ob, loc, ob.getF32Type(),
                                              ob.getStringAttr(intrinsic), ValueRange{x});
    op->getResult(0).replaceAllUsesWith(call.getResult(0));
    op->erase();
  }
  return success();
}

/// What a task body uses from outside its loop: the pure prologue ops to
/// clone into the kernel (`outside`) and the task buffers (in program
/// order: deterministic attributions). An impure value from outside fails.
LogicalResult collectTaskInputs(scf::ForOp taskLoop, SetVector<Operation *> &outside,
                                SmallVector<memref::AllocaOp> &buffers) {
  std::set<Operation *> seenAlloca;
  SmallVector<Value> work;
  taskLoop.getBody()->walk([&](Operation *op) {
    for (Value v : op->getOperands())
      work.push_back(v);
  });
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || taskLoop->isAncestor(def) || outside.contains(def))
      continue;
    if (auto a = dyn_cast<memref::AllocaOp>(def)) {
      if (seenAlloca.insert(def).second)
        buffers.push_back(a);
      continue;
    }
    if (!isMemoryEffectFree(def) || def->getNumRegions() != 0)
      return def->emitOpError("attnc-gpu-outline: the task body uses a value "
                              "that cannot be recomputed in the kernel");
    outside.insert(def);
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  // Attributions in the buffers' program order (deterministic output).
  llvm::sort(buffers, [](memref::AllocaOp x, memref::AllocaOp y) {
    return x->isBeforeInBlock(y);
  });
  return success();
}

/// A kernel body the GPU can run: no write outside a thread region, every
/// loop in a task a static thread region (`regions`, at most 1024 threads:
/// `threads` is the widest), no linalg or vector ops.
LogicalResult checkKernelBody(gpu::GPUFuncOp kernel, SmallVector<scf::ForallOp> &regions,
                              int64_t &threads) {
  // Outside thread regions an op runs once in the sequential meaning but
  // once per thread on the GPU: only pure ops (and control flow) may.
  WalkResult racy = kernel.walk([&](Operation *op) {
    if (op->getParentOfType<scf::ForallOp>() || isa<scf::ForallOp>(op))
      return WalkResult::advance();
    auto mem = dyn_cast<MemoryEffectOpInterface>(op);
    if (mem && mem.hasEffect<MemoryEffects::Write>() &&
        !isa<memref::AllocaOp>(op)) {
      op->emitOpError("attnc-gpu-outline: a write outside a thread region "
                      "would run once per thread");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (racy.wasInterrupted())
    return failure();
  // Thread regions -> guarded bodies + barriers.
  kernel.walk([&](scf::ForallOp fa) { regions.push_back(fa); });
  for (scf::ForallOp fa : regions) {
    auto n = getConstantIntValue(fa.getMixedUpperBound()[0]);
    if (!isThreadRegion(fa) || fa.getRank() != 1 || !n)
      return fa.emitOpError("attnc-gpu-outline: a loop inside a task must be "
                            "a static thread region (#gpu.thread<x>)");
    threads = std::max(threads, *n);
  }
  WalkResult foreign = kernel.walk([&](Operation *op) {
    return isa_and_nonnull<linalg::LinalgDialect, vector::VectorDialect>(op->getDialect())
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (foreign.wasInterrupted())
    return kernel.emitOpError("attnc-gpu-outline: a phase that is not a GPU "
                              "kernel (linalg/vector ops in a task)");
  if (threads > 1024)
    return kernel.emitOpError("attnc-gpu-outline: more than 1024 threads per block");
  return success();
}

/// Private buffers ([threads, ...] on the host) lose their thread index:
/// each thread has its own attribution. Every access must index one with
/// the thread id `tid` first.
LogicalResult dropPrivateThreadIndex(gpu::GPUFuncOp kernel, Value tid) {
  llvm::SmallPtrSet<Value, 4> privates;
  for (BlockArgument p : kernel.getPrivateAttributions()) {
    auto t = cast<MemRefType>(p.getType());
    if (t.getRank() < 2)
      return kernel.emitOpError("attnc-gpu-private-buffers: private attribution ")
             << p.getArgNumber() << " is not a [threads, ...] buffer";
    p.setType(MemRefType::get(t.getShape().drop_front(), t.getElementType(),
                              MemRefLayoutAttrInterface{}, t.getMemorySpace()));
    privates.insert(p);
  }
  SmallVector<Operation *> accesses;
  kernel.walk([&](Operation *op) {
    if (isa<memref::LoadOp, memref::StoreOp>(op))
      accesses.push_back(op);
  });
  for (Operation *op : accesses) {
    auto ld = dyn_cast<memref::LoadOp>(op);
    auto st = dyn_cast<memref::StoreOp>(op);
    Value mem = ld ? ld.getMemRef() : st.getMemRef();
    if (!privates.count(mem))
      continue;
    ValueRange at = ld ? ld.getIndices() : st.getIndices();
    if (at.empty() || at[0] != tid)
      return op->emitOpError("attnc-gpu-private-buffers: a private buffer must be "
                             "indexed by the thread id first");
    SmallVector<Value> rest(at.drop_front());
    OpBuilder ob(op);
    if (ld) {
      Value nv = memref::LoadOp::create(ob, op->getLoc(), mem, rest);
      ld.getResult().replaceAllUsesWith(nv);
    } else {
      memref::StoreOp::create(ob, op->getLoc(), st.getValueToStore(), mem, rest);
    }
    op->erase();
  }
  return success();
}

LogicalResult mapFunction(func::FuncOp run, gpu::GPUModuleOp gm,
                          SmallVectorImpl<int64_t> &blockThreads,
                          SmallVectorImpl<Attribute> &kernels) {
  MLIRContext *ctx = run.getContext();
  // The kernels are named after the function they come from: @f__k<i>
  // for @f__run.
  StringRef base = run.getName();
  base.consume_back("__run");
  Block &entry = run.getBody().front();
  unsigned nArgs = run.getNumArguments() - 3;
  scf::IndexSwitchOp sw;
  for (Operation &op : entry)
    if (auto s = dyn_cast<scf::IndexSwitchOp>(op))
      sw = s;
  if (!sw)
    return run.emitOpError("attnc-gpu-outline: no phase switch");
  SmallVector<Type> argTypes(run.getArgumentTypes().take_front(nArgs));
  auto fnType = FunctionType::get(ctx, argTypes, {});

  for (auto [phase, region] : llvm::enumerate(sw.getCaseRegions())) {
    scf::ForOp taskLoop;
    for (Operation &op : region.front())
      if (auto f = dyn_cast<scf::ForOp>(op))
        taskLoop = f;
    if (!taskLoop)
      return sw.emitOpError("attnc-gpu-outline: phase ") << phase << " has no task loop";
    // Values the task body uses from outside it: function arguments map to
    // kernel arguments; buffers to attributions; pure prologue ops (sizes,
    // views, constants) are cloned into the kernel.
    SetVector<Operation *> outside;
    SmallVector<memref::AllocaOp> buffers;
    if (failed(collectTaskInputs(taskLoop, outside, buffers)))
      return failure();
    SmallVector<Type> wgTypes, pvTypes;
    for (memref::AllocaOp a : buffers) {
      MemRefType t = a.getType();
      auto space = spaceOf(t);
      if (space == gpu::AddressSpace::Workgroup) {
        wgTypes.push_back(t);
      } else if (space == gpu::AddressSpace::Private && t.getRank() >= 2) {
        // [threads, ...] as on the host: attnc-gpu-private-buffers drops
        // the thread index once the thread regions are mapped.
        pvTypes.push_back(t);
      } else {
        return a.emitOpError("attnc-gpu-outline: a task buffer must be workgroup "
                             "memory or per-thread [threads, ...] private memory");
      }
    }
    OpBuilder mb = OpBuilder::atBlockEnd(gm.getBody());
    std::string name = (base + "__k" + Twine(phase)).str();
    auto kernel = gpu::GPUFuncOp::create(mb, run.getLoc(), name, fnType, wgTypes, pvTypes);
    kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
    Block &kb = kernel.getBody().front();
    OpBuilder b = OpBuilder::atBlockEnd(&kb);
    IRMapping map;
    for (unsigned i = 0; i < nArgs; ++i)
      map.map(run.getArgument(i), kb.getArgument(i));
    unsigned wi = 0, pi = 0;
    for (memref::AllocaOp a : buffers)
      map.map(a.getResult(), spaceOf(a.getType()) == gpu::AddressSpace::Workgroup
                                 ? kernel.getWorkgroupAttributions()[wi++]
                                 : kernel.getPrivateAttributions()[pi++]);
    // Prologue ops in program order (entry block first, then the case).
    SmallVector<Operation *> order(outside.begin(), outside.end());
    auto rank = [&](Operation *op) {
      return std::make_pair(op->getBlock() == &entry ? 0 : 1, op);
    };
    llvm::sort(order, [&](Operation *x, Operation *y) {
      auto rx = rank(x), ry = rank(y);
      if (rx.first != ry.first)
        return rx.first < ry.first;
      return x->isBeforeInBlock(y);
    });
    for (Operation *op : order)
      b.clone(*op, map);
    Value blockId = gpu::BlockIdOp::create(b, run.getLoc(), gpu::Dimension::x);
    map.map(taskLoop.getInductionVar(), blockId);
    for (Operation &op : taskLoop.getBody()->without_terminator())
      b.clone(op, map);
    gpu::ReturnOp::create(b, run.getLoc());
    if (failed(copyGlobals(kernel, run->getParentOfType<ModuleOp>(), gm)))
      return failure();

    // The block: as many threads as the widest thread region.
    SmallVector<scf::ForallOp> regions;
    int64_t threads = 1;
    if (failed(checkKernelBody(kernel, regions, threads)))
      return failure();
    kernel.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(
        ctx, {static_cast<int32_t>(threads), 1, 1}));
    blockThreads.push_back(threads);
    kernels.push_back(SymbolRefAttr::get(gm.getSymNameAttr(),
                                         {FlatSymbolRefAttr::get(kernel.getNameAttr())}));
  }
  return success();
}

struct GpuOutlinePass final : attnc::impl::AttnGpuOutlinePassBase<GpuOutlinePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // The CUDA code paths of the entry table.
    SmallVector<std::tuple<attnc::attn::CodePathAttr, func::FuncOp, func::FuncOp>> paths;
    for (attnc::attn::CodePathAttr p : attnc::attn::EntryPointsAttr::of(module).getCodePaths()) {
      if (!attnc::isCudaName(p.getIsa()) || !p.getRun())
        continue;
      auto run = module.lookupSymbol<func::FuncOp>(p.getRun());
      auto tasks = module.lookupSymbol<func::FuncOp>(p.getTasks());
      if (!run || !tasks || run.isExternal()) {
        module.emitOpError("attnc-gpu-outline: the functions of code path ")
            << p << " are not in the module";
        return signalPassFailure();
      }
      paths.push_back({p, run, tasks});
    }
    if (paths.empty())
      return;
    std::string gmName;
    if (auto n = module->getAttrOfType<StringAttr>(AttnDialect::SpecNameAttrHelper::getNameStr()))
      gmName = (n.getValue() + "_kernels").str();
    else
      gmName = "attnc_kernels";
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    auto gm = gpu::GPUModuleOp::create(mb, module.getLoc(), gmName);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
    auto *dialect = ctx->getLoadedDialect<AttnDialect>();
    for (auto [path, run, tasks] : paths) {
      SmallVector<int64_t> threads;
      SmallVector<Attribute> kernels;
      if (failed(mapFunction(run, gm, threads, kernels)))
        return signalPassFailure();
      Builder ab(ctx);
      dialect->getPhasesAttrHelper().setAttr(tasks, ab.getI64IntegerAttr(threads.size()));
      dialect->getBlockThreadsAttrHelper().setAttr(tasks, ab.getDenseI64ArrayAttr(threads));
      run.erase();
      attnc::attn::EntryPointsAttr::addPath(
          module, attnc::attn::CodePathAttr::get(ctx, path.getEntry(), path.getIsa(),
                                                 path.getWs(), path.getTasks(),
                                                 FlatSymbolRefAttr(), ab.getArrayAttr(kernels)));
    }
    // The tables now in the GPU module that no host function reads.
    llvm::StringSet<> hostUses;
    for (auto f : module.getOps<func::FuncOp>())
      f.walk([&](memref::GetGlobalOp g) { hostUses.insert(g.getName()); });
    for (auto g : llvm::make_early_inc_range(module.getOps<memref::GlobalOp>()))
      if (SymbolTable::lookupSymbolIn(gm, g.getSymName()) && !hostUses.contains(g.getSymName()))
        g.erase();
  }
};

/// The kernels of the module's GPU modules that attnc-gpu-outline made.
SmallVector<gpu::GPUFuncOp> outlinedKernels(ModuleOp module) {
  SmallVector<gpu::GPUFuncOp> out;
  for (auto gm : module.getOps<gpu::GPUModuleOp>())
    for (auto k : gm.getOps<gpu::GPUFuncOp>())
      if (k.isKernel())
        out.push_back(k);
  return out;
}

struct GpuMapThreadsPass final
    : attnc::impl::AttnGpuMapThreadsPassBase<GpuMapThreadsPass> {
  using Base::Base;
  void runOnOperation() override {
    for (gpu::GPUFuncOp kernel : outlinedKernels(getOperation())) {
      std::optional<ArrayRef<int32_t>> size = kernel.getKnownBlockSize();
      if (!size || size->size() != 3) {
        kernel.emitOpError("attnc-gpu-map-threads: a kernel without known_block_size "
                           "(attnc-gpu-outline sets it)");
        return signalPassFailure();
      }
      // The thread id, next to the block id (the task) if there is one.
      Block &entry = kernel.getBody().front();
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      for (Operation &op : entry)
        if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
          b.setInsertionPointAfter(id);
          break;
        }
      Value tid = gpu::ThreadIdOp::create(b, kernel.getLoc(), gpu::Dimension::x);
      SmallVector<scf::ForallOp> regions;
      kernel.walk([&](scf::ForallOp fa) { regions.push_back(fa); });
      for (scf::ForallOp fa : regions) {
        if (!isThreadRegion(fa) || fa.getRank() != 1 ||
            !getConstantIntValue(fa.getMixedUpperBound()[0])) {
          fa.emitOpError("attnc-gpu-map-threads: not a static thread region");
          return signalPassFailure();
        }
        lowerThreadRegion(fa, tid, (*size)[0]);
      }
    }
  }
};

struct GpuPrivateBuffersPass final
    : attnc::impl::AttnGpuPrivateBuffersPassBase<GpuPrivateBuffersPass> {
  using Base::Base;
  void runOnOperation() override {
    for (gpu::GPUFuncOp kernel : outlinedKernels(getOperation())) {
      if (kernel.getPrivateAttributions().empty())
        continue;
      gpu::ThreadIdOp tid;
      kernel.walk([&](gpu::ThreadIdOp t) {
        if (!tid && t.getDimension() == gpu::Dimension::x)
          tid = t;
      });
      if (!tid) {
        kernel.emitOpError("attnc-gpu-private-buffers: private buffers but no "
                           "thread id (run attnc-gpu-map-threads first)");
        return signalPassFailure();
      }
      if (failed(dropPrivateThreadIndex(kernel, tid)))
        return signalPassFailure();
    }
  }
};

struct GpuFastMathPass final : attnc::impl::AttnGpuFastMathPassBase<GpuFastMathPass> {
  using Base::Base;
  void runOnOperation() override {
    for (gpu::GPUFuncOp kernel : outlinedKernels(getOperation()))
      if (failed(lowerMath(kernel)))
        return signalPassFailure();
  }
};

/// The host version of a GPU memref type: no memory space.
Type hostType(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  if (!m || !spaceOf(m))
    return t;
  return MemRefType::get(m.getShape(), m.getElementType(), m.getLayout());
}

struct GpuOnHostPass final
    : attnc::impl::AttnStripGpuSpacesPassBase<GpuOnHostPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    llvm::StringMap<FlatSymbolRefAttr> renamed;
    attnc::attn::TargetAttrInterface hostTarget;
    for (auto f : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!isCudaFn(f))
        continue;
      auto t = f->getAttrOfType<attnc::attn::TargetAttrInterface>(AttnDialect::TargetAttrHelper::getNameStr());
      std::string from = ("__" + attnc::variantSuffix(t.getIsa())).str();
      std::string name = f.getName().str();
      size_t at = name.find(from);
      if (at == std::string::npos) {
        f.emitOpError("attnc-gpu-on-host: no ") << from << " in the name";
        return signalPassFailure();
      }
      name.replace(at, from.size(), "__host");
      renamed[f.getName()] = FlatSymbolRefAttr::get(ctx, name);
      f.setName(name);
      hostTarget = attnc::targetFor(ctx, "host");
      f->setAttr(AttnDialect::TargetAttrHelper::getNameStr(), hostTarget);
      f.walk([&](memref::AllocaOp a) {
        a.getResult().setType(cast<MemRefType>(hostType(a.getType())));
      });
      // Thread regions run one thread after another.
      SmallVector<scf::ForallOp> regions;
      f.walk([&](scf::ForallOp fa) { regions.push_back(fa); });
      for (scf::ForallOp fa : regions) {
        if (!isThreadRegion(fa)) {
          fa.setMappingAttr(nullptr);
          continue;
        }
        OpBuilder b(fa);
        Location loc = fa.getLoc();
        Value lb = arith::ConstantIndexOp::create(b, loc, 0);
        Value ub = getValueOrCreateConstantIndexOp(b, loc, fa.getMixedUpperBound()[0]);
        Value one = arith::ConstantIndexOp::create(b, loc, 1);
        auto forOp = scf::ForOp::create(b, loc, lb, ub, one);
        Block *body = fa.getBody();
        body->getTerminator()->erase();
        Block *dst = forOp.getBody();
        dst->getOperations().splice(dst->getTerminator()->getIterator(),
                                    body->getOperations());
        fa.getInductionVar(0).replaceAllUsesWith(forOp.getInductionVar());
        fa.erase();
      }
    }
    // The entry table follows the renaming: the CUDA paths are host paths.
    auto to = [&](FlatSymbolRefAttr r) {
      auto it = r ? renamed.find(r.getValue()) : renamed.end();
      return it == renamed.end() ? r : it->second;
    };
    attnc::attn::EntryPointsAttr table = attnc::attn::EntryPointsAttr::of(module);
    SmallVector<attnc::attn::CodePathAttr> paths;
    for (attnc::attn::CodePathAttr p : table.getCodePaths())
      paths.push_back(!hostTarget || !attnc::isCudaName(p.getIsa())
                          ? p
                          : attnc::attn::CodePathAttr::get(
                                ctx, p.getEntry(), hostTarget.getIsa(), to(p.getWs()),
                                to(p.getTasks()), to(p.getRun()), p.getKernels()));
    if (!paths.empty())
      ctx->getLoadedDialect<AttnDialect>()->getEntryPointsAttrHelper().setAttr(
          module, attnc::attn::EntryPointsAttr::get(ctx, table.getPack(), paths));
  }
};

} // namespace

void attnc::registerGpuPipeline() {
  registerPassList("attnc-map-to-gpu",
                   "CUDA code paths' phases as gpu.func kernels: attnc-gpu-outline, "
                   "attnc-gpu-map-threads, attnc-gpu-private-buffers, attnc-gpu-fast-math",
                   kMapToGpuPipeline);
}
