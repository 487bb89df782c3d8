//===- FuseQKV.cpp - fuse projections of a shared input -------------------===//
//
// x·Wq, x·Wk, x·Wv  =  (x·[Wq|Wk|Wv])[:, slices]     (block-matrix identity)
//
// Groups attn.linear ops by input; each group of two or more with matching
// weight/bias element types becomes one GEMM plus attn.slice ops. Weight
// function arguments are merged into one argument (concatenated once, at
// pack time); other weights get a tensor.concat in the IR.
//
//===----------------------------------------------------------------------===//
#include "attnc/Dialect/Attn/IR/AttnOps.h"
#include "attnc/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace attnc::attn {
#define GEN_PASS_DEF_ATTNFUSEQKVPASS
#include "attnc/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnc::attn

using namespace mlir;
using namespace attnc::attn;
using attnc::attn::AttnDialect;

namespace {

/// The entry-block argument `v` if it is one of `func`'s arguments used only
/// by `user`, else null.
BlockArgument soleUseArg(func::FuncOp func, Value v, Operation *user) {
  auto arg = dyn_cast_or_null<BlockArgument>(v);
  if (!arg || arg.getOwner() != &func.getBody().front() || !arg.hasOneUse() ||
      *arg.getUsers().begin() != user)
    return {};
  return arg;
}

/// Key under which projections may fuse: same weight/bias element types and
/// all-or-none biases.
bool compatibleGroupMember(LinearOp a, LinearOp b) {
  auto et = [](Value v) {
    return v ? cast<ShapedType>(v.getType()).getElementType() : Type();
  };
  return a.getRowLens() == b.getRowLens() &&
         et(a.getWeight()) == et(b.getWeight()) &&
         static_cast<bool>(a.getBias()) == static_cast<bool>(b.getBias()) &&
         et(a.getBias()) == et(b.getBias()) &&
         a.getType().getElementType() == b.getType().getElementType() &&
         !ShapedType::isDynamic(a.getWeight().getType().getDimSize(1)) &&
         !ShapedType::isDynamic(b.getWeight().getType().getDimSize(1));
}

/// Concatenates `vals` along `dim`. When every value is a single-use function
/// argument, replaces them with one new argument (inserted where the first
/// was) that records its parts in `attn.concat_of`; else emits tensor.concat.
Value concatOperands(OpBuilder &b, func::FuncOp func, bool mayChangeSignature,
                     ArrayRef<Value> vals, ArrayRef<Operation *> users,
                     int64_t dim, Location loc) {
  SmallVector<int64_t> shape(cast<RankedTensorType>(vals[0].getType()).getShape());
  shape[dim] = 0;
  for (Value v : vals)
    shape[dim] += cast<RankedTensorType>(v.getType()).getDimSize(dim);
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(vals[0].getType()).getElementType());

  SmallVector<BlockArgument> args;
  if (mayChangeSignature)
    for (auto [v, u] : llvm::zip(vals, users))
      if (BlockArgument a = soleUseArg(func, v, u))
        args.push_back(a);
  if (args.size() != vals.size()) {
    return tensor::ConcatOp::create(b, loc, type, dim, vals).getResult();
  }

  // Record the parts: their own names, or their parts when already fused.
  SmallVector<Attribute> parts;
  for (BlockArgument a : args) {
    if (auto sub = func.getArgAttrOfType<ArrayAttr>(a.getArgNumber(),
                                                     AttnDialect::ConcatOfAttrHelper::getNameStr()))
      llvm::append_range(parts, sub.getValue());
    else if (auto name = func.getArgAttrOfType<StringAttr>(a.getArgNumber(),
                                                            AttnDialect::WeightAttrHelper::getNameStr()))
      parts.push_back(name);
    else
      parts.push_back(b.getStringAttr("arg" + std::to_string(a.getArgNumber())));
  }
  std::string fusedName;
  for (Attribute p : parts)
    fusedName += (fusedName.empty() ? "" : "|") + cast<StringAttr>(p).str();

  unsigned pos = args[0].getArgNumber();
  NamedAttrList attrs;
  attrs.set(AttnDialect::WeightAttrHelper::getNameStr(), b.getStringAttr(fusedName));
  attrs.set(AttnDialect::ConcatOfAttrHelper::getNameStr(), b.getArrayAttr(parts));
  attrs.set(AttnDialect::ConcatDimAttrHelper::getNameStr(), b.getI64IntegerAttr(dim));
  if (failed(func.insertArgument(pos, type, attrs.getDictionary(b.getContext()),
                                 args[0].getLoc())))
    return {};
  Value fused = func.getArgument(pos);
  // Old arguments shifted by one; erase them once their users are gone.
  return fused;
}

