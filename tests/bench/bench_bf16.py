#!/usr/bin/env python3
"""Benchmark: bf16 blocks against attnc's own float32 blocks and the peers in
bf16, in one run (issue: bf16 and f16 end to end).

Not a test: timings never gate CI. Run through scripts/bench.sh (BENCH_BF16=0
skips it) or by hand:

  bench_bf16.py --attnc build/tools/attnc --attnc-run build/tools/attnc-run
                --peak PEAK_FMA --read-bw READ_BW --work DIR
                [--seq 128 512 1024 2048] [--threads 1 2] [--procs 3] [--decode-only]

It measures, in one run:
  - the FP32 FMA peak (AVX-512) and the bf16 peak (vdpbf16ps), 1 and P threads;
  - GPT-2 small (causal, biases) and the Llama-shaped block (d_model 2048, 32
    heads of 64, 4 kv heads, no biases, causal) compiled with dtype f32 and
    dtype bf16: attnc-run --bench in --procs processes (min and median of
    the per-process minima, spread = median/min - 1), the ratio f32/bf16
    (how many times faster bf16 is), on 1 and P threads;
  - the bf16 block's in-block GEMMs alone (1 thread, phases timed through
    the kernel's parallel-for hook): GFLOP/s and % of the bf16 peak;
  - torch 1.13 in bf16 (nn.MultiheadAttention and the manual nanoGPT block
    on GPT-2 small; the two GEMMs with oneDNN and packed bf16 weights) and
    attnc bf16's speed-up over the best of them;
  - one KV-cache decode step (GPT-2 and the Llama shape, T_past 1024 and
    8192): float32 and bf16 weights and cache, each against its own read
    floor (packed weights + K/V cache at read_bw's rate), and bf16/f32;
  - the packed weight bytes per layer for each weight dtype.
"""
import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_block  # noqa: E402  (run_peer, run_attnc, time_phases)
import bench_decode  # noqa: E402  (run_attnc: one decode step)


MODELS = {
    "gpt2": dict(d=768, h=12, hkv=12, dh=64, spec=(
        "d_model: 768\nheads: 12\nhead_dim: 64\nmask: causal\nbias: true\n"
        "weights: gpt2_conv1d\n")),
    "llama": dict(d=2048, h=32, hkv=4, dh=64, spec=(
        "d_model: 2048\nheads: 32\nkv_heads: 4\nhead_dim: 64\nmask: causal\n"
        "bias: false\nweights: separate\n")),
}


def gemm_flops(m, t):
    qkv = 2 * t * m["d"] * (m["h"] + 2 * m["hkv"]) * m["dh"]
    out = 2 * t * m["h"] * m["dh"] * m["d"]
    return qkv, out


def useful_flops(m, t):
    qkv, out = gemm_flops(m, t)
    return qkv + out + 4 * t * t * m["h"] * m["dh"] / 2


def compile_spec(attnc, work, name, text):
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\n" + text)
    lib = os.path.join(work, f"lib{name}.so")
    subprocess.run([attnc, path, "-o", lib], check=True)
    return lib


def info_json(attnc_run, lib):
    r = subprocess.run([attnc_run, lib, "--info", "--json"], capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout)


def peak(probe, kind, threads):
    r = subprocess.run([probe, kind, str(threads), "1.5"], capture_output=True, text=True)
    m = re.search(r"([0-9.]+) GFLOP/s", r.stdout)
    return float(m.group(1)) if m else None


def summary(v):
    mins, meds = v
    lo, med = min(mins), statistics.median(mins)
    return lo, med, med / lo - 1


