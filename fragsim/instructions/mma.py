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

from fragsim.layout.linear import from_bit_positions

RC = ("row", "col")


def fragment_map(lane, reg=(), elem=()):
    """A fragment map (lane, reg, elem) -> (row, col), each input bit naming the row/col bit it sets."""
    return from_bit_positions(RC, {"lane": lane, "reg": list(reg), "elem": list(elem)})


# Lane bits: tig (threadID_in_group) is lane bits 0-1, groupID lane bits 2-4.
GROUP_ROWS_TIG_COLPAIRS = ["col1", "col2", "row0", "row1", "row2"]   # row = groupID, col = 2*tig
TIG_ROWPAIRS_GROUP_COLS = ["row1", "row2", "col0", "col1", "col2"]   # row = 2*tig, col = groupID
GROUP_ROWS_TIG_COLS = ["col0", "col1", "row0", "row1", "row2"]       # row = groupID, col = tig
TIG_ROWS_GROUP_COLS = ["row0", "row1", "col0", "col1", "col2"]       # row = tig, col = groupID

# Accumulators (all shapes here): c0,c1 row groupID; c2,c3 row groupID+8; col 2*tig + (i&1).
ACC_F16 = fragment_map(GROUP_ROWS_TIG_COLPAIRS, reg=["row3"], elem=["col0"])
ACC_F32 = fragment_map(GROUP_ROWS_TIG_COLPAIRS, reg=["col0", "row3"])

# m16n8k16, .f16/.bf16 inputs (PTX ISA figures "A/B fragment layout for m16n8k16 .f16/.bf16").
A_M16K16_B16 = fragment_map(GROUP_ROWS_TIG_COLPAIRS, reg=["row3", "col3"], elem=["col0"])
B_K16N8_B16 = fragment_map(TIG_ROWPAIRS_GROUP_COLS, reg=["row3"], elem=["row0"])

# m16n8k8, .f16/.bf16 inputs.
A_M16K8_B16 = fragment_map(GROUP_ROWS_TIG_COLPAIRS, reg=["row3"], elem=["col0"])
B_K8N8_B16 = fragment_map(TIG_ROWPAIRS_GROUP_COLS, elem=["row0"])

# m16n8k8, .tf32 inputs: one element per register.
A_M16K8_TF32 = fragment_map(GROUP_ROWS_TIG_COLS, reg=["row3", "col2"])
B_K8N8_TF32 = fragment_map(TIG_ROWS_GROUP_COLS, reg=["row2"])


# Integer and single-bit inputs (PTX ISA figures "A/B fragment layout for m16n8k16/k32 .u8/.s8",
# "... m16n8k32/k64 .u4/.s4", "... m16n8k128/k256 .b1"): every register holds 32 consecutive bits
# of k -- 4 (8-bit), 8 (4-bit) or 32 (1-bit) elements, lowest k in the low bits.  With ``p`` =
# log2(elements per register): A's row = groupID + 8*(reg & 1), col = tig*2**p + elem + (reg >> 1)*2**(p+2);
# B's row = tig*2**p + elem + reg*2**(p+2), col = groupID.  (The 16-bit maps above are p = 1.)
def _int_a(p, nregs):
    return fragment_map([f"col{p}", f"col{p + 1}", "row0", "row1", "row2"], reg=["row3", f"col{p + 2}"][:nregs.bit_length() - 1],
                elem=[f"col{i}" for i in range(p)])


def _int_b(p, nregs):
    return fragment_map([f"row{p}", f"row{p + 1}", "col0", "col1", "col2"], reg=[f"row{p + 2}"][:nregs.bit_length() - 1],
                elem=[f"row{i}" for i in range(p)])


