func.func @cross_attention(%dec: tensor<?x?x8xf32>, %enc: tensor<?x?x8xf32>,
    %wq: tensor<8x8xf32> {attn.weight = "wq"}, %wk: tensor<8x8xf32> {attn.weight = "wk"},
    %wv: tensor<8x8xf32> {attn.weight = "wv"}) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %dec, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %enc, %wk : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %enc, %wv : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %q, %k, %v : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
