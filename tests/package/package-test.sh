#!/usr/bin/env bash
# Install and package tests (ctest entries package-install, embed-cmake-*):
#
#   package-test.sh install BUILD SRC WORK
#       cmake --install BUILD into a fresh WORK/prefix; checks the layout,
#       that the installed tools run from there (rpath), builds a plain C
#       program against libattnrt with pkg-config (shared) and a CMake
#       consumer with find_package(attnc) (attnc::runtime and
#       attnc::runtime_static), and configures examples/embed-cmake.
#   package-test.sh embed BUILD SRC WORK SHARED|STATIC [fake]
#       builds examples/embed-cmake against WORK/prefix (attnc_add_kernel
#       runs the installed attnc; with `fake`, tests/package/fake_attnc.py,
#       a hand-written ABI v2 kernel) and runs it on a checkpoint written by
#       examples/embed-cmake/make_weights.py. STATIC when attnc cannot write
#       a static archive: prints SKIPPED and exits 77.
set -euo pipefail
mode=$1 build=$2 src=$3 work=$4
# Sanitizer builds (-DATTNC_ASAN=ON) install instrumented libraries: their
# consumers are built with the same flags (ATTNC_CONSUMER_FLAGS, set by
# tests/CMakeLists.txt), or the sanitizer runtime would not load first.
consumer_flags=${ATTNC_CONSUMER_FLAGS:-}
consumer_cmake=()
if [ -n "$consumer_flags" ]; then
  consumer_cmake=("-DCMAKE_C_FLAGS=$consumer_flags" "-DCMAKE_CXX_FLAGS=$consumer_flags"
                  "-DCMAKE_EXE_LINKER_FLAGS=$consumer_flags" "-DCMAKE_SHARED_LINKER_FLAGS=$consumer_flags")
fi
prefix=$work/prefix
py=/usr/bin/python3
step() { echo "== $*"; }

# Exits 77 (ctest: skipped) when the installed attnc compiles the example
# spec into a shared object but cannot write a static archive; exits 1 when
# it cannot compile the spec at all (that is a failure, not a skip).
probe_static() {
  local d=$1 spec=$src/examples/embed-cmake/block.yaml
  if "$prefix/bin/attnc" "$spec" -o "$d/probe.a" > "$d/probe.log" 2>&1 &&
     [ "$(head -c 8 "$d/probe.a" 2>/dev/null)" = '!<arch>' ]; then
    return 0
  fi
  if ! "$prefix/bin/attnc" "$spec" -o "$d/probe.so" > "$d/probe-so.log" 2>&1; then
    echo "FAIL: the installed attnc cannot compile $spec at all:"
    sed 's/^/  /' "$d/probe-so.log"
    exit 1
  fi
  echo "SKIPPED: attnc writes shared objects but not static archives yet (attnc block.yaml -o probe.a:"
  sed 's/^/  /' "$d/probe.log"
  echo "  output: $( [ -e "$d/probe.a" ] && echo "$(wc -c < "$d/probe.a") bytes, not an ar archive" || echo none))"
  exit 77
}

