//===- MetadataTests.cpp - attnc_kernel_info validation tests ---*- C++ -*-===//
//
// Pins the C ABI record's layout, checks that a well-formed record passes
// validateInfo, and that each corruption is caught with a specific message.
// Also exercises Kernel::load's error classes that need no generated kernel.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Checked.h"
#include "attnc/runtime/Cuda.h"
#include "attnc/runtime/Interpreter.h"
#include "attnc/runtime/Runtime.h"
#include "attnc/runtime/attnrt_c.h"

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace attnrt;
using Catch::Matchers::Contains;

// The ABI records must not drift silently: any change here is an ABI
// change and needs ATTNC_ABI_VERSION bumped (LP64 layout; the fields come
// from abi_*.def, these numbers from this test).
static_assert(sizeof(attnc_tensor_info) == 32, "attnc_tensor_info layout");
static_assert(offsetof(attnc_tensor_info, rank) == 8, "");
static_assert(offsetof(attnc_tensor_info, dtype) == 12, "");
static_assert(offsetof(attnc_tensor_info, dims) == 16, "");
static_assert(offsetof(attnc_kernel_info, abi_version) == 0, "");
static_assert(offsetof(attnc_kernel_info, struct_size) == 4, "");
static_assert(offsetof(attnc_kernel_info, name) == 8, "");
static_assert(offsetof(attnc_kernel_info, spec_hash) == 16, "");
static_assert(offsetof(attnc_kernel_info, d_model) == 24, "");
static_assert(offsetof(attnc_kernel_info, heads) == 32, "");
static_assert(offsetof(attnc_kernel_info, kv_heads) == 40, "");
static_assert(offsetof(attnc_kernel_info, head_dim) == 48, "");
static_assert(offsetof(attnc_kernel_info, out_dim) == 56, "");
static_assert(offsetof(attnc_kernel_info, mask) == 64, "");
static_assert(offsetof(attnc_kernel_info, causal_align) == 68, "");
static_assert(offsetof(attnc_kernel_info, window) == 72, "");
static_assert(offsetof(attnc_kernel_info, bias_flags) == 80, "");
static_assert(offsetof(attnc_kernel_info, out_proj) == 84, "");
static_assert(offsetof(attnc_kernel_info, scale) == 88, "");
static_assert(offsetof(attnc_kernel_info, dtype) == 96, "");
static_assert(offsetof(attnc_kernel_info, weight_dtype) == 100, "");
static_assert(offsetof(attnc_kernel_info, isa) == 104, "");
static_assert(offsetof(attnc_kernel_info, weight_layout) == 108, "");
static_assert(offsetof(attnc_kernel_info, features) == 112, "");
static_assert(offsetof(attnc_kernel_info, num_weights) == 116, "");
static_assert(offsetof(attnc_kernel_info, weights) == 120, "");
static_assert(offsetof(attnc_kernel_info, packed_bytes) == 128, "");
static_assert(offsetof(attnc_kernel_info, max_seq_len) == 136, "");
static_assert(offsetof(attnc_kernel_info, workspace_per_row) == 144, "");
static_assert(offsetof(attnc_kernel_info, workspace_fixed) == 152, "");
static_assert(offsetof(attnc_kernel_info, stack_bytes) == 160, "");
static_assert(offsetof(attnc_kernel_info, selected_isa) == 168, "");
static_assert(offsetof(attnc_kernel_info, target_triple) == 176, "");
static_assert(offsetof(attnc_kernel_info, target_cpu) == 184, "");
static_assert(offsetof(attnc_kernel_info, compiler_version) == 192, "");
static_assert(offsetof(attnc_kernel_info, tp_size) == 200, "");
static_assert(offsetof(attnc_kernel_info, tp_rank) == 204, "");
static_assert(offsetof(attnc_kernel_info, tp_heads) == 208, "");
static_assert(offsetof(attnc_kernel_info, tp_kv_heads) == 216, "");
static_assert(offsetof(attnc_kernel_info, rope_style) == 224, "");
static_assert(offsetof(attnc_kernel_info, rope_pairs) == 228, "");
static_assert(offsetof(attnc_kernel_info, rotary_dim) == 232, "");
static_assert(offsetof(attnc_kernel_info, rope_inv_freq) == 240, "");
static_assert(offsetof(attnc_kernel_info, rope_long_inv_freq) == 248, "");
static_assert(offsetof(attnc_kernel_info, rope_long_from) == 256, "");
static_assert(offsetof(attnc_kernel_info, rope_attention_factor) == 264, "");
static_assert(offsetof(attnc_kernel_info, rope_dynamic_factor) == 272, "");
static_assert(offsetof(attnc_kernel_info, rope_dynamic_from) == 280, "");
static_assert(offsetof(attnc_kernel_info, clip_qkv) == 288, "");
static_assert(offsetof(attnc_kernel_info, softcap) == 296, "");
static_assert(offsetof(attnc_kernel_info, alibi_slopes) == 304, "");
static_assert(offsetof(attnc_kernel_info, alibi_before_scale) == 312, "");
static_assert(offsetof(attnc_kernel_info, t5_num_buckets) == 316, "");
static_assert(offsetof(attnc_kernel_info, t5_max_distance) == 320, "");
static_assert(offsetof(attnc_kernel_info, t5_bidirectional) == 324, "");
static_assert(offsetof(attnc_kernel_info, qk_norm) == 328, "");
static_assert(offsetof(attnc_kernel_info, sinks) == 332, "");
static_assert(offsetof(attnc_kernel_info, qk_norm_eps) == 336, "");
static_assert(offsetof(attnc_kernel_info, qk_norm_offset) == 344, "");
static_assert(offsetof(attnc_kernel_info, temperature_floor_scale) == 352, "");
static_assert(offsetof(attnc_kernel_info, temperature_attn_scale) == 360, "");
static_assert(offsetof(attnc_kernel_info, rel_key_positions) == 368, "");
static_assert(offsetof(attnc_kernel_info, rel_key_query) == 376, "");
static_assert(sizeof(attnc_kernel_info) == 384, "attnc_kernel_info layout");
static_assert(offsetof(attnc_forward_args, struct_size) == 0, "");
static_assert(offsetof(attnc_forward_args, reserved0) == 4, "");
static_assert(offsetof(attnc_forward_args, packed) == 8, "");
static_assert(offsetof(attnc_forward_args, packed_bytes) == 16, "");
static_assert(offsetof(attnc_forward_args, x) == 24, "");
static_assert(offsetof(attnc_forward_args, x_elems) == 32, "");
static_assert(offsetof(attnc_forward_args, y) == 40, "");
static_assert(offsetof(attnc_forward_args, y_elems) == 48, "");
static_assert(offsetof(attnc_forward_args, batch) == 56, "");
static_assert(offsetof(attnc_forward_args, seq_len) == 64, "");
static_assert(offsetof(attnc_forward_args, workspace) == 72, "");
static_assert(offsetof(attnc_forward_args, workspace_bytes) == 80, "");
static_assert(offsetof(attnc_forward_args, parallel_for) == 88, "");
static_assert(offsetof(attnc_forward_args, parallel_ctx) == 96, "");
static_assert(offsetof(attnc_forward_args, num_threads) == 104, "");
static_assert(offsetof(attnc_forward_args, reserved1) == 108, "");
static_assert(offsetof(attnc_forward_args, positions) == 112, "");
static_assert(offsetof(attnc_forward_args, lengths) == 120, "");
static_assert(offsetof(attnc_forward_args, x_kv) == 128, "");
static_assert(offsetof(attnc_forward_args, x_kv_elems) == 136, "");
static_assert(offsetof(attnc_forward_args, kv_seq_len) == 144, "");
static_assert(offsetof(attnc_forward_args, kv_lengths) == 152, "");
static_assert(offsetof(attnc_forward_args, probs) == 160, "");
static_assert(offsetof(attnc_forward_args, probs_elems) == 168, "");
static_assert(offsetof(attnc_forward_args, k_cache) == 176, "");
static_assert(offsetof(attnc_forward_args, v_cache) == 184, "");
static_assert(offsetof(attnc_forward_args, cache_elems) == 192, "");
static_assert(offsetof(attnc_forward_args, cache_len) == 200, "");
static_assert(offsetof(attnc_forward_args, stream) == 208, "");
static_assert(sizeof(attnc_forward_args) == 216, "attnc_forward_args layout");
static_assert(offsetof(attnc_decode_args, struct_size) == 0, "");
static_assert(offsetof(attnc_decode_args, reserved0) == 4, "");
static_assert(offsetof(attnc_decode_args, packed) == 8, "");
static_assert(offsetof(attnc_decode_args, packed_bytes) == 16, "");
static_assert(offsetof(attnc_decode_args, x) == 24, "");
static_assert(offsetof(attnc_decode_args, x_elems) == 32, "");
static_assert(offsetof(attnc_decode_args, y) == 40, "");
static_assert(offsetof(attnc_decode_args, y_elems) == 48, "");
static_assert(offsetof(attnc_decode_args, batch) == 56, "");
static_assert(offsetof(attnc_decode_args, seq_len) == 64, "");
static_assert(offsetof(attnc_decode_args, positions) == 72, "");
static_assert(offsetof(attnc_decode_args, k_cache) == 80, "");
static_assert(offsetof(attnc_decode_args, v_cache) == 88, "");
static_assert(offsetof(attnc_decode_args, cache_elems) == 96, "");
static_assert(offsetof(attnc_decode_args, cache_len) == 104, "");
static_assert(offsetof(attnc_decode_args, workspace) == 112, "");
static_assert(offsetof(attnc_decode_args, workspace_bytes) == 120, "");
static_assert(offsetof(attnc_decode_args, parallel_for) == 128, "");
static_assert(offsetof(attnc_decode_args, parallel_ctx) == 136, "");
static_assert(offsetof(attnc_decode_args, num_threads) == 144, "");
static_assert(offsetof(attnc_decode_args, reserved1) == 148, "");
static_assert(offsetof(attnc_decode_args, stream) == 152, "");
static_assert(sizeof(attnc_decode_args) == 160, "attnc_decode_args layout");

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
    info.bias_flags = bias ? (outProj ? 15u : 7u) : 0u;
    info.tp_size = 1;
    info.out_proj = outProj;
    info.scale = 0.25;
    info.dtype = ATTNC_DTYPE_F32;
    info.isa = ATTNC_ISA_AVX2;
    info.weight_layout = layout;
    info.features = 0;
    info.max_seq_len = 0;
    info.stack_bytes = 4096;
    info.selected_isa = &selectIsa;
    info.target_triple = "x86_64-unknown-linux-gnu";
    info.target_cpu = "x86-64-v3";
    info.compiler_version = "attnc 0.1.0";
    fillWeights();
  }

  static uint32_t selectIsa() { return ATTNC_ISA_AVX2; }

  /// Rebuilds the weights table from storageTensors of the current fields,
  /// and the fields that follow from them (out_dim, packed_bytes,
  /// workspace_per_row).
  void fillWeights(bool keepTpKvHeads = false) {
    info.out_dim = info.out_proj ? info.d_model : info.heads * info.head_dim;
    info.tp_heads = info.heads * info.tp_size;
    if (!keepTpKvHeads)
      info.tp_kv_heads = info.kv_heads * info.tp_size;
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
    info.packed_bytes = 4 * (weightFloats() + 32 * info.d_model); // some padding
    info.workspace_per_row = info.d_model + 3 * info.heads * info.head_dim;
  }

  int64_t weightFloats() const {
    int64_t n = 0;
    for (const TensorShape &s : shapes)
      n += s.shape[0] * (s.shape.size() == 2 ? s.shape[1] : 1);
    return n;
  }

  std::string check() const { return validateInfo(info); }
};

} // namespace

