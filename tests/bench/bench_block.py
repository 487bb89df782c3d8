#!/usr/bin/env python3
"""Benchmark: the GPT-2 small causal attention block, attnc against its peers, in one run.

Not a test: timings never gate CI. Run through scripts/bench.sh, which builds
attnc, compiles examples/gpt2-small.yaml and the FP32 peak probe, then calls

  bench_block.py --attnc-run build/tools/attnc-run --lib LIB --peak PEAK_FMA
                 [--seq 128 512 1024 2048] [--threads 1 2] [--procs 5] [--peer-procs 3]
                 [--csv bench.csv] [--svg bench.svg] [--speedup-svg bench-speedup.svg]

In one run it measures the FP32 FMA peak (AVX-512 and AVX2, 1 and P
threads), then for each T and thread count:
  - attnc (AVX-512 path, and the AVX2 path of the same library through
    ATTNC_ISA=avx2): attnc-run --bench in --procs processes; per-process
    minima give min, median and spread;
  - attnc's phases alone (QKV GEMM, attention, W_O GEMM), 1 thread, timed
    through the kernel's parallel-for hook from Python (ctypes);
  - torch nn.MultiheadAttention (causal attn_mask) and a nanoGPT-style manual
    block (c_attn, split, q@k^T, masked_fill, softmax, @v, c_proj), each
    tuned (OPENBLAS_CORETYPE=SkylakeX, ATEN_CPU_CAPABILITY=avx512, the
    OpenMP OpenBLAS when installed, a kept heap), restricted to AVX2
    (OPENBLAS_CORETYPE=Haswell, ATEN_CPU_CAPABILITY=avx2,
    ONEDNN_MAX_CPU_ISA=AVX2) and out of the box; every peer runs with
    the row's thread count (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
    MKL_NUM_THREADS set, besides torch.set_num_threads);
  - the two GEMMs alone with oneDNN and packed (reordered) weights
    (torch.utils.mkldnn, which is oneDNN 2.x).
It prints one table (median and min ms, useful GFLOP/s with the causal
attention FLOPs halved, % of the measured peak, attnc's speed-up over the
best peer of the row), writes the rows as CSV and draws two SVG charts from
it (bench_chart.py, which redraws them from a saved CSV): ms against T, one
panel per thread count, attnc bold and the peers light; and attnc's
speed-up over the best peer and % of peak against T.
"""
import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import time

D, H = 768, 12


def useful_flops(t):
    return 2 * t * D * 3 * D + 2 * t * D * D + 4 * t * t * D / 2


# ---------------------------------------------------------------- peers ----
PEER_CODE = r'''
import json, sys, time
import torch, torch.nn.functional as F, torch.utils.mkldnn
kind, T, P, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
dt = getattr(torch, sys.argv[5]) if len(sys.argv) > 5 else torch.float32
torch.set_num_threads(P)
torch.manual_seed(0)
x = torch.randn(1, T, 768).to(dt)
times = []
with torch.no_grad():
    if kind == "mha":
        m = torch.nn.MultiheadAttention(768, 12, batch_first=True).eval().to(dt)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        f = lambda: m(x, x, x, attn_mask=mask, need_weights=False)
    elif kind == "manual":
        wa, ba = (torch.randn(2304, 768) * 0.02).to(dt), torch.zeros(2304, dtype=dt)
        wp, bp = (torch.randn(768, 768) * 0.02).to(dt), torch.zeros(768, dtype=dt)
        bias = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
        def f():
            q, k, v = F.linear(x, wa, ba).split(768, dim=2)
            q = q.view(1, T, 12, 64).transpose(1, 2)
            k = k.view(1, T, 12, 64).transpose(1, 2)
            v = v.view(1, T, 12, 64).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / 8.0)
            att = att.masked_fill(bias == 0, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(1, T, 768)
            return F.linear(y, wp, bp)
    elif kind in ("onednn_qkv", "onednn_out"):
        n = 2304 if kind == "onednn_qkv" else 768
        lin = torch.utils.mkldnn.to_mkldnn(torch.nn.Linear(768, n).eval(), dt)
        xm = x.view(T, 768).to_mkldnn()
        f = lambda: lin(xm)
    elif kind == "onednn":
        # The block's two GEMMs with oneDNN and packed (reordered) weights.
        qkv = torch.utils.mkldnn.to_mkldnn(torch.nn.Linear(768, 2304).eval(), dt)
        out = torch.utils.mkldnn.to_mkldnn(torch.nn.Linear(768, 768).eval(), dt)
        xm = x.view(T, 768).to_mkldnn()
        f = lambda: (qkv(xm), out(xm))
    f()
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps(times))
'''

SYSTEM_PY = "/usr/bin/python3"


