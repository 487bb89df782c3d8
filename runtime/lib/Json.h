//===- Json.h - A small JSON parser for safetensors headers -----*- C++ -*-===//
//
// Enough JSON for a safetensors header: objects (fields kept in order, so
// duplicate keys stay visible), arrays, strings with every escape and
// surrogate pairs, numbers (integers kept exact), true/false/null, with
// limits on nesting and on the memory the tree may take. Internal to
// libattnrt.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_LIB_JSON_H
#define ATTNC_RUNTIME_LIB_JSON_H

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace attnrt {
namespace tensorfile {

struct Json {
  enum Type { Null, Bool, Number, String, Array, Object } type = Null;
  std::string str;
  double num = 0; // Number; Bool: 1 for true, 0 for false
  bool isInt = false;
  int64_t intValue = 0;
  std::vector<Json> items;                          // Array
  std::vector<std::pair<std::string, Json>> fields; // Object, in order
};

/// What a parse may cost: nesting depth, and an estimate of the memory the
/// tree takes (every value's node, counted twice for vector growth, plus
/// its strings), checked as it grows: a hostile text is refused as soon as
/// it passes the budget, not after it has been allocated.
struct JsonLimits {
  int maxDepth = 64;
  uint64_t maxBytes = UINT64_MAX;
  /// Also NaN, Infinity and -Infinity, which Python's json reads and
  /// writes (config.json; never a safetensors header).
  bool pythonConstants = false;
};

/// Parses `text` (one JSON value and nothing after it but whitespace).
/// On failure returns false with `why` ("expected ',' or '}' at byte 57",
/// "nested deeper than 8 levels at byte 9", "the parsed tree would take
/// more than N bytes of memory at byte 5123").
bool parseJson(const std::string &text, Json &out, std::string &why,
               const JsonLimits &limits = JsonLimits());

/// Parses `text`, one JSON object, one entry at a time: each value is
/// parsed (within `limits`, the memory budget counted per entry), handed to
/// `entry(key, value)` and dropped, so the whole tree never exists at once.
/// `entry` returns false to stop (its own error); parse errors come back
/// as false with `why`, as parseJson.
bool parseJsonObjectEntries(
    const std::string &text, const std::function<bool(const std::string &, const Json &)> &entry,
    std::string &why, const JsonLimits &limits = JsonLimits());

} // namespace tensorfile
} // namespace attnrt

#endif // ATTNC_RUNTIME_LIB_JSON_H
