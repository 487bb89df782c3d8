//===- attnc-run.cpp - load, run, check and time a generated kernel -------===//
//
//   attnc-run LIB.so [--seq-len T] [--batch B] [--x x.npy] [--weights DIR]
//             [--out y.npy] [--check] [--expected y.npy] [--bench N]
//             [--threads P] [--seed S] [--info]
//             [--lengths L,..] [--x-kv x_kv.npy | --kv-seq-len N]
//             [--kv-lengths L,..] [--probs p.npy]
//             [--heatmap p.svg [--head H] [--heatmap-batch B]]
//             [--decode-steps K [--decode-chunk C]] [--device cpu|cuda]
//
// Links only libattnrt (no MLIR/LLVM, no CUDA: for a CUDA kernel,
// --device cuda, libattnrt dlopen()s the driver, libcuda.so.1). Every size
// is checked (against the kernel's max_seq_len, for 64-bit overflow with
// attnrt's checked arithmetic, and against this machine's memory, and the
// device's) before anything is allocated. With --device cuda the weights
// are packed on the host, then packed/x/x_kv (and the lengths, checked on
// the host) go to device buffers, forward runs there and y comes back
// (--decode-steps: the KV caches live on the device, each step's token and
// positions go up, its y row comes back); everything after (--check,
// --out, --expected) is the CPU path's. Exit codes: docs/exit-codes.md
// (and --help).
//
//===----------------------------------------------------------------------===//
#include <csignal>
#include "attnc/runtime/Checked.h"
#include "attnc/runtime/Cuda.h"
#include "attnc/runtime/Heatmap.h"
#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Files.h"
#include "attnc/runtime/Runtime.h"
#include "attnc/runtime/attnrt_c.h"
#include "attnc/runtime/weights.h"

#include "JsonValue.h"
#include "attnc/Spec/BlockParams.h"
#include "attnc/Spec/Spec.h"
#include "attnc/runtime/Checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using attncrun::JsonValue;

/// --json: one JSON object on stdout (docs/json.md), everything else on
/// stderr. Set before the options are parsed, so that a usage error is
/// reported as a JSON error object too.
bool gJson = false;
/// The last error message (error(), usageError()): the "error" of the JSON
/// error object.
std::string gLastError;
/// The JSON object was printed (no error object after it).
bool gJsonPrinted = false;

// Exit codes (docs/exit-codes.md).
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1; // check failed, or the kernel returned an error
constexpr int kExitInput = 2;  // usage or input error
constexpr int kExitLoad = 10;  // + attnrt::LoadError (11..16)

const char *kUsage =
    "attnc-run: load an attnc kernel library, run it, check it, time it\n"
    "\n"
    "usage: attnc-run LIB.so [options]\n"
    "\n"
    "Every option that takes a value is spelled --opt VALUE or --opt=VALUE.\n"
    "\n"
    "  --seq-len T        sequence length (default 128, or the kernel's max_seq_len\n"
    "                     when that is smaller)\n"
    "  --batch B          batch size (default 1)\n"
    "  --x FILE.npy       input x [B, T, d_model] float32, or float16, float64\n"
    "                     or ml_dtypes' bfloat16 (saved as '|V2') converted\n"
    "                     with a note on stderr, and rounded (noted) to a\n"
    "                     bf16/f16 kernel's dtype (default: random N(0,1));\n"
    "                     its shape sets B and T\n"
    "  --x-scale S        multiply the random input by S (finite; logits grow\n"
    "                     with S^2: 'peaky' softmax rows); the random x and\n"
    "                     x_kv only (with --x, and --x-kv for a cross kernel:\n"
    "                     a usage error)\n"
    "  --weights PATH     the storage tensors (names: see --info) from a directory\n"
    "                     of NAME.npy, a .npz or a .safetensors file (f16/bf16/f64\n"
    "                     converted); default: random, scaled like a trained layer.\n"
    "                     A PyTorch .bin/.pt checkpoint (pickles) is refused with\n"
    "                     the command that converts it\n"
    "  --weights-prefix P only names starting with P, P removed: one layer of a\n"
    "                     checkpoint ('h.3.attn.', 'model.layers.3.self_attn.');\n"
    "                     needs --weights\n"
    "  --hf DIR --module PATH  the weights of the attention module PATH of a\n"
    "                     Hugging Face model directory (its .safetensors shards;\n"
    "                     the same as --weights DIR --weights-prefix PATH;\n"
    "                     --layer N instead of --module: the module attnc --hf\n"
    "                     DIR --layer N compiles, named in a note.) The\n"
    "                     kernel is compared with the block DIR/config.json\n"
    "                     describes for PATH: a warning names what differs\n"
    "                     (another module's or checkpoint's kernel; element\n"
    "                     types, decode, max_seq_len, probs, padding lengths\n"
    "                     and a tensor-parallel split are the kernel's own)\n"
    "  --seed S           seed for random weights and inputs (default 1)\n"
    "  --out FILE.npy     write y [B, T, out_dim] as float32 ('<f4', also for a\n"
    "                     bf16/f16 kernel: its values exactly); all or nothing:\n"
    "                     a temporary beside it, renamed (one a killed run left\n"
    "                     is removed by the next run); refused when it is an input\n"
    "  --check            compare y with the double-precision interpreter:\n"
    "                     FAIL (exit 1) on any NaN/inf in y or in the reference,\n"
    "                     or when some element has |y - ref| > atol + rtol*|ref|\n"
    "                     + B, B being that element's float32 error bound\n"
    "                     (docs/checking.md: a probabilistic rounding-error\n"
    "                     model, lambda 10), or where B is infinite or wider\n"
    "                     than max |ref| (unbounded: float32 cannot tell which\n"
    "                     key wins); progress goes to stderr when the\n"
    "                     reference takes more than a second\n"
    "  --rigorous-bound   --check with the worst-case bound instead (never\n"
    "                     exceeded by any float32 evaluation order, but wide:\n"
    "                     at GPT-2 sizes it checks little)\n"
    "  --expected FILE.npy  compare y with a reference file [B, T, out_dim]:\n"
    "                     the same gate and report as --check, allowance\n"
    "                     atol + rtol*|ref| only (no bound for a file);\n"
    "                     float16/float64/bfloat16 converted, as --x\n"
    "  --no-bound         --check without the float32 bound: allowance\n"
    "                     atol + rtol*|ref| only (strict: a correct float32\n"
    "                     kernel can fail it on ill-conditioned inputs)\n"
    "  --atol A, --rtol R tolerances of --check and --expected (finite, >= 0;\n"
    "                     default 1e-5 and 1e-4)\n"
    "  --threads P        threads of the kernel's built-in pool (default 1;\n"
    "                     0 = one per online CPU; at most 4096)\n"
    "  --bench N          time N calls (N <= 1000000): min and median ms per call, useful\n"
    "                     GFLOP/s at the min, the thread count, and the pack time\n"
    "                     (--device cuda: CUDA events around each call, after\n"
    "                     one warm-up call; with --decode-steps around each\n"
    "                     decode step)\n"
    "  --device cpu|cuda  where forward runs (default cpu). cuda: a CUDA kernel\n"
    "                     (attnc --target cuda-sm80/-sm90) on CUDA device 0:\n"
    "                     weights packed on the host, packed/x/x_kv and the\n"
    "                     --lengths/--kv-lengths (checked on the host first)\n"
    "                     copied to device buffers, y (and the attention\n"
    "                     weights of a kernel with the probs output) copied\n"
    "                     back, then --check/--out/--expected/--probs/--heatmap\n"
    "                     as on the CPU. Needs the\n"
    "                     CUDA driver (libcuda.so.1) and a device at least as\n"
    "                     new as the kernel's sm; a CPU kernel is refused, and\n"
    "                     a CUDA kernel without --device cuda. --decode-steps:\n"
    "                     the KV caches are device buffers, each step's tokens\n"
    "                     and positions are copied up and its y rows back. Not\n"
    "                     with --threads (other than 1): a usage error\n"
    "  --info             print the library's metadata (names, not codes) and exit\n"
    "  --json             print one JSON object on stdout instead of the text\n"
    "                     (--info; a run with --check, --expected, --bench):\n"
    "                     stable keys, numbers as numbers, docs/json.md; notes\n"
    "                     and progress stay on stderr, and a failure prints\n"
    "                     {\"kind\": \"error\", \"error\": ..., \"exit_code\": N}\n"
    "\n"
    "attention variants (each only for a kernel whose --info features list it):\n"
    "  --lengths L1,L2,.. valid tokens per sequence, one per batch entry, each\n"
    "                     0..seq_len (features: lengths; padding masks); query\n"
    "                     rows past the length give zero y rows. 'random': drawn\n"
    "                     from --seed, uniform in 0..seq_len. Default: none\n"
    "                     passed (NULL: every token valid)\n"
    "  --x-kv FILE.npy    the K/V input [B, T_kv, d_model] float32 (other types\n"
    "                     converted and rounded, as --x) of a cross-attention kernel\n"
    "                     (features: cross); B must be the batch; its shape sets\n"
    "                     T_kv\n"
    "  --kv-seq-len N     T_kv for a random K/V input (drawn after x from the\n"
    "                     same seed); default for a cross kernel: seq_len\n"
    "  --kv-lengths L,..  valid keys per sequence, each 0..T_kv, or 'random'\n"
    "                     (features: cross and lengths); default: none (all)\n"
    "  --probs FILE.npy   write the kernel's attention weights [B, heads, T,\n"
    "                     T_kv] (features: probs). With --check the weights are\n"
    "                     checked too (a second PASS/FAIL line, same --atol/\n"
    "                     --rtol plus their own float32 bound)\n"
    "  --heatmap FILE.svg draw the attention weights of one sequence as an SVG\n"
    "                     heatmap (features: probs): one panel per head; pairs\n"
    "                     the mask hides are hatched grey (legend: masked)\n"
    "  --head H           only head H in the heatmap\n"
    "  --heatmap-batch B  the sequence to draw (default 0)\n"
    "  --decode-steps K   KV-cache decode (features: decode): forward over the\n"
    "                     first T-K tokens of x fills a cache of T rows, then\n"
    "                     NAME_decode runs the last K tokens one at a time;\n"
    "                     y (--out, --check) holds all T rows, so --check\n"
    "                     compares prefill + decode with the interpreter's\n"
    "                     forward over T tokens (dynamic NTK or longrope\n"
    "                     RoPE: with the interpreter's cache, each call's\n"
    "                     keys rotated as that call rotated them, as a\n"
    "                     cache does). 1 <= K <= T (K = T: no\n"
    "                     prefill). With --bench N: N calls of the last\n"
    "                     decode step (position T-1), with the bytes it reads\n"
    "                     (weights + cache) and their rate\n"
    "  --decode-chunk C   with --decode-steps: C (at most K) new tokens per NAME_decode call\n"
    "                     (chunked prefill; the last call takes the rest),\n"
    "                     default 1. x86 kernels; a CUDA kernel takes one\n"
    "                     token per call\n"
    "  --help, --version  this text; the runtime's ABI version\n"
    "\n"
    "Variant options on a kernel without the feature, a count of lengths other\n"
    "than the batch, a length out of range, or a --x-kv whose batch differs\n"
    "are usage errors (2).\n"
    "\n"
    "Sizes are checked before anything is allocated: batch and seq_len >= 1,\n"
    "seq_len <= the kernel's max_seq_len, no 64-bit overflow, and the buffers\n"
    "(x, y, workspace, weights, reference) within this machine's memory.\n"
    "\n"
    "Files: inputs (the library, --x, --x-kv, --expected, --weights and the\n"
    "files in its directory) must be regular files (a FIFO or device is\n"
    "refused, never waited on); an output (--out, --probs, --heatmap) that is\n"
    "one of them or another output is refused; outputs are written to a\n"
    "temporary beside them and renamed, so a failed write leaves the old file.\n"
    "An option given twice is a usage error (the second would silently\n"
    "replace the first). Options that would do nothing (--weights-prefix without --weights,\n"
    "--atol/--rtol without a check, --no-bound/--rigorous-bound without\n"
    "--check) are usage errors.\n"
    "\n"
    "environment: ATTNC_ISA=amxbf16|avx512bf16|avx512|avx2|x86-64 (any case) caps the code path\n"
    "a CPU kernel runs (e.g. avx2 on an AVX-512 machine); another value is an\n"
    "input error (2) for a run (--info reports it as selected_isa: none).\n"
    "\n"
    "exit codes (docs/exit-codes.md):\n"
    "   0  ok (and, with --check/--expected, the gate passed)\n"
    "   1  check failed, the kernel returned an error status, or this CPU\n"
    "      has none of the library's code paths (selected_isa: none); a CUDA\n"
    "      kernel without --device cuda, a CPU kernel with it; no CUDA driver,\n"
    "      no (new enough) CUDA device, or a failed CUDA call\n"
    "   2  usage or input error (bad option or value, unreadable or\n"
    "      mis-shaped .npy, size out of range or too large for memory, an\n"
    "      unknown ATTNC_ISA, a PyTorch checkpoint as --weights)\n"
    "  11  library cannot be opened (missing, not a regular file, not ELF,\n"
    "      truncated, or corrupt: its CRC-32 does not match its bytes)\n"
    "  12  not an attnc kernel (no attnc_query)\n"
    "  13  kernel ABI newer than this runtime\n"
    "  14  ABI version or struct size mismatch\n"
    "  15  metadata the runtime cannot trust (also: NAME_workspace_size asks\n"
    "      for more than the metadata allows)\n"
    "  16  missing entry point\n";

/// Meaning of a NAME_pack / NAME_forward return code (libattnrt's text).
const char *statusText(int rc) { return attnrt::statusText(rc); }

// Every enum value in its one spelling (abi_names.def, through Block.h).
const char *maskName(uint32_t m) { return attnrt::nameOf("mask", m); }
const char *layoutName(uint32_t l) { return attnrt::nameOf("layout", l); }

const char *isaName(uint32_t isa);
/// A multi library with bf16 activations, and bf16 weights or bf16 dot
/// products in its attention (every block but relative_key's), has the
/// AVX512-BF16 path first (attnc-set-target); float32 or f16 activations
/// keep to the float32 paths.
bool hasBf16Path(const attnc_kernel_info &ki) {
  return ki.isa == ATTNC_ISA_MULTI && ki.dtype == ATTNC_DTYPE_BF16 &&
         (ki.weight_dtype == ATTNC_DTYPE_BF16 || ki.rel_key_positions <= 0);
}
/// ... and, with bf16 weights too, the AMX-BF16 path before it.
bool hasAmxPath(const attnc_kernel_info &ki) {
  return ki.isa == ATTNC_ISA_MULTI && ki.dtype == ATTNC_DTYPE_BF16 &&
         ki.weight_dtype == ATTNC_DTYPE_BF16;
}

/// The kernel's isa, a multi library's code paths spelled out.
const char *isaName(const attnc_kernel_info &ki) {
  if (hasAmxPath(ki))
    return "multi (x86-amx-bf16, x86-avx512-bf16, x86-avx512, x86-avx2)";
  if (hasBf16Path(ki))
    return "multi (x86-avx512-bf16, x86-avx512, x86-avx2)";
  return isaName(ki.isa);
}

const char *isaName(uint32_t isa) {
  // The multi library's code paths and "none" spelled out.
  if (isa == ATTNC_ISA_MULTI)
    return "multi (x86-avx512, x86-avx2)";
  if (isa == ATTNC_ISA_NONE)
    return "none (this CPU has none of the library's code paths)";
  return attnrt::isaName(isa);
}

/// The argument features (ATTNC_FEATURE_CHECKSUM is a property of the
/// file, not an argument the kernel reads: --info prints it on its own
/// line).
std::string featureNames(uint32_t f) {
  return attnrt::featureNames(f & ~ATTNC_FEATURE_CHECKSUM);
}

void error(const std::string &msg) {
  gLastError = msg;
  std::fprintf(stderr, "attnc-run: error: %s\n", msg.c_str());
}

int usageError(const std::string &msg) {
  gLastError = msg;
  std::fprintf(stderr, "attnc-run: error: %s (see --help)\n", msg.c_str());
  return kExitInput;
}

