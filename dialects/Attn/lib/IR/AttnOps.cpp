//===- AttnOps.cpp - attn op verifiers, folders, canonicalizations --------===//
//
// Verifiers reject inconsistent shapes with a message naming both sides;
// folders and canonicalization patterns implement the algebraic identities
// of the dialect (merge(split(x)) = x, slice of a concat = the operand, ...).
//
//===----------------------------------------------------------------------===//
#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include <cmath>

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

using namespace mlir;
using namespace attnc::attn;

/// Two dimension sizes are compatible when equal or either is dynamic.
static bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// a * b, or nullopt when it overflows int64. Every size product a verifier
/// forms goes through it: a verifier must not accept because of a wrap.
static std::optional<int64_t> mulSize(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// Number of elements of a static shape, or nullopt when it overflows.
static std::optional<int64_t> numElements(ArrayRef<int64_t> shape) {
  std::optional<int64_t> n = 1;
  for (int64_t d : shape)
    if (!(n = mulSize(*n, d)))
      return std::nullopt;
  return n;
}

static std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  auto in = getInput().getType();
  auto w = getWeight().getType();
  auto res = getResult().getType();
  if (in.getRank() < 1)
    return emitOpError("input must have rank >= 1, found rank 0");
  if (Value lens = getRowLens()) {
    auto lt = cast<RankedTensorType>(lens.getType());
    if (in.getRank() != 3 || lt.getRank() != 1 ||
        !compatible(lt.getDimSize(0), in.getDimSize(0)))
      return emitOpError("rows(") << lt << ") needs a [B, T, K] input and [B] lengths, found input " << in;
  }
  if (w.getRank() != 2)
    return emitOpError("weight must be [K, N] (rank 2), found rank ")
           << w.getRank();
  if (res.getRank() != in.getRank())
    return emitOpError("result rank ")
           << res.getRank() << " differs from input rank " << in.getRank();
  int64_t k = in.getShape().back();
  if (!compatible(k, w.getDimSize(0)))
    return emitOpError("input feature size ")
           << dimStr(k) << " does not match weight rows (K) "
           << dimStr(w.getDimSize(0));
  int64_t n = w.getDimSize(1);
  if (!compatible(res.getShape().back(), n))
    return emitOpError("result feature size ")
           << dimStr(res.getShape().back()) << " does not match weight columns (N) "
           << dimStr(n);
  for (int64_t i = 0; i + 1 < in.getRank(); ++i)
    if (!compatible(in.getDimSize(i), res.getDimSize(i)))
      return emitOpError("result dimension ")
             << i << " (" << dimStr(res.getDimSize(i))
             << ") differs from input dimension (" << dimStr(in.getDimSize(i))
             << ")";
  // Storage types may differ (a bf16 input, a float32 result): the
  // product is computed in float32.
  for (Type t : {in.getElementType(), res.getElementType(), w.getElementType()})
    if (!isa<FloatType>(t))
      return emitOpError("element types must be floats, found ") << t;
  if (Value b = getBias()) {
    auto bt = cast<RankedTensorType>(b.getType());
    if (bt.getRank() != 1 || !compatible(bt.getDimSize(0), n))
      return emitOpError("bias must be [N] = [")
             << dimStr(n) << "], found " << bt;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() {
  auto in = getInput().getType();
  auto res = getResult().getType();
  if (in.getRank() < 1 || in.getRank() != res.getRank())
    return emitOpError("result rank ")
           << res.getRank() << " must equal input rank " << in.getRank()
           << " (>= 1)";
  int64_t n = in.getShape().back();
  // offset and size are each <= 2^63-1 (attribute constraints), so their
  // sum fits in uint64; compare without converting it back to int64.
  uint64_t off = getOffset(), size = getSize();
  if (!ShapedType::isDynamic(n) &&
      (size > static_cast<uint64_t>(n) || off > static_cast<uint64_t>(n) - size))
    return emitOpError("slice [")
           << off << ", " << off + size << ") exceeds the last dimension (" << n << ")";
  if (!compatible(res.getShape().back(), getSize()))
    return emitOpError("result last dimension ")
           << dimStr(res.getShape().back()) << " differs from size "
           << getSize();
  for (int64_t i = 0; i + 1 < in.getRank(); ++i)
    if (!compatible(in.getDimSize(i), res.getDimSize(i)))
      return emitOpError("result dimension ") << i << " differs from input";
  return success();
}

// slice(x, 0, N) -> x when x's last dimension is N and the types agree.
OpFoldResult SliceOp::fold(FoldAdaptor) {
  auto in = getInput().getType();
  if (getOffset() == 0 && in.getShape().back() == static_cast<int64_t>(getSize()) &&
      in == getResult().getType())
    return getInput();
  return {};
}

namespace {
// slice(concat_last(a0, ..., an), o, n) -> ai   when [o, o+n) is exactly ai.
struct SliceOfConcat : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto concat = op.getInput().getDefiningOp<tensor::ConcatOp>();
    if (!concat)
      return failure();
    int64_t rank = op.getInput().getType().getRank();
    if (static_cast<int64_t>(concat.getDim()) != rank - 1)
      return failure();
    int64_t pos = 0;
    for (Value in : concat.getInputs()) {
      int64_t n = cast<RankedTensorType>(in.getType()).getShape().back();
      if (ShapedType::isDynamic(n))
        return failure();
      if (pos == static_cast<int64_t>(op.getOffset()) && n == static_cast<int64_t>(op.getSize()) &&
          in.getType() == op.getType()) {
        rewriter.replaceOp(op, in);
        return success();
      }
      pos += n;
    }
    return failure();
  }
};
// slice(slice(x, o1, n1), o2, n2) -> slice(x, o1 + o2, n2)
struct SliceOfSlice : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<SliceOp>();
    if (!inner)
      return failure();
    int64_t off;
    if (__builtin_add_overflow(static_cast<int64_t>(inner.getOffset()),
                               static_cast<int64_t>(op.getOffset()), &off))
      return failure(); // out of bounds anyway; leave it to the verifier
    rewriter.replaceOpWithNewOp<SliceOp>(op, op.getType(), inner.getInput(),
                                         rewriter.getI64IntegerAttr(off),
                                         op.getSizeAttr());
    return success();
  }
};
} // namespace

void SliceOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<SliceOfConcat, SliceOfSlice>(context);
}

//===----------------------------------------------------------------------===//
// SplitHeadsOp / MergeHeadsOp
//===----------------------------------------------------------------------===//

LogicalResult SplitHeadsOp::verify() {
  auto in = getInput().getType();
  auto res = getResult().getType();
  if (in.getRank() != 3 || res.getRank() != 4)
    return emitOpError("expects [B, T, H*D] -> [B, H, T, D], found rank ")
           << in.getRank() << " -> rank " << res.getRank();
  int64_t h = getHeads();
  int64_t w = in.getDimSize(2);
  if (!ShapedType::isDynamic(w) && w % h != 0)
    return emitOpError("heads (")
           << h << ") must divide the model dimension (" << w << ")";
  if (!compatible(res.getDimSize(1), h))
    return emitOpError("result head dimension ")
           << dimStr(res.getDimSize(1)) << " differs from heads (" << h << ")";
  if (!ShapedType::isDynamic(w) && !compatible(res.getDimSize(3), w / h))
    return emitOpError("result head size ")
           << dimStr(res.getDimSize(3)) << " differs from " << w << " / " << h;
  if (!compatible(res.getDimSize(0), in.getDimSize(0)) ||
      !compatible(res.getDimSize(2), in.getDimSize(1)))
    return emitOpError("batch/sequence dimensions of result and input differ");
  return success();
}

