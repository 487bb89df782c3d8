module attributes {attn.spec_name = "bert_base_attn", attn.weight_storage = [{name = "in_proj_weight", roles = {wk = array<i64: 768, 0, 768, 768>, wq = array<i64: 0, 0, 768, 768>, wv = array<i64: 1536, 0, 768, 768>}, shape = array<i64: 2304, 768>, transposed = true}, {name = "in_proj_bias", roles = {bk = array<i64: 0, 768, 1, 768>, bq = array<i64: 0, 0, 1, 768>, bv = array<i64: 0, 1536, 1, 768>}, shape = array<i64: 2304>, transposed = false}, {name = "out_proj.weight", roles = {wo = array<i64: 0, 0, 768, 768>}, shape = array<i64: 768, 768>, transposed = true}, {name = "out_proj.bias", roles = {bo = array<i64: 0, 0, 1, 768>}, shape = array<i64: 768>, transposed = false}]} {
  func.func @bert_base_attn(%arg0: tensor<?x?x768xf32> {attn.input = "x"}, %arg1: tensor<768x2304xf32> {attn.concat_dim = 1 : i64, attn.concat_of = ["wq", "wk", "wv"], attn.weight = "wq|wk|wv"}, %arg2: tensor<2304xf32> {attn.concat_dim = 0 : i64, attn.concat_of = ["bq", "bk", "bv"], attn.weight = "bq|bk|bv"}, %arg3: tensor<768x768xf32> {attn.weight = "wo"}, %arg4: tensor<768xf32> {attn.weight = "bo"}) -> tensor<?x?x768xf32> {
    %0 = attn.linear %arg0, %arg1, %arg2 : (tensor<?x?x768xf32>, tensor<768x2304xf32>, tensor<2304xf32>) -> tensor<?x?x2304xf32>
    %1 = attn.slice %0[0, 768] : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
    %2 = attn.slice %0[768, 768] : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
    %3 = attn.slice %0[1536, 768] : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
    %4 = attn.split_heads %1 heads(12) : tensor<?x?x768xf32> -> tensor<?x12x?x64xf32>
    %5 = attn.split_heads %2 heads(12) : tensor<?x?x768xf32> -> tensor<?x12x?x64xf32>
    %6 = attn.split_heads %3 heads(12) : tensor<?x?x768xf32> -> tensor<?x12x?x64xf32>
    %7 = attn.sdpa %4, %5, %6 {mask = #attn<mask none>, scale = 1.250000e-01 : f64} : tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32> -> tensor<?x12x?x64xf32>
    %8 = attn.merge_heads %7 : tensor<?x12x?x64xf32> -> tensor<?x?x768xf32>
    %9 = attn.linear %8, %arg3, %arg4 : (tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    return %9 : tensor<?x?x768xf32>
  }
}