TEST_CASE("metadata: the ABI record layout is pinned", "[metadata]") {
  REQUIRE(ATTNC_ABI_VERSION == 7u);
  REQUIRE(sizeof(attnc_kernel_info) == 384);
  REQUIRE(offsetof(attnc_kernel_info, weight_layout) == 108);
  REQUIRE(offsetof(attnc_kernel_info, target_cpu) == 184);
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
  CHECK(f.check() == "kernel ABI version 8, runtime speaks 7");
  CHECK(validateInfo(f.info, ATTNC_ABI_VERSION + 1).empty());
  f.info.abi_version = ATTNC_ABI_VERSION;
  f.info.struct_size = sizeof(attnc_kernel_info) - 8;
  CHECK_THAT(f.check(),
             Contains("struct_size is 376 bytes") && Contains("expects 384"));
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
  // The spec's limits (attnc/runtime/Limits.h), not looser ones: what the
  // parser accepts loads, and nothing past it.
  f.info.d_model = 65537;
  CHECK_THAT(f.check(), Contains("d_model is 65537, more than a spec allows (65536)"));
  f.info.d_model = 64;
  f.info.head_dim = 1025;
  CHECK_THAT(f.check(), Contains("head_dim is 1025, more than a spec allows (1024)"));
  f.info.head_dim = 16;
  f.info.kv_heads = 3;
  CHECK(f.check() == "heads (4) is not a multiple of kv_heads (3)");
  f.info.kv_heads = int64_t(1) << 40;
  CHECK_THAT(f.check(), Contains("kv_heads is 1099511627776, more than a spec allows (1024)"));
  f.info.kv_heads = 2;
  f.info.max_seq_len = -1;
  CHECK(f.check() == "max_seq_len must be in [0, 2^24] (0: none), got -1");
  f.info.max_seq_len = int64_t(1) << 41;
  CHECK_THAT(f.check(), Contains("max_seq_len must be in [0, 2^24] (0: none)"));
  f.info.max_seq_len = 1024;
  CHECK(f.check().empty());
}

TEST_CASE("metadata: unknown enum values are rejected", "[metadata]") {
  InfoFixture f;
  f.info.mask = 11;
  CHECK(f.check() == "unknown mask value 11");
  f.info.mask = ATTNC_MASK_NONE;
  f.info.causal_align = 2;
  CHECK_THAT(f.check(), Contains("unknown causal_align value 2"));
  f.info.causal_align = 1;
  f.info.dtype = 5;
  CHECK(f.check() == "unknown dtype value 5");
  f.info.dtype = ATTNC_DTYPE_F32;
  f.info.isa = 9;
  CHECK(f.check() == "unknown isa value 9");
  f.info.isa = ATTNC_ISA_MULTI;
  CHECK(f.check().empty());
  f.info.features = 256;
  CHECK(f.check() == "unknown features bits 0x100");
  f.info.features = ATTNC_FEATURE_LENGTHS;
  CHECK_THAT(f.check(), Contains("the mask has no padding"));
  f.info.mask = ATTNC_MASK_PADDING;
  CHECK(f.check().empty());
  f.info.features = 0;
  CHECK_THAT(f.check(), Contains("padding mask needs the lengths feature"));
  f.info.mask = ATTNC_MASK_NONE;
  f.info.weight_layout = 3;
  CHECK(f.check() == "unknown weight_layout value 3");
}

TEST_CASE("metadata: a CUDA isa comes with the cuda feature and only with it",
          "[metadata][cuda]") {
  InfoFixture f;
  for (uint32_t isa : {ATTNC_ISA_CUDA_SM80, ATTNC_ISA_CUDA_SM90}) {
    INFO("isa " << isa);
    f.info.isa = isa;
    f.info.features = ATTNC_FEATURE_CUDA;
    CHECK(f.check().empty());
    f.info.features = ATTNC_FEATURE_CUDA | ATTNC_FEATURE_CROSS;
    CHECK(f.check().empty());
    f.info.features = 0;
    CHECK(f.check() == std::string("isa ") + isaName(isa) +
                           " needs the cuda feature, which features does "
                           "not declare");
    f.info.features = ATTNC_FEATURE_CROSS;
    CHECK_THAT(f.check(), Contains("needs the cuda feature"));
  }
  for (uint32_t isa : {ATTNC_ISA_X86_64, ATTNC_ISA_AVX2, ATTNC_ISA_AVX512,
                       ATTNC_ISA_HOST, ATTNC_ISA_MULTI, ATTNC_ISA_AVX512_BF16,
                       ATTNC_ISA_AMX_BF16}) {
    INFO("isa " << isa);
    f.info.isa = isa;
    f.info.features = ATTNC_FEATURE_CUDA;
    CHECK(f.check() == std::string("features declares cuda, but isa ") +
                           isaName(isa) + " is a CPU instruction set");
  }
  f.info.isa = ATTNC_ISA_AMX_BF16 + 1;
  f.info.features = ATTNC_FEATURE_CUDA;
  CHECK(f.check() == "unknown isa value 9");
}

TEST_CASE("runtime: status and isa names", "[metadata][cuda]") {
  CHECK(std::string(statusText(ATTNC_OK)) == "ok");
  CHECK(std::string(statusText(ATTNC_ERR_ARGS)) == "bad argument struct");
  CHECK_THAT(statusText(ATTNC_ERR_NO_DRIVER), Contains("no CUDA driver"));
  CHECK_THAT(statusText(ATTNC_ERR_NO_DEVICE), Contains("no CUDA device"));
  CHECK_THAT(statusText(ATTNC_ERR_DEVICE),
             Contains("a CUDA driver call failed"));
  CHECK(std::string(statusText(11)) == "unknown status");
  CHECK(std::string(isaName(ATTNC_ISA_CUDA_SM80)) == "cuda-sm80");
  CHECK(std::string(isaName(ATTNC_ISA_CUDA_SM90)) == "cuda-sm90");
  CHECK(std::string(isaName(ATTNC_ISA_MULTI)) == "multi");
  CHECK(std::string(isaName(ATTNC_ISA_NONE)) == "none");
  CHECK(std::string(isaName(ATTNC_ISA_AVX512_BF16)) == "x86-avx512-bf16");
  CHECK(std::string(isaName(ATTNC_ISA_AMX_BF16)) == "x86-amx-bf16");
  CHECK(std::string(isaName(9)) == "unknown");
  CHECK(isCudaIsa(ATTNC_ISA_CUDA_SM80));
  CHECK_FALSE(isCudaIsa(ATTNC_ISA_HOST));
  CHECK(cudaSmOf(ATTNC_ISA_CUDA_SM80) == 80);
  CHECK(cudaSmOf(ATTNC_ISA_CUDA_SM90) == 90);
  CHECK(cudaSmOf(ATTNC_ISA_AVX2) == 0);
}

