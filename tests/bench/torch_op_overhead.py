#!/usr/bin/env python3
"""Per-call overhead of attnc's torch operator over the kernel's C call.

Compiles (attnc.compile, cached) a tiny kernel (d_model 8, 1 head, no mask)
so that the C call itself costs little, then times, each as the least CPU time
per call over --reps batches of --n calls, on x [1, 1, 8]:
  c        NAME_forward through ctypes with a prebuilt argument struct and
           workspace (the C call as Python sees it; includes ctypes' own cost)
  op       torch.ops.attnc.forward(x, packed, path)  (the dispatcher, the
           Python kernel, y allocated as a torch tensor)
  module   attnc.torch.AttnModule(x)                 (nn.Module call + op)
  numpy    attnc.Kernel.forward(x, packed)           (the NumPy API, for comparison)
  mha      (--mha) attnc.torch.MultiheadAttention(x, x, x, need_weights=False)
           (replace_attention's module: its argument and mask checks + op)
and prints microseconds per call and `op - c`, `module - c`; with --check
US, exits 1 when op - c exceeds US.

  torch_op_overhead.py [--cache-dir DIR] [--n 2000] [--reps 7] [--check 20] [--mha]
"""
import argparse
import ctypes as C
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import attnc  # noqa: E402
import attnc.torch  # noqa: E402
from attnc import _abi  # noqa: E402


def per_call(fn, n, reps):
    """Microseconds per call: the least, over `reps` batches of `n` calls,
    of this process's CPU time (time.process_time: a loaded machine's
    preemptions do not count; the kernel runs on this thread only)."""
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        ts.append((time.process_time() - t0) / n * 1e6)
    return min(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--check", type=float, default=None)
    ap.add_argument("--mha", action="store_true",
                    help="also time attnc.torch.MultiheadAttention (replace_attention's "
                         "module; compiles its own kernel)")
    a = ap.parse_args()
    spec = {"name": "ovh", "d_model": 8, "heads": 1, "mask": "none",
            "weights": "torch_in_proj", "bias": True}
    k = attnc.compile(spec, cache_dir=a.cache_dir)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 1, batch_first=True)
    mod = attnc.torch.AttnModule(k, weights=mha.state_dict())
    packed = mod.packed
    x = torch.randn(1, 1, 8)
    path = mod.kernel_path

    # The bare C call: everything prepared once.
    y = torch.empty(1, 1, 8)
    ws_n = k.workspace_size(1, 1)
    ws = torch.empty(ws_n + 64, dtype=torch.uint8)
    args = _abi.ForwardArgs()
    args.struct_size = C.sizeof(_abi.ForwardArgs)
    args.packed, args.packed_bytes = packed.data_ptr(), packed.numel()
    args.x, args.x_elems = x.data_ptr(), x.numel()
    args.y, args.y_elems = y.data_ptr(), y.numel()
    args.batch, args.seq_len = 1, 1
    args.workspace = ws.data_ptr() + (-ws.data_ptr()) % 64
    args.workspace_bytes = ws_n
    args.num_threads = 1
    fwd, ref = k._forward, C.byref(args)
    assert fwd(ref) == 0
    op = torch.ops.attnc.forward
    with torch.inference_mode():
        y_op = op(x, packed, path)
        assert torch.equal(y_op, y), "the op and the bare call differ"
        c = per_call(lambda: fwd(ref), a.n, a.reps)
        o = per_call(lambda: op(x, packed, path), a.n, a.reps)
        m = per_call(lambda: mod(x), a.n, a.reps)
        xn, pn = x.numpy(), packed.numpy()
        n = per_call(lambda: k.forward(xn, pn), max(a.n // 4, 1), a.reps)
    print(f"c (ctypes call of {k.name}_forward, x [1, 1, 8]): {c:.2f} us")
    print(f"op (torch.ops.attnc.forward): {o:.2f} us")
    print(f"module (AttnModule): {m:.2f} us")
    print(f"numpy (Kernel.forward): {n:.2f} us")
    if a.mha:
        rep = attnc.torch.replace_attention(mha, cache_dir=a.cache_dir)
        with torch.inference_mode():
            r = per_call(lambda: rep(x, x, x, need_weights=False), a.n, a.reps)
        print(f"mha (attnc.torch.MultiheadAttention, need_weights=False): {r:.2f} us "
              f"({r - c:.2f} us over c)")
    print(f"overhead: op - c = {o - c:.2f} us, module - c = {m - c:.2f} us")
    if a.check is not None:
        ok = o - c <= a.check
        print(f"{'PASS' if ok else 'FAIL'}: op overhead {o - c:.2f} us <= {a.check} us")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