def peer_env(mode, threads):
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "ATEN_CPU_CAPABILITY",
              "ONEDNN_MAX_CPU_ISA", "GLIBC_TUNABLES"):
        env.pop(k, None)
    # The row's thread count for every library the peer may call: without
    # this Debian's default (pthread) OpenBLAS ignores torch.set_num_threads
    # and runs one thread per CPU, so an "out of the box, 1 thread" peer
    # used every core (measured: 135% of the 1-thread peak at T = 128).
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    omp = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
    if mode in ("tuned", "avx2"):
        env["GLIBC_TUNABLES"] = ("glibc.malloc.mmap_max=0:"
                                 "glibc.malloc.trim_threshold=4294967295")
        if os.path.isdir(omp):
            env["LD_LIBRARY_PATH"] = omp + ":" + env.get("LD_LIBRARY_PATH", "")
    if mode == "tuned":
        env["OPENBLAS_CORETYPE"] = "SkylakeX"
        env["ATEN_CPU_CAPABILITY"] = "avx512"
    if mode == "avx2":
        env["OPENBLAS_CORETYPE"] = "Haswell"
        env["ATEN_CPU_CAPABILITY"] = "avx2"
        env["ONEDNN_MAX_CPU_ISA"] = "AVX2"
    return env


def proc_times(cmd, env, procs):
    """Runs `cmd` in `procs` processes, each printing a JSON list of call
    times (ms) as its last line: (per-process minima, per-process medians),
    or None when one fails (its stderr written out)."""
    mins, meds = [], []
    for _ in range(procs):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(f"{cmd[0]} failed: {r.stderr[-500:]}\n")
            return None
        ts = json.loads(r.stdout.strip().splitlines()[-1])
        mins.append(min(ts))
        meds.append(statistics.median(ts))
    return mins, meds


def run_peer(kind, mode, t, p, reps, procs, dtype="float32"):
    """The GPT-2 torch peer `kind` (mha, manual, onednn, onednn_qkv,
    onednn_out) in torch dtype `dtype`."""
    return proc_times([SYSTEM_PY, "-c", PEER_CODE, kind, str(t), str(p), str(reps), dtype],
                      peer_env(mode, p), procs)


# ---------------------------------------------------------------- attnc ----
def run_attnc(attnc_run, lib, t, p, reps, procs, isa):
    env = dict(os.environ)
    env.pop("ATTNC_ISA", None)
    if isa == "avx2":
        env["ATTNC_ISA"] = "avx2"
    mins, meds = [], []
    for _ in range(procs):
        r = subprocess.run([attnc_run, lib, "--seq-len", str(t), "--threads", str(p),
                            "--bench", str(reps), "--json"], env=env, capture_output=True,
                           text=True)
        try:
            bench = json.loads(r.stdout)["bench"]  # docs/json.md
        except (ValueError, KeyError, TypeError):
            bench = None
        if r.returncode != 0 or not bench:
            sys.stderr.write(r.stdout + r.stderr)
            return None
        mins.append(bench["min_ms"])
        meds.append(bench["median_ms"])
    return mins, meds


def _abi():
    """attnc's ctypes mirror of abi.h (python/attnc/_abi.py, read from the
    header itself)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    from attnc import _abi as abi
    return abi


def huge_pages(a):
    """The buffers attnc-run and the Python package allocate (workspace,
    packed weights) are on 2 MiB pages (attnrt_huge_pages): the phase
    timings' too, so that they time what those callers get."""
    _abi()
    from attnc import _runtime
    try:
        return _runtime.huge_pages(a)
    except _runtime.Unavailable:  # no libattnrt: 4 KiB pages, as before
        return 0


TASK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
HOOK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                        ctypes.c_void_p)


def attnc_phases(lib_path, name, t, reps, isa):
    """Min ms of each phase (QKV GEMM, attention, W_O GEMM) on one thread,
    timed by a parallel-for hook that runs all tasks of a phase in one call."""
    import numpy as np
    # The code path is chosen per call from ATTNC_ISA: set it for this
    # measurement only.
    saved = os.environ.pop("ATTNC_ISA", None)
    if isa == "avx2":
        os.environ["ATTNC_ISA"] = "x86-avx2"
    try:
        return _phases(lib_path, name, t, reps, np)
    finally:
        os.environ.pop("ATTNC_ISA", None)
        if saved is not None:
            os.environ["ATTNC_ISA"] = saved


