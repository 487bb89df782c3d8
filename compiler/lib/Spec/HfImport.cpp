//===- HfImport.cpp - the spec of one attention module of an HF checkpoint ===//
//
// attnc --hf DIR --module PATH: reads DIR/config.json (JSON, which yaml-cpp
// parses as YAML), dispatches on model_type and writes the YAML spec of the
// attention module PATH (the checkpoint's own tensor-name prefix, e.g.
// model.layers.5.self_attn). The spec then goes through the ordinary parser,
// so every check and message is the spec's. The formulas behind each
// architecture's keys are the ones of docs/models.md.
//
//===----------------------------------------------------------------------===//
#include "attnc/Spec/Spec.h"
#include "attnc/runtime/Checkpoint.h"
#include "attnc/runtime/Files.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <cmath>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

namespace attnc {
namespace {

struct ImportError {
  std::string message;
};

/// ":LINE:COL" of a value in config.json (yaml-cpp's marks are 0-based),
/// or "" where its position is not known: an absent key, or a node built
/// by YAML::Clone (marked 0:0, where only the document itself starts).
std::string locationOf(const YAML::Node &n) {
  if (!n || n.Mark().is_null() || (n.Mark().line == 0 && n.Mark().column == 0))
    return "";
  return fmt::format(":{}:{}", n.Mark().line + 1, n.Mark().column + 1);
}

/// A JSON string ("4"): yaml-cpp would read it as the number (or bool) it
/// spells, where transformers' classes (and so the model) keep a string.
bool isQuoted(const YAML::Node &n) { return n.Tag() == "!"; }

/// config.json, with typed look-ups that name the key (and where its value
/// is) on a bad value.
struct Config {
  YAML::Node root;
  std::string file;

  bool has(const std::string &k) const {
    return root[k] && !root[k].IsNull();
  }
  bool quoted(const std::string &k) const { return isQuoted(root[k]); }
  [[noreturn]] void bad(const std::string &k, const std::string &what) const {
    throw ImportError{
        fmt::format("{}{}: error: {}{}: {}", file, locationOf(root[k]), keyPrefix, k, what)};
  }
  int64_t integer(const std::string &k) const {
    if (!has(k))
      bad(k, root[k] ? "expected an integer, found null" : "expected an integer, found no such key");
    if (quoted(k))
      bad(k, "expected an integer, found a string");
    try {
      return root[k].as<int64_t>();
    } catch (const YAML::Exception &) {
      bad(k, "expected an integer");
    }
  }
  int64_t integer(const std::string &k, int64_t dflt) const {
    return has(k) ? integer(k) : dflt;
  }
  double number(const std::string &k, double dflt) const {
    if (!has(k))
      return dflt;
    if (quoted(k))
      bad(k, "expected a number, found a string");
    try {
      return root[k].as<double>();
    } catch (const YAML::Exception &) {
      bad(k, "expected a number");
    }
  }
  /// number(k, dflt) for a key the configuration class defaults (a
  /// norm's eps): a note names the default where the file leaves it out.
  double numberNoted(const std::string &k, double dflt) const {
    if (!has(k))
      noteDefault(k, fmt::format("{}", dflt), "");
    return number(k, dflt);
  }
  /// The note that key `k`, left out of the file, reads as the
  /// configuration class's default `value` (once; `why`: what reads it).
  void noteDefault(const std::string &k, const std::string &value,
                   const std::string &why) const {
    std::string note = fmt::format("note: {}: {} not in the file, the configuration class's "
                                   "default {}{}", file, keyPrefix + k, value, why);
    if (notes && std::find(notes->begin(), notes->end(), note) == notes->end())
      notes->push_back(note);
  }
  /// The mapping under key `k` (DBRX's and MPT's attn_config) read the
  /// same way: an empty one when the key is missing or not a mapping.
  Config child(const std::string &k) const {
    Config sub;
    // (an absent key's node is invalid: assigning it throws, so test first;
    // MPT's attn_config, MptConfig's defaults when left out)
    const YAML::Node v = root[k];
    sub.root.reset(v && v.IsMap() ? v : YAML::Node(YAML::NodeType::Map));
    sub.file = file;
    sub.notes = notes;
    sub.keyPrefix = keyPrefix + k + "."; // errors name attn_config.alibi
    return sub;
  }
  bool boolean(const std::string &k, bool dflt) const {
    if (!has(k))
      return dflt;
    if (quoted(k)) // ("false" is a true string to Python)
      bad(k, "expected true or false, found a string");
    try {
      return root[k].as<bool>();
    } catch (const YAML::Exception &) {
      bad(k, "expected true or false");
    }
  }
  std::string str(const std::string &k) const {
    if (!has(k))
      return "";
    try {
      return root[k].as<std::string>();
    } catch (const YAML::Exception &) {
      bad(k, "expected a string");
    }
  }

