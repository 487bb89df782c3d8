//===- Limits.h - the one table of block limits -----------------*- C++ -*-===//
//
// What a block may be: the spec parser refuses a spec past these limits
// (compiler/lib/Spec/SpecParser.cpp), the compiler checks what it packs
// against packedFloatsBound, and the loader refuses a library whose
// metadata is past them (runtime/lib/Loader.cpp). One table, so a spec that
// compiles is a library that loads, and the reverse. Documented in
// docs/limits.md. Header-only, no dependencies.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_LIMITS_H
#define ATTNC_RUNTIME_LIMITS_H

#include <cfloat>
#include <cstdint>

namespace attnc {
namespace limits {

constexpr int64_t kMaxDModel = int64_t(1) << 16;
constexpr int64_t kMaxHeads = int64_t(1) << 10;
constexpr int64_t kMaxKvHeads = int64_t(1) << 10;
constexpr int64_t kMaxHeadDim = int64_t(1) << 10;
constexpr int64_t kMaxSeqLen = int64_t(1) << 24;  ///< max_seq_len
constexpr int64_t kMaxWindow = int64_t(1) << 24;  ///< sliding window
constexpr int64_t kMaxRotaryDim = int64_t(1) << 10;
constexpr int64_t kMaxPositions = int64_t(1) << 24; ///< rope scaling lengths
constexpr int64_t kMaxT5Buckets = int64_t(1) << 10;
constexpr int64_t kMaxT5Distance = int64_t(1) << 16;
/// BERT relative_key's max_position_embeddings (its table has 2P - 1 rows).
constexpr int64_t kMaxRelKeyPositions = int64_t(1) << 16;
/// (heads + 2 kv_heads) * head_dim * d_model (+ the output projection) is
/// below this: packed weights stay under 8 GiB of float32.
constexpr int64_t kMaxWeightElements = int64_t(1) << 31;
/// The softmax scale: a normal float32 (the kernel multiplies in float32)
/// no larger than this (beyond it every logit of a unit-variance input
/// overflows float32 once the head dimension is summed).
constexpr double kMaxScale = 1e6;
constexpr double kMinScale = FLT_MIN;

/// Rotary embeddings: the attention factor that multiplies cos and sin
/// (yarn, longrope) is in (0, this].
constexpr double kMaxRopeAttentionFactor = 1e3;

/// The widest panel the packed weights use (columns padded to it).
constexpr int64_t kMaxPanel = 32;

/// The largest packed buffer (floats) a kernel may declare for storage
/// tensors of these dims (rank 1: d1 = 1): every element once, each
/// tensor's rows and columns padded to whole panels on either axis (the
/// packing may transpose and split a fused tensor), 16-float alignment per
/// part, plus 2^20 floats of slack for tables. False when it overflows.
inline bool packedFloatsBound(const int64_t (*dims)[2], int64_t count, int64_t &bound) {
  bound = int64_t(1) << 20;
  for (int64_t i = 0; i < count; ++i) {
    int64_t d0 = dims[i][0], d1 = dims[i][1];
    if (d0 < 0 || d1 < 0 || d0 > kMaxWeightElements || d1 > kMaxWeightElements)
      return false;
    int64_t t;
    if (__builtin_mul_overflow(d0, d1, &t) ||
        __builtin_add_overflow(t, 2 * kMaxPanel * (d0 + d1) + 64, &t) ||
        __builtin_add_overflow(bound, t, &bound))
      return false;
  }
  return true;
}

} // namespace limits
} // namespace attnc

#endif // ATTNC_RUNTIME_LIMITS_H