if [ "$mode" = install ]; then
  rm -rf "$work" && mkdir -p "$work"
  step "cmake --install $build --prefix $prefix"
  cmake --install "$build" --prefix "$prefix" > "$work/install.log"
  for f in bin/attnc bin/attnc-opt bin/attnc-dump bin/attnc-translate bin/attnc-run \
           lib/libattnrt.so lib/libattnrt.a lib/libattnrt_core.so lib/libattnrt_core.a \
           include/attnc/runtime/abi.h include/attnc/runtime/Runtime.h \
           include/attnc/runtime/Interpreter.h include/attnc/runtime/weights.h \
           lib/cmake/attnc/attncConfig.cmake lib/cmake/attnc/attncConfigVersion.cmake \
           lib/cmake/attnc/attncTargets.cmake lib/cmake/attnc/AttncAddKernel.cmake \
           lib/pkgconfig/attnc-runtime.pc lib/pkgconfig/attnc-runtime-core.pc share/attnc/python/attnc/__init__.py \
           share/doc/attnc/docs/spec.md; do
    [ -e "$prefix/$f" ] || { echo "FAIL: $prefix/$f was not installed"; exit 1; }
  done
  echo "installed: $(cd "$prefix" && find . -type f | wc -l) files"
  step "installed tools run from the prefix"
  v=$("$prefix/bin/attnc" --version) && echo "${v%%$'\n'*}"
  "$prefix/bin/attnc-run" --version
  rt=$(ldd "$prefix/bin/attnc-run" | awk '/libattnrt\.so/ {print $3}')
  [ -n "$rt" ] && [ "$(readlink -f "$rt")" = "$(readlink -f "$prefix/lib/libattnrt.so")" ] ||
    { echo "FAIL: attnc-run does not load $prefix/lib/libattnrt.so"; ldd "$prefix/bin/attnc-run"; exit 1; }
  echo "attnc-run loads ${rt#$work/}"

  # A consumer of the runtime alone: C through pkg-config, C++ through CMake.
  mkdir -p "$work/consumer"
  cat > "$work/consumer/main.c" <<'C'
#include "attnc/runtime/weights.h"
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
  attnc_tensor_info t = {"c_attn.bias", 1, 0, {3, 1}};
  attnc_kernel_info info;
  memset(&info, 0, sizeof info);
  info.num_weights = 1;
  info.weights = &t;
  attnrt_weights *w = NULL;
  char err[512];
  int rc = attnrt_weights_open(argv[1], argc > 2 ? argv[2] : "", &info, &w, err, sizeof err);
  if (rc != ATTNRT_WEIGHTS_OK) {
    printf("consumer: %s (%s)\n", err, attnrt_weights_strerror(rc));
    return 1;
  }
  const float *b = attnrt_weights_float32(w)[0];
  printf("consumer: %s = [%g, %g, %g]\n", attnrt_weights_source_name(w, 0), b[0], b[1], b[2]);
  attnrt_weights_close(w);
  return 0;
}
C
  $py - "$work/consumer/w.npz" <<'PY'
import sys, numpy as np
np.savez(sys.argv[1], **{"h.0.attn.c_attn.bias": np.array([1.5, -2, 0.25], np.float32)})
PY
  step "pkg-config: plain C against the shared libattnrt"
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
  pkg-config --modversion attnc-runtime
  # shellcheck disable=SC2046
  cc -std=c99 -Wall -Werror $consumer_flags "$work/consumer/main.c" -o "$work/consumer/c-shared" \
     $(pkg-config --cflags --libs attnc-runtime)
  "$work/consumer/c-shared" "$work/consumer/w.npz" h.0.attn. | tee "$work/consumer/out.txt"
  grep -q "consumer: h.0.attn.c_attn.bias = \[1.5, -2, 0.25\]" "$work/consumer/out.txt"
  if "$work/consumer/c-shared" "$work/consumer/w.npz" h.1.attn. > "$work/consumer/err.txt"; then
    echo "FAIL: a missing layer was not an error"; exit 1
  fi
  cat "$work/consumer/err.txt"
  grep -q "no tensor for the kernel's 'c_attn.bias'" "$work/consumer/err.txt"

  step "pkg-config: a loader-only C program against libattnrt_core"
  cat > "$work/consumer/core.c" <<'C'
#include "attnc/runtime/attnrt_c.h"
#include <stdio.h>
int main(void) {
  printf("core: C API %u, ABI %u\n", attnrt_c_api_version(), attnrt_abi_version());
  return 0;
}
C
  # shellcheck disable=SC2046
  cc -std=c99 -Wall -Werror $consumer_flags "$work/consumer/core.c" -o "$work/consumer/c-core" \
     $(pkg-config --cflags --libs attnc-runtime-core)
  "$work/consumer/c-core"
  deps=$(ldd "$work/consumer/c-core")
  if grep -q -e 'libattnrt\.so' -e 'libz\.so' <<< "$deps"; then
    echo "FAIL: the loader-only consumer loads libattnrt.so or zlib"; echo "$deps"; exit 1
  fi
  echo "c-core: libattnrt_core only (no libattnrt.so, no zlib)"

  step "find_package(attnc CONFIG): attnc::runtime, attnc::runtime_static, attnc::runtime_core"
  cat > "$work/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(consumer LANGUAGES C CXX)
