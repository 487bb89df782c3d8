//===- InterpreterTests.cpp - Reference interpreter unit tests --*- C++ -*-===//
//
// Closed forms the naive kernels must reproduce exactly (equal scores give
// the mean of V, a dominant logit picks its row, causal masking, GQA head
// mapping), the storage-tensor tables, and agreement of the three weight
// layouts when fed equivalent weights.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using namespace attnrt;

namespace {

/// Deterministic pseudo-random floats in [-1, 1).
std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &f : v)
    f = dist(gen);
  return v;
}

std::vector<double> toDouble(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

/// A [rows, cols] -> [cols, rows] transpose of a float matrix.
std::vector<float> transposed(const std::vector<float> &m, int64_t rows,
                              int64_t cols) {
  std::vector<float> t(m.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      t[j * rows + i] = m[i * cols + j];
  return t;
}

/// Rows [r0, r0 + n) of a [*, cols] matrix.
std::vector<float> rowSlice(const std::vector<float> &m, int64_t cols,
                            int64_t r0, int64_t n) {
  return std::vector<float>(m.begin() + r0 * cols, m.begin() + (r0 + n) * cols);
}

std::vector<const float *>
pointers(const std::vector<std::vector<float>> &bufs) {
  std::vector<const float *> p;
  for (const auto &b : bufs)
    p.push_back(b.data());
  return p;
}

BlockParams smallBlock(uint32_t layout) {
  BlockParams p;
  p.dModel = 8;
  p.heads = 4;
  p.kvHeads = 2;
  p.headDim = 3; // attention width 12 != dModel on purpose
  p.layout = layout;
  p.mask = ATTNC_MASK_CAUSAL;
  return p;
}

} // namespace

TEST_CASE("naive::linear computes x W + b", "[interp]") {
  // x [2, 3], w [3, 2].
  std::vector<double> x = {1, 2, 3, 4, 5, 6};
  std::vector<double> w = {1, 0, 0, 1, 1, 1};
  std::vector<double> b = {10, 20};
  std::vector<double> y(4);
  naive::linear(x.data(), w.data(), b.data(), y.data(), 2, 3, 2);
  CHECK(y == std::vector<double>{14, 25, 20, 31});
  naive::linear(x.data(), w.data(), nullptr, y.data(), 2, 3, 2);
  CHECK(y == std::vector<double>{4, 5, 10, 11});
}

TEST_CASE("sdpa: equal scores give the mean of the V rows", "[interp]") {
  const int64_t t = 4, d = 2;
  std::vector<double> q(t * d, 0.0); // zero queries: every score is 0
  std::vector<double> k = toDouble(randomFloats(t * d, 1));
  std::vector<double> v = {1, 10, 2, 20, 3, 30, 6, 60};
  std::vector<double> o(t * d);
  naive::sdpa(q.data(), k.data(), v.data(), o.data(), 1, 1, 1, t, t, d, 1.0,
              ATTNC_MASK_NONE);
  for (int64_t i = 0; i < t; ++i) {
    CHECK(o[i * d] == Approx(3.0));
    CHECK(o[i * d + 1] == Approx(30.0));
  }
  // Causal: row i averages rows 0..i.
  naive::sdpa(q.data(), k.data(), v.data(), o.data(), 1, 1, 1, t, t, d, 1.0,
              ATTNC_MASK_CAUSAL);
  CHECK(o[0] == Approx(1.0));
  CHECK(o[1 * d] == Approx(1.5));
  CHECK(o[2 * d] == Approx(2.0));
  CHECK(o[3 * d + 1] == Approx(30.0));
}

TEST_CASE("sdpa: one huge logit picks that V row", "[interp]") {
  const int64_t t = 3, d = 2;
  std::vector<double> q = {1, 0, 1, 0, 1, 0};
  // Key 1 aligns with the query; the others are orthogonal.
  std::vector<double> k = {0, 1, 1, 0, 0, -1};
  std::vector<double> v = {5, 6, 7, 8, 9, 10};
  std::vector<double> o(t * d);
  // A scale of 1e4 makes the softmax one-hot (exp(-1e4) underflows to 0),
  // and the max subtraction keeps it from overflowing.
  naive::sdpa(q.data(), k.data(), v.data(), o.data(), 1, 1, 1, t, t, d, 1e4,
              ATTNC_MASK_NONE);
  for (int64_t i = 0; i < t; ++i) {
    CHECK(o[i * d] == Approx(7.0));
    CHECK(o[i * d + 1] == Approx(8.0));
  }
}

TEST_CASE("sdpa: seq_len 1 returns v", "[interp]") {
  const int64_t d = 5;
  std::vector<double> q = toDouble(randomFloats(d, 2));
  std::vector<double> k = toDouble(randomFloats(d, 3));
  std::vector<double> v = toDouble(randomFloats(d, 4));
  std::vector<double> o(d);
  for (uint32_t mask : {ATTNC_MASK_NONE, ATTNC_MASK_CAUSAL}) {
    naive::sdpa(q.data(), k.data(), v.data(), o.data(), 1, 1, 1, 1, 1, d, 0.7,
                mask);
    for (int64_t c = 0; c < d; ++c)
      CHECK(o[c] == Approx(v[c]));
  }
}

TEST_CASE("sdpa: causal row 0 sees only v_0", "[interp]") {
  const int64_t t = 5, d = 3;
  std::vector<double> q = toDouble(randomFloats(t * d, 5));
  std::vector<double> k = toDouble(randomFloats(t * d, 6));
  std::vector<double> v = toDouble(randomFloats(t * d, 7));
  std::vector<double> o(t * d);
  naive::sdpa(q.data(), k.data(), v.data(), o.data(), 1, 1, 1, t, t, d, 0.5,
              ATTNC_MASK_CAUSAL);
  for (int64_t c = 0; c < d; ++c)
    CHECK(o[c] == Approx(v[c]));
  // The last row sees every key: same as unmasked.
  std::vector<double> full(t * d);
  naive::sdpa(q.data(), k.data(), v.data(), full.data(), 1, 1, 1, t, t, d, 0.5,
              ATTNC_MASK_NONE);
  for (int64_t c = 0; c < d; ++c)
    CHECK(o[(t - 1) * d + c] == Approx(full[(t - 1) * d + c]));
}

TEST_CASE("sdpa: causal alignment bottom-right vs top-left", "[interp]") {
  // Tq = 2 queries over Tkv = 4 keys, zero scores so outputs are means.
  const int64_t tq = 2, tkv = 4, d = 1;
  std::vector<double> q(tq * d, 0.0);
  std::vector<double> k(tkv * d, 0.0);
  std::vector<double> v = {1, 2, 3, 4};
  std::vector<double> o(tq * d);
  // Bottom-right: query 0 sees keys 0..2, query 1 sees 0..3.
  naive::sdpa(q.data(), k.data(), v.data(), o.data(), 1, 1, 1, tq, tkv, d, 1.0,
              ATTNC_MASK_CAUSAL);
  CHECK(o[0] == Approx(2.0));
  CHECK(o[1] == Approx(2.5));
  // Top-left: query 0 sees key 0, query 1 sees keys 0..1.
  naive::sdpa(q.data(), k.data(), v.data(), o.data(), 1, 1, 1, tq, tkv, d, 1.0,
              ATTNC_MASK_CAUSAL, /*topLeft=*/true);
  CHECK(o[0] == Approx(1.0));
  CHECK(o[1] == Approx(1.5));
}

TEST_CASE("sdpa: fully masked rows are zero", "[interp]") {
  // Bottom-right with Tq > Tkv: query 0 sees j <= 0 + 2 - 4 < 0: nothing.
  const int64_t tq = 4, tkv = 2, d = 2;
  std::vector<double> q = toDouble(randomFloats(tq * d, 8));
  std::vector<double> k = toDouble(randomFloats(tkv * d, 9));
  std::vector<double> v = {3, 4, 5, 6};
  std::vector<double> o(tq * d, 99.0);
  naive::sdpa(q.data(), k.data(), v.data(), o.data(), 1, 1, 1, tq, tkv, d, 1.0,
              ATTNC_MASK_CAUSAL);
  CHECK(o[0] == 0.0);
  CHECK(o[1] == 0.0);
  CHECK(o[2] == 0.0);
  CHECK(o[3] == 0.0);
  // Query 2 sees key 0 only.
  CHECK(o[4] == Approx(3.0));
  CHECK(o[5] == Approx(4.0));
  CHECK(std::isfinite(o[6]));
}

TEST_CASE("sdpa: sliding window limits the visible keys", "[interp]") {
  const int64_t t = 5, d = 1;
  std::vector<double> q(t, 0.0), k(t, 0.0);
  std::vector<double> v = {1, 2, 3, 4, 5};
  std::vector<double> o(t);
  naive::sdpa(q.data(), k.data(), v.data(), o.data(), 1, 1, 1, t, t, d, 1.0,
              ATTNC_MASK_SLIDING_WINDOW, false, /*window=*/2);
  CHECK(o[0] == Approx(1.0));
  CHECK(o[1] == Approx(1.5));
  CHECK(o[2] == Approx(2.5));
  CHECK(o[4] == Approx(4.5));
}

TEST_CASE("sdpa: GQA maps query head h to kv head h / group", "[interp]") {
  // 4 query heads, 2 kv heads, Tq = Tkv = 1: output of head h is v of its
  // kv head.
  const int64_t hq = 4, hkv = 2, d = 2, batch = 2;
  std::vector<double> q = toDouble(randomFloats(batch * hq * d, 10));
  std::vector<double> k = toDouble(randomFloats(batch * hkv * d, 11));
  std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8}; // [2, 2, 1, 2]
  std::vector<double> o(batch * hq * d);
  naive::sdpa(q.data(), k.data(), v.data(), o.data(), batch, hq, hkv, 1, 1, d,
              1.0, ATTNC_MASK_NONE);
  std::vector<double> want = {1, 2, 1, 2, 3, 4, 3, 4, 5, 6, 5, 6, 7, 8, 7, 8};
  for (size_t i = 0; i < want.size(); ++i)
    CHECK(o[i] == Approx(want[i]));
}

