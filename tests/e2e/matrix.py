#!/usr/bin/env python3
"""End-to-end matrix: compile generated specs with attnc and check every
compiled kernel against the double-precision interpreter with attnc-run.

Covers heads 1..16, MQA/GQA, d_model not a multiple of 16, head_dim not
equal to d_model/heads, masks none/causal, all three weight layouts, with
and without biases/output projection, explicit scales, T = 1, 7, 64, 300
and batch 1..3. A metamorphic pass recompiles some specs with the graph
rewrites disabled (--no-fuse-qkv --no-heads-as-views): that path lowers
slices, head splits and merges as real copies and must agree as well.

Usage: matrix.py --work DIR [--dump-check]   (attnc, attnc-run on PATH)
Prints one line per run and a closing 'N passed, M failed' line.
"""
import argparse
import os
import subprocess
import sys

# name, d_model, heads, kv_heads, head_dim, mask, weights, bias, out_proj, scale
# (d_model and the fused N cover both the 32-column GEMM blocks and their
# scalar tails; head_dim covers the scalar and the vector attention paths.)
SPECS = [
    ("h1_gpt2", 8, 1, None, None, "none", "gpt2_conv1d", True, True, None),
    ("h2_d20_torch_causal", 20, 2, None, None, "causal", "torch_in_proj", True, True, None),
    ("h3_mqa_sep", 36, 3, 1, 12, "causal", "separate", True, True, None),
    ("h4_gqa_nobias", 100, 4, 2, 25, "none", "separate", False, True, None),
    ("h16_gpt2_causal", 64, 16, None, None, "causal", "gpt2_conv1d", True, True, None),
    ("h6_noout", 48, 6, 3, 8, "causal", "separate", True, False, None),
    ("h8_hd9_torch", 72, 8, None, None, "none", "torch_in_proj", True, True, 0.3),
    ("h5_wide_heads", 30, 5, 5, 7, "causal", "separate", False, True, None),
    ("h12_gpt2_noout", 96, 12, None, None, "none", "gpt2_conv1d", False, False, None),
    # head_dim a multiple of 16: the vectorized attention path.
    ("h4_hd16_gqa", 64, 4, 2, 16, "causal", "separate", True, True, None),
    ("h2_hd32_torch", 64, 2, None, None, "none", "torch_in_proj", True, True, None),
    ("h3_hd48_noout", 100, 3, 1, 48, "causal", "separate", False, False, None),
]
RUNS = [(1, 1), (7, 2), (64, 1), (97, 3), (300, 1)]  # (seq_len, batch)
# Real-model sizes and awkward tails of the tiled kernels (query blocks of
# 24/48, key blocks of 128, GEMM row blocks of 6/12 and 32-column panels):
# (spec, [(seq_len, batch)]). Checked on each code path (AVX-512, AVX2, SSE2)
# and with 1 and 2 threads, whose results must be bit-identical.
BIG = [
    (("gpt2_768", 768, 12, None, None, "causal", "gpt2_conv1d", True, True, None),
     [(97, 3), (1023, 1)]),
    (("llama_4096", 4096, 32, 8, 128, "causal", "separate", False, True, None),
     [(7, 1)]),
    (("odd_d100_h1", 100, 1, None, None, "causal", "torch_in_proj", True, True, None),
     [(2049, 1)]),
    (("hd3_h5_d15", 15, 5, None, None, "none", "gpt2_conv1d", True, True, None),
     [(129, 2)]),
    (("hd127_h2", 254, 2, 1, 127, "causal", "separate", True, False, None),
     [(160, 3)]),
]
# x86-64: the SSE2 path (4 lanes, a GEMM kernel a quarter of the panel wide).
ISAS = ["x86-avx512", "x86-avx2", "x86-64"]
PEAKY = 8.0  # one more run per kernel with x scaled by 8: logits x64
METAMORPHIC = {"h3_mqa_sep", "h2_d20_torch_causal", "h6_noout", "h4_hd16_gqa"}


def spec_text(s):
    name, d, h, kv, hd, mask, layout, bias, out, scale = s
    lines = [f"name: {name}", f"d_model: {d}", f"heads: {h}"]
    if kv is not None:
        lines.append(f"kv_heads: {kv}")
    if hd is not None:
        lines.append(f"head_dim: {hd}")
    lines += [f"mask: {mask}", f"weights: {layout}",
              f"bias: {'true' if bias else 'false'}",
              f"out_proj: {'true' if out else 'false'}"]
    if scale is not None:
        lines.append(f"scale: {scale}")
    return "\n".join(lines) + "\n"


FAILURES = []