TEST_CASE("metadata: flags, window and scale", "[metadata]") {
  InfoFixture f;
  f.info.bias_flags = 16;
  CHECK(f.check() == "unknown bias_flags bits 16");
  f.info.bias_flags = 15;
  f.info.out_proj = 7;
  CHECK(f.check() == "out_proj flag must be 0 or 1, got 7");
  f.info.out_proj = 1;
  f.info.mask = ATTNC_MASK_SLIDING_WINDOW;
  CHECK(f.check() == "a window mask (sliding_window, bidirectional_window) needs a positive window, got 0");
  f.info.window = -3;
  CHECK(f.check() == "window must be non-negative, got -3");
  f.info.mask = ATTNC_MASK_CAUSAL;
  f.info.window = 5;
  CHECK(f.check() == "window is 5 but the mask is not sliding_window or chunked");
  f.info.mask = ATTNC_MASK_CHUNKED;
  f.info.window = 0;
  CHECK(f.check() == "chunked mask needs a positive chunk size (window), got 0");
  f.info.mask = ATTNC_MASK_SLIDING_WINDOW_PADDING;
  CHECK(f.check() == "a window mask (sliding_window, bidirectional_window) needs a positive window, got 0");
  f.info.mask = ATTNC_MASK_CHUNKED_PADDING;
  f.info.window = 4;
  CHECK(f.check() == "a padding mask needs the lengths feature, which features does not declare");
  f.info.window = 0;
  f.info.mask = ATTNC_MASK_LAST + 1;
  CHECK(f.check() == "unknown mask value 10");
  f.info.mask = ATTNC_MASK_CAUSAL;
  f.info.temperature_floor_scale = -1;
  CHECK(f.check().find("temperature_floor_scale must be in [0, 2^24]") != std::string::npos);
  f.info.temperature_floor_scale = 0;
  f.info.temperature_attn_scale = 0.1;
  CHECK(f.check().find("0 without a floor scale") != std::string::npos);
  f.info.temperature_attn_scale = 0;
  f.info.window = 0;
  f.info.scale = std::nan("");
  CHECK(f.check() == "scale is not finite");
  f.info.scale = HUGE_VAL;
  CHECK(f.check() == "scale is not finite");
  // A denormal scale is not a float32 normal: the spec refuses it, so
  // does the loader (attnc/runtime/Limits.h).
  for (double bad : {-1.0, 0.0, -0.0, 3.4e39, 1e6 * (1 + 1e-15) + 1, 1e-40, 1.1e-38}) {
    INFO("scale " << bad);
    f.info.scale = bad;
    CHECK_THAT(f.check(), Contains("is outside [FLT_MIN, 1e6]"));
  }
  f.info.scale = 1e6;
  CHECK(f.check().empty());
  f.info.scale = 1e-30;
  CHECK(f.check().empty());
}

TEST_CASE("metadata: strings are bounded and present", "[metadata]") {
  InfoFixture f;
  std::string longName(300, 'a');
  f.info.name = longName.c_str();
  CHECK(f.check() ==
        "kernel name is longer than 256 bytes (or not terminated)");
  std::string ok(256, 'a');
  f.info.name = ok.c_str();
  CHECK(f.check().empty());
  // A string without a terminator within the limit: read at most 257
  // bytes of it (ASan would flag a longer read of this buffer).
  std::vector<char> raw(257, 'x');
  f.info.target_cpu = raw.data();
  CHECK(f.check() ==
        "target_cpu is longer than 256 bytes (or not terminated)");
  f.info.target_cpu = "x86-64-v3";
  f.info.target_triple = nullptr;
  CHECK(f.check() == "target_triple is null");
  f.info.target_triple = "x86_64\n-linux";
  CHECK(f.check() == "target_triple contains non-printable characters");
  f.info.target_triple = "x86_64-unknown-linux-gnu";
  f.info.compiler_version = nullptr;
  CHECK(f.check() == "compiler_version is null");
  f.info.compiler_version = "attnc";
  std::string longTensor(400, 'w');
  f.tensors[1].name = longTensor.c_str();
  CHECK(f.check() == "weights[1] has a name longer than 256 bytes, expected "
                     "'c_attn.bias'");
}

TEST_CASE("metadata: out_dim, selected_isa and counts", "[metadata]") {
  InfoFixture f;
  f.info.out_dim = 65;
  CHECK(f.check() == "out_dim is 65, expected 64 (d_model, out_proj is set)");
  InfoFixture g(ATTNC_LAYOUT_SEPARATE, true, false); // heads*head_dim = 64
  g.info.d_model = 48;
  g.fillWeights();
  CHECK(g.check().empty());
  g.info.out_dim = 48;
  CHECK(g.check() ==
        "out_dim is 48, expected 64 (heads * head_dim, no out_proj)");
  f.info.out_dim = 64;
  f.info.selected_isa = nullptr;
  CHECK(f.check() == "selected_isa is null");
  f.info.selected_isa = &InfoFixture::selectIsa;
  f.info.num_weights = 1000000;
  f.info.weights = nullptr; // never read: the count is refused first
  CHECK(f.check() ==
        "weights table has 1000000 entries, more than any layout has (16)");
}

TEST_CASE("metadata: packed_bytes is bounded by the weight tensors",
          "[metadata]") {
  InfoFixture f;
  const int64_t w = f.weightFloats(); // 64*128 + 128 + 64*64 + 64
  REQUIRE(w == 64 * 128 + 128 + 64 * 64 + 64);
  f.info.packed_bytes = 4 * w;
  CHECK(f.check().empty());
  // attnc::limits::packedFloatsBound: each tensor's elements plus two
  // panels' padding on both axes and 64 floats, plus 2^20; as float32.
  const int64_t bound = 4 * ((64 * 128 + 64 * (64 + 128) + 64) + (128 + 64 * 129 + 64) +
                             (64 * 64 + 64 * 128 + 64) + (64 + 64 * 65 + 64) + (1 << 20));
  f.info.packed_bytes = bound;
  CHECK(f.check().empty());
  for (int64_t bad : {int64_t(1), 4 * w - 1, bound + 1,
                      int64_t(1) << 40, int64_t(-5), int64_t(0)}) {
    INFO("packed_bytes " << bad);
    f.info.packed_bytes = bad;
    CHECK_THAT(f.check(), Contains("packed_bytes is " + std::to_string(bad) +
                                   ", expected between " +
                                   std::to_string(4 * w)));
  }
}

