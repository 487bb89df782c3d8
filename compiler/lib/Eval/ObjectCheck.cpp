//===- ObjectCheck.cpp - run what a compilation produced ------------------===//
#include "attnc/Eval/ObjectCheck.h"
#include "attnc/Target/Target.h"
#include "attnc/runtime/Runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstdlib>

using namespace llvm;

bool attnc::runCompiledPaths(Compilation &comp, const Spec &spec, Isa isa,
                             const EvalInputs &in, std::vector<CompiledRun> &runs,
                             std::string &error) {
  if (!comp.llvmModule() || !comp.targetMachine()) {
    error = "the compilation did not reach llvm-ir-opt";
    return false;
  }
  SmallVector<char, 0> obj;
  if (!emitCode(*comp.llvmModule(), *comp.targetMachine(), false, obj, error))
    return false;
  SmallString<128> dir;
  if (std::error_code ec = sys::fs::createUniqueDirectory("attnc-check", dir)) {
    error = "cannot create a temporary directory: " + ec.message();
    return false;
  }
  SmallString<128> so(dir);
  sys::path::append(so, "lib" + spec.name + ".so");
  std::string glue = emitKernelGlue(comp.desc(), comp.plan(), isa, "", comp.kernelsIsa());
  bool ok = linkSharedObject(obj, glue, sys::path::filename(so).str(),
                             /*archive=*/false, so.str().str(), error);
  auto cleanup = [&] {
    sys::fs::remove(so);
    sys::fs::remove(dir);
  };
  if (!ok) {
    cleanup();
    return false;
  }
  // One run per code path: ATTNC_ISA caps the glue's choice (the first
  // run uncapped: a bf16 library's AMX-BF16 or AVX512-BF16 path where the
  // CPU has it, then its AVX512-BF16, plain AVX-512 and AVX2 paths; a cap
  // that selects a path already run adds nothing).
  const char *old = std::getenv("ATTNC_ISA");
  std::string saved = old ? old : "";
  std::vector<std::pair<std::string, const char *>> caps = {
      {"best", nullptr}, {"x86-avx512-bf16", "x86-avx512-bf16"},
      {"x86-avx512", "x86-avx512"}, {"x86-avx2", "x86-avx2"}};
  if (isa != Isa::Multi)
    caps.resize(1);
  for (auto &[label, cap] : caps) {
    if (cap)
      setenv("ATTNC_ISA", cap, 1);
    else if (old)
      unsetenv("ATTNC_ISA");
    attnrt::Kernel k;
    attnrt::LoadError le;
    std::string msg;
    ok = k.load(so.str().str(), msg, le);
    uint32_t sel = ok ? k.selectedIsa() : ATTNC_ISA_NONE;
    if (ok && sel != ATTNC_ISA_NONE) {
      std::vector<const float *> w;
      for (const auto &t : in.storage)
        w.push_back(t.data());
      std::vector<unsigned char> packed, ws;
      CompiledRun run;
      run.isa = attnrt::nameOf("isa", sel);
      int64_t outDim = spec.outProj ? spec.dModel : spec.qWidth();
      run.y.assign(in.batch * in.seq * outDim, 0.0f);
      int rc = k.packFloat(w, packed);
      // A bf16/f16 block's x, x_kv and y cross in its dtype (x is already
      // representable: randomInputs rounded it).
      const uint32_t dt = k.info().dtype;
      const int64_t eb = attnrt::dtypeBytes(dt);
      std::vector<unsigned char> xk(in.x.size() * eb), xkvk(in.xKv.size() * eb),
          yk(run.y.size() * eb);
      attnrt::fromFloat(dt, in.x.data(), xk.data(), int64_t(in.x.size()));
      attnrt::fromFloat(dt, in.xKv.data(), xkvk.data(), int64_t(in.xKv.size()));
      attnrt::VariantInputs vin = variantInputs(spec, in);
      if (vin.xKv)
        vin.xKv = xkvk.data();
      if (rc == ATTNC_OK)
        rc = k.forward(packed.data(), xk.data(), yk.data(), in.batch, in.seq, vin,
                       /*probs=*/nullptr, ws);
      attnrt::toFloat(dt, yk.data(), run.y.data(), int64_t(run.y.size()));
      if (rc != ATTNC_OK) {
        error = "the compiled kernel (" + run.isa + ") returned status " +
                std::to_string(rc);
        ok = false;
      } else if (std::none_of(runs.begin(), runs.end(),
                              [&](const CompiledRun &r) { return r.isa == run.isa; })) {
        runs.push_back(std::move(run));
      }
    } else if (!ok) {
      error = msg;
    }
    if (!ok)
      break;
  }
  if (old)
    setenv("ATTNC_ISA", saved.c_str(), 1);
  else
    unsetenv("ATTNC_ISA");
  cleanup();
  return ok;
}
