"""Weights for attnc kernels from Python: names and safetensors files.

map_names() picks a kernel's storage tensors out of a dict (a torch
state_dict, np.load(...npz), load_safetensors(...)) with the same rules as
libattnrt's loader (weights.h, docs/weights.md): an optional layer prefix,
attnc's own names or the Hugging Face spellings of the `separate` layout.
save_safetensors / load_safetensors read and write the format with NumPy
only (an 8-byte little-endian header length, a JSON header, raw bytes).
Wherever they take arrays they take torch tensors too (to_numpy): a
bfloat16 tensor, which NumPy has no dtype for, is converted to float32 by
torch, and save_safetensors writes it as BF16, bit for bit.
"""
import json
import math
import re
import struct

import numpy as np

# Other spellings of `separate`-layout tensors, as libattnrt's loader
# (runtime/lib/Weights.cpp): BERT, T5, OPT/BART/GPT-J/MPT, Phi-2/NeoX/BLOOM/
# Falcon (dense), GPT-BigCode (c_proj).
ALIASES = {
    # + ViT, DistilBERT, ALBERT, MPNet
    "q_proj": ["self.query", "q", "attention.query", "q_lin", "query", "attn.q"],
    "k_proj": ["self.key", "k", "attention.key", "k_lin", "key", "attn.k"],
    "v_proj": ["self.value", "v", "attention.value", "v_lin", "value", "attn.v"],
    "o_proj": ["output.dense", "out_proj", "dense", "c_proj", "o", "out_lin", "attn.o", "wo"],
    "out_proj": ["o_proj", "output.dense"],  # torch_in_proj's W_O
    "q_norm": ["q_layernorm"],  # Phi's, StableLM's QK LayerNorms
    "k_norm": ["k_layernorm"],
    "distance_embedding": ["self.distance_embedding"],  # BERT's relative_key table
}


# The floating torch dtypes NumPy holds as they are; the others (bfloat16,
# the float8 types) are converted to float32 by torch.
_NUMPY_FLOATS = ("torch.float16", "torch.float32", "torch.float64")


def to_numpy(a):
    """`a` as a NumPy array. A torch tensor is detached and moved to the CPU
    (a CPU tensor NumPy can hold comes back as a view of its memory); a
    floating one of a dtype NumPy has no type for (bfloat16, float8) is
    converted to float32 with torch (t.float()) first. Anything else goes
    through np.asarray."""
    if hasattr(a, "detach") and hasattr(a, "dtype"):
        t = a.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if hasattr(t, "resolve_neg"):
            t = t.resolve_conj().resolve_neg()
        if t.is_floating_point() and str(t.dtype) not in _NUMPY_FLOATS:
            t = t.float()
        return t.numpy()
    return np.asarray(a)


def spellings(name):
    """attnc's name first, then its Hugging Face aliases."""
    head, dot, rest = name.partition(".")
    return [name] + [a + dot + rest for a in ALIASES.get(head, [])] if dot else [name]


_FUSED = ("query_key_value", "qkv_proj", "Wqkv", "c_attn", "wqkv")


def fused_rows(which, config, heads, kv_heads, head_dim):
    """The rows of a checkpoint's fused QKV tensor that hold projection
    `which` ('q', 'k', 'v'), by its config.json (a dict), as libattnrt's
    loader picks them (runtime/lib/Weights.cpp, docs/models.md): Falcon's
    and InternLM2's grouped [kv_heads, G + 2, head_dim], per head [heads, 3, head_dim]
    (GPT-NeoX, Persimmon, BLOOM, Falcon, GPT-BigCode with kv_heads ==
    heads) or [q | k | v] (Phi-3, MPT, DBRX, Falcon and GPT-BigCode MQA). None
    when the model type has no known fused layout."""
    mt = config.get("model_type")
    text = config.get("text_config")  # a multimodal wrapper's language model
    if isinstance(text, dict) and text.get("model_type"):
        config, mt = text, text["model_type"]
    h, hkv, dh = heads, kv_heads, head_dim
    part = "qkv".index(which)
    if (mt == "falcon" and config.get("new_decoder_architecture")) or mt == "internlm2":
        g = h // hkv
        rows = []
        for grp in range(hkv):
            base = grp * (g + 2) * dh
            rows += (list(range(base, base + g * dh)) if part == 0 else
                     list(range(base + (g + part - 1) * dh, base + (g + part) * dh)))
        return rows
    if mt in ("gpt_neox", "persimmon", "bloom", "falcon", "gpt_bigcode") and hkv == h:
        return [r for head in range(h) for r in range(head * 3 * dh + part * dh,
                                                       head * 3 * dh + (part + 1) * dh)]
    if mt in ("phi3", "mpt", "falcon", "gpt_bigcode", "dbrx"):
        start = 0 if part == 0 else h * dh + (part - 1) * hkv * dh
        return list(range(start, start + (h * dh if part == 0 else hkv * dh)))
    return None


