//===- Spec.cpp - Spec helpers: names, hashing, printing -------*- C++ -*-===//
//
// The parts of the Spec API that do not parse YAML: enum spellings, the
// effective scale, key positions, the stable hash, the canonical dump and
// the "not supported by this version" check.
//
//===----------------------------------------------------------------------===//

#include "attnc/Spec/Spec.h"
#include "attnc/runtime/T5Bucket.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>

namespace attnc {

bool isCIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_') ||
        static_cast<unsigned char>(c) >= 0x80)
      return false;
  return true;
}

const char *toString(MaskKind m) {
  switch (m) {
  case MaskKind::None:
    return "none";
  case MaskKind::Causal:
    return "causal";
  case MaskKind::Padding:
    return "padding";
  case MaskKind::CausalPadding:
    return "causal+padding";
  case MaskKind::SlidingWindow:
    return "sliding_window";
  case MaskKind::Chunked:
    return "chunked";
  case MaskKind::SlidingWindowPadding:
    return "sliding_window+padding";
  case MaskKind::ChunkedPadding:
    return "chunked+padding";
  case MaskKind::BidirectionalWindow:
    return "bidirectional_window";
  case MaskKind::BidirectionalWindowPadding:
    return "bidirectional_window+padding";
  }
  return "?";
}

std::optional<MaskKind> maskKindNamed(const std::string &name) {
  for (int k = 0; k <= int(kLastMaskKind); ++k)
    if (name == toString(MaskKind(k)))
      return MaskKind(k);
  return std::nullopt;
}

bool maskHasLengths(MaskKind m) {
  return m == MaskKind::Padding || m == MaskKind::CausalPadding ||
         m == MaskKind::SlidingWindowPadding || m == MaskKind::ChunkedPadding ||
         m == MaskKind::BidirectionalWindowPadding;
}

bool maskIsSliding(MaskKind m) {
  return m == MaskKind::SlidingWindow || m == MaskKind::SlidingWindowPadding ||
         maskIsBidirectional(m);
}

bool maskIsBidirectional(MaskKind m) {
  return m == MaskKind::BidirectionalWindow || m == MaskKind::BidirectionalWindowPadding;
}

bool maskIsChunked(MaskKind m) {
  return m == MaskKind::Chunked || m == MaskKind::ChunkedPadding;
}

bool maskIsCausal(MaskKind m) {
  return m != MaskKind::None && m != MaskKind::Padding && !maskIsBidirectional(m);
}

MaskKind maskWithLengths(MaskKind m) {
  switch (m) {
  case MaskKind::None:
    return MaskKind::Padding;
  case MaskKind::Causal:
    return MaskKind::CausalPadding;
  case MaskKind::SlidingWindow:
    return MaskKind::SlidingWindowPadding;
  case MaskKind::Chunked:
    return MaskKind::ChunkedPadding;
  case MaskKind::BidirectionalWindow:
    return MaskKind::BidirectionalWindowPadding;
  default:
    return m;
  }
}

const char *toString(WeightLayout w) {
  switch (w) {
  case WeightLayout::Gpt2Conv1D:
    return "gpt2_conv1d";
  case WeightLayout::TorchInProj:
    return "torch_in_proj";
  case WeightLayout::Separate:
    return "separate";
  }
  return "?";
}

const char *toString(DType d) {
  switch (d) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  }
  return "?";
}

const char *toString(CausalAlign a) {
  switch (a) {
  case CausalAlign::BottomRight:
    return "bottom_right";
  case CausalAlign::TopLeft:
    return "top_left";
  }
  return "?";
}

const char *toString(RopeStyle r) {
  switch (r) {
  case RopeStyle::None:
    return "none";
  case RopeStyle::HalfSplit:
    return "half_split";
  case RopeStyle::Interleaved:
    return "interleaved";
  }
  return "?";
}

double Spec::effectiveScale() const {
  if (scale)
    return *scale;
  return headDim > 0 ? 1.0 / std::sqrt(static_cast<double>(headDim)) : 0.0;
}

SrcPos Spec::posOf(const std::string &key) const {
  auto it = keyPos.find(key);
  return it == keyPos.end() ? SrcPos{} : it->second;
}

SrcPos Spec::valuePosOf(const std::string &key) const {
  auto it = valuePos.find(key);
  return it == valuePos.end() ? SrcPos{} : it->second;
}