/// The names of the features bits, for --json.
JsonValue featureList(uint32_t f) {
  JsonValue a = JsonValue::array();
  for (auto [bit, name] :
       {std::pair{ATTNC_FEATURE_LENGTHS, "lengths"}, std::pair{ATTNC_FEATURE_CROSS, "cross"},
        std::pair{ATTNC_FEATURE_PROBS, "probs"}, std::pair{ATTNC_FEATURE_DECODE, "decode"},
        std::pair{ATTNC_FEATURE_CUDA, "cuda"}, std::pair{ATTNC_FEATURE_ROPE, "rope"},
        std::pair{ATTNC_FEATURE_SCORE_MODS, "score_mods"}})
    if (f & bit)
      a.push(name);
  return a;
}

/// The code path an ATTNC_ISA_* value names, for --json: the runtime's
/// short name, null for ATTNC_ISA_NONE.
JsonValue isaJson(uint32_t isa) {
  if (isa == ATTNC_ISA_NONE)
    return nullptr;
  return attnrt::isaName(isa);
}

/// The start of every --json object.
JsonValue jsonHeader(const char *kind) {
  JsonValue j = JsonValue::object();
  j.set("format", "attnc-run");
  j.set("format_version", 1);
  j.set("kind", kind);
  return j;
}

/// Prints `j` as the one JSON object of this run.
void printJson(const JsonValue &j) {
  std::fputs(j.dump().c_str(), stdout);
  std::fflush(stdout);
  gJsonPrinted = true;
}

/// True when `s` starts like a number as written on a command line: a
/// digit, or '-' (or '.') and a digit; not a space, a '+' or anything
/// strtoll/strtod would skip or accept in front.
bool plainNumberStart(const std::string &s) {
  size_t i = s[0] == '-' ? 1 : 0;
  if (i < s.size() && s[i] == '.')
    ++i;
  return i < s.size() && s[i] >= '0' && s[i] <= '9';
}

bool parseInt(const std::string &s, int64_t &out) {
  if (s.empty() || !plainNumberStart(s))
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || !end || *end)
    return false;
  out = v;
  return true;
}

bool parseFinite(const std::string &s, double &out) {
  if (s.empty() || !plainNumberStart(s))
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtod(s.c_str(), &end);
  return end && !*end && std::isfinite(out) && errno != ERANGE;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(1 << 30));
  return buf;
}

/// This machine's physical memory in bytes (INT64_MAX when unknown).
int64_t physicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  int64_t bytes;
  if (pages <= 0 || size <= 0 || !attnrt::checkedMul(pages, size, bytes))
    return INT64_MAX;
  return bytes;
}

/// The storage weights: random, or from PATH (a .npy directory, .npz or
/// .safetensors, weights.h: names mapped onto the kernel's, shapes checked,
/// other float types converted). All weight loading is here.
bool loadWeights(const std::string &path, const std::string &prefix,
                 const attnc_kernel_info &ki,
                 const std::vector<attnrt::TensorShape> &tensors,
                 std::mt19937_64 &rng, std::vector<std::vector<float>> &weights) {
  weights.clear();
  if (path.empty()) {
    weights = attnrt::randomWeights(tensors, rng);
    return true;
  }
  std::string msg;
  attnrt::Weights loaded = attnrt::Weights::open(path, prefix, ki, msg);
  if (!loaded) {
    error(msg);
    return false;
  }
  for (const std::string &note : loaded.notes())
    std::fprintf(stderr, "attnc-run: %s%s\n",
                 note.rfind("warning: ", 0) == 0 ? "" : "note: ", note.c_str());
  for (uint32_t i = 0; i < loaded.count(); ++i)
    weights.emplace_back(loaded.float32()[i], loaded.float32()[i] + loaded.elems()[i]);
  return true;
}

/// attnc-run --hf DIR --module PATH: the kernel against the block DIR's
/// config.json describes for PATH, derived as attnc --hf derives it. A
/// kernel compiled from another module (T5's encoder run on its decoder's
/// weights, a sliding layer's on a global one's) or another checkpoint
/// (rope_theta 1e4 run on a 5e5 model) loads the weights fine and passes
/// --check, which replays the kernel's own block: a warning names each
/// fact that differs. A config.json the import cannot read is a note.
void checkAgainstConfig(const std::string &lib, const std::string &dir,
                        const std::string &module, const attnrt::BlockParams &kernel) {
  attnc::HfReaders readers;
  readers.checkJson = attnrt::checkJson;
  const attnc::HfSpec hf = attnc::specFromHf(dir, module, -1, {}, readers);
  attnc::SpecResult derived;
  if (hf.error.empty())
    derived = attnc::parseSpecString(hf.yaml, "<derived spec of " + dir + "/config.json>");
  std::string why = !hf.error.empty() ? hf.error : derived.error;
  if (why.rfind("attnc: error: ", 0) == 0) // (the import's own prefix)
    why = why.substr(14);
  if (!why.empty()) {
    std::fprintf(stderr, "attnc-run: note: the kernel is not compared with %s/config.json's "
                 "module %s: %s\n", dir.c_str(), module.c_str(),
                 why.substr(0, why.find('\n')).c_str());
    return;
  }
  const std::vector<std::string> diffs =
      attnc::modelDifferences(kernel, attnc::blockParams(*derived.spec));
  if (diffs.empty())
    return;
  std::string list;
  for (const std::string &d : diffs)
    list += (list.empty() ? "" : "; ") + d;
  std::fprintf(stderr,
               "attnc-run: warning: %s does not compute the attention of %s as %s/config.json "
               "describes it: %s. Its output is not that module's (--check compares with the "
               "kernel's own block); attnc --hf %s --module %s compiles the module's kernel\n",
               lib.c_str(), module.c_str(), dir.c_str(), list.c_str(), dir.c_str(),
               module.c_str());
}

/// A note on stderr when a file's values are not already of the type they
/// are used as (`target`: the kernel's dtype for x and x_kv, float32 for
/// --expected): readNpy converted the file to float32 (NpyArray::dtype:
/// float16, float64, big-endian float32, or ml_dtypes' bfloat16 saved as
/// '|V2', read as such), and attnc-run rounds x to a bf16 or f16 kernel's
/// type.
void noteConverted(const std::string &path, const attnrt::NpyArray &arr,
                   uint32_t target = ATTNC_DTYPE_F32) {
  const std::string &d = arr.dtype;
  const bool raw = attnrt::npyRawBf16(d);
  const char w = d.size() == 3 ? d[2] : '4';
  // The file's type as a dtype code (float64: none; big-endian float32 is
  // float32 once read).
  const int64_t src = raw ? int64_t(ATTNC_DTYPE_BF16) : w == '2' ? int64_t(ATTNC_DTYPE_F16)
                      : w == '8' ? int64_t(-1) : int64_t(ATTNC_DTYPE_F32);
  const char *what = raw ? "bfloat16" : w == '2' ? "float16" : w == '8' ? "float64"
                     : d.empty() ? "float32" : "big-endian float32";
  const char *to = target == ATTNC_DTYPE_BF16 ? "bfloat16"
                   : target == ATTNC_DTYPE_F16 ? "float16" : "float32";
  // Already of the target type (a byte swap is still noted).
  const bool same = src == int64_t(target) && (d.empty() || d[0] != '>');
  if (same && !raw)
    return;
  // Narrowing rounds: float64 to anything, float32 to a 16-bit type, and
  // between the two 16-bit types.
  const bool rounds = src != int64_t(target) && (src == -1 || target != ATTNC_DTYPE_F32);
  const std::string tail = std::string(to) +
                           (target != ATTNC_DTYPE_F32 ? ", the kernel's dtype" : "") +
                           (rounds ? " (rounded to nearest)" : "");
  if (raw)
    std::fprintf(stderr, "attnc-run: note: %s: %s%s%s\n", path.c_str(),
                 attnrt::npyRawBf16Note(d).c_str(), same ? "" : ", converted to ",
                 same ? "" : tail.c_str());
  else
    std::fprintf(stderr, "attnc-run: note: %s: %s ('%s') converted to %s\n", path.c_str(),
                 what, d.empty() ? "<f4" : d.c_str(), tail.c_str());
}

/// Prints "attnc-run: check: N% ..." on stderr at most once a second, and
/// only once the work has taken more than a second.
struct Progress {
  using Clock = std::chrono::steady_clock;
  const char *what;
  Clock::time_point start = Clock::now(), last = start;
  bool printed = false;
  explicit Progress(const char *what) : what(what) {}
  void operator()(double fraction) {
    auto now = Clock::now();
    if (now - start < std::chrono::seconds(1) ||
        now - last < std::chrono::seconds(1))
      return;
    last = now;
    printed = true;
    std::fprintf(stderr, "attnc-run: %s: %3.0f%% (%.1f s)\n", what,
                 100 * fraction,
                 std::chrono::duration<double>(now - start).count());
  }
  void done() {
    if (printed)
      std::fprintf(stderr, "attnc-run: %s: done in %.1f s\n", what,
                   std::chrono::duration<double>(Clock::now() - start).count());
  }
};

/// The --json form of one comparison (docs/json.md, "comparison").
JsonValue compareJson(const attnrt::CompareResult &c, const float *y,
                      const double *ref, int64_t n, double atol, double rtol,
                      const char *boundModel, const char *against) {
  JsonValue j = JsonValue::object();
  if (against) // "interpreter" or "file"; none for the nested probs
    j.set("against", against);
  j.set("passed", c.ok);
  j.set("elements", (long long)n);
  j.set("atol", atol);
  j.set("rtol", rtol);
  j.set("bound", boundModel ? JsonValue(boundModel) : JsonValue());
  // (statistics over no element, every one non-finite on a side: null)
  const bool anyFinite = c.checked + c.unbounded > 0;
  j.set("max_abs_err", anyFinite ? JsonValue(c.maxAbs) : JsonValue());
  j.set("max_rel_err", anyFinite ? JsonValue(c.maxRel) : JsonValue());
  j.set("mean_abs_err", anyFinite ? JsonValue(c.meanAbs) : JsonValue());
  j.set("max_bound", boundModel && c.checked ? JsonValue(c.maxBound) : JsonValue());
  j.set("non_finite", (long long)(c.nonFinite + c.finiteVsNonFiniteRef + c.nonFiniteBoth));
  j.set("non_finite_output_only", (long long)c.nonFinite);
  j.set("non_finite_reference_only", (long long)c.finiteVsNonFiniteRef);
  j.set("non_finite_both", (long long)c.nonFiniteBoth);
  j.set("unbounded", (long long)c.unbounded);
  j.set("outside_allowance", (long long)c.outside);
  auto element = [&](int64_t i) {
    JsonValue e = JsonValue::object();
    e.set("index", (long long)i);
    e.set("value", double(y[i]));
    e.set("reference", ref[i]);
    return e;
  };
  j.set("first_non_finite", c.firstNonFinite >= 0 ? element(c.firstNonFinite) : JsonValue());
  if (c.firstUnbounded >= 0) {
    JsonValue e = element(c.firstUnbounded);
    e.set("abs_err", std::fabs(y[c.firstUnbounded] - ref[c.firstUnbounded]));
    e.set("bound", c.firstUnboundedBound);
    j.set("first_unbounded", e);
  } else {
    j.set("first_unbounded", nullptr);
  }
  if (c.worstCheckedIndex >= 0) {
    JsonValue e = element(c.worstCheckedIndex);
    e.set("abs_err", std::fabs(y[c.worstCheckedIndex] - ref[c.worstCheckedIndex]));
    e.set("allowance_ratio", c.worstCheckedRatio);
    j.set("worst", e);
  } else {
    j.set("worst", nullptr);
  }
  return j;
}

/// One report line for --check / --expected (with --json: its object in
/// `json` instead); returns the verdict. `what` names the output when it
/// is not y ("probs ").
bool report(const char *against, const attnrt::CompareResult &c,
            const float *y, const double *ref, int64_t n, double atol,
            double rtol, const char *boundModel, JsonValue &json,
            const char *what = "") {
  if (gJson) {
    json = compareJson(c, y, ref, n, atol, rtol, boundModel,
                       *what ? nullptr
                       : std::strncmp(against, "expected", 8) == 0 ? "file"
                                                                 : "interpreter");
    return c.ok;
  }
  const int64_t nonFinite =
      c.nonFinite + c.finiteVsNonFiniteRef + c.nonFiniteBoth;
  if (c.checked + c.unbounded > 0)
    std::printf("check %svs %s: max_abs_err %.3e, max_rel_err %.3e, "
                "mean_abs_err %.3e, non-finite %lld",
                what, against, c.maxAbs, c.maxRel, c.meanAbs, (long long)nonFinite);
  else // no element finite in both: no error statistics
    std::printf("check %svs %s: no element finite in both, non-finite %lld", what, against,
                (long long)nonFinite);
  if (nonFinite)
    std::printf(" (in y only %lld, in the reference only %lld, in both %lld)",
                (long long)c.nonFinite, (long long)c.finiteVsNonFiniteRef,
                (long long)c.nonFiniteBoth);
  // The error statistics above cover every element finite in both, the
  // unbounded ones too (docs/checking.md).
  if (c.unbounded)
    std::printf(", unbounded %lld (the float32 bound there is infinite or "
                "exceeds max |ref| %.3e: logits too large to check in "
                "float32; %lld infinite, %lld finite but wider; the error "
                "statistics include them)",
                (long long)c.unbounded, c.maxRef,
                (long long)c.unboundedInfinite,
                (long long)(c.unbounded - c.unboundedInfinite));
  std::printf(", outside the allowance %lld of %lld; allowance %.1e + %.1e*|ref|",
              (long long)c.outside, (long long)n, atol, rtol);
  if (boundModel && c.checked)
    std::printf(" + float32 bound (%s, max %.3e)", boundModel, c.maxBound);
  else if (boundModel)
    std::printf(" + float32 bound (%s, no element bounded)", boundModel);
  // What was found: the first non-finite element, the first unbounded
  // one, and the checked element closest to (or furthest past) its
  // allowance.
  // One element as "; LABEL element I: y Y, ref R" and what follows.
  auto element = [&](const char *label, int64_t i) {
    std::printf("; %s element %lld: y %.9g, ref %.9g", label, (long long)i,
                double(y[i]), ref[i]);
  };
  if (c.firstNonFinite >= 0)
    element("first non-finite", c.firstNonFinite);
  if (c.firstUnbounded >= 0) {
    element("first unbounded", c.firstUnbounded);
    std::printf(", |err| %.3e, bound %.3e",
                std::fabs(y[c.firstUnbounded] - ref[c.firstUnbounded]),
                c.firstUnboundedBound);
  }
  if (c.worstCheckedIndex >= 0) {
    element("worst", c.worstCheckedIndex);
    std::printf(", |err| %.3e = %.3g x its allowance",
                std::fabs(y[c.worstCheckedIndex] - ref[c.worstCheckedIndex]),
                c.worstCheckedRatio);
  } else if (n > 0) {
    std::printf("; no element checked");
  }
  std::printf(": %s\n", c.ok ? "PASS" : "FAIL");
  return c.ok;
}

/// The (query, key) pairs the mask and the valid lengths let through, over
/// the batch (docs/abi.md: the visible keys of query i < qv are
/// [lo, hi) with hi = min(kv, i + off + 1) when causal, or i + off +
/// window with a bidirectional window, lo = i + off - window + 1 with a
/// window).
/// The keys query i of sequence b sees, [lo, hi) (none when hi <= lo), and
/// its valid query rows qv (rows i >= qv see none).
struct KeyRange {
  const attnc_kernel_info &ki;
  int64_t qv = 0, kv = 0, off = 0;
  KeyRange(const attnc_kernel_info &ki, int64_t b, int64_t T, int64_t Tkv,
           const attnrt::VariantInputs &in)
      : ki(ki) {
    const bool cross = (ki.features & ATTNC_FEATURE_CROSS) != 0;
    qv = in.lengths ? in.lengths[b] : T;
    kv = cross ? (in.kvLengths ? in.kvLengths[b] : Tkv) : qv;
    off = ki.causal_align == 1 ? 0 : kv - qv;
  }
  void of(int64_t i, int64_t &lo, int64_t &hi) const {
    lo = 0;
    hi = i < qv ? kv : 0;
    if (attnc_mask_causal(ki.mask))
      hi = std::min(hi, i + off + 1);
    if (attnc_mask_bidirectional(ki.mask))
      hi = std::max<int64_t>(0, std::min(hi, i + off + ki.window));
    if (attnc_mask_sliding(ki.mask))
      lo = std::max(lo, i + off - ki.window + 1);
    if (attnc_mask_chunked(ki.mask) && i + off >= 0)
      lo = std::max(lo, (i + off) / ki.window * ki.window);
  }
};

