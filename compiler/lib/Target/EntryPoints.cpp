//===- EntryPoints.cpp - C-callable wrappers around the lowered code ------===//
//
// The lowered MLIR functions take expanded memref descriptors. For each
// code path V (one per instruction set) this file adds, in LLVM IR,
//
//   int64_t NAME__V_ws(const attnc_call *c)
//   int64_t NAME__V_tasks(const attnc_call *c, int64_t phase)
//   void    NAME__V_run(const attnc_call *c, int64_t phase, int64_t lo, int64_t hi)
//
// and once `void NAME__pack_impl(const void *const *w, void *packed)`,
// which the C glue (KernelGlue.c) calls; `attnc_call` is the record the glue
// fills (pointers, workspace, batch, seq_len, and the variants' inputs). With
// decode: true, NAME__V_decode_ws/_tasks/_run wrap the decode entry's code
// path the same way (same record; seq_len = 1). Every function of a code path
// gets that path's target-cpu/target-features, so one module (and one .so)
// holds AVX-512 and AVX2 code side by side.
//
//===----------------------------------------------------------------------===//
#include "attnc/Target/Target.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <string_view>

using namespace llvm;

namespace {
/// The fields of the record the glue fills (abi_call.def), in order.
enum CallField : unsigned {
#define ATTNC_CALL(kind, name) CF_##name,
#include "attnc/runtime/abi_call.def"
#undef ATTNC_CALL
  CF_count
};
struct CallFieldInfo {
  const char *name;
  bool isPtr;
};
const CallFieldInfo kCallFields[] = {
#define ATTNC_CALL(kind, name) {#name, std::string_view(#kind) == "ptr"},
#include "attnc/runtime/abi_call.def"
#undef ATTNC_CALL
};

struct WrapperBuilder {
  Module &m;
  const attnc::KernelDesc &desc;
  const attnc::PackPlan &plan;
  LLVMContext &ctx;
  IRBuilder<> b;
  Type *i64, *ptr, *packedTy; // packedTy: the weight dtype
  StructType *callTy;

  WrapperBuilder(Module &m, const attnc::KernelDesc &desc, const attnc::PackPlan &plan)
      : m(m), desc(desc), plan(plan), ctx(m.getContext()), b(ctx) {
    i64 = b.getInt64Ty();
    ptr = b.getPtrTy();
    packedTy = plan.packedElementBytes == 4 ? b.getFloatTy()
               : plan.packedElementType && plan.packedElementType.isBF16()
                   ? b.getBFloatTy()
                   : b.getHalfTy();
    // struct attnc_call, field for field (abi_call.def).
    SmallVector<Type *> fields;
    for (const CallFieldInfo &f : kCallFields)
      fields.push_back(f.isPtr ? ptr : i64);
    callTy = StructType::create(ctx, fields, "attnc_call");
  }

  Constant *c64(int64_t v) { return ConstantInt::get(i64, v); }

  /// Appends an expanded memref descriptor: alloc, aligned, offset, sizes,
  /// row-major strides.
  void pushMemref(SmallVectorImpl<Value *> &args, Value *p,
                  ArrayRef<Value *> dims) {
    args.push_back(p);
    args.push_back(p);
    args.push_back(c64(0));
    for (Value *d : dims)
      args.push_back(d);
    SmallVector<Value *> strides(dims.size());
    Value *acc = c64(1);
    for (int64_t i = dims.size() - 1; i >= 0; --i) {
      strides[i] = acc;
      acc = b.CreateMul(acc, dims[i]);
    }
    args.append(strides.begin(), strides.end());
  }

  Value *field(Value *call, CallField f) {
    return b.CreateLoad(kCallFields[f].isPtr ? ptr : i64, b.CreateStructGEP(callTy, call, f));
  }

  /// The record's field named `name` (a run-time argument of the lowered
  /// functions is named after the field that holds it), or CF_count.
  static CallField fieldNamed(const std::string &name) {
    for (unsigned i = 0; i < CF_count; ++i)
      if (name == kCallFields[i].name)
        return CallField(i);
    return CF_count;
  }

