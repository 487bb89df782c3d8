// The attributes the passes leave for later passes and the back end are
// declared by the dialect (AttnBase.td, discardableAttrs) with their types:
// a misspelt name, a wrong type or a wrong value is a verifier error, not a
// value some pass reads as absent. The entry table (#attn.entry_points of
// #attn.code_path) round-trips.
// RUN: attnc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// CHECK: module attributes {attn.entry_points = #attn.entry_points<pack = @k_pack, paths = [#attn.code_path<entry = "forward", isa = "x86-avx2", ws = @k__avx2__ws, tasks = @k__avx2__tasks, run = @k__avx2__run>, #attn.code_path<entry = "decode", isa = "cuda-sm90", ws = @k_decode__cuda_sm90__ws, tasks = @k_decode__cuda_sm90__tasks, kernels = [@g::@k0, @g::@k1]>]>, attn.spec_name = "k"}
// CHECK: func.func @k__avx2__run() attributes {attn.phases = 2 : i64, attn.stack_bytes = 64 : i64}
module attributes {attn.spec_name = "k", attn.entry_points = #attn.entry_points<pack = @k_pack, paths = [
    #attn.code_path<entry = "forward", isa = "x86-avx2", ws = @k__avx2__ws, tasks = @k__avx2__tasks, run = @k__avx2__run>,
    #attn.code_path<entry = "decode", isa = "cuda-sm90", ws = @k_decode__cuda_sm90__ws, tasks = @k_decode__cuda_sm90__tasks, kernels = [@g::@k0, @g::@k1]>]>} {
  func.func @k__avx2__run() attributes {attn.phases = 2 : i64, attn.stack_bytes = 64 : i64} {
    return
  }
}

// -----

// expected-error @+1 {{unknown attn attribute "attn.phase"}}
func.func @misspelt() attributes {attn.phase = 2 : i64} {
  return
}

// -----

// expected-error @+1 {{"attn.phases" has the wrong type: "2"}}
func.func @wrong_type() attributes {attn.phases = "2"} {
  return
}

// -----

// expected-error @+1 {{"attn.entry" must be "decode"}}
func.func @prefill() attributes {attn.entry = "prefill"} {
  return
}

// -----

// An argument attribute on the function itself.
// expected-error @+1 {{unknown attn attribute "attn.input"}}
func.func @arg_attr_on_op() attributes {attn.input = "x"} {
  return
}

// -----

// expected-error @+2 {{#attn.code_path: entry must be "forward" or "decode", found "prefill"}}
// expected-error @+1 {{failed to parse Attn_EntryPointsAttr parameter 'paths'}}
module attributes {attn.entry_points = #attn.entry_points<paths = [#attn.code_path<entry = "prefill", isa = "x86-avx2", ws = @a, tasks = @b>]>} {
}

// -----

// expected-error @+2 {{#attn.code_path: a code path runs its tasks on the host (run) or as GPU kernels (kernels), not both}}
// expected-error @+1 {{failed to parse Attn_EntryPointsAttr parameter 'paths'}}
module attributes {attn.entry_points = #attn.entry_points<paths = [#attn.code_path<entry = "forward", isa = "cuda-sm90", ws = @a, tasks = @b, run = @c, kernels = [@g::@k0]>]>} {
}

// -----

// expected-error @+1 {{#attn.entry_points: paths must be #attn.code_path attributes}}
module attributes {attn.entry_points = #attn.entry_points<paths = [@a]>} {
}
