"""Validates attnc-run --json output against docs/json.md.

  check_run_json.py FILE [--expect PATH=JSON ...]

FILE holds what attnc-run printed on stdout: exactly one JSON object. Its
keys must be exactly the documented ones (none missing, none extra) with
the documented types; nested comparisons, bench and weights entries too.
--expect checks one value: PATH is dot-separated keys or array indices
("check.passed", "weights.0.name"), JSON the value it must equal ("true", "\"causal+padding\"", "1").
Numbers must be in their shortest round-trip form. Prints "ok KIND" or
every problem found (exit 1).
"""
import json
import sys

INT, NUM, STR, BOOL, NULL, ARR, OBJ = "int", "number", "string", "bool", "null", "array", "object"


def type_of(v):
    if v is None:
        return NULL
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return NUM
    if isinstance(v, str):
        return STR
    if isinstance(v, list):
        return ARR
    return OBJ


HEADER = {"format": {STR}, "format_version": {INT}, "kind": {STR}}

INFO = dict(HEADER, **{
    "library": {STR}, "name": {STR}, "abi_version": {INT}, "spec_hash": {STR},
    "d_model": {INT}, "heads": {INT}, "kv_heads": {INT}, "head_dim": {INT}, "out_dim": {INT},
    "mask": {STR}, "causal_align": {STR, NULL}, "window": {INT, NULL}, "chunk": {INT, NULL},
    "bias": {ARR},
    "out_proj": {BOOL}, "scale": {NUM, INT}, "dtype": {STR}, "weight_dtype": {STR},
    "tensor_parallel": {OBJ}, "weight_layout": {STR},
    "softcap": {NUM, INT, NULL}, "clip_qkv": {NUM, INT, NULL}, "alibi": {OBJ, NULL},
    "temperature_tuning": {OBJ, NULL},
    "t5_bias": {OBJ, NULL}, "qk_norm": {OBJ, NULL}, "sinks": {BOOL},
    "relative_key": {OBJ, NULL},
    "rope": {OBJ, NULL}, "isa": {STR},
    "code_paths": {ARR}, "selected_isa": {STR, NULL}, "selected_isa_why_none": {STR, NULL},
    "features": {ARR}, "checksum": {BOOL}, "target_triple": {STR}, "target_cpu": {STR},
    "compiler_version": {STR}, "packed_bytes": {INT}, "max_seq_len": {INT, NULL},
    "workspace_fixed_bytes": {INT}, "workspace_per_row_floats": {INT},
    "stack_bytes_per_thread": {INT}, "weights": {ARR},
})

RUN = dict(HEADER, **{
    "library": {STR}, "kernel": {STR}, "device": {STR}, "device_name": {STR, NULL},
    "selected_isa": {STR, NULL}, "threads": {INT, NULL}, "batch": {INT}, "seq_len": {INT},
    "kv_seq_len": {INT}, "d_model": {INT}, "heads": {INT}, "out_dim": {INT},
    "lengths": {ARR, NULL}, "kv_lengths": {ARR, NULL}, "decode_steps": {INT},
    "decode_chunk": {INT, NULL},
    "prefill": {INT, NULL}, "workspace_bytes": {INT}, "seed": {INT}, "x": {STR, NULL},
    "x_kv": {STR, NULL}, "weights": {STR, NULL}, "weights_prefix": {STR, NULL},
    "out": {STR, NULL}, "probs": {STR, NULL}, "heatmap": {STR, NULL},
    "check": {OBJ, NULL}, "expected": {OBJ, NULL}, "bench": {OBJ, NULL},
    "passed": {BOOL}, "exit_code": {INT},
})

