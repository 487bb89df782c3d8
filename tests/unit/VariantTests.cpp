//===- VariantTests.cpp - The attention variants in the reference --*- C++ -*-===//
//
// The contract of docs/abi.md's attention variants, checked on the
// reference interpreter by hand-computed cases (zero scores make every
// visible key weigh the same, so the output is the mean of the visible V
// rows and a weight is 1/visible or 0), by equivalences (padding lengths
// = running the truncated sequences alone; cross-attention on x_kv = x is
// self-attention), and on the runtime's Kernel::forward with the
// hand-written fake kernel honouring the same features. Also the SVG
// heatmap's structure.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Heatmap.h"
#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

using namespace attnrt;
using Catch::Matchers::Contains;

namespace {

/// One sequence, one head, d = 1, zero q and k: row i of the output is the
/// mean of v over the keys it sees, and probs row i is 1/n on them.
struct Mean {
  std::vector<double> o, probs;
};
Mean meanOfVisible(int64_t tq, int64_t tkv, uint32_t mask, bool topLeft,
                   int64_t window, int64_t qv, int64_t kv) {
  std::vector<double> q(size_t(tq), 0.0), k(size_t(tkv), 0.0), v;
  for (int64_t j = 0; j < tkv; ++j)
    v.push_back(double(1 << j)); // the mean identifies the set of keys
  Mean m;
  m.o.assign(size_t(tq), -1.0);
  m.probs.assign(size_t(tq * tkv), -1.0);
  naive::sdpa(q.data(), k.data(), v.data(), m.o.data(), 1, 1, 1, tq, tkv, 1,
              1.0, mask, topLeft, window, &qv, &kv, m.probs.data());
  return m;
}

/// The visible keys of each query row as "x" / "." (from the weights).
std::vector<std::string> table(const Mean &m, int64_t tq, int64_t tkv) {
  std::vector<std::string> rows;
  for (int64_t i = 0; i < tq; ++i) {
    std::string r;
    for (int64_t j = 0; j < tkv; ++j)
      r += m.probs[size_t(i * tkv + j)] > 0 ? 'x' : '.';
    rows.push_back(r);
  }
  return rows;
}

/// Each row's output is the mean of v over its "x" keys (zero when none)
/// and its weights are 1/n there, 0 elsewhere.
void checkMeans(const Mean &m, int64_t tq, int64_t tkv) {
  for (int64_t i = 0; i < tq; ++i) {
    double sum = 0, n = 0;
    for (int64_t j = 0; j < tkv; ++j)
      if (m.probs[size_t(i * tkv + j)] > 0) {
        sum += double(1 << j);
        ++n;
      }
    INFO("row " << i);
    CHECK(std::isfinite(m.o[size_t(i)]));
    CHECK(m.o[size_t(i)] == Approx(n ? sum / n : 0.0));
    for (int64_t j = 0; j < tkv; ++j) {
      double p = m.probs[size_t(i * tkv + j)];
      CHECK((p == 0 || p == Approx(1 / n)));
    }
  }
}

BlockParams block(uint32_t mask, bool topLeft = false, int64_t window = 0) {
  BlockParams p;
  p.dModel = 8;
  p.heads = 4;
  p.kvHeads = 2;
  p.headDim = 3;
  p.layout = ATTNC_LAYOUT_SEPARATE;
  p.mask = mask;
  p.topLeft = topLeft;
  p.window = window;
  return p;
}

struct Data {
  std::vector<std::vector<float>> w;
  std::vector<const float *> ptrs;
};
Data weightsFor(const BlockParams &p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Data d;
  d.w = randomWeights(storageTensors(p), rng);
  for (auto &t : d.w)
    d.ptrs.push_back(t.data());
  return d;
}

/// Rows [0, len) of sequence b of a [batch, seq, width] tensor.
std::vector<float> prefix(const std::vector<float> &x, int64_t b, int64_t seq,
                          int64_t len, int64_t width) {
  return std::vector<float>(x.begin() + b * seq * width,
                            x.begin() + (b * seq + len) * width);
}

} // namespace

