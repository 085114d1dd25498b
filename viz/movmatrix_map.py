"""movmatrix's fragment maps, before and after: two 8x8 grids of the source matrix side by side.

Cell (r, c) of the left grid reads ``T5`` / ``e1``: lane 5 holds source element (r, c) in the high
half (e1) of its source register; the right grid, the lane and half holding that same element in
the destination register.  Colours are the lanes' (viz/palette.py), so the row bands on the left
becoming column bands on the right is the transpose; a register's two halves are one box.
Everything is read from the instruction table (fragsim/instructions/movmatrix.py).
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import MATRIX_ROWS, WARP_LANES
from fragsim.instructions.movmatrix import MOVMATRIX

from ._figure import TEXT_FONT, Canvas, axis_numbers, draw_cells, finish, label_font
from .palette import LANE_RGB

GAP = 0.06          # white space around each register box, in cells
SPLIT = 2.0         # cells between the two grids
N = MATRIX_ROWS      # the square 8x8 matrix
SIDES = (("src", "before: source register", "row-major 8x8 .b16; lane l: row l/4, columns 2(l%4), +1"),
         ("dst", "after: destination register", "the same fragment layout of the transpose"))


def owners(which: str) -> tuple[np.ndarray, np.ndarray]:
    """(lane, half) grids (8, 8): who holds source element (r, c) in the ``src`` or ``dst`` register."""
    rows, cols = getattr(MOVMATRIX, which).table()          # (32, 1, 2)
    lane, half = np.empty((N, N), np.int64), np.empty((N, N), np.int64)
    lane[rows[:, 0], cols[:, 0]] = np.arange(WARP_LANES)[:, None]
    half[rows[:, 0], cols[:, 0]] = np.arange(2)[None, :]
    return lane, half


def cell_labels(which: str) -> list[list[str]]:
    lane, half = owners(which)
    return [[f"T{lane[r, c]}\ne{half[r, c]}" for c in range(N)] for r in range(N)]


def _insets(which: str) -> np.ndarray:
    """Per cell (left, right, top, bottom) gaps: none between the two halves of one register."""
    rows, cols = getattr(MOVMATRIX, which).table()
    ins = np.full((N, N, 4), GAP)
    for (r0, r1), (c0, c1) in zip(rows[:, 0], cols[:, 0]):
        if r0 == r1 and c1 == c0 + 1:          # e0 | e1 side by side
            ins[r0, c0, 1] = ins[r1, c1, 0] = 0.0
        elif c0 == c1 and r1 == r0 + 1:        # e0 over e1
            ins[r0, c0, 3] = ins[r1, c1, 2] = 0.0
    return ins


def draw_movmatrix_map(path=None):
    """The picture of movmatrix.sync.aligned.m8n8.trans.b16; saved to ``path`` (.png/.svg/.pdf) if given."""
    cv = Canvas(2 * N + SPLIT, N, pad=(0.5, 0.3, 1.2, 0.75), target=path)
    fs = label_font(cv.cell_pt * (1 - 2 * GAP), 2, 3)
    for i, (which, head, sub) in enumerate(SIDES):
        x0 = i * (N + SPLIT)
        lane, _ = owners(which)
        draw_cells(cv, x0, 0, LANE_RGB[lane], cell_labels(which), fontsize=fs,
                   gids=[[f"{which}-{r}-{c}" for c in range(N)] for r in range(N)], insets=_insets(which))
        axis_numbers(cv, x0, 0, N, N)
        cv.text(x0, -cv.units(0.42), f"{head}\n{sub}", size=TEXT_FONT - 1, va="bottom", gid=f"{which}-head")
    cv.text(N + SPLIT / 2, N / 2, "\u2192", size=TEXT_FONT + 8, ha="center", color="#555555")
    cv.title(MOVMATRIX.ptx)
    cv.text(0, N + cv.units(0.1), "cell (r, c) of the source matrix: the lane (T#) and half (e0 low, e1 high) "
            "holding it\ncolour: lane; joined cells: one 32-bit register", size=TEXT_FONT - 1, va="top",
            color="#333333")
    return finish(cv, path)
