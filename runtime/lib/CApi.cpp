//===- CApi.cpp - attnrt_c.h: the loader's checks for C callers -*- C++ -*-===//
//
// attnrt_check_library runs attnrt::Kernel::load on a kernel library and
// hands back its verdict as attnc-run's exit code (10 + LoadError) and its
// message, so that a program that dlopen()s kernels itself (the Python
// package) refuses what attnc-run refuses, with the same words. Nothing
// here re-implements a check: every one lives in Kernel::load.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/attnrt_c.h"

#include "attnc/runtime/Runtime.h"
#include "attnc/runtime/abi.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <sys/mman.h>

namespace {

using attnrt::LoadError;

/// attnc-run's exit code for a load error (tools/attnc-run: 10 + code).
constexpr int exitCode(LoadError e) { return 10 + static_cast<int>(e); }

static_assert(ATTNRT_CHECK_OPEN_FAILED == exitCode(LoadError::OpenFailed), "");
static_assert(ATTNRT_CHECK_NO_QUERY == exitCode(LoadError::NoQuery), "");
static_assert(ATTNRT_CHECK_ABI_TOO_NEW == exitCode(LoadError::AbiTooNew), "");
static_assert(ATTNRT_CHECK_ABI_MISMATCH == exitCode(LoadError::AbiMismatch),
              "");
static_assert(ATTNRT_CHECK_BAD_METADATA == exitCode(LoadError::BadMetadata),
              "");
static_assert(ATTNRT_CHECK_MISSING_ENTRY == exitCode(LoadError::MissingEntry),
              "");

/// Copies `text` into message[0..cap), truncated, always NUL-terminated.
void copyMessage(const char *text, char *message, size_t cap) {
  if (!message || cap == 0)
    return;
  size_t n = std::strlen(text);
  if (n >= cap)
    n = cap - 1;
  std::memcpy(message, text, n);
  message[n] = '\0';
}

} // namespace

extern "C" {

uint32_t attnrt_c_api_version(void) { return ATTNRT_C_API_VERSION; }

size_t attnrt_huge_pages(void *p, size_t bytes) {
  const uintptr_t huge = uintptr_t(2) << 20;
  const char *env = std::getenv("ATTNC_HUGE_PAGES");
  if (!p || (env && std::strcmp(env, "0") == 0))
    return 0;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + huge - 1) & ~(huge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(huge - 1);
  if (end <= begin)
    return 0;
  // A system set to "never" keeps its 4 KiB pages (MADV_HUGEPAGE and
  // MADV_COLLAPSE would both go past that setting); read once.
  static const bool never = [] {
    char mode[128] = {0};
    FILE *f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
      return true; // no THP in this kernel
    size_t n = std::fread(mode, 1, sizeof mode - 1, f);
    std::fclose(f);
    mode[n] = '\0';
    return std::strstr(mode, "[never]") != nullptr;
  }();
  if (never)
    return 0;
  void *at = reinterpret_cast<void *>(begin);
  if (::madvise(at, end - begin, MADV_HUGEPAGE) != 0)
    return 0;
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 // Linux 6.1 (older headers lack it)
#endif
  // The pages already touched (a zeroed vector) are collapsed now; an
  // older kernel refuses (EINVAL) and leaves them to khugepaged.
  (void)::madvise(at, end - begin, MADV_COLLAPSE);
  return size_t(end - begin);
}

uint32_t attnrt_abi_version(void) { return ATTNC_ABI_VERSION; }

int attnrt_check_library(const char *path, char *message, size_t message_cap) {
  copyMessage("", message, message_cap);
  if (!path) {
    copyMessage("attnrt_check_library: path is NULL", message, message_cap);
    return ATTNRT_CHECK_OPEN_FAILED;
  }
  try {
    std::string why;
    LoadError err = LoadError::None;
    attnrt::Kernel kernel;
    if (kernel.load(path, why, err))
      return ATTNRT_CHECK_OK;
    copyMessage(why.c_str(), message, message_cap);
    return exitCode(err);
  } catch (const std::bad_alloc &) {
    copyMessage("attnrt_check_library: out of memory", message, message_cap);
  } catch (...) {
    copyMessage("attnrt_check_library: unexpected error", message, message_cap);
  }
  return ATTNRT_CHECK_INTERNAL;
}

const char *attnrt_check_strerror(int code) {
  if (code == ATTNRT_CHECK_OK)
    return "ok";
  if (code == ATTNRT_CHECK_INTERNAL)
    return "internal";
  if (code < ATTNRT_CHECK_OPEN_FAILED || code > 10 + 255)
    return "unknown";
  // toString says "unknown" past the last LoadError.
  return attnrt::toString(static_cast<LoadError>(code - 10));
}

} // extern "C"
