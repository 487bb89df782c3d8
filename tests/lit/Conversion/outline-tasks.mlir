// attnc-outline-tasks: a lowered function with two phases becomes the
// workspace, task-count and task-range functions the C entry points call.
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx2 --attn-to-loops --attnc-outline-tasks | FileCheck %s
// CHECK-LABEL: func.func @f__avx2__ws(
// CHECK-SAME:    -> index
// CHECK-NOT:     scf.forall
// CHECK:         return %{{.+}} : index
// CHECK-LABEL: func.func @f__avx2__tasks(
// CHECK-SAME:    %[[P:[a-z0-9]+]]: index) -> index
// CHECK:         scf.index_switch %[[P]] -> index
// CHECK:         case 0 {
// CHECK:         case 1 {
// CHECK:         default {
// CHECK-LABEL: func.func @f__avx2__run(
// CHECK-SAME:    %[[PH:[a-z0-9]+]]: index, %[[LO:[a-z0-9]+]]: index, %[[HI:[a-z0-9]+]]: index)
// CHECK-SAME:    attn.phases = 2 : i64, attn.stack_bytes = 0 : i64
// CHECK-NOT:     scf.forall
// CHECK:         scf.index_switch %[[PH]]
// CHECK:         case 0 {
// CHECK:           scf.for %{{.+}} = %[[LO]] to %[[HI]]
// CHECK:         case 1 {
// CHECK:           scf.for %{{.+}} = %[[LO]] to %[[HI]]
// CHECK-NOT:     func.func @f__avx2(
func.func @f(%x: tensor<2x3x8xf32>, %w: tensor<8x8xf32> {attn.weight = "wq"},
             %w2: tensor<8x8xf32> {attn.weight = "wo"}) -> tensor<2x3x8xf32> {
  %y = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  %z = attn.linear %y, %w2 : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  return %z : tensor<2x3x8xf32>
}
