#!/usr/bin/env python3
"""Deferred GPU cases: the e2e scripts' CUDA checks, compiled here, run on a GPU.

The e2e scripts that check the CUDA target's loops on this CPU
(tests/e2e/real_models.py, variants.py and dtypes.py with --cuda-on-host)
take --cuda-device-prepare DIR instead: they compile the same specs with
`attnc --target cuda-sm90` (the real PTX kernels), write the inputs and the
float64 references they compute here, and record each attnc-run call in
DIR/cases.jsonl instead of making it. On the GPU machine (attnc-run and its
libraries, NumPy, no compiler):

    python3 tests/gpu/cases.py DIR --bin OUTDIR/bin [--jobs N]

runs every recorded call with `--device cuda` added and judges it as the
script would have: 'check' cases by attnc-run's own `check ... PASS` lines
(the interpreter in double on the CPU), 'compare' cases by y against the
saved float64 reference (|y - ref| <= atol + rtol |ref|), with the saved
reference of the block without the feature under test having to fail the
same comparison (the check can fail). One PASS/FAIL line per case, then
'cases: N passed, M failed'; exit 0 when all passed, 1 otherwise, 2 on a
usage error. OUTDIR/bin is tests/gpu/run.sh prepare's (attnc-run with the
libraries it needs besides glibc and the CUDA driver).

This file is also the recorder the e2e scripts import (Recorder).
"""
import json
import os
import sys


class Recorder:
    """Writes DIR/cases.jsonl; paths in a case are relative to DIR."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        os.makedirs(self.root, exist_ok=True)
        self.path = os.path.join(self.root, "cases.jsonl")
        self.n = 0

    def rel(self, p):
        return os.path.relpath(os.path.abspath(p), self.root)

    def add(self, label, args, kind="check", want_checks=1, **extra):
        """args: attnc-run's arguments (the library first); paths are made
        relative to DIR where they lie under it. want_checks: how many
        `check ...` lines attnc-run must print, all PASS (None: at least
        one)."""
        a = [self.rel(x) if isinstance(x, str) and os.path.isabs(x) and
             os.path.abspath(x).startswith(self.root + os.sep) else x for x in args]
        case = dict(label=label, args=a, kind=kind, want_checks=want_checks)
        for k, v in extra.items():
            case[k] = self.rel(v) if isinstance(v, str) and os.path.isabs(v) else v
        with open(self.path, "a") as f:
            f.write(json.dumps(case) + "\n")
        self.n += 1


def judge(case, rc, out, root):
    """(ok, detail) for one finished call."""
    if rc != 0:
        return False, f"exit {rc}"
    if case["kind"] == "check":
        checks = [l for l in out.splitlines() if l.startswith("check")]
        want = case["want_checks"]  # None: y and whatever else the kernel has
        ok = (len(checks) >= 1 if want is None else len(checks) == want) and all(
            l.endswith("PASS") for l in checks)
        return ok, "; ".join(checks) or "no check line"
    import numpy as np
    y = np.load(os.path.join(root, case["out"])).astype(np.float64)
    ref = np.load(os.path.join(root, case["ref"]))
    atol, rtol = case["atol"], case["rtol"]
    if y.shape != ref.shape:
        return False, f"y has shape {y.shape}, the reference {ref.shape}"
    err = np.abs(y - ref)
    ok = bool(np.all(err <= atol + rtol * np.abs(ref)))
    detail = f"max err {err.max():.2e}"
    if case.get("wrong"):
        wrong = np.load(os.path.join(root, case["wrong"]))
        werr = np.abs(y - wrong)
        detects = case.get("trivial", False) or bool(np.any(werr > atol + rtol * np.abs(wrong)))
        detail += f" (without the feature: {werr.max():.2e})"
        if not detects:
            return False, detail + ": the check could not fail"
    return ok, detail


def main(argv):
    import argparse
    import subprocess
    from concurrent.futures import ThreadPoolExecutor
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="a directory written by --cuda-device-prepare")
    ap.add_argument("--bin", required=True, help="the directory of attnc-run and its libraries")
    ap.add_argument("--jobs", type=int, default=4, help="calls at a time (default 4)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per call (default 300)")
    a = ap.parse_args(argv)
    root = os.path.abspath(a.dir)
    cases_path = os.path.join(root, "cases.jsonl")
    binp = os.path.join(os.path.abspath(a.bin), "attnc-run")
    if not os.path.isfile(cases_path) or not os.access(binp, os.X_OK):
        print(f"cases.py: error: need {cases_path} and {binp}", file=sys.stderr)
        return 2
    with open(cases_path) as f:
        cases = [json.loads(l) for l in f if l.strip()]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.dirname(binp) + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")

    def one(case):
        cmd = [binp, case["args"][0], "--device", "cuda"] + case["args"][1:]
        try:
            p = subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=a.timeout)
            rc, out = p.returncode, p.stdout
        except subprocess.TimeoutExpired:
            rc, out = 124, f"timed out after {a.timeout} s"
        ok, detail = judge(case, rc, out, root)
        return ok, detail, out

    passed = failed = 0
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for case, (ok, detail, out) in zip(cases, ex.map(one, cases)):
            if ok:
                passed += 1
                print(f"PASS: {case['label']}: {detail}", flush=True)
            else:
                failed += 1
                print(f"FAIL: {case['label']}: {detail}", flush=True)
                print("\n".join("      " + l for l in out.strip().splitlines()[-8:]), flush=True)
    print(f"cases: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
