//===- Runtime.h - libattnrt: load, check, pack, run, compare --*- C++ -*-===//
//
// The thin runtime around attnc-generated kernels. It never links MLIR or
// LLVM: it dlopen()s a kernel library, validates its attnc_kernel_info
// record, packs weights, runs forward, and compares results with the
// reference interpreter (Interpreter.h). No exceptions cross this API:
// failures come back as a false/empty result plus a message.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_RUNTIME_H
#define ATTNC_RUNTIME_RUNTIME_H

#include "attnc/runtime/Block.h"
#include "attnc/runtime/abi.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnrt {

/// Error classes of Kernel::load, distinct so callers and tests can tell
/// them apart (attnc-run exits with 10 + code).
enum class LoadError {
  None = 0,
  OpenFailed,      ///< dlopen failed (missing, not ELF, truncated, ...)
  NoQuery,         ///< no attnc_query symbol: not an attnc kernel
  AbiTooNew,       ///< library's ABI version is newer than this runtime's
  AbiMismatch,     ///< abi_version or struct_size disagree with this runtime
  BadMetadata,     ///< inconsistent metadata (sizes, layout, weights table)
  MissingEntry,    ///< NAME_pack / NAME_forward / NAME_workspace_size absent
                   ///< (or NAME_decode* when features declares decode)
};

/// A short stable name for an error class: "none", "open_failed",
/// "no_query", "abi_too_new", "abi_mismatch", "bad_metadata",
/// "missing_entry".
const char *toString(LoadError e);

/// The text of a NAME_pack / NAME_forward / NAME_decode return code
/// (ATTNC_OK .. ATTNC_ERR_DEVICE; "unknown status" otherwise).
const char *statusText(int rc);
/// The name of an ATTNC_ISA_* value (abi_names.def: attnc's --target
/// names "x86-64", "x86-avx2", "x86-avx512", "host", "multi", "cuda-sm80",
/// "cuda-sm90", and "none"); "unknown" otherwise.
const char *isaName(uint32_t isa);
/// True for ATTNC_ISA_CUDA_SM80 / _SM90.
bool isCudaIsa(uint32_t isa);
/// Empty when the ATTNC_ISA environment variable is unset, empty or one of
/// the names a CPU kernel accepts (avx512, avx2, x86-64, any case; also
/// x86-avx512, x86-avx2); otherwise the message for the user:
/// "ATTNC_ISA='foo' is not one of x86-avx512, x86-avx2, x86-64 (...)". A kernel
/// library sees such a value as "no code path": its selected_isa() is
/// ATTNC_ISA_NONE and forward/decode return ATTNC_ERR_ISA.
std::string isaEnvProblem();
/// 80 or 90 for a CUDA isa (its sm_XY), else 0.
int cudaSmOf(uint32_t isa);

/// A loaded kernel library. Move-only; dlclose()s on destruction.
class Kernel {
public:
  Kernel() = default;
  Kernel(Kernel &&other) noexcept;
  Kernel &operator=(Kernel &&other) noexcept;
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;
  ~Kernel();

  /// Loads `path`, checks metadata. `abiVersion` is the ABI this runtime
  /// speaks (overridable only for tests). On failure returns false and sets
  /// `err`/`message`.
  bool load(const std::string &path, std::string &message,
            LoadError &err, uint32_t abiVersion = ATTNC_ABI_VERSION);

  const attnc_kernel_info &info() const { return *info_; }
  int64_t packedBytes() const { return info_->packed_bytes; }

  /// Packs storage-layout weights (one buffer per info().weights entry, in
  /// that order, each of the kernel's weight_dtype) into `packed` (resized
  /// to packedBytes()). Returns the C status code (ATTNC_OK on success).
  int pack(const std::vector<const void *> &weights,
           std::vector<unsigned char> &packed) const;
  /// The same from float32 weights, converted to the kernel's weight_dtype
  /// (round to nearest even) when it is bf16 or f16. A finite value that
  /// f16 cannot hold (|v| >= 65520, which rounds to inf) is ATTNC_ERR_ARGS
  /// (attnrt::firstOutOfRange names the element).
  int packFloat(const std::vector<const float *> &weights,
                std::vector<unsigned char> &packed) const;

