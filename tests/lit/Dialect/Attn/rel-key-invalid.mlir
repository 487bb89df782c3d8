// Verifier diagnostics of attn.sdpa's and attn.probs' relative_key table
// (rel_emb: BERT's distance embedding transposed, [head_dim, 2P - 1]).
// RUN: attnc-opt %s --split-input-file --verify-diagnostics

func.func @even(%q: tensor<?x2x?x8xf32>, %e: tensor<8x30xf32>) {
  // expected-error @+1 {{rel_emb 'tensor<8x30xf32>' must be [head_dim, 2P - 1] with head_dim 8}}
  %0 = attn.sdpa %q, %q, %q rel_emb(%e : tensor<8x30xf32>) {mask = #attn<mask none>, scale = 1.0 : f64} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
  return
}

// -----

func.func @head_dim(%q: tensor<?x2x?x8xf32>, %e: tensor<16x31xf32>) {
  // expected-error @+1 {{rel_emb 'tensor<16x31xf32>' must be [head_dim, 2P - 1] with head_dim 8}}
  %0 = attn.sdpa %q, %q, %q rel_emb(%e : tensor<16x31xf32>) {mask = #attn<mask none>, scale = 1.0 : f64} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
  return
}

// -----

func.func @untransposed(%q: tensor<?x2x?x8xf32>, %e: tensor<31x8xf32>) {
  // expected-error @+1 {{rel_emb 'tensor<31x8xf32>' must be [head_dim, 2P - 1] with head_dim 8}}
  %0 = attn.probs %q, %q rel_emb(%e : tensor<31x8xf32>) {mask = #attn<mask none>, scale = 1.0 : f64} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x?xf32>
  return
}

// -----

func.func @dynamic(%q: tensor<?x2x?x8xf32>, %e: tensor<8x?xf32>) {
  // expected-error @+1 {{rel_emb 'tensor<8x?xf32>' must be [head_dim, 2P - 1] with head_dim 8}}
  %0 = attn.sdpa %q, %q, %q rel_emb(%e : tensor<8x?xf32>) {mask = #attn<mask none>, scale = 1.0 : f64} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
  return
}

// -----

func.func @key_query_alone(%q: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{rel_key_query needs a rel_emb table}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask none>, scale = 1.0 : f64, rel_key_query = true} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
  return
}
