// attn-to-loops (attnc-plan-memory) refuses what it cannot lower instead of leaving attn ops.
// RUN: not attnc-opt %s --attn-to-loops 2>&1 | FileCheck %s
// CHECK: error: attnc-plan-memory lowers functions whose results are ranked tensors (one or more); @index_result has 2 results
func.func @index_result(%x: tensor<2x3x8xf32>, %w: tensor<8x8xf32>) -> (tensor<2x3x8xf32>, index) {
  %y = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  %c = arith.constant 3 : index
  return %y, %c : tensor<2x3x8xf32>, index
}
