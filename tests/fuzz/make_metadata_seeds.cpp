// Generates corpus/metadata/*.bin (FuzzMetadata.cpp input format) for a
// GPT-2-like kernel and a few variants. Not built by CMake; run by hand:
//   g++ -std=c++17 -Iruntime/include tests/fuzz/make_metadata_seeds.cpp -o /tmp/m
//   (cd tests/fuzz/corpus/metadata && /tmp/m)
#include "attnc/runtime/abi.h"
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
// Writes a seed in FuzzMetadata.cpp's format for a GPT-2-like kernel.
static void write(const char *path, attnc_kernel_info info, std::vector<attnc_tensor_info> w,
                  uint32_t isa, std::vector<std::string> strs) {
  FILE *f = fopen(path, "wb");
  info.name = nullptr; info.weights = nullptr; info.selected_isa = nullptr;
  info.target_triple = info.target_cpu = info.compiler_version = nullptr;
  fwrite(&info, sizeof info, 1, f);
  for (auto &t : w) { t.name = nullptr; fwrite(&t, sizeof t, 1, f); }
  fwrite(&isa, 4, 1, f);
  for (size_t i = 0; i < strs.size(); ++i) fwrite(strs[i].c_str(), 1, strs[i].size() + (i + 1 < strs.size()), f);
  fclose(f);
}
int main() {
  attnc_kernel_info i; memset(&i, 0, sizeof i);
  i.abi_version = ATTNC_ABI_VERSION; i.struct_size = sizeof i;
  i.d_model = 768; i.heads = 12; i.kv_heads = 12; i.head_dim = 64; i.out_dim = 768;
  i.mask = ATTNC_MASK_CAUSAL; i.bias = 1; i.out_proj = 1; i.scale = 0.125;
  i.dtype = ATTNC_DTYPE_F32; i.isa = ATTNC_ISA_HOST; i.weight_layout = ATTNC_LAYOUT_GPT2_CONV1D;
  i.num_weights = 4; i.packed_floats = 768 * 2304 + 2304 + 768 * 768 + 768; i.max_seq_len = 1024;
  i.workspace_per_row = 2304 + 768 + 768; i.workspace_fixed = 0; i.stack_bytes = 4096;
  std::vector<attnc_tensor_info> w(4);
  int64_t dims[4][2] = {{768, 2304}, {2304, 1}, {768, 768}, {768, 1}};
  for (int k = 0; k < 4; ++k) { w[k].rank = dims[k][1] == 1 ? 1 : 2; w[k].dims[0] = dims[k][0]; w[k].dims[1] = dims[k][1]; }
  std::vector<std::string> s = {"gpt2_small_attn", "x86_64-unknown-linux-gnu", "x86-64-v3", "attnc 0.1.0",
                                "c_attn.weight", "c_attn.bias", "c_proj.weight", "c_proj.bias"};
  write("gpt2.bin", i, w, ATTNC_ISA_AVX2, s);
  attnc_kernel_info j = i; j.num_weights = 0; write("no_weights.bin", j, {}, 0, {"x"});
  j = i; j.abi_version = 1; write("abi1.bin", j, w, ATTNC_ISA_AVX2, s);
  j = i; j.packed_floats = 1; write("packed_one.bin", j, w, ATTNC_ISA_AVX2, s);
  j = i; j.scale = -1; write("scale_neg.bin", j, w, ATTNC_ISA_AVX2, s);
  j = i; j.heads = 16; j.kv_heads = 4; j.weight_layout = ATTNC_LAYOUT_SEPARATE; write("gqa.bin", j, w, ATTNC_ISA_AVX2, s);
  return 0;
}
