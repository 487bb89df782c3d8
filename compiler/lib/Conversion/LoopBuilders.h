//===- LoopBuilders.h - loop nests shared by the attn lowerings -*- C++ -*-===//
#ifndef ATTNC_CONVERSION_LOOPBUILDERS_H
#define ATTNC_CONVERSION_LOOPBUILDERS_H

#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace attnc {

/// Body of a loop: gets the induction variable and the iter_args, returns
/// the values to yield.
using LoopBody = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::ImplicitLocOpBuilder &, mlir::Value, mlir::ValueRange)>;

/// scf.for lb..ub with iter_args `init`, step 1 or `step`.
mlir::scf::ForOp loop(mlir::ImplicitLocOpBuilder &c, mlir::Value lb,
                      mlir::Value ub, mlir::ValueRange init, LoopBody fn);
mlir::scf::ForOp loop(mlir::ImplicitLocOpBuilder &c, mlir::Value lb,
                      mlir::Value ub, mlir::Value step, mlir::ValueRange init,
                      LoopBody fn);

/// Emits the loops of `op` reading q [B,Hq,Tq,D], k/v [B,Hkv,Tkv,D] (any
/// strided layout) and writing o ([B,Hq,Tq,D] or [B,Tq,Hq,D] per the op's
/// layout); `scratch` holds one score row (>= Tkv elements) and `kT` one
/// head of K transposed in blocks of 16 keys (kT[(j/16*D + d)*16 + j%16] =
/// k[j, d], >= D * roundup(Tkv, 16) elements). Masks none and causal.
void buildSdpaLoops(mlir::ImplicitLocOpBuilder &c, attn::SdpaOp op,
                    mlir::Value q, mlir::Value k, mlir::Value v, mlir::Value o,
                    mlir::Value scratch, mlir::Value kT);

/// y = x·w + bias as a register-blocked GEMM with vector FMAs, for rank-3
/// f32 x [B, T, K] (any strides, unit innermost), static contiguous w
/// [K, N] and contiguous y [B, T, N]. Returns false (emitting nothing) for
/// other shapes; the caller then uses the generic lowering.
bool buildBlockedLinear(mlir::ImplicitLocOpBuilder &c, mlir::Value x,
                        mlir::Value w, mlir::Value bias, mlir::Value y);

} // namespace attnc

#endif
