"""python3 -m attnc --version: the package, its libattnrt and its attnc
executable. Any other arguments are passed to the attnc executable
(python3 -m attnc SPEC.yaml -o lib.so is `attnc SPEC.yaml -o lib.so`)."""
import os
import subprocess
import sys

import attnc
from attnc import _compile


def main(argv):
    if argv in (["--version"], ["-V"]):
        print(f"attnc (Python package) {attnc.__version__} (kernel ABI {attnc.ABI_VERSION})")
        print(f"package: {os.path.dirname(os.path.abspath(attnc.__file__))}")
        rc = 0
        try:
            print(f"libattnrt: {attnc.libattnrt_path()}")
        except attnc.AttncError as e:
            print(f"libattnrt: not found: {e}")
            rc = 1
        try:
            binary = _compile.attnc_binary()
            print(f"compiler: {binary}: {_compile.compiler_version(binary)}")
        except _compile.CompileError as e:
            print(f"compiler: not found: {e}")
            rc = 1
        return rc
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    try:
        binary = _compile.attnc_binary()
    except _compile.CompileError as e:
        print(f"python3 -m attnc: {e}", file=sys.stderr)
        return 1
    return subprocess.run([binary] + argv).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
