//===- TensorFile.h - Named tensors in .npy/.npz/.safetensors ---*- C++ -*-===//
//
// The format half of the weights loader (weights.h): lists the tensors a
// directory, a .npz archive or a .safetensors file holds without reading
// their data, then reads one tensor and converts it to float32. Every
// offset and size read from a file is checked against the file before it
// is used. Internal to libattnrt.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_LIB_TENSORFILE_H
#define ATTNC_RUNTIME_LIB_TENSORFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace attnrt {
namespace tensorfile {

/// Element types the loader converts to float32.
enum class DType { F16, BF16, F32, F64, Unsupported };

/// One tensor a file offers, located but not read.
struct TensorRef {
  std::string name; ///< full name in the checkpoint
  std::string file; ///< the file holding it (for messages and reading)
  enum Kind { Raw, NpyFile, ZipEntry } kind = Raw;
  // Raw (safetensors): type and shape from the header, bytes at
  // [offset, offset + size) of `file`.
  std::string dtypeName;
  DType dtype = DType::Unsupported;
  std::vector<int64_t> shape;
  uint64_t offset = 0, size = 0;
  // ZipEntry: the entry's local header, method, sizes and CRC from the
  // central directory.
  uint64_t localHeader = 0, compSize = 0, usize = 0;
  uint32_t method = 0, crc = 0;
};

/// A tensor read and converted to float32, C order.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
  std::string dtypeName; ///< as the file spells it ("BF16", "<f2", ...)
  DType dtype = DType::F32;
};

/// Codes: the ATTNRT_WEIGHTS_ERR_* values of weights.h.
enum Code { Ok = 0, ErrIo = 2, ErrFormat = 3, ErrDuplicate = 5, ErrDType = 6 };

/// Lists the tensors `path` holds: a directory (its *.npy files, named by
/// the file name without .npy, and the tensors of its *.safetensors and
/// *.npz files), a .npz or a .safetensors file. Returns Ok or a code with
/// `err` set ("FILE: what").
int listTensors(const std::string &path, std::vector<TensorRef> &out,
                std::string &err);

/// Reads `ref` and converts it to float32. `maxFloats` bounds what may be
/// allocated: a tensor with more elements is reported (as a shape error
/// by the caller) from its header alone, before any data is read.
int readTensor(const TensorRef &ref, int64_t maxFloats, Tensor &out,
               std::string &err);

/// Converts n elements of type `t` at `src` (little-endian, or big-endian
/// when `bigEndian`) to float32 at `dst`. False when a finite float64 value
/// does not fit in float32 (or `t` is Unsupported). Also the .npy reader's
/// (Npy.cpp) conversion.
bool convert(const unsigned char *src, DType t, bool bigEndian, int64_t n,
             float *dst);

/// The element type a .npy `descr` names: '<f2', '<f4', '<f8' (and the
/// '>' and '=' byte orders: `bigEndian` says which), and 2-byte raw values
/// ('|V2', '<V2', ...) as bfloat16, which is how NumPy saves an ml_dtypes
/// bfloat16 array (little-endian: the machines that write them);
/// Unsupported otherwise. Both .npy readers (Npy.cpp, readTensor) ask it.
DType npyDescrType(const std::string &descr, bool &bigEndian);

/// "(768, 2304)" style.
std::string shapeString(const std::vector<int64_t> &shape);
/// "float16", "bfloat16", "float32", "float64".
const char *dtypeName(DType t);

/// The first of `names` that directory `dir`'s model.safetensors.index.json
/// (Hugging Face's sharded layout) lists in its weight_map, and the file
/// it lists for it, as written there; {"", ""} without a readable index or
/// any of the names.
std::pair<std::string, std::string> indexedFile(const std::string &dir,
                                                const std::vector<std::string> &names);

} // namespace tensorfile
} // namespace attnrt

#endif // ATTNC_RUNTIME_LIB_TENSORFILE_H
