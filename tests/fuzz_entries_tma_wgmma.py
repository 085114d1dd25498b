"""The contract fuzz's entries for ``check_tma_wgmma`` (see fuzz_entries.py for the form of an entry): one
box at ``dst``, and the same check with its boxes given as ``boxes=[(coords, dst), ...]``.

A valid draw is right by construction (``_right``: the configurations test_check_tma_wgmma.py checks on
the hardware's model -- K-major boxes one swizzle span wide read with SBO = 8 rows, k-steps 32 bytes
apart; MN-major 128B boxes read with SBO 1024, k-steps 16 rows apart) or the same with one mistake
injected (``_wrong``: SBO, advance, swizzle, base offset, majorness or the map's swizzle); every fix a
report offers is run through the check again and must pass."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fragsim
from fragsim.facts.hardware import MATRIX_ROWS
from fragsim.layout.descriptor import MatrixDescriptor as D
from fragsim.tma import TensorMap

from contract import EITHER, ERROR, OK
from fuzz_entries import Entry

# the map's dtype, the wgmma form of that element width; k * element bytes = 32 for each
FORMS = {"bf16": "m64n{n}k16.f32.bf16.bf16", "f16": "m64n{n}k16.f16.f16.f16", "tf32": "m64n{n}k8.f32.tf32.tf32",
         "u8": "m64n{n}k32.f32.e4m3.e4m3"}
BYTES = {"bf16": 2, "f16": 2, "tf32": 4, "u8": 1}
K_BYTES = 32
SPAN = {"128B": 128, "64B": 64, "32B": 32}
PARAMS = ("tmap", "form", "operand", "descriptor", "dst", "coords", "boxes", "major", "k_dim", "at", "steps", "advance",
          "variables")

K, M = 200, 100
RIGHT = D(0x400, 16, 1024, 0, "128B")


def default():
    """tests/data/ptx/src/tma_wgmma.cu's A: a 64 x 64 bf16 box, 128B swizzle, 4 k-steps 32 bytes apart."""
    return {"tmap": TensorMap("bf16", (K, M), (K * 2,), (64, 64), swizzle="128B"), "form": "m64n64k16.f32.bf16.bf16",
            "operand": "A", "descriptor": RIGHT, "dst": 0x400, "coords": None, "boxes": None, "major": None,
            "k_dim": None, "at": None, "steps": None, "advance": K_BYTES, "variables": None}


def boxes_default():
    return {**default(), "dst": None, "boxes": [((0, 0), 0x400)]}