  /// The configuration class's max_position_embeddings (0: none known;
  /// setMaxPositionDefault) and where its note goes when it is read.
  int64_t maxPositionDefault = 0;
  /// The class's top-level original_max_position_embeddings (Phi3Config:
  /// 4096), which longrope reads; 0 where the class has no such field.
  int64_t originalMaxPositionDefault = 0;
  std::vector<std::string> *notes = nullptr;
  /// The keys' path above root in errors and notes ("attn_config." under
  /// child("attn_config")).
  std::string keyPrefix;
  /// max_position_embeddings as a rope scaling of type `kind` reads it:
  /// the file's, else the class's default with a note (once), else the
  /// file's "no such key" error. Only a reading fills it in, so configs
  /// whose scaling does not read it get no note.
  int64_t maxPositions(const std::string &kind) const {
    const char *k = "max_position_embeddings";
    if (has(k) || !maxPositionDefault)
      return integer(k);
    noteDefault(k, std::to_string(maxPositionDefault), " (read by rope_scaling type " + kind + ")");
    return maxPositionDefault;
  }
};

/// One decimal spelling of a double that YAML reads back exactly.
std::string num(double v) { return fmt::format("{}", v); }

/// The scaling type of a rope_scaling (rope_parameters) map `s`, config.json's
/// key `key`: rope_type, else the legacy type, else "default". A value that
/// is not a string is an error located at it.
std::string scalingType(const Config &c, const YAML::Node &s, const std::string &key) {
  for (const char *k : {"rope_type", "type"}) {
    const YAML::Node v = s[k];
    if (!v || v.IsNull())
      continue;
    if (!v.IsScalar())
      throw ImportError{fmt::format("{}{}: error: {}.{}: expected the scaling type's name "
                                    "(a string)", c.file, locationOf(v), key, k)};
    return v.as<std::string>();
  }
  return "default";
}

/// The module path as the checkpoint names it, split: the layer index
/// (the first all-digit component), and the text around it.
struct ModulePath {
  std::string path;
  int64_t layer = -1;
  std::string layerText;     // "3" (as written)
  std::string before, after; // "model.layers", "self_attn"
};

ModulePath parseModule(const std::string &path) {
  ModulePath m;
  m.path = path;
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');)
    parts.push_back(p);
  for (size_t i = 0; i < parts.size(); ++i)
    if (!parts[i].empty() && std::all_of(parts[i].begin(), parts[i].end(), ::isdigit) &&
        parts[i].size() < 9) {
      m.layer = std::stoll(parts[i]);
      m.layerText = parts[i];
      for (size_t j = 0; j < i; ++j)
        m.before += (j ? "." : "") + parts[j];
      for (size_t j = i + 1; j < parts.size(); ++j)
        m.after += (j > i + 1 ? "." : "") + parts[j];
      break;
    }
  return m;
}

/// Whether one of the dot-separated parts of `path` is `part`.
bool hasPathPart(const std::string &path, const char *part) {
  std::stringstream parts(path);
  for (std::string p; std::getline(parts, p, '.');)
    if (p == part)
      return true;
  return false;
}

/// A C identifier from the model type and the module path.
std::string kernelName(const std::string &modelType, const std::string &module) {
  std::string n = modelType + "_" + module;
  for (char &c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  if (n.size() > 100)
    n.resize(100);
  return n;
}

/// The rope mapping of a config (rope_theta, rope_scaling, the partial
/// rotary keys): YAML lines, indented under "rope:".
std::string ropeYaml(const Config &c, int64_t headDim, double theta, double partial,
                     const char *style, const YAML::Node &scaling) {
  // A scaling transformers cannot read (a bare name, a map without its
  // type) is refused, not dropped.
  if (scaling && !scaling.IsNull() && !scaling.IsMap())
    throw ImportError{fmt::format("{}{}: error: rope_scaling: expected an object with the "
                                  "scaling's rope_type and its parameters, found '{}'",
                                  c.file, locationOf(scaling),
                                  scaling.IsScalar() ? scaling.as<std::string>() : "a list")};
  if (scaling && scaling.IsMap() && scaling.size() > 0 && !scaling["rope_type"] &&
      !scaling["type"])
    throw ImportError{fmt::format("{}{}: error: rope_scaling: names no rope_type (or type): "
                                  "which scaling it is cannot be told", c.file,
                                  locationOf(scaling))};
  std::string y = "rope:\n";
  y += fmt::format("  style: {}\n  theta: {}\n", style, num(theta));
  int64_t rot = int64_t(double(headDim) * partial);
  // Hugging Face's rotary embedding rotates pairs: an odd width makes its
  // cos/sin one wider than the rotated slice, and the model fails.
  if (rot % 2)
    throw ImportError{fmt::format(
        "{}: error: the rotary width is odd ({}: head_dim {}{}): the model's rotary "
        "embedding rotates pairs of dimensions, so transformers cannot run this "
        "config either",
        c.file, rot, headDim,
        partial != 1.0 ? fmt::format(" x partial rotary factor {}", num(partial)) : "")};
  if (rot != headDim)
    y += fmt::format("  rotary_dim: {}\n", rot);
  if (scaling && scaling.IsMap()) {
    std::string type = scalingType(c, scaling, "rope_scaling");
    if (type == "su")
      type = "longrope"; // Phi-3's legacy name
    if (type != "default") {
      y += fmt::format("  scaling:\n    type: {}\n", type);
      const char *keys[] = {"factor", "low_freq_factor", "high_freq_factor",
                            "original_max_position_embeddings", "beta_fast",
                            "beta_slow", "attention_factor", "mscale",
                            "mscale_all_dim"};
      // Only what the type reads (a config may carry more: the spec
      // refuses keys its type would ignore); an unknown type is the
      // spec's error, with every key kept.
      const std::vector<std::string> *reads = ropeScalingKeys(type);
      auto read = [&](const char *k) {
        return !reads || std::find(reads->begin(), reads->end(), k) != reads->end();
      };
      // A key the type does not read (a misspelling, another type's key):
      // transformers logs "Unrecognized keys in rope_scaling" and ignores
      // it; so does the import, with a note.
      if (reads && c.notes) {
        std::string extra;
        for (const auto &kv : scaling) {
          const std::string k = kv.first.as<std::string>();
          static const char *const kAlways[] = {"rope_type", "type", "rope_theta",
                                                "partial_rotary_factor"};
          if (read(k.c_str()) ||
              std::find(std::begin(kAlways), std::end(kAlways), k) != std::end(kAlways) ||
              (type == "longrope" &&
               (k == "factor" || k == "short_mscale" || k == "long_mscale")))
            continue;
          extra += fmt::format("{}'{}'", extra.empty() ? "" : ", ", k);
        }
        if (!extra.empty())
          c.notes->push_back(fmt::format(
              "note: {}{}: rope_scaling: {} not read by rope type {} (ignored: "
              "transformers does not read it either, and warns of a key it does not know)",
              c.file, locationOf(scaling), extra, type));
      }
      for (const char *k : keys)
        if (scaling[k] && !scaling[k].IsNull() && read(k)) {
          if (isQuoted(scaling[k]))
            throw ImportError{fmt::format("{}{}: error: rope_scaling.{}: expected a number, "
                                          "found a string", c.file, locationOf(scaling[k]), k)};
          // yarn's betas are read as `rope_scaling.get("beta_fast") or 32`
          // (and `or 1`): a 0 is the default, not a value (the spec's
          // beta_fast and beta_slow are positive).
          const char *dflt = std::string(k) == "beta_fast"   ? "32"
                             : std::string(k) == "beta_slow" ? "1"
                                                             : nullptr;
          double v = 1.0;
          if (dflt && YAML::convert<double>::decode(scaling[k], v) && v == 0.0) {
            if (c.notes)
              c.notes->push_back(fmt::format(
                  "note: {}{}: rope_scaling.{}: 0 reads as the default {}, as transformers "
                  "reads it (`or {}`)", c.file, locationOf(scaling[k]), k, dflt, dflt));
            y += fmt::format("    {}: {}\n", k, dflt);
            continue;
          }
          y += fmt::format("    {}: {}\n", k, scaling[k].as<std::string>());
        }
      if (scaling["truncate"] && !scaling["truncate"].IsNull() && read("truncate"))
        y += fmt::format("    truncate: {}\n", scaling["truncate"].as<bool>() ? "true" : "false");
      if (type == "longrope") {
        // Phi-3 keeps original_max_position_embeddings at the top level.
        if (!scaling["original_max_position_embeddings"] &&
            c.has("original_max_position_embeddings")) {
          y += fmt::format("    original_max_position_embeddings: {}\n",
                           c.integer("original_max_position_embeddings"));
        } else if (!scaling["original_max_position_embeddings"] &&
                   c.originalMaxPositionDefault) {
          // (Phi3Config's __init__ default, which the model reads)
          c.noteDefault("original_max_position_embeddings",
                        std::to_string(c.originalMaxPositionDefault),
                        " (read by rope_scaling type longrope)");
          y += fmt::format("    original_max_position_embeddings: {}\n",
                           c.originalMaxPositionDefault);
        }
        y += fmt::format("    max_position_embeddings: {}\n", c.maxPositions(type));
        for (const char *k : {"short_factor", "long_factor"}) {
          y += fmt::format("    {}: [", k);
          const YAML::Node &f = scaling[k];
          for (size_t i = 0; f && i < f.size(); ++i) {
            if (isQuoted(f[i]))
              throw ImportError{fmt::format("{}{}: error: rope_scaling.{}: expected numbers, "
                                            "found a string", c.file, locationOf(f[i]), k)};
            y += (i ? ", " : "") + f[i].as<std::string>();
          }
          y += "]\n";
        }
      } else if (type == "dynamic") {
        // _compute_dynamic_ntk_parameters scales past the model's
        // max_position_embeddings.
        y += fmt::format("    max_position_embeddings: {}\n", c.maxPositions(type));
      } else if (type == "yarn" && !scaling["original_max_position_embeddings"]) {
        // Older configs: the model's max_position_embeddings.
        y += fmt::format("    original_max_position_embeddings: {}\n", c.maxPositions(type));
      } else if (type == "yarn" && c.notes && c.has("max_position_embeddings") &&
                 scaling["factor"] && scaling["factor"].IsScalar() && !isQuoted(scaling["factor"])) {
        // Some transformers 4.x releases replace factor by
        // max_position_embeddings / original_max_position_embeddings where
        // the config has both (DeepSeek-V3's recipe); v5 and the YaRN paper
        // keep factor.
        double factor = 0, ratio = 0;
        try {
          factor = scaling["factor"].as<double>();
          const double orig = scaling["original_max_position_embeddings"].as<double>();
          ratio = orig > 0 ? double(c.integer("max_position_embeddings")) / orig : 0;
        } catch (const YAML::Exception &) {
        }
        if (ratio > 0 && factor > 0 && std::fabs(ratio - factor) > 1e-9 * factor)
          c.notes->push_back(fmt::format(
              "note: {}{}: rope_scaling (yarn): factor {} is used, as transformers v5 and "
              "the YaRN paper use it; some transformers 4.x releases use "
              "max_position_embeddings / original_max_position_embeddings = {} instead, "
              "so their rotation differs",
              c.file, locationOf(scaling["factor"]), num(factor), num(ratio)));
      }
    }
  }
  return y;
}

/// transformers v5 saves RoPE as "rope_parameters": {rope_theta, rope_type,
/// factor, ..., partial_rotary_factor} -- for models with layer_types, one
/// such map per layer type ({"full_attention": {...}, "sliding_attention":
/// {...}}) -- instead of rope_theta, rope_scaling and partial_rotary_factor.
/// This writes them back as those older keys, which the importer reads
/// (an older key that is also there wins, as in transformers' own
/// backward-compatible loading). Gemma 3's sliding layers' map gives
/// rope_local_base_freq.
void flattenRopeParameters(Config &c, int64_t layer, bool gemma3) {
  const YAML::Node rp = c.root["rope_parameters"];
  if (!rp || !rp.IsMap())
    return;
  auto flatten = [&](const YAML::Node &p, const char *thetaKey, bool scaling) {
    if (!p.IsMap())
      c.bad("rope_parameters", "expected a map of RoPE parameters");
    if (p["rope_theta"] && !p["rope_theta"].IsNull() && !c.has(thetaKey))
      c.root[thetaKey] = p["rope_theta"];
    if (p["partial_rotary_factor"] && !p["partial_rotary_factor"].IsNull() &&
        !c.has("partial_rotary_factor"))
      c.root["partial_rotary_factor"] = p["partial_rotary_factor"];
    std::string type = scalingType(c, p, "rope_parameters");
    if (scaling && type != "default" && !c.has("rope_scaling"))
      c.root["rope_scaling"] = p;
  };
  bool perType = rp.size() > 0;
  for (const auto &kv : rp)
    perType = perType && kv.second.IsMap();
  if (!perType) {
    flatten(rp, "rope_theta", true);
    return;
  }
  if (gemma3) {
    if (rp["full_attention"])
      flatten(rp["full_attention"], "rope_theta", true);
    if (rp["sliding_attention"])
      flatten(rp["sliding_attention"], "rope_local_base_freq", false);
    return;
  }
  // This layer's type (layer_types), else full attention's parameters.
  std::string type = "full_attention";
  const YAML::Node types = c.root["layer_types"];
  if (types && types.IsSequence() && layer >= 0 && layer < int64_t(types.size()) &&
      rp[types[size_t(layer)].as<std::string>()])
    type = types[size_t(layer)].as<std::string>();
  if (!rp[type])
    c.bad("rope_parameters", "has one map per layer type, but none for '" + type + "'");
  flatten(rp[type], "rope_theta", true);
}

/// M-RoPE (Qwen2-VL, Qwen2.5-VL: an mrope_section in rope_scaling or
/// rope_parameters) rotates frequency sections by a token's temporal,
/// height and width positions. A text token has the three equal, which is
/// the plain half-split rotation by that position: what the kernel does.
/// Image and video tokens are not expressible; a note says so. M-RoPE
/// combined with a scaling type is refused.
void mropeNote(Config &c, std::vector<std::string> &notes) {
  for (const char *key : {"rope_scaling", "rope_parameters"}) {
    const YAML::Node r = c.root[key];
    if (!r || !r.IsMap() || !r["mrope_section"])
      continue;
    const std::string type = scalingType(c, r, key);
    if (type != "mrope" && type != "default")
      c.bad(key, fmt::format("M-RoPE (mrope_section) with scaling type '{}' is not "
                             "compiled (only its default frequencies)", type));
    if (std::string(key) == "rope_scaling")
      c.root.remove("rope_scaling"); // the default frequencies, as transformers does
    std::string sections;
    for (const auto &v : r["mrope_section"])
      sections += (sections.empty() ? "" : ", ") + v.as<std::string>();
    notes.push_back(fmt::format(
        "note: {}: M-RoPE (mrope_section [{}]): the kernel rotates each token by one "
        "position (start + t), as the model rotates text tokens (temporal = height = "
        "width); image and video tokens, whose three positions differ, are not what it "
        "computes", c.file, sections));
    return;
  }
}

/// Whether SmolLM3's `layer` rotates: no_rope_layers[layer] (1: RoPE, 0:
/// NoPE), else every no_rope_layer_interval-th layer (4) is NoPE.
bool smolRopeLayer(const Config &c, int64_t layer) {
  const YAML::Node list = c.root["no_rope_layers"];
  // (An empty list is the default: HF tests `if no_rope_layers`.)
  if (list && list.IsSequence() && list.size() > 0) {
    if (layer >= int64_t(list.size()))
      c.bad("no_rope_layers", fmt::format("has {} entries, none for layer {}", list.size(),
                                          layer));
    int64_t v = -1;
    if (!YAML::convert<int64_t>::decode(list[size_t(layer)], v) || (v != 0 && v != 1))
      c.bad("no_rope_layers", fmt::format("layer {}: expected 0 (NoPE) or 1 (RoPE)", layer));
    return v == 1;
  }
  const int64_t every = c.integer("no_rope_layer_interval", 4);
  if (every <= 0)
    c.bad("no_rope_layer_interval", "expected a positive integer");
  return (layer + 1) % every != 0;
}

/// Whether `layer` of a hybrid model (Cohere 2, EXAONE 4, OLMo 3) is a sliding one:
/// by layer_types, else sliding_window_pattern (every p-th layer global;
/// EXAONE 4's string form "LLLG" repeats from layer 0, its last layer
/// always global), else every 4th layer global (their configs' default).
bool hybridSliding(const Config &c, int64_t layer, int64_t nLayers) {
  const YAML::Node types = c.root["layer_types"];
  if (types && types.IsSequence()) {
    if (layer >= int64_t(types.size()))
      c.bad("layer_types", fmt::format("has {} entries, no type for layer {}", types.size(),
                                       layer));
    const std::string t = types[size_t(layer)].as<std::string>();
    if (t != "sliding_attention" && t != "full_attention")
      c.bad("layer_types", fmt::format("layer {} is '{}', expected sliding_attention or "
                                       "full_attention", layer, t));
    return t == "sliding_attention";
  }
  const YAML::Node p = c.root["sliding_window_pattern"];
  if (p && p.IsScalar()) {
    int64_t every = 0;
    if (YAML::convert<int64_t>::decode(p, every)) {
      if (every <= 0)
        c.bad("sliding_window_pattern", "expected a positive integer or a string of L and G");
      return (layer + 1) % every != 0;
    }
    const std::string s = p.as<std::string>();
    if (s.empty() || s.find_first_not_of("LG") != std::string::npos)
      c.bad("sliding_window_pattern", "expected a positive integer or a string of L and G");
    return s[size_t(layer) % s.size()] == 'L' && layer + 1 != nLayers;
  }
  return (layer + 1) % 4 != 0;
}

/// The known architectures, for the unknown-model_type message.
const char *const kKnown[] = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe",
                              "starcoder2", "gemma", "gemma2", "phi", "gptj", "gpt2",
                              "bert", "roberta", "opt", "bart", "mbart", "whisper",
                              "gpt_neox", "bloom", "falcon", "phi3", "mpt", "gpt_bigcode",
                              "qwen3", "olmo", "olmo2", "gemma3", "gemma3_text", "gpt_oss",
                              "t5", "mt5", "qwen3_moe", "granite", "stablelm", "nemotron",
                              "olmoe", "cohere", "helium", "glm", "gpt_neo", "persimmon",
                              "cohere2", "exaone4", "smollm3", "olmo3", "ministral",
                              "llama4_text", "phimoe", "jamba", "recurrent_gemma",
                              "mllama_text_model", "granitemoehybrid", "bamba", "lfm2",
                              "dbrx", "distilbert", "vit", "deit", "dinov2",
                              // CLIP and SigLIP: their text and vision encoders
                              // (composite configs: text_config, vision_config)
                              "clip", "clip_text_model", "clip_vision_model", "siglip",
                              "siglip_text_model", "siglip_vision_model", "siglip2",
                              "siglip2_text_model", "siglip2_vision_model",
                              // speech encoders (Wav2Vec2Attention and its copies)
                              "wav2vec2", "hubert", "data2vec-audio",
                              // BERT-like encoders with rotary positions, or
                              // shared layers
                              "roformer", "esm", "albert", "mpnet",
                              // Llama-like decoders of their own biases, rotary
                              // and QK-norm rules
                              "glm4_moe", "ernie4_5", "ernie4_5_moe", "seed_oss", "apertus",
                              "jais2", "falcon_h1", "dots1",
                              // GLM-4.1V's language model (text_config)
                              "glm4v_text",
                              // InternLM2 / 2.5 (remote code: modeling_internlm2.py)
                              "internlm2"};

/// The composite CLIP / SigLIP configs and their sub-configs' model types.
bool clipLike(const std::string &t) {
  for (const char *k : {"clip", "siglip", "siglip2"})
    if (t == k || t == std::string(k) + "_text_model" || t == std::string(k) + "_vision_model")
      return true;
  return false;
}

/// Model types whose attention module is another's, with the same config
/// keys and tensor names (the HF sources say "Copied from ...BartAttention"
/// or subclass BertSelfAttention): the derived spec is the other's. Known
/// too, without being listed in kKnown.
const std::pair<const char *, const char *> kAliases[] = {
    {"xlm-roberta", "roberta"}, {"camembert", "roberta"}, {"electra", "bert"},
    {"marian", "bart"},         {"m2m_100", "bart"},      {"pegasus", "bart"},
    {"blenderbot", "bart"},     {"blenderbot-small", "bart"}, {"plbart", "bart"},
    {"granitemoe", "granite"},  {"glm4", "glm"}, // (HF: class Glm4Attention(GlmAttention))
    {"arcee", "llama"}, // Arcee AFM: Llama's attention (a ReLU^2 MLP)
    // T5's attention: UMT5 with a table in every block's self-attention (the
    // weights loader reads the module's own), Switch Transformers (MoE
    // feed-forward) with block 0's.
    {"umt5", "t5"},             {"switch_transformers", "t5"},
    // Qwen2-VL / Qwen2.5-VL's language model: Qwen2's attention with M-RoPE
    // (see mropeNote), its config at the top level or in text_config.
    {"qwen2_vl", "qwen2"},      {"qwen2_5_vl", "qwen2"},
    {"qwen2_vl_text", "qwen2"}, {"qwen2_5_vl_text", "qwen2"},
    // Qwen3-VL's language model: Qwen3's attention without sliding layers
    // (Qwen3VLTextAttention; its interleaved M-RoPE rotates text tokens as
    // plain RoPE), the MoE's the same class.
    {"qwen3_vl_text", "qwen3"}, {"qwen3_vl_moe_text", "qwen3"},
    {"lfm2_moe", "lfm2"},       // (Lfm2MoeAttention(Lfm2Attention))
    {"flex_olmo", "olmo2"}};    // (FlexOlmoAttention(Olmo2Attention))

/// Architectures whose attention needs what this version cannot build yet.
const std::pair<const char *, const char *> kNotYet[] = {
    {"deepseek_v2", "multi-head latent attention (low-rank compressed keys and values, a "
                    "decoupled rotary part)"},
    {"deepseek_v3", "multi-head latent attention (low-rank compressed keys and values, a "
                    "decoupled rotary part)"},
    {"mamba", "a state-space model (no attention)"},
    {"wavlm", "a gated relative position bias (T5-style buckets scaled per head and query by "
              "a gate computed from the layer's input: gru_rel_pos_linear)"},
    // Decoders whose attention has a step the spec cannot express yet.
    {"qwen3_next", "a gated attention (the attention's output times a sigmoid gate that "
                   "q_proj computes beside the queries, before o_proj) and linear-attention "
                   "(Gated DeltaNet) layers"},
    {"afmoe", "a gated attention (the attention's output times a sigmoid gate from gate_proj, "
              "before o_proj)"},
    {"hunyuan_v1_dense", "a QK-norm with weights after the rotary embedding (attnc's comes "
                         "before it)"},
    {"hunyuan_v1_moe", "a QK-norm with weights after the rotary embedding (attnc's comes "
                       "before it)"},
    {"gemma3n", "an RMS norm of the values and layers that reuse an earlier layer's keys and "
                "values"},
    {"gemma3n_text", "an RMS norm of the values and layers that reuse an earlier layer's keys "
                     "and values"},
};

/// What the architectures' configuration classes in Hugging Face
/// transformers set where config.json leaves a key out (the attention's
/// keys, for the classes whose published configs do leave them out:
/// LLaVA's and LLaVA-NeXT's text_config name only a few Llama / Mistral
/// keys, Gemma 3's multimodal checkpoints only a few Gemma3TextConfig
/// ones, PaliGemma 2's Gemma2Config ones; transformers writes a nested
/// text_config as its difference from the class's defaults). Values that
/// changed between transformers versions are left out (CohereConfig's
/// rope_theta: 10000 in v4, 500000 in v5). A key absent from the file
/// reads as this value, as the class's __init__ would give it; a key
/// present as null keeps its null (HF's None). Defaults that are None in
/// HF are not listed.
struct ConfigDefault {
  const char *modelType, *className;
  std::initializer_list<std::pair<const char *, const char *>> keys;
};
const ConfigDefault kConfigDefaults[] = {
    {"llama", "LlamaConfig",
     {{"hidden_size", "4096"}, {"num_attention_heads", "32"}, {"num_hidden_layers", "32"},
      {"rope_theta", "10000.0"}}},
    {"mistral", "MistralConfig",
     {{"hidden_size", "4096"}, {"num_attention_heads", "32"}, {"num_key_value_heads", "8"},
      {"num_hidden_layers", "32"}, {"rope_theta", "10000.0"}, {"sliding_window", "4096"}}},
    {"mixtral", "MixtralConfig",
     {{"hidden_size", "4096"}, {"num_attention_heads", "32"}, {"num_key_value_heads", "8"},
      {"num_hidden_layers", "32"}, {"rope_theta", "1000000.0"}}},
    {"qwen2", "Qwen2Config",
     {{"hidden_size", "4096"}, {"num_attention_heads", "32"}, {"num_key_value_heads", "32"},
      {"num_hidden_layers", "32"}, {"rope_theta", "10000.0"}, {"sliding_window", "4096"},
      {"max_window_layers", "28"}}},
    {"gemma", "GemmaConfig",
     {{"hidden_size", "3072"}, {"num_attention_heads", "16"}, {"num_key_value_heads", "16"},
      {"head_dim", "256"}, {"num_hidden_layers", "28"}, {"rope_theta", "10000.0"}}},
    {"gemma2", "Gemma2Config",
     {{"hidden_size", "2304"}, {"num_attention_heads", "8"}, {"num_key_value_heads", "4"},
      {"head_dim", "256"}, {"num_hidden_layers", "26"}, {"rope_theta", "10000.0"},
      {"query_pre_attn_scalar", "256"}, {"sliding_window", "4096"},
      {"attn_logit_softcapping", "50.0"}}},
    {"gemma3_text", "Gemma3TextConfig",
     {{"hidden_size", "2304"}, {"num_attention_heads", "8"}, {"num_key_value_heads", "4"},
      {"head_dim", "256"}, {"num_hidden_layers", "26"}, {"rope_theta", "1000000.0"},
      {"rope_local_base_freq", "10000.0"}, {"query_pre_attn_scalar", "256"},
      {"sliding_window", "4096"}, {"sliding_window_pattern", "6"}}},
    // Text models of multimodal checkpoints (Llama 4, Llama 3.2 Vision, Aya
    // Vision, Qwen3-based VLMs) and their siblings; head_dim where the
    // class has the field (Qwen3MoeConfig has none: d / h).
    {"llama4_text", "Llama4TextConfig",
     {{"hidden_size", "5120"}, {"num_attention_heads", "40"}, {"num_key_value_heads", "8"},
      {"head_dim", "128"}, {"num_hidden_layers", "48"}, {"rope_theta", "500000.0"},
      {"attention_chunk_size", "8192"}}},
    {"mllama_text_model", "MllamaTextConfig",
     {{"hidden_size", "4096"}, {"num_attention_heads", "32"}, {"num_key_value_heads", "8"},
      {"num_hidden_layers", "40"}, {"rope_theta", "500000.0"}}},
    {"cohere2", "Cohere2Config",
     {{"hidden_size", "8192"}, {"num_attention_heads", "64"}, {"num_hidden_layers", "40"},
      {"rope_theta", "10000.0"}, {"sliding_window", "4096"}, {"sliding_window_pattern", "4"}}},
    {"qwen3", "Qwen3Config",
     {{"hidden_size", "4096"}, {"num_attention_heads", "32"}, {"num_key_value_heads", "32"},
      {"head_dim", "128"}, {"num_hidden_layers", "32"}, {"rope_theta", "10000.0"},
      {"sliding_window", "4096"}, {"max_window_layers", "28"}}},
    {"qwen3_moe", "Qwen3MoeConfig",
     {{"hidden_size", "2048"}, {"num_attention_heads", "32"}, {"num_key_value_heads", "4"},
      {"num_hidden_layers", "24"}, {"rope_theta", "10000.0"}, {"sliding_window", "4096"}}},
    // The rotary width, head_dim and the hybrid layers of these classes'
    // defaults: a config.json that leaves them out gets them (as HF reads
    // it).
    {"phi", "PhiConfig",
     {{"hidden_size", "2048"}, {"num_attention_heads", "32"}, {"num_hidden_layers", "24"},
      {"partial_rotary_factor", "0.5"}, {"rope_theta", "10000.0"}}},
    // (only rotary_dim: GPTJConfig also reads n_embd, n_head and n_layer
    // as hidden_size, num_attention_heads and num_hidden_layers)
    {"gptj", "GPTJConfig", {{"rotary_dim", "64"}}},
    {"glm", "GlmConfig", {{"head_dim", "128"}}},
    {"helium", "HeliumConfig", {{"head_dim", "128"}}},
    {"exaone4", "Exaone4Config",
     {{"hidden_size", "4096"}, {"num_attention_heads", "32"}, {"num_key_value_heads", "32"},
      {"num_hidden_layers", "32"}, {"rope_theta", "10000.0"}, {"sliding_window", "4096"},
      {"sliding_window_pattern", "4"}}},
    // T5's sizes (a config.json of T5Config's own defaults, t5-small's,
    // may leave them out); MT5Config and UMT5Config share theirs.
    {"t5", "T5Config",
     {{"d_model", "512"}, {"d_kv", "64"}, {"num_heads", "8"}, {"num_layers", "6"}}},
    {"mt5", "MT5Config",
     {{"d_model", "512"}, {"d_kv", "64"}, {"num_heads", "6"}, {"num_layers", "8"}}},
    {"umt5", "UMT5Config",
     {{"d_model", "512"}, {"d_kv", "64"}, {"num_heads", "6"}, {"num_layers", "8"}}},
    // (transformers v4's __init__ defaults; v5's default_theta and
    // default rope_parameters are the same)
    {"gpt_oss", "GptOssConfig",
     {{"hidden_size", "2880"}, {"num_attention_heads", "64"}, {"num_key_value_heads", "8"},
      {"head_dim", "64"}, {"num_hidden_layers", "36"}, {"rope_theta", "150000.0"},
      {"sliding_window", "128"},
      {"rope_scaling", "{rope_type: yarn, factor: 32.0, beta_fast: 32.0, beta_slow: 1.0, "
                       "truncate: false, original_max_position_embeddings: 4096}"}}},
    // CLIP's and SigLIP's sub-configs (a LLaVA vision_config names only
    // the keys that differ from CLIPVisionConfig's).
    {"clip_text_model", "CLIPTextConfig",
     {{"hidden_size", "512"}, {"num_attention_heads", "8"}, {"num_hidden_layers", "12"}}},
    {"clip_vision_model", "CLIPVisionConfig",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"siglip_text_model", "SiglipTextConfig",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"siglip_vision_model", "SiglipVisionConfig",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"siglip2_text_model", "Siglip2TextConfig",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"siglip2_vision_model", "Siglip2VisionConfig",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"wav2vec2", "Wav2Vec2Config",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"hubert", "HubertConfig",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"data2vec-audio", "Data2VecAudioConfig",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"roformer", "RoFormerConfig",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"esm", "EsmConfig",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"mpnet", "MPNetConfig",
     {{"hidden_size", "768"}, {"num_attention_heads", "12"}, {"num_hidden_layers", "12"}}},
    {"albert", "AlbertConfig",
     {{"hidden_size", "4096"}, {"num_attention_heads", "64"}, {"num_hidden_layers", "12"},
      {"num_hidden_groups", "1"}, {"inner_group_num", "1"}}},
    // (rope_theta: 5e6 in v4's Qwen3VLTextConfig, 5e5 in v5's: refused
    // when absent, kVersionDependent)
    {"qwen3_vl_text", "Qwen3VLTextConfig",
     {{"hidden_size", "4096"}, {"num_attention_heads", "32"}, {"num_key_value_heads", "32"},
      {"head_dim", "128"}}},
    {"ernie4_5", "Ernie4_5Config",
     {{"hidden_size", "1024"}, {"num_attention_heads", "16"}, {"num_key_value_heads", "2"},
      {"head_dim", "128"}, {"num_hidden_layers", "18"}, {"rope_theta", "500000.0"}}},
    {"ernie4_5_moe", "Ernie4_5_MoeConfig", {{"rope_theta", "500000.0"}}},
    {"seed_oss", "SeedOssConfig", {{"head_dim", "128"}}},
    // (FlexOlmoConfig's own, not OLMo 2's)
    {"flex_olmo", "FlexOlmoConfig", {{"rope_theta", "500000.0"}, {"rms_norm_eps", "1e-06"}}},
    {"dots1", "Dots1Config", {{"sliding_window", "4096"}, {"max_window_layers", "62"}}},
    {"apertus", "ApertusConfig",
     {{"rope_theta", "12000000.0"},
      {"rope_scaling", "{rope_type: llama3, factor: 8.0, low_freq_factor: 1.0, "
                       "high_freq_factor: 4.0, original_max_position_embeddings: 8192}"}}},
    {"smollm3", "SmolLM3Config",
     {{"hidden_size", "2048"}, {"num_attention_heads", "16"}, {"num_key_value_heads", "4"},
      {"num_hidden_layers", "36"}, {"rope_theta", "2000000.0"}}},
};

/// Keys whose configuration-class default changed between transformers
/// versions: a config.json without them is refused (which one the model
/// was trained with cannot be told), instead of taking either silently.
struct VersionDependent {
  const char *modelType, *className, *key, *values;
};
const VersionDependent kVersionDependent[] = {
    {"cohere", "CohereConfig", "rope_theta", "10000 in transformers v4, 500000 in v5"},
    {"qwen3_vl_text", "Qwen3VLTextConfig", "rope_theta", "5000000 in transformers v4, 500000 in v5"},
    {"qwen3_vl_moe_text", "Qwen3VLMoeTextConfig", "rope_theta",
     "5000000 in transformers v4, 500000 in v5"},
    {"falcon_h1", "FalconH1Config", "rope_theta", "100000 in transformers v4, 10000 in v5"},
};

/// max_position_embeddings of the classes whose rope scaling may read it
/// (dynamic NTK, longrope, yarn without original_max_position_embeddings):
/// Config::maxPositions fills it in, with a note, where ropeYaml reads it,
/// so that other configs' notes stay as they were.
const std::pair<const char *, int64_t> kMaxPositionDefaults[] = {
    {"llama", 2048},          {"mistral", 131072},     {"mixtral", 131072},
    {"qwen2", 32768},         {"qwen3", 32768},        {"qwen3_moe", 32768},
    {"gemma", 8192},          {"gemma2", 8192},        {"gemma3_text", 131072},
    {"llama4_text", 131072},  {"mllama_text_model", 131072}, {"cohere2", 8192},
    {"phi", 2048},            {"phi3", 4096},          {"phimoe", 131072},
    {"gpt_neox", 2048},       {"gpt_oss", 131072}};

/// The other spellings of keys the import reads, as the configuration
/// classes' attribute_map (and BLOOM's and Falcon's n_embed keyword)
/// accept them: bigscience/bloom-560m's config.json has n_embed and
/// num_attention_heads, where BloomConfig stores hidden_size and n_head.
/// The class sets the other spelling last, so where the file has both it
/// wins (a note says so when they differ).
struct KeyAliases {
  std::initializer_list<const char *> modelTypes;
  std::initializer_list<std::pair<const char *, const char *>> aliasToKey;
};
const KeyAliases kKeyAliases[] = {
    {{"bloom"},
     {{"num_attention_heads", "n_head"}, {"num_hidden_layers", "n_layer"},
      {"n_embed", "hidden_size"}}},
    {{"falcon"}, {{"n_embed", "hidden_size"}}},
    {{"gpt2", "gptj", "gpt_bigcode"},
     {{"hidden_size", "n_embd"}, {"num_attention_heads", "n_head"},
      {"num_hidden_layers", "n_layer"}, {"max_position_embeddings", "n_positions"}}},
    {{"mpt"},
     {{"hidden_size", "d_model"}, {"num_attention_heads", "n_heads"},
      {"num_hidden_layers", "n_layers"}}},
    {{"t5", "mt5"},
     {{"hidden_size", "d_model"}, {"num_attention_heads", "num_heads"},
      {"num_hidden_layers", "num_layers"}, {"head_dim", "d_kv"}}},
    {{"bart", "mbart"},
     {{"hidden_size", "d_model"}, {"num_attention_heads", "encoder_attention_heads"}}},
    {{"whisper"},
     {{"hidden_size", "d_model"}, {"num_attention_heads", "encoder_attention_heads"},
      {"num_key_value_heads", "encoder_attention_heads"}}},
    {{"gpt_neo"}, {{"num_attention_heads", "num_heads"}, {"num_hidden_layers", "num_layers"}}},
    {{"distilbert"},
     {{"hidden_size", "dim"}, {"num_attention_heads", "n_heads"},
      {"num_hidden_layers", "n_layers"}}},
    {{"dbrx"},
     {{"hidden_size", "d_model"}, {"num_attention_heads", "n_heads"},
      {"num_hidden_layers", "n_layers"}, {"max_position_embeddings", "max_seq_len"}}}};

/// kKeyAliases for model type `mt` (after kAliases): the other spelling's
/// value under the key the import reads.
void applyKeyAliases(Config &c, const std::string &mt, std::vector<std::string> &notes) {
  for (const KeyAliases &group : kKeyAliases) {
    if (std::find(group.modelTypes.begin(), group.modelTypes.end(), mt) ==
        group.modelTypes.end())
      continue;
    for (const auto &[alias, key] : group.aliasToKey) {
      if (!c.root[alias])
        continue;
      const YAML::Node other = c.root[alias], own = c.root[key];
      if (own && !(own.IsScalar() && other.IsScalar() && own.Scalar() == other.Scalar()))
        notes.push_back(fmt::format("{}{}: note: {} and {} are one setting of the "
                                    "configuration class; transformers takes {} (set last)",
                                    c.file, locationOf(other), alias, key, alias));
      c.root[key] = other;
    }
  }
}

/// The class default that Config::maxPositions falls back on.
void setMaxPositionDefault(Config &c, const std::string &modelType,
                           std::vector<std::string> &notes) {
  const std::string type = modelType == "gemma3" ? "gemma3_text" : modelType;
  c.notes = &notes;
  for (const auto &[t, v] : kMaxPositionDefaults)
    if (type == t)
      c.maxPositionDefault = v;
  if (type == "phi3")
    c.originalMaxPositionDefault = 4096;
}

/// Fills the keys config.json leaves out with the configuration class's
/// defaults (kConfigDefaults), with one note naming them.
void applyConfigDefaults(Config &c, const std::string &modelType,
                         std::vector<std::string> &notes) {
  const std::string type = modelType == "gemma3" ? "gemma3_text" : modelType;
  for (const ConfigDefault &d : kConfigDefaults) {
    if (type != d.modelType)
      continue;
    std::string filled;
    // (transformers v5 keeps the rope keys in rope_parameters, which
    // flattenRopeParameters reads later: those stay unset here)
    const bool v5Rope = bool(c.root["rope_parameters"]);
    // (a layer_types list supersedes the keys its pattern was computed from)
    const bool typed = c.root["layer_types"] && c.root["layer_types"].IsSequence();
    for (const auto &[key, value] : d.keys)
      if (!c.root[key] && !(v5Rope && std::string(key).rfind("rope_", 0) == 0) &&
          !(v5Rope && std::string(key) == "partial_rotary_factor" &&
            c.root["rope_parameters"].IsMap() &&
            c.root["rope_parameters"]["partial_rotary_factor"]) &&
          !(typed && (std::string(key) == "sliding_window_pattern" ||
                      std::string(key) == "max_window_layers"))) {
        c.root[key] = YAML::Load(value); // (a map for rope_scaling)
        filled += fmt::format("{}{} {}", filled.empty() ? "" : ", ", key, value);
      }
    if (!filled.empty())
      notes.push_back(fmt::format("note: {}: not in the file, {}'s defaults (as Hugging Face "
                                  "reads the config): {}",
                                  c.file, d.className, filled));
  }
}

std::string knownList() {
  std::string s;
  for (const char *k : kKnown)
    s += (s.empty() ? "" : ", ") + std::string(k);
  for (const auto &alias : kAliases)
    s += ", " + std::string(alias.first);
  return s;
}

/// A scalar as the spec parser reads it (YAML: quotes and blanks
/// dropped); the text itself where it is not one.
std::string scalarOf(const std::string &text) {
  try {
    YAML::Node n = YAML::Load(text);
    if (n.IsScalar())
      return n.as<std::string>();
  } catch (const YAML::Exception &) {
  }
  return text;
}

/// The value of a top-level key of a derived YAML (the scalar after
/// "key:" on its line), if the key is there.
std::optional<std::string> topLevelValue(const std::string &yaml, const std::string &key) {
  size_t at = yaml.rfind(key + ":", 0) == 0 ? 0 : yaml.find("\n" + key + ":");
  if (at == std::string::npos)
    return std::nullopt;
  at += (yaml[at] == '\n' ? 1 : 0) + key.size() + 1;
  return scalarOf(yaml.substr(at, yaml.find('\n', at) - at));
}

/// The mask a derived YAML spells (none without the key); nullopt for a
/// name the spec does not know (its parser reports it, located).
std::optional<MaskKind> maskOf(const std::string &yaml) {
  const std::optional<std::string> m = topLevelValue(yaml, "mask");
  return m ? maskKindNamed(*m) : MaskKind::None;
}

/// The masks that attend within a window of their own size key (a sliding
/// window, Llama 4's chunks): what --set may not drop or leave unsized.
struct WindowedMask {
  MaskKind kind;
  const char *what;    ///< "sliding window"
  const char *sizeKey; ///< the spec key of its size
  bool (*is)(MaskKind);
};
const WindowedMask kWindowedMasks[] = {
    {MaskKind::BidirectionalWindow, "bidirectional window", "window", maskIsBidirectional},
    {MaskKind::SlidingWindow, "sliding window", "window", maskIsSliding},
    {MaskKind::Chunked, "chunk", "chunk", maskIsChunked}};

/// Applies `--set KEY=VALUE` to top-level keys of the derived YAML: the
/// key's block (its line and any indented lines after it) is replaced, or
/// the key is appended.
std::string applySets(std::string yaml, const std::vector<std::string> &sets,
                      std::vector<std::string> &notes) {
  // (the checkpoint's mask: an earlier --set mask does not count)
  const std::optional<MaskKind> was = maskOf(yaml);
  std::map<std::string, std::string> given; // key -> its --set (one per key)
  for (const std::string &s : sets) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ImportError{fmt::format("attnc: error: --set {}: expected KEY=VALUE", s)};
    std::string key = s.substr(0, eq), value = s.substr(eq + 1);
    // (as an option given twice: the first would be dropped without a word)
    if (auto [it, fresh] = given.emplace(key, s); !fresh)
      throw ImportError{fmt::format("attnc: error: --set {}: key '{}' already set by --set {}; "
                                    "give each key once",
                                    s, key, it->second)};
    if (key.find_first_of(" :.\n") != std::string::npos)
      throw ImportError{fmt::format("attnc: error: --set {}: expected a top-level spec key", s)};
    // One value on one line: a line break would add keys of its own.
    for (char ch : value)
      if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t')
        throw ImportError{fmt::format("attnc: error: --set {}=...: expected the value on one line, found a "
                                      "line break or control character in it", key)};
    // A mask without causality over a decoder's causal one is legal (the
    // spec's `padding` is bidirectional) but rarely what is meant.
    const std::optional<MaskKind> set =
        key == "mask" ? maskKindNamed(scalarOf(value)) : std::nullopt;
    if (set && was) {
      // The window (chunk) the layer attends within comes with its own
      // key, which only the masks of its kind keep.
      for (const WindowedMask &w : kWindowedMasks)
        if (w.is(*was) && !w.is(*set))
          throw ImportError{fmt::format(
              "attnc: error: --set {}: this layer attends within a {} (mask: {}), which "
              "mask {} would drop; {}",
              s, w.what, toString(*was), value,
              maskHasLengths(*set)
                  ? fmt::format("--set mask={} keeps it and adds padding lengths",
                                toString(maskWithLengths(w.kind)))
                  : fmt::format("mask {} or {} keeps it", toString(w.kind),
                                toString(maskWithLengths(w.kind))))};
      if (maskIsCausal(*was) && !maskIsCausal(*set))
        notes.push_back(fmt::format(
            "note: --set {}: the checkpoint's attention is causal (mask: {}); "
            "mask {} lets every query see later keys ({} keeps "
            "causality and adds padding lengths)",
            s, toString(*was), value, toString(maskWithLengths(*was))));
    }
    std::vector<std::string> out;
    std::stringstream ss(yaml);
    bool skipping = false;
    for (std::string l; std::getline(ss, l);) {
      if (skipping && !l.empty() && l[0] == ' ')
        continue;
      skipping = l.rfind(key + ":", 0) == 0;
      if (!skipping)
        out.push_back(l);
    }
    yaml.clear();
    for (const std::string &l : out)
      yaml += l + "\n";
    yaml += key + ": " + value + "\n";
  }
  // A window (chunk) mask set on a layer that attends to every earlier key
  // needs its size from another --set; say which mask was meant.
  const std::optional<MaskKind> finalMask = maskOf(yaml);
  if (!finalMask || !was)
    return yaml;
  for (const WindowedMask &w : kWindowedMasks)
    if (w.is(*finalMask) && !topLevelValue(yaml, w.sizeKey))
      throw ImportError{fmt::format(
          "attnc: error: --set mask={}: this layer has no {} of its own (mask: {}): {}--set "
          "{}=N gives it a {}",
          toString(*finalMask), w.sizeKey, toString(*was),
          maskHasLengths(*finalMask)
              ? fmt::format("--set mask={} adds padding lengths to its mask, or ",
                            toString(maskWithLengths(*was)))
              : "",
          w.sizeKey, w.sizeKey)};
  return yaml;
}

HfSpec import(const std::string &dir, const std::string &module, int64_t layerArg,
              const std::vector<std::string> &sets, const HfReaders &readers) {
  const TensorNamesFn &tensorNames = readers.tensorNames;
  HfSpec out;
  if (!module.empty() && (module.front() == '.' || module.back() == '.' ||
                          module.find("..") != std::string::npos))
    throw ImportError{fmt::format("attnc: error: --module {}: expected the module's name as "
                                  "its tensor names spell it, dot-separated, without a "
                                  "leading or trailing dot (model.layers.1.self_attn)",
                                  module)};
  Config c;
  c.file = dir + "/config.json";
  std::string text, why;
  if (!attnrt::readRegularFile(c.file, uint64_t(1) << 22, text, why))
    throw ImportError{fmt::format("{}: error: cannot read the checkpoint's config: {} "
                                  "(attnc --hf takes a Hugging Face model directory)",
                                  c.file, why)};
  uint64_t byte = 0;
  if (readers.checkJson && !readers.checkJson(text, why, byte)) {
    byte = std::min<uint64_t>(byte, text.size());
    const size_t lineStart = byte == 0 ? std::string::npos : text.rfind('\n', byte - 1);
    const int64_t line = 1 + std::count(text.begin(), text.begin() + byte, '\n');
    const int64_t col = int64_t(byte) - (lineStart == std::string::npos ? -1 : int64_t(lineStart));
    throw ImportError{fmt::format("{}:{}:{}: error: not JSON: {} (transformers reads "
                                  "config.json with Python's json)",
                                  c.file, line, col, why)};
  }
  try {
    c.root = YAML::Load(text);
  } catch (const YAML::Exception &e) {
    throw ImportError{fmt::format("{}:{}:{}: error: malformed JSON: {}", c.file,
                                  e.mark.line + 1, e.mark.column + 1, e.msg)};
  }
  if (!c.root.IsMap())
    throw ImportError{fmt::format("{}: error: expected a JSON object", c.file)};
  // A key twice in one object: YAML reads the first, Python's json (and
  // so transformers) the last; neither is safe to guess.
  std::function<void(const YAML::Node &)> noDuplicates = [&](const YAML::Node &n) {
    if (n.IsMap()) {
      std::set<std::string> seen;
      for (const auto &kv : n) {
        const std::string k = kv.first.Scalar();
        if (!seen.insert(k).second)
          throw ImportError{fmt::format(
              "{}{}: error: key '{}' appears twice in one object (Python's json, and so "
              "transformers, reads the last one; remove one)",
              c.file, locationOf(kv.first), k)};
        noDuplicates(kv.second);
      }
    } else if (n.IsSequence()) {
      for (const auto &item : n)
        noDuplicates(item);
    }
  };
  noDuplicates(c.root);
  std::string mt = c.str("model_type");
  if (mt.empty())
    throw ImportError{fmt::format("{}{}: error: model_type: expected the architecture's "
                                  "name, found {}", c.file, locationOf(c.root["model_type"]),
                                  !c.root["model_type"]          ? "no such key"
                                  : c.root["model_type"].IsNull() ? "null"
                                                                  : "an empty string")};
  // A multimodal checkpoint (LLaVA, Mistral 3, PaliGemma, Gemma 3, ...)
  // keeps its language model's keys in text_config, with that model's own
  // model_type (Gemma 3: gemma3_text, handled as gemma3). The storage type
  // is often only in the outer config.
  // CLIP's and SigLIP's composite configs: a legacy text_config_dict /
  // vision_config_dict overrides text_config / vision_config (CLIPConfig
  // updates them with it), and a sub-config the file leaves out is the
  // class's defaults (an empty one: kConfigDefaults fills it).
  // (SiglipConfig reads no legacy dict.)
  if (clipLike(mt) && mt.find('_') == std::string::npos) {
    for (const char *part : {"text", "vision"}) {
      const std::string sub = std::string(part) + "_config", legacy = sub + "_dict";
      if (const YAML::Node d = c.root[legacy]; mt == "clip" && d && d.IsMap()) {
        // CLIPConfig: text_config.update(CLIPTextConfig(**text_config_dict)
        // .to_dict()): the dict and the class's defaults for what it
        // leaves out, whatever text_config says.
        c.root[sub] = YAML::Clone(d);
        out.notes.push_back(fmt::format("note: {}: {} replaces {} (with the class's defaults "
                                        "for what it leaves out, as CLIPConfig reads the "
                                        "legacy key)", c.file, legacy, sub));
      } else if (!c.root[sub] || c.root[sub].IsNull()) {
        c.root[sub] = YAML::Node(YAML::NodeType::Map);
      }
    }
  }
  const YAML::Node textConfig = c.root["text_config"];
  auto listed = [](const std::string &t) {
    for (const char *k : kKnown)
      if (t == k)
        return true;
    for (const auto &a : kAliases)
      if (t == a.first)
        return true;
    for (const auto &n : kNotYet)
      if (t == n.first)
        return true;
    return false;
  };
  std::string wrapper; // the outer model_type of a text_config checkpoint
  const YAML::Node outerRoot = YAML::Clone(c.root);
  // A vision tower's module (LLaVA's, PaliGemma's and Gemma 3's
  // vision_tower.vision_model.encoder.layers.N.self_attn, CLIP's and
  // SigLIP's vision_model.encoder...): the encoder's keys are in
  // vision_config, with its own model_type (Mllama's vision encoder below).
  const bool visionModule =
      mt != "mllama" &&
      (hasPathPart(module, "vision_tower") || hasPathPart(module, "vision_model"));
  const YAML::Node visionConfig = c.root["vision_config"];
  if (visionModule && (textConfig || visionConfig) && !(visionConfig && visionConfig.IsMap()))
    throw ImportError{fmt::format(
        "{}: error: --module {}: a vision encoder's module, and the config has no "
        "vision_config object to read its sizes from", c.file, module)};
  if (visionModule && visionConfig && visionConfig.IsMap()) {
    const std::string outer = wrapper = mt;
    YAML::Node vision = visionConfig; // (not a clone: its values keep their positions)
    for (const char *key : {"torch_dtype", "dtype"})
      if ((!vision[key] || vision[key].IsNull()) && c.has(key))
        vision[key] = c.root[key];
    c.root = vision;
    mt = c.str("model_type");
    if (mt.empty()) {
      // LlavaConfig (LLaVA-NeXT's, VipLlava's) makes a CLIPVisionConfig of
      // a vision_config without model_type; CLIPConfig and SiglipConfig
      // their own.
      // (PaliGemmaConfig and Gemma3Config: a SiglipVisionConfig)
      if (outer == "llava" || outer == "llava_next" || outer == "vipllava" || clipLike(outer))
        mt = clipLike(outer) ? outer + "_vision_model" : "clip_vision_model";
      else if (outer == "paligemma" || outer == "gemma3")
        mt = "siglip_vision_model";
      else
        throw ImportError{fmt::format("{}: error: vision_config.model_type: model_type '{}' "
                                      "keeps its vision encoder in vision_config, which names "
                                      "no model_type", c.file, outer)};
    }
    if (mt != "clip_vision_model" && mt != "siglip_vision_model" &&
        mt != "siglip2_vision_model")
      throw ImportError{fmt::format(
          "{}{}: error: --module {}: a vision encoder's module; vision_config's model_type "
          "'{}' is not a vision encoder attnc compiles (clip_vision_model, "
          "siglip_vision_model, siglip2_vision_model)",
          c.file, locationOf(c.root["model_type"]), module, mt)};
    out.notes.push_back(fmt::format("note: {}: model_type '{}': the vision encoder's attention, "
                                    "vision_config's model_type '{}'", c.file, outer, mt));
  } else if (textConfig && textConfig.IsMap() &&
      (mt == "gemma3" || !listed(mt) || !c.has("hidden_size"))) {
    const std::string outer = wrapper = mt;
    YAML::Node text = textConfig; // (not a clone: its values keep their positions)
    for (const char *key : {"torch_dtype", "dtype"})
      if ((!text[key] || text[key].IsNull()) && c.has(key))
        text[key] = c.root[key];
    c.root = text;
    if (outer != "gemma3") {
      mt = c.str("model_type");
      if (mt.empty() && !listed(outer))
        throw ImportError{fmt::format("{}: error: text_config.model_type: model_type '{}' "
                                      "keeps its language model in text_config, which names "
                                      "no model_type", c.file, outer)};
      if (mt.empty()) // (CLIPConfig's text_config: a CLIPTextConfig)
        mt = clipLike(outer) ? outer + "_text_model" : outer;
      if (!listed(outer))
        out.notes.push_back(fmt::format("note: {}: model_type '{}': the language model's "
                                        "attention, text_config's model_type '{}'",
                                        c.file, outer, mt));
    }
  }
  // Mllama's vision encoder (vision_model.transformer.layers.N.self_attn,
  // vision_model.global_transformer.layers.N.self_attn): its own keys in
  // vision_config.
  const bool mllamaVision = wrapper == "mllama" && module.find("vision_model.") != std::string::npos;
  if (mllamaVision) {
    const YAML::Node vc = outerRoot["vision_config"];
    if (!vc || !vc.IsMap())
      throw ImportError{fmt::format("{}: error: vision_config: expected the vision encoder's "
                                    "config for --module {}, found none", c.file, module)};
    c.root = YAML::Clone(vc);
    mt = "mllama_vision";
    out.notes.erase(std::remove_if(out.notes.begin(), out.notes.end(),
                                   [](const std::string &n) {
                                     return n.find("text_config's model_type") !=
                                            std::string::npos;
                                   }),
                    out.notes.end());
  }
  for (const auto &[name, why] : kNotYet)
    if (mt == name)
      throw ImportError{fmt::format(
          "{}{}: error: model_type '{}' needs {}, which this version of attnc does "
          "not compile yet (docs/models.md)", c.file, locationOf(c.root["model_type"]), mt, why)};
  const std::string namedType = mt; // the kernel's name keeps the checkpoint's
  for (const auto &[alias, same] : kAliases)
    if (mt == alias)
      mt = same;
  if (!mllamaVision && std::find_if(std::begin(kKnown), std::end(kKnown),
                                    [&](const char *k) { return mt == k; }) == std::end(kKnown))
    throw ImportError{fmt::format(
        "{}{}: error: model_type '{}' is not an architecture attnc knows{}; known: {} (and "
        "a multimodal config, such as llama4, mllama or llava, with a text_config that "
        "names one of them)", c.file, locationOf(c.root["model_type"]), namedType,
        // Falcon's first checkpoints shipped remote code and this config;
        // their repositories now carry Hugging Face's own (model_type falcon).
        mt == "RefinedWeb" || mt == "RefinedWebModel"
            ? " (the config of Falcon's remote code: Hugging Face's Falcon reads the "
              "checkpoint's updated config.json, model_type falcon, which attnc imports)"
            : "",
        knownList())};

  // (by the checkpoint's own model_type: an alias's class may differ, as
  // Qwen2VLConfig's defaults do from Qwen2Config's)
  applyKeyAliases(c, mt, out.notes);
  applyConfigDefaults(c, namedType, out.notes);
  // A quantized checkpoint (GPTQ, AWQ, FP8, bitsandbytes, ...): the block
  // is the model's, its weights are not what the weights loader reads.
  // (outerRoot is a clone, without positions: the root's own node where
  // the config has no text_config wrapper)
  if (const YAML::Node q = wrapper.empty() && !mllamaVision ? c.root["quantization_config"]
                                                            : outerRoot["quantization_config"];
      q && q.IsMap()) {
    const YAML::Node m = q["quant_method"];
    out.notes.push_back(fmt::format(
        "{}{}: note: quantization_config{}: the kernel computes with float weights "
        "(weight_dtype), and attnc-run --hf reads F32, F16, BF16 or F64 tensors, not this "
        "checkpoint's quantized ones: run it on the model's unquantized checkpoint",
        c.file, locationOf(q),
        m && m.IsScalar() ? fmt::format(" (quant_method {})", m.Scalar()) : std::string()));
  }
  // Sizes and counts the import divides by or checks a layer against: a
  // value below 1 (which transformers' classes store, and their models
  // then fail on) is refused where it is; a sliding window below 0 too.
  for (const char *k :
       {"hidden_size", "n_embd", "d_model", "num_attention_heads", "n_head", "num_heads",
        "encoder_attention_heads", "decoder_attention_heads", "num_key_value_heads",
        "n_head_kv", "num_kv_heads", "multi_query_group_num", "head_dim", "d_kv",
        "num_hidden_layers", "n_layer", "num_layers", "num_decoder_layers", "n_layers",
        "encoder_layers", "decoder_layers", "max_position_embeddings", "n_positions",
        "attention_chunk_size", "relative_attention_num_buckets",
        "relative_attention_max_distance"})
    if (c.has(k) && c.root[k].IsScalar())
      if (int64_t v = c.integer(k); v < 1)
        c.bad(k, fmt::format("expected a positive integer, found {}", v));
  if (c.has("sliding_window") && c.root["sliding_window"].IsScalar())
    if (int64_t w = c.integer("sliding_window"); w < 0)
      c.bad("sliding_window",
            fmt::format("expected a window of at least 0 keys (or null), found {}", w));

  // The module: --module, or --layer N of a decoder-only model.
  std::string path = module;
  const bool llamaLike = mt == "llama" || mt == "mistral" || mt == "mixtral" ||
                         mt == "qwen2" || mt == "qwen2_moe" || mt == "starcoder2" ||
                         mt == "gemma" || mt == "gemma2" || mt == "phi" ||
                         mt == "qwen3" || mt == "olmo" || mt == "olmo2" || mt == "gemma3" ||
                         mt == "gemma3_text" || mt == "gpt_oss" || mt == "qwen3_moe" ||
                         mt == "granite" || mt == "stablelm" || mt == "nemotron" ||
                         mt == "olmoe" || mt == "cohere" || mt == "helium" || mt == "glm" ||
                         mt == "cohere2" || mt == "exaone4" || mt == "smollm3" || mt == "olmo3" ||
                         mt == "ministral" || mt == "llama4_text" || mt == "glm4_moe" ||
                         mt == "ernie4_5" || mt == "ernie4_5_moe" || mt == "seed_oss" ||
                         mt == "apertus" || mt == "jais2" || mt == "falcon_h1" ||
                         mt == "dots1" || mt == "glm4v_text";
  const bool gemma3 = mt == "gemma3" || mt == "gemma3_text";
  // The N-th self-attention module of a decoder-only model as its
  // checkpoints name it ("" for other models): --layer N, and the
  // suggestion when a --module's last component is not the attention's.
  auto layerPathOf = [&](int64_t n) -> std::string {
    if (llamaLike || mt == "phi3" || mt == "phimoe" || mt == "jamba" ||
        mt == "granitemoehybrid" || mt == "bamba" || mt == "lfm2" || mt == "persimmon")
      return fmt::format("model.layers.{}.self_attn", n);
    else if (mt == "internlm2")
      return fmt::format("model.layers.{}.attention", n);
    else if (mt == "gptj" || mt == "gpt_bigcode")
      return fmt::format("transformer.h.{}.attn", n);
    else if (mt == "gpt2")
      return fmt::format("h.{}.attn", n);
    else if (mt == "opt")
      return fmt::format("model.decoder.layers.{}.self_attn", n);
    else if (mt == "dbrx")
      return fmt::format("transformer.blocks.{}.norm_attn_norm.attn", n);
    else if (mt == "recurrent_gemma")
      return fmt::format("model.layers.{}.temporal_block", n);
    else if (mt == "gpt_neox")
      return fmt::format("gpt_neox.layers.{}.attention", n);
    else if (mt == "bloom" || mt == "falcon")
      return fmt::format("transformer.h.{}.self_attention", n);
    else if (mt == "mpt")
      return fmt::format("transformer.blocks.{}.attn", n);
    else if (mt == "gpt_neo")
      return fmt::format("transformer.h.{}.attn.attention", n);
    return "";
  };
  if (path.empty()) {
    if (layerArg < 0)
      throw ImportError{"attnc: error: --hf needs --module PATH (the attention module "
                        "as the checkpoint's tensor names spell it) or --layer N"};
    if (!wrapper.empty())
      throw ImportError{fmt::format(
          "attnc: error: --layer: model_type '{}' keeps its language model under a prefix "
          "of its own; give --module PATH as its tensor names spell it (e.g. "
          "language_model.model.layers.{}.self_attn or model.language_model.layers.{}.self_attn)",
          wrapper, layerArg, layerArg)};
    path = layerPathOf(layerArg);
    if (path.empty())
      throw ImportError{fmt::format("attnc: error: --layer is for decoder-only "
                                    "models; {} needs --module PATH", mt)};
    // A checkpoint saved from the inner model ('h.3.self_attention' for
    // BLOOM's 'transformer.h.3.self_attention') or from the model with its
    // head ('transformer.h.3.attn' for GPT-2's 'h.3.attn'): the module
    // that is there. Without weight files (or with the module where
    // derived, or more than one candidate) the derived path stays.
    std::vector<std::string> names;
    if (tensorNames && tensorNames(dir, names)) {
      std::vector<std::string> roots = attnrt::moduleUnderOtherRoots(names, path);
      if (roots.size() == 1) {
        out.notes.push_back(fmt::format("note: --layer {}: the checkpoint's tensors are under "
                                        "'{}', not '{}'", layerArg, roots[0], path));
        path = roots[0];
      }
    }
    out.notes.push_back(fmt::format("note: --layer {}: module {} (attnc-run --module {})",
                                    layerArg, path, path));
  } else if (std::vector<std::string> names; tensorNames && tensorNames(dir, names)) {
    // --module as the user spelled it: where the checkpoint has no tensor
    // under it but has the module under one other root (T5 saved without
    // 'model.'), a warning names that one, which attnc-run --module takes.
    const std::string prefix = path + ".";
    const bool there = std::any_of(names.begin(), names.end(), [&](const std::string &n) {
      return n.compare(0, prefix.size(), prefix) == 0;
    });
    std::vector<std::string> roots = there ? std::vector<std::string>()
                                           : attnrt::moduleUnderOtherRoots(names, path);
    if (roots.size() == 1)
      out.notes.push_back(fmt::format("warning: --module {}: the checkpoint has no tensor "
                                      "under it; the module is there as '{}' (attnc-run "
                                      "--module {} loads it)", path, roots[0], roots[0]));
  }
  ModulePath m = parseModule(path);
  const int64_t layer = m.layer;
  // The layer count of the module's stack: encoder-decoder models count
  // each stack's layers apart (T5's decoder: num_decoder_layers, else
  // num_layers).
  const bool decoderStack = m.before.find("decoder") != std::string::npos;
  const bool encDec = mt == "bart" || mt == "mbart" || mt == "whisper" || mt == "marian";
  const bool t5 = mt == "t5" || mt == "mt5" || mt == "umt5";
  const char *layersKey =
      mt == "gpt2" || mt == "gptj" || mt == "bloom" || mt == "gpt_bigcode" ? "n_layer"
      : encDec ? (decoderStack ? "decoder_layers" : "encoder_layers")
      : t5 && decoderStack && c.has("num_decoder_layers") ? "num_decoder_layers"
      : mt == "mpt" || t5 || mt == "gpt_neo"      ? "num_layers"
      : mt == "dbrx" || mt == "distilbert"        ? "n_layers"
                                                  : "num_hidden_layers";
  const int64_t nLayers = c.integer(layersKey, -1);
  if (layer < 0)
    throw ImportError{fmt::format("attnc: error: --module {}: expected a layer index "
                                  "in the path (e.g. model.layers.3.self_attn)", path)};
  if (m.layerText.size() > 1 && m.layerText[0] == '0')
    throw ImportError{fmt::format("attnc: error: --module {}: the layer index '{}' has a "
                                  "leading zero; checkpoints name layer {} '{}'",
                                  path, m.layerText, layer, layer)};
  if (nLayers >= 0 && layer >= nLayers && mt != "mllama_vision")
    throw ImportError{fmt::format(
        "attnc: error: {}: layer {} is past the model's {} layers ({}{}: {})",
        module.empty() ? fmt::format("--layer {} (module {})", layerArg, path)
                       : "--module " + path,
        layer, nLayers,
        wrapper.empty() || mt == "mllama_vision" ? "" : visionModule ? "vision_config." : "text_config.",
        layersKey, nLayers)};

  flattenRopeParameters(c, layer, gemma3);
  for (const VersionDependent &v : kVersionDependent)
    if (namedType == v.modelType && !c.has(v.key))
      throw ImportError{fmt::format(
          "{}: error: {}: not in the file, and {}'s default changed between versions ({}): "
          "add the key with the value of the transformers the checkpoint was made for",
          c.file, v.key, v.className, v.values)};
  setMaxPositionDefault(c, namedType, out.notes);
  mropeNote(c, out.notes);

  std::string y = fmt::format("name: {}\n", kernelName(namedType, path));
  auto expectAfter = [&](std::initializer_list<const char *> ok) {
    for (const char *a : ok)
      if (m.after == a)
        return;
    std::string list;
    for (const char *a : ok)
      list += (list.empty() ? "" : " or ") + std::string(a);
    // Where the model type has a usual path and the prefix differs, that
    // one (a Mistral module spelled as GPT-2's: model.layers.1.self_attn,
    // not transformer.h.1.self_attn).
    const std::string usual = layerPathOf(layer);
    const std::string root = usual.empty() ? m.before : parseModule(usual).before;
    // (the usual root itself, or under a wrapper's prefix: the user's is kept)
    const std::string wrapped = "." + root;
    const bool ownRoot = m.before == root ||
                         (m.before.size() > wrapped.size() &&
                          m.before.compare(m.before.size() - wrapped.size(), wrapped.size(),
                                           wrapped) == 0);
    throw ImportError{fmt::format("attnc: error: --module {}: expected the attention "
                                  "module of a layer ({}), found '{}'", path,
                                  ownRoot ? fmt::format("{}.{}.{}", m.before, layer, list)
                                          : fmt::format("{}, as {} checkpoints name it",
                                                        usual, mt),
                                  m.after)};
  };

  if (llamaLike) {
    expectAfter({"self_attn"});
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    const int64_t kv = c.integer("num_key_value_heads", h);
    // (an absent head_dim as the class gives it: kConfigDefaults; null: d / h)
    const YAML::Node &hd = c.root["head_dim"];
    // (Glm4vTextAttention: hidden_size // num_attention_heads, whatever
    // head_dim says)
    const int64_t dh = (hd && hd.IsNull()) || mt == "glm4v_text" ? d / h
                                                               : c.integer("head_dim", d / h);
    // (its rotary embedding takes head_dim where the config has one)
    if (mt == "glm4v_text" && c.has("head_dim") && c.integer("head_dim") != d / h)
      c.bad("head_dim", fmt::format("{}: Glm4vTextAttention's heads are hidden_size // "
                                    "num_attention_heads = {} wide, and its rotary embedding "
                                    "takes head_dim: the model cannot run", c.integer("head_dim"),
                                    d / h));
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nhead_dim: {}\n", d, h, kv, dh);
    y += "weights: separate\n";
    // Biases: Qwen2 q/k/v only; StableLM q/k/v with use_qkv_bias; Helium
    // q/k/v with attention_bias, GLM too (default on); StarCoder2 use_bias;
    // Phi-2 all; others attention_bias on all four.
    auto qkvBias = [&](const char *key, bool dflt) {
      return c.boolean(key, dflt) ? "bias: [q, k, v]\n" : "bias: false\n";
    };
    if (mt == "qwen2" || mt == "qwen2_moe")
      y += "bias: [q, k, v]\n";
    else if (mt == "stablelm")
      y += qkvBias("use_qkv_bias", false);
    else if (mt == "helium")
      y += qkvBias("attention_bias", false);
    else if (mt == "glm")
      y += qkvBias("attention_bias", true);
    else if (mt == "glm4v_text") // (Glm4vTextAttention: q/k/v always, o never)
      y += "bias: [q, k, v]\n";
    else if (mt == "glm4_moe") // (o_proj never biased)
      y += qkvBias("attention_bias", false);
    else if (mt == "ernie4_5" || mt == "ernie4_5_moe")
      y += fmt::format("bias: {}\n", c.boolean("use_bias", false) ? "true" : "false");
    else if (mt == "jais2")
      y += fmt::format("bias: {}\n", c.boolean("attention_bias", true) ? "true" : "false");
    else if (mt == "seed_oss") { // q/k/v by attention_bias (on), o by attention_out_bias
      const bool qkv = c.boolean("attention_bias", true),
                 o = c.boolean("attention_out_bias", false);
      y += qkv && o ? "bias: true\n" : qkv ? "bias: [q, k, v]\n" : o ? "bias: [o]\n"
                                                                   : "bias: false\n";
    }
    else if (mt == "starcoder2")
      y += fmt::format("bias: {}\n", c.boolean("use_bias", true) ? "true" : "false");
    else if (mt == "phi" || mt == "gpt_oss")
      y += "bias: true\n";
    else if (mt == "mistral" || mt == "mixtral" || mt == "exaone4" || mt == "ministral") {
      // bias=False in their attention classes, whatever the config says.
      y += "bias: false\n";
      if (c.boolean("attention_bias", false))
        out.notes.push_back(fmt::format(
            "{}{}: note: attention_bias: {}'s attention has no biases whatever the config "
            "says (transformers' {} ignores the key), so the kernel adds none",
            c.file, locationOf(c.root["attention_bias"]), mt,
            mt == "mistral"   ? "MistralAttention"
            : mt == "mixtral" ? "MixtralAttention"
            : mt == "exaone4" ? "Exaone4Attention"
                              : "MinistralAttention"));
    }
    else
      y += fmt::format("bias: {}\n", c.boolean("attention_bias", false) ? "true" : "false");
    // Sliding windows: Mistral/Mixtral/StarCoder2 every layer; Qwen2 from
    // max_window_layers with use_sliding_window; Gemma 2 even layers.
    int64_t window = c.has("sliding_window") ? c.integer("sliding_window") : 0;
    if (mt == "olmo3" && !c.root["sliding_window"]) // Olmo3Config's default
      window = 4096;
    bool slides = window > 0;
    // A config's layer_types (written by recent transformers) says which
    // layers slide, over the rule it was computed from: the attention
    // modules read it (Qwen2/Qwen3, Gemma 2 and 3, gpt-oss, ...).
    const YAML::Node &layerTypes = c.root["layer_types"];
    const bool typed = layerTypes && layerTypes.IsSequence() && layer < int64_t(layerTypes.size());
    const bool typedSliding =
        typed && layerTypes[size_t(layer)].as<std::string>() == "sliding_attention";
    if (mt == "qwen2" || mt == "qwen2_moe" || mt == "qwen3")
      slides = slides && c.boolean("use_sliding_window", false) &&
               (typed ? typedSliding : layer >= c.integer("max_window_layers", 0));
    // dots1 (Qwen3's attention): layer_types, else the layers from
    // max_window_layers on, without a use_sliding_window switch
    // (Dots1Config).
    if (mt == "dots1")
      slides = slides && (typed ? typedSliding : layer >= c.integer("max_window_layers", 62));
    if (mt == "qwen3_moe") // every layer when use_sliding_window
      slides = slides && c.boolean("use_sliding_window", false);
    bool localLayer = false; // Gemma 3's sliding layers (their own rope)
    if (mt == "gpt_oss") { // alternating sliding / full layers
      const YAML::Node &types = c.root["layer_types"];
      if (types && types.IsSequence() && layer < int64_t(types.size()))
        slides = slides && types[size_t(layer)].as<std::string>() == "sliding_attention";
      else
        slides = slides && layer % 2 == 0;
    }
    if (gemma3) {
      const YAML::Node &types = c.root["layer_types"];
      if (types && types.IsSequence() && layer < int64_t(types.size()))
        localLayer = types[size_t(layer)].as<std::string>() == "sliding_attention";
      else
        localLayer = (layer + 1) % c.integer("sliding_window_pattern", 6) != 0;
      slides = slides && localLayer;
    }
    if (mt == "gemma2")
      slides = slides && (typed ? typedSliding : layer % 2 == 0);
    // Cohere 2 and EXAONE 4: sliding layers rotate, the global ones have
    // no position encoding at all (NoPE) -- when the model is hybrid (a
    // sliding_window); EXAONE 4 without one rotates on every layer.
    if (mt == "olmo3") // 3 of 4 layers slide (layer_types)
      slides = slides && hybridSliding(c, layer, nLayers);
    if (mt == "ministral") { // layer_types' sliding layers, else every layer
      const YAML::Node &types = c.root["layer_types"];
      if (types && types.IsSequence())
        slides = slides && hybridSliding(c, layer, nLayers);
    }
    bool nope = false;
    if (mt == "cohere2" || mt == "exaone4") {
      slides = slides && hybridSliding(c, layer, nLayers);
      nope = window > 0 && !slides;
    }
    // SmolLM3: no_rope_layers[layer] == 0 (by default every 4th layer) has
    // no position encoding; with use_sliding_window those NoPE layers (or
    // layer_types' sliding ones) slide.
    if (mt == "smollm3") {
      nope = !smolRopeLayer(c, layer);
      const YAML::Node &types = c.root["layer_types"];
      const bool slidingType = types && types.IsSequence() && layer < int64_t(types.size())
                                   ? types[size_t(layer)].as<std::string>() == "sliding_attention"
                                   : nope;
      slides = slides && c.boolean("use_sliding_window", false) && slidingType;
    }
    // Llama 4: no_rope_layers[layer] == 0 (by default every 4th layer) is
    // NoPE with full causal attention and the queries' temperature tuning;
    // the RoPE layers attend within chunks of attention_chunk_size
    // (layer_types, when given, says which layers are chunked) and
    // L2-normalise q and k after RoPE (use_qk_norm).
    bool chunked = false;
    if (mt == "llama4_text") {
      nope = !smolRopeLayer(c, layer);
      const YAML::Node &types = c.root["layer_types"];
      chunked = types && types.IsSequence() && layer < int64_t(types.size())
                    ? types[size_t(layer)].as<std::string>() == "chunked_attention"
                    : !nope;
      const YAML::Node &chunk = c.root["attention_chunk_size"];
      if (chunk && chunk.IsNull())
        chunked = false;
      slides = false;
    }
    for (const char *global : {"gemma", "phi", "llama", "olmo", "olmo2", "granite", "stablelm",
                               "nemotron", "olmoe", "cohere", "helium", "glm", "glm4_moe",
                               "ernie4_5", "ernie4_5_moe", "seed_oss", "apertus", "jais2",
                               "falcon_h1", "glm4v_text"})
      if (mt == global)
        slides = false;
    // EmbeddingGemma (Gemma 3 with use_bidirectional_attention): no causal
    // mask, and its sliding layers see |q - kv| < sliding_window // 2 + 1
    // (Gemma3TextConfig halves the window as it reads the config).
    const bool bidirectional = c.boolean("use_bidirectional_attention", false);
    if (bidirectional && !gemma3)
      c.bad("use_bidirectional_attention",
            fmt::format("true is known for Gemma 3 (EmbeddingGemma: gemma3_text), not for "
                        "model_type '{}': attnc cannot tell which keys its queries see",
                        mt));
    if (chunked)
      y += fmt::format("mask: chunked\nchunk: {}\n", c.integer("attention_chunk_size"));
    else if (slides && bidirectional) {
      y += fmt::format("mask: bidirectional_window\nwindow: {}\n", window / 2 + 1);
      out.notes.push_back(fmt::format(
          "note: {}: use_bidirectional_attention: layer {} sees keys on both sides within "
          "sliding_window // 2 + 1 = {} positions (|q - kv| < {}), as Hugging Face's "
          "Gemma3TextConfig reads sliding_window {}",
          c.file, layer, window / 2 + 1, window / 2 + 1, window));
    } else if (slides)
      y += fmt::format("mask: sliding_window\nwindow: {}\n", window);
    else if (bidirectional)
      y += "mask: none\n";
    else
      y += "mask: causal\n";
    if (mt == "llama4_text") {
      if (!nope && c.boolean("use_qk_norm", true)) {
        // Llama4TextL2Norm (no weight) after RoPE: the rotation keeps each
        // head's sum of squares, so attnc's QK-norm before it is the same,
        // unless the rotation also scales (an attention factor).
        const YAML::Node &rs = c.root["rope_scaling"];
        const std::string type = rs && rs.IsMap() ? scalingType(c, rs, "rope_scaling") : "";
        if (type == "yarn" || type == "longrope")
          c.bad("rope_scaling", fmt::format("'{}' scales cos and sin, and Llama 4's L2 QK-norm "
                                            "comes after RoPE: attnc normalises before it, "
                                            "which is the same only without that factor",
                                            type));
        y += fmt::format("qk_norm:\n  width: head\n  weight: none\n  eps: {}\n",
                         num(c.numberNoted("rms_norm_eps", 1e-5)));
      }
      // attn_temperature_tuning: a bool (an int in the first release).
      const YAML::Node &tt = c.root["attn_temperature_tuning"];
      bool tuning = true;
      if (tt && !tt.IsNull()) {
        int64_t asInt = 0;
        bool asBool = true;
        if (YAML::convert<bool>::decode(tt, asBool))
          tuning = asBool;
        else if (YAML::convert<int64_t>::decode(tt, asInt))
          tuning = asInt != 0;
      }
      if (nope && tuning)
        y += fmt::format("temperature_tuning:\n  floor_scale: {}\n  attn_scale: {}\n",
                         c.integer("floor_scale", 8192), num(c.number("attn_scale", 0.1)));
    }
    if (mt == "gemma2" || gemma3) {
      y += fmt::format("scale: {}\n",
                       num(1.0 / std::sqrt(c.number("query_pre_attn_scalar", double(dh)))));
      // Gemma 3 keeps the key but never passes it to its attention
      // function: only Gemma 2 caps the scores.
      if (c.has("attn_logit_softcapping") && !gemma3)
        y += fmt::format("softcap: {}\n", num(c.number("attn_logit_softcapping", 50)));
      else if (c.has("attn_logit_softcapping"))
        out.notes.push_back(fmt::format(
            "note: {}: attn_logit_softcapping {} not applied: Hugging Face's Gemma 3 "
            "attention does not cap its scores (only Gemma 2's does)",
            c.file, num(c.number("attn_logit_softcapping", 50))));
    }
    // Granite scales the scores by attention_multiplier, not 1/sqrt(dh).
    if (mt == "granite")
      y += fmt::format("scale: {}\n", num(c.number("attention_multiplier", 1.0)));
    // Falcon-H1 multiplies k by key_multiplier before RoPE (a rotation:
    // the scores' factor); its decoder layer multiplies the attention's
    // input by attention_in_multiplier and its output by
    // attention_out_multiplier, outside the module (a note).
    if (mt == "falcon_h1") {
      const double km = c.number("key_multiplier", 1.0);
      y += fmt::format("scale: {}\n", num(km / std::sqrt(double(dh))));
      out.notes.push_back(fmt::format(
          "note: {}: Falcon-H1: the scores are scaled by key_multiplier {} / sqrt(head_dim); "
          "the decoder layer gives self_attn hidden_states * attention_in_multiplier ({}) and "
          "multiplies its output by attention_out_multiplier ({}): the kernel's x and y are "
          "self_attn's", c.file, num(km), num(c.number("attention_in_multiplier", 1.0)),
          num(c.number("attention_out_multiplier", 1.0))));
    }
    // QK-norm: Qwen3, EXAONE 4 and Gemma 3 per head (Gemma's (1 + w)), OLMo 2 over
    // the whole projection; eps is rms_norm_eps.
    if (mt == "gpt_oss")
      y += "sinks: true\n";
    // OLMo (1): clip_qkv clamps the projections (bias included); OLMoE
    // after its QK-norm (attnc's order whenever both are there).
    if ((mt == "olmo" || mt == "olmoe") && c.has("clip_qkv"))
      y += fmt::format("clip_qkv: {}\n", num(c.number("clip_qkv", 0)));
    // LayerNorm QK-norms, per head, eps layer_norm_eps: Phi's
    // qk_layernorm (one LayerNorm(head_dim) with a bias, every head),
    // StableLM's qk_layernorm (one LayerNorm per head, no bias) and
    // Cohere's use_qk_norm (a [heads, head_dim] weight, no bias).
    if ((mt == "phi" || mt == "stablelm") && c.boolean("qk_layernorm", false))
      y += fmt::format("qk_norm:\n  width: head\n  type: layer\n  {}\n  eps: {}\n",
                       mt == "phi" ? "bias: true" : "weight: per_head",
                       num(c.numberNoted("layer_norm_eps", 1e-5)));
    if (mt == "cohere" && c.boolean("use_qk_norm", false))
      y += fmt::format("qk_norm:\n  width: head\n  type: layer\n  weight: per_head\n"
                       "  eps: {}\n",
                       num(c.numberNoted("layer_norm_eps", 1e-5)));
    // GLM-4.5 with use_qk_norm and Apertus per head, as Qwen3.
    if (mt == "qwen3" || mt == "qwen3_moe" || mt == "olmo2" || mt == "olmo3" ||
        mt == "olmoe" || gemma3 || mt == "exaone4" || mt == "apertus" || mt == "dots1" ||
        (mt == "glm4_moe" && c.boolean("use_qk_norm", false)))
      y += fmt::format("qk_norm:\n  width: {}\n  eps: {}\n  weight_offset: {}\n",
                       mt == "olmo2" || mt == "olmo3" || mt == "olmoe" ? "projection" : "head",
                       // (the OLMo and EXAONE configs' default eps is 1e-5)
                       num(c.numberNoted("rms_norm_eps", mt == "exaone4" || mt == "olmo2" ||
                                                            mt == "olmo3" || mt == "olmoe" ||
                                                            mt == "glm4_moe" || mt == "apertus"
                                                        ? 1e-5
                                                        : 1e-6)),
                       gemma3 ? 1 : 0);
    // Partial rotary: StableLM 0.25, Nemotron and GLM 0.5 by default.
    const double partial = c.number(
        "partial_rotary_factor",
        mt == "stablelm"                                         ? 0.25
        : mt == "nemotron" || mt == "glm" || mt == "glm4_moe" ? 0.5
                                                                 : 1.0);
    // Cohere, Helium, GLM and ERNIE 4.5 rotate interleaved pairs
    // (repeat_interleave); GLM-4.5 (glm4_moe) half-split, as GPT-NeoX.
    const char *style = mt == "cohere" || mt == "cohere2" || mt == "helium" || mt == "glm" ||
                                mt == "llama4_text" || mt == "ernie4_5" || mt == "ernie4_5_moe" ||
                                mt == "glm4v_text"
                            ? "interleaved"
                            : "half_split";
    if (gemma3 && localLayer) // local layers: rope_local_base_freq, unscaled
      y += ropeYaml(c, dh, c.number("rope_local_base_freq", 10000.0), partial, style,
                    YAML::Node());
    else if (!nope) // (a NoPE layer's spec has no rope: key)
      y += ropeYaml(c, dh,
                    c.number("rope_theta", mt == "helium"        ? 100000.0
                                           : mt == "smollm3"     ? 2000000.0
                                           : mt == "llama4_text" ? 500000.0
                                                                 : 10000.0),
                    partial, style, c.root["rope_scaling"]);
    // Nemotron's rotary embedding ignored rope_scaling in the transformers
    // releases that hard-coded its rope_type "default"; later ones read it
    // from the config, as attnc does. Every published config has none.
    if (mt == "nemotron" && c.has("rope_scaling"))
      out.notes.push_back(fmt::format(
          "note: {}: Nemotron's rope_scaling applies (as current transformers reads it; "
          "releases whose NemotronRotaryEmbedding used the default rotation ignore it)",
          c.file));
  } else if (mt == "internlm2") {
    // InternLM2Attention (the checkpoints' remote code): one wqkv in
    // groups [kv_heads, G + 2, head_dim] (cut by the weights loader), wo,
    // biases on both with `bias` (InternLM2Config: true); half-split RoPE
    // over the whole head with rope_theta, rope_scaling {type: dynamic |
    // linear, factor}; causal, 1/sqrt(head_dim).
    expectAfter({"attention"});
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    const int64_t kv = c.integer("num_key_value_heads", h);
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nmask: causal\nweights: separate\n"
                     "bias: {}\n", d, h, kv,
                     c.boolean(c.has("bias") ? "bias" : "attention_bias", true) ? "true"
                                                                                : "false");
    const YAML::Node &rs = c.root["rope_scaling"];
    if (rs && rs.IsMap() && rs.size() > 0) {
      const std::string type = scalingType(c, rs, "rope_scaling");
      if (type != "dynamic" && type != "linear")
        c.bad("rope_scaling", fmt::format("type '{}': InternLM2's code takes dynamic or linear",
                                          type));
    }
    y += ropeYaml(c, d / h, c.number("rope_theta", 10000.0), 1.0, "half_split", rs);
  } else if (mt == "jamba") {
    // Attention on layers i % attn_layer_period == attn_layer_offset, Mamba
    // blocks on the others; no position encoding, no biases, GQA.
    expectAfter({"self_attn"});
    const int64_t period = c.integer("attn_layer_period", 8);
    const int64_t offset = c.integer("attn_layer_offset", 4);
    if (period <= 0 || offset < 0 || offset >= period)
      c.bad("attn_layer_offset", fmt::format("expected 0 <= attn_layer_offset < "
                                             "attn_layer_period ({}), found {}", period, offset));
    if (layer % period != offset) {
      // The first attention layers, those the model has (num_hidden_layers).
      const int64_t layers = c.integer("num_hidden_layers", 0);
      std::string which;
      int64_t l = offset;
      for (int shown = 0; shown < 3 && (layers <= 0 || l < layers); ++shown, l += period)
        which += (shown ? ", " : "") + std::to_string(l);
      if (layers <= 0 || l < layers)
        which += ", ...";
      throw ImportError{fmt::format(
          "attnc: error: --module {}: layer {} of this Jamba model is a Mamba (state-space) "
          "layer, which has no attention (attn_layer_period {}, attn_layer_offset {}: the "
          "attention layers are {})", path, layer, period, offset,
          which.empty() ? "none: it has " + std::to_string(layers) + " layers" : which)};
    }
    // (sliding_window: only the old flash-attention path of HF's Jamba
    // read it; its eager and SDPA attention, and today's modular one, are
    // plainly causal, and the published checkpoints have it null.)
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nhead_dim: {}\nweights: separate\n"
                     "bias: false\nmask: causal\n", d, h, c.integer("num_key_value_heads", 8),
                     d / h);
  } else if (mt == "phimoe") {
    // Phi-3.5-MoE: separate projections (all four biased with
    // attention_bias), half-split RoPE with longrope, whose attention
    // factor is the config's short_mscale (sequences up to
    // original_max_position_embeddings) or long_mscale (longer ones).
    expectAfter({"self_attn"});
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    const int64_t kv = c.integer("num_key_value_heads", 8), dh = d / h; // PhimoeConfig's 8
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nhead_dim: {}\nweights: separate\n"
                     "bias: {}\n", d, h, kv, dh,
                     c.boolean("attention_bias", false) ? "true" : "false");
    const int64_t window = c.has("sliding_window") ? c.integer("sliding_window") : 0;
    y += window > 0 ? fmt::format("mask: sliding_window\nwindow: {}\n", window)
                    : std::string("mask: causal\n");
    YAML::Node scaling = YAML::Clone(c.root["rope_scaling"]);
    if (scaling && scaling.IsMap() && (scaling["short_mscale"] || scaling["long_mscale"])) {
      auto mscale = [&](const char *k) {
        try {
          return scaling[k] && !scaling[k].IsNull() ? scaling[k].as<double>() : 1.0;
        } catch (const YAML::Exception &) {
          c.bad(std::string("rope_scaling.") + k, "expected a number");
        }
      };
      if (!scaling["short_mscale"] || !scaling["long_mscale"])
        c.bad("rope_scaling", "expected both short_mscale and long_mscale (PhimoeConfig "
                              "refuses one without the other)");
      const double s = mscale("short_mscale"), l = mscale("long_mscale");
      if (s != l)
        c.bad("rope_scaling", fmt::format("short_mscale {} and long_mscale {} differ: the "
                                          "rotation's factor would change with the sequence's "
                                          "length, and attnc's rotary embedding has one factor",
                                          num(s), num(l)));
      scaling["attention_factor"] = num(s);
    }
    y += ropeYaml(c, dh, c.number("rope_theta", 1000000.0), 1.0, "half_split", scaling);
  } else if (mt == "granitemoehybrid" || mt == "bamba" || mt == "lfm2") {
    // Hybrids whose other layers are state-space (Mamba 2) or short
    // convolution blocks: which layers attend, from the config.
    expectAfter({"self_attn"});
    std::string kind;
    auto kindFromList = [&](const char *key) {
      const YAML::Node &types = c.root[key];
      if (!types || !types.IsSequence() || types.size() == 0)
        return false;
      if (layer >= int64_t(types.size()))
        c.bad(key, fmt::format("has {} entries, none for layer {}", types.size(), layer));
      kind = types[size_t(layer)].as<std::string>();
      return true;
    };
    auto indexed = [&](const char *key, const char *yes, const char *no) {
      const YAML::Node &idx = c.root[key];
      kind = no;
      if (idx && idx.IsSequence())
        for (const YAML::Node &i : idx)
          if (i.as<int64_t>() == layer)
            kind = yes;
    };
    const char *attention = "attention";
    if (mt == "granitemoehybrid") { // layer_types (layers_block_type); none: all Mamba
      if (!kindFromList("layer_types") && !kindFromList("layers_block_type"))
        kind = "mamba";
    } else if (mt == "bamba") { // attn_layer_indices; none: all Mamba
      indexed("attn_layer_indices", "attention", "mamba");
    } else { // lfm2: layer_types, else full_attn_idxs, else every layer
      attention = "full_attention";
      if (!kindFromList("layer_types")) {
        if (c.has("full_attn_idxs"))
          indexed("full_attn_idxs", "full_attention", "conv");
        else
          kind = "full_attention";
      }
    }
    if (kind != attention)
      throw ImportError{fmt::format(
          "attnc: error: --module {}: layer {} of this {} model is a '{}' layer ({}), which "
          "has no attention", path, layer, mt, kind,
          mt == "granitemoehybrid" ? "layer_types"
          : mt == "bamba"          ? "attn_layer_indices"
                                   : "layer_types / full_attn_idxs")};
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    // (BambaConfig and Lfm2Config default num_key_value_heads to 8,
    // GraniteMoeHybridConfig to the query heads.)
    const YAML::Node &kvNode = c.root["num_key_value_heads"];
    const int64_t kv = kvNode && kvNode.IsNull() ? h // (null: the query heads)
                       : c.integer("num_key_value_heads", mt == "granitemoehybrid" ? h : 8);
    const int64_t dh = c.integer("head_dim", d / h);
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nhead_dim: {}\nweights: separate\n"
                     "mask: causal\n", d, h, kv, dh);
    if (mt == "granitemoehybrid") {
      // Scores scaled by attention_multiplier; RoPE only with
      // position_embedding_type rope (Granite 4.0-H: nope).
      y += fmt::format("bias: {}\nscale: {}\n",
                       c.boolean("attention_bias", false) ? "true" : "false",
                       num(c.number("attention_multiplier", 1.0)));
      if (c.str("position_embedding_type") == "rope")
        y += ropeYaml(c, dh, c.number("rope_theta", 10000.0), 1.0, "half_split",
                      c.root["rope_scaling"]);
    } else if (mt == "bamba") {
      // No biases, half-split RoPE on half of each head (both hard-coded
      // in BambaConfig).
      y += "bias: false\n";
      y += ropeYaml(c, dh, c.number("rope_theta", 10000.0), 0.5, "half_split",
                    c.root["rope_scaling"]);
    } else {
      // LFM2: per-head RMS norms q_layernorm / k_layernorm (eps norm_eps)
      // before RoPE over the whole head, out_proj as o, no biases.
      y += fmt::format("bias: false\nqk_norm:\n  width: head\n  eps: {}\n",
                       num(c.numberNoted("norm_eps", 1e-5)));
      // (Lfm2Config reads `theta` before `rope_theta`.)
      y += ropeYaml(c, dh, c.number("theta", c.number("rope_theta", 1000000.0)), 1.0,
                    "half_split", c.root["rope_scaling"]);
    }
  } else if (mt == "dbrx") {
    // DBRX: transformer.blocks.N.norm_attn_norm.attn, one Wqkv [q | k | v]
    // (cut by the weights loader), out_proj, no biases; attn_config holds
    // kv_n_heads, rope_theta and clip_qkv (the fused projection clamped
    // before RoPE).
    expectAfter({"norm_attn_norm.attn"});
    const int64_t d = c.integer("d_model"), h = c.integer("n_heads");
    const Config ac = c.child("attn_config");
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nhead_dim: {}\nweights: separate\n"
                     "bias: false\nmask: causal\n", d, h, ac.integer("kv_n_heads", 1), d / h);
    if (ac.has("clip_qkv"))
      y += fmt::format("clip_qkv: {}\n", num(ac.number("clip_qkv", 0)));
    y += ropeYaml(c, d / h, ac.number("rope_theta", 10000.0), 1.0, "half_split", YAML::Node());
    if (c.has("max_seq_len"))
      y += fmt::format("max_seq_len: {}\n", c.integer("max_seq_len"));
  } else if (mt == "recurrent_gemma") {
    // RecurrentGemma (Griffin): block_types cycled over the layers; an
    // attention layer's temporal_block is local MQA attention over
    // attention_window_size keys with half-split RoPE on the first
    // partial_rotary_factor of each head; o_proj always has a bias.
    expectAfter({"temporal_block"});
    std::vector<std::string> types;
    const YAML::Node &bt = c.root["block_types"];
    if (bt && bt.IsSequence() && bt.size() > 0) {
      for (const YAML::Node &t : bt)
        types.push_back(t.as<std::string>());
    } else {
      types = {"recurrent", "recurrent", "attention"};
    }
    const std::string kind = types[size_t(layer) % types.size()];
    if (kind != "attention")
      throw ImportError{fmt::format(
          "attnc: error: --module {}: layer {} of this RecurrentGemma model is a '{}' block "
          "(block_types), which has no attention", path, layer, kind)};
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    const int64_t dh = d / h;
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nhead_dim: {}\nweights: separate\n"
                     "bias: {}\n", d, h, c.integer("num_key_value_heads", h), dh,
                     c.boolean("attention_bias", false) ? "true" : "[o]");
    y += fmt::format("mask: sliding_window\nwindow: {}\n",
                     c.integer("attention_window_size", 2048));
    y += ropeYaml(c, dh, c.number("rope_theta", 10000.0),
                  c.number("partial_rotary_factor", 0.5), "half_split", YAML::Node());
  } else if (mt == "mllama_text_model") {
    // Llama 3.2 Vision's language model: Llama self-attention layers, and
    // on cross_attention_layers MllamaTextCrossAttention: K and V from the
    // vision states (x_kv), per-head RMS QK-norm with weights, no RoPE, no
    // mask (its tanh gate is outside the attention module).
    expectAfter({"self_attn", "cross_attn"});
    bool crossLayer = false;
    const YAML::Node &cl = c.root["cross_attention_layers"];
    if (cl && cl.IsSequence())
      for (const YAML::Node &i : cl)
        crossLayer = crossLayer || i.as<int64_t>() == layer;
    else // MllamaTextConfig's default
      for (int64_t i : {3, 8, 13, 18, 23, 28, 33, 38})
        crossLayer = crossLayer || i == layer;
    const bool cross = m.after == "cross_attn";
    if (cross != crossLayer)
      throw ImportError{fmt::format(
          "attnc: error: --module {}: layer {} is a {} layer (cross_attention_layers), whose "
          "attention module is {}", path, layer, crossLayer ? "cross-attention" : "self-attention",
          crossLayer ? "cross_attn" : "self_attn")};
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    const int64_t kv = c.integer("num_key_value_heads", 8), dh = d / h; // MllamaTextConfig's 8
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nhead_dim: {}\nweights: separate\n"
                     "bias: false\n", d, h, kv, dh);
    if (cross)
      y += fmt::format("mask: none\ncross_attention: true\nqk_norm:\n  width: head\n  eps: {}\n",
                       num(c.numberNoted("rms_norm_eps", 1e-5)));
    else
      y += "mask: causal\n" + ropeYaml(c, dh, c.number("rope_theta", 500000.0), 1.0,
                                        "half_split", c.root["rope_scaling"]);
  } else if (mt == "mllama_vision") {
    // MllamaVisionAttention: plain bidirectional MHA without biases.
    expectAfter({"self_attn"});
    const int64_t d = c.integer("hidden_size", 1280), h = c.integer("attention_heads", 16);
    y += fmt::format("d_model: {}\nheads: {}\nmask: none\nweights: separate\nbias: false\n",
                     d, h);
  } else if (clipLike(mt)) {
    // CLIPAttention / SiglipAttention: q_proj, k_proj, v_proj, out_proj,
    // all biased, 1/sqrt(head_dim); CLIP's text encoder is causal (with the
    // padding mask: --set mask=causal+padding), SigLIP's bidirectional, the
    // vision encoders bidirectional over the patches.
    if (mt == "clip" || mt == "siglip" || mt == "siglip2")
      throw ImportError{fmt::format(
          "{}: error: model_type '{}' is a text and a vision encoder: expected its "
          "text_config and vision_config, and a module under text_model. or vision_model.",
          c.file, mt)};
    expectAfter({"self_attn"});
    // The module of the encoder the config describes: a text model's under
    // text_model., a vision model's under vision_model.
    const bool text = mt.size() > 11 && mt.compare(mt.size() - 11, 11, "_text_model") == 0;
    if (!hasPathPart(m.before, text ? "text_model" : "vision_model"))
      throw ImportError{fmt::format(
          "attnc: error: --module {}: the config describes {}'s {} encoder, whose modules are "
          "under {} (e.g. {}.encoder.layers.{}.self_attn)", path, mt, text ? "text" : "vision",
          text ? "text_model." : "vision_model.", text ? "text_model" : "vision_model", layer)};
    y += fmt::format("d_model: {}\nheads: {}\nmask: {}\nweights: separate\nbias: true\n",
                     c.integer("hidden_size"), c.integer("num_attention_heads"),
                     mt == "clip_text_model" ? "causal" : "none");
  } else if (mt == "wav2vec2" || mt == "hubert" || mt == "data2vec-audio") {
    // Wav2Vec2Attention (HuBERT's and Data2VecAudio's are copies): q_proj,
    // k_proj, v_proj, out_proj, all biased, bidirectional over the frames
    // (a padding mask where the feature extractor gives one); the
    // convolutional positions are added before the first layer.
    expectAfter({"attention"});
    y += fmt::format("d_model: {}\nheads: {}\nmask: none\nweights: separate\nbias: true\n",
                     c.integer("hidden_size"), c.integer("num_attention_heads"));
  } else if (mt == "roformer" || mt == "esm") {
    // BERT's names (attention.self.query, ..., attention.output.dense),
    // all biased. RoFormer rotates q and k by interleaved pairs (its
    // sinusoid table, theta 10000, the whole head); ESM with
    // position_embedding_type rotary by halves (rotate_half, theta 10000),
    // its q scaled before the rotation (the same product). Causal with
    // is_decoder.
    expectAfter({"attention"});
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    y += fmt::format("d_model: {}\nheads: {}\nmask: {}\nweights: separate\nbias: true\n", d,
                     h, c.boolean("is_decoder", false) ? "causal" : "none");
    if (mt == "roformer") {
      if (c.boolean("rotary_value", false))
        c.bad("rotary_value", "true: RoFormer rotates the values too, which attnc does not "
                              "compute");
      y += ropeYaml(c, d / h, 10000.0, 1.0, "interleaved", YAML::Node());
    } else {
      const std::string pe = c.str("position_embedding_type");
      if (pe == "rotary")
        y += ropeYaml(c, d / h, 10000.0, 1.0, "half_split", YAML::Node());
      else if (pe != "" && pe != "absolute")
        c.bad("position_embedding_type",
              fmt::format("'{}': ESM's relative keys are not computed by attnc (rotary and "
                          "absolute are)", pe));
      out.notes.push_back(fmt::format(
          "note: {}: EsmAttention normalizes its input first: the kernel's x is "
          "{}.LayerNorm(hidden_states), its y is output.dense's (add hidden_states, the "
          "residual, yourself)", c.file, path));
    }
  } else if (mt == "mpnet") {
    // MPNetAttention: attn.{q,k,v,o}, all biased, bidirectional,
    // 1/sqrt(head_dim), plus T5's bidirectional bucketed bias from one
    // table the encoder owns (encoder.relative_attention_bias, [buckets,
    // heads]), added after the scale. MPNetEncoder.compute_position_bias
    // uses 32 buckets and a distance of 128 whatever the config says
    // (relative_attention_num_buckets sizes the table only).
    expectAfter({"attention", "attention.attn"});
    const int64_t buckets = c.integer("relative_attention_num_buckets", 32);
    if (buckets != 32)
      c.bad("relative_attention_num_buckets",
            fmt::format("{}: MPNet's encoder reads only the table's first 32 rows "
                        "(compute_position_bias buckets into 32 whatever its size), and "
                        "attnc's weights loader takes a table of exactly 32 rows", buckets));
    y += fmt::format("d_model: {}\nheads: {}\nmask: none\nweights: separate\nbias: true\n"
                     "t5_bias:\n  num_buckets: 32\n  max_distance: 128\n  bidirectional: true\n",
                     c.integer("hidden_size"), c.integer("num_attention_heads"));
  } else if (mt == "albert") {
    // ALBERT shares its layers: layer i runs albert_layer_groups.G's
    // albert_layers.I (num_hidden_groups groups of inner_group_num); its
    // AlbertAttention has query, key, value and dense, all biased,
    // bidirectional (the LayerNorm of dense + x follows).
    const int64_t groups = c.integer("num_hidden_groups", 1),
                  inner = c.integer("inner_group_num", 1);
    const ModulePath inside = parseModule(m.after);
    if (m.before.size() < 19 ||
        m.before.compare(m.before.size() - 19, 19, "albert_layer_groups") != 0 ||
        inside.before != "albert_layers" || inside.after != "attention" ||
        inside.layerText.empty() || (inside.layerText.size() > 1 && inside.layerText[0] == '0'))
      throw ImportError{fmt::format(
          "attnc: error: --module {}: expected an ALBERT attention module, "
          "albert.encoder.albert_layer_groups.G.albert_layers.I.attention", path)};
    if (layer >= groups)
      c.bad("num_hidden_groups", fmt::format("{} groups: --module {} names group {}", groups,
                                             path, layer));
    if (inside.layer >= inner)
      c.bad("inner_group_num", fmt::format("{} layers per group: --module {} names layer {}",
                                           inner, path, inside.layer));
    const std::string pe = c.str("position_embedding_type");
    if (pe != "" && pe != "absolute")
      c.bad("position_embedding_type",
            fmt::format("'{}': ALBERT's relative keys (added after the scale) are not "
                        "computed by attnc", pe));
    y += fmt::format("d_model: {}\nheads: {}\nmask: none\nweights: separate\nbias: true\n",
                     c.integer("hidden_size"), c.integer("num_attention_heads"));
  } else if (mt == "t5" || mt == "mt5") {
    // encoder.block.N.layer.0.SelfAttention (bidirectional buckets),
    // decoder.block.N.layer.0.SelfAttention (causal buckets),
    // decoder.block.N.layer.1.EncDecAttention (cross, no table). No scale,
    // no biases; head_dim is d_kv.
    const bool decoder = m.before.find("decoder") != std::string::npos;
    const bool cross = m.after == "layer.1.EncDecAttention";
    if (cross && !decoder)
      throw ImportError{fmt::format("attnc: error: --module {}: only decoder blocks have "
                                    "EncDecAttention", path)};
    if (decoder)
      expectAfter({"layer.0.SelfAttention", "layer.1.EncDecAttention"});
    else // (an encoder block's one attention)
      expectAfter({"layer.0.SelfAttention"});
    y += fmt::format("d_model: {}\nheads: {}\nhead_dim: {}\nweights: separate\nbias: false\n"
                     "scale: 1\n", c.integer("d_model"), c.integer("num_heads"),
                     c.integer("d_kv"));
    y += decoder && !cross ? "mask: causal\n" : "mask: none\n";
    if (cross)
      y += "cross_attention: true\n";
    else
      y += fmt::format("t5_bias:\n  num_buckets: {}\n  max_distance: {}\n  bidirectional: {}\n",
                       c.integer("relative_attention_num_buckets", 32),
                       c.integer("relative_attention_max_distance", 128),
                       decoder ? "false" : "true");
  } else if (mt == "phi3") {
    // Fused qkv_proj [q | k | v] (cut by the weights loader), no biases,
    // longrope, a sliding window on every layer.
    expectAfter({"self_attn"});
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    const int64_t kv = c.integer("num_key_value_heads", h), dh = c.integer("head_dim", d / h);
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nhead_dim: {}\nweights: separate\n"
                     "bias: false\n", d, h, kv, dh);
    int64_t window = c.has("sliding_window") ? c.integer("sliding_window") : 0;
    y += window > 0 ? fmt::format("mask: sliding_window\nwindow: {}\n", window)
                    : std::string("mask: causal\n");
    // Phi3Config rewrites the legacy rope_scaling types "su" and "yarn" to
    // "longrope" (short and long factor lists, never YaRN's ramp).
    YAML::Node scaling = c.root["rope_scaling"];
    if (scaling && scaling.IsMap() && scaling["type"] && scaling["type"].IsScalar() &&
        (scaling["type"].as<std::string>() == "su" ||
         scaling["type"].as<std::string>() == "yarn")) {
      const std::string was = scaling["type"].as<std::string>();
      scaling = YAML::Clone(scaling);
      scaling["type"] = "longrope";
      if (scaling["rope_type"])
        scaling["rope_type"] = "longrope";
      if (was == "yarn")
        out.notes.push_back(fmt::format(
            "note: {}: rope_scaling type yarn is Phi-3's legacy name of longrope (as "
            "Phi3Config reads it): the short and long factors apply",
            c.file));
    }
    y += ropeYaml(c, dh, c.number("rope_theta", 10000.0), c.number("partial_rotary_factor", 1.0),
                  "half_split", scaling);
  } else if (mt == "gpt_neox") {
    // Fused per-head query_key_value, biases, partial rotary (rotary_pct).
    expectAfter({"attention"});
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    y += fmt::format("d_model: {}\nheads: {}\nmask: causal\nweights: separate\nbias: {}\n", d, h,
                     c.boolean("attention_bias", true) ? "true" : "false");
    double theta = c.number("rotary_emb_base", c.number("rope_theta", 10000.0));
    double pct = c.number("rotary_pct", c.number("partial_rotary_factor", 0.25));
    y += ropeYaml(c, d / h, theta, pct, "half_split", c.root["rope_scaling"]);
  } else if (mt == "persimmon") {
    // Fused per-head query_key_value [H, 3, dh] with biases, `dense` as o,
    // partial half-split RoPE (partial_rotary_factor 0.5, rope_theta
    // 25000), and with qk_layernorm (on by default) one LayerNorm(head_dim)
    // with weight and bias on every head of q and k.
    expectAfter({"self_attn"});
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    y += fmt::format("d_model: {}\nheads: {}\nmask: causal\nweights: separate\nbias: true\n", d,
                     h);
    if (c.boolean("qk_layernorm", true))
      y += fmt::format("qk_norm:\n  width: head\n  type: layer\n  bias: true\n  eps: {}\n",
                       num(c.numberNoted("layer_norm_eps", 1e-5)));
    y += ropeYaml(c, d / h, c.number("rope_theta", 25000.0),
                  c.number("partial_rotary_factor", 0.5), "half_split", c.root["rope_scaling"]);
  } else if (mt == "bloom") {
    expectAfter({"self_attention"});
    const int64_t d = c.integer("hidden_size", c.integer("n_embed", 0));
    y += fmt::format("d_model: {}\nheads: {}\nmask: causal\nweights: separate\nbias: true\n"
                     "alibi: true\n", d, c.integer("n_head"));
  } else if (mt == "falcon") {
    expectAfter({"self_attention"});
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_attention_heads");
    const bool newArch = c.boolean("new_decoder_architecture", false);
    const int64_t kv = newArch ? c.integer("num_kv_heads", h)
                       : c.boolean("multi_query", true) ? 1 : h;
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nmask: causal\nweights: separate\n"
                     "bias: {}\n", d, h, kv, c.boolean("bias", false) ? "true" : "false");
    if (c.boolean("alibi", false))
      y += "alibi:\n  before_scale: true\n";
    else
      y += ropeYaml(c, d / h, c.number("rope_theta", 10000.0), 1.0, "half_split",
                    c.root["rope_scaling"]);
  } else if (mt == "mpt") {
    expectAfter({"attn"});
    const int64_t d = c.integer("d_model"), h = c.integer("n_heads");
    const Config ac = c.child("attn_config");
    // attn_type (MosaicML's llm-foundry): multi-head (the default, and all
    // transformers' MptAttention implements), multi-query or grouped-query
    // with kv_n_heads; Wqkv is [q | k | v] either way.
    int64_t kv = h;
    const std::string at = ac.has("attn_type") ? ac.str("attn_type") : "multihead_attention";
    if (at == "multiquery_attention" || at == "grouped_query_attention") {
      kv = at == "multiquery_attention" ? 1 : ac.integer("kv_n_heads", 1);
      if (kv < 1 || h % kv != 0)
        throw ImportError{fmt::format("{}: error: attn_config.kv_n_heads {}: expected a "
                                      "divisor of n_heads {}", c.file, kv, h)};
      out.notes.push_back(fmt::format(
          "note: {}: attn_config.attn_type {}: {} kv head{}, as MosaicML's MPT code computes "
          "it (transformers' MptAttention is multi-head only and cannot load this Wqkv)",
          c.file, at, kv, kv == 1 ? "" : "s"));
    } else if (at != "multihead_attention") {
      throw ImportError{fmt::format("{}: error: attn_config.attn_type '{}': expected "
                                    "multihead_attention, multiquery_attention or "
                                    "grouped_query_attention", c.file, at)};
    }
    // no_bias (MptConfig's default true, every published config's value):
    // false gives Wqkv and out_proj biases in MosaicML's code, which
    // transformers' MptAttention (bias=False) drops on loading.
    const bool biased = c.has("no_bias") && !c.boolean("no_bias", true);
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nhead_dim: {}\nmask: causal\n"
                     "weights: separate\nbias: {}\n", d, h, kv, d / h, biased ? "true" : "false");
    if (biased)
      out.notes.push_back(fmt::format(
          "{}{}: note: no_bias is false: the kernel adds Wqkv's and out_proj's biases, as "
          "MosaicML's MPT code does; transformers' MptAttention has none and drops them",
          c.file, locationOf(c.root["no_bias"])));
    // What MosaicML's code applies and transformers' MptModel ignores: the
    // checkpoint's function is MosaicML's (transformers' drops trained
    // tensors or positions), which the import does not derive: refused,
    // not compiled without it.
    const std::pair<const char *, const char *> hfIgnores[] = {
        {"qk_ln", "a LayerNorm of q and k (the checkpoint's q_ln and k_ln)"},
        {"rope", "a rotary embedding"},
        {"prefix_lm", "bidirectional attention over a prefix"}};
    for (const auto &[k, what] : hfIgnores)
      if (ac.boolean(k, false))
        throw ImportError{fmt::format(
            "{}{}: error: attn_config.{} is true: MosaicML's MPT code applies {}, which "
            "transformers' MptModel ignores; the import does not derive it (write the spec "
            "by hand: docs/spec.md)", c.file, locationOf(ac.root[k]), k, what)};
    if (ac.has("clip_qkv"))
      y += fmt::format("clip_qkv: {}\n", num(ac.number("clip_qkv", 0)));
    if (ac.has("softmax_scale"))
      y += fmt::format("scale: {}\n", num(ac.number("softmax_scale", 0)));
    if (ac.boolean("alibi", true)) {
      const double bm = ac.number("alibi_bias_max", 8.0);
      const std::string biasMax = num(bm);
      y += fmt::format("alibi:\n  bias_max: {}\n", biasMax);
      if (bm != 8.0)
        out.notes.push_back(fmt::format(
            "note: {}: attn_config.alibi_bias_max {}: the kernel's slopes use it, as "
            "MosaicML's own MPT code does; Hugging Face transformers' MptModel builds its "
            "ALiBi with 8 whatever the config says (every published MPT config has 8)",
            c.file, biasMax));
    } else {
      out.notes.push_back(fmt::format(
          "note: {}: attn_config.alibi is false: no ALiBi, as MosaicML's MPT code (its "
          "positions are the learned wpe embedding, outside the attention); transformers' "
          "MptModel adds ALiBi whatever the config says", c.file));
    }
  } else if (mt == "gpt_bigcode") {
    expectAfter({"attn"});
    const int64_t d = c.integer("n_embd"), h = c.integer("n_head");
    y += fmt::format("d_model: {}\nheads: {}\nkv_heads: {}\nmask: causal\nweights: separate\n"
                     "bias: true\n", d, h, c.boolean("multi_query", true) ? 1 : h);
    // GPTBigCodeAttention scales by 1/sqrt(head_dim) only with
    // scale_attn_weights (true by default).
    if (!c.boolean("scale_attn_weights", true))
      y += "scale: 1\n";
  } else if (mt == "gptj") {
    expectAfter({"attn"});
    const int64_t d = c.integer("n_embd"), h = c.integer("n_head");
    y += fmt::format("d_model: {}\nheads: {}\nmask: causal\nweights: separate\nbias: false\n",
                     d, h);
    const int64_t dh = d / h;
    const int64_t rot = c.integer("rotary_dim", dh);
    y += ropeYaml(c, dh, 10000.0, double(rot) / double(dh), "interleaved", YAML::Node());
  } else if (mt == "gpt2") {
    expectAfter({"attn"});
    const int64_t d = c.integer("n_embd"), h = c.integer("n_head");
    y += fmt::format("d_model: {}\nheads: {}\nmask: causal\nweights: gpt2_conv1d\nbias: true\n",
                     d, h);
    double scale = c.boolean("scale_attn_weights", true) ? 1.0 / std::sqrt(double(d / h)) : 1.0;
    if (c.boolean("scale_attn_by_inverse_layer_idx", false))
      scale /= double(layer + 1);
    y += fmt::format("scale: {}\n", num(scale));
    y += fmt::format("max_seq_len: {}\n", c.integer("n_positions", 1024));
  } else if (mt == "gpt_neo") {
    // transformer.h.N.attn.attention: no scale, no q/k/v biases (out_proj
    // has one); attention_types expands to one "global" or "local" per
    // layer, a local layer sees its window_size last keys (itself included).
    expectAfter({"attn.attention"});
    const int64_t d = c.integer("hidden_size"), h = c.integer("num_heads");
    y += fmt::format("d_model: {}\nheads: {}\nweights: separate\nbias: [o]\nscale: 1\n", d, h);
    std::vector<std::string> kinds;
    const YAML::Node &types = c.root["attention_types"];
    if (types && types.IsSequence()) {
      for (const YAML::Node &item : types) {
        if (!item.IsSequence() || item.size() != 2 || !item[0].IsSequence())
          c.bad("attention_types", "expected [[kinds, repeats], ...]");
        for (int64_t r = 0; r < item[1].as<int64_t>(); ++r)
          for (const YAML::Node &k : item[0])
            kinds.push_back(k.as<std::string>());
      }
    } else {
      for (int64_t l = 0; l < std::max<int64_t>(nLayers, layer + 1); ++l)
        kinds.push_back(l % 2 ? "local" : "global");
    }
    if (layer >= int64_t(kinds.size()))
      c.bad("attention_types", fmt::format("names {} layers, the module is layer {}",
                                           kinds.size(), layer));
    if (kinds[size_t(layer)] == "local")
      y += fmt::format("mask: sliding_window\nwindow: {}\n", c.integer("window_size", 256));
    else if (kinds[size_t(layer)] == "global")
      y += "mask: causal\n";
    else
      c.bad("attention_types", fmt::format("layer {} is '{}', expected global or local",
                                           layer, kinds[size_t(layer)]));
  } else if (mt == "bert" || mt == "roberta") {
    expectAfter({"attention"});
    // is_decoder (BertLMHeadModel, RobertaForCausalLM): causal self-attention
    // (HF's get_extended_attention_mask, BertSelfAttention.is_causal).
    y += fmt::format("d_model: {}\nheads: {}\nmask: {}\nweights: separate\nbias: true\n",
                     c.integer("hidden_size"), c.integer("num_attention_heads"),
                     c.boolean("is_decoder", false) ? "causal" : "none");
    // relative_key(_query): distance_embedding [2P - 1, head_dim] (HF
    // BertSelfAttention; P = max_position_embeddings, default 512).
    const std::string pe = c.str("position_embedding_type");
    if (pe == "relative_key" || pe == "relative_key_query")
      y += fmt::format("relative_key:\n  max_position_embeddings: {}\n  key_query: {}\n",
                       c.integer("max_position_embeddings", 512),
                       pe == "relative_key_query" ? "true" : "false");
    else if (pe != "" && pe != "absolute")
      c.bad("position_embedding_type",
            fmt::format("'{}' is not one of absolute, relative_key, relative_key_query", pe));
  } else if (mt == "distilbert") {
    // MultiHeadSelfAttention: q_lin, k_lin, v_lin, out_lin, all with a
    // bias; the output is out_lin's (sa_layer_norm and the residual
    // follow it in TransformerBlock).
    expectAfter({"attention"});
    y += fmt::format("d_model: {}\nheads: {}\nmask: none\nweights: separate\nbias: true\n",
                     c.integer("dim"), c.integer("n_heads"));
  } else if (mt == "vit" || mt == "deit" || mt == "dinov2") {
    // ViTAttention: attention.{query,key,value} (bias by qkv_bias) and
    // output.dense (always a bias); bidirectional over the patches.
    expectAfter({"attention"});
    y += fmt::format("d_model: {}\nheads: {}\nmask: none\nweights: separate\nbias: {}\n",
                     c.integer("hidden_size"), c.integer("num_attention_heads"),
                     c.boolean("qkv_bias", true) ? "true" : "[o]");
  } else if (mt == "opt") {
    expectAfter({"self_attn"});
    y += fmt::format("d_model: {}\nheads: {}\nmask: causal\nweights: separate\nbias: {}\n",
                     c.integer("hidden_size"), c.integer("num_attention_heads"),
                     c.boolean("enable_bias", true) ? "true" : "false");
  } else { // bart, mbart, whisper: encoder self, decoder self and cross
    expectAfter({"self_attn", "encoder_attn"});
    const bool decoder = m.before.find("decoder") != std::string::npos;
    const bool cross = m.after == "encoder_attn";
    if (cross && !decoder)
      throw ImportError{fmt::format("attnc: error: --module {}: only decoder layers "
                                    "have encoder_attn", path)};
    const int64_t h = c.integer(decoder ? "decoder_attention_heads" : "encoder_attention_heads");
    y += fmt::format("d_model: {}\nheads: {}\nweights: separate\n", c.integer("d_model"), h);
    y += mt == "whisper" ? "bias: [q, v, o]\n" : "bias: true\n";
    y += decoder && !cross ? "mask: causal\n" : "mask: none\n";
    if (cross)
      y += "cross_attention: true\n";
  }
  // The checkpoint's storage type (torch_dtype; `dtype` in newer
  // transformers): bf16/f16 weights are packed as such, exactly (the
  // tensors already hold those values) and in half the bytes. The
  // activations stay float32 unless --set dtype=... asks otherwise.
  std::string stored = c.str("torch_dtype");
  if (stored.empty())
    stored = c.str("dtype");
  if (stored == "bfloat16")
    y += "weight_dtype: bf16\n";
  else if (stored == "float16")
    y += "weight_dtype: f16\n";
  else if (!stored.empty() && stored != "float32" && stored != "auto")
    // (float64 weights are packed as float32; an integer type is a
    // quantized checkpoint, whose tensors the loader names if it cannot
    // read them)
    out.notes.push_back(fmt::format(
        "note: {}: {} '{}': the packed weights are float32 (weight_dtype is f32, bf16 or "
        "f16)", c.file, c.has("torch_dtype") ? "torch_dtype" : "dtype", stored));
  out.yaml = applySets(y, sets, out.notes);
  out.weightsPrefix = path + ".";
  return out;
}

} // namespace

HfSpec specFromHf(const std::string &dir, const std::string &module, int64_t layer,
                  const std::vector<std::string> &sets, const HfReaders &readers) {
  try {
    return import(dir, module, layer, sets, readers);
  } catch (const ImportError &e) {
    HfSpec r;
    r.error = e.message;
    return r;
  } catch (const std::exception &e) {
    HfSpec r;
    r.error = dir + "/config.json: error: " + e.what();
    return r;
  }
}

} // namespace attnc