def split_fused(tensors, prefix, config, heads, kv_heads, head_dim):
    """A copy of `tensors` with q_proj / k_proj / v_proj `.weight` and
    `.bias` (under `prefix`) cut out of the checkpoint's fused QKV tensor
    (query_key_value, qkv_proj, Wqkv or c_attn) where there is exactly one
    and the separate ones are missing (fused_rows picks the rows)."""
    out = dict(tensors)
    for kind in ("weight", "bias"):
        fused = [prefix + f + "." + kind for f in _FUSED if prefix + f + "." + kind in tensors]
        if len(fused) != 1 or any(prefix + p + "_proj." + kind in tensors for p in "qkv"):
            continue
        a = to_numpy(tensors[fused[0]])
        for p in "qkv":
            rows = fused_rows(p, config, heads, kv_heads, head_dim)
            if rows is None:
                return out
            out[prefix + p + "_proj." + kind] = np.ascontiguousarray(a[rows])
    return out


def map_names(tensors, names, layout=None, prefix="", used=None):
    """[tensors[...] for each kernel name], matched under `prefix`.

    Raises KeyError naming the missing tensor (and the prefixes under which
    it does exist), ValueError when two spellings of one tensor are there.
    used: a set that gets the keys of `tensors` read.
    """
    under = {k[len(prefix):]: k for k in tensors.keys() if k.startswith(prefix)}
    if used is not None:
        tensors = _Recording(tensors, used)
    out = []
    for n in names:
        found = [under[s] for s in spellings(n) if s in under]
        if not found and n in ("in_proj_weight", "in_proj_bias"):
            # torch_in_proj's fused Q/K/V from separate tensors (BERT).
            suffix = ".weight" if n == "in_proj_weight" else ".bias"
            parts = [[under[s] for s in spellings(p + suffix) if s in under]
                     for p in ("q_proj", "k_proj", "v_proj")]
            if all(len(p) == 1 for p in parts):
                arrays = [to_numpy(tensors[p[0]]) for p in parts]
                out.append(np.concatenate(arrays, axis=0))
                continue
        if not found and n.startswith(("q_norm.", "k_norm.")):
            # StableLM's per-head norms q_layernorm.norms.N.weight, stacked
            # in head order (the kernel's one weight per head).
            base = n[0] + "_layernorm.norms."
            suffix = n[n.index("."):]
            heads = []
            while base + str(len(heads)) + suffix in under:
                heads.append(to_numpy(tensors[under[base + str(len(heads)) + suffix]]))
            if heads:
                out.append(np.concatenate([np.ravel(h) for h in heads]))
                continue
        if not found and n == "relative_attention_bias.weight":
            # T5's later blocks read block 0's table (the stack's owner), as
            # libattnrt's loader does (a block with its own: UMT5's).
            owner = re.sub(r"(^|\.)block\.[0-9]+\.", r"\1block.0.", prefix, count=1)
            # MPNet's encoder owns one table for all its layers.
            mpnet = re.match(r"(.*(?:^|\.)encoder\.)layer\.[0-9]+\.", prefix)
            if owner == prefix and mpnet and mpnet.group(1) + n in tensors.keys():
                owner = mpnet.group(1)
            if owner != prefix and owner + n in tensors.keys():
                out.append(tensors[owner + n])
                continue
        if not found:
            others = {k[: -len(s)] for k in tensors.keys() for s in spellings(n)
                      if k.endswith("." + s)}
            # one module matched by two spellings ('attention.' for
            # self.query, 'attention.self.' for query): the outer one
            others = sorted(p for p in others
                            if not any(q != p and p.startswith(q) for q in others))
            hint = f"; it is there under prefixes {others[:3]}" if others else ""
            fused = [prefix + f + n[n.index("."):] for f in _FUSED
                     if n.startswith(("q_proj.", "k_proj.", "v_proj."))
                     and f + n[n.index("."):] in under]
            if fused:
                hint += (f"; the checkpoint fuses Q/K/V in {fused[0]}: cut it with "
                         "attnc.weights.split_fused(tensors, prefix, config, heads, kv_heads, "
                         "head_dim) first (or use attnc.from_hf / Kernel.pack_checkpoint)")
            raise KeyError(f"no tensor for '{n}' under prefix '{prefix}' "
                           f"(looked for {[prefix + s for s in spellings(n)]}){hint}")
        if len(found) > 1:
            raise DuplicateTensorError(f"two tensors for '{n}': {found}")
        if n in ("in_proj_weight", "in_proj_bias"):
            # The fused tensor and a separate Q, K or V beside it: which one?
            suffix = ".weight" if n == "in_proj_weight" else ".bias"
            part = [under[s] for p in ("q_proj", "k_proj", "v_proj")
                    for s in spellings(p + suffix) if s in under]
            if part:
                raise DuplicateTensorError(f"two tensors for '{n}': {[found[0], part[0]]} "
                                           "(the fused Q/K/V and a separate part of it)")
        t = tensors[found[0]]
        if n.startswith(("q_norm.", "k_norm.")) and len(getattr(t, "shape", ())) == 2:
            t = np.ravel(to_numpy(t))  # Cohere's [heads, head_dim]: the kernel's flat order
        out.append(t)
    return out


