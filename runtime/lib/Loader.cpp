//===- Loader.cpp - dlopen, metadata checks, pack and forward ---*- C++ -*-===//
//
// Kernel::load opens an attnc-generated shared object, asks it for its
// attnc_kernel_info through attnc_query, validates the record against what
// this runtime understands (validateInfo), and resolves the NAME_pack,
// NAME_workspace_size and NAME_forward entries. Each failure is classified as
// a LoadError so that callers can tell a missing file from an ABI skew from
// corrupt metadata.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Checked.h"
#include "attnc/runtime/Block.h"
#include "attnc/runtime/Runtime.h"
#include "attnc/runtime/Checksum.h"
#include "attnc/runtime/Files.h"
#include "attnc/runtime/Limits.h"
#include "attnc/runtime/attnrt_c.h"

#include <dlfcn.h>
#include <elf.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <tuple>
#include <cstdio>
#include <cstring>

#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>

namespace attnrt {

const char *toString(LoadError e) {
  switch (e) {
  case LoadError::None:
    return "none";
  case LoadError::OpenFailed:
    return "open_failed";
  case LoadError::NoQuery:
    return "no_query";
  case LoadError::AbiTooNew:
    return "abi_too_new";
  case LoadError::AbiMismatch:
    return "abi_mismatch";
  case LoadError::BadMetadata:
    return "bad_metadata";
  case LoadError::MissingEntry:
    return "missing_entry";
  }
  return "unknown";
}

bool isCudaIsa(uint32_t isa) {
  return isa == ATTNC_ISA_CUDA_SM80 || isa == ATTNC_ISA_CUDA_SM90;
}

const char *isaName(uint32_t isa) { return nameOf("isa", isa); }

std::string isaEnvProblem() {
  const char *env = std::getenv("ATTNC_ISA");
  if (!env || !*env)
    return "";
  for (const char *name : {"amxbf16", "avx512bf16", "avx512", "avx2", "x86-64", "x86-amx-bf16",
                           "x86-avx512-bf16", "x86-avx512", "x86-avx2"})
    if (strcasecmp(env, name) == 0)
      return "";
  std::string shown;
  for (const char *c = env; *c && shown.size() < 64; ++c)
    shown += (*c >= 0x20 && *c < 0x7f) ? *c : '?';
  if (std::strlen(env) > 64)
    shown += "...";
  return "ATTNC_ISA='" + shown +
         "' is not one of x86-amx-bf16, x86-avx512-bf16, x86-avx512, x86-avx2, x86-64 (or amxbf16, avx512bf16, avx512, avx2; case-insensitive; it caps the "
         "kernel's code path: unset it to let the library choose)";
}

int cudaSmOf(uint32_t isa) {
  switch (isa) {
  case ATTNC_ISA_CUDA_SM80: return 80;
  case ATTNC_ISA_CUDA_SM90: return 90;
  default: return 0;
  }
}

const char *statusText(int rc) {
  switch (rc) {
  case ATTNC_OK: return "ok";
  case ATTNC_ERR_NULL_ARG: return "a required pointer is NULL";
  case ATTNC_ERR_BAD_SHAPE: return "batch or seq_len out of range";
  case ATTNC_ERR_WORKSPACE: return "workspace too small";
  case ATTNC_ERR_BUFFER_SIZE: return "a buffer's size is not what the shapes need";
  case ATTNC_ERR_ISA: return "this CPU lacks the library's instruction sets";
  case ATTNC_ERR_THREADS: return "the thread pool failed";
  case ATTNC_ERR_ARGS: return "bad argument struct";
  case ATTNC_ERR_NO_DRIVER: return "no CUDA driver (libcuda.so.1 cannot be "
                                   "loaded, or cuInit failed)";
  case ATTNC_ERR_NO_DEVICE: return "no CUDA device, or the device is older "
                                   "than the kernel's sm";
  case ATTNC_ERR_DEVICE: return "a CUDA driver call failed, or a pointer "
                                "is not device memory";
  default: return "unknown status";
  }
}

namespace {

/// Sizes beyond this are certainly corrupt (and would overflow products).
constexpr int64_t kMaxDim = int64_t(1) << 24;
/// Longest string the runtime reads out of a library's metadata.
constexpr size_t kMaxString = 256;
/// Most storage tensors any layout has (separate with biases: 8).
constexpr uint32_t kMaxWeights = 16;
/// Bounds of the workspace and stack fields (generous: a corrupt record is
/// orders of magnitude off).
constexpr int64_t kMaxWorkspaceFixed = int64_t(1) << 32; // bytes
constexpr int64_t kMaxStackBytes = int64_t(64) << 20;    // bytes per thread
/// NAME_workspace_size may exceed workspace_fixed + B*T*per_row*4 by this
/// much: 64 bytes of alignment for each of up to 16 buffers.
constexpr int64_t kWorkspaceSlack = 64 * 16;

/// The length of `s` if it is a NUL-terminated string of at most kMaxString
/// bytes, else -1. Reads at most kMaxString + 1 bytes.
int64_t boundedLength(const char *s) {
  if (!s)
    return -1;
  size_t n = strnlen(s, kMaxString + 1);
  return n > kMaxString ? -1 : int64_t(n);
}

/// Printable ASCII only (messages and --info print these strings).
bool isPrintable(const char *s) {
  for (; *s; ++s)
    if (*s < 0x20 || *s > 0x7e)
      return false;
  return true;
}

bool isIdentifier(const char *s) {
  if (!s || !*s)
    return false;
  auto alpha = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!alpha(s[0]))
    return false;
  for (const char *p = s + 1; *p; ++p)
    if (!alpha(*p) && !(*p >= '0' && *p <= '9'))
      return false;
  return true;
}

std::string dimsString(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string num(int64_t v) { return std::to_string(v); }

/// The rope_* fields: "" when consistent (abi.h), else what is wrong.
std::string checkRope(const attnc_kernel_info &info) {
  const bool rope = (info.features & ATTNC_FEATURE_ROPE) != 0;
  if (!rope) {
    if (info.rope_style != ATTNC_ROPE_NONE || info.rope_pairs != 0 ||
        info.rotary_dim != 0 || info.rope_inv_freq || info.rope_long_inv_freq ||
        info.rope_dynamic_factor != 0 || info.rope_dynamic_from != 0)
      return "rope fields are set but features does not declare rope";
    return "";
  }
  if (info.rope_style != ATTNC_ROPE_HALF_SPLIT &&
      info.rope_style != ATTNC_ROPE_INTERLEAVED)
    return "unknown rope_style value " + std::to_string(info.rope_style);
  if (info.rotary_dim < 2 || info.rotary_dim % 2 != 0 ||
      info.rotary_dim > info.head_dim)
    return "rotary_dim " + num(info.rotary_dim) +
           " must be even and in [2, head_dim " + num(info.head_dim) + "]";
  if (int64_t(info.rope_pairs) * 2 != info.rotary_dim)
    return "rope_pairs " + std::to_string(info.rope_pairs) +
           " is not rotary_dim / 2";
  if (!info.rope_inv_freq)
    return "rope_inv_freq is null";
  for (const double *t : {info.rope_inv_freq, info.rope_long_inv_freq})
    for (uint32_t i = 0; t && i < info.rope_pairs; ++i)
      if (!std::isfinite(t[i]) || t[i] < 0)
        return "rope frequency table entry " + std::to_string(i) +
               " is not a finite non-negative number";
  if (info.rope_long_from < 0)
    return "rope_long_from must be non-negative, got " + num(info.rope_long_from);
  if (!std::isfinite(info.rope_attention_factor) ||
      !(info.rope_attention_factor > 0) ||
      info.rope_attention_factor > attnc::limits::kMaxRopeAttentionFactor)
    return "rope_attention_factor must be in (0, 1000]";
  if (info.rope_dynamic_factor != 0) {
    if (!std::isfinite(info.rope_dynamic_factor) || info.rope_dynamic_factor < 0 ||
        info.rope_dynamic_factor > 1e6)
      return "rope_dynamic_factor must be 0 or in (0, 1e6]";
    if (info.rope_dynamic_from < 1)
      return "rope_dynamic_from must be positive with rope_dynamic_factor, got " +
             num(info.rope_dynamic_from);
    if (info.rotary_dim < 4)
      return "rope_dynamic_factor needs rotary_dim >= 4, got " + num(info.rotary_dim);
    if (info.rope_long_inv_freq)
      return "rope_dynamic_factor and rope_long_inv_freq exclude each other";
  } else if (info.rope_dynamic_from != 0) {
    return "rope_dynamic_from is set without rope_dynamic_factor";
  }
  return "";
}

/// The tp_* fields: "" when consistent (abi.h), else what is wrong.
std::string checkTensorParallel(const attnc_kernel_info &info) {
  const int64_t n = info.tp_size;
  if (n < 1 || n > attnc::limits::kMaxHeads || info.tp_rank < 0 || info.tp_rank >= n)
    return "tensor-parallel rank " + std::to_string(info.tp_rank) + " of " +
           std::to_string(n) + " is out of range";
  if (info.tp_heads != info.heads * n)
    return "tp_heads " + num(info.tp_heads) + " is not heads * tp_size (" +
           num(info.heads) + " * " + num(n) + ")";
  const bool split = info.tp_kv_heads == info.kv_heads * n;
  const bool replicated = n > 1 && info.kv_heads == 1 && info.tp_kv_heads > 0 &&
                          n % info.tp_kv_heads == 0 && info.tp_heads % info.tp_kv_heads == 0;
  if (!split && !replicated)
    return "tp_kv_heads " + num(info.tp_kv_heads) + " is neither kv_heads * tp_size (" +
           num(info.kv_heads) + " * " + num(n) +
           ") nor a divisor of tp_size with one kv head per rank";
  if (n > 1 && (info.qk_norm & ATTNC_QK_NORM_WIDTH_MASK) == ATTNC_QK_NORM_PROJECTION)
    return "qk_norm over the whole projection cannot be split over tensor-parallel ranks";
  return "";
}

/// The kernel's name and strings: present, bounded, printable.
std::string checkNames(const attnc_kernel_info &info) {
  auto bad = [](std::string msg) { return msg; };
  if (!info.name)
    return bad("kernel name is null");
  if (boundedLength(info.name) < 0)
    return bad("kernel name is longer than " + std::to_string(kMaxString) +
               " bytes (or not terminated)");
  if (!isIdentifier(info.name))
    return bad("kernel name '" + std::string(info.name) +
               "' is not a valid C identifier");
  const std::pair<const char *, const char *> strings[] = {
      {"target_triple", info.target_triple},
      {"target_cpu", info.target_cpu},
      {"compiler_version", info.compiler_version}};
  for (const auto &str : strings) {
    if (!str.second)
      return bad(std::string(str.first) + " is null");
    if (boundedLength(str.second) < 0)
      return bad(std::string(str.first) + " is longer than " +
                 std::to_string(kMaxString) + " bytes (or not terminated)");
    if (!isPrintable(str.second))
      return bad(std::string(str.first) +
                 " contains non-printable characters");
  }
  return "";
}

/// The block's sizes within a spec's limits; mask, window and biases
/// consistent.
std::string checkSizes(const attnc_kernel_info &info) {
  auto bad = [](std::string msg) { return msg; };
  // The spec's own limits (attnc/runtime/Limits.h): what compiles, loads.
  const std::tuple<const char *, int64_t, int64_t> sizes[] = {
      {"d_model", info.d_model, attnc::limits::kMaxDModel},
      {"heads", info.heads, attnc::limits::kMaxHeads},
      {"kv_heads", info.kv_heads, attnc::limits::kMaxKvHeads},
      {"head_dim", info.head_dim, attnc::limits::kMaxHeadDim}};
  for (const auto &[what, value, max] : sizes) {
    if (value <= 0)
      return bad(std::string(what) + " must be positive, got " + num(value));
    if (value > max)
      return bad(std::string(what) + " is " + num(value) + ", more than a spec allows (" +
                 num(max) + ")");
  }
  if (info.heads % info.kv_heads != 0)
    return bad("heads (" + num(info.heads) +
               ") is not a multiple of kv_heads (" + num(info.kv_heads) + ")");
  // heads, kv_heads, head_dim <= 2^24: the products fit easily, but go
  // through the one helper anyway.
  int64_t qW = 0, kvW = 0; // checked: a bound for everything after
  if (!checkedMul(info.heads, info.head_dim, qW) ||
      !checkedMul(info.kv_heads, info.head_dim, kvW) || qW > kMaxDim ||
      kvW > kMaxDim)
    return bad("heads * head_dim is implausibly large (" +
               num(info.heads) + " * " + num(info.head_dim) + ")");
  if (info.mask > ATTNC_MASK_LAST)
    return bad("unknown mask value " + std::to_string(info.mask));
  if (info.causal_align > 1)
    return bad("unknown causal_align value " +
               std::to_string(info.causal_align) +
               " (0 = bottom_right, 1 = top_left)");
  if (info.window < 0)
    return bad("window must be non-negative, got " + num(info.window));
  if (info.window > attnc::limits::kMaxWindow)
    return bad("window is " + num(info.window) + ", more than a spec allows (2^24)");
  if (attnc_mask_sliding(info.mask) && info.window <= 0)
    return bad("a window mask (sliding_window, bidirectional_window) needs a positive window, got " +
               num(info.window));
  if (attnc_mask_chunked(info.mask) && info.window <= 0)
    return bad("chunked mask needs a positive chunk size (window), got " +
               num(info.window));
  if (!attnc_mask_sliding(info.mask) && !attnc_mask_chunked(info.mask) && info.window != 0)
    return bad("window is " + num(info.window) +
               " but the mask is not sliding_window or chunked");
  const uint32_t allBiases = ATTNC_BIAS_Q | ATTNC_BIAS_K | ATTNC_BIAS_V | ATTNC_BIAS_O;
  if (info.bias_flags & ~allBiases)
    return bad("unknown bias_flags bits " + std::to_string(info.bias_flags));
  if (!info.out_proj && (info.bias_flags & ATTNC_BIAS_O))
    return bad("bias_flags has an o bias but there is no out_proj");
  {
    const uint32_t qkv = info.bias_flags & (ATTNC_BIAS_Q | ATTNC_BIAS_K | ATTNC_BIAS_V);
    if (info.weight_layout != ATTNC_LAYOUT_SEPARATE && qkv != 0 &&
        qkv != (ATTNC_BIAS_Q | ATTNC_BIAS_K | ATTNC_BIAS_V))
      return bad("bias_flags gives some of q, k, v a bias, but the weight "
                 "layout fuses them into one tensor");
  }
  if (dtypeBytes(info.weight_dtype) == 0)
    return bad("unknown weight_dtype value " + std::to_string(info.weight_dtype));
  return "";
}

/// The score and projection features (soft-capping, ALiBi, the T5 bias,
/// sinks, QK-norm, clip_qkv): values in range, set only when declared.
std::string checkScoreFeatures(const attnc_kernel_info &info) {
  auto bad = [](std::string msg) { return msg; };
  if (info.features & ATTNC_FEATURE_SCORE_MODS) {
    if (!(info.softcap >= 0) || !std::isfinite(info.softcap) || info.softcap > 1e4)
      return bad("softcap must be 0 (none) or in (0, 10000]");
    if (info.alibi_slopes)
      for (int64_t h = 0; h < info.heads; ++h)
        if (!std::isfinite(info.alibi_slopes[h]))
          return bad("alibi_slopes entry " + num(h) + " is not finite");
    if (info.alibi_before_scale > 1 || (info.alibi_before_scale && !info.alibi_slopes))
      return bad("alibi_before_scale must be 0, or 1 with alibi_slopes");
    if (info.softcap == 0 && !info.alibi_slopes)
      return bad("features declares score_mods, but there is no softcap and no alibi_slopes");
  } else if (info.softcap != 0 || info.alibi_slopes || info.alibi_before_scale) {
    return bad("score modifier fields are set but features does not declare score_mods");
  }
  if (info.t5_num_buckets != 0) {
    if (info.t5_num_buckets < 2 || info.t5_num_buckets > 1024 || info.t5_max_distance < 2 ||
        info.t5_max_distance > 65536 || info.t5_bidirectional > 1)
      return bad("t5_num_buckets / t5_max_distance / t5_bidirectional out of range");
    if (info.weight_layout != ATTNC_LAYOUT_SEPARATE)
      return bad("a T5 relative bias needs the separate weight layout");
  } else if (info.t5_max_distance != 0 || info.t5_bidirectional != 0) {
    return bad("t5_max_distance / t5_bidirectional are set without t5_num_buckets");
  }
  if (info.rel_key_positions != 0) {
    if (info.rel_key_positions < 1 ||
        info.rel_key_positions > attnc::limits::kMaxRelKeyPositions || info.rel_key_query > 1)
      return bad("rel_key_positions must be in [0, 2^16] and rel_key_query 0 or 1");
    if (info.weight_layout != ATTNC_LAYOUT_SEPARATE)
      return bad("relative_key needs the separate weight layout");
    if (info.features & (ATTNC_FEATURE_DECODE | ATTNC_FEATURE_CROSS))
      return bad("relative_key goes with neither decode nor cross-attention");
  } else if (info.rel_key_query != 0) {
    return bad("rel_key_query is set without rel_key_positions");
  }
  if (info.sinks > 1)
    return bad("sinks must be 0 or 1, got " + std::to_string(info.sinks));
  if (info.sinks && info.weight_layout != ATTNC_LAYOUT_SEPARATE)
    return bad("sinks need the separate weight layout");
  const uint32_t normWidth = info.qk_norm & ATTNC_QK_NORM_WIDTH_MASK;
  if (normWidth > ATTNC_QK_NORM_PROJECTION ||
      (info.qk_norm & ~(ATTNC_QK_NORM_WIDTH_MASK | ATTNC_QK_NORM_FLAGS)) != 0 ||
      (normWidth == ATTNC_QK_NORM_NONE && info.qk_norm != 0))
    return bad("unknown qk_norm value " + std::to_string(info.qk_norm));
  if ((info.qk_norm & ATTNC_QK_NORM_PER_HEAD) && normWidth != ATTNC_QK_NORM_HEAD)
    return bad("qk_norm: one weight per head needs the per-head width");
  if ((info.qk_norm & ATTNC_QK_NORM_NO_WEIGHT) &&
      (info.qk_norm & (ATTNC_QK_NORM_PER_HEAD | ATTNC_QK_NORM_BIAS)))
    return bad("qk_norm: no weight excludes a weight per head and a bias");
  if (info.qk_norm != ATTNC_QK_NORM_NONE) {
    if (!(info.qk_norm_eps > 0) || !std::isfinite(info.qk_norm_eps) || info.qk_norm_eps > 1)
      return bad("qk_norm_eps must be in (0, 1]");
    if (!(info.qk_norm_offset >= 0) || info.qk_norm_offset > 1e3)
      return bad("qk_norm_offset must be in [0, 1000]");
    if (info.weight_layout != ATTNC_LAYOUT_SEPARATE)
      return bad("qk_norm needs the separate weight layout");
  } else if (info.qk_norm_eps != 0 || info.qk_norm_offset != 0) {
    return bad("qk_norm_eps / qk_norm_offset are set without qk_norm");
  }
  if (!std::isfinite(info.clip_qkv) || info.clip_qkv < 0)
    return bad("clip_qkv must be 0 (none) or a positive finite limit");
  if (info.temperature_floor_scale < 0 ||
      info.temperature_floor_scale > attnc::limits::kMaxSeqLen)
    return bad("temperature_floor_scale must be in [0, 2^24] (0: none), got " +
               std::to_string(info.temperature_floor_scale));
  if (!std::isfinite(info.temperature_attn_scale) || info.temperature_attn_scale < 0 ||
      info.temperature_attn_scale > 1e3 ||
      (info.temperature_floor_scale == 0 && info.temperature_attn_scale != 0))
    return bad("temperature_attn_scale must be in [0, 1000], and 0 without a floor scale");
  return "";
}

/// The output width and scale; the enum fields and the feature bits
/// agree with each other (device kind, padding) and are known.
std::string checkOutputAndKinds(const attnc_kernel_info &info) {
  auto bad = [](std::string msg) { return msg; };
  if (info.out_proj > 1)
    return bad("out_proj flag must be 0 or 1, got " +
               std::to_string(info.out_proj));
  const int64_t outDim = info.out_proj ? info.d_model : info.heads * info.head_dim;
  if (info.out_dim != outDim)
    return bad("out_dim is " + num(info.out_dim) + ", expected " +
               num(outDim) +
               (info.out_proj ? " (d_model, out_proj is set)"
                              : " (heads * head_dim, no out_proj)"));
  if (!std::isfinite(info.scale))
    return bad("scale is not finite");
  if (!(info.scale >= attnc::limits::kMinScale) || info.scale > attnc::limits::kMaxScale) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", info.scale);
    return bad(std::string("scale ") + buf +
               " is outside [FLT_MIN, 1e6] (a normal float32 no larger than 1e6)");
  }
  if (dtypeBytes(info.dtype) == 0)
    return bad("unknown dtype value " + std::to_string(info.dtype));
  if (info.isa > ATTNC_ISA_AMX_BF16)
    return bad("unknown isa value " + std::to_string(info.isa));
  if (info.weight_layout > ATTNC_LAYOUT_SEPARATE)
    return bad("unknown weight_layout value " +
               std::to_string(info.weight_layout));
  const uint32_t knownFeatures =
      ATTNC_FEATURE_LENGTHS | ATTNC_FEATURE_CROSS | ATTNC_FEATURE_PROBS |
      ATTNC_FEATURE_DECODE | ATTNC_FEATURE_CUDA | ATTNC_FEATURE_ROPE |
      ATTNC_FEATURE_SCORE_MODS | ATTNC_FEATURE_CHECKSUM;
  if (info.features & ~knownFeatures)
    return bad("unknown features bits 0x" +
               [&] {
                 char buf[16];
                 std::snprintf(buf, sizeof buf, "%x",
                               info.features & ~knownFeatures);
                 return std::string(buf);
               }());
  // The device kind and the instruction set agree: a CUDA isa iff the
  // cuda feature (its forward takes device pointers).
  const bool cudaIsa = isCudaIsa(info.isa);
  if (cudaIsa != ((info.features & ATTNC_FEATURE_CUDA) != 0))
    return bad(cudaIsa ? std::string("isa ") + isaName(info.isa) +
                             " needs the cuda feature, which features does "
                             "not declare"
                       : std::string("features declares cuda, but isa ") +
                             isaName(info.isa) +
                             " is a CPU instruction set");
  const bool paddingMask = attnc_mask_lengths(info.mask);
  if (paddingMask != ((info.features & ATTNC_FEATURE_LENGTHS) != 0))
    return bad(paddingMask
                   ? "a padding mask needs the lengths feature, which "
                     "features does not declare"
                   : "features declares lengths, but the mask has no "
                     "padding");
  if (!info.selected_isa)
    return bad("selected_isa is null");
  if (info.max_seq_len < 0 || info.max_seq_len > attnc::limits::kMaxSeqLen)
    return bad("max_seq_len must be in [0, 2^24] (0: none), got " +
               num(info.max_seq_len));
  return "";
}

/// The weights table is exactly the storage tensors of this block, and
/// packed_bytes fits them.
std::string checkWeightsTable(const attnc_kernel_info &info) {
  auto bad = [](std::string msg) { return msg; };
  // The weights table must be exactly the storage tensors of this block.
  if (info.num_weights > kMaxWeights)
    return bad("weights table has " + std::to_string(info.num_weights) +
               " entries, more than any layout has (" +
               std::to_string(kMaxWeights) + ")");
  std::vector<TensorShape> expected = storageTensors(paramsFromInfo(info));
  if (info.num_weights != expected.size())
    return bad("weights table has " + std::to_string(info.num_weights) +
               " entries, expected " + std::to_string(expected.size()));
  if (info.num_weights > 0 && !info.weights)
    return bad("weights table is null");
  int64_t weightFloats = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const attnc_tensor_info &t = info.weights[i];
    const TensorShape &e = expected[i];
    std::string where = "weights[" + std::to_string(i) + "]";
    if (!t.name)
      return bad(where + " has a null name, expected '" + e.name + "'");
    if (boundedLength(t.name) < 0)
      return bad(where + " has a name longer than " +
                 std::to_string(kMaxString) + " bytes, expected '" + e.name +
                 "'");
    if (e.name != t.name)
      return bad(where + " is named '" +
                 (isPrintable(t.name) ? std::string(t.name)
                                      : std::string("<non-printable>")) +
                 "', expected '" + e.name + "'");
    if (t.rank != e.shape.size())
      return bad(where + " ('" + e.name + "') has rank " +
                 std::to_string(t.rank) + ", expected " +
                 std::to_string(e.shape.size()));
    std::vector<int64_t> dims(t.dims, t.dims + t.rank);
    if (dims != e.shape || (t.rank == 1 && t.dims[1] != 1))
      return bad(where + " ('" + e.name + "') has dims " +
                 dimsString(t.rank == 1
                                ? std::vector<int64_t>{t.dims[0], t.dims[1]}
                                : dims) +
                 ", expected " + dimsString(e.shape));
    if (t.dtype != info.weight_dtype)
      return bad(where + " ('" + e.name + "') has dtype " + std::to_string(t.dtype) +
                 ", expected weight_dtype " + std::to_string(info.weight_dtype));
    int64_t n;
    if (!checkedMul(t.dims[0], t.dims[1], n) ||
        !checkedAdd(weightFloats, n, weightFloats))
      return bad(where + " ('" + e.name + "') is implausibly large");
  }
  // The packed buffer holds every weight once, padded to panels: at least
  // the storage floats, at most the bound the compiler checks too.
  std::vector<int64_t> dims2;
  for (size_t i = 0; i < expected.size(); ++i) {
    dims2.push_back(info.weights[i].dims[0]);
    dims2.push_back(info.weights[i].rank == 2 ? info.weights[i].dims[1] : 1);
  }
  int64_t maxPacked;
  if (weightFloats >= attnc::limits::kMaxWeightElements ||
      !attnc::limits::packedFloatsBound(reinterpret_cast<const int64_t(*)[2]>(dims2.data()),
                                        int64_t(expected.size()), maxPacked))
    return bad("weights are implausibly large (" + num(weightFloats) +
               " floats; a spec allows fewer than 2^31)");
  // The packed buffer holds every role the kernel reads (a tensor-parallel
  // rank: its heads' share) once, every element in weight_dtype.
  int64_t minBytes = 0;
  for (const RoleRect &r : storageLayout(paramsFromInfo(info)).roles)
    minBytes += r.rows * r.cols * dtypeBytes(info.weight_dtype);
  const int64_t maxBytes = maxPacked * 4;
  if (info.packed_bytes < minBytes || info.packed_bytes > maxBytes)
    return bad("packed_bytes is " + num(info.packed_bytes) +
               ", expected between " + num(minBytes) +
               " (the bytes of the weights it reads) and " + num(maxBytes) +
               " (those as float32 padded to whole panels + 2^22)");
  return "";
}

