//===- SetTarget.cpp - resolve the target description ---------------------===//
//
// What each code path looks like to the tiling (vector width and register
// count from the ISA table in attnc/Target/Isa.h; micro-kernel tiles,
// caches), attached to the functions before any
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
using attnc::attn::AttnDialect;
using attnc::attn::CpuTargetAttr;
using attnc::attn::CudaTargetAttr;
using attnc::attn::TargetAttrInterface;
using attnc::Isa;
using attnc::IsaInfo;

TargetAttrInterface attnc::targetFor(MLIRContext *ctx, StringRef isaName,
                                     StringRef hostFeatures) {
  const IsaInfo *info = findIsa(isaName);
  if (!info || info->isa == Isa::Multi)
    return {};
  // Weights are packed in panels of 32 columns for every code path, so one
  // NAME_pack serves all of them.
  const int64_t panel = 32;
  if (info->cuda) {
    // A CUDA block is the unit of a task. GEMM: 128 x 64 tiles of y per
    // block, 256 threads of 8 x 4 outputs (4 adjacent columns: 32
    // accumulators in registers, 12 shared loads per 32 FMAs), K staged
    // through shared memory 16 rows at a time. Attention: 64 queries per
    // block, one thread per query, keys staged 32 at a time. Other
    // kernels: 256 threads. Shared memory: the 48 KiB a block may use
    // statically; L2: the device's (A100 40 MiB, H100/H200 50 MiB).
    bool h = info->isa == Isa::CudaSm90;
    return CudaTargetAttr::get(ctx, info->name, info->cpu, info->features, panel,
                               /*gemm_tile_m=*/128, /*gemm_tile_n=*/64,
                               /*gemm_tile_k=*/16, /*gemm_threads=*/256,
                               /*gemm_thread_n=*/4, /*attn_threads=*/64,
                               /*attn_keys=*/32, /*block_threads=*/256,
                               /*shared_bytes=*/48 << 10, (h ? 50 : 40) << 20);
  }
  // Caches of the machines we measure on (48 KiB L1d, 1-2 MiB L2).
  const int64_t l1 = 48 << 10, l2 = 2 << 20;
  int vw = 0, regs = 0;
  vectorShape(info->isa, vw, regs);
  // `host` names this machine's CPU; of its features the target lists the
  // ones the kernels choose on and the pass asked for (hostFeatures).
  std::string cpu = info->isa == Isa::Host ? llvm::sys::getHostCPUName().str()
                                           : std::string(info->cpu);
  std::string features = info->features;
  if (info->isa == Isa::Host) {
    auto host = llvm::sys::getHostCPUFeatures();
    SmallVector<StringRef> asked;
    hostFeatures.split(asked, ',', -1, /*KeepEmpty=*/false);
    for (StringRef f : asked)
      if (f.consume_front("+") && host.lookup(f))
        features += (features.empty() ? "+" : ",+") + f.str();
  }
  // GEMM: MR x NR accumulators with NR = 2 vectors (2 B loads + 1
  // broadcast + MR*2 accumulators <= registers): AVX-512 12x32 (24 zmm),
  // AVX2 6x16 (12 ymm), SSE 6x8.
  int64_t nr = 2 * vw;
  int64_t mr = regs >= 32 ? 12 : 6;
  // Attention: 3 vectors of queries per task (each K/V row read serves 48
  // queries on AVX-512, 24 on AVX2: 6-22% faster at T >= 512 than 2
  // vectors, measured; T = 128 loses ~0.03 ms to the longer diagonal
  // block); KR keys per score block, KR x 3 accumulators (24 zmm, 12 ymm).
  int64_t mq = 3 * vw, kr = regs >= 32 ? 8 : 4;
  // K block: the kc x panel slice stays in L1 while row blocks stream past
  // it. AVX-512's 12x32 kernel reads all of a 256-row slice (32 KiB) per
  // call. A kernel narrower than the panel reads the slice once per part,
  // each part with the block's x rows again: AVX2's GEMMs ran 1-5% faster
  // with 128 rows (16 KiB), measured on a Zen 4 (whose L1 is 32 KiB, not
  // the l1 above), where AVX-512 ran 2% slower with 128. SSE2 follows AVX2
  // (not measured).
  int64_t kc = nr < panel ? 128 : 256;
  return CpuTargetAttr::get(ctx, info->name, cpu, features, vw, regs, panel,
                            mr, nr, /*gemm_kc=*/kc, /*gemm_mc=*/8 * mr, mq, kr,
                            /*attn_nk=*/128, l1, l2);
}

