//===- BlockParams.cpp - a spec in the runtime's terms --------------------===//
#include "attnc/Spec/BlockParams.h"

#include <fmt/format.h>

#include <cmath>

attnrt::BlockParams attnc::blockParams(const Spec &s) {
  attnrt::BlockParams p;
  p.dModel = s.dModel;
  p.heads = s.heads;
  p.kvHeads = s.kvHeads;
  p.headDim = s.headDim;
  p.biasMask = s.biasMask;
  p.softcap = s.softcap.value_or(0.0);
  p.qkNorm = s.qkNorm == Spec::QkNorm::None   ? ATTNC_QK_NORM_NONE
             : s.qkNorm == Spec::QkNorm::Head ? ATTNC_QK_NORM_HEAD
                                              : ATTNC_QK_NORM_PROJECTION;
  if (p.qkNorm != ATTNC_QK_NORM_NONE)
    p.qkNorm |= (s.qkNormLayer ? ATTNC_QK_NORM_LAYER : 0u) |
                (s.qkNormPerHead ? ATTNC_QK_NORM_PER_HEAD : 0u) |
                (s.qkNormBias ? ATTNC_QK_NORM_BIAS : 0u) |
                (s.qkNormNoWeight ? ATTNC_QK_NORM_NO_WEIGHT : 0u);
  p.qkNormEps = s.qkNormEps;
  p.sinks = s.sinks;
  p.t5Buckets = s.t5Buckets;
  p.t5MaxDistance = s.t5MaxDistance;
  p.t5Bidirectional = s.t5Bidirectional;
  p.relKeyPositions = s.relKeyPositions;
  p.relKeyQuery = s.relKeyQuery;
  p.qkNormOffset = s.qkNormOffset;
  p.clipQkv = s.clipQkv.value_or(0.0);
  if (s.temperature) {
    p.temperatureFloorScale = s.temperature->floorScale;
    p.temperatureAttnScale = s.temperature->attnScale;
  }
  p.alibiSlopes = alibiSlopes(s);
  p.alibiBeforeScale = s.alibiBeforeScale;
  if (s.hasRope()) {
    RopeTables t = ropeTables(s);
    attnrt::RopeParams &r = p.rope;
    r.style = s.rope.style == RopeStyle::Interleaved ? ATTNC_ROPE_INTERLEAVED
                                                     : ATTNC_ROPE_HALF_SPLIT;
    r.rotaryDim = s.rope.rotaryDim;
    r.invFreq = t.invFreq;
    r.longInvFreq = t.longInvFreq;
    r.longFrom = t.longFrom;
    r.attentionFactor = t.attentionFactor;
    r.dynamicFactor = t.dynamicFactor;
    r.dynamicFrom = t.dynamicFrom;
  }
  p.outProj = s.outProj;
  auto code = [](DType d) {
    return d == DType::BF16 ? ATTNC_DTYPE_BF16 : d == DType::F16 ? ATTNC_DTYPE_F16 : ATTNC_DTYPE_F32;
  };
  p.dtype = code(s.dtype);
  p.weightDtype = code(s.weightDtype);
  p.tpSize = s.tpSize;
  p.tpRank = s.tpRank;
  p.fullHeads = s.fullHeads;
  p.fullKvHeads = s.fullKvHeads;
  p.scale = s.effectiveScale();
  p.window = s.window;
  p.topLeft = s.causalAlign == CausalAlign::TopLeft;
  p.cross = s.crossAttention;
  p.wantProbs = s.wantsProbs();
  p.kvCache = s.decode;
  switch (s.weights) {
  case WeightLayout::Gpt2Conv1D: p.layout = ATTNC_LAYOUT_GPT2_CONV1D; break;
  case WeightLayout::TorchInProj: p.layout = ATTNC_LAYOUT_TORCH_IN_PROJ; break;
  case WeightLayout::Separate: p.layout = ATTNC_LAYOUT_SEPARATE; break;
  }
  switch (s.mask) {
  case MaskKind::None: p.mask = ATTNC_MASK_NONE; break;
  case MaskKind::Causal: p.mask = ATTNC_MASK_CAUSAL; break;
  case MaskKind::Padding: p.mask = ATTNC_MASK_PADDING; break;
  case MaskKind::CausalPadding: p.mask = ATTNC_MASK_CAUSAL_PADDING; break;
  case MaskKind::SlidingWindow: p.mask = ATTNC_MASK_SLIDING_WINDOW; break;
  case MaskKind::Chunked: p.mask = ATTNC_MASK_CHUNKED; break;
  case MaskKind::SlidingWindowPadding: p.mask = ATTNC_MASK_SLIDING_WINDOW_PADDING; break;
  case MaskKind::ChunkedPadding: p.mask = ATTNC_MASK_CHUNKED_PADDING; break;
  case MaskKind::BidirectionalWindow: p.mask = ATTNC_MASK_BIDIRECTIONAL_WINDOW; break;
  case MaskKind::BidirectionalWindowPadding:
    p.mask = ATTNC_MASK_BIDIRECTIONAL_WINDOW_PADDING;
    break;
  }
  return p;
}

