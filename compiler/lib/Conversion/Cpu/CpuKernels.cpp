//===- CpuKernels.cpp - the CPU target's kernels ---------------------------===//
//
// The TargetKernelsInterface model of #attn.cpu_target: each computing op
// as the x86 kernels build it (PackedGemm.cpp, FlashAttention.cpp, and the
// scalar-loop builders of Common/LoopBuilders.cpp).
//
//===----------------------------------------------------------------------===//
#include "CpuBuilders.h"
#include "attnc/Conversion/Passes.h"
#include "attnc/Dialect/Attn/IR/AttnKernelsInterface.h"

using namespace mlir;
using namespace attnc::attn;

namespace {
struct CpuKernels
    : TargetKernelsInterface::ExternalModel<CpuKernels, CpuTargetAttr> {
  static CpuTargetAttr target(Attribute attr) { return cast<CpuTargetAttr>(attr); }

  bool isDevice(Attribute) const { return false; }
  LogicalResult buildDeviceCopy(Attribute, ImplicitLocOpBuilder &, Value, Value) const {
    return failure(); // host memory: attn-to-loops copies with its own loops
  }
  LogicalResult buildLinear(Attribute attr, ImplicitLocOpBuilder &b, Value x, Value wp,
                            Value bias, Value y, int64_t n, Value rowLens,
                            Value xStaged) const {
    attnc::buildPackedGemm(b, target(attr), x, wp, bias, y, n, rowLens, xStaged);
    return success();
  }
  bool linearStagesInput(Attribute, Value x, Value wp) const {
    return attnc::packedGemmStagesInput(x, wp);
  }
  int64_t sdpaStagedWidth(Attribute, SdpaOp op, Value q, Value) const {
    return attnc::flashAttentionStagedWidth(op, q);
  }
  LogicalResult buildSdpa(Attribute attr, ImplicitLocOpBuilder &b, SdpaOp op,
                          const AttentionBuffers &bufs) const {
    return attnc::buildFlashAttention(b, target(attr), op, bufs);
  }
  LogicalResult buildProbs(Attribute attr, ImplicitLocOpBuilder &b, ProbsOp op,
                           const AttentionBuffers &bufs) const {
    return attnc::buildProbs(b, target(attr), op, bufs);
  }
  LogicalResult buildCacheAppend(Attribute, ImplicitLocOpBuilder &b, Value k, Value v,
                                 Value kc, Value vc, Value lens, Value positions) const {
    attnc::buildCacheAppend(b, k, v, kc, vc, lens, positions);
    return success();
  }
  LogicalResult buildMaskRows(Attribute, ImplicitLocOpBuilder &b, Value y, Value lens) const {
    attnc::buildMaskRows(b, y, lens);
    return success();
  }
  LogicalResult buildRope(Attribute attr, ImplicitLocOpBuilder &b, RopeOp op, Value x,
                          Value positions) const {
    attnc::buildRope(b, op, x, positions, target(attr).getVectorWidth());
    return success();
  }
  LogicalResult buildTemperature(Attribute, ImplicitLocOpBuilder &b, TemperatureOp op, Value x,
                                 Value positions) const {
    attnc::buildTemperature(b, op, x, positions);
    return success();
  }
  LogicalResult buildRmsNorm(Attribute, ImplicitLocOpBuilder &b, RmsNormOp op, Value x,
                             Value w, Value bias) const {
    attnc::buildRmsNorm(b, op, x, w, bias);
    return success();
  }
  LogicalResult buildClip(Attribute, ImplicitLocOpBuilder &b, ClipOp op, Value x) const {
    attnc::buildClip(b, op, x);
    return success();
  }
};
} // namespace

void attnc::registerCpuKernels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, AttnDialect *) {
    CpuTargetAttr::attachInterface<CpuKernels>(*ctx);
  });
}
