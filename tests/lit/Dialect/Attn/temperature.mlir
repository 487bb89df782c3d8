// attn.temperature (Llama 4's temperature tuning): round trip, the
// verifier, and its x86 lowering: in place on a sole-use input, each row's
// factor from its position (an integer division by floor_scale and the
// log series in f64, no libm call), then one multiply per element. The
// CUDA lowering runs in e2e/cuda-real-models.test (llama4_nope: attnc-dump
// --check of the CUDA loops on the host).
// RUN: attnc-opt %s | attnc-opt | FileCheck %s --check-prefix=RT
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx2 --attn-to-loops | FileCheck %s --check-prefix=CPU

// RT-LABEL: func.func @temperature_at
// RT: attn.temperature %{{.*}} at(%{{.*}} : tensor<2xi32>) {attn_scale = 1.000000e-01 : f64, floor_scale = 8192 : i64} : tensor<2x4x?x16xf32>
// CPU-LABEL: func.func @temperature_at__avx2
// CPU-NOT: memref.alloc
// CPU: scf.forall
// CPU: memref.load %arg1
// CPU: arith.divui %{{.*}}, %c8192
// CPU: arith.uitofp %{{.*}} : i64 to f64
// CPU: arith.truncf %{{.*}} : f64 to f32
// CPU: memref.load %arg0
// CPU: arith.mulf
// CPU: memref.store %{{.*}}, %arg0
// CPU-NOT: math.
// CPU: return
func.func @temperature_at(%q: tensor<2x4x?x16xf32>, %p: tensor<2xi32>) -> tensor<2x4x?x16xf32> {
  %r = attn.temperature %q at(%p : tensor<2xi32>) {floor_scale = 8192 : i64, attn_scale = 0.1 : f64} : tensor<2x4x?x16xf32>
  return %r : tensor<2x4x?x16xf32>
}

// Without positions every sequence starts at 0.
// RT-LABEL: func.func @temperature_from_zero
// RT: attn.temperature %{{.*}} {attn_scale = 2.500000e-01 : f64, floor_scale = 4 : i64} : tensor<1x2x?x8xf32>
func.func @temperature_from_zero(%q: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %r = attn.temperature %q {floor_scale = 4 : i64, attn_scale = 0.25 : f64} : tensor<1x2x?x8xf32>
  return %r : tensor<1x2x?x8xf32>
}