// split_heads(merge_heads(x)) -> x
OpFoldResult SplitHeadsOp::fold(FoldAdaptor) {
  if (auto merge = getInput().getDefiningOp<MergeHeadsOp>())
    if (merge.getInput().getType() == getType())
      return merge.getInput();
  return {};
}

LogicalResult MergeHeadsOp::verify() {
  auto in = getInput().getType();
  auto res = getResult().getType();
  if (in.getRank() != 4 || res.getRank() != 3)
    return emitOpError("expects [B, H, T, D] -> [B, T, H*D], found rank ")
           << in.getRank() << " -> rank " << res.getRank();
  int64_t h = in.getDimSize(1), d = in.getDimSize(3);
  if (!ShapedType::isDynamic(h) && !ShapedType::isDynamic(d)) {
    std::optional<int64_t> hd = mulSize(h, d);
    if (!hd)
      return emitOpError("heads * head_dim = ")
             << h << " * " << d << " overflows int64";
    if (!compatible(res.getDimSize(2), *hd))
      return emitOpError("result model dimension ")
             << dimStr(res.getDimSize(2)) << " differs from heads * head_dim = "
             << *hd;
  }
  if (!compatible(res.getDimSize(0), in.getDimSize(0)) ||
      !compatible(res.getDimSize(1), in.getDimSize(2)))
    return emitOpError("batch/sequence dimensions of result and input differ");
  return success();
}

