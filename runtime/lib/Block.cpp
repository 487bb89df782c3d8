//===- Block.cpp - the block description every layer shares ---------------===//
//
// Storage layouts (docs/weights.md):
//   gpt2_conv1d   c_attn.weight [d, N] = [Wq|Wk|Wv] in [in, out]; y = x·W + b
//   torch_in_proj in_proj_weight [N, d] [out, in];                y = x·Wᵀ + b
//   separate      q_proj/k_proj/v_proj/o_proj .weight [out, in];  y = x·Wᵀ + b
//                 (+ q_norm/k_norm weights, sinks, T5's table)
// N = heads*head_dim + 2*kv_heads*head_dim. Compute layout: every projection
// role is [in, out].
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Block.h"

#include <cmath>
#include <cstring>

namespace attnrt {

const RoleRect *StorageLayout::find(const std::string &role) const {
  for (const RoleRect &r : roles)
    if (r.role == role)
      return &r;
  return nullptr;
}

const std::vector<std::string> &roleNames() {
  static const std::vector<std::string> names = {"wq", "wk", "wv", "wo", "bq", "bk",
                                                 "bv", "bo", "nq", "nk", "ss", "rb",
                                                 "nbq", "nbk", "re"};
  return names;
}

namespace {

/// Builds a layout tensor by tensor: each tensor with the roles it holds.
struct LayoutBuilder {
  StorageLayout out;
  int tensor(const std::string &name, std::vector<int64_t> shape) {
    out.tensors.push_back({name, std::move(shape)});
    return static_cast<int>(out.tensors.size()) - 1;
  }
  /// A projection weight role (k over `in` inputs from inOff, n over
  /// `outW` outputs from outOff) of tensor t, which is [in, out] or,
  /// `transposed`, [out, in].
  void weight(int t, const char *role, bool transposed, int64_t outOff, int64_t inOff,
              int64_t in, int64_t outW) {
    RoleRect r;
    r.role = role;
    r.tensor = t;
    r.transposed = transposed;
    r.rowOff = transposed ? outOff : inOff;
    r.colOff = transposed ? inOff : outOff;
    r.rows = in;
    r.cols = outW;
    out.roles.push_back(r);
  }
  /// A vector role: elements [off, off + n) of tensor t.
  void vector(int t, const char *role, int64_t off, int64_t n) {
    RoleRect r;
    r.role = role;
    r.tensor = t;
    r.vector = true;
    r.colOff = off;
    r.rows = 1;
    r.cols = n;
    out.roles.push_back(r);
  }
  /// Columns [colOff, colOff + cols) of a matrix [rows, *] read as stored.
  void matrix(int t, const char *role, int64_t rows, int64_t colOff, int64_t cols) {
    RoleRect r;
    r.role = role;
    r.tensor = t;
    r.colOff = colOff;
    r.rows = rows;
    r.cols = cols;
    out.roles.push_back(r);
  }
};

} // namespace

StorageLayout storageLayout(const BlockParams &p) {
  // The block's tensors, and this rank's heads' rectangles of them
  // (tensor parallelism: Q/K/V column-parallel over the rank's heads, W_O
  // row-parallel, the o bias rank 0's alone; unsplit: rank 0 of 1).
  const int64_t d = p.dModel, dh = p.headDim;
  const int64_t qFull = p.blockHeads() * dh, kvFull = p.blockKvHeads() * dh;
  const int64_t n = qFull + 2 * kvFull;
  const int64_t qW = p.qWidth(), kvW = p.kvWidth();
  const int64_t q0 = p.firstHead() * dh, kv0 = p.firstKvHead() * dh;
  LayoutBuilder L;
  // The fused layouts hold q, k and v in one tensor: one bias for all three
  // (the spec refuses a mix), named by the q bit.
  const bool qkvBias = p.hasBias('q');
  const bool oBias = p.outProj && p.hasBias('o');
  const bool oBiasHere = oBias && p.tpRank == 0;
  switch (p.layout) {
  case ATTNC_LAYOUT_GPT2_CONV1D:
  case ATTNC_LAYOUT_TORCH_IN_PROJ: {
    const bool gpt2 = p.layout == ATTNC_LAYOUT_GPT2_CONV1D;
    // GPT-2's Conv1D is [in, out] (q/k/v are column blocks), torch's
    // in_proj [out, in] (row blocks).
    int w = gpt2 ? L.tensor("c_attn.weight", {d, n}) : L.tensor("in_proj_weight", {n, d});
    L.weight(w, "wq", !gpt2, q0, 0, d, qW);
    L.weight(w, "wk", !gpt2, qFull + kv0, 0, d, kvW);
    L.weight(w, "wv", !gpt2, qFull + kvFull + kv0, 0, d, kvW);
    if (qkvBias) {
      int b = L.tensor(gpt2 ? "c_attn.bias" : "in_proj_bias", {n});
      L.vector(b, "bq", q0, qW);
      L.vector(b, "bk", qFull + kv0, kvW);
      L.vector(b, "bv", qFull + kvFull + kv0, kvW);
    }
    if (p.outProj) {
      int o = gpt2 ? L.tensor("c_proj.weight", {qFull, d})
                   : L.tensor("out_proj.weight", {d, qFull});
      L.weight(o, "wo", !gpt2, 0, q0, qW, d);
      if (oBias) {
        int b = L.tensor(gpt2 ? "c_proj.bias" : "out_proj.bias", {d});
        if (oBiasHere)
          L.vector(b, "bo", 0, d);
      }
    }
    break;
  }
  case ATTNC_LAYOUT_SEPARATE: {
    struct Proj {
      char which;
      int64_t in, full, width, outOff, inOff;
    } projs[] = {{'q', d, qFull, qW, q0, 0},
                 {'k', d, kvFull, kvW, kv0, 0},
                 {'v', d, kvFull, kvW, kv0, 0},
                 {'o', qFull, d, d, 0, q0}};
    for (const Proj &pr : projs) {
      if (pr.which == 'o' && !p.outProj)
        continue;
      const std::string base = std::string(1, pr.which) + "_proj";
      const std::string w = std::string("w") + pr.which, b = std::string("b") + pr.which;
      const int64_t in = pr.which == 'o' ? qW : pr.in;
      L.weight(L.tensor(base + ".weight", {pr.full, pr.in}), w.c_str(), true, pr.outOff,
               pr.inOff, in, pr.width);
      if (p.hasBias(pr.which)) {
        int t = L.tensor(base + ".bias", {pr.full});
        if (pr.which != 'o' || oBiasHere)
          L.vector(t, b.c_str(), pr.outOff, pr.width);
      }
    }
    if (p.qkNorm != ATTNC_QK_NORM_NONE && !(p.qkNorm & ATTNC_QK_NORM_NO_WEIGHT)) {
      // Per head: one [head_dim] weight every head shares. Over the whole
      // projection (OLMo 2, never tensor-parallel): [heads * head_dim].
      // One per head (StableLM, Cohere): [heads * head_dim] too, a
      // tensor-parallel rank's heads from q0 / kv0. The bias likewise.
      const bool all = (p.qkNorm & ATTNC_QK_NORM_WIDTH_MASK) == ATTNC_QK_NORM_PROJECTION;
      const bool perHead = (p.qkNorm & ATTNC_QK_NORM_PER_HEAD) != 0;
      for (const char *part : {"weight", "bias"}) {
        if (part[0] == 'b' && !(p.qkNorm & ATTNC_QK_NORM_BIAS))
          break;
        L.vector(L.tensor(std::string("q_norm.") + part,
                          {all ? qW : perHead ? qFull : dh}),
                 part[0] == 'w' ? "nq" : "nbq", perHead ? q0 : 0, all || perHead ? qW : dh);
        L.vector(L.tensor(std::string("k_norm.") + part,
                          {all ? kvW : perHead ? kvFull : dh}),
                 part[0] == 'w' ? "nk" : "nbk", perHead ? kv0 : 0,
                 all || perHead ? kvW : dh);
      }
    }
    if (p.sinks)
      L.vector(L.tensor("sinks", {p.blockHeads()}), "ss", p.firstHead(), p.heads);
    if (p.t5Buckets)
      L.matrix(L.tensor("relative_attention_bias.weight", {p.t5Buckets, p.blockHeads()}),
               "rb", p.t5Buckets, p.firstHead(), p.heads);
    if (p.relKeyPositions) // one table every head shares, read transposed: [dh, 2P - 1]
      L.weight(L.tensor("distance_embedding.weight", {2 * p.relKeyPositions - 1, dh}), "re",
               true, 0, 0, dh, 2 * p.relKeyPositions - 1);
    break;
  }
  default:
    break; // Unknown layout: no tensors (validateInfo rejects it).
  }
  return L.out;
}

std::vector<TensorShape> storageTensors(const BlockParams &p) {
  return storageLayout(p).tensors;
}

namespace {
struct Name {
  const char *kind;
  uint32_t code;
  const char *spelling;
};
const Name kNames[] = {
#define ATTNC_NAME(kind, code, spelling) {#kind, code, spelling},
#include "attnc/runtime/abi_names.def"
#undef ATTNC_NAME
};
} // namespace

const char *nameOf(const char *kind, uint32_t code) {
  for (const Name &n : kNames)
    if (std::strcmp(n.kind, kind) == 0 && n.code == code)
      return n.spelling;
  return "unknown";
}

bool codeOf(const char *kind, const std::string &spelling, uint32_t &code) {
  for (const Name &n : kNames)
    if (std::strcmp(n.kind, kind) == 0 && spelling == n.spelling) {
      code = n.code;
      return true;
    }
  return false;
}

std::string namesOf(const char *kind) {
  std::string s;
  for (const Name &n : kNames)
    if (std::strcmp(n.kind, kind) == 0)
      s += (s.empty() ? "" : ", ") + std::string(n.spelling);
  return s;
}

std::string featureNames(uint32_t features) {
  std::string s;
  for (const Name &n : kNames)
    if (std::strcmp(n.kind, "feature") == 0 && (features & n.code))
      s += (s.empty() ? "" : ", ") + std::string(n.spelling);
  return s.empty() ? "none" : s;
}

std::string checkVariantInputs(const BlockParams &p, int64_t batch,
                               int64_t seqLen, const VariantInputs &in) {
  if (batch < 1 || seqLen < 1)
    return "batch and seq_len must be at least 1, got batch " + std::to_string(batch) +
           ", seq_len " + std::to_string(seqLen);
  if (p.cross) {
    if (!in.xKv)
      return "cross-attention needs x_kv";
    if (in.kvSeqLen < 1)
      return "cross-attention needs kv_seq_len >= 1, got " + std::to_string(in.kvSeqLen);
  } else {
    if (in.xKv)
      return "x_kv given, but the block is self-attention";
    if (in.kvSeqLen != 0 && in.kvSeqLen != seqLen)
      return "kv_seq_len " + std::to_string(in.kvSeqLen) + " differs from seq_len " +
             std::to_string(seqLen) + " in self-attention";
    if (in.kvLengths)
      return "kv_lengths given, but the block is self-attention (lengths "
             "are the keys' lengths too)";
  }
  const int64_t kvSeq = p.cross ? in.kvSeqLen : seqLen;
  const int64_t maxPosition = int64_t(1) << 30;
  for (int64_t b = 0; b < batch; ++b) {
    if (in.positions && (in.positions[b] < 0 || in.positions[b] > maxPosition - seqLen))
      return "positions[" + std::to_string(b) + "] is " + std::to_string(in.positions[b]) +
             ", expected 0.." + std::to_string(maxPosition - seqLen) + " (2^30 - seq_len)";
    if (in.positions && in.positions[b] != 0 && attnc_mask_chunked(p.mask) && !p.kvCache)
      return "positions[" + std::to_string(b) + "] is " + std::to_string(in.positions[b]) +
             ": a chunked mask counts its chunks from position 0, and a forward without "
             "a KV cache has no earlier tokens (start at 0, or use the decode entry)";
    if (in.lengths && (in.lengths[b] < 0 || in.lengths[b] > seqLen))
      return "lengths[" + std::to_string(b) + "] is " + std::to_string(in.lengths[b]) +
             ", expected 0.." + std::to_string(seqLen) + " (seq_len)";
    if (in.kvLengths && (in.kvLengths[b] < 0 || in.kvLengths[b] > kvSeq))
      return "kv_lengths[" + std::to_string(b) + "] is " + std::to_string(in.kvLengths[b]) +
             ", expected 0.." + std::to_string(kvSeq) + " (kv_seq_len)";
  }
  if (in.ropeCallEnds) {
    if (p.cross)
      return "rope call ends given, but the block is cross-attention";
    for (int64_t t = 0; t < seqLen; ++t)
      if (in.ropeCallEnds[t] <= t || in.ropeCallEnds[t] > seqLen ||
          (t > 0 && in.ropeCallEnds[t] < in.ropeCallEnds[t - 1]))
        return "rope call end of row " + std::to_string(t) + " is " +
               std::to_string(in.ropeCallEnds[t]) + ", expected " + std::to_string(t + 1) +
               ".." + std::to_string(seqLen) + " and not below the previous row's";
  }
  return "";
}

int64_t dtypeBytes(uint32_t dtype) {
  switch (dtype) {
  case ATTNC_DTYPE_F32: return 4;
  case ATTNC_DTYPE_BF16:
  case ATTNC_DTYPE_F16: return 2;
  default: return 0;
  }
}

uint16_t floatToBf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float bf16ToFloat(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

uint16_t floatToF16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN
    return static_cast<uint16_t>(sign | 0x7e00u);
  if (a >= 0x477ff000u) // rounds past 65504: infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (a < 0x38800000u) { // below 2^-14: a subnormal (or zero) of f16
    // value = a_float; f16 subnormal unit 2^-24: round(a_float * 2^24).
    float f;
    std::memcpy(&f, &a, 4);
    float q = f * 16777216.0f; // exact (power of two scaling)
    uint32_t r = static_cast<uint32_t>(q);
    float frac = q - static_cast<float>(r);
    if (frac > 0.5f || (frac == 0.5f && (r & 1u)))
      ++r;
    return static_cast<uint16_t>(sign | r);
  }
  // Normal: rebias the exponent (127 -> 15), keep 10 mantissa bits, RNE.
  uint32_t m = a + 0xc8000000u; // exponent - 112 (in place)
  m += 0xfffu + ((m >> 13) & 1u);
  return static_cast<uint16_t>(sign | (m >> 13));
}

