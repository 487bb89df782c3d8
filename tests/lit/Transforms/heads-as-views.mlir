// attn-heads-as-views: slices, head splits and head merges become strided
// views of one buffer.
// RUN: attnc-opt %s --split-input-file --attn-heads-as-views --canonicalize --cse | FileCheck %s
// Idempotent.
// RUN: attnc-opt %s --split-input-file --attn-heads-as-views --canonicalize --cse --attn-heads-as-views | FileCheck %s

// The fused form of a block: Q, K and V are views of the QKV result at
// offsets 0, 32 and 48 with row stride N = 64; the attention writes heads
// last and the merge becomes a contiguous view.
// CHECK-LABEL: func.func @fused_block
// CHECK-SAME:    (%[[QKV:[^:]+]]: tensor<?x?x64xf32>)
// CHECK-NOT:     attn.slice
// CHECK-NOT:     attn.split_heads
// CHECK-DAG:     %[[Q:.+]] = attn.view %[[QKV]] [%{{.+}}, 4, %{{.+}}, 8] strides [%[[BS:.+]], 8, 64, 1] offset 0
// CHECK-DAG:     %[[K:.+]] = attn.view %[[QKV]] [%{{.+}}, 2, %{{.+}}, 8] strides [%[[BS]], 8, 64, 1] offset 32
// CHECK-DAG:     %[[V:.+]] = attn.view %[[QKV]] [%{{.+}}, 2, %{{.+}}, 8] strides [%[[BS]], 8, 64, 1] offset 48
// CHECK:         %[[O:.+]] = attn.sdpa %[[Q]], %[[K]], %[[V]] {layout = #attn<layout bthd>, mask = #attn<mask causal>, scale = {{.*}}} : {{.*}} -> tensor<?x?x4x8xf32>
// CHECK:         %[[M:.+]] = attn.view %[[O]] [%{{.+}}, %{{.+}}, 32] strides [%{{.+}}, 32, 1] offset 0 : tensor<?x?x4x8xf32> -> tensor<?x?x32xf32>
// CHECK-NOT:     attn.merge_heads
// CHECK:         return %[[M]]
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

// -----

// Static shapes give static strides.
// CHECK-LABEL: func.func @static_split
// CHECK:         attn.view %arg0 [2, 4, 3, 8] strides [96, 8, 32, 1] offset 0 : tensor<2x3x32xf32> -> tensor<2x4x3x8xf32>
func.func @static_split(%x: tensor<2x3x32xf32>) -> tensor<2x4x3x8xf32> {
  %h = attn.split_heads %x heads(4) : tensor<2x3x32xf32> -> tensor<2x4x3x8xf32>
  return %h : tensor<2x4x3x8xf32>
}

// -----

// A slice used directly becomes a view with the source's row-major strides.
// CHECK-LABEL: func.func @plain_slice
// CHECK:         attn.view %arg0 [2, 3, 8] strides [96, 32, 1] offset 24 : tensor<2x3x32xf32> -> tensor<2x3x8xf32>
func.func @plain_slice(%x: tensor<2x3x32xf32>) -> tensor<2x3x8xf32> {
  %s = attn.slice %x [24, 8] : tensor<2x3x32xf32> -> tensor<2x3x8xf32>
  return %s : tensor<2x3x8xf32>
}

// -----

// merge_heads of something that is not an attention result is a real
// transpose: it stays.
// CHECK-LABEL: func.func @merge_needs_copy
// CHECK:         attn.merge_heads
func.func @merge_needs_copy(%x: tensor<2x4x3x8xf32>) -> tensor<2x3x32xf32> {
  %m = attn.merge_heads %x : tensor<2x4x3x8xf32> -> tensor<2x3x32xf32>
  return %m : tensor<2x3x32xf32>
}
