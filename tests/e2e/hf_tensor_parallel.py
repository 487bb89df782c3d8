#!/usr/bin/env python3
"""Tensor-parallel kernels of checkpoints that store Q, K and V fused
(query_key_value, Wqkv, c_attn, qkv_proj), run on the checkpoint itself:
`attnc --hf DIR --module M --set tensor_parallel={size: N, rank: R}` for
every rank, `attnc-run LIB --hf DIR --module M --check` on each (the
weights loader cuts the fused tensor with the block's heads and the kernel
packs its rank's share), and the sum of the ranks' outputs must equal the
unsplit kernel's output.

Usage: hf_tensor_parallel.py --work DIR (hf_import.py's work directory,
whose checkpoints it reads)
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensor_parallel import run, sum_of_ranks  # noqa: E402

# (checkpoint, module, sizes): per-head [H, 3, dh], MQA [q | k | v]
# (each rank's query heads share the one kv head), Falcon-40B's groups
# [Hkv, G + 2, dh] (kv heads split and replicated), MPT's [q | k | v].
CASES = [
    ("gpt_neox", "gpt_neox.layers.0.attention", [2, 4]),
    ("falcon7b", "transformer.h.0.self_attention", [2, 4]),
    ("falcon40b", "transformer.h.0.self_attention", [2, 4]),
    ("mpt", "transformer.blocks.0.attn", [2, 3]),
    ("gpt_bigcode", "transformer.h.0.attn", [2]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    failed = 0
    for ckpt, module, sizes in CASES:
        src = os.path.join(a.work, ckpt)
        d = os.path.join(a.work, "tp_" + ckpt)
        os.makedirs(d, exist_ok=True)

        def forward(tag, sets):
            lib = os.path.join(d, f"lib{tag}.so")
            # (the ranks for this CPU's code path alone: attnc-run runs one)
            rc, out = run(["attnc", "--hf", src, "--module", module, "-o", lib] +
                          [a for s in sets for a in ("--set", s)] +
                          (["--target", "host"] if sets else []))
            if rc != 0:
                return rc, f"attnc: {out.strip()}", None
            y = os.path.join(d, f"y_{tag}.npy")
            rc, out = run(["attnc-run", lib, "--hf", src, "--module", module, "--batch", "2",
                           "--seq-len", "9", "--seed", "5", "--check", "--out", y])
            return rc, out, (np.load(y).astype(np.float64) if rc == 0 else None)

        rc, out, full = forward("full", [])
        if rc != 0:
            sys.exit(f"hf_tensor_parallel: {ckpt}: the unsplit kernel failed:\n{out}")
        for n in sizes:
            failed += not sum_of_ranks(
                ckpt, n, full,
                lambda r, n=n: forward(f"r{n}_{r}", [f"tensor_parallel={{size: {n}, rank: {r}}}"]))
    print(f"hf_tensor_parallel: {'all passed' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
