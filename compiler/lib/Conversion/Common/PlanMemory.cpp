//===- PlanMemory.cpp - attn on tensors -> buffers and kernel phases ------===//
//
// attnc-plan-memory, the second half of attn-to-loops (after
// attnc-encode-weights). Lowers each attn function to destination-passing
// style on memrefs:
//   (x, weights...) -> y    becomes    (x, weights..., y, ws) -> index
// This pass does memory planning only; the kernels come from the ops'
// attn::TiledOpInterface models (TiledOps.cpp, over the builders of
// LoopBuilders.h), each emitting phases as top-level scf.foralls:
//  - buffers of intermediate values are memref.views into the caller's
//    workspace `ws` (bump-allocated, 64-byte aligned), computed in the
//    prologue; attn.view becomes a memref.reinterpret_cast of its source's
//    buffer (zero copies);
//  - weight arguments that attnc-encode-weights gave a packed layout
//    (attn.panel) change type to it ([P, K, panel], [P*panel]), the layout
//    NAME_pack writes;
//  - attn.linear over packed weights, sdpa, probs, cache_append, mask_rows
//    -> TiledOpInterface::buildTiledPhases; copies (slices, head split/merge, concat), scale and unpacked linears
//    are one-task phases of linalg.generic.
// The function returns the workspace size; its phases assume `ws` is that
// large (attnc-outline-tasks splits size query and phases apart).
//
//===----------------------------------------------------------------------===//
#include "attnc/Conversion/Passes.h"
#include "LoopBuilders.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "attnc/Dialect/Attn/IR/AttnInterfaces.h"
#include "attnc/Dialect/Attn/IR/AttnKernelsInterface.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"
#include "attnc/Target/Isa.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/IRMapping.h"

namespace attnc {
#define GEN_PASS_DEF_ATTNPLANMEMORYPASS
#include "attnc/Conversion/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc::attn;
using attnc::attn::AttnDialect;

namespace {

constexpr int64_t kAlign = 64;

/// The function argument a result is tied to: the updated KV caches of
/// attn.cache_append are written in place into the caller's cache buffers
/// (no output argument of their own), as IREE's tied results are.
BlockArgument tiedArgument(Value result) {
  auto app = result.getDefiningOp<CacheAppendOp>();
  if (!app)
    return {};
  Value cache = result == app.getNewKeyCache()     ? app.getKeyCache()
                : result == app.getNewValueCache() ? app.getValueCache()
                                                   : Value();
  return dyn_cast_or_null<BlockArgument>(cache);
}

/// Lowers one function. `b` inserts into the new function's prologue (where
/// sizes and buffers are set up); `body` into the guarded compute region.
class FunctionLowering {
public:
  FunctionLowering(func::FuncOp oldFn, func::FuncOp newFn, TargetAttrInterface target)
      : oldFn(oldFn), newFn(newFn), b(oldFn.getLoc(), newFn.getContext()),
        target(target) {}

  LogicalResult run();

private:
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value val(OpFoldResult f) {
    if (auto v = dyn_cast<Value>(f))
      return v;
    return idx(*getConstantIntValue(f));
  }
  /// Dimension `i` of a mapped buffer.
  OpFoldResult dim(Value buf, int64_t i) {
    auto ty = cast<MemRefType>(buf.getType());
    if (!ty.isDynamicDim(i))
      return b.getIndexAttr(ty.getDimSize(i));
    return memref::DimOp::create(b, buf, i).getResult();
  }
  Value alloc(RankedTensorType ty, ArrayRef<OpFoldResult> dims);
  Value allocFor(Value tensor, ArrayRef<OpFoldResult> dims);
  Value contiguous(Value buf);
  Value reinterpret(Value buf, ArrayRef<OpFoldResult> sizes,
                    ArrayRef<OpFoldResult> strides, int64_t offset);
  LogicalResult prologue(Operation *op);
  LogicalResult emit(Operation *op);
  void oneTask(llvm::function_ref<void(ImplicitLocOpBuilder &)> fn);
  void copy(ImplicitLocOpBuilder &c, Value src, Value dst);
  void linear(ImplicitLocOpBuilder &c, Value in, Value w, Value bias, Value out);

  func::FuncOp oldFn, newFn;
  ImplicitLocOpBuilder b;
  TargetAttrInterface target;
public:
  int64_t perRowFloats = 0, buffers = 0; ///< workspace bound (see abi.h)
private:
  IRMapping map;              ///< tensors -> buffers, index values -> clones
  /// Per op: buffers prepared in the prologue (views, scratch) and copies
  /// that must run before the op (packing a strided source).
  DenseMap<Operation *, SmallVector<Value>> aux;
  DenseMap<Operation *, SmallVector<std::pair<Value, Value>>> preCopies;
  Operation *current = nullptr;
  Value wsBuf, total;
  SmallVector<Value> outBufs; ///< one output argument per result
  DenseMap<Value, int64_t> packedCols; ///< packed weight/bias -> logical N
  SmallVector<Value> returned; ///< the tensors the old function returns

