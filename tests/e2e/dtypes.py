#!/usr/bin/env python3
"""bf16 and f16 blocks end to end (dtype, weight_dtype), on every x86 code
path this CPU has, against the double-precision interpreter.

Each spec is compiled with `dtype: bf16` or `f16` (and some with a
different `weight_dtype`), then `attnc-run --check` runs it on each code
path (ATTNC_ISA x86-avx512, x86-avx2 of a multi library, and a library
built for --target x86-64: the SSE2 path; the paths this CPU can run)
with the variant's inputs (padding lengths, a cross-attention input, decode
steps over the KV cache, the attention weights), against the interpreter on
the bf16/f16-rounded inputs and weights with the bound of docs/checking.md
(float32 arithmetic plus the storage rounding of y, probs and a KV cache).
The same kernel on 1 and 2 threads must give bit-identical y.

Blocks with bf16 weights also run the AMX-BF16 code path: on a CPU with
AMX-BF16 the multi library's (ATTNC_ISA=x86-amx-bf16), and on a CPU with
AVX512-BF16 a library built for --target x86-amx-bf16 with
ATTNC_EMULATE_AMX=1 (its tile operations as vdpbf16ps vector code at the
same addresses and strides: LowerAmx.cpp), so the AMX GEMMs' 32-row blocks,
K tails and strides are checked on this machine too.

With --cuda-on-host every kernel is the CUDA target's instead (attnc
--target cuda-sm90 --testing-gpu-on-host: its blocks and thread regions run
one after another on this CPU, what the GPU kernels mean): bf16/f16 loads
widened to f32, stores rounded once, the bf16 panels read as pairs.

With --cuda-device-prepare DIR they are built for a GPU (--target
cuda-sm90) and the runs recorded in DIR for tests/gpu/cases.py to make there.

Usage: dtypes.py --work DIR [--cuda-on-host | --cuda-device-prepare DIR]
(attnc, attnc-run on PATH). One PASS/FAIL line per run and a closing
'dtypes: N passed, M failed' line; exit 1 on a failure.
"""
import argparse
import filecmp
import os
import subprocess
import sys

