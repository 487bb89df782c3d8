//===- LowerAmx.cpp - the AMX-BF16 GEMM tiles to LLVM, or emulated --------===//
//
// The AMX-BF16 code path's GEMM kernels (PackedGemm.cpp, amxBlock) carry
// their four float32 accumulator tiles through the K loop as scf.for
// iter_args of type !amx.tile<16x16xf32>. Upstream lowers the tile
// operations (convert-vector-to-llvm{enable-amx}), but its scf -> cf -> llvm
// conversions do not know the tile type, so the loop's branch arguments stay
// unconverted. Here one conversion lowers the tile operations to their
// `llvm.x86.*.internal` intrinsics (upstream's patterns) and retypes the
// loops that carry tiles as !llvm.x86_amx (LLVM's X86 back end then writes
// the tile configuration, ldtilecfg, and the tilerelease).
//
// emulate (ATTNC_EMULATE_AMX=1 in attnc's environment: a test hook) rewrites
// instead each tile as a vector of its shape and each tile operation as the
// vector code it stands for:
//   tile_load / tile_store   row m at base[indices] + m * stride (elements,
//                            through a flat view of the buffer): exactly the
//                            addresses tileloadd / tilestored use;
//   tile_mulf                C[m] += A[m] pair k (broadcast) . B[k] for each
//                            row m and k-pair k, vdpbf16ps: the same products,
//                            in pairs, into float32;
//   tile_zero                a zero vector.
// So the AMX path's loops, tiles, addresses, strides and K tails run, and
// are checked against the interpreter, on a CPU with AVX512-BF16 and no AMX.
// The order in which tdpbf16ps adds a row's 16 pair products is the
// hardware's; the emulation adds them in k order (the --check bound holds
// for any order).
//
//===----------------------------------------------------------------------===//
#include "attnc/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/AMX/Transforms.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/DialectConversion.h"

namespace attnc {
#define GEN_PASS_DEF_ATTNLOWERAMXPASS
#include "attnc/Conversion/Passes.h.inc"
} // namespace attnc

using namespace mlir;

namespace {

/// Tiles as x86_amx (emulate: as vectors of their shape); every other type
/// as it is. For the loops' structural conversion.
struct TileTypes : TypeConverter {
  TileTypes(MLIRContext *ctx, bool emulate) {
    addConversion([](Type t) { return t; });
    addConversion([ctx, emulate](amx::TileType t) -> Type {
      if (emulate)
        return VectorType::get(t.getShape(), t.getElementType());
      return LLVM::LLVMX86AMXType::get(ctx);
    });
    auto cast = [](OpBuilder &b, Type t, ValueRange in, Location l) -> Value {
      return UnrealizedConversionCastOp::create(b, l, t, in).getResult(0);
    };
    addSourceMaterialization(cast);
    addTargetMaterialization(cast);
  }
};

/// A flat view of `base`'s buffer, the linear element index of `indices`
/// in it (offset + sum of index * stride) and a tile row's stride (the one
/// given, else the second-innermost dimension's): row m of a tile is at
/// rowAt(m) = at + m * stride, as tileloadd / tilestored address it.
struct Flat {
  Value view, at, stride;
  Value rowAt(OpBuilder &b, Location l, int64_t m) const {
    return arith::AddIOp::create(
        b, l, at, arith::MulIOp::create(b, l, stride, arith::ConstantIndexOp::create(b, l, m)));
  }
};
Flat flatten(OpBuilder &b, Location l, Value base, ValueRange indices, Value stride) {
  auto mt = cast<MemRefType>(base.getType());
  auto md = memref::ExtractStridedMetadataOp::create(b, l, base);
  Value at = md.getOffset();
  for (auto [i, v] : llvm::enumerate(indices))
    at = arith::AddIOp::create(b, l, at,
                               arith::MulIOp::create(b, l, v, md.getStrides()[i]));
  auto flatT = MemRefType::get({ShapedType::kDynamic}, mt.getElementType(),
                               MemRefLayoutAttrInterface{}, mt.getMemorySpace());
  // The view spans the whole address range a tile row may reach; nothing
  // checks the bounds (as for tileloadd).
  Value huge = arith::ConstantIndexOp::create(b, l, int64_t(1) << 40);
  Value view = memref::ReinterpretCastOp::create(
      b, l, flatT, md.getBaseBuffer(), OpFoldResult(b.getIndexAttr(0)),
      ArrayRef<OpFoldResult>{huge}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  if (!stride && mt.getRank() >= 2)
    stride = md.getStrides()[mt.getRank() - 2];
  return {view, at, stride};
}

struct EmulateZero final : OpConversionPattern<amx::TileZeroOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(amx::TileZeroOp op, OpAdaptor,
                                ConversionPatternRewriter &rw) const override {
    auto vt = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    rw.replaceOpWithNewOp<arith::ConstantOp>(op, vt, rw.getZeroAttr(vt));
    return success();
  }
};

struct EmulateLoad final : OpConversionPattern<amx::TileLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(amx::TileLoadOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    Location l = op.getLoc();
    auto vt = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    Flat f = flatten(rw, l, a.getBase(), a.getIndices(), a.getStride());
    if (!f.stride)
      return rw.notifyMatchFailure(op, "a 1-D base needs an explicit stride");
    auto rowT = VectorType::get({vt.getDimSize(1)}, vt.getElementType());
    Value tile = arith::ConstantOp::create(rw, l, vt, rw.getZeroAttr(vt));
    for (int64_t m = 0; m < vt.getDimSize(0); ++m) {
      Value row = vector::LoadOp::create(rw, l, rowT, f.view, ValueRange{f.rowAt(rw, l, m)});
      tile = vector::InsertOp::create(rw, l, row, tile, ArrayRef<int64_t>{m});
    }
    rw.replaceOp(op, tile);
    return success();
  }
};

