/*===- KernelGlue.c - the C entry points of a generated kernel ---*- C -*-===*
 *
 * Compiled into every kernel library attnc writes (with the system C
 * compiler, at attnc time). attnc puts in front of this file the ABI header,
 * the kernel's constants (K_*), the symbol macro KSYM(x) = NAME_##x and the
 * table of code paths `k_variants` (one per instruction set, each three
 * functions generated from MLIR: workspace size, tasks of a phase, run a
 * range of tasks); after it, the metadata record and NAME_query.
 *
 * This file checks every argument of the ABI (sizes included), picks the
 * code path the CPU supports, and runs the phases through the caller's
 * parallel-for hook or a small built-in pthread pool. With K_CUDA (a CUDA
 * target) the phases are kernel launches through the CUDA driver instead.
 * Its only state is the pool, created on first use with more than one
 * thread and stopped (its workers joined) at exit() and at dlclose(), or,
 * with K_CUDA, the driver's entry points and the loaded kernels per CUDA
 * context (k_cu).
 *===---------------------------------------------------------------------===*/
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

/* The generated functions read their buffers through this record
 * (abi_call.def: one field per entry, in order). */
#define K_CALL_ptr void *
#define K_CALL_i64 int64_t
typedef struct attnc_call {
#define ATTNC_CALL(kind, name) K_CALL_##kind name;
#include "attnc/runtime/abi_call.def"
#undef ATTNC_CALL
} attnc_call;

typedef struct attnc_variant {
  uint32_t isa;
  int (*supported)(void);
  int64_t (*ws)(const attnc_call *);
  int64_t (*tasks)(const attnc_call *, int64_t);
  void (*run)(const attnc_call *, int64_t, int64_t, int64_t);
  /* The decode entry's code path (NULL without decode: true). */
  int64_t (*decode_ws)(const attnc_call *);
  int64_t (*decode_tasks)(const attnc_call *, int64_t);
  void (*decode_run)(const attnc_call *, int64_t, int64_t, int64_t);
} attnc_variant;

static int k_has_avx512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v4") != 0;
}
static int k_has_avx512bf16(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v4") && __builtin_cpu_supports("avx512bf16");
}
static int k_has_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v3") != 0;
}
static int k_has_baseline(void) { return 1; }

#ifdef K_CUDA
/*===------------------------ CUDA driver (dlopen) -----------------------===*
 * A CUDA kernel library carries its kernels as PTX (k_ptx) and launches
 * them through the CUDA driver API, which it loads at run time: the library
 * itself depends on nothing but libc, so it loads on a machine without
 * CUDA and forward returns ATTNC_ERR_NO_DRIVER / ATTNC_ERR_NO_DEVICE
 * there. The driver JIT-compiles the PTX for the device on first use (per
 * CUDA context); the functions are cached per context. Only the handful of
 * driver entry points used here are declared (their C ABI is stable). */
#include <dlfcn.h>
typedef int k_cu_result;
typedef int k_cu_device;
typedef struct k_cu_opaque *k_cu_handle;
#define K_CU_ATTR_CC_MAJOR 75
#define K_CU_ATTR_CC_MINOR 76
#define K_CU_ERROR_NO_DEVICE 100
#define K_CU_MAX_CONTEXTS 8
static struct {
  pthread_mutex_t mu;
  int tried, status; /* status: ATTNC_OK or the first try's error */
  void *lib;
  k_cu_result (*init)(unsigned);
  k_cu_result (*device_count)(int *);
  k_cu_result (*device_get)(k_cu_device *, int);
  k_cu_result (*device_attr)(int *, int, k_cu_device);
  k_cu_result (*ctx_get_current)(k_cu_handle *);
  k_cu_result (*ctx_set_current)(k_cu_handle);
  k_cu_result (*ctx_get_device)(k_cu_device *);
  k_cu_result (*primary_ctx_retain)(k_cu_handle *, k_cu_device);
  k_cu_result (*module_load_data)(k_cu_handle *, const void *);
  k_cu_result (*module_get_function)(k_cu_handle *, k_cu_handle, const char *);
  k_cu_result (*launch)(k_cu_handle, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, k_cu_handle, void **, void **);
  int contexts;
  k_cu_handle ctx[K_CU_MAX_CONTEXTS];
  k_cu_handle fn[K_CU_MAX_CONTEXTS][K_CUDA_KERNELS];
} k_cu = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, {0}, {{0}}};

