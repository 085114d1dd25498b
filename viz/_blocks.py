"""Which 8x8 ldmatrix/stmatrix matrices make up an mma operand, read off the two tables.

An operand can be moved by one ``ldmatrix.x{n}[.trans]`` when, for every register i, the cells the
fragment map gives to register i are exactly the cells that ldmatrix's movement (matrix i = register
i) gives to the same lane, half by half, for one way of laying the operand out in shared memory:
its rows as 16-byte memory rows (``major="row"``) or its columns (``major="col"``).  Nothing here
restates a PTX layout: both sides come from the instruction table (``MmaForm.coords`` and the
ldmatrix entries' ``movement``), so the outlines and flows the pictures draw follow the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fragsim.facts.hardware import MATRIX_ROW_BYTES, MATRIX_ROWS, WARP_LANES
from fragsim.instructions import SHARED_OPS, MmaForm, check_operand, lookup
from fragsim.instructions.ldmatrix import NUMS


@dataclass(frozen=True)
class Block:
    """Matrix ``index`` (= register index) of the operand: rows row0..row0+nrows, cols col0..col0+ncols."""

    index: int
    row0: int
    col0: int
    nrows: int
    ncols: int


@dataclass(frozen=True)
class Storage:
    """One shared-memory layout of an operand that one ldmatrix (or stmatrix) moves in a single instruction.

    major  "row": memory rows are operand rows (row-major); "col": memory rows are operand columns
    trans  whether the instruction needs .trans
    """

    form: MmaForm
    operand: str
    major: str
    trans: bool
    blocks: tuple

    @property
    def num(self) -> int:
        return len(self.blocks)

    def op_name(self, family: str = "ldmatrix") -> str:
        return f"{family}.x{self.num}{'.trans' if self.trans else ''}"

    @property
    def elem_bits(self) -> int:
        return self.form.fmt(self.operand).storage_bits

    @property
    def per_row(self) -> int:
        """Elements in one 16-byte memory row."""
        return MATRIX_ROW_BYTES * 8 // self.elem_bits

    @property
    def mem_shape(self) -> tuple[int, int]:
        """(memory rows, elements per memory row) of the densely stored operand."""
        r, c = self.form.matrix_shape(self.operand)
        return (r, c) if self.major == "row" else (c, r)

    @property
    def pitch(self) -> int:
        return self.mem_shape[1] * self.elem_bits // 8

    def mem_coords(self, row, col):
        """Operand (row, col) -> (memory row, element within the memory row)."""
        return (row, col) if self.major == "row" else (col, row)

    def operand_coords(self, mrow, mcol):
        return (mrow, mcol) if self.major == "row" else (mcol, mrow)

    def row_starts(self) -> list[tuple[int, int]]:
        """For each address lane 8i+j: the operand (row, col) where its 16-byte memory row starts."""
        out: list[tuple[int, int]] = []
        for b in self.blocks:
            mr0, mc0 = self.mem_coords(b.row0, b.col0)
            out.extend(self.operand_coords(mr0 + j, mc0) for j in range(MATRIX_ROWS))
        return out

    def addrs(self) -> np.ndarray:
        """The 32 lanes' row addresses for the operand stored densely at offset 0 (lanes past the
        address lanes repeat them: the instruction ignores their addresses)."""
        starts = [self.mem_coords(r, c) for r, c in self.row_starts()]
        a = np.array([mr * self.pitch + mc * self.elem_bits // 8 for mr, mc in starts], dtype=np.int64)
        return np.resize(a, WARP_LANES)

    def describe(self) -> str:
        return (f"{self.operand} stored {'row' if self.major == 'row' else 'column'}-major "
                f"({self.mem_shape[0]} rows of {self.pitch} bytes): {self.op_name()}")


def _matches(form: MmaForm, op: str, major: str, trans: bool):
    bits = form.fmt(op).storage_bits
    nregs = form.nregs(op)
    # .trans moves 16-bit elements (it cannot transpose others); an element wider than a register
    # (f64) is not a .b16 matrix's either
    if nregs not in NUMS or bits > 32 or (trans and bits != 16):
        return None
    rows, cols = form.coords(op)                      # (32, nregs, epr)
    u, v = (rows, cols) if major == "row" else (cols, rows)
    movement = SHARED_OPS[f"ldmatrix.x{nregs}{'.trans' if trans else ''}"].movement
    assert movement is not None                       # every ldmatrix entry carries its data movement
    src, col16 = movement.table()                     # (32, nregs, 2)
    per_row = MATRIX_ROW_BYTES * 8 // bits
    blocks = []
    for r in range(nregs):
        u0, v0 = int(u[:, r].min()), int(v[:, r].min())
        for e in range(u.shape[2]):
            # element e of register r sits at bit e*bits of the register: in its low or high half
            h, bit = divmod(e * bits, 16)
            if not (np.array_equal(u[:, r, e] - u0, src[:, r, h] % MATRIX_ROWS)
                    and np.array_equal((v[:, r, e] - v0) * bits, 16 * col16[:, r, h] + bit)):
                return None
        if bits == 32 and not np.array_equal(src[:, r, 1], src[:, r, 0]):
            return None
        if major == "row":
            blocks.append(Block(r, u0, v0, MATRIX_ROWS, per_row))
        else:
            blocks.append(Block(r, v0, u0, per_row, MATRIX_ROWS))
    return tuple(blocks)


@lru_cache(maxsize=None)
def _storages(form: MmaForm, op: str) -> tuple:
    out = []
    for major in ("row", "col"):          # the operand as PTX writes it first
        for trans in (False, True):
            blocks = _matches(form, op, major, trans)
            if blocks is not None:
                out.append(Storage(form, op, major, trans, blocks))
    return tuple(out)


def storages(form, operand) -> tuple:
    """Every layout of ``operand`` that one ldmatrix/stmatrix moves, the row-major one first; empty
    where none does (f32 accumulators: ldmatrix moves 16-bit halves, not f32 pairs)."""
    return _storages(lookup(form), check_operand(operand))


def blocks(form, operand) -> tuple:
    """The 8x8 (16-byte-row) matrices of the operand, by register, or () if ldmatrix cannot move it."""
    s = storages(form, operand)
    return s[0].blocks if s else ()
