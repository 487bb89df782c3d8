#!/usr/bin/env bash
# tests/gpu/run.sh: the CUDA target's check on a GPU machine (see
# tests/gpu/README.md).
#
#   bash tests/gpu/run.sh prepare OUTDIR   here, where build/tools/attnc is:
#       compile the GPU specs with --target cuda-sm90 into OUTDIR, write
#       their weights (.safetensors, shared by attnc-run and torch), copy
#       attnc-run and the libraries it needs, check the weights and the
#       torch block against the CPU kernel
#   bash tests/gpu/run.sh run OUTDIR       there (GPU, torch, no compiler):
#       (a) attnc-run --device cuda --check over T and batch, (b) attnc-run
#       --bench against torch_bench.py (nn.MultiheadAttention and an SDPA
#       block, fp32), one table
#
# Exit codes: 0 all passed; 1 a check or a timing run failed; 2 usage or
# setup error (missing binary, no GPU, prepare failed); 3 nothing failed but
# some planned runs were skipped (time budget, no torch).
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SCRATCH="" # a temporary directory, removed on exit
trap '[ -z "$SCRATCH" ] || rm -rf "$SCRATCH"' EXIT
ROOT=$(cd "$HERE/../.." && pwd)

# The specs (paths relative to the repository root). Any mask, self- or
# cross-attention; not decode or outputs: probs (attnc-run --device cuda
# checks forward's y only, and torch_bench.py builds the plain block).
DEFAULT_SPECS="examples/gpt2-small.yaml examples/llama-gqa.yaml \
examples/mistral-window.yaml tests/gpu/specs/encoder-nomask.yaml \
examples/bert-base.yaml examples/t5-cross.yaml"

usage() {
  cat <<'EOF'
usage: bash tests/gpu/run.sh prepare OUTDIR    (here: build/tools/attnc with --target cuda-sm90)
       bash tests/gpu/run.sh run OUTDIR        (on the GPU machine)

prepare: for each spec (GPU_SPECS, default examples/gpt2-small.yaml,
  examples/llama-gqa.yaml, examples/mistral-window.yaml,
  tests/gpu/specs/encoder-nomask.yaml, examples/bert-base.yaml (padding),
  examples/t5-cross.yaml (cross-attention, padding)) compile
  OUTDIR/libNAME.so with --target cuda-sm90, write
  OUTDIR/weights/NAME.safetensors (random, seed 1) and copy the spec to
  OUTDIR/specs/; copy build/tools/attnc-run and its non-system libraries to
  OUTDIR/bin/; copy this script, torch_bench.py and README.md into OUTDIR;
  then check on the CPU that attnc-run reads the weight files and that
  torch_bench.py's blocks compute what the CPU kernel computes with them
  (SKIP_CPU_CHECK=1 skips that). Then, unless NO_CASES=1, record the e2e
  scripts' CUDA cases in OUTDIR/cases (tests/e2e/real_models.py,
  variants.py, dtypes.py --cuda-device-prepare and tests/gpu/decode_cases.py:
  every score feature, mask, dtype and decode against float64 NumPy or the
  interpreter; tests/gpu/cases.py).
run: (a) attnc-run OUTDIR/libNAME.so --device cuda --check --weights ... at
  T in CHECK_T (default 1 97 1024 4096) x batch in CHECK_B (default 1 4;
  batch 1 only at T >= 4096), T up to the spec's max_seq_len (one T above
  it runs at max_seq_len); padding masks with --lengths (batch 1: none and
  floor(T/2); batch 4: T,ceil(2T/3),1,0), cross-attention at T_kv in
  CHECK_KV_T (default 77) and T (--kv-seq-len), with --kv-lengths under a
  padding mask (batch 1: ceil(T_kv/2); batch 4: ceil(T_kv/2),T_kv,0,T_kv);
  CHECK_JOBS runs at a time (default: half the CPUs, at most 4); plus one
  attnc-vs-torch comparison per spec (T 97, batch 2; padding: batch 4 with
  those lengths; cross: T_kv 77); (a2) the recorded cases, when OUTDIR
  has them (cases.py, CHECK_JOBS at a time); (b) at T in BENCH_T (default
  1024 4096; above max_seq_len: max_seq_len), batch 1, no lengths,
  cross-attention at T_kv = T: attnc-run --bench BENCH_ITERS (default 50)
  and torch_bench.py (same iterations); one table. The whole run keeps to
  GPU_RUN_BUDGET_S (default 570) seconds; every command has a timeout.

environment: ATTNC, ATTNC_RUN (prepare: default build/tools/...), PYTHON
  (default: python3; prepare: /usr/bin/python3 when it has NumPy), GPU_SPECS,
  CHECK_T, CHECK_B, CHECK_KV_T, CHECK_JOBS, BENCH_T, BENCH_ITERS, GPU_RUN_BUDGET_S,
  SKIP_CPU_CHECK, NO_CASES, TORCH_DEVICE (default cuda; cpu only for a dry run of the
  script).
exit: 0 all passed, 1 something failed, 2 usage/setup error, 3 runs skipped.
EOF
}

die() {
  echo "run.sh: error: $*" >&2
  exit 2
}

