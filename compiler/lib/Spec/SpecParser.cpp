//===- SpecParser.cpp - YAML spec -> validated attnc::Spec -----*- C++ -*-===//
//
// Parses a spec (docs/spec.md) with yaml-cpp's event parser into a
// small tree of our own, then validates it into an attnc::Spec. Building the
// tree from events (instead of YAML::Load) lets us reject aliases before they
// are expanded, bound the nesting depth, see duplicate keys (YAML::Node keeps
// only one) and keep every position.
//
// Error message format (one message, never more):
//
//   FILE:LINE:COL: error: KEY: what was expected, what was found
//
// LINE and COL are 1-based (yaml-cpp's Mark plus one); COL counts bytes.
// Errors about a value point at the value (at its key when the value is
// missing), errors about a key point at the key, a missing required key
// points at the start of the top-level mapping. Two families have a
// different head instead of "KEY:":
//   - key errors:      "unknown key 'K': did you mean 'heads'?"
//                      "unknown key 'K': expected one of name, d_model, ..."
//                      "duplicate key 'K': expected each key once, already
//                       given at L:C"
//                      "expected a key name, found a sequence"
//   - document errors: no KEY part, e.g. "malformed YAML: <yaml-cpp's text>",
//                      "expected a mapping of spec keys, found a sequence",
//                      "expected UTF-8 text, found byte 0xff ...".
// A file that cannot be read: "FILE: error: cannot read file: <strerror>".
//
// This file is built with exceptions; no exception leaves the public API.
//
//===----------------------------------------------------------------------===//

#include "attnc/Spec/Spec.h"
#include "attnc/runtime/Files.h"
#include "attnc/runtime/Limits.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <sys/stat.h>

namespace attnc {
namespace {

/// Largest accepted spec text.
constexpr size_t kMaxSpecBytes = size_t(1) << 20;
/// Deepest accepted collection nesting (the top-level mapping is level 1).
constexpr size_t kMaxDepth = 4;
/// Largest accepted value of each size key (docs/limits.md). Real models
/// stay far below: d_model 18432 (the largest published dense models),
/// 128 heads, head_dim 256, contexts up to about 10^6 tokens. The bounds keep
/// every size product the compiler, the runtime and the generated code form
/// inside int64 and compile time independent of sizes that are loop bounds.
struct SizeLimit {
  const char *key;
  int64_t max;
};
/// From the one table the loader uses too (attnc/runtime/Limits.h).
constexpr SizeLimit kSizeLimits[] = {
    {"d_model", limits::kMaxDModel},         {"heads", limits::kMaxHeads},
    {"kv_heads", limits::kMaxKvHeads},       {"head_dim", limits::kMaxHeadDim},
    {"max_seq_len", limits::kMaxSeqLen},     {"window", limits::kMaxWindow},
    {"chunk", limits::kMaxWindow},
    {"temperature_tuning.floor_scale", limits::kMaxSeqLen},
    {"rope.rotary_dim", limits::kMaxRotaryDim},
    {"rope.scaling.original_max_position_embeddings", limits::kMaxPositions},
    {"rope.scaling.max_position_embeddings", limits::kMaxPositions},
    {"t5_bias.num_buckets", limits::kMaxT5Buckets},
    {"t5_bias.max_distance", limits::kMaxT5Distance},
    {"relative_key.max_position_embeddings", limits::kMaxRelKeyPositions},
    {"tensor_parallel.size", limits::kMaxHeads}};

/// The largest accepted value of the size key `key`.
int64_t maxSizeOf(const std::string &key) {
  for (const SizeLimit &l : kSizeLimits)
    if (key == l.key)
      return l.max;
  return 1; // not a size key: callers only ask for the keys above
}
/// Longest accepted `name`.
constexpr size_t kMaxNameLen = 128;

/// The keys of the schema, in schema order.
const char *const kKeys[] = {
    "name",   "d_model",        "heads",       "kv_heads", "head_dim",
    "mask",   "causal_align",   "window",      "bias",     "out_proj",
    "scale",  "weights",        "max_seq_len", "dtype",    "weight_dtype", "outputs",
    "decode", "cross_attention", "rope", "alibi", "softcap", "qk_norm", "clip_qkv", "sinks",
    "t5_bias", "tensor_parallel", "chunk", "temperature_tuning", "relative_key"};

/// The keys of the `rope` mapping and of its `scaling` mapping.
const char *const kRopeKeys[] = {"style", "theta", "rotary_dim", "scaling"};
const char *const kScalingKeys[] = {
    "type",         "factor",      "low_freq_factor",
    "high_freq_factor", "original_max_position_embeddings",
    "max_position_embeddings", "beta_fast", "beta_slow", "truncate",
    "attention_factor", "mscale", "mscale_all_dim", "short_factor",
    "long_factor"};

/// Thrown internally to abort with one finished message.
struct SpecError {
  std::string message;
};

SrcPos toPos(const YAML::Mark &m) {
  if (m.is_null())
    return {1, 1};
  return {m.line + 1, m.column + 1};
}

/// Formats "FILE:L:C: error: [KEY: ]MSG".
std::string locatedMsg(const std::string &file, SrcPos p,
                       const std::string &key, const std::string &msg) {
  if (key.empty())
    return fmt::format("{}:{}:{}: error: {}", file, p.line, p.col, msg);
  return fmt::format("{}:{}:{}: error: {}: {}", file, p.line, p.col, key, msg);
}

/// Makes user text printable for a message: escapes control bytes and
/// quotes, and truncates long text.
std::string sanitize(const std::string &s) {
  constexpr size_t kMaxShown = 40;
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == kMaxShown) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\'' || c == '\\')
      out += std::string("\\") + static_cast<char>(c);
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else if (c == 0xc2 && i + 1 < s.size() &&
             static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
             static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      // A C1 control (U+0080..U+009F, UTF-8 C2 80..C2 9F): a terminal
      // would act on it (CSI, NEL), so it is named, not echoed.
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[i + 1]));
      ++i;
    } else
      out += static_cast<char>(c);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Text checks done before yaml-cpp sees the text.
//===----------------------------------------------------------------------===//

/// Returns the position of byte `offset` in `text`.
SrcPos posOfOffset(const std::string &text, size_t offset) {
  SrcPos p{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.col = 1;
    } else {
      ++p.col;
    }
  }
  return p;
}