  /// Empty `why` and true when forward can take this shape: batch and
  /// seqLen >= 1, seqLen <= max_seq_len (when set), and batch*seqLen*width*4
  /// fits in 64 bits. Calls nothing in the library.
  bool checkShape(int64_t batch, int64_t seqLen, std::string &why) const;
  /// The same for a call with K/V sequence length kvSeqLen: for a
  /// cross-attention kernel (ATTNC_FEATURE_CROSS) kvSeqLen obeys the same
  /// rules as seqLen (and batch*kvSeqLen*d_model*4 and the attention
  /// weights' batch*heads*seqLen*kvSeqLen*4 bytes fit in 64 bits); for
  /// self-attention it must be 0 or seqLen.
  bool checkShape(int64_t batch, int64_t seqLen, int64_t kvSeqLen,
                  std::string &why) const;

  /// NAME_workspace_size(batch, seqLen, kvSeqLen) after checkShape, checked
  /// against what the metadata allows (workspace_fixed +
  /// batch*rows*workspace_per_row*4 + 1024 bytes of alignment slack, rows
  /// = seqLen, or seqLen + kvSeqLen for cross-attention): -1 with the
  /// reason when the shape is refused or the library asks for more (then
  /// *libraryFault, when given, is set: the library, not the shape, is at
  /// fault). Allocates nothing. Without kvSeqLen: self-attention
  /// (kvSeqLen = seqLen).
  int64_t workspaceBytes(int64_t batch, int64_t seqLen, std::string &why,
                         bool *libraryFault = nullptr) const;
  int64_t workspaceBytes(int64_t batch, int64_t seqLen, int64_t kvSeqLen,
                         std::string &why, bool *libraryFault = nullptr) const;
  /// The same without the reason.
  int64_t workspaceSize(int64_t batch, int64_t seqLen) const;
  int64_t workspaceSize(int64_t batch, int64_t seqLen, int64_t kvSeqLen) const;

  /// Empty `why` and true when a forward call may pass these variant
  /// fields: each one set (lengths, xKv/kvSeqLen, kvLengths, probs) is one
  /// this kernel reads (info().features), a cross-attention kernel gets
  /// xKv and kvSeqLen, every length is in range, and the shapes pass
  /// checkShape. Calls nothing in the library.
  bool checkVariants(int64_t batch, int64_t seqLen,
                     const VariantInputs &variants, const void *probs,
                     std::string &why) const;

  /// True for a CUDA kernel (ATTNC_FEATURE_CUDA): forward and decode take
  /// device pointers (forwardDevice, decodeDevice); forward and decode,
  /// which take host memory, refuse it.
  bool isCuda() const {
    return info_ && (info_->features & ATTNC_FEATURE_CUDA) != 0;
  }
  /// Empty `why` and true when forward / decode may run this kernel on host
  /// memory (a CPU kernel). For a CUDA kernel false, with "kernel NAME
  /// targets cuda-sm90: its forward takes device pointers (...)".
  bool checkHost(std::string &why) const;

