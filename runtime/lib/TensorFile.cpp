//===- TensorFile.cpp - Named tensors in .npy/.npz/.safetensors -*- C++ -*-===//
//
// Three readers behind one listing: .npy headers (any float dtype, either
// byte order, C or Fortran order), zip archives as np.savez writes them
// (central directory, zip64 records, stored and deflate entries, CRC-32;
// inflated with zlib) and safetensors (an 8-byte header length, a JSON
// header parsed by the small parser below, raw little-endian data). Sizes
// come from untrusted files, so each one is checked against the file size
// and for overflow before anything is allocated or read.
//
//===----------------------------------------------------------------------===//

#include "TensorFile.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <limits>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

namespace attnrt {
namespace tensorfile {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the weight readers assume a little-endian host");

namespace {

/// Largest header we parse (safetensors' own limit is 100 MB).
constexpr uint64_t kMaxHeader = 100u << 20;
/// Bytes read or inflated up front to find a .npy header.
constexpr uint64_t kNpyProbe = 1u << 16;

int fail(std::string &err, const std::string &file, const std::string &what,
         int code = ErrFormat) {
  err = file + ": " + what;
  return code;
}

uint64_t le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

/// A read-only file with bounds-checked positional reads.
class File {
public:
  ~File() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int open(const std::string &path, std::string &err) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd_ < 0 || ::fstat(fd_, &st) != 0)
      return fail(err, path, std::string("cannot open: ") + std::strerror(errno),
                  ErrIo);
    if (!S_ISREG(st.st_mode))
      return fail(err, path, "not a regular file", ErrIo);
    size_ = static_cast<uint64_t>(st.st_size);
    return Ok;
  }
  uint64_t size() const { return size_; }
  /// Reads [off, off + n); fails (with `what` in the message) when that is
  /// not inside the file.
  int read(uint64_t off, uint64_t n, void *dst, std::string &err,
           const std::string &what) const {
    if (off > size_ || n > size_ - off)
      return fail(err, path_,
                  what + ": bytes [" + std::to_string(off) + ", " +
                      std::to_string(off) + " + " + std::to_string(n) +
                      ") are beyond the end of the file (" +
                      std::to_string(size_) + " bytes; truncated?)");
    auto *d = static_cast<char *>(dst);
    while (n > 0) {
      ssize_t r = ::pread(fd_, d, n, static_cast<off_t>(off));
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return fail(err, path_, what + ": read error", ErrIo);
      d += r;
      off += static_cast<uint64_t>(r);
      n -= static_cast<uint64_t>(r);
    }
    return Ok;
  }

private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Element count of `shape`, false when it overflows 2^62 / 8 (no file we
/// can read holds that much).
bool elementCount(const std::vector<int64_t> &shape, int64_t &n) {
  n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return false;
    if (d != 0 && n > (int64_t(1) << 59) / d)
      return false;
    n *= d;
  }
  return true;
}

size_t itemSize(DType t) {
  switch (t) {
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F32:
    return 4;
  case DType::F64:
    return 8;
  default:
    return 0;
  }
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13); // inf / nan
  } else if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { // subnormal: normalize
      int e = -1;
      do {
        man <<= 1;
        ++e;
      } while (!(man & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Converts n elements at `src` to float32. Returns false when a finite
/// float64 value does not fit in float32.
bool convert(const unsigned char *src, DType t, bool bigEndian, int64_t n,
             float *dst) {
  size_t w = itemSize(t);
  unsigned char tmp[8];
  for (int64_t i = 0; i < n; ++i) {
    const unsigned char *p = src + size_t(i) * w;
    if (bigEndian) {
      for (size_t b = 0; b < w; ++b)
        tmp[b] = p[w - 1 - b];
      p = tmp;
    }
    switch (t) {
    case DType::F16:
      dst[i] = halfToFloat(uint16_t(le(p, 2)));
      break;
    case DType::BF16: {
      uint32_t bits = uint32_t(le(p, 2)) << 16;
      std::memcpy(&dst[i], &bits, 4);
      break;
    }
    case DType::F32:
      std::memcpy(&dst[i], p, 4);
      break;
    case DType::F64: {
      double d;
      std::memcpy(&d, p, 8);
      dst[i] = static_cast<float>(d);
      if (std::isfinite(d) && !std::isfinite(dst[i]))
        return false;
      break;
    }
    default:
      return false;
    }
  }
  return true;
}

/// The Fortran-order (column-major) rank-2 data in `t` to C order.
void fortranToC(Tensor &t) {
  if (t.shape.size() != 2)
    return;
  int64_t r = t.shape[0], c = t.shape[1];
  std::vector<float> out(t.data.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j)
      out[size_t(i * c + j)] = t.data[size_t(j * r + i)];
  t.data.swap(out);
}

//===----------------------------------------------------------------------===//
// .npy headers
//===----------------------------------------------------------------------===//

struct NpyHeader {
  size_t dataStart = 0;
  std::string descr;
  DType dtype = DType::Unsupported;
  bool bigEndian = false, fortran = false;
  std::vector<int64_t> shape;
};

/// Parses the magic, version and header dict at the start of `b` (n bytes
/// of the file, possibly only its beginning). `where` names the tensor in
/// messages ("FILE: TENSOR").
int parseNpyHeader(const unsigned char *b, size_t n, const std::string &where,
                   NpyHeader &h, std::string &err) {
  if (n < 10 || std::memcmp(b, "\x93NUMPY", 6) != 0)
    return fail(err, where, "not a .npy array (bad magic)");
  size_t lenBytes = b[6] == 1 ? 2 : (b[6] == 2 || b[6] == 3) ? 4 : 0;
  if (!lenBytes)
    return fail(err, where,
                "unsupported .npy version " + std::to_string(b[6]) + "." +
                    std::to_string(b[7]));
  if (n < 8 + lenBytes)
    return fail(err, where, "truncated .npy header");
  uint64_t hl = le(b + 8, int(lenBytes));
  if (hl > n - 8 - lenBytes)
    return fail(err, where,
                "truncated .npy header (" + std::to_string(hl) +
                    " header bytes announced)");
  h.dataStart = 8 + lenBytes + size_t(hl);
  std::string s(reinterpret_cast<const char *>(b) + 8 + lenBytes, size_t(hl));
  // The dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
  size_t i = 0;
  auto ws = [&] {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
  };
  auto eat = [&](char c) {
    ws();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  auto str = [&](std::string &out) {
    ws();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"'))
      return false;
    size_t e = s.find(s[i], i + 1);
    if (e == std::string::npos)
      return false;
    out = s.substr(i + 1, e - i - 1);
    i = e + 1;
    return true;
  };
  bool haveDescr = false, haveShape = false;
  if (!eat('{'))
    return fail(err, where, "malformed .npy header: expected '{'");
  while (!eat('}')) {
    std::string key;
    if (!str(key) || !eat(':'))
      return fail(err, where, "malformed .npy header: expected 'key':");
    if (key == "descr") {
      if (!str(h.descr))
        return fail(err, where,
                    "unsupported dtype (structured); expected a float array");
      haveDescr = true;
    } else if (key == "fortran_order") {
      ws();
      if (s.compare(i, 4, "True") == 0) {
        h.fortran = true;
        i += 4;
      } else if (s.compare(i, 5, "False") == 0) {
        i += 5;
      } else {
        return fail(err, where, "malformed .npy header: bad fortran_order");
      }
    } else if (key == "shape") {
      if (!eat('('))
        return fail(err, where, "malformed .npy header: shape is not a tuple");
      while (!eat(')')) {
        ws();
        int64_t v = 0;
        size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
          if (v > (std::numeric_limits<int64_t>::max() - 9) / 10)
            return fail(err, where, "malformed .npy header: dimension too large");
          v = v * 10 + (s[i++] - '0');
        }
        if (i == start)
          return fail(err, where, "malformed .npy header: bad dimension");
        if (i < s.size() && s[i] == 'L')
          ++i;
        h.shape.push_back(v);
        if (!eat(',')) {
          if (!eat(')'))
            return fail(err, where, "malformed .npy header: bad shape tuple");
          break;
        }
      }
      haveShape = true;
    } else {
      return fail(err, where, "malformed .npy header: unknown key '" + key + "'");
    }
    if (!eat(',')) {
      if (!eat('}'))
        return fail(err, where, "malformed .npy header: expected ',' or '}'");
      break;
    }
  }
  if (!haveDescr || !haveShape)
    return fail(err, where, "malformed .npy header: no descr or shape");
  const std::string &d = h.descr;
  if (d.size() == 3 && (d[0] == '<' || d[0] == '>' || d[0] == '=') &&
      d[1] == 'f') {
    h.bigEndian = d[0] == '>';
    h.dtype = d[2] == '2'   ? DType::F16
              : d[2] == '4' ? DType::F32
              : d[2] == '8' ? DType::F64
                            : DType::Unsupported;
  }
  return Ok;
}

//===----------------------------------------------------------------------===//
// A small JSON parser (safetensors headers)
//===----------------------------------------------------------------------===//

struct Json {
  enum Type { Null, Bool, Number, String, Array, Object } type = Null;
  std::string str;
  double num = 0;
  bool isInt = false;
  int64_t intValue = 0;
  std::vector<Json> items;                          // Array
  std::vector<std::pair<std::string, Json>> fields; // Object, in order
};

class JsonParser {
public:
  explicit JsonParser(const std::string &s) : s_(s) {}
  bool parse(Json &out, std::string &why) {
    if (!value(out, 0)) {
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

private:
  bool error(const char *w) {
    if (why_.empty())
      why_ = w;
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
        return error("control character in a string");
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
        return error("bad escape in a string");
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
  bool value(Json &v, int depth) {
    if (depth > 64)
      return error("nested too deeply");
    ws();
    if (pos_ >= s_.size())
      return error("unexpected end");
    char c = s_[pos_];
    if (c == '{') {
      v.type = Json::Object;
      ++pos_;
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
        if (!string(key))
          return false;
        ws();
        if (pos_ >= s_.size() || s_[pos_] != ':')
          return error("expected ':'");
        ++pos_;
        Json item;
        if (!value(item, depth + 1))
          return false;
        v.fields.emplace_back(std::move(key), std::move(item));
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
      return string(v.str);
    }
    if (c == 't' || c == 'f') {
      v.type = Json::Bool;
      return lit(c == 't' ? "true" : "false");
    }
    if (c == 'n')
      return lit("null");
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c)))
      return number(v);
    return error("unexpected character");
  }

  const std::string &s_;
  size_t pos_ = 0;
  std::string why_;
};

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

/// Byte width of a safetensors dtype; 0 when unknown.
size_t safetensorsWidth(const std::string &d, DType &t) {
  t = d == "F16"    ? DType::F16
      : d == "BF16" ? DType::BF16
      : d == "F32"  ? DType::F32
      : d == "F64"  ? DType::F64
                    : DType::Unsupported;
  static const std::map<std::string, size_t> widths = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},   {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2},  {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"I64", 8},  {"U64", 8},     {"F64", 8}};
  auto it = widths.find(d);
  return it == widths.end() ? 0 : it->second;
}

int listSafetensors(const std::string &path, std::vector<TensorRef> &out,
                    std::string &err) {
  File f;
  if (int rc = f.open(path, err))
    return rc;
  unsigned char lenBytes[8];
  if (f.size() < 8)
    return fail(err, path,
                "truncated safetensors file (" + std::to_string(f.size()) +
                    " bytes; the header length alone is 8)");
  if (int rc = f.read(0, 8, lenBytes, err, "header length"))
    return rc;
  uint64_t n = le(lenBytes, 8);
  if (n > f.size() - 8)
    return fail(err, path,
                "truncated safetensors file: header length " +
                    std::to_string(n) + " but only " +
                    std::to_string(f.size() - 8) + " bytes follow");
  if (n > kMaxHeader)
    return fail(err, path,
                "safetensors header of " + std::to_string(n) +
                    " bytes is larger than the 100 MB limit");
  std::string text(size_t(n), '\0');
  if (int rc = f.read(8, n, &text[0], err, "header"))
    return rc;
  if (text.empty() || text[0] != '{')
    return fail(err, path, "bad safetensors header: not a JSON object");
  Json root;
  std::string why;
  if (!JsonParser(text).parse(root, why))
    return fail(err, path, "bad safetensors header JSON: " + why);
  if (root.type != Json::Object)
    return fail(err, path, "bad safetensors header: not a JSON object");
  uint64_t dataStart = 8 + n, dataSize = f.size() - dataStart;
  std::map<std::string, size_t> seen;
  std::vector<TensorRef> refs;
  for (const auto &kv : root.fields) {
    const std::string &name = kv.first;
    if (seen.count(name))
      return fail(err, path, "tensor '" + name + "' appears twice in the header",
                  ErrDuplicate);
    seen[name] = refs.size();
    if (name == "__metadata__") {
      if (kv.second.type != Json::Object)
        return fail(err, path, "bad safetensors header: __metadata__ is not an object");
      continue;
    }
    const Json &t = kv.second;
    std::string where = "tensor '" + name + "'";
    if (t.type != Json::Object)
      return fail(err, path, where + ": header entry is not an object");
    const Json *dtype = nullptr, *shape = nullptr, *offs = nullptr;
    for (const auto &fld : t.fields) {
      if (fld.first == "dtype")
        dtype = &fld.second;
      else if (fld.first == "shape")
        shape = &fld.second;
      else if (fld.first == "data_offsets")
        offs = &fld.second;
    }
    if (!dtype || dtype->type != Json::String)
      return fail(err, path, where + ": no \"dtype\" string");
    if (!shape || shape->type != Json::Array)
      return fail(err, path, where + ": no \"shape\" list");
    if (!offs || offs->type != Json::Array || offs->items.size() != 2)
      return fail(err, path, where + ": no \"data_offsets\" [begin, end] pair");
    TensorRef r;
    r.name = name;
    r.file = path;
    r.kind = TensorRef::Raw;
    r.dtypeName = dtype->str;
    for (const Json &d : shape->items) {
      if (d.type != Json::Number || !d.isInt || d.intValue < 0)
        return fail(err, path, where + ": shape entries must be non-negative integers");
      r.shape.push_back(d.intValue);
    }
    for (const Json &o : offs->items)
      if (o.type != Json::Number || !o.isInt || o.intValue < 0)
        return fail(err, path, where + ": data_offsets must be non-negative integers");
    uint64_t b = uint64_t(offs->items[0].intValue), e = uint64_t(offs->items[1].intValue);
    std::string range = "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "]";
    if (b > e)
      return fail(err, path, where + ": " + range + " end before they begin");
    if (e > dataSize)
      return fail(err, path,
                  where + ": " + range + " are beyond the data (" +
                      std::to_string(dataSize) + " bytes; truncated file?)");
    r.offset = dataStart + b;
    r.size = e - b;
    size_t w = safetensorsWidth(r.dtypeName, r.dtype);
    int64_t count;
    if (!elementCount(r.shape, count))
      return fail(err, path, where + ": shape " + shapeString(r.shape) + " is too large");
    if (w && uint64_t(count) * w != r.size)
      return fail(err, path,
                  where + ": " + r.dtypeName + " " + shapeString(r.shape) +
                      " needs " + std::to_string(uint64_t(count) * w) +
                      " bytes but " + range + " span " + std::to_string(r.size));
    refs.push_back(std::move(r));
  }
  // No two tensors may share bytes.
  std::vector<const TensorRef *> byOffset;
  for (const TensorRef &r : refs)
    if (r.size)
      byOffset.push_back(&r);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const TensorRef *a, const TensorRef *b) { return a->offset < b->offset; });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i]->offset < byOffset[i - 1]->offset + byOffset[i - 1]->size)
      return fail(err, path,
                  "tensors '" + byOffset[i - 1]->name + "' and '" +
                      byOffset[i]->name + "' overlap (data_offsets share bytes)");
  for (TensorRef &r : refs)
    out.push_back(std::move(r));
  return Ok;
}

