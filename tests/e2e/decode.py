#!/usr/bin/env python3
"""KV-cache decode end to end: compile specs with decode: true (causal,
causal+padding, sliding windows of 1, 5 and 130, a window and a chunk with
padding lengths, GQA/MQA, head_dim not a multiple of the vector width, no
output projection, top-left alignment)
and check, on both code paths (AVX-512 and AVX2, via ATTNC_ISA):
  - `attnc-run --decode-steps K --check`: prefill T-K tokens, decode K
    tokens one at a time, all T rows against the interpreter's forward over
    T tokens (T = 1, 7, 97, 300; batch 1..3; K = 1, about T/3, and T);
  - attnc-decode-test: mixed prompt lengths per sequence (0, 1, the
    longest, random), batched decode steps at mixed positions, every row
    equal to one forward over the sequence to 1e-5, on 1 and 2 threads.

Usage: decode.py --work DIR [--decode-test PATH]   (attnc, attnc-run on PATH)
Prints one line per run and a closing 'decode: N passed, M failed' line.
"""
import argparse
import os
import subprocess
import sys

# name, extra spec lines
SPECS = [
    ("dec_gpt2", "d_model: 96\nheads: 3\nmask: causal\n"),
    ("dec_gqa", "d_model: 64\nheads: 4\nkv_heads: 2\nmask: causal\n"
                "weights: separate\nbias: false\n"),
    ("dec_mqa_hd12", "d_model: 48\nheads: 4\nkv_heads: 1\nhead_dim: 12\n"
                     "mask: causal\nweights: separate\n"),
    ("dec_cpad", "d_model: 64\nheads: 2\nmask: causal+padding\n"),
    ("dec_win1", "d_model: 32\nheads: 2\nmask: sliding_window\nwindow: 1\n"),
    ("dec_win5_gqa", "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\n"
                     "mask: sliding_window\nwindow: 5\nweights: separate\n"),
    ("dec_win130", "d_model: 48\nheads: 3\nmask: sliding_window\nwindow: 130\n"),
    ("dec_winpad5_gqa", "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\n"
                        "mask: sliding_window+padding\nwindow: 5\nweights: separate\n"),
    ("dec_chunkpad6", "d_model: 48\nheads: 3\nmask: chunked+padding\nchunk: 6\n"),
    ("dec_noproj_tl", "d_model: 40\nheads: 2\nhead_dim: 20\nmask: causal\n"
                      "causal_align: top_left\nout_proj: false\n"),
]
RUNS = [(1, 1), (7, 2), (97, 3), (300, 2)]  # (seq_len, batch)
ISAS = ["avx512", "avx2"]


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
    ap.add_argument("--decode-test", default="attnc-decode-test",
                    help="the attnc-decode-test binary")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    passed = failed = 0

    def report(ok, line, detail=""):
        nonlocal passed, failed
        print(f"{'PASS' if ok else 'FAIL'}: {line}")
        if not ok:
            print(detail)
            print(f"decode: FAIL: {line}\n{detail}", file=sys.stderr, flush=True)
        passed, failed = passed + ok, failed + (not ok)

    for name, body in SPECS:
        path = os.path.join(args.work, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"name: {name}\n{body}decode: true\n")
        lib = os.path.join(args.work, f"lib{name}.so")
        rc, out = run(["attnc", path, "-o", lib])
        if rc != 0:
            report(False, f"compile {name}", out)
            continue
        for t, b in RUNS:
            for k in sorted({1, t // 3 + 1, t}):
                for isa in ISAS:
                    cmd = ["attnc-run", lib, "--seq-len", str(t), "--batch", str(b),
                           "--seed", str(t + 7 * b + k), "--decode-steps", str(k),
                           "--check"]
                    desc = f"{name} {isa} T={t} B={b} decode-steps={k}"
                    rc, out = run(cmd, dict(os.environ, ATTNC_ISA=isa))
                    checks = [l for l in out.splitlines() if l.startswith("check")]
                    ok = rc == 0 and len(checks) == 1 and checks[0].endswith("PASS")
                    summary = checks[0].split(":")[1].split(",")[0].strip() if checks else ""
                    report(ok, f"{desc}: {summary}", out)
        for isa in ISAS:
            for threads, batch, steps, longest in [(1, 3, 4, 20), (2, 5, 9, 70)]:
                cmd = [args.decode_test, lib, "--batch", str(batch), "--steps", str(steps),
                       "--max-prompt", str(longest), "--threads", str(threads),
                       "--seed", str(len(name) + threads)]
                rc, out = run(cmd, dict(os.environ, ATTNC_ISA=isa))
                ok = rc == 0 and out.rstrip().endswith("PASS")
                report(ok, f"{name} {isa} prefill+decode: {out.strip().splitlines()[-1] if out.strip() else ''}", out)
    print(f"decode: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