  /// y must hold batch*seqLen*out_dim floats; workspace is allocated here
  /// when `workspace` is empty or too small. Returns ATTNC_ERR_BAD_SHAPE
  /// when checkShape refuses the shape and ATTNC_ERR_WORKSPACE when
  /// workspaceBytes does, without calling the library's forward. `threads`
  /// is passed on as attnc_forward_args::num_threads (1 = the calling
  /// thread, 0 = one per CPU) and the tasks run on the runtime's pool
  /// (attnrt_parallel_for, attnrt_c.h), which every kernel the runtime
  /// calls shares; a non-null `hook` runs them instead. Decode does the
  /// same. A CUDA kernel (isCuda()) is
  /// refused with ATTNC_ERR_DEVICE without calling the library: its forward
  /// takes device pointers (forwardDevice).
  int forward(const void *packed, const void *x, void *y, int64_t batch,
              int64_t seqLen, std::vector<unsigned char> &workspace,
              int threads = 1, attnc_parallel_for_fn hook = nullptr,
              void *hookCtx = nullptr) const;
  /// The same with the attention variants' fields (abi.h): padding
  /// lengths, the cross-attention input (xKv [batch, kvSeqLen, d_model]),
  /// and `probs` ([batch, heads, seqLen, kvSeqLen], kvSeqLen = seqLen for
  /// self-attention; null: not asked for). Returns ATTNC_ERR_ARGS without
  /// calling the library when checkVariants refuses them (a field this
  /// kernel does not read, a length out of range) and ATTNC_ERR_BAD_SHAPE
  /// for a kvSeqLen checkShape refuses.
  int forward(const void *packed, const void *x, void *y, int64_t batch,
              int64_t seqLen, const VariantInputs &variants, void *probs,
              std::vector<unsigned char> &workspace, int threads = 1,
              attnc_parallel_for_fn hook = nullptr,
              void *hookCtx = nullptr) const;

  /// A CUDA kernel's forward on DEVICE memory (the current CUDA context's:
  /// Cuda.h): packed (packedBytes() bytes, NAME_pack's host output copied
  /// to the device), x [batch, seqLen, d_model], y [batch, seqLen,
  /// out_dim], workspace of workspaceBytes (at least this->workspaceBytes
  /// for the shape) and, for cross-attention (ATTNC_FEATURE_CROSS), xKv
  /// [batch, kvSeqLen, d_model]. Passes struct_size = sizeof
  /// (attnc_forward_args) and `stream` (a CUstream; null: the default
  /// stream). The kernel only queues its launches: synchronize before
  /// reading y. Nothing here dereferences the device pointers. Returns
  /// ATTNC_ERR_ARGS for a CPU kernel (or a K/V input it does not take),
  /// ATTNC_ERR_NULL_ARG for a cross-attention kernel without xKv,
  /// ATTNC_ERR_BAD_SHAPE / ATTNC_ERR_WORKSPACE as forward, all without
  /// calling the library; else the library's status. No padding lengths
  /// (every token valid): see the overload with DeviceLengths.
  int forwardDevice(const void *packed, const void *x, void *y,
                    int64_t batch, int64_t seqLen, void *workspace,
                    int64_t workspaceBytes, const void *xKv = nullptr,
                    int64_t kvSeqLen = 0, void *stream = nullptr) const;

  /// The padding lengths of a forwardDevice call (a kernel with
  /// ATTNC_FEATURE_LENGTHS), each array twice: the device copy the kernel
  /// reads and the host copy it was uploaded from, which the runtime
  /// checks (the kernel's glue cannot read device memory, and its device
  /// code only clamps each length to [0, T]). The caller keeps the two
  /// equal. Each pair is both set or both null (null: every token valid).
  struct DeviceLengths {
    const int32_t *lengths = nullptr;       ///< device, int32 [batch]
    const int32_t *kvLengths = nullptr;     ///< device, int32 [batch]
    const int32_t *hostLengths = nullptr;   ///< host copy of lengths
    const int32_t *hostKvLengths = nullptr; ///< host copy of kvLengths
  };

  /// forwardDevice with padding lengths: args->lengths / kv_lengths get the
  /// device pointers of `len`, after the host copies pass the checks
  /// checkVariants does for forward (0 <= lengths[b] <= seqLen, 0 <=
  /// kvLengths[b] <= kvSeqLen; lengths only for a kernel with the lengths
  /// feature, kvLengths only for cross-attention with it). Returns, besides
  /// what the overload above returns, ATTNC_ERR_NULL_ARG when a pair has
  /// one pointer without the other and ATTNC_ERR_ARGS when the host
  /// copies are refused, without calling the library; checkVariants with
  /// a VariantInputs of the host copies (and xKv, kvSeqLen) gives the
  /// reason.
  int forwardDevice(const void *packed, const void *x, void *y,
                    int64_t batch, int64_t seqLen, void *workspace,
                    int64_t workspaceBytes, const void *xKv,
                    int64_t kvSeqLen, const DeviceLengths &len,
                    void *stream = nullptr) const;

