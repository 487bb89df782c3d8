//===- Npy.cpp - float32 .npy reading and writing ---------------*- C++ -*-===//
//
// A small, strict reader and writer for NumPy's .npy format: versions 1.0,
// 2.0 and 3.0 headers, dtype '<f4', C order only. Everything else is rejected
// with a message that names the file and says what was expected and what was
// found.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Runtime.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace attnrt {

namespace {

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

/// A cursor over the header's Python-literal dict, e.g.
///   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text_(text) {}

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool atEnd() {
    skipSpace();
    return pos_ >= text_.size();
  }

  /// Consumes `c` (after whitespace) if it is next.
  bool accept(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  char peek() {
    skipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }

  /// Parses a '...' or "..." literal without escapes.
  bool parseString(std::string &out) {
    skipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return false;
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string::npos)
      return false;
    out = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }

  /// Parses an identifier-like word (True, False, ...).
  std::string parseWord() {
    skipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
            text_[pos_] == '_'))
      ++pos_;
    return text_.substr(start, pos_ - start);
  }

  /// Parses a non-negative decimal integer (Python may append 'L').
  bool parseDim(int64_t &out) {
    skipSpace();
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      int digit = text_[pos_] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return false;
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ == start)
      return false;
    if (pos_ < text_.size() && text_[pos_] == 'L')
      ++pos_;
    out = v;
    return true;
  }

  /// Parses a shape tuple: (), (n,), (a, b, c) with an optional trailing
  /// comma.
  bool parseShape(std::vector<int64_t> &shape, std::string &why) {
    shape.clear();
    if (!accept('(')) {
      why = "expected a tuple";
      return false;
    }
    if (accept(')'))
      return true;
    while (true) {
      int64_t dim;
      if (peek() == '-') {
        why = "negative dimension";
        return false;
      }
      if (!parseDim(dim)) {
        why = "expected a non-negative integer dimension";
        return false;
      }
      shape.push_back(dim);
      if (accept(')'))
        break;
      if (!accept(',')) {
        why = "expected ',' or ')'";
        return false;
      }
      if (accept(')'))
        break;
    }
    // "(n)" (a parenthesized integer in Python) is accepted as "(n,)".
    return true;
  }

private:
  const std::string &text_;
  size_t pos_ = 0;
};

uint32_t readLE32(const unsigned char *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}

void writeLE32(unsigned char *p, uint32_t v) {
  p[0] = static_cast<unsigned char>(v);
  p[1] = static_cast<unsigned char>(v >> 8);
  p[2] = static_cast<unsigned char>(v >> 16);
  p[3] = static_cast<unsigned char>(v >> 24);
}

bool fail(std::string &message, const std::string &name,
          const std::string &what) {
  message = name + ": " + what;
  return false;
}

/// Multiplies the dims, returning false on overflow of the byte count.
bool elementCount(const std::vector<int64_t> &shape, int64_t &count) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return false;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 4 / d)
      return false;
    n *= d;
  }
  count = n;
  return true;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

} // namespace