  /// What the TiledOpInterface models see of this function.
  struct Phases final : attnc::attn::PhaseContext {
    FunctionLowering &fl;
    explicit Phases(FunctionLowering &fl) : fl(fl) {}
    ImplicitLocOpBuilder &builder() override { return fl.b; }
    TargetAttrInterface target() const override { return fl.target; }
    Value buffer(Value v) override { return v ? fl.map.lookup(v) : Value(); }
    int64_t packedColumns(Value buf) override { return fl.packedCols.lookup(buf); }
    ArrayRef<Value> scratch(Operation *op) override {
      auto it = fl.scratch.find(op);
      return it == fl.scratch.end() ? ArrayRef<Value>() : ArrayRef<Value>(it->second);
    }
  } phases{*this};
  /// Per op: workspace buffers its target's kernel asked for (attn.sdpa's
  /// staged K and V), handed over through PhaseContext::scratch.
  DenseMap<Operation *, SmallVector<Value>> scratch;
};

Value FunctionLowering::alloc(RankedTensorType ty, ArrayRef<OpFoldResult> dims) {
  SmallVector<Value> dyn;
  Value bytes = idx(ty.getElementTypeBitWidth() / 8);
  // Per-row bound: every buffer has at most batch and seq_len as dynamic
  // dimensions, so its static dimensions' product bounds its floats per row.
  int64_t staticFloats = 1;
  for (int64_t d : ty.getShape())
    if (!ShapedType::isDynamic(d))
      staticFloats *= d;
  perRowFloats += staticFloats;
  ++buffers;
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (ty.isDynamicDim(i))
      dyn.push_back(val(d));
    bytes = arith::MulIOp::create(b, bytes, val(d));
  }
  // Round up to kAlign.
  bytes = arith::MulIOp::create(
      b, arith::DivUIOp::create(b, arith::AddIOp::create(b, bytes, idx(kAlign - 1)),
                                idx(kAlign)),
      idx(kAlign));
  auto mty = MemRefType::get(ty.getShape(), ty.getElementType());
  Value buf = memref::ViewOp::create(b, mty, wsBuf, total, dyn);
  total = arith::AddIOp::create(b, total, bytes);
  return buf;
}

/// The buffer a tensor-producing op writes: the output argument when the op
/// computes the returned value, else a fresh workspace buffer.
Value FunctionLowering::allocFor(Value tensor, ArrayRef<OpFoldResult> dims) {
  for (auto [r, out] : llvm::zip(returned, outBufs))
    if (tensor == r && cast<ShapedType>(tensor.getType()).getShape() ==
                           cast<MemRefType>(out.getType()).getShape())
      return out;
  return alloc(cast<RankedTensorType>(tensor.getType()), dims);
}

/// `buf` itself when it has the identity layout, else a packed copy (the copy
/// is emitted in the compute region when that runs).
Value FunctionLowering::contiguous(Value buf) {
  auto ty = cast<MemRefType>(buf.getType());
  if (ty.getLayout().isIdentity())
    return buf;
  SmallVector<OpFoldResult> dims;
  for (int64_t i = 0; i < ty.getRank(); ++i)
    dims.push_back(dim(buf, i));
  Value dst = alloc(RankedTensorType::get(ty.getShape(), ty.getElementType()), dims);
  preCopies[current].push_back({buf, dst});
  return dst;
}

Value FunctionLowering::reinterpret(Value buf, ArrayRef<OpFoldResult> sizes,
                                    ArrayRef<OpFoldResult> strides,
                                    int64_t offset) {
  SmallVector<int64_t> staticSizes, staticStrides;
  SmallVector<Value> dynSizes, dynStrides;
  dispatchIndexOpFoldResults(sizes, dynSizes, staticSizes);
  dispatchIndexOpFoldResults(strides, dynStrides, staticStrides);
  auto et = cast<MemRefType>(buf.getType()).getElementType();
  auto layout = StridedLayoutAttr::get(b.getContext(), offset, staticStrides);
  auto ty = MemRefType::get(staticSizes, et, layout);
  return memref::ReinterpretCastOp::create(b, ty, buf, b.getIndexAttr(offset),
                                           sizes, strides);
}

/// Row-major strides of a buffer with the given dims.
static SmallVector<OpFoldResult> rowMajor(ImplicitLocOpBuilder &b,
                                          ArrayRef<OpFoldResult> dims) {
  SmallVector<OpFoldResult> strides(dims.size());
  OpFoldResult acc = b.getIndexAttr(1);
  for (int64_t i = dims.size() - 1; i >= 0; --i) {
    strides[i] = acc;
    auto ca = getConstantIntValue(acc), cd = getConstantIntValue(dims[i]);
    if (ca && cd) {
      acc = b.getIndexAttr(*ca * *cd);
    } else {
      auto v = [&](OpFoldResult f) -> Value {
        if (auto x = dyn_cast<Value>(f))
          return x;
        return arith::ConstantIndexOp::create(b, *getConstantIntValue(f));
      };
      acc = arith::MulIOp::create(b, v(acc), v(dims[i])).getResult();
    }
  }
  return strides;
}

LogicalResult FunctionLowering::prologue(Operation *op) {
  current = op;
  b.setLoc(op->getLoc());
  auto dimsOf = [&](Value buf) {
    SmallVector<OpFoldResult> d;
    for (int64_t i = 0; i < cast<MemRefType>(buf.getType()).getRank(); ++i)
      d.push_back(dim(buf, i));
    return d;
  };
  // Static result dimensions win over computed ones.
  auto resolve = [&](Value result, SmallVector<OpFoldResult> d) {
    auto ty = cast<RankedTensorType>(result.getType());
    for (int64_t i = 0; i < ty.getRank(); ++i)
      if (!ty.isDynamicDim(i))
        d[i] = b.getIndexAttr(ty.getDimSize(i));
    return d;
  };
  auto mapMixed = [&](SmallVector<OpFoldResult> v) {
    for (OpFoldResult &f : v)
      if (auto x = dyn_cast<Value>(f))
        f = map.lookup(x);
    return v;
  };

  if (auto d = dyn_cast<tensor::DimOp>(op)) {
    std::optional<int64_t> c = d.getConstantIndex();
    if (!c)
      return op->emitOpError("attnc-plan-memory needs a constant dimension index");
    int64_t rank = cast<ShapedType>(d.getSource().getType()).getRank();
    if (*c < 0 || *c >= rank)
      return op->emitOpError("dimension index ")
             << *c << " is out of range for a rank-" << rank << " tensor";
    map.map(d.getResult(), val(dim(map.lookup(d.getSource()), *c)));
    return success();
  }
  if (isa<arith::ArithDialect>(op->getDialect()) &&
      llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIndex(); })) {
    b.clone(*op, map);
    return success();
  }
  if (isa<func::ReturnOp>(op))
    return success();
  if (auto t = dyn_cast<arith::TruncFOp>(op)) {
    // y rounded to a narrower dtype on the way out (MLIRGen): the producer
    // computes in a float32 buffer, this op's result is the output.
    if (!isa<RankedTensorType>(t.getType()))
      return op->emitOpError("attnc-plan-memory rounds tensors only");
    Value in = map.lookup(t.getIn());
    map.map(t.getResult(), allocFor(t.getResult(), resolve(t.getResult(), dimsOf(in))));
    return success();
  }
  if (auto l = dyn_cast<LinearOp>(op)) {
    Value in = map.lookup(l.getInput()), w = map.lookup(l.getWeight());
    auto d = dimsOf(in);
    // x staged as bf16 once per call when the target's kernel wants it
    // (TargetKernelsInterface::linearStagesInput): [B, T, K].
    auto kernels = dyn_cast<TargetKernelsInterface>(target);
    if (kernels && kernels.linearStagesInput(in, w)) {
      auto it = cast<MemRefType>(in.getType());
      auto ty = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                                       it.getDimSize(2)}, b.getBF16Type());
      scratch[op].push_back(alloc(ty, {d[0], d[1], b.getIndexAttr(it.getDimSize(2))}));
    }
    d.back() = dim(w, 1);
    map.map(l.getResult(), allocFor(l.getResult(), resolve(l.getResult(), d)));
    return success();
  }
  if (auto s = dyn_cast<SliceOp>(op)) {
    Value in = contiguous(map.lookup(s.getInput()));
    auto d = dimsOf(in);
    auto strides = rowMajor(b, d);
    d.back() = b.getIndexAttr(s.getSize());
    aux[op].push_back(reinterpret(in, d, strides, s.getOffset()));
    map.map(s.getResult(), allocFor(s.getResult(), resolve(s.getResult(), d)));
    return success();
  }
  if (auto s = dyn_cast<SplitHeadsOp>(op)) {
    Value in = contiguous(map.lookup(s.getInput()));
    auto d = dimsOf(in); // B, T, W
    int64_t h = s.getHeads();
    OpFoldResult headDim =
        getConstantIntValue(d[2])
            ? OpFoldResult(b.getIndexAttr(*getConstantIntValue(d[2]) / h))
            : OpFoldResult(arith::DivUIOp::create(b, val(d[2]), idx(h)).getResult());
    auto res = resolve(s.getResult(), {d[0], b.getIndexAttr(h), d[1], headDim});
    // Source viewed as [B, H, T, D] with strides [T*W, D, W, 1].
    auto strides = rowMajor(b, d);
    aux[op].push_back(reinterpret(in, res, {strides[0], res[3], d[2], b.getIndexAttr(1)}, 0));
    map.map(s.getResult(), allocFor(s.getResult(), res));
    return success();
  }
  if (auto m = dyn_cast<MergeHeadsOp>(op)) {
    Value in = map.lookup(m.getInput());
    auto d = dimsOf(in); // B, H, T, D
    auto res = resolve(m.getResult(), {d[0], d[2], OpFoldResult()});
    if (!res[2])
      return op->emitOpError("attnc-plan-memory needs static heads and head_dim");
    Value out = allocFor(m.getResult(), res);
    auto strides = rowMajor(b, res);
    // Destination viewed as [B, H, T, D] with strides [T*W, D, W, 1].
    aux[op].push_back(reinterpret(out, d, {strides[0], d[3], res[2], b.getIndexAttr(1)}, 0));
    map.map(m.getResult(), out);
    return success();
  }
  if (auto m = dyn_cast<MaskRowsOp>(op)) {
    // In place when this op is the input's only user; else on a copy.
    Value in = map.lookup(m.getInput());
    if (!m.getInput().hasOneUse()) {
      Value out = allocFor(m.getResult(), resolve(m.getResult(), dimsOf(in)));
      preCopies[op].push_back({in, out});
      in = out;
    }
    map.map(m.getResult(), in);
    return success();
  }
  if (isa<RopeOp, RmsNormOp, ClipOp, TemperatureOp>(op)) {
    // In place when this op is the input's only user (Q, K and V views
    // into the QKV buffer, which nothing else reads unrotated); else on a
    // copy.
    Value input = op->getOperand(0), result = op->getResult(0);
    Value in = map.lookup(input);
    if (!input.hasOneUse()) {
      Value out = allocFor(result, resolve(result, dimsOf(in)));
      preCopies[op].push_back({in, out});
      in = out;
    }
    map.map(result, in);
    return success();
  }
  if (auto a = dyn_cast<CacheAppendOp>(op)) {
    // In place: the caches must be the caller's buffers, read by nothing
    // but this op (every later reader sees the updated values).
    for (Value cache : {a.getKeyCache(), a.getValueCache()})
      if (!isa<BlockArgument>(cache) || !cache.hasOneUse())
        return op->emitOpError("attnc-plan-memory writes KV caches in place: each "
                               "cache must be a function argument used only "
                               "by this op");
    map.map(a.getNewKeyCache(), map.lookup(a.getKeyCache()));
    map.map(a.getNewValueCache(), map.lookup(a.getValueCache()));
    auto dk = dimsOf(map.lookup(a.getKey()));
    map.map(a.getLens(), alloc(cast<RankedTensorType>(a.getLens().getType()), {dk[0]}));
    return success();
  }
  if (auto p = dyn_cast<ProbsOp>(op)) {
    auto dq = dimsOf(map.lookup(p.getQuery())), dk = dimsOf(map.lookup(p.getKey()));
    map.map(p.getResult(), allocFor(p.getResult(),
                                    resolve(p.getResult(), {dq[0], dq[1], dq[2], dk[2]})));
    return success();
  }
  if (auto s = dyn_cast<SdpaOp>(op)) {
    Value q = map.lookup(s.getQuery());
    auto d = dimsOf(q); // B, H, T, D
    if (s.getLayout() == HeadLayout::bthd)
      std::swap(d[1], d[2]);
    map.map(s.getResult(), allocFor(s.getResult(), resolve(s.getResult(), d)));
    // K and V staged once per call when the target's kernel wants them
    // (TargetKernelsInterface::sdpaStagedWidth): [B, Hkv, Tkv, W] and
    // [B, Hkv, (Tkv + 1) / 2, 2W], bf16.
    auto kernels = dyn_cast<TargetKernelsInterface>(target);
    Value k = map.lookup(s.getKey());
    if (int64_t w = kernels ? kernels.sdpaStagedWidth(s, q, k) : 0) {
      auto dk = dimsOf(k); // B, Hkv, Tkv, D
      Type bf16 = b.getBF16Type();
      // Only the batch and the length dynamic (the per-row bound counts
      // the static dimensions).
      int64_t hkv = cast<MemRefType>(k.getType()).getDimSize(1);
      if (ShapedType::isDynamic(hkv))
        return op->emitOpError("staged keys need a static kv head count");
      auto kTy = RankedTensorType::get({ShapedType::kDynamic, hkv, ShapedType::kDynamic, w}, bf16);
      auto vTy = RankedTensorType::get({ShapedType::kDynamic, hkv, ShapedType::kDynamic, 2 * w},
                                       bf16);
      Value pairs = arith::DivUIOp::create(
          b, arith::AddIOp::create(b, val(dk[2]), idx(1)), idx(2));
      scratch[op].push_back(alloc(kTy, {dk[0], dk[1], dk[2], b.getIndexAttr(w)}));
      scratch[op].push_back(alloc(vTy, {dk[0], dk[1], pairs, b.getIndexAttr(2 * w)}));
    }
    return success();
  }
  if (auto s = dyn_cast<ScaleOp>(op)) {
    Value in = map.lookup(s.getInput());
    map.map(s.getResult(), allocFor(s.getResult(), resolve(s.getResult(), dimsOf(in))));
    return success();
  }
  if (auto v = dyn_cast<ViewOp>(op)) {
    Value src = contiguous(map.lookup(v.getSource()));
    map.map(v.getResult(), reinterpret(src, mapMixed(v.getMixedSizes()),
                                       mapMixed(v.getMixedStrides()),
                                       v.getOffset()));
    return success();
  }
  if (auto c = dyn_cast<tensor::ConcatOp>(op)) {
    int64_t cd = c.getDim();
    SmallVector<SmallVector<OpFoldResult>> parts;
    for (Value in : c.getInputs())
      parts.push_back(dimsOf(map.lookup(in)));
    auto d = parts[0];
    Value sum = val(d[cd]);
    for (size_t i = 1; i < parts.size(); ++i)
      sum = arith::AddIOp::create(b, sum, val(parts[i][cd]));
    d[cd] = sum;
    Value out = allocFor(c.getResult(), resolve(c.getResult(), d));
    Value start = idx(0);
    for (auto &pd : parts) {
      SmallVector<OpFoldResult> offs(pd.size(), b.getIndexAttr(0));
      offs[cd] = start;
      SmallVector<OpFoldResult> ones(pd.size(), b.getIndexAttr(1));
      aux[op].push_back(memref::SubViewOp::create(b, out, offs, pd, ones));
      start = arith::AddIOp::create(b, start, val(pd[cd]));
    }
    map.map(c.getResult(), out);
    return success();
  }
  return op->emitOpError("is not supported by attnc-plan-memory");
}

