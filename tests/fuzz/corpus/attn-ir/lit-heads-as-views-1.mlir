func.func @static_split(%x: tensor<2x3x32xf32>) -> tensor<2x4x3x8xf32> {
  %h = attn.split_heads %x heads(4) : tensor<2x3x32xf32> -> tensor<2x4x3x8xf32>
  return %h : tensor<2x4x3x8xf32>
}
