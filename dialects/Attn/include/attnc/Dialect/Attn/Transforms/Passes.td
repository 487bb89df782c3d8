//===- Passes.td - attn -> attn rewrites ------------------*- tablegen -*-===//
//
// The graph rewrites of the attn dialect. Each keeps the function computed
// by the block unchanged (attnc-dump --check proves it numerically).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnFuseQKVPass : Pass<"attn-fuse-qkv", "mlir::ModuleOp"> {
  let summary = "Fuse projections that read the same input into one GEMM";
  let description = [{
    `x·Wq, x·Wk, x·Wv = (x·[Wq|Wk|Wv])[:, slices]` (the block-matrix
    identity). Two or more `attn.linear` ops with the same input, the same
    weight/bias element types and all-or-none biases become one
    `attn.linear` with the weights concatenated along N, followed by one
    `attn.slice` per original result. When the weights are function
    arguments (as attnc's front end emits them), the concatenation moves to
    pack time: the arguments are replaced by one argument tagged
    `attn.concat_of = [...]`, which the generated pack entry fills once.
    Otherwise a `tensor.concat` is emitted in the IR.

    Before:
    ```mlir
    %q = attn.linear %x, %wq, %bq : ... -> tensor<?x?x768xf32>
    %k = attn.linear %x, %wk, %bk : ... -> tensor<?x?x768xf32>
    %v = attn.linear %x, %wv, %bv : ... -> tensor<?x?x768xf32>
    ```
    After:
    ```mlir
    %qkv = attn.linear %x, %wqkv, %bqkv : ... -> tensor<?x?x2304xf32>
    %q = attn.slice %qkv [0, 768] : ...
    %k = attn.slice %qkv [768, 768] : ...
    %v = attn.slice %qkv [1536, 768] : ...
    ```
    Does not fire for projections of different inputs (cross-attention
    queries vs. encoder keys) or of different weight element types.
  }];
  let dependentDialects = ["mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numFused", "num-fused", "Groups of projections fused">
  ];
}

def AttnHeadsAsViewsPass : Pass<"attn-heads-as-views", "mlir::func::FuncOp"> {
  let summary = "Turn slices, head splits and head merges into strided views";
  let description = [{
    `split_heads(slice(x, o, n))   -> view(x) [B,H,T,D] strides [T*N, D, N, 1] offset o`
    `split_heads(x)                -> view(x) [B,H,T,D] strides [T*W, D, W, 1] offset 0`
    `merge_heads(sdpa(...))        -> view(sdpa(...){layout = bthd}) [B,T,H*D]`
    `slice(x, o, n)                -> view(x) [B,T,n] strides [T*N, N, 1] offset o`
    After the pass, Q, K and V are read straight out of the fused
    projection's buffer and the attention writes its output in the layout
    the output projection reads: no op moves data between the GEMMs and the
    attention.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numViews", "num-views", "Views created">
  ];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