TEST_CASE("storageTensors lists names and shapes per layout", "[interp]") {
  BlockParams p = smallBlock(ATTNC_LAYOUT_GPT2_CONV1D);
  // d = 8, qW = 12, kvW = 6, N = 24.
  auto t = storageTensors(p);
  REQUIRE(t.size() == 4);
  CHECK(t[0].name == "c_attn.weight");
  CHECK(t[0].shape == std::vector<int64_t>{8, 24});
  CHECK(t[1].name == "c_attn.bias");
  CHECK(t[1].shape == std::vector<int64_t>{24});
  CHECK(t[2].name == "c_proj.weight");
  CHECK(t[2].shape == std::vector<int64_t>{12, 8});
  CHECK(t[3].name == "c_proj.bias");

  p.layout = ATTNC_LAYOUT_TORCH_IN_PROJ;
  t = storageTensors(p);
  REQUIRE(t.size() == 4);
  CHECK(t[0].name == "in_proj_weight");
  CHECK(t[0].shape == std::vector<int64_t>{24, 8});
  CHECK(t[1].name == "in_proj_bias");
  CHECK(t[2].name == "out_proj.weight");
  CHECK(t[2].shape == std::vector<int64_t>{8, 12});
  CHECK(t[3].name == "out_proj.bias");

  p.layout = ATTNC_LAYOUT_SEPARATE;
  t = storageTensors(p);
  REQUIRE(t.size() == 8);
  const char *names[] = {"q_proj.weight", "q_proj.bias",   "k_proj.weight",
                         "k_proj.bias",   "v_proj.weight", "v_proj.bias",
                         "o_proj.weight", "o_proj.bias"};
  for (size_t i = 0; i < 8; ++i)
    CHECK(t[i].name == names[i]);
  CHECK(t[2].shape == std::vector<int64_t>{6, 8});
  CHECK(t[6].shape == std::vector<int64_t>{8, 12});
}

