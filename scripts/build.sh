#!/usr/bin/env bash
# Installs missing Debian packages (scripts/install-deps.sh), then configures
# and builds attnc in ./build (Release, Ninja). Idempotent and incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
  echo "build: configuring (cmake -G Ninja, Release)"
  cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
fi
echo "build: compiling (ninja -C build)"
ninja -C build
