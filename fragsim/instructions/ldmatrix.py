"""ldmatrix / stmatrix (m8n8, .b16) as data: which row address and which column feed each
(lane, register, half).

Outputs: ``src`` = the lane whose address gives the row (8*matrix + row: lanes 8i..8i+7
hold the row addresses of matrix i), ``col`` = the 16-bit element within that 16-byte row.
Without .trans lane l receives row l/4, columns 2*(l%4)+{0,1} of matrix i in register i;
with .trans it receives column l/4, rows 2*(l%4)+{0,1}: each 8x8 matrix is transposed.
stmatrix moves the same elements in the other direction.
"""

from __future__ import annotations

from ..layout import from_bit_positions

ROW_BYTES = 16          # one 8-element row of 16-bit values
NUMS = (1, 2, 4)


def ldsm_layout(num: int, trans: bool):
    reg = ["src3", "src4"][: {1: 0, 2: 1, 4: 2}[num]]
    if trans:
        return from_bit_positions(("src", "col"), {
            "lane": ["src1", "src2", "col0", "col1", "col2"], "reg": reg, "elem": ["src0"]})
    return from_bit_positions(("src", "col"), {
        "lane": ["col1", "col2", "src0", "src1", "src2"], "reg": reg, "elem": ["col0"]})


def ptx_name(kind: str, num: int, trans: bool) -> str:
    return f"{kind}.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
