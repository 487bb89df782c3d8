// Verifier diagnostics of attn.rope.
// RUN: attnc-opt %s --split-input-file --verify-diagnostics

func.func @odd(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{rotary_dim 3 must be even and at most head_dim 8}}
  %0 = attn.rope %q {rotary_dim = 3 : i64, interleaved = false, inv_freq = array<f64: 1.0>} : tensor<?x2x?x8xf32>
  return
}

// -----

func.func @wide(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{rotary_dim 10 must be even and at most head_dim 8}}
  %0 = attn.rope %q {rotary_dim = 10 : i64, interleaved = false, inv_freq = array<f64: 1.0, 1.0, 1.0, 1.0, 1.0>} : tensor<?x2x?x8xf32>
  return
}

// -----

func.func @table(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{inv_freq has 1 entries, expected rotary_dim / 2 = 2}}
  %0 = attn.rope %q {rotary_dim = 4 : i64, interleaved = false, inv_freq = array<f64: 1.0>} : tensor<?x2x?x8xf32>
  return
}

// -----

func.func @long_table(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{long_inv_freq has 3 entries, expected rotary_dim / 2 = 2}}
  %0 = attn.rope %q {rotary_dim = 4 : i64, interleaved = false, inv_freq = array<f64: 1.0, 2.0>, long_inv_freq = array<f64: 1.0, 2.0, 3.0>} : tensor<?x2x?x8xf32>
  return
}

// -----

func.func @negative(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{inv_freq entries must be finite and non-negative, found -1}}
  %0 = attn.rope %q {rotary_dim = 2 : i64, interleaved = false, inv_freq = array<f64: -1.0>} : tensor<?x2x?x8xf32>
  return
}

// -----

func.func @factor(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{attention_factor must be positive and finite, found 0}}
  %0 = attn.rope %q {rotary_dim = 2 : i64, interleaved = false, inv_freq = array<f64: 1.0>, attention_factor = 0.0 : f64} : tensor<?x2x?x8xf32>
  return
}

// -----

func.func @rank(%q: tensor<?x?x8xf32>) {
  // expected-error @+1 {{input must be [B, H, T, D] with a static D}}
  %0 = attn.rope %q {rotary_dim = 2 : i64, interleaved = false, inv_freq = array<f64: 1.0>} : tensor<?x?x8xf32>
  return
}

// -----

func.func @positions(%q: tensor<2x2x?x8xf32>, %p: tensor<3xi32>) {
  // expected-error @+1 {{positions 'tensor<3xi32>' must be [batch] for input 'tensor<2x2x?x8xf32>'}}
  %0 = attn.rope %q at(%p : tensor<3xi32>) {rotary_dim = 2 : i64, interleaved = false, inv_freq = array<f64: 1.0>} : tensor<2x2x?x8xf32>
  return
}

// -----

func.func @dynamic_negative(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{dynamic_factor must be non-negative and finite, found -2}}
  %0 = attn.rope %q {rotary_dim = 4 : i64, interleaved = false, inv_freq = array<f64: 1.0, 0.1>, dynamic_factor = -2.0 : f64, dynamic_from = 8 : i64} : tensor<?x2x?x8xf32>
  return
}

// -----

func.func @dynamic_narrow(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{dynamic_factor needs dynamic_from >= 1, rotary_dim >= 4 and no long_inv_freq, found dynamic_from 8, rotary_dim 2}}
  %0 = attn.rope %q {rotary_dim = 2 : i64, interleaved = false, inv_freq = array<f64: 1.0>, dynamic_factor = 2.0 : f64, dynamic_from = 8 : i64} : tensor<?x2x?x8xf32>
  return
}

// -----

func.func @dynamic_from_alone(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{dynamic_from needs a dynamic_factor}}
  %0 = attn.rope %q {rotary_dim = 4 : i64, interleaved = false, inv_freq = array<f64: 1.0, 0.1>, dynamic_from = 8 : i64} : tensor<?x2x?x8xf32>
  return
}
