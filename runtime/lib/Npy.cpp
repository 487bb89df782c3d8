//===- Npy.cpp - float32 .npy reading and writing ---------------*- C++ -*-===//
//
// A small, strict reader and writer for NumPy's .npy format: versions 1.0,
// 2.0 and 3.0 headers, C order only; float32 data, or float16 / float64
// (either byte order) and ml_dtypes' bfloat16 (saved as raw '|V2') converted
// to float32 (NpyArray::dtype says which; the caller tells the user). Everything else is rejected with a message that
// names the file and says what was expected and what was found. The writer
// writes '<f4'.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Checked.h"
#include "attnc/runtime/Runtime.h"
#include "attnc/runtime/Files.h"

#include "TensorFile.h"
#include "TensorFileSupport.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <sys/stat.h>

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

  /// Where parsing stands (after whitespace): an offset into the text.
  size_t pos() {
    skipSpace();
    return pos_;
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
  int64_t n = 1, bytes;
  for (int64_t d : shape)
    if (!checkedMul(n, d, n))
      return false;
  if (!checkedMul(n, 4, bytes)) // the byte count must fit too
    return false;
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

namespace {

/// Where the bytes of a .npy come from: a regular file (readNpy refuses
/// FIFOs and devices) or an in-memory image; its size is known either way.
class ByteSource {
public:
  virtual ~ByteSource() = default;
  /// Reads up to n bytes; returns how many were read (short only at the
  /// end of the data or on an error).
  virtual size_t read(void *dst, size_t n) = 0;
  /// Bytes left.
  virtual int64_t remaining() const = 0;
  virtual bool failed() const { return false; }
};

class MemorySource : public ByteSource {
public:
  explicit MemorySource(const std::string &b) : bytes_(b) {}
  size_t read(void *dst, size_t n) override {
    size_t k = std::min(n, bytes_.size() - pos_);
    std::memcpy(dst, bytes_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  int64_t remaining() const override {
    return static_cast<int64_t>(bytes_.size() - pos_);
  }

private:
  const std::string &bytes_;
  size_t pos_ = 0;
};

class FileSource : public ByteSource {
public:
  FileSource(std::FILE *f, int64_t size) : f_(f), left_(size) {}
  size_t read(void *dst, size_t n) override {
    size_t k = std::fread(dst, 1, n, f_);
    left_ -= static_cast<int64_t>(k);
    return k;
  }
  int64_t remaining() const override { return left_; }
  bool failed() const override { return std::ferror(f_) != 0; }

private:
  std::FILE *f_;
  int64_t left_;
};

/// The longest header accepted. NumPy writes headers of a few hundred
/// bytes (and itself refuses more than 10000 by default); a length beyond
/// this is a corrupt or hostile file, refused before reading it.
constexpr size_t kMaxHeaderLen = size_t(1) << 20;

bool readNpyFrom(ByteSource &src, const std::string &name, NpyArray &out,
                 std::string &message, int64_t maxDataBytes,
                 const NpyShapeCheck &acceptShape = {}) {
  out = NpyArray();
  unsigned char pre[12];
  size_t got = src.read(pre, kMagicLen + 2);
  if (got < kMagicLen + 2 || std::memcmp(pre, kMagic, kMagicLen) != 0)
    return fail(message, name,
                src.failed() ? std::string("read error")
                             : "not a .npy file (bad magic: expected '\\x93NUMPY')");
  unsigned major = pre[6], minor = pre[7];
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
  if (src.read(pre + 8, lenBytes) != lenBytes)
    return fail(message, name, "truncated header (file ends in the preamble)");
  size_t headerLen = lenBytes == 2 ? size_t(pre[8]) | size_t(pre[9]) << 8
                                   : readLE32(pre + 8);
  if (headerLen > kMaxHeaderLen)
    return fail(message, name,
                "header length " + std::to_string(headerLen) +
                    " bytes is implausible (at most " +
                    std::to_string(kMaxHeaderLen) + " accepted)");
  int64_t left = src.remaining();
  if (uint64_t(left) < headerLen)
    return fail(message, name,
                "truncated header: header length is " +
                    std::to_string(headerLen) + " bytes but only " +
                    std::to_string(left) + " follow");
  std::string header(headerLen, '\0');
  size_t hgot = headerLen ? src.read(&header[0], headerLen) : 0;
  if (hgot != headerLen)
    return fail(message, name,
                "truncated header: header length is " +
                    std::to_string(headerLen) + " bytes but only " +
                    std::to_string(hgot) + " follow");

  // Parse the dict.
  HeaderParser p(header);
  // A malformed header's errors say where: the byte offset in the file.
  const size_t headerStart = kMagicLen + 2 + lenBytes;
  auto at = [&] { return " (at byte " + std::to_string(headerStart + p.pos()) + ")"; };
  std::string descr;
  bool haveDescr = false, haveFortran = false, haveShape = false;
  bool fortran = false;
  std::vector<int64_t> shape;
  if (!p.accept('{'))
    return fail(message, name, "malformed header: expected '{'" + at());
  while (!p.accept('}')) {
    std::string key;
    const std::string keyAt = " (at byte " + std::to_string(headerStart + p.pos()) + ")";
    if (!p.parseString(key))
      return fail(message, name, "malformed header: expected a quoted key" + at());
    if (!p.accept(':'))
      return fail(message, name,
                  "malformed header: expected ':' after '" + key + "'" + at());
    if ((key == "descr" && haveDescr) || (key == "fortran_order" && haveFortran) ||
        (key == "shape" && haveShape))
      return fail(message, name,
                  "malformed header: key '" + key +
                      "' appears twice (NumPy reads the last one, which may "
                      "not be what was meant: refusing the ambiguity)" + keyAt);
    if (key == "descr") {
      if (p.peek() == '[')
        return fail(message, name,
                    "expected float32 ('<f4'), found a structured dtype");
      if (!p.parseString(descr))
        return fail(message, name, "malformed header: 'descr' is not a string" + at());
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
                        w + "'" + at());
      haveFortran = true;
    } else if (key == "shape") {
      std::string why;
      if (!p.parseShape(shape, why))
        return fail(message, name, "malformed header: bad 'shape': " + why + at());
      haveShape = true;
    } else {
      return fail(message, name,
                  "malformed header: unexpected key '" + key + "'" + keyAt);
    }
    if (!p.accept(',')) {
      if (!p.accept('}'))
        return fail(message, name, "malformed header: expected ',' or '}'" + at());
      break;
    }
  }
  if (!p.atEnd())
    return fail(message, name, "malformed header: text after the dict" + at());
  if (!haveDescr || !haveFortran || !haveShape)
    return fail(message, name,
                std::string("malformed header: missing key '") +
                    (!haveDescr     ? "descr"
                     : !haveFortran ? "fortran_order"
                                    : "shape") +
                    "'");
  // float16/32/64 in either byte order ('=' is this machine's, little),
  // and ml_dtypes' bfloat16 (raw 2-byte values).
  bool bigEndian = false;
  const tensorfile::DType dtype = tensorfile::npyDescrType(descr, bigEndian);
  const size_t width = tensorfile::itemSize(dtype);
  if (!width)
    return fail(message, name,
                "expected float32 ('<f4'; float16, float64 and ml_dtypes' bfloat16, "
                "saved as '|V2', are converted), found '" + descr + "'");
  if (fortran)
    return fail(message, name,
                "Fortran-order arrays are not supported (fortran_order is "
                "True; save a C-contiguous array)");

  if (acceptShape) {
    std::string why;
    if (!acceptShape(shape, why))
      return fail(message, name, why);
  }
  int64_t count, want, floatBytes;
  if (!elementCount(shape, count) || !checkedMul(count, int64_t(width), want) ||
      !checkedMul(count, 4, floatBytes))
    return fail(message, name, "shape " + shapeString(shape) + " is too large");
  left = src.remaining();
  if (left < want)
    return fail(message, name,
                "truncated data: shape " + shapeString(shape) + " needs " +
                    std::to_string(want) + " bytes, found " +
                    std::to_string(left));
  if (left > want)
    return fail(message, name,
                "size mismatch: shape " + shapeString(shape) + " needs " +
                    std::to_string(want) + " bytes of data, found " +
                    std::to_string(left) + " (trailing bytes)");
  // What is allocated: the float32 array.
  if (floatBytes > maxDataBytes)
    return fail(message, name,
                "shape " + shapeString(shape) + " needs " +
                    std::to_string(floatBytes) + " bytes of data, more than the " +
                    std::to_string(maxDataBytes) + " allowed");

  // Read exactly the declared data, in chunks (a file that shrinks while
  // read fails without first allocating what it promised).
  std::vector<float> data;
  const int64_t chunk = int64_t(1) << 20; // elements
  std::vector<unsigned char> buf;
  for (int64_t done = 0; done < count;) {
    int64_t n = std::min(chunk, count - done);
    buf.resize(size_t(n) * width);
    size_t r = src.read(buf.data(), buf.size());
    if (r != buf.size())
      return fail(message, name,
                  src.failed()
                      ? std::string("read error")
                      : "truncated data: shape " + shapeString(shape) +
                            " needs " + std::to_string(want) +
                            " bytes, found " +
                            std::to_string(done * int64_t(width) + int64_t(r)));
    data.resize(size_t(done + n));
    if (!tensorfile::convert(buf.data(), dtype, bigEndian, n, &data[size_t(done)])) {
      int64_t i = 0; // the first one, for the message
      while (i + 1 < n &&
             tensorfile::convert(&buf[size_t(i) * width], dtype, bigEndian, 1, &data[0]))
        ++i;
      return fail(message, name,
                  "element " + std::to_string(done + i) +
                      " is a float64 beyond float32's range (about 3.4e38)");
    }
    done += n;
  }
  out.dtype = dtype == tensorfile::DType::F32 && !bigEndian ? "" : descr;
  out.shape = shape;
  out.data = std::move(data);
  message.clear();
  return true;
}

} // namespace

bool parseNpy(const std::string &bytes, const std::string &name, NpyArray &out,
              std::string &message) {
  MemorySource src(bytes);
  return readNpyFrom(src, name, out, message,
                     std::numeric_limits<int64_t>::max());
}

bool readNpy(const std::string &path, NpyArray &out, std::string &message,
             int64_t maxDataBytes, const NpyShapeCheck &acceptShape) {
  out = NpyArray();
  // Only regular files: a FIFO or a device could block or never end.
  std::string why;
  uint64_t size = 0;
  int fd = openRegularFile(path, why, &size);
  if (fd < 0)
    return fail(message, path, why);
  std::FILE *f = fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    ::close(fd);
    return fail(message, path, std::string("cannot open: ") + std::strerror(e));
  }
  FileSource src(f, int64_t(size));
  bool ok = readNpyFrom(src, path, out, message, maxDataBytes, acceptShape);
  std::fclose(f);
  return ok;
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

  // All or nothing (a temporary renamed over `path`): a full disk leaves
  // the previous file, never a truncated .npy with a valid header.
  std::string why;
  bool ok = writeFileAtomically(
      path,
      [&](std::FILE *f) {
        if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
          return false;
        // Encode little-endian in chunks.
        std::vector<unsigned char> buf;
        const int64_t chunk = 1 << 16;
        for (int64_t i = 0; i < count; i += chunk) {
          int64_t n = std::min(chunk, count - i);
          buf.resize(size_t(n) * 4);
          for (int64_t j = 0; j < n; ++j) {
            uint32_t bits;
            std::memcpy(&bits, &data[i + j], 4);
            writeLE32(&buf[size_t(j) * 4], bits);
          }
          if (std::fwrite(buf.data(), 1, buf.size(), f) != buf.size())
            return false;
        }
        return true;
      },
      why);
  if (!ok)
    return fail(message, path, why);
  message.clear();
  return true;
}

bool npyRawBf16(const std::string &d) {
  return d.size() == 3 && (d[0] == '|' || d[0] == '<' || d[0] == '>' || d[0] == '=') &&
         d[1] == 'V' && d[2] == '2';
}

std::string npyRawBf16Note(const std::string &d) {
  return "'" + d + "' (2-byte raw values) read as bfloat16, as ml_dtypes saves it";
}

} // namespace attnrt
