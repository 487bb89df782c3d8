"""attnc kernels as PyTorch operators and modules (CPU, inference only).

    import attnc.torch
    y = torch.ops.attnc.forward(x, packed, "/path/libk.so")       # + x_kv, lengths,
    y, probs = torch.ops.attnc.forward_with_weights(x, packed, path)  # kv_lengths, threads
    m = attnc.torch.AttnModule(attnc.compile(spec), weights)   # packed as a buffer
    y = m(x)
    attnc.torch.replace_attention(model)   # every nn.MultiheadAttention -> kernels

The operators attnc::forward(Tensor x, Tensor packed, str kernel, Tensor?
x_kv, Tensor? lengths, Tensor? kv_lengths, int num_threads, Tensor?
positions) -> Tensor and
attnc::forward_with_weights(...) -> (Tensor, Tensor) are defined with
torch.library (namespace "attnc", a CPU kernel written in Python), so
torch.jit.trace records each call as one node (the kernel library's path
a string constant of the graph) and a traced module runs it again through
the dispatcher; a process that loads such a trace must `import
attnc.torch` first (which registers the operators). torch.jit.script
cannot compile the modules' Python code, but scripted code may call
torch.ops.attnc.forward.

Inference only: the operators raise RuntimeError when grad mode is on and
an input requires grad (no gradient would flow: they have no autograd
formula). Zero-copy: contiguous CPU inputs of the kernel's dtype
(float32; torch.bfloat16 / float16 for a kernel whose dtype is bf16 /
f16) are handed to the kernel where they lie (data_ptr), y and the
attention weights are allocated as torch tensors of that dtype the kernel
writes; other float dtypes are converted to it (a copy) and
non-contiguous inputs made contiguous (a copy). With num_threads other than 1 the tasks run on libattnrt's one
pool, shared with attnc.Kernel and every other kernel of the process.
"""
import ctypes as C
import numbers
import os
import re
import threading
import warnings

import torch
import torch.nn.functional as F

from . import Kernel, AttncError, _abi, _chunked_start, _file_identity, _runtime
from . import _TORCH_TYPE
from . import compile as _compile_spec
from ._compile import CompileError, attnc_binary
from ._compile import _identity as _compiler_identity

# attnc's located error for a spec it refuses (<spec>:LINE:COL: error: ...).
_SPEC_ERROR = re.compile(r"^<spec>:\d+:\d+: error: .*$", re.M)

__all__ = ["AttnModule", "MultiheadAttention", "replace_attention", "Unsupported",
           "forward"]

_LIB = torch.library.Library("attnc", "DEF")
_ARGS = ("Tensor x, Tensor packed, str kernel, Tensor? x_kv=None, Tensor? lengths=None, "
         "Tensor? kv_lengths=None, int num_threads=1, Tensor? positions=None")
_LIB.define(f"forward({_ARGS}) -> Tensor")
_LIB.define(f"forward_with_weights({_ARGS}) -> (Tensor, Tensor)")


class Unsupported(RuntimeError):
    """A call (or a module) the kernel cannot express, with
    fallback="error" (replace_attention)."""


_FEAT_CROSS = next(b for b, n in _abi.FEATURES.items() if n == "cross")
_FEAT_PROBS = next(b for b, n in _abi.FEATURES.items() if n == "probs")
_FEAT_LENGTHS = next(b for b, n in _abi.FEATURES.items() if n == "lengths")
_FEAT_CUDA = next(b for b, n in _abi.FEATURES.items() if n == "cuda")
_OK = _abi.OK


