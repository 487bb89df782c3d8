//===- Checkpoint.h - the tensor names of a checkpoint ----------*- C++ -*-===//
//
// What attnc --hf asks of the checkpoint beside config.json: which tensor
// names its files hold (headers only, no data read), and where a module is
// when a checkpoint saved it under another root than the model's own
// ('h.1.self_attention' in a BLOOM checkpoint saved from BloomModel,
// 'transformer.h.1.self_attention' from BloomForCausalLM). attnc --layer
// picks the module that is there; attnc-run's weights loader (weights.h)
// names it when a --module is not.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_CHECKPOINT_H
#define ATTNC_RUNTIME_CHECKPOINT_H

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace attnrt {

/// The names of the tensors `path` holds (a directory's .safetensors,
/// .npz and .npy files, or one such file), read from the headers; false
/// with `why` ("FILE: what") when a file cannot be listed.
bool checkpointTensorNames(const std::string &path, std::vector<std::string> &names,
                           std::string &why);

/// Whether `text` is one JSON value (RFC 8259: no comments, trailing
/// commas or single quotes; NaN, Infinity and -Infinity taken, as Python's
/// json takes them) and nothing after it but whitespace, as the runtime's
/// weights loader reads config.json; false
/// with `why` ("expected ',' or '}'") and the byte where the parse
/// stopped. attnc --hf checks config.json with it (its YAML reader would
/// take more than JSON).
bool checkJson(const std::string &text, std::string &why, uint64_t &errorByte);

/// The module `module` ("transformer.h.1.self_attention", no trailing dot)
/// as `names` hold it under another root: one leading component shorter
/// ("h.1.self_attention") or under more leading components
/// ("transformer.h.1.attn" for "h.1.attn"). Sorted; empty when no tensor
/// is there (or when the module is there as named).
inline std::vector<std::string> moduleUnderOtherRoots(const std::vector<std::string> &names,
                                                      const std::string &module) {
  const std::string prefix = module + ".", dotted = "." + prefix;
  std::set<std::string> roots;
  const size_t dot = prefix.find('.');
  const std::string shorter =
      dot != std::string::npos && dot + 1 < prefix.size() ? prefix.substr(dot + 1) : "";
  for (const std::string &n : names) {
    if (n.compare(0, prefix.size(), prefix) == 0)
      return {};
    if (!shorter.empty() && n.compare(0, shorter.size(), shorter) == 0)
      roots.insert(shorter.substr(0, shorter.size() - 1));
    if (size_t at = n.find(dotted); !module.empty() && at != std::string::npos)
      roots.insert(n.substr(0, at + prefix.size()));
  }
  return std::vector<std::string>(roots.begin(), roots.end());
}

} // namespace attnrt

#endif // ATTNC_RUNTIME_CHECKPOINT_H
