//===- MLIRGen.cpp - Spec -> conceptual attn IR ---------------------------===//
//
// The front end emits the block exactly as the textbook writes it, with no
// optimization: the graph rewrites (fuse-qkv, heads-as-views) are separate,
// checkable passes. Locations point at the YAML keys (Toy's MLIRGen does the
// same from its AST).
//
//===----------------------------------------------------------------------===//
#include "attnc/FrontEnd/MLIRGen.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <algorithm>

using namespace mlir;
using namespace attnc::attn;

OwningOpRef<ModuleOp> attnc::buildConceptualIR(MLIRContext &ctx,
                                               const Spec &spec) {
  ctx.loadDialect<AttnDialect, func::FuncDialect>();
  auto locOf = [&](const char *key, const char *what) -> Location {
    SrcPos p = spec.posOf(key);
    Location file = FileLineColLoc::get(&ctx, spec.file, p.line, p.col);
    return NameLoc::get(StringAttr::get(&ctx, what), file);
  };
  OpBuilder b(&ctx);
  auto module = ModuleOp::create(locOf("name", "spec"));
  module->setAttr("attn.spec_name", b.getStringAttr(spec.name));

  Type f32 = b.getF32Type();
  int64_t dyn = ShapedType::kDynamic;
  int64_t d = spec.dModel, dh = spec.headDim;
  int64_t qw = spec.qWidth(), kvw = spec.kvWidth();
  auto act = [&](int64_t w) { return RankedTensorType::get({dyn, dyn, w}, f32); };
  auto heads = [&](int64_t h) {
    return RankedTensorType::get({dyn, h, dyn, dh}, f32);
  };

  // Arguments: the run-time inputs (x; x_kv for cross-attention; the
  // valid lengths with a padding mask), then (w, b) per projection.
  bool padding = spec.paddingMask();
  bool cross = spec.crossAttention;
  auto lensType = RankedTensorType::get({dyn}, b.getI32Type());
  SmallVector<Type> argTypes{act(d)};
  SmallVector<std::string> argNames{"x"};
  if (cross) {
    argTypes.push_back(act(d));
    argNames.push_back("x_kv");
  }
  if (padding) {
    argTypes.push_back(lensType);
    argNames.push_back("lengths");
    if (cross) {
      argTypes.push_back(lensType);
      argNames.push_back("kv_lengths");
    }
  }
  const unsigned numInputs = argNames.size();
  auto addWeight = [&](const char *w, const char *bias, int64_t in, int64_t out) {
    argTypes.push_back(RankedTensorType::get({in, out}, f32));
    argNames.push_back(w);
    if (spec.bias) {
      argTypes.push_back(RankedTensorType::get({out}, f32));
      argNames.push_back(bias);
    }
  };
  addWeight("wq", "bq", d, qw);
  addWeight("wk", "bk", d, kvw);
  addWeight("wv", "bv", d, kvw);
  if (spec.outProj)
    addWeight("wo", "bo", qw, d);
  Type resultType = act(spec.outProj ? d : qw);
  bool wantProbs = spec.wantsProbs();
  SmallVector<Type> resultTypes{resultType};
  if (wantProbs)
    resultTypes.push_back(RankedTensorType::get({dyn, spec.heads, dyn, dyn}, f32));

  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, locOf("name", spec.name.c_str()), spec.name,
                                 b.getFunctionType(argTypes, resultTypes));
  for (unsigned i = 0; i < argNames.size(); ++i)
    fn.setArgAttr(i, i < numInputs ? "attn.input" : "attn.weight",
                  b.getStringAttr(argNames[i]));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);

  unsigned next = numInputs;
  auto nextArg = [&]() { return entry->getArgument(next++); };
  auto input = [&](const char *name) -> Value {
    for (unsigned i = 0; i < numInputs; ++i)
      if (argNames[i] == name)
        return entry->getArgument(i);
    return Value();
  };
  Value x = input("x");
  Value xkv = cross ? input("x_kv") : x;
  // With a padding mask, rows past a sequence's length are never used
  // unmasked: the projections may skip them (rows(...)).
  Value qRows = padding ? input("lengths") : Value();
  Value kvRows = padding ? (cross ? input("kv_lengths") : input("lengths")) : Value();
  auto project = [&](Value in, int64_t out, const char *what, Value rows) -> Value {
    Value w = nextArg();
    Value bias = spec.bias ? nextArg() : Value();
    return LinearOp::create(b, locOf("weights", what), act(out), in, w, bias, rows);
  };
  Value q = project(x, qw, "q_proj", qRows);
  Value k = project(xkv, kvw, "k_proj", kvRows);
  Value v = project(xkv, kvw, "v_proj", kvRows);
  Location headsLoc = locOf("heads", "split_heads");
  Value qh = SplitHeadsOp::create(b, headsLoc, heads(spec.heads), q,
                                  b.getI64IntegerAttr(spec.heads));
  Location kvLoc = spec.keyPos.count("kv_heads") ? locOf("kv_heads", "split_heads")
                                                  : headsLoc;
  Value kh = SplitHeadsOp::create(b, kvLoc, heads(spec.kvHeads), k,
                                  b.getI64IntegerAttr(spec.kvHeads));
  Value vh = SplitHeadsOp::create(b, kvLoc, heads(spec.kvHeads), v,
                                  b.getI64IntegerAttr(spec.kvHeads));

  attn::MaskKind mask = attn::MaskKind::none;
  switch (spec.mask) {
  case attnc::MaskKind::None: mask = attn::MaskKind::none; break;
  case attnc::MaskKind::Causal: mask = attn::MaskKind::causal; break;
  case attnc::MaskKind::Padding: mask = attn::MaskKind::padding; break;
  case attnc::MaskKind::CausalPadding: mask = attn::MaskKind::causal_padding; break;
  case attnc::MaskKind::SlidingWindow: mask = attn::MaskKind::sliding_window; break;
  }
  auto sdpa = SdpaOp::create(
      b, locOf("mask", "sdpa"), heads(spec.heads), qh, kh, vh,
      /*kv_lens=*/padding ? (cross ? input("kv_lengths") : input("lengths"))
                          : Value(),
      /*q_lens=*/padding ? input("lengths") : Value(),
      MaskKindAttr::get(&ctx, mask),
      b.getF64FloatAttr(spec.effectiveScale()),
      CausalAlignAttr::get(&ctx, spec.causalAlign == attnc::CausalAlign::TopLeft
                                     ? attn::CausalAlign::top_left
                                     : attn::CausalAlign::bottom_right),
      spec.mask == attnc::MaskKind::SlidingWindow
          ? b.getI64IntegerAttr(spec.window)
          : IntegerAttr(),
      HeadLayoutAttr::get(&ctx, attn::HeadLayout::bhtd));
  SmallVector<Value> results;
  if (wantProbs)
    results.push_back(ProbsOp::create(
        b, locOf("outputs", "probs"), resultTypes[1], qh, kh,
        sdpa.getKvLens(), sdpa.getQLens(), sdpa.getMaskAttr(),
        sdpa.getScaleAttr(), sdpa.getCausalAlignAttr(), sdpa.getWindowAttr()));
  Value merged = MergeHeadsOp::create(b, locOf("heads", "merge_heads"), act(qw),
                                      sdpa.getResult());
  Value y = spec.outProj ? project(merged, d, "o_proj", qRows) : merged;
  if (padding) // padding rows are zeros, not the output bias
    y = MaskRowsOp::create(b, locOf("mask", "mask_rows"), y.getType(), y,
                           input("lengths"));
  results.insert(results.begin(), y);
  func::ReturnOp::create(b, locOf("out_proj", "return"), results);
  return module;
}