TEST_CASE("variants: padding lengths with each mask (hand-checked)",
          "[interp][variants]") {
  const int64_t t = 5;
  // mask none / padding: rows below the length see the valid keys; rows
  // past it see nothing.
  for (uint32_t mask : {ATTNC_MASK_NONE, ATTNC_MASK_PADDING}) {
    Mean m = meanOfVisible(t, t, mask, false, 0, 3, 3);
    CHECK(table(m, t, t) ==
          std::vector<std::string>{"xxx..", "xxx..", "xxx..", ".....",
                                   "....."});
    checkMeans(m, t, t);
  }
  // causal (+padding): self-attention with every length the same aligns
  // top-left and bottom-right alike.
  for (uint32_t mask : {ATTNC_MASK_CAUSAL, ATTNC_MASK_CAUSAL_PADDING})
    for (bool topLeft : {false, true}) {
      Mean m = meanOfVisible(t, t, mask, topLeft, 0, 3, 3);
      CHECK(table(m, t, t) ==
            std::vector<std::string>{"x....", "xx...", "xxx..", ".....",
                                     "....."});
      checkMeans(m, t, t);
    }
  // sliding window 2 inside a length of 4.
  Mean m = meanOfVisible(t, t, ATTNC_MASK_SLIDING_WINDOW, false, 2, 4, 4);
  CHECK(table(m, t, t) == std::vector<std::string>{"x....", "xx...", ".xx..",
                                                   "..xx.", "....."});
  checkMeans(m, t, t);
}

TEST_CASE("variants: length 0 gives zero rows and weights, never NaN",
          "[interp][variants]") {
  for (uint32_t mask :
       {ATTNC_MASK_NONE, ATTNC_MASK_PADDING, ATTNC_MASK_CAUSAL,
        ATTNC_MASK_CAUSAL_PADDING, ATTNC_MASK_SLIDING_WINDOW}) {
    Mean m = meanOfVisible(4, 4, mask, false, 2, 0, 0);
    for (double o : m.o)
      CHECK(o == 0.0);
    for (double p : m.probs)
      CHECK(p == 0.0);
  }
  // The whole block: y rows of a length-0 sequence are zero, not the bias.
  BlockParams p = block(ATTNC_MASK_CAUSAL_PADDING);
  p.wantProbs = true;
  Data d = weightsFor(p, 5);
  std::mt19937_64 rng(6);
  std::vector<float> x = randomNormal(2 * 4 * 8, rng);
  int32_t lengths[2] = {0, 4};
  VariantInputs in;
  in.lengths = lengths;
  std::vector<double> probs;
  std::vector<double> y = interpret(p, d.ptrs, x.data(), 2, 4, in, &probs);
  REQUIRE(y.size() == 2 * 4 * 8);
  for (size_t i = 0; i < y.size(); ++i) {
    CHECK(std::isfinite(y[i]));
    if (i < 4 * 8)
      CHECK(y[i] == 0.0);
  }
  REQUIRE(probs.size() == 2 * 4 * 4 * 4);
  for (size_t i = 0; i < 4 * 4 * 4; ++i)
    CHECK(probs[i] == 0.0);
  Reference r = referenceWithBound(p, d.ptrs, x.data(), 2, 4, in);
  for (size_t i = 0; i < 4 * 8; ++i) {
    CHECK(r.y[i] == 0.0);
    CHECK(r.bound[i] == 0.0);
  }
}

TEST_CASE("variants: cross-attention visible keys, Tq = 2, Tkv = 4",
          "[interp][variants]") {
  // The README's table: bottom_right lines the last query up with the
  // last key, top_left the first with the first.
  Mean br = meanOfVisible(2, 4, ATTNC_MASK_CAUSAL, false, 0, 2, 4);
  CHECK(table(br, 2, 4) == std::vector<std::string>{"xxx.", "xxxx"});
  checkMeans(br, 2, 4);
  Mean tl = meanOfVisible(2, 4, ATTNC_MASK_CAUSAL, true, 0, 2, 4);
  CHECK(table(tl, 2, 4) == std::vector<std::string>{"x...", "xx.."});
  checkMeans(tl, 2, 4);
  // With kv_lengths 3 the alignment follows the valid keys (off = 3 - 2).
  Mean brShort =
      meanOfVisible(2, 4, ATTNC_MASK_CAUSAL_PADDING, false, 0, 2, 3);
  CHECK(table(brShort, 2, 4) == std::vector<std::string>{"xx..", "xxx."});
  checkMeans(brShort, 2, 4);
  Mean tlShort = meanOfVisible(2, 4, ATTNC_MASK_CAUSAL_PADDING, true, 0, 2, 3);
  CHECK(table(tlShort, 2, 4) == std::vector<std::string>{"x...", "xx.."});
  // And with one valid query: bottom_right gives it every valid key.
  Mean one = meanOfVisible(2, 4, ATTNC_MASK_CAUSAL_PADDING, false, 0, 1, 3);
  CHECK(table(one, 2, 4) == std::vector<std::string>{"xxx.", "...."});
  // Padding only (no causal part): every valid key.
  Mean pad = meanOfVisible(2, 4, ATTNC_MASK_PADDING, false, 0, 2, 3);
  CHECK(table(pad, 2, 4) == std::vector<std::string>{"xxx.", "xxx."});
  // Tq > Tkv, bottom_right: the first queries see nothing (zero rows).
  Mean tall = meanOfVisible(4, 2, ATTNC_MASK_CAUSAL, false, 0, 4, 2);
  CHECK(table(tall, 4, 2) ==
        std::vector<std::string>{"..", "..", "x.", "xx"});
  checkMeans(tall, 4, 2);
}

