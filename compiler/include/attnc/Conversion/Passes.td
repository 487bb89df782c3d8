//===- Passes.td - attn -> upstream conversions -----------*- tablegen -*-===//
#ifndef ATTNC_CONVERSION_PASSES_TD
#define ATTNC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnSetTargetPass : Pass<"attnc-set-target", "mlir::ModuleOp"> {
  let summary = "Resolve the target description and attach it to each attn function";
  let description = [{
    Chooses the instruction set(s) and the tile sizes the lowering uses and
    records them as `attn.target = #attn.cpu_target<...>` (a CUDA isa:
    `#attn.cuda_target<...>`) on every function
    that holds attn ops. With `isa=multi` (attnc's default) each such
    function @f is cloned into @f__avx512 and @f__avx2, one per code path
    of the library; otherwise it is renamed to @f__<isa>. From here on the
    IR of different targets differs.
  }];
  let options = [
    Option<"isa", "isa", "std::string", /*default=*/"\"multi\"",
           "multi | x86-amx-bf16 | x86-avx512-bf16 | x86-avx512 | x86-avx2 | x86-64 | host | cuda-sm80 | cuda-sm90">
  ];
}

def AttnOutlineTasksPass : Pass<"attnc-outline-tasks", "mlir::ModuleOp"> {
  let summary = "Split each lowered function into workspace, task-count and task functions";
  let description = [{
    attnc-plan-memory leaves each phase of the computation (a GEMM, the
    attention, a copy) as one top-level `scf.forall` over independent
    tasks. This pass turns a lowered @f into the three functions the C
    entry points call, so tasks can run on any thread through the
    parallel-for hook:

      @f__ws(args) -> index                      workspace bytes
      @f__tasks(args, %phase) -> index           tasks of that phase
      @f__run(args, %phase, %lo, %hi)            tasks [lo, hi) of a phase

    Each clone keeps only the prologue it needs (sizes, views); per-task
    scratch (`memref.alloca` in a forall body) moves to the function entry,
    so a task range reuses one stack frame. `attn.phases` on @f__run says
    how many phases there are, `attn.stack_bytes` how much stack a task
    needs. The three are recorded in the module's entry table,
    `attn.entry_points = #attn.entry_points<paths = [#attn.code_path<entry
    = "forward" | "decode", isa = ..., ws = @f__ws, tasks = @f__tasks,
    run = @f__run>, ...]>` (the entry from `attn.entry`, the isa from
    attn.target): later passes and the back end find the functions there.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

// attn-to-loops is the two passes below in order (a pipeline registered
// under that name: attnc::registerAttnToLoopsPipeline).

def AttnEncodeWeightsPass : Pass<"attnc-encode-weights", "mlir::ModuleOp"> {
  let summary = "Choose the packed layout of each weight argument its kernels read";
  let description = [{
    The weight-encoding rewrite. In every function with an `attn.target`,
    a weight argument (`attn.weight`) with a static float type whose every
    use is the weight (rank 2) or the bias (rank 1) of an `attn.linear`
    gets the packed panel layout of the function's target, recorded on the
    argument:

    ```mlir
    %w: tensor<768x2304xf32> {attn.weight = "wq|wk|wv"}
    // becomes
    %w: tensor<768x2304xf32> {attn.weight = "wq|wk|wv", attn.panel = 32 : index}
    ```

    `attn.panel` is the target's panel width: the kernel reads panels of
    that many columns, element (k, n) at (n / panel) * K * panel +
    k * panel + n % panel. A rank-2 bf16 weight also gets `attn.pairs`:
    rows k and k+1 side by side in each panel (`[P][ceil(K/2)][panel][2]`,
    the operand order of `vdpbf16ps`; a zero row past an odd K). Any other
    weight argument stays in the user's row-major layout. The argument's
    type does not change here: attnc-plan-memory gives it the packed
    memref type and `attnc-pack-weights` writes the layout.
  }];
}

def AttnPlanMemoryPass : Pass<"attnc-plan-memory", "mlir::ModuleOp"> {
  let summary = "Lower attn functions on tensors to buffers and the target's kernels as phases";
  let description = [{
    Memory planning and dispatch. Rewrites every function whose body is
    attn ops on tensors into a destination-passing function on memrefs:

    ```mlir
    func.func @f(%x: tensor<?x?x768xf32>, %w...: tensor<...>) -> tensor<?x?x768xf32>
    // becomes
    func.func @f(%x: memref<?x?x768xf32>, %w...: memref<...>,
                 %y: memref<?x?x768xf32> {attn.output = "y"},
                 %ws: memref<?xi8> {attn.workspace}) -> index
    ```
    The result is the workspace size in bytes the call needs; every
    intermediate buffer is a 64-byte aligned `memref.view` into `%ws` (no
    allocation), linear in T. `attn.view` becomes a
    `memref.reinterpret_cast` of its source's buffer (no copy); slices, head
    splits/merges and concats that are still present are materialized with
    copies. A weight argument with `attn.panel` (attnc-encode-weights) takes
    the packed memref type `[P, K, panel]` (bf16 with `attn.pairs`:
    `[P, ceil(K/2), 2 * panel]`; a bias `[P * panel]`) and records its
    shape before packing in `attn.logical_shape`; an `attn.panel` that is
    not the target's, or on an argument that is not only attn.linear
    weights or biases, is refused.

    Each computing op becomes one top-level `scf.forall` of independent
    tasks (a phase), built through `attn::TiledOpInterface` from the
    function's `attn.target`: register-blocked GEMMs over packed panels,
    flash attention with an online softmax over key blocks whose range
    comes from the mask (no T x T matrix), a decode kernel for one query
    row, and on CUDA targets the GPU-shaped kernels (thread regions) that
    `attnc-map-to-gpu` outlines. Ops without a tiled kernel become one-task
    phases of `linalg.generic` (CPU targets only). docs/design.md, section
    2, has the kernels and the equation each keeps.
  }];
  let dependentDialects = ["mlir::x86vector::X86VectorDialect", "mlir::amx::AMXDialect", "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

def AttnPackWeightsPass : Pass<"attnc-pack-weights", "mlir::ModuleOp"> {
  let summary = "Build the pack plan and @NAME_pack, which writes the user's weights into the kernels' packed layout";
  let description = [{
    Reads the module's `attn.weight_storage` (how the user stores the
    weights: tensor names, shapes, each role's rectangle) and the lowered
    forward function's weight arguments (`attn.weight`, `attn.concat_of`,
    `attn.panel`, `attn.logical_shape`), gives each weight argument a
    16-float aligned offset in one packed buffer, and emits
    `func.func @NAME_pack(storage memrefs..., memref<Pxf32>) attributes
    {attn.pack}` whose loops copy every role into its place (panels of
    `attn.panel` columns: element (k, n) at (n / panel) * K * panel +
    k * panel + n % panel), and records it as the entry table's `pack`.
    Runs after attnc-outline-tasks, on the code paths of the entry table;
    the decode entry's weights must match the forward's by role and
    packed type.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect", "mlir::func::FuncDialect"];
}

// attnc-map-to-gpu is the four passes below in order (a pipeline registered
// under that name: attnc::registerGpuPipeline).

def AttnGpuOutlinePass : Pass<"attnc-gpu-outline", "mlir::ModuleOp"> {
  let summary = "Outline each phase of a CUDA code path as a gpu.func kernel";
  let description = [{
    Runs after attnc-outline-tasks on the entry table's code paths whose
    isa is a CUDA one. For each phase of `@f__run(args, %phase, %lo, %hi)` it
    creates `gpu.func @f__k<phase>(args) kernel` in `gpu.module
    @<name>_kernels`: the task index is `gpu.block_id x`, the prologue ops
    the task uses are cloned in, workgroup buffers become the kernel's
    workgroup attributions and `[N, ...]` private buffers its private
    attributions (still indexed by thread: attnc-gpu-private-buffers), and
    the thread regions stay `scf.forall` loops mapped to `#gpu.thread<x>`
    (attnc-gpu-map-threads). It checks that the kernel can run on a GPU (no
    write outside a thread region, only static thread regions, at most 1024
    threads, no linalg or vector ops, only constant globals) and sets
    `known_block_size` to its widest region. `@f__run` is erased (the host
    launches the kernels); `@f__tasks` (the grid size of each phase) and
    `@f__ws` stay host functions and get `attn.phases` and
    `attn.block_threads` (the block size of each kernel). In the entry
    table the path's `run` becomes `kernels = [@<name>_kernels::@f__k0,
    ...]`, in phase order.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def AttnGpuMapThreadsPass : Pass<"attnc-gpu-map-threads", "mlir::ModuleOp"> {
  let summary = "Thread regions of the outlined kernels as guarded code and barriers";
  let description = [{
    In each kernel attnc-gpu-outline made, `%tid = gpu.thread_id x` (after
    the block id) and every thread region (`scf.forall` mapped to
    `#gpu.thread<x>`) becomes its body for thread %tid, guarded by
    `%tid < N` when the region has fewer threads than the block
    (`known_block_size`), followed by `gpu.barrier`: a region completes
    for every thread before the next starts, which is what makes the GPU
    program mean what the sequential one does.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::gpu::GPUDialect",
                           "mlir::scf::SCFDialect"];
}

def AttnGpuPrivateBuffersPass : Pass<"attnc-gpu-private-buffers", "mlir::ModuleOp"> {
  let summary = "Per-thread [threads, ...] private attributions lose their thread index";
  let description = [{
    After attnc-gpu-map-threads: each private attribution `[N, ...]` of a
    kernel becomes `[...]` (each thread has its own), and every load and
    store of it drops its first index, which must be the thread id
    (refused otherwise: another thread's row is not this thread's memory).
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect"];
}

def AttnGpuFastMathPass : Pass<"attnc-gpu-fast-math", "mlir::ModuleOp"> {
  let summary = "The kernels' f32 exp, sqrt and |x| as the hardware's instructions";
  let description = [{
    In the outlined kernels: f32 `math.exp` of an argument clamped to
    >= -87 becomes the hardware's `ex2.approx` (`llvm.nvvm.ex2.approx.ftz.f`
    of x * log2(e), as CUDA's __expf; an unclamped exp is refused, since
    the ftz form would flush denormals), `math.sqrt` `llvm.nvvm.sqrt.rn.f`
    (IEEE, as sqrtf) and `math.absf` `llvm.fabs.f32`: never libdevice
    calls, so the PTX has no external references.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::LLVM::LLVMDialect"];
}

def AttnStripGpuSpacesPass : Pass<"attnc-gpu-on-host", "mlir::ModuleOp"> {
  let summary = "Make a CUDA code path's loops a host code path (for checking)";
  let description = [{
    For `attnc-dump --check --target cuda-*`: drops the GPU memory spaces
    of the workgroup/private buffers and the thread/block mappings, and
    renames the CUDA code path @f__cuda_smXY__* to the host's @f__host__*
    with the host's #attn.cpu_target (and the entry table with them), so the
    CPU back end compiles the tiled
    GPU loops as they are and they run sequentially (which is their
    meaning: thread regions one after another).
  }];
}

def AttnExpandBf16Pass : Pass<"attnc-expand-bf16", "mlir::ModuleOp"> {
  let summary = "Expand bf16 arith.truncf/extf into integer arithmetic";
  let description = [{
    Rewrites the f32 <-> bf16 conversions of bf16 storage (arith.truncf
    rounds to nearest even) with upstream's bf16 expansion patterns, and
    nothing else: every code path rounds the same way, and no conversion
    becomes a call to __truncsfbf2 (which a kernel library, linked against
    libc only, cannot resolve).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def AttnLowerAmxPass : Pass<"attnc-lower-amx", "mlir::ModuleOp"> {
  let summary = "Lower the AMX-BF16 GEMM tiles to LLVM intrinsics (or emulate them)";
  let description = [{
    The AMX-BF16 code path's GEMM kernels carry `!amx.tile` values through
    their K loops (scf.for iter_args), which upstream's conversions cannot
    type: convert-vector-to-llvm lowers the tile operations but leaves the
    loop's branch arguments unconverted. This pass lowers the tile
    operations to the `llvm.x86.*.internal` intrinsics (upstream's AMX
    patterns; LLVM then configures the tiles, `ldtilecfg`, and releases
    them, `tilerelease`) and converts the loops that carry tiles to
    `!llvm.x86_amx` in the same conversion.

    With `emulate` (or ATTNC_EMULATE_AMX=1 in the environment, a test hook)
    it instead rewrites each tile as a vector of its shape and each tile
    operation as the AVX512-BF16 vector code it stands for: `tile_load` /
    `tile_store` row by row at the same base, indices and stride,
    `tile_mulf` as vdpbf16ps per row and k-pair (the same products, in
    pairs, into float32). The tiles' addresses, strides, K steps and
    tails are then those of the AMX code and run on a CPU without AMX.
    Runs before the scf -> cf lowering; does nothing to code without tiles.
  }];
  let options = [
    Option<"emulate", "emulate", "bool", /*default=*/"false",
           "AVX512-BF16 vector code instead of AMX instructions">
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::vector::VectorDialect",
                           "mlir::memref::MemRefDialect", "mlir::x86vector::X86VectorDialect"];
}

def AttnApproximateExpPass : Pass<"attnc-approximate-exp", "mlir::ModuleOp"> {
  let summary = "Expand f32 math.exp into MLIR's polynomial approximation";
  let description = [{
    `math.exp` would otherwise become a call to libm's `expf` per element;
    the polynomial form (range reduction + polynomial, from
    populateMathPolynomialApproximationPatterns) is plain arithmetic that
    works on vectors. The x86 attention kernels compute their own 2^x
    (exp2NonPositive) and emit no math.exp; what this pass expands is the
    probs output's loop and the host form of the CUDA kernels.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

#endif // ATTNC_CONVERSION_PASSES_TD
