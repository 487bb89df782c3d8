//===- PackPlan.cpp - storage layout -> compute layout --------------------===//
//
// Storage layouts (docs/spec.md, "weights"):
//   gpt2_conv1d   c_attn.weight (d, N) = [Wq|Wk|Wv] in [in, out]; y = x·W + b
//   torch_in_proj in_proj_weight (N, d) [out, in];                y = x·Wᵀ + b
//   separate      q_proj/k_proj/v_proj/o_proj .weight [out, in];  y = x·Wᵀ + b
// Compute layout: every weight role is [in, out].
//
//===----------------------------------------------------------------------===//
#include "attnc/Target/PackPlan.h"
#include "attnc/Dialect/Attn/IR/AttnDialect.h"
#include "attnc/runtime/Limits.h"

#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

using namespace mlir;
using attnc::attn::AttnDialect;

std::vector<attnrt::TensorShape> attnc::storageTensors(const Spec &spec) {
  return attnrt::storageTensors(blockParams(spec));
}

attnrt::StorageLayout attnc::storageLayout(const Spec &spec) {
  return attnrt::storageLayout(blockParams(spec));
}

ArrayAttr attnc::weightStorageAttr(MLIRContext *ctx, const attnrt::BlockParams &block) {
  Builder b(ctx);
  attnrt::StorageLayout layout = attnrt::storageLayout(block);
  std::vector<std::vector<NamedAttribute>> roles(layout.tensors.size());
  std::vector<bool> transposed(layout.tensors.size(), false);
  for (const attnrt::RoleRect &src : layout.roles) {
    roles[src.tensor].push_back(b.getNamedAttr(
        src.role, b.getDenseI64ArrayAttr({src.rowOff, src.colOff, src.rows, src.cols})));
    if (!src.vector)
      transposed[src.tensor] = src.transposed;
  }
  SmallVector<Attribute> entries;
  for (size_t i = 0; i < layout.tensors.size(); ++i)
    entries.push_back(b.getDictionaryAttr({
        b.getNamedAttr("name", b.getStringAttr(layout.tensors[i].name)),
        b.getNamedAttr("shape", b.getDenseI64ArrayAttr(layout.tensors[i].shape)),
        b.getNamedAttr("transposed", b.getBoolAttr(transposed[i])),
        b.getNamedAttr("roles", b.getDictionaryAttr(roles[i])),
    }));
  return b.getArrayAttr(entries);
}

FailureOr<attnc::WeightStorage> attnc::readWeightStorage(ModuleOp module) {
  auto list = module->getAttrOfType<ArrayAttr>(AttnDialect::WeightStorageAttrHelper::getNameStr());
  if (!list)
    return module.emitError("attn.weight_storage: the module does not say how "
                            "the weights are stored (the front end writes it)");
  WeightStorage ws;
  for (auto [i, a] : llvm::enumerate(list)) {
    auto d = dyn_cast<DictionaryAttr>(a);
    auto name = d ? d.getAs<StringAttr>("name") : StringAttr();
    auto shape = d ? d.getAs<DenseI64ArrayAttr>("shape") : DenseI64ArrayAttr();
    auto tr = d ? d.getAs<BoolAttr>("transposed") : BoolAttr();
    auto roles = d ? d.getAs<DictionaryAttr>("roles") : DictionaryAttr();
    if (!name || !shape || !tr || !roles || shape.size() < 1 || shape.size() > 2 ||
        llvm::any_of(shape.asArrayRef(), [](int64_t v) { return v <= 0; }))
      return module.emitError("attn.weight_storage: entry ")
             << i << " is not {name, shape (1 or 2 positive sizes), transposed, roles}";
    attnrt::TensorShape t;
    t.name = name.str();
    t.shape.assign(shape.asArrayRef().begin(), shape.asArrayRef().end());
    for (NamedAttribute r : roles) {
      StringRef role = r.getName().getValue();
      auto rect = dyn_cast<DenseI64ArrayAttr>(r.getValue());
      bool known = llvm::is_contained(attnrt::roleNames(), role.str());
      if (!known || !rect || rect.size() != 4)
        return module.emitError("attn.weight_storage: entry ")
               << i << ": role '" << role
               << "' is not one of wq wk wv wo bq bk bv bo nq nk nbq nbk ss rb re with [rowOff, "
                  "colOff, rows, cols]";
      RoleSource src;
      src.role = role.str();
      src.tensor = static_cast<int>(i);
      src.vector = role[0] == 'b' || role[0] == 'n' || role == "ss";
      src.transposed = tr.getValue() && !src.vector;
      src.rowOff = rect[0];
      src.colOff = rect[1];
      src.rows = rect[2];
      src.cols = rect[3];
      // The rectangle must lie inside the tensor as stored: role(k, n) is
      // T[rowOff + k][colOff + n], T[rowOff + n][colOff + k] (transposed)
      // or T[colOff + n] (bias, rows = 1).
      int64_t sr = t.shape.size() == 2 ? t.shape[0] : 1, sc = t.shape.back();
      int64_t nr = src.transposed ? src.cols : src.rows;
      int64_t nc = src.transposed ? src.rows : src.cols;
      if (src.rowOff < 0 || src.colOff < 0 || src.rows <= 0 || src.cols <= 0 ||
          (src.vector && (t.shape.size() != 1 || src.rows != 1 || src.rowOff != 0)) ||
          (!src.vector && t.shape.size() != 2) ||
          nr > sr - src.rowOff || nc > sc - src.colOff || ws.find(role.str()))
        return module.emitError("attn.weight_storage: role '")
               << role << "' lies outside " << t.name << " or is given twice";
      ws.roles.push_back(src);
    }
    ws.tensors.push_back(t);
  }
  return ws;
}