# spec_key FILE KEY: the value of a top-level 'KEY: value' line (comments
# and quotes cut).
spec_key() {
  sed -n "s/^$2:[[:space:]]*\([^#]*\).*/\1/p" "$1" | head -n1 |
    sed -e 's/[[:space:]]*$//' -e "s/^[\"']\(.*\)[\"']\$/\1/"
}

# mix_lengths N B: B valid lengths in 0..N for a padded batch: the first
# full, the last 0, between them ceil(2N/3), 1, ceil(N/3), ... (B 4:
# N,ceil(2N/3),1,0). mix_kv_lengths N B: the keys' lengths to go with them:
# ceil(N/2) first, N last, between them N, 0, ceil(N/3), ... (B 4:
# ceil(N/2),N,0,N: a full query row against half the keys, a valid query
# row with no key, a length-0 query against all keys). B 1: N, ceil(N/2).
# torch_bench.py's 'mix' is the same.
mix_lengths() {
  local n=$1 b=$2 i out=$1
  [ "$b" -gt 1 ] || { echo "$out"; return; }
  local mid=($(((2 * n + 2) / 3)) 1 $(((n + 2) / 3)))
  for ((i = 0; i < b - 2; i++)); do out="$out,${mid[i % 3]}"; done
  echo "$out,0"
}
mix_kv_lengths() {
  local n=$1 b=$2 i out=$((($1 + 1) / 2))
  [ "$b" -gt 1 ] || { echo "$out"; return; }
  local mid=("$n" 0 $(((n + 2) / 3)))
  for ((i = 0; i < b - 2; i++)); do out="$out,${mid[i % 3]}"; done
  echo "$out,$n"
}

# check_variants PAD CROSS T B: the --check runs of one spec at T x B, one
# line each: the extra arguments for attnc-run (an empty line: none).
# Cross-attention: T_kv in CHECK_KV_T (default 77) and T. Padding, batch 1:
# no lengths (every token valid) and floor(T/2) (T_kv: ceil(T_kv/2));
# batch > 1: mix_lengths (mix_kv_lengths).
check_variants() {
  local pad=$1 cross=$2 T=$3 B=$4 kvs=- S base l
  if [ "$cross" = 1 ]; then
    kvs=""
    for S in ${CHECK_KV_T:-77} "$T"; do
      [[ " $kvs " == *" $S "* ]] || kvs="$kvs $S"
    done
  fi
  for S in $kvs; do
    base=""
    [ "$S" = - ] || base="--kv-seq-len $S"
    if [ "$pad" != 1 ]; then
      echo "$base"
    elif [ "$B" = 1 ]; then
      echo "$base"
      l="--lengths $((T / 2))"
      [ "$cross" != 1 ] || l="$l --kv-lengths $(((S + 1) / 2))"
      echo "$base${base:+ }$l"
    else
      l="--lengths $(mix_lengths "$T" "$B")"
      [ "$cross" != 1 ] || l="$l --kv-lengths $(mix_kv_lengths "$S" "$B")"
      echo "$base${base:+ }$l"
    fi
  done
}

# compare_args PAD CROSS B: the lengths and T_kv of the attnc-vs-torch
# comparisons (T 97; the self-check here and the run there): T_kv 77 for
# cross-attention, mix lengths under a padding mask (batch B).
compare_args() {
  local a=""
  [ "$2" != 1 ] || a="--kv-seq-len 77"
  if [ "$1" = 1 ]; then
    a="$a${a:+ }--lengths $(mix_lengths 97 "$3")"
    [ "$2" != 1 ] || a="$a --kv-lengths $(mix_kv_lengths 77 "$3")"
  fi
  echo "$a"
}

# pretty ARGS: check_variants' arguments as a label (T_kv=.. lengths=..).
pretty() {
  echo "$*" | sed -e 's/--kv-seq-len /T_kv=/' -e 's/--kv-lengths /kv_lengths=/' -e 's/--lengths /lengths=/'
}

# probe_lengths LIB CROSS CMD...: does attnc-run (CMD...: the command that
# runs it) take --lengths (and --kv-lengths) with --device cuda? Prints
# 'refused' when it says they are not available with --device cuda (a usage
# error, exit 2: an attnc-run from before that support), else 'ok' (a GPU
# runs one token; without one: 'no CUDA driver', after the arguments were
# accepted).
probe_lengths() {
  local a=(--device cuda --seq-len 1 --batch 1 --lengths 1) o rc
  [ "$2" != 1 ] || a+=(--kv-seq-len 1 --kv-lengths 1)
  o=$("${@:3}" "$1" "${a[@]}" 2>&1 </dev/null)
  rc=$?
  if [ $rc = 2 ] && echo "$o" | grep -q 'not available with --device cuda'; then
    echo refused
  else
    echo ok
  fi
}

# ------------------------------------------------------------------ prepare

