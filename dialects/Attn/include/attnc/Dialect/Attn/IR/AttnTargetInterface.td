//===- AttnTargetInterface.td - what every code path's target says -*- tablegen -*-===//
//
// The attribute interface of #attn.cpu_target and #attn.cuda_target: what
// every pass and the back end ask of a code path's target whatever it is.
// What only one kind of target has (CPU registers and cache blocks; CUDA
// threads per block, shared memory and thread tiles) is read off the
// concrete attribute by the kernels of that target.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TARGET_INTERFACE_TD
#define ATTN_TARGET_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Attn_TargetAttrInterface : AttrInterface<"TargetAttrInterface"> {
  let cppNamespace = "::attnc::attn";
  let description = [{
    A code path's target (attnc-set-target puts one on every clone of an
    entry as `attn.target`): the ISA's ABI name, what LLVM compiles the
    path for, and the width of the packed weight panels, which every code
    path of a kernel shares (one NAME_pack serves them all).
  }];
  let methods = [
    InterfaceMethod<"The ABI name of the code path's ISA (x86-avx512, cuda-sm90, ...).",
                    "::llvm::StringRef", "getIsa">,
    InterfaceMethod<"LLVM's CPU for the code (CUDA: the chip, sm_90).",
                    "::llvm::StringRef", "getCpu">,
    InterfaceMethod<"LLVM's target features for the code.",
                    "::llvm::StringRef", "getFeatures">,
    InterfaceMethod<"Columns of a packed weight panel.", "int64_t", "getPanel">,
  ];
}

#endif // ATTN_TARGET_INTERFACE_TD
