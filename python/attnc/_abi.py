"""ctypes mirror of runtime/include/attnc/runtime/abi.h (ABI version 2).

Field for field, in the same order and with the same C types, so that
ctypes lays the structs out as the C compiler does; tests/python checks
every size and offset against a C program compiled from abi.h.
"""
import ctypes as C

ABI_VERSION = 3

# Return codes of NAME_pack / NAME_forward.
OK = 0
STATUS_NAMES = {
    0: "ATTNC_OK",
    1: "ATTNC_ERR_NULL_ARG",
    2: "ATTNC_ERR_BAD_SHAPE",
    3: "ATTNC_ERR_WORKSPACE",
    4: "ATTNC_ERR_BUFFER_SIZE",
    5: "ATTNC_ERR_ISA",
    6: "ATTNC_ERR_THREADS",
    7: "ATTNC_ERR_ARGS",
    8: "ATTNC_ERR_NO_DRIVER",
    9: "ATTNC_ERR_NO_DEVICE",
    10: "ATTNC_ERR_DEVICE",
}

MASKS = {0: "none", 1: "causal", 2: "padding", 3: "causal+padding", 4: "sliding_window"}
LAYOUTS = {0: "gpt2_conv1d", 1: "torch_in_proj", 2: "separate"}
DTYPES = {0: "f32"}
ISA_CUDA_SM80 = 5  # CUDA, PTX for sm_80 (forward takes device pointers)
ISA_CUDA_SM90 = 6  # CUDA, PTX for sm_90
ISA_NONE = 0xFFFFFFFF
ISAS = {0: "x86-64", 1: "avx2", 2: "avx512", 3: "host", 4: "multi",
        ISA_CUDA_SM80: "cuda-sm80", ISA_CUDA_SM90: "cuda-sm90", ISA_NONE: "none"}

# attnc_kernel_info.features: the optional forward fields a kernel reads.
FEATURE_LENGTHS = 1  # lengths (padding masks)
FEATURE_CROSS = 2    # x_kv, kv_seq_len, kv_lengths (cross-attention)
FEATURE_PROBS = 4    # probs (the attention weights)
FEATURE_DECODE = 8   # k_cache, v_cache, cache_len and the NAME_decode entries
FEATURE_CUDA = 16    # a CUDA kernel: forward takes device pointers and a stream
FEATURE_ROPE = 32    # Q and K rotated (rope_* fields of the metadata)
FEATURE_SCORE_MODS = 64  # scores modified before the mask (softcap, alibi_*)
FEATURE_CHECKSUM = 128  # a CRC-32 of the file in section .attnc.checksum (libattnrt checks it)

# attnc_kernel_info.rope_style and .bias_flags (version 3).
ROPE_NONE, ROPE_HALF_SPLIT, ROPE_INTERLEAVED = 0, 1, 2
ROPE_STYLES = {ROPE_NONE: "none", ROPE_HALF_SPLIT: "half_split", ROPE_INTERLEAVED: "interleaved"}
BIAS_Q, BIAS_K, BIAS_V, BIAS_O = 1, 2, 4, 8
QK_NORM_NONE, QK_NORM_HEAD, QK_NORM_PROJECTION = 0, 1, 2
FEATURES = {FEATURE_LENGTHS: "lengths", FEATURE_CROSS: "cross", FEATURE_PROBS: "probs",
            FEATURE_DECODE: "decode", FEATURE_CUDA: "cuda", FEATURE_ROPE: "rope",
            FEATURE_SCORE_MODS: "score_mods"}
# FEATURE_CHECKSUM is a property of the file (libattnrt verifies it before
# the package opens the library), not an argument: not in `features`.

# Status codes by name (the ones the package raises itself).
ERR_NULL_ARG = 1
ERR_BAD_SHAPE = 2
ERR_BUFFER_SIZE = 4
ERR_THREADS = 6
ERR_ARGS = 7
ERR_NO_DRIVER = 8    # CUDA kernels: libcuda.so.1 cannot be loaded, or cuInit failed
ERR_NO_DEVICE = 9    # CUDA kernels: no device, or one older than the kernel's sm
ERR_DEVICE = 10      # CUDA kernels: a driver call failed (or host memory given)