struct FuseQKVPass final
    : attnc::attn::impl::AttnFuseQKVPassBase<FuseQKVPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (func::FuncOp func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal())
        continue;
      // Merging weight arguments changes the signature: only where no call
      // in the module would be left behind.
      bool mayChangeSignature = SymbolTable::symbolKnownUseEmpty(func, module);
      if (failed(runOnFunction(func, mayChangeSignature)))
        return signalPassFailure();
    }
  }

  LogicalResult runOnFunction(func::FuncOp func, bool mayChangeSignature) {
    // Group by input, in program order.
    llvm::MapVector<Value, SmallVector<LinearOp>> groups;
    func.walk([&](LinearOp op) { groups[op.getInput()].push_back(op); });

    for (auto &entry : groups) {
      // Split each input's projections into compatible sub-groups.
      SmallVector<SmallVector<LinearOp>> subs;
      for (LinearOp op : entry.second) {
        auto it = llvm::find_if(subs, [&](auto &s) {
          return compatibleGroupMember(s.front(), op) &&
                 s.front()->getBlock() == op->getBlock();
        });
        if (it == subs.end())
          subs.push_back({op});
        else
          it->push_back(op);
      }
      for (auto &group : subs)
        if (group.size() >= 2 && failed(fuse(func, mayChangeSignature, group)))
          return failure();
    }
    return success();
  }

  LogicalResult fuse(func::FuncOp func, bool mayChangeSignature,
                     ArrayRef<LinearOp> group) {
    // Insert after the last operand definition: just before the first member
    // works because all members share the input and weights dominate uses.
    LinearOp first = group.front();
    OpBuilder b(first);
    Location loc = b.getFusedLoc(llvm::to_vector(
        llvm::map_range(group, [](LinearOp op) { return op.getLoc(); })));

    SmallVector<Value> weights, biases;
    SmallVector<Operation *> users;
    for (LinearOp op : group) {
      weights.push_back(op.getWeight());
      if (op.getBias())
        biases.push_back(op.getBias());
      users.push_back(op);
    }
    // Every weight/bias must already be available at `first` (the fused op
    // goes there); otherwise leave the group alone.
    for (Value v : llvm::concat<Value>(weights, biases))
      if (Operation *def = v.getDefiningOp())
        if (def->getBlock() != first->getBlock() || !def->isBeforeInBlock(first))
          return success();

    SmallVector<BlockArgument> oldArgs;
    for (Value v : llvm::concat<Value>(weights, biases))
      if (auto a = dyn_cast<BlockArgument>(v))
        oldArgs.push_back(a);

    Value w = concatOperands(b, func, mayChangeSignature, weights, users,
                             /*dim=*/1, loc);
    Value bias;
    if (!biases.empty())
      bias = concatOperands(b, func, mayChangeSignature, biases, users,
                            /*dim=*/0, loc);
    if (!w || (!biases.empty() && !bias))
      return func.emitError("attn-fuse-qkv: could not merge weight arguments");

    auto inTy = first.getType();
    SmallVector<int64_t> shape(inTy.getShape());
    shape.back() = cast<RankedTensorType>(w.getType()).getDimSize(1);
    auto fusedTy = RankedTensorType::get(shape, inTy.getElementType());
    auto fused = LinearOp::create(b, loc, fusedTy, first.getInput(), w, bias,
                                  first.getRowLens());

    int64_t offset = 0;
    for (LinearOp op : group) {
      int64_t n = op.getWeight().getType().getDimSize(1);
      auto slice = SliceOp::create(b, op.getLoc(), op.getType(),
                                   fused.getResult(), b.getI64IntegerAttr(offset),
                                   b.getI64IntegerAttr(n));
      op.getResult().replaceAllUsesWith(slice.getResult());
      offset += n;
    }
    for (LinearOp op : group)
      op->erase();
    // Drop the function arguments that were merged (now unused).
    llvm::BitVector dead(func.getNumArguments());
    for (BlockArgument a : oldArgs)
      if (a.use_empty())
        dead.set(a.getArgNumber());
    if (failed(func.eraseArguments(dead)))
      return func.emitError("attn-fuse-qkv: could not erase merged arguments");
    ++numFused;
    return success();
  }
};

} // namespace
