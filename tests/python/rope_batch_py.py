#!/usr/bin/env python3
"""A padded batch's rotary tables follow the batch's length, as Hugging
Face's do: longrope's table switch and dynamic NTK's frequencies in a call
are those of max(position_ids) + 1 over the whole batch, in prefill and in
every decode step.

Opens two kernels the .test compiles (GQA, causal+padding, decode, half-split
RoPE over head_dim 16): `--longrope` (original_max_position_embeddings 16,
short and long factors far apart) and `--dynamic` (dynamic NTK, factor 2,
max_position_embeddings 16). For each, a batch whose prompts are of
different lengths (one near the switch, one short) is prefilled with one
padded forward (lengths=), then decoded step by step (and in chunks of
tokens): the long sequence crosses the switch during decode while the short
one never reaches it by its own length. Every decode output is compared
with a float64 NumPy reference written from Hugging Face's formulas
(`_compute_longrope_parameters`, `_compute_dynamic_ntk_parameters`,
`dynamic_rope_update`: the call's seq_len = max(position_ids) + 1; the
cached keys keep the rotation of the call that wrote them):
|y - ref| <= 1e-5 + 1e-5 |ref|.

--one-token: every decode call takes one token (the CUDA tiling's decode,
built with --testing-gpu-on-host, runs here as host code).

--sabotage perseq gives the reference each sequence's own length instead
(what attnc did before): the short sequence's outputs must then fail once
the long one has crossed the switch, which shows the case tells the two
apart. Prints one PASS/FAIL line per case and a summary; exit 1 on a FAIL.
"""
import argparse
import math
import os
import sys

import numpy as np

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "python"))
import attnc  # noqa: E402

THETA = 10000.0
ORIG = 16  # original_max_position_embeddings / dynamic's max_position_embeddings
SHORT = [1.0, 1.1, 1.3, 1.6, 2.0, 2.5, 3.0, 3.5]
LONG = [1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0]
DYN_FACTOR = 2.0
MAXP = 64  # longrope's max_position_embeddings


def inv_freq(kind, r, seq_len):
    """HF modeling_rope_utils for a call of length seq_len: (inv_freq, attention factor)."""
    i = np.arange(0, r, 2, dtype=np.float64)
    if kind == "longrope":
        ext = np.array(LONG if seq_len > ORIG else SHORT)
        s = MAXP / ORIG
        return 1.0 / (ext * THETA ** (i / r)), math.sqrt(1 + math.log(s) / math.log(ORIG))
    base = THETA
    if seq_len > ORIG:  # dynamic NTK
        base = THETA * ((DYN_FACTOR * seq_len / ORIG) - (DYN_FACTOR - 1)) ** (r / (r - 2))
    return 1.0 / base ** (i / r), 1.0


