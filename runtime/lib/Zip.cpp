//===- Zip.cpp - .npz archives: central directory and entries ---*- C++ -*-===//
//
// Reads zip archives as np.savez / np.savez_compressed write them: the
// end-of-central-directory record (and its zip64 form), central directory
// entries (zip64 extra fields), local headers, stored and deflate data
// (zlib's raw inflate, streamed) and the CRC-32. Every offset and size is
// checked against the file before it is used.
//
//===----------------------------------------------------------------------===//

#include "TensorFileSupport.h"

#include <algorithm>
#include <map>

namespace attnrt {
namespace tensorfile {

namespace {

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

} // namespace

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
    // torch.save (since 1.6) writes a zip whose entries are ARCHIVE/data.pkl,
    // ARCHIVE/data/0, ...: no arrays, pickles.
    if (entry == "data.pkl" ||
        (entry.size() > 9 && entry.compare(entry.size() - 9, 9, "/data.pkl") == 0))
      return torchCheckpoint(err, path, /*zip=*/true);
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

int ZipEntryReader::start(std::string &err) {
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
int ZipEntryReader::read(uint64_t n, std::vector<unsigned char> &out,
                         std::string &err) {
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

} // namespace tensorfile
} // namespace attnrt
