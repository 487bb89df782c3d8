//===- TiledOps.cpp - TiledOpInterface models of the attn ops -------------===//
//
// How each computing attn op becomes phases of independent tasks, for the
// x86 code paths (PackedGemm.cpp, FlashAttention.cpp) and the CUDA ones
// (GpuKernels.cpp). attn-to-loops builds the buffers and dispatches through
// attn::TiledOpInterface; the models are attached to the ops here, as
// upstream attaches TilingInterface to linalg ops from outside the dialect.
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
//
//===----------------------------------------------------------------------===//
#include "LoopBuilders.h"
#include "attnc/Conversion/Passes.h"
#include "attnc/Dialect/Attn/IR/AttnInterfaces.h"
#include "attnc/Target/Isa.h"

using namespace mlir;
using namespace attnc::attn;

namespace {

Value optional(PhaseContext &ctx, Value v) { return v ? ctx.buffer(v) : Value(); }

/// A CUDA code path (#attn.cuda_target): phases are grids of blocks of
/// threads; else a CPU one (#attn.cpu_target).
bool isCuda(PhaseContext &ctx) { return static_cast<bool>(ctx.cudaTarget()); }

struct LinearModel : TiledOpInterface::ExternalModel<LinearModel, LinearOp> {
  bool canTile(Operation *op, PhaseContext &ctx) const {
    auto l = cast<LinearOp>(op);
    Value in = ctx.buffer(l.getInput()), w = ctx.buffer(l.getWeight());
    Value bias = optional(ctx, l.getBias());
    auto it = cast<MemRefType>(in.getType());
    return ctx.packedColumns(w) > 0 && (!bias || ctx.packedColumns(bias) > 0) &&
           it.getRank() == 3 && isa<FloatType>(it.getElementType());
  }
  LogicalResult buildTiledPhases(Operation *op, PhaseContext &ctx) const {
    auto l = cast<LinearOp>(op);
    Value in = ctx.buffer(l.getInput()), w = ctx.buffer(l.getWeight());
    Value bias = optional(ctx, l.getBias()), out = ctx.buffer(l.getResult());
    if (isCuda(ctx)) {
      // Every row is computed (rows past a sequence's length are masked
      // later; the GEMM does not skip them).
      attnc::buildGpuGemm(ctx.builder(), ctx.cudaTarget(), in, w, bias, out,
                          ctx.packedColumns(w));
    } else {
      attnc::buildPackedGemm(ctx.builder(), ctx.cpuTarget(), in, w, bias, out,
                             ctx.packedColumns(w), optional(ctx, l.getRowLens()));
    }
    return success();
  }
};

struct SdpaModel : TiledOpInterface::ExternalModel<SdpaModel, SdpaOp> {
  bool canTile(Operation *, PhaseContext &) const { return true; }
  LogicalResult buildTiledPhases(Operation *op, PhaseContext &ctx) const {
    auto s = cast<SdpaOp>(op);
    if (isCuda(ctx))
      return attnc::buildGpuAttention(ctx.builder(), ctx.cudaTarget(), s, ctx.buffer(s.getQuery()),
                                      ctx.buffer(s.getKey()), ctx.buffer(s.getValue()),
                                      ctx.buffer(s.getResult()), optional(ctx, s.getQLens()),
                                      optional(ctx, s.getKvLens()), optional(ctx, s.getSinks()),
                                      optional(ctx, s.getRelBias()));
    return attnc::buildFlashAttention(ctx.builder(), ctx.cpuTarget(), s, ctx.buffer(s.getQuery()),
                                      ctx.buffer(s.getKey()), ctx.buffer(s.getValue()),
                                      ctx.buffer(s.getResult()), optional(ctx, s.getQLens()),
                                      optional(ctx, s.getKvLens()),
                                      optional(ctx, s.getSinks()),
                                      optional(ctx, s.getRelBias()));
  }
};

struct ProbsModel : TiledOpInterface::ExternalModel<ProbsModel, ProbsOp> {
  bool canTile(Operation *, PhaseContext &) const { return true; }
  LogicalResult buildTiledPhases(Operation *op, PhaseContext &ctx) const {
    auto p = cast<ProbsOp>(op);
    if (isCuda(ctx))
      return attnc::buildGpuProbs(ctx.builder(), ctx.cudaTarget(), p, optional(ctx, p.getSinks()),
                                  optional(ctx, p.getRelBias()), ctx.buffer(p.getQuery()),
                                  ctx.buffer(p.getKey()), ctx.buffer(p.getResult()),
                                  optional(ctx, p.getQLens()), optional(ctx, p.getKvLens()));
    return attnc::buildProbs(ctx.builder(), ctx.cpuTarget(), p, optional(ctx, p.getSinks()),
                             optional(ctx, p.getRelBias()),
                             ctx.buffer(p.getQuery()),
                             ctx.buffer(p.getKey()), ctx.buffer(p.getResult()),
                             optional(ctx, p.getQLens()), optional(ctx, p.getKvLens()));
  }
};

struct CacheAppendModel
    : TiledOpInterface::ExternalModel<CacheAppendModel, CacheAppendOp> {
  bool canTile(Operation *, PhaseContext &) const { return true; }
  LogicalResult buildTiledPhases(Operation *op, PhaseContext &ctx) const {
    auto a = cast<CacheAppendOp>(op);
    Value k = ctx.buffer(a.getKey()), v = ctx.buffer(a.getValue());
    Value kc = ctx.buffer(a.getKeyCache()), vc = ctx.buffer(a.getValueCache());
    Value lens = ctx.buffer(a.getLens()), pos = optional(ctx, a.getPositions());
    if (isCuda(ctx))
      attnc::buildGpuCacheAppend(ctx.builder(), ctx.cudaTarget(), k, v, kc, vc, lens, pos);
    else
      attnc::buildCacheAppend(ctx.builder(), k, v, kc, vc, lens, pos);
    return success();
  }
};

struct MaskRowsModel : TiledOpInterface::ExternalModel<MaskRowsModel, MaskRowsOp> {
  bool canTile(Operation *, PhaseContext &) const { return true; }
  LogicalResult buildTiledPhases(Operation *op, PhaseContext &ctx) const {
    auto m = cast<MaskRowsOp>(op);
    Value y = ctx.buffer(m.getResult()), lens = ctx.buffer(m.getLens());
    if (!isCuda(ctx)) {
      attnc::buildMaskRows(ctx.builder(), y, lens);
      return success();
    }
    if (failed(attnc::buildGpuMaskRows(ctx.builder(), ctx.cudaTarget(), y, lens)))
      return op->emitOpError("the CUDA target needs a [B, T, N] result");
    return success();
  }
};

struct RopeModel : TiledOpInterface::ExternalModel<RopeModel, RopeOp> {
  bool canTile(Operation *, PhaseContext &) const { return true; }
  LogicalResult buildTiledPhases(Operation *op, PhaseContext &ctx) const {
    auto r = cast<RopeOp>(op);
    if (isCuda(ctx))
      attnc::buildGpuRope(ctx.builder(), ctx.cudaTarget(), r, ctx.buffer(r.getResult()),
                          optional(ctx, r.getPositions()));
    else
      attnc::buildRope(ctx.builder(), r, ctx.buffer(r.getResult()),
                       optional(ctx, r.getPositions()));
    return success();
  }
};

struct RmsNormModel : TiledOpInterface::ExternalModel<RmsNormModel, RmsNormOp> {
  bool canTile(Operation *, PhaseContext &) const { return true; }
  LogicalResult buildTiledPhases(Operation *op, PhaseContext &ctx) const {
    auto r = cast<RmsNormOp>(op);
    if (isCuda(ctx))
      attnc::buildGpuRmsNorm(ctx.builder(), ctx.cudaTarget(), r, ctx.buffer(r.getResult()),
                             ctx.buffer(r.getWeight()));
    else
      attnc::buildRmsNorm(ctx.builder(), r, ctx.buffer(r.getResult()),
                          ctx.buffer(r.getWeight()));
    return success();
  }
};

struct ClipModel : TiledOpInterface::ExternalModel<ClipModel, ClipOp> {
  bool canTile(Operation *, PhaseContext &) const { return true; }
  LogicalResult buildTiledPhases(Operation *op, PhaseContext &ctx) const {
    auto c = cast<ClipOp>(op);
    if (isCuda(ctx))
      attnc::buildGpuClip(ctx.builder(), ctx.cudaTarget(), c, ctx.buffer(c.getResult()));
    else
      attnc::buildClip(ctx.builder(), c, ctx.buffer(c.getResult()));
    return success();
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
    ClipOp::attachInterface<ClipModel>(*ctx);
  });
}