void FunctionLowering::copy(ImplicitLocOpBuilder &c, Value src, Value dst) {
  int64_t rank = cast<MemRefType>(dst.getType()).getRank();
  auto id = AffineMap::getMultiDimIdentityMap(rank, c.getContext());
  SmallVector<utils::IteratorType> it(rank, utils::IteratorType::parallel);
  linalg::GenericOp::create(c, ValueRange{src}, ValueRange{dst},
                            ArrayRef<AffineMap>{id, id}, it,
                            [](OpBuilder &nb, Location loc, ValueRange args) {
                              ImplicitLocOpBuilder ib(loc, nb);
                              linalg::YieldOp::create(
                                  nb, loc, attnc::convertFloat(ib, args[0], args[1].getType()));
                            });
}

void FunctionLowering::oneTask(
    llvm::function_ref<void(ImplicitLocOpBuilder &)> fn) {
  attnc::taskLoop(b, idx(1), [&](ImplicitLocOpBuilder &c, Value) { fn(c); });
}

// y[..., n] = bias[n] (or 0);  y[..., n] += x[..., k] * w[k, n] with w
// unpacked (a weight that is not a sole-use argument): linalg.generic.
void FunctionLowering::linear(ImplicitLocOpBuilder &c, Value in, Value w,
                              Value bias, Value out) {
  MLIRContext *ctx = c.getContext();
  auto oty = cast<MemRefType>(out.getType());
  int64_t r = oty.getRank();
  auto id = AffineMap::getMultiDimIdentityMap(r, ctx);
  SmallVector<utils::IteratorType> par(r, utils::IteratorType::parallel);
  if (bias) {
    auto bm = AffineMap::get(r, 0, {getAffineDimExpr(r - 1, ctx)}, ctx);
    linalg::GenericOp::create(c, ValueRange{bias}, ValueRange{out},
                              ArrayRef<AffineMap>{bm, id}, par,
                              [](OpBuilder &nb, Location loc, ValueRange a) {
                                ImplicitLocOpBuilder ib(loc, nb);
                                linalg::YieldOp::create(
                                    nb, loc, attnc::convertFloat(ib, a[0], a[1].getType()));
                              });
  } else {
    Type et = oty.getElementType();
    linalg::GenericOp::create(
        c, ValueRange{}, ValueRange{out}, ArrayRef<AffineMap>{id}, par,
        [et](OpBuilder &nb, Location loc, ValueRange) {
          Value z = arith::ConstantOp::create(nb, loc, nb.getFloatAttr(et, 0.0));
          linalg::YieldOp::create(nb, loc, z);
        });
  }
  AffineExpr k = getAffineDimExpr(r - 1, ctx), n = getAffineDimExpr(r, ctx);
  SmallVector<AffineExpr> xe, we{k, n}, ye;
  for (int64_t i = 0; i + 1 < r; ++i) {
    xe.push_back(getAffineDimExpr(i, ctx));
    ye.push_back(getAffineDimExpr(i, ctx));
  }
  xe.push_back(k);
  ye.push_back(n);
  SmallVector<utils::IteratorType> it(r - 1, utils::IteratorType::parallel);
  it.push_back(utils::IteratorType::reduction);
  it.push_back(utils::IteratorType::parallel);
  linalg::GenericOp::create(
      c, ValueRange{in, w}, ValueRange{out},
      ArrayRef<AffineMap>{AffineMap::get(r + 1, 0, xe, ctx),
                          AffineMap::get(r + 1, 0, we, ctx),
                          AffineMap::get(r + 1, 0, ye, ctx)},
      it, [](OpBuilder &nb, Location loc, ValueRange a) {
        ImplicitLocOpBuilder ib(loc, nb);
        Type f = a[2].getType(); // bf16/f16 inputs or weights: widened
        Value p = arith::MulFOp::create(nb, loc, attnc::convertFloat(ib, a[0], f),
                                        attnc::convertFloat(ib, a[1], f));
        linalg::YieldOp::create(nb, loc, arith::AddFOp::create(nb, loc, a[2], p).getResult());
      });
}

