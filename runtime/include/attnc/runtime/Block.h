//===- Block.h - the block description every layer shares ------*- C++ -*-===//
//
// What one attention block is, once, for the compiler, the kernel glue,
// the runtime, the reference interpreter and the tools: its parameters (the
// values of the metadata record, abi.h), the storage layout of its weights
// (which tensors a user hands to NAME_pack, and which rectangle of which
// tensor each projection weight, bias or table is), and the one spelling of
// every enum value. A leaf: no MLIR, no LLVM, no interpreter.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_BLOCK_H
#define ATTNC_RUNTIME_BLOCK_H

#include "attnc/runtime/abi.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnrt {

/// A rotary embedding (abi.h's rope_* fields): position p rotates pair i of
/// each head's first rotaryDim dims by p * invFreqAt(L)[i], cos and sin
/// times attentionFactor, where L is the length of the call, the batch's
/// largest position + 1.
struct RopeParams {
  uint32_t style = ATTNC_ROPE_NONE;
  int64_t rotaryDim = 0;
  std::vector<double> invFreq;
  /// longrope: replaces invFreq when L > longFrom (empty: none).
  std::vector<double> longInvFreq;
  int64_t longFrom = 0;
  double attentionFactor = 1;
  /// Dynamic NTK (0: none): when L > dynamicFrom (max_position_embeddings)
  /// the base becomes base * s^(r / (r - 2)), s = factor * L / dynamicFrom
  /// - (factor - 1), i.e. invFreq[i] * s^(-2i / (r - 2)) (r = rotaryDim).
  double dynamicFactor = 0;
  int64_t dynamicFrom = 0;
  /// The frequencies (radians per position) of a sequence of length len.
  std::vector<double> invFreqAt(int64_t len) const;
};

/// One attention block, in the metadata record's terms (ABI enum values).
struct BlockParams {
  int64_t dModel = 0, heads = 0, kvHeads = 0, headDim = 0;
  uint32_t mask = ATTNC_MASK_NONE;
  bool topLeft = false;
  /// Sliding-window size (attnc_mask_sliding) or chunk size
  /// (attnc_mask_chunked).
  int64_t window = 0;
  uint32_t biasMask = ATTNC_BIAS_Q | ATTNC_BIAS_K | ATTNC_BIAS_V | ATTNC_BIAS_O;
  bool outProj = true;
  /// Projection 'q', 'k', 'v' or 'o' carries a bias.
  bool hasBias(char which) const {
    uint32_t bit = which == 'q'   ? ATTNC_BIAS_Q
                   : which == 'k' ? ATTNC_BIAS_K
                   : which == 'v' ? ATTNC_BIAS_V
                                  : ATTNC_BIAS_O;
    return (biasMask & bit) != 0;
  }
  /// Rotary embedding (ATTNC_FEATURE_ROPE; abi.h's rope_* fields).
  RopeParams rope;
  /// Score modifiers (ATTNC_FEATURE_SCORE_MODS): naive::ScoreMods.
  double softcap = 0;
  std::vector<double> alibiSlopes;
  bool alibiBeforeScale = false;
  /// clip_qkv (abi.h; 0: none): projected q, k, v clamped to [-c, c].
  double clipQkv = 0;
  /// Llama 4's temperature tuning (abi.h temperature_*; floor scale 0:
  /// none): query row at position p times temperatureAt(p).
  int64_t temperatureFloorScale = 0;
  double temperatureAttnScale = 0;
  double temperatureAt(int64_t pos) const;
  /// QK-norm (ATTNC_QK_NORM_*; naive::rmsNorm).
  uint32_t qkNorm = ATTNC_QK_NORM_NONE;
  /// Attention sinks (abi.h `sinks`): the weights table's "sinks" [heads].
  bool sinks = false;
  /// T5's relative bias (abi.h t5_*): "relative_attention_bias.weight".
  int64_t t5Buckets = 0, t5MaxDistance = 0;
  bool t5Bidirectional = false;
  /// BERT's relative_key (abi.h rel_key_*; 0: none): max_position_embeddings
  /// P of "distance_embedding.weight" [2P - 1, head_dim]; relKeyQuery: the
  /// k.E term too (relative_key_query).
  int64_t relKeyPositions = 0;
  bool relKeyQuery = false;
  double qkNormEps = 0, qkNormOffset = 0;
  double scale = 0;   ///< 0 = 1/sqrt(headDim)
  uint32_t layout = ATTNC_LAYOUT_GPT2_CONV1D;
  /// Cross-attention (ATTNC_FEATURE_CROSS): Q from x, K and V from a second
  /// input x_kv [batch, kvSeqLen, dModel].
  bool cross = false;
  /// The attention weights are an output too (ATTNC_FEATURE_PROBS).
  bool wantProbs = false;
  /// Element types (ATTNC_DTYPE_*): the activations' (x, x_kv, y, probs,
  /// the KV cache) and the storage weights'.
  uint32_t dtype = ATTNC_DTYPE_F32, weightDtype = ATTNC_DTYPE_F32;
  /// The block keeps a KV cache (ATTNC_FEATURE_DECODE), stored in dtype:
  /// a decode step attends over keys and values rounded to it.
  bool kvCache = false;
  /// Tensor parallelism (abi.h tp_*): heads and kvHeads are this rank's;
  /// fullHeads, fullKvHeads the block's (0: the same). The storage tensors
  /// are the block's, and the rank reads its heads' rectangles of them.
  int64_t tpSize = 1, tpRank = 0;
  int64_t fullHeads = 0, fullKvHeads = 0;

