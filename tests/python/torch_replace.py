#!/usr/bin/env python3
"""attnc.torch: the attnc::forward operator, AttnModule and
replace_attention against torch.nn.MultiheadAttention.

Each check prints PASS/FAIL and a summary line; exit 1 on any failure.
Kernels are compiled with attnc.compile into --work/cache (attnc from
$ATTNC_BIN or PATH).

  torch_replace.py --work DIR
"""
import argparse
import os
import subprocess
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import attnc  # noqa: E402
import attnc.torch as at  # noqa: E402
from checks import Checks  # noqa: E402

E, H = 16, 2
TOL = 1e-5
check = Checks()


def err(a, b):
    return float((a.double() - b.double()).abs().max())


class Encoder(torch.nn.Module):
    """Two attention layers (the second causal, through a bool attn_mask)
    with layer norms and an MLP between them."""

    def __init__(self, batch_first):
        super().__init__()
        self.batch_first = batch_first
        self.attn1 = torch.nn.MultiheadAttention(E, H, batch_first=batch_first)
        self.norm1 = torch.nn.LayerNorm(E)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(E, 32), torch.nn.GELU(),
                                       torch.nn.Linear(32, E))
        self.attn2 = torch.nn.MultiheadAttention(E, H, batch_first=batch_first)
        self.norm2 = torch.nn.LayerNorm(E)

    def forward(self, x, key_padding_mask=None):
        t = x.shape[1] if self.batch_first else x.shape[0]
        h = self.norm1(x + self.attn1(x, x, x, key_padding_mask=key_padding_mask,
                                      need_weights=False)[0])
        h = h + self.mlp(h)
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        return self.norm2(h + self.attn2(h, h, h, attn_mask=causal, need_weights=False)[0])


