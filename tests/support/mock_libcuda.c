/*===- mock_libcuda.c - a stand-in CUDA driver for tests without a GPU ---===*
 *
 * Built as libcuda.so.1 in a test directory and found through
 * LD_LIBRARY_PATH, it implements the driver entry points attnc's kernel glue
 * and libattnrt use, with host memory as "device" memory. It cannot run PTX:
 * it checks what a real driver would be handed and logs it on stderr
 *
 *   mock-cuda: module: PTX 12345 bytes, .target sm_90, 3 entries
 *   mock-cuda: launch NAME grid=(G,1,1) block=(B,1,1) params=N desc0=(d0,d1,d2)
 *
 * (N is the parameter count the PTX entry declares; desc0 the sizes of the
 * first memref descriptor the glue passed, read through the launch's
 * parameter array), so a test sees that the library loads the driver, finds
 * every kernel in its PTX and launches each phase with the right grid,
 * block and arguments. MOCK_CUDA_DEVICES (default 1) and MOCK_CUDA_CC
 * (compute capability, default 90) shape the machine; with MOCK_CUDA_COPIES
 * set it also logs each copy's size ("mock-cuda: copy to device N bytes").
 *===---------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static int devices(void) {
  const char *e = getenv("MOCK_CUDA_DEVICES");
  return e ? atoi(e) : 1;
}
static int cc(void) {
  const char *e = getenv("MOCK_CUDA_CC");
  return e ? atoi(e) : 90;
}

static int ctx_token;
static __thread void *current;

CUresult cuInit(unsigned flags) { (void)flags; return devices() > 0 ? 0 : 100; }
CUresult cuGetErrorString(CUresult r, const char **s) {
  (void)r;
  *s = "mock driver error";
  return 0;
}
CUresult cuDeviceGetCount(int *n) { *n = devices(); return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return i < devices() ? 0 : 101; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  if (attr == 75) *v = cc() / 10;
  else if (attr == 76) *v = cc() % 10;
  else *v = 0;
  return 0;
}
CUresult cuDeviceGetName(char *name, int len, int d) {
  (void)d;
  snprintf(name, (size_t)len, "Mock GPU");
  return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int d) {
  (void)d;
  *bytes = (size_t)1 << 34;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) {
  (void)d;
  *ctx = &ctx_token;
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *ctx) { current = ctx; return 0; }
CUresult cuCtxGetCurrent(void **ctx) { *ctx = current; return 0; }
CUresult cuCtxGetDevice(int *d) { *d = 0; return current ? 0 : 201; }
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  void *m = calloc(1, n ? n : 1);
  *p = (CUdeviceptr)(uintptr_t)m;
  return m ? 0 : 2;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return 0; }
static int log_copies(void) { return getenv("MOCK_CUDA_COPIES") != NULL; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  if (log_copies())
    fprintf(stderr, "mock-cuda: copy to device %zu bytes\n", n);
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  if (log_copies())
    fprintf(stderr, "mock-cuda: copy to host %zu bytes\n", n);
  memcpy(d, (const void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)d, v, n);
  return 0;
}

typedef struct { double ms; } mock_event;
CUresult cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  *e = calloc(1, sizeof(mock_event));
  return *e ? 0 : 2;
}
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *stream) {
  (void)stream;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ((mock_event *)e)->ms = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  return 0;
}
CUresult cuEventSynchronize(void *e) { (void)e; return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  *ms = (float)(((mock_event *)b)->ms - ((mock_event *)a)->ms);
  return 0;
}

typedef struct {
  const char *ptx;
} mock_module;
typedef struct {
  char name[256];
  int params;
} mock_function;

CUresult cuModuleLoadData(void **mod, const void *image) {
  const char *ptx = (const char *)image;
  const char *target = strstr(ptx, ".target sm_");
  if (!strstr(ptx, ".version ") || !target) {
    fprintf(stderr, "mock-cuda: module: not PTX\n");
    return 200; /* CUDA_ERROR_INVALID_IMAGE */
  }
  int sm = atoi(target + strlen(".target sm_"));
  if (sm > cc()) {
    fprintf(stderr, "mock-cuda: module: PTX for sm_%d on an sm_%d device\n", sm, cc());
    return 209; /* CUDA_ERROR_NO_BINARY_FOR_GPU */
  }
  int entries = 0;
  for (const char *p = ptx; (p = strstr(p, ".entry ")); ++p)
    ++entries;
  fprintf(stderr, "mock-cuda: module: PTX %zu bytes, .target sm_%d, %d entries\n",
          strlen(ptx), sm, entries);
  /* Modules and functions live as long as the process, as a driver's do
   * for a library that never unloads them: static pools, nothing leaks. */
  static mock_module modules[16];
  static int nmodules;
  if (nmodules == 16)
    return 2;
  mock_module *m = &modules[nmodules++];
  m->ptx = ptx;
  *mod = m;
  return 0;
}

CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
  char key[300];
  snprintf(key, sizeof key, ".entry %s(", name);
  const char *at = strstr(((mock_module *)mod)->ptx, key);
  if (!at) {
    fprintf(stderr, "mock-cuda: no entry %s in the PTX\n", name);
    return 500; /* CUDA_ERROR_NOT_FOUND */
  }
  const char *end = strchr(at, ')');
  static mock_function functions[256];
  static int nfunctions;
  if (nfunctions == 256)
    return 2;
  mock_function *f = &functions[nfunctions++];
  snprintf(f->name, sizeof f->name, "%s", name);
  for (const char *p = at; (p = strstr(p, ".param ")) && p < end; ++p)
    f->params++;
  *fn = f;
  return 0;
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                        void *stream, void **params, void **extra) {
  (void)shmem; (void)stream; (void)extra;
  mock_function *f = fn;
  long long sum = 0;
  for (int i = 0; i < f->params; ++i) /* every declared parameter is readable */
    sum += *(const long long *)params[i];
  (void)sum;
  long long d0 = *(const long long *)params[3], d1 = *(const long long *)params[4],
            d2 = *(const long long *)params[5];
  fprintf(stderr,
          "mock-cuda: launch %s grid=(%u,%u,%u) block=(%u,%u,%u) params=%d "
          "desc0=(%lld,%lld,%lld)\n",
          f->name, gx, gy, gz, bx, by, bz, f->params, d0, d1, d2);
  return 0;
}
