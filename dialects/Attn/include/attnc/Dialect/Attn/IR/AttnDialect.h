//===- AttnDialect.h - attn dialect declaration -----------------*- C++ -*-===//
//
// Declares the attn dialect class and its enum attributes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DIALECT_ATTN_IR_ATTNDIALECT_H
#define ATTNC_DIALECT_ATTN_IR_ATTNDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "mlir/IR/BuiltinOps.h"

#include "attnc/Dialect/Attn/IR/AttnEnums.h.inc"

namespace attnc::attn {
/// The parts of a mask kind, which every reader of one asks (the verifiers,
/// KeyVisibility, the evaluator): the `*_padding` kinds are their base kind
/// with the valid lengths (q_lens, kv_lens).
inline bool maskHasLengths(MaskKind m) {
  return m == MaskKind::padding || m == MaskKind::causal_padding ||
         m == MaskKind::sliding_window_padding || m == MaskKind::chunked_padding ||
         m == MaskKind::bidirectional_window_padding;
}
/// A window's keys reach window - 1 past the query's own position too
/// (|i' - j| < window: EmbeddingGemma's sliding layers).
inline bool maskIsBidirectional(MaskKind m) {
  return m == MaskKind::bidirectional_window || m == MaskKind::bidirectional_window_padding;
}
/// A window (`window`): j > i' - window, and j < i' + window when bidirectional.
inline bool maskIsSliding(MaskKind m) {
  return m == MaskKind::sliding_window || m == MaskKind::sliding_window_padding ||
         maskIsBidirectional(m);
}
inline bool maskIsChunked(MaskKind m) {
  return m == MaskKind::chunked || m == MaskKind::chunked_padding;
}
inline bool maskIsCausal(MaskKind m) {
  return m != MaskKind::none && m != MaskKind::padding && !maskIsBidirectional(m);
}
/// The kind without its lengths (causal_padding -> causal, ...).
inline MaskKind maskWithoutLengths(MaskKind m) {
  switch (m) {
  case MaskKind::padding: return MaskKind::none;
  case MaskKind::causal_padding: return MaskKind::causal;
  case MaskKind::sliding_window_padding: return MaskKind::sliding_window;
  case MaskKind::chunked_padding: return MaskKind::chunked;
  case MaskKind::bidirectional_window_padding: return MaskKind::bidirectional_window;
  default: return m;
  }
}
} // namespace attnc::attn

// The target attribute interface, then the attribute classes (which
// implement it), then the dialect: the dialect's discardable-attribute helpers
// (AttnBase.td, discardableAttrs) name two of them.
#include "attnc/Dialect/Attn/IR/AttnTargetInterface.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/Attn/IR/AttnAttrs.h.inc"

#include "attnc/Dialect/Attn/IR/AttnDialect.h.inc"

#endif // ATTNC_DIALECT_ATTN_IR_ATTNDIALECT_H
