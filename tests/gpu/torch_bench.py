"""The attention block of an attnc spec in PyTorch (fp32), for the GPU check.

Reads a spec YAML (d_model, heads, kv_heads, head_dim, mask, window, bias,
out_proj, scale, weights) and builds the same block twice, with the same
weights:

  mha   torch.nn.MultiheadAttention (batch_first) with in_proj / out_proj
        set from the spec's weights (GQA: the K/V heads repeated, so query
        head h reads K/V head h // (heads / kv_heads) as attnc does; a scale
        other than 1/sqrt(head_dim) folded into the Q rows);
  sdpa  a hand-written block: one QKV linear, heads split, K/V heads
        repeated for GQA, F.scaled_dot_product_attention (is_causal for a
        causal mask, a boolean window mask for sliding_window), heads
        merged, output linear.

Modes (see --help):
  timing (default)   time both blocks with torch.cuda.Event per call (on the
                     CPU: perf_counter), --iters calls after --warmup ones;
                     prints 'RESULT T=.. B=.. block=.. min_ms=.. median_ms=..'
                     lines (tests/gpu/run.sh parses them) and a readable line
  --check-only       run each block once and compare it with a float64
                     reference written out per head from the spec (no
                     timing); exit 1 if either is off
  --compare Y.npy    compare attnc's output (attnc-run --x X.npy --out Y.npy
                     with the same --weights) and both torch blocks with the
                     float64 reference on X.npy (--x); exit 1 if any is off
  --write-weights F  write random weights for the spec to F (.safetensors,
                     the spec's storage names and shapes, docs/weights.md),
                     scaled as attnc-run's random weights; exit
  --write-x F        write a random input x [B, T, d_model] float32 .npy; exit

Invocation: python3 tests/gpu/torch_bench.py --spec SPEC.yaml [...]
(fp32 stays fp32: TF32 is switched off for matmul and cuDNN.)
"""
import argparse
import json
import math
import os
import struct
import sys
import time

# ----------------------------------------------------------------- the spec


def _scalar(v):
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v


