#!/usr/bin/env python3
"""python/attnc/_abi.py mirrors abi.h exactly: every struct's size and
every field's offset, as ctypes computes them from the field lists it
reads (abi_*.def), equal what the C compiler computes from
runtime/include/attnc/runtime/abi.h, and every constant the package read
from abi.h's #defines equals the macro's value (a C program generated from
the ctypes field lists prints sizeof/offsetof and the macros). Structs:
attnc_tensor_info, attnc_kernel_info, attnc_forward_args and
attnc_decode_args.

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
    # Every constant the package read from abi.h's #defines, and every
    # spelling's code (abi_names.def names the macro; the C compiler gives
    # its value).
    macros = dict(_abi.CONSTANTS)
    if len(macros) < 40:
        print(f"FAIL: only {len(macros)} constants read from abi.h")
        return 1
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
