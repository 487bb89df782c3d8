func.func private @block(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32> {attn.weight = "wq"},
                         %wk: tensor<8x8xf32> {attn.weight = "wk"}) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %x, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %wk : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %q, %k : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

func.func @caller(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %q, %k = func.call @block(%x, %w, %w) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>)
  return %q : tensor<?x?x8xf32>
}