  /// The lowered functions' leading arguments, from an attnc_call.
  SmallVector<Value *> forwardArgs(Value *call, bool decode, std::string &error) {
    // Every field, loaded once, in record order.
    SmallVector<Value *> f;
    for (unsigned i = 0; i < CF_count; ++i)
      f.push_back(field(call, CallField(i)));
    Value *batch = f[CF_batch], *seq = f[CF_seq], *kvSeq = f[CF_kv_seq],
          *cacheLen = f[CF_cache_len];
    auto dims = [&](const std::vector<int64_t> &shape, Value *seqLen) {
      SmallVector<Value *> d;
      for (size_t i = 0; i < shape.size(); ++i)
        d.push_back(shape[i] >= 0 ? c64(shape[i]) : i == 0 ? batch : seqLen);
      return d;
    };
    SmallVector<Value *> args;
    for (const attnc::ForwardArg &a : decode ? plan.decodeArgs : plan.forwardArgs) {
      switch (a.kind) {
      case attnc::ForwardArg::Input:
      case attnc::ForwardArg::Output: {
        CallField fld = fieldNamed(a.input);
        if (fld == CF_count || !kCallFields[fld].isPtr) {
          error = "internal error: run-time argument '" + a.input +
                  "' is no buffer of the call record";
          return {};
        }
        // Dimension 1 of each buffer: the caches' rows, x_kv's tokens, or
        // the call's tokens; probs [batch, heads, seq, kv_seq].
        Value *rows = fld == CF_k_cache || fld == CF_v_cache ? cacheLen
                      : fld == CF_x_kv                       ? kvSeq
                                                             : seq;
        auto d = dims(a.shape, rows);
        if (fld == CF_probs && d.size() == 4 && a.shape[3] < 0)
          d[3] = kvSeq;
        pushMemref(args, f[fld], d);
        break;
      }
      case attnc::ForwardArg::Weight:
        pushMemref(args,
                   b.CreateGEP(packedTy, f[CF_packed], c64(plan.weights[a.weight].offset)),
                   dims(a.shape, seq));
        break;
      case attnc::ForwardArg::Workspace:
        pushMemref(args, f[CF_ws], {f[CF_ws_bytes]});
        break;
      }
    }
    return args;
  }

  Function *define(const std::string &name, Type *ret, ArrayRef<Type *> params) {
    auto *fn = Function::Create(FunctionType::get(ret, params, false),
                                GlobalValue::ExternalLinkage, name, m);
    fn->setVisibility(GlobalValue::HiddenVisibility);
    fn->addFnAttr(Attribute::NoUnwind);
    b.SetInsertPoint(BasicBlock::Create(ctx, "entry", fn));
    return fn;
  }

