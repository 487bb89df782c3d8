#!/usr/bin/env python3
"""Compiled attnc kernels of real-checkpoint attention against float64 NumPy.

Each case is a small block laid out as a Hugging Face checkpoint lays it
out (separate q/k/v/o_proj weights [out, in], the biases the architecture
has), compiled with attnc and run with attnc-run on a given x; y is
compared with a float64 NumPy reference written here from the formulas of
Hugging Face transformers (modeling_rope_utils.py and the models'
attention functions), independently of attnc: ALiBi with BLOOM's and
MPT's own slope constructions (and Falcon-RW's bias inside the scale),
Gemma 2's soft-capping, MPT/OLMo's clip_qkv, QK-norm of Qwen3, Gemma 3 (1 + w) and OLMo 2 (over
the whole projection), gpt-oss's sinks, T5's bucketed bias (the bucket
function in float32 as torch computes it), Llama 4's chunked attention
(attention_chunk_size), its weightless L2 QK-norm (after RoPE, as HF
applies it) and the attention temperature tuning of its NoPE layers,
cross-attention (Mllama's cross_attn: k and v from a second input x_kv),
BERT's relative_key / relative_key_query position embeddings (q . E and
k . E added to q . k before the scale), and batches with right padding
(per-sequence valid lengths, `--lengths`) under a sliding window (Mistral,
Gemma 2) or Llama 4's chunks: each sequence's valid prefix computed alone,
the rows past it zero; the reference computes its own
inverse frequencies from rope_theta and rope_scaling (default,
linear, dynamic NTK, llama3, yarn, longrope), rotates with rotate_half (half-split) or
rotate_every_two (GPT-J, interleaved) on the first rotary_dim dims of each
head, repeats K/V heads for GQA and applies the causal mask.

Every case also checks that the comparison can fail: the same reference
without the rotary embedding (or without the q bias) must be far outside
the tolerance, so a kernel that silently ignored the feature would FAIL;
a chunked mask's chunks, a padded batch's window, Llama 4's L2 QK-norm
and relative_key_query's k . E term are also dropped one at a time
(everything else kept), each of which must fail too.

Tolerance per element: |y_attnc - y_ref| <= 1e-4 + 1e-4 * |y_ref|.

Usage: real_models.py --work DIR [--cuda-on-host | --cuda-device-prepare DIR]
(attnc and attnc-run on PATH). With --cuda-on-host every kernel is the CUDA
target's (attnc --target cuda-sm90 --testing-gpu-on-host: its blocks and
thread regions run one after another on this CPU). One PASS/FAIL line per
case and a closing 'real_models: N passed, M failed' line; exit 1 on a
failure. With --cuda-device-prepare DIR the kernels are built for a GPU
(--target cuda-sm90) and each run, with its input and references, is
recorded in DIR for tests/gpu/cases.py to make there.
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np

ATOL = RTOL = 1e-4


# ---------------------------------------------------------------- reference
def inv_freq_of(r, theta, scaling, seq_len):
    """HF modeling_rope_utils: (inv_freq, attention_factor) for rotated width r."""
    i = np.arange(0, r, 2, dtype=np.float64)
    base = 1.0 / theta ** (i / r)
    kind = (scaling or {}).get("type", "default")
    if kind == "default":
        return base, 1.0
    if kind == "linear":
        return base / scaling["factor"], 1.0
    if kind == "dynamic":  # _compute_dynamic_ntk_parameters
        f, maxp = scaling["factor"], scaling["max_position_embeddings"]
        L = max(seq_len, maxp)
        b = theta * ((f * L / maxp) - (f - 1)) ** (r / (r - 2))
        return 1.0 / b ** (i / r), 1.0
    if kind == "llama3":
        f, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        orig = scaling["original_max_position_embeddings"]
        lo_wl, hi_wl = orig / lo, orig / hi
        wl = 2 * math.pi / base
        out = np.where(wl > lo_wl, base / f, base)
        with np.errstate(divide="ignore", invalid="ignore"):
            # (Llama 4 Scout: low_freq_factor == high_freq_factor, as in
            # HF a division by zero in the branch no dimension takes)
            smooth = (orig / wl - lo) / (hi - lo)
            smoothed = (1 - smooth) * out / f + smooth * out
        medium = ~(wl < hi_wl) & ~(wl > lo_wl)
        return np.where(medium, smoothed, out), 1.0
    if kind == "yarn":
        f, orig = scaling["factor"], scaling["original_max_position_embeddings"]
        bf, bs = scaling.get("beta_fast", 32), scaling.get("beta_slow", 1)
        trunc = scaling.get("truncate", True)

        def corr(rot):
            return (r * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(theta))
        low, high = corr(bf), corr(bs)
        if trunc:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, r - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(r // 2, dtype=np.float64) - low) / (high - low), 0, 1)
        extrap = 1 - ramp
        inv = base / f * (1 - extrap) + base * extrap
        af = scaling.get("attention_factor")
        if af is None:
            af = 0.1 * math.log(f) + 1.0 if f > 1 else 1.0
        return inv, af
    if kind == "longrope":
        orig, maxp = scaling["original_max_position_embeddings"], scaling["max_position_embeddings"]
        ext = np.array(scaling["long_factor"] if seq_len > orig else scaling["short_factor"])
        inv = 1.0 / (ext * theta ** (i / r))
        s = maxp / orig
        af = scaling.get("attention_factor")  # (Phi-MoE: its short_mscale / long_mscale)
        if af is None:
            af = 1.0 if s <= 1 else math.sqrt(1 + math.log(s) / math.log(orig))
        return inv, af
    raise ValueError(kind)


def apply_rope(x, rope, seq_len):
    """x [B, H, T, dh] float64 -> rotated copy (HF apply_rotary_pos_emb)."""
    if rope is None:
        return x
    dh = x.shape[-1]
    r = rope.get("rotary_dim", dh)
    inv, af = inv_freq_of(r, rope.get("theta", 10000.0), rope.get("scaling"), seq_len)
    pos = np.arange(x.shape[2], dtype=np.float64)
    freqs = np.outer(pos, inv)  # [T, r/2]
    rot, rest = x[..., :r], x[..., r:]
    if rope.get("style", "half_split") == "half_split":
        emb = np.concatenate([freqs, freqs], axis=-1)
        cos, sin = np.cos(emb) * af, np.sin(emb) * af
        half = np.concatenate([-rot[..., r // 2:], rot[..., : r // 2]], axis=-1)
    else:  # GPT-J rotate_every_two, cos/sin repeat_interleave(2)
        cos = np.repeat(np.cos(freqs), 2, axis=-1) * af
        sin = np.repeat(np.sin(freqs), 2, axis=-1) * af
        half = np.stack([-rot[..., 1::2], rot[..., 0::2]], axis=-1).reshape(rot.shape)
    return np.concatenate([rot * cos + half * sin, rest], axis=-1)


def bloom_slopes(h):
    """HF models/bloom/modeling_bloom.py build_alibi_tensor's slopes."""
    closest = 2 ** math.floor(math.log2(h))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, 1 + closest)]
    if closest != h:
        extra_base = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        n_rem = min(closest, h - closest)
        slopes += [extra_base ** p for p in range(1, 1 + 2 * n_rem, 2)]
    return np.array(slopes)


