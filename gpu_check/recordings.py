"""The hardware recordings installed with fragsim: a compact sample of the repository's tests/data,
so that ``fragsim gpu-check --replay`` with no path compares fragsim with what H100 and H200 GPUs
said on a machine that has neither a GPU nor the repository.

    python -m fragsim.gpu_check.recordings tests/data    # rewrite gpu_check/recordings/ from tests/data

The sample (``build``): of every warp corpus (each mma form, shared-memory op, movmatrix) its probe
cases and ``KEEP[kind]`` others drawn evenly across the input classes (``corpus.shrink``); of every wgmma
corpus the first case of each swizzle; of every GEMM form the first ``GEMMS`` GEMMs (their digests:
a GEMM agrees when fragsim's D has the digest of the GPU's).
The full recordings stay in the repository (CI replays those); ``--replay DIR`` reads them there.
"""

from __future__ import annotations

import os
import shutil
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recordings")
#: cases kept besides the probes, per corpus kind (a movmatrix case is 256 bytes, a shared one ~2 KB)
KEEP = {"mma": 4, "shared": 4, "movmatrix": 64}
GEMMS = 3
#: family -> its sample, relative to HERE (the table's families read every warp corpus under hw/)
DEFAULTS = {"mma": "hw", "shared": "hw", "mma and shared": "hw", "movmatrix": "hw_movmatrix/nvidia_h100_sm90",
            "wgmma": "wgmma", "gemm": "gemm/gemm_h100.json"}
#: what build() samples, relative to the source (tests/data) and to HERE alike
WARP_CORPORA = ("hw", "hw_movmatrix")
WGMMA = "wgmma"
GEMM = "gemm/gemm_h100.json"


# Only the CLI's lookup of DEFAULTS runs at import: build() imports what it needs.

def default_replay(family: str) -> str:
    """The installed sample a family replays when --replay names no path."""
    if family not in DEFAULTS:
        raise ValueError(f"--replay: fragsim installs no recording of --family {family}; name one: --replay PATH")
    path = os.path.join(HERE, DEFAULTS[family])
    if not os.path.exists(path):
        raise ValueError(f"--replay: the recordings installed with fragsim are missing ({path}); "
                         "name a recording: --replay PATH (the repository's tests/data holds them all)")
    return path


def _warp(src: str, dst: str) -> None:
    from . import corpus

    for path in corpus.find(src):
        c = corpus.load(path)
        c = corpus.shrink(c, KEEP[c.kind], command=f"python -m fragsim.gpu_check.recordings (KEEP = {KEEP[c.kind]})")
        corpus.write(os.path.join(dst, os.path.relpath(os.path.dirname(path), src)), c)


def _wgmma(src: str, dst: str) -> None:
    from . import record
    from .wgmma.family import CORPORA

    for name in CORPORA:
        meta, arrays = record.load(os.path.join(src, f"{name}.npz"), ("wgmma",))
        first: dict[str, int] = {}
        for key in sorted(arrays, key=lambda k: int(k.split("|")[0])):
            first.setdefault(key.split("|")[2], int(key.split("|")[0]))     # i|variant|swizzle|major|field
        out = {k: v for k, v in arrays.items() if int(k.split("|")[0]) in first.values()}
        extra = {k: v for k, v in meta.items() if k not in ("format", "version", "kind")}
        record.save(os.path.join(dst, f"{name}.npz"), "wgmma", extra | {"sample": "the first case of each swizzle"},
                    out)


def _gemm(src: str, dst: str) -> None:
    from . import record

    rec = record.load_json(src, "gemm")
    data = {k: v for k, v in rec.items() if k not in ("format", "version", "kind")}
    data |= {"forms": {name: rows[:GEMMS] for name, rows in rec["forms"].items()}, "full": {},
             "sample": f"the first {GEMMS} GEMMs of each form, their digests (the full D's left out)"}
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    record.save_json(dst, "gemm", data)


def build(src: str, dst: str = HERE) -> None:
    """Write the sample of the recordings under ``src`` (the repository's tests/data) into ``dst``."""
    if os.path.exists(dst):
        shutil.rmtree(dst)
    for name in WARP_CORPORA:
        _warp(os.path.join(src, name), os.path.join(dst, name))
    _wgmma(os.path.join(src, WGMMA), os.path.join(dst, WGMMA))
    _gemm(os.path.join(src, GEMM), os.path.join(dst, GEMM))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m fragsim.gpu_check.recordings SRC  (the repository's tests/data)")
    build(sys.argv[1])