  int64_t qWidth() const { return heads * headDim; }
  int64_t kvWidth() const { return kvHeads * headDim; }
  int64_t blockHeads() const { return fullHeads ? fullHeads : heads; }
  int64_t blockKvHeads() const { return fullKvHeads ? fullKvHeads : kvHeads; }
  /// The first of the block's query / kv heads this rank computes.
  int64_t firstHead() const { return tpRank * heads; }
  int64_t firstKvHead() const {
    if (tpSize <= 1)
      return 0;
    return blockKvHeads() % tpSize == 0 ? tpRank * kvHeads
                                        : tpRank * heads / (blockHeads() / blockKvHeads());
  }
};

/// One storage tensor: its name as the ecosystem spells it and its shape.
struct TensorShape {
  std::string name;
  std::vector<int64_t> shape;
};

/// Where one compute-layout role lives in the storage tensors. Roles:
/// wq wk wv wo (projection weights, [in, out]), bq bk bv bo (their
/// biases), nq nk (QK-norm weights), ss (sinks), rb (T5's table
/// [buckets, heads]). Element (k, n) of the role is
///   T[rowOff + k][colOff + n]     (plain)
///   T[rowOff + n][colOff + k]     (transposed: T is [out, in])
///   T[colOff + n]                 (vector: rows = 1)
struct RoleRect {
  std::string role;
  int tensor = -1; ///< index into StorageLayout::tensors
  bool transposed = false, vector = false;
  int64_t rowOff = 0, colOff = 0;
  int64_t rows = 0, cols = 0; ///< the role's compute-layout shape
};

/// The storage layout of a block: the tensors NAME_pack takes, in its
/// order, and the rectangle of each role the block has. The one table the
/// compiler's pack plan, the runtime's loader and the reference read.
struct StorageLayout {
  std::vector<TensorShape> tensors;
  std::vector<RoleRect> roles;
  /// The rectangle of `role`, or null when the block has no such role.
  const RoleRect *find(const std::string &role) const;
};
StorageLayout storageLayout(const BlockParams &p);

/// The storage tensors (names and shapes) of a block, in the order the
/// pack entry expects (storageLayout(p).tensors).
std::vector<TensorShape> storageTensors(const BlockParams &p);

/// Every role name, in the order a block lists them.
const std::vector<std::string> &roleNames();

/// The one spelling of each ABI enum value (abi_names.def): kind is
/// "mask", "layout", "dtype", "isa", "feature", "rope_style" or "qk_norm".
/// nameOf returns "unknown" for a value without a name; codeOf false for a
/// spelling that is not one.
const char *nameOf(const char *kind, uint32_t code);
bool codeOf(const char *kind, const std::string &spelling, uint32_t &code);
/// The spellings of `kind`, separated by ", " (for messages).
std::string namesOf(const char *kind);
/// The names of the bits set in `features` ("lengths, decode"; "none").
std::string featureNames(uint32_t features);

