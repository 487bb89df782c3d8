#!/usr/bin/env python3
"""Writes one set of torch_in_proj weights in every format attnc-run reads,
plus an input, NumPy references and damaged files (for tests/weights).

  npy/                     layer 1 as DIR/<name>.npy (float32)
  ckpt.npz, ckpt_z.npz     three layers 'h.N.attn.<name>' (np.savez, np.savez_compressed)
  ckpt_f16.npz             the same in float16
  ckpt.safetensors         three layers, float32 (hand-written writer: json + bytes)
  sharded/, sharded_missing/  the same in two shards with an index (the second
                           shard absent from sharded_missing/)
  bert.npz                 the same layers under BERT's names (self.query, ..., output.dense)
  ckpt_bf16.safetensors    the same in bfloat16
  x.npy                    input [2, 7, d]
  ref.npy, ref_f16.npy, ref_bf16.npy   y from layer 1 (float64 NumPy MHA, causal)
  bad_*.safetensors, bad_*.npz         truncated / overlapping / bad JSON / wrong shape
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from attnc import save_safetensors  # noqa: E402
from attnc.weights import bf16_bits  # noqa: E402

NAMES = ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]


def mha(x, w, heads):
    """Causal multi-head attention in float64, torch_in_proj layout."""
    wi, bi, wo, bo = (np.asarray(w[n], np.float64) for n in NAMES)
    b, t, d = x.shape
    dh = d // heads
    qkv = x.astype(np.float64) @ wi.T + bi
    q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(b, t, heads, dh).transpose(0, 2, 1, 3)
               for i in range(3))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)
    s = s + np.triu(np.full((t, t), -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
    return o @ wo.T + bo


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--heads", type=int, default=2)
    a = ap.parse_args()
    d, rng = a.d, np.random.default_rng(7)
    layers = [{"in_proj_weight": rng.standard_normal((3 * d, d)) / np.sqrt(d),
               "in_proj_bias": rng.uniform(-0.5, 0.5, 3 * d),
               "out_proj.weight": rng.standard_normal((d, d)) / np.sqrt(d),
               "out_proj.bias": rng.uniform(-0.5, 0.5, d)} for _ in range(3)]
    layers = [{n: v.astype(np.float32) for n, v in l.items()} for l in layers]
    ckpt = {f"h.{i}.attn.{n}": v for i, l in enumerate(layers) for n, v in l.items()}
    ckpt["h.1.attn.masked_bias"] = np.array(-1e4, np.float32)  # unused extras
    os.makedirs(os.path.join(a.work, "npy"), exist_ok=True)
    for n, v in layers[1].items():
        np.save(os.path.join(a.work, "npy", n + ".npy"), v)
    np.savez(os.path.join(a.work, "ckpt.npz"), **ckpt)
    np.savez_compressed(os.path.join(a.work, "ckpt_z.npz"), **ckpt)
    np.savez(os.path.join(a.work, "ckpt_f16.npz"), **{k: v.astype(np.float16) for k, v in ckpt.items()})
    save_safetensors(os.path.join(a.work, "ckpt.safetensors"), ckpt, metadata={"format": "pt"})
    save_safetensors(os.path.join(a.work, "ckpt_bf16.safetensors"), ckpt, dtype="BF16")
    # Hugging Face's sharded layout: layers 0-1 in shard 1, layer 2 in
    # shard 2, model.safetensors.index.json's weight_map naming them;
    # sharded_missing/ lacks shard 2 (an interrupted download).
    import json
    shards = {"model-00001-of-00002.safetensors": {k: v for k, v in ckpt.items()
                                                   if not k.startswith("h.2.")},
              "model-00002-of-00002.safetensors": {k: v for k, v in ckpt.items()
                                                   if k.startswith("h.2.")}}
    index = {"metadata": {}, "weight_map": {k: f for f, t in shards.items() for k in t}}
    for sub, files in (("sharded", list(shards)), ("sharded_missing", list(shards)[:1])):
        os.makedirs(os.path.join(a.work, sub), exist_ok=True)
        for f in files:
            save_safetensors(os.path.join(a.work, sub, f), shards[f])
        with open(os.path.join(a.work, sub, "model.safetensors.index.json"), "w") as fh:
            json.dump(index, fh)
    # The same layer 1 as a Hugging Face BERT checkpoint would name it:
    # separate query/key/value (stacked into in_proj_* at load time).
    bert = {}
    for i, layer in enumerate(layers):
        p = f"encoder.layer.{i}.attention."
        for j, part in enumerate(["query", "key", "value"]):
            bert[p + f"self.{part}.weight"] = layer["in_proj_weight"][j * d:(j + 1) * d]
            bert[p + f"self.{part}.bias"] = layer["in_proj_bias"][j * d:(j + 1) * d]
        bert[p + "output.dense.weight"] = layer["out_proj.weight"]
        bert[p + "output.dense.bias"] = layer["out_proj.bias"]
        bert[p + "output.LayerNorm.weight"] = np.ones(d, np.float32)
    np.savez(os.path.join(a.work, "bert.npz"), **bert)
    x = rng.standard_normal((2, 7, d)).astype(np.float32)
    np.save(os.path.join(a.work, "x.npy"), x)
    np.save(os.path.join(a.work, "ref.npy"), mha(x, layers[1], a.heads))
    np.save(os.path.join(a.work, "ref_f16.npy"),
            mha(x, {n: v.astype(np.float16) for n, v in layers[1].items()}, a.heads))
    # (save_safetensors rounds to nearest even, as torch's .to(bfloat16))
    bf16 = {n: (bf16_bits(v).astype(np.uint32) << 16).view(np.float32)
            for n, v in layers[1].items()}
    np.save(os.path.join(a.work, "ref_bf16.npy"), mha(x, bf16, a.heads))

    # Damaged files.
    good = open(os.path.join(a.work, "ckpt.safetensors"), "rb").read()
    with open(os.path.join(a.work, "bad_truncated.safetensors"), "wb") as f:
        f.write(good[:-10])
    (n,) = struct.unpack("<Q", good[:8])
    header = json.loads(good[8:8 + n])

    def rewrite(name, header):
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(os.path.join(a.work, name), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + good[8 + n:])

    h = json.loads(json.dumps(header))
    h["h.1.attn.in_proj_bias"]["data_offsets"] = [4, 4 + 4 * 3 * d]
    rewrite("bad_overlap.safetensors", h)
    with open(os.path.join(a.work, "bad_json.safetensors"), "wb") as f:
        f.write(good[:8] + b"{\"h.1.attn.in_proj_weight\": [" + good[8 + 29:])
    wrong = dict(ckpt)
    wrong["h.1.attn.in_proj_weight"] = wrong["h.1.attn.in_proj_weight"].T.copy()
    np.savez(os.path.join(a.work, "bad_shape.npz"), **wrong)


if __name__ == "__main__":
    main()
