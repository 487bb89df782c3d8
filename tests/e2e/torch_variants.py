#!/usr/bin/env python3
"""Compiled attnc kernels of every attention variant against PyTorch.

Each spec below is compiled with attnc and run with attnc-run on batch-3
inputs with mixed valid lengths; y (and the attention weights of an
`outputs: [y, probs]` kernel) is compared with an independent float64
PyTorch reference computed from the same float32 weights and inputs:

  * padding, causal+padding, cross-attention (mask none and padding) and
    the probs output: torch.nn.MultiheadAttention(batch_first=True) with
    key_padding_mask (True = padded key) and attn_mask, the masks built
    from the lengths the way a torch user builds them;
  * sliding windows (separate Llama/Mistral weights, GQA), with padding
    lengths too, Llama 4's chunks with padding lengths and causal
    cross-attention in both alignments: a hand-written float64 attention
    with an explicit boolean mask matrix (query i sees key j iff
    mask[i, j]); it is itself checked against nn.MultiheadAttention first.

Contract checked besides the values (docs/abi.md, "The attention
variants"): every element of y is finite; query rows at or past a
sequence's length are exactly 0 in y (and in probs), a length-0 sequence
is all zeros; a valid row that sees no key has zero attention output (y =
the output bias). torch gives NaN rows there, so only valid rows that see
at least one key are compared with torch.

Tolerance per element: |y_attnc - y_torch| <= 1e-4 + 1e-4 * |y_torch|.

Usage: torch_variants.py --work DIR [--sabotage MODE]   (attnc and
attnc-run on PATH). One PASS/FAIL line per run, failures also on stderr,
and a closing 'torch_variants: N passed, M failed' line; exit 1 on a
failure. --sabotage checks that the comparisons can fail: 'key0' masks key
0 in every reference, 'lengths' passes attnc-run lengths one shorter than
the reference's (runs with lengths only), 'mask' gives the reference a
causal diagonal one higher (self-attention causal+padding), window + 1 and
the other causal_align; every run these change must FAIL.
Prints 'SKIP: ...' and exits 0 when torch cannot be imported.
"""
import argparse
import os
import subprocess
import sys
import time

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"SKIP: PyTorch/NumPy not available ({e}); install python3-torch")
    sys.exit(0)

ATOL = RTOL = 1e-4
B = 3