/// The per-call inputs of the attention variants, as in attnc_forward_args
/// (docs/abi.md). The default is plain self-attention with every token
/// valid, which is what the entry points without a VariantInputs run.
struct VariantInputs {
  /// [batch] valid query rows per sequence, 0 <= lengths[b] <= seqLen
  /// (null: all); for self-attention also the valid keys. Query rows past
  /// the length give zero y rows.
  const int32_t *lengths = nullptr;
  /// [batch] the position of each sequence's first token (null: 0); what
  /// a rotary embedding rotates token t of sequence b by: positions[b] + t.
  const int32_t *positions = nullptr;
  /// Cross-attention only: K/V input [batch, kvSeqLen, dModel], elements
  /// of the kernel's dtype (the interpreter reads float32).
  const void *xKv = nullptr;
  /// Cross-attention: T_kv (>= 1). Self-attention: 0 or seqLen.
  int64_t kvSeqLen = 0;
  /// Cross-attention only: [batch] valid keys, 0 <= kvLengths[b] <=
  /// kvSeqLen (null: all).
  const int32_t *kvLengths = nullptr;
  /// KV cache to fill (kernels with decode: true; forward only): each
  /// [batch, kv_heads, cacheLen, head_dim], cacheLen >= seqLen. The
  /// interpreter ignores them.
  void *kCache = nullptr;
  void *vCache = nullptr;
  int64_t cacheLen = 0;
  /// The interpreter only (self-attention), for a sequence computed by
  /// several calls (prefill, then NAME_decode): [seqLen] the end of the
  /// call that computed row t (t < end <= seqLen, non-decreasing; null:
  /// one call, seqLen). A rotary embedding whose frequencies follow the
  /// call's length (dynamic NTK, longrope) rotates row t with those of
  /// length positions[b] + end[t], as that call did; cached keys keep them.
  const int64_t *ropeCallEnds = nullptr;
};

/// Empty when `in` fits a block `p` with this batch and seqLen (xKv and a
/// kvSeqLen >= 1 exactly for cross-attention, kvLengths only with it, every
/// length in range); otherwise the reason, naming the offending entry.
/// What interpret() and referenceWithBound() check before running.
std::string checkVariantInputs(const BlockParams &p, int64_t batch,
                               int64_t seqLen, const VariantInputs &in);

/// Bytes of one element of an ATTNC_DTYPE_* (4, 2, 2; 0 for an unknown
/// code).
int64_t dtypeBytes(uint32_t dtype);

/// Storage conversions, round to nearest even as the kernels' arith.truncf
/// (bf16 and f16 as their 16-bit patterns; f32 is copied). NaN stays NaN,
/// values past f16's range become infinities.
void fromFloat(uint32_t dtype, const float *src, void *dst, int64_t n);
void toFloat(uint32_t dtype, const void *src, float *dst, int64_t n);
/// `v` after a round trip through `dtype`.
float roundTo(uint32_t dtype, float v);
/// The first finite element of src that `dtype` cannot hold (f16: |v| >=
/// 65520, bf16: |v| >= 0x1.ffp127, which round to inf; none for f32), or -1.
int64_t firstOutOfRange(uint32_t dtype, const float *src, int64_t n);
/// "float16 range (largest finite 65504)" or "bfloat16 range (largest
/// finite 3.38953e+38)": what firstOutOfRange's element is out of.
const char *storageRangeText(uint32_t dtype);
uint16_t floatToBf16(float v);
float bf16ToFloat(uint16_t h);
uint16_t floatToF16(float v);
float f16ToFloat(uint16_t h);

/// The block a kernel computes, from its metadata (features: cross from
/// ATTNC_FEATURE_CROSS, wantProbs from ATTNC_FEATURE_PROBS).
BlockParams paramsFromInfo(const attnc_kernel_info &info);

} // namespace attnrt

#endif // ATTNC_RUNTIME_BLOCK_H
