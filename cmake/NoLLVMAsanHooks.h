/*===- NoLLVMAsanHooks.h - ASan builds: LLVM's allocator hooks as in libLLVM ===
 *
 * Force-included (-include) into every C++ TU of an ASan or fuzz build (see
 * the top CMakeLists.txt). Debian's libLLVM/libMLIR are built without ASan,
 * so inside them LLVM's __asan_(un)poison_memory_region calls (Allocator.h,
 * ArrayRecycler.h) are empty macros. Our instrumented TUs inline the same
 * header functions and would poison slabs that the library's copies then
 * hand out without unpoisoning (false use-after-poison reports in MLIR's
 * attribute storage). Declaring the interface first and then defining the
 * two names as no-op macros makes LLVM's headers in our TUs behave exactly
 * like the library's build. Every memory access of ours is still checked;
 * only LLVM's manual poisoning of its own slabs is off (attnc does no manual
 * poisoning of its own).
 *===----------------------------------------------------------------------===*/
#ifndef ATTNC_NO_LLVM_ASAN_HOOKS_H
#define ATTNC_NO_LLVM_ASAN_HOOKS_H
#if defined(__has_include)
#if __has_include(<sanitizer/asan_interface.h>)
#include <sanitizer/asan_interface.h>
#endif
#endif
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))
#endif
