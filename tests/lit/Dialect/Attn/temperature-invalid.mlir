// attn.temperature's verifier.
// RUN: attnc-opt %s -split-input-file -verify-diagnostics

func.func @rank(%q: tensor<2x?x16xf32>) -> tensor<2x?x16xf32> {
  // expected-error @+1 {{input must be [B, H, T, D]}}
  %r = attn.temperature %q {floor_scale = 8 : i64, attn_scale = 0.1 : f64} : tensor<2x?x16xf32>
  return %r : tensor<2x?x16xf32>
}

// -----

func.func @scale(%q: tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32> {
  // expected-error @+1 {{attn_scale must be non-negative and finite}}
  %r = attn.temperature %q {floor_scale = 8 : i64, attn_scale = -0.1 : f64} : tensor<2x4x?x16xf32>
  return %r : tensor<2x4x?x16xf32>
}

// -----

func.func @floor(%q: tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32> {
  // expected-error @+1 {{floor_scale}}
  %r = attn.temperature %q {floor_scale = 0 : i64, attn_scale = 0.1 : f64} : tensor<2x4x?x16xf32>
  return %r : tensor<2x4x?x16xf32>
}

// -----

func.func @positions(%q: tensor<2x4x?x16xf32>, %p: tensor<3xi32>) -> tensor<2x4x?x16xf32> {
  // expected-error @+1 {{positions 'tensor<3xi32>' must be [batch]}}
  %r = attn.temperature %q at(%p : tensor<3xi32>) {floor_scale = 8 : i64, attn_scale = 0.1 : f64} : tensor<2x4x?x16xf32>
  return %r : tensor<2x4x?x16xf32>
}