double visiblePairs(const attnc_kernel_info &ki, int64_t batch, int64_t T,
                    int64_t Tkv, const attnrt::VariantInputs &in) {
  double pairs = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const KeyRange r(ki, b, T, Tkv, in);
    for (int64_t i = 0; i < r.qv; ++i) {
      int64_t lo, hi;
      r.of(i, lo, hi);
      pairs += double(std::max<int64_t>(0, hi - lo));
    }
  }
  return pairs;
}

/// [T, Tkv]: 1 where query i of sequence b sees key j (the heatmap's
/// masked cells are the zeros).
std::vector<unsigned char> visibility(const attnc_kernel_info &ki, int64_t b,
                                      int64_t T, int64_t Tkv,
                                      const attnrt::VariantInputs &in) {
  std::vector<unsigned char> v(size_t(T * Tkv), 0);
  const KeyRange r(ki, b, T, Tkv, in);
  for (int64_t i = 0; i < T; ++i) {
    int64_t lo, hi;
    r.of(i, lo, hi);
    for (int64_t j = std::max<int64_t>(lo, 0); j < std::min(hi, Tkv); ++j)
      v[size_t(i * Tkv + j)] = 1;
  }
  return v;
}

/// Useful FLOPs of one forward: the projections over the valid rows (Q and
/// W_O over each sequence's valid queries, K/V over its valid keys: padding
/// rows are not useful work), the attention (only the (query, key) pairs
/// the mask lets through) and W_O.
double usefulFlops(const attnc_kernel_info &ki, int64_t batch, int64_t T,
                   int64_t Tkv, const attnrt::VariantInputs &in) {
  const double d = double(ki.d_model);
  const double qW = double(ki.heads * ki.head_dim);
  const double kvW = double(ki.kv_heads * ki.head_dim);
  double qRows = 0, kvRows = 0; // valid rows over the batch
  for (int64_t b = 0; b < batch; ++b) {
    int64_t q = in.lengths ? in.lengths[b] : T;
    int64_t kv = in.xKv ? (in.kvLengths ? in.kvLengths[b] : Tkv) : q;
    qRows += double(q);
    kvRows += double(kv);
  }
  double f = 2 * qRows * d * qW + 2 * kvRows * d * 2 * kvW;
  if (ki.out_proj)
    f += 2 * qRows * qW * double(ki.out_dim);
  f += 4 * double(ki.heads) * double(ki.head_dim) *
       visiblePairs(ki, batch, T, Tkv, in);
  return f;
}

/// A list of lengths for --lengths / --kv-lengths: "random", or
/// comma-separated integers (range-checked later, once the shapes are
/// known).
bool parseLengths(const std::string &v, std::vector<int64_t> &out,
                  bool &random) {
  out.clear();
  random = v == "random";
  if (random)
    return true;
  size_t pos = 0;
  while (true) {
    size_t comma = v.find(',', pos);
    std::string item = v.substr(pos, comma == std::string::npos
                                         ? std::string::npos
                                         : comma - pos);
    int64_t n;
    if (!parseInt(item, n))
      return false;
    out.push_back(n);
    if (comma == std::string::npos)
      return true;
    pos = comma + 1;
  }
}

/// "37,20,1" (the first 16, then "... (N in all)").
std::string lengthsText(const std::vector<int32_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 16; ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  if (v.size() > 16)
    s += ",... (" + std::to_string(v.size()) + " in all)";
  return s;
}

/// Why selected_isa() is ATTNC_ISA_NONE ("" when it is not).
std::string noneWhy(const attnrt::Kernel &k, uint32_t selected) {
  if (selected != ATTNC_ISA_NONE)
    return "";
  if (k.isCuda())
    return "no CUDA device for it here";
  std::string env = attnrt::isaEnvProblem();
  if (!env.empty())
    return env;
  // A known ATTNC_ISA that caps the choice below every path this CPU runs.
  const char *cap = std::getenv("ATTNC_ISA");
  if (cap && *cap)
    return std::string("ATTNC_ISA=") + cap +
           " leaves none of the library's code paths this CPU runs (unset it to let the "
           "library choose)";
  return "this CPU has none of the library's code paths";
}

/// The bias flags as the list of projections that carry one.
JsonValue biasList(uint32_t flags) {
  JsonValue a = JsonValue::array();
  for (auto [bit, name] : {std::pair{ATTNC_BIAS_Q, "q"}, std::pair{ATTNC_BIAS_K, "k"},
                           std::pair{ATTNC_BIAS_V, "v"}, std::pair{ATTNC_BIAS_O, "o"}})
    if (flags & bit)
      a.push(name);
  return a;
}

/// The masks whose offset (causal_align) matters: every one but none and
/// padding (the bidirectional window is centred on i + off).
bool hasCausalAlign(uint32_t mask) {
  return attnc_mask_causal(mask) || attnc_mask_bidirectional(mask);
}

/// --info --json: the metadata (docs/json.md, kind "info").
JsonValue infoJson(const attnrt::Kernel &k, const std::string &lib) {
  const attnc_kernel_info &ki = k.info();
  JsonValue j = jsonHeader("info");
  j.set("library", lib);
  j.set("name", ki.name);
  j.set("abi_version", ki.abi_version);
  char hash[24];
  std::snprintf(hash, sizeof hash, "0x%016llx", (unsigned long long)ki.spec_hash);
  j.set("spec_hash", hash);
  j.set("d_model", (long long)ki.d_model);
  j.set("heads", (long long)ki.heads);
  j.set("kv_heads", (long long)ki.kv_heads);
  j.set("head_dim", (long long)ki.head_dim);
  j.set("out_dim", (long long)ki.out_dim);
  j.set("mask", maskName(ki.mask));
  j.set("causal_align", hasCausalAlign(ki.mask)
                            ? JsonValue(ki.causal_align ? "top_left" : "bottom_right")
                            : JsonValue());
  j.set("window", attnc_mask_sliding(ki.mask) ? JsonValue((long long)ki.window) : JsonValue());
  j.set("chunk", attnc_mask_chunked(ki.mask) ? JsonValue((long long)ki.window) : JsonValue());
  j.set("bias", biasList(ki.bias_flags));
  j.set("out_proj", ki.out_proj != 0);
  j.set("scale", ki.scale);
  j.set("dtype", attnrt::nameOf("dtype", ki.dtype));
  j.set("weight_dtype", attnrt::nameOf("dtype", ki.weight_dtype));
  JsonValue tp = JsonValue::object();
  tp.set("size", (long long)ki.tp_size);
  tp.set("rank", (long long)ki.tp_rank);
  j.set("tensor_parallel", tp);
  j.set("weight_layout", layoutName(ki.weight_layout));
  j.set("softcap", ki.softcap > 0 ? JsonValue(ki.softcap) : JsonValue());
  j.set("clip_qkv", ki.clip_qkv > 0 ? JsonValue(ki.clip_qkv) : JsonValue());
  if (ki.temperature_floor_scale > 0) {
    JsonValue t = JsonValue::object();
    t.set("floor_scale", (long long)ki.temperature_floor_scale);
    t.set("attn_scale", ki.temperature_attn_scale);
    j.set("temperature_tuning", t);
  } else {
    j.set("temperature_tuning", JsonValue());
  }
  if (ki.alibi_slopes) {
    JsonValue a = JsonValue::object(), slopes = JsonValue::array();
    for (int64_t h = 0; h < ki.heads; ++h)
      slopes.push(ki.alibi_slopes[h]);
    a.set("slopes", slopes);
    a.set("before_scale", ki.alibi_before_scale != 0);
    j.set("alibi", a);
  } else {
    j.set("alibi", nullptr);
  }
  if (ki.t5_num_buckets > 0) {
    JsonValue t = JsonValue::object();
    t.set("num_buckets", (long long)ki.t5_num_buckets);
    t.set("max_distance", (long long)ki.t5_max_distance);
    t.set("bidirectional", ki.t5_bidirectional != 0);
    j.set("t5_bias", t);
  } else {
    j.set("t5_bias", nullptr);
  }
  if (ki.rel_key_positions > 0) {
    JsonValue t = JsonValue::object();
    t.set("max_position_embeddings", (long long)ki.rel_key_positions);
    t.set("key_query", ki.rel_key_query != 0);
    j.set("relative_key", t);
  } else {
    j.set("relative_key", nullptr);
  }
  if (ki.qk_norm != ATTNC_QK_NORM_NONE) {
    JsonValue n = JsonValue::object();
    n.set("width", attnrt::nameOf("qk_norm", ki.qk_norm & ATTNC_QK_NORM_WIDTH_MASK));
    n.set("type", (ki.qk_norm & ATTNC_QK_NORM_LAYER) ? "layer" : "rms");
    n.set("weight", (ki.qk_norm & ATTNC_QK_NORM_PER_HEAD)    ? "per_head"
                    : (ki.qk_norm & ATTNC_QK_NORM_NO_WEIGHT) ? "none"
                                                             : "shared");
    n.set("bias", (ki.qk_norm & ATTNC_QK_NORM_BIAS) != 0);
    n.set("eps", ki.qk_norm_eps);
    n.set("weight_offset", ki.qk_norm_offset);
    j.set("qk_norm", n);
  } else {
    j.set("qk_norm", nullptr);
  }
  j.set("sinks", ki.sinks != 0);
  if (ki.features & ATTNC_FEATURE_ROPE) {
    JsonValue r = JsonValue::object(), freq = JsonValue::array();
    r.set("style", attnrt::nameOf("rope_style", ki.rope_style));
    r.set("rotary_dim", (long long)ki.rotary_dim);
    for (uint32_t i = 0; i < ki.rope_pairs; ++i)
      freq.push(ki.rope_inv_freq[i]);
    r.set("inv_freq", freq);
    r.set("attention_factor", ki.rope_attention_factor);
    JsonValue longFreq; // longrope's second table, or null
    if (ki.rope_long_inv_freq) {
      longFreq = JsonValue::array();
      for (uint32_t i = 0; i < ki.rope_pairs; ++i)
        longFreq.push(ki.rope_long_inv_freq[i]);
    }
    r.set("long_inv_freq", longFreq);
    r.set("long_from", ki.rope_long_inv_freq ? JsonValue((long long)ki.rope_long_from)
                                             : JsonValue());
    r.set("dynamic_factor", ki.rope_dynamic_factor > 0 ? JsonValue(ki.rope_dynamic_factor)
                                                       : JsonValue());
    r.set("dynamic_from", ki.rope_dynamic_factor > 0 ? JsonValue((long long)ki.rope_dynamic_from)
                                                     : JsonValue());
    j.set("rope", r);
  } else {
    j.set("rope", nullptr);
  }
  j.set("isa", attnrt::isaName(ki.isa));
  JsonValue paths = JsonValue::array();
  if (hasAmxPath(ki))
    paths.push(attnrt::isaName(ATTNC_ISA_AMX_BF16));
  if (hasBf16Path(ki))
    paths.push(attnrt::isaName(ATTNC_ISA_AVX512_BF16));
  if (ki.isa == ATTNC_ISA_MULTI)
    paths.push(attnrt::isaName(ATTNC_ISA_AVX512)).push(attnrt::isaName(ATTNC_ISA_AVX2));
  else
    paths.push(attnrt::isaName(ki.isa));
  j.set("code_paths", paths);
  const uint32_t selected = k.selectedIsa();
  j.set("selected_isa", isaJson(selected));
  std::string why = noneWhy(k, selected);
  j.set("selected_isa_why_none", why.empty() ? JsonValue() : JsonValue(why));
  j.set("features", featureList(ki.features));
  j.set("checksum", (ki.features & ATTNC_FEATURE_CHECKSUM) != 0);
  j.set("target_triple", ki.target_triple);
  j.set("target_cpu", ki.target_cpu);
  j.set("compiler_version", ki.compiler_version);
  j.set("packed_bytes", (long long)ki.packed_bytes);
  j.set("max_seq_len", ki.max_seq_len > 0 ? JsonValue((long long)ki.max_seq_len) : JsonValue());
  j.set("workspace_fixed_bytes", (long long)ki.workspace_fixed);
  j.set("workspace_per_row_floats", (long long)ki.workspace_per_row);
  j.set("stack_bytes_per_thread", (long long)ki.stack_bytes);
  JsonValue ws = JsonValue::array();
  for (uint32_t i = 0; i < ki.num_weights; ++i) {
    const attnc_tensor_info &t = ki.weights[i];
    JsonValue w = JsonValue::object();
    w.set("name", t.name);
    JsonValue shape = JsonValue::array();
    for (uint32_t d = 0; d < t.rank; ++d)
      shape.push((long long)t.dims[d]);
    w.set("shape", shape);
    ws.push(w);
  }
  j.set("weights", ws);
  return j;
}

void printInfo(const attnrt::Kernel &k) {
  const attnc_kernel_info &ki = k.info();
  std::printf("name: %s\nabi_version: %u\nspec_hash: 0x%016llx\n", ki.name,
              ki.abi_version, (unsigned long long)ki.spec_hash);
  std::printf("d_model: %lld\nheads: %lld\nkv_heads: %lld\nhead_dim: %lld\n"
              "out_dim: %lld\n",
              (long long)ki.d_model, (long long)ki.heads,
              (long long)ki.kv_heads, (long long)ki.head_dim,
              (long long)ki.out_dim);
  std::printf("mask: %s\n", maskName(ki.mask));
  if (hasCausalAlign(ki.mask))
    std::printf("causal_align: %s\n",
                ki.causal_align ? "top_left" : "bottom_right");
  if (attnc_mask_sliding(ki.mask))
    std::printf("window: %lld\n", (long long)ki.window);
  if (attnc_mask_chunked(ki.mask))
    std::printf("chunk: %lld\n", (long long)ki.window);
  std::string bias = ki.bias_flags == 0 ? "false" : "";
  if (ki.bias_flags == (ATTNC_BIAS_Q | ATTNC_BIAS_K | ATTNC_BIAS_V | ATTNC_BIAS_O) ||
      (!ki.out_proj && ki.bias_flags == (ATTNC_BIAS_Q | ATTNC_BIAS_K | ATTNC_BIAS_V)))
    bias = "true";
  else if (ki.bias_flags != 0) {
    for (auto [bit, name] : {std::pair{ATTNC_BIAS_Q, "q"}, std::pair{ATTNC_BIAS_K, "k"},
                             std::pair{ATTNC_BIAS_V, "v"}, std::pair{ATTNC_BIAS_O, "o"}})
      if (ki.bias_flags & bit)
        bias += (bias.empty() ? "[" : ", ") + std::string(name);
    bias += "]";
  }
  std::printf("bias: %s\nout_proj: %s\nscale: %.9g\ndtype: %s\nweight_dtype: %s\n"
              "weight_layout: %s\n",
              bias.c_str(), ki.out_proj ? "true" : "false", ki.scale,
              attnrt::nameOf("dtype", ki.dtype), attnrt::nameOf("dtype", ki.weight_dtype),
              layoutName(ki.weight_layout));
  if (ki.tp_size > 1)
    std::printf("tensor_parallel: rank %d of %d\n", ki.tp_rank, ki.tp_size);
  if (ki.softcap > 0)
    std::printf("softcap: %.9g\n", ki.softcap);
  if (ki.clip_qkv > 0)
    std::printf("clip_qkv: %.9g\n", ki.clip_qkv);
  if (ki.temperature_floor_scale > 0)
    std::printf("temperature_tuning: floor_scale %lld, attn_scale %.9g\n",
                (long long)ki.temperature_floor_scale, ki.temperature_attn_scale);
  if (ki.alibi_slopes)
    std::printf("alibi: slopes %.9g ... %.9g%s\n", ki.alibi_slopes[0],
                ki.alibi_slopes[ki.heads - 1],
                ki.alibi_before_scale ? ", added before the scale" : "");
  if (ki.t5_num_buckets > 0)
    std::printf("t5_bias: %d buckets, max_distance %d, %s\n", ki.t5_num_buckets,
                ki.t5_max_distance, ki.t5_bidirectional ? "bidirectional" : "causal");
  if (ki.rel_key_positions > 0)
    std::printf("relative_key: max_position_embeddings %lld, %s\n",
                (long long)ki.rel_key_positions,
                ki.rel_key_query ? "q.E and k.E (relative_key_query)" : "q.E (relative_key)");
  if (ki.qk_norm != ATTNC_QK_NORM_NONE)
    std::printf("qk_norm: %s over each %s, eps %.9g, weight offset %.9g%s%s\n",
                (ki.qk_norm & ATTNC_QK_NORM_LAYER) ? "LayerNorm" : "RMSNorm",
                (ki.qk_norm & ATTNC_QK_NORM_WIDTH_MASK) == ATTNC_QK_NORM_HEAD ? "head"
                                                                               : "projection",
                ki.qk_norm_eps, ki.qk_norm_offset,
                (ki.qk_norm & ATTNC_QK_NORM_PER_HEAD)    ? ", one weight per head"
                : (ki.qk_norm & ATTNC_QK_NORM_NO_WEIGHT) ? ", no weight"
                                                         : "",
                (ki.qk_norm & ATTNC_QK_NORM_BIAS) ? ", with a bias" : "");
  if (ki.sinks)
    std::printf("sinks: one learned logit per head\n");
  if (ki.features & ATTNC_FEATURE_ROPE) {
    char tail[96] = "";
    if (ki.rope_long_inv_freq)
      std::snprintf(tail, sizeof tail, ", long table past length %lld",
                    (long long)ki.rope_long_from);
    else if (ki.rope_dynamic_factor > 0)
      std::snprintf(tail, sizeof tail, ", dynamic NTK factor %.9g past length %lld",
                    ki.rope_dynamic_factor, (long long)ki.rope_dynamic_from);
    std::printf("rope: %s, rotary_dim %lld, inv_freq[0] %.9g, inv_freq[%u] %.9g, "
                "attention_factor %.9g%s\n",
                attnrt::nameOf("rope_style", ki.rope_style), (long long)ki.rotary_dim,
                ki.rope_inv_freq[0], ki.rope_pairs - 1, ki.rope_inv_freq[ki.rope_pairs - 1],
                ki.rope_attention_factor, tail);
  }
  const uint32_t selected = k.selectedIsa();
  std::printf("isa: %s\nselected_isa: %s\nfeatures: %s\n", isaName(ki),
              noneWhy(k, selected).empty()
                  ? isaName(selected)
                  : ("none (" + noneWhy(k, selected) + ")").c_str(),
              featureNames(ki.features).c_str());
  std::printf("checksum: %s\n", (ki.features & ATTNC_FEATURE_CHECKSUM)
                                     ? "CRC-32 of the file, verified at load"
                                     : "none (not written by attnc as a shared object)");
  std::printf("target: %s (%s)\ncompiler: %s\n", ki.target_triple,
              ki.target_cpu, ki.compiler_version);
  std::printf("packed_bytes: %lld\n", (long long)ki.packed_bytes);
  if (ki.max_seq_len > 0)
    std::printf("max_seq_len: %lld\n", (long long)ki.max_seq_len);
  else
    std::printf("max_seq_len: none\n");
  std::printf("workspace: %lld bytes + %lld floats per (batch, token) row\n"
              "stack_bytes: %lld per thread\nweights:\n",
              (long long)ki.workspace_fixed, (long long)ki.workspace_per_row,
              (long long)ki.stack_bytes);
  for (uint32_t i = 0; i < ki.num_weights; ++i) {
    const attnc_tensor_info &t = ki.weights[i];
    if (t.rank == 2)
      std::printf("  %s [%lld, %lld]\n", t.name, (long long)t.dims[0],
                  (long long)t.dims[1]);
    else
      std::printf("  %s [%lld]\n", t.name, (long long)t.dims[0]);
  }
}