//===----------------------------------------------------------------------===//
// zip (.npz)
//===----------------------------------------------------------------------===//

/// Reads the zip64 extra field (id 1) of a central directory entry, replacing
/// the 32-bit fields that are 0xffffffff, in the order the format gives.
bool zip64Extra(const unsigned char *x, size_t n, uint64_t &usize,
                uint64_t &csize, uint64_t &local) {
  size_t i = 0;
  while (i + 4 <= n) {
    unsigned id = unsigned(le(x + i, 2)), len = unsigned(le(x + i + 2, 2));
    if (i + 4 + len > n)
      return false;
    if (id == 1) {
      const unsigned char *p = x + i + 4, *end = p + len;
      for (uint64_t *v : {&usize, &csize, &local}) {
        if (*v != 0xffffffffu)
          continue;
        if (end - p < 8)
          return false;
        *v = le(p, 8);
        p += 8;
      }
      return true;
    }
    i += 4 + len;
  }
  return usize != 0xffffffffu && csize != 0xffffffffu && local != 0xffffffffu;
}

int listZip(const std::string &path, std::vector<TensorRef> &out,
            std::string &err) {
  File f;
  if (int rc = f.open(path, err))
    return rc;
  // The end-of-central-directory record: in the last 22 + 65535 bytes.
  uint64_t tail = std::min<uint64_t>(f.size(), 22 + 65535);
  std::vector<unsigned char> t(tail);
  if (int rc = f.read(f.size() - tail, tail, t.data(), err, "zip end record"))
    return rc;
  int64_t eocd = -1;
  for (int64_t i = int64_t(tail) - 22; i >= 0; --i)
    if (std::memcmp(&t[size_t(i)], "PK\x05\x06", 4) == 0) {
      eocd = i;
      break;
    }
  if (eocd < 0)
    return fail(err, path, "not a valid .npz: no zip end-of-central-directory record (truncated?)");
  const unsigned char *e = &t[size_t(eocd)];
  uint64_t entries = le(e + 10, 2), cdSize = le(e + 12, 4), cdOff = le(e + 16, 4);
  uint64_t eocdPos = f.size() - tail + uint64_t(eocd);
  if (entries == 0xffff || cdSize == 0xffffffffu || cdOff == 0xffffffffu) {
    unsigned char loc[20], rec[56];
    if (eocdPos < 20)
      return fail(err, path, "bad zip64 locator");
    if (int rc = f.read(eocdPos - 20, 20, loc, err, "zip64 locator"))
      return rc;
    if (std::memcmp(loc, "PK\x06\x07", 4) != 0)
      return fail(err, path, "bad zip64 locator");
    if (int rc = f.read(le(loc + 8, 8), 56, rec, err, "zip64 end record"))
      return rc;
    if (std::memcmp(rec, "PK\x06\x06", 4) != 0)
      return fail(err, path, "bad zip64 end record");
    entries = le(rec + 32, 8);
    cdSize = le(rec + 40, 8);
    cdOff = le(rec + 48, 8);
  }
  if (cdOff > f.size() || cdSize > f.size() - cdOff)
    return fail(err, path, "zip central directory [" + std::to_string(cdOff) + ", +" +
                               std::to_string(cdSize) + ") is beyond the file (truncated?)");
  if (cdSize > kMaxHeader)
    return fail(err, path, "zip central directory too large");
  std::vector<unsigned char> cd(size_t(cdSize) + 1);
  if (int rc = f.read(cdOff, cdSize, cd.data(), err, "zip central directory"))
    return rc;
  std::map<std::string, bool> seen;
  size_t p = 0;
  for (uint64_t k = 0; k < entries; ++k) {
    if (cdSize - p < 46 || std::memcmp(&cd[p], "PK\x01\x02", 4) != 0)
      return fail(err, path, "bad zip central directory entry " + std::to_string(k));
    const unsigned char *c = &cd[p];
    unsigned flags = unsigned(le(c + 8, 2)), method = unsigned(le(c + 10, 2));
    size_t nameLen = size_t(le(c + 28, 2)), extraLen = size_t(le(c + 30, 2)),
           commentLen = size_t(le(c + 32, 2));
    if (cdSize - p - 46 < nameLen + extraLen + commentLen)
      return fail(err, path, "bad zip central directory entry " + std::to_string(k));
    std::string entry(reinterpret_cast<const char *>(c + 46), nameLen);
    TensorRef r;
    r.file = path;
    r.kind = TensorRef::ZipEntry;
    r.crc = uint32_t(le(c + 16, 4));
    r.compSize = le(c + 20, 4);
    r.usize = le(c + 24, 4);
    r.localHeader = le(c + 42, 4);
    r.method = method;
    if (!zip64Extra(c + 46 + nameLen, extraLen, r.usize, r.compSize, r.localHeader))
      return fail(err, path, "entry '" + entry + "': bad zip64 extra field");
    p += 46 + nameLen + extraLen + commentLen;
    if (entry.size() < 4 || entry.compare(entry.size() - 4, 4, ".npy") != 0)
      continue; // not an array (np.savez writes NAME.npy entries only)
    r.name = entry.substr(0, entry.size() - 4);
    if (seen.count(r.name))
      return fail(err, path, "tensor '" + r.name + "' appears twice in the archive",
                  ErrDuplicate);
    seen[r.name] = true;
    if (flags & 1)
      return fail(err, path, "tensor '" + r.name + "': encrypted zip entries are not supported");
    if (method != 0 && method != 8)
      return fail(err, path, "tensor '" + r.name + "': zip compression method " +
                                 std::to_string(method) +
                                 " is not supported (stored or deflate only)");
    if (method == 0 && r.compSize != r.usize)
      return fail(err, path, "tensor '" + r.name + "': stored entry with different sizes");
    out.push_back(std::move(r));
  }
  return Ok;
}

