//===- EmitObject.cpp - C entry points, metadata, object, shared object ---===//
//
// The lowered MLIR functions take expanded memref descriptors; users get a
// plain C ABI (runtime/include/attnc/runtime/abi.h). This file adds that
// ABI around them in LLVM IR, runs O3 for the target CPU, emits an object
// with LLVM's TargetMachine and links it into a shared object with the
// system driver. Nothing machine- or path-specific is baked in, so the same
// spec and target give a byte-identical .so.
//
//===----------------------------------------------------------------------===//
#include "attnc/Target/Target.h"
#include "attnc/runtime/abi.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

using namespace llvm;

std::unique_ptr<TargetMachine> attnc::createTargetMachine(Isa isa,
                                                          std::string &error) {
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();
  Triple triple("x86_64-unknown-linux-gnu");
  const Target *target = TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string cpu, features;
  switch (isa) {
  case Isa::Host: {
    cpu = sys::getHostCPUName().str();
    std::vector<std::string> fs;
    for (auto &f : sys::getHostCPUFeatures())
      fs.push_back((f.second ? "+" : "-") + f.first().str());
    std::sort(fs.begin(), fs.end()); // deterministic order
    for (auto &f : fs)
      features += (features.empty() ? "" : ",") + f;
    break;
  }
  case Isa::X86_64: cpu = "x86-64"; break;
  case Isa::Avx2: cpu = "x86-64-v3"; break;
  case Isa::Avx512: cpu = "x86-64-v4"; features = "+prefer-no-scatter"; break;
  }
  TargetOptions opts;
  std::unique_ptr<TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, opts, Reloc::PIC_, std::nullopt,
      CodeGenOptLevel::Aggressive));
  if (!tm)
    error = "cannot create a target machine for " + cpu;
  return tm;
}

namespace {
/// Builds the C entry points around the lowered functions.
struct EntryBuilder {
  Module &m;
  const attnc::Spec &spec;
  const attnc::PackPlan &plan;
  LLVMContext &ctx;
  IRBuilder<> b;
  Type *i64, *i32, *ptr, *f32;

  EntryBuilder(Module &m, const attnc::Spec &spec, const attnc::PackPlan &plan)
      : m(m), spec(spec), plan(plan), ctx(m.getContext()), b(ctx) {
    i64 = b.getInt64Ty();
    i32 = b.getInt32Ty();
    ptr = b.getPtrTy();
    f32 = b.getFloatTy();
  }

  Constant *c64(int64_t v) { return ConstantInt::get(i64, v); }
  Constant *c32(uint64_t v) { return ConstantInt::get(i32, v); }

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

  /// Shape with dynamic dims bound to batch (dim 0) and seq (dim 1).
  SmallVector<Value *> dimsOf(const std::vector<int64_t> &shape, Value *batch,
                              Value *seq, Value *wsBytes) {
    SmallVector<Value *> d;
    for (size_t i = 0; i < shape.size(); ++i)
      d.push_back(shape[i] >= 0 ? c64(shape[i])
                  : wsBytes       ? wsBytes
                  : i == 0        ? batch
                                  : seq);
    return d;
  }

  /// Calls the lowered forward with the given pointers; returns the i64
  /// workspace requirement.
  Value *callForward(Function *impl, Value *packed, Value *x, Value *y,
                     Value *batch, Value *seq, Value *ws, Value *wsBytes,
                     bool run) {
    SmallVector<Value *> args;
    for (const attnc::ForwardArg &a : plan.forwardArgs) {
      switch (a.kind) {
      case attnc::ForwardArg::Input:
        pushMemref(args, x, dimsOf(a.shape, batch, seq, nullptr));
        break;
      case attnc::ForwardArg::Output:
        pushMemref(args, y, dimsOf(a.shape, batch, seq, nullptr));
        break;
      case attnc::ForwardArg::Weight: {
        Value *p = b.CreateGEP(f32, packed, c64(plan.weights[a.weight].offset));
        pushMemref(args, p, dimsOf(a.shape, batch, seq, nullptr));
        break;
      }
      case attnc::ForwardArg::Workspace:
        pushMemref(args, ws, {wsBytes});
        break;
      case attnc::ForwardArg::Run:
        args.push_back(b.getInt1(run));
        break;
      }
    }
    return b.CreateCall(impl, args);
  }

  Function *define(const std::string &name, Type *ret, ArrayRef<Type *> params) {
    auto *fn = Function::Create(FunctionType::get(ret, params, false),
                                GlobalValue::ExternalLinkage, name, m);
    fn->setVisibility(GlobalValue::DefaultVisibility);
    fn->addFnAttr(Attribute::NoUnwind);
    b.SetInsertPoint(BasicBlock::Create(ctx, "entry", fn));
    return fn;
  }