FailureOr<attnc::PackPlan> attnc::computePackPlan(func::FuncOp fn,
                                                  const WeightStorage &storage) {
  PackPlan plan;
  plan.storage = storage.tensors;
  int64_t offset = 0;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto role = fn.getArgAttrOfType<StringAttr>(i, AttnDialect::WeightAttrHelper::getNameStr());
    if (!role)
      continue;
    PackedArg arg;
    arg.argIndex = i;
    arg.role = role.str();
    auto st = cast<ShapedType>(fn.getArgumentTypes()[i]);
    if (auto logical = fn.getArgAttrOfType<DenseI64ArrayAttr>(i, AttnDialect::LogicalShapeAttrHelper::getNameStr())) {
      arg.shape.assign(logical.asArrayRef().begin(), logical.asArrayRef().end());
      auto panel = fn.getArgAttrOfType<IntegerAttr>(i, AttnDialect::PanelAttrHelper::getNameStr());
      arg.panel = panel ? panel.getInt() : 0;
      arg.pairs = fn.getArgAttr(i, AttnDialect::PairsAttrHelper::getNameStr()) != nullptr;
      // The memref must be the panel layout of the logical shape:
      // [ceil(N/panel), K, panel] for a weight, [ceil(N/panel)*panel] for a
      // bias (what attn-to-loops makes; anything else would make NAME_pack
      // write past the argument).
      SmallVector<int64_t> expect;
      if (arg.panel > 0 && !arg.shape.empty() && arg.shape.back() > 0) {
        int64_t p = (arg.shape.back() + arg.panel - 1) / arg.panel;
        if (arg.shape.size() == 2 && arg.shape[0] > 0)
          expect = arg.pairs ? SmallVector<int64_t>{p, (arg.shape[0] + 1) / 2, 2 * arg.panel}
                             : SmallVector<int64_t>{p, arg.shape[0], arg.panel};
        else if (arg.shape.size() == 1)
          expect = {p * arg.panel};
      }
      if (expect.empty() || !st.hasStaticShape() ||
          st.getShape() != ArrayRef<int64_t>(expect))
        return fn.emitError("weight argument ")
               << i << " (" << role.str()
               << "): attn.logical_shape needs attn.panel and the panel "
                  "layout's memref shape";
    } else {
      arg.shape.assign(st.getShape().begin(), st.getShape().end());
    }
    int64_t rank = arg.shape.size();
    if (auto parts = fn.getArgAttrOfType<ArrayAttr>(i, AttnDialect::ConcatOfAttrHelper::getNameStr())) {
      for (Attribute p : parts)
        arg.parts.push_back(cast<StringAttr>(p).str());
      if (auto cd = fn.getArgAttrOfType<IntegerAttr>(i, AttnDialect::ConcatDimAttrHelper::getNameStr()))
        arg.concatDim = cd.getInt();
    } else {
      arg.parts.push_back(role.str());
      arg.concatDim = rank - 1;
    }
    // Validate: parts must exist and tile the argument along concatDim.
    int64_t along = 0;
    for (const std::string &p : arg.parts) {
      const RoleSource *src = storage.find(p);
      if (!src)
        return fn.emitError("no storage tensor provides weight role '") << p << "'";
      if ((rank == 1) != src->vector ||
          (rank == 2 && src->rows != arg.shape[0]))
        return fn.emitError("weight role '") << p << "' of argument " << i
                                             << " does not match its storage";
      along += src->cols;
    }
    if (rank < 1 || rank > 2 || arg.concatDim != rank - 1 ||
        along != arg.shape.back())
      return fn.emitError("weight argument ")
             << i << " (" << role.str() << ") does not match its parts";
    // Every weight is stored in the spec's weight_dtype.
    Type et = st.getElementType();
    if (!plan.packedElementType)
      plan.packedElementType = et;
    if (et != plan.packedElementType || !isa<FloatType>(et))
      return fn.emitError("weight argument ")
             << i << " (" << role.str() << ") has element type " << et
             << "; every packed weight must have one float type ("
             << plan.packedElementType << ")";
    plan.packedElementBytes = et.getIntOrFloatBitWidth() / 8;
    arg.floats = st.getNumElements(); // the memref: panels include padding
    arg.offset = offset;
    offset += (arg.floats + 15) / 16 * 16;
    plan.weights.push_back(arg);
    plan.weightTypes.push_back(fn.getArgumentTypes()[i]);
  }
  plan.packedFloats = offset;
  if (!plan.packedElementType)
    plan.packedElementType = Float32Type::get(fn.getContext());
  // The loader refuses a record past this bound (attnc/runtime/Limits.h):
  // a library this compiler writes must load.
  std::vector<int64_t> dims;
  for (const attnrt::TensorShape &t : storage.tensors) {
    dims.push_back(t.shape.empty() ? 1 : t.shape[0]);
    dims.push_back(t.shape.size() == 2 ? t.shape[1] : 1);
  }
  int64_t bound = 0;
  if (!attnc::limits::packedFloatsBound(reinterpret_cast<const int64_t(*)[2]>(dims.data()),
                                 int64_t(storage.tensors.size()), bound) ||
      plan.packedFloats > bound)
    return fn.emitError("internal error: the packed weights take ")
           << plan.packedFloats << " floats, more than the loader accepts (" << bound
           << ", attnc/runtime/Limits.h)";
  return plan;
}

