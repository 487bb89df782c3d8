// attnc-map-to-gpu refuses a write outside a thread region inside a task:
// in the sequential meaning it runs once per block, on the GPU once per
// thread (a race the host check could not see).
// RUN: not attnc-opt %s --attnc-map-to-gpu 2>&1 | FileCheck %s
// CHECK: error: 'memref.store' op attnc-gpu-outline: a write outside a thread region would run once per thread
module attributes {attn.spec_name = "t", attn.entry_points = #attn.entry_points<paths = [#attn.code_path<entry = "forward", isa = "cuda-sm90", ws = @k__cuda_sm90__ws, tasks = @k__cuda_sm90__tasks, run = @k__cuda_sm90__run>]>} {
  func.func @k__cuda_sm90__ws(%a: memref<?xf32>) -> index
      attributes {attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>} {
    %c0 = arith.constant 0 : index
    return %c0 : index
  }
  func.func @k__cuda_sm90__tasks(%a: memref<?xf32>, %phase: index) -> index
      attributes {attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>} {
    %c0 = arith.constant 0 : index
    return %c0 : index
  }
  func.func @k__cuda_sm90__run(%a: memref<?xf32>, %phase: index, %lo: index, %hi: index)
      attributes {attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>} {
    %c1 = arith.constant 1 : index
    %f = arith.constant 1.0 : f32
    scf.index_switch %phase
    case 0 {
      scf.for %t = %lo to %hi step %c1 {
        memref.store %f, %a[%t] : memref<?xf32>
        scf.forall (%tid) in (4) {
          memref.store %f, %a[%tid] : memref<?xf32>
        } {mapping = [#gpu.thread<x>]}
      }
      scf.yield
    }
    default {
    }
    return
  }
}
