//===- AttnOps.td - attn dialect operations ---------------*- tablegen -*-===//
//
// Operations of the attn dialect. Tensors are ranked; leading dimensions of
// activations are [batch, seq] and dynamic. Every op has a verifier that
// rejects inconsistent shapes with a diagnostic naming both sides.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "attnc/Dialect/Attn/IR/AttnBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

def Attn_LinearOp : Attn_Op<"linear", [Pure, AttrSizedOperandSegments]> {
  let summary = "Affine projection y = x·W + b over the last dimension";
  let description = [{
    `input` is [..., K], `weight` is [K, N] (in × out: the compute layout,
    whatever the storage layout of the user's weights), optional `bias` is
    [N]; the result is [..., N]. Leading dimensions pass through. Element
    types are floats and may differ (a bf16 input or weight, a float32
    result): the values are widened exactly, the products and sums are
    float32, and the result is rounded to its type once.

    Optional `rows(%lens)` ([B] i32/i64, for a [B, T, K] input): only rows
    t < lens[b] of the result are defined; the others may hold anything (the
    lowering skips their row blocks). The front end sets it with a padding
    mask, where every later use of those rows is masked.

    Example:
    ```mlir
    %q = attn.linear %x, %wq, %bq
        : (tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>)
          -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Optional<AnyRankedTensor>:$weight,
                       Optional<AnyRankedTensor>:$bias,
                       Optional<RankedTensorOf<[I32, I64]>>:$row_lens);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`rows` `(` $row_lens^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

def Attn_SliceOp : Attn_Op<"slice", [Pure]> {
  let summary = "Columns [offset, offset + size) of the last dimension";
  let description = [{
    Selects a contiguous range of the last dimension (Q, K or V out of a
    fused projection). Value semantics: lowering copies unless
    `attn-heads-as-views` has turned it into an `attn.view`.

    Example:
    ```mlir
    %k = attn.slice %qkv [768, 768] : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$offset,
                       ConfinedAttr<I64Attr, [IntPositive]>:$size);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `[` $offset `,` $size `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// SplitHeadsOp / MergeHeadsOp
//===----------------------------------------------------------------------===//

def Attn_SplitHeadsOp : Attn_Op<"split_heads", [Pure]> {
  let summary = "[B, T, H*D] -> [B, H, T, D]";
  let description = [{
    Splits the last dimension into `heads` heads and moves the head
    dimension before the sequence. Value semantics (a transpose); the
    rewrite `attn-heads-as-views` replaces it with a strided `attn.view`.

    Example:
    ```mlir
    %h = attn.split_heads %q heads(12) : tensor<?x?x768xf32> -> tensor<?x12x?x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$heads);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `heads` `(` $heads `)` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Attn_MergeHeadsOp : Attn_Op<"merge_heads", [Pure]> {
  let summary = "[B, H, T, D] -> [B, T, H*D] (concatenation of the heads)";
  let description = [{
    Inverse of `attn.split_heads`.

    Example:
    ```mlir
    %m = attn.merge_heads %o : tensor<?x12x?x64xf32> -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// SdpaOp
//===----------------------------------------------------------------------===//

def Attn_SdpaOp : Attn_Op<"sdpa", [Pure, AttrSizedOperandSegments]> {
  let summary = "Scaled dot-product attention softmax(Q·Kᵀ·scale + M)·V";
  let description = [{
    `query` is [B, Hq, Tq, D]; `key` and `value` are [B, Hkv, Tkv, D] with
    Hkv dividing Hq (query head h reads kv head h / (Hq / Hkv): MHA, GQA and
    MQA). Tq and Tkv may differ (cross-attention, decode against a cache).
    `mask` selects the additive mask: `causal` masks key j for query i
    unless j <= i + Tkv - Tq (`bottom_right`) or j <= i (`top_left`);
    `sliding_window` also masks j < i + Tkv - Tq - window + 1; `chunked`
    (Llama 4's attention_chunk_size, `window` holding the chunk size C)
    also masks keys of another chunk than the query's position p =
    i + Tkv - Tq: j < floor(p / C) * C; `padding`
    masks keys at or beyond `kv_lens[b]` (an optional [B] i32 or i64
    operand; it may also come with the other masks, where it gives the
    filled rows of a KV cache: `attn.cache_append`'s `lens`), and
    `causal_padding`, `sliding_window_padding` and `chunked_padding` are
    causal, sliding_window and chunked with those lengths. The optional `q_lens` ([B]) gives the valid query rows:
    rows at or beyond it are padding (their values are unspecified; mask
    them with `attn.mask_rows`), and with both operands the bottom-right
    alignment uses the valid lengths (j <= i + kv_lens[b] - q_lens[b], as
    FlashAttention's variable-length form does). A row whose keys are all
    masked produces zeros. Element types are floats and may differ (keys
    and values read from a bf16 KV cache): the scores, the softmax and the
    weighted sum are float32. `layout` is the layout of the result:
    `bhtd` ([B, Hq, Tq, D]) or `bthd` ([B, Tq, Hq, D], heads last, so that
    merging heads is a reshape).

    The score of query i and key j is modified before the mask (the one
    description every kernel and evaluator reads, ScoreMods in the
    compiler, naive::ScoreMods in the reference): with `alibi_slopes`
    ([Hq], ALiBi), `s = scale * q.k + slope[h] * (j - i')` where
    i' = i + Tkv - Tq (bottom-right) or i (top-left) is the query's
    position among the keys, or `s = scale * (q.k + slope[h] * (j - i'))`
    with `alibi_before_scale` (Falcon); the per-row constant that BLOOM's
    `slope * j` and MPT's `slope * (j - L + 1)` differ by cancels in the
    softmax. Then with `softcap` (Gemma 2), `s = softcap * tanh(s /
    softcap)`. The optional `sinks` ([Hq] f32, gpt-oss) adds one term
    `exp(sinks[h])` to each row's softmax denominator, with no value: rows
    then sum to less than 1. The optional `rel_bias` ([buckets, Hq], T5)
    with `rel_buckets` (2R+1 buckets of rel = j - i' for rel in [-R, R],
    the edge buckets beyond) adds `rel_bias[bucket(j - i'), h]` to the score
    after the scale. The optional `rel_emb` ([D, 2P - 1]: BERT's
    `relative_key` distance embedding E [2P - 1, D] transposed, shared by
    the heads) adds `q.E[r]` (and with `rel_key_query` also `k.E[r]`), r =
    i' - j + P - 1 clamped to [0, 2P - 2], to q.k before the scale: `s =
    scale * (q.k + q.E[r] (+ k.E[r]))` (BERT's positions never leave the
    table: a spec's max_seq_len is at most P).

    `dot_type` (optional, bf16 only) allows a kernel to round the scaled
    Q, K, the softmax numerators P and V to bf16 for the two dot products
    Q·Kᵀ and P·V, accumulating in float32 (the AVX512-BF16 flash kernel
    does, on `vdpbf16ps`); the running maximum, the denominator and the
    rescaling stay float32 on unrounded values. Absent: float32 dot
    products. The front end sets it for blocks whose activations are bf16.

    Example:
    ```mlir
    %o = attn.sdpa %q, %k, %v {mask = #attn.mask<causal>, scale = 1.250000e-01 : f64}
        : tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>
          -> tensor<?x12x?x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
                       AnyRankedTensor:$value,
                       Optional<RankedTensorOf<[I32, I64]>>:$kv_lens,
                       Optional<RankedTensorOf<[I32, I64]>>:$q_lens,
                       Optional<RankedTensorOf<[F32, BF16, F16]>>:$sinks,
                       Optional<RankedTensorOf<[F32, BF16, F16]>>:$rel_bias,
                       Optional<RankedTensorOf<[F32, BF16, F16]>>:$rel_emb,
                       Attn_MaskAttr:$mask,
                       F64Attr:$scale,
                       DefaultValuedAttr<Attn_CausalAlignAttr,
                         "::attnc::attn::CausalAlign::bottom_right">:$causal_align,
                       OptionalAttr<I64Attr>:$window,
                       DefaultValuedAttr<Attn_HeadLayoutAttr,
                         "::attnc::attn::HeadLayout::bhtd">:$layout,
                       OptionalAttr<F64Attr>:$softcap,
                       OptionalAttr<DenseF64ArrayAttr>:$alibi_slopes,
                       DefaultValuedAttr<BoolAttr, "false">:$alibi_before_scale,
                       OptionalAttr<DenseI32ArrayAttr>:$rel_buckets,
                       DefaultValuedAttr<BoolAttr, "false">:$rel_key_query,
                       OptionalAttr<TypeAttrOf<BF16>>:$dot_type);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`kv_lens` `(` $kv_lens^ `:` type($kv_lens) `)`)?
    (`q_lens` `(` $q_lens^ `:` type($q_lens) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`rel_bias` `(` $rel_bias^ `:` type($rel_bias) `)`)?
    (`rel_emb` `(` $rel_emb^ `:` type($rel_emb) `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ScaleOp
//===----------------------------------------------------------------------===//

def Attn_ProbsOp : Attn_Op<"probs", [Pure, AttrSizedOperandSegments]> {
  let summary = "The attention weights softmax(Q·Kᵀ·scale + M) of attn.sdpa";
  let description = [{
    The softmax weights [B, Hq, Tq, Tkv] that `attn.sdpa` with the same
    operands and attributes multiplies V by (0 for masked keys and for rows
    at or past `q_lens[b]`): torch's `need_weights=True` per head. An
    inspection output; it costs a Tq x Tkv buffer per head.

    Example:
    ```mlir
    %p = attn.probs %q, %k {mask = #attn.mask<causal>, scale = 1.250000e-01 : f64}
        : tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32> -> tensor<?x12x?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
                       Optional<RankedTensorOf<[I32, I64]>>:$kv_lens,
                       Optional<RankedTensorOf<[I32, I64]>>:$q_lens,
                       Optional<RankedTensorOf<[F32, BF16, F16]>>:$sinks,
                       Optional<RankedTensorOf<[F32, BF16, F16]>>:$rel_bias,
                       Optional<RankedTensorOf<[F32, BF16, F16]>>:$rel_emb,
                       Attn_MaskAttr:$mask,
                       F64Attr:$scale,
                       DefaultValuedAttr<Attn_CausalAlignAttr,
                         "::attnc::attn::CausalAlign::bottom_right">:$causal_align,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap,
                       OptionalAttr<DenseF64ArrayAttr>:$alibi_slopes,
                       DefaultValuedAttr<BoolAttr, "false">:$alibi_before_scale,
                       OptionalAttr<DenseI32ArrayAttr>:$rel_buckets,
                       DefaultValuedAttr<BoolAttr, "false">:$rel_key_query);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $query `,` $key (`kv_lens` `(` $kv_lens^ `:` type($kv_lens) `)`)?
    (`q_lens` `(` $q_lens^ `:` type($q_lens) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`rel_bias` `(` $rel_bias^ `:` type($rel_bias) `)`)?
    (`rel_emb` `(` $rel_emb^ `:` type($rel_emb) `)`)?
    attr-dict `:` type($query) `,` type($key) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_MaskRowsOp : Attn_Op<"mask_rows", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Zero the rows of each sequence past its valid length";
  let description = [{
    `input` is [B, T, N] and `lens` a [B] i32 or i64 tensor of valid
    lengths (right padding): `result[b, t, :] = t < lens[b] ? input[b, t, :]
    : 0`. The output of a padded block: padding rows are zeros, not the
    output projection's bias.

    Example:
    ```mlir
    %y2 = attn.mask_rows %y lens(%lengths : tensor<?xi32>) : tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       RankedTensorOf<[I32, I64]>:$lens);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `lens` `(` $lens `:` type($lens) `)` attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Attn_CacheAppendOp : Attn_Op<"cache_append",
    [Pure, AllTypesMatch<["key", "value"]>,
     AllTypesMatch<["key_cache", "value_cache", "new_key_cache",
                    "new_value_cache"]>]> {
  let summary = "Write new K/V rows into a KV cache at per-sequence positions";
  let description = [{
    `key` and `value` are the new rows [B, Hkv, Tn, D]; `key_cache` and
    `value_cache` are caches [B, Hkv, L, D] (their element type may be
    narrower than the rows': the rows are rounded to it, to nearest
    even); `positions` ([B], i32 or i64,
    optional: all 0) says how many rows of each sequence's cache are
    already filled. The results are the caches with rows
    `[positions[b], positions[b] + Tn)` of sequence b replaced by the new
    rows (all other rows unchanged), and `lens[b] = positions[b] + Tn`, the
    rows now filled, which `attn.sdpa` takes as its `kv_lens`. Requires
    `positions[b] + Tn <= L` (the C entry points check it).

    attn-to-loops writes the rows in place when the caches are function
    arguments: the updated caches are then the caller's buffers (results
    tied to arguments, as IREE's tied operands), and Q is never cached.

    Example (one decode step):
    ```mlir
    %kc2, %vc2, %lens = attn.cache_append %k, %v into %kc, %vc
        at(%pos : tensor<?xi32>)
        : tensor<?x12x1x64xf32>, tensor<?x12x?x64xf32> -> tensor<?xi32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$key, AnyRankedTensor:$value,
                       AnyRankedTensor:$key_cache, AnyRankedTensor:$value_cache,
                       Optional<RankedTensorOf<[I32, I64]>>:$positions);
  let results = (outs AnyRankedTensor:$new_key_cache,
                      AnyRankedTensor:$new_value_cache,
                      RankedTensorOf<[I32]>:$lens);
  let assemblyFormat = [{
    $key `,` $value `into` $key_cache `,` $value_cache
    (`at` `(` $positions^ `:` type($positions) `)`)?
    attr-dict `:` type($key) `,` type($key_cache) `->` type($lens)
  }];
  let hasVerifier = 1;
}

def Attn_RopeOp : Attn_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Rotary position embedding of each head's first rotary_dim dims";
  let description = [{
    `input` is [B, H, T, D] (the queries or keys after the head split).
    Row t of sequence b is at position `p = positions[b] + t` (`positions`
    is an optional [B] i32 or i64 operand; without it p = t). Pair i
    (i < rotary_dim / 2) of each head is rotated by the angle
    `a = p * inv_freq[i]`, with `c = cos(a) * attention_factor`,
    `s = sin(a) * attention_factor`:

        x'[i0] = x[i0] * c - x[i1] * s
        x'[i1] = x[i1] * c + x[i0] * s

    where (i0, i1) = (i, i + rotary_dim/2) (half-split: HF's rotate_half)
    or (2i, 2i + 1) (`interleaved`: GPT-J). Dims at and past rotary_dim
    pass through. `inv_freq` is the frequency table in radians per
    position, computed by the front end from the spec (rope_theta and the
    rope_scaling type); with `long_inv_freq` (longrope), a call whose
    length L, the batch's (max_b positions[b] + T: Hugging Face's
    max(position_ids) + 1), exceeds `long_from` uses that table for every
    sequence. With `dynamic_factor` f > 0 (dynamic NTK), a call whose L
    exceeds `dynamic_from` (max_position_embeddings) uses
    `inv_freq[i] * s^(-2i / (rotary_dim - 2))`, s = f * L / dynamic_from -
    (f - 1): Hugging Face's base * s^(r / (r - 2)), per call.

    Example (Llama: 32 heads of 128, theta 500000):
    ```mlir
    %qr = attn.rope %q {rotary_dim = 128 : i64, interleaved = false,
                        inv_freq = array<f64: 1.0, ...>}
        : tensor<?x32x?x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       Optional<RankedTensorOf<[I32, I64]>>:$positions,
                       ConfinedAttr<I64Attr, [IntPositive]>:$rotary_dim,
                       BoolAttr:$interleaved,
                       DenseF64ArrayAttr:$inv_freq,
                       OptionalAttr<DenseF64ArrayAttr>:$long_inv_freq,
                       DefaultValuedAttr<I64Attr, "0">:$long_from,
                       DefaultValuedAttr<F64Attr, "1.0">:$attention_factor,
                       DefaultValuedAttr<F64Attr, "0.0">:$dynamic_factor,
                       DefaultValuedAttr<I64Attr, "0">:$dynamic_from);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input (`at` `(` $positions^ `:` type($positions) `)`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Attn_TemperatureOp : Attn_Op<"temperature", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Llama 4's attention temperature tuning: query rows scaled by their position";
  let description = [{
    `input` is [B, H, T, D] (the queries after the head split). Row t of
    sequence b is at position `p = positions[b] + t` (`positions` is an
    optional [B] i32 or i64 operand; without it p = t), and every element
    of it is multiplied by

        1 + attn_scale * ln(floor((p + 1) / floor_scale) + 1)

    (Hugging Face's Llama4TextAttention on its layers without RoPE, after
    arXiv 2501.19399): 1 for p < floor_scale - 1, then growing with the
    log of the position, which sharpens the softmax over long contexts.
    On the decode path the new token's row at its cache position.

    Example (Llama 4: floor_scale 8192, attn_scale 0.1):
    ```mlir
    %qt = attn.temperature %q at(%pos : tensor<?xi32>)
        {floor_scale = 8192 : i64, attn_scale = 1.000000e-01 : f64}
        : tensor<?x40x?x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       Optional<RankedTensorOf<[I32, I64]>>:$positions,
                       ConfinedAttr<I64Attr, [IntPositive]>:$floor_scale,
                       F64Attr:$attn_scale);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input (`at` `(` $positions^ `:` type($positions) `)`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Attn_ClipOp : Attn_Op<"clip", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "clip_qkv: each projected query, key and value clamped to [-limit, limit]";
  let description = [{
    `input` is [B, H, T, D] (queries, keys or values after the head split,
    the projection's bias included). Each element becomes
    `min(max(x, -limit), limit)` (MPT, OLMo and DBRX's `clip_qkv`, applied
    to the fused QKV projection's output). Before QK-norm and the rotary
    embedding; on the decode path to the new token's keys and values
    before they enter the cache.

    Example:
    ```mlir
    %qc = attn.clip %q {limit = 8.0 : f64} : tensor<?x16x?x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, F64Attr:$limit);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{ $input attr-dict `:` type($input) }];
  let hasVerifier = 1;
}

def Attn_RmsNormOp : Attn_Op<"rms_norm", [Pure, AllTypesMatch<["input", "result"]>,
                                          AttrSizedOperandSegments]> {
  let summary = "QK-norm: RMSNorm (or LayerNorm) of each head (or all heads) of a token";
  let description = [{
    `input` is [B, H, T, D] (queries or keys after the head split). For each
    token (b, t) and, unless `across_heads`, each head h, with n the
    normalised width (D, or H*D across heads), xc = x (with `center`, a
    LayerNorm: xc = x - mean(x)):

        x' = xc / sqrt(mean(xc^2) + eps) * (weight + weight_offset) + bias

    `weight` is [D], shared by the heads (Qwen3, Gemma 3 with weight_offset
    1, Phi's LayerNorm), [H*D] with `per_head_weight` (one per head:
    StableLM, Cohere; head h reads elements h*D..h*D+D-1), or [H*D] with
    `across_heads` (OLMo 2's norm over the whole projection, element h*D +
    d for head h). Without `weight` the factor is 1 (Llama 4's
    Llama4TextL2Norm: `x * rsqrt(mean(x^2) + eps)`; HF applies it after
    the rotary embedding, which keeps each head's sum of squares, so
    before it is the same). The optional `bias` (Phi's LayerNorm) has the
    weight's shape and needs a weight. Applied before the rotary
    embedding.

    Example:
    ```mlir
    %qn = attn.rms_norm %q, %w {eps = 1.0e-06 : f64}
        : tensor<?x16x?x128xf32>, tensor<128xf32>
    %kn = attn.rms_norm %k, %w, %b {eps = 1.0e-05 : f64, center = true}
        : tensor<?x8x?x64xf32>, tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Optional<AnyRankedTensor>:$weight,
                       Optional<AnyRankedTensor>:$bias,
                       F64Attr:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_offset,
                       DefaultValuedAttr<BoolAttr, "false">:$across_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$center,
                       DefaultValuedAttr<BoolAttr, "false">:$per_head_weight);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input (`,` $weight^)? (`,` $bias^)? attr-dict `:` type($input)
    (`,` type($weight)^)? (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

def Attn_ScaleOp : Attn_Op<"scale", [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise multiplication by a constant factor";
  let description = [{
    `y = x * factor`, used to fold the softmax scale into Q.
    `scale(x, 1.0)` folds to `x`; `scale(scale(x, a), b)` to `scale(x, a*b)`.

    Example:
    ```mlir
    %s = attn.scale %q by 1.250000e-01 : tensor<?x12x?x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, F64Attr:$factor);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($input)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// ViewOp
//===----------------------------------------------------------------------===//

def Attn_ViewOp : Attn_Op<"view", [Pure, AttrSizedOperandSegments]> {
  let summary = "Strided view into the row-major elements of a tensor";
  let description = [{
    `result[i0, ..., in] = flat(source)[offset + sum_k ik * stride_k]`,
    where `flat(source)` is the source in row-major order. Lowers to a
    `memref.reinterpret_cast` of the source buffer: no data moves. Sizes and
    strides are mixed static/dynamic lists like `memref.reinterpret_cast`.
    The verifier keeps the view inside its source: with a static source
    and view, its last element; with dynamic rows (the source's static
    inner dimensions make rows of W elements), an offset in the first row
    and a last column below W along the strides less than W (a dynamic
    stride, or a multiple of W, moves whole rows).

    Example (head h of K inside a fused [B, T, 2304] QKV result):
    ```mlir
    %k = attn.view %qkv[%b, 12, %t, 64] strides [%bs, 64, 2304, 1] offset 768
        : tensor<?x?x2304xf32> -> tensor<?x12x?x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$source,
                       Variadic<Index>:$sizes,
                       Variadic<Index>:$strides,
                       DenseI64ArrayAttr:$static_sizes,
                       DenseI64ArrayAttr:$static_strides,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$offset);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $source custom<DynamicIndexList>($sizes, $static_sizes)
    `strides` custom<DynamicIndexList>($strides, $static_strides)
    `offset` $offset attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Sizes and strides as OpFoldResults (static attrs or SSA values).
    ::llvm::SmallVector<::mlir::OpFoldResult> getMixedSizes();
    ::llvm::SmallVector<::mlir::OpFoldResult> getMixedStrides();
  }];
}

#endif // ATTN_OPS_TD
