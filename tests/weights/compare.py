#!/usr/bin/env python3
"""compare.py REF.npy OUT.npy... [--atol A]: max |out - ref| per file, and
whether all outputs are bitwise equal to the first one."""
import sys

import numpy as np

args = sys.argv[1:]
atol = 1e-4
if "--atol" in args:
    i = args.index("--atol")
    atol = float(args[i + 1])
    del args[i:i + 2]
ref = np.load(args[0])
outs = [np.load(p) for p in args[1:]]
bad = 0
for p, y in zip(args[1:], outs):
    err = float(np.abs(y.astype(np.float64) - ref).max()) if y.shape == ref.shape else float("inf")
    ok = err <= atol
    bad += not ok
    print(f"{'PASS' if ok else 'FAIL'}: {p.rsplit('/', 1)[-1]}: max_abs_err {err:.2e} (atol {atol:g})")
same = all(np.array_equal(outs[0], y) for y in outs[1:])
print(f"identical: {'yes' if same else 'no'}")
sys.exit(1 if bad else 0)
