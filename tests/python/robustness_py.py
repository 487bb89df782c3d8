#!/usr/bin/env python3
"""The Python package refuses what would crash it or corrupt memory, with
an exception, never a signal (the robustness issue, items 12 and 13):

  * kernel libraries go through libattnrt's loader before ctypes opens
    them: a truncated .so (SIGBUS in dlopen before), a weights table
    longer than the layout's, a directory, an empty file, a shared object
    without attnc_query each raise attnc.AttncError with attnc-run's exit
    code as `.code` (11, 15, 11, 11, 12); without libattnrt, Kernel()
    raises AttncError saying how to point at it;
  * every buffer the library writes (out, probs_out, k_cache, v_cache;
    forward and decode) must be a writable, C-contiguous, aligned float32
    NumPy array or CPU torch tensor of the exact shape that overlaps no
    other buffer of the call: a read-only np.memmap, a bytes object, a
    read-only view of one, a transposed, float64 or misaligned array, an
    out that is x raise attnc.ArgumentError naming the argument and leave
    the memory as it was; a float32 torch tensor as out= is written in
    place;
  * (--torch) bfloat16 and float16 tensors as x, weights (a state_dict or
    a list), map_names' fused q/k/v and save_safetensors work, converted by
    torch, and give exactly what their float32 conversion gives; a
    bfloat16 cache, out or packed raises ArgumentError, not TypeError.

Every case runs in a child process: one that dies on a signal is a FAIL
(and the next cases go on in a fresh child). The kernel is the
hand-written one (tests/support/fake_kernel.c), reshaped with
ATTNC_FAKE_KERNEL. Prints PASS/FAIL per case and a summary; exit 1 on any
failure.

Usage: robustness_py.py --kernel libattnc_fake_kernel.so --work DIR [--torch]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import numpy as np  # noqa: E402
import attnc  # noqa: E402
from attnc import _abi  # noqa: E402

B, T = 2, 5  # batch, seq_len of every call
ARGS = None
CASES = []


def case(torch=False):
    def register(fn):
        CASES.append((fn.__name__, torch, fn))
        return fn
    return register


def kernel(fake=""):
    os.environ["ATTNC_FAKE_KERNEL"] = fake
    return attnc.Kernel(ARGS.kernel)


def setup(fake=""):
    """(kernel, packed, x) with random weights and input."""
    k = kernel(fake)
    rng = np.random.default_rng(3)
    w = [rng.standard_normal(s).astype(np.float32) * 0.3 for s in k.weight_shapes.values()]
    x = rng.standard_normal((B, T, k.d_model)).astype(np.float32)
    return k, k.pack(w), x


def refused(call, *words, error=None, status=_abi.ERR_BUFFER_SIZE):
    """The message of the ArgumentError (or `error`) `call` raises, checked
    to hold every word of `words` and, for an ArgumentError, `status`."""
    error = error or attnc.ArgumentError
    try:
        call()
    except error as e:
        msg = str(e)
        missing = [w for w in words if w not in msg]
        assert not missing, f"message lacks {missing}: {msg}"
        if error is attnc.ArgumentError:
            assert e.status == status, f"status {e.status}, expected {status}: {msg}"
        return msg
    raise AssertionError(f"no {error.__name__} raised")


def load_refused(path, code, reason, *words, fake=""):
    """The message of the AttncError Kernel(path) raises (path None: the
    fake kernel under ATTNC_FAKE_KERNEL=fake), checked to have `.code`
    `code`, `.reason` `reason` and every word of `words`."""
    os.environ["ATTNC_FAKE_KERNEL"] = fake
    try:
        attnc.Kernel(ARGS.kernel if path is None else path)
    except attnc.ArgumentError as e:
        raise AssertionError(f"ArgumentError for a library: {e}")
    except attnc.AttncError as e:
        msg = str(e)
        assert e.code == code and e.reason == reason, \
            f"code {e.code} ({e.reason}), expected {code} ({reason}): {msg}"
        missing = [w for w in words if w not in msg]
        assert not missing, f"message lacks {missing}: {msg}"
        return msg
    raise AssertionError("Kernel() accepted it")


# -- loading ---------------------------------------------------------------
@case()
def truncated_library():
    data = open(ARGS.kernel, "rb").read()
    path = os.path.join(ARGS.work, "truncated.so")
    with open(path, "wb") as f:
        f.write(data[: len(data) * 2 // 5])
    msg = load_refused(path, 11, "open_failed", "truncated", path)
    return f"code 11: {msg.replace(ARGS.work + '/', '')}"


@case()
def bad_weight_count():
    msg = load_refused(None, 15, "bad_metadata", "1000", fake="num_weights=1000")
    load_refused(None, 15, "bad_metadata", fake="num_weights=3")
    return f"code 15: {msg.split(': ', 1)[1]}"


@case()
def not_kernel_libraries():
    empty = os.path.join(ARGS.work, "empty.so")
    open(empty, "wb").close()
    load_refused(ARGS.work, 11, "open_failed", "directory")
    load_refused(empty, 11, "open_failed")
    load_refused(attnc.libattnrt_path(), 12, "no_query", "attnc_query")
    return "directory 11, empty file 11, libattnrt itself 12"


@case()
def no_libattnrt():
    env = dict(os.environ, ATTNC_LIBATTNRT=os.path.join(ARGS.work, "no-such-libattnrt.so"))
    code = ("import sys, attnc\n"
            "try:\n"
            f"    attnc.Kernel({ARGS.kernel!r})\n"
            "except attnc.AttncError as e:\n"
            "    print(e); sys.exit(0 if e.code is None else 3)\n"
            "sys.exit(4)\n")
    p = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True,
                       cwd=os.path.join(HERE, "..", "..", "python"))
    assert p.returncode == 0, f"exit {p.returncode}: {p.stdout}"
    assert "ATTNC_LIBATTNRT" in p.stdout and "no-such-libattnrt.so" in p.stdout, p.stdout
    return "AttncError names $ATTNC_LIBATTNRT"


# -- out= and the other written buffers (NumPy) -----------------------------
@case()
def readonly_memmap_out():
    k, packed, x = setup()
    path = os.path.join(ARGS.work, "out.bin")
    np.full((B, T, k.out_dim), 7.0, np.float32).tofile(path)
    ro = np.memmap(path, dtype=np.float32, mode="r", shape=(B, T, k.out_dim))
    msg = refused(lambda: k.forward(x, packed, out=ro), "out", "read-only")
    assert (np.fromfile(path, np.float32) == 7.0).all(), "the file was written"
    rw = np.memmap(path, dtype=np.float32, mode="r+", shape=(B, T, k.out_dim))
    y = k.forward(x, packed, out=rw)
    assert y is rw and np.array_equal(np.asarray(rw), k.forward(x, packed)), "r+ memmap"
    return msg.split(": ", 1)[1]


@case()
def bytes_out():
    k, packed, x = setup()
    b = bytes(B * T * k.out_dim * 4)
    refused(lambda: k.forward(x, packed, out=b), "out", "type bytes")
    view = np.frombuffer(b, np.float32).reshape(B, T, k.out_dim)
    refused(lambda: k.forward(x, packed, out=view), "out", "read-only")
    refused(lambda: k.forward(x, packed, out=bytearray(len(b))), "out", "type bytearray")
    assert b == bytes(len(b)), "the bytes object was written"
    return "bytes, a read-only view of bytes, bytearray"


@case()
def noncontiguous_out():
    k, packed, x = setup()
    out = np.full((B, k.out_dim, T), 7.0, np.float32).transpose(0, 2, 1)
    msg = refused(lambda: k.forward(x, packed, out=out), "out", "not C-contiguous")
    assert (out == 7.0).all()
    return msg.split(": ", 1)[1]


@case()
def wrong_out():
    k, packed, x = setup()
    refused(lambda: k.forward(x, packed, out=np.zeros((B, T, k.out_dim))), "out",
            "dtype float64")
    refused(lambda: k.forward(x, packed, out=np.zeros((B, T + 1, k.out_dim), np.float32)),
            "out", "of shape (2, 6, 16)")
    n = B * T * k.out_dim
    odd = np.frombuffer(bytearray(n * 4 + 1), np.float32, count=n, offset=1)
    refused(lambda: k.forward(x, packed, out=odd.reshape(B, T, k.out_dim)), "out",
            "4-byte aligned")
    refused(lambda: k.forward(x, packed, out=x), "out and x overlap")
    refused(lambda: k.forward(x, packed, out=packed[:4 * n].view(np.float32).reshape(
        B, T, k.out_dim)), "out and packed overlap")
    return "float64, wrong shape, misaligned, out=x, out inside packed"


@case()
def out_in_place():
    k, packed, x = setup()
    want = k.forward(x, packed)
    out = np.full((B, T, k.out_dim), 7.0, np.float32)
    assert k.forward(x, packed, out=out) is out and np.array_equal(out, want), "3-D"
    out2 = np.full((T, k.out_dim), 7.0, np.float32)
    got = k.forward(x[1], packed, out=out2)
    assert got is out2 and np.array_equal(out2, want[1]), "2-D x with a 2-D out"
    return "3-D out, and a 2-D out for a 2-D x"


@case()
def probs_and_cache_buffers():
    k, packed, x = setup("features=4")
    pshape = (B, k.heads, T, T)
    path = os.path.join(ARGS.work, "probs.bin")
    np.zeros(pshape, np.float32).tofile(path)
    ro = np.memmap(path, dtype=np.float32, mode="r", shape=pshape)
    refused(lambda: k.forward(x, packed, probs_out=ro), "probs_out", "read-only")
    refused(lambda: k.forward(x, packed, probs_out=bytes(ro.nbytes)), "probs_out", "type bytes")
    kd, packed_d, xd = setup("features=8")
    kc, vc = kd.new_cache(B, 8)
    np.zeros(kc.shape, np.float32).tofile(path)
    ro = np.memmap(path, dtype=np.float32, mode="r", shape=kc.shape)
    refused(lambda: kd.forward(xd, packed_d, k_cache=kc, v_cache=ro), "v_cache",
            "read-only")
    refused(lambda: kd.forward(xd, packed_d, k_cache=bytes(kc.nbytes), v_cache=vc),
            "k_cache", "type bytes")
    tok, pos = xd[:, :1], np.array([T, T], np.int32)
    dshape = (B, 1, kd.out_dim)
    np.zeros(dshape, np.float32).tofile(path)
    ro_out = np.memmap(path, dtype=np.float32, mode="r", shape=dshape)
    refused(lambda: kd.decode(tok, packed_d, pos, kc, vc, out=ro_out), "out", "read-only")
    refused(lambda: kd.decode(tok, packed_d, pos, kc, vc, out=bytes(ro_out.nbytes)),
            "out", "type bytes")
    inside = kc.reshape(-1)[:B * kd.out_dim].reshape(dshape)
    refused(lambda: kd.decode(tok, packed_d, pos, kc, vc, out=inside),
            "out and k_cache overlap")
    # One buffer as both caches: the library's ATTNC_ERR_ARGS (abi.md), as
    # C and C++ callers get it; a partial overlap is a buffer error.
    refused(lambda: kd.forward(xd, packed_d, k_cache=kc, v_cache=kc),
            "k_cache and v_cache are one buffer", status=_abi.ERR_ARGS)
    refused(lambda: kd.decode(tok, packed_d, pos, kc, kc),
            "k_cache and v_cache are one buffer", status=_abi.ERR_ARGS)
    both = np.zeros((2 * kc.size,), np.float32)
    refused(lambda: kd.forward(xd, packed_d, k_cache=both[:kc.size].reshape(kc.shape),
                               v_cache=both[kc.size // 2:kc.size // 2 + kc.size].reshape(kc.shape)),
            "k_cache and v_cache overlap")
    assert (kc == 0).all() and (vc == 0).all(), "a cache was written"
    return "probs_out, k_cache, v_cache, decode's out"


@case()
def chunked_positions():
    # A chunked mask counts chunks from position 0: a forward elsewhere is
    # refused before the call (it came back as a bare "returned 7").
    k, packed, x = setup("mask=5,window=4")
    k.forward(x, packed, positions=[0] * B)
    msg = refused(lambda: k.forward(x, packed, positions=[0] * (B - 1) + [3]),
                  "positions[1] is 3", "chunked mask", status=_abi.ERR_ARGS)
    return msg.split(": ", 1)[1]


@case()
def negative_threads():
    k, packed, x = setup()
    msg = refused(lambda: k.forward(x, packed, num_threads=-1), "num_threads",
                  status=_abi.ERR_ARGS)
    refused(lambda: k.forward(x, packed, num_threads=True), "num_threads", "True",
            status=_abi.ERR_ARGS)  # (a bool is no thread count)
    # The status the docs give it: docs/embedding.md and ArgumentError's.
    with open(os.path.join(HERE, "..", "..", "docs", "embedding.md")) as f:
        doc = " ".join(f.read().split())
    m = re.search(r"a negative `num_threads`[^(]*\(`(\w+)`\)", doc)
    assert m and "ATTNC_ERR_ARGS".endswith(m.group(1)), \
        f"docs/embedding.md gives a negative num_threads {m and m.group(1)}, not ATTNC_ERR_ARGS"
    assert "_THREADS" not in attnc.ArgumentError.__doc__, attnc.ArgumentError.__doc__
    return f"status {_abi.STATUS_NAMES[_abi.ERR_ARGS]}, as documented: {msg.split(': ', 1)[1]}"


@case()
def kernel_copies():
    import copy
    import pickle
    k, packed, x = setup()
    assert copy.copy(k) is k and copy.deepcopy({"k": k})["k"] is k
    try:
        pickle.dumps(k)
        raise AssertionError("a Kernel pickled")
    except TypeError as e:
        assert "attnc.Kernel(" in str(e), e
    return "copies share the loaded library; pickle says to load it again"


# -- torch -----------------------------------------------------------------
@case()
def python_api_errors():
    k, packed, x = setup()
    sd = {f"h.0.attn.{n}": np.ones(s, np.float32) for n, s in k.weight_shapes.items()}
    first = next(iter(sd))
    e = refused(lambda: k.pack({n: v for n, v in sd.items() if n != first}, prefix="h.0.attn."),
                first[len("h.0.attn."):], error=attnc.AttncError)
    try:
        k.pack({n: v for n, v in sd.items() if n != first}, prefix="h.0.attn.")
    except attnc.AttncError as err:
        assert err.reason == "missing", err.reason
    # Integer or bool activations are refused (uint16: bf16 bit patterns).
    for bad in (np.int64, np.int32, np.bool_):
        refused(lambda: k.forward(x.astype(bad), packed), "x must be floating point",
                str(np.dtype(bad)), status=_abi.ERR_ARGS)
    big = x.astype(np.float64)
    big[1, 2, 3] = 1e300
    refused(lambda: k.forward(big, packed), "x: element (1, 2, 3) (1e+300) is out of float32 range",
            status=_abi.ERR_ARGS)
    w = [np.ones(s, np.float64) for s in k.weight_shapes.values()]
    w[0][0, 1] = -1e39
    refused(lambda: k.pack(w), "element (0, 1) (-1e+39) is out of float32 range",
            status=_abi.ERR_ARGS)
    # Integer weights are refused (the loader refuses them too), a wrong
    # shape names its reason; uint16 is bf16 bits, never integers.
    for bad in (np.int64, np.int32, np.bool_):
        wi = [np.ones(s, np.float32) for s in k.weight_shapes.values()]
        wi[0] = wi[0].astype(bad)
        try:
            k.pack(wi)
            raise AssertionError(f"{bad} weight packed")
        except attnc.AttncError as err:
            assert err.reason == "dtype" and "is not a floating type" in str(err), err
    ws_ = [np.ones(s, np.float32) for s in k.weight_shapes.values()]
    ws_[0] = ws_[0].T.copy() if ws_[0].ndim == 2 and ws_[0].shape[0] != ws_[0].shape[1] \
        else np.ones(ws_[0].shape + (1,), np.float32)
    try:
        k.pack(ws_)
        raise AssertionError("wrong shape packed")
    except attnc.AttncError as err:
        assert err.reason == "shape", err.reason
    # One workspace per thread, for every kernel, kept until released.
    y = k.forward(x, packed)
    ws = attnc._THREAD.ws
    k2 = kernel()
    assert np.array_equal(k2.forward(x, packed), y) and attnc._THREAD.ws is ws
    attnc.release_workspace()
    assert attnc._THREAD.ws is None and np.array_equal(k.forward(x, packed), y)
    refused(lambda: attnc.from_hf(ARGS.work, None), "module: expected", error=TypeError)
    refused(lambda: attnc.from_hf(ARGS.work, "h.0.attn", set="decode=true"),
            "set: expected a mapping", error=TypeError)
    return "pack's missing tensor (reason missing), float64 past float32's range, integer weights (reason dtype), a wrong shape (reason shape), one " \
        "workspace per thread, from_hf's module and set types"


@case(torch=True)
def torch_out_in_place():
    import torch
    k, packed, x = setup()
    want = k.forward(x, packed)
    out = torch.full((B, T, k.out_dim), 7.0)
    ptr = out.data_ptr()
    got = k.forward(torch.from_numpy(x), packed, out=out)
    assert got is out and out.data_ptr() == ptr, "not the caller's tensor"
    assert np.array_equal(out.numpy(), want), "values differ from the NumPy call"
    out2 = torch.full((T, k.out_dim), 7.0)
    assert k.forward(x[0], packed, out=out2) is out2 and np.array_equal(out2.numpy(), want[0])
    big = torch.zeros(3 * B * T * k.out_dim)  # a contiguous view inside a larger tensor
    view = big[B * T * k.out_dim: 2 * B * T * k.out_dim].view(B, T, k.out_dim)
    k.forward(x, packed, out=view)
    assert np.array_equal(view.numpy(), want) and float(big[:B * T * k.out_dim].abs().sum()) == 0
    return "float32 CPU tensors (3-D, 2-D, a view at an offset) written in place"


@case(torch=True)
def torch_bad_out():
    import torch
    k, packed, x = setup()
    shape = (B, T, k.out_dim)
    nc = torch.full((B, k.out_dim, T), 7.0).transpose(1, 2)
    msg = refused(lambda: k.forward(x, packed, out=nc), "out", "not contiguous")
    assert bool((nc == 7.0).all())
    refused(lambda: k.forward(x, packed, out=torch.zeros(shape, dtype=torch.float64)),
            "out", "dtype float64")
    refused(lambda: k.forward(x, packed, out=torch.zeros(shape, dtype=torch.bfloat16)),
            "out", "dtype bfloat16")
    refused(lambda: k.forward(x, packed, out=torch.zeros(shape, requires_grad=True)),
            "out", "requires grad")
    refused(lambda: k.forward(x, packed, out=torch.empty(shape, device="meta")),
            "out", "device meta")
    xt = torch.from_numpy(x.copy())
    refused(lambda: k.forward(xt, packed, out=xt), "out and x overlap")
    return msg.split(": ", 1)[1]


@case(torch=True)
def torch_bf16_x():
    import torch
    k, packed, x = setup()
    xb = torch.from_numpy(x).bfloat16()
    got = k.forward(xb, packed)
    want = k.forward(xb.float().numpy(), packed)
    assert np.array_equal(got, want), "bf16 x differs from its float32 conversion"
    xh = torch.from_numpy(x).half()
    assert np.array_equal(k.forward(xh, packed), k.forward(xh.float().numpy(), packed))
    assert np.array_equal(k.forward(xb[0], packed), want[0]), "2-D bf16 x"
    err = float(np.abs(got - k.forward(x, packed)).max())
    return f"bf16 and f16 x equal their float32 conversion (bf16 vs float32 x: {err:.1e})"


@case()
def pack_warns_unused():
    import warnings
    k = kernel()
    rng = np.random.default_rng(1)
    sd = {f"h.0.attn.{n}": rng.standard_normal(s).astype(np.float32)
          for n, s in k.weight_shapes.items()}
    extra = {"h.0.attn.q_norm.weight": np.ones(8, np.float32),
             "h.0.attn.q_layernorm.bias": np.ones(8, np.float32),   # Persimmon's
             "h.0.attn.k_ln.weight": np.ones(16, np.float32),       # MPT's qk_ln
             "h.0.attn.rotary_emb.inv_freq": np.ones(4, np.float32),
             "h.0.attn.q_proj.bias": np.ones(16, np.float32),
             "h.0.attn.bias": np.ones((4, 4), np.float32),       # GPT-2's mask buffer
             "h.1.attn.q_norm.weight": np.ones(8, np.float32)}    # another layer
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        packed = k.pack(dict(sd, **extra), prefix="h.0.attn.")
    got = sorted(str(w.message) for w in ws)
    assert all(w.category is attnc.AttncWarning for w in ws), ws
    assert len(got) == 5, got
    assert "'h.0.attn.k_ln.weight' is a QK-norm weight" in got[0], got
    assert "'h.0.attn.q_layernorm.bias' is a QK-norm bias" in got[1], got
    assert "'h.0.attn.q_norm.weight' is a QK-norm weight" in got[2], got
    assert "'h.0.attn.q_proj.bias' is a bias this kernel does not add" in got[3], got
    assert "'h.0.attn.rotary_emb.inv_freq' is a rotary embedding table" in got[4], got
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        same = k.pack(sd, prefix="h.0.attn.")
    assert not ws and np.array_equal(packed, same), [str(w.message) for w in ws]
    bad = dict(sd)
    bad["h.0.attn.c_proj.weight"] = sd["h.0.attn.c_proj.weight"].copy()
    bad["h.0.attn.c_proj.weight"][0, 2] = np.inf
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        k.pack(bad, prefix="h.0.attn.")
    got = [str(w.message) for w in ws]
    assert len(got) == 1 and "'c_proj.weight': 1 non-finite value (the first at flat index 2: inf)" \
        in got[0], got
    return ("pack warns of a QK-norm weight, a bias and a rotary table it does not use, "
            "and of an inf weight")


@case(torch=True)
def torch_bf16_state_dict():
    import torch
    k = kernel()
    torch.manual_seed(0)
    sd = {f"h.0.attn.{n}": (torch.randn(*s) * 0.3).bfloat16()
          for n, s in k.weight_shapes.items()}
    packed = k.pack(sd, prefix="h.0.attn.")
    want = k.pack({n: t.float() for n, t in sd.items()}, prefix="h.0.attn.")
    assert packed.dtype == np.uint8 and np.array_equal(packed, want), "packed differs"
    assert np.array_equal(k.pack(list(sd.values())), want), "a list of bf16 tensors"
    assert np.array_equal(k.pack([t.half() for t in sd.values()]),
                          k.pack([t.half().float() for t in sd.values()])), "f16"
    x = torch.randn(B, T, k.d_model).bfloat16()
    assert np.array_equal(k.forward(x, packed), k.forward(x.float(), want))
    refused(lambda: k.forward(x, torch.from_numpy(packed).bfloat16()), "packed",
            "bfloat16")
    return "pack(bf16 state_dict) equals pack of its float32 conversion; bf16 packed refused"


@case(torch=True)
def torch_buffers_cache_probs():
    import torch
    k, packed, x = setup("features=8")
    kc, vc = (torch.zeros(B, k.kv_heads, 8, k.head_dim) for _ in range(2))
    kn, vn = k.new_cache(B, 8)
    y = k.forward(torch.from_numpy(x), packed, k_cache=kc, v_cache=vn)
    k.forward(x, packed, k_cache=kn, v_cache=vc)
    assert np.array_equal(kc.numpy(), kn) and np.array_equal(vc.numpy(), vn), "cache"
    bf = torch.zeros(B, k.kv_heads, 8, k.head_dim, dtype=torch.bfloat16)
    refused(lambda: k.forward(x, packed, k_cache=bf, v_cache=vn), "k_cache",
            "dtype bfloat16")
    tok = torch.from_numpy(x[:, :1].copy()).bfloat16()
    out = torch.zeros(B, 1, k.out_dim)
    got = k.decode(tok, packed, [T, T], kc, vc, out=out)
    assert got is out and bool(torch.isfinite(out).all()) and float(out.abs().sum()) > 0
    kp, packed_p, xp = setup("features=4")
    probs = torch.full((B, kp.heads, T, T), 7.0)
    y, p = kp.forward(torch.from_numpy(xp), packed_p, probs_out=probs)
    y2, p2 = kp.forward(xp, packed_p, want_probs=True)
    assert p is probs and np.array_equal(probs.numpy(), p2) and np.array_equal(y, y2)
    return "float32 tensor caches, decode out and probs_out in place; bf16 cache refused"


@case(torch=True)
def torch_bf16_weights_module():
    import torch
    from attnc import weights
    torch.manual_seed(1)
    t = {f"l.self.{n}.{s}": torch.randn(4, 4).bfloat16() if s == "weight"
         else torch.randn(4).bfloat16()
         for n in ("query", "key", "value") for s in ("weight", "bias")}
    w, b = weights.map_names(t, ["in_proj_weight", "in_proj_bias"], prefix="l.")
    want = torch.cat([t[f"l.self.{n}.weight"] for n in ("query", "key", "value")]).float()
    assert w.dtype == np.float32 and np.array_equal(w, want.numpy()), "fused q/k/v"
    path = os.path.join(ARGS.work, "bf16.safetensors")
    weights.save_safetensors(path, {"a": t["l.self.query.weight"]})
    header = open(path, "rb").read(200)
    back = weights.load_safetensors(path)["a"]
    assert b'"BF16"' in header and np.array_equal(back, t["l.self.query.weight"].float().numpy())
    return "map_names fuses bf16 q/k/v; save_safetensors writes a bf16 tensor as BF16"


@case(torch=True)
def torch_module_edges():
    import torch
    import attnc.torch as at
    k, packed, x = setup("features=5,mask=3")  # lengths, probs; causal+padding
    m = at.AttnModule(k, packed=packed)
    xt = torch.from_numpy(x)
    with torch.no_grad():
        for shape in ((0, T, k.d_model), (B, 0, k.d_model)):
            y, probs = m(torch.zeros(shape), need_weights=True)
            assert tuple(y.shape) == shape[:2] + (k.out_dim,), y.shape
            assert tuple(probs.shape) == (shape[0], k.heads, shape[1], shape[1]), probs.shape
        for bad in ([T + 1] * B, [-1] * B):
            try:
                m(xt, lengths=torch.tensor(bad))
                raise AssertionError(f"lengths {bad} accepted")
            except RuntimeError as e:
                assert f"lengths[0] is {bad[0]}, expected 0..{T} (seq_len)" in str(e), e
        try:
            m(torch.zeros(B, T, k.d_model, device="meta"))
            raise AssertionError("a meta x accepted")
        except RuntimeError as e:
            assert "x is on meta: the kernels run on the CPU" in str(e), e
        want = m(xt, lengths=torch.tensor([T] * B))
        assert torch.equal(want, m(xt)), "full lengths differ from none"
        # lengths as a list or a NumPy array, as Kernel.forward takes them
        short = [T - 1 - i % T for i in range(B)]
        want = m(xt, lengths=torch.tensor(short, dtype=torch.int32))
        assert torch.equal(want, m(xt, lengths=short)), "lengths as a list"
        assert torch.equal(want, m(xt, lengths=np.array(short))), "lengths as a NumPy array"
        pos = [3 * i for i in range(B)]
        want = m(xt, positions=torch.tensor(pos, dtype=torch.int32))
        assert torch.equal(want, m(xt, positions=pos)), "positions as a list"
    return ("batch/seq 0 give empty y and probs; lengths out of 0..T and a meta x raise; "
            "lengths as a list or NumPy array, positions as a list")


# -- driver ----------------------------------------------------------------
def child(names):
    """Runs the cases `names`, one line each: BEGIN name, then PASS/FAIL."""
    by_name = {n: fn for n, _, fn in CASES}
    for n in names:
        print(f"BEGIN {n}", flush=True)
        try:
            print(f"PASS: {n}: {by_name[n]()}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"FAIL: {n}: {type(e).__name__}: {e}", flush=True)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--torch", action="store_true")
    ap.add_argument("--child", nargs="*")
    ARGS = ap.parse_args()
    os.makedirs(ARGS.work, exist_ok=True)
    if ARGS.child is not None:
        child(ARGS.child)
        return 0
    todo = [n for n, t, _ in CASES if t == ARGS.torch]
    passes = failures = 0
    while todo:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--kernel", ARGS.kernel,
                            "--work", ARGS.work, "--child", *todo],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        current = None
        for line in p.stdout.splitlines():
            if line.startswith("BEGIN "):
                current = line[6:]
                continue
            print(line)
            passes += line.startswith("PASS")
            failures += line.startswith("FAIL")
            todo.remove(current)
            current = None
        if current is not None:  # the child died in this case
            why = f"signal {-p.returncode}" if p.returncode < 0 else f"exit {p.returncode}"
            tail = p.stderr.strip().splitlines()[-1:] or [""]
            print(f"FAIL: {current}: the process died ({why}) {tail[0]}")
            failures += 1
            todo.remove(current)
        elif p.returncode != 0:
            print(f"FAIL: the child exited {p.returncode}: {p.stderr.strip()[-400:]}")
            failures += 1
            break
    print(f"python robustness{' (torch)' if ARGS.torch else ''}: {passes} passed, "
          f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
