"""The mma.sync forms fragsim knows: shapes, element formats and fragment maps, as data.

Each fragment map is the PTX ISA's (section "Matrix Fragments for mma.m16n8k*"), written
as the output bit each input bit drives.  Inputs: ``lane`` (bit 0..4 of the lane id;
groupID = lane >> 2 is bits 2..4, threadID_in_group = lane % 4 is bits 0..1), ``reg``
(which 32-bit register of the operand), ``elem`` (which 16-bit half of a register, low
half first).  Example, m16n8k16 A: row = groupID + 8*(reg & 1), col = 2*tig + elem +
8*(reg >> 1) reads ``lane: col1 col2 row0 row1 row2; reg: row3 col3; elem: col0``.
Element a_i of the PTX figures is register i // epr, half i % epr.
"""

from __future__ import annotations

from ..layout import from_bit_positions

RC = ("row", "col")


def _map(lane, reg=(), elem=()):
    return from_bit_positions(RC, {"lane": lane, "reg": list(reg), "elem": list(elem)})


# Lane bits: tig (threadID_in_group) is lane bits 0-1, groupID lane bits 2-4.
_GROUP_ROWS_TIG_COLPAIRS = ["col1", "col2", "row0", "row1", "row2"]   # row = groupID, col = 2*tig
_TIG_ROWPAIRS_GROUP_COLS = ["row1", "row2", "col0", "col1", "col2"]   # row = 2*tig, col = groupID
_GROUP_ROWS_TIG_COLS = ["col0", "col1", "row0", "row1", "row2"]       # row = groupID, col = tig
_TIG_ROWS_GROUP_COLS = ["row0", "row1", "col0", "col1", "col2"]       # row = tig, col = groupID

# Accumulators (all shapes here): c0,c1 row groupID; c2,c3 row groupID+8; col 2*tig + (i&1).
ACC_F16 = _map(_GROUP_ROWS_TIG_COLPAIRS, reg=["row3"], elem=["col0"])
ACC_F32 = _map(_GROUP_ROWS_TIG_COLPAIRS, reg=["col0", "row3"])

# m16n8k16, .f16/.bf16 inputs (PTX ISA figures "A/B fragment layout for m16n8k16 .f16/.bf16").
A_M16K16_B16 = _map(_GROUP_ROWS_TIG_COLPAIRS, reg=["row3", "col3"], elem=["col0"])
B_K16N8_B16 = _map(_TIG_ROWPAIRS_GROUP_COLS, reg=["row3"], elem=["row0"])

# m16n8k8, .f16/.bf16 inputs.
A_M16K8_B16 = _map(_GROUP_ROWS_TIG_COLPAIRS, reg=["row3"], elem=["col0"])
B_K8N8_B16 = _map(_TIG_ROWPAIRS_GROUP_COLS, elem=["row0"])

# m16n8k8, .tf32 inputs: one element per register.
A_M16K8_TF32 = _map(_GROUP_ROWS_TIG_COLS, reg=["row3", "col2"])
B_K8N8_TF32 = _map(_TIG_ROWS_GROUP_COLS, reg=["row2"])


def _form(name, shape, D, A, B, C, layout_a, layout_b, layout_c, layout_d=None):
    # PTX ISA "mma" target requirements: m16n8k8 with .f16 inputs from sm_75, the rest from sm_80.
    min_cc = 75 if shape == (16, 8, 8) and A == "f16" else 80
    return {
        "name": name, "shape": shape, "min_cc": min_cc, "sass": "HMMA",
        "types": {"A": A, "B": B, "C": C, "D": D},
        "layouts": {"A": layout_a, "B": layout_b, "C": layout_c, "D": layout_d or layout_c},
    }


# The table.  ``name`` is the PTX spelling after ``mma.sync.aligned.``.
MMA_FORMS = [
    _form("m16n8k16.row.col.f16.f16.f16.f16", (16, 8, 16), "f16", "f16", "f16", "f16",
          A_M16K16_B16, B_K16N8_B16, ACC_F16),
    _form("m16n8k16.row.col.f32.f16.f16.f32", (16, 8, 16), "f32", "f16", "f16", "f32",
          A_M16K16_B16, B_K16N8_B16, ACC_F32),
    _form("m16n8k16.row.col.f32.bf16.bf16.f32", (16, 8, 16), "f32", "bf16", "bf16", "f32",
          A_M16K16_B16, B_K16N8_B16, ACC_F32),
    _form("m16n8k8.row.col.f16.f16.f16.f16", (16, 8, 8), "f16", "f16", "f16", "f16",
          A_M16K8_B16, B_K8N8_B16, ACC_F16),
    _form("m16n8k8.row.col.f32.f16.f16.f32", (16, 8, 8), "f32", "f16", "f16", "f32",
          A_M16K8_B16, B_K8N8_B16, ACC_F32),
    _form("m16n8k8.row.col.f32.bf16.bf16.f32", (16, 8, 8), "f32", "bf16", "bf16", "f32",
          A_M16K8_B16, B_K8N8_B16, ACC_F32),
    _form("m16n8k8.row.col.f32.tf32.tf32.f32", (16, 8, 8), "f32", "tf32", "tf32", "f32",
          A_M16K8_TF32, B_K8N8_TF32, ACC_F32),
]

# Combinations PTX/ptxas rejects, with the reason a user gets (checked with ptxas 13.0).
SHAPES_BY_INPUT = {"f16": ("m16n8k8", "m16n8k16"), "bf16": ("m16n8k8", "m16n8k16"),
                   "tf32": ("m16n8k4", "m16n8k8")}