TEST_CASE("storageTensors drops biases and output projection", "[interp]") {
  BlockParams p = smallBlock(ATTNC_LAYOUT_SEPARATE);
  p.biasMask = 0;
  auto t = storageTensors(p);
  REQUIRE(t.size() == 4);
  CHECK(t[1].name == "k_proj.weight");
  CHECK(t[3].name == "o_proj.weight");
  p.outProj = false;
  t = storageTensors(p);
  REQUIRE(t.size() == 3);
  CHECK(t[2].name == "v_proj.weight");
  p.layout = ATTNC_LAYOUT_GPT2_CONV1D;
  p.biasMask = 15;
  t = storageTensors(p);
  REQUIRE(t.size() == 2);
  CHECK(t[1].name == "c_attn.bias");
}

TEST_CASE("interpret: identity weights give the same y in every layout",
          "[interp]") {
  // d = qW = kvW = 4: Q = K = V = x, W_O = I, zero biases. Then y is plain
  // attention over x, the same whatever the storage layout.
  BlockParams p;
  p.dModel = 4;
  p.heads = 2;
  p.kvHeads = 2;
  p.headDim = 2;
  p.mask = ATTNC_MASK_CAUSAL;
  const int64_t d = 4, batch = 2, seq = 3;
  std::vector<float> eye(16, 0.0f);
  for (int i = 0; i < 4; ++i)
    eye[i * 4 + i] = 1.0f;
  std::vector<float> x = randomFloats(batch * seq * d, 12);

  // The expected value, straight from sdpa on x.
  std::vector<double> xh(batch * 2 * seq * 2);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t c = 0; c < 2; ++c)
          xh[((b * 2 + h) * seq + t) * 2 + c] =
              x[(b * seq + t) * d + h * 2 + c];
  std::vector<double> oh(xh.size());
  naive::sdpa(xh.data(), xh.data(), xh.data(), oh.data(), batch, 2, 2, seq, seq,
              2, 1.0 / std::sqrt(2.0), ATTNC_MASK_CAUSAL);

  // [d, 3d] for gpt2 = [I I I]; [3d, d] for torch = [I; I; I].
  std::vector<float> cattn(4 * 12, 0.0f), inproj(12 * 4, 0.0f);
  for (int blk = 0; blk < 3; ++blk)
    for (int i = 0; i < 4; ++i) {
      cattn[i * 12 + blk * 4 + i] = 1.0f;
      inproj[(blk * 4 + i) * 4 + i] = 1.0f;
    }
  std::vector<float> zeros12(12, 0.0f), zeros4(4, 0.0f);
  std::vector<std::vector<float>> gpt2 = {cattn, zeros12, eye, zeros4};
  std::vector<std::vector<float>> torch = {inproj, zeros12, eye, zeros4};
  std::vector<std::vector<float>> sep = {eye, zeros4, eye, zeros4,
                                         eye, zeros4, eye, zeros4};
  const std::pair<uint32_t, std::vector<std::vector<float>> *> cases[] = {
      {ATTNC_LAYOUT_GPT2_CONV1D, &gpt2},
      {ATTNC_LAYOUT_TORCH_IN_PROJ, &torch},
      {ATTNC_LAYOUT_SEPARATE, &sep}};
  for (const auto &c : cases) {
    p.layout = c.first;
    INFO("layout " << c.first);
    std::vector<double> y =
        interpret(p, pointers(*c.second), x.data(), batch, seq);
    REQUIRE(y.size() == size_t(batch * seq * d));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < seq; ++t)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t cc = 0; cc < 2; ++cc)
            CHECK(y[(b * seq + t) * d + h * 2 + cc] ==
                  Approx(oh[((b * 2 + h) * seq + t) * 2 + cc]).margin(1e-12));
  }
}

