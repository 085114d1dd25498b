"""The contract fuzz's entries for the Tensor Memory Accelerator: ``TensorMap`` (cuTensorMapEncodeTiled's
arguments), ``tma_load`` and ``tma_store`` (see fuzz_entries.py for the form of an entry)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import fragsim
from fragsim.facts.tma import SWIZZLES, TMA_TYPES
from fragsim.tma import box_layout

from contract import ERROR, OK
from fuzz_entries import Entry, read_only

MAP_PARAMS = ("dtype", "global_dims", "global_strides", "box_dims", "element_strides", "interleave", "swizzle",
              "oob_fill", "base")
BASE = 0x10000


def map_default():
    return {"dtype": "f16", "global_dims": (64, 32), "global_strides": (128,), "box_dims": (64, 8),
            "element_strides": None, "interleave": "none", "swizzle": "128B", "oob_fill": "zero", "base": BASE}


@st.composite
def map_valid(draw):
    """A map of rank 1..3 (any dtype, swizzle, fill, element strides, padded strides) whose box is small."""
    name = draw(st.sampled_from(sorted(TMA_TYPES)))
    t = TMA_TYPES[name]
    rank = draw(st.integers(1, 3))
    mode = draw(st.sampled_from(sorted(SWIZZLES)))
    span = SWIZZLES[mode][1] or 256
    box = [draw(st.integers(1, span // 16)) * 16 // t.bytes] + [draw(st.integers(1, 8)) for _ in range(rank - 1)]
    es = [draw(st.integers(1, 8))] + [draw(st.integers(1, 3)) for _ in range(rank - 1)]
    dims = [draw(st.integers(1, 2 * b + 8)) for b in box]
    strides, s = [], -(-dims[0] * t.bytes // 16) * 16 + 16 * draw(st.integers(0, 3))
    for d in dims[1:]:
        strides.append(s)
        s *= d
    return {"dtype": draw(st.sampled_from([name, name.upper(), "." + name])), "global_dims": tuple(dims),
            "global_strides": draw(st.sampled_from([tuple(strides), list(strides), np.array(strides, np.uint64)])),
            "box_dims": tuple(box), "element_strides": draw(st.sampled_from([None, tuple(es)])), "interleave": "none",
            "swizzle": mode, "oob_fill": "nan" if t.float and draw(st.booleans()) else "zero",
            "base": BASE + 16 * draw(st.integers(0, 64))}


def make_map(kw):
    return fragsim.TensorMap(kw["dtype"], kw["global_dims"], kw["global_strides"], kw["box_dims"],
                             element_strides=kw["element_strides"], interleave=kw["interleave"], swizzle=kw["swizzle"],
                             oob_fill=kw["oob_fill"], base=kw["base"])


def map_check(t, kw):
    assert t.box_bytes == math.prod(t.smem_box) * t.element_bytes and t.smem_bytes >= t.box_bytes
    assert "\n" not in repr(t) and t.rank == len(t.global_dims)


def _with(kw, **change):
    return {**kw, **change}


TENSOR_MAP = Entry(
    "TensorMap", make_map, map_default, map_valid(), names={p: (p,) for p in MAP_PARAMS}, check=map_check,
    accepts={"element_strides": ("None",), "base": ("int 2**63",),
             "global_strides": ("empty array",)},   # a rank-1 map has no strides
    special={
        "dtype": [("upper case", lambda kw: "F16", OK), ("PTX spelling", lambda kw: ".f16", OK),
                  ("packed type", lambda kw: "b4x16", ERROR), ("fp8", lambda kw: "e4m3", ERROR)],
        "global_dims": [("a zero", lambda kw: (64, 0), ERROR), ("2**32", lambda kw: (64, 2**32), OK),
                        ("2**32 + 1", lambda kw: (64, 2**32 + 1), ERROR), ("int64 array", lambda kw: np.array([64, 32]), OK),
                        ("a float", lambda kw: (64.0, 32), ERROR), ("a bool", lambda kw: (64, True), ERROR),
                        ("rank 6", lambda kw: (2,) * 6, ERROR)],
        "global_strides": [("8 bytes", lambda kw: (8,), ERROR), ("2**40", lambda kw: (2**40,), ERROR),
                           ("2**40 - 16", lambda kw: (2**40 - 16,), OK), ("two values", lambda kw: (128, 256), ERROR)],
        "box_dims": [("257", lambda kw: (64, 257), ERROR), ("inner 8 bytes", lambda kw: (4, 8), ERROR),
                     ("inner 256 bytes under 128B", lambda kw: (128, 8), ERROR), ("256 rows", lambda kw: (64, 256), OK)],
        "element_strides": [("9", lambda kw: (1, 9), ERROR), ("0", lambda kw: (0, 1), ERROR),
                            ("element_strides[0] 8", lambda kw: (8, 1), OK), ("one value", lambda kw: (1,), ERROR)],
        "interleave": [("16B at rank 2", lambda kw: "16B", ERROR), ("64B", lambda kw: "64B", ERROR)],
        "swizzle": [("lower case b", lambda kw: "128b", ERROR), ("32B for a 128-byte row", lambda kw: "32B", ERROR),
                    ("none", lambda kw: "none", OK)],
        "oob_fill": [("nan", lambda kw: "nan", OK), ("NaN", lambda kw: "NaN", ERROR)],
        "base": [("8 bytes past 16", lambda kw: BASE + 8, ERROR), ("2**64 - 16", lambda kw: 2**64 - 16, OK),
                 ("2**64", lambda kw: 2**64, ERROR), ("numpy uint64", lambda kw: np.uint64(BASE), OK),
                 ("numpy bool", lambda kw: np.bool_(True), ERROR)],
    })


# -- tma_load, tma_store ------------------------------------------------------------------------------

def _footprint(t):
    """The tensor's bytes from its base, rounded up to whole 16-byte chunks."""
    end = sum((d - 1) * s for d, s in zip(t.global_dims, (t.element_bytes,) + t.global_strides)) + t.element_bytes
    return -(-end // 16) * 16


def copy_default(store=False):
    t = make_map(map_default())
    rng = np.random.default_rng(5)
    return {"tmap": t, "tensor": rng.integers(0, 256, _footprint(t), dtype=np.uint8), "coords": (0, 8),
            "smem": rng.integers(0, 256, 4096, dtype=np.uint8), "dst" if not store else "src": 1024}


@st.composite
def copy_valid(draw, store=False):
    t = make_map(draw(map_valid()))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q = 16 // t.element_bytes
    lo = 0 if store else -2
    coords = [draw(st.integers(lo, d // q + 1)) * q for d in t.global_dims[:1]]
    coords += [draw(st.integers(lo * 4, d + 2)) for d in t.global_dims[1:]]
    at = 128 * draw(st.integers(0, 16))
    smem = rng.integers(0, 256, at + t.smem_bytes + 16 * draw(st.integers(0, 8)), dtype=np.uint8)
    tensor = rng.integers(0, 256, _footprint(t), dtype=np.uint8)
    view = draw(st.sampled_from(["bytes", "words"] if tensor.size % 4 == 0 else ["bytes"]))
    return {"tmap": t, "tensor": tensor.view(np.uint32) if view == "words" else tensor,
            "coords": draw(st.sampled_from([tuple(coords), list(coords), np.array(coords, np.int32)])),
            "smem": smem, "src" if store else "dst": at}


def _placed(kw, at):
    """(shared addresses, global byte offsets) of the bytes of the box's elements a copy moves."""
    box = box_layout(kw["tmap"], kw["coords"], at)
    lanes = np.arange(kw["tmap"].element_bytes)
    return box, box.shared_address[:, None] + lanes, box.global_offset[:, None] + lanes


def load_check(r, kw):
    """The elements inside the tensor hold its bytes (tf32 aside: a load rounds it)."""
    assert r is None
    box, sa, go = _placed(kw, kw["dst"])
    if not kw["tmap"].dtype.startswith("tf32"):
        g = kw["tensor"].reshape(-1).view(np.uint8)
        assert np.array_equal(kw["smem"][sa[box.in_bounds]], g[go[box.in_bounds]])


def store_check(r, kw):
    """Every element the store writes holds the shared bytes of its place."""
    assert r is None
    box, sa, go = _placed(kw, kw["src"])
    g = kw["tensor"].reshape(-1).view(np.uint8)
    assert np.array_equal(g[go[box.stored]], kw["smem"][sa[box.stored]])


def _interleaved(kw):
    return fragsim.TensorMap("f16", (8, 4, 4), (16, 64), (8, 4, 4), interleave="16B")


def copy_cases(store):
    at = "src" if store else "dst"
    tensor = [("read-only", lambda kw: read_only(kw["tensor"]), ERROR if store else OK),
              ("2-D Fortran order", lambda kw: np.asfortranarray(np.zeros((kw["tensor"].size, 2), np.uint8)), ERROR),
              ("float32 view", lambda kw: kw["tensor"].view(np.float32), OK),
              ("object dtype", lambda kw: kw["tensor"].astype(object), ERROR),
              ("too short", lambda kw: kw["tensor"][:16], ERROR), ("a list", lambda kw: kw["tensor"].tolist(), ERROR)]
    coords = [("2 bytes past 16", lambda kw: (1, 8), ERROR), ("int32 array", lambda kw: np.array([0, 8], np.int32), OK),
              ("2**31", lambda kw: (0, 2**31), ERROR), ("three values", lambda kw: (0, 8, 0), ERROR),
              ("a float", lambda kw: (0.0, 8), ERROR),
              ("negative, aligned", lambda kw: (-8, -3), ERROR if store else OK),
              ("wholly outside", lambda kw: (64, 40), OK)]
    smem = [("too small", lambda kw: np.zeros(1024 + 64, np.uint8), ERROR),
            ("uint16", lambda kw: kw["smem"].view(np.uint16), ERROR),
            ("read-only", lambda kw: read_only(kw["smem"]), OK if store else ERROR),
            ("past a CTA's shared memory", lambda kw: np.zeros(300_000, np.uint8), ERROR)]
    dst = [("64", lambda kw: 64, ERROR), ("128 past the pattern", lambda kw: 1024 + 128, OK),
           ("numpy int", lambda kw: np.int64(1024), OK), ("float", lambda kw: 1024.0, ERROR),
           ("2**62", lambda kw: 2**62, ERROR)]
    tmap = [("interleaved", _interleaved, ERROR), ("a dict of its arguments", lambda kw: map_default(), ERROR)]
    return {"tmap": tmap, "tensor": tensor, "coords": coords, "smem": smem, at: dst}


def _copy_entry(store):
    at = "src" if store else "dst"
    fn = fragsim.tma_store if store else fragsim.tma_load
    return Entry("tma_store" if store else "tma_load",
                 lambda kw: fn(kw["tmap"], kw["tensor"], kw["coords"], kw["smem"], kw[at]),
                 lambda: copy_default(store), copy_valid(store),
                 names={"tmap": ("tmap",), "tensor": ("tensor",), "coords": ("coords",), "smem": ("smem",),
                        at: (at,)},
                 check=store_check if store else load_check, special=copy_cases(store),
                 # a box wholly outside the tensor reads and writes nothing: any array then serves
                 accepts={"tensor": ("0-d array", "empty array", "64-dim array")})


TMA_LOAD = _copy_entry(False)
TMA_STORE = _copy_entry(True)

ENTRIES = [TENSOR_MAP, TMA_LOAD, TMA_STORE]
