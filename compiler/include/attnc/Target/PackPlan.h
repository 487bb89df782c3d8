//===- PackPlan.h - storage layout -> compute layout ------------*- C++ -*-===//
//
// The weights a user has (GPT-2 Conv1D, PyTorch in_proj, Llama separate)
// and the weights the kernel reads (one [in, out] matrix per forward
// argument, possibly several roles concatenated by attn-fuse-qkv) are
// different layouts. The plan says where each forward argument lives in
// the packed buffer and which storage rectangle fills each of its parts;
// the generated pack entry executes it once, at pack time.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TARGET_PACKPLAN_H
#define ATTNC_TARGET_PACKPLAN_H

#include "attnc/Spec/BlockParams.h"
#include "attnc/Spec/Spec.h"
#include "attnc/runtime/Block.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace attnc {

/// Where role `wq`, `bk`, ... comes from in the storage tensors (Block.h's
/// one layout table).
using RoleSource = attnrt::RoleRect;

/// The storage tensors of a spec, in pack-entry order (same list as the
/// runtime's attnrt::storageTensors).
std::vector<attnrt::TensorShape> storageTensors(const Spec &spec);

/// The storage layout of a spec (attnrt::storageLayout of its block).
attnrt::StorageLayout storageLayout(const Spec &spec);

/// The weights as the user stores them, as the IR carries them: the module
/// attribute `attn.weight_storage` the front end writes,
///
///   [{name = "c_attn.weight", shape = array<i64: 768, 2304>,
///     transposed = false,
///     roles = {wq = array<i64: rowOff, colOff, rows, cols>, ...}}, ...]
///
/// one entry per storage tensor in pack-entry order. Each role's rows x
/// cols are its compute-layout shape ([in, out]; rows = 1 for a bias) and
/// (rowOff, colOff) the storage offsets of RoleRect's formula:
/// role(k, n) = T[rowOff + k][colOff + n], or T[rowOff + n][colOff + k] when
/// the tensor is `transposed` ([out, in]), or T[colOff + n] for a bias.
/// attnc-pack-weights reads it, so the pack plan needs no spec.
using WeightStorage = attnrt::StorageLayout;

/// The attribute for a block (built from its storage layout, attnrt::storageLayout).
mlir::ArrayAttr weightStorageAttr(mlir::MLIRContext *ctx, const attnrt::BlockParams &block);
/// Reads `attn.weight_storage` off a module; emits an error at the module
/// when it is missing or malformed.
mlir::FailureOr<WeightStorage> readWeightStorage(mlir::ModuleOp module);

/// One weight argument of the forward function.
struct PackedArg {
  unsigned argIndex = 0;            ///< position in the forward function
  std::string role;                 ///< its attn.weight: "wq|wk|wv", "wo", ...
  std::vector<int64_t> shape;       ///< logical shape: [K, N] or [N]
  int64_t panel = 0;                ///< >0: packed in panels of this width
  bool pairs = false;               ///< bf16 panels of (k, k+1) pairs
  int64_t floats = 0;               ///< floats it occupies in the buffer
  int64_t offset = 0;               ///< in floats, 16-float aligned
  std::vector<std::string> parts;   ///< roles concatenated along concatDim
  int64_t concatDim = 0;
};

/// One argument of the lowered forward function (memref form).
struct ForwardArg {
  enum Kind { Input, Weight, Output, Workspace } kind = Input;
  std::string input;          ///< Input: "x", "x_kv", "lengths", "kv_lengths",
                              ///< "positions", "k_cache" or "v_cache";
                              ///< Output: "y" or "probs"
  std::vector<int64_t> shape; ///< memref shape, -1 for dynamic (dim 0 = batch,
                              ///< 1 = seq, or kv_seq for "x_kv")
  std::string elem;           ///< memref element type: "f32", "bf16", "f16", "i32", ...
  int weight = -1;            ///< index into PackPlan::weights for Weight
};

/// What the lowered code paths need from their caller (read off the
/// functions attnc-outline-tasks produced).
/// One code path of one entry: its functions, as the module's entry table
/// (`attn.entry_points`) names them.
struct CodePathSymbols {
  std::string isa;        ///< the ABI name of the path's attn.target
  bool decode = false;    ///< the decode entry's (else forward's)
  std::string ws, tasks;  ///< workspace bytes; tasks of a phase
  std::string run;        ///< a range of a phase's tasks (empty on CUDA)
  std::vector<std::string> kernels; ///< CUDA: the kernel of each phase
};

