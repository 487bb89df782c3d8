//===- T5Bucket.h - T5's relative-position bucket, once ---------*- C++ -*-===//
//
// Hugging Face's T5Attention._relative_position_bucket for one relative
// position rel = key - query, in the same float32 arithmetic: the table the
// compiler bakes into a kernel (attnc::t5BucketTable) and the reference
// interpreter's (attnrt::naive::t5Bucket) are this one function. Header-only.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_T5BUCKET_H
#define ATTNC_RUNTIME_T5BUCKET_H

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace attnc {

/// The bucket of rel among `nb` buckets (half of them per direction when
/// bidirectional): exact below nb/2 (per direction), logarithmic up to
/// maxDistance, the last bucket beyond.
inline int32_t t5RelativeBucket(int64_t rel, int64_t nb, int64_t maxDistance,
                                bool bidirectional) {
  int64_t bucket = 0, a;
  if (bidirectional) {
    nb /= 2;
    bucket += rel > 0 ? nb : 0;
    a = rel < 0 ? -rel : rel;
  } else {
    a = rel < 0 ? -rel : 0;
  }
  const int64_t maxExact = nb / 2;
  if (a < maxExact)
    return int32_t(bucket + a);
  const float v = std::log(float(a) / float(maxExact)) /
                  float(std::log(double(maxDistance) / double(maxExact))) *
                  float(nb - maxExact);
  return int32_t(bucket + std::min<int64_t>(maxExact + int64_t(v), nb - 1));
}

} // namespace attnc

#endif // ATTNC_RUNTIME_T5BUCKET_H
