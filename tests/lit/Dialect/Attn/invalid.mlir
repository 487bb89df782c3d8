// Verifier diagnostics of the attn ops.
// RUN: attnc-opt %s --split-input-file --verify-diagnostics

func.func @linear_k(%x: tensor<?x?x64xf32>, %w: tensor<32x16xf32>) {
  // expected-error @+1 {{input feature size 64 does not match weight rows (K) 32}}
  %0 = attn.linear %x, %w : (tensor<?x?x64xf32>, tensor<32x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @linear_n(%x: tensor<?x?x64xf32>, %w: tensor<64x16xf32>) {
  // expected-error @+1 {{result feature size 32 does not match weight columns (N) 16}}
  %0 = attn.linear %x, %w : (tensor<?x?x64xf32>, tensor<64x16xf32>) -> tensor<?x?x32xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x?x64xf32>, %w: tensor<64x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias must be [N] = [16], found 'tensor<8xf32>'}}
  %0 = attn.linear %x, %w, %b : (tensor<?x?x64xf32>, tensor<64x16xf32>, tensor<8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @linear_rank(%x: tensor<?x?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{weight must be [K, N] (rank 2), found rank 1}}
  %0 = attn.linear %x, %w : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @slice_oob(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{slice [48, 80) exceeds the last dimension (64)}}
  %0 = attn.slice %x [48, 32] : tensor<?x?x64xf32> -> tensor<?x?x32xf32>
  return
}

// -----

func.func @split_divide(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{heads (5) must divide the model dimension (64)}}
  %0 = attn.split_heads %x heads(5) : tensor<?x?x64xf32> -> tensor<?x5x?x12xf32>
  return
}

// -----

func.func @split_headdim(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{result head size 32 differs from 64 / 4}}
  %0 = attn.split_heads %x heads(4) : tensor<?x?x64xf32> -> tensor<?x4x?x32xf32>
  return
}

// -----

func.func @merge_width(%x: tensor<?x4x?x16xf32>) {
  // expected-error @+1 {{result model dimension 32 differs from heads * head_dim = 64}}
  %0 = attn.merge_heads %x : tensor<?x4x?x16xf32> -> tensor<?x?x32xf32>
  return
}

// -----

