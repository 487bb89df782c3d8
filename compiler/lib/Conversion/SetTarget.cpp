//===- SetTarget.cpp - resolve the target description ---------------------===//
//
// One table of what each x86 code path looks like (vector width, register
// count, micro-kernel tiles, caches), attached to the functions before any
// lowering so the tile sizes are data in the IR, not constants in the
// lowering.
//
//===----------------------------------------------------------------------===//
#include "attnc/Conversion/Passes.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/TargetParser/Host.h"

namespace attnc {
#define GEN_PASS_DEF_ATTNSETTARGETPASS
#include "attnc/Conversion/Passes.h.inc"
} // namespace attnc

using namespace mlir;
using attnc::attn::TargetAttr;

TargetAttr attnc::targetFor(MLIRContext *ctx, StringRef isa) {
  // Caches of the machines we measure on (Xeon, 48 KiB L1d, 2 MiB L2).
  const int64_t l1 = 48 << 10, l2 = 2 << 20;
  // Weights are packed in panels of 32 columns for every code path, so one
  // NAME_pack serves all of them.
  const int64_t panel = 32;
  auto make = [&](StringRef name, StringRef cpu, StringRef features,
                  int64_t vw, int64_t regs) {
    // GEMM: MR x NR accumulators with NR = 2 vectors (2 B loads + 1
    // broadcast + MR*2 accumulators <= registers): AVX-512 12x32 (24 zmm),
    // AVX2 6x16 (12 ymm), SSE 6x8.
    int64_t nr = 2 * vw;
    int64_t mr = regs >= 32 ? 12 : 6;
    // Attention: 2 vectors of queries per task; KR keys per score block.
    int64_t mq = 2 * vw, kr = regs >= 32 ? 12 : 6;
    return TargetAttr::get(ctx, name, cpu, features, vw, regs, panel, mr, nr,
                           /*gemm_kc=*/256, /*gemm_mc=*/8 * mr, mq, kr,
                           /*attn_nk=*/128, l1, l2);
  };
  if (isa == "x86-avx512")
    return make("x86-avx512", "x86-64-v4", "+prefer-no-scatter", 16, 32);
  if (isa == "x86-avx2")
    return make("x86-avx2", "x86-64-v3", "", 8, 16);
  if (isa == "x86-64")
    return make("x86-64", "x86-64", "", 4, 16);
  if (isa == "cuda-sm80" || isa == "cuda-sm90") {
    // A CUDA block is the unit of a task. GEMM: 128 x 64 tiles of y per
    // block (gemm_mr x gemm_nr), 256 threads (gemm_mc) of 8 x 4 outputs
    // (32 accumulators in registers, 12 shared loads per 32 FMAs),
    // K staged through shared memory 16 (gemm_kc) at a time. Attention:
    // 64 queries per block (attn_mq), one thread per query, keys staged
    // 32 (attn_nk) at a time. "l1" is the static shared memory a block may
    // use (48 KiB), "l2" the device's L2 (A100 40 MiB, H100/H200 50 MiB).
    bool h = isa == "cuda-sm90";
    // PTX ISA 7.0 is the oldest with sm_80 (drivers from CUDA 11.0 on),
    // 7.8 the oldest with sm_90.
    return TargetAttr::get(ctx, isa, h ? "sm_90" : "sm_80", h ? "+ptx78" : "+ptx70",
                           /*vector_width=*/1, /*registers=*/255, panel,
                           /*gemm_mr=*/128, /*gemm_nr=*/64, /*gemm_kc=*/16,
                           /*gemm_mc=*/256, /*attn_mq=*/64, /*attn_kr=*/1,
                           /*attn_nk=*/32, 48 << 10, (h ? 50 : 40) << 20);
  }
  if (isa == "host") {
    std::string cpu = llvm::sys::getHostCPUName().str();
    auto f = llvm::sys::getHostCPUFeatures();
    bool avx512 = f.lookup("avx512f") && f.lookup("avx512bw") &&
                  f.lookup("avx512vl") && f.lookup("avx512dq");
    bool avx2 = f.lookup("avx2") && f.lookup("fma");
    return avx512 ? make("host", cpu, "", 16, 32)
           : avx2 ? make("host", cpu, "", 8, 16)
                  : make("host", cpu, "", 4, 16);
  }
  return {};
}

StringRef attnc::variantSuffix(StringRef isa) {
  if (isa == "x86-avx512") return "avx512";
  if (isa == "x86-avx2") return "avx2";
  if (isa == "x86-64") return "x86_64";
  if (isa == "host") return "host";
  if (isa == "cuda-sm80") return "cuda_sm80";
  if (isa == "cuda-sm90") return "cuda_sm90";
  return "";
}

namespace {
struct SetTargetPass final
    : attnc::impl::AttnSetTargetPassBase<SetTargetPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<std::string> isas;
    if (isa == "multi")
      isas = {"x86-avx512", "x86-avx2"};
    else if (attnc::targetFor(ctx, isa))
      isas = {isa};
    else {
      module.emitError("attnc-set-target: unknown isa '")
          << isa << "' (multi, x86-avx512, x86-avx2, x86-64, host, cuda-sm80, cuda-sm90)";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> fns;
    for (auto f : module.getOps<func::FuncOp>()) {
      bool hasAttn = false;
      f.walk([&](Operation *op) {
        hasAttn |= isa_and_nonnull<attnc::attn::AttnDialect>(op->getDialect());
      });
      if (hasAttn && !f->hasAttr("attn.target"))
        fns.push_back(f);
    }
    for (func::FuncOp f : fns) {
      OpBuilder b(f);
      b.setInsertionPointAfter(f);
      for (const std::string &name : isas) {
        auto clone = cast<func::FuncOp>(b.clone(*f.getOperation()));
        clone.setName((f.getName() + "__" + attnc::variantSuffix(name)).str());
        clone->setAttr("attn.target", attnc::targetFor(ctx, name));
        clone->setAttr("attn.variant_of", StringAttr::get(ctx, f.getName()));
        b.setInsertionPointAfter(clone);
      }
      f.erase();
    }
  }
};
} // namespace
