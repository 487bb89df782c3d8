//===- CodePaths.h - what a CPU or CUDA code path adds to a kernel -*- C++ -*-===//
//
// Target/Common writes what every code path of a kernel library has: the
// _ws and _tasks wrappers, the pack entry, the C glue's constants and
// metadata, the header. What differs between a CPU code path (phases run on
// the thread pool) and a CUDA one (phases are PTX kernels the glue launches)
// is a CodePathKind: Target/Cpu and Target/Cuda implement one each and
// register it (registerCpuCodePaths, registerCudaCodePaths: both are part of
// attnc::registerAllAttncDialects), as Conversion/Cpu and Conversion/Cuda
// attach their kernels to the target attributes. Common never includes
// either.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TARGET_CODEPATHS_H
#define ATTNC_TARGET_CODEPATHS_H

#include "attnc/Target/Isa.h"
#include "attnc/Target/KernelDesc.h"
#include "attnc/Target/PackPlan.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace llvm {
class Function;
}

namespace attnc {

class EntryPointBuilder;

class CodePathKind {
public:
  virtual ~CodePathKind();
  /// The metadata record's target_triple (the code the phases run as).
  virtual const char *triple() const = 0;
  /// New tokens one decode call takes at most (0: any number).
  virtual int64_t decodeMaxSeq() const = 0;
  /// LLVM IR: the wrapper that runs code path `path` (named `wrap` + a
  /// suffix), after EntryPoints added `wrap`_ws and `wrap`_tasks; `run` is
  /// set to a lowered function that belongs to the path, if any (it gets the
  /// path's CPU and features).
  virtual bool addRunWrapper(EntryPointBuilder &b, const CodePathSymbols &path,
                             const std::string &wrap, bool decode, llvm::Function *&run,
                             std::string &error) const = 0;
  /// C glue: the code path table `k_variants` (into `table`, which the glue
  /// places after its helpers) and what it refers to (into `os`, before
  /// the glue). `deviceCode` is what emitDeviceCode made.
  virtual void emitGlueTable(llvm::raw_ostream &os, llvm::raw_ostream &table,
                             const KernelDesc &desc, const PackPlan &plan,
                             const std::string &deviceCode) const = 0;
  /// The device code of the module's kernels (CUDA: PTX from LLVM's NVPTX
  /// back end); a CPU code path has none and fails.
  virtual bool emitDeviceCode(mlir::gpu::GPUModuleOp gm, Isa isa, std::string &out,
                              std::string &error) const = 0;
};

/// The kind of `isa`'s code paths (the ISA table's `cuda` flag); a kind
/// that nobody registered is a fatal error naming the registration.
const CodePathKind &codePathKind(Isa isa);
void registerCodePathKind(bool cuda, const CodePathKind &kind);
void registerCpuCodePaths();  ///< Target/Cpu
void registerCudaCodePaths(); ///< Target/Cuda

/// For the glue tables: `s` as a C string literal, and the ATTNC_ISA_*
/// macro of an ISA name.
std::string cString(const std::string &s);
const char *isaMacro(const std::string &isa);

} // namespace attnc

#endif
