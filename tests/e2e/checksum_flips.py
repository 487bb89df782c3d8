"""Flips single bits of a kernel library and runs attnc-run on each copy:
every corrupt copy must be refused with exit 11 (open_failed), none may
die of a signal or run. Prints one summary line (checksum.test)."""
import random
import re
import subprocess
import sys

lib = sys.argv[1]
orig = open(lib, "rb").read()
sections = subprocess.run(["readelf", "-SW", lib], capture_output=True, text=True,
                          check=True).stdout


def extent(name):
    m = re.search(r"\s" + re.escape(name) + r"\s+\w+\s+\w+\s+(\w+)\s+(\w+)", sections)
    return int(m.group(1), 16), int(m.group(2), 16)


rng = random.Random(22)
targets = [(".text", 30), (".rodata", 5), (".data.rel.ro", 5)]
positions = []
for name, count in targets:
    off, size = extent(name)
    positions += [off + rng.randrange(size) for _ in range(count)]
positions += [rng.randrange(64) for _ in range(5)]  # the ELF header

refused = by_checksum = 0
bad = []
for i, pos in enumerate(positions):
    b = bytearray(orig)
    b[pos] ^= 1 << rng.randrange(8)
    path = "flip%d.so" % i
    open(path, "wb").write(b)
    p = subprocess.run(["attnc-run", path, "--seq-len", "9", "--check"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode == 11:
        refused += 1
        by_checksum += "checksum mismatch" in p.stderr
    else:
        bad.append((pos, p.returncode, p.stderr.strip()[-200:]))
print("flips: %d, refused with exit 11: %d, of which by the checksum: %d"
      % (len(positions), refused, by_checksum))
for pos, rc, err in bad:
    print("NOT REFUSED: byte %d: exit %d: %s" % (pos, rc, err))