prepare() {
  local out=$1
  local attnc=${ATTNC:-$ROOT/build/tools/attnc}
  local attnc_run=${ATTNC_RUN:-$ROOT/build/tools/attnc-run}
  [ -x "$attnc" ] || die "no compiler at $attnc (build attnc first, or set ATTNC)"
  [ -x "$attnc_run" ] || die "no attnc-run at $attnc_run (build it first, or set ATTNC_RUN)"
  command -v ldd >/dev/null || die "ldd not found (needed to collect attnc-run's libraries)"
  local py=${PYTHON:-}
  if [ -z "$py" ]; then
    for c in /usr/bin/python3 python3; do
      if command -v "$c" >/dev/null && "$c" -c 'import numpy' 2>/dev/null; then
        py=$c
        break
      fi
    done
  fi
  [ -n "$py" ] || die "no python3 with NumPy (needed to write the weight files; set PYTHON)"
  mkdir -p "$out" || die "cannot create $out"
  out=$(cd "$out" && pwd)
  mkdir -p "$out/bin" "$out/specs" "$out/weights"
  rm -f "$out/manifest.tsv" "$out"/lib*.so
  local manifest=$out/manifest.tsv.tmp
  : >"$manifest"

  local spec n f max pad cross
  for spec in ${GPU_SPECS:-$DEFAULT_SPECS}; do
    f=$ROOT/$spec
    [ -f "$f" ] || f=$spec
    [ -f "$f" ] || die "spec $spec not found"
    n=$(basename "$f" .yaml)
    pad=0
    case "$(spec_key "$f" mask)" in
      "" | none | causal | sliding_window) ;;
      padding | causal+padding) pad=1 ;;
      *) die "$spec: mask '$(spec_key "$f" mask)': expected none, causal, padding, causal+padding or sliding_window" ;;
    esac
    cross=0
    case "$(spec_key "$f" cross_attention)" in
      [Tt]rue) cross=1 ;;
    esac
    if grep -Eq '^decode:[[:space:]]*[Tt]rue' "$f" || grep -Eq '^outputs:.*probs' "$f"; then
      die "$spec: decode and outputs: probs are not in this script's runs (forward's y against torch)"
    fi
    echo "== $n: $attnc $spec --target cuda-sm90 -o $out/lib$n.so"
    if ! "$attnc" "$f" --target cuda-sm90 -o "$out/lib$n.so"; then
      die "attnc --target cuda-sm90 failed on $spec (is the CUDA target in this build? 'attnc --help' lists the targets)"
    fi
    cp "$f" "$out/specs/$n.yaml"
    "$py" "$HERE/torch_bench.py" --spec "$f" --write-weights "$out/weights/$n.safetensors" --seed 1 ||
      die "could not write the weights of $spec"
    max=$(spec_key "$f" max_seq_len)
    printf '%s\t%s\t%s\t%s\n' "$n" "${max:-0}" "$pad" "$cross" >>"$manifest"
  done

  # attnc-run and every library it (and a kernel) needs that is not part of
  # the C library or the CUDA driver: libattnrt from the build tree, and
  # libstdc++/libgcc_s/libz so that the GPU machine's versions do not matter.
  echo "== attnc-run and its libraries -> $out/bin/"
  cp "$attnc_run" "$out/bin/attnc-run"
  local lib path missing=0
  for f in "$attnc_run" "$out"/lib*.so; do
    while read -r lib path; do
      case "$lib" in
        linux-vdso* | linux-gate* | ld-linux* | libc.so* | libm.so* | libdl.so* | \
          libpthread.so* | librt.so* | libresolv.so* | libcuda.so* | libnvidia*) continue ;;
      esac
      if [ "$path" = "not found" ]; then
        echo "run.sh: error: $f needs $lib, which ldd does not find" >&2
        missing=1
      elif [ -n "$path" ] && [ ! -e "$out/bin/$lib" ]; then
        cp -L "$path" "$out/bin/$lib" && echo "   $lib ($path)"
      fi
    done < <(ldd "$f" | sed -n 's/^[[:space:]]*\([^[:space:]]*\) => \(not found\|[^ ]*\).*/\1 \2/p')
  done
  [ "$missing" = 0 ] || die "missing libraries (above)"
  LD_LIBRARY_PATH="$out/bin" "$out/bin/attnc-run" --version >/dev/null ||
    die "the copied attnc-run does not run with LD_LIBRARY_PATH=$out/bin"

  # What the libraries declare (metadata only: no GPU needed to read it).
  for f in "$out"/lib*.so; do
    if ! LD_LIBRARY_PATH="$out/bin" "$out/bin/attnc-run" "$f" --info >"$out/bin/.info" 2>&1; then
      echo "run.sh: warning: attnc-run --info $(basename "$f") failed here:" >&2
      sed 's/^/   /' "$out/bin/.info" >&2
    else
      echo "   $(basename "$f"): $(grep -E '^(isa|features):' "$out/bin/.info" | tr '\n' ' ')"
    fi
  done
  rm -f "$out/bin/.info"

  # Does this attnc-run take --lengths/--kv-lengths with --device cuda? Here
  # (no GPU) it should fail with 'no CUDA driver' after reading them.
  local refused=""
  while IFS=$'\t' read -r n max pad cross; do
    [ "$pad" = 1 ] || continue
    if [ "$(probe_lengths "$out/lib$n.so" "$cross" env LD_LIBRARY_PATH="$out/bin" "$out/bin/attnc-run")" = refused ]; then
      refused="$refused $n"
    fi
  done <"$manifest"
  if [ -n "$refused" ]; then
    echo "run.sh: warning: this attnc-run refuses --lengths/--kv-lengths with --device cuda:" >&2
    echo "   the padding runs of$refused will be SKIPPED on the GPU (exit 3); rebuild attnc-run" >&2
    echo "   with that support and prepare again" >&2
  fi

  # The self-check on the CPU: the weight files load into attnc-run (names,
  # shapes), and torch_bench.py's blocks agree with the CPU kernel compiled
  # from the same spec on the same weights and input.
  if [ -z "${SKIP_CPU_CHECK:-}" ]; then
    local tmp
    tmp=$(mktemp -d) || die "mktemp failed"
    SCRATCH=$tmp
    local have_torch=0
    "$py" -c 'import torch' 2>/dev/null && have_torch=1
    echo "== CPU self-check (CPU kernels in $tmp$([ $have_torch = 1 ] || echo '; no torch for '"$py"': weights only'))"
    local B va xa wa ca c i
    while IFS=$'\t' read -r n max pad cross; do
      f=$out/specs/$n.yaml
      "$attnc" "$f" -o "$tmp/lib$n.so" >/dev/null </dev/null || die "attnc (CPU target) failed on $f"
      # Cases: T 97, batch 2; padding: batch 4 with mixed lengths and batch 1
      # without; cross-attention: T_kv 77 (compare_args).
      local cases=("2 ")
      [ "$pad" != 1 ] || cases=("4 $(compare_args 1 "$cross" 4)" "1 $(compare_args 0 "$cross" 1)")
      [ "$pad" = 1 ] || [ "$cross" != 1 ] || cases=("2 $(compare_args 0 1 2)")
      for c in "${cases[@]}"; do
        B=${c%% *}
        va=${c#* }
        # shellcheck disable=SC2206
        ca=($va)
        xa=(--x "$tmp/x.npy")
        wa=(--write-x "$tmp/x.npy")
        if [ "$cross" = 1 ]; then
          xa+=(--x-kv "$tmp/xkv.npy")
          wa+=(--write-x-kv "$tmp/xkv.npy")
        fi
        "$py" "$HERE/torch_bench.py" --spec "$f" "${wa[@]}" --seq-len 97 --batch "$B" \
          "${ca[@]}" </dev/null >/dev/null || die "torch_bench.py --write-x failed"
        # attnc-run takes the input's shapes from the files: no --kv-seq-len.
        local ra=()
        for ((i = 0; i < ${#ca[@]}; i += 2)); do
          [ "${ca[i]}" = --kv-seq-len ] || ra+=("${ca[i]}" "${ca[i + 1]}")
        done
        if ! "$attnc_run" "$tmp/lib$n.so" --weights "$out/weights/$n.safetensors" \
          "${xa[@]}" "${ra[@]}" --out "$tmp/y.npy" --check </dev/null >"$tmp/log" 2>&1; then
          cat "$tmp/log" >&2
          die "$n: the CPU kernel with weights/$n.safetensors failed (above)"
        fi
        local label="$n T=97 B=$B${va:+ $(pretty "$va")}"
        if [ $have_torch = 1 ]; then
          if ! "$py" "$HERE/torch_bench.py" --spec "$f" --device cpu --weights "$out/weights/$n.safetensors" \
            "${xa[@]}" "${ra[@]}" --compare "$tmp/y.npy" </dev/null >"$tmp/log" 2>&1; then
            cat "$tmp/log" >&2
            die "$label: torch_bench.py's blocks disagree with the CPU kernel (above)"
          fi
          echo "   $label: CPU kernel --check PASS; CPU kernel, torch MHA and SDPA block vs float64: PASS"
          grep -o '[0-9]* of [0-9]* rows left out' "$tmp/log" | sort -u |
            sed 's/^/      torch blocks: /; s/$/ (valid query rows that see no key: undefined in torch)/'
        else
          echo "   $label: CPU kernel with the weight file --check PASS"
        fi
      done
    done <"$manifest"
    rm -rf "$tmp"
  fi

  # The e2e scripts' CUDA cases, compiled for the GPU, run there by cases.py.
  rm -rf "$out/cases"
  if [ -z "${NO_CASES:-}" ]; then
    echo "== recording the e2e CUDA cases in $out/cases"
    local s
    for s in real_models variants dtypes; do
      PATH="$(dirname "$attnc"):$(dirname "$attnc_run"):$PATH" "$py" "$ROOT/tests/e2e/$s.py" \
        --work "$out/cases" --cuda-device-prepare "$out/cases" </dev/null | tail -n 1 ||
        die "tests/e2e/$s.py --cuda-device-prepare failed"
    done
    ATTNC=$attnc "$py" "$HERE/decode_cases.py" "$out/cases" </dev/null | tail -n 1 ||
      die "tests/gpu/decode_cases.py failed"
  fi
  cp "$HERE/run.sh" "$HERE/torch_bench.py" "$HERE/cases.py" "$HERE/README.md" "$out/" ||
    die "cannot copy the scripts into $out"
  {
    echo "prepared $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n)"
    git -C "$ROOT" rev-parse HEAD 2>/dev/null
    git -C "$ROOT" status --porcelain 2>/dev/null | sed 's/^/  /'
  } >"$out/PROVENANCE"
  mv "$manifest" "$out/manifest.tsv"
  echo "== prepared $out ($(du -sh "$out" | cut -f1)); on the GPU machine:"
  echo "   bash tests/gpu/run.sh run $out    (or: bash $out/run.sh run $out)"
}

# ---------------------------------------------------------------------- run

# Results: one line each in RESULTS, counts in NPASS/NFAIL/NSKIP.
NPASS=0
NFAIL=0
NSKIP=0
INCOMPLETE=0
FAILS=""

record() { # STATUS TEXT
  case "$1" in
    PASS) NPASS=$((NPASS + 1)) ;;
    FAIL) NFAIL=$((NFAIL + 1)); FAILS="$FAILS
  $2" ;;
    SKIP)
      NSKIP=$((NSKIP + 1))
      # Skips past a spec's max_seq_len are planned; others (time budget,
      # no torch) make the run incomplete: exit 3.
      [[ "$2" == *"max_seq_len"* ]] || INCOMPLETE=1
      ;;
  esac
  printf '%-4s %s\n' "$1" "$2"
}

