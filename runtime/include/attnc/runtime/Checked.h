//===- Checked.h - Overflow-safe size arithmetic ----------------*- C++ -*-===//
//
// The one place where libattnrt and attnc-run multiply or add sizes. Every
// helper returns false (and leaves `out` unspecified) when the result does
// not fit, or when an operand is negative: sizes are never negative, so a
// negative operand is as wrong as an overflow.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_CHECKED_H
#define ATTNC_RUNTIME_CHECKED_H

#include <cstdint>
#include <initializer_list>

namespace attnrt {

/// out = a * b for non-negative a, b; false on overflow or a negative operand.
inline bool checkedMul(int64_t a, int64_t b, int64_t &out) {
  if (a < 0 || b < 0)
    return false;
  return !__builtin_mul_overflow(a, b, &out);
}

/// out = a + b for non-negative a, b; false on overflow or a negative operand.
inline bool checkedAdd(int64_t a, int64_t b, int64_t &out) {
  if (a < 0 || b < 0)
    return false;
  return !__builtin_add_overflow(a, b, &out);
}

/// out = product of `factors` (1 for none); false on overflow or a negative
/// factor.
inline bool checkedProduct(std::initializer_list<int64_t> factors,
                           int64_t &out) {
  int64_t r = 1;
  for (int64_t f : factors)
    if (!checkedMul(r, f, r))
      return false;
  out = r;
  return true;
}

/// out = sum of `terms`; false on overflow or a negative term.
inline bool checkedSum(std::initializer_list<int64_t> terms, int64_t &out) {
  int64_t r = 0;
  for (int64_t t : terms)
    if (!checkedAdd(r, t, r))
      return false;
  out = r;
  return true;
}

} // namespace attnrt

#endif // ATTNC_RUNTIME_CHECKED_H
