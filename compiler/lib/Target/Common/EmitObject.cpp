//===- EmitObject.cpp - target machine, O3, object, shared object ---------===//
//
// Runs O3 for the target CPU, emits an object with LLVM's TargetMachine and
// links it, with the kernel's C glue (KernelGlue.cpp), into a shared object
// or a static archive with the system driver. Nothing machine- or
// path-specific is baked in, so the same spec and target give a
// byte-identical library.
//
//===----------------------------------------------------------------------===//
#include "attnc/Target/Target.h"
#include "attnc/runtime/Checksum.h"
#include "attnc/runtime/Files.h"
#include "attnc/runtime/abi.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Export.h"

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

#include <cstdlib>
#include <unistd.h>

using namespace llvm;

std::unique_ptr<TargetMachine> attnc::createTargetMachine(Isa isa,
                                                          std::string &error) {
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();
  Triple triple("x86_64-unknown-linux-gnu");
  const Target *target = TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  // The multi-ISA library's baseline is plain x86-64: each function of a
  // code path carries its own target-cpu/target-features (EntryPoints.cpp).
  std::string cpu, features;
  // A CUDA library's host part (glue, sizes, grids) is plain x86-64 too.
  targetCpuAndFeatures(isa == Isa::Multi || isCuda(isa) ? "x86-64" : isaName(isa),
                       cpu, features);
  TargetOptions opts;
  std::unique_ptr<TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, opts, Reloc::PIC_, std::nullopt,
      CodeGenOptLevel::Aggressive));
  if (!tm)
    error = "cannot create a target machine for " + cpu;
  return tm;
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
/// Named .attnc-PID-XXXXXXXX.tmp: the next compile removes those of
/// processes that are gone (attnc/runtime/Files.h).
static Expected<sys::fs::TempFile> tempFileNextTo(const std::string &path) {
  StringRef dir = sys::path::parent_path(path);
  std::string d = dir.empty() ? "." : dir.str();
  attnrt::removeStaleTemporaries(d, ".attnc");
  return sys::fs::TempFile::create(d + "/.attnc-" + std::to_string(::getpid()) +
                                   "-%%%%%%%%.tmp");
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

bool attnc::linkSharedObject(ArrayRef<char> object, const std::string &glue,
                             const std::string &soname, bool archive,
                             const std::string &outPath, std::string &error) {
  auto tool = [&](const char *env, const char *dflt, std::string &path) {
    const char *e = std::getenv(env);
    std::string name = e && *e ? e : dflt;
    // Without PATH in the environment (env -i, some service managers):
    // the usual one, for the search here and for the driver's own (cc
    // finds ld through PATH).
    if (const char *pathEnv = std::getenv("PATH"); !pathEnv || !*pathEnv)
      ::setenv("PATH", "/usr/local/bin:/usr/bin:/bin", 1);
    auto p = sys::findProgramByName(name);
    if (!p) {
      error = "cannot find '" + name + "' (set " + env + ")";
      return false;
    }
    path = *p;
    return true;
  };
  std::string cc;
  if (!tool("ATTNC_CC", "cc", cc))
    return false;
  std::string ar;
  if (archive && !tool("ATTNC_AR", "ar", ar))
    return false;

  // Temporaries in a private directory, with fixed names so a static
  // archive's members are named the same every time (deterministic output).
  // TMPDIR/attnc-PID-XXXXXX.tmp; a killed compile's is removed by the next.
  SmallString<128> dir;
  {
    SmallString<128> tmpRoot;
    sys::path::system_temp_directory(/*ErasedOnReboot=*/true, tmpRoot);
    std::string why, made = attnrt::makeTemporary(std::string(tmpRoot), "attnc",
                                                  /*directory=*/true, why);
    if (made.empty()) {
      error = why;
      return false;
    }
    dir = made;
  }
  // (the temporaries' names, and a static archive's members: cut so that
  // base + "_entry.o" stays within a file name's 255 bytes whatever -o's
  // name is; still the same every time)
  std::string base = sys::path::stem(soname).str().substr(0, 128);
  SmallString<128> objPath(dir), srcPath(dir), glueObjPath(dir);
  sys::path::append(objPath, base + ".o");
  sys::path::append(srcPath, base + "_entry.c");
  sys::path::append(glueObjPath, base + "_entry.o");
  auto cleanup = [&] {
    sys::fs::remove(objPath);
    sys::fs::remove(srcPath);
    sys::fs::remove(glueObjPath);
    sys::fs::remove(dir);
  };
  {
    std::error_code ec1, ec2;
    raw_fd_ostream os(objPath, ec1, sys::fs::OF_None);
    raw_fd_ostream gs(srcPath, ec2, sys::fs::OF_None);
    if (ec1 || ec2) {
      error = "cannot write temporary files in " + dir.str().str();
      cleanup();
      return false;
    }
    os.write(object.data(), object.size());
    gs << glue;
  }
  struct {
    std::string TmpName;
  } objT{objPath.str().str()}, srcT{srcPath.str().str()}, glueT{glueObjPath.str().str()};
  auto *obj = &objT, *src = &srcT, *glueObj = &glueT;
  auto exec = [&](ArrayRef<StringRef> args, const char *what) {
    std::string msg;
    int rc = sys::ExecuteAndWait(args[0], args, std::nullopt, {}, 0, 0, &msg);
    if (rc != 0)
      error = std::string(what) + " failed (" + sys::path::filename(args[0]).str() +
              " exited with " + std::to_string(rc) + ")" +
              (msg.empty() ? "" : ": " + msg);
    return rc == 0;
  };
  // The glue: C99, position independent, only the ABI entry points visible.
  std::vector<StringRef> ccArgs = {cc, "-std=gnu99", "-O2", "-fPIC",
                                   "-fvisibility=hidden", "-pthread",
                                   "-c",
                                   "-x", "c", src->TmpName, "-o", glueObj->TmpName};
  if (!archive)
    ccArgs.insert(ccArgs.begin() + 1, "-DATTNC_SHARED");
  if (!exec(ccArgs, "compiling the kernel's C entry points")) {
    cleanup();
    return false;
  }
  Expected<sys::fs::TempFile> out = tempFileNextTo(outPath);
  if (!out) {
    cleanup();
    error = "cannot create '" + outPath + "': " + toString(out.takeError());
    return false;
  }
  bool ok;
  if (archive) {
    // ar appends to an existing file: the temporary must not exist yet.
    sys::fs::remove(out->TmpName);
    ok = exec({ar, "rcsD", out->TmpName, obj->TmpName, glueObj->TmpName},
              "writing the static archive");
  } else {
    std::string sonameArg = "-Wl,-soname," + soname;
    ok = exec({cc, "-shared", "-o", out->TmpName, obj->TmpName, glueObj->TmpName,
               "-pthread", "-ldl", sonameArg, "-Wl,-Bsymbolic", "-Wl,-z,noexecstack",
               "-Wl,--build-id=sha1", "-Wl,--hash-style=gnu", "-s"},
              "linking");
  }
  cleanup();
  // The CRC-32 of the finished file, into its .attnc.checksum section.
  if (ok && !archive && !attnrt::stampChecksum(out->TmpName, error))
    ok = false;
  return finish(*out, outPath, ok, error);
}
