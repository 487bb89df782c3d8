# lit configuration for attnc: IR tests (tests/lit), bad-input diagnostics
# (tests/bad_inputs) and end-to-end runs (tests/e2e).
import os
import lit.formats


config.name = "attnc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.join(config.attnc_src_root, "tests")
config.test_exec_root = os.path.join(config.attnc_obj_root, "tests", "lit-out")
config.excludes = ["unit", "fuzz", "Inputs", "CMakeLists.txt", "lit.cfg.py", "data"]

# FileCheck, not, count: from the LLVM tools directory on PATH.
config.environment["PATH"] = os.pathsep.join(
    [config.attnc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
# attnc, attnc-opt, attnc-dump and attnc-run are found on PATH (tools dir first).
# The Python package checks every kernel library through libattnrt: this
# build's (python/attnc/_runtime.py looks here first).
config.environment["ATTNC_LIBATTNRT"] = os.path.join(config.attnc_obj_root, "runtime",
                                                     "libattnrt.so")
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%cc", config.c_compiler))
config.substitutions.append(("%src", config.attnc_src_root))
config.substitutions.append(("%attnc_build", config.attnc_obj_root))
config.substitutions.append(("%examples", os.path.join(config.attnc_src_root, "examples")))
# A hand-written ABI-v2 kernel (tests/support/fake_kernel.c): runtime and
# attnc-run tests that need no compiler.
config.substitutions.append(("%fake_kernel", os.path.join(config.attnc_obj_root, "tests", "libattnc_fake_kernel.so")))
config.substitutions.append(("%decode_test", os.path.join(config.attnc_obj_root, "tests", "attnc-decode-test")))
config.substitutions.append(("%concurrency_test", os.path.join(config.attnc_obj_root, "tests", "attnc-concurrency-test")))
config.substitutions.append(("%shared_pool_test", os.path.join(config.attnc_obj_root, "tests", "attnc-shared-pool-test")))
config.substitutions.append(("%runtime_core_test", os.path.join(config.attnc_obj_root, "tests", "attnc-runtime-core-test")))
config.substitutions.append(("%runtime_lib", os.path.join(config.attnc_obj_root, "runtime")))
config.substitutions.append(("%runtime_include", os.path.join(config.attnc_src_root, "runtime/include")))

# Optional features.
import subprocess
try:
    subprocess.run([config.python_executable, "-c", "import torch"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    config.available_features.add("torch")
except Exception:
    pass

# Tests that need root (mknod of a device node copy).
if hasattr(os, "geteuid") and os.geteuid() == 0:
    config.available_features.add("root")
# Sanitizer builds (-DATTNC_ASAN=ON, scripts/test.sh --asan) run several
# times slower: tests that measure time (not memory errors) skip there.
if getattr(config, "attnc_asan", "OFF").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("asan")

# A CUDA device this machine can run kernels on: the driver (libcuda.so.1)
# loads, cuInit succeeds and it counts a device. Checked in a child process
# (the driver stays out of lit's). Tests of CUDA kernels on a device
# REQUIRE it; the ones of the no-GPU errors are UNSUPPORTED with it.
_CUDA_PROBE = (
    "import ctypes, sys\n"
    "try:\n"
    "    c = ctypes.CDLL('libcuda.so.1')\n"
    "except OSError:\n"
    "    sys.exit(1)\n"
    "n = ctypes.c_int(0)\n"
    "sys.exit(0 if c.cuInit(0) == 0 and c.cuDeviceGetCount(ctypes.byref(n)) == 0"
    " and n.value > 0 else 1)\n")
try:
    if subprocess.run([config.python_executable, "-c", _CUDA_PROBE], timeout=60,
                      stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode == 0:
        config.available_features.add("cuda-device")
except Exception:
    pass

# NVIDIA's PTX assembler (CUDA toolkit): the PTX attnc embeds is assembled
# for sm_80 and sm_90 when it is there (ATTNC_PTXAS overrides the path).
_ptxas = os.environ.get("ATTNC_PTXAS", "/usr/local/cuda/bin/ptxas")
if os.access(_ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))
else:
    lit_config.note("ptxas not found at %s: the PTX assembly tests "
                    "(REQUIRES: ptxas) are skipped" % _ptxas)

try:
    with open("/proc/cpuinfo") as f:
        _cpuinfo = f.read()
        if " avx512f" in _cpuinfo:
            config.available_features.add("avx512")
        if " avx512_bf16" in _cpuinfo:
            config.available_features.add("avx512bf16")
        if " amx_bf16" in _cpuinfo and " amx_tile" in _cpuinfo:
            config.available_features.add("amx")
except OSError:
    pass
