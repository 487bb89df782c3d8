#!/usr/bin/env python3
"""make_weights.py OUT.safetensors [--layers 3] [--d-model 64] [--dtype F32|BF16]

Writes a GPT-2-style checkpoint of attention blocks, h.N.attn.c_attn.weight
(d, 3d), c_attn.bias, c_proj.weight (d, d), c_proj.bias (and GPT-2's
h.N.attn.bias mask buffer), as a .safetensors file, with NumPy only: an
8-byte little-endian header length, a JSON header, then the raw bytes.
"""
import argparse
import json
import struct

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--dtype", choices=["F32", "BF16"], default="F32")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    d, rng = a.d_model, np.random.default_rng(a.seed)
    tensors = {}
    for n in range(a.layers):
        p = f"h.{n}.attn."
        tensors[p + "bias"] = np.tril(np.ones((1, 1, 8, 8), np.bool_))
        tensors[p + "c_attn.weight"] = rng.standard_normal((d, 3 * d)) / np.sqrt(d)
        tensors[p + "c_attn.bias"] = rng.uniform(-0.2, 0.2, 3 * d)
        tensors[p + "c_proj.weight"] = rng.standard_normal((d, d)) / np.sqrt(d)
        tensors[p + "c_proj.bias"] = rng.uniform(-0.2, 0.2, d)
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        if t.dtype == np.bool_:
            code, raw = "BOOL", t.tobytes()
        elif a.dtype == "BF16":
            code = "BF16"
            raw = (t.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
        else:
            code, raw = "F32", t.astype("<f4").tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(a.out, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


if __name__ == "__main__":
    main()
