"""The attention block of an attnc spec in PyTorch (fp32), for the GPU check.

Reads a spec YAML (d_model, heads, kv_heads, head_dim, mask, causal_align,
window, bias, out_proj, scale, weights, cross_attention) and builds the same
block twice, with the same weights:

  mha   torch.nn.MultiheadAttention (batch_first) with in_proj / out_proj
        set from the spec's weights (GQA: the K/V heads repeated, so query
        head h reads K/V head h // (heads / kv_heads) as attnc does; a scale
        other than 1/sqrt(head_dim) folded into the Q rows); called as
        mha(x, x, x), or mha(x, x_kv, x_kv) for cross-attention;
  sdpa  a hand-written block: one QKV linear (cross-attention: a Q linear on
        x and one K/V linear on x_kv), heads split, K/V heads repeated for
        GQA, F.scaled_dot_product_attention (is_causal for a causal
        self-attention mask, else a boolean mask: window, bottom_right
        diagonal, padding), heads merged, output linear.

Padding masks (mask: padding, causal+padding) take per-sequence valid
lengths (--lengths; cross-attention also --kv-lengths), with attnc's
semantics (docs/abi.md, "The attention variants"): query i < q_b sees key j
iff j < kv_b (and, causal, j <= i + off_b, off_b = kv_b - q_b for
bottom_right, 0 for top_left; sliding_window also j > i + off_b - window);
rows i >= q_b are zero in y (the whole row, not the bias). Both torch blocks
reproduce those zeros (a masked_fill on y); keys are masked with MHA's
key_padding_mask (padding) or a per-sequence 3-D attn_mask (causal+padding,
[B*heads, T, T_kv]), and SDPA's boolean attn_mask. A valid query row that
sees no key (kv_b = 0, or a bottom_right diagonal that starts past it) has
zero attention output in attnc (y = the output bias); torch leaves such a
row NaN (or 0, by version): the comparison leaves those rows out for the
torch blocks (it says how many) and checks attnc's on every row.

Modes (see --help):
  timing (default)   time both blocks with torch.cuda.Event per call (on the
                     CPU: perf_counter), --iters calls after --warmup ones;
                     prints 'RESULT T=.. B=.. block=.. min_ms=.. median_ms=..'
                     lines (tests/gpu/run.sh parses them) and a readable line
  --check-only       run each block once and compare it with a float64
                     reference written out per head from the spec (no
                     timing); exit 1 if either is off. A padding spec uses
                     --lengths mix by default
  --compare Y.npy    compare attnc's output (attnc-run --x X.npy [--x-kv
                     XKV.npy] [--lengths ..] --out Y.npy with the same
                     --weights) and both torch blocks with the float64
                     reference on X.npy (--x, --x-kv, the same lengths);
                     exit 1 if any is off
  --write-weights F  write random weights for the spec to F (.safetensors,
                     the spec's storage names and shapes, docs/weights.md),
                     scaled as attnc-run's random weights; exit
  --write-x F        write a random input x [B, T, d_model] float32 .npy
                     (and with --write-x-kv G the K/V input [B, T_kv,
                     d_model], T_kv = --kv-seq-len); exit

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
        self.causal_align = str(d.get("causal_align", "bottom_right"))
        self.window = int(d["window"]) if d.get("window") is not None else None
        self.bias = bool(d.get("bias", True))
        self.out_proj = bool(d.get("out_proj", True))
        sc = d.get("scale", "auto")
        self.scale = 1.0 / math.sqrt(self.dh) if str(sc) == "auto" else float(sc)
        self.layout = str(d.get("weights", "gpt2_conv1d"))
        self.max_seq_len = int(d["max_seq_len"]) if d.get("max_seq_len") else None
        self.cross = bool(d.get("cross_attention", False))
        if self.mask not in ("none", "causal", "padding", "causal+padding", "sliding_window"):
            sys.exit(f"torch_bench: {path}: mask '{self.mask}' is not supported here "
                     "(none, causal, padding, causal+padding, sliding_window)")
        if self.causal_align not in ("bottom_right", "top_left"):
            sys.exit(f"torch_bench: {path}: causal_align '{self.causal_align}'")
        self.padding = self.mask in ("padding", "causal+padding")
        self.causal = self.mask in ("causal", "causal+padding", "sliding_window")
        if self.mask == "sliding_window" and not self.window:
            sys.exit(f"torch_bench: {path}: sliding_window without window")
        if self.h % self.hkv:
            sys.exit(f"torch_bench: {path}: kv_heads {self.hkv} does not divide heads {self.h}")
        self.out_dim = self.d if self.out_proj else self.h * self.dh

    def describe(self):
        m = self.mask + (f" (window {self.window})" if self.mask == "sliding_window" else "")
        if self.causal and self.cross:
            m += f", causal_align {self.causal_align}"
        return (f"{self.name}: d_model {self.d}, heads {self.h}, kv_heads {self.hkv}, "
                f"head_dim {self.dh}, mask {m}, "
                f"{'cross-attention, ' if self.cross else ''}bias {str(self.bias).lower()}, "
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


# ----------------------------------------------------------------- lengths


def _ceil_div(a, b):
    return -(-a // b)


def mix_lengths(n, batch):
    """Query lengths for a padded batch of sequences of n tokens (run.sh's
    mix): the first full, the last 0 (batch > 1), between them
    ceil(2n/3), 1, ceil(n/3), ... (batch 4: n, ceil(2n/3), 1, 0)."""
    if batch == 1:
        return [n]
    mid = [_ceil_div(2 * n, 3), 1, _ceil_div(n, 3)]
    return [n] + [mid[i % 3] for i in range(batch - 2)] + [0]


def mix_kv_lengths(n, batch):
    """Key lengths to go with mix_lengths (run.sh's kv mix): ceil(n/2)
    first, n last (batch > 1), between them n, 0, ceil(n/3), ... (batch 4:
    ceil(n/2), n, 0, n: a full query row against half the keys, a valid
    query row with no key, a length-0 query against every key)."""
    if batch == 1:
        return [_ceil_div(n, 2)]
    mid = [n, 0, _ceil_div(n, 3)]
    return [_ceil_div(n, 2)] + [mid[i % 3] for i in range(batch - 2)] + [n]


def parse_lengths(text, batch, n, what, mix):
    """None ('none' or empty), mix(n, batch) ('mix'), or a comma list of
    batch integers in 0..n."""
    if text is None or text in ("", "none"):
        return None
    if text == "mix":
        return mix(n, batch)
    try:
        v = [int(t) for t in text.split(",")]
    except ValueError:
        sys.exit(f"torch_bench: {what}: expected L1,L2,... (or mix, none), found '{text}'")
    if len(v) != batch:
        sys.exit(f"torch_bench: {what}: {len(v)} lengths for batch {batch}")
    if min(v) < 0 or max(v) > n:
        sys.exit(f"torch_bench: {what}: lengths {text} outside 0..{n}")
    return v


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
        # The hand-written block: one fused QKV linear (cross-attention: Q
        # from x, one fused K/V linear over x_kv, as attnc fuses them). Q
        # rows pre-scaled only for an SDPA without scale= (torch 2.0: it
        # applies 1/sqrt(head_dim)); the explicit softmax (torch < 2.0)
        # applies spec.scale itself.
        fold = (spec.scale * math.sqrt(spec.dh)
                if self.has_sdpa and not self.sdpa_scale_kw else 1.0)
        import numpy as np
        if spec.cross:
            self.wq = t(wq * fold)
            self.bq = None if bq is None else t(bq * fold)
            self.wkv = t(np.concatenate([wk, wv]))
            self.bkv = None if bk is None else t(np.concatenate([bk, bv]))
        else:
            self.wqkv = t(np.concatenate([wq * fold, wk, wv]))
            self.bqkv = None if bq is None else t(np.concatenate([bq * fold, bk, bv]))
        self.wo, self.bo = t(wo), t(bo)
        self.group = spec.h // spec.hkv
        # nn.MultiheadAttention: needs heads * head_dim == d_model; GQA by
        # repeating each K/V head's rows; another scale folded into Q. Its
        # packed in_proj serves cross-attention too (kdim = vdim = d_model).
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

    def masks(self, B, T, S, lengths=None, kv_lengths=None):
        """The masks of one call shape, built once (outside any timing):
        (mha kwargs, sdpa kwargs, allowed, qpad). allowed: boolean
        [B or 1, T or 1, S], True where query i sees key j, or None (all);
        qpad: boolean [B, T, 1], True on the query rows past lengths[b]
        (zero in y), or None. S = T_kv (T for self-attention)."""
        key = (B, T, S, None if lengths is None else tuple(lengths),
               None if kv_lengths is None else tuple(kv_lengths))
        if key in self._masks:
            return self._masks[key]
        torch, spec, dev = self.torch, self.spec, self.device
        have_len = lengths is not None or kv_lengths is not None
        qb = torch.tensor(lengths if lengths is not None else [T] * B, device=dev)
        if spec.cross:
            kb = torch.tensor(kv_lengths if kv_lengths is not None else [S] * B, device=dev)
        else:
            kb = qb
        qb, kb = qb.reshape(B, 1, 1), kb.reshape(B, 1, 1)
        i = torch.arange(T, device=dev).reshape(1, T, 1)
        j = torch.arange(S, device=dev).reshape(1, 1, S)
        allowed = None
        if spec.causal:
            off = kb - qb if spec.causal_align == "bottom_right" else torch.zeros_like(kb)
            allowed = j <= i + off
            if spec.mask == "sliding_window":
                allowed = allowed & (j > i + off - spec.window)
            if have_len:
                allowed = allowed & (j < kb)
            else:
                allowed = allowed[:1]  # the same for every sequence
        elif have_len:
            allowed = j < kb  # [B, 1, S]: key padding only
        qpad = (i >= qb).reshape(B, T, 1) if lengths is not None else None
        mha_kw, sdpa_kw = {}, {}
        if allowed is not None:
            if not have_len and not spec.cross and spec.mask == "causal":
                sdpa_kw["is_causal"] = True  # T_q = T_kv: top-left = bottom-right
            else:
                sdpa_kw["attn_mask"] = allowed.unsqueeze(1)  # True = allowed
            if not have_len:  # MHA's boolean masks: True = not allowed
                mha_kw["attn_mask"] = ~allowed[0]
                if self.mha is not None and self.mha_causal_kw and "is_causal" in sdpa_kw:
                    mha_kw["is_causal"] = True
            elif not spec.causal:
                mha_kw["key_padding_mask"] = ~allowed[:, 0, :]
            else:  # per sequence: [B * heads, T, S], sequence-major
                mha_kw["attn_mask"] = (~allowed).repeat_interleave(spec.h, dim=0)
        r = (mha_kw, sdpa_kw, allowed, qpad)
        self._masks[key] = r
        return r

    def run_mha(self, x, x_kv=None, lengths=None, kv_lengths=None):
        B, T = x.shape[0], x.shape[1]
        kv = x if x_kv is None else x_kv
        mha_kw, _, _, qpad = self.masks(B, T, kv.shape[1], lengths, kv_lengths)
        y = self.mha(x, kv, kv, need_weights=False, **mha_kw)[0]
        return y if qpad is None else y.masked_fill(qpad, 0.0)

    def _heads(self, x, x_kv):
        spec = self.spec
        B, T, _ = x.shape
        if spec.cross:
            S = x_kv.shape[1]
            q = self.F.linear(x, self.wq, self.bq)
            k, v = self.F.linear(x_kv, self.wkv, self.bkv).split(
                [spec.hkv * spec.dh, spec.hkv * spec.dh], -1)
        else:
            S = T
            qkv = self.F.linear(x, self.wqkv, self.bqkv)
            q, k, v = qkv.split([spec.h * spec.dh, spec.hkv * spec.dh, spec.hkv * spec.dh], -1)
        q = q.view(B, T, spec.h, spec.dh).transpose(1, 2)
        k = k.view(B, S, spec.hkv, spec.dh).transpose(1, 2)
        v = v.view(B, S, spec.hkv, spec.dh).transpose(1, 2)
        if self.group > 1:
            k = k.repeat_interleave(self.group, dim=1)
            v = v.repeat_interleave(self.group, dim=1)
        return q, k, v

    def _merge(self, o):
        B, H, T, dh = o.shape
        o = o.transpose(1, 2).reshape(B, T, H * dh)
        return self.F.linear(o, self.wo, self.bo) if self.spec.out_proj else o

    def run_sdpa(self, x, x_kv=None, lengths=None, kv_lengths=None):
        q, k, v = self._heads(x, x_kv)
        B, T, S = x.shape[0], x.shape[1], k.shape[2]
        _, sdpa_kw, allowed, qpad = self.masks(B, T, S, lengths, kv_lengths)
        if not self.has_sdpa:  # torch < 2.0: the same math by hand
            y = self._merge(self._math(q, k, v, allowed))
        else:
            kw = dict(sdpa_kw)
            if self.sdpa_scale_kw:
                kw["scale"] = self.spec.scale
            y = self._merge(self.F.scaled_dot_product_attention(q, k, v, **kw))
        return y if qpad is None else y.masked_fill(qpad, 0.0)

    def _math(self, q, k, v, allowed):
        """softmax(q k^T * scale + mask) v (torch < 2.0: no SDPA; Q is not
        pre-scaled then, see __init__)."""
        att = (q @ k.transpose(-1, -2)) * self.spec.scale
        if allowed is not None:
            att = att.masked_fill(~allowed.unsqueeze(1), float("-inf"))
        return att.softmax(-1) @ v


def reference(spec, weights, x, x_kv=None, lengths=None, kv_lengths=None):
    """The block in float64, written out from the spec and docs/abi.md's
    mask rules alone (shares no code with Blocks but the storage-to-(out,
    in) conversion): per query head h, softmax(Q_h K_g^T * scale + M) V_g
    with g = h // (heads / kv_heads), M -inf where the mask hides key j from
    query i (a row that sees no key: zero attention output), heads
    concatenated, W_O; rows i >= lengths[b] zero. x (and x_kv): float64
    tensors [B, T, d_model] ([B, T_kv, d_model]). Returns (y, sees): y a
    numpy array, sees a boolean numpy [B, T]: the rows torch defines too
    (padding rows, and rows that see at least one key)."""
    import torch
    wq, wk, wv, wo, bq, bk, bv, bo = canonical(spec, weights)
    dev = x.device
    t = lambda a: torch.tensor(a, dtype=torch.float64, device=dev)  # noqa: E731
    src = x if x_kv is None else x_kv

    def lin(inp, w, b):
        y = torch.einsum("bti,oi->bto", inp, t(w))
        return y if b is None else y + t(b)

    B, T, _ = x.shape
    S = src.shape[1]
    q = lin(x, wq, bq).reshape(B, T, spec.h, spec.dh)
    k = lin(src, wk, bk).reshape(B, S, spec.hkv, spec.dh)
    v = lin(src, wv, bv).reshape(B, S, spec.hkv, spec.dh)
    hidden = torch.zeros(B, T, S, dtype=torch.bool)  # built on the CPU
    pad_rows = torch.zeros(B, T, dtype=torch.bool)
    for b in range(B):
        q_len = lengths[b] if lengths is not None else T
        if spec.cross:
            kv_len = kv_lengths[b] if kv_lengths is not None else S
        else:
            kv_len = q_len
        off = kv_len - q_len if spec.causal_align == "bottom_right" else 0
        for i in range(T):
            if i >= q_len:
                pad_rows[b, i] = True
                hidden[b, i, :] = True
                continue
            hidden[b, i, kv_len:] = True
            if spec.mask in ("causal", "causal+padding", "sliding_window"):
                hidden[b, i, max(0, i + off + 1):] = True
            if spec.mask == "sliding_window":
                hidden[b, i, :max(0, i + off - spec.window + 1)] = True
    sees = (pad_rows | ~hidden.all(dim=-1)).numpy()
    hidden, pad_rows = hidden.to(dev), pad_rows.to(dev)
    group = spec.h // spec.hkv
    heads = []
    for h in range(spec.h):
        g = h // group
        s = torch.einsum("bid,bjd->bij", q[:, :, h], k[:, :, g]) * spec.scale
        s = s.masked_fill(hidden, float("-inf"))
        m = s.max(dim=-1, keepdim=True).values
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        p = torch.exp(s - m)
        den = p.sum(dim=-1, keepdim=True)
        p = p / torch.where(den > 0, den, torch.ones_like(den))
        heads.append(torch.einsum("bij,bjd->bid", p, v[:, :, g]))
    o = torch.cat(heads, dim=-1)
    if spec.out_proj:
        o = torch.einsum("bti,oi->bto", o, t(wo))
        if bo is not None:
            o = o + t(bo)
    o = o.masked_fill(pad_rows.unsqueeze(-1), 0.0)
    return o.cpu().numpy(), sees


# ------------------------------------------------------------------ the modes


def gate(name, y, ref, atol, rtol, rows=None):
    """Print max errors of y against ref; True when every element is within
    atol + rtol*|ref|. rows: boolean [B, T], the rows to compare (None:
    all)."""
    import numpy as np
    y = np.asarray(y, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if y.shape != ref.shape:
        print(f"  {name:<6} shape {y.shape} != reference {ref.shape}: FAIL")
        return False
    note = ""
    if rows is not None and not rows.all():
        note = (f"  ({int((~rows).sum())} of {rows.size} rows left out: they see no "
                "key, torch leaves them undefined)")
        y, ref = y[rows], ref[rows]
    if y.size == 0:
        print(f"  {name:<6} nothing to compare{note}")
        return True
    err = np.abs(y - ref)
    finite = bool(np.isfinite(y).all())
    allow = atol + rtol * np.abs(ref)
    bad = int((~(err <= allow)).sum())
    ok = finite and bad == 0
    print(f"  {name:<6} max_abs_err {err.max():.3e}  mean_abs_err {err.mean():.3e}  "
          f"max|ref| {np.abs(ref).max():.3e}  outside atol {atol:g} + rtol {rtol:g}*|ref|: "
          f"{bad} of {err.size}{'' if finite else '  NON-FINITE'}: {'PASS' if ok else 'FAIL'}"
          f"{note}")
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
    ap.add_argument("--kv-seq-len", type=int,
                    help="cross-attention: T_kv of the random K/V input (timing, "
                         "--check-only, --write-x-kv; default: T)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--lengths", metavar="L1,L2,..",
                    help="padding masks: valid tokens per sequence (0..T), 'mix' "
                         "(T, ceil(2T/3), 1, .., 0) or 'none' (default; --check-only: "
                         "both none and mix)")
    ap.add_argument("--kv-lengths", metavar="L1,L2,..",
                    help="cross-attention with a padding mask: valid keys per "
                         "sequence (0..T_kv), 'mix' (ceil(T_kv/2), T_kv, 0, .., T_kv) "
                         "or 'none' (default: mix with --lengths mix, else none, as "
                         "attnc-run)")
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
    ap.add_argument("--x-kv", metavar="XKV.npy",
                    help="cross-attention: the K/V input [B, T_kv, d_model] (--compare)")
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--write-weights", metavar="FILE.safetensors")
    ap.add_argument("--write-x", metavar="FILE.npy")
    ap.add_argument("--write-x-kv", metavar="FILE.npy",
                    help="with --write-x, for cross-attention: also x_kv")
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
    if not spec.cross and (args.x_kv or args.kv_seq_len is not None or args.write_x_kv
                           or args.kv_lengths):
        sys.exit("torch_bench: --x-kv, --kv-seq-len, --kv-lengths, --write-x-kv: "
                 f"{spec.name} is not a cross-attention spec")
    if args.kv_seq_len is not None and args.kv_seq_len < 1:
        sys.exit("torch_bench: --kv-seq-len must be >= 1")
    if not spec.padding and (args.lengths not in (None, "none") or
                             args.kv_lengths not in (None, "none")):
        sys.exit(f"torch_bench: --lengths, --kv-lengths: {spec.name} has mask "
                 f"'{spec.mask}', not a padding mask")
    if spec.cross and args.write_x and not args.write_x_kv:
        sys.exit("torch_bench: a cross-attention spec: --write-x needs --write-x-kv too")

    def lens_for(B, T, S, text_q, text_kv):
        """(lengths, kv_lengths) for one case."""
        q = parse_lengths(text_q, B, T, "--lengths", mix_lengths)
        if text_kv is None:  # mix with --lengths mix, else none (as attnc-run)
            text_kv = "mix" if text_q == "mix" else None
        kv = (parse_lengths(text_kv, B, S, "--kv-lengths", mix_kv_lengths)
              if spec.cross else None)
        return q, kv

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
        if args.write_x_kv:
            S = args.kv_seq_len or seqs[0]
            write_npy(args.write_x_kv, rng.standard_normal((args.batch, S, spec.d)))
            print(f"torch_bench: wrote {args.write_x_kv} [{args.batch}, {S}, {spec.d}]")
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
        import numpy as np
        ok = True
        cases = []  # (x, x_kv or None, attnc's y or None, lengths, kv_lengths)
        if args.compare:
            if not args.x:
                sys.exit("torch_bench: --compare needs --x X.npy (attnc-run's input)")
            xs = read_npy(args.x)
            ys = np.load(args.compare)
            if xs.ndim != 3 or xs.shape[2] != spec.d:
                sys.exit(f"torch_bench: {args.x}: expected [B, T, {spec.d}], found {xs.shape}")
            xkv = None
            if spec.cross:
                if not args.x_kv:
                    sys.exit("torch_bench: a cross-attention spec: --compare needs --x-kv "
                             "XKV.npy (attnc-run's)")
                xkv = read_npy(args.x_kv)
                if xkv.ndim != 3 or xkv.shape[0] != xs.shape[0] or xkv.shape[2] != spec.d:
                    sys.exit(f"torch_bench: {args.x_kv}: expected [{xs.shape[0]}, T_kv, "
                             f"{spec.d}], found {xkv.shape}")
            B, T = xs.shape[0], xs.shape[1]
            S = xkv.shape[1] if spec.cross else T
            cases.append((xs, xkv, ys) + lens_for(B, T, S, args.lengths, args.kv_lengths))
        else:
            g = torch.Generator().manual_seed(args.seed)
            for T in seqs:
                S = (args.kv_seq_len or T) if spec.cross else T
                xs = torch.randn(args.batch, T, spec.d, generator=g).numpy()
                xkv = (torch.randn(args.batch, S, spec.d, generator=g).numpy()
                       if spec.cross else None)
                if spec.padding and args.lengths is None and args.kv_lengths is None:
                    texts = [(None, None), ("mix", "mix")]
                else:
                    texts = [(args.lengths, args.kv_lengths)]
                for tq, tkv in texts:
                    cases.append((xs, xkv, None) + lens_for(args.batch, T, S, tq, tkv))
        with torch.inference_mode():
            for xs, xkv, ys, ql, kl in cases:
                B, T = xs.shape[0], xs.shape[1]
                what = f"T {T} B {B}"
                if xkv is not None:
                    what += f" T_kv {xkv.shape[1]}"
                if ql is not None:
                    what += f" lengths {','.join(map(str, ql))}"
                if kl is not None:
                    what += f" kv_lengths {','.join(map(str, kl))}"
                print(f"{what}: against the float64 reference (per head, explicit softmax)")
                x32 = torch.tensor(xs, dtype=torch.float32, device=device)
                kv32 = (None if xkv is None
                        else torch.tensor(xkv, dtype=torch.float32, device=device))
                ref, sees = reference(
                    spec, weights, torch.tensor(xs, dtype=torch.float64, device=device),
                    None if xkv is None else torch.tensor(xkv, dtype=torch.float64,
                                                          device=device), ql, kl)
                if ys is not None:
                    ok &= gate("attnc", ys, ref, args.atol, args.rtol)
                if blocks.mha is not None:
                    ok &= gate("mha", blocks.run_mha(x32, kv32, ql, kl).float().cpu().numpy(),
                               ref, args.atol, args.rtol, sees)
                ok &= gate("sdpa", blocks.run_sdpa(x32, kv32, ql, kl).float().cpu().numpy(),
                           ref, args.atol, args.rtol, sees)
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
        S = (args.kv_seq_len or T) if spec.cross else T
        ql, kl = lens_for(args.batch, T, S, args.lengths, args.kv_lengths)
        x = torch.randn(args.batch, T, spec.d, generator=g).to(device)
        kv = torch.randn(args.batch, S, spec.d, generator=g).to(device) if spec.cross else None
        blocks.masks(args.batch, T, S, ql, kl)  # the masks are built once, outside the timing
        label = f"T {T} B {args.batch}" + (f" T_kv {S}" if spec.cross else "")
        for b in want:
            if b == "mha" and blocks.mha is None:
                print(f"RESULT T={T} B={args.batch} block=mha min_ms=nan median_ms=nan")
                continue
            run = blocks.run_mha if b == "mha" else blocks.run_sdpa
            fn = lambda xx, run=run: run(xx, kv, ql, kl)  # noqa: E731
            mn, med = time_fn(torch, fn, x, args.iters, args.warmup, cuda)
            print(f"{label}: {b:<4} min {mn:.3f} ms, median {med:.3f} ms "
                  f"({args.iters} calls after {args.warmup} warm-up)")
            print(f"RESULT T={T} B={args.batch} block={b} min_ms={mn:.4f} median_ms={med:.4f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
