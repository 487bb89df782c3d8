#!/usr/bin/env bash
# The main job: build, compile examples/gpt2-small.yaml for this CPU, run it
# on random input, check it against the double-precision interpreter and
# time it.  Usage: scripts/main.sh [SEQ_LEN] (default 128)
set -euo pipefail
cd "$(dirname "$0")/.."
T="${1:-128}"
bash scripts/build.sh
mkdir -p build/out
echo "main: attnc examples/gpt2-small.yaml -o build/out/libgpt2_small_attn.so --header build/out/gpt2_small_attn.h"
./build/tools/attnc examples/gpt2-small.yaml -o build/out/libgpt2_small_attn.so \
  --header build/out/gpt2_small_attn.h -v
echo "main: attnc-run build/out/libgpt2_small_attn.so --seq-len $T --check --bench 20"
./build/tools/attnc-run build/out/libgpt2_small_attn.so --seq-len "$T" --check --bench 20
