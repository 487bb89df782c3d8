//===- Json.cpp - A small JSON parser for safetensors headers ---*- C++ -*-===//
//
// Recursive descent over the header text with a depth limit; positions in
// messages are byte offsets into the header.
//
//===----------------------------------------------------------------------===//

#include "Json.h"
#include "attnc/runtime/Checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace attnrt {
namespace tensorfile {

namespace {

class JsonParser {
public:
  JsonParser(const std::string &s, const JsonLimits &limits) : s_(s), limits_(limits) {}
  bool parse(Json &out, std::string &why) { return finish(value(out, 0), false, why); }
  /// The byte of the last parse's error (where it stopped).
  size_t position() const { return why_.empty() ? pos_ : errPos_; }
  /// The last error without its location.
  const std::string &reason() const { return why_; }

  /// The top-level object entry by entry (parseJsonObjectEntries).
  bool entries(const std::function<bool(const std::string &, const Json &)> &entry,
               std::string &why, bool &stopped) {
    stopped = false;
    ws();
    bool ok = pos_ < s_.size() && s_[pos_] == '{'
                  ? object(0, [&](std::string &&key, Json &&item) {
                      used_ = 0; // the budget is per entry: this one is gone next
                      stopped = !entry(key, item);
                      return !stopped;
                    })
                  : error("expected a JSON object");
    return finish(ok, stopped, why);
  }

private:
  /// The verdict of a whole parse: a located error, the caller's own stop
  /// (nothing to add), or text after the value.
  bool finish(bool ok, bool stopped, std::string &why) {
    if (!ok) {
      if (!stopped)
        why = why_ + " at byte " + std::to_string(pos_);
      return false;
    }
    ws();
    if (pos_ != s_.size()) {
      why = "text after the JSON object at byte " + std::to_string(pos_);
      return false;
    }
    return true;
  }

