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
/* AMX-BF16: CPUID.(7,0).EDX bits 22 (AMX-BF16) and 24 (AMX-TILE), the OS
 * enabling the tile state (XCR0 bits 17 TILECFG and 18 TILEDATA), and
 * Linux's permission for this process to use it (arch_prctl
 * ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, Linux 5.16 and newer; the
 * first tile instruction without it is a SIGILL). The request is made
 * once, at load (k_choose), and holds for every thread of the process.
 * K_AMX_EMULATED (attnc compiled with ATTNC_EMULATE_AMX=1, a test hook):
 * the path's tile operations are AVX512-BF16 vector code, so it needs only
 * that. */
#if !defined(K_AMX_EMULATED) && !defined(K_CUDA) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#endif
static int k_has_amxbf16(void) {
#ifdef K_AMX_EMULATED
  return k_has_avx512bf16();
#elif defined(K_CUDA) || !defined(__linux__)
  return 0;
#else
  unsigned a, b, c, d;
  if (!k_has_avx512bf16() || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return 0;
  if (!(d & (1u << 22)) || !(d & (1u << 24)))
    return 0;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17))
    return 0;
  /* Asked once: k_select runs from the load-time constructor (and, for a
   * constructor of the application's that calls in first, from that call);
   * a second request would be granted the same, so a race is harmless. */
  static int granted = -1;
  if (granted < 0)
    granted = syscall(SYS_arch_prctl, (unsigned long)0x1023 /* ARCH_REQ_XCOMP_PERM */,
                      (unsigned long)18 /* XFEATURE_XTILEDATA */) == 0;
  return granted;
#endif
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
/* The driver's table and its loader: the runtime's cuda_driver.def and
 * cuda_driver.inc (libattnrt's Cuda.cpp reads the same two files). */
#include "attnc/runtime/cuda_driver.inc"
typedef int k_cu_result;
typedef int k_cu_device;
typedef void *k_cu_handle;
#define K_CU_MAX_CONTEXTS 8
static struct {
  pthread_mutex_t mu;
  int tried, status; /* status: ATTNC_OK or the first try's error */
  void *lib;
  attnc_cuda_driver d;
  int contexts;
  k_cu_handle ctx[K_CU_MAX_CONTEXTS];
  k_cu_handle fn[K_CU_MAX_CONTEXTS][K_CUDA_KERNELS];
} k_cu = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Loads the driver once. Caller holds k_cu.mu. */
static int k_cu_load_locked(void) {
  if (k_cu.tried)
    return k_cu.status;
  k_cu.tried = 1;
  k_cu.status = ATTNC_ERR_NO_DRIVER;
  const char *missing;
  k_cu.lib = attnc_cuda_driver_open("libcuda.so.1", &k_cu.d, &missing);
  if (!k_cu.lib)
    return k_cu.status;
  k_cu_result r = k_cu.d.cuInit(0);
  if (r == ATTNC_CU_ERROR_NO_DEVICE)
    return k_cu.status = ATTNC_ERR_NO_DEVICE;
  if (r != 0)
    return k_cu.status;
  int n = 0;
  if (k_cu.d.cuDeviceGetCount(&n) != 0 || n < 1)
    return k_cu.status = ATTNC_ERR_NO_DEVICE;
  return k_cu.status = ATTNC_OK;
}

static int k_cu_sm_ok(k_cu_device dev) {
  int major = 0, minor = 0;
  if (k_cu.d.cuDeviceGetAttribute(&major, ATTNC_CU_ATTR_CC_MAJOR, dev) != 0 ||
      k_cu.d.cuDeviceGetAttribute(&minor, ATTNC_CU_ATTR_CC_MINOR, dev) != 0)
    return 0;
  return major * 10 + minor >= K_CUDA_SM;
}

