/* read_bw: the rate at which this machine reads a warm buffer, measured.
 *
 *   read_bw BYTES THREADS SECONDS
 *
 * Each thread reads its share of one BYTES-sized buffer with 512-bit (or,
 * without AVX-512, 256-bit) loads, summing them so the loads cannot be
 * dropped, over and over; the program prints the best GB/s over repeated
 * passes: "read_bw: 15.75 MB threads 1: 41.2 GB/s". With BYTES the size of
 * a decode step's data (packed weights + KV cache), this is the L3 (or
 * memory) bandwidth that step could reach at best: the floor the decode
 * benchmark compares against. Built by scripts/bench.sh with -O2. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static float *buf;
static size_t floats;
static int threads;
static double seconds;
static volatile float sink;
static pthread_barrier_t barrier;
static double best_pass[256];

__attribute__((target("avx512f"))) static float sum512(const float *p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((target("avx2"))) static float sum256(const float *p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

static void *worker(void *arg) {
  long id = (long)arg;
  size_t share = floats / (size_t)threads / 64 * 64;
  const float *p = buf + (size_t)id * share;
  int avx512 = __builtin_cpu_supports("avx512f");
  double best = 1e30, start = now();
  float s = 0;
  /* All threads read at once: a barrier per pass, timed on each thread. */
  for (int pass = 0;; ++pass) {
    pthread_barrier_wait(&barrier);
    double t0 = now();
    s += avx512 ? sum512(p, share) : sum256(p, share);
    double t = now() - t0;
    if (pass > 0 && t < best) /* pass 0 warms the caches */
      best = t;
    int stop = now() - start > seconds && pass >= 3;
    pthread_barrier_wait(&barrier);
    if (id == 0)
      best_pass[255] = stop;
    pthread_barrier_wait(&barrier);
    if (best_pass[255] != 0)
      break;
  }
  sink = s;
  best_pass[id] = best;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: read_bw BYTES THREADS SECONDS\n");
    return 2;
  }
  double bytes = atof(argv[1]);
  threads = atoi(argv[2]);
  seconds = atof(argv[3]);
  if (!(bytes >= 4096) || threads < 1 || threads > 64 || !(seconds > 0)) {
    fprintf(stderr, "read_bw: BYTES >= 4096, THREADS in 1..64, SECONDS > 0\n");
    return 2;
  }
  floats = (size_t)(bytes / 4) / 64 * 64;
  if (posix_memalign((void **)&buf, 64, floats * 4) != 0)
    return 1;
  for (size_t i = 0; i < floats; ++i)
    buf[i] = (float)(i & 1023) * 1e-3f;
  pthread_barrier_init(&barrier, NULL, (unsigned)threads);
  pthread_t tid[64];
  for (long i = 0; i < threads; ++i)
    pthread_create(&tid[i], NULL, worker, (void *)i);
  for (int i = 0; i < threads; ++i)
    pthread_join(tid[i], NULL);
  /* The slowest thread's best pass bounds the time of one full read. */
  double t = 0;
  for (int i = 0; i < threads; ++i)
    if (best_pass[i] > t)
      t = best_pass[i];
  size_t read = floats / (size_t)threads / 64 * 64 * (size_t)threads * 4;
  printf("read_bw: %.2f MB threads %d: %.1f GB/s\n", read / 1e6, threads,
         read / t / 1e9);
  return 0;
}
