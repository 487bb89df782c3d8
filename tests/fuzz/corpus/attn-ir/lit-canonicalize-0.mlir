func.func @merge_of_split(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %h = attn.split_heads %x heads(4) : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
  %m = attn.merge_heads %h : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  return %m : tensor<?x?x64xf32>
}
