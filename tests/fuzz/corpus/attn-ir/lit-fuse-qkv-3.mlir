func.func @different_inputs(%a: tensor<?x?x8xf32>, %b: tensor<?x?x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %a, %w1 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %b, %w2 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %q, %k : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