/// Streams one zip entry's uncompressed bytes: first a prefix (for the .npy
/// header), then the rest. Checks the CRC once everything is read.
class ZipEntryReader {
public:
  ZipEntryReader(const File &f, const TensorRef &r, const std::string &where)
      : f_(f), r_(r), where_(where) {}
  ~ZipEntryReader() {
    if (inflating_)
      inflateEnd(&z_);
  }
  int start(std::string &err) {
    unsigned char lh[30];
    if (int rc = f_.read(r_.localHeader, 30, lh, err, "tensor '" + r_.name + "' local header"))
      return rc;
    if (std::memcmp(lh, "PK\x03\x04", 4) != 0)
      return fail(err, where_, "bad zip local header");
    pos_ = r_.localHeader + 30 + le(lh + 26, 2) + le(lh + 28, 2);
    if (pos_ > f_.size() || r_.compSize > f_.size() - pos_)
      return fail(err, where_, "zip entry data is beyond the end of the file (truncated?)");
    left_ = r_.compSize;
    if (r_.method == 8) {
      std::memset(&z_, 0, sizeof z_);
      if (inflateInit2(&z_, -15) != Z_OK)
        return fail(err, where_, "zlib inflateInit2 failed");
      inflating_ = true;
    }
    return Ok;
  }
  /// Appends exactly n more uncompressed bytes to `out`.
  int read(uint64_t n, std::vector<unsigned char> &out, std::string &err) {
    if (n > r_.usize - produced_)
      return fail(err, where_, "zip entry shorter than needed");
    size_t base = out.size();
    out.resize(base + size_t(n));
    if (r_.method == 0) {
      if (int rc = f_.read(pos_, n, out.data() + base, err, "tensor '" + r_.name + "'"))
        return rc;
      pos_ += n;
      left_ -= n;
    } else {
      z_.next_out = out.data() + base;
      uint64_t want = n;
      while (want > 0) {
        if (z_.avail_in == 0 && left_ > 0) {
          uint64_t chunk = std::min<uint64_t>(left_, sizeof in_);
          if (int rc = f_.read(pos_, chunk, in_, err, "tensor '" + r_.name + "'"))
            return rc;
          pos_ += chunk;
          left_ -= chunk;
          z_.next_in = in_;
          z_.avail_in = unsigned(chunk);
        }
        unsigned step = unsigned(std::min<uint64_t>(want, 1u << 30));
        unsigned inBefore = z_.avail_in;
        z_.avail_out = step;
        int zr = inflate(&z_, Z_NO_FLUSH);
        uint64_t got = step - z_.avail_out;
        want -= got;
        bool stuck = got == 0 && z_.avail_in == inBefore;
        if ((zr == Z_STREAM_END && want > 0) ||
            (stuck && z_.avail_in == 0 && left_ == 0))
          return fail(err, where_, "deflate stream ends early (corrupt or truncated entry)");
        if ((zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) || stuck)
          return fail(err, where_, std::string("corrupt deflate data (zlib: ") +
                                       (z_.msg ? z_.msg : "no progress") + ")");
      }
    }
    crc_ = crc32_z(crc_, out.data() + base, size_t(n));
    produced_ += n;
    if (produced_ == r_.usize && crc_ != r_.crc)
      return fail(err, where_, "zip CRC-32 mismatch (corrupt archive)");
    return Ok;
  }

private:
  const File &f_;
  const TensorRef &r_;
  std::string where_;
  z_stream z_;
  bool inflating_ = false;
  uint64_t pos_ = 0, left_ = 0, produced_ = 0;
  uLong crc_ = crc32(0, nullptr, 0);
  unsigned char in_[1 << 16];
};

