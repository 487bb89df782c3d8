#!/usr/bin/env python3
"""The Python package with bf16/f16 kernels: pack() rounds float32 (and
torch bfloat16) weights to the kernel's weight_dtype exactly as libattnrt's
packFloat does; forward() rounds x to the kernel's dtype and returns y as
float32 (checked against the float32 kernel on rounded inputs), reads an x
of the kernel's dtype in place (no conversion) and returns y in it (torch
tensors for torch x, the same bits), writes out= of its dtype in place and
refuses a float32 out= with the reason; its KV caches are of its
dtype (NumPy uint16 bf16 bits / float16, torch bfloat16 / float16, written
in place) through forward(k_cache=) and decode() steps and chunks.

Usage: dtypes_py.py WORK   (attnc on PATH, the package on PYTHONPATH)
"""
import os
import subprocess
import sys

import numpy as np
import torch

# The widening code paths (at most AVX-512 without BF16): there the bf16
# kernel computes in float32 on the rounded inputs exactly as the float32
# kernel does, so y differs only by its own rounding. (The vdpbf16ps path
# also rounds the attention output before W_O; attnc-run --check covers it
# with its bound: tests/e2e/dtypes.test.)
os.environ["ATTNC_ISA"] = "x86-avx512"

import attnc

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
ok = True


def check(cond, what):
    global ok
    print(("PASS: " if cond else "FAIL: ") + what)
    ok &= bool(cond)


def compile_(name, extra):
    y = os.path.join(work, name + ".yaml")
    with open(y, "w") as f:
        f.write(f"name: {name}\nd_model: 48\nheads: 3\nmask: causal\nbias: true\n"
                f"weights: gpt2_conv1d\n{extra}")
    lib = os.path.join(work, f"lib{name}.so")
    subprocess.run(["attnc", y, "-o", lib], check=True)
    return attnc.Kernel(lib)


rng = np.random.default_rng(3)
kf = compile_("f32", "")
kb = compile_("bf16", "dtype: bf16\n")
kh = compile_("f16", "dtype: f16\n")
w = [rng.standard_normal(s).astype(np.float32) for s in kf.weight_shapes.values()]
check(kb.info["packed_bytes"] * 2 <= kf.info["packed_bytes"] + 64 * len(w),
      "a bf16 kernel's packed weights take half the bytes of float32's")

# pack(float32) == the C pack of torch's bf16 rounding of the same weights.
pb = kb.pack(w)
bits = [t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16).copy()
        for t in map(torch.from_numpy, w)]
import ctypes as C
ptrs = (C.c_void_p * len(bits))(*[b.ctypes.data for b in bits])
sizes = (C.c_int64 * len(bits))(*[b.size for b in bits])
ref = np.empty(kb.info["packed_bytes"], np.uint8)
rc = kb._pack(ptrs, sizes, len(bits), ref.ctypes.data, ref.size)
check(rc == 0 and np.array_equal(pb, ref),
      "pack(float32) rounds like torch's bfloat16 (round to nearest even)")
# torch bfloat16 tensors (a bf16 state_dict) pack to the same bytes.
pt = kb.pack([torch.from_numpy(a).to(torch.bfloat16) for a in w])
check(np.array_equal(pt, ref), "pack(torch bfloat16 tensors) keeps their bits")

ph = kh.pack(w)
h16 = [a.astype(np.float16) for a in w]
ptrs = (C.c_void_p * len(h16))(*[b.ctypes.data for b in h16])
ref16 = np.empty(kh.info["packed_bytes"], np.uint8)
rc = kh._pack(ptrs, sizes, len(h16), ref16.ctypes.data, ref16.size)
check(rc == 0 and np.array_equal(ph, ref16), "pack(float32) rounds to float16 as NumPy does")

x = rng.standard_normal((2, 7, 48)).astype(np.float32)
# forward() of a bf16/f16 kernel: x rounded to the dtype going in, y back as
# float32. Reference: the float32 kernel on the same rounded inputs and
# weights, y rounded once more (u = 2^-8 bf16, 2^-11 f16) plus float32's
# own error.
from attnc import _to_storage, _from_storage, _abi
for k, p_, dt, u in ((kb, pb, _abi.DTYPE_BF16, 2.0**-8), (kh, ph, _abi.DTYPE_F16, 2.0**-11)):
    rnd = lambda a: _from_storage(_to_storage(a, dt), dt)
    yf = kf.forward(rnd(x), kf.pack([rnd(a) for a in w]))
    y = k.forward(x, p_)
    err = np.abs(y - yf) / (1e-5 + 1.01 * u * np.abs(yf) + 1e-4 * np.abs(yf))
    name = _abi.DTYPES[dt]
    check(y.dtype == np.float32 and err.max() <= 1.0,
          f"forward of a {name} kernel matches float32 on rounded inputs "
          f"(worst {err.max():.2f} of the allowance)")
    # The same comparison can fail: without rounding the inputs the
    # difference is the inputs' rounding, far outside y's own.
    yu = kf.forward(x, kf.pack(w))
    check((np.abs(y - yu) / (1e-5 + 1.01 * u * np.abs(yu) + 1e-4 * np.abs(yu))).max() > 1.0,
          f"{name}: the reference on unrounded inputs is outside the allowance")