LogicalResult FunctionLowering::emit(Operation *op) {
  b.setLoc(op->getLoc());
  // These ops have no lowering of their own here: their kernels come from
  // the TiledOpInterface models (attn.linear falls back to a one-task GEMM).
  if (isa<SdpaOp, ProbsOp, CacheAppendOp, MaskRowsOp, RopeOp, RmsNormOp, ClipOp,
          TemperatureOp>(op) &&
      !isa<TiledOpInterface>(op))
    return op->emitOpError("has no TiledOpInterface model (attnc::registerTiledOpModels)");
  // A device target (CUDA) has kernels for the fused block (packed GEMMs
  // and flash attention, Conversion/Cuda); anything else would be a host
  // loop over device memory.
  auto kernels = dyn_cast<TargetKernelsInterface>(target);
  if (kernels && kernels.isDevice()) {
    if (!preCopies.lookup(op).empty())
      return op->emitOpError("the device target ")
             << target.getIsa() << " needs the copy-free form (attn-fuse-qkv and "
             << "attn-heads-as-views)";
    if (auto t = dyn_cast<TiledOpInterface>(op)) {
      if (!t.canTile(phases))
        return op->emitOpError("the device target ")
               << target.getIsa() << " needs packed f32 weights and a rank-3 input";
      return t.buildTiledPhases(phases);
    }
    // y = truncf(the output projection's f32 result), dtype bf16/f16: the
    // device's copy kernel rounds as it copies.
    if (auto t = dyn_cast<arith::TruncFOp>(op)) {
      if (failed(kernels.buildDeviceCopy(b, map.lookup(t.getIn()), map.lookup(t.getResult()))))
        return op->emitOpError("the device target ")
               << target.getIsa() << " cannot convert the result to " << t.getType();
      return success();
    }
    if (isa<SliceOp, SplitHeadsOp, MergeHeadsOp, ScaleOp, tensor::ConcatOp>(op))
      return op->emitOpError("is not supported by the device target ")
             << target.getIsa() << " yet (it needs the fused, copy-free form)";
    if (isa<func::ReturnOp>(op)) {
      for (auto [r, out] : llvm::zip(returned, outBufs))
        if (map.lookup(r) != out &&
            failed(kernels.buildDeviceCopy(b, map.lookup(r), out)))
          return op->emitOpError("the device target ")
                 << target.getIsa() << " cannot copy the result to y";
      return success();
    }
  }
  for (auto [src, dst] : preCopies.lookup(op))
    oneTask([&, src = src, dst = dst](ImplicitLocOpBuilder &c) { copy(c, src, dst); });
  // The tiled kernels (TiledOps.cpp); attn.linear over unpacked weights
  // falls back to one linalg.generic task.
  if (auto t = dyn_cast<TiledOpInterface>(op); t && t.canTile(phases))
    return t.buildTiledPhases(phases);
  if (auto l = dyn_cast<LinearOp>(op)) {
    Value in = map.lookup(l.getInput()), w = map.lookup(l.getWeight());
    Value bias = l.getBias() ? map.lookup(l.getBias()) : Value();
    Value out = map.lookup(l.getResult());
    if (packedCols.count(w))
      return op->emitOpError("attnc-plan-memory: a packed weight needs a rank-3 "
                             "f32 input");
    oneTask([&](ImplicitLocOpBuilder &c) { linear(c, in, w, bias, out); });
  } else if (auto t = dyn_cast<arith::TruncFOp>(op)) {
    // One task per (batch, row): the rows converted to the output's type.
    Value src = map.lookup(t.getIn()), dst = map.lookup(t.getResult());
    Value d0 = memref::DimOp::create(b, dst, 0), d1 = memref::DimOp::create(b, dst, 1);
    attnc::taskLoop(b, arith::MulIOp::create(b, d0, d1), [&](ImplicitLocOpBuilder &c, Value task) {
      int64_t rank = cast<MemRefType>(dst.getType()).getRank();
      SmallVector<OpFoldResult> offs{arith::DivUIOp::create(c, task, d1).getResult(),
                                     arith::RemUIOp::create(c, task, d1).getResult()};
      SmallVector<OpFoldResult> sizes(2, c.getIndexAttr(1)), ones(rank, c.getIndexAttr(1));
      for (int64_t i = 2; i < rank; ++i) {
        offs.push_back(c.getIndexAttr(0));
        sizes.push_back(memref::DimOp::create(c, dst, i).getResult());
      }
      copy(c, memref::SubViewOp::create(c, src, offs, sizes, ones),
           memref::SubViewOp::create(c, dst, offs, sizes, ones));
    });
  } else if (isa<SliceOp, SplitHeadsOp>(op)) {
    Value src = aux[op][0], dst = map.lookup(op->getResult(0));
    oneTask([&](ImplicitLocOpBuilder &c) { copy(c, src, dst); });
  } else if (auto m = dyn_cast<MergeHeadsOp>(op)) {
    Value src = map.lookup(m.getInput()), dst = aux[op][0];
    oneTask([&](ImplicitLocOpBuilder &c) { copy(c, src, dst); });
  } else if (auto s = dyn_cast<ScaleOp>(op)) {
    Value in = map.lookup(s.getInput()), out = map.lookup(s.getResult());
    double f = s.getFactor().convertToDouble();
    oneTask([&](ImplicitLocOpBuilder &c) {
      int64_t r = cast<MemRefType>(out.getType()).getRank();
      auto id = AffineMap::getMultiDimIdentityMap(r, c.getContext());
      SmallVector<utils::IteratorType> it(r, utils::IteratorType::parallel);
      linalg::GenericOp::create(
          c, ValueRange{in}, ValueRange{out}, ArrayRef<AffineMap>{id, id}, it,
          [f](OpBuilder &nb, Location loc, ValueRange a) {
            Value fv = arith::ConstantOp::create(
                nb, loc, nb.getFloatAttr(a[0].getType(), f));
            linalg::YieldOp::create(nb, loc,
                                    arith::MulFOp::create(nb, loc, a[0], fv).getResult());
          });
    });
  } else if (auto cc = dyn_cast<tensor::ConcatOp>(op)) {
    SmallVector<std::pair<Value, Value>> parts;
    for (auto [in, dst] : llvm::zip(cc.getInputs(), aux[op]))
      parts.push_back({map.lookup(in), dst});
    oneTask([&](ImplicitLocOpBuilder &c) {
      for (auto [src, dst] : parts)
        copy(c, src, dst);
    });
  } else if (isa<func::ReturnOp>(op)) {
    for (auto [r, out] : llvm::zip(returned, outBufs)) {
      Value buf = map.lookup(r), dst = out;
      if (buf != dst)
        oneTask([&](ImplicitLocOpBuilder &c) { copy(c, buf, dst); });
    }
  }
  return success();
}

