//===- OutlineTasks.cpp - lowered functions -> workspace/tasks/run --------===//
//
// attn-to-loops leaves a lowered function as
//
//   func @f(args) -> index { prologue; scf.forall (%t) in (%n0) {...};
//                            ...; scf.forall (%t) in (%nP) {...};
//                            return %workspace_bytes }
//
// The C entry points need to ask for the workspace size, ask how many tasks
// each phase has, and run any range of a phase's tasks on any thread. This
// pass clones @f three times (each clone keeps only the prologue it uses):
//
//   @f__ws(args) -> index                          return %workspace_bytes
//   @f__tasks(args, %phase) -> index               return %n<phase>
//   @f__run(args, %phase, %lo, %hi)                for %t in [lo, hi):
//                                                    body of forall <phase>
//
// Per-task scratch (static memref.alloca) moves to the entry of @f__run, so
// a range of tasks reuses one stack frame. The three are recorded in the
// module's `attn.entry_points` table (#attn.code_path: the entry, the
// code path's isa, @f__ws, @f__tasks, @f__run), where the back end finds
// them.
//
//===----------------------------------------------------------------------===//
#include "attnc/Conversion/Passes.h"
#include "attnc/Dialect/Attn/IR/AttnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace attnc {
#define GEN_PASS_DEF_ATTNOUTLINETASKSPASS
#include "attnc/Conversion/Passes.h.inc"
} // namespace attnc

using namespace mlir;

namespace {

SmallVector<scf::ForallOp> phasesOf(func::FuncOp f) {
  SmallVector<scf::ForallOp> out;
  for (Operation &op : f.getBody().front())
    if (auto fa = dyn_cast<scf::ForallOp>(op))
      out.push_back(fa);
  return out;
}

/// Erases ops of the entry block that have no uses and no side effects,
/// from the bottom up (the clones' unused prologue parts).
void pruneDead(func::FuncOp f) {
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<Operation *> ops;
    for (Operation &op : f.getBody().front().without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty() && isMemoryEffectFree(op)) {
        op->erase();
        changed = true;
      }
  }
}

func::FuncOp cloneAs(func::FuncOp f, StringRef suffix, OpBuilder &mb) {
  auto clone = cast<func::FuncOp>(mb.clone(*f.getOperation()));
  clone.setName((f.getName() + suffix).str());
  mb.setInsertionPointAfter(clone);
  return clone;
}

