//===- MetadataTests.cpp - attnc_kernel_info validation tests ---*- C++ -*-===//
//
// Pins the C ABI record's layout, checks that a well-formed record passes
// validateInfo, and that each corruption is caught with a specific message.
// Also exercises Kernel::load's error classes that need no generated kernel.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Runtime.h"

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace attnrt;
using Catch::Matchers::Contains;

// The ABI record must not drift silently: any change here is an ABI change
// and needs ATTNC_ABI_VERSION bumped (LP64 layout).
static_assert(sizeof(attnc_tensor_info) == 32, "attnc_tensor_info layout");
static_assert(offsetof(attnc_tensor_info, rank) == 8, "");
static_assert(offsetof(attnc_tensor_info, dims) == 16, "");
static_assert(sizeof(attnc_kernel_info) == 200, "attnc_kernel_info layout");
static_assert(offsetof(attnc_kernel_info, abi_version) == 0, "");
static_assert(offsetof(attnc_kernel_info, struct_size) == 4, "");
static_assert(offsetof(attnc_kernel_info, name) == 8, "");
static_assert(offsetof(attnc_kernel_info, spec_hash) == 16, "");
static_assert(offsetof(attnc_kernel_info, d_model) == 24, "");
static_assert(offsetof(attnc_kernel_info, head_dim) == 48, "");
static_assert(offsetof(attnc_kernel_info, mask) == 64, "");
static_assert(offsetof(attnc_kernel_info, window) == 72, "");
static_assert(offsetof(attnc_kernel_info, bias) == 80, "");
static_assert(offsetof(attnc_kernel_info, scale) == 88, "");
static_assert(offsetof(attnc_kernel_info, dtype) == 96, "");
static_assert(offsetof(attnc_kernel_info, num_weights) == 112, "");
static_assert(offsetof(attnc_kernel_info, weights) == 120, "");
static_assert(offsetof(attnc_kernel_info, packed_floats) == 128, "");
static_assert(offsetof(attnc_kernel_info, max_seq_len) == 136, "");
static_assert(offsetof(attnc_kernel_info, target_triple) == 176, "");
static_assert(offsetof(attnc_kernel_info, compiler_version) == 192, "");

namespace {

/// A valid record plus the storage it points into.
struct InfoFixture {
  std::vector<TensorShape> shapes;
  std::vector<attnc_tensor_info> tensors;
  attnc_kernel_info info = {};

  explicit InfoFixture(uint32_t layout = ATTNC_LAYOUT_GPT2_CONV1D,
                       bool bias = true, bool outProj = true) {
    info.abi_version = ATTNC_ABI_VERSION;
    info.struct_size = sizeof(attnc_kernel_info);
    info.name = "gpt2_block";
    info.spec_hash = 0x1234;
    info.d_model = 64;
    info.heads = 4;
    info.kv_heads = 2;
    info.head_dim = 16;
    info.mask = ATTNC_MASK_CAUSAL;
    info.causal_align = 0;
    info.window = 0;
    info.bias = bias;
    info.out_proj = outProj;
    info.scale = 0.25;
    info.dtype = ATTNC_DTYPE_F32;
    info.isa = ATTNC_ISA_AVX2;
    info.weight_layout = layout;
    info.packed_floats = 1000;
    info.max_seq_len = 0;
    info.target_triple = "x86_64-unknown-linux-gnu";
    info.target_cpu = "x86-64-v3";
    info.compiler_version = "attnc 0.1.0";
    fillWeights();
  }

  /// Rebuilds the weights table from storageTensors of the current fields.
  void fillWeights() {
    shapes = storageTensors(paramsFromInfo(info));
    tensors.clear();
    for (const TensorShape &s : shapes) {
      attnc_tensor_info t = {};
      t.name = s.name.c_str();
      t.rank = uint32_t(s.shape.size());
      t.dims[0] = s.shape[0];
      t.dims[1] = s.shape.size() == 2 ? s.shape[1] : 1;
      tensors.push_back(t);
    }
    info.num_weights = uint32_t(tensors.size());
    info.weights = tensors.data();
  }

  std::string check() const { return validateInfo(info); }
};

} // namespace