// merge_heads(split_heads(x)) -> x
OpFoldResult MergeHeadsOp::fold(FoldAdaptor) {
  if (auto split = getInput().getDefiningOp<SplitHeadsOp>())
    if (split.getInput().getType() == getType())
      return split.getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// SdpaOp
//===----------------------------------------------------------------------===//

/// The score modifiers of attn.sdpa and attn.probs (one rule for both).
template <typename Op>
static LogicalResult verifyScoreMods(Op op, int64_t hq) {
  if (auto cap = op.getSoftcap()) {
    double c = cap->convertToDouble();
    if (!std::isfinite(c) || c <= 0)
      return op.emitOpError("softcap must be positive and finite, found ") << c;
  }
  if (auto slopes = op.getAlibiSlopes()) {
    if (!ShapedType::isDynamic(hq) && int64_t(slopes->size()) != hq)
      return op.emitOpError("alibi_slopes has ")
             << slopes->size() << " entries, expected one per query head (" << hq << ")";
    for (double sl : *slopes)
      if (!std::isfinite(sl))
        return op.emitOpError("alibi_slopes entries must be finite");
  } else if (op.getAlibiBeforeScale()) {
    return op.emitOpError("alibi_before_scale needs alibi_slopes");
  }
  if (Value rb = op.getRelBias()) {
    auto rt = cast<RankedTensorType>(rb.getType());
    auto buckets = op.getRelBuckets();
    if (!buckets || buckets->size() % 2 != 1)
      return op.emitOpError("rel_bias needs rel_buckets with an odd count (2R + 1)");
    if (rt.getRank() != 2 || rt.isDynamicDim(0) ||
        (!ShapedType::isDynamic(hq) && !rt.isDynamicDim(1) && rt.getDimSize(1) != hq))
      return op.emitOpError("rel_bias ") << rt << " must be [buckets, query heads]";
    for (int32_t bkt : *buckets)
      if (bkt < 0 || bkt >= rt.getDimSize(0))
        return op.emitOpError("rel_buckets entry ") << bkt << " is outside the table's "
                                                    << rt.getDimSize(0) << " buckets";
  } else if (op.getRelBuckets()) {
    return op.emitOpError("rel_buckets needs a rel_bias table");
  }
  if (Value re = op.getRelEmb()) {
    auto et = cast<RankedTensorType>(re.getType());
    auto qt = cast<RankedTensorType>(op.getQuery().getType());
    if (et.getRank() != 2 || et.isDynamicDim(1) || et.getDimSize(1) % 2 != 1 ||
        !compatible(et.getDimSize(0), qt.getDimSize(3)))
      return op.emitOpError("rel_emb ") << et << " must be [head_dim, 2P - 1] with head_dim "
                                        << dimStr(qt.getDimSize(3));
  } else if (op.getRelKeyQuery()) {
    return op.emitOpError("rel_key_query needs a rel_emb table");
  }
  if (Value sk = op.getSinks()) {
    auto st = cast<RankedTensorType>(sk.getType());
    if (st.getRank() != 1 || (!ShapedType::isDynamic(hq) && !st.isDynamicDim(0) &&
                              st.getDimSize(0) != hq))
      return op.emitOpError("sinks ") << st << " must be [query heads] = [" << hq << "]";
  }
  return success();
}

LogicalResult SdpaOp::verify() {
  auto q = getQuery().getType(), k = getKey().getType(),
       v = getValue().getType(), o = getResult().getType();
  for (auto [name, t] : {std::pair<const char *, RankedTensorType>{"query", q},
                         {"key", k}, {"value", v}, {"result", o}})
    if (t.getRank() != 4)
      return emitOpError(name) << " must be rank 4, found " << t;
  // Storage types may differ (keys and values from a bf16 cache): the
  // attention is computed in float32.
  for (auto t : {q, k, v, o})
    if (!isa<FloatType>(t.getElementType()))
      return emitOpError("element types must be floats, found ") << t.getElementType();
  if (!compatible(k.getDimSize(1), v.getDimSize(1)) ||
      !compatible(k.getDimSize(2), v.getDimSize(2)))
    return emitOpError("key ") << k << " and value " << v
                               << " must agree on heads and sequence";
  int64_t d = q.getDimSize(3);
  if (!compatible(d, k.getDimSize(3)) || !compatible(d, v.getDimSize(3)))
    return emitOpError("head_dim differs: query ")
           << dimStr(d) << ", key " << dimStr(k.getDimSize(3)) << ", value "
           << dimStr(v.getDimSize(3));
  int64_t hq = q.getDimSize(1), hkv = k.getDimSize(1);
  if (!ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv) &&
      hq % hkv != 0)
    return emitOpError("kv heads (")
           << hkv << ") must divide query heads (" << hq << ")";
  for (int i : {0})
    if (!compatible(q.getDimSize(i), k.getDimSize(i)))
      return emitOpError("query and key batch sizes differ");
  // Result layout.
  bool bthd = getLayout() == HeadLayout::bthd;
  int64_t oh = bthd ? o.getDimSize(2) : o.getDimSize(1);
  int64_t ot = bthd ? o.getDimSize(1) : o.getDimSize(2);
  if (!compatible(o.getDimSize(0), q.getDimSize(0)) || !compatible(oh, hq) ||
      !compatible(ot, q.getDimSize(2)) || !compatible(o.getDimSize(3), d))
    return emitOpError("result type ")
           << o << " does not match query " << q << " in layout "
           << stringifyHeadLayout(getLayout());
  MaskKind m = getMask();
  bool hasWindow = getWindow().has_value();
  bool windowed = maskIsSliding(m) || maskIsChunked(m);
  if (windowed && (!hasWindow || *getWindow() < 1))
    return emitOpError("mask ") << stringifyMaskKind(m)
                                << " needs a positive window attribute (the "
                                << (maskIsChunked(m) ? "chunk size)" : "window)");
  if (!windowed && hasWindow)
    return emitOpError("window is only valid with a sliding_window or chunked mask");
  bool padding = maskHasLengths(m);
  if (padding && !getKvLens())
    return emitOpError("mask ") << stringifyMaskKind(m)
                                << " needs a kv_lens operand";
  if (!padding && getQLens())
    return emitOpError("q_lens is only valid with a padding mask");
  for (Value lens : {getKvLens(), getQLens()})
    if (lens) {
      auto lt = cast<RankedTensorType>(lens.getType());
      if (lt.getRank() != 1 || !compatible(lt.getDimSize(0), q.getDimSize(0)))
        return emitOpError("lengths ") << lt << " must be [batch] for query " << q;
    }
  if (!(getScale().convertToDouble() > 0))
    return emitOpError("scale must be positive, found ")
           << getScale().convertToDouble();
  return verifyScoreMods(*this, hq);
}

