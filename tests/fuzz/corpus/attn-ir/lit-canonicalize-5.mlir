func.func @slices(%x: tensor<?x?x64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x8xf32>) {
  %full = attn.slice %x [0, 64] : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %a = attn.slice %x [32, 16] : tensor<?x?x64xf32> -> tensor<?x?x16xf32>
  %b = attn.slice %a [8, 8] : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  return %full, %b : tensor<?x?x64xf32>, tensor<?x?x8xf32>
}