  /// if (cond) return code;
  void returnIf(Function *fn, Value *cond, Value *code) {
    auto *then = BasicBlock::Create(ctx, "fail", fn);
    auto *cont = BasicBlock::Create(ctx, "ok", fn);
    b.CreateCondBr(cond, then, cont);
    b.SetInsertPoint(then);
    b.CreateRet(code);
    b.SetInsertPoint(cont);
  }

  Constant *str(const std::string &s) {
    return b.CreateGlobalString(s, "attnc.str", 0, &m);
  }

  bool build(Function *fwdImpl, Function *packImpl, attnc::Isa isa,
             TargetMachine &tm, std::string &error);
};
} // namespace

bool EntryBuilder::build(Function *fwdImpl, Function *packImpl, attnc::Isa isa,
                         TargetMachine &tm, std::string &error) {
  const std::string &n = spec.name;
  Value *maxSeq = c64(spec.maxSeqLen);
  // batch * seq_len beyond this would overflow the 64-bit byte counts of the
  // workspace (widest buffer: the fused QKV row, 4 bytes per element).
  int64_t widest = std::max<int64_t>(
      {spec.dModel, spec.qWidth() + 2 * spec.kvWidth(), spec.qWidth()});
  Value *maxRows = c64((int64_t(1) << 40) / widest);
  auto badShape = [&](Value *batch, Value *seq) {
    Value *bad = b.CreateOr(b.CreateICmpSLT(batch, c64(1)),
                            b.CreateICmpSLT(seq, c64(1)));
    bad = b.CreateOr(bad, b.CreateOr(b.CreateICmpSGT(batch, maxRows),
                                     b.CreateICmpSGT(seq, maxRows)));
    bad = b.CreateOr(bad, b.CreateICmpSGT(b.CreateMul(batch, seq), maxRows));
    if (spec.maxSeqLen > 0)
      bad = b.CreateOr(bad, b.CreateICmpSGT(seq, maxSeq));
    return bad;
  };

  // int NAME_forward(packed, x, y, batch, seq_len, workspace, workspace_bytes)
  {
    Function *fn = define(n + "_forward", i32, {ptr, ptr, ptr, i64, i64, ptr, i64});
    auto a = fn->arg_begin();
    Value *packed = a++, *x = a++, *y = a++, *batch = a++, *seq = a++,
          *ws = a++, *wsBytes = a++;
    Value *nul = b.CreateOr(b.CreateOr(b.CreateIsNull(packed), b.CreateIsNull(x)),
                            b.CreateIsNull(y));
    returnIf(fn, nul, c32(ATTNC_ERR_NULL_ARG));
    returnIf(fn, badShape(batch, seq), c32(ATTNC_ERR_BAD_SHAPE));
    // One call: the lowered function checks the workspace itself and runs
    // only when it fits. A NULL or negative-sized workspace counts as empty.
    Value *usable = b.CreateSelect(
        b.CreateOr(b.CreateIsNull(ws), b.CreateICmpSLT(wsBytes, c64(0))), c64(0),
        wsBytes);
    Value *need = callForward(fwdImpl, packed, x, y, batch, seq, ws, usable,
                              /*run=*/true);
    b.CreateRet(b.CreateSelect(b.CreateICmpSGT(need, usable),
                               c32(ATTNC_ERR_WORKSPACE), c32(ATTNC_OK)));
  }
  // int64_t NAME_workspace_size(batch, seq_len)   (-1 for a bad shape)
  {
    Function *fn = define(n + "_workspace_size", i64, {i64, i64});
    auto a = fn->arg_begin();
    Value *batch = a++, *seq = a++;
    returnIf(fn, badShape(batch, seq), c64(-1));
    Value *null = ConstantPointerNull::get(cast<PointerType>(ptr));
    b.CreateRet(callForward(fwdImpl, null, null, null, batch, seq, null, c64(0),
                            /*run=*/false));
  }
  // int NAME_pack(const float *const *weights, float *packed)
  {
    Function *fn = define(n + "_pack", i32, {ptr, ptr});
    auto a = fn->arg_begin();
    Value *weights = a++, *packed = a++;
    returnIf(fn, b.CreateOr(b.CreateIsNull(weights), b.CreateIsNull(packed)),
             c32(ATTNC_ERR_NULL_ARG));
    SmallVector<Value *> args;
    for (size_t i = 0; i < plan.storage.size(); ++i) {
      Value *p = b.CreateLoad(ptr, b.CreateGEP(ptr, weights, c64(i)));
      returnIf(fn, b.CreateIsNull(p), c32(ATTNC_ERR_NULL_ARG));
      SmallVector<Value *> dims;
      for (int64_t d : plan.storage[i].shape)
        dims.push_back(c64(d));
      pushMemref(args, p, dims);
    }
    pushMemref(args, packed, {c64(plan.packedFloats)});
    b.CreateCall(packImpl, args);
    b.CreateRet(c32(ATTNC_OK));
  }

  // The metadata record (layout of attnc_tensor_info / attnc_kernel_info).
  StructType *tensorTy = StructType::create(
      ctx, {ptr, i32, i32, ArrayType::get(i64, 2)}, "attnc_tensor_info");
  SmallVector<Constant *> tensors;
  for (const auto &t : plan.storage) {
    int64_t d0 = t.shape.size() > 0 ? t.shape[0] : 1;
    int64_t d1 = t.shape.size() > 1 ? t.shape[1] : 1;
    tensors.push_back(ConstantStruct::get(
        tensorTy, {str(t.name), c32(t.shape.size()), c32(0),
                   ConstantArray::get(ArrayType::get(i64, 2), {c64(d0), c64(d1)})}));
  }
  auto *tableTy = ArrayType::get(tensorTy, tensors.size());
  auto *table = new GlobalVariable(m, tableTy, true, GlobalValue::PrivateLinkage,
                                   ConstantArray::get(tableTy, tensors),
                                   "attnc.weights");
  Type *f64 = b.getDoubleTy();
  StructType *infoTy = StructType::create(
      ctx, {i32, i32, ptr, i64, i64, i64, i64, i64, i32, i32, i64, i32, i32,
            f64, i32, i32, i32, i32, ptr, i64, i64, ptr, ptr, ptr},
      "attnc_kernel_info");
  uint64_t infoSize = m.getDataLayout().getTypeAllocSize(infoTy);
  if (infoSize != sizeof(attnc_kernel_info)) {
    error = "internal error: metadata layout differs from abi.h";
    return false;
  }
  attnrt::BlockParams params = attnc::blockParams(spec);
  uint32_t isaCode = isa == attnc::Isa::Host    ? ATTNC_ISA_HOST
                     : isa == attnc::Isa::Avx2   ? ATTNC_ISA_AVX2
                     : isa == attnc::Isa::Avx512 ? ATTNC_ISA_AVX512
                                                 : ATTNC_ISA_X86_64;
  Constant *info = ConstantStruct::get(
      infoTy,
      {c32(ATTNC_ABI_VERSION), c32(infoSize), str(spec.name),
       c64(static_cast<int64_t>(attnc::specHash(spec))), c64(spec.dModel),
       c64(spec.heads), c64(spec.kvHeads), c64(spec.headDim), c32(params.mask),
       c32(params.topLeft ? 1 : 0),
       c64(spec.window), c32(spec.bias), c32(spec.outProj),
       ConstantFP::get(f64, spec.effectiveScale()), c32(ATTNC_DTYPE_F32),
       c32(isaCode), c32(params.layout), c32(plan.storage.size()), table,
       c64(plan.packedFloats), c64(spec.maxSeqLen),
       str(tm.getTargetTriple().str()), str(tm.getTargetCPU().str()),
       str(std::string("attnc ") + ATTNC_VERSION)});
  auto *infoVar = new GlobalVariable(m, infoTy, true, GlobalValue::PrivateLinkage,
                                     info, "attnc.info");
  infoVar->setAlignment(Align(8));
  // A kernel named "attnc" has NAME_query == attnc_query: define it once.
  std::vector<std::string> queries{n + "_query"};
  if (n != "attnc")
    queries.push_back("attnc_query");
  for (const std::string &q : queries) {
    Function *fn = define(q, ptr, {i32});
    Value *ok = b.CreateICmpUGE(fn->getArg(0), c32(ATTNC_ABI_VERSION));
    b.CreateRet(b.CreateSelect(ok, infoVar, ConstantPointerNull::get(cast<PointerType>(ptr))));
  }
  return true;
}

