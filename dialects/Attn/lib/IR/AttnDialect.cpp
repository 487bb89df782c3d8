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
#include "attnc/Dialect/Attn/IR/AttnTargetInterface.cpp.inc"
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

namespace {
/// Each size is a loop step, a divisor or a buffer size somewhere: 0 would
/// be an endless loop or a division by zero in the generated code. The
/// upper bounds keep the builders' products (tile x tile, count + size)
/// far from int64 overflow.
LogicalResult checkSizes(function_ref<InFlightDiagnostic()> emitError, StringRef attr,
                         StringRef isa,
                         ArrayRef<std::tuple<const char *, int64_t, int64_t>> sizes) {
  if (isa.empty())
    return emitError() << "#attn." << attr << ": isa must not be empty";
  for (auto [name, value, most] : sizes)
    if (value < 1 || value > most)
      return emitError() << "#attn." << attr << ": " << name << " must be in [1, "
                         << most << "], found " << value;
  return success();
}
constexpr int64_t kMaxSize = int64_t(1) << 20, kMaxCache = int64_t(1) << 40;
} // namespace

LogicalResult CpuTargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                    StringRef isa, StringRef, StringRef,
                                    int64_t vw, int64_t registers, int64_t panel,
                                    int64_t mr, int64_t nr, int64_t kc, int64_t mc,
                                    int64_t mq, int64_t kr, int64_t nk, int64_t l1Bytes,
                                    int64_t l2Bytes) {
  if (failed(checkSizes(emitError, "cpu_target", isa,
                        {{"vector_width", vw, kMaxSize}, {"registers", registers, kMaxSize},
                         {"panel", panel, kMaxSize},     {"gemm_mr", mr, kMaxSize},
                         {"gemm_nr", nr, kMaxSize},      {"gemm_kc", kc, kMaxSize},
                         {"gemm_mc", mc, kMaxSize},      {"attn_mq", mq, kMaxSize},
                         {"attn_kr", kr, kMaxSize},      {"attn_nk", nk, kMaxSize},
                         {"l1_bytes", l1Bytes, kMaxCache}, {"l2_bytes", l2Bytes, kMaxCache}})))
    return failure();
  // The CPU kernels: GEMM blocks of whole vectors that tile a panel
  // exactly, query tiles of whole vectors, and sizes that keep the
  // unrolled kernels and a task's stack frame (Q^T, scores and output
  // rows: a few MiB at most) small.
  if (nr % vw != 0 || panel % nr != 0)
    return emitError() << "#attn.cpu_target: gemm_nr (" << nr
                       << ") must be a multiple of vector_width (" << vw
                       << ") that divides panel (" << panel << ")";
  if (mq % vw != 0)
    return emitError() << "#attn.cpu_target: attn_mq (" << mq
                       << ") must be a multiple of vector_width (" << vw << ")";
  if (vw > 64 || panel > 1024 || mr > 32 || kr > 32 || mq > 256 || nk > 1024 || kc > 4096)
    return emitError() << "#attn.cpu_target: sizes past what the CPU kernels unroll or "
                          "keep on a task's stack: vector_width <= 64, panel <= 1024, "
                          "gemm_mr <= 32, gemm_kc <= 4096, attn_kr <= 32, attn_mq <= "
                          "256, attn_nk <= 1024";
  return success();
}

/// Whether a BM x BN GEMM block (BK deep) divides among NT threads of TN
/// columns each: whole thread columns and rows, and whole staged tiles per
/// thread. The sizes are positive (the verifier checks them first).
static bool gemmTileDivides(int64_t bm, int64_t bn, int64_t bk, int64_t nt, int64_t tn) {
  return bn % tn == 0 && nt % (bn / tn) == 0 && bm % (nt / (bn / tn)) == 0 &&
         (bm * bk) % nt == 0 && (bn * bk) % nt == 0;
}

bool CudaTargetAttr::gemmTileFits() const {
  return gemmTileDivides(getGemmTileM(), getGemmTileN(), getGemmTileK(), getGemmThreads(),
                         getGemmThreadN());
}

