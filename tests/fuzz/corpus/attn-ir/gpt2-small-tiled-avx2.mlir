module attributes {attn.spec_name = "gpt2_small_attn", attn.weight_storage = [{name = "c_attn.weight", roles = {wk = array<i64: 0, 768, 768, 768>, wq = array<i64: 0, 0, 768, 768>, wv = array<i64: 0, 1536, 768, 768>}, shape = array<i64: 768, 2304>, transposed = false}, {name = "c_attn.bias", roles = {bk = array<i64: 0, 768, 1, 768>, bq = array<i64: 0, 0, 1, 768>, bv = array<i64: 0, 1536, 1, 768>}, shape = array<i64: 2304>, transposed = false}, {name = "c_proj.weight", roles = {wo = array<i64: 0, 0, 768, 768>}, shape = array<i64: 768, 768>, transposed = false}, {name = "c_proj.bias", roles = {bo = array<i64: 0, 0, 1, 768>}, shape = array<i64: 768>, transposed = false}]} {
  func.func @gpt2_small_attn__avx2(%arg0: tensor<?x?x768xf32> {attn.input = "x"}, %arg1: tensor<768x2304xf32> {attn.concat_dim = 1 : i64, attn.concat_of = ["wq", "wk", "wv"], attn.weight = "wq|wk|wv"}, %arg2: tensor<2304xf32> {attn.concat_dim = 0 : i64, attn.concat_of = ["bq", "bk", "bv"], attn.weight = "bq|bk|bv"}, %arg3: tensor<768x768xf32> {attn.weight = "wo"}, %arg4: tensor<768xf32> {attn.weight = "bo"}) -> tensor<?x?x768xf32> attributes {attn.target = #attn.cpu_target<isa = "x86-avx2", cpu = "x86-64-v3", features = "", vector_width = 8, registers = 16, panel = 32, gemm_mr = 6, gemm_nr = 16, gemm_kc = 128, gemm_mc = 48, attn_mq = 24, attn_kr = 4, attn_nk = 128, l1_bytes = 49152, l2_bytes = 2097152>, attn.variant_of = "gpt2_small_attn"} {
    %c768 = arith.constant 768 : index
    %c2304 = arith.constant 2304 : index
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %0 = attn.linear %arg0, %arg1, %arg2 : (tensor<?x?x768xf32>, tensor<768x2304xf32>, tensor<2304xf32>) -> tensor<?x?x2304xf32>
    %dim = tensor.dim %0, %c0 : tensor<?x?x2304xf32>
    %dim_0 = tensor.dim %0, %c1 : tensor<?x?x2304xf32>
    %1 = arith.muli %dim_0, %c2304 : index
    %2 = attn.view %0 [%dim, 12, %dim_0, 64] strides [%1, 64, 2304, 1] offset 0 : tensor<?x?x2304xf32> -> tensor<?x12x?x64xf32>
    %3 = attn.view %0 [%dim, 12, %dim_0, 64] strides [%1, 64, 2304, 1] offset 768 : tensor<?x?x2304xf32> -> tensor<?x12x?x64xf32>
    %4 = attn.view %0 [%dim, 12, %dim_0, 64] strides [%1, 64, 2304, 1] offset 1536 : tensor<?x?x2304xf32> -> tensor<?x12x?x64xf32>
    %5 = attn.sdpa %2, %3, %4 {layout = #attn<layout bthd>, mask = #attn<mask causal>, scale = 1.250000e-01 : f64} : tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32> -> tensor<?x?x12x64xf32>
    %dim_1 = tensor.dim %5, %c0 : tensor<?x?x12x64xf32>
    %dim_2 = tensor.dim %5, %c1 : tensor<?x?x12x64xf32>
    %6 = arith.muli %dim_2, %c768 : index
    %7 = attn.view %5 [%dim_1, %dim_2, 768] strides [%6, 768, 1] offset 0 : tensor<?x?x12x64xf32> -> tensor<?x?x768xf32>
    %8 = attn.linear %7, %arg3, %arg4 : (tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    return %8 : tensor<?x?x768xf32>
  }
}

