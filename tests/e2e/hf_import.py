#!/usr/bin/env python3
"""attnc --hf end to end on small checkpoints laid out as Hugging Face lays
them out: config.json (the architecture's own keys) and model.safetensors
with the checkpoint's tensor names (several layers, other modules' tensors
beside them), for each architecture attnc --hf knows. For each: attnc --hf
DIR --module PATH --emit-spec, attnc-run LIB --hf DIR --module PATH --x ...
--out ..., and y against the float64 NumPy reference of real_models.py
(rope, biases, ALiBi and soft-capping written from the HF formulas, the
config's values read by this script, not by attnc; Llama 4's per-layer
choices -- no_rope_layers, layer_types, use_qk_norm, attention_chunk_size,
attn_temperature_tuning -- resolved here as Llama4TextConfig resolves
them; Jamba's, Phi-3.5-MoE's, Mllama's, RecurrentGemma's, Granite 4.0-H's,
Bamba's, LFM2's and DBRX's modules likewise from their config classes' keys
and defaults, Mllama's cross_attn with its cross-attention states as
--x-kv; BERT's and RoBERTa's position_embedding_type relative_key and
relative_key_query with the layer's own attention.self.distance_embedding
table). Also the modules attnc --hf refuses (exit 2: a Jamba, Granite 4.0-H
or Bamba Mamba layer, Phi-MoE mscales that differ, Mllama's self_attn /
cross_attn on the other kind of layer, a RecurrentGemma recurrent layer, an
LFM2 conv layer), --layer, --set and the errors for unknown and
not-yet-supported model types.

Usage: hf_import.py --work DIR (attnc, attnc-run on PATH).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import real_models  # noqa: E402
import attnc  # noqa: E402
from attnc import save_safetensors  # noqa: E402

ATOL = RTOL = 1e-4
# CASES compile with attnc's default target (the multi library: every x86
# code path, one chosen at load); the others for this CPU's path alone
# (--target host): attnc-run runs one path, and what these cases check is
# the import, not the paths (tests/e2e/matrix.py, dtypes.py run each).
ONE_PATH = ["--target", "host"]

# name: (config, module, reference case, tensor names of the module)
LLAMA_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                 "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
# The same scaling as the reference (real_models.py) spells it.
REF_LLAMA_SCALING = {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
CASES = [
    dict(name="llama", module="model.layers.1.self_attn",
         config=dict(model_type="llama", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=3, rope_theta=500000.0,
                     rope_scaling=LLAMA_SCALING, max_position_embeddings=256),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[],
                  rope=dict(theta=500000.0, scaling=REF_LLAMA_SCALING)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="qwen2", module="model.layers.0.self_attn",
         config=dict(model_type="qwen2", hidden_size=48, num_attention_heads=6,
                     num_key_value_heads=2, num_hidden_layers=2, rope_theta=1000000.0,
                     use_sliding_window=False, sliding_window=4096),
         ref=dict(d=48, heads=6, kv_heads=2, head_dim=8, bias=["q", "k", "v"],
                  rope=dict(theta=1000000.0)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="gemma2", module="model.layers.1.self_attn",
         config=dict(model_type="gemma2", hidden_size=32, num_attention_heads=2,
                     num_key_value_heads=1, head_dim=32, num_hidden_layers=2,
                     query_pre_attn_scalar=24, attn_logit_softcapping=3.0,
                     sliding_window=8, rope_theta=10000.0),
         # layer 1 is odd: global attention
         ref=dict(d=32, heads=2, kv_heads=1, head_dim=32, bias=[], rope=dict(),
                  softcap=3.0, scale=1 / math.sqrt(24)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="phi", module="model.layers.0.self_attn",
         config=dict(model_type="phi", hidden_size=40, num_attention_heads=2,
                     num_hidden_layers=1, partial_rotary_factor=0.4, rope_theta=10000.0,
                     qk_layernorm=False),
         ref=dict(d=40, heads=2, kv_heads=2, head_dim=20, bias=["q", "k", "v", "o"],
                  rope=dict(rotary_dim=8)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "dense"}),
    dict(name="gptj", module="transformer.h.2.attn",
         config=dict(model_type="gptj", n_embd=64, n_head=2, n_layer=3, rotary_dim=8),
         ref=dict(d=64, heads=2, kv_heads=2, head_dim=32, bias=[],
                  rope=dict(style="interleaved", rotary_dim=8)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj"}),
    dict(name="whisper", module="model.encoder.layers.1.self_attn",
         config=dict(model_type="whisper", d_model=48, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_layers=2, decoder_layers=2),
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=12, bias=["q", "v", "o"], rope=None,
                  causal=False),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj"}),
    dict(name="bert", module="bert.encoder.layer.1.attention",
         config=dict(model_type="bert", hidden_size=32, num_attention_heads=4,
                     num_hidden_layers=2, position_embedding_type="absolute"),
         ref=dict(d=32, heads=4, kv_heads=4, head_dim=8, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names={"q": "self.query", "k": "self.key", "v": "self.value", "o": "output.dense"}),
    dict(name="opt", module="model.decoder.layers.0.self_attn",
         config=dict(model_type="opt", hidden_size=32, num_attention_heads=2,
                     num_hidden_layers=1, enable_bias=True),
         ref=dict(d=32, heads=2, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"], rope=None),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj"}),
]


# The reference of the Phi-3 cases: longrope, its long factors past 32.
PHI3_REF = dict(d=48, heads=3, kv_heads=3, head_dim=16, bias=[],
                rope=dict(scaling={"type": "longrope", "short_factor": real_models.PHI3_SHORT,
                                   "long_factor": real_models.PHI3_LONG,
                                   "original_max_position_embeddings": 32,
                                   "max_position_embeddings": 128}))
FUSED_CASES = [
    # Persimmon: per-head [H, 3, dh] query_key_value, `dense`, partial rotary
    # 0.5, theta 25000, qk_layernorm (default on): LayerNorm(head_dim) with
    # weight and bias on every head.
    dict(name="persimmon", module="model.layers.1.self_attn", layout="per_head",
         fused="query_key_value", o="dense",
         config=dict(model_type="persimmon", hidden_size=64, num_attention_heads=4,
                     num_hidden_layers=2, layer_norm_eps=1e-5),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(theta=25000.0, rotary_dim=8), qk_norm="phi", eps=1e-5)),
    # GPT-NeoX / Pythia: per-head [H, 3, dh] query_key_value, rotary_pct 0.25.
    dict(name="gpt_neox", module="gpt_neox.layers.0.attention", layout="per_head",
         fused="query_key_value", o="dense",
         config=dict(model_type="gpt_neox", hidden_size=64, num_attention_heads=4,
                     num_hidden_layers=1, rotary_pct=0.25, rotary_emb_base=10000),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(rotary_dim=4))),
    # GPT-NeoX with dynamic NTK scaling past max_position_embeddings 24 (T = 37).
    dict(name="neox_dynamic", module="gpt_neox.layers.0.attention", layout="per_head",
         fused="query_key_value", o="dense",
         config=dict(model_type="gpt_neox", hidden_size=64, num_attention_heads=4,
                     num_hidden_layers=1, rotary_pct=0.5, rotary_emb_base=10000,
                     max_position_embeddings=24,
                     rope_scaling={"type": "dynamic", "factor": 3.0}),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(rotary_dim=8, scaling={"type": "dynamic", "factor": 3.0,
                                                   "max_position_embeddings": 24}))),
    # BLOOM: per-head query_key_value, ALiBi with 5 heads (not a power of two).
    dict(name="bloom", module="transformer.h.1.self_attention", layout="per_head",
         fused="query_key_value", o="dense",
         config=dict(model_type="bloom", hidden_size=60, n_head=5, n_layer=2),
         ref=dict(d=60, heads=5, kv_heads=5, head_dim=12, bias=["q", "k", "v", "o"],
                  rope=None, alibi="bloom"),
         # BloomAttention adds the residual itself; the kernel does not
         note="BloomAttention returns dense(attention) + the residual"),
    # A BLOOM checkpoint saved from BloomModel (bigscience/bloom-560m): the
    # tensors without the 'transformer.' root (attnc --layer finds them).
    dict(name="bloom_bare", module="h.1.self_attention", layout="per_head",
         fused="query_key_value", o="dense",
         # (bigscience/bloom-560m's spelling: BloomConfig's attribute_map
         # and n_embed keyword)
         config=dict(model_type="bloom", n_embed=48, num_attention_heads=4, n_layer=2),
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=12, bias=["q", "k", "v", "o"],
                  rope=None, alibi="bloom"),
         note="BloomAttention returns dense(attention) + the residual"),
    # Falcon-7B: multi-query [q | k | v], rope, no biases.
    dict(name="falcon7b", module="transformer.h.0.self_attention", layout="qkv",
         fused="query_key_value", o="dense",
         config=dict(model_type="falcon", hidden_size=64, num_attention_heads=4,
                     num_hidden_layers=1, multi_query=True, bias=False),
         ref=dict(d=64, heads=4, kv_heads=1, head_dim=16, bias=[], rope=dict())),
    # Falcon-40B: new_decoder_architecture, groups [Hkv, G + 2, dh].
    dict(name="falcon40b", module="transformer.h.0.self_attention", layout="grouped",
         fused="query_key_value", o="dense",
         config=dict(model_type="falcon", hidden_size=64, num_attention_heads=8,
                     num_kv_heads=2, num_hidden_layers=1, new_decoder_architecture=True,
                     bias=False),
         ref=dict(d=64, heads=8, kv_heads=2, head_dim=8, bias=[], rope=dict())),
    # InternLM2 / 2.5 (remote code): wqkv in Falcon-40B's groups [kv_heads,
    # G + 2, head_dim], wo, biases with `bias`; dynamic NTK past
    # max_position_embeddings 24 (T = 37), as its
    # InternLM2DynamicNTKScalingRotaryEmbedding computes it.
    dict(name="internlm2", module="model.layers.1.attention", layout="grouped",
         fused="wqkv", o="wo",
         config=dict(model_type="internlm2", hidden_size=64, num_attention_heads=8,
                     num_key_value_heads=2, num_hidden_layers=2, bias=False,
                     rope_theta=1000000.0),
         ref=dict(d=64, heads=8, kv_heads=2, head_dim=8, bias=[],
                  rope=dict(theta=1000000.0))),
    dict(name="internlm2_dynamic", module="model.layers.0.attention", layout="grouped",
         fused="wqkv", o="wo",
         config=dict(model_type="internlm2", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=4, num_hidden_layers=1, bias=True,
                     rope_theta=10000.0, max_position_embeddings=24,
                     rope_scaling={"type": "dynamic", "factor": 2.0}),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(theta=10000.0, scaling={"type": "dynamic", "factor": 2.0,
                                                    "max_position_embeddings": 24}))),
    # Falcon-RW: ALiBi inside the scale, per-head layout, biases.
    dict(name="falcon_rw", module="transformer.h.0.self_attention", layout="per_head",
         fused="query_key_value", o="dense",
         config=dict(model_type="falcon", hidden_size=64, num_attention_heads=4,
                     num_hidden_layers=1, multi_query=False, alibi=True, bias=True,
                     rope_theta=10000.0),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=None, alibi="falcon"),
         # FalconConfig saves rope_theta even with alibi, which has no
         # rotation: no warning about a missing rope
         quiet=True),
    # Phi-3: qkv_proj [q | k | v], GQA, longrope (the long factors past 32).
    dict(name="phi3", module="model.layers.0.self_attn", layout="qkv", fused="qkv_proj",
         o="o_proj",
         config=dict(model_type="phi3", hidden_size=48, num_attention_heads=3,
                     num_key_value_heads=3, num_hidden_layers=1, rope_theta=10000.0,
                     sliding_window=2047, max_position_embeddings=128,
                     original_max_position_embeddings=32,
                     rope_scaling={"type": "longrope", "short_factor": real_models.PHI3_SHORT,
                                   "long_factor": real_models.PHI3_LONG}),
         ref=PHI3_REF),
    # MPT: Wqkv [q | k | v], ALiBi with alibi_bias_max, no biases.
    dict(name="mpt", module="transformer.blocks.0.attn", layout="qkv", fused="Wqkv",
         o="out_proj",
         config=dict(model_type="mpt", d_model=48, n_heads=6, n_layers=1,
                     attn_config={"alibi": True, "alibi_bias_max": 4}),
         ref=dict(d=48, heads=6, kv_heads=6, head_dim=8, bias=[], rope=None, alibi="mpt",
                  bias_max=4.0)),
    # MPT with attn_config.clip_qkv (the fused Wqkv output clamped), and
    # no_bias false: Wqkv's and out_proj's biases, as MosaicML's code adds
    # them (transformers' MptAttention drops them), with a note.
    dict(name="mpt_clip", module="transformer.blocks.0.attn", layout="qkv", fused="Wqkv",
         o="out_proj",
         config=dict(model_type="mpt", d_model=48, n_heads=6, n_layers=1, no_bias=False,
                     attn_config={"alibi": True, "clip_qkv": 0.6}),
         ref=dict(d=48, heads=6, kv_heads=6, head_dim=8, bias=["q", "k", "v", "o"], rope=None,
                  alibi="mpt", bias_max=8.0, clip_qkv=0.6),
         import_note="no_bias is false: the kernel adds Wqkv's and out_proj's biases"),
    # MPT trained with MosaicML's grouped-query attention (attn_type,
    # kv_n_heads): Wqkv [q | k | v] with kv_n_heads kv heads.
    dict(name="mpt_gqa", module="transformer.blocks.0.attn", layout="qkv", fused="Wqkv",
         o="out_proj",
         config=dict(model_type="mpt", d_model=48, n_heads=6, n_layers=1,
                     attn_config={"attn_type": "grouped_query_attention", "kv_n_heads": 2}),
         ref=dict(d=48, heads=6, kv_heads=2, head_dim=8, bias=[], rope=None, alibi="mpt",
                  bias_max=8.0)),
    # GPT-BigCode / SantaCoder: multi-query Linear c_attn [q | k | v], biases.
    dict(name="gpt_bigcode", module="transformer.h.0.attn", layout="qkv", fused="c_attn",
         o="c_proj",
         config=dict(model_type="gpt_bigcode", n_embd=64, n_head=4, n_layer=1, multi_query=True),
         ref=dict(d=64, heads=4, kv_heads=1, head_dim=16, bias=["q", "k", "v", "o"], rope=None)),
    # scale_attn_weights false: GPTBigCodeAttention's scores unscaled.
    dict(name="gpt_bigcode_noscale", module="transformer.h.0.attn", layout="qkv",
         fused="c_attn", o="c_proj",
         config=dict(model_type="gpt_bigcode", n_embd=64, n_head=4, n_layer=1,
                     multi_query=True, scale_attn_weights=False),
         ref=dict(d=64, heads=4, kv_heads=1, head_dim=16, bias=["q", "k", "v", "o"], rope=None,
                  scale=1.0)),
    # Phi-3's legacy rope_scaling type "yarn": Phi3Config reads it as
    # longrope (the factor lists), not YaRN.
    dict(name="phi3_yarn_name", module="model.layers.0.self_attn", layout="qkv",
         fused="qkv_proj", o="o_proj", T=45,
         config=dict(model_type="phi3", hidden_size=48, num_attention_heads=3,
                     num_key_value_heads=3, num_hidden_layers=1, rope_theta=10000.0,
                     max_position_embeddings=128, original_max_position_embeddings=32,
                     rope_scaling={"type": "yarn", "short_factor": real_models.PHI3_SHORT,
                                   "long_factor": real_models.PHI3_LONG}),
         ref=PHI3_REF),
    # Phi-3 without max_position_embeddings: Phi3Config's default 4096 sets
    # longrope's attention factor (sqrt(1 + ln(4096/32) / ln 32)).
    dict(name="phi3_maxpos_default", module="model.layers.0.self_attn", layout="qkv",
         fused="qkv_proj", o="o_proj", T=45,
         config=dict(model_type="phi3", hidden_size=48, num_attention_heads=3,
                     num_key_value_heads=3, num_hidden_layers=1, rope_theta=10000.0,
                     original_max_position_embeddings=32,
                     rope_scaling={"type": "longrope", "short_factor": real_models.PHI3_SHORT,
                                   "long_factor": real_models.PHI3_LONG}),
         ref=dict(PHI3_REF, rope=dict(scaling=dict(PHI3_REF["rope"]["scaling"],
                                                   max_position_embeddings=4096))),
         import_note="max_position_embeddings not in the file, the configuration class's "
              "default 4096 (read by rope_scaling type longrope)"),
]


T5_CONFIG = dict(model_type="t5", d_model=48, d_kv=16, num_heads=4, num_layers=3,
                 num_decoder_layers=3, relative_attention_num_buckets=32,
                 relative_attention_max_distance=20)
NORM_CASES = [
    # LayerNorm QK-norms: Phi's qk_layernorm (weight and bias, every head),
    # StableLM's (one LayerNorm per head: q_layernorm.norms.N), Cohere's
    # use_qk_norm ([heads, head_dim] weights); OLMoE's clip_qkv after its
    # QK-norm.
    dict(name="phi_qkln", module="model.layers.1.self_attn",
         config=dict(model_type="phi", hidden_size=64, num_attention_heads=4,
                     num_hidden_layers=2, partial_rotary_factor=0.5, rope_theta=10000.0,
                     qk_layernorm=True, layer_norm_eps=1e-5),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(rotary_dim=8), qk_norm="phi", eps=1e-5),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "dense"}),
    dict(name="stablelm_qkln", module="model.layers.0.self_attn",
         config=dict(model_type="stablelm", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=1, rope_theta=10000.0,
                     use_qkv_bias=True, qk_layernorm=True, layer_norm_eps=1e-5),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v"],
                  rope=dict(theta=10000.0, rotary_dim=4), qk_norm="stablelm", eps=1e-5),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="cohere_qkn", module="model.layers.0.self_attn",
         config=dict(model_type="cohere", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=1, rope_theta=10000.0,
                     use_qk_norm=True, layer_norm_eps=1e-5),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[],
                  rope=dict(theta=10000.0, style="interleaved"), qk_norm="cohere", eps=1e-5),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="olmoe_clip", module="model.layers.0.self_attn",
         config=dict(model_type="olmoe", hidden_size=48, num_attention_heads=3,
                     num_hidden_layers=1, rope_theta=10000.0, rms_norm_eps=1e-5,
                     clip_qkv=0.6),
         ref=dict(d=48, heads=3, kv_heads=3, head_dim=16, bias=[], rope=dict(theta=10000.0),
                  qk_norm="projection", eps=1e-5, clip_qkv=0.6, clip_after_norm=True),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    # T5: encoder block 2 reads the table block 0 owns; decoder self-attention
    # with causal buckets (its own table in decoder block 0).
    dict(name="t5_enc", module="encoder.block.2.layer.0.SelfAttention", config=T5_CONFIG,
         table_owner="encoder.block.0.layer.0.SelfAttention",
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=16, bias=[], rope=None, causal=False,
                  t5=(32, 20, True), scale=1.0),
         names={"q": "q", "k": "k", "v": "v", "o": "o"}),
    dict(name="t5_dec", module="decoder.block.0.layer.0.SelfAttention", config=T5_CONFIG,
         table_owner="decoder.block.0.layer.0.SelfAttention",
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=16, bias=[], rope=None,
                  t5=(32, 20, False), scale=1.0),
         names={"q": "q", "k": "k", "v": "v", "o": "o"}),
    # gpt-oss: layer 1 is full attention (layer_types), sinks, yarn, biases.
    dict(name="gpt_oss", module="model.layers.1.self_attn",
         config=dict(model_type="gpt_oss", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                     sliding_window=8, layer_types=["sliding_attention", "full_attention"],
                     rope_theta=150000.0, attention_bias=True,
                     rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                   "beta_slow": 1.0, "truncate": False,
                                   "original_max_position_embeddings": 4096}),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"], sinks=True,
                  rope=dict(theta=150000.0, scaling={"type": "yarn", "factor": 32.0,
                                                     "beta_fast": 32.0, "beta_slow": 1.0,
                                                     "truncate": False,
                                                     "original_max_position_embeddings": 4096})),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    # gpt-oss with the keys its published configs carry left out:
    # GptOssConfig's rope_theta 150000 and yarn (factor 32, truncate false);
    # layer 1 is full attention (the default layer_types alternate).
    dict(name="gpt_oss_defaults", module="model.layers.1.self_attn",
         config=dict(model_type="gpt_oss", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=2),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"], sinks=True,
                  rope=dict(theta=150000.0, scaling={"type": "yarn", "factor": 32.0,
                                                     "beta_fast": 32.0, "beta_slow": 1.0,
                                                     "truncate": False,
                                                     "original_max_position_embeddings": 4096})),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="qwen3", module="model.layers.0.self_attn",
         config=dict(model_type="qwen3", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=32, num_hidden_layers=1,
                     rope_theta=1000000.0, rms_norm_eps=1e-6),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=32, bias=[], rope=dict(theta=1000000.0),
                  qk_norm="head", eps=1e-6),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    # Gemma 3 (text): layer 5 is global (pattern 6), rope_theta with linear 8;
    # layer 0 local (rope_local_base_freq, a window of 512 > T).
    dict(name="gemma3", module="model.layers.5.self_attn",
         config=dict(model_type="gemma3_text", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=1, head_dim=16, num_hidden_layers=6,
                     query_pre_attn_scalar=32, rms_norm_eps=1e-6, sliding_window=512,
                     sliding_window_pattern=6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                     rope_scaling={"rope_type": "linear", "factor": 8.0}),
         ref=dict(d=64, heads=4, kv_heads=1, head_dim=16, bias=[], qk_norm="head", eps=1e-6,
                  norm_offset=1.0, scale=1 / math.sqrt(32),
                  rope=dict(theta=1000000.0, scaling={"type": "linear", "factor": 8.0})),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="gemma3_local", module="model.layers.0.self_attn",
         config=dict(model_type="gemma3_text", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=1, head_dim=16, num_hidden_layers=6,
                     query_pre_attn_scalar=32, rms_norm_eps=1e-6, sliding_window=512,
                     sliding_window_pattern=6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                     rope_scaling={"rope_type": "linear", "factor": 8.0}),
         ref=dict(d=64, heads=4, kv_heads=1, head_dim=16, bias=[], qk_norm="head", eps=1e-6,
                  norm_offset=1.0, scale=1 / math.sqrt(32), rope=dict(theta=10000.0)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    # EmbeddingGemma (gemma3_text, use_bidirectional_attention): no causal
    # mask; a sliding layer (layer_types) sees |q - kv| < 8 // 2 + 1 = 5;
    # attn_logit_softcapping is set and, as in HF's Gemma 3, not applied.
    dict(name="embgemma_local", module="model.layers.0.self_attn",
         config=dict(model_type="gemma3_text", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                     query_pre_attn_scalar=16, rms_norm_eps=1e-6, sliding_window=8,
                     use_bidirectional_attention=True, attn_logit_softcapping=2.0,
                     layer_types=["sliding_attention", "full_attention"],
                     rope_theta=1000000.0, rope_local_base_freq=10000.0),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], qk_norm="head", eps=1e-6,
                  norm_offset=1.0, scale=0.25, causal=False, bidi_window=5,
                  rope=dict(theta=10000.0)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="embgemma_global", module="model.layers.1.self_attn",
         config=dict(model_type="gemma3_text", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                     query_pre_attn_scalar=16, rms_norm_eps=1e-6, sliding_window=8,
                     use_bidirectional_attention=True,
                     layer_types=["sliding_attention", "full_attention"],
                     rope_theta=1000000.0, rope_local_base_freq=10000.0),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], qk_norm="head", eps=1e-6,
                  norm_offset=1.0, scale=0.25, causal=False, rope=dict(theta=1000000.0)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    # layer_types over the rules they were computed from: Gemma 2's odd
    # layer 1 and Qwen2's layer 1 (below max_window_layers 4) slide.
    dict(name="gemma2_typed", module="model.layers.1.self_attn",
         config=dict(model_type="gemma2", hidden_size=32, num_attention_heads=2,
                     num_key_value_heads=1, head_dim=32, num_hidden_layers=2,
                     query_pre_attn_scalar=24, attn_logit_softcapping=3.0,
                     sliding_window=8, rope_theta=10000.0,
                     layer_types=["full_attention", "sliding_attention"]),
         ref=dict(d=32, heads=2, kv_heads=1, head_dim=32, bias=[], rope=dict(),
                  softcap=3.0, scale=1 / math.sqrt(24), window=8),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="qwen2_typed", module="model.layers.1.self_attn",
         config=dict(model_type="qwen2", hidden_size=48, num_attention_heads=6,
                     num_key_value_heads=2, num_hidden_layers=2, rope_theta=1000000.0,
                     use_sliding_window=True, sliding_window=8, max_window_layers=4,
                     layer_types=["full_attention", "sliding_attention"]),
         ref=dict(d=48, heads=6, kv_heads=2, head_dim=8, bias=["q", "k", "v"],
                  rope=dict(theta=1000000.0), window=8),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    # What a config.json leaves out reads as the HF class's default (a user
    # probe found each read otherwise): BERT as a decoder is causal; Phi
    # rotates half of each head (partial_rotary_factor 0.5), GPT-J 64 dims
    # (rotary_dim); EXAONE 4 slides (4096, pattern 4: layer 3 is a global
    # NoPE layer); Helium's head_dim is 128.
    dict(name="bert_decoder", module="bert.encoder.layer.1.attention",
         config=dict(model_type="bert", hidden_size=32, num_attention_heads=4,
                     num_hidden_layers=2, is_decoder=True),
         ref=dict(d=32, heads=4, kv_heads=4, head_dim=8, bias=["q", "k", "v", "o"], rope=None),
         names={"q": "self.query", "k": "self.key", "v": "self.value", "o": "output.dense"}),
    dict(name="phi_defaults", module="model.layers.0.self_attn",
         config=dict(model_type="phi", hidden_size=64, num_attention_heads=2,
                     num_hidden_layers=1),
         ref=dict(d=64, heads=2, kv_heads=2, head_dim=32, bias=["q", "k", "v", "o"],
                  rope=dict(rotary_dim=16)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "dense"}),
    dict(name="gptj_defaults", module="transformer.h.1.attn",
         config=dict(model_type="gptj", n_embd=256, n_head=2, n_layer=2),
         ref=dict(d=256, heads=2, kv_heads=2, head_dim=128, bias=[],
                  rope=dict(style="interleaved", rotary_dim=64)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj"}),
    dict(name="exaone4_defaults", module="model.layers.3.self_attn",
         config=dict(model_type="exaone4", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=4),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], rope=None,
                  qk_norm="head", eps=1e-5),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    # Llama with dynamic NTK and no max_position_embeddings: LlamaConfig's
    # 2048 (was refused: no such key).
    dict(name="llama_dynamic_maxpos_default", module="model.layers.0.self_attn",
         config=dict(model_type="llama", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=1, rope_theta=10000.0,
                     rope_scaling={"type": "dynamic", "factor": 2.0}),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[],
                  rope=dict(scaling={"type": "dynamic", "factor": 2.0,
                                     "max_position_embeddings": 2048})),
         import_note="max_position_embeddings not in the file, the configuration class's "
              "default 2048 (read by rope_scaling type dynamic)",
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    # The same in transformers v5's form (rope_parameters).
    dict(name="llama_v5_dynamic_maxpos_default", module="model.layers.0.self_attn",
         config=dict(model_type="llama", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=1,
                     rope_parameters={"rope_type": "dynamic", "factor": 2.0,
                                      "rope_theta": 10000.0}),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[],
                  rope=dict(scaling={"type": "dynamic", "factor": 2.0,
                                     "max_position_embeddings": 2048})),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="helium_defaults", module="model.layers.0.self_attn",
         config=dict(model_type="helium", hidden_size=64, num_attention_heads=2,
                     num_key_value_heads=2, num_hidden_layers=1),
         ref=dict(d=64, heads=2, kv_heads=2, head_dim=128, bias=[],
                  rope=dict(theta=100000.0, style="interleaved")),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    dict(name="olmo2", module="model.layers.0.self_attn",
         config=dict(model_type="olmo2", hidden_size=48, num_attention_heads=3,
                     num_hidden_layers=1, rope_theta=500000.0, rms_norm_eps=1e-5),
         ref=dict(d=48, heads=3, kv_heads=3, head_dim=16, bias=[], rope=dict(theta=500000.0),
                  qk_norm="projection", eps=1e-5),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
    # OLMo (1): Llama-like with clip_qkv, attention_bias.
    dict(name="olmo", module="model.layers.1.self_attn",
         config=dict(model_type="olmo", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=2, rope_theta=10000.0,
                     attention_bias=True, clip_qkv=0.8),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(theta=10000.0), clip_qkv=0.8),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}),
]


LLAMA_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}
BART_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj"}
BERT_NAMES = {"q": "self.query", "k": "self.key", "v": "self.value", "o": "output.dense"}
CLIP_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj"}
VIT_NAMES = {"q": "attention.query", "k": "attention.key", "v": "attention.value",
             "o": "output.dense"}
GEMMA3_V5 = dict(model_type="gemma3_text", hidden_size=64, num_attention_heads=4,
                 num_key_value_heads=1, head_dim=16, num_hidden_layers=6,
                 query_pre_attn_scalar=32, rms_norm_eps=1e-6, sliding_window=512,
                 layer_types=["sliding_attention"] * 5 + ["full_attention"],
                 rope_parameters={
                     "full_attention": {"rope_type": "linear", "factor": 8.0,
                                        "rope_theta": 1000000.0},
                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
# Llama 4 text (Llama4TextConfig): RoPE layers (no_rope_layers[i] == 1; by
# default all but every no_rope_layer_interval-th, 4) rotate interleaved
# pairs over the whole head, then the weightless L2 QK-norm when
# use_qk_norm (eps rms_norm_eps), and use the chunked mask
# (attention_chunk_size) unless layer_types says otherwise; NoPE layers are
# full causal attention with the temperature tuning (attn_temperature_tuning,
# floor_scale, attn_scale). Scout's llama3 scaling has low_freq_factor ==
# high_freq_factor.
LLAMA4_SCALING = {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 1.0, "original_max_position_embeddings": 64}
REF_LLAMA4_SCALING = {"type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 1.0, "original_max_position_embeddings": 64}
LLAMA4_TEXT = dict(model_type="llama4_text", hidden_size=64, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16, num_hidden_layers=4,
                   intermediate_size=32, intermediate_size_mlp=64, num_local_experts=2,
                   rope_theta=500000.0, rope_scaling=LLAMA4_SCALING,
                   max_position_embeddings=256, rms_norm_eps=1e-5, use_qk_norm=True,
                   attention_chunk_size=16, attn_temperature_tuning=True, floor_scale=8,
                   attn_scale=0.1)
# (layer 1 rotates and is chunked; layer 3, the default's 4th, is NoPE)
LLAMA4_ROPE_REF = dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], qk_norm="l2", eps=1e-5,
                       chunk=16, rope=dict(style="interleaved", theta=500000.0,
                                           scaling=REF_LLAMA4_SCALING))
LLAMA4_NOPE_REF = dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], rope=None,
                       temperature=(8, 0.1))
# Explicit no_rope_layers and layer_types (which, given, decide the mask
# alone): layer 0 NoPE where the default interval would rotate it, layer 2
# rotating under full attention where no_rope_layers would chunk it;
# rope_theta (500000), use_qk_norm (true) and attn_scale (0.1) by default.
LLAMA4_TYPED = dict(model_type="llama4_text", hidden_size=48, num_attention_heads=6,
                    num_key_value_heads=2, head_dim=8, num_hidden_layers=3,
                    rms_norm_eps=1e-6, attention_chunk_size=8, floor_scale=4,
                    no_rope_layers=[0, 1, 1],
                    layer_types=["full_attention", "chunked_attention", "full_attention"])
# Maverick-like: use_qk_norm false, attention_bias (q, k, v and o),
# no rope_scaling; no_rope_layers [] is the default (interval 4).
LLAMA4_BIAS = dict(model_type="llama4_text", hidden_size=64, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16, num_hidden_layers=4,
                   rope_theta=500000.0, use_qk_norm=False, attention_bias=True,
                   attention_chunk_size=8, no_rope_layers=[], floor_scale=8, attn_scale=0.1)
# Jamba, Phi-3.5-MoE, Mllama (Llama 3.2 Vision) and RecurrentGemma: the
# reference cases derived from the config as HF's config classes read it
# (their defaults for the keys a config leaves out), for the module asked.
def _layer_of(module):
    return int(re.search(r"\.layers\.(\d+)\.", module).group(1))


def jamba_ref(cfg, module):
    """JambaConfig / JambaAttention: attention on the layers i with
    i % attn_layer_period == attn_layer_offset (8, 4 by default), Mamba on
    the others; no position encoding, no biases, causal; num_key_value_heads
    8 by default; head_dim hidden_size // num_attention_heads; causal even
    with a numeric sliding_window (HF's eager/SDPA Jamba attention ignores
    it: only its old flash-attention path read it)."""
    i = _layer_of(module)
    assert i % cfg.get("attn_layer_period", 8) == cfg.get("attn_layer_offset", 4), "Mamba layer"
    d, H = cfg.get("hidden_size", 4096), cfg.get("num_attention_heads", 32)
    Hkv = cfg.get("num_key_value_heads", 8) or H
    return dict(d=d, heads=H, kv_heads=Hkv, head_dim=d // H, bias=[], rope=None)


def phimoe_ref(cfg, T):
    """PhimoeConfig / PhimoeAttention (Llama's, attention_bias on all four
    projections, False by default) / PhimoeRotaryEmbedding for a prompt of T
    tokens: half-split RoPE over the head, rope_theta 1e6 by default,
    longrope's short factors up to rope_scaling's
    original_max_position_embeddings and long ones past it, cos and sin times
    short_mscale (T <= original) or long_mscale in place of longrope's own
    attention factor; a numeric sliding_window slides."""
    d, H = cfg.get("hidden_size", 4096), cfg.get("num_attention_heads", 32)
    Hkv = cfg.get("num_key_value_heads", 8) or H
    rope = dict(theta=cfg.get("rope_theta", 1e6))
    rs = cfg.get("rope_scaling")
    if rs:
        assert rs.get("rope_type", rs.get("type")) == "longrope"
        orig = rs["original_max_position_embeddings"]
        rope["scaling"] = {"type": "longrope", "short_factor": rs["short_factor"],
                           "long_factor": rs["long_factor"],
                           "original_max_position_embeddings": orig,
                           "max_position_embeddings": cfg.get("max_position_embeddings", 131072),
                           "attention_factor": rs["long_mscale" if T > orig else "short_mscale"]}
    ref = dict(d=d, heads=H, kv_heads=Hkv, head_dim=d // H, rope=rope,
               bias=["q", "k", "v", "o"] if cfg.get("attention_bias", False) else [])
    if cfg.get("sliding_window") is not None:
        ref["window"] = cfg["sliding_window"]
    return ref


def mllama_ref(cfg, module):
    """MllamaForConditionalGeneration: vision_model.{transformer,
    global_transformer}.layers.N.self_attn is MllamaVisionAttention (MHA,
    vision_config's hidden_size and attention_heads, no biases, no mask, no
    rope); language_model.model.layers.N.self_attn (N not in
    text_config's cross_attention_layers) Llama's attention (rope_theta
    500000 by default, rope_scaling, GQA, causal);
    language_model.model.layers.N.cross_attn (N in cross_attention_layers)
    MllamaTextCrossAttention: q from x, k and v from the cross-attention
    states, per-head RMSNorm of q and k with their weights (eps
    rms_norm_eps, 1e-5 by default), no rope, no mask."""
    if module.startswith("vision_model."):
        vc = cfg.get("vision_config", {})
        d, H = vc.get("hidden_size", 1280), vc.get("attention_heads", 16)
        return dict(d=d, heads=H, kv_heads=H, head_dim=d // H, bias=[], rope=None, causal=False)
    tc = cfg["text_config"]
    d, H = tc.get("hidden_size", 4096), tc.get("num_attention_heads", 32)
    Hkv = tc.get("num_key_value_heads", 8)
    cross = _layer_of(module) in tc.get("cross_attention_layers", [3, 8, 13, 18, 23, 28, 33, 38])
    assert module.endswith(".cross_attn" if cross else ".self_attn")
    ref = dict(d=d, heads=H, kv_heads=Hkv, head_dim=d // H, bias=[])
    if cross:
        return dict(ref, rope=None, causal=False, cross=True, qk_norm="head",
                    eps=tc.get("rms_norm_eps", 1e-5))
    rope = dict(theta=tc.get("rope_theta", 500000.0))
    rs = tc.get("rope_scaling")
    if rs:
        rope["scaling"] = {("type" if k == "rope_type" else k): v for k, v in rs.items()}
    return dict(ref, rope=rope)


def recurrent_gemma_ref(cfg, module):
    """RecurrentGemmaConfig / RecurrentGemmaSdpaAttention: temporal_block of
    the layers whose layers_block_type ((block_types * 100)[:num_hidden_layers],
    block_types recurrent, recurrent, attention by default) is attention;
    q/k/v biases with attention_bias, o_proj's always; num_key_value_heads
    (num_attention_heads by default); head_dim hidden_size //
    num_attention_heads; rotate_half on the first partial_rotary_factor
    (0.5) of each head, frequencies over that width, rope_theta 10000;
    scale head_dim^-0.5; causal within attention_window_size (2048) keys."""
    n = cfg.get("num_hidden_layers", 26)
    types = (list(cfg.get("block_types", ["recurrent", "recurrent", "attention"])) * 100)[:n]
    assert types[_layer_of(module)] == "attention", "recurrent layer"
    d, H = cfg.get("hidden_size", 2560), cfg.get("num_attention_heads", 10)
    Hkv = cfg.get("num_key_value_heads") or H
    dh = d // H
    return dict(d=d, heads=H, kv_heads=Hkv, head_dim=dh,
                bias=["q", "k", "v", "o"] if cfg.get("attention_bias", False) else ["o"],
                rope=dict(theta=cfg.get("rope_theta", 10000.0),
                          rotary_dim=int(cfg.get("partial_rotary_factor", 0.5) * dh)),
                window=cfg.get("attention_window_size", 2048))


# Jamba: attention on layers 1 and 5 (period 4, offset 1) of 8, GQA.
JAMBA = dict(model_type="jamba", hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
             num_hidden_layers=8, attn_layer_period=4, attn_layer_offset=1,
             expert_layer_period=2, expert_layer_offset=1, num_experts=2, num_experts_per_tok=2,
             intermediate_size=128, mamba_d_state=16, mamba_d_conv=4, mamba_expand=2,
             rms_norm_eps=1e-6, max_position_embeddings=256, sliding_window=None,
             use_mamba_kernels=False)
# The default period and offset (8, 4: layer 4 of 8 attends), the default 8
# key-value heads (MHA with 8 heads), and a sliding_window of 8 < T that HF
# ignores (plain causal attention, which attnc computes as well).
JAMBA_SLIDING = dict(model_type="jamba", hidden_size=64, num_attention_heads=8,
                     num_hidden_layers=8, intermediate_size=128, rms_norm_eps=1e-6,
                     sliding_window=8, use_mamba_kernels=False)
# Phi-3.5-MoE: longrope with equal mscales (1.2, not the formula's
# sqrt(1 + ln 4 / ln 64) = 1.155), T = 37 <= original 64 (short factors),
# all four biases, rope_theta 1e6 by default, a sliding_window of 16 < T.
PHIMOE = dict(model_type="phimoe", hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
              num_hidden_layers=2, intermediate_size=128, num_local_experts=2,
              num_experts_per_tok=2, rms_norm_eps=1e-5, attention_bias=True,
              max_position_embeddings=256, sliding_window=16,
              rope_scaling={"type": "longrope", "short_factor": real_models.PHI3_SHORT,
                            "long_factor": real_models.PHI3_LONG, "short_mscale": 1.2,
                            "long_mscale": 1.2, "original_max_position_embeddings": 64})
# T = 37 past original_max_position_embeddings 32: the long factors and
# long_mscale (equal to short_mscale); rope_theta 10000 as the real model's
# config has it; no biases, no window.
PHIMOE_LONG = dict(model_type="phimoe", hidden_size=64, num_attention_heads=4,
                   num_key_value_heads=2, num_hidden_layers=1, rope_theta=10000.0,
                   max_position_embeddings=128,
                   rope_scaling={"rope_type": "longrope", "short_factor": real_models.PHI3_SHORT,
                                 "long_factor": real_models.PHI3_LONG, "short_mscale": 1.3,
                                 "long_mscale": 1.3, "original_max_position_embeddings": 32})
# PhimoeConfig's defaults: 8 key-value heads (of 16 here), no rope_scaling
# (plain RoPE, theta 1e6), no biases, no window.
PHIMOE_DEFAULTS = dict(model_type="phimoe", hidden_size=128, num_attention_heads=16,
                       num_hidden_layers=1)
# Mllama: text layers 1 and 3 cross-attend, 0 and 2 self-attend (llama3
# scaling); a 2 + 2 layer vision encoder of another width.
MLLAMA = dict(model_type="mllama", architectures=["MllamaForConditionalGeneration"],
              text_config=dict(model_type="mllama_text_model", hidden_size=64,
                               num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=4,
                               intermediate_size=128, rope_theta=500000.0,
                               rope_scaling=LLAMA_SCALING, max_position_embeddings=256,
                               rms_norm_eps=1e-5, cross_attention_layers=[1, 3]),
              vision_config=dict(model_type="mllama_vision_model", hidden_size=48,
                                 attention_heads=4, num_hidden_layers=2, num_global_layers=2,
                                 intermediate_size=96, image_size=56, patch_size=14,
                                 intermediate_layers_indices=[1]))
# MllamaTextConfig's defaults: cross_attention_layers [3, 8, 13, ...], 8
# key-value heads (of 16 here), rms_norm_eps 1e-5.
MLLAMA_DEFAULTS = dict(model_type="mllama",
                       text_config=dict(model_type="mllama_text_model", hidden_size=128,
                                        num_attention_heads=16, num_hidden_layers=5),
                       vision_config=dict(model_type="mllama_vision_model", hidden_size=48,
                                          attention_heads=4, num_hidden_layers=1,
                                          num_global_layers=1))
# RecurrentGemma: the default block_types (layer 5 of 6 attends), MQA, a
# window of 64 >= T (HF's prefill mask is plain causal), partial rotary 0.5
# and theta 10000 by default, only o_proj with a bias.
RGEMMA = dict(model_type="recurrent_gemma", hidden_size=64, num_attention_heads=4,
              num_key_value_heads=1, num_hidden_layers=6, intermediate_size=192, lru_width=64,
              attention_window_size=64, conv1d_width=4, logits_soft_cap=30.0, rms_norm_eps=1e-6)
# attention_bias (all four), block_types of its own (layer 2 attends), MHA
# by default.
RGEMMA_BIAS = dict(model_type="recurrent_gemma", hidden_size=48, num_attention_heads=3,
                   num_hidden_layers=4, lru_width=48, attention_window_size=64,
                   block_types=["attention", "recurrent"], attention_bias=True,
                   rope_theta=20000.0)


# Granite 4.0-H, Bamba, LFM2 and DBRX: the reference cases derived from the
# config as their config classes read it (the defaults for the keys a config
# leaves out), for the module asked.
def granitemoehybrid_ref(cfg, module):
    """GraniteMoeHybridConfig / GraniteMoeHybridAttention (Granite's): the
    layers whose layers_block_type (layer_types, config.json's
    layers_block_type an alias; all "mamba" without one) is "attention"; all
    four biases with attention_bias (False by default); num_key_value_heads
    num_attention_heads by default; head_dim hidden_size //
    num_attention_heads; the scores times attention_multiplier (1.0 by
    default), not head_dim^-0.5; half-split RoPE over the head (rope_theta
    10000, rope_scaling) only with position_embedding_type "rope" (None by
    default; Granite 4.0-H's "nope": no position encoding); causal."""
    n = cfg.get("num_hidden_layers", 32)
    types = cfg.get("layer_types", cfg.get("layers_block_type")) or ["mamba"] * n
    assert types[_layer_of(module)] == "attention", "Mamba layer"
    d, H = cfg.get("hidden_size", 4096), cfg.get("num_attention_heads", 32)
    Hkv = cfg.get("num_key_value_heads") or H
    ref = dict(d=d, heads=H, kv_heads=Hkv, head_dim=d // H, rope=None,
               scale=cfg.get("attention_multiplier", 1.0),
               bias=["q", "k", "v", "o"] if cfg.get("attention_bias", False) else [])
    if cfg.get("position_embedding_type") == "rope":
        ref["rope"] = dict(theta=cfg.get("rope_theta", 10000.0))
        rs = cfg.get("rope_scaling")
        if rs:
            ref["rope"]["scaling"] = {("type" if k == "rope_type" else k): v
                                      for k, v in rs.items()}
    return ref


def bamba_ref(cfg, module):
    """BambaConfig / BambaAttention (Llama's): the layers in
    attn_layer_indices (none: all Mamba); no biases (attention_bias
    hard-coded False); num_key_value_heads 8 by default (null: the query
    heads); head_dim hidden_size // num_attention_heads; partial_rotary_factor
    hard-coded 0.5: rotate_half on the first head_dim / 2 dims of each head,
    frequencies over that width, rope_theta 10000; head_dim^-0.5; causal."""
    assert _layer_of(module) in (cfg.get("attn_layer_indices") or []), "Mamba layer"
    d, H = cfg.get("hidden_size", 4096), cfg.get("num_attention_heads", 32)
    Hkv = cfg.get("num_key_value_heads", 8) or H
    dh = d // H
    return dict(d=d, heads=H, kv_heads=Hkv, head_dim=dh, bias=[],
                rope=dict(theta=cfg.get("rope_theta", 10000.0), rotary_dim=int(0.5 * dh)))


def lfm2_ref(cfg, module):
    """Lfm2Config / Lfm2Attention: the layers whose layer_types entry is
    "full_attention"; without layer_types, those in full_attn_idxs, and
    without either every layer; q_proj, k_proj, v_proj, out_proj without
    biases; q_layernorm and k_layernorm, Lfm2RMSNorm(head_dim, eps norm_eps
    1e-5) -- weight * x * rsqrt(mean(x^2) + eps) -- on each head BEFORE the
    rotation; half-split RoPE over the head, rope_theta (Lfm2Config also
    reads "theta") 1e6 by default; num_key_value_heads 8 by default; head_dim
    hidden_size // num_attention_heads; head_dim^-0.5; causal."""
    n = cfg.get("num_hidden_layers", 32)
    types = cfg.get("layer_types")
    if types is None:
        idxs = cfg.get("full_attn_idxs")
        idxs = list(range(n)) if idxs is None else idxs
        types = ["full_attention" if i in idxs else "conv" for i in range(n)]
    assert types[_layer_of(module)] == "full_attention", "conv layer"
    d, H = cfg.get("hidden_size", 2560), cfg.get("num_attention_heads", 32)
    return dict(d=d, heads=H, kv_heads=cfg.get("num_key_value_heads", 8), head_dim=d // H,
                bias=[], qk_norm="head", eps=cfg.get("norm_eps", 1e-5),
                rope=dict(theta=cfg.get("theta", cfg.get("rope_theta", 1000000.0))))


def dbrx_ref(cfg, module):
    """DbrxConfig / DbrxAttention (transformer.blocks.N.norm_attn_norm.attn):
    d_model, n_heads; attn_config's kv_n_heads (1 by default), rope_theta
    (10000) and clip_qkv (None): Wqkv's output [q | k | v] clamped to
    [-clip_qkv, clip_qkv] before the split and RoPE; half-split RoPE over the
    head; no biases; head_dim d_model // n_heads; head_dim^-0.5; causal."""
    assert int(re.search(r"\.blocks\.(\d+)\.", module).group(1)) < cfg.get("n_layers", 24)
    d, H = cfg.get("d_model", 2048), cfg.get("n_heads", 16)
    ac = cfg.get("attn_config") or {}
    ref = dict(d=d, heads=H, kv_heads=ac.get("kv_n_heads", 1), head_dim=d // H, bias=[],
               rope=dict(theta=ac.get("rope_theta", 10000.0)))
    if ac.get("clip_qkv") is not None:
        ref["clip_qkv"] = ac["clip_qkv"]
    return ref


# Granite 4.0-H: Mamba on layers 0 and 2, attention on 1 and 3 (layer_types),
# position_embedding_type "nope" (a rope_theta that is not used),
# attention_multiplier 0.0078125 as the released configs; MHA by default (no
# num_key_value_heads); no biases by default.
GRANITE4H = dict(model_type="granitemoehybrid", hidden_size=64, num_attention_heads=4,
                 num_hidden_layers=4, intermediate_size=128, shared_intermediate_size=128,
                 num_local_experts=2, num_experts_per_tok=2, rms_norm_eps=1e-5,
                 attention_multiplier=0.0078125, embedding_multiplier=12.0,
                 residual_multiplier=0.22, logits_scaling=8.0, position_embedding_type="nope",
                 rope_theta=10000.0, max_position_embeddings=256,
                 layer_types=["mamba", "attention", "mamba", "attention"],
                 mamba_n_heads=8, mamba_d_head=16, mamba_d_state=16, mamba_n_groups=1,
                 mamba_expand=2, mamba_d_conv=4, mamba_chunk_size=32)
# position_embedding_type "rope" (theta 20000, linear scaling 2), GQA (2 of
# 6 key-value heads), attention_bias (all four), the layers by the
# layers_block_type spelling, attention_multiplier 1.0 by default.
GRANITE4H_ROPE = dict(model_type="granitemoehybrid", hidden_size=48, num_attention_heads=6,
                      num_key_value_heads=2, num_hidden_layers=3, intermediate_size=96,
                      num_local_experts=0, position_embedding_type="rope", rope_theta=20000.0,
                      rope_scaling={"rope_type": "linear", "factor": 2.0},
                      attention_bias=True, layers_block_type=["attention", "mamba", "mamba"],
                      mamba_n_heads=8, mamba_d_state=16)
# Bamba: attention on layers 1 and 3 of 4 (attn_layer_indices); the default
# 8 key-value heads (of 16) and rope_theta 10000; partial rotary 0.5 (8 of
# head_dim 16).
BAMBA = dict(model_type="bamba", hidden_size=256, num_attention_heads=16, num_hidden_layers=4,
             intermediate_size=512, rms_norm_eps=1e-5, attn_layer_indices=[1, 3],
             mamba_n_heads=16, mamba_d_head="auto", mamba_d_state=16, mamba_n_groups=1,
             mamba_expand=2, mamba_d_conv=4, mamba_chunk_size=32, max_position_embeddings=256)
# GQA 2 of 4 heads, rope_theta 50000, layer 0 attends.
BAMBA_GQA = dict(model_type="bamba", hidden_size=64, num_attention_heads=4,
                 num_key_value_heads=2, num_hidden_layers=2, attn_layer_indices=[0],
                 rope_theta=50000.0, mamba_n_heads=8, mamba_d_state=16)
# LFM2's attention: out_proj, and its QK-norms' tensors q_layernorm /
# k_layernorm (weights_of's q_norm / k_norm).
LFM2_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj"}
LFM2_NORMS = {"q_norm": "q_layernorm", "k_norm": "k_layernorm"}
# LFM2: layer_types (layer 2 attends), GQA, rope_theta 10000, norm_eps 1e-6.
LFM2 = dict(model_type="lfm2", hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
            num_hidden_layers=4, norm_eps=1e-6, rope_theta=10000.0, conv_bias=False,
            conv_L_cache=3, block_dim=64, block_ff_dim=128, block_multiple_of=32,
            block_auto_adjust_ff_dim=True, max_position_embeddings=256,
            layer_types=["conv", "conv", "full_attention", "conv"])
# The first LFM2 checkpoints' full_attn_idxs (layers 1 and 3) without
# layer_types; the defaults: 8 key-value heads (of 16), rope_theta 1e6,
# norm_eps 1e-5.
LFM2_IDXS = dict(model_type="lfm2", hidden_size=128, num_attention_heads=16,
                 num_hidden_layers=4, full_attn_idxs=[1, 3], conv_L_cache=3)
# Neither layer_types nor full_attn_idxs: Lfm2Config makes every layer
# full attention.
LFM2_ALL = dict(model_type="lfm2", hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                num_hidden_layers=2, rope_theta=10000.0)
# DBRX: GQA (2 of 4 kv heads), rope_theta 500000, clip_qkv 0.5 (the
# projections are about N(0, 1): the clamp bites); block 1 of 3, block 2
# holds a decoy copy, norm_1 / norm_2 beside the attention.
DBRX = dict(model_type="dbrx", d_model=64, n_heads=4, n_layers=3, max_seq_len=256,
            vocab_size=128, attn_config={"kv_n_heads": 2, "rope_theta": 500000.0,
                                         "clip_qkv": 0.5, "attn_pdrop": 0.0},
            ffn_config={"ffn_hidden_size": 128, "moe_num_experts": 2, "moe_top_k": 1})
# attn_config's defaults: kv_n_heads 1 (MQA), rope_theta 10000, no clip.
DBRX_NOCLIP = dict(model_type="dbrx", d_model=48, n_heads=3, n_layers=1, attn_config={},
                   ffn_config={"ffn_hidden_size": 96, "moe_num_experts": 2})


# Architectures whose attention is a variant of Llama's (model.layers.N.
# self_attn) or another's under its own model_type, each with the config
# keys that distinguish it.
VARIANT_CASES = [
    # Qwen3-MoE: per-head QK-norm as Qwen3; use_sliding_window slides every layer.
    dict(name="qwen3_moe", module="model.layers.1.self_attn",
         config=dict(model_type="qwen3_moe", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                     rope_theta=1000000.0, rms_norm_eps=1e-6, use_sliding_window=True,
                     sliding_window=8, max_window_layers=2),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], window=8,
                  rope=dict(theta=1000000.0), qk_norm="head", eps=1e-6),
         names=LLAMA_NAMES),
    # Granite: the scores scaled by attention_multiplier, not 1/sqrt(head_dim).
    dict(name="granite", module="model.layers.0.self_attn",
         config=dict(model_type="granite", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=1, rope_theta=10000.0,
                     attention_bias=True, attention_multiplier=0.09),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  scale=0.09, rope=dict(theta=10000.0)),
         names=LLAMA_NAMES),
    dict(name="granitemoe", module="model.layers.0.self_attn",
         config=dict(model_type="granitemoe", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=4, num_hidden_layers=1, attention_multiplier=0.5),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=[], scale=0.5,
                  rope=dict(theta=10000.0)),
         names=LLAMA_NAMES),
    # StableLM: q/k/v biases (use_qkv_bias), partial rotary 0.25 by default.
    dict(name="stablelm", module="model.layers.0.self_attn",
         config=dict(model_type="stablelm", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=4, num_hidden_layers=1, rope_theta=10000.0,
                     use_qkv_bias=True, qk_layernorm=False),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v"],
                  rope=dict(theta=10000.0, rotary_dim=4)),
         names=LLAMA_NAMES),
    # Nemotron: head_dim (H * dh != d_model), partial rotary 0.5 by default.
    dict(name="nemotron", module="model.layers.0.self_attn",
         config=dict(model_type="nemotron", hidden_size=48, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=1,
                     rope_theta=10000.0),
         ref=dict(d=48, heads=4, kv_heads=2, head_dim=16, bias=[],
                  rope=dict(theta=10000.0, rotary_dim=8)),
         names=LLAMA_NAMES),
    # Nemotron with rope_scaling: current transformers applies it.
    dict(name="nemotron_linear", module="model.layers.0.self_attn",
         config=dict(model_type="nemotron", hidden_size=48, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=1,
                     rope_theta=10000.0, rope_scaling={"type": "linear", "factor": 4.0}),
         ref=dict(d=48, heads=4, kv_heads=2, head_dim=16, bias=[],
                  rope=dict(theta=10000.0, rotary_dim=8,
                            scaling={"type": "linear", "factor": 4.0})),
         names=LLAMA_NAMES),
    # OLMoE: RMSNorm over the whole q and k projections (as OLMo 2), biases.
    dict(name="olmoe", module="model.layers.0.self_attn",
         config=dict(model_type="olmoe", hidden_size=48, num_attention_heads=3,
                     num_hidden_layers=1, rope_theta=10000.0, rms_norm_eps=1e-5,
                     attention_bias=True, clip_qkv=None),
         ref=dict(d=48, heads=3, kv_heads=3, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(theta=10000.0), qk_norm="projection", eps=1e-5),
         names=LLAMA_NAMES),
    # Cohere (Command-R): interleaved pairs over the whole head.
    dict(name="cohere", module="model.layers.1.self_attn",
         config=dict(model_type="cohere", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=2, rope_theta=8000000.0,
                     use_qk_norm=False),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[],
                  rope=dict(theta=8000000.0, style="interleaved")),
         names=LLAMA_NAMES),
    # Cohere 2 (Command R7B): every 4th layer global without any position
    # encoding (NoPE), the others slide (a window of 8 < T) and rotate
    # interleaved pairs.
    dict(name="cohere2", module="model.layers.0.self_attn",
         config=dict(model_type="cohere2", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=4, rope_theta=50000.0,
                     sliding_window=8, sliding_window_pattern=4, layer_norm_eps=1e-5),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], window=8,
                  rope=dict(theta=50000.0, style="interleaved")),
         names=LLAMA_NAMES),
    dict(name="cohere2_global", module="model.layers.3.self_attn",
         config=dict(model_type="cohere2", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=4, rope_theta=50000.0,
                     sliding_window=8, sliding_window_pattern=4, attention_bias=True),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"], rope=None),
         names=LLAMA_NAMES),
    # EXAONE 4: per-head RMS QK-norm before RoPE; hybrid (layer_types and a
    # sliding_window): sliding layers rotate, global ones are NoPE; without
    # a sliding_window (EXAONE 4.0 1.2B) every layer rotates.
    dict(name="exaone4_global", module="model.layers.1.self_attn",
         config=dict(model_type="exaone4", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=2, rope_theta=1000000.0,
                     rms_norm_eps=1e-5, sliding_window=8,
                     layer_types=["sliding_attention", "full_attention"]),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], rope=None,
                  qk_norm="head", eps=1e-5),
         names=LLAMA_NAMES),
    dict(name="exaone4_sliding", module="model.layers.2.self_attn",
         config=dict(model_type="exaone4", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=4, rope_theta=1000000.0,
                     rms_norm_eps=1e-5, sliding_window=8, sliding_window_pattern="LLLG",
                     rope_scaling=LLAMA_SCALING, max_position_embeddings=256),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], window=8,
                  qk_norm="head", eps=1e-5,
                  rope=dict(theta=1000000.0, scaling=REF_LLAMA_SCALING)),
         names=LLAMA_NAMES),
    dict(name="exaone4_dense", module="model.layers.1.self_attn",
         config=dict(model_type="exaone4", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=2, rope_theta=1000000.0,
                     rms_norm_eps=1e-5, sliding_window=None,
                     layer_types=["full_attention", "full_attention"]),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], qk_norm="head", eps=1e-5,
                  rope=dict(theta=1000000.0)),
         names=LLAMA_NAMES),
    # SmolLM3: Llama's attention; no_rope_layers[layer] == 0 (by default
    # every 4th layer) is NoPE, and with use_sliding_window the NoPE layers
    # slide; rope_theta 2e6 by default.
    dict(name="smollm3", module="model.layers.1.self_attn",
         config=dict(model_type="smollm3", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=4, attention_bias=True),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(theta=2000000.0)),
         names=LLAMA_NAMES),
    dict(name="smollm3_nope", module="model.layers.3.self_attn",
         config=dict(model_type="smollm3", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=4, rope_theta=5000000.0),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], rope=None),
         names=LLAMA_NAMES),
    dict(name="smollm3_nope_sliding", module="model.layers.0.self_attn",
         config=dict(model_type="smollm3", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=2, rope_theta=5000000.0,
                     no_rope_layers=[0, 1], use_sliding_window=True, sliding_window=8),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], rope=None, window=8),
         names=LLAMA_NAMES),
    # OLMo 3: OLMo 2's attention (RMSNorm over the whole q and k
    # projections), 3 of 4 layers sliding (layer_types, else the pattern).
    dict(name="olmo3", module="model.layers.1.self_attn",
         config=dict(model_type="olmo3", hidden_size=48, num_attention_heads=3,
                     num_hidden_layers=4, rope_theta=500000.0, sliding_window=8),
         ref=dict(d=48, heads=3, kv_heads=3, head_dim=16, bias=[], rope=dict(theta=500000.0),
                  qk_norm="projection", eps=1e-5, window=8),
         names=LLAMA_NAMES),
    dict(name="olmo3_global", module="model.layers.1.self_attn",
         config=dict(model_type="olmo3", hidden_size=48, num_attention_heads=3,
                     num_hidden_layers=2, rope_theta=500000.0, sliding_window=8,
                     rms_norm_eps=1e-6, layer_types=["sliding_attention", "full_attention"]),
         ref=dict(d=48, heads=3, kv_heads=3, head_dim=16, bias=[], rope=dict(theta=500000.0),
                  qk_norm="projection", eps=1e-6),
         names=LLAMA_NAMES),
    # Ministral: Mistral's attention (Qwen2's without q/k/v biases), the
    # sliding layers by layer_types; Arcee AFM: Llama's attention.
    dict(name="ministral", module="model.layers.1.self_attn",
         config=dict(model_type="ministral", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                     rope_theta=100000000.0, sliding_window=8, attention_bias=True,
                     layer_types=["full_attention", "sliding_attention"]),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], window=8,
                  rope=dict(theta=100000000.0)),
         names=LLAMA_NAMES),
    dict(name="arcee", module="model.layers.0.self_attn",
         config=dict(model_type="arcee", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=1, rope_theta=10000.0,
                     hidden_act="relu2"),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], rope=dict(theta=10000.0)),
         names=LLAMA_NAMES),
    # T5's attention under other model types: UMT5 (a table in every
    # block: block 2 reads its own), Switch Transformers (block 0's).
    dict(name="umt5", module="encoder.block.2.layer.0.SelfAttention",
         config=dict(T5_CONFIG, model_type="umt5"),
         table_owner="encoder.block.2.layer.0.SelfAttention",
         decoy_table="encoder.block.0.layer.0.SelfAttention",
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=16, bias=[], rope=None, causal=False,
                  t5=(32, 20, True), scale=1.0),
         names={"q": "q", "k": "k", "v": "v", "o": "o"}),
    dict(name="switch_transformers", module="decoder.block.1.layer.0.SelfAttention",
         config=dict(T5_CONFIG, model_type="switch_transformers"),
         table_owner="decoder.block.0.layer.0.SelfAttention",
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=16, bias=[], rope=None,
                  t5=(32, 20, False), scale=1.0),
         names={"q": "q", "k": "k", "v": "v", "o": "o"}),
    # Multimodal checkpoints keep the language model's config in text_config
    # (its own model_type) and its tensors under a prefix of their own.
    dict(name="llava", module="language_model.model.layers.1.self_attn",
         config=dict(model_type="llava", torch_dtype="float32",
                     vision_config=dict(model_type="clip_vision_model", hidden_size=32),
                     text_config=dict(model_type="llama", hidden_size=64,
                                      num_attention_heads=4, num_key_value_heads=2,
                                      num_hidden_layers=2, rope_theta=10000.0)),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], rope=dict(theta=10000.0)),
         names=LLAMA_NAMES),
    dict(name="mistral3", module="model.language_model.layers.0.self_attn",
         config=dict(model_type="mistral3",
                     text_config=dict(model_type="mistral", hidden_size=64, head_dim=32,
                                      num_attention_heads=4, num_key_value_heads=1,
                                      num_hidden_layers=1, rope_theta=1000000000.0,
                                      sliding_window=None)),
         ref=dict(d=64, heads=4, kv_heads=1, head_dim=32, bias=[],
                  rope=dict(theta=1000000000.0)),
         names=LLAMA_NAMES),
    dict(name="gemma3_mm", module="language_model.model.layers.5.self_attn",
         config=dict(model_type="gemma3", text_config=dict(GEMMA3_V5, rope_theta=1000000.0,
                                                           rope_local_base_freq=10000.0,
                                                           rope_scaling={"rope_type": "linear",
                                                                         "factor": 8.0},
                                                           rope_parameters=None)),
         ref=dict(d=64, heads=4, kv_heads=1, head_dim=16, bias=[], qk_norm="head", eps=1e-6,
                  norm_offset=1.0, scale=1 / math.sqrt(32),
                  rope=dict(theta=1000000.0, scaling={"type": "linear", "factor": 8.0})),
         names=LLAMA_NAMES),
    # Published multimodal configs whose text_config names only a few keys
    # and relies on the configuration class's defaults (HF reads the rest
    # from LlamaConfig / Gemma2Config / Gemma3TextConfig): llava-1.5's
    # (32 heads, rope_theta 10000), PaliGemma 2's (8 heads of 256, 4 kv,
    # query_pre_attn_scalar 256, soft-cap 50), gemma-3-4b-it's (8 heads of
    # 256, 4 kv, query_pre_attn_scalar 256, rope_theta 1e6 on global layers).
    dict(name="llava_sparse", module="language_model.model.layers.1.self_attn",
         config=dict(model_type="llava", torch_dtype="float32",
                     text_config=dict(model_type="llama", hidden_size=256,
                                      num_hidden_layers=2, rms_norm_eps=1e-5,
                                      max_position_embeddings=4096, vocab_size=32064)),
         ref=dict(d=256, heads=32, kv_heads=32, head_dim=8, bias=[], rope=dict(theta=10000.0)),
         names=LLAMA_NAMES),
    dict(name="paligemma2_sparse", module="language_model.model.layers.1.self_attn",
         config=dict(model_type="paligemma", torch_dtype="float32",
                     text_config=dict(model_type="gemma2", hidden_size=64,
                                      num_hidden_layers=2, vocab_size=1000)),
         # layer 1 is odd: global attention
         ref=dict(d=64, heads=8, kv_heads=4, head_dim=256, bias=[], rope=dict(),
                  softcap=50.0, scale=1 / 16),
         names=LLAMA_NAMES),
    dict(name="gemma3_mm_sparse", module="language_model.model.layers.5.self_attn",
         config=dict(model_type="gemma3",
                     text_config=dict(model_type="gemma3_text", hidden_size=64,
                                      num_hidden_layers=6, sliding_window=512,
                                      rope_scaling={"rope_type": "linear", "factor": 8.0})),
         ref=dict(d=64, heads=8, kv_heads=4, head_dim=256, bias=[], qk_norm="head", eps=1e-6,
                  norm_offset=1.0, scale=1 / 16,
                  rope=dict(theta=1000000.0, scaling={"type": "linear", "factor": 8.0})),
         names=LLAMA_NAMES),
    # Llama 4 with a text_config as sparse as transformers writes it (its
    # difference from Llama4TextConfig): 40 heads of 128 on 8 kv heads,
    # rope_theta 500000, chunks of 8192 and the L2 QK-norm by default.
    dict(name="llama4_sparse", module="language_model.model.layers.0.self_attn",
         config=dict(model_type="llama4",
                     text_config=dict(model_type="llama4_text", hidden_size=80,
                                      num_hidden_layers=4, rms_norm_eps=1e-5)),
         ref=dict(d=80, heads=40, kv_heads=8, head_dim=128, bias=[], qk_norm="l2", eps=1e-5,
                  rope=dict(style="interleaved", theta=500000.0)),
         names=LLAMA_NAMES),
    # Qwen3 with only its width given (as a VLM's sparse text_config would):
    # 32 heads of 128 on 32 kv heads, rope_theta 10000, per-head QK-norm.
    dict(name="qwen3_sparse", module="model.layers.1.self_attn",
         config=dict(model_type="qwen3", hidden_size=64, num_hidden_layers=2,
                     rms_norm_eps=1e-6),
         ref=dict(d=64, heads=32, kv_heads=32, head_dim=128, bias=[], qk_norm="head", eps=1e-6,
                  rope=dict(theta=10000.0)),
         names=LLAMA_NAMES),
    # Qwen2-VL / Qwen2.5-VL's language model: Qwen2's attention, M-RoPE
    # whose three positions are equal for text tokens (plain RoPE); the
    # config at the top level (older) or in text_config (transformers v5).
    dict(name="qwen2_vl", module="model.layers.1.self_attn",
         config=dict(model_type="qwen2_vl", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=2, rope_theta=1000000.0,
                     use_sliding_window=False, sliding_window=32768, max_window_layers=2,
                     rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                     vision_config=dict(depth=2, embed_dim=32)),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v"],
                  rope=dict(theta=1000000.0)),
         names=LLAMA_NAMES),
    dict(name="qwen2_5_vl", module="model.language_model.layers.0.self_attn",
         config=dict(model_type="qwen2_5_vl", vision_config=dict(depth=2, hidden_size=32),
                     text_config=dict(model_type="qwen2_5_vl_text", hidden_size=48,
                                      num_attention_heads=6, num_key_value_heads=2,
                                      num_hidden_layers=1, use_sliding_window=False,
                                      rope_parameters={"rope_type": "default",
                                                       "mrope_section": [1, 1, 2],
                                                       "rope_theta": 1000000.0})),
         ref=dict(d=48, heads=6, kv_heads=2, head_dim=8, bias=["q", "k", "v"],
                  rope=dict(theta=1000000.0)),
         names=LLAMA_NAMES),
    # Helium: interleaved, q/k/v biases with attention_bias, theta 100000 by default.
    dict(name="helium", module="model.layers.0.self_attn",
         config=dict(model_type="helium", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=1,
                     attention_bias=True),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v"],
                  rope=dict(theta=100000.0, style="interleaved")),
         names=LLAMA_NAMES),
    # GLM-4: interleaved on half the head by default, q/k/v biases by default.
    dict(name="glm", module="model.layers.0.self_attn",
         config=dict(model_type="glm", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=1),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v"],
                  rope=dict(theta=10000.0, style="interleaved", rotary_dim=8)),
         names=LLAMA_NAMES),
    # GPT-Neo: no scale, only out_proj has a bias, layer 1 local (a window of 8).
    dict(name="gpt_neo", module="transformer.h.1.attn.attention",
         config=dict(model_type="gpt_neo", hidden_size=64, num_heads=4, num_layers=2,
                     attention_types=[[["global", "local"], 1]], window_size=8),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=["o"], scale=1.0, window=8,
                  rope=None),
         names=BART_NAMES),
    # transformers v5 configs: RoPE in rope_parameters (no rope_theta or
    # rope_scaling at the top level); Gemma 3's one map per layer type.
    dict(name="llama_v5", module="model.layers.1.self_attn",
         config=dict(model_type="llama", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=3, max_position_embeddings=256,
                     rope_parameters=dict(LLAMA_SCALING, rope_theta=500000.0)),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[],
                  rope=dict(theta=500000.0, scaling=REF_LLAMA_SCALING)),
         names=LLAMA_NAMES),
    dict(name="neox_v5", module="gpt_neox.layers.0.attention",
         config=dict(model_type="gpt_neox", hidden_size=64, num_attention_heads=4,
                     num_hidden_layers=1,
                     rope_parameters={"rope_type": "default", "rope_theta": 20000.0,
                                      "partial_rotary_factor": 0.5}),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(theta=20000.0, rotary_dim=8)),
         names={"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "dense"}),
    dict(name="gemma3_v5", module="model.layers.5.self_attn",
         config=GEMMA3_V5,
         ref=dict(d=64, heads=4, kv_heads=1, head_dim=16, bias=[], qk_norm="head", eps=1e-6,
                  norm_offset=1.0, scale=1 / math.sqrt(32),
                  rope=dict(theta=1000000.0, scaling={"type": "linear", "factor": 8.0})),
         names=LLAMA_NAMES),
    dict(name="gemma3_v5_local", module="model.layers.2.self_attn",
         config=GEMMA3_V5,
         ref=dict(d=64, heads=4, kv_heads=1, head_dim=16, bias=[], qk_norm="head", eps=1e-6,
                  norm_offset=1.0, scale=1 / math.sqrt(32), rope=dict(theta=10000.0)),
         names=LLAMA_NAMES),
    # BERT's and BART's attention under other model types.
    dict(name="xlm-roberta", module="roberta.encoder.layer.1.attention",
         config=dict(model_type="xlm-roberta", hidden_size=32, num_attention_heads=4,
                     num_hidden_layers=2, position_embedding_type="absolute"),
         ref=dict(d=32, heads=4, kv_heads=4, head_dim=8, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names=BERT_NAMES),
    dict(name="electra", module="electra.encoder.layer.0.attention",
         config=dict(model_type="electra", hidden_size=32, embedding_size=16,
                     num_attention_heads=2, num_hidden_layers=1),
         ref=dict(d=32, heads=2, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names=BERT_NAMES),
    dict(name="marian", module="model.decoder.layers.1.self_attn",
         config=dict(model_type="marian", d_model=48, encoder_attention_heads=4,
                     decoder_attention_heads=3, encoder_layers=2, decoder_layers=2),
         ref=dict(d=48, heads=3, kv_heads=3, head_dim=16, bias=["q", "k", "v", "o"], rope=None),
         names=BART_NAMES),
    dict(name="blenderbot-small", module="model.encoder.layers.0.self_attn",
         config=dict(model_type="blenderbot-small", d_model=32, encoder_attention_heads=2,
                     decoder_attention_heads=2, encoder_layers=1, decoder_layers=1),
         ref=dict(d=32, heads=2, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"], rope=None,
                  causal=False),
         names=BART_NAMES),
    # Llama 4 text (see LLAMA4_TEXT): a RoPE layer (chunks of 16, L2
    # QK-norm, Scout's scaling) and a NoPE layer (temperature tuning with
    # floor_scale 8: T = 37 reaches floor 4).
    dict(name="llama4_text", module="model.layers.1.self_attn", config=LLAMA4_TEXT,
         ref=LLAMA4_ROPE_REF, names=LLAMA_NAMES),
    dict(name="llama4_text_nope", module="model.layers.3.self_attn", config=LLAMA4_TEXT,
         ref=LLAMA4_NOPE_REF, names=LLAMA_NAMES),
    dict(name="llama4_layer_types", module="model.layers.2.self_attn", config=LLAMA4_TYPED,
         ref=dict(d=48, heads=6, kv_heads=2, head_dim=8, bias=[], qk_norm="l2", eps=1e-6,
                  rope=dict(style="interleaved", theta=500000.0)),
         names=LLAMA_NAMES),
    dict(name="llama4_no_rope_layers", module="model.layers.0.self_attn", config=LLAMA4_TYPED,
         ref=dict(d=48, heads=6, kv_heads=2, head_dim=8, bias=[], rope=None,
                  temperature=(4, 0.1)),
         names=LLAMA_NAMES),
    dict(name="llama4_text_bias", module="model.layers.0.self_attn", config=LLAMA4_BIAS,
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"], chunk=8,
                  rope=dict(style="interleaved", theta=500000.0)),
         names=LLAMA_NAMES),
    # attn_temperature_tuning false: the NoPE layer is plain causal attention.
    dict(name="llama4_nope_notemp", module="model.layers.3.self_attn",
         config=dict(LLAMA4_BIAS, attn_temperature_tuning=False),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"], rope=None),
         names=LLAMA_NAMES),
    # Llama4ForConditionalGeneration: model_type llama4, the text model's
    # config in text_config, its tensors under language_model.model.
    dict(name="llama4", module="language_model.model.layers.1.self_attn",
         config=dict(model_type="llama4", architectures=["Llama4ForConditionalGeneration"],
                     text_config=LLAMA4_TEXT,
                     vision_config=dict(model_type="llama4_vision_model", hidden_size=32,
                                        num_hidden_layers=1, num_attention_heads=2)),
         ref=LLAMA4_ROPE_REF, names=LLAMA_NAMES),
    dict(name="llama4_mm_nope", module="language_model.model.layers.3.self_attn",
         config=dict(model_type="llama4", architectures=["Llama4ForConditionalGeneration"],
                     text_config=LLAMA4_TEXT,
                     vision_config=dict(model_type="llama4_vision_model", hidden_size=32,
                                        num_hidden_layers=1, num_attention_heads=2)),
         ref=LLAMA4_NOPE_REF, names=LLAMA_NAMES),
    # Jamba (no position encoding, Mamba on most layers; see jamba_ref):
    # layer 5 under period 4 / offset 1 (the other attention layer, 1, holds
    # a decoy copy); layer 4 under the default period and offset, causal
    # although the config has a sliding_window (as HF computes it).
    dict(name="jamba", module="model.layers.5.self_attn", config=JAMBA,
         ref=jamba_ref(JAMBA, "model.layers.5.self_attn"), names=LLAMA_NAMES,
         decoys=["model.layers.1.self_attn"]),
    dict(name="jamba_sliding", module="model.layers.4.self_attn", config=JAMBA_SLIDING,
         ref=jamba_ref(JAMBA_SLIDING, "model.layers.4.self_attn"), names=LLAMA_NAMES),
    # Phi-3.5-MoE (see PHIMOE, phimoe_ref): the mscale on cos and sin, the
    # short and the long factors; the config's defaults.
    dict(name="phimoe", module="model.layers.1.self_attn", config=PHIMOE,
         ref=phimoe_ref(PHIMOE, 37), names=LLAMA_NAMES),
    dict(name="phimoe_long", module="model.layers.0.self_attn", config=PHIMOE_LONG,
         ref=phimoe_ref(PHIMOE_LONG, 37), names=LLAMA_NAMES),
    dict(name="phimoe_defaults", module="model.layers.0.self_attn", config=PHIMOE_DEFAULTS,
         ref=phimoe_ref(PHIMOE_DEFAULTS, 37), names=LLAMA_NAMES),
    # Mllama (see MLLAMA, mllama_ref): a self-attention layer of the text
    # model; a cross-attention layer (x_kv: 23 cross-attention states; the
    # other cross layer holds a decoy copy, and the layer's gate tensors,
    # cross_attn_attn_gate and cross_attn_mlp_gate, are beside its
    # cross_attn); MllamaTextConfig's defaults (cross_attention_layers, 8
    # key-value heads); the vision encoders' layers (the other encoder's layer
    # of the same index holds a decoy copy).
    dict(name="mllama", module="language_model.model.layers.2.self_attn", config=MLLAMA,
         ref=mllama_ref(MLLAMA, "language_model.model.layers.2.self_attn"), names=LLAMA_NAMES),
    dict(name="mllama_cross", module="language_model.model.layers.3.cross_attn", config=MLLAMA,
         ref=mllama_ref(MLLAMA, "language_model.model.layers.3.cross_attn"), names=LLAMA_NAMES,
         x_kv_len=23, decoys=["language_model.model.layers.1.cross_attn"],
         extra={"language_model.model.layers.3.cross_attn_attn_gate": [0.5],
                "language_model.model.layers.3.cross_attn_mlp_gate": [-0.25]}),
    dict(name="mllama_defaults", module="language_model.model.layers.3.cross_attn",
         config=MLLAMA_DEFAULTS,
         ref=mllama_ref(MLLAMA_DEFAULTS, "language_model.model.layers.3.cross_attn"),
         names=LLAMA_NAMES, x_kv_len=19),
    dict(name="mllama_vision", module="vision_model.transformer.layers.1.self_attn",
         config=MLLAMA, ref=mllama_ref(MLLAMA, "vision_model.transformer.layers.1.self_attn"),
         names=LLAMA_NAMES, decoys=["vision_model.global_transformer.layers.1.self_attn"]),
    dict(name="mllama_global", module="vision_model.global_transformer.layers.0.self_attn",
         config=MLLAMA,
         ref=mllama_ref(MLLAMA, "vision_model.global_transformer.layers.0.self_attn"),
         names=LLAMA_NAMES, decoys=["vision_model.transformer.layers.0.self_attn"]),
    # RecurrentGemma (see RGEMMA, recurrent_gemma_ref): partial rotary, MQA,
    # o_proj's bias; attention_bias and block_types of its own.
    dict(name="recurrent_gemma", module="model.layers.5.temporal_block", config=RGEMMA,
         ref=recurrent_gemma_ref(RGEMMA, "model.layers.5.temporal_block"), names=LLAMA_NAMES,
         decoys=["model.layers.2.temporal_block"]),
    dict(name="recurrent_gemma_bias", module="model.layers.2.temporal_block", config=RGEMMA_BIAS,
         ref=recurrent_gemma_ref(RGEMMA_BIAS, "model.layers.2.temporal_block"),
         names=LLAMA_NAMES),
    # Granite 4.0-H (see GRANITE4H, granitemoehybrid_ref): a NoPE layer
    # scaled by attention_multiplier 0.0078125 (the other attention layer,
    # 1, holds a decoy copy); a rope layer with GQA, the four biases and the
    # default multiplier 1.0.
    dict(name="granitemoehybrid", module="model.layers.3.self_attn", config=GRANITE4H,
         ref=granitemoehybrid_ref(GRANITE4H, "model.layers.3.self_attn"), names=LLAMA_NAMES,
         decoys=["model.layers.1.self_attn"]),
    dict(name="granitemoehybrid_rope", module="model.layers.0.self_attn", config=GRANITE4H_ROPE,
         ref=granitemoehybrid_ref(GRANITE4H_ROPE, "model.layers.0.self_attn"),
         names=LLAMA_NAMES),
    # Bamba (see BAMBA, bamba_ref): rotate_half on half of each head, the
    # default 8 key-value heads (layer 1 holds a decoy copy); GQA of its own.
    dict(name="bamba", module="model.layers.3.self_attn", config=BAMBA,
         ref=bamba_ref(BAMBA, "model.layers.3.self_attn"), names=LLAMA_NAMES,
         decoys=["model.layers.1.self_attn"]),
    dict(name="bamba_gqa", module="model.layers.0.self_attn", config=BAMBA_GQA,
         ref=bamba_ref(BAMBA_GQA, "model.layers.0.self_attn"), names=LLAMA_NAMES),
    # LFM2 (see LFM2, lfm2_ref): per-head RMS QK-norm (q_layernorm,
    # k_layernorm) before RoPE, out_proj; the layers by layer_types, by
    # full_attn_idxs (layer 1 holds a decoy copy, norms included), and by
    # neither (all attention).
    dict(name="lfm2", module="model.layers.2.self_attn", config=LFM2,
         ref=lfm2_ref(LFM2, "model.layers.2.self_attn"), names=LFM2_NAMES, norms=LFM2_NORMS),
    dict(name="lfm2_idxs", module="model.layers.3.self_attn", config=LFM2_IDXS,
         ref=lfm2_ref(LFM2_IDXS, "model.layers.3.self_attn"), names=LFM2_NAMES,
         norms=LFM2_NORMS, decoys=["model.layers.1.self_attn"]),
    dict(name="lfm2_all_attention", module="model.layers.1.self_attn", config=LFM2_ALL,
         ref=lfm2_ref(LFM2_ALL, "model.layers.1.self_attn"), names=LFM2_NAMES,
         norms=LFM2_NORMS),
    # DBRX (see DBRX, dbrx_ref): the fused Wqkv [q | k | v] (fuse(), layout
    # qkv) clamped by clip_qkv, GQA; attn_config's defaults (MQA, theta
    # 10000, no clip).
    dict(name="dbrx", module="transformer.blocks.1.norm_attn_norm.attn", layout="qkv",
         fused="Wqkv", o="out_proj", config=DBRX,
         ref=dbrx_ref(DBRX, "transformer.blocks.1.norm_attn_norm.attn"),
         decoys=["transformer.blocks.2.norm_attn_norm.attn"],
         extra={"transformer.blocks.1.norm_attn_norm.norm_1.weight": np.ones(64),
                "transformer.blocks.1.norm_attn_norm.norm_2.weight": np.ones(64)}),
    dict(name="dbrx_noclip", module="transformer.blocks.0.norm_attn_norm.attn", layout="qkv",
         fused="Wqkv", o="out_proj", config=DBRX_NOCLIP,
         ref=dbrx_ref(DBRX_NOCLIP, "transformer.blocks.0.norm_attn_norm.attn")),
    # GLM-4-0414 (glm4): GLM's attention (HF: Glm4Attention(GlmAttention)):
    # interleaved RoPE on half the head, q/k/v biases (attention_bias).
    dict(name="glm4", module="model.layers.1.self_attn",
         config=dict(model_type="glm4", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                     partial_rotary_factor=0.5, attention_bias=True, rope_theta=10000.0),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v"],
                  rope=dict(theta=10000.0, style="interleaved", rotary_dim=8)),
         names=LLAMA_NAMES),
    # BERT / RoBERTa position_embedding_type relative_key and
    # relative_key_query (BertSelfAttention: q . E, and k . E, before the
    # scale; E from attention.self.distance_embedding.weight [2P - 1,
    # head_dim], P = max_position_embeddings; every layer has its own table:
    # the other layer holds a decoy copy). bert: T = P = 20 (the whole table);
    # roberta: T = 17 < P = 24.
    dict(name="bert_relative_key", module="bert.encoder.layer.1.attention",
         config=dict(model_type="bert", hidden_size=32, num_attention_heads=4,
                     num_hidden_layers=2, position_embedding_type="relative_key",
                     max_position_embeddings=20),
         ref=dict(d=32, heads=4, kv_heads=4, head_dim=8, bias=["q", "k", "v", "o"],
                  rope=None, causal=False, relkey=(20, False)),
         names=BERT_NAMES, T=20, decoys=["bert.encoder.layer.0.attention"]),
    dict(name="roberta_relative_key_query", module="roberta.encoder.layer.0.attention",
         config=dict(model_type="roberta", hidden_size=48, num_attention_heads=4,
                     num_hidden_layers=2, position_embedding_type="relative_key_query",
                     max_position_embeddings=24),
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=12, bias=["q", "k", "v", "o"],
                  rope=None, causal=False, relkey=(24, True)),
         names=BERT_NAMES, T=17, decoys=["roberta.encoder.layer.1.attention"]),
    # DistilBERT (MultiHeadSelfAttention: q_lin, k_lin, v_lin, out_lin, all
    # biased; config dim / n_heads / n_layers) and the ViT family
    # (ViTSelfAttention under attention.attention.{query,key,value}, its
    # ViTSelfOutput.dense under attention.output; qkv_bias, default true):
    # bidirectional, 1/sqrt(head_dim).
    dict(name="distilbert", module="distilbert.transformer.layer.1.attention",
         config=dict(model_type="distilbert", dim=32, n_heads=4, n_layers=2),
         ref=dict(d=32, heads=4, kv_heads=4, head_dim=8, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names={"q": "q_lin", "k": "k_lin", "v": "v_lin", "o": "out_lin"},
         decoys=["distilbert.transformer.layer.0.attention"]),
    dict(name="vit", module="vit.encoder.layer.0.attention",
         config=dict(model_type="vit", hidden_size=48, num_attention_heads=4,
                     num_hidden_layers=2, qkv_bias=False),
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=12, bias=["o"], rope=None, causal=False),
         names=VIT_NAMES, decoys=["vit.encoder.layer.1.attention"]),
    dict(name="dinov2", module="dinov2.encoder.layer.1.attention",
         config=dict(model_type="dinov2", hidden_size=32, num_attention_heads=2,
                     num_hidden_layers=2),
         ref=dict(d=32, heads=2, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names=VIT_NAMES),
    # CLIP (CLIPAttention: q_proj, k_proj, v_proj, out_proj, all biased):
    # its text encoder causal, its vision encoder bidirectional, each with
    # its sub-config's sizes (text_config, vision_config); the vision tower
    # of a LLaVA (vision_config without model_type: CLIPVisionConfig) and
    # of a PaliGemma (siglip_vision_model), whose text_config is a
    # language model of another size: the decoy is the language model's
    # layer of the same index.
    dict(name="clip_text", module="text_model.encoder.layers.1.self_attn",
         config=dict(model_type="clip",
                     text_config=dict(model_type="clip_text_model", hidden_size=32,
                                      num_attention_heads=4, num_hidden_layers=2),
                     vision_config=dict(model_type="clip_vision_model", hidden_size=48,
                                        num_attention_heads=4, num_hidden_layers=3)),
         ref=dict(d=32, heads=4, kv_heads=4, head_dim=8, bias=["q", "k", "v", "o"],
                  rope=None, causal=True),
         names=CLIP_NAMES, decoys=["text_model.encoder.layers.0.self_attn"]),
    dict(name="clip_vision", module="vision_model.encoder.layers.2.self_attn",
         config=dict(model_type="clip",
                     text_config=dict(model_type="clip_text_model", hidden_size=32,
                                      num_attention_heads=4, num_hidden_layers=2),
                     vision_config=dict(model_type="clip_vision_model", hidden_size=48,
                                        num_attention_heads=4, num_hidden_layers=3)),
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=12, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names=CLIP_NAMES, decoys=["vision_model.encoder.layers.1.self_attn"],
         import_note="the vision encoder's attention, vision_config's model_type "
                     "'clip_vision_model'"),
    dict(name="llava_vision", module="vision_tower.vision_model.encoder.layers.1.self_attn",
         config=dict(model_type="llava",
                     text_config=dict(model_type="llama", hidden_size=64,
                                      num_attention_heads=4, num_hidden_layers=2),
                     vision_config=dict(hidden_size=32, num_attention_heads=2,
                                        num_hidden_layers=2)),
         ref=dict(d=32, heads=2, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names=CLIP_NAMES, decoys=["vision_tower.vision_model.encoder.layers.0.self_attn"],
         import_note="vision_config's model_type 'clip_vision_model'"),
    dict(name="paligemma_vision", module="vision_tower.vision_model.encoder.layers.0.self_attn",
         config=dict(model_type="paligemma",
                     text_config=dict(model_type="gemma2", hidden_size=32,
                                      num_attention_heads=2, num_key_value_heads=1,
                                      head_dim=16, num_hidden_layers=2),
                     vision_config=dict(model_type="siglip_vision_model", hidden_size=48,
                                        num_attention_heads=3, num_hidden_layers=2)),
         ref=dict(d=48, heads=3, kv_heads=3, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names=CLIP_NAMES, decoys=["vision_tower.vision_model.encoder.layers.1.self_attn"],
         import_note="vision_config's model_type 'siglip_vision_model'"),
    # SigLIP's text encoder: CLIP's attention, bidirectional.
    dict(name="siglip_text", module="text_model.encoder.layers.0.self_attn",
         config=dict(model_type="siglip",
                     text_config=dict(model_type="siglip_text_model", hidden_size=32,
                                      num_attention_heads=2, num_hidden_layers=2),
                     vision_config=dict(model_type="siglip_vision_model", hidden_size=48,
                                        num_attention_heads=4, num_hidden_layers=2)),
         ref=dict(d=32, heads=2, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names=CLIP_NAMES),
    # wav2vec2 / HuBERT (Wav2Vec2Attention: q/k/v/out_proj, all biased),
    # bidirectional over the frames.
    dict(name="hubert", module="hubert.encoder.layers.1.attention",
         config=dict(model_type="hubert", hidden_size=48, num_attention_heads=4,
                     num_hidden_layers=2),
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=12, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names=CLIP_NAMES, decoys=["hubert.encoder.layers.0.attention"]),
    # RoFormer: BERT's names, interleaved RoPE over the whole head (theta
    # 10000); ESM with position_embedding_type rotary: half-split RoPE.
    dict(name="roformer", module="roformer.encoder.layer.1.attention",
         config=dict(model_type="roformer", hidden_size=32, num_attention_heads=2,
                     num_hidden_layers=2),
         ref=dict(d=32, heads=2, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(style="interleaved"), causal=False),
         names=BERT_NAMES, decoys=["roformer.encoder.layer.0.attention"]),
    dict(name="esm", module="esm.encoder.layer.0.attention",
         config=dict(model_type="esm", hidden_size=32, num_attention_heads=2,
                     num_hidden_layers=2, position_embedding_type="rotary"),
         ref=dict(d=32, heads=2, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(), causal=False),
         names=BERT_NAMES, decoys=["esm.encoder.layer.1.attention"],
         import_note="EsmAttention normalizes its input first",
         # its pre-norm LayerNorm and rotary table under the module
         extra={"esm.encoder.layer.0.attention.LayerNorm.weight": np.ones(32),
                "esm.encoder.layer.0.attention.LayerNorm.bias": np.zeros(32),
                "esm.encoder.layer.0.attention.self.rotary_embeddings.inv_freq": np.ones(8)},
         note="is the LayerNorm EsmAttention applies to its input before the attention"),
    # ALBERT: every layer runs albert_layer_groups.G.albert_layers.I
    # (query, key, value, dense).
    dict(name="albert", module="albert.encoder.albert_layer_groups.1.albert_layers.0.attention",
         config=dict(model_type="albert", hidden_size=32, num_attention_heads=4,
                     num_hidden_layers=4, num_hidden_groups=2, inner_group_num=1),
         ref=dict(d=32, heads=4, kv_heads=4, head_dim=8, bias=["q", "k", "v", "o"],
                  rope=None, causal=False),
         names={"q": "query", "k": "key", "v": "value", "o": "dense"},
         decoys=["albert.encoder.albert_layer_groups.0.albert_layers.0.attention"]),
    # MPNet (MPNetAttention: attn.q/k/v/o, all biased, 1/sqrt(head_dim)):
    # T5's bidirectional buckets (32, distance 128: T = 37 reaches the log
    # buckets) from the encoder's one table, added after the scale; the
    # second case is a sentence-transformers checkpoint (no 'mpnet.' root)
    # whose module is spelled down to attention.attn.
    dict(name="mpnet", module="mpnet.encoder.layer.1.attention",
         config=dict(model_type="mpnet", hidden_size=48, num_attention_heads=4,
                     num_hidden_layers=2, relative_attention_num_buckets=32),
         table_owner="mpnet.encoder",
         ref=dict(d=48, heads=4, kv_heads=4, head_dim=12, bias=["q", "k", "v", "o"],
                  rope=None, causal=False, t5=(32, 128, True)),
         names={"q": "attn.q", "k": "attn.k", "v": "attn.v", "o": "attn.o"},
         decoys=["mpnet.encoder.layer.0.attention"],
         note="the encoder's table, every layer's"),
    dict(name="mpnet_st", module="encoder.layer.0.attention.attn",
         config=dict(model_type="mpnet", hidden_size=32, num_attention_heads=2,
                     num_hidden_layers=2),
         table_owner="encoder",
         ref=dict(d=32, heads=2, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=None, causal=False, t5=(32, 128, True)),
         names={"q": "q", "k": "k", "v": "v", "o": "o"},
         decoys=["encoder.layer.1.attention.attn"]),
    # GLM-4.5 (glm4_moe, Glm4MoeAttention): half-split RoPE on
    # partial_rotary_factor of the head (GLM-4's is interleaved), q/k/v
    # biases by attention_bias, per-head RMS QK-norm with use_qk_norm.
    dict(name="glm4_moe", module="model.layers.1.self_attn",
         config=dict(model_type="glm4_moe", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                     partial_rotary_factor=0.5, attention_bias=True, use_qk_norm=True,
                     rms_norm_eps=1e-5, rope_theta=10000.0),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v"],
                  rope=dict(theta=10000.0, rotary_dim=8), qk_norm="head", eps=1e-5),
         names=LLAMA_NAMES),
    # ERNIE 4.5: interleaved RoPE over the whole head, all four biased by
    # use_bias.
    dict(name="ernie4_5", module="model.layers.0.self_attn",
         config=dict(model_type="ernie4_5", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=1,
                     use_bias=True, rope_theta=500000.0),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(theta=500000.0, style="interleaved")),
         names=LLAMA_NAMES),
    # Seed-OSS: q/k/v biased by attention_bias (on by default), o by
    # attention_out_bias (off).
    dict(name="seed_oss", module="model.layers.0.self_attn",
         config=dict(model_type="seed_oss", hidden_size=48, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=1,
                     rope_theta=10000.0),
         ref=dict(d=48, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v"],
                  rope=dict(theta=10000.0)),
         names=LLAMA_NAMES),
    # Apertus: per-head RMS QK-norm (as Qwen3), and without rope keys
    # ApertusConfig's llama3 scaling (theta 12e6, factor 8, 8192).
    dict(name="apertus", module="model.layers.0.self_attn",
         config=dict(model_type="apertus", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=4, head_dim=16, num_hidden_layers=1,
                     rms_norm_eps=1e-5),
         ref=dict(d=64, heads=4, kv_heads=4, head_dim=16, bias=[],
                  rope=dict(theta=12000000.0,
                            scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 8192}),
                  qk_norm="head", eps=1e-5),
         names=LLAMA_NAMES, import_note="ApertusConfig's defaults"),
    # Jais 2: Llama's attention, all four biased by attention_bias (on by
    # default); Jais2Config (a LlamaConfig) leaves theta at 10000.
    dict(name="jais2", module="model.layers.0.self_attn",
         config=dict(model_type="jais2", hidden_size=32, num_attention_heads=2,
                     num_hidden_layers=1),
         ref=dict(d=32, heads=2, kv_heads=2, head_dim=16, bias=["q", "k", "v", "o"],
                  rope=dict(theta=10000.0)),
         names=LLAMA_NAMES),
    # Falcon-H1: Llama's attention with k scaled by key_multiplier (the
    # scores' factor); the multipliers around the module are noted.
    dict(name="falcon_h1", module="model.layers.1.self_attn",
         config=dict(model_type="falcon_h1", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                     key_multiplier=0.5, attention_in_multiplier=2.0, rope_theta=100000.0),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], rope=dict(theta=100000.0),
                  scale=0.5 / 4),
         names=LLAMA_NAMES, import_note="attention_in_multiplier (2)"),
    # dots1: Qwen3's attention; layers from max_window_layers on slide
    # (Dots1Config, without use_sliding_window); head_dim d / h.
    dict(name="dots1", module="model.layers.2.self_attn",
         config=dict(model_type="dots1", hidden_size=64, num_attention_heads=4,
                     num_key_value_heads=2, num_hidden_layers=3, max_window_layers=2,
                     sliding_window=8, rope_theta=10000.0, rms_norm_eps=1e-6),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[], rope=dict(theta=10000.0),
                  qk_norm="head", eps=1e-6, window=8),
         names=LLAMA_NAMES, decoys=["model.layers.1.self_attn"]),
    # GLM-4.1V's language model (text_config glm4v_text): GLM's interleaved
    # RoPE on partial_rotary_factor of the head (its M-RoPE, for text
    # tokens), q/k/v biases whatever attention_bias says.
    dict(name="glm4v", module="model.language_model.layers.0.self_attn",
         config=dict(model_type="glm4v",
                     text_config=dict(model_type="glm4v_text", hidden_size=64,
                                      num_attention_heads=4, num_key_value_heads=2,
                                      num_hidden_layers=2,
                                      partial_rotary_factor=0.5, attention_bias=False,
                                      rope_theta=10000.0,
                                      rope_scaling={"type": "default",
                                                    "mrope_section": [2, 1, 1]})),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=["q", "k", "v"],
                  rope=dict(theta=10000.0, style="interleaved", rotary_dim=8)),
         names=LLAMA_NAMES, decoys=["model.language_model.layers.1.self_attn"]),
    # Qwen3-VL's language model (text_config qwen3_vl_text): Qwen3's
    # attention; its interleaved M-RoPE rotates text tokens as plain RoPE.
    dict(name="qwen3_vl", module="model.language_model.layers.1.self_attn",
         config=dict(model_type="qwen3_vl",
                     text_config=dict(model_type="qwen3_vl_text", hidden_size=64,
                                      num_attention_heads=4, num_key_value_heads=2,
                                      head_dim=16, num_hidden_layers=2, rope_theta=5000000.0,
                                      rms_norm_eps=1e-6,
                                      rope_scaling={"rope_type": "default",
                                                    "mrope_section": [2, 3, 3],
                                                    "mrope_interleaved": True})),
         ref=dict(d=64, heads=4, kv_heads=2, head_dim=16, bias=[],
                  rope=dict(theta=5000000.0), qk_norm="head", eps=1e-6),
         names=LLAMA_NAMES, decoys=["model.language_model.layers.0.self_attn"]),
]