# f64 (PTX ISA "Matrix Fragments for mma.m8n8k4 / m16n8k4 / m16n8k8 / m16n8k16 with .f64"), in units
# of f64 registers (each two uint32 words, low word first: the table's ``nregs`` counts words).
# m8n8k4: a0 at (groupID, tig), b0 at (tig, groupID), c0,c1 at (groupID, 2*tig + i).
A_M8K4_F64 = fragment_map(GROUP_ROWS_TIG_COLS)
B_K4N8_F64 = fragment_map(TIG_ROWS_GROUP_COLS)
ACC_M8N8_F64 = fragment_map(GROUP_ROWS_TIG_COLPAIRS, reg=["col0"])
# m16n8k{4,8,16}: a_i at (groupID + 8*(i & 1), tig + 4*(i >> 1)); b_i at (tig + 4*i, groupID);
# c/d as the f32 accumulators (ACC_F32).
A_M16K4_F64 = fragment_map(GROUP_ROWS_TIG_COLS, reg=["row3"])
A_M16K8_F64 = A_M16K8_TF32
A_M16K16_F64 = fragment_map(GROUP_ROWS_TIG_COLS, reg=["row3", "col2", "col3"])
B_K8N8_F64 = B_K8N8_TF32
B_K16N8_F64 = fragment_map(TIG_ROWS_GROUP_COLS, reg=["row2", "row3"])


def _form(name, shape, D, A, B, C, layout_a, layout_b, layout_c, layout_d=None, *, min_cc=None, sass="HMMA",
          modifiers=(), groups=1):
    # PTX ISA "mma" target requirements: m16n8k8 with .f16 inputs from sm_75, the rest from sm_80
    # (the m16n8k* .f64 shapes, fp8 and m8n8k4 .f16 given by their entries).
    if min_cc is None:
        min_cc = 75 if shape == (16, 8, 8) and A == "f16" else 80
    return {
        "name": name, "shape": shape, "min_cc": min_cc, "sass": sass, "modifiers": tuple(modifiers),
        "groups": groups, "types": {"A": A, "B": B, "C": C, "D": D},
        "layouts": {"A": layout_a, "B": layout_b, "C": layout_c, "D": layout_d or layout_c},
    }


