func.func @split_of_merge_other_heads(%x: tensor<?x4x?x16xf32>) -> tensor<?x2x?x32xf32> {
  %m = attn.merge_heads %x : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  %h = attn.split_heads %m heads(2) : tensor<?x?x64xf32> -> tensor<?x2x?x32xf32>
  return %h : tensor<?x2x?x32xf32>
}