def _k_major(draw):
    dtype = draw(st.sampled_from(sorted(FORMS)))
    mode = draw(st.sampled_from(sorted(SPAN)))
    op = draw(st.sampled_from(["A", "B"]))
    n = draw(st.sampled_from([8, 16, 64, 128, 256]))
    rows, e, span = (64 if op == "A" else n), BYTES[dtype], SPAN[mode]
    kdim, mndim = draw(st.integers(span // e, 3 * span // e)), draw(st.integers(rows, rows + 40))
    pitch = -(-kdim * e // 16) * 16 + 16 * draw(st.integers(0, 2))
    tm = TensorMap(dtype, (kdim, mndim), (pitch,), (span // e, rows), swizzle=mode)
    coords = (draw(st.integers(0, (kdim - 1) // (16 // e))) * (16 // e), draw(st.integers(0, mndim - 1)))
    dst = 128 * draw(st.integers(0, 64))
    desc = D(dst, 16, 8 * span, 0, mode)
    wrong = {"SBO halved": {"descriptor": D(dst, 16, 4 * span, 0, mode)},
             "SBO doubled": {"descriptor": D(dst, 16, 16 * span, 0, mode)},
             "another swizzle": {"descriptor": D(dst, 16, 8 * span, 0, "128B" if mode != "128B" else "64B")},
             "base offset": {"descriptor": D(dst, 16, 8 * span, 5 if dst // 128 % 8 == 3 else 3, mode)},
             "MN-major": {"major": "MN", "k_dim": 0} if e == 2 else {"descriptor": D(dst, 16, 4 * span, 0, mode)},
             "map unswizzled": {"tmap": TensorMap(dtype, (kdim, mndim), (pitch,), (span // e, rows), swizzle="none")}}
    if rows == MATRIX_ROWS:     # one row group: no SBO to get wrong
        del wrong["SBO halved"], wrong["SBO doubled"]
        if e != 2:
            del wrong["MN-major"]
    if span > K_BYTES:      # a second k-step to get wrong
        wrong["advance in elements (16-bit) or two k-steps"] = {"advance": K_BYTES // e if e == 2 else 2 * K_BYTES}
    return tm, FORMS[dtype].format(n=n), op, desc, dst, coords, K_BYTES, "K", wrong


def _mn_major(draw):
    dtype = draw(st.sampled_from(["bf16", "f16"]))
    op = draw(st.sampled_from(["A", "B"]))
    steps = draw(st.integers(1, 4))
    mndim, kdim = draw(st.integers(64, 120)), draw(st.integers(16 * steps, 16 * steps + 40))
    tm = TensorMap(dtype, (mndim, kdim), (-(-mndim * 2 // 16) * 16,), (64, 16 * steps), swizzle="128B")
    coords = (8 * draw(st.integers(0, (mndim - 1) // 8)), draw(st.integers(0, kdim - 1)))
    dst = 1024 * draw(st.integers(0, 16))
    desc = D(dst, 8192, 1024, 0, "128B")
    wrong = {"SBO halved": {"descriptor": D(dst, 8192, 512, 0, "128B")},
             "K-major": {"major": "K", "k_dim": 1},
             "another swizzle": {"descriptor": D(dst, 8192, 1024, 0, "64B")}}
    if steps > 1:
        wrong["advance in rows"] = {"advance": 16}
    return tm, FORMS[dtype].format(n=64), op, desc, dst, coords, 16 * 128, "MN", wrong


@st.composite
def valid(draw, as_boxes=False):
    tm, form, op, desc, dst, coords, advance, major, wrong = draw(st.sampled_from([_k_major, _mn_major]))(draw)
    kw = {"tmap": tm, "form": form, "operand": draw(st.sampled_from([op, op.lower()])), "descriptor": desc,
          "dst": dst, "coords": coords, "boxes": None, "major": draw(st.sampled_from([major, major.lower()])),
          "k_dim": None, "at": draw(st.sampled_from([None, coords])), "steps": None, "advance": advance,
          "variables": None}
    steps = tm.smem_box[0] * tm.element_bytes // K_BYTES if major == "K" else tm.smem_box[1] // 16
    spelled = draw(st.sampled_from(["descriptor", "value", "expression", "list"]))
    if spelled == "value":
        kw["descriptor"] = desc.encode()
    elif spelled == "expression":
        kw.update(descriptor={**dict(start_address=f"{desc.start_address} + k * {advance}",
                                     leading_byte_offset=desc.leading_byte_offset,
                                     stride_byte_offset=desc.stride_byte_offset, swizzle=desc.swizzle)},
                  advance=None)
    elif spelled == "list":
        kw.update(descriptor=[desc.advance(s * advance) for s in range(steps)], advance=None)
    if as_boxes or draw(st.booleans()):
        kw.update(boxes=[(coords, dst)], dst=None, coords=None)
    if draw(st.booleans()):
        kw["_right"] = True
        return kw
    change = dict(wrong[draw(st.sampled_from(sorted(wrong)))])
    if "advance" in change and kw["advance"] is None:      # the mistake in the k-step's descriptors
        step = change.pop("advance")
        change["descriptor"] = [desc.advance(s * step) for s in range(steps)]
    if "descriptor" in change and kw["advance"] is None and not isinstance(change["descriptor"], list):
        d = change["descriptor"]
        change["descriptor"] = [d.advance(s * advance) for s in range(steps)]
    kw.update(change)
    kw["_wrong"] = True
    return kw


def run(kw):
    return fragsim.check_tma_wgmma(kw["tmap"], kw["form"], kw["operand"], kw["descriptor"], dst=kw["dst"],
                                   coords=kw["coords"], boxes=kw["boxes"], major=kw["major"], k_dim=kw["k_dim"],
                                   at=kw["at"], steps=kw["steps"], advance=kw["advance"], variables=kw["variables"])


def _k_dim(kw):
    if kw["k_dim"] is not None:
        return kw["k_dim"]
    return 0 if kw["major"] is None or kw["major"].upper() == "K" else 1


def check(r, kw):
    """The verdict agrees with the mismatches and the draw's truth; each fix offered passes the check."""
    assert isinstance(r.ok, bool) and r.ok == (not r.mismatches) and "\n" not in r.verdict()
    assert isinstance(str(r), str) and r.to_dict()["ok"] == r.ok
    if kw.get("_right"):
        assert r.ok, r.diagnosis
    if kw.get("_wrong"):
        assert not r.ok
    if r.ok:
        return
    assert r.findings
    same = {**kw, "k_dim": _k_dim(kw), "at": r.loads[0][0] if kw["at"] is None else kw["at"]}
    if r.fix is not None:
        again = run({**same, "descriptor": list(r.fix), "major": r.major, "steps": None, "advance": None})
        assert again.ok, (r.diagnosis, again.diagnosis)
    if r.tma_fix is not None:
        assert run({**same, "tmap": r.tma_fix}).ok


def _interleaved(kw):
    return TensorMap("f16", (8, 4, 4), (16, 64), (8, 4, 4), interleave="16B")


NAMES = {"tmap": ("tmap",), "form": ("form",), "operand": ("operand",),
         "descriptor": ("descriptor", "MatrixDescriptor", "start_address", "k-step"), "dst": ("dst",),
         "coords": ("coords",), "boxes": ("boxes",), "major": ("major",), "k_dim": ("k_dim",), "at": ("at",),
         "steps": ("steps",), "advance": ("advance",), "variables": ("variable", "descriptor")}

SPECIAL = {
    "tmap": [("interleaved", _interleaved, ERROR), ("a dict of its arguments", lambda kw: {"dtype": "bf16"}, ERROR),
             ("rank 1", lambda kw: TensorMap("bf16", (4096,), (), (64,), swizzle="128B"), ERROR),
             ("f32 elements for bf16", lambda kw: TensorMap("f32", (K, M), (K * 4,), (32, 64), swizzle="128B"), ERROR),
             ("no swizzle", lambda kw: TensorMap("bf16", (K, M), (K * 2,), (64, 64), swizzle="none"), OK),
             ("rank 3", lambda kw: TensorMap("bf16", (K, M, 2), (K * 2, K * M * 2), (64, 64, 1), swizzle="128B"), OK)],
    "form": [("mma.sync form", lambda kw: "m16n8k16.row.col.f32.bf16.bf16.f32", ERROR),
             ("long spelling", lambda kw: "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", OK),
             ("tf32 for a bf16 map", lambda kw: "m64n64k8.f32.tf32.tf32", ERROR)],
    "operand": [("b", lambda kw: "b", OK), ("C", lambda kw: "C", ERROR)],
    "descriptor": [("the 64-bit value", lambda kw: RIGHT.encode(), OK),
                   ("a list of 4", lambda kw: [RIGHT.advance(32 * s) for s in range(4)], ERROR),   # with advance
                   ("a callable", lambda kw: (lambda s: RIGHT), ERROR),
                   ("a dict of fields", lambda kw: {"start_address": 0x400, "leading_byte_offset": 16,
                                                    "stride_byte_offset": 1024, "swizzle": "128B"}, OK),
                   ("an expression", lambda kw: "k * 2", ERROR),
                   ("unknown field", lambda kw: {"start_address": 0x400, "lbo": 16}, ERROR),
                   ("misaligned start", lambda kw: {"start_address": 0x408, "leading_byte_offset": 16,
                                                     "stride_byte_offset": 1024, "swizzle": "128B"}, ERROR)],
    "dst": [("64", lambda kw: 64, ERROR), ("0x580, base offset 0", lambda kw: 0x580, OK),
            ("numpy int", lambda kw: np.int64(0x400), OK), ("a float", lambda kw: 1024.0, ERROR),
            ("2**62", lambda kw: 2**62, ERROR), ("past shared memory", lambda kw: 1 << 20, ERROR)],
    "coords": [("(192, 64), the edge", lambda kw: (192, 64), OK), ("2 bytes past 16", lambda kw: (1, 0), ERROR),
               ("three values", lambda kw: (0, 0, 0), ERROR), ("int32 array", lambda kw: np.array([0, 8], np.int32), OK),
               ("2**31", lambda kw: (0, 2**31), ERROR), ("wholly outside", lambda kw: (4096, 4096), OK)],
    "boxes": [("with dst", lambda kw: [((0, 0), 0x400)], ERROR)],
    "major": [("MN", lambda kw: "MN", OK), ("mn", lambda kw: "mn", OK), ("T", lambda kw: "T", ERROR)],
    "k_dim": [("1", lambda kw: 1, OK), ("2", lambda kw: 2, ERROR), ("numpy int", lambda kw: np.int8(0), OK)],
    "at": [("(0, 16)", lambda kw: (0, 16), OK), ("(1, 0)", lambda kw: (1, 0), OK), ("one number", lambda kw: 0, ERROR),
           ("three values", lambda kw: (0, 0, 0), ERROR), ("a float", lambda kw: (0.0, 0), ERROR),
           ("2**62", lambda kw: (0, 2**62), EITHER), ("-2**62", lambda kw: (-2**62, 0), EITHER),
           ("far on both axes", lambda kw: (2**40, 2**40), EITHER)],
    "steps": [("1", lambda kw: 1, OK), ("0", lambda kw: 0, ERROR), ("5, past the box", lambda kw: 5, OK),
              ("2**40", lambda kw: 2**40, ERROR), ("numpy int", lambda kw: np.int16(2), OK)],
    "advance": [("16, elements", lambda kw: 16, OK), ("-32", lambda kw: -32, EITHER), ("8", lambda kw: 8, ERROR),
                ("2**40", lambda kw: 2**40, ERROR), ("numpy int", lambda kw: np.uint8(32), OK)],
    "variables": [("float", lambda kw: {"k0": 1.5}, EITHER), ("unused int", lambda kw: {"x": 1}, OK)],
}

CHECK_TMA_WGMMA = Entry("check_tma_wgmma", run, default, valid(), names=NAMES, check=check,
                        accepts={"coords": ("None",), "boxes": ("None",), "major": ("None",), "k_dim": ("None", "int -1"),
                                 "at": ("None",), "steps": ("None",), "advance": ("None", "int -1"),
                                 "variables": ("None", "dict"), "descriptor": ("int 2**63",)},
                        special=SPECIAL)

BOX_SPECIAL = {
    "boxes": [("two boxes, the second over the first", lambda kw: [((0, 0), 0x400), ((64, 0), 0x400)], OK),
              ("two boxes side by side", lambda kw: [((0, 0), 0x400), ((64, 0), 0x2400)], OK),
              ("a tuple", lambda kw: (((0, 0), 0x400),), OK), ("empty", lambda kw: [], ERROR),
              ("a bare pair", lambda kw: ((0, 0), 0x400), ERROR), ("a triple", lambda kw: [((0, 0), 0x400, 0)], ERROR),
              ("dst misaligned", lambda kw: [((0, 0), 0x440)], ERROR), ("dst 2**62", lambda kw: [((0, 0), 2**62)], ERROR),
              ("coords a float", lambda kw: [((0.0, 0), 0x400)], ERROR),
              ("a million boxes", lambda kw: [((0, 0), 0x400)] * 1_000_000, EITHER)],
    "dst": [("with boxes", lambda kw: 0x400, ERROR)],
    "coords": [("with boxes", lambda kw: (0, 0), ERROR)],
}

# the same check with its loads as boxes=[...]: the boxes' own adversarial values
CHECK_TMA_WGMMA_BOXES = Entry("check_tma_wgmma(boxes)", run, boxes_default, valid(as_boxes=True),
                              names={p: NAMES[p] for p in ("boxes", "dst", "coords")}, check=check,
                              accepts={"dst": ("None",), "coords": ("None",)}, special=BOX_SPECIAL)

ENTRIES = [CHECK_TMA_WGMMA, CHECK_TMA_WGMMA_BOXES]
