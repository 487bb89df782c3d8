//===- Passes.h - attn -> upstream conversions ------------------*- C++ -*-===//
#ifndef ATTNC_CONVERSION_PASSES_H
#define ATTNC_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

#include "attnc/Dialect/Attn/IR/AttnOps.h"
#include "attnc/Target/Isa.h"

namespace attnc {

/// The target description of a code path's ISA name (x86-avx512, x86-avx2,
/// x86-64, host, cuda-sm80, cuda-sm90); null for an unknown name or multi.
/// `host` lists in its features only those of `hostFeatures` (a subset of
/// "+avx512bf16,+amx-tile,+amx-bf16") that this CPU has: the kernels that
/// choose on a feature (bf16 dot products, AMX tiles) use it where asked.
attn::TargetAttrInterface targetFor(mlir::MLIRContext *ctx, llvm::StringRef isa,
                                    llvm::StringRef hostFeatures = "");

/// Attaches attn::TiledOpInterface to the computing attn ops (the kernels
/// of TiledOps.cpp); attnc-plan-memory adds it to its context itself.
void registerTiledOpModels(mlir::DialectRegistry &registry);

/// Attaches attn::TargetKernelsInterface to the target attributes: the x86
/// kernels to #attn.cpu_target (Conversion/Cpu), the CUDA kernels to
/// #attn.cuda_target (Conversion/Cuda). attnc-plan-memory lowers a function
/// only for a target whose kernels are registered.
void registerCpuKernels(mlir::DialectRegistry &registry);
void registerCudaKernels(mlir::DialectRegistry &registry);

/// The passes of attnc-map-to-gpu, in order, and the pipeline registered
/// under that name (registerGpuPipeline: for attnc-opt and textual
/// pipelines).
inline constexpr const char kMapToGpuPipeline[] =
    "attnc-gpu-outline,attnc-gpu-map-threads,attnc-gpu-private-buffers,"
    "attnc-gpu-fast-math";
void registerGpuPipeline();

/// The passes of attn-to-loops, in order: the weight-encoding rewrite, then
/// memory planning and dispatch to the target's kernels; the pipeline
/// registered under that name (registerAttnToLoopsPipeline).
inline constexpr const char kAttnToLoopsPipeline[] =
    "attnc-encode-weights,attnc-plan-memory";
void registerAttnToLoopsPipeline();

/// Registers `passes` (a textual pass list) as the pipeline `name`, for
/// attnc-opt and textual pipelines: a name that stays valid after a pass
/// is split.
void registerPassList(const char *name, const char *summary, const char *passes);

/// Whether a weight argument can live in a packed panel layout: a static
/// float tensor of rank 2 used only as attn.linear weights, or of rank 1
/// used only as their biases (attnc-encode-weights, attnc-plan-memory).
bool packableWeight(mlir::BlockArgument arg);

#define GEN_PASS_DECL
#include "attnc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attnc/Conversion/Passes.h.inc"

} // namespace attnc

#endif
