#!/usr/bin/env python3
"""Cross-check attnc against PyTorch's torch.nn.MultiheadAttention.

Builds an nn.MultiheadAttention (batch_first) with random weights, writes
its tensors in the torch_in_proj layout (in_proj_weight, in_proj_bias,
out_proj.weight, out_proj.bias) as .npy files, compiles a matching spec
with attnc, runs it with attnc-run on the same input and compares y with
torch's output, unmasked and with a causal attn_mask.

Usage: torch_mha.py --work DIR   (attnc and attnc-run on PATH)
Prints 'SKIP: ...' and exits 0 when torch cannot be imported.
"""
import argparse
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"SKIP: PyTorch/NumPy not available ({e}); install python3-torch")
    sys.exit(0)

CASES = [  # name, d_model, heads, mask, seq_len, batch
    ("mha_bert_small", 96, 6, "none", 37, 2),
    ("mha_causal", 64, 4, "causal", 50, 1),
    ("mha_one_head", 20, 1, "causal", 7, 3),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    failures = 0
    for name, d, h, mask, t, b in CASES:
        mha = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True).double()
        with torch.no_grad():  # non-trivial biases
            mha.in_proj_bias.uniform_(-0.5, 0.5)
            mha.out_proj.bias.uniform_(-0.5, 0.5)
        wdir = os.path.join(args.work, name + "_weights")
        os.makedirs(wdir, exist_ok=True)
        for key in ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"):
            tensor = dict(mha.named_parameters())[key]
            np.save(os.path.join(wdir, key + ".npy"),
                    tensor.detach().numpy().astype(np.float32))
        x = torch.randn(b, t, d, dtype=torch.float64)
        xpath = os.path.join(args.work, name + "_x.npy")
        np.save(xpath, x.numpy().astype(np.float32))
        # torch reference in double precision, from the same float32 values.
        x32 = torch.from_numpy(np.load(xpath)).double()
        with torch.no_grad():
            for p in mha.parameters():
                p.copy_(p.float().double())
            attn_mask = None
            if mask == "causal":
                attn_mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
            ref, _ = mha(x32, x32, x32, need_weights=False, attn_mask=attn_mask)
        spec = os.path.join(args.work, name + ".yaml")
        with open(spec, "w") as f:
            f.write(f"name: {name}\nd_model: {d}\nheads: {h}\nmask: {mask}\n"
                    "weights: torch_in_proj\nbias: true\nout_proj: true\n")
        lib = os.path.join(args.work, f"lib{name}.so")
        ypath = os.path.join(args.work, name + "_y.npy")
        for cmd in (["attnc", spec, "-o", lib],
                    ["attnc-run", lib, "--x", xpath, "--weights", wdir, "--out", ypath, "--check"]):
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode != 0:
                print(f"FAIL: {name}: {' '.join(cmd)}\n{p.stdout}")
                failures += 1
                break
        else:
            y = np.load(ypath).astype(np.float64)
            err = np.abs(y - ref.numpy()).max()
            ok = err < 1e-4
            failures += not ok
            print(f"{'PASS' if ok else 'FAIL'}: {name} (d_model {d}, heads {h}, mask {mask}, "
                  f"T {t}, B {b}) max |attnc - torch.nn.MultiheadAttention| = {err:.3e}")
    print(f"torch: {len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
