#!/usr/bin/env python3
"""A NaN in x reaches exactly the outputs that depend on it, on every code
path this CPU has (forward and decode, float32 and bf16): the flash
kernels' running maximum is a > b ? a : b, which can drop a NaN score out
of the maximum; the NaN must still reach the row through its exponential
(the row's sum and output), and never another sequence.
Causal blocks: rows from the NaN token on are all NaN, the batch's other
sequence finite and unchanged; a decode step whose cache holds the NaN
token's K/V row gives NaN, a step whose own token is NaN too.

  nan_rows.py --work DIR   (attnc on PATH)
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
import attnc  # noqa: E402

failed = 0


def report(ok, what):
    global failed
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'}: {what}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    T, bad = 40, 17
    for dtype in ("f32", "bf16"):
        spec = os.path.join(a.work, f"n_{dtype}.yaml")
        with open(spec, "w") as f:
            f.write(f"name: n_{dtype}\nd_model: 128\nheads: 4\nkv_heads: 2\nweights: separate\n"
                    f"mask: causal\ndtype: {dtype}\ndecode: true\n")
        lib = os.path.join(a.work, f"libn_{dtype}.so")
        if not os.path.exists(lib):  # (a second run, on another path, reuses it)
            subprocess.run(["attnc", spec, "-o", lib], check=True)
        k = attnc.Kernel(lib)
        rng = np.random.default_rng(3)
        w = {n: (rng.standard_normal(s) * 0.2).astype(np.float32)
             for n, s in k.weight_shapes.items()}
        packed = k.pack(w)
        x = rng.standard_normal((2, T, 128)).astype(np.float32)
        xn = x.copy()
        xn[1, bad, 7] = np.nan
        clean = k.forward(x, packed)
        y = k.forward(xn, packed)
        # (Rows before the NaN token are not asserted: those in its key
        # block multiply its NaN value row by a weight of 0, as torch's
        # dense P·V does for every row.)
        ok = (np.isfinite(y[0]).all() and np.array_equal(y[0], clean[0])
              and np.isnan(y[1, bad:]).all())
        report(ok, f"{dtype} forward: rows {bad}..{T - 1} NaN (they see the NaN token), "
                   "the other sequence finite and unchanged")
        # Decode: a prefill of the first bad + 1 tokens (the last is NaN),
        # then steps: each sees the NaN row in the cache.
        kc, vc = k.new_cache(batch=2, cache_len=T)
        k.forward(xn[:, :bad + 1], packed, k_cache=kc, v_cache=vc)
        steps = [k.decode(xn[:, t:t + 1], packed, positions=[t, t], k_cache=kc, v_cache=vc)
                 for t in range(bad + 1, T)]
        ys = np.concatenate(steps, axis=1)
        ok = np.isnan(ys[1]).all() and np.isfinite(ys[0]).all() and \
            np.allclose(ys[0], clean[0, bad + 1:], rtol=0, atol=5e-2 * np.abs(clean).max())
        report(ok, f"{dtype} decode: steps after a NaN cache row NaN, the other sequence finite")
        kc, vc = k.new_cache(batch=2, cache_len=T)
        k.forward(x[:, :bad], packed, k_cache=kc, v_cache=vc)
        ys = k.decode(xn[:, bad:bad + 1], packed, positions=[bad, bad], k_cache=kc, v_cache=vc)
        report(np.isnan(ys[1]).all() and np.isfinite(ys[0]).all(),
               f"{dtype} decode: a step whose own token is NaN gives NaN")
    print(f"nan_rows: {6 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
