//===- CudaCodePaths.cpp - a CUDA code path's launch wrapper and table ----===//
//
// A CUDA code path's phases are PTX kernels: the glue loads the PTX through
// the CUDA driver and launches kernel p with tasks(p) blocks of its block
// size, passing the parameters NAME__V_args(call, out) stores (each memref as
// an expanded descriptor, pointers as integers). Its host side (sizes,
// grids) is x86-64 code like a CPU path's.
//
//===----------------------------------------------------------------------===//
#include "CudaCodePaths.h"
#include "attnc/Target/EntryPointBuilder.h"

#include <algorithm>

using namespace llvm;

namespace {
class CudaCodePaths final : public attnc::CodePathKind {
  const char *triple() const override { return "nvptx64-nvidia-cuda"; }
  // One new token per decode call: the decode entry lowers to the
  // one-query kernel only (GpuKernels.cpp).
  int64_t decodeMaxSeq() const override { return 1; }

  /// int64_t NAME__V_args(const attnc_call *c, int64_t *out): the kernels'
  /// parameters (the PTX entries take the same expanded memref descriptors
  /// as the host functions), stored in order, pointers as integers; returns
  /// how many there are.
  bool addRunWrapper(attnc::EntryPointBuilder &e, const attnc::CodePathSymbols &,
                     const std::string &wrap, bool decode, Function *&run,
                     std::string &error) const override {
    run = nullptr;
    Function *fn = e.define(wrap + "_args", e.i64, {e.ptr, e.ptr});
    auto args = e.forwardArgs(fn->getArg(0), decode, error);
    for (auto [i, v] : llvm::enumerate(args)) {
      Value *x = v->getType()->isPointerTy() ? e.b.CreatePtrToInt(v, e.i64) : v;
      e.b.CreateStore(x, e.b.CreateGEP(e.i64, fn->getArg(1), e.c64(i)));
    }
    e.b.CreateRet(e.c64(args.size()));
    return true;
  }

  /// A CUDA kernel's one code path: the PTX, its kernels' names and block
  /// sizes (os), and the variant table entry that launches them (ts).
  void emitGlueTable(raw_ostream &os, raw_ostream &ts, const attnc::KernelDesc &desc,
                     const attnc::PackPlan &plan, const std::string &ptx) const override {
    using namespace attnc;
    const std::string &n = desc.name;
    const LoweredInfo &lw = plan.lowered;
    // One code path: PTX kernels launched by the glue (KernelGlue.c, K_CUDA).
    const std::string &v = lw.variants.at(0);
    std::string base = glueSymbolBase(n, v, /*decode=*/false);
    std::string sm = v.substr(v.size() - 2);
    // Kernel parameters: each memref argument as an expanded descriptor
    // (allocated and aligned pointers, offset, sizes, strides).
    auto paramCount = [](const std::vector<ForwardArg> &args) {
      int64_t n = 0;
      for (const ForwardArg &a : args)
        n += 3 + 2 * static_cast<int64_t>(a.shape.size());
      return n;
    };
    int64_t params = paramCount(plan.forwardArgs);
    int64_t decodeParams = desc.decode() ? paramCount(plan.decodeArgs) : 0;
    // Forward's kernels, then decode's, as the entry table lists them.
    std::vector<std::pair<std::string, int64_t>> kernels;
    for (bool decode : {false, true}) {
      if (decode && !desc.decode())
        continue;
      const CodePathSymbols *path = lw.path(v, decode);
      const std::vector<int64_t> &threads = decode ? lw.decodeBlockThreads : lw.blockThreads;
      for (size_t p = 0; path && p < path->kernels.size(); ++p)
        kernels.push_back({path->kernels[p], threads.at(p)});
    }
    os << "#define K_CUDA 1\n#define K_CUDA_SM " << sm << "\n"
       << "#define K_CUDA_KERNELS " << kernels.size() << "\n"
       << "#define K_CUDA_ARGS " << params << "\n"
       << "#define K_CUDA_ARGS_FN " << base << "_args\n"
       << "#define K_CUDA_DECODE_ARGS " << decodeParams << "\n"
       << "#define K_CUDA_DECODE_ARGS_FN " << glueSymbolBase(n, v, /*decode=*/true) << "_args\n"
       << "#define K_CUDA_MAX_ARGS " << std::max<int64_t>(params, decodeParams) << "\n"
       << "static const char *const k_cuda_kernels[" << kernels.size() << "] = {";
    for (size_t p = 0; p < kernels.size(); ++p)
      os << (p ? ", " : "") << cString(kernels[p].first);
    os << "};\nstatic const unsigned k_cuda_threads[" << kernels.size() << "] = {";
    for (size_t p = 0; p < kernels.size(); ++p)
      os << (p ? ", " : "") << kernels[p].second << "u";
    os << "};\n/* The kernels, as LLVM's NVPTX back end wrote them. */\n"
       << "static const char k_ptx[] =\n";
    size_t start = 0;
    while (start < ptx.size()) {
      size_t end = ptx.find('\n', start);
      if (end == std::string::npos)
        end = ptx.size();
      os << "  \"";
      for (char ch : ptx.substr(start, end - start)) {
        if (ch == '\\' || ch == '"')
          os << '\\';
        if (ch == '\t')
          os << "\\t";
        else
          os << ch;
      }
      os << "\\n\"\n";
      start = end + 1;
    }
    os << "  ;\n";
    std::string dbase = glueSymbolBase(n, v, /*decode=*/true);
    for (const std::string &b : {base, dbase}) {
      if (b == dbase && !desc.decode())
        continue;
      ts << "int64_t " << b << "_ws(const attnc_call *);\n"
         << "int64_t " << b << "_tasks(const attnc_call *, int64_t);\n"
         << "int64_t " << b << "_args(const attnc_call *, int64_t *);\n";
    }
    if (!desc.decode()) // referenced (never called) by the decode-less glue
      ts << "#define " << dbase << "_args 0\n";
    ts << "static const attnc_variant k_variants[] = {\n"
       << "  {" << isaMacro(v) << ", k_cuda_usable, " << base << "_ws, "
       << base << "_tasks, 0, ";
    if (desc.decode())
      ts << dbase << "_ws, " << dbase << "_tasks, 0},\n};\n";
    else
      ts << "0, 0, 0},\n};\n";
  }

  bool emitDeviceCode(mlir::gpu::GPUModuleOp gm, attnc::Isa isa, std::string &out,
                      std::string &error) const override {
    return attnc::emitPtx(gm, isa, out, error);
  }
};
} // namespace

void attnc::registerCudaCodePaths() {
  static const CudaCodePaths kind;
  registerCodePathKind(/*cuda=*/true, kind);
}