class _Recording:
    """`tensors` that notes each key read (map_names' `used`)."""

    def __init__(self, tensors, used):
        self._t, self._used = tensors, used

    def keys(self):
        return self._t.keys()

    def __getitem__(self, key):
        self._used.add(key)
        return self._t[key]


def unused_warnings(tensors, used, prefix="", rope=False):
    """Warnings for tensors beside the ones a kernel read (`used`, keys of
    `tensors`) that carry what it does not compute, as libattnrt's loader
    gives them (docs/weights.md "Missing-feature warnings"): a rotary
    embedding table without rope, QK-norm weights, a LayerNorm after the
    attention, BERT's relative_key table, a bias the kernel does not add.
    Only the read tensors' siblings count (keys under `prefix` as deeply
    nested as one of them), so that a whole state_dict's other layers do
    not."""
    if not used:
        return []
    depths = {k[len(prefix):].count(".") for k in used if k.startswith(prefix)}
    # A fused QKV tensor that split_fused cut into the q/k/v_proj read.
    split = any(k[len(prefix):].startswith(("q_proj.", "k_proj.", "v_proj."))
                for k in used if k.startswith(prefix))
    out, norms = [], set()
    for key in tensors.keys():
        if key in used or not key.startswith(prefix):
            continue
        name = key[len(prefix):]
        if name.count(".") not in depths or (split and name.split(".")[0] in _FUSED):
            continue
        lower = name.lower()
        # a QK-norm's weight or bias: its module q_norm, k_norm, q_layernorm
        # or k_layernorm, MPT's q_ln and k_ln (StableLM's per-head norms
        # below them), as libattnrt's loader names them
        qk_norm = any(p in ("q_norm", "k_norm", "q_layernorm", "k_layernorm", "q_ln", "k_ln")
                      for p in lower.split(".")[:-1])
        if not rope and lower.endswith("rotary_emb.inv_freq"):
            out.append(f"'{key}' is a rotary embedding table, but this kernel has no rope: "
                       "its output is not the checkpoint's (add a rope: key to the spec)")
        elif qk_norm:
            out.append(f"'{key}' is a QK-norm {'bias' if lower.endswith('.bias') else 'weight'}, "
                       "which this kernel does not apply: its output is not the checkpoint's")
        elif "layernorm" in lower or "layer_norm" in lower:
            module = key.rsplit(".", 1)[0]
            if module not in norms:
                norms.add(module)
                out.append(f"'{module}' is a LayerNorm after the attention (as BERT's "
                           "output.LayerNorm(dense(attention) + input)); the kernel's output "
                           "is the output projection's: add the residual and apply that "
                           "LayerNorm to it yourself")
        elif lower.endswith("distance_embedding.weight"):
            out.append(f"'{key}' is BERT's relative_key table, but this kernel has no "
                       "relative_key: its output is not the checkpoint's (add a "
                       "relative_key: key to the spec)")
        elif (lower.endswith(".bias") and "norm" not in lower
              and name not in ("attn.bias", "masked_bias")):
            out.append(f"'{key}' is a bias this kernel does not add (spec bias: lists the "
                       "projections that have one)")
    return out