TEST_CASE("variants: sliding windows of 1 and longer than T",
          "[interp][variants]") {
  const int64_t t = 4;
  // Window 1: each query sees only its own position.
  Mean w1 = meanOfVisible(t, t, ATTNC_MASK_SLIDING_WINDOW, false, 1, t, t);
  CHECK(table(w1, t, t) ==
        std::vector<std::string>{"x...", ".x..", "..x.", "...x"});
  checkMeans(w1, t, t);
  // Window 1 in cross-attention, bottom_right: the diagonal moved by 2.
  Mean w1x = meanOfVisible(2, 4, ATTNC_MASK_SLIDING_WINDOW, false, 1, 2, 4);
  CHECK(table(w1x, 2, 4) == std::vector<std::string>{"..x.", "...x"});
  // A window longer than T is the causal mask.
  Mean big = meanOfVisible(t, t, ATTNC_MASK_SLIDING_WINDOW, false, 100, t, t);
  Mean causal = meanOfVisible(t, t, ATTNC_MASK_CAUSAL, false, 0, t, t);
  CHECK(table(big, t, t) == table(causal, t, t));
  CHECK(big.o == causal.o);
}

TEST_CASE("variants: probs rows sum to 1 on valid rows, 0 elsewhere",
          "[interp][variants]") {
  const int64_t b = 3, tq = 6, tkv = 9;
  for (uint32_t mask : {ATTNC_MASK_PADDING, ATTNC_MASK_CAUSAL_PADDING,
                        ATTNC_MASK_SLIDING_WINDOW, ATTNC_MASK_SLIDING_WINDOW_PADDING,
                        ATTNC_MASK_CHUNKED_PADDING})
    for (bool topLeft : {false, true}) {
      const bool sized = attnc_mask_sliding(mask) || attnc_mask_chunked(mask);
      BlockParams p = block(mask, topLeft, sized ? 3 : 0);
      p.cross = true;
      p.wantProbs = true;
      Data d = weightsFor(p, 11);
      std::mt19937_64 rng(12);
      std::vector<float> x = randomNormal(b * tq * 8, rng);
      std::vector<float> xkv = randomNormal(b * tkv * 8, rng);
      int32_t lengths[b] = {6, 3, 0}, kvLengths[b] = {9, 2, 5};
      VariantInputs in;
      in.lengths = lengths;
      in.xKv = xkv.data();
      in.kvSeqLen = tkv;
      in.kvLengths = kvLengths;
      std::vector<double> probs;
      std::vector<double> y = interpret(p, d.ptrs, x.data(), b, tq, in, &probs);
      REQUIRE(probs.size() == size_t(b * 4 * tq * tkv));
      for (int64_t s = 0; s < b; ++s) {
        const int64_t off = topLeft ? 0 : kvLengths[s] - lengths[s];
        for (int64_t h = 0; h < 4; ++h)
          for (int64_t i = 0; i < tq; ++i) {
            double sum = 0;
            bool anyKey = false;
            for (int64_t j = 0; j < tkv; ++j) {
              double w = probs[size_t(((s * 4 + h) * tq + i) * tkv + j)];
              bool visible = i < lengths[s] && j < kvLengths[s] &&
                             (mask == ATTNC_MASK_PADDING || j <= i + off) &&
                             (!attnc_mask_sliding(mask) || j > i + off - 3) &&
                             (!attnc_mask_chunked(mask) ||
                              (i + off >= 0 && j / 3 == (i + off) / 3));
              anyKey |= visible;
              INFO("mask " << mask << " topLeft " << topLeft << " b " << s
                           << " h " << h << " i " << i << " j " << j);
              CHECK(std::isfinite(w));
              if (!visible)
                CHECK(w == 0.0);
              else
                CHECK(w > 0.0);
              sum += w;
            }
            CHECK(sum == Approx(anyKey ? 1.0 : 0.0));
          }
      }
      // referenceWithBound: the same y and probs, bounds zero where the
      // weight is masked.
      Reference r = referenceWithBound(p, d.ptrs, x.data(), b, tq, in);
      CHECK(r.y == y);
      CHECK(r.probs == probs);
      REQUIRE(r.probsBound.size() == probs.size());
      for (size_t i = 0; i < probs.size(); ++i) {
        CHECK(r.probsBound[i] >= 0);
        if (probs[i] == 0)
          CHECK(r.probsBound[i] == 0);
      }
    }
}