TEST_CASE("interpret: the three layouts agree on equivalent weights",
          "[interp]") {
  for (bool bias : {true, false}) {
    for (bool outProj : {true, false}) {
      BlockParams p = smallBlock(ATTNC_LAYOUT_GPT2_CONV1D);
      p.biasMask = bias ? 15u : 0u;
      p.outProj = outProj;
      const int64_t d = 8, qW = 12, kvW = 6, n = qW + 2 * kvW;
      const int64_t batch = 2, seq = 5;
      // Start from the gpt2 storage (W [in, out]).
      std::vector<float> cattn = randomFloats(d * n, 20);
      std::vector<float> battn = randomFloats(n, 21);
      std::vector<float> cproj = randomFloats(qW * d, 22);
      std::vector<float> bproj = randomFloats(d, 23);
      std::vector<float> x = randomFloats(batch * seq * d, 24);

      // Torch: in_proj_weight = c_attnᵀ, out_proj.weight = c_projᵀ.
      std::vector<float> inProj = transposed(cattn, d, n);
      std::vector<float> outProjW = transposed(cproj, qW, d);
      // Separate: row blocks of in_proj_weight / in_proj_bias.
      std::vector<float> wq = rowSlice(inProj, d, 0, qW);
      std::vector<float> wk = rowSlice(inProj, d, qW, kvW);
      std::vector<float> wv = rowSlice(inProj, d, qW + kvW, kvW);
      std::vector<float> bq(battn.begin(), battn.begin() + qW);
      std::vector<float> bk(battn.begin() + qW, battn.begin() + qW + kvW);
      std::vector<float> bv(battn.begin() + qW + kvW, battn.end());

      std::vector<std::vector<float>> gpt2 = {cattn}, torch = {inProj},
                                      sep = {wq};
      if (bias) {
        gpt2.push_back(battn);
        torch.push_back(battn);
        sep.push_back(bq);
      }
      sep.push_back(wk);
      if (bias)
        sep.push_back(bk);
      sep.push_back(wv);
      if (bias)
        sep.push_back(bv);
      if (outProj) {
        gpt2.push_back(cproj);
        torch.push_back(outProjW);
        sep.push_back(outProjW);
        if (bias) {
          gpt2.push_back(bproj);
          torch.push_back(bproj);
          sep.push_back(bproj);
        }
      }

      INFO("bias " << bias << " outProj " << outProj);
      std::vector<double> yg =
          interpret(p, pointers(gpt2), x.data(), batch, seq);
      p.layout = ATTNC_LAYOUT_TORCH_IN_PROJ;
      std::vector<double> yt =
          interpret(p, pointers(torch), x.data(), batch, seq);
      p.layout = ATTNC_LAYOUT_SEPARATE;
      std::vector<double> ys =
          interpret(p, pointers(sep), x.data(), batch, seq);
      size_t width = outProj ? size_t(d) : size_t(qW);
      REQUIRE(yg.size() == size_t(batch * seq) * width);
      REQUIRE(yt.size() == yg.size());
      REQUIRE(ys.size() == yg.size());
      for (size_t i = 0; i < yg.size(); ++i) {
        CHECK(yt[i] == Approx(yg[i]).margin(1e-12));
        CHECK(ys[i] == Approx(yg[i]).margin(1e-12));
      }
    }
  }
}

