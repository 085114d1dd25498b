"""Warp corpora: register-level inputs and the outputs a real GPU gave, with the device,
architecture, driver and CUDA version that produced them -- records (gpu_check/record.py) of kind
"mma", "shared" or "movmatrix".

One file per instruction: ``mma.<form>.npz``, ``<shared op>.npz`` (e.g. ``ldmatrix.x4.trans.npz``)
or ``movmatrix.trans.npz``.  Arrays:

- mma:    ``a``, ``b``, ``c`` (inputs), ``d`` (hardware output): uint32 (n, 32, nregs)
- movmatrix: ``a`` (input), ``d`` (hardware output): uint32 (n, 32, 1)
- shared: ``tiles`` (G, TILE) u8 and ``tile_idx`` (n,) pick each case's initial tile;
  ``addrs`` (n, 32) byte offsets, ``mask`` (n,) active lanes, and ``regs`` (stmatrix),
  ``vals`` (st.shared) or ``src`` (cp.async, (n,32,16) u8);  hardware output ``out``
  (n, 32, k) for loads, or ``smem_xor`` (n, TILE) for stores: the tile after the store
  XOR the tile before (``load`` turns it back into ``smem_out``).
- all:    ``tag`` (n,) index into ``tag_names`` (input class or probe name); the metadata holds
  op, ptx, device, cc, arch, driver, CUDA, NVRTC, date, and ``subset`` where the file keeps a
  subset of the recorded cases (see ``shrink``).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from fragsim.instructions import REGISTER_OPS, lookup, parse_shared_op

from . import record
from .kernels import kernel_for
from .prelude import TILE_BYTES

KINDS = ("mma", "shared", "movmatrix")
META_KEYS = ("device", "cc", "arch", "driver", "cuda_runtime")
OUTPUTS = ("d", "out", "smem_out", "smem_xor")


@dataclass
class Corpus:
    path: str
    meta: dict[str, Any]
    arrays: dict[str, Any]      # arrays, and tag_names as a list of str

    @property
    def op(self) -> str:
        return self.meta["op"]

    @property
    def kind(self) -> str:
        return self.meta["kind"]

    @property
    def arch(self) -> str:
        return self.meta["arch"]

    def __len__(self) -> int:
        return int(self.arrays["tag"].shape[0])

    def inputs(self) -> dict:
        return {k: v for k, v in self.arrays.items() if k not in OUTPUTS}

    def outputs(self) -> dict:
        if self.kind != "shared":
            return {"d": self.arrays["d"]}
        if "out" in self.arrays:
            return {"out": self.arrays["out"]}
        return {"smem_out": self.arrays["smem_out"]}

    def take(self, idx) -> "Corpus":
        """The cases ``idx`` (tiles stay shared)."""
        idx = np.asarray(idx)
        arr = {}
        for k, v in self.arrays.items():
            if k in ("tiles", "tag_names"):
                arr[k] = v
            else:
                arr[k] = v[idx]
        return Corpus(self.path, dict(self.meta, cases=int(idx.size)), arr)


def identify(op: str) -> tuple[str, str, str]:
    """(kind, canonical name, PTX) of an mma form (any spelling), a shared op or a register op."""
    if op in REGISTER_OPS:
        return "movmatrix", op, REGISTER_OPS[op].ptx
    k = kernel_for(op)
    return ("mma" if k.kind == "mma" else "shared"), k.op, k.ptx


def file_name(op: str) -> str:
    kind, name, _ = identify(op)
    return f"mma.{name}.npz" if kind == "mma" else f"{name}.npz"


def save(directory: str, op: str, inputs: dict, outputs: dict, info: dict, extra_meta=None) -> str:
    """Write one corpus file; returns its path."""
    kind, name, ptx = identify(op)
    missing = [m for m in META_KEYS if not info.get(m)]
    if missing:
        raise ValueError(f"corpus metadata lacks {', '.join(missing)}")
    meta: dict[str, Any] = {"op": name, "ptx": ptx,
                            **{key: info[key] for key in ("device", "cc", "arch", "driver", "cuda_driver_api",
                                                          "cuda_runtime", "nvrtc", "cupy", "date") if key in info}}
    if kind == "shared":
        meta["tile_bytes"] = TILE_BYTES
    meta.update(extra_meta or {})
    arrays: dict[str, Any] = {"tag": np.asarray(inputs["tag"], np.uint8),
                              "tag_names": np.array(list(inputs["tag_names"]))}
    meta["cases"] = int(arrays["tag"].shape[0])
    if kind != "shared":
        for x in ("abc" if kind == "mma" else "a"):
            arrays[x] = np.asarray(inputs[x], np.uint32)
        arrays["d"] = np.asarray(outputs["d"], np.uint32)
    else:
        arrays["tiles"] = np.asarray(inputs["tiles"], np.uint8)
        arrays["tile_idx"] = np.asarray(inputs["tile_idx"], np.uint16)
        arrays["addrs"] = np.asarray(inputs["addrs"], np.uint16 if TILE_BYTES <= 65536 else np.uint32)
        arrays["mask"] = np.asarray(inputs["mask"], np.uint32)
        for x in ("regs", "vals", "src"):
            if x in inputs:
                arrays[x] = np.asarray(inputs[x])
        if "out" in outputs:
            arrays["out"] = np.asarray(outputs["out"], np.uint32)
        else:
            before = arrays["tiles"][arrays["tile_idx"]]
            arrays["smem_xor"] = np.asarray(outputs["smem_out"], np.uint8) ^ before
    return record.save(os.path.join(directory, file_name(op)), kind, meta, arrays)


def load(path: str, kinds: Collection[str] = KINDS) -> Corpus:
    """A corpus of one of ``kinds``; ValueError naming the file when it is not one."""
    meta, stored = record.load(path, kinds)
    arrays: dict[str, Any] = dict(stored)
    if meta["kind"] == "mma":
        lookup(meta["op"])
    elif meta["kind"] == "movmatrix":
        if meta["op"] not in REGISTER_OPS:
            raise ValueError(f"{path}: unknown register op {meta['op']!r}")
    else:
        parse_shared_op(meta["op"])
        arrays["addrs"] = arrays["addrs"].astype(np.uint32)
        if "smem_xor" in arrays:
            arrays["smem_out"] = arrays.pop("smem_xor") ^ arrays["tiles"][arrays["tile_idx"]]
    arrays["tag_names"] = [str(s) for s in arrays["tag_names"]]
    return Corpus(path, meta, arrays)


def find(directory: str) -> list[str]:
    """Every corpus file under ``directory`` (recursively), sorted."""
    out = []
    for root, _, files in os.walk(directory):
        out += [os.path.join(root, f) for f in files if f.endswith(".npz")]
    return sorted(out)


def concat(parts: list[dict]) -> dict:
    """Join the input (or output) dicts of several batches: shared tiles are re-indexed
    and tags re-numbered into the union of the batches' tag names."""
    parts = [p for p in parts if p]
    if not parts:
        return {}
    first = parts[0]
    out: dict[str, Any] = {}
    if "tiles" in first:
        offs = np.cumsum([0] + [p["tiles"].shape[0] for p in parts[:-1]])
        out["tiles"] = np.concatenate([p["tiles"] for p in parts])
        idx = np.concatenate([p["tile_idx"].astype(np.int64) + o for p, o in zip(parts, offs)])
        out["tile_idx"] = idx.astype(np.uint16 if out["tiles"].shape[0] <= 65536 else np.uint32)
    if "tag_names" in first:
        names: list[str] = []
        tags = []
        for p in parts:
            remap = []
            for nm in p["tag_names"]:
                if nm not in names:
                    names.append(nm)
                remap.append(names.index(nm))
            tags.append(np.asarray(remap, np.int64)[np.asarray(p["tag"], np.int64)])
        if len(names) > 256:
            raise ValueError(f"too many distinct tags ({len(names)}) for one corpus")
        out["tag_names"] = names
        out["tag"] = np.concatenate(tags).astype(np.uint8)
    for k in first:
        if k not in out:
            out[k] = np.concatenate([p[k] for p in parts])
    return out


