/*===- weights.h - Load a kernel's weights from checkpoint files -*- C -*-===*
 *
 * Reads the storage-layout weights an attnc kernel's NAME_pack takes from
 * the files people have, and hands them back as buffers of the kernel's
 * weight_dtype in the kernel's weight order (attnc_kernel_info.weights):
 *
 *   - a directory of NumPy .npy files, one per tensor (DIR/<name>.npy), and
 *     any .safetensors / .npz files in it (a sharded checkpoint);
 *   - one .npz archive (np.savez / np.savez_compressed: stored or deflate
 *     entries, zip64 included; inflated with zlib);
 *   - one .safetensors file (Hugging Face).
 *
 * A prefix picks one layer out of a whole checkpoint ("h.3.attn.",
 * "encoder.layer.3.attention.", "model.layers.3.self_attn."): only names
 * that start with it are considered, and it is removed before matching.
 * Names are then matched to the kernel's tensors, including the Hugging
 * Face spellings of the `separate` layout (BERT's self.query / self.key /
 * self.value / output.dense, OPT's out_proj); docs/weights.md has the
 * table. Tensors of another dtype (f32, f16, bf16, f64) are converted to
 * the kernel's weight_dtype (round to nearest even), each with a note; a
 * tensor already of that dtype is used as stored. Shapes must be exactly
 * the kernel's.
 *
 * Every file is read with bounds checks; a malformed file (truncated, bad
 * header, offsets out of range or overlapping, wrong dtype or shape, a
 * missing, ambiguous or duplicated tensor) gives a one-line error that
 * names the file and the tensor. Plain C; no exceptions cross it.
 *===---------------------------------------------------------------------===*/
#ifndef ATTNC_RUNTIME_WEIGHTS_H
#define ATTNC_RUNTIME_WEIGHTS_H

#include "attnc/runtime/abi.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes of attnrt_weights_open. */
#define ATTNRT_WEIGHTS_OK 0
#define ATTNRT_WEIGHTS_ERR_ARG 1      /* NULL path/info/out, bad info */
#define ATTNRT_WEIGHTS_ERR_IO 2       /* cannot open or read a file */
#define ATTNRT_WEIGHTS_ERR_FORMAT 3   /* malformed file (header, offsets,
                                         truncation, zip structure, CRC) */
#define ATTNRT_WEIGHTS_ERR_MISSING 4  /* a kernel tensor is not there */
#define ATTNRT_WEIGHTS_ERR_DUPLICATE 5 /* a name twice, or two spellings of
                                          one tensor */
#define ATTNRT_WEIGHTS_ERR_DTYPE 6    /* a needed tensor's dtype is not
                                         f32/f16/bf16/f64 (or overflows) */
#define ATTNRT_WEIGHTS_ERR_SHAPE 7    /* a needed tensor's shape differs */
#define ATTNRT_WEIGHTS_ERR_NOMEM 8    /* allocation failed */

/* Loaded weights (opaque). */
typedef struct attnrt_weights attnrt_weights;

/* Opens `path` (a directory, a .npz or a .safetensors file), keeps the
 * tensors whose names start with `prefix` (NULL or "": all), and loads the
 * ones `info` needs as info->weight_dtype. On success stores a handle in *out and
 * returns ATTNRT_WEIGHTS_OK. On failure stores NULL, returns an
 * ATTNRT_WEIGHTS_ERR_* code and writes a one-line message (naming the file
 * and the tensor) into err[0..err_size) when err is not NULL. */
int attnrt_weights_open(const char *path, const char *prefix,
                        const attnc_kernel_info *info, attnrt_weights **out,
                        char *err, size_t err_size);

/* The number of tensors: info->num_weights. */
uint32_t attnrt_weights_count(const attnrt_weights *w);

/* num_weights pointers in the kernel's order, to elements of the kernel's
 * weight_dtype: the `weights` argument of NAME_pack. Valid until
 * attnrt_weights_close. */
