#!/usr/bin/env bash
# Installs what attnc needs from Debian's archive (idempotent; quiet when all is there).
#   MLIR/LLVM 22, yaml-cpp, fmt, Catch2 v2, CMake + Ninja, and the test peers
#   (python3-numpy, python3-torch, and OpenBLAS so that the BLAS behind them
#   is not the reference implementation) used by tests and benchmarks;
#   venv, pip, setuptools and wheel for `pip install ./python`
#   (tests/python/python-package.test, docs/python.md).
set -euo pipefail
pkgs=(build-essential cmake ninja-build
      libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
      libyaml-cpp-dev libfmt-dev catch2 zlib1g-dev pkgconf
      python3 python3-numpy libopenblas0-pthread
      python3-venv python3-pip python3-setuptools python3-wheel)
# ATTNC_WITH_FUZZ=1 (set by scripts/fuzz.sh only): clang and its libFuzzer /
# sanitizer runtimes for the fuzz harnesses; not needed to build or test.
[ "${ATTNC_WITH_FUZZ:-0}" = 1 ] && pkgs+=(clang-22 libclang-rt-22-dev)
# torch is optional (the torch test skips without it) but install it when we can.
[ "${ATTNC_NO_TORCH:-0}" = 1 ] || pkgs+=(python3-torch)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