class TensorInfo(C.Structure):
    _fields_ = [
        ("name", C.c_char_p),
        ("rank", C.c_uint32),
        ("reserved", C.c_uint32),
        ("dims", C.c_int64 * 2),
    ]


SelectedIsaFn = C.CFUNCTYPE(C.c_uint32)


class KernelInfo(C.Structure):
    _fields_ = [
        ("abi_version", C.c_uint32),
        ("struct_size", C.c_uint32),
        ("name", C.c_char_p),
        ("spec_hash", C.c_uint64),
        ("d_model", C.c_int64),
        ("heads", C.c_int64),
        ("kv_heads", C.c_int64),
        ("head_dim", C.c_int64),
        ("out_dim", C.c_int64),
        ("mask", C.c_uint32),
        ("causal_align", C.c_uint32),
        ("window", C.c_int64),
        ("bias", C.c_uint32),
        ("out_proj", C.c_uint32),
        ("scale", C.c_double),
        ("dtype", C.c_uint32),
        ("isa", C.c_uint32),
        ("weight_layout", C.c_uint32),
        ("features", C.c_uint32),
        ("num_weights", C.c_uint32),
        ("reserved0", C.c_uint32),
        ("weights", C.POINTER(TensorInfo)),
        ("packed_floats", C.c_int64),
        ("max_seq_len", C.c_int64),
        ("workspace_per_row", C.c_int64),
        ("workspace_fixed", C.c_int64),
        ("stack_bytes", C.c_int64),
        ("selected_isa", SelectedIsaFn),
        ("target_triple", C.c_char_p),
        ("target_cpu", C.c_char_p),
        ("compiler_version", C.c_char_p),
        # Version 3.
        ("bias_flags", C.c_uint32),
        ("weight_dtype", C.c_uint32),
        ("tp_size", C.c_int32),
        ("tp_rank", C.c_int32),
        ("rope_style", C.c_uint32),
        ("rope_pairs", C.c_uint32),
        ("rotary_dim", C.c_int64),
        ("rope_inv_freq", C.POINTER(C.c_double)),
        ("rope_long_inv_freq", C.POINTER(C.c_double)),
        ("rope_long_from", C.c_int64),
        ("rope_attention_factor", C.c_double),
        ("softcap", C.c_double),
        ("alibi_slopes", C.POINTER(C.c_double)),
        ("alibi_before_scale", C.c_uint32),
        ("t5_num_buckets", C.c_int32),
        ("t5_max_distance", C.c_int32),
        ("t5_bidirectional", C.c_uint32),
        ("qk_norm", C.c_uint32),
        ("sinks", C.c_uint32),
        ("qk_norm_eps", C.c_double),
        ("qk_norm_offset", C.c_double),
    ]


# typedef void (*attnc_task_fn)(void *task_ctx, int64_t begin, int64_t end);
TaskFn = C.CFUNCTYPE(None, C.c_void_p, C.c_int64, C.c_int64)
# typedef int (*attnc_parallel_for_fn)(void *, int64_t, attnc_task_fn, void *);
ParallelForFn = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int64, TaskFn, C.c_void_p)