/// Rejects text that is not UTF-8 or contains control characters YAML does
/// not allow (binary files).
void checkText(const std::string &text, const std::string &file) {
  if (text.size() > kMaxSpecBytes)
    throw SpecError{locatedMsg(
        file, {1, 1}, "",
        fmt::format("expected a spec of at most 1 MiB, found {} bytes",
                    text.size()))};
  const auto *s = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size();
  size_t i = 0;
  // A UTF-8 byte order mark is allowed at the very start.
  if (n >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
    i = 3;
  while (i < n) {
    unsigned char c = s[i];
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
        throw SpecError{locatedMsg(
            file, posOfOffset(text, i), "",
            fmt::format("expected UTF-8 text, found control byte 0x{:02x} "
                        "(is this a binary file?)",
                        c))};
      ++i;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80)
        ok = false;
      else
        cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (ok) {
      // Overlong forms, surrogates and values past U+10FFFF.
      if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
          (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        ok = false;
    }
    if (!ok)
      throw SpecError{locatedMsg(
          file, posOfOffset(text, i), "",
          fmt::format("expected UTF-8 text, found byte 0x{:02x} (is this a "
                      "binary file?)",
                      c))};
    i += len;
  }
}

/// Rejects tabs in indentation with a clearer message than yaml-cpp's (which
/// is not always raised: a tab before a top-level key confuses it instead).
void checkTabs(const std::string &text, const std::string &file) {
  size_t lineStart = 0;
  while (lineStart < text.size()) {
    size_t i = lineStart;
    size_t firstTab = std::string::npos;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
      if (text[i] == '\t' && firstTab == std::string::npos)
        firstTab = i;
      ++i;
    }
    bool content =
        i < text.size() && text[i] != '\n' && text[i] != '\r' && text[i] != '#';
    if (firstTab != std::string::npos && content)
      throw SpecError{locatedMsg(file, posOfOffset(text, firstTab), "",
                                 "malformed YAML: expected spaces for "
                                 "indentation, found a tab character")};
    size_t nl = text.find('\n', i);
    if (nl == std::string::npos)
      break;
    lineStart = nl + 1;
  }
}

//===----------------------------------------------------------------------===//
// Event-built YAML tree.
//===----------------------------------------------------------------------===//

struct YNode {
  enum Kind { Null, Scalar, Seq, Map } kind = Null;
  YAML::Mark mark;
  std::string tag;   ///< "?" plain, "!" quoted/literal, else an explicit tag
  std::string value; ///< Scalar only
  /// Seq: the elements; Map: key, value, key, value, ...
  std::vector<std::unique_ptr<YNode>> kids;
};

/// Builds a YNode tree from yaml-cpp events, rejecting aliases, anchors,
/// nesting deeper than kMaxDepth and a second document as they arrive.
class TreeBuilder : public YAML::EventHandler {
public:
  TreeBuilder(const std::string &text, const std::string &file)
      : text(text), file(file) {}

  std::unique_ptr<YNode> root;
  int documents = 0;
  /// Open collections, outermost first.
  std::vector<YNode *> stack;

  void OnDocumentStart(const YAML::Mark &mark) override {
    if (++documents > 1)
      fail(mark, "",
           "expected a single YAML document, found a second "
           "document");
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark &mark, YAML::anchor_t) override {
    auto n = std::make_unique<YNode>();
    n->kind = YNode::Null;
    n->mark = mark;
    add(std::move(n));
  }

  void OnAlias(const YAML::Mark &mark, YAML::anchor_t) override {
    fail(mark, currentKey(),
         fmt::format("expected a plain value, found alias '{}' (anchors and "
                     "aliases are not allowed in a spec)",
                     sanitize(wordAt(mark))));
  }

  void OnAnchor(const YAML::Mark &mark, const std::string &name) override {
    fail(mark, currentKey(),
         fmt::format("expected a plain value, found anchor '&{}' (anchors "
                     "and aliases are not allowed in a spec)",
                     sanitize(name)));
  }

  void OnScalar(const YAML::Mark &mark, const std::string &tag, YAML::anchor_t,
                const std::string &value) override {
    auto n = std::make_unique<YNode>();
    n->kind = YNode::Scalar;
    n->mark = mark;
    n->tag = tag;
    n->value = value;
    add(std::move(n));
  }

  void OnSequenceStart(const YAML::Mark &mark, const std::string &tag,
                       YAML::anchor_t, YAML::EmitterStyle::value) override {
    open(YNode::Seq, mark, tag);
  }
  void OnSequenceEnd() override { stack.pop_back(); }

  void OnMapStart(const YAML::Mark &mark, const std::string &tag,
                  YAML::anchor_t, YAML::EmitterStyle::value) override {
    open(YNode::Map, mark, tag);
  }
  void OnMapEnd() override { stack.pop_back(); }

private:
  const std::string &text;
  const std::string &file;

  [[noreturn]] void fail(const YAML::Mark &mark, const std::string &key,
                         const std::string &msg) {
    throw SpecError{locatedMsg(file, toPos(mark), key, msg)};
  }

  /// The top-level key whose value is being built ("" when unknown).
  std::string currentKey() const {
    if (!root || root->kind != YNode::Map || stack.empty())
      return "";
    const auto &kids = root->kids;
    const YNode *key = nullptr;
    if (stack.size() == 1 && kids.size() % 2 == 1)
      key = kids.back().get(); // the value of this key comes next
    else if (stack.size() >= 2 && kids.size() >= 2)
      key = kids[kids.size() - 2].get(); // inside this key's value
    if (!key || key->kind != YNode::Scalar)
      return "";
    return sanitize(key->value);
  }

  /// The alias token at `mark` ("*name").
  std::string wordAt(const YAML::Mark &mark) const {
    if (mark.pos < 0 || static_cast<size_t>(mark.pos) >= text.size())
      return "*";
    size_t end = text.find_first_of(" \t\r\n,[]{}", mark.pos);
    if (end == std::string::npos)
      end = text.size();
    return text.substr(mark.pos, end - mark.pos);
  }

  void open(YNode::Kind kind, const YAML::Mark &mark, const std::string &tag) {
    if (stack.size() + 1 > kMaxDepth)
      fail(mark, currentKey(),
           fmt::format("expected at most {} levels of nesting, found a "
                       "deeper {}",
                       kMaxDepth, kind == YNode::Seq ? "sequence" : "mapping"));
    auto n = std::make_unique<YNode>();
    n->kind = kind;
    n->mark = mark;
    n->tag = tag;
    YNode *raw = n.get();
    add(std::move(n));
    stack.push_back(raw);
  }

  void add(std::unique_ptr<YNode> n) {
    if (stack.empty()) {
      if (!root)
        root = std::move(n);
      return;
    }
    stack.back()->kids.push_back(std::move(n));
  }
};

//===----------------------------------------------------------------------===//
// Validation.
//===----------------------------------------------------------------------===//

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

bool isPlain(const YNode &n) { return n.kind == YNode::Scalar && n.tag == "?"; }

bool isString(const YNode &n) {
  return n.kind == YNode::Scalar && (n.tag == "?" || n.tag == "!");
}

/// Describes what was found, for "..., found X".
std::string describe(const YNode &n) {
  switch (n.kind) {
  case YNode::Null:
    return "no value";
  case YNode::Seq:
    return "a sequence";
  case YNode::Map:
    return "a mapping";
  case YNode::Scalar:
    break;
  }
  if (n.tag == "?")
    return fmt::format("'{}'", sanitize(n.value));
  if (n.tag == "!")
    return fmt::format("the quoted string '{}'", sanitize(n.value));
  return fmt::format("'{}' with tag '{}'", sanitize(n.value), sanitize(n.tag));
}

/// Returns the integer spelled by a plain decimal scalar (no sign other than
/// '-', no leading zeros), or nullopt. `overflow` is set when the digits do
/// not fit in int64.
std::optional<int64_t> parseDecimal(const std::string &s, bool &overflow) {
  overflow = false;
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && s[i] == '-') {
    neg = true;
    ++i;
  }
  if (i == s.size())
    return std::nullopt;
  if (s[i] == '0' && i + 1 < s.size())
    return std::nullopt; // leading zero: octal in YAML 1.1, reject
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9')
      return std::nullopt;
    int d = s[i] - '0';
    if (__builtin_mul_overflow(v, int64_t(10), &v) ||
        __builtin_add_overflow(v, int64_t(d), &v))
      overflow = true;
  }
  if (overflow)
    return neg ? INT64_MIN : INT64_MAX;
  return neg ? -v : v;
}

