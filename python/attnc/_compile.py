"""attnc.compile() and attnc.from_hf(): the compiler called from Python,
with a cache of compiled libraries.

The `attnc` binary is looked for, in this order (attnc_binary()):
  1. $ATTNC_BIN: a path to the attnc executable (nothing else is tried);
  2. attnc/_prefix/bin/attnc: the copy `pip install ./python` puts next to
     the package;
  3. PREFIX/bin/attnc when the package is PREFIX/share/attnc/python/attnc
     (`cmake --install`);
  4. SRC/build/tools/attnc when the package is a source tree's python/;
  5. `attnc` on PATH.

A compiled library is cached under cache_dir (default $ATTNC_CACHE_DIR,
else $XDG_CACHE_HOME/attnc, else ~/.cache/attnc) in a directory named by
the SHA-256 of the spec's text, the compiler's identity (`attnc
--version` and the binary's size and mtime) and the target (for --target
host, also this CPU's model and flags), so the same spec compiled again
-- in this process or another -- loads the cached library without running
the compiler. Entries are written to a temporary directory and renamed into
place, so concurrent compiles of the same spec are safe; a cached library
libattnrt refuses (truncated, corrupt) is compiled again.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
ENV_BIN = "ATTNC_BIN"
ENV_CACHE = "ATTNC_CACHE_DIR"


class CompileError(RuntimeError):
    """attnc refused the spec or failed: `.returncode` (2: invalid spec or
    usage, 1: other failure), `.output` the compiler's messages."""

    def __init__(self, message, returncode=None, output=""):
        super().__init__(message)
        self.returncode = returncode
        self.output = output


def _candidates():
    env = os.environ.get(ENV_BIN)
    if env:
        return [(env, f"${ENV_BIN}")]
    out = [(os.path.join(_HERE, "_prefix", "bin", "attnc"), "next to the package (attnc/_prefix)")]
    parts = _HERE.split(os.sep)
    if parts[-4:-1] == ["share", "attnc", "python"]:
        prefix = os.sep.join(parts[:-4]) or os.sep
        out.append((os.path.join(prefix, "bin", "attnc"), f"the install prefix {prefix}"))
    out.append((os.path.normpath(os.path.join(_HERE, "..", "..", "build", "tools", "attnc")),
                "the source tree's build directory"))
    found = shutil.which("attnc")
    if found:
        out.append((found, "PATH"))
    return out


def attnc_binary():
    """The path of the attnc executable compile() runs (see the module
    docstring for the search order); raises CompileError when there is
    none."""
    cands = _candidates()
    for path, _ in cands:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    looked = "; ".join(f"{p} ({w})" for p, w in cands)
    raise CompileError(f"no attnc executable found (looked at: {looked}); set {ENV_BIN}="
                       "/path/to/attnc (BUILD/tools/attnc of a build tree, PREFIX/bin/attnc "
                       "of `cmake --install`)")


_versions = {}


def compiler_version(binary=None):
    """`attnc --version` of `binary` (default attnc_binary()), e.g.
    'attnc 0.1.0 (MLIR/LLVM 22.1.8)'; asked once per binary and process."""
    binary = binary or attnc_binary()
    st = os.stat(binary)
    key = (os.path.realpath(binary), st.st_size, st.st_mtime_ns)
    if key not in _versions:
        p = subprocess.run([binary, "--version"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            raise CompileError(f"{binary} --version failed ({p.returncode}): {p.stdout.strip()}",
                               p.returncode, p.stdout)
        _versions[key] = p.stdout.strip()
    return _versions[key]


def _identity(binary):
    st = os.stat(binary)
    return f"{compiler_version(binary)}\nsize {st.st_size} mtime_ns {st.st_mtime_ns}"


def default_cache_dir():
    env = os.environ.get(ENV_CACHE)
    if env:
        return env
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "attnc")




def _scalar(v):
    # NumPy's scalars (np.int64(8), np.float32(0.5), np.bool_) as Python's.
    if type(v).__module__ == "numpy" and hasattr(v, "item"):
        v = v.item()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        if v != v:
            return ".nan"
        if v in (float("inf"), float("-inf")):
            return ".inf" if v > 0 else "-.inf"
        return repr(v)
    if isinstance(v, str):
        # (plain null/Null/NULL is YAML's null, no value: quoted; a string
        # true or false stays plain, as attnc reads booleans)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.+\-]*", v) and v.lower() != "null":
            return v
        return json.dumps(v)
    raise TypeError(f"spec value {v!r} of type {type(v).__name__}: expected a bool, number, "
                    "string, list or mapping")


def _emit(d, indent=""):
    lines = []
    for k, v in d.items():
        if not isinstance(k, str):
            raise TypeError(f"spec key {k!r} is not a string")
        if isinstance(v, dict):
            inner = _emit(v, indent + "  ")
            # an empty mapping (rope={}: every default) stays a mapping
            lines.append(f"{indent}{k}:" if inner else f"{indent}{k}: {{}}")
            lines.extend(inner)
        elif isinstance(v, (list, tuple)):
            lines.append(f"{indent}{k}: [{', '.join(_scalar(x) for x in v)}]")
        elif v is None:
            continue
        else:
            lines.append(f"{indent}{k}: {_scalar(v)}")
    return lines


def spec_text(spec):
    """The YAML text of `spec`: a dict (written as block YAML, lists in flow
    style, None values left out), a path (str or os.PathLike) of a .yaml
    file, or YAML text (a str with a newline or a colon that is not a file)."""
    if isinstance(spec, dict):
        return "\n".join(_emit(spec)) + "\n"
    if isinstance(spec, bytes):
        spec = spec.decode()
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and os.path.isfile(spec)):
        with open(spec, encoding="utf-8") as f:
            return f.read()
    if isinstance(spec, str) and ("\n" in spec or ":" in spec):
        return spec
    if isinstance(spec, str) and spec.endswith((".yaml", ".yml")):
        raise FileNotFoundError(f"spec: no such file: {spec}")
    raise TypeError(f"spec: expected a dict, a path of a YAML file or YAML text, got {spec!r}")