def _load_yaml(path):
    with open(path) as f:
        text = f.read()
    try:
        import yaml  # PyYAML, when there
        d = yaml.safe_load(text)
        if isinstance(d, dict):
            return d
    except ImportError:
        pass
    # attnc specs are flat 'key: value' maps: a small reader without PyYAML.
    d = {}
    for line in text.splitlines():
        line = line.split(" #")[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if ":" not in line:
            continue
        k, v = line.split(":", 1)
        v = v.strip()
        if v.startswith("[") and v.endswith("]"):
            d[k.strip()] = [_scalar(s) for s in v[1:-1].split(",") if s.strip()]
        else:
            d[k.strip()] = _scalar(v)
    return d


class Spec:
    def __init__(self, path):
        d = _load_yaml(path)
        self.path = path
        self.name = str(d.get("name", os.path.splitext(os.path.basename(path))[0]))
        self.d = int(d["d_model"])
        self.h = int(d["heads"])
        self.hkv = int(d.get("kv_heads", self.h))
        self.dh = int(d.get("head_dim", self.d // self.h))
        self.mask = str(d.get("mask", "none"))
        self.window = int(d["window"]) if d.get("window") is not None else None
        self.bias = bool(d.get("bias", True))
        self.out_proj = bool(d.get("out_proj", True))
        sc = d.get("scale", "auto")
        self.scale = 1.0 / math.sqrt(self.dh) if str(sc) == "auto" else float(sc)
        self.layout = str(d.get("weights", "gpt2_conv1d"))
        self.max_seq_len = int(d["max_seq_len"]) if d.get("max_seq_len") else None
        if bool(d.get("cross_attention", False)):
            sys.exit(f"torch_bench: {path}: cross_attention is not supported here")
        if self.mask not in ("none", "causal", "sliding_window"):
            sys.exit(f"torch_bench: {path}: mask '{self.mask}' is not supported here "
                     "(none, causal, sliding_window)")
        if self.mask == "sliding_window" and not self.window:
            sys.exit(f"torch_bench: {path}: sliding_window without window")
        if self.h % self.hkv:
            sys.exit(f"torch_bench: {path}: kv_heads {self.hkv} does not divide heads {self.h}")
        self.out_dim = self.d if self.out_proj else self.h * self.dh

    def describe(self):
        m = self.mask + (f" (window {self.window})" if self.mask == "sliding_window" else "")
        return (f"{self.name}: d_model {self.d}, heads {self.h}, kv_heads {self.hkv}, "
                f"head_dim {self.dh}, mask {m}, bias {str(self.bias).lower()}, "
                f"out_proj {str(self.out_proj).lower()}, scale {self.scale:g}, "
                f"weights {self.layout}")

    def storage_shapes(self):
        """(name, shape) of the storage tensors, as attnc-run --info lists them."""
        d, h, hkv, dh = self.d, self.h, self.hkv, self.dh
        out = []
        if self.layout == "gpt2_conv1d":
            out.append(("c_attn.weight", (d, 3 * h * dh)))
            if self.bias:
                out.append(("c_attn.bias", (3 * h * dh,)))
            if self.out_proj:
                out.append(("c_proj.weight", (h * dh, d)))
                if self.bias:
                    out.append(("c_proj.bias", (d,)))
        elif self.layout == "torch_in_proj":
            out.append(("in_proj_weight", (3 * h * dh, d)))
            if self.bias:
                out.append(("in_proj_bias", (3 * h * dh,)))
            if self.out_proj:
                out.append(("out_proj.weight", (d, h * dh)))
                if self.bias:
                    out.append(("out_proj.bias", (d,)))
        elif self.layout == "separate":
            for n, rows in (("q_proj", h * dh), ("k_proj", hkv * dh), ("v_proj", hkv * dh)):
                out.append((n + ".weight", (rows, d)))
                if self.bias:
                    out.append((n + ".bias", (rows,)))
            if self.out_proj:
                out.append(("o_proj.weight", (d, h * dh)))
                if self.bias:
                    out.append(("o_proj.bias", (d,)))
        else:
            sys.exit(f"torch_bench: {self.path}: unknown weights layout '{self.layout}'")
        return out


# ------------------------------------------------------------ weight files


def random_weights(spec, seed):
    """Random storage tensors, scaled like attnc-run's (N(0,1) times
    1/sqrt(min(rows, cols)) for a matrix, 1/4 for a vector)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape in spec.storage_shapes():
        s = 1.0 / math.sqrt(min(shape) if len(shape) == 2 else 16)
        w[name] = (rng.standard_normal(shape) * s).astype(np.float32)
    return w


def write_safetensors(path, tensors):
    import numpy as np
    header, off, blobs = {}, 0, []
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    header["__metadata__"] = {"format": "pt", "writer": "tests/gpu/torch_bench.py"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    import numpy as np
    dt = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        if e["dtype"] not in dt:
            if e["dtype"] == "BF16":
                a, b = e["data_offsets"]
                u = np.frombuffer(data[a:b], dtype="<u2").astype(np.uint32) << 16
                out[name] = u.view(np.float32).reshape(e["shape"])
            continue
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=dt[e["dtype"]]).reshape(
            e["shape"]).astype(np.float32)
    return out


def load_weights(spec, path, prefix):
    import numpy as np
    if path.endswith(".npz"):
        z = np.load(path)
        raw = {k: z[k].astype(np.float32) for k in z.files}
    elif os.path.isdir(path):
        raw = {f[:-4]: np.load(os.path.join(path, f)).astype(np.float32)
               for f in os.listdir(path) if f.endswith(".npy")}
    else:
        raw = read_safetensors(path)
    if prefix:
        raw = {k[len(prefix):]: v for k, v in raw.items() if k.startswith(prefix)}
    w = {}
    for name, shape in spec.storage_shapes():
        if name not in raw:
            sys.exit(f"torch_bench: {path}: no tensor '{prefix or ''}{name}' "
                     f"(has: {', '.join(sorted(raw)) or 'none'})")
        if tuple(raw[name].shape) != tuple(shape):
            sys.exit(f"torch_bench: {path}: tensor '{name}': expected shape "
                     f"{tuple(shape)}, found {tuple(raw[name].shape)}")
        w[name] = raw[name]
    return w


def canonical(spec, w):
    """(Wq, Wk, Wv, Wo, bq, bk, bv, bo) as float64 numpy arrays in torch's
    (out, in) orientation; Wo/bo None without out_proj, biases None without
    bias."""
    qn, kn = spec.h * spec.dh, spec.hkv * spec.dh
    g = lambda n: w[n].astype("float64") if n in w else None  # noqa: E731
    if spec.layout == "gpt2_conv1d":  # y = x W + b, W (in, out)
        wqkv = g("c_attn.weight").T
        bqkv = g("c_attn.bias")
        wo = g("c_proj.weight").T if spec.out_proj else None
        bo = g("c_proj.bias")
    elif spec.layout == "torch_in_proj":
        wqkv, bqkv = g("in_proj_weight"), g("in_proj_bias")
        wo, bo = g("out_proj.weight"), g("out_proj.bias")
    else:
        q, k, v = g("q_proj.weight"), g("k_proj.weight"), g("v_proj.weight")
        wq, wk, wv = q, k, v
        bq, bk, bv = g("q_proj.bias"), g("k_proj.bias"), g("v_proj.bias")
        return wq, wk, wv, g("o_proj.weight"), bq, bk, bv, g("o_proj.bias")
    wq, wk, wv = wqkv[:qn], wqkv[qn:qn + kn], wqkv[qn + kn:]
    if bqkv is not None:
        bq, bk, bv = bqkv[:qn], bqkv[qn:qn + kn], bqkv[qn + kn:]
    else:
        bq = bk = bv = None
    return wq, wk, wv, wo, bq, bk, bv, bo


# ------------------------------------------------------------------ .npy I/O


def read_npy(path):
    import numpy as np
    return np.load(path).astype(np.float32)


def write_npy(path, a):
    import numpy as np
    np.save(path, np.ascontiguousarray(a, dtype=np.float32))


# ----------------------------------------------------------------- the blocks


class Blocks:
    def __init__(self, spec, weights, device, dtype):
        import torch
        import torch.nn.functional as F
        self.torch, self.F = torch, F
        self.spec, self.device, self.dtype = spec, device, dtype
        wq, wk, wv, wo, bq, bk, bv, bo = canonical(spec, weights)
        t = lambda a: None if a is None else torch.tensor(a, dtype=dtype, device=device)  # noqa: E731
        self.has_sdpa = hasattr(F, "scaled_dot_product_attention")
        import inspect
        self.sdpa_scale_kw = False
        if self.has_sdpa:
            try:
                self.sdpa_scale_kw = "scale" in inspect.signature(
                    F.scaled_dot_product_attention).parameters
            except (TypeError, ValueError):  # a builtin without a signature
                self.sdpa_scale_kw = tuple(int(p) for p in
                                           torch.__version__.split(".")[:2]) >= (2, 1)
        # The hand-written block: one fused QKV linear. Q rows pre-scaled only
        # for an SDPA without scale= (torch 2.0: it applies 1/sqrt(head_dim));
        # the explicit softmax (torch < 2.0) applies spec.scale itself.
        fold = (spec.scale * math.sqrt(spec.dh)
                if self.has_sdpa and not self.sdpa_scale_kw else 1.0)
        import numpy as np
        self.wqkv = t(np.concatenate([wq * fold, wk, wv]))
        self.bqkv = None if bq is None else t(np.concatenate([bq * fold, bk, bv]))
        self.wo, self.bo = t(wo), t(bo)
        self.group = spec.h // spec.hkv
        # nn.MultiheadAttention: needs heads * head_dim == d_model; GQA by
        # repeating each K/V head's rows; another scale folded into Q.
        self.mha = None
        self.mha_why = ""
        if spec.h * spec.dh != spec.d:
            self.mha_why = "heads * head_dim != d_model"
        else:
            rep = lambda a: a.reshape(spec.hkv, spec.dh, *a.shape[1:]).repeat(  # noqa: E731
                self.group, axis=0).reshape(spec.h * spec.dh, *a.shape[1:])
            s = spec.scale * math.sqrt(spec.dh)
            m = torch.nn.MultiheadAttention(spec.d, spec.h, bias=spec.bias,
                                            batch_first=True)
            m = m.to(device=device, dtype=dtype).eval()
            with torch.no_grad():
                m.in_proj_weight.copy_(t(np.concatenate([wq * s, rep(wk), rep(wv)])))
                if spec.bias:
                    m.in_proj_bias.copy_(t(np.concatenate([bq * s, rep(bk), rep(bv)])))
                if spec.out_proj:
                    m.out_proj.weight.copy_(t(wo))
                    if spec.bias:
                        m.out_proj.bias.copy_(t(bo))
                else:  # the concatenated heads: identity, zero bias
                    m.out_proj.weight.copy_(torch.eye(spec.d, dtype=dtype, device=device))
                    if m.out_proj.bias is not None:
                        m.out_proj.bias.zero_()
            self.mha = m
            try:
                self.mha_causal_kw = "is_causal" in inspect.signature(m.forward).parameters
            except (TypeError, ValueError):
                self.mha_causal_kw = False
        self._masks = {}

    def allowed(self, T):
        """Boolean [T, T], True where query i sees key j (None: all)."""
        torch, spec = self.torch, self.spec
        if spec.mask == "none":
            return None
        if T not in self._masks:
            i = torch.arange(T, device=self.device).unsqueeze(1)
            j = torch.arange(T, device=self.device).unsqueeze(0)
            a = j <= i
            if spec.mask == "sliding_window":
                a = a & (j > i - spec.window)
            self._masks[T] = a
        return self._masks[T]

    def run_mha(self, x):
        T = x.shape[1]
        a = self.allowed(T)
        kw = {"need_weights": False}
        if a is not None:
            kw["attn_mask"] = ~a  # MHA's boolean mask: True = not allowed
            if self.spec.mask == "causal" and self.mha_causal_kw:
                kw["is_causal"] = True
        return self.mha(x, x, x, **kw)[0]

    def _heads(self, x):
        spec = self.spec
        B, T, _ = x.shape
        qkv = self.F.linear(x, self.wqkv, self.bqkv)
        q, k, v = qkv.split([spec.h * spec.dh, spec.hkv * spec.dh, spec.hkv * spec.dh], -1)
        q = q.view(B, T, spec.h, spec.dh).transpose(1, 2)
        k = k.view(B, T, spec.hkv, spec.dh).transpose(1, 2)
        v = v.view(B, T, spec.hkv, spec.dh).transpose(1, 2)
        if self.group > 1:
            k = k.repeat_interleave(self.group, dim=1)
            v = v.repeat_interleave(self.group, dim=1)
        return q, k, v

    def _merge(self, o):
        B, H, T, dh = o.shape
        o = o.transpose(1, 2).reshape(B, T, H * dh)
        return self.F.linear(o, self.wo, self.bo) if self.spec.out_proj else o

    def run_sdpa(self, x):
        q, k, v = self._heads(x)
        T = x.shape[1]
        if not self.has_sdpa:  # torch < 2.0: the same math by hand
            return self._merge(self._math(q, k, v, T))
        kw = {}
        if self.sdpa_scale_kw:
            kw["scale"] = self.spec.scale
        if self.spec.mask == "causal":
            kw["is_causal"] = True
        elif self.spec.mask == "sliding_window":
            kw["attn_mask"] = self.allowed(T)  # SDPA's boolean mask: True = allowed
        return self._merge(self.F.scaled_dot_product_attention(q, k, v, **kw))

    def _math(self, q, k, v, T):
        """softmax(q k^T * scale + mask) v (torch < 2.0: no SDPA; Q is not
        pre-scaled then, see __init__)."""
        att = (q @ k.transpose(-1, -2)) * self.spec.scale
        a = self.allowed(T)
        if a is not None:
            att = att.masked_fill(~a, float("-inf"))
        return att.softmax(-1) @ v


def reference(spec, weights, x):
    """The block in float64, written out from the spec alone (shares no code
    with Blocks but the storage-to-(out, in) conversion): per query head h,
    softmax(Q_h K_g^T * scale + M) V_g with g = h // (heads / kv_heads), M
    -inf where the mask hides key j from query i, heads concatenated, W_O.
    x: a float64 tensor [B, T, d_model]; returns a numpy array."""
    import torch
    wq, wk, wv, wo, bq, bk, bv, bo = canonical(spec, weights)
    dev = x.device
    t = lambda a: torch.tensor(a, dtype=torch.float64, device=dev)  # noqa: E731

    def lin(w, b):
        y = torch.einsum("bti,oi->bto", x, t(w))
        return y if b is None else y + t(b)

    B, T, _ = x.shape
    q = lin(wq, bq).reshape(B, T, spec.h, spec.dh)
    k = lin(wk, bk).reshape(B, T, spec.hkv, spec.dh)
    v = lin(wv, bv).reshape(B, T, spec.hkv, spec.dh)
    i = torch.arange(T, device=dev).reshape(T, 1)
    j = torch.arange(T, device=dev).reshape(1, T)
    hidden = torch.zeros(T, T, dtype=torch.bool, device=dev)
    if spec.mask in ("causal", "sliding_window"):
        hidden |= j > i
    if spec.mask == "sliding_window":
        hidden |= j <= i - spec.window
    group = spec.h // spec.hkv
    heads = []
    for h in range(spec.h):
        g = h // group
        s = torch.einsum("bid,bjd->bij", q[:, :, h], k[:, :, g]) * spec.scale
        s = s.masked_fill(hidden, float("-inf"))
        p = torch.exp(s - s.max(dim=-1, keepdim=True).values)
        p = p / p.sum(dim=-1, keepdim=True)
        heads.append(torch.einsum("bij,bjd->bid", p, v[:, :, g]))
    o = torch.cat(heads, dim=-1)
    if spec.out_proj:
        o = torch.einsum("bti,oi->bto", o, t(wo))
        if bo is not None:
            o = o + t(bo)
    return o.cpu().numpy()


# ------------------------------------------------------------------ the modes


def gate(name, y, ref, atol, rtol):
    """Print max errors of y against ref; True when every element is within
    atol + rtol*|ref|."""
    import numpy as np
    y = np.asarray(y, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if y.shape != ref.shape:
        print(f"  {name:<6} shape {y.shape} != reference {ref.shape}: FAIL")
        return False
    err = np.abs(y - ref)
    finite = bool(np.isfinite(y).all())
    allow = atol + rtol * np.abs(ref)
    bad = int((~(err <= allow)).sum())
    ok = finite and bad == 0
    print(f"  {name:<6} max_abs_err {err.max():.3e}  mean_abs_err {err.mean():.3e}  "
          f"max|ref| {np.abs(ref).max():.3e}  outside atol {atol:g} + rtol {rtol:g}*|ref|: "
          f"{bad} of {err.size}{'' if finite else '  NON-FINITE'}: {'PASS' if ok else 'FAIL'}")
    return ok


def time_fn(torch, fn, x, iters, warmup, cuda):
    with torch.inference_mode():
        for _ in range(warmup):
            fn(x)
        ms = []
        if cuda:
            torch.cuda.synchronize()
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(iters)]
            for a, b in ev:
                a.record()
                fn(x)
                b.record()
            torch.cuda.synchronize()
            ms = [a.elapsed_time(b) for a, b in ev]
        else:
            for _ in range(iters):
                t0 = time.perf_counter()
                fn(x)
                ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    return ms[0], ms[len(ms) // 2]


def no_tf32(torch):
    """fp32 stays fp32: TF32 off for matmul and cuDNN. torch >= 2.9 has the
    fp32_precision API (the allow_tf32 flags are deprecated there and must
    not be mixed with it); older torch the allow_tf32 flags. Returns what
    was set, for the header line."""
    b = torch.backends

    def has(obj, name):  # torch 1.x's matmul object raises AssertionError
        try:
            getattr(obj, name)
            return True
        except (AttributeError, AssertionError):
            return False

    if has(b.cuda.matmul, "fp32_precision"):
        # Only the new API (reading a legacy flag after it raises), on every
        # level: the top-level setting does not reach cudnn.conv/rnn in some
        # versions.
        for obj in (b, b.cuda.matmul, b.cudnn, getattr(b.cudnn, "conv", None),
                    getattr(b.cudnn, "rnn", None)):
            if obj is not None and has(obj, "fp32_precision"):
                obj.fp32_precision = "ieee"
        return (f"TF32 off (matmul.fp32_precision={b.cuda.matmul.fp32_precision}, "
                f"cudnn.fp32_precision={getattr(b.cudnn, 'fp32_precision', '?')})")
    b.cuda.matmul.allow_tf32 = False
    b.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    return (f"TF32 off (matmul.allow_tf32={b.cuda.matmul.allow_tf32}, "
            f"cudnn.allow_tf32={b.cudnn.allow_tf32})")


def main():
    ap = argparse.ArgumentParser(
        description="The attention block of an attnc spec in PyTorch fp32 "
                    "(nn.MultiheadAttention and an SDPA block): timing, checks.")
    ap.add_argument("--spec", required=True, help="the attnc spec YAML")
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    ap.add_argument("--cpu", action="store_true", help="same as --device cpu")
    ap.add_argument("--seq-len", default="1024",
                    help="T, or a comma list (1024,4096) for timing / --check-only")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--iters", type=int, default=50, help="timed calls (default 50)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed calls first (default 10)")
    ap.add_argument("--weights", help=".safetensors, .npz or a directory of NAME.npy "
                    "(the spec's storage names, as attnc-run --weights); "
                    "default: random from --seed")
    ap.add_argument("--weights-prefix", default="", help="as attnc-run's")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--blocks", default="mha,sdpa", help="which blocks to time (mha,sdpa)")
    ap.add_argument("--check-only", action="store_true",
                    help="no timing: each block once against a float64 reference")
    ap.add_argument("--compare", metavar="Y.npy",
                    help="attnc's y on --x X.npy: it and both blocks against float64")
    ap.add_argument("--x", metavar="X.npy", help="input x [B, T, d_model] (--compare)")
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--write-weights", metavar="FILE.safetensors")
    ap.add_argument("--write-x", metavar="FILE.npy")
    args = ap.parse_args()
    if args.cpu:
        args.device = "cpu"
    spec = Spec(args.spec)
    try:
        seqs = [int(s) for s in str(args.seq_len).split(",") if s]
    except ValueError:
        sys.exit(f"torch_bench: --seq-len: expected T or T1,T2,..., found '{args.seq_len}'")
    if not seqs or min(seqs) < 1 or args.batch < 1 or args.iters < 1 or args.warmup < 0:
        sys.exit("torch_bench: --seq-len, --batch, --iters must be >= 1")

    if args.write_weights:
        write_safetensors(args.write_weights, random_weights(spec, args.seed))
        print(f"torch_bench: wrote {args.write_weights} ({spec.name}, seed {args.seed}: "
              + ", ".join(f"{n} {list(s)}" for n, s in spec.storage_shapes()) + ")")
        return 0
    if args.write_x:
        import numpy as np
        rng = np.random.default_rng(args.seed + 1000)
        write_npy(args.write_x, rng.standard_normal((args.batch, seqs[0], spec.d)))
        print(f"torch_bench: wrote {args.write_x} [{args.batch}, {seqs[0]}, {spec.d}]")
        return 0

    try:
        import torch
    except ImportError as e:
        sys.exit(f"torch_bench: PyTorch is not available ({e})")
    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        sys.exit("torch_bench: --device cuda but torch.cuda.is_available() is False "
                 "(no GPU or no CUDA build of torch); --device cpu runs on the CPU")
    tf32 = no_tf32(torch)
    device = torch.device(args.device)
    weights = (load_weights(spec, args.weights, args.weights_prefix) if args.weights
               else random_weights(spec, args.seed))
    blocks = Blocks(spec, weights, device, torch.float32)
    dev_name = torch.cuda.get_device_name(device) if cuda else "CPU"
    print(f"torch_bench: {spec.describe()}")
    print(f"torch_bench: device {args.device} ({dev_name}), torch {torch.__version__}, fp32, "
          f"{tf32}; weights {args.weights or f'random (seed {args.seed})'}; sdpa: "
          + ("F.scaled_dot_product_attention" if blocks.has_sdpa
             else "explicit softmax (this torch has no F.scaled_dot_product_attention)")
          + ("" if spec.hkv == spec.h else f"; GQA: K/V heads repeated x{blocks.group}")
          + ("" if blocks.mha else f"; mha: n/a ({blocks.mha_why})"))

    if args.compare or args.check_only:
        ok = True
        cases = []
        if args.compare:
            if not args.x:
                sys.exit("torch_bench: --compare needs --x X.npy (attnc-run's input)")
            import numpy as np
            xs = read_npy(args.x)
            ys = np.load(args.compare)
            if xs.ndim != 3 or xs.shape[2] != spec.d:
                sys.exit(f"torch_bench: {args.x}: expected [B, T, {spec.d}], found {xs.shape}")
            cases.append((xs, ys))
        else:
            g = torch.Generator().manual_seed(args.seed)
            for T in seqs:
                cases.append((torch.randn(args.batch, T, spec.d, generator=g).numpy(), None))
        with torch.inference_mode():
            for xs, ys in cases:
                B, T = xs.shape[0], xs.shape[1]
                print(f"T {T} B {B}: against the float64 reference (per head, explicit softmax)")
                x32 = torch.tensor(xs, dtype=torch.float32, device=device)
                ref = reference(spec, weights,
                                torch.tensor(xs, dtype=torch.float64, device=device))
                if ys is not None:
                    ok &= gate("attnc", ys, ref, args.atol, args.rtol)
                if blocks.mha is not None:
                    ok &= gate("mha", blocks.run_mha(x32).float().cpu().numpy(), ref,
                               args.atol, args.rtol)
                ok &= gate("sdpa", blocks.run_sdpa(x32).float().cpu().numpy(), ref,
                           args.atol, args.rtol)
        print(f"torch_bench: {'PASS' if ok else 'FAIL'}")
        return 0 if ok else 1

    want = [b.strip() for b in args.blocks.split(",") if b.strip()]
    for b in want:
        if b not in ("mha", "sdpa"):
            sys.exit(f"torch_bench: --blocks: unknown block '{b}' (mha, sdpa)")
    g = torch.Generator().manual_seed(args.seed)
    for T in seqs:
        if spec.max_seq_len and T > spec.max_seq_len:
            print(f"note: T {T} > the spec's max_seq_len {spec.max_seq_len} "
                  "(attnc refuses it; torch runs it)")
        x = torch.randn(args.batch, T, spec.d, generator=g).to(device)
        blocks.allowed(T)  # the mask is built once, outside the timing
        for b in want:
            if b == "mha" and blocks.mha is None:
                print(f"RESULT T={T} B={args.batch} block=mha min_ms=nan median_ms=nan")
                continue
            fn = blocks.run_mha if b == "mha" else blocks.run_sdpa
            mn, med = time_fn(torch, fn, x, args.iters, args.warmup, cuda)
            print(f"T {T} B {args.batch}: {b:<4} min {mn:.3f} ms, median {med:.3f} ms "
                  f"({args.iters} calls after {args.warmup} warm-up)")
            print(f"RESULT T={T} B={args.batch} block={b} min_ms={mn:.4f} median_ms={med:.4f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