class _Runner:
    """One kernel library, ready for the operator: the ctypes entry points
    and a per-thread workspace of the last shape."""

    def __init__(self, path):
        k = Kernel(path)
        i = k._info
        if i.features & _FEAT_CUDA:
            raise AttncError(f"{path}: a CUDA kernel: attnc::forward runs CPU kernels only")
        self.kernel = k
        # What packed weights for this library depend on (AttnModule
        # compares it with what its weights were packed for).
        self.packed_for = _packed_for(k)
        # x, x_kv, y and probs in the kernel's dtype (float32, bfloat16,
        # float16): its activations, which it reads and writes as they lie.
        self.dtype = getattr(torch, _TORCH_TYPE[i.dtype])
        self.name = k.name
        self.d = i.d_model
        self.heads = i.heads
        self.out_dim = i.out_dim
        self.packed_bytes = i.packed_bytes
        self.cross = bool(i.features & _FEAT_CROSS)
        self.probs = bool(i.features & _FEAT_PROBS)
        self.lengths = bool(i.features & _FEAT_LENGTHS)
        self.max_seq_len = i.max_seq_len
        self.mask = i.mask
        self.chunked = _abi.MASKS.get(i.mask, "").startswith("chunked")
        self.fwd = k._forward
        self.ws_size = k._workspace_size
        self.local = threading.local()

    def _args(self, b, t, tkv):
        """The argument struct of this thread for shape (b, t, tkv): the
        sizes and the workspace set once; the pointers are set per call."""
        loc = self.local
        key = (b, t, tkv)
        if getattr(loc, "key", None) != key:
            m = self.max_seq_len
            for what, n in (("seq_len", t), ("kv_seq_len", tkv)):
                if m > 0 and n > m:  # (as Kernel.forward says it)
                    raise AttncError(f"attnc::forward: {what} {n} exceeds the kernel "
                                     f"{self.name}'s max_seq_len {m}", _abi.ERR_BAD_SHAPE)
            n = int(self.ws_size(b, t, tkv))
            if n < 0:
                m = self.kernel._info.max_seq_len
                why = ("kv_seq_len 0: x_kv has no rows, the kernel needs at least one key"
                       if tkv == 0 else f"max_seq_len {m}" if m > 0 else
                       "the buffers' sizes overflow")
                raise AttncError(f"{self.name}_workspace_size(batch {b}, seq_len {t}, "
                                 f"kv_seq_len {tkv}) refused the shape ({why})",
                                 _abi.ERR_BAD_SHAPE)
            buf = torch.empty(n + 64, dtype=torch.uint8)
            _runtime.huge_pages(buf.numpy())
            ptr = buf.data_ptr()
            a = _abi.ForwardArgs()
            a.struct_size = C.sizeof(_abi.ForwardArgs)
            a.packed_bytes = self.packed_bytes
            a.x_elems = b * t * self.d
            a.y_elems = b * t * self.out_dim
            a.batch = b
            a.seq_len = t
            a.workspace = ptr + (-ptr) % 64
            a.workspace_bytes = n
            if self.cross:
                a.x_kv_elems = b * tkv * self.d
                a.kv_seq_len = tkv
            loc.buf, loc.args, loc.ref, loc.key = buf, a, C.byref(a), key
        return loc.args, loc.ref

    def _activation(self, t, what):
        """x or x_kv as the kernel reads it: a contiguous CPU tensor of its
        dtype (itself when it is one; else converted, rounding to
        nearest even)."""
        if not t.is_cpu:
            raise RuntimeError(f"attnc::forward: {what} is on {t.device}: the kernel "
                               f"{self.name} runs on the CPU")
        if t.dtype is not self.dtype:
            if not t.is_floating_point():
                raise RuntimeError(f"attnc::forward: {what} must be floating point, got "
                                   f"{t.dtype}")
            wide = t
            t = t.to(self.dtype)
            if torch.finfo(wide.dtype).max > torch.finfo(self.dtype).max:
                # A finite value past the kernel dtype's range would go in
                # as inf (Kernel.forward refuses it the same way). One
                # aminmax pass over x (torch's isinf on bf16/f16 takes ten
                # times as long); the element is looked for only when x
                # reaches past the range or holds a NaN.
                top = torch.finfo(self.dtype).max
                lo, hi = torch.aminmax(wide) if wide.numel() else (wide.new_zeros(()),) * 2
                big = ()
                if not (-top <= float(lo) and float(hi) <= top):
                    big = (torch.isinf(t) & torch.isfinite(wide)).nonzero()
                if len(big):
                    at = tuple(int(i) for i in big[0])
                    raise RuntimeError(
                        f"attnc::forward: {what}: element {at} ({float(wide[at]):g}) is out "
                        f"of {self.dtype} range (largest finite "
                        f"{torch.finfo(self.dtype).max:g}), and the kernel {self.name}'s "
                        f"dtype is {_abi.DTYPES.get(self.kernel._info.dtype)}")
        if not t.is_contiguous():
            t = t.contiguous()
        return t

    def _ints(self, t, what, b, limit, limit_name):
        if t.dim() != 1 or t.shape[0] != b:
            raise RuntimeError(f"attnc::forward: {what} must be [batch {b}], got "
                               f"{tuple(t.shape)}")
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
            raise RuntimeError(f"attnc::forward: {what} must be integers, got {t.dtype}")
        bad = ((t < 0) | (t > limit)).nonzero()
        if bad.numel():
            i = int(bad[0, 0])
            raise RuntimeError(f"attnc::forward: {what}[{i}] is {int(t[i])}, expected "
                               f"0..{limit} ({limit_name})")
        if t.dtype is not torch.int32 or not t.is_contiguous() or not t.is_cpu:
            t = t.to("cpu", torch.int32).contiguous()
        return t

    def _empty(self, b, t, tkv, lengths, kv_lengths, need_weights):
        """A call with no rows (batch or seq_len 0): nothing to compute
        (the C entry points take batch and seq_len >= 1); the arguments
        checked as for any call, an empty y (and probs) as torch gives."""
        if need_weights and not self.probs:
            raise RuntimeError(f"attnc::forward: need_weights, but {self.name} has no "
                               "probs output (compile it with outputs: [y, probs])")
        for v, what, limit, limit_name in ((lengths, "lengths", t, "seq_len"),
                                           (kv_lengths, "kv_lengths", tkv, "kv_seq_len")):
            if v is not None:
                if not self.lengths:
                    raise RuntimeError(f"attnc::forward: {self.name} takes no {what} (its "
                                       "mask has no padding)")
                self._ints(v, what, b, limit, limit_name)
        y = torch.zeros((b, t, self.out_dim), dtype=self.dtype)
        return y, (torch.zeros((b, self.heads, t, tkv), dtype=self.dtype)
                   if need_weights else None)

    def __call__(self, x, packed, x_kv, lengths, kv_lengths, need_weights, num_threads,
                 positions=None):
        """(y, probs or None); every tensor stays alive until the call returns."""
        if not 0 <= num_threads < 2**31:
            raise RuntimeError(f"attnc::forward: num_threads must be an integer in "
                               f"0..2^31-1 (0: the pool's size), got {num_threads}")
        x = self._activation(x, "x")
        shape = x.shape
        if len(shape) != 3 or shape[2] != self.d:
            raise RuntimeError(f"attnc::forward: x must be [batch, seq_len, {self.d}] for "
                               f"{self.name}, got {tuple(shape)}")
        b, t = shape[0], shape[1]
        if (packed.dtype is not torch.uint8 or packed.numel() != self.packed_bytes
                or not packed.is_cpu or not packed.is_contiguous()):
            raise RuntimeError(f"attnc::forward: packed must be the contiguous CPU uint8 "
                               f"tensor of {self.packed_bytes} bytes {self.name}_pack writes, "
                               f"got {packed.dtype} {tuple(packed.shape)} on {packed.device}")
        tkv = t
        if self.cross:
            if x_kv is None:
                raise RuntimeError(f"attnc::forward: {self.name} is a cross-attention kernel: "
                                   "x_kv is required")
            x_kv = self._activation(x_kv, "x_kv")
            kshape = x_kv.shape
            if len(kshape) != 3 or kshape[0] != b or kshape[2] != self.d:
                raise RuntimeError(f"attnc::forward: x_kv must be [{b}, kv_seq_len, {self.d}], "
                                   f"got {tuple(kshape)}")
            tkv = kshape[1]
        elif x_kv is not None or kv_lengths is not None:
            raise RuntimeError(f"attnc::forward: {self.name} is a self-attention kernel: "
                               "x_kv and kv_lengths must be None")
        if b == 0 or t == 0:
            return self._empty(b, t, tkv, lengths, kv_lengths, need_weights)
        args, ref = self._args(b, t, tkv)
        if self.cross:
            args.x_kv = x_kv.data_ptr()
            if kv_lengths is not None:
                if not self.lengths:
                    raise RuntimeError(f"attnc::forward: {self.name} takes no kv_lengths "
                                       "(its mask has no padding)")
                kv_lengths = self._ints(kv_lengths, "kv_lengths", b, tkv, "kv_seq_len")
                args.kv_lengths = C.cast(kv_lengths.data_ptr(), _I32P)
            else:
                args.kv_lengths = None
        if lengths is not None:
            if not self.lengths:
                raise RuntimeError(f"attnc::forward: {self.name} takes no lengths (its mask "
                                   "has no padding)")
            lengths = self._ints(lengths, "lengths", b, t, "seq_len")
            args.lengths = C.cast(lengths.data_ptr(), _I32P)
        elif self.lengths:
            args.lengths = None
        if need_weights and not self.probs:
            raise RuntimeError(f"attnc::forward: need_weights, but {self.name} has no "
                               "probs output (compile it with outputs: [y, probs])")
        if positions is not None:
            # Each sequence's first position (HF's position_ids[:, 0]): a
            # rotary embedding rotates token i of sequence b by
            # positions[b] + i (Kernel.forward's `positions`).
            positions = self._ints(positions, "positions", b, 2**30 - t, "2^30 - seq_len")
            why = self.chunked and _chunked_start(self.mask, positions)
            if why:
                raise RuntimeError(f"attnc::forward: {self.name}: {why}")
            args.positions = C.cast(positions.data_ptr(), _I32P)
        else:
            args.positions = None
        y = torch.empty((b, t, self.out_dim), dtype=self.dtype)
        probs = None
        if need_weights:
            probs = torch.empty((b, self.heads, t, tkv), dtype=self.dtype)
            args.probs = probs.data_ptr()
            args.probs_elems = probs.numel()
        elif self.probs:
            args.probs = None
            args.probs_elems = 0
        args.packed = packed.data_ptr()
        args.x = x.data_ptr()
        args.y = y.data_ptr()
        args.num_threads = num_threads
        # More than one thread: libattnrt's one pool, as Kernel.forward
        # (not a pool of this kernel's own per kernel); req outlives the call.
        req = self.kernel._use_shared_pool(args, num_threads)
        if req is None:
            args.parallel_for = _abi.ParallelForFn()
            args.parallel_ctx = None
        rc = self.fwd(ref)
        del req
        if rc != _OK:
            raise AttncError(f"{self.name}_forward returned {rc} "
                             f"({_abi.STATUS_NAMES.get(rc, 'unknown')})", rc)
        return y, probs