/// The workspace and stack bounds are plausible for the block's sizes.
std::string checkWorkspace(const attnc_kernel_info &info) {
  auto bad = [](std::string msg) { return msg; };
  // heads * head_dim and kv_heads * head_dim, bounded by checkSizes.
  const int64_t qW = info.heads * info.head_dim, kvW = info.kv_heads * info.head_dim;
  const int64_t outDim = info.out_proj ? info.d_model : qW;
  // Workspace: per (batch, token) row at most a generous multiple of every
  // activation a block has (x, q, k, v, attention output, y).
  int64_t rowFloats;
  if (!checkedSum({info.d_model, qW, kvW, kvW, qW, outDim}, rowFloats) ||
      !checkedMul(rowFloats, 16, rowFloats) ||
      !checkedAdd(rowFloats, 4096, rowFloats))
    return bad("shapes are implausibly large");
  if (info.workspace_per_row < 0 || info.workspace_per_row > rowFloats)
    return bad("workspace_per_row is " + num(info.workspace_per_row) +
               ", expected between 0 and " + num(rowFloats) +
               " floats (16 x the activations of one row + 4096)");
  if (info.workspace_fixed < 0 || info.workspace_fixed > kMaxWorkspaceFixed)
    return bad("workspace_fixed is " + num(info.workspace_fixed) +
               ", expected between 0 and " + num(kMaxWorkspaceFixed) +
               " bytes");
  if (info.stack_bytes < 0 || info.stack_bytes > kMaxStackBytes)
    return bad("stack_bytes is " + num(info.stack_bytes) +
               ", expected between 0 and " + num(kMaxStackBytes));
  return "";
}

