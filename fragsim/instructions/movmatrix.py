"""``movmatrix``: an 8x8 matrix of 16-bit elements transposed inside the warp's registers.

PTX ISA "movmatrix": each lane's one source register holds the fragment of a row-major 8x8 b16
matrix as ldmatrix delivers it (lane l: row l >> 2, columns 2*(l % 4) and 2*(l % 4) + 1, low
half first); the destination register holds the transposed matrix in the same fragment layout.
``src`` and ``dst`` map (lane, elem) to the (row, col) of the source matrix each one holds;
fragsim.movmatrix and gpu_check's kernel read nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

from fragsim.layout.linear import LinearLayout, from_bit_positions


@dataclass(frozen=True)
class RegisterOp:
    name: str               # fragsim's short spelling ("movmatrix.trans")
    ptx: str                # the PTX instruction
    kind: str               # gpu_check's kernel kind
    sass: str               # the SASS instruction ptxas emits for it (sm_90: MOVM.16.MT88)
    min_cc: int             # lowest compute capability that has it (PTX ISA: sm_75)
    src: LinearLayout       # (lane, elem) -> (row, col) of the source matrix in the source register
    dst: LinearLayout       # (lane, elem) -> (row, col) of the source matrix in the destination register


def _map(lane, elem):
    return from_bit_positions(("row", "col"), {"lane": lane, "reg": [], "elem": elem})


MOVMATRIX = RegisterOp(
    name="movmatrix.trans", ptx="movmatrix.sync.aligned.m8n8.trans.b16", kind="movm", sass="MOVM", min_cc=75,
    src=_map(["col1", "col2", "row0", "row1", "row2"], ["col0"]),     # row = lane >> 2, col = 2*(lane % 4) + elem
    dst=_map(["row1", "row2", "col0", "col1", "col2"], ["row0"]))     # the transpose: row and col swapped

REGISTER_OPS = {MOVMATRIX.name: MOVMATRIX}
