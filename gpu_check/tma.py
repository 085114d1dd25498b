"""The tma family: ``cuTensorMapEncodeTiled`` and tiled ``cp.async.bulk.tensor`` on the GPU against
``fragsim.TensorMap`` / ``tma_load`` / ``tma_store``, byte for byte.

Cases (``make_cases``, seeded by --seed; --cases N loads, N // 8 stores, N // 2 encodes):

- *load*: a random valid argument set -- every dtype, rank 1-5, box sizes, padded and permuted strides,
  the four swizzle modes, element strides (``element_strides[0]`` too, which the driver ignores),
  both fill modes, boxes across every edge (negative coordinates, past the end, wholly outside, near
  the int32 limits), destinations at every 128-byte offset of the 1024-byte swizzle pattern, bases at
  every 16-byte offset -- encoded by the real driver and loaded once into shared memory whose bytes
  all come back (gpu_check/tma_device.py); a few interleaved (16B, 32B) maps are recorded for the day
  they are modelled;
- *store*: the same for ``tma_store`` (non-negative coordinates, boxes past the upper edges);
- *encode*: an argument set with one parameter set at or past a limit of the driver's rules (or none):
  whether the driver refuses it, against whether ``TensorMap`` does;
- *probes* (``PROBES``): what the model refuses at run time (a box start not 16-byte aligned, a
  destination not 128-byte aligned, a store at negative coordinates ...): each may fault, which ends
  the process that ran it, so a worker runs the cases and the next one starts after a fault.

fragsim's side (``compare``): the map refused by both or by neither; a fault where the model refuses;
otherwise the whole shared region (every byte, unwritten ones included) or the whole tensor after a
store, equal.  ``--record DIR`` writes DIR/tma.npz (record.py's format, kind "tma"): every case and
result, the digest of every dump and the dumps themselves up to ``KEEP_BYTES``; ``--replay DIR``
regenerates the inputs from the seeds and compares again (tests/test_tma_replay.py).  The report
also lists what each probe did and the bits of the NaN fill the GPU wrote per dtype.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from fragsim.facts.arch import arch_for_cc
from fragsim.facts.tma import (GLOBAL_STRIDE_LIMIT, MAX_BOX_DIM, MAX_GLOBAL_DIM, SWIZZLES, TMA_TYPES)
from fragsim.tma import TensorMap, box_layout, tma_load, tma_store

from . import compile, record, runner
from .family import RunnerFamily, Say
from .family import say as say_for
from .tma_device import NVCC_FLAGS, sentinel, source, work

KIND = "tma"
FILE = "tma.npz"
#: Bytes of dumps a recording keeps whole (the rest: digests), smallest cases first.
KEEP_BYTES = 3 << 20
#: Largest shared region a case uses (its box, padded rows if the hardware padded them, the guard line).
MAX_REGION = 160 << 10
#: Largest global footprint of a load's tensor, and of a store's (its whole tensor comes back).
MAX_FOOTPRINT, MAX_STORE_FOOTPRINT = 1 << 20, 64 << 10
#: Seconds a worker may go without finishing a case (its start-up included) before it counts as hung.
STALL_SECONDS = 60
#: Faults (each costs a new worker, ~2 s) after which the cases left are not run.
MAX_FAULTS = 40
LINE = 128                          # the guard after a region, and its rounding

TYPES = tuple(TMA_TYPES)
MODES = tuple(SWIZZLES)


# -- cases ---------------------------------------------------------------------------------------------

def _case(kind: str, dtype: str, dims, strides, box, coords=None, *, es=None, swizzle="none", interleave="none",
          oob_fill="zero", dst=0, base_offset=0, seed=0, label="") -> dict[str, Any]:
    rank = len(dims)
    return {"kind": kind, "dtype": dtype, "dims": [int(x) for x in dims], "strides": [int(x) for x in strides],
            "box": [int(x) for x in box], "es": [int(x) for x in (es or [1] * rank)], "interleave": interleave,
            "swizzle": swizzle, "oob_fill": oob_fill, "coords": [int(x) for x in (coords or [0] * rank)],
            "dst": int(dst), "base_offset": int(base_offset), "seed": int(seed), "label": label}


def tensor_map(case: dict[str, Any], base: int) -> TensorMap:
    return TensorMap(case["dtype"], case["dims"], case["strides"], case["box"], element_strides=case["es"],
                     interleave=case["interleave"], swizzle=case["swizzle"], oob_fill=case["oob_fill"], base=base)


def _steps(case: dict[str, Any]) -> list[int]:
    return ([1] + case["es"][1:]) if case["interleave"] == "none" else list(case["es"])


def smem_box(case: dict[str, Any]) -> list[int]:
    """Elements a copy moves per dimension, as TensorMap.smem_box (for maps the model may refuse)."""
    return [-(-b // s) for b, s in zip(case["box"], _steps(case))]


def tx_bytes(case: dict[str, Any]) -> int:
    return math.prod(smem_box(case)) * TMA_TYPES[case["dtype"]].bytes


def region_bytes(case: dict[str, Any]) -> int:
    """The shared region a case fills, copies and dumps: from 0 past the box's end, room for rows padded
    to the swizzle span (had the hardware padded them), and a guard line."""
    inner = smem_box(case)[0] * TMA_TYPES[case["dtype"]].bytes
    rows = max(1, tx_bytes(case) // max(1, inner))
    end = case["dst"] + rows * max(inner, SWIZZLES[case["swizzle"]][1])
    return -(-end // LINE) * LINE + LINE


def footprint(case: dict[str, Any]) -> int:
    """Bytes of the tensor from its base: its last element's end, rounded up to 16."""
    e = TMA_TYPES[case["dtype"]].bytes
    end = sum((d - 1) * s for d, s in zip(case["dims"], [e] + case["strides"])) + e
    return -(-end // 16) * 16


def inputs(case: dict[str, Any]) -> tuple[np.ndarray, np.ndarray | None]:
    """(the tensor's bytes from its base, the shared image a store copies out) -- from the case's seed."""
    rng = np.random.default_rng(case["seed"])
    tensor = rng.integers(0, 256, footprint(case), dtype=np.uint8)
    image = rng.integers(0, 256, region_bytes(case), dtype=np.uint8) if case["kind"] == "store" else None
    return tensor, image


def _extent(case: dict[str, Any]) -> list[int]:
    return [(n - 1) * s + 1 for n, s in zip(smem_box(case), _steps(case))]


def _coord(rng: np.random.Generator, d: int, x: int, store: bool) -> int:
    """A box start along a dimension of size d for a box spanning x coordinates: inside, across an
    edge, wholly outside, or near the int32 limits."""
    modes = ("inside", "high", "out_high") if store else ("inside", "low", "high", "out_low", "out_high", "any", "limit")
    p = np.array([4, 2, 1] if store else [4, 2, 2, 1, 1, 1, 0.15])
    mode = modes[int(rng.choice(len(modes), p=p / p.sum()))]
    lo, hi = {"inside": (0, max(0, d - x)), "low": (1 - x, 0), "high": (max(0, d - x), d - 1),
              "out_low": (-2 * x - 5, -x), "out_high": (d, d + x + 5), "any": (-x, d),
              "limit": (0, 0)}[mode]
    if mode == "limit":
        return int(rng.choice([-(1 << 31), (1 << 31) - 1 - x - int(rng.integers(0, 64))]))
    return int(rng.integers(lo, hi + 1))


def _strides(rng: np.random.Generator, dims: list[int], e: int, unit: int = 16, permute: bool = True) -> list[int]:
    """Byte strides of dimensions 1.., padded by 0-5 units, in a random memory order of the outer
    dimensions now and then."""
    order = list(range(1, len(dims)))
    if permute and len(order) > 1 and rng.random() < 0.15:
        rng.shuffle(order)
    pad = [0, 0, 0, 1, 2, 5]
    s = -(-dims[0] * e // unit) * unit + unit * int(rng.choice(pad))
    out = {}
    for d in order:
        out[d] = s
        s = s * dims[d] + unit * int(rng.choice(pad))
    return [out[d] for d in range(1, len(dims))]


def _random(rng: np.random.Generator, kind: str) -> dict[str, Any]:
    """A random argument set the model takes (regenerated until it does)."""
    while True:
        name = TYPES[int(rng.integers(len(TYPES)))]
        t = TMA_TYPES[name]
        e = t.bytes
        rank = int(rng.choice(5, p=[0.1, 0.35, 0.25, 0.15, 0.15])) + 1
        mode = MODES[int(rng.integers(len(MODES)))]
        span = SWIZZLES[mode][1] or MAX_BOX_DIM * e
        box = [int(rng.integers(1, min(span, MAX_BOX_DIM * e) // 16 + 1)) * 16 // e]
        es = [int(rng.integers(2, 9)) if rng.random() < 0.1 else 1]
        budget = int(np.exp(rng.uniform(np.log(64), np.log(16384))))
        rows = max(1, budget // (box[0] * e))
        for _ in range(rank - 1):
            b = min(MAX_BOX_DIM, max(1, int(np.exp(rng.uniform(0, np.log(rows + 1))))))
            s = int(rng.integers(2, 9)) if rng.random() < 0.2 else 1
            box.append(b)
            es.append(s)
            rows = max(1, rows // -(-b // s))
        c = _case(kind, name, [1] * rank, [16] * (rank - 1), box, es=es, swizzle=mode)
        ext = _extent(c)
        dims = [int(rng.integers(1, 2 * x + 4)) for x in ext]
        cap = MAX_STORE_FOOTPRINT if kind == "store" else MAX_FOOTPRINT
        while math.prod(dims) * e > cap // 2:
            i = int(np.argmax(dims))
            dims[i] = max(1, dims[i] // 2)
        c["dims"], c["strides"] = dims, _strides(rng, dims, e)
        c["coords"] = [_coord(rng, d, x, kind == "store") for d, x in zip(dims, ext)]
        q = max(1, 16 // e)
        c["coords"][0] -= c["coords"][0] % q             # the model's rule: the box starts 16-byte aligned
        c["oob_fill"] = "nan" if t.float and rng.random() < 0.5 else "zero"
        c["dst"] = 128 * int(rng.integers(0, 16))
        # half 128-byte aligned (the guide asks it of swizzled maps), half at any 16-byte offset
        c["base_offset"] = 128 * int(rng.integers(0, 8)) if rng.random() < 0.5 else 16 * int(rng.integers(0, 64))
        c["seed"] = int(rng.integers(0, 1 << 31))
        if footprint(c) > cap or region_bytes(c) > MAX_REGION:
            continue
        try:
            tm = tensor_map(c, 0x10000000 + c["base_offset"])
            box_layout(tm, c["coords"], c["dst"])
        except ValueError:
            continue
        return c


def _interleaved(rng: np.random.Generator) -> dict[str, Any]:
    """A load of an interleaved map (NC/8HWC8-like: dimension 0 one 16- or 32-byte slice), recorded only."""
    while True:
        name = TYPES[int(rng.integers(len(TYPES)))]
        e = TMA_TYPES[name].bytes
        mode = "32B" if rng.random() < 0.5 else "16B"
        sl = 32 if mode == "32B" else 16
        rank = int(rng.integers(3, 6))
        dims = [max(1, sl // e)] + [int(rng.integers(1, 9)) for _ in range(rank - 1)]
        box = [dims[0]] + [int(rng.integers(1, d + 1)) for d in dims[1:]]
        c = _case("load", name, dims, _strides(rng, dims, e, unit=sl, permute=False), box,
                  es=[int(rng.integers(1, 3))] + [1] * (rank - 1), interleave=mode,
                  swizzle="32B" if mode == "32B" else MODES[int(rng.integers(len(MODES)))],
                  dst=128 * int(rng.integers(0, 8)), base_offset=32 * int(rng.integers(0, 32)),
                  seed=int(rng.integers(0, 1 << 31)), label=f"interleave {mode}")
        c["coords"] = [0] + [int(rng.integers(-1, d + 1)) for d in dims[1:]]
        try:
            tensor_map(c, 0x10000000 + c["base_offset"])
        except ValueError:
            continue
        return c


def _at(key: str, i: int, v: int):
    """Value ``v`` in ``c[key][i]`` (i: 0 or -1, the first or last dimension)."""
    def f(c: dict[str, Any], rng: np.random.Generator) -> None:
        if c[key]:
            c[key][i] = v
    return f


def _set(**kw: Any):
    def f(c: dict[str, Any], rng: np.random.Generator) -> None:
        c.update(kw)
    return f


def _inner(extra: int):
    """Box inner dimension = the swizzle span (+ extra bytes)."""
    def f(c: dict[str, Any], rng: np.random.Generator) -> None:
        span = SWIZZLES[c["swizzle"]][1]
        if span:
            c["box"][0] = (span + extra) // TMA_TYPES[c["dtype"]].bytes
    return f


def _rank(n: int):
    def f(c: dict[str, Any], rng: np.random.Generator) -> None:
        c.update(dtype="u16", dims=[4] * n, strides=[64 * 4 ** i for i in range(max(0, n - 1))], box=[8] * n,
                 es=[1] * n, coords=[0] * n, interleave="none")
    return f


def _stride_plus_8(c: dict[str, Any], rng: np.random.Generator) -> None:
    if c["strides"]:
        c["strides"][0] += 8


def _stride_below_row(c: dict[str, Any], rng: np.random.Generator) -> None:
    if c["strides"]:
        c["strides"][0] = 16


def _inner_odd(c: dict[str, Any], rng: np.random.Generator) -> None:
    if TMA_TYPES[c["dtype"]].bytes < 16:
        c["box"][0] += 1


def _big_box(c: dict[str, Any], rng: np.random.Generator) -> None:
    c["box"] = c["box"][:1] + [MAX_BOX_DIM] * (len(c["box"]) - 1)


def _es0(c: dict[str, Any], rng: np.random.Generator) -> None:
    c["es"][0] = int(rng.integers(2, 9))


def _interleaved_rank2(c: dict[str, Any], rng: np.random.Generator) -> None:
    c.update(dtype="f16", interleave="16B", dims=[8, 4], strides=[16], box=[8, 4], es=[1, 1], coords=[0, 0])


def _interleave32(swizzle: str):
    def f(c: dict[str, Any], rng: np.random.Generator) -> None:
        c.update(interleave="32B", swizzle=swizzle, strides=[-(-s // 32) * 32 for s in c["strides"]])
    return f


#: One parameter of a valid argument set moved to, or past, a limit of the driver's rules: name -> change.
MUTATIONS = {
    "none": _set(),
    "base +8": _set(base_offset=8), "base +16": _set(base_offset=16), "base +48": _set(base_offset=48),
    "stride +8": _stride_plus_8, "stride 0": _at("strides", 0, 0),
    "stride 2^40 - 16": _at("strides", 0, GLOBAL_STRIDE_LIMIT - 16), "stride 2^40": _at("strides", 0, GLOBAL_STRIDE_LIMIT),
    "stride below the row": _stride_below_row,
    "dim 0": _at("dims", 0, 0), "dim 2^32": _at("dims", 0, MAX_GLOBAL_DIM),
    "dim 2^32 + 1": _at("dims", -1, MAX_GLOBAL_DIM + 1),
    "box 0": _at("box", 0, 0), "box 256": _at("box", -1, MAX_BOX_DIM), "box 257": _at("box", -1, MAX_BOX_DIM + 1),
    "box inner not x16 bytes": _inner_odd, "box inner = span": _inner(0), "box inner = span + 16": _inner(16),
    "outer box dims all 256": _big_box,
    "element stride 0": _at("es", -1, 0), "element stride 8": _at("es", -1, 8), "element stride 9": _at("es", -1, 9),
    "element_strides[0] 2..8": _es0,
    "nan fill, integer type": _set(oob_fill="nan", dtype="u32"), "nan fill, tf32": _set(oob_fill="nan", dtype="tf32"),
    "rank 0": _rank(0), "rank 5": _rank(5), "rank 6": _rank(6),
    "interleave, rank 2": _interleaved_rank2, "interleave 16B": _set(interleave="16B"),
    "interleave 32B, swizzle 128B": _interleave32("128B"), "interleave 32B, swizzle 32B": _interleave32("32B"),
}


def _encode_case(rng: np.random.Generator) -> dict[str, Any]:
    c = _random(rng, "load")
    label = list(MUTATIONS)[int(rng.integers(len(MUTATIONS)))]
    MUTATIONS[label](c, rng)
    c.update(kind="encode", label=label)
    return c


def _probe(kind, dtype, dims, strides, box, coords, label, **kw) -> dict[str, Any]:
    return _case(kind, dtype, dims, strides, box, coords, seed=len(label) * 7919 + len(dims), label="probe: " + label, **kw)


#: Cases the model refuses at run time (or rules it is unsure of): each may fault on the GPU.
PROBES = (
    _probe("load", "f32", (64, 8), (256,), (16, 4), (1, 0), "box start 4 bytes past 16 (f32 coords[0] = 1)"),
    _probe("load", "u8", (128, 4), (128,), (32, 4), (5, 0), "box start 5 bytes past 16 (u8 coords[0] = 5)"),
    _probe("load", "f16", (64, 8), (128,), (32, 4), (-3, 0), "box start -6 bytes, partly out of bounds (f16)"),
    _probe("load", "f64", (16, 8), (128,), (8, 4), (1, 1), "box start 8 bytes past 16 (f64 coords[0] = 1)"),
    _probe("load", "f16", (64, 8), (128,), (32, 4), (0, 0), "destination 16-byte aligned (dst = 16), no swizzle",
           dst=16),
    _probe("load", "f16", (64, 8), (128,), (16, 8), (0, 0), "destination 64-byte aligned (dst = 64), 32B swizzle",
           swizzle="32B", dst=64),
    _probe("load", "f16", (64, 16), (128,), (64, 8), (0, 0), "destination 32-byte aligned (dst = 32), 128B swizzle",
           swizzle="128B", dst=32),
    _probe("load", "f16", (64, 8), (128,), (64, 4), (2**31 - 8, 2**31 - 2), "box past the int32 limit (all out)"),
    _probe("store", "f16", (64, 8), (128,), (32, 4), (-8, 0), "store at a negative inner coordinate (16-byte aligned)"),
    _probe("store", "f16", (64, 8), (128,), (32, 4), (0, -1), "store at a negative outer coordinate"),
)


def make_cases(n: int, seed: int) -> list[dict[str, Any]]:
    """Encodes first (no launch), the probes (which may fault), then loads and stores."""
    rng = np.random.default_rng(seed)
    encodes = [_encode_case(rng) for _ in range(n // 2)]
    loads = [_interleaved(rng) if rng.random() < 0.03 else _random(rng, "load") for _ in range(n)]
    stores = [_random(rng, "store") for _ in range(n // 8)]
    return encodes + [dict(p) for p in PROBES] + loads + stores


# -- fragsim's side ------------------------------------------------------------------------------------

def model_load(case: dict[str, Any], base: int, tensor: np.ndarray, nbytes: int) -> np.ndarray:
    """The shared region after the load, as fragsim says (sentinel bytes where nothing is written)."""
    region = sentinel(nbytes)
    tma_load(tensor_map(case, base), tensor, case["coords"], region, case["dst"])
    return region


def model_store(case: dict[str, Any], base: int, tensor: np.ndarray, image: np.ndarray) -> np.ndarray:
    out = tensor.copy()
    tma_store(tensor_map(case, base), out, case["coords"], image, case["dst"])
    return out


def run_case(case: dict[str, Any], device: Any) -> dict[str, Any]:
    """One case on ``device`` (GpuDevice or ModelDevice): its result, the bytes under "bytes"."""
    if case["kind"] == "encode":
        code = device.encode(case)
        return {"status": "encoded" if code == 0 else "refused", "code": code, "base": device.base(case)}
    tensor, image = inputs(case)
    if case["kind"] == "load":
        return device.load(case, tensor, tx_bytes(case), region_bytes(case))
    return device.store(case, tensor, image)


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:32]


def _refusal(f) -> str:
    try:
        f()
    except (ValueError, TypeError) as e:
        return str(e)
    return ""


def compare(case: dict[str, Any], result: dict[str, Any], dump: np.ndarray | None) -> dict[str, Any]:
    """fragsim against what the GPU did in one case: {"verdict": "match" | "mismatch" | "not modelled",
    "detail"}.  ``dump``: the bytes that came back (None: only the result's digest is known)."""
    out = {"verdict": "match", "detail": ""}
    if result["status"] == "not run":
        return {"verdict": "not run", "detail": result.get("error", "")}
    base = result.get("base", 0)
    map_refusal = _refusal(lambda: tensor_map(case, base))
    gpu = result["status"]
    if case["kind"] == "encode" or gpu == "refused":
        refused = gpu == "refused"
        if refused != bool(map_refusal):
            out["verdict"] = "mismatch"
            out["detail"] = (f"the driver refuses the map (CUresult {result.get('code')}); fragsim accepts it" if refused
                             else f"the driver encodes the map; fragsim refuses it: {map_refusal}")
        return out
    if map_refusal:
        return {"verdict": "mismatch", "detail": f"the driver encodes the map; fragsim refuses it: {map_refusal}"}
    if case["interleave"] != "none":
        return {"verdict": "not modelled", "detail": f"{case['interleave']} interleave: GPU {gpu}"}
    tensor, image = inputs(case)
    mine: np.ndarray | None = None
    try:
        mine = (model_load(case, base, tensor, region_bytes(case)) if case["kind"] == "load"
                else model_store(case, base, tensor, image))  # type: ignore[arg-type]
        refusal = ""
    except (ValueError, TypeError) as e:
        refusal = str(e)
    if gpu in ("fault", "crash", "hang"):
        if not refusal:
            return {"verdict": "mismatch", "detail": f"the GPU stopped ({gpu}: {result.get('error', '')}); fragsim "
                                                     "runs the case"}
        return out
    if refusal:
        return {"verdict": "mismatch", "detail": f"the GPU ran the case ({gpu}); fragsim refuses it: {refusal}"}
    assert mine is not None
    if gpu == "timeout":
        return {"verdict": "mismatch", "detail": f"the mbarrier never completed: the copy did not bring the {tx_bytes(case)} "
                                                 f"bytes fragsim counts (mbarrier state {result.get('mbarrier', 0):#x})"}
    if dump is not None:
        bad = np.flatnonzero(dump != mine) if dump.size == mine.size else np.array([min(dump.size, mine.size)])
        if bad.size:
            i = int(bad[0])
            what = "shared byte" if case["kind"] == "load" else "tensor byte"
            got = f"GPU {int(dump[i]):#04x}, fragsim {int(mine[i]):#04x}" if i < min(dump.size, mine.size) else "sizes differ"
            return {"verdict": "mismatch", "detail": f"{bad.size} bytes differ, first {what} {i}: {got}"}
        return out
    if digest(mine) != result["digest"]:
        return {"verdict": "mismatch", "detail": "the bytes' digest differs from the GPU's"}
    return out


def _nan_bits(case: dict[str, Any], result: dict[str, Any], dump: np.ndarray) -> int | None:
    """The bits the GPU wrote for the first out-of-bound element of a NaN-filled load (None: none)."""
    if case["kind"] != "load" or case["oob_fill"] != "nan" or result["status"] != "ok" or case["interleave"] != "none":
        return None
    try:
        box = box_layout(tensor_map(case, result["base"]), case["coords"], case["dst"])
    except ValueError:
        return None
    out = np.flatnonzero(~box.in_bounds)
    if not out.size:
        return None
    a, e = int(box.shared_address[out[0]]), TMA_TYPES[case["dtype"]].bytes
    return int.from_bytes(dump[a:a + e].tobytes(), "little") if a + e <= dump.size else None


def case_id(i: int, case: dict[str, Any]) -> str:
    tail = f" [{case['label']}]" if case["label"] else ""
    return (f"#{i} {case['kind']} {case['dtype']} dims {case['dims']} strides {case['strides']} box {case['box']} "
            f"es {case['es']} {case['swizzle']} {case['oob_fill']} coords {case['coords']} dst {case['dst']}{tail}")


def verdicts(cases: list[dict[str, Any]], results: list[dict[str, Any]], dumps: dict[int, np.ndarray],
             say: Say) -> dict[str, Any]:
    """Compare every case; the report's figures."""
    per: dict[str, dict[str, int]] = {}
    problems: list[dict[str, str]] = []
    probes: list[dict[str, str]] = []
    nan_bits: dict[str, set[int]] = {}
    for i, (case, res) in enumerate(zip(cases, results)):
        dump = dumps.get(i)
        v = compare(case, res, dump)
        kind = "probe" if case["label"].startswith("probe") else case["kind"]
        d = per.setdefault(kind, {"match": 0, "mismatch": 0, "not modelled": 0, "not run": 0})
        d[v["verdict"]] += 1
        if v["verdict"] == "mismatch":
            problems.append({"case": case_id(i, case), "detail": v["detail"]})
            say(f"  mismatch {case_id(i, case)}: {v['detail']}")
        if kind == "probe":
            probes.append({"probe": case["label"][len("probe: "):], "gpu": res["status"] + (
                f" ({res['error']})" if res.get("error") else ""), "fragsim": v["verdict"]})
        if dump is not None:
            bits = _nan_bits(case, res, dump)
            if bits is not None:
                nan_bits.setdefault(case["dtype"], set()).add(bits)
    counted = sum(d["match"] + d["mismatch"] for d in per.values())
    return {"cases": counted, "mismatches": sum(d["mismatch"] for d in per.values()),
            "not_modelled": sum(d["not modelled"] for d in per.values()),
            "not_run": sum(d["not run"] for d in per.values()), "kinds": per, "problems": problems,
            "probes": probes, "nan_fill_bits": {k: sorted(f"{b:#x}" for b in v) for k, v in sorted(nan_bits.items())}}


# -- running the cases ---------------------------------------------------------------------------------

def spawn(cases_path: str, cubin: str, out_dir: str, start: int) -> int:
    """One worker process from case ``start``: its exit code (-1 when it stalled: killed)."""
    cmd = [sys.executable, "-m", "fragsim.gpu_check.tma_device", "worker", cases_path, cubin, out_dir, str(start)]
    results = os.path.join(out_dir, "results.jsonl")
    proc = subprocess.Popen(cmd)
    last, since = -1, time.monotonic()
    while proc.poll() is None:
        time.sleep(0.2)
        size = os.path.getsize(results) if os.path.exists(results) else 0
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since > STALL_SECONDS:
            proc.kill()
            proc.wait()
            return -1
    return proc.returncode


def run_all(cases: list[dict[str, Any]], cubin: str, work_dir: str, say: Say,
            launcher: Any = None) -> tuple[list[dict[str, Any]], dict[int, np.ndarray]]:
    """Every case through workers (``launcher(cases_path, cubin, out_dir, start)`` -> exit code), a new
    worker after each fault; (results in case order, the bytes of each case that brought some)."""
    launcher = launcher or spawn
    cases_path = os.path.join(work_dir, "cases.json")
    with open(cases_path, "w") as f:
        json.dump(cases, f)
    got: dict[int, dict[str, Any]] = {}
    start = faults = 0
    while start < len(cases):
        rc = launcher(cases_path, cubin, work_dir, start)
        got = _read_results(work_dir)
        nxt = max(got, default=-1) + 1
        if rc == 3:
            say(f"  case {nxt - 1} faulted ({got[nxt - 1].get('error', '')[:120]}); a new worker goes on")
        elif rc != 0 and nxt < len(cases):
            # the worker died on case nxt without a word: it counts as crashed (or hung)
            got[nxt] = {"i": nxt, "status": "hang" if rc == -1 else "crash", "error": f"worker exit code {rc}"}
            _append(work_dir, got[nxt])
            say(f"  case {nxt}: the worker {'hung' if rc == -1 else f'exited with code {rc}'}; a new worker goes on")
            nxt += 1
        if nxt <= start:
            raise runner.GpuUnavailable(f"the tma worker made no progress from case {start} (exit code {rc})")
        faults += rc != 0
        if faults >= MAX_FAULTS and nxt < len(cases):
            say(f"  {faults} faults: the {len(cases) - nxt} cases left are not run")
            for i in range(nxt, len(cases)):
                got[i] = {"i": i, "status": "not run", "error": f"{faults} faults before it"}
            break
        start = nxt
    dumps: dict[int, np.ndarray] = {}
    path = os.path.join(work_dir, "dumps.bin")
    raw = np.fromfile(path, np.uint8) if os.path.exists(path) else np.zeros(0, np.uint8)
    for i, r in got.items():
        if "dump" in r:
            at, n = r.pop("dump")
            dumps[i] = raw[at:at + n]
            r["digest"] = digest(dumps[i])
    return [got[i] for i in range(len(cases))], dumps


def _read_results(work_dir: str) -> dict[int, dict[str, Any]]:
    path = os.path.join(work_dir, "results.jsonl")
    out: dict[int, dict[str, Any]] = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    out[r["i"]] = r
    return out


def _append(work_dir: str, r: dict[str, Any]) -> None:
    with open(os.path.join(work_dir, "results.jsonl"), "a") as f:
        f.write(json.dumps(r) + "\n")


def in_process(cases_path: str, cubin: str, out_dir: str, start: int) -> int:
    """A launcher that runs the worker in this process (the model standing in for the GPU; tests)."""
    from .tma_device import GpuDevice, ModelDevice
    with open(cases_path) as f:
        cases = json.load(f)
    return work(cases, ModelDevice() if cubin == "--dry-run" else GpuDevice(cubin), out_dir, start)


# -- the recording -------------------------------------------------------------------------------------

def save(folder: str, cases: list[dict[str, Any]], results: list[dict[str, Any]], dumps: dict[int, np.ndarray],
         meta: dict[str, Any]) -> str:
    """DIR/tma.npz: every case and result (digests), and the dumps, smallest first, up to KEEP_BYTES."""
    arrays, kept = {}, 0
    for i in sorted(dumps, key=lambda k: dumps[k].size):
        if kept + dumps[i].size > KEEP_BYTES:
            break
        arrays[f"dump/{i}"] = dumps[i]
        kept += dumps[i].size
    return record.save(os.path.join(folder, FILE), KIND, dict(meta, cases=cases, results=results), arrays)


def load(path: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[int, np.ndarray], dict[str, Any]]:
    meta, arrays = record.load(path, (KIND,))
    dumps = {int(k.split("/")[1]): v for k, v in arrays.items() if k.startswith("dump/")}
    return meta["cases"], meta["results"], dumps, meta


def select(cases: list[dict[str, Any]], n: int) -> list[int]:
    """Indices of the cases --cases N keeps, as a run of N makes them: the first N loads, N // 8 stores,
    N // 2 encodes, and the probes."""
    quota = {"load": n, "store": n // 8, "encode": n // 2}
    seen = dict.fromkeys(quota, 0)
    out = []
    for i, c in enumerate(cases):
        if c["label"].startswith("probe"):
            out.append(i)
        elif seen[c["kind"]] < quota[c["kind"]]:
            seen[c["kind"]] += 1
            out.append(i)
    return out


# -- the family ----------------------------------------------------------------------------------------

class TmaFamily(RunnerFamily):
    name = "tma"
    summary = ("cuTensorMapEncodeTiled and tiled cp.async.bulk.tensor loads/stores vs fragsim.TensorMap / "
               "tma_load / tma_store, every byte, plus fault probes (needs nvcc and an sm_90 GPU; --cases: loads, "
               "default 4,000; stores N/8, encodes N/2)")
    default_cases = 4000
    options = frozenset({"cases", "seed", "record", "replay", "dry_run", "quiet", "json", "json_file"})
    replay_expects = f"a folder with the {FILE} that --family tma --record wrote"

    def validate(self, args: argparse.Namespace) -> None:
        super().validate(args)
        if args.dry_run and args.replay:
            raise ValueError("--dry-run and --replay exclude each other")

    def device(self) -> dict[str, Any]:
        info = super().device()
        if info.get("cc_int", 0) < 90:
            raise runner.GpuUnavailable(f"tma needs an sm_90 GPU (the Tensor Memory Accelerator); {info['device']} "
                                        f"is compute capability {info.get('cc', '-')}")
        if shutil.which("nvcc") is None:
            raise runner.GpuUnavailable("nvcc is not on PATH; the tma check compiles its kernels with nvcc for sm_90a")
        return info

    def run(self, args: argparse.Namespace):
        if args.dry_run:
            t0 = time.time()
            info = {"device": "fragsim (--dry-run)", "cc": "9.0", "cc_int": 90}
            return self._report({"device": info["device"], "cc": info["cc"]} | self.check(args, info, say_for(args)), t0)
        return super().run(args)

    def source(self, cc: int) -> str:
        return source()

    def compile(self, info: dict[str, Any]) -> Any:
        out = os.path.join(tempfile.mkdtemp(prefix="fragsim_tma_"), "tma.cubin")
        return compile.nvcc([(self.source(info["cc_int"]), out)], NVCC_FLAGS, "the tma kernels for sm_90a")[0]

    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        cases = make_cases(args.cases, args.seed)
        say(f"tma: {len(cases):,} cases ({args.cases:,} loads, {args.cases // 8:,} stores, {args.cases // 2:,} "
            f"encodes, {len(PROBES)} probes) on {info['device']}")
        cubin = "--dry-run" if args.dry_run else self.compile(info)
        work_dir = tempfile.mkdtemp(prefix="fragsim_tma_run_")
        try:
            results, dumps = run_all(cases, cubin, work_dir, say)
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)
            if not args.dry_run:
                shutil.rmtree(os.path.dirname(cubin), ignore_errors=True)
        if args.record:               # what the GPU said is kept before fragsim's turn
            meta = dict(info, seed=args.seed, loads=args.cases,
                        command=f"fragsim gpu-check --family tma --cases {args.cases} --seed {args.seed} --record DIR")
            if "cc_int" in info and not args.dry_run:
                meta["arch"] = arch_for_cc(info["cc_int"] // 10, info["cc_int"] % 10, info["device"])
            save(args.record, cases, results, dumps, meta)
        return verdicts(cases, results, dumps, say)

    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        path = os.path.join(args.replay, FILE)
        if not os.path.isfile(path):
            raise ValueError(f"--replay {args.replay}: no {FILE} there; expected {self.replay_expects}")
        cases, results, dumps, _ = load(path)
        keep = select(cases, args.cases)
        return verdicts([cases[i] for i in keep], [results[i] for i in keep],
                        {j: dumps[i] for j, i in enumerate(keep) if i in dumps}, say)

    def summarize(self, report: dict[str, Any]) -> str:
        lines = [super().summarize(report)]
        for kind, d in report.get("kinds", {}).items():
            lines.append(f"  {kind}: {d['match']:,} match, {d['mismatch']:,} mismatch"
                         + "".join(f", {d[k]:,} {k}" for k in ("not modelled", "not run") if d[k]))
        for p in report.get("probes", []):
            gpu = p["gpu"] if len(p["gpu"]) <= 100 else p["gpu"][:97] + "..."
            lines.append(f"  probe {p['probe']}: GPU {gpu}; fragsim {p['fragsim']}")
        for dtype, bits in report.get("nan_fill_bits", {}).items():
            lines.append(f"  NaN fill of {dtype}: {', '.join(bits)}")
        for p in report.get("problems", [])[:20]:
            lines.append(f"  mismatch {p['case']}: {p['detail']}")
        return "\n".join(lines)


FAMILIES = {"tma": TmaFamily()}