TEST_CASE("variants: padding equals running each truncated sequence alone",
          "[interp][variants]") {
  // Self-attention: lengths L_b give, on rows < L_b, what the block gives
  // on the first L_b tokens alone (padding: like no mask; causal+padding:
  // like causal; a window or chunks of 2 with lengths: like the window or
  // chunks alone), and zero rows past L_b.
  const int64_t b = 3, t = 7;
  for (auto masks : {std::pair<uint32_t, uint32_t>{ATTNC_MASK_PADDING,
                                                   ATTNC_MASK_NONE},
                     {ATTNC_MASK_CAUSAL_PADDING, ATTNC_MASK_CAUSAL},
                     {ATTNC_MASK_SLIDING_WINDOW_PADDING, ATTNC_MASK_SLIDING_WINDOW},
                     {ATTNC_MASK_CHUNKED_PADDING, ATTNC_MASK_CHUNKED}})
    for (bool topLeft : {false, true}) {
      const int64_t window = attnc_mask_sliding(masks.first) || attnc_mask_chunked(masks.first)
                                 ? 2
                                 : 0;
      BlockParams p = block(masks.first, topLeft, window),
                  alone = block(masks.second, topLeft, window);
      Data d = weightsFor(p, 21);
      std::mt19937_64 rng(22);
      std::vector<float> x = randomNormal(b * t * 8, rng);
      int32_t lengths[b] = {7, 4, 1};
      VariantInputs in;
      in.lengths = lengths;
      std::vector<double> y = interpret(p, d.ptrs, x.data(), b, t, in);
      REQUIRE(y.size() == size_t(b * t * 8));
      for (int64_t s = 0; s < b; ++s) {
        std::vector<float> xs = prefix(x, s, t, lengths[s], 8);
        std::vector<double> ys = interpret(alone, d.ptrs, xs.data(), 1, lengths[s]);
        for (int64_t i = 0; i < t; ++i)
          for (int64_t c = 0; c < 8; ++c) {
            double got = y[size_t((s * t + i) * 8 + c)];
            if (i < lengths[s])
              CHECK(got == Approx(ys[size_t(i * 8 + c)]).margin(1e-12));
            else
              CHECK(got == 0.0);
          }
      }
    }
}

TEST_CASE("variants: cross-attention equals the truncated pair alone",
          "[interp][variants]") {
  // Cross-attention with lengths and kv_lengths: valid rows are those of
  // the block on x[:L] and x_kv[:Lkv] (bottom_right aligns to them).
  const int64_t b = 2, tq = 5, tkv = 8;
  for (bool topLeft : {false, true}) {
    BlockParams p = block(ATTNC_MASK_CAUSAL_PADDING, topLeft);
    p.cross = true;
    BlockParams alone = block(ATTNC_MASK_CAUSAL, topLeft);
    alone.cross = true;
    Data d = weightsFor(p, 31);
    std::mt19937_64 rng(32);
    std::vector<float> x = randomNormal(b * tq * 8, rng);
    std::vector<float> xkv = randomNormal(b * tkv * 8, rng);
    int32_t lengths[b] = {3, 5}, kvLengths[b] = {6, 2};
    VariantInputs in;
    in.lengths = lengths;
    in.xKv = xkv.data();
    in.kvSeqLen = tkv;
    in.kvLengths = kvLengths;
    std::vector<double> y = interpret(p, d.ptrs, x.data(), b, tq, in);
    REQUIRE(y.size() == size_t(b * tq * 8));
    for (int64_t s = 0; s < b; ++s) {
      std::vector<float> xs = prefix(x, s, tq, lengths[s], 8);
      std::vector<float> xkvs = prefix(xkv, s, tkv, kvLengths[s], 8);
      VariantInputs one;
      one.xKv = xkvs.data();
      one.kvSeqLen = kvLengths[s];
      std::vector<double> ys =
          interpret(alone, d.ptrs, xs.data(), 1, lengths[s], one);
      REQUIRE(ys.size() == size_t(lengths[s] * 8));
      for (int64_t i = 0; i < tq; ++i)
        for (int64_t c = 0; c < 8; ++c) {
          double got = y[size_t((s * tq + i) * 8 + c)];
          INFO("topLeft " << topLeft << " b " << s << " i " << i);
          if (i < lengths[s])
            CHECK(got == Approx(ys[size_t(i * 8 + c)]).margin(1e-12));
          else
            CHECK(got == 0.0);
        }
    }
  }
}