def subset(d: dict, idx) -> dict:
    """Cases ``idx`` of an input/output dict (tiles kept whole)."""
    idx = np.asarray(idx)
    return {k: (v if k in ("tiles", "tag_names") else v[idx]) for k, v in d.items()}


SUBSET_RULE = ("every probe case and every case named to be kept (cases that mismatched), plus up to "
               "`keep` others drawn round-robin across the input classes in a seeded random order "
               "(shared ops: only from the `max_tiles` most used initial tiles); tiles no kept case uses "
               "are dropped (fragsim.gpu_check.corpus.shrink)")


def shrink(c: Corpus, keep: int, seed: int = 0, max_tiles: int = 16, always=None, command: str = "") -> Corpus:
    """A compact copy: every probe case and the cases ``always`` plus ``keep`` others drawn
    evenly across the input classes (shared ops: from the ``max_tiles`` most used initial
    tiles); tiles no case uses are dropped.  ``meta["subset"]`` records the rule, its
    parameters and ``command`` (how it was invoked), nesting any earlier subset record."""
    if keep < 0:
        raise ValueError(f"keep must be >= 0, got {keep}")
    tags = np.asarray(c.arrays["tag"])
    names = c.arrays["tag_names"]
    probe = np.array([names[t].startswith("probe") for t in tags], bool)
    forced = probe.copy()
    if always is not None:
        forced[np.asarray(always, np.int64)] = True
    rng = np.random.default_rng(seed)
    pool = ~forced
    if "tile_idx" in c.arrays:
        counts = np.bincount(c.arrays["tile_idx"].astype(np.int64))
        top = np.argsort(-counts, kind="stable")[:max_tiles]
        pool &= np.isin(c.arrays["tile_idx"], top)
    groups = [rng.permutation(np.flatnonzero((tags == t) & pool)) for t in range(len(names))]
    groups = [g for g in groups if g.size]
    chosen: list[int] = []
    depth = 0
    while len(chosen) < keep and any(depth < g.size for g in groups):
        for g in groups:
            if depth < g.size and len(chosen) < keep:
                chosen.append(int(g[depth]))
        depth += 1
    idx = np.sort(np.concatenate([np.flatnonzero(forced), np.array(chosen, np.int64)]))
    out = c.take(idx)
    if "tiles" in out.arrays:
        used, inv = np.unique(out.arrays["tile_idx"], return_inverse=True)
        out.arrays["tiles"] = out.arrays["tiles"][used]
        out.arrays["tile_idx"] = inv.astype(np.uint16)
    subset = {"kept": int(idx.size), "of": len(c), "probes": int(probe.sum()),
              "always": int((forced & ~probe).sum()), "keep": int(keep), "seed": seed, "max_tiles": max_tiles,
              "how": SUBSET_RULE, "command": command}
    if "subset" in c.meta:
        subset["of_subset"] = c.meta["subset"]
    out.meta["subset"] = subset
    return out


def write(directory: str, c: Corpus) -> str:
    """Save a loaded (or shrunk) corpus again, metadata kept."""
    extra = {k: v for k, v in c.meta.items() if k not in ("format", "version", "kind", "op", "ptx", "cases")}
    return save(directory, c.op, c.inputs(), c.outputs(), c.meta, extra)
