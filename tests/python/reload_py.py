#!/usr/bin/env python3
"""attnc.Kernel on a library that changed while this process holds it.

ctypes never unloads a library, and dlopen hands back a library it has
already mapped (by its name, or by its file's inode) instead of loading the
file again. So, all in one process:
  1. k.so compiled with scale 0.5 and loaded; the spec compiled again with
     scale 0.01 to the same path (attnc writes a new file and renames it
     over the old one) and loaded again: the new kernel's metadata and
     results, not the first library's;
  2. the same file loaded twice unchanged: both work;
  3. the library truncated in place (same inode, still mapped here): a
     clear AttncError (code 11), not SIGBUS;
  4. a FIFO and /dev/zero: refused (code 11) without being read; one copy
     per version of a file;
  5. attnc.compile's cached library truncated while this process has it
     loaded: compiled again, not SIGBUS.
Each step prints PASS or FAIL; a signal kills the script (lit's FAIL).

  reload_py.py --work DIR   (attnc on PATH)
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
import attnc  # noqa: E402

SPEC = "name: rl\nd_model: 32\nheads: 2\nmask: causal\nweights: torch_in_proj\nscale: {}\n"
failed = 0


def report(ok, what):
    global failed
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'}: {what}", flush=True)


def compile_to(work, scale, lib):
    y = os.path.join(work, f"s{scale}.yaml")
    with open(y, "w") as f:
        f.write(SPEC.format(scale))
    subprocess.run(["attnc", y, "-o", lib], check=True)


def run(k, x, w):
    packed = k.pack(w)
    return k.forward(x, packed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--torch", action="store_true",
                    help="only the attnc.torch.AttnModule checks (reload-torch.test)")
    args = ap.parse_args()
    work = args.work
    os.makedirs(work, exist_ok=True)
    lib = os.path.join(work, "k.so")
    rng = np.random.default_rng(3)
    d = 32
    w = {"in_proj_weight": rng.standard_normal((3 * d, d)).astype(np.float32),
         "in_proj_bias": rng.standard_normal(3 * d).astype(np.float32),
         "out_proj.weight": rng.standard_normal((d, d)).astype(np.float32) * 0.2,
         "out_proj.bias": rng.standard_normal(d).astype(np.float32)}
    x = rng.standard_normal((1, 9, d)).astype(np.float32)
    if args.torch:
        torch_checks(work, w, x)
        return 1 if failed else 0

    compile_to(work, 0.5, lib)
    k1 = attnc.Kernel(lib)
    y1 = run(k1, x, w)
    compile_to(work, 0.01, lib)
    k2 = attnc.Kernel(lib)
    y2 = run(k2, x, w)
    report(abs(k1.info["scale"] - 0.5) < 1e-12 and abs(k2.info["scale"] - 0.01) < 1e-12
           and float(np.abs(y1 - y2).max()) > 1e-3,
           f"rebuilt library reloaded: scale {k1.info['scale']} then {k2.info['scale']}, "
           f"outputs differ by {float(np.abs(y1 - y2).max()):.3g}")
    # the first kernel still runs its own code
    report(np.array_equal(run(k1, x, w), y1), "the first kernel still computes its own results")

    k3 = attnc.Kernel(lib)
    report(np.array_equal(run(k3, x, w), y2), "the same file loaded again unchanged")

    with open(lib, "r+b") as f:
        f.truncate(os.path.getsize(lib) // 2)
    try:
        attnc.Kernel(lib)
        report(False, "truncated in place: loaded")
    except attnc.AttncError as e:
        report(e.code == 11 and "k.so" in str(e), f"truncated in place: code {e.code}: {e}")

    # Not a regular file: refused by the loader without reading it (the
    # copy is not attempted: a FIFO would block, /dev/zero never end).
    fifo = os.path.join(work, "fifo.so")
    os.mkfifo(fifo)
    codes = []
    for p in (fifo, "/dev/zero"):
        try:
            attnc.Kernel(p)
            codes.append("loaded")
        except attnc.AttncError as e:
            codes.append(e.code)
    report(codes == [11, 11], f"a FIFO and /dev/zero: codes {codes}")
    # Kernels of one unchanged file share one copy.
    report(attnc._private_copy(lib) == attnc._private_copy(lib) != lib
           if os.path.getsize(lib) > 0 else True, "one copy per version of a file")

    cache = os.path.join(work, "cache")
    spec = {"name": "rc", "d_model": 32, "heads": 2}
    kc = attnc.compile(spec, cache_dir=cache)
    so = os.path.join(kc.cache_entry, "kernel.so")
    with open(so, "r+b") as f:
        f.truncate(os.path.getsize(so) // 2)
    kc2 = attnc.compile(spec, cache_dir=cache)
    report(kc2.compiled, "a cached library truncated while loaded: compiled again")

    print(f"reload_py: {7 - failed} passed, {failed} failed")
    return 1 if failed else 0


def torch_checks(work, w, x):
    """attnc.torch.AttnModule keeps the library's path: a library rebuilt
    there from another spec is refused, not run on the weights packed for
    the old one (it ran the new kernel on them); the same spec compiled
    again runs."""
    import torch
    import attnc.torch  # noqa: F401
    lib2 = os.path.join(work, "m.so")
    compile_to(work, 0.5, lib2)
    m = attnc.torch.AttnModule(attnc.Kernel(lib2), weights=w)
    xt = torch.from_numpy(x)
    with torch.no_grad():
        y0 = m(xt).numpy()
    compile_to(work, 0.5, lib2)
    with torch.no_grad():
        report(np.array_equal(m(xt).numpy(), y0), "AttnModule: its spec compiled again: runs")
    compile_to(work, 0.01, lib2)
    try:
        with torch.no_grad():
            m(xt)
        report(False, "AttnModule: a library of another spec at its path: ran")
    except attnc.AttncError as e:
        report("is not the kernel library this AttnModule packed its weights for" in str(e),
               f"AttnModule: a library of another spec at its path: {e}")
    print(f"reload_torch: {2 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
