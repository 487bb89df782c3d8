//===- AttnToLoops.cpp - attn on tensors -> buffers, linalg, scf ----------===//
//
// Lowers each attn function to destination-passing style on memrefs:
//   (x, weights...) -> y    becomes    (x, weights..., y, ws, run) -> index
// Buffers of intermediate values are memref.views into the caller's
// workspace `ws` (bump-allocated, 64-byte aligned); attn.view becomes a
// memref.reinterpret_cast of its source's buffer (zero copies). The function
// returns the workspace size it needs and runs its body only when `run` is
// set and `ws` is large enough.
//
//===----------------------------------------------------------------------===//
#include "attnc/Conversion/Passes.h"
#include "LoopBuilders.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/IRMapping.h"

namespace attnc {
#define GEN_PASS_DEF_ATTNTOLOOPSPASS
#include "attnc/Conversion/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using namespace attnc::attn;
using attnc::buildSdpaLoops;

namespace {

constexpr int64_t kAlign = 64;

/// Lowers one function. `b` inserts into the new function's prologue (where
/// sizes and buffers are set up); `body` into the guarded compute region.
class FunctionLowering {
public:
  FunctionLowering(func::FuncOp oldFn, func::FuncOp newFn)
      : oldFn(oldFn), newFn(newFn), b(oldFn.getLoc(), newFn.getContext()) {}

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
  LogicalResult emit(Operation *op, ImplicitLocOpBuilder &c);
  void copy(ImplicitLocOpBuilder &c, Value src, Value dst);
  void linear(ImplicitLocOpBuilder &c, Value in, Value w, Value bias, Value out);

