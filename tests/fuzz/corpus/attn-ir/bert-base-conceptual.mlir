module attributes {attn.spec_name = "bert_base_attn", attn.weight_storage = [{name = "in_proj_weight", roles = {wk = array<i64: 768, 0, 768, 768>, wq = array<i64: 0, 0, 768, 768>, wv = array<i64: 1536, 0, 768, 768>}, shape = array<i64: 2304, 768>, transposed = true}, {name = "in_proj_bias", roles = {bk = array<i64: 0, 768, 1, 768>, bq = array<i64: 0, 0, 1, 768>, bv = array<i64: 0, 1536, 1, 768>}, shape = array<i64: 2304>, transposed = false}, {name = "out_proj.weight", roles = {wo = array<i64: 0, 0, 768, 768>}, shape = array<i64: 768, 768>, transposed = true}, {name = "out_proj.bias", roles = {bo = array<i64: 0, 0, 1, 768>}, shape = array<i64: 768>, transposed = false}]} {
  func.func @bert_base_attn(%arg0: tensor<?x?x768xf32> {attn.input = "x"}, %arg1: tensor<768x768xf32> {attn.weight = "wq"}, %arg2: tensor<768xf32> {attn.weight = "bq"}, %arg3: tensor<768x768xf32> {attn.weight = "wk"}, %arg4: tensor<768xf32> {attn.weight = "bk"}, %arg5: tensor<768x768xf32> {attn.weight = "wv"}, %arg6: tensor<768xf32> {attn.weight = "bv"}, %arg7: tensor<768x768xf32> {attn.weight = "wo"}, %arg8: tensor<768xf32> {attn.weight = "bo"}) -> tensor<?x?x768xf32> {
    %0 = attn.linear %arg0, %arg1, %arg2 : (tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    %1 = attn.linear %arg0, %arg3, %arg4 : (tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    %2 = attn.linear %arg0, %arg5, %arg6 : (tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    %3 = attn.split_heads %0 heads(12) : tensor<?x?x768xf32> -> tensor<?x12x?x64xf32>
    %4 = attn.split_heads %1 heads(12) : tensor<?x?x768xf32> -> tensor<?x12x?x64xf32>
    %5 = attn.split_heads %2 heads(12) : tensor<?x?x768xf32> -> tensor<?x12x?x64xf32>
    %6 = attn.sdpa %3, %4, %5 {mask = #attn<mask none>, scale = 1.250000e-01 : f64} : tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32> -> tensor<?x12x?x64xf32>
    %7 = attn.merge_heads %6 : tensor<?x12x?x64xf32> -> tensor<?x?x768xf32>
    %8 = attn.linear %7, %arg7, %arg8 : (tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    return %8 : tensor<?x?x768xf32>
  }
}