/// Returns the number spelled by a plain decimal float scalar, or nullopt.
std::optional<double> parseNumber(const std::string &s) {
  // [-+]? (digits [. digits?] | . digits) ([eE] [-+]? digits)?
  size_t i = 0, n = s.size();
  if (i < n && (s[i] == '-' || s[i] == '+'))
    ++i;
  size_t intDigits = 0, fracDigits = 0;
  while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) {
    ++i;
    ++intDigits;
  }
  if (i < n && s[i] == '.') {
    ++i;
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
      ++fracDigits;
    }
  }
  if (intDigits + fracDigits == 0)
    return std::nullopt;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '-' || s[i] == '+'))
      ++i;
    size_t expDigits = 0;
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
      ++expDigits;
    }
    if (expDigits == 0)
      return std::nullopt;
  }
  if (i != n)
    return std::nullopt;
  errno = 0;
  double v = std::strtod(s.c_str(), nullptr);
  if (errno == ERANGE)
    return std::nullopt;
  return v;
}

class SpecBuilder {
public:
  SpecBuilder(const std::string &file) : file(file) {}

  Spec build(const YNode *root) {
    if (!root || root->kind == YNode::Null)
      throw SpecError{locatedMsg(file, root ? toPos(root->mark) : SrcPos{1, 1},
                                 "",
                                 "expected a mapping of spec keys, found an "
                                 "empty document")};
    if (root->kind != YNode::Map)
      throw SpecError{
          locatedMsg(file, toPos(root->mark), "",
                     fmt::format("expected a mapping of spec keys, found {}",
                                 root->kind == YNode::Scalar
                                     ? "a scalar " + describe(*root)
                                     : describe(*root)))};
    spec.file = file;
    mapPos = toPos(root->mark);

    std::map<std::string, const YNode *> keyNodes;
    for (size_t i = 0; i + 1 < root->kids.size(); i += 2) {
      const YNode &k = *root->kids[i];
      const YNode &v = *root->kids[i + 1];
      if (!isString(k))
        throw SpecError{locatedMsg(
            file, toPos(k.mark), "",
            fmt::format("expected a key name, found {}", describe(k)))};
      const std::string &key = k.value;
      if (auto it = keyNodes.find(key); it != keyNodes.end()) {
        SrcPos first = toPos(it->second->mark);
        throw SpecError{locatedMsg(
            file, toPos(k.mark), "",
            fmt::format("duplicate key '{}': expected each key once, already "
                        "given at {}:{}",
                        sanitize(key), first.line, first.col))};
      }
      if (!isKnownKey(key))
        throw SpecError{
            locatedMsg(file, toPos(k.mark), "", unknownKeyMessage(key))};
      keyNodes[key] = &k;
      spec.keyPos[key] = toPos(k.mark);
      // A missing value is reported at its key: yaml-cpp marks it at the
      // next token, possibly on a later line.
      spec.valuePos[key] = (v.kind == YNode::Null && v.mark.line != k.mark.line)
                               ? toPos(k.mark)
                               : toPos(v.mark);
      setField(key, v);
    }
    checkRequired();
    if (!spec.keyPos.count("weight_dtype"))
      spec.weightDtype = spec.dtype;
    checkRelations();
    checkTensorParallel();
    return std::move(spec);
  }

private:
  const std::string &file;
  Spec spec;
  SrcPos mapPos;
  bool hasKvHeads = false, hasHeadDim = false, hasWindow = false, hasChunk = false;

  [[noreturn]] void fail(const std::string &key, const std::string &msg) {
    throw SpecError{locatedMsg(file, spec.valuePosOf(key), key, msg)};
  }

  static bool isKnownKey(const std::string &key) {
    for (const char *k : kKeys)
      if (key == k)
        return true;
    return false;
  }

  static std::string unknownKeyMessage(const std::string &key) {
    const char *best = nullptr;
    size_t bestDist = 3;
    for (const char *k : kKeys) {
      size_t d = editDistance(key, k);
      if (d < bestDist && d < key.size()) {
        best = k;
        bestDist = d;
      }
    }
    if (best)
      return fmt::format("unknown key '{}': did you mean '{}'?", sanitize(key),
                         best);
    std::string all;
    for (const char *k : kKeys)
      all += (all.empty() ? "" : ", ") + std::string(k);
    return fmt::format("unknown key '{}': expected one of {}", sanitize(key),
                       all);
  }

  int64_t getSize(const std::string &key, const YNode &v) {
    bool overflow = false;
    std::optional<int64_t> n;
    if (isPlain(v))
      n = parseDecimal(v.value, overflow);
    if (!n || *n <= 0)
      fail(key,
           fmt::format("expected a positive integer, found {}", describe(v)));
    if (overflow || *n > maxSizeOf(key))
      fail(key, fmt::format("expected a positive integer <= {}, found {}",
                            maxSizeOf(key), describe(v)));
    return *n;
  }

  /// The boolean a plain scalar spells (true/True/TRUE, false/...), or
  /// nullopt.
  static std::optional<bool> boolValue(const YNode &v) {
    if (isPlain(v)) {
      const std::string &s = v.value;
      if (s == "true" || s == "True" || s == "TRUE")
        return true;
      if (s == "false" || s == "False" || s == "FALSE")
        return false;
    }
    return std::nullopt;
  }

  bool getBool(const std::string &key, const YNode &v) {
    if (std::optional<bool> b = boolValue(v))
      return *b;
    fail(key, fmt::format("expected true or false, found {}", describe(v)));
  }

  /// Returns the index of the scalar in `names`.
  size_t getEnum(const std::string &key, const YNode &v,
                 const std::vector<const char *> &names) {
    if (isString(v))
      for (size_t i = 0; i < names.size(); ++i)
        if (v.value == names[i])
          return i;
    std::string list;
    for (size_t i = 0; i < names.size(); ++i)
      list += (i ? ", " : "") + std::string(names[i]);
    fail(key, fmt::format("expected one of {}, found {}", list, describe(v)));
  }

