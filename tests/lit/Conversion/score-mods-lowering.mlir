// The score modifiers in the x86 flash kernel: the slopes a constant table
// (times log2 e: scores are in log2 units), read once per task; applied to
// each computed score vector in registers before it is stored and masked:
// slope * (j - i') added, then soft-capping: C - 2C / (1 + 2^(k s)), k s
// clamped to 64, with the kernel's 2^x (C = cap in log2 units = 30 log2 e,
// k = 2 log2 e / C = 2/30); no math.tanh left for libm.
// The CUDA kernel applies the same ScoreMods per score in natural-log units
// (its q is scaled by `scale` only): the slopes as given, the soft-cap's
// exp(-2|s|/cap) from a scalar exp clamped at -87 (attnc-map-to-gpu's
// ex2.approx contract), the sign bit copied the same way.
// On AVX-512 the soft-cap needs no clamp: n = roundeven(k s), 2^r by the
// same polynomial, times 2^n by vscalefps (saturating to inf or 0), then
// C - 2C / (1 + E): 13 vector operations per 16 scores. Where |s| < C/4
// (that form cancels there: an error of about C 2^-24), every target takes
// s (1 + y^2 q(y^2)), y = s / C, tanh's odd series, chosen per score.
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx2 --attn-to-loops | FileCheck %s
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx512 --attn-to-loops | FileCheck %s --check-prefix=AVX512
// RUN: attnc-opt %s --attnc-set-target=isa=cuda-sm90 --attn-to-loops | FileCheck %s --check-prefix=CUDA
// CHECK: memref.global "private" constant @__attnc_alibi_slopes_{{[0-9A-F]+}} : memref<2xf64> = dense<[0.72134752044448169, 0.36067376022224085]>
// CHECK-LABEL: func.func @mods__avx2
// CHECK: scf.forall
// CHECK: memref.get_global @__attnc_alibi_slopes_
// CHECK: arith.sitofp %{{.*}} : vector<8xi32> to vector<8xf32>
// The soft-cap: s clamped to [-126, 64] / k, then 1 + 2^(k s) with k s - n
// and the last step in FMAs, then C - 2C / (1 + E).
// CHECK: %[[LO:.*]] = arith.constant dense<-1.890000e+03> : vector<8xf32>
// CHECK-NEXT: %[[HI:.*]] = arith.constant dense<9.600000e+02> : vector<8xf32>
// CHECK-NEXT: %[[MN:.*]] = arith.minimumf %{{.*}}, %[[HI]] : vector<8xf32>
// CHECK-NEXT: %[[SC:.*]] = arith.maximumf %[[MN]], %[[LO]] : vector<8xf32>
// CHECK: %[[T:.*]] = vector.fma %[[SC]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: %[[NEGN:.*]] = arith.subf %{{.*}}, %[[T]] : vector<8xf32>
// CHECK: vector.fma %[[SC]], %{{.*}}, %[[NEGN]] : vector<8xf32>
// CHECK: %[[E:.*]] = arith.bitcast %{{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NEXT: %[[DEN:.*]] = vector.fma %{{.*}}, %[[E]], %{{.*}} : vector<8xf32>
// CHECK-NEXT: %[[TWOC:.*]] = arith.constant dense<8.656170e+01> : vector<8xf32>
// CHECK-NEXT: %[[Q:.*]] = arith.divf %[[TWOC]], %[[DEN]] : vector<8xf32>
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<43.2808495> : vector<8xf32>
// CHECK-NEXT: %[[BIG:.*]] = arith.subf %[[C]], %[[Q]] : vector<8xf32>
// CHECK-NEXT: arith.select %{{.*}}, %{{.*}}, %[[BIG]] : vector<8xi1>, vector<8xf32>
// CHECK-NOT: math.tanh
// AVX512-LABEL: func.func @mods__avx512
// AVX512: %[[K:.*]] = arith.constant dense<0.0666666701> : vector<16xf32>
// AVX512-NEXT: %[[KS:.*]] = arith.mulf %{{.*}}, %[[K]] : vector<16xf32>
// AVX512-NEXT: %[[N:.*]] = math.roundeven %[[KS]] : vector<16xf32>
// AVX512-NEXT: %[[R:.*]] = arith.subf %[[KS]], %[[N]] : vector<16xf32>
// AVX512-COUNT-6: vector.fma %{{.*}}, %[[R]], %{{.*}} : vector<16xf32>
// AVX512: %[[E:.*]] = x86vector.avx512.mask.scalef %[[P:.*]], %[[N]], %[[P]], %{{.*}}, %{{.*}} : vector<16xf32>
// AVX512: %[[DEN:.*]] = arith.addf %[[E]], %{{.*}} : vector<16xf32>
// AVX512: %[[Q:.*]] = arith.divf %{{.*}}, %[[DEN]] : vector<16xf32>
// AVX512: %[[BIG:.*]] = arith.subf %{{.*}}, %[[Q]] : vector<16xf32>
// AVX512-NEXT: arith.select %{{.*}}, %{{.*}}, %[[BIG]] : vector<16xi1>, vector<16xf32>
// AVX512-NOT: math.tanh
// AVX512-NOT: arith.minimumf %{{.*}} : vector<16xf32>
// CUDA: memref.global "private" constant @__attnc_alibi_slopes_{{[0-9A-F]+}} : memref<2xf64> = dense<[5.000000e-01, 2.500000e-01]>
// CUDA-LABEL: func.func @mods__cuda_sm90
// CUDA: memref.get_global @__attnc_alibi_slopes_
// CUDA: scf.forall
// CUDA: arith.sitofp %{{.*}} : i64 to f32
// CUDA: %[[SMALL:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CUDA: arith.constant -0.0666666701 : f32
// CUDA: %[[LO:.*]] = arith.constant -8.700000e+01 : f32
// CUDA-NEXT: %[[X:.*]] = arith.maximumf %{{.*}}, %[[LO]] : f32
// CUDA-NEXT: math.exp %[[X]] : f32
// CUDA: arith.andi %{{.*}}, %{{.*}} : i32
// CUDA: arith.xori %{{.*}}, %{{.*}} : i32
// CUDA: arith.select %[[SMALL]], %{{.*}}, %{{.*}} : f32
// CUDA: } {mapping = [#gpu.thread<x>]}
// CUDA-NOT: math.tanh
func.func @mods(%q: tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32> {
  %o = attn.sdpa %q, %q, %q {mask = #attn<mask causal>, scale = 0.25 : f64, softcap = 30.0 : f64,
                              alibi_slopes = array<f64: 0.5, 0.25>}
      : tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32> -> tensor<1x2x?x16xf32>
  return %o : tensor<1x2x?x16xf32>
}
