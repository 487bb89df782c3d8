#!/usr/bin/env python3
"""attnc's Python package on an f16 (or bf16) kernel (argv[1]) with x from
argv[2]: a finite value past float16's range (65504; bf16's 3.38953e+38)
in x or in a weight is an ArgumentError naming the element (it would go in
as inf); the file's x, which holds 65504 itself, runs. Prints one line per
case."""
import sys

import numpy as np

import attnc

k = attnc.Kernel(sys.argv[1])
w = {n: np.zeros(s, np.float32) for n, s in k.weight_shapes.items()}
p = k.pack(w)
x = np.load(sys.argv[2])
print("ok", k.forward(x, p).shape)
big = 70000 if k.info["dtype"] == "f16" else 3.4e38
x[0, 1, 2] = big
try:
    k.forward(x, p)
    print(f"taken: x with {big:g}")
except attnc.ArgumentError as e:
    print("refused:", e)
w["o_proj.bias"] = np.full(16, -big, np.float32)
try:
    k.pack(w)
    print(f"taken: a weight of {-big:g}")
except attnc.ArgumentError as e:
    print("refused:", e)