  void setField(const std::string &key, const YNode &v) {
    if (key == "name") {
      if (!isString(v) || !isCIdentifier(v.value))
        fail(key, fmt::format("expected a C identifier (letters, digits and "
                              "'_', not starting with a digit), found {}",
                              describe(v)));
      if (v.value.size() > kMaxNameLen)
        fail(key, fmt::format("expected a C identifier of at most {} "
                              "characters, found {} characters",
                              kMaxNameLen, v.value.size()));
      spec.name = v.value;
    } else if (key == "d_model") {
      spec.dModel = getSize(key, v);
    } else if (key == "heads") {
      spec.heads = getSize(key, v);
    } else if (key == "kv_heads") {
      spec.kvHeads = getSize(key, v);
      hasKvHeads = true;
    } else if (key == "head_dim") {
      spec.headDim = getSize(key, v);
      hasHeadDim = true;
    } else if (key == "mask") {
      std::vector<const char *> names;
      for (int k = 0; k <= int(kLastMaskKind); ++k)
        names.push_back(toString(MaskKind(k)));
      spec.mask = static_cast<MaskKind>(getEnum(key, v, names));
    } else if (key == "causal_align") {
      spec.causalAlign = static_cast<CausalAlign>(
          getEnum(key, v, {"bottom_right", "top_left"}));
    } else if (key == "window") {
      spec.window = getSize(key, v);
      hasWindow = true;
    } else if (key == "chunk") {
      spec.window = getSize(key, v);
      hasChunk = true;
    } else if (key == "temperature_tuning") {
      auto m = nestedMap("temperature_tuning", v, {"floor_scale", "attn_scale"});
      spec.temperature = Spec::Temperature();
      for (auto &[k, node] : m) {
        if (k == "floor_scale")
          spec.temperature->floorScale = getSize("temperature_tuning.floor_scale", *node);
        else
          spec.temperature->attnScale =
              getInRange("temperature_tuning.attn_scale", *node, 0, 1e3, true, "");
      }
    } else if (key == "bias") {
      setBias(v);
    } else if (key == "rope") {
      setRope(v);
    } else if (key == "alibi") {
      setAlibi(v);
    } else if (key == "softcap") {
      // (why the bound is 10000, said where the value is past it)
      const std::optional<double> asked = isPlain(v) ? parseNumber(v.value) : std::nullopt;
      spec.softcap = getInRange("softcap", v, 0, 1e4, false,
                                asked && *asked > 1e4
                                    ? " (cap * tanh(s / cap) is computed as cap minus a "
                                      "quotient: a larger cap loses the score to float32 "
                                      "rounding)"
                                    : "");
      // The kernels divide by the cap in float32: it must stay a normal one.
      if (!std::isnormal(static_cast<float>(*spec.softcap)))
        fail("softcap", fmt::format("expected a number in (0, 10000] that float32 holds as a "
                                    "normal number (at least about 1.2e-38), found {}",
                                    describe(v)));
    } else if (key == "clip_qkv") {
      spec.clipQkv = getPositive("clip_qkv", v);
      // The kernels clamp to the float32 bound: a subnormal one (or one
      // that rounds to 0) is no bound a checkpoint means, as for softcap.
      if (!std::isnormal(static_cast<float>(*spec.clipQkv)))
        fail("clip_qkv", fmt::format("expected a positive number that float32 holds as a "
                                     "normal number (at least about 1.2e-38), found {}",
                                     describe(v)));
    } else if (key == "qk_norm") {
      setQkNorm(v);
    } else if (key == "sinks") {
      spec.sinks = getBool(key, v);
    } else if (key == "tensor_parallel") {
      setTensorParallel(v);
    } else if (key == "t5_bias") {
      auto m = nestedMap("t5_bias", v, {"num_buckets", "max_distance", "bidirectional"});
      spec.t5Buckets = 32;
      for (auto &[k, node] : m) {
        if (k == "num_buckets")
          spec.t5Buckets = getSize("t5_bias.num_buckets", *node);
        else if (k == "max_distance")
          spec.t5MaxDistance = getSize("t5_bias.max_distance", *node);
        else
          spec.t5Bidirectional = getBool("t5_bias.bidirectional", *node);
      }
      if (spec.t5Buckets < (spec.t5Bidirectional ? 4 : 2))
        fail("t5_bias.num_buckets",
             fmt::format("expected at least {} buckets, found {}",
                         spec.t5Bidirectional ? 4 : 2, spec.t5Buckets));
      if (spec.t5MaxDistance <= spec.t5Buckets / (spec.t5Bidirectional ? 4 : 2))
        fail("t5_bias.max_distance",
             fmt::format("expected more than the exact range ({}), found {}",
                         spec.t5Buckets / (spec.t5Bidirectional ? 4 : 2),
                         spec.t5MaxDistance));
    } else if (key == "relative_key") {
      auto m = nestedMap("relative_key", v, {"max_position_embeddings", "key_query"});
      bool hasP = false;
      for (auto &[k, node] : m) {
        if (k == "max_position_embeddings") {
          spec.relKeyPositions = getSize("relative_key.max_position_embeddings", *node);
          hasP = true;
        } else {
          spec.relKeyQuery = getBool("relative_key.key_query", *node);
        }
      }
      if (!hasP)
        fail("relative_key", "expected a 'max_position_embeddings' key (P: the "
                             "distance_embedding table has 2P - 1 rows), found none");
    } else if (key == "out_proj") {
      spec.outProj = getBool(key, v);
    } else if (key == "scale") {
      setScale(v);
    } else if (key == "weights") {
      spec.weights = static_cast<WeightLayout>(
          getEnum(key, v, {"gpt2_conv1d", "torch_in_proj", "separate"}));
    } else if (key == "max_seq_len") {
      spec.maxSeqLen = getSize(key, v);
    } else if (key == "dtype" || key == "weight_dtype") {
      DType d = static_cast<DType>(getEnum(key, v, {"f32", "bf16", "f16"}));
      (key == "dtype" ? spec.dtype : spec.weightDtype) = d;
    } else if (key == "outputs") {
      setOutputs(v);
    } else if (key == "decode") {
      spec.decode = getBool(key, v);
    } else if (key == "cross_attention") {
      spec.crossAttention = getBool(key, v);
    }
  }

  /// `bias: true | false | [q, k, v, o]` (the list names the projections
  /// that carry a bias: Qwen2 is [q, k, v], Whisper [q, v, o]).
  void setBias(const YNode &v) {
    if (v.kind != YNode::Seq) {
      std::optional<bool> b = boolValue(v);
      if (!b)
        fail("bias", fmt::format("expected true, false or a list of "
                                 "projections such as [q, k, v], found {}",
                                 describe(v)));
      spec.biasMask = *b ? kAllBiases : 0u;
      return;
    }
    unsigned mask = 0;
    for (size_t i = 0; i < v.kids.size(); ++i) {
      const YNode &e = *v.kids[i];
      unsigned bit = !isString(e)      ? 0u
                     : e.value == "q" ? unsigned(BiasQ)
                     : e.value == "k" ? unsigned(BiasK)
                     : e.value == "v" ? unsigned(BiasV)
                     : e.value == "o" ? unsigned(BiasO)
                                      : 0u;
      if (!bit)
        throw SpecError{locatedMsg(
            file, toPos(e.mark), "bias",
            fmt::format("expected q, k, v or o, found {}", describe(e)))};
      if (mask & bit)
        throw SpecError{locatedMsg(
            file, toPos(e.mark), "bias",
            fmt::format("expected each projection once, found '{}' again",
                        e.value))};
      mask |= bit;
      if (bit == BiasO)
        spec.valuePos["bias[o]"] = toPos(e.mark);
    }
    spec.biasMask = mask;
  }

  /// Records the positions of a nested mapping's keys and values as
  /// "PARENT.KEY" and returns its value nodes by key; unknown and duplicate
  /// keys are errors.
  std::map<std::string, const YNode *>
  nestedMap(const std::string &parent, const YNode &v,
            const std::vector<const char *> &keys) {
    if (v.kind != YNode::Map)
      fail(parent, fmt::format("expected a mapping, found {}", describe(v)));
    std::map<std::string, const YNode *> out;
    for (size_t i = 0; i + 1 < v.kids.size(); i += 2) {
      const YNode &k = *v.kids[i];
      const YNode &val = *v.kids[i + 1];
      std::string full = parent + "." + (isString(k) ? k.value : "?");
      bool known = isString(k) && std::find_if(keys.begin(), keys.end(),
                                               [&](const char *n) {
                                                 return k.value == n;
                                               }) != keys.end();
      if (!known) {
        std::string all;
        for (const char *n : keys)
          all += (all.empty() ? "" : ", ") + std::string(n);
        throw SpecError{locatedMsg(
            file, toPos(k.mark), parent,
            fmt::format("unknown key {}: expected one of {}", describe(k),
                        all))};
      }
      if (out.count(k.value)) {
        SrcPos first = spec.keyPos[full];
        throw SpecError{locatedMsg(
            file, toPos(k.mark), parent,
            fmt::format("duplicate key '{}': expected each key once, already given at {}:{}",
                        sanitize(k.value), first.line, first.col))};
      }
      spec.keyPos[full] = toPos(k.mark);
      spec.valuePos[full] = (val.kind == YNode::Null && val.mark.line != k.mark.line)
                                ? toPos(k.mark)
                                : toPos(val.mark);
      out[k.value] = &val;
    }
    return out;
  }

