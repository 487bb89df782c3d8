"""ctypes mirror of runtime/include/attnc/runtime/abi.h, read from it.

Nothing here is spelled a second time: the structs are built field by
field from the ABI's field lists (abi_kernel_info.def, abi_forward_args.def,
abi_decode_args.def), the constants from abi.h's #defines and the names
of the enum values from abi_names.def, which are the files the C compiler
builds abi.h's structs from. The headers are found beside this package (a
wheel carries a copy in attnc/include), in the install prefix (CMake's
install: PREFIX/include beside PREFIX/share/attnc/python) or in the source
tree (runtime/include). tests/python checks every size and offset against a C
program compiled from abi.h.
"""
import ctypes as C
import os
import re

_HERE = os.path.dirname(os.path.abspath(__file__))


def _header_dir():
    for d in (os.path.join(_HERE, "include", "attnc", "runtime"),
              # pip install ./python: the CMake install tree beside the package
              os.path.join(_HERE, "_prefix", "include", "attnc", "runtime"),
              # installed by CMake: PREFIX/share/attnc/python/attnc
              os.path.join(_HERE, "..", "..", "..", "..", "include", "attnc", "runtime"),
              # the source tree
              os.path.join(_HERE, "..", "..", "runtime", "include", "attnc", "runtime")):
        if os.path.isfile(os.path.join(d, "abi.h")):
            return os.path.normpath(d)
    raise ImportError("attnc: abi.h not found beside the package "
                      f"({_HERE}/include/attnc/runtime) or in its source tree")


HEADER_DIR = _header_dir()


def _read(name):
    with open(os.path.join(HEADER_DIR, name), encoding="utf-8") as f:
        return f.read()


def _strip_comments(text):
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


# The constants: every `#define ATTNC_NAME value` of abi.h whose value is a
# number (with C's u suffix).
CONSTANTS = {}
for _m in re.finditer(r"^#define (ATTNC_\w+) (0x[0-9a-fA-F]+|\d+)u?\b", _read("abi.h"), re.M):
    CONSTANTS[_m.group(1)] = int(_m.group(2), 0)
globals().update({k[len("ATTNC_"):]: v for k, v in CONSTANTS.items()})

# The one spelling of each enum value: NAMES[kind][code] = spelling.
NAMES = {}
for _m in re.finditer(r'ATTNC_NAME\((\w+), (ATTNC_\w+), "([^"]*)"\)',
                      _strip_comments(_read("abi_names.def"))):
    NAMES.setdefault(_m.group(1), {})[CONSTANTS[_m.group(2)]] = _m.group(3)

MASKS = NAMES["mask"]
LAYOUTS = NAMES["layout"]
DTYPES = NAMES["dtype"]
ISAS = NAMES["isa"]
ROPE_STYLES = NAMES["rope_style"]
QK_NORMS = NAMES["qk_norm"]
# The bits a kernel's `features` can name as arguments it takes. The
# checksum bit is a property of the file (libattnrt verifies it before the
# package opens the library), not an argument.
FEATURES = {bit: n for bit, n in NAMES["feature"].items() if n != "checksum"}
STATUS_NAMES = {v: k for k, v in CONSTANTS.items()
                if k == "ATTNC_OK" or k.startswith("ATTNC_ERR_")}

DTYPE_F32 = CONSTANTS["ATTNC_DTYPE_F32"]
DTYPE_BF16 = CONSTANTS["ATTNC_DTYPE_BF16"]
DTYPE_F16 = CONSTANTS["ATTNC_DTYPE_F16"]

# Element types of the activations and weights: NumPy dtype names and sizes.
DTYPE_BYTES = {CONSTANTS["ATTNC_DTYPE_F32"]: 4, CONSTANTS["ATTNC_DTYPE_BF16"]: 2,
               CONSTANTS["ATTNC_DTYPE_F16"]: 2}

TaskFn = C.CFUNCTYPE(None, C.c_void_p, C.c_int64, C.c_int64)
ParallelForFn = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int64, TaskFn, C.c_void_p)
SelectedIsaFn = C.CFUNCTYPE(C.c_uint32)


class TensorInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("rank", C.c_uint32), ("dtype", C.c_uint32),
                ("dims", C.c_int64 * 2)]


_CTYPES = {
    "uint32_t": C.c_uint32, "int32_t": C.c_int32, "uint64_t": C.c_uint64,
    "int64_t": C.c_int64, "double": C.c_double, "const char *": C.c_char_p,
    "const void *": C.c_void_p, "void *": C.c_void_p,
    "const int32_t *": C.POINTER(C.c_int32), "const double *": C.POINTER(C.c_double),
    "const attnc_tensor_info *": C.POINTER(TensorInfo),
    "attnc_selected_isa_fn": SelectedIsaFn, "attnc_parallel_for_fn": ParallelForFn,
}


def _fields(def_file):
    """[(name, ctype)] of a field list, in struct order."""
    out = []
    for m in re.finditer(r"ATTNC_FIELD\(([^,]+), (\w+)\)", _strip_comments(_read(def_file))):
        ctype = m.group(1).strip()
        if ctype not in _CTYPES:
            raise ImportError(f"attnc: {def_file}: no ctypes type for '{ctype}'")
        out.append((m.group(2), _CTYPES[ctype]))
    return out


class KernelInfo(C.Structure):
    _fields_ = _fields("abi_kernel_info.def")


class ForwardArgs(C.Structure):
    _fields_ = _fields("abi_forward_args.def")


class DecodeArgs(C.Structure):
    """attnc_decode_args: one decode call (FEATURE_DECODE)."""
    _fields_ = _fields("abi_decode_args.def")


QueryFn = C.CFUNCTYPE(C.POINTER(KernelInfo), C.c_uint32)

# Entry-point prototypes (restype, argtypes), set on the library's symbols.
# int NAME_pack(const void *const *weights, const int64_t *weight_elems,
#               int64_t num_weights, void *packed, int64_t packed_bytes)
PACK_PROTO = (C.c_int, [C.POINTER(C.c_void_p), C.POINTER(C.c_int64), C.c_int64,
                        C.c_void_p, C.c_int64])
# int64_t NAME_workspace_size(int64_t batch, int64_t seq_len, int64_t kv_seq_len)
WORKSPACE_SIZE_PROTO = (C.c_int64, [C.c_int64, C.c_int64, C.c_int64])
# int NAME_forward(const attnc_forward_args *)
FORWARD_PROTO = (C.c_int, [C.POINTER(ForwardArgs)])
# int64_t NAME_decode_workspace_bytes(int64_t batch, int64_t seq_len, int64_t cache_len)
DECODE_WORKSPACE_SIZE_PROTO = (C.c_int64, [C.c_int64, C.c_int64, C.c_int64])
# int NAME_decode(const attnc_decode_args *)
DECODE_PROTO = (C.c_int, [C.POINTER(DecodeArgs)])
