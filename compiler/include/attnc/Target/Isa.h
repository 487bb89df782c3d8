//===- Isa.h - the instruction sets attnc generates code for ----*- C++ -*-===//
//
// The one table of instruction sets: the --target spelling, the symbol
// suffix of a code path, the ATTNC_ISA_* code in the metadata, LLVM's CPU
// and features, the vector width and register count the tiling is shaped
// for. Everything else (the target attribute, the entry points, the glue,
// the target machine) reads it from here. A leaf: depends on LLVM's
// support library only.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TARGET_ISA_H
#define ATTNC_TARGET_ISA_H

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace attnc {

/// What a library is built for. `Multi` is the AVX-512 + AVX2 pair chosen at
/// load time; every other value is one code path.
enum class Isa { Multi, Host, X86_64, Avx2, Avx512, Avx512Bf16, AmxBf16, CudaSm80, CudaSm90 };

/// The CPU test the C glue runs (CPUID) before a code path may run.
enum class CpuLevel { None, Baseline, Avx2, Avx512, Avx512Bf16, AmxBf16 };

struct IsaInfo {
  Isa isa;
  const char *name;     ///< --target spelling: "x86-avx512"
  const char *suffix;   ///< code path symbol suffix: NAME__avx512__run
  const char *abiCode;  ///< ATTNC_ISA_* in the metadata record
  const char *cpu;      ///< LLVM CPU ("x86-64-v4", "sm_90"); "" = this host's
  const char *features; ///< LLVM features ("+prefer-no-scatter", "+ptx78")
  int vectorWidth;      ///< f32 lanes (1 for CUDA threads; 0 = resolved
                        ///< from the host for `host`, none for `multi`)
  int registers;        ///< vector registers (CUDA: registers per thread)
  bool cuda;            ///< kernels in PTX, launched by the host glue
  CpuLevel level;       ///< CPUID test of the code path (None: no x86
                        ///< code path; `host`: resolved by cpuLevel)
};

/// The row of `isa`.
const IsaInfo &isaInfo(Isa isa);
/// The row named `name` ("x86-avx2", "multi", ...), or null.
const IsaInfo *findIsa(llvm::StringRef name);

/// Parses a --target value: a name from the table, or the list
/// "x86-avx512,x86-avx2" (either order), which is `multi`.
bool parseIsa(const std::string &s, Isa &out);
inline const char *isaName(Isa isa) { return isaInfo(isa).name; }
inline bool isCuda(Isa isa) { return isaInfo(isa).cuda; }
/// Whether the ISA named `name` (an attn.target's isa) is a CUDA one.
inline bool isCudaName(llvm::StringRef name) {
  const IsaInfo *i = findIsa(name);
  return i && i->cuda;
}
/// The CPUID test code path `isa` needs; for `host`, from the features its
/// code is compiled with (all of this machine's).
CpuLevel cpuLevel(Isa isa);
/// Whether code path `name` multiplies bf16 pairs with vdpbf16ps (the
/// AVX512-BF16 and AMX-BF16 paths): a bf16 block there rounds Q, K, P and
/// V for its dot products, which the --check bound accounts for.
bool hasBf16Dots(llvm::StringRef name);
/// ATTNC_EMULATE_AMX=1 in attnc's environment (a test hook): the AMX-BF16
/// code path's tile operations are compiled as AVX512-BF16 vector code with
/// the same tiles, addresses and strides (attnc-lower-amx{emulate}), and its
/// CPU check asks for AVX512-BF16 only, so the path's loops and addressing
/// run, and are checked, on a CPU without AMX.
bool amxEmulated();
/// Every --target spelling, for messages: "multi, host, x86-64, ...".
std::string isaNames();

/// The code paths of a library built for `isa`, preferred first:
/// multi -> {x86-avx512, x86-avx2}; any other -> {isa}.
std::vector<Isa> codePaths(Isa isa);

/// The symbol suffix of the code path named `name` ("" if unknown).
llvm::StringRef variantSuffix(llvm::StringRef name);

/// The stem of the hidden symbols the C glue calls for one code path of
/// kernel `kernel` (EntryPoints.cpp defines them, KernelGlue.cpp declares
/// them): NAME__SUFFIX for forward, NAME__SUFFIX_decode for decode; the
/// symbols are the stem plus _ws, _tasks, _run (_args on CUDA).
std::string glueSymbolBase(llvm::StringRef kernel, llvm::StringRef isa, bool decode);

/// LLVM's CPU and feature string for a code path; `host` queries this
/// machine (features sorted, so the output is deterministic).
void targetCpuAndFeatures(Isa isa, std::string &cpu, std::string &features);
void targetCpuAndFeatures(const std::string &name, std::string &cpu,
                          std::string &features);

/// f32 lanes and vector registers of a code path; `host` is resolved from
/// this machine's features (AVX-512 16/32, AVX2 8/16, else SSE 4/16).
void vectorShape(Isa isa, int &vectorWidth, int &registers);

} // namespace attnc

#endif
