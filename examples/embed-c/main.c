/* embed-c: use an attnc-generated kernel from plain C, without the runtime.
 *
 *   attnc examples/gpt2-small.yaml -o libgpt2.so --header gpt2_small_attn.h
 *   cc -std=c99 -I. main.c -L. -lgpt2 -Wl,-rpath,'$ORIGIN' -lm -o embed
 *   ./embed
 *
 * Packs deterministic weights, runs one forward pass at two sequence
 * lengths and checks two properties any correct causal attention block
 * has: the result is finite, and (causality) the first rows of y do not
 * change when more tokens are appended. Prints "embed-c: OK" on success.
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

static int run(const float *packed, int64_t T, float **out) {
  const int64_t d = GPT2_SMALL_ATTN_D_MODEL;
  float *x = malloc(sizeof(float) * T * d);
  float *y = malloc(sizeof(float) * T * GPT2_SMALL_ATTN_OUT_DIM);
  int64_t ws_bytes = NAME(workspace_size)(1, T);
  void *ws = malloc(ws_bytes > 0 ? (size_t)ws_bytes : 1);
  if (!x || !y || !ws || ws_bytes < 0)
    return 1;
  for (int64_t i = 0; i < T * d; ++i)
    x[i] = 2.0f * hashf((unsigned)i + 7u);
  int rc = NAME(forward)(packed, x, y, 1, T, ws, ws_bytes);
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
  const float *weights[GPT2_SMALL_ATTN_NUM_WEIGHTS];
  float *bufs[GPT2_SMALL_ATTN_NUM_WEIGHTS];
  for (unsigned t = 0; t < info->num_weights; ++t) {
    int64_t n = info->weights[t].dims[0] * info->weights[t].dims[1];
    bufs[t] = malloc(sizeof(float) * n);
    for (int64_t i = 0; i < n; ++i)
      bufs[t][i] = 0.1f * hashf((unsigned)(i * 31 + t));
    weights[t] = bufs[t];
  }
  float *packed = malloc(sizeof(float) * GPT2_SMALL_ATTN_PACKED_FLOATS);
  if (NAME(pack)(weights, packed) != ATTNC_OK) {
    fprintf(stderr, "embed-c: pack failed\n");
    return 1;
  }
  /* Error paths of the C ABI: nothing runs, a status says why. */
  {
    int64_t need = NAME(workspace_size)(1, 4);
    float *x = calloc(4 * GPT2_SMALL_ATTN_D_MODEL, sizeof(float));
    float *y = calloc(4 * GPT2_SMALL_ATTN_OUT_DIM, sizeof(float));
    void *ws = malloc((size_t)need);
    if (NAME(forward)(packed, NULL, y, 1, 4, ws, need) != ATTNC_ERR_NULL_ARG ||
        NAME(forward)(packed, x, y, 0, 4, ws, need) != ATTNC_ERR_BAD_SHAPE ||
        NAME(forward)(packed, x, y, 1, 4, ws, need - 1) != ATTNC_ERR_WORKSPACE ||
        NAME(forward)(packed, x, y, 1, 4, NULL, need) != ATTNC_ERR_WORKSPACE ||
        NAME(forward)(packed, x, y, 1, 4, ws, -1) != ATTNC_ERR_WORKSPACE ||
        NAME(workspace_size)(0, 4) != -1 || need <= 0 ||
        NAME(forward)(packed, x, y, 1, 4, ws, need) != ATTNC_OK) {
      fprintf(stderr, "embed-c: error codes wrong\n");
      return 1;
    }
    free(x);
    free(y);
    free(ws);
  }

  float *y5 = NULL, *y9 = NULL;
  if (run(packed, 5, &y5) != ATTNC_OK || run(packed, 9, &y9) != ATTNC_OK) {
    fprintf(stderr, "embed-c: forward failed\n");
    return 1;
  }
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
