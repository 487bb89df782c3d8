#!/usr/bin/env python3
"""Benchmark: a Llama-shaped block with RoPE, attnc against torch, in one run.

Not a test: timings never gate CI. scripts/bench.sh runs it after the GPT-2
table (BENCH_LLAMA=0 skips it):

  bench_llama.py --attnc attnc --attnc-run attnc-run --work DIR
                 [--seq 512 2048] [--threads 1 2] [--procs 3] [--peer-procs 3]

The block: d_model 2048, 32 heads of 64, 4 kv heads (GQA), no biases,
causal, RoPE theta 500000 with llama3 scaling (factor 8, original 8192),
separate q/k/v/o weights. For each T and thread count it measures, each in
--procs separate processes (per-process minima give min, median and the
spread = slowest minimum / fastest - 1):
  - attnc (attnc-run --bench, the default code path of this CPU);
  - the same block without rope, to price the rotary embedding;
  - a torch block with the same RoPE written as Hugging Face's
    LlamaAttention computes it (F.linear q/k/v, cos/sin from inv_freq per
    call, rotate_half, repeat_kv, q@k^T * scale, causal masked_fill,
    softmax, @v, o_proj), tuned (SkylakeX OpenBLAS with OpenMP, avx512
    ATen, as bench_block.py's tuned peers) and out of the box, each with
    the row's thread count;
and, on one thread, attnc's phases alone (QKV GEMM, rope, attention, W_O;
and of the same block with Qwen3's per-head QK-norm, its two norm phases)
through the kernel's parallel-for hook. Prints one table and the ratios.
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import bench_block  # noqa: E402  (peer_env, run_attnc, SYSTEM_PY)

D, H, HKV, DH = 2048, 32, 4, 64
ROPE = ("rope:\n  theta: 500000\n  scaling:\n    type: llama3\n    factor: 8\n"
        "    low_freq_factor: 1\n    high_freq_factor: 4\n"
        "    original_max_position_embeddings: 8192\n")


def spec(name, rope, qk_norm=False):
    return (f"name: {name}\nd_model: {D}\nheads: {H}\nkv_heads: {HKV}\nhead_dim: {DH}\n"
            f"mask: causal\nweights: separate\nbias: false\n" + (ROPE if rope else "") +
            ("qk_norm: {width: head}\n" if qk_norm else ""))


def useful_flops(t):
    qkv = 2 * t * D * (H + 2 * HKV) * DH
    out = 2 * t * H * DH * D
    att = 4 * t * t * H * DH / 2
    return qkv + out + att


PEER_CODE = r'''
import json, math, sys, time
import torch, torch.nn.functional as F
T, P, reps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
D, H, HKV, DH = 2048, 32, 4, 64
torch.set_num_threads(P)
torch.manual_seed(0)
x = torch.randn(1, T, D)
wq, wk = torch.randn(H * DH, D) * 0.02, torch.randn(HKV * DH, D) * 0.02
wv, wo = torch.randn(HKV * DH, D) * 0.02, torch.randn(D, H * DH) * 0.02
# llama3 inv_freq (HF _compute_llama3_parameters), computed once as HF does.
base = 1.0 / (500000.0 ** (torch.arange(0, DH, 2, dtype=torch.float32) / DH))
wl = 2 * math.pi / base
lo_wl, hi_wl = 8192 / 1.0, 8192 / 4.0
inv = torch.where(wl > lo_wl, base / 8, base)
sm = (8192 / wl - 1.0) / (4.0 - 1.0)
med = ~(wl < hi_wl) & ~(wl > lo_wl)
inv = torch.where(med, (1 - sm) * inv / 8 + sm * inv, inv)
mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
def rot(t):
    return torch.cat((-t[..., DH // 2:], t[..., :DH // 2]), dim=-1)
def f():
    pos = torch.arange(T, dtype=torch.float32)
    freqs = torch.outer(pos, inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    q = F.linear(x, wq).view(1, T, H, DH).transpose(1, 2)
    k = F.linear(x, wk).view(1, T, HKV, DH).transpose(1, 2)
    v = F.linear(x, wv).view(1, T, HKV, DH).transpose(1, 2)
    q = q * cos + rot(q) * sin
    k = k * cos + rot(k) * sin
    k = k.repeat_interleave(H // HKV, dim=1)
    v = v.repeat_interleave(H // HKV, dim=1)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(DH))
    att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
    y = (att @ v).transpose(1, 2).reshape(1, T, H * DH)
    return F.linear(y, wo)
times = []
with torch.no_grad():
    f()
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps(times))
'''


def run_peer(mode, t, p, reps, procs):
    return bench_block.proc_times(
        [bench_block.SYSTEM_PY, "-c", PEER_CODE, str(t), str(p), str(reps)],
        bench_block.peer_env(mode, p), procs)


def phases(lib_path, t, reps, d_model=None):
    """Min ms of each phase on one thread (parallel-for hook)."""
    import numpy as np
    import attnc
    k = attnc.Kernel(lib_path)
    rng = np.random.default_rng(0)
    w = [(rng.standard_normal(shape) * 0.02).astype(np.float32)
         for shape in k.weight_shapes.values()]
    packed = k.pack(w)
    dm = d_model or D
    x = rng.standard_normal((1, t, dm)).astype(np.float32)
    lib = ctypes.CDLL(lib_path)
    name = k.name
    fwd = getattr(lib, name + "_forward")
    ws_fn = getattr(lib, name + "_workspace_size")
    ws_fn.restype = ctypes.c_int64
    ws_fn.argtypes = [ctypes.c_int64] * 3
    from attnc import _abi
    y = np.zeros((1, t, dm), np.float32)
    ws = np.zeros(ws_fn(1, t, 0), np.uint8)
    times = {}
    TASK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)

    @bench_block.HOOK
    def hook(ctx, ntasks, task, task_ctx):
        fn = TASK(task)
        t0 = time.perf_counter()
        fn(task_ctx, 0, ntasks)
        times.setdefault(hook.phase, []).append((time.perf_counter() - t0) * 1e3)
        hook.phase += 1
        return 0
    a = _abi.ForwardArgs()
    a.struct_size = ctypes.sizeof(_abi.ForwardArgs)
    pk = np.ascontiguousarray(packed)
    a.packed = pk.ctypes.data
    a.packed_bytes = pk.size
    a.x = x.ctypes.data
    a.x_elems = x.size
    a.y = y.ctypes.data
    a.y_elems = y.size
    a.batch, a.seq_len = 1, t
    a.workspace = ws.ctypes.data
    a.workspace_bytes = ws.size
    a.parallel_for = ctypes.cast(hook, type(a.parallel_for))
    a.num_threads = 1
    fwd.argtypes = [ctypes.POINTER(_abi.ForwardArgs)]
    for _ in range(reps + 1):
        hook.phase = 0
        rc = fwd(ctypes.byref(a))
        assert rc == 0, rc
    return [min(times[i][1:]) for i in sorted(times)]


def fmt_row(label, t, p, r):
    mins, meds = r
    lo, med = min(mins), statistics.median(meds)
    spread = max(mins) / lo - 1
    gf = useful_flops(t) / (lo * 1e-3) / 1e9
    return lo, f"| {label} | {t} | {p} | {lo:.1f} / {med:.1f} | {100 * spread:.1f}% | {gf:.1f} |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnc", required=True)
    ap.add_argument("--attnc-run", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seq", type=int, nargs="+", default=[512, 2048])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--procs", type=int, default=3)
    ap.add_argument("--peer-procs", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    libs = {}
    for name, rope, qkn in (("llama_rope", True, False), ("llama_norope", False, False),
                            ("llama_qknorm", True, True)):
        sp = os.path.join(a.work, name + ".yaml")
        with open(sp, "w") as f:
            f.write(spec(name, rope, qkn))
        libs[name] = os.path.join(a.work, f"lib{name}.so")
        subprocess.run([a.attnc, sp, "-o", libs[name]], check=True)
    print("| system | T | threads | min / median ms | spread | useful GFLOP/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    ratios = []
    for t in a.seq:
        reps = 10 if t <= 512 else 4
        for p in a.threads:
            res = {}
            for name in ("llama_rope", "llama_norope"):
                r = bench_block.run_attnc(a.attnc_run, libs[name], t, p, reps, a.procs, None)
                if r:
                    res[name], line = fmt_row("attnc " + name.split("_")[1], t, p, r)
                    print(line, flush=True)
            for mode in ("tuned", "default"):
                r = run_peer(mode, t, p, max(3, reps // 2), a.peer_procs)
                if r:
                    res["torch_" + mode], line = fmt_row(f"torch HF-style {mode}", t, p, r)
                    print(line, flush=True)
            peers = [v for k, v in res.items() if k.startswith("torch")]
            if "llama_rope" in res and peers:
                ratios.append((t, p, min(peers) / res["llama_rope"],
                               res["llama_rope"] / res["llama_norope"] - 1))
    print()
    for t, p, sp, rc in ratios:
        print(f"T = {t}, {p} thread(s): attnc {sp:.2f}x the best torch peer; "
              f"with rope / without - 1 = {100 * rc:+.1f}%")
    # The phases alone on one thread: the block with rope, and with Qwen3's
    # per-head QK-norm before the rope as well (two more phases).
    layouts = (("llama_rope", "", ["QKV GEMM", "rope Q", "rope K", "attention", "W_O GEMM"],
                "rope"),
               ("llama_qknorm", " with QK-norm",
                ["QKV GEMM", "QK-norm Q", "QK-norm K", "rope Q", "rope K", "attention",
                 "W_O GEMM"], "rope + QK-norm"))
    for t in a.seq:
        if t > 512:
            continue
        for lib, label, names, what in layouts:
            ph = phases(libs[lib], t, 5)
            if len(ph) != len(names):
                print(f"phases{label} at T = {t}: {len(ph)} phases, expected {len(names)}: {ph}")
                continue
            print(f"phases{label} at T = {t}, 1 thread (min ms): " +
                  ", ".join(f"{n} {v:.2f}" for n, v in zip(names, ph)) +
                  f"; {what} = {100 * sum(ph[1:-2]) / sum(ph):.1f}% of the block")
    score_mods(a)


def score_mods(a):
    """The attention phase of a GPT-2-shaped block (768 = 12 x 64, causal)
    with and without each score modifier, and of a Gemma-2-shaped one with
    and without soft-capping, 1 thread, min over --procs rounds of 5 calls
    (the variants interleaved in each round)."""
    base = "d_model: 768\nheads: 12\nmask: causal\nweights: separate\n"
    variants = {"plain": "", "alibi": "alibi: true\n", "softcap": "softcap: 30.0\n",
                "t5_bias": "t5_bias:\n  num_buckets: 32\n  max_distance: 128\n",
                # BERT's relative_key(_query): a second (third) dot product per
                # score, not a modifier: no 10% target, reported for its cost.
                "rel_key": "relative_key:\n  max_position_embeddings: 2048\n",
                "rel_key_query": "relative_key:\n  max_position_embeddings: 2048\n"
                                 "  key_query: true\n"}
    # Gemma 2's own shape (2B: d_model 2304, 8 heads of 256, 4 kv heads),
    # the model that soft-caps its attention logits (cap 50).
    gemma = "d_model: 2304\nheads: 8\nkv_heads: 4\nhead_dim: 256\nmask: causal\n" \
            "weights: separate\nscale: 0.0625\n"
    specs = {n: base + extra for n, extra in variants.items()}
    specs.update(gemma2_plain=gemma, gemma2_softcap=gemma + "softcap: 50.0\n")
    libs = {}
    for n, text in specs.items():
        sp = os.path.join(a.work, f"mods_{n}.yaml")
        with open(sp, "w") as f:
            f.write(f"name: mods_{n}\n" + text)
        libs[n] = os.path.join(a.work, f"libmods_{n}.so")
        subprocess.run([a.attnc, sp, "-o", libs[n]], check=True)

    def interleaved(names, t, d_model):
        """Min over --procs rounds, each round timing every variant in turn
        (a slow spell of the machine then hits all of them, not one)."""
        best = {n: float("inf") for n in names}
        for _ in range(a.procs):
            for n in names:
                best[n] = min(best[n], phases(libs[n], t, 5, d_model=d_model)[1])
        return best

    for t in (512, 2048):
        att = interleaved(list(variants), t, 768)
        print(f"attention phase at T = {t}, 1 thread (min ms): " +
              ", ".join(f"{n} {v:.2f}" for n, v in att.items()) + "; " +
              ", ".join(f"{n} {100 * (att[n] / att['plain'] - 1):+.1f}%"
                        for n in variants if n != "plain"))
        g = interleaved(["gemma2_plain", "gemma2_softcap"], t, 2304)
        print(f"Gemma 2 shape (8 x 256, 4 kv heads), attention phase at T = {t}, 1 thread "
              f"(min ms): plain {g['gemma2_plain']:.2f}, softcap {g['gemma2_softcap']:.2f}; "
              f"softcap {100 * (g['gemma2_softcap'] / g['gemma2_plain'] - 1):+.1f}%")


if __name__ == "__main__":
    main()
