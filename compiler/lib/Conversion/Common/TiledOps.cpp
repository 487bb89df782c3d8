//===- TiledOps.cpp - TiledOpInterface models of the attn ops -------------===//
//
// How each computing attn op becomes phases of independent tasks.
// attn-to-loops builds the buffers and dispatches through
// attn::TiledOpInterface; the models are attached to the ops here, as
// upstream attaches TilingInterface to linalg ops from outside the dialect.
// A model takes the op's buffers from the PhaseContext and hands them to
// the function's target (attn::TargetKernelsInterface), whose model is the
// target's: x86 kernels (Conversion/Cpu/CpuKernels.cpp) or CUDA kernels
// (Conversion/Cuda/CudaKernels.cpp). No model here branches on the target.
//
//   op                 tasks                          kernel
//   attn.linear        batch x row block x panels     packed-panel GEMM
//   attn.sdpa          batch x head x query block     flash attention
//   attn.probs         batch x head                   softmax rows
//                      (CUDA: batch x head x row)
//   attn.cache_append  batch x kv head                row copies
//   attn.mask_rows     batch                          zero rows
//   attn.rope          batch x row block              pair rotations in place
//   attn.rms_norm      batch x row block              QK-norm in place
//                      (CUDA: batch x row x head group)
//   attn.clip          batch x row block              clamp in place
//
//===----------------------------------------------------------------------===//
#include "LoopBuilders.h"
#include "attnc/Conversion/Passes.h"
#include "attnc/Dialect/Attn/IR/AttnInterfaces.h"
#include "attnc/Dialect/Attn/IR/AttnKernelsInterface.h"

#include <type_traits>

using namespace mlir;
using namespace attnc::attn;

