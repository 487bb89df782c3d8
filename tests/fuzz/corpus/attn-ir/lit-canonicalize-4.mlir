func.func @slice_straddles_concat(%a: tensor<2x3x8xf32>, %b: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %cat = tensor.concat dim(2) %a, %b : (tensor<2x3x8xf32>, tensor<2x3x4xf32>) -> tensor<2x3x12xf32>
  %s = attn.slice %cat [6, 4] : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
  return %s : tensor<2x3x4xf32>
}