find_package(attnc 0.1 CONFIG REQUIRED)
message(STATUS "attnc ${attnc_VERSION}: ${attnc_EXECUTABLE}")
if(NOT COMMAND attnc_add_kernel)
  message(FATAL_ERROR "attnc_add_kernel is not defined")
endif()
add_executable(c-cmake-shared main.c)
target_link_libraries(c-cmake-shared PRIVATE attnc::runtime)
add_executable(c-cmake-static main.c)
set_target_properties(c-cmake-static PROPERTIES LINKER_LANGUAGE CXX)
target_link_libraries(c-cmake-static PRIVATE attnc::runtime_static)
add_executable(c-cmake-core core.c)
target_link_libraries(c-cmake-core PRIVATE attnc::runtime_core)
CM
  cmake -G Ninja -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_BUILD_TYPE=Release "${consumer_cmake[@]}" | grep -E "attnc|Configuring done"
  cmake --build "$work/consumer/build" > "$work/consumer/build.log"
  for exe in c-cmake-shared c-cmake-static; do
    "$work/consumer/build/$exe" "$work/consumer/w.npz" h.0.attn.
  done
  "$work/consumer/build/c-cmake-core"
  # (ldd's output in a variable: `ldd | grep -q` can fail with SIGPIPE
  # under pipefail.)
  deps=$(ldd "$work/consumer/build/c-cmake-static")
  if grep -q libattnrt <<< "$deps"; then
    echo "FAIL: the static consumer loads libattnrt.so"; exit 1
  fi
  echo "c-cmake-static: no libattnrt.so needed"

  step "the installed Python package (PYTHONPATH=prefix/share/attnc/python) on a hand-written kernel"
  "$src/tests/package/fake_attnc.py" "$src/examples/embed-cmake/block.yaml" -o "$work/consumer/libembed_block.so"
  # The package checks kernels with libattnrt: the prefix's, found from
  # share/attnc/python (not $ATTNC_LIBATTNRT, not a build tree).
  env -u ATTNC_LIBATTNRT PYTHONPATH=$prefix/share/attnc/python $py - "$work/consumer/libembed_block.so" "$prefix" <<'PY'
import os, sys, numpy as np, attnc
k = attnc.Kernel(sys.argv[1])
print(k)
rt = attnc.libattnrt_path()
assert os.path.realpath(rt).startswith(os.path.realpath(sys.argv[2]) + "/"), \
    f"libattnrt from {rt}, not from the prefix"
print("python: libattnrt", rt.rsplit("/", 2)[-2] + "/" + rt.rsplit("/", 1)[-1])
w = {n: np.full(s, 0.01, np.float32) for n, s in k.weight_shapes.items()}
y = k.forward(np.ones((2, 3, k.d_model), np.float32), k.pack(w), num_threads=2)
print("python:", attnc.__file__.rsplit("/share/", 1)[-1], "y", y.shape, "y[0,0,0] =", float(y[0, 0, 0]))
PY

  step "examples/embed-cmake configures against the prefix"
  cmake -G Ninja -S "$src/examples/embed-cmake" -B "$work/embed-configure" \
        -DCMAKE_PREFIX_PATH="$prefix" "${consumer_cmake[@]}" | grep -E "Configuring done|Generating done"
  echo "PASS: install and package"
  exit 0
fi