TEST_CASE("metadata: workspace and stack fields are bounded", "[metadata]") {
  InfoFixture f;
  f.info.workspace_per_row = -1;
  CHECK_THAT(f.check(), Contains("workspace_per_row is -1"));
  f.info.workspace_per_row = int64_t(1) << 40;
  CHECK_THAT(f.check(), Contains("workspace_per_row is 1099511627776"));
  f.info.workspace_per_row = 0;
  CHECK(f.check().empty());
  f.info.workspace_fixed = -64;
  CHECK_THAT(f.check(), Contains("workspace_fixed is -64"));
  f.info.workspace_fixed = int64_t(1) << 62;
  CHECK_THAT(f.check(), Contains("workspace_fixed is 4611686018427387904"));
  f.info.workspace_fixed = 1 << 20;
  CHECK(f.check().empty());
  f.info.stack_bytes = -1;
  CHECK_THAT(f.check(), Contains("stack_bytes is -1"));
  f.info.stack_bytes = int64_t(1) << 40;
  CHECK_THAT(f.check(), Contains("stack_bytes is 1099511627776"));
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
    f.info.bias_flags = 0; // table still lists the biases
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
  CHECK_THAT(msg, Contains("not an ELF file") && !Contains("archive"));
  // A static archive (what a build's .a is) says so.
  {
    std::FILE *f = std::fopen(buf.data(), "wb");
    REQUIRE(f);
    std::fputs("!<arch>\n/               0           0     0     0       4         `\nabcd", f);
    std::fclose(f);
  }
  CHECK_FALSE(k.load(buf.data(), msg, err));
  CHECK(err == LoadError::OpenFailed);
  CHECK_THAT(msg, Contains("a static archive (ar)"));
  std::remove(buf.data());
  // An empty path is not "./" (a directory).
  CHECK_FALSE(k.load("", msg, err));
  CHECK(err == LoadError::OpenFailed);
  CHECK(msg == "an empty path names no library");
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

//===----------------------------------------------------------------------===//
// Kernel::load on a real library: tests/support/fake_kernel.c, corrupted
// through ATTNC_FAKE_KERNEL.
//===----------------------------------------------------------------------===//

namespace {

/// Sets ATTNC_FAKE_KERNEL for the scope of one load.
struct FakeEnv {
  explicit FakeEnv(const char *v) { setenv("ATTNC_FAKE_KERNEL", v, 1); }
  ~FakeEnv() { unsetenv("ATTNC_FAKE_KERNEL"); }
};

struct LoadResult {
  bool ok;
  LoadError err;
  std::string msg;
};

LoadResult loadFake(Kernel &k, const char *corruption) {
  FakeEnv env(corruption);
  LoadResult r;
  r.ok = k.load(ATTNC_FAKE_KERNEL_PATH, r.msg, r.err);
  return r;
}

} // namespace

TEST_CASE("loader: the hand-written v2 kernel loads, packs and runs",
          "[metadata][loader]") {
  Kernel k;
  LoadResult r = loadFake(k, "");
  REQUIRE(r.ok);
  CHECK(r.err == LoadError::None);
  CHECK(std::string(k.info().name) == "fake_attn");
  CHECK(k.selectedIsa() == ATTNC_ISA_X86_64);
  std::mt19937_64 rng(3);
  BlockParams p = paramsFromInfo(k.info());
  auto w = randomWeights(storageTensors(p), rng);
  std::vector<const float *> wp;
  for (auto &v : w)
    wp.push_back(v.data());
  std::vector<unsigned char> packed;
  REQUIRE(k.packFloat(wp, packed) == ATTNC_OK);
  CHECK(int64_t(packed.size()) == k.packedBytes());
  std::vector<float> x = randomNormal(2 * 5 * 16, rng), y(2 * 5 * 16);
  std::vector<unsigned char> ws;
  REQUIRE(k.forward(packed.data(), x.data(), y.data(), 2, 5, ws) == ATTNC_OK);
  std::vector<double> ref = interpret(p, wp, x.data(), 2, 5);
  CompareResult c = compare(y.data(), ref.data(), int64_t(y.size()), 1e-5, 1e-4);
  CHECK(c.ok);
}

TEST_CASE("loader: packFloat refuses a weight f16 cannot hold", "[metadata][loader]") {
  // weight_dtype f16 (2): 65519 rounds to 65504 and is packed; 70000 would
  // be inf. Only the refusal is called here (the fake kernel's pack copies
  // float32 bytes).
  Kernel k;
  LoadResult r = loadFake(k, "weight_dtype=2");
  INFO(r.msg);
  REQUIRE(r.ok);
  std::mt19937_64 rng(4);
  BlockParams p = paramsFromInfo(k.info());
  auto w = randomWeights(storageTensors(p), rng);
  w[2][3] = 70000.0f;
  std::vector<const float *> wp;
  for (auto &v : w)
    wp.push_back(v.data());
  std::vector<unsigned char> packed;
  CHECK(k.packFloat(wp, packed) == ATTNC_ERR_ARGS);
  CHECK(attnrt::firstOutOfRange(ATTNC_DTYPE_F16, w[2].data(), int64_t(w[2].size())) == 3);
  CHECK(packed.empty());
}

TEST_CASE("loader: corrupt metadata in a library is refused",
          "[metadata][loader]") {
  struct Case {
    const char *corruption;
    const char *message;
  } cases[] = {
      {"packed_bytes=1", "packed_bytes is 1, expected between 4352"},
      {"packed_bytes=1099511627776", "packed_bytes is 1099511627776"},
      {"scale=-1", "scale -1 is outside [FLT_MIN, 1e6]"},
      {"scale=3.4e39", "scale 3.4e+39 is outside [FLT_MIN, 1e6]"},
      {"scale=1e300", "scale 1e+300 is outside [FLT_MIN, 1e6]"},
      {"mask=10", "unknown mask value 10"},
      {"mask=2", "padding mask needs the lengths feature"},
      {"isa=9", "unknown isa value 9"},
      {"dtype=5", "unknown dtype value 5"},
      {"layout=3", "unknown weight_layout value 3"},
      {"causal_align=2", "unknown causal_align value 2"},
      {"features=256", "unknown features bits 0x100"},
      // The checksum bit on a file without the section: never unchecked.
      {"features=128", "features declares a checksum, but the file has no "
                       ".attnc.checksum section (corrupt library)"},
      {"isa=5", "isa cuda-sm80 needs the cuda feature"},
      {"features=16", "features declares cuda, but isa x86-64 is a CPU"},
      {"isa=6,features=16,selected_isa=5",
       "selected_isa() returned 5, neither the kernel's isa (cuda-sm90) nor "
       "none"},
      {"isa=6,features=16,selected_isa=0", "selected_isa() returned 0"},
      {"selected_isa=6", "selected_isa() returned 6, not a known instruction set"},
      {"num_weights=4000000000", "weights table has 4000000000 entries"},
      {"num_weights=3", "weights table has 3 entries, expected 4"},
      {"out_dim=17", "out_dim is 17, expected 16"},
      {"workspace_per_row=-1", "workspace_per_row is -1"},
      {"workspace_fixed=4611686018427387904", "workspace_fixed is"},
      {"stack_bytes=-8", "stack_bytes is -8"},
      {"max_seq_len=-1", "max_seq_len must be in [0, 2^24] (0: none), got -1"},
      {"long_name", "kernel name is longer than 256 bytes"},
      {"unterminated_name", "target_cpu is longer than 256 bytes"},
      {"null_triple", "target_triple is null"},
      {"no_selected_isa", "selected_isa is null"},
      {"selected_isa=4", "selected_isa() returned 4, not a known instruction set"},
      {"selected_isa=77", "selected_isa() returned 77, not a known instruction set"},
  };
  for (const Case &c : cases) {
    INFO("ATTNC_FAKE_KERNEL=" << c.corruption);
    Kernel k;
    LoadResult r = loadFake(k, c.corruption);
    CHECK_FALSE(r.ok);
    CHECK(r.err == LoadError::BadMetadata);
    CHECK_THAT(r.msg, Contains(c.message));
    CHECK_THAT(r.msg, Contains(ATTNC_FAKE_KERNEL_PATH));
  }
}

TEST_CASE("loader: a library rebuilt at the path it was loaded from loads afresh",
          "[metadata][loader]") {
  // dlopen hands back an object it has mapped under the same name: the
  // second load must read the file that is there now (a private copy).
  const char *other = "/lib/x86_64-linux-gnu/libm.so.6"; // any non-kernel ELF
  if (access(other, R_OK) != 0) {
    WARN("no " << other << ": skipped");
    return;
  }
  char dir[] = "/tmp/attnc-reload-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string lib = std::string(dir) + "/k.so", next = lib + ".new";
  auto copyOver = [&](const char *from) { // a new file renamed over lib
    std::ifstream in(from, std::ios::binary);
    std::ofstream(next, std::ios::binary) << in.rdbuf();
    REQUIRE(std::rename(next.c_str(), lib.c_str()) == 0);
  };
  copyOver(ATTNC_FAKE_KERNEL_PATH);
  std::string msg;
  LoadError err = LoadError::None;
  Kernel first;
  REQUIRE(first.load(lib, msg, err));
  copyOver(other);
  {
    Kernel second;
    CHECK_FALSE(second.load(lib, msg, err));
    CHECK(err == LoadError::NoQuery);
    CHECK_THAT(msg, Contains(lib + ": not an attnc kernel"));
  }
  copyOver(ATTNC_FAKE_KERNEL_PATH);
  {
    Kernel third;
    CHECK(third.load(lib, msg, err));
    CHECK(std::string(third.info().name) == first.info().name);
  }
  std::remove(lib.c_str());
  rmdir(dir);
}

TEST_CASE("loader: NAME_workspace_size is checked against the metadata",
          "[metadata][loader]") {
  Kernel k;
  std::string why;
  {
    LoadResult r = loadFake(k, "workspace_size=4611686018427387904");
    REQUIRE(r.ok); // the entry point is only called per shape
    // The fake reads its override at query time, which load did.
    CHECK(k.workspaceBytes(1, 4, why) == -1);
    CHECK_THAT(why, Contains("fake_attn_workspace_size(1, 4, 4) returned "
                             "4611686018427387904 bytes, more than the "
                             "metadata allows"));
    std::vector<unsigned char> ws;
    std::vector<float> x(64), y(64), packed(size_t(k.packedBytes() / 4));
    CHECK(k.forward(packed.data(), x.data(), y.data(), 1, 4, ws) ==
          ATTNC_ERR_WORKSPACE);
    CHECK(ws.empty()); // nothing allocated
  }
  {
    LoadResult r = loadFake(k, "workspace_size=-3");
    REQUIRE(r.ok);
    CHECK(k.workspaceBytes(1, 4, why) == -1);
    CHECK_THAT(why, Contains("returned -3 (shape refused)"));
  }
  {
    // Honest: B*T*per_row*4 rounded to 64 per buffer fits the limit.
    LoadResult r = loadFake(k, "");
    REQUIRE(r.ok);
    for (int64_t b : {1, 3})
      for (int64_t t : {1, 7, 97}) {
        int64_t need = k.workspaceBytes(b, t, why);
        INFO("b " << b << " t " << t << ": " << why);
        CHECK(need > 0);
        CHECK(need <= b * t * k.info().workspace_per_row * 4 + 1024);
      }
  }
}

TEST_CASE("loader: shapes are checked before the library is called",
          "[metadata][loader]") {
  Kernel k;
  LoadResult r = loadFake(k, "max_seq_len=1024");
  REQUIRE(r.ok);
  std::string why;
  CHECK_FALSE(k.checkShape(1, 1025, why));
  CHECK(why == "seq_len 1025 exceeds the kernel's max_seq_len 1024");
  CHECK_FALSE(k.checkShape(0, 4, why));
  CHECK_THAT(why, Contains("at least 1"));
  CHECK_FALSE(k.checkShape(4, 0, why));
  {
    std::vector<float> x(64), y(64), packed(size_t(k.packedBytes() / 4));
    std::vector<unsigned char> ws;
    CHECK(k.forward(packed.data(), x.data(), y.data(), 0, 4, ws) ==
          ATTNC_ERR_BAD_SHAPE);
    CHECK(k.forward(packed.data(), x.data(), y.data(), 1, 1025, ws) ==
          ATTNC_ERR_BAD_SHAPE);
    CHECK(ws.empty());
  }
  r = loadFake(k, ""); // no max_seq_len
  REQUIRE(r.ok);
  CHECK(k.checkShape(1, 1000000000000, why)); // the library decides
  CHECK_FALSE(k.checkShape(int64_t(1) << 32, int64_t(1) << 32, why));
  CHECK_THAT(why, Contains("overflows a 64-bit byte count"));
  CHECK_FALSE(k.checkShape(4611686018427387904, 4, why));
  CHECK_THAT(why, Contains("overflows"));
  // workspace_per_row * B * T overflows although B*T*d_model*4 does not.
  CHECK(k.workspaceBytes(int64_t(1) << 28, int64_t(1) << 28, why) == -1);
  CHECK_THAT(why, Contains("the workspace for batch 268435456, seq_len "
                           "268435456 overflows a 64-bit byte count"));
}

TEST_CASE("loader: a directory or a FIFO is not opened as a library",
          "[metadata][loader]") {
  Kernel k;
  std::string msg;
  LoadError err = LoadError::None;
  CHECK_FALSE(k.load("/tmp", msg, err));
  CHECK(err == LoadError::OpenFailed);
  CHECK(msg == "/tmp: cannot load kernel library: is a directory, not a "
               "regular file");
  CHECK_FALSE(k.load("/dev/zero", msg, err));
  CHECK(err == LoadError::OpenFailed);
  CHECK_THAT(msg, Contains("not a regular file"));
}

TEST_CASE("checked size arithmetic refuses overflow and negatives",
          "[metadata][checked]") {
  int64_t r = 0;
  CHECK(checkedMul(3, 4, r));
  CHECK(r == 12);
  CHECK(checkedMul(0, INT64_MAX, r));
  CHECK(r == 0);
  CHECK(checkedMul(int64_t(1) << 31, int64_t(1) << 31, r));
  CHECK(r == int64_t(1) << 62);
  CHECK_FALSE(checkedMul(int64_t(1) << 32, int64_t(1) << 31, r));
  CHECK_FALSE(checkedMul(4611686018427387904, 4, r));
  CHECK_FALSE(checkedMul(-1, 4, r));
  CHECK_FALSE(checkedMul(4, -1, r));
  CHECK(checkedAdd(INT64_MAX - 1, 1, r));
  CHECK(r == INT64_MAX);
  CHECK_FALSE(checkedAdd(INT64_MAX, 1, r));
  CHECK_FALSE(checkedAdd(-5, 10, r));
  CHECK(checkedProduct({}, r));
  CHECK(r == 1);
  CHECK(checkedProduct({2, 3, 5, 7}, r));
  CHECK(r == 210);
  // issue 10: batch 2^62 x seq 4 x d_model wraps to 0 unchecked.
  CHECK_FALSE(checkedProduct({4611686018427387904, 4, 768}, r));
  CHECK_FALSE(checkedProduct({1, 1000000000000, 768, 4, 1000000}, r));
  CHECK(checkedSum({1, 2, 3}, r));
  CHECK(r == 6);
  CHECK_FALSE(checkedSum({INT64_MAX, 0, 1}, r));
  CHECK_FALSE(checkedSum({1, -1}, r));
}

//===----------------------------------------------------------------------===//
// CUDA kernels: the fake kernel playing one (isa=6,features=16; it still
// computes on the host), so the device path's argument handling is tested
// without a GPU.
//===----------------------------------------------------------------------===//

TEST_CASE("loader: a CUDA kernel is never run on host memory",
          "[metadata][loader][cuda]") {
  for (const char *sel : {"isa=6,features=16,selected_isa=6",
                          "isa=6,features=16,selected_isa=0xffffffff"}) {
    INFO(sel);
    Kernel k;
    LoadResult r = loadFake(k, sel);
    REQUIRE(r.ok);
    CHECK(k.isCuda());
    std::string why;
    CHECK_FALSE(k.checkHost(why));
    CHECK(why == "kernel fake_attn targets cuda-sm90: its forward takes "
                 "device pointers (Kernel::forwardDevice; attnc-run --device "
                 "cuda)");
    std::vector<float> packed(size_t(k.packedBytes() / 4), 0.5f), x(2 * 16, 1.0f),
        y(2 * 16, 7.0f);
    std::vector<unsigned char> ws;
    CHECK(k.forward(packed.data(), x.data(), y.data(), 1, 2, ws) ==
          ATTNC_ERR_DEVICE);
    CHECK(k.forward(packed.data(), x.data(), y.data(), 1, 2, VariantInputs(),
                    nullptr, ws) == ATTNC_ERR_DEVICE);
    CHECK(ws.empty());
    for (float v : y)
      CHECK(v == 7.0f); // the library was not called
  }
  Kernel cpu;
  REQUIRE(loadFake(cpu, "").ok);
  CHECK_FALSE(cpu.isCuda());
  std::string why = "x";
  CHECK(cpu.checkHost(why));
  CHECK(why.empty());
}

TEST_CASE("loader: forwardDevice fills the args of a CUDA kernel",
          "[metadata][loader][cuda]") {
  Kernel k;
  LoadResult r = loadFake(k, "isa=6,features=16,selected_isa=6");
  REQUIRE(r.ok);
  std::mt19937_64 rng(5);
  BlockParams p = paramsFromInfo(k.info());
  auto w = randomWeights(storageTensors(p), rng);
  std::vector<const float *> wp;
  for (auto &v : w)
    wp.push_back(v.data());
  std::vector<unsigned char> packed;
  REQUIRE(k.packFloat(wp, packed) == ATTNC_OK); // NAME_pack: a host function
  const int64_t B = 2, T = 5;
  std::vector<float> x = randomNormal(B * T * 16, rng), y(B * T * 16);
  std::string why;
  const int64_t need = k.workspaceBytes(B, T, why);
  REQUIRE(need > 0);
  std::vector<unsigned char> ws(static_cast<size_t>(need));
  int stream = 0; // any non-null CUstream: the fake ignores it
  CHECK(k.forwardDevice(packed.data(), x.data(), y.data(), B, T, ws.data(),
                        need, nullptr, 0, &stream) == ATTNC_OK);
  std::vector<double> ref = interpret(p, wp, x.data(), B, T);
  CHECK(compare(y.data(), ref.data(), int64_t(y.size()), 1e-5, 1e-4).ok);
  // Refused without calling the library.
  CHECK(k.forwardDevice(packed.data(), x.data(), y.data(), B, T, ws.data(),
                        need - 1) == ATTNC_ERR_WORKSPACE);
  CHECK(k.forwardDevice(packed.data(), x.data(), y.data(), 0, T, ws.data(),
                        need) == ATTNC_ERR_BAD_SHAPE);
  CHECK(k.forwardDevice(packed.data(), x.data(), y.data(), B, T, ws.data(),
                        need, x.data(), T) == ATTNC_ERR_ARGS); // not cross
  // A CPU kernel takes host memory: Kernel::forward.
  Kernel cpu;
  REQUIRE(loadFake(cpu, "").ok);
  CHECK(cpu.forwardDevice(packed.data(), x.data(), y.data(), B, T, ws.data(),
                          need) == ATTNC_ERR_ARGS);
  // Cross-attention: x_kv is required. (The fake's metadata is global: the
  // last load configures it for every Kernel open on it.)
  Kernel cross;
  REQUIRE(loadFake(cross, "isa=6,features=18,selected_isa=6").ok);
  CHECK(cross.forwardDevice(packed.data(), x.data(), y.data(), B, T,
                            ws.data(), need) == ATTNC_ERR_NULL_ARG);
  std::vector<float> xKv = randomNormal(B * 3 * 16, rng);
  const int64_t needKv = cross.workspaceBytes(B, T, 3, why);
  REQUIRE(needKv > 0);
  std::vector<unsigned char> wsKv(static_cast<size_t>(needKv));
  CHECK(cross.forwardDevice(packed.data(), x.data(), y.data(), B, T,
                            wsKv.data(), needKv, xKv.data(), 3) == ATTNC_OK);
  VariantInputs in;
  in.xKv = xKv.data();
  in.kvSeqLen = 3;
  std::vector<double> refKv =
      interpret(paramsFromInfo(cross.info()), wp, x.data(), B, T, in);
  REQUIRE(refKv.size() == y.size());
  CHECK(compare(y.data(), refKv.data(), int64_t(y.size()), 1e-5, 1e-4).ok);
  // The attention weights: refused by a kernel without the probs output
  // (the last load: cross, no probs), written by one with it, each row a
  // distribution over its keys.
  const Kernel::DeviceLengths noLen;
  const Kernel::DeviceCache noCache;
  std::vector<float> probs(static_cast<size_t>(B * k.info().heads * T * T), -1.0f);
  CHECK(cross.forwardDevice(packed.data(), x.data(), y.data(), B, T, wsKv.data(),
                            needKv, xKv.data(), 3, noLen, noCache, probs.data(),
                            nullptr) == ATTNC_ERR_ARGS);
  Kernel withProbs;
  REQUIRE(loadFake(withProbs, "isa=6,features=20,selected_isa=6").ok);
  CHECK(withProbs.forwardDevice(packed.data(), x.data(), y.data(), B, T, ws.data(),
                                need, nullptr, 0, noLen, noCache, probs.data(),
                                nullptr) == ATTNC_OK);
  for (int64_t r = 0; r < B * k.info().heads * T; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < T; ++j)
      sum += probs[static_cast<size_t>(r * T + j)];
    CHECK(sum == Catch::Detail::Approx(1.0).epsilon(1e-5));
  }
}

