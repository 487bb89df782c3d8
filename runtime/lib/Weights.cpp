//===- Weights.cpp - A kernel's weights from checkpoint files ---*- C++ -*-===//
//
// The C API of weights.h: lists what a checkpoint holds (TensorFile.cpp),
// keeps the names under the prefix, matches each of the kernel's storage
// tensors to exactly one of them (its own name or a Hugging Face spelling,
// table below), checks the shape and converts it to float32. Errors name
// the file and the tensor, and say what to change when that is clear (a
// prefix to pick, a transposed layout, a checkpoint without biases).
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/weights.h"

#include "Json.h"
#include "TensorFile.h"
#include "attnc/runtime/Files.h"
#include "attnc/runtime/Block.h"
#include "attnc/runtime/Checkpoint.h"
#include "attnc/runtime/Runtime.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <sys/stat.h>
#include <map>
#include <new>
#include <set>

using namespace attnrt::tensorfile;

struct attnrt_weights {
  std::vector<std::vector<float>> buffers;
  std::vector<const float *> pointers;
  std::vector<const void *> data; // the buffers, or `narrow` (bf16/f16)
  std::vector<std::vector<uint16_t>> narrow; // weight_dtype bf16/f16
  std::vector<int64_t> floats;
  std::vector<std::string> sources;
  std::vector<std::string> notes;
};

namespace {

/// Other spellings of a storage tensor of the `separate` layout: BERT
/// (self.query, ..., output.dense under `encoder.layer.N.attention.`),
/// OPT/BART/GPT-J (out_proj), Phi-2 (dense). Llama/Mistral/Qwen use
/// attnc's own names.
std::vector<std::string> spellings(const std::string &name) {
  static const std::map<std::string, std::vector<std::string>> aliases = {
      // BERT, T5, ViT (attention.query), DistilBERT (q_lin), ALBERT (query),
      // MPNet (attn.q)
      {"q_proj", {"self.query", "q", "attention.query", "q_lin", "query", "attn.q"}},
      {"k_proj", {"self.key", "k", "attention.key", "k_lin", "key", "attn.k"}},
      {"v_proj", {"self.value", "v", "attention.value", "v_lin", "value", "attn.v"}},
      // BERT/ViT, OPT/BART/GPT-J/MPT, Phi-2/NeoX/BLOOM/Falcon, GPT-BigCode,
      // DistilBERT
      // (InternLM2: wo)
      {"o_proj", {"output.dense", "out_proj", "dense", "c_proj", "o", "out_lin", "attn.o", "wo"}},
      {"out_proj", {"o_proj", "output.dense"}}, // torch_in_proj's W_O
      // QK-norm: Phi's and StableLM's q_layernorm / k_layernorm
      {"q_norm", {"q_layernorm"}},
      {"k_norm", {"k_layernorm"}},
      // BERT's relative_key table, under attention.self
      {"distance_embedding", {"self.distance_embedding"}},
  };
  std::vector<std::string> r = {name};
  size_t dot = name.find('.');
  if (dot == std::string::npos)
    return r;
  auto it = aliases.find(name.substr(0, dot));
  if (it != aliases.end())
    for (const std::string &a : it->second)
      r.push_back(a + name.substr(dot));
  return r;
}

std::string quoteList(const std::vector<std::string> &v, size_t max) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max; ++i)
    s += (i ? ", '" : "'") + v[i] + "'";
  if (v.size() > max)
    s += ", ... (" + std::to_string(v.size()) + " in all)";
  return s;
}

/// The fused QKV tensors' names (without .weight/.bias) that the loader
/// cuts into q/k/v_proj (docs/models.md).
constexpr const char *kFusedQkv[] = {"query_key_value.", "qkv_proj.", "Wqkv.", "c_attn.",
                                     "wqkv."};

struct Loader {
  std::string path, prefix;
  const attnc_kernel_info &info;
  std::string err;

  int error(int code, const std::string &msg) {
    err = msg;
    return code;
  }

  /// The quantization that replaced `name` (a kernel '*.weight') by other
  /// tensors under the prefix: GPTQ / AWQ ('q_proj.qweight', 'qzeros',
  /// 'scales'), bitsandbytes ('q_proj.weight.absmax', ...), with
  /// config.json's quantization_config.quant_method when it names one; ""
  /// when none.
  std::string quantizedHint(const std::string &name,
                            const std::map<std::string, size_t> &under) {
    const size_t dot = name.rfind(".weight");
    if (dot == std::string::npos || dot + 7 != name.size())
      return "";
    // The kernel's name in each spelling, and the fused QKV tensors.
    std::vector<std::string> stems;
    for (const std::string &s : spellings(name))
      stems.push_back(s.substr(0, s.size() - 7));
    for (const char *f : kFusedQkv)
      stems.push_back(std::string(f).substr(0, std::strlen(f) - 1));
    std::string found;
    for (const std::string &stem : stems)
      for (const char *q : {".qweight", ".weight_packed"})
        if (found.empty() && under.count(stem + q))
          found = stem + q;
    if (found.empty())
      return "";
    std::string method;
    if (const Json *qc = configField(configTree(), "quantization_config"))
      if (const Json *m = qc->type == Json::Object ? configField(*qc, "quant_method") : nullptr)
        if (m->type == Json::String)
          method = m->str;
    return "the checkpoint is quantized" +
           (method.empty() ? std::string()
                           : " (" + configPath() + " quantization_config.quant_method '" +
                                 method + "')") +
           ": '" + prefix + found +
           "' holds packed integers with their scales, which attnc does not read (it "
           "reads F32, F16, BF16 or F64 weights): take the model's unquantized "
           "checkpoint (bf16, f16 or f32), or dequantize this one into it";
  }

