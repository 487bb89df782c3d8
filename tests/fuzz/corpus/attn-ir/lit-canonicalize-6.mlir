func.func @scales(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %one = attn.scale %x by 1.0 : tensor<4xf32>
  %a = attn.scale %x by 0.5 : tensor<4xf32>
  %b = attn.scale %a by 3.0 : tensor<4xf32>
  return %one, %b : tensor<4xf32>, tensor<4xf32>
}