const void *const *attnrt_weights_data(const attnrt_weights *w);

/* num_weights element counts: the `weight_elems` argument of NAME_pack. */
const int64_t *attnrt_weights_elems(const attnrt_weights *w);

/* The same tensors as float32 (the values NAME_pack packs, exactly: bf16
 * and f16 widen without rounding), for references such as attnrt's
 * interpreter. Valid until attnrt_weights_close. */
const float *const *attnrt_weights_float32(const attnrt_weights *w);

/* The name tensor i had in the file (prefix included), e.g.
 * "encoder.layer.3.attention.self.query.weight"; NULL when out of range. */
const char *attnrt_weights_source_name(const attnrt_weights *w, uint32_t i);

/* Notes on what was converted ("FILE: NAME: bfloat16 converted to
 * float32"); NULL when i is out of range. */
uint32_t attnrt_weights_num_notes(const attnrt_weights *w);
const char *attnrt_weights_note(const attnrt_weights *w, uint32_t i);

/* Frees everything; NULL is fine. */
void attnrt_weights_close(attnrt_weights *w);

/* A short stable name for a return code: "ok", "bad_argument", "io",
 * "format", "missing", "duplicate", "dtype", "shape", "no_memory". */
const char *attnrt_weights_strerror(int code);

#ifdef __cplusplus
} /* extern "C" */

#include <memory>
#include <string>
#include <vector>

namespace attnrt {

/// RAII wrapper over attnrt_weights:
///
///   std::string err;
///   attnrt::Weights w = attnrt::Weights::open(path, "h.3.attn.", *info, err);
///   if (!w) { fprintf(stderr, "%s\n", err.c_str()); return 1; }
///   NAME_pack(w.data(), w.elems(), w.count(), packed, packed_bytes);
class Weights {
public:
  Weights() = default;

  /// Opens and loads; on failure returns an empty Weights (false) with the
  /// message in `err` and the ATTNRT_WEIGHTS_ERR_* code in `code`.
  static Weights open(const std::string &path, const std::string &prefix,
                      const attnc_kernel_info &info, std::string &err,
                      int *code = nullptr) {
    attnrt_weights *w = nullptr;
    char buf[1024];
    int rc = attnrt_weights_open(path.c_str(), prefix.c_str(), &info, &w, buf,
                                 sizeof buf);
    if (code)
      *code = rc;
    Weights r;
    if (rc != ATTNRT_WEIGHTS_OK) {
      err = buf;
      return r;
    }
    err.clear();
    r.w_.reset(w);
    return r;
  }

  explicit operator bool() const { return w_ != nullptr; }
  uint32_t count() const { return attnrt_weights_count(w_.get()); }
  const void *const *data() const { return attnrt_weights_data(w_.get()); }
  const int64_t *elems() const { return attnrt_weights_elems(w_.get()); }
  /// The buffers as a vector (what attnrt::Kernel::pack takes).
  std::vector<const void *> pointers() const {
    return std::vector<const void *>(data(), data() + count());
  }
  /// The buffers as float32 (what the interpreter takes).
  std::vector<const float *> float32() const {
    const float *const *f = attnrt_weights_float32(w_.get());
    return std::vector<const float *>(f, f + count());
  }
  std::string sourceName(uint32_t i) const {
    const char *s = attnrt_weights_source_name(w_.get(), i);
    return s ? s : "";
  }
  std::vector<std::string> notes() const {
    std::vector<std::string> r;
    for (uint32_t i = 0; i < attnrt_weights_num_notes(w_.get()); ++i)
      r.push_back(attnrt_weights_note(w_.get(), i));
    return r;
  }

private:
  struct Close {
    void operator()(attnrt_weights *w) const { attnrt_weights_close(w); }
  };
  std::unique_ptr<attnrt_weights, Close> w_;
};

} // namespace attnrt
#endif /* __cplusplus */

#endif /* ATTNC_RUNTIME_WEIGHTS_H */