BASE = {
    "gpt2": "d_model: 96\nheads: 4\nmask: causal\nbias: true\nweights: gpt2_conv1d\n",
    "llama_rope_decode": (
        "d_model: 128\nheads: 4\nkv_heads: 2\nhead_dim: 32\nmask: causal\n"
        "bias: false\nweights: separate\nrope: {theta: 10000}\ndecode: true\n"
        "max_seq_len: 64\n"),
    "qwen_padding_probs": (
        "d_model: 64\nheads: 4\nkv_heads: 1\nhead_dim: 16\nmask: causal+padding\n"
        "bias: [q, k, v]\nweights: separate\n"
        "rope: {style: interleaved, rotary_dim: 8}\noutputs: [y, probs]\n"),
    "t5_cross": (
        "d_model: 64\nheads: 4\nmask: padding\ncross_attention: true\nbias: false\n"
        "weights: separate\nscale: 1.0\n"),
    "window_mods": (
        "d_model: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\nmask: sliding_window\n"
        "window: 9\nbias: false\nweights: separate\nsoftcap: 30\nsinks: true\n"
        "qk_norm: {width: head, eps: 1e-6}\n"),
    # Gemma-2-like: soft-capping and large logits with bf16 weights and
    # float32 x; the reference rounds x as the path that ran did (exactly),
    # instead of bounding that rounding through the softmax's exp.
    "gemma_softcap": (
        "d_model: 96\nheads: 4\nkv_heads: 2\nhead_dim: 32\nmask: causal\n"
        "bias: false\nweights: separate\nsoftcap: 20\nscale: 0.2\n"
        "rope: {theta: 10000}\n"),
    # The decode kernel's bf16 dot products (head_dim 64: two 32-bf16
    # vectors per row) under every score modifier it applies per 16-key
    # sum tree, MQA (the 4 heads in one task), a window that leaves an odd
    # number of keys (P·V's last pair half empty).
    "mods_decode": (
        "d_model: 128\nheads: 4\nkv_heads: 1\nhead_dim: 64\nmask: sliding_window\n"
        "window: 23\nbias: false\nweights: separate\nsoftcap: 30\nsinks: true\n"
        "alibi: true\nrope: {theta: 10000}\ndecode: true\nmax_seq_len: 64\n"),
    "alibi_t5": (
        "d_model: 48\nheads: 3\nmask: causal\nbias: false\nweights: separate\n"
        "alibi: true\n"),
    # K = 48: one 32-wide tile and a tail of 16; N = 144 + 48 (QKV, W_O):
    # partial last panels.
    "k_tail": (
        "d_model: 48\nheads: 3\nmask: causal\nbias: true\nweights: separate\n"
        "rope: {theta: 10000}\n"),
    "t5_bias": (
        "d_model: 64\nheads: 4\nmask: none\nbias: false\nweights: separate\n"
        "scale: 1\nt5_bias: {num_buckets: 8, max_distance: 20}\n"),
}
# (spec, dtype, weight_dtype or None, attnc-run arguments)
CASES = [
    ("gpt2", "bf16", None, ["--seq-len", "70", "--batch", "2"]),
    ("gpt2", "f16", None, ["--seq-len", "33"]),
    ("gpt2", "f32", "bf16", ["--seq-len", "40"]),
    ("gpt2", "bf16", "f32", ["--seq-len", "40"]),
    ("gpt2", "bf16", None, ["--seq-len", "50", "--x-scale", "8"]),
    ("llama_rope_decode", "bf16", None, ["--seq-len", "40", "--batch", "2", "--decode-steps", "6"]),
    ("llama_rope_decode", "f16", None, ["--seq-len", "24", "--decode-steps", "4"]),
    ("llama_rope_decode", "bf16", None, ["--seq-len", "40", "--batch", "2", "--decode-steps", "20",
                                         "--decode-chunk", "6"]),
    ("qwen_padding_probs", "bf16", None, ["--seq-len", "30", "--batch", "3", "--lengths", "30,17,1"]),
    ("qwen_padding_probs", "f16", "bf16", ["--seq-len", "21", "--batch", "2", "--lengths", "5,21"]),
    ("t5_cross", "bf16", None, ["--seq-len", "19", "--kv-seq-len", "27", "--batch", "2",
                                "--lengths", "19,3", "--kv-lengths", "27,10"]),
    ("window_mods", "bf16", None, ["--seq-len", "45"]),
    ("window_mods", "f16", None, ["--seq-len", "45"]),
    ("gemma_softcap", "f32", "bf16", ["--seq-len", "45", "--x-scale", "8"]),
    ("mods_decode", "bf16", None, ["--seq-len", "60", "--batch", "2", "--decode-steps", "9"]),
    ("mods_decode", "f16", None, ["--seq-len", "50", "--decode-steps", "5"]),
    ("alibi_t5", "bf16", None, ["--seq-len", "37"]),
    ("t5_bias", "f16", None, ["--seq-len", "41"]),
]
# The AMX GEMMs' shapes, on the AMX-BF16 path only (the cases above run on
# it too): 32-row blocks of several tasks (gemm_mc 96), rows left over,
# padding that ends a block early, a K of 1.5 tiles and a partial last
# panel, cross-attention's x_kv GEMM.
AMX_CASES = [
    ("gpt2", "bf16", None, ["--seq-len", "200", "--batch", "2"]),
    ("qwen_padding_probs", "bf16", None, ["--seq-len", "130", "--batch", "2",
                                          "--lengths", "130,45"]),
    ("k_tail", "bf16", None, ["--seq-len", "97"]),
    ("k_tail", "f32", "bf16", ["--seq-len", "64"]),
    ("t5_cross", "bf16", None, ["--seq-len", "40", "--kv-seq-len", "70", "--batch", "2",
                                "--lengths", "40,33", "--kv-lengths", "70,64"]),
]


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--cuda-on-host", action="store_true")
    ap.add_argument("--cuda-device-prepare", metavar="DIR",
                    help="build for a GPU and record the runs in DIR (tests/gpu/cases.py)")
    a = ap.parse_args()
    rec = None
    if a.cuda_device_prepare:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
        from cases import Recorder
        rec = Recorder(a.cuda_device_prepare)
        a.work = os.path.join(rec.root, "dtypes")
    os.makedirs(a.work, exist_ok=True)
    flags = cpu_flags()
    isas = ["x86-64"]
    if {"avx2", "fma", "f16c"} <= flags:
        isas.insert(0, "x86-avx2")
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        isas.insert(0, "x86-avx512")
        # The vdpbf16ps path of a library with bf16 weights or activations
        # (a multi library with neither caps to its AVX-512 path: the same
        # run twice).
        if "avx512_bf16" in flags:
            isas.insert(0, "x86-avx512-bf16")
            if {"amx_bf16", "amx_tile"} <= flags:
                isas.insert(0, "x86-amx-bf16")
            else:
                print("note: this CPU has no AMX-BF16: the x86-amx-bf16 path is compiled "
                      "(tests/lit/Pipeline/amx-gemm.test) and run with its tiles emulated "
                      "(amx-emulated), not on AMX")
            isas.append("amx-emulated")
        else:
            print("note: this CPU has no AVX512-BF16: the x86-avx512-bf16 path "
                  "is compiled (tests/lit) but not run here")
    # (library, attnc arguments) per target; each code path's library
    targets = {"multi": ["--target", "multi"], "x86-64": ["--target", "x86-64"]}
    if "amx-emulated" in isas:
        targets["amx-emulated"] = ["--target", "x86-amx-bf16"]
    path_lib = lambda isa: isa if isa in ("x86-64", "amx-emulated") else "multi"
    if a.cuda_on_host or rec:
        targets = {"cuda": ["--target", "cuda-sm90"] +
                   ([] if rec else ["--testing-gpu-on-host"])}
        isas = ["cuda-on-host"]
        path_lib = lambda isa: "cuda"
    passed = failed = 0
    amx_paths = [i for i in isas if i in ("x86-amx-bf16", "amx-emulated")]
    runs = [(c, isas) for c in CASES] + [(c, amx_paths) for c in AMX_CASES if amx_paths]
    for i, ((spec, dtype, wdtype, args), case_isas) in enumerate(runs):
        if (a.cuda_on_host or rec) and "--decode-chunk" in args:
            # a CUDA decode call takes one token per sequence
            at = args.index("--decode-chunk")
            args = args[:at] + args[at + 2:]
        name = f"{spec}_{dtype}" + (f"_w{wdtype}" if wdtype else "") + f"_{i}"
        yaml = os.path.join(a.work, name + ".yaml")
        with open(yaml, "w") as f:
            f.write(f"name: {name}\n" + BASE[spec] + f"dtype: {dtype}\n" +
                    (f"weight_dtype: {wdtype}\n" if wdtype else ""))
        libs = {}
        bf16_weights = (wdtype or dtype) == "bf16"
        for target, targs in targets.items():  # multi: AVX-512 and AVX2 paths
            if target == "amx-emulated" and not bf16_weights:
                continue  # no AMX GEMMs: the AVX512-BF16 path's code
            if not any(path_lib(p) == target for p in case_isas):
                continue
            libs[target] = os.path.join(a.work, f"{name}_{target}.so")
            env = dict(os.environ, ATTNC_EMULATE_AMX="1") if target == "amx-emulated" else None
            r = subprocess.run(["attnc", yaml] + targs + ["-o", libs[target]],
                               capture_output=True, text=True, env=env)
            if r.returncode != 0:
                print(f"FAIL: {name}: attnc --target {target} exit {r.returncode}: "
                      f"{r.stderr.strip()}")
                failed += 1
                libs = None
                break
        if not libs:
            continue
        if rec:
            out = os.path.join(a.work, f"{name}_cuda.npy")
            rec.add(f"dtypes {name} cuda", [libs["cuda"], "--check", "--out", out] + args,
                    want_checks=None)
            continue
        for isa in case_isas:
            # A multi library has the AMX path with bf16 weights and
            # activations only (ATTNC_ISA only caps: elsewhere it would run
            # the AVX512-BF16 path and prove nothing).
            if path_lib(isa) not in libs or (isa == "x86-amx-bf16" and
                                             not (bf16_weights and dtype == "bf16")):
                continue
            lib = libs[path_lib(isa)]
            env = dict(os.environ)
            if not a.cuda_on_host:
                env["ATTNC_ISA"] = "x86-amx-bf16" if isa == "amx-emulated" else isa
            if isa in ("x86-amx-bf16", "amx-emulated"):
                r = subprocess.run(["attnc-run", lib, "--info"], capture_output=True, text=True,
                                   env=env)
                sel = [l for l in r.stdout.splitlines() if l.startswith("selected_isa:")]
                if sel != ["selected_isa: x86-amx-bf16"]:
                    failed += 1
                    print(f"FAIL: {name} {isa}: the AMX-BF16 path does not run: {sel or r.stderr}")
                    continue
            outs = []
            for threads in ("1", "2"):
                out = os.path.join(a.work, f"{name}_{isa}_{threads}.npy")
                cmd = ["attnc-run", lib, "--check", "--threads", threads, "--out", out] + args
                r = subprocess.run(cmd, capture_output=True, text=True, env=env)
                verdict = [l for l in r.stdout.splitlines() if l.startswith("check")]
                ok = r.returncode == 0 and verdict and all(l.endswith("PASS") for l in verdict)
                tag = f"{name} {isa} threads={threads}"
                if ok:
                    passed += 1
                    print(f"PASS: {tag}")
                else:
                    failed += 1
                    print(f"FAIL: {tag}: exit {r.returncode}\n{r.stdout}{r.stderr}")
                outs.append(out)
            if all(os.path.exists(o) for o in outs):
                if filecmp.cmp(outs[0], outs[1], shallow=False):
                    passed += 1
                    print(f"PASS: {name} {isa} 1 and 2 threads bit-identical")
                else:
                    failed += 1
                    print(f"FAIL: {name} {isa}: y differs between 1 and 2 threads")
    if rec:
        print(f"dtypes: {rec.n} runs recorded in {rec.root}, {failed} failed to compile")
        return 1 if failed else 0
    print(f"dtypes: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
