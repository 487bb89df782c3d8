//===- CudaKernels.cpp - the CUDA target's kernels -------------------------===//
//
// The TargetKernelsInterface model of #attn.cuda_target: each computing op
// as the CUDA kernels build it (GpuKernels.cpp): phases of CUDA blocks with
// thread regions, which attnc-map-to-gpu turns into gpu.func kernels.
//
//===----------------------------------------------------------------------===//
#include "CudaBuilders.h"
#include "attnc/Conversion/Passes.h"
#include "attnc/Dialect/Attn/IR/AttnKernelsInterface.h"

using namespace mlir;
using namespace attnc::attn;

namespace {
struct CudaKernels
    : TargetKernelsInterface::ExternalModel<CudaKernels, CudaTargetAttr> {
  static CudaTargetAttr target(Attribute attr) { return cast<CudaTargetAttr>(attr); }

  bool isDevice(Attribute) const { return true; }
  LogicalResult buildDeviceCopy(Attribute attr, ImplicitLocOpBuilder &b, Value src,
                                Value dst) const {
    return attnc::buildGpuCopy(b, target(attr), src, dst);
  }
  LogicalResult buildLinear(Attribute attr, ImplicitLocOpBuilder &b, Value x, Value wp,
                            Value bias, Value y, int64_t n, Value rowLens,
                            Value) const {
    // Every row is computed (rows past a sequence's length are masked
    // later; the GEMM does not skip them).
    attnc::buildGpuGemm(b, target(attr), x, wp, bias, y, n);
    return success();
  }
  bool linearStagesInput(Attribute, Value, Value) const { return false; }
  int64_t sdpaStagedWidth(Attribute, SdpaOp, Value, Value) const { return 0; }
  LogicalResult buildSdpa(Attribute attr, ImplicitLocOpBuilder &b, SdpaOp op,
                          const AttentionBuffers &bufs) const {
    return attnc::buildGpuAttention(b, target(attr), op, bufs);
  }
  LogicalResult buildProbs(Attribute attr, ImplicitLocOpBuilder &b, ProbsOp op,
                           const AttentionBuffers &bufs) const {
    return attnc::buildGpuProbs(b, target(attr), op, bufs);
  }
  LogicalResult buildCacheAppend(Attribute attr, ImplicitLocOpBuilder &b, Value k, Value v,
                                 Value kc, Value vc, Value lens, Value positions) const {
    attnc::buildGpuCacheAppend(b, target(attr), k, v, kc, vc, lens, positions);
    return success();
  }
  LogicalResult buildMaskRows(Attribute attr, ImplicitLocOpBuilder &b, Value y,
                              Value lens) const {
    return attnc::buildGpuMaskRows(b, target(attr), y, lens);
  }
  LogicalResult buildRope(Attribute attr, ImplicitLocOpBuilder &b, RopeOp op, Value x,
                          Value positions) const {
    attnc::buildGpuRope(b, target(attr), op, x, positions);
    return success();
  }
  LogicalResult buildTemperature(Attribute attr, ImplicitLocOpBuilder &b, TemperatureOp op,
                                 Value x, Value positions) const {
    attnc::buildGpuTemperature(b, target(attr), op, x, positions);
    return success();
  }
  LogicalResult buildRmsNorm(Attribute attr, ImplicitLocOpBuilder &b, RmsNormOp op, Value x,
                             Value w, Value bias) const {
    attnc::buildGpuRmsNorm(b, target(attr), op, x, w, bias);
    return success();
  }
  LogicalResult buildClip(Attribute attr, ImplicitLocOpBuilder &b, ClipOp op,
                          Value x) const {
    attnc::buildGpuClip(b, target(attr), op, x);
    return success();
  }
};
} // namespace

void attnc::registerCudaKernels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, AttnDialect *) {
    CudaTargetAttr::attachInterface<CudaKernels>(*ctx);
  });
}
