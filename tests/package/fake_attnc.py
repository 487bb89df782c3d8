#!/usr/bin/env python3
"""A stand-in for attnc that builds tests/python/mock_kernel.c instead of
compiling the spec: `fake_attnc.py SPEC -o lib.so|lib.a --header H.h`.

It lets tests/package check attnc_add_kernel and examples/embed-cmake (the
CMake function, the application's threads and parallel_for hook, the
weights loader, the interpreter check) independently of the compiler: it
reads name, d_model, heads, mask and weights from the spec and writes a
hand-written ABI v3 kernel of that shape with a matching header.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def main(argv):
    spec, out, header = None, None, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-o":
            out, i = argv[i + 1], i + 2
        elif a == "--header":
            header, i = argv[i + 1], i + 2
        elif a == "--target":
            i += 2
        else:
            spec, i = a, i + 1
    keys = {}
    for line in open(spec):
        m = re.match(r"^(\w+):\s*([^#\s]+)", line)
        if m:
            keys[m.group(1)] = m.group(2)
    name, d, h = keys["name"], int(keys["d_model"]), int(keys["heads"])
    flags = [f"-DNAME={name}", f"-DD_MODEL={d}", f"-DHEADS={h}",
             f"-DCAUSAL={int(keys.get('mask') == 'causal')}",
             f"-DGPT2={int(keys.get('weights', 'gpt2_conv1d') == 'gpt2_conv1d')}",
             "-I", os.path.join(SRC, "runtime", "include"), "-O1", "-fPIC"]
    src = os.path.join(SRC, "tests", "python", "mock_kernel.c")
    cc = os.environ.get("CC", "cc")
    if out.endswith(".a"):
        obj = out + ".o"
        subprocess.run([cc, "-c", "-DMOCK_STATIC=1", *flags, src, "-o", obj], check=True)
        if os.path.exists(out):
            os.remove(out)
        subprocess.run(["ar", "rcs", out, obj], check=True)
        os.remove(obj)
    else:
        subprocess.run([cc, "-shared", *flags, src, "-o", out, "-lm"], check=True)
    if header:
        # Like attnc's headers: abi.h verbatim, then the kernel's prototypes.
        inc = os.path.join(SRC, "runtime", "include", "attnc", "runtime")
        abi = open(os.path.join(inc, "abi.h")).read()
        # The field lists inlined, as attnc's own headers have them.
        abi = re.sub(r'#include "attnc/runtime/(abi_[a-z_]+\.def)"',
                     lambda m: open(os.path.join(inc, m.group(1))).read(), abi)
        with open(header, "w") as f:
            f.write(f"""/* {name}.h - written by fake_attnc.py (tests/package) */
#ifndef FAKE_{name.upper()}_H
#define FAKE_{name.upper()}_H
{abi}
#ifdef __cplusplus
extern "C" {{
#endif
const attnc_kernel_info *{name}_query(uint32_t max_abi_version);
int {name}_pack(const void *const *weights, const int64_t *weight_elems,
    int64_t num_weights, void *packed, int64_t packed_bytes);
int64_t {name}_workspace_size(int64_t batch, int64_t seq_len, int64_t kv_seq_len);
int {name}_forward(const attnc_forward_args *args);
#ifdef __cplusplus
}}
#endif
#endif
""")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
