//===- Target.h - LLVM IR -> object -> shared object + header ---*- C++ -*-===//
#ifndef ATTNC_TARGET_TARGET_H
#define ATTNC_TARGET_TARGET_H

#include "attnc/Pipeline/Pipeline.h"
#include "attnc/Target/PackPlan.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace attnc {

/// A TargetMachine for x86-64 Linux with the ISA's CPU and features.
std::unique_ptr<llvm::TargetMachine> createTargetMachine(Isa isa,
                                                         std::string &error);

/// Adds the C ABI around the lowered functions: NAME_forward, NAME_pack,
/// NAME_workspace_size, NAME_query, attnc_query and the metadata record.
/// The lowered MLIR functions become internal.
bool addEntryPoints(llvm::Module &m, const Spec &spec, const PackPlan &plan,
                    Isa isa, llvm::TargetMachine &tm, std::string &error);

/// Runs LLVM's O3 pipeline for the target.
void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm);

/// Emits an object file (or assembly) into `out`.
bool emitCode(llvm::Module &m, llvm::TargetMachine &tm, bool assembly,
              llvm::SmallVectorImpl<char> &out, std::string &error);

/// Links `object` into a shared object at `outPath` with the system C
/// compiler driver ($ATTNC_CC or cc); writes to a temporary file in the same
/// directory and renames it, so no half-written file is ever left.
bool linkSharedObject(llvm::ArrayRef<char> object, const std::string &outPath,
                      std::string &error);

/// The C99 header for the kernel (self-contained: embeds abi.h).
std::string emitHeader(const Spec &spec, const PackPlan &plan, Isa isa);

/// Writes `text` to `path` atomically (temporary file + rename).
bool writeFileAtomic(const std::string &path, llvm::StringRef text,
                     std::string &error);

} // namespace attnc

#endif
