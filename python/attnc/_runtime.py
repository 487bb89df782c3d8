"""libattnrt, found and opened once, for the checks of its loader.

attnc.Kernel asks libattnrt's attnrt_check_library (attnrt_c.h), which runs
attnrt::Kernel::load, about a kernel library before ctypes opens it: a
truncated or corrupt ELF file (which dlopen maps and then dies on with
SIGBUS) and metadata the runtime cannot trust (a weights table longer than
its array, sizes out of range, ...) are refused there, with attnc-run's
messages and exit codes (docs/exit-codes.md, 11..16), before this process
reads any of it.

Where libattnrt is looked for, in this order (the first that loads and
speaks this package's ABI wins):
  1. $ATTNC_LIBATTNRT: a path to libattnrt.so (nothing else is tried);
  2. attnc/_lib/libattnrt.so*, attnc/_prefix/lib/libattnrt.so*: a copy
     next to the package (the second is what `pip install ./python` puts
     there);
  3. PREFIX/lib*/libattnrt.so* when the package is installed as
     PREFIX/share/attnc/python/attnc (`cmake --install`);
  4. SRC/build/runtime/libattnrt.so when the package is used from a source
     tree's python/ (the build directory scripts/*.sh make);
  5. ctypes.util.find_library("attnrt") (the system's library path).
"""
import ctypes as C
import ctypes.util
import glob
import os

from ._abi import ABI_VERSION, ParallelForFn

ENV = "ATTNC_LIBATTNRT"
_HERE = os.path.dirname(os.path.abspath(__file__))
_MESSAGE_CAP = 4096

_lib = None   # the loaded CDLL
_path = None  # where it came from


class Unavailable(Exception):
    """No usable libattnrt (the message says where it was looked for)."""


def _candidates():
    """[(path, where)] in search order; an empty list when none exists."""
    env = os.environ.get(ENV)
    if env:
        return [(env, f"${ENV}")]
    out = []

    def add(paths, where):
        for p in paths:
            if os.path.isfile(p) and all(p != q for q, _ in out):
                out.append((p, where))

    # The unversioned name first, then the soname, then the full version.
    add(sorted(glob.glob(os.path.join(_HERE, "_lib", "libattnrt.so*")), key=len),
        "next to the package (attnc/_lib)")
    add(sorted(glob.glob(os.path.join(_HERE, "_prefix", "lib*", "libattnrt.so*")), key=len),
        "next to the package (attnc/_prefix, pip install)")
    parts = _HERE.split(os.sep)
    if parts[-4:-1] == ["share", "attnc", "python"]:
        prefix = os.sep.join(parts[:-4]) or os.sep
        dirs = ["lib", "lib64"] + sorted(
            os.path.relpath(d, prefix) for d in glob.glob(os.path.join(prefix, "lib", "*-linux-*")))
        add([os.path.join(prefix, d, n) for d in dirs
             for n in ("libattnrt.so", "libattnrt.so.0")], f"the install prefix {prefix}")
    add([os.path.normpath(os.path.join(_HERE, "..", "..", "build", "runtime", "libattnrt.so"))],
        "the source tree's build directory")
    found = ctypes.util.find_library("attnrt")
    if found:
        out.append((found, "ctypes.util.find_library('attnrt')"))
    return out


def _open(path):
    """The CDLL of `path` with its prototypes set, or the reason it is not
    usable."""
    try:
        lib = C.CDLL(path, mode=C.RTLD_LOCAL)
    except OSError as e:
        return None, f"cannot be loaded ({e})"
    try:
        check, abi = lib.attnrt_check_library, lib.attnrt_abi_version
        strerror = lib.attnrt_check_strerror
    except AttributeError:
        return None, ("has no attnrt_check_library: a libattnrt older than this "
                      "package; rebuild or reinstall it")
    check.restype, check.argtypes = C.c_int, [C.c_char_p, C.c_char_p, C.c_size_t]
    abi.restype, abi.argtypes = C.c_uint32, []
    strerror.restype, strerror.argtypes = C.c_char_p, [C.c_int]
    theirs = abi()
    if theirs != ABI_VERSION:
        return None, (f"speaks kernel ABI {theirs}, this package {ABI_VERSION}: "
                      "use the libattnrt of the same attnc as the package")
    return lib, None


def library():
    """(CDLL, path) of libattnrt; raises Unavailable saying where it looked
    and how to point at it."""
    global _lib, _path
    if _lib is not None:
        return _lib, _path
    tried = []
    candidates = _candidates()
    for path, where in candidates:
        lib, why = _open(path)
        if lib is not None:
            _lib, _path = lib, path
            return _lib, _path
        tried.append(f"{path} ({where}) {why}")
    if tried:
        looked = "; ".join(tried)
    else:
        looked = ("none found next to the package (attnc/_lib), in an install prefix, "
                  "in the source tree's build/runtime, or by ctypes.util.find_library")
    raise Unavailable(
        "attnc needs libattnrt.so (attnc's runtime library) to check a kernel "
        f"library before opening it: {looked}. Set {ENV}=/path/to/libattnrt.so "
        "(PREFIX/lib/libattnrt.so of `cmake --install`, or BUILD/runtime/"
        "libattnrt.so of a build tree)")


