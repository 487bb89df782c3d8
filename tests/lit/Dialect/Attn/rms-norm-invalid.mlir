// Verifier diagnostics of attn.rms_norm.
// RUN: attnc-opt %s --split-input-file --verify-diagnostics
func.func @width(%q: tensor<?x2x?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight has 8 entries, expected 16 (heads * head_dim)}}
  %0 = attn.rms_norm %q, %w {eps = 1.0e-6 : f64, across_heads = true} : tensor<?x2x?x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @head(%q: tensor<?x2x?x8xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{weight has 16 entries, expected 8 (head_dim)}}
  %0 = attn.rms_norm %q, %w {eps = 1.0e-6 : f64} : tensor<?x2x?x8xf32>, tensor<16xf32>
  return
}

// -----

func.func @eps(%q: tensor<?x2x?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive and finite, found 0}}
  %0 = attn.rms_norm %q, %w {eps = 0.0 : f64} : tensor<?x2x?x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @per_head(%q: tensor<?x2x?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight has 8 entries, expected 16 (heads * head_dim)}}
  %0 = attn.rms_norm %q, %w {eps = 1.0e-6 : f64, per_head_weight = true} : tensor<?x2x?x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @both(%q: tensor<?x2x?x8xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{across_heads and per_head_weight exclude each other}}
  %0 = attn.rms_norm %q, %w {eps = 1.0e-6 : f64, per_head_weight = true, across_heads = true} : tensor<?x2x?x8xf32>, tensor<16xf32>
  return
}

// -----

func.func @bias(%q: tensor<?x2x?x8xf32>, %w: tensor<8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{bias must have the weight's 8 entries, found 'tensor<16xf32>'}}
  %0 = attn.rms_norm %q, %w, %b {eps = 1.0e-6 : f64} : tensor<?x2x?x8xf32>, tensor<8xf32>, tensor<16xf32>
  return
}

// -----

func.func @bias_without_weight(%q: tensor<2x2x?x8xf32>, %b: tensor<8xf32>) -> tensor<2x2x?x8xf32> {
  // A lone second operand is the weight: a bias needs one before it, so
  // per_head_weight without a weight is what is left to refuse.
  // expected-error @+1 {{a bias or per_head_weight needs a weight}}
  %r = attn.rms_norm %q {eps = 1.0e-5 : f64, per_head_weight = true} : tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}
