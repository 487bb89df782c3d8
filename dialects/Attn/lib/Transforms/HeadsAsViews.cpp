//===- HeadsAsViews.cpp - head splits and merges as strided views ---------===//
//
// split_heads(slice(x, o, n)) -> view(x) [B,H,T,D] strides [T*N, D, N, 1] offset o
// split_heads(x)              -> view(x) [B,H,T,D] strides [T*W, D, W, 1] offset 0
// merge_heads(sdpa(...))      -> view(sdpa(...){layout = bthd}) [B,T,H*D]
// slice(x, o, n)              -> view(x) [..., n] (row-major strides of x) offset o
//
// Splitting into heads and slicing Q/K/V out of a fused projection only
// re-read memory; after this pass the IR says so, and the lowering turns
// each attn.view into a memref.reinterpret_cast of the producer's buffer.
//
//===----------------------------------------------------------------------===//
#include "attnc/Dialect/Attn/IR/AttnOps.h"
#include "attnc/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

namespace attnc::attn {
#define GEN_PASS_DEF_ATTNHEADSASVIEWSPASS
#include "attnc/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnc::attn

using namespace mlir;
using namespace attnc::attn;

namespace {

/// Dimension `i` of tensor `t`: a static attribute or a tensor.dim.
OpFoldResult dimOf(OpBuilder &b, Location loc, Value t, int64_t i) {
  auto ty = cast<RankedTensorType>(t.getType());
  if (!ty.isDynamicDim(i))
    return b.getIndexAttr(ty.getDimSize(i));
  return tensor::DimOp::create(b, loc, t, i).getResult();
}

/// a * b, folded when both are static.
OpFoldResult mul(OpBuilder &b, Location loc, OpFoldResult x, OpFoldResult y) {
  std::optional<int64_t> cx = getConstantIntValue(x), cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx * *cy);
  if (cx && *cx == 1)
    return y;
  if (cy && *cy == 1)
    return x;
  auto val = [&](OpFoldResult f) -> Value {
    if (auto v = dyn_cast<Value>(f))
      return v;
    return arith::ConstantIndexOp::create(b, loc, *getConstantIntValue(f));
  };
  return arith::MulIOp::create(b, loc, val(x), val(y)).getResult();
}

/// Row-major strides of tensor `t`.
SmallVector<OpFoldResult> rowMajorStrides(OpBuilder &b, Location loc, Value t) {
  int64_t rank = cast<RankedTensorType>(t.getType()).getRank();
  SmallVector<OpFoldResult> strides(rank);
  OpFoldResult acc = b.getIndexAttr(1);
  for (int64_t i = rank - 1; i >= 0; --i) {
    strides[i] = acc;
    if (i > 0)
      acc = mul(b, loc, acc, dimOf(b, loc, t, i));
  }
  return strides;
}

ViewOp createView(OpBuilder &b, Location loc, Value source,
                  ArrayRef<OpFoldResult> sizes, ArrayRef<OpFoldResult> strides,
                  int64_t offset) {
  SmallVector<Value> dynSizes, dynStrides;
  SmallVector<int64_t> staticSizes, staticStrides;
  dispatchIndexOpFoldResults(sizes, dynSizes, staticSizes);
  dispatchIndexOpFoldResults(strides, dynStrides, staticStrides);
  auto srcTy = cast<RankedTensorType>(source.getType());
  auto resTy = RankedTensorType::get(staticSizes, srcTy.getElementType());
  return ViewOp::create(b, loc, resTy, source, dynSizes, dynStrides,
                        b.getDenseI64ArrayAttr(staticSizes),
                        b.getDenseI64ArrayAttr(staticStrides),
                        b.getI64IntegerAttr(offset));
}

struct HeadsAsViewsPass final
    : attnc::attn::impl::AttnHeadsAsViewsPassBase<HeadsAsViewsPass> {
  using Base::Base;

  /// Replaces `op` by `view` when their types agree (else drops the view).
  bool replaceByView(Operation *op, ViewOp view) {
    if (view.getType() != op->getResult(0).getType()) {
      view->erase();
      return false;
    }
    op->getResult(0).replaceAllUsesWith(view.getResult());
    op->erase();
    ++numViews;
    return true;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();

    // 1. merge_heads(sdpa) -> sdpa writes [B,T,H,D]; the merge is a reshape.
    SmallVector<SdpaOp> sdpas;
    func.walk([&](SdpaOp op) { sdpas.push_back(op); });
    for (SdpaOp op : sdpas) {
      auto oldTy = op.getType();
      // The view of the [B, T, H, D] result has exactly this type; a merge
      // typed differently (say, more static) is left alone.
      int64_t h = oldTy.getDimSize(1), d = oldTy.getDimSize(3);
      auto viewTy = RankedTensorType::get(
          {oldTy.getDimSize(0), oldTy.getDimSize(2),
           ShapedType::isDynamic(h) || ShapedType::isDynamic(d) ? ShapedType::kDynamic
                                                                 : h * d},
          oldTy.getElementType());
      if (op.getLayout() != HeadLayout::bhtd || op->use_empty() ||
          !llvm::all_of(op->getUsers(), [&](Operation *u) {
            return isa<MergeHeadsOp>(u) && u->getResult(0).getType() == viewTy;
          }))
        continue;
      OpBuilder b(op);
      auto newTy = RankedTensorType::get(
          {oldTy.getDimSize(0), oldTy.getDimSize(2), oldTy.getDimSize(1),
           oldTy.getDimSize(3)},
          oldTy.getElementType());
      auto newOp = cast<SdpaOp>(b.clone(*op));
      newOp.getResult().setType(newTy);
      newOp.setLayout(HeadLayout::bthd);
      for (Operation *u : llvm::make_early_inc_range(op->getUsers())) {
        auto merge = cast<MergeHeadsOp>(u);
        OpBuilder mb(merge);
        Location loc = merge.getLoc();
        Value src = newOp.getResult();
        OpFoldResult bsz = dimOf(mb, loc, src, 0), t = dimOf(mb, loc, src, 1);
        OpFoldResult w = mul(mb, loc, dimOf(mb, loc, src, 2),
                             dimOf(mb, loc, src, 3));
        auto view = createView(mb, loc, src, {bsz, t, w},
                               {mul(mb, loc, t, w), w, mb.getIndexAttr(1)}, 0);
        replaceByView(merge, view);
      }
      if (newOp->use_empty())
        newOp->erase();
      if (op->use_empty())
        op->erase();
    }

    // 2. split_heads([slice] x) -> view of x.
    SmallVector<SplitHeadsOp> splits;
    func.walk([&](SplitHeadsOp op) { splits.push_back(op); });
    for (SplitHeadsOp op : splits) {
      Value base = op.getInput();
      int64_t offset = 0;
      if (auto slice = base.getDefiningOp<SliceOp>()) {
        base = slice.getInput();
        offset = slice.getOffset();
      }
      auto baseTy = cast<RankedTensorType>(base.getType());
      if (baseTy.getRank() != 3 || base.getDefiningOp<ViewOp>())
        continue;
      auto resTy = op.getType();
      if (resTy.isDynamicDim(3))
        continue;
      OpBuilder b(op);
      Location loc = op.getLoc();
      OpFoldResult bsz = dimOf(b, loc, base, 0), t = dimOf(b, loc, base, 1);
      OpFoldResult n = dimOf(b, loc, base, 2);
      int64_t d = resTy.getDimSize(3);
      auto view = createView(
          b, loc, base, {bsz, b.getIndexAttr(op.getHeads()), t, b.getIndexAttr(d)},
          {mul(b, loc, t, n), b.getIndexAttr(d), n, b.getIndexAttr(1)}, offset);
      replaceByView(op, view);
    }

    // 3. Remaining slices -> views (dead ones are simply erased).
    SmallVector<SliceOp> slices;
    func.walk([&](SliceOp op) { slices.push_back(op); });
    for (SliceOp op : slices) {
      if (op->use_empty()) {
        op->erase();
        continue;
      }
      Value base = op.getInput();
      if (base.getDefiningOp<ViewOp>())
        continue;
      OpBuilder b(op);
      Location loc = op.getLoc();
      int64_t rank = op.getType().getRank();
      SmallVector<OpFoldResult> sizes;
      for (int64_t i = 0; i + 1 < rank; ++i)
        sizes.push_back(dimOf(b, loc, base, i));
      sizes.push_back(b.getIndexAttr(op.getSize()));
      auto view = createView(b, loc, base, sizes, rowMajorStrides(b, loc, base),
                             op.getOffset());
      replaceByView(op, view);
    }
  }
};

} // namespace