def randomize(mod):
    with torch.no_grad():
        for p in mod.parameters():
            p.uniform_(-0.4, 0.4)
    return mod


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    # torch's own note on float key_padding_masks in the reference calls.
    warnings.filterwarnings("ignore", message="Converting mask without torch.bool")
    cache = os.path.join(a.work, "cache")
    torch.manual_seed(0)

    # -- the encoder, both batch layouts ----------------------------------
    for bf in (True, False):
        model = randomize(Encoder(bf)).eval()
        x = torch.randn(3, 9, E) if bf else torch.randn(9, 3, E)
        with torch.no_grad():
            ref = model(x)
        keys = list(model.state_dict())
        at.replace_attention(model, cache_dir=cache)
        ok_types = all(isinstance(m, at.MultiheadAttention) for m in (model.attn1, model.attn2))
        with torch.no_grad():
            y = model(x)
        e = err(y, ref)
        check(ok_types and model.attnc_replaced == ["attn1", "attn2"] and e <= TOL,
              f"encoder (batch_first={bf}) after replace_attention: "
              f"{model.attnc_replaced}, max |attnc - torch| = {e:.2e}")
        check(list(model.state_dict()) == keys and not list(model.attn1.parameters()),
              f"encoder (batch_first={bf}): state_dict keys as before, attention weights "
              "buffers (no parameters)")
        kinds = sorted(model.attn1.kernels) + sorted(model.attn2.kernels)
        check(kinds == ["sn", "sc"], f"encoder (batch_first={bf}): kernels used {kinds} "
              "(self-attention, none and causal)")
        if bf:
            enc = model

    # -- masks, need_weights, cross-attention: one MHA vs its replacement --
    mha = randomize(torch.nn.MultiheadAttention(E, H, batch_first=True)).eval()
    rep = at.replace_attention(randomize(torch.nn.MultiheadAttention(E, H, batch_first=True)),
                               cache_dir=cache, fallback="error")
    rep.load_state_dict(mha.state_dict())  # the weights of `mha`, loaded after
    b, t, s = 3, 7, 7
    x = torch.randn(b, t, E)
    mem = torch.randn(b, 11, E)
    causal_b = torch.ones(t, t, dtype=torch.bool).triu(1)
    causal_f = torch.zeros(t, t).masked_fill(causal_b, float("-inf"))
    lens = torch.tensor([7, 4, 1])
    kpm_b = torch.arange(s)[None, :] >= lens[:, None]
    kpm_f = torch.zeros(b, s).masked_fill(kpm_b, float("-inf"))
    cases = [
        ("no mask, need_weights (averaged)", dict(), (x, x, x)),
        ("need_weights per head", dict(average_attn_weights=False), (x, x, x)),
        ("bool causal attn_mask", dict(attn_mask=causal_b), (x, x, x)),
        ("additive causal attn_mask", dict(attn_mask=causal_f), (x, x, x)),
        ("3-D attn_mask [B*H, T, S]", dict(attn_mask=causal_b.expand(b * H, t, t)), (x, x, x)),
        ("is_causal", dict(is_causal=True), (x, x, x)),
        ("bool key_padding_mask", dict(key_padding_mask=kpm_b), (x, x, x)),
        ("additive key_padding_mask", dict(key_padding_mask=kpm_f), (x, x, x)),
        ("key_padding_mask + causal", dict(key_padding_mask=kpm_b, attn_mask=causal_b),
         (x, x, x)),
        ("cross-attention (T_kv 11)", dict(), (x, mem, mem)),
        ("unbatched input", dict(), (x[0], x[0], x[0])),
        ("all-visible attn_mask", dict(attn_mask=torch.zeros(t, t, dtype=torch.bool)),
         (x, x, x)),
    ]
    for name, kw, (q, k, v) in cases:
        with torch.no_grad():
            tkw = dict(kw)
            if tkw.pop("is_causal", False):  # torch 1.13's MHA has no is_causal
                tkw["attn_mask"] = causal_b
            ry, rw = mha(q, k, v, **tkw)
            y, w = rep(q, k, v, **kw)
        e = err(y, ry)
        ew = err(w, rw) if rw is not None and w is not None else float("inf")
        check(e <= TOL and ew <= TOL and w.shape == rw.shape,
              f"{name}: max |y - torch| = {e:.2e}, |weights - torch| = {ew:.2e}, "
              f"weights {tuple(w.shape)}")
    with torch.no_grad():
        y, w = rep(x, x, x, need_weights=False)
        ry, _ = mha(x, x, x, need_weights=False)
    check(w is None and err(y, ry) <= TOL, "need_weights=False returns (y, None)")

    # -- what the kernel cannot express: fallback ---------------------------
    odd = torch.rand(t, t) < 0.3
    odd.fill_diagonal_(False)
    with torch.no_grad():
        ry, _ = mha(x, x, x, attn_mask=odd)
        try:
            rep(x, x, x, attn_mask=odd)
            check(False, "fallback='error': an arbitrary attn_mask raised nothing")
        except at.Unsupported as e:
            check("attn_mask" in str(e), f"fallback='error': Unsupported: {e}")
        rep.fallback = "warn"
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            y, _ = rep(x, x, x, attn_mask=odd)
        msgs = [str(m.message) for m in ws]
        check(err(y, ry) <= TOL and any("running torch's" in m for m in msgs),
              f"fallback='warn': torch's result with a warning: {msgs[:1]}")
        left = torch.zeros(b, s, dtype=torch.bool)
        left[1, :2] = True  # left padding: not a valid-key count
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            y, _ = rep(x, x, x, key_padding_mask=left)
        ry, _ = mha(x, x, x, key_padding_mask=left)
        check(err(y, ry) <= TOL and any("key_padding_mask" in str(m.message) for m in ws),
              "left-padded key_padding_mask: torch's result with a warning")
        # Right padding, but -1e9 rather than -inf: the warning gives that
        # reason (not left padding).
        big = torch.zeros(b, s).masked_fill(kpm_b, -1e9)
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            y, _ = rep(x, x, x, key_padding_mask=big)
        ry, _ = mha(x, x, x, key_padding_mask=big)
        msgs = [str(m.message) for m in ws if "attnc" in str(m.message)]
        check(err(y, ry) <= TOL and len(msgs) == 1 and "other than 0 and -inf" in msgs[0]
              and "on the right" not in msgs[0],
              f"key_padding_mask of -1e9 padded on the right: torch's result, {msgs}")
        # is_causal on a call that falls back: torch's forward gets the
        # causal mask (its functional form in torch 1.13 has no is_causal).
        # (a value of other values than the key's: a key and value that are
        # two tensors of equal values run the kernels, below)
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            y, _ = rep(x, mem[:, :t], mem[:, :t] + 1, is_causal=True)
        ry, _ = mha(x, mem[:, :t], mem[:, :t] + 1, attn_mask=causal_b)
        check(err(y, ry) <= TOL and any("different values" in str(m.message) for m in ws),
              f"is_causal on a fallback call (key is not value): causal, "
              f"|y - torch| = {err(y, ry):.2e}")
        # key and value two tensors of equal values (x.half() called twice,
        # a clone): the kernels, no fallback; a query equal to them by value
        # takes the self-attention kernel.
        variants, plain = [], rep._variant
        rep._variant = lambda cross, causal: variants.append((cross, causal)) or \
            plain(cross, causal)
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            y, _ = rep(x, mem[:, :t], mem[:, :t].clone(), is_causal=True)
            ys, _ = rep(x, x.clone(), x.clone(), attn_mask=causal_b)
        del rep._variant
        ry, _ = mha(x, mem[:, :t], mem[:, :t].clone(), attn_mask=causal_b)
        rs, _ = mha(x, x, x, attn_mask=causal_b)
        check(err(y, ry) <= TOL and err(ys, rs) <= TOL and
              not [m for m in ws if "attnc" in str(m.message)] and
              variants == [(True, True), (False, True)],
              f"key and value of equal values (not one tensor): the kernels, no fallback; "
              f"query, key and value three equal tensors: the self-attention kernel "
              f"(variants (cross, causal): {variants})")
        try:
            rep(x, x, x, attn_mask=causal_b.expand(H, t, t))
            check(False, "a 3-D attn_mask of the wrong batch raised nothing")
        except RuntimeError as e:
            check("should be" in str(e), f"3-D attn_mask [H, T, S] with batch 3: {e}")
        # Ranks torch's module refuses: its error (an AssertionError naming
        # the problem), not an IndexError from the replacement.
        x1 = torch.randn(E)
        for what, qkv, words in (("1-D query", (x1, x1, x1), "1-D query"),
                                 ("3-D query, 2-D key and value", (x, x[0], x[0]),
                                  "expected `key` and `value` to be 3-D")):
            got = []
            for mod in (mha, rep):
                try:
                    mod(*qkv)
                    got.append((None, "no error"))
                except Exception as e:  # noqa: BLE001
                    got.append((type(e), str(e)))
            check(got[0][0] is got[1][0] is AssertionError and words in got[1][1],
                  f"{what}: as torch's module: {got[1][0].__name__ if got[1][0] else ''}: "
                  f"{got[1][1]}")
    # The replaced module's eval mode is kept (no dropout at inference).
    drop = randomize(torch.nn.MultiheadAttention(E, H, dropout=0.5, batch_first=True)).eval()
    rdrop = at.replace_attention(torch.nn.Sequential(drop).eval(), cache_dir=cache,
                                 fallback="error")[0]
    with torch.no_grad():
        y1, _ = rdrop(x, x, x)
        y2, _ = rdrop(x, x, x)
        ry, _ = drop(x, x, x)
    check(not rdrop.training and torch.equal(y1, y2) and err(y1, ry) <= TOL,
          "replace_attention on an eval() model: the replacement is in eval mode")
    # An edit through .data bypasses the version counter: repack().
    with torch.no_grad():
        before, _ = rdrop(x, x, x)
        rdrop.in_proj_weight.data.mul_(0.5)
        drop.in_proj_weight.data.mul_(0.5)
        rdrop.repack()
        y, _ = rdrop(x, x, x)
        ry, _ = drop(x, x, x)
    check(err(y, ry) <= TOL and err(before, ry) > 1e-3,
          f"repack() after an edit through .data: |y - torch| = {err(y, ry):.2e}")
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        odd_mha = torch.nn.MultiheadAttention(E, H, kdim=8, vdim=8)
        kept = at.replace_attention(torch.nn.Sequential(odd_mha), cache_dir=cache)
    check(kept[0] is odd_mha and kept.attnc_replaced == [] and
          any("kdim/vdim" in str(m.message) for m in ws),
          "kdim/vdim != embed_dim: module kept, with a warning")

    class MyMHA(torch.nn.MultiheadAttention):
        pass

    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        sub = MyMHA(E, H)
        kept = at.replace_attention(torch.nn.Sequential(sub), cache_dir=cache)
    check(kept[0] is sub and kept.attnc_replaced == [] and
          any("subclass" in str(m.message) and m.filename == __file__ for m in ws),
          "a subclass of nn.MultiheadAttention: kept, with a warning at the caller's line")

    # -- gradients: an error, not a silent drop ------------------------------
    xg = x.clone().requires_grad_()
    for what, call in (("replacement", lambda: rep(xg, xg, xg)),
                       ("operator", lambda: enc.attn1.kernels["sn"](xg))):
        try:
            call()
            check(False, f"{what}: a requires_grad input in grad mode raised nothing")
        except RuntimeError as e:
            check("inference only" in str(e), f"{what}: requires_grad input: {e}")
    with torch.no_grad():
        y = rep(xg, xg, xg)[0]
    check(not y.requires_grad, "under no_grad a requires_grad input runs")

    # -- tracing: one node per attention -------------------------------------
    x = torch.randn(3, 9, E)
    with torch.no_grad():
        ref = enc(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on the mask checks
            tr = torch.jit.trace(enc, x)
        y = tr(x)
        again = enc(x)
    kinds = [n.kind() for n in tr.inlined_graph.nodes()]
    n_ops = kinds.count("attnc::forward")
    sdpa = [k for k in kinds if "softmax" in k or k == "aten::bmm" or k == "aten::baddbmm"]
    check(n_ops == 2 and not sdpa and torch.equal(y, again) and err(y, ref) <= TOL,
          f"torch.jit.trace: {n_ops} attnc::forward nodes, no softmax/bmm, same output")
    path = os.path.join(a.work, "enc.pt")
    tr.save(path)
    torch.save(x, os.path.join(a.work, "x.pt"))
    torch.save(y, os.path.join(a.work, "y.pt"))
    code = ("import sys, torch; sys.path.insert(0, sys.argv[2]); import attnc.torch\n"
            "m = torch.jit.load(sys.argv[1] + '/enc.pt')\n"
            "x = torch.load(sys.argv[1] + '/x.pt'); y = torch.load(sys.argv[1] + '/y.pt')\n"
            "with torch.no_grad(): print('equal' if torch.equal(m(x), y) else 'differs')\n")
    p = subprocess.run([sys.executable, "-c", code, a.work, os.path.join(SRC, "python")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(p.stdout.strip().endswith("equal") and "differs" not in p.stdout,
          f"the saved trace in a new process (import attnc.torch): {p.stdout.strip()[-200:]}")

    # -- AttnModule: buffers, state_dict, zero-copy ---------------------------
    k = attnc.compile(rep.spec(False, False), cache_dir=cache)
    check(not k.compiled, "attnc.compile of a variant's spec: from the cache")
    m1 = at.AttnModule(k, weights=mha.state_dict())
    sd = m1.state_dict()
    m2 = at.AttnModule(k, packed=torch.zeros(k.packed_bytes, dtype=torch.uint8))
    m2.load_state_dict(sd)
    m2 = m2.to("cpu").to(torch.float64)  # a uint8 buffer: left as it is
    with torch.no_grad():
        y1, y2 = m1(x), m2(x)
        ry, _ = mha(x, x, x, need_weights=False)
    check(list(sd) == ["packed"] and sd["packed"].dtype == torch.uint8 and
          torch.equal(y1, y2) and err(y1, ry) <= TOL,
          f"AttnModule: state_dict {list(sd)} ({sd['packed'].numel()} bytes) round trip, "
          f".to() keeps uint8, |y - torch| = {err(y1, ry):.2e}")
    # Zero-copy: the kernel reads x where it lies (a write through another
    # view of the same memory changes the result) and y is not an alias.
    with torch.no_grad():
        base = torch.randn(2 * 3 * 9 * E)
        xv = base[: 3 * 9 * E].view(3, 9, E)
        y_a = m1(xv)
        base[: 3 * 9 * E].mul_(2)
        y_b = m1(xv)
        ry, _ = mha(xv, xv, xv, need_weights=False)
    check(not torch.equal(y_a, y_b) and err(y_b, ry) <= TOL and
          y_b.data_ptr() != xv.data_ptr(), "AttnModule reads a contiguous view in place")
    with torch.no_grad():
        xt = torch.randn(9, 3, E).transpose(0, 1)  # not contiguous: made contiguous
        check(err(m1(xt), mha(xt, xt, xt, need_weights=False)[0]) <= TOL,
              "AttnModule on a non-contiguous input")
        try:
            torch.ops.attnc.forward(x, m1.packed[1:], m1.kernel_path)
            check(False, "a short packed buffer raised nothing")
        except RuntimeError as e:
            check("packed" in str(e), f"a short packed buffer: {e}")

    # -- .to(float64) on the replacement: repacked, output in the input's dtype
    import copy
    rep64 = copy.deepcopy(rep).to(torch.float64)
    mha64 = copy.deepcopy(mha).double()
    x64 = torch.randn(2, 5, E, dtype=torch.float64)
    with torch.no_grad():
        y, w = rep64(x64, x64, x64, attn_mask=causal_b[:5, :5])
        ry, rw = mha64(x64, x64, x64, attn_mask=causal_b[:5, :5])
    check(y.dtype == torch.float64 and rep64.in_proj_weight.dtype == torch.float64
          and err(y, ry) <= TOL and err(w, rw) <= TOL,
          f"replacement .to(torch.float64): float64 weights repacked, y {y.dtype}, "
          f"|y - torch float64| = {err(y, ry):.2e}")

    # -- a model without nn.MultiheadAttention: a warning, nothing replaced
    class HfLikeAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = torch.nn.Linear(E, E)

    plain = torch.nn.Sequential(HfLikeAttention(), torch.nn.Linear(E, E))
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        attnc.torch.replace_attention(plain)
    msgs = [str(w.message) for w in ws]
    check(plain.attnc_replaced == [] and len(msgs) == 1
          and "nothing was replaced (its attention modules are HfLikeAttention" in msgs[0],
          f"a model without nn.MultiheadAttention: {msgs}")

    # fallback is checked up front, whatever the model holds.
    for what, model in (("a module it cannot replace", torch.nn.Sequential(
            torch.nn.MultiheadAttention(E, H, add_bias_kv=True))),
                        ("no nn.MultiheadAttention", torch.nn.Sequential(torch.nn.Linear(E, E)))):
        try:
            at.replace_attention(model, fallback="erorr")
            check(False, f"fallback='erorr' ({what}): accepted")
        except ValueError as e:
            check("'warn', 'error' or 'silent'" in str(e) and "'erorr'" in str(e),
                  f"fallback='erorr' ({what}): {e}")

    # -- one module under two names: one replacement, the tie kept -----------
    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.MultiheadAttention(E, H, batch_first=True)
            self.b = self.a
            self.p = torch.nn.Sequential(self.a)  # and in another parent

        def forward(self, x):
            return self.a(x, x, x)[0] + 2 * self.b(x, x, x)[0] + self.p[0](x, x, x)[0]

    tw = randomize(Twice()).eval()
    x = torch.randn(2, 7, E)
    at.replace_attention(tw, cache_dir=cache)
    tref = Twice().eval()
    tref.load_state_dict(tw.state_dict())
    with torch.no_grad():
        for m in (tw.a, tref.a):
            m.in_proj_weight.mul_(0.5)  # through one name: the other sees it
        y, ry = tw(x), tref(x)
    check(tw.a is tw.b is tw.p[0] and isinstance(tw.a, at.MultiheadAttention)
          and tw.attnc_replaced == ["a", "b", "p.0"] and err(y, ry) <= TOL,
          f"a module under three names: one replacement {tw.attnc_replaced}, the tie kept "
          f"after an in-place edit (err {err(y, ry):.1e})")

    # -- keys with no rows: torch's answer (the projection of zeros) ---------
    mha0 = randomize(torch.nn.MultiheadAttention(E, H, batch_first=True)).eval()
    rep0 = at.MultiheadAttention(mha0, cache_dir=cache)
    x, kv0 = torch.randn(2, 5, E), torch.randn(2, 0, E)
    with torch.no_grad(), warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        y, w = rep0(x, kv0, kv0)
        ry, rw = mha0(x, kv0, kv0)
    check(y.shape == ry.shape and err(y, ry) <= TOL and w.shape == rw.shape and not ws,
          f"key and value with no rows: y {tuple(y.shape)} as torch's, no warning")

    # -- tracing with a key_padding_mask: torch's function, traced ----------
    pad = torch.zeros(2, 5, dtype=torch.bool)
    with torch.no_grad(), warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        tr = torch.jit.trace(lambda q, m: rep0(q, q, q, key_padding_mask=m)[0], (x, pad),
                             check_trace=False)
    other = pad.clone()
    other[1, 3:] = True
    with torch.no_grad():
        ty, ry = tr(x, other), mha0(x, x, x, key_padding_mask=other)[0]
    kinds = [n.kind() for n in tr.inlined_graph.nodes()]
    check(err(ty, ry) <= TOL and "attnc::forward" not in kinds and
          any("torch.jit.trace with a key_padding_mask" in str(m.message) for m in ws),
          f"traced with a key_padding_mask: torch's function, right for another padding "
          f"(err {err(ty, ry):.1e})")

    # -- num_threads is checked where it is given -----------------------------
    for what, make in (("replace_attention", lambda: at.replace_attention(
            torch.nn.Sequential(torch.nn.MultiheadAttention(E, H)), num_threads=-1)),
                       ("MultiheadAttention", lambda: at.MultiheadAttention(mha0, num_threads=1.5))):
        try:
            make()
            check(False, f"{what}: a bad num_threads accepted")
        except ValueError as e:
            check("num_threads must be an integer >= 0" in str(e), f"{what}: {e}")

    # -- a buffer assigned anew is repacked, even at the old one's address ---
    # (before the fix the new tensor took the old one's address 3 times in
    # 20 here, version 0 both, and the stale packed weights ran: 1.26 off)
    torch.manual_seed(0)
    rr = at.replace_attention(torch.nn.MultiheadAttention(64, 4, batch_first=True),
                              cache_dir=cache)
    x = torch.randn(2, 6, 64)
    worst = 0.0
    for _ in range(20):
        with torch.no_grad():
            rr(x, x, x)
        rr.in_proj_weight = torch.randn(192, 64) * 0.1
        rr.in_proj_weight = torch.randn(192, 64) * 0.1
        ref = torch.nn.MultiheadAttention(64, 4, batch_first=True)
        ref.load_state_dict(rr.state_dict())
        with torch.no_grad():
            worst = max(worst, err(rr(x, x, x)[0], ref(x, x, x)[0]))
    check(worst <= TOL, f"buffers assigned anew: repacked every time (err {worst:.1e})")
    mr = randomize(torch.nn.MultiheadAttention(E, H, batch_first=True)).eval()
    rr = at.MultiheadAttention(mr, cache_dir=cache)
    x = torch.randn(2, 6, E)

    # -- masks torch refuses: torch's error, no fallback warning first --------
    for what, kw in (("int64 key_padding_mask",
                      dict(key_padding_mask=torch.zeros(2, 6, dtype=torch.int64))),
                     ("attn_mask of the wrong shape",
                      dict(attn_mask=torch.zeros(5, 6, dtype=torch.bool)))):
        with torch.no_grad(), warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            try:
                rr(x, x, x, **kw)
                check(False, f"{what}: accepted")
            except (AssertionError, RuntimeError) as e:
                check(not ws, f"{what}: torch's error, no warning: {type(e).__name__}: "
                      f"{str(e).splitlines()[0]}")
    um = torch.ones(6, 6, dtype=torch.uint8).triu_(1)
    with torch.no_grad(), warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        yu = rr(x, x, x, attn_mask=um)[0]
        yb = rr(x, x, x, attn_mask=um.bool())[0]
    check(torch.equal(yu, yb) and not [w for w in ws if "attnc" in str(w.message)],
          "a uint8 causal attn_mask: the causal kernel, as the bool mask")

    # -- targets checked where they are given ---------------------------------
    for where, make in (("replace_attention", lambda t: at.replace_attention(
            torch.nn.Sequential(torch.nn.MultiheadAttention(E, H)), target=t)),
                        ("MultiheadAttention", lambda t: at.MultiheadAttention(mr, target=t)),
                        ("AttnModule", lambda t: at.AttnModule(rr.spec(False, False),
                                                               weights=mr.state_dict(),
                                                               target=t))):
        for t, words in (("riscv", "target must be None or one of"),
                         ("cuda-sm80", "the torch operators run CPU kernels only")):
            try:
                make(t)
                check(False, f"{where}: target {t} accepted")
            except ValueError as e:
                check(words in str(e), f"{where}: target {t}: {e}")

    # -- fallback='error' on a model with nothing to replace ------------------
    try:
        at.replace_attention(torch.nn.Sequential(torch.nn.Linear(E, E)), fallback="error")
        check(False, "fallback='error' without nn.MultiheadAttention: returned")
    except at.Unsupported as e:
        check("nothing was replaced" in str(e),
              f"fallback='error' without nn.MultiheadAttention: {e}")

    # -- a block past attnc's limits (docs/limits.md): torch's ---------------
    # (d_model 2048 on one head: head_dim 2048 > 1024; attnc refuses the
    # spec with exit 2, once: the second call compiles nothing)
    big = torch.nn.MultiheadAttention(2048, 1).eval()
    rb = at.replace_attention(torch.nn.Sequential(big), cache_dir=cache)
    xb = torch.randn(3, 1, 2048)
    compiles, real_compile = [], at._compile_spec
    at._compile_spec = lambda *a, **k: compiles.append(1) or real_compile(*a, **k)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            yb = [rb[0](xb, xb, xb, need_weights=False)[0] for _ in range(3)]
    finally:
        at._compile_spec = real_compile
    want = big(xb, xb, xb, need_weights=False)[0]
    msgs = [str(m.message) for m in w]
    check(len(msgs) == 3 and all("attnc refuses the block" in m and "head_dim <= 1024" in m
                                 for m in msgs) and all(torch.equal(y, want) for y in yb)
          and len(compiles) == 1 and not rb[0].kernels,
          f"a block past the limits: torch's result, with a warning, attnc asked once "
          f"in {len(yb)} calls: {msgs[:1]}")
    try:
        rb[0].fallback = "error"
        rb[0](xb, xb, xb)
        check(False, "a block past the limits, fallback='error': ran")
    except at.Unsupported as e:
        check("head_dim <= 1024" in str(e), "a block past the limits, fallback='error': "
              "Unsupported")

    # -- AttnModule: an nn.Module's weights, positions, max_seq_len -----------
    # (dynamic NTK: frequencies from each sequence's length, its positions
    # included; a plain rotation's scores would not move with a shift)
    rope = {"name": "rp", "d_model": E, "heads": H, "mask": "causal", "weights": "separate",
            "rope": {"scaling": {"type": "dynamic", "factor": 4.0,
                                 "max_position_embeddings": 8}}, "max_seq_len": 32}
    kr = attnc.compile(rope, cache_dir=cache)

    class Lin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
                setattr(self, n, torch.nn.Linear(E, E))

    src = Lin()
    mm = at.AttnModule(kr, weights=src)
    md = at.AttnModule(kr, weights=src.state_dict())
    xr = torch.randn(3, 7, E)
    pos = torch.tensor([0, 5, 1000])
    with torch.no_grad():
        y_mod, y_sd = mm(xr), md(xr)
        y_pos = mm(xr, positions=pos)
    y_np = kr.forward(xr.numpy(), mm.packed.numpy(), positions=pos.numpy())
    check(torch.equal(y_mod, y_sd) and np.array_equal(y_pos.numpy(), y_np) and
          err(y_pos, y_mod) > 1e-3,
          "AttnModule: an nn.Module's state_dict; positions as Kernel.forward's "
          "(bit-identical; the batch past dynamic NTK's length: another y)")
    # y in x's dtype: a model moved to bfloat16 runs on into its next layer.
    seq = torch.nn.Sequential(at.AttnModule(kr, weights=src), torch.nn.Linear(E, E))
    seq = seq.to(torch.bfloat16)
    with torch.no_grad():
        yb = seq(xr.bfloat16())
        y16, y32 = mm(xr.half()), mm(xr.half().float())
    check(yb.dtype == torch.bfloat16 and y16.dtype == torch.float16 and
          torch.equal(y16, y32.half()),
          "AttnModule: y in x's dtype (a bfloat16 model runs into its next Linear; "
          "float16 y is the float32 result rounded)")
    try:
        with torch.no_grad():
            mm(torch.randn(1, 33, E))
        check(False, "AttnModule: seq_len past max_seq_len accepted")
    except attnc.AttncError as e:
        check("seq_len 33 exceeds the kernel" in str(e) and "max_seq_len 32" in str(e),
              f"AttnModule past max_seq_len: {e}")

    print(f"attnc.torch: {check.passed} passed, {check.failures} failed")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