def mpt_slopes(h, bias_max):
    """HF models/mpt/modeling_mpt.py build_mpt_alibi_tensor's slopes."""
    n = 2 ** math.ceil(math.log2(h))
    base = np.arange(1, n + 1, dtype=np.float64) * (bias_max / n)
    slopes = 1.0 / 2 ** base
    if n != h:
        slopes = np.concatenate([slopes[1::2], slopes[0::2]])[:h]
    return slopes


def t5_bucket(rel, bidirectional, num_buckets, max_distance):
    """HF models/t5/modeling_t5.py _relative_position_bucket (float32 log as
    torch computes it, then truncation)."""
    rel = np.asarray(rel, dtype=np.int64)
    buckets = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).astype(np.int64) * num_buckets
        rel = np.abs(rel)
    else:
        rel = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    small = rel < max_exact
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (np.log(rel.astype(np.float32) / np.float32(max_exact))
             / np.float32(math.log(max_distance / max_exact)) * np.float32(num_buckets - max_exact))
        large = max_exact + np.where(small, 0, v).astype(np.int64)  # (small: log 0 unused)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(small, rel, large)


def relative_key_scores(w, q, k, P, key_query):
    """HF models/bert/modeling_bert.py BertSelfAttention, position_embedding_type
    relative_key / relative_key_query (forward, no cache): distance_embedding =
    nn.Embedding(2 * max_position_embeddings - 1, head_size), one table for
    all heads; E = distance_embedding(l - r + P - 1) with l = arange(T_q)[:, None],
    r = arange(T_kv)[None, :]; relative_key adds einsum("bhld,lrd->bhlr", q, E)
    to the scores, relative_key_query also einsum("bhrd,lrd->bhlr", k, E).
    q [B, H, T_q, dh], k [B, H, T_kv, dh] float64 -> [B, H, T_q, T_kv]."""
    Tq, Tkv = q.shape[2], k.shape[2]
    assert Tq <= P and Tkv <= P, "distances past max_position_embeddings - 1"
    dist = np.arange(Tq)[:, None] - np.arange(Tkv)[None, :]
    E = w["distance_embedding.weight"].astype(np.float64)[dist + P - 1]  # [T_q, T_kv, dh]
    out = np.einsum("bhld,lrd->bhlr", q, E)
    if key_query:
        out = out + np.einsum("bhrd,lrd->bhlr", k, E)
    return out