  /// `back`: how many bytes before pos_ the fault is (a character the
  /// string scanner has consumed).
  bool error(const char *w, size_t back = 0) {
    if (why_.empty()) {
      why_ = w;
      errPos_ = pos_ - std::min(back, pos_);
    }
    return false;
  }
  void ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' ||
                                s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool lit(const char *w) {
    size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0)
      return error("invalid literal");
    pos_ += n;
    return true;
  }
  bool hex4(uint32_t &v) {
    if (s_.size() - pos_ < 4)
      return error("truncated \\u escape");
    v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= uint32_t(c - 'A' + 10);
      else
        return error("bad \\u escape");
    }
    return true;
  }
  bool string(std::string &out) {
    ++pos_; // '"'
    while (true) {
      if (pos_ >= s_.size())
        return error("unterminated string");
      char c = s_[pos_++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return error("control character in a string", 1);
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size())
        return error("unterminated string");
      char e = s_[pos_++];
      switch (e) {
      case '"': case '\\': case '/': out += e; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xd800 && cp < 0xdc00) {
          uint32_t lo;
          if (s_.compare(pos_, 2, "\\u") != 0)
            return error("lone surrogate");
          pos_ += 2;
          if (!hex4(lo) || lo < 0xdc00 || lo > 0xdfff)
            return error("bad surrogate pair");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        if (cp < 0x80) {
          out += char(cp);
        } else if (cp < 0x800) {
          out += char(0xc0 | cp >> 6);
          out += char(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
          out += char(0xe0 | cp >> 12);
          out += char(0x80 | ((cp >> 6) & 0x3f));
          out += char(0x80 | (cp & 0x3f));
        } else {
          out += char(0xf0 | cp >> 18);
          out += char(0x80 | ((cp >> 12) & 0x3f));
          out += char(0x80 | ((cp >> 6) & 0x3f));
          out += char(0x80 | (cp & 0x3f));
        }
        break;
      }
      default:
        return error("bad escape in a string", 2); // (at its backslash)
      }
    }
  }
  bool number(Json &v) {
    size_t start = pos_;
    if (s_[pos_] == '-')
      ++pos_;
    bool integral = true;
    while (pos_ < s_.size() &&
           (std::isdigit(static_cast<unsigned char>(s_[pos_])) ||
            s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E' ||
            s_[pos_] == '+' || s_[pos_] == '-')) {
      if (!std::isdigit(static_cast<unsigned char>(s_[pos_])))
        integral = false;
      ++pos_;
    }
    std::string t = s_.substr(start, pos_ - start);
    if (t.empty() || t == "-")
      return error("bad number");
    v.type = Json::Number;
    char *end = nullptr;
    errno = 0;
    v.num = std::strtod(t.c_str(), &end);
    if (*end)
      return error("bad number");
    if (integral) {
      errno = 0;
      long long i = std::strtoll(t.c_str(), &end, 10);
      if (errno == 0 && !*end) {
        v.isInt = true;
        v.intValue = i;
      }
    }
    return true;
  }
  /// The object at pos_ (its '{'): each field's value parsed at depth + 1
  /// and handed to `field(key, value)`, which returns false to stop.
  template <typename Field> bool object(int depth, Field &&field) {
    ++pos_; // '{'
    ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      ws();
      if (pos_ >= s_.size() || s_[pos_] != '"')
        return error("expected a quoted key");
      std::string key;
      if (!string(key) || !charge(2 * sizeof(std::pair<std::string, Json>) + key.size()))
        return false;
      ws();
      if (pos_ >= s_.size() || s_[pos_] != ':')
        return error("expected ':'");
      ++pos_;
      Json item;
      if (!value(item, depth + 1) || !field(std::move(key), std::move(item)))
        return false;
      ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return error("expected ',' or '}'");
    }
  }
  /// Counts `bytes` against the memory budget.
  bool charge(uint64_t bytes) {
    used_ += bytes;
    if (used_ <= limits_.maxBytes)
      return true;
    budgetWhy_ = "the parsed tree would take more than " +
                 std::to_string(limits_.maxBytes) + " bytes of memory";
    return error(budgetWhy_.c_str());
  }
  bool value(Json &v, int depth) {
    if (depth > limits_.maxDepth) {
      depthWhy_ = "nested deeper than " + std::to_string(limits_.maxDepth) + " levels";
      return error(depthWhy_.c_str());
    }
    if (!charge(2 * sizeof(Json)))
      return false;
    ws();
    if (pos_ >= s_.size())
      return error("unexpected end");
    char c = s_[pos_];
    if (c == '{') {
      v.type = Json::Object;
      return object(depth, [&](std::string &&key, Json &&item) {
        v.fields.emplace_back(std::move(key), std::move(item));
        return true;
      });
    }
    if (c == '[') {
      v.type = Json::Array;
      ++pos_;
      ws();
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      while (true) {
        Json item;
        if (!value(item, depth + 1))
          return false;
        v.items.push_back(std::move(item));
        ws();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < s_.size() && s_[pos_] == ']') {
          ++pos_;
          return true;
        }
        return error("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v.type = Json::String;
      return string(v.str) && charge(v.str.size());
    }
    if (c == 't' || c == 'f') {
      v.type = Json::Bool;
      v.num = c == 't' ? 1 : 0;
      return lit(c == 't' ? "true" : "false");
    }
    if (c == 'n')
      return lit("null");
    if (limits_.pythonConstants) { // NaN, Infinity, -Infinity (Python's json)
      for (const char *w : {"NaN", "Infinity", "-Infinity"})
        if (s_.compare(pos_, std::strlen(w), w) == 0) {
          v.type = Json::Number;
          v.num = w[0] == 'N' ? std::nan("") : w[0] == '-' ? -HUGE_VAL : HUGE_VAL;
          return lit(w);
        }
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c)))
      return number(v);
    return error("unexpected character");
  }

  const std::string &s_;
  JsonLimits limits_;
  size_t pos_ = 0, errPos_ = 0;
  uint64_t used_ = 0;
  std::string why_, budgetWhy_, depthWhy_;
};

} // namespace

bool parseJson(const std::string &text, Json &out, std::string &why,
               const JsonLimits &limits) {
  return JsonParser(text, limits).parse(out, why);
}

bool parseJsonObjectEntries(
    const std::string &text, const std::function<bool(const std::string &, const Json &)> &entry,
    std::string &why, const JsonLimits &limits) {
  bool stopped = false;
  bool ok = JsonParser(text, limits).entries(entry, why, stopped);
  if (stopped)
    why.clear();
  return ok;
}

} // namespace tensorfile
} // namespace attnrt

bool attnrt::checkJson(const std::string &text, std::string &why, uint64_t &errorByte) {
  tensorfile::JsonLimits limits;
  limits.maxBytes = uint64_t(64) << 20;
  limits.pythonConstants = true;
  tensorfile::JsonParser p(text, limits);
  tensorfile::Json tree;
  std::string located;
  if (p.parse(tree, located))
    return true;
  errorByte = p.position();
  why = p.reason().empty() ? "text after the JSON value" : p.reason();
  return false;
}
