// Verifier diagnostics of attn.sdpa's and attn.probs' score modifiers.
// RUN: attnc-opt %s --split-input-file --verify-diagnostics

func.func @cap(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{softcap must be positive and finite, found -1}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask causal>, scale = 1.0 : f64, softcap = -1.0 : f64} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
  return
}

// -----

func.func @slopes(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{alibi_slopes has 3 entries, expected one per query head (2)}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask causal>, scale = 1.0 : f64, alibi_slopes = array<f64: 0.5, 0.25, 0.125>} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
  return
}

// -----

func.func @before(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{alibi_before_scale needs alibi_slopes}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask causal>, scale = 1.0 : f64, alibi_before_scale = true} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
  return
}

// -----

func.func @probs(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{alibi_slopes has 1 entries, expected one per query head (2)}}
  %0 = attn.probs %q, %q {mask = #attn<mask causal>, scale = 1.0 : f64, alibi_slopes = array<f64: 0.5>} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x?xf32>
  return
}
