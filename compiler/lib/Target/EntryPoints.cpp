//===- EntryPoints.cpp - C-callable wrappers around the lowered code ------===//
//
// The lowered MLIR functions take expanded memref descriptors. For each
// code path V (one per instruction set) this file adds, in LLVM IR,
//
//   int64_t NAME__V_ws(const attnc_call *c)
//   int64_t NAME__V_tasks(const attnc_call *c, int64_t phase)
//   void    NAME__V_run(const attnc_call *c, int64_t phase, int64_t lo, int64_t hi)
//
// and once `void NAME__pack_impl(const float *const *w, float *packed)`,
// which the C glue (KernelGlue.c) calls; `attnc_call` is the record the glue
// fills (pointers, workspace, batch, seq_len, and the variants' inputs). With
// decode: true, NAME__V_decode_ws/_tasks/_run wrap the decode entry's code
// path the same way (same record; seq_len = 1). Every function of a code path
// gets that path's target-cpu/target-features, so one module (and one .so)
// holds AVX-512 and AVX2 code side by side.
//
//===----------------------------------------------------------------------===//
#include "attnc/Target/Target.h"
#include "attnc/Conversion/Passes.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

using namespace llvm;

namespace {
struct WrapperBuilder {
  Module &m;
  const attnc::Spec &spec;
  const attnc::PackPlan &plan;
  LLVMContext &ctx;
  IRBuilder<> b;
  Type *i64, *ptr, *f32;
  StructType *callTy;