float f16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t u;
  if (e == 0) {
    float v = static_cast<float>(m) * (1.0f / 16777216.0f);
    std::memcpy(&u, &v, 4);
    u |= sign;
  } else if (e == 31) {
    u = sign | 0x7f800000u | (m << 13);
  } else {
    u = sign | ((e + 112) << 23) | (m << 13);
  }
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

void fromFloat(uint32_t dtype, const float *src, void *dst, int64_t n) {
  if (dtype == ATTNC_DTYPE_F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
    return;
  }
  auto *d = static_cast<uint16_t *>(dst);
  for (int64_t i = 0; i < n; ++i)
    d[i] = dtype == ATTNC_DTYPE_BF16 ? floatToBf16(src[i]) : floatToF16(src[i]);
}

int64_t firstOutOfRange(uint32_t dtype, const float *src, int64_t n) {
  if (dtype == ATTNC_DTYPE_F16) {
    for (int64_t i = 0; i < n; ++i) // (65504 and what rounds to it fit)
      if (std::isfinite(src[i]) && std::fabs(src[i]) >= 65520.0f)
        return i;
  } else if (dtype == ATTNC_DTYPE_BF16) {
    // (a finite float32 past bf16's largest, 0x1.fep127, by half an ulp
    // or more rounds to inf)
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(src[i]) && (floatToBf16(src[i]) & 0x7fff) == 0x7f80)
        return i;
  }
  return -1;
}