TEST_CASE("loader: forwardDevice checks the host lengths, passes the device "
          "ones", "[metadata][loader][cuda][variants]") {
  // cuda + lengths, mask padding: the fake reads args->lengths, which here
  // must be the "device" copy (host memory all the same).
  Kernel k;
  LoadResult r = loadFake(k, "isa=6,features=17,selected_isa=6,mask=2");
  REQUIRE(r.ok);
  std::mt19937_64 rng(9);
  BlockParams p = paramsFromInfo(k.info());
  auto w = randomWeights(storageTensors(p), rng);
  std::vector<const float *> wp;
  for (auto &v : w)
    wp.push_back(v.data());
  std::vector<unsigned char> packed;
  REQUIRE(k.packFloat(wp, packed) == ATTNC_OK);
  const int64_t B = 3, T = 6;
  std::vector<float> x = randomNormal(B * T * 16, rng), y(B * T * 16);
  std::string why;
  const int64_t need = k.workspaceBytes(B, T, why);
  REQUIRE(need > 0);
  std::vector<unsigned char> ws(static_cast<size_t>(need));
  // Different (valid) values in the two copies: y follows the device one.
  std::vector<int32_t> dev = {6, 2, 0}, host = {6, 6, 6};
  Kernel::DeviceLengths len;
  len.lengths = dev.data();
  len.hostLengths = host.data();
  CHECK(k.forwardDevice(packed.data(), x.data(), y.data(), B, T, ws.data(),
                        need, nullptr, 0, len) == ATTNC_OK);
  VariantInputs in;
  in.lengths = dev.data();
  std::vector<double> ref = interpret(p, wp, x.data(), B, T, in);
  CHECK(compare(y.data(), ref.data(), int64_t(y.size()), 1e-5, 1e-4).ok);
  // The host copy is what is checked: out of range (or negative) is
  // refused without calling the library, whatever the device copy holds.
  std::fill(y.begin(), y.end(), 7.0f);
  for (std::vector<int32_t> bad : {std::vector<int32_t>{6, 7, 0},
                                   std::vector<int32_t>{-1, 2, 0}}) {
    len.hostLengths = bad.data();
    CHECK(k.forwardDevice(packed.data(), x.data(), y.data(), B, T, ws.data(),
                          need, nullptr, 0, len) == ATTNC_ERR_ARGS);
    VariantInputs hostIn;
    hostIn.lengths = bad.data();
    CHECK_FALSE(k.checkVariants(B, T, hostIn, nullptr, why));
    CHECK_THAT(why, Contains(bad[0] < 0 ? "lengths[0] is -1, expected 0..6"
                                        : "lengths[1] is 7, expected 0..6"));
  }
  // One copy without the other.
  len.hostLengths = nullptr;
  CHECK(k.forwardDevice(packed.data(), x.data(), y.data(), B, T, ws.data(),
                        need, nullptr, 0, len) == ATTNC_ERR_NULL_ARG);
  len.lengths = nullptr;
  len.hostLengths = host.data();
  CHECK(k.forwardDevice(packed.data(), x.data(), y.data(), B, T, ws.data(),
                        need, nullptr, 0, len) == ATTNC_ERR_NULL_ARG);
  // kv_lengths on self-attention.
  len = Kernel::DeviceLengths();
  len.kvLengths = len.hostKvLengths = dev.data();
  CHECK(k.forwardDevice(packed.data(), x.data(), y.data(), B, T, ws.data(),
                        need, nullptr, 0, len) == ATTNC_ERR_ARGS);
  for (float v : y)
    CHECK(v == 7.0f); // the library was not called
  // A kernel without the lengths feature refuses them.
  Kernel plain;
  REQUIRE(loadFake(plain, "isa=6,features=16,selected_isa=6").ok);
  len = Kernel::DeviceLengths();
  len.lengths = len.hostLengths = dev.data();
  CHECK(plain.forwardDevice(packed.data(), x.data(), y.data(), B, T,
                            ws.data(), need, nullptr, 0, len) ==
        ATTNC_ERR_ARGS);

  // Cross-attention: kv_lengths are checked against kv_seq_len.
  Kernel cross;
  REQUIRE(loadFake(cross, "isa=6,features=19,selected_isa=6,mask=2").ok);
  const int64_t Tkv = 4;
  std::vector<float> xKv = randomNormal(B * Tkv * 16, rng);
  const int64_t needKv = cross.workspaceBytes(B, T, Tkv, why);
  REQUIRE(needKv > 0);
  std::vector<unsigned char> wsKv(static_cast<size_t>(needKv));
  std::vector<int32_t> kvDev = {4, 1, 3}, kvHost = {4, 1, 3},
                       kvBad = {4, 5, 3};
  len = Kernel::DeviceLengths();
  len.lengths = len.hostLengths = dev.data();
  len.kvLengths = kvDev.data();
  len.hostKvLengths = kvHost.data();
  CHECK(cross.forwardDevice(packed.data(), x.data(), y.data(), B, T,
                            wsKv.data(), needKv, xKv.data(), Tkv, len) ==
        ATTNC_OK);
  VariantInputs cin;
  cin.lengths = dev.data();
  cin.xKv = xKv.data();
  cin.kvSeqLen = Tkv;
  cin.kvLengths = kvDev.data();
  std::vector<double> refKv =
      interpret(paramsFromInfo(cross.info()), wp, x.data(), B, T, cin);
  REQUIRE(refKv.size() == y.size());
  CHECK(compare(y.data(), refKv.data(), int64_t(y.size()), 1e-5, 1e-4).ok);
  len.hostKvLengths = kvBad.data(); // 5 > T_kv = 4
  CHECK(cross.forwardDevice(packed.data(), x.data(), y.data(), B, T,
                            wsKv.data(), needKv, xKv.data(), Tkv, len) ==
        ATTNC_ERR_ARGS);
}