def reference(case, w, x, rope=None, bias=None, mods=True, x_kv=None):
    """The block as HF computes it, float64. bias: the projections with a bias.
    x_kv: cross-attention (Mllama's cross_attn): k and v projected from x_kv
    [B, T_kv, d], q from x (no rope there; the case says causal: False)."""
    H, Hkv, dh = case["heads"], case["kv_heads"], case["head_dim"]
    bias = case["bias"] if bias is None else bias
    x = x.astype(np.float64)
    B, T, _ = x.shape
    xkv = x if x_kv is None else x_kv.astype(np.float64)
    Tkv = xkv.shape[1]
    assert x_kv is None or rope is None, "cross-attention without rope only"

    clip = case.get("clip_qkv") if mods else None
    qn = case.get("qk_norm") if mods else None
    after = case.get("clip_after_norm") and qn  # OLMoE: norm, then clamp

    def proj(p, inp):
        y = inp @ w[f"{p}_proj.weight"].astype(np.float64).T
        if p in bias:
            y = y + w[f"{p}_proj.bias"].astype(np.float64)
        if clip and p != "o" and not (after and p in "qk"):
            y = np.clip(y, -clip, clip)  # MPT / OLMo / DBRX: qkv.clamp_(min=-clip, max=clip)
        return y
    q, k = proj("q", x), proj("k", xkv)

    def rms(t, wn):  # HF RMSNorm over the last axis, times (offset + w)
        wn = wn.astype(np.float64) + case.get("norm_offset", 0.0)
        return t / np.sqrt((t * t).mean(axis=-1, keepdims=True) + case.get("eps", 1e-6)) * wn

    def layer(t, wn, bn=None):  # torch LayerNorm over the last axis (biased variance)
        mu = t.mean(axis=-1, keepdims=True)
        var = ((t - mu) ** 2).mean(axis=-1, keepdims=True)
        y = (t - mu) / np.sqrt(var + case.get("eps", 1e-5)) * wn.astype(np.float64)
        return y if bn is None else y + bn.astype(np.float64)
    if qn == "projection":  # OLMo 2: over the whole projection, before the split
        q, k = rms(q, w["q_norm.weight"]), rms(k, w["k_norm.weight"])
        if after:
            q, k = np.clip(q, -clip, clip), np.clip(k, -clip, clip)
    q = q.reshape(B, T, H, dh).transpose(0, 2, 1, 3)
    k = k.reshape(B, Tkv, Hkv, dh).transpose(0, 2, 1, 3)
    if qn == "head":  # Qwen3, Gemma 3: per head, after the split
        q, k = rms(q, w["q_norm.weight"]), rms(k, w["k_norm.weight"])
    if qn == "phi":  # Phi qk_layernorm: nn.LayerNorm(head_dim) with a bias, every head
        q = layer(q, w["q_layernorm.weight"], w["q_layernorm.bias"])
        k = layer(k, w["k_layernorm.weight"], w["k_layernorm.bias"])
    if qn == "stablelm":  # StableLmLayerNormPerHead: one LayerNorm (no bias) per head
        q = np.stack([layer(q[:, h], w[f"q_layernorm.norms.{h}.weight"]) for h in range(H)], 1)
        k = np.stack([layer(k[:, h], w[f"k_layernorm.norms.{h}.weight"]) for h in range(Hkv)], 1)
    if qn == "cohere":  # CohereLayerNorm((heads, head_dim)) on [B, T, H, dh]: per head
        q = np.stack([layer(q[:, h], w["q_norm.weight"][h]) for h in range(H)], 1)
        k = np.stack([layer(k[:, h], w["k_norm.weight"][h]) for h in range(Hkv)], 1)
    v = proj("v", xkv).reshape(B, Tkv, Hkv, dh).transpose(0, 2, 1, 3)
    q, k = apply_rope(q, rope, T), apply_rope(k, rope, T)
    if qn == "l2":  # Llama 4's Llama4TextL2Norm: per head, no weight, AFTER RoPE as HF
        # applies it (the rotation keeps each head's sum of squares)
        eps = case.get("eps", 1e-6)
        q = q / np.sqrt((q * q).mean(axis=-1, keepdims=True) + eps)
        k = k / np.sqrt((k * k).mean(axis=-1, keepdims=True) + eps)
    temp = case.get("temperature") if mods else None
    if temp:  # Llama 4's NoPE layers: each query row times 1 + A log(floor((p + 1) / F) + 1)
        fs, at = temp
        p_q = np.arange(T, dtype=np.float64)  # cache positions 0 .. T-1
        q = q * (1.0 + at * np.log(np.floor((p_q + 1.0) / fs) + 1.0))[None, None, :, None]
    g = H // Hkv
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)  # HF repeat_kv
    dot = q @ k.transpose(0, 1, 3, 2)
    if mods and case.get("relkey"):  # BERT relative_key(_query): before the 1/sqrt(dh)
        P, key_query = case["relkey"]
        dot = dot + relative_key_scores(w, q, k, P, key_query)
    scale = case.get("scale", 1 / math.sqrt(dh))
    s = dot * scale
    alibi = case.get("alibi") if mods else None
    pos = np.arange(T, dtype=np.float64)
    if alibi == "bloom":   # s = QK^T/sqrt(dh) + slope * pos_j
        s = s + bloom_slopes(H)[None, :, None, None] * pos[None, None, None, :]
    elif alibi == "mpt":   # s = QK^T * scale + slope * (j - (L - 1))
        s = s + mpt_slopes(H, case["bias_max"])[None, :, None, None] * (pos - (T - 1))
    elif alibi == "falcon":  # s = (QK^T + slope * pos_j) / sqrt(dh)
        s = (dot + bloom_slopes(H)[None, :, None, None] * pos[None, None, None, :]) * scale
    if mods and case.get("t5"):  # T5: table[bucket(j - i), h], no scale (scale 1)
        nb, md, bi = case["t5"]
        rel = pos[None, :] - pos[:, None]  # memory - context
        b = t5_bucket(rel.astype(np.int64), bi, nb, md)
        table = w["relative_attention_bias.weight"].astype(np.float64)  # [nb, H]
        s = s + table[b].transpose(2, 0, 1)[None]
    if mods and case.get("softcap"):  # Gemma 2: after the scale, before the mask
        cap = case["softcap"]
        s = cap * np.tanh(s / cap)
    if case.get("causal", True):
        vis = np.tril(np.ones((T, T), dtype=bool))
        if case.get("window"):  # HF: kv > q - W (W keys, the query's own included)
            vis &= ~np.tril(np.ones((T, T), dtype=bool), k=-case["window"])
        if case.get("chunk"):  # Llama 4 chunked_attention: the query's own chunk only
            blk = np.arange(T) // case["chunk"]
            vis &= blk[:, None] == blk[None, :]
        s = np.where(vis, s, -np.inf)
    elif case.get("bidi_window"):  # EmbeddingGemma's sliding layers: |q - kv| < W
        i = np.arange(T)
        s = np.where(np.abs(i[:, None] - i[None, :]) < case["bidi_window"], s, -np.inf)
    if mods and case.get("sinks"):  # gpt-oss: a per-head logit, dropped after the softmax
        sk = w["sinks"].astype(np.float64)[None, :, None, None] * np.ones((B, H, T, 1))
        full = np.concatenate([s, sk], axis=-1)
        full = full - full.max(axis=-1, keepdims=True)
        p = np.exp(full)
        p = (p / p.sum(axis=-1, keepdims=True))[..., :-1]
    else:
        s = s - s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(B, T, H * dh)
    return proj("o", o)


