#!/usr/bin/env python3
"""attnc.compile: the cache of compiled libraries, across processes.

ATTNC_BIN is a wrapper of the real attnc (from PATH) that appends a line
to a counter file for every compile (not for --version), so the checks see
how many times the compiler actually ran:
  1. process 1 compiles a dict spec (count 1), runs it against a NumPy MHA;
  2. process 2 asks for the same spec as YAML text: loaded from the cache
     (count still 1, the library's mtime unchanged), same results;
  3. the cached spec.yaml by path: from the cache;
  4. another target (x86-avx2): compiled (count 2), another entry;
  5. the cached library truncated: refused by libattnrt, compiled again;
  6. an invalid spec: CompileError exit 2 with attnc's message, nothing
     cached; ATTNC_BIN at a missing file: CompileError naming ATTNC_BIN.

  compile_cache.py --work DIR
"""
import argparse
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")

CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np, attnc
spec = json.loads(sys.argv[2]) if sys.argv[2].startswith("{") else sys.argv[2]
k = attnc.compile(spec, target=sys.argv[4] or None, cache_dir=sys.argv[3])
rng = np.random.default_rng(0)
d = k.d_model
w = {"in_proj_weight": rng.standard_normal((3 * d, d)).astype(np.float32) * 0.3,
     "in_proj_bias": rng.standard_normal(3 * d).astype(np.float32) * 0.3,
     "out_proj.weight": rng.standard_normal((d, d)).astype(np.float32) * 0.3,
     "out_proj.bias": rng.standard_normal(d).astype(np.float32) * 0.3}
