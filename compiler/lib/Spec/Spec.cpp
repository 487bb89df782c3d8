//===- Spec.cpp - Spec helpers: names, hashing, printing -------*- C++ -*-===//
//
// The parts of the Spec API that do not parse YAML: enum spellings, the
// effective scale, key positions, the stable hash, the canonical dump and
// the "not supported by this version" check.
//
//===----------------------------------------------------------------------===//

#include "attnc/Spec/Spec.h"

#include <fmt/format.h>

#include <cmath>
#include <exception>

namespace attnc {

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
  }
  return "?";
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

/// The canonical string hashed by specHash. Versioned so that a change of
/// the encoding is a deliberate change of every hash. Defaults are resolved,
/// so an omitted key and the same key spelled with its default value hash
/// equal. Doubles are printed exactly (hex float).
std::string canonicalString(const Spec &s) {
  std::string out = "attnc-spec-v1\n";
  out += fmt::format("name={}\n", s.name);
  out += fmt::format("d_model={}\nheads={}\nkv_heads={}\nhead_dim={}\n",
                     s.dModel, s.heads, s.kvHeads, s.headDim);
  out += fmt::format("mask={}\ncausal_align={}\nwindow={}\n", toString(s.mask),
                     toString(s.causalAlign), s.window);
  out += fmt::format("bias={}\nout_proj={}\n", s.bias, s.outProj);
  if (s.scale)
    out += fmt::format("scale={:a}\n", *s.scale);
  else
    out += "scale=auto\n";
  out += fmt::format("weights={}\nmax_seq_len={}\ndtype={}\n",
                     toString(s.weights), s.maxSeqLen, toString(s.dtype));
  out += "outputs=";
  for (const std::string &o : s.outputs)
    out += o + ",";
  out += fmt::format("\ndecode={}\ncross_attention={}\n", s.decode,
                     s.crossAttention);
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
    out += fmt::format("name: {}\n", s.name);
    out += fmt::format("d_model: {}\n", s.dModel);
    out += fmt::format("heads: {}\n", s.heads);
    out += fmt::format("kv_heads: {}\n", s.kvHeads);
    out += fmt::format("head_dim: {}\n", s.headDim);
    out += fmt::format("mask: {}\n", toString(s.mask));
    out += fmt::format("causal_align: {}\n", toString(s.causalAlign));
    if (s.mask == MaskKind::SlidingWindow)
      out += fmt::format("window: {}\n", s.window);
    out += fmt::format("bias: {}\n", s.bias);
    out += fmt::format("out_proj: {}\n", s.outProj);
    if (s.scale)
      out += fmt::format("scale: {}\n", *s.scale);
    else
      out += fmt::format("scale: {} (auto)\n", s.effectiveScale());
    out += fmt::format("weights: {}\n", toString(s.weights));
    if (s.maxSeqLen > 0)
      out += fmt::format("max_seq_len: {}\n", s.maxSeqLen);
    else
      out += "max_seq_len: unbounded\n";
    out += fmt::format("dtype: {}\n", toString(s.dtype));
    out += "outputs: [";
    for (size_t i = 0; i < s.outputs.size(); ++i)
      out += (i ? ", " : "") + s.outputs[i];
    out += "]\n";
    out += fmt::format("decode: {}\n", s.decode);
    out += fmt::format("cross_attention: {}\n", s.crossAttention);
    return out;
  } catch (const std::exception &) {
    return "";
  }
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
