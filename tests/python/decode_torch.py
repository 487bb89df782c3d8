#!/usr/bin/env python3
"""KV-cache decode through the Python package, against a float64 torch
reference and against attnc's own forward.

Opens kernels compiled with `decode: true` (the .test compiles them):
GPT-2-like (causal, gpt2_conv1d, biases), Llama-like GQA (kv_heads <
heads, separate weights, no bias), a sliding window of 5,
causal+padding and a window of 4 with padding lengths
(sliding_window+padding); and one kernel without decode. For each case (batch 1..3,
prompt lengths per sequence mixed, 0 and 1 included, several steps):

  * prefill: each sequence's prompt goes through forward (batch 1) with
    k_cache=/v_cache= its own slice kc[b:b+1] of the [B, kv_heads, L,
    head_dim] caches (contiguous in that layout); for the padding
    kernels, one batched forward with lengths= instead;
  * decode: `steps` batched decode() calls, sequence b's token at position
    n_b + s (positions mixed across the batch); the chunked-prefill cases
    pass `chunk` tokens per sequence per call (the last call shorter),
    which the reference still takes one token at a time;
  * (a) each decode output against a hand-written float64 torch decode step
    with a preallocated cache: project q, k, v of the new token, write k, v
    at the position, attend over rows [0, pos] (a window: the last W
    rows), softmax, W_O: |y - ref| <= 1e-5 + 1e-5 |ref|; the caches attnc
    wrote (rows [0, n_b + steps)) against the reference's projections;
  * (b) each decode output (and the prefill rows) against one attnc
    forward (batch 1) over that sequence's prompt + decoded tokens:
    |y - y_fwd| <= 1e-5 + 1e-5 |y_fwd| (prefill + k decode steps == one
    forward over n + k tokens).

Forms: 'np' (NumPy), 'threads' (num_threads=2), 'torch' (torch tensors in,
caches torch.zeros tensors written in place), '2d' (decode's x as
[batch, d_model], y [batch, out_dim]); cache_len exactly n_max + steps or
the kernel's max_seq_len (new_cache's default).

Then bad arguments must raise attnc.ArgumentError with the status the
library would return, before the library is called (out and the caches,
filled with 7, stay untouched).

--sabotage MODE checks that the checks can fail: 'ref' makes the
reference skip the oldest key a query sees (check a), 'forward' perturbs
the first decoded token's input in the whole-sequence forward by 1e-3
(check b), 'pos' gives decode sequence 0's position one too high (both),
'accept' makes every bad argument a good one (the raise checks). Each must
FAIL.

Usage: decode_torch.py --gpt2 LIB --gqa LIB --window LIB --padding LIB
--winpad LIB --plain LIB [--sabotage MODE]. One PASS/FAIL line per check, then
'decode vs torch: N passed, M failed' and the max errors; exit 1 on a
failure. 'SKIP: ...' and exit 0 without torch.
"""
import argparse
import math
import os
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

REF_ATOL = REF_RTOL = 1e-5   # (a) float32 kernel vs float64 reference
FWD_ATOL = FWD_RTOL = 1e-5   # (b) decode vs attnc's forward (the gate)
CACHE_ATOL = CACHE_RTOL = 1e-5

# kernel, prompt lengths (one per sequence), steps, form, cache_len
# ('exact': n_max + steps, 'max': the kernel's max_seq_len)
CASES = [
    ("gpt2", [1], 5, "np", "exact"),
    ("gpt2", [0, 1, 7], 6, "threads", "max"),
    ("gpt2", [5, 0], 4, "torch", "exact"),
    ("gqa", [3], 6, "2d", "max"),
    ("gqa", [0, 1, 9], 6, "np", "exact"),
    ("gqa", [2, 11], 5, "threads", "exact"),
    ("window", [1], 8, "np", "exact"),
    ("window", [0, 1, 7], 9, "np", "max"),
    ("window", [12, 4], 6, "2d", "exact"),
    ("window", [6, 0, 3], 7, "torch", "exact"),
    ("padding", [0, 1, 7], 6, "np", "exact"),
    ("padding", [4, 9], 5, "threads", "max"),
    ("winpad", [0, 1, 9], 7, "np", "exact"),
    ("winpad", [12, 3], 6, "threads", "max"),
    # chunked prefill: decode() calls of `chunk` new tokens per sequence
    # (the last chunk shorter), the first from position 0 where a prompt
    # is empty
    ("gpt2", [0, 1, 7], 7, "np", "exact", 3),
    ("gqa", [2, 0], 9, "threads", "max", 4),
    ("gqa", [5], 6, "torch", "exact", 6),
    ("window", [1, 8], 9, "np", "exact", 7),
    ("window", [0, 3], 10, "threads", "max", 2),
    ("padding", [0, 1, 7], 5, "np", "exact", 5),
    ("winpad", [2, 10], 8, "np", "exact", 3),
]


