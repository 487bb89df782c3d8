#!/usr/bin/env python3
"""attnc.torch with bf16 and f16 kernels (spec `dtype`): the operators and
AttnModule read x of the kernel's dtype in place and give y (and probs)
of it, other dtypes converted; replace_attention compiles kernels of the
model's weights' dtype (or the `dtype` given); each against a float64
reference on the rounded inputs, and bit for bit against Kernel.forward.

Each check prints PASS/FAIL and a summary line; exit 1 on any failure.

  torch_dtypes.py --work DIR
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import attnc  # noqa: E402
import attnc.torch as at  # noqa: E402
from checks import Checks  # noqa: E402

E, H = 32, 4
# bf16 storage (8 significant bits, unit roundoff 2^-8 = 3.9e-3) of Q/K/V,
# probs, the attention output and y: the block's error relative to max |y|
# is about one unit roundoff (measured 3e-3..4e-3 here); float16 (11 bits)
# 8x less.
TOL = {torch.bfloat16: 1.5e-2, torch.float16: 2e-3}
check = Checks()


def rel(a, ref):
    return float((a.double() - ref).abs().max() / ref.abs().max())


def reference(mha, q, kv, causal=False, kv_lengths=None):
    """float64 nn.MultiheadAttention (batch_first) of mha's weights as they
    are (already rounded to the model's dtype) on q, kv as given."""
    d = lambda t: None if t is None else t.detach().double()
    lq, lk = q.shape[1], kv.shape[1]
    mask = torch.ones(lq, lk, dtype=torch.bool).triu_(1) if causal else None
    kpm = None
    if kv_lengths is not None:
        kpm = torch.arange(lk)[None, :] >= kv_lengths[:, None]
    y, w = F.multi_head_attention_forward(
        d(q).transpose(0, 1), d(kv).transpose(0, 1), d(kv).transpose(0, 1), E, H,
        d(mha.in_proj_weight), d(mha.in_proj_bias), None, None, False, 0.0,
        d(mha.out_proj.weight), d(mha.out_proj.bias), training=False, key_padding_mask=kpm,
        need_weights=True, attn_mask=mask, average_attn_weights=False)
    return y.transpose(0, 1), w


def module_cases(cache):
    torch.manual_seed(1)
    for dt, name in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
        spec = {"name": f"tdt_{name}", "d_model": E, "heads": H, "mask": "causal",
                "weights": "torch_in_proj", "bias": True, "dtype": name,
                "outputs": ["y", "probs"]}
        k = attnc.compile(spec, cache_dir=cache)
        mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval().to(dt)
        m = at.AttnModule(k, weights=mha)
        x = torch.randn(2, 9, E)
        xd = x.to(dt)
        runner = at._runner(m.kernel_path)
        with torch.no_grad():
            y, probs = m(xd, need_weights=True)
            y32 = m(x)
            y_op = torch.ops.attnc.forward(x, m.packed, m.kernel_path)
        check(runner._activation(xd, "x") is xd and y.dtype == dt and probs.dtype == dt,
              f"{name} AttnModule: x of the kernel's dtype read as it is (no conversion), "
              f"y and probs {y.dtype} / {probs.dtype}")
        y_np = k.forward(xd, m.packed.numpy())
        check(torch.equal(y_np, y), f"{name} AttnModule: y bit for bit Kernel.forward's")
        check(y32.dtype == torch.float32 and torch.equal(y32, y.float()) and
              y_op.dtype == dt and torch.equal(y_op, y),
              f"{name} AttnModule: a float32 x rounded to {name} (y float32 = the {name} y "
              f"exactly); the operator gives y of the kernel's dtype ({y_op.dtype})")
        ref, w_ref = reference(mha, xd, xd, causal=True)
        wrong, _ = reference(mha, xd, xd, causal=False)
        e, ew, e_wrong = rel(y, ref), rel(probs, w_ref), rel(wrong, ref)
        check(e < TOL[dt] and ew < TOL[dt] and e_wrong > 10 * TOL[dt],
              f"{name} AttnModule vs float64 on the rounded x and weights: y {e:.2e}, "
              f"probs {ew:.2e} (limit {TOL[dt]:g}; the reference without the causal mask "
              f"is {e_wrong:.2e} away)")
        with torch.no_grad():
            traced = torch.jit.trace(m, (xd,))
            yt = traced(xd)
        check(torch.equal(yt, y) and yt.dtype == dt,
              f"{name} AttnModule traced: the same {yt.dtype} y")

    # f16 cross-attention with kv_lengths: x and x_kv each converted alone.
    spec = {"name": "tdt_cross", "d_model": E, "heads": H, "mask": "padding",
            "weights": "torch_in_proj", "bias": True, "dtype": "f16",
            "cross_attention": True}
    k = attnc.compile(spec, cache_dir=cache)
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval().half()
    m = at.AttnModule(k, weights=mha)
    x, xkv = torch.randn(2, 5, E), torch.randn(2, 7, E)
    kvl = torch.tensor([7, 3])
    with torch.no_grad():
        y = m(x.half(), x_kv=xkv.half(), kv_lengths=kvl)
        y_mixed = m(x.half(), x_kv=xkv.double(), kv_lengths=kvl)
    ref, _ = reference(mha, x.half(), xkv.half(), kv_lengths=kvl)
    e = rel(y, ref)
    check(y.dtype == torch.float16 and torch.equal(y_mixed, y) and e < TOL[torch.float16],
          f"f16 cross AttnModule with kv_lengths: y {y.dtype}, x_kv float64 rounded "
          f"gives the same bits, vs float64 {e:.2e}")
    for what, args in (("x", (x.clone().index_put_((torch.tensor(1), torch.tensor(2),
                                                     torch.tensor(3)), torch.tensor(7e4)),
                              xkv.half())),
                       ("x_kv", (x.half(), xkv.clone().index_put_(
                           (torch.tensor(0), torch.tensor(6), torch.tensor(1)),
                           torch.tensor(-1e6))))):
        try:
            with torch.no_grad():
                m(args[0], x_kv=args[1])
            check(False, f"f16 kernel: a {what} past float16's range accepted")
        except RuntimeError as e:
            want = "element (1, 2, 3) (70000)" if what == "x" else "element (0, 6, 1) (-1e+06)"
            check(f"attnc::forward: {what}: {want} is out of torch.float16 range" in str(e)
                  and "tdt_cross's dtype is f16" in str(e),
                  f"f16 kernel: a {what} past float16's range refused: {e}")


class Model(torch.nn.Module):
    """A Linear (torch 1.13 has no float16 matmul on the CPU: none then)
    into an nn.MultiheadAttention."""

    def __init__(self, linear=True):
        super().__init__()
        self.lin = torch.nn.Linear(E, E) if linear else torch.nn.Identity()
        self.attn = torch.nn.MultiheadAttention(E, H, batch_first=True)

    def forward(self, x, causal=False):
        h = self.lin(x)
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).triu_(1) \
            if causal else None
        return self.attn(h, h, h, attn_mask=mask, need_weights=False)[0], h