def reference_padded(case, w, x, lengths, **kw):
    """reference() per sequence over its valid prefix x[b, :lengths[b]]
    (right padding: positions 0 .. n-1, keys past n never seen), the rows
    past it zero, as attnc writes them. lengths None: reference()."""
    if lengths is None:
        return reference(case, w, x, **kw)
    out = np.zeros((x.shape[0], x.shape[1], case["d"]))
    for b, n in enumerate(lengths):
        if n:
            out[b, :n] = reference(case, w, x[b:b + 1, :n], **kw)[0]
    return out


# -------------------------------------------------------------------- cases
def rope_yaml(rope):
    if rope is None:
        return ""
    if not rope:
        return "rope: {}\n"
    out = "rope:\n"
    for k in ("style", "theta", "rotary_dim"):
        if k in rope:
            out += f"  {k}: {rope[k]}\n"
    sc = rope.get("scaling")
    if sc:
        out += "  scaling:\n"
        for k, v in sc.items():
            if isinstance(v, list):
                v = "[" + ", ".join(repr(float(e)) for e in v) + "]"
            elif isinstance(v, bool):
                v = "true" if v else "false"
            out += f"    {k}: {v}\n"
    return out


PHI3_SHORT = [1.0, 1.05, 1.1, 1.3, 1.6, 2.0, 2.5, 3.0]
PHI3_LONG = [1.0, 1.2, 1.9, 3.1, 5.0, 8.0, 11.0, 14.0]