/// validateInfo with the error class: AbiMismatch for version/size skew,
/// BadMetadata for everything else, None when valid.
LoadError checkInfo(const attnc_kernel_info &info, uint32_t abiVersion,
                    std::string &why) {
  auto bad = [&](std::string msg) {
    why = std::move(msg);
    return LoadError::BadMetadata;
  };
  if (info.abi_version != abiVersion) {
    why = "kernel ABI version " + std::to_string(info.abi_version) +
          ", runtime speaks " + std::to_string(abiVersion);
    return LoadError::AbiMismatch;
  }
  if (info.struct_size != sizeof(attnc_kernel_info)) {
    why = "kernel metadata struct_size is " + std::to_string(info.struct_size) +
          " bytes, runtime expects " +
          std::to_string(sizeof(attnc_kernel_info));
    return LoadError::AbiMismatch;
  }
  // Each check returns why the record is bad ("" when it is not), in this
  // order (the first problem found is the one reported).
  using Check = std::string (*)(const attnc_kernel_info &);
  for (Check check : {checkNames, checkSizes, checkTensorParallel, checkRope,
                      checkScoreFeatures, checkOutputAndKinds, checkWeightsTable,
                      checkWorkspace})
    if (std::string problem = check(info); !problem.empty())
      return bad(std::move(problem));
  why.clear();
  return LoadError::None;
}

} // namespace

