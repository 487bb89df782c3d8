func.func @plain_slice(%x: tensor<2x3x32xf32>) -> tensor<2x3x8xf32> {
  %s = attn.slice %x [24, 8] : tensor<2x3x32xf32> -> tensor<2x3x8xf32>
  return %s : tensor<2x3x8xf32>
}
