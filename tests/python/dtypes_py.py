#!/usr/bin/env python3
"""The Python package with bf16/f16 kernels: pack() rounds float32 (and
torch bfloat16) weights to the kernel's weight_dtype exactly as libattnrt's
packFloat does; forward() rounds x to the kernel's dtype and returns y as
float32 (checked against the float32 kernel on rounded inputs), and refuses
the caller's own float32 buffers (out=, probs_out=, caches) for such a
kernel with the reason.

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
try:
    kb.forward(x, pb, out=np.empty((2, 7, 48), np.float32))
    check(False, "forward of a bf16 kernel with out= is refused")
except attnc.AttncError as e:
    check("dtype is bf16" in str(e) and "float32 activations only" in str(e),
          "forward of a bf16 kernel with out= is refused: " + str(e).split(": ", 1)[1][:50])
sys.exit(0 if ok else 1)
