"""The TMA view: one tiled ``cp.async.bulk.tensor`` box in global memory next to its image in shared
memory, 16-byte chunk by 16-byte chunk.

``draw_tma(tmap, coords, dst=0)`` draws, side by side:

* the box as the copy walks it: one row per box row (every outer coordinate, innermost fastest), one
  cell per 16-byte chunk of the inner dimension, coloured by the chunk's column; chunks whose elements
  all lie outside the tensor are grey ("fill": zeros or NaN), partly outside ones pale;
* shared memory from the 128-byte line of ``dst``: 128-byte lines x eight 16-byte slots, each slot
  labelled with the (row, chunk) the copy writes there and coloured like it -- the swizzle is the
  permutation of colours within each line; dashed lines mark where the swizzle pattern restarts.

``tma_layout(tmap, coords, dst)`` is what the view shows, as arrays.
"""

from __future__ import annotations

import colorsys
from typing import TYPE_CHECKING

import numpy as np

from fragsim.facts.hardware import MATRIX_ROW_BYTES, WAVEFRONT_BYTES
from fragsim.facts.tma import SWIZZLE_CHUNK, SWIZZLE_LINE
from fragsim.tma import box_layout

from ._figure import TEXT_FONT, Canvas, draw_cells, finish, fit_labels, lines
from .palette import EMPTY, PADDING

if TYPE_CHECKING:      # annotations only: matplotlib loads when a picture is drawn
    from matplotlib.figure import Figure

SLOTS = SWIZZLE_LINE // SWIZZLE_CHUNK         # 16-byte slots of a 128-byte line
MAX_ROWS = 64


def _column_rgb(c: int, ncols: int):
    return colorsys.hls_to_rgb((c / max(ncols, 1) * 0.85 + 0.55) % 1.0, 0.70, 0.55)


def _pale(rgb, f: float = 0.55):
    return tuple(1 - (1 - x) * f for x in rgb)


def tma_layout(tmap, coords, dst: int = 0):
    """(chunk_addr, inside, row_coords, col_coords): per box row and 16-byte chunk (rows, chunks) the shared
    address the chunk lands at and how many of its elements lie inside the tensor (0..per chunk); the
    outer coordinates of each row; the inner coordinate of each chunk's first element."""
    box = box_layout(tmap, coords, dst)
    e = tmap.element_bytes
    per = SWIZZLE_CHUNK // e
    inner = tmap.smem_box[0]
    rows, chunks = box.in_bounds.size // inner, inner // per
    first = np.arange(rows)[:, None] * inner + np.arange(chunks)[None, :] * per
    chunk_addr = box.shared_address[first]
    inside = box.in_bounds.reshape(rows, chunks, per).sum(axis=2)
    return chunk_addr, inside, box.coords[first[:, 0], 1:], box.coords[first[0], 0]