_I32P = C.POINTER(C.c_int32)
_runners = {}
_runners_lock = threading.Lock()


def _runner(path):
    # One per version of the file (a library rebuilt at the same path is a
    # new runner, as a new Kernel of it is a new copy: attnc.Kernel).
    key = (path, _file_identity(path))
    r = _runners.get(key)
    if r is None:
        with _runners_lock:
            r = _runners.get(key)
            if r is None:
                r = _runners[key] = _Runner(path)
    return r


_PACKED_FOR_FIELDS = ("spec_hash", "packed_bytes", "weight_layout", "weight_dtype", "dtype",
                      "target_cpu")


def _packed_for(kernel):
    """What a kernel's packed weights depend on: its spec (spec_hash), their
    size and layout, the code paths' CPU and the storage types (once per
    runner: the module compares it on every call)."""
    i = kernel.info
    return tuple(hex(i[f]) if f == "spec_hash" else i[f] for f in _PACKED_FOR_FIELDS)


def _grad_check(*named):
    if torch.is_grad_enabled():
        for name, t in named:
            if t is not None and t.requires_grad:
                raise RuntimeError(
                    f"attnc::forward is inference only: {name} requires grad and grad mode "
                    "is on, and the kernel computes no gradients; call it under "
                    "torch.no_grad() or torch.inference_mode(), or pass "
                    f"{name}.detach()")


def _forward_impl(x, packed, kernel, x_kv=None, lengths=None, kv_lengths=None,
                  num_threads=1, positions=None):
    if torch.is_grad_enabled():
        _grad_check(("x", x), ("x_kv", x_kv), ("packed", packed))
    return _runner(kernel)(x, packed, x_kv, lengths, kv_lengths, False, num_threads,
                           positions)[0]


def _forward_with_weights_impl(x, packed, kernel, x_kv=None, lengths=None, kv_lengths=None,
                               num_threads=1, positions=None):
    if torch.is_grad_enabled():
        _grad_check(("x", x), ("x_kv", x_kv), ("packed", packed))
    return _runner(kernel)(x, packed, x_kv, lengths, kv_lengths, True, num_threads,
                           positions)


_LIB.impl("forward", _forward_impl, "CPU")
_LIB.impl("forward_with_weights", _forward_with_weights_impl, "CPU")


def _on_cpu(**tensors):
    """The operators have a CPU kernel only: a tensor elsewhere (CUDA,
    meta) would meet the dispatcher's NotImplementedError; say so first."""
    for what, t in tensors.items():
        if isinstance(t, torch.Tensor) and t.device.type != "cpu":
            raise RuntimeError(f"attnc::forward: {what} is on {t.device}: the kernels run "
                               "on the CPU (move it with .cpu())")


def forward(x, packed, kernel, x_kv=None, lengths=None, kv_lengths=None,
            need_weights=False, num_threads=1, positions=None):
    """torch.ops.attnc.forward (y) or, with need_weights,
    torch.ops.attnc.forward_with_weights ((y, probs [batch, heads, seq_len,
    kv_seq_len])) of the kernel library at path `kernel`. positions: int
    [batch], each sequence's first position (HF's position_ids[:, 0];
    default 0)."""
    _on_cpu(x=x, packed=packed, x_kv=x_kv, lengths=lengths, kv_lengths=kv_lengths,
            positions=positions)
    op = torch.ops.attnc.forward_with_weights if need_weights else torch.ops.attnc.forward
    return op(x, packed, os.fspath(kernel), x_kv, lengths, kv_lengths, num_threads,
              positions)


