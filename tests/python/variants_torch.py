#!/usr/bin/env python3
"""The attention variants against PyTorch's nn.MultiheadAttention.

Runs attnc-run on the hand-written kernel (tests/support/fake_kernel.c,
configured through ATTNC_FAKE_KERNEL to declare a mask, an alignment, a
window and the lengths/cross/probs features) with --check, so that the
kernel's y and weights pass the reference interpreter's gate, and compares
them with torch's (need_weights=True, average_attn_weights=False) on the
same weights and inputs. The masks are built the way a torch user builds
them (key_padding_mask from the lengths, attn_mask from triu/tril with the
per-sequence diagonal), not from attnc's predicate, so this is an
independent check of the visible-key contract (docs/abi.md):

  * rows past a sequence's length: y and weights are zero (torch has no
    query padding: those rows are only checked on our side);
  * rows that see no key (bottom_right with T_q > T_kv): torch gives NaN,
    we give zero attention, so y is the output bias and the weights 0;
  * every other row: y and the weights as torch's.

Usage: variants_torch.py --work DIR --kernel libattnc_fake_kernel.so
(attnc-run on PATH). Prints 'SKIP: ...' and exits 0 without torch.
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

D, H = 16, 2  # the fake kernel's shape
MASKS = {"none": 0, "causal": 1, "padding": 2, "causal+padding": 3,
         "sliding_window": 4}
LENGTHS, CROSS, PROBS = 1, 2, 4

# name, mask, align (0 bottom_right, 1 top_left), window, cross, probs,
# batch, T_q, T_kv, lengths, kv_lengths (None: not passed)
CASES = [
    ("padding_self", "padding", 0, 0, False, True, 3, 7, 7, [7, 4, 0], None),
    ("causal_padding_self", "causal+padding", 0, 0, False, True, 3, 7, 7,
     [7, 3, 1], None),
    ("causal_padding_self_top_left", "causal+padding", 1, 0, False, True, 2, 6,
     6, [6, 2], None),
    ("padding_cross", "padding", 0, 0, True, True, 3, 5, 9, [5, 2, 3],
     [9, 4, 1]),
    ("causal_cross_bottom_right", "causal+padding", 0, 0, True, True, 3, 5, 9,
     [5, 2, 5], [9, 4, 2]),
    ("causal_cross_top_left", "causal+padding", 1, 0, True, True, 3, 5, 9,
     [5, 2, 5], [9, 4, 2]),
    ("causal_cross_no_lengths", "causal", 0, 0, True, True, 2, 3, 6, None,
     None),
    ("window_cross", "sliding_window", 0, 3, True, True, 2, 6, 8, None, None),
    ("window_self_top_left", "sliding_window", 1, 2, False, True, 2, 7, 7,
     None, None),
    ("window_1", "sliding_window", 0, 1, False, True, 1, 5, 5, None, None),
]


def torch_masks(mask, align, window, b, tq, tkv, qlen, kvlen):
    """key_padding_mask [B, T_kv] and attn_mask [B*H, T_q, T_kv] (True:
    not allowed), built per sequence from triu/tril."""
    kpm = torch.zeros(b, tkv, dtype=torch.bool)
    am = torch.zeros(b * H, tq, tkv, dtype=torch.bool)
    for s in range(b):
        kpm[s, kvlen[s]:] = True
        off = 0 if align == 1 else kvlen[s] - qlen[s]
        m = torch.zeros(tq, tkv, dtype=torch.bool)
        if mask in ("causal", "causal+padding", "sliding_window"):
            m |= torch.triu(torch.ones(tq, tkv, dtype=torch.bool), diagonal=1 + off)
        if mask == "sliding_window":
            m |= torch.tril(torch.ones(tq, tkv, dtype=torch.bool), diagonal=off - window)
        am[s * H:(s + 1) * H] = m
    return kpm, am


def run_case(work, kernel, case):
    (name, mask, align, window, cross, probs, b, tq, tkv, lengths,
     kv_lengths) = case
    features = (LENGTHS if "padding" in mask else 0) | (CROSS if cross else 0) \
        | (PROBS if probs else 0)
    mha = torch.nn.MultiheadAttention(D, H, bias=True, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_bias.uniform_(-0.5, 0.5)
        mha.out_proj.bias.uniform_(-0.5, 0.5)
        for p in mha.parameters():  # the float32 values attnc-run reads
            p.copy_(p.float().double())
    wdir = os.path.join(work, name + "_weights")
    os.makedirs(wdir, exist_ok=True)
    # gpt2_conv1d layout: y = x W + b, W = torch's weight transposed.
    tensors = {
        "c_attn.weight": mha.in_proj_weight.detach().numpy().T,
        "c_attn.bias": mha.in_proj_bias.detach().numpy(),
        "c_proj.weight": mha.out_proj.weight.detach().numpy().T,
        "c_proj.bias": mha.out_proj.bias.detach().numpy(),
    }
    for key, value in tensors.items():
        np.save(os.path.join(wdir, key + ".npy"),
                np.ascontiguousarray(value).astype(np.float32))
    x = torch.randn(b, tq, D, dtype=torch.float64).float().double()
    xkv = torch.randn(b, tkv, D, dtype=torch.float64).float().double() if cross else x
    paths = {k: os.path.join(work, f"{name}_{k}.npy") for k in ("x", "xkv", "y", "p")}
    np.save(paths["x"], x.numpy().astype(np.float32))
    cmd = ["attnc-run", kernel, "--x", paths["x"], "--weights", wdir,
           "--out", paths["y"], "--check"]
    if cross:
        np.save(paths["xkv"], xkv.numpy().astype(np.float32))
        cmd += ["--x-kv", paths["xkv"]]
    if probs:
        cmd += ["--probs", paths["p"]]
    if lengths is not None:
        cmd += ["--lengths", ",".join(map(str, lengths))]
    if kv_lengths is not None:
        cmd += ["--kv-lengths", ",".join(map(str, kv_lengths))]
    env = dict(os.environ)
    env["ATTNC_FAKE_KERNEL"] = (f"mask={MASKS[mask]},causal_align={align},"
                                f"features={features}" +
                                (f",window={window}" if window else ""))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env)
    if r.returncode != 0:
        return f"attnc-run failed ({r.returncode}):\n{r.stdout}"
    y = np.load(paths["y"]).astype(np.float64)
    p = np.load(paths["p"]).astype(np.float64) if probs else None

    qlen = lengths if lengths is not None else [tq] * b
    kvlen = kv_lengths if kv_lengths is not None else (
        [tkv] * b if cross else qlen)
    kpm, am = torch_masks(mask, align, window, b, tq, tkv, qlen, kvlen)
    with torch.no_grad():
        ref, w = mha(x, xkv, xkv, key_padding_mask=kpm, attn_mask=am,
                     need_weights=True, average_attn_weights=False)
    ref, w = ref.numpy(), w.numpy()
    bias = tensors["c_proj.bias"].astype(np.float64)
    problems = []
    counts = {"rows": 0, "no key": 0, "padded": 0}
    for s in range(b):
        for i in range(tq):
            if i >= qlen[s]:
                counts["padded"] += 1
                if np.any(y[s, i] != 0):
                    problems.append(f"padded row y[{s},{i}] is not zero")
                if p is not None and np.any(p[s, :, i] != 0):
                    problems.append(f"padded row probs[{s},:,{i}] is not zero")
            elif np.isnan(w[s, :, i]).any():  # torch: no key to see
                counts["no key"] += 1
                if np.abs(y[s, i] - bias).max() > 1e-5:
                    problems.append(f"row {s},{i} sees no key: y is not the bias")
                if p is not None and np.any(p[s, :, i] != 0):
                    problems.append(f"row {s},{i} sees no key: probs not zero")
            else:
                counts["rows"] += 1
                err = np.abs(y[s, i] - ref[s, i]).max()
                if err > 1e-4:
                    problems.append(f"y[{s},{i}] off by {err:.2e}")
                if p is not None:
                    perr = np.abs(p[s, :, i] - w[s, :, i]).max()
                    if perr > 1e-5:
                        problems.append(f"probs[{s},:,{i}] off by {perr:.2e}")
    if counts["rows"] == 0:
        problems.append("no row compared")
    if problems:
        return "; ".join(problems[:5])
    return None, counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--kernel", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    failures = 0
    for case in CASES:
        result = run_case(args.work, args.kernel, case)
        if isinstance(result, str):
            failures += 1
            print(f"FAIL: {case[0]}: {result}")
        else:
            c = result[1]
            print(f"PASS: {case[0]} ({c['rows']} rows as torch, {c['no key']} "
                  f"seeing no key, {c['padded']} padded)")
    print(f"variants vs torch: {len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