/* Loads the driver once. Caller holds k_cu.mu. */
static int k_cu_load_locked(void) {
  if (k_cu.tried)
    return k_cu.status;
  k_cu.tried = 1;
  k_cu.status = ATTNC_ERR_NO_DRIVER;
  k_cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!k_cu.lib)
    return k_cu.status;
#define K_CU_SYM(field, name)                                  \
  if (!(*(void **)&k_cu.field = dlsym(k_cu.lib, name)))        \
    return k_cu.status;
  K_CU_SYM(init, "cuInit")
  K_CU_SYM(device_count, "cuDeviceGetCount")
  K_CU_SYM(device_get, "cuDeviceGet")
  K_CU_SYM(device_attr, "cuDeviceGetAttribute")
  K_CU_SYM(ctx_get_current, "cuCtxGetCurrent")
  K_CU_SYM(ctx_set_current, "cuCtxSetCurrent")
  K_CU_SYM(ctx_get_device, "cuCtxGetDevice")
  K_CU_SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain")
  K_CU_SYM(module_load_data, "cuModuleLoadData")
  K_CU_SYM(module_get_function, "cuModuleGetFunction")
  K_CU_SYM(launch, "cuLaunchKernel")
#undef K_CU_SYM
  k_cu_result r = k_cu.init(0);
  if (r == K_CU_ERROR_NO_DEVICE)
    return k_cu.status = ATTNC_ERR_NO_DEVICE;
  if (r != 0)
    return k_cu.status;
  int n = 0;
  if (k_cu.device_count(&n) != 0 || n < 1)
    return k_cu.status = ATTNC_ERR_NO_DEVICE;
  return k_cu.status = ATTNC_OK;
}

static int k_cu_sm_ok(k_cu_device dev) {
  int major = 0, minor = 0;
  if (k_cu.device_attr(&major, K_CU_ATTR_CC_MAJOR, dev) != 0 ||
      k_cu.device_attr(&minor, K_CU_ATTR_CC_MINOR, dev) != 0)
    return 0;
  return major * 10 + minor >= K_CUDA_SM;
}

/* The variant table's "supported": a driver and a device 0 new enough. */
static int k_cuda_usable(void) {
  pthread_mutex_lock(&k_cu.mu);
  int ok = k_cu_load_locked() == ATTNC_OK;
  k_cu_device dev;
  if (ok)
    ok = k_cu.device_get(&dev, 0) == 0 && k_cu_sm_ok(dev);
  pthread_mutex_unlock(&k_cu.mu);
  return ok;
}

/* The kernels in the calling thread's current context (the primary
 * context of device 0 when there is none), loaded on first use. */
static int k_cu_functions(k_cu_handle **fns) {
  pthread_mutex_lock(&k_cu.mu);
  int rc = k_cu_load_locked();
  k_cu_handle ctx = 0;
  k_cu_device dev;
  if (rc == ATTNC_OK && (k_cu.ctx_get_current(&ctx) != 0 || !ctx)) {
    if (k_cu.device_get(&dev, 0) != 0 || k_cu.primary_ctx_retain(&ctx, dev) != 0 ||
        k_cu.ctx_set_current(ctx) != 0)
      rc = ATTNC_ERR_DEVICE;
  }
  if (rc == ATTNC_OK && (k_cu.ctx_get_device(&dev) != 0 || !k_cu_sm_ok(dev)))
    rc = ATTNC_ERR_NO_DEVICE;
  int slot = -1;
  for (int i = 0; rc == ATTNC_OK && i < k_cu.contexts; ++i)
    if (k_cu.ctx[i] == ctx)
      slot = i;
  if (rc == ATTNC_OK && slot < 0) {
    k_cu_handle mod;
    if (k_cu.contexts == K_CU_MAX_CONTEXTS ||
        k_cu.module_load_data(&mod, k_ptx) != 0) {
      rc = ATTNC_ERR_DEVICE;
    } else {
      slot = k_cu.contexts;
      for (int p = 0; p < K_CUDA_KERNELS && rc == ATTNC_OK; ++p)
        if (k_cu.module_get_function(&k_cu.fn[slot][p], mod, k_cuda_kernels[p]) != 0)
          rc = ATTNC_ERR_DEVICE;
      if (rc == ATTNC_OK) {
        k_cu.ctx[slot] = ctx;
        k_cu.contexts++;
      }
    }
  }
  if (rc == ATTNC_OK)
    *fns = k_cu.fn[slot];
  pthread_mutex_unlock(&k_cu.mu);
  return rc;
}
#endif