TEST_CASE("variants: cross-attention on x_kv = x is self-attention",
          "[interp][variants]") {
  BlockParams self = block(ATTNC_MASK_CAUSAL);
  BlockParams cross = self;
  cross.cross = true;
  Data d = weightsFor(self, 41);
  std::mt19937_64 rng(42);
  std::vector<float> x = randomNormal(2 * 6 * 8, rng);
  VariantInputs in;
  in.xKv = x.data();
  in.kvSeqLen = 6;
  std::vector<double> a = interpret(self, d.ptrs, x.data(), 2, 6);
  std::vector<double> b = interpret(cross, d.ptrs, x.data(), 2, 6, in);
  CHECK(a == b);
  // And the old entry points are the all-valid self-attention case.
  CHECK(interpret(self, d.ptrs, x.data(), 2, 6, VariantInputs()) == a);
  std::vector<double> f32 = interpretFloat32(cross, d.ptrs, x.data(), 2, 6, in);
  REQUIRE(f32.size() == a.size());
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(f32[i] == Approx(a[i]).margin(1e-4));
}

TEST_CASE("variants: checkVariantInputs names what does not fit",
          "[interp][variants]") {
  BlockParams self = block(ATTNC_MASK_PADDING), cross = self;
  cross.cross = true;
  std::vector<float> xkv(2 * 3 * 8);
  int32_t good[2] = {4, 0}, bad[2] = {1, 5}, neg[2] = {-1, 0};
  VariantInputs in;
  CHECK(checkVariantInputs(self, 2, 4, in).empty());
  in.lengths = good;
  CHECK(checkVariantInputs(self, 2, 4, in).empty());
  in.lengths = bad;
  CHECK(checkVariantInputs(self, 2, 4, in) ==
        "lengths[1] is 5, expected 0..4 (seq_len)");
  in.lengths = neg;
  CHECK_THAT(checkVariantInputs(self, 2, 4, in), Contains("lengths[0] is -1"));
  in = VariantInputs();
  in.kvSeqLen = 3;
  CHECK_THAT(checkVariantInputs(self, 2, 4, in),
             Contains("kv_seq_len 3 differs from seq_len 4"));
  in = VariantInputs();
  in.xKv = xkv.data();
  CHECK_THAT(checkVariantInputs(self, 2, 4, in), Contains("self-attention"));
  in = VariantInputs();
  in.kvLengths = good;
  CHECK_THAT(checkVariantInputs(self, 2, 4, in), Contains("kv_lengths given"));
  in = VariantInputs();
  CHECK(checkVariantInputs(cross, 2, 4, in) == "cross-attention needs x_kv");
  in.xKv = xkv.data();
  CHECK_THAT(checkVariantInputs(cross, 2, 4, in),
             Contains("kv_seq_len >= 1, got 0"));
  in.kvSeqLen = 3;
  CHECK(checkVariantInputs(cross, 2, 4, in).empty());
  in.kvLengths = good; // 4 > kv_seq_len 3
  CHECK(checkVariantInputs(cross, 2, 4, in) ==
        "kv_lengths[0] is 4, expected 0..3 (kv_seq_len)");
  // interpret refuses instead of reading out of range.
  Data d = weightsFor(cross, 1);
  std::vector<float> x(2 * 4 * 8);
  CHECK(interpret(cross, d.ptrs, x.data(), 2, 4, in).empty());
  CHECK(referenceWithBound(cross, d.ptrs, x.data(), 2, 4, in).y.empty());
}