def _host_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return ""
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    return (model.group(1) if model else "") + "\n" + (flags.group(1) if flags else "")


def _key(parts):
    h = hashlib.sha256()
    for p in parts:
        b = p if isinstance(p, bytes) else str(p).encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _run(cmd, what, rename=None):
    """Runs cmd; CompileError with its output on failure, where `rename`
    (temporary path, what to call it) is applied to the messages."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        out = p.stdout.rstrip()
        if rename:
            out = out.replace(rename[0], rename[1])
        raise CompileError(f"{what} failed (exit {p.returncode}):\n{out}", p.returncode, out)
    return p.stdout


def _cached(key, cache_dir, produce):
    """The cache entry directory for `key`, made by produce(tmpdir) when
    absent. Returns (dir, compiled_now)."""
    # "~/.cache/attnc" (python.md's example) is the home's, not ./~
    cache_dir = os.path.abspath(os.path.expanduser(os.fspath(cache_dir or default_cache_dir())))
    entry = os.path.join(cache_dir, key[:32])
    if os.path.isfile(os.path.join(entry, "done")):
        return entry, False
    if os.path.exists(cache_dir) and not os.path.isdir(cache_dir):
        raise NotADirectoryError(f"attnc: cache_dir {cache_dir} is not a directory "
                                 "(give a directory, or unset it for the default)")
    if os.path.isdir(entry):
        # Not a complete entry (renamed into place without its marker by
        # hand, or a partial copy): built again.
        shutil.rmtree(entry, ignore_errors=True)
    os.makedirs(cache_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=cache_dir)
    try:
        produce(tmp)
        with open(os.path.join(tmp, "done"), "w") as f:
            f.write(key + "\n")
        try:
            os.rename(tmp, entry)
        except OSError:
            # Another process made it first (a non-empty directory exists).
            if not os.path.isfile(os.path.join(entry, "done")):
                raise
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return entry, True


def _load(entry, compiled):
    from . import Kernel
    k = Kernel(os.path.join(entry, "kernel.so"))
    k.cache_entry = entry
    k.compiled = compiled  # False: loaded from the cache
    return k


def _cached_kernel(key, cache_dir, produce):
    """The Kernel of cache entry `key`, compiled by produce() when absent.
    A cached library libattnrt refuses (truncated, flipped bits: its
    checksum) is removed and compiled again, once."""
    from . import AttncError
    entry, compiled = _cached(key, cache_dir, produce)
    try:
        return _load(entry, compiled)
    except AttncError:
        if compiled:
            raise
    shutil.rmtree(entry, ignore_errors=True)
    entry, compiled = _cached(key, cache_dir, produce)
    return _load(entry, compiled)


def _target_parts(target):
    t = target or "multi"
    # ATTNC_EMULATE_AMX=1 (a test hook) compiles the AMX-BF16 path's tiles
    # as vector code: another library for the same spec and target.
    emulated = ["amx emulated"] if os.environ.get("ATTNC_EMULATE_AMX") == "1" else []
    return [f"target {t}"] + ([_host_cpu()] if t == "host" else []) + emulated


def compile(spec, target=None, cache_dir=None, extra_args=()):
    """Compiles `spec` (a dict, a path of a YAML file or YAML text) with the
    attnc executable (attnc_binary()) for `target` (attnc --target: multi
    by default, x86-avx512, x86-avx2, x86-64, host; a CUDA target gives a
    kernel whose metadata and pack() work but whose forward this package
    refuses) and returns the loaded Kernel. The library is cached in
    cache_dir (see the module docstring) by the spec's text, the compiler
    and the target: a second call with the same ones, in any process,
    loads it without compiling. The Kernel's `.compiled` says whether this
    call ran the compiler, `.cache_entry` where the library lies (with
    spec.yaml, the text compiled). A spec attnc refuses raises CompileError
    with its one-line message (`.returncode` 2)."""
    binary = attnc_binary()
    text = spec_text(spec)
    shown = (os.fspath(spec) if isinstance(spec, os.PathLike) or
             (isinstance(spec, str) and os.path.isfile(spec)) else "<spec>")
    extra = [os.fspath(a) for a in extra_args]
    key = _key(["spec", text, _identity(binary), *_target_parts(target), *extra])

    def produce(tmp):
        sp = os.path.join(tmp, "spec.yaml")
        with open(sp, "w", encoding="utf-8") as f:
            f.write(text)
        cmd = [binary, sp, "-o", os.path.join(tmp, "kernel.so"),
               "--header", os.path.join(tmp, "kernel.h")]
        if target:
            cmd += ["--target", target]
        _run(cmd + extra, "attnc", (sp, shown))

    return _cached_kernel(key, cache_dir, produce)


def from_hf(hf_dir, module, target=None, cache_dir=None, set=None):
    """What `attnc --hf DIR --module PATH` does, plus the weights: compiles
    (cached as compile() caches, keyed by config.json's bytes, the module
    path, `set` and the target) the attention of module `module` of the
    Hugging Face checkpoint in directory `hf_dir`, reads that module's
    tensors with libattnrt's weights loader (Kernel.pack_checkpoint: the
    directory's shards, only the tensors the kernel needs) and packs them.
    `set`: {key: value} overrides (attnc --set KEY=VALUE, e.g.
    {"max_seq_len": 4096, "decode": True}); a string value is the command
    line's VALUE as it is ("64" the number, "true" a bool,
    "causal+padding" a mask name). Returns (kernel, packed);
    kernel.cache_entry holds spec.yaml, the spec attnc derived."""
    if not isinstance(module, str) or not module:
        raise TypeError(f"module: expected the attention module's name as the checkpoint's "
                        f"tensor names spell it (e.g. 'model.layers.1.self_attn'), got "
                        f"{module!r}")
    if set is not None and not hasattr(set, "items"):
        raise TypeError(f"set: expected a mapping {{key: value}} (attnc --set KEY=VALUE), "
                        f"got {type(set).__name__} {set!r}")
    binary = attnc_binary()
    hf_dir = os.path.abspath(os.fspath(hf_dir))
    cfg = os.path.join(hf_dir, "config.json")
    with open(cfg, "rb") as f:
        cfg_bytes = f.read()
    sets = []
    for k, v in (set or {}).items():
        if not isinstance(k, str) or not k or "=" in k:
            raise ValueError(f"set: key {k!r}: expected a spec key (a non-empty string "
                             "without '=')")
        if isinstance(v, (list, tuple)):
            v = "[" + ", ".join(_scalar(e) for e in v) + "]"
        elif not isinstance(v, str):
            if v is None or isinstance(v, dict):
                raise TypeError(f"set: {k}: {v!r}: expected a bool, number, string or list "
                                "(attnc --set KEY=VALUE takes one value)")
            v = _scalar(v)
        sets += ["--set", f"{k}={v}"]
    key = _key(["hf", cfg_bytes, module, *sets, _identity(binary), *_target_parts(target)])

    def produce(tmp):
        sp = os.path.join(tmp, "spec.yaml")
        cmd = [binary, "--hf", hf_dir, "--module", module, "-o",
               os.path.join(tmp, "kernel.so"), "--header", os.path.join(tmp, "kernel.h"),
               "--emit-spec", sp, *sets]
        if target:
            cmd += ["--target", target]
        # A refused derived spec: its messages name it as attnc does without
        # --emit-spec (the temporary is removed), and list it.
        label = f"<derived spec of {cfg}, {module}>"
        try:
            _run(cmd, "attnc --hf", rename=(sp, label))
        except CompileError as e:
            if e.returncode != 2 or not os.path.isfile(sp):  # (2: a spec error)
                raise
            with open(sp) as f:
                lines = f.read().splitlines()
            listing = "\n".join(f"{i + 1:4} | {ln}" for i, ln in enumerate(lines))
            raise CompileError(f"{e}\nthe derived spec was:\n{listing}", e.returncode,
                               e.output) from None

    kernel = _cached_kernel(key, cache_dir, produce)
    # The module's tensors as attnc-run --hf DIR --module M reads them:
    # libattnrt's loader (only what the kernel needs; shards, fused QKV
    # cut by config.json, T5's table from block 0, duplicates refused; the
    # directory's .safetensors, .npz and .npy files; a .bin's message gives
    # the command that converts it).
    packed = kernel.pack_checkpoint(hf_dir, prefix=module + ".")
    return kernel, packed
