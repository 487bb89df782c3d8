//===- JsonValue.h - attnc-run's --json output ------------------*- C++ -*-===//
//
// A small JSON value (null, bool, integer, number, string, array, object
// with its keys in insertion order) and its serialization, for the one
// object `attnc-run --json` prints (docs/json.md). Integers stay int64
// (never rounded through a double); a non-finite number is written as
// null, since JSON has no NaN or infinity; strings are escaped per RFC 8259
// (control characters as \u00XX, invalid UTF-8 bytes as U+FFFD).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TOOLS_ATTNC_RUN_JSONVALUE_H
#define ATTNC_TOOLS_ATTNC_RUN_JSONVALUE_H

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace attncrun {

class JsonValue {
public:
  enum Kind { Null, Bool, Int, Number, String, Array, Object };

  JsonValue() = default;
  JsonValue(std::nullptr_t) {}
  JsonValue(bool b) : kind_(Bool), b_(b) {}
  JsonValue(int v) : kind_(Int), i_(v) {}
  JsonValue(unsigned v) : kind_(Int), i_(v) {}
  JsonValue(long v) : kind_(Int), i_(v) {}
  JsonValue(long long v) : kind_(Int), i_(v) {}
  JsonValue(unsigned long v) : kind_(Int), i_(static_cast<long long>(v)) {}
  JsonValue(unsigned long long v) : kind_(Int), i_(static_cast<long long>(v)) {}
  JsonValue(double v) : kind_(Number), d_(v) {}
  JsonValue(const char *s) : kind_(s ? String : Null), s_(s ? s : "") {}
  JsonValue(std::string s) : kind_(String), s_(std::move(s)) {}

  static JsonValue array() {
    JsonValue v;
    v.kind_ = Array;
    return v;
  }
  static JsonValue object() {
    JsonValue v;
    v.kind_ = Object;
    return v;
  }
  /// An array of integers (shapes, lengths).
  template <typename T> static JsonValue ints(const std::vector<T> &xs) {
    JsonValue a = array();
    for (T x : xs)
      a.push(static_cast<long long>(x));
    return a;
  }

  Kind kind() const { return kind_; }

  /// Appends to an array.
  JsonValue &push(JsonValue v) {
    items_.push_back(std::move(v));
    return *this;
  }
  /// Sets `key` of an object (replacing an earlier value, keeping its
  /// place).
  JsonValue &set(const std::string &key, JsonValue v) {
    for (auto &f : fields_)
      if (f.first == key) {
        f.second = std::move(v);
        return *this;
      }
    fields_.emplace_back(key, std::move(v));
    return *this;
  }

  /// The document, indented by two spaces per level, ending in a newline
  /// at the top level.
  std::string dump() const {
    std::string out;
    write(out, 0);
    out += '\n';
    return out;
  }

private:
  static void quote(std::string &out, const std::string &s) {
    out += '"';
    for (size_t i = 0; i < s.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\t': out += "\\t"; continue;
      case '\r': out += "\\r"; continue;
      default: break;
      }
      if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
        continue;
      }
      if (c < 0x80) {
        out += char(c);
        continue;
      }
      // A well-formed UTF-8 sequence is copied; anything else becomes
      // U+FFFD (a path may hold any bytes).
      size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
      if (c >= 0xf5)
        len = 0;
      bool ok = len > 0 && i + len <= s.size();
      for (size_t k = 1; ok && k < len; ++k)
        ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      if (ok) { // no overlong forms, surrogates or code points past U+10FFFF
        const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
        ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0) &&
             !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
      }
      if (ok) {
        out.append(s, i, len);
        i += len - 1;
      } else {
        out += "\xef\xbf\xbd";
      }
    }
    out += '"';
  }

  /// The shortest decimal form that reads back as the same double
  /// (std::to_chars without a precision: 0.1890079379081726, not the 17
  /// digits of %.17g).
  static std::string number(double v) {
    if (!std::isfinite(v))
      return "null";
    char buf[40];
    std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }

  void write(std::string &out, int depth) const {
    const std::string pad(size_t(2 * (depth + 1)), ' '), end(size_t(2 * depth), ' ');
    switch (kind_) {
    case Null: out += "null"; return;
    case Bool: out += b_ ? "true" : "false"; return;
    case Int: out += std::to_string(i_); return;
    case Number: out += number(d_); return;
    case String: quote(out, s_); return;
    case Array: {
      if (items_.empty()) {
        out += "[]";
        return;
      }
      // Arrays of scalars on one line (shapes, lengths, lists of names).
      bool flat = true;
      for (const JsonValue &v : items_)
        flat = flat && v.kind_ != Array && v.kind_ != Object;
      out += '[';
      for (size_t i = 0; i < items_.size(); ++i) {
        out += i ? (flat ? ", " : ",\n") : (flat ? "" : "\n");
        if (!flat)
          out += pad;
        items_[i].write(out, depth + 1);
      }
      out += flat ? "]" : "\n" + end + "]";
      return;
    }
    case Object: {
      if (fields_.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      for (size_t i = 0; i < fields_.size(); ++i) {
        out += pad;
        quote(out, fields_[i].first);
        out += ": ";
        fields_[i].second.write(out, depth + 1);
        out += i + 1 < fields_.size() ? ",\n" : "\n";
      }
      out += end + "}";
      return;
    }
    }
  }

  Kind kind_ = Null;
  bool b_ = false;
  long long i_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> fields_;
};

} // namespace attncrun

#endif // ATTNC_TOOLS_ATTNC_RUN_JSONVALUE_H