//===----------------------------------------------------------------------===//
// ProbsOp
//===----------------------------------------------------------------------===//

LogicalResult ProbsOp::verify() {
  auto q = cast<RankedTensorType>(getQuery().getType());
  auto k = cast<RankedTensorType>(getKey().getType());
  auto o = cast<RankedTensorType>(getResult().getType());
  if (q.getRank() != 4 || k.getRank() != 4 || o.getRank() != 4)
    return emitOpError("query, key and result must be rank 4");
  if (!compatible(q.getDimSize(3), k.getDimSize(3)))
    return emitOpError("query and key head_dim differ");
  int64_t hq = q.getDimSize(1), hkv = k.getDimSize(1);
  if (!ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv) && hq % hkv != 0)
    return emitOpError("kv heads (") << hkv << ") must divide query heads (" << hq << ")";
  if (!compatible(o.getDimSize(0), q.getDimSize(0)) ||
      !compatible(o.getDimSize(1), hq) || !compatible(o.getDimSize(2), q.getDimSize(2)) ||
      !compatible(o.getDimSize(3), k.getDimSize(2)))
    return emitOpError("result ") << o << " must be [B, Hq, Tq, Tkv] for query "
                                  << q << " and key " << k;
  MaskKind m = getMask();
  if ((maskIsSliding(m) || maskIsChunked(m)) != getWindow().has_value())
    return emitOpError("a window goes with a sliding_window or chunked mask, and only with them");
  bool padding = maskHasLengths(m);
  if ((padding && !getKvLens()) || (!padding && getQLens()))
    return emitOpError("padding masks need kv_lens; q_lens goes with them only");
  if (!(getScale().convertToDouble() > 0))
    return emitOpError("scale must be positive");
  return verifyScoreMods(*this, hq);
}

//===----------------------------------------------------------------------===//
// MaskRowsOp
//===----------------------------------------------------------------------===//

LogicalResult MaskRowsOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto lt = cast<RankedTensorType>(getLens().getType());
  if (in.getRank() != 3)
    return emitOpError("input must be [B, T, N], found ") << in;
  if (lt.getRank() != 1 || (!ShapedType::isDynamic(lt.getDimSize(0)) &&
                            !ShapedType::isDynamic(in.getDimSize(0)) &&
                            lt.getDimSize(0) != in.getDimSize(0)))
    return emitOpError("lengths ") << lt << " must be [batch] for input " << in;
  return success();
}

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

/// attn.rope's and attn.temperature's optional positions: [batch] of the
/// [B, H, T, D] input.
static LogicalResult verifyPositions(Operation *op, Value positions, RankedTensorType in) {
  if (!positions)
    return success();
  auto pt = cast<RankedTensorType>(positions.getType());
  if (pt.getRank() != 1 || (!pt.isDynamicDim(0) && !in.isDynamicDim(0) &&
                            pt.getDimSize(0) != in.getDimSize(0)))
    return op->emitOpError("positions ") << pt << " must be [batch] for input " << in;
  return success();
}

