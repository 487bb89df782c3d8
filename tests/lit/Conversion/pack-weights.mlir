// attnc-pack-weights: the pack plan and @NAME_pack, from the module's
// attn.weight_storage and the lowered function's weight arguments alone.
// Here the storage is torch's in_proj_weight [3*8, 8] ([out, in]: each role
// is a row band, read transposed) and out_proj.weight [8, 8]; the kernel
// reads one fused [8, 24] QKV weight and W_O, both in 32-column panels.
// RUN: attnc-opt %s --split-input-file --verify-diagnostics --attnc-set-target=isa=x86-avx2 --attn-to-loops --attnc-outline-tasks --attnc-pack-weights --canonicalize | FileCheck %s

// Packed: QKV, one panel of 8 x 32 floats at offset 0; W_O, one at 256.
// Element (k, n) of a panelled [K, N] weight is at
// (n / 32) * K * 32 + k * 32 + n % 32.
// CHECK-LABEL: func.func @f_pack(
// CHECK-SAME:    %[[IN:[a-z0-9]+]]: memref<24x8xf32>, %[[OUT:[a-z0-9]+]]: memref<8x8xf32>, %[[P:[a-z0-9]+]]: memref<512xf32>)
// CHECK-SAME:    attributes {attn.pack}
// wq(k, n) = in_proj_weight[n][k], packed column n:
// CHECK:       scf.for %[[K:[a-z0-9]+]] =
// CHECK:         scf.for %[[N:[a-z0-9]+]] =
// CHECK:           %[[V:.+]] = memref.load %[[IN]][%[[N]], %[[K]]]
// CHECK:           arith.divui %[[N]], %c32
// CHECK:           memref.store %[[V]], %[[P]]
// wk(k, n) = in_proj_weight[8 + n][k], packed column 8 + n:
// CHECK:       scf.for %[[K:[a-z0-9]+]] =
// CHECK:         scf.for %[[N:[a-z0-9]+]] =
// CHECK:           %[[R:.+]] = arith.addi %[[N]], %c8
// CHECK:           memref.load %[[IN]][%[[R]], %[[K]]]
// wv: rows 16 + n.
// CHECK:           arith.addi %{{.+}}, %c16
// CHECK:           memref.load %[[IN]]
// wo(k, n) = out_proj.weight[n][k], at offset 256:
// CHECK:           memref.load %[[OUT]][%[[N:[a-z0-9]+]], %[[K:[a-z0-9]+]]]
// CHECK:           %[[AT:.+]] = arith.addi %{{.+}}, %c256
// CHECK:           memref.store %{{.+}}, %[[P]][%[[AT]]]
// CHECK-NOT:     memref.load %[[IN]]
// CHECK:       {{^// -+$}}
module attributes {attn.spec_name = "f", attn.weight_storage = [
    {name = "in_proj_weight", shape = array<i64: 24, 8>, transposed = true,
     roles = {wq = array<i64: 0, 0, 8, 8>, wk = array<i64: 8, 0, 8, 8>, wv = array<i64: 16, 0, 8, 8>}},
    {name = "out_proj.weight", shape = array<i64: 8, 8>, transposed = true,
     roles = {wo = array<i64: 0, 0, 8, 8>}}]} {
  func.func @f(%x: tensor<2x3x8xf32> {attn.input = "x"},
               %w: tensor<8x24xf32> {attn.weight = "wq|wk|wv", attn.concat_of = ["wq", "wk", "wv"], attn.concat_dim = 1 : i64},
               %wo: tensor<8x8xf32> {attn.weight = "wo"}) -> tensor<2x3x8xf32> {
    %qkv = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x24xf32>) -> tensor<2x3x24xf32>
    %q = attn.view %qkv [2, 3, 8] strides [72, 24, 1] offset 0 : tensor<2x3x24xf32> -> tensor<2x3x8xf32>
    %y = attn.linear %q, %wo : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    return %y : tensor<2x3x8xf32>
  }
}

// -----

