#!/usr/bin/env bash
# Installs, builds and runs every test (Catch2 unit tests + the lit suite:
# IR tests, bad-input diagnostics, end-to-end runs, PyTorch cross-check,
# fuzz corpus and regression replay).
#
#   scripts/test.sh           Release build in build/
#   scripts/test.sh --asan    the same suite built with AddressSanitizer +
#                             UBSan (-DATTNC_ASAN=ON) in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "")
    bash scripts/build.sh
    cd build
    ;;
  --asan)
    bash scripts/install-deps.sh
    if [ ! -f build-asan/build.ninja ]; then
      echo "test: configuring build-asan (ASan + UBSan)"
      cmake -G Ninja -S . -B build-asan -DCMAKE_BUILD_TYPE=Release \
        -DATTNC_ASAN=ON -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
    fi
    echo "test: compiling (ninja -C build-asan)"
    ninja -C build-asan
    cd build-asan
    # Any report fails the test that triggered it: -fno-sanitize-recover=all,
    # and abort_on_error so that a report is a signal, which lit's `not`
    # does not accept as an expected failure.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    ;;
  *)
    echo "usage: scripts/test.sh [--asan]" >&2
    exit 2
    ;;
esac
ctest --output-on-failure -j "$(nproc)"