LogicalResult RopeOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  if (in.getRank() != 4 || in.isDynamicDim(3))
    return emitOpError("input must be [B, H, T, D] with a static D, found ") << in;
  int64_t d = in.getDimSize(3), r = getRotaryDim();
  if (r % 2 != 0 || r > d)
    return emitOpError("rotary_dim ") << r << " must be even and at most head_dim " << d;
  size_t pairs = size_t(r / 2);
  if (getInvFreq().size() != pairs)
    return emitOpError("inv_freq has ") << getInvFreq().size()
                                        << " entries, expected rotary_dim / 2 = " << pairs;
  if (auto l = getLongInvFreq(); l && l->size() != pairs)
    return emitOpError("long_inv_freq has ") << l->size()
                                             << " entries, expected rotary_dim / 2 = " << pairs;
  for (double f : getInvFreq())
    if (!std::isfinite(f) || f < 0)
      return emitOpError("inv_freq entries must be finite and non-negative, found ") << f;
  if (auto l = getLongInvFreq())
    for (double f : *l)
      if (!std::isfinite(f) || f < 0)
        return emitOpError("long_inv_freq entries must be finite and non-negative, found ") << f;
  if (getLongFrom() < 0)
    return emitOpError("long_from must be non-negative, found ") << getLongFrom();
  double af = getAttentionFactor().convertToDouble();
  if (!std::isfinite(af) || af <= 0)
    return emitOpError("attention_factor must be positive and finite, found ") << af;
  double df = getDynamicFactor().convertToDouble();
  if (!std::isfinite(df) || df < 0)
    return emitOpError("dynamic_factor must be non-negative and finite, found ") << df;
  if (df > 0 && (getDynamicFrom() < 1 || r < 4 || getLongInvFreq()))
    return emitOpError("dynamic_factor needs dynamic_from >= 1, rotary_dim >= 4 and no "
                       "long_inv_freq, found dynamic_from ")
           << getDynamicFrom() << ", rotary_dim " << r;
  if (df == 0 && getDynamicFrom() != 0)
    return emitOpError("dynamic_from needs a dynamic_factor");
  return verifyPositions(getOperation(), getPositions(), in);
}

//===----------------------------------------------------------------------===//
// TemperatureOp
//===----------------------------------------------------------------------===//

LogicalResult TemperatureOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  if (in.getRank() != 4)
    return emitOpError("input must be [B, H, T, D], found ") << in;
  double a = getAttnScale().convertToDouble();
  if (!std::isfinite(a) || a < 0)
    return emitOpError("attn_scale must be non-negative and finite, found ") << a;
  return verifyPositions(getOperation(), getPositions(), in);
}

//===----------------------------------------------------------------------===//
// ClipOp, RmsNormOp
//===----------------------------------------------------------------------===//

LogicalResult ClipOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  if (in.getRank() != 4)
    return emitOpError("input must be [B, H, T, D], found ") << in;
  double c = getLimit().convertToDouble();
  if (!std::isfinite(c) || !(c > 0))
    return emitOpError("limit must be positive and finite, found ") << c;
  return success();
}

LogicalResult RmsNormOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  if (in.getRank() != 4 || in.isDynamicDim(3))
    return emitOpError("input must be [B, H, T, D] with a static D, found ") << in;
  if (!getWeight()) {
    if (getBias() || getPerHeadWeight())
      return emitOpError("a bias or per_head_weight needs a weight");
    double eps = getEps().convertToDouble();
    if (!std::isfinite(eps) || eps <= 0)
      return emitOpError("eps must be positive and finite, found ") << eps;
    return success();
  }
  auto w = cast<RankedTensorType>(getWeight().getType());
  if (w.getRank() != 1 || w.isDynamicDim(0))
    return emitOpError("weight must be a static vector, found ") << w;
  int64_t want = in.getDimSize(3);
  if (getAcrossHeads() && getPerHeadWeight())
    return emitOpError("across_heads and per_head_weight exclude each other");
  if (getAcrossHeads() || getPerHeadWeight()) {
    if (in.isDynamicDim(1))
      return emitOpError(getAcrossHeads() ? "across_heads" : "per_head_weight")
             << " needs a static head count";
    want *= in.getDimSize(1);
  }
  const bool wide = getAcrossHeads() || getPerHeadWeight();
  if (w.getDimSize(0) != want)
    return emitOpError("weight has ") << w.getDimSize(0) << " entries, expected " << want
                                      << (wide ? " (heads * head_dim)" : " (head_dim)");
  if (getBias()) {
    auto bt = cast<RankedTensorType>(getBias().getType());
    if (bt.getRank() != 1 || bt.isDynamicDim(0) || bt.getDimSize(0) != want)
      return emitOpError("bias must have the weight's ")
             << want << " entries, found " << bt;
  }
  double eps = getEps().convertToDouble(), off = getWeightOffset().convertToDouble();
  if (!std::isfinite(eps) || eps <= 0)
    return emitOpError("eps must be positive and finite, found ") << eps;
  if (!std::isfinite(off))
    return emitOpError("weight_offset must be finite");
  return success();
}

