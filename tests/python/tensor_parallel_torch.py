#!/usr/bin/env python3
"""Tensor-parallel kernels through torch.distributed (issue 20): N real
processes (the gloo backend on localhost), each loading the kernel of its
rank (spec tensor_parallel: {size: N, rank: R}) with the attnc Python
package and packing the block's whole weights; all_reduce of the ranks'
outputs must equal the unsplit block's output, for forward and for the
decode entry (a prefill with a KV cache, then decode steps, each step's
rank outputs all-reduced). attnc ships no communication of its own: the
sum is torch's.

Usage: tensor_parallel_torch.py --work DIR [--sizes 2 4]
"""
import argparse
import os
import socket
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

SPEC = """d_model: 128
heads: 8
kv_heads: 2
head_dim: 16
mask: causal
bias: [q, k, v, o]
weights: separate
rope: {theta: 10000}
decode: true
max_seq_len: 64
"""
B, T, STEPS = 2, 23, 4


def compile_spec(path, text, lib):
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run(["attnc", path, "-o", lib], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"tensor_parallel_torch: attnc {path} failed:\n{r.stderr}")


def inputs(k):
    rng = np.random.default_rng(3)
    w = {n: (rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32)
         for n, s in k.weight_shapes.items()}
    x = rng.standard_normal((B, T + STEPS, k.d_model)).astype(np.float32)
    return w, x


def run_block(k, w, x):
    """(forward y over all tokens, y of a prefill of T then STEPS decode
    steps)."""
    packed = k.pack(w)
    y = k.forward(x, packed)
    kc, vc = k.new_cache(B, T + STEPS)
    rows = [k.forward(x[:, :T], packed, k_cache=kc, v_cache=vc)]
    for s in range(STEPS):
        pos = np.full(B, T + s, np.int32)
        rows.append(k.decode(x[:, T + s:T + s + 1], packed, pos, kc, vc))
    return y, np.concatenate(rows, axis=1)


def worker(rank, size, port, libs, result_dir):
    import torch
    import torch.distributed as dist
    import attnc
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=size)
    k = attnc.Kernel(libs[rank])
    w, x = inputs(k)
    y, yd = run_block(k, w, x)
    # Forward: one all_reduce; decode: the prefill's and each step's rows,
    # one all_reduce per call as a serving engine does.
    t = torch.from_numpy(y)
    dist.all_reduce(t)
    parts = [torch.from_numpy(np.ascontiguousarray(yd[:, :T]))]
    parts += [torch.from_numpy(np.ascontiguousarray(yd[:, T + s:T + s + 1]))
              for s in range(STEPS)]
    for p in parts:
        dist.all_reduce(p)
    if rank == 0:
        np.save(os.path.join(result_dir, "y.npy"), t.numpy())
        np.save(os.path.join(result_dir, "yd.npy"), torch.cat(parts, dim=1).numpy())
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[2, 4])
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    import attnc
    import torch.multiprocessing as mp
    full = os.path.join(a.work, "libtp_full.so")
    compile_spec(os.path.join(a.work, "full.yaml"), "name: tp_full\n" + SPEC, full)
    k = attnc.Kernel(full)
    w, x = inputs(k)
    y_full, yd_full = run_block(k, w, x)
    failed = 0
    for n in a.sizes:
        libs = []
        for r in range(n):
            lib = os.path.join(a.work, f"libtp_{n}_{r}.so")
            compile_spec(os.path.join(a.work, f"r{n}_{r}.yaml"),
                         f"name: tp_{n}_{r}\n{SPEC}tensor_parallel: {{size: {n}, rank: {r}}}\n",
                         lib)
            libs.append(lib)
        out = os.path.join(a.work, f"out{n}")
        os.makedirs(out, exist_ok=True)
        mp.start_processes(worker, args=(n, free_port(), libs, out), nprocs=n,
                           start_method="spawn")
        tol = 1e-5 + 1e-5 * float(np.abs(y_full).max())
        for what, got, want in (("forward", np.load(os.path.join(out, "y.npy")), y_full),
                                (f"prefill {T} + {STEPS} decode steps",
                                 np.load(os.path.join(out, "yd.npy")), yd_full)):
            err = float(np.abs(got - want).max())
            ok = err <= tol
            failed += not ok
            print(f"{'PASS' if ok else 'FAIL'}: {n} processes (gloo): all_reduce of the "
                  f"ranks' {what} vs the unsplit block: max_abs_err {err:.3e} "
                  f"(allowed {tol:.1e})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