if [ "$mode" = embed ]; then
  kind=$5 fake=${6:-}
  [ -x "$prefix/bin/attnc" ] || { echo "FAIL: no install in $prefix (run package-install first)"; exit 1; }
  tag=$(echo "$kind" | tr 'A-Z' 'a-z')${fake:+-$fake}
  dir=$work/embed-$tag
  rm -rf "$dir" && mkdir -p "$dir"
  extra=()
  if [ "$fake" = fake ]; then
    extra=(-DATTNC_EXECUTABLE="$src/tests/package/fake_attnc.py")
    echo "attnc: tests/package/fake_attnc.py (a hand-written ABI v2 kernel)"
  elif [ "$kind" = STATIC ]; then
    probe_static "$dir"
  fi
  step "configure + build examples/embed-cmake ($kind) against $prefix"
  cp -r "$src/examples/embed-cmake" "$dir/src" # a copy: the test touches its spec
  cmake -G Ninja -S "$dir/src" -B "$dir/build" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_BUILD_TYPE=Release -DEMBED_KERNEL_TYPE="$kind" "${extra[@]}" "${consumer_cmake[@]}" > "$dir/configure.log"
  cmake --build "$dir/build" -v > "$dir/build.log" 2>&1 || { tail -30 "$dir/build.log"; exit 1; }
  lib=$(ls "$dir/build/attnc/embed_block/"libembed_block.*)
  echo "kernel library: ${lib#$dir/build/}"
  deps=$(ldd "$dir/build/embed")
  if [ "$kind" = SHARED ]; then
    grep -q "libembed_block.so => $dir/build/attnc/embed_block/libembed_block.so" <<< "$deps" ||
      { echo "FAIL: embed does not load libembed_block.so from the build"; ldd "$dir/build/embed"; exit 1; }
  elif grep -q libembed_block <<< "$deps"; then
    echo "FAIL: the STATIC build loads libembed_block.so"; exit 1
  fi
  step "run on a GPT-2-style checkpoint (safetensors, layer h.1.attn.)"
  $py "$dir/src/make_weights.py" "$dir/ckpt.safetensors" --layers 3
  "$dir/build/embed" "$dir/ckpt.safetensors" h.1.attn. 4
  step "rebuild after touching the spec re-runs attnc"
  sleep 1 && touch "$dir/src/block.yaml"
  cmake --build "$dir/build" > "$dir/rebuild.log" 2>&1
  grep -q "libembed_block" "$dir/rebuild.log" || { echo "FAIL: attnc did not re-run"; cat "$dir/rebuild.log"; exit 1; }
  echo "attnc re-ran: $(grep -c "libembed_block" "$dir/rebuild.log") line(s)"
  exit 0
fi
if [ "$mode" = two-static ]; then
  # Two kernels as static archives (attnc_add_kernel ... STATIC) in one C
  # program: every global symbol of each archive carries its spec's name,
  # so they link together; both run.
  fake=${5:-}
  [ -x "$prefix/bin/attnc" ] || { echo "FAIL: no install in $prefix (run package-install first)"; exit 1; }
  dir=$work/two-static${fake:+-$fake}
  rm -rf "$dir" && mkdir -p "$dir/src"
  extra=()
  if [ "$fake" = fake ]; then
    extra=(-DATTNC_EXECUTABLE="$src/tests/package/fake_attnc.py")
    echo "attnc: tests/package/fake_attnc.py (a hand-written ABI v2 kernel)"
  else
    probe_static "$dir"
  fi
  printf 'name: enc\nd_model: 32\nheads: 4\nmask: none\nweights: torch_in_proj\n' > "$dir/src/enc.yaml"
  printf 'name: dec\nd_model: 48\nheads: 3\nmask: causal\nweights: gpt2_conv1d\n' > "$dir/src/dec.yaml"
  cat > "$dir/src/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(two_static LANGUAGES C)
find_package(attnc 0.1 CONFIG REQUIRED)
attnc_add_kernel(enc SPEC enc.yaml STATIC)
attnc_add_kernel(dec SPEC dec.yaml STATIC)
add_executable(two main.c)
target_link_libraries(two PRIVATE enc dec)
CM
  cat > "$dir/src/main.c" <<'C'