  /// Why a kernel tensor is not under the prefix, and what would help.
  std::string missingHint(const std::vector<std::string> &names,
                          const std::vector<TensorRef> &all,
                          const std::map<std::string, size_t> &under) {
    std::string hint;
    // The same tensor under other prefixes: a whole checkpoint.
    // A sharded checkpoint's index says which file holds the tensor: one
    // that is not in the directory (or does not hold it) is named.
    if (std::string shard = indexedShard(names); !shard.empty())
      return "; " + shard;
    std::set<std::string> prefixes;
    for (const TensorRef &r : all)
      for (const std::string &n : names)
        if (r.name.size() > n.size() &&
            r.name.compare(r.name.size() - n.size(), n.size(), n) == 0 &&
            r.name[r.name.size() - n.size() - 1] == '.')
          prefixes.insert(r.name.substr(0, r.name.size() - n.size()));
    // (A prefix with tensors under it is a layer: the other layers have
    // theirs, no hint then, unless the tensor is deeper under this prefix:
    // 'model.layers.0.' for 'model.layers.0.self_attn.'.)
    bool deeper = false;
    for (const std::string &p : prefixes)
      deeper |= !prefix.empty() && p.size() > prefix.size() && p.compare(0, prefix.size(), prefix) == 0;
    if (deeper)
      for (auto it = prefixes.begin(); it != prefixes.end();)
        it = it->compare(0, prefix.size(), prefix) == 0 ? std::next(it) : prefixes.erase(it);
    // One module, matched by two spellings ('attention.' for self.query,
    // 'attention.self.' for query): the outer one.
    for (auto it = prefixes.begin(); it != prefixes.end();) {
      const bool inner = std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string &q) {
        return q.size() < it->size() && it->compare(0, q.size(), q) == 0;
      });
      it = inner ? prefixes.erase(it) : std::next(it);
    }
    // The module itself under another root (a checkpoint saved without
    // 'hubert.' or with 'model.'): that one module, named first.
    if (under.empty() && prefix.size() > 1 && prefix.back() == '.') {
      std::vector<std::string> allNames;
      for (const TensorRef &r : all)
        allNames.push_back(r.name);
      const std::vector<std::string> roots =
          attnrt::moduleUnderOtherRoots(allNames, prefix.substr(0, prefix.size() - 1));
      if (roots.size() == 1)
        return "; no tensor name starts with '" + prefix + "'; the module's tensors are under '" +
               roots[0] + "': name that module (--module)";
    }
    if (!prefixes.empty() && (prefix.empty() || under.empty() || deeper)) {
      std::vector<std::string> p(prefixes.begin(), prefixes.end());
      hint += "; it is there under " + std::to_string(p.size()) +
              " other prefix" + (p.size() > 1 ? "es" : "") + " (" +
              quoteList(p, 3) +
              "): pick one layer with a prefix (attnc-run --weights-prefix)";
    } else if (names[0].size() > 5 &&
               names[0].compare(names[0].size() - 5, 5, ".bias") == 0) {
      hint += "; the kernel has bias: true, the checkpoint may have no "
              "biases (compile the spec with bias: false)";
    }
    // A fused QKV tensor that was not cut: its layout comes from the
    // config.json beside the weights (model_type).
    if (names[0].size() > 7 && names[0].compare(1, 6, "_proj.") == 0)
      for (const char *f : kFusedQkv)
        if (under.count(f + names[0].substr(7))) {
          const Json *mt = configTree().type == Json::Object
                               ? configField(configTree(), "model_type")
                               : nullptr;
          hint += "; the checkpoint fuses Q/K/V in '" + prefix + f + names[0].substr(7) +
                  "', cut by its layout, which " +
                  (configTree().type != Json::Object
                       ? "needs " + configPath() + " (its model_type): there is none"
                       : mt && mt->type == Json::String
                             ? "model_type '" + mt->str + "' does not give (docs/models.md)"
                             : "needs a model_type in " + configPath());
          break;
        }
    // A quantized checkpoint (GPTQ, AWQ, bitsandbytes, ...): the layer's
    // projections are packed integers beside their scales, not '.weight'.
    if (std::string q = quantizedHint(names[0], under); !q.empty())
      return hint + "; " + q;
    std::vector<std::string> have;
    for (const auto &kv : under)
      have.push_back(kv.first);
    if (under.empty()) {
      hint += "; no tensor name starts with '" + prefix + "'";
      // The module under another root (Checkpoint.h).
      std::vector<std::string> allNames;
      for (const TensorRef &r : all)
        allNames.push_back(r.name);
      const std::vector<std::string> roots =
          prefix.size() > 1 && prefix.back() == '.'
              ? attnrt::moduleUnderOtherRoots(allNames, prefix.substr(0, prefix.size() - 1))
              : std::vector<std::string>();
      if (!roots.empty())
        hint += "; the module's tensors are under " + quoteList(roots, 3) +
                ": name that module (--module)";
    } else
      hint += "; names under the prefix: " + quoteList(have, 8);
    return hint;
  }

  /// For a directory with model.safetensors.index.json (Hugging Face's
  /// sharded layout): where its weight_map puts the first of `names`
  /// (under the prefix) when that file is missing from the directory or
  /// is there without the tensor; "" otherwise (no index, not listed, or
  /// nothing to say).
  std::string indexedShard(const std::vector<std::string> &names) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return "";
    std::vector<std::string> under;
    for (const std::string &n : names)
      under.push_back(prefix + n);
    const auto [name, file] = indexedFile(path, under);
    if (name.empty())
      return "";
    const std::string shard = path + "/" + file;
    // (transformers joins the name to the directory; the loader reads
    // the shards that are in it, so a path elsewhere is not read)
    if (file.find('/') != std::string::npos)
      return "model.safetensors.index.json puts '" + name + "' in '" + file +
             "', a path outside " + path + ": the loader reads the shards in the "
             "directory itself (put the shard there)";
    if (::stat(shard.c_str(), &st) != 0)
      return "model.safetensors.index.json puts '" + name + "' in '" + file +
             "', which is not in " + path + " (a shard missing: download it again)";
    return "model.safetensors.index.json puts '" + name + "' in '" + file +
           "', which does not hold it (the index and the shards do not match)";
  }

  /// Indices of the tensors under the prefix spelled like `kernelName`.
  std::vector<size_t> find(const std::string &kernelName,
                           const std::map<std::string, size_t> &under) {
    std::vector<size_t> found;
    for (const std::string &n : spellings(kernelName)) {
      auto it = under.find(n);
      if (it != under.end())
        found.push_back(it->second);
    }
    return found;
  }

  /// Reads `ref` for the kernel's `kernelName`, which must have shape
  /// `want`; appends its values to `data` and a note when converted.
  int readOne(const TensorRef &ref, const std::string &kernelName,
              const std::vector<int64_t> &want, std::vector<float> &data,
              attnrt_weights &w, const std::vector<int64_t> &alsoShape = {}) {
    int64_t count = 1;
    for (int64_t d : want)
      count *= d;
    Tensor tensor;
    if (int rc = readTensor(ref, count, tensor, err))
      return rc;
    // A .npy file's name already names its tensor.
    std::string what = ref.kind == TensorRef::NpyFile
                           ? ref.file
                           : ref.file + ": tensor '" + ref.name + "'";
    if (ref.name != prefix + kernelName)
      what += " (the kernel's '" + kernelName + "')";
    if (tensor.shape != want && (alsoShape.empty() || tensor.shape != alsoShape)) {
      std::string msg = what + ": expected shape " + shapeString(want) +
                        ", found " + shapeString(tensor.shape);
      if (want.size() == 2 && tensor.shape.size() == 2 &&
          tensor.shape[0] == want[1] && tensor.shape[1] == want[0])
        msg += " (the transpose: the spec's `weights:` layout may not be "
               "the checkpoint's; gpt2_conv1d stores (in, out), "
               "torch_in_proj and separate store (out, in))";
      return error(ATTNRT_WEIGHTS_ERR_SHAPE, msg);
    }
    // What the kernel stores it as (weight_dtype): a note when that is
    // not the file's type.
    const DType kernelType = info.weight_dtype == ATTNC_DTYPE_BF16  ? DType::BF16
                             : info.weight_dtype == ATTNC_DTYPE_F16 ? DType::F16
                                                                    : DType::F32;
    if (attnrt::npyRawBf16(tensor.dtypeName))
      w.notes.push_back(what + ": " + attnrt::npyRawBf16Note(tensor.dtypeName));
    if (tensor.dtype != kernelType)
      w.notes.push_back(what + ": " + dtypeName(tensor.dtype) + " converted to " +
                        dtypeName(kernelType));
    // A NaN or inf weight makes every output it reaches meaningless (and
    // some of them finite: the kernel's online softmax and the reference
    // do not propagate it alike): a corrupt checkpoint must not look fine.
    int64_t bad = 0, first = -1;
    for (size_t i = 0; i < tensor.data.size(); ++i)
      if (!std::isfinite(tensor.data[i]) && bad++ == 0)
        first = int64_t(i);
    if (bad)
      w.notes.push_back("warning: " + what + ": " + std::to_string(bad) +
                        " non-finite value" + (bad > 1 ? "s" : "") + " (the first at flat index " +
                        std::to_string(first) + ": " +
                        (std::isnan(tensor.data[size_t(first)]) ? "nan" : tensor.data[size_t(first)] > 0 ? "inf" : "-inf") +
                        "): the outputs they reach are not meaningful");
    data.insert(data.end(), tensor.data.begin(), tensor.data.end());
    return ATTNRT_WEIGHTS_OK;
  }

  /// T5's relative_attention_bias is owned by block 0 of each stack and
  /// shared by the later blocks: for "encoder.block.5.layer.0.SelfAttention."
  /// it is read from "encoder.block.0.layer.0.SelfAttention.", the owner's
  /// prefix ("" for another tensor or a path without a block index).
  std::string sharedTableOwner(const std::string &name) {
    if (name != "relative_attention_bias.weight")
      return "";
    // MPNet: the encoder's one table ('mpnet.encoder.relative_attention_bias'
    // for 'mpnet.encoder.layer.5.attention.').
    if (modelType("mpnet")) {
      size_t layer = prefix.find("encoder.layer.");
      while (layer != std::string::npos && layer > 0 && prefix[layer - 1] != '.')
        layer = prefix.find("encoder.layer.", layer + 1);
      return layer == std::string::npos ? "" : prefix.substr(0, layer + 8);
    }
    size_t at = prefix.find("block.");
    if (at == std::string::npos)
      return "";
    size_t digits = at + 6, end = digits;
    while (end < prefix.size() && std::isdigit(static_cast<unsigned char>(prefix[end])))
      ++end;
    if (end == digits || end >= prefix.size() || prefix[end] != '.')
      return "";
    return prefix.substr(0, digits) + "0" + prefix.substr(end);
  }

  /// The table from its owner (sharedTableOwner); -1 when not there.
  int sharedTable(const attnc_tensor_info &ti, const std::vector<TensorRef> &all,
                  std::vector<float> &data, std::string &source, attnrt_weights &w) {
    const std::string name = ti.name;
    const std::string owner = sharedTableOwner(name);
    if (owner.empty() || owner == prefix)
      return -1;
    for (const TensorRef &r : all)
      if (r.name == owner + name) {
        std::vector<int64_t> want = {ti.dims[0], ti.dims[1]};
        if (int rc = readOne(r, name, want, data, w))
          return rc;
        source = r.name;
        w.notes.push_back(path + ": '" + name + "' shared from '" + r.name +
                          (modelType("mpnet") ? "' (the encoder's table, every layer's)"
                                              : "' (block 0 owns the stack's table)"));
        return ATTNRT_WEIGHTS_OK;
      }
    return -1;
  }

  /// The rows of a fused QKV tensor that hold projection `which` ('q',
  /// 'k', 'v'), by the checkpoint's layout (its config.json's model_type;
  /// docs/models.md): per head [H, 3, dh] (GPT-NeoX, Persimmon, BLOOM, Falcon-RW,
  /// GPT-BigCode MHA), [q | k | v] (Phi-3, MPT, Falcon-7B and GPT-BigCode
  /// MQA) or Falcon-40B's groups [Hkv, G + 2, dh]. Empty when unknown.
  /// The block's heads: a tensor-parallel kernel packs the whole
  /// storage tensors too (its rank's share is cut at pack time).
  std::vector<int64_t> fusedRows(char which, std::string &layout) {
    const attnrt::BlockParams p = attnrt::paramsFromInfo(info);
    const int64_t h = p.blockHeads(), hkv = p.blockKvHeads(), dh = info.head_dim;
    auto model = [&](const char *m) { return modelType(m); };
    std::vector<int64_t> rows;
    auto range = [&](int64_t from, int64_t n) {
      for (int64_t r = from; r < from + n; ++r)
        rows.push_back(r);
    };
    const int64_t part = which == 'q' ? 0 : which == 'k' ? 1 : 2;
    const bool falcon = model("falcon");
    const bool newArch = falcon && configTrue("new_decoder_architecture");
    if (newArch || model("internlm2")) { // [Hkv, G + 2, dh]: G query heads, then k, then v
      layout = newArch ? "Falcon's grouped [kv_heads, G + 2, head_dim]"
                       : "InternLM2's grouped [kv_heads, G + 2, head_dim]";
      const int64_t g = h / hkv;
      for (int64_t grp = 0; grp < hkv; ++grp) {
        int64_t base = grp * (g + 2) * dh;
        if (part == 0)
          range(base, g * dh);
        else
          range(base + (g + part - 1) * dh, dh);
      }
    } else if ((model("gpt_neox") || model("persimmon") || model("bloom") || falcon ||
                model("gpt_bigcode")) &&
               hkv == h) { // per head [q_h | k_h | v_h]
      layout = "per-head [heads, 3, head_dim]";
      for (int64_t head = 0; head < h; ++head)
        range(head * 3 * dh + part * dh, dh);
    } else if (model("phi3") || model("mpt") || falcon || model("gpt_bigcode") ||
               model("dbrx")) {
      layout = "[q | k | v]";
      range(part == 0 ? 0 : h * dh + (part - 1) * hkv * dh, part == 0 ? h * dh : hkv * dh);
    }
    return rows;
  }

  /// Whether the module (its layer index: the prefix's first all-digit
  /// component) is one of SmolLM3's (Llama 4's) NoPE layers:
  /// no_rope_layers[layer] is 0, or, without the list (or with an empty
  /// one: HF tests `if no_rope_layers`), (layer + 1) % no_rope_layer_interval
  /// is 0 (4 by default), as the compiler's import reads it.
  bool smolNopeLayer() {
    int64_t layer = -1;
    for (size_t at = 0; at < prefix.size();) {
      size_t dot = prefix.find('.', at);
      std::string part =
          prefix.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
      if (!part.empty() && part.size() < 9 &&
          part.find_first_not_of("0123456789") == std::string::npos) {
        layer = std::stoll(part);
        break;
      }
      if (dot == std::string::npos)
        break;
      at = dot + 1;
    }
    if (layer < 0)
      return false;
    const Json *list = configKey("no_rope_layers");
    if (list && list->type == Json::Array && !list->items.empty()) {
      if (layer >= int64_t(list->items.size()))
        return false;
      const Json &v = list->items[size_t(layer)];
      return v.type == Json::Number && v.num == 0;
    }
    const Json *every = configKey("no_rope_layer_interval");
    const int64_t n = every && every->type == Json::Number && every->isInt &&
                              every->intValue > 0
                          ? every->intValue
                          : 4;
    return (layer + 1) % n == 0;
  }

  /// Whether the directory's config.json names model_type `m` (at its
  /// top level or in its text_config).
  bool modelType(const char *m) {
    for (const Json *obj : {&configTree(), configField(configTree(), "text_config")})
      if (const Json *t = obj ? configField(*obj, "model_type") : nullptr)
        if (t->type == Json::String && t->str == m)
          return true;
    return false;
  }

  /// A `separate` kernel's q/k/v_proj weight or bias cut out of the
  /// checkpoint's fused QKV tensor (query_key_value, qkv_proj, Wqkv,
  /// c_attn): rows picked by fusedRows. Returns -1 when there is none.
  int splitFused(const attnc_tensor_info &ti, const std::vector<TensorRef> &all,
                 const std::map<std::string, size_t> &under,
                 std::vector<float> &data, std::string &source,
                 attnrt_weights &w) {
    const std::string name = ti.name;
    if (info.weight_layout != ATTNC_LAYOUT_SEPARATE || name.size() < 7 ||
        name.compare(1, 6, "_proj.") != 0 || (name[0] != 'q' && name[0] != 'k' && name[0] != 'v'))
      return -1;
    const std::string suffix = name.substr(7); // "weight" or "bias"
    size_t fusedIdx = 0;
    int n = 0;
    for (const char *f : kFusedQkv) {
      auto it = under.find(f + suffix);
      if (it != under.end()) {
        fusedIdx = it->second;
        ++n;
      }
    }
    if (n != 1)
      return -1;
    std::string layout;
    std::vector<int64_t> rows = fusedRows(name[0], layout);
    if (rows.empty())
      return -1;
    const attnrt::BlockParams p = attnrt::paramsFromInfo(info);
    const int64_t total = (p.blockHeads() + 2 * p.blockKvHeads()) * info.head_dim;
    const int64_t cols = ti.rank == 2 ? ti.dims[1] : 1;
    std::vector<int64_t> want = {total};
    if (ti.rank == 2)
      want.push_back(cols);
    std::vector<float> fused;
    if (int rc = readOne(all[fusedIdx], name + " (fused " + layout + ")", want, fused, w))
      return rc;
    for (int64_t r : rows)
      data.insert(data.end(), fused.begin() + r * cols, fused.begin() + (r + 1) * cols);
    source = all[fusedIdx].name;
    w.notes.push_back(path + ": '" + name + "' cut from '" + all[fusedIdx].name + "' (" +
                      layout + ")");
    return ATTNRT_WEIGHTS_OK;
  }

  /// For torch_in_proj's in_proj_weight / in_proj_bias: the name of a
  /// separate Q, K or V tensor (any spelling assemble() reads) beside the
  /// fused one, or "" when there is none.
  std::string separatePart(const std::string &name, const std::vector<TensorRef> &all,
                           const std::map<std::string, size_t> &under) {
    if (name != "in_proj_weight" && name != "in_proj_bias")
      return "";
    std::string suffix = name == "in_proj_weight" ? ".weight" : ".bias";
    for (const char *p : {"q_proj", "k_proj", "v_proj"})
      if (std::vector<size_t> f = find(p + suffix, under); !f.empty())
        return all[f[0]].name;
    return "";
  }

  /// torch_in_proj's fused in_proj_weight (3d, d) / in_proj_bias (3d) from
  /// separate Q, K and V tensors (BERT's self.query/key/value, q/k/v_proj),
  /// stacked in that order. Returns -1 when the three are not all there.
  int assemble(const attnc_tensor_info &ti, const std::vector<TensorRef> &all,
               const std::map<std::string, size_t> &under,
               std::vector<float> &data, std::string &source,
               attnrt_weights &w) {
    std::string name = ti.name;
    if ((name != "in_proj_weight" && name != "in_proj_bias") || ti.dims[0] % 3)
      return -1;
    std::string suffix = name == "in_proj_weight" ? ".weight" : ".bias";
    std::vector<size_t> parts;
    for (const char *p : {"q_proj", "k_proj", "v_proj"}) {
      std::vector<size_t> f = find(p + suffix, under);
      if (f.size() > 1) // q_proj.weight and self.query.weight: which one?
        return error(ATTNRT_WEIGHTS_ERR_DUPLICATE,
                     path + ": two tensors for part " + std::string(1, p[0]) + " of the kernel's '" +
                         name + "': '" + all[f[0]].name + "' and '" + all[f[1]].name +
                         "' (two spellings of one tensor)");
      if (f.size() != 1)
        return -1;
      parts.push_back(f[0]);
    }
    std::vector<int64_t> want = {ti.dims[0] / 3};
    if (ti.rank == 2)
      want.push_back(ti.dims[1]);
    for (size_t i = 0; i < 3; ++i) {
      if (int rc = readOne(all[parts[i]], name + " (part " + "qkv"[i] + ")",
                           want, data, w))
        return rc;
      source += (i ? "+" : "") + all[parts[i]].name;
    }
    w.notes.push_back(path + ": '" + name + "' stacked from '" +
                      all[parts[0]].name + "', '" + all[parts[1]].name +
                      "', '" + all[parts[2]].name + "'");
    return ATTNRT_WEIGHTS_OK;
  }

  /// StableLM's per-head QK LayerNorms: the kernel's q_norm.weight
  /// [heads * head_dim] (one weight per head) stacked from
  /// q_layernorm.norms.0.weight ... q_layernorm.norms.{H-1}.weight
  /// ([head_dim] each; k_norm likewise over the kv heads): the block's
  /// heads, as every storage tensor (a tensor-parallel kernel packs its
  /// rank's share). Returns -1 when the norms are not there.
  int stackNorms(const attnc_tensor_info &ti, const std::vector<TensorRef> &all,
                 const std::map<std::string, size_t> &under, std::vector<float> &data,
                 std::string &source, attnrt_weights &w) {
    const std::string name = ti.name;
    if (!(info.qk_norm & ATTNC_QK_NORM_PER_HEAD) || ti.rank != 1 ||
        (name.rfind("q_norm.", 0) != 0 && name.rfind("k_norm.", 0) != 0))
      return -1;
    const bool q = name[0] == 'q';
    const attnrt::BlockParams p = attnrt::paramsFromInfo(info);
    const int64_t heads = q ? p.blockHeads() : p.blockKvHeads();
    const int64_t dh = info.head_dim, first = 0;
    if (ti.dims[0] != heads * dh)
      return -1;
    const std::string suffix = name.substr(name.find('.')); // ".weight" / ".bias"
    const std::string base = std::string(q ? "q" : "k") + "_layernorm.norms.";
    std::vector<size_t> parts;
    for (int64_t h = first; h < first + heads; ++h) {
      auto it = under.find(base + std::to_string(h) + suffix);
      if (it == under.end())
        return -1;
      parts.push_back(it->second);
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      if (int rc = readOne(all[parts[i]], name + " (head " + std::to_string(first + int64_t(i)) +
                                              ")",
                           {dh}, data, w))
        return rc;
      source += (i ? "+" : "") + all[parts[i]].name;
    }
    w.notes.push_back(path + ": '" + name + "' stacked from '" + all[parts.front()].name +
                      "' ... '" + all[parts.back()].name + "' (one norm per head)");
    return ATTNRT_WEIGHTS_OK;
  }

  int load(attnrt_weights &w) {
    std::vector<TensorRef> all;
    if (int rc = listTensors(path, all, err))
      return rc;
    std::map<std::string, size_t> under; // name without the prefix -> index
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].name.compare(0, prefix.size(), prefix) == 0)
        under[all[i].name.substr(prefix.size())] = i;
    std::string where = prefix.empty() ? path : path + " (prefix '" + prefix + "')";
    for (uint32_t t = 0; t < info.num_weights; ++t) {
      const attnc_tensor_info &ti = info.weights[t];
      std::vector<std::string> names = spellings(ti.name);
      std::vector<size_t> found = find(ti.name, under);
      std::vector<float> data;
      std::string source;
      // T5's (mT5's) later blocks have no table of their own: the model
      // builds only block 0's and ignores a stray one, so it is read as
      // for a block without one (UMT5 gives every block its own; without
      // config.json the block's own is read).
      const std::string owner = sharedTableOwner(ti.name);
      if (!found.empty() && !owner.empty() && owner != prefix &&
          (modelType("t5") || modelType("mt5")) &&
          std::any_of(all.begin(), all.end(),
                      [&](const TensorRef &r) { return r.name == owner + ti.name; })) {
        w.notes.push_back("warning: " + path + ": '" + all[found[0]].name +
                          "' is ignored: only block 0 of a T5 stack has a relative "
                          "position table (the model reads '" + owner + ti.name +
                          "'; UMT5's blocks each have one)");
        found.clear();
      }
      if (found.empty()) {
        int rc = assemble(ti, all, under, data, source, w);
        if (rc < 0)
          rc = splitFused(ti, all, under, data, source, w);
        if (rc < 0)
          rc = stackNorms(ti, all, under, data, source, w);
        if (rc < 0)
          rc = sharedTable(ti, all, data, source, w);
        if (rc > 0)
          return rc;
        if (rc < 0) {
          std::vector<std::string> full;
          for (const std::string &n : names)
            full.push_back(prefix + n);
          // T5's table: also where block 0 of the stack keeps it.
          if (!owner.empty() && owner != prefix)
            full.push_back(owner + ti.name);
          return error(ATTNRT_WEIGHTS_ERR_MISSING,
                       where + ": no tensor for the kernel's '" + ti.name +
                           "' (looked for " + quoteList(full, 4) + ")" +
                           missingHint(names, all, under));
        }
      } else if (found.size() > 1) {
        return error(ATTNRT_WEIGHTS_ERR_DUPLICATE,
                     where + ": two tensors for the kernel's '" + ti.name +
                         "': '" + all[found[0]].name + "' and '" +
                         all[found[1]].name + "'");
      } else if (std::string part = separatePart(ti.name, all, under); !part.empty()) {
        return error(ATTNRT_WEIGHTS_ERR_DUPLICATE,
                     where + ": two tensors for the kernel's '" + ti.name + "': '" +
                         all[found[0]].name + "' and '" + part +
                         "' (the fused Q/K/V and a separate part of it)");
      } else {
        std::vector<int64_t> want = {ti.dims[0]};
        if (ti.rank == 2)
          want.push_back(ti.dims[1]);
        // Cohere's per-head QK-norm weight is [heads, head_dim]: the
        // kernel's [heads * head_dim] in the same order.
        const TensorRef &ref = all[found[0]];
        const bool normTable = (info.qk_norm & ATTNC_QK_NORM_PER_HEAD) && ti.rank == 1 &&
                               (std::string(ti.name).rfind("q_norm.", 0) == 0 ||
                                std::string(ti.name).rfind("k_norm.", 0) == 0);
        std::vector<int64_t> table;
        if (normTable)
          table = {ti.dims[0] / int64_t(info.head_dim), int64_t(info.head_dim)};
        if (int rc = readOne(ref, ti.name, want, data, w, table))
          return rc;
        source = ref.name;
      }
      w.floats.push_back(int64_t(data.size()));
      w.sources.push_back(source);
      w.buffers.push_back(std::move(data));
    }
    // A bf16/f16 kernel packs its weights in that type: a bf16 (f16)
    // checkpoint's values widen to float32 exactly and come back to the
    // same bits here; float32 ones are rounded (RNE, with a note).
    const bool narrowW = info.weight_dtype != ATTNC_DTYPE_F32;
    for (size_t t = 0; t < w.buffers.size(); ++t) {
      const auto &b = w.buffers[t];
      w.pointers.push_back(b.data());
      if (!narrowW) {
        w.data.push_back(b.data());
        continue;
      }
      // float16's largest finite value is 65504: a larger one would be
      // packed as inf (as a float64 one out of float32's range, refused).
      if (int64_t e = attnrt::firstOutOfRange(info.weight_dtype, b.data(), int64_t(b.size()));
          e >= 0) {
        char value[32];
        std::snprintf(value, sizeof value, "%g", double(b[size_t(e)]));
        return error(ATTNRT_WEIGHTS_ERR_DTYPE,
                     path + ": the kernel's '" + info.weights[t].name + "' (from '" +
                         w.sources[t] + "'): element " + std::to_string(e) + " (" + value +
                         ") is out of " + attnrt::storageRangeText(info.weight_dtype) +
                         ", and the kernel's weight_dtype is " +
                         attnrt::nameOf("dtype", info.weight_dtype));
      }
      std::vector<uint16_t> n(b.size());
      attnrt::fromFloat(info.weight_dtype, b.data(), n.data(), int64_t(b.size()));
      w.narrow.push_back(std::move(n));
    }
    for (const auto &n : w.narrow)
      w.data.push_back(n.data());
    warnMissingFeatures(all, under, w);
    return ATTNRT_WEIGHTS_OK;
  }

  /// A checkpoint that carries what the kernel does not compute must not
  /// run silently: the rotary embedding (rotary_emb.inv_freq tensors, RoPE
  /// keys in the directory's config.json), QK-norm weights, biases the
  /// kernel does not add, BERT's relative_key table. Each is a note that
  /// starts with "warning:".
  void warnMissingFeatures(const std::vector<TensorRef> &all,
                           const std::map<std::string, size_t> &under,
                           attnrt_weights &w) {
    auto endsWith = [](const std::string &s, const std::string &suffix) {
      return s.size() >= suffix.size() &&
             s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    const bool rope = (info.features & ATTNC_FEATURE_ROPE) != 0;
    std::set<std::string> used; // a stacked tensor's source is "a+b+c"
    for (const std::string &src : w.sources)
      for (size_t at = 0, plus; at <= src.size(); at = plus + 1) {
        plus = src.find('+', at);
        if (plus == std::string::npos)
          plus = src.size();
        used.insert(src.substr(at, plus - at));
      }
    if (rope && configHasAnywhere("mrope_section"))
      w.notes.push_back(configPath() + ": M-RoPE (mrope_section): the kernel rotates each "
                        "token by one position, as the model rotates text tokens; image "
                        "and video tokens' three positions are not what it computes");
    if (modelType("bloom") && endsWith(prefix, "self_attention."))
      w.notes.push_back(path + ": " + prefix.substr(0, prefix.size() - 1) +
                        ": BloomAttention returns dense(attention) + the residual "
                        "(the block's input after its LayerNorm, with "
                        "apply_residual_connection_post_layernorm, else before it); the "
                        "kernel's output is dense's: add the residual yourself");
    if (!rope) {
      for (const TensorRef &r : all)
        if (endsWith(r.name, "rotary_emb.inv_freq")) {
          w.notes.push_back("warning: " + path + ": '" + r.name +
                            "' is a rotary embedding table, but this kernel "
                            "has no rope: its output is not the "
                            "checkpoint's (add a rope: key to the spec)");
          break;
        }
      // The global layers of a hybrid Cohere 2 / EXAONE 4 (a sliding_window
      // in the config, a kernel without one) and SmolLM3's NoPE layers
      // have no position encoding.
      const Json *pet = configKey("position_embedding_type");
      const bool nopeLayer = ((modelType("cohere2") || modelType("exaone4")) &&
                              configKey("sliding_window") && !attnc_mask_sliding(info.mask)) ||
                             ((modelType("smollm3") || modelType("llama4_text")) &&
                              smolNopeLayer()) ||
                             // Mllama: its cross-attention layers and vision
                             // encoder have no position encoding.
                             // Granite 4.0-H without position_embedding_type
                             // rope, and Jamba: no position encoding at all.
                             (modelType("granitemoehybrid") &&
                              !(pet && pet->type == Json::String &&
                                pet->str == "rope")) ||
                             modelType("jamba") ||
                             (modelType("mllama") &&
                              (prefix.find(".cross_attn") != std::string::npos ||
                               prefix.find("vision_model.") != std::string::npos));
      // Falcon with alibi (Falcon-RW) has no rotary embedding, whatever
      // rope_theta FalconConfig saved.
      const bool alibiFalcon = modelType("falcon") && configTrue("alibi");
      for (const char *name : {"rope_theta", "rope_scaling", "rotary_dim", "rotary_pct",
                               "partial_rotary_factor", "rotary_emb_base", "rope_parameters"}) {
        const std::string key = std::string("\"") + name + "\"";
        if (alibiFalcon) {
          break;
        } else if (nopeLayer && configHasAnywhere(name)) {
          w.notes.push_back(configPath() + ": " + (!prefix.empty() && prefix.back() == '.'
                                                   ? prefix.substr(0, prefix.size() - 1)
                                                   : prefix) +
                            " is one of the model's layers "
                            "without position encoding (NoPE), as this kernel; its " + key +
                            " is for the other layers");
          break;
        } else if (configHasAnywhere(name)) {
          w.notes.push_back("warning: " + configPath() + " has " + key +
                            " (a rotary embedding), but this kernel has no "
                            "rope: its output is not the checkpoint's (add "
                            "a rope: key to the spec)");
          break;
        }
      }
    }
    std::set<std::string> layerNorms; // noted once per norm (weight + bias)
    for (const auto &[name, i] : under) {
      if (used.count(all[i].name))
        continue;
      // A QK-norm's weight or bias (its module q_norm, k_norm,
      // q_layernorm or k_layernorm, MPT's q_ln and k_ln; StableLM's
      // per-head norms below them).
      const std::string module = name.substr(0, name.rfind('.') == std::string::npos ? 0 : name.rfind('.'));
      bool norm = false;
      for (const char *m : {"q_norm", "k_norm", "q_layernorm", "k_layernorm", "q_ln", "k_ln"})
        norm |= module == m || endsWith(module, std::string(".") + m) ||
                module.find(std::string(m) + ".norms.") != std::string::npos ||
                module.rfind(std::string(m) + ".", 0) == 0;
      std::string lower = name;
      for (char &ch : lower)
        ch = char(std::tolower(static_cast<unsigned char>(ch)));
      // A LayerNorm in the module after the output projection (BERT's
      // output.LayerNorm, over the residual sum): not part of the block.
      const bool outNorm = !norm && (lower.find("layernorm") != std::string::npos ||
                                     lower.find("layer_norm") != std::string::npos);
      const bool bias = endsWith(name, ".bias") && lower.find("norm") == std::string::npos;
      if (outNorm) {
        const std::string prefix = all[i].name.substr(0, all[i].name.rfind('.'));
        // ESM's EsmAttention normalizes its input with its own LayerNorm
        // before the projections (pre-norm): the kernel's x is its output.
        if (!layerNorms.insert(prefix).second)
          ; // (noted with its other tensor)
        else if (modelType("esm"))
          w.notes.push_back(path + ": '" + prefix +
                            "' is the LayerNorm EsmAttention applies to its input "
                            "before the attention: the kernel's x is that LayerNorm's "
                            "output, its y the output projection's (add the block's "
                            "input, the residual, yourself)");
        else
          w.notes.push_back("warning: " + path + ": '" + prefix +
                            "' is a LayerNorm after the attention (as BERT's "
                            "output.LayerNorm(dense(attention) + input)); the "
                            "kernel's output is the output projection's: add "
                            "the residual and apply that LayerNorm to it yourself");
      } else if (norm)
        w.notes.push_back("warning: " + path + ": '" + all[i].name +
                          "' is a QK-norm " + (endsWith(name, ".bias") ? "bias" : "weight") +
                          ", which this kernel does not apply: its output is not the "
                          "checkpoint's");
      else if (endsWith(name, "distance_embedding.weight"))
        w.notes.push_back("warning: " + path + ": '" + all[i].name +
                          "' is BERT's relative_key table, but this kernel has no "
                          "relative_key: its output is not the checkpoint's (add a "
                          "relative_key: key to the spec)");
      else if (bias && name != "bias" && name != "attn.bias" &&
               name != "masked_bias")
        w.notes.push_back("warning: " + path + ": '" + all[i].name +
                          "' is a bias this kernel does not add (spec "
                          "bias: lists the projections that have one)");
    }
  }

  /// config.json beside the checkpoint (the directory itself, or the
  /// directory of the file), or "".
  std::string configPath() const {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      return path + "/config.json";
    size_t slash = path.rfind('/');
    return (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) +
           "/config.json";
  }
  /// config.json parsed once per load: its top-level object, or null when
  /// there is none. A config.json that is missing, not a regular file (a
  /// FIFO cannot hang the load), over 4 MiB or not JSON is treated as
  /// absent (the compiler's import reports a malformed one).
  const Json &configTree() {
    if (configRead)
      return config;
    configRead = true;
    std::string text, why;
    JsonLimits limits;
    limits.maxBytes = uint64_t(64) << 20;
    limits.pythonConstants = true;
    if (!attnrt::readRegularFile(configPath(), uint64_t(1) << 22, text, why) ||
        !parseJson(text, config, why, limits) ||
        config.type != Json::Object)
      config = Json();
    return config;
  }
  /// Field `k` of an object (the last one, as Python's json reads
  /// duplicates), or nullptr where it is absent or null.
  static const Json *configField(const Json &obj, const std::string &k) {
    const Json *found = nullptr;
    if (obj.type == Json::Object)
      for (const auto &[name, value] : obj.fields)
        if (name == k)
          found = &value;
    return found && found->type != Json::Null ? found : nullptr;
  }
  /// A key of config.json: the top level's, else its text_config's (the
  /// language model of a multimodal config); nullptr when absent or null.
  const Json *configKey(const std::string &k) {
    if (const Json *v = configField(configTree(), k))
      return v;
    const Json *text = configField(configTree(), "text_config");
    return text ? configField(*text, k) : nullptr;
  }
  /// config.json's key `k` is the JSON value true.
  bool configTrue(const std::string &k) {
    const Json *v = configKey(k);
    return v && v->type == Json::Bool && v->num != 0;
  }
  /// Some object of config.json, at any depth, has a non-null `k`.
  bool configHasAnywhere(const std::string &k) {
    std::function<bool(const Json &)> walk = [&](const Json &j) {
      if (configField(j, k))
        return true;
      for (const auto &f : j.fields)
        if (walk(f.second))
          return true;
      for (const auto &item : j.items)
        if (walk(item))
          return true;
      return false;
    };
    return walk(configTree());
  }
  Json config;
  bool configRead = false;
};

