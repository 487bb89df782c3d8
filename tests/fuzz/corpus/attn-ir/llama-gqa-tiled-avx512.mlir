module attributes {attn.spec_name = "llama_gqa_attn", attn.weight_storage = [{name = "q_proj.weight", roles = {wq = array<i64: 0, 0, 512, 512>}, shape = array<i64: 512, 512>, transposed = true}, {name = "k_proj.weight", roles = {wk = array<i64: 0, 0, 512, 128>}, shape = array<i64: 128, 512>, transposed = true}, {name = "v_proj.weight", roles = {wv = array<i64: 0, 0, 512, 128>}, shape = array<i64: 128, 512>, transposed = true}, {name = "o_proj.weight", roles = {wo = array<i64: 0, 0, 512, 512>}, shape = array<i64: 512, 512>, transposed = true}]} {
  func.func @llama_gqa_attn__avx512(%arg0: tensor<?x?x512xf32> {attn.input = "x"}, %arg1: tensor<512x768xf32> {attn.concat_dim = 1 : i64, attn.concat_of = ["wq", "wk", "wv"], attn.weight = "wq|wk|wv"}, %arg2: tensor<512x512xf32> {attn.weight = "wo"}) -> tensor<?x?x512xf32> attributes {attn.target = #attn.cpu_target<isa = "x86-avx512", cpu = "x86-64-v4", features = "+prefer-no-scatter", vector_width = 16, registers = 32, panel = 32, gemm_mr = 12, gemm_nr = 32, gemm_kc = 256, gemm_mc = 96, attn_mq = 48, attn_kr = 8, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>, attn.variant_of = "llama_gqa_attn"} {
    %c512 = arith.constant 512 : index
    %c768 = arith.constant 768 : index
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %0 = attn.linear %arg0, %arg1 : (tensor<?x?x512xf32>, tensor<512x768xf32>) -> tensor<?x?x768xf32>
    %dim = tensor.dim %0, %c0 : tensor<?x?x768xf32>
    %dim_0 = tensor.dim %0, %c1 : tensor<?x?x768xf32>
    %1 = arith.muli %dim_0, %c768 : index
    %2 = attn.view %0 [%dim, 8, %dim_0, 64] strides [%1, 64, 768, 1] offset 0 : tensor<?x?x768xf32> -> tensor<?x8x?x64xf32>
    %3 = attn.view %0 [%dim, 2, %dim_0, 64] strides [%1, 64, 768, 1] offset 512 : tensor<?x?x768xf32> -> tensor<?x2x?x64xf32>
    %4 = attn.view %0 [%dim, 2, %dim_0, 64] strides [%1, 64, 768, 1] offset 640 : tensor<?x?x768xf32> -> tensor<?x2x?x64xf32>
    %5 = attn.sdpa %2, %3, %4 {layout = #attn<layout bthd>, mask = #attn<mask causal>, scale = 1.250000e-01 : f64} : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x?x8x64xf32>
    %dim_1 = tensor.dim %5, %c0 : tensor<?x?x8x64xf32>
    %dim_2 = tensor.dim %5, %c1 : tensor<?x?x8x64xf32>
    %6 = arith.muli %dim_2, %c512 : index
    %7 = attn.view %5 [%dim_1, %dim_2, 512] strides [%6, 512, 1] offset 0 : tensor<?x?x8x64xf32> -> tensor<?x?x512xf32>
    %8 = attn.linear %7, %arg2 : (tensor<?x?x512xf32>, tensor<512x512xf32>) -> tensor<?x?x512xf32>
    return %8 : tensor<?x?x512xf32>
  }
}

