"""Compact corpus of the wgmma descriptor fuzz for CI:
``python -m fragsim.gpu_check.wgmma.fuzz_corpus RUN_DIR/fuzz.npz DST.npz [FULL_B FULL_A]``.

A fuzz case of gpu_check/wgmma/family.py (``kind`` fuzz_b / fuzz_a, see gpu_check/wgmma/cases.py) fills
shared memory with slot ids (the 2-byte slot at byte address 2*i holds the f16 bits i) and makes the
other operand one-hot, so the hardware's D spells out which slot it read for every (row, k) of the
operand under test.  fuzz.npz holds those ids as recorded (B: (n, k, N), A: (n, 64, k)) and both
descriptors per case: 10 MB.  The compact corpus (a record of kind "wgmma-fuzz") keeps, for EVERY
case, the operand, N of the form, majorness, both descriptor values and a 64-bit digest of the
hardware's ids, and the full ids of the first ``full_b`` N = 8 B cases and ``full_a`` A cases of
every swizzle x majorness (readable mismatches, and a replay through fragsim.wgmma):

    operand u1 (0 A, 1 B), n u2, major u1 (0 K, 1 MN), desc u8 (cases, 2) (A's, B's), digest u8,
    full_b_index / full_b_ids (cases, 8, 16) u2, full_a_index / full_a_ids (cases, 64, 16) u2

Ids are in the operand's (row, k) order, row = n of B or m of A -- the shape of
``fragsim.layout.descriptor.operand_addresses`` -- so the model's ids are ``operand_addresses(...) // 2``.
"""

from __future__ import annotations

import hashlib
import sys
from typing import Any

import numpy as np

from fragsim.instructions.wgmma import lookup_wgmma

from .. import record
from .kernels import Variant

MAJOR_CODE = {"K": 0, "MN": 1}
OPERANDS = ("A", "B")


def digest(ids) -> int:
    """64-bit digest of one case's slot ids (rows, k), as little-endian uint16 in row-major order."""
    b = np.ascontiguousarray(np.asarray(ids, dtype="<u2")).tobytes()
    return int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(), "little")


def _records(fuzz: dict[str, np.ndarray]):
    """(operand, N, major, descs (n, 2), ids (n, rows, k)) per recorded job, in the file's order."""
    keys = list(dict.fromkeys(k.rsplit("|", 1)[0] for k in fuzz))
    for key in keys:
        kind, _sw, major, name = _split(key)
        form = Variant.parse(name).form
        N = lookup_wgmma(form).shape[1]
        ids = fuzz[f"{key}|ids"]
        if kind == "fuzz_b":
            ids = np.swapaxes(ids, 1, 2)          # recorded (n, k, N) -> (n, N, k)
        yield ("B" if kind == "fuzz_b" else "A"), N, major, fuzz[f"{key}|desc"], ids


def _split(key: str):
    """'fuzz_b_128B_MN_wg_m64n8k16_...' -> ('fuzz_b', '128B', 'MN', 'wg_m64n8k16_...')."""
    kind, rest = key[:6], key[7:]
    sw, major, name = rest.split("_", 2)
    return kind, sw, major, name


def compact(src: str, dst: str, full_b: int = 24, full_a: int = 6) -> dict:
    """Write the compact corpus of ``src`` (a run's fuzz.npz) to ``dst``; returns its arrays."""
    _, fuzz = record.load(src, ("wgmma-fuzz-run",))
    cols: dict = {"operand": [], "n": [], "major": [], "desc": [], "digest": []}
    full: dict = {"A": ([], []), "B": ([], [])}
    taken: dict = {}
    i = 0
    for op, N, major, descs, ids in _records(fuzz):
        m = len(descs)
        cols["operand"].append(np.full(m, OPERANDS.index(op), np.uint8))
        cols["n"].append(np.full(m, N, np.uint16))
        cols["major"].append(np.full(m, MAJOR_CODE[major], np.uint8))
        cols["desc"].append(descs.astype(np.uint64))
        cols["digest"].append(np.array([digest(x) for x in ids], np.uint64))
        if op == "A" or N == 8:
            sw = int(descs[0, OPERANDS.index(op)]) >> 62            # one job: one swizzle mode
            k = (op, sw, major)
            want = (full_a if op == "A" else full_b) - taken.get(k, 0)
            if want > 0:
                idx, arr = full[op]
                idx.append(np.arange(i, i + min(want, m)))
                arr.append(ids[:want].astype(np.uint16))
                taken[k] = taken.get(k, 0) + min(want, m)
        i += m
    out: dict[str, Any] = {name: np.concatenate(v) for name, v in cols.items()}
    for op, (idx, arr) in full.items():
        out[f"full_{op.lower()}_index"] = np.concatenate(idx).astype(np.uint32)
        out[f"full_{op.lower()}_ids"] = np.concatenate(arr)
    record.save(dst, "wgmma-fuzz", {"full_b": full_b, "full_a": full_a}, out)
    return out


def load(path: str) -> dict[str, np.ndarray]:
    """The arrays of a compact fuzz corpus."""
    return record.load(path, ("wgmma-fuzz",))[1]


if __name__ == "__main__":
    compact(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:5]))
