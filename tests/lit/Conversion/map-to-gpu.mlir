// attnc-map-to-gpu (attnc-gpu-outline, attnc-gpu-map-threads,
// attnc-gpu-private-buffers, attnc-gpu-fast-math): each phase of a CUDA
// code path's @f__run becomes a
// gpu.func kernel (task = block id; a thread region = the body guarded by
// the thread id, then a barrier; a workgroup buffer = a workgroup
// attribution; a [threads, ...] private buffer = a private attribution
// without the thread index; exp = ex2.approx). @f__run goes, @f__tasks
// records the block sizes, and the entry table lists the kernels in its
// place.
// RUN: attnc-opt %s --attnc-map-to-gpu | FileCheck %s
// CHECK: module attributes {attn.entry_points = #attn.entry_points<paths = [#attn.code_path<entry = "forward", isa = "cuda-sm90", ws = @k__cuda_sm90__ws, tasks = @k__cuda_sm90__tasks, kernels = [@t_kernels::@k__cuda_sm90__k0]>]>, {{.*}}gpu.container_module
// CHECK: func.func @k__cuda_sm90__tasks({{.*}} attributes {attn.block_threads = array<i64: 4>, attn.phases = 1 : i64
// CHECK-NOT: func.func @k__cuda_sm90__run
// CHECK: gpu.module @t_kernels {
// CHECK: gpu.func @k__cuda_sm90__k0(%[[A:.*]]: memref<?xf32>) workgroup(%[[WG:.*]] : memref<4xf32, #gpu.address_space<workgroup>>) private(%[[PV:.*]] : memref<2xf32, #gpu.address_space<private>>) kernel attributes {known_block_size = array<i32: 4, 1, 1>}
// CHECK: %[[B:.*]] = gpu.block_id  x
// CHECK: %[[T:.*]] = gpu.thread_id  x
// CHECK: %[[I:.*]] = arith.addi %{{.*}}, %[[T]] : index
// CHECK: %[[X:.*]] = memref.load %[[A]][%[[I]]]
// CHECK: memref.store %[[X]], %[[PV]][%c0] : memref<2xf32, #gpu.address_space<private>>
// CHECK: memref.store %[[X]], %[[WG]][%[[T]]]
// CHECK-NEXT: gpu.barrier
// The second region has 2 threads of the block's 4: guarded.
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[T]], %c2
// CHECK: scf.if %[[IN]] {
// CHECK: memref.load %[[PV]][%c0] : memref<2xf32, #gpu.address_space<private>>
// CHECK: arith.maximumf
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK: gpu.return
//
// attnc-map-to-gpu is four passes; each one's IR is valid on its own.
// attnc-gpu-outline: the kernel, its attributions (the private one still
// [threads, ...]), the thread regions still loops, the block size set.
// RUN: attnc-opt %s --attnc-gpu-outline | FileCheck %s --check-prefix=OUTLINE
// OUTLINE: gpu.func @k__cuda_sm90__k0(%[[A:.*]]: memref<?xf32>) workgroup(%{{.*}} : memref<4xf32, #gpu.address_space<workgroup>>) private(%[[PV:.*]] : memref<4x2xf32, #gpu.address_space<private>>) kernel attributes {known_block_size = array<i32: 4, 1, 1>}
// OUTLINE: gpu.block_id  x
// OUTLINE-NOT: gpu.thread_id
// OUTLINE: scf.forall (%[[T:.*]]) in (4)
// OUTLINE: memref.store %{{.*}}, %[[PV]][%[[T]], %c0] : memref<4x2xf32
// OUTLINE: } {mapping = [#gpu.thread<x>]}
// OUTLINE-NOT: gpu.barrier
// OUTLINE: math.exp
// attnc-gpu-map-threads: regions as guarded code and barriers.
// RUN: attnc-opt %s --attnc-gpu-outline --attnc-gpu-map-threads | FileCheck %s --check-prefix=THREADS
// THREADS: gpu.block_id  x
// THREADS-NEXT: %[[T:.*]] = gpu.thread_id  x
// THREADS-NOT: scf.forall
// THREADS: memref.store %{{.*}}, %{{.*}}[%[[T]], %c0] : memref<4x2xf32
// THREADS: gpu.barrier
// THREADS: arith.cmpi ult, %[[T]], %c2
// THREADS: math.exp
// attnc-gpu-private-buffers: the private attribution per thread.
// RUN: attnc-opt %s --attnc-gpu-outline --attnc-gpu-map-threads --attnc-gpu-private-buffers | FileCheck %s --check-prefix=PRIVATE
// PRIVATE: private(%[[PV:.*]] : memref<2xf32, #gpu.address_space<private>>)
// PRIVATE: memref.store %{{.*}}, %[[PV]][%c0] : memref<2xf32
// PRIVATE: math.exp
// attnc-gpu-fast-math: the exp as ex2.approx (the full pipeline: CHECK).
// RUN: attnc-opt %s --attnc-gpu-outline --attnc-gpu-map-threads --attnc-gpu-private-buffers --attnc-gpu-fast-math | FileCheck %s --check-prefix=MATH
// MATH-NOT: math.exp
// MATH: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
//
// attnc-gpu-on-host: the same loops as a host code path (for checking).
// RUN: attnc-opt %s --attnc-gpu-on-host | FileCheck %s --check-prefix=HOST
// HOST: module attributes {attn.entry_points = #attn.entry_points<paths = [#attn.code_path<entry = "forward", isa = "host", ws = @k__host__ws, tasks = @k__host__tasks, run = @k__host__run>]>
// HOST: func.func @k__host__tasks(
// HOST: func.func @k__host__run({{.*}}attn.target = #attn.cpu_target<isa = "host"
// HOST-DAG: memref.alloca() : memref<4xf32>
// HOST-DAG: memref.alloca() : memref<4x2xf32>
// HOST: scf.for %[[T:.*]] = %c0{{.*}} to %c4{{.*}} step %c1
// HOST-NOT: scf.forall
// HOST-NOT: #gpu.address_space
module attributes {attn.spec_name = "t", attn.entry_points = #attn.entry_points<paths = [#attn.code_path<entry = "forward", isa = "cuda-sm90", ws = @k__cuda_sm90__ws, tasks = @k__cuda_sm90__tasks, run = @k__cuda_sm90__run>]>} {
  func.func @k__cuda_sm90__ws(%a: memref<?xf32>) -> index
      attributes {attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>} {
    %c0 = arith.constant 0 : index
    return %c0 : index
  }
  func.func @k__cuda_sm90__tasks(%a: memref<?xf32>, %phase: index) -> index
      attributes {attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>} {
    %c0 = arith.constant 0 : index
    %n = memref.dim %a, %c0 : memref<?xf32>
    return %n : index
  }
  func.func @k__cuda_sm90__run(%a: memref<?xf32>, %phase: index, %lo: index, %hi: index)
      attributes {attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %wg = memref.alloca() : memref<4xf32, #gpu.address_space<workgroup>>
    %pv = memref.alloca() : memref<4x2xf32, #gpu.address_space<private>>
    scf.index_switch %phase
    case 0 {
      scf.for %t = %lo to %hi step %c1 {
        %base = arith.muli %t, %c4 : index
        scf.forall (%tid) in (4) {
          %i = arith.addi %base, %tid : index
          %x = memref.load %a[%i] : memref<?xf32>
          memref.store %x, %pv[%tid, %c0] : memref<4x2xf32, #gpu.address_space<private>>
          memref.store %x, %wg[%tid] : memref<4xf32, #gpu.address_space<workgroup>>
        } {mapping = [#gpu.thread<x>]}
        scf.forall (%tid) in (2) {
          %y = memref.load %pv[%tid, %c0] : memref<4x2xf32, #gpu.address_space<private>>
          %c = arith.constant -8.700000e+01 : f32
          %m = arith.maximumf %y, %c : f32
          %e = math.exp %m : f32
          %z = memref.load %wg[%tid] : memref<4xf32, #gpu.address_space<workgroup>>
          %s = arith.addf %e, %z : f32
          %i = arith.addi %base, %tid : index
          memref.store %s, %a[%i] : memref<?xf32>
        } {mapping = [#gpu.thread<x>]}
      }
      scf.yield
    }
    default {
    }
    return
  }
}