  /// The KV cache a forwardDevice call fills (a kernel with
  /// ATTNC_FEATURE_DECODE): two device buffers [batch, kv_heads, cacheLen,
  /// head_dim]; forward writes rows [0, seqLen) of each sequence (with
  /// padding lengths, rows past lengths[b] hold unspecified values), so
  /// decodeDevice continues at position seqLen. All null / 0: no cache.
  struct DeviceCache {
    void *kCache = nullptr; ///< device
    void *vCache = nullptr; ///< device
    int64_t cacheLen = 0;    ///< rows per sequence and kv head, >= seqLen
  };

  /// forwardDevice filling a KV cache: args->k_cache / v_cache /
  /// cache_len / cache_elems get `cache` (struct_size = sizeof, as every
  /// forwardDevice call). Refused without calling the library with the
  /// codes Kernel::forward gives a host cache: ATTNC_ERR_ARGS for a kernel
  /// without the decode feature or k_cache == v_cache, ATTNC_ERR_NULL_ARG
  /// for one cache without the other, ATTNC_ERR_BUFFER_SIZE for a
  /// cacheLen without caches, ATTNC_ERR_BAD_SHAPE for cacheLen < seqLen
  /// (or a cache checkShape refuses); besides what the overloads above
  /// return. A null `cache` (DeviceCache()) is the overload above.
  int forwardDevice(const void *packed, const void *x, void *y,
                    int64_t batch, int64_t seqLen, void *workspace,
                    int64_t workspaceBytes, const void *xKv,
                    int64_t kvSeqLen, const DeviceLengths &len,
                    const DeviceCache &cache, void *stream = nullptr) const;

  /// The overload above with the attention weights: `probs` (a kernel with
  /// ATTNC_FEATURE_PROBS; null: not computed) is a device buffer [batch,
  /// heads, seqLen, kvSeqLen] in the kernel's dtype, written by the call
  /// (args->probs / probs_elems). ATTNC_ERR_ARGS for a kernel without the
  /// probs output, without calling the library.
  int forwardDevice(const void *packed, const void *x, void *y,
                    int64_t batch, int64_t seqLen, void *workspace,
                    int64_t workspaceBytes, const void *xKv,
                    int64_t kvSeqLen, const DeviceLengths &len,
                    const DeviceCache &cache, void *probs, void *stream) const;

  /// The ATTNC_ISA_* code path that runs on this CPU (ATTNC_ISA_NONE when
  /// none fits). For a CUDA kernel, its ATTNC_ISA_CUDA_SMxx when a suitable
  /// device is present, else ATTNC_ISA_NONE.
  uint32_t selectedIsa() const;

  /// True when the kernel has the decode entry (ATTNC_FEATURE_DECODE).
  bool hasDecode() const { return decode_ != nullptr; }
  /// NAME_decode_workspace_bytes(batch, seqLen, cacheLen), checked against
  /// the metadata's bound for batch*seqLen tokens; -1 with the reason when
  /// refused.
  int64_t decodeWorkspaceBytes(int64_t batch, int64_t seqLen, int64_t cacheLen,
                               std::string &why) const;
  /// One decode call (abi.h, attnc_decode_args): seqLen new tokens per
  /// sequence (1: a step of generation; more: a chunk of a chunked
  /// prefill), x [batch, seqLen, d_model], y [batch, seqLen, out_dim],
  /// positions [batch] with positions[b] + seqLen <= cacheLen, caches
  /// [batch, kv_heads, cacheLen, head_dim]. Returns ATTNC_ERR_ARGS without
  /// calling the library for a kernel without decode or a position out of
  /// range, ATTNC_ERR_DEVICE for a CUDA kernel (decodeDevice); else the C
  /// status code.
  int decode(const void *packed, const void *x, void *y, int64_t batch, int64_t seqLen,
             const int32_t *positions, void *kCache, void *vCache,
             int64_t cacheLen, std::vector<unsigned char> &workspace,
             int threads = 1, attnc_parallel_for_fn hook = nullptr,
             void *hookCtx = nullptr) const;

