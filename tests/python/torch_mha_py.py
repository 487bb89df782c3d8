#!/usr/bin/env python3
"""The Python package (python/attnc) against torch.nn.MultiheadAttention.

For each case: builds a torch_in_proj kernel (with attnc from PATH, or the
hand-written ABI v2 mock in tests/python/mock_kernel.c with --kernel mock),
opens it with attnc.Kernel, packs the module's state_dict once (also
through a layer prefix), runs forward on NumPy arrays with the built-in
pool and compares with torch in double precision. Prints PASS/FAIL per
case and a summary; exit 1 on any failure, 'SKIP' + exit 0 without torch.

Usage: torch_mha_py.py --work DIR [--kernel attnc|mock] [--src SRC] [--cc CC]
"""
import argparse
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"SKIP: PyTorch/NumPy not available ({e})")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "python"))
import attnc  # noqa: E402

CASES = [  # name, d_model, heads, mask, seq_len, batch, threads
    ("py_mha_bidir", 48, 4, "none", 23, 3, 2),
    ("py_mha_causal", 32, 2, "causal", 17, 2, 1),
    ("py_mha_one_head", 8, 1, "causal", 5, 1, 0),
]


def build(kind, name, d, h, mask, work, cc):
    lib = os.path.join(work, f"lib{name}.so")
    if kind == "mock":
        cmd = [cc, "-shared", "-fPIC", "-O1", f"-DNAME={name}", f"-DD_MODEL={d}",
               f"-DHEADS={h}", f"-DCAUSAL={int(mask == 'causal')}",
               "-I", os.path.join(SRC, "runtime", "include"),
               os.path.join(HERE, "mock_kernel.c"), "-o", lib, "-lm"]
    else:
        spec = os.path.join(work, name + ".yaml")
        with open(spec, "w") as f:
            f.write(f"name: {name}\nd_model: {d}\nheads: {h}\nmask: {mask}\n"
                    "weights: torch_in_proj\nbias: true\nout_proj: true\n")
        cmd = ["attnc", spec, "-o", lib]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout}")
    return lib


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--kernel", choices=["attnc", "mock"], default="attnc")
    ap.add_argument("--cc", default="cc")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    failures = 0
    for name, d, h, mask, t, b, threads in CASES:
        try:
            lib = build(args.kernel, name, d, h, mask, args.work, args.cc)
            k = attnc.Kernel(lib)
            assert k.name == name and k.d_model == d and k.heads == h, k
            assert k.info["weight_layout"] == "torch_in_proj", k.info
            assert k.info["mask"] == mask, k.info
            assert k.weight_names == ["in_proj_weight", "in_proj_bias",
                                      "out_proj.weight", "out_proj.bias"], k.weight_names
            mha = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True)
            with torch.no_grad():
                mha.in_proj_bias.uniform_(-0.5, 0.5)
                mha.out_proj.bias.uniform_(-0.5, 0.5)
            sd = mha.state_dict()
            packed = k.pack(sd)  # names as torch spells them
            # The same weights out of a whole "checkpoint" through a prefix.
            ckpt = {f"layers.{i}.attn.{n}": (v if i == 1 else torch.randn_like(v))
                    for i in range(3) for n, v in sd.items()}
            packed2 = k.pack(ckpt, prefix="layers.1.attn.")
            assert np.array_equal(packed, packed2), "prefix packing differs"
            x = np.random.default_rng(1).standard_normal((b, t, d)).astype(np.float32)
            y = k.forward(x, packed, num_threads=threads)
            y1 = k(x[0], packed)  # 2-D input
            with torch.no_grad():
                m64 = mha.double()
                xt = torch.from_numpy(x).double()
                am = (torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
                      if mask == "causal" else None)
                ref, _ = m64(xt, xt, xt, need_weights=False, attn_mask=am)
            err = float(np.abs(y.astype(np.float64) - ref.numpy()).max())
            err1 = float(np.abs(y1 - y[0]).max())
            # Errors the package must report, not crash on.
            for bad in (lambda: k.forward(x[..., :-1], packed),
                        lambda: k.forward(x, packed[:-1]),
                        lambda: k.pack([np.zeros((1, 1))] * 4)):
                try:
                    bad()
                    raise AssertionError("a bad call did not raise")
                except attnc.AttncError:
                    pass
            ok = err < 1e-4 and err1 <= 1e-6
            failures += not ok
            print(f"{'PASS' if ok else 'FAIL'}: {name} (d_model {d}, heads {h}, mask {mask}, "
                  f"T {t}, batch {b}, threads {threads}): max |attnc - torch| = {err:.2e}")
        except Exception as e:  # noqa: BLE001
            failures += 1
            print(f"FAIL: {name}: {type(e).__name__}: {e}")
    print(f"python vs torch ({args.kernel} kernels): {len(CASES) - failures} passed, "
          f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