struct LoweredInfo {
  std::vector<std::string> variants; ///< ISA names, preferred first
  std::vector<CodePathSymbols> paths; ///< every entry's code paths
  std::string pack;                   ///< the packing function
  /// The code path of `isa` for forward or decode (null if none).
  const CodePathSymbols *path(const std::string &isa, bool decode) const {
    for (const CodePathSymbols &p : paths)
      if (p.isa == isa && p.decode == decode)
        return &p;
    return nullptr;
  }
  int64_t phases = 0;
  int64_t decodePhases = 0;  ///< phases of the decode entry (0: none)
  int64_t stackBytes = 0;    ///< largest task frame of any variant
  int64_t wsPerRow = 0;      ///< workspace floats per (batch, token) row
  int64_t wsBuffers = 0;     ///< workspace buffers (64-byte aligned each)
  /// CUDA targets: threads per block of each phase's kernel (gpu stage),
  /// for forward and for decode.
  std::vector<int64_t> blockThreads, decodeBlockThreads;
};

struct PackPlan {
  std::vector<PackedArg> weights;
  std::vector<ForwardArg> forwardArgs; ///< filled once attn-to-loops ran
  std::vector<ForwardArg> decodeArgs;  ///< the decode entry's (decode: true)
  std::vector<mlir::Type> weightTypes; ///< memref type of each weights[i]
  /// Elements of the packed buffer, all of the spec's weight_dtype
  /// (offsets and floats above count these elements).
  int64_t packedFloats = 0;
  mlir::Type packedElementType;  ///< f32, bf16 or f16
  int64_t packedElementBytes = 4;
  int64_t packedBytes() const { return packedFloats * packedElementBytes; }
  std::vector<attnrt::TensorShape> storage;
  LoweredInfo lowered;
};

/// Reads the plan off a lowered (memref) function's argument attributes
/// (`attn.weight`, `attn.concat_of`, `attn.concat_dim`, and `attn.panel` /
/// `attn.logical_shape` for arguments attn-to-loops packed). Emits an
/// error at the function on failure.
mlir::FailureOr<PackPlan> computePackPlan(mlir::func::FuncOp forward,
                                          const WeightStorage &storage);

/// Fills plan.forwardArgs (plan.decodeArgs for `decode`) from a lowered
/// (memref) function. Weights are matched to plan.weights by role, with the
/// same packed type: both entries read one packed buffer.
mlir::LogicalResult recordForwardSignature(mlir::func::FuncOp fn,
                                           PackPlan &plan, bool decode = false);

/// Emits `func.func @<name>_pack(storage memrefs..., packed memref)` that
/// executes the plan with scf loops.
mlir::LogicalResult addPackFunction(mlir::ModuleOp module, llvm::StringRef name,
                                    const PackPlan &plan,
                                    const WeightStorage &storage);

/// The lowered functions of the module's entry table (`attn.entry_points`:
/// attnc-outline-tasks, attnc-pack-weights, attnc-map-to-gpu), resolved:
/// the first code path's `ws` function of the forward (and of the decode)
/// entry, which carry the argument attributes every code path shares;
/// every path's `ws` and `run`; the packing function (null before
/// attnc-pack-weights). Emits an error for a table entry that names no
/// function of the module.
struct LoweredEntries {
  mlir::func::FuncOp forward, decode; // the first code path's ws
  llvm::SmallVector<mlir::func::FuncOp> forwardWs, decodeWs; // every path's
  llvm::SmallVector<mlir::func::FuncOp> forwardRuns, decodeRuns;
  mlir::func::FuncOp pack;
  std::vector<CodePathSymbols> paths;
};
mlir::FailureOr<LoweredEntries> readEntryTable(mlir::ModuleOp module);

/// The plan of a module attnc-pack-weights ran on: computed again from the
/// same attributes, checked against the pack function it built, with the
/// forward (and decode) signatures recorded; `entries` is the module's entry
/// table (readEntryTable), which the caller has read. Emits an error on
/// failure.
mlir::FailureOr<PackPlan> readPackPlan(mlir::ModuleOp module, const LoweredEntries &entries);

} // namespace attnc

#endif
