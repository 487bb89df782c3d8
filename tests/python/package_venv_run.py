#!/usr/bin/env python3
"""Run by the python of a virtual environment that `pip install ./python`
installed attnc into (python-package.test), from a fresh environment
(env -i, no PYTHONPATH, no ATTNC_* variables): the package, its libattnrt
and its attnc executable come from the environment's site-packages;
attnc.compile + forward against float64 NumPy.

  package_venv_run.py CACHE_DIR
"""
import os
import sys

import numpy as np

import attnc
from attnc import _compile

site = os.path.dirname(os.path.dirname(os.path.abspath(attnc.__file__)))
inside = lambda p: os.path.realpath(p).startswith(os.path.realpath(sys.prefix) + os.sep)
print(f"package in the environment: {inside(attnc.__file__)} ({os.path.basename(site)})")
print(f"libattnrt in the package: {inside(attnc.libattnrt_path())}")
print(f"attnc executable in the package: {inside(_compile.attnc_binary())}")
print(f"environment: {sorted(k for k in os.environ if k.startswith(('ATTNC', 'PYTHON')))}")

spec = {"name": "venv_mha", "d_model": 12, "heads": 3, "mask": "none",
        "weights": "separate", "bias": False}
k = attnc.compile(spec, cache_dir=sys.argv[1])
rng = np.random.default_rng(3)
w = {n: (rng.standard_normal(s) * 0.3).astype(np.float32) for n, s in k.weight_shapes.items()}
x = rng.standard_normal((2, 6, 12)).astype(np.float32)
y = k.forward(x, k.pack(w))
x64 = x.astype(np.float64)
sh = lambda t: t.reshape(2, 6, 3, 4).transpose(0, 2, 1, 3)
q, kk, v = (sh(x64 @ w[f"{n}_proj.weight"].T.astype(np.float64)) for n in "qkv")
s = q @ kk.transpose(0, 1, 3, 2) / 2.0
p = np.exp(s - s.max(-1, keepdims=True))
p /= p.sum(-1, keepdims=True)
ref = (p @ v).transpose(0, 2, 1, 3).reshape(2, 6, 12) @ w["o_proj.weight"].T
err = float(np.abs(y - ref).max())
print(f"{'PASS' if err < 1e-5 else 'FAIL'}: compiled {k.name} (compiled now: {k.compiled}) "
      f"and ran it: max |y - float64| = {err:.1e}")