K_VARIANT_TABLE

static int k_level(int (*check)(void)) {
  return check == k_has_avx512bf16 ? 3 : check == k_has_avx512 ? 2 : check == k_has_avx2 ? 1 : 0;
}

/* The first code path this CPU supports; ATTNC_ISA=avx2 (or x86-64) in the
 * environment caps the choice, e.g. to time the AVX2 path on an AVX-512
 * machine or to see how the library behaves on an older CPU. The names are
 * case-insensitive (avx512bf16, avx512, avx2, x86-64; also attnc's target
 * spellings x86-avx512-bf16, x86-avx512, x86-avx2); unset or empty: no cap. Any other value selects
 * nothing (selected_isa() is ATTNC_ISA_NONE, forward and decode return
 * ATTNC_ERR_ISA): a typo must not silently time the wrong path. The kernel
 * cannot print; libattnrt names the bad value (attnrt::isaEnvProblem;
 * strcasecmp: <string.h> declares it under -std=gnu99). */
static const attnc_variant *k_select(void) {
  int cap = 3;
  const char *env = getenv("ATTNC_ISA");
  if (!env || !*env || strcasecmp(env, "avx512bf16") == 0 ||
      strcasecmp(env, "x86-avx512-bf16") == 0)
    cap = 3;
  else if (strcasecmp(env, "avx512") == 0 || strcasecmp(env, "x86-avx512") == 0)
    cap = 2;
  else if (strcasecmp(env, "avx2") == 0 || strcasecmp(env, "x86-avx2") == 0)
    cap = 1;
  else if (strcasecmp(env, "x86-64") == 0)
    cap = 0;
  else
    return NULL;
  for (size_t i = 0; i < sizeof(k_variants) / sizeof(k_variants[0]); ++i)
    if (k_level(k_variants[i].supported) <= cap && k_variants[i].supported())
      return &k_variants[i];
  return NULL;
}

static uint32_t k_selected_isa(void) {
  const attnc_variant *v = k_select();
  return v ? v->isa : ATTNC_ISA_NONE;
}

/* batch and seq_len are valid and every size derived from them fits. */
static int k_shape_ok(int64_t batch, int64_t seq) {
  if (batch < 1 || seq < 1)
    return 0;
  if (K_MAX_SEQ_LEN > 0 && seq > K_MAX_SEQ_LEN)
    return 0;
  /* Indices inside the kernels are 32-bit where they become vector lanes. */
  if (seq > (((int64_t)1) << 30))
    return 0;
  /* batch * seq * widest row * 4 bytes, plus alignment, below 2^62. */
  if (batch > K_MAX_ROWS / seq)
    return 0;
  return 1;
}

/* The workspace of a call: the largest any code path asks for (the one
 * that runs is chosen per call), for forward or, with `decode`, the decode
 * entry. */
static int64_t k_max_ws(const attnc_call *c, int decode) {
  int64_t need = 0;
  for (size_t i = 0; i < sizeof(k_variants) / sizeof(k_variants[0]); ++i) {
    int64_t n = decode ? k_variants[i].decode_ws(c) : k_variants[i].ws(c);
    if (n > need)
      need = n;
  }
  return need;
}

K_EXPORT int64_t KSYM(workspace_size)(int64_t batch, int64_t seq_len,
                             int64_t kv_seq_len) {
  if (!k_shape_ok(batch, seq_len))
    return -1;
  if (K_FEATURES & ATTNC_FEATURE_CROSS) {
    if (!k_shape_ok(batch, kv_seq_len))
      return -1;
  } else if (kv_seq_len != 0 && kv_seq_len != seq_len) {
    return -1;
  }
  attnc_call c;
  memset(&c, 0, sizeof(c));
  c.batch = batch;
  c.seq = seq_len;
  c.kv_seq = kv_seq_len;
  return k_max_ws(&c, 0);
}