const char *storageRangeText(uint32_t dtype) {
  return dtype == ATTNC_DTYPE_F16 ? "float16 range (largest finite 65504)"
                                  : "bfloat16 range (largest finite 3.38953e+38)";
}

void toFloat(uint32_t dtype, const void *src, float *dst, int64_t n) {
  if (dtype == ATTNC_DTYPE_F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
    return;
  }
  const auto *s = static_cast<const uint16_t *>(src);
  for (int64_t i = 0; i < n; ++i)
    dst[i] = dtype == ATTNC_DTYPE_BF16 ? bf16ToFloat(s[i]) : f16ToFloat(s[i]);
}

float roundTo(uint32_t dtype, float v) {
  if (dtype == ATTNC_DTYPE_BF16)
    return bf16ToFloat(floatToBf16(v));
  if (dtype == ATTNC_DTYPE_F16)
    return f16ToFloat(floatToF16(v));
  return v;
}

std::vector<double> RopeParams::invFreqAt(int64_t len) const {
  if (!longInvFreq.empty() && len > longFrom)
    return longInvFreq;
  std::vector<double> f = invFreq;
  if (dynamicFactor > 0 && len > dynamicFrom && rotaryDim > 2) {
    const double s = dynamicFactor * double(len) / double(dynamicFrom) - (dynamicFactor - 1);
    for (size_t i = 0; i < f.size(); ++i)
      f[i] *= std::pow(s, -2.0 * double(i) / double(rotaryDim - 2));
  }
  return f;
}