class ForwardArgs(C.Structure):
    _fields_ = [
        ("struct_size", C.c_uint32),
        ("reserved0", C.c_uint32),
        ("packed", C.POINTER(C.c_float)),
        ("packed_floats", C.c_int64),
        ("x", C.POINTER(C.c_float)),
        ("x_floats", C.c_int64),
        ("y", C.POINTER(C.c_float)),
        ("y_floats", C.c_int64),
        ("batch", C.c_int64),
        ("seq_len", C.c_int64),
        ("workspace", C.c_void_p),
        ("workspace_bytes", C.c_int64),
        ("parallel_for", ParallelForFn),
        ("parallel_ctx", C.c_void_p),
        ("num_threads", C.c_int32),
        ("reserved1", C.c_int32),
        ("lengths", C.POINTER(C.c_int32)),
        ("x_kv", C.POINTER(C.c_float)),
        ("x_kv_floats", C.c_int64),
        ("kv_seq_len", C.c_int64),
        ("kv_lengths", C.POINTER(C.c_int32)),
        ("probs", C.POINTER(C.c_float)),
        ("probs_floats", C.c_int64),
        # KV cache (FEATURE_DECODE); added within version 2, see below.
        ("k_cache", C.POINTER(C.c_float)),
        ("v_cache", C.POINTER(C.c_float)),
        ("cache_floats", C.c_int64),
        ("cache_len", C.c_int64),
        # CUDA kernels (FEATURE_CUDA): the CUstream; added within version 2.
        ("stream", C.c_void_p),
    ]


# ATTNC_FORWARD_ARGS_SIZE_V2_0: sizeof(attnc_forward_args) without the
# KV-cache fields (the first version-2 struct), and _V2_1: without the
# stream. Kernels of every age accept V2_0, so a call without a cache
# passes it (as the C runtime does); a call with a cache passes V2_1 (this
# package runs CPU kernels only: the stream is never set).
FORWARD_ARGS_SIZE_V2_0 = ForwardArgs.k_cache.offset
FORWARD_ARGS_SIZE_V2_1 = ForwardArgs.stream.offset


class DecodeArgs(C.Structure):
    """attnc_decode_args: one decode step (FEATURE_DECODE)."""
    _fields_ = [
        ("struct_size", C.c_uint32),
        ("reserved0", C.c_uint32),
        ("packed", C.POINTER(C.c_float)),
        ("packed_floats", C.c_int64),
        ("x", C.POINTER(C.c_float)),
        ("x_floats", C.c_int64),
        ("y", C.POINTER(C.c_float)),
        ("y_floats", C.c_int64),
        ("batch", C.c_int64),
        ("positions", C.POINTER(C.c_int32)),
        ("k_cache", C.POINTER(C.c_float)),
        ("v_cache", C.POINTER(C.c_float)),
        ("cache_floats", C.c_int64),
        ("cache_len", C.c_int64),
        ("workspace", C.c_void_p),
        ("workspace_bytes", C.c_int64),
        ("parallel_for", ParallelForFn),
        ("parallel_ctx", C.c_void_p),
        ("num_threads", C.c_int32),
        ("reserved1", C.c_int32),
        # CUDA kernels: the CUstream; added within version 2.
        ("stream", C.c_void_p),
    ]


# ATTNC_DECODE_ARGS_SIZE_V2_0: sizeof(attnc_decode_args) without the
# stream (every kernel accepts it; this module passes it, as it passes no
# stream).
DECODE_ARGS_SIZE_V2_0 = DecodeArgs.stream.offset

QueryFn = C.CFUNCTYPE(C.POINTER(KernelInfo), C.c_uint32)

# Entry-point prototypes (restype, argtypes), set on the library's symbols.
PACK_PROTO = (C.c_int, [C.POINTER(C.POINTER(C.c_float)), C.POINTER(C.c_int64), C.c_int64,
                        C.POINTER(C.c_float), C.c_int64])
# int64_t NAME_workspace_size(int64_t batch, int64_t seq_len, int64_t kv_seq_len)
WORKSPACE_SIZE_PROTO = (C.c_int64, [C.c_int64, C.c_int64, C.c_int64])
# int NAME_forward(const attnc_forward_args *)
FORWARD_PROTO = (C.c_int, [C.POINTER(ForwardArgs)])
# int64_t NAME_decode_workspace_bytes(int64_t batch, int64_t cache_len)
DECODE_WORKSPACE_SIZE_PROTO = (C.c_int64, [C.c_int64, C.c_int64])
# int NAME_decode(const attnc_decode_args *)
DECODE_PROTO = (C.c_int, [C.POINTER(DecodeArgs)])
