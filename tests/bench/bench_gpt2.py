#!/usr/bin/env python3
"""Benchmark: attnc's GPT-2 small block against PyTorch, measured in one run.

Not a test (timings never gate CI). Prints, per sequence length, the best
time per call of the attnc kernel (attnc-run --bench) and of PyTorch's
nn.MultiheadAttention (causal attn_mask, same shapes, float32), both on one
thread, and their ratio. PyTorch runs with OPENBLAS_CORETYPE=SkylakeX where
the CPU has AVX-512 (shared/design/PERF.md: without it Debian's OpenBLAS
falls back to SSE3 kernels on this CPU and the comparison means nothing).

Usage: bench_gpt2.py [--build build] [--seq 128 512] [--reps 10]
"""
import argparse
import os
import re
import subprocess
import sys
import time


def torch_time(t, reps):
    import torch
    torch.set_num_threads(1)
    mha = torch.nn.MultiheadAttention(768, 12, batch_first=True).eval()
    x = torch.randn(1, t, 768)
    mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    best = float("inf")
    with torch.no_grad():
        mha(x, x, x, attn_mask=mask, need_weights=False)
        for _ in range(reps):
            t0 = time.perf_counter()
            mha(x, x, x, attn_mask=mask, need_weights=False)
            best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seq", type=int, nargs="+", default=[128, 512])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--torch-child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_child:
        print(torch_time(args.torch_child, args.reps))
        return 0
    tools = os.path.join(args.build, "tools")
    lib = os.path.join(args.build, "bench-gpt2.so")
    subprocess.run([os.path.join(tools, "attnc"), "examples/gpt2-small.yaml", "-o", lib],
                   check=True)
    env = dict(os.environ)
    with open("/proc/cpuinfo") as f:
        if " avx512f" in f.read():  # both together (env notes, PERF.md)
            env["OPENBLAS_CORETYPE"] = "SkylakeX"
            env.pop("OPENBLAS_L2_SIZE", None)
    env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = "1"  # one thread, like attnc
    print(f"peer env: OPENBLAS_CORETYPE={env.get('OPENBLAS_CORETYPE', '(unset)')}, "
          "one thread (torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1); attnc kernel: single-threaded, --target host")
    print(f"{'T':>6} {'attnc ms':>10} {'torch ms':>10} {'torch/attnc':>12}")
    for t in args.seq:
        out = subprocess.run([os.path.join(tools, "attnc-run"), lib, "--seq-len", str(t),
                              "--bench", str(args.reps)], check=True, text=True,
                             stdout=subprocess.PIPE).stdout
        attnc_ms = float(re.search(r"min ([0-9.]+) ms", out).group(1))
        p = subprocess.run(["/usr/bin/python3", __file__, "--torch-child", str(t),
                            "--reps", str(args.reps)], env=env, text=True,
                           stdout=subprocess.PIPE)
        torch_ms = float(p.stdout.strip()) if p.returncode == 0 else float("nan")
        print(f"{t:>6} {attnc_ms:>10.2f} {torch_ms:>10.2f} {torch_ms / attnc_ms:>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
