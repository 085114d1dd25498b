"""The cases of the tma family (gpu_check/tma/family.py) and what fragsim says of each.

A case is a JSON-able dict: ``kind`` ("load", "store" or "encode"), the map's arguments (``dtype``,
``dims``, ``strides``, ``box``, ``es``, ``interleave``, ``swizzle``, ``oob_fill``), ``coords``, ``dst``
(the shared offset of the box in a 1024-byte aligned region), ``base_offset`` (the tensor's offset in
the worker's 1024-byte aligned global scratch), ``seed`` (its bytes, ``inputs``; with ``pattern`` =
"f32 specials", a third of a 4-byte float tensor's words are made tf32 rounding ties, NaNs,
infinities, subnormals or words that round to infinity) and ``label`` (the mutation of an encode
case, or "probe: ...").  ``make_cases`` draws them; ``model_load`` and
``model_store`` are fragsim's answer; ``run_case`` puts one to a device (device.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fragsim.facts.tma import GLOBAL_STRIDE_LIMIT, MAX_BOX_DIM, MAX_GLOBAL_DIM, SWIZZLES, TMA_TYPES
from fragsim.tma import TensorMap, box_layout, tma_load, tma_store

#: Largest shared region a case uses (its box, padded rows if the hardware padded them, the guard line).
MAX_REGION = 160 << 10
#: Largest global footprint of a load's tensor, and of a store's (its whole tensor comes back).
MAX_FOOTPRINT, MAX_STORE_FOOTPRINT = 1 << 20, 64 << 10
LINE = 128                          # the guard after a region, and its rounding
#: Bytes after a store's tensor that come back with it (sentinel before the store: a write past the
#: tensor shows).
STORE_GUARD = 256
#: Shared-memory bytes a region never written by a load holds: byte k is (A + B * k) mod 256.
SENTINEL = (0x5A, 37)

TYPES = tuple(TMA_TYPES)
MODES = tuple(SWIZZLES)


def sentinel(n: int) -> np.ndarray:
    a, b = SENTINEL
    return ((a + b * np.arange(n, dtype=np.int64)) & 0xFF).astype(np.uint8)


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


#: f32 words a load of a tf32 map rounds in a telling way (fragsim.facts.tma.TF32_DROPPED_BITS): a tie
#: (low 13 bits 0x1000), a NaN, an infinity, a subnormal, a word that rounds to infinity -- (clear, set).
SPECIALS = ((0x1FFF, 0x1000), (0x7F800000, 0x7F800000), (0x7FFFFFFF, 0x7F800000), (0x7F800000, 0),
            (0x7F800000, 0x7F7FF000))


def inputs(case: dict[str, Any]) -> tuple[np.ndarray, np.ndarray | None]:
    """(the tensor's bytes from its base, the shared image a store copies out) -- from the case's seed."""
    rng = np.random.default_rng(case["seed"])
    tensor = rng.integers(0, 256, footprint(case), dtype=np.uint8)
    image = rng.integers(0, 256, region_bytes(case), dtype=np.uint8) if case["kind"] == "store" else None
    if case.get("pattern") == "f32 specials":
        for data in (tensor, image):
            if data is not None:
                words = data[:data.size // 4 * 4].view(np.uint32)
                kind = rng.integers(0, 3 * len(SPECIALS), words.size)
                for k, (clear, put) in enumerate(SPECIALS):
                    at = kind == k
                    words[at] = (words[at] & ~np.uint32(clear)) | np.uint32(put)
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
        if t.float and e == 4 and rng.random() < 0.3:
            c["pattern"] = "f32 specials"
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


def _box_bytes(rows: int, es0: int = 1, dtype: str = "u8", planes: int = 256, es2: int = 1):
    """A box of (16 bytes) x rows x planes elements, element strides (es0, 1, es2): the driver's box-size
    limit (fragsim.facts.tma.MAX_BOX_BYTES) from both sides, and how the driver counts element strides."""
    def f(c: dict[str, Any], rng: np.random.Generator) -> None:
        inner = 16 // TMA_TYPES[dtype].bytes
        c.update(dtype=dtype, dims=[inner, rows, planes], strides=[16, 16 * rows], box=[inner, rows, planes],
                 es=[es0, 1, es2], coords=[0, 0, 0], interleave="none", oob_fill="zero")
    return f


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
    "interleave 32B, swizzle 64B": _interleave32("64B"), "interleave 32B, swizzle none": _interleave32("none"),
    "box bytes 224 KB": _box_bytes(56), "box bytes 228 KB": _box_bytes(57), "box bytes 232 KB": _box_bytes(58),
    "box bytes 252 KB": _box_bytes(63), "box bytes 256 KB": _box_bytes(64),
    "box bytes 1 MB, element_strides[0] 8": _box_bytes(256, 8),
    "box bytes 800 KB, element_strides[0] 4": _box_bytes(200, 4),
    # the driver rounds boxDim / elementStrides down: 57 of 58 planes (228 KB), 58 of 59 (232 KB) ...
    "box bytes 228 KB rounding down, 232 KB up": _box_bytes(256, planes=115, es2=2),
    "box bytes 232 KB rounding down, 236 KB up": _box_bytes(256, planes=117, es2=2),
    # ... and boxDim[0] below elementStrides[0] counts 0 bytes, however big the box
    "box bytes 1 MB, u64 box_dims[0] 2 < element_strides[0] 4": _box_bytes(256, 4, "u64"),
    "box bytes 512 KB, f32 box_dims[0] 4 < element_strides[0] 8": _box_bytes(128, 8, "f32"),
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


def model_store(case: dict[str, Any], base: int, tensor: np.ndarray, image: np.ndarray, guard: int = 0) -> np.ndarray:
    """The tensor after the store, as fragsim says, and the ``guard`` bytes after it (sentinel, untouched)."""
    out = tensor.copy()
    tma_store(tensor_map(case, base), out, case["coords"], image, case["dst"])
    return np.concatenate([out, sentinel(guard)])


def run_case(case: dict[str, Any], device: Any) -> dict[str, Any]:
    """One case on ``device`` (GpuDevice or ModelDevice): its result, the bytes under "bytes"."""
    if case["kind"] == "encode":
        code = device.encode(case)
        return {"status": "encoded" if code == 0 else "refused", "code": code, "base": device.base(case)}
    tensor, image = inputs(case)
    if case["kind"] == "load":
        return device.load(case, tensor, tx_bytes(case), region_bytes(case))
    return device.store(case, tensor, image)