K_EXPORT int KSYM(pack)(const void *const *weights, const int64_t *weight_elems,
               int64_t num_weights, void *packed, int64_t packed_bytes) {
  if (!weights || !weight_elems || !packed)
    return ATTNC_ERR_NULL_ARG;
  if (num_weights != K_NUM_WEIGHTS || packed_bytes != K_PACKED_BYTES)
    return ATTNC_ERR_BUFFER_SIZE;
  for (int64_t i = 0; i < K_NUM_WEIGHTS; ++i) {
    if (!weights[i])
      return ATTNC_ERR_NULL_ARG;
    if (weight_elems[i] != k_weight_elems[i])
      return ATTNC_ERR_BUFFER_SIZE;
  }
  /* Padding of the panels must be zero: the kernels multiply it. */
  memset(packed, 0, (size_t)K_PACKED_BYTES);
  KSYM(_pack_impl)(weights, packed);
  return ATTNC_OK;
}

#ifndef K_CUDA
/*===--------------------------- thread pool ----------------------------===*/

#define K_MAX_THREADS 256

static struct {
  pthread_mutex_t use; /* one job at a time */
  pthread_mutex_t mu;
  pthread_cond_t work, done;
  int started;
  int alive; /* workers that reached their wait loop */
  int quit;  /* set by k_pool_stop: workers return */
  int hooked; /* k_pool_stop is registered with atexit */
  unsigned long long gen;
  int limit;   /* workers [0, limit) take part in the current job */
  int pending; /* workers still in the current job */
  attnc_task_fn fn;
  void *ctx;
  int64_t n;
  int64_t next;
  pthread_t threads[K_MAX_THREADS];
} k_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
            PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

/* Busy-waits (with pause) while *p == v, for at most about K_SPIN_NS
 * nanoseconds. Only a hint: callers re-check under the mutex. */
#define K_SPIN_NS 50000
static void k_spin_while_equal(const unsigned long long *p, unsigned long long v) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v ||
          __atomic_load_n(&k_pool.quit, __ATOMIC_ACQUIRE))
        return;
      __builtin_ia32_pause();
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) > K_SPIN_NS)
      return;
  }
}

static void k_pool_drain(void) {
  for (;;) {
    int64_t t = __atomic_fetch_add(&k_pool.next, 1, __ATOMIC_RELAXED);
    if (t >= k_pool.n)
      return;
    k_pool.fn(k_pool.ctx, t, t + 1);
  }
}

static void *k_pool_worker(void *arg) {
  int id = (int)(intptr_t)arg;
  int mine = 0;
  pthread_mutex_lock(&k_pool.mu);
  /* A job started before this worker existed is not its job (after a fork
   * or k_pool_stop, gen keeps counting). */
  unsigned long long seen = k_pool.gen;
  ++k_pool.alive;
  pthread_cond_broadcast(&k_pool.done);
  pthread_mutex_unlock(&k_pool.mu);
  for (;;) {
    /* The phases of a call follow each other within microseconds: spin a
     * little for the next job before sleeping on the condition variable
     * (a futex round trip costs more than a short phase). */
    if (mine)
      k_spin_while_equal(&k_pool.gen, seen);
    pthread_mutex_lock(&k_pool.mu);
    while (k_pool.gen == seen && !k_pool.quit)
      pthread_cond_wait(&k_pool.work, &k_pool.mu);
    if (k_pool.quit) {
      pthread_mutex_unlock(&k_pool.mu);
      return NULL;
    }
    seen = k_pool.gen;
    mine = id < k_pool.limit;
    pthread_mutex_unlock(&k_pool.mu);
    if (!mine)
      continue;
    k_pool_drain();
    pthread_mutex_lock(&k_pool.mu);
    if (__atomic_sub_fetch(&k_pool.pending, 1, __ATOMIC_ACQ_REL) == 0)
      pthread_cond_signal(&k_pool.done);
    pthread_mutex_unlock(&k_pool.mu);
  }
}

/* Stops and joins the workers. Registered with atexit() when the first
 * worker starts; in a shared object that registration belongs to the
 * object, so it runs at exit() (before the exit-time checks of sanitizers,
 * which registered earlier) and at dlclose(): no worker is ever left
 * running, or parked, in code that is about to be unmapped. */
