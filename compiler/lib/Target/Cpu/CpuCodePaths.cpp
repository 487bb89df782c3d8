//===- CpuCodePaths.cpp - a CPU code path's run wrapper and glue table ----===//
//
// A CPU code path runs its phases on the kernel's thread pool: the glue
// calls NAME__V_run(call, phase, lo, hi) for each range of a phase's tasks,
// and picks the first code path whose CPUID check passes (preferred first).
//
//===----------------------------------------------------------------------===//
#include "attnc/Target/CodePaths.h"
#include "attnc/Target/EntryPointBuilder.h"

using namespace llvm;

namespace {
class CpuCodePaths final : public attnc::CodePathKind {
  const char *triple() const override { return "x86_64-unknown-linux-gnu"; }
  // A chunk of any length per decode call (the attention picks its kernel
  // per call).
  int64_t decodeMaxSeq() const override { return 0; }

  bool addRunWrapper(attnc::EntryPointBuilder &e, const attnc::CodePathSymbols &path,
                     const std::string &wrap, bool decode, Function *&run,
                     std::string &error) const override {
    run = path.run.empty() ? nullptr : e.m.getFunction(path.run);
    if (!run) {
      error = "internal error: the lowered functions of code path " + wrap +
              " (attn.entry_points) are not in the module";
      return false;
    }
    Function *fn = e.define(wrap + "_run", e.b.getVoidTy(), {e.ptr, e.i64, e.i64, e.i64});
    auto args = e.forwardArgs(fn->getArg(0), decode, error);
    for (unsigned i = 1; i < 4; ++i)
      args.push_back(fn->getArg(i));
    e.b.CreateCall(run, args);
    e.b.CreateRetVoid();
    return true;
  }

  /// The code paths' table, preferred first, each with the CPUID check it
  /// needs before it may run.
  void emitGlueTable(raw_ostream &, raw_ostream &ts, const attnc::KernelDesc &desc,
                     const attnc::PackPlan &plan, const std::string &) const override {
    using namespace attnc;
    const std::string &n = desc.name;
    const LoweredInfo &lw = plan.lowered;
    for (const std::string &v : lw.variants)
      for (bool decode : {false, true}) {
        if (decode && !desc.decode())
          continue;
        std::string base = glueSymbolBase(n, v, decode);
        ts << "int64_t " << base << "_ws(const attnc_call *);\n"
           << "int64_t " << base << "_tasks(const attnc_call *, int64_t);\n"
           << "void " << base << "_run(const attnc_call *, int64_t, int64_t, int64_t);\n";
      }
    ts << "static const attnc_variant k_variants[] = {\n";
    for (const std::string &v : lw.variants) {
      std::string base = glueSymbolBase(n, v, /*decode=*/false);
      // The CPUID check a code path needs before it may run (the ISA
      // table's; host: from the features its code is compiled with).
      const IsaInfo *vi = findIsa(v);
      CpuLevel level = vi ? cpuLevel(vi->isa) : CpuLevel::Baseline;
      const char *check = level == CpuLevel::AmxBf16      ? "k_has_amxbf16"
                          : level == CpuLevel::Avx512Bf16 ? "k_has_avx512bf16"
                          : level == CpuLevel::Avx512   ? "k_has_avx512"
                          : level == CpuLevel::Avx2     ? "k_has_avx2"
                                                        : "k_has_baseline";
      ts << "  {" << isaMacro(v) << ", " << check << ", " << base << "_ws, "
         << base << "_tasks, " << base << "_run, ";
      if (desc.decode()) {
        std::string dbase = glueSymbolBase(n, v, /*decode=*/true);
        ts << dbase << "_ws, " << dbase << "_tasks, " << dbase << "_run},\n";
      } else {
        ts << "0, 0, 0},\n";
      }
    }
    ts << "};\n";
  }

  bool emitDeviceCode(mlir::gpu::GPUModuleOp, attnc::Isa isa, std::string &,
                      std::string &error) const override {
    error = std::string("internal error: code path ") + attnc::isaName(isa) +
            " runs on the CPU and has no device code";
    return false;
  }
};
} // namespace

void attnc::registerCpuCodePaths() {
  static const CpuCodePaths kind;
  registerCodePathKind(/*cuda=*/false, kind);
}