TEST_CASE("variants: paramsFromInfo reads cross and probs from features",
          "[interp][variants]") {
  attnc_kernel_info info = {};
  info.features = ATTNC_FEATURE_CROSS;
  CHECK(paramsFromInfo(info).cross);
  CHECK_FALSE(paramsFromInfo(info).wantProbs);
  info.features = ATTNC_FEATURE_PROBS | ATTNC_FEATURE_LENGTHS;
  CHECK_FALSE(paramsFromInfo(info).cross);
  CHECK(paramsFromInfo(info).wantProbs);
}

//===----------------------------------------------------------------------===//
// Kernel::forward with the variant fields, on the fake kernel
//===----------------------------------------------------------------------===//

namespace {

struct FakeKernel {
  Kernel k;
  explicit FakeKernel(const char *config) {
    setenv("ATTNC_FAKE_KERNEL", config, 1);
    std::string msg;
    LoadError err;
    bool ok = k.load(ATTNC_FAKE_KERNEL_PATH, msg, err);
    unsetenv("ATTNC_FAKE_KERNEL");
    INFO(msg);
    REQUIRE(ok);
  }
};

} // namespace

TEST_CASE("variants: Kernel::forward passes lengths, x_kv and probs",
          "[variants][loader]") {
  // The fake kernel computes what its metadata declares; its y and probs
  // must pass the reference's gate for every mask and alignment.
  const char *configs[] = {
      "mask=2,features=5",                  // padding, lengths + probs
      "mask=3,features=7",                  // causal+padding, cross
      "mask=3,features=7,causal_align=1",   // top_left
      "mask=4,window=2,features=6",         // sliding window, cross
      "mask=4,window=3,features=6,causal_align=1",
      "mask=0,features=6",                  // cross, no mask
  };
  for (const char *config : configs) {
    INFO("ATTNC_FAKE_KERNEL=" << config);
    FakeKernel fk(config);
    const Kernel &k = fk.k;
    const attnc_kernel_info &ki = k.info();
    const bool cross = ki.features & ATTNC_FEATURE_CROSS;
    const bool lens = ki.features & ATTNC_FEATURE_LENGTHS;
    BlockParams p = paramsFromInfo(ki);
    Data d = weightsFor(p, 51);
    std::vector<unsigned char> packed;
    REQUIRE(k.packFloat(d.ptrs, packed) == ATTNC_OK);
    const int64_t b = 3, t = 6, tkv = cross ? 9 : t;
    std::mt19937_64 rng(52);
    std::vector<float> x = randomNormal(b * t * 16, rng);
    std::vector<float> xkv = randomNormal(b * tkv * 16, rng);
    int32_t lengths[b] = {6, 2, 0}, kvLengths[b] = {9, 0, 4};
    VariantInputs in;
    if (lens)
      in.lengths = lengths;
    if (cross) {
      in.xKv = xkv.data();
      in.kvSeqLen = tkv;
      if (lens)
        in.kvLengths = kvLengths;
    }
    std::vector<float> y(size_t(b * t * 16)), probs(size_t(b * 2 * t * tkv));
    std::vector<unsigned char> ws;
    std::string why;
    CHECK(k.checkVariants(b, t, in, probs.data(), why));
    INFO(why);
    REQUIRE(k.forward(packed.data(), x.data(), y.data(), b, t, in,
                      probs.data(), ws) == ATTNC_OK);
    CHECK(int64_t(ws.size()) == k.workspaceSize(b, t, tkv));
    Reference r = referenceWithBound(p, d.ptrs, x.data(), b, t, in);
    REQUIRE(r.probs.size() == probs.size());
    CHECK(compare(y.data(), r.y.data(), r.bound.data(), int64_t(y.size()),
                  1e-5, 1e-4)
              .ok);
    CHECK(compare(probs.data(), r.probs.data(), r.probsBound.data(),
                  int64_t(probs.size()), 1e-5, 1e-4)
              .ok);
  }
}