# Modules attnc --hf must refuse (exit 2), each with tensors of its own under
# the module's names (the refusal comes from the config, not from missing
# tensors): a Jamba Mamba layer's self_attn, Phi-MoE mscales that differ,
# Mllama's self_attn on a cross-attention layer and cross_attn on a
# self-attention layer, RecurrentGemma's temporal_block on a recurrent layer,
# a self_attn on a Mamba layer of Granite 4.0-H (layer_types) and Bamba
# (attn_layer_indices) and on an LFM2 conv layer (layer_types).
# like: the passing case whose shapes the tensors take; expect: a word the
# error must contain.
ERROR_CASES = [
    dict(name="jamba_mamba", module="model.layers.0.self_attn", config=JAMBA, like="jamba",
         expect="Mamba"),
    dict(name="phimoe_mscales", module="model.layers.1.self_attn", like="phimoe",
         config=dict(PHIMOE, rope_scaling=dict(PHIMOE["rope_scaling"], long_mscale=1.3))),
    dict(name="mllama_self_on_cross", module="language_model.model.layers.1.self_attn",
         config=MLLAMA, like="mllama"),
    dict(name="mllama_cross_on_self", module="language_model.model.layers.2.cross_attn",
         config=MLLAMA, like="mllama_cross"),
    dict(name="recurrent_gemma_recurrent", module="model.layers.0.temporal_block", config=RGEMMA,
         like="recurrent_gemma"),
    dict(name="granitemoehybrid_mamba", module="model.layers.2.self_attn", config=GRANITE4H,
         like="granitemoehybrid", expect="mamba"),
    dict(name="bamba_mamba", module="model.layers.0.self_attn", config=BAMBA, like="bamba",
         expect="mamba"),
    dict(name="lfm2_conv", module="model.layers.1.self_attn", config=LFM2, like="lfm2",
         expect="conv"),
]


