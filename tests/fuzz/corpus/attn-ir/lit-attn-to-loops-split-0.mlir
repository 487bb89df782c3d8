func.func @dynamic_head_dim(%x: tensor<2x4x?xf32>) -> tensor<2x2x4x?xf32> {
  %h = attn.split_heads %x heads(2) : tensor<2x4x?xf32> -> tensor<2x2x4x?xf32>
  return %h : tensor<2x2x4x?xf32>
}