  /// A number in (lo, hi] (or [lo, hi] with `closedLo`): the range the
  /// kernels compute accurately in float32 (and the loader accepts), with
  /// `why` saying what lies outside it.
  double getInRange(const std::string &key, const YNode &v, double lo, double hi,
                    bool closedLo, const char *why) {
    std::optional<double> d;
    if (isPlain(v))
      d = parseNumber(v.value);
    if (!d || !std::isfinite(*d) || *d > hi || *d < lo || (*d == lo && !closedLo))
      fail(key, fmt::format("expected a number in {}{}, {}], found {}{}", closedLo ? "[" : "(",
                            lo, hi, describe(v), why));
    return *d;
  }

  /// A finite number > 0 (or >= 0 with `allowZero`).
  double getPositive(const std::string &key, const YNode &v,
                     bool allowZero = false) {
    std::optional<double> d;
    if (isPlain(v))
      d = parseNumber(v.value);
    if (!d || !std::isfinite(*d) || *d < 0 || (*d == 0 && !allowZero))
      fail(key, fmt::format("expected a {} number, found {}",
                            allowZero ? "non-negative" : "positive",
                            describe(v)));
    return *d;
  }

  /// qk_norm: {width: head | projection, type: rms | layer, weight:
  /// shared | per_head, bias: false, eps: 1e-6, weight_offset: 0}.
  void setQkNorm(const YNode &v) {
    auto m = nestedMap("qk_norm", v,
                       {"width", "type", "weight", "bias", "eps", "weight_offset"});
    if (!m.count("width"))
      fail("qk_norm", "expected a 'width' key (head or projection), found none");
    for (auto &[key, node] : m) {
      std::string full = "qk_norm." + key;
      if (key == "width")
        spec.qkNorm = getEnum(full, *node, {"head", "projection"}) == 0
                          ? Spec::QkNorm::Head
                          : Spec::QkNorm::Projection;
      else if (key == "type")
        spec.qkNormLayer = getEnum(full, *node, {"rms", "layer"}) == 1;
      else if (key == "weight") {
        int w = getEnum(full, *node, {"shared", "per_head", "none"});
        spec.qkNormPerHead = w == 1;
        spec.qkNormNoWeight = w == 2;
      }
      else if (key == "bias")
        spec.qkNormBias = getBool(full, *node);
      else if (key == "eps")
        spec.qkNormEps = getInRange(full, *node, 0, 1, false, "");
      else
        spec.qkNormOffset = getInRange(full, *node, 0, 1e3, true, "");
    }
    if (spec.qkNormNoWeight && spec.qkNormBias)
      fail("qk_norm.bias", "expected no bias with weight: none (a bias goes with a "
                           "weight), found bias: true");
    if (spec.qkNormPerHead && spec.qkNorm == Spec::QkNorm::Projection)
      fail("qk_norm.weight", "expected weight: shared with width: projection (one "
                             "weight over the whole projection already has an entry "
                             "per head), found weight: per_head");
  }

  /// tensor_parallel: {size: N, rank: R}.
  void setTensorParallel(const YNode &v) {
    auto m = nestedMap("tensor_parallel", v, {"size", "rank"});
    if (!m.count("size") || !m.count("rank"))
      fail("tensor_parallel", fmt::format("expected both 'size' and 'rank', found {}",
                                          m.count("size") ? "no rank" : "no size"));
    spec.tpSize = getSize("tensor_parallel.size", *m.at("size"));
    const YNode &r = *m.at("rank");
    bool overflow = false;
    std::optional<int64_t> n;
    if (isPlain(r))
      n = parseDecimal(r.value, overflow);
    if (!n || overflow || *n < 0 || *n >= spec.tpSize)
      fail("tensor_parallel.rank",
           fmt::format("expected an integer in [0, size {}), found {}", spec.tpSize,
                       describe(r)));
    spec.tpRank = *n;
  }

  /// The rank's share of the heads (tensor_parallel), after every other
  /// check: Q heads split evenly, kv heads split when the size divides them
  /// and replicated (the one each rank's query heads read) when the size is
  /// a multiple of them.
  void checkTensorParallel() {
    Spec &s = spec;
    s.fullHeads = s.heads;
    s.fullKvHeads = s.kvHeads;
    if (s.tpSize == 1)
      return;
    const int64_t n = s.tpSize;
    if (s.heads % n != 0)
      fail("tensor_parallel.size",
           fmt::format("expected a size that divides heads {} (each rank takes whole "
                       "heads), found {}",
                       s.heads, n));
    if (s.kvHeads % n != 0 && n % s.kvHeads != 0)
      fail("tensor_parallel.size",
           fmt::format("expected a size that divides kv_heads {} (the kv heads split) "
                       "or a multiple of it (each replicated), found {}",
                       s.kvHeads, n));
    if (s.qkNorm == Spec::QkNorm::Projection)
      fail("tensor_parallel",
           "expected no qk_norm over the whole projection with tensor_parallel (its "
           "mean spans every rank's heads), found qk_norm: {width: projection}");
    s.heads /= n;
    s.kvHeads = s.fullKvHeads % n == 0 ? s.fullKvHeads / n : 1;
  }

  /// alibi: true | false | {bias_max: 8, before_scale: false}.
  void setAlibi(const YNode &v) {
    if (v.kind != YNode::Map) {
      std::optional<bool> b = boolValue(v);
      if (!b)
        fail("alibi", fmt::format("expected true, false or a mapping with "
                                  "bias_max and before_scale, found {}",
                                  describe(v)));
      spec.alibi = *b;
      return;
    }
    spec.alibi = true;
    auto m = nestedMap("alibi", v, {"bias_max", "before_scale"});
    for (auto &[key, node] : m) {
      if (key == "bias_max")
        spec.alibiBiasMax = getPositive("alibi.bias_max", *node);
      else
        spec.alibiBeforeScale = getBool("alibi.before_scale", *node);
    }
  }

  /// rope: {style, theta, rotary_dim, scaling: {type, ...}} (docs/spec.md).
  void setRope(const YNode &v) {
    RopeSpec &r = spec.rope;
    r.style = RopeStyle::HalfSplit;
    auto m = nestedMap("rope", v, {std::begin(kRopeKeys), std::end(kRopeKeys)});
    for (auto &[key, node] : m) {
      std::string full = "rope." + key;
      if (key == "style")
        r.style = getEnum(full, *node, {"half_split", "interleaved"}) == 0
                      ? RopeStyle::HalfSplit
                      : RopeStyle::Interleaved;
      else if (key == "theta")
        r.theta = getPositive(full, *node);
      else if (key == "rotary_dim")
        r.rotaryDim = getSize(full, *node);
      else if (key == "scaling")
        setScaling(*node);
    }
    if (m.count("theta") && r.theta <= 1)
      fail("rope.theta", fmt::format("expected a base > 1, found {}", r.theta));
  }