LogicalResult attnc::addPackFunction(ModuleOp module, StringRef name,
                                     const PackPlan &plan,
                                     const WeightStorage &storage) {
  MLIRContext *ctx = module.getContext();
  ImplicitLocOpBuilder b(module.getLoc(), ctx);
  b.setInsertionPointToEnd(module.getBody());
  // The storage tensors arrive in the weight dtype, the packed buffer is
  // of it: NAME_pack only moves elements.
  Type wt = plan.packedElementType;
  SmallVector<Type> args;
  for (const auto &t : plan.storage)
    args.push_back(MemRefType::get(t.shape, wt));
  args.push_back(MemRefType::get({plan.packedFloats}, wt));
  auto fn = func::FuncOp::create(b, (name + "_pack").str(), b.getFunctionType(args, {}));
  fn->setAttr(AttnDialect::PackAttrHelper::getNameStr(), b.getUnitAttr());
  attnc::attn::EntryPointsAttr::setPack(module, FlatSymbolRefAttr::get(fn.getSymNameAttr()));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value dst = entry->getArgument(plan.storage.size());
  auto idx = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, v); };
  Value zero = idx(0), one = idx(1);

  for (const PackedArg &arg : plan.weights) {
    int64_t n = arg.shape.back();
    int64_t rows = arg.shape.size() == 2 ? arg.shape[0] : 1;
    // Panel layout of a [K, N] weight: element (k, n) at
    // (n / panel) * K * panel + k * panel + n % panel. Biases and plain
    // weights are row-major. (NAME_pack zeroes the padding first.)
    int64_t panel = arg.shape.size() == 2 ? arg.panel : 0;
    int64_t start = 0;
    for (const std::string &p : arg.parts) {
      const RoleSource &src = *storage.find(p); // checked by computePackPlan
      Value s = entry->getArgument(src.tensor);
      bool bias = src.vector;
      // for r < rows, c < cols: dst[off + r*n + start + c] = src(r, c)
      auto outer = scf::ForOp::create(b, zero, idx(rows), one);
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(outer.getBody());
        Value r = outer.getInductionVar();
        auto inner = scf::ForOp::create(b, zero, idx(src.cols), one);
        b.setInsertionPointToStart(inner.getBody());
        Value c = inner.getInductionVar();
        Value v;
        if (bias) {
          v = memref::LoadOp::create(b, s, ValueRange{arith::AddIOp::create(b, c, idx(src.colOff))});
        } else if (!src.transposed) {
          v = memref::LoadOp::create(b, s, ValueRange{arith::AddIOp::create(b, r, idx(src.rowOff)),
                                                      arith::AddIOp::create(b, c, idx(src.colOff))});
        } else {
          v = memref::LoadOp::create(b, s, ValueRange{arith::AddIOp::create(b, c, idx(src.rowOff)),
                                                      arith::AddIOp::create(b, r, idx(src.colOff))});
        }
        Value col = arith::AddIOp::create(b, c, idx(start));
        Value at;
        if (panel > 0 && arg.pairs) {
          // (k, n) at p*ceil(K/2)*2*panel + (k/2)*2*panel + j*2 + k%2.
          Value p = arith::DivUIOp::create(b, col, idx(panel));
          Value j = arith::RemUIOp::create(b, col, idx(panel));
          Value kp = arith::DivUIOp::create(b, r, idx(2));
          Value odd = arith::RemUIOp::create(b, r, idx(2));
          at = arith::AddIOp::create(
              b, arith::MulIOp::create(b, p, idx((rows + 1) / 2 * 2 * panel)),
              arith::AddIOp::create(
                  b, arith::MulIOp::create(b, kp, idx(2 * panel)),
                  arith::AddIOp::create(b, arith::MulIOp::create(b, j, idx(2)), odd)));
          at = arith::AddIOp::create(b, at, idx(arg.offset));
        } else if (panel > 0) {
          Value p = arith::DivUIOp::create(b, col, idx(panel));
          Value j = arith::RemUIOp::create(b, col, idx(panel));
          at = arith::AddIOp::create(
              b, arith::MulIOp::create(b, p, idx(rows * panel)),
              arith::AddIOp::create(b, arith::MulIOp::create(b, r, idx(panel)), j));
          at = arith::AddIOp::create(b, at, idx(arg.offset));
        } else {
          at = arith::AddIOp::create(
              b, arith::MulIOp::create(b, r, idx(n)),
              arith::AddIOp::create(b, col, idx(arg.offset)));
        }
        memref::StoreOp::create(b, v, dst, ValueRange{at});
      }
      start += src.cols;
    }
  }
  func::ReturnOp::create(b);
  return success();
}