static void k_pool_stop(void) {
  pthread_mutex_lock(&k_pool.use);
  pthread_mutex_lock(&k_pool.mu);
  __atomic_store_n(&k_pool.quit, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&k_pool.work);
  pthread_mutex_unlock(&k_pool.mu);
  for (int i = 0; i < k_pool.started; ++i)
    pthread_join(k_pool.threads[i], NULL);
  k_pool.started = k_pool.alive = k_pool.quit = 0;
  pthread_mutex_unlock(&k_pool.use);
}

/* In a child of fork() only the forking thread exists: start afresh. */
static void k_pool_after_fork(void) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  k_pool.use = m;
  k_pool.mu = m;
  k_pool.work = c;
  k_pool.done = c;
  k_pool.started = k_pool.alive = k_pool.quit = 0;
}

/* Runs fn over [0, n) on `threads` threads (the caller is one of them). */
static int k_pool_run(int threads, int64_t n, attnc_task_fn fn, void *ctx) {
  if (threads > K_MAX_THREADS)
    threads = K_MAX_THREADS;
  if (threads > n)
    threads = (int)n;
  if (threads <= 1) {
    fn(ctx, 0, n);
    return 0;
  }
  pthread_mutex_lock(&k_pool.use);
  pthread_mutex_lock(&k_pool.mu);
  if (!k_pool.hooked && k_pool.started < threads - 1) {
    if (atexit(k_pool_stop) != 0 ||
        pthread_atfork(NULL, NULL, k_pool_after_fork) != 0) {
      pthread_mutex_unlock(&k_pool.mu);
      pthread_mutex_unlock(&k_pool.use);
      fn(ctx, 0, n); /* no pool without a way to stop it */
      return 0;
    }
    k_pool.hooked = 1;
  }
  while (k_pool.started < threads - 1) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    size_t stack = (size_t)K_STACK_BYTES * 2 + ((size_t)1 << 20);
    pthread_attr_setstacksize(&attr, stack);
    int rc = pthread_create(&k_pool.threads[k_pool.started], &attr,
                            k_pool_worker, (void *)(intptr_t)k_pool.started);
    pthread_attr_destroy(&attr);
    if (rc != 0)
      break;
    ++k_pool.started;
  }
  /* Every worker is parked in its wait loop before the pool is used: no
   * thread is still starting when the caller returns (or the process
   * exits right after, which sanitizers' exit-time checks do not survive). */
  while (k_pool.alive < k_pool.started)
    pthread_cond_wait(&k_pool.done, &k_pool.mu);
  int workers = threads - 1 < k_pool.started ? threads - 1 : k_pool.started;
  k_pool.fn = fn;
  k_pool.ctx = ctx;
  k_pool.n = n;
  k_pool.next = 0;
  k_pool.limit = workers;
  __atomic_store_n(&k_pool.pending, workers, __ATOMIC_RELEASE);
  __atomic_add_fetch(&k_pool.gen, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&k_pool.work);
  pthread_mutex_unlock(&k_pool.mu);
  k_pool_drain();
  /* The workers finish their last tasks about when this thread does. */
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (__atomic_load_n(&k_pool.pending, __ATOMIC_ACQUIRE) > 0) {
    __builtin_ia32_pause();
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) > K_SPIN_NS)
      break;
  }
  pthread_mutex_lock(&k_pool.mu);
  while (__atomic_load_n(&k_pool.pending, __ATOMIC_ACQUIRE) > 0)
    pthread_cond_wait(&k_pool.done, &k_pool.mu);
  pthread_mutex_unlock(&k_pool.mu);
  pthread_mutex_unlock(&k_pool.use);
  return 0;
}

/*===----------------------------- forward ------------------------------===*/

typedef void (*k_run_fn)(const attnc_call *, int64_t, int64_t, int64_t);
typedef int64_t (*k_tasks_fn)(const attnc_call *, int64_t);

typedef struct k_phase {
  k_run_fn run;
  const attnc_call *c;
  int64_t phase;
} k_phase;

static void k_run_task(void *ctx, int64_t begin, int64_t end) {
  const k_phase *p = (const k_phase *)ctx;
  if (begin < end)
    p->run(p->c, p->phase, begin, end);
}

