// A head split whose head size is only known at run time: the copy's view
// of the source uses W / heads for the head size (and its stride).
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx2 --attn-to-loops | FileCheck %s
// CHECK-LABEL: func.func @dynamic_head_dim__avx2
// CHECK:         %[[W:.+]] = memref.dim %arg0, %c2
// CHECK:         %[[D:.+]] = arith.divui %[[W]], %c2
// CHECK:         memref.reinterpret_cast %arg0 to offset: [0], sizes: [2, 2, 4, %[[D]]], strides: [%{{.+}}, %[[D]], %[[W]], 1]
// CHECK:         scf.forall (%{{.+}}) in (%{{.+}})
// CHECK:           linalg.generic
func.func @dynamic_head_dim(%x: tensor<2x4x?xf32>) -> tensor<2x2x4x?xf32> {
  %h = attn.split_heads %x heads(2) : tensor<2x4x?xf32> -> tensor<2x2x4x?xf32>
  return %h : tensor<2x2x4x?xf32>
}
