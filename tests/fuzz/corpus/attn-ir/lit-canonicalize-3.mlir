func.func @slice_of_concat(%a: tensor<2x3x8xf32>, %b: tensor<2x3x4xf32>, %c: tensor<2x3x8xf32>) -> tensor<2x3x4xf32> {
  %cat = tensor.concat dim(2) %a, %b, %c : (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x8xf32>) -> tensor<2x3x20xf32>
  %s = attn.slice %cat [8, 4] : tensor<2x3x20xf32> -> tensor<2x3x4xf32>
  return %s : tensor<2x3x4xf32>
}
