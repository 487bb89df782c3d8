// attn.rope through attn-to-loops: in place on its sole-use input (no
// workspace buffer, no copy), one task per (batch, block of 16 rows), the
// table a private constant global in turns (inv_freq / 2pi), the angle
// reduced with fptosi/sitofp and sin/cos as f64 polynomials (no math or
// libm call); per row the pairs' cos and sin into a stack buffer, then the
// pairs (i, i + r/2) of every head rotated in f32 vectors of the target's
// width (here 8 lanes for 2 pairs: masked loads and stores).
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
// CHECK: memref.store %{{.*}}, %[[CS:alloca[_0-9]*]]
// CHECK: vector.load %[[CS]]
// CHECK: vector.maskedload %arg0{{.*}} : memref<2x2x?x8xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK: vector.maskedstore %arg0
// CHECK-NOT: math.
// CHECK: return
func.func @rope_in_place(%q: tensor<2x2x?x8xf32>) -> tensor<2x2x?x8xf32> {
  %r = attn.rope %q {rotary_dim = 4 : i64, interleaved = false, inv_freq = array<f64: 1.0, 0.1>} : tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}

// -----

// Dynamic NTK: per task, the call's length L = T (no positions) against
// dynamic_from (8), log2(s) of s = 2 * L / 8 - 1 from the f64 exponent bits
// and an atanh series, and per pair the table entry times 2^(-2i/(r-2) *
// log2 s) built from exponent bits: still no math or libm call.
// RUN: attnc-opt %s --split-input-file --attnc-set-target=isa=x86-avx2 --attn-to-loops | FileCheck %s --check-prefix=DYN
// DYN-LABEL: func.func @rope_dynamic__avx2
// DYN: scf.forall
// DYN: arith.cmpi sgt, %{{.*}}, %c8
// DYN: arith.bitcast %{{.*}} : f64 to i64
// DYN: arith.shrui
// DYN: arith.shli
// DYN: arith.bitcast %{{.*}} : i64 to f64
// DYN-NOT: math.
// DYN: arith.truncf %{{.*}} : f64 to f32
// DYN-NOT: math.
// DYN: return
func.func @rope_dynamic(%q: tensor<2x2x?x8xf32>) -> tensor<2x2x?x8xf32> {
  %r = attn.rope %q {rotary_dim = 8 : i64, interleaved = false, inv_freq = array<f64: 1.0, 0.1, 0.01, 0.001>,
                     dynamic_factor = 2.0 : f64, dynamic_from = 8 : i64} : tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}

// -----

// Interleaved pairs (GPT-J: (2i, 2i+1)) stay one pair at a time.
// RUN: attnc-opt %s --split-input-file --attnc-set-target=isa=x86-avx512 --attn-to-loops | FileCheck %s --check-prefix=INTER
// INTER-LABEL: func.func @rope_interleaved__avx512
// INTER: scf.forall
// INTER-NOT: vector.
// INTER: memref.load %arg0
// INTER: memref.store %{{.*}}, %arg0
// INTER: return
func.func @rope_interleaved(%q: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %r = attn.rope %q {rotary_dim = 8 : i64, interleaved = true, inv_freq = array<f64: 1.0, 0.1, 0.01, 0.001>} : tensor<1x2x?x8xf32>
  return %r : tensor<1x2x?x8xf32>
}
