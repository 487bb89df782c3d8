//===- Isa.cpp - the instruction set table --------------------------------===//
#include "attnc/Target/Isa.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <cstdlib>

using namespace attnc;

namespace {
// PTX ISA 7.0 is the oldest with sm_80 (drivers from CUDA 11.0 on), 7.8 the
// oldest with sm_90. AVX-512 code prefers gathers to scatters (none are
// emitted; the feature keeps LLVM from forming them).
const IsaInfo kIsas[] = {
    {Isa::Multi, "multi", "", "ATTNC_ISA_MULTI", "x86-64", "", 0, 0, false, CpuLevel::None},
    {Isa::Avx512, "x86-avx512", "avx512", "ATTNC_ISA_AVX512", "x86-64-v4",
     "+prefer-no-scatter", 16, 32, false, CpuLevel::Avx512},
    // AVX-512 with AVX512-BF16 (vdpbf16ps): the GEMMs of bf16 weights on
    // bf16 dot products. A multi library has it when its activations are bf16
    // (bf16 weights, or bf16 dot products in the attention).
    {Isa::Avx512Bf16, "x86-avx512-bf16", "avx512bf16", "ATTNC_ISA_AVX512_BF16", "x86-64-v4",
     "+prefer-no-scatter,+avx512bf16", 16, 32, false, CpuLevel::Avx512Bf16},
    // AVX512-BF16 plus AMX-BF16 tiles (tdpbf16ps, 16 x 32 bf16 by 32 x 16
    // into 16 x 16 float32) for the GEMMs of bf16 weights and activations;
    // the rest is the AVX512-BF16 path's code. A multi library of such a
    // block has it first (Sapphire Rapids and newer).
    {Isa::AmxBf16, "x86-amx-bf16", "amxbf16", "ATTNC_ISA_AMX_BF16", "x86-64-v4",
     "+prefer-no-scatter,+avx512bf16,+amx-tile,+amx-bf16", 16, 32, false, CpuLevel::AmxBf16},
    {Isa::Avx2, "x86-avx2", "avx2", "ATTNC_ISA_AVX2", "x86-64-v3", "", 8, 16, false,
     CpuLevel::Avx2},
    {Isa::X86_64, "x86-64", "x86_64", "ATTNC_ISA_X86_64", "x86-64", "", 4, 16, false,
     CpuLevel::Baseline},
    {Isa::Host, "host", "host", "ATTNC_ISA_HOST", "", "", 0, 0, false, CpuLevel::Baseline},
    {Isa::CudaSm80, "cuda-sm80", "cuda_sm80", "ATTNC_ISA_CUDA_SM80", "sm_80", "+ptx70",
     1, 255, true, CpuLevel::None},
    {Isa::CudaSm90, "cuda-sm90", "cuda_sm90", "ATTNC_ISA_CUDA_SM90", "sm_90", "+ptx78",
     1, 255, true, CpuLevel::None},
};
} // namespace

const IsaInfo &attnc::isaInfo(Isa isa) {
  for (const IsaInfo &i : kIsas)
    if (i.isa == isa)
      return i;
  return kIsas[0]; // unreachable: every enumerator has a row
}

const IsaInfo *attnc::findIsa(llvm::StringRef name) {
  for (const IsaInfo &i : kIsas)
    if (name == i.name)
      return &i;
  return nullptr;
}

bool attnc::parseIsa(const std::string &s, Isa &out) {
  // A list names the code paths of one library: the AVX-512 + AVX2 pair
  // is the `multi` library.
  if (s == "x86-avx512,x86-avx2" || s == "x86-avx2,x86-avx512") {
    out = Isa::Multi;
    return true;
  }
  const IsaInfo *i = findIsa(s);
  if (!i)
    return false;
  out = i->isa;
  return true;
}

bool attnc::hasBf16Dots(llvm::StringRef name) {
  const IsaInfo *i = findIsa(name);
  if (!i || i->cuda)
    return false;
  CpuLevel l = cpuLevel(i->isa);
  return l == CpuLevel::Avx512Bf16 || l == CpuLevel::AmxBf16;
}

bool attnc::amxEmulated() {
  const char *e = std::getenv("ATTNC_EMULATE_AMX");
  return e && std::string(e) == "1";
}

std::string attnc::isaNames() {
  std::string s;
  for (const IsaInfo &i : kIsas)
    s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

std::vector<Isa> attnc::codePaths(Isa isa) {
  if (isa == Isa::Multi)
    return {Isa::Avx512, Isa::Avx2};
  return {isa};
}

llvm::StringRef attnc::variantSuffix(llvm::StringRef name) {
  const IsaInfo *i = findIsa(name);
  return i ? i->suffix : "";
}

std::string attnc::glueSymbolBase(llvm::StringRef kernel, llvm::StringRef isa,
                                  bool decode) {
  return (kernel.str() + "__" + variantSuffix(isa).str() + (decode ? "_decode" : ""));
}

void attnc::targetCpuAndFeatures(Isa isa, std::string &cpu, std::string &features) {
  const IsaInfo &i = isaInfo(isa);
  cpu = i.cpu;
  features = i.features;
  if (isa != Isa::Host)
    return;
  cpu = llvm::sys::getHostCPUName().str();
  std::vector<std::string> fs;
  for (auto &f : llvm::sys::getHostCPUFeatures())
    fs.push_back((f.second ? "+" : "-") + f.first().str());
  std::sort(fs.begin(), fs.end()); // deterministic order
  features.clear();
  for (auto &f : fs)
    features += (features.empty() ? "" : ",") + f;
}

void attnc::targetCpuAndFeatures(const std::string &name, std::string &cpu,
                                 std::string &features) {
  const IsaInfo *i = findIsa(name);
  targetCpuAndFeatures(i ? i->isa : Isa::X86_64, cpu, features);
}

attnc::CpuLevel attnc::cpuLevel(Isa isa) {
  if (isa != Isa::Host)
    return isaInfo(isa).level;
  std::string cpu, features;
  targetCpuAndFeatures(isa, cpu, features);
  return features.find("+amx-bf16") != std::string::npos &&
                 features.find("+amx-tile") != std::string::npos &&
                 features.find("+avx512bf16") != std::string::npos
             ? CpuLevel::AmxBf16
         : features.find("+avx512bf16") != std::string::npos ? CpuLevel::Avx512Bf16
         : features.find("+avx512f") != std::string::npos    ? CpuLevel::Avx512
         : features.find("+avx2") != std::string::npos  ? CpuLevel::Avx2
                                                         : CpuLevel::Baseline;
}

void attnc::vectorShape(Isa isa, int &vectorWidth, int &registers) {
  const IsaInfo &i = isaInfo(isa);
  vectorWidth = i.vectorWidth;
  registers = i.registers;
  if (isa != Isa::Host)
    return;
  auto f = llvm::sys::getHostCPUFeatures();
  bool avx512 = f.lookup("avx512f") && f.lookup("avx512bw") &&
                f.lookup("avx512vl") && f.lookup("avx512dq");
  bool avx2 = f.lookup("avx2") && f.lookup("fma");
  vectorWidth = avx512 ? 16 : avx2 ? 8 : 4;
  registers = avx512 ? 32 : 16;
}
