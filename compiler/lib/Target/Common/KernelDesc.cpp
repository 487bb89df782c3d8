//===- KernelDesc.cpp - attn.block, written by the front end, read back ---===//
#include "attnc/Target/KernelDesc.h"
#include "attnc/Dialect/Attn/IR/AttnDialect.h"
#include "attnc/Target/PackPlan.h"
#include "attnc/runtime/Limits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace mlir;
using attnc::attn::AttnDialect;

attnc::KernelDesc attnc::kernelDesc(const Spec &spec) {
  KernelDesc d;
  d.name = spec.name;
  d.block = blockParams(spec);
  d.maxSeqLen = spec.maxSeqLen;
  d.specHash = specHash(spec);
  return d;
}

namespace {

/// Every field of KernelDesc, for one visitor that writes or reads them:
/// field(key, member) with an int64_t, uint32_t, bool, double,
/// std::vector<double> or std::string member.
template <typename Desc, typename Fn> void eachField(Desc &d, Fn &&field) {
  auto &p = d.block;
  field("name", d.name);
  field("max_seq_len", d.maxSeqLen);
  field("d_model", p.dModel);
  field("heads", p.heads);
  field("kv_heads", p.kvHeads);
  field("head_dim", p.headDim);
  field("mask", p.mask);
  field("top_left", p.topLeft);
  field("window", p.window);
  field("bias_mask", p.biasMask);
  field("out_proj", p.outProj);
  field("rope_style", p.rope.style);
  field("rope_rotary_dim", p.rope.rotaryDim);
  field("rope_inv_freq", p.rope.invFreq);
  field("rope_long_inv_freq", p.rope.longInvFreq);
  field("rope_long_from", p.rope.longFrom);
  field("rope_attention_factor", p.rope.attentionFactor);
  field("rope_dynamic_factor", p.rope.dynamicFactor);
  field("rope_dynamic_from", p.rope.dynamicFrom);
  field("softcap", p.softcap);
  field("alibi_slopes", p.alibiSlopes);
  field("alibi_before_scale", p.alibiBeforeScale);
  field("clip_qkv", p.clipQkv);
  field("temperature_floor_scale", p.temperatureFloorScale);
  field("temperature_attn_scale", p.temperatureAttnScale);
  field("qk_norm", p.qkNorm);
  field("qk_norm_eps", p.qkNormEps);
  field("qk_norm_offset", p.qkNormOffset);
  field("sinks", p.sinks);
  field("t5_buckets", p.t5Buckets);
  field("t5_max_distance", p.t5MaxDistance);
  field("t5_bidirectional", p.t5Bidirectional);
  field("rel_key_positions", p.relKeyPositions);
  field("rel_key_query", p.relKeyQuery);
  field("scale", p.scale);
  field("layout", p.layout);
  field("cross", p.cross);
  field("want_probs", p.wantProbs);
  field("dtype", p.dtype);
  field("weight_dtype", p.weightDtype);
  field("kv_cache", p.kvCache);
  field("tp_size", p.tpSize);
  field("tp_rank", p.tpRank);
  field("full_heads", p.fullHeads);
  field("full_kv_heads", p.fullKvHeads);
}

struct Writer {
  Builder b;
  SmallVector<NamedAttribute> out;
  void operator()(const char *k, const std::string &v) { add(k, b.getStringAttr(v)); }
  void operator()(const char *k, int64_t v) { add(k, b.getI64IntegerAttr(v)); }
  void operator()(const char *k, uint32_t v) { add(k, b.getI32IntegerAttr(int32_t(v))); }
  void operator()(const char *k, bool v) { add(k, b.getBoolAttr(v)); }
  void operator()(const char *k, double v) { add(k, b.getF64FloatAttr(v)); }
  void operator()(const char *k, const std::vector<double> &v) {
    add(k, b.getDenseF64ArrayAttr(v));
  }
  void add(const char *k, Attribute a) { out.push_back(b.getNamedAttr(k, a)); }
};

struct Reader {
  DictionaryAttr dict;
  const char *bad = nullptr; ///< the first missing or mistyped key
  template <typename A> A get(const char *k) {
    A a = dict.getAs<A>(k);
    if (!a && !bad)
      bad = k;
    return a;
  }
  void operator()(const char *k, std::string &v) {
    if (auto a = get<StringAttr>(k))
      v = a.getValue().str();
  }
  void operator()(const char *k, int64_t &v) {
    if (auto a = get<IntegerAttr>(k))
      v = a.getInt();
  }
  void operator()(const char *k, uint32_t &v) {
    if (auto a = get<IntegerAttr>(k))
      v = uint32_t(a.getInt());
  }
  void operator()(const char *k, bool &v) {
    if (auto a = get<BoolAttr>(k))
      v = a.getValue();
  }
  void operator()(const char *k, double &v) {
    if (auto a = get<FloatAttr>(k))
      v = a.getValueAsDouble();
  }
  void operator()(const char *k, std::vector<double> &v) {
    if (auto a = get<DenseF64ArrayAttr>(k))
      v.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  }
};

} // namespace

DictionaryAttr attnc::kernelDescAttr(MLIRContext *ctx, const KernelDesc &d) {
  Writer w{Builder(ctx), {}};
  eachField(d, w);
  // The hash as its 64 bits (an i64 attribute holds them all).
  int64_t h;
  std::memcpy(&h, &d.specHash, sizeof h);
  w("spec_hash", h);
  return w.b.getDictionaryAttr(w.out);
}