  func::FuncOp oldFn, newFn;
  ImplicitLocOpBuilder b;
  IRMapping map;              ///< tensors -> buffers, index values -> clones
  /// Per op: buffers prepared in the prologue (views, scratch) and copies
  /// that must run before the op (packing a strided source).
  DenseMap<Operation *, SmallVector<Value>> aux;
  DenseMap<Operation *, SmallVector<std::pair<Value, Value>>> preCopies;
  Operation *current = nullptr;
  Value wsBuf, total, outBuf;
  Value returned;             ///< the tensor the old function returns
};

Value FunctionLowering::alloc(RankedTensorType ty, ArrayRef<OpFoldResult> dims) {
  SmallVector<Value> dyn;
  Value bytes = idx(ty.getElementTypeBitWidth() / 8);
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
  if (tensor == returned &&
      cast<ShapedType>(tensor.getType()).getShape() ==
          cast<MemRefType>(outBuf.getType()).getShape())
    return outBuf;
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
      return op->emitOpError("attn-to-loops needs a constant dimension index");
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
  if (auto l = dyn_cast<LinearOp>(op)) {
    Value in = map.lookup(l.getInput());
    auto d = dimsOf(in);
    d.back() = dim(map.lookup(l.getWeight()), 1);
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
      return op->emitOpError("attn-to-loops needs static heads and head_dim");
    Value out = allocFor(m.getResult(), res);
    auto strides = rowMajor(b, res);
    // Destination viewed as [B, H, T, D] with strides [T*W, D, W, 1].
    aux[op].push_back(reinterpret(out, d, {strides[0], d[3], res[2], b.getIndexAttr(1)}, 0));
    map.map(m.getResult(), out);
    return success();
  }
  if (auto s = dyn_cast<SdpaOp>(op)) {
    if (s.getMask() != MaskKind::none && s.getMask() != MaskKind::causal)
      return op->emitOpError("mask ")
             << stringifyMaskKind(s.getMask())
             << " is not supported by the CPU lowering yet (supported: none, "
                "causal)";
    Value q = map.lookup(s.getQuery()), k = map.lookup(s.getKey());
    auto d = dimsOf(q); // B, H, T, D
    if (s.getLayout() == HeadLayout::bthd)
      std::swap(d[1], d[2]);
    map.map(s.getResult(), allocFor(s.getResult(), resolve(s.getResult(), d)));
    auto et = cast<RankedTensorType>(s.getType()).getElementType();
    aux[op].push_back(alloc(RankedTensorType::get({ShapedType::kDynamic}, et),
                            {dim(k, 2)}));
    // K of one head transposed in blocks of 16 keys ([Tkv/16][D][16],
    // padded), for scores of 16 keys at a time.
    Value tPad = arith::MulIOp::create(
        b, arith::DivUIOp::create(b, arith::AddIOp::create(b, val(dim(k, 2)), idx(15)),
                                  idx(16)),
        idx(16));
    aux[op].push_back(alloc(RankedTensorType::get({ShapedType::kDynamic}, et),
                            {arith::MulIOp::create(b, tPad, val(dim(k, 3))).getResult()}));
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
  return op->emitOpError("is not supported by attn-to-loops");
}

void FunctionLowering::copy(ImplicitLocOpBuilder &c, Value src, Value dst) {
  int64_t rank = cast<MemRefType>(dst.getType()).getRank();
  auto id = AffineMap::getMultiDimIdentityMap(rank, c.getContext());
  SmallVector<utils::IteratorType> it(rank, utils::IteratorType::parallel);
  linalg::GenericOp::create(c, ValueRange{src}, ValueRange{dst},
                            ArrayRef<AffineMap>{id, id}, it,
                            [](OpBuilder &nb, Location loc, ValueRange args) {
                              linalg::YieldOp::create(nb, loc, args[0]);
                            });
}

// y[..., n] = bias[n] (or 0);  y[..., n] += x[..., k] * w[k, n]
void FunctionLowering::linear(ImplicitLocOpBuilder &c, Value in, Value w,
                              Value bias, Value out) {
  if (attnc::buildBlockedLinear(c, in, w, bias, out))
    return;
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
                                linalg::YieldOp::create(nb, loc, a[0]);
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
  // Iteration order (leading..., k, n): the innermost loop walks a row of W
  // and of y contiguously, which LLVM vectorizes.
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
        Value p = arith::MulFOp::create(nb, loc, a[0], a[1]);
        linalg::YieldOp::create(nb, loc, arith::AddFOp::create(nb, loc, a[2], p).getResult());
      });
}

LogicalResult FunctionLowering::emit(Operation *op, ImplicitLocOpBuilder &c) {
  c.setLoc(op->getLoc());
  for (auto [src, dst] : preCopies.lookup(op))
    copy(c, src, dst);
  if (auto l = dyn_cast<LinearOp>(op)) {
    Value bias = l.getBias() ? map.lookup(l.getBias()) : Value();
    linear(c, map.lookup(l.getInput()), map.lookup(l.getWeight()), bias,
           map.lookup(l.getResult()));
  } else if (isa<SliceOp, SplitHeadsOp>(op)) {
    copy(c, aux[op][0], map.lookup(op->getResult(0)));
  } else if (auto m = dyn_cast<MergeHeadsOp>(op)) {
    copy(c, map.lookup(m.getInput()), aux[op][0]);
  } else if (auto s = dyn_cast<SdpaOp>(op)) {
    buildSdpaLoops(c, s, map.lookup(s.getQuery()), map.lookup(s.getKey()),
                   map.lookup(s.getValue()), map.lookup(s.getResult()),
                   aux[op][0], aux[op][1]);
  } else if (auto s = dyn_cast<ScaleOp>(op)) {
    Value in = map.lookup(s.getInput()), out = map.lookup(s.getResult());
    int64_t r = cast<MemRefType>(out.getType()).getRank();
    auto id = AffineMap::getMultiDimIdentityMap(r, c.getContext());
    SmallVector<utils::IteratorType> it(r, utils::IteratorType::parallel);
    double f = s.getFactor().convertToDouble();
    linalg::GenericOp::create(
        c, ValueRange{in}, ValueRange{out}, ArrayRef<AffineMap>{id, id}, it,
        [f](OpBuilder &nb, Location loc, ValueRange a) {
          Value fv = arith::ConstantOp::create(
              nb, loc, nb.getFloatAttr(a[0].getType(), f));
          linalg::YieldOp::create(nb, loc,
                                  arith::MulFOp::create(nb, loc, a[0], fv).getResult());
        });
  } else if (auto cc = dyn_cast<tensor::ConcatOp>(op)) {
    for (auto [in, dst] : llvm::zip(cc.getInputs(), aux[op]))
      copy(c, map.lookup(in), dst);
  } else if (isa<func::ReturnOp>(op)) {
    Value buf = map.lookup(returned);
    if (buf != outBuf)
      copy(c, buf, outBuf);
  }
  return success();
}

LogicalResult FunctionLowering::run() {
  auto ret = cast<func::ReturnOp>(oldFn.getBody().front().getTerminator());
  returned = ret.getOperand(0);
  Block *entry = newFn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  unsigned n = oldFn.getNumArguments();
  for (unsigned i = 0; i < n; ++i)
    map.map(oldFn.getArgument(i), newFn.getArgument(i));
  outBuf = newFn.getArgument(n);
  wsBuf = newFn.getArgument(n + 1);
  Value runFlag = newFn.getArgument(n + 2);
  total = idx(0);
  for (Operation &op : oldFn.getBody().front())
    if (failed(prologue(&op)))
      return failure();
  b.setLoc(oldFn.getLoc());
  Value wsSize = memref::DimOp::create(b, wsBuf, 0);
  Value fits = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, wsSize, total);
  Value cond = arith::AndIOp::create(b, fits, runFlag);
  auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/false);
  ImplicitLocOpBuilder c(oldFn.getLoc(), ifOp.getThenBodyBuilder());
  for (Operation &op : oldFn.getBody().front())
    if (failed(emit(&op, c)))
      return failure();
  func::ReturnOp::create(b, total);
  return success();
}