# NumPy uint16 arrays are bf16 bit patterns (x and weights, any kernel), as
# the caches are: never integers.
xb = _to_storage(x, _abi.DTYPE_BF16)
wb = [_to_storage(a, _abi.DTYPE_BF16) for a in w]
yb = kb.forward(xb, kb.pack(wb))  # x of the kernel's dtype: y in it too
check(yb.dtype == np.uint16 and
      np.array_equal(_from_storage(yb, _abi.DTYPE_BF16), kb.forward(x, pb)) and
      np.array_equal(kb.pack(wb), pb) and
      np.array_equal(kf.forward(xb, kf.pack(wb)),
                     kf.forward(_from_storage(xb, _abi.DTYPE_BF16),
                                kf.pack([_from_storage(a, _abi.DTYPE_BF16) for a in wb]))),
      "uint16 x and weights are bf16 bit patterns (bf16 and float32 kernels)")
try:
    kb.forward(x, pb, out=np.empty((2, 7, 48), np.float32))
    check(False, "forward of a bf16 kernel with a float32 out= is refused")
except attnc.AttncError as e:
    check("out must be a writable C-contiguous CPU torch.bfloat16 tensor or NumPy uint16"
          in str(e) and "got an array of dtype float32" in str(e),
          "forward of a bf16 kernel with a float32 out= is refused: " + str(e)[:60])

# x of the kernel's dtype (torch bfloat16 / float16 tensors, NumPy uint16 /
# float16 arrays) is read in place: no conversion runs (_f32, _to_storage),
# y comes back in the dtype as x's kind, with the bits of the rounded
# float32 path; out= and probs_out= of the dtype are written in place.
for k, dt, tt in ((kb, _abi.DTYPE_BF16, torch.bfloat16), (kh, _abi.DTYPE_F16, torch.float16)):
    name = _abi.DTYPES[dt]
    pk = k.pack(w)
    xt = torch.from_numpy(x).to(tt)
    y32 = k.forward(xt.float().numpy(), pk)  # rounded in, float32 out
    calls = []
    real_f32, real_store = attnc._f32, attnc._to_storage
    attnc._f32 = lambda *a: (calls.append("_f32"), real_f32(*a))[1]
    attnc._to_storage = lambda *a: (calls.append("_to_storage"), real_store(*a))[1]
    try:
        yt = k.forward(xt, pk)
        yo = torch.empty(2, 7, 48, dtype=tt)
        ro = k.forward(xt, pk, out=yo)
        xn = xt.view(torch.int16).numpy().view(np.uint16) if dt == _abi.DTYPE_BF16 \
            else xt.numpy()
        yn = k.forward(xn, pk)
    finally:
        attnc._f32, attnc._to_storage = real_f32, real_store
    check(not calls, f"{name}: x of the dtype is not converted (calls: {calls})")
    check(torch.is_tensor(yt) and yt.dtype == tt and
          np.array_equal(yt.float().numpy(), y32),
          f"{name}: torch x of the dtype gives a torch y of it, the float32 path's values")
    check(ro is yo and torch.equal(yo, yt), f"{name}: out= of the dtype is written in place")
    # a non-contiguous x of the dtype: copied once, y still of the dtype
    xnc = torch.from_numpy(np.ascontiguousarray(x.transpose(1, 0, 2))).to(tt).transpose(0, 1)
    ync = k.forward(xnc, pk)
    check(not xnc.is_contiguous() and torch.is_tensor(ync) and ync.dtype == tt and
          torch.equal(ync, yt), f"{name}: a non-contiguous torch x of the dtype gives the "
          "same y of the dtype")
    check(isinstance(yn, np.ndarray) and yn.dtype == xn.dtype and
          np.array_equal(yn, yt.view(torch.int16).numpy().view(np.uint16)
                         if dt == _abi.DTYPE_BF16 else yt.numpy()),
          f"{name}: a NumPy x of the dtype gives a NumPy y of it, the same bits")