  bool variant(const std::string &isa, bool decode, std::string &error) {
    // The lowered functions (internal after this), as the entry table names
    // them, and the wrappers the C glue calls (hidden, so they must not
    // collide when several kernels link into one program):
    // NAME__ISA_{ws,tasks,run} for forward, NAME__ISA_decode_{ws,tasks,run}
    // for decode. No other kernel's name plus a suffix spells these.
    std::string wrap = attnc::glueSymbolBase(desc.name, isa, decode);
    const attnc::CodePathSymbols *path = plan.lowered.path(isa, decode);
    bool cuda = attnc::isCudaName(isa);
    Function *ws = path ? m.getFunction(path->ws) : nullptr;
    Function *tasks = path ? m.getFunction(path->tasks) : nullptr;
    Function *run = path && !path->run.empty() ? m.getFunction(path->run) : nullptr;
    if (!ws || !tasks || (!run && !cuda)) {
      error = "internal error: the lowered functions of code path " + wrap +
              " (attn.entry_points) are not in the module";
      return false;
    }
    {
      Function *fn = define(wrap + "_ws", i64, {ptr});
      auto args = forwardArgs(fn->getArg(0), decode, error);
      if (!error.empty())
        return false;
      b.CreateRet(b.CreateCall(ws, args));
    }
    {
      Function *fn = define(wrap + "_tasks", i64, {ptr, i64});
      auto args = forwardArgs(fn->getArg(0), decode, error);
      args.push_back(fn->getArg(1));
      b.CreateRet(b.CreateCall(tasks, args));
    }
    if (cuda) {
      // The kernels' parameters (the PTX entries take the same expanded
      // memref descriptors as the host functions): int64_t
      // NAME__V_args(const attnc_call *c, int64_t *out) stores them in
      // order (pointers as integers) and returns how many there are.
      Function *fn = define(wrap + "_args", i64, {ptr, ptr});
      auto args = forwardArgs(fn->getArg(0), decode, error);
      for (auto [i, v] : llvm::enumerate(args)) {
        Value *x = v->getType()->isPointerTy() ? b.CreatePtrToInt(v, i64) : v;
        b.CreateStore(x, b.CreateGEP(i64, fn->getArg(1), c64(i)));
      }
      b.CreateRet(c64(args.size()));
    } else {
      Function *fn = define(wrap + "_run", b.getVoidTy(), {ptr, i64, i64, i64});
      auto args = forwardArgs(fn->getArg(0), decode, error);
      for (unsigned i = 1; i < 4; ++i)
        args.push_back(fn->getArg(i));
      b.CreateCall(run, args);
      b.CreateRetVoid();
    }
    // The code path's CPU and features on every function that belongs to it.
    // (A CUDA code path's host side, its sizes and launch grids, is plain
    // x86-64 code.)
    std::string cpu, features;
    const attnc::IsaInfo *info = attnc::findIsa(isa);
    attnc::targetCpuAndFeatures(info && !info->cuda ? info->isa : attnc::Isa::X86_64,
                                cpu, features);
    int vw = 0, regs = 0; // `host` asks the CPU: once, not per function
    if (info)
      attnc::vectorShape(info->isa, vw, regs);
    for (Function &f : m)
      if (!f.isDeclaration() && (&f == ws || &f == tasks || &f == run ||
                                 f.getName().starts_with(wrap + "_"))) {
        f.addFnAttr("target-cpu", cpu);
        if (!features.empty())
          f.addFnAttr("target-features", features);
        if (vw == 16) {
          f.addFnAttr("prefer-vector-width", "512");
          f.addFnAttr("min-legal-vector-width", "512");
        }
      }
    return true;
  }

  bool pack(std::string &error) {
    Function *impl = m.getFunction(plan.lowered.pack);
    if (!impl) {
      error = "internal error: the packing function @" + plan.lowered.pack +
              " (attn.entry_points) is not in the module";
      return false;
    }
    impl->setName(desc.name + "__pack_lowered");
    Function *fn = define(desc.name + "__pack_impl", b.getVoidTy(), {ptr, ptr});
    Value *weights = fn->getArg(0), *packed = fn->getArg(1);
    SmallVector<Value *> args;
    for (size_t i = 0; i < plan.storage.size(); ++i) {
      Value *p = b.CreateLoad(ptr, b.CreateGEP(ptr, weights, c64(i)));
      SmallVector<Value *> dims;
      for (int64_t d : plan.storage[i].shape)
        dims.push_back(c64(d));
      pushMemref(args, p, dims);
    }
    pushMemref(args, packed, {c64(plan.packedFloats)});
    b.CreateCall(impl, args);
    b.CreateRetVoid();
    return true;
  }
};
} // namespace

bool attnc::addEntryPoints(Module &m, const KernelDesc &desc, const PackPlan &plan,
                           TargetMachine &tm, std::string &error) {
  m.setTargetTriple(tm.getTargetTriple());
  m.setDataLayout(tm.createDataLayout());
  m.setSourceFileName(desc.name);
  // The lowered functions are implementation details of the wrappers.
  for (Function &f : m)
    if (!f.isDeclaration())
      f.setLinkage(GlobalValue::InternalLinkage);
  WrapperBuilder wb(m, desc, plan);
  for (const std::string &isa : plan.lowered.variants)
    if (!wb.variant(isa, /*decode=*/false, error) ||
        (desc.decode() && !wb.variant(isa, /*decode=*/true, error)))
      return false;
  if (!wb.pack(error))
    return false;
  std::string msg;
  raw_string_ostream os(msg);
  if (verifyModule(m, &os)) {
    error = "internal error: invalid LLVM IR: " + msg;
    return false;
  }
  return true;
}
