// Folds and canonicalization patterns of the attn dialect.
// RUN: attnc-opt %s --canonicalize --split-input-file | FileCheck %s

// merge_heads(split_heads(x)) -> x
// CHECK-LABEL: func.func @merge_of_split
// CHECK-SAME:    (%[[X:.+]]: tensor<?x?x64xf32>)
// CHECK-NEXT:    return %[[X]]
func.func @merge_of_split(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %h = attn.split_heads %x heads(4) : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
  %m = attn.merge_heads %h : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  return %m : tensor<?x?x64xf32>
}

// -----

// split_heads(merge_heads(x)) -> x
// CHECK-LABEL: func.func @split_of_merge
// CHECK-SAME:    (%[[X:.+]]: tensor<?x4x?x16xf32>)
// CHECK-NEXT:    return %[[X]]
func.func @split_of_merge(%x: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %m = attn.merge_heads %x : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  %h = attn.split_heads %m heads(4) : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
  return %h : tensor<?x4x?x16xf32>
}

// -----

// A different head count is not an inverse: keep both.
// CHECK-LABEL: func.func @split_of_merge_other_heads
// CHECK:         attn.merge_heads
// CHECK:         attn.split_heads
func.func @split_of_merge_other_heads(%x: tensor<?x4x?x16xf32>) -> tensor<?x2x?x32xf32> {
  %m = attn.merge_heads %x : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  %h = attn.split_heads %m heads(2) : tensor<?x?x64xf32> -> tensor<?x2x?x32xf32>
  return %h : tensor<?x2x?x32xf32>
}

// -----

// slice(concat(a, b, c), [offset of b, width of b]) -> b
// CHECK-LABEL: func.func @slice_of_concat
// CHECK-SAME:    (%{{.+}}: tensor<2x3x8xf32>, %[[B:.+]]: tensor<2x3x4xf32>, %{{.+}}: tensor<2x3x8xf32>)
// CHECK-NEXT:    return %[[B]]
func.func @slice_of_concat(%a: tensor<2x3x8xf32>, %b: tensor<2x3x4xf32>, %c: tensor<2x3x8xf32>) -> tensor<2x3x4xf32> {
  %cat = tensor.concat dim(2) %a, %b, %c : (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x8xf32>) -> tensor<2x3x20xf32>
  %s = attn.slice %cat [8, 4] : tensor<2x3x20xf32> -> tensor<2x3x4xf32>
  return %s : tensor<2x3x4xf32>
}

// -----

// A slice that straddles two operands stays.
// CHECK-LABEL: func.func @slice_straddles_concat
// CHECK:         attn.slice
func.func @slice_straddles_concat(%a: tensor<2x3x8xf32>, %b: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %cat = tensor.concat dim(2) %a, %b : (tensor<2x3x8xf32>, tensor<2x3x4xf32>) -> tensor<2x3x12xf32>
  %s = attn.slice %cat [6, 4] : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
  return %s : tensor<2x3x4xf32>
}

// -----

// The full slice is the identity; a slice of a slice is one slice.
// CHECK-LABEL: func.func @slices
// CHECK-SAME:    (%[[X:.+]]: tensor<?x?x64xf32>)
// CHECK-NEXT:    %[[S:.+]] = attn.slice %[[X]][40, 8]
// CHECK-NEXT:    return %[[X]], %[[S]]
func.func @slices(%x: tensor<?x?x64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x8xf32>) {
  %full = attn.slice %x [0, 64] : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %a = attn.slice %x [32, 16] : tensor<?x?x64xf32> -> tensor<?x?x16xf32>
  %b = attn.slice %a [8, 8] : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  return %full, %b : tensor<?x?x64xf32>, tensor<?x?x8xf32>
}

// -----

// Identity scale folds away; scales compose.
// CHECK-LABEL: func.func @scales
// CHECK-SAME:    (%[[X:.+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[S:.+]] = attn.scale %[[X]] by 1.500000e+00
// CHECK-NEXT:    return %[[X]], %[[S]]
func.func @scales(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %one = attn.scale %x by 1.0 : tensor<4xf32>
  %a = attn.scale %x by 0.5 : tensor<4xf32>
  %b = attn.scale %a by 3.0 : tensor<4xf32>
  return %one, %b : tensor<4xf32>, tensor<4xf32>
}