struct EmulateStore final : OpConversionPattern<amx::TileStoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(amx::TileStoreOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    Location l = op.getLoc();
    auto vt = cast<VectorType>(a.getVal().getType());
    Flat f = flatten(rw, l, a.getBase(), a.getIndices(), a.getStride());
    if (!f.stride)
      return rw.notifyMatchFailure(op, "a 1-D base needs an explicit stride");
    for (int64_t m = 0; m < vt.getDimSize(0); ++m) {
      Value row = vector::ExtractOp::create(rw, l, a.getVal(), ArrayRef<int64_t>{m});
      vector::StoreOp::create(rw, l, row, f.view, ValueRange{f.rowAt(rw, l, m)});
    }
    rw.eraseOp(op);
    return success();
  }
};

/// acc[M][N] += sum over k-pairs kp of A[m][2kp]*B[kp][2n] + A[m][2kp+1]*B[kp][2n+1]
/// (bf16 A [M][2K'], B [K'][2N], N = 16: one vdpbf16ps per row and k-pair).
struct EmulateMulF final : OpConversionPattern<amx::TileMulFOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(amx::TileMulFOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    Location l = op.getLoc();
    auto at = cast<VectorType>(a.getLhs().getType());
    auto bt = cast<VectorType>(a.getRhs().getType());
    auto ct = cast<VectorType>(a.getAcc().getType());
    if (!at.getElementType().isBF16() || ct.getDimSize(1) != 16 || bt.getDimSize(1) != 32)
      return rw.notifyMatchFailure(op, "emulated for bf16 tiles of 16 float32 columns");
    auto accRowT = VectorType::get({16}, rw.getF32Type());
    auto pairsT = VectorType::get({at.getDimSize(1) / 2}, rw.getI32Type());
    auto lanesT = VectorType::get({16}, rw.getI32Type());
    auto bf16RowT = VectorType::get({32}, rw.getBF16Type());
    Value res = a.getAcc();
    for (int64_t m = 0; m < ct.getDimSize(0); ++m) {
      Value acc = vector::ExtractOp::create(rw, l, a.getAcc(), ArrayRef<int64_t>{m});
      Value aRow = vector::ExtractOp::create(rw, l, a.getLhs(), ArrayRef<int64_t>{m});
      Value aPairs = vector::BitCastOp::create(rw, l, pairsT, aRow);
      for (int64_t k = 0; k < bt.getDimSize(0); ++k) {
        Value pair = vector::ExtractOp::create(rw, l, aPairs, ArrayRef<int64_t>{k});
        Value lanes = vector::BroadcastOp::create(rw, l, lanesT, pair);
        Value aB = vector::BitCastOp::create(rw, l, bf16RowT, lanes);
        Value bRow = vector::ExtractOp::create(rw, l, a.getRhs(), ArrayRef<int64_t>{k});
        acc = x86vector::DotBF16Op::create(rw, l, accRowT, acc, aB, bRow);
      }
      res = vector::InsertOp::create(rw, l, acc, res, ArrayRef<int64_t>{m});
    }
    rw.replaceOp(op, res);
    return success();
  }
};

struct LowerAmxPass final : attnc::impl::AttnLowerAmxPassBase<LowerAmxPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool any = false;
    module.walk([&](Operation *op) {
      any |= isa_and_nonnull<amx::AMXDialect>(op->getDialect());
      return any ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (!any)
      return;
    MLIRContext *ctx = &getContext();
    const bool emu = emulate || attnc::amxEmulated();
    TileTypes tiles(ctx, emu);
    LLVMTypeConverter llvmTypes(ctx);
    RewritePatternSet patterns(ctx);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<amx::AMXDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (emu)
      patterns.add<EmulateZero, EmulateLoad, EmulateStore, EmulateMulF>(tiles, ctx);
    else
      populateAMXLegalizeForLLVMExportPatterns(llvmTypes, patterns);
    scf::populateSCFStructuralTypeConversionsAndLegality(tiles, patterns, target);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
