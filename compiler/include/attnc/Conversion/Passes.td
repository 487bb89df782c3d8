//===- Passes.td - attn -> upstream conversions -----------*- tablegen -*-===//
#ifndef ATTNC_CONVERSION_PASSES_TD
#define ATTNC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnToLoopsPass : Pass<"attn-to-loops", "mlir::ModuleOp"> {
  let summary = "Lower attn functions on tensors to buffers, linalg and scf loops";
  let description = [{
    Rewrites every function whose body is attn ops on tensors into a
    destination-passing function on memrefs:

    ```mlir
    func.func @f(%x: tensor<?x?x768xf32>, %w...: tensor<...>) -> tensor<?x?x768xf32>
    // becomes
    func.func @f(%x: memref<?x?x768xf32>, %w...: memref<...>,
                 %y: memref<?x?x768xf32>, %ws: memref<?xi8>, %run: i1) -> index
    ```
    The result is the workspace size in bytes the call needs; every
    intermediate buffer is a `memref.view` into `%ws` (no malloc). The body
    runs only when `%run` is true and `%ws` is large enough, so calling with
    `%run = false` queries the size. `attn.view` becomes a
    `memref.reinterpret_cast` of its source's buffer (no copy); slices, head
    splits/merges and concats that are still present are materialized with
    copies. Projections become register-blocked GEMMs (6x32 blocks of
    vector FMAs; `linalg.generic` for shapes outside that fast path);
    attention becomes scf loops with a max-subtracted softmax over one
    score row at a time (the T×T matrix is never stored), vectorized along
    head_dim when it is a multiple of 16.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

def AttnApproximateExpPass : Pass<"attnc-approximate-exp", "mlir::ModuleOp"> {
  let summary = "Expand f32 math.exp into MLIR's polynomial approximation";
  let description = [{
    `math.exp` would otherwise become a call to libm's `expf` per element;
    the polynomial form (range reduction + polynomial, from
    populateMathPolynomialApproximationPatterns) is plain arithmetic that
    works on vectors, so the softmax's exponentials vectorize.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

#endif // ATTNC_CONVERSION_PASSES_TD
