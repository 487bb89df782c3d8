#!/usr/bin/env python3
"""Tensor-parallel kernels (spec `tensor_parallel: {size: N, rank: R}`):
for each block, the unsplit kernel and the N rank kernels are compiled,
run on the same storage weights (the block's whole tensors, every rank reads
its heads' share) and the same input, and the sum of the ranks' outputs
(what torch.distributed.all_reduce computes) must equal the unsplit
block's output. Each rank is also checked on its own against the
interpreter (attnc-run --check: the reference of the rank's share). Covers
the three weight layouts, GQA with kv heads split and replicated, every
bias, RoPE, ALiBi, sinks, a sliding window, T5's table, QK-norm per head
and the decode entry (prefill + decode steps).

Usage: tensor_parallel.py --work DIR
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

CASES = [
    ("sep_gqa_rope", """d_model: 128
heads: 8
kv_heads: 2
head_dim: 16
mask: causal
bias: [q, k, v, o]
weights: separate
rope: {theta: 10000}
""", [2, 4, 8], {}),
    ("gpt2_fused", """d_model: 96
heads: 6
mask: causal
weights: gpt2_conv1d
""", [2, 3], {}),
    ("torch_inproj", """d_model: 64
heads: 4
mask: none
weights: torch_in_proj
""", [2, 4], {}),
    ("alibi_sinks_window", """d_model: 64
heads: 8
kv_heads: 4
head_dim: 8
mask: sliding_window
window: 9
weights: separate
bias: [q, v]
alibi: true
sinks: true
""", [2, 4], {}),
    ("t5", """d_model: 64
heads: 4
head_dim: 16
mask: none
weights: separate
bias: false
scale: 1.0
t5_bias: {num_buckets: 16, max_distance: 32}
""", [2], {}),
    ("qwen3_qknorm", """d_model: 64
heads: 4
kv_heads: 2
head_dim: 16
mask: causal
weights: separate
bias: false
qk_norm: {width: head, eps: 1e-6}
rope: {theta: 1000000}
""", [2], {}),
    # StableLM / Cohere: one LayerNorm weight per head (each rank packs its
    # own heads' rows of q_norm / k_norm), kv heads split and replicated.
    ("cohere_qkln", """d_model: 64
heads: 4
kv_heads: 2
head_dim: 16
mask: causal
weights: separate
bias: false
qk_norm: {width: head, type: layer, weight: per_head, bias: true, eps: 1e-5}
rope: {style: interleaved}
""", [2, 4], {}),
    ("decode", """d_model: 64
heads: 4
kv_heads: 2
head_dim: 16
mask: causal
weights: separate
bias: [q, k, v, o]
rope: {theta: 10000}
decode: true
max_seq_len: 64
""", [2, 4], {"--decode-steps": "5"}),
]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    failed = 0
    rng = np.random.default_rng(7)
    for name, body, sizes, extra in CASES:
        d = os.path.join(a.work, name)
        os.makedirs(d, exist_ok=True)
        specs = [("full", f"name: tp_{name}\n{body}")]
        for n in sizes:
            for r in range(n):
                specs.append((f"r{n}_{r}", f"name: tp_{name}_{n}_{r}\n{body}"
                              f"tensor_parallel: {{size: {n}, rank: {r}}}\n"))
        libs = {}
        for tag, text in specs:
            path = os.path.join(d, tag + ".yaml")
            with open(path, "w") as f:
                f.write(text)
            lib = os.path.join(d, f"lib{tag}.so")
            # The ranks for this CPU's code path alone (attnc-run runs
            # one); the unsplit block with attnc's default (multi) target.
            rc, out = run(["attnc", path, "-o", lib]
                          + ([] if tag == "full" else ["--target", "host"]))
            if rc != 0:
                sys.exit(f"tensor_parallel: attnc {path} failed:\n{out}")
            libs[tag] = lib
        rc, out = run(["attnc-run", libs["full"], "--info", "--json"])
        info = json.loads(out[out.index("{"):])
        weights = {w["name"]: (rng.standard_normal(w["shape"]) /
                               np.sqrt(w["shape"][-1])).astype(np.float32)
                   for w in info["weights"]}
        npz = os.path.join(d, "w.npz")
        np.savez(npz, **weights)
        xpath = os.path.join(d, "x.npy")
        np.save(xpath, rng.standard_normal((2, 29, info["d_model"])).astype(np.float32))
        args = ["--weights", npz, "--x", xpath]
        for k, v in extra.items():
            args += [k, v]

        def forward(tag, check=False):
            y = os.path.join(d, f"y_{tag}.npy")
            rc, out = run(["attnc-run", libs[tag], *args, "--out", y] +
                          (["--check"] if check else []))
            return rc, out, (np.load(y) if rc == 0 else None)

        rc, out, full = forward("full")
        if rc != 0:
            sys.exit(f"tensor_parallel: {name}: the unsplit kernel failed:\n{out}")
        for n in sizes:
            failed += not sum_of_ranks(name, n, full,
                                       lambda r, n=n: forward(f"r{n}_{r}", check=True))
    print(f"tensor_parallel: {'all passed' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


def sum_of_ranks(name, n, full, rank):
    """Whether the n ranks' outputs (rank(r) -> (rc, output, y), each run
    with --check) sum to the unsplit block's `full`; prints PASS/FAIL."""
    total, problems = 0.0, []
    for r in range(n):
        rc, out, y = rank(r)
        if rc != 0 or "warning" in out:
            problems.append(f"rank {r}: " + out.strip().splitlines()[-1])
            continue
        total = total + y
    err = float(np.abs(total - full).max()) if not problems else float("nan")
    ok = not problems and err <= 1e-5 + 1e-4 * float(np.abs(full).max())
    print(f"PASS: {name} size {n}: sum of the ranks vs the unsplit block max_abs_err "
          f"{err:.3e} (max |y| {float(np.abs(full).max()):.3g}); every rank PASSes --check"
          if ok else f"FAIL: {name} size {n}: {'; '.join(problems) or err}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
