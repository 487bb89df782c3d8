// An #attn.target written by hand is checked before anything is built from
// it: the verifier asks for sizes >= 1 (a 0 would be an endless loop or a
// division by zero in the generated code), attn-to-loops for sizes that fit
// the ISA's kernels (whole vectors, blocks that tile a panel exactly).
// RUN: attnc-opt %s --attn-to-loops -split-input-file -verify-diagnostics

// expected-error @+2 {{#attn.target: gemm_kc must be in [1, 1048576], found 0}}
func.func @kc0(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 0, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{#attn.target of @nr24: gemm_nr (24) must be a multiple of vector_width (8) that divides panel (32)}}
func.func @nr24(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 24, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{#attn.target of @mq20: attn_mq (20) must be a multiple of vector_width (8)}}
func.func @mq20(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 20, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{#attn.target of @unknown: isa "x86-avx3" is not one code path of attnc's ISA table}}
func.func @unknown(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "x86-avx3", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{#attn.target of @cuda_tile: the CUDA GEMM tile (gemm_mr 128 x gemm_nr 60, gemm_kc 16, gemm_mc 256 threads) does not divide among its threads}}
func.func @cuda_tile(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", vector_width = 1, registers = 255, panel = 32, gemm_mr = 128, gemm_nr = 60, gemm_kc = 16, gemm_mc = 256, attn_mq = 64, attn_kr = 1, attn_nk = 32, l1_bytes = 49152, l2_bytes = 52428800>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{#attn.target of @nr12: gemm_nr (12) must be a multiple of vector_width (8) that divides panel (24)}}
func.func @nr12(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 24, gemm_mr = 6, gemm_nr = 12, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.target: isa must not be empty}}
func.func @empty_isa(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.target: attn_nk must be in [1, 1048576], found -128}}
func.func @negative(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = -128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+2 {{#attn.target: panel must be in [1, 1048576], found 9223372036854775807}}
func.func @huge(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 9223372036854775807, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{#attn.target of @multi: isa "multi" is not one code path of attnc's ISA table}}
func.func @multi(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "multi", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{#attn.target of @big_nk: sizes past what the CPU kernels unroll or keep on a task's stack}}
func.func @big_nk(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 100000, l1_bytes = 49152, l2_bytes = 2097152>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{#attn.target of @cuda_threads: gemm_mc and attn_mq are CUDA threads per block: at most 1024}}
func.func @cuda_threads(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", vector_width = 1, registers = 255, panel = 32, gemm_mr = 128, gemm_nr = 64, gemm_kc = 16, gemm_mc = 256, attn_mq = 2048, attn_kr = 1, attn_nk = 32, l1_bytes = 49152, l2_bytes = 52428800>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// expected-error @+1 {{#attn.target of @cuda_smem: l1_bytes (8192) must be at most 48 KiB and hold the GEMM's staged tiles}}
func.func @cuda_smem(%x: tensor<2x3x64xf32>, %w: tensor<64x64xf32> {attn.weight = "wq"}) -> tensor<2x3x64xf32>
    attributes {attn.target = #attn.target<isa = "cuda-sm90", cpu = "sm_90", features = "+ptx78", vector_width = 1, registers = 255, panel = 32, gemm_mr = 128, gemm_nr = 64, gemm_kc = 16, gemm_mc = 256, attn_mq = 64, attn_kr = 1, attn_nk = 32, l1_bytes = 8192, l2_bytes = 52428800>} {
  %y = attn.linear %x, %w : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}
