// Verifier diagnostics of attn.clip.
// RUN: attnc-opt %s --split-input-file --verify-diagnostics


func.func @clip_zero(%q: tensor<2x2x?x8xf32>) -> tensor<2x2x?x8xf32> {
  // expected-error @+1 {{limit must be positive and finite, found 0.000000e+00}}
  %r = attn.clip %q {limit = 0.0 : f64} : tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}

// -----

func.func @clip_rank(%q: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
  // expected-error @+1 {{input must be [B, H, T, D]}}
  %r = attn.clip %q {limit = 1.0 : f64} : tensor<2x?x8xf32>
  return %r : tensor<2x?x8xf32>
}
