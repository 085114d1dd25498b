"""Which PTX instruction variants the committed GPU recordings cover, read from the recordings
themselves: the ``ptx_int`` (int.npz, warp.npz), ``ptx_float`` (ptx_float.npz) and ``ptx_cvt``
(one .npz per type) families under tests/data/ptx.

``recorded(root)`` -> ``{variant text: [Validation, ...]}`` (a carry chain's links each count as
covered by the chain's cases).  The support page (``fragsim run --instructions``, docs/instructions.md)
and tests/test_ptx_isa_coverage.py read it: a bit-exact row of the instruction table with no
recorded variant, or a recorded variant no row admits, is an error.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass

import numpy as np

from fragsim.ptx.semantics.floating import CMP_OPS

#: recording folders of the PTX families, relative to the repository's tests/data/ptx
FOLDERS = {"ptx_int": "int", "ptx_float": "float", "ptx_cvt": "cvt"}


@dataclass(frozen=True)
class Validation:
    family: str
    device: str
    cases: int
    mismatches: int
    recording: str


def _meta(z) -> dict:
    return json.loads(str(z["meta"]))


def _int(path: str, rel: str, out: dict[str, list[Validation]]) -> None:
    z = np.load(path, allow_pickle=False)
    meta = _meta(z)
    for v in meta.get("variants", []):
        for link in v["ptx"].split(" ; "):
            out.setdefault(link.strip(), []).append(
                Validation("ptx_int", meta["device"], int(v["cases"]), int(v["mismatches"]), rel))


def _float(path: str, rel: str, out: dict[str, list[Validation]]) -> None:
    z = np.load(path, allow_pickle=False)
    meta = _meta(z)
    for name in z["variants"]:
        text = str(name).split(" ")[0]
        texts = [text.replace("CMP", c) for c in CMP_OPS] if "CMP" in text else [text]
        for t in texts:
            out.setdefault(t, []).append(Validation("ptx_float", meta["device"], int(meta["cases"]), 0, rel))


def _cvt(path: str, rel: str, out: dict[str, list[Validation]]) -> None:
    z = np.load(path, allow_pickle=False)
    meta = _meta(z)
    device = meta.get("device", "NVIDIA H100 80GB HBM3")
    for text, (cases, mism) in meta.get("counts", {}).items():
        out.setdefault(text, []).append(Validation("ptx_cvt", device, int(cases), int(mism), rel))


def recorded(root: str) -> dict[str, list[Validation]]:
    """Every recorded variant under ``root`` (the repository's tests/data/ptx)."""
    out: dict[str, list[Validation]] = {}
    readers = {"ptx_int": _int, "ptx_float": _float, "ptx_cvt": _cvt}
    for family, folder in FOLDERS.items():
        for path in sorted(glob.glob(os.path.join(root, folder, "*.npz"))):
            readers[family](path, os.path.relpath(path, os.path.dirname(root)), out)
    return out