LogicalResult CudaTargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                     StringRef isa, StringRef, StringRef, int64_t panel,
                                     int64_t bm, int64_t bn, int64_t bk, int64_t nt,
                                     int64_t tn, int64_t attnThreads, int64_t attnKeys,
                                     int64_t blockThreads, int64_t sharedBytes,
                                     int64_t l2Bytes) {
  if (failed(checkSizes(emitError, "cuda_target", isa,
                        {{"panel", panel, kMaxSize},
                         {"gemm_tile_m", bm, kMaxSize},
                         {"gemm_tile_n", bn, kMaxSize},
                         {"gemm_tile_k", bk, kMaxSize},
                         {"gemm_threads", nt, kMaxSize},
                         {"gemm_thread_n", tn, kMaxSize},
                         {"attn_threads", attnThreads, kMaxSize},
                         {"attn_keys", attnKeys, kMaxSize},
                         {"block_threads", blockThreads, kMaxSize},
                         {"shared_bytes", sharedBytes, kMaxCache},
                         {"l2_bytes", l2Bytes, kMaxCache}})))
    return failure();
  if (nt > 1024 || attnThreads > 1024 || blockThreads > 1024)
    return emitError() << "#attn.cuda_target: gemm_threads, attn_threads and "
                          "block_threads are threads per block: at most 1024";
  if (!gemmTileDivides(bm, bn, bk, nt, tn))
    return emitError() << "#attn.cuda_target: the GEMM tile (gemm_tile_m " << bm
                       << " x gemm_tile_n " << bn << ", gemm_tile_k " << bk << ", "
                       << nt << " threads of " << tn
                       << " columns) does not divide among its threads";
  if (sharedBytes > 48 * 1024 || bk * (bm + bn) * 4 > sharedBytes)
    return emitError() << "#attn.cuda_target: shared_bytes (" << sharedBytes
                       << ") must be at most 48 KiB and hold the GEMM's staged tiles "
                          "(gemm_tile_k x (gemm_tile_m + gemm_tile_n) floats: "
                       << bk * (bm + bn) * 4 << " bytes)";
  return success();
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

LogicalResult CodePathAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   StringRef entry, StringRef isa,
                                   FlatSymbolRefAttr, FlatSymbolRefAttr,
                                   FlatSymbolRefAttr run, ArrayAttr kernels) {
  if (entry != "forward" && entry != "decode")
    return emitError() << "#attn.code_path: entry must be \"forward\" or "
                          "\"decode\", found \""
                       << entry << "\"";
  if (isa.empty())
    return emitError() << "#attn.code_path: isa must not be empty";
  if (run && kernels)
    return emitError() << "#attn.code_path: a code path runs its tasks on the "
                          "host (run) or as GPU kernels (kernels), not both";
  if (kernels && !llvm::all_of(kernels, [](Attribute a) { return llvm::isa<SymbolRefAttr>(a); }))
    return emitError() << "#attn.code_path: kernels must be symbol references";
  return success();
}

LogicalResult EntryPointsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      FlatSymbolRefAttr, ArrayAttr paths) {
  if (paths && !llvm::all_of(paths, [](Attribute a) { return llvm::isa<CodePathAttr>(a); }))
    return emitError() << "#attn.entry_points: paths must be #attn.code_path attributes";
  return success();
}

SmallVector<CodePathAttr> EntryPointsAttr::getCodePaths() const {
  SmallVector<CodePathAttr> out;
  if (getPaths())
    for (Attribute a : getPaths())
      out.push_back(llvm::cast<CodePathAttr>(a));
  return out;
}

EntryPointsAttr EntryPointsAttr::get(MLIRContext *ctx, FlatSymbolRefAttr pack,
                                     ArrayRef<CodePathAttr> paths) {
  SmallVector<Attribute> list(paths.begin(), paths.end());
  return get(ctx, pack, list.empty() ? ArrayAttr() : ArrayAttr::get(ctx, list));
}

EntryPointsAttr EntryPointsAttr::of(ModuleOp module) {
  AttnDialect *d = module->getContext()->getLoadedDialect<AttnDialect>();
  if (EntryPointsAttr t = d->getEntryPointsAttrHelper().getAttr(module))
    return t;
  return EntryPointsAttr::get(module->getContext(), FlatSymbolRefAttr(),
                              ArrayRef<CodePathAttr>());
}

void EntryPointsAttr::addPath(ModuleOp module, CodePathAttr path) {
  EntryPointsAttr t = of(module);
  SmallVector<CodePathAttr> paths;
  bool replaced = false;
  for (CodePathAttr p : t.getCodePaths()) {
    bool same = p.getEntry() == path.getEntry() && p.getIsa() == path.getIsa();
    paths.push_back(same ? path : p);
    replaced |= same;
  }
  if (!replaced)
    paths.push_back(path);
  AttnDialect *d = module->getContext()->getLoadedDialect<AttnDialect>();
  d->getEntryPointsAttrHelper().setAttr(
      module, EntryPointsAttr::get(module->getContext(), t.getPack(), paths));
}

void EntryPointsAttr::setPack(ModuleOp module, FlatSymbolRefAttr pack) {
  EntryPointsAttr t = of(module);
  AttnDialect *d = module->getContext()->getLoadedDialect<AttnDialect>();
  d->getEntryPointsAttrHelper().setAttr(
      module, EntryPointsAttr::get(module->getContext(), pack, t.getCodePaths()));
}

