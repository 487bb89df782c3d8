func.func @fused_block(%qkv: tensor<?x?x64xf32>) -> tensor<?x?x32xf32> {
  %q = attn.slice %qkv [0, 32] : tensor<?x?x64xf32> -> tensor<?x?x32xf32>
  %k = attn.slice %qkv [32, 16] : tensor<?x?x64xf32> -> tensor<?x?x16xf32>
  %v = attn.slice %qkv [48, 16] : tensor<?x?x64xf32> -> tensor<?x?x16xf32>
  %qh = attn.split_heads %q heads(4) : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
  %kh = attn.split_heads %k heads(2) : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
  %vh = attn.split_heads %v heads(2) : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
  %o = attn.sdpa %qh, %kh, %vh {mask = #attn<mask causal>, scale = 0.35355339059327373 : f64}
      : tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
  %m = attn.merge_heads %o : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
  return %m : tensor<?x?x32xf32>
}