LogicalResult FunctionLowering::run() {
  auto ret = cast<func::ReturnOp>(oldFn.getBody().front().getTerminator());
  for (Value r : ret.getOperands()) {
    if (tiedArgument(r))
      continue; // written in place into its argument
    // attn.mask_rows works in place: its input is what lands in the output.
    while (auto m = r.getDefiningOp<MaskRowsOp>()) {
      if (!m.getInput().hasOneUse())
        break;
      r = m.getInput();
    }
    returned.push_back(r);
  }
  Block *entry = newFn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  unsigned n = oldFn.getNumArguments();
  for (unsigned i = 0; i < n; ++i) {
    map.map(oldFn.getArgument(i), newFn.getArgument(i));
    if (newFn.getArgAttr(i, AttnDialect::PanelAttrHelper::getNameStr()))
      packedCols[newFn.getArgument(i)] =
          cast<RankedTensorType>(oldFn.getArgument(i).getType()).getShape().back();
  }
  unsigned results = returned.size();
  for (unsigned i = 0; i < results; ++i)
    outBufs.push_back(newFn.getArgument(n + i));
  wsBuf = newFn.getArgument(n + results);
  total = idx(0);
  for (Operation &op : oldFn.getBody().front())
    if (failed(prologue(&op)))
      return failure();
  for (Operation &op : oldFn.getBody().front())
    if (failed(emit(&op)))
      return failure();
  b.setLoc(oldFn.getLoc());
  func::ReturnOp::create(b, total);
  return success();
}