/* Runs the phases of one entry in order, each through the caller's hook or
 * the built-in pool. */
static int k_run_phases(k_tasks_fn tasks, k_run_fn run, int64_t phases,
                        const attnc_call *c, attnc_parallel_for_fn parallel_for,
                        void *parallel_ctx, int32_t num_threads) {
  int threads = num_threads;
  if (!parallel_for && threads == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    threads = cpus > 0 ? (int)cpus : 1;
  }
  for (int64_t phase = 0; phase < phases; ++phase) {
    int64_t n = tasks(c, phase);
    if (n <= 0)
      continue;
    k_phase p = {run, c, phase};
    int rc = parallel_for ? parallel_for(parallel_ctx, n, k_run_task, &p)
                          : k_pool_run(threads, n, k_run_task, &p);
    if (rc != 0)
      return ATTNC_ERR_THREADS;
  }
  return ATTNC_OK;
}

#else
/* One launch per phase on `stream`: grid = the phase's tasks, block = the
 * kernel's threads; every kernel of an entry takes the same parameters
 * (the expanded memref descriptors of the lowered function's arguments).
 * The entry's kernels are k_cuda_kernels[first, first + phases). */
static int k_cuda_run(int64_t (*tasks)(const attnc_call *, int64_t),
                      int64_t (*args)(const attnc_call *, int64_t *),
                      int64_t nargs, int first, int phases,
                      const attnc_call *c, void *stream) {
  k_cu_handle *fns;
  int rc = k_cu_functions(&fns);
  if (rc != ATTNC_OK)
    return rc;
  /* Every grid fits in gridDim.x before anything is queued. */
  int64_t blocks[K_CUDA_KERNELS];
  for (int p = 0; p < phases; ++p)
    if ((blocks[p] = tasks(c, p)) > 0x7fffffff)
      return ATTNC_ERR_BAD_SHAPE;
  int64_t vals[K_CUDA_MAX_ARGS];
  void *params[K_CUDA_MAX_ARGS];
  if (nargs > K_CUDA_MAX_ARGS || args(c, vals) != nargs)
    return ATTNC_ERR_ARGS;
  for (int64_t i = 0; i < nargs; ++i)
    params[i] = &vals[i];
  for (int p = 0; p < phases; ++p)
    if (blocks[p] > 0 &&
        k_cu.launch(fns[first + p], (unsigned)blocks[p], 1, 1,
                    k_cuda_threads[first + p], 1, 1, 0, (k_cu_handle)stream,
                    params, NULL) != 0)
      return ATTNC_ERR_DEVICE;
  return ATTNC_OK;
}
#endif

/* positions[b] (NULL: 0) with positions[b] + seq past the first
 * position of no sequence: 0 <= positions[b] <= 2^30 - seq. A CUDA
 * kernel's positions are device memory: the kernels clamp them. */
static int k_positions_ok(const int32_t *positions, int64_t batch, int64_t seq,
                          int64_t limit) {
  for (int64_t b = 0; positions && b < ((K_FEATURES & ATTNC_FEATURE_CUDA) ? 0 : batch); ++b)
    if (positions[b] < 0 || positions[b] > limit - seq)
      return 0;
  return 1;
}