struct AttnToLoopsPass final
    : attnc::impl::AttnToLoopsPassBase<AttnToLoopsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      if (f.getNumResults() == 1 && isa<RankedTensorType>(f.getResultTypes()[0])) {
        funcs.push_back(f);
        continue;
      }
      // Anything else must not contain attn ops: they would survive silently.
      WalkResult hasAttn = f.walk([](Operation *op) {
        return isa<AttnDialect>(op->getDialect()) ? WalkResult::interrupt()
                                                  : WalkResult::advance();
      });
      if (hasAttn.wasInterrupted()) {
        f.emitError("attn-to-loops lowers functions with exactly one ranked "
                    "tensor result; @")
            << f.getName() << " has " << f.getNumResults() << " results";
        return signalPassFailure();
      }
    }
    for (func::FuncOp f : funcs) {
      if (!f.getBody().hasOneBlock()) {
        f.emitError("attn-to-loops expects a single-block function");
        return signalPassFailure();
      }
      MLIRContext *ctx = f.getContext();
      SmallVector<Type> args;
      for (Type t : f.getArgumentTypes()) {
        auto rt = dyn_cast<RankedTensorType>(t);
        if (!rt) {
          f.emitError("attn-to-loops expects ranked tensor arguments, found ") << t;
          return signalPassFailure();
        }
        args.push_back(MemRefType::get(rt.getShape(), rt.getElementType()));
      }
      auto rt = cast<RankedTensorType>(f.getResultTypes()[0]);
      args.push_back(MemRefType::get(rt.getShape(), rt.getElementType()));
      args.push_back(MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 8)));
      args.push_back(IntegerType::get(ctx, 1));
      OpBuilder mb(f);
      mb.setInsertionPointAfter(f);
      auto nf = func::FuncOp::create(mb, f.getLoc(), f.getName().str() + ".lowering",
                                     FunctionType::get(ctx, args, {IndexType::get(ctx)}));
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        nf.setArgAttrs(i, f.getArgAttrDict(i));
      unsigned n = f.getNumArguments();
      nf.setArgAttr(n, "attn.output", UnitAttr::get(ctx));
      nf.setArgAttr(n + 1, "attn.workspace", UnitAttr::get(ctx));
      nf.setArgAttr(n + 2, "attn.run", UnitAttr::get(ctx));
      nf->setDiscardableAttrs(f->getDiscardableAttrDictionary());
      FunctionLowering lowering(f, nf);
      if (failed(lowering.run())) {
        nf.erase();
        return signalPassFailure();
      }
      std::string name = f.getName().str();
      f.erase();
      nf.setName(name);
    }
  }
};

} // namespace