TEST_CASE("interpret: biases shift q, k, v and the output", "[interp]") {
  // Zero weights: q = bq, k = bk, v = bv for every token, so the attention
  // output is bv (whatever the scores), and y = bv Wo + bo.
  BlockParams p;
  p.dModel = 2;
  p.heads = 1;
  p.kvHeads = 1;
  p.headDim = 2;
  p.layout = ATTNC_LAYOUT_SEPARATE;
  std::vector<float> z(4, 0.0f);
  std::vector<float> bq = {1, 2}, bk = {3, 4}, bv = {5, 6};
  std::vector<float> wo = {1, 0, 0, 1}, bo = {100, 200};
  std::vector<std::vector<float>> w = {z, bq, z, bk, z, bv, wo, bo};
  std::vector<float> x = randomFloats(3 * 2, 30);
  std::vector<double> y = interpret(p, pointers(w), x.data(), 1, 3);
  REQUIRE(y.size() == 6);
  for (int t = 0; t < 3; ++t) {
    CHECK(y[t * 2] == Approx(105.0));
    CHECK(y[t * 2 + 1] == Approx(206.0));
  }
}

TEST_CASE("interpret: rejects a wrong weights count", "[interp]") {
  BlockParams p = smallBlock(ATTNC_LAYOUT_GPT2_CONV1D);
  std::vector<float> x(8, 0.0f);
  CHECK(interpret(p, {}, x.data(), 1, 1).empty());
}

TEST_CASE("paramsFromInfo maps the metadata fields", "[interp]") {
  attnc_kernel_info info = {};
  info.d_model = 16;
  info.heads = 4;
  info.kv_heads = 2;
  info.head_dim = 8;
  info.mask = ATTNC_MASK_SLIDING_WINDOW;
  info.causal_align = 1;
  info.window = 7;
  info.bias_flags = 0;
  info.out_proj = 1;
  info.scale = 0.25;
  info.weight_layout = ATTNC_LAYOUT_TORCH_IN_PROJ;
  BlockParams p = paramsFromInfo(info);
  CHECK(p.dModel == 16);
  CHECK(p.heads == 4);
  CHECK(p.kvHeads == 2);
  CHECK(p.headDim == 8);
  CHECK(p.mask == ATTNC_MASK_SLIDING_WINDOW);
  CHECK(p.topLeft);
  CHECK(p.window == 7);
  CHECK(p.biasMask == 0u);
  CHECK(p.outProj);
  CHECK(p.scale == 0.25);
  CHECK(p.layout == ATTNC_LAYOUT_TORCH_IN_PROJ);
  info.causal_align = 0;
  CHECK_FALSE(paramsFromInfo(info).topLeft);
}