def _num_threads(n, where):
    """num_threads as the kernels take it: an integer >= 0 (0: the pool's
    size), checked where it is given, not at the first call."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 0 <= n < 2**31:
        raise ValueError(f"{where}: num_threads must be an integer >= 0, got {n!r}")
    return int(n)


def _check_target(target, where):
    """A target the torch path can run, checked where it is given (not at
    the first call, which compiles): attnc --target's x86 names or None."""
    if target is None:
        return None
    names = {n for n in _abi.ISAS.values() if n != "none"}
    cpu = sorted(n for n in names if not n.startswith("cuda"))
    if not isinstance(target, str) or (target not in names and target not in (
            "x86-avx512,x86-avx2", "x86-avx2,x86-avx512")):
        raise ValueError(f"{where}: target must be None or one of {', '.join(cpu)}, "
                         f"got {target!r}")
    if target.startswith("cuda"):
        raise ValueError(f"{where}: target {target}: the torch operators run CPU kernels "
                         f"only (one of {', '.join(cpu)}, or None for multi)")
    return target


_KERNEL_DTYPES = {"f32": "f32", "bf16": "bf16", "f16": "f16", torch.float32: "f32",
                  torch.bfloat16: "bf16", torch.float16: "f16"}


def _check_dtype(dtype, where):
    """The kernels' dtype for the replaced modules, checked where it is
    given: None (follow the module's weights) or f32/bf16/f16 (a string
    as in a spec, or the torch dtype)."""
    if dtype is None:
        return None
    try:
        return _KERNEL_DTYPES[dtype]
    except (KeyError, TypeError):
        raise ValueError(f"{where}: dtype must be None (the module's weights' dtype), "
                         f"'f32', 'bf16' or 'f16' (or torch.float32, torch.bfloat16, "
                         f"torch.float16), got {dtype!r}") from None


def _as_kernel(kernel, target=None, cache_dir=None):
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, (str, os.PathLike)) and str(kernel).endswith(".so") \
            and os.path.isfile(kernel):
        return Kernel(kernel)
    return _compile_spec(kernel, target=target, cache_dir=cache_dir)


class AttnModule(torch.nn.Module):
    """One compiled kernel as an nn.Module: the packed weights are the
    uint8 buffer `packed` (in state_dict() unless persistent=False; moved
    by .to(), which leaves its dtype alone), the kernel library's path the
    attribute `kernel_path`.

    kernel: an attnc.Kernel, the path of a kernel library (.so), or a spec
    (dict, YAML path or text) compiled with attnc.compile(spec,
    target=target, cache_dir=cache_dir). weights: what Kernel.pack takes
    (a state_dict, a dict under `prefix`, a list), or packed: the bytes
    pack() returned (NumPy or torch); an nn.Module's weights are its
    state_dict(), copied into the packed buffer (later changes to the module
    are not seen: build the AttnModule again). forward(x, x_kv=None,
    lengths=None, kv_lengths=None, need_weights=False, positions=None): x
    [batch, seq_len, d_model]; positions int [batch], each sequence's first
    position (HF's position_ids[:, 0], default 0); y, or (y, probs [batch,
    heads, seq_len, kv_seq_len]) with need_weights, in x's floating dtype
    (computed by the kernel in its dtype: float32, or bfloat16 / float16
    storage for a kernel whose dtype is bf16 / f16, whose x of that dtype
    is read in place).
    """

    def __init__(self, kernel, weights=None, packed=None, prefix="", num_threads=1,
                 persistent=True, target=None, cache_dir=None):
        super().__init__()
        k = _as_kernel(kernel, _check_target(target, "AttnModule"), cache_dir)
        # Only the path is state (copy.deepcopy, pickling a whole model);
        # the loaded library is the operator's, per process and path.
        self.kernel_path = os.path.abspath(k.path)
        _runner(self.kernel_path)  # a CUDA kernel raises here
        # What the packed weights were laid out for: a library rebuilt at
        # kernel_path from another spec (a notebook recompiling to one
        # path) is refused by forward, not run on these weights.
        self._packed_for = _packed_for(k)
        self.num_threads = _num_threads(num_threads, "AttnModule")
        if (weights is None) == (packed is None):
            raise ValueError("AttnModule: give weights (to pack) or packed, one of them")
        if isinstance(weights, torch.nn.Module):
            weights = weights.state_dict()
        if weights is not None:
            p = torch.from_numpy(k.pack(weights, prefix=prefix))
        else:
            p = packed if isinstance(packed, torch.Tensor) else torch.from_numpy(packed)
            if p.dtype != torch.uint8 or p.numel() != k.packed_bytes:
                raise ValueError(f"AttnModule: packed must be {k.packed_bytes} uint8 bytes "
                                 f"from {k.name}_pack, got {p.dtype} {tuple(p.shape)}")
            p = p.reshape(-1)
        self.register_buffer("packed", p, persistent=persistent)

    @property
    def kernel(self):
        """The attnc.Kernel of kernel_path (loaded once per process)."""
        return _runner(self.kernel_path).kernel

    def forward(self, x, x_kv=None, lengths=None, kv_lengths=None, need_weights=False,
                positions=None):
        # (lists and NumPy arrays as Kernel.forward takes them; the
        # operators' schema takes tensors)
        lengths, kv_lengths, positions = (
            v if v is None or isinstance(v, torch.Tensor) else torch.as_tensor(v)
            for v in (lengths, kv_lengths, positions))
        _on_cpu(x=x, packed=self.packed, x_kv=x_kv, lengths=lengths, kv_lengths=kv_lengths,
                positions=positions)
        now = _runner(self.kernel_path).packed_for
        was = getattr(self, "_packed_for", now)
        if was != now:
            changed = "; ".join(f"{name} {b} (was {a})" for name, a, b in
                                zip(_PACKED_FOR_FIELDS, was, now) if a != b)
            raise AttncError(
                f"{self.kernel_path} is not the kernel library this AttnModule packed its "
                f"weights for: it was rebuilt from another spec or for another target "
                f"({changed}); build the AttnModule again from it, or compile the new spec "
                "to another path")
        # y (and probs) in x's floating dtype, as a torch module gives it
        # (the operators give the kernel's dtype): a model moved to
        # bfloat16 or float16 keeps that dtype into its next layer.
        if need_weights:
            y, probs = torch.ops.attnc.forward_with_weights(
                x, self.packed, self.kernel_path, x_kv, lengths, kv_lengths, self.num_threads,
                positions)
        else:
            y = torch.ops.attnc.forward(x, self.packed, self.kernel_path, x_kv, lengths,
                                        kv_lengths, self.num_threads, positions)
        if x.is_floating_point() and y.dtype is not x.dtype:
            y = y.to(x.dtype)
            probs = probs.to(x.dtype) if need_weights else None
        return (y, probs) if need_weights else y

    def extra_repr(self):
        return f"{self.kernel.name}: {self.kernel_path}"