struct Options {
  std::string lib, xPath, wDir, wPrefix, outPath, expectedPath, hfDir, hfModule;
  int64_t seq = 128, batch = 1, bench = 0, seed = 1, abiOverride = -1;
  int64_t hfLayer = -1; // --layer N (with --hf): the module attnc --hf --layer N takes
  int64_t threads = 1;
  bool threadsGiven = false;
  bool cuda = false; // --device cuda
  double atol = 1e-5, rtol = 1e-4, xScale = 1.0;
  bool xScaleGiven = false; // --x-scale (which scales random inputs only)
  const char *tolGiven = nullptr; // "--atol" / "--rtol" when given
  bool check = false, info = false, noBound = false, rigorous = false,
       seqGiven = false, batchGiven = false, json = false;
  // Attention variants.
  std::string lengthsArg, kvLengthsArg, xKvPath, probsPath, heatmapPath;
  std::vector<int64_t> lengths, kvLengths;
  bool lengthsRandom = false, kvLengthsRandom = false;
  int64_t kvSeq = 0, head = -1, heatmapBatch = 0, decodeSteps = 0,
          decodeChunk = 1;
  bool kvSeqGiven = false, headGiven = false, heatmapBatchGiven = false,
       decodeChunkGiven = false;
};

/// `p` spelled canonically: its directory's real path plus its name (the
/// file itself need not exist).
std::string canonicalName(const std::string &p) {
  std::string dir = attnrt::parentDirectory(p);
  size_t slash = p.rfind('/');
  std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
  char buf[PATH_MAX];
  if (!::realpath(dir.c_str(), buf))
    return p;
  return std::string(buf) + "/" + name;
}

/// Exit 2 when an output (--out, --probs, --heatmap) is one of the inputs
/// (the library, --x, --x-kv, --expected, --weights or a file in its
/// directory; device and inode, so any spelling or link) or another output:
/// writing it would destroy what is being read (a mapped library even
/// crashes the run). -1 otherwise.
int checkOutputsAreNotInputs(const Options &o) {
  std::vector<std::pair<const char *, std::string>> outs, ins;
  for (auto [opt, path] : {std::pair<const char *, const std::string *>{"--out", &o.outPath},
                           {"--probs", &o.probsPath}, {"--heatmap", &o.heatmapPath}})
    if (!path->empty())
      outs.push_back({opt, *path});
  if (outs.empty())
    return -1;
  for (auto [what, path] : {std::pair<const char *, const std::string *>{"the kernel library", &o.lib},
                            {"--x", &o.xPath}, {"--x-kv", &o.xKvPath},
                            {"--expected", &o.expectedPath}, {"--weights", &o.wDir}})
    if (!path->empty())
      ins.push_back({what, *path});
  struct stat st;
  if (!o.wDir.empty() && ::stat(o.wDir.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    if (DIR *d = ::opendir(o.wDir.c_str())) {
      while (dirent *e = ::readdir(d)) {
        // --hf DIR reads the checkpoint's config.json, tensor files and
        // shard index: an .npy written beside them (this run's --out) is
        // no input.
        const std::string n = e->d_name;
        auto ends = [&](const char *suf) {
          return n.size() >= std::strlen(suf) &&
                 n.compare(n.size() - std::strlen(suf), std::strlen(suf), suf) == 0;
        };
        if (n[0] != '.' &&
            (o.hfDir.empty() || n == "config.json" || ends(".safetensors") || ends(".npz") ||
             ends(".safetensors.index.json")))
          ins.push_back({o.hfDir.empty() ? "a file of --weights" : "a file of --hf",
                         o.wDir + "/" + n});
      }
      ::closedir(d);
    }
  for (size_t i = 0; i < outs.size(); ++i) {
    for (const auto &[what, path] : ins)
      if (attnrt::sameFile(outs[i].second, path))
        return usageError(std::string(outs[i].first) + " " + outs[i].second + " is " +
                          what + " (" + path + "): refusing to overwrite an input");
    for (size_t j = 0; j < i; ++j)
      if (attnrt::sameFile(outs[i].second, outs[j].second) ||
          canonicalName(outs[i].second) == canonicalName(outs[j].second))
        return usageError(std::string(outs[j].first) + " and " + outs[i].first +
                          " name the same file '" + outs[i].second + "'");
  }
  // Each output is written all or nothing, one after the other: one that
  // cannot be written at all (no such directory, not writable, a
  // directory itself) is refused before the run, so that a failed run
  // leaves the earlier outputs as they were too.
  for (const auto &[opt, path] : outs) {
    struct stat ps;
    const bool exists = ::stat(path.c_str(), &ps) == 0;
    if (exists && S_ISDIR(ps.st_mode))
      return usageError(std::string(opt) + " " + path + ": cannot write: is a directory");
    if (exists && !S_ISREG(ps.st_mode))
      continue; // /dev/null, a FIFO: written in place, whatever the directory
    const size_t slash = path.find_last_of('/');
    const std::string dir =
        slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    struct stat ds;
    if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode))
      return usageError(std::string(opt) + " " + path + ": cannot write: no directory " + dir);
    if (::access(dir.c_str(), W_OK) != 0)
      return usageError(std::string(opt) + " " + path + ": cannot write in " + dir + ": " +
                        std::strerror(errno));
    // Permission bits do not say it all (root in sysfs, a read-only
    // mount): a file created there and removed at once does.
    std::string probe = dir + "/.attnc-run-probe-XXXXXX";
    const int fd = ::mkstemp(probe.data());
    if (fd < 0)
      return usageError(std::string(opt) + " " + path + ": cannot write in " + dir + ": " +
                        std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
  }
  return -1;
}

/// Parses argv; returns -1 to go on, else the exit code.
int parseArgs(int argc, char **argv, Options &o) {
  // Every option once: a second --lengths (say) would silently replace
  // the first.
  std::set<std::string> seen;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], value;
    bool inlineValue = false;
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        inlineValue = true;
      }
      if (!seen.insert(a).second)
        return usageError(a + " is given twice");
    }
    bool missing = false;
    auto next = [&]() -> std::string {
      if (inlineValue)
        return value;
      if (i + 1 >= argc) {
        missing = true;
        return "";
      }
      return argv[++i];
    };
    auto flag = [&]() {
      if (inlineValue)
        return usageError(a + " takes no value");
      return -1;
    };
    auto sizeOpt = [&](int64_t &dst, int64_t min) {
      std::string v = next();
      if (missing)
        return usageError(a + " needs a value");
      if (!parseInt(v, dst) || dst < min)
        return usageError(a + ": expected an integer >= " +
                          std::to_string(min) + " and < 2^63, found '" + v +
                          "'");
      return -1;
    };
    auto tolOpt = [&](double &dst) {
      std::string v = next();
      if (missing)
        return usageError(a + " needs a value");
      if (!parseFinite(v, dst) || dst < 0)
        return usageError(a + ": expected a finite non-negative number, "
                              "found '" + v + "'");
      return -1;
    };
    auto strOpt = [&](std::string &dst) {
      dst = next();
      if (missing)
        return usageError(a + " needs a value");
      if (dst.empty())
        return usageError(a + ": expected a path, found ''");
      // `--out --check`: the value left out, the next option taken for it.
      if (dst.size() > 2 && dst.compare(0, 2, "--") == 0)
        return usageError(a + ": expected a path, found the option '" + dst +
                          "' (its value is missing; ./" + dst + " names a file so called)");
      return -1;
    };
    int rc = -1;
    if (a == "--help" || a == "-h") {
      if ((rc = flag()) >= 0)
        return rc;
      std::fputs(kUsage, stdout);
      return kExitOk;
    } else if (a == "--version") {
      if ((rc = flag()) >= 0)
        return rc;
      std::printf("attnc-run (libattnrt), kernel ABI version %u\n",
                  ATTNC_ABI_VERSION);
      return kExitOk;
    } else if (a == "--seq-len") {
      rc = sizeOpt(o.seq, 1);
      o.seqGiven = true;
    } else if (a == "--batch") {
      rc = sizeOpt(o.batch, 1);
      o.batchGiven = true;
    } else if (a == "--bench") {
      rc = sizeOpt(o.bench, 1);
      if (rc < 0 && o.bench > 1000000)
        rc = usageError("--bench: at most 1000000 calls, found " + std::to_string(o.bench));
    } else if (a == "--threads") {
      rc = sizeOpt(o.threads, 0);
      o.threadsGiven = true;
      if (rc < 0 && o.threads > 4096)
        rc = usageError("--threads: at most 4096, found " +
                        std::to_string(o.threads));
    } else if (a == "--seed") {
      std::string v = next();
      if (missing)
        rc = usageError(a + " needs a value");
      else if (!parseInt(v, o.seed))
        rc = usageError("--seed: expected an integer, found '" + v + "'");
    } else if (a == "--testing-abi-version") { // hidden: ABI rejection tests
      rc = sizeOpt(o.abiOverride, 0);
    } else if (a == "--atol") {
      rc = tolOpt(o.atol);
      o.tolGiven = "--atol";
    } else if (a == "--rtol") {
      rc = tolOpt(o.rtol);
      o.tolGiven = "--rtol";
    } else if (a == "--x-scale") {
      std::string v = next();
      if (missing)
        rc = usageError(a + " needs a value");
      else if (!parseFinite(v, o.xScale))
        rc = usageError("--x-scale: expected a finite number, found '" + v +
                        "'");
      o.xScaleGiven = true;
    } else if (a == "--x") {
      rc = strOpt(o.xPath);
    } else if (a == "--weights") {
      rc = strOpt(o.wDir);
    } else if (a == "--weights-prefix") {
      rc = strOpt(o.wPrefix);
    } else if (a == "--hf") {
      rc = strOpt(o.hfDir);
    } else if (a == "--module") {
      rc = strOpt(o.hfModule);
    } else if (a == "--layer") {
      rc = sizeOpt(o.hfLayer, 0);
    } else if (a == "--out") {
      rc = strOpt(o.outPath);
    } else if (a == "--expected") {
      rc = strOpt(o.expectedPath);
    } else if (a == "--check") {
      rc = flag();
      o.check = true;
    } else if (a == "--rigorous-bound") {
      rc = flag();
      o.rigorous = true;
    } else if (a == "--no-bound") {
      rc = flag();
      o.noBound = true;
    } else if (a == "--info") {
      rc = flag();
      o.info = true;
    } else if (a == "--json") {
      rc = flag();
      o.json = true;
    } else if (a == "--lengths" || a == "--kv-lengths") {
      const bool kv = a == "--kv-lengths";
      std::string &arg = kv ? o.kvLengthsArg : o.lengthsArg;
      arg = next();
      if (missing)
        rc = usageError(a + " needs a value");
      else if (!parseLengths(arg, kv ? o.kvLengths : o.lengths,
                             kv ? o.kvLengthsRandom : o.lengthsRandom))
        rc = usageError(a + ": expected comma-separated integers, one per "
                            "sequence (such as 37,20,1), or 'random', found '" +
                        arg + "'");
    } else if (a == "--x-kv") {
      rc = strOpt(o.xKvPath);
    } else if (a == "--kv-seq-len") {
      rc = sizeOpt(o.kvSeq, 1);
      o.kvSeqGiven = true;
    } else if (a == "--probs") {
      rc = strOpt(o.probsPath);
    } else if (a == "--heatmap") {
      rc = strOpt(o.heatmapPath);
    } else if (a == "--head") {
      rc = sizeOpt(o.head, 0);
      o.headGiven = true;
    } else if (a == "--decode-steps") {
      rc = sizeOpt(o.decodeSteps, 1);
    } else if (a == "--decode-chunk") {
      rc = sizeOpt(o.decodeChunk, 1);
      o.decodeChunkGiven = true;
    } else if (a == "--device") {
      std::string v = next();
      if (missing)
        rc = usageError(a + " needs a value");
      else if (v == "cpu" || v == "cuda")
        o.cuda = v == "cuda";
      else
        rc = usageError("--device: expected cpu or cuda, found '" + v + "'");
    } else if (a == "--heatmap-batch") {
      rc = sizeOpt(o.heatmapBatch, 0);
      o.heatmapBatchGiven = true;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      rc = usageError("unknown option '" + a + "'");
    } else if (o.lib.empty()) {
      o.lib = a;
    } else {
      rc = usageError("more than one library given ('" + o.lib + "', '" + a +
                      "')");
    }
    if (rc >= 0)
      return rc;
  }
  if (o.lib.empty())
    return usageError("no kernel library given");
  if (!o.hfDir.empty() || !o.hfModule.empty() || o.hfLayer >= 0) {
    if (!o.hfModule.empty() && o.hfLayer >= 0)
      return usageError("--module PATH and --layer N name the module twice: give one");
    if (o.hfDir.empty() || (o.hfModule.empty() && o.hfLayer < 0))
      return usageError("--hf DIR and --module PATH (or --layer N) go together");
    if (o.hfLayer >= 0) {
      // The module attnc --hf DIR --layer N compiles (the same import: the
      // model type's root, or the one other root DIR's tensors are under).
      attnc::HfReaders readers;
      readers.checkJson = attnrt::checkJson;
      readers.tensorNames = [](const std::string &dir, std::vector<std::string> &names) {
        std::string why;
        return attnrt::checkpointTensorNames(dir, names, why);
      };
      const attnc::HfSpec hf = attnc::specFromHf(o.hfDir, "", o.hfLayer, {}, readers);
      if (!hf.error.empty()) {
        std::string why = hf.error;
        if (why.rfind("attnc: error: ", 0) == 0) // (the import's own prefix)
          why = why.substr(14);
        // (the import's message names --layer where it is about it)
        why = why.substr(0, why.find('\n'));
        return usageError(why.rfind("--layer", 0) == 0
                              ? why
                              : "--layer " + std::to_string(o.hfLayer) + ": " + why);
      }
      o.hfModule = hf.weightsPrefix.substr(0, hf.weightsPrefix.size() - 1);
      std::fprintf(stderr, "attnc-run: note: --layer %lld: module %s\n",
                   (long long)o.hfLayer, o.hfModule.c_str());
    }
    if (!o.wDir.empty() || !o.wPrefix.empty())
      return usageError("--hf names the weights: do not also give --weights or "
                        "--weights-prefix");
    o.wDir = o.hfDir;
    o.wPrefix = o.hfModule + ".";
  }
  // Options that would do nothing are refused, not ignored.
  if (o.info)
    for (const std::string &g : seen)
      if (g != "--info" && g != "--json" && g != "--device" && g != "--testing-abi-version")
        return usageError("--info prints the kernel's metadata and runs nothing: " + g +
                          " would do nothing");
  if (!o.wPrefix.empty() && o.wDir.empty())
    return usageError("--weights-prefix selects names in --weights, which is not "
                      "given (random weights have no names to select)");
  if (o.tolGiven && !o.check && o.expectedPath.empty())
    return usageError(std::string(o.tolGiven) +
                      " is a tolerance of --check and --expected, neither of "
                      "which is given");
  if ((o.noBound || o.rigorous) && !o.check)
    return usageError(std::string(o.noBound ? "--no-bound" : "--rigorous-bound") +
                      " chooses the float32 bound of --check, which is not given" +
                      (o.expectedPath.empty() ? "" : " (--expected has no bound)"));
  if (o.noBound && o.rigorous)
    return usageError("--no-bound and --rigorous-bound contradict each other: "
                      "give one");
  if (int rc = checkOutputsAreNotInputs(o); rc >= 0)
    return rc;
  if (!o.xPath.empty() && (o.seqGiven || o.batchGiven))
    return usageError("--x sets batch and seq_len from its shape; do not "
                      "also give --batch or --seq-len");
  if (!o.xKvPath.empty() && o.kvSeqGiven)
    return usageError("--x-kv sets kv_seq_len from its shape; do not also "
                      "give --kv-seq-len");
  if ((o.headGiven || o.heatmapBatchGiven) && o.heatmapPath.empty())
    return usageError(std::string(o.headGiven ? "--head" : "--heatmap-batch") +
                      " applies to --heatmap, which is not given");
  if (o.cuda) {
    // What a CUDA kernel does not have: a thread pool.
    if (o.threadsGiven && o.threads != 1)
      return usageError("--threads is not available with --device cuda (CUDA "
                        "kernels have no thread pool)");
  }
  return -1;
}