TEST_CASE("variants: Kernel refuses variant fields the kernel does not take",
          "[variants][loader]") {
  std::vector<unsigned char> ws;
  std::string why;
  int32_t lengths[2] = {3, 1};
  std::vector<float> x(2 * 4 * 16), y(x.size()), probs(2 * 2 * 4 * 4);
  {
    FakeKernel fk(""); // causal, no features
    const Kernel &k = fk.k;
    std::vector<float> packed(size_t(k.packedBytes() / 4));
    VariantInputs in;
    in.lengths = lengths;
    CHECK_FALSE(k.checkVariants(2, 4, in, nullptr, why));
    CHECK(why == "lengths given, but the kernel fake_attn does not take it "
                 "(no lengths feature)");
    CHECK(k.forward(packed.data(), x.data(), y.data(), 2, 4, in, nullptr,
                    ws) == ATTNC_ERR_ARGS);
    CHECK_FALSE(k.checkVariants(2, 4, VariantInputs(), probs.data(), why));
    CHECK_THAT(why, Contains("probs given"));
    in = VariantInputs();
    in.xKv = x.data();
    in.kvSeqLen = 4;
    CHECK_FALSE(k.checkVariants(2, 4, in, nullptr, why));
    CHECK_THAT(why, Contains("x_kv given"));
    CHECK_FALSE(k.checkShape(2, 4, 5, why));
    CHECK_THAT(why, Contains("kv_seq_len 5 differs from seq_len 4"));
    CHECK(ws.empty());
  }
  {
    FakeKernel fk("mask=3,features=7,max_seq_len=8");
    const Kernel &k = fk.k;
    std::vector<float> packed(size_t(k.packedBytes() / 4));
    VariantInputs in;
    in.lengths = lengths;
    // A cross kernel without x_kv: the old form cannot pass it.
    CHECK(k.forward(packed.data(), x.data(), y.data(), 2, 4, ws) ==
          ATTNC_ERR_NULL_ARG);
    in.xKv = x.data();
    in.kvSeqLen = 9;
    CHECK_FALSE(k.checkShape(2, 4, 9, why));
    CHECK(why == "kv_seq_len 9 exceeds the kernel's max_seq_len 8");
    CHECK(k.forward(packed.data(), x.data(), y.data(), 2, 4, in, nullptr,
                    ws) == ATTNC_ERR_BAD_SHAPE);
    in.kvSeqLen = 4;
    int32_t tooLong[2] = {5, 0};
    in.kvLengths = tooLong;
    CHECK_FALSE(k.checkVariants(2, 4, in, nullptr, why));
    CHECK(why == "kv_lengths[0] is 5, expected 0..4 (kv_seq_len)");
    CHECK(k.forward(packed.data(), x.data(), y.data(), 2, 4, in, nullptr,
                    ws) == ATTNC_ERR_ARGS);
    CHECK(ws.empty());
    // The workspace bound of a cross kernel grows with kv_seq_len.
    CHECK(k.workspaceBytes(1, 2, 8, why) > k.workspaceBytes(1, 2, 1, why));
    CHECK(k.workspaceBytes(1, 2, 0, why) == -1);
    CHECK(why == "kv_seq_len must be at least 1, got 0");
  }
}

//===----------------------------------------------------------------------===//
// Heatmap
//===----------------------------------------------------------------------===//

namespace {
size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t pos = s.find(what); pos != std::string::npos;
       pos = s.find(what, pos + 1))
    ++n;
  return n;
}
} // namespace

