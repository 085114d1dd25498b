"""Read cp.async rows from ncu bank-conflict records (tests/data/banks/*.npz and this folder's).

Self-contained (NumPy only, no fragsim import), so the analysis does not depend on code that is
being edited elsewhere.  Record format: the one ``fragsim.gpu_check.ncu_banks.save_record`` writes.
"""

from __future__ import annotations

import glob
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OLD_RECORDS = sorted(glob.glob(os.path.join(REPO, "tests", "data", "banks", "ncu_banks_*.npz")))
NEW_RECORDS = sorted(glob.glob(os.path.join(HERE, "records", "*.npz")))


def load_record(path: str) -> dict:
    z = np.load(path, allow_pickle=False)
    rec = {k: z[k] for k in z.files}
    rec["meta"] = json.loads(str(rec["meta"]))
    if "src" not in rec:  # the first record: every cp.async lane copied from src + 16 * lane
        rec["src"] = np.broadcast_to(np.arange(32, dtype=np.int32) * 16, rec["addrs"].shape).copy()
    rec["metrics"] = {k[2:]: rec.pop(k) for k in list(rec) if k.startswith("m_")}
    return rec


def cp_rows(paths=None):
    """Every cp.async launch: list of dicts (op, size, level, dst, src, mask, wf, bc, label, record)."""
    paths = (OLD_RECORDS + NEW_RECORDS) if paths is None else paths
    out = []
    for p in paths:
        rec = load_record(p)
        m = rec["metrics"]
        # cp.async has no op_ wavefront metric of its own: shared total less op_misc (the probe's
        # commit/wait, 4 per launch) less op_ld/op_st (0 in these kernels), as measured_figures does
        wf = m["wf_shared"] - m["wf_op_misc"] - m.get("wf_ld", 0) - m.get("wf_st", 0)
        bc = m["bc_ldgsts"]
        ops = [str(o) for o in rec["ops"]]
        for i in range(len(rec["op"])):
            op = ops[rec["op"][i]]
            if not op.startswith("cp.async"):
                continue
            out.append(dict(op=op, size=int(op.split(".")[-1]), level=op.split(".")[2],
                            dst=rec["addrs"][i].astype(np.int64), src=rec["src"][i].astype(np.int64),
                            mask=int(rec["mask"][i]), wf=int(wf[i]), bc=int(bc[i]),
                            label=str(rec["label"][i]), record=os.path.relpath(p, REPO),
                            device=rec["meta"].get("device", "?")))
    return out