def draw_tma(tmap, coords, dst: int = 0, *, path=None) -> "Figure":
    """Box in global memory -> its image in shared memory (see the module docstring)."""
    chunk_addr, inside, row_coords, col_coords = tma_layout(tmap, coords, dst)
    per = SWIZZLE_CHUNK // tmap.element_bytes
    rows_all, C = chunk_addr.shape
    R = min(rows_all, MAX_ROWS)
    chunk_addr, inside = chunk_addr[:R], inside[:R]
    first_line = dst // SWIZZLE_LINE
    last_line = int(chunk_addr.max()) // SWIZZLE_LINE
    nl = last_line - first_line + 1
    height = max(R, nl) + 1.5
    unit = min(0.5, 15.0 / (C + SLOTS + 6), 14.0 / height)
    gx = max(C + 2.5, 4.8 / unit)                      # where the memory grid starts (room for its labels)
    cv = Canvas(gx + SLOTS + 0.5, height, cell_in=unit, max_in=30.0, pad=(1.0, 0.2, 1.3, 0.3), target=path)
    swz = tmap.swizzle
    period = tmap.swizzle_span * SWIZZLE_LINE // SWIZZLE_CHUNK
    row = (dst // SWIZZLE_LINE) % max(1, period // SWIZZLE_LINE)
    how = ("no swizzle" if swz == "none" else
           f"swizzle {swz}: 16-byte chunk bits 4.. ^= line bits 7.. of the absolute shared address, "
           f"repeating every {period} bytes; dst {dst:#x} starts at pattern row {row}")
    cv.title(f"{tmap!r}\nbox at coords {tuple(coords)} -> shared {dst:#x}, {tmap.box_bytes} bytes; {how}")

    # the box in global memory
    colors = np.array([[_column_rgb(c, C) for c in range(C)] for _ in range(R)])
    labels = np.empty((R, C), dtype=object)
    for r in range(R):
        for c in range(C):
            labels[r, c] = f"{r},{c}"
            if inside[r, c] == 0:
                colors[r, c] = _rgb(PADDING)
            elif inside[r, c] < per:
                colors[r, c] = _pale(colors[r, c])
    lab, fs = fit_labels(cv.cell_pt * 0.9, labels)
    draw_cells(cv, 0, 0, colors, lab, fontsize=fs, gids=[[f"box-{r}-{c}" for c in range(C)] for r in range(R)])
    small = max(5.0, min(TEXT_FONT - 1, cv.cell_pt * 0.28))
    step = 1 if cv.cell_pt >= small * 1.3 else 4
    for c in range(0, C, step):
        cv.text(c + 0.5, -0.1, str(int(col_coords[c])), size=small, ha="center", va="bottom", color="#555555")
    for r in range(0, R, step):
        outer = ",".join(str(int(x)) for x in row_coords[r])
        cv.text(-0.1, r + 0.5, outer, size=small, ha="right", color="#555555")
    cv.text(0, -cv.units(0.32), "global: box rows x 16-byte chunks (inner coordinate above,\nouter at the left); "
            "grey: outside the tensor (filled), pale: partly", size=TEXT_FONT - 1, va="bottom", color="#333333")
    if rows_all > R:
        cv.text(0, R + 0.4, f"the first {R} of {rows_all} rows", size=TEXT_FONT - 1.5, va="top", color="#333333")

    # shared memory
    mcolors = np.tile(np.array(_rgb(EMPTY)), (nl, SLOTS, 1))
    mlabels = np.full((nl, SLOTS), "", dtype=object)
    for (r, c), a in np.ndenumerate(chunk_addr):
        ln, slot = int(a) // SWIZZLE_LINE - first_line, (int(a) % SWIZZLE_LINE) // SWIZZLE_CHUNK
        mcolors[ln, slot] = colors[r, c]
        mlabels[ln, slot] = labels[r, c]
    ml, mfs = fit_labels(cv.cell_pt * 0.9, mlabels)
    draw_cells(cv, gx, 0, mcolors, ml, fontsize=mfs,
               gids=[[f"smem-{first_line + i}-{s}" for s in range(SLOTS)] for i in range(nl)])
    for i in range(0, nl, step):
        cv.text(gx - 0.1, i + 0.5, f"{(first_line + i) * SWIZZLE_LINE:#06x}", size=small, ha="right",
                family="monospace")
    for s in range(SLOTS):
        cv.text(gx + s + 0.5, -0.1, f"{s * SWIZZLE_CHUNK}", size=small, ha="center", va="bottom", color="#555555")
    if period:
        marks = [i for i in range(1, nl + 1) if ((first_line + i) * SWIZZLE_LINE) % period == 0]
        lines(cv, [[(gx - 0.05, i), (gx + SLOTS + 0.05, i)] for i in marks], color="#222222", lw=1.2, ls="--")
    cv.text(gx, -cv.units(0.32), f"shared: {WAVEFRONT_BYTES}-byte lines x {MATRIX_ROW_BYTES}-byte slots (byte "
            "offset above);\neach slot: the (row, chunk) written there", size=TEXT_FONT - 1, va="bottom",
            color="#333333")
    return finish(cv, path)


def _rgb(c):
    from matplotlib.colors import to_rgb
    return to_rgb(c)
