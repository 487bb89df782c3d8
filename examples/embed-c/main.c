/* embed-c: use an attnc-generated kernel from plain C, without the runtime.
 *
 *   attnc examples/gpt2-small.yaml -o libgpt2.so --header gpt2_small_attn.h
 *   cc -std=c99 -I. main.c -L. -lgpt2 -Wl,-rpath,'$ORIGIN' -lm -o embed
 *   ./embed
 *
 * Packs deterministic weights, runs one forward pass at two sequence
 * lengths and checks two properties any correct causal attention block
 * has: the result is finite, and (causality) the first rows of y do not
 * change when more tokens are appended. Then runs the same forward through
 * its own parallel-for hook (here a plain loop in reverse order, as an app
 * with its own scheduler would) and with the built-in pool, and checks the
 * results are bit-identical. Prints "embed-c: OK" on success.
 */
#include "gpt2_small_attn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NAME(x) gpt2_small_attn_##x

static float hashf(unsigned i) { /* deterministic values in [-0.5, 0.5) */
  i = (i ^ 61u) ^ (i >> 16);
  i *= 9u;
  i ^= i >> 4;
  i *= 0x27d4eb2du;
  i ^= i >> 15;
  return (float)(i & 0xffffu) / 65536.0f - 0.5f;
}

/* An application's parallel-for: runs the tasks one by one, last first. */
static int calls_seen = 0;
static int my_parallel_for(void *pool, int64_t n, attnc_task_fn task, void *ctx) {
  (void)pool;
  ++calls_seen;
  for (int64_t i = n - 1; i >= 0; --i)
    task(ctx, i, i + 1);
  return 0;
}

static attnc_forward_args args_for(const float *packed, const float *x, float *y,
                                   int64_t B, int64_t T, void *ws, int64_t ws_bytes) {
  attnc_forward_args a = {0};
  a.struct_size = sizeof(a);
  a.packed = packed;
  a.packed_bytes = GPT2_SMALL_ATTN_PACKED_BYTES;
  a.x = x;
  a.x_elems = B * T * GPT2_SMALL_ATTN_D_MODEL;
  a.y = y;
  a.y_elems = B * T * GPT2_SMALL_ATTN_OUT_DIM;
  a.batch = B;
  a.seq_len = T;
  a.workspace = ws;
  a.workspace_bytes = ws_bytes;
  a.num_threads = 1;
  return a;
}

/* mode 0: calling thread, 1: own hook, 2: built-in pool with 2 threads */
static int run(const float *packed, int64_t T, int mode, float **out) {
  const int64_t d = GPT2_SMALL_ATTN_D_MODEL;
  float *x = malloc(sizeof(float) * T * d);
  float *y = malloc(sizeof(float) * T * GPT2_SMALL_ATTN_OUT_DIM);
  int64_t ws_bytes = NAME(workspace_size)(1, T, 0);
  void *ws = malloc(ws_bytes > 0 ? (size_t)ws_bytes : 1);
  if (!x || !y || !ws || ws_bytes < 0)
    return 1;
  for (int64_t i = 0; i < T * d; ++i)
    x[i] = 2.0f * hashf((unsigned)i + 7u);
  attnc_forward_args a = args_for(packed, x, y, 1, T, ws, ws_bytes);
  if (mode == 1)
    a.parallel_for = my_parallel_for;
  if (mode == 2)
    a.num_threads = 2;
  int rc = NAME(forward)(&a);
  free(x);
  free(ws);
  *out = y;
  return rc;
}