K_EXPORT int KSYM(forward)(const attnc_forward_args *a) {
  if (!a)
    return ATTNC_ERR_NULL_ARG;
  if (a->struct_size != sizeof(attnc_forward_args) || a->reserved0 != 0 ||
      a->reserved1 != 0 || a->num_threads < 0)
    return ATTNC_ERR_ARGS;
  if ((K_FEATURES & ATTNC_FEATURE_CUDA) == 0 && a->stream)
    return ATTNC_ERR_ARGS;
  if ((K_FEATURES & ATTNC_FEATURE_DECODE) == 0 &&
      (a->k_cache || a->v_cache || a->cache_elems || a->cache_len))
    return ATTNC_ERR_ARGS;
  /* Variant fields this kernel does not take must be empty. */
  if (((K_FEATURES & ATTNC_FEATURE_LENGTHS) == 0 && a->lengths) ||
      ((K_FEATURES & ATTNC_FEATURE_CROSS) == 0 &&
       (a->x_kv || a->x_kv_elems || a->kv_lengths ||
        (a->kv_seq_len != 0 && a->kv_seq_len != a->seq_len))) ||
      ((K_FEATURES & ATTNC_FEATURE_PROBS) == 0 && (a->probs || a->probs_elems)))
    return ATTNC_ERR_ARGS;
  if (!a->packed || !a->x || !a->y)
    return ATTNC_ERR_NULL_ARG;
  if (!k_shape_ok(a->batch, a->seq_len))
    return ATTNC_ERR_BAD_SHAPE;
  int64_t rows = a->batch * a->seq_len;
  if (a->packed_bytes != K_PACKED_BYTES || a->x_elems != rows * K_D_MODEL ||
      a->y_elems != rows * K_OUT_DIM)
    return ATTNC_ERR_BUFFER_SIZE;
  if (!k_positions_ok(a->positions, a->batch, a->seq_len, ((int64_t)1) << 30))
    return ATTNC_ERR_ARGS;
  int64_t kv_seq = a->seq_len;
  if (K_FEATURES & ATTNC_FEATURE_CROSS) {
    if (!a->x_kv)
      return ATTNC_ERR_NULL_ARG;
    kv_seq = a->kv_seq_len;
    if (!k_shape_ok(a->batch, kv_seq))
      return ATTNC_ERR_BAD_SHAPE;
    if (a->x_kv_elems != a->batch * kv_seq * K_D_MODEL)
      return ATTNC_ERR_BUFFER_SIZE;
  }
  /* Attention weights: optional (NULL: not computed), exactly sized. */
  if ((K_FEATURES & ATTNC_FEATURE_PROBS) &&
      (a->probs ? a->probs_elems / K_HEADS / a->batch / a->seq_len != kv_seq ||
                      a->probs_elems % (K_HEADS * a->batch * a->seq_len) != 0
                : a->probs_elems != 0))
    return ATTNC_ERR_BUFFER_SIZE;
  /* Valid lengths (right padding): 0 <= lengths[b] <= seq_len. A CUDA
   * kernel's lengths are in device memory: the kernels clamp them. */
  for (int64_t b = 0; b < ((K_FEATURES & ATTNC_FEATURE_CUDA) ? 0 : a->batch); ++b)
    if ((a->lengths && (a->lengths[b] < 0 || a->lengths[b] > a->seq_len)) ||
        (a->kv_lengths && (a->kv_lengths[b] < 0 || a->kv_lengths[b] > kv_seq)))
      return ATTNC_ERR_ARGS;
  /* KV cache: both or neither; long enough for the prompt. */
  if ((a->k_cache != NULL) != (a->v_cache != NULL))
    return ATTNC_ERR_NULL_ARG;
  if (a->k_cache) {
    /* The cache rows are positions: a prompt that does not start at 0 is
     * a decode call (a chunk) at its positions. */
    if (a->k_cache == a->v_cache || a->positions)
      return ATTNC_ERR_ARGS;
    if (a->cache_len < a->seq_len || !k_shape_ok(a->batch, a->cache_len))
      return ATTNC_ERR_BAD_SHAPE;
    if (a->cache_elems != a->batch * a->cache_len * K_KV_HEADS * K_HEAD_DIM)
      return ATTNC_ERR_BUFFER_SIZE;
  } else if (a->cache_elems || a->cache_len) {
    return ATTNC_ERR_BUFFER_SIZE;
  }
#ifdef K_CUDA
  const attnc_variant *v = &k_variants[0];
#else
  const attnc_variant *v = k_select();
  if (!v)
    return ATTNC_ERR_ISA;
#endif
  attnc_call c;
  memset(&c, 0, sizeof(c));
  c.k_cache = a->k_cache;
  c.v_cache = a->v_cache;
  c.cache_len = a->k_cache ? a->cache_len : 0;
  c.packed = (void *)a->packed;
  c.x = (void *)a->x;
  c.y = a->y;
  c.ws = a->workspace;
  c.ws_bytes = a->workspace && a->workspace_bytes > 0 ? a->workspace_bytes : 0;
  c.batch = a->batch;
  c.seq = a->seq_len;
  c.positions = (void *)a->positions;
  c.lengths = (void *)a->lengths;
  c.x_kv = (void *)a->x_kv;
  c.kv_seq = kv_seq;
  c.kv_lengths = (void *)a->kv_lengths;
  c.probs = a->probs;
  if (v->ws(&c) > c.ws_bytes)
    return ATTNC_ERR_WORKSPACE;
#ifdef K_CUDA
  return k_cuda_run(v->tasks, K_CUDA_ARGS_FN, K_CUDA_ARGS, 0, K_PHASES, &c, a->stream);
#else
  return k_run_phases(v->tasks, v->run, K_PHASES, &c, a->parallel_for,
                      a->parallel_ctx, a->num_threads);
#endif
}

