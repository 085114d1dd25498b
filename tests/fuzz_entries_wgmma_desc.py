"""The contract fuzz's entries for wgmma descriptors: ``MatrixDescriptor`` (and its ``decode``) and
``check_wgmma`` (see fuzz_entries.py for the form of an entry)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fragsim
from fragsim import Swizzle, Tile
from fragsim.layout.descriptor import MatrixDescriptor, SWIZZLE_MODES

from contract import EITHER, ERROR, OK
from fuzz_entries import Entry

FIELDS = ("start_address", "leading_byte_offset", "stride_byte_offset", "base_offset", "swizzle")
SW = {"128B": Swizzle(3, 4, 3), "64B": Swizzle(2, 4, 3), "32B": Swizzle(1, 4, 3), "none": None}
WIDTH = {"128B": 128, "64B": 64, "32B": 32, "none": 32}


def desc_default():
    return {"start_address": 0x400, "leading_byte_offset": 16, "stride_byte_offset": 1024, "base_offset": 0,
            "swizzle": "128B"}


@st.composite
def desc_valid(draw):
    mode = draw(st.sampled_from(SWIZZLE_MODES))
    return {"start_address": draw(st.integers(0, 0x3FFF)) * 16,
            "leading_byte_offset": draw(st.integers(0, 0x3FFF)) * 16, "stride_byte_offset": draw(st.integers(0, 0x3FFF)) * 16,
            "base_offset": draw(st.integers(0, 7)) if mode != "none" else 0, "swizzle": mode}


def desc_check(d, kw):
    assert MatrixDescriptor.decode(d.encode()) == d and 0 <= d.encode() < 2**64 and "\n" not in str(d)


ALIGN = [("misaligned", lambda kw: 8, ERROR), ("numpy int", lambda kw: np.int32(64), OK), ("2**18", lambda kw: 1 << 18, ERROR)]

DESCRIPTOR = Entry("MatrixDescriptor", lambda kw: MatrixDescriptor(**kw), desc_default, desc_valid(),
                   names={**{f: (f,) for f in FIELDS[:3]}, "base_offset": ("base_offset",), "swizzle": ("swizzle",)},
                   check=desc_check,
                   special={"start_address": ALIGN, "leading_byte_offset": ALIGN, "stride_byte_offset": ALIGN,
                            "base_offset": [("7", lambda kw: 7, OK), ("8", lambda kw: 8, ERROR)],
                            "swizzle": [("lower case", lambda kw: "128b", OK), ("16B", lambda kw: "16B", ERROR),
                                        ("code 1", lambda kw: 1, ERROR)]})

DECODE = Entry("MatrixDescriptor.decode", lambda kw: MatrixDescriptor.decode(kw["value"]),
               lambda: {"value": MatrixDescriptor(0x400, 16, 1024, 0, "128B").encode()},
               st.builds(lambda d: {"value": MatrixDescriptor(**d).encode()}, desc_valid()),
               names={"value": ("descriptor",)}, check=lambda d, kw: desc_check(d, kw),
               accepts={"value": ("int 2**63",)},
               special={"value": [("int64 of a 32B descriptor", lambda kw: -(1 << 62), OK),
                                  ("unused bit 14", lambda kw: 1 << 14, ERROR),
                                  ("uint64", lambda kw: np.uint64(kw["value"]), OK)]})


# -- check_wgmma ---------------------------------------------------------------------------------------

TYPES = {"bf16": "m64n{n}k16.f32.bf16.bf16", "tf32": "m64n{n}k8.f32.tf32.tf32", "e4m3": "m64n{n}k32.f32.e4m3.e4m3"}
BITS = {"bf16": 16, "tf32": 32, "e4m3": 8}


def wgmma_default():
    return {"form": "m64n64k16.f32.bf16.bf16", "operand": "A", "tile": Tile(64, 64, "bf16", swizzle=Swizzle(3, 4, 3)),
            "descriptor": {"start_address": "k * 32", "leading_byte_offset": 16, "stride_byte_offset": 1024,
                           "swizzle": "128B"}, "major": "K", "at": None, "steps": None, "variables": None}


@st.composite
def wgmma_valid(draw):
    dtype = draw(st.sampled_from(sorted(TYPES)))
    mode = draw(st.sampled_from(["128B", "64B", "32B"]))
    n = draw(st.sampled_from([8, 16, 64, 128]))
    operand = draw(st.sampled_from(["A", "B"]))
    rows = 64 if operand == "A" else n
    cols = WIDTH[mode] * 8 // BITS[dtype]
    tile = Tile(rows, cols, dtype, swizzle=SW[mode], base=draw(st.integers(0, 3)) * 1024)
    d = draw(desc_valid())
    d["start_address"] = d["start_address"] % 0x8000
    desc = draw(st.sampled_from([d, MatrixDescriptor(**d).encode(),
                                 {**d, "start_address": f"{d['start_address']} + k * 32"}]))
    return {"form": TYPES[dtype].format(n=n), "operand": operand, "tile": tile, "descriptor": desc, "major": "K",
            "at": None, "steps": None, "variables": None}


def fields(kw):
    """The drawn descriptor as a dict of fields (the default one where it was drawn as a value)."""
    d = kw["descriptor"]
    return dict(d) if isinstance(d, dict) else dict(wgmma_default()["descriptor"])


def run_wgmma(kw):
    return fragsim.check_wgmma(kw["form"], kw["operand"], kw["tile"], kw["descriptor"], major=kw["major"], at=kw["at"],
                               steps=kw["steps"], variables=kw["variables"])


def wgmma_check(r, kw):
    assert isinstance(r.ok, bool) and isinstance(str(r), str) and r.ok == (not r.mismatches)
    if not r.ok and r.fix is not None:       # the fix is checked: it reads the intended elements
        again = fragsim.check_wgmma(kw["form"], kw["operand"], kw["tile"], list(r.fix), major=r.major, at=kw["at"])
        assert again.ok


CHECK_WGMMA = Entry("check_wgmma", run_wgmma, wgmma_default, wgmma_valid(),
                    names={"form": ("form",), "operand": ("operand",), "tile": ("tile", "Tile"),
                           "descriptor": ("descriptor", "MatrixDescriptor"), "major": ("major",),
                           "at": ("at",), "steps": ("steps",), "variables": ("variable", "descriptor")},
                    check=wgmma_check,
                    accepts={"descriptor": ("str", "int 2**63"), "at": ("None",), "steps": ("None",),
                             "variables": ("None", "dict")},
                    special={"form": [("mma.sync form", lambda kw: "m16n8k16.row.col.f32.bf16.bf16.f32", ERROR),
                                      ("long spelling", lambda kw: "wgmma.mma_async.sync.aligned." + kw["form"], OK)],
                             "operand": [("b", lambda kw: "b", EITHER), ("C", lambda kw: "C", ERROR)],
                             "tile": [("spec", lambda kw: "64x64 bf16 swizzle=3,4,3", OK),
                                      ("f32 tile", lambda kw: Tile(64, 64, "f32"), ERROR),
                                      ("too few rows", lambda kw: Tile(8, 64, "bf16"), ERROR)],
                             "descriptor": [("the 64-bit value", lambda kw: 0x4000004000010000, OK),
                                            ("a list of 4", lambda kw: [0x4000004000010000 + 2 * s for s in range(4)], OK),
                                            ("a callable", lambda kw: (lambda s: 0x4000004000010000 + 2 * s), OK),
                                            ("a callable failing", lambda kw: (lambda s: 1 / 0), EITHER),
                                            ("empty list", lambda kw: [], ERROR),
                                            ("unknown variable", lambda kw: "desc + k", ERROR),
                                            ("unknown field", lambda kw: {**fields(kw), "lbo": 16}, ERROR),
                                            ("misaligned start",
                                             lambda kw: {**fields(kw), "start_address": "k * 32 + 8"}, ERROR)],
                             "major": [("MN", lambda kw: "MN", OK), ("mn", lambda kw: "mn", OK), ("T", lambda kw: "T", ERROR)],
                             "at": [("(0, 16)", lambda kw: (0, 16), OK), ("(1, 0)", lambda kw: (1, 0), ERROR),
                                    ("one number", lambda kw: 0, ERROR)],
                             "steps": [("1", lambda kw: 1, OK), ("0", lambda kw: 0, ERROR), ("5", lambda kw: 5, ERROR)],
                             "variables": [("float", lambda kw: {"k0": 1.5}, ERROR), ("unused int", lambda kw: {"x": 1}, OK)]})

ENTRIES = [DESCRIPTOR, DECODE, CHECK_WGMMA]
