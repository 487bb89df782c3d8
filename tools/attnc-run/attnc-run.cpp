//===- attnc-run.cpp - load, run, check and time a generated kernel -------===//
//
//   attnc-run LIB.so [--seq-len T] [--batch B] [--x x.npy] [--weights DIR]
//             [--out y.npy] [--check] [--bench N] [--seed S] [--info]
//
// Links only libattnrt (no MLIR/LLVM). Exit codes: 0 ok; 1 check failed or
// kernel error; 2 usage or input error; 10 + attnrt::LoadError when the
// library is refused.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Runtime.h"
#include "attnc/runtime/weights.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

static const char *kUsage =
    "attnc-run: load an attnc kernel library, run it, check it, time it\n\n"
    "usage: attnc-run LIB.so [options]\n\n"
    "  --seq-len T        sequence length (default 128)\n"
    "  --batch B          batch size (default 1)\n"
    "  --x FILE.npy       input x [B, T, d_model] float32 (default: random N(0,1))\n"
    "  --weights PATH     the storage tensors (names: see --info) from a directory\n"
    "                     of NAME.npy, a .npz or a .safetensors file (f16/bf16/f64\n"
    "                     converted); default: random, scaled like a trained layer\n"
    "  --weights-prefix P only names starting with P, P removed: one layer of a\n"
    "                     checkpoint ('h.3.attn.', 'model.layers.3.self_attn.')\n"
    "  --out FILE.npy     write y [B, T, out_dim]\n"
    "  --check            compare with the double-precision interpreter; exit 1\n"
    "                     on NaN/inf or when |y - ref| > atol + rtol*|ref| somewhere\n"
    "                     and the max error is also above twice that of the same\n"
    "                     formula computed naively in float32\n"
    "  --atol A, --rtol R tolerance of --check (default 1e-5 and 1e-4)\n"
    "  --bench N          time N calls, print min/median ms per call\n"
    "  --threads P        threads of the kernel's built-in pool (default 1; 0: all CPUs)\n"
    "  --seed S           seed for random weights and inputs (default 1)\n"
    "  --x-scale S        multiply the random input by S (logits grow with S^2:\n"
    "                     'peaky' softmax rows that need max-subtraction)\n"
    "  --info             print the library's metadata and exit\n"
    "  --help, --version  this text; the runtime's ABI version\n\n"
    "exit codes: 0 ok, 1 check failed or kernel error, 2 usage/input error,\n"
    "            10+k library refused (k: 1 open, 2 not attnc, 3 ABI too new,\n"
    "            4 ABI mismatch, 5 bad metadata, 6 missing entry point)\n";

/// Meaning of a NAME_pack / NAME_forward return code.
static const char *statusText(int rc) {
  switch (rc) {
  case ATTNC_OK: return "ok";
  case ATTNC_ERR_NULL_ARG: return "a required pointer is NULL";
  case ATTNC_ERR_BAD_SHAPE: return "batch or seq_len out of range (< 1 or > max_seq_len)";
  case ATTNC_ERR_WORKSPACE: return "workspace too small";
  case ATTNC_ERR_BUFFER_SIZE: return "a buffer's size does not match the shapes";
  case ATTNC_ERR_ISA: return "this CPU lacks the instruction sets the library has code for";
  case ATTNC_ERR_THREADS: return "the parallel-for hook or the thread pool failed";
  case ATTNC_ERR_ARGS: return "bad argument record (struct_size, reserved or unused fields)";
  default: return "unknown status";
  }
}

static int usageError(const std::string &msg) {
  std::fprintf(stderr, "attnc-run: error: %s (see --help)\n", msg.c_str());
  return 2;
}

static bool parseInt(const char *s, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (errno || !end || *end || end == s)
    return false;
  out = v;
  return true;
}

static bool parseDouble(const char *s, double &out) {
  char *end = nullptr;
  out = std::strtod(s, &end);
  return end && !*end && end != s;
}