# Checked through the Python package's pack as well (llama4_text: a
# QK-norm without q_norm / k_norm tensors; lfm2: q_layernorm / k_layernorm
# as an RMS norm's weights, out_proj).
PY_PACK = ("phi_qkln", "stablelm_qkln", "cohere_qkn", "qwen3", "llama4_text", "lfm2",
           # BERT's self.distance_embedding.weight through the package's aliases
           "bert_relative_key", "roberta_relative_key_query",
           # ViT's attention.attention.query, DistilBERT's q_lin
           "vit", "distilbert",
           # ALBERT's bare query, key, value; MPNet's attn.q and encoder table
           "albert", "mpnet")


def fuse(c, w):
    """The checkpoint's fused QKV weight and bias from separate ones, laid
    out as the architecture's modeling code views them."""
    ref = c["ref"]
    H, Hkv, dh = ref["heads"], ref["kv_heads"], ref["head_dim"]
    out = {}
    for kind in ("weight", "bias"):
        q, k, v = (w.get(f"{p}_proj.{kind}") for p in "qkv")
        if q is None:
            continue
        if c["layout"] == "qkv":
            f = np.concatenate([q, k, v])
        elif c["layout"] == "per_head":  # view(.., H, 3, dh)
            f = np.concatenate([np.concatenate([q[h * dh:(h + 1) * dh], k[h * dh:(h + 1) * dh],
                                                v[h * dh:(h + 1) * dh]]) for h in range(H)])
        else:  # Falcon new_decoder_architecture: view(.., Hkv, G + 2, dh)
            G = H // Hkv
            f = np.concatenate([np.concatenate([q[g * G * dh:(g + 1) * G * dh],
                                                k[g * dh:(g + 1) * dh], v[g * dh:(g + 1) * dh]])
                                for g in range(Hkv)])
        out[f"{c['module']}.{c['fused']}.{kind}"] = np.ascontiguousarray(f)
    for kind in ("weight", "bias"):
        if f"o_proj.{kind}" in w:
            out[f"{c['module']}.{c['o']}.{kind}"] = w[f"o_proj.{kind}"]
    return out