std::string validateInfo(const attnc_kernel_info &info, uint32_t abiVersion) {
  std::string why;
  checkInfo(info, abiVersion, why);
  return why;
}

Kernel::Kernel(Kernel &&other) noexcept { *this = std::move(other); }

Kernel &Kernel::operator=(Kernel &&other) noexcept {
  if (this != &other) {
    std::swap(handle_, other.handle_);
    std::swap(info_, other.info_);
    std::swap(pack_, other.pack_);
    std::swap(wsSize_, other.wsSize_);
    std::swap(forward_, other.forward_);
    std::swap(decodeWsSize_, other.decodeWsSize_);
    std::swap(decode_, other.decode_);
    std::swap(privateFd_, other.privateFd_);
  }
  return *this;
}

Kernel::~Kernel() {
  if (handle_)
    dlclose(handle_);
  if (privateFd_ >= 0)
    close(privateFd_);
}

/// Whether a file at `path` is already mapped into this process, by its
/// name (the file that was there when it was loaded: a library rebuilt
/// since, written to a new file and renamed over it, shows as "NAME
/// (deleted)") or by its inode (the same file, maybe changed in place
/// since). dlopen would then hand back that mapping -- the older library,
/// or pages past a truncated file's new end (SIGBUS on first touch) --
/// instead of loading what the file holds now. /proc/self/maps is Linux's;
/// without it nothing is found (and dlopen does as it always did). A match
/// on the inode alone (another filesystem's) only costs a private copy.
static bool mappedAlready(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return false;
  char resolved[PATH_MAX];
  const std::string real = realpath(path.c_str(), resolved) ? resolved : path;
  FILE *maps = std::fopen("/proc/self/maps", "re");
  if (!maps)
    return false;
  bool found = false;
  char line[PATH_MAX + 256];
  while (!found && std::fgets(line, sizeof line, maps)) {
    // address perms offset dev inode [pathname]
    unsigned long long inode = 0;
    int nameAt = 0;
    if (std::sscanf(line, "%*s %*s %*s %*s %llu %n", &inode, &nameAt) < 1)
      continue;
    std::string name = line + nameAt;
    while (!name.empty() && (name.back() == '\n' || name.back() == ' '))
      name.pop_back();
    const std::string deleted = " (deleted)";
    if (name.size() > deleted.size() &&
        name.compare(name.size() - deleted.size(), deleted.size(), deleted) == 0)
      name.resize(name.size() - deleted.size());
    found = (inode != 0 && inode == (unsigned long long)st.st_ino) || name == real;
  }
  std::fclose(maps);
  return found;
}

/// A private copy of the file at `path` (an anonymous memory file): a
/// mapping of it is this load's own, whatever happens to the file or to
/// other mappings of it. -1 and `why` on failure.
static int privateCopy(const std::string &path, std::string &why) {
  uint64_t size = 0;
  int in = attnrt::openRegularFile(path, why, &size);
  if (in < 0)
    return -1;
  int out = memfd_create("attnc-kernel", MFD_CLOEXEC);
  if (out < 0) {
    why = std::string("cannot make a private copy (memfd_create): ") + std::strerror(errno);
    close(in);
    return -1;
  }
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n == 0)
      break;
    if (n < 0 && errno == EINTR)
      continue;
    ssize_t done = 0;
    while (n > 0 && done < n) {
      ssize_t w = write(out, buf + done, size_t(n - done));
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        n = -1;
        break;
      }
      done += w;
    }
    if (n < 0) {
      why = std::string("cannot make a private copy: ") + std::strerror(errno);
      close(in);
      close(out);
      return -1;
    }
  }
  close(in);
  return out;
}

/// Empty when `path` is a complete 64-bit little-endian x86-64 ELF shared
/// object (headers, program and section tables, and loadable segments all
/// inside the file); otherwise the reason. Reads only the headers, and only
/// after stat() says `path` is a regular file (a directory, FIFO or device
/// is refused before anything is read).
static std::string checkElfFile(const std::string &path) {
  std::string why;
  uint64_t n = 0;
  int fd = attnrt::openRegularFile(path, why, &n);
  if (fd < 0)
    return why;
  attnrt::FdCloser closer{fd};
  auto readAt = [fd](void *dst, size_t len, uint64_t off) {
    return ::pread(fd, dst, len, off_t(off)) == ssize_t(len);
  };
  Elf64_Ehdr eh;
  if (n < sizeof(eh) || !readAt(&eh, sizeof(eh), 0) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    // (an object archive: a static library or a build's .a, not what attnc -o writes)
    char magic[8];
    if (n >= 8 && readAt(magic, 8, 0) && std::memcmp(magic, "!<arch>\n", 8) == 0)
      return "not an ELF file: a static archive (ar); load the shared library attnc -o wrote (.so)";
    return "not an ELF file";
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_machine != EM_X86_64 || eh.e_type != ET_DYN)
    return "not an x86-64 ELF shared object";
  auto inside = [n](uint64_t off, uint64_t len) { return off <= n && len <= n - off; };
  if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
      !inside(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr)) ||
      (eh.e_shnum && !inside(eh.e_shoff, uint64_t(eh.e_shnum) * eh.e_shentsize)))
    return "truncated or corrupt ELF file (headers outside the file)";
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!readAt(&ph, sizeof(ph), eh.e_phoff + uint64_t(i) * sizeof(ph)))
      return "read error";
    if (ph.p_type == PT_LOAD && !inside(ph.p_offset, ph.p_filesz))
      return "truncated ELF file (segment " + std::to_string(i) +
             " ends past the end of the file)";
  }
  return "";
}

/// verifyChecksum, and for tests ATTNC_TESTING_SKIP_CHECKSUM=1 skips it
/// (to show what a corrupt library would do without the check).
static std::string checksumProblem(const std::string &path, bool &present) {
  const char *skip = std::getenv("ATTNC_TESTING_SKIP_CHECKSUM");
  if (skip && std::strcmp(skip, "1") == 0) {
    present = true;
    return "";
  }
  return attnrt::verifyChecksum(path, &present);
}