int main(void) {
  const attnc_kernel_info *info = NAME(query)(ATTNC_ABI_VERSION);
  if (!info || info->abi_version != ATTNC_ABI_VERSION) {
    fprintf(stderr, "embed-c: ABI mismatch\n");
    return 1;
  }
  printf("embed-c: kernel %s, d_model %lld, heads %lld, %u weight tensors\n",
         info->name, (long long)info->d_model, (long long)info->heads,
         info->num_weights);

  /* Storage-layout weights, as named in the header comment. */
  const void *weights[GPT2_SMALL_ATTN_NUM_WEIGHTS];
  float *bufs[GPT2_SMALL_ATTN_NUM_WEIGHTS];
  for (unsigned t = 0; t < info->num_weights; ++t) {
    int64_t n = info->weights[t].dims[0] * info->weights[t].dims[1];
    bufs[t] = malloc(sizeof(float) * n);
    for (int64_t i = 0; i < n; ++i)
      bufs[t][i] = 0.1f * hashf((unsigned)(i * 31 + t));
    weights[t] = bufs[t];
  }
  int64_t counts[GPT2_SMALL_ATTN_NUM_WEIGHTS];
  for (unsigned t = 0; t < info->num_weights; ++t)
    counts[t] = info->weights[t].dims[0] * info->weights[t].dims[1];
  float *packed = malloc(GPT2_SMALL_ATTN_PACKED_BYTES);
  if (NAME(pack)(weights, counts, GPT2_SMALL_ATTN_NUM_WEIGHTS, packed,
                 GPT2_SMALL_ATTN_PACKED_BYTES - 1) != ATTNC_ERR_BUFFER_SIZE ||
      NAME(pack)(weights, counts, GPT2_SMALL_ATTN_NUM_WEIGHTS, packed,
                 GPT2_SMALL_ATTN_PACKED_BYTES) != ATTNC_OK) {
    fprintf(stderr, "embed-c: pack failed\n");
    return 1;
  }
  /* Error paths of the C ABI: nothing runs, a status says why. */
  {
    int64_t need = NAME(workspace_size)(1, 4, 0);
    float *x = calloc(4 * GPT2_SMALL_ATTN_D_MODEL, sizeof(float));
    float *y = calloc(4 * GPT2_SMALL_ATTN_OUT_DIM, sizeof(float));
    void *ws = malloc((size_t)need);
    attnc_forward_args ok = args_for(packed, x, y, 1, 4, ws, need);
    attnc_forward_args a = ok;
    int bad = NAME(forward)(NULL) != ATTNC_ERR_NULL_ARG;
    a.x = NULL;
    bad |= NAME(forward)(&a) != ATTNC_ERR_NULL_ARG;
    a = ok;
    a.batch = 0;
    bad |= NAME(forward)(&a) != ATTNC_ERR_BAD_SHAPE;
    a = ok;
    a.workspace_bytes = need - 1;
    bad |= NAME(forward)(&a) != ATTNC_ERR_WORKSPACE;
    a = ok;
    a.workspace = NULL;
    bad |= NAME(forward)(&a) != ATTNC_ERR_WORKSPACE;
    a = ok;
    a.workspace_bytes = -1;
    bad |= NAME(forward)(&a) != ATTNC_ERR_WORKSPACE;
    a = ok;
    a.y_elems -= 1; /* y one float too small */
    bad |= NAME(forward)(&a) != ATTNC_ERR_BUFFER_SIZE;
    a = ok;
    a.struct_size -= 8; /* not this version's size */
    bad |= NAME(forward)(&a) != ATTNC_ERR_ARGS;
    a = ok;
    a.lengths = (const int32_t *)x; /* a variant field this kernel lacks */
    bad |= NAME(forward)(&a) != ATTNC_ERR_ARGS;
    if (bad || NAME(workspace_size)(0, 4, 0) != -1 || need <= 0 ||
        NAME(forward)(&ok) != ATTNC_OK) {
      fprintf(stderr, "embed-c: error codes wrong\n");
      return 1;
    }
    free(x);
    free(y);
    free(ws);
  }

  float *y5 = NULL, *y9 = NULL, *yHook = NULL, *yPool = NULL;
  if (run(packed, 5, 0, &y5) != ATTNC_OK || run(packed, 9, 0, &y9) != ATTNC_OK ||
      run(packed, 9, 1, &yHook) != ATTNC_OK || run(packed, 9, 2, &yPool) != ATTNC_OK) {
    fprintf(stderr, "embed-c: forward failed\n");
    return 1;
  }
  int64_t same = 0;
  for (int64_t i = 0; i < 9 * GPT2_SMALL_ATTN_OUT_DIM; ++i)
    same += y9[i] == yHook[i] && y9[i] == yPool[i];
  printf("embed-c: own parallel-for called %d times; 1 thread, own hook and 2-thread pool "
         "bit-identical: %s\n", calls_seen,
         same == 9 * GPT2_SMALL_ATTN_OUT_DIM ? "yes" : "no");
  if (calls_seen < 1 || same != 9 * GPT2_SMALL_ATTN_OUT_DIM)
    return 1;
  free(yHook);
  free(yPool);
  double maxdiff = 0.0;
  for (int64_t i = 0; i < 5 * GPT2_SMALL_ATTN_OUT_DIM; ++i) {
    if (!isfinite(y5[i])) {
      fprintf(stderr, "embed-c: non-finite output\n");
      return 1;
    }
    double diff = fabs((double)y5[i] - (double)y9[i]);
    if (diff > maxdiff)
      maxdiff = diff;
  }
  printf("embed-c: causal prefix check: max |y(T=5) - y(T=9)[:5]| = %.3g\n", maxdiff);
  if (maxdiff > 1e-5) {
    fprintf(stderr, "embed-c: causality violated\n");
    return 1;
  }
  printf("embed-c: y[0][0..3] = %.6f %.6f %.6f %.6f\n", y5[0], y5[1], y5[2], y5[3]);
  printf("embed-c: OK\n");
  for (unsigned t = 0; t < info->num_weights; ++t)
    free(bufs[t]);
  free(packed);
  free(y5);
  free(y9);
  return 0;
}
