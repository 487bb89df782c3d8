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