class PoolRequest(C.Structure):
    """attnrt_pool_request (attnrt_c.h): what attnrt_parallel_for's
    parallel_ctx points to."""
    _fields_ = [("num_threads", C.c_int32), ("stack_bytes", C.c_int64)]


_pool = None


def shared_pool():
    """libattnrt's thread pool as a parallel-for hook: attnrt_parallel_for
    (attnrt_c.h, C API version 2) as the ABI's ParallelForFn function
    pointer, made once per process, or None for an older libattnrt.
    Kernel.forward and Kernel.decode pass it to every kernel they call
    with more than one thread, so the kernels of a process share one pool
    instead of starting one each."""
    global _pool
    if _pool is None:
        lib, _ = library()
        try:
            addr = C.cast(lib.attnrt_parallel_for, C.c_void_p).value
        except AttributeError:
            addr = None
        _pool = ParallelForFn(addr) if addr else False
    return _pool or None


_huge = None


def huge_pages(a):
    """attnrt_huge_pages (attnrt_c.h, C API version 3) on NumPy array a's
    memory: its 2 MiB-aligned part on transparent huge pages, contents
    kept. Returns the bytes advised (0 for a libattnrt older than that)."""
    global _huge
    if _huge is None:
        lib, _ = library()
        try:
            f = lib.attnrt_huge_pages
            f.restype, f.argtypes = C.c_size_t, [C.c_void_p, C.c_size_t]
            _huge = f
        except AttributeError:
            _huge = False
    return _huge(a.ctypes.data, a.nbytes) if _huge else 0


def check_library(path):
    """(code, reason, message): libattnrt's verdict on the kernel library
    `path` (0, "ok", "" when it may be opened; else attnc-run's exit code,
    e.g. 11 "open_failed", and the loader's message)."""
    lib, _ = library()
    buf = C.create_string_buffer(_MESSAGE_CAP)
    code = lib.attnrt_check_library(os.fsencode(path), buf, _MESSAGE_CAP)
    reason = (lib.attnrt_check_strerror(code) or b"unknown").decode()
    return code, reason, buf.value.decode(errors="replace")


class CheckpointTensors:
    """A kernel's tensors as libattnrt's weights loader read them
    (attnrt_weights_open, weights.h): `data` and `elems`, the arguments
    NAME_pack takes, valid until close(); `notes` what the loader said
    (conversions, and "warning: ..." lines for what the checkpoint carries
    that the kernel does not compute)."""

    def __init__(self, lib, handle):
        self._lib, self._h = lib, handle
        self.count = int(lib.attnrt_weights_count(handle))
        self.data = lib.attnrt_weights_data(handle)
        self.elems = lib.attnrt_weights_elems(handle)
        self.notes = [lib.attnrt_weights_note(handle, i).decode(errors="replace")
                      for i in range(int(lib.attnrt_weights_num_notes(handle)))]

    def close(self):
        if self._h:
            self._lib.attnrt_weights_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_checkpoint(path, prefix, info_address):
    """libattnrt's loader on `path` (a directory, .safetensors or .npz) for
    the kernel whose attnc_kernel_info is at `info_address`: a
    CheckpointTensors, or (reason, message) of the loader's one-line error
    (reason: attnrt_weights_strerror's name, "missing", "duplicate", ...)."""
    lib, _ = library()
    if not getattr(lib, "_attnc_weights_protos", False):
        lib.attnrt_weights_open.restype = C.c_int
        lib.attnrt_weights_open.argtypes = [C.c_char_p, C.c_char_p, C.c_void_p,
                                            C.POINTER(C.c_void_p), C.c_char_p, C.c_size_t]
        lib.attnrt_weights_count.restype = C.c_uint32
        lib.attnrt_weights_count.argtypes = [C.c_void_p]
        lib.attnrt_weights_data.restype = C.c_void_p
        lib.attnrt_weights_data.argtypes = [C.c_void_p]
        lib.attnrt_weights_elems.restype = C.c_void_p
        lib.attnrt_weights_elems.argtypes = [C.c_void_p]
        lib.attnrt_weights_num_notes.restype = C.c_uint32
        lib.attnrt_weights_num_notes.argtypes = [C.c_void_p]
        lib.attnrt_weights_note.restype = C.c_char_p
        lib.attnrt_weights_note.argtypes = [C.c_void_p, C.c_uint32]
        lib.attnrt_weights_strerror.restype = C.c_char_p
        lib.attnrt_weights_strerror.argtypes = [C.c_int]
        lib.attnrt_weights_close.restype = None
        lib.attnrt_weights_close.argtypes = [C.c_void_p]
        lib._attnc_weights_protos = True
    handle = C.c_void_p()
    err = C.create_string_buffer(_MESSAGE_CAP)
    code = lib.attnrt_weights_open(os.fsencode(path), (prefix or "").encode(), info_address,
                                   C.byref(handle), err, _MESSAGE_CAP)
    if code != 0 or not handle.value:
        return ((lib.attnrt_weights_strerror(code) or b"unknown").decode(),
                err.value.decode(errors="replace"))
    return CheckpointTensors(lib, handle.value)