//===----------------------------------------------------------------------===//
// CacheAppendOp
//===----------------------------------------------------------------------===//

LogicalResult CacheAppendOp::verify() {
  auto k = cast<RankedTensorType>(getKey().getType());
  auto c = cast<RankedTensorType>(getKeyCache().getType());
  auto l = cast<RankedTensorType>(getLens().getType());
  if (k.getRank() != 4 || c.getRank() != 4)
    return emitOpError("new rows and caches must be [B, Hkv, T, D], found ")
           << k << " and " << c;
  if (!compatible(k.getDimSize(0), c.getDimSize(0)) ||
      !compatible(k.getDimSize(1), c.getDimSize(1)) ||
      !compatible(k.getDimSize(3), c.getDimSize(3)))
    return emitOpError("new rows ") << k << " do not fit cache " << c
                                    << " (batch, kv heads and head_dim must agree)";
  if (!ShapedType::isDynamic(k.getDimSize(2)) &&
      !ShapedType::isDynamic(c.getDimSize(2)) && k.getDimSize(2) > c.getDimSize(2))
    return emitOpError("cache of ") << c.getDimSize(2) << " rows cannot take "
                                    << k.getDimSize(2) << " new rows";
  for (Value lens : {getPositions(), getLens()})
    if (lens) {
      auto lt = cast<RankedTensorType>(lens.getType());
      if (lt.getRank() != 1 || !compatible(lt.getDimSize(0), k.getDimSize(0)))
        return emitOpError("positions and lens must be [batch], found ") << lt;
    }
  (void)l;
  return success();
}

//===----------------------------------------------------------------------===//
// ScaleOp
//===----------------------------------------------------------------------===//

