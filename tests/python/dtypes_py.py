#!/usr/bin/env python3
"""The Python package with bf16/f16 kernels: pack() rounds float32 (and
torch bfloat16) weights to the kernel's weight_dtype exactly as libattnrt's
packFloat does, and forward()/decode() refuse a kernel whose activations are
not float32 with a clear message (the package passes float32 buffers).

Usage: dtypes_py.py WORK   (attnc on PATH, the package on PYTHONPATH)
"""
import os
import subprocess
import sys

import numpy as np
import torch

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

x = rng.standard_normal((1, 5, 48)).astype(np.float32)
try:
    kb.forward(x, pb)
    check(False, "forward of a bf16 kernel is refused")
except attnc.AttncError as e:
    check("dtype is bf16" in str(e) and "float32 activations only" in str(e),
          "forward of a bf16 kernel is refused: " + str(e).split(": ", 1)[1][:60])
sys.exit(0 if ok else 1)
