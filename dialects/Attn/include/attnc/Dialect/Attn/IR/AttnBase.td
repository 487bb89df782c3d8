//===- AttnBase.td - attn dialect definition and attributes -*- tablegen -*-===//
//
// The attn dialect: transformer attention blocks at the level a model author
// thinks in (projections, heads, scaled-dot-product attention), plus the
// strided view op that the graph rewrites turn head splits into.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_BASE_TD
#define ATTN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let summary = "Transformer attention blocks: projections, heads, sdpa";
  let description = [{
    Ops on ranked tensors that describe one attention block. The front end
    emits the textbook ("conceptual") form; `attn-fuse-qkv` and
    `attn-heads-as-views` rewrite it into one fused projection and strided
    views; `attn-to-loops` lowers it onto buffers.
  }];
  let cppNamespace = "::attnc::attn";
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 0;
  // attn.input / attn.weight / attn.concat_of on function arguments: checks
  // their values and what attn-to-loops needs of the function (AttnDialect.cpp).
  let hasRegionArgAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

/// The additive mask of attn.sdpa (and attn.probs). Every kind lowers on
/// every target: the kernels take each query block's key range from it
/// (causal diagonal, window, padding lengths) and mask only boundary
/// blocks element by element.
def Attn_MaskKind : I32EnumAttr<"MaskKind", "additive attention mask", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"causal", 1>,
    I32EnumAttrCase<"padding", 2>,
    I32EnumAttrCase<"causal_padding", 3>,
    I32EnumAttrCase<"sliding_window", 4>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnc::attn";
}
def Attn_MaskAttr : EnumAttr<Attn_Dialect, Attn_MaskKind, "mask">;

/// How a causal mask aligns when Tq != Tkv.
def Attn_CausalAlign : I32EnumAttr<"CausalAlign", "causal alignment", [
    I32EnumAttrCase<"bottom_right", 0>,
    I32EnumAttrCase<"top_left", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnc::attn";
}
def Attn_CausalAlignAttr : EnumAttr<Attn_Dialect, Attn_CausalAlign, "align">;

/// Logical layout of attn.sdpa's result: [B, H, T, D] (textbook) or
/// [B, T, H, D] (heads last: merging heads is then a plain reshape).
def Attn_HeadLayout : I32EnumAttr<"HeadLayout", "layout of a per-head tensor", [
    I32EnumAttrCase<"bhtd", 0>,
    I32EnumAttrCase<"bthd", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnc::attn";
}
def Attn_HeadLayoutAttr : EnumAttr<Attn_Dialect, Attn_HeadLayout, "layout">;

//===----------------------------------------------------------------------===//
// Target description
//===----------------------------------------------------------------------===//

def Attn_TargetAttr : AttrDef<Attn_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "What the back half lowers for: ISA, registers, tiles, caches";
  let description = [{
    Resolved once, before lowering (`attnc-set-target`), and attached to
    every function it applies to as `attn.target`; the lowering reads its
    tile sizes from here, so the IR of an AVX2 build differs visibly from an
    AVX-512 one. `isa` is the ABI name (x86-avx512, x86-avx2, x86-64,
    host); `cpu` and `features` go to LLVM for the function.

    GEMM micro-kernel: `gemm_mr` rows x `gemm_nr` columns of accumulators
    (`gemm_nr` a multiple of `vector_width`, at most `panel`), over weights
    packed in panels of `panel` columns; `gemm_kc` rows of a panel per
    cache block; `gemm_mc` rows per task.
    Attention: `attn_mq` queries per task (a multiple of `vector_width`),
    `attn_kr` keys per score micro-kernel, `attn_nk` keys per block of the
    online softmax.

    The verifier asks for a non-empty `isa` and every size >= 1; whether
    the sizes fit together for the ISA's kernels is checked by
    attn-to-loops, which knows the ISA table.
  }];
  let genVerifyDecl = 1;
  let parameters = (ins
    StringRefParameter<>:$isa,
    StringRefParameter<>:$cpu,
    StringRefParameter<>:$features,
    "int64_t":$vector_width,
    "int64_t":$registers,
    "int64_t":$panel,
    "int64_t":$gemm_mr,
    "int64_t":$gemm_nr,
    "int64_t":$gemm_kc,
    "int64_t":$gemm_mc,
    "int64_t":$attn_mq,
    "int64_t":$attn_kr,
    "int64_t":$attn_nk,
    "int64_t":$l1_bytes,
    "int64_t":$l2_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_BASE_TD
