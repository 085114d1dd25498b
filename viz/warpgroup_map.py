"""Fragment maps of wgmma (the warpgroup accumulator D/C and A in registers), drawn like the mma.sync
maps: each cell reads ``T37`` / ``d5`` (thread 37 of the warpgroup holds element d5), coloured by
its lane (thread % 32, the mma.sync palette); the four warps' row bands are outlined and tagged
``warp 0``..``warp 3``; the two halves of an .f16x2 register are joined into one box.  Everything is
read from the wgmma table (fragsim/instructions/wgmma.py).

Large maps (m64n256: 16,384 cells) stay quick and legible as the other renderers do (viz/_figure.py):
the canvas caps the picture's size, so cells shrink; labels shrink to ``T37`` and then drop while the
colours, warp bands and numbers stay; cells are one collection and labels glyph outlines in PNG/PDF.
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import WARP_LANES, WARPGROUP_WARPS
from fragsim.instructions.wgmma import THREADS, lookup_wgmma
from fragsim.sim.wgmma import owners

from ._figure import TEXT_FONT, TINY_CELL, Canvas, axis_numbers, draw_cells, finish, fit_labels, outline
from .palette import LANE_RGB, OUTLINE

GAP = 0.06          # white space around each register box, in cells
MAX_IN = 18.0       # inches: the widest or tallest a map gets (cells shrink to fit)
MIN_WIDTH_IN = 5.6  # inches: room for the title and the key beside a narrow map
WHAT = {"A": "A in registers", "C": "accumulator C", "D": "accumulator D"}


def _insets(thread, reg):
    """Per cell (left, right, top, bottom) gaps: none between the two elements of one register."""
    ins = np.full(thread.shape + (4,), GAP)
    same = (thread[:, 1:] == thread[:, :-1]) & (reg[:, 1:] == reg[:, :-1])     # side by side
    ins[:, :-1, 1][same] = 0.0
    ins[:, 1:, 0][same] = 0.0
    return ins


def cell_labels(form, operand):
    """The cells' texts: ("T37\\nd5" grid, "T37" grid)."""
    f = lookup_wgmma(form)
    op = operand.upper()
    thread, reg, half = owners(f, op)
    epr = f.elems_per_reg(op)
    t = np.char.add("T", thread.astype(str))
    full = np.char.add(np.char.add(t, f"\n{op.lower()}"), (reg * epr + half).astype(str))
    return full.astype(object), t.astype(object)


def draw_warpgroup_map(form, operand, path=None):
    """The picture of one operand's warpgroup fragment map; saved to ``path`` (.png/.svg/.pdf) if given."""
    f = lookup_wgmma(form)
    op = operand.upper()
    thread, reg, _ = owners(f, op)
    R, C = thread.shape
    unit = min(0.42, MAX_IN / C, MAX_IN / R)      # inches per cell, as the canvas will pick it
    cv = Canvas(max(C, MIN_WIDTH_IN / unit), R, cell_in=unit, max_in=MAX_IN * 2, pad=(0.55, 0.2, 1.05, 0.5),
                target=path)
    colors = LANE_RGB[thread % WARP_LANES]
    full, short = cell_labels(f, op)
    labels, fs = fit_labels(cv.cell_pt * (1 - 2 * GAP), full, short, limit=cv.label_limit)
    if labels is None and cv.cell_pt < TINY_CELL:
        # colour only, no gaps: one image (a 64 x 256 map is 16,384 cells: as polygons, MBs of SVG)
        cv.ax.imshow(colors, extent=(0, C, R, 0), interpolation="nearest", aspect="auto")
    else:
        gids = [[f"{op}-{r}-{c}" for c in range(C)] for r in range(R)]
        draw_cells(cv, 0, 0, colors, labels, fontsize=fs, gids=gids, insets=_insets(thread, reg))
    lw = max(1.0, min(2.0, cv.cell_pt * 0.08))
    band = R // WARPGROUP_WARPS                   # rows of D (and of A) each warp holds: 16
    outline(cv, [(0, band * w, C, band) for w in range(WARPGROUP_WARPS)], color=OUTLINE, lw=lw)
    for w in range(WARPGROUP_WARPS):
        cv.text(-cv.units(0.25), band * w + band / 2, f"warp {w}", size=TEXT_FONT - 1, rotation=90, ha="right", va="center",
                gid=f"warp-{w}")
    axis_numbers(cv, 0, 0, R, C, left=False)
    axis_numbers(cv, 0, 0, R, C, top=False, step=8)
    cv.title(f"wgmma.mma_async {f.name}\n{WHAT[op]}: {R} x {C}, {THREADS} threads x {f.nregs(op)} registers")
    if labels is None:
        key = ("colour: lane = thread % 32\n(cells too small or too many for labels: draw a smaller N, or a PNG, "
               "to read them)")
    else:
        key = ("cell: the thread (T#) holding the element" + (" and its PTX name" if labels is full else "")
               + "\ncolour: lane = thread % 32" + ("; joined cells: one 32-bit register" if f.elems_per_reg(op) > 1
                                                    else ""))
    cv.text(0, R + cv.units(0.1), key, size=TEXT_FONT - 1, va="top", color="#333333")
    return finish(cv, path)