/// The variant options against the kernel's features (usage errors, before
/// any shape is known): each needs its feature.
int checkVariantOptions(const Options &o, const attnc_kernel_info &ki) {
  const uint32_t f = ki.features;
  auto lacks = [&](const char *opt, const char *feature) {
    std::string hint;
    if (std::string(feature) == "lengths") // the mask that adds them
      hint = std::string("; a spec with mask: ") +
             maskName(ki.mask == ATTNC_MASK_NONE      ? ATTNC_MASK_PADDING
                      : attnc_mask_bidirectional(ki.mask) ? ATTNC_MASK_BIDIRECTIONAL_WINDOW_PADDING
                      : attnc_mask_sliding(ki.mask) ? ATTNC_MASK_SLIDING_WINDOW_PADDING
                      : attnc_mask_chunked(ki.mask) ? ATTNC_MASK_CHUNKED_PADDING
                                                    : ATTNC_MASK_CAUSAL_PADDING) +
             " takes them";
    return usageError(std::string(opt) + ": the kernel " + ki.name + " has no " + feature +
                      " feature (features: " + featureNames(f) +
                      ", mask: " + maskName(ki.mask) + ")" + hint);
  };
  if (!o.lengthsArg.empty() && !(f & ATTNC_FEATURE_LENGTHS))
    return lacks("--lengths", "lengths");
  if (!o.xKvPath.empty() && !(f & ATTNC_FEATURE_CROSS))
    return lacks("--x-kv", "cross");
  if (o.kvSeqGiven && !(f & ATTNC_FEATURE_CROSS))
    return lacks("--kv-seq-len", "cross");
  if (!o.kvLengthsArg.empty() && !(f & ATTNC_FEATURE_CROSS))
    return lacks("--kv-lengths", "cross");
  if (!o.kvLengthsArg.empty() && !(f & ATTNC_FEATURE_LENGTHS))
    return lacks("--kv-lengths", "lengths");
  if (!o.probsPath.empty() && !(f & ATTNC_FEATURE_PROBS))
    return lacks("--probs", "probs");
  if (!o.heatmapPath.empty() && !(f & ATTNC_FEATURE_PROBS))
    return lacks("--heatmap", "probs");
  if (o.decodeSteps > 0 && !(f & ATTNC_FEATURE_DECODE))
    return lacks("--decode-steps", "decode");
  if (o.decodeSteps > 0 && !o.lengthsArg.empty())
    return usageError("--decode-steps runs whole sequences: --lengths does not go with it");
  if (o.decodeSteps > 0 && (!o.probsPath.empty() || !o.heatmapPath.empty()))
    return usageError(std::string("--decode-steps writes no attention weights: ") +
                      (o.probsPath.empty() ? "--heatmap" : "--probs") +
                      " does not go with it");
  if (o.decodeChunkGiven && o.decodeSteps == 0)
    return usageError("--decode-chunk needs --decode-steps");
  if (o.decodeChunk > o.decodeSteps && o.decodeSteps > 0)
    return usageError("--decode-chunk " + std::to_string(o.decodeChunk) +
                      " is more than --decode-steps " + std::to_string(o.decodeSteps) +
                      " (the tokens decoded in all)");
  if (o.decodeChunk > 1 && (ki.features & ATTNC_FEATURE_CUDA))
    return usageError("--decode-chunk " + std::to_string(o.decodeChunk) +
                      ": a CUDA kernel's NAME_decode takes one token per "
                      "sequence per call");
  if (o.headGiven && o.head >= ki.heads)
    return usageError("--head: " + std::to_string(o.head) +
                      " is not a head of the kernel (heads 0.." +
                      std::to_string(ki.heads - 1) + ")");
  return -1;
}

/// Valid lengths for `opt` (one per sequence, each 0..limit): the list
/// given, or random ones; usage error (exit 2) otherwise.
int makeLengths(const char *opt, const std::vector<int64_t> &given,
                bool random, int64_t batch, int64_t limit,
                const char *limitName, std::mt19937_64 &rng,
                std::vector<int32_t> &out) {
  out.clear();
  limit = std::min<int64_t>(limit, INT32_MAX); // the ABI's lengths are int32
  if (random) {
    std::uniform_int_distribution<int64_t> pick(0, limit);
    for (int64_t b = 0; b < batch; ++b)
      out.push_back(static_cast<int32_t>(pick(rng)));
    return -1;
  }
  if (int64_t(given.size()) != batch)
    return usageError(std::string(opt) + ": " + std::to_string(given.size()) +
                      " value" + (given.size() == 1 ? "" : "s") +
                      " for batch " + std::to_string(batch) +
                      " (one per sequence)");
  for (size_t b = 0; b < given.size(); ++b) {
    if (given[b] < 0 || given[b] > limit)
      return usageError(std::string(opt) + ": " + std::to_string(given[b]) +
                        " (sequence " + std::to_string(b) +
                        ") is outside 0.." + std::to_string(limit) + " (" +
                        limitName + ")");
    out.push_back(static_cast<int32_t>(given[b]));
  }
  return -1;
}

/// `(d0, d1, ...)`, for messages about an array's shape.
std::string shapeText(const std::vector<int64_t> &shape) {
  std::string got;
  for (int64_t d : shape)
    got += (got.empty() ? "" : ", ") + std::to_string(d);
  return "(" + got + ")";
}

/// One run of attnc-run after the options are parsed. The phases share
/// this state and run in this order: load (the library, --info, the
/// device kind and code path), readInputs (--x, --x-kv, fixed lengths:
/// the shapes), openDevice (--device cuda), planMemory (workspaces,
/// caches, the host's and the device's memory), makeData (random data,
/// --expected, the weights packed), runDecode or runForward, writeOutputs
/// (the summary, --out, --probs, --heatmap), check (--check, --expected),
/// bench (--bench). Each phase returns -1 to go on, else the exit code
/// (the error printed).
class Run {
public:
  explicit Run(const Options &o) : o(o) {}

  int execute() {
    int rc;
    // (the inputs before the device: a usage error is exit 2 whether or
    // not this machine has a CUDA driver)
    if ((rc = load()) >= 0 || (rc = readInputs()) >= 0 ||
        (rc = openDevice()) >= 0 || (rc = planMemory()) >= 0 ||
        (rc = makeData()) >= 0 ||
        (rc = steps > 0 ? runDecode() : runForward()) >= 0 ||
        (rc = writeOutputs()) >= 0 || (rc = check()) >= 0 ||
        (rc = bench()) >= 0)
      return rc;
    if (gJson) {
      run.set("passed", status == kExitOk);
      run.set("exit_code", status);
      printJson(run);
    }
    return status;
  }

private:
  const attnc_kernel_info &info() const { return k.info(); }
  int load();
  int openDevice();
  int readInputs();
  int planMemory();
  int makeData();
  int runDecode();
  int runForward();
  int writeOutputs();
  int check();
  int bench();
  int benchDecode();
  int benchDeviceForward();
  int benchForward();
  void reportForwardBench(std::vector<double> &ms);

  // Decode steps: one call of n tokens per sequence at `pos`.
  void stageStep(int64_t pos, int64_t n = 1);
  bool uploadStep();
  int launchStep();
  int decodeStep(int64_t pos, int64_t n);
  int deviceForward();

  /// An f16 kernel's input from a file: a finite value past float16's
  /// range would go in as inf (an error naming it; bf16 has float32's range).
  bool fitsDtype(const std::string &path, const std::vector<float> &v) {
    const int64_t e = attnrt::firstOutOfRange(info().dtype, v.data(), int64_t(v.size()));
    if (e < 0)
      return true;
    char value[32];
    std::snprintf(value, sizeof value, "%g", double(v[size_t(e)]));
    error(path + ": element " + std::to_string(e) + " (" + value + ") is out of " +
          attnrt::storageRangeText(info().dtype) + ", and the kernel's dtype is " +
          attnrt::nameOf("dtype", info().dtype));
    return false;
  }

  /// A bf16/f16 kernel (dtype) reads and writes its activations in that
  /// type: the float values here go in rounded to it (RNE) and come back
  /// widened.
  std::vector<unsigned char> toKernel(const std::vector<float> &v) const {
    std::vector<unsigned char> out(v.size() * size_t(attnrt::dtypeBytes(actDtype)));
    attnrt::fromFloat(actDtype, v.data(), out.data(), int64_t(v.size()));
    return out;
  }
  void fromKernel(const std::vector<unsigned char> &b, float *v, size_t n) const {
    attnrt::toFloat(actDtype, b.data(), v, int64_t(n));
  }
  /// Bytes of n activations (x, y, the KV cache) in the kernel's dtype.
  size_t actBytes(size_t n) const { return n * size_t(attnrt::dtypeBytes(actDtype)); }
  /// --device cuda: n activations copied up in the kernel's dtype (rounded
  /// as toKernel does), or copied back and widened.
  bool uploadAct(attnrt::cuda::Buffer &d, const float *v, size_t n) {
    if (!narrowAct)
      return d.upload(v, n * sizeof(float), msg);
    std::vector<unsigned char> kb(actBytes(n));
    attnrt::fromFloat(actDtype, v, kb.data(), int64_t(n));
    return d.upload(kb.data(), kb.size(), msg);
  }
  bool downloadAct(const attnrt::cuda::Buffer &d, float *v, size_t n) {
    if (!narrowAct)
      return d.download(v, n * sizeof(float), msg);
    std::vector<unsigned char> kb(actBytes(n));
    if (!d.download(kb.data(), kb.size(), msg))
      return false;
    attnrt::toFloat(actDtype, kb.data(), v, int64_t(n));
    return true;
  }
  JsonValue benchJson(const char *mode, const std::vector<double> &ms) const;

  const Options &o;
  std::string msg;
  // --device cuda: device 0, opened once the kernel is known to be a CUDA
  // one. Declared first, so its context outlives every device buffer and
  // the kernel library (which may hold modules in it).
  attnrt::cuda::Device dev;
  attnrt::Kernel k;

  // The block and its shapes.
  attnrt::BlockParams p;
  std::vector<attnrt::TensorShape> tensors;
  int64_t memory = 0;
  bool cross = false, wantProbs = false;
  int64_t batch = 0, seq = 0, kvSeq = 0;
  std::vector<int32_t> lengths, kvLengths;
  // Sizes (planMemory).
  int64_t wsBytes = 0;
  int64_t steps = 0, prefill = 0, chunk = 1;
  int64_t cacheFloats = 0, decodeWsBytes = 0, prefillWsBytes = 0;
  int64_t rows = 0, kvRows = 0, weightFloats = 0, probsFloats = 0;
  int64_t cacheBytes = 0, decodeBytes = 0;

  // The data (makeData).
  std::vector<float> x, xKv, expected;
  std::vector<std::vector<float>> weights;
  std::vector<const float *> wptrs;
  std::vector<unsigned char> packed;
  double packMs = 0;
  attnrt::VariantInputs variants;
  std::vector<float> y, probs;
  float *probsPtr = nullptr;
  std::vector<unsigned char> ws; // the CPU path's workspace
  int threads = 1;
  uint32_t actDtype = ATTNC_DTYPE_F32;
  bool narrowAct = false;

  // --decode-steps: the caches are host buffers, or with --device cuda
  // device ones (zeroed); each step stages every sequence's token at the
  // step's position (all sequences at the same one) and the positions,
  // which --device cuda copies up (the runtime checks the host copy) before
  // the step and whose y rows it copies back after a synchronize. The
  // caches are host float vectors of cacheFloats elements: more than the
  // kernel's narrower elements need.
  std::vector<float> kCache, vCache, xTok, yTok;
  std::vector<int32_t> positions;
  std::vector<unsigned char> decodeWs;
  // A call's n tokens per sequence (x rows [pos, pos + n) of each),
  // packed [batch, n, d_model].
  int64_t callTokens = 1;
  // A narrow (bf16/f16) kernel's tokens are converted in stageStep, once,
  // so that launchStep (what --bench times) is the kernel call alone.
  std::vector<unsigned char> xTokK, yTokK;

  // --device cuda: device buffers (y poisoned with NaN bytes, so a row the
  // kernel never writes fails --check).
  attnrt::cuda::Buffer dPacked, dX, dY, dWs, dXKv, dLengths, dKvLengths, dProbs,
      dKCache, dVCache, dXTok, dYTok, dPositions, dDecodeWs;
  attnrt::Kernel::DeviceLengths dLen;
  std::string onDevice;

  // The report.
  JsonValue run;
  int64_t shownThreads = 1;
  int status = kExitOk;
};

static constexpr size_t i4 = sizeof(int32_t);

