"""The one record format of gpu_check: what a GPU (or a reference) said, kept to be replayed on a CPU.

A record is a compressed ``.npz`` of named arrays plus ``meta``, a JSON string with

    format   "fragsim-gpu-record"
    version  VERSION (records of older versions: ``python -m fragsim.gpu_check.convert_records``)
    kind     what the arrays hold: "mma", "shared", "movmatrix" (warp corpora: corpus.py),
             "wgmma", "wgmma-fuzz" (compacted wgmma cases and descriptor fuzz: wgmma/corpus.py,
             wgmma/fuzz_corpus.py), "wgmma-run", "wgmma-fuzz-run" (a wgmma run's raw output: wgmma/family.py),
             "ncu-banks", "access-ncu" (Nsight Compute launches: banks/measure.py, banks/access.py),
             "mmasim" (MMA-Sim's reference results: mmasim_corpus.py)

and whatever else the kind records (the device, driver and CUDA versions, seeds, the command).
Whole-GEMM recordings hold digests rather than arrays: a JSON file with the same three fields at its
top level (``save_json``/``load_json``; kind "gemm").
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from fragsim.validate import load_npz

FORMAT = "fragsim-gpu-record"
#: 2: one format for every record (1: the warp corpora's "fragsim-hw-corpus/1" and the formats of
#: their own that movmatrix, wgmma, the Nsight Compute records and MMA-Sim's corpus had).
VERSION = 2


def header(kind: str) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "kind": kind}


def _check(meta: Any, path: str, kinds: Collection[str]) -> dict[str, Any]:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        fmt = meta.get("format") if isinstance(meta, dict) else None
        raise ValueError(f"{path}: not a fragsim GPU record (format {fmt!r})")
    if meta.get("version") != VERSION:
        raise ValueError(f"{path}: record version {meta.get('version')!r}, this fragsim reads {VERSION} "
                         "(python -m fragsim.gpu_check.convert_records converts older records)")
    if meta.get("kind") not in kinds:
        raise ValueError(f"{path}: a {meta.get('kind')!r} record; expected {' or '.join(map(repr, kinds))}")
    return meta


def save(path: str, kind: str, meta: Mapping[str, Any], arrays: Mapping[str, Any]) -> str:
    """Write one record (``meta`` may not use the names format, version, kind); returns ``path``."""
    clash = {"format", "version", "kind", "meta"} & (set(meta) | set(arrays))
    if clash:
        raise ValueError(f"record {path}: {', '.join(sorted(clash))} are the format's own names")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    text = json.dumps({**header(kind), **meta}, sort_keys=True)
    data: dict[str, Any] = {"meta": np.array(text), **arrays}
    np.savez_compressed(path, **data)
    return path


def load(path: str, kinds: Collection[str]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(meta, arrays) of a record of one of ``kinds``; ValueError naming the file otherwise."""
    try:
        arrays = load_npz(path)
        meta = json.loads(str(arrays.pop("meta")))
    except (OSError, ValueError, KeyError, AttributeError, TypeError, zipfile.BadZipFile) as e:
        # not an .npz (a .npy loads as an array), a damaged one, or one without the meta record
        raise ValueError(f"{path}: not a fragsim GPU record ({type(e).__name__}: {e})") from None
    return _check(meta, path, kinds), arrays


def save_json(path: str, kind: str, data: Mapping[str, Any]) -> str:
    """Write a record that is JSON through and through (the format's fields first)."""
    with open(path, "w") as f:
        json.dump({**header(kind), **data}, f, separators=(",", ":"))
    return path


def load_json(path: str, kind: str) -> dict[str, Any]:
    with open(path) as f:
        data = json.load(f)
    return _check(data, path, (kind,))
