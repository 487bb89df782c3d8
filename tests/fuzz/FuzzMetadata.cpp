//===- FuzzMetadata.cpp - libFuzzer harness: libattnrt's metadata check ---===//
//
// attnrt::validateInfo decides whether the runtime trusts a kernel library's
// attnc_kernel_info. A library can say anything in it, but its pointers are
// valid (they point into the library), so the input is:
//
//   [attnc_kernel_info bytes][num_weights * attnc_tensor_info bytes][strings]
//
// with every pointer field replaced by a valid one: `weights` by an array of
// exactly num_weights records (num_weights is taken modulo 65), the strings
// (name, triple, cpu, compiler version, the weight names) by NUL-terminated
// pieces of the tail split at NUL bytes (or ""), selected_isa by a function
// returning a value from the input. Missing bytes are zero.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/Runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

static uint32_t fuzzIsa = 0;
static uint32_t selectedIsa(void) { return fuzzIsa; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t pos = 0;
  auto take = [&](void *dst, size_t n) {
    std::memset(dst, 0, n);
    size_t k = pos < size ? std::min(n, size - pos) : 0;
    if (k)
      std::memcpy(dst, data + pos, k);
    pos += n;
  };
  attnc_kernel_info info;
  take(&info, sizeof info);
  info.num_weights %= 65;
  std::vector<attnc_tensor_info> weights(info.num_weights);
  for (attnc_tensor_info &w : weights)
    take(&w, sizeof w);
  take(&fuzzIsa, sizeof fuzzIsa);
  // The tail, split at NUL bytes, gives the strings.
  std::vector<std::string> strings;
  if (pos < size) {
    std::string tail(reinterpret_cast<const char *>(data + pos), size - pos);
    size_t start = 0;
    while (start <= tail.size()) {
      size_t end = tail.find('\0', start);
      if (end == std::string::npos)
        end = tail.size();
      strings.push_back(tail.substr(start, end - start));
      start = end + 1;
    }
  }
  size_t next = 0;
  auto str = [&]() -> const char * {
    return next < strings.size() ? strings[next++].c_str() : "";
  };
  info.name = str();
  info.target_triple = str();
  info.target_cpu = str();
  info.compiler_version = str();
  for (attnc_tensor_info &w : weights)
    w.name = str();
  info.weights = weights.empty() ? nullptr : weights.data();
  info.selected_isa = (fuzzIsa & 0x80000000u) ? nullptr : selectedIsa;
  (void)attnrt::validateInfo(info);
  (void)attnrt::validateInfo(info, info.abi_version);
  return 0;
}