TEST_CASE("heatmap: panels, cells, ticks and the colour scale",
          "[heatmap]") {
  const int64_t heads = 3, tq = 2, tkv = 4;
  std::vector<float> p(size_t(heads * tq * tkv), 0.0f);
  p[0] = 1.0f; // head 0, query 0, key 0
  p[5] = 0.5f; // head 0, query 1, key 1
  std::string svg = heatmapSvg(p.data(), heads, tq, tkv, -1);
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK_THAT(svg, Contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(count(svg, "class=\"panel\"") == 3);
  for (const char *title : {">head 0<", ">head 1<", ">head 2<"})
    CHECK_THAT(svg, Contains(title));
  // One rect per cell, plus the background, a frame per panel and the
  // colour bar.
  CHECK(count(svg, "<rect") == size_t(heads * tq * tkv) + 1 + 3 + 1);
  // The largest weight (1) is the top of the scale (viridis yellow), 0 the
  // bottom.
  CHECK_THAT(svg, Contains("fill=\"#fde725\""));
  CHECK_THAT(svg, Contains("fill=\"#440154\""));
  CHECK_THAT(svg, Contains("class=\"scale-value\""));
  CHECK_THAT(svg, Contains(">0.5<"));
  CHECK_THAT(svg, Contains("query 1, key 1: 0.5"));
  CHECK(svg.find("downsampled") == std::string::npos);
  CHECK(svg.find("<image") == std::string::npos);
  // --head: one panel.
  std::string one = heatmapSvg(p.data(), heads, tq, tkv, 2);
  CHECK(count(one, "class=\"panel\"") == 1);
  CHECK_THAT(one, Contains(">head 2<"));
  CHECK(heatmapSvg(p.data(), heads, tq, tkv, 3).empty());
  CHECK(heatmapSvg(p.data(), heads, 0, tkv, -1).empty());
}

TEST_CASE("heatmap: masked pairs are hatched grey, outside the scale",
          "[heatmap]") {
  // One head, causal 3 x 3: the weights of a visible pair can be 0 (here
  // query 2, key 0), a masked pair's never shows as a colour.
  const int64_t tq = 3, tkv = 3;
  std::vector<float> p = {1.0f, 0, 0, 0.75f, 0.25f, 0, 0.0f, 0.5f, 0.5f};
  HeatmapOptions opt;
  opt.visible = {1, 0, 0, 1, 1, 0, 1, 1, 1};
  std::string svg = heatmapSvg(p.data(), 1, tq, tkv, -1, opt);
  CHECK(count(svg, "fill=\"url(#masked)\"><title>") == 3);
  for (const char *cell : {"query 0, key 1: masked", "query 0, key 2: masked",
                           "query 1, key 2: masked"})
    CHECK_THAT(svg, Contains(cell));
  // A visible zero is a colour (the bottom of the scale), not masked.
  CHECK_THAT(svg, Contains("fill=\"#440154\"><title>query 2, key 0: 0</title>"));
  CHECK_THAT(svg, Contains("<pattern id=\"masked\""));
  CHECK_THAT(svg, Contains(">masked</text>"));
  // Without a mask (or with every pair visible) nothing is masked.
  std::string plain = heatmapSvg(p.data(), 1, tq, tkv, -1);
  CHECK(plain.find("masked") == std::string::npos);
  opt.visible.assign(9, 1);
  CHECK(heatmapSvg(p.data(), 1, tq, tkv, -1, opt).find("masked") == std::string::npos);
  // Downsampled: a cell is masked only when all its pairs are, else the
  // mean of its visible weights (the masked zeros left out).
  const int64_t n = 300;
  std::vector<float> big(size_t(n * n), 0.0f);
  std::vector<unsigned char> vis(size_t(n * n), 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      big[size_t(i * n + j)] = 1.0f / float(i + 1);
      vis[size_t(i * n + j)] = 1;
    }
  HeatmapOptions down;
  down.maxCells = 2; // 2 x 2 cells of 150 x 150 pairs
  down.maxRectCells = 64;
  down.visible = vis;
  std::string d = heatmapSvg(big.data(), 1, n, n, -1, down);
  CHECK(count(d, "url(#masked)") == 2); // the masked cell, the legend key
  CHECK_THAT(d, Contains("query 0, key 1: masked"));
  // Cell (0, 0): 150 rows, row i has i+1 visible weights of 1/(i+1): mean
  // over the visible pairs = 150 / (150 * 151 / 2) = 2/151.
  char want[64];
  std::snprintf(want, sizeof want, "query 0, key 0: %.4g", 2.0 / 151.0);
  CHECK_THAT(d, Contains(want));
  // Drawn as an image too: the masked pixels are grey stripes (checked
  // through the legend and the absence of errors; the PNG is opaque here).
  down.maxRectCells = 1;
  std::string img = heatmapSvg(big.data(), 1, n, n, -1, down);
  CHECK(count(img, "<image") == 1);
  CHECK_THAT(img, Contains(">masked</text>"));
}

TEST_CASE("heatmap: long axes are averaged and drawn as an image",
          "[heatmap]") {
  const int64_t tq = 600, tkv = 300;
  std::vector<float> p(size_t(tq * tkv), 0.0f);
  for (int64_t i = 0; i < tq; ++i)
    p[size_t(i * tkv + i / 2)] = 1.0f;
  std::string svg = heatmapSvg(p.data(), 1, tq, tkv, -1);
  CHECK_THAT(svg, Contains("downsampled for display: 256 x 256 cells, each "
                           "the mean of up to 3 x 2 weights"));
  CHECK(count(svg, "<image") == 1);
  CHECK_THAT(svg, Contains("data:image/png;base64,iVBORw0KGgo"));
  CHECK(svg.size() < 200000);
  // Ticks at nice token positions of the full axes.
  CHECK_THAT(svg, Contains(">500</text>"));
  CHECK_THAT(svg, Contains(">250</text>"));
}