  /// A CUDA kernel's decode call on DEVICE memory: packed, x [batch,
  /// seqLen, d_model], y [batch, seqLen, out_dim], positions [batch]
  /// (int32), the caches [batch, kv_heads, cacheLen, head_dim]
  /// (forwardDevice with a DeviceCache fills them) and a workspace of
  /// workspaceBytes (at least decodeWorkspaceBytes(batch, seqLen,
  /// cacheLen)). `hostPositions` is the host copy `positions` was uploaded
  /// from: the runtime checks it (as decode does) before the call, since
  /// the glue cannot read device memory and the device code only clamps;
  /// the caller keeps the two equal. Passes `stream` (a CUstream; null:
  /// the default stream); the kernel only queues its launches (synchronize
  /// before reading y). Nothing here dereferences a device pointer.
  /// Returns, without calling the library: ATTNC_ERR_ARGS for a kernel
  /// without decode, a CPU kernel (host memory: decode), k_cache ==
  /// v_cache or a host position out of range; ATTNC_ERR_NULL_ARG for a
  /// null pointer (either copy of the positions included);
  /// ATTNC_ERR_BAD_SHAPE for a shape decodeWorkspaceBytes refuses;
  /// ATTNC_ERR_WORKSPACE for a workspace smaller than it asks for. Else
  /// the library's status.
  int decodeDevice(const void *packed, const void *x, void *y, int64_t batch,
                   int64_t seqLen, const int32_t *positions,
                   const int32_t *hostPositions, void *kCache, void *vCache,
                   int64_t cacheLen, void *workspace, int64_t workspaceBytes,
                   void *stream = nullptr) const;

private:
  /// forward after the shape and variant checks.
  int forwardChecked(const void *packed, const void *x, void *y,
                     int64_t batch, int64_t seqLen,
                     const VariantInputs &variants, void *probs,
                     std::vector<unsigned char> &workspace, int threads,
                     attnc_parallel_for_fn hook, void *hookCtx) const;

  void *handle_ = nullptr;
  /// The private copy (a memfd) handle_ was loaded from when the file was
  /// already mapped in this process (Kernel::load), else -1; closed after
  /// the dlclose.
  int privateFd_ = -1;
  const attnc_kernel_info *info_ = nullptr;
  attnc_pack_fn pack_ = nullptr;
  attnc_workspace_size_fn wsSize_ = nullptr;
  attnc_forward_fn forward_ = nullptr;
  attnc_decode_workspace_bytes_fn decodeWsSize_ = nullptr;
  attnc_decode_fn decode_ = nullptr;
};

/// Validates a metadata record on its own (used by Kernel::load, exposed for
/// unit tests). Returns an empty string when valid, else the reason.
std::string validateInfo(const attnc_kernel_info &info,
                         uint32_t abiVersion = ATTNC_ABI_VERSION);

//===----------------------------------------------------------------------===//
// .npy I/O (float32, C order, version 1.0/2.0/3.0 headers)
//===----------------------------------------------------------------------===//

/// Whether a .npy `descr` is the 2-byte raw type read as bfloat16 ('|V2',
/// '<V2', ...: how NumPy saves an ml_dtypes bfloat16 array), and the note
/// the readers give when they read one.
bool npyRawBf16(const std::string &descr);
std::string npyRawBf16Note(const std::string &descr);

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
  /// The file's dtype when it was converted to float32 ('<f8', '<f2',
  /// '>f4', '|V2' read as bfloat16, ...); empty when the file held
  /// little-endian float32.
  std::string dtype;
};

