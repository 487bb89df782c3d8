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
#include "attnc/Target/KernelDesc.h"
#include "attnc/Target/PackPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <algorithm>

using namespace mlir;
using namespace attnc::attn;
using attnc::attn::AttnDialect;

OwningOpRef<ModuleOp> attnc::buildConceptualIR(MLIRContext &ctx,
                                               const Spec &spec) {
  ctx.loadDialect<AttnDialect, func::FuncDialect, arith::ArithDialect>();
  auto locOf = [&](const char *key, const char *what) -> Location {
    SrcPos p = spec.posOf(key);
    Location file = FileLineColLoc::get(&ctx, spec.file, p.line, p.col);
    return NameLoc::get(StringAttr::get(&ctx, what), file);
  };
  OpBuilder b(&ctx);
  auto module = ModuleOp::create(locOf("name", "spec"));
  module->setAttr(AttnDialect::SpecNameAttrHelper::getNameStr(), b.getStringAttr(spec.name));
  // The block as the back end reads it (Target/KernelDesc.h), computed
  // once (its RoPE tables too), and how the user stores the weights (read
  // by attnc-pack-weights), from the same block.
  const KernelDesc desc = kernelDesc(spec);
  module->setAttr(AttnDialect::WeightStorageAttrHelper::getNameStr(),
                  weightStorageAttr(&ctx, desc.block));
  module->setAttr(AttnDialect::BlockAttrHelper::getNameStr(), kernelDescAttr(&ctx, desc));

  Type f32 = b.getF32Type();
  // Element types: the inputs and the KV cache in the spec's dtype, the
  // storage weights in its weight_dtype; everything computed (projections,
  // attention, y and probs) in float32 (the kernel glue rounds y and probs
  // to the dtype on the way out).
  auto elementType = [&](attnc::DType t) -> Type {
    return t == attnc::DType::BF16 ? Type(b.getBF16Type())
           : t == attnc::DType::F16 ? Type(b.getF16Type())
                                    : f32;
  };
  Type actT = elementType(spec.dtype), wT = elementType(spec.weightDtype);
  const attnc::RopeTables rope_ = attnc::ropeTables(spec);
  int64_t dyn = ShapedType::kDynamic;
  int64_t d = spec.dModel, dh = spec.headDim;
  int64_t qw = spec.qWidth(), kvw = spec.kvWidth();
  auto act = [&](int64_t w) { return RankedTensorType::get({dyn, dyn, w}, actT); };
  auto cacheType = RankedTensorType::get({dyn, spec.kvHeads, dyn, dh}, actT);
  auto lensType = RankedTensorType::get({dyn}, b.getI32Type());

  // Builds @NAME (forward; with decode: true it also fills the caller's KV
  // cache) or, for `decodeEntry`, @NAME_decode: seq_len new tokens per
  // sequence (one for a step of generation, more for a chunk of a chunked
  // prefill), their K/V appended to the cache at `positions`, attention
  // over the cache's filled rows (Q is never cached).
  auto buildFunction = [&](bool decodeEntry) {
    // Arguments: the run-time inputs (x; x_kv for cross-attention; the
    // valid lengths with a padding mask; the caches), then (w, b) per
    // projection.
    bool padding = spec.paddingMask() && !decodeEntry;
    bool cross = spec.crossAttention;
    bool cache = spec.decode;
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
    // Each sequence's first position: where decode appends to the cache,
    // and what a rotary embedding rotates by (forward takes it for RoPE).
    if (decodeEntry || spec.hasRope() || spec.temperature) {
      argTypes.push_back(lensType);
      argNames.push_back("positions");
    }
    if (cache) {
      argTypes.append({cacheType, cacheType});
      argNames.append({"k_cache", "v_cache"});
    }
    const unsigned numInputs = argNames.size();
    auto addWeight = [&](const char *w, const char *bias, int64_t in, int64_t out) {
      argTypes.push_back(RankedTensorType::get({in, out}, wT));
      argNames.push_back(w);
      if (spec.kernelHasBias(w[1])) {
        argTypes.push_back(RankedTensorType::get({out}, wT));
        argNames.push_back(bias);
      }
    };
    addWeight("wq", "bq", d, qw);
    addWeight("wk", "bk", d, kvw);
    addWeight("wv", "bv", d, kvw);
    if (spec.outProj)
      addWeight("wo", "bo", qw, d);
    // QK-norm weights (and biases): [head_dim], or the whole projection's
    // width (across it, or one weight per head).
    const bool normAll = spec.qkNorm == attnc::Spec::QkNorm::Projection;
    const bool normWide = normAll || spec.qkNormPerHead;
    if (spec.qkNorm != attnc::Spec::QkNorm::None && !spec.qkNormNoWeight) {
      argTypes.push_back(RankedTensorType::get({normWide ? qw : dh}, wT));
      argNames.push_back("nq");
      argTypes.push_back(RankedTensorType::get({normWide ? kvw : dh}, wT));
      argNames.push_back("nk");
      if (spec.qkNormBias) {
        argTypes.push_back(RankedTensorType::get({normWide ? qw : dh}, wT));
        argNames.push_back("nbq");
        argTypes.push_back(RankedTensorType::get({normWide ? kvw : dh}, wT));
        argNames.push_back("nbk");
      }
    }
    if (spec.sinks) { // one logit per query head
      argTypes.push_back(RankedTensorType::get({spec.heads}, wT));
      argNames.push_back("ss");
    }
    if (spec.t5Buckets) { // T5's table [buckets, heads]
      argTypes.push_back(RankedTensorType::get({spec.t5Buckets, spec.heads}, wT));
      argNames.push_back("rb");
    }
    if (spec.relKeyPositions) { // BERT's distance embedding, transposed: [head_dim, 2P - 1]
      argTypes.push_back(RankedTensorType::get({dh, 2 * spec.relKeyPositions - 1}, wT));
      argNames.push_back("re");
    }
    Type xType = argTypes[0];
    auto rowsOf = [&](int64_t w) -> Type {
      auto t = cast<RankedTensorType>(xType);
      return RankedTensorType::get({t.getDimSize(0), t.getDimSize(1), w}, f32);
    };
    auto headsOf = [&](int64_t h) -> Type {
      return RankedTensorType::get(
          {dyn, h, cast<RankedTensorType>(xType).getDimSize(1), dh}, f32);
    };
    // y in the dtype (rounded from the float32 result by an arith.truncf),
    // probs in the dtype (written rounded by the probs kernel).
    auto yType = cast<RankedTensorType>(rowsOf(spec.outProj ? d : qw));
    Type resultType = yType.clone(actT);
    bool wantProbs = spec.wantsProbs() && !decodeEntry;
    SmallVector<Type> resultTypes{resultType};
    if (wantProbs)
      resultTypes.push_back(RankedTensorType::get({dyn, spec.heads, dyn, dyn}, actT));
    if (cache) // the caches, updated (tied to the cache arguments)
      resultTypes.append({cacheType, cacheType});

    std::string fnName = decodeEntry ? spec.name + "_decode" : spec.name;
    b.setInsertionPointToEnd(module.getBody());
    auto fn = func::FuncOp::create(b, locOf(decodeEntry ? "decode" : "name",
                                            fnName.c_str()),
                                   fnName, b.getFunctionType(argTypes, resultTypes));
    if (decodeEntry)
      fn->setAttr(AttnDialect::EntryAttrHelper::getNameStr(), b.getStringAttr("decode"));
    for (unsigned i = 0; i < argNames.size(); ++i)
      fn.setArgAttr(i, i < numInputs ? AttnDialect::InputAttrHelper::getNameStr() : AttnDialect::WeightAttrHelper::getNameStr(),
                    b.getStringAttr(argNames[i]));
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);

    // The weight argument of role `name`, or null.
    auto weightArg = [&](const char *name) -> Value {
      auto it = llvm::find(argNames, std::string(name));
      return it == argNames.end() ? Value()
                                  : Value(entry->getArgument(unsigned(it - argNames.begin())));
    };
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
      Value bias = spec.kernelHasBias(what[0]) ? nextArg() : Value();
      return LinearOp::create(b, locOf("weights", what), rowsOf(out), in, w, bias, rows);
    };
    Value q = project(x, qw, "q_proj", qRows);
    Value k = project(xkv, kvw, "k_proj", kvRows);
    Value v = project(xkv, kvw, "v_proj", kvRows);
    Location headsLoc = locOf("heads", "split_heads");
    Value qh = SplitHeadsOp::create(b, headsLoc, headsOf(spec.heads), q,
                                    b.getI64IntegerAttr(spec.heads));
    Location kvLoc = spec.keyPos.count("kv_heads") ? locOf("kv_heads", "split_heads")
                                                    : headsLoc;
    Value kh = SplitHeadsOp::create(b, kvLoc, headsOf(spec.kvHeads), k,
                                    b.getI64IntegerAttr(spec.kvHeads));
    Value vh = SplitHeadsOp::create(b, kvLoc, headsOf(spec.kvHeads), v,
                                    b.getI64IntegerAttr(spec.kvHeads));
    // clip_qkv: the projections (bias included) clamped, before anything
    // else reads them; with a QK-norm after it (OLMoE's order).
    auto clipQkv = [&] {
      if (!spec.clipQkv)
        return;
      Location clipLoc = locOf("clip_qkv", "clip_qkv");
      auto clip = [&](Value t) -> Value {
        return ClipOp::create(b, clipLoc, t.getType(), t, b.getF64FloatAttr(*spec.clipQkv));
      };
      qh = clip(qh);
      kh = clip(kh);
      vh = clip(vh);
    };
    if (spec.qkNorm == attnc::Spec::QkNorm::None)
      clipQkv();
    // QK-norm, before the rotary embedding: its weights (and biases) are
    // the arguments nq, nk (nbq, nbk).
    if (spec.qkNorm != attnc::Spec::QkNorm::None) {
      Location normLoc = locOf("qk_norm", "qk_norm");
      auto arg = [&](const char *name) -> Value {
        auto it = llvm::find(argNames, std::string(name));
        return it == argNames.end() ? Value()
                                    : Value(entry->getArgument(unsigned(it - argNames.begin())));
      };
      auto norm = [&](Value t, const char *w, const char *bias) -> Value {
        return RmsNormOp::create(b, normLoc, t.getType(), t, arg(w), arg(bias),
                                 b.getF64FloatAttr(spec.qkNormEps),
                                 b.getF64FloatAttr(spec.qkNormOffset),
                                 b.getBoolAttr(normAll), b.getBoolAttr(spec.qkNormLayer),
                                 b.getBoolAttr(spec.qkNormPerHead));
      };
      qh = norm(qh, "nq", "nbq");
      kh = norm(kh, "nk", "nbk");
      clipQkv();
    }
    // Rotary embedding of Q and K (before the cache: cached keys stay
    // rotated). Decode rotates the new token at its cache position.
    if (spec.hasRope()) {
      Location ropeLoc = locOf("rope", "rope");
      Value pos = input("positions");
      auto rope = [&](Value t) -> Value {
        return RopeOp::create(
            b, ropeLoc, t.getType(), t, pos, b.getI64IntegerAttr(spec.rope.rotaryDim),
            b.getBoolAttr(spec.rope.style == attnc::RopeStyle::Interleaved),
            b.getDenseF64ArrayAttr(rope_.invFreq),
            rope_.longInvFreq.empty() ? DenseF64ArrayAttr()
                                      : b.getDenseF64ArrayAttr(rope_.longInvFreq),
            b.getI64IntegerAttr(rope_.longFrom),
            b.getF64FloatAttr(rope_.attentionFactor),
            b.getF64FloatAttr(rope_.dynamicFactor), b.getI64IntegerAttr(rope_.dynamicFrom));
      };
      qh = rope(qh);
      kh = rope(kh);
    }
    // Llama 4's temperature tuning: the queries scaled by their positions,
    // after QK-norm and RoPE (its layers have neither).
    if (spec.temperature)
      qh = TemperatureOp::create(b, locOf("temperature_tuning", "temperature_tuning"),
                                 qh.getType(), qh, input("positions"),
                                 b.getI64IntegerAttr(spec.temperature->floorScale),
                                 b.getF64FloatAttr(spec.temperature->attnScale));
    SmallVector<Value> cacheResults;
    Value cacheLens;
    if (cache) {
      auto app = CacheAppendOp::create(
          b, locOf("decode", "kv_cache"), cacheType, cacheType, lensType, kh, vh,
          input("k_cache"), input("v_cache"),
          decodeEntry ? input("positions") : Value());
      cacheResults = {app.getNewKeyCache(), app.getNewValueCache()};
      cacheLens = app.getLens();
    }

    attn::MaskKind mask = attn::MaskKind::none;
    switch (spec.mask) {
    case attnc::MaskKind::None: mask = attn::MaskKind::none; break;
    case attnc::MaskKind::Causal: mask = attn::MaskKind::causal; break;
    case attnc::MaskKind::Padding: mask = attn::MaskKind::padding; break;
    case attnc::MaskKind::CausalPadding: mask = attn::MaskKind::causal_padding; break;
    case attnc::MaskKind::SlidingWindow: mask = attn::MaskKind::sliding_window; break;
    case attnc::MaskKind::Chunked: mask = attn::MaskKind::chunked; break;
    case attnc::MaskKind::SlidingWindowPadding:
      mask = attn::MaskKind::sliding_window_padding;
      break;
    case attnc::MaskKind::ChunkedPadding: mask = attn::MaskKind::chunked_padding; break;
    case attnc::MaskKind::BidirectionalWindow: mask = attn::MaskKind::bidirectional_window; break;
    case attnc::MaskKind::BidirectionalWindowPadding:
      mask = attn::MaskKind::bidirectional_window_padding;
      break;
    }
    // A decode step attends over the cache's filled rows: the new token is
    // the last of them (bottom-right alignment), padding is the positions.
    if (decodeEntry)
      mask = attn::maskWithoutLengths(mask);
    Value keys = decodeEntry ? cacheResults[0] : kh;
    Value values = decodeEntry ? cacheResults[1] : vh;
    Value kvLens = decodeEntry ? cacheLens
                   : padding   ? (cross ? input("kv_lengths") : input("lengths"))
                               : Value();
    auto align = spec.causalAlign == attnc::CausalAlign::TopLeft && !decodeEntry
                     ? attn::CausalAlign::top_left
                     : attn::CausalAlign::bottom_right;
    auto sdpa = SdpaOp::create(
        b, locOf("mask", "sdpa"), headsOf(spec.heads), qh, keys, values, kvLens,
        /*q_lens=*/padding ? input("lengths") : Value(),
        /*sinks=*/weightArg("ss"), /*rel_bias=*/weightArg("rb"), /*rel_emb=*/weightArg("re"),
        MaskKindAttr::get(&ctx, mask), b.getF64FloatAttr(spec.effectiveScale()),
        CausalAlignAttr::get(&ctx, align),
        spec.slidingMask() || spec.chunkedMask()
            ? b.getI64IntegerAttr(spec.window)
            : IntegerAttr(),
        HeadLayoutAttr::get(&ctx, attn::HeadLayout::bhtd),
        spec.softcap ? b.getF64FloatAttr(*spec.softcap) : FloatAttr(),
        spec.alibi ? b.getDenseF64ArrayAttr(attnc::alibiSlopes(spec)) : DenseF64ArrayAttr(),
        b.getBoolAttr(spec.alibiBeforeScale),
        spec.t5Buckets ? b.getDenseI32ArrayAttr(attnc::t5BucketTable(
                             spec.t5Buckets, spec.t5MaxDistance, spec.t5Bidirectional))
                       : DenseI32ArrayAttr(),
        b.getBoolAttr(spec.relKeyQuery),
        // bf16 activations: the dot products may be bf16 too (the
        // AVX512-BF16 kernel's vdpbf16ps; docs/design.md "5a"), except with
        // relative_key, whose distance terms the f32 dot products carry.
        spec.dtype == attnc::DType::BF16 && !spec.relKeyPositions
            ? TypeAttr::get(b.getBF16Type())
            : TypeAttr());
    SmallVector<Value> results;
    if (wantProbs)
      results.push_back(ProbsOp::create(
          b, locOf("outputs", "probs"), resultTypes[1], qh, kh,
          sdpa.getKvLens(), sdpa.getQLens(), sdpa.getSinks(), sdpa.getRelBias(),
          sdpa.getRelEmb(), sdpa.getMaskAttr(),
          sdpa.getScaleAttr(), sdpa.getCausalAlignAttr(), sdpa.getWindowAttr(),
          sdpa.getSoftcapAttr(), sdpa.getAlibiSlopesAttr(),
          sdpa.getAlibiBeforeScaleAttr(), sdpa.getRelBucketsAttr(),
          sdpa.getRelKeyQueryAttr()));
    Value merged = MergeHeadsOp::create(b, locOf("heads", "merge_heads"), rowsOf(qw),
                                        sdpa.getResult());
    Value y = spec.outProj ? project(merged, d, "o_proj", qRows) : merged;
    if (padding) // padding rows are zeros, not the output bias
      y = MaskRowsOp::create(b, locOf("mask", "mask_rows"), y.getType(), y,
                             input("lengths"));
    if (actT != f32)
      y = arith::TruncFOp::create(b, locOf("dtype", "dtype"), resultType, y);
    results.insert(results.begin(), y);
    results.append(cacheResults.begin(), cacheResults.end());
    func::ReturnOp::create(b, locOf("out_proj", "return"), results);
  };
  buildFunction(/*decodeEntry=*/false);
  if (spec.decode)
    buildFunction(/*decodeEntry=*/true);
  return module;
}
