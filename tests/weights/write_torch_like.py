"""Writes, without torch, files laid out as torch.save writes them:
OUT/model.bin (the zip format: ARCHIVE/data.pkl, ARCHIVE/data/0,
ARCHIVE/version) and OUT/legacy.pt (the legacy format: a pickled magic
number, protocol version and system info, then the pickled object). Also
OUT/mixed/NAME.npy: the fake kernel's four tensors (tests/support)."""
import io
import os
import pickle
import sys
import zipfile

import numpy as np

out = sys.argv[1]
state = pickle.dumps({"c_attn.weight": [0.0] * 4}, protocol=2)
with zipfile.ZipFile(os.path.join(out, "model.bin"), "w", zipfile.ZIP_STORED) as z:
    z.writestr("model/data.pkl", state)
    z.writestr("model/data/0", b"\0" * 16)
    z.writestr("model/version", b"3\n")
buf = io.BytesIO()
for obj in (0x1950A86A20F9469CFC6C, 1001,
            {"protocol_version": 1001, "little_endian": True,
             "type_sizes": {"short": 2, "int": 4, "long": 4}}):
    pickle.dump(obj, buf, protocol=2)
buf.write(state)
with open(os.path.join(out, "legacy.pt"), "wb") as f:
    f.write(buf.getvalue())
rng = np.random.default_rng(0)
os.makedirs(os.path.join(out, "mixed"), exist_ok=True)
for name, shape in (("c_attn.weight", (16, 48)), ("c_attn.bias", (48,)),
                    ("c_proj.weight", (16, 16)), ("c_proj.bias", (16,))):
    np.save(os.path.join(out, "mixed", name + ".npy"),
            (rng.standard_normal(shape) * 0.1).astype(np.float32))