def report(ok, line, detail=""):
    """Prints a PASS/FAIL line (stdout, for FileCheck); failures also go to
    stderr with their details, so a CI log shows them in full."""
    print(f"{'PASS' if ok else 'FAIL'}: {line}")
    if detail and not ok:
        print(detail)
    if not ok:
        FAILURES.append(line)
        print(f"matrix: FAIL: {line}\n{detail}", file=sys.stderr, flush=True)
    return ok


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=None if env is None else {**os.environ, **env})
    out = p.stdout
    if p.returncode < 0:
        out += f"\n[{cmd[0]} killed by signal {-p.returncode}]"
    elif p.returncode != 0:
        out += f"\n[{cmd[0]} exited with status {p.returncode}]"
    return p.returncode, out


def big(work):
    """BIG specs on each ISA: --check with 1 thread, then 2 threads must give
    the same bytes."""
    passed = failed = 0
    for s, runs in BIG:
        name = s[0]
        path = os.path.join(work, name + ".yaml")
        with open(path, "w") as f:
            f.write(spec_text(s))
        for isa in ISAS:
            lib = os.path.join(work, f"lib{name}_{isa}.so")
            rc, out = run(["attnc", path, "-o", lib, "--target", isa])
            if rc != 0:
                report(False, f"compile {name} {isa}", out)
                failed += 1
                continue
            for t, b in runs:
                outs = []
                for threads in (1, 2):
                    y = os.path.join(work, f"{name}_{isa}_{t}_{b}_{threads}.npy")
                    cmd = ["attnc-run", lib, "--seq-len", str(t), "--batch", str(b),
                           "--seed", str(t + b), "--threads", str(threads), "--out", y]
                    if threads == 1:
                        cmd.append("--check")
                    rc, out = run(cmd)
                    outs.append(y)
                    if threads == 1:
                        line = next((l for l in out.splitlines() if l.startswith("check")),
                                    out.strip())
                        ok = report(rc == 0 and "PASS" in line,
                                    f"{name} {isa} T={t} B={b}: {line}", out)
                        passed, failed = passed + ok, failed + (not ok)
                    elif rc != 0:
                        report(False, f"{name} {isa} T={t} B={b} 2 threads", out)
                        failed += 1
                same = all(os.path.exists(o) for o in outs) and \
                    open(outs[0], "rb").read() == open(outs[1], "rb").read()
                report(same, f"{name} {isa} T={t} B={b}: "
                       f"1 and 2 threads bit-identical: {'yes' if same else 'no'}")
                passed, failed = passed + same, failed + (not same)
    return passed, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--dump-check", action="store_true",
                    help="run attnc-dump --check on every spec instead of compiling")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    passed = failed = 0
    for s in SPECS:
        name = s[0]
        path = os.path.join(args.work, name + ".yaml")
        with open(path, "w") as f:
            f.write(spec_text(s))
        if args.dump_check:
            for seed in (1, 2):
                rc, out = run(["attnc-dump", path, "--check",
                               "--seq-len", "5", "--batch", "2", "--seed", str(seed)])
                checks = [l for l in out.splitlines() if l.startswith("// check:")]
                # conceptual, fused, viewed, targeted x 2 code paths, object x 2
                ok = rc == 0 and len(checks) == 7 and all(l.endswith("OK") for l in checks)
                report(ok, f"dump-check {name} seed {seed}", out)
                for l in checks:
                    print("   ", l)
                passed, failed = passed + ok, failed + (not ok)
            continue
        variants = [("", [])]
        if name in METAMORPHIC:
            variants.append(("_nofuse", ["--no-fuse-qkv", "--no-heads-as-views"]))
        for suffix, flags in variants:
            lib = os.path.join(args.work, f"lib{name}{suffix}.so")
            rc, out = run(["attnc", path, "-o", lib] + flags)
            if rc != 0:
                report(False, f"compile {name}{suffix}", out)
                failed += 1
                continue
            # The default library runs its best path here; the last run takes
            # its AVX2 path (ATTNC_ISA caps the choice).
            for t, b, xs, isa in [r + (1.0, None) for r in RUNS] + [(33, 2, PEAKY, None),
                                                                   (97, 3, 1.0, "x86-avx2")]:
                rc, out = run(["attnc-run", lib, "--seq-len", str(t), "--batch", str(b),
                               "--check", "--seed", str(t * 7 + b), "--x-scale", str(xs),
                               "--rtol", "1e-4", "--atol", str(1e-5 * xs * xs)],
                              env={"ATTNC_ISA": isa} if isa else None)
                line = next((l for l in out.splitlines() if l.startswith("check")), out.strip())
                if isa:  # and that path is the one that ran
                    _, info = run(["attnc-run", lib, "--info"], env={"ATTNC_ISA": isa})
                    if f"selected_isa: {isa}" not in info:
                        rc, out = 1, out + info
                ok = report(rc == 0 and "PASS" in line,
                            f"{name}{suffix} T={t} B={b} x*{xs:g}{' ' + isa if isa else ''}: {line}",
                            out)
                passed, failed = passed + ok, failed + (not ok)
    if not args.dump_check:
        p, f = big(args.work)
        passed, failed = passed + p, failed + f
    print(f"matrix: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
