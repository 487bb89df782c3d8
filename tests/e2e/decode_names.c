/* tests/e2e/decode-names.test: kernels `kv` (decode: true) and `kv_decode`
 * linked into one program; each symbol resolves to its own kernel. */
#include "kv.h"
#include "kv_decode.h"
#include <stdio.h>

int main(void) {
  printf("kv_decode_workspace_bytes %lld\n", (long long)kv_decode_workspace_bytes(1, 1, 8));
  printf("kv_decode_workspace_size %lld\n", (long long)kv_decode_workspace_size(1, 8, 0));
  printf("kv_decode_decode_workspace_bytes %lld\n",
         (long long)kv_decode_decode_workspace_bytes(1, 1, 8));
  printf("names %s %s\n", kv_query(ATTNC_ABI_VERSION)->name,
         kv_decode_query(ATTNC_ABI_VERSION)->name);
  return 0;
}
