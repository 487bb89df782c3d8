//===- TensorFile.cpp - Named tensors in .npy/.npz/.safetensors -*- C++ -*-===//
//
// One listing over three formats: directories, .npz archives (Zip.cpp)
// and safetensors files (Safetensors.cpp); then reading one tensor: .npy
// headers (any float dtype, either byte order, C or Fortran order) and the
// conversion of f16/bf16/f64 to float32. Sizes come from untrusted files,
// so each one is checked against the file size and for overflow before
// anything is allocated or read.
//
//===----------------------------------------------------------------------===//

#include "Json.h"
#include "TensorFileSupport.h"
#include "attnc/runtime/Runtime.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <dirent.h>
#include <limits>
#include <map>

namespace attnrt {
namespace tensorfile {

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

namespace {

/// The longest .npy header dict accepted (NumPy writes a few hundred
/// bytes; format 2.0 exists for longer ones). The header is read exactly
/// as long as its preamble announces, up to this.
constexpr uint64_t kMaxNpyHeader = 1u << 20;

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
  bool haveDescr = false, haveShape = false, haveFortran = false;
  if (!eat('{'))
    return fail(err, where, "malformed .npy header: expected '{'");
  while (!eat('}')) {
    std::string key;
    if (!str(key) || !eat(':'))
      return fail(err, where, "malformed .npy header: expected 'key':");
    bool &seen = key == "descr" ? haveDescr : key == "shape" ? haveShape : haveFortran;
    if ((key == "descr" || key == "shape" || key == "fortran_order") && seen)
      return fail(err, where,
                  "malformed .npy header: key '" + key +
                      "' appears twice (NumPy reads the last one, which may "
                      "not be what was meant: refusing the ambiguity)");
    if (key == "fortran_order")
      haveFortran = true;
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
  h.dtype = npyDescrType(h.descr, h.bigEndian);
  return Ok;
}

/// Reads a .npy image from `next` (a function appending n bytes): header
/// first, then the data when the tensor is small enough.
template <typename Next>
int readNpyStream(uint64_t total, const std::string &where, int64_t maxFloats,
                  Next next, Tensor &out, std::string &err) {
  std::vector<unsigned char> buf;
  // The preamble (magic, version, header length), then exactly the header
  // it announces (format 2.0 headers may be longer than 64 KiB).
  uint64_t probe = std::min<uint64_t>(total, 12);
  if (int rc = next(probe, buf, err))
    return rc;
  if (probe >= 10 && std::memcmp(buf.data(), "\x93NUMPY", 6) == 0 &&
      (buf[6] >= 1 && buf[6] <= 3)) {
    const uint64_t lenBytes = buf[6] == 1 ? 2 : 4;
    if (probe >= 8 + lenBytes) {
      uint64_t hl = le(buf.data() + 8, int(lenBytes));
      if (hl > kMaxNpyHeader)
        return fail(err, where,
                    "header length " + std::to_string(hl) +
                        " bytes is implausible (at most " +
                        std::to_string(kMaxNpyHeader) + " accepted)");
      uint64_t more = std::min(total, 8 + lenBytes + hl) - probe;
      if (int rc = next(more, buf, err))
        return rc;
      probe += more;
    }
  }
  NpyHeader h;
  if (int rc = parseNpyHeader(buf.data(), buf.size(), where, h, err))
    return rc;
  out.shape = h.shape;
  out.dtypeName = h.descr;
  out.dtype = h.dtype;
  if (h.dtype == DType::Unsupported)
    return fail(err, where,
                "dtype '" + h.descr + "' is not supported (float16, float32, float64, "
                "or ml_dtypes' bfloat16 saved as '|V2')",
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
  // A safetensors file: a header length that fits the file, then '{'. Its
  // first byte can be 0x80 and its second 2..5 (a header of 0x380 bytes,
  // say), which is also how a pickle starts: the header decides first.
  bool safetensorsHeader = false;
  if (n == 8 && le(magic, 8) >= 2 && le(magic, 8) <= f.size() - 8) {
    unsigned char brace = 0;
    std::string ignored;
    safetensorsHeader = f.read(8, 1, &brace, ignored, "header") == Ok && brace == '{';
  }
  if (!safetensorsHeader && looksLikePickle(magic, n))
    return torchCheckpoint(err, path, /*zip=*/false);
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

DType npyDescrType(const std::string &d, bool &bigEndian) {
  bigEndian = false;
  if (attnrt::npyRawBf16(d))
    return DType::BF16;
  if (d.size() != 3 || (d[0] != '<' && d[0] != '>' && d[0] != '=') || d[1] != 'f')
    return DType::Unsupported;
  bigEndian = d[0] == '>';
  return d[2] == '2' ? DType::F16 : d[2] == '4' ? DType::F32 : d[2] == '8' ? DType::F64
                                                                         : DType::Unsupported;
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

std::pair<std::string, std::string> indexedFile(const std::string &dir,
                                                const std::vector<std::string> &names) {
  std::string text, why;
  Json index;
  JsonLimits limits;
  limits.maxBytes = uint64_t(64) << 20;
  if (!readRegularFile(dir + "/model.safetensors.index.json", uint64_t(1) << 26, text, why) ||
      !parseJson(text, index, why, limits) || index.type != Json::Object)
    return {};
  for (const auto &[key, map] : index.fields)
    if (key == "weight_map" && map.type == Json::Object)
      for (const std::string &name : names)
        for (const auto &[tensor, file] : map.fields)
          if (tensor == name && file.type == Json::String)
            return {name, file.str};
  return {};
}

/// For a tensor in two files a and b of directory `dir`: the one the index
/// lists for it, as a hint that the other is a stale copy ("" otherwise).
static std::string indexedOwner(const std::string &dir, const std::string &name,
                                const std::string &a, const std::string &b) {
  const std::string file = indexedFile(dir, {name}).second;
  const std::string listed = dir + "/" + file;
  if (file.empty() || (listed != a && listed != b))
    return "";
  return " (model.safetensors.index.json puts it in " + file + ": " + (listed == a ? b : a) +
         " is not one of the checkpoint's shards, a stale copy? Remove or move it)";
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
  std::string torchFile;
  size_t tensorFiles = 0;
  for (const std::string &fn : files) {
    std::string full = path + "/" + fn;
    std::vector<TensorRef> refs;
    tensorFiles += endsWith(fn, ".npy") || endsWith(fn, ".safetensors") || endsWith(fn, ".npz");
    if (endsWith(fn, ".npy")) {
      TensorRef r;
      r.name = fn.substr(0, fn.size() - 4);
      r.file = full;
      r.kind = TensorRef::NpyFile;
      refs.push_back(std::move(r));
    } else if (endsWith(fn, ".safetensors") || endsWith(fn, ".npz")) {
      if (int rc = listFile(full, refs, err))
        return rc;
    } else if (torchFile.empty() &&
               (endsWith(fn, ".bin") || endsWith(fn, ".pt") || endsWith(fn, ".pth"))) {
      torchFile = full; // pytorch_model.bin beside no .safetensors: said below
    }
    for (TensorRef &r : refs) {
      auto it = where.find(r.name);
      if (it != where.end())
        return fail(err, path,
                    "tensor '" + r.name + "' is in both " + it->second + " and " + r.file +
                        indexedOwner(path, r.name, it->second, r.file),
                    ErrDuplicate);
      where[r.name] = r.file;
      out.push_back(std::move(r));
    }
  }
  // No tensors, but a PyTorch checkpoint (a Hugging Face directory with
  // pytorch_model.bin only): say what it is rather than "not found".
  if (out.empty() && !torchFile.empty()) {
    std::vector<TensorRef> none;
    std::string why;
    if (listFile(torchFile, none, why) != Ok &&
        why.find("PyTorch checkpoint") != std::string::npos)
      return fail(err, path,
                  "no .safetensors, .npz or .npy files; " + why);
  }
  // Nothing to read at all (an empty directory, the wrong one): say so
  // rather than name the first tensor the kernel misses.
  if (tensorFiles == 0)
    return fail(err, path,
                "no .safetensors, .npz or .npy files (a weights directory holds "
                "NAME.npy files, or .npz or .safetensors files)");
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
                  "dtype " + ref.dtypeName + " is not supported (F32, F16, BF16 or F64)" +
                      (ref.dtypeName.rfind("F8", 0) == 0 || ref.dtypeName.rfind("F6", 0) == 0 ||
                               ref.dtypeName.rfind("F4", 0) == 0 || ref.dtypeName == "U8" ||
                               ref.dtypeName == "I8"
                           ? std::string(": a quantized checkpoint's, as FP8, FP6, FP4 "
                                         "or 8-bit integers are, with their scales in other tensors "
                                         "('weight_scale_inv', 'absmax', 'SCB'), which attnc "
                                         "does not read: "
                                         "take the model's unquantized checkpoint (bf16, f16 "
                                         "or f32), or dequantize this one into it")
                           : std::string()),
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

