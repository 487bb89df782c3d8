//===- runtime_core.cpp - load, pack and run with libattnrt_core alone ----===//
//
//   attnc-runtime-core-test LIB.so
//
// What an application that only loads and runs a kernel needs: Kernel::load
// (metadata checks), packFloat, forward. Linked against attnc::runtime_core
// only, so it needs neither the reference interpreter nor zlib
// (tests/e2e/runtime-core.test checks its NEEDED entries). Runs forward
// with 1 and 2 threads on fixed inputs and checks the outputs are finite
// and equal. Exit 0 and a PASS line, 1 on a difference, 2 on load errors.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Runtime.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: attnc-runtime-core-test LIB.so\n");
    return 2;
  }
  attnrt::Kernel kernel;
  std::string message;
  attnrt::LoadError error = attnrt::LoadError::None;
  if (!kernel.load(argv[1], message, error)) {
    std::fprintf(stderr, "runtime-core: %s\n", message.c_str());
    return 2;
  }
  const attnc_kernel_info &info = kernel.info();
  // Small deterministic weights: sin of the element index, scaled.
  std::vector<std::vector<float>> weights(info.num_weights);
  std::vector<const float *> ptrs;
  for (uint32_t w = 0; w < info.num_weights; ++w) {
    const attnc_tensor_info &t = info.weights[w];
    int64_t n = t.dims[0] * (t.rank == 2 ? t.dims[1] : 1);
    weights[w].resize(n);
    for (int64_t i = 0; i < n; ++i)
      weights[w][i] = 0.05f * std::sin(0.37f * float(i + 11 * w));
    ptrs.push_back(weights[w].data());
  }
  std::vector<unsigned char> packed;
  if (int rc = kernel.packFloat(ptrs, packed)) {
    std::fprintf(stderr, "runtime-core: pack failed (%s)\n",
                 attnrt::statusText(rc));
    return 2;
  }
  const int64_t batch = 2, seq = 5;
  std::vector<float> x(batch * seq * info.d_model);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::cos(0.11f * float(i));
  std::vector<float> y1(batch * seq * info.out_dim), y2(y1.size());
  std::vector<unsigned char> ws;
  for (int threads : {1, 2}) {
    std::vector<float> &y = threads == 1 ? y1 : y2;
    if (int rc = kernel.forward(packed.data(), x.data(), y.data(), batch, seq,
                                ws, threads)) {
      std::fprintf(stderr, "runtime-core: forward failed (%s)\n",
                   attnrt::statusText(rc));
      return 2;
    }
  }
  for (size_t i = 0; i < y1.size(); ++i)
    if (!std::isfinite(y1[i]) || y1[i] != y2[i]) {
      std::fprintf(stderr, "runtime-core: FAIL at %zu: %g vs %g\n", i,
                   double(y1[i]), double(y2[i]));
      return 1;
    }
  std::printf("runtime-core: PASS %s, %zu outputs\n", info.name,
              y1.size());
  return 0;
}