namespace {

std::string yesNo(bool b) { return b ? "yes" : "no"; }

/// The mask's visibility in words, with its window: "causal",
/// "causal within a sliding window of 6", "bidirectional".
std::string maskName(uint32_t m, int64_t window) {
  std::string s = attnc_mask_causal(m) ? "causal" : "bidirectional";
  if (attnc_mask_sliding(m))
    s += fmt::format(" within a sliding window of {}", window);
  if (attnc_mask_chunked(m))
    s += fmt::format(" within chunks of {}", window);
  return s;
}

/// A QK-norm in the spec's words: "none", "rms over each head",
/// "layer over the whole projection, per-head weight, bias".
std::string qkNormName(uint32_t n) {
  if (n == ATTNC_QK_NORM_NONE)
    return "none";
  const uint32_t width = n & ATTNC_QK_NORM_WIDTH_MASK;
  std::string s = fmt::format("{} over {}", n & ATTNC_QK_NORM_LAYER ? "layer" : "rms",
                              width == ATTNC_QK_NORM_HEAD         ? "each head"
                              : width == ATTNC_QK_NORM_PROJECTION ? "the whole projection"
                                                                  : "an unknown width");
  if (n & ATTNC_QK_NORM_NO_WEIGHT)
    s += ", no weight";
  if (n & ATTNC_QK_NORM_PER_HEAD)
    s += ", per-head weight";
  if (n & ATTNC_QK_NORM_BIAS)
    s += ", bias";
  return s;
}

bool close(double a, double b) {
  return a == b || std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}
bool close(const std::vector<double> &a, const std::vector<double> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!close(a[i], b[i]))
      return false;
  return true;
}

} // namespace