bool Kernel::load(const std::string &path, std::string &message, LoadError &err,
                  uint32_t abiVersion) {
  // Drop whatever was loaded before.
  *this = Kernel();

  std::string openPath; // what is checked and loaded (set below)
  auto fail = [&](LoadError e, const std::string &what) {
    err = e;
    message = (path.empty() ? "" : path + ": ") + what;
    // (dlerror names the private copy, /proc/self/fd/N: name the file)
    if (privateFd_ >= 0 && !openPath.empty())
      for (size_t at = message.find(openPath, path.size()); at != std::string::npos;
           at = message.find(openPath, at + path.size()))
        message.replace(at, openPath.size(), path);
    if (handle_)
      dlclose(handle_);
    handle_ = nullptr;
    info_ = nullptr;
    pack_ = nullptr;
    wsSize_ = nullptr;
    forward_ = nullptr;
    decodeWsSize_ = nullptr;
    decode_ = nullptr;
    if (privateFd_ >= 0)
      close(privateFd_);
    privateFd_ = -1;
    return false;
  };

  // A bare file name would make dlopen search the library path; load the
  // file the caller named.
  if (path.empty())
    return fail(LoadError::OpenFailed, "an empty path names no library");
  openPath = path.find('/') == std::string::npos ? "./" + path : path;
  // Already mapped here (loaded before, and maybe rebuilt or changed
  // since): the checks and the load read a private copy instead, so that
  // this load gets what the file holds now. While it is loaded its fd
  // stays open, which keeps the name /proc/self/fd/N unique among the
  // loaded objects (dlopen matches names before files).
  // Where no copy can be made (no memfd, no /proc), the file itself, as
  // before.
  if (mappedAlready(openPath)) {
    std::string why;
    privateFd_ = privateCopy(openPath, why);
    if (privateFd_ >= 0)
      openPath = "/proc/self/fd/" + std::to_string(privateFd_);
  }
  // dlopen() maps a truncated or corrupt ELF file and dies with SIGBUS on
  // first touch; check that every header and segment lies inside the file.
  std::string elfProblem = checkElfFile(openPath);
  if (!elfProblem.empty())
    return fail(LoadError::OpenFailed,
                "cannot load kernel library: " + elfProblem);
  // Bit flips in code or data would crash (or worse, compute) once run:
  // the library's own CRC-32 is checked before any of it is mapped.
  bool hasChecksum = false;
  std::string sumProblem = checksumProblem(openPath, hasChecksum);
  if (!sumProblem.empty())
    return fail(LoadError::OpenFailed, "cannot load kernel library: " + sumProblem);
  dlerror();
  handle_ = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *e = dlerror();
    return fail(LoadError::OpenFailed,
                std::string("cannot load kernel library: ") +
                    (e ? e : "unknown dlopen error"));
  }

  auto query = reinterpret_cast<attnc_query_fn>(dlsym(handle_, "attnc_query"));
  if (!query)
    return fail(LoadError::NoQuery,
                "not an attnc kernel (no attnc_query symbol)");

  const attnc_kernel_info *info = query(abiVersion);
  if (!info) {
    // Ask without a limit only to name the version in the message; the
    // first two fields are stable across ABI versions.
    const attnc_kernel_info *any = query(UINT32_MAX);
    std::string theirs =
        any ? std::to_string(any->abi_version) : std::string("newer");
    return fail(LoadError::AbiTooNew,
                "kernel ABI version " + theirs + ", runtime speaks " +
                    std::to_string(abiVersion) +
                    " (the kernel was built by a newer attnc; rebuild it or "
                    "upgrade the runtime)");
  }

  std::string why;
  LoadError e = checkInfo(*info, abiVersion, why);
  if (e != LoadError::None)
    return fail(e, why);
  if ((info->features & ATTNC_FEATURE_CHECKSUM) && !hasChecksum)
    return fail(LoadError::BadMetadata,
                std::string("features declares a checksum, but the file has no ") +
                    ATTNC_CHECKSUM_SECTION + " section (corrupt library)");
  // The code path this CPU would run: a concrete instruction set, or NONE.
  // A CUDA kernel's is its own sm_XY (a suitable device is present) or
  // NONE.
  const uint32_t selected = info->selected_isa();
  if (selected != ATTNC_ISA_NONE &&
      (isCudaIsa(info->isa) ? selected != info->isa
                            : selected > ATTNC_ISA_HOST && selected != ATTNC_ISA_AVX512_BF16 &&
                                  selected != ATTNC_ISA_AMX_BF16))
    return fail(LoadError::BadMetadata,
                "selected_isa() returned " + std::to_string(selected) +
                    (isCudaIsa(info->isa)
                         ? std::string(", neither the kernel's isa (") +
                               isaName(info->isa) + ") nor none"
                         : std::string(", not a known instruction set")));
  info_ = info;

  std::string name = info->name;
  auto sym = [&](const char *suffix) {
    return dlsym(handle_, (name + suffix).c_str());
  };
  pack_ = reinterpret_cast<attnc_pack_fn>(sym("_pack"));
  wsSize_ = reinterpret_cast<attnc_workspace_size_fn>(sym("_workspace_size"));
  forward_ = reinterpret_cast<attnc_forward_fn>(sym("_forward"));
  const char *missing = !pack_      ? "_pack"
                        : !wsSize_  ? "_workspace_size"
                        : !forward_ ? "_forward"
                                    : nullptr;
  if (missing)
    return fail(LoadError::MissingEntry,
                "missing entry point " + name + missing);
  if (info->features & ATTNC_FEATURE_DECODE) {
    decodeWsSize_ = reinterpret_cast<attnc_decode_workspace_bytes_fn>(
        sym("_decode_workspace_bytes"));
    decode_ = reinterpret_cast<attnc_decode_fn>(sym("_decode"));
    if (!decodeWsSize_ || !decode_)
      return fail(LoadError::MissingEntry,
                  "missing entry point " + name +
                      (!decodeWsSize_ ? "_decode_workspace_bytes" : "_decode") +
                      " (features declares decode)");
  }

  err = LoadError::None;
  message.clear();
  return true;
}

int Kernel::pack(const std::vector<const void *> &weights,
                 std::vector<unsigned char> &packed) const {
  if (!pack_ || weights.size() != info_->num_weights)
    return ATTNC_ERR_NULL_ARG;
  for (const void *w : weights)
    if (!w)
      return ATTNC_ERR_NULL_ARG;
  std::vector<int64_t> counts;
  for (uint32_t i = 0; i < info_->num_weights; ++i) {
    int64_t n = 0; // validated at load: cannot overflow
    if (!checkedMul(info_->weights[i].dims[0], info_->weights[i].dims[1], n))
      return ATTNC_ERR_BUFFER_SIZE;
    counts.push_back(n);
  }
  packed.assign(static_cast<size_t>(info_->packed_bytes), 0);
  attnrt_huge_pages(packed.data(), packed.size());
  return pack_(weights.data(), counts.data(),
               static_cast<int64_t>(counts.size()), packed.data(),
               info_->packed_bytes);
}

int Kernel::packFloat(const std::vector<const float *> &weights,
                      std::vector<unsigned char> &packed) const {
  if (!info_)
    return ATTNC_ERR_NULL_ARG;
  if (info_->weight_dtype == ATTNC_DTYPE_F32)
    return pack(std::vector<const void *>(weights.begin(), weights.end()), packed);
  // bf16/f16 weights: each tensor rounded to the weight dtype first.
  if (weights.size() != info_->num_weights)
    return ATTNC_ERR_BUFFER_SIZE;
  std::vector<std::vector<uint16_t>> narrow(weights.size());
  std::vector<const void *> ptrs;
  for (uint32_t i = 0; i < info_->num_weights; ++i) {
    if (!weights[i])
      return ATTNC_ERR_NULL_ARG;
    int64_t n = 0; // validated at load: cannot overflow
    checkedMul(info_->weights[i].dims[0], info_->weights[i].dims[1], n);
    // f16 holds no finite value past 65504: such a weight would pack as
    // inf silently (attnc-run's loader and Python refuse it by name).
    if (firstOutOfRange(info_->weight_dtype, weights[i], n) >= 0)
      return ATTNC_ERR_ARGS;
    narrow[i].resize(static_cast<size_t>(n));
    fromFloat(info_->weight_dtype, weights[i], narrow[i].data(), n);
    ptrs.push_back(narrow[i].data());
  }
  return pack(ptrs, packed);
}

bool Kernel::checkShape(int64_t batch, int64_t seqLen, std::string &why) const {
  if (!info_) {
    why = "no kernel loaded";
    return false;
  }
  if (batch < 1 || seqLen < 1) {
    why = "batch and seq_len must be at least 1, got batch " + num(batch) +
          ", seq_len " + num(seqLen);
    return false;
  }
  if (info_->max_seq_len > 0 && seqLen > info_->max_seq_len) {
    why = "seq_len " + num(seqLen) + " exceeds the kernel's max_seq_len " +
          num(info_->max_seq_len);
    return false;
  }
  int64_t bytes;
  const int64_t widest = std::max(info_->d_model, info_->out_dim);
  if (!checkedProduct({batch, seqLen, widest, 4}, bytes)) {
    why = "batch " + num(batch) + " x seq_len " + num(seqLen) + " x " +
          num(widest) + " floats overflows a 64-bit byte count";
    return false;
  }
  why.clear();
  return true;
}