namespace {

/// "true" (every projection), "false" (none) or the list "q,k,v,o" in that
/// order.
std::string biasString(unsigned mask) {
  if (mask == kAllBiases)
    return "true";
  if (mask == 0)
    return "false";
  std::string out;
  for (auto [bit, name] : {std::pair{BiasQ, "q"}, std::pair{BiasK, "k"},
                           std::pair{BiasV, "v"}, std::pair{BiasO, "o"}})
    if (mask & bit)
      out += (out.empty() ? "" : ",") + std::string(name);
  return out;
}

/// The canonical string hashed by specHash. Versioned so that a change of
/// the encoding is a deliberate change of every hash. Defaults are resolved,
/// so an omitted key and the same key spelled with its default value hash
/// equal. Doubles are printed exactly (hex float).
std::string canonicalString(const Spec &s) {
  std::string out = "attnc-spec-v1\n";
  out += fmt::format("name={}\n", s.name);
  out += fmt::format("d_model={}\nheads={}\nkv_heads={}\nhead_dim={}\n",
                     s.dModel, s.fullHeads ? s.fullHeads : s.heads,
                     s.fullKvHeads ? s.fullKvHeads : s.kvHeads, s.headDim);
  if (s.tpSize > 1)
    out += fmt::format("tensor_parallel={}/{}\n", s.tpRank, s.tpSize);
  out += fmt::format("mask={}\ncausal_align={}\nwindow={}\n", toString(s.mask),
                     toString(s.causalAlign), s.window);
  out += fmt::format("bias={}\nout_proj={}\n", biasString(s.biasMask),
                     s.outProj);
  if (s.scale)
    out += fmt::format("scale={:a}\n", *s.scale);
  else
    out += "scale=auto\n";
  out += fmt::format("weights={}\nmax_seq_len={}\ndtype={}\n",
                     toString(s.weights), s.maxSeqLen, toString(s.dtype));
  if (s.weightDtype != s.dtype)
    out += fmt::format("weight_dtype={}\n", toString(s.weightDtype));
  out += "outputs=";
  for (const std::string &o : s.outputs)
    out += o + ",";
  out += fmt::format("\ndecode={}\ncross_attention={}\n", s.decode,
                     s.crossAttention);
  // Keys added later hash only when present, so older specs keep their hash.
  if (s.alibi)
    out += fmt::format("alibi bias_max={:a} before_scale={}\n", s.alibiBiasMax,
                       s.alibiBeforeScale);
  if (s.softcap)
    out += fmt::format("softcap={:a}\n", *s.softcap);
  if (s.clipQkv)
    out += fmt::format("clip_qkv={:a}\n", *s.clipQkv);
  if (s.sinks)
    out += "sinks=true\n";
  if (s.t5Buckets)
    out += fmt::format("t5_bias={} {} {}\n", s.t5Buckets, s.t5MaxDistance,
                       s.t5Bidirectional);
  if (s.relKeyPositions)
    out += fmt::format("relative_key={} {}\n", s.relKeyPositions, s.relKeyQuery);
  if (s.qkNorm != Spec::QkNorm::None)
    out += fmt::format("qk_norm={} eps={:a} offset={:a}{}{}{}\n",
                       s.qkNorm == Spec::QkNorm::Head ? "head" : "projection",
                       s.qkNormEps, s.qkNormOffset, s.qkNormLayer ? " layer" : "",
                       s.qkNormPerHead ? " per_head" : "", s.qkNormBias ? " bias" : "");
  if (s.qkNormNoWeight)
    out += "qk_norm_weight=none\n";
  if (s.temperature)
    out += fmt::format("temperature={} {:a}\n", s.temperature->floorScale,
                       s.temperature->attnScale);
  if (s.hasRope()) {
    const RopeSpec &r = s.rope;
    out += fmt::format("rope={} theta={:a} rotary_dim={} scaling={} "
                       "factor={:a} low={:a} high={:a} beta_fast={:a} "
                       "beta_slow={:a} truncate={} orig={} max_pos={}",
                       toString(r.style), r.theta, r.rotaryDim, r.scaling,
                       r.factor, r.lowFreqFactor, r.highFreqFactor, r.betaFast,
                       r.betaSlow, r.truncate, r.originalMaxPos, r.maxPos);
    for (const std::optional<double> &o :
         {r.attentionFactor, r.mscale, r.mscaleAllDim})
      out += o ? fmt::format(" {:a}", *o) : std::string(" -");
    out += " short=";
    for (double f : r.shortFactor)
      out += fmt::format("{:a},", f);
    out += " long=";
    for (double f : r.longFactor)
      out += fmt::format("{:a},", f);
    out += "\n";
  }
  return out;
}

std::string located(const Spec &s, SrcPos p, const std::string &msg) {
  return fmt::format("{}:{}:{}: error: {}", s.file, p.line, p.col, msg);
}

} // namespace

