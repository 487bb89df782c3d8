//===- AttnBase.td - attn dialect definition and attributes -*- tablegen -*-===//
//
// The attn dialect: transformer attention blocks at the level a model author
// thinks in (projections, heads, scaled-dot-product attention), plus the
// strided view op that the graph rewrites turn head splits into.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_BASE_TD
#define ATTN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "attnc/Dialect/Attn/IR/AttnTargetInterface.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let summary = "Transformer attention blocks: projections, heads, sdpa";
  let description = [{
    Ops on ranked tensors that describe one attention block. The front end
    emits the textbook ("conceptual") form; `attn-fuse-qkv` and
    `attn-heads-as-views` rewrite it into one fused projection and strided
    views; `attn-to-loops` lowers it onto buffers.
  }];
  let cppNamespace = "::attnc::attn";
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 0;
  // attn.input / attn.weight / attn.concat_of on function arguments: checks
  // their values and what attn-to-loops needs of the function (AttnDialect.cpp).
  let hasRegionArgAttrVerify = 1;
  // Every other attn.* attribute, on the module or a function: its type
  // (below) and value are checked by verifyOperationAttribute.
  let hasOperationAttrVerify = 1;

  // The attributes the passes leave on operations for later ones and for
  // the back end (the C glue, the header, the LLVM entry points). Declared
  // here, with their types, so no pass or back end spells a name or a type
  // of its own: each has an `AttnDialect::<Name>AttrHelper` (getNameStr()
  // for argument attributes). The argument attributes' values are listed
  // at verifyArgAttr (AttnDialect.cpp).
  let discardableAttrs = (ins
    // On the module.
    "::mlir::DictionaryAttr":$block,          // the block description (KernelDesc.cpp)
    "::mlir::StringAttr":$spec_name,          // the kernel's symbol prefix
    "::mlir::ArrayAttr":$weight_storage,      // the checkpoint tensors (PackPlan.cpp)
    "::attnc::attn::EntryPointsAttr":$entry_points, // the lowered entry points
    // On functions.
    "::attnc::attn::TargetAttrInterface":$target, // the code path's target (attnc-set-target)
    "::mlir::StringAttr":$variant_of,         // the entry a code path was cloned from
    "::mlir::StringAttr":$entry,              // "decode" on the decode entry
    "::mlir::IntegerAttr":$phases,            // task phases of a run/tasks function
    "::mlir::IntegerAttr":$stack_bytes,       // a task's scratch frame
    "::mlir::IntegerAttr":$workspace_per_row, // floats of workspace per token
    "::mlir::IntegerAttr":$workspace_buffers, // buffers of that workspace
    "::mlir::DenseI64ArrayAttr":$block_threads, // CUDA: threads of each phase's kernel
    "::mlir::UnitAttr":$pack,                 // the weight-packing function
    // On function arguments (verifyArgAttr).
    "::mlir::StringAttr":$input,
    "::mlir::StringAttr":$output,
    "::mlir::StringAttr":$weight,
    "::mlir::UnitAttr":$workspace,
    "::mlir::ArrayAttr":$concat_of,
    "::mlir::IntegerAttr":$concat_dim,
    "::mlir::IntegerAttr":$panel,
    "::mlir::UnitAttr":$pairs,
    "::mlir::DenseI64ArrayAttr":$logical_shape
  );
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

/// The additive mask of attn.sdpa (and attn.probs). Every kind lowers on
/// every target: the kernels take each query block's key range from it
/// (causal diagonal, window or chunk, padding lengths) and mask only boundary
/// blocks element by element.
def Attn_MaskKind : I32EnumAttr<"MaskKind", "additive attention mask", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"causal", 1>,
    I32EnumAttrCase<"padding", 2>,
    I32EnumAttrCase<"causal_padding", 3>,
    I32EnumAttrCase<"sliding_window", 4>,
    I32EnumAttrCase<"chunked", 5>,
    I32EnumAttrCase<"sliding_window_padding", 6>,
    I32EnumAttrCase<"chunked_padding", 7>,
    I32EnumAttrCase<"bidirectional_window", 8>,
    I32EnumAttrCase<"bidirectional_window_padding", 9>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnc::attn";
}
def Attn_MaskAttr : EnumAttr<Attn_Dialect, Attn_MaskKind, "mask">;

