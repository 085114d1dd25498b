"""ldmatrix / stmatrix (m8n8, .b16): the table entries and their data movement as layouts.

Movement: which row address and which column feed each (lane, register, half).  Outputs: ``src``
= the lane whose address gives the row (8*matrix + row: lanes 8i..8i+7 hold the row addresses of
matrix i), ``col`` = the 16-bit element within that 16-byte row.  Without .trans lane l receives
row l/4, columns 2*(l%4)+{0,1} of matrix i in register i; with .trans it receives column l/4,
rows 2*(l%4)+{0,1}: each 8x8 matrix is transposed.  stmatrix moves the same elements the other
way.  Bank phases: one per 8x8 matrix (its 8 row addresses).  Overlapping stmatrix rows: a later
matrix overwrites an earlier one, within a matrix the lowest row wins (H200 overlap probes).
"""

from __future__ import annotations

from fragsim.facts.hardware import MATRIX_ROW_BYTES, MATRIX_ROWS
from fragsim.layout.linear import LinearLayout, from_bit_positions
from .shared_op import OVERLAP_PHASES, SharedOp

NUMS = (1, 2, 4)
ROW_BYTES = MATRIX_ROW_BYTES


def ldsm_layout(num: int, trans: bool) -> LinearLayout:
    """(lane, reg, elem) -> (src lane, col) of ``ldmatrix.x{num}[.trans]``."""
    reg = ["src3", "src4"][: {1: 0, 2: 1, 4: 2}[num]]
    if trans:
        return from_bit_positions(("src", "col"), {
            "lane": ["src1", "src2", "col0", "col1", "col2"], "reg": reg, "elem": ["src0"]})
    return from_bit_positions(("src", "col"), {
        "lane": ["col1", "col2", "src0", "src1", "src2"], "reg": reg, "elem": ["col0"]})


def _entry(family: str, num: int, trans: bool) -> SharedOp:
    t = ".trans" if trans else ""
    load = family == "ldmatrix"
    return SharedOp(
        name=f"{family}.x{num}{t}", ptx=f"{family}.sync.aligned.m8n8.x{num}{t}.shared.b16",
        family=family, kind="ldsm" if load else "stsm", sass="LDSM" if load else "STSM",
        bytes_per_addr=ROW_BYTES, address_lanes=MATRIX_ROWS * num, phase_lanes=MATRIX_ROWS, nregs=num,
        counter="ld" if load else "st", min_cc=75 if load else 90,  # PTX ISA: ldmatrix sm_75, stmatrix sm_90
        overlap=None if load else OVERLAP_PHASES, num=num, trans=trans, movement=ldsm_layout(num, trans))


ENTRIES = tuple(_entry(fam, n, t) for fam in ("ldmatrix", "stmatrix") for t in (False, True) for n in NUMS)