# A bf16 cross-attention kernel with probs: x_kv of the dtype read as it
# is while x is float32 (and the reverse), probs in the dtype with x or
# out= of it, probs_out= of the dtype written in place, and an out= that
# is the zero-copy x itself refused (it would be overwritten while read).
kc_ = compile_("bf16x", "dtype: bf16\ncross_attention: true\noutputs: [y, probs]\n")
pc = kc_.pack(w)
xa = rng.standard_normal((2, 7, 48)).astype(np.float32)
xkv = rng.standard_normal((2, 5, 48)).astype(np.float32)
ta, tkv = torch.from_numpy(xa).to(torch.bfloat16), torch.from_numpy(xkv).to(torch.bfloat16)
y0, p0 = kc_.forward(ta.float().numpy(), pc, x_kv=tkv.float().numpy(), want_probs=True)
y1, p1 = kc_.forward(ta.float().numpy(), pc, x_kv=tkv, want_probs=True)
y2, p2 = kc_.forward(ta, pc, x_kv=tkv.float().numpy(), want_probs=True)
check(y1.dtype == np.float32 and np.array_equal(y1, y0) and np.array_equal(p1, p0),
      "bf16 cross: x_kv of the dtype with a float32 x: float32 y and probs, the same values")
check(torch.is_tensor(y2) and y2.dtype == torch.bfloat16 and torch.is_tensor(p2) and
      p2.dtype == torch.bfloat16 and np.array_equal(y2.float().numpy(), y0) and
      np.array_equal(p2.float().numpy(), p0),
      "bf16 cross: x of the dtype: y and probs of the dtype, the same values")
yo = np.empty((2, 7, 48), np.uint16)
y3, p3 = kc_.forward(xa, pc, x_kv=xkv, out=yo, want_probs=True)
po = torch.empty(2, 3, 7, 5, dtype=torch.bfloat16)
y4, p4 = kc_.forward(ta, pc, x_kv=tkv, probs_out=po)
check(y3 is yo and p3.dtype == np.uint16 and p4 is po and
      np.array_equal(_from_storage(p3, _abi.DTYPE_BF16), p0) and torch.equal(p4, p2),
      "bf16 cross: out= of the dtype gives probs of it; probs_out= of it is written in place")
xv = np.ascontiguousarray(ta.view(torch.int16).numpy().view(np.uint16))
try:
    kc_.forward(xv, pc, x_kv=tkv, out=xv[:, :, :48])
    check(False, "bf16 cross: out= that is the zero-copy x is refused")
except attnc.ArgumentError as e:
    check("overlap in memory" in str(e),
          "bf16 cross: out= that is the zero-copy x is refused: " + str(e)[:70])

