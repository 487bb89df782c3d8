module attributes {attn.spec_name = "bert_base_attn"} {
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

