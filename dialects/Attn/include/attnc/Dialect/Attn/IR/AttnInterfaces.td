//===- AttnInterfaces.td - how attn ops are tiled ---------*- tablegen -*-===//
#ifndef ATTN_INTERFACES
#define ATTN_INTERFACES

include "mlir/IR/OpBase.td"

def Attn_TiledOpInterface : OpInterface<"TiledOpInterface"> {
  let cppNamespace = "::attnc::attn";
  let description = [{
    An op that attn-to-loops lowers to phases of independent tasks (tiles),
    shaped by the function's attn.target: attn.linear over packed weights
    (batch x row block x panel group), attn.sdpa (batch x head x query
    block, flash attention over the mask's key range), attn.probs,
    attn.cache_append, attn.mask_rows, attn.rope, attn.rms_norm, attn.clip.
    The models (compiler/lib/Conversion/Common/TiledOps.cpp) are attached
    to the ops as external models, as upstream attaches TilingInterface to
    linalg, and call the target's kernels through TargetKernelsInterface
    (AttnKernelsInterface.td); attn-to-loops only dispatches through this
    interface. The context gives the builder, the target and the buffer
    each tensor value lives in.
  }];
  let methods = [
    InterfaceMethod<
      "Whether this op can be tiled here (attn.linear: packed f32 weights and a rank-3 input); the caller falls back to a one-task phase, or reports an error on targets with no fallback.",
      "bool", "canTile", (ins "::attnc::attn::PhaseContext &":$ctx)>,
    InterfaceMethod<
      "Emits the op as top-level scf.forall phases of independent tasks at the context's insertion point.",
      "::mlir::LogicalResult", "buildTiledPhases", (ins "::attnc::attn::PhaseContext &":$ctx)>,
  ];
}

#endif