//===----------------------------------------------------------------------===//
// KV-cache decode through the fake (features with ATTNC_FEATURE_DECODE):
// Kernel::decode's struct size, and the device path (forwardDevice with a
// DeviceCache, decodeDevice) with "device" pointers that are host memory.
//===----------------------------------------------------------------------===//

namespace {

/// Weights, packed buffer and x [B, T, 16] for the fake.
struct FakeInputs {
  std::vector<std::vector<float>> w;
  std::vector<const float *> wp;
  std::vector<unsigned char> packed;
  std::vector<float> x;
};

FakeInputs fakeInputs(const Kernel &k, int64_t B, int64_t T, uint64_t seed) {
  FakeInputs in;
  std::mt19937_64 rng(seed);
  in.w = randomWeights(storageTensors(paramsFromInfo(k.info())), rng);
  for (auto &v : in.w)
    in.wp.push_back(v.data());
  REQUIRE(k.packFloat(in.wp, in.packed) == ATTNC_OK);
  in.x = randomNormal(B * T * 16, rng);
  return in;
}

} // namespace

TEST_CASE("loader: prefill then decode steps equal one forward",
          "[metadata][loader][decode]") {
  for (const char *sel : {"features=8"}) {
    INFO(sel);
    Kernel k;
    REQUIRE(loadFake(k, sel).ok);
    REQUIRE(k.hasDecode());
    const int64_t B = 2, T = 6, P = 4;
    FakeInputs in = fakeInputs(k, B, T, 21);
    const int64_t cacheFloats = B * 2 * T * 8;
    std::vector<float> kc(static_cast<size_t>(cacheFloats)), vc(kc);
    std::vector<float> xp(static_cast<size_t>(B * P * 16)), yp(xp.size()),
        y(static_cast<size_t>(B * T * 16));
    for (int64_t b = 0; b < B; ++b)
      std::copy_n(in.x.data() + b * T * 16, P * 16, xp.data() + b * P * 16);
    VariantInputs pv;
    pv.kCache = kc.data();
    pv.vCache = vc.data();
    pv.cacheLen = T;
    std::vector<unsigned char> ws;
    REQUIRE(k.forward(in.packed.data(), xp.data(), yp.data(), B, P, pv,
                      nullptr, ws) == ATTNC_OK);
    for (int64_t b = 0; b < B; ++b)
      std::copy_n(yp.data() + b * P * 16, P * 16, y.data() + b * T * 16);
    std::vector<float> xt(static_cast<size_t>(B * 16)), yt(xt.size());
    std::vector<int32_t> pos(static_cast<size_t>(B));
    std::vector<unsigned char> dws;
    for (int64_t t = P; t < T; ++t) {
      for (int64_t b = 0; b < B; ++b) {
        std::copy_n(in.x.data() + (b * T + t) * 16, 16, xt.data() + b * 16);
        pos[static_cast<size_t>(b)] = int32_t(t);
      }
      REQUIRE(k.decode(in.packed.data(), xt.data(), yt.data(), B, 1, pos.data(),
                       kc.data(), vc.data(), T, dws) == ATTNC_OK);
      for (int64_t b = 0; b < B; ++b)
        std::copy_n(yt.data() + b * 16, 16, y.data() + (b * T + t) * 16);
    }
    std::vector<double> ref =
        interpret(paramsFromInfo(k.info()), in.wp, in.x.data(), B, T);
    CHECK(compare(y.data(), ref.data(), int64_t(y.size()), 1e-5, 1e-4).ok);
    // A CPU kernel takes host memory: decodeDevice refuses it.
    std::vector<unsigned char> w2(4096);
    CHECK(k.decodeDevice(in.packed.data(), xt.data(), yt.data(), B, 1, pos.data(),
                         pos.data(), kc.data(), vc.data(), T, w2.data(),
                         int64_t(w2.size())) == ATTNC_ERR_ARGS);
    Kernel::DeviceCache dc;
    dc.kCache = kc.data();
    dc.vCache = vc.data();
    dc.cacheLen = T;
    CHECK(k.forwardDevice(in.packed.data(), xp.data(), yp.data(), B, P,
                          w2.data(), int64_t(w2.size()), nullptr, 0,
                          Kernel::DeviceLengths(), dc) == ATTNC_ERR_ARGS);
  }
}

