// attn-to-loops refuses what it cannot lower instead of leaving attn ops.
// RUN: not attnc-opt %s --attn-to-loops 2>&1 | FileCheck %s
// CHECK: error: attn-to-loops lowers functions with exactly one ranked tensor result; @two_results has 2 results
func.func @two_results(%x: tensor<2x3x8xf32>, %w: tensor<8x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %y = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  return %y, %y : tensor<2x3x8xf32>, tensor<2x3x8xf32>
}