TEST_CASE("compare: statistics and verdict", "[compare]") {
  std::vector<double> ref = {1.0, -2.0, 0.0, 4.0};
  std::vector<float> out = {1.0f, -2.5f, 0.0f, 4.0f};
  CompareResult r = compare(out.data(), ref.data(), 4, 1e-3, 1e-3);
  CHECK_FALSE(r.ok);
  CHECK(r.maxAbs == Approx(0.5));
  CHECK(r.maxRel == Approx(0.25));
  CHECK(r.meanAbs == Approx(0.125));
  CHECK(r.worstIndex == 1);
  CHECK(r.nonFinite == 0);
  CHECK(compare(out.data(), ref.data(), 4, 0.5, 0.0).ok);
  CHECK(compare(out.data(), ref.data(), 4, 0.0, 0.25).ok);
  CHECK_FALSE(compare(out.data(), ref.data(), 4, 0.0, 0.2).ok);
  // Relative error against a zero reference uses the 1e-6 floor.
  std::vector<float> tiny = {1.0f, -2.0f, 1e-6f, 4.0f};
  CHECK(compare(tiny.data(), ref.data(), 4, 0, 0).maxRel ==
        Approx(1.0).epsilon(1e-6));
  CompareResult empty = compare(nullptr, nullptr, 0, 0, 0);
  CHECK(empty.ok);
  CHECK(empty.worstIndex == -1);
}

TEST_CASE("compare: non-finite outputs fail", "[compare]") {
  std::vector<double> ref = {1.0, 2.0, 3.0};
  std::vector<float> out = {1.0f, std::nanf(""), INFINITY};
  CompareResult r = compare(out.data(), ref.data(), 3, 1.0, 1.0);
  CHECK_FALSE(r.ok);
  CHECK(r.nonFinite == 2);
  CHECK(r.worstIndex == 1);
  // A matching infinity in the reference fails too: nothing non-finite
  // passes the gate (an input or weight was not finite).
  std::vector<double> refInf = {1.0, 2.0, INFINITY};
  std::vector<float> outInf = {1.0f, 2.0f, INFINITY};
  CompareResult both = compare(outInf.data(), refInf.data(), 3, 0, 0);
  CHECK_FALSE(both.ok);
  CHECK(both.nonFiniteBoth == 1);
  // A finite output where the reference is not.
  std::vector<float> finite = {1.0f, 2.0f, 3.0f};
  CompareResult fin = compare(finite.data(), refInf.data(), 3, 1e9, 1e9);
  CHECK_FALSE(fin.ok);
  CHECK(fin.finiteVsNonFiniteRef == 1);
  CHECK(fin.worstIndex == 2);
}

TEST_CASE("interpretFloat32: the same block in float arithmetic", "[interp]") {
  BlockParams p;
  p.dModel = 32;
  p.heads = 4;
  p.kvHeads = 2;
  p.headDim = 8;
  p.mask = ATTNC_MASK_CAUSAL;
  p.layout = ATTNC_LAYOUT_SEPARATE;
  std::mt19937_64 rng(7);
  auto weights = randomWeights(storageTensors(p), rng);
  std::vector<const float *> ptrs;
  for (auto &w : weights)
    ptrs.push_back(w.data());
  std::vector<float> x = randomNormal(2 * 5 * 32, rng);
  std::vector<double> ref = interpret(p, ptrs, x.data(), 2, 5);
  std::vector<double> f32 = interpretFloat32(p, ptrs, x.data(), 2, 5);
  REQUIRE(ref.size() == f32.size());
  double maxDiff = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    maxDiff = std::max(maxDiff, std::fabs(ref[i] - f32[i]));
  // Float rounding shows, but only at float precision.
  CHECK(maxDiff > 0);
  CHECK(maxDiff < 1e-4);
}