# KV caches of a bf16/f16 kernel hold its dtype (new_cache: uint16 bf16
# bits / float16; torch.bfloat16 / float16 tensors written in place).
# Prefill 6 tokens with forward, a chunk of 5 with decode, then 4 steps:
#  * the caches are bit-identical to the float32 kernel's caches (same
#    rounded inputs and weights, same calls) rounded to the dtype: K and V
#    of a token depend on its own x only;
#  * y agrees with one forward over the 15 tokens within 4 of the
#    dtype's rounding steps of |y| (the cached keys are rounded, forward's
#    own are not: attnc-run --check bounds that exactly, dtypes.test);
#    the same calls with the chunk one position off are far outside.
kfd = compile_("f32dec", "decode: true\nmax_seq_len: 24\n")
for name, extra, dt, u, np_t in (("bf16dec", "dtype: bf16\n", _abi.DTYPE_BF16, 2.0**-8, np.uint16),
                                 ("f16dec", "dtype: f16\n", _abi.DTYPE_F16, 2.0**-11, np.float16)):
    k = compile_(name, extra + "decode: true\nmax_seq_len: 24\n")
    rnd = lambda a: _from_storage(_to_storage(a, dt), dt)
    xs = rng.standard_normal((2, 15, 48)).astype(np.float32)
    ws = [a / np.sqrt(48.0) for a in w]  # softmax rows that are not one-hot
    p_, pf = k.pack(ws), kfd.pack([rnd(a) for a in ws])

    def run(kern, packed, caches, shift=0):
        kc, vc = caches
        ys = [kern.forward(xs[:, :6], packed, k_cache=kc, v_cache=vc)]
        ys.append(kern.decode(xs[:, 6:11], packed, np.array([6 + shift, 6]), kc, vc))
        for t in range(11, 15):
            ys.append(kern.decode(xs[:, t:t + 1], packed, np.array([t, t]), kc, vc))
        return np.concatenate(ys, 1)

    kc, vc = k.new_cache(2)
    check(kc.dtype == np_t and kc.shape == (2, 3, 24, 16),
          f"{_abi.DTYPES[dt]}: new_cache gives {kc.dtype} caches")
    y = run(k, p_, (kc, vc))
    xs_f = rnd(xs)
    # the float32 kernel on the rounded inputs, same calls
    kf_c = kfd.new_cache(2)
    ys = [kfd.forward(xs_f[:, :6], pf, k_cache=kf_c[0], v_cache=kf_c[1])]
    ys.append(kfd.decode(xs_f[:, 6:11], pf, np.array([6, 6]), *kf_c))
    for t in range(11, 15):
        ys.append(kfd.decode(xs_f[:, t:t + 1], pf, np.array([t, t]), *kf_c))
    same = all(np.array_equal(c[:, :, :15], _to_storage(np.ascontiguousarray(f[:, :, :15]), dt))
               for c, f in ((kc, kf_c[0]), (vc, kf_c[1])))
    check(same, f"{_abi.DTYPES[dt]}: the caches are the float32 kernel's rounded to "
          f"{_abi.DTYPES[dt]}, bit for bit")
    yf = k.forward(xs, p_)
    gate = 4 * u * np.abs(yf).max()
    e = np.abs(y - yf).max()
    check(y.dtype == np.float32 and e <= gate,
          f"{_abi.DTYPES[dt]}: prefill + a chunk + steps == one forward within 4 rounding "
          f"steps of max|y| ({e:.2e} <= {gate:.2e})")
    bad = run(k, p_, k.new_cache(2), shift=1)
    check(np.abs(bad - yf).max() > gate,
          f"{_abi.DTYPES[dt]}: a chunk one position off is outside it "
          f"({np.abs(bad - yf).max():.2e})")
    # torch caches of the dtype, written in place (zero-copy)
    tt = torch.bfloat16 if dt == _abi.DTYPE_BF16 else torch.float16
    kt = torch.zeros(2, 3, 24, 16, dtype=tt)
    vt = torch.zeros(2, 3, 24, 16, dtype=tt)
    yt = run(k, p_, (kt, vt))
    bits = (lambda t: t.view(torch.int16).numpy().view(np.uint16)) if dt == _abi.DTYPE_BF16 \
        else (lambda t: t.numpy())
    check(np.array_equal(yt, y) and np.array_equal(bits(kt), kc) and np.array_equal(bits(vt), vc),
          f"{_abi.DTYPES[dt]}: torch {str(tt)[6:]} caches are written in place, same bits")
    # decode of a torch x of the dtype: read in place, y a torch tensor of
    # it with the bits of the float32 x's step (both rounded the same way)
    kc2, vc2 = k.new_cache(2)
    k.forward(xs[:, :6], p_, k_cache=kc2, v_cache=vc2)
    c3 = [c.copy() for c in (kc2, vc2)]
    xt6 = torch.from_numpy(xs[:, 6]).to(tt)
    yd = k.decode(xt6, p_, np.array([6, 6]), kc2, vc2)
    yd32 = k.decode(xt6.float().numpy(), p_, np.array([6, 6]), *c3)
    check(torch.is_tensor(yd) and yd.dtype == tt and yd.shape == (2, 48) and
          np.array_equal(yd.float().numpy(), yd32),
          f"{_abi.DTYPES[dt]}: decode of a torch x of the dtype returns a torch y of it, "
          "the float32 x's values")
    for what, call in (
            ("float32 caches", lambda: k.decode(xs[:, 6], p_, np.array([6, 6]),
                                                 np.zeros((2, 3, 24, 16), np.float32),
                                                 np.zeros((2, 3, 24, 16), np.float32))),
            ("decode with a float32 out=",
             lambda: k.decode(xs[:, 6], p_, np.array([6, 6]), kc, vc,
                              out=np.empty((2, 48), np.float32)))):
        try:
            call()
            check(False, f"{_abi.DTYPES[dt]}: {what} refused")
        except attnc.ArgumentError as e:
            check("of dtype float32" in str(e),
                  f"{_abi.DTYPES[dt]}: {what} refused: {str(e)[:110]}")
    # decode's out= of the dtype: written in place, the same bits as the
    # returned y of the same step on a copy of the caches
    kc3, vc3 = k.new_cache(2)
    k.forward(xs[:, :6], p_, k_cache=kc3, v_cache=vc3)
    c4 = [c.copy() for c in (kc3, vc3)]
    od = torch.empty(2, 48, dtype=tt)
    rd = k.decode(xt6, p_, np.array([6, 6]), kc3, vc3, out=od)
    check(rd is od and torch.equal(od, k.decode(xt6, p_, np.array([6, 6]), *c4)),
          f"{_abi.DTYPES[dt]}: decode's out= of the dtype is written in place")
sys.exit(0 if ok else 1)