  void setScaling(const YNode &v) {
    RopeSpec &r = spec.rope;
    auto m = nestedMap("rope.scaling", v,
                       {std::begin(kScalingKeys), std::end(kScalingKeys)});
    if (!m.count("type"))
      fail("rope.scaling", "expected a 'type' key (default, linear, dynamic, "
                           "llama3, yarn or longrope), found none");
    const char *types[] = {"default", "linear", "dynamic", "llama3", "yarn",
                           "longrope"};
    size_t t = getEnum("rope.scaling.type", *m["type"],
                       {std::begin(types), std::end(types)});
    r.scaling = types[t];
    auto has = [&](const char *k) { return m.count(k) != 0; };
    auto need = [&](const char *k) {
      if (!has(k))
        fail("rope.scaling",
             fmt::format("expected '{}' with type: {}, found none", k,
                         r.scaling));
      return m[k];
    };
    for (auto &[key, node] : m) {
      std::string full = "rope.scaling." + key;
      if (key == "factor")
        r.factor = getInRange(full, *node, 1e-3, 1e6, true,
                              " (the frequencies are divided by it)");
      else if (key == "low_freq_factor")
        r.lowFreqFactor = getPositive(full, *node);
      else if (key == "high_freq_factor")
        r.highFreqFactor = getPositive(full, *node);
      else if (key == "beta_fast")
        r.betaFast = getPositive(full, *node);
      else if (key == "beta_slow")
        r.betaSlow = getPositive(full, *node);
      else if (key == "truncate")
        r.truncate = getBool(full, *node);
      else if (key == "attention_factor")
        r.attentionFactor = getPositive(full, *node);
      else if (key == "mscale")
        r.mscale = getPositive(full, *node, true);
      else if (key == "mscale_all_dim")
        r.mscaleAllDim = getPositive(full, *node, true);
      else if (key == "original_max_position_embeddings")
        r.originalMaxPos = getSize(full, *node);
      else if (key == "max_position_embeddings")
        r.maxPos = getSize(full, *node);
      else if (key == "short_factor" || key == "long_factor") {
        if (node->kind != YNode::Seq || node->kids.empty())
          fail(full, fmt::format("expected a list of positive numbers, found {}",
                                 describe(*node)));
        std::vector<double> &out = key == "short_factor" ? r.shortFactor : r.longFactor;
        for (size_t i = 0; i < node->kids.size(); ++i) {
          std::string ek = fmt::format("{}[{}]", full, i);
          spec.valuePos[ek] = toPos(node->kids[i]->mark);
          out.push_back(getInRange(ek, *node->kids[i], 1e-3, 1e6, true,
                                   " (the frequency of its pair is divided by it, as by "
                                   "factor)"));
        }
      }
    }
    // The keys each type reads (spec.md's table): another one would be
    // ignored, and a spec never ignores a key silently.
    const std::vector<std::string> &reads = *ropeScalingKeys(r.scaling);
    for (auto &[key, node] : m)
      if (key != "type" && std::find(reads.begin(), reads.end(), key) == reads.end())
        fail("rope.scaling." + key,
             fmt::format("expected no {} with type: {} (it reads {}), found one", key,
                         r.scaling,
                         reads.empty() ? std::string("no other key")
                                       : fmt::format("only {}", fmt::join(reads, ", "))));
    if (r.scaling == "linear" || r.scaling == "llama3" || r.scaling == "yarn" ||
        r.scaling == "dynamic")
      need("factor");
    if (r.scaling == "dynamic")
      need("max_position_embeddings");
    if (r.scaling == "llama3") {
      need("low_freq_factor");
      need("high_freq_factor");
      need("original_max_position_embeddings");
      // Equal factors (Llama 4 Scout: 1 and 1) leave no ramp between the
      // kept and the divided frequencies.
      if (r.highFreqFactor < r.lowFreqFactor)
        fail("rope.scaling.high_freq_factor",
             fmt::format("expected high_freq_factor >= low_freq_factor ({}), "
                         "found {}",
                         r.lowFreqFactor, r.highFreqFactor));
    }
    if (r.scaling == "yarn")
      need("original_max_position_embeddings");
    if (r.scaling == "longrope") {
      need("short_factor");
      need("long_factor");
      need("original_max_position_embeddings");
      need("max_position_embeddings");
    }
  }

  void setScale(const YNode &v) {
    if (isPlain(v)) {
      if (v.value == "auto") {
        spec.scale.reset();
        return;
      }
      std::optional<double> d = parseNumber(v.value);
      if (d && std::isfinite(*d) && *d > 0) {
        // The kernel computes in f32: the scale must survive the rounding
        // (neither inf nor zero/denormal there).
        float f = static_cast<float>(*d);
        if (!std::isnormal(f) || *d < limits::kMinScale || *d > limits::kMaxScale)
          fail("scale", fmt::format("expected a positive number between the "
                                    "smallest normal float32 (about 1.2e-38) "
                                    "and 1e6, found '{}'",
                                    v.value));
        spec.scale = *d;
        return;
      }
    }
    fail("scale", fmt::format("expected 'auto' or a positive finite number, "
                              "found {}",
                              describe(v)));
  }

  void setOutputs(const YNode &v) {
    if (v.kind != YNode::Seq)
      fail("outputs", fmt::format("expected a sequence such as [y] or [y, "
                                  "probs], found {}",
                                  describe(v)));
    std::vector<std::string> outs;
    for (size_t i = 0; i < v.kids.size(); ++i) {
      const YNode &e = *v.kids[i];
      std::string elemKey = fmt::format("outputs[{}]", i);
      spec.valuePos[elemKey] = toPos(e.mark);
      if (!isString(e) || (e.value != "y" && e.value != "probs"))
        throw SpecError{locatedMsg(
            file, toPos(e.mark), "outputs",
            fmt::format("expected y or probs, found {}", describe(e)))};
      if (std::find(outs.begin(), outs.end(), e.value) != outs.end())
        throw SpecError{locatedMsg(
            file, toPos(e.mark), "outputs",
            fmt::format("expected each output once, found '{}' again",
                        e.value))};
      outs.push_back(e.value);
    }
    if (std::find(outs.begin(), outs.end(), "y") == outs.end()) {
      std::string found;
      for (const std::string &o : outs)
        found += (found.empty() ? "" : ", ") + o;
      fail("outputs",
           fmt::format("expected a list containing y, found [{}]", found));
    }
    spec.outputs = outs;
  }

  void checkRequired() {
    static const std::pair<const char *, const char *> required[] = {
        {"name", "a C identifier"},
        {"d_model", "a positive integer"},
        {"heads", "a positive integer"}};
    for (const auto &[key, what] : required)
      if (!spec.keyPos.count(key))
        throw SpecError{locatedMsg(
            file, mapPos, key,
            fmt::format("expected {} (required key), found no '{}' key", what,
                        key))};
  }