// scale(x, 1) -> x;  scale(scale(x, a), b) -> scale(x, a*b)
OpFoldResult ScaleOp::fold(FoldAdaptor) {
  if (getFactor().convertToDouble() == 1.0)
    return getInput();
  if (auto inner = getInput().getDefiningOp<ScaleOp>()) {
    double f = inner.getFactor().convertToDouble() *
               getFactor().convertToDouble();
    getInputMutable().assign(inner.getInput());
    setFactorAttr(FloatAttr::get(Float64Type::get(getContext()), f));
    return getResult();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// ViewOp
//===----------------------------------------------------------------------===//

SmallVector<OpFoldResult> ViewOp::getMixedSizes() {
  Builder b(getContext());
  return getMixedValues(getStaticSizes(), getSizes(), b);
}

SmallVector<OpFoldResult> ViewOp::getMixedStrides() {
  Builder b(getContext());
  return getMixedValues(getStaticStrides(), getStrides(), b);
}

LogicalResult ViewOp::verify() {
  auto res = getResult().getType();
  auto src = getSource().getType();
  if (src.getElementType() != res.getElementType())
    return emitOpError("element types of source and result differ");
  ArrayRef<int64_t> ss = getStaticSizes(), st = getStaticStrides();
  if (static_cast<int64_t>(ss.size()) != res.getRank() ||
      static_cast<int64_t>(st.size()) != res.getRank())
    return emitOpError("expects ")
           << res.getRank() << " sizes and strides (result rank), found "
           << ss.size() << " sizes and " << st.size() << " strides";
  auto countDyn = [](ArrayRef<int64_t> a) {
    return llvm::count_if(a, [](int64_t v) { return ShapedType::isDynamic(v); });
  };
  if (countDyn(ss) != static_cast<int64_t>(getSizes().size()) ||
      countDyn(st) != static_cast<int64_t>(getStrides().size()))
    return emitOpError("number of dynamic size/stride operands does not match "
                       "the '?' entries");
  for (int64_t i = 0; i < res.getRank(); ++i) {
    if (ShapedType::isDynamic(ss[i]) != res.isDynamicDim(i) ||
        (!ShapedType::isDynamic(ss[i]) && ss[i] != res.getDimSize(i)))
      return emitOpError("size ")
             << i << " (" << dimStr(ss[i]) << ") differs from result dimension "
             << dimStr(res.getDimSize(i));
    if (!ShapedType::isDynamic(st[i]) && st[i] < 0)
      return emitOpError("stride ") << i << " is negative (" << st[i] << ")";
  }
  // When everything is static, the view must stay inside the source: its
  // last element, offset + sum_i (size_i - 1) * stride_i, computed without
  // overflow (a wrapped sum would look in bounds).
  if (src.hasStaticShape() && res.hasStaticShape() && countDyn(st) == 0) {
    std::optional<int64_t> srcN = numElements(src.getShape());
    if (!srcN)
      return emitOpError("source ") << src << " has more elements than int64 counts";
    if (llvm::is_contained(res.getShape(), 0))
      return success();
    int64_t last = static_cast<int64_t>(getOffset());
    for (int64_t i = 0; i < res.getRank(); ++i) {
      std::optional<int64_t> term = mulSize(res.getDimSize(i) - 1, st[i]);
      if (!term || __builtin_add_overflow(last, *term, &last))
        return emitOpError("view's last element (offset + sum of (size - 1) * "
                           "stride) overflows int64");
    }
    if (last >= *srcN)
      return emitOpError("view reaches element ")
             << last << " of a source with " << *srcN << " elements";
    return success();
  }
  // With dynamic outer dimensions (batch, sequence) the rows are not
  // counted, but the columns are: the source's static inner dimensions
  // make rows of W elements (their product: 192 of [?, ?, 192], 64 of
  // [?, ?, 4, 16]), and each view element's column is offset % W plus its
  // steps along the view's dimensions whose stride is less than W (a
  // stride that is a multiple of W moves whole rows). The last column
  // must be < W, or the view reads the next row's elements (the fused QKV
  // split, the head views and the head merge are such views).
  int64_t w = 1;
  for (int64_t d : llvm::reverse(src.getShape())) {
    if (ShapedType::isDynamic(d))
      break;
    std::optional<int64_t> prod = mulSize(w, d);
    w = prod ? *prod : 0;
  }
  if (src.getRank() >= 1 && !ShapedType::isDynamic(src.getShape().back()) && w > 0 &&
      !llvm::is_contained(res.getShape(), 0)) {
    // Its rows are the source's (dynamic) ones: it starts in the first
    // row, or it would end past the last.
    if (static_cast<int64_t>(getOffset()) >= w)
      return emitOpError("offset ")
             << getOffset() << " starts past the first row (" << w
             << " elements) of a source with dynamic rows";
    int64_t col = static_cast<int64_t>(getOffset());
    bool counted = true;
    for (int64_t i = 0; i < res.getRank() && counted; ++i) {
      if (ShapedType::isDynamic(st[i]) || st[i] % w == 0) {
        continue; // whole rows (a dynamic stride: the batch's, rows times W)
      } else if (st[i] < w && !res.isDynamicDim(i)) {
        std::optional<int64_t> term = mulSize(res.getDimSize(i) - 1, st[i]);
        counted = term && !__builtin_add_overflow(col, *term, &col);
      } else {
        counted = false; // (a stride past a row that is no multiple of it)
      }
    }
    if (counted && col >= w)
      return emitOpError("view reaches column ")
             << col << " of the source's rows of " << w << " elements";
  }
  return success();
}

#define GET_OP_CLASSES
#include "attnc/Dialect/Attn/IR/AttnOps.cpp.inc"
