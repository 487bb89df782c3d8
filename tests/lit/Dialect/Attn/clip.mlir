// attn.clip (clip_qkv): round trip and its x86 lowering (in place on the
// input that is its sole use, compares and selects: no libm fminf/fmaxf).
// The CUDA lowering runs in e2e/cuda-real-models.test (olmo_clip, mpt_clip:
// attnc-dump --check of the CUDA loops on the host).
// RUN: attnc-opt %s | attnc-opt | FileCheck %s --check-prefix=RT
// RUN: attnc-opt %s --attnc-set-target=isa=x86-avx2 --attn-to-loops | FileCheck %s --check-prefix=CPU

// RT-LABEL: func.func @clip_in_place
// RT: attn.clip %{{.*}} {limit = 8.000000e+00 : f64} : tensor<2x2x?x8xf32>
// CPU-LABEL: func.func @clip_in_place__avx2
// CPU-NOT: memref.alloc
// CPU: scf.forall
// CPU: memref.load %arg0
// CPU: arith.cmpf ogt, %{{.*}}, %cst
// CPU: arith.select
// CPU: arith.cmpf olt
// CPU: memref.store %{{.*}}, %arg0
// CPU-NOT: math.
// CPU: return
func.func @clip_in_place(%q: tensor<2x2x?x8xf32>) -> tensor<2x2x?x8xf32> {
  %r = attn.clip %q {limit = 8.0 : f64} : tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}
