//===- Safetensors.cpp - Hugging Face .safetensors headers ------*- C++ -*-===//
//
// An 8-byte little-endian header length, a JSON header (Json.h) mapping each
// tensor name to its dtype, shape and data_offsets (plus an optional
// __metadata__ object), then the raw little-endian data. The whole header
// is checked: lengths against the file, offsets inside the data, sizes
// against dtype and shape, no two tensors sharing bytes, no name twice.
//
//===----------------------------------------------------------------------===//

#include "Json.h"
#include "TensorFileSupport.h"

#include <algorithm>
#include <map>

namespace attnrt {
namespace tensorfile {

namespace {

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

/// Offset of the first byte of `s` that is not part of well-formed UTF-8
/// (no overlong forms, surrogates or code points past U+10FFFF), or npos.
size_t firstNonUtf8(const std::string &s) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > n)
      return i;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80)
        return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return std::string::npos;
}

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

} // namespace

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
  if (size_t bad = firstNonUtf8(text); bad != std::string::npos)
    return fail(err, path,
                "bad safetensors header: byte " + std::to_string(8 + bad) +
                    " is not UTF-8 (the format's header is UTF-8 JSON; the format's own "
                    "reader and Python's refuse it)");
  // A header is {name: {dtype, shape, data_offsets}, __metadata__: {str:
  // str}}: at most three levels deep. Each entry is parsed and checked on
  // its own and only its TensorRef is kept (a few times the entry's text),
  // so memory stays a small multiple of the header; an entry whose tree
  // would pass the budget (tiny arrays in __metadata__ cost 75x their text)
  // or that nests deeper is refused while it is parsed.
  uint64_t dataStart = 8 + n, dataSize = f.size() - dataStart;
  std::map<std::string, size_t> seen;
  std::vector<TensorRef> refs;
  int code = Ok;
  auto entry = [&](const std::string &name, const Json &t) {
    auto stop = [&](const std::string &what, int c = ErrFormat) {
      code = fail(err, path, what, c);
      return false;
    };
    if (seen.count(name))
      return stop("tensor '" + name + "' appears twice in the header", ErrDuplicate);
    seen[name] = refs.size();
    if (name == "__metadata__") {
      if (t.type != Json::Object)
        return stop("bad safetensors header: __metadata__ is not an object");
      for (const auto &m : t.fields)
        if (m.second.type != Json::String)
          return stop("bad safetensors header: __metadata__ entry '" + m.first +
                      "' is not a string (the format maps strings to strings)");
      return true;
    }
    std::string where = "tensor '" + name + "'";
    if (t.type != Json::Object)
      return stop(where + ": header entry is not an object");
    const Json *dtype = nullptr, *shape = nullptr, *offs = nullptr;
    for (const auto &fld : t.fields) {
      const Json **slot = fld.first == "dtype"          ? &dtype
                          : fld.first == "shape"        ? &shape
                          : fld.first == "data_offsets" ? &offs
                                                        : nullptr;
      // (which of two would be meant cannot be told: the Python loader
      // and the format's own reader refuse it too)
      if (slot && *slot)
        return stop(where + ": names '" + fld.first + "' twice");
      if (slot)
        *slot = &fld.second;
    }
    if (!dtype || dtype->type != Json::String)
      return stop(where + ": no \"dtype\" string");
    if (!shape || shape->type != Json::Array)
      return stop(where + ": no \"shape\" list");
    if (!offs || offs->type != Json::Array || offs->items.size() != 2)
      return stop(where + ": no \"data_offsets\" [begin, end] pair");
    TensorRef r;
    r.name = name;
    r.file = path;
    r.kind = TensorRef::Raw;
    r.dtypeName = dtype->str;
    for (const Json &d : shape->items) {
      if (d.type != Json::Number || !d.isInt || d.intValue < 0)
        return stop(where + ": shape entries must be non-negative integers");
      r.shape.push_back(d.intValue);
    }
    for (const Json &o : offs->items)
      if (o.type != Json::Number || !o.isInt || o.intValue < 0)
        return stop(where + ": data_offsets must be non-negative integers");
    uint64_t b = uint64_t(offs->items[0].intValue), e = uint64_t(offs->items[1].intValue);
    std::string range = "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "]";
    if (b > e)
      return stop(where + ": " + range + " end before they begin");
    if (e > dataSize)
      return stop(where + ": " + range + " are beyond the data (" +
                  std::to_string(dataSize) + " bytes; truncated file?)");
    r.offset = dataStart + b;
    r.size = e - b;
    size_t w = safetensorsWidth(r.dtypeName, r.dtype);
    int64_t count;
    if (!elementCount(r.shape, count))
      return stop(where + ": shape " + shapeString(r.shape) + " is too large");
    if (w && uint64_t(count) * w != r.size)
      return stop(where + ": " + r.dtypeName + " " + shapeString(r.shape) + " needs " +
                  std::to_string(uint64_t(count) * w) + " bytes but " + range + " span " +
                  std::to_string(r.size));
    refs.push_back(std::move(r));
    return true;
  };
  std::string why;
  JsonLimits limits;
  limits.maxDepth = 3;
  limits.maxBytes = 4 * n + (1u << 20);
  if (!parseJsonObjectEntries(text, entry, why, limits))
    return code != Ok ? code : fail(err, path, "bad safetensors header JSON: " + why);
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

} // namespace tensorfile
} // namespace attnrt