#include "enc.h"
#include "dec.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Packs constant-ish weights, runs batch 2 x T 5, returns y[0] or NAN. */
static float run(const attnc_kernel_info *info,
                 int (*pack)(const float *const *, const int64_t *, int64_t, float *, int64_t),
                 int64_t (*ws)(int64_t, int64_t, int64_t),
                 int (*fwd)(const attnc_forward_args *)) {
  const void *w[8];
  int64_t n[8];
  for (uint32_t i = 0; i < info->num_weights; ++i) {
    n[i] = info->weights[i].dims[0] * info->weights[i].dims[1];
    float *b = malloc(sizeof(float) * (size_t)n[i]);
    for (int64_t j = 0; j < n[i]; ++j)
      b[j] = (float)((j * 7 + i) % 13) / 64.0f - 0.09f;
    w[i] = b;
  }
  void *packed = malloc((size_t)info->packed_bytes);
  int prc = pack(w, n, info->num_weights, packed, info->packed_bytes);
  for (uint32_t i = 0; i < info->num_weights; ++i)
    free((void *)w[i]);
  if (prc != ATTNC_OK) {
    free(packed);
    return NAN;
  }
  int64_t B = 2, T = 5, bytes = ws(B, T, T);
  float *x = malloc(sizeof(float) * (size_t)(B * T * info->d_model));
  float *y = malloc(sizeof(float) * (size_t)(B * T * info->out_dim));
  for (int64_t j = 0; j < B * T * info->d_model; ++j)
    x[j] = (float)((j * 5) % 11) / 8.0f - 0.6f;
  attnc_forward_args a = {0};
  a.struct_size = sizeof a;
  a.packed = packed; a.packed_bytes = info->packed_bytes;
  a.x = x; a.x_elems = B * T * info->d_model;
  a.y = y; a.y_elems = B * T * info->out_dim;
  a.batch = B; a.seq_len = T;
  a.workspace = malloc((size_t)bytes); a.workspace_bytes = bytes;
  a.num_threads = 1;
  int rc = fwd(&a);
  float y0 = rc == ATTNC_OK ? y[0] : NAN;
  free(packed), free(x), free(y), free(a.workspace);
  return y0;
}

int main(void) {
  const attnc_kernel_info *e = enc_query(ATTNC_ABI_VERSION), *d = dec_query(ATTNC_ABI_VERSION);
  if (!e || !d) return 1;
  float ye = run(e, enc_pack, enc_workspace_size, enc_forward);
  float yd = run(d, dec_pack, dec_workspace_size, dec_forward);
  printf("two-static: %s (d_model %lld) y[0] = %g; %s (d_model %lld) y[0] = %g\n",
         e->name, (long long)e->d_model, ye, d->name, (long long)d->d_model, yd);
  return isfinite(ye) && isfinite(yd) ? 0 : 1;
}
C
  cmake -G Ninja -S "$dir/src" -B "$dir/build" -DCMAKE_PREFIX_PATH="$prefix" "${extra[@]}" \
        "${consumer_cmake[@]}" > "$dir/configure.log"
  cmake --build "$dir/build" > "$dir/build.log" 2>&1 || { tail -30 "$dir/build.log"; exit 1; }
  for k in enc dec; do
    foreign=$(nm -g --defined-only "$dir/build/attnc/$k/lib$k.a" | awk 'NF == 3 {print $3}' | grep -v "^${k}_" || true)
    [ -z "$foreign" ] || { echo "FAIL: lib$k.a exports symbols without the '${k}_' prefix: $foreign"; exit 1; }
    echo "lib$k.a: $(nm -g --defined-only "$dir/build/attnc/$k/lib$k.a" | awk 'NF == 3' | wc -l) global symbols, all ${k}_*"
  done
  "$dir/build/two"
  exit 0
fi
echo "usage: package-test.sh install|embed|two-static BUILD SRC WORK [SHARED|STATIC] [fake]" >&2
exit 2
