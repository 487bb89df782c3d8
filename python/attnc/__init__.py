"""attnc: run attnc-generated attention kernels from Python (NumPy + ctypes).

    import numpy as np, attnc
    k = attnc.Kernel("libgpt2.so")           # reads the kernel's metadata
    print(k)                                 # name, shapes, layout, weights
    packed = k.pack(weights)                 # dict name -> array, or a list
    y = k.forward(x, packed, num_threads=4)  # x: [batch, seq, d_model] float32
    # The variants, where k.features has them ("lengths", "cross", "probs"):
    y, probs = k.forward(x, packed, lengths=[7, 3], x_kv=mem, kv_lengths=[9, 4],
                         want_probs=True)
    # KV-cache decode ("decode" in k.features; spec: decode: true):
    kc, vc = k.new_cache(batch=2, cache_len=64)  # [2, kv_heads, 64, head_dim] each
    y = k.forward(prompt, packed, k_cache=kc, v_cache=vc)  # fills rows [0, T)
    y1 = k.decode(tok, packed, positions=[T, T], k_cache=kc, v_cache=vc)

Pure Python: the kernel library is opened with ctypes, its
attnc_kernel_info (ABI version 7) is mirrored in attnc._abi, and nothing
is compiled. Before ctypes opens a kernel library, libattnrt (attnc's
runtime library) checks it with the loader attnc-run uses
(attnrt_check_library: a complete x86-64 ELF file, attnc_query, the ABI,
the whole metadata record, the entry points); a refusal raises
attnc.AttncError with the loader's message and `.code`, attnc-run's exit
code (11..16, docs/exit-codes.md). libattnrt is found through
$ATTNC_LIBATTNRT (a path), attnc/_lib/libattnrt.so*, the install prefix
(PREFIX/lib when the package is PREFIX/share/attnc/python/attnc), a
source tree's build/runtime/, then ctypes.util.find_library("attnrt");
attnc.libattnrt_path() says which one is used, and without one Kernel()
raises AttncError saying how to point at it.

Weights are packed once (NAME_pack) into a byte (uint8) array; forward (and
decode) use a workspace of what NAME_workspace_size
(NAME_decode_workspace_bytes) asks for, the calling thread's (kept for
its next call: attnc.release_workspace() frees it), and check every argument before the
call, raising attnc.ArgumentError naming it: features, shapes, length and
position ranges, and every buffer handed to the library: inputs (x, x_kv,
weights: any real dtype, NumPy or torch, converted to the kernel's types;
a bf16/f16 kernel reads x and x_kv of its dtype as they are) and the
buffers it writes in place (out, probs_out, k_cache, v_cache: NumPy arrays
or CPU torch tensors, exactly of the kernel's dtype (float32; out and
probs_out of a bf16/f16 kernel may also be left out for float32 results),
C-contiguous, aligned, writable, of the exact shape, overlapping no other
buffer of the call). See docs/embedding.md and docs/python.md.
"""
import ctypes as C
import os
import stat
import threading
import warnings

import numpy as np

from . import _abi, _runtime
from . import weights as _weights
from ._abi import ABI_VERSION
from .weights import load_safetensors, save_safetensors, map_names, to_numpy
from ._compile import compile, from_hf, CompileError, attnc_binary, compiler_version  # noqa: A004


_ISA_NAMES = ("amxbf16", "avx512bf16", "avx512", "avx2", "x86-64", "x86-amx-bf16",
              "x86-avx512-bf16", "x86-avx512", "x86-avx2")


def _isa_env_note(rc, isa=None):
    """ATTNC_ERR_ISA because of a value of ATTNC_ISA the kernel does not
    know (it selects no code path then), or because this CPU runs none of
    the library's paths (`isa`: what it was compiled for): say so, as
    attnc-run does."""
    env = os.environ.get("ATTNC_ISA", "")
    if rc != 5:  # 5: ATTNC_ERR_ISA
        return ""
    if not env:
        return (f": this CPU runs none of the library's code paths (it was compiled for "
                f"{isa or 'another CPU'}; compile it for "
                + ("target 'x86-64' (no AVX2)" if isa == "multi"
                   else "the default target, or 'host'") + ")")
    if env.lower() in _ISA_NAMES:
        return (f": ATTNC_ISA={env!r} names a code path this library does not have or "
                "this CPU cannot run (a library compiled for the default target has "
                "x86-avx512 and x86-avx2, and x86-avx512-bf16 with dtype bf16, and "
                "x86-amx-bf16 with bf16 weights too; "
                "Kernel.info['isa'] says which it was compiled for; unset ATTNC_ISA to "
                "let the library choose)")
    return (f": ATTNC_ISA={env!r} is not one of x86-amx-bf16, x86-avx512-bf16, x86-avx512, "
            "x86-avx2, x86-64 (or amxbf16, avx512bf16, avx512, avx2; case-insensitive; unset it "
            "to let the "
            "library choose)")


__all__ = ["Kernel", "AttncError", "AttncWarning", "ArgumentError", "ABI_VERSION", "load_safetensors",
           "save_safetensors", "map_names", "libattnrt_path", "compile", "from_hf",
           "CompileError", "attnc_binary", "compiler_version", "release_workspace"]
__version__ = "0.1.0"


def __getattr__(name):
    # attnc.torch is imported on first use (it imports torch and registers
    # the attnc::forward operator); `import attnc.torch` works too.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'attnc' has no attribute {name!r}")


