#!/usr/bin/env python3
"""The Python package on a CUDA kernel (features has cuda): it reads the
metadata and packs (NAME_pack is a host function) but refuses forward and
decode with AttncError (status ATTNC_ERR_DEVICE) before calling the
library, since the package passes host memory only and a CUDA kernel's
forward takes device pointers. The kernel is the hand-written one
(tests/support/fake_kernel.c) playing a CUDA kernel through
ATTNC_FAKE_KERNEL=isa=6,features=16 (its forward would run on host memory
all the same, so a call that got through would be seen: y would change).
The same library as a CPU kernel still runs.

Usage: cuda_py.py --kernel libattnc_fake_kernel.so
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numpy as np  # noqa: E402
import attnc  # noqa: E402
from attnc import _abi  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True)
    a = ap.parse_args()
    fails = 0

    def check(ok, what):
        nonlocal fails
        print(f"{'PASS' if ok else 'FAIL'}: {what}")
        fails += not ok

    rng = np.random.default_rng(1)
    os.environ["ATTNC_FAKE_KERNEL"] = "isa=6,features=16,selected_isa=0xffffffff"
    k = attnc.Kernel(a.kernel)
    info = k.info
    check(k.is_cuda and "cuda" in k.features and info["isa"] == "cuda-sm90"
          and info["selected_isa"] == "none",
          f"metadata of a CUDA kernel (isa {info['isa']}, features {sorted(k.features)}, "
          f"selected_isa {info['selected_isa']})")
    weights = [rng.standard_normal(s).astype(np.float32) for s in k.weight_shapes.values()]
    packed = k.pack(weights)
    check(packed.size == k.packed_bytes, "pack on the host")
    x = rng.standard_normal((1, 4, k.d_model)).astype(np.float32)
    out = np.full((1, 4, k.out_dim), 7.0, np.float32)
    try:
        k.forward(x, packed, out=out)
        check(False, "forward refuses a CUDA kernel (it returned)")
    except attnc.ArgumentError as e:
        check(False, f"forward refuses with AttncError, not ArgumentError ({e})")
    except attnc.AttncError as e:
        msg = str(e)
        print(f"  {msg}")
        check(e.status == _abi.ERR_DEVICE and "targets cuda-sm90" in msg
              and "device pointers" in msg and "--device cuda" in msg
              and (out == 7.0).all(),
              "forward refuses a CUDA kernel before calling it")
    try:
        k.decode(x[:, :1], packed, positions=[0], k_cache=None, v_cache=None)
        check(False, "decode refuses a CUDA kernel (it returned)")
    except attnc.AttncError as e:
        check(e.status == _abi.ERR_DEVICE and "targets cuda-sm90" in str(e),
              "decode refuses a CUDA kernel")

    os.environ["ATTNC_FAKE_KERNEL"] = ""
    c = attnc.Kernel(a.kernel)  # the same library: its metadata as a CPU kernel
    y = c.forward(x, c.pack(weights))
    check(not c.is_cuda and y.shape == (1, 4, c.out_dim) and np.isfinite(y).all(),
          "the same library as a CPU kernel runs")
    print("FAIL" if fails else "ALL PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
