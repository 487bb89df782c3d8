//===- Target.h - LLVM IR -> object -> shared object + header ---*- C++ -*-===//
#ifndef ATTNC_TARGET_TARGET_H
#define ATTNC_TARGET_TARGET_H

#include "attnc/Target/KernelDesc.h"
#include "attnc/Target/Isa.h"
#include "attnc/Target/PackPlan.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <optional>
#include <string>

namespace attnc {

/// A TargetMachine for x86-64 Linux with the ISA's CPU and features.
std::unique_ptr<llvm::TargetMachine> createTargetMachine(Isa isa,
                                                         std::string &error);

/// Adds the C-callable wrappers of each code path (NAME__V_ws/_tasks/_run)
/// and NAME__pack_impl around the lowered functions, which become internal,
/// and sets each code path's target CPU and features on its functions.
bool addEntryPoints(llvm::Module &m, const KernelDesc &desc, const PackPlan &plan,
                    llvm::TargetMachine &tm, std::string &error);

/// The kernel's C glue (KernelGlue.c with the kernel's constants, its code
/// path table and its metadata record): the ABI entry points NAME_query,
/// NAME_pack, NAME_workspace_size, NAME_forward (and attnc_query when
/// ATTNC_SHARED is defined). `kernelsIsa`: the target whose kernels the
/// object runs, when not `isa` (a CUDA target's loops emulated on the host
/// keep the CUDA kernels' limits, such as one decode token per call).
std::string emitKernelGlue(const KernelDesc &desc, const PackPlan &plan, Isa isa,
                           const std::string &ptx = "",
                           std::optional<Isa> kernelsIsa = std::nullopt);

/// The kernel's ATTNC_FEATURE_* bits as a C expression, e.g.
/// "(0u | ATTNC_FEATURE_LENGTHS | ATTNC_FEATURE_CROSS)": the glue's metadata
/// and the header's NAME_FEATURES both print this one.
std::string featuresExpr(const KernelDesc &desc);
/// The same plus ATTNC_FEATURE_CUDA for a CUDA target.
std::string featuresExpr(const KernelDesc &desc, Isa isa);

/// Runs LLVM's O3 pipeline for the target.
void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm);

/// Emits an object file (or assembly) into `out`.
bool emitCode(llvm::Module &m, llvm::TargetMachine &tm, bool assembly,
              llvm::SmallVectorImpl<char> &out, std::string &error);

/// Compiles `glue` (C) and links it with `object` into a shared object
/// (with `soname`: attnc uses the output's file name, as -l expects) or,
/// with `archive`, a static archive, with the system C compiler driver ($ATTNC_CC or cc) and ar
/// ($ATTNC_AR or ar); writes to a temporary file in the same directory and
/// renames it, so no half-written file is ever left.
bool linkSharedObject(llvm::ArrayRef<char> object, const std::string &glue,
                      const std::string &soname, bool archive,
                      const std::string &outPath, std::string &error);

/// The C99 header for the kernel (self-contained: embeds abi.h).
std::string emitHeader(const KernelDesc &desc, const PackPlan &plan, Isa isa);

} // namespace attnc

#endif
