// BERT's relative_key in the kernels. x86: per key block, the table's
// columns of the block's distances are staged (ETb, [head_dim, MQ + NK +
// KR - 1 rounded to vectors]: AVX2 24 + 128 + 4 - 1 -> 160), whole vectors
// copied as vectors where they lie inside the table, the edges clamped one
// element at a time; in the score loop each query vector's distance
// columns against a key are one contiguous load, and with rel_key_query the
// term is (q' + scale' k) . E: k broadcast times scale * log2 e (0.25 *
// 1.4427 = 0.3607) plus q', times E, into the score's accumulator.
// On CUDA, per score, a loop over head_dim of fma(q' + scale k, E[d][r]).
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx2 --attn-to-loops | FileCheck %s
// RUN: attnc-opt %s --attnc-set-target=isa=cuda-sm90 --attn-to-loops | FileCheck %s --check-prefix=CUDA
// CHECK-LABEL: func.func @rk__avx2
// CHECK-SAME: %[[E:arg[0-9]+]]: memref<16x31xf32>
// CHECK: %[[ETB:.*]] = memref.alloca() : memref<16x160xf32>
// CHECK: scf.if
// CHECK: %[[V:.*]] = vector.load %[[E]][%{{.*}}, %{{.*}}] : memref<16x31xf32>, vector<8xf32>
// CHECK-NEXT: vector.store %[[V]], %[[ETB]]
// CHECK: } else {
// CHECK: memref.load %[[E]][%{{.*}}, %{{.*}}] : memref<16x31xf32>
// CHECK: %[[KB:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-NEXT: %[[QK:.*]] = vector.fma %[[KB]], %[[QV:.*]], %{{.*}} : vector<8xf32>
// CHECK: %[[EV:.*]] = vector.load %[[ETB]][%{{.*}}, %{{.*}}] : memref<16x160xf32>, vector<8xf32>
// CHECK-NEXT: %[[S:.*]] = arith.constant dense<0.360673755> : vector<8xf32>
// CHECK-NEXT: %[[T:.*]] = vector.fma %[[KB]], %[[S]], %[[QV]] : vector<8xf32>
// CHECK-NEXT: vector.fma %[[T]], %[[EV]], %[[QK]] : vector<8xf32>
// CUDA-LABEL: func.func @rk__cuda_sm90
// CUDA-SAME: %[[E:arg[0-9]+]]: memref<16x31xf32>
// CUDA: %[[EV:.*]] = memref.load %[[E]][%{{.*}}, %{{.*}}] : memref<16x31xf32>
// CUDA-NEXT: math.fma %{{.*}}, %[[EV]], %{{.*}} : f32
func.func @rk(%q: tensor<1x2x?x16xf32>, %e: tensor<16x31xf32>) -> tensor<1x2x?x16xf32> {
  %o = attn.sdpa %q, %q, %q rel_emb(%e : tensor<16x31xf32>) {mask = #attn<mask none>, scale = 0.25 : f64, rel_key_query = true}
      : tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32> -> tensor<1x2x?x16xf32>
  return %o : tensor<1x2x?x16xf32>
}
