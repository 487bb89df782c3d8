#!/usr/bin/env bash
# The performance benchmark (not a test): builds attnc, compiles
# examples/gpt2-small.yaml (default target: AVX-512 + AVX2 in one library)
# and the FP32 peak probe, installs the peers' OpenMP OpenBLAS if missing,
# then runs tests/bench/bench_block.py: one table, bench.csv, bench.svg and
# bench-speedup.svg in build/bench/ (tests/bench/bench_chart.py --csv
# build/bench/bench.csv redraws the two charts from the saved results);
# then the KV-cache decode step at T_past = 1024
# (tests/bench/bench_decode.py: attnc against the read-bandwidth floor and
# torch/NumPy decode steps, build/bench/decode.csv). Takes 10-20 minutes
# on a 2-core machine; extra arguments go to bench_block.py (e.g. --seq
# 128 512 --threads 1 for a quick look). BENCH_DECODE=0 skips the decode
# row, BENCH_BLOCK=0 the block table. Then the Llama-shaped block with RoPE
# against a torch block with the same RoPE, the RoPE phase's share and the
# score modifiers' cost (tests/bench/bench_llama.py; BENCH_LLAMA=0 skips it).
# Then bf16 (tests/bench/bench_bf16.py; BENCH_BF16=0 skips it): the bf16
# peak, GPT-2 small and the Llama shape in dtype bf16 against attnc's float32
# blocks and torch in bf16, the bf16 GEMMs' % of peak, decode steps against
# their read floors, the packed bytes per weight dtype.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
if ! dpkg-query -W -f='${Status}' libopenblas0-openmp 2>/dev/null | grep -q "install ok installed"; then
  echo "bench: installing libopenblas0-openmp (the tuned peers' BLAS)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get install -y -qq --no-install-recommends libopenblas0-openmp >/dev/null || true
fi
out=build/bench
mkdir -p "$out"
# GPT-2 small's block without its max_seq_len (the table goes to T = 2048).
grep -v '^max_seq_len' examples/gpt2-small.yaml > "$out/gpt2-small-unbounded.yaml"
./build/tools/attnc "$out/gpt2-small-unbounded.yaml" -o "$out/libgpt2_small_attn.so"
cc -O2 -pthread tests/bench/peak_fma.c -o "$out/peak_fma"
if [ "${BENCH_BLOCK:-1}" != 0 ]; then
  /usr/bin/python3 tests/bench/bench_block.py --attnc-run build/tools/attnc-run \
    --lib "$out/libgpt2_small_attn.so" --peak "$out/peak_fma" \
    --csv "$out/bench.csv" --svg "$out/bench.svg" \
    --speedup-svg "$out/bench-speedup.svg" "$@"
fi
if [ "${BENCH_DECODE:-1}" != 0 ]; then
  ./build/tools/attnc examples/gpt2-decode.yaml -o "$out/libgpt2_decode_attn.so"
  cc -O2 -pthread tests/bench/read_bw.c -o "$out/read_bw"
  rm -f "$out/decode.csv"
  /usr/bin/python3 tests/bench/bench_decode.py --attnc-run build/tools/attnc-run \
    --lib "$out/libgpt2_decode_attn.so" --read-bw "$out/read_bw" --threads 1 2 \
    --csv "$out/decode.csv"
fi
if [ "${BENCH_LLAMA:-1}" != 0 ]; then
  /usr/bin/python3 tests/bench/bench_llama.py --attnc build/tools/attnc \
    --attnc-run build/tools/attnc-run --work "$out/llama"
fi
if [ "${BENCH_BF16:-1}" != 0 ]; then
  cc -O2 -pthread tests/bench/read_bw.c -o "$out/read_bw"
  /usr/bin/python3 tests/bench/bench_bf16.py --attnc build/tools/attnc \
    --attnc-run build/tools/attnc-run --peak "$out/peak_fma" --read-bw "$out/read_bw" \
    --work "$out/bf16"
fi