bool attnc::addEntryPoints(Module &m, const Spec &spec, const PackPlan &plan,
                           Isa isa, TargetMachine &tm, std::string &error) {
  m.setTargetTriple(tm.getTargetTriple());
  m.setDataLayout(tm.createDataLayout());
  m.setSourceFileName(spec.name);
  Function *fwd = m.getFunction(spec.name);
  Function *pack = m.getFunction(spec.name + "_pack");
  if (!fwd || !pack) {
    error = "internal error: lowered functions @" + spec.name + " / @" +
            spec.name + "_pack not found";
    return false;
  }
  // The lowered functions become internal implementation details.
  fwd->setName(spec.name + "_forward_impl");
  pack->setName(spec.name + "_pack_impl");
  for (Function &f : m)
    if (!f.isDeclaration())
      f.setLinkage(GlobalValue::InternalLinkage);
  EntryBuilder eb(m, spec, plan);
  if (!eb.build(fwd, pack, isa, tm, error))
    return false;
  std::string msg;
  raw_string_ostream os(msg);
  if (verifyModule(m, &os)) {
    error = "internal error: invalid LLVM IR: " + msg;
    return false;
  }
  return true;
}

void attnc::optimizeModule(Module &m, TargetMachine &tm) {
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(OptimizationLevel::O3);
  mpm.run(m, mam);
}