def _phases(lib_path, name, t, reps, np):
    lib = ctypes.CDLL(lib_path)
    q = getattr(lib, name + "_pack")
    q.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                  ctypes.c_int64]
    abi = _abi()
    rng = np.random.default_rng(0)
    shapes = [(768, 2304), (2304,), (768, 768), (768,)]
    ws_ = [np.ascontiguousarray(rng.standard_normal(s).astype(np.float32) * 0.02)
           for s in shapes]
    counts = (ctypes.c_int64 * 4)(*[w.size for w in ws_])
    ptrs = (ctypes.c_void_p * 4)(*[w.ctypes.data for w in ws_])
    info_fn = getattr(lib, name + "_query")
    info_fn.restype = ctypes.POINTER(abi.KernelInfo)
    info_fn.argtypes = [ctypes.c_uint32]
    packed_bytes = info_fn(abi.ABI_VERSION).contents.packed_bytes
    packed = np.zeros(packed_bytes, np.uint8)
    huge_pages(packed)
    assert q(ptrs, counts, 4, packed.ctypes.data, packed_bytes) == 0
    x = rng.standard_normal((1, t, 768)).astype(np.float32)
    y = np.zeros((1, t, 768), np.float32)
    return time_phases(lib, name, packed, x, y, t, reps)


def time_phases(lib, name, packed, x, y, t, reps):
    """Min ms of each phase of NAME_forward (batch 1, seq_len t) on one
    thread over `reps` calls after a warm-up, timed by a parallel-for hook
    that runs all tasks of a phase in one call. x, y: arrays in the
    kernel's dtype; packed: NAME_pack's output."""
    import numpy as np
    abi = _abi()
    ws_fn = getattr(lib, name + "_workspace_size")
    ws_fn.restype = ctypes.c_int64
    ws_fn.argtypes = [ctypes.c_int64] * 3
    fwd = getattr(lib, name + "_forward")
    fwd.argtypes = [ctypes.POINTER(abi.ForwardArgs)]
    ws = np.zeros(ws_fn(1, t, 0), np.uint8)
    huge_pages(ws)
    times = {}

    @HOOK
    def hook(ctx, ntasks, task, task_ctx):
        fn = TASK(task)
        t0 = time.perf_counter()
        fn(task_ctx, 0, ntasks)
        times.setdefault(hook.phase, []).append((time.perf_counter() - t0) * 1e3)
        hook.phase += 1
        return 0

    a = abi.ForwardArgs()
    a.struct_size = ctypes.sizeof(abi.ForwardArgs)
    a.packed, a.packed_bytes = packed.ctypes.data, packed.size
    a.x, a.x_elems = x.ctypes.data, x.size
    a.y, a.y_elems = y.ctypes.data, y.size
    a.batch, a.seq_len = 1, t
    a.workspace, a.workspace_bytes = ws.ctypes.data, ws.size
    a.parallel_for = ctypes.cast(hook, abi.ParallelForFn)
    a.num_threads = 1
    for _ in range(reps + 1):
        hook.phase = 0
        assert fwd(ctypes.byref(a)) == 0
    return [min(times[i][1:]) for i in sorted(times)]




