// The chunked mask (Llama 4's attention_chunk_size, in `window`) in the x86
// flash kernel, through KeyVisibility: the walked keys start at the first
// row's chunk (floor(diag0 / C) * C), the unmasked ones at the last row's,
// and the element-wise mask of a boundary block keeps key j of the lane's
// row when floor(diag / C) * C <= j <= diag (a signed division of the
// diagonal vector by C). The CUDA kernels and the reference read the same
// rule (e2e/real-models.test, cuda-real-models.test: llama4_rope).
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx2 --attn-to-loops | FileCheck %s
// CHECK-LABEL: func.func @chunked__avx2
// CHECK: scf.forall
// CHECK: %[[C:.*]] = arith.constant 32 : index
// CHECK: %[[Q:.*]] = arith.divsi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[S:.*]] = arith.muli %[[Q]], %[[C]] : index
// CHECK-NEXT: arith.maxsi %[[S]]
// CHECK: arith.constant -1 : index
// CHECK: arith.divsi %{{.*}}, %{{.*}} : index
// CHECK: scf.for
// CHECK: %[[LE:.*]] = arith.cmpi sle, %[[J:.*]], %[[DIAG:.*]] : vector<8xi32>
// CHECK: %[[D:.*]] = arith.divsi %[[DIAG]], %{{.*}} : vector<8xi32>
// CHECK-NEXT: %[[F:.*]] = arith.muli %[[D]], %{{.*}} : vector<8xi32>
// CHECK-NEXT: %[[GE:.*]] = arith.cmpi sge, %[[J]], %[[F]] : vector<8xi32>
// CHECK-NEXT: arith.andi %[[LE]], %[[GE]] : vector<8xi1>
func.func @chunked(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>) -> tensor<1x4x?x16xf32> {
  %o = attn.sdpa %q, %k, %v {mask = #attn<mask chunked>, window = 32, scale = 0.25 : f64}
      : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32> -> tensor<1x4x?x16xf32>
  return %o : tensor<1x4x?x16xf32>
}
