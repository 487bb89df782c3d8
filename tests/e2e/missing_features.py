#!/usr/bin/env python3
"""Writes a small Llama-style checkpoint (one layer of q/k/v/o_proj weights
plus what real checkpoints carry beside them: rotary_emb.inv_freq, a
config.json with rope_theta, Qwen3's q_norm/k_norm, a bias) for the
missing-feature warnings test.

Usage: missing_features.py DIR [--no-extras]
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numpy as np  # noqa: E402
from attnc import save_safetensors  # noqa: E402

d = sys.argv[1]
extras = "--no-extras" not in sys.argv
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(3)
p = "model.layers.0.self_attn."
t = {p + "q_proj.weight": rng.standard_normal((64, 64)).astype(np.float32) / 8,
     p + "k_proj.weight": rng.standard_normal((32, 64)).astype(np.float32) / 8,
     p + "v_proj.weight": rng.standard_normal((32, 64)).astype(np.float32) / 8,
     p + "o_proj.weight": rng.standard_normal((64, 64)).astype(np.float32) / 8}
cfg = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
       "num_key_value_heads": 2}
if extras:
    t[p + "rotary_emb.inv_freq"] = (1.0 / 10000 ** (np.arange(0, 16, 2) / 16)).astype(np.float32)
    t[p + "q_norm.weight"] = np.ones(16, dtype=np.float32)
    # Persimmon's QK LayerNorm has a bias: a QK-norm's, not a LayerNorm
    # after the attention.
    t[p + "k_layernorm.bias"] = np.zeros(16, dtype=np.float32)
    t[p + "o_proj.bias"] = np.zeros(64, dtype=np.float32)
    # BERT's output.LayerNorm (over the residual sum, after the output
    # projection): one warning for its weight and bias.
    t[p + "output.LayerNorm.weight"] = np.ones(64, dtype=np.float32)
    t[p + "output.LayerNorm.bias"] = np.zeros(64, dtype=np.float32)
    cfg["rope_theta"] = 10000.0
save_safetensors(os.path.join(d, "model.safetensors"), t)
with open(os.path.join(d, "config.json"), "w") as f:
    json.dump(cfg, f)
