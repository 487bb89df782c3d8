//===- Compare.cpp - Kernel output vs. the reference ------------*- C++ -*-===//
//
// Element-wise comparison of a float32 kernel output with the double
// reference: max/mean absolute error, max relative error, non-finite values,
// and the verdict of the numeric gate (docs/checking.md):
//   every element finite in both, and |out - ref| <= atol + rtol*|ref| + B
// where B is the element's float32 error bound (0 without one); an element
// whose bound is not finite or exceeds max |ref| over the whole output (and
// atol) fails: nothing would be checked there.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Runtime.h"

#include <algorithm>
#include <cmath>

namespace attnrt {

CompareResult compare(const float *out, const double *ref, int64_t n,
                      double atol, double rtol) {
  return compare(out, ref, nullptr, n, atol, rtol);
}

CompareResult compare(const float *out, const double *ref,
                      const double *bound, int64_t n, double atol,
                      double rtol) {
  CompareResult r;
  // A bound wider than the whole output's magnitude checks nothing.
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(ref[i]))
      r.maxRef = std::max(r.maxRef, std::fabs(ref[i]));
  double sumAbs = 0;
  int64_t finiteCount = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double o = out[i];
    const double e = ref[i];
    const bool oFinite = std::isfinite(o), eFinite = std::isfinite(e);
    if (!oFinite || !eFinite) {
      // Nothing non-finite passes: NaN/inf in the output where the
      // reference is finite, a finite output where the reference is not,
      // and NaN/inf on both sides (an input or weight was not finite:
      // nothing was checked).
      if (!oFinite && eFinite)
        ++r.nonFinite;
      else if (oFinite && !eFinite)
        ++r.finiteVsNonFiniteRef;
      else
        ++r.nonFiniteBoth;
      r.ok = false;
      if (r.firstNonFinite < 0)
        r.firstNonFinite = i;
      continue;
    }
    // The error statistics cover every element finite in both, bounded
    // or not: they are what the kernel computed.
    const double diff = std::fabs(o - e);
    const double rel = diff / std::max(std::fabs(e), 1e-6);
    sumAbs += diff;
    ++finiteCount;
    if (r.worstIndex < 0 || diff > r.maxAbs) {
      r.worstIndex = i;
      r.maxAbs = diff;
    }
    r.maxRel = std::max(r.maxRel, rel);
    const double b = bound ? bound[i] : 0.0;
    if (!std::isfinite(b) || (b > r.maxRef && b > atol)) {
      // The bound says nothing here (logits so large that float32 can
      // give anything): the check is inconclusive, which is no pass.
      ++r.unbounded;
      if (!std::isfinite(b))
        ++r.unboundedInfinite;
      r.ok = false;
      if (r.firstUnbounded < 0) {
        r.firstUnbounded = i;
        r.firstUnboundedBound = b;
      }
      continue;
    }
    const double allowed = atol + rtol * std::fabs(e) + b;
    ++r.checked;
    r.maxBound = std::max(r.maxBound, b);
    const double ratio = allowed > 0 ? diff / allowed
                         : diff > 0  ? HUGE_VAL
                                     : 0.0;
    if (r.worstCheckedIndex < 0 || ratio > r.worstCheckedRatio) {
      r.worstCheckedIndex = i;
      r.worstCheckedRatio = ratio;
      r.worstCheckedAllowed = allowed;
    }
    if (!(diff <= allowed)) {
      ++r.outside;
      r.ok = false;
    }
  }
  r.meanAbs = finiteCount ? sumAbs / double(finiteCount) : 0.0;
  r.worstRatioIndex = r.worstCheckedIndex;
  r.worstRatio = r.worstCheckedRatio;
  r.worstAllowed = r.worstCheckedAllowed;
  // A non-finite mismatch, or an element nothing can be said about, is
  // the worst kind of difference.
  const int64_t first =
      r.firstNonFinite < 0 ? r.firstUnbounded
      : r.firstUnbounded < 0 ? r.firstNonFinite
                             : std::min(r.firstNonFinite, r.firstUnbounded);
  if (first >= 0) {
    r.worstIndex = first;
    r.worstRatioIndex = first;
  }
  return r;
}

} // namespace attnrt