/// Reads a .npy image from `next` (a function appending n bytes): header
/// first, then the data when the tensor is small enough.
template <typename Next>
int readNpyStream(uint64_t total, const std::string &where, int64_t maxFloats,
                  Next next, Tensor &out, std::string &err) {
  std::vector<unsigned char> buf;
  uint64_t probe = std::min(total, kNpyProbe);
  if (int rc = next(probe, buf, err))
    return rc;
  NpyHeader h;
  if (int rc = parseNpyHeader(buf.data(), buf.size(), where, h, err))
    return rc;
  out.shape = h.shape;
  out.dtypeName = h.descr;
  out.dtype = h.dtype;
  if (h.dtype == DType::Unsupported)
    return fail(err, where,
                "dtype '" + h.descr + "' is not supported (float16, float32 or float64)",
                ErrDType);
  int64_t count;
  if (!elementCount(h.shape, count))
    return fail(err, where, "shape " + shapeString(h.shape) + " is too large");
  uint64_t need = h.dataStart + uint64_t(count) * itemSize(h.dtype);
  if (total != need)
    return fail(err, where,
                (total < need ? "truncated data: " : "size mismatch: ") +
                    std::string(h.descr) + " " + shapeString(h.shape) + " needs " +
                    std::to_string(need - h.dataStart) + " bytes of data, found " +
                    std::to_string(total - h.dataStart));
  if (count > maxFloats)
    return Ok; // shape only: the caller reports the mismatch
  if (int rc = next(total - probe, buf, err))
    return rc;
  out.data.resize(size_t(count));
  if (!convert(buf.data() + h.dataStart, h.dtype, h.bigEndian, count, out.data.data()))
    return fail(err, where, "a float64 value is out of float32 range", ErrDType);
  if (h.fortran) {
    if (h.shape.size() > 2)
      return fail(err, where, "Fortran-order arrays of rank > 2 are not supported");
    fortranToC(out);
  }
  return Ok;
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

int listFile(const std::string &path, std::vector<TensorRef> &out,
             std::string &err) {
  File f;
  if (int rc = f.open(path, err))
    return rc;
  unsigned char magic[8] = {0};
  uint64_t n = std::min<uint64_t>(8, f.size());
  if (int rc = f.read(0, n, magic, err, "magic"))
    return rc;
  if (endsWith(path, ".npz") ||
      (n >= 4 && (std::memcmp(magic, "PK\x03\x04", 4) == 0 ||
                  std::memcmp(magic, "PK\x05\x06", 4) == 0)))
    return listZip(path, out, err);
  if (n >= 6 && std::memcmp(magic, "\x93NUMPY", 6) == 0)
    return fail(err, path,
                "a single .npy holds one tensor: give the directory of .npy files");
  if (endsWith(path, ".safetensors") || n < 8 || le(magic, 8) < f.size())
    return listSafetensors(path, out, err);
  return fail(err, path, "not a directory, .npz or .safetensors file");
}

} // namespace

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F16: return "float16";
  case DType::BF16: return "bfloat16";
  case DType::F32: return "float32";
  case DType::F64: return "float64";
  default: return "unsupported";
  }
}

