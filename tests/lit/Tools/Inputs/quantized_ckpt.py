"""Writes three one-layer Llama checkpoints (d_model 128, 4 heads, 2 kv
heads) under DIR: float/ (bf16 projections, the unquantized model),
gptq/ (GPTQ's packed q_proj.qweight, qzeros and scales instead of
q_proj.weight, quantization_config gptq) and fp8/ (F8_E4M3 weights with
128x128 weight_scale_inv blocks, quantization_config fp8), as those
checkpoints lay out their safetensors. Usage: quantized_ckpt.py DIR."""
import json
import os
import struct
import sys

import numpy as np

PROJ = [("q_proj", 128), ("k_proj", 64), ("v_proj", 64), ("o_proj", 128)]


def write(path, tensors):
    """tensors: [(name, safetensors dtype, shape, bytes)]."""
    header, off = {}, 0
    for name, dt, shape, data in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(t[3] for t in tensors))


def main():
    root = sys.argv[1]
    rng = np.random.default_rng(0)
    base = {"model_type": "llama", "hidden_size": 128, "num_attention_heads": 4,
            "num_key_value_heads": 2, "num_hidden_layers": 1, "rope_theta": 10000.0}
    for d, dtype, quant in [("float", "bfloat16", None),
                            ("gptq", "float16", {"quant_method": "gptq", "bits": 4,
                                                 "group_size": 128}),
                            ("fp8", "bfloat16", {"quant_method": "fp8", "fmt": "e4m3",
                                                 "weight_block_size": [128, 128]})]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
        cfg = dict(base, torch_dtype=dtype)
        if quant:
            cfg["quantization_config"] = quant
        with open(os.path.join(root, d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=1)
        t = []
        for p, o in PROJ:
            pre = f"model.layers.0.self_attn.{p}."
            if d == "float":
                w = (rng.standard_normal((o, 128)) * 0.09).astype(np.float32)
                bf = (w.view(np.uint32) >> 16).astype(np.uint16)  # truncated: any bf16 will do
                t.append((pre + "weight", "BF16", (o, 128), bf.tobytes()))
            elif d == "gptq":
                t.append((pre + "qweight", "I32", (128 // 8, o), bytes(128 // 8 * o * 4)))
                t.append((pre + "qzeros", "I32", (1, o // 8), bytes(o // 8 * 4)))
                t.append((pre + "scales", "F16", (1, o), np.ones(o, np.float16).tobytes()))
            else:
                t.append((pre + "weight", "F8_E4M3", (o, 128), bytes(o * 128)))
                t.append((pre + "weight_scale_inv", "F32", (1, 1), np.ones(1, np.float32).tobytes()))
        write(os.path.join(root, d, "model.safetensors"), t)


if __name__ == "__main__":
    main()