TEST_CASE("metadata: the ABI record layout is pinned", "[metadata]") {
  REQUIRE(ATTNC_ABI_VERSION == 2u);
  REQUIRE(sizeof(attnc_kernel_info) == 200);
  REQUIRE(offsetof(attnc_kernel_info, weight_layout) == 104);
  REQUIRE(offsetof(attnc_kernel_info, selected_isa) == 168);
  REQUIRE(offsetof(attnc_kernel_info, target_cpu) == 184);
  REQUIRE(sizeof(attnc_forward_args) == 168);
}

TEST_CASE("metadata: a well-formed record is accepted", "[metadata]") {
  for (uint32_t layout : {ATTNC_LAYOUT_GPT2_CONV1D, ATTNC_LAYOUT_TORCH_IN_PROJ,
                          ATTNC_LAYOUT_SEPARATE})
    for (bool bias : {true, false})
      for (bool outProj : {true, false}) {
        InfoFixture f(layout, bias, outProj);
        INFO("layout " << layout << " bias " << bias << " outProj " << outProj);
        CHECK(f.check().empty());
      }
  InfoFixture f;
  f.info.mask = ATTNC_MASK_SLIDING_WINDOW;
  f.info.window = 128;
  CHECK(f.check().empty());
}

TEST_CASE("metadata: ABI version and struct size skew", "[metadata]") {
  InfoFixture f;
  f.info.abi_version = ATTNC_ABI_VERSION + 1;
  CHECK(f.check() == "kernel ABI version 3, runtime speaks 2");
  CHECK(validateInfo(f.info, ATTNC_ABI_VERSION + 1).empty());
  f.info.abi_version = ATTNC_ABI_VERSION;
  f.info.struct_size = sizeof(attnc_kernel_info) - 8;
  CHECK_THAT(f.check(),
             Contains("struct_size is 192 bytes") && Contains("expects 200"));
}

TEST_CASE("metadata: kernel name must be a C identifier", "[metadata]") {
  InfoFixture f;
  f.info.name = nullptr;
  CHECK(f.check() == "kernel name is null");
  for (const char *bad : {"", "9lives", "has-dash", "has space", "dot.ted"}) {
    f.info.name = bad;
    CHECK_THAT(f.check(), Contains("is not a valid C identifier"));
  }
  f.info.name = "_Ok_123";
  CHECK(f.check().empty());
}

TEST_CASE("metadata: sizes must be positive and heads divisible",
          "[metadata]") {
  InfoFixture f;
  f.info.head_dim = 0;
  CHECK(f.check() == "head_dim must be positive, got 0");
  f.info.head_dim = 16;
  f.info.d_model = -4;
  CHECK(f.check() == "d_model must be positive, got -4");
  f.info.d_model = 64;
  f.info.kv_heads = 3;
  CHECK(f.check() == "heads (4) is not a multiple of kv_heads (3)");
  f.info.kv_heads = int64_t(1) << 40;
  CHECK_THAT(f.check(), Contains("kv_heads is implausibly large"));
  f.info.kv_heads = 2;
  f.info.packed_floats = 0;
  CHECK(f.check() == "packed_floats must be positive, got 0");
  f.info.packed_floats = 10;
  f.info.max_seq_len = -1;
  CHECK(f.check() == "max_seq_len must be non-negative, got -1");
}

TEST_CASE("metadata: unknown enum values are rejected", "[metadata]") {
  InfoFixture f;
  f.info.mask = 9;
  CHECK(f.check() == "unknown mask value 9");
  f.info.mask = ATTNC_MASK_NONE;
  f.info.causal_align = 2;
  CHECK_THAT(f.check(), Contains("unknown causal_align value 2"));
  f.info.causal_align = 1;
  f.info.dtype = 5;
  CHECK(f.check() == "unknown dtype value 5");
  f.info.dtype = ATTNC_DTYPE_F32;
  f.info.isa = 5;
  CHECK(f.check() == "unknown isa value 5");
  f.info.isa = ATTNC_ISA_HOST;
  f.info.weight_layout = 3;
  CHECK(f.check() == "unknown weight_layout value 3");
}

TEST_CASE("metadata: flags, window and scale", "[metadata]") {
  InfoFixture f;
  f.info.bias = 2;
  CHECK(f.check() == "bias flag must be 0 or 1, got 2");
  f.info.bias = 1;
  f.info.out_proj = 7;
  CHECK(f.check() == "out_proj flag must be 0 or 1, got 7");
  f.info.out_proj = 1;
  f.info.mask = ATTNC_MASK_SLIDING_WINDOW;
  CHECK(f.check() == "sliding_window mask needs a positive window, got 0");
  f.info.window = -3;
  CHECK(f.check() == "window must be non-negative, got -3");
  f.info.mask = ATTNC_MASK_CAUSAL;
  f.info.window = 0;
  f.info.scale = std::nan("");
  CHECK(f.check() == "scale is not finite");
}

