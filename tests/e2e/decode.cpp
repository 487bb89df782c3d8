//===- decode.cpp - prefill + decode steps == one forward -----------------===//
//
//   attnc-decode-test LIB.so [--batch B] [--steps K] [--max-prompt N]
//                    [--threads P] [--seed S]
//
// For a kernel with the decode entry (spec: decode: true): sequence b of the
// batch has its own prompt length n_b (drawn from 0..N, with 0, 1 and N
// among them when the batch allows). Each prompt is prefilled by its own
// forward call (batch 1) into that sequence's slice of a [B, kv_heads, L,
// head_dim] cache (contiguous per sequence), then K batched decode steps
// run every sequence at its own position n_b + s. Every decoded row must
// equal row n_b + s of one forward over the sequence's n_b + K tokens to
// 1e-5 (|a - b| <= 1e-5 * max(1, |b|)), and the prefill rows must equal
// its first n_b rows the same way. It also checks the decode entry's
// argument checks (positions out of range, a cache shorter than the
// prompt, one cache without the other). Exit 0 and a PASS line, 1 with
// the first difference, 2 for usage and load errors.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Checked.h"
#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

bool parseInt(const char *s, int64_t &out, int64_t min) {
  char *end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (!end || *end || end == s || v < min || v > (int64_t(1) << 20))
    return false;
  out = v;
  return true;
}

/// Largest |a - b| / max(1, |b|) over n elements (inf for non-finite a).
double relErr(const float *a, const float *b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]))
      return INFINITY;
    worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])) /
                                std::max(1.0, std::fabs(double(b[i]))));
  }
  return worst;
}

} // namespace

