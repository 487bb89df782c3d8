// attn.rope through attn-to-loops: in place on its sole-use input (no
// workspace buffer, no copy), one task per (batch, block of 16 rows), the
// table a private constant global in turns (inv_freq / 2pi), the angle
// reduced with fptosi/sitofp and sin/cos as f64 polynomials (no math or
// libm call), the pairs (i, i + r/2) rotated in f32 for every head.
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx2 --attn-to-loops | FileCheck %s
// CHECK: memref.global "private" constant @__attnc_rope_turns_{{[0-9A-F]+}} : memref<2xf64> = dense<[0.15915494309189535, 0.015915494309189534]>
// CHECK-LABEL: func.func @rope_in_place__avx2
// CHECK-NOT: memref.view
// CHECK: memref.get_global @__attnc_rope_turns_
// CHECK: arith.ceildivui %{{.*}}, %c16
// CHECK: scf.forall
// CHECK: arith.fptosi %{{.*}} : f64 to i64
// CHECK-NOT: math.
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: memref.load %arg0
// CHECK: memref.store %{{.*}}, %arg0
// CHECK-NOT: math.
// CHECK: return
func.func @rope_in_place(%q: tensor<2x2x?x8xf32>) -> tensor<2x2x?x8xf32> {
  %r = attn.rope %q {rotary_dim = 4 : i64, interleaved = false, inv_freq = array<f64: 1.0, 0.1>} : tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}