run() {
  local out
  out=$(cd "$1" 2>/dev/null && pwd) || die "no directory $1"
  [ -f "$out/manifest.tsv" ] || die "$out has no manifest.tsv: not a prepared directory (bash tests/gpu/run.sh prepare $1, here)"
  local bin=$out/bin/attnc-run
  [ -x "$bin" ] || die "no attnc-run in $out/bin"
  local tb=$HERE/torch_bench.py
  [ -f "$tb" ] || tb=$out/torch_bench.py
  [ -f "$tb" ] || die "no torch_bench.py next to run.sh or in $out"
  local py=${PYTHON:-python3}
  local tdev=${TORCH_DEVICE:-cuda}
  command -v timeout >/dev/null || die "coreutils' timeout not found"
  local budget=${GPU_RUN_BUDGET_S:-570}
  local iters=${BENCH_ITERS:-50}
  local start=$SECONDS

  # attnc-run with the copied libraries, under a timeout (seconds).
  arun() {
    local t=$1
    shift
    LD_LIBRARY_PATH="$out/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      timeout -k 10 "$t" "$bin" "$@"
  }
  # Seconds left before the budget, minus a reserve.
  left() { echo $((budget - (SECONDS - start) - ${1:-0})); }

  echo "== tests/gpu/run.sh run $out"
  [ -f "$out/PROVENANCE" ] && sed 's/^/   /' "$out/PROVENANCE" | head -n 3
  local v
  v=$(arun 30 --version 2>&1) || die "attnc-run does not start here: $v"
  echo "   attnc-run: $v"

  # The GPU: nvidia-smi when it is there, and torch.
  local gpu_ok=0 torch_ok=0
  if command -v nvidia-smi >/dev/null; then
    if v=$(timeout -k 5 60 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1); then
      echo "   nvidia-smi: $v"
      gpu_ok=1
    else
      echo "   nvidia-smi failed: $v"
    fi
  fi
  if v=$(TORCH_DEVICE=$tdev timeout -k 5 180 "$py" -c 'import os, sys, torch
if os.environ["TORCH_DEVICE"] == "cpu":
    print(torch.__version__, "on the CPU (TORCH_DEVICE=cpu: a dry run)")
    sys.exit(0)
ok = torch.cuda.is_available()
print(torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0) if ok else "NO GPU")
sys.exit(0 if ok else 1)' 2>&1); then
    echo "   torch: $v"
    torch_ok=1
    [ "$tdev" = cpu ] || gpu_ok=1
  else
    echo "   torch ($py) with CUDA: not usable: $(echo "$v" | tail -n 1)"
  fi
  [ "$gpu_ok" = 1 ] || die "no GPU here (nvidia-smi and torch.cuda see none)"
  [ "$torch_ok" = 1 ] || echo "   (the torch comparison and the torch columns are skipped)"

  local names=() maxes=() pads=() crosses=() lenok=() n max pad cross
  while IFS=$'\t' read -r n max pad cross; do
    [ -f "$out/lib$n.so" ] || die "$out/lib$n.so is missing"
    [ -f "$out/weights/$n.safetensors" ] || die "$out/weights/$n.safetensors is missing"
    [ -f "$out/specs/$n.yaml" ] || die "$out/specs/$n.yaml is missing"
    names+=("$n")
    maxes+=("$max")
    pads+=("${pad:-0}")
    crosses+=("${cross:-0}")
  done <"$out/manifest.tsv"
  [ "${#names[@]}" -gt 0 ] || die "$out/manifest.tsv lists no spec"

  # Padding masks: does this attnc-run take --lengths/--kv-lengths with
  # --device cuda? (One token on the GPU.) If not, the runs with lengths are
  # skipped (exit 3), the runs without them still made.
  local i
  for i in "${!names[@]}"; do
    lenok+=(1)
    [ "${pads[$i]}" = 1 ] || continue
    if [ "$(probe_lengths "$out/lib${names[$i]}.so" "${crosses[$i]}" arun 60)" = refused ]; then
      lenok[i]=0
      echo "   ${names[$i]}: this attnc-run refuses --lengths/--kv-lengths with --device cuda: its runs with lengths are skipped"
    fi
  done
  # SKIP_LEN: why a run with lengths cannot be made.
  local SKIP_LEN="attnc-run refuses --lengths/--kv-lengths with --device cuda: rebuild it, prepare again"

  # (a) correctness: attnc-run --device cuda --check.
  echo
  echo "== (a) attnc-run --device cuda --check (against the CPU interpreter, double)"
  local i T B t0 rc log msg reserve=150 tmo work
  work=$(mktemp -d) || die "mktemp failed"
  SCRATCH=$work
  log=$work/log
  # attnc's y against torch's blocks and a float64 reference, same weights
  # and input: the torch blocks timed below compute the same function.
  # Padding masks: batch 4, lengths 97,65,1,0; cross-attention: T_kv 77
  # (kv_lengths 39,77,0,77).
  local va ca ra xa wa cb k ka
  if [ "$torch_ok" = 1 ]; then
    for i in "${!names[@]}"; do
      n=${names[$i]}
      cb=2
      [ "${pads[$i]}" != 1 ] || cb=4
      va=$(compare_args "${pads[$i]}" "${crosses[$i]}" "$cb")
      local what="$n T=97 B=$cb${va:+ $(pretty "$va")} attnc (cuda) vs torch MHA/SDPA vs float64"
      if [ "$(left $reserve)" -lt 60 ]; then
        record SKIP "$what (time budget)"
        continue
      fi
      if [ "${lenok[$i]}" = 0 ]; then
        record SKIP "$what ($SKIP_LEN)"
        continue
      fi
      # shellcheck disable=SC2206
      ca=($va)
      ra=() # attnc-run and --compare: no --kv-seq-len (the x_kv file sets it)
      for ((k = 0; k < ${#ca[@]}; k += 2)); do
        [ "${ca[k]}" = --kv-seq-len ] || ra+=("${ca[k]}" "${ca[k + 1]}")
      done
      xa=(--x "$work/x.npy")
      wa=(--write-x "$work/x.npy")
      if [ "${crosses[$i]}" = 1 ]; then
        xa+=(--x-kv "$work/xkv.npy")
        wa+=(--write-x-kv "$work/xkv.npy")
      fi
      t0=$SECONDS
      if ! timeout -k 5 60 "$py" "$tb" --spec "$out/specs/$n.yaml" "${wa[@]}" \
        --seq-len 97 --batch "$cb" "${ca[@]}" >/dev/null 2>"$log" ||
        ! arun 60 "$out/lib$n.so" --device cuda --weights "$out/weights/$n.safetensors" \
          "${xa[@]}" "${ra[@]}" --out "$work/y.npy" >>"$log" 2>&1; then
        record FAIL "$what (attnc-run --x/--out failed)"
        tail -n 8 "$log" | sed 's/^/       /'
      elif timeout -k 5 180 "$py" "$tb" --spec "$out/specs/$n.yaml" --device "$tdev" \
        --weights "$out/weights/$n.safetensors" "${xa[@]}" "${ra[@]}" --compare "$work/y.npy" >"$log" 2>&1; then
        record PASS "$what ($((SECONDS - t0)) s) $(grep -o 'attnc  max_abs_err [^ ]*' "$log" | sed 's/  / /')"
      else
        record FAIL "$what (torch_bench.py --compare, exit $?)"
        grep -E '^  |^torch_bench|Error|error' "$log" | tail -n 8 | sed 's/^/       /'
      fi
    done
  else
    record SKIP "attnc vs torch comparison (no torch with CUDA)"
  fi

  # T outermost: under the time budget the short runs of every spec come
  # first. A T above a spec's max_seq_len runs at max_seq_len instead,
  # unless CHECK_T has that T too or it ran already. The plan is made first
  # (c_what, c_run: the spec's index and attnc-run's arguments, or c_skip:
  # why not), then run CHECK_JOBS at a time: the reference is the CPU
  # interpreter, one thread per run, and it is what takes the time.
  local checkt=" ${CHECK_T:-1 97 1024 4096} " Te vars v
  local -A ran=()
  local -a c_what=() c_run=() c_skip=()
  for T in ${CHECK_T:-1 97 1024 4096}; do
    for B in ${CHECK_B:-1 4}; do
      if [ "$B" -gt 1 ] && [ "$T" -ge 4096 ]; then
        continue # the interpreter's reference at batch > 1 is too slow there
      fi
      for i in "${!names[@]}"; do
        n=${names[$i]}
        max=${maxes[$i]}
        Te=$T
        if [ "$max" -gt 0 ] && [ "$T" -gt "$max" ]; then
          Te=$max
          if [[ "$checkt" == *" $Te "* ]] || [ -n "${ran[$n/$Te/$B]:-}" ]; then
            c_what+=("$n T=$T B=$B")
            c_run+=("")
            c_skip+=("T > max_seq_len $max")
            continue
          fi
        fi
        ran[$n/$Te/$B]=1
        mapfile -t vars < <(check_variants "${pads[$i]}" "${crosses[$i]}" "$Te" "$B")
        for v in "${vars[@]}"; do
          local what="$n T=$Te B=$B${v:+ $(pretty "$v")}"
          [ "${pads[$i]}" != 1 ] || [[ "$v" == *lengths* ]] || what="$what lengths=none"
          [ "$Te" = "$T" ] || what="$what (max_seq_len; CHECK_T $T)"
          c_what+=("$what")
          c_run+=("$i --seq-len $Te --batch $B${v:+ $v}")
          if [ "${lenok[$i]}" = 0 ] && [[ "$v" == *lengths* ]]; then
            c_skip+=("$SKIP_LEN")
          else
            c_skip+=("")
          fi
        done
      done
    done
  done

  local jobs=${CHECK_JOBS:-}
  if [ -z "$jobs" ]; then
    jobs=$(($(nproc 2>/dev/null || echo 2) / 2))
    [ "$jobs" -le 4 ] || jobs=4
  fi
  [ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
  # wait -n (one job at a time) needs bash 4.3.
  if [ "${BASH_VERSINFO[0]}" -lt 4 ] || { [ "${BASH_VERSINFO[0]}" = 4 ] && [ "${BASH_VERSINFO[1]}" -lt 3 ]; }; then
    jobs=1
  fi
  echo "   (${#c_what[@]} runs, $jobs at a time: CHECK_JOBS)"
  local nq=${#c_what[@]} k shown=0 running=0 ca
  # show_done: the results of the finished runs, in the plan's order.
  show_done() {
    local st dt tm
    while [ "$shown" -lt "$nq" ] && [ -f "$work/c$shown.rc" ]; do
      read -r st dt tm <"$work/c$shown.rc"
      if [ "$st" = skip ]; then
        record SKIP "${c_what[$shown]} (${c_skip[$shown]})"
      else
        msg=$(grep -o 'max_abs_err [^,]*' "$work/c$shown.log" | head -n 1)
        if [ "$st" = 0 ]; then
          record PASS "${c_what[$shown]} ($dt s) $msg"
        else
          [ "$st" = 124 ] || [ "$st" = 137 ] && msg="timed out after $tm s; $msg"
          record FAIL "${c_what[$shown]} (exit $st${msg:+; $msg})"
          grep -v 'computing the reference' "$work/c$shown.log" | tail -n 8 | sed 's/^/       /'
        fi
      fi
      shown=$((shown + 1))
    done
  }
  for ((k = 0; k < nq; k++)); do
    if [ -z "${c_skip[k]}" ]; then
      while [ "$running" -ge "$jobs" ]; do
        wait -n
        running=$((running - 1))
        show_done
      done
      tmo=$(left $reserve)
      [ "$tmo" -ge 20 ] || c_skip[k]="time budget"
    fi
    if [ -n "${c_skip[k]}" ]; then
      echo skip >"$work/c$k.rc"
      show_done
      continue
    fi
    [ "$tmo" -gt 400 ] && tmo=400
    # shellcheck disable=SC2206
    ca=(${c_run[k]})
    n=${names[${ca[0]}]}
    (
      t0=$SECONDS
      arun "$tmo" "$out/lib$n.so" --device cuda --check "${ca[@]:1}" \
        --weights "$out/weights/$n.safetensors" --seed 1 >"$work/c$k.log" 2>&1
      echo "$? $((SECONDS - t0)) $tmo" >"$work/c$k.rc.tmp"
      mv "$work/c$k.rc.tmp" "$work/c$k.rc"
    ) &
    running=$((running + 1))
    if [ "$jobs" = 1 ]; then
      wait
      running=0
    fi
    show_done
  done
  wait
  show_done

  # (a2) the recorded cases (prepare's OUTDIR/cases).
  local cpy=$HERE/cases.py
  [ -f "$cpy" ] || cpy=$out/cases.py
  if [ -f "$out/cases/cases.jsonl" ]; then
    echo
    echo "== (a2) the e2e scripts' CUDA cases ($(wc -l <"$out/cases/cases.jsonl") runs, $jobs at a time)"
    local cl=$work/cases.log
    if [ "$(left $reserve)" -lt 30 ]; then
      record SKIP "the recorded cases (time budget)"
    else
      timeout -k 5 "$(left $reserve)" "$py" "$cpy" "$out/cases" --bin "$out/bin" --jobs "$jobs" >"$cl" 2>&1
      rc=$?
      local line
      while IFS= read -r line; do
        case "$line" in
          "PASS: "*) record PASS "${line#PASS: }" ;;
          "FAIL: "*) record FAIL "${line#FAIL: }" ;;
          "      "*) echo "$line" ;;
        esac
      done <"$cl"
      if [ $rc != 0 ] && ! grep -q '^FAIL: ' "$cl"; then
        record FAIL "cases.py exit $rc: $(tail -n 1 "$cl")"
      fi
    fi
  fi

  # (b) timing.
  echo
  echo "== (b) timing: attnc-run --device cuda --bench $iters vs torch_bench.py --iters $iters (batch 1)"
  local rows=() ts a_line a_min a_med m_min m_med s_min s_med tlog
  tlog=$work/tlog
  for i in "${!names[@]}"; do
    n=${names[$i]}
    max=${maxes[$i]}
    ts=""
    for T in ${BENCH_T:-1024 4096}; do
      Te=$T
      if [ "$max" -gt 0 ] && [ "$T" -gt "$max" ]; then
        Te=$max
        if [[ ",$ts," == *",$Te,"* ]] || [[ " ${BENCH_T:-1024 4096} " == *" $Te "* ]]; then
          echo "     $n T=$T: skipped (T > max_seq_len $max)"
          continue
        fi
        echo "     $n T=$T: timed at T=$max (max_seq_len)"
      fi
      ts="$ts${ts:+,}$Te"
    done
    [ -n "$ts" ] || continue
    # torch first, all T of this spec in one process.
    : >"$tlog"
    if [ "$torch_ok" = 1 ]; then
      if [ "$(left 20)" -lt 30 ]; then
        record SKIP "$n torch timing (time budget)"
      else
        timeout -k 5 "$(left 20)" "$py" "$tb" --spec "$out/specs/$n.yaml" --device "$tdev" \
          --weights "$out/weights/$n.safetensors" --seq-len "$ts" --batch 1 --iters "$iters" >"$tlog" 2>&1
        rc=$?
        if [ $rc != 0 ]; then
          record FAIL "$n torch_bench.py timing (exit $rc)"
          tail -n 8 "$tlog" | sed 's/^/       /'
        fi
      fi
    fi
    for T in ${ts//,/ }; do
      a_min=- a_med=-
      ka=()
      [ "${crosses[$i]}" != 1 ] || ka=(--kv-seq-len "$T")
      if [ "$(left 10)" -lt 20 ]; then
        record SKIP "$n T=$T attnc timing (time budget)"
      elif arun 120 "$out/lib$n.so" --device cuda --bench "$iters" --seq-len "$T" --batch 1 "${ka[@]}" \
        --weights "$out/weights/$n.safetensors" --seed 1 >"$log" 2>&1; then
        a_line=$(grep -m1 '^bench' "$log")
        a_min=$(echo "$a_line" | sed -n 's/.*min[^0-9]*\([0-9.][0-9.]*\) ms.*/\1/p')
        a_med=$(echo "$a_line" | sed -n 's/.*median[^0-9]*\([0-9.][0-9.]*\) ms.*/\1/p')
        echo "     $n T=$T attnc-run: $a_line"
        if [ -z "$a_min" ] || [ -z "$a_med" ]; then
          record FAIL "$n T=$T attnc-run --bench: no 'min X ms, median Y ms' in its output"
          a_min=- a_med=-
        fi
      else
        record FAIL "$n T=$T attnc-run --bench (exit $?)"
        tail -n 8 "$log" | sed 's/^/       /'
      fi
      m_min=$(sed -n "s/^RESULT T=$T B=1 block=mha min_ms=\([^ ]*\) median_ms=\(.*\)/\1/p" "$tlog")
      m_med=$(sed -n "s/^RESULT T=$T B=1 block=mha min_ms=\([^ ]*\) median_ms=\(.*\)/\2/p" "$tlog")
      s_min=$(sed -n "s/^RESULT T=$T B=1 block=sdpa min_ms=\([^ ]*\) median_ms=\(.*\)/\1/p" "$tlog")
      s_med=$(sed -n "s/^RESULT T=$T B=1 block=sdpa min_ms=\([^ ]*\) median_ms=\(.*\)/\2/p" "$tlog")
      rows+=("$n $T $a_min $a_med ${m_min:--} ${m_med:--} ${s_min:--} ${s_med:--}")
    done
  done
  rm -rf "$work"

  echo
  echo "== timing, batch 1, fp32, ms per call (min / median of $iters); x = torch min / attnc min (> 1: attnc faster)"
  printf '%-16s %6s | %9s %9s | %9s %9s | %9s %9s | %8s %8s\n' \
    spec T "attnc min" median "MHA min" median "SDPA min" median "MHA/attnc" "SDPA/attnc"
  local r
  for r in "${rows[@]}"; do
    # shellcheck disable=SC2086
    set -- $r
    awk -v n="$1" -v T="$2" -v am="$3" -v ad="$4" -v mm="$5" -v md="$6" -v sm="$7" -v sd="$8" '
      function f(v) { return (v == "-" || v == "nan") ? "-" : sprintf("%.3f", v) }
      function x(t, a) { return (t == "-" || t == "nan" || a == "-" || a + 0 <= 0) ? "-" : sprintf("%.2fx", t / a) }
      BEGIN { printf "%-16s %6s | %9s %9s | %9s %9s | %9s %9s | %8s %8s\n",
              n, T, f(am), f(ad), f(mm), f(md), f(sm), f(sd), x(mm, am), x(sm, am) }'
  done

  echo
  echo "== summary: $NPASS passed, $NFAIL failed, $NSKIP skipped ($((SECONDS - start)) s)"
  if [ "$NFAIL" -gt 0 ]; then
    echo "failed:$FAILS"
    return 1
  fi
  if [ "$INCOMPLETE" = 1 ]; then
    echo "incomplete: some runs were skipped for the time budget or a missing torch"
    return 3
  fi
  return 0
}

case "${1:-}" in
  prepare)
    [ $# = 2 ] || { usage >&2; exit 2; }
    prepare "$2"
    ;;
  run)
    [ $# = 2 ] || { usage >&2; exit 2; }
    run "$2"
    exit $?
    ;;
  -h | --help | help)
    usage
    ;;
  *)
    usage >&2
    exit 2
    ;;
esac
