func.func @merge_needs_copy(%x: tensor<2x4x3x8xf32>) -> tensor<2x3x32xf32> {
  %m = attn.merge_heads %x : tensor<2x4x3x8xf32> -> tensor<2x3x32xf32>
  return %m : tensor<2x3x32xf32>
}