namespace {
struct SetTargetPass final
    : attnc::impl::AttnSetTargetPassBase<SetTargetPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<std::string> isas;
    attnc::Isa parsed;
    if (!attnc::parseIsa(isa, parsed)) {
      module.emitError("attnc-set-target: unknown isa '")
          << isa << "' (" << attnc::isaNames() << ")";
      return signalPassFailure();
    }
    for (attnc::Isa path : attnc::codePaths(parsed))
      isas.push_back(attnc::isaName(path));
    // bf16 weights with bf16 activations (x), or bf16 dot products in the
    // attention (attn.sdpa's dot_type): the multi library also has the
    // AVX512-BF16 path (vdpbf16ps), first, so the glue prefers it where
    // the CPU has it. With float32 (or f16) activations it does not: that
    // path rounds x and the attention output to bf16 for its GEMMs, a
    // relative 2^-8 on Q and K that large scores turn into whole percent
    // of y, where the float32 paths widen the weights and keep x as
    // given. (--target x86-avx512-bf16 still builds it, on request.)
    bool bf16Weights = false, bf16Acts = false, bf16Dots = false;
    for (auto f : module.getOps<func::FuncOp>()) {
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        auto t = dyn_cast<ShapedType>(f.getArgumentTypes()[i]);
        if (!t)
          continue;
        if (f.getArgAttr(i, AttnDialect::WeightAttrHelper::getNameStr()))
          bf16Weights |= t.getRank() == 2 && t.getElementType().isBF16();
        if (auto in = f.getArgAttrOfType<StringAttr>(i, AttnDialect::InputAttrHelper::getNameStr()))
          bf16Acts |= in.getValue() == "x" && t.getElementType().isBF16();
      }
      f.walk([&](attnc::attn::SdpaOp s) { bf16Dots |= bool(s.getDotType()); });
    }
    // GEMMs of bf16 weights on bf16 activations: also the AMX-BF16 path,
    // first (its tiles only change those GEMMs).
    const bool bf16Path = (bf16Weights && bf16Acts) || bf16Dots;
    const bool amxPath = bf16Weights && bf16Acts;
    if (parsed == attnc::Isa::Multi && bf16Path)
      isas.insert(isas.begin(), attnc::isaName(attnc::Isa::Avx512Bf16));
    if (parsed == attnc::Isa::Multi && amxPath)
      isas.insert(isas.begin(), attnc::isaName(attnc::Isa::AmxBf16));
    // `host` is the path the multi library would choose on this CPU: the
    // same rules, asked of this CPU's features (without them, a bf16 block
    // compiled for an AVX512-BF16 host took the widening float32 path).
    std::string hostFeatures = std::string(bf16Path ? "+avx512bf16" : "") +
                               (amxPath ? ",+amx-tile,+amx-bf16" : "");
    SmallVector<func::FuncOp> fns;
    for (auto f : module.getOps<func::FuncOp>()) {
      bool hasAttn = false;
      f.walk([&](Operation *op) {
        hasAttn |= isa_and_nonnull<attnc::attn::AttnDialect>(op->getDialect());
      });
      if (hasAttn && !f->hasAttr(AttnDialect::TargetAttrHelper::getNameStr()))
        fns.push_back(f);
    }
    for (func::FuncOp f : fns) {
      OpBuilder b(f);
      b.setInsertionPointAfter(f);
      for (const std::string &name : isas) {
        auto clone = cast<func::FuncOp>(b.clone(*f.getOperation()));
        clone.setName((f.getName() + "__" + attnc::variantSuffix(name)).str());
        clone->setAttr(AttnDialect::TargetAttrHelper::getNameStr(),
                       attnc::targetFor(ctx, name, hostFeatures));
        clone->setAttr(AttnDialect::VariantOfAttrHelper::getNameStr(), StringAttr::get(ctx, f.getName()));
        b.setInsertionPointAfter(clone);
      }
      f.erase();
    }
  }
};
} // namespace
