//===- Spec.h - The validated attention-block spec -------------*- C++ -*-===//
//
// The in-memory form of a YAML spec (docs/spec.md) after parsing and
// validation. Every field carries the YAML position it came from so later
// stages (MLIRGen) can attach FileLineColLoc locations to the IR they emit.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SPEC_SPEC_H
#define ATTNC_SPEC_SPEC_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnc {

/// A 1-based position in the spec file (0 = unknown).
struct SrcPos {
  int line = 0;
  int col = 0;
};

/// The `*Padding` kinds are their base kind with per-sequence valid lengths.
enum class MaskKind {
  None,
  Causal,
  Padding,
  CausalPadding,
  SlidingWindow,
  Chunked,
  SlidingWindowPadding,
  ChunkedPadding,
  BidirectionalWindow, ///< |i' - j| < window: keys on both sides (EmbeddingGemma)
  BidirectionalWindowPadding
};
constexpr MaskKind kLastMaskKind = MaskKind::BidirectionalWindowPadding; ///< (for loops over the kinds)
enum class WeightLayout { Gpt2Conv1D, TorchInProj, Separate };
/// Element types: float32, bfloat16 (float32's top half, rounded to
/// nearest even), IEEE binary16.
enum class DType { F32, BF16, F16 };
enum class CausalAlign { BottomRight, TopLeft };

/// A C identifier (ASCII letters, digits, '_'; not starting with a digit):
/// what a kernel's name must be, since it prefixes every exported symbol.
bool isCIdentifier(const std::string &s);
const char *toString(MaskKind m);      ///< "none", "causal", ...
/// The mask kind a spec spells `name` ("causal+padding", ...), if any.
std::optional<MaskKind> maskKindNamed(const std::string &name);
/// What a mask kind is made of (Spec::paddingMask etc. ask these).
bool maskHasLengths(MaskKind m); ///< takes per-sequence valid lengths
bool maskIsSliding(MaskKind m);  ///< a window (`window`), one-sided or bidirectional
bool maskIsBidirectional(MaskKind m); ///< a window that reaches window - 1 keys ahead too
bool maskIsChunked(MaskKind m);  ///< chunks of `chunk` positions
bool maskIsCausal(MaskKind m);   ///< no query sees a later key
/// m with per-sequence valid lengths added (causal -> causal+padding).
MaskKind maskWithLengths(MaskKind m);
const char *toString(WeightLayout w);  ///< "gpt2_conv1d", ...
const char *toString(DType d);         ///< "f32", "bf16", "f16"
const char *toString(CausalAlign a);   ///< "bottom_right", "top_left"

/// Which projections carry a bias: one bit each (Spec::biasMask; the same
/// bits as ATTNC_BIAS_* in abi.h).
enum BiasBit : unsigned { BiasQ = 1u, BiasK = 2u, BiasV = 4u, BiasO = 8u };
constexpr unsigned kAllBiases = BiasQ | BiasK | BiasV | BiasO;

/// Rotary position embeddings (docs/spec.md, "rope"): how dimension pairs
/// are formed, and what the frequency table is built from.
enum class RopeStyle { None, HalfSplit, Interleaved };
const char *toString(RopeStyle r); ///< "none", "half_split", "interleaved"

/// The rope mapping of a spec, as written (defaults resolved).
struct RopeSpec {
  RopeStyle style = RopeStyle::None;
  double theta = 10000;   ///< rope_theta (the base)
  int64_t rotaryDim = 0;  ///< rotated dims per head (even; head_dim if absent)
  /// rope_scaling type: default, linear, dynamic, llama3, yarn, longrope.
  std::string scaling = "default";
  double factor = 1;
  double lowFreqFactor = 1, highFreqFactor = 4; ///< llama3
  double betaFast = 32, betaSlow = 1;           ///< yarn
  bool truncate = true;                         ///< yarn
  std::optional<double> attentionFactor;        ///< yarn, longrope
  std::optional<double> mscale, mscaleAllDim;   ///< yarn
  int64_t originalMaxPos = 0; ///< original_max_position_embeddings
  int64_t maxPos = 0;         ///< max_position_embeddings (longrope, dynamic)
  std::vector<double> shortFactor, longFactor; ///< longrope, rotary_dim/2 each
};