// expected-error @+1 {{attn.weight_storage: the module does not say how the weights are stored}}
module attributes {attn.spec_name = "g"} {
  func.func @g(%x: tensor<2x3x8xf32> {attn.input = "x"}, %w: tensor<8x8xf32> {attn.weight = "wq"}) -> tensor<2x3x8xf32> {
    %y = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    return %y : tensor<2x3x8xf32>
  }
}

// -----

// expected-error @+1 {{attn.weight_storage: role 'wq' lies outside w or is given twice}}
module attributes {attn.spec_name = "h", attn.weight_storage = [
    {name = "w", shape = array<i64: 8, 8>, transposed = false, roles = {wq = array<i64: 0, 4, 8, 8>}}]} {
  func.func @h(%x: tensor<2x3x8xf32> {attn.input = "x"}, %w: tensor<8x8xf32> {attn.weight = "wq"}) -> tensor<2x3x8xf32> {
    %y = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    return %y : tensor<2x3x8xf32>
  }
}

// -----

module attributes {attn.spec_name = "k", attn.weight_storage = [
    {name = "w", shape = array<i64: 8, 8>, transposed = false, roles = {wq = array<i64: 0, 0, 8, 8>}}]} {
  // expected-error @+1 {{no storage tensor provides weight role 'wo'}}
  func.func @k(%x: tensor<2x3x8xf32> {attn.input = "x"}, %w: tensor<8x8xf32> {attn.weight = "wo"}) -> tensor<2x3x8xf32> {
    %y = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    return %y : tensor<2x3x8xf32>
  }
}

// -----

// A transposed ([out, in]) tensor: wk's 8 output rows start at row 12 of 16.
// expected-error @+1 {{attn.weight_storage: role 'wk' lies outside in_proj_weight or is given twice}}
module attributes {attn.spec_name = "t", attn.weight_storage = [
    {name = "in_proj_weight", shape = array<i64: 16, 8>, transposed = true,
     roles = {wq = array<i64: 0, 0, 8, 8>, wk = array<i64: 12, 0, 8, 8>}}]} {
  func.func @t(%x: tensor<2x3x8xf32> {attn.input = "x"}, %w: tensor<8x8xf32> {attn.weight = "wq"}) -> tensor<2x3x8xf32> {
    %y = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    return %y : tensor<2x3x8xf32>
  }
}

// -----

// A weight role needs a 2-D tensor, a bias role a 1-D one.
// expected-error @+1 {{attn.weight_storage: role 'wq' lies outside b or is given twice}}
module attributes {attn.spec_name = "u", attn.weight_storage = [
    {name = "b", shape = array<i64: 8>, transposed = false, roles = {wq = array<i64: 0, 0, 1, 8>}}]} {
  func.func @u(%x: tensor<2x3x8xf32> {attn.input = "x"}, %w: tensor<8x8xf32> {attn.weight = "wq"}) -> tensor<2x3x8xf32> {
    %y = attn.linear %x, %w : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    return %y : tensor<2x3x8xf32>
  }
}

// -----

// attn.logical_shape on an argument that is not in the panel layout (no
// attn.panel; here a lowered function written by hand): refused, never a
// pack function writing past it. (The entry table names the function, as
// attnc-outline-tasks would.)
module attributes {attn.spec_name = "v", attn.entry_points = #attn.entry_points<paths = [
    #attn.code_path<entry = "forward", isa = "x86-avx2", ws = @v__avx2__ws, tasks = @v__avx2__tasks>]>,
    attn.weight_storage = [
    {name = "w", shape = array<i64: 8, 8>, transposed = false, roles = {wq = array<i64: 0, 0, 8, 8>}}]} {
  // expected-error @+1 {{weight argument 0 (wq): attn.logical_shape needs attn.panel and the panel layout's memref shape}}
  func.func @v__avx2__ws(%w: memref<8x8xf32> {attn.weight = "wq", attn.logical_shape = array<i64: 8, 8>}) -> index {
    %c0 = arith.constant 0 : index
    return %c0 : index
  }
  func.func @v__avx2__tasks(%phase: index) -> index {
    %c0 = arith.constant 0 : index
    return %c0 : index
  }
}
