//===- FuzzWeights.cpp - libFuzzer harness: libattnrt's weights loader ----===//
//
// Input: one checkpoint file. Its first byte picks the file name the loader
// sees (.safetensors, .npz, or a directory holding it as c_attn.weight.npy),
// the rest is the file, written to a temporary directory and loaded with
// attnrt_weights_open for a small GPT-2-layout kernel (d_model 4) under the
// prefix "h.0.attn.". Beyond "no crash, no sanitizer report, no huge
// allocation (-rss_limit_mb)": a refusal has a known code and a message, an
// accepted load has one buffer per kernel tensor of exactly its floats.
//
//===----------------------------------------------------------------------===//
#include "attnc/runtime/abi.h"
#include "attnc/runtime/weights.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace {

struct Kernel {
  attnc_tensor_info t[4] = {};
  attnc_kernel_info info = {};
  Kernel() {
    const char *names[4] = {"c_attn.weight", "c_attn.bias", "c_proj.weight", "c_proj.bias"};
    const int64_t dims[4][2] = {{4, 12}, {12, 1}, {4, 4}, {4, 1}};
    for (int i = 0; i < 4; ++i) {
      t[i].name = names[i];
      t[i].rank = dims[i][1] == 1 ? 1 : 2;
      t[i].dims[0] = dims[i][0];
      t[i].dims[1] = dims[i][1];
    }
    info.abi_version = ATTNC_ABI_VERSION;
    info.struct_size = sizeof(attnc_kernel_info);
    info.weight_layout = ATTNC_LAYOUT_GPT2_CONV1D;
    info.d_model = 4;
    info.num_weights = 4;
    info.weights = t;
  }
};

std::string &workDirName() {
  static std::string dir;
  return dir;
}

// The run's files are removed one by one as it goes; what is left at exit
// is the directory and its "d" subdirectory (a crash keeps the input that
// crashed, which libFuzzer saves anyway).
void removeWorkDir() {
  const std::string &dir = workDirName();
  if (dir.empty())
    return;
  rmdir((dir + "/d").c_str());
  rmdir(dir.c_str());
}

std::string workDir() {
  std::string &dir = workDirName();
  if (dir.empty()) {
    char tmpl[] = "/tmp/attnc-fuzz-weights-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    dir = tmpl;
    std::atexit(removeWorkDir);
  }
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Kernel k;
  if (size < 1)
    return 0;
  const std::string dir = workDir();
  std::string path, file;
  switch (data[0] % 3) {
  case 0:
    path = file = dir + "/w.safetensors";
    break;
  case 1:
    path = file = dir + "/w.npz";
    break;
  default:
    path = dir + "/d";
    mkdir(path.c_str(), 0700);
    file = path + "/h.0.attn.c_attn.weight.npy";
    break;
  }
  FILE *f = std::fopen(file.c_str(), "wb");
  if (!f)
    std::abort();
  if (size > 1 && std::fwrite(data + 1, 1, size - 1, f) != size - 1)
    std::abort();
  std::fclose(f);
  attnrt_weights *w = nullptr;
  char err[512] = {0};
  int rc = attnrt_weights_open(path.c_str(), "h.0.attn.", &k.info, &w, err, sizeof err);
  if (rc != ATTNRT_WEIGHTS_OK) {
    if (w || !err[0] || std::strcmp(attnrt_weights_strerror(rc), "unknown") == 0) {
      std::fprintf(stderr, "fuzz-weights: refusal %d without a message or code\n", rc);
      std::abort();
    }
  } else {
    if (!w || attnrt_weights_count(w) != 4) {
      std::fprintf(stderr, "fuzz-weights: accepted without 4 buffers\n");
      std::abort();
    }
    for (uint32_t i = 0; i < 4; ++i)
      if (attnrt_weights_elems(w)[i] != k.t[i].dims[0] * k.t[i].dims[1] ||
          !attnrt_weights_data(w)[i]) {
        std::fprintf(stderr, "fuzz-weights: tensor %u has the wrong size\n", i);
        std::abort();
      }
  }
  attnrt_weights_close(w);
  std::remove(file.c_str());
  return 0;
}