def replace_cases(cache):
    torch.manual_seed(2)
    x = torch.randn(3, 11, E)
    for dt, name in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
        # (torch 1.13 computes no float16 nn.MultiheadAttention on the CPU;
        # the replaced one runs.)
        model = Model(linear=dt is torch.bfloat16).eval().to(dt)
        torch_model = Model(linear=dt is torch.bfloat16).eval().to(dt)
        torch_model.load_state_dict(model.state_dict())
        at.replace_attention(model, cache_dir=cache)
        with torch.no_grad():
            y, h = model(x.to(dt), causal=True)
            y_torch = torch_model(x.to(dt), causal=True)[0] if dt is torch.bfloat16 else None
        ref, _ = reference(torch_model.attn, h, h, causal=True)
        e = rel(y, ref)
        theirs = "" if y_torch is None else f" (torch's own {name} module: {rel(y_torch, ref):.2e})"
        check(sorted(model.attn.kernels) == [f"sc_{name}"] and y.dtype == dt
              and e < TOL[dt],
              f"replace_attention on a {name} model: {sorted(model.attn.kernels)} kernels, "
              f"y {y.dtype}, vs float64 {e:.2e}{theirs}")
        kern = model.attn.kernels[f"sc_{name}"]
        f32 = attnc.compile(model.attn.spec(False, True), cache_dir=cache)
        check(kern.kernel.info["dtype"] == name and
              kern.packed.numel() < 0.6 * f32.info["packed_bytes"],
              f"replace_attention on a {name} model: the kernel's dtype {name}, its packed "
              f"weights {kern.packed.numel()} bytes (float32's: "
              f"{f32.info['packed_bytes']})")
    # dtype given: a bf16 model with float32 kernels (y still bf16).
    model = Model().eval().bfloat16()
    at.replace_attention(model, cache_dir=cache, dtype="f32")
    with torch.no_grad():
        y, h = model(x.bfloat16())
    ref, _ = reference(model.attn, h, h)
    e = rel(y, ref)
    check(sorted(model.attn.kernels) == ["sn"] and y.dtype == torch.bfloat16 and
          e < 2 ** -8 + 1e-5,
          f"replace_attention(dtype='f32') on a bf16 model: {sorted(model.attn.kernels)}, "
          f"y {y.dtype} (only its rounding: {e:.2e})")
    # The weights' dtype decides at the call: .to() switches the kernels.
    model = Model().eval()
    at.replace_attention(model, cache_dir=cache)
    with torch.no_grad():
        model(x)
        first = sorted(model.attn.kernels)
        model.bfloat16()
        y, h = model(x.bfloat16())
        second = sorted(model.attn.kernels)
        model.float()
        y32, h32 = model(x)
    ref, _ = reference(model.attn, h32, h32)
    check(first == ["sn"] and second == ["sn_bf16"] and sorted(model.attn.kernels) == ["sn"]
          and y.dtype == torch.bfloat16 and y32.dtype == torch.float32 and
          rel(y32, ref) < 1e-5,
          f"replace_attention: kernels follow .to(): {first} -> {second} -> "
          f"{sorted(model.attn.kernels)} (float32 again: {rel(y32, ref):.1e})")
    # An f16 module's call the kernels cannot express: torch's fallback
    # computes no float16 on the CPU in torch 1.13: Unsupported naming both
    # (a torch that does compute it runs the fallback, with the warning).
    import warnings
    try:
        torch.ones(2, 2, dtype=torch.float16) @ torch.ones(2, 2, dtype=torch.float16)
        torch_f16 = True
    except RuntimeError:
        torch_f16 = False
    mha = at.replace_attention(torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
                               .half(), cache_dir=cache)
    xh = x.half()
    band = torch.ones(11, 11, dtype=torch.bool).triu_(3)
    with torch.no_grad(), warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        try:
            y = mha(xh, xh, xh, attn_mask=band)[0]
            check(torch_f16 and y.dtype == torch.float16 and
                  any("neither all-visible" in str(w.message) for w in ws),
                  f"f16 module, a mask the kernels cannot express: torch's fallback ran "
                  f"(torch {torch.__version__} computes float16 on the CPU)")
        except at.Unsupported as e:
            check(not torch_f16 and "neither all-visible nor the causal" in str(e) and
                  "fallback, fails too" in str(e) and "no float16 attention on the CPU" in
                  str(e), f"f16 module, a mask the kernels cannot express: Unsupported: {e}")
    # x.half() called three times: tensors of one value, the kernels run
    # (no fallback warning).
    with torch.no_grad(), warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        y = mha(x.half(), x.half(), x.half(), need_weights=False)[0]
    fell = [str(w.message) for w in ws if "attnc" in str(w.message)]
    check(y.dtype == torch.float16 and not fell and sorted(mha.kernels) == ["sn_f16"],
          f"f16 module called with x.half() three times: the kernels {sorted(mha.kernels)}, "
          f"no fallback {fell}")
    for bad in ("fp16", torch.float64, 16):
        try:
            at.replace_attention(Model(), cache_dir=cache, dtype=bad)
            check(False, f"replace_attention(dtype={bad!r}) accepted")
        except ValueError as e:
            check("dtype must be None" in str(e) and repr(bad) in str(e),
                  f"replace_attention(dtype={bad!r}) refused: {e}")


