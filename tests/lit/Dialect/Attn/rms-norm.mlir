// attn.rms_norm: round trip and its lowering: in
// place on a sole-use input, one task per (batch, 16 rows), a sum of
// squares, one sqrt (no libm call) and the weight (+ offset) per element.
// (Verifier diagnostics: rms-norm-invalid.mlir; the CUDA kernel:
// tests/lit/Pipeline/cuda-real-models.test.)
// RUN: attnc-opt %s | FileCheck %s --check-prefix=RT
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx2 --attn-to-loops | FileCheck %s --check-prefix=LOW

// RT-LABEL: func.func @ok
// RT: attn.rms_norm %{{.*}}, %{{.*}} {eps = 9.9999999999999995E-7 : f64, weight_offset = 1.000000e+00 : f64} : tensor<2x2x?x8xf32>, tensor<8xf32>
// LOW-LABEL: func.func @ok__avx2
// LOW-NOT: memref.view
// LOW: arith.ceildivui %{{.*}}, %c16
// LOW: scf.forall
// LOW: math.sqrt %{{.*}} : f32
// LOW: arith.addf %{{.*}}, %cst{{.*}} : f32
// LOW: memref.store %{{.*}}, %arg0
func.func @ok(%q: tensor<2x2x?x8xf32>, %w: tensor<8xf32>) -> tensor<2x2x?x8xf32> {
  %r = attn.rms_norm %q, %w {eps = 1.0e-6 : f64, weight_offset = 1.0 : f64} : tensor<2x2x?x8xf32>, tensor<8xf32>
  return %r : tensor<2x2x?x8xf32>
}


// LayerNorm (center: the mean first, subtracted before the squares and the
// scaling), one weight per head (the weight's index h * 8 + d), a bias.
// RT-LABEL: func.func @layer
// RT: attn.rms_norm %{{.*}}, %{{.*}}, %{{.*}} {center = true, eps = 1.000000e-05 : f64, per_head_weight = true} : tensor<2x2x?x8xf32>, tensor<16xf32>, tensor<16xf32>
// LOW-LABEL: func.func @layer__avx2
// LOW: scf.forall
// LOW: arith.divf
// LOW: arith.subf
// LOW: arith.mulf
// LOW: math.sqrt %{{.*}} : f32
// LOW: arith.subf
// LOW: arith.muli %{{.*}}, %c8
// LOW: arith.addf
// LOW: memref.store %{{.*}}, %arg0
func.func @layer(%q: tensor<2x2x?x8xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x2x?x8xf32> {
  %r = attn.rms_norm %q, %w, %b {eps = 1.0e-5 : f64, center = true, per_head_weight = true} : tensor<2x2x?x8xf32>, tensor<16xf32>, tensor<16xf32>
  return %r : tensor<2x2x?x8xf32>
}

// No weight (Llama 4's L2 norm): the normalised value itself, no weight
// load and no multiply by one.
// RT-LABEL: func.func @no_weight
// RT: attn.rms_norm %{{.*}} {eps = 1.000000e-05 : f64} : tensor<2x2x?x8xf32>
// LOW-LABEL: func.func @no_weight__avx2
// LOW: scf.forall
// LOW: math.sqrt %{{.*}} : f32
// LOW: %[[N:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// LOW-NEXT: memref.store %[[N]], %arg0
func.func @no_weight(%q: tensor<2x2x?x8xf32>) -> tensor<2x2x?x8xf32> {
  %r = attn.rms_norm %q {eps = 1.0e-5 : f64} : tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}
