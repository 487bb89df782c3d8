// attnc-plan-memory refuses a packed layout (attn.panel, attn.pairs) that
// its kernels would not read as attnc-encode-weights chooses it.
// RUN: attnc-opt %s --split-input-file --verify-diagnostics --attnc-set-target=isa=x86-avx2 --attnc-plan-memory

// expected-error @+1 {{attnc-plan-memory: argument 1 of @wrong_panel__avx2 has attn.panel = 16 but its target's panel is 32 (attnc-encode-weights chooses the layout)}}
func.func @wrong_panel(%x: tensor<2x3x8xf32> {attn.input = "x"},
                       %w: tensor<8x24xf32> {attn.weight = "wq", attn.panel = 16 : index})
    -> tensor<2x3x24xf32> {
  %q = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x24xf32>) -> tensor<2x3x24xf32>
  return %q : tensor<2x3x24xf32>
}

// -----

// expected-error @+1 {{attnc-plan-memory: argument 1 of @not_linear__avx2 has attn.panel = 32 but is not only the weight or bias of attn.linear ops (attnc-encode-weights chooses the layout)}}
func.func @not_linear(%x: tensor<2x2x3x8xf32> {attn.input = "x"},
                      %g: tensor<8xf32> {attn.weight = "q_norm", attn.panel = 32 : index})
    -> tensor<2x2x3x8xf32> {
  %n = attn.rms_norm %x, %g {eps = 1.0e-6 : f64, weight_offset = 0.0 : f64} : tensor<2x2x3x8xf32>, tensor<8xf32>
  return %n : tensor<2x2x3x8xf32>
}

// -----

// expected-error @+1 {{attnc-plan-memory: argument 1 of @no_pairs__avx2: attn.pairs goes with attn.panel on a bf16 matrix, and such a matrix needs it (attnc-encode-weights)}}
func.func @no_pairs(%x: tensor<2x3x8xf32> {attn.input = "x"},
                    %w: tensor<8x24xbf16> {attn.weight = "wk", attn.panel = 32 : index})
    -> tensor<2x3x24xf32> {
  %k = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x24xbf16>) -> tensor<2x3x24xf32>
  return %k : tensor<2x3x24xf32>
}
