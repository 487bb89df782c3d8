"""The plain-C snippet of docs/embedding.md ("Plain C, no runtime"), as a
user copies it: writes the C block to OUT/program.c (as documented, with its
main), to OUT/snippet.c without its main, a driver that calls its run_block
to OUT/driver.c, and the compiler flags of the documented `cc` command line
(-std=...) to OUT/cflags.

  doc_c_snippet.py docs/embedding.md OUT
"""
import os
import re
import sys

doc, out = sys.argv[1], sys.argv[2]
text = open(doc).read()
section = text.split("## Plain C, no runtime", 1)[1].split("\n## ", 1)[0]
sh = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
cc = next(l for l in sh.splitlines() if l.startswith("cc "))
std = re.search(r"-std=\S+", cc)
if not std:
    sys.exit(f"doc_c_snippet: the documented cc line has no -std: {cc}")
code = re.search(r"```c\n(.*?)```", section, re.S).group(1)
if "int run_block(" not in code:
    sys.exit("doc_c_snippet: the C block no longer defines run_block")
if "int main(void)" not in code:
    sys.exit("doc_c_snippet: the C block no longer has its main (the documented cc "
             "line links it into a program)")
os.makedirs(out, exist_ok=True)
# The block as documented (a program of its own), and without its main for
# the driver below, which checks y.
with open(os.path.join(out, "program.c"), "w") as f:
    f.write(code)
with open(os.path.join(out, "snippet.c"), "w") as f:
    f.write(code.replace("int main(void)", "int snippet_main(void)"))
with open(os.path.join(out, "cflags"), "w") as f:
    f.write(std.group(0) + "\n")
# The driver: deterministic weights of the shapes the kernel declares, one
# forward at T = 7, y finite and not all zero.
with open(os.path.join(out, "driver.c"), "w") as f:
    f.write(r'''#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpt2_small_attn.h"

int run_block(const void *const *weights, const int64_t *weight_elems,
              const float *x, float *y, int64_t batch, int64_t T);

int main(void) {
  const attnc_kernel_info *info = gpt2_small_attn_query(ATTNC_ABI_VERSION);
  const void *w[16];
  int64_t n[16];
  for (uint32_t i = 0; i < info->num_weights; ++i) {
    n[i] = info->weights[i].dims[0] * (info->weights[i].rank == 2 ? info->weights[i].dims[1] : 1);
    float *p = malloc(sizeof(float) * (size_t)n[i]);
    for (int64_t k = 0; k < n[i]; ++k)
      p[k] = 0.02f * (float)((k * 7919 + i * 31) % 101 - 50) / 50.0f;
    w[i] = p;
  }
  const int64_t T = 7;
  float *x = malloc(sizeof(float) * (size_t)(T * info->d_model));
  float *y = calloc((size_t)(T * info->out_dim), sizeof(float));
  for (int64_t k = 0; k < T * info->d_model; ++k)
    x[k] = (float)((k * 104729) % 97 - 48) / 48.0f;
  int rc = run_block(w, n, x, y, 1, T);
  int finite = 1, nonzero = 0;
  for (int64_t k = 0; k < T * info->out_dim; ++k) {
    finite &= isfinite(y[k]) != 0;
    nonzero |= y[k] != 0.0f;
  }
  printf("doc snippet: run_block returned %d, y finite %s, nonzero %s\n", rc,
         finite ? "yes" : "no", nonzero ? "yes" : "no");
  return rc == 0 && finite && nonzero ? 0 : 1;
}
''')