/// The library (and --info), then whether this run can use it: the device
/// kind, the variant options, the code path.
int Run::load() {
  attnrt::LoadError err;
  uint32_t abi = o.abiOverride >= 0 ? static_cast<uint32_t>(o.abiOverride)
                                    : ATTNC_ABI_VERSION;
  if (!k.load(o.lib, msg, err, abi)) {
    // The message starts with the library's path.
    error(msg + " (" + attnrt::toString(err) + ")");
    return kExitLoad + static_cast<int>(err);
  }
  const attnc_kernel_info &ki = info();
  if (o.info) {
    // A bad ATTNC_ISA makes selected_isa none; say so (a library built
    // before ATTNC_ISA was checked ignores the value).
    if (!k.isCuda() && !attnrt::isaEnvProblem().empty())
      std::fprintf(stderr, "attnc-run: warning: %s\n", attnrt::isaEnvProblem().c_str());
    if (o.json)
      printJson(infoJson(k, o.lib));
    else
      printInfo(k);
    return kExitOk;
  }
  // The device kind: a CUDA kernel's forward takes device pointers (never
  // host memory), a CPU kernel's host pointers.
  if (k.isCuda() && !o.cuda) {
    error(std::string("kernel ") + ki.name + " targets " +
          attnrt::isaName(ki.isa) +
          ": its forward takes device pointers; run it with --device cuda");
    return kExitFailed;
  }
  if (!k.isCuda() && o.cuda) {
    error(std::string("kernel ") + ki.name + " targets the CPU (isa " +
          attnrt::isaName(ki.isa) + "); drop --device cuda");
    return kExitFailed;
  }
  int rc;
  if ((rc = checkVariantOptions(o, ki)) >= 0)
    return rc;
  // ATTNC_ISA caps a CPU kernel's code path; a value it does not know is
  // refused here (the kernel itself, which cannot print, selects nothing
  // and returns ATTNC_ERR_ISA).
  if (!k.isCuda() && !attnrt::isaEnvProblem().empty()) {
    error(attnrt::isaEnvProblem());
    return kExitInput;
  }
  return -1;
}

/// --device cuda: the driver, device 0 (its primary context current on
/// this thread), at least the kernel's sm_XY; and a code path that the
/// kernel selects on this machine.
int Run::openDevice() {
  const attnc_kernel_info &ki = info();
  if (o.cuda) {
    if (dev.open(0, msg) != ATTNC_OK) {
      error(msg);
      return kExitFailed;
    }
    const int need = attnrt::cudaSmOf(ki.isa);
    if (dev.sm() < need) {
      error("no CUDA device for " + std::string(ki.name) + ": device 0 (" +
            dev.name() + ") is sm_" + std::to_string(dev.sm()) +
            ", older than the kernel's sm_" + std::to_string(need) + " (" +
            attnrt::isaName(ki.isa) + ")");
      return kExitFailed;
    }
    onDevice = " on device 0 (" + dev.name() + ")";
  }
  if (o.cuda && k.selectedIsa() == ATTNC_ISA_NONE) {
    error(o.lib + ": the kernel's selected_isa() is none: it finds no CUDA "
          "device for it (device 0: " + dev.name() + ", sm_" +
          std::to_string(dev.sm()) + ")");
    return kExitFailed;
  }
  if (!o.cuda && k.selectedIsa() == ATTNC_ISA_NONE) {
    error(o.lib + ": this CPU has none of the library's code paths (built "
          "for " + isaName(ki) + ", " + ki.target_cpu +
          "); nothing to run" +
          (std::getenv("ATTNC_ISA") && *std::getenv("ATTNC_ISA")
               ? std::string(" (ATTNC_ISA=") + std::getenv("ATTNC_ISA") +
                     " in the environment caps the choice: unset it to let "
                     "the library pick this CPU's best)"
               : std::string()));
    return kExitFailed;
  }
  return -1;
}

/// The shapes: x from --x (its header sets batch and seq_len; at most
/// `memory` bytes are read) or the options, x_kv likewise, and the fixed
/// lengths (random ones are drawn after the data).
int Run::readInputs() {
  const attnc_kernel_info &ki = info();
  p = attnrt::paramsFromInfo(ki);
  tensors = attnrt::storageTensors(p);
  memory = physicalMemory();
  cross = (ki.features & ATTNC_FEATURE_CROSS) != 0;
  // Decode steps write no attention weights (NAME_decode has no probs
  // output, the prefill is called without one): nothing to show or check.
  // --device cuda: a device buffer, copied back with y.
  wantProbs = (ki.features & ATTNC_FEATURE_PROBS) != 0 && o.decodeSteps == 0;

  // --x-scale scales the random x (and a cross kernel's random x_kv):
  // with every input from a file it would do nothing.
  if (o.xScaleGiven && !o.xPath.empty() && (!cross || !o.xKvPath.empty())) {
    error(std::string("--x-scale scales random inputs, and --x") +
          (cross ? " and --x-kv are" : " is") + " given: it would do nothing (see --help)");
    return kExitInput;
  }
  // --weights (or --hf's DIR) is read in makeData, after the memory is
  // planned; one that is not there at all is an input error now, before
  // --device cuda opens the driver (which would fail first, exit 1).
  if (!o.wDir.empty() && ::access(o.wDir.c_str(), F_OK) != 0) {
    error(o.wDir + ": cannot open: " + std::strerror(errno));
    return kExitInput;
  }

  batch = o.batch;
  seq = o.seq;
  // The default length, 128, is cut to a smaller max_seq_len (an explicit
  // --seq-len is checked as given).
  if (!o.seqGiven && o.xPath.empty() && ki.max_seq_len > 0 && seq > ki.max_seq_len) {
    seq = ki.max_seq_len;
    std::fprintf(stderr,
                 "attnc-run: note: seq_len %lld, the kernel's max_seq_len (the default 128 "
                 "is longer)\n",
                 static_cast<long long>(seq));
  }
  if (!o.xPath.empty()) {
    // The shape is checked from the header, before the data is read.
    attnrt::NpyArray arr;
    auto acceptShape = [&](const std::vector<int64_t> &shape,
                           std::string &why) {
      if (shape.size() != 3 || shape[2] != ki.d_model) {
        why = "expected shape (batch, seq_len, " + std::to_string(ki.d_model) +
              "), found " + shapeText(shape);
        return false;
      }
      if (shape[0] < 1 || shape[1] < 1) {
        why = "batch and seq_len must be at least 1, found batch " +
              std::to_string(shape[0]) + ", seq_len " +
              std::to_string(shape[1]);
        return false;
      }
      return k.checkShape(shape[0], shape[1], why);
    };
    if (!attnrt::readNpy(o.xPath, arr, msg, memory, acceptShape)) {
      error(msg);
      return kExitInput;
    }
    if (!fitsDtype(o.xPath, arr.data))
      return kExitInput;
    noteConverted(o.xPath, arr, ki.dtype);
    batch = arr.shape[0];
    seq = arr.shape[1];
    x = std::move(arr.data);
  }

  // Sizes, before anything shape-dependent is allocated.
  if (!k.checkShape(batch, seq, msg)) {
    error(msg);
    return kExitInput;
  }
  // The K/V input of a cross-attention kernel: from a file (its batch must
  // be x's), or random with --kv-seq-len (default: seq_len) rows.
  kvSeq = cross ? (o.kvSeqGiven ? o.kvSeq : seq) : seq;
  if (!o.xKvPath.empty()) {
    attnrt::NpyArray arr;
    auto acceptShape = [&](const std::vector<int64_t> &shape,
                           std::string &why) {
      if (shape.size() != 3 || shape[0] != batch || shape[2] != ki.d_model) {
        why = "expected shape (" + std::to_string(batch) + ", kv_seq_len, " +
              std::to_string(ki.d_model) + ") (the batch of x), found " +
              shapeText(shape);
        return false;
      }
      return k.checkShape(batch, seq, shape[1], why);
    };
    if (!attnrt::readNpy(o.xKvPath, arr, msg, memory, acceptShape)) {
      error(msg);
      return kExitInput;
    }
    if (!fitsDtype(o.xKvPath, arr.data))
      return kExitInput;
    noteConverted(o.xKvPath, arr, ki.dtype);
    kvSeq = arr.shape[1];
    xKv = std::move(arr.data);
  }
  if (!k.checkShape(batch, seq, kvSeq, msg)) {
    error(msg);
    return kExitInput;
  }
  if (o.heatmapBatchGiven && o.heatmapBatch >= batch)
    return usageError("--heatmap-batch: " + std::to_string(o.heatmapBatch) +
                      " is not a sequence of the batch (0.." +
                      std::to_string(batch - 1) + ")");
  // Fixed lengths are checked now; random ones are drawn after the data.
  int rc;
  std::mt19937_64 unused;
  if (!o.lengthsArg.empty() && !o.lengthsRandom &&
      (rc = makeLengths("--lengths", o.lengths, false, batch, seq,
                        "seq_len", unused, lengths)) >= 0)
    return rc;
  if (!o.kvLengthsArg.empty() && !o.kvLengthsRandom &&
      (rc = makeLengths("--kv-lengths", o.kvLengths, false, batch, kvSeq,
                        "kv_seq_len", unused, kvLengths)) >= 0)
    return rc;
  if (o.decodeSteps > seq)
    return usageError("--decode-steps " + std::to_string(o.decodeSteps) +
                      " is more than seq_len " + std::to_string(seq));
  return -1;
}

/// The workspaces, the caches of --decode-steps, and what the whole run
/// needs of the host's memory (and with --device cuda of the device's),
/// refused before anything that size is allocated.
int Run::planMemory() {
  const attnc_kernel_info &ki = info();
  bool libraryFault = false;
  wsBytes = k.workspaceBytes(batch, seq, kvSeq, msg, &libraryFault);
  if (wsBytes < 0) {
    if (libraryFault) {
      error(o.lib + ": " + msg + " (bad_metadata)");
      return kExitLoad + static_cast<int>(attnrt::LoadError::BadMetadata);
    }
    error(msg);
    return kExitInput;
  }
  // --decode-steps K: prefill P = T-K tokens into a cache of T rows, then
  // decode the last K tokens, --decode-chunk C of them per call. The caches
  // and the decode workspace, sized now (host memory, or with --device
  // cuda the device's).
  steps = o.decodeSteps;
  prefill = seq - steps;
  chunk = std::max<int64_t>(1, std::min(o.decodeChunk, steps));
  if (steps > 0) { // (steps <= seq: readInputs)
    msg.clear();
    if (!attnrt::checkedProduct({batch, ki.kv_heads, seq, ki.head_dim},
                                cacheFloats) ||
        (decodeWsBytes = k.decodeWorkspaceBytes(batch, chunk, seq, msg)) < 0 ||
        (prefill > 0 &&
         (prefillWsBytes = k.workspaceBytes(batch, prefill, msg)) < 0)) {
      error(msg.empty() ? "the KV cache overflows" : msg);
      return kExitInput;
    }
  }
  // x, y (with --expected also the file and its double copy), x_kv, the
  // workspace, the weights and the packed buffer, the attention weights,
  // and with --check the reference's double buffers (y, bound, q with its
  // error, twice for the head split, the attention output with its
  // error; per K/V row x_kv and k/v with their errors, twice; the
  // weights and their bounds). With --decode-steps: the two caches
  // (bytes), and what the steps add besides: the prefill's x and y and one
  // token's x and y per sequence (at most a row of x and y per token), the
  // decode workspace and the positions.
  for (const auto &t : tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape)
      attnrt::checkedMul(n, d, n); // validated at load
    attnrt::checkedAdd(weightFloats, n, weightFloats);
  }
  const int64_t qW = ki.heads * ki.head_dim, kvW = ki.kv_heads * ki.head_dim;
  int64_t perRowFloats = 0, perRowDoubles = 0, perKvRowDoubles = 0,
          floatsBytes = 0, kvBytes = 0, doublesBytes, kvDoublesBytes,
          probsBytes, fixedBytes, need = 0;
  bool ok = attnrt::checkedMul(batch, seq, rows) &&
            attnrt::checkedMul(batch, kvSeq, kvRows) &&
            (!wantProbs ||
             attnrt::checkedProduct({rows, ki.heads, kvSeq}, probsFloats)) &&
            attnrt::checkedSum({ki.d_model, ki.out_dim,
                                o.expectedPath.empty() ? 0 : 3 * ki.out_dim},
                               perRowFloats) &&
            attnrt::checkedSum({ki.d_model, 4 * qW, 4 * qW, 2 * ki.out_dim},
                               perRowDoubles) &&
            attnrt::checkedSum({ki.d_model, 8 * kvW}, perKvRowDoubles) &&
            attnrt::checkedProduct({rows, perRowFloats, 4}, floatsBytes) &&
            attnrt::checkedProduct({cross ? kvRows : 0, ki.d_model, 4},
                                   kvBytes) &&
            attnrt::checkedProduct(
                {rows, o.check ? perRowDoubles : 0, 8}, doublesBytes) &&
            attnrt::checkedProduct(
                {kvRows, o.check ? perKvRowDoubles : 0, 8}, kvDoublesBytes) &&
            attnrt::checkedProduct({probsFloats, o.check ? 4 + 16 : 4},
                                   probsBytes) &&
            attnrt::checkedProduct(
                {weightFloats * 4 + ki.packed_bytes}, fixedBytes) &&
            attnrt::checkedProduct({2, cacheFloats, 4}, cacheBytes) &&
            attnrt::checkedProduct(
                {steps > 0 ? rows : 0, ki.d_model + ki.out_dim, 4},
                decodeBytes) &&
            attnrt::checkedSum({decodeBytes, decodeWsBytes, 4 * batch},
                               decodeBytes) &&
            attnrt::checkedSum({floatsBytes, kvBytes, doublesBytes,
                                kvDoublesBytes, probsBytes, fixedBytes,
                                o.cuda ? 0 : wsBytes, o.cuda ? 0 : cacheBytes,
                                decodeBytes},
                               need);
  if (!ok || need > memory) {
    error("batch " + std::to_string(batch) + " x seq_len " +
          std::to_string(seq) +
          (cross ? " (kv_seq_len " + std::to_string(kvSeq) + ")" : "") +
          " needs " +
          (ok ? std::to_string(need) + " bytes (" + gib(need) + ")"
              : std::string("more than 2^63 bytes")) +
          " of memory, more than this machine has (" + gib(memory) + ")");
    return kExitInput;
  }
  // The device's: packed, x, y, x_kv, the workspace and the lengths;
  // with --decode-steps the caches and the steps' buffers too.
  int64_t devNeed = 0, xyBytes = 0, packedBytes = 0, lengthsBytes = 0,
          devProbsBytes = 0;
  const bool devOk =
      !o.cuda ||
      (attnrt::checkedProduct({rows, ki.d_model + ki.out_dim, 4}, xyBytes) &&
       attnrt::checkedMul(ki.packed_bytes, 1, packedBytes) &&
       attnrt::checkedProduct(
           {batch,
            int64_t(!o.lengthsArg.empty()) + int64_t(!o.kvLengthsArg.empty()),
            4},
           lengthsBytes) &&
       attnrt::checkedMul(probsFloats, 4, devProbsBytes) &&
       attnrt::checkedSum({xyBytes, kvBytes, packedBytes, wsBytes,
                           lengthsBytes, cacheBytes, decodeBytes,
                           devProbsBytes},
                          devNeed));
  if (!devOk || (o.cuda && devNeed > dev.totalMemory())) {
    error("batch " + std::to_string(batch) + " x seq_len " +
          std::to_string(seq) +
          (cross ? " (kv_seq_len " + std::to_string(kvSeq) + ")" : "") +
          " needs " +
          (devOk ? std::to_string(devNeed) + " bytes (" + gib(devNeed) + ")"
                 : std::string("more than 2^63 bytes")) +
          " of device memory, more than device 0 (" + dev.name() +
          ") has (" + gib(dev.totalMemory()) + ")");
    return kExitInput;
  }
  return -1;
}

