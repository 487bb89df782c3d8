/* peak_fma: the machine's FP32 FMA throughput, measured.
 *
 *   peak_fma [avx512|avx2|bf16] THREADS SECONDS
 *
 * bf16: the same with AVX512-BF16's vdpbf16ps (two bf16 products summed
 * into each of 16 float32 lanes: 64 FLOP per instruction), the peak of
 * attnc's x86-avx512-bf16 GEMMs; "unsupported" when the CPU lacks it.
 *
 * Each thread runs 24 independent FMA chains (more than latency x ports, so
 * the FMA units, not the dependences, are the limit) on 16-lane (AVX-512) or
 * 8-lane (AVX2) vectors, and the program prints the best GFLOP/s over
 * repeated windows: "peak_fma: avx512 threads 1: 169.5 GFLOP/s". Built by
 * scripts/bench.sh with -O2 and the ISA's flags. */
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

static int avx512, bf16;
static double seconds;
static volatile float sink;

#define ITERS 200000L

/* Twelve named accumulators (registers, not an array the compiler may
 * keep in memory), each updated twice per iteration: 24 FMAs in flight. */
#define ACC12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* A 512-bit probe NAME: 24 accumulators a_i, b_i (float32 vectors) each
 * updated by `ACC = OP(ACC, m, c)` per iteration, m and c of type MT;
 * FLOPS floating-point operations per instruction. */
#define ZMM_PROBE(NAME, TARGET, MT, MINIT, CINIT, OP, FLOPS)                      \
  __attribute__((target(TARGET))) static double NAME(void) {                      \
    MT m = MINIT, c = CINIT;                                                       \
    ACC12(ZMM_DECL)                                                                \
    double t0 = now();                                                             \
    for (long it = 0; it < ITERS; ++it) {                                          \
      ACC12(ZMM_STEP_##OP)                                                         \
      __asm__ volatile("" ::: "memory");                                           \
    }                                                                              \
    double dt = now() - t0;                                                        \
    __m512 s = _mm512_setzero_ps();                                                \
    ACC12(ZMM_SUM)                                                                 \
    sink = _mm512_reduce_add_ps(s);                                                \
    return 2.0 * (FLOPS) * 24 * ITERS / dt / 1e9;                                  \
  }
#define ZMM_DECL(i) __m512 a##i = _mm512_set1_ps((float)i), b##i = _mm512_set1_ps((float)i + 0.5f);
#define ZMM_SUM(i) s = _mm512_add_ps(s, _mm512_add_ps(a##i, b##i));
#define ZMM_STEP_fma(i) a##i = _mm512_fmadd_ps(a##i, m, c); b##i = _mm512_fmadd_ps(b##i, m, c);
#define ZMM_STEP_dpbf16(i) a##i = _mm512_dpbf16_ps(a##i, m, c); b##i = _mm512_dpbf16_ps(b##i, m, c);

/* 16 lanes x (multiply + add) per FMA. */
ZMM_PROBE(run512, "avx512f", __m512, _mm512_set1_ps(0.999999f), _mm512_set1_ps(1e-7f), fma, 16)
/* vdpbf16ps: 16 lanes x two bf16 products (+ their sum into the lane). */
ZMM_PROBE(runbf16, "avx512f,avx512bf16", __m512bh, (__m512bh)_mm512_set1_epi16(0x3f80),
          (__m512bh)_mm512_set1_epi16(0x3380), dpbf16, 32)

__attribute__((target("avx2,fma"))) static double run256(void) {
  __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
#define DECL(i) __m256 a##i = _mm256_set1_ps((float)i);
  ACC12(DECL)
#undef DECL
  double t0 = now();
  for (long it = 0; it < ITERS; ++it) {
#define STEP(i) a##i = _mm256_fmadd_ps(a##i, m, c);
    ACC12(STEP)
#undef STEP
    __asm__ volatile("" ::: "memory");
  }
  double dt = now() - t0;
  __m256 s = _mm256_setzero_ps();
#define SUM(i) s = _mm256_add_ps(s, a##i);
  ACC12(SUM)
#undef SUM
  float f[8];
  _mm256_storeu_ps(f, s);
  sink = f[0];
  return 2.0 * 8 * 12 * ITERS / dt / 1e9;
}

static void *worker(void *arg) {
  double *best = arg, end = now() + seconds;
  *best = 0;
  while (now() < end) {
    double g = bf16 ? runbf16() : avx512 ? run512() : run256();
    if (g > *best) *best = g;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: peak_fma avx512|avx2|bf16 THREADS SECONDS\n");
    return 2;
  }
  avx512 = strcmp(argv[1], "avx512") == 0;
  bf16 = strcmp(argv[1], "bf16") == 0;
  __builtin_cpu_init();
  if (bf16 && !__builtin_cpu_supports("avx512bf16")) {
    printf("peak_fma: bf16 unsupported (no AVX512-BF16)\n");
    return 0;
  }
  int n = atoi(argv[2]);
  seconds = atof(argv[3]);
  pthread_t th[64];
  double best[64];
  for (int i = 0; i < n; ++i) pthread_create(&th[i], NULL, worker, &best[i]);
  double total = 0;
  for (int i = 0; i < n; ++i) {
    pthread_join(th[i], NULL);
    total += best[i];
  }
  printf("peak_fma: %s threads %d: %.1f GFLOP/s\n", argv[1], n, total);
  return 0;
}