  void checkRelations() {
    Spec &s = spec;
    if (!hasHeadDim) {
      if (s.dModel % s.heads != 0)
        fail("heads", fmt::format("{} does not divide d_model {} (d_model % "
                                  "heads = {})",
                                  s.heads, s.dModel, s.dModel % s.heads));
      s.headDim = s.dModel / s.heads;
      // The derived head_dim has the written one's limit (the loader
      // refuses a library past it).
      if (s.headDim > limits::kMaxHeadDim)
        fail("heads", fmt::format("d_model / heads = {} / {} = {} is head_dim, expected "
                                  "a head_dim <= {} (docs/limits.md)",
                                  s.dModel, s.heads, s.headDim, limits::kMaxHeadDim));
    }
    if (!hasKvHeads)
      s.kvHeads = s.heads;
    if (s.heads % s.kvHeads != 0)
      fail("kv_heads", fmt::format("{} does not divide heads {} (heads % "
                                   "kv_heads = {})",
                                   s.kvHeads, s.heads, s.heads % s.kvHeads));
    if (s.weights != WeightLayout::Separate) {
      const char *packed =
          s.weights == WeightLayout::Gpt2Conv1D
              ? "weights: gpt2_conv1d, which packs Q/K/V as one (d_model, "
                "3*d_model) tensor"
              : "weights: torch_in_proj, which packs Q/K/V as one "
                "(3*d_model, d_model) tensor";
      if (s.kvHeads != s.heads)
        fail("kv_heads", fmt::format("expected kv_heads == heads ({}) for {}, "
                                     "found {} (use weights: separate for "
                                     "GQA/MQA)",
                                     s.heads, packed, s.kvHeads));
      if (s.heads * s.headDim != s.dModel)
        fail("head_dim",
             fmt::format("expected heads * head_dim == d_model ({}) for {}, "
                         "found {} * {} = {} (use weights: separate)",
                         s.dModel, packed, s.heads, s.headDim,
                         s.heads * s.headDim));
    }
    if (s.weights != WeightLayout::Separate) {
      unsigned qkv = s.biasMask & (BiasQ | BiasK | BiasV);
      if (qkv != 0 && qkv != (BiasQ | BiasK | BiasV))
        fail("bias", fmt::format("expected q, k and v all with or all without "
                                 "a bias for weights: {} (one fused tensor "
                                 "holds them), found some of them (use "
                                 "weights: separate)",
                                 toString(s.weights)));
    }
    if (!s.outProj && (s.biasMask & BiasO)) {
      // `bias: true` means every projection there is; a list that names o
      // asks for a bias on a W_O the block does not apply.
      if (s.valuePos.count("bias[o]"))
        throw SpecError{locatedMsg(file, s.valuePosOf("bias[o]"), "bias",
                                   "expected no o with out_proj: false (there is no W_O "
                                   "to add it after), found o")};
      s.biasMask &= ~unsigned(BiasO); // no W_O, so no o bias either
    }
    if (s.t5Buckets && s.weights != WeightLayout::Separate)
      fail("t5_bias", fmt::format("expected weights: separate with t5_bias (the "
                                  "relative_attention_bias table sits beside "
                                  "q_proj), found weights: {}",
                                  toString(s.weights)));
    if (s.relKeyPositions && s.weights != WeightLayout::Separate)
      fail("relative_key", fmt::format("expected weights: separate with relative_key (the "
                                       "distance_embedding table sits beside q_proj), "
                                       "found weights: {}",
                                       toString(s.weights)));
    if (s.relKeyPositions && s.decode)
      fail("relative_key", "expected no relative_key with decode: true (BERT's relative "
                           "positions are an encoder's; a cached decoder is not supported)");
    if (s.relKeyPositions && s.crossAttention)
      fail("relative_key", "expected no relative_key with cross_attention: true (the keys "
                           "of another sequence have no distance to the queries)");
    if (s.relKeyPositions && s.maxSeqLen > s.relKeyPositions)
      fail("max_seq_len", fmt::format("expected max_seq_len <= relative_key."
                                      "max_position_embeddings ({}), found {}",
                                      s.relKeyPositions, s.maxSeqLen));
    // BERT's table covers distances below P: longer calls are refused.
    if (s.relKeyPositions && s.maxSeqLen == 0)
      s.maxSeqLen = s.relKeyPositions;
    if (s.sinks && s.weights != WeightLayout::Separate)
      fail("sinks", fmt::format("expected weights: separate with sinks (the "
                                "'sinks' tensor sits beside q_proj), found "
                                "weights: {}",
                                toString(s.weights)));
    if (s.qkNorm != Spec::QkNorm::None && s.weights != WeightLayout::Separate)
      fail("qk_norm", fmt::format("expected weights: separate with qk_norm (its "
                                  "q_norm/k_norm weights sit beside q_proj and "
                                  "k_proj), found weights: {}",
                                  toString(s.weights)));
    if (s.hasRope()) {
      RopeSpec &r = s.rope;
      if (!s.keyPos.count("rope.rotary_dim"))
        r.rotaryDim = s.headDim;
      if (!s.keyPos.count("rope.rotary_dim") && r.rotaryDim % 2 != 0)
        fail("rope", fmt::format("head_dim {} is odd, and the rotary embedding rotates "
                                 "pairs of dimensions (set rope.rotary_dim to an even "
                                 "width below it for a partial rotation)",
                                 s.headDim));
      if (r.rotaryDim % 2 != 0 || r.rotaryDim > s.headDim)
        fail(s.keyPos.count("rope.rotary_dim") ? "rope.rotary_dim" : "rope",
             fmt::format("expected an even rotary_dim <= head_dim ({}), "
                         "found {}",
                         s.headDim, r.rotaryDim));
      if (s.crossAttention)
        fail("rope", "expected no rope with cross_attention: true (keys "
                     "from another sequence have no positions in this one)");
      if (r.scaling == "dynamic" && r.rotaryDim < 4)
        fail(s.keyPos.count("rope.rotary_dim") ? "rope.rotary_dim" : "rope.scaling.type",
             fmt::format("expected rotary_dim >= 4 with dynamic scaling (its "
                         "base is raised to r / (r - 2)), found {}",
                         r.rotaryDim));
      if (r.scaling == "longrope") {
        size_t half = size_t(r.rotaryDim / 2);
        for (const char *k : {"short_factor", "long_factor"}) {
          const auto &f = std::string(k) == "short_factor" ? r.shortFactor
                                                           : r.longFactor;
          if (f.size() != half)
            fail(std::string("rope.scaling.") + k,
                 fmt::format("expected rotary_dim / 2 = {} factors, found {}",
                             half, f.size()));
        }
      }
      if (r.scaling == "yarn" || r.scaling == "longrope") {
        // cos and sin times the attention factor: given, or from factor
        // and mscale (yarn) or the lengths (longrope), within what the
        // runtime loads (limits.md).
        const double af = ropeAttentionFactor(s);
        const bool given = r.attentionFactor.has_value();
        if (!std::isfinite(af) || !(af > 0) || af > limits::kMaxRopeAttentionFactor)
          fail(given ? "rope.scaling.attention_factor"
               : r.scaling == "longrope" ? "rope.scaling.original_max_position_embeddings"
               : s.keyPos.count("rope.scaling.mscale") ? "rope.scaling.mscale"
                                                       : "rope.scaling.factor",
               fmt::format("expected an attention factor (cos and sin are multiplied by it) "
                           "in (0, {}], found {}{}",
                           limits::kMaxRopeAttentionFactor, af,
                           given ? ""
                           : r.scaling == "longrope"
                               ? " = sqrt(1 + ln(max_position_embeddings / "
                                 "original_max_position_embeddings) / "
                                 "ln(original_max_position_embeddings)) (give "
                                 "original_max_position_embeddings >= 2 or an attention_factor)"
                               : " from factor and mscale / mscale_all_dim"));
      }
    }
    if (hasChunk && !s.chunkedMask())
      fail("chunk", fmt::format("expected no chunk unless mask: chunked (or chunked+padding), "
                                "found mask: {}",
                                toString(s.mask)));
    if (!hasChunk && s.chunkedMask())
      fail("mask", fmt::format("expected a 'chunk' key (the chunk size, Llama 4's "
                               "attention_chunk_size) with mask: {}, found none",
                               toString(s.mask)));
    if (s.temperature && s.crossAttention)
      fail("temperature_tuning", "expected no temperature_tuning with cross_attention: "
                                 "true (it scales queries by their positions among the keys)");
    if (hasWindow && !s.slidingMask())
      fail("window", fmt::format("expected no window unless mask: sliding_window or "
                                 "bidirectional_window (or their +padding forms), found mask: {}",
                                 toString(s.mask)));
    if (!hasWindow && s.slidingMask())
      fail("mask", fmt::format("expected a 'window' key with mask: {}, found none",
                               toString(s.mask)));
    // (decode with cross_attention is refused as not built yet, below.)
    if (s.decode && !s.crossAttention && !s.causalMask())
      fail("decode", fmt::format("expected a causal mask (causal, causal+padding, "
                                 "sliding_window, chunked or their +padding forms) with "
                                 "decode: true, found mask: {}",
                                 toString(s.mask)));
    // Elements of every tensor the block's weights hold: what the loader
    // counts (libattnrt's storageLayout; SpecTests checks that the two
    // agree), so a spec that compiles is a library that loads.
    const int64_t h = s.heads, kv = s.kvHeads, dh = s.headDim, d = s.dModel;
    const int64_t qkv = (h + 2 * kv) * dh * d; // each factor <= 2^16: no overflow
    const int64_t o = s.outProj ? h * dh * d : 0;
    int64_t rest = 0;
    if (s.weights == WeightLayout::Separate) {
      rest += (s.hasBias('q') ? h * dh : 0) + (s.hasBias('k') ? kv * dh : 0) +
              (s.hasBias('v') ? kv * dh : 0);
      if (s.qkNorm != Spec::QkNorm::None && !s.qkNormNoWeight) {
        const bool wide = s.qkNorm == Spec::QkNorm::Projection || s.qkNormPerHead;
        rest += (wide ? (h + kv) * dh : 2 * dh) * (s.qkNormBias ? 2 : 1);
      }
      rest += (s.sinks ? h : 0) + s.t5Buckets * h +
              (s.relKeyPositions ? (2 * s.relKeyPositions - 1) * dh : 0);
    } else if (s.hasBias('q')) {
      rest += (h + 2 * kv) * dh;
    }
    if (s.outProj && s.hasBias('o'))
      rest += d;
    const int64_t elems = qkv + o + rest;
    if (elems >= limits::kMaxWeightElements)
      fail("d_model",
           fmt::format("expected fewer than 2^31 weight elements in the block's "
                       "tensors, found {}: (heads + 2*kv_heads) * head_dim * d_model = "
                       "({} + 2*{}) * {} * {} = {} for Q/K/V{}, {} in biases and tables",
                       elems, h, kv, dh, d, qkv,
                       s.outProj ? fmt::format(", heads * head_dim * d_model = {} for W_O", o)
                                 : std::string(),
                       rest));
  }
};

} // namespace