LogicalResult attnc::recordForwardSignature(func::FuncOp fn, PackPlan &plan,
                                            bool decode) {
  std::vector<ForwardArg> &args = decode ? plan.decodeArgs : plan.forwardArgs;
  args.clear();
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    ForwardArg a;
    Type t = fn.getArgumentTypes()[i];
    if (auto mt = dyn_cast<MemRefType>(t)) {
      for (int64_t d : mt.getShape())
        a.shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
      llvm::raw_string_ostream os(a.elem);
      mt.getElementType().print(os);
    }
    if (auto in = fn.getArgAttrOfType<StringAttr>(i, AttnDialect::InputAttrHelper::getNameStr())) {
      a.kind = ForwardArg::Input;
      a.input = in.str();
      if (a.input != "x" && a.input != "x_kv" && a.input != "lengths" &&
          a.input != "kv_lengths" && a.input != "positions" &&
          a.input != "k_cache" && a.input != "v_cache")
        return fn.emitError("unknown forward input '") << a.input << "'";
    }
    else if (auto out = fn.getArgAttrOfType<StringAttr>(i, AttnDialect::OutputAttrHelper::getNameStr())) {
      a.kind = ForwardArg::Output;
      a.input = out.str(); // "y" or "probs"
    }
    else if (fn.getArgAttr(i, AttnDialect::WorkspaceAttrHelper::getNameStr()))
      a.kind = ForwardArg::Workspace;
    else if (auto role = fn.getArgAttrOfType<StringAttr>(i, AttnDialect::WeightAttrHelper::getNameStr())) {
      // The decode entry reads the forward's packed weights: matched by
      // role, and they must have the same packed type.
      a.kind = ForwardArg::Weight;
      for (size_t w = 0; w < plan.weights.size(); ++w)
        if (plan.weights[w].role == role.getValue())
          a.weight = static_cast<int>(w);
      if (a.weight >= 0 && t != plan.weightTypes[a.weight])
        return fn.emitError("weight argument ")
               << i << " (" << role << ") has type " << t
               << " but the forward function packs it as "
               << plan.weightTypes[a.weight];
    }
    if ((a.kind == ForwardArg::Weight && a.weight < 0) ||
        !isa<MemRefType>(t))
      return fn.emitError("unexpected forward argument ") << i << ": " << t;
    args.push_back(a);
  }
  return success();
}

