"""Facts the docs state that the sources decide: the size limits of
docs/spec.md, docs/limits.md and the README against
runtime/include/attnc/runtime/Limits.h, and the README's count of
tests/bad_inputs. Prints one line per fact and "ok", or what differs
(exit 1).

  check_doc_facts.py SRC
"""
import glob
import os
import re
import sys

src = sys.argv[1]
read = lambda p: open(os.path.join(src, p)).read()
limits_h = read("runtime/include/attnc/runtime/Limits.h")
lim = {m.group(1): 1 << int(m.group(2)) for m in re.finditer(
    r"constexpr int64_t (kMax\w+) = int64_t\(1\) << (\d+);", limits_h)}
bad = []


def need(cond, what):
    print(("ok: " if cond else "DIFFERS: ") + what)
    if not cond:
        bad.append(what)


spec, limits_md, readme = read("docs/spec.md"), read("docs/limits.md"), read("README.md")
for key, const in (("d_model", "kMaxDModel"), ("heads", "kMaxHeads"), ("kv_heads", "kMaxKvHeads"),
                   ("head_dim", "kMaxHeadDim"), ("window", "kMaxWindow"),
                   ("max_seq_len", "kMaxSeqLen")):
    n = lim[const]
    row = re.search(r"^\| `%s` \|[^\n]*" % key, spec, re.M)
    need(row is not None and f"≤ {n}" in row.group(0),
         f"docs/spec.md: {key} <= {n} ({const})")
    lrow = re.search(r"^\| `%s`[^|]*\| ([0-9]+)" % key, limits_md, re.M)
    need(lrow is not None and int(lrow.group(1)) == n, f"docs/limits.md: {key} {n}")
# The message table: each key's own limit, no other.
msgs = set(int(x) for x in re.findall(r"expected a positive integer <= ([0-9]+)", spec))
need(msgs <= set(lim.values()), f"docs/spec.md: the limits in messages {sorted(msgs)} are Limits.h's")
need(f"d_model <= {lim['kMaxDModel']}" in readme and f"heads and kv_heads <=\n{lim['kMaxHeads']}" in readme,
     "README: size limits")
n = len(glob.glob(os.path.join(src, "tests/bad_inputs/*.yaml")))
counts = re.findall(r"(\d+) (?:such files|invalid specs|bad-input specs)", readme)
need(counts and all(int(c) == n for c in counts),
     f"README: the count of tests/bad_inputs ({n} files) in {counts}")
if bad:
    sys.exit(1)
print("ok")
