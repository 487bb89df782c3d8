//===- CudaCodePaths.h - Target/Cuda's private declarations -----*- C++ -*-===//
#ifndef ATTNC_TARGET_CUDA_CUDACODEPATHS_H
#define ATTNC_TARGET_CUDA_CUDACODEPATHS_H

#include "attnc/Target/CodePaths.h"

namespace attnc {

/// Translates the (LLVM/NVVM dialect) kernels of `gm` to LLVM IR, optimizes
/// them for the ISA table's sm_80 / sm_90 and writes PTX with LLVM's NVPTX
/// back end (CudaCodePaths' device code).
bool emitPtx(mlir::gpu::GPUModuleOp gm, Isa isa, std::string &ptx, std::string &error);

} // namespace attnc

#endif