void copyError(const std::string &msg, char *err, size_t size) {
  if (!err || size == 0)
    return;
  size_t n = std::min(msg.size(), size - 1);
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

} // namespace

bool attnrt::checkpointTensorNames(const std::string &path, std::vector<std::string> &names,
                                   std::string &why) {
  std::vector<TensorRef> refs;
  names.clear();
  if (listTensors(path, refs, why) != Ok)
    return false;
  for (TensorRef &r : refs)
    names.push_back(std::move(r.name));
  return true;
}

extern "C" {

int attnrt_weights_open(const char *path, const char *prefix,
                        const attnc_kernel_info *info, attnrt_weights **out,
                        char *err, size_t err_size) {
  if (out)
    *out = nullptr;
  if (!path || !info || !out) {
    copyError("attnrt_weights_open: path, info and out must not be NULL", err,
              err_size);
    return ATTNRT_WEIGHTS_ERR_ARG;
  }
  if (info->num_weights && !info->weights) {
    copyError("attnrt_weights_open: info has no weights table", err, err_size);
    return ATTNRT_WEIGHTS_ERR_ARG;
  }
  for (uint32_t i = 0; i < info->num_weights; ++i) {
    const attnc_tensor_info &t = info->weights[i];
    if (!t.name || (t.rank != 1 && t.rank != 2) || t.dims[0] < 0 ||
        t.dims[1] < 0 || t.dims[0] > (int64_t(1) << 31) ||
        t.dims[1] > (int64_t(1) << 31)) {
      copyError("attnrt_weights_open: bad weights table entry " +
                    std::to_string(i),
                err, err_size);
      return ATTNRT_WEIGHTS_ERR_ARG;
    }
  }
  try {
    auto *w = new attnrt_weights();
    Loader l{path, prefix ? prefix : "", *info, {}, {}, false};
    int rc = l.load(*w);
    if (rc != ATTNRT_WEIGHTS_OK) {
      delete w;
      copyError(l.err, err, err_size);
      return rc;
    }
    *out = w;
    return ATTNRT_WEIGHTS_OK;
  } catch (const std::bad_alloc &) {
    copyError(std::string(path) + ": out of memory", err, err_size);
    return ATTNRT_WEIGHTS_ERR_NOMEM;
  } catch (...) {
    copyError(std::string(path) + ": unexpected error", err, err_size);
    return ATTNRT_WEIGHTS_ERR_FORMAT;
  }
}

uint32_t attnrt_weights_count(const attnrt_weights *w) {
  return w ? uint32_t(w->pointers.size()) : 0;
}

const void *const *attnrt_weights_data(const attnrt_weights *w) {
  return w ? w->data.data() : nullptr;
}

const int64_t *attnrt_weights_elems(const attnrt_weights *w) {
  return w ? w->floats.data() : nullptr;
}

const float *const *attnrt_weights_float32(const attnrt_weights *w) {
  return w ? w->pointers.data() : nullptr;
}

const char *attnrt_weights_source_name(const attnrt_weights *w, uint32_t i) {
  return w && i < w->sources.size() ? w->sources[i].c_str() : nullptr;
}

uint32_t attnrt_weights_num_notes(const attnrt_weights *w) {
  return w ? uint32_t(w->notes.size()) : 0;
}

const char *attnrt_weights_note(const attnrt_weights *w, uint32_t i) {
  return w && i < w->notes.size() ? w->notes[i].c_str() : nullptr;
}

void attnrt_weights_close(attnrt_weights *w) { delete w; }

const char *attnrt_weights_strerror(int code) {
  switch (code) {
  case ATTNRT_WEIGHTS_OK: return "ok";
  case ATTNRT_WEIGHTS_ERR_ARG: return "bad_argument";
  case ATTNRT_WEIGHTS_ERR_IO: return "io";
  case ATTNRT_WEIGHTS_ERR_FORMAT: return "format";
  case ATTNRT_WEIGHTS_ERR_MISSING: return "missing";
  case ATTNRT_WEIGHTS_ERR_DUPLICATE: return "duplicate";
  case ATTNRT_WEIGHTS_ERR_DTYPE: return "dtype";
  case ATTNRT_WEIGHTS_ERR_SHAPE: return "shape";
  case ATTNRT_WEIGHTS_ERR_NOMEM: return "no_memory";
  default: return "unknown";
  }
}

} // extern "C"