bool Kernel::checkShape(int64_t batch, int64_t seqLen, int64_t kvSeqLen,
                        std::string &why) const {
  if (!checkShape(batch, seqLen, why))
    return false;
  if (!(info_->features & ATTNC_FEATURE_CROSS)) {
    if (kvSeqLen != 0 && kvSeqLen != seqLen) {
      why = "kv_seq_len " + num(kvSeqLen) + " differs from seq_len " +
            num(seqLen) + ", but the kernel is self-attention (no cross "
            "feature)";
      return false;
    }
    kvSeqLen = seqLen;
  } else {
    // The K/V input obeys the same rules as x (the kernel applies its
    // max_seq_len to both).
    if (kvSeqLen < 1) {
      why = "kv_seq_len must be at least 1, got " + num(kvSeqLen);
      return false;
    }
    if (info_->max_seq_len > 0 && kvSeqLen > info_->max_seq_len) {
      why = "kv_seq_len " + num(kvSeqLen) +
            " exceeds the kernel's max_seq_len " + num(info_->max_seq_len);
      return false;
    }
    int64_t bytes;
    if (!checkedProduct({batch, kvSeqLen, info_->d_model, 4}, bytes)) {
      why = "batch " + num(batch) + " x kv_seq_len " + num(kvSeqLen) + " x " +
            num(info_->d_model) + " floats overflows a 64-bit byte count";
      return false;
    }
  }
  int64_t bytes;
  if ((info_->features & ATTNC_FEATURE_PROBS) &&
      !checkedProduct({batch, info_->heads, seqLen, kvSeqLen, 4}, bytes)) {
    why = "the attention weights (batch " + num(batch) + " x heads " +
          num(info_->heads) + " x seq_len " + num(seqLen) + " x kv_seq_len " +
          num(kvSeqLen) + " floats) overflow a 64-bit byte count";
    return false;
  }
  why.clear();
  return true;
}

int64_t Kernel::workspaceBytes(int64_t batch, int64_t seqLen, std::string &why,
                               bool *libraryFault) const {
  return workspaceBytes(batch, seqLen, seqLen, why, libraryFault);
}

int64_t Kernel::workspaceBytes(int64_t batch, int64_t seqLen, int64_t kvSeqLen,
                               std::string &why, bool *libraryFault) const {
  if (libraryFault)
    *libraryFault = false;
  if (!checkShape(batch, seqLen, kvSeqLen, why))
    return -1;
  const bool cross = (info_->features & ATTNC_FEATURE_CROSS) != 0;
  if (!cross)
    kvSeqLen = seqLen;
  // The most the kernel may ask for: workspace_fixed + B*rows*per_row
  // floats + alignment slack, where a row is a query token, plus a K/V
  // token for cross-attention (whose K/V buffers scale with kv_seq_len).
  int64_t tokens = seqLen, limit;
  if ((cross && !checkedAdd(seqLen, kvSeqLen, tokens)) ||
      !checkedProduct({batch, tokens, info_->workspace_per_row, 4}, limit) ||
      !checkedSum({limit, info_->workspace_fixed, kWorkspaceSlack}, limit)) {
    why = "the workspace for batch " + num(batch) + ", seq_len " +
          num(seqLen) + (cross ? ", kv_seq_len " + num(kvSeqLen) : "") +
          " overflows a 64-bit byte count";
    return -1;
  }
  const std::string call = std::string(info_->name) + "_workspace_size(" +
                           num(batch) + ", " + num(seqLen) + ", " +
                           num(kvSeqLen) + ")";
  int64_t need = wsSize_ ? wsSize_(batch, seqLen, kvSeqLen) : -1;
  if (need < 0) {
    why = call + " returned " + num(need) + " (shape refused)";
    return -1;
  }
  if (need > limit) {
    if (libraryFault)
      *libraryFault = true;
    why = call + " returned " + num(need) +
          " bytes, more than the metadata allows (" + num(limit) +
          " = workspace_fixed + batch*" +
          (cross ? "(seq_len + kv_seq_len)" : "seq_len") +
          "*workspace_per_row*4 + " + num(kWorkspaceSlack) +
          "); refusing to allocate it";
    return -1;
  }
  why.clear();
  return need;
}

int64_t Kernel::workspaceSize(int64_t batch, int64_t seqLen) const {
  std::string why;
  return workspaceBytes(batch, seqLen, why);
}

int64_t Kernel::workspaceSize(int64_t batch, int64_t seqLen,
                              int64_t kvSeqLen) const {
  std::string why;
  return workspaceBytes(batch, seqLen, kvSeqLen, why);
}

uint32_t Kernel::selectedIsa() const {
  return info_ && info_->selected_isa ? info_->selected_isa() : ATTNC_ISA_NONE;
}

bool Kernel::checkVariants(int64_t batch, int64_t seqLen,
                           const VariantInputs &variants, const void *probs,
                           std::string &why) const {
  if (!info_) {
    why = "no kernel loaded";
    return false;
  }
  // A field set that the kernel does not read is an error in the ABI
  // (ATTNC_ERR_ARGS): refuse it here with its name.
  const uint32_t f = info_->features;
  auto notTaken = [&](const char *field, const char *feature) {
    why = std::string(field) + " given, but the kernel " + info_->name +
          " does not take it (no " + feature + " feature)";
    return false;
  };
  if (variants.lengths && !(f & ATTNC_FEATURE_LENGTHS))
    return notTaken("lengths", "lengths");
  if (variants.xKv && !(f & ATTNC_FEATURE_CROSS))
    return notTaken("x_kv", "cross");
  if (variants.kvLengths && !(f & ATTNC_FEATURE_CROSS))
    return notTaken("kv_lengths", "cross");
  if (variants.kvLengths && !(f & ATTNC_FEATURE_LENGTHS))
    return notTaken("kv_lengths", "lengths");
  if (probs && !(f & ATTNC_FEATURE_PROBS))
    return notTaken("probs", "probs");
  if ((variants.kCache || variants.vCache || variants.cacheLen) &&
      !(f & ATTNC_FEATURE_DECODE))
    return notTaken("a KV cache", "decode");
  if ((variants.kCache != nullptr) != (variants.vCache != nullptr) ||
      (variants.kCache && variants.cacheLen < seqLen) ||
      (!variants.kCache && variants.cacheLen != 0)) {
    why = "the KV cache needs both k_cache and v_cache with cache_len >= "
          "seq_len (" + num(seqLen) + "), got cache_len " + num(variants.cacheLen) +
          (variants.kCache ? "" : variants.vCache ? " and no k_cache" : " and no caches");
    return false;
  }
  if (variants.kCache && variants.kCache == variants.vCache) {
    why = "k_cache and v_cache are the same buffer";
    return false;
  }
  if (!checkShape(batch, seqLen, variants.kvSeqLen, why))
    return false;
  why = checkVariantInputs(paramsFromInfo(*info_), batch, seqLen, variants);
  return why.empty();
}

namespace {
/// The KV cache of a forward call (host or device pointers: only compared),
/// checked as the glue checks it and with its codes: both caches or
/// neither, a cache_len only with caches, two buffers, cache_len >= seq_len
/// and a shape `lenOk` says is valid.
int cacheCode(const void *k, const void *v, int64_t cacheLen, int64_t seqLen, bool lenOk) {
  if ((k != nullptr) != (v != nullptr))
    return ATTNC_ERR_NULL_ARG;
  if (!k)
    return ATTNC_ERR_BUFFER_SIZE; // a cache_len without caches
  if (k == v)
    return ATTNC_ERR_ARGS;
  if (cacheLen < seqLen || !lenOk)
    return ATTNC_ERR_BAD_SHAPE;
  return ATTNC_OK;
}
} // namespace

int Kernel::forward(const void *packed, const void *x, void *y,
                    int64_t batch, int64_t seqLen,
                    std::vector<unsigned char> &workspace, int threads,
                    attnc_parallel_for_fn hook, void *hookCtx) const {
  // No variant fields: what every kernel took before the variants. A
  // cross-attention kernel needs x_kv, which this form cannot pass.
  std::string why;
  if (forward_ && !isCuda() && (info_->features & ATTNC_FEATURE_CROSS))
    return checkShape(batch, seqLen, why) ? ATTNC_ERR_NULL_ARG : ATTNC_ERR_BAD_SHAPE;
  return forward(packed, x, y, batch, seqLen, VariantInputs(), nullptr, workspace,
                 threads, hook, hookCtx);
}