std::vector<std::string> attnc::modelDifferences(const attnrt::BlockParams &k,
                                                 const attnrt::BlockParams &m) {
  std::vector<std::string> out;
  auto num = [&](const char *what, auto kv, auto mv) {
    if (!close(double(kv), double(mv)))
      out.push_back(fmt::format("{} {} (config.json: {})", what, kv, mv));
  };
  auto flag = [&](const char *what, bool kv, bool mv) {
    if (kv != mv)
      out.push_back(fmt::format("{} {} (config.json: {})", what, yesNo(kv), yesNo(mv)));
  };
  num("d_model", k.dModel, m.dModel);
  num("heads", k.blockHeads(), m.blockHeads());
  num("kv_heads", k.blockKvHeads(), m.blockKvHeads());
  num("head_dim", k.headDim, m.headDim);
  flag("cross-attention", k.cross, m.cross);
  if (maskName(k.mask, k.window) != maskName(m.mask, m.window))
    out.push_back(fmt::format("mask {} (config.json: {})", maskName(k.mask, k.window),
                              maskName(m.mask, m.window)));
  // (the alignment decides only where queries and keys differ in number:
  // cross-attention, decode)
  if (attnc_mask_causal(k.mask) && attnc_mask_causal(m.mask) && (k.cross || k.kvCache))
    flag("causal top-left alignment", k.topLeft, m.topLeft);
  const char *biasNames[] = {"q", "k", "v", "o"};
  const uint32_t biasBits[] = {ATTNC_BIAS_Q, ATTNC_BIAS_K, ATTNC_BIAS_V, ATTNC_BIAS_O};
  for (int i = 0; i < 4; ++i)
    if ((k.biasMask & biasBits[i]) != (m.biasMask & biasBits[i]))
      out.push_back(fmt::format("{} bias {} (config.json: {})", biasNames[i],
                                yesNo(k.biasMask & biasBits[i]), yesNo(m.biasMask & biasBits[i])));
  flag("output projection", k.outProj, m.outProj);
  if (k.headDim == m.headDim) // (else the default scales differ with it)
    num("scale", k.scale ? k.scale : 1 / std::sqrt(double(k.headDim)),
        m.scale ? m.scale : 1 / std::sqrt(double(m.headDim)));
  const attnrt::RopeParams &kr = k.rope, &mr = m.rope;
  if (kr.style != mr.style) {
    auto style = [](uint32_t s) {
      return s == ATTNC_ROPE_NONE ? "none" : s == ATTNC_ROPE_INTERLEAVED ? "interleaved" : "half_split";
    };
    out.push_back(fmt::format("rope {} (config.json: {})", style(kr.style), style(mr.style)));
  } else if (kr.style != ATTNC_ROPE_NONE && k.headDim == m.headDim) { // (else they follow)
    num("rotary_dim", kr.rotaryDim, mr.rotaryDim);
    if (!close(kr.invFreq, mr.invFreq) || !close(kr.longInvFreq, mr.longInvFreq) ||
        kr.longFrom != mr.longFrom || !close(kr.dynamicFactor, mr.dynamicFactor) ||
        kr.dynamicFrom != mr.dynamicFrom)
      out.push_back("rotary frequencies (rope_theta or rope_scaling) differ");
    num("rotary attention factor", kr.attentionFactor, mr.attentionFactor);
  }
  num("softcap", k.softcap, m.softcap);
  // (a tensor-parallel rank's slopes are its heads' share of the block's)
  std::vector<double> modelSlopes = m.alibiSlopes;
  if (k.tpSize > 1 && !modelSlopes.empty() && k.blockHeads() == m.blockHeads() &&
      k.firstHead() + k.heads <= int64_t(modelSlopes.size()))
    modelSlopes.assign(modelSlopes.begin() + k.firstHead(),
                       modelSlopes.begin() + k.firstHead() + k.heads);
  if (!close(k.alibiSlopes, modelSlopes))
    out.push_back(fmt::format("alibi {} (config.json: {})",
                              k.alibiSlopes.empty() ? "none" : "slopes differ",
                              m.alibiSlopes.empty() ? "none" : "other slopes"));
  else if (!k.alibiSlopes.empty())
    flag("alibi before the scale", k.alibiBeforeScale, m.alibiBeforeScale);
  num("clip_qkv", k.clipQkv, m.clipQkv);
  num("temperature floor scale", k.temperatureFloorScale, m.temperatureFloorScale);
  num("temperature attn scale", k.temperatureAttnScale, m.temperatureAttnScale);
  if (k.qkNorm != m.qkNorm)
    out.push_back(fmt::format("qk_norm {} (config.json: {})", qkNormName(k.qkNorm),
                              qkNormName(m.qkNorm)));
  else if (k.qkNorm != ATTNC_QK_NORM_NONE) {
    num("qk_norm eps", k.qkNormEps, m.qkNormEps);
    num("qk_norm weight offset", k.qkNormOffset, m.qkNormOffset);
  }
  flag("sinks", k.sinks, m.sinks);
  num("t5 buckets", k.t5Buckets, m.t5Buckets);
  if (k.t5Buckets && m.t5Buckets) {
    num("t5 max_distance", k.t5MaxDistance, m.t5MaxDistance);
    flag("t5 bidirectional", k.t5Bidirectional, m.t5Bidirectional);
  }
  num("relative_key positions", k.relKeyPositions, m.relKeyPositions);
  flag("relative_key_query", k.relKeyQuery, m.relKeyQuery);
  return out;
}