class AttncError(RuntimeError):
    """A kernel call returned a non-zero status, or the library is unusable.

    `.status`: the kernel's status code (ATTNC_ERR_*) where one applies.
    `.code`: for a kernel library libattnrt's loader refuses, attnc-run's
    exit code for it (11 cannot be opened: missing, not a regular x86-64
    ELF file, truncated; 12 not an attnc kernel; 13 ABI too new; 14 ABI
    mismatch; 15 metadata the runtime cannot trust; 16 missing entry
    point), with `.reason` its short name ("open_failed", ...); else
    None. From pack_checkpoint (and from_hf), `.reason` is the weights
    loader's ("missing", "duplicate", "dtype", "shape", "format", "io");
    from pack "missing", "duplicate" (a mapping), "dtype" (an integer
    weight) or "shape"."""

    def __init__(self, message, status=None, code=None, reason=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.reason = reason


def libattnrt_path():
    """The libattnrt.so the package checks kernel libraries with (found as
    the module docstring says); raises AttncError when there is none."""
    try:
        return _runtime.library()[1]
    except _runtime.Unavailable as e:
        raise AttncError(str(e)) from None


class AttncWarning(UserWarning):
    """What a call could not check to be right: Kernel.pack (or
    pack_checkpoint, from_hf) given tensors beside the kernel's that carry
    what it does not compute (a bias, QK-norm weights, a rotary embedding
    table; docs/weights.md), or weights with NaN or inf values."""


class ArgumentError(AttncError, ValueError):
    """An argument forward() or decode() refuses before calling the library:
    a variant field the kernel does not take, a shape, a dtype, a length or
    a position out of range. `.status` is the code the library would have
    returned (ATTNC_ERR_ARGS, a negative num_threads and one buffer as both
    caches included; _BAD_SHAPE, _BUFFER_SIZE (overlapping buffers among
    them), _NULL_ARG for one cache without the other)."""


def _numpy(a, name):
    """`a` as a NumPy array: torch tensors detached and moved to the CPU, the
    floating dtypes NumPy has no type for (bfloat16) converted to float32 by
    torch. What cannot be read raises ArgumentError naming `name`."""
    try:
        return to_numpy(a)
    except (TypeError, ValueError, RuntimeError, NotImplementedError) as e:
        raise ArgumentError(f"{name}: cannot be read as an array ({e})",
                            _abi.ERR_ARGS) from None


# Each thread's workspace, shared by every Kernel (Kernel._call_args).
_THREAD = threading.local()


def release_workspace():
    """Frees the calling thread's workspace, which forward and decode keep
    (as large as the largest call so far) for the thread's next call."""
    _THREAD.ws = None


def _f32(a, name):
    """A C-contiguous float32 view or copy of `a` (a real-valued array).
    NumPy has no bfloat16: a uint16 array is bf16 bit patterns, as the
    bf16 kernels' caches are (converted exactly), never integers."""
    a = _numpy(a, name)
    if a.dtype.kind != "f" and a.dtype != np.uint16:
        # (integers and bools are no activations: a uint16 array is bf16
        # bits, the other integer types would be taken as numbers)
        raise ArgumentError(f"{name} must be floating point (float32, float16, bfloat16, "
                            f"float64; a uint16 array holds bf16 bit patterns), got dtype "
                            f"{a.dtype}", _abi.ERR_ARGS)
    if a.dtype == np.uint16:
        return np.ascontiguousarray((a.astype(np.uint32) << 16).view(np.float32))
    if a.dtype != np.float32:
        wide = a
        with np.errstate(over="ignore"):
            a = a.astype(np.float32)
        # A finite float64 past float32's range would go in as inf: an
        # error naming it, as attnc-run's reader and the weights loader.
        if wide.dtype.kind == "f" and wide.dtype.itemsize > 4:
            _refuse_overflow(wide, a, name, "float32 range (largest finite 3.4028235e+38)")
    return np.ascontiguousarray(a)


def _refuse_overflow(wide, narrow, what, range_text):
    """ArgumentError naming the first element that is finite in `wide` and
    inf in `narrow`, its narrowing (a cast made with overflow ignored)."""
    big = np.isinf(narrow) & np.isfinite(wide)
    if big.any():
        at = np.unravel_index(int(np.argmax(big)), wide.shape)
        raise ArgumentError(f"{what}: element {tuple(int(i) for i in at)} "
                            f"({float(wide[at]):g}) is out of {range_text}", _abi.ERR_ARGS)


def _chunked_start(mask, positions):
    """Why a forward (no KV cache) of a kernel whose mask is `mask` (the
    ABI's code) cannot start at `positions` (one per sequence; an array or
    a CPU tensor), or None: a chunked mask counts its chunks from position
    0, where such a call starts. Kernel.forward and the torch operators
    refuse it alike."""
    if not _abi.MASKS.get(mask, "").startswith("chunked"):
        return None
    nz = np.flatnonzero(np.asarray(positions))
    if not nz.size:
        return None
    b = int(nz[0])
    return (f"positions[{b}] is {int(positions[b])}: a chunked mask counts its chunks from "
            "position 0, and a forward without a KV cache starts there (continue a "
            "sequence with decode())")


def _is_tensor(a):
    return hasattr(a, "detach") and hasattr(a, "data_ptr")


def _to_storage(a, dtype, what="x", kind="dtype"):
    """A C-contiguous float32 array as the kernel's storage type: itself
    (f32), float16, or bfloat16 bit patterns (uint16, round to nearest
    even; NaN stays NaN). A finite value past float16's range (65504) or
    bfloat16's (3.38953e+38) is an ArgumentError naming `what` (it would go
    in as inf; libattnrt's weights loader and attnc-run refuse it too);
    `kind` names the kernel's field (dtype, weight_dtype)."""
    if dtype == _abi.DTYPE_F16:
        with np.errstate(over="ignore"):
            h = np.ascontiguousarray(a.astype(np.float16))
        # (cast first: an inf in the result, where a is finite, is the
        # overflow; 65504 and what rounds to it fit)
        if ((h.view(np.uint16) & 0x7FFF) == 0x7C00).any():
            _refuse_overflow(a, h, what, "float16 range (largest finite 65504), and the "
                             f"kernel's {kind} is f16")
        return h
    if dtype == _abi.DTYPE_BF16:
        b = _weights.bf16_bits(a)
        # (a finite float32 past bf16's largest by half an ulp rounds to inf)
        if ((b & 0x7FFF) == 0x7F80).any():
            _refuse_overflow(a, _from_storage(b, dtype), what,
                             "bfloat16 range (largest finite 3.38953e+38), and the "
                             f"kernel's {kind} is bf16")
        return b
    return a


def _from_storage(a, dtype):
    """float32 values of a kernel's bf16 (uint16 bit patterns) or f16
    output, exactly."""
    if dtype == _abi.DTYPE_F16:
        return a.view(np.float16).astype(np.float32)
    return (a.astype(np.uint32) << 16).view(np.float32)


def _torch_dtype(t):
    return str(t.dtype).replace("torch.", "")


# A kernel dtype's element type in NumPy and in torch: NumPy has no
# bfloat16, so a bf16 array is its bit patterns as uint16.
_NP_TYPE = {_abi.DTYPE_F32: np.float32, _abi.DTYPE_BF16: np.uint16,
            _abi.DTYPE_F16: np.float16}
_TORCH_TYPE = {_abi.DTYPE_F32: "float32", _abi.DTYPE_BF16: "bfloat16",
               _abi.DTYPE_F16: "float16"}


def _tensor_as_numpy(t):
    """A NumPy view of a CPU tensor's memory (a bfloat16 one as uint16
    bits)."""
    if _torch_dtype(t) == "bfloat16":
        import torch as _torch
        return t.view(_torch.int16).numpy().view(np.uint16)
    return t.numpy()


def _numpy_as_tensor(a, dtype):
    """A torch tensor of the kernel dtype `dtype` sharing the memory of
    `a`, an array of _NP_TYPE[dtype]."""
    import torch as _torch
    if dtype == _abi.DTYPE_BF16:
        return _torch.from_numpy(a.view(np.int16)).view(_torch.bfloat16)
    return _torch.from_numpy(a)


def _fptr(a):
    return a.ctypes.data_as(C.c_void_p)


_FEATURE_ORDER = list(_abi.FEATURES.values())


_private_copies = {}  # file identity -> /proc/self/fd/N of its copy (fds kept open)
_MAX_COPY = 1 << 30   # a file larger than any kernel library is not copied


def _file_identity(path):
    """(device, inode, size, mtime) of the regular file at `path`, None for
    anything else (missing, a FIFO, a device: the loader refuses those
    without reading them)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _private_copy(path):
    """/proc/self/fd/N of a private copy (a memfd) of the library at
    `path`, which this process then maps instead of the file; `path` where
    that is not possible (no memfd, no /proc, not a regular file). ctypes
    never unloads a library, and dlopen hands back a library it has mapped
    before (by name or inode) instead of the file's current contents: a
    kernel rebuilt at the same path would run the old code, and a file
    truncated in place under a mapping of it kills the process with SIGBUS
    at the next dlopen of anything (glibc reads every loaded library's
    name). One copy per version of a file (device, inode, size, mtime),
    shared by every Kernel of it; its fd stays open for the process's life,
    which keeps the name unique among loaded objects. (libattnrt's loader
    copies a file it finds mapped already: Loader.cpp, mappedAlready.)"""
    ident = _file_identity(path)
    if (ident is None or ident[2] > _MAX_COPY or not hasattr(os, "memfd_create")
            or not os.path.isdir("/proc/self/fd")):
        return path
    copy = _private_copies.get(ident)
    if copy is not None:
        return copy
    try:
        fd = os.memfd_create("attnc-kernel", os.MFD_CLOEXEC)
    except OSError:
        return path
    try:
        src = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            if not stat.S_ISREG(os.fstat(src).st_mode):
                raise OSError("not a regular file")
            while True:
                chunk = os.read(src, 1 << 20)
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
        finally:
            os.close(src)
    except OSError:  # the loader says why, on the path itself
        os.close(fd)
        return path
    copy = f"/proc/self/fd/{fd}"
    if _file_identity(path) != ident:  # changed while copied: load the file
        os.close(fd)
        return path
    _private_copies[ident] = copy
    return copy


class Kernel:
    """One kernel library (.so), checked by libattnrt, then opened with
    ctypes.

    The library must pass libattnrt's loader first (attnc-run's checks:
    AttncError with `.code` 11..16 otherwise, see AttncError), which also
    means it has attnc_query (every shared object attnc writes does).
    `name`: the spec's name, to read the metadata through NAME_query.
    """

    def __init__(self, path, name=None):
        self.path = os.fspath(path)
        if isinstance(self.path, bytes):
            self.path = os.fsdecode(self.path)
        if "\0" in self.path:
            raise AttncError(f"{self.path!r}: cannot load kernel library: a NUL byte "
                             "in the path", code=11, reason="open_failed")
        # The checks and the load read a private copy of what the file
        # holds now (_private_copy): a library rebuilt or changed since this
        # process loaded it is loaded afresh, and later changes to the file
        # cannot touch this mapping.
        load_path = _private_copy(self.path)
        # libattnrt's loader first: a truncated file would kill this process
        # in dlopen (SIGBUS), and a record it refuses is never read here.
        try:
            code, reason, message = _runtime.check_library(load_path)
            if code == 11 and load_path != self.path:
                # the copy cannot be opened or mapped (vm.memfd_noexec, a
                # sandbox): the file itself, as before copies
                load_path = self.path
                code, reason, message = _runtime.check_library(load_path)
        except _runtime.Unavailable as e:
            raise AttncError(f"{self.path}: {e}") from None
        if message and load_path != self.path:  # name the user's file
            message = message.replace(load_path, self.path)
        if code != 0:
            raise AttncError(message or f"{self.path}: refused by libattnrt ({reason})",
                             code=code, reason=reason)
        # RTLD_LOCAL: two kernels' symbols do not mix.
        self._lib = C.CDLL(os.path.abspath(load_path), mode=C.RTLD_LOCAL)
        qname = f"{name}_query" if name else "attnc_query"
        try:
            query = _abi.QueryFn((qname, self._lib))
        except AttributeError:
            raise AttncError(f"{self.path}: no {qname}: not an attnc kernel library")
        ptr = query(ABI_VERSION)
        if not ptr:
            raise AttncError(f"{self.path}: the library's ABI is newer than {ABI_VERSION}")
        info = ptr.contents
        if info.abi_version != ABI_VERSION or info.struct_size != C.sizeof(_abi.KernelInfo):
            raise AttncError(
                f"{self.path}: ABI version {info.abi_version} / struct size "
                f"{info.struct_size}, this package speaks {ABI_VERSION} / "
                f"{C.sizeof(_abi.KernelInfo)}")
        self._info = info
        self.name = info.name.decode()
        sym = lambda s: getattr(self._lib, f"{self.name}_{s}")
        try:
            self._pack = sym("pack")
            self._workspace_size = sym("workspace_size")
            self._forward = sym("forward")
        except AttributeError as e:
            raise AttncError(f"{self.path}: missing entry point ({e})")
        self._decode = self._decode_workspace_size = None
        if info.features & _abi.FEATURE_DECODE:
            try:
                self._decode_workspace_size = sym("decode_workspace_bytes")
                self._decode = sym("decode")
            except AttributeError as e:
                raise AttncError(f"{self.path}: missing entry point ({e}; features "
                                 "declares decode)")
        for fn, (restype, argtypes) in (
                (self._pack, _abi.PACK_PROTO),
                (self._workspace_size, _abi.WORKSPACE_SIZE_PROTO),
                (self._forward, _abi.FORWARD_PROTO),
                (self._decode_workspace_size, _abi.DECODE_WORKSPACE_SIZE_PROTO),
                (self._decode, _abi.DECODE_PROTO)):
            if fn is not None:
                fn.restype, fn.argtypes = restype, argtypes

    # -- metadata ---------------------------------------------------------
    @property
    def info(self):
        """The metadata record as a dict (enum codes as names)."""
        i = self._info
        return {
            "name": self.name, "abi_version": i.abi_version,
            "spec_hash": i.spec_hash, "d_model": i.d_model, "heads": i.heads,
            "kv_heads": i.kv_heads, "head_dim": i.head_dim, "out_dim": i.out_dim,
            "mask": _abi.MASKS.get(i.mask, i.mask),
            "causal_align": "top_left" if i.causal_align else "bottom_right",
            "window": i.window, "bias": bool(i.bias_flags), "out_proj": bool(i.out_proj),
            "bias_flags": [n for b, n in ((_abi.BIAS_Q, "q"), (_abi.BIAS_K, "k"),
                                          (_abi.BIAS_V, "v"), (_abi.BIAS_O, "o"))
                           if i.bias_flags & b],
            "rope": None if not i.features & _abi.FEATURE_ROPE else {
                "style": _abi.ROPE_STYLES.get(i.rope_style, i.rope_style),
                "rotary_dim": i.rotary_dim,
                "inv_freq": [i.rope_inv_freq[k] for k in range(i.rope_pairs)],
                "long_inv_freq": ([i.rope_long_inv_freq[k] for k in range(i.rope_pairs)]
                                  if i.rope_long_inv_freq else None),
                "long_from": i.rope_long_from if i.rope_long_inv_freq else None,
                "attention_factor": i.rope_attention_factor,
                "dynamic_factor": i.rope_dynamic_factor or None,
                "dynamic_from": i.rope_dynamic_from or None},
            "softcap": i.softcap or None, "clip_qkv": i.clip_qkv or None,
            "temperature_tuning": None if i.temperature_floor_scale <= 0 else {
                "floor_scale": i.temperature_floor_scale,
                "attn_scale": i.temperature_attn_scale},
            "alibi": None if not i.alibi_slopes else {
                "slopes": [i.alibi_slopes[h] for h in range(i.heads)],
                "before_scale": bool(i.alibi_before_scale)},
            "t5_bias": None if i.t5_num_buckets <= 0 else {
                "num_buckets": i.t5_num_buckets, "max_distance": i.t5_max_distance,
                "bidirectional": bool(i.t5_bidirectional)},
            "relative_key": None if i.rel_key_positions <= 0 else {
                "max_position_embeddings": i.rel_key_positions,
                "key_query": bool(i.rel_key_query)},
            "qk_norm": None if not i.qk_norm else {
                "width": _abi.QK_NORMS.get(i.qk_norm & 0xF, i.qk_norm & 0xF),
                "type": "layer" if i.qk_norm & 0x10 else "rms",
                "weight": ("per_head" if i.qk_norm & 0x20 else
                           "none" if i.qk_norm & 0x80 else "shared"),
                "bias": bool(i.qk_norm & 0x40),
                "eps": i.qk_norm_eps, "weight_offset": i.qk_norm_offset},
            "sinks": bool(i.sinks),
            "scale": i.scale, "dtype": _abi.DTYPES.get(i.dtype, i.dtype),
            "isa": _abi.ISAS.get(i.isa, i.isa),
            "weight_layout": _abi.LAYOUTS.get(i.weight_layout, i.weight_layout),
            "features": sorted(self.features, key=_FEATURE_ORDER.index),
            "feature_bits": i.features, "packed_bytes": i.packed_bytes,
            "weight_dtype": _abi.DTYPES.get(i.weight_dtype, i.weight_dtype),
            "tensor_parallel": {"size": i.tp_size, "rank": i.tp_rank},
            "max_seq_len": i.max_seq_len,
            "selected_isa": _abi.ISAS.get(self.selected_isa, self.selected_isa),
            "target_triple": (i.target_triple or b"").decode(),
            "target_cpu": (i.target_cpu or b"").decode(),
            "compiler_version": (i.compiler_version or b"").decode(),
            "weights": self.weight_shapes,
        }

    @property
    def features(self):
        """The optional arguments and entries this kernel takes, as a
        frozenset of "lengths" (padding masks), "cross" (x_kv, kv_lengths),
        "probs" (the attention weights) and "decode" (forward's k_cache /
        v_cache, decode() and new_cache())."""
        f = self._info.features
        return frozenset(n for bit, n in _abi.FEATURES.items() if f & bit)

    @property
    def takes_lengths(self):
        return bool(self._info.features & _abi.FEATURE_LENGTHS)

    @property
    def cross_attention(self):
        return bool(self._info.features & _abi.FEATURE_CROSS)

    @property
    def has_probs(self):
        return bool(self._info.features & _abi.FEATURE_PROBS)

    @property
    def has_decode(self):
        return bool(self._info.features & _abi.FEATURE_DECODE)

    @property
    def selected_isa(self):
        f = self._info.selected_isa
        return f() if f else 0xFFFFFFFF

    def __getattr__(self, key):  # d_model, heads, ... straight from the record
        if key.startswith("_"):
            raise AttributeError(key)
        info = self.__dict__.get("_info")
        if info is not None and key in dict(_abi.KernelInfo._fields_):
            return getattr(info, key)
        raise AttributeError(key)

    @property
    def weight_names(self):
        """Storage tensors NAME_pack reads, in order."""
        return [self._info.weights[i].name.decode() for i in range(self._info.num_weights)]

    @property
    def weight_shapes(self):
        """{name: shape} of the storage tensors, in order."""
        out = {}
        for i in range(self._info.num_weights):
            t = self._info.weights[i]
            out[t.name.decode()] = tuple(t.dims[:t.rank])
        return out

    # A Kernel is the loaded library, read-only: copies (a deep copy of a
    # model holding one included) share it; the packed weights and caches
    # are arrays of their own.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        # (ctypes handles cannot cross processes: say what to do instead)
        raise TypeError(f"a Kernel cannot be pickled (it holds the loaded library): load "
                        f"it again with attnc.Kernel({self.path!r})")

    def __repr__(self):
        i = self.info
        mask = str(i["mask"])
        if mask.startswith(("sliding_window", "chunked", "bidirectional_window")):
            mask += f" {i['window']}"
        if i["mask"] not in ("none", "padding"):
            mask += f" ({i['causal_align']})"
        feats = ", ".join(i["features"]) or "none"
        return (f"<attnc.Kernel {self.name}: d_model {i['d_model']}, heads {i['heads']}, "
                f"kv_heads {i['kv_heads']}, head_dim {i['head_dim']}, mask {mask}, "
                f"features [{feats}], dtype {i['dtype']}, weight_dtype {i['weight_dtype']}, "
                f"weights {i['weight_layout']} {list(i['weights'])}>")

    # -- pack -------------------------------------------------------------
    def pack(self, weights, prefix=""):
        """Packs storage-layout weights into the compute layout, once.

        `weights`: a sequence in weight_names order, or a mapping from names
        (attnc's, or a Hugging Face spelling, optionally under `prefix`,
        e.g. a whole state_dict with prefix "h.3.attn.") to arrays or
        tensors, or a torch module (its state_dict()).
        Returns a uint8 array of packed_bytes bytes.
        """
        if not hasattr(weights, "keys") and callable(getattr(weights, "state_dict", None)):
            weights = weights.state_dict()  # an nn.Module (torch's MultiheadAttention, ...)
        elif not hasattr(weights, "keys") and not hasattr(weights, "__iter__"):
            raise TypeError(f"{self.name}: pack takes a sequence of arrays in weight_names "
                            f"order, a mapping of names to arrays, or a torch module; got "
                            f"{type(weights).__name__}")
        if hasattr(weights, "keys"):
            used = set()
            try:
                mapped = map_names(weights, self.weight_names, self._info.weight_layout,
                                   prefix, used=used)
            except KeyError as e:  # a tensor missing: pack_checkpoint's reason
                raise AttncError(f"{self.name}: {e.args[0]}", reason="missing") from None
            except _weights.DuplicateTensorError as e:  # two spellings of one tensor
                raise AttncError(f"{self.name}: {e}", reason="duplicate") from None
            # What the mapping carries beside the kernel's tensors, as
            # libattnrt's loader reports it (docs/weights.md).
            for msg in _weights.unused_warnings(weights, used, prefix,
                                                rope=bool(self._info.features
                                                          & _abi.FEATURE_ROPE)):
                warnings.warn(f"{self.name}: {msg}", AttncWarning, stacklevel=2)
            weights = mapped
        weights = list(weights)
        shapes = self.weight_shapes
        if len(weights) != len(shapes):
            raise AttncError(f"{self.name}: {len(shapes)} weight tensors expected, "
                             f"got {len(weights)}")
        arrays = []
        for (wname, shape), w in zip(shapes.items(), weights):
            # NumPy arrays or torch tensors (bfloat16 converted by torch);
            # never integers (uint16: bf16 bit patterns), which libattnrt's
            # loader refuses too.
            a = _numpy(w, f"{self.name}: weight '{wname}'")
            if a.dtype.kind in "biu" and a.dtype != np.uint16:
                raise AttncError(f"{self.name}: weight '{wname}': dtype {a.dtype} is not a "
                                 "floating type (float32, float16, bfloat16, float64; a "
                                 "uint16 array holds bf16 bit patterns)", reason="dtype")
            a = _f32(a, f"{self.name}: weight '{wname}'")
            if a.shape != shape:
                raise AttncError(f"{self.name}: weight '{wname}': expected shape {shape}, "
                                 f"got {a.shape}", reason="shape")
            bad = ~np.isfinite(a)
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                warnings.warn(f"{self.name}: weight '{wname}': {int(bad.sum())} non-finite "
                              f"value{'s' if bad.sum() > 1 else ''} (the first at flat index "
                              f"{first}: {a.flat[first]}): the outputs they reach are not "
                              "meaningful", AttncWarning, stacklevel=2)
            # A bf16/f16 kernel packs its weight_dtype: rounded here (RNE,
            # as libattnrt's packFloat), bf16 as its 16-bit patterns.
            arrays.append(_to_storage(a, self._info.weight_dtype,
                                      f"{self.name}: weight '{wname}'", "weight_dtype"))
        ptrs = (C.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        sizes = (C.c_int64 * len(arrays))(*[a.size for a in arrays])
        packed = self._packed_buffer()
        rc = self._pack(ptrs, sizes, len(arrays), _fptr(packed), packed.size)
        if rc != _abi.OK:
            raise AttncError(f"{self.name}_pack returned {rc} "
                             f"({_abi.STATUS_NAMES.get(rc, 'unknown')})", rc)
        return packed

    def _packed_buffer(self):
        """NAME_pack's output buffer: packed_bytes bytes on huge pages."""
        packed = np.empty(self._info.packed_bytes, dtype=np.uint8)
        _runtime.huge_pages(packed)
        return packed

    def pack_checkpoint(self, path, prefix=""):
        """Packs the kernel's tensors read from a checkpoint by libattnrt's
        loader, as `attnc-run --weights PATH --weights-prefix PREFIX` (and
        `--hf DIR --module M`, prefix "M.") reads them (docs/weights.md): a
        directory (sharded .safetensors, .npz, .npy files), one
        .safetensors or one .npz; only the tensors the kernel needs are
        read, converted to its weight_dtype; Hugging Face spellings,
        fused QKV tensors cut by the directory's config.json, T5's table
        shared from block 0; a tensor in two files, a missing one or a
        value out of range is an AttncError with the loader's message.
        The loader's warnings (what the checkpoint carries that the kernel
        does not compute, non-finite values) become AttncWarning. Returns
        packed_bytes uint8 bytes."""
        r = _runtime.open_checkpoint(os.fspath(path), prefix, C.addressof(self._info))
        if isinstance(r, tuple):
            reason, message = r
            raise AttncError(f"{self.name}: {message}", reason=reason)
        with r:
            for note in r.notes:
                if note.startswith("warning: "):
                    warnings.warn(f"{self.name}: {note[len('warning: '):]}", AttncWarning,
                                  stacklevel=2)
            packed = self._packed_buffer()
            rc = self._pack(C.cast(r.data, C.POINTER(C.c_void_p)),
                            C.cast(r.elems, C.POINTER(C.c_int64)), r.count, _fptr(packed),
                            packed.size)
        if rc != _abi.OK:
            raise AttncError(f"{self.name}_pack returned {rc} "
                             f"({_abi.STATUS_NAMES.get(rc, 'unknown')})", rc)
        return packed

    # -- forward ----------------------------------------------------------
    def workspace_size(self, batch, seq_len, kv_seq_len=None):
        """NAME_workspace_size: bytes of scratch forward needs (-1: shape
        refused). kv_seq_len: T_kv of a cross-attention kernel (default
        seq_len)."""
        kv = seq_len if kv_seq_len is None else kv_seq_len
        return int(self._workspace_size(batch, seq_len, kv))

    def _storage_input(self, a):
        """A bf16/f16 kernel's x (or x_kv) already of its dtype (a
        torch.bfloat16 / float16 tensor, a NumPy uint16 array of bf16 bits
        / float16 array): (a NumPy view of its memory when it is
        C-contiguous on the CPU, zero-copy, else a C-contiguous copy;
        "torch" or "numpy"). Otherwise (None, None): the caller converts
        it (_f32, then _to_storage)."""
        dt = self._info.dtype
        if _is_tensor(a):
            if _torch_dtype(a) != _TORCH_TYPE[dt]:
                return None, None
            try:
                t = a.detach()
                if t.device.type != "cpu":
                    t = t.cpu()
                if hasattr(t, "resolve_neg"):
                    t = t.resolve_conj().resolve_neg()
                return _tensor_as_numpy(t.contiguous()), "torch"
            except (TypeError, ValueError, RuntimeError, NotImplementedError) as e:
                self._refuse(f"x: cannot be read as an array ({e})")
        if isinstance(a, np.ndarray) and a.dtype == _NP_TYPE[dt]:
            return np.ascontiguousarray(a), "numpy"
        return None, None

    def _storage_output(self, shape, kind):
        """A new y (or probs) of a bf16/f16 kernel's dtype: (the NumPy array
        the kernel writes, what the caller gets: that array, or a torch
        tensor of the dtype sharing its memory when kind is "torch")."""
        a = np.empty(shape, _NP_TYPE[self._info.dtype])
        return a, (_numpy_as_tensor(a, self._info.dtype) if kind == "torch" else a)

    def _refuse(self, message, status=_abi.ERR_ARGS):
        raise ArgumentError(f"{self.name}: {message}", status)

    def _not_taken(self, field, feature, why):
        self._refuse(f"{field} given, but this kernel does not take it "
                     f"(no '{feature}' feature: {why})")

    def _lengths(self, value, field, batch, limit, limit_name, squeeze):
        """`value` as a C-contiguous int32 [batch] array, each in 0..limit."""
        a = _numpy(value, f"{self.name}: {field}")
        if squeeze and a.ndim == 0:
            a = a.reshape(1)
        if a.shape != (batch,):
            self._refuse(f"{field} must have one entry per sequence, shape ({batch},) "
                         f"for batch {batch}, got shape {a.shape}")
        if a.dtype == np.bool_ or a.dtype.kind not in "iu":
            self._refuse(f"{field} must be integers, got dtype {a.dtype}")
        bad = np.flatnonzero((a < 0) | (a > limit))
        if bad.size:
            b = int(bad[0])
            self._refuse(f"{field}[{b}] is {int(a[b])}, expected 0..{limit} ({limit_name})")
        return np.ascontiguousarray(a, dtype=np.int32)

    def _packed(self, packed):
        """The packed weights as the C-contiguous uint8 array the library
        reads (a copy where the caller's is not contiguous)."""
        given = _torch_dtype(packed) if _is_tensor(packed) else None
        packed = _numpy(packed, f"{self.name}: packed")
        if (given not in (None, "uint8") or packed.dtype != np.uint8
                or packed.size != self._info.packed_bytes):
            self._refuse("packed must be the uint8 array pack() returns "
                         f"({self._info.packed_bytes} bytes), got {given or packed.dtype} "
                         f"with {packed.size} elements", _abi.ERR_BUFFER_SIZE)
        return np.ascontiguousarray(packed)

    def _written(self, a, name, shapes=None, want=None, dtype=_abi.DTYPE_F32):
        """The NumPy view of `a`, a buffer the library writes in place (never
        a copy): a NumPy array, or a CPU torch tensor (zero-copy: a view of
        its memory) that does not require grad, exactly of the element type
        `dtype` (float32; a bf16 kernel's caches: torch.bfloat16 or NumPy
        uint16 bit patterns; f16: float16), C-contiguous, aligned, writable
        and, when `shapes` is given, of one of them. Anything else raises
        ArgumentError (ERR_BUFFER_SIZE) naming `name`; `want` describes the
        shape in the message."""
        want = want or " or ".join(str(tuple(sh)) for sh in shapes or [])
        np_type, torch_type = _NP_TYPE[dtype], _TORCH_TYPE[dtype]
        spelled = {
            _abi.DTYPE_F32: "float32 NumPy array or CPU torch tensor",
            _abi.DTYPE_BF16: "CPU torch.bfloat16 tensor or NumPy uint16 array (bf16 bit "
                             "patterns)",
            _abi.DTYPE_F16: "float16 NumPy array or CPU torch tensor",
        }[dtype]
        what = f"{name} must be a writable C-contiguous {spelled} of shape {want} (it is " \
               "written in place)"
        if _is_tensor(a):
            problems = []
            if _torch_dtype(a) != torch_type:
                problems.append(f"of dtype {_torch_dtype(a)}")
            if shapes is not None and tuple(a.shape) not in shapes:
                problems.append(f"of shape {tuple(a.shape)}")
            if a.device.type != "cpu":
                problems.append(f"on device {a.device}")
            if not a.is_contiguous():
                problems.append("that is not contiguous")
            if a.requires_grad:
                problems.append("that requires grad (pass one made under "
                                "torch.no_grad(), or .detach() it)")
            if problems:
                self._refuse(f"{what}; got a torch tensor {', '.join(problems)}",
                             _abi.ERR_BUFFER_SIZE)
            try:
                a = _tensor_as_numpy(a.detach())  # shares the tensor's memory
            except (TypeError, RuntimeError) as e:
                self._refuse(f"{what}; got a torch tensor NumPy cannot view ({e})",
                             _abi.ERR_BUFFER_SIZE)
        elif not isinstance(a, np.ndarray):
            self._refuse(f"{what}; got an object of type {type(a).__name__}",
                         _abi.ERR_BUFFER_SIZE)
        problems = []
        if a.dtype != np_type:
            problems.append(f"of dtype {a.dtype}")
        if shapes is not None and a.shape not in shapes:
            problems.append(f"of shape {a.shape}")
        if not a.flags.c_contiguous:
            problems.append("that is not C-contiguous")
        if not a.flags.writeable:
            problems.append("that is read-only")
        if not a.flags.aligned:
            problems.append(f"that is not {a.dtype.itemsize}-byte aligned")
        if problems:
            self._refuse(f"{what}; got an array {', '.join(problems)}",
                         _abi.ERR_BUFFER_SIZE)
        return a

    def _disjoint(self, written, read):
        """Refuses (ERR_BUFFER_SIZE) a buffer the library writes that shares
        memory with another buffer of the call: `written` and `read` are
        [(name, array or None)]."""
        written = [(n, a) for n, a in written if a is not None]
        others = written + [(n, a) for n, a in read if a is not None]
        for i, (n, a) in enumerate(written):
            for m, b in others[i + 1:]:
                if np.may_share_memory(a, b):
                    self._refuse(f"{n} and {m} overlap in memory ({n} is written "
                                 "in place)", _abi.ERR_BUFFER_SIZE)

    def _call_args(self, cls, packed, x, y, batch, seq, ws_bytes, threads):
        """The fields of a forward or decode argument struct (cls) that both
        entries set: the packed weights, x and y with their element counts,
        the shape, a 64-byte aligned workspace of ws_bytes and the threads.
        Returns (args, keep); keep (the workspace and the pool request)
        must outlive the call."""
        # The calling thread's workspace, one for every kernel (a thread
        # runs one call at a time; a nested call that grows it leaves the
        # outer call the old one in `keep`), kept for its next call (a
        # fresh one per call took its page faults every call) and grown
        # as needed, on huge pages (attnrt_huge_pages).
        ws = getattr(_THREAD, "ws", None)
        if ws is None or ws.size < ws_bytes + 64:
            ws = np.empty(ws_bytes + 64, dtype=np.uint8)  # 64-byte aligned view
            _runtime.huge_pages(ws)
            _THREAD.ws = ws
        off = (-ws.ctypes.data) % 64
        args = cls()
        args.struct_size = C.sizeof(cls)
        args.packed = _fptr(packed)
        args.packed_bytes = packed.size
        args.x = _fptr(x)
        args.x_elems = x.size
        args.y = _fptr(y)
        args.y_elems = y.size
        args.batch = batch
        args.seq_len = seq
        args.workspace = ws.ctypes.data + off
        args.workspace_bytes = ws_bytes
        args.num_threads = threads
        pool = self._use_shared_pool(args, threads)
        return args, (ws, pool)

    def _check_rc(self, entry, rc):
        """Raises AttncError for a status other than ATTNC_OK from NAME_<entry>."""
        if rc != _abi.OK:
            raise AttncError(f"{self.name}_{entry} returned {rc} "
                             f"({_abi.STATUS_NAMES.get(rc, 'unknown')})"
                             f"{_isa_env_note(rc, self.info.get('isa'))}", rc)

    def _use_shared_pool(self, args, threads):
        """More than one thread: the tasks run on libattnrt's one pool
        (attnrt_parallel_for), shared by every kernel of the process, rather
        than on this kernel's own. Returns the request, which must outlive
        the call."""
        if threads == 1:
            return None
        fn = _runtime.shared_pool()
        if fn is None:
            return None
        req = _runtime.PoolRequest(threads, self._info.stack_bytes)
        args.parallel_for = fn
        args.parallel_ctx = C.addressof(req)
        return req

    def _threads(self, num_threads):
        try:
            threads = -1 if isinstance(num_threads, bool) else int(num_threads)
        except (TypeError, ValueError):
            threads = -1
        if threads < 0 or threads > 2**31 - 1 or threads != num_threads:
            self._refuse(f"num_threads must be an integer >= 0, got {num_threads!r}",
                         _abi.ERR_ARGS)  # (what NAME_forward returns for it)
        return threads

    def _cache_len_ok(self, cache_len):
        m = self._info.max_seq_len
        if cache_len < 1 or (m > 0 and cache_len > m):
            self._refuse(f"cache_len must be 1..{m} (the kernel's max_seq_len), got "
                         f"{cache_len}" if m > 0 else
                         f"cache_len must be at least 1, got {cache_len}", _abi.ERR_BAD_SHAPE)

    def _caches(self, k_cache, v_cache, batch, squeeze):
        """The K and V caches as the writable arrays of the kernel's dtype
        (float32, bf16 bits as uint16, float16) it writes in place (never
        copies): [batch, kv_heads, cache_len,
        head_dim] each, or [kv_heads, cache_len, head_dim] when `squeeze`
        (a 2-D x); returns (k, v, cache_len) with the batch axis."""
        i = self._info
        if (k_cache is None) != (v_cache is None):
            self._refuse("the KV cache needs both k_cache and v_cache, got only "
                         f"{'k_cache' if v_cache is None else 'v_cache'}",
                         _abi.ERR_NULL_ARG)
        want = (f"[kv_heads {i.kv_heads}, cache_len, head_dim {i.head_dim}]" if squeeze
                else f"[batch {batch}, kv_heads {i.kv_heads}, cache_len, "
                     f"head_dim {i.head_dim}]")
        out = []
        for name, c in (("k_cache", k_cache), ("v_cache", v_cache)):
            # A NumPy array, or a view of a CPU tensor's memory.
            c = self._written(c, name, want=want, dtype=i.dtype)
            given = c.shape
            if squeeze and c.ndim == 3:
                c = c[None]
            if (c.ndim != 4 or c.shape[0] != batch or c.shape[1] != i.kv_heads
                    or c.shape[3] != i.head_dim):
                self._refuse(f"{name} must be {want}, got shape {given}",
                             _abi.ERR_BUFFER_SIZE)
            out.append(c)
        k, v = out
        if k.shape != v.shape:
            self._refuse(f"k_cache and v_cache must have the same shape, got {k.shape} "
                         f"and {v.shape}", _abi.ERR_BUFFER_SIZE)
        if k.ctypes.data == v.ctypes.data:
            # (what the library returns for one buffer as both caches)
            self._refuse("k_cache and v_cache are one buffer", _abi.ERR_ARGS)
        if np.may_share_memory(k, v):
            self._refuse("k_cache and v_cache overlap in memory", _abi.ERR_BUFFER_SIZE)
        self._cache_len_ok(k.shape[2])
        return k, v, k.shape[2]

    @property
    def is_cuda(self):
        """True for a CUDA kernel (attnc --target cuda-sm80/-sm90): its
        forward takes device pointers, which this package (host memory
        only) never passes; forward() and decode() refuse it. Its metadata
        and pack() work as for any kernel."""
        return bool(self._info.features & _abi.FEATURE_CUDA)

    def _host_only(self, what):
        if self._info.features & _abi.FEATURE_CUDA:
            isa = _abi.ISAS.get(self._info.isa, self._info.isa)
            raise AttncError(
                f"{self.name}: {what}: the kernel targets {isa}: its forward takes "
                "CUDA device pointers, and this package passes host memory only "
                "(run it with attnc-run --device cuda, or from C++ with "
                "attnrt::Kernel::forwardDevice)", _abi.ERR_DEVICE)

    def _no_decode(self, what):
        if not self._info.features & _abi.FEATURE_DECODE:
            self._refuse(f"{what}: this kernel has no KV-cache decode (no 'decode' "
                         "feature: compile the spec with decode: true)")

    def forward(self, x, packed, num_threads=1, out=None, *, lengths=None, x_kv=None,
                kv_lengths=None, want_probs=False, probs_out=None, k_cache=None,
                v_cache=None, positions=None):
        """y = block(x) for x of shape [batch, seq_len, d_model] (or
        [seq_len, d_model]), any real dtype (NumPy or torch; converted to
        float32, or for a bf16/f16 kernel to its dtype, below). `packed`
        comes from pack().
        num_threads: threads of libattnrt's pool, which every kernel of
        the process shares (0: one per CPU, 1: this thread only). out: y's buffer [batch, seq_len, out_dim] (or
        [seq_len, out_dim] with a 2-D x), written in place and returned: a
        writable, C-contiguous, aligned NumPy array or CPU torch tensor of
        the kernel's dtype (float32, or below) (not requiring grad) that overlaps no other buffer; the
        same rules hold for probs_out, k_cache and v_cache.

        A bf16/f16 kernel (dtype): x (and x_kv) of its dtype
        (torch.bfloat16 / float16 tensors, NumPy uint16 arrays of bf16 bits
        / float16 arrays) are read in place when C-contiguous on the CPU
        (zero-copy; else copied once), and y and probs then come back in
        its dtype, as new arrays or tensors of x's kind; out= and
        probs_out= must be of its dtype (written in place; probs come back
        in it with out= of it too). x of another dtype is rounded to the
        kernel's (a new array) and y and probs come back as new float32
        arrays.

        The variants (docs/abi.md), each only where `features` has it:
          lengths     ("lengths") int [batch]: valid tokens per sequence,
                      0..seq_len (right padding); None: all valid. With
                      cross-attention, the queries' lengths.
          x_kv        ("cross", required there) [batch, kv_seq_len, d_model]
                      (or [kv_seq_len, d_model] with a 2-D x): K and V's input.
          kv_lengths  ("cross" and "lengths") int [batch]: valid keys,
                      0..kv_seq_len; None: all valid.
          want_probs  ("probs"): also return the attention weights
                      [batch, heads, seq_len, kv_seq_len] as (y, probs);
                      probs_out: a buffer, as out, to write them to
                      (implies want_probs).
          k_cache, v_cache  ("decode", both or neither) writable C-contiguous
                      NumPy arrays (or CPU torch tensors) of the kernel's
                      dtype (float32; bf16: torch.bfloat16 tensors or
                      uint16 arrays of bf16 bits; f16: float16)
                      [batch, kv_heads, cache_len, head_dim] (or without the
                      batch axis, with a 2-D x), seq_len <= cache_len <=
                      max_seq_len, e.g. from new_cache(): forward writes
                      each sequence's K and V into rows [0, seq_len), in
                      place, so decode() continues at position seq_len
                      (with lengths, at lengths[b]; the rows from there to
                      seq_len hold unspecified values).
          positions   int [batch]: each sequence's first position (default 0):
                      a rotary embedding rotates token t of sequence b by
                      positions[b] + t (HF's position_ids); any kernel takes
                      it, not together with a KV cache (use decode()).
        Query rows at or past a sequence's length are zero in y and probs.
        Every argument is checked here first (ArgumentError)."""
        # A bf16/f16 kernel: x (and x_kv) of its dtype go in as they are,
        # and y and probs come back in it; x of another dtype is rounded to
        # it, and y and probs come back as float32 (converted); its KV
        # caches are in its dtype and written in place (new_cache()).
        narrow = self._info.dtype != _abi.DTYPE_F32
        self._host_only("forward")
        info = self._info
        feats = info.features
        want_probs = bool(want_probs) or probs_out is not None
        # Fields the kernel does not read (the library: ATTNC_ERR_ARGS).
        mask = _abi.MASKS.get(info.mask, info.mask)
        if lengths is not None and not feats & _abi.FEATURE_LENGTHS:
            self._not_taken("lengths", "lengths", f"mask {mask}")
        if x_kv is not None and not feats & _abi.FEATURE_CROSS:
            self._not_taken("x_kv", "cross", "a self-attention kernel")
        if kv_lengths is not None and not feats & _abi.FEATURE_CROSS:
            self._not_taken("kv_lengths", "cross",
                            "a self-attention kernel; lengths are the keys' lengths too")
        if kv_lengths is not None and not feats & _abi.FEATURE_LENGTHS:
            self._not_taken("kv_lengths", "lengths", f"mask {mask}")
        if want_probs and not feats & _abi.FEATURE_PROBS:
            self._not_taken("want_probs" if probs_out is None else "probs_out", "probs",
                            "compile the spec with outputs: [y, probs]")
        if x_kv is None and feats & _abi.FEATURE_CROSS:
            self._refuse("a cross-attention kernel needs x_kv "
                         f"[batch, kv_seq_len, {info.d_model}]")
        use_cache = k_cache is not None or v_cache is not None
        if use_cache and not feats & _abi.FEATURE_DECODE:
            self._not_taken("k_cache" if k_cache is not None else "v_cache", "decode",
                            "compile the spec with decode: true")

        d = info.d_model
        # A bf16/f16 kernel's x of its dtype goes in as it is (zero-copy),
        # and then y (and probs) come back in that dtype, as x's kind.
        x_kind = None
        if narrow:
            xv, x_kind = self._storage_input(x)
        x = xv if x_kind else _f32(x, f"{self.name}: x")
        squeeze = x.ndim == 2
        if squeeze:
            x = x[None]
        if x.ndim != 3 or x.shape[2] != d:
            self._refuse(f"x must be [batch, seq_len, {d}] or [seq_len, {d}], "
                         f"got {x.shape[1:] if squeeze else x.shape}", _abi.ERR_BAD_SHAPE)
        batch, seq = x.shape[0], x.shape[1]
        if batch < 1 or seq < 1:
            self._refuse(f"batch and seq_len must be at least 1, got x of shape {x.shape}",
                         _abi.ERR_BAD_SHAPE)
        if info.max_seq_len > 0 and seq > info.max_seq_len:
            self._refuse(f"seq_len {seq} exceeds the kernel's max_seq_len "
                         f"{info.max_seq_len}", _abi.ERR_BAD_SHAPE)
        kv_seq = seq
        kv_stored = False
        if x_kv is not None:
            kvv, kv_kind = self._storage_input(x_kv) if narrow else (None, None)
            kv_stored = kv_kind is not None
            x_kv = kvv if kv_stored else _f32(x_kv, f"{self.name}: x_kv")
            if squeeze:
                x_kv = x_kv[None]
            want = f"[kv_seq_len, {d}]" if squeeze else f"[{batch}, kv_seq_len, {d}]"
            if x_kv.ndim != 3 or x_kv.shape[0] != batch or x_kv.shape[2] != d:
                self._refuse(f"x_kv must be {want} (x is "
                             f"{'2-D' if squeeze else f'[{batch}, {seq}, {d}]'}), "
                             f"got {x_kv.shape[1:] if squeeze else x_kv.shape}",
                             _abi.ERR_BAD_SHAPE)
            kv_seq = x_kv.shape[1]
            if kv_seq < 1:
                self._refuse("kv_seq_len must be at least 1, got x_kv of shape "
                             f"{x_kv.shape}", _abi.ERR_BAD_SHAPE)
            if info.max_seq_len > 0 and kv_seq > info.max_seq_len:
                self._refuse(f"kv_seq_len {kv_seq} exceeds the kernel's max_seq_len "
                             f"{info.max_seq_len}", _abi.ERR_BAD_SHAPE)
        if lengths is not None:
            lengths = self._lengths(lengths, "lengths", batch, seq, "seq_len", squeeze)
        if use_cache:
            k_cache, v_cache, cache_len = self._caches(k_cache, v_cache, batch, squeeze)
            if cache_len < seq:
                self._refuse(f"the KV cache has {cache_len} rows, fewer than seq_len "
                             f"{seq}: forward writes rows [0, seq_len)", _abi.ERR_BAD_SHAPE)
        if kv_lengths is not None:
            kv_lengths = self._lengths(kv_lengths, "kv_lengths", batch, kv_seq,
                                       "kv_seq_len", squeeze)
        if positions is not None:
            if use_cache:
                self._refuse("positions with a KV cache: the cache's rows are positions, "
                             "so a chunk that does not start at 0 is a decode() call")
            positions = self._lengths(positions, "positions", batch, 2**30 - seq,
                                      "2^30 - seq_len", squeeze)
            why = _chunked_start(self._info.mask, positions)
            if why:
                self._refuse(why)

        packed = self._packed(packed)
        # The buffers the library writes: the caller's own memory (NumPy
        # arrays or CPU tensors), never a copy.
        shape = (batch, seq, info.out_dim)
        shapes = [shape, shape[1:]] if squeeze else [shape]
        # y and probs in the kernel's dtype (written by it, no conversion):
        # a bf16/f16 kernel's out=/probs_out= (of its dtype), or new arrays
        # when x was given in its dtype. Otherwise float32, converted.
        y_stored = narrow and (out is not None or x_kind is not None)
        if out is None:
            if y_stored:
                y_arr, out = self._storage_output(shape, x_kind)
            else:
                y_arr = out = np.empty(shape, dtype=np.float32)
            out = out[0] if squeeze else out
        else:
            y_arr = self._written(out, "out", shapes, dtype=info.dtype).reshape(shape)
            if squeeze and len(out.shape) == 3:  # [1, seq, out_dim] given
                out = out[0]
        probs = probs_ret = None
        # (probs follow y: of the dtype with out= of it, as with x of it)
        p_stored = narrow and (probs_out is not None or y_stored)
        if want_probs:
            pshape = (batch, info.heads, seq, kv_seq)
            if probs_out is None:
                if p_stored:
                    probs, probs_ret = self._storage_output(pshape, x_kind)
                else:
                    probs = probs_ret = np.empty(pshape, dtype=np.float32)
                probs_ret = probs_ret[0] if squeeze else probs_ret
            else:
                probs = self._written(probs_out, "probs_out",
                                      [pshape, pshape[1:]] if squeeze else [pshape],
                                      dtype=info.dtype)
                probs = probs.reshape(pshape)
                probs_ret = probs_out[0] if squeeze and len(probs_out.shape) == 4 \
                    else probs_out
        self._disjoint([("out", y_arr), ("probs_out", probs), ("k_cache", k_cache),
                        ("v_cache", v_cache)],
                       [("x", x), ("x_kv", x_kv), ("packed", packed)])
        threads = self._threads(num_threads)

        cross = bool(feats & _abi.FEATURE_CROSS)
        ws_bytes = self.workspace_size(batch, seq, kv_seq)
        if ws_bytes < 0:
            raise AttncError(f"{self.name}: {self.name}_workspace_size(batch {batch}, "
                             f"seq_len {seq}, kv_seq_len {kv_seq}) refused the shape "
                             f"(max_seq_len {info.max_seq_len})", _abi.ERR_BAD_SHAPE)
        args, keep = self._call_args(_abi.ForwardArgs, packed, x, y_arr, batch, seq,
                                     ws_bytes, threads)
        if positions is not None:
            args.positions = positions.ctypes.data_as(C.POINTER(C.c_int32))
        # The variant fields: NULL / 0 unless the kernel reads them.
        if lengths is not None:
            args.lengths = lengths.ctypes.data_as(C.POINTER(C.c_int32))
        if cross:
            args.x_kv = _fptr(x_kv)
            args.x_kv_elems = x_kv.size
            args.kv_seq_len = kv_seq
            if kv_lengths is not None:
                args.kv_lengths = kv_lengths.ctypes.data_as(C.POINTER(C.c_int32))
        if probs is not None:
            args.probs = _fptr(probs)
            args.probs_elems = probs.size
        if use_cache:
            args.k_cache = _fptr(k_cache)
            args.v_cache = _fptr(v_cache)
            args.cache_elems = k_cache.size
            args.cache_len = cache_len
        if narrow:
            # Inputs of another type rounded to the kernel's dtype (new
            # arrays); float32 outputs written through a buffer of the
            # dtype and converted after the call.
            dt = self._info.dtype
            if x_kind is None:
                xs = _to_storage(x, dt, f"{self.name}: x")
                args.x = _fptr(xs)
            if cross and not kv_stored:
                kvs = _to_storage(x_kv, dt, f"{self.name}: x_kv")
                args.x_kv = _fptr(kvs)
            if not y_stored:
                ys = np.empty(y_arr.shape, dtype=np.uint16)
                args.y = _fptr(ys)
            if probs is not None and not p_stored:
                ps = np.empty(probs.shape, dtype=np.uint16)
                args.probs = _fptr(ps)
        rc = self._forward(C.byref(args))
        del keep
        self._check_rc("forward", rc)
        if narrow and not y_stored:
            y_arr[...] = _from_storage(ys, self._info.dtype)
        if narrow and probs is not None and not p_stored:
            probs[...] = _from_storage(ps, self._info.dtype)
        if probs is None:
            return out
        return out, probs_ret

    __call__ = forward

    # -- decode -----------------------------------------------------------
    def new_cache(self, batch, cache_len=None):
        """(k_cache, v_cache): two zero arrays [batch, kv_heads, cache_len,
        head_dim] of the kernel's dtype (float32; bf16: uint16 bit
        patterns; f16: float16) for forward(k_cache=, v_cache=) and decode().
        cache_len: the most tokens a sequence will hold (prompt + decoded);
        default the kernel's max_seq_len."""
        self._no_decode("new_cache")
        i = self._info
        if cache_len is None:
            if i.max_seq_len <= 0:
                self._refuse("new_cache: the kernel has no max_seq_len; pass cache_len",
                             _abi.ERR_BAD_SHAPE)
            cache_len = i.max_seq_len
        def integral(v):
            try:
                return not isinstance(v, bool) and int(v) == v
            except (TypeError, ValueError):
                return False
        if not integral(batch) or not integral(cache_len):
            self._refuse(f"new_cache: batch and cache_len must be integers, got "
                         f"{batch!r}, {cache_len!r}", _abi.ERR_BAD_SHAPE)
        batch, cache_len = int(batch), int(cache_len)
        if batch < 1:
            self._refuse(f"new_cache: batch must be at least 1, got {batch}",
                         _abi.ERR_BAD_SHAPE)
        self._cache_len_ok(cache_len)
        shape = (batch, i.kv_heads, cache_len, i.head_dim)
        caches = np.zeros(shape, _NP_TYPE[i.dtype]), np.zeros(shape, _NP_TYPE[i.dtype])
        for c in caches:
            _runtime.huge_pages(c)
        return caches

    def decode_workspace_size(self, batch, cache_len, seq_len=1):
        """NAME_decode_workspace_bytes: bytes of scratch decode needs for
        seq_len new tokens per sequence (-1: shape refused)."""
        self._no_decode("decode_workspace_size")
        return int(self._decode_workspace_size(batch, seq_len, cache_len))

    def decode(self, x, packed, positions, k_cache, v_cache, num_threads=1, out=None):
        """One KV-cache decode call ("decode" feature): seq_len new tokens per
        sequence (1: a step of generation; more: a chunk of a chunked
        prefill). x: [batch, seq_len, d_model] (or [batch, d_model] for one
        token each). positions: int [batch], where sequence b's new tokens
        start (its tokens so far; after forward over T tokens, T, or
        lengths[b] with a padding mask), positions[b] + seq_len <=
        cache_len. k_cache, v_cache: as in forward(), [batch, kv_heads,
        cache_len, head_dim], written in place: the tokens' K and V go to
        rows [positions[b], positions[b] + seq_len), and the query of new
        token t attends over rows [0, positions[b] + t] (a sliding window:
        the last `window` of them). Returns y [batch, seq_len, out_dim]
        ([batch, out_dim] for a 2-D x); out: a buffer of that shape to
        write it to, as forward's out (a bf16/f16 kernel: x of its dtype
        read in place and y returned in it, out= of its dtype, as in
        forward()). num_threads as in forward(). Every argument is checked
        here first (ArgumentError)."""
        narrow = self._info.dtype != _abi.DTYPE_F32
        self._host_only("decode")
        self._no_decode("decode")
        info = self._info
        d = info.d_model
        # As in forward: x of a bf16/f16 kernel's dtype goes in as it is,
        # and y comes back in that dtype.
        x_kind = None
        if narrow:
            xv, x_kind = self._storage_input(x)
        x = xv if x_kind else _f32(x, f"{self.name}: x")
        squeeze = x.ndim == 2
        x3 = x[:, None] if squeeze else x
        if x3.ndim != 3 or x3.shape[1] < 1 or x3.shape[2] != d:
            self._refuse(f"decode: x must be [batch, seq_len, {d}] or [batch, {d}] (one "
                         f"token per sequence), got {x.shape}", _abi.ERR_BAD_SHAPE)
        batch, seq = x3.shape[0], x3.shape[1]
        if batch < 1:
            self._refuse(f"decode: batch must be at least 1, got x of shape {x.shape}",
                         _abi.ERR_BAD_SHAPE)
        for name, c in (("k_cache", k_cache), ("v_cache", v_cache)):
            if c is None:
                self._refuse(f"decode needs {name} [batch, kv_heads, cache_len, "
                             "head_dim] (see new_cache())", _abi.ERR_NULL_ARG)
        k_cache, v_cache, cache_len = self._caches(k_cache, v_cache, batch, False)
        if seq > cache_len:
            self._refuse(f"decode: {seq} new tokens do not fit a cache of {cache_len} rows",
                         _abi.ERR_BAD_SHAPE)
        pos = _numpy(positions, f"{self.name}: positions")
        if pos.ndim == 0 and batch == 1:
            pos = pos.reshape(1)
        if pos.shape != (batch,):
            self._refuse(f"positions must have one entry per sequence, shape ({batch},) "
                         f"for batch {batch}, got shape {pos.shape}")
        if pos.dtype == np.bool_ or pos.dtype.kind not in "iu":
            self._refuse(f"positions must be integers, got dtype {pos.dtype}")
        bad = np.flatnonzero((pos < 0) | (pos > cache_len - seq))
        if bad.size:
            b = int(bad[0])
            self._refuse(f"positions[{b}] is {int(pos[b])}, expected 0..{cache_len - seq} "
                         f"(cache_len {cache_len} rows, {seq} new "
                         f"token{'' if seq == 1 else 's'})")
        pos = np.ascontiguousarray(pos, dtype=np.int32)
        packed = self._packed(packed)
        shape = (batch, info.out_dim) if squeeze else (batch, seq, info.out_dim)
        y_stored = narrow and (out is not None or x_kind is not None)
        if out is None:
            if y_stored:
                y_arr, out = self._storage_output(shape, x_kind)
            else:
                y_arr = out = np.empty(shape, dtype=np.float32)
        else:  # the caller's memory (a NumPy array or a CPU tensor), in place
            y_arr = self._written(out, "out", [shape], dtype=info.dtype)
        threads = self._threads(num_threads)
        x3 = np.ascontiguousarray(x3)
        self._disjoint([("out", y_arr), ("k_cache", k_cache), ("v_cache", v_cache)],
                       [("x", x3), ("packed", packed)])

        ws_bytes = self.decode_workspace_size(batch, cache_len, seq)
        if ws_bytes < 0:
            raise AttncError(f"{self.name}: {self.name}_decode_workspace_bytes(batch "
                             f"{batch}, seq_len {seq}, cache_len {cache_len}) refused the "
                             f"shape (max_seq_len {info.max_seq_len})", _abi.ERR_BAD_SHAPE)
        args, keep = self._call_args(_abi.DecodeArgs, packed, x3, y_arr, batch, seq,
                                     ws_bytes, threads)
        if narrow and x_kind is None:  # x rounded to the kernel's dtype
            xs = _to_storage(x3, info.dtype, f"{self.name}: x")
            args.x = _fptr(xs)
        if narrow and not y_stored:  # y converted back to float32
            ys = np.empty(y_arr.shape, dtype=np.uint16)
            args.y = _fptr(ys)
        args.positions = pos.ctypes.data_as(C.POINTER(C.c_int32))
        args.k_cache = _fptr(k_cache)
        args.v_cache = _fptr(v_cache)
        args.cache_elems = k_cache.size
        args.cache_len = cache_len
        rc = self._decode(C.byref(args))
        del keep
        self._check_rc("decode", rc)
        if narrow and not y_stored:
            y_arr[...] = _from_storage(ys, info.dtype)
        return out
