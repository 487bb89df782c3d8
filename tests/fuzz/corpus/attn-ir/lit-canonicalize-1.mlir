func.func @split_of_merge(%x: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %m = attn.merge_heads %x : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  %h = attn.split_heads %m heads(4) : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
  return %h : tensor<?x4x?x16xf32>
}
