//===- FuzzNpy.cpp - libFuzzer harness: the .npy reader of libattnrt ------===//
//
// Input: the bytes of a .npy file, parsed by attnrt::parseNpy. Beyond "no
// crash, no sanitizer report, no huge allocation (-rss_limit_mb)": an
// accepted array has non-negative dimensions whose product is its number of
// floats, and a rejected one has a message.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  attnrt::NpyArray a;
  std::string message;
  if (!attnrt::parseNpy(bytes, "fuzz.npy", a, message)) {
    if (message.empty()) {
      std::fprintf(stderr, "fuzz-npy: rejected without a message\n");
      std::abort();
    }
    return 0;
  }
  int64_t n = 1;
  for (int64_t d : a.shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) {
      std::fprintf(stderr, "fuzz-npy: accepted a bad shape\n");
      std::abort();
    }
  if (static_cast<uint64_t>(n) != a.data.size()) {
    std::fprintf(stderr, "fuzz-npy: shape product %lld != %zu floats\n",
                 static_cast<long long>(n), a.data.size());
    std::abort();
  }
  return 0;
}