FailureOr<attnc::KernelDesc> attnc::readKernelDesc(ModuleOp module) {
  auto dict = module->getAttrOfType<DictionaryAttr>(AttnDialect::BlockAttrHelper::getNameStr());
  if (!dict) {
    module.emitError("no attn.block attribute: the block description the "
                     "front end writes");
    return failure();
  }
  KernelDesc d;
  Reader r{dict};
  eachField(d, r);
  int64_t h = 0;
  r("spec_hash", h);
  std::memcpy(&d.specHash, &h, sizeof h);
  if (r.bad) {
    module.emitError("attn.block: no field '") << r.bad << "' of its type";
    return failure();
  }
  // A hand-written or edited attn.block (IR input) is checked as a spec
  // would be, so that a library is never written that the runtime refuses
  // or that the C compiler cannot build.
  const attnrt::BlockParams &p = d.block;
  // No rope: none of its fields; rope: a known style, an even rotary_dim
  // in [2, head_dim] and rotary_dim / 2 frequencies.
  const bool ropeOk =
      p.rope.style == ATTNC_ROPE_NONE
          ? p.rope.rotaryDim == 0 && p.rope.invFreq.empty()
          : (p.rope.style == ATTNC_ROPE_HALF_SPLIT || p.rope.style == ATTNC_ROPE_INTERLEAVED) &&
                p.rope.rotaryDim >= 2 && p.rope.rotaryDim % 2 == 0 &&
                p.rope.rotaryDim <= p.headDim &&
                int64_t(p.rope.invFreq.size()) == p.rope.rotaryDim / 2;
  std::string why;
  // Every number of the block is finite: a NaN or an infinity reached the
  // C entry points as a token the C compiler does not know ('nan').
  auto finite = [](const std::vector<double> &v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  const std::pair<const char *, bool> numbers[] = {
      {"rope_inv_freq", finite(p.rope.invFreq)},
      {"rope_long_inv_freq", finite(p.rope.longInvFreq)},
      {"rope_attention_factor", std::isfinite(p.rope.attentionFactor)},
      {"rope_dynamic_factor", std::isfinite(p.rope.dynamicFactor)},
      {"alibi_slopes", finite(p.alibiSlopes)},
      {"temperature_attn_scale", std::isfinite(p.temperatureAttnScale)},
      {"qk_norm_eps", std::isfinite(p.qkNormEps)},
      {"qk_norm_offset", std::isfinite(p.qkNormOffset)}};
  const char *nonFinite = nullptr;
  for (const auto &[field, ok] : numbers)
    if (!ok && !nonFinite)
      nonFinite = field;
  if (nonFinite)
    why = std::string(nonFinite) + " holds a number that is not finite (NaN or infinity)";
  else if (!isCIdentifier(d.name))
    why = "name '" + d.name + "' is not a C identifier";
  else if (p.mask > ATTNC_MASK_LAST)
    why = "mask " + std::to_string(p.mask) + " is not a mask kind (0.." +
          std::to_string(ATTNC_MASK_LAST) + ")";
  else if (p.dModel <= 0 || p.heads <= 0 || p.kvHeads <= 0 || p.headDim <= 0 ||
           p.heads % p.kvHeads != 0)
    why = "d_model, heads, kv_heads and head_dim must be positive, kv_heads dividing heads";
  else if (!(p.scale >= attnc::limits::kMinScale && p.scale <= attnc::limits::kMaxScale))
    why = "scale must be a number in [FLT_MIN, 1e6], as a spec's (the runtime refuses others)";
  else if (p.window > attnc::limits::kMaxWindow)
    why = "window " + std::to_string(p.window) + " is more than a spec allows (2^24)";
  else if ((attnc_mask_sliding(p.mask) || attnc_mask_chunked(p.mask)) != (p.window > 0) ||
           p.window < 0)
    why = "window " + std::to_string(p.window) +
          " does not go with mask " + std::to_string(p.mask) +
          " (a positive window or chunk with those masks, 0 otherwise)";
  // (and the fields a spec bounds that the loader checks too, runtime/lib/
  // Loader.cpp: out of range, the library would be written and then
  // refused at load, exit 15 in attnc-run)
  else if (d.maxSeqLen < 0 || d.maxSeqLen > attnc::limits::kMaxSeqLen)
    why = "max_seq_len " + std::to_string(d.maxSeqLen) + " is not in [0, 2^24] (0: unbounded)";
  else if (attnrt::dtypeBytes(p.dtype) == 0 || attnrt::dtypeBytes(p.weightDtype) == 0)
    why = "dtype " + std::to_string(p.dtype) + " / weight_dtype " +
          std::to_string(p.weightDtype) + ": an element type is 0 (f32), 1 (bf16) or 2 (f16)";
  else if (p.tpSize < 1 || p.tpSize > attnc::limits::kMaxHeads || p.tpRank < 0 ||
           p.tpRank >= p.tpSize)
    why = "tensor-parallel rank " + std::to_string(p.tpRank) + " of " +
          std::to_string(p.tpSize) + " is out of range";
  else if (!(p.softcap >= 0 && p.softcap <= 1e4))
    why = "softcap must be 0 (none) or in (0, 10000]";
  else if (!(p.clipQkv >= 0 && std::isfinite(p.clipQkv)))
    why = "clip_qkv must be 0 (none) or a positive finite limit";
  else if (!ropeOk)
    why = "rope style " + std::to_string(p.rope.style) + ", rotary_dim " +
          std::to_string(p.rope.rotaryDim) + " and " +
          std::to_string(p.rope.invFreq.size()) +
          " frequencies do not agree (no rope: none of them; rope: an even rotary_dim in "
          "[2, head_dim] and rotary_dim / 2 frequencies)";
  if (!why.empty()) {
    module.emitError("attn.block: ") << why;
    return failure();
  }
  return d;
}