# name -> spec keys after 'name:'. 'ref' says which torch reference checks
# it: 'mha' (nn.MultiheadAttention, torch_in_proj weights) or 'hand'.
SPECS = {
    "pad": dict(ref="mha", yaml="d_model: 48\nheads: 3\nmask: padding\n"
                "weights: torch_in_proj\nbias: true\n"),
    "cpad": dict(ref="mha", yaml="d_model: 64\nheads: 4\nmask: causal+padding\n"
                 "weights: torch_in_proj\nbias: true\n"),
    "cross_none": dict(ref="mha", yaml="d_model: 32\nheads: 2\nmask: none\n"
                       "cross_attention: true\nweights: torch_in_proj\n"),
    "cross_pad": dict(ref="mha", yaml="d_model: 48\nheads: 4\nmask: padding\n"
                      "cross_attention: true\nweights: torch_in_proj\n"),
    "cpad_probs": dict(ref="mha", yaml="d_model: 48\nheads: 3\n"
                       "mask: causal+padding\nweights: torch_in_proj\n"
                       "outputs: [y, probs]\n"),
    "win1": dict(ref="hand", yaml="d_model: 64\nheads: 4\nkv_heads: 2\n"
                 "mask: sliding_window\nwindow: 1\nweights: separate\nbias: false\n"),
    "win5": dict(ref="hand", yaml="d_model: 64\nheads: 4\nkv_heads: 2\n"
                 "mask: sliding_window\nwindow: 5\nweights: separate\nbias: false\n"),
    "win400": dict(ref="hand", yaml="d_model: 64\nheads: 4\nkv_heads: 2\n"
                   "mask: sliding_window\nwindow: 400\nweights: separate\n"
                   "bias: false\n"),
    "cross_causal_br": dict(ref="hand", yaml="d_model: 64\nheads: 4\nkv_heads: 2\n"
                            "head_dim: 12\nmask: causal\ncausal_align: bottom_right\n"
                            "cross_attention: true\nweights: separate\nbias: true\n"),
    "cross_causal_tl": dict(ref="hand", yaml="d_model: 64\nheads: 4\nkv_heads: 2\n"
                            "head_dim: 12\nmask: causal\ncausal_align: top_left\n"
                            "cross_attention: true\nweights: separate\nbias: true\n"),
    # a window or Llama 4's chunks with padding lengths: the window and the
    # chunks count positions of each sequence's valid prefix
    "winpad5": dict(ref="hand", yaml="d_model: 64\nheads: 4\nkv_heads: 2\n"
                    "mask: sliding_window+padding\nwindow: 5\nweights: separate\n"
                    "bias: false\n"),
    "chunkpad4": dict(ref="hand", yaml="d_model: 48\nheads: 4\nkv_heads: 1\n"
                      "mask: chunked+padding\nchunk: 4\nweights: separate\n"
                      "bias: true\noutputs: [y, probs]\n"),
    # causal+padding cross-attention: the diagonal moves with the valid
    # lengths (off = kv_len - q_len); q_len > kv_len leaves rows with no key
    "cross_cpad_br": dict(ref="hand", yaml="d_model: 48\nheads: 4\nkv_heads: 1\n"
                          "mask: causal+padding\ncross_attention: true\n"
                          "weights: separate\nbias: true\n"),
}