/// What the kernels compute RoPE from (computed once, at compile time):
/// position p rotates pair i by the angle p * invFreq[i]; cos and sin are
/// multiplied by attentionFactor. With longrope, calls whose length L (the
/// largest position + 1) exceeds longFrom use longInvFreq instead. With
/// dynamic NTK (dynamicFactor > 0), a call of length L > dynamicFrom
/// uses invFreq[i] * s^(-2i/(r-2)), s = factor * L / dynamicFrom -
/// (factor - 1): HF's base * s^(r/(r-2)), computed per call by the kernel.
struct RopeTables {
  std::vector<double> invFreq, longInvFreq;
  int64_t longFrom = 0;
  double attentionFactor = 1;
  double dynamicFactor = 0;
  int64_t dynamicFrom = 0;
};

/// A validated spec. All sizes are positive and consistent:
/// heads % kvHeads == 0; weights use d_model as the model width and
/// heads*headDim as the attention width.
struct Spec {
  std::string file;       ///< path as given (for diagnostics only)
  std::string name;       ///< C identifier
  int64_t dModel = 0;
  int64_t heads = 0;
  int64_t kvHeads = 0;    ///< defaults to heads
  int64_t headDim = 0;    ///< defaults to dModel / heads
  MaskKind mask = MaskKind::None;
  CausalAlign causalAlign = CausalAlign::BottomRight;
  int64_t window = 0;     ///< sliding windows: the window; chunked: the chunk
  unsigned biasMask = kAllBiases; ///< BiasBit per projection with a bias
  bool outProj = true;
  RopeSpec rope;                  ///< style None: no rotary embedding
  bool alibi = false;             ///< ALiBi slopes (BLOOM, MPT, Falcon-RW)
  double alibiBiasMax = 8;        ///< MPT's alibi_bias_max
  bool alibiBeforeScale = false;  ///< Falcon-RW: the bias inside the scale
  std::optional<double> softcap;  ///< Gemma 2: cap * tanh(s / cap)
  /// MPT / OLMo / DBRX clip_qkv: the projected q, k, v clamped to
  /// [-clipQkv, clipQkv] (bias included), before the rotary embedding;
  /// with a QK-norm after it (OLMoE: q and k normalised, then clamped).
  std::optional<double> clipQkv;
  /// QK-norm: RMSNorm (or, qkNormLayer, LayerNorm: the mean subtracted
  /// first) of q and k before the rotary embedding, over each head (Qwen3,
  /// Gemma 3, Phi, StableLM, Cohere) or over the whole projection (OLMo 2,
  /// OLMoE), times (w + qkNormOffset) (Gemma 3: 1), plus a bias
  /// (qkNormBias: Phi's LayerNorm). The weight is [head_dim], shared by the
  /// heads, or with qkNormPerHead one per head [heads, head_dim] (StableLM,
  /// Cohere); over the projection [heads * head_dim].
  enum class QkNorm { None, Head, Projection } qkNorm = QkNorm::None;
  double qkNormEps = 1e-6;
  double qkNormOffset = 0;
  bool qkNormLayer = false;
  bool qkNormPerHead = false;
  bool qkNormBias = false;
  bool qkNormNoWeight = false; ///< weight: none (Llama 4's L2 norm)
  /// Llama 4's attention temperature tuning on its NoPE layers: the query
  /// at position p times 1 + attnScale * ln(floor((p + 1) / floorScale) + 1).
  struct Temperature {
    int64_t floorScale = 8192;
    double attnScale = 0.1;
  };
  std::optional<Temperature> temperature;
  bool sinks = false; ///< gpt-oss: a learned logit per head in the softmax
  /// T5's bucketed relative position bias (0 buckets: none): the table
  /// relative_attention_bias.weight [buckets, heads] indexed by the bucket
  /// of j - i.
  int64_t t5Buckets = 0, t5MaxDistance = 128;
  bool t5Bidirectional = true;
  /// BERT's relative_key (0: none): max_position_embeddings P; the
  /// distance embedding distance_embedding.weight [2P - 1, head_dim] E adds
  /// q.E[i - j + P - 1] (relKeyQuery, relative_key_query: and k.E[...]) to
  /// q.k before the scale.
  int64_t relKeyPositions = 0;
  bool relKeyQuery = false;
  std::optional<double> scale; ///< nullopt = auto (1/sqrt(headDim))
  WeightLayout weights = WeightLayout::Gpt2Conv1D;
  int64_t maxSeqLen = 0;  ///< 0 = unbounded
  /// The activations' element type (x, x_kv, y, probs, the KV cache) and
  /// the storage weights' (and the packed panels'); weightDtype defaults
  /// to dtype. Arithmetic is float32 whatever they are.
  DType dtype = DType::F32;
  DType weightDtype = DType::F32;
  std::vector<std::string> outputs{"y"};
  bool decode = false;
  bool crossAttention = false;
  /// Tensor parallelism (tensor_parallel: {size, rank}): this kernel is
  /// rank tpRank's share of a Megatron-style split over tpSize ranks. After
  /// validation heads and kvHeads are the rank's own (heads / size; the kv
  /// heads split too when size divides them, else the one kv head the
  /// rank's query heads share), fullHeads and fullKvHeads the block's.
  int64_t tpSize = 1, tpRank = 0;
  int64_t fullHeads = 0, fullKvHeads = 0;