def _int_forms():
    """s8/u8 m16n8k16, m16n8k32 and s4/u4 m16n8k32, m16n8k64: every sign pair, with and without
    .satfinite; b1 m16n8k128, m16n8k256 with .and.popc and .xor.popc.  Accumulators s32."""
    out = []
    for bits, signs, ks in ((8, ("s8", "u8"), (16, 32)), (4, ("s4", "u4"), (32, 64))):
        p = (32 // bits).bit_length() - 1
        for k in ks:
            na = k * bits // 64               # A: 16 rows x k elements over 32 lanes, 32 bits a register
            for a in signs:
                for b in signs:
                    for sat in ((), ("satfinite",)):
                        name = ".".join((f"m16n8k{k}", "row", "col") + sat + ("s32", a, b, "s32"))
                        out.append(_form(name, (16, 8, k), "s32", a, b, "s32", _int_a(p, na), _int_b(p, na // 2),
                                         ACC_F32, sass="IMMA", modifiers=sat))
    for k in (128, 256):
        for op in ("and", "xor"):
            out.append(_form(f"m16n8k{k}.row.col.s32.b1.b1.s32.{op}.popc", (16, 8, k), "s32", "b1", "b1", "s32",
                             _int_a(5, k // 64), _int_b(5, k // 128), ACC_F32, sass="BMMA", modifiers=(op, "popc")))
    return out


def _f64_forms():
    """f64 m8n8k4 (sm_80) and m16n8k4, m16n8k8, m16n8k16 (sm_90)."""
    return [
        _form("m8n8k4.row.col.f64.f64.f64.f64", (8, 8, 4), "f64", "f64", "f64", "f64",
              A_M8K4_F64, B_K4N8_F64, ACC_M8N8_F64, sass="DMMA"),
        _form("m16n8k4.row.col.f64.f64.f64.f64", (16, 8, 4), "f64", "f64", "f64", "f64",
              A_M16K4_F64, B_K4N8_F64, ACC_F32, min_cc=90, sass="DMMA"),
        _form("m16n8k8.row.col.f64.f64.f64.f64", (16, 8, 8), "f64", "f64", "f64", "f64",
              A_M16K8_F64, B_K8N8_F64, ACC_F32, min_cc=90, sass="DMMA"),
        _form("m16n8k16.row.col.f64.f64.f64.f64", (16, 8, 16), "f64", "f64", "f64", "f64",
              A_M16K16_F64, B_K16N8_F64, ACC_F32, min_cc=90, sass="DMMA"),
    ]


def _fp8_forms():
    """e4m3/e5m2 m16n8k16 and m16n8k32 (sm_89+), every input pair, f32 or f16 accumulators.  The PTX
    ISA draws their A and B fragments like the 8-bit integers' (four k per register)."""
    out = []
    for k in (16, 32):
        na = k // 8
        for a in ("e4m3", "e5m2"):
            for b in ("e4m3", "e5m2"):
                for acc, lay in (("f32", ACC_F32), ("f16", ACC_F16)):
                    out.append(_form(f"m16n8k{k}.row.col.{acc}.{a}.{b}.{acc}", (16, 8, k), acc, a, b, acc,
                                     _int_a(2, na), _int_b(2, na // 2), lay, min_cc=89))
    return out


# m8n8k4 .f16 (PTX ISA "Matrix Fragments for mma.m8n8k4 with .f16 floating point type"): the warp runs
# four independent 8x8x4 products, one per quad pair (lanes 4q..4q+3 and 4q+16..4q+19).  The table
# stacks the four along rows: quad pair q's A, C, D are rows 8q..8q+7, its B rows 4q..4q+3.  Lane bits
# 0-1 are the index in the quad (tig), bits 2-3 the quad pair, bit 4 the upper quad (+4 rows of A, C, D;
# +4 columns of B).  A row-major: row = tig (+4), col = i; column-major: row = i (+4), col = tig.
# B row-major: row = tig, col = i (+4); column-major: row = i, col = tig (+4).  C/D .f16: row = tig (+4),
# col = i; .f32: row = (lane & 1) + (i & 2) (+4), col = (i & 4) + (lane & 2) + (i & 1).
_QP = ["row3", "row4"]                   # lane bits 2-3 (quad pair) -> rows 8q of A, C, D
A_M884 = {"row": fragment_map(["row0", "row1"] + _QP + ["row2"], reg=["col1"], elem=["col0"]),
          "col": fragment_map(["col0", "col1"] + _QP + ["row2"], reg=["row1"], elem=["row0"])}
B_M884 = {"row": fragment_map(["row0", "row1", "row2", "row3", "col2"], reg=["col1"], elem=["col0"]),
          "col": fragment_map(["col0", "col1", "row2", "row3", "col2"], reg=["row1"], elem=["row0"])}
ACC_M884_F16 = fragment_map(["row0", "row1"] + _QP + ["row2"], reg=["col1", "col2"], elem=["col0"])
ACC_M884_F32 = fragment_map(["row0", "col1"] + _QP + ["row2"], reg=["col0", "row1", "col2"])


def _m884_forms():
    """f16 m8n8k4 (sm_70+): .row/.col for A and B, (D, C) in (f16, f16), (f32, f16), (f32, f32)."""
    acc = {"f16": ACC_M884_F16, "f32": ACC_M884_F32}
    return [_form(f"m8n8k4.{la}.{lb}.{d}.f16.f16.{c}", (8, 8, 4), d, "f16", "f16", c, A_M884[la], B_M884[lb],
                  acc[c], acc[d], min_cc=70, sass="FFMA", groups=4)
            for la in ("row", "col") for lb in ("row", "col") for d, c in (("f16", "f16"), ("f32", "f16"), ("f32", "f32"))]


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
    # m16n8k4 .tf32: a0 (groupID, tig), a1 (groupID + 8, tig); b0 (tig, groupID) -- the f64 m16n8k4 maps.
    _form("m16n8k4.row.col.f32.tf32.tf32.f32", (16, 8, 4), "f32", "tf32", "tf32", "f32",
          A_M16K4_F64, B_K4N8_F64, ACC_F32),
] + _fp8_forms() + _int_forms() + _f64_forms() + _m884_forms()

# Spellings PTX gives the same instruction: .rn is the only (and default) rounding of .f64 mma.
ALIASES = {f["name"].replace(".row.col.", ".row.col.rn."): f["name"] for f in MMA_FORMS if f["types"]["A"] == "f64"}