  WrapperBuilder(Module &m, const attnc::Spec &spec, const attnc::PackPlan &plan)
      : m(m), spec(spec), plan(plan), ctx(m.getContext()), b(ctx) {
    i64 = b.getInt64Ty();
    ptr = b.getPtrTy();
    f32 = b.getFloatTy();
    // struct attnc_call { packed, x, y, ws, ws_bytes, batch, seq,
    //                      lengths, x_kv, kv_seq, kv_lengths, probs,
    //                      positions, k_cache, v_cache, cache_len }
    callTy = StructType::create(
        ctx, {ptr, ptr, ptr, ptr, i64, i64, i64, ptr, ptr, i64, ptr, ptr,
              ptr, ptr, ptr, i64},
        "attnc_call");
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

  Value *field(Value *call, unsigned i, Type *t) {
    return b.CreateLoad(t, b.CreateStructGEP(callTy, call, i));
  }

  /// The lowered functions' leading arguments, from an attnc_call.
  SmallVector<Value *> forwardArgs(Value *call, bool decode) {
    Value *packed = field(call, 0, ptr), *x = field(call, 1, ptr),
          *y = field(call, 2, ptr), *ws = field(call, 3, ptr),
          *wsBytes = field(call, 4, i64), *batch = field(call, 5, i64),
          *seq = field(call, 6, i64), *lengths = field(call, 7, ptr),
          *xKv = field(call, 8, ptr), *kvSeq = field(call, 9, i64),
          *kvLengths = field(call, 10, ptr), *probs = field(call, 11, ptr),
          *positions = field(call, 12, ptr), *kCache = field(call, 13, ptr),
          *vCache = field(call, 14, ptr), *cacheLen = field(call, 15, i64);
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
        if (a.input == "k_cache" || a.input == "v_cache") {
          // [batch, kv_heads, cache_len, head_dim]
          auto d = dims(a.shape, cacheLen);
          pushMemref(args, a.input == "k_cache" ? kCache : vCache, d);
        } else if (a.input == "positions")
          pushMemref(args, positions, dims(a.shape, seq));
        else if (a.input == "x_kv")
          pushMemref(args, xKv, dims(a.shape, kvSeq));
        else if (a.input == "lengths")
          pushMemref(args, lengths, dims(a.shape, seq));
        else if (a.input == "kv_lengths")
          pushMemref(args, kvLengths, dims(a.shape, seq));
        else
          pushMemref(args, x, dims(a.shape, seq));
        break;
      case attnc::ForwardArg::Output:
        if (a.input == "probs") { // [batch, heads, seq, kv_seq]
          auto d = dims(a.shape, seq);
          if (d.size() == 4 && a.shape[3] < 0)
            d[3] = kvSeq;
          pushMemref(args, probs, d);
        } else {
          pushMemref(args, y, dims(a.shape, seq));
        }
        break;
      case attnc::ForwardArg::Weight:
        pushMemref(args, b.CreateGEP(f32, packed, c64(plan.weights[a.weight].offset)),
                   dims(a.shape, seq));
        break;
      case attnc::ForwardArg::Workspace:
        pushMemref(args, ws, {wsBytes});
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
    // The lowered functions (internal after this) and the wrappers the C
    // glue calls (hidden, so they must not collide when several kernels
    // link into one program): NAME__ISA_{ws,tasks,run} for forward,
    // NAME__ISA_decode_{ws,tasks,run} for decode. No other kernel's name
    // plus a suffix spells these.
    std::string suffix = attnc::variantSuffix(isa).str();
    std::string base = spec.name + (decode ? "_decode__" : "__") + suffix;
    std::string wrap = spec.name + "__" + suffix + (decode ? "_decode" : "");
    Function *ws = m.getFunction(base + "__ws");
    Function *tasks = m.getFunction(base + "__tasks");
    Function *run = m.getFunction(base + "__run");
    bool cuda = attnc::isCudaName(isa);
    if (!ws || !tasks || (!run && !cuda)) {
      error = "internal error: lowered functions of code path " + base + " not found";
      return false;
    }
    {
      Function *fn = define(wrap + "_ws", i64, {ptr});
      b.CreateRet(b.CreateCall(ws, forwardArgs(fn->getArg(0), decode)));
    }
    {
      Function *fn = define(wrap + "_tasks", i64, {ptr, i64});
      auto args = forwardArgs(fn->getArg(0), decode);
      args.push_back(fn->getArg(1));
      b.CreateRet(b.CreateCall(tasks, args));
    }
    if (cuda) {
      // The kernels' parameters (the PTX entries take the same expanded
      // memref descriptors as the host functions): int64_t
      // NAME__V_args(const attnc_call *c, int64_t *out) stores them in
      // order (pointers as integers) and returns how many there are.
      Function *fn = define(wrap + "_args", i64, {ptr, ptr});
      auto args = forwardArgs(fn->getArg(0), decode);
      for (auto [i, v] : llvm::enumerate(args)) {
        Value *x = v->getType()->isPointerTy() ? b.CreatePtrToInt(v, i64) : v;
        b.CreateStore(x, b.CreateGEP(i64, fn->getArg(1), c64(i)));
      }
      b.CreateRet(c64(args.size()));
    } else {
      Function *fn = define(wrap + "_run", b.getVoidTy(), {ptr, i64, i64, i64});
      auto args = forwardArgs(fn->getArg(0), decode);
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
      if (!f.isDeclaration() && (f.getName().starts_with(base + "_") ||
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
    Function *impl = m.getFunction(spec.name + "_pack");
    if (!impl) {
      error = "internal error: lowered function @" + spec.name + "_pack not found";
      return false;
    }
    impl->setName(spec.name + "__pack_lowered");
    Function *fn = define(spec.name + "__pack_impl", b.getVoidTy(), {ptr, ptr});
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

bool attnc::addEntryPoints(Module &m, const Spec &spec, const PackPlan &plan,
                           TargetMachine &tm, std::string &error) {
  m.setTargetTriple(tm.getTargetTriple());
  m.setDataLayout(tm.createDataLayout());
  m.setSourceFileName(spec.name);
  // The lowered functions are implementation details of the wrappers.
  for (Function &f : m)
    if (!f.isDeclaration())
      f.setLinkage(GlobalValue::InternalLinkage);
  WrapperBuilder wb(m, spec, plan);
  for (const std::string &isa : plan.lowered.variants)
    if (!wb.variant(isa, /*decode=*/false, error) ||
        (spec.decode && !wb.variant(isa, /*decode=*/true, error)))
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
