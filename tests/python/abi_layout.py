#!/usr/bin/env python3
"""python/attnc/_abi.py mirrors abi.h exactly: every struct's size and
every field's offset, as ctypes computes them, equal what the C compiler
computes from runtime/include/attnc/runtime/abi.h, and the constants the
package decodes (features, masks, status codes) equal abi.h's macros (a C
program generated from the ctypes field lists prints sizeof/offsetof and
the macros). Structs: attnc_tensor_info, attnc_kernel_info,
attnc_forward_args (with the KV-cache fields and the CUDA stream, and
ATTNC_FORWARD_ARGS_SIZE_V2_0 / _V2_1, the sizes without them) and
attnc_decode_args; the status codes (CUDA's 8-10 too), instruction sets
(CUDA's too) and feature bits (cuda too).

Usage: abi_layout.py --cc CC --include DIR --work DIR
"""
import argparse
import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from attnc import _abi  # noqa: E402

STRUCTS = {"attnc_tensor_info": _abi.TensorInfo, "attnc_kernel_info": _abi.KernelInfo,
           "attnc_forward_args": _abi.ForwardArgs, "attnc_decode_args": _abi.DecodeArgs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--include", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    lines = ['#include "attnc/runtime/abi.h"', "#include <stddef.h>", "#include <stdio.h>",
             "int main(void) {"]
    expect = []
    for cname, py in STRUCTS.items():
        lines.append(f'  printf("{cname} %zu\\n", sizeof({cname}));')
        expect.append(f"{cname} {ctypes.sizeof(py)}")
        for fname, _ in py._fields_:
            lines.append(f'  printf("{cname}.{fname} %zu\\n", offsetof({cname}, {fname}));')
            expect.append(f"{cname}.{fname} {getattr(py, fname).offset}")
    # The constants the package decodes: version, features, masks, status.
    macros = {"ATTNC_ABI_VERSION": _abi.ABI_VERSION,
              "ATTNC_FEATURE_LENGTHS": _abi.FEATURE_LENGTHS,
              "ATTNC_FEATURE_CROSS": _abi.FEATURE_CROSS,
              "ATTNC_FEATURE_PROBS": _abi.FEATURE_PROBS,
              "ATTNC_FEATURE_DECODE": _abi.FEATURE_DECODE,
              "ATTNC_FEATURE_CUDA": _abi.FEATURE_CUDA,
              "ATTNC_FEATURE_ROPE": _abi.FEATURE_ROPE,
              "ATTNC_FEATURE_SCORE_MODS": _abi.FEATURE_SCORE_MODS,
              "ATTNC_FEATURE_CHECKSUM": _abi.FEATURE_CHECKSUM,
              "ATTNC_ROPE_HALF_SPLIT": _abi.ROPE_HALF_SPLIT,
              "ATTNC_ROPE_INTERLEAVED": _abi.ROPE_INTERLEAVED,
              "ATTNC_BIAS_Q": _abi.BIAS_Q, "ATTNC_BIAS_K": _abi.BIAS_K,
              "ATTNC_BIAS_V": _abi.BIAS_V, "ATTNC_BIAS_O": _abi.BIAS_O,
              "ATTNC_FORWARD_ARGS_SIZE_V2_0": _abi.FORWARD_ARGS_SIZE_V2_0,
              "ATTNC_FORWARD_ARGS_SIZE_V2_1": _abi.FORWARD_ARGS_SIZE_V2_1,
              "ATTNC_DECODE_ARGS_SIZE_V2_0": _abi.DECODE_ARGS_SIZE_V2_0,
              "ATTNC_ISA_CUDA_SM80": _abi.ISA_CUDA_SM80,
              "ATTNC_ISA_CUDA_SM90": _abi.ISA_CUDA_SM90,
              "ATTNC_ISA_NONE": _abi.ISA_NONE,
              "ATTNC_ERR_NO_DRIVER": _abi.ERR_NO_DRIVER,
              "ATTNC_ERR_NO_DEVICE": _abi.ERR_NO_DEVICE,
              "ATTNC_ERR_DEVICE": _abi.ERR_DEVICE,
              "ATTNC_ERR_NULL_ARG": _abi.ERR_NULL_ARG,
              "ATTNC_ERR_BAD_SHAPE": _abi.ERR_BAD_SHAPE,
              "ATTNC_ERR_BUFFER_SIZE": _abi.ERR_BUFFER_SIZE,
              "ATTNC_ERR_THREADS": _abi.ERR_THREADS,
              "ATTNC_ERR_ARGS": _abi.ERR_ARGS}
    # Every feature bit the package names, and nothing else.
    named = {"ATTNC_FEATURE_" + n.upper(): bit for bit, n in _abi.FEATURES.items()}
    for macro in named:
        if macro not in macros or macros[macro] != named[macro]:
            print(f"FAIL: _abi.FEATURES names {macro} = {named[macro]}, not checked")
            return 1
    # Every status code the package names, by its abi.h name.
    for code, cname in _abi.STATUS_NAMES.items():
        macros.setdefault(cname, code)
    # Every instruction set the package names.
    isa_macros = {"x86-64": "X86_64", "avx2": "AVX2", "avx512": "AVX512", "host": "HOST",
                  "multi": "MULTI", "cuda-sm80": "CUDA_SM80", "cuda-sm90": "CUDA_SM90",
                  "none": "NONE"}
    for code, n in _abi.ISAS.items():
        if n not in isa_macros:
            print(f"FAIL: _abi.ISAS names {n} = {code}, not checked")
            return 1
        macros.setdefault("ATTNC_ISA_" + isa_macros[n], code)
    masks = {v: k for k, v in _abi.MASKS.items()}
    for name, c in (("none", "NONE"), ("causal", "CAUSAL"), ("padding", "PADDING"),
                    ("causal+padding", "CAUSAL_PADDING"),
                    ("sliding_window", "SLIDING_WINDOW")):
        macros[f"ATTNC_MASK_{c}"] = masks[name]
    for macro, value in macros.items():
        lines.append(f'  printf("{macro} %u\\n", (unsigned){macro});')
        expect.append(f"{macro} {value}")
    lines.append("  return 0;\n}")
    src = os.path.join(a.work, "layout.c")
    exe = os.path.join(a.work, "layout")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run([a.cc, "-std=c99", "-Wall", "-Werror", "-I", a.include, src, "-o", exe],
                   check=True)
    got = subprocess.run([exe], check=True, stdout=subprocess.PIPE, text=True).stdout.split("\n")
    got = [g for g in got if g]
    bad = [(e, g) for e, g in zip(expect, got) if e != g]
    if len(got) != len(expect) or bad:
        for e, g in bad:
            print(f"MISMATCH: python {e} / C {g}")
        print("FAIL: ctypes layout differs from abi.h")
        return 1
    print(f"PASS: {len(expect)} sizes and offsets agree with abi.h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