int main(int argc, char **argv) {
  std::string lib, xPath, wDir, wPrefix, outPath;
  int64_t seq = 128, batch = 1, bench = 0, seed = 1, abiOverride = -1, threads = 1;
  double atol = 1e-5, rtol = 1e-4, xScale = 1.0;
  bool check = false, info = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char *what) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "attnc-run: error: %s needs a value\n", what);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("attnc-run (libattnrt), kernel ABI version %u\n", ATTNC_ABI_VERSION);
      return 0;
    } else if (a == "--seq-len") {
      if (!parseInt(next("--seq-len"), seq) || seq < 1)
        return usageError("--seq-len: expected a positive integer");
    } else if (a == "--batch") {
      if (!parseInt(next("--batch"), batch) || batch < 1)
        return usageError("--batch: expected a positive integer");
    } else if (a == "--bench") {
      if (!parseInt(next("--bench"), bench) || bench < 1)
        return usageError("--bench: expected a positive integer");
    } else if (a == "--threads") {
      if (!parseInt(next("--threads"), threads) || threads < 0 || threads > 1024)
        return usageError("--threads: expected an integer in [0, 1024] (0: all CPUs)");
    } else if (a == "--seed") {
      if (!parseInt(next("--seed"), seed))
        return usageError("--seed: expected an integer");
    } else if (a == "--testing-abi-version") { // hidden: ABI rejection tests
      if (!parseInt(next(a.c_str()), abiOverride) || abiOverride < 0)
        return usageError("--testing-abi-version: expected an integer");
    } else if (a == "--atol") {
      if (!parseDouble(next("--atol"), atol) || atol < 0)
        return usageError("--atol: expected a non-negative number");
    } else if (a == "--rtol") {
      if (!parseDouble(next("--rtol"), rtol) || rtol < 0)
        return usageError("--rtol: expected a non-negative number");
    } else if (a == "--x-scale") {
      if (!parseDouble(next("--x-scale"), xScale))
        return usageError("--x-scale: expected a number");
    } else if (a == "--x") {
      xPath = next("--x");
    } else if (a == "--weights") {
      wDir = next("--weights");
    } else if (a == "--weights-prefix") {
      wPrefix = next("--weights-prefix");
    } else if (a == "--out") {
      outPath = next("--out");
    } else if (a == "--check") {
      check = true;
    } else if (a == "--info") {
      info = true;
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option '" + a + "'");
    } else if (lib.empty()) {
      lib = a;
    } else {
      return usageError("more than one library given ('" + lib + "', '" + a + "')");
    }
  }
  if (lib.empty())
    return usageError("no kernel library given");

  attnrt::Kernel k;
  std::string msg;
  attnrt::LoadError err;
  uint32_t abi = abiOverride >= 0 ? static_cast<uint32_t>(abiOverride) : ATTNC_ABI_VERSION;
  if (!k.load(lib, msg, err, abi)) {
    // The message starts with the library's path.
    std::fprintf(stderr, "attnc-run: error: %s (%s)\n", msg.c_str(), attnrt::toString(err));
    return 10 + static_cast<int>(err);
  }
  const attnc_kernel_info &ki = k.info();
  attnrt::BlockParams p = attnrt::paramsFromInfo(ki);
  std::vector<attnrt::TensorShape> tensors = attnrt::storageTensors(p);
  int64_t outDim = ki.out_proj ? ki.d_model : ki.heads * ki.head_dim;
  if (info) {
    std::printf("name: %s\nabi_version: %u\nspec_hash: 0x%016llx\nd_model: %lld\n"
                "heads: %lld\nkv_heads: %lld\nhead_dim: %lld\nmask: %u\nscale: %.9g\n"
                "bias: %u\nout_proj: %u\nweight_layout: %u\nisa: %u\ntarget: %s (%s)\n"
                "compiler: %s\npacked_floats: %lld\nmax_seq_len: %lld\nweights:\n",
                ki.name, ki.abi_version, (unsigned long long)ki.spec_hash,
                (long long)ki.d_model, (long long)ki.heads, (long long)ki.kv_heads,
                (long long)ki.head_dim, ki.mask, ki.scale, ki.bias, ki.out_proj,
                ki.weight_layout, ki.isa, ki.target_triple, ki.target_cpu,
                ki.compiler_version, (long long)ki.packed_floats,
                (long long)ki.max_seq_len);
    for (uint32_t i = 0; i < ki.num_weights; ++i) {
      const attnc_tensor_info &t = ki.weights[i];
      if (t.rank == 2)
        std::printf("  %s [%lld, %lld]\n", t.name, (long long)t.dims[0],
                    (long long)t.dims[1]);
      else
        std::printf("  %s [%lld]\n", t.name, (long long)t.dims[0]);
    }
    return 0;
  }

  // Inputs.
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::vector<std::vector<float>> weights;
  if (wDir.empty()) {
    weights = attnrt::randomWeights(tensors, rng);
  } else {
    // .npy directory, .npz or .safetensors (weights.h): names mapped onto
    // the kernel's, shapes checked, other float types converted.
    attnrt::Weights loaded = attnrt::Weights::open(wDir, wPrefix, ki, msg);
    if (!loaded) {
      std::fprintf(stderr, "attnc-run: error: %s\n", msg.c_str());
      return 2;
    }
    for (const std::string &note : loaded.notes())
      std::fprintf(stderr, "attnc-run: note: %s\n", note.c_str());
    for (uint32_t i = 0; i < loaded.count(); ++i)
      weights.emplace_back(loaded.data()[i], loaded.data()[i] + loaded.floats()[i]);
  }
  std::vector<float> x;
  if (!xPath.empty()) {
    attnrt::NpyArray arr;
    if (!attnrt::readNpy(xPath, arr, msg)) {
      std::fprintf(stderr, "attnc-run: error: %s\n", msg.c_str());
      return 2;
    }
    if (arr.shape.size() != 3 || arr.shape[2] != ki.d_model) {
      std::fprintf(stderr, "attnc-run: error: %s: expected shape (batch, seq_len, %lld)\n",
                   xPath.c_str(), (long long)ki.d_model);
      return 2;
    }
    batch = arr.shape[0];
    seq = arr.shape[1];
    x = std::move(arr.data);
  } else {
    x = attnrt::randomNormal(batch * seq * ki.d_model, rng);
    for (float &f : x)
      f *= static_cast<float>(xScale);
  }

  if (ki.max_seq_len > 0 && seq > ki.max_seq_len) {
    std::fprintf(stderr, "attnc-run: error: seq_len %lld exceeds the kernel's max_seq_len %lld\n",
                 (long long)seq, (long long)ki.max_seq_len);
    return 2;
  }
  std::vector<const float *> wptrs;
  for (auto &w : weights)
    wptrs.push_back(w.data());
  std::vector<float> packed;
  int rc = k.pack(wptrs, packed);
  if (rc != ATTNC_OK) {
    std::fprintf(stderr, "attnc-run: error: %s_pack returned %d (%s)\n", ki.name, rc,
                 statusText(rc));
    return 1;
  }
  std::vector<float> y(batch * seq * outDim);
  std::vector<unsigned char> ws;
  rc = k.forward(packed.data(), x.data(), y.data(), batch, seq, ws, (int)threads);
  if (rc != ATTNC_OK) {
    std::fprintf(stderr, "attnc-run: error: %s_forward returned %d (%s)\n", ki.name, rc,
                 statusText(rc));
    return 1;
  }
  std::printf("%s: batch %lld, seq_len %lld, d_model %lld, heads %lld, workspace %lld bytes\n",
              ki.name, (long long)batch, (long long)seq, (long long)ki.d_model,
              (long long)ki.heads, (long long)ws.size());
  if (!outPath.empty() &&
      !attnrt::writeNpy(outPath, {batch, seq, outDim}, y.data(), msg)) {
    std::fprintf(stderr, "attnc-run: error: %s\n", msg.c_str());
    return 2;
  }
  int status = 0;
  if (check) {
    // Reference in double; yardstick: the same formula computed naively in
    // float32. PASS when nothing is NaN/inf and every element is within
    // atol + rtol*|ref|, or when the kernel is at most twice as far from the
    // reference as the naive float32 computation (FlashAttention's rule).
    std::vector<double> ref = attnrt::interpret(p, wptrs, x.data(), batch, seq);
    std::vector<double> n64 = attnrt::interpretFloat32(p, wptrs, x.data(), batch, seq);
    std::vector<float> naive32(n64.begin(), n64.end());
    int64_t n = static_cast<int64_t>(y.size());
    attnrt::CompareResult c = attnrt::compare(y.data(), ref.data(), n, atol, rtol);
    attnrt::CompareResult c32 = attnrt::compare(naive32.data(), ref.data(), n, atol, rtol);
    bool vsNaive = c.nonFinite == 0 && c.maxAbs <= 2 * c32.maxAbs + 1e-6;
    bool pass = c.nonFinite == 0 && (c.ok || vsNaive);
    std::printf("check vs interpreter (double): max_abs_err %.3e, max_rel_err %.3e, "
                "mean_abs_err %.3e, non-finite %lld; naive float32 max_abs_err %.3e "
                "(ratio %.2f); gate: |err| <= %.1e + %.1e*|ref| %s, or <= 2x naive32 %s: %s\n",
                c.maxAbs, c.maxRel, c.meanAbs, (long long)c.nonFinite, c32.maxAbs,
                c32.maxAbs > 0 ? c.maxAbs / c32.maxAbs : 0.0, atol, rtol,
                c.ok ? "met" : "not met", vsNaive ? "met" : "not met",
                pass ? "PASS" : "FAIL");
    if (!pass)
      status = 1;
  }
  if (bench > 0) {
    std::vector<double> ms;
    for (int64_t i = 0; i < bench; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      k.forward(packed.data(), x.data(), y.data(), batch, seq, ws, (int)threads);
      auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("bench: %lld calls, min %.3f ms, median %.3f ms per call\n",
                (long long)bench, ms.front(), ms[ms.size() / 2]);
  }
  return status;
}
