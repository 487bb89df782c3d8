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

/// The additive mask of attn.sdpa. Only none and causal lower today; the
/// others are part of the op's contract so they land without a redesign.
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

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_BASE_TD