/// Reads a C-order .npy of float32, or of float16 / float64 (either byte
/// order) or ml_dtypes' bfloat16 (2-byte raw values, '|V2') converted to
/// float32 (NpyArray::dtype says so: tell the user; a
/// finite float64 beyond float32's range is an error). Anything else
/// (another dtype, Fortran order, bad magic, truncated data, trailing
/// bytes, object arrays, a directory, a header longer than 1 MiB, more
/// than `maxDataBytes` of float32 data) returns false with a clear message
/// naming the file. Reads the preamble, the header and exactly the
/// declared data incrementally, in chunks.
/// `acceptShape`, when set, sees the header's shape before any data is
/// read or allocated; returning false (with a reason) fails the read.
using NpyShapeCheck =
    std::function<bool(const std::vector<int64_t> &shape, std::string &why)>;
bool readNpy(const std::string &path, NpyArray &out, std::string &message,
             int64_t maxDataBytes = INT64_MAX,
             const NpyShapeCheck &acceptShape = {});
/// Same, from an in-memory image of the file (`name` is used in messages).
bool parseNpy(const std::string &bytes, const std::string &name,
              NpyArray &out, std::string &message);
/// Writes float32 C-order .npy (version 1.0). Returns false with a message on
/// I/O failure.
bool writeNpy(const std::string &path, const std::vector<int64_t> &shape,
              const float *data, std::string &message);

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

struct CompareResult {
  /// Over every element finite in both (checked or unbounded).
  double maxAbs = 0;   ///< max |out - ref|
  double maxRel = 0;   ///< max |out - ref| / max(|ref|, 1e-6)
  double meanAbs = 0;
  int64_t worstIndex = -1;  ///< where |out - ref| is largest (or the first
                            ///< non-finite or unbounded element)
  double maxBound = 0;      ///< largest float32 bound of a checked element
  /// The element closest to (or furthest past) its allowance:
  /// |out - ref| / (atol + rtol*|ref| + bound); the first non-finite or
  /// unbounded element when there is one (a failure of its own kind).
  double worstRatio = 0;
  double worstAllowed = 0;
  int64_t worstRatioIndex = -1;
  /// The same over the checked elements only (finite in both, bounded):
  /// -1 when there is none.
  int64_t worstCheckedIndex = -1;
  double worstCheckedRatio = 0;
  double worstCheckedAllowed = 0;
  int64_t checked = 0;             ///< elements held to their allowance
  int64_t outside = 0;             ///< checked elements past their allowance
  int64_t nonFinite = 0;           ///< NaN/inf in out where ref is finite
  int64_t finiteVsNonFiniteRef = 0; ///< out finite where ref is NaN/inf
  int64_t nonFiniteBoth = 0;       ///< NaN/inf in both (bad inputs)
  int64_t firstNonFinite = -1;     ///< the first of those three kinds
  /// Finite in both, but the bound is not finite or > max |ref| (and
  /// atol): nothing can be checked there, which is no pass.
  int64_t unbounded = 0;
  int64_t firstUnbounded = -1;
  double firstUnboundedBound = 0;  ///< its bound (inf, NaN or too wide)
  int64_t unboundedInfinite = 0;   ///< unbounded ones whose bound is inf/NaN
  double maxRef = 0;               ///< max |ref| over the finite ones
  /// Every element is finite in both, bounded and within its allowance.
  bool ok = true;
};

/// The numeric gate (docs/checking.md): passes when every element of out
/// and ref is finite and |out - ref| <= atol + rtol*|ref| + bound[i]
/// (bound may be null: 0). Any NaN/inf on either side fails, and so does an
/// element whose bound is not finite or larger than both max |ref| over
/// the output and atol (an inconclusive check is no pass).
CompareResult compare(const float *out, const double *ref, const double *bound,
                      int64_t n, double atol, double rtol);
/// The same without a bound.
CompareResult compare(const float *out, const double *ref, int64_t n,
                      double atol, double rtol);

} // namespace attnrt

#endif // ATTNC_RUNTIME_RUNTIME_H