/// Random data, in this order from one seed: weights, x, x_kv, lengths,
/// kv_lengths (so that adding a later one never changes an earlier one);
/// --expected; the weights packed; the output buffers.
int Run::makeData() {
  const attnc_kernel_info &ki = info();
  std::mt19937_64 rng(static_cast<uint64_t>(o.seed));
  if (!loadWeights(o.wDir, o.wPrefix, ki, tensors, rng, weights))
    return kExitInput;
  if (!o.hfDir.empty())
    checkAgainstConfig(o.lib, o.hfDir, o.hfModule, p);
  int64_t xFloats = 0, yFloats = 0; // checkShape: both fit
  attnrt::checkedMul(rows, ki.d_model, xFloats);
  attnrt::checkedMul(rows, ki.out_dim, yFloats);
  if (o.xPath.empty()) {
    x = attnrt::randomNormal(xFloats, rng);
    for (float &f : x)
      f *= static_cast<float>(o.xScale);
  }
  if (cross && o.xKvPath.empty()) {
    xKv = attnrt::randomNormal(kvRows * ki.d_model, rng);
    for (float &f : xKv)
      f *= static_cast<float>(o.xScale);
  }
  char scaleText[32];
  std::snprintf(scaleText, sizeof scaleText, "%g", o.xScale);
  if ((o.xPath.empty() && !fitsDtype(std::string("random x (--x-scale ") + scaleText + ")", x)) ||
      (cross && o.xKvPath.empty() &&
       !fitsDtype(std::string("random x_kv (--x-scale ") + scaleText + ")", xKv)))
    return kExitInput;
  if (o.lengthsRandom)
    makeLengths("--lengths", {}, true, batch, seq, "seq_len", rng, lengths);
  if (o.kvLengthsRandom)
    makeLengths("--kv-lengths", {}, true, batch, kvSeq, "kv_seq_len", rng,
                kvLengths);
  variants.lengths = lengths.empty() ? nullptr : lengths.data();
  variants.kvLengths = kvLengths.empty() ? nullptr : kvLengths.data();
  if (cross) {
    variants.xKv = xKv.data();
    variants.kvSeqLen = kvSeq;
  }
  if (!o.expectedPath.empty()) {
    attnrt::NpyArray arr;
    if (!attnrt::readNpy(o.expectedPath, arr, msg, memory)) {
      error(msg);
      return kExitInput;
    }
    noteConverted(o.expectedPath, arr);
    if (arr.shape != std::vector<int64_t>{batch, seq, ki.out_dim}) {
      error(o.expectedPath + ": expected shape (" + std::to_string(batch) +
            ", " + std::to_string(seq) + ", " + std::to_string(ki.out_dim) +
            "), found " + shapeText(arr.shape));
      return kExitInput;
    }
    expected = std::move(arr.data);
  }

  for (auto &w : weights)
    wptrs.push_back(w.data());
  auto tp0 = std::chrono::steady_clock::now();
  int rc = k.packFloat(wptrs, packed);
  auto tp1 = std::chrono::steady_clock::now();
  packMs = std::chrono::duration<double, std::milli>(tp1 - tp0).count();
  if (rc != ATTNC_OK) {
    error(std::string(ki.name) + "_pack returned " + std::to_string(rc) +
          " (" + statusText(rc) + ")");
    return kExitFailed;
  }
  y.resize(static_cast<size_t>(yFloats));
  actDtype = ki.dtype;
  narrowAct = actDtype != ATTNC_DTYPE_F32;
  // A kernel with the probs feature always gets the buffer: --check
  // compares it, --probs and --heatmap show it.
  probs.resize(static_cast<size_t>(probsFloats));
  probsPtr = wantProbs ? probs.data() : nullptr;
  // The host workspace (the CPU path's; --device cuda: a device buffer).
  ws.resize(static_cast<size_t>(o.cuda ? 0 : wsBytes));
  attnrt_huge_pages(ws.data(), ws.size()); // (as Kernel::forward's own)
  threads = static_cast<int>(o.threads);
  if (!k.checkVariants(batch, seq, variants, probsPtr, msg)) {
    error(msg);
    return kExitInput;
  }
  return -1;
}

void Run::stageStep(int64_t pos, int64_t n) {
  const attnc_kernel_info &ki = info();
  callTokens = n;
  for (int64_t b = 0; b < batch; ++b) {
    std::copy_n(x.data() + (b * seq + pos) * ki.d_model, n * ki.d_model,
                xTok.data() + b * n * ki.d_model);
    positions[size_t(b)] = static_cast<int32_t>(pos);
  }
  if (!o.cuda && narrowAct)
    attnrt::fromFloat(actDtype, xTok.data(), xTokK.data(), batch * n * ki.d_model);
}

bool Run::uploadStep() {
  return uploadAct(dXTok, xTok.data(), size_t(batch * info().d_model)) &&
         dPositions.upload(positions.data(), positions.size() * i4, msg) &&
         dYTok.fill(0xff, msg);
}

int Run::launchStep() {
  if (!o.cuda && narrowAct)
    return k.decode(packed.data(), xTokK.data(), yTokK.data(), batch, callTokens,
                    positions.data(), kCache.data(), vCache.data(), seq,
                    decodeWs, threads);
  if (!o.cuda)
    return k.decode(packed.data(), xTok.data(), yTok.data(), batch, callTokens,
                    positions.data(), kCache.data(), vCache.data(), seq,
                    decodeWs, threads);
  return k.decodeDevice(dPacked.floats(), dXTok.floats(), dYTok.floats(),
                        batch, 1, static_cast<const int32_t *>(dPositions.get()),
                        positions.data(), dKCache.floats(), dVCache.floats(),
                        seq, dDecodeWs.get(), decodeWsBytes,
                        /*stream=*/nullptr);
}

/// One call of n tokens at `pos`, their y rows into y.
int Run::decodeStep(int64_t pos, int64_t n) {
  const attnc_kernel_info &ki = info();
  stageStep(pos, n);
  if (o.cuda && !uploadStep()) {
    error(msg);
    return kExitFailed;
  }
  int rc = launchStep();
  if (rc != ATTNC_OK) {
    error(std::string(ki.name) + "_decode (position " + std::to_string(pos) +
          ") returned " + std::to_string(rc) + " (" + statusText(rc) + ")" +
          onDevice);
    return kExitFailed;
  }
  if (o.cuda && (!dev.synchronize(msg) ||
                 !downloadAct(dYTok, yTok.data(), yTok.size()))) {
    error(std::string(ki.name) + "_decode (position " + std::to_string(pos) +
          ")" + onDevice + ": " + msg);
    return kExitFailed;
  }
  if (!o.cuda && narrowAct)
    fromKernel(yTokK, yTok.data(), size_t(batch * n * ki.out_dim));
  for (int64_t b = 0; b < batch; ++b)
    std::copy_n(yTok.data() + b * n * ki.out_dim, n * ki.out_dim,
                y.data() + (b * seq + pos) * ki.out_dim);
  return -1;
}

/// --decode-steps: forward over the first P tokens of each sequence fills
/// rows [0, P) of the caches, then the decode calls write the rest.
int Run::runDecode() {
  const attnc_kernel_info &ki = info();
  // longrope: the cached keys keep the tables of the call that wrote them,
  // which is not what every model's generation does at the switch.
  if (ki.rope_long_inv_freq && prefill <= ki.rope_long_from && seq > ki.rope_long_from)
    std::fprintf(stderr,
                 "note: the decode steps cross longrope's switch (calls longer than %lld "
                 "use the long factors): the cached keys keep the short factors' "
                 "rotation; Phi-3's generation recomputes the cache there instead "
                 "(docs/spec.md, rope)\n",
                 (long long)ki.rope_long_from);
  xTok.resize(size_t(batch * chunk * ki.d_model));
  yTok.resize(size_t(batch * chunk * ki.out_dim));
  if (narrowAct) {
    const size_t bytes = size_t(attnrt::dtypeBytes(actDtype));
    xTokK.resize(xTok.size() * bytes);
    yTokK.resize(yTok.size() * bytes);
  }
  positions.resize(size_t(batch));
  if (!o.cuda) {
    kCache.assign(size_t(cacheFloats), 0.0f);
    vCache.assign(size_t(cacheFloats), 0.0f);
    attnrt_huge_pages(kCache.data(), kCache.size() * sizeof(float));
    attnrt_huge_pages(vCache.data(), vCache.size() * sizeof(float));
  } else if (!dPacked.allocate(packed.size(), "packed", msg) ||
             !dPacked.upload(packed.data(), packed.size(), msg) ||
             !dKCache.allocate(actBytes(size_t(cacheFloats)), "k_cache", msg) ||
             !dVCache.allocate(actBytes(size_t(cacheFloats)), "v_cache", msg) ||
             !dKCache.fill(0, msg) || !dVCache.fill(0, msg) ||
             !dXTok.allocate(actBytes(xTok.size()), "the decode step's x", msg) ||
             !dYTok.allocate(actBytes(yTok.size()), "the decode step's y", msg) ||
             !dPositions.allocate(positions.size() * i4, "positions", msg) ||
             !dDecodeWs.allocate(size_t(decodeWsBytes),
                                 "the decode workspace", msg) ||
             !dDecodeWs.fill(0, msg)) {
    error(msg);
    return kExitFailed;
  }
  if (prefill > 0) {
    std::vector<float> xp(size_t(batch * prefill * ki.d_model)),
        yp(size_t(batch * prefill * ki.out_dim));
    for (int64_t b = 0; b < batch; ++b)
      std::copy_n(x.data() + b * seq * ki.d_model, prefill * ki.d_model,
                  xp.data() + b * prefill * ki.d_model);
    int rc;
    if (!o.cuda) {
      attnrt::VariantInputs pv;
      pv.kCache = kCache.data();
      pv.vCache = vCache.data();
      pv.cacheLen = seq;
      if (narrowAct) {
        std::vector<unsigned char> xk = toKernel(xp), yk(yp.size() * 2);
        rc = k.forward(packed.data(), xk.data(), yk.data(), batch, prefill,
                       pv, nullptr, ws, threads);
        fromKernel(yk, yp.data(), yp.size());
      } else {
        rc = k.forward(packed.data(), xp.data(), yp.data(), batch, prefill,
                       pv, nullptr, ws, threads);
      }
    } else {
      if (!dX.allocate(actBytes(xp.size()), "the prefill's x", msg) ||
          !dY.allocate(actBytes(yp.size()), "the prefill's y", msg) ||
          !dWs.allocate(size_t(prefillWsBytes), "the workspace", msg) ||
          !uploadAct(dX, xp.data(), xp.size()) ||
          !dY.fill(0xff, msg) || !dWs.fill(0, msg)) {
        error(msg);
        return kExitFailed;
      }
      attnrt::Kernel::DeviceCache dc;
      dc.kCache = dKCache.floats();
      dc.vCache = dVCache.floats();
      dc.cacheLen = seq;
      rc = k.forwardDevice(dPacked.floats(), dX.floats(), dY.floats(), batch,
                           prefill, dWs.get(), prefillWsBytes, nullptr, 0,
                           attnrt::Kernel::DeviceLengths(), dc,
                           /*stream=*/nullptr);
    }
    if (rc != ATTNC_OK) {
      error(std::string(ki.name) + "_forward (prefill of " +
            std::to_string(prefill) + " tokens) returned " +
            std::to_string(rc) + " (" + statusText(rc) + ")" + onDevice);
      return kExitFailed;
    }
    if (o.cuda && (!dev.synchronize(msg) ||
                   !downloadAct(dY, yp.data(), yp.size()))) {
      error(std::string(ki.name) + "_forward (prefill of " +
            std::to_string(prefill) + " tokens)" + onDevice + ": " + msg);
      return kExitFailed;
    }
    for (int64_t b = 0; b < batch; ++b)
      std::copy_n(yp.data() + b * prefill * ki.out_dim, prefill * ki.out_dim,
                  y.data() + b * seq * ki.out_dim);
  }
  for (int64_t pos = prefill; pos < seq; pos += chunk) {
    const int ex = decodeStep(pos, std::min(chunk, seq - pos));
    if (ex >= 0)
      return ex;
  }
  return -1;
}

/// --device cuda, forward: queued on the default stream. The lengths were
/// checked (checkVariants, on the host copies); forwardDevice checks the
/// host copies again and hands the kernel the device ones.
int Run::deviceForward() {
  return k.forwardDevice(dPacked.floats(), dX.floats(), dY.floats(), batch,
                         seq, dWs.get(), wsBytes,
                         cross ? dXKv.floats() : nullptr, cross ? kvSeq : 0,
                         dLen, attnrt::Kernel::DeviceCache(),
                         probsPtr ? dProbs.get() : nullptr,
                         /*stream=*/nullptr);
}

/// One forward over the whole input: on the host (a bf16/f16 kernel's
/// activations converted around the call), or with --device cuda the
/// inputs copied in, the call, a synchronize (a failed launch shows
/// there) and y copied out.
int Run::runForward() {
  const attnc_kernel_info &ki = info();
  int rc;
  if (!o.cuda && narrowAct) {
    std::vector<unsigned char> xk = toKernel(x), yk(y.size() * 2),
        pk(probsPtr ? probs.size() * 2 : 0), xkv;
    attnrt::VariantInputs v = variants;
    if (v.xKv) {
      xkv = toKernel(xKv);
      v.xKv = xkv.data();
    }
    rc = k.forward(packed.data(), xk.data(), yk.data(), batch, seq, v,
                   probsPtr ? pk.data() : nullptr, ws, threads);
    fromKernel(yk, y.data(), y.size());
    if (probsPtr)
      fromKernel(pk, probs.data(), probs.size());
    if (rc != ATTNC_OK) {
      error(std::string(ki.name) + "_forward returned " + std::to_string(rc) +
            " (" + statusText(rc) + ")");
      return kExitFailed;
    }
    return -1;
  }
  if (!o.cuda) {
    rc = k.forward(packed.data(), x.data(), y.data(), batch, seq, variants,
                   probsPtr, ws, threads);
    if (rc != ATTNC_OK) {
      error(std::string(ki.name) + "_forward returned " + std::to_string(rc) +
            " (" + statusText(rc) + ")");
      return kExitFailed;
    }
    return -1;
  }
  if (!dPacked.allocate(packed.size(), "packed", msg) ||
      !dX.allocate(actBytes(x.size()), "x", msg) ||
      !dY.allocate(actBytes(y.size()), "y", msg) ||
      !dWs.allocate(size_t(wsBytes), "the workspace", msg) ||
      (cross && !dXKv.allocate(actBytes(xKv.size()), "x_kv", msg)) ||
      (probsPtr && !dProbs.allocate(actBytes(probs.size()), "probs", msg)) ||
      !dPacked.upload(packed.data(), packed.size(), msg) ||
      !uploadAct(dX, x.data(), x.size()) ||
      (cross && !uploadAct(dXKv, xKv.data(), xKv.size())) ||
      !dY.fill(0xff, msg) || !dWs.fill(0, msg) ||
      (probsPtr && !dProbs.fill(0xff, msg))) {
    error(msg);
    return kExitFailed;
  }
  if ((!lengths.empty() &&
       (!dLengths.allocate(lengths.size() * i4, "lengths", msg) ||
        !dLengths.upload(lengths.data(), lengths.size() * i4, msg))) ||
      (!kvLengths.empty() &&
       (!dKvLengths.allocate(kvLengths.size() * i4, "kv_lengths", msg) ||
        !dKvLengths.upload(kvLengths.data(), kvLengths.size() * i4, msg)))) {
    error(msg);
    return kExitFailed;
  }
  if (!lengths.empty()) {
    dLen.lengths = static_cast<const int32_t *>(dLengths.get());
    dLen.hostLengths = lengths.data();
  }
  if (!kvLengths.empty()) {
    dLen.kvLengths = static_cast<const int32_t *>(dKvLengths.get());
    dLen.hostKvLengths = kvLengths.data();
  }
  rc = deviceForward();
  if (rc != ATTNC_OK) {
    error(std::string(ki.name) + "_forward returned " + std::to_string(rc) +
          " (" + statusText(rc) + ") on device 0 (" + dev.name() + ")");
    return kExitFailed;
  }
  if (!dev.synchronize(msg) || !downloadAct(dY, y.data(), y.size()) ||
      (probsPtr && !downloadAct(dProbs, probs.data(), probs.size()))) {
    error(std::string(ki.name) + "_forward on device 0 (" + dev.name() +
          "): " + msg);
    return kExitFailed;
  }
  return -1;
}