int Kernel::forward(const void *packed, const void *x, void *y,
                    int64_t batch, int64_t seqLen,
                    const VariantInputs &variants, void *probs,
                    std::vector<unsigned char> &workspace, int threads,
                    attnc_parallel_for_fn hook, void *hookCtx) const {
  if (!forward_)
    return ATTNC_ERR_NULL_ARG;
  // A CUDA kernel takes device pointers: never hand it host memory.
  if (isCuda())
    return ATTNC_ERR_DEVICE;
  std::string why;
  if (!checkShape(batch, seqLen, variants.kvSeqLen, why)) // also (batch, seqLen)
    return ATTNC_ERR_BAD_SHAPE;
  // The KV cache's refusals carry the codes the library gives them.
  if ((info_->features & ATTNC_FEATURE_DECODE) &&
      (variants.kCache || variants.vCache || variants.cacheLen)) {
    std::string w;
    if (int rc = cacheCode(variants.kCache, variants.vCache, variants.cacheLen, seqLen,
                           checkShape(batch, variants.cacheLen, w)))
      return rc;
  }
  if (!checkVariants(batch, seqLen, variants, probs, why))
    return ATTNC_ERR_ARGS;
  return forwardChecked(packed, x, y, batch, seqLen, variants, probs,
                        workspace, threads, hook, hookCtx);
}

namespace {
/// The fields of attnc_forward_args every forward call sets, for a shape
/// checkShape passed (the element counts fit).
attnc_forward_args forwardArgs(const attnc_kernel_info &info, const void *packed,
                               const void *x, void *y, int64_t batch,
                               int64_t seqLen) {
  attnc_forward_args a{};
  a.struct_size = sizeof(a);
  a.packed = packed;
  a.packed_bytes = info.packed_bytes;
  a.x = x;
  checkedProduct({batch, seqLen, info.d_model}, a.x_elems);
  a.y = y;
  checkedProduct({batch, seqLen, info.out_dim}, a.y_elems);
  a.batch = batch;
  a.seq_len = seqLen;
  return a;
}

/// A cross-attention kernel's K/V input (ATTNC_FEATURE_CROSS).
void setCross(attnc_forward_args &a, const attnc_kernel_info &info,
              const void *xKv, int64_t kvSeq, const int32_t *kvLengths) {
  checkedProduct({a.batch, kvSeq, info.d_model}, a.x_kv_elems);
  a.x_kv = xKv;
  a.kv_seq_len = kvSeq;
  a.kv_lengths = kvLengths;
}

/// The KV cache of a forward call (ATTNC_FEATURE_DECODE), checked.
void setCache(attnc_forward_args &a, void *kCache, void *vCache,
              int64_t cacheLen, int64_t cacheElems) {
  a.k_cache = kCache;
  a.v_cache = vCache;
  a.cache_elems = cacheElems;
  a.cache_len = cacheLen;
}
} // namespace

namespace {
/// The threads of a forward or decode call: the caller's hook, or with
/// more than one thread the runtime's one pool (attnrt_parallel_for),
/// shared by every kernel of the process, rather than the kernel's own.
/// `pool` (the request the hook reads) must outlive the call. A negative
/// count is passed on as it is: the kernel refuses the call
/// (ATTNC_ERR_ARGS) before any task.
template <typename Args>
void setThreads(Args &a, const attnc_kernel_info &ki, int threads,
                attnc_parallel_for_fn hook, void *hookCtx, attnrt_pool_request &pool) {
  pool.num_threads = threads;
  pool.stack_bytes = ki.stack_bytes;
  const bool shared = !hook && threads != 1;
  a.parallel_for = shared ? attnrt_parallel_for : hook;
  a.parallel_ctx = shared ? &pool : hookCtx;
  a.num_threads = threads;
}
} // namespace

int Kernel::forwardChecked(const void *packed, const void *x, void *y,
                           int64_t batch, int64_t seqLen,
                           const VariantInputs &variants, void *probs,
                           std::vector<unsigned char> &workspace, int threads,
                           attnc_parallel_for_fn hook, void *hookCtx) const {
  std::string why;
  const bool cross = (info_->features & ATTNC_FEATURE_CROSS) != 0;
  const int64_t kvSeq = cross ? variants.kvSeqLen : seqLen;
  int64_t need = workspaceBytes(batch, seqLen, kvSeq, why);
  if (need < 0)
    return ATTNC_ERR_WORKSPACE;
  if (workspace.size() < static_cast<uint64_t>(need)) {
    workspace.resize(static_cast<size_t>(need));
    attnrt_huge_pages(workspace.data(), workspace.size());
  }
  attnc_forward_args a = forwardArgs(*info_, packed, x, y, batch, seqLen);
  a.positions = variants.positions;
  a.workspace = workspace.empty() ? nullptr : workspace.data();
  a.workspace_bytes = static_cast<int64_t>(workspace.size());
  attnrt_pool_request pool;
  setThreads(a, *info_, threads, hook, hookCtx, pool);
  // The variant fields, each only when the kernel reads it (abi.h: a field
  // outside info->features must be NULL / 0).
  a.lengths = variants.lengths;
  if (cross && variants.xKv)
    setCross(a, *info_, variants.xKv, kvSeq, variants.kvLengths);
  if (probs) {
    int64_t probsElems = 0;
    checkedProduct({batch, info_->heads, seqLen, kvSeq}, probsElems);
    a.probs = probs;
    a.probs_elems = probsElems;
  }
  if (variants.kCache) {
    int64_t cacheElems = 0;
    if (!checkedProduct({batch, info_->kv_heads, variants.cacheLen, info_->head_dim},
                        cacheElems))
      return ATTNC_ERR_BAD_SHAPE;
    setCache(a, variants.kCache, variants.vCache, variants.cacheLen, cacheElems);
  }
  return forward_(&a);
}

bool Kernel::checkHost(std::string &why) const {
  if (!info_) {
    why = "no kernel loaded";
    return false;
  }
  if (isCuda()) {
    why = std::string("kernel ") + info_->name + " targets " +
          isaName(info_->isa) +
          ": its forward takes device pointers (Kernel::forwardDevice; "
          "attnc-run --device cuda)";
    return false;
  }
  why.clear();
  return true;
}

int Kernel::forwardDevice(const void *packed, const void *x, void *y,
                          int64_t batch, int64_t seqLen, void *workspace,
                          int64_t workspaceBytes, const void *xKv,
                          int64_t kvSeqLen, void *stream) const {
  return forwardDevice(packed, x, y, batch, seqLen, workspace, workspaceBytes,
                       xKv, kvSeqLen, DeviceLengths(), stream);
}

int Kernel::forwardDevice(const void *packed, const void *x, void *y,
                          int64_t batch, int64_t seqLen, void *workspace,
                          int64_t workspaceBytes, const void *xKv,
                          int64_t kvSeqLen, const DeviceLengths &len,
                          void *stream) const {
  return forwardDevice(packed, x, y, batch, seqLen, workspace, workspaceBytes,
                       xKv, kvSeqLen, len, DeviceCache(), stream);
}

int Kernel::forwardDevice(const void *packed, const void *x, void *y,
                          int64_t batch, int64_t seqLen, void *workspace,
                          int64_t workspaceBytes, const void *xKv,
                          int64_t kvSeqLen, const DeviceLengths &len,
                          const DeviceCache &cache, void *stream) const {
  return forwardDevice(packed, x, y, batch, seqLen, workspace, workspaceBytes,
                       xKv, kvSeqLen, len, cache, /*probs=*/nullptr, stream);
}