int main(int argc, char **argv) {
  std::string lib;
  int64_t batch = 3, steps = 4, maxPrompt = 20, threads = 1, seed = 7;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    int64_t *dst = a == "--batch"        ? &batch
                   : a == "--steps"      ? &steps
                   : a == "--max-prompt" ? &maxPrompt
                   : a == "--threads"    ? &threads
                   : a == "--seed"       ? &seed
                                         : nullptr;
    if (dst) {
      int64_t min = dst == &maxPrompt || dst == &threads || dst == &seed ? 0 : 1;
      if (i + 1 >= argc || !parseInt(argv[++i], *dst, min)) {
        std::fprintf(stderr, "decode: error: %s needs an integer\n", a.c_str());
        return 2;
      }
    } else if (lib.empty() && !a.empty() && a[0] != '-') {
      lib = a;
    } else {
      std::fprintf(stderr, "decode: error: unexpected argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (lib.empty()) {
    std::fprintf(stderr, "usage: attnc-decode-test LIB.so [--batch B] [--steps K] "
                         "[--max-prompt N] [--threads P] [--seed S]\n");
    return 2;
  }
  attnrt::Kernel k;
  std::string msg;
  attnrt::LoadError err;
  if (!k.load(lib, msg, err)) {
    std::fprintf(stderr, "decode: error: %s (%s)\n", msg.c_str(), attnrt::toString(err));
    return 2;
  }
  const attnc_kernel_info &ki = k.info();
  if (!k.hasDecode()) {
    std::fprintf(stderr, "decode: error: %s has no decode entry\n", ki.name);
    return 2;
  }
  const int64_t d = ki.d_model, od = ki.out_dim;
  const int64_t cacheLen = maxPrompt + steps; // every sequence fits
  const int64_t perSeqCache = ki.kv_heads * cacheLen * ki.head_dim;
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  auto weights =
      attnrt::randomWeights(attnrt::storageTensors(attnrt::paramsFromInfo(ki)), rng);
  std::vector<const float *> wptrs;
  for (auto &w : weights)
    wptrs.push_back(w.data());
  std::vector<unsigned char> packed;
  if (int rc = k.packFloat(wptrs, packed); rc != ATTNC_OK) {
    std::fprintf(stderr, "decode: error: %s_pack returned %d\n", ki.name, rc);
    return 1;
  }

  // Prompt lengths: 0, 1 and the longest first, then random ones.
  std::vector<int64_t> prompt(static_cast<size_t>(batch));
  std::uniform_int_distribution<int64_t> len(0, maxPrompt);
  for (int64_t b = 0; b < batch; ++b)
    prompt[size_t(b)] = b == 0 ? std::min<int64_t>(1, maxPrompt)
                        : b == 1 ? maxPrompt
                        : b == 2 ? 0
                                 : len(rng);
  // Each sequence's tokens: its prompt, then the K decoded tokens.
  std::vector<std::vector<float>> tokens(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    tokens[size_t(b)] = attnrt::randomNormal((prompt[size_t(b)] + steps) * d, rng);

  std::vector<float> kCache(size_t(batch * perSeqCache), 0.0f),
      vCache(size_t(batch * perSeqCache), 0.0f);
  std::vector<unsigned char> ws;
  std::vector<std::vector<float>> got(static_cast<size_t>(batch));
  // Prefill, one sequence at a time into its slice of the caches.
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = prompt[size_t(b)];
    got[size_t(b)].assign(size_t((n + steps) * od), NAN);
    if (n == 0)
      continue;
    attnrt::VariantInputs v;
    v.kCache = kCache.data() + b * perSeqCache;
    v.vCache = vCache.data() + b * perSeqCache;
    v.cacheLen = cacheLen;
    int rc = k.forward(packed.data(), tokens[size_t(b)].data(), got[size_t(b)].data(),
                       1, n, v, nullptr, ws, int(threads));
    if (rc != ATTNC_OK) {
      std::printf("decode: FAIL: prefill of sequence %lld (%lld tokens) returned %d\n",
                  (long long)b, (long long)n, rc);
      return 1;
    }
  }
  // K batched decode steps, each sequence at its own position.
  std::vector<float> x(size_t(batch * d)), y(size_t(batch * od));
  std::vector<int32_t> pos(static_cast<size_t>(batch));
  for (int64_t s = 0; s < steps; ++s) {
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t p = prompt[size_t(b)] + s;
      pos[size_t(b)] = int32_t(p);
      std::copy_n(tokens[size_t(b)].data() + p * d, d, x.data() + b * d);
    }
    int rc = k.decode(packed.data(), x.data(), y.data(), batch, 1, pos.data(),
                      kCache.data(), vCache.data(), cacheLen, ws, int(threads));
    if (rc != ATTNC_OK) {
      std::printf("decode: FAIL: decode step %lld returned %d\n", (long long)s, rc);
      return 1;
    }
    for (int64_t b = 0; b < batch; ++b)
      std::copy_n(y.data() + b * od, od,
                  got[size_t(b)].data() + (prompt[size_t(b)] + s) * od);
  }
  // One forward per sequence over all its tokens.
  double worstDecode = 0, worstPrefill = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = prompt[size_t(b)], t = n + steps;
    std::vector<float> ref(size_t(t * od));
    int rc = k.forward(packed.data(), tokens[size_t(b)].data(), ref.data(), 1, t, ws,
                       int(threads));
    if (rc != ATTNC_OK) {
      std::printf("decode: FAIL: reference forward of sequence %lld returned %d\n",
                  (long long)b, rc);
      return 1;
    }
    double ep = relErr(got[size_t(b)].data(), ref.data(), n * od);
    double ed = relErr(got[size_t(b)].data() + n * od, ref.data() + n * od, steps * od);
    worstPrefill = std::max(worstPrefill, ep);
    worstDecode = std::max(worstDecode, ed);
    if (!(ep <= 1e-5) || !(ed <= 1e-5)) {
      std::printf("decode: FAIL: sequence %lld (prompt %lld, %lld steps): prefill "
                  "rows differ by %.3e, decoded rows by %.3e from one forward over "
                  "%lld tokens (limit 1e-5)\n",
                  (long long)b, (long long)n, (long long)steps, ep, ed, (long long)t);
      return 1;
    }
  }

  // The entry's checks: a position outside [0, cache_len), a cache
  // shorter than the prompt, one cache without the other, one buffer as
  // both caches, no positions.
  pos[0] = int32_t(cacheLen);
  int bad1 = k.decode(packed.data(), x.data(), y.data(), batch, 1, pos.data(),
                      kCache.data(), vCache.data(), cacheLen, ws, int(threads));
  pos[0] = -1;
  int bad2 = k.decode(packed.data(), x.data(), y.data(), batch, 1, pos.data(),
                      kCache.data(), vCache.data(), cacheLen, ws, int(threads));
  attnrt::VariantInputs shortCache;
  shortCache.kCache = kCache.data();
  shortCache.vCache = vCache.data();
  shortCache.cacheLen = 1;
  std::vector<float> y2(size_t(2 * od));
  int bad3 = k.forward(packed.data(), tokens[1].data(), y2.data(), 1, 2, shortCache,
                       nullptr, ws, int(threads));
  attnrt::VariantInputs oneCache;
  oneCache.kCache = kCache.data();
  oneCache.cacheLen = cacheLen;
  int bad4 = k.forward(packed.data(), tokens[1].data(), y2.data(), 1, 2, oneCache,
                       nullptr, ws, int(threads));
  attnrt::VariantInputs sameCache;
  sameCache.kCache = sameCache.vCache = kCache.data();
  sameCache.cacheLen = cacheLen;
  int bad5 = k.forward(packed.data(), tokens[1].data(), y2.data(), 1, 2, sameCache,
                       nullptr, ws, int(threads));
  int bad6 = k.decode(packed.data(), x.data(), y.data(), batch, 1, nullptr, kCache.data(),
                      vCache.data(), cacheLen, ws, int(threads));
  // The runtime refuses these with the codes the library gives them.
  const int want[] = {ATTNC_ERR_ARGS, ATTNC_ERR_ARGS, ATTNC_ERR_BAD_SHAPE,
                      ATTNC_ERR_NULL_ARG, ATTNC_ERR_ARGS, ATTNC_ERR_NULL_ARG};
  const int got6[] = {bad1, bad2, bad3, bad4, bad5, bad6};
  for (int i = 0; i < 6; ++i)
    if (got6[i] != want[i]) {
      std::printf("decode: FAIL: bad argument case %d returned %d, expected %d\n",
                  i + 1, got6[i], want[i]);
      return 1;
    }

  std::printf("decode: %s, batch %lld, prompts", ki.name, (long long)batch);
  for (int64_t n : prompt)
    std::printf(" %lld", (long long)n);
  std::printf(", %lld steps, %lld thread%s: prefill + decode == one forward "
              "(max rel. diff: prefill %.2e, decode %.2e, limit 1e-5): PASS\n",
              (long long)steps, (long long)threads, threads == 1 ? "" : "s",
              worstPrefill, worstDecode);
  return 0;
}