/// Whether a function's target (attnc-set-target's, or written by hand) is
/// one code path of the ISA table, of its kind: #attn.cpu_target for a CPU
/// ISA, #attn.cuda_target for a CUDA one. What fits the kernels (tiles,
/// threads, shared memory, unroll limits) each target attribute's own
/// verifier checks.
static LogicalResult checkTarget(func::FuncOp f, TargetAttrInterface t) {
  auto bad = [&](const Twine &what) {
    return f.emitError("attn.target of @") << f.getName() << ": " << what;
  };
  const attnc::IsaInfo *info = attnc::findIsa(t.getIsa());
  if (!info || info->isa == attnc::Isa::Multi)
    return bad("isa \"" + t.getIsa() + "\" is not one code path of attnc's "
               "ISA table (see `attnc --help`, --target)");
  if (info->cuda != isa<CudaTargetAttr>(t))
    return bad("isa \"" + t.getIsa() + "\" is a " + (info->cuda ? "CUDA" : "CPU") +
               " code path: its target is an #attn." +
               (info->cuda ? "cuda_target" : "cpu_target"));
  return success();
}

struct PlanMemoryPass final
    : attnc::impl::AttnPlanMemoryPassBase<PlanMemoryPass> {
  // The kernels come from the ops' TiledOpInterface models: make sure they
  // are attached whatever registry the context was built from.
  void getDependentDialects(DialectRegistry &registry) const override {
    AttnPlanMemoryPassBase::getDependentDialects(registry);
    attnc::registerTiledOpModels(registry);
  }
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      WalkResult hasAttn = f.walk([](Operation *op) {
        return isa<AttnDialect>(op->getDialect()) ? WalkResult::interrupt()
                                                  : WalkResult::advance();
      });
      if (f.getNumResults() >= 1 &&
          llvm::all_of(f.getResultTypes(), llvm::IsaPred<RankedTensorType>) &&
          (hasAttn.wasInterrupted() || f->hasAttr(AttnDialect::TargetAttrHelper::getNameStr()))) {
        funcs.push_back(f);
        continue;
      }
      // Anything else must not contain attn ops: they would survive silently.
      if (hasAttn.wasInterrupted()) {
        f.emitError("attnc-plan-memory lowers functions whose results are ranked "
                    "tensors (one or more); @")
            << f.getName() << " has " << f.getNumResults() << " results";
        return signalPassFailure();
      }
    }
    for (func::FuncOp f : funcs) {
      if (!f.getBody().hasOneBlock()) {
        f.emitError("attnc-plan-memory expects a single-block function");
        return signalPassFailure();
      }
      auto target = f->getAttrOfType<TargetAttrInterface>(AttnDialect::TargetAttrHelper::getNameStr());
      if (!target) {
        f.emitError("attnc-plan-memory needs the function's attn.target (run "
                    "attnc-set-target first)");
        return signalPassFailure();
      }
      if (failed(checkTarget(f, target)))
        return signalPassFailure();
      MLIRContext *ctx = f.getContext();
      int64_t panel = target.getPanel();
      SmallVector<Type> args;
      SmallVector<bool> packedArg;
      for (BlockArgument a : f.getArguments()) {
        auto rt = dyn_cast<RankedTensorType>(a.getType());
        if (!rt) {
          f.emitError("attnc-plan-memory expects ranked tensor arguments, found ")
              << a.getType();
          return signalPassFailure();
        }
        // The packed layout attnc-encode-weights chose (attn.panel), checked
        // against what the kernels read: the target's panel, a sole-use
        // linear weight or bias, pairs only for a bf16 matrix.
        unsigned i = a.getArgNumber();
        auto panelAttr = f.getArgAttrOfType<IntegerAttr>(i, AttnDialect::PanelAttrHelper::getNameStr());
        bool pairs = f.getArgAttr(i, AttnDialect::PairsAttrHelper::getNameStr()) != nullptr;
        bool pack = panelAttr != nullptr;
        bool bf16Matrix = rt.getRank() == 2 && rt.getElementType().isBF16();
        if (pack && (panelAttr.getInt() != panel || !attnc::packableWeight(a))) {
          f.emitError("attnc-plan-memory: argument ")
              << i << " of @" << f.getName() << " has attn.panel = " << panelAttr.getInt()
              << (panelAttr.getInt() != panel
                      ? " but its target's panel is " + std::to_string(panel)
                      : std::string(" but is not only the weight or bias of attn.linear ops"))
              << " (attnc-encode-weights chooses the layout)";
          return signalPassFailure();
        }
        if (pairs != (pack && bf16Matrix)) {
          f.emitError("attnc-plan-memory: argument ")
              << i << " of @" << f.getName()
              << ": attn.pairs goes with attn.panel on a bf16 matrix, and such a "
                 "matrix needs it (attnc-encode-weights)";
          return signalPassFailure();
        }
        packedArg.push_back(pack);
        if (pack && bf16Matrix) {
          // bf16: (k, k+1) pairs side by side, the operand order of
          // vdpbf16ps ([P][ceil(K/2)][panel][2]; a zero row past an odd K).
          int64_t k = rt.getDimSize(0), nCols = rt.getDimSize(1);
          args.push_back(MemRefType::get({(nCols + panel - 1) / panel, (k + 1) / 2, 2 * panel},
                                         rt.getElementType()));
        } else if (pack && rt.getRank() == 2) {
          int64_t k = rt.getDimSize(0), nCols = rt.getDimSize(1);
          args.push_back(MemRefType::get({(nCols + panel - 1) / panel, k, panel},
                                         rt.getElementType()));
        } else if (pack) {
          int64_t nCols = rt.getDimSize(0);
          args.push_back(MemRefType::get({(nCols + panel - 1) / panel * panel},
                                         rt.getElementType()));
        } else {
          args.push_back(MemRefType::get(rt.getShape(), rt.getElementType()));
        }
      }
      auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
      unsigned results = 0;
      for (Value r : ret.getOperands()) {
        if (tiedArgument(r))
          continue; // updated in place through its argument
        auto rt = cast<RankedTensorType>(r.getType());
        args.push_back(MemRefType::get(rt.getShape(), rt.getElementType()));
        ++results;
      }
      args.push_back(MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 8)));
      OpBuilder mb(f);
      mb.setInsertionPointAfter(f);
      auto nf = func::FuncOp::create(mb, f.getLoc(), f.getName().str() + ".lowering",
                                     FunctionType::get(ctx, args, {IndexType::get(ctx)}));
      unsigned n = f.getNumArguments();
      for (unsigned i = 0; i < n; ++i) {
        nf.setArgAttrs(i, f.getArgAttrDict(i));
        if (packedArg[i]) // attn.panel (and attn.pairs) came with the dict
          nf.setArgAttr(i, AttnDialect::LogicalShapeAttrHelper::getNameStr(),
                        DenseI64ArrayAttr::get(ctx, cast<RankedTensorType>(
                                                        f.getArgument(i).getType())
                                                        .getShape()));
      }
      for (unsigned i = 0; i < results; ++i) // y, then probs (MLIRGen's order)
        nf.setArgAttr(n + i, AttnDialect::OutputAttrHelper::getNameStr(),
                      StringAttr::get(ctx, i == 0 ? "y" : "probs"));
      nf.setArgAttr(n + results, AttnDialect::WorkspaceAttrHelper::getNameStr(), UnitAttr::get(ctx));
      nf->setDiscardableAttrs(f->getDiscardableAttrDictionary());
      FunctionLowering lowering(f, nf, target);
      if (failed(lowering.run())) {
        nf.erase();
        return signalPassFailure();
      }
      Builder ab(ctx);
      nf->setAttr(AttnDialect::WorkspacePerRowAttrHelper::getNameStr(), ab.getI64IntegerAttr(lowering.perRowFloats));
      nf->setAttr(AttnDialect::WorkspaceBuffersAttrHelper::getNameStr(), ab.getI64IntegerAttr(lowering.buffers));
      std::string name = f.getName().str();
      f.erase();
      nf.setName(name);
    }
  }
};

} // namespace

void attnc::registerPassList(const char *name, const char *summary, const char *passes) {
  mlir::PassPipelineRegistration<>(name, summary, [name, passes](OpPassManager &pm) {
    if (failed(parsePassPipeline(passes, pm)))
      llvm::report_fatal_error(llvm::Twine("attnc: the ") + name + " pipeline does not parse");
  });
}

void attnc::registerAttnToLoopsPipeline() {
  registerPassList("attn-to-loops",
                   "attn functions on tensors as buffers and the target's kernels: "
                   "attnc-encode-weights, attnc-plan-memory",
                   kAttnToLoopsPipeline);
}
