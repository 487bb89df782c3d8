// attn-fuse-qkv on a function that is called: its signature must stay, so
// the weights are concatenated in the IR and every call remains valid.
// RUN: attnc-opt %s --attn-fuse-qkv | FileCheck %s

// CHECK-LABEL: func.func private @block
// CHECK-SAME:    (%{{.+}}: tensor<?x?x8xf32>, %{{.+}}: tensor<8x8xf32> {attn.weight = "wq"}, %{{.+}}: tensor<8x8xf32> {attn.weight = "wk"})
// CHECK:         tensor.concat dim(1)
// CHECK:         attn.linear {{.*}} -> tensor<?x?x16xf32>
func.func private @block(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32> {attn.weight = "wq"},
                         %wk: tensor<8x8xf32> {attn.weight = "wk"}) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %x, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %wk : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %q, %k : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @caller
// CHECK:         call @block(%{{.+}}, %{{.+}}, %{{.+}}) :
func.func @caller(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %q, %k = func.call @block(%x, %w, %w) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>)
  return %q : tensor<?x?x8xf32>
}