/// How a causal mask aligns when Tq != Tkv.
def Attn_CausalAlign : I32EnumAttr<"CausalAlign", "causal alignment", [
    I32EnumAttrCase<"bottom_right", 0>,
    I32EnumAttrCase<"top_left", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnc::attn";
}
def Attn_CausalAlignAttr : EnumAttr<Attn_Dialect, Attn_CausalAlign, "align">;

/// Logical layout of attn.sdpa's result: [B, H, T, D] (textbook) or
/// [B, T, H, D] (heads last: merging heads is then a plain reshape).
def Attn_HeadLayout : I32EnumAttr<"HeadLayout", "layout of a per-head tensor", [
    I32EnumAttrCase<"bhtd", 0>,
    I32EnumAttrCase<"bthd", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnc::attn";
}
def Attn_HeadLayoutAttr : EnumAttr<Attn_Dialect, Attn_HeadLayout, "layout">;

//===----------------------------------------------------------------------===//
// Target description
//===----------------------------------------------------------------------===//

/// A CPU code path (x86-avx512, x86-avx2, x86-64, host).
def Attn_CpuTargetAttr : AttrDef<Attn_Dialect, "CpuTarget", [Attn_TargetAttrInterface]> {
  let mnemonic = "cpu_target";
  let summary = "A CPU code path's target: ISA, registers, GEMM and attention tiles, caches";
  let description = [{
    Resolved once, before lowering (`attnc-set-target`), and attached to
    every function it applies to as `attn.target`; the lowering reads its
    tile sizes from here, so the IR of an AVX2 build differs visibly from an
    AVX-512 one. `isa` is the ABI name (x86-avx512, x86-avx2, x86-64,
    host); `cpu` and `features` go to LLVM for the function.

    GEMM micro-kernel: `gemm_mr` rows x `gemm_nr` columns of accumulators
    (`gemm_nr` a multiple of `vector_width` that divides `panel`), over
    weights packed in panels of `panel` columns; `gemm_kc` rows of a panel
    per cache block; `gemm_mc` rows per task.
    Attention: `attn_mq` queries per task (a multiple of `vector_width`),
    `attn_kr` keys per score micro-kernel, `attn_nk` keys per block of the
    online softmax. `l1_bytes`, `l2_bytes`: the caches the blocks are sized
    for.

    The verifier asks for a non-empty `isa`, every size >= 1, the
    divisibility above and the sizes the kernels unroll or keep on a task's
    stack (vector_width <= 64, panel <= 1024, gemm_mr <= 32, gemm_kc <=
    4096, attn_kr <= 32, attn_mq <= 256, attn_nk <= 1024); that `isa` is a
    CPU code path of the ISA table is attn-to-loops' check.
  }];
  let genVerifyDecl = 1;
  let parameters = (ins
    StringRefParameter<>:$isa,
    StringRefParameter<>:$cpu,
    StringRefParameter<>:$features,
    "int64_t":$vector_width,
    "int64_t":$registers,
    "int64_t":$panel,
    "int64_t":$gemm_mr,
    "int64_t":$gemm_nr,
    "int64_t":$gemm_kc,
    "int64_t":$gemm_mc,
    "int64_t":$attn_mq,
    "int64_t":$attn_kr,
    "int64_t":$attn_nk,
    "int64_t":$l1_bytes,
    "int64_t":$l2_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
}

/// A CUDA code path (cuda-sm80, cuda-sm90).
def Attn_CudaTargetAttr : AttrDef<Attn_Dialect, "CudaTarget", [Attn_TargetAttrInterface]> {
  let mnemonic = "cuda_target";
  let summary = "A CUDA code path's target: chip, threads per block, tiles, shared memory";
  let description = [{
    A CUDA block is the unit of a task. `cpu` is the chip (sm_90) and
    `features` the PTX version for LLVM's NVPTX back end; `panel` the
    weights' panel width (the CPU paths' too: one NAME_pack serves all).

    GEMM: a block computes a `gemm_tile_m` x `gemm_tile_n` tile of y with
    `gemm_threads` threads; gemm_tile_n / gemm_thread_n threads share a
    row band, each computing `gemm_thread_n` adjacent columns (a warp's
    stores are contiguous) of the band's rows, so the tile must divide
    among the threads. K is staged through shared memory `gemm_tile_k`
    rows at a time. Attention: `attn_threads` queries
    per block, one thread each, keys staged `attn_keys` rows at a time.
    `block_threads`: the threads of the other kernels (copies, masks,
    rotary, norms). `shared_bytes`: the static shared memory a block may
    use (at most 48 KiB, and at least the GEMM's staged tiles);
    `l2_bytes`: the device's L2.

    The verifier asks for a non-empty `isa`, every size >= 1, at most 1024
    threads per block, a GEMM tile its threads divide and shared memory
    that holds the staged GEMM tiles.
  }];
  let genVerifyDecl = 1;
  let parameters = (ins
    StringRefParameter<>:$isa,
    StringRefParameter<>:$cpu,
    StringRefParameter<>:$features,
    "int64_t":$panel,
    "int64_t":$gemm_tile_m,
    "int64_t":$gemm_tile_n,
    "int64_t":$gemm_tile_k,
    "int64_t":$gemm_threads,
    "int64_t":$gemm_thread_n,
    "int64_t":$attn_threads,
    "int64_t":$attn_keys,
    "int64_t":$block_threads,
    "int64_t":$shared_bytes,
    "int64_t":$l2_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// Whether the GEMM tile divides among its threads (each
    /// gemm_thread_n adjacent columns) and its staged tiles load evenly.
    bool gemmTileFits() const;
  }];
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

def Attn_CodePathAttr : AttrDef<Attn_Dialect, "CodePath"> {
  let mnemonic = "code_path";
  let summary = "The lowered functions of one entry on one code path";
  let description = [{
    attnc-outline-tasks splits a lowered entry (`forward` or `decode`) of
    one code path (`isa`, the ABI name of its attn.target) into the
    functions the C entry points call: `ws` (workspace bytes), `tasks`
    (tasks of a phase) and `run` (a range of a phase's tasks). On CUDA,
    attnc-map-to-gpu replaces `run` by `kernels`, one gpu.func per phase,
    in phase order. The back end finds these functions through this table,
    never by their names.
  }];
  let genVerifyDecl = 1;
  let parameters = (ins
    StringRefParameter<>:$entry,
    StringRefParameter<>:$isa,
    "::mlir::FlatSymbolRefAttr":$ws,
    "::mlir::FlatSymbolRefAttr":$tasks,
    OptionalParameter<"::mlir::FlatSymbolRefAttr">:$run,
    OptionalParameter<"::mlir::ArrayAttr">:$kernels);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    bool isDecode() const { return getEntry() == "decode"; }
  }];
}