def rotate(x, pos, inv, af):
    """x [H, dh] of the token at position pos, rotate_half."""
    r = x.shape[-1]
    a = pos * inv
    cos = np.concatenate([np.cos(a), np.cos(a)]) * af
    sin = np.concatenate([np.sin(a), np.sin(a)]) * af
    half = np.concatenate([-x[..., r // 2:], x[..., : r // 2]], axis=-1)
    return x * cos + half * sin


class Reference:
    """One sequence's float64 decode state: rotated keys and values so far."""

    def __init__(self, w, heads, kv_heads, dh):
        self.w, self.h, self.hk, self.dh = w, heads, kv_heads, dh
        self.k, self.v = [], []

    def token(self, x, pos, inv, af):
        """Appends token x (at pos) to the cache, returns its output row."""
        w, h, hk, dh = self.w, self.h, self.hk, self.dh
        q = (w["q_proj.weight"] @ x).reshape(h, dh)
        k = (w["k_proj.weight"] @ x).reshape(hk, dh)
        v = (w["v_proj.weight"] @ x).reshape(hk, dh)
        self.k.append(rotate(k, pos, inv, af))
        self.v.append(v)
        q = rotate(q, pos, inv, af)
        K, V = np.stack(self.k), np.stack(self.v)  # [n, hk, dh]
        g = h // hk
        out = np.empty((h, dh))
        for hh in range(h):
            s = K[:, hh // g] @ q[hh] / math.sqrt(dh)
            p = np.exp(s - s.max())
            out[hh] = (p / p.sum()) @ V[:, hh // g]
        return w["o_proj.weight"] @ out.reshape(-1)


def run_case(k, kind, packed, w, prompts, steps, chunk, rng, perseq):
    """Prefill (one padded forward), then `steps` tokens per sequence in
    decode calls of `chunk`; returns (values over tolerance, max error)."""
    b = len(prompts)
    d, h, hk, dh = k.d_model, k.heads, k.kv_heads, k.head_dim
    T = max(prompts)
    x = rng.standard_normal((b, T, d))
    for s, n in enumerate(prompts):
        x[s, n:] = 0  # the padding rows (not seen)
    new = rng.standard_normal((b, steps, d))  # the decoded tokens
    kc, vc = k.new_cache(b)
    refs = [Reference(w, h, hk, dh) for _ in range(b)]
    worst, bad = 0.0, 0
    yp = k.forward(x[:, :T].astype(np.float32), packed, lengths=np.array(prompts, np.int32),
                   k_cache=kc, v_cache=vc)

    def check(y, want):
        nonlocal worst, bad
        err = np.abs(y - want)
        worst = max(worst, float((err / (1 + np.abs(want))).max()))
        bad += int((err > 1e-5 + 1e-5 * np.abs(want)).sum())

    # Prefill: one call of length T (the padded width) for every sequence.
    for s, n in enumerate(prompts):
        L = n if perseq else T
        inv, af = inv_freq(kind, dh, L)
        for t in range(n):
            check(yp[s, t], refs[s].token(x[s, t], t, inv, af))
    done = 0
    while done < steps:
        c = min(chunk, steps - done)
        pos = np.array([n + done for n in prompts], np.int32)
        toks = new[:, done:done + c]
        y = k.decode(toks.astype(np.float32), packed, pos, kc, vc)
        for s in range(b):
            L = int(pos[s]) + c if perseq else int(pos.max()) + c
            inv, af = inv_freq(kind, dh, L)
            for t in range(c):
                check(y[s, t], refs[s].token(toks[s, t], int(pos[s]) + t, inv, af))
        done += c
    return bad, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--longrope", required=True)
    ap.add_argument("--dynamic", required=True)
    ap.add_argument("--one-token", action="store_true",
                    help="decode one token per call (the CUDA tiling's decode)")
    ap.add_argument("--sabotage", choices=["perseq"])
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    passed = failed = 0
    for kind, path in (("longrope", a.longrope), ("dynamic", a.dynamic)):
        k = attnc.Kernel(path)
        sh = k.weight_shapes
        w = {n: rng.standard_normal(s) / math.sqrt(s[-1]) for n, s in sh.items()}
        packed = k.pack({n: v.astype(np.float32) for n, v in w.items()})
        w = {n: v.astype(np.float32).astype(np.float64) for n, v in w.items()}
        for prompts, steps, chunk in (([14, 4], 6, 1), ([15, 2, 9], 5, 1), ([13, 5], 8, 3),
                                      ([4, 14], 6, 2)):
            chunk = 1 if a.one_token else chunk
            bad, worst = run_case(k, kind, packed, w, prompts, steps, chunk, rng,
                                  a.sabotage == "perseq")
            what = (f"{kind} prompts={prompts} steps={steps} chunk={chunk}: "
                    f"max err {worst:.2e} vs the batch-length reference")
            if bad:
                failed += 1
                print(f"FAIL: {what}: {bad} values over 1e-5 + 1e-5|ref|")
            else:
                passed += 1
                print(f"PASS: {what}")
    print(f"rope batch: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
