/*===- attnrt_c.h - libattnrt's kernel-library check as a C API --*- C -*-===*
 *
 * What a program that opens kernel libraries itself (the Python package,
 * python/attnc, through ctypes) calls before it dlopen()s one: the checks
 * attnc-run applies through attnrt::Kernel::load (Runtime.h), so that a
 * truncated or corrupt .so is refused instead of crashing the caller
 * (SIGBUS in dlopen) and metadata the runtime cannot trust is refused
 * before anything reads it. The return codes are attnc-run's exit codes
 * (docs/exit-codes.md): 0, or 10 + attnrt::LoadError (11..16).
 *
 * Plain C; no exceptions cross it; every message is NUL-terminated.
 *===---------------------------------------------------------------------===*/
#ifndef ATTNC_RUNTIME_ATTNRT_C_H
#define ATTNC_RUNTIME_ATTNRT_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this C API (attnrt_c_api_version); grows when a function
 * is added. */
#define ATTNRT_C_API_VERSION 3u

/* Return codes of attnrt_check_library: attnc-run's exit codes. */
#define ATTNRT_CHECK_OK 0
#define ATTNRT_CHECK_INTERNAL 1        /* out of memory inside the check */
#define ATTNRT_CHECK_OPEN_FAILED 11    /* missing, not a regular file, not
                                          x86-64 ELF, truncated, dlopen
                                          failed */
#define ATTNRT_CHECK_NO_QUERY 12       /* no attnc_query: not a kernel */
#define ATTNRT_CHECK_ABI_TOO_NEW 13    /* built for a newer runtime */
#define ATTNRT_CHECK_ABI_MISMATCH 14   /* abi_version / struct_size differ */
#define ATTNRT_CHECK_BAD_METADATA 15   /* metadata the runtime cannot trust */
#define ATTNRT_CHECK_MISSING_ENTRY 16  /* NAME_pack/_workspace_size/_forward
                                          (or the decode entries) absent */

/* ATTNRT_C_API_VERSION of the library (not of the header one compiled
 * against). */
uint32_t attnrt_c_api_version(void);

/* ATTNC_ABI_VERSION (abi.h): the kernel ABI this runtime speaks and checks
 * libraries against. */
uint32_t attnrt_abi_version(void);

/* Loads the kernel library `path` with attnrt::Kernel::load (every check it
 * makes: a regular x86-64 ELF file with every header and segment inside it,
 * the file's checksum where attnc stamped one, attnc_query, the ABI version
 * and struct size, the whole metadata record, selected_isa, the entry
 * points) and unloads it again. Returns
 * ATTNRT_CHECK_OK, or one of the codes above with the loader's one-line
 * message ("PATH: ...") in message[0..message_cap), truncated to fit and
 * always NUL-terminated when message is not NULL and message_cap > 0 (""
 * on success). A NULL path is ATTNRT_CHECK_OPEN_FAILED. Running the check
 * runs the library's constructors and its attnc_query and selected_isa
 * functions, as dlopen and the loader do. */
int attnrt_check_library(const char *path, char *message, size_t message_cap);

/* libattnrt's thread pool as a parallel-for hook (abi.h's
 * attnc_parallel_for_fn), since version 2. Pass attnrt_parallel_for as a
 * kernel's forward or decode parallel_for, with parallel_ctx pointing at
 * an attnrt_pool_request that lives until the call returns: every kernel a
 * process calls this way shares one pool of worker threads (attnrt::Kernel
 * and the Python package do this whenever they are given more than one
 * thread and no hook of the caller's). It is the pool each kernel carries
 * for callers without a hook (the same source), started on first use,
 * stopped at exit. One job at a time; a job asked for from inside one of
 * its tasks (a kernel called from a task with this hook) runs inline on
 * that task's thread. Returns 0 once every task has run (a pool that
 * cannot start threads runs them on the calling thread); non-zero only for
 * a NULL task. */
typedef struct attnrt_pool_request {
  int32_t num_threads; /* threads of a job, the caller's included; 0: one
                          per online CPU */
  int64_t stack_bytes; /* stack one task needs (attnc_kernel_info's
                          stack_bytes); workers get twice this + 1 MiB */
} attnrt_pool_request;

int attnrt_parallel_for(void *parallel_ctx, int64_t num_tasks,
                        void (*task)(void *task_ctx, int64_t begin, int64_t end),
                        void *task_ctx);

/* Large buffers on 2 MiB pages, since version 3: asks Linux to back the
 * 2 MiB-aligned part of [p, p + bytes) with transparent huge pages
 * (madvise MADV_HUGEPAGE, then MADV_COLLAPSE, Linux 6.1+, which moves the
 * pages already touched), keeping the contents. A kernel's GEMMs and
 * attention then take fewer TLB misses over its workspace and packed
 * weights (on a Zen 5, GPT-2 small bf16 at T = 2048: the GEMMs 3-8%
 * faster, the block 1-3%, measured). attnrt::Kernel (pack, forward,
 * decode), attnc-run and the Python package call it on the buffers they
 * allocate; a program that allocates its own may too. Returns the bytes
 * advised: 0 for a range without a whole aligned 2 MiB, with
 * ATTNC_HUGE_PAGES=0 in the environment, on a system whose THP setting
 * (/sys/kernel/mm/transparent_hugepage/enabled) is "never" or that has
 * none, or where madvise refuses; never fails. */
size_t attnrt_huge_pages(void *p, size_t bytes);

/* A short stable name for an attnrt_check_library code: "ok", "internal",
 * "open_failed", "no_query", "abi_too_new", "abi_mismatch", "bad_metadata",
 * "missing_entry"; "unknown" otherwise. */
const char *attnrt_check_strerror(int code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_RUNTIME_ATTNRT_C_H */