class Ref:
    """The block in float64 torch, from the same float32 weights, with the
    decode step written by hand (preallocated cache, one new token)."""

    def __init__(self, k, weights):
        i = k.info
        self.h, self.hkv, self.dh = i["heads"], i["kv_heads"], i["head_dim"]
        self.scale = i["scale"]
        self.window = i["window"] if i["mask"].startswith("sliding_window") else 0
        self.layout = i["weight_layout"]
        self.w = {n: torch.from_numpy(np.asarray(a, np.float64)) for n, a in weights.items()}

    def qkv(self, x):
        """x [n, d] -> q [n, H, dh], k, v [n, Hkv, dh]."""
        w, h, hkv, dh = self.w, self.h, self.hkv, self.dh
        if self.layout == "gpt2_conv1d":  # y = x W + b, W [d, 3d]
            qkv = x @ w["c_attn.weight"]
            if "c_attn.bias" in w:
                qkv = qkv + w["c_attn.bias"]
            q, k, v = qkv.split([h * dh, hkv * dh, hkv * dh], dim=1)
        else:  # separate: y = x W^T + b
            def lin(name):
                y = x @ w[name + ".weight"].T
                return y + w[name + ".bias"] if name + ".bias" in w else y
            q, k, v = lin("q_proj"), lin("k_proj"), lin("v_proj")
        n = x.shape[0]
        return q.reshape(n, h, dh), k.reshape(n, hkv, dh), v.reshape(n, hkv, dh)

    def out(self, o):
        w = self.w
        if self.layout == "gpt2_conv1d":
            y = o @ w["c_proj.weight"]
            return y + w["c_proj.bias"] if "c_proj.bias" in w else y
        y = o @ w["o_proj.weight"].T
        return y + w["o_proj.bias"] if "o_proj.bias" in w else y

    def new_cache(self, cache_len):
        z = torch.zeros(self.hkv, cache_len, self.dh, dtype=torch.float64)
        return z, z.clone()

    def prefill(self, x, kc, vc):
        """Rows [0, n) of one sequence's caches [Hkv, L, dh]."""
        if x.shape[0]:
            _, k, v = self.qkv(x)
            kc[:, :x.shape[0]] = k.transpose(0, 1)
            vc[:, :x.shape[0]] = v.transpose(0, 1)

    def decode_step(self, x, pos, kc, vc, sabotage=None):
        """One token x [d] at position pos of one sequence's caches."""
        q, k, v = self.qkv(x[None])
        kc[:, pos] = k[0]
        vc[:, pos] = v[0]
        lo = max(0, pos - self.window + 1) if self.window else 0
        if sabotage == "ref" and pos > lo:
            lo += 1  # skip the oldest key the query sees
        rep = self.h // self.hkv
        heads = []
        for hd in range(self.h):
            g = hd // rep  # query head hd reads K/V head hd // (H / Hkv)
            s = (kc[g, lo:pos + 1] @ q[0, hd]) * self.scale
            p = torch.softmax(s, dim=0)
            heads.append(p @ vc[g, lo:pos + 1])
        return self.out(torch.cat(heads)[None])[0]


def rand_weights(k, rng):
    """float32 weights, uniform +-1/sqrt(fan_in) like torch's init, biases
    +-0.5."""
    w = {}
    for name, shape in k.weight_shapes.items():
        if len(shape) == 1:
            a = rng.uniform(-0.5, 0.5, shape)
        else:
            fan_in = shape[0] if k.info["weight_layout"] == "gpt2_conv1d" else shape[1]
            a = rng.uniform(-1, 1, shape) / math.sqrt(fan_in)
        w[name] = a.astype(np.float32)
    return w


