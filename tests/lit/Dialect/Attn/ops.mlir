// Round trip of every attn op, in the pretty and the generic form.
// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// RUN: attnc-opt %s --mlir-print-op-generic | attnc-opt | FileCheck %s

// CHECK-LABEL: func.func @all_ops
func.func @all_ops(%x: tensor<?x?x64xf32>, %w: tensor<64x192xf32>, %b: tensor<192xf32>,
                   %lens: tensor<?xi64>) -> tensor<?x?x64xf32> {
  // CHECK: attn.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<64x192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
  %qkv = attn.linear %x, %w, %b : (tensor<?x?x64xf32>, tensor<64x192xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
  // CHECK: attn.linear %{{.*}}, %{{.*}}, %{{.*}} rows(%{{.*}}) : (tensor<?x?x64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<?xi64>) -> tensor<?x?x192xf32>
  %rows = attn.linear %x, %w, %b rows(%lens) : (tensor<?x?x64xf32>, tensor<64x192xf32>, tensor<192xf32>, tensor<?xi64>) -> tensor<?x?x192xf32>
  // CHECK: attn.mask_rows %{{.*}} lens(%{{.*}} : tensor<?xi64>) : tensor<?x?x192xf32>
  %masked = attn.mask_rows %rows lens(%lens : tensor<?xi64>) : tensor<?x?x192xf32>
  // CHECK: attn.slice %{{.*}}[0, 64] : tensor<?x?x192xf32> -> tensor<?x?x64xf32>
  %q = attn.slice %qkv [0, 64] : tensor<?x?x192xf32> -> tensor<?x?x64xf32>
  %k = attn.slice %qkv [64, 64] : tensor<?x?x192xf32> -> tensor<?x?x64xf32>
  // CHECK: attn.split_heads %{{.*}} heads(4) : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
  %qh = attn.split_heads %q heads(4) : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
  %kh = attn.split_heads %k heads(2) : tensor<?x?x64xf32> -> tensor<?x2x?x32xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bsz = tensor.dim %qkv, %c0 : tensor<?x?x192xf32>
  %t = tensor.dim %qkv, %c1 : tensor<?x?x192xf32>
  %s = arith.muli %t, %c1 : index
  // CHECK: attn.view %{{.*}}[%{{.*}}, 4, %{{.*}}, 16] strides [%{{.*}}, 16, 192, 1] offset 128 : tensor<?x?x192xf32> -> tensor<?x4x?x16xf32>
  %vh = attn.view %qkv[%bsz, 4, %t, 16] strides [%s, 16, 192, 1] offset 128 : tensor<?x?x192xf32> -> tensor<?x4x?x16xf32>
  // CHECK: attn.scale %{{.*}} by 2.500000e-01 : tensor<?x4x?x16xf32>
  %qs = attn.scale %qh by 0.25 : tensor<?x4x?x16xf32>
  // CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} {mask = #attn<mask causal>, scale = 1.000000e+00 : f64}
  %o = attn.sdpa %qs, %vh, %vh {mask = #attn<mask causal>, scale = 1.0 : f64}
      : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  // CHECK: attn.sdpa {{.*}} kv_lens(%{{.*}} : tensor<?xi64>) {causal_align = #attn<align top_left>, layout = #attn<layout bthd>, mask = #attn<mask causal_padding>
  %o2 = attn.sdpa %qs, %vh, %vh kv_lens(%lens : tensor<?xi64>)
      {mask = #attn<mask causal_padding>, causal_align = #attn<align top_left>,
       layout = #attn<layout bthd>, scale = 0.5 : f64}
      : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x?x4x16xf32>
  // CHECK: {mask = #attn<mask sliding_window>, scale = 1.000000e+00 : f64, window = 8 : i64}
  %o3 = attn.sdpa %qs, %vh, %vh {mask = #attn<mask sliding_window>, window = 8, scale = 1.0 : f64}
      : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  // CHECK: attn.sdpa {{.*}} kv_lens(%{{.*}} : tensor<?xi64>) q_lens(%{{.*}} : tensor<?xi64>) {mask = #attn<mask sliding_window_padding>, scale = 1.000000e+00 : f64, window = 8 : i64}
  %o4 = attn.sdpa %qs, %vh, %vh kv_lens(%lens : tensor<?xi64>) q_lens(%lens : tensor<?xi64>)
      {mask = #attn<mask sliding_window_padding>, window = 8, scale = 1.0 : f64}
      : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  // CHECK: {mask = #attn<mask chunked_padding>, scale = 1.000000e+00 : f64, window = 16 : i64}
  %o5 = attn.sdpa %qs, %vh, %vh kv_lens(%lens : tensor<?xi64>)
      {mask = #attn<mask chunked_padding>, window = 16, scale = 1.0 : f64}
      : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  // CHECK: attn.merge_heads %{{.*}} : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  %m = attn.merge_heads %o : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  return %m : tensor<?x?x64xf32>
}

// GQA: 8 query heads read 2 kv heads; cross-attention: Tq != Tkv.
// CHECK-LABEL: func.func @gqa_cross
func.func @gqa_cross(%q: tensor<2x8x5x16xf32>, %k: tensor<2x2x9x16xf32>, %v: tensor<2x2x9x16xf32>) -> tensor<2x8x5x16xf32> {
  // CHECK: attn.sdpa
  %o = attn.sdpa %q, %k, %v {mask = #attn<mask none>, scale = 0.25 : f64}
      : tensor<2x8x5x16xf32>, tensor<2x2x9x16xf32>, tensor<2x2x9x16xf32> -> tensor<2x8x5x16xf32>
  return %o : tensor<2x8x5x16xf32>
}

// Decode: the new token's K/V go into the cache at each sequence's position;
// attention reads the cache's filled rows (kv_lens with a causal mask).
// CHECK-LABEL: func.func @decode_step
func.func @decode_step(%q: tensor<?x12x1x64xf32>, %k: tensor<?x12x1x64xf32>, %v: tensor<?x12x1x64xf32>,
                       %kc: tensor<?x12x?x64xf32>, %vc: tensor<?x12x?x64xf32>, %pos: tensor<?xi32>)
    -> (tensor<?x12x1x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>) {
  // CHECK: %[[KC:.*]], %{{.*}}, %[[LENS:.*]] = attn.cache_append %{{.*}}, %{{.*}} into %{{.*}}, %{{.*}} at(%{{.*}} : tensor<?xi32>) : tensor<?x12x1x64xf32>, tensor<?x12x?x64xf32> -> tensor<?xi32>
  %kc2, %vc2, %lens = attn.cache_append %k, %v into %kc, %vc at(%pos : tensor<?xi32>)
      : tensor<?x12x1x64xf32>, tensor<?x12x?x64xf32> -> tensor<?xi32>
  // CHECK: attn.sdpa %{{.*}}, %[[KC]], %{{.*}} kv_lens(%[[LENS]] : tensor<?xi32>) {mask = #attn<mask causal>
  %o = attn.sdpa %q, %kc2, %vc2 kv_lens(%lens : tensor<?xi32>) {mask = #attn<mask causal>, scale = 0.125 : f64}
      : tensor<?x12x1x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32> -> tensor<?x12x1x64xf32>
  // Without positions (prefill fills rows [0, T)).
  // CHECK: attn.cache_append %{{.*}}, %{{.*}} into %{{.*}}, %{{.*}} : tensor<?x12x1x64xf32>
  %kc3, %vc3, %l3 = attn.cache_append %k, %v into %kc, %vc
      : tensor<?x12x1x64xf32>, tensor<?x12x?x64xf32> -> tensor<?xi32>
  return %o, %kc2, %vc2 : tensor<?x12x1x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>
}