uint64_t specHash(const Spec &spec) {
  uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a 64 offset basis
  try {
    for (unsigned char c : canonicalString(spec)) {
      h ^= c;
      h *= 0x100000001b3ULL; // FNV-1a 64 prime
    }
  } catch (const std::exception &) {
    // Only allocation can fail; keep the partial hash rather than throw.
  }
  return h;
}

std::string printSpec(const Spec &s) {
  try {
    std::string out;
    // (a name YAML reads as null, quoted)
    std::string lower = s.name;
    for (char &c : lower)
      c = char(std::tolower(static_cast<unsigned char>(c)));
    out += fmt::format(lower == "null" ? "name: \"{}\"\n" : "name: {}\n", s.name);
    out += fmt::format("d_model: {}\n", s.dModel);
    out += fmt::format("heads: {}\n", s.fullHeads ? s.fullHeads : s.heads);
    out += fmt::format("kv_heads: {}\n", s.fullKvHeads ? s.fullKvHeads : s.kvHeads);
    if (s.tpSize > 1)
      out += fmt::format("tensor_parallel:\n  size: {}\n  rank: {}\n", s.tpSize, s.tpRank);
    out += fmt::format("head_dim: {}\n", s.headDim);
    out += fmt::format("mask: {}\n", toString(s.mask));
    out += fmt::format("causal_align: {}\n", toString(s.causalAlign));
    if (s.slidingMask())
      out += fmt::format("window: {}\n", s.window);
    if (s.chunkedMask())
      out += fmt::format("chunk: {}\n", s.window);
    out += s.biasMask == kAllBiases || s.biasMask == 0
               ? fmt::format("bias: {}\n", biasString(s.biasMask))
               : fmt::format("bias: [{}]\n", biasString(s.biasMask));
    out += fmt::format("out_proj: {}\n", s.outProj);
    if (s.scale)
      out += fmt::format("scale: {}\n", *s.scale);
    else
      out += fmt::format("scale: {}  # auto: 1/sqrt(head_dim)\n", s.effectiveScale());
    out += fmt::format("weights: {}\n", toString(s.weights));
    if (s.maxSeqLen > 0)
      out += fmt::format("max_seq_len: {}\n", s.maxSeqLen);
    else
      out += "# max_seq_len: unbounded (no key)\n";
    out += fmt::format("dtype: {}\n", toString(s.dtype));
    out += fmt::format("weight_dtype: {}\n", toString(s.weightDtype));
    out += "outputs: [";
    for (size_t i = 0; i < s.outputs.size(); ++i)
      out += (i ? ", " : "") + s.outputs[i];
    out += "]\n";
    out += fmt::format("decode: {}\n", s.decode);
    out += fmt::format("cross_attention: {}\n", s.crossAttention);
    if (s.alibi)
      out += fmt::format("alibi:\n  bias_max: {}\n  before_scale: {}\n",
                         s.alibiBiasMax, s.alibiBeforeScale);
    if (s.softcap)
      out += fmt::format("softcap: {}\n", *s.softcap);
    if (s.clipQkv)
      out += fmt::format("clip_qkv: {}\n", *s.clipQkv);
    if (s.temperature)
      out += fmt::format("temperature_tuning:\n  floor_scale: {}\n  attn_scale: {}\n",
                         s.temperature->floorScale, s.temperature->attnScale);
    if (s.sinks)
      out += "sinks: true\n";
    if (s.t5Buckets)
      out += fmt::format("t5_bias:\n  num_buckets: {}\n  max_distance: {}\n  "
                         "bidirectional: {}\n",
                         s.t5Buckets, s.t5MaxDistance, s.t5Bidirectional);
    if (s.relKeyPositions)
      out += fmt::format("relative_key:\n  max_position_embeddings: {}\n  key_query: {}\n",
                         s.relKeyPositions, s.relKeyQuery);
    if (s.qkNorm != Spec::QkNorm::None) {
      out += fmt::format("qk_norm:\n  width: {}\n  eps: {}\n  weight_offset: {}\n",
                         s.qkNorm == Spec::QkNorm::Head ? "head" : "projection",
                         s.qkNormEps, s.qkNormOffset);
      if (s.qkNormLayer)
        out += "  type: layer\n";
      if (s.qkNormPerHead)
        out += "  weight: per_head\n";
      if (s.qkNormNoWeight)
        out += "  weight: none\n";
      if (s.qkNormBias)
        out += "  bias: true\n";
    }
    if (s.hasRope()) {
      const RopeSpec &r = s.rope;
      out += fmt::format("rope:\n  style: {}\n  theta: {}\n  rotary_dim: {}\n",
                         toString(r.style), r.theta, r.rotaryDim);
      if (r.scaling != "default") {
        out += fmt::format("  scaling:\n    type: {}\n", r.scaling);
        if (r.scaling != "longrope")
          out += fmt::format("    factor: {}\n", r.factor);
        if (r.scaling == "llama3")
          out += fmt::format("    low_freq_factor: {}\n    high_freq_factor: {}\n",
                             r.lowFreqFactor, r.highFreqFactor);
        if (r.scaling == "yarn")
          out += fmt::format("    beta_fast: {}\n    beta_slow: {}\n    "
                             "truncate: {}\n",
                             r.betaFast, r.betaSlow, r.truncate);
        if (r.scaling == "longrope") {
          auto list = [](const std::vector<double> &v) {
            std::string l;
            for (double x : v)
              l += fmt::format("{}{}", l.empty() ? "" : ", ", x);
            return "[" + l + "]";
          };
          out += fmt::format("    short_factor: {}\n    long_factor: {}\n",
                             list(r.shortFactor), list(r.longFactor));
        }
        if (r.originalMaxPos)
          out += fmt::format("    original_max_position_embeddings: {}\n",
                             r.originalMaxPos);
        if (r.maxPos)
          out += fmt::format("    max_position_embeddings: {}\n", r.maxPos);
        if (r.attentionFactor)
          out += fmt::format("    attention_factor: {}\n", *r.attentionFactor);
      }
      RopeTables t = ropeTables(s);
      out += fmt::format("  # attention_factor {}, inv_freq[0] {}, "
                         "inv_freq[{}] {}\n",
                         t.attentionFactor, t.invFreq.front(),
                         t.invFreq.size() - 1, t.invFreq.back());
    }
    return out;
  } catch (const std::exception &) {
    return "";
  }
}

