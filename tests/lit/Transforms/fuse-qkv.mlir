// attn-fuse-qkv: projections of one input become one GEMM + slices.
// RUN: attnc-opt %s --split-input-file --attn-fuse-qkv | FileCheck %s
// Idempotent: a second run changes nothing.
// RUN: attnc-opt %s --split-input-file --attn-fuse-qkv --attn-fuse-qkv | FileCheck %s

// Weights as function arguments (what the front end emits): the arguments
// merge into one [K, Nq+Nk+Nv] argument filled at pack time.
// CHECK-LABEL: func.func @self_attention
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x?x32xf32> {attn.input = "x"},
// CHECK-SAME:     %[[W:[^:]+]]: tensor<32x64xf32> {attn.concat_dim = 1 : i64, attn.concat_of = ["wq", "wk", "wv"], attn.weight = "wq|wk|wv"},
// CHECK-SAME:     %[[B:[^:]+]]: tensor<64xf32> {attn.concat_dim = 0 : i64, attn.concat_of = ["bq", "bk", "bv"], attn.weight = "bq|bk|bv"})
// CHECK-NOT:     tensor.concat
// CHECK:         %[[QKV:.+]] = attn.linear %[[X]], %[[W]], %[[B]] : {{.*}} -> tensor<?x?x64xf32>
// CHECK-NOT:     attn.linear
// CHECK-DAG:     %[[Q:.+]] = attn.slice %[[QKV]][0, 32]
// CHECK-DAG:     %[[K:.+]] = attn.slice %[[QKV]][32, 16]
// CHECK-DAG:     %[[V:.+]] = attn.slice %[[QKV]][48, 16]
// CHECK:         return %[[Q]], %[[K]], %[[V]]
func.func @self_attention(%x: tensor<?x?x32xf32> {attn.input = "x"},
    %wq: tensor<32x32xf32> {attn.weight = "wq"}, %bq: tensor<32xf32> {attn.weight = "bq"},
    %wk: tensor<32x16xf32> {attn.weight = "wk"}, %bk: tensor<16xf32> {attn.weight = "bk"},
    %wv: tensor<32x16xf32> {attn.weight = "wv"}, %bv: tensor<16xf32> {attn.weight = "bv"})
    -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  %q = attn.linear %x, %wq, %bq : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %k = attn.linear %x, %wk, %bk : (tensor<?x?x32xf32>, tensor<32x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %v = attn.linear %x, %wv, %bv : (tensor<?x?x32xf32>, tensor<32x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %q, %k, %v : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// -----

// Weights computed in the function (or used twice) cannot move to pack
// time: the concatenation stays in the IR.
// CHECK-LABEL: func.func @computed_weights
// CHECK:         %[[W:.+]] = tensor.concat dim(1) %{{.+}}, %{{.+}} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x16xf32>
// CHECK:         %[[QK:.+]] = attn.linear %{{.+}}, %[[W]] : {{.*}} -> tensor<?x?x16xf32>
// CHECK:         attn.slice %[[QK]][0, 8]
// CHECK:         attn.slice %[[QK]][8, 8]
// CHECK-NOT:     attn.linear
func.func @computed_weights(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %w2 = attn.scale %w by 2.0 : tensor<8x8xf32>
  %q = attn.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %w2 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %q, %k : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Cross-attention: queries read the decoder state, keys and values the
// encoder output. Only K and V share an input: they fuse, Q stays alone.
// CHECK-LABEL: func.func @cross_attention
// CHECK:         attn.linear %arg0, %{{.+}} : {{.*}} -> tensor<?x?x8xf32>
// CHECK:         %[[KV:.+]] = attn.linear %arg1, %{{.+}} : {{.*}} -> tensor<?x?x16xf32>
// CHECK-NOT:     attn.linear
func.func @cross_attention(%dec: tensor<?x?x8xf32>, %enc: tensor<?x?x8xf32>,
    %wq: tensor<8x8xf32> {attn.weight = "wq"}, %wk: tensor<8x8xf32> {attn.weight = "wk"},
    %wv: tensor<8x8xf32> {attn.weight = "wv"}) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %dec, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %enc, %wk : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %enc, %wv : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %q, %k, %v : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Different inputs everywhere: nothing fuses.
// CHECK-LABEL: func.func @different_inputs
// CHECK-COUNT-2: attn.linear
// CHECK-NOT:     attn.slice
func.func @different_inputs(%a: tensor<?x?x8xf32>, %b: tensor<?x?x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %a, %w1 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %b, %w2 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %q, %k : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Different weight dtypes (f32 vs f16 weights) do not fuse.
// CHECK-LABEL: func.func @different_dtypes
// CHECK-COUNT-2: attn.linear
// CHECK-NOT:     attn.slice
// CHECK-NOT:     tensor.concat
func.func @different_dtypes(%x: tensor<?x?x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf16>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %x, %w1 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %w2 : (tensor<?x?x8xf32>, tensor<8x8xf16>) -> tensor<?x?x8xf32>
  return %q, %k : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Biased and unbiased projections do not fuse.
// CHECK-LABEL: func.func @bias_mismatch
// CHECK-COUNT-2: attn.linear
// CHECK-NOT:     attn.slice
func.func @bias_mismatch(%x: tensor<?x?x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>, %b: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %x, %w1, %b : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %w2 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %q, %k : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
