#!/usr/bin/env python3
"""Which folder's headers each folder may include: the compiler and runtime
libraries' layering (docs/design.md, "Layout") at the #include level.

The build enforces the same order at link time (<library>-layering
executables, -z defs on the runtime's shared libraries); this catches what a
link cannot see: a header-only reach up a layer (an inline function, a
type). Prints one line per offending include and exits 1, or prints
"layering: N files, ok".

    layering.py SRC_ROOT
"""
import os
import re
import sys

# Folder -> the attnc header folders its sources may include.
# "Dialect" is dialects/Attn (attnc/Dialect/...); "runtime" the runtime's
# headers, split below into its core and its tooling.
# A key is a folder of compiler/lib (with compiler/include/attnc/<key> its
# public headers, if any).
COMPILER = {
    "Spec": {"Spec", "runtime"},
    # Target: its public headers (compiler/include/attnc/Target); the
    # sources are in Common/ (every code path), Cpu/ and Cuda/ (a kind each).
    "Target": {"Target", "Spec", "Dialect", "runtime"},
    "Target/Common": {"Target", "Spec", "Dialect", "runtime"},
    "Target/Cpu": {"Target", "Spec", "Dialect", "runtime"},
    "Target/Cuda": {"Target", "Spec", "Dialect", "runtime"},
    "FrontEnd": {"FrontEnd", "Spec", "Target", "Dialect"},
    "Conversion/Common": {"Conversion", "Target", "Dialect"},
    "Conversion/Cpu": {"Conversion", "Target", "Dialect"},
    "Conversion/Cuda": {"Conversion", "Target", "Dialect"},
    "Pipeline": {"Pipeline", "FrontEnd", "Conversion", "Target", "Spec", "Dialect"},
    "Support": {"Support", "Conversion", "Target", "Dialect"},
    "Eval": {"Eval", "Pipeline", "Target", "Spec", "Dialect", "runtime"},
}
# libattnrt_core's sources and headers may include only core headers.
RUNTIME_CORE_SOURCES = {"Block.cpp", "Loader.cpp", "CApi.cpp", "Cuda.cpp", "Checksum.cpp",
                        "ThreadPool.c"}
# (thread_pool.inc and cuda_driver.inc: sources that the kernels' glue embeds
# as well, so libattnrt_core and every kernel share one copy of the code.)
RUNTIME_CORE_HEADERS = {"Block.h", "Checked.h", "Checksum.h", "Cuda.h", "Files.h",
                        "Limits.h", "Runtime.h", "abi.h", "attnrt_c.h",
                        "thread_pool.inc", "cuda_driver.inc"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"attnc/([A-Za-z]+)/([^"]+)"', re.M)
# Conversion's private headers, by folder: Common reaches a target's
# kernels only through attn::TargetKernelsInterface, and the CPU and CUDA
# kernels do not see each other.
PRIVATE = re.compile(r'^\s*#\s*include\s+"(Common|Cpu|Cuda)/([^"]+)"', re.M)
PRIVATE_ALLOWED = {"Conversion/Common": set(), "Conversion/Cpu": {"Common"},
                   "Conversion/Cuda": {"Common"}, "Target/Common": set(),
                   "Target/Cpu": set(), "Target/Cuda": set()}


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def private_includes(path):
    with open(path, encoding="utf-8") as f:
        return PRIVATE.findall(f.read())


def main():
    root = sys.argv[1]
    bad, files = [], 0
    for top in ("Conversion", "Target"):
        d = os.path.join(root, "compiler/lib", top)
        if any(n.endswith((".cpp", ".c")) for n in os.listdir(d)):
            bad.append(f"compiler/lib/{top}: sources belong in Common/, Cpu/ or Cuda/")
    for folder, allowed in COMPILER.items():
        if not os.path.isdir(os.path.join(root, "compiler/lib", folder)):
            bad.append(f"compiler/lib/{folder}: missing (layering.py's folder list is stale)")
        for base in (os.path.join(root, "compiler/lib", folder),
                     os.path.join(root, "compiler/include/attnc", folder)):
            for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
                if not name.endswith((".cpp", ".h", ".c")):
                    continue
                files += 1
                path = os.path.join(base, name)
                for top, rest in includes(path):
                    if top not in allowed:
                        bad.append(f"{os.path.relpath(path, root)}: {folder} includes "
                                   f"attnc/{top}/{rest}")
                for top, rest in private_includes(path):
                    if top not in PRIVATE_ALLOWED.get(folder, set()):
                        bad.append(f"{os.path.relpath(path, root)}: {folder} includes "
                                   f"{top}/{rest}")
    rt_lib = os.path.join(root, "runtime/lib")
    rt_inc = os.path.join(root, "runtime/include/attnc/runtime")
    core = [os.path.join(rt_lib, n) for n in sorted(RUNTIME_CORE_SOURCES)] + \
           [os.path.join(rt_inc, n) for n in sorted(RUNTIME_CORE_HEADERS)]
    for path in core:
        if not os.path.exists(path):
            continue
        files += 1
        for top, rest in includes(path):
            if top != "runtime" or not (rest in RUNTIME_CORE_HEADERS or rest.endswith(".def")):
                bad.append(f"{os.path.relpath(path, root)}: libattnrt_core includes "
                           f"attnc/{top}/{rest}")
    for line in bad:
        print(line)
    if bad:
        return 1
    print(f"layering: {files} files, ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
