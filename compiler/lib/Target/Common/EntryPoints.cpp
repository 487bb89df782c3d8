//===- EntryPoints.cpp - C-callable wrappers around the lowered code ------===//
//
// The lowered MLIR functions take expanded memref descriptors. For each
// code path V (one per instruction set) this file adds, in LLVM IR,
//
//   int64_t NAME__V_ws(const attnc_call *c)
//   int64_t NAME__V_tasks(const attnc_call *c, int64_t phase)
//
// and asks the path's kind (CodePaths.h) for the wrapper that runs it: a CPU
// path's NAME__V_run(c, phase, lo, hi) (Target/Cpu), a CUDA path's
// NAME__V_args(c, out), its kernels' parameters (Target/Cuda);
// and once `void NAME__pack_impl(const void *const *w, void *packed)`,
// which the C glue (KernelGlue.c) calls; `attnc_call` is the record the glue
// fills (pointers, workspace, batch, seq_len, and the variants' inputs). With
// decode: true, NAME__V_decode_* wrap the decode entry's code
// path the same way (same record; seq_len = 1). Every function of a code path
// gets that path's target-cpu/target-features, so one module (and one .so)
// holds AVX-512 and AVX2 code side by side.
//
//===----------------------------------------------------------------------===//
#include "attnc/Target/CodePaths.h"
#include "attnc/Target/EntryPointBuilder.h"
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

Value *field(attnc::EntryPointBuilder &e, Value *call, CallField f) {
  return e.b.CreateLoad(kCallFields[f].isPtr ? e.ptr : e.i64,
                        e.b.CreateStructGEP(e.callTy, call, f));
}

/// The record's field named `name` (a run-time argument of the lowered
/// functions is named after the field that holds it), or CF_count.
CallField fieldNamed(const std::string &name) {
  for (unsigned i = 0; i < CF_count; ++i)
    if (name == kCallFields[i].name)
      return CallField(i);
  return CF_count;
}
} // namespace

attnc::EntryPointBuilder::EntryPointBuilder(Module &m, const KernelDesc &desc,
                                            const PackPlan &plan)
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

void attnc::EntryPointBuilder::pushMemref(SmallVectorImpl<Value *> &args, Value *p,
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

SmallVector<Value *> attnc::EntryPointBuilder::forwardArgs(Value *call, bool decode,
                                                          std::string &error) {
    // Every field, loaded once, in record order.
    SmallVector<Value *> f;
    for (unsigned i = 0; i < CF_count; ++i)
      f.push_back(field(*this, call, CallField(i)));
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

Function *attnc::EntryPointBuilder::define(const std::string &name, Type *ret,
                                           ArrayRef<Type *> params) {
  auto *fn = Function::Create(FunctionType::get(ret, params, false),
                              GlobalValue::ExternalLinkage, name, m);
  fn->setVisibility(GlobalValue::HiddenVisibility);
  fn->addFnAttr(Attribute::NoUnwind);
  b.SetInsertPoint(BasicBlock::Create(ctx, "entry", fn));
  return fn;
}

namespace {
/// The wrappers of one code path: _ws and _tasks here, the one that runs
/// it from its kind (CodePathKind::addRunWrapper).
bool addCodePath(attnc::EntryPointBuilder &e, const std::string &isa, bool decode,
                 std::string &error) {
  // The lowered functions (internal after this), as the entry table names
  // them, and the wrappers the C glue calls (hidden, so they must not
  // collide when several kernels link into one program):
  // NAME__ISA_{ws,tasks,run} for forward, NAME__ISA_decode_{ws,tasks,run}
  // for decode. No other kernel's name plus a suffix spells these.
  std::string wrap = attnc::glueSymbolBase(e.desc.name, isa, decode);
  const attnc::CodePathSymbols *path = e.plan.lowered.path(isa, decode);
  const attnc::IsaInfo *info = attnc::findIsa(isa);
  Function *ws = path ? e.m.getFunction(path->ws) : nullptr;
  Function *tasks = path ? e.m.getFunction(path->tasks) : nullptr;
  if (!info || !ws || !tasks) {
    error = "internal error: the lowered functions of code path " + wrap +
            " (attn.entry_points) are not in the module";
    return false;
  }
  {
    Function *fn = e.define(wrap + "_ws", e.i64, {e.ptr});
    auto args = e.forwardArgs(fn->getArg(0), decode, error);
    if (!error.empty())
      return false;
    e.b.CreateRet(e.b.CreateCall(ws, args));
  }
  {
    Function *fn = e.define(wrap + "_tasks", e.i64, {e.ptr, e.i64});
    auto args = e.forwardArgs(fn->getArg(0), decode, error);
    args.push_back(fn->getArg(1));
    e.b.CreateRet(e.b.CreateCall(tasks, args));
  }
  Function *run = nullptr;
  if (!attnc::codePathKind(info->isa).addRunWrapper(e, *path, wrap, decode, run, error))
    return false;
  // The code path's CPU and features on every function that belongs to it.
  // (A CUDA code path's host side, its sizes and launch grids, is plain
  // x86-64 code.)
  std::string cpu, features;
  attnc::targetCpuAndFeatures(!info->cuda ? info->isa : attnc::Isa::X86_64, cpu, features);
  int vw = 0, regs = 0; // `host` asks the CPU: once, not per function
  attnc::vectorShape(info->isa, vw, regs);
  for (Function &f : e.m)
    if (!f.isDeclaration() && (&f == ws || &f == tasks || (run && &f == run) ||
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

bool addPack(attnc::EntryPointBuilder &e, std::string &error) {
  const attnc::PackPlan &plan = e.plan;
  Function *impl = e.m.getFunction(plan.lowered.pack);
  if (!impl) {
    error = "internal error: the packing function @" + plan.lowered.pack +
            " (attn.entry_points) is not in the module";
    return false;
  }
  impl->setName(e.desc.name + "__pack_lowered");
  Function *fn = e.define(e.desc.name + "__pack_impl", e.b.getVoidTy(), {e.ptr, e.ptr});
  Value *weights = fn->getArg(0), *packed = fn->getArg(1);
  SmallVector<Value *> args;
  for (size_t i = 0; i < plan.storage.size(); ++i) {
    Value *p = e.b.CreateLoad(e.ptr, e.b.CreateGEP(e.ptr, weights, e.c64(i)));
    SmallVector<Value *> dims;
    for (int64_t d : plan.storage[i].shape)
      dims.push_back(e.c64(d));
    e.pushMemref(args, p, dims);
  }
  e.pushMemref(args, packed, {e.c64(plan.packedFloats)});
  e.b.CreateCall(impl, args);
  e.b.CreateRetVoid();
  return true;
}
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
  EntryPointBuilder eb(m, desc, plan);
  for (const std::string &isa : plan.lowered.variants)
    if (!addCodePath(eb, isa, /*decode=*/false, error) ||
        (desc.decode() && !addCodePath(eb, isa, /*decode=*/true, error)))
      return false;
  if (!addPack(eb, error))
    return false;
  std::string msg;
  raw_string_ostream os(msg);
  if (verifyModule(m, &os)) {
    error = "internal error: invalid LLVM IR: " + msg;
    return false;
  }
  return true;
}