# -- nn.MultiheadAttention ------------------------------------------------

class _Proj(torch.nn.Module):
    """out_proj of the replacement: weight and bias as buffers (the
    state_dict keys of nn.MultiheadAttention's out_proj)."""

    def __init__(self, weight, bias):
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("bias", bias)


def _equal(a, b):
    """a and b hold the same values (of one shape and dtype)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.device == b.device and \
        bool(torch.equal(a, b))


def _same(a, b):
    """a and b are one tensor (or views of the same elements)."""
    return a is b or (a.data_ptr() == b.data_ptr() and a.shape == b.shape
                      and a.stride() == b.stride() and a.dtype == b.dtype
                      and a.device == b.device)


def _mask_kind(mask, lq, lk):
    """'none', 'causal' (top-left: key j masked iff j > i) or None (another
    pattern) for an attn_mask [L, S] (bool: True masked; float: additive,
    -inf masked, 0 kept)."""
    if mask.dim() == 3:
        if mask.shape[0] > 1 and not bool((mask == mask[:1]).all()):
            return None
        mask = mask[0]
    if mask.dim() != 2 or tuple(mask.shape) != (lq, lk):
        return None
    if mask.dtype in (torch.bool, torch.uint8):  # (torch 1.13: uint8 as bool)
        masked = mask.bool()
    else:
        if not bool(((mask == 0) | (mask == float("-inf"))).all()):
            return None
        masked = mask == float("-inf")
    causal = torch.ones(lq, lk, dtype=torch.bool, device=mask.device).triu_(1)
    if not bool(masked.any()):
        return "none"
    if bool((masked == causal).all()):
        return "causal"
    return None


def _kpm_lengths(kpm, b, s):
    """int32 [b] valid-key counts when key_padding_mask [b, s] (bool: True
    padded; float: -inf padded, 0 kept) pads on the right only; else None."""
    if kpm.dim() != 2 or tuple(kpm.shape) != (b, s):
        return None
    if kpm.dtype == torch.bool:
        pad = kpm
    else:
        if not bool(((kpm == 0) | (kpm == float("-inf"))).all()):
            return None
        pad = kpm == float("-inf")
    lengths = (~pad).sum(1, dtype=torch.int32)
    ar = torch.arange(s, device=kpm.device)
    if not bool((pad == (ar[None, :] >= lengths[:, None])).all()):
        return None
    return lengths


class MultiheadAttention(torch.nn.Module):
    """What replace_attention puts in place of a torch.nn.MultiheadAttention:
    the same forward(query, key, value, key_padding_mask=None,
    need_weights=True, attn_mask=None, average_attn_weights=True,
    is_causal=False) and the same state_dict keys (in_proj_weight,
    in_proj_bias, out_proj.weight, out_proj.bias; buffers here, so the
    module has no parameters: inference only), computed by attnc kernels.

    Kernels are compiled on first use of each variant (attnc.compile,
    cached in cache_dir): self-attention (query is key is value, no
    key_padding_mask) with mask none or causal, and cross-attention (key is
    value; or a key_padding_mask) with mask padding or causal+padding;
    each with the probs output (need_weights). The kernels' dtype (spec
    `dtype`, and so `weight_dtype`): `dtype` when given (f32, bf16, f16),
    else the weights' at the call: bf16 for torch.bfloat16 weights (a
    model moved with .to(torch.bfloat16)), f16 for float16, f32 otherwise. Each variant's packed
    weights are a non-persistent buffer, packed again when the weights
    change (load_state_dict, an in-place edit; after an edit through
    `.data`, which autograd does not count, call repack()). The module
    starts in the replaced one's train/eval mode. What no kernel expresses
    (see `why_not`) runs torch's own F.multi_head_attention_forward, with a
    warning (fallback="warn"), silently ("silent"), or raises Unsupported
    ("error").
    """

    def __init__(self, mha, target=None, cache_dir=None, num_threads=1, fallback="warn",
                 dtype=None):
        super().__init__()
        if fallback not in ("warn", "error", "silent"):
            raise ValueError(f"fallback must be 'warn', 'error' or 'silent', got {fallback!r}")
        why = unsupported_module(mha)
        if why:
            raise Unsupported(f"cannot replace {type(mha).__name__}: {why}")
        self.embed_dim = mha.embed_dim
        self.num_heads = mha.num_heads
        self.head_dim = mha.head_dim
        self.batch_first = mha.batch_first
        self.dropout = mha.dropout
        # Not torch's fast path: TransformerEncoderLayer (eval) calls
        # torch._transformer_encoder_layer_fwd with the weights directly
        # when its self_attn has _qkv_same_embed_dim; False keeps the call
        # going through this module.
        self._qkv_same_embed_dim = False
        self.bias = mha.in_proj_bias is not None
        d = lambda t: None if t is None else t.detach().clone()
        self.register_buffer("in_proj_weight", d(mha.in_proj_weight))
        self.register_buffer("in_proj_bias", d(mha.in_proj_bias))
        self.out_proj = _Proj(d(mha.out_proj.weight), d(mha.out_proj.bias))
        self.target = _check_target(target, "attnc.torch.MultiheadAttention")
        self.cache_dir = cache_dir
        self.num_threads = _num_threads(num_threads, "attnc.torch.MultiheadAttention")
        self.kernel_dtype = _check_dtype(dtype, "attnc.torch.MultiheadAttention")
        self.fallback = fallback
        self.kernels = torch.nn.ModuleDict()
        self._versions = {}
        # The weight tensors each variant was packed from (held: a new
        # tensor assigned in place of a buffer can then never reuse the old
        # one's address and version 0, which data_ptr and _version alone
        # would take for no change).
        self._sources = {}
        # The replaced module's mode: a model put in eval() before
        # replace_attention stays there (no dropout at inference).
        self.train(mha.training)

    def repack(self):
        """Packs the weights again on the next call. Needed only after an
        edit that bypasses autograd's version counter (through `.data`);
        load_state_dict and in-place edits of the buffers are noticed.
        Also asks attnc again for a block it refused."""
        self._versions.clear()
        self._sources.clear()
        self._refused = {}

    # The weights the packed buffers were made from: (data_ptr, _version),
    # and the tensors themselves (_sources).
    def _weights(self):
        ws = [self.in_proj_weight, self.in_proj_bias, self.out_proj.weight, self.out_proj.bias]
        return [w for w in ws if w is not None]

    def _stamp(self):
        return tuple((w.data_ptr(), w._version) for w in self._weights())

    def _dtype(self):
        """The kernels' dtype now: kernel_dtype, or the weights'."""
        given = getattr(self, "kernel_dtype", None)  # (a module pickled before it)
        return given or _KERNEL_DTYPES.get(self.in_proj_weight.dtype, "f32")

    def spec(self, cross, causal, dtype="f32"):
        """The spec of one variant (a dict for attnc.compile)."""
        mask = ("causal+padding" if causal else "padding") if cross else \
            ("causal" if causal else "none")
        name = (f"mha_e{self.embed_dim}_h{self.num_heads}_{'x' if cross else 's'}"
                f"{'c' if causal else 'n'}{'' if self.bias else '_nobias'}"
                f"{'' if dtype == 'f32' else '_' + dtype}")
        s = {"name": name, "d_model": self.embed_dim, "heads": self.num_heads,
             "mask": mask, "weights": "torch_in_proj", "bias": self.bias,
             "out_proj": True, "outputs": ["y", "probs"]}
        if dtype != "f32":
            s["dtype"] = dtype
        if causal:
            s["causal_align"] = "top_left"  # torch's triu mask / is_causal
        if cross:
            s["cross_attention"] = True
        return s

    def _key(self, cross, causal, dtype=None):
        """The variant's key: "sn", "xc", ...: float32; "sn_bf16", ...: the
        other dtypes."""
        dtype = dtype or self._dtype()
        return f"{'x' if cross else 's'}{'c' if causal else 'n'}" + \
            ("" if dtype == "f32" else "_" + dtype)

    def _refusal(self, key):
        """The compiler's error for variant `key` if this compiler refused
        its spec (attnc's exit 2 with a located spec error: a block past
        docs/limits.md), else None. Kept as text, with the compiler's
        identity: another attnc (rebuilt, ATTNC_BIN) is asked again."""
        got = getattr(self, "_refused", {}).get(key)
        if got is None:
            return None
        try:
            same = got[0] == _compiler_identity(attnc_binary())
        except (CompileError, OSError):
            same = False
        return got[1] if same else None

    def _variant(self, cross, causal):
        dtype = self._dtype()
        key = self._key(cross, causal, dtype)
        for old in [k for k in self.kernels if (k[3:] or "f32") != dtype]:
            # The weights changed dtype (.to()): the other dtype's kernels go.
            del self.kernels[old]
            self._versions.pop(old, None)
            self._sources.pop(old, None)
        stamp = self._stamp()
        m = self.kernels[key] if key in self.kernels else None
        src = self._sources.get(key)
        now = self._weights()
        if m is None or self._versions.get(key) != stamp or src is None or \
                len(src) != len(now) or any(a is not b for a, b in zip(src, now)):
            weights = {"in_proj_weight": self.in_proj_weight, "out_proj.weight":
                       self.out_proj.weight}
            if self.bias:
                weights["in_proj_bias"] = self.in_proj_bias
                weights["out_proj.bias"] = self.out_proj.bias
            with torch.no_grad():
                weights = {n: w.detach().cpu() for n, w in weights.items()}
                try:
                    kernel = m.kernel if m is not None else _compile_spec(
                        self.spec(cross, causal, dtype), target=self.target,
                        cache_dir=self.cache_dir)
                except CompileError as e:
                    located = _SPEC_ERROR.search(e.output or str(e))
                    if e.returncode == 2 and located:  # refused: so on every call
                        self._refused = dict(getattr(self, "_refused", {}), **{
                            key: (_compiler_identity(attnc_binary()), located.group(0))})
                    raise
                m = AttnModule(kernel, weights=weights, num_threads=self.num_threads,
                               persistent=False)
            self.kernels[key] = m
            self._versions[key] = stamp
            self._sources[key] = now
        return m

    def _unsupported(self, why, *args):
        msg = f"attnc.torch.MultiheadAttention: {why}"
        if self.fallback == "error":
            raise Unsupported(msg + " (fallback='error')")
        if self.fallback == "warn":
            # 4: the line that called the module (past forward and
            # torch's Module._call_impl).
            warnings.warn(msg + ": running torch's multi_head_attention_forward instead",
                          stacklevel=4)
        try:
            return self._torch_forward(*args)
        except RuntimeError as e:
            # torch 1.13 computes no float16 matmul on the CPU: the
            # fallback cannot run where the kernels would have.
            if "not implemented for 'Half'" not in str(e):
                raise
            raise Unsupported(f"{msg}, and torch's multi_head_attention_forward, the "
                              f"fallback, fails too: {e} (torch {torch.__version__} computes "
                              "no float16 attention on the CPU: run the module in bfloat16 "
                              "or float32, or call it in a form the kernels take)") from e

    def _torch_forward(self, query, key, value, key_padding_mask, need_weights, attn_mask,
                       average_attn_weights, is_causal=False):
        bf = self.batch_first and query.dim() == 3
        if bf:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if is_causal and attn_mask is None:
            # torch 1.13's functional form has no is_causal: its mask, as
            # nn.MultiheadAttention builds it (query i sees keys j <= i).
            attn_mask = torch.ones(query.shape[0], key.shape[0], dtype=torch.bool,
                                   device=query.device).triu_(1)
        y, w = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, None, None, False, self.dropout, self.out_proj.weight,
            self.out_proj.bias, training=self.training, key_padding_mask=key_padding_mask,
            need_weights=need_weights, attn_mask=attn_mask,
            average_attn_weights=average_attn_weights)
        return (y.transpose(0, 1) if bf else y), w

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        args = (query, key, value, key_padding_mask, need_weights, attn_mask,
                average_attn_weights, is_causal)
        _grad_check(("query", query), ("key", key), ("value", value))
        if query.dim() not in (2, 3):
            # As torch's own check (F.multi_head_attention_forward).
            raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but "
                                 f"received {query.dim()}-D query tensor")
        if key.dim() != query.dim() or value.dim() != query.dim():
            raise AssertionError(
                f"For {'batched (3-D)' if query.dim() == 3 else 'unbatched (2-D)'} `query`, "
                f"expected `key` and `value` to be {query.dim()}-D but found {key.dim()}-D "
                f"and {value.dim()}-D tensors respectively")
        if self.training and self.dropout > 0:
            return self._unsupported(f"dropout {self.dropout} in training mode", *args)
        # key and value: one tensor, or two of equal values (x.half()
        # called twice); not by value under a trace, which would not
        # record the comparison.
        if not _same(key, value) and (torch.jit.is_tracing() or not _equal(key, value)):
            return self._unsupported(
                "key and value are different tensors " +
                ("(not compared by value under torch.jit.trace)" if torch.jit.is_tracing()
                 else "with different values") +
                " (the kernel computes K and V from one input)", *args)
        unbatched = query.dim() == 2
        if unbatched:
            q, kv = query[None], key[None]
        elif self.batch_first:
            q, kv = query, key
        else:
            q, kv = query.transpose(0, 1), key.transpose(0, 1)
        if q.device.type != "cpu":
            return self._unsupported(f"inputs on {q.device} (the kernels run on the CPU)",
                                     *args)
        b, lq, lk = q.shape[0], q.shape[1], kv.shape[1]
        if lk == 0 and b * lq > 0:
            # No keys: torch's answer (the output projection of zeros) is
            # exact and cheap; the kernels need at least one key.
            return self._torch_forward(*args)
        tracing = torch.jit.is_tracing()
        if tracing and key_padding_mask is not None:
            # The variant and the lengths come from the mask's values,
            # which a trace does not record: a traced call with another
            # padding would run this call's. torch's function traces it.
            return self._unsupported("torch.jit.trace with a key_padding_mask (the kernel "
                                     "variant and lengths come from the mask's values, which "
                                     "the trace would fix to this call's)", *args)
        causal = bool(is_causal)
        if attn_mask is not None and attn_mask.dim() == 3 and \
                tuple(attn_mask.shape) != (b * self.num_heads, lq, lk):
            # As torch's own check (F.multi_head_attention_forward).
            raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, "
                               f"but should be {(b * self.num_heads, lq, lk)}.")
        if attn_mask is not None and attn_mask.dim() == 2 and \
                tuple(attn_mask.shape) != (lq, lk):
            raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, "
                               f"but should be {(lq, lk)}.")
        if attn_mask is not None and not (attn_mask.is_floating_point() or
                                          attn_mask.dtype in (torch.bool, torch.uint8)):
            # torch's own error for the mask's type (no fallback warning).
            return self._torch_forward(*args)
        if attn_mask is not None:
            kind = _mask_kind(attn_mask, lq, lk)
            if kind is None:
                return self._unsupported(
                    "attn_mask is neither all-visible nor the causal (triu) pattern", *args)
            if is_causal and kind != "causal":
                return self._unsupported("is_causal with an attn_mask that is not causal",
                                         *args)
            causal = kind == "causal"
            if tracing:
                # A mask built from the shapes (a causal triu) traces as
                # the same pattern every call; one passed in may not.
                warnings.warn(f"attnc.torch.MultiheadAttention: torch.jit.trace with an "
                              f"attn_mask: the trace runs this call's kernel ({kind} mask) "
                              f"for every call; trace with a mask that does not change "
                              f"between calls (or leave this module's calls untraced)",
                              stacklevel=3)
        kv_lengths = None
        if key_padding_mask is not None:
            kpm = key_padding_mask[None] if unbatched else key_padding_mask
            if tuple(kpm.shape) != (b, lk):
                # As torch's own check (F.multi_head_attention_forward).
                raise RuntimeError(f"expecting key_padding_mask shape of {(b, lk)}, but got "
                                   f"{tuple(key_padding_mask.shape)}")
            if not (kpm.is_floating_point() or kpm.dtype == torch.bool):
                # torch's own error for the mask's type (no fallback warning).
                return self._torch_forward(*args)
            if kpm.dtype != torch.bool and \
                    not bool(((kpm == 0) | (kpm == float("-inf"))).all()):
                return self._unsupported("key_padding_mask has float values other than 0 "
                                         "and -inf", *args)
            kv_lengths = _kpm_lengths(kpm, b, lk)
            if kv_lengths is None:
                return self._unsupported("key_padding_mask pads other than on the right "
                                         "(the kernel takes valid-key counts)", *args)
            if bool((kv_lengths == 0).any()):
                return self._unsupported("a sequence with every key padded (torch gives NaN "
                                         "there, the kernel zeros)", *args)
            if bool((kv_lengths == lk).all()):
                kv_lengths = None
        # (a query equal to the key by value is self-attention too: the
        # self-attention kernel projects one input)
        cross = not (_same(query, key) or (not tracing and _equal(query, key))) or \
            kv_lengths is not None
        if causal and lq != lk:
            cross = True  # top-left alignment over T_kv keys
        # A block past what attnc takes (docs/limits.md: heads, head_dim,
        # weight elements): torch's, as for any form the kernels cannot
        # compute; refused once, not compiled again (_refusal).
        key = self._key(cross, causal)
        why = self._refusal(key)
        if why is None:
            try:
                m = self._variant(cross, causal)
            except CompileError:
                why = self._refusal(key)
                if why is None:
                    raise
        if why is not None:
            return self._unsupported(f"attnc refuses the block ({why})", *args)
        if cross:
            r = m(q, x_kv=kv, kv_lengths=kv_lengths, need_weights=need_weights)
        else:
            r = m(q, need_weights=need_weights)
        y, probs = r if need_weights else (r, None)
        if query.is_floating_point() and y.dtype is not query.dtype:
            # torch returns the input's dtype (AttnModule gives it already).
            y = y.to(query.dtype)
            probs = None if probs is None else probs.to(query.dtype)
        if probs is not None and average_attn_weights:
            probs = probs.mean(dim=1)
        if unbatched:
            y = y[0]
            probs = None if probs is None else probs[0]
        elif not self.batch_first:
            y = y.transpose(0, 1)
        return y, probs

    def _load_from_state_dict(self, *args, **kwargs):
        super()._load_from_state_dict(*args, **kwargs)
        self._versions.clear()  # repack on the next call

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"batch_first={self.batch_first}, bias={self.bias}, fallback={self.fallback!r}"
                + ("" if getattr(self, "kernel_dtype", None) is None
                   else f", dtype={self.kernel_dtype!r}"))


def unsupported_module(mha):
    """Why a torch.nn.MultiheadAttention cannot be replaced ('' if it can)."""
    if not mha._qkv_same_embed_dim:
        return "kdim/vdim differ from embed_dim (separate q/k/v projection weights)"
    if mha.bias_k is not None or mha.bias_v is not None:
        return "add_bias_kv"
    if mha.add_zero_attn:
        return "add_zero_attn"
    if (mha.in_proj_bias is None) != (mha.out_proj.bias is None):
        return "a bias on only some projections"
    if mha.in_proj_weight.device.type != "cpu":
        return f"weights on {mha.in_proj_weight.device} (the kernels run on the CPU)"
    return ""


def replace_attention(model, target=None, cache_dir=None, num_threads=1, fallback="warn",
                      dtype=None):
    """Replaces every torch.nn.MultiheadAttention in `model` (in place; the
    model itself too when it is one) by attnc.torch.MultiheadAttention
    with its weights, and returns the model. Kernels are compiled on first
    use (attnc.compile: target, cache_dir). A module that cannot be
    replaced (unsupported_module: separate kdim/vdim, add_bias_kv,
    add_zero_attn; a subclass of nn.MultiheadAttention) stays torch's,
    with a warning (fallback="warn"), or
    raises Unsupported ("error"); at call time fallback decides the same
    for what the kernels cannot express (MultiheadAttention.forward).
    dtype: the kernels' dtype (None: each module's weights' at the call,
    so a bfloat16 model runs bf16 kernels; 'f32', 'bf16', 'f16' or the
    torch dtype: that one). `model.attnc_replaced` lists the names
    replaced."""
    if fallback not in ("warn", "error", "silent"):
        raise ValueError(f"fallback must be 'warn', 'error' or 'silent', got {fallback!r}")
    num_threads = _num_threads(num_threads, "replace_attention")
    target = _check_target(target, "replace_attention")
    dtype = _check_dtype(dtype, "replace_attention")
    replaced, pending = [], []
    done = {}  # id(torch's module) -> what replaced it (a module under several names)

    def convert(mod, name):
        if id(mod) in done:
            new = done[id(mod)]
            if new is not mod:
                replaced.append(name)
            return new
        done[id(mod)] = new = convert_one(mod, name)
        return new

    def convert_one(mod, name):
        # A subclass may compute something else in its own forward: kept.
        why = (f"{type(mod).__name__} is a subclass of nn.MultiheadAttention "
               "(its forward may differ)") if type(mod) is not torch.nn.MultiheadAttention \
            else unsupported_module(mod)
        if why:
            if fallback == "error":
                raise Unsupported(f"{name or 'model'}: cannot replace: {why}")
            if fallback == "warn":  # (warned below, at the caller's line)
                pending.append(f"attnc.torch.replace_attention: {name or 'model'} stays "
                               f"torch's: {why}")
            return mod
        replaced.append(name)
        return MultiheadAttention(mod, target=target, cache_dir=cache_dir,
                                  num_threads=num_threads, fallback=fallback, dtype=dtype)

    if isinstance(model, torch.nn.MultiheadAttention):
        model = convert(model, "")
    else:
        # Every parent once, every child under each of its names: a module
        # registered twice (self.b = self.a, or in two parents) is replaced
        # by one module under both, so the tie stays.
        seen = set()

        def walk(mod, prefix):
            if id(mod) in seen:
                return
            seen.add(id(mod))
            for cname, child in list(mod._modules.items()):
                if child is None:
                    continue
                name = prefix + cname
                if isinstance(child, torch.nn.MultiheadAttention):
                    setattr(mod, cname, convert(child, name))
                else:
                    walk(child, name + ".")

        walk(model, "")
    for msg in pending:
        warnings.warn(msg, stacklevel=2)
    if not replaced and fallback != "silent" and not any(
            isinstance(m, torch.nn.MultiheadAttention) for m in model.modules()):
        # Nothing to replace at all: most often a Hugging Face model, whose
        # attention classes are its own (not nn.MultiheadAttention).
        names = sorted({type(m).__name__ for m in model.modules()
                        if "attention" in type(m).__name__.lower()})[:3]
        msg = ("attnc.torch.replace_attention: the model has no "
               "torch.nn.MultiheadAttention, nothing was replaced"
               + (f" (its attention modules are {', '.join(names)}: use attnc.from_hf "
                  "and attnc.torch.AttnModule per layer)" if names else ""))
        if fallback == "error":
            raise Unsupported(msg + " (fallback='error')")
        warnings.warn(msg, stacklevel=2)
    model.attnc_replaced = replaced
    return model