bool attnc::emitCode(Module &m, TargetMachine &tm, bool assembly,
                     SmallVectorImpl<char> &out, std::string &error) {
  raw_svector_ostream os(out);
  legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr,
                             assembly ? CodeGenFileType::AssemblyFile
                                      : CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit this file type";
    return false;
  }
  pm.run(m);
  return true;
}

/// A temporary file next to `path` (so the final rename is atomic), removed
/// on failure and on signals.
static Expected<sys::fs::TempFile> tempFileNextTo(const std::string &path) {
  StringRef dir = sys::path::parent_path(path);
  return sys::fs::TempFile::create((dir.empty() ? "." : dir) +
                                   "/.attnc-%%%%%%%%.tmp");
}

/// keep() or discard() `tmp`, turning LLVM errors into `error`.
static bool finish(sys::fs::TempFile &tmp, const std::string &path, bool ok,
                   std::string &error) {
  if (!ok) {
    consumeError(tmp.discard());
    return false;
  }
  if (Error e = tmp.keep(path)) {
    error = "cannot write '" + path + "': " + toString(std::move(e));
    consumeError(tmp.discard());
    return false;
  }
  return true;
}

bool attnc::writeFileAtomic(const std::string &path, StringRef text,
                            std::string &error) {
  Expected<sys::fs::TempFile> tmp = tempFileNextTo(path);
  if (!tmp) {
    error = "cannot create '" + path + "': " + toString(tmp.takeError());
    return false;
  }
  raw_fd_ostream os(tmp->FD, /*shouldClose=*/false);
  os << text;
  os.flush();
  bool ok = !os.has_error();
  if (!ok)
    error = "cannot write '" + path + "': " + os.error().message();
  os.clear_error();
  return finish(*tmp, path, ok, error);
}

bool attnc::linkSharedObject(ArrayRef<char> object, const std::string &outPath,
                             std::string &error) {
  const char *ccEnv = std::getenv("ATTNC_CC");
  std::string cc = ccEnv && *ccEnv ? ccEnv : "cc";
  auto ccPath = sys::findProgramByName(cc);
  if (!ccPath) {
    error = "cannot find the C compiler driver '" + cc +
            "' used for linking (set ATTNC_CC)";
    return false;
  }
  SmallString<128> objModel;
  sys::path::system_temp_directory(/*ErasedOnReboot=*/true, objModel);
  sys::path::append(objModel, "attnc-%%%%%%%%.o");
  Expected<sys::fs::TempFile> obj = sys::fs::TempFile::create(objModel);
  if (!obj) {
    error = "cannot create a temporary object file: " + toString(obj.takeError());
    return false;
  }
  {
    raw_fd_ostream os(obj->FD, /*shouldClose=*/false);
    os.write(object.data(), object.size());
  }
  Expected<sys::fs::TempFile> so = tempFileNextTo(outPath);
  if (!so) {
    consumeError(obj->discard());
    error = "cannot create '" + outPath + "': " + toString(so.takeError());
    return false;
  }
  std::vector<StringRef> args = {*ccPath, "-shared", "-o", so->TmpName,
                                 obj->TmpName, "-lm", "-Wl,-Bsymbolic",
                                 "-Wl,-z,noexecstack", "-Wl,--build-id=sha1",
                                 "-Wl,--hash-style=gnu", "-s", "-nostartfiles"};
  std::string msg;
  int rc = sys::ExecuteAndWait(*ccPath, args, std::nullopt, {}, 0, 0, &msg);
  consumeError(obj->discard());
  if (rc != 0)
    error = "linking failed (" + cc + " exited with " + std::to_string(rc) +
            ")" + (msg.empty() ? "" : ": " + msg);
  return finish(*so, outPath, rc == 0, error);
}
