/*===- ThreadPool.c - libattnrt's thread pool as a parallel-for hook ------===*
 *
 * The pool every CPU kernel carries (thread_pool.inc, the same source the
 * kernel glue embeds), once more in libattnrt_core: attnrt::Kernel's
 * forward and decode and the Python package pass attnrt_parallel_for to
 * the kernels they call, so all kernels of a process share this one pool
 * instead of starting one each.
 *===---------------------------------------------------------------------===*/
#include "attnc/runtime/abi.h"
#include "attnc/runtime/attnrt_c.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "attnc/runtime/thread_pool.inc"

int attnrt_parallel_for(void *parallel_ctx, int64_t num_tasks,
                        void (*task)(void *task_ctx, int64_t begin, int64_t end),
                        void *task_ctx) {
  const attnrt_pool_request *r = (const attnrt_pool_request *)parallel_ctx;
  if (!task)
    return 1;
  if (num_tasks <= 0)
    return 0;
  /* 0: one per online CPU, as a kernel's own pool reads num_threads;
   * k_pool_run caps the count at K_MAX_THREADS and at num_tasks. */
  long threads = r ? r->num_threads : 1;
  if (threads == 0)
    threads = sysconf(_SC_NPROCESSORS_ONLN);
  return k_pool_run(threads > 1 ? (int)(threads < K_MAX_THREADS ? threads : K_MAX_THREADS) : 1,
                    num_tasks, task, task_ctx,
                    r && r->stack_bytes > 0 ? r->stack_bytes : 0);
}