func.func @sdpa_gqa(%q: tensor<1x6x4x8xf32>, %k: tensor<1x4x4x8xf32>) {
  // expected-error @+1 {{kv heads (4) must divide query heads (6)}}
  %0 = attn.sdpa %q, %k, %k {mask = #attn<mask none>, scale = 1.0 : f64}
      : tensor<1x6x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x6x4x8xf32>
  return
}

// -----

func.func @sdpa_headdim(%q: tensor<1x4x4x8xf32>, %k: tensor<1x4x4x16xf32>) {
  // expected-error @+1 {{head_dim differs: query 8, key 16, value 16}}
  %0 = attn.sdpa %q, %k, %k {mask = #attn<mask none>, scale = 1.0 : f64}
      : tensor<1x4x4x8xf32>, tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32> -> tensor<1x4x4x8xf32>
  return
}

// -----

func.func @sdpa_kv(%q: tensor<1x4x4x8xf32>, %k: tensor<1x4x4x8xf32>, %v: tensor<1x4x5x8xf32>) {
  // expected-error @+1 {{must agree on heads and sequence}}
  %0 = attn.sdpa %q, %k, %v {mask = #attn<mask none>, scale = 1.0 : f64}
      : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x5x8xf32> -> tensor<1x4x4x8xf32>
  return
}

// -----

func.func @sdpa_layout(%q: tensor<1x4x3x8xf32>) {
  // expected-error @+1 {{does not match query 'tensor<1x4x3x8xf32>' in layout bthd}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask none>, scale = 1.0 : f64, layout = #attn<layout bthd>}
      : tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return
}

// -----

func.func @sdpa_window(%q: tensor<1x4x3x8xf32>) {
  // expected-error @+1 {{mask sliding_window needs a positive window attribute}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask sliding_window>, scale = 1.0 : f64}
      : tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return
}

// -----

func.func @sdpa_window_nomask(%q: tensor<1x4x3x8xf32>) {
  // expected-error @+1 {{window is only valid with a sliding_window or chunked mask}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask causal>, window = 4, scale = 1.0 : f64}
      : tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return
}

// -----

func.func @sdpa_window_padding(%q: tensor<1x4x3x8xf32>) {
  // expected-error @+1 {{mask sliding_window_padding needs a kv_lens operand}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask sliding_window_padding>, window = 4, scale = 1.0 : f64}
      : tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return
}

// -----

func.func @sdpa_chunk_padding(%q: tensor<1x4x3x8xf32>, %l: tensor<1xi32>) {
  // expected-error @+1 {{mask chunked_padding needs a positive window attribute (the chunk size)}}
  %0 = attn.sdpa %q, %q, %q kv_lens(%l : tensor<1xi32>) {mask = #attn<mask chunked_padding>, scale = 1.0 : f64}
      : tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return
}

// -----

func.func @sdpa_padding(%q: tensor<1x4x3x8xf32>) {
  // expected-error @+1 {{mask padding needs a kv_lens operand}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask padding>, scale = 1.0 : f64}
      : tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return
}

// -----

func.func @sdpa_scale(%q: tensor<1x4x3x8xf32>) {
  // expected-error @+1 {{scale must be positive, found -1}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask none>, scale = -1.0 : f64}
      : tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return
}

// -----

func.func @view_size(%x: tensor<2x3x8xf32>) {
  // expected-error @+1 {{size 1 (4) differs from result dimension 3}}
  %0 = attn.view %x[2, 4, 8] strides [24, 8, 1] offset 0 : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  return
}

// -----

func.func @view_oob(%x: tensor<2x3x8xf32>) {
  // expected-error @+1 {{view reaches element 48 of a source with 48 elements}}
  %0 = attn.view %x[2, 3, 8] strides [24, 8, 1] offset 1 : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  return
}

// -----

func.func @view_count(%x: tensor<2x3x8xf32>) {
  // expected-error @+1 {{expects 3 sizes and strides (result rank), found 2 sizes and 2 strides}}
  %0 = attn.view %x[2, 24] strides [24, 1] offset 0 : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  return
}

// -----

// The bound check of a static view must not wrap: (8 - 1) * (2^63 - 1)
// overflows int64 and used to come out "in bounds".
func.func @view_stride_overflow(%x: tensor<64xf32>) {
  // expected-error @+1 {{view's last element (offset + sum of (size - 1) * stride) overflows int64}}
  %0 = attn.view %x[8] strides [9223372036854775807] offset 0 : tensor<64xf32> -> tensor<8xf32>
  return
}

// -----

// The offset plus one in-range step overflows too.
func.func @view_offset_overflow(%x: tensor<64xf32>) {
  // expected-error @+1 {{view's last element (offset + sum of (size - 1) * stride) overflows int64}}
  %0 = attn.view %x[2] strides [2] offset 9223372036854775807 : tensor<64xf32> -> tensor<2xf32>
  return
}

// -----

// Just past the end is still reported with the element it reaches.
func.func @view_past_end(%x: tensor<64xf32>) {
  // expected-error @+1 {{view reaches element 64 of a source with 64 elements}}
  %0 = attn.view %x[8] strides [9] offset 1 : tensor<64xf32> -> tensor<8xf32>
  return
}

// -----

// With dynamic rows, the columns are still checked: a head view of the
// fused [q | k | v] rows (192 columns) one column too far right reads the
// next row's first element (the head merge of [?, ?, 4, 16] has rows of
// 64: a view of 64 columns is in them).
func.func @view_dynamic_column(%x: tensor<?x?x192xf32>, %b: index, %t: index, %s: index) {
  // expected-error @+1 {{view reaches column 192 of the source's rows of 192 elements}}
  %0 = attn.view %x[%b, 4, %t, 16] strides [%s, 16, 192, 1] offset 129 : tensor<?x?x192xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

func.func @view_dynamic_row(%x: tensor<?x?x192xf32>, %b: index, %t: index, %s: index) {
  // expected-error @+1 {{offset 1000 starts past the first row (192 elements) of a source with dynamic rows}}
  %0 = attn.view %x[%b, 4, %t, 16] strides [%s, 16, 192, 1] offset 1000 : tensor<?x?x192xf32> -> tensor<?x4x?x16xf32>
  return
}

// -----

// A slice whose offset + size wraps as int64 is out of bounds.
func.func @slice_offset_overflow(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{slice [9223372036854775807, 9223372036854775839) exceeds the last dimension (64)}}
  %0 = attn.slice %x [9223372036854775807, 32] : tensor<?x?x64xf32> -> tensor<?x?x32xf32>
  return
}

// -----

func.func @merge_overflow(%x: tensor<?x4611686018427387904x?x4xf32>) {
  // expected-error @+1 {{heads * head_dim = 4611686018427387904 * 4 overflows int64}}
  %0 = attn.merge_heads %x : tensor<?x4611686018427387904x?x4xf32> -> tensor<?x?x16xf32>
  return
}

// -----

// tensor.dim with an index beyond the rank: upstream's verifier accepts it
// (undefined behaviour), attn-to-loops would read past the shape array.
func.func @dim_out_of_range(%x: tensor<?x?x64xf32> {attn.input = "x"}) -> tensor<?x?x64xf32> {
  %c64 = arith.constant 64 : index
  // expected-error @+1 {{'tensor.dim' op index 64 is out of range for a tensor of rank 3 (in a function with attn.input, which attn-to-loops lowers: expected 0 <= index < rank)}}
  %d = tensor.dim %x, %c64 : tensor<?x?x64xf32>
  return %x : tensor<?x?x64xf32>
}

// -----

func.func @dim_negative(%x: tensor<?x?x64xf32> {attn.input = "x"}) -> tensor<?x?x64xf32> {
  %cm1 = arith.constant -1 : index
  // expected-error @+1 {{'tensor.dim' op index -1 is out of range for a tensor of rank 3}}
  %d = tensor.dim %x, %cm1 : tensor<?x?x64xf32>
  return %x : tensor<?x?x64xf32>
}

// -----

// The dialect's argument attributes are checked by value.
// expected-error @+1 {{'func.func' op argument 0: attn.input must be one of "x", "x_kv", "lengths", "kv_lengths", "positions", "k_cache", "v_cache", found "q"}}
func.func @bad_input(%x: tensor<?x?x64xf32> {attn.input = "q"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 1: attn.output must be "y" or "probs", found unit}}
func.func @bad_output(%x: memref<?x?x64xf32> {attn.input = "x"}, %y: memref<?x?x64xf32> {attn.output}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: attn.concat_dim must be 0 or 1, found 2 : i64}}
func.func @bad_concat_dim(%w: tensor<8x8xf32> {attn.weight = "wq|wk", attn.concat_of = ["wq", "wk"], attn.concat_dim = 2 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0: unknown attn argument attribute attn.wieght}}
func.func @misspelt(%w: tensor<8x8xf32> {attn.wieght = "wq"}) {
  return
}

// -----

func.func @cache_append_rank(%k: tensor<1x4x1x8xf32>, %c: tensor<1x4x16xf32>) {
  // expected-error @+1 {{new rows and caches must be [B, Hkv, T, D]}}
  %0:3 = attn.cache_append %k, %k into %c, %c : tensor<1x4x1x8xf32>, tensor<1x4x16xf32> -> tensor<1xi32>
  return
}

// -----

func.func @cache_append_heads(%k: tensor<1x4x1x8xf32>, %c: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{do not fit cache 'tensor<1x2x16x8xf32>' (batch, kv heads and head_dim must agree)}}
  %0:3 = attn.cache_append %k, %k into %c, %c : tensor<1x4x1x8xf32>, tensor<1x2x16x8xf32> -> tensor<1xi32>
  return
}

// -----

func.func @cache_append_overflow(%k: tensor<1x4x20x8xf32>, %c: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{cache of 16 rows cannot take 20 new rows}}
  %0:3 = attn.cache_append %k, %k into %c, %c : tensor<1x4x20x8xf32>, tensor<1x4x16x8xf32> -> tensor<1xi32>
  return
}

// -----

func.func @cache_append_positions(%k: tensor<2x4x1x8xf32>, %c: tensor<2x4x16x8xf32>, %p: tensor<3xi32>) {
  // expected-error @+1 {{positions and lens must be [batch], found 'tensor<3xi32>'}}
  %0:3 = attn.cache_append %k, %k into %c, %c at(%p : tensor<3xi32>) : tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32> -> tensor<2xi32>
  return
}

// -----

func.func @sdpa_q_lens_without_padding(%q: tensor<1x4x3x8xf32>, %l: tensor<1xi32>) {
  // expected-error @+1 {{q_lens is only valid with a padding mask}}
  %0 = attn.sdpa %q, %q, %q kv_lens(%l : tensor<1xi32>) q_lens(%l : tensor<1xi32>) {mask = #attn<mask causal>, scale = 1.0 : f64}
      : tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return
}

// -----

func.func @sdpa_chunk(%q: tensor<1x4x3x8xf32>) {
  // expected-error @+1 {{mask chunked needs a positive window attribute (the chunk size)}}
  %0 = attn.sdpa %q, %q, %q {mask = #attn<mask chunked>, scale = 1.0 : f64}
      : tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32> -> tensor<1x4x3x8xf32>
  return
}