double BlockParams::temperatureAt(int64_t pos) const {
  if (temperatureFloorScale <= 0)
    return 1.0;
  return 1.0 + temperatureAttnScale *
                   std::log(double((pos + 1) / temperatureFloorScale) + 1.0);
}

BlockParams paramsFromInfo(const attnc_kernel_info &info) {
  BlockParams p;
  p.dModel = info.d_model;
  p.heads = info.heads;
  p.kvHeads = info.kv_heads;
  p.headDim = info.head_dim;
  p.mask = info.mask;
  p.topLeft = info.causal_align == 1;
  p.window = info.window;
  p.biasMask = info.bias_flags;
  if (info.features & ATTNC_FEATURE_ROPE) {
    RopeParams &r = p.rope;
    r.style = info.rope_style;
    r.rotaryDim = info.rotary_dim;
    if (info.rope_inv_freq)
      r.invFreq.assign(info.rope_inv_freq, info.rope_inv_freq + info.rope_pairs);
    if (info.rope_long_inv_freq)
      r.longInvFreq.assign(info.rope_long_inv_freq, info.rope_long_inv_freq + info.rope_pairs);
    r.longFrom = info.rope_long_from;
    r.attentionFactor = info.rope_attention_factor;
    r.dynamicFactor = info.rope_dynamic_factor;
    r.dynamicFrom = info.rope_dynamic_from;
  }
  p.qkNorm = info.qk_norm;
  p.clipQkv = info.clip_qkv;
  p.temperatureFloorScale = info.temperature_floor_scale;
  p.temperatureAttnScale = info.temperature_attn_scale;
  p.sinks = info.sinks != 0;
  p.t5Buckets = info.t5_num_buckets;
  p.t5MaxDistance = info.t5_max_distance;
  p.t5Bidirectional = info.t5_bidirectional != 0;
  p.relKeyPositions = info.rel_key_positions;
  p.relKeyQuery = info.rel_key_query != 0;
  p.qkNormEps = info.qk_norm_eps;
  p.qkNormOffset = info.qk_norm_offset;
  if (info.features & ATTNC_FEATURE_SCORE_MODS) {
    p.softcap = info.softcap;
    if (info.alibi_slopes)
      p.alibiSlopes.assign(info.alibi_slopes, info.alibi_slopes + info.heads);
    p.alibiBeforeScale = info.alibi_before_scale != 0;
  }
  p.outProj = info.out_proj != 0;
  p.dtype = info.dtype;
  p.weightDtype = info.weight_dtype;
  p.tpSize = info.tp_size;
  p.tpRank = info.tp_rank;
  p.fullHeads = info.tp_heads;
  p.fullKvHeads = info.tp_kv_heads;
  p.scale = info.scale;
  p.layout = info.weight_layout;
  p.cross = (info.features & ATTNC_FEATURE_CROSS) != 0;
  p.wantProbs = (info.features & ATTNC_FEATURE_PROBS) != 0;
  p.kvCache = (info.features & ATTNC_FEATURE_DECODE) != 0;
  return p;
}

} // namespace attnrt
