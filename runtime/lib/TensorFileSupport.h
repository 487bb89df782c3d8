//===- TensorFileSupport.h - Shared pieces of the weight readers -*- C++ -*-===//
//
// What TensorFile.cpp (listing, .npy, conversion), Safetensors.cpp and
// Zip.cpp share: bounds-checked positional file reads, little-endian
// integers, "FILE: what" errors, and the per-format entry points. Internal
// to libattnrt.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_LIB_TENSORFILESUPPORT_H
#define ATTNC_RUNTIME_LIB_TENSORFILESUPPORT_H

#include "TensorFile.h"
#include "attnc/runtime/Files.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnrt {
namespace tensorfile {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the weight readers assume a little-endian host");

/// Largest header we parse (safetensors' own limit is 100 MB).
constexpr uint64_t kMaxHeader = 100u << 20;

inline int fail(std::string &err, const std::string &file, const std::string &what,
         int code = ErrFormat) {
  err = file + ": " + what;
  return code;
}

/// The refusal of a PyTorch checkpoint (torch.save's zip of pickles, or a
/// legacy pickle file): attnc never unpickles (that runs code), so it says
/// how to convert the file.
inline int torchCheckpoint(std::string &err, const std::string &file, bool zip) {
  err = file + ": this is a PyTorch checkpoint (" +
        (zip ? "torch.save's zip archive of pickles" : "a pickle file, torch.save's legacy format") +
        "), which attnc does not read: it reads .safetensors, .npz or a directory of NAME.npy "
        "files. Convert it, e.g. with python3 -c \"import sys, torch, numpy as np; "
        "sd = torch.load(sys.argv[1], map_location='cpu', weights_only=True); "
        "np.savez(sys.argv[2], **{k: v.float().numpy() for k, v in sd.items() "
        "if torch.is_tensor(v)})\" '" + file + "' weights.npz (then --weights weights.npz), "
        "or load it in Python and pass the state_dict to attnc.Kernel.pack "
        "(python/attnc)";
  return ErrFormat;
}

/// True when the first bytes are a pickle's protocol opcode (PROTO 2..5:
/// torch.save's legacy format starts with a pickled magic number).
inline bool looksLikePickle(const unsigned char *magic, uint64_t n) {
  return n >= 2 && magic[0] == 0x80 && magic[1] >= 2 && magic[1] <= 5;
}

inline uint64_t le(const unsigned char *p, int bytes) {
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
    std::string why;
    fd_ = openRegularFile(path, why, &size_);
    if (fd_ < 0)
      return fail(err, path, why, ErrIo);
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

/// Element count of `shape`, false when it overflows 2^59.
bool elementCount(const std::vector<int64_t> &shape, int64_t &n);
/// Bytes per element; 0 for DType::Unsupported.
size_t itemSize(DType t);

/// The tensors of a .safetensors file (Safetensors.cpp): the whole header
/// checked (offsets in range, sizes, no overlaps, no duplicate names).
int listSafetensors(const std::string &path, std::vector<TensorRef> &out,
                    std::string &err);
/// The NAME.npy entries of a zip archive (Zip.cpp).
int listZip(const std::string &path, std::vector<TensorRef> &out,
            std::string &err);

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
  /// Checks the local header and positions at the entry's data.
  int start(std::string &err);
  /// Appends exactly n more uncompressed bytes to `out`.
  int read(uint64_t n, std::vector<unsigned char> &out, std::string &err);

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

} // namespace tensorfile
} // namespace attnrt

#endif // ATTNC_RUNTIME_LIB_TENSORFILESUPPORT_H
