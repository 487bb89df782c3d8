//===- CodePaths.cpp - the registered kinds of code path ------------------===//
#include "attnc/Target/CodePaths.h"

#include "llvm/Support/ErrorHandling.h"

attnc::CodePathKind::~CodePathKind() = default;

namespace {
const attnc::CodePathKind *kinds[2] = {nullptr, nullptr}; // CPU, CUDA
} // namespace

void attnc::registerCodePathKind(bool cuda, const CodePathKind &kind) {
  kinds[cuda ? 1 : 0] = &kind;
}

const attnc::CodePathKind &attnc::codePathKind(Isa isa) {
  bool cuda = isCuda(isa);
  if (!kinds[cuda ? 1 : 0])
    llvm::report_fatal_error(cuda ? "attnc: no back end for CUDA code paths is registered "
                                    "(attnc::registerCudaCodePaths)"
                                  : "attnc: no back end for CPU code paths is registered "
                                    "(attnc::registerCpuCodePaths)");
  return *kinds[cuda ? 1 : 0];
}

std::string attnc::cString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

const char *attnc::isaMacro(const std::string &isa) {
  const IsaInfo *info = findIsa(isa);
  return info ? info->abiCode : "ATTNC_ISA_X86_64";
}
