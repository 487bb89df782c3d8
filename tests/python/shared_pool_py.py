"""Two kernels in one Python process share libattnrt's thread pool.

attnc.Kernel.forward and .decode pass libattnrt's attnrt_parallel_for to
every kernel they call with num_threads > 1, so a second kernel starts no
threads of its own. Counts the process's threads (/proc/self/task) after
each call; with --own the package is made to pass no hook (each kernel's
built-in pool then starts its own workers: the check fails, which shows it
can). The torch operators (attnc.torch.forward: AttnModule and the
replaced MultiheadAttention) share it too. Also: the outputs on the
shared pool equal those on one thread.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "python"))
import attnc  # noqa: E402
from attnc import _runtime  # noqa: E402


def threads():
    return len(os.listdir("/proc/self/task"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--own", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.own:
        _runtime.shared_pool = lambda: None
    specs = {"gpt2": os.path.join(SRC, "examples", "gpt2-small.yaml"),
             "dec": os.path.join(SRC, "examples", "gpt2-decode.yaml")}
    kernels = {}
    for n, spec in specs.items():
        lib = os.path.join(a.work, n + ".so")
        if not os.path.exists(lib):
            subprocess.run([a.attnc, spec, "-o", lib], check=True)
        kernels[n] = attnc.Kernel(lib)
    rng = np.random.default_rng(0)
    counts = [threads()]
    ok = True
    packs = {}
    for n, k in kernels.items():
        weights = {t: (0.05 * rng.standard_normal(sh)).astype(np.float32)
                   for t, sh in k.weight_shapes.items()}
        packed = packs[n] = k.pack(weights)
        x = rng.standard_normal((2, 64, k.d_model)).astype(np.float32)
        y3 = k.forward(x, packed, num_threads=3)
        counts.append(threads())
        y1 = k.forward(x, packed, num_threads=1)
        if not np.array_equal(y1, y3):
            print(f"FAIL: {n}: 3 threads differ from 1")
            ok = False
    # Decode steps with 3 threads: the same pool again.
    k = kernels["dec"]
    kc, vc = k.new_cache(4, 64)
    xs = rng.standard_normal((4, 1, k.d_model)).astype(np.float32)
    pos = np.zeros(4, dtype=np.int32)
    d3 = k.decode(xs, packs["dec"], pos, kc, vc, num_threads=3)
    counts.append(threads())
    kc, vc = k.new_cache(4, 64)
    d1 = k.decode(xs, packs["dec"], pos, kc, vc, num_threads=1)
    if not np.array_equal(d1, d3):
        print("FAIL: decode: 3 threads differ from 1")
        ok = False
    # The torch operators (AttnModule, the replaced MultiheadAttention) on
    # the same pool, where torch is installed: no workers of their own.
    try:
        import torch
        import attnc.torch as at
    except ImportError:
        torch = None
    if torch is not None:
        for n, k in kernels.items():
            x = torch.from_numpy(rng.standard_normal((2, 64, k.d_model)).astype(np.float32))
            p = torch.from_numpy(packs[n])
            with torch.no_grad():
                t3 = at.forward(x, p, k.path, num_threads=3)
                t1 = at.forward(x, p, k.path, num_threads=1)
            if not torch.equal(t1, t3):
                print(f"FAIL: torch operator: {n}: 3 threads differ from 1")
                ok = False
        counts.append(threads())
    print(f"threads: {counts[0]} at start, {counts[1]} after gpt2 (3 threads), "
          f"{counts[2]} after gpt2-decode (3 threads), {counts[3]} after its decode step"
          + (f", {counts[4]} after the torch operator on both" if len(counts) > 4 else ""))
    if counts[1] != counts[0] + 2 or any(c != counts[1] for c in counts[2:]):
        print("FAIL: the two kernels should share 2 workers")
        ok = False
    if not ok:
        return 1
    print("PASS: two kernels share libattnrt's pool")
    return 0


if __name__ == "__main__":
    sys.exit(main())
