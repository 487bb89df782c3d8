#!/usr/bin/env python3
"""Benchmark: one KV-cache decode step of the GPT-2 small attention block at T_past = 1024.

Not a test: timings never gate CI. Needs a decode-enabled GPT-2 small kernel
(examples/gpt2-small.yaml with `decode: true` and max_seq_len >= 1025) and
the read_bw probe (gcc -O2 -pthread tests/bench/read_bw.c -o read_bw):

  bench_decode.py --lib LIB --read-bw READ_BW [--threads 1 2] [--procs 5]
                  [--attnc-run build/tools/attnc-run] [--csv bench_decode.csv]

For each thread count P it measures, in one run (batch 1, one new token at
position T_past after T_past cached tokens):
  - attnc: `attnc-run LIB --seq-len T_past+1 --decode-steps 1 --bench N
    --threads P` in --procs separate processes (each prefills T_past tokens,
    then times N calls of the decode step at position T_past);
  - the floor: BYTES = packed_bytes + 4 * 2 * kv_heads * T_past *
    head_dim, the packed weights and both caches a step must read (as
    attnc-run's `reads N MB`), read by `read_bw BYTES P SECONDS`; floor ms
    = BYTES / that rate;
  - torch (fp32, torch.set_num_threads(P)): the same step by hand with a
    preallocated cache [1, 12, T_past+1, 64] for K and V: c_attn (addmm),
    k and v written at row T_past, attention over rows [0, T_past]
    (F.scaled_dot_product_attention where torch has it, else q k^T,
    softmax, @ v), c_proj (addmm); and the same step in NumPy
    (OPENBLAS_NUM_THREADS=P), each in --peer-procs processes, warmed up
    first, in bench_block.py's tuned environment (--peer-env default: as
    installed);
  - attnc through the Python package (attnc.Kernel.decode, ctypes and the
    argument checks included), in --peer-procs processes.
Per row: min (over all calls of all processes), median (of the per-process
medians), spread = median / min - 1, and the ratios on the min: row / floor
(attnc's target <= 1.25) and row / attnc (the peers' target > 1: torch
slower than attnc). --csv FILE appends the rows (a header first if the
file is new). Peers run under Debian's /usr/bin/python3 (--python), which
has torch and NumPy.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))

# One decode step in a peer: argv kind T_past threads reps warmup.
PEER_CODE = r'''
import json, os, sys, time
kind, T, P, reps, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5])
D, H, DH = 768, 12, 64
times = []
if kind == "torch":
    import torch, torch.nn.functional as F
    torch.set_num_threads(P)
    torch.manual_seed(0)
    wa, ba = torch.randn(D, 3 * D) * 0.02, torch.randn(3 * D) * 0.02   # Conv1D: x W + b
    wp, bp = torch.randn(D, D) * 0.02, torch.randn(D) * 0.02
    kc = torch.zeros(1, H, T + 1, DH)
    vc = torch.zeros(1, H, T + 1, DH)
    kc[:, :, :T].normal_()
    vc[:, :, :T].normal_()
    x = torch.randn(1, D)
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    def step():
        qkv = torch.addmm(ba, x, wa)                       # c_attn
        q, k, v = qkv.split(D, dim=1)
        kc[0, :, T] = k.view(H, DH)                        # write at position T
        vc[0, :, T] = v.view(H, DH)
        q = q.view(1, H, 1, DH)
        kk, vv = kc[:, :, :T + 1], vc[:, :, :T + 1]        # rows [0, T]
        if sdpa is not None:
            o = sdpa(q, kk, vv)
        else:
            att = torch.matmul(q, kk.transpose(-2, -1)) * (1.0 / 8.0)
            o = torch.matmul(att.softmax(dim=-1), vv)
        return torch.addmm(bp, o.reshape(1, D), wp)        # c_proj
    with torch.no_grad():
        for _ in range(warm):
            step()
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
    impl = "sdpa" if sdpa is not None else "manual softmax"
elif kind == "numpy":
    import numpy as np
    rng = np.random.default_rng(0)
    f32 = np.float32
    wa, ba = (rng.standard_normal((D, 3 * D)) * 0.02).astype(f32), \
        (rng.standard_normal(3 * D) * 0.02).astype(f32)
    wp, bp = (rng.standard_normal((D, D)) * 0.02).astype(f32), \
        (rng.standard_normal(D) * 0.02).astype(f32)
    kc = np.zeros((1, H, T + 1, DH), f32)
    vc = np.zeros((1, H, T + 1, DH), f32)
    kc[:, :, :T] = rng.standard_normal((1, H, T, DH))
    vc[:, :, :T] = rng.standard_normal((1, H, T, DH))
    x = rng.standard_normal((1, D)).astype(f32)
    def step():
        qkv = x @ wa + ba
        q, k, v = qkv[0, :D], qkv[0, D:2 * D], qkv[0, 2 * D:]
        kc[0, :, T] = k.reshape(H, DH)
        vc[0, :, T] = v.reshape(H, DH)
        s = np.matmul(kc[0, :, :T + 1], q.reshape(H, DH, 1))[..., 0] * f32(0.125)  # [H, T+1]
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        o = np.matmul(p[:, None, :], vc[0, :, :T + 1])                               # [H, 1, DH]
        return o.reshape(1, D) @ wp + bp
    for _ in range(warm):
        step()
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    impl = np.__version__
elif kind == "attnc-py":
    import numpy as np
    sys.path.insert(0, os.environ["ATTNC_PY_PATH"])
    import attnc
    k = attnc.Kernel(os.environ["ATTNC_LIB"])
    rng = np.random.default_rng(0)
    w = {n: (rng.standard_normal(s) * 0.02).astype(np.float32)
         for n, s in k.weight_shapes.items()}
    packed = k.pack(w)
    kc, vc = k.new_cache(1, T + 1)
    k.forward(rng.standard_normal((1, T, D)).astype(np.float32), packed, num_threads=P,
              k_cache=kc, v_cache=vc)
    x = rng.standard_normal((1, 1, D)).astype(np.float32)
    out = np.empty((1, 1, D), np.float32)
    pos = np.array([T], np.int32)
    for _ in range(warm):
        k.decode(x, packed, pos, kc, vc, num_threads=P, out=out)
    for _ in range(reps):
        t0 = time.perf_counter()
        k.decode(x, packed, pos, kc, vc, num_threads=P, out=out)
        times.append((time.perf_counter() - t0) * 1e3)
    impl = attnc.__version__
print(json.dumps({"times": times, "impl": impl}))
'''


def has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


def peer_env(threads, mode):
    """The peers' environment: P BLAS/OpenMP threads; 'tuned' as
    bench_block.py's tuned peers (OpenBLAS's AVX-512 kernels and ATen's
    AVX-512 code where the CPU has them, the OpenMP OpenBLAS when
    installed, a kept heap); 'default' as installed."""
    env = dict(os.environ)
    for key in ("OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA",
                "GLIBC_TUNABLES"):
        env.pop(key, None)
    for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[key] = str(threads)
    if mode == "tuned":
        env["GLIBC_TUNABLES"] = ("glibc.malloc.mmap_max=0:"
                                 "glibc.malloc.trim_threshold=4294967295")
        omp = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
        if os.path.isdir(omp):
            env["LD_LIBRARY_PATH"] = omp + ":" + env.get("LD_LIBRARY_PATH", "")
        if has_avx512():
            env["OPENBLAS_CORETYPE"] = "SkylakeX"
            env["ATEN_CPU_CAPABILITY"] = "avx512"
    return env


def run_peer(python, kind, t_past, threads, reps, warm, procs, lib, mode):
    """(per-process minima, per-process medians, impl) or None when the
    peer cannot run (the reason on stderr)."""
    mins, meds, impl = [], [], ""
    env = peer_env(threads, mode)
    env["ATTNC_PY_PATH"] = os.path.join(SRC, "python")
    env["ATTNC_LIB"] = os.path.abspath(lib)
    for _ in range(procs):
        r = subprocess.run([python, "-c", PEER_CODE, kind, str(t_past), str(threads),
                            str(reps), str(warm)], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(f"{kind}: failed ({r.returncode}):\n{r.stderr[-2000:]}\n")
            return None
        res = json.loads(r.stdout.strip().splitlines()[-1])
        mins.append(min(res["times"]))
        meds.append(statistics.median(res["times"]))
        impl = res["impl"]
    return mins, meds, impl


def run_attnc(attnc_run, lib, t_past, threads, reps, procs):
    mins, meds, mb = [], [], None
    for _ in range(procs):
        r = subprocess.run([attnc_run, lib, "--seq-len", str(t_past + 1), "--decode-steps",
                            "1", "--bench", str(reps), "--threads", str(threads)],
                           capture_output=True, text=True)
        m = re.search(r"bench: decode step .* min ([0-9.]+) ms, median ([0-9.]+) ms", r.stdout)
        if r.returncode != 0 or not m:
            sys.stderr.write(f"attnc-run failed ({r.returncode}):\n{r.stdout}{r.stderr}")
            return None
        mins.append(float(m.group(1)))
        meds.append(float(m.group(2)))
        m2 = re.search(r"reads ([0-9.]+) MB", r.stdout)
        mb = float(m2.group(1)) if m2 else None
    return mins, meds, mb


def read_bw(probe, nbytes, threads, seconds):
    r = subprocess.run([probe, str(nbytes), str(threads), str(seconds)],
                       capture_output=True, text=True)
    m = re.search(r"([0-9.]+) GB/s", r.stdout)
    if r.returncode != 0 or not m:
        sys.exit(f"bench_decode: {probe} failed ({r.returncode}): {r.stdout}{r.stderr}")
    return float(m.group(1))


def kernel_info(attnc_run, lib):
    r = subprocess.run([attnc_run, lib, "--info"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_decode: {attnc_run} {lib} --info failed ({r.returncode}):\n"
                 f"{r.stdout}{r.stderr}")
    info = {}
    for line in r.stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep and not line.startswith(" "):
            info[key.strip()] = value.strip()
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True,
                    help="decode-enabled GPT-2 small kernel (max_seq_len >= T_past + 1)")
    ap.add_argument("--read-bw", required=True, help="the read_bw probe (tests/bench/read_bw.c)")
    ap.add_argument("--attnc-run", default=None,
                    help="default: build/tools/attnc-run of this tree, else attnc-run on PATH")
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--procs", type=int, default=5, help="attnc-run processes per row")
    ap.add_argument("--peer-procs", type=int, default=3, help="processes per peer row")
    ap.add_argument("--reps", type=int, default=200, help="timed calls per process")
    ap.add_argument("--warmup", type=int, default=20, help="peers' untimed calls first")
    ap.add_argument("--t-past", type=int, default=1024, help="cached tokens before the step")
    ap.add_argument("--bw-seconds", type=float, default=2.0, help="read_bw's duration")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the interpreter with torch and NumPy for the peers")
    ap.add_argument("--peer-env", choices=["tuned", "default"], default="tuned",
                    help="torch/NumPy environment: tuned (as bench_block.py) or as installed")
    ap.add_argument("--no-python-pkg", action="store_true",
                    help="skip the attnc Python package row")
    ap.add_argument("--csv", help="append the rows to this CSV file")
    args = ap.parse_args()

    attnc_run = args.attnc_run
    if attnc_run is None:
        local = os.path.join(SRC, "build", "tools", "attnc-run")
        attnc_run = local if os.access(local, os.X_OK) else "attnc-run"
    t = args.t_past
    info = kernel_info(attnc_run, args.lib)
    want = {"d_model": "768", "heads": "12", "kv_heads": "12", "head_dim": "64",
            "weight_layout": "gpt2_conv1d"}
    bad = [f"{k} {info.get(k)} (want {v})" for k, v in want.items() if info.get(k) != v]
    if "decode" not in info.get("features", "").replace(",", " ").split():
        bad.append(f"features '{info.get('features')}' (want decode)")
    msl = info.get("max_seq_len", "none")
    if msl != "none" and int(msl) < t + 1:
        bad.append(f"max_seq_len {msl} (want >= {t + 1})")
    if bad:
        sys.exit(f"bench_decode: {args.lib} is not a decode-enabled GPT-2 small kernel: "
                 + "; ".join(bad))
    packed_bytes = int(info["packed_bytes"])
    kvh, dh = int(info["kv_heads"]), int(info["head_dim"])
    nbytes = packed_bytes + 4 * 2 * kvh * t * dh
    print(f"{info['name']}: packed {packed_bytes} bytes + K/V cache 2 x [{kvh}, {t}, {dh}] "
          f"= {nbytes / 1e6:.2f} MB per decode step; selected ISA {info.get('selected_isa')}",
          flush=True)

    rows = []
    for p in args.threads:
        bw = read_bw(args.read_bw, nbytes, p, args.bw_seconds)
        floor = nbytes / (bw * 1e9) * 1e3
        print(f"  {p}t read_bw: {bw:.1f} GB/s -> floor {floor:.4f} ms", flush=True)
        res = run_attnc(attnc_run, args.lib, t, p, args.reps, args.procs)
        if res is None:
            sys.exit("bench_decode: attnc-run failed")
        mins, meds, mb = res
        if mb is not None and abs(mb - nbytes / 1e6) > 0.01 * mb + 0.01:
            print(f"  note: attnc-run reads {mb} MB, computed {nbytes / 1e6:.2f} MB")
        group = [dict(system="attnc (attnc-run)", impl="", mins=mins, meds=meds,
                      procs=args.procs)]
        peers = [("torch", "torch fp32"), ("numpy", "numpy fp32")]
        if not args.no_python_pkg:
            peers.append(("attnc-py", "attnc (python pkg)"))
        for kind, label in peers:
            r = run_peer(args.python, kind, t, p, args.reps, args.warmup, args.peer_procs,
                         args.lib, args.peer_env if kind != "attnc-py" else "default")
            if r is None:
                print(f"  {p}t {label}: failed", flush=True)
                continue
            impl = r[2] if kind == "attnc-py" else f"{r[2]}, {args.peer_env}"
            group.append(dict(system=label, impl=impl, mins=r[0], meds=r[1],
                              procs=args.peer_procs))
        a_min = min(group[0]["mins"])
        for g in group:
            mn, md = min(g["mins"]), statistics.median(g["meds"])
            row = dict(system=g["system"], impl=g["impl"], threads=p, t_past=t, min_ms=mn,
                       median_ms=md, spread=md / mn - 1, procs=g["procs"], reps=args.reps,
                       floor_ms=floor, bw_gbs=bw, mbytes=nbytes / 1e6, vs_floor=mn / floor,
                       vs_attnc=mn / a_min)
            rows.append(row)
            print(f"  {p}t {g['system']}: min {mn:.4f} ms, median {md:.4f} ms "
                  f"({g['procs']} processes x {args.reps} calls)", flush=True)

    hdr = ("system", "threads", "min ms", "median ms", "spread", "/ floor", "/ attnc")
    print(f"\ndecode step, GPT-2 small, batch 1, T_past {t}: reads {nbytes / 1e6:.2f} MB "
          "(ratios on the min)")
    print("| " + " | ".join(hdr) + " |\n|" + "---|" * len(hdr))
    for p in args.threads:
        r0 = [r for r in rows if r["threads"] == p]
        f = r0[0]
        print(f"| floor (read_bw {f['bw_gbs']:.1f} GB/s) | {p} | {f['floor_ms']:.4f} | | "
              f"| 1.00 | |")
        for r in r0:
            name = r["system"] + (f" ({r['impl']})" if r["impl"] and "attnc" not in r["system"]
                                  else "")
            print(f"| {name} | {p} | {r['min_ms']:.4f} | {r['median_ms']:.4f} | "
                  f"{100 * r['spread']:.1f}% | {r['vs_floor']:.2f} | {r['vs_attnc']:.2f} |")
    for p in args.threads:
        r0 = {r["system"]: r for r in rows if r["threads"] == p}
        a = r0["attnc (attnc-run)"]
        line = (f"{p}t: attnc / floor = {a['vs_floor']:.2f} (target <= 1.25: "
                f"{'met' if a['vs_floor'] <= 1.25 else 'MISSED'})")
        if "torch fp32" in r0:
            tr = r0["torch fp32"]["vs_attnc"]
            line += f"; torch / attnc = {tr:.2f} (target > 1: {'met' if tr > 1 else 'MISSED'})"
        print(line)

    if args.csv:
        new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
        stamp = datetime.datetime.now().isoformat(timespec="seconds")
        with open(args.csv, "a") as fh:
            if new:
                fh.write("time,system,impl,threads,t_past,min_ms,median_ms,spread,procs,reps,"
                         "mbytes,bw_gbs,floor_ms,vs_floor,vs_attnc\n")
            for r in rows:
                fh.write(f"{stamp},{r['system']},{r['impl']},{r['threads']},{r['t_past']},"
                         f"{r['min_ms']:.5f},{r['median_ms']:.5f},{r['spread']:.4f},"
                         f"{r['procs']},{r['reps']},{r['mbytes']:.3f},{r['bw_gbs']:.2f},"
                         f"{r['floor_ms']:.5f},{r['vs_floor']:.3f},{r['vs_attnc']:.3f}\n")
        print(f"\nappended {len(rows)} rows to {args.csv}")


if __name__ == "__main__":
    main()
