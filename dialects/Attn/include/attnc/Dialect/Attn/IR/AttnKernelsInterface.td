//===- AttnKernelsInterface.td - a target's kernels -------*- tablegen -*-===//
//
// The per-target choice of attn-to-loops: each kind of target attribute
// (#attn.cpu_target, #attn.cuda_target) gets one external model of this
// interface, in its own library (compiler/lib/Conversion/Cpu,
// compiler/lib/Conversion/Cuda), that builds each computing op's phases
// with that target's kernels. The ops' TiledOpInterface models
// (compiler/lib/Conversion/Common/TiledOps.cpp) take the buffers from the
// PhaseContext once and call the function's target through it, so no
// model branches on the target.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_KERNELS_INTERFACE_TD
#define ATTN_KERNELS_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Attn_TargetKernelsAttrInterface : AttrInterface<"TargetKernelsInterface"> {
  let cppNamespace = "::attnc::attn";
  let description = [{
    A target's kernels: how each computing attn op becomes phases of
    independent tasks on this kind of target. Buffers are memrefs (null for
    an absent optional operand); each method emits at `b`'s insertion
    point. Adding an op is one method here and one in each target's model;
    adding a kind of target is one model.
  }];
  let methods = [
    InterfaceMethod<"Whether the code runs on a device whose memory the host cannot touch: every op needs a kernel there (attn-to-loops has no one-task host loops for it), copies included.",
      "bool", "isDevice">,
    InterfaceMethod<"On a device target: a [B, T, N] buffer copied into another of the same shape, as one phase (a result into y). Host targets fail: attn-to-loops copies host memory with its own loops.",
      "::mlir::LogicalResult", "buildDeviceCopy",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::mlir::Value":$src, "::mlir::Value":$dst)>,
    InterfaceMethod<"attn.linear: y = x · W (+ bias) over packed weights of n columns; rowLens: rows to compute per sequence (or null); xStaged: the workspace buffer linearStagesInput asked for (or null).",
      "::mlir::LogicalResult", "buildLinear",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::mlir::Value":$x, "::mlir::Value":$wp,
           "::mlir::Value":$bias, "::mlir::Value":$y, "int64_t":$n, "::mlir::Value":$rowLens,
           "::mlir::Value":$xStaged)>,
    InterfaceMethod<"attn.linear's staged input: whether the target's kernel wants a bf16 copy of x ([B, T, K], x's shape) in the workspace, written once per call by a phase of its own before the GEMM (buildLinear's xStaged). As for sdpaStagedWidth, the answer must not depend on the code path's features: a path that does not read the copy runs that phase with no tasks.",
      "bool", "linearStagesInput",
      (ins "::mlir::Value":$x, "::mlir::Value":$wp)>,
    InterfaceMethod<"attn.sdpa into bufs.o (AttentionBuffers: every operand's buffer).",
      "::mlir::LogicalResult", "buildSdpa",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::attnc::attn::SdpaOp":$op,
           "const ::attnc::attn::AttentionBuffers &":$bufs)>,
    InterfaceMethod<"attn.sdpa's staged keys and values: the row width W (bf16 elements) of the copies of K and V the target's kernel wants in the workspace, written once per call by a phase of its own (bufs.kStaged [B, Hkv, Tkv, W], bufs.vStaged [B, Hkv, (Tkv + 1) / 2, 2 * W]: pairs of key rows interleaved), or 0 for none. The answer must not depend on the code path's features: every path of one kind of target shares the library's workspace bound and its phase count (a path that does not use the copies runs that phase with no tasks).",
      "int64_t", "sdpaStagedWidth",
      (ins "::attnc::attn::SdpaOp":$op, "::mlir::Value":$q, "::mlir::Value":$k)>,
    InterfaceMethod<"attn.probs into bufs.o (AttentionBuffers; no v).",
      "::mlir::LogicalResult", "buildProbs",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::attnc::attn::ProbsOp":$op,
           "const ::attnc::attn::AttentionBuffers &":$bufs)>,
    InterfaceMethod<"attn.cache_append: k, v into the caches kc, vc.",
      "::mlir::LogicalResult", "buildCacheAppend",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::mlir::Value":$k, "::mlir::Value":$v,
           "::mlir::Value":$kc, "::mlir::Value":$vc, "::mlir::Value":$lens,
           "::mlir::Value":$positions)>,
    InterfaceMethod<"attn.mask_rows: rows t >= lens[b] of y become zeros.",
      "::mlir::LogicalResult", "buildMaskRows",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::mlir::Value":$y, "::mlir::Value":$lens)>,
    InterfaceMethod<"attn.rope in place on x.",
      "::mlir::LogicalResult", "buildRope",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::attnc::attn::RopeOp":$op,
           "::mlir::Value":$x, "::mlir::Value":$positions)>,
    InterfaceMethod<"attn.temperature in place on x.",
      "::mlir::LogicalResult", "buildTemperature",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::attnc::attn::TemperatureOp":$op,
           "::mlir::Value":$x, "::mlir::Value":$positions)>,
    InterfaceMethod<"attn.rms_norm in place on x with weight w and bias (null: none).",
      "::mlir::LogicalResult", "buildRmsNorm",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::attnc::attn::RmsNormOp":$op,
           "::mlir::Value":$x, "::mlir::Value":$w, "::mlir::Value":$bias)>,
    InterfaceMethod<"attn.clip in place on x.",
      "::mlir::LogicalResult", "buildClip",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::attnc::attn::ClipOp":$op,
           "::mlir::Value":$x)>,
  ];
}

#endif // ATTN_KERNELS_INTERFACE_TD
