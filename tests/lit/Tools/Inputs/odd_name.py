"""A library name JSON must escape: a quote, a backslash, a tab and a byte
that is not UTF-8 (which attnc-run writes as U+FFFD).

  odd_name.py make LIB DIR     copies LIB to DIR/<odd name>, prints its path
  odd_name.py check FILE.json  the object's "library" ends in that name
"""
import json
import os
import shutil
import sys

NAME = b'we"ird\\\t\xff.so'
if sys.argv[1] == "make":
    dst = os.path.join(os.fsencode(sys.argv[3]), NAME)
    shutil.copy(sys.argv[2], dst)
    sys.stdout.buffer.write(dst + b"\n")
else:
    lib = json.load(open(sys.argv[2], encoding="utf-8"))["library"]
    want = NAME.decode("utf-8", errors="replace")
    print("library name round trip:", lib.endswith("/" + want))