ELEMENT = {"index": {INT}, "value": {NUM, INT, NULL}, "reference": {NUM, INT, NULL}}
COMPARISON = {
    "passed": {BOOL}, "elements": {INT}, "atol": {NUM, INT}, "rtol": {NUM, INT},
    "bound": {STR, NULL}, "max_abs_err": {NUM, INT, NULL}, "max_rel_err": {NUM, INT, NULL},
    "mean_abs_err": {NUM, INT, NULL}, "max_bound": {NUM, INT, NULL}, "non_finite": {INT},
    "non_finite_output_only": {INT}, "non_finite_reference_only": {INT},
    "non_finite_both": {INT}, "unbounded": {INT}, "outside_allowance": {INT},
    "first_non_finite": {OBJ, NULL}, "first_unbounded": {OBJ, NULL}, "worst": {OBJ, NULL},
}
CHECK = dict(COMPARISON, against={STR}, probs={OBJ, NULL})
EXPECTED = dict(COMPARISON, against={STR}, path={STR})
BENCH = {
    "mode": {STR}, "calls": {INT}, "min_ms": {NUM, INT}, "median_ms": {NUM, INT},
    "timer": {STR}, "pack_ms": {NUM, INT}, "packed_bytes": {INT},
    "gflops": {NUM, INT, NULL}, "position": {INT, NULL}, "bytes_read": {NUM, INT, NULL},
    "gb_per_s": {NUM, INT, NULL},
}
ERROR = dict(HEADER, error={STR}, exit_code={INT})

MASKS = {"none", "causal", "padding", "causal+padding", "sliding_window", "chunked",
         "sliding_window+padding", "chunked+padding", "bidirectional_window",
         "bidirectional_window+padding"}
ISAS = {"x86-64", "x86-avx2", "x86-avx512", "host", "multi", "cuda-sm80", "cuda-sm90"}
FEATURES = {"lengths", "cross", "probs", "decode", "cuda", "rope", "score_mods"}

problems = []


def check(obj, schema, where):
    if not isinstance(obj, dict):
        problems.append(f"{where}: expected an object, found {type_of(obj)}")
        return
    for k in schema:
        if k not in obj:
            problems.append(f"{where}: missing key '{k}'")
    for k, v in obj.items():
        if k not in schema:
            problems.append(f"{where}: undocumented key '{k}'")
        elif type_of(v) not in schema[k]:
            problems.append(f"{where}.{k}: expected {sorted(schema[k])}, found {type_of(v)} {v!r}")


def check_comparison(c, schema, where, top=True):
    if c is None:
        return
    check(c, schema, where)
    for k, extra in (("first_non_finite", {}), ("worst", {"abs_err": {NUM, INT},
                                                         "allowance_ratio": {NUM, INT, NULL}}),
                     ("first_unbounded", {"abs_err": {NUM, INT, NULL},
                                          "bound": {NUM, INT, NULL}})):
        if isinstance(c.get(k), dict):
            check(c[k], dict(ELEMENT, **extra), f"{where}.{k}")
    if top and isinstance(c.get("probs"), dict):
        check_comparison(c["probs"], COMPARISON, f"{where}.probs", top=False)


def significant(token):
    """The significant digits of a number token ('0.1890' -> '189')."""
    mantissa = token.lower().lstrip("-").split("e")[0].replace(".", "")
    return mantissa.lstrip("0").rstrip("0") or "0"


def shortest_float(token):
    """json.md: the shortest decimal form that reads back as the same
    double (Python's repr is that form)."""
    v = float(token)
    if len(significant(token)) > len(significant(repr(v))):
        problems.append(f"number {token} is not in its shortest form ({v!r})")
    return v