def norm_name(c, key):
    """A QK-norm tensor of weights_of (q_norm.weight, ...) under the
    checkpoint's name: the case's norms map (LFM2: q_layernorm), else as is."""
    head, dot, rest = key.partition(".")
    return c.get("norms", {}).get(head, head) + dot + rest


def run(cmd, ok=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if ok and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="",
                    help="comma-separated case names: run only these (while working on them)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rng = np.random.default_rng(11)
    passed = failed = 0
    compared = set()  # the cases whose y matched the reference
    only = set(filter(None, a.only.split(",")))
    for c in CASES + FUSED_CASES + NORM_CASES + VARIANT_CASES:
        if only and c["name"] not in only:
            continue
        d = os.path.join(a.work, c["name"])
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c["config"], f)
        ref = c["ref"]
        w = real_models.weights_of(ref, rng)  # q_proj.weight ... in attnc's names
        # The checkpoint: this module's tensors under its own names, plus a
        # decoy copy (other values) of the same names in another layer.
        tensors = fuse(c, w) if "fused" in c else {}
        for kind in ("weight",):
            for key in w:  # q_norm.weight, q_layernorm.bias, q_layernorm.norms.0.weight, ...
                if key.startswith(("q_norm", "k_norm", "q_layernorm", "k_layernorm")):
                    tensors[f"{c['module']}.{norm_name(c, key)}"] = w[key]
            if "sinks" in w:
                tensors[f"{c['module']}.sinks"] = w["sinks"]
            if "distance_embedding.weight" in w:  # BERT: the layer's attention.self table
                tensors[f"{c['module']}.self.distance_embedding.weight"] = \
                    w["distance_embedding.weight"]
            if "relative_attention_bias.weight" in w:
                tensors[f"{c['table_owner']}.relative_attention_bias.weight"] = \
                    w["relative_attention_bias.weight"]
                if "decoy_table" in c:  # another block's table, other values
                    tensors[f"{c['decoy_table']}.relative_attention_bias.weight"] = \
                        (w["relative_attention_bias.weight"] * 3 + 1).astype(np.float32)
        for p, hf in c.get("names", {}).items():
            for kind in ("weight", "bias"):
                key = f"{p}_proj.{kind}"
                if key in w:
                    tensors[f"{c['module']}.{hf}.{kind}"] = w[key]
                    decoy = re.sub(r"\.\d+\.", ".9.", c["module"], count=1)
                    assert decoy != c["module"]
                    tensors[f"{decoy}.{hf}.{kind}"] = (w[key] * 3 + 1).astype(np.float32)
        # Decoy copies (other values) of all the module's tensors under other
        # modules of the same shapes; tensors beside the module (gates).
        for other in c.get("decoys", []):
            for name in [n for n in tensors if n.startswith(c["module"] + ".")]:
                tensors[other + name[len(c["module"]):]] = \
                    (tensors[name] * 3 + 1).astype(np.float32)
        for name, t in c.get("extra", {}).items():
            tensors[name] = np.asarray(t, dtype=np.float32)
        save_safetensors(os.path.join(d, "model.safetensors"), tensors)
        lib = os.path.join(d, f"lib{c['name']}.so")
        try:
            rc = run(["attnc", "--hf", d, "--module", c["module"], "-o", lib,
                      "--emit-spec", os.path.join(d, "spec.yaml")]
                     + ([] if c in CASES else ONE_PATH))
            if c.get("import_note") and c["import_note"] not in rc.stderr:
                raise RuntimeError(f"no note '{c['import_note']}' from attnc: "
                                   f"{rc.stderr.strip()}")
            T = c.get("T", 45 if c["name"] == "phi3" else 37)
            x = rng.standard_normal((2, T, ref["d"])).astype(np.float32)
            xp, yp = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
            np.save(xp, x)
            x_kv, kv_arg = None, []
            if c.get("x_kv_len"):  # cross-attention: the K/V input
                x_kv = rng.standard_normal((2, c["x_kv_len"], ref["d"])).astype(np.float32)
                kv_arg = ["--x-kv", os.path.join(d, "x_kv.npy")]
                np.save(kv_arg[1], x_kv)
            r = run(["attnc-run", lib, "--hf", d, "--module", c["module"], "--x", xp,
                     "--out", yp] + kv_arg)
            if c.get("quiet") and "warning" in r.stderr:
                raise RuntimeError(f"a warning where none is due: {r.stderr.strip()}")
            if "does not compute the attention" in r.stderr or "not compared with" in r.stderr:
                # attnc-run --hf compares the kernel with the module's config:
                # this one was compiled from it.
                raise RuntimeError(f"the kernel and its own config differ: {r.stderr.strip()}")
            if c.get("note") and c["note"] not in r.stderr:
                raise RuntimeError(f"no note '{c['note']}' from attnc-run: {r.stderr.strip()}")
        except RuntimeError as e:
            print(f"FAIL: {c['name']}: {e}")
            failed += 1
            continue
        y = np.load(yp).astype(np.float64)
        want = real_models.reference(ref, w, x, rope=ref["rope"], x_kv=x_kv)
        err = np.abs(y - want)
        if np.all(err <= ATOL + RTOL * np.abs(want)):
            passed += 1
            compared.add(c["name"])
            print(f"PASS: {c['name']} --module {c['module']}: max err {err.max():.2e}")
        else:
            failed += 1
            print(f"FAIL: {c['name']} --module {c['module']}: max err {err.max():.2e}")
        checks = []
        if "fused" in c or c["name"] in ("t5_enc", "switch_transformers"):
            # attnc.from_hf (Python), which reads the module's tensors with
            # libattnrt's loader as attnc-run --hf does: the fused QKV tensor
            # cut (no warning of its bias: the kernel adds it), T5's table
            # from block 0; compiled through the cache.
            def from_hf(d=d, module=c["module"]):
                with warnings.catch_warnings():
                    warnings.simplefilter("error", attnc.AttncWarning)
                    return attnc.from_hf(d, module, cache_dir=os.path.join(a.work, "pyc"))
            checks.append(("python from_hf", from_hf))
        if c["name"] in PY_PACK:
            # The Python package's own name mapping (attnc.Kernel.pack of the
            # checkpoint's tensors, as attnc.from_hf does): the QK-norm
            # spellings, StableLM's stacked norms, Cohere's [heads, head_dim].
            def pack(lib=lib, d=d, module=c["module"]):
                k = attnc.Kernel(lib)
                return k, k.pack(attnc.load_safetensors(os.path.join(d, "model.safetensors")),
                                 prefix=module + ".")
            checks.append(("python pack", pack))
        for what, make in checks:
            try:
                k, packed = make()
                py_err = np.abs(k.forward(x, packed).astype(np.float64) - want)
                ok = bool(np.all(py_err <= ATOL + RTOL * np.abs(want)))
                detail = f"max err {py_err.max():.2e}"
            except Exception as e:  # noqa: BLE001 (reported as a FAIL)
                ok, detail = False, f"{type(e).__name__}: {e}"
            passed, failed = passed + ok, failed + (not ok)
            print(f"{'PASS' if ok else 'FAIL'}: {c['name']} {what}: {detail}")
    # The refusals: exit 2, an error (with the expected word) on stderr, where
    # attnc compiled the like case's module of the same model type (else the
    # refusal could be the model type's, not the module's).
    like = {c["name"]: c for c in CASES + FUSED_CASES + NORM_CASES + VARIANT_CASES}
    for c in ERROR_CASES:
        if only and c["name"] not in only:
            continue
        d = os.path.join(a.work, c["name"])
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c["config"], f)
        src = like[c["like"]]
        w = real_models.weights_of(src["ref"], rng)
        tensors = {}
        for key, t in w.items():
            p = key.split("_proj.")[0] if "_proj." in key else None
            # (q_proj.weight under the checkpoint's name; q_norm.weight as is,
            # or as the case's norms spell it)
            name = f"{src['names'][p]}{key[len(p) + 5:]}" if p else norm_name(src, key)
            tensors[f"{c['module']}.{name}"] = t
        save_safetensors(os.path.join(d, "model.safetensors"), tensors)
        r = run(["attnc", "--hf", d, "--module", c["module"], "-o",
                 os.path.join(d, f"lib{c['name']}.so")], ok=False)
        err = [ln for ln in r.stderr.splitlines() if "error" in ln]
        ok = (r.returncode == 2 and bool(err) and c["like"] in compared
              and (c.get("expect") is None or c["expect"] in r.stderr))
        passed, failed = passed + ok, failed + (not ok)
        print(f"{'PASS' if ok else 'FAIL'}: {c['name']} --module {c['module']}: exit "
              f"{r.returncode}: {err[0] if err else r.stderr.strip()}"
              + ("" if c["like"] in compared else f" (but the {c['like']} case did not pass)"))
    print(f"hf_import: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