int listTensors(const std::string &path, std::vector<TensorRef> &out,
                std::string &err) {
  out.clear();
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return fail(err, path, std::string("cannot open: ") + std::strerror(errno), ErrIo);
  if (!S_ISDIR(st.st_mode))
    return listFile(path, out, err);
  DIR *d = ::opendir(path.c_str());
  if (!d)
    return fail(err, path, std::string("cannot list: ") + std::strerror(errno), ErrIo);
  std::vector<std::string> files;
  while (dirent *e = ::readdir(d))
    files.push_back(e->d_name);
  ::closedir(d);
  std::sort(files.begin(), files.end());
  std::map<std::string, std::string> where;
  for (const std::string &fn : files) {
    std::string full = path + "/" + fn;
    std::vector<TensorRef> refs;
    if (endsWith(fn, ".npy")) {
      TensorRef r;
      r.name = fn.substr(0, fn.size() - 4);
      r.file = full;
      r.kind = TensorRef::NpyFile;
      refs.push_back(std::move(r));
    } else if (endsWith(fn, ".safetensors") || endsWith(fn, ".npz")) {
      if (int rc = listFile(full, refs, err))
        return rc;
    }
    for (TensorRef &r : refs) {
      auto it = where.find(r.name);
      if (it != where.end())
        return fail(err, path,
                    "tensor '" + r.name + "' is in both " + it->second + " and " + r.file,
                    ErrDuplicate);
      where[r.name] = r.file;
      out.push_back(std::move(r));
    }
  }
  return Ok;
}

