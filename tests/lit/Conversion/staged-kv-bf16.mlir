// attn.sdpa with bf16 dot products over a forward's keys: the planner asks
// the target (TargetKernelsInterface::sdpaStagedWidth) and sets aside two
// bf16 workspace buffers, K's rows [B, Hkv, Tkv, W] and V's rows in
// interleaved pairs [B, Hkv, (Tkv + 1) / 2, 2W] (W = head_dim rounded up
// to 16). On the AVX512-BF16 path a phase before the attention rounds K
// and V into them once per call (vcvtneps2bf16), and the attention reads
// a key's pair and V's pairs from them, not from per-task copies; its key
// blocks start at an even key (a window's lower edge rounded down). Every
// x86 path has the same buffers and phases: the AVX-512 path's staging
// phase has no tasks. Keys from a cache (decode) are not staged.
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx512-bf16 --attn-to-loops | FileCheck %s --check-prefix=BF16
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx512 --attn-to-loops | FileCheck %s --check-prefix=AVX512

// BF16-LABEL: func.func @staged__avx512bf16(
// BF16-SAME: attn.workspace_buffers = 2 : i64, attn.workspace_per_row = 192 : i64
// BF16: %[[T:.*]] = memref.dim %arg1, %c2
// BF16: %[[T1:.*]] = arith.addi %[[T]], %c1
// BF16-NEXT: %[[PAIRS:.*]] = arith.divui %[[T1]], %c2
// BF16: %[[KS:.*]] = memref.view %arg4[%c0][%{{.*}}, %[[T]]] : memref<?xi8> to memref<?x2x?x32xbf16>
// BF16: %[[VS:.*]] = memref.view %arg4[%{{.*}}][%{{.*}}, %[[PAIRS]]] : memref<?xi8> to memref<?x2x?x64xbf16>
// The staging phase: K rows, then V pairs.
// BF16: scf.forall
// BF16: %[[K:.*]] = vector.load %arg1[{{.*}}] : memref<?x2x?x32xf32>, vector<16xf32>
// BF16-NEXT: %[[KB:.*]] = x86vector.avx512.cvt.packed.f32_to_bf16 %[[K]]
// BF16-NEXT: %[[KSEL:.*]] = arith.select %{{.*}}, %[[KB]], %{{.*}} : vector<16xbf16>
// BF16-NEXT: vector.store %[[KSEL]], %[[KS]][{{.*}}] : memref<?x2x?x32xbf16>, vector<16xbf16>
// BF16: x86vector.avx512.cvt.packed.f32_to_bf16
// BF16: x86vector.avx512.cvt.packed.f32_to_bf16
// BF16: vector.shuffle {{.*}} [0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31] : vector<16xbf16>, vector<16xbf16>
// BF16: vector.store %{{.*}}, %[[VS]][{{.*}}] : memref<?x2x?x64xbf16>, vector<32xbf16>
// The attention phase: blocks from an even key, a key's pair from KS,
// V's pairs from VS.
// BF16: scf.forall
// BF16: %[[H:.*]] = arith.divui %{{.*}}, %c2{{.*}} : index
// BF16-NEXT: %[[EVEN:.*]] = arith.muli %[[H]], %c2{{.*}} : index
// BF16: scf.for %{{.*}} = %[[EVEN]] to
// BF16: vector.load %[[KS]][{{.*}}] : memref<?x2x?x32xbf16>, vector<2xbf16>
// BF16: x86vector.avx512.dot
// BF16: vector.load %[[VS]][{{.*}}] : memref<?x2x?x64xbf16>, vector<32xbf16>
// BF16: x86vector.avx512.dot

// AVX512-LABEL: func.func @staged__avx512(
// AVX512-SAME: attn.workspace_buffers = 2 : i64, attn.workspace_per_row = 192 : i64
// AVX512: memref.view {{.*}} to memref<?x2x?x32xbf16>
// AVX512: memref.view {{.*}} to memref<?x2x?x64xbf16>
// AVX512: %[[NONE:.*]] = arith.constant 0 : index
// AVX512-NEXT: scf.forall (%{{.*}}) in (%[[NONE]]) {
// AVX512-NEXT: }
// AVX512-NOT: x86vector.avx512.dot
// AVX512-NOT: bf16
func.func @staged(%q: tensor<?x4x?x32xf32>, %k: tensor<?x2x?x32xf32>, %v: tensor<?x2x?x32xf32>) -> tensor<?x4x?x32xf32> {
  %o = attn.sdpa %q, %k, %v {mask = #attn<mask sliding_window>, window = 9, scale = 0.25 : f64, dot_type = bf16}
      : tensor<?x4x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32> -> tensor<?x4x?x32xf32>
  return %o : tensor<?x4x?x32xf32>
}

// Without dot_type: no buffers, no phase.
// BF16-LABEL: func.func @unstaged__avx512bf16(
// BF16-SAME: attn.workspace_buffers = 0 : i64
// BF16-NOT: bf16
// BF16: return
func.func @unstaged(%q: tensor<?x4x?x32xf32>, %k: tensor<?x2x?x32xf32>, %v: tensor<?x2x?x32xf32>) -> tensor<?x4x?x32xf32> {
  %o = attn.sdpa %q, %k, %v {mask = #attn<mask causal>, scale = 0.25 : f64}
      : tensor<?x4x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32> -> tensor<?x4x?x32xf32>
  return %o : tensor<?x4x?x32xf32>
}
