/* reload.c - load, run and unload a kernel library many times.
 *
 *   reload LIB.so NAME ITERATIONS
 *
 * Each iteration dlopen()s the library, packs random weights, runs
 * NAME_forward with the built-in pool on 2 and then 3 threads, checks the
 * two results are bit-identical, and dlclose()s it at once. Once, a child
 * of fork() runs a forward with 2 threads too (the pool must start afresh
 * there). The pool's workers must be stopped before the library's code is
 * unmapped: a worker left in (or returning into) unloaded code crashes the
 * process. Prints "reload: N iterations OK" and exits 0; 1 on failure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attnc/runtime/abi.h"

static void *sym(void *h, const char *name, const char *suffix) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s%s", name, suffix);
  void *p = dlsym(h, buf);
  if (!p) {
    fprintf(stderr, "reload: no symbol %s\n", buf);
    exit(1);
  }
  return p;
}

static float frand(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* One load-run-unload round; fork_child: also run once in a child. */
static int round_trip(const char *lib, const char *name, int fork_child) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "reload: %s\n", dlerror());
    return 1;
  }
  attnc_query_fn query = (attnc_query_fn)sym(h, name, "_query");
  attnc_pack_fn pack = (attnc_pack_fn)sym(h, name, "_pack");
  attnc_workspace_size_fn wsize = (attnc_workspace_size_fn)sym(h, name, "_workspace_size");
  attnc_forward_fn forward = (attnc_forward_fn)sym(h, name, "_forward");
  const attnc_kernel_info *info = query(ATTNC_ABI_VERSION);
  if (!info) {
    fprintf(stderr, "reload: query failed\n");
    return 1;
  }
  unsigned seed = 1;
  const void **w = calloc(info->num_weights, sizeof *w);
  int64_t *wn = calloc(info->num_weights, sizeof *wn);
  for (uint32_t i = 0; i < info->num_weights; ++i) {
    wn[i] = info->weights[i].dims[0] * info->weights[i].dims[1];
    float *t = malloc((size_t)wn[i] * sizeof(float));
    for (int64_t j = 0; j < wn[i]; ++j)
      t[j] = frand(&seed) * 0.2f;
    w[i] = t;
  }
  void *packed = malloc((size_t)info->packed_bytes);
  int rc = pack(w, wn, info->num_weights, packed, info->packed_bytes);
  int64_t B = 2, T = 40;
  int64_t nx = B * T * info->d_model, ny = B * T * info->out_dim;
  float *x = malloc((size_t)nx * sizeof(float));
  float *y[2] = {malloc((size_t)ny * sizeof(float)), malloc((size_t)ny * sizeof(float))};
  for (int64_t j = 0; j < nx; ++j)
    x[j] = frand(&seed);
  int64_t wsb = wsize(B, T, 0);
  void *ws = malloc((size_t)wsb);
  for (int k = 0; k < 2 && rc == 0; ++k) {
    attnc_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.packed = packed;
    a.packed_bytes = info->packed_bytes;
    a.x = x;
    a.x_elems = nx;
    a.y = y[k];
    a.y_elems = ny;
    a.batch = B;
    a.seq_len = T;
    a.workspace = ws;
    a.workspace_bytes = wsb;
    a.num_threads = 2 + k;
    rc = forward(&a);
    if (rc == 0 && k == 0 && fork_child) {
      fflush(NULL);
      pid_t pid = fork();
      if (pid == 0) {
        alarm(60); /* a pool that waits for the parent's workers hangs */
        _exit(forward(&a) != 0);
      }
      int st = 0;
      if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
          WEXITSTATUS(st) != 0) {
        fprintf(stderr, "reload: forward in a child of fork() failed\n");
        rc = -1;
      }
    }
  }
  if (rc == 0 && memcmp(y[0], y[1], (size_t)ny * sizeof(float)) != 0) {
    fprintf(stderr, "reload: 2 and 3 threads differ\n");
    rc = -1;
  }
  if (rc != 0)
    fprintf(stderr, "reload: status %d\n", rc);
  for (uint32_t i = 0; i < info->num_weights; ++i)
    free((void *)w[i]);
  free(w), free(wn), free(packed), free(x), free(y[0]), free(y[1]), free(ws);
  dlclose(h);
  return rc != 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: reload LIB.so NAME ITERATIONS\n");
    return 2;
  }
  alarm(300); /* a hang is a failure, not a stuck test run */
  int n = atoi(argv[3]);
  for (int i = 0; i < n; ++i)
    if (round_trip(argv[1], argv[2], i == 0))
      return 1;
  printf("reload: %d iterations OK\n", n);
  return 0;
}