int readTensor(const TensorRef &ref, int64_t maxFloats, Tensor &out,
               std::string &err) {
  out = Tensor();
  std::string where = ref.file + ": tensor '" + ref.name + "'";
  File f;
  if (int rc = f.open(ref.file, err))
    return rc;
  if (ref.kind == TensorRef::Raw) {
    out.shape = ref.shape;
    out.dtypeName = ref.dtypeName;
    out.dtype = ref.dtype;
    if (ref.dtype == DType::Unsupported)
      return fail(err, where,
                  "dtype " + ref.dtypeName + " is not supported (F32, F16, BF16 or F64)",
                  ErrDType);
    int64_t count;
    if (!elementCount(ref.shape, count))
      return fail(err, where, "shape too large");
    if (count > maxFloats)
      return Ok;
    std::vector<unsigned char> bytes(size_t(ref.size));
    if (int rc = f.read(ref.offset, ref.size, bytes.data(), err, "tensor '" + ref.name + "'"))
      return rc;
    out.data.resize(size_t(count));
    if (!convert(bytes.data(), ref.dtype, false, count, out.data.data()))
      return fail(err, where, "a float64 value is out of float32 range", ErrDType);
    return Ok;
  }
  if (ref.kind == TensorRef::NpyFile) {
    uint64_t off = 0;
    auto next = [&](uint64_t n, std::vector<unsigned char> &buf, std::string &e) {
      size_t base = buf.size();
      buf.resize(base + size_t(n));
      int rc = f.read(off, n, buf.data() + base, e, "data");
      off += n;
      return rc;
    };
    return readNpyStream(f.size(), ref.file, maxFloats, next, out, err);
  }
  ZipEntryReader z(f, ref, where);
  if (int rc = z.start(err))
    return rc;
  auto next = [&](uint64_t n, std::vector<unsigned char> &buf, std::string &e) {
    return z.read(n, buf, e);
  };
  return readNpyStream(ref.usize, where, maxFloats, next, out, err);
}

} // namespace tensorfile
} // namespace attnrt