TEST_CASE("loader: forwardDevice fills device caches, decodeDevice checks "
          "the host positions and passes the device ones",
          "[metadata][loader][cuda][decode]") {
  // decode and cuda: the fake reads the "device" buffers (host memory).
  Kernel k;
  REQUIRE(loadFake(k, "isa=6,features=24,selected_isa=6").ok);
  REQUIRE(k.isCuda());
  REQUIRE(k.hasDecode());
  const int64_t B = 2, T = 7, P = 4;
  FakeInputs in = fakeInputs(k, B, T, 33);
  const int64_t cacheFloats = B * 2 * T * 8;
  std::vector<float> kc(static_cast<size_t>(cacheFloats), 0.0f), vc(kc);
  std::vector<float> xp(static_cast<size_t>(B * P * 16)), yp(xp.size()),
      y(static_cast<size_t>(B * T * 16));
  for (int64_t b = 0; b < B; ++b)
    std::copy_n(in.x.data() + b * T * 16, P * 16, xp.data() + b * P * 16);
  std::string why;
  const int64_t need = k.workspaceBytes(B, P, why);
  REQUIRE(need > 0);
  std::vector<unsigned char> ws(static_cast<size_t>(need));
  Kernel::DeviceCache dc;
  dc.kCache = kc.data();
  dc.vCache = vc.data();
  dc.cacheLen = T;
  int stream = 0; // any non-null CUstream: the fake ignores it
  REQUIRE(k.forwardDevice(in.packed.data(), xp.data(), yp.data(), B, P,
                          ws.data(), need, nullptr, 0, Kernel::DeviceLengths(),
                          dc, &stream) == ATTNC_OK);
  for (int64_t b = 0; b < B; ++b)
    std::copy_n(yp.data() + b * P * 16, P * 16, y.data() + b * T * 16);
  // forward wrote rows [0, P) of every (sequence, head), nothing past them.
  auto row = [&](const std::vector<float> &c, int64_t b, int64_t h,
                 int64_t t) { return c.data() + ((b * 2 + h) * T + t) * 8; };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < 2; ++h) {
      CHECK(row(kc, b, h, P - 1)[0] != 0.0f);
      CHECK(row(vc, b, h, P - 1)[0] != 0.0f);
      CHECK(row(kc, b, h, P)[0] == 0.0f);
    }
  const int64_t dneed = k.decodeWorkspaceBytes(B, 1, T, why);
  REQUIRE(dneed > 0);
  std::vector<unsigned char> dws(static_cast<size_t>(dneed));
  std::vector<float> xt(static_cast<size_t>(B * 16)), yt(xt.size());
  std::vector<int32_t> dev(static_cast<size_t>(B)), host(dev);
  for (int64_t t = P; t < T; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      std::copy_n(in.x.data() + (b * T + t) * 16, 16, xt.data() + b * 16);
      dev[static_cast<size_t>(b)] = host[static_cast<size_t>(b)] = int32_t(t);
    }
    REQUIRE(k.decodeDevice(in.packed.data(), xt.data(), yt.data(), B, 1,
                           dev.data(), host.data(), kc.data(), vc.data(), T,
                           dws.data(), dneed, &stream) == ATTNC_OK);
    for (int64_t b = 0; b < B; ++b)
      std::copy_n(yt.data() + b * 16, 16, y.data() + (b * T + t) * 16);
  }
  std::vector<double> ref =
      interpret(paramsFromInfo(k.info()), in.wp, in.x.data(), B, T);
  CHECK(compare(y.data(), ref.data(), int64_t(y.size()), 1e-5, 1e-4).ok);

  // The host copy is what is checked, the device copy what the kernel
  // reads: refused without calling the library (y and the caches keep
  // their values).
  const std::vector<float> kc0 = kc, vc0 = vc;
  std::fill(yt.begin(), yt.end(), 7.0f);
  auto step = [&](const int32_t *d, const int32_t *h, float *kp, float *vp,
                  int64_t batch, int64_t cacheLen, void *w, int64_t wb) {
    return k.decodeDevice(in.packed.data(), xt.data(), yt.data(), batch, 1, d, h,
                          kp, vp, cacheLen, w, wb);
  };
  for (std::vector<int32_t> bad : {std::vector<int32_t>{0, int32_t(T)},
                                   std::vector<int32_t>{-1, 0}}) {
    CHECK(step(dev.data(), bad.data(), kc.data(), vc.data(), B, T, dws.data(),
               dneed) == ATTNC_ERR_ARGS);
  }
  CHECK(step(nullptr, host.data(), kc.data(), vc.data(), B, T, dws.data(),
             dneed) == ATTNC_ERR_NULL_ARG);
  CHECK(step(dev.data(), nullptr, kc.data(), vc.data(), B, T, dws.data(),
             dneed) == ATTNC_ERR_NULL_ARG);
  CHECK(step(dev.data(), host.data(), nullptr, vc.data(), B, T, dws.data(),
             dneed) == ATTNC_ERR_NULL_ARG);
  CHECK(step(dev.data(), host.data(), kc.data(), kc.data(), B, T, dws.data(),
             dneed) == ATTNC_ERR_ARGS);
  CHECK(step(dev.data(), host.data(), kc.data(), vc.data(), 0, T, dws.data(),
             dneed) == ATTNC_ERR_BAD_SHAPE);
  CHECK(step(dev.data(), host.data(), kc.data(), vc.data(), B, 0, dws.data(),
             dneed) == ATTNC_ERR_BAD_SHAPE);
  CHECK(step(dev.data(), host.data(), kc.data(), vc.data(), B, T, dws.data(),
             dneed - 1) == ATTNC_ERR_WORKSPACE);
  CHECK(step(dev.data(), host.data(), kc.data(), vc.data(), B, T, nullptr,
             dneed) == ATTNC_ERR_WORKSPACE);
  for (float v : yt)
    CHECK(v == 7.0f);
  CHECK(kc == kc0);
  CHECK(vc == vc0);
  // Two valid copies that differ: the kernel writes the device copy's row.
  std::vector<int32_t> devPos = {2, 2}, hostPos = {0, 0};
  std::fill(kc.begin(), kc.end(), 0.0f);
  CHECK(step(devPos.data(), hostPos.data(), kc.data(), vc.data(), B, T,
             dws.data(), dneed) == ATTNC_OK);
  CHECK(row(kc, 0, 0, 2)[0] != 0.0f);
  CHECK(row(kc, 0, 0, 0)[0] == 0.0f);

  // forwardDevice's cache refusals, without calling the library.
  std::fill(yp.begin(), yp.end(), 7.0f);
  auto fwd = [&](float *kp, float *vp, int64_t cacheLen) {
    Kernel::DeviceCache c;
    c.kCache = kp;
    c.vCache = vp;
    c.cacheLen = cacheLen;
    return k.forwardDevice(in.packed.data(), xp.data(), yp.data(), B, P,
                           ws.data(), need, nullptr, 0,
                           Kernel::DeviceLengths(), c);
  };
  CHECK(fwd(kc.data(), nullptr, T) == ATTNC_ERR_NULL_ARG);
  CHECK(fwd(nullptr, nullptr, T) == ATTNC_ERR_BUFFER_SIZE);
  CHECK(fwd(kc.data(), kc.data(), T) == ATTNC_ERR_ARGS);
  CHECK(fwd(kc.data(), vc.data(), P - 1) == ATTNC_ERR_BAD_SHAPE);
  for (float v : yp)
    CHECK(v == 7.0f);
  // The host path refuses a CUDA kernel's decode.
  std::vector<unsigned char> hostWs;
  CHECK(k.decode(in.packed.data(), xt.data(), yt.data(), B, 1, host.data(),
                 kc.data(), vc.data(), T, hostWs) == ATTNC_ERR_DEVICE);
  CHECK(hostWs.empty());

  // A kernel without decode refuses the decode entry and a cache. (The
  // fake's metadata is global: the last load configures it for every
  // Kernel open on it.)
  Kernel plain;
  REQUIRE(loadFake(plain, "isa=6,features=16,selected_isa=6").ok);
  CHECK_FALSE(plain.hasDecode());
  CHECK(plain.decodeDevice(in.packed.data(), xt.data(), yt.data(), B, 1,
                           dev.data(), host.data(), kc.data(), vc.data(), T,
                           dws.data(), dneed) == ATTNC_ERR_ARGS);
  Kernel::DeviceCache c;
  c.kCache = kc.data();
  c.vCache = vc.data();
  c.cacheLen = T;
  CHECK(plain.forwardDevice(in.packed.data(), xp.data(), yp.data(), B, P,
                            ws.data(), need, nullptr, 0,
                            Kernel::DeviceLengths(), c) == ATTNC_ERR_ARGS);
}