TEST_CASE("metadata: weights table must match the storage tensors",
          "[metadata]") {
  SECTION("count") {
    InfoFixture f;
    f.info.num_weights = 3;
    CHECK(f.check() == "weights table has 3 entries, expected 4");
  }
  SECTION("count after a flag change") {
    InfoFixture f;
    f.info.bias = 0; // table still lists the biases
    CHECK(f.check() == "weights table has 4 entries, expected 2");
  }
  SECTION("null table") {
    InfoFixture f;
    f.info.weights = nullptr;
    CHECK(f.check() == "weights table is null");
  }
  SECTION("name") {
    InfoFixture f;
    f.tensors[2].name = "c_proj.w";
    CHECK(f.check() ==
          "weights[2] is named 'c_proj.w', expected 'c_proj.weight'");
    f.tensors[2].name = nullptr;
    CHECK_THAT(f.check(), Contains("weights[2] has a null name"));
  }
  SECTION("order") {
    InfoFixture f(ATTNC_LAYOUT_SEPARATE);
    std::swap(f.tensors[2], f.tensors[4]);
    CHECK(f.check() ==
          "weights[2] is named 'v_proj.weight', expected 'k_proj.weight'");
  }
  SECTION("dims") {
    InfoFixture f;
    f.tensors[0].dims[1] = 63; // c_attn.weight is [64, 128]
    CHECK(f.check() ==
          "weights[0] ('c_attn.weight') has dims [64, 63], expected [64, 128]");
  }
  SECTION("rank") {
    InfoFixture f;
    f.tensors[1].rank = 2; // c_attn.bias is rank 1
    CHECK(f.check() == "weights[1] ('c_attn.bias') has rank 2, expected 1");
  }
  SECTION("rank-1 second dim") {
    InfoFixture f;
    f.tensors[3].dims[1] = 64;
    CHECK(f.check() ==
          "weights[3] ('c_proj.bias') has dims [64, 64], expected [64]");
  }
}

TEST_CASE("loader: error names are stable", "[metadata]") {
  CHECK(std::string(toString(LoadError::None)) == "none");
  CHECK(std::string(toString(LoadError::OpenFailed)) == "open_failed");
  CHECK(std::string(toString(LoadError::NoQuery)) == "no_query");
  CHECK(std::string(toString(LoadError::AbiTooNew)) == "abi_too_new");
  CHECK(std::string(toString(LoadError::AbiMismatch)) == "abi_mismatch");
  CHECK(std::string(toString(LoadError::BadMetadata)) == "bad_metadata");
  CHECK(std::string(toString(LoadError::MissingEntry)) == "missing_entry");
}

TEST_CASE("loader: missing and non-ELF files fail to open", "[metadata]") {
  Kernel k;
  std::string msg;
  LoadError err = LoadError::None;
  CHECK_FALSE(k.load("/nonexistent/libnope.so", msg, err));
  CHECK(err == LoadError::OpenFailed);
  CHECK_THAT(msg, Contains("/nonexistent/libnope.so"));

  const char *dir = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(dir && *dir ? dir : "/tmp") + "/attnc_notelf_XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = mkstemp(buf.data());
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "not an ELF file\n", 16) == 16);
  close(fd);
  CHECK_FALSE(k.load(buf.data(), msg, err));
  CHECK(err == LoadError::OpenFailed);
  CHECK_THAT(msg, Contains(buf.data()));
  std::remove(buf.data());
}

TEST_CASE("loader: a shared object without attnc_query is not a kernel",
          "[metadata]") {
  // libc is certainly loaded and certainly not an attnc kernel.
  Dl_info dl;
  REQUIRE(dladdr(reinterpret_cast<void *>(&std::printf), &dl) != 0);
  REQUIRE(dl.dli_fname != nullptr);
  Kernel k;
  std::string msg;
  LoadError err = LoadError::None;
  CHECK_FALSE(k.load(dl.dli_fname, msg, err));
  CHECK(err == LoadError::NoQuery);
  CHECK_THAT(msg, Contains("attnc_query"));
  // A failed load leaves the kernel movable and destructible.
  Kernel moved(std::move(k));
  Kernel other;
  other = std::move(moved);
}
