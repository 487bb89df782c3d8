#!/usr/bin/env python3
"""The Python package's variant arguments against torch.nn.MultiheadAttention.

Compiles small torch_in_proj specs with attnc (from PATH): padding,
causal+padding with `outputs: [y, probs]`, cross-attention with padding
(and probs) and a plain mask-none kernel; opens them with attnc.Kernel and
calls forward(x, packed, lengths=, x_kv=, kv_lengths=, want_probs=) on
NumPy arrays (also 2-D inputs, torch tensors, two threads). Compares with a
float64 nn.MultiheadAttention on the same float32 weights and inputs, the
masks built as a torch user builds them (key_padding_mask from the
lengths, a -inf triu attn_mask for causal):

  * valid query rows that see a key: y within 1e-4 + 1e-4 |y_torch|, probs
    within 1e-5 of need_weights=True, average_attn_weights=False;
  * query rows at or past a sequence's length: exactly 0 in y and probs;
  * valid rows that see no key (kv_lengths 0; torch gives NaN): y is the
    output bias, probs 0.

Then bad arguments must raise attnc.ArgumentError (an AttncError and a
ValueError) with the status the library would return, before the library
is called (the `out` buffer passed is left untouched).

--sabotage MODE checks that the checks can fail: 'key0' masks key 0 in
the reference (y and probs comparisons), 'longer' gives attnc lengths one
longer than the reference's (padded rows), 'bias' shifts the reference's
output bias (rows that see no key), 'accept' makes every bad argument a
good one (the raise checks). Each run it changes must FAIL.

Usage: variants_py.py --work DIR [--sabotage MODE]. One PASS/FAIL line per
check and a closing 'python variants vs torch: N passed, M failed' line;
exit 1 on a failure. 'SKIP: ...' and exit 0 without torch.
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

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "python"))
import attnc  # noqa: E402

ATOL = RTOL = 1e-4
PTOL = 1e-5

SPECS = {  # name -> spec text after 'name:'
    "pyv_pad": "d_model: 48\nheads: 3\nmask: padding\nweights: torch_in_proj\nbias: true\n",
    "pyv_cpad_probs": "d_model: 32\nheads: 4\nmask: causal+padding\n"
                      "weights: torch_in_proj\nbias: true\noutputs: [y, probs]\n",
    "pyv_cross_pad": "d_model: 48\nheads: 4\nmask: padding\ncross_attention: true\n"
                     "weights: torch_in_proj\nbias: true\noutputs: [y, probs]\n",
    "pyv_plain": "d_model: 16\nheads: 2\nmask: none\nweights: torch_in_proj\nbias: true\n",
}

# What each kernel must report (features, repr pieces).
EXPECT = {
    "pyv_pad": ({"lengths"}, ["mask padding,", "features [lengths]"]),
    "pyv_cpad_probs": ({"lengths", "probs"},
                       ["mask causal+padding (bottom_right)", "features [lengths, probs]"]),
    "pyv_cross_pad": ({"lengths", "cross", "probs"},
                      ["mask padding,", "features [lengths, cross, probs]"]),
    "pyv_plain": (set(), ["mask none,", "features [none]"]),
}

# kernel, T_q, T_kv (cross only), lengths, kv_lengths, form.
# form: 'np' (3-D NumPy), '2d' (batch 1 as 2-D arrays), 'torch' (torch
# tensors in, lengths as a torch int64 tensor), 'threads' (num_threads 2),
# 'noprobs' (a probs kernel called without want_probs).
RUNS = [
    ("pyv_pad", 9, None, [9, 4, 0], None, "np"),
    ("pyv_pad", 33, None, [1, 33, 17], None, "threads"),
    ("pyv_pad", 6, None, None, None, "np"),
    ("pyv_pad", 7, None, [3], None, "2d"),
    ("pyv_cpad_probs", 8, None, [8, 3, 1], None, "np"),
    ("pyv_cpad_probs", 13, None, [0, 13, 12], None, "torch"),
    ("pyv_cpad_probs", 5, None, [5, 2, 4], None, "noprobs"),
    ("pyv_cpad_probs", 6, None, [4], None, "2d"),
    ("pyv_cross_pad", 5, 11, [5, 2, 1], [11, 6, 3], "np"),
    ("pyv_cross_pad", 12, 4, [12, 0, 7], [4, 4, 1], "threads"),
    # valid queries with no valid key: y = output bias, probs 0
    ("pyv_cross_pad", 6, 9, [6, 3, 2], [9, 0, 5], "np"),
    ("pyv_cross_pad", 4, 7, None, None, "torch"),
    ("pyv_cross_pad", 3, 8, [2], [5], "2d"),
    ("pyv_plain", 10, None, None, None, "np"),
]


def build(work, name, yaml):
    spec = os.path.join(work, name + ".yaml")
    lib = os.path.join(work, f"lib{name}.so")
    text = f"name: {name}\n{yaml}"
    # --sabotage runs reuse the libraries of the first run in the same dir.
    if os.path.exists(lib) and os.path.exists(spec) and open(spec).read() == text:
        return lib
    with open(spec, "w") as f:
        f.write(text)
    p = subprocess.run(["attnc", spec, "-o", lib], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"attnc {spec} failed ({p.returncode}):\n{p.stdout}")
    return lib


def make_mha(d, h):
    mha = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True).double().eval()
    with torch.no_grad():
        mha.in_proj_bias.uniform_(-0.5, 0.5)
        mha.out_proj.bias.uniform_(-0.5, 0.5)
        for p in mha.parameters():  # float32-representable values
            p.copy_(p.float().double())
    return mha


def compare(got, ref, rows, atol, rtol):
    """Max |got - ref| over rows (bool [B, T_q] on the first two axes of
    [B, T_q, ...] arrays) and how many rows have an element over the
    tolerance (NaN fails)."""
    m = np.broadcast_to(rows.reshape(rows.shape + (1,) * (got.ndim - 2)), got.shape)
    err = np.abs(got - ref)
    bad = ~(err <= atol + rtol * np.abs(ref)) & m
    sel = err[m]
    maxerr = 0.0 if sel.size == 0 else float(np.nanmax(sel)) if not np.isnan(sel).all() \
        else float("nan")
    badrows = {(int(b), int(i)) for b, i in np.argwhere(bad)[:, :2]}
    return maxerr, badrows


def run_case(k, mha, packed, case, sabotage, rng):
    name, tq, tkv, lengths, kv_lengths, form = case
    cross = "cross" in k.features
    probs_kernel = "probs" in k.features
    want_probs = probs_kernel and form != "noprobs"
    b = 1 if form == "2d" else 3
    d, h = k.d_model, k.heads
    tkv = tkv if cross else tq
    x = rng.standard_normal((b, tq, d)).astype(np.float32)
    xkv = rng.standard_normal((b, tkv, d)).astype(np.float32) if cross else None
    qlen = lengths if lengths is not None else [tq] * b
    kvlen = kv_lengths if kv_lengths is not None else ([tkv] * b if cross else qlen)

    # attnc, through the package
    passed_len = lengths
    if sabotage == "longer" and lengths is not None:
        passed_len = [min(n + 1, tq) for n in lengths]
    kw = {}
    if passed_len is not None:
        kw["lengths"] = passed_len
    if kv_lengths is not None:
        kw["kv_lengths"] = kv_lengths
    if cross:
        kw["x_kv"] = xkv
    threads = 2 if form == "threads" else 1
    if form == "2d":
        kw = {key: v[0] for key, v in kw.items()}  # lengths as plain ints
        res = k.forward(x[0], packed, lengths=kw.get("lengths"), x_kv=kw.get("x_kv"),
                        kv_lengths=kw.get("kv_lengths"), want_probs=want_probs)
        y, p = res if want_probs else (res, None)
        if y.shape != (tq, d) or (p is not None and p.shape != (h, tq, tkv)):
            return [f"2-D call: y {y.shape}, probs {None if p is None else p.shape}"], ""
        y, p = y[None], (None if p is None else p[None])
    elif form == "torch":
        tkw = {key: torch.tensor(v) if key.endswith("lengths") else torch.from_numpy(v)
               for key, v in kw.items()}
        res = k.forward(torch.from_numpy(x), packed, want_probs=want_probs, **tkw)
        y, p = res if want_probs else (res, None)
    else:
        res = k.forward(x, packed, num_threads=threads, want_probs=want_probs, **kw)
        y, p = res if want_probs else (res, None)
        if form == "noprobs" and isinstance(res, tuple):
            return ["want_probs=False returned a tuple"], ""
    y = y.astype(np.float64)
    p = None if p is None else p.astype(np.float64)

    # the torch reference: masks from the lengths, as a torch user writes them
    kpm = torch.zeros(b, tkv, dtype=torch.bool)
    for s in range(b):
        kpm[s, kvlen[s]:] = True
    if sabotage == "key0":
        kpm[:, 0] = True
    am = None
    if k.info["mask"] == "causal+padding":
        am = torch.triu(torch.full((tq, tkv), float("-inf"), dtype=torch.float64), diagonal=1)
    xt = torch.from_numpy(x).double()
    xkvt = torch.from_numpy(xkv).double() if cross else xt
    with torch.no_grad():
        ref, ref_p = mha(xt, xkvt, xkvt, key_padding_mask=kpm, attn_mask=am,
                         need_weights=True, average_attn_weights=False)
    ref, ref_p = ref.numpy(), ref_p.numpy()
    out_bias = mha.out_proj.bias.detach().numpy()

    problems = []
    if y.shape != (b, tq, d):
        return [f"y has shape {y.shape}, expected {(b, tq, d)}"], ""
    if not np.isfinite(y).all():
        problems.append("non-finite y")
    valid = np.zeros((b, tq), dtype=bool)
    for s in range(b):
        valid[s, :qlen[s]] = True
    sees = np.array([[kvlen[s] > 0] * tq for s in range(b)])
    if sabotage == "key0":
        sees &= np.array([[kvlen[s] > 1] * tq for s in range(b)])
    compared, nokey = valid & sees, valid & ~sees
    padded = int((~valid).sum())
    nz = [(s, i) for s in range(b) for i in range(tq) if not valid[s, i] and np.any(y[s, i] != 0)]
    if nz:
        problems.append(f"{len(nz)} padded rows of y not exactly 0, first {nz[0]}")
    err, bad = compare(y, ref, compared, ATOL, RTOL)
    if bad:
        problems.append(f"{len(bad)} valid rows of y over tolerance vs torch, first "
                        f"{min(bad)}: max err {err:.3e}")
    if nokey.any():
        if sabotage == "bias":
            out_bias = out_bias + 1e-2
        _, bad2 = compare(y, np.broadcast_to(out_bias, y.shape), nokey, ATOL, RTOL)
        if bad2:
            problems.append(f"{len(bad2)} rows that see no key are not the output bias")
    extra = ""
    if p is not None:
        if p.shape != (b, h, tq, tkv):
            problems.append(f"probs has shape {p.shape}, expected {(b, h, tq, tkv)}")
        else:
            pv, rv = p.transpose(0, 2, 1, 3), ref_p.transpose(0, 2, 1, 3)  # [B, T_q, H, T_kv]
            if not np.isfinite(pv).all():
                problems.append("non-finite probs")
            if np.any(pv[~valid] != 0):
                problems.append("padded rows of probs not exactly 0")
            if np.any(pv[nokey] != 0):
                problems.append("probs of rows that see no key not 0")
            perr, pbad = compare(pv, rv, compared, PTOL, 0.0)
            if pbad:
                problems.append(f"{len(pbad)} valid rows of probs over tolerance vs torch, "
                                f"first {min(pbad)}: max err {perr:.3e}")
            extra = f", probs max err {perr:.2e}"
    if not compared.any() and not nokey.any() and valid.any():
        problems.append("no row compared")
    return problems, (f"max err {err:.2e}{extra} ({int(compared.sum())} rows vs torch, "
                      f"{int(nokey.sum())} seeing no key, {padded} padded)")


def bad_calls(kernels, sabotage):
    """(description, kernel, kwargs for forward, expected status): calls the
    package must refuse. With --sabotage accept, the good value instead."""
    ok = sabotage == "accept"
    pad, cp, cr, pl = (kernels[n] for n in ("pyv_pad", "pyv_cpad_probs", "pyv_cross_pad",
                                            "pyv_plain"))
    x = np.zeros((3, 7, 48), np.float32)
    x32 = np.zeros((3, 7, 32), np.float32)
    x16 = np.zeros((3, 7, 16), np.float32)
    m = np.zeros((3, 5, 48), np.float32)
    A, S, B = 7, 2, 4  # ATTNC_ERR_ARGS, _BAD_SHAPE, _BUFFER_SIZE
    return [
        ("wrong lengths count (2 for batch 3)", pad, dict(x=x, lengths=[7, 7, 7] if ok else [7, 7]), A),
        ("lengths as a [3, 1] array", pad,
         dict(x=x, lengths=np.array([7, 7, 7]) if ok else np.array([[7], [7], [7]])), A),
        ("a length > T (8 for T 7)", pad, dict(x=x, lengths=[7, 7 if ok else 8, 1]), A),
        ("a negative length", cp, dict(x=x32, lengths=[0 if ok else -1, 2, 3]), A),
        ("float lengths", pad, dict(x=x, lengths=[7, 3, 1] if ok else [7.0, 3.0, 1.0]), A),
        ("a kv_length > T_kv (6 for T_kv 5)", cr,
         dict(x=x, x_kv=m, lengths=[7, 7, 7], kv_lengths=[5, 5 if ok else 6, 1]), A),
        ("x_kv on a self-attention kernel", pad,
         dict(x=x, x_kv=None if ok else m, lengths=[7, 2, 1]), A),
        ("kv_lengths on a self-attention kernel", cp,
         dict(x=x32, lengths=[7, 2, 1], kv_lengths=None if ok else [7, 2, 1]), A),
        ("no x_kv on a cross-attention kernel", cr, dict(x=x, x_kv=m if ok else None), A),
        ("x_kv with another batch", cr, dict(x=x, x_kv=m if ok else m[:2]), S),
        ("x_kv with another d_model", cr, dict(x=x, x_kv=m if ok else m[..., :32]), S),
        ("lengths on a mask-none kernel", pl, dict(x=x16, lengths=None if ok else [7, 7, 7]), A),
        ("want_probs on a kernel without probs", pad, dict(x=x, want_probs=not ok), A),
        ("complex x", pad, dict(x=x if ok else x.astype(np.complex64)), A),
        ("x with the wrong d_model", cp, dict(x=x32 if ok else x16), S),
        ("probs_out of the wrong shape", cp,
         dict(x=x32, probs_out=np.zeros((3, 4, 7, 7 if ok else 6), np.float32)), B),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--sabotage", choices=["key0", "longer", "bias", "accept"])
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    passes = failures = 0

    def report(ok, msg):
        nonlocal passes, failures
        passes += ok
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'}: {msg}")
        if not ok:
            print(f"FAIL: {msg}", file=sys.stderr)

    kernels, mhas, packs = {}, {}, {}
    for name, yaml in SPECS.items():
        try:
            k = attnc.Kernel(build(args.work, name, yaml))
        except Exception as e:  # noqa: BLE001
            report(False, f"{name}: {type(e).__name__}: {e}")
            continue
        feats, pieces = EXPECT[name]
        r = repr(k)
        problems = []
        if k.features != feats:
            problems.append(f"features {sorted(k.features)}, expected {sorted(feats)}")
        if k.info["features"] != [f for f in ("lengths", "cross", "probs") if f in feats]:
            problems.append(f"info['features'] {k.info['features']}")
        if (k.takes_lengths, k.cross_attention, k.has_probs) != \
                ("lengths" in feats, "cross" in feats, "probs" in feats):
            problems.append("takes_lengths/cross_attention/has_probs disagree with features")
        problems += [f"repr lacks '{piece}': {r}" for piece in pieces if piece not in r]
        report(not problems, f"{name}: metadata ({r})" if not problems
               else f"{name}: metadata: {'; '.join(problems)}")
        kernels[name] = k
        mhas[name] = make_mha(k.d_model, k.heads)
        packs[name] = k.pack(mhas[name].state_dict())
        if name == "pyv_plain":  # the module itself (its state_dict())
            report(np.array_equal(k.pack(mhas[name]), packs[name]),
                   f"{name}: pack(nn.MultiheadAttention) packs its state_dict()")

    for case in RUNS:
        name, tq, tkv, lengths, kv_lengths, form = case
        label = (f"{name} T_q={tq} T_kv={tkv} lengths={lengths} kv_lengths={kv_lengths}"
                 if tkv else f"{name} T={tq} lengths={lengths}") + f" [{form}]"
        if name not in kernels:
            continue
        try:
            problems, info = run_case(kernels[name], mhas[name], packs[name], case,
                                      args.sabotage, rng)
        except Exception as e:  # noqa: BLE001
            problems, info = [f"{type(e).__name__}: {e}"], ""
        report(not problems, f"{label}: {'; '.join(problems) if problems else info}")

    if len(kernels) == len(SPECS):
        for desc, k, kw, status in bad_calls(kernels, args.sabotage):
            x = kw.pop("x")
            out = np.full((x.shape[0], x.shape[1], k.out_dim), 7.0, np.float32) \
                if x.ndim == 3 and x.shape[-1] == k.d_model else None
            try:
                k.forward(x, packs[k.name], out=out, **kw)
                report(False, f"raises: {desc}: no exception")
            except attnc.ArgumentError as e:
                problems = []
                if not isinstance(e, (attnc.AttncError, ValueError)):
                    problems.append("not an AttncError and a ValueError")
                if e.status != status:
                    problems.append(f"status {e.status}, expected {status}")
                if out is not None and np.any(out != 7.0):
                    problems.append("the library was called (out was written)")
                report(not problems, f"raises: {desc}: {e}" if not problems
                       else f"raises: {desc}: {'; '.join(problems)}")
            except Exception as e:  # noqa: BLE001
                report(False, f"raises: {desc}: {type(e).__name__} instead of "
                       f"attnc.ArgumentError: {e}")

    print(f"python variants vs torch: {passes} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
