module attributes {attn.spec_name = "llama_gqa_attn", attn.weight_storage = [{name = "q_proj.weight", roles = {wq = array<i64: 0, 0, 512, 512>}, shape = array<i64: 512, 512>, transposed = true}, {name = "k_proj.weight", roles = {wk = array<i64: 0, 0, 512, 128>}, shape = array<i64: 128, 512>, transposed = true}, {name = "v_proj.weight", roles = {wv = array<i64: 0, 0, 512, 128>}, shape = array<i64: 128, 512>, transposed = true}, {name = "o_proj.weight", roles = {wo = array<i64: 0, 0, 512, 512>}, shape = array<i64: 512, 512>, transposed = true}]} {
  func.func @llama_gqa_attn(%arg0: tensor<?x?x512xf32> {attn.input = "x"}, %arg1: tensor<512x512xf32> {attn.weight = "wq"}, %arg2: tensor<512x128xf32> {attn.weight = "wk"}, %arg3: tensor<512x128xf32> {attn.weight = "wv"}, %arg4: tensor<512x512xf32> {attn.weight = "wo"}) -> tensor<?x?x512xf32> {
    %0 = attn.linear %arg0, %arg1 : (tensor<?x?x512xf32>, tensor<512x512xf32>) -> tensor<?x?x512xf32>
    %1 = attn.linear %arg0, %arg2 : (tensor<?x?x512xf32>, tensor<512x128xf32>) -> tensor<?x?x128xf32>
    %2 = attn.linear %arg0, %arg3 : (tensor<?x?x512xf32>, tensor<512x128xf32>) -> tensor<?x?x128xf32>
    %3 = attn.split_heads %0 heads(8) : tensor<?x?x512xf32> -> tensor<?x8x?x64xf32>
    %4 = attn.split_heads %1 heads(2) : tensor<?x?x128xf32> -> tensor<?x2x?x64xf32>
    %5 = attn.split_heads %2 heads(2) : tensor<?x?x128xf32> -> tensor<?x2x?x64xf32>
    %6 = attn.sdpa %3, %4, %5 {mask = #attn<mask causal>, scale = 1.250000e-01 : f64} : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x8x?x64xf32>
    %7 = attn.merge_heads %6 : tensor<?x8x?x64xf32> -> tensor<?x?x512xf32>
    %8 = attn.linear %7, %arg4 : (tensor<?x?x512xf32>, tensor<512x512xf32>) -> tensor<?x?x512xf32>
    return %8 : tensor<?x?x512xf32>
  }
}

