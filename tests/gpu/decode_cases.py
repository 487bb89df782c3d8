#!/usr/bin/env python3
"""Records the decode cases of e2e/cuda-decode.test and
e2e/real-models-decode.test for a GPU: each spec compiled with `attnc
--target cuda-sm90` into DIR/decode/, each run (prefill, then decode steps
over the KV cache, `attnc-run --check` against the interpreter replaying the
calls) recorded in DIR/cases.jsonl for tests/gpu/cases.py to make there.

Usage: decode_cases.py DIR   (attnc on PATH, or ATTNC=path). Exit 1 when a
spec does not compile.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import Recorder  # noqa: E402

ROPE_LLAMA3 = ("rope:\n  theta: 500000\n  scaling:\n    type: llama3\n    factor: 8\n"
               "    low_freq_factor: 1\n    high_freq_factor: 4\n"
               "    original_max_position_embeddings: 32\n")
# name, spec body, runs (T, batch, decode steps)
SPECS = [
    ("dgqa", "d_model: 64\nheads: 4\nkv_heads: 2\nmask: causal\nweights: separate\n",
     [(1, 1, 1), (7, 2, 3), (97, 3, 33), (70, 2, 70)]),
    ("dwin", "d_model: 48\nheads: 3\nmask: sliding_window\nwindow: 5\n",
     [(1, 1, 1), (7, 2, 3), (97, 3, 33)]),
    ("dpad", "d_model: 40\nheads: 2\nmask: causal+padding\n",
     [(1, 1, 1), (7, 2, 3), (97, 3, 33)]),
    ("gpt2d", "d_model: 768\nheads: 12\nmask: causal\nweights: gpt2_conv1d\nmax_seq_len: 1024\n",
     [(97, 2, 8), (700, 1, 4)]),
    ("llama", "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\nmask: causal\n"
              "weights: separate\nbias: false\n" + ROPE_LLAMA3, [(70, 2, 6)]),
    ("gptj", "d_model: 64\nheads: 2\nmask: causal\nweights: separate\nbias: [q, k, v]\n"
             "rope:\n  style: interleaved\n  rotary_dim: 8\n", [(41, 1, 5)]),
    ("bloom", "d_model: 60\nheads: 5\nmask: causal+padding\nweights: separate\nalibi: true\n",
     [(33, 3, 4)]),
    ("gemma2", "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 32\nmask: sliding_window\n"
               "window: 20\nweights: separate\nbias: false\nsoftcap: 3.0\nrope: {}\n",
     [(50, 1, 8)]),
    ("oss", "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\nmask: sliding_window\n"
            "window: 8\nweights: separate\nsinks: true\nrope: {}\n", [(30, 2, 6)]),
    ("qwen3", "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 32\nmask: causal\n"
              "weights: separate\nbias: false\nqk_norm:\n  width: head\nrope: {}\n",
     [(30, 1, 6)]),
    ("t5d", "d_model: 48\nheads: 4\nhead_dim: 16\nmask: causal\nweights: separate\nbias: false\n"
            "scale: 1\nt5_bias:\n  num_buckets: 32\n  max_distance: 20\n  bidirectional: false\n",
     [(50, 1, 6)]),
    ("dyn", "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\nmask: causal\nweights: separate\n"
            "bias: false\nrope:\n  scaling:\n    type: dynamic\n    factor: 2\n"
            "    max_position_embeddings: 24\n", [(70, 2, 50)]),
    ("olmo", "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\nmask: causal\nweights: separate\n"
             "bias: true\nclip_qkv: 0.7\nrope: {}\n", [(40, 2, 9)]),
    # LayerNorm QK-norms (Phi: weight and bias; StableLM / Cohere: one
    # weight per head), OLMoE's clip after its norm.
    ("phiqk", "d_model: 64\nheads: 4\nhead_dim: 16\nmask: causal\nweights: separate\n"
              "rope: {rotary_dim: 8}\nqk_norm: {width: head, type: layer, bias: true, eps: 1e-5}\n",
     [(33, 2, 5)]),
    ("stablm", "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\nmask: causal\n"
               "weights: separate\nbias: [q, k, v]\nrope: {rotary_dim: 4}\n"
               "qk_norm: {width: head, type: layer, weight: per_head, eps: 1e-5}\n", [(29, 1, 6)]),
    ("olmoe", "d_model: 48\nheads: 3\nhead_dim: 16\nmask: causal\nweights: separate\n"
              "bias: false\nrope: {}\nqk_norm: {width: projection, eps: 1e-5}\nclip_qkv: 0.6\n",
     [(25, 2, 4)]),
]


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    rec = Recorder(argv[0])
    work = os.path.join(rec.root, "decode")
    os.makedirs(work, exist_ok=True)
    attnc = os.environ.get("ATTNC", "attnc")
    failed = 0
    for name, body, runs in SPECS:
        spec = os.path.join(work, name + ".yaml")
        with open(spec, "w") as f:
            f.write(f"name: {name}\n{body}decode: true\n")
        lib = os.path.join(work, f"lib{name}.so")
        r = subprocess.run([attnc, spec, "--target", "cuda-sm90", "-o", lib],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: compile {name}: {r.stderr.strip()}")
            failed += 1
            continue
        for T, B, K in runs:
            rec.add(f"decode {name} T={T} B={B} steps={K}",
                    [lib, "--check", "--seq-len", str(T), "--batch", str(B),
                     "--decode-steps", str(K), "--seed", str(T + B)])
    print(f"decode_cases: {rec.n} runs recorded in {rec.root}, {failed} failed to compile")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
