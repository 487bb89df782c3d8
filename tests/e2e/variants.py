#!/usr/bin/env python3
"""Attention variants end to end: compile specs with padding, causal+padding,
sliding-window (also with padding lengths), chunked with padding lengths
and cross-attention masks (both causal alignments), with and
without the attention-weights output, and check every compiled kernel with
`attnc-run --check` (y, and probs when the kernel has them) against the
double-precision interpreter, on both code paths (AVX-512 and AVX2, via
ATTNC_ISA) and over T = 1, 7, 97, 300, batch 1..3 and valid lengths that
include 0 and the full length.

Usage: variants.py --work DIR [--cuda-on-host]   (attnc, attnc-run on PATH)
With --cuda-on-host the kernels are the CUDA target's tiled loops built for
this CPU (attnc --target cuda-sm90 --testing-gpu-on-host: blocks and their
thread regions run one after another), one code path, probs output included.
With --cuda-device-prepare DIR they are built for a GPU (--target
cuda-sm90) and the runs recorded in DIR for tests/gpu/cases.py to make there.
Prints one line per run and a closing 'variants: N passed, M failed' line.
"""
import argparse
import os
import subprocess
import sys

# name, extra spec lines, cross
SPECS = [
    ("pad_torch", "d_model: 48\nheads: 3\nmask: padding\nweights: torch_in_proj\n", False),
    ("cpad_gqa", "d_model: 64\nheads: 4\nkv_heads: 2\nmask: causal+padding\n"
                 "weights: separate\nbias: false\n", False),
    ("cpad_tl_probs", "d_model: 40\nheads: 2\nhead_dim: 16\nmask: causal+padding\n"
                      "causal_align: top_left\noutputs: [y, probs]\nweights: separate\n", False),
    ("win1", "d_model: 32\nheads: 2\nmask: sliding_window\nwindow: 1\n", False),
    ("win5_gqa", "d_model: 64\nheads: 4\nkv_heads: 1\nhead_dim: 16\n"
                 "mask: sliding_window\nwindow: 5\nweights: separate\n", False),
    ("win130_probs", "d_model: 48\nheads: 3\nmask: sliding_window\nwindow: 130\n"
                     "outputs: [y, probs]\n", False),
    ("winpad5_gqa_probs", "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\n"
                          "mask: sliding_window+padding\nwindow: 5\nweights: separate\n"
                          "outputs: [y, probs]\n", False),
    ("winpad130_tl", "d_model: 48\nheads: 3\nmask: sliding_window+padding\nwindow: 130\n"
                     "causal_align: top_left\n", False),
    ("chunkpad16_probs", "d_model: 32\nheads: 2\nmask: chunked+padding\nchunk: 16\n"
                         "outputs: [y, probs]\n", False),
    ("cross_none", "d_model: 64\nheads: 4\nmask: none\ncross_attention: true\n"
                   "weights: separate\n", True),
    ("cross_pad", "d_model: 36\nheads: 3\nmask: padding\ncross_attention: true\n"
                  "outputs: [y, probs]\n", True),
    ("cross_causal_br", "d_model: 32\nheads: 2\nmask: causal\ncross_attention: true\n", True),
    ("cross_causal_tl", "d_model: 32\nheads: 2\nmask: causal\ncausal_align: top_left\n"
                        "cross_attention: true\n", True),
    ("cross_cpad", "d_model: 48\nheads: 4\nkv_heads: 2\nhead_dim: 12\n"
                   "mask: causal+padding\ncross_attention: true\nout_proj: false\n"
                   "weights: separate\n", True),
    ("cross_window", "d_model: 32\nheads: 2\nmask: sliding_window\nwindow: 4\n"
                     "cross_attention: true\n", True),
    ("cross_winpad", "d_model: 32\nheads: 2\nmask: sliding_window+padding\nwindow: 4\n"
                     "cross_attention: true\n", True),
]
RUNS = [(1, 1), (7, 2), (97, 3), (300, 2)]  # (seq_len, batch)
ISAS = ["avx512", "avx2"]


def lengths_for(t, b, salt):
    """Valid lengths with 0, 1 and the full length among them."""
    pool = [t, 0, max(1, t // 2), 1, t - 1 if t > 1 else t]
    return [pool[(i + salt) % len(pool)] for i in range(b)]


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env)
    out = p.stdout
    if p.returncode < 0:
        out += f"\n[{cmd[0]} killed by signal {-p.returncode}]"
    return p.returncode, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--cuda-on-host", action="store_true",
                    help="check the CUDA target's loops, built for this CPU")
    ap.add_argument("--cuda-device-prepare", metavar="DIR",
                    help="build for a GPU and record the runs in DIR (tests/gpu/cases.py)")
    args = ap.parse_args()
    rec = None
    if args.cuda_device_prepare:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
        from cases import Recorder
        rec = Recorder(args.cuda_device_prepare)
        args.work = os.path.join(rec.root, "variants")
    isas = ["host"] if args.cuda_on_host or rec else ISAS
    os.makedirs(args.work, exist_ok=True)
    passed = failed = 0

    def report(ok, line, detail=""):
        nonlocal passed, failed
        print(f"{'PASS' if ok else 'FAIL'}: {line}")
        if not ok:
            print(detail)
            print(f"variants: FAIL: {line}\n{detail}", file=sys.stderr, flush=True)
        passed, failed = passed + ok, failed + (not ok)

    for name, body, cross in SPECS:
        path = os.path.join(args.work, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"name: {name}\n{body}")
        lib = os.path.join(args.work, f"lib{name}.so")
        extra = ["--target", "cuda-sm90", "--testing-gpu-on-host"] if args.cuda_on_host else []
        if rec:
            extra = ["--target", "cuda-sm90"]
        rc, out = run(["attnc", path, "-o", lib] + extra)
        if rc != 0:
            report(False, f"compile {name}", out)
            continue
        padding = "padding" in body
        probs = "probs" in body
        for salt, (t, b) in enumerate(RUNS):
            for isa in isas:
                cmd = ["attnc-run", lib, "--seq-len", str(t), "--batch", str(b),
                       "--seed", str(t + 7 * b), "--check"]
                desc = f"{name} {isa} T={t} B={b}"
                if cross:
                    tkv = [5, 13, 40, 129][salt]
                    cmd += ["--kv-seq-len", str(tkv)]
                    desc += f" T_kv={tkv}"
                    if padding:
                        kvl = lengths_for(tkv, b, salt + 1)
                        cmd += ["--kv-lengths", ",".join(map(str, kvl))]
                        desc += f" kv_lengths={kvl}"
                if padding:
                    ls = lengths_for(t, b, salt)
                    cmd += ["--lengths", ",".join(map(str, ls))]
                    desc += f" lengths={ls}"
                if probs:
                    cmd += ["--probs", os.path.join(args.work, f"{name}_{t}_{b}_{isa}.npy")]
                env = dict(os.environ, ATTNC_ISA=isa) if isa != "host" else None
                want = 2 if probs else 1
                if rec:
                    rec.add(f"variants {desc}", cmd[1:], want_checks=want)
                    continue
                rc, out = run(cmd, env)
                checks = [l for l in out.splitlines() if l.startswith("check")]
                ok = rc == 0 and len(checks) == want and all(l.endswith("PASS") for l in checks)
                summary = "; ".join(l.split(":")[1].split(",")[0].strip() for l in checks)
                report(ok, f"{desc}: {summary}", out)
    if rec:
        print(f"variants: {rec.n} runs recorded in {rec.root}, {failed} failed to compile")
        return 1 if failed else 0
    print(f"variants: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