/* The variant table's "supported": a driver and a device 0 new enough. */
static int k_cuda_usable(void) {
  pthread_mutex_lock(&k_cu.mu);
  int ok = k_cu_load_locked() == ATTNC_OK;
  k_cu_device dev;
  if (ok)
    ok = k_cu.d.cuDeviceGet(&dev, 0) == 0 && k_cu_sm_ok(dev);
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
  if (rc == ATTNC_OK && (k_cu.d.cuCtxGetCurrent(&ctx) != 0 || !ctx)) {
    if (k_cu.d.cuDeviceGet(&dev, 0) != 0 || k_cu.d.cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
        k_cu.d.cuCtxSetCurrent(ctx) != 0)
      rc = ATTNC_ERR_DEVICE;
  }
  if (rc == ATTNC_OK && (k_cu.d.cuCtxGetDevice(&dev) != 0 || !k_cu_sm_ok(dev)))
    rc = ATTNC_ERR_NO_DEVICE;
  int slot = -1;
  for (int i = 0; rc == ATTNC_OK && i < k_cu.contexts; ++i)
    if (k_cu.ctx[i] == ctx)
      slot = i;
  if (rc == ATTNC_OK && slot < 0) {
    k_cu_handle mod;
    if (k_cu.contexts == K_CU_MAX_CONTEXTS ||
        k_cu.d.cuModuleLoadData(&mod, k_ptx) != 0) {
      rc = ATTNC_ERR_DEVICE;
    } else {
      slot = k_cu.contexts;
      for (int p = 0; p < K_CUDA_KERNELS && rc == ATTNC_OK; ++p)
        if (k_cu.d.cuModuleGetFunction(&k_cu.fn[slot][p], mod, k_cuda_kernels[p]) != 0)
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
  return check == k_has_amxbf16      ? 4
         : check == k_has_avx512bf16 ? 3
         : check == k_has_avx512     ? 2
         : check == k_has_avx2       ? 1
                                     : 0;
}

/* The first code path this CPU supports; ATTNC_ISA=avx2 (or x86-64) in the
 * environment (read at load: k_choose) caps the choice, e.g. to time the AVX2 path on an AVX-512
 * machine or to see how the library behaves on an older CPU. The names are
 * case-insensitive (amxbf16, avx512bf16, avx512, avx2, x86-64; also attnc's
 * target spellings x86-amx-bf16, x86-avx512-bf16, x86-avx512, x86-avx2); unset or empty: no cap. Any other value selects
 * nothing (selected_isa() is ATTNC_ISA_NONE, forward and decode return
 * ATTNC_ERR_ISA): a typo must not silently time the wrong path. The kernel
 * cannot print; libattnrt names the bad value (attnrt::isaEnvProblem;
 * strcasecmp: <string.h> declares it under -std=gnu99). */
static const attnc_variant *k_select(void) {
  int cap = 4;
  const char *env = getenv("ATTNC_ISA");
  if (!env || !*env || strcasecmp(env, "amxbf16") == 0 || strcasecmp(env, "x86-amx-bf16") == 0)
    cap = 4;
  else if (strcasecmp(env, "avx512bf16") == 0 || strcasecmp(env, "x86-avx512-bf16") == 0)
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

#ifndef K_CUDA
/* The code path is chosen once, when the library is loaded (a constructor,
 * which runs before any call): a later setenv("ATTNC_ISA") does not switch
 * paths under running code, and no call's getenv races another thread's
 * setenv. (k_chosen_set: a constructor of the application's own that calls
 * in before this one ran still gets the choice made.) */
static const attnc_variant *k_chosen;
static int k_chosen_set;
__attribute__((constructor)) static void k_choose(void) {
  k_chosen = k_select();
  k_chosen_set = 1;
}
static const attnc_variant *k_path(void) {
  if (!k_chosen_set)
    k_choose();
  return k_chosen;
}
#endif

static uint32_t k_selected_isa(void) {
#ifdef K_CUDA
  const attnc_variant *v = k_select();
#else
  const attnc_variant *v = k_path();
#endif
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

/* The pool libattnrt uses too (one source: the runtime's thread_pool.inc,
 * embedded here by attnc). A caller that passes a parallel-for hook (the
 * runtime passes its own pool's) never starts this one. */
#include "attnc/runtime/thread_pool.inc"

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
                          : k_pool_run(threads, n, k_run_task, &p, K_STACK_BYTES);
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
        k_cu.d.cuLaunchKernel(fns[first + p], (unsigned)blocks[p], 1, 1,
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

/* What forward and decode share once each has checked its arguments: the
 * record's common fields, then the code path, its workspace check and the
 * run of its phases (`decode`: the decode entry's code and phases). */
static void k_call_init(attnc_call *c, const void *packed, const void *x, void *y,
                        void *ws, int64_t ws_bytes, int64_t batch, int64_t seq,
                        const int32_t *positions) {
  memset(c, 0, sizeof(*c));
  c->packed = (void *)packed;
  c->x = (void *)x;
  c->y = y;
  c->ws = ws;
  c->ws_bytes = ws && ws_bytes > 0 ? ws_bytes : 0;
  c->batch = batch;
  c->seq = seq;
  c->kv_seq = seq;
  c->positions = (void *)positions;
}

static int k_dispatch(const attnc_call *c, int decode, void *stream,
                      attnc_parallel_for_fn parallel_for, void *parallel_ctx,
                      int num_threads) {
#ifdef K_CUDA
  const attnc_variant *v = &k_variants[0];
#else
  const attnc_variant *v = k_path();
  if (!v)
    return ATTNC_ERR_ISA;
#endif
  if ((decode ? v->decode_ws : v->ws)(c) > c->ws_bytes)
    return ATTNC_ERR_WORKSPACE;
#ifdef K_CUDA
  (void)parallel_for;
  (void)parallel_ctx;
  (void)num_threads;
  return decode ? k_cuda_run(v->decode_tasks, K_CUDA_DECODE_ARGS_FN, K_CUDA_DECODE_ARGS,
                             K_PHASES, K_DECODE_PHASES, c, stream)
                : k_cuda_run(v->tasks, K_CUDA_ARGS_FN, K_CUDA_ARGS, 0, K_PHASES, c, stream);
#else
  (void)stream;
  return decode ? k_run_phases(v->decode_tasks, v->decode_run, K_DECODE_PHASES, c,
                               parallel_for, parallel_ctx, num_threads)
                : k_run_phases(v->tasks, v->run, K_PHASES, c, parallel_for,
                               parallel_ctx, num_threads);
#endif
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
  /* A chunked mask counts its chunks from position 0, and key j of a
   * forward is token j of the call: tokens at other positions without a
   * cache to hold the earlier ones are refused. */
  if (K_CHUNKED && a->positions && !a->k_cache && !(K_FEATURES & ATTNC_FEATURE_CUDA))
    for (int64_t b = 0; b < a->batch; ++b)
      if (a->positions[b] != 0)
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
  attnc_call c;
  k_call_init(&c, a->packed, a->x, a->y, a->workspace, a->workspace_bytes,
              a->batch, a->seq_len, a->positions);
  c.k_cache = a->k_cache;
  c.v_cache = a->v_cache;
  c.cache_len = a->k_cache ? a->cache_len : 0;
  c.lengths = (void *)a->lengths;
  c.x_kv = (void *)a->x_kv;
  c.kv_seq = kv_seq;
  c.kv_lengths = (void *)a->kv_lengths;
  c.probs = a->probs;
  return k_dispatch(&c, 0, a->stream, a->parallel_for, a->parallel_ctx, a->num_threads);
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
  attnc_call c;
  k_call_init(&c, a->packed, a->x, a->y, a->workspace, a->workspace_bytes,
              a->batch, a->seq_len, a->positions);
  c.k_cache = a->k_cache;
  c.v_cache = a->v_cache;
  c.cache_len = a->cache_len;
  return k_dispatch(&c, 1, a->stream, a->parallel_for, a->parallel_ctx, a->num_threads);
}
#endif