const std::vector<std::string> *ropeScalingKeys(const std::string &type) {
  static const std::map<std::string, std::vector<std::string>> kTypeKeys = {
      {"default", {}},
      {"linear", {"factor"}},
      {"dynamic", {"factor", "max_position_embeddings"}},
      {"llama3",
       {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}},
      {"yarn",
       {"factor", "original_max_position_embeddings", "beta_fast", "beta_slow", "truncate",
        "attention_factor", "mscale", "mscale_all_dim"}},
      {"longrope",
       {"short_factor", "long_factor", "original_max_position_embeddings",
        "max_position_embeddings", "attention_factor"}}};
  auto it = kTypeKeys.find(type);
  return it == kTypeKeys.end() ? nullptr : &it->second;
}

RopeTables ropeTables(const Spec &s) {
  RopeTables t;
  const RopeSpec &r = s.rope;
  if (!s.hasRope() || r.rotaryDim < 2)
    return t;
  const int64_t dim = r.rotaryDim, half = dim / 2;
  const double pi = 3.14159265358979323846;
  // theta_i = base^(-2i/r) (HF _compute_default_rope_parameters).
  std::vector<double> theta(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    theta[size_t(i)] = 1.0 / std::pow(r.theta, double(2 * i) / double(dim));
  t.invFreq = theta;
  if (r.scaling == "linear") {
    for (double &f : t.invFreq)
      f /= r.factor;
  } else if (r.scaling == "dynamic") {
    // _compute_dynamic_ntk_parameters: theta as is up to
    // max_position_embeddings, a larger base past it (per call: kernels).
    t.dynamicFactor = r.factor;
    t.dynamicFrom = r.maxPos;
  } else if (r.scaling == "llama3") {
    // _compute_llama3_parameters: high frequencies kept, low ones divided by
    // factor, a smooth ramp between the two wavelengths.
    const double orig = double(r.originalMaxPos);
    const double lowWl = orig / r.lowFreqFactor, highWl = orig / r.highFreqFactor;
    for (size_t i = 0; i < theta.size(); ++i) {
      const double wl = 2 * pi / theta[i];
      if (wl < highWl)
        t.invFreq[i] = theta[i];
      else if (wl > lowWl)
        t.invFreq[i] = theta[i] / r.factor;
      else if (r.highFreqFactor == r.lowFreqFactor) // no ramp (wl on the edge)
        t.invFreq[i] = theta[i];
      else {
        const double sm = (orig / wl - r.lowFreqFactor) /
                          (r.highFreqFactor - r.lowFreqFactor);
        t.invFreq[i] = (1 - sm) * theta[i] / r.factor + sm * theta[i];
      }
    }
  } else if (r.scaling == "yarn") {
    // _compute_yarn_parameters.
    const double orig = double(r.originalMaxPos);
    auto corrDim = [&](double rot) {
      return double(dim) * std::log(orig / (rot * 2 * pi)) /
             (2 * std::log(r.theta));
    };
    double low = corrDim(r.betaFast), high = corrDim(r.betaSlow);
    if (r.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, double(dim - 1));
    if (low == high)
      high += 0.001;
    for (size_t i = 0; i < theta.size(); ++i) {
      double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
      double extrap = 1 - ramp;
      t.invFreq[i] = theta[i] / r.factor * (1 - extrap) + theta[i] * extrap;
    }
    t.attentionFactor = ropeAttentionFactor(s);
  } else if (r.scaling == "longrope") {
    // _compute_longrope_parameters: per-pair factors, long ones past
    // original_max_position_embeddings.
    t.longInvFreq = theta;
    for (size_t i = 0; i < theta.size(); ++i) {
      t.invFreq[i] = theta[i] / r.shortFactor[i];
      t.longInvFreq[i] = theta[i] / r.longFactor[i];
    }
    t.longFrom = r.originalMaxPos;
    t.attentionFactor = ropeAttentionFactor(s);
  }
  return t;
}

double ropeAttentionFactor(const Spec &s) {
  const RopeSpec &r = s.rope;
  if (!s.hasRope())
    return 1.0;
  if ((r.scaling == "yarn" || r.scaling == "longrope") && r.attentionFactor)
    return *r.attentionFactor;
  if (r.scaling == "yarn") { // _compute_yarn_parameters' get_mscale
    auto mscaleOf = [](double scale, double m) {
      return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
    };
    // (`if mscale and mscale_all_dim`: a 0 is false there, the default)
    if (r.mscale && r.mscaleAllDim && *r.mscale != 0 && *r.mscaleAllDim != 0)
      return mscaleOf(r.factor, *r.mscale) / mscaleOf(r.factor, *r.mscaleAllDim);
    return mscaleOf(r.factor, 1.0);
  }
  if (r.scaling == "longrope") { // _compute_longrope_parameters
    const double sc = double(r.maxPos) / double(r.originalMaxPos);
    return sc <= 1 ? 1.0 : std::sqrt(1 + std::log(sc) / std::log(double(r.originalMaxPos)));
  }
  return 1.0;
}

std::vector<int32_t> t5BucketTable(int64_t buckets, int64_t maxDistance,
                                   bool bidirectional) {
  std::vector<int32_t> out;
  for (int64_t rel = -maxDistance; rel <= maxDistance; ++rel)
    out.push_back(t5RelativeBucket(rel, buckets, maxDistance, bidirectional));
  return out;
}

int64_t Spec::firstKvHead() const {
  if (tpSize <= 1)
    return 0;
  // Split: rank r reads kv heads [r*kv, (r+1)*kv); replicated: the one its
  // query heads' group reads.
  return fullKvHeads % tpSize == 0 ? tpRank * kvHeads
                                   : tpRank * heads / (fullHeads / fullKvHeads);
}

std::vector<double> alibiSlopes(const Spec &s) {
  std::vector<double> out;
  if (!s.alibi)
    return out;
  // The block's slopes (every head), of which a tensor-parallel rank takes
  // its heads' share.
  const int64_t heads = s.fullHeads ? s.fullHeads : s.heads;
  int64_t n = 1;
  while (n * 2 <= heads)
    n *= 2;
  const double m0 = std::pow(2.0, -s.alibiBiasMax / double(n));
  const double m1 = std::pow(2.0, -(s.alibiBiasMax / 2) / double(n));
  const int64_t h0 = s.tpRank * s.heads;
  for (int64_t h = h0; h < h0 + s.heads; ++h)
    out.push_back(h < n ? std::pow(m0, double(h + 1))
                        : std::pow(m1, double(2 * (h - n) + 1)));
  return out;
}

std::string unsupportedFeature(const Spec &s) {
  try {
    const char *supportedBy = "is not supported by this version of attnc";
    // A decoder's cross-attention caches the encoder's K/V once; that is
    // another entry than self-attention decode, and not built yet.
    if (s.decode && s.crossAttention)
      return located(
          s, s.valuePosOf("decode"),
          fmt::format("decode: true with cross_attention: true {} "
                      "(decode is self-attention with a KV cache)",
                      supportedBy));
    return "";
  } catch (const std::exception &) {
    return s.file + ": error: out of memory";
  }
}

} // namespace attnc
