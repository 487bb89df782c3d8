#!/usr/bin/env bash
# Builds and runs one libFuzzer harness (tests/fuzz) for SECONDS seconds.
#
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]
#   TARGET: spec | attn-ir | npy | metadata
#
# Builds with clang-22 and -fsanitize=fuzzer,address,undefined in build-fuzz/
# (installs clang-22 and libclang-rt-22-dev when missing), runs the fuzzer on
# a scratch copy of tests/fuzz/corpus/TARGET (new inputs go to
# build-fuzz/corpus/TARGET, the checked-in seeds stay small) with
# -max_total_time=SECONDS, and prints libFuzzer's final stats. A crash leaves
# its input in build-fuzz/artifacts/TARGET/; copy it to
# tests/fuzz/regressions/TARGET/ so that ctest replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh spec|attn-ir|npy|metadata|weights SECONDS [libFuzzer options]" >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
case "$target" in
  spec|attn-ir|npy|metadata|weights) ;;
  *) echo "fuzz.sh: error: unknown target '$target' (spec, attn-ir, npy, metadata)" >&2; exit 2 ;;
esac
ATTNC_WITH_FUZZ=1 bash scripts/install-deps.sh
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -G Ninja -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DATTNC_FUZZ=ON -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
fi
ninja -C build-fuzz "fuzz-$target"
corpus=build-fuzz/corpus/$target artifacts=build-fuzz/artifacts/$target
mkdir -p "$corpus" "$artifacts"
dict=()
[ -f "tests/fuzz/$target.dict" ] && dict=(-dict="tests/fuzz/$target.dict")
# detect_leaks=0: the attn-ir harness registers MLIR's passes and dialects
# once, inside the first input, and those process-lifetime registrations
# would count as that input's leak. scripts/test.sh --asan checks leaks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "build-fuzz/tests/fuzz/fuzz-$target" "$corpus" "tests/fuzz/corpus/$target" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" "$@"