bool parseNpy(const std::string &bytes, const std::string &name, NpyArray &out,
              std::string &message) {
  out = NpyArray();
  const auto *u = reinterpret_cast<const unsigned char *>(bytes.data());
  if (bytes.size() < kMagicLen + 2 ||
      std::memcmp(bytes.data(), kMagic, kMagicLen) != 0)
    return fail(message, name,
                "not a .npy file (bad magic: expected '\\x93NUMPY')");
  unsigned major = u[6], minor = u[7];
  size_t lenBytes;
  if (major == 1)
    lenBytes = 2;
  else if (major == 2 || major == 3)
    lenBytes = 4;
  else
    return fail(message, name,
                "unsupported .npy format version " + std::to_string(major) +
                    "." + std::to_string(minor) +
                    " (expected 1.0, 2.0 or 3.0)");
  size_t prefix = kMagicLen + 2 + lenBytes;
  if (bytes.size() < prefix)
    return fail(message, name, "truncated header (file ends in the preamble)");
  size_t headerLen =
      lenBytes == 2 ? size_t(u[8]) | size_t(u[9]) << 8 : readLE32(u + 8);
  if (bytes.size() - prefix < headerLen)
    return fail(message, name,
                "truncated header: header length is " +
                    std::to_string(headerLen) + " bytes but only " +
                    std::to_string(bytes.size() - prefix) + " follow");
  std::string header = bytes.substr(prefix, headerLen);

  // Parse the dict.
  HeaderParser p(header);
  std::string descr;
  bool haveDescr = false, haveFortran = false, haveShape = false;
  bool fortran = false;
  std::vector<int64_t> shape;
  if (!p.accept('{'))
    return fail(message, name, "malformed header: expected '{'");
  while (!p.accept('}')) {
    std::string key;
    if (!p.parseString(key))
      return fail(message, name, "malformed header: expected a quoted key");
    if (!p.accept(':'))
      return fail(message, name,
                  "malformed header: expected ':' after '" + key + "'");
    if (key == "descr") {
      if (p.peek() == '[')
        return fail(message, name,
                    "expected float32 ('<f4'), found a structured dtype");
      if (!p.parseString(descr))
        return fail(message, name, "malformed header: 'descr' is not a string");
      haveDescr = true;
    } else if (key == "fortran_order") {
      std::string w = p.parseWord();
      if (w == "True")
        fortran = true;
      else if (w == "False")
        fortran = false;
      else
        return fail(message, name,
                    "malformed header: 'fortran_order' must be True or "
                    "False, found '" +
                        w + "'");
      haveFortran = true;
    } else if (key == "shape") {
      std::string why;
      if (!p.parseShape(shape, why))
        return fail(message, name, "malformed header: bad 'shape': " + why);
      haveShape = true;
    } else {
      return fail(message, name,
                  "malformed header: unexpected key '" + key + "'");
    }
    if (!p.accept(',')) {
      if (!p.accept('}'))
        return fail(message, name, "malformed header: expected ',' or '}'");
      break;
    }
  }
  if (!p.atEnd())
    return fail(message, name, "malformed header: text after the dict");
  if (!haveDescr || !haveFortran || !haveShape)
    return fail(message, name,
                std::string("malformed header: missing key '") +
                    (!haveDescr     ? "descr"
                     : !haveFortran ? "fortran_order"
                                    : "shape") +
                    "'");
  if (descr != "<f4")
    return fail(message, name,
                "expected float32 ('<f4'), found '" + descr + "'");
  if (fortran)
    return fail(message, name,
                "Fortran-order arrays are not supported (fortran_order is "
                "True; save a C-contiguous array)");

  int64_t count;
  if (!elementCount(shape, count))
    return fail(message, name, "shape " + shapeString(shape) + " is too large");
  size_t dataBytes = bytes.size() - prefix - headerLen;
  uint64_t want = uint64_t(count) * 4;
  if (dataBytes < want)
    return fail(message, name,
                "truncated data: shape " + shapeString(shape) + " needs " +
                    std::to_string(want) + " bytes, found " +
                    std::to_string(dataBytes));
  if (dataBytes > want)
    return fail(message, name,
                "size mismatch: shape " + shapeString(shape) + " needs " +
                    std::to_string(want) + " bytes of data, found " +
                    std::to_string(dataBytes) + " (trailing bytes)");

  out.shape = shape;
  out.data.resize(size_t(count));
  const unsigned char *src = u + prefix + headerLen;
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits = readLE32(src + 4 * i);
    std::memcpy(&out.data[size_t(i)], &bits, 4);
  }
  message.clear();
  return true;
}

bool readNpy(const std::string &path, NpyArray &out, std::string &message) {
  out = NpyArray();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(message, path,
                std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return fail(message, path, "read error");
  return parseNpy(ss.str(), path, out, message);
}

bool writeNpy(const std::string &path, const std::vector<int64_t> &shape,
              const float *data, std::string &message) {
  int64_t count;
  if (!elementCount(shape, count))
    return fail(message, path, "cannot write: bad shape " + shapeString(shape));
  if (count > 0 && !data)
    return fail(message, path, "cannot write: no data");

  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " +
                     shapeString(shape) + ", }";
  // Magic (6) + version (2) + length (2) + dict + padding + '\n' is a
  // multiple of 64.
  size_t total = 10 + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  if (padded - 10 > 0xffff)
    return fail(message, path, "cannot write: header too long");
  std::string header = dict + std::string(padded - total, ' ') + "\n";

  std::string bytes(kMagic, kMagicLen);
  bytes += char(1);
  bytes += char(0);
  bytes += char(header.size() & 0xff);
  bytes += char((header.size() >> 8) & 0xff);
  bytes += header;

  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return fail(message, path,
                std::string("cannot open for writing: ") +
                    std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  // Encode little-endian in chunks.
  std::vector<unsigned char> buf;
  const int64_t chunk = 1 << 16;
  for (int64_t i = 0; ok && i < count; i += chunk) {
    int64_t n = std::min(chunk, count - i);
    buf.resize(size_t(n) * 4);
    for (int64_t j = 0; j < n; ++j) {
      uint32_t bits;
      std::memcpy(&bits, &data[i + j], 4);
      writeLE32(&buf[size_t(j) * 4], bits);
    }
    ok = std::fwrite(buf.data(), 1, buf.size(), f) == buf.size();
  }
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok)
    return fail(message, path,
                std::string("write error: ") + std::strerror(err));
  message.clear();
  return true;
}

} // namespace attnrt