class DuplicateTensorError(ValueError):
    """map_names found two spellings of one tensor."""


_DTYPES = {"F16": np.float16, "F32": np.float32, "F64": np.float64,
           "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
           "U64": np.uint64, "U32": np.uint32, "U16": np.uint16, "U8": np.uint8,
           "BOOL": np.bool_, "C64": np.complex64}
# safetensors dtypes NumPy has no type for (FP8, MXFP4/6 checkpoints): their
# bits per element; load_safetensors checks their data_offsets and leaves
# them out with a warning (as libattnrt reads the other tensors of the file).
_NO_NUMPY_BITS = {"F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "F6_E2M3": 6, "F6_E3M2": 6,
                  "F4": 4}


def bf16_bits(a):
    """float32 `a` rounded to bfloat16 (to nearest, ties to even, as torch's
    .to(torch.bfloat16) and libattnrt's packFloat): its uint16 patterns.
    A NaN stays a (quiet) NaN."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32)
    # In place in 32 bits (17x faster than one expression in 64: 1 ms for
    # GPT-2's x at T = 2048): u + 0x7FFF + lsb wraps only past 0xFFFF7FFF,
    # a negative NaN, set below.
    r = u >> 16
    r &= 1
    r += 0x7FFF
    r += u
    r >>= 16
    r = r.astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def save_safetensors(path, tensors, dtype=None, metadata=None):
    """Writes {name: array} as a .safetensors file. dtype: None (keep each
    array's; a torch bfloat16 tensor is written as BF16, bit for bit), or
    "F32" / "F16" / "F64" / "BF16" for all of them (BF16 rounded to nearest
    even, as torch's .to(torch.bfloat16))."""
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, a in tensors.items():
        if (hasattr(a, "detach") and str(getattr(a, "dtype", "")) == "torch.bfloat16"
                and dtype in (None, "BF16")):
            import torch  # a torch tensor was given: torch is there
            bits = a.detach().cpu().contiguous().view(torch.int16).numpy()
            raw = bits.astype("<i2").tobytes()
            header[name] = {"dtype": "BF16", "shape": list(bits.shape),
                            "data_offsets": [offset, offset + len(raw)]}
            chunks.append(raw)
            offset += len(raw)
            continue
        a = np.ascontiguousarray(to_numpy(a))
        if dtype == "BF16":
            raw = bf16_bits(a).astype("<u2").tobytes()
            code = "BF16"
        else:
            if dtype:
                a = a.astype(_DTYPES[dtype])
            code = {v: k for k, v in _DTYPES.items()}[a.dtype.type]
            raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": code, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)


def load_safetensors(path):
    """{name: array}; BF16 comes back as float32. Tensors of a dtype NumPy
    has no type for (F8_E4M3, F8_E5M2, F8_E8M0, F6_E2M3, F6_E3M2, F4) are
    checked and left out, with an AttncWarning naming them. A file that is
    not a well-formed safetensors file (not a regular file, a header that
    is not a JSON object or runs past the file, an unknown dtype, a shape
    or data_offsets that do not agree, tensors that overlap or lie outside
    the data) raises ValueError naming the file and the tensor; nothing is
    read from a FIFO or a device (which could block). A PyTorch checkpoint
    given as one raises ValueError saying so."""
    import os
    import stat
    import warnings

    def bad(what):
        raise ValueError(f"{path}: {what}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        bad(f"cannot open: {e.strerror}")
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        bad("not a regular file (" + ("a directory" if stat.S_ISDIR(mode) else
                                       "a FIFO" if stat.S_ISFIFO(mode) else
                                       "a device or socket") + ")")
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    if len(data) < 8:
        bad(f"{len(data)} bytes: too short for the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8 or data[8:9] != b"{":
        # torch.save's zip, or its legacy pickle (protocol 2+), under this name
        if data[:4] == b"PK\x03\x04" or (data[0] == 0x80 and 2 <= data[1] <= 5):
            bad("a PyTorch checkpoint (torch.save), not safetensors: load it with "
                "torch.load(path, weights_only=True) and pass the state_dict to Kernel.pack")
    if n > len(data) - 8:
        bad(f"the header length {n} runs past the file ({len(data)} bytes)")
    dups = []

    def pairs(items):  # (a key twice in one object: libattnrt refuses it too)
        d = {}
        for k, v in items:
            if k in d:
                dups.append(k)
            d[k] = v
        return d

    try:
        header = json.loads(data[8:8 + n].decode("utf-8"), object_pairs_hook=pairs)
    except (UnicodeDecodeError, ValueError) as e:
        bad(f"the header is not JSON: {e}")
    except RecursionError:  # (nested past Python's recursion limit)
        bad("the header is not JSON: nested too deeply")
    if not isinstance(header, dict):
        bad("the header is not a JSON object")
    if dups:
        bad(f"the header names '{dups[0]}' twice")
    meta = header.get("__metadata__")
    if meta is not None and (not isinstance(meta, dict) or
                             not all(isinstance(v, str) for v in meta.values())):
        bad("__metadata__: expected an object of strings")
    base, size = 8 + n, len(data) - 8 - n
    out, spans, skipped = {}, [], []
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(t, dict):
            bad(f"tensor '{name}': expected an object with dtype, shape and data_offsets")
        dt, shape, offs = t.get("dtype"), t.get("shape"), t.get("data_offsets")
        if not isinstance(dt, str) or (dt != "BF16" and dt not in _DTYPES and
                                       dt not in _NO_NUMPY_BITS):
            bad(f"tensor '{name}': dtype {dt!r} is not one of BF16, "
                + ", ".join([*_DTYPES, *_NO_NUMPY_BITS]))
        if (not isinstance(shape, list) or
                not all(type(d) is int and d >= 0 for d in shape)):
            bad(f"tensor '{name}': shape {shape!r} is not a list of sizes")
        if (not isinstance(offs, list) or len(offs) != 2 or
                not all(type(o) is int for o in offs) or not 0 <= offs[0] <= offs[1] <= size):
            bad(f"tensor '{name}': data_offsets {offs!r} are not [begin, end] within "
                f"the {size} bytes of data")
        bits = (16 if dt == "BF16" else _NO_NUMPY_BITS[dt] if dt in _NO_NUMPY_BITS
                else 8 * np.dtype(_DTYPES[dt]).itemsize)
        need = math.prod(shape) * bits  # (exact: no int64 wrap)
        if need % 8 or offs[1] - offs[0] != need // 8:
            bad(f"tensor '{name}': data_offsets {offs} hold {offs[1] - offs[0]} bytes, "
                f"shape {shape} of {dt} needs {need / 8:g}")
        spans.append((offs[0], offs[1], name))
        if dt in _NO_NUMPY_BITS:
            skipped.append(f"'{name}' ({dt})")
            continue
        raw = data[base + offs[0]: base + offs[1]]
        if dt == "BF16":
            a = (np.frombuffer(raw, "<u2").astype("<u4") << 16).view("<f4")
        else:
            a = np.frombuffer(raw, np.dtype(_DTYPES[dt]).newbyteorder("<"))
        out[name] = a.reshape(shape)
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            bad(f"tensors '{n0}' and '{n1}' overlap (data_offsets [{b0}, {e0}] and "
                f"[{b1}, {e1}])")
    if skipped:
        from . import AttncWarning
        warnings.warn(f"{path}: left out {len(skipped)} tensor(s) of a dtype NumPy has no "
                      f"type for: {', '.join(skipped[:5])}{', ...' if len(skipped) > 5 else ''}",
                      AttncWarning, stacklevel=2)
    return out