# ---------------------------------------------------------------- output ---
# The charts are drawn from the rows as saved in bench.csv (bench_chart.py,
# which also redraws them from an earlier run's CSV).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_chart  # noqa: E402


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attnc-run", required=True)
    ap.add_argument("--lib", required=True, help="libgpt2_small_attn.so (default target)")
    ap.add_argument("--peak", required=True, help="the peak_fma probe")
    ap.add_argument("--seq", type=int, nargs="+", default=[128, 512, 1024, 2048])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--procs", type=int, default=5, help="attnc-run processes per row")
    ap.add_argument("--peer-procs", type=int, default=3,
                    help="processes per peer row (min over their minima)")
    ap.add_argument("--csv", default="bench.csv")
    ap.add_argument("--svg", default="bench.svg", help="ms against T (bench_chart.py)")
    ap.add_argument("--speedup-svg", default="bench-speedup.svg",
                    help="speed-up over the best peer and %% of peak against T")
    ap.add_argument("--no-default-peers", action="store_true",
                    help="skip the out-of-the-box peers (slow, and not the bar)")
    ARGS = args = ap.parse_args()

    peak = {}
    for isa in ("avx512", "avx2"):
        for p in args.threads:
            out = subprocess.run([args.peak, isa, str(p), "2"], capture_output=True,
                                 text=True).stdout
            peak[(isa, p)] = float(re.search(r"([0-9.]+) GFLOP/s", out).group(1))
            print(out.strip(), flush=True)
    reps = {128: 20, 512: 10, 1024: 10, 2048: 5}
    rows = []

    def add(kind, system, t, p, res, flops, isa="avx512"):
        if res is None:
            print(f"  {system}: failed", flush=True)
            return
        mins, meds = res
        mn, md = min(mins), statistics.median(meds)
        spread = (max(mins) / mn - 1) * 100 if len(mins) > 1 else 0.0
        g = flops / (mn * 1e6)
        rows.append(dict(kind=kind, system=system, T=t, threads=p, min_ms=mn, median_ms=md,
                         spread_pct=spread, gflops=g, pct_peak=100 * g / peak[(isa, p)]))
        print(f"  T={t} {p}t {system}: min {mn:.3f} ms, median {md:.3f} ms, "
              f"spread {spread:.1f}%, {g:.1f} GFLOP/s", flush=True)

    for t in args.seq:
        r = reps.get(t, 5)
        for p in args.threads:
            f = useful_flops(t)
            add("block", "attnc avx512", t, p,
                run_attnc(args.attnc_run, args.lib, t, p, r, args.procs, "avx512"), f)
            add("block", "attnc avx2", t, p,
                run_attnc(args.attnc_run, args.lib, t, p, r, args.procs, "avx2"), f, "avx2")
            modes = ["tuned", "avx2"] + ([] if args.no_default_peers else ["default"])
            for kind in ("mha", "manual"):
                for mode in modes:
                    add("block", f"torch {kind} {mode}", t, p,
                        run_peer(kind, mode, t, p, max(3, r // 2), args.peer_procs), f,
                        "avx2" if mode == "avx2" else "avx512")
            qkv, out = 2 * t * D * 3 * D, 2 * t * D * D
            add("gemm", "onednn packed qkv", t, p,
                run_peer("onednn_qkv", "tuned", t, p, r, args.peer_procs), qkv)
            add("gemm", "onednn packed out", t, p,
                run_peer("onednn_out", "tuned", t, p, r, args.peer_procs), out)
            if p == 1:
                for isa in ("avx512", "avx2"):
                    ph = attnc_phases(args.lib, "gpt2_small_attn", t, r, isa)
                    att = 4 * t * t * D / 2
                    for (nm, fl), ms in zip((("qkv", qkv), ("attention", att), ("out", out)), ph):
                        add("gemm" if nm != "attention" else "phase",
                            f"attnc {isa} {nm}", t, 1, ([ms], [ms]), fl, isa)

    # Speed-ups: attnc rows against the best peer block of the same T and
    # threads (any tuned peer for avx512; AVX2-restricted peers for avx2).
    for r in rows:
        r["speedup"] = ""
        if r["kind"] != "block" or not r["system"].startswith("attnc"):
            continue
        want = "avx2" if "avx2" in r["system"] else "tuned"
        peers = [q for q in rows if q["kind"] == "block" and q["T"] == r["T"] and
                 q["threads"] == r["threads"] and q["system"].startswith("torch") and
                 (q["system"].endswith(want) or (want == "tuned" and q["system"].endswith("default")))]
        if peers:
            best = min(peers, key=lambda q: q["min_ms"])
            r["speedup"] = f'{best["min_ms"] / r["min_ms"]:.2f}x vs {best["system"]}'

    hdr = ("T", "thr", "system", "median ms", "min ms", "spread", "GFLOP/s", "% peak", "speed-up")
    print("\n| " + " | ".join(hdr) + " |\n|" + "---|" * len(hdr))
    for r in rows:
        print(f'| {r["T"]} | {r["threads"]} | {r["system"]} | {r["median_ms"]:.3f} | '
              f'{r["min_ms"]:.3f} | {r["spread_pct"]:.1f}% | {r["gflops"]:.1f} | '
              f'{r["pct_peak"]:.0f}% | {r["speedup"]} |')
    # A row above the peak of its thread count used more threads than it
    # was given (or the probe is wrong): say so, the ratios would be false.
    for r in rows:
        if r["pct_peak"] > 100:
            print(f'warning: {r["system"]} at T={r["T"]}, {r["threads"]} thread(s) ran at '
                  f'{r["pct_peak"]:.0f}% of that thread count\'s peak: more threads than '
                  f'the row, or a wrong peak')
    print("\npeak FP32 FMA GFLOP/s: " + ", ".join(f"{i} {p}t {v:.1f}" for (i, p), v in peak.items()))
    with open(args.csv, "w") as f:
        f.write("kind,system,T,threads,median_ms,min_ms,spread_pct,gflops,pct_peak,speedup\n")
        for r in rows:
            f.write(f'{r["kind"]},{r["system"]},{r["T"]},{r["threads"]},{r["median_ms"]:.4f},'
                    f'{r["min_ms"]:.4f},{r["spread_pct"]:.2f},{r["gflops"]:.2f},'
                    f'{r["pct_peak"]:.1f},{r["speedup"]}\n')
    written = bench_chart.draw(bench_chart.read_rows(args.csv), args.svg, args.speedup_svg)
    print(f"\nwrote {args.csv}" + "".join(f" and {w}" for w in written))


if __name__ == "__main__":
    main()
