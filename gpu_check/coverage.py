"""Which PTX instructions the committed GPU recordings cover, read from the recordings themselves,
as the instruction spellings they ran: the PTX families (``ptx_int``: int.npz, warp.npz; ``ptx_float``;
``ptx_cvt``: one .npz per type) under tests/data/ptx, the warp corpora of ``mma``, ``shared`` and
``movmatrix`` (each names its PTX instruction), the ``wgmma`` corpora (forms from their case names)
the ``tma`` runs (tiled loads and stores by rank) and the ``approx`` recordings (the MUFU forms).

``recorded(data)`` -> ``{instruction text: [Validation, ...]}`` for the repository's tests/data (a carry
chain's links each count as covered by the chain's cases).  The support page (``fragsim run
--instructions``, docs/instructions.md) and tests/test_ptx_isa_coverage.py read it: a bit-exact row of
the instruction table with no recorded variant, or a recorded variant no row admits, is an error.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import re
from dataclasses import dataclass

import numpy as np

from fragsim.ptx.semantics.floating import CMP_OPS

#: recording folders of the PTX families, relative to the repository's tests/data/ptx
FOLDERS = {"ptx_int": "int", "ptx_float": "float", "ptx_cvt": "cvt"}
#: the warp corpora (mma, shared, movmatrix), relative to tests/data
WARP_CORPORA = ("hw", "hw_movmatrix")
WGMMA_CORPORA = ("f16_bf16", "tf32", "fp8", "int8")
_WG_CASE = re.compile(r"wg_(m\d+n\d+k\d+(?:_satfinite)?_[a-z0-9]+_[a-z0-9]+_[a-z0-9]+)_(?:smem|reg)_")


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


def _warp_corpora(data: str, out: dict[str, list[Validation]]) -> None:
    from . import corpus

    for folder in WARP_CORPORA:
        for path in corpus.find(os.path.join(data, folder)):
            c = corpus.load(path)
            ptx = str(c.meta.get("ptx", "")).split(" ")[0]         # cp.async corpora add their operands
            if ptx:
                out.setdefault(ptx, []).append(Validation(str(c.meta["kind"]), str(c.meta["device"]),
                                                               int(c.meta["cases"]), 0, os.path.relpath(path, data)))


def _wgmma(data: str, out: dict[str, list[Validation]]) -> None:
    for name in WGMMA_CORPORA:
        path = os.path.join(data, "wgmma", f"{name}.npz")
        if not os.path.isfile(path):
            continue
        cases: dict[str, set[str]] = {}
        for key in np.load(path, allow_pickle=False).keys():
            m = _WG_CASE.search(key)
            if m:
                cases.setdefault(m.group(1).replace("_", "."), set()).add(key.split("|")[0])
        for form, ids in cases.items():
            out.setdefault(f"wgmma.mma_async.sync.aligned.{form}", []).append(
                Validation("wgmma", "NVIDIA H100 80GB HBM3", len(ids), 0, os.path.relpath(path, data)))


def _tma(data: str, out: dict[str, list[Validation]]) -> None:
    spelling = {"load": "cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                "store": "cp.async.bulk.tensor.{r}d.global.shared::cta.tile.bulk_group"}
    for path in sorted(glob.glob(os.path.join(data, "tma", "*", "tma.npz"))):
        meta = _meta(np.load(path, allow_pickle=False))
        cases = meta["cases"] if isinstance(meta["cases"], list) else ast.literal_eval(meta["cases"])
        for c in cases:
            if c["kind"] in spelling:
                text = spelling[c["kind"]].format(r=len(c["dims"]))
                out.setdefault(text, []).append(Validation("tma", meta["device"], 1, 0, os.path.relpath(path, data)))


def _approx(data: str, out: dict[str, list[Validation]]) -> None:
    """The MUFU forms of the approx recordings: every input of each (2^32 words, 65,536 halves, 2^30
    div pairs)."""
    for path in sorted(glob.glob(os.path.join(data, "approx", "approx_*.npz"))):
        with np.load(path, allow_pickle=False) as z:
            device = str(z["device"])
            for key in z.files:
                kind, _, form = key.partition(":")
                if kind == "samples" and form.endswith(":in"):
                    out.setdefault(form[:-3], []).append(Validation("approx", device, len(z[key]), 0,
                                                                    os.path.relpath(path, data)))
                if kind in ("digest", "table"):
                    n = 1 << 16 if kind == "table" else (1 << 30 if form.startswith("div") else 1 << 32)
                    out.setdefault(form, []).append(Validation("approx", device, n, 0, os.path.relpath(path, data)))


def recorded(data: str) -> dict[str, list[Validation]]:
    """Every recorded instruction spelling under ``data`` (the repository's tests/data)."""
    out: dict[str, list[Validation]] = {}
    readers = {"ptx_int": _int, "ptx_float": _float, "ptx_cvt": _cvt}
    for family, folder in FOLDERS.items():
        for path in sorted(glob.glob(os.path.join(data, "ptx", folder, "*.npz"))):
            readers[family](path, os.path.relpath(path, data), out)
    _warp_corpora(data, out)
    _wgmma(data, out)
    _tma(data, out)
    _approx(data, out)
    return out
