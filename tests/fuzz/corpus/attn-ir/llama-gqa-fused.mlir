module attributes {attn.spec_name = "llama_gqa_attn", attn.weight_storage = [{name = "q_proj.weight", roles = {wq = array<i64: 0, 0, 512, 512>}, shape = array<i64: 512, 512>, transposed = true}, {name = "k_proj.weight", roles = {wk = array<i64: 0, 0, 512, 128>}, shape = array<i64: 128, 512>, transposed = true}, {name = "v_proj.weight", roles = {wv = array<i64: 0, 0, 512, 128>}, shape = array<i64: 128, 512>, transposed = true}, {name = "o_proj.weight", roles = {wo = array<i64: 0, 0, 512, 512>}, shape = array<i64: 512, 512>, transposed = true}]} {
  func.func @llama_gqa_attn(%arg0: tensor<?x?x512xf32> {attn.input = "x"}, %arg1: tensor<512x768xf32> {attn.concat_dim = 1 : i64, attn.concat_of = ["wq", "wk", "wv"], attn.weight = "wq|wk|wv"}, %arg2: tensor<512x512xf32> {attn.weight = "wo"}) -> tensor<?x?x512xf32> {
    %0 = attn.linear %arg0, %arg1 : (tensor<?x?x512xf32>, tensor<512x768xf32>) -> tensor<?x?x768xf32>
    %1 = attn.slice %0[0, 512] : tensor<?x?x768xf32> -> tensor<?x?x512xf32>
    %2 = attn.slice %0[512, 128] : tensor<?x?x768xf32> -> tensor<?x?x128xf32>
    %3 = attn.slice %0[640, 128] : tensor<?x?x768xf32> -> tensor<?x?x128xf32>
    %4 = attn.split_heads %1 heads(8) : tensor<?x?x512xf32> -> tensor<?x8x?x64xf32>
    %5 = attn.split_heads %2 heads(2) : tensor<?x?x128xf32> -> tensor<?x2x?x64xf32>
    %6 = attn.split_heads %3 heads(2) : tensor<?x?x128xf32> -> tensor<?x2x?x64xf32>
    %7 = attn.sdpa %4, %5, %6 {mask = #attn<mask causal>, scale = 1.250000e-01 : f64} : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x8x?x64xf32>
    %8 = attn.merge_heads %7 : tensor<?x8x?x64xf32> -> tensor<?x?x512xf32>
    %9 = attn.linear %8, %arg2 : (tensor<?x?x512xf32>, tensor<512x512xf32>) -> tensor<?x?x512xf32>
    return %9 : tensor<?x?x512xf32>
  }
}