def Attn_EntryPointsAttr : AttrDef<Attn_Dialect, "EntryPoints"> {
  let mnemonic = "entry_points";
  let summary = "The table of a kernel's lowered entry points";
  let description = [{
    `attn.entry_points` on the module: the weight-packing function
    (attnc-pack-weights) and every code path of every entry
    (attnc-outline-tasks, attnc-map-to-gpu). The glue, the header and the
    LLVM entry points are built from this table.
  }];
  let parameters = (ins
    OptionalParameter<"::mlir::FlatSymbolRefAttr">:$pack,
    OptionalParameter<"::mlir::ArrayAttr">:$paths);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The code paths (each element of `paths` is a #attn.code_path).
    ::llvm::SmallVector<CodePathAttr> getCodePaths() const;
    static EntryPointsAttr get(::mlir::MLIRContext *ctx, ::mlir::FlatSymbolRefAttr pack,
                               ::llvm::ArrayRef<CodePathAttr> paths);
    /// The module's table (empty if it has none).
    static EntryPointsAttr of(::mlir::ModuleOp module);
    /// `module`'s table with `path` added (or, if a path of the same entry
    /// and isa is there, replaced).
    static void addPath(::mlir::ModuleOp module, CodePathAttr path);
    /// `module`'s table with `pack` as the packing function.
    static void setPack(::mlir::ModuleOp module, ::mlir::FlatSymbolRefAttr pack);
  }];
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_BASE_TD