LogicalResult outline(func::FuncOp f) {
  MLIRContext *ctx = f.getContext();
  OpBuilder mb(f);
  mb.setInsertionPointAfter(f);
  Type index = IndexType::get(ctx);
  Location loc = f.getLoc();
  unsigned numPhases = phasesOf(f).size();

  using attnc::attn::AttnDialect;
  auto *dialect = ctx->getLoadedDialect<AttnDialect>();
  auto target = dialect->getTargetAttrHelper().getAttr(f);
  if (!target)
    return f.emitOpError("attnc-outline-tasks: a lowered function without attn.target");
  bool decode = dialect->getEntryAttrHelper().isAttrPresent(f);
  func::FuncOp ws, tasks, run;
  // @f__ws
  {
    ws = cloneAs(f, "__ws", mb);
    for (scf::ForallOp fa : phasesOf(ws))
      fa.erase();
    pruneDead(ws);
  }
  // @f__tasks(args, %phase)
  {
    func::FuncOp t = tasks = cloneAs(f, "__tasks", mb);
    unsigned argc = t.getNumArguments();
    if (failed(t.insertArgument(argc, index, {}, loc)))
      return failure();
    Value phase = t.getArgument(argc);
    SmallVector<OpFoldResult> counts;
    for (scf::ForallOp fa : phasesOf(t)) {
      counts.push_back(fa.getMixedUpperBound()[0]);
      fa.erase();
    }
    auto ret = cast<func::ReturnOp>(t.getBody().front().getTerminator());
    OpBuilder b(ret);
    SmallVector<int64_t> cases;
    for (unsigned i = 0; i < numPhases; ++i)
      cases.push_back(i);
    auto sw = scf::IndexSwitchOp::create(b, loc, TypeRange{index}, phase, cases,
                                         cases.size());
    for (unsigned i = 0; i < numPhases; ++i) {
      OpBuilder cb = OpBuilder::atBlockBegin(&sw.getCaseRegions()[i].emplaceBlock());
      Value v = getValueOrCreateConstantIndexOp(cb, loc, counts[i]);
      scf::YieldOp::create(cb, loc, v);
    }
    OpBuilder db = OpBuilder::atBlockBegin(&sw.getDefaultRegion().emplaceBlock());
    scf::YieldOp::create(db, loc, ValueRange{arith::ConstantIndexOp::create(db, loc, 0)});
    ret->setOperands(sw.getResults());
    pruneDead(t);
  }
  // @f__run(args, %phase, %lo, %hi)
  {
    func::FuncOp r = run = cloneAs(f, "__run", mb);
    unsigned argc = r.getNumArguments();
    for (unsigned i = 0; i < 3; ++i)
      if (failed(r.insertArgument(argc + i, index, {}, loc)))
        return failure();
    Value phase = r.getArgument(argc), lo = r.getArgument(argc + 1),
          hi = r.getArgument(argc + 2);
    SmallVector<scf::ForallOp> phases = phasesOf(r);
    auto ret = cast<func::ReturnOp>(r.getBody().front().getTerminator());
    OpBuilder b(ret);
    SmallVector<int64_t> cases;
    for (unsigned i = 0; i < numPhases; ++i)
      cases.push_back(i);
    auto sw = scf::IndexSwitchOp::create(b, loc, TypeRange{}, phase, cases,
                                         cases.size());
    for (unsigned i = 0; i < numPhases; ++i) {
      OpBuilder cb = OpBuilder::atBlockBegin(&sw.getCaseRegions()[i].emplaceBlock());
      Value one = arith::ConstantIndexOp::create(cb, loc, 1);
      auto forOp = scf::ForOp::create(cb, loc, lo, hi, one);
      Block *body = phases[i].getBody();
      Block *dst = forOp.getBody();
      // Move the forall body (minus its terminator) into the loop.
      body->getTerminator()->erase();
      dst->getOperations().splice(dst->getTerminator()->getIterator(),
                                  body->getOperations());
      phases[i].getInductionVar(0).replaceAllUsesWith(forOp.getInductionVar());
      scf::YieldOp::create(cb, loc);
    }
    OpBuilder db = OpBuilder::atBlockBegin(&sw.getDefaultRegion().emplaceBlock());
    scf::YieldOp::create(db, loc);
    for (scf::ForallOp fa : phases)
      fa.erase();
    // Scratch allocations to the entry block; the frame is their sum.
    int64_t stack = 0;
    Block &entry = r.getBody().front();
    SmallVector<memref::AllocaOp> allocas;
    r.walk([&](memref::AllocaOp a) { allocas.push_back(a); });
    for (memref::AllocaOp a : allocas) {
      MemRefType ty = a.getType();
      if (!ty.hasStaticShape() || a->getNumOperands() != 0)
        return a.emitOpError("attnc-outline-tasks needs static task scratch");
      a->moveBefore(&entry, entry.begin());
      stack += ty.getNumElements() * ty.getElementTypeBitWidth() / 8;
    }
    OpBuilder eb(ret);
    func::ReturnOp::create(eb, loc);
    ret.erase();
    r.setType(FunctionType::get(ctx, r.getArgumentTypes(), {}));
    pruneDead(r);
    Builder ab(ctx);
    dialect->getPhasesAttrHelper().setAttr(r, ab.getI64IntegerAttr(numPhases));
    dialect->getStackBytesAttrHelper().setAttr(r, ab.getI64IntegerAttr(stack));
  }
  auto ref = [](func::FuncOp g) { return FlatSymbolRefAttr::get(g.getSymNameAttr()); };
  attnc::attn::EntryPointsAttr::addPath(
      f->getParentOfType<ModuleOp>(),
      attnc::attn::CodePathAttr::get(ctx, decode ? "decode" : "forward", target.getIsa(),
                                     ref(ws), ref(tasks), ref(run), ArrayAttr()));
  f.erase();
  return success();
}

struct OutlineTasksPass final
    : attnc::impl::AttnOutlineTasksPassBase<OutlineTasksPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<func::FuncOp> fns;
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (!f.isExternal() &&
          f->hasAttr(attnc::attn::AttnDialect::WorkspacePerRowAttrHelper::getNameStr()))
        fns.push_back(f);
    for (func::FuncOp f : fns)
      if (failed(outline(f)))
        return signalPassFailure();
  }
};

} // namespace
