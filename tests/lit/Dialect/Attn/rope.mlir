// attn.rope: round trip, verifier diagnostics, and its lowering (in place
// on a sole-use input, a copy otherwise; the frequency table as a constant
// global in turns; the angle reduced and sin/cos by polynomials, no libm).
// RUN: attnc-opt %s --split-input-file | attnc-opt --split-input-file | FileCheck %s --check-prefix=RT
// RUN: attnc-opt %s --split-input-file --verify-diagnostics --mlir-print-op-generic -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE --allow-empty
// NONE-NOT: error

// RT-LABEL: func.func @round_trip
// RT: attn.rope %{{.*}} {attention_factor = 1.500000e+00 : f64, interleaved = false, inv_freq = array<f64: 1.000000e+00, 1.000000e-01>, long_from = 8 : i64, long_inv_freq = array<f64: 5.000000e-01, 5.000000e-02>, rotary_dim = 4 : i64} : tensor<?x2x?x8xf32>
// RT: attn.rope %{{.*}} at(%{{.*}} : tensor<?xi32>) {interleaved = true, inv_freq = array<f64: 1.000000e+00>, rotary_dim = 2 : i64} : tensor<?x2x?x8xf32>
func.func @round_trip(%q: tensor<?x2x?x8xf32>, %pos: tensor<?xi32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) {
  %a = attn.rope %q {rotary_dim = 4 : i64, interleaved = false, inv_freq = array<f64: 1.0, 0.1>,
                     long_inv_freq = array<f64: 0.5, 0.05>, long_from = 8 : i64,
                     attention_factor = 1.5 : f64} : tensor<?x2x?x8xf32>
  %b = attn.rope %q at(%pos : tensor<?xi32>) {rotary_dim = 2 : i64, interleaved = true,
                     inv_freq = array<f64: 1.0>} : tensor<?x2x?x8xf32>
  return %a, %b : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

// -----

// Dynamic NTK: the factor and max_position_embeddings print back.
// RT-LABEL: func.func @dynamic
// RT: attn.rope %{{.*}} {dynamic_factor = 2.000000e+00 : f64, dynamic_from = 4096 : i64, interleaved = false, inv_freq = array<f64: 1.000000e+00, 1.000000e-01>, rotary_dim = 4 : i64} : tensor<?x2x?x8xf32>
func.func @dynamic(%q: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  %a = attn.rope %q {rotary_dim = 4 : i64, interleaved = false, inv_freq = array<f64: 1.0, 0.1>,
                     dynamic_factor = 2.0 : f64, dynamic_from = 4096 : i64} : tensor<?x2x?x8xf32>
  return %a : tensor<?x2x?x8xf32>
}