int Kernel::forwardDevice(const void *packed, const void *x, void *y,
                          int64_t batch, int64_t seqLen, void *workspace,
                          int64_t workspaceBytes, const void *xKv,
                          int64_t kvSeqLen, const DeviceLengths &len,
                          const DeviceCache &cache, void *probs,
                          void *stream) const {
  if (!forward_)
    return ATTNC_ERR_NULL_ARG;
  if (!isCuda())
    return ATTNC_ERR_ARGS; // host memory: Kernel::forward
  const bool cross = (info_->features & ATTNC_FEATURE_CROSS) != 0;
  if (cross ? !xKv : xKv != nullptr || (kvSeqLen != 0 && kvSeqLen != seqLen))
    return cross ? ATTNC_ERR_NULL_ARG : ATTNC_ERR_ARGS;
  const int64_t kvSeq = cross ? kvSeqLen : seqLen;
  std::string why;
  if (!checkShape(batch, seqLen, kvSeq, why))
    return ATTNC_ERR_BAD_SHAPE;
  // The lengths: the device copy goes to the kernel, the host copy is
  // checked here as forward checks them (the glue cannot read device
  // memory). Each pair is both set or both null.
  if ((len.lengths != nullptr) != (len.hostLengths != nullptr) ||
      (len.kvLengths != nullptr) != (len.hostKvLengths != nullptr))
    return ATTNC_ERR_NULL_ARG;
  if (len.lengths || len.kvLengths) {
    VariantInputs host;
    host.lengths = len.hostLengths;
    host.kvLengths = len.hostKvLengths;
    host.xKv = cross ? xKv : nullptr; // only tested for null
    host.kvSeqLen = cross ? kvSeq : 0;
    if (!checkVariants(batch, seqLen, host, nullptr, why))
      return ATTNC_ERR_ARGS;
  }
  // The KV cache: the checks (and codes) forward applies to a host cache;
  // nothing here reads the device buffers.
  const bool hasCache = cache.kCache || cache.vCache || cache.cacheLen;
  int64_t cacheElems = 0;
  if (hasCache) {
    if (!(info_->features & ATTNC_FEATURE_DECODE))
      return ATTNC_ERR_ARGS;
    if (int rc = cacheCode(cache.kCache, cache.vCache, cache.cacheLen, seqLen,
                           checkShape(batch, cache.cacheLen, why)))
      return rc;
    if (!checkedProduct({batch, info_->kv_heads, cache.cacheLen, info_->head_dim},
                        cacheElems))
      return ATTNC_ERR_BAD_SHAPE;
  }
  const int64_t need = this->workspaceBytes(batch, seqLen, kvSeq, why);
  if (need < 0 || workspaceBytes < need || (need > 0 && !workspace))
    return ATTNC_ERR_WORKSPACE;
  // Nothing here reads the (device) buffers.
  attnc_forward_args a = forwardArgs(*info_, packed, x, y, batch, seqLen);
  a.workspace = workspace;
  a.workspace_bytes = workspaceBytes;
  a.num_threads = 0;
  a.lengths = len.lengths;
  if (cross)
    setCross(a, *info_, xKv, kvSeq, len.kvLengths);
  if (hasCache)
    setCache(a, cache.kCache, cache.vCache, cache.cacheLen, cacheElems);
  if (probs) {
    if (!(info_->features & ATTNC_FEATURE_PROBS))
      return ATTNC_ERR_ARGS;
    int64_t probsElems = 0;
    if (!checkedProduct({batch, info_->heads, seqLen, kvSeq}, probsElems))
      return ATTNC_ERR_BAD_SHAPE;
    a.probs = probs;
    a.probs_elems = probsElems;
  }
  a.stream = stream;
  return forward_(&a);
}

int64_t Kernel::decodeWorkspaceBytes(int64_t batch, int64_t seqLen, int64_t cacheLen,
                                     std::string &why) const {
  if (!decodeWsSize_) {
    why = info_ ? std::string("the kernel ") + info_->name +
                      " has no decode entry (spec: decode: true)"
                : "no kernel loaded";
    return -1;
  }
  if (!checkShape(batch, seqLen, why) || !checkShape(batch, cacheLen, why))
    return -1;
  if (seqLen > cacheLen) {
    why = "seq_len " + num(seqLen) + " new tokens do not fit a cache of " + num(cacheLen) +
          " rows";
    return -1;
  }
  int64_t limit = 0;
  if (!checkedProduct({batch, seqLen, info_->workspace_per_row, 4}, limit) ||
      !checkedSum({limit, info_->workspace_fixed, kWorkspaceSlack}, limit)) {
    why = "the decode workspace for batch " + num(batch) + " overflows";
    return -1;
  }
  int64_t need = decodeWsSize_(batch, seqLen, cacheLen);
  const std::string call = std::string(info_->name) + "_decode_workspace_bytes(" +
                           num(batch) + ", " + num(seqLen) + ", " + num(cacheLen) + ")";
  if (need < 0) {
    why = call + " returned " + num(need) + " (shape refused)";
    // A CUDA kernel (or its tiling compiled for the host) decodes one
    // token per sequence per call: say so rather than leave -1 opaque.
    if (seqLen > 1 && decodeWsSize_(batch, 1, cacheLen) >= 0)
      why += ": this kernel's " + std::string(info_->name) +
             "_decode takes one new token per sequence per call (seq_len 1)";
    return -1;
  }
  if (need > limit) {
    why = call + " returned " + num(need) +
          " bytes, more than the metadata allows (" + num(limit) +
          " = workspace_fixed + batch*seq_len*workspace_per_row*4 + " +
          num(kWorkspaceSlack) + "); refusing to allocate it";
    return -1;
  }
  why.clear();
  return need;
}

namespace {
/// 0 <= positions[b] and positions[b] + seqLen <= cacheLen for each b.
bool positionsFit(const int32_t *positions, int64_t batch, int64_t seqLen,
                  int64_t cacheLen) {
  for (int64_t b = 0; b < batch; ++b)
    if (positions[b] < 0 || positions[b] > cacheLen - seqLen)
      return false;
  return true;
}

/// The checks decode and decodeDevice share once their pointers are set:
/// distinct caches, the shape (`need`: the decode workspace), every
/// sequence's positions inside the cache (`positions`: a host array), the
/// cache's element count. ATTNC_OK or the status to return.
int checkDecode(const Kernel &k, int64_t batch, int64_t seqLen,
                const int32_t *positions, const void *kCache, const void *vCache,
                int64_t cacheLen, int64_t &need, int64_t &cacheElems) {
  if (kCache == vCache)
    return ATTNC_ERR_ARGS;
  std::string why;
  need = k.decodeWorkspaceBytes(batch, seqLen, cacheLen, why);
  if (need < 0)
    return ATTNC_ERR_BAD_SHAPE;
  if (!positionsFit(positions, batch, seqLen, cacheLen))
    return ATTNC_ERR_ARGS;
  const attnc_kernel_info &info = k.info();
  if (!checkedProduct({batch, info.kv_heads, cacheLen, info.head_dim}, cacheElems))
    return ATTNC_ERR_BAD_SHAPE;
  return ATTNC_OK;
}
} // namespace

/// The decode argument struct of a call whose arguments passed the checks.
static attnc_decode_args decodeArgs(const attnc_kernel_info &info, const void *packed,
                                    const void *x, void *y, int64_t batch, int64_t seqLen,
                                    const int32_t *positions, void *kCache, void *vCache,
                                    int64_t cacheLen, int64_t cacheElems) {
  attnc_decode_args a{};
  a.struct_size = sizeof(a);
  a.packed = packed;
  a.packed_bytes = info.packed_bytes;
  a.x = x;
  a.x_elems = batch * seqLen * info.d_model; // checkShape: these fit
  a.y = y;
  a.y_elems = batch * seqLen * info.out_dim;
  a.batch = batch;
  a.seq_len = seqLen;
  a.positions = positions;
  a.k_cache = kCache;
  a.v_cache = vCache;
  a.cache_elems = cacheElems;
  a.cache_len = cacheLen;
  return a;
}

int Kernel::decode(const void *packed, const void *x, void *y, int64_t batch, int64_t seqLen,
                   const int32_t *positions, void *kCache, void *vCache,
                   int64_t cacheLen, std::vector<unsigned char> &workspace,
                   int threads, attnc_parallel_for_fn hook, void *hookCtx) const {
  if (!decode_)
    return ATTNC_ERR_ARGS;
  if (isCuda())
    return ATTNC_ERR_DEVICE;
  if (!positions || !x || !y || !kCache || !vCache || !packed)
    return ATTNC_ERR_NULL_ARG;
  int64_t need = 0, cacheElems = 0;
  if (int rc = checkDecode(*this, batch, seqLen, positions, kCache, vCache, cacheLen,
                           need, cacheElems))
    return rc;
  if (workspace.size() < static_cast<uint64_t>(need)) {
    workspace.resize(static_cast<size_t>(need));
    attnrt_huge_pages(workspace.data(), workspace.size());
  }
  attnc_decode_args a = decodeArgs(*info_, packed, x, y, batch, seqLen, positions, kCache,
                                   vCache, cacheLen, cacheElems);
  a.workspace = workspace.empty() ? nullptr : workspace.data();
  a.workspace_bytes = static_cast<int64_t>(workspace.size());
  attnrt_pool_request pool;
  setThreads(a, *info_, threads, hook, hookCtx, pool);
  return decode_(&a);
}

int Kernel::decodeDevice(const void *packed, const void *x, void *y, int64_t batch,
                         int64_t seqLen, const int32_t *positions,
                         const int32_t *hostPositions, void *kCache, void *vCache,
                         int64_t cacheLen, void *workspace, int64_t workspaceBytes,
                         void *stream) const {
  if (!decode_)
    return ATTNC_ERR_ARGS;
  if (!isCuda())
    return ATTNC_ERR_ARGS; // host memory: Kernel::decode
  if (!positions || !hostPositions || !x || !y || !kCache || !vCache || !packed)
    return ATTNC_ERR_NULL_ARG;
  // The host copy of the positions, checked as decode checks them: the
  // glue cannot read the device copy, and the device code only clamps.
  int64_t need = 0, cacheElems = 0;
  if (int rc = checkDecode(*this, batch, seqLen, hostPositions, kCache, vCache,
                           cacheLen, need, cacheElems))
    return rc;
  if (workspaceBytes < need || (need > 0 && !workspace))
    return ATTNC_ERR_WORKSPACE;
  attnc_decode_args a = decodeArgs(*info_, packed, x, y, batch, seqLen, positions, kCache,
                                   vCache, cacheLen, cacheElems);
  a.workspace = workspace;
  a.workspace_bytes = workspaceBytes;
  a.num_threads = 0;
  a.stream = stream;
  return decode_(&a);
}

} // namespace attnrt