  /// Positions of every key that was present (for IR locations).
  std::map<std::string, SrcPos> keyPos;
  /// Positions of the values of every key that was present (for diagnostics
  /// that point at a value). Elements of `outputs` are recorded as
  /// "outputs[0]", "outputs[1]", ... A key given with no value maps to the
  /// key's own position.
  std::map<std::string, SrcPos> valuePos;

  double effectiveScale() const;        ///< scale or 1/sqrt(headDim)
  /// Projection `p` ('q', 'k', 'v' or 'o') carries a bias (in the block:
  /// its checkpoint has the tensor).
  bool hasBias(char p) const {
    unsigned bit = p == 'q' ? BiasQ : p == 'k' ? BiasK : p == 'v' ? BiasV : BiasO;
    return (biasMask & bit) != 0;
  }
  /// This kernel adds projection p's bias: with tensor parallelism the
  /// row-parallel W_O's bias is rank 0's alone (the ranks' outputs are
  /// summed).
  bool kernelHasBias(char p) const { return hasBias(p) && (p != 'o' || tpRank == 0); }
  /// The first of the block's kv heads this rank reads.
  int64_t firstKvHead() const;
  bool hasRope() const { return rope.style != RopeStyle::None; }
  int64_t qWidth() const { return heads * headDim; }
  int64_t kvWidth() const { return kvHeads * headDim; }
  /// A padding mask: the kernel takes per-sequence valid lengths.
  bool paddingMask() const { return maskHasLengths(mask); }
  /// A sliding window (`window`), with or without padding lengths.
  bool slidingMask() const { return maskIsSliding(mask); }
  /// Chunks of `window` positions, with or without padding lengths.
  bool chunkedMask() const { return maskIsChunked(mask); }
  /// No query sees a later key (every mask but none and padding).
  bool causalMask() const { return maskIsCausal(mask); }
  /// `outputs` asks for the attention weights too.
  bool wantsProbs() const {
    for (const std::string &o : outputs)
      if (o == "probs")
        return true;
    return false;
  }
  SrcPos posOf(const std::string &key) const; ///< {0,0} when absent
  /// Position of the value of `key` ({0,0} when absent).
  SrcPos valuePosOf(const std::string &key) const;
};

/// Result of parsing: either a spec or one located error message of the form
/// "FILE:LINE:COL: error: KEY: what was expected, what was found".
struct SpecResult {
  std::optional<Spec> spec;
  std::string error;
  explicit operator bool() const { return spec.has_value(); }
};

/// Parses and validates YAML text. `file` is used only in messages.
/// Never throws.
SpecResult parseSpecString(const std::string &text, const std::string &file);

/// Reads `path` and parses it. Never throws.
SpecResult parseSpecFile(const std::string &path);

