"""attnc: run attnc-generated attention kernels from Python (NumPy + ctypes).

    import numpy as np, attnc
    k = attnc.Kernel("libgpt2.so")           # reads the kernel's metadata
    print(k)                                 # name, shapes, layout, weights
    packed = k.pack(weights)                 # dict name -> array, or a list
    y = k.forward(x, packed, num_threads=4)  # x: [batch, seq, d_model] float32

Pure Python: the kernel library is opened with ctypes, its
attnc_kernel_info (ABI version 2) is mirrored in attnc._abi, and nothing
is compiled. Weights are packed once (NAME_pack) into a float32 array;
forward allocates the workspace NAME_workspace_size asks for. See
docs/embedding.md.
"""
import ctypes as C
import os

import numpy as np

from . import _abi
from ._abi import ABI_VERSION
from .weights import load_safetensors, save_safetensors, map_names

__all__ = ["Kernel", "AttncError", "ABI_VERSION", "load_safetensors",
           "save_safetensors", "map_names"]
__version__ = "0.1.0"


class AttncError(RuntimeError):
    """A kernel call returned a non-zero status, or the library is unusable."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def _f32(a, name):
    """A C-contiguous float32 view or copy of `a`."""
    a = np.asarray(a)
    if a.dtype != np.float32:
        a = a.astype(np.float32)
    return np.ascontiguousarray(a)


def _fptr(a):
    return a.ctypes.data_as(C.POINTER(C.c_float))


class Kernel:
    """One kernel library (.so), opened with ctypes.

    `name`: the spec's name, needed only when the library has no
    attnc_query (it always has one in shared objects attnc writes).
    """

    def __init__(self, path, name=None):
        self.path = os.fspath(path)
        # RTLD_LOCAL: two kernels' symbols do not mix.
        self._lib = C.CDLL(os.path.abspath(self.path), mode=C.RTLD_LOCAL)
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
        self._pack.restype = C.c_int
        self._pack.argtypes = [C.POINTER(C.POINTER(C.c_float)), C.POINTER(C.c_int64),
                               C.c_int64, C.POINTER(C.c_float), C.c_int64]
        self._workspace_size.restype = C.c_int64
        self._workspace_size.argtypes = [C.c_int64, C.c_int64, C.c_int64]
        self._forward.restype = C.c_int
        self._forward.argtypes = [C.POINTER(_abi.ForwardArgs)]

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
            "window": i.window, "bias": bool(i.bias), "out_proj": bool(i.out_proj),
            "scale": i.scale, "dtype": _abi.DTYPES.get(i.dtype, i.dtype),
            "isa": _abi.ISAS.get(i.isa, i.isa),
            "weight_layout": _abi.LAYOUTS.get(i.weight_layout, i.weight_layout),
            "features": i.features, "packed_floats": i.packed_floats,
            "max_seq_len": i.max_seq_len,
            "selected_isa": _abi.ISAS.get(self.selected_isa, self.selected_isa),
            "target_triple": (i.target_triple or b"").decode(),
            "target_cpu": (i.target_cpu or b"").decode(),
            "compiler_version": (i.compiler_version or b"").decode(),
            "weights": self.weight_shapes,
        }

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

    def __repr__(self):
        i = self.info
        return (f"<attnc.Kernel {self.name}: d_model {i['d_model']}, heads {i['heads']}, "
                f"kv_heads {i['kv_heads']}, head_dim {i['head_dim']}, mask {i['mask']}, "
                f"weights {i['weight_layout']} {list(i['weights'])}>")

    # -- pack -------------------------------------------------------------
    def pack(self, weights, prefix=""):
        """Packs storage-layout weights into the compute layout, once.

        `weights`: a sequence in weight_names order, or a mapping from names
        (attnc's, or a Hugging Face spelling, optionally under `prefix`,
        e.g. a whole state_dict with prefix "h.3.attn.") to arrays or
        tensors. Returns a float32 array of packed_floats values.
        """
        if hasattr(weights, "keys"):
            weights = map_names(weights, self.weight_names, self._info.weight_layout, prefix)
        weights = list(weights)
        shapes = self.weight_shapes
        if len(weights) != len(shapes):
            raise AttncError(f"{self.name}: {len(shapes)} weight tensors expected, "
                             f"got {len(weights)}")
        arrays = []
        for (wname, shape), w in zip(shapes.items(), weights):
            if hasattr(w, "detach"):  # a torch tensor
                w = w.detach().cpu().numpy()
            a = _f32(w, wname)
            if a.shape != shape:
                raise AttncError(f"{self.name}: weight '{wname}': expected shape {shape}, "
                                 f"got {a.shape}")
            arrays.append(a)
        ptrs = (C.POINTER(C.c_float) * len(arrays))(*[_fptr(a) for a in arrays])
        sizes = (C.c_int64 * len(arrays))(*[a.size for a in arrays])
        packed = np.empty(self._info.packed_floats, dtype=np.float32)
        rc = self._pack(ptrs, sizes, len(arrays), _fptr(packed), packed.size)
        if rc != _abi.OK:
            raise AttncError(f"{self.name}_pack returned {rc} "
                             f"({_abi.STATUS_NAMES.get(rc, 'unknown')})", rc)
        return packed

    # -- forward ----------------------------------------------------------
    def workspace_size(self, batch, seq_len):
        return int(self._workspace_size(batch, seq_len, seq_len))

    def forward(self, x, packed, num_threads=1, out=None):
        """y = block(x) for x of shape [batch, seq_len, d_model] (or
        [seq_len, d_model]). `packed` comes from pack(). num_threads: the
        library's built-in pool (0: one per CPU, 1: this thread only)."""
        x = _f32(x, "x")
        squeeze = x.ndim == 2
        if squeeze:
            x = x[None]
        if x.ndim != 3 or x.shape[2] != self._info.d_model:
            raise AttncError(f"{self.name}: x must be [batch, seq_len, {self._info.d_model}], "
                             f"got {x.shape}")
        packed = np.asarray(packed)
        if packed.dtype != np.float32 or packed.size != self._info.packed_floats:
            raise AttncError(f"{self.name}: packed must be the float32 array pack() returns")
        packed = np.ascontiguousarray(packed)
        batch, seq = x.shape[0], x.shape[1]
        shape = (batch, seq, self._info.out_dim)
        if out is None:
            out = np.empty(shape, dtype=np.float32)
        elif out.shape != shape or out.dtype != np.float32 or not out.flags.c_contiguous:
            raise AttncError(f"{self.name}: out must be C-contiguous float32 {shape}")
        ws_bytes = self.workspace_size(batch, seq)
        if ws_bytes < 0:
            raise AttncError(f"{self.name}: batch {batch} / seq_len {seq} out of range "
                             f"(max_seq_len {self._info.max_seq_len})",
                             2)
        ws = np.empty(ws_bytes + 64, dtype=np.uint8)  # 64-byte aligned view
        off = (-ws.ctypes.data) % 64
        args = _abi.ForwardArgs()
        args.struct_size = C.sizeof(_abi.ForwardArgs)
        args.packed = _fptr(packed)
        args.packed_floats = packed.size
        args.x = _fptr(x)
        args.x_floats = x.size
        args.y = _fptr(out)
        args.y_floats = out.size
        args.batch = batch
        args.seq_len = seq
        args.workspace = ws.ctypes.data + off
        args.workspace_bytes = ws_bytes
        args.num_threads = int(num_threads)
        rc = self._forward(C.byref(args))
        if rc != _abi.OK:
            raise AttncError(f"{self.name}_forward returned {rc} "
                             f"({_abi.STATUS_NAMES.get(rc, 'unknown')})", rc)
        return out[0] if squeeze else out

    __call__ = forward
