//===- Registration.h - dialects and passes attnc uses ----------*- C++ -*-===//
#ifndef ATTNC_SUPPORT_REGISTRATION_H
#define ATTNC_SUPPORT_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace attnc {
/// Adds every dialect (and translation interface) the attnc pipeline uses.
void registerAllAttncDialects(mlir::DialectRegistry &registry);
/// The kernels of every kind of target (registerCpuKernels,
/// registerCudaKernels); part of registerAllAttncDialects.
void registerTargetKernels(mlir::DialectRegistry &registry);
/// Registers the attn passes, attnc's conversion passes and the upstream
/// passes the pipeline names, so textual pipelines and attnc-opt find them.
void registerAllAttncPasses();
} // namespace attnc

#endif