/// A stable 64-bit FNV-1a hash of the spec's semantic fields (not the file
/// name or key positions): equal specs hash equal across runs and machines.
uint64_t specHash(const Spec &spec);

/// The rope.scaling keys a scaling type reads besides `type` (spec.md's
/// table), or nullptr for an unknown type: another key would be ignored.
const std::vector<std::string> *ropeScalingKeys(const std::string &type);

/// The frequency table of `spec.rope` (HF modeling_rope_utils formulas, in
/// double precision). Empty invFreq when the spec has no rope.
RopeTables ropeTables(const Spec &spec);

/// The factor cos and sin are multiplied by (RopeTables::attentionFactor):
/// yarn's and longrope's, given or derived (from factor and mscale /
/// mscale_all_dim, or from the lengths); 1 otherwise. Needs no tables.
double ropeAttentionFactor(const Spec &spec);

/// The ALiBi slope of each query head (BLOOM's build_alibi_tensor and MPT's
/// build_mpt_alibi_tensor, which agree: n = 2^floor(log2 H); head h < n has
/// 2^(-bias_max (h+1) / n), the others 2^(-bias_max (2(h-n)+1) / (2n))).
/// Empty without alibi.
std::vector<double> alibiSlopes(const Spec &spec);

/// attnc --hf: the spec of one attention module of a Hugging Face model
/// directory (DIR/config.json, dispatched on model_type; docs/models.md).
/// `module` is the module as the checkpoint's tensor names spell it
/// ("model.layers.5.self_attn"); empty: the `layer`-th self-attention of a
/// decoder-only model. `sets` are "KEY=VALUE" overrides of top-level keys,
/// applied to the derived YAML. On success `yaml` is the spec text and
/// `weightsPrefix` the module's tensor-name prefix ("model.layers.5.self_attn.");
/// otherwise `error` is one message. Never throws. `readers.tensorNames`,
/// when given, lists the tensor names in DIR (the tools pass
/// attnrt::checkpointTensorNames; this library reads no weight file): with
/// `layer`, a checkpoint that saved the module under another root than the
/// model's own gets the module that is there (Checkpoint.h), and the
/// kernel's name follows it.
struct HfSpec {
  std::string yaml, weightsPrefix, error;
  /// What the tool should tell the user about the import (one line each,
  /// "note: ..."), e.g. a --set that drops the checkpoint's causal mask.
  std::vector<std::string> notes;
};
using TensorNamesFn =
    std::function<bool(const std::string &dir, std::vector<std::string> &names)>;
/// Whether config.json's text is JSON; false with what is wrong and the
/// byte where (the tools pass attnrt::checkJson). Without it the YAML
/// reader's own check is all: it takes comments, trailing commas and
/// single quotes, which Python's json (transformers) refuses.
using JsonCheckFn =
    std::function<bool(const std::string &text, std::string &why, uint64_t &errorByte)>;
/// What the import reads through the runtime (this library links none).
struct HfReaders {
  TensorNamesFn tensorNames;
  JsonCheckFn checkJson;
};
HfSpec specFromHf(const std::string &dir, const std::string &module, int64_t layer,
                  const std::vector<std::string> &sets, const HfReaders &readers = {});

/// T5's bucket (HF _relative_position_bucket, in float32 as torch computes
/// it) of rel = j - i for rel in [-maxDistance, maxDistance] (entry
/// rel + maxDistance); every |rel| >= maxDistance has the edge bucket.
std::vector<int32_t> t5BucketTable(int64_t buckets, int64_t maxDistance,
                                   bool bidirectional);

/// Returns "" when this version of attnc can lower `spec`, otherwise one
/// located error for the first feature that parses and validates but cannot
/// be lowered yet (decode: true together with cross_attention: true), e.g.
/// "FILE:LINE:COL: error: decode: true with cross_attention: true is not
/// supported by this version of attnc (...)". Never throws.
std::string unsupportedFeature(const Spec &spec);

/// Canonical YAML-like dump of the semantic fields (used by attnc-dump's
/// `spec` stage).
std::string printSpec(const Spec &spec);

} // namespace attnc

#endif // ATTNC_SPEC_SPEC_H
