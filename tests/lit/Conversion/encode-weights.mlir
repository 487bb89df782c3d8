// attn-to-loops is two passes: attnc-encode-weights chooses each weight
// argument's packed layout (attn.panel = the target's panel, attn.pairs for a
// bf16 matrix) and records it on the tensor function; attnc-plan-memory
// gives the argument that layout's memref type (and attn.logical_shape).
// RUN: attnc-opt %s --split-input-file --attnc-set-target=isa=x86-avx2 --attnc-encode-weights | FileCheck %s --check-prefix=ENC
// RUN: attnc-opt %s --split-input-file --attnc-set-target=isa=x86-avx2 --attnc-encode-weights --attnc-plan-memory | FileCheck %s --check-prefix=MEM
// Without the encoding, plan-memory keeps every weight row-major (the
// linalg linear of an unpacked weight).
// RUN: attnc-opt %s --split-input-file --attnc-set-target=isa=x86-avx2 --attnc-plan-memory | FileCheck %s --check-prefix=RAW

// ENC-LABEL: func.func @proj__avx2
// ENC-SAME:    %{{.+}}: tensor<2x3x8xf32> {attn.input = "x"}
// ENC-SAME:    %{{.+}}: tensor<8x24xf32> {attn.panel = 32 : index, attn.weight = "wq"}
// ENC-SAME:    %{{.+}}: tensor<24xf32> {attn.panel = 32 : index, attn.weight = "bq"}
// ENC-SAME:    %{{.+}}: tensor<8x24xbf16> {attn.pairs, attn.panel = 32 : index, attn.weight = "wk"}
// ENC-SAME:    %{{.+}}: tensor<8xf32> {attn.weight = "q_norm"}
// MEM-LABEL: func.func @proj__avx2
// MEM-SAME:    %{{.+}}: memref<2x3x8xf32> {attn.input = "x"}
// MEM-SAME:    %{{.+}}: memref<1x8x32xf32> {attn.logical_shape = array<i64: 8, 24>, attn.panel = 32 : index, attn.weight = "wq"}
// MEM-SAME:    %{{.+}}: memref<32xf32> {attn.logical_shape = array<i64: 24>, attn.panel = 32 : index, attn.weight = "bq"}
// MEM-SAME:    %{{.+}}: memref<1x4x64xbf16> {attn.logical_shape = array<i64: 8, 24>, attn.pairs, attn.panel = 32 : index, attn.weight = "wk"}
// MEM-SAME:    %{{.+}}: memref<8xf32> {attn.weight = "q_norm"}
// RAW-LABEL: func.func @proj__avx2
// RAW-SAME:    memref<8x24xf32> {attn.weight = "wq"}
// RAW-SAME:    memref<24xf32> {attn.weight = "bq"}
// RAW-SAME:    memref<8x24xbf16> {attn.weight = "wk"}
func.func @proj(%x: tensor<2x3x8xf32> {attn.input = "x"},
                %w: tensor<8x24xf32> {attn.weight = "wq"},
                %b: tensor<24xf32> {attn.weight = "bq"},
                %wk: tensor<8x24xbf16> {attn.weight = "wk"},
                %g: tensor<8xf32> {attn.weight = "q_norm"},
                %h: tensor<2x2x3x8xf32> {attn.input = "x_kv"})
    -> (tensor<2x3x24xf32>, tensor<2x3x24xf32>, tensor<2x2x3x8xf32>) {
  %q = attn.linear %x, %w, %b : (tensor<2x3x8xf32>, tensor<8x24xf32>, tensor<24xf32>) -> tensor<2x3x24xf32>
  %k = attn.linear %x, %wk : (tensor<2x3x8xf32>, tensor<8x24xbf16>) -> tensor<2x3x24xf32>
  // A weight the kernels read other than as a linear's stays row-major.
  %n = attn.rms_norm %h, %g {eps = 1.0e-6 : f64, weight_offset = 0.0 : f64} : tensor<2x2x3x8xf32>, tensor<8xf32>
  return %q, %k, %n : tensor<2x3x24xf32>, tensor<2x3x24xf32>, tensor<2x2x3x8xf32>
}
