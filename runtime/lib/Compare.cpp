//===- Compare.cpp - Kernel output vs. the reference ------------*- C++ -*-===//
//
// Element-wise comparison of a float32 kernel output with the double
// reference: max/mean absolute error, max relative error, non-finite values,
// and an allclose-style verdict (|out - ref| <= atol + rtol * |ref|).
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Runtime.h"

#include <algorithm>
#include <cmath>

namespace attnrt {

CompareResult compare(const float *out, const double *ref, int64_t n,
                      double atol, double rtol) {
  CompareResult r;
  double sumAbs = 0;
  int64_t finiteCount = 0;
  int64_t firstNonFinite = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double o = out[i];
    const double e = ref[i];
    if (!std::isfinite(e)) {
      // A non-finite reference must be matched exactly (same infinity, or
      // NaN for NaN); it does not enter the error statistics.
      bool same = std::isnan(e) ? std::isnan(o) : o == e;
      if (!same) {
        r.ok = false;
        if (firstNonFinite < 0)
          firstNonFinite = i;
      }
      continue;
    }
    if (!std::isfinite(o)) {
      ++r.nonFinite;
      r.ok = false;
      if (firstNonFinite < 0)
        firstNonFinite = i;
      continue;
    }
    const double diff = std::fabs(o - e);
    const double rel = diff / std::max(std::fabs(e), 1e-6);
    sumAbs += diff;
    ++finiteCount;
    if (r.worstIndex < 0 || diff > r.maxAbs) {
      r.worstIndex = i;
      r.maxAbs = diff;
    }
    r.maxRel = std::max(r.maxRel, rel);
    if (!(diff <= atol + rtol * std::fabs(e)))
      r.ok = false;
  }
  r.meanAbs = finiteCount ? sumAbs / double(finiteCount) : 0.0;
  // A non-finite mismatch is the worst kind of difference.
  if (firstNonFinite >= 0)
    r.worstIndex = firstNonFinite;
  return r;
}

} // namespace attnrt