/// Rejects line breaks that are a CR alone (classic Mac OS): yaml-cpp
/// would read the whole file as one line and report something unrelated.
void checkLineEndings(const std::string &text, const std::string &file) {
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'))
      throw SpecError{locatedMsg(
          file, posOfOffset(text, i), "",
          "the file uses CR line endings (a carriage return without a line "
          "feed, as classic Mac OS wrote them): expected LF or CRLF; convert "
          "it, for example with tr '\\r' '\\n'")};
}

SpecResult parseSpecString(const std::string &withBom, const std::string &file) {
  SpecResult result;
  try {
    checkText(withBom, file);
    // A UTF-8 byte order mark is not part of the text: without it, columns
    // on the first line count characters as an editor shows them.
    const bool bom = withBom.compare(0, 3, "\xef\xbb\xbf") == 0;
    const std::string stripped = bom ? withBom.substr(3) : std::string();
    const std::string &text = bom ? stripped : withBom;
    checkLineEndings(text, file);
    checkTabs(text, file);
    std::istringstream in(text);
    TreeBuilder builder(text, file);
    try {
      YAML::Parser parser(in);
      while (parser.HandleNextDocument(builder)) {
      }
    } catch (const YAML::Exception &e) {
      std::string msg = e.msg;
      // Name the opening bracket yaml-cpp gave up on.
      for (auto it = builder.stack.rbegin(); it != builder.stack.rend(); ++it) {
        bool seqMsg = msg.find("sequence flow") != std::string::npos;
        bool mapMsg = msg.find("map flow") != std::string::npos;
        if ((seqMsg && (*it)->kind == YNode::Seq) ||
            (mapMsg && (*it)->kind == YNode::Map)) {
          SrcPos open = toPos((*it)->mark);
          msg += fmt::format(" (the '{}' at {}:{} is never closed)",
                             seqMsg ? '[' : '{', open.line, open.col);
          break;
        }
      }
      throw SpecError{
          locatedMsg(file, toPos(e.mark), "", "malformed YAML: " + msg)};
    }
    SpecBuilder specBuilder(file);
    result.spec = specBuilder.build(builder.root.get());
  } catch (const SpecError &e) {
    result.spec.reset();
    result.error = e.message;
  } catch (const std::bad_alloc &) {
    result.spec.reset();
    result.error = file + ": error: out of memory while reading the spec";
  } catch (const std::exception &e) {
    result.spec.reset();
    result.error = file + ": error: " + e.what();
  } catch (...) {
    result.spec.reset();
    result.error = file + ": error: unexpected failure while reading the spec";
  }
  return result;
}

SpecResult parseSpecFile(const std::string &path) {
  SpecResult result;
  try {
    // Only regular files, opened without blocking: a FIFO or a device
    // could hang the compile or never end.
    std::string text, why;
    uint64_t size = 0;
    if (!attnrt::readRegularFile(path, kMaxSpecBytes, text, why, &size)) {
      if (size > kMaxSpecBytes)
        result.error = locatedMsg(
            path, {1, 1}, "",
            fmt::format("expected a spec of at most 1 MiB, found {} bytes", size));
      else if (path == "-" && size == 0)
        result.error = "-: error: cannot read file: a spec is read from a file, not from "
                       "standard input (write it to a .yaml file)";
      else
        result.error = fmt::format(
            "{}: error: cannot read file: {}", path,
            why.rfind("cannot open: ", 0) == 0 ? why.substr(13) : why);
      return result;
    }
    return parseSpecString(text, path);
  } catch (const std::exception &e) {
    result.spec.reset();
    result.error = path + ": error: " + e.what();
  } catch (...) {
    result.spec.reset();
    result.error = path + ": error: unexpected failure while reading the spec";
  }
  return result;
}

} // namespace attnc
