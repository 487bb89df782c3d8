//===- EntryPointBuilder.h - LLVM IR wrappers of a code path ----*- C++ -*-===//
//
// The builder of the C-callable wrappers around the lowered functions
// (Target/Common/EntryPoints.cpp). It loads a call record's fields
// (abi_call.def) as the lowered functions' expanded memref descriptors; a
// kind of code path (CodePaths.h) adds the wrapper that runs its phases with
// it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TARGET_ENTRYPOINTBUILDER_H
#define ATTNC_TARGET_ENTRYPOINTBUILDER_H

#include "attnc/Target/KernelDesc.h"
#include "attnc/Target/PackPlan.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <string>

namespace attnc {

class EntryPointBuilder {
public:
  EntryPointBuilder(llvm::Module &m, const KernelDesc &desc, const PackPlan &plan);

  /// Defines `name` (hidden, nounwind) and moves the builder to its entry.
  llvm::Function *define(const std::string &name, llvm::Type *ret,
                         llvm::ArrayRef<llvm::Type *> params);
  /// The lowered functions' leading arguments (expanded memref descriptors
  /// of every run-time input, weight, output and the workspace), loaded
  /// from the attnc_call record at `call`; sets `error` if the plan names a
  /// run-time argument the record lacks.
  llvm::SmallVector<llvm::Value *> forwardArgs(llvm::Value *call, bool decode,
                                               std::string &error);
  /// Appends an expanded memref descriptor: alloc, aligned, offset, sizes,
  /// row-major strides.
  void pushMemref(llvm::SmallVectorImpl<llvm::Value *> &args, llvm::Value *p,
                  llvm::ArrayRef<llvm::Value *> dims);
  llvm::Constant *c64(int64_t v) { return llvm::ConstantInt::get(i64, v); }

  llvm::Module &m;
  const KernelDesc &desc;
  const PackPlan &plan;
  llvm::LLVMContext &ctx;
  llvm::IRBuilder<> b;
  llvm::Type *i64, *ptr, *packedTy; ///< packedTy: the weights' element type
  llvm::StructType *callTy;         ///< struct attnc_call
};

} // namespace attnc

#endif