TEST_CASE("cuda: no driver is a clear error, never a crash", "[cuda]") {
  // The driver is loaded once per process: this is the only test that
  // loads it, from a file that does not exist.
  setenv("ATTNC_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  std::string msg;
  CHECK(cuda::loadDriver(msg) == ATTNC_ERR_NO_DRIVER);
  CHECK_THAT(msg, Catch::Matchers::StartsWith(
                      "no CUDA driver: /nonexistent/libcuda.so.1: "));
  cuda::Device dev;
  CHECK(dev.open(0, msg) == ATTNC_ERR_NO_DRIVER);
  CHECK_THAT(msg, Catch::Matchers::StartsWith("no CUDA driver: "));
  CHECK_FALSE(dev.isOpen());
  std::string why;
  CHECK_FALSE(dev.synchronize(why));
  cuda::Buffer b;
  CHECK_FALSE(b.allocate(64, "x", why));
  CHECK(b.get() == nullptr);
  cuda::Event e;
  CHECK_FALSE(e.create(why));
  unsetenv("ATTNC_LIBCUDA");
}

TEST_CASE("metadata: the tensor-parallel fields are consistent", "[metadata]") {
  InfoFixture f(ATTNC_LAYOUT_SEPARATE);
  // Rank 1 of 2: 2 of the block's 4 query heads, 1 of its 2 kv heads.
  f.info.heads = 2;
  f.info.kv_heads = 1;
  f.info.tp_size = 2;
  f.info.tp_rank = 1;
  f.fillWeights();
  CHECK(f.check().empty());
  // The storage tensors are the block's whole ones.
  CHECK(f.tensors[0].dims[0] == 4 * 16);
  f.info.tp_rank = 2;
  CHECK(f.check() == "tensor-parallel rank 2 of 2 is out of range");
  f.info.tp_rank = 1;
  f.info.tp_heads = 6;
  CHECK(f.check() == "tp_heads 6 is not heads * tp_size (2 * 2)");
  f.info.tp_heads = 4;
  f.info.tp_kv_heads = 3;
  CHECK_THAT(f.check(), Contains("tp_kv_heads 3 is neither kv_heads * tp_size"));
  // Replicated: 4 ranks of one query head each over the block's 2 kv heads.
  f.info.heads = 1;
  f.info.kv_heads = 1;
  f.info.tp_size = 4;
  f.info.tp_rank = 3;
  f.info.tp_kv_heads = 2;
  f.fillWeights(/*keepTpKvHeads=*/true);
  CHECK(f.check().empty());
  CHECK(f.tensors[2].dims[0] == 2 * 16); // k_proj.weight: the block's 2 kv heads
}

TEST_CASE("metadata: the rope fields are consistent", "[metadata]") {
  InfoFixture f(ATTNC_LAYOUT_SEPARATE);
  static const double freq[8] = {1, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125};
  f.info.features |= ATTNC_FEATURE_ROPE;
  f.info.rope_style = ATTNC_ROPE_HALF_SPLIT;
  f.info.rotary_dim = 16;
  f.info.rope_pairs = 8;
  f.info.rope_inv_freq = freq;
  f.info.rope_attention_factor = 1;
  REQUIRE(f.check().empty());
  // Dynamic NTK: a factor with its max_position_embeddings.
  f.info.rope_dynamic_factor = 2;
  f.info.rope_dynamic_from = 4096;
  CHECK(f.check().empty());
  f.info.rope_dynamic_from = 0;
  CHECK(f.check() == "rope_dynamic_from must be positive with rope_dynamic_factor, got 0");
  f.info.rope_dynamic_from = 4096;
  f.info.rope_dynamic_factor = -1;
  CHECK(f.check() == "rope_dynamic_factor must be 0 or in (0, 1e6]");
  f.info.rope_dynamic_factor = 2;
  f.info.rope_long_inv_freq = freq;
  CHECK(f.check() == "rope_dynamic_factor and rope_long_inv_freq exclude each other");
  f.info.rope_long_inv_freq = nullptr;
  f.info.rotary_dim = 2;
  f.info.rope_pairs = 1;
  CHECK(f.check() == "rope_dynamic_factor needs rotary_dim >= 4, got 2");
  f.info.rotary_dim = 16;
  f.info.rope_pairs = 8;
  f.info.rope_dynamic_factor = 0;
  CHECK(f.check() == "rope_dynamic_from is set without rope_dynamic_factor");
  // Without the rope feature every rope field stays zero.
  f.info.rope_dynamic_factor = 2;
  f.info.features &= ~uint32_t(ATTNC_FEATURE_ROPE);
  f.info.rope_style = ATTNC_ROPE_NONE;
  f.info.rotary_dim = 0;
  f.info.rope_pairs = 0;
  f.info.rope_inv_freq = nullptr;
  CHECK(f.check() == "rope fields are set but features does not declare rope");
}

TEST_CASE("rope: dynamic NTK frequencies follow the call's length", "[metadata]") {
  // HF _compute_dynamic_ntk_parameters: base' = base * (f L / M - (f - 1))^(r / (r - 2)).
  RopeParams r;
  r.style = ATTNC_ROPE_HALF_SPLIT;
  r.rotaryDim = 8;
  const double base = 10000;
  for (int i = 0; i < 4; ++i)
    r.invFreq.push_back(std::pow(base, -2.0 * i / 8));
  r.dynamicFactor = 3;
  r.dynamicFrom = 100;
  CHECK(r.invFreqAt(100) == r.invFreq); // up to max_position_embeddings: as is
  const std::vector<double> f = r.invFreqAt(250);
  const double scaled = base * std::pow(3.0 * 250 / 100 - 2, 8.0 / 6);
  for (int i = 0; i < 4; ++i)
    CHECK(f[size_t(i)] == Approx(std::pow(scaled, -2.0 * i / 8)).epsilon(1e-13));
  CHECK(f[0] == 1.0);
  CHECK(f[3] < r.invFreq[3] * 0.5);
}

TEST_CASE("attnrt_huge_pages advises the aligned 2 MiB part and keeps the contents",
          "[runtime]") {
  const size_t huge = size_t(2) << 20, bytes = 7 * huge;
  // 10 MiB from 4 KiB past a 2 MiB boundary: the aligned part is the 8 MiB
  // [base + 2 MiB, base + 10 MiB).
  auto *base = static_cast<unsigned char *>(std::aligned_alloc(huge, bytes));
  REQUIRE(base);
  unsigned char *p = base + 4096;
  const size_t n = 5 * huge;
  for (size_t i = 0; i < n; ++i)
    p[i] = static_cast<unsigned char>(i * 31 + 7);
  // Where the kernel has transparent huge pages and the system allows them
  // (not "[never]") all of it is advised; elsewhere none.
  std::ifstream sys("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode((std::istreambuf_iterator<char>(sys)), std::istreambuf_iterator<char>());
  const size_t got = attnrt_huge_pages(p, n);
  CHECK(got == (!mode.empty() && mode.find("[never]") == std::string::npos ? 4 * huge : 0));
  bool same = true;
  for (size_t i = 0; i < n; ++i)
    same &= p[i] == static_cast<unsigned char>(i * 31 + 7);
  CHECK(same);
  CHECK(attnrt_huge_pages(p, huge) == 0);         // no whole aligned 2 MiB
  CHECK(attnrt_huge_pages(nullptr, bytes) == 0);
  ::setenv("ATTNC_HUGE_PAGES", "0", 1);
  CHECK(attnrt_huge_pages(p, n) == 0);
  ::unsetenv("ATTNC_HUGE_PAGES");
  std::free(base);
}
