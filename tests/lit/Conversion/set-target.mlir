// attnc-set-target: one clone of each attn function per code path, each
// carrying its target description; functions without attn ops untouched.
// RUN: attnc-opt %s --attnc-set-target | FileCheck %s --check-prefix=MULTI
// MULTI-LABEL: func.func @f__avx512(
// MULTI-SAME:    attn.target = #attn.cpu_target<isa = "x86-avx512", cpu = "x86-64-v4", features = "+prefer-no-scatter", vector_width = 16, registers = 32, panel = 32, gemm_mr = 12, gemm_nr = 32, gemm_kc = 256, gemm_mc = 96, attn_mq = 48, attn_kr = 8, attn_nk = 128
// MULTI-SAME:    attn.variant_of = "f"
// MULTI-LABEL: func.func @f__avx2(
// MULTI-SAME:    attn.target = #attn.cpu_target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128
// MULTI-LABEL: func.func @plain(
// MULTI-NOT:   attn.target
// MULTI-NOT:   func.func @f(
// RUN: attnc-opt %s --attnc-set-target=isa=x86-64 | FileCheck %s --check-prefix=SSE
// SSE: func.func @f__x86_64({{.*}}attn.target = #attn.cpu_target<isa = "x86-64", cpu = "x86-64", features = "", vector_width = 4
// SSE-NOT: func.func @f__avx
// RUN: not attnc-opt %s --attnc-set-target=isa=arm 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: attnc-set-target: unknown isa 'arm' (multi, x86-avx512, x86-avx512-bf16, x86-amx-bf16, x86-avx2, x86-64, host, cuda-sm80, cuda-sm90)
// A CUDA target: one function, an #attn.cuda_target with the block shapes
// (GEMM 128 x 64 outputs per block of 256 threads of 4 columns, K staged 16
// at a time; attention 64 queries per block, keys 32 at a time; 256
// threads for the other kernels; 48 KiB of shared memory).
// RUN: attnc-opt %s --attnc-set-target=isa=cuda-sm90 | FileCheck %s --check-prefix=CUDA
// CUDA: func.func @f__cuda_sm90({{.*}}attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>
// CUDA-NOT: func.func @f__avx
func.func @f(%x: tensor<2x3x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x3x8xf32> {
  %y = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}
func.func @plain(%x: f32) -> f32 {
  return %x : f32
}