/// The run's summary (a line, or with --json the run object of
/// docs/json.md, whose check, expected and bench members later phases
/// fill), then --out, --probs and --heatmap.
int Run::writeOutputs() {
  const attnc_kernel_info &ki = info();
  // The thread count that ran (--threads 0: one per online CPU).
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  shownThreads = threads > 0 ? threads : (cpus > 0 ? cpus : 1);
  run = jsonHeader("run");
  if (gJson) {
    auto pathOrNull = [](const std::string &p) {
      return p.empty() ? JsonValue() : JsonValue(p);
    };
    run.set("library", o.lib);
    run.set("kernel", ki.name);
    run.set("device", o.cuda ? "cuda" : "cpu");
    run.set("device_name", o.cuda ? JsonValue(dev.name()) : JsonValue());
    run.set("selected_isa", isaJson(k.selectedIsa()));
    run.set("threads", o.cuda ? JsonValue() : JsonValue((long long)shownThreads));
    run.set("batch", (long long)batch);
    run.set("seq_len", (long long)seq);
    run.set("kv_seq_len", (long long)kvSeq);
    run.set("d_model", (long long)ki.d_model);
    run.set("heads", (long long)ki.heads);
    run.set("out_dim", (long long)ki.out_dim);
    run.set("lengths", lengths.empty() ? JsonValue() : JsonValue::ints(lengths));
    run.set("kv_lengths", kvLengths.empty() ? JsonValue() : JsonValue::ints(kvLengths));
    run.set("decode_steps", (long long)steps);
    run.set("decode_chunk", steps > 0 ? JsonValue((long long)chunk) : JsonValue());
    run.set("prefill", steps > 0 ? JsonValue((long long)prefill) : JsonValue());
    run.set("workspace_bytes", (long long)(o.cuda ? wsBytes : int64_t(ws.size())));
    run.set("seed", (long long)o.seed);
    run.set("x", pathOrNull(o.xPath));
    run.set("x_kv", pathOrNull(o.xKvPath));
    run.set("weights", pathOrNull(o.wDir));
    run.set("weights_prefix", pathOrNull(o.wPrefix));
    run.set("out", pathOrNull(o.outPath));
    run.set("probs", pathOrNull(o.probsPath));
    run.set("heatmap", pathOrNull(o.heatmapPath));
    run.set("check", nullptr);
    run.set("expected", nullptr);
    run.set("bench", nullptr);
  } else {
    std::printf("%s: batch %lld, seq_len %lld, d_model %lld, heads %lld, "
                "workspace %lld bytes",
                ki.name, (long long)batch, (long long)seq, (long long)ki.d_model,
                (long long)ki.heads, (long long)(o.cuda ? wsBytes : ws.size()));
    if (cross)
      std::printf(", kv_seq_len %lld", (long long)kvSeq);
    if (!lengths.empty())
      std::printf(", lengths %s", lengthsText(lengths).c_str());
    if (!kvLengths.empty())
      std::printf(", kv_lengths %s", lengthsText(kvLengths).c_str());
    if (steps > 0 && chunk > 1)
      std::printf(", prefill %lld + %lld decoded tokens in calls of %lld (KV "
                  "cache of %lld rows)",
                  (long long)prefill, (long long)steps, (long long)chunk, (long long)seq);
    else if (steps > 0)
      std::printf(", prefill %lld + %lld decode steps (KV cache of %lld rows)",
                  (long long)prefill, (long long)steps, (long long)seq);
    if (o.cuda)
      std::printf(", device %s (sm_%d)", dev.name().c_str(), dev.sm());
    std::printf("\n");
  }
  if (!o.outPath.empty() &&
      !attnrt::writeNpy(o.outPath, {batch, seq, ki.out_dim}, y.data(), msg)) {
    error(msg);
    return kExitInput;
  }
  if (!o.probsPath.empty() &&
      !attnrt::writeNpy(o.probsPath, {batch, ki.heads, seq, kvSeq},
                        probs.data(), msg)) {
    error(msg);
    return kExitInput;
  }
  if (!o.heatmapPath.empty()) {
    attnrt::HeatmapOptions hopt;
    hopt.title = std::string(ki.name) + ": attention weights of sequence " +
                 std::to_string(o.heatmapBatch) + " of " +
                 std::to_string(batch);
    if (!lengths.empty())
      hopt.title += " (length " +
                    std::to_string(lengths[size_t(o.heatmapBatch)]) + ")";
    hopt.visible = visibility(ki, o.heatmapBatch, seq, kvSeq, variants);
    const float *pb =
        probs.data() + o.heatmapBatch * ki.heads * seq * kvSeq;
    if (!attnrt::writeHeatmapSvg(o.heatmapPath, pb, ki.heads, seq, kvSeq,
                                 o.headGiven ? o.head : -1, hopt, msg)) {
      error(msg);
      return kExitInput;
    }
  }
  return -1;
}

/// --check: y (and the attention weights) against the interpreter in
/// double with its error bound; --expected: y against the file. A failed
/// comparison sets the exit status and the run goes on.
int Run::check() {
  const attnc_kernel_info &ki = info();
  const int64_t n = static_cast<int64_t>(y.size());
  if (o.check) {
    Progress progress("check: computing the reference");
    attnrt::BoundOptions bopt;
    bopt.rigorous = o.rigorous;
    // A bf16 block on the AVX512-BF16 code path (or AMX-BF16's, the same
    // attention) rounds Q, K, P and V for its dot products; the other paths
    // multiply them in float32. A `host` library of bf16 activations from a
    // CPU with AVX512-BF16 (its target_cpu says "+avx512bf16") took that
    // path's dot products, unless it is a CUDA block's loops emulated on
    // the host: the bound for them covers both (with bf16 x the GEMMs'
    // inputs need no rounding term). Float32 activations never take them
    // on `host` (the multi library's rule).
    const bool bf16 = ki.dtype == ATTNC_DTYPE_BF16;
    const bool bf16Path = k.selectedIsa() == ATTNC_ISA_AVX512_BF16 ||
                          k.selectedIsa() == ATTNC_ISA_AMX_BF16;
    const bool hostBf16 = k.selectedIsa() == ATTNC_ISA_HOST && bf16 &&
                          std::strstr(ki.target_cpu, "+avx512bf16") != nullptr;
    bopt.bf16Dots = !o.cuda && bf16 && (bf16Path || hostBf16);
    // With bf16 weights, that path's GEMMs round x and the attention output
    // to bf16 (the reference rounds x as the kernel did); the others, CUDA
    // included, multiply the weights in float32.
    bopt.bf16Gemm = !o.cuda && (bf16Path || hostBf16)
                        ? attnrt::BoundOptions::GemmInputs::Bf16
                        : attnrt::BoundOptions::GemmInputs::Float32;
    // Decode steps: row t was computed by the call that ended at row
    // callEnds[t] (the prefill's, a chunk's, a step's); a rotary embedding
    // whose frequencies follow the call's length rotated it with those.
    attnrt::VariantInputs refIn = variants;
    std::vector<int64_t> callEnds;
    if (steps > 0) {
      for (int64_t t = 0; t < seq; ++t)
        callEnds.push_back(t < prefill ? prefill
                                       : prefill + std::min(((t - prefill) / chunk + 1) * chunk,
                                                            steps));
      refIn.ropeCallEnds = callEnds.data();
    }
    attnrt::Reference ref = attnrt::referenceWithBound(
        p, wptrs, x.data(), batch, seq, refIn,
        [&](double f) { progress(f); }, bopt);
    progress.done();
    if (int64_t(ref.y.size()) != n ||
        (wantProbs && int64_t(ref.probs.size()) != probsFloats)) {
      error("the interpreter cannot run this block");
      return kExitFailed;
    }
    attnrt::CompareResult c = attnrt::compare(
        y.data(), ref.y.data(), o.noBound ? nullptr : ref.bound.data(), n,
        o.atol, o.rtol);
    const char *model = o.noBound ? nullptr
                        : o.rigorous ? "rigorous"
                                     : "probabilistic";
    JsonValue checkJson, probsJson;
    if (!report("interpreter (double)", c, y.data(), ref.y.data(), n, o.atol,
                o.rtol, model, checkJson))
      status = kExitFailed;
    if (wantProbs) {
      attnrt::CompareResult cp = attnrt::compare(
          probs.data(), ref.probs.data(),
          o.noBound ? nullptr : ref.probsBound.data(), probsFloats, o.atol,
          o.rtol);
      if (!report("interpreter (double)", cp, probs.data(), ref.probs.data(),
                  probsFloats, o.atol, o.rtol, model, probsJson, "probs "))
        status = kExitFailed;
    }
    if (gJson) {
      checkJson.set("probs", probsJson);
      run.set("check", checkJson);
    }
  }
  if (!expected.empty()) {
    std::vector<double> ref(expected.begin(), expected.end());
    attnrt::CompareResult c =
        attnrt::compare(y.data(), ref.data(), nullptr, n, o.atol, o.rtol);
    std::string against = "expected (" + o.expectedPath + ")";
    JsonValue expJson;
    if (!report(against.c_str(), c, y.data(), ref.data(), n, o.atol, o.rtol,
                nullptr, expJson))
      status = kExitFailed;
    if (gJson) {
      expJson.set("path", o.expectedPath);
      run.set("expected", expJson);
    }
  }
  return -1;
}

JsonValue Run::benchJson(const char *mode, const std::vector<double> &ms) const {
  JsonValue b = JsonValue::object();
  b.set("mode", mode);
  b.set("calls", (long long)o.bench);
  b.set("min_ms", ms.front());
  b.set("median_ms", ms[ms.size() / 2]);
  b.set("timer", o.cuda ? "cuda_events" : "steady_clock");
  b.set("pack_ms", packMs);
  b.set("packed_bytes", (long long)info().packed_bytes);
  return b;
}

/// --bench N: N timed calls of the decode step, or of the forward (on the
/// device, or on the host).
int Run::bench() {
  if (o.bench <= 0)
    return -1;
  if (steps > 0)
    return benchDecode();
  return o.cuda ? benchDeviceForward() : benchForward();
}

/// The last decode step again (same position: it rewrites the same cache
/// row with the same values). It reads every packed weight and the cache's
/// rows [0, T) of K and V once. --device cuda: the token and positions are
/// uploaded once, then one warm-up call and each call between two CUDA
/// events on the default stream.
int Run::benchDecode() {
  const attnc_kernel_info &ki = info();
  std::vector<double> ms;
  stageStep(seq - 1);
  if (o.cuda && !uploadStep()) {
    error(msg + " in --bench");
    return kExitFailed;
  }
  attnrt::cuda::Event start, stop;
  for (int64_t i = o.cuda ? -1 : 0; i < o.bench; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (o.cuda && !start.record(nullptr, msg)) {
      error(msg + " in --bench");
      return kExitFailed;
    }
    int rc = launchStep();
    auto t1 = std::chrono::steady_clock::now();
    if (rc != ATTNC_OK) {
      error(std::string(ki.name) + "_decode returned " + std::to_string(rc) +
            " (" + statusText(rc) + ") in --bench" + onDevice);
      return kExitFailed;
    }
    double t = std::chrono::duration<double, std::milli>(t1 - t0).count();
    if (o.cuda) {
      float dt = 0;
      if (!stop.record(nullptr, msg) || !stop.synchronize(msg) ||
          !dev.synchronize(msg) || !stop.elapsedSince(start, dt, msg)) {
        error(std::string(ki.name) + "_decode in --bench: " + msg);
        return kExitFailed;
      }
      t = double(dt);
    }
    if (i >= 0)
      ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  // A sliding window reads only the last `window` rows of the cache.
  const int64_t rowsRead =
      attnc_mask_sliding(ki.mask) ? std::min(ki.window, seq) : seq;
  double bytes = double(ki.packed_bytes) +
                 double(attnrt::dtypeBytes(ki.dtype)) * 2.0 * double(batch * ki.kv_heads * rowsRead * ki.head_dim);
  const std::string where =
      o.cuda ? "device " + dev.name() + " (sm_" + std::to_string(dev.sm()) +
                   ")"
             : std::to_string(threads) + " thread" +
                   (threads == 1 ? "" : "s");
  if (gJson) {
    JsonValue b = benchJson("decode_step", ms);
    b.set("position", (long long)(seq - 1));
    b.set("gflops", nullptr);
    b.set("bytes_read", bytes);
    b.set("gb_per_s", bytes / (ms.front() * 1e6));
    run.set("bench", b);
  } else {
    std::printf("bench: decode step at position %lld (T_past %lld), batch %lld, "
                "%lld calls, %s, min %.3f ms, median %.3f ms per call; "
                "reads %.2f MB (packed weights + K/V cache), %.2f GB/s at the min\n",
                (long long)(seq - 1), (long long)(seq - 1), (long long)batch,
                (long long)o.bench, where.c_str(), ms.front(),
                ms[ms.size() / 2], bytes / 1e6, bytes / (ms.front() * 1e6));
  }
  return -1;
}

/// One warm-up call (module load, first-launch costs), then each call
/// between two CUDA events on the default stream.
int Run::benchDeviceForward() {
  const attnc_kernel_info &ki = info();
  attnrt::cuda::Event start, stop;
  std::vector<double> ms;
  for (int64_t i = -1; i < o.bench; ++i) {
    if (!start.record(nullptr, msg)) {
      error(msg + " in --bench");
      return kExitFailed;
    }
    int rc = deviceForward();
    if (rc != ATTNC_OK) {
      error(std::string(ki.name) + "_forward returned " +
            std::to_string(rc) + " (" + statusText(rc) + ") in --bench");
      return kExitFailed;
    }
    float t = 0;
    if (!stop.record(nullptr, msg) || !stop.synchronize(msg) ||
        !dev.synchronize(msg) || !stop.elapsedSince(start, t, msg)) {
      error(std::string(ki.name) + "_forward in --bench: " + msg);
      return kExitFailed;
    }
    if (i >= 0)
      ms.push_back(double(t));
  }
  reportForwardBench(ms);
  return -1;
}

/// Host forward calls; a bf16/f16 kernel's inputs are converted once,
/// outside the timed calls.
int Run::benchForward() {
  const attnc_kernel_info &ki = info();
  std::vector<double> ms;
  std::vector<unsigned char> xk, yk, pk, xkv;
  const void *xIn = x.data();
  void *yOut = y.data(), *probsOut = probsPtr;
  attnrt::VariantInputs bv = variants;
  if (narrowAct) {
    xk = toKernel(x);
    yk.assign(y.size() * 2, 0);
    pk.assign(probsPtr ? probs.size() * 2 : 0, 0);
    if (bv.xKv) {
      xkv = toKernel(xKv);
      bv.xKv = xkv.data();
    }
    xIn = xk.data();
    yOut = yk.data();
    probsOut = probsPtr ? pk.data() : nullptr;
  }
  for (int64_t i = 0; i < o.bench; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    int rc = k.forward(packed.data(), xIn, yOut, batch, seq, bv, probsOut, ws,
                       threads);
    auto t1 = std::chrono::steady_clock::now();
    if (rc != ATTNC_OK) {
      error(std::string(ki.name) + "_forward returned " +
            std::to_string(rc) + " (" + statusText(rc) + ") in --bench");
      return kExitFailed;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  reportForwardBench(ms);
  return -1;
}

/// The forward timings (sorted here): min, median and useful GFLOP/s at
/// the min, as text or the run object's bench member.
void Run::reportForwardBench(std::vector<double> &ms) {
  const attnc_kernel_info &ki = info();
  std::sort(ms.begin(), ms.end());
  double gflops =
      usefulFlops(ki, batch, seq, kvSeq, variants) / (ms.front() * 1e6);
  if (gJson) {
    JsonValue b = benchJson("forward", ms);
    b.set("position", nullptr);
    b.set("gflops", gflops);
    b.set("bytes_read", nullptr);
    b.set("gb_per_s", nullptr);
    run.set("bench", b);
    return;
  }
  const std::string where =
      o.cuda ? "device " + dev.name() + " (sm_" + std::to_string(dev.sm()) + ")"
             : std::to_string(shownThreads) + " thread" +
                   (shownThreads == 1 ? "" : "s") +
                   (threads == 0 ? " (--threads 0: all online CPUs)" : "");
  std::printf("bench: %lld calls, %s, min %.3f ms, median %.3f ms per call, "
              "%.2f GFLOP/s (useful, at the min)\n",
              (long long)o.bench, where.c_str(), ms.front(), ms[ms.size() / 2],
              gflops);
  std::printf("pack: %.3f ms (%lld bytes%s)\n", packMs,
              (long long)ki.packed_bytes, o.cuda ? ", on the host" : "");
}

} // namespace

static int runMain(int argc, char **argv) {
  Options o;
  int rc = parseArgs(argc, argv, o);
  if (rc >= 0)
    return rc;
  Run r(o);
  return r.execute();
}

int main(int argc, char **argv) {
  // A reader that went away (`| head -1`) is a write error on stdout,
  // reported in the tool's own form and exit code (docs/exit-codes.md),
  // not a death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  // --json is known before anything can fail, so every failure is a JSON
  // error object on stdout (the message is on stderr too).
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0)
      gJson = true;
  int rc = runMain(argc, argv);
  if (gJson && !gJsonPrinted && rc != kExitOk) {
    JsonValue j = jsonHeader("error");
    j.set("error", gLastError.empty() ? std::string("failed (see stderr)") : gLastError);
    j.set("exit_code", rc);
    printJson(j);
  }
  // What went to stdout (the summary, --info, the --json object) must have
  // arrived: a full disk or a closed stdout is an output error, not exit 0
  // with the result lost.
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "attnc-run: error: cannot write standard output: %s\n",
                 errno ? std::strerror(errno) : "write error");
    if (rc == kExitOk)
      rc = kExitInput;
  }
  return rc;
}
