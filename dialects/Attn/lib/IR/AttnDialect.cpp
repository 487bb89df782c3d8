//===- AttnDialect.cpp - attn dialect registration ------------------------===//
//
// Registers the attn ops and enum attributes with the MLIR context.
//
//===----------------------------------------------------------------------===//
#include "attnc/Dialect/Attn/IR/AttnDialect.h"
#include "attnc/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace attnc::attn;

#include "attnc/Dialect/Attn/IR/AttnDialect.cpp.inc"
#include "attnc/Dialect/Attn/IR/AttnEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/Attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attnc/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attnc/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Target description
//===----------------------------------------------------------------------===//

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef isa, StringRef, StringRef,
                                 int64_t vectorWidth, int64_t registers,
                                 int64_t panel, int64_t gemmMr, int64_t gemmNr,
                                 int64_t gemmKc, int64_t gemmMc, int64_t attnMq,
                                 int64_t attnKr, int64_t attnNk, int64_t l1Bytes,
                                 int64_t l2Bytes) {
  if (isa.empty())
    return emitError() << "#attn.target: isa must not be empty";
  // Each is a loop step, a divisor or a buffer size somewhere: 0 would be
  // an endless loop or a division by zero in the generated code. The upper
  // bounds keep the builders' products (tile x tile, count + size) far from
  // int64 overflow; what fits an ISA's kernels is attn-to-loops' check.
  constexpr int64_t kMaxSize = int64_t(1) << 20, kMaxCache = int64_t(1) << 40;
  const std::tuple<const char *, int64_t, int64_t> sizes[] = {
      {"vector_width", vectorWidth, kMaxSize}, {"registers", registers, kMaxSize},
      {"panel", panel, kMaxSize},              {"gemm_mr", gemmMr, kMaxSize},
      {"gemm_nr", gemmNr, kMaxSize},           {"gemm_kc", gemmKc, kMaxSize},
      {"gemm_mc", gemmMc, kMaxSize},           {"attn_mq", attnMq, kMaxSize},
      {"attn_kr", attnKr, kMaxSize},           {"attn_nk", attnNk, kMaxSize},
      {"l1_bytes", l1Bytes, kMaxCache},        {"l2_bytes", l2Bytes, kMaxCache}};
  for (auto [name, value, most] : sizes)
    if (value < 1 || value > most)
      return emitError() << "#attn.target: " << name << " must be in [1, "
                         << most << "], found " << value;
  return success();
}

//===----------------------------------------------------------------------===//
// Argument attributes
//===----------------------------------------------------------------------===//

/// `attn.input` marks the input of an attention function: a function
/// attn-to-loops lowers. Whatever the lowering cannot handle in it must be
/// rejected here, by the verifier, rather than read past an array there:
/// tensor.dim's index must be in [0, rank) of its source (upstream's
/// verifier accepts any index: out of range is undefined behaviour there).
/// The argument attributes of the attn dialect, their values and what they
/// mean (the contract between the front end, the passes and the code
/// generator, which reads the forward signature off them):
///   attn.input = "x" | "x_kv" | "lengths" | "kv_lengths"   a run-time input
///              | "positions" | "k_cache" | "v_cache"       (decode, KV cache)
///   attn.weight = "wq" | "wq|wk|wv" | ...                  weight roles
///   attn.concat_of = ["wq", ...], attn.concat_dim = 0 | 1  fused weights
///   attn.panel = N (> 0), attn.logical_shape = [K, N]      packed weights
///   attn.pairs (unit)                                       bf16 pair panels
///   attn.output = "y" | "probs"                            results (buffers)
///   attn.workspace (unit)                                  the scratch buffer
static LogicalResult verifyArgAttr(Operation *op, unsigned argIndex,
                                   NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  Attribute v = attr.getValue();
  auto bad = [&](StringRef expected) {
    return op->emitOpError("argument ")
           << argIndex << ": " << name << " must be " << expected << ", found "
           << v;
  };
  auto oneOf = [&](ArrayRef<StringRef> values) {
    auto str = dyn_cast<StringAttr>(v);
    return str && llvm::is_contained(values, str.getValue());
  };
  if (name == "attn.input")
    return oneOf({"x", "x_kv", "lengths", "kv_lengths", "positions", "k_cache",
                  "v_cache"})
               ? success()
               : bad("one of \"x\", \"x_kv\", \"lengths\", \"kv_lengths\", "
                     "\"positions\", \"k_cache\", \"v_cache\"");
  if (name == "attn.output")
    return oneOf({"y", "probs"}) ? success() : bad("\"y\" or \"probs\"");
  if (name == "attn.weight") {
    auto str = dyn_cast<StringAttr>(v);
    return str && !str.getValue().empty() ? success() : bad("a role name");
  }
  if (name == "attn.workspace")
    return isa<UnitAttr>(v) ? success() : bad("a unit attribute");
  if (name == "attn.concat_of") {
    auto arr = dyn_cast<ArrayAttr>(v);
    return arr && !arr.empty() &&
                   llvm::all_of(arr, [](Attribute a) { return isa<StringAttr>(a); })
               ? success()
               : bad("a non-empty list of role names");
  }
  if (name == "attn.concat_dim") {
    auto i = dyn_cast<IntegerAttr>(v);
    return i && (i.getInt() == 0 || i.getInt() == 1) ? success() : bad("0 or 1");
  }
  if (name == "attn.panel") {
    auto i = dyn_cast<IntegerAttr>(v);
    return i && i.getInt() > 0 ? success() : bad("a positive integer");
  }
  if (name == "attn.pairs") // bf16 panels of (k, k+1) pairs
    return isa<UnitAttr>(v) ? success() : bad("a unit attribute");
  if (name == "attn.logical_shape")
    return isa<DenseI64ArrayAttr>(v) ? success() : bad("an i64 array");
  return op->emitOpError("argument ")
         << argIndex << ": unknown attn argument attribute " << name;
}

LogicalResult AttnDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (failed(verifyArgAttr(op, argIndex, attr)))
    return failure();
  if (attr.getName() != "attn.input" || regionIndex >= op->getNumRegions())
    return success();
  LogicalResult result = success();
  op->getRegion(regionIndex).walk([&](tensor::DimOp d) {
    std::optional<int64_t> c = d.getConstantIndex();
    auto ty = dyn_cast<RankedTensorType>(d.getSource().getType());
    if (!c || !ty || (*c >= 0 && *c < ty.getRank()))
      return WalkResult::advance();
    d.emitOpError("index ")
        << *c << " is out of range for a tensor of rank " << ty.getRank()
        << " (in a function with attn.input, which attn-to-loops lowers: "
           "expected 0 <= index < rank)";
    result = failure();
    return WalkResult::interrupt();
  });
  return result;
}