//===----------------------------------------------------------------------===//
// Attributes on operations
//===----------------------------------------------------------------------===//

namespace {
/// Whether `attr` is the discardable attribute of helper H: then `typed`
/// says whether it has H's declared type.
template <typename H>
bool isAttr(MLIRContext *ctx, Operation *op, NamedAttribute attr, bool &typed) {
  if (attr.getName().strref() != H::getNameStr())
    return false;
  typed = H(ctx).isAttrPresent(op);
  return true;
}
} // namespace

/// The attributes declared in AttnBase.td (discardableAttrs) that belong on
/// operations, each with its declared type; argument attributes belong on
/// arguments only.
LogicalResult AttnDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  MLIRContext *ctx = op->getContext();
  bool typed = false;
  bool known =
      isAttr<BlockAttrHelper>(ctx, op, attr, typed) ||
      isAttr<SpecNameAttrHelper>(ctx, op, attr, typed) ||
      isAttr<WeightStorageAttrHelper>(ctx, op, attr, typed) ||
      isAttr<EntryPointsAttrHelper>(ctx, op, attr, typed) ||
      isAttr<TargetAttrHelper>(ctx, op, attr, typed) ||
      isAttr<VariantOfAttrHelper>(ctx, op, attr, typed) ||
      isAttr<EntryAttrHelper>(ctx, op, attr, typed) ||
      isAttr<PhasesAttrHelper>(ctx, op, attr, typed) ||
      isAttr<StackBytesAttrHelper>(ctx, op, attr, typed) ||
      isAttr<WorkspacePerRowAttrHelper>(ctx, op, attr, typed) ||
      isAttr<WorkspaceBuffersAttrHelper>(ctx, op, attr, typed) ||
      isAttr<BlockThreadsAttrHelper>(ctx, op, attr, typed) ||
      isAttr<PackAttrHelper>(ctx, op, attr, typed);
  if (!known)
    return op->emitOpError("unknown attn attribute ")
           << attr.getName() << " (the dialect's attributes are declared in "
           << "AttnBase.td; argument attributes belong on arguments)";
  if (!typed)
    return op->emitOpError() << attr.getName() << " has the wrong type: "
                             << attr.getValue();
  if (attr.getName() == EntryAttrHelper::getNameStr() &&
      cast<StringAttr>(attr.getValue()).getValue() != "decode")
    return op->emitOpError() << attr.getName() << " must be \"decode\"";
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
  if (name == AttnDialect::InputAttrHelper::getNameStr())
    return oneOf({"x", "x_kv", "lengths", "kv_lengths", "positions", "k_cache",
                  "v_cache"})
               ? success()
               : bad("one of \"x\", \"x_kv\", \"lengths\", \"kv_lengths\", "
                     "\"positions\", \"k_cache\", \"v_cache\"");
  if (name == AttnDialect::OutputAttrHelper::getNameStr())
    return oneOf({"y", "probs"}) ? success() : bad("\"y\" or \"probs\"");
  if (name == AttnDialect::WeightAttrHelper::getNameStr()) {
    auto str = dyn_cast<StringAttr>(v);
    return str && !str.getValue().empty() ? success() : bad("a role name");
  }
  if (name == AttnDialect::WorkspaceAttrHelper::getNameStr())
    return isa<UnitAttr>(v) ? success() : bad("a unit attribute");
  if (name == AttnDialect::ConcatOfAttrHelper::getNameStr()) {
    auto arr = dyn_cast<ArrayAttr>(v);
    return arr && !arr.empty() &&
                   llvm::all_of(arr, [](Attribute a) { return isa<StringAttr>(a); })
               ? success()
               : bad("a non-empty list of role names");
  }
  if (name == AttnDialect::ConcatDimAttrHelper::getNameStr()) {
    auto i = dyn_cast<IntegerAttr>(v);
    return i && (i.getInt() == 0 || i.getInt() == 1) ? success() : bad("0 or 1");
  }
  if (name == AttnDialect::PanelAttrHelper::getNameStr()) {
    auto i = dyn_cast<IntegerAttr>(v);
    return i && i.getInt() > 0 ? success() : bad("a positive integer");
  }
  if (name == AttnDialect::PairsAttrHelper::getNameStr()) // bf16 panels of (k, k+1) pairs
    return isa<UnitAttr>(v) ? success() : bad("a unit attribute");
  if (name == AttnDialect::LogicalShapeAttrHelper::getNameStr())
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
  if (attr.getName() != InputAttrHelper::getNameStr() || regionIndex >= op->getNumRegions())
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
