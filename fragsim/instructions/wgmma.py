"""The wgmma forms fragsim knows (sm_90a ``wgmma.mma_async``), as data, and their lookup.

A warpgroup (4 consecutive warps, 128 threads) computes D (64 x N) = A (64 x K) * B (K x N) + D.
B always comes from shared memory through a matrix descriptor; A from a descriptor or from
registers.  Names are PTX's spelling after ``wgmma.mma_async.sync.aligned.``:
``m64n64k16.f32.bf16.bf16``, ``m64n8k32.satfinite.s32.s8.u8``.

Fragment maps (PTX ISA 9.7.15.5.1.1 "Register Fragments", figures "WGMMA .m64nNk16/k8/k32
register fragment layout for matrix A" and "... for accumulator matrix D"; CuTe writes the same
maps as ``CLayout_64xN`` and ``ALayout_64x8/16/32`` in cute/atom/mma_traits_sm90_gmma.hpp):
warp w = thread >> 5 of the warpgroup owns rows 16w..16w+15, and inside a warp the pattern is the
mma.sync m16n8 fragment.  Accumulator element d_i of a thread (lane = thread % 32, groupID =
lane >> 2, tig = lane % 4):

    row = 16*w + groupID + 8*((i >> 1) & 1)        col = 8*(i >> 2) + 2*tig + (i & 1)

so d0..d3 are the m16n8 C fragment of column block 0, d4..d7 of block 1, ... (N/8 blocks).  An
.f32/.s32 register holds one d_i (N/2 registers), an .f16x2 register two (d_2r low, N/4 registers).
A in registers (4 registers for every type) is the m16n8 A fragment of the same K, warp w's rows:
16-bit a_i at (groupID + 8*((i >> 1) & 1), 2*tig + (i & 1) + 8*(i >> 2)); tf32 a_i at
(groupID + 8*(i & 1), tig + 4*(i >> 1)); 8-bit a_i at (groupID + 8*((i >> 2) & 1),
4*tig + (i & 3) + 16*(i >> 3)).

As in ``mma.py`` each map is written as the output bit each input bit drives (inputs
``thread`` -- 7 bits, ``reg``, ``elem``).  N/8 need not be a power of two (N = 24, 40, ...): the
map then has the next power of two of column blocks and only registers below ``nregs`` exist.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fragsim.facts.formats import FloatFormat, IntFormat, get_format
from fragsim.facts.hardware import WARP_LANES, WARPGROUP_WARPS
from fragsim.layout.linear import LinearLayout, from_bit_positions

PREFIX = "wgmma.mma_async.sync.aligned."
M = 64
THREADS = WARPGROUP_WARPS * WARP_LANES      # the warpgroup's threads: 128
OPERANDS = ("A", "B", "C", "D")

# PTX ISA "Matrix Shape" (wgmma): N for the floating-point types, and for the integer types.
FLOAT_N = tuple(range(8, 257, 8))
INT_N = (8, 16, 24) + tuple(range(32, 257, 16))
FP8 = ("e4m3", "e5m2")
INT8 = ("s8", "u8")
# K and the accumulators of each input type (PTX ISA wgmma.mma_async "Description": .bf16 and
# .tf32 accumulate in .f32 only; the integer types in .s32).
K_OF = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}
DTYPES_OF = {"f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",), "e4m3": ("f16", "f32"),
             "e5m2": ("f16", "f32"), "s8": ("s32",), "u8": ("s32",)}
SASS_OF = {"f16": "HGMMA", "bf16": "HGMMA", "tf32": "HGMMA", "e4m3": "QGMMA", "e5m2": "QGMMA",
           "s8": "IGMMA", "u8": "IGMMA"}

# Thread bits 0-1 (tig), 2-4 (groupID), 5-6 (warp of the warpgroup).
_WARP = ["row4", "row5"]


def _map(thread, reg=(), elem=()) -> LinearLayout:
    return from_bit_positions(("row", "col"), {"thread": list(thread) + _WARP, "reg": list(reg),
                                               "elem": list(elem)})


def _col_blocks(n: int) -> list[str]:
    """Register bits that step the 8-column block (col bits 3.. for ceil(log2(N/8)) bits)."""
    return [f"col{3 + i}" for i in range((n // 8 - 1).bit_length())]


def acc_layout(n: int, dtype: str) -> LinearLayout:
    if dtype == "f16":                       # two d's per register: d_2r low half
        return _map(["col1", "col2", "row0", "row1", "row2"], reg=["row3"] + _col_blocks(n), elem=["col0"])
    return _map(["col1", "col2", "row0", "row1", "row2"], reg=["col0", "row3"] + _col_blocks(n))


A_16BIT = _map(["col1", "col2", "row0", "row1", "row2"], reg=["row3", "col3"], elem=["col0"])
A_TF32 = _map(["col0", "col1", "row0", "row1", "row2"], reg=["row3", "col2"])
A_8BIT = _map(["col2", "col3", "row0", "row1", "row2"], reg=["row3", "col4"], elem=["col0", "col1"])
A_LAYOUT_OF = {"f16": A_16BIT, "bf16": A_16BIT, "tf32": A_TF32, "e4m3": A_8BIT, "e5m2": A_8BIT,
               "s8": A_8BIT, "u8": A_8BIT}


@dataclass(frozen=True)
class WgmmaForm:
    name: str                       # "m64n64k16.f32.bf16.bf16"
    shape: tuple[int, int, int]     # (64, N, K)
    types: dict = field(hash=False)
    layouts: dict = field(hash=False)   # "A" (A in registers) and "D" (= "C")
    trans: bool                     # imm-trans-a/b exist (.f16/.bf16 only)
    scale_ab: bool                  # imm-scale-a/b exist (floating-point types only)
    satfinite: bool                 # .satfinite (integer forms only)
    sass: str                       # HGMMA | QGMMA | IGMMA
    min_cc: int = 90                # sm_90a

    @property
    def ptx(self) -> str:
        return PREFIX + self.name

    @property
    def family(self) -> str:
        """The validation family: 'f16/bf16', 'tf32', 'fp8' or 'int8'."""
        a = self.types["A"]
        return {"f16": "f16/bf16", "bf16": "f16/bf16", "tf32": "tf32", "e4m3": "fp8", "e5m2": "fp8"}.get(a, "int8")

    def fmt(self, operand: str) -> FloatFormat | IntFormat:
        return get_format(self.types[_operand(operand)])

    def layout(self, operand: str) -> LinearLayout:
        op = _operand(operand)
        if op == "B":
            raise ValueError(f"{self.name}: operand B of wgmma is always in shared memory (it has no register fragment)")
        return self.layouts["D" if op == "C" else op]

    def matrix_shape(self, operand: str) -> tuple[int, int]:
        m, n, k = self.shape
        return {"A": (m, k), "B": (k, n), "C": (m, n), "D": (m, n)}[_operand(operand)]

    def elems_per_reg(self, operand: str) -> int:
        return max(1, 32 // self.fmt(operand).storage_bits)

    def nregs(self, operand: str) -> int:
        """uint32 registers per thread: 4 for A, N/2 (f32, s32) or N/4 (f16) for C and D."""
        op = _operand(operand)
        if op == "A":
            return 4
        if op == "B":
            return 0
        return self.shape[1] * self.fmt("D").storage_bits // 64

    @cached_property
    def _coords(self):
        out = {}
        for op in ("A", "D"):
            rows, cols = self.layouts[op].table()          # (128, 2**bits(reg), epr)
            n = self.nregs(op)
            rows, cols = np.ascontiguousarray(rows[:, :n]), np.ascontiguousarray(cols[:, :n])
            rows.setflags(write=False)
            cols.setflags(write=False)
            out[op] = (rows, cols)
        return out

    def coords(self, operand: str) -> tuple[np.ndarray, np.ndarray]:
        """(row, col) held by each (thread, register, half): read-only int arrays (128, nregs, epr)."""
        op = _operand(operand)
        self.layout(op)                                    # refuses B
        return self._coords["D" if op == "C" else op]

    def element_name(self, operand: str, reg: int, half: int) -> str:
        op = _operand(operand)
        return f"{op.lower()}{reg * self.elems_per_reg(op) + half}"

    def __str__(self) -> str:
        return self.ptx


def _operand(operand) -> str:
    op = str(operand).upper()
    if op not in OPERANDS:
        raise ValueError(f"operand must be one of A, B, C, D; got {operand!r}")
    return op


def _entry(n: int, dtype: str, a: str, b: str, sat: bool = False) -> dict:
    k = K_OF[a]
    name = ".".join([f"m64n{n}k{k}"] + (["satfinite"] if sat else []) + [dtype, a, b])
    floating = a not in INT8
    return {"name": name, "shape": (M, n, k), "types": {"A": a, "B": b, "C": dtype, "D": dtype},
            "layouts": {"A": A_LAYOUT_OF[a], "D": acc_layout(n, dtype)},
            "trans": a in ("f16", "bf16"), "scale_ab": floating, "satfinite": sat, "sass": SASS_OF[a]}


def _entries() -> list[dict]:
    out = []
    for n in FLOAT_N:
        out += [_entry(n, "f16", "f16", "f16"), _entry(n, "f32", "f16", "f16"), _entry(n, "f32", "bf16", "bf16"),
                _entry(n, "f32", "tf32", "tf32")]
        out += [_entry(n, d, a, b) for d in ("f16", "f32") for a in FP8 for b in FP8]
    for n in INT_N:
        out += [_entry(n, "s32", a, b, sat) for sat in (False, True) for a in INT8 for b in INT8]
    return out


# The table.  ``name`` is the PTX spelling after ``wgmma.mma_async.sync.aligned.``.
WGMMA_FORMS: dict[str, WgmmaForm] = {e["name"]: WgmmaForm(**e) for e in _entries()}


def _refusal(s: str, spelled: str) -> str:
    """Why a spelling is not in the table, with PTX's rule; 'not modelled' for legal PTX."""
    parts = s.split(".")
    head = f"wgmma form {spelled!r}"
    if parts[0] in ("sp", "mma_async") or "sp" in parts:
        return f"{head}: sparse wgmma (wgmma.mma_async.sp) is PTX but not modelled by fragsim"
    shape = parts[0]
    try:
        assert shape[:3] == "m64" and "n" in shape and "k" in shape
        n = int(shape[shape.index("n") + 1:shape.index("k")])
        k = int(shape[shape.index("k") + 1:])
    except (AssertionError, ValueError):
        return (f"{head}: expected PTX's spelling after '{PREFIX}', shape first, e.g. 'm64n64k16.f32.bf16.bf16' "
                "(wgmma shapes are m64nNkK)")
    rest = parts[1:]
    sat = "satfinite" in rest
    rest = [p for p in rest if p != "satfinite"]
    if k == 256 or "b1" in rest:
        return f"{head}: the .b1 wgmma forms (m64nNk256 .and.popc) are PTX but not modelled by fragsim"
    if len(rest) != 3:
        return f"{head}: expected shape, .dtype, .atype, .btype (e.g. 'm64n64k16.f32.bf16.bf16'), got {len(rest)} types"
    d, a, b = rest
    if a not in K_OF:
        return f"{head}: .atype .{a} is not a wgmma input type (.f16 .bf16 .tf32 .e4m3 .e5m2 .s8 .u8 .b1)"
    if b not in K_OF:
        return f"{head}: .btype .{b} is not a wgmma input type (.f16 .bf16 .tf32 .e4m3 .e5m2 .s8 .u8 .b1)"
    if a in ("f16", "bf16", "tf32") and a != b:
        return f"{head}: .atype and .btype must be the same for .{a} (PTX ISA wgmma.mma_async)"
    if (a in FP8) != (b in FP8) or (a in INT8) != (b in INT8):
        return f"{head}: .atype .{a} and .btype .{b} do not mix (PTX ISA wgmma.mma_async)"
    if k != K_OF[a]:
        return f"{head}: .{a} inputs take K = {K_OF[a]} (m64nNk{K_OF[a]}), got k{k}"
    ns = INT_N if a in INT8 else FLOAT_N
    if n not in ns:
        which = "8, 16, 24, then 32..256 in steps of 16" if a in INT8 else "8..256 in steps of 8"
        return f"{head}: N must be {which} for .{a} (PTX ISA wgmma \"Matrix Shape\"), got n{n}"
    if d not in DTYPES_OF[a]:
        return f"{head}: .dtype .{d} with .{a} inputs: PTX allows {', '.join('.' + x for x in DTYPES_OF[a])}"
    if sat and a not in INT8:
        return f"{head}: .satfinite applies to the integer forms (.s8/.u8) only"
    return f"{head}: not a wgmma form fragsim models (expected e.g. 'm64n64k16.f32.bf16.bf16')"


def lookup_wgmma(form) -> WgmmaForm:
    """A PTX wgmma spelling (with or without ``wgmma.mma_async.sync.aligned.``) -> its ``WgmmaForm``."""
    if isinstance(form, WgmmaForm):
        return form
    if not isinstance(form, str):
        raise TypeError(f"form must be a PTX wgmma spelling (str) such as 'm64n64k16.f32.bf16.bf16', "
                        f"got {type(form).__name__}")
    s = form.strip().lower()
    for ch in s:
        if not (ch.isascii() and (ch.isalnum() or ch in "._")):
            raise ValueError(f"form {form!r}: character {ch!r} (U+{ord(ch):04X} {unicodedata.name(ch, '')}) "
                             f"cannot be part of a PTX spelling (letters, digits, '.', '_')")
    for pre in (PREFIX, "wgmma.mma_async.sync.", "wgmma.mma_async.", "wgmma."):
        if s.startswith(pre):
            s = s[len(pre):]
            break
    if s in WGMMA_FORMS:
        return WGMMA_FORMS[s]
    raise ValueError(_refusal(s, form.strip()))