#if K_FEATURES & ATTNC_FEATURE_DECODE
K_EXPORT int64_t KSYM(decode_workspace_bytes)(int64_t batch, int64_t seq_len,
                                              int64_t cache_len) {
  if (!k_shape_ok(batch, seq_len) || !k_shape_ok(batch, cache_len) ||
      seq_len > cache_len || (K_DECODE_MAX_SEQ && seq_len > K_DECODE_MAX_SEQ))
    return -1;
  attnc_call c;
  memset(&c, 0, sizeof(c));
  c.batch = batch;
  c.seq = seq_len;
  c.kv_seq = seq_len;
  c.cache_len = cache_len;
  return k_max_ws(&c, 1);
}

K_EXPORT int KSYM(decode)(const attnc_decode_args *a) {
  if (!a)
    return ATTNC_ERR_NULL_ARG;
  if (a->struct_size != sizeof(attnc_decode_args) || a->reserved0 != 0 ||
      a->reserved1 != 0 || a->num_threads < 0)
    return ATTNC_ERR_ARGS;
  if ((K_FEATURES & ATTNC_FEATURE_CUDA) == 0 && a->stream)
    return ATTNC_ERR_ARGS;
  if (!a->packed || !a->x || !a->y || !a->positions || !a->k_cache ||
      !a->v_cache)
    return ATTNC_ERR_NULL_ARG;
  if (a->k_cache == a->v_cache)
    return ATTNC_ERR_ARGS;
  if (!k_shape_ok(a->batch, a->seq_len) || !k_shape_ok(a->batch, a->cache_len) ||
      a->seq_len > a->cache_len ||
      (K_DECODE_MAX_SEQ && a->seq_len > K_DECODE_MAX_SEQ))
    return ATTNC_ERR_BAD_SHAPE;
  const int64_t rows = a->batch * a->seq_len;
  if (a->packed_bytes != K_PACKED_BYTES ||
      a->x_elems != rows * K_D_MODEL || a->y_elems != rows * K_OUT_DIM ||
      a->cache_elems != a->batch * a->cache_len * K_KV_HEADS * K_HEAD_DIM)
    return ATTNC_ERR_BUFFER_SIZE;
  /* Each sequence's new rows fit the cache (device positions: clamped). */
  if (!k_positions_ok(a->positions, a->batch, a->seq_len, a->cache_len))
    return ATTNC_ERR_ARGS;
#ifdef K_CUDA
  const attnc_variant *v = &k_variants[0];
#else
  const attnc_variant *v = k_select();
  if (!v)
    return ATTNC_ERR_ISA;
#endif
  attnc_call c;
  memset(&c, 0, sizeof(c));
  c.packed = (void *)a->packed;
  c.x = (void *)a->x;
  c.y = a->y;
  c.ws = a->workspace;
  c.ws_bytes = a->workspace && a->workspace_bytes > 0 ? a->workspace_bytes : 0;
  c.batch = a->batch;
  c.seq = a->seq_len;
  c.kv_seq = a->seq_len;
  c.positions = (void *)a->positions;
  c.k_cache = a->k_cache;
  c.v_cache = a->v_cache;
  c.cache_len = a->cache_len;
  if (v->decode_ws(&c) > c.ws_bytes)
    return ATTNC_ERR_WORKSPACE;
#ifdef K_CUDA
  return k_cuda_run(v->decode_tasks, K_CUDA_DECODE_ARGS_FN, K_CUDA_DECODE_ARGS,
                    K_PHASES, K_DECODE_PHASES, &c, a->stream);
#else
  return k_run_phases(v->decode_tasks, v->decode_run, K_DECODE_PHASES, &c,
                      a->parallel_for, a->parallel_ctx, a->num_threads);
#endif
}
#endif