CASES = [
    # Llama 3.1: GQA, no biases, theta 500000, llama3 scaling.
    dict(name="llama3", d=64, heads=4, kv_heads=2, head_dim=16, bias=[], T=[1, 37, 130],
         rope=dict(theta=500000.0, scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                             "high_freq_factor": 4.0,
                                             "original_max_position_embeddings": 64})),
    # Qwen2: q/k/v biases, no o bias, theta 1e6, GQA.
    dict(name="qwen2", d=48, heads=6, kv_heads=2, head_dim=8, bias=["q", "k", "v"], T=[1, 50],
         rope=dict(theta=1000000.0)),
    # Mistral-style head_dim != d_model / heads (MQA), default theta.
    dict(name="mqa_hd", d=40, heads=4, kv_heads=1, head_dim=12, bias=[], T=[9, 64],
         rope=dict()),
    # GPT-J: interleaved pairs on the first rotary_dim of each head.
    dict(name="gptj", d=64, heads=2, kv_heads=2, head_dim=32, bias=[], T=[5, 70],
         rope=dict(style="interleaved", rotary_dim=8)),
    # GPT-NeoX / Pythia: half-split on a quarter of each head, all biases.
    dict(name="neox", d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v", "o"], T=[3, 66],
         rope=dict(rotary_dim=4)),
    # Phi-2: partial 0.4 (32 of 80 in the real model; 8 of 20 here), biases.
    dict(name="phi2", d=40, heads=2, kv_heads=2, head_dim=20, bias=["q", "k", "v", "o"], T=[17],
         rope=dict(rotary_dim=8)),
    # Gemma 3 global layers: linear factor 8.
    dict(name="linear", d=32, heads=2, kv_heads=1, head_dim=16, bias=[], T=[40],
         rope=dict(theta=1000000.0, scaling={"type": "linear", "factor": 8.0})),
    # gpt-oss: yarn factor 32, truncate false, all biases.
    dict(name="yarn", d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"], T=[33],
         rope=dict(theta=150000.0, scaling={"type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                             "beta_slow": 1.0, "truncate": False,
                                             "original_max_position_embeddings": 4096})),
    # Phi-3 longrope: short factors at T <= 32, long ones past it.
    dict(name="longrope", d=48, heads=3, kv_heads=3, head_dim=16, bias=[], T=[20, 45],
         rope=dict(scaling={"type": "longrope", "short_factor": PHI3_SHORT,
                            "long_factor": PHI3_LONG, "original_max_position_embeddings": 32,
                            "max_position_embeddings": 128})),
    # Dynamic NTK (Llama 2 / NeoX / Falcon option): theta as is up to
    # max_position_embeddings 32, a larger base for T = 70.
    dict(name="dynamic", d=64, heads=4, kv_heads=2, head_dim=16, bias=[], T=[20, 70],
         rope=dict(scaling={"type": "dynamic", "factor": 2.0, "max_position_embeddings": 32})),
    # The same on a partial rotary (GPT-NeoX: rotary_pct), factor 4.
    dict(name="dynamic_neox", d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v", "o"],
         T=[90], rope=dict(rotary_dim=8, scaling={"type": "dynamic", "factor": 4.0,
                                                  "max_position_embeddings": 24})),
    # BLOOM: ALiBi with a head count that is not a power of two.
    dict(name="bloom", d=60, heads=5, kv_heads=5, head_dim=12, bias=["q", "k", "v", "o"], T=[1, 40],
         rope=None, alibi="bloom", yaml="alibi: true\n"),
    # MPT: alibi_bias_max 4 (not BLOOM's 8), 6 heads.
    dict(name="mpt", d=48, heads=6, kv_heads=6, head_dim=8, bias=[], T=[23],
         rope=None, alibi="mpt", bias_max=4.0, yaml="alibi:\n  bias_max: 4\n"),
    # Falcon-RW: ALiBi added before the 1/sqrt(dh) scale.
    dict(name="falcon_rw", d=64, heads=4, kv_heads=4, head_dim=16, bias=[], T=[30],
         rope=None, alibi="falcon", yaml="alibi:\n  before_scale: true\n"),
    # Gemma 2: soft-capping (a small cap so that it bites), query_pre_attn_scalar
    # scale, RoPE, GQA.
    dict(name="gemma2", d=64, heads=4, kv_heads=2, head_dim=32, bias=[], T=[50],
         rope=dict(), softcap=2.0, scale=1 / math.sqrt(24),
         yaml="softcap: 2.0\nscale: 0.2041241452319315\n"),
    # Qwen3: per-head RMSNorm of q and k before RoPE.
    dict(name="qwen3", d=64, heads=4, kv_heads=2, head_dim=32, bias=[], T=[1, 45],
         rope=dict(theta=1000000.0), qk_norm="head", eps=1e-6,
         yaml="qk_norm:\n  width: head\n  eps: 1.0e-6\n"),
    # Gemma 3: per head with (1 + w), query_pre_attn_scalar.
    dict(name="gemma3", d=64, heads=4, kv_heads=1, head_dim=16, bias=[], T=[33],
         rope=dict(theta=10000.0), qk_norm="head", eps=1e-6, norm_offset=1.0,
         scale=1 / math.sqrt(32), yaml="qk_norm:\n  width: head\n  weight_offset: 1\n"
                                       "scale: 0.17677669529663687\n"),
    # Phi (qk_layernorm: true): LayerNorm(head_dim) with weight and bias,
    # shared by the heads (q_layernorm / k_layernorm), partial rotary.
    dict(name="phi_qkln", d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v", "o"],
         T=[1, 37], rope=dict(rotary_dim=8), qk_norm="phi", eps=1e-5,
         yaml="qk_norm:\n  width: head\n  type: layer\n  bias: true\n  eps: 1.0e-5\n"),
    # StableLM (qk_layernorm: true): one LayerNorm per head (no bias),
    # q_layernorm.norms.N.weight, GQA.
    dict(name="stablelm", d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v"],
         T=[41], rope=dict(rotary_dim=4), qk_norm="stablelm", eps=1e-5,
         yaml="qk_norm:\n  width: head\n  type: layer\n  weight: per_head\n  eps: 1.0e-5\n"),
    # Cohere (use_qk_norm: true): LayerNorm with a [heads, head_dim] weight,
    # interleaved RoPE.
    dict(name="cohere", d=64, heads=4, kv_heads=2, head_dim=16, bias=[], T=[35],
         rope=dict(style="interleaved"), qk_norm="cohere", eps=1e-5,
         yaml="qk_norm:\n  width: head\n  type: layer\n  weight: per_head\n  eps: 1.0e-5\n"),
    # OLMoE: RMSNorm over the whole projections, then clip_qkv (0.6 bites
    # after the norm: the normalised values are about N(0, 1) times w).
    dict(name="olmoe", d=48, heads=3, kv_heads=3, head_dim=16, bias=[], T=[31],
         rope=dict(theta=10000.0), qk_norm="projection", eps=1e-5, clip_qkv=0.6,
         clip_after_norm=True,
         yaml="qk_norm:\n  width: projection\n  eps: 1.0e-5\nclip_qkv: 0.6\n"),
    # OLMo 2: RMSNorm over the whole q (H*dh) and k (Hkv*dh) projections.
    dict(name="olmo2", d=48, heads=3, kv_heads=3, head_dim=16, bias=[], T=[29],
         rope=dict(theta=500000.0), qk_norm="projection", eps=1e-5,
         yaml="qk_norm:\n  width: projection\n  eps: 1.0e-5\n"),
    # gpt-oss: sinks, yarn (factor 32, truncate false), all biases, a sliding
    # window of 8 (T = 30 crosses it).
    dict(name="gpt_oss", d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
         T=[30], window=8, sinks=True,
         rope=dict(theta=150000.0, scaling={"type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                             "beta_slow": 1.0, "truncate": False,
                                             "original_max_position_embeddings": 4096}),
         yaml="sinks: true\n"),
    # T5 encoder: bidirectional buckets (32, max_distance 20 so that T = 60
    # reaches the logarithmic and the saturated buckets), no scale, no biases.
    dict(name="t5_enc", d=48, heads=4, kv_heads=4, head_dim=16, bias=[], T=[60], rope=None,
         causal=False, t5=(32, 20, True), scale=1.0,
         yaml="scale: 1\nt5_bias:\n  num_buckets: 32\n  max_distance: 20\n"),
    # T5 decoder self-attention: causal buckets.
    dict(name="t5_dec", d=48, heads=4, kv_heads=4, head_dim=8, bias=[], T=[45], rope=None,
         t5=(16, 24, False), scale=1.0,
         yaml="scale: 1\nt5_bias:\n  num_buckets: 16\n  max_distance: 24\n  bidirectional: false\n"),
    # OLMo (1): clip_qkv (0.9 bites: the projections are about N(0, 1)),
    # RoPE, GQA, biases on.
    dict(name="olmo_clip", d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
         T=[1, 41], rope=dict(theta=10000.0), clip_qkv=0.9, yaml="clip_qkv: 0.9\n"),
    # MPT with clip_qkv: ALiBi and the clamp together.
    dict(name="mpt_clip", d=48, heads=6, kv_heads=6, head_dim=8, bias=[], T=[23],
         rope=None, alibi="mpt", bias_max=8.0, clip_qkv=0.5,
         yaml="alibi:\n  bias_max: 8\nclip_qkv: 0.5\n"),
    # Whisper: no rope, k_proj without a bias, bidirectional.
    dict(name="whisper", d=48, heads=4, kv_heads=4, head_dim=12, bias=["q", "v", "o"], T=[21],
         rope=None, causal=False),
    # Llama 4 (Scout) RoPE layers: chunked attention (attention_chunk_size 16:
    # T = 37 spans three chunks, T = 130 crosses the CUDA 64-query blocks and
    # 32-key tiles, some of them wholly outside a block's chunks), interleaved
    # pairs over the whole head, llama3 scaling with low_freq_factor ==
    # high_freq_factor as Scout's config has it, and the weightless L2
    # QK-norm (eps rms_norm_eps), which HF applies after RoPE.
    dict(name="llama4_rope", d=64, heads=4, kv_heads=2, head_dim=16, bias=[], T=[1, 37, 130],
         rope=dict(style="interleaved", theta=500000.0,
                   scaling={"type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 1.0, "original_max_position_embeddings": 64}),
         qk_norm="l2", eps=1e-5, chunk=16,
         yaml="qk_norm:\n  width: head\n  weight: none\n  eps: 1.0e-5\n"),
    # Llama 4 NoPE layers: full causal attention, no rope, no QK-norm, the
    # attention temperature tuning (floor_scale 8 so that it bites: the
    # query rows at positions 7 .. 99 scaled by 1.07 .. 1.26), MQA.
    dict(name="llama4_nope", d=64, heads=4, kv_heads=1, head_dim=16, bias=[], T=[1, 37, 100],
         rope=None, temperature=(8, 0.1),
         yaml="temperature_tuning:\n  floor_scale: 8\n  attn_scale: 0.1\n"),
    # Llama 4 (Maverick-like) RoPE layer without QK-norm (use_qk_norm false),
    # attention_bias on all four projections, chunks of 8 (several in one
    # key tile), no rope scaling.
    dict(name="llama4_bias", d=48, heads=6, kv_heads=2, head_dim=8, bias=["q", "k", "v", "o"],
         T=[37], rope=dict(style="interleaved", theta=500000.0), chunk=8),
    # BERT position_embedding_type "relative_key" (max_position_embeddings 16:
    # distance_embedding [31, head_dim]; T = 16 reaches both ends of the
    # table), all four biases, bidirectional (BertSelfAttention).
    dict(name="bert_relkey", d=32, heads=4, kv_heads=4, head_dim=8, bias=["q", "k", "v", "o"],
         T=[1, 9, 16], rope=None, causal=False, relkey=(16, False)),
    # "relative_key_query" (q . E and k . E), head_dim 12, P = 20.
    dict(name="bert_relkeyq", d=48, heads=4, kv_heads=4, head_dim=12,
         bias=["q", "k", "v", "o"], T=[1, 13, 20], rope=None, causal=False, relkey=(20, True)),
    # relative_key_query under a causal mask (the term is independent of the
    # mask), P = 72 larger than T; T = 37 crosses the CUDA 32-key tiles, T = 70
    # the 64-query blocks.
    dict(name="relkeyq_causal", d=32, heads=2, kv_heads=2, head_dim=16,
         bias=["q", "k", "v", "o"], T=[37, 70], rope=None, relkey=(72, True)),
    # Batches with right padding (mask sliding_window+padding / chunked+padding,
    # lengths per sequence: the full T, about 2/3 of it, 1, and 0 with T = 100)
    # Mistral: a window of 6, GQA, rope theta 1e6.
    dict(name="mistral_pad", d=64, heads=4, kv_heads=2, head_dim=16, bias=[], T=[37, 100],
         rope=dict(theta=1000000.0), window=6, padding=True),
    # Gemma 2's local layers: the window with soft-capping and its scalar.
    dict(name="gemma2_pad", d=64, heads=4, kv_heads=2, head_dim=32, bias=[], T=[50],
         rope=dict(), window=9, softcap=2.0, scale=1 / math.sqrt(24), padding=True,
         yaml="softcap: 2.0\nscale: 0.2041241452319315\n"),
    # Llama 4's RoPE layers: chunks of 16 with padding lengths.
    dict(name="llama4_pad", d=64, heads=4, kv_heads=2, head_dim=16, bias=[], T=[70],
         rope=dict(style="interleaved", theta=500000.0), chunk=16, padding=True),
    # EmbeddingGemma's sliding layers: keys on both sides, |q - kv| < 5
    # (sliding_window 8 halved, + 1), Gemma 3's (1 + w) QK-norm; T = 70
    # crosses the x86 query blocks and the CUDA tiles on both edges.
    dict(name="embgemma_pad", d=64, heads=4, kv_heads=2, head_dim=16, bias=[], T=[9, 70],
         rope=dict(), bidi_window=5, causal=False, padding=True, qk_norm="head", eps=1e-6,
         norm_offset=1.0, yaml="qk_norm:\n  width: head\n  eps: 1.0e-6\n  weight_offset: 1\n"),
]


def lengths_of(c, T):
    """Valid lengths of a padded case's batch (None: no padding)."""
    if not c.get("padding"):
        return None
    return [T, max(1, 2 * T // 3), 1] + ([0] if T >= 100 else [])


def spec_of(c):
    bias = "[" + ", ".join(c["bias"]) + "]"
    mask = "causal" if c.get("causal", True) else "none"
    pad = "+padding" if c.get("padding") else ""
    if c.get("window"):
        mask = f"sliding_window{pad}\nwindow: {c['window']}"
    if c.get("chunk"):
        mask = f"chunked{pad}\nchunk: {c['chunk']}"
    if c.get("bidi_window"):
        mask = f"bidirectional_window{pad}\nwindow: {c['bidi_window']}"
    rel = ""
    if c.get("relkey"):  # BERT position_embedding_type relative_key(_query)
        P, key_query = c["relkey"]
        rel = f"relative_key:\n  max_position_embeddings: {P}\n"
        if key_query:
            rel += "  key_query: true\n"
    return (f"name: {c['name']}\nd_model: {c['d']}\nheads: {c['heads']}\n"
            f"kv_heads: {c['kv_heads']}\nhead_dim: {c['head_dim']}\nmask: {mask}\n"
            f"weights: separate\nbias: {bias}\n" + rope_yaml(c["rope"]) + c.get("yaml", "")
            + rel)


def weights_of(c, rng):
    d, qw, kvw = c["d"], c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"]
    shapes = {"q": (qw, d), "k": (kvw, d), "v": (kvw, d), "o": (d, qw)}
    w = {}
    for p, sh in shapes.items():
        w[f"{p}_proj.weight"] = (rng.standard_normal(sh) / math.sqrt(sh[1])).astype(np.float32)
        if p in c["bias"]:
            w[f"{p}_proj.bias"] = (0.5 * rng.standard_normal(sh[0])).astype(np.float32)
    if c.get("sinks"):
        w["sinks"] = (1.5 * rng.standard_normal(c["heads"])).astype(np.float32)
    if c.get("t5"):
        w["relative_attention_bias.weight"] = rng.standard_normal(
            (c["t5"][0], c["heads"])).astype(np.float32)
    if c.get("relkey"):  # BERT distance_embedding.weight [2P - 1, head_dim], all heads
        w["distance_embedding.weight"] = (0.5 * rng.standard_normal(
            (2 * c["relkey"][0] - 1, c["head_dim"]))).astype(np.float32)
    if c.get("qk_norm") in ("phi", "stablelm", "cohere"):
        for p, n in (("q", c["heads"]), ("k", c["kv_heads"])):
            dh = c["head_dim"]
            if c["qk_norm"] == "phi":
                w[f"{p}_layernorm.weight"] = (1 + 0.3 * rng.standard_normal(dh)).astype(np.float32)
                w[f"{p}_layernorm.bias"] = (0.3 * rng.standard_normal(dh)).astype(np.float32)
            elif c["qk_norm"] == "stablelm":
                for h in range(n):
                    w[f"{p}_layernorm.norms.{h}.weight"] = (
                        1 + 0.3 * rng.standard_normal(dh)).astype(np.float32)
            else:
                w[f"{p}_norm.weight"] = (1 + 0.3 * rng.standard_normal((n, dh))).astype(np.float32)
    elif c.get("qk_norm") and c["qk_norm"] != "l2":  # (Llama 4's L2 norm has no weight)
        for p, width in (("q", qw), ("k", kvw)):
            n = width if c["qk_norm"] == "projection" else c["head_dim"]
            w[f"{p}_norm.weight"] = (1 + 0.3 * rng.standard_normal(n)).astype(np.float32)
    return w


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--cuda-on-host", action="store_true",
                    help="the CUDA target's kernels, built for this CPU")
    ap.add_argument("--cuda-device-prepare", metavar="DIR",
                    help="build for a GPU and record the runs in DIR (tests/gpu/cases.py)")
    a = ap.parse_args()
    target = ["--target", "cuda-sm90", "--testing-gpu-on-host"] if a.cuda_on_host else []
    rec = None
    if a.cuda_device_prepare:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
        from cases import Recorder
        rec = Recorder(a.cuda_device_prepare)
        a.work = os.path.join(rec.root, "real_models")
        target = ["--target", "cuda-sm90"]
    os.makedirs(a.work, exist_ok=True)
    rng = np.random.default_rng(7)
    passed = failed = 0
    for c in CASES:
        d = os.path.join(a.work, c["name"])
        os.makedirs(os.path.join(d, "w"), exist_ok=True)
        with open(os.path.join(d, "spec.yaml"), "w") as f:
            f.write(spec_of(c))
        lib = os.path.join(d, f"lib{c['name']}.so")
        w = weights_of(c, rng)
        for n, t in w.items():
            np.save(os.path.join(d, "w", n + ".npy"), t)
        try:
            run(["attnc", os.path.join(d, "spec.yaml"), "-o", lib] + target)
        except RuntimeError as e:
            print(f"FAIL: {c['name']}: {e}")
            failed += 1
            continue
        for T in c["T"]:
            lens = lengths_of(c, T)
            x = rng.standard_normal((len(lens) if lens else 2, T, c["d"])).astype(np.float32)
            xp, yp = os.path.join(d, f"x{T}.npy"), os.path.join(d, f"y{T}.npy")
            np.save(xp, x)
            label = f"{c['name']} T={T}" + (f" lengths={lens}" if lens else "")
            lens_arg = ["--lengths", ",".join(map(str, lens))] if lens else []
            ref = reference_padded(c, w, x, lens, rope=c["rope"])
            if rec is None:
                try:
                    run(["attnc-run", lib, "--weights", os.path.join(d, "w"), "--x", xp,
                         "--out", yp] + lens_arg)
                except RuntimeError as e:
                    print(f"FAIL: {label}: {e}")
                    failed += 1
                    continue
                y = np.load(yp).astype(np.float64)
            else:
                y = ref  # recorded below, judged on the GPU machine
            err = np.abs(y - ref)
            ok = bool(np.all(err <= ATOL + RTOL * np.abs(ref)))
            # The same comparison must fail without the feature under test.
            scored = (c.get("alibi") or c.get("softcap") or c.get("qk_norm") or c.get("sinks")
                      or c.get("t5") or c.get("clip_qkv") or c.get("temperature")
                      or c.get("relkey"))
            sc = (c["rope"] or {}).get("scaling") or {}
            # dynamic NTK past max_position_embeddings: without its scaling
            unscaled = (sc.get("type") == "dynamic" and T > sc["max_position_embeddings"])
            wrong = (reference_padded(c, w, x, lens, mods=False) if scored
                     else reference_padded(c, w, x, lens, rope={k: v for k, v in c["rope"].items()
                                                   if k != "scaling"}) if unscaled
                     else reference_padded(c, w, x, lens, rope=None) if c["rope"] is not None
                     else reference_padded(c, w, x, lens, bias=[b for b in c["bias"] if b != "q"]))
            werr = np.abs(y - wrong)
            # (one token sits at position 0, where the rotation is the
            # identity and ALiBi's bias is 0)
            trivial = T == 1 and (c["rope"] is not None or scored)
            detects = trivial or bool(np.any(werr > ATOL + RTOL * np.abs(wrong)))
            # Features checked on their own as well (everything else kept):
            # the chunks of a chunked mask (where T spans more than one) and
            # Llama 4's L2 QK-norm.
            also = []
            if c.get("chunk") and T > c["chunk"]:
                also.append(("the chunks", reference_padded(dict(c, chunk=None), w, x, lens,
                                                            rope=c["rope"])))
            if c.get("padding") and c.get("window") and T > c["window"]:
                also.append(("the window", reference_padded(dict(c, window=None), w, x, lens,
                                                            rope=c["rope"])))
            if c.get("bidi_window") and T > c["bidi_window"]:  # each side of it
                also.append(("the window", reference_padded(dict(c, bidi_window=None), w, x,
                                                            lens, rope=c["rope"])))
                also.append(("the keys ahead", reference_padded(
                    dict(c, bidi_window=None, causal=True, window=c["bidi_window"]), w, x, lens,
                    rope=c["rope"])))
            if c.get("qk_norm") == "l2" and T > 1:
                also.append(("the L2 norm", reference_padded(dict(c, qk_norm=None), w, x, lens,
                                                             rope=c["rope"])))
            if c.get("relkey") and c["relkey"][1] and T > 1:  # relative_key_query's k . E
                also.append(("the key term", reference_padded(
                    dict(c, relkey=(c["relkey"][0], False)), w, x, lens, rope=c["rope"])))
            also_err = [(what, float(np.abs(y - r).max()),
                         bool(np.any(np.abs(y - r) > ATOL + RTOL * np.abs(r)))) for what, r in also]
            detects = detects and all(d for _, _, d in also_err)
            also_txt = "".join(f", without {what}: {e:.2e}" for what, e, _ in also_err)
            if rec is not None:
                rp, wp = os.path.join(d, f"ref{T}.npy"), os.path.join(d, f"wrong{T}.npy")
                np.save(rp, ref)
                np.save(wp, wrong)
                rec.add(f"real_models {label}",
                        [lib, "--weights", os.path.join(d, "w"), "--x", xp, "--out", yp] + lens_arg,
                        kind="compare", out=yp, ref=rp, wrong=wp, atol=ATOL, rtol=RTOL,
                        trivial=bool(trivial))
                print(f"RECORDED: {label}")
                continue
            if ok and detects:
                passed += 1
                print(f"PASS: {label}: max err {err.max():.2e} (without "
                      f"{'the feature' if scored else 'the scaling' if unscaled else 'rope' if c['rope'] is not None else 'the q bias'}: "
                      f"{werr.max():.2e}{also_txt})")
            else:
                failed += 1
                why = "outside the tolerance" if not ok else "the check could not fail"
                print(f"FAIL: {label}: {why}: max err {err.max():.2e}, without the "
                      f"feature {werr.max():.2e}{also_txt}")
    if rec is not None:
        print(f"real_models: {rec.n} runs recorded in {rec.root}, {failed} failed to compile")
        return 1 if failed else 0
    print(f"real_models: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
