//===- Json.h - A small JSON parser for safetensors headers -----*- C++ -*-===//
//
// Enough JSON for a safetensors header: objects (fields kept in order, so
// duplicate keys stay visible), arrays, strings with every escape and
// surrogate pairs, numbers (integers kept exact), true/false/null, nesting
// up to 64 levels. Internal to libattnrt.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_LIB_JSON_H
#define ATTNC_RUNTIME_LIB_JSON_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attnrt {
namespace tensorfile {

struct Json {
  enum Type { Null, Bool, Number, String, Array, Object } type = Null;
  std::string str;
  double num = 0;
  bool isInt = false;
  int64_t intValue = 0;
  std::vector<Json> items;                          // Array
  std::vector<std::pair<std::string, Json>> fields; // Object, in order
};

/// Parses `text` (one JSON value and nothing after it but whitespace).
/// On failure returns false with `why` ("expected ',' or '}' at byte 57").
bool parseJson(const std::string &text, Json &out, std::string &why);

} // namespace tensorfile
} // namespace attnrt

#endif // ATTNC_RUNTIME_LIB_JSON_H