x = rng.standard_normal((2, 5, d)).astype(np.float32)
y = k.forward(x, k.pack(w))
# float64 reference: torch_in_proj layout, 2 heads, causal
h, dh = k.heads, d // k.heads
qkv = x.astype(np.float64) @ w["in_proj_weight"].T.astype(np.float64) + w["in_proj_bias"]
q, kk, v = np.split(qkv, 3, axis=-1)
sh = lambda t: t.reshape(2, 5, h, dh).transpose(0, 2, 1, 3)
s = sh(q) @ sh(kk).transpose(0, 1, 3, 2) / np.sqrt(dh)
s = np.where(np.triu(np.ones((5, 5), bool), 1), -np.inf, s)
p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
o = (p @ sh(v)).transpose(0, 2, 1, 3).reshape(2, 5, d)
ref = o @ w["out_proj.weight"].T + w["out_proj.bias"]
lib = os.path.join(k.cache_entry, "kernel.so")
print(json.dumps({"compiled": k.compiled, "entry": k.cache_entry, "isa": k.info["isa"],
                  "mtime": os.stat(lib).st_mtime_ns, "err": float(np.abs(y - ref).max()),
                  "y0": float(y[0, 0, 0])}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    real = shutil.which("attnc")
    counter = os.path.join(a.work, "compiles")
    wrapper = os.path.join(a.work, "attnc-counting")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\n[ "$1" = --version ] || echo "$*" >> "{counter}"\n'
                f'exec "{real}" "$@"\n')
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
    env = dict(os.environ, ATTNC_BIN=wrapper)
    cache = os.path.join(a.work, "cache")
    count = lambda: len(open(counter).read().splitlines()) if os.path.exists(counter) else 0
    fails = 0

    def child(spec, target=""):
        p = subprocess.run([sys.executable, "-c", CHILD, PKG, spec, cache, target], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stdout)
        return json.loads(p.stdout.strip().splitlines()[-1])

    def check(ok, what):
        nonlocal fails
        fails += not ok
        print(f"{'PASS' if ok else 'FAIL'}: {what}")

    spec = {"name": "cc_causal", "d_model": 16, "heads": 2, "mask": "causal",
            "weights": "torch_in_proj", "bias": True}
    r1 = child(json.dumps(spec))
    check(r1["compiled"] and count() == 1 and r1["err"] < 1e-5,
          f"process 1: compiled (compiler runs: {count()}), max |y - float64| = {r1['err']:.1e}")
    text = ("name: cc_causal\nd_model: 16\nheads: 2\nmask: causal\n"
            "weights: torch_in_proj\nbias: true\n")
    r2 = child(text)
    check(not r2["compiled"] and count() == 1 and r2["entry"] == r1["entry"]
          and r2["mtime"] == r1["mtime"] and r2["y0"] == r1["y0"],
          f"process 2, the same spec as YAML text: from the cache (compiler runs: {count()}, "
          "same library, mtime unchanged, same y)")
    r3 = child(os.path.join(r1["entry"], "spec.yaml"))
    check(not r3["compiled"] and count() == 1 and r3["entry"] == r1["entry"],
          f"process 3, the cached spec.yaml by path: from the cache (compiler runs: {count()})")
    r4 = child(json.dumps(spec), "x86-avx2")
    check(r4["compiled"] and count() == 2 and r4["entry"] != r1["entry"]
          and r4["isa"] == "x86-avx2" and r4["err"] < 1e-5,
          f"process 4, target x86-avx2: compiled again (compiler runs: {count()}), "
          f"isa {r4['isa']}, another entry")

    # A cached library cut short: refused by libattnrt, compiled again.
    lib = os.path.join(r1["entry"], "kernel.so")
    with open(lib, "r+b") as f:
        f.truncate(os.path.getsize(lib) // 2)
    r5 = child(text)
    check(r5["compiled"] and count() == 3 and r5["entry"] == r1["entry"]
          and r5["y0"] == r1["y0"],
          f"process 5, the cached library truncated: compiled again (compiler runs: {count()}), "
          "same y")

    sys.path.insert(0, PKG)
    os.environ["ATTNC_BIN"] = wrapper
    import attnc
    before = sorted(os.listdir(cache))
    try:
        attnc.compile(dict(spec, heads=3), cache_dir=cache)
        check(False, "an invalid spec raised nothing")
    except attnc.CompileError as e:
        msg = str(e).splitlines()[-1]
        check(e.returncode == 2 and "heads: 3 does not divide d_model 16" in msg
              and sorted(os.listdir(cache)) == before,
              f"invalid spec: CompileError (exit {e.returncode}), nothing cached: {msg}")
    # An empty mapping is the key with every default (rope: {}), not a
    # key without a value.
    kr = attnc.compile(dict(spec, name="cc_rope", rope={}), cache_dir=cache)
    rope = kr.info["rope"]
    check(rope is not None and rope["style"] == "half_split",
          f"rope={{}}: a kernel with the default rotation (style {rope and rope['style']})")
    # k.info's score and rotation features hold the keys and values of
    # attnc-run --info --json (docs/python.md), longrope's table included.
    half = 4  # rotary_dim / 2 of a 16-wide block of 2 heads
    kl = attnc.compile(dict(spec, name="cc_longrope", weights="separate", rope=dict(
        scaling=dict(type="longrope", original_max_position_embeddings=64,
                     max_position_embeddings=256, short_factor=[1.0] * half,
                     long_factor=[2.0] * half))), cache_dir=cache, target="host")
    feats = ("rope", "softcap", "clip_qkv", "temperature_tuning", "alibi", "t5_bias",
             "relative_key", "qk_norm", "sinks")
    for kk in (kr, kl):
        j = json.loads(subprocess.run(["attnc-run", kk.path, "--info", "--json"], check=True,
                                      capture_output=True, text=True).stdout)
        diff = [f for f in feats if kk.info[f] != j[f]]
        check(not diff, f"{kk.name}: k.info's {', '.join(feats)} equal attnc-run --info "
                        f"--json's (differ: {diff or 'none'}; long_from "
                        f"{kk.info['rope']['long_from']})")
    # Strings that plain YAML reads as null or booleans stay strings, and
    # NumPy's scalars are numbers (attnc reads the name back as written).
    import numpy as np
    kn = attnc.compile(dict(spec, name="null", d_model=np.int64(spec["d_model"]),
                            heads=np.int32(spec["heads"]), scale=np.float32(0.25)),
                       cache_dir=cache, target="host")
    check(kn.info["name"] == "null" and kn.info["d_model"] == spec["d_model"],
          f"a dict spec with name 'null' and NumPy scalars: name {kn.info['name']!r}")
    afile = os.path.join(a.work, "a-file")
    open(afile, "w").close()
    try:
        attnc.compile(spec, cache_dir=afile)
        check(False, "a cache_dir that is a file raised nothing")
    except NotADirectoryError as e:
        check("is not a directory" in str(e), f"a cache_dir that is a file: {e}")
    os.environ["ATTNC_BIN"] = os.path.join(a.work, "no-such-attnc")
    try:
        attnc.compile(spec, cache_dir=os.path.join(a.work, "cache2"))
        check(False, "a missing ATTNC_BIN raised nothing")
    except attnc.CompileError as e:
        check("ATTNC_BIN" in str(e), f"missing compiler: {str(e)[:90]}...")
    # attnc.from_hf on the Llama checkpoint of tests/e2e/hf_import.py (a
    # decoy layer beside it), against its float64 reference.
    os.environ["ATTNC_BIN"] = wrapper
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
    import numpy as np
    import hf_import
    import real_models
    c = next(c for c in hf_import.CASES if c["name"] == "llama")
    d = os.path.join(a.work, "llama")
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c["config"], f)
    rng = np.random.default_rng(5)
    w = real_models.weights_of(c["ref"], rng)
    tensors = {}
    for layer, scale in ((c["module"], 1.0), (c["module"].replace(".1.", ".2."), 3.0)):
        for p_, hf in c["names"].items():
            tensors[f"{layer}.{hf}.weight"] = (w[f"{p_}_proj.weight"] * scale).astype(np.float32)
    attnc.save_safetensors(os.path.join(d, "model.safetensors"), tensors)
    n0 = count()
    k, packed = attnc.from_hf(d, module=c["module"], cache_dir=cache)
    x = rng.standard_normal((2, 21, c["ref"]["d"])).astype(np.float32)
    y = k.forward(x, packed)
    want = real_models.reference(c["ref"], w, x, rope=c["ref"]["rope"])
    e = float(np.abs(y - want).max())
    k2, packed2 = attnc.from_hf(d, module=c["module"], cache_dir=cache)
    check(k.compiled and not k2.compiled and count() == n0 + 1 and e < 1e-4
          and np.array_equal(packed, packed2)
          and "rope" in open(os.path.join(k.cache_entry, "spec.yaml")).read(),
          f"from_hf llama --module {c['module']}: compiled once (then cached), weights "
          f"packed, max |y - float64| = {e:.1e}")
    # The same checkpoint converted to .npz (docs/weights.md's route for a
    # .bin), and one left as a .bin: from_hf reads what attnc-run --hf
    # reads (it refused any directory without a .safetensors, as a
    # CompileError, after compiling), and the .bin's refusal gives the
    # command that converts it. (config.json is the same: the kernel comes
    # from the cache.)
    for sub, fname in (("llama_npz", "weights.npz"), ("llama_bin", "pytorch_model.bin")):
        os.makedirs(os.path.join(a.work, sub))
        shutil.copy(os.path.join(d, "config.json"), os.path.join(a.work, sub))
    np.savez(os.path.join(a.work, "llama_npz", "weights.npz"), **tensors)
    with open(os.path.join(a.work, "llama_bin", "pytorch_model.bin"), "wb") as f:
        # torch.save's legacy pickle format (protocol 2, its magic number)
        f.write(pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2) + b"\0" * 60)
    kn, packed_n = attnc.from_hf(os.path.join(a.work, "llama_npz"), module=c["module"],
                                 cache_dir=cache)
    check(not kn.compiled and np.array_equal(packed_n, packed),
          "from_hf on the checkpoint as weights.npz: the same packed weights")
    try:
        attnc.from_hf(os.path.join(a.work, "llama_bin"), module=c["module"], cache_dir=cache)
        check(False, "from_hf on a .bin checkpoint raised nothing")
    except attnc.AttncError as e:
        check("pytorch_model.bin" in str(e) and "np.savez" in str(e),
              f"from_hf on a .bin checkpoint: {type(e).__name__}, the conversion command given")
    # set= takes the command line's strings as they are ("40" a number,
    # "true" a bool), and a refused derived spec is named as attnc names it
    # (not by the removed temporary) and listed.
    k3, _ = attnc.from_hf(d, module=c["module"], cache_dir=cache,
                          set={"max_seq_len": "40", "decode": "true"})
    check(k3.info["max_seq_len"] == 40 and "decode" in k3.info["features"],
          f"from_hf set={{'max_seq_len': '40', 'decode': 'true'}}: max_seq_len "
          f"{k3.info['max_seq_len']}, features {k3.info['features']}")
    try:
        attnc.from_hf(d, module=c["module"], cache_dir=cache, set={"max_seq_len": "0"})
        check(False, "from_hf set max_seq_len 0 raised nothing")
    except attnc.CompileError as e:
        msg = str(e)
        first = next((ln for ln in msg.splitlines() if "error:" in ln), msg)
        check(f"<derived spec of {d}/config.json, {c['module']}>:" in msg and cache not in msg
              and "the derived spec was:" in msg and "| max_seq_len: 0" in msg,
              f"from_hf refused set: {first}")
    bad = []
    for st, exc in (({"max_seq_len=8": 1}, ValueError), ({"max_seq_len": None}, TypeError)):
        try:
            attnc.from_hf(d, module=c["module"], cache_dir=cache, set=st)
            bad.append(f"{st}: nothing raised")
        except exc:
            pass
    check(not bad, f"from_hf set= with a key holding '=' or a None value: refused before "
                   f"attnc runs {bad or ''}")
    print(f"compile cache: {'0 failed' if not fails else f'{fails} failed'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