FailureOr<attnc::LoweredEntries> attnc::readEntryTable(ModuleOp module) {
  LoweredEntries e;
  attn::EntryPointsAttr table = attn::EntryPointsAttr::of(module);
  auto lookup = [&](FlatSymbolRefAttr ref, func::FuncOp &out) {
    out = ref ? module.lookupSymbol<func::FuncOp>(ref) : func::FuncOp();
    if (ref && (!out || out.isExternal())) {
      module.emitError("attn.entry_points names @")
          << ref.getValue() << ", which is not a function of the module";
      return false;
    }
    return true;
  };
  if (!lookup(table.getPack(), e.pack))
    return failure();
  for (attn::CodePathAttr p : table.getCodePaths()) {
    bool decode = p.isDecode();
    func::FuncOp ws, tasks, run;
    if (!lookup(p.getWs(), ws) || !lookup(p.getTasks(), tasks) || !lookup(p.getRun(), run))
      return failure();
    func::FuncOp &first = decode ? e.decode : e.forward;
    if (!first)
      first = ws;
    (decode ? e.decodeWs : e.forwardWs).push_back(ws);
    if (run)
      (decode ? e.decodeRuns : e.forwardRuns).push_back(run);
    CodePathSymbols s;
    s.isa = p.getIsa().str();
    s.decode = decode;
    s.ws = ws.getName().str();
    s.tasks = tasks.getName().str();
    s.run = run ? run.getName().str() : "";
    if (p.getKernels())
      for (Attribute k : p.getKernels())
        s.kernels.push_back(cast<SymbolRefAttr>(k).getLeafReference().str());
    e.paths.push_back(std::move(s));
  }
  return e;
}

FailureOr<attnc::PackPlan> attnc::readPackPlan(ModuleOp module,
                                               const LoweredEntries &entries) {
  FailureOr<WeightStorage> storage = readWeightStorage(module);
  if (failed(storage))
    return failure();
  const LoweredEntries *e = &entries;
  if (!e->forward)
    return module.emitError("attn.entry_points has no forward code path "
                            "(attn-to-loops and attnc-outline-tasks make it)");
  FailureOr<PackPlan> plan = computePackPlan(e->forward, *storage);
  if (failed(plan) || failed(recordForwardSignature(e->forward, *plan)) ||
      (e->decode && failed(recordForwardSignature(e->decode, *plan, /*decode=*/true))))
    return failure();
  func::FuncOp pack = e->pack;
  auto packed = pack && pack.getNumArguments() == plan->storage.size() + 1
                    ? dyn_cast<MemRefType>(pack.getArgumentTypes().back())
                    : MemRefType();
  if (!pack || !pack->hasAttr(AttnDialect::PackAttrHelper::getNameStr()) || !packed ||
      packed.getShape() != ArrayRef<int64_t>{plan->packedFloats})
    return module.emitError("attn.entry_points has no packing function of ")
           << plan->packedFloats << " floats for this plan (attnc-pack-weights builds it)";
  plan->lowered.paths = e->paths;
  plan->lowered.pack = pack.getName().str();
  return plan;
}