# The bf16 block's phases on one thread, timed by a parallel-for hook that
# runs all tasks of a phase in one call (as bench_block.attnc_phases).
def phases_bf16(lib_path, name, t, reps, info):
    import numpy as np
    lib = ctypes.CDLL(lib_path)
    pack = getattr(lib, name + "_pack")
    pack.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                     ctypes.c_int64]
    rng = np.random.default_rng(0)
    bf16 = lambda a: (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    ws_ = [np.ascontiguousarray(bf16(rng.standard_normal(int(np.prod(w["shape"]))) * 0.02))
           for w in info["weights"]]
    counts = (ctypes.c_int64 * len(ws_))(*[w.size for w in ws_])
    ptrs = (ctypes.c_void_p * len(ws_))(*[w.ctypes.data for w in ws_])
    packed = np.zeros(info["packed_bytes"], np.uint8)
    bench_block.huge_pages(packed)
    assert pack(ptrs, counts, len(ws_), packed.ctypes.data, packed.size) == 0
    x = bf16(rng.standard_normal((1, t, info["d_model"])))
    y = np.zeros((1, t, info["out_dim"]), np.uint16)
    return bench_block.time_phases(lib, name, packed, x, y, t, reps)

def read_floor_ms(probe, mb, threads):
    nbytes = int(mb * 1e6)
    r = subprocess.run([probe, str(nbytes), str(threads), "1.5"], capture_output=True,
                       text=True)
    m = re.search(r"([0-9.]+) GB/s", r.stdout)
    return nbytes / (float(m.group(1)) * 1e9) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attnc", required=True)
    ap.add_argument("--attnc-run", required=True)
    ap.add_argument("--peak", required=True, help="the peak_fma probe")
    ap.add_argument("--read-bw", required=True, help="the read_bw probe")
    ap.add_argument("--work", required=True)
    ap.add_argument("--seq", type=int, nargs="+", default=[128, 512, 1024, 2048])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--procs", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--t-past", type=int, nargs="+", default=[1024, 8192])
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--decode-only", action="store_true",
                    help="only the packed bytes and the decode steps")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)

    print("peaks (GFLOP/s, measured now):")
    peaks = {}
    for p in a.threads:
        peaks[("f32", p)] = peak(a.peak, "avx512", p)
        peaks[("bf16", p)] = peak(a.peak, "bf16", p)
        print(f"  {p} thread(s): FP32 FMA {peaks[('f32', p)]}, bf16 vdpbf16ps "
              f"{peaks[('bf16', p)]}")

    libs, infos = {}, {}
    tmax = max(a.seq + [t + 1 for t in a.t_past])
    for mname, m in MODELS.items():
        for dt in ("f32", "bf16"):
            name = f"{mname}_{dt}"
            libs[name] = compile_spec(a.attnc, a.work, name, m["spec"] + f"dtype: {dt}\n")
            libs[name + "_dec"] = compile_spec(
                a.attnc, a.work, name + "_dec",
                m["spec"] + f"dtype: {dt}\ndecode: true\nmax_seq_len: {tmax}\n")
            infos[name] = info_json(a.attnc_run, libs[name])
    print("\npacked weight bytes per layer:")
    for mname in MODELS:
        f, b = infos[mname + "_f32"]["packed_bytes"], infos[mname + "_bf16"]["packed_bytes"]
        print(f"  {mname}: f32 {f:,} bytes, bf16 {b:,} bytes ({b / f:.3f}x)")

    if a.decode_only:
        a.seq, a.no_peers = [], True
    print("\nblock, ms (min / median of per-process minima, spread), attnc f32 vs bf16:")
    print(f"{'model':6} {'T':>5} {'P':>2} {'f32 min':>9} {'bf16 min':>9} {'bf16 med':>9} "
          f"{'spread':>6} {'f32/bf16':>8} {'GFLOP/s':>8} {'%bf16pk':>7}")
    for mname, m in MODELS.items():
        for t in a.seq:
            for p in a.threads:
                rf = bench_block.run_attnc(a.attnc_run, libs[mname + "_f32"], t, p, a.reps,
                                           a.procs, "avx512")
                rb = bench_block.run_attnc(a.attnc_run, libs[mname + "_bf16"], t, p, a.reps,
                                           a.procs, "avx512")
                if not rf or not rb:
                    continue
                f_lo, _, _ = summary(rf)
                b_lo, b_med, b_sp = summary(rb)
                g = useful_flops(m, t) / (b_lo * 1e6)
                pk = peaks[("bf16", p)]
                print(f"{mname:6} {t:5d} {p:2d} {f_lo:9.3f} {b_lo:9.3f} {b_med:9.3f} "
                      f"{100 * b_sp:5.1f}% {f_lo / b_lo:8.2f} {g:8.1f} "
                      f"{100 * g / pk if pk else float('nan'):6.1f}%")

    print("\nin-block GEMMs of the bf16 block, 1 thread (phases through the hook):")
    for mname, m in MODELS.items():
        name = mname + "_bf16"
        for t in a.seq:
            # Phases: the QKV GEMM, [the K/V staging of the AVX512-BF16
            # path,] the attention, [W_O's input rounded to bf16 on that
            # path,] W_O, y rounded to bf16 (a phase with no tasks never
            # reaches the hook). W_O's input staging counts as W_O's time.
            ph = phases_bf16(libs[name], name, t, a.reps, infos[name])
            q_ms, mid, wo_ms = ph[0], ph[1:-2], ph[-2]
            kv_ms, attn_ms, xs_ms = (mid if len(mid) == 3 else (0.0, sum(mid), 0.0))
            qkv, out = gemm_flops(m, t)
            g = (qkv + out) / ((q_ms + wo_ms + xs_ms) * 1e6)
            pk = peaks[("bf16", 1)]
            staging = (f" (K/V staging {kv_ms:.3f})" if len(mid) == 3 else "")
            wo_staging = (f" (its input rounded to bf16 {xs_ms:.3f})" if len(mid) == 3 else "")
            print(f"  {mname} T={t}: QKV {q_ms:.3f} ms, attention {kv_ms + attn_ms:.3f} ms"
                  f"{staging}, W_O {wo_ms + xs_ms:.3f} ms{wo_staging}; GEMMs {g:.1f} GFLOP/s = "
                  f"{100 * g / pk if pk else float('nan'):.1f}% of the bf16 peak")

    if not a.no_peers:
        print("\nGPT-2 small, bf16: attnc against torch 1.13 in bf16 (min ms):")
        print(f"{'T':>5} {'P':>2} {'attnc':>8} {'mha':>9} {'manual':>9} {'onednn':>9} "
              f"{'best/attnc':>10}")
        for t in a.seq:
            for p in a.threads:
                rb = bench_block.run_attnc(a.attnc_run, libs["gpt2_bf16"], t, p, a.reps,
                                           a.procs, "avx512")
                peers = {k: bench_block.run_peer(k, "tuned", t, p, a.reps,
                                                 max(1, a.procs - 1), "bfloat16")
                         for k in ("mha", "manual", "onednn")}
                lo = {k: min(v[0]) for k, v in peers.items() if v}
                b_lo = min(rb[0])
                best = min((v for k, v in lo.items() if k != "onednn"), default=None)
                print(f"{t:5d} {p:2d} {b_lo:8.3f} " +
                      " ".join(f"{lo.get(k, float('nan')):9.3f}" for k in
                               ("mha", "manual", "onednn")) +
                      f" {best / b_lo if best else float('nan'):10.2f}")

    print("\ndecode step (min ms; floor = packed weights + K/V cache at read_bw's rate):")
    print(f"{'model':6} {'T_past':>6} {'P':>2} {'f32':>8} {'f32/fl':>6} {'bf16':>8} "
          f"{'bf16/fl':>7} {'bf16/f32':>8} {'MB f32':>7} {'MB bf16':>7}")
    for mname in MODELS:
        for tp in a.t_past:
            for p in a.threads:
                rf = bench_decode.run_attnc(a.attnc_run, libs[mname + "_f32_dec"], tp, p, 50, a.procs)
                rb = bench_decode.run_attnc(a.attnc_run, libs[mname + "_bf16_dec"], tp, p, 50, a.procs)
                if not rf or not rb:
                    continue
                ff = read_floor_ms(a.read_bw, rf[2], p)
                fb = read_floor_ms(a.read_bw, rb[2], p)
                f_lo, b_lo = min(rf[0]), min(rb[0])
                print(f"{mname:6} {tp:6d} {p:2d} {f_lo:8.3f} {f_lo / ff:6.2f} {b_lo:8.3f} "
                      f"{b_lo / fb:7.2f} {b_lo / f_lo:8.2f} {rf[2]:7.2f} {rb[2]:7.2f}")


if __name__ == "__main__":
    main()
