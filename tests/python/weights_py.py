#!/usr/bin/env python3
"""attnc.weights: save_safetensors/load_safetensors round trips (F32, F16,
F64, BF16, BOOL, metadata) and map_names (prefix, BERT/OPT spellings,
missing and ambiguous tensors), without a kernel. Prints PASS lines."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from attnc import load_safetensors, map_names, save_safetensors  # noqa: E402

rng = np.random.default_rng(3)
with tempfile.TemporaryDirectory() as d:
    t = {"a.w": rng.standard_normal((3, 5)).astype(np.float32),
         "b": rng.standard_normal(7).astype(np.float64),
         "c": rng.standard_normal((2, 2)).astype(np.float16),
         "mask": np.tril(np.ones((4, 4), np.bool_))}
    p = os.path.join(d, "t.safetensors")
    save_safetensors(p, t, metadata={"format": "pt"})
    back = load_safetensors(p)
    assert list(back) == list(t)
    for k in t:
        assert back[k].dtype == t[k].dtype and np.array_equal(back[k], t[k]), k
    print("PASS: safetensors round trip keeps dtypes and values")
    save_safetensors(p, {"x": t["a.w"]}, dtype="BF16")
    x = load_safetensors(p)["x"]
    u = t["a.w"].view(np.uint32).astype(np.uint64)
    want = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    assert x.dtype == np.float32 and np.array_equal(x, want)
    # ties: 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even (1); 1 + 3*2^-8 up.
    save_safetensors(p, {"x": np.array([1 + 2**-8, 1 + 3 * 2**-8, -1 - 2**-9], np.float32)},
                     dtype="BF16")
    assert list(load_safetensors(p)["x"]) == [1.0, 1 + 2**-6, -1.0]
    # Every 7919th bit pattern (NaNs of both signs, infinities, subnormals,
    # the largest finites that round to inf) against the 64-bit formula.
    from attnc.weights import bf16_bits
    pats = np.arange(0, 2**32, 7919, dtype=np.uint64)
    pats = np.concatenate([pats, [0x7F7FFFFF, 0xFF7FFFFF, 0xFFFFFFFF, 0xFFFF8000,
                                  0x7FFFFFFF, 0x7F800001]]).astype(np.uint32)
    f = pats.view(np.float32)
    u = pats.astype(np.uint64)
    want = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    want[np.isnan(f)] = ((u[np.isnan(f)] >> 16) | 0x40).astype(np.uint16)
    assert np.array_equal(bf16_bits(f), want)
    print("PASS: BF16 written rounded to nearest even, read back as float32")
    with open(p, "rb") as f:
        raw = f.read()
    assert int.from_bytes(raw[:8], "little") % 8 == 0 and raw[8:9] == b"{"
    print("PASS: header length is a multiple of 8 and the header is JSON")
    # A broken file is a ValueError naming it and what is wrong, never
    # another exception, a wrong array or a read that blocks (a FIFO).
    def broken(name, data, want):
        q = os.path.join(d, name)
        if data is None:
            os.mkfifo(q)
        else:
            with open(q, "wb") as f:
                f.write(data)
        try:
            load_safetensors(q)
        except ValueError as e:
            assert str(e).startswith(q + ": ") and want in str(e), (name, e)
            return
        raise AssertionError(f"{name}: no error")
    hdr = lambda h: len(h).to_bytes(8, "little") + h  # noqa: E731
    ok = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    import json
    broken("short", b"\x01\x02", "too short")
    broken("past", (1 << 40).to_bytes(8, "little") + b"{}", "runs past the file")
    broken("notjson", hdr(b"{nope"), "not JSON")
    broken("array", hdr(b"[1, 2]"), "not a JSON object")
    broken("nested", hdr(b"[" * 100000 + b"]" * 100000), "nested too deeply")
    broken("twice", hdr(b'{"x": ' + json.dumps(ok).encode() + b', "x": ' +
                        json.dumps(ok).encode() + b"}") + bytes(8), "names 'x' twice")
    broken("meta", hdr(json.dumps({"__metadata__": {"a": 1}, "x": ok}).encode()) + bytes(8),
           "__metadata__: expected an object of strings")
    broken("dtype", hdr(json.dumps({"x": dict(ok, dtype="Q4_K")}).encode()) + bytes(8),
           "dtype 'Q4_K'")
    broken("outside", hdr(json.dumps({"x": dict(ok, data_offsets=[0, 16])}).encode()) + bytes(8),
           "not [begin, end] within the 8 bytes")
    broken("size", hdr(json.dumps({"x": dict(ok, shape=[3])}).encode()) + bytes(8),
           "shape [3] of F32 needs 12")
    broken("overlap", hdr(json.dumps({"x": ok, "y": dict(ok, shape=[1], data_offsets=[4, 8])})
                          .encode()) + bytes(8), "'x' and 'y' overlap")
    broken("fifo", None, "not a regular file (a FIFO)")
    broken("f6size", hdr(json.dumps({"x": dict(ok, dtype="F6_E2M3", shape=[3],
                                                  data_offsets=[0, 2])}).encode()) + bytes(8),
           "shape [3] of F6_E2M3 needs 2.25")
    # torch.save's zip and legacy pickle under a .safetensors name
    broken("torchzip.safetensors", b"PK\x03\x04" + bytes(60), "a PyTorch checkpoint")
    broken("torchpkl.safetensors", b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19." + bytes(40),
           "a PyTorch checkpoint")
    print("PASS: a malformed file or a FIFO is a ValueError naming it")
    # Every safetensors dtype: the unsigned and complex ones as NumPy's;
    # FP8, FP6 and FP4 (no NumPy type) checked and left out with a warning,
    # the file's other tensors read (an FP8 checkpoint's norms, say).
    import warnings
    from attnc import AttncWarning
    u = {"u16": np.arange(6, dtype=np.uint16).reshape(2, 3), "u32": np.arange(3, dtype=np.uint32),
         "u64": np.arange(2, dtype=np.uint64), "c64": np.array([1 + 2j], np.complex64)}
    raw = b"".join(a.tobytes() for a in u.values())
    h, off = {}, 0
    for k, a in u.items():
        h[k] = {"dtype": k.upper(), "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    f32 = np.array([1.5, -2.0], np.float32)
    for name, dt, shape, nbytes in (("e4", "F8_E4M3", [2, 2], 4), ("e5", "F8_E5M2", [3], 3),
                                    ("e8", "F8_E8M0", [1], 1), ("f4", "F4", [4], 2),
                                    ("f6", "F6_E3M2", [4], 3)):
        h[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nbytes]}
        raw += bytes(range(1, nbytes + 1))
        off += nbytes
    h["w"] = {"dtype": "F32", "shape": [2], "data_offsets": [off, off + 8]}
    raw += f32.tobytes()
    p = os.path.join(d, "mixed.safetensors")
    with open(p, "wb") as f:
        f.write(hdr(json.dumps(h).encode()) + raw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = load_safetensors(p)
    assert sorted(back) == sorted([*u, "w"]), sorted(back)
    for k, a in u.items():
        assert back[k].dtype == a.dtype and np.array_equal(back[k], a), k
    assert np.array_equal(back["w"], f32)
    msgs = [str(w.message) for w in caught if issubclass(w.category, AttncWarning)]
    assert len(msgs) == 1 and "left out 5 tensor(s)" in msgs[0] and "'e4' (F8_E4M3)" in msgs[0], msgs
    print("PASS: U16/U32/U64/C64 read as NumPy's; FP8/FP6/FP4 tensors left out with a warning")

names = ["q_proj.weight", "q_proj.bias", "k_proj.weight", "v_proj.weight", "o_proj.weight"]
bert = {f"encoder.layer.{i}.attention.{n}": i * 10 + j
        for i in range(2) for j, n in enumerate(["self.query.weight", "self.query.bias",
                                                 "self.key.weight", "self.value.weight",
                                                 "output.dense.weight", "output.LayerNorm.weight"])}
got = map_names(bert, names, prefix="encoder.layer.1.attention.")
assert got == [10, 11, 12, 13, 14], got
print("PASS: BERT names under a layer prefix map onto q/k/v/o_proj")
opt = {"out_proj.weight": 1, "q_proj.weight": 2, "q_proj.bias": 3, "k_proj.weight": 4,
       "v_proj.weight": 5}
assert map_names(opt, names) == [2, 3, 4, 5, 1]
print("PASS: OPT's out_proj maps onto o_proj")
try:
    map_names(bert, names)
    raise AssertionError("no error without a prefix")
except KeyError as e:
    assert "encoder.layer.0.attention." in str(e), e
    print("PASS: missing without a prefix names the prefixes that have it")
try:
    map_names(dict(opt, **{"o_proj.weight": 9}), names)
    raise AssertionError("no error for two spellings")
except ValueError as e:
    assert "o_proj.weight" in str(e) and "out_proj.weight" in str(e), e
    print("PASS: two spellings of one tensor are an error")
try:
    map_names({"h.2.self_attention.query_key_value.weight": 1}, ["q_proj.weight"],
              prefix="h.2.self_attention.")
    raise AssertionError("no error for a fused QKV tensor")
except KeyError as e:
    assert "fuses Q/K/V in h.2.self_attention.query_key_value.weight" in str(e) and \
        "attnc.weights.split_fused" in str(e), e
    print("PASS: a fused QKV tensor where q_proj is expected names split_fused")

torch_names = ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
parts = {f"self.{p}.{w}": np.full((2, 2) if w == "weight" else 2, i * 2 + (w == "bias"), np.float32)
         for i, p in enumerate(["query", "key", "value"]) for w in ["weight", "bias"]}
parts.update({"output.dense.weight": np.eye(2, dtype=np.float32), "output.dense.bias": np.ones(2)})
wi, bi, wo, bo = map_names(parts, torch_names)
assert wi.shape == (6, 2) and list(wi[:, 0]) == [0, 0, 2, 2, 4, 4], wi
assert list(bi) == [1, 1, 3, 3, 5, 5], bi
assert np.array_equal(wo, np.eye(2))
print("PASS: BERT query/key/value stack into torch_in_proj's in_proj_weight/bias")
for extra in ({"in_proj_weight": np.zeros((6, 2), np.float32)},
              {"in_proj_bias": np.zeros(6, np.float32)}):
    try:
        map_names(dict(parts, **extra), torch_names)
        raise AssertionError(f"no error for {list(extra)} beside self.query/key/value")
    except ValueError as e:
        name = list(extra)[0]
        assert f"two tensors for '{name}'" in str(e) and "self.query." in str(e) and \
            "a separate part of it" in str(e), e
print("PASS: the fused in_proj_weight/bias beside a separate Q/K/V part is an error")

# T5: a later block's relative_attention_bias is block 0's (the stack's
# owner, as libattnrt's loader reads it); a block with its own (UMT5) keeps it.
t5 = {f"encoder.block.{b}.layer.0.SelfAttention.{n}.weight": 10 * b + i
      for b in range(3) for i, n in enumerate(["q", "k", "v", "o"])}
t5["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = 99
t5["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = 77
t5_names = ["q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight",
            "relative_attention_bias.weight"]
assert map_names(t5, t5_names, prefix="encoder.block.2.layer.0.SelfAttention.") == \
    [20, 21, 22, 23, 99]
own = dict(t5, **{"encoder.block.2.layer.0.SelfAttention.relative_attention_bias.weight": 5})
assert map_names(own, t5_names, prefix="encoder.block.2.layer.0.SelfAttention.")[4] == 5
print("PASS: a later T5 block reads block 0's relative_attention_bias")