namespace {

Value optional(PhaseContext &ctx, Value v) { return v ? ctx.buffer(v) : Value(); }

/// The kernels of the function's target, or an error at `op` when its
/// kind of target has none registered (attnc::registerTargetKernels).
FailureOr<TargetKernelsInterface> kernels(Operation *op, PhaseContext &ctx) {
  auto k = dyn_cast<TargetKernelsInterface>(ctx.target());
  if (!k)
    return op->emitOpError("the target ")
           << ctx.target() << " has no kernels (attnc::registerTargetKernels)";
  return k;
}

/// The op model: `Build` takes the op's buffers from the context and calls
/// the target's kernel for it.
template <typename Model, typename Op>
struct KernelModel : TiledOpInterface::ExternalModel<Model, Op> {
  bool canTile(Operation *, PhaseContext &) const { return true; }
  LogicalResult buildTiledPhases(Operation *op, PhaseContext &ctx) const {
    FailureOr<TargetKernelsInterface> k = kernels(op, ctx);
    if (failed(k))
      return failure();
    return static_cast<const Model *>(this)->build(cast<Op>(op), ctx, *k);
  }
};

struct LinearModel : KernelModel<LinearModel, LinearOp> {
  bool canTile(Operation *op, PhaseContext &ctx) const {
    auto l = cast<LinearOp>(op);
    Value in = ctx.buffer(l.getInput()), w = ctx.buffer(l.getWeight());
    Value bias = optional(ctx, l.getBias());
    auto it = cast<MemRefType>(in.getType());
    return ctx.packedColumns(w) > 0 && (!bias || ctx.packedColumns(bias) > 0) &&
           it.getRank() == 3 && isa<FloatType>(it.getElementType());
  }
  LogicalResult build(LinearOp l, PhaseContext &ctx, TargetKernelsInterface k) const {
    Value w = ctx.buffer(l.getWeight());
    ArrayRef<Value> staged = ctx.scratch(l);
    return k.buildLinear(ctx.builder(), ctx.buffer(l.getInput()), w,
                         optional(ctx, l.getBias()), ctx.buffer(l.getResult()),
                         ctx.packedColumns(w), optional(ctx, l.getRowLens()),
                         staged.empty() ? Value() : staged.front());
  }
};

/// The buffers of attn.sdpa or attn.probs (the two share their operands
/// but v): the one place an operand of theirs reaches the kernels.
template <typename Op> AttentionBuffers attentionBuffers(Op op, PhaseContext &ctx) {
  AttentionBuffers a;
  a.q = ctx.buffer(op.getQuery());
  a.k = ctx.buffer(op.getKey());
  if constexpr (std::is_same_v<Op, SdpaOp>) {
    a.v = ctx.buffer(op.getValue());
    ArrayRef<Value> staged = ctx.scratch(op);
    if (staged.size() == 2)
      a.kStaged = staged[0], a.vStaged = staged[1];
  }
  a.o = ctx.buffer(op.getResult());
  a.qLens = optional(ctx, op.getQLens());
  a.kvLens = optional(ctx, op.getKvLens());
  a.sinks = optional(ctx, op.getSinks());
  a.relBias = optional(ctx, op.getRelBias());
  a.relEmb = optional(ctx, op.getRelEmb());
  return a;
}

struct SdpaModel : KernelModel<SdpaModel, SdpaOp> {
  LogicalResult build(SdpaOp s, PhaseContext &ctx, TargetKernelsInterface k) const {
    return k.buildSdpa(ctx.builder(), s, attentionBuffers(s, ctx));
  }
};

struct ProbsModel : KernelModel<ProbsModel, ProbsOp> {
  LogicalResult build(ProbsOp p, PhaseContext &ctx, TargetKernelsInterface k) const {
    return k.buildProbs(ctx.builder(), p, attentionBuffers(p, ctx));
  }
};

struct CacheAppendModel : KernelModel<CacheAppendModel, CacheAppendOp> {
  LogicalResult build(CacheAppendOp a, PhaseContext &ctx, TargetKernelsInterface k) const {
    return k.buildCacheAppend(ctx.builder(), ctx.buffer(a.getKey()), ctx.buffer(a.getValue()),
                              ctx.buffer(a.getKeyCache()), ctx.buffer(a.getValueCache()),
                              ctx.buffer(a.getLens()), optional(ctx, a.getPositions()));
  }
};

struct MaskRowsModel : KernelModel<MaskRowsModel, MaskRowsOp> {
  LogicalResult build(MaskRowsOp m, PhaseContext &ctx, TargetKernelsInterface k) const {
    if (failed(k.buildMaskRows(ctx.builder(), ctx.buffer(m.getResult()),
                               ctx.buffer(m.getLens()))))
      return m.emitOpError("the target's kernel needs a [B, T, N] result");
    return success();
  }
};

struct RopeModel : KernelModel<RopeModel, RopeOp> {
  LogicalResult build(RopeOp r, PhaseContext &ctx, TargetKernelsInterface k) const {
    return k.buildRope(ctx.builder(), r, ctx.buffer(r.getResult()),
                       optional(ctx, r.getPositions()));
  }
};

struct TemperatureModel : KernelModel<TemperatureModel, TemperatureOp> {
  LogicalResult build(TemperatureOp t, PhaseContext &ctx, TargetKernelsInterface k) const {
    return k.buildTemperature(ctx.builder(), t, ctx.buffer(t.getResult()),
                              optional(ctx, t.getPositions()));
  }
};

struct RmsNormModel : KernelModel<RmsNormModel, RmsNormOp> {
  LogicalResult build(RmsNormOp r, PhaseContext &ctx, TargetKernelsInterface k) const {
    return k.buildRmsNorm(ctx.builder(), r, ctx.buffer(r.getResult()),
                          optional(ctx, r.getWeight()), optional(ctx, r.getBias()));
  }
};

struct ClipModel : KernelModel<ClipModel, ClipOp> {
  LogicalResult build(ClipOp c, PhaseContext &ctx, TargetKernelsInterface k) const {
    return k.buildClip(ctx.builder(), c, ctx.buffer(c.getResult()));
  }
};

} // namespace

void attnc::registerTiledOpModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, AttnDialect *) {
    LinearOp::attachInterface<LinearModel>(*ctx);
    SdpaOp::attachInterface<SdpaModel>(*ctx);
    ProbsOp::attachInterface<ProbsModel>(*ctx);
    CacheAppendOp::attachInterface<CacheAppendModel>(*ctx);
    MaskRowsOp::attachInterface<MaskRowsModel>(*ctx);
    RopeOp::attachInterface<RopeModel>(*ctx);
    RmsNormOp::attachInterface<RmsNormModel>(*ctx);
    TemperatureOp::attachInterface<TemperatureModel>(*ctx);
    ClipOp::attachInterface<ClipModel>(*ctx);
  });
}