def hf_case(work, cache):
    """A bf16 Llama checkpoint (tests/e2e/hf_import.py's) through
    attnc.from_hf(set={"dtype": "bf16"}) into an AttnModule: bf16 x in,
    bf16 y out, against the float64 Hugging Face reference."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
    import hf_import
    import real_models
    c = next(c for c in hf_import.CASES if c["name"] == "llama")
    d = os.path.join(work, "llama-bf16")
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(dict(c["config"], torch_dtype="bfloat16"), f)
    rng = np.random.default_rng(7)
    w = real_models.weights_of(c["ref"], rng)
    # The checkpoint's bf16 weights, and the reference's the same values.
    w = {n: torch.from_numpy(a.astype(np.float32)).bfloat16() for n, a in w.items()}
    attnc.save_safetensors(os.path.join(d, "model.safetensors"),
                           {f"{c['module']}.{hf}.weight": w[f"{p}_proj.weight"]
                            for p, hf in c["names"].items()})
    k, packed = attnc.from_hf(d, module=c["module"], cache_dir=cache,
                              set={"dtype": "bf16"})
    m = at.AttnModule(k, packed=packed)
    x = torch.randn(2, 21, c["ref"]["d"], generator=torch.Generator().manual_seed(3))
    xb = x.bfloat16()
    with torch.no_grad():
        y = m(xb)
    w64 = {n: t.double().numpy() for n, t in w.items()}
    x64 = xb.double().numpy()
    want = torch.from_numpy(real_models.reference(c["ref"], w64, x64, rope=c["ref"]["rope"]))
    e = rel(y, want)
    e_wrong = rel(torch.from_numpy(real_models.reference(c["ref"], w64, x64, rope=None)),
                  want)
    check(k.info["dtype"] == "bf16" and k.info["weight_dtype"] == "bf16" and
          y.dtype == torch.bfloat16 and e < TOL[torch.bfloat16] and
          e_wrong > 10 * TOL[torch.bfloat16],
          f"from_hf (a bf16 Llama, set dtype bf16) + AttnModule: y {y.dtype}, vs float64 "
          f"{e:.2e} (the reference without rotary positions is {e_wrong:.2e} away)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    cache = os.path.join(a.work, "cache")
    os.makedirs(cache, exist_ok=True)
    module_cases(cache)
    replace_cases(cache)
    hf_case(a.work, cache)
    print(f"torch dtypes: {check.passed} passed, {check.failures} failed")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