def parse_spec(yaml):
    """The few keys the references need, from the spec text above."""
    kv = dict(line.split(": ", 1) for line in yaml.strip().split("\n"))
    d, h = int(kv["d_model"]), int(kv["heads"])
    return dict(d=d, h=h, hkv=int(kv.get("kv_heads", h)),
                dh=int(kv.get("head_dim", d // h)), mask=kv.get("mask", "none"),
                align=kv.get("causal_align", "bottom_right"),
                window=int(kv.get("window", kv.get("chunk", 0))),
                bias=kv.get("bias", "true") == "true",
                cross=kv.get("cross_attention", "false") == "true",
                probs="probs" in kv.get("outputs", ""),
                layout=kv.get("weights", "gpt2_conv1d"))


# Runs: (spec, T_q, T_kv, lengths, kv_lengths); None = not passed (all valid).
def runs():
    out = []
    for t in (1, 7, 97):
        out.append(("pad", t, t, [t, t // 2, 1], None))
        out.append(("pad", t, t, [t // 3, 0, t], None))
        out.append(("cpad", t, t, [t, t // 2, 1], None))
        out.append(("cpad", t, t, [0, t, max(t - 1, 1)], None))
    out.append(("pad", 300, 300, [300, 150, 1], None))
    out.append(("cpad", 300, 300, [299, 0, 300], None))
    for tq, tkv in ((7, 13), (97, 40), (1, 7)):
        out.append(("cross_none", tq, tkv, None, None))
    out.append(("cross_pad", 7, 13, [7, 3, 1], [13, 6, 1]))
    out.append(("cross_pad", 97, 40, [97, 0, 50], [40, 20, 1]))
    out.append(("cross_pad", 13, 7, [13, 5, 1], [7, 7, 2]))
    # a valid query row with no valid key: zero attention, y = output bias
    out.append(("cross_pad", 7, 13, [7, 4, 2], [13, 0, 5]))
    for t in (7, 97):
        out.append(("cpad_probs", t, t, [t, t // 2, 1], None))
        out.append(("cpad_probs", t, t, [0, t, 2], None))
    for t in (1, 7, 97):
        out.append(("win1", t, t, None, None))
    for t in (7, 97, 300):
        out.append(("win5", t, t, None, None))
    for t in (7, 97):
        out.append(("win400", t, t, None, None))
    for name in ("cross_causal_br", "cross_causal_tl"):
        out.append((name, 5, 9, None, None))
        out.append((name, 7, 97, None, None))
    for t in (7, 97):
        out.append(("winpad5", t, t, [t, t // 2, 1], None))
        out.append(("chunkpad4", t, t, [0, t, max(t - 2, 1)], None))
    out.append(("winpad5", 300, 300, [300, 0, 133], None))
    out.append(("cross_cpad_br", 5, 9, [5, 3, 2], [9, 4, 1]))
    out.append(("cross_cpad_br", 7, 13, [7, 0, 4], [13, 13, 2]))
    return out


def allowed_matrix(s, tq, tkv, qlen, kvlen):
    """allowed[b, i, j]: query i of sequence b sees key j (valid rows only;
    rows past the query length are all False), from the spec's words."""
    a = torch.zeros(B, tq, tkv, dtype=torch.bool)
    for b in range(B):
        off = kvlen[b] - qlen[b] if s["align"] == "bottom_right" else 0
        for i in range(qlen[b]):
            for j in range(kvlen[b]):
                ok = True
                if s["mask"] not in ("none", "padding"):
                    ok = j <= i + off
                if s["mask"].startswith("sliding_window"):
                    ok = ok and j > i + off - s["window"]
                if s["mask"].startswith("chunked"):
                    ok = ok and j // s["window"] == (i + off) // s["window"]
                a[b, i, j] = ok
    return a


def hand_attention(x, xkv, w, s, allowed):
    """Float64 attention with an explicit mask, GQA by repeating KV heads
    (query head h reads KV head h // (H / Hkv)). Rows with no allowed key
    come out NaN, as torch's."""
    h, hkv, dh = s["h"], s["hkv"], s["dh"]

    def lin(t, name):
        y = t @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    bq, tq, _ = x.shape
    tkv = xkv.shape[1]
    q = lin(x, "q_proj").view(bq, tq, h, dh).transpose(1, 2)
    k = lin(xkv, "k_proj").view(bq, tkv, hkv, dh).transpose(1, 2)
    v = lin(xkv, "v_proj").view(bq, tkv, hkv, dh).transpose(1, 2)
    k = k.repeat_interleave(h // hkv, dim=1)
    v = v.repeat_interleave(h // hkv, dim=1)
    scores = (q @ k.transpose(-1, -2)) / (dh ** 0.5)
    scores = scores.masked_fill(~allowed[:, None], float("-inf"))
    p = torch.softmax(scores, dim=-1)
    o = (p @ v).transpose(1, 2).reshape(bq, tq, h * dh)
    return lin(o, "o_proj"), p


def make_weights(s, wdir):
    """Random float32-representable weights in the spec's layout; returns
    (tensors as float64 torch, nn.MultiheadAttention or None)."""
    d, h, hkv, dh = s["d"], s["h"], s["hkv"], s["dh"]
    w, mha = {}, None
    if s["layout"] == "torch_in_proj":
        mha = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True).double()
        mha.eval()
        with torch.no_grad():
            mha.in_proj_bias.uniform_(-0.5, 0.5)
            mha.out_proj.bias.uniform_(-0.5, 0.5)
            for p in mha.parameters():
                p.copy_(p.float().double())
        params = dict(mha.named_parameters())
        for key in ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"):
            w[key] = params[key].detach().clone()
    else:
        shapes = {"q_proj": (h * dh, d), "k_proj": (hkv * dh, d),
                  "v_proj": (hkv * dh, d), "o_proj": (d, h * dh)}
        for name, (o, i) in shapes.items():
            w[name + ".weight"] = (torch.randn(o, i, dtype=torch.float64)
                                   / i ** 0.5).float().double()
            if s["bias"]:
                w[name + ".bias"] = torch.empty(o, dtype=torch.float64).uniform_(
                    -0.5, 0.5).float().double()
    os.makedirs(wdir, exist_ok=True)
    for key, t in w.items():
        np.save(os.path.join(wdir, key + ".npy"), t.numpy().astype(np.float32))
    return w, mha


def check_hand_reference():
    """The hand-written reference equals nn.MultiheadAttention (causal and
    padding mask, unequal T_q/T_kv) before it is trusted."""
    d, h = 24, 3
    mha = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True).double().eval()
    with torch.no_grad():
        mha.in_proj_bias.uniform_(-0.5, 0.5)
    W, bias = mha.in_proj_weight.detach(), mha.in_proj_bias.detach()
    w = {"q_proj.weight": W[:d], "k_proj.weight": W[d:2 * d], "v_proj.weight": W[2 * d:],
         "q_proj.bias": bias[:d], "k_proj.bias": bias[d:2 * d], "v_proj.bias": bias[2 * d:],
         "o_proj.weight": mha.out_proj.weight.detach(),
         "o_proj.bias": mha.out_proj.bias.detach()}
    s = dict(h=h, hkv=h, dh=d // h, mask="causal+padding", align="bottom_right", window=0)
    x, xkv = torch.randn(B, 6, d, dtype=torch.float64), torch.randn(B, 11, d, dtype=torch.float64)
    qlen, kvlen = [6, 6, 6], [11, 8, 6]
    allowed = allowed_matrix(s, 6, 11, qlen, kvlen)
    mine, mine_p = hand_attention(x, xkv, w, s, allowed)
    with torch.no_grad():
        ref, ref_p = mha(x, xkv, xkv, attn_mask=~allowed.repeat_interleave(h, dim=0),
                         need_weights=True, average_attn_weights=False)
    return max((mine - ref).abs().max().item(), (mine_p - ref_p).abs().max().item())


def torch_masks(s, tq, tkv, qlen, kvlen):
    """key_padding_mask [B, T_kv] (True = padded key) and attn_mask, built
    as a torch user builds them: a float -inf triu matrix for the causal
    mask of self-attention."""
    kpm = torch.zeros(B, tkv, dtype=torch.bool)
    for b in range(B):
        kpm[b, kvlen[b]:] = True
    am = None
    if s["mask"] == "causal+padding":
        assert tq == tkv and not s["cross"]
        am = torch.triu(torch.full((tq, tkv), float("-inf"), dtype=torch.float64),
                        diagonal=s.get("diag", 1))
    return kpm, am


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def compare(got, ref, rows):
    """Max |got - ref| over the rows (a bool [B, T_q] mask on the first two
    axes) and the indices of the elements over the tolerance there (NaN
    fails)."""
    m = np.broadcast_to(rows.reshape(rows.shape + (1,) * (got.ndim - 2)), got.shape)
    err = np.abs(got - ref)
    bad = ~(err <= ATOL + RTOL * np.abs(ref)) & m
    sel = err[m]
    maxerr = 0.0 if sel.size == 0 else (
        float("nan") if np.isnan(sel).any() else float(sel.max()))
    return maxerr, np.argwhere(bad)


def nrows(bad):
    return len({(int(b), int(i)) for b, i in bad[:, :2]})


def run_case(work, idx, case, specs, sabotage):
    sname, tq, tkv, lengths, kv_lengths = case
    s = specs[sname]["parsed"]
    tag = f"{sname}_{idx}"
    label = (f"{sname} T_q={tq} T_kv={tkv} lengths={lengths} kv_lengths={kv_lengths}"
             if s["cross"] else f"{sname} T={tq} lengths={lengths}")
    w, mha, wdir = specs[sname]["w"], specs[sname]["mha"], specs[sname]["wdir"]
    x = torch.randn(B, tq, s["d"], dtype=torch.float64).float().double()
    xkv = torch.randn(B, tkv, s["d"], dtype=torch.float64).float().double() if s["cross"] else x
    paths = {k: os.path.join(work, f"{tag}_{k}.npy") for k in ("x", "xkv", "y", "p")}
    np.save(paths["x"], x.numpy().astype(np.float32))
    cmd = ["attnc-run", specs[sname]["lib"], "--x", paths["x"], "--weights", wdir,
           "--out", paths["y"]]
    if s["cross"]:
        np.save(paths["xkv"], xkv.numpy().astype(np.float32))
        cmd += ["--x-kv", paths["xkv"]]
    if s["probs"]:
        cmd += ["--probs", paths["p"]]
    if tq >= 300:
        cmd += ["--threads", "2"]
    if lengths is not None:
        passed = [max(n - 1, 0) for n in lengths] if sabotage == "lengths" else lengths
        cmd += ["--lengths", ",".join(map(str, passed))]
    if kv_lengths is not None:
        cmd += ["--kv-lengths", ",".join(map(str, kv_lengths))]
    rc, text = run(cmd)
    if rc != 0:
        return label, None, [f"attnc-run exit {rc}: {' '.join(cmd)}\n{text.rstrip()}"]
    y = np.load(paths["y"]).astype(np.float64)
    probs = np.load(paths["p"]).astype(np.float64) if s["probs"] else None

    qlen = lengths if lengths is not None else [tq] * B
    kvlen = kv_lengths if kv_lengths is not None else ([tkv] * B if s["cross"] else qlen)
    rs = s  # the reference's view of the spec
    if sabotage == "mask":
        rs = dict(s, window=s["window"] + 1, diag=2, align="top_left"
                  if s["align"] == "bottom_right" else "bottom_right")
    allowed = allowed_matrix(rs, tq, tkv, qlen, kvlen)
    if sabotage == "key0":
        allowed[:, :, 0] = False
    with torch.no_grad():
        if specs[sname]["ref"] == "mha":
            kpm, am = torch_masks(rs, tq, tkv, qlen, kvlen)
            if sabotage == "key0":
                kpm[:, 0] = True
            ref, ref_p = mha(x, xkv, xkv, key_padding_mask=kpm, attn_mask=am,
                             need_weights=True, average_attn_weights=False)
        else:
            ref, ref_p = hand_attention(x, xkv, w, rs, allowed)
    ref, ref_p = ref.numpy(), ref_p.numpy()

    problems = []
    if y.shape != (B, tq, s["d"]):
        return label, None, [f"y has shape {y.shape}, expected {(B, tq, s['d'])}"]
    if not np.isfinite(y).all():
        problems.append(f"{int((~np.isfinite(y)).sum())} non-finite elements in y")
    valid = np.zeros((B, tq), dtype=bool)
    for b in range(B):
        valid[b, :qlen[b]] = True
    sees = allowed.any(dim=-1).numpy()
    padded_nonzero = [(b, i) for b in range(B) for i in range(tq)
                      if not valid[b, i] and np.any(y[b, i] != 0)]
    if padded_nonzero:
        problems.append(f"{len(padded_nonzero)} padded rows of y not exactly 0, "
                        f"first {padded_nonzero[0]}: max |y| = "
                        f"{np.abs(y[padded_nonzero[0]]).max():.3e}")
    for b in range(B):
        if qlen[b] == 0 and np.any(y[b] != 0):
            problems.append(f"length-0 sequence {b}: y not all zero")
    compared = valid & sees
    maxerr, bad = compare(y, ref, compared)
    if len(bad):
        problems.append(f"{nrows(bad)} valid rows over tolerance")
    for b, i, j in bad[:3]:
        problems.append(f"y[{b},{i},{j}] = {y[b, i, j]:.6g}, torch {ref[b, i, j]:.6g}")
    # valid rows that see no key (torch: NaN): zero attention, y = output bias
    nokey = valid & ~sees
    if nokey.any():
        ob = w.get("out_proj.bias", w.get("o_proj.bias"))
        ob = ob.numpy() if ob is not None else np.zeros(s["d"])
        e2, bad2 = compare(y, np.broadcast_to(ob, y.shape), nokey)
        maxerr = max(maxerr, e2)
        if len(bad2):
            b, i, j = bad2[0]
            problems.append(f"{nrows(bad2)} rows that see no key are not the output "
                            f"bias, first y[{b},{i},{j}] = {y[b, i, j]:.6g}, bias {ob[j]:.6g}")
    extra = ""
    if probs is not None:
        if probs.shape != (B, s["h"], tq, tkv):
            problems.append(f"probs has shape {probs.shape}")
        else:
            pv = np.transpose(probs, (0, 2, 1, 3))  # [B, T_q, H, T_kv]
            rv = np.transpose(ref_p, (0, 2, 1, 3))
            if not np.isfinite(probs).all():
                problems.append("non-finite probs")
            if np.any(pv[~valid] != 0):
                problems.append("padded rows of probs not exactly 0")
            if np.any(pv[valid & ~sees] != 0):
                problems.append("probs of rows that see no key not 0")
            perr, pbad = compare(pv, rv, compared)
            if len(pbad):
                b, i, hh, j = pbad[0]
                problems.append(f"{nrows(pbad)} probs rows over tolerance, first "
                                f"probs[{b},{hh},{i},{j}] = {pv[b, i, hh, j]:.6g}, "
                                f"torch {rv[b, i, hh, j]:.6g}")
            extra = f", probs max err {perr:.3e}"
    counts = (f"{int(compared.sum())} rows vs torch, {int(nokey.sum())} seeing no key, "
              f"{int((~valid).sum())} padded")
    if compared.sum() == 0 and nokey.sum() == 0 and valid.any():
        problems.append("no row compared")
    return label, (maxerr, extra, counts), problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--sabotage", choices=["key0", "lengths", "mask"])
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    start = time.time()
    failures = passes = 0

    e = check_hand_reference()
    if e <= 1e-12:
        passes += 1
        print(f"PASS: hand-written reference vs nn.MultiheadAttention: max err {e:.3e}")
    else:
        failures += 1
        msg = f"FAIL: hand-written reference vs nn.MultiheadAttention: max err {e:.3e}"
        print(msg)
        print(msg, file=sys.stderr)

    specs = {}
    for sname, entry in SPECS.items():
        s = parse_spec(entry["yaml"])
        path = os.path.join(args.work, sname + ".yaml")
        with open(path, "w") as f:
            f.write(f"name: tv_{sname}\n{entry['yaml']}")
        lib = os.path.join(args.work, f"libtv_{sname}.so")
        rc, text = run(["attnc", path, "-o", lib])
        if rc != 0:
            failures += 1
            msg = f"FAIL: {sname}: attnc {path} exit {rc}\n{text.rstrip()}"
            print(msg)
            print(msg, file=sys.stderr)
            continue
        wdir = os.path.join(args.work, sname + "_weights")
        w, mha = make_weights(s, wdir)
        specs[sname] = dict(parsed=s, ref=entry["ref"], lib=lib, wdir=wdir, w=w, mha=mha)

    for idx, case in enumerate(runs()):
        if case[0] not in specs:
            continue
        if args.sabotage == "lengths" and case[3] is None:
            continue
        label, res, problems = run_case(args.work, idx, case, specs, args.sabotage)
        if problems:
            failures += 1
            err = f"max err {res[0]:.3e}{res[1]}: " if res else ""
            msg = f"FAIL: {label}: {err}{'; '.join(problems)}"
            print(msg)
            print(msg, file=sys.stderr)
        else:
            passes += 1
            print(f"PASS: {label}: max err {res[0]:.3e}{res[1]} ({res[2]})")
    print(f"torch_variants: {passes} passed, {failures} failed "
          f"({time.time() - start:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