def main():
    path, expects = sys.argv[1], []
    args = sys.argv[2:]
    while args:
        if args[0] != "--expect" or len(args) < 2:
            sys.exit("usage: check_run_json.py FILE [--expect PATH=JSON ...]")
        expects.append(args[1])
        args = args[2:]
    text = open(path).read()
    try:
        # Exactly one value (trailing text is an error) and strict JSON:
        # Python would accept NaN and Infinity, JSON has neither.
        def refuse(name):
            raise ValueError(f"{name} is not JSON")
        j = json.loads(text, parse_constant=refuse, parse_float=shortest_float)
    except ValueError as e:
        print(f"not one JSON value: {e}: {text[:200]!r}")
        sys.exit(1)
    kind = j.get("kind") if isinstance(j, dict) else None
    if not isinstance(j, dict) or j.get("format") != "attnc-run" or j.get("format_version") != 1:
        problems.append("not an attnc-run format_version 1 object")
    elif kind == "info":
        check(j, INFO, "info")
        if j.get("mask") not in MASKS:
            problems.append(f"info.mask: {j.get('mask')!r} is not one of the spec's spellings")
        if j.get("isa") not in ISAS or not set(j.get("code_paths", [])) <= ISAS:
            problems.append("info.isa / code_paths: unknown names")
        if not set(j.get("features", [])) <= FEATURES:
            problems.append(f"info.features: unknown names in {j.get('features')}")
        if not all(p in ("q", "k", "v", "o") for p in j.get("bias", [])):
            problems.append(f"info.bias: {j.get('bias')}")
        for i, w in enumerate(j.get("weights", [])):
            check(w, {"name": {STR}, "shape": {ARR}}, f"info.weights[{i}]")
            if isinstance(w, dict) and not all(type_of(d) == INT for d in w.get("shape", [])):
                problems.append(f"info.weights[{i}].shape: not integers")
        if isinstance(j.get("alibi"), dict):
            check(j["alibi"], {"slopes": {ARR}, "before_scale": {BOOL}}, "info.alibi")
        if isinstance(j.get("relative_key"), dict):
            check(j["relative_key"], {"max_position_embeddings": {INT}, "key_query": {BOOL}},
                  "info.relative_key")
        if isinstance(j.get("t5_bias"), dict):
            check(j["t5_bias"], {"num_buckets": {INT}, "max_distance": {INT},
                                 "bidirectional": {BOOL}}, "info.t5_bias")
        if isinstance(j.get("qk_norm"), dict):
            check(j["qk_norm"], {"width": {STR}, "type": {STR}, "weight": {STR},
                                 "bias": {BOOL}, "eps": {NUM, INT},
                                 "weight_offset": {NUM, INT}}, "info.qk_norm")
            if j["qk_norm"].get("type") not in ("rms", "layer") or \
                    j["qk_norm"].get("weight") not in ("shared", "per_head"):
                problems.append(f"info.qk_norm: {j['qk_norm']!r}")
            if j["qk_norm"].get("width") not in ("head", "projection"):
                problems.append(f"info.qk_norm.width: {j['qk_norm'].get('width')!r}")
        if isinstance(j.get("rope"), dict):
            check(j["rope"], {"style": {STR}, "rotary_dim": {INT}, "inv_freq": {ARR},
                              "attention_factor": {NUM, INT}, "long_inv_freq": {ARR, NULL},
                              "long_from": {INT, NULL},
                              "dynamic_factor": {NUM, INT, NULL}, "dynamic_from": {INT, NULL}},
                  "info.rope")
    elif kind == "run":
        check(j, RUN, "run")
        check_comparison(j.get("check"), CHECK, "run.check")
        check_comparison(j.get("expected"), EXPECTED, "run.expected")
        if isinstance(j.get("bench"), dict):
            check(j["bench"], BENCH, "run.bench")
        if j.get("passed") != (j.get("exit_code") == 0):
            problems.append("run: passed and exit_code disagree")
    elif kind == "error":
        check(j, ERROR, "error")
    else:
        problems.append(f"unknown kind {kind!r}")
    for e in expects:
        keypath, want = e.split("=", 1)
        v = j
        for k in keypath.split("."):
            if isinstance(v, list) and k.isdigit() and int(k) < len(v):
                v = v[int(k)]
            else:
                v = v.get(k) if isinstance(v, dict) else None
        if v != json.loads(want):
            problems.append(f"{keypath}: expected {want}, found {json.dumps(v)}")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"ok {kind}")


main()
