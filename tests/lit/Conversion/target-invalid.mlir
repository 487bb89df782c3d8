// A target written by hand is checked before anything is built from it.
// Each target attribute's verifier checks its own limits when it is
// parsed: sizes >= 1 (a 0 would be an endless loop or a division by zero
// in the generated code); for #attn.cpu_target blocks of whole vectors
// that tile a panel exactly and sizes the CPU kernels unroll; for
// #attn.cuda_target at most 1024 threads per block, a GEMM tile its threads
// divide and shared memory that holds the staged tiles. attn-to-loops
// checks that the isa is one code path of the ISA table, of the
// attribute's kind.
// RUN: attnc-opt %s --attn-to-loops -split-input-file -verify-diagnostics

// expected-error @+2 {{#attn.cpu_target: gemm_kc must be in [1, 1048576], found 0}}
func.func @kc0(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 0, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cpu_target: gemm_nr (24) must be a multiple of vector_width (8) that divides panel (32)}}
func.func @nr24(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 24, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cpu_target: attn_mq (20) must be a multiple of vector_width (8)}}
func.func @mq20(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 20, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{attn.target of @unknown: isa "x86-avx3" is not one code path of attnc's ISA table}}
func.func @unknown(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "x86-avx3", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cuda_target: the GEMM tile (gemm_tile_m 128 x gemm_tile_n 60, gemm_tile_k 16, 256 threads of 4 columns) does not divide among its threads}}
func.func @cuda_tile(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 60, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cuda_target: the GEMM tile (gemm_tile_m 128 x gemm_tile_n 64, gemm_tile_k 16, 256 threads of 3 columns) does not divide among its threads}}
func.func @cuda_thread_n(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 3, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cpu_target: gemm_nr (12) must be a multiple of vector_width (8) that divides panel (24)}}
func.func @nr12(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 24, gemm_mr = 6, gemm_nr = 12, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cpu_target: isa must not be empty}}
func.func @empty_isa(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cpu_target: attn_nk must be in [1, 1048576], found -128}}
func.func @negative(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = -128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cpu_target: panel must be in [1, 1048576], found 9223372036854775807}}
func.func @huge(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 9223372036854775807, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{attn.target of @multi: isa "multi" is not one code path of attnc's ISA table}}
func.func @multi(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "multi", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cpu_target: sizes past what the CPU kernels unroll or keep on a task's stack}}
func.func @big_nk(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 100000, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cuda_target: gemm_threads, attn_threads and block_threads are threads per block: at most 1024}}
func.func @cuda_threads(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 2048, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.cuda_target: shared_bytes (8192) must be at most 48 KiB and hold the GEMM's staged tiles}}
func.func @cuda_smem(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cuda_target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 8192, l2_bytes = 52428800>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// A CUDA isa with the CPU target attribute, and the other way round.
// expected-error @+1 {{attn.target of @cpu_for_cuda: isa "cuda-sm90" is a CUDA code path: its target is an #attn.cuda_target}}
func.func @cpu_for_cuda(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cpu_target<isa = "cuda-sm90", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{attn.target of @cuda_for_cpu: isa "x86-avx2" is a CPU code path: its target is an #attn.cpu_target}}
func.func @cuda_for_cpu(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.cuda_target<isa = "x86-avx2", cpu = "sm_90", features = "+ptx78", panel = 32, gemm_tile_m = 128, gemm_tile_n = 64, gemm_tile_k = 16, gemm_threads = 256, gemm_thread_n = 4, attn_threads = 64, attn_keys = 32, block_threads = 256, shared_bytes = 49152, l2_bytes = 52428800>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}
