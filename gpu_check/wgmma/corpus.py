"""Compact corpora of the wgmma cross-check for CI:
``python -m fragsim.gpu_check.wgmma.corpus SRC DST [PER_JOB]``.

Reads the corpus_*.npz records a run of gpu_check/wgmma/family.py wrote (recorded cases: the kernel's inputs and
the hardware's D) and keeps, per family, every case of the fit jobs (the ones that separate the
alternative parameter rows) and ``per_job`` cases of every other recorded job, into DST/<family>.npz
(a record of kind "wgmma"): arrays ``i|variant|swizzle|major|field``, one set per case.  ``load(path)`` gives the cases back as
(Variant, swizzle, major, inputs, hardware D).
"""

from __future__ import annotations

import glob
import os
import sys
from typing import Any

from .. import record
from .kernels import Variant


def compact(src: str, dst: str, per_job: int = 1) -> None:
    os.makedirs(dst, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(src, "corpus_*.npz"))):
        meta, z = record.load(path, ("wgmma-run",))
        jobs: dict = {}
        for key, x in z.items():
            j, var, sw, major, seed, field = key.split("|")
            jobs.setdefault((j, var, sw, major, seed), {})[field] = x
        out: dict[str, Any] = {}
        i = 0
        fit = _fit_seeds(jobs)
        for (_j, var, sw, major, seed), rec in jobs.items():
            n = len(rec["index"])
            big = rec["creg"].shape[-1] > 32            # N > 64: 64 KiB of C per case, one case per family
            take = range(n) if int(seed) in fit and not big else range(min(n, per_job if not big or not i else 0))
            for c in take:
                for field, x in rec.items():
                    if field != "index":
                        out[f"{i}|{var}|{sw}|{major}|{field}"] = x[c]
                i += 1
        record.save(os.path.join(dst, os.path.basename(path)[len("corpus_"):]), "wgmma",
                    {"family": meta["family"], "per_job": per_job}, out)


def _fit_seeds(jobs) -> set:
    """Jobs whose kept cases include alternatives' breaking cases: more kept than the 3 first."""
    return {int(k[4]) for k, rec in jobs.items() if len(rec["index"]) > 6}


def load(path: str):
    """[(Variant, swizzle, major, inputs dict, hardware D)] of a compact corpus."""
    _, z = record.load(path, ("wgmma",))
    cases: dict = {}
    for key, x in z.items():
        i, var, sw, major, field = key.split("|")
        cases.setdefault((int(i), var, sw, major), {})[field] = x
    out = []
    for (_i, var, sw, major), rec in sorted(cases.items()):
        d = rec.pop("d")
        inp = {k: v[None] for k, v in rec.items()}
        out.append((Variant.parse(var), sw, major, inp, d[None]))
    return out


if __name__ == "__main__":
    compact(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:4]))