def gate(got, ref, atol, rtol):
    """(max |got - ref|, elements over atol + rtol |ref|, NaN counting)."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    err = np.abs(got - ref)
    bad = int((~(err <= atol + rtol * np.abs(ref))).sum())
    return (float(np.nanmax(err)) if err.size and not np.isnan(err).all()
            else (float("nan") if err.size else 0.0)), bad


def run_case(k, packed, ref, case, sabotage, rng, stats):
    kname, lens, steps, form, cl = case[:5]
    chunk = case[5] if len(case) > 5 else 1
    b = len(lens)
    d, odim, hkv, dh = k.d_model, k.out_dim, k.kv_heads, k.head_dim
    cache_len = max(lens) + steps if cl == "exact" else k.max_seq_len
    totals = [n + steps for n in lens]
    xs = [rng.standard_normal((t, d)).astype(np.float32) for t in totals]
    threads = 2 if form == "threads" else 1
    problems = []

    # caches: attnc's (NumPy arrays, or torch tensors written in place)
    if form == "torch":
        kc_t = torch.zeros(b, hkv, cache_len, dh)
        vc_t = torch.zeros(b, hkv, cache_len, dh)
        kc, vc = kc_t.numpy(), vc_t.numpy()  # views, to read the results
    else:
        kc, vc = k.new_cache(b) if cl == "max" else k.new_cache(b, cache_len)
        kc_t, vc_t = kc, vc
        if kc.shape != (b, hkv, cache_len, dh):
            return [f"new_cache gave {kc.shape}"], ""

    # prefill
    y_pre = [None] * b
    if kname in ("padding", "winpad") and max(lens) > 0:
        n_max = max(lens)
        xp = np.zeros((b, n_max, d), np.float32)
        for s, n in enumerate(lens):
            xp[s, :n] = xs[s][:n]
        yp = k.forward(xp, packed, num_threads=threads, lengths=lens,
                       k_cache=kc_t, v_cache=vc_t)
        y_pre = [yp[s, :n] for s, n in enumerate(lens)]
    else:
        for s, n in enumerate(lens):
            if n == 0:
                continue
            xin = xs[s][None, :n]
            if form == "torch":
                y_pre[s] = k.forward(torch.from_numpy(xin), packed, k_cache=kc_t[s:s + 1],
                                     v_cache=vc_t[s:s + 1])[0]
            elif form == "2d":  # 2-D x with [kv_heads, L, dh] caches
                y_pre[s] = k.forward(xin[0], packed, k_cache=kc[s], v_cache=vc[s])
            else:
                y_pre[s] = k.forward(xin, packed, num_threads=threads,
                                     k_cache=kc[s:s + 1], v_cache=vc[s:s + 1])[0]

    # the reference's caches, one sequence at a time
    rk, rv = zip(*[ref.new_cache(cache_len) for _ in range(b)])
    for s, n in enumerate(lens):
        ref.prefill(torch.from_numpy(xs[s][:n]).double(), rk[s], rv[s])

    # batched decode steps
    y_dec = np.zeros((b, steps, odim))
    y_ref = np.zeros((b, steps, odim))
    for t in range(0, steps, chunk):
        c = min(chunk, steps - t)  # new tokens per sequence in this call
        pos = np.array([n + t for n in lens])
        tok = np.stack([xs[s][lens[s] + t:lens[s] + t + c] for s in range(b)])  # [b, c, d]
        apos = pos.copy()
        if sabotage == "pos":
            apos[0] += 1
        if form == "2d":
            y = k.decode(tok[:, 0], packed, apos, kc, vc)
            if y.shape != (b, odim):
                return [f"2-D decode gave y {y.shape}"], ""
        elif form == "torch":
            y = k.decode(torch.from_numpy(tok), packed, torch.from_numpy(apos), kc_t, vc_t)
        else:
            y = k.decode(tok, packed, apos.astype(np.int32), kc, vc, num_threads=threads)
        if form != "2d" and y.shape != (b, c, odim):
            return [f"decode gave y {y.shape}, expected {(b, c, odim)}"], ""
        y_dec[:, t:t + c] = y.reshape(b, c, odim)
        # the reference: the chunk's tokens one at a time (token i of the
        # chunk sees the rows of the tokens before it)
        for i in range(c):
            for s in range(b):
                y_ref[s, t + i] = ref.decode_step(torch.from_numpy(tok[s, i]).double(),
                                                  int(pos[s]) + i, rk[s], rv[s],
                                                  sabotage).numpy()

    if not np.isfinite(y_dec).all():
        problems.append("non-finite decode output")
    # (a) vs the float64 reference decode
    err_a, bad_a = gate(y_dec, y_ref, REF_ATOL, REF_RTOL)
    if bad_a:
        problems.append(f"{bad_a} values of the decode outputs over tolerance vs the torch "
                        f"reference (max err {err_a:.3e})")
    # the caches attnc wrote, vs the reference's K and V
    err_c = 0.0
    for s, tot in enumerate(totals):
        for name, got, want in (("k_cache", kc, rk), ("v_cache", vc, rv)):
            e, bad = gate(got[s, :, :tot], want[s][:, :tot].numpy(), CACHE_ATOL, CACHE_RTOL)
            err_c = max(err_c, e)
            if bad:
                problems.append(f"{name}[{s}] rows [0, {tot}): {bad} values off the "
                                f"reference's projections (max err {e:.3e})")
    # (b) vs one attnc forward over the whole sequence
    err_b = 0.0
    for s, tot in enumerate(totals):
        xf = xs[s].copy()
        if sabotage == "forward":
            xf[lens[s]] += 1e-3
        yf = k.forward(xf[None], packed)[0]
        e, bad = gate(y_dec[s], yf[lens[s]:], FWD_ATOL, FWD_RTOL)
        err_b = max(err_b, e)
        if bad:
            problems.append(f"sequence {s}: {bad} values of its decode outputs over "
                            f"1e-5 + 1e-5|y| vs forward over {tot} tokens (max err {e:.3e})")
        if lens[s]:
            e, bad = gate(y_pre[s], yf[:lens[s]], FWD_ATOL, FWD_RTOL)
            err_b = max(err_b, e)
            if bad:
                problems.append(f"sequence {s}: {bad} values of its prefill outputs (forward "
                                f"with the cache) off forward over {tot} tokens "
                                f"(max err {e:.3e})")
    stats["ref"] = max(stats["ref"], err_a)
    stats["fwd"] = max(stats["fwd"], err_b)
    stats["cache"] = max(stats["cache"], err_c)
    stats["outputs"] += b * steps
    return problems, (f"{b * steps} decode outputs, cache_len {cache_len}: max err vs torch "
                      f"{err_a:.2e}, vs forward {err_b:.2e}, caches {err_c:.2e}")


def bad_calls(k, kg, kp, packs, ok):
    """(description, expected status, call): calls the package must refuse;
    with ok (--sabotage accept), the good value instead. Each call gets
    (out, k_cache, v_cache) filled with 7 (batch 2, cache_len 8) to pass
    where the call writes them."""
    A, S, B, N = 7, 2, 4, 1  # ATTNC_ERR_ARGS, _BAD_SHAPE, _BUFFER_SIZE, _NULL_ARG
    d, pk = k.d_model, packs[k.name]
    tok = np.zeros((2, 1, d), np.float32)
    x5 = np.zeros((2, 5, d), np.float32)
    pos = np.array([3, 4], np.int32)

    def dec(**kw):
        def call(out, kc, vc):
            args = dict(x=tok, packed=pk, positions=pos, k_cache=kc, v_cache=vc, out=out)
            args.update(kw)
            return k.decode(**args)
        return call

    def fwd(kernel=k, x=x5, **kw):
        def call(out, kc, vc):
            args = dict(k_cache=kc, v_cache=vc)
            args.update(kw)
            return kernel.forward(x, packs[kernel.name], **args)
        return call

    def zeros(shape, dtype=np.float32):
        return np.zeros(shape, dtype)

    hkv, dh = k.kv_heads, k.head_dim
    return [
        ("a position = cache_len (8)", A, dec(positions=[3, 7 if ok else 8])),
        ("a negative position", A, dec(positions=[0 if ok else -1, 2])),
        ("positions count 1 for batch 2", A, dec(positions=[3, 3] if ok else [3])),
        ("float positions", A, dec(positions=[3, 4] if ok else [3.0, 4.0])),
        ("positions as a [2, 1] array", A,
         dec(positions=np.array([3, 4]) if ok else np.array([[3], [4]]))),
        ("decode on a kernel without the decode feature", A,
         (lambda out, kc, vc: (k if ok else kp).decode(tok, packs[k.name if ok else kp.name],
                                                       pos, kc, vc))),
        ("k_cache/v_cache given to forward of a kernel without decode", A,
         fwd(kernel=kp) if not ok else fwd()),
        ("new_cache on a kernel without decode", A,
         lambda out, kc, vc: (k if ok else kp).new_cache(1, 4)),
        ("k_cache without v_cache (forward)", N,
         (lambda out, kc, vc: k.forward(x5, pk, k_cache=kc, v_cache=vc if ok else None))),
        ("decode without v_cache", N, dec(v_cache=None) if not ok else dec()),
        ("a cache shorter than seq_len (8 rows, 9 tokens)", S,
         fwd(x=np.zeros((2, 8 if ok else 9, d), np.float32))),
        ("cache_len 25 > max_seq_len 24", S,
         lambda out, kc, vc: k.new_cache(1, 24 if ok else 25)),
        ("caches of cache_len 25 > max_seq_len 24 (decode)", S,
         (lambda out, kc, vc: k.decode(tok, pk, pos, *(
             (kc, vc) if ok else (zeros((2, hkv, 25, dh)), zeros((2, hkv, 25, dh))))))),
        ("caches with heads, not kv_heads, rows (GQA kernel)", B,
         (lambda out, kc, vc: kg.decode(zeros((2, 1, kg.d_model)), packs[kg.name], pos, *(
             kg.new_cache(2, 8) if ok else (zeros((2, kg.heads, 8, kg.head_dim)),
                                            zeros((2, kg.heads, 8, kg.head_dim))))))),
        ("float64 caches", B,
         (lambda out, kc, vc: k.decode(tok, pk, pos, *(
             (kc, vc) if ok else (kc.astype(np.float64), vc.astype(np.float64)))))),
        ("non-contiguous caches", B,
         (lambda out, kc, vc: k.decode(tok, pk, pos, *(
             (kc, vc) if ok else (zeros((2, hkv, dh, 8)).transpose(0, 1, 3, 2),
                                  zeros((2, hkv, dh, 8)).transpose(0, 1, 3, 2)))))),
        ("read-only caches", B,
         (lambda out, kc, vc: k.decode(tok, pk, pos, kc, vc if ok else
                                       np.broadcast_to(vc, vc.shape)))),
        ("one array as both caches", A,  # as C: ERR_ARGS (abi.md)
         (lambda out, kc, vc: k.decode(tok, pk, pos, kc, vc if ok else kc))),
        ("caches of batch 3 for batch 2", B,
         (lambda out, kc, vc: k.decode(tok, pk, pos, *(
             (kc, vc) if ok else (zeros((3, hkv, 8, dh)), zeros((3, hkv, 8, dh))))))),
        ("decode x with no token per sequence", S,
         dec(x=tok if ok else np.zeros((2, 0, d), np.float32))),
        ("decode x with the wrong d_model", S,
         dec(x=tok if ok else np.zeros((2, 1, d + 1), np.float32))),
        ("decode out of the wrong shape", B,
         (lambda out, kc, vc: k.decode(tok, pk, pos, kc, vc,
                                       out=out if ok else out[:, 0]))),
        ("decode num_threads -1", A, dec(num_threads=1 if ok else -1)),  # as C: ERR_ARGS
    ]


def main():
    ap = argparse.ArgumentParser()
    for key in ("gpt2", "gqa", "window", "padding", "winpad", "plain"):
        ap.add_argument("--" + key, required=True, metavar="LIB")
    ap.add_argument("--sabotage", choices=["ref", "forward", "pos", "accept"])
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    passes = failures = 0

    def report(ok, msg):
        nonlocal passes, failures
        passes += ok
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'}: {msg}")
        if not ok:
            print(f"FAIL: {msg}", file=sys.stderr)

    # metadata: what each kernel must report
    expect = {"gpt2": ({"decode"}, "features [decode]"),
              "gqa": ({"decode"}, "features [decode]"),
              "window": ({"decode"}, "features [decode]"),
              "padding": ({"lengths", "decode"}, "features [lengths, decode]"),
              "winpad": ({"lengths", "decode"},
                         "mask sliding_window+padding 4 (bottom_right), features [lengths, decode]"),
              "plain": (set(), "features [none]")}
    kernels, packs, refs = {}, {}, {}
    for key, (feats, piece) in expect.items():
        try:
            k = attnc.Kernel(getattr(args, key))
        except Exception as e:  # noqa: BLE001
            report(False, f"{key}: {type(e).__name__}: {e}")
            continue
        r = repr(k)
        problems = []
        if k.features != feats or k.has_decode != ("decode" in feats):
            problems.append(f"features {sorted(k.features)}, has_decode {k.has_decode}")
        if piece not in r:
            problems.append(f"repr lacks '{piece}': {r}")
        if key == "gqa" and not k.kv_heads < k.heads:
            problems.append(f"kv_heads {k.kv_heads} not < heads {k.heads}")
        if key == "window" and k.info["mask"] != "sliding_window":
            problems.append(f"mask {k.info['mask']}")
        report(not problems, f"{key}: metadata ({r})" if not problems
               else f"{key}: metadata: {'; '.join(problems)}")
        w = rand_weights(k, rng)
        kernels[key], packs[k.name] = k, k.pack(w)
        refs[key] = Ref(k, w)

    stats = {"ref": 0.0, "fwd": 0.0, "cache": 0.0, "outputs": 0}
    for case in CASES:
        kname, lens, steps, form, cl = case[:5]
        label = f"{kname} lengths={lens} steps={steps} [{form}, cache {cl}]"
        if len(case) > 5:
            label += f" chunks of {case[5]}"
        if kname not in kernels:
            continue
        k = kernels[kname]
        try:
            problems, info = run_case(k, packs[k.name], refs[kname], case, args.sabotage,
                                      rng, stats)
        except Exception as e:  # noqa: BLE001
            problems, info = [f"{type(e).__name__}: {e}"], ""
        report(not problems, f"{label}: {'; '.join(problems[:4]) if problems else info}")

    if len(kernels) == len(expect):
        k, kg, kp = kernels["gpt2"], kernels["gqa"], kernels["plain"]
        for desc, status, call in bad_calls(k, kg, kp, packs, args.sabotage == "accept"):
            out = np.full((2, 1, k.out_dim), 7.0, np.float32)
            kc = np.full((2, k.kv_heads, 8, k.head_dim), 7.0, np.float32)
            vc = kc.copy()
            try:
                call(out, kc, vc)
                report(False, f"raises: {desc}: no exception")
            except attnc.ArgumentError as e:
                problems = []
                if not isinstance(e, (attnc.AttncError, ValueError)):
                    problems.append("not an AttncError and a ValueError")
                if e.status != status:
                    problems.append(f"status {e.status}, expected {status}")
                if np.any(out != 7.0) or np.any(kc != 7.0) or np.any(vc != 7.0):
                    problems.append("the library was called (out or a cache was written)")
                report(not problems, f"raises: {desc}: {e}" if not problems
                       else f"raises: {desc}: {'; '.join(problems)}")
            except Exception as e:  # noqa: BLE001
                report(False, f"raises: {desc}: {type(e).__name__} instead of "
                       f"attnc.ArgumentError: {e}")

    print(f"decode vs torch: {passes} passed, {failures} failed")
    print(f"max error over {stats['outputs']} decode outputs: vs the float64 torch "
          f"reference {stats['ref']:.3e} (gate 1e-5 + 1e-5|ref|), vs attnc forward over "
          f"the whole sequence {stats['fwd']:.3e} (gate 1e-5 + 1e-5|y|), caches "
          f"{stats['cache']:.3e}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
