#!/usr/bin/env bash
# Installs, builds and runs every test (Catch2 unit tests + the lit suite:
# IR tests, bad-input diagnostics, end-to-end runs, PyTorch cross-check).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)"
