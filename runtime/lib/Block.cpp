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
                                                 "bv", "bo", "nq", "nk", "ss", "rb"};
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
  /// A projection weight role (k over `in`, n over `out`) at output offset
  /// `off` of tensor t, which is [in, out] or, `transposed`, [out, in].
  void weight(int t, const char *role, bool transposed, int64_t off, int64_t in,
              int64_t outW) {
    RoleRect r;
    r.role = role;
    r.tensor = t;
    r.transposed = transposed;
    (transposed ? r.rowOff : r.colOff) = off;
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
  /// A whole matrix [rows, cols] read as stored.
  void matrix(int t, const char *role, int64_t rows, int64_t cols) {
    RoleRect r;
    r.role = role;
    r.tensor = t;
    r.rows = rows;
    r.cols = cols;
    out.roles.push_back(r);
  }
};

} // namespace

StorageLayout storageLayout(const BlockParams &p) {
  const int64_t d = p.dModel, qW = p.qWidth(), kvW = p.kvWidth();
  const int64_t n = qW + 2 * kvW;
  LayoutBuilder L;
  // The fused layouts hold q, k and v in one tensor: one bias for all three
  // (the spec refuses a mix), named by the q bit.
  const bool qkvBias = p.hasBias('q');
  const bool oBias = p.outProj && p.hasBias('o');
  switch (p.layout) {
  case ATTNC_LAYOUT_GPT2_CONV1D:
  case ATTNC_LAYOUT_TORCH_IN_PROJ: {
    const bool gpt2 = p.layout == ATTNC_LAYOUT_GPT2_CONV1D;
    // GPT-2's Conv1D is [in, out] (q/k/v are column blocks), torch's
    // in_proj [out, in] (row blocks).
    int w = gpt2 ? L.tensor("c_attn.weight", {d, n}) : L.tensor("in_proj_weight", {n, d});
    L.weight(w, "wq", !gpt2, 0, d, qW);
    L.weight(w, "wk", !gpt2, qW, d, kvW);
    L.weight(w, "wv", !gpt2, qW + kvW, d, kvW);
    if (qkvBias) {
      int b = L.tensor(gpt2 ? "c_attn.bias" : "in_proj_bias", {n});
      L.vector(b, "bq", 0, qW);
      L.vector(b, "bk", qW, kvW);
      L.vector(b, "bv", qW + kvW, kvW);
    }
    if (p.outProj) {
      int o = gpt2 ? L.tensor("c_proj.weight", {qW, d}) : L.tensor("out_proj.weight", {d, qW});
      L.weight(o, "wo", !gpt2, 0, qW, d);
      if (oBias)
        L.vector(L.tensor(gpt2 ? "c_proj.bias" : "out_proj.bias", {d}), "bo", 0, d);
    }
    break;
  }
  case ATTNC_LAYOUT_SEPARATE: {
    struct Proj {
      char which;
      int64_t in, width;
    } projs[] = {{'q', d, qW}, {'k', d, kvW}, {'v', d, kvW}, {'o', qW, d}};
    for (const Proj &pr : projs) {
      if (pr.which == 'o' && !p.outProj)
        continue;
      const std::string base = std::string(1, pr.which) + "_proj";
      const std::string w = std::string("w") + pr.which, b = std::string("b") + pr.which;
      L.weight(L.tensor(base + ".weight", {pr.width, pr.in}), w.c_str(), true, 0, pr.in,
               pr.width);
      if (p.hasBias(pr.which))
        L.vector(L.tensor(base + ".bias", {pr.width}), b.c_str(), 0, pr.width);
    }
    if (p.qkNorm != ATTNC_QK_NORM_NONE) {
      const bool all = p.qkNorm == ATTNC_QK_NORM_PROJECTION;
      L.vector(L.tensor("q_norm.weight", {all ? qW : p.headDim}), "nq", 0, all ? qW : p.headDim);
      L.vector(L.tensor("k_norm.weight", {all ? kvW : p.headDim}), "nk", 0,
               all ? kvW : p.headDim);
    }
    if (p.sinks)
      L.vector(L.tensor("sinks", {p.heads}), "ss", 0, p.heads);
    if (p.t5Buckets)
      L.matrix(L.tensor("relative_attention_bias.weight", {p.t5Buckets, p.heads}), "rb",
               p.t5Buckets, p.heads);
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
    if (in.lengths && (in.lengths[b] < 0 || in.lengths[b] > seqLen))
      return "lengths[" + std::to_string(b) + "] is " + std::to_string(in.lengths[b]) +
             ", expected 0.." + std::to_string(seqLen) + " (seq_len)";
    if (in.kvLengths && (in.kvLengths[b] < 0 || in.kvLengths[b] > kvSeq))
      return "kv_lengths[" + std::to_string(b) + "] is " + std::to_string(in.kvLengths[b]) +
             ", expected 0.." + std::to_string(kvSeq) + " (kv_seq_len)";
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
    p.ropeStyle = info.rope_style;
    p.rotaryDim = info.rotary_dim;
    if (info.rope_inv_freq)
      p.ropeInvFreq.assign(info.rope_inv_freq, info.rope_inv_freq + info.rope_pairs);
    if (info.rope_long_inv_freq)
      p.ropeLongInvFreq.assign(info.rope_long_inv_freq,
                               info.rope_long_inv_freq + info.rope_pairs);
    p.ropeLongFrom = info.rope_long_from;
    p.ropeAttentionFactor = info.rope_attention_factor;
  }
  p.qkNorm = info.qk_norm;
  p.sinks = info.sinks != 0;
  p.t5Buckets = info.t5_num_buckets;
  p.t5MaxDistance = info.t5_max_distance;
  p.t5Bidirectional = info.t5_bidirectional != 0;
  p.qkNormEps = info.qk_norm_eps;
  p.qkNormOffset = info.qk_norm_offset;
  if (info.features & ATTNC_FEATURE_SCORE_MODS) {
    p.softcap = info.softcap;
    if (info.alibi_slopes)
      p.alibiSlopes.assign(info.alibi_slopes, info.alibi_slopes + info.heads);
    p.alibiBeforeScale = info.alibi_before_scale != 0;
  }
  p.outProj = info.out_proj != 0;
  p.scale = info.scale;
  p.layout = info.weight_layout;
  p.cross = (info.features & ATTNC_FEATURE_CROSS) != 0;
  p.wantProbs = (info.features & ATTNC_FEATURE_PROBS) != 0;
  return p;
}

} // namespace attnrt
