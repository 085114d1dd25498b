"""Fragment maps, in the PTX ISA's figure style: which lane and register hold each element.

``draw_fragment_map(form, operand)``: one operand (A, B, C or D).  ``draw_mma(form)``: the combined
view (A on the left, B above, C/D at the corner where their rows and columns meet, as CuTe draws a
TiledMMA).  Each cell reads ``T5`` / ``a2`` (lane 5 holds element a2), coloured by lane; the two
16-bit halves of one 32-bit register are joined into one box (split by a dotted line, low half
left or on top); the 8x8 matrices that one ldmatrix/stmatrix moves are outlined and tagged
``m0``..``m3`` (matrix i lands in register i).  Everything is read from the instruction table.
"""

from __future__ import annotations

import numpy as np

from fragsim.instructions import check_operand, lookup

from . import _blocks, _groups
from ._figure import (TEXT_FONT, TINY_CELL, Canvas, axis_numbers, draw_cells, finish, fit_labels, label_font, lines,
                      outline, tag)
from .palette import LANE_RGB, OUTLINE, darker, text_color

GAP = 0.06          # white space around each register box, in cells
MAX_IN = 15.0       # inches: the largest a map gets (cells shrink to fit)
KEY_IN = 0.42       # inches: a lane swatch of the lane key
KEY = [
    "cell: the lane (T#) holding the element, and its PTX name (a0, b1, c2 ...)",
    "joined cells: the elements of one 32-bit register (lowest bits left / on top)",
    "bold outline m_i: the 8x8 .b16 matrix (16-byte rows) ldmatrix/stmatrix moves into register i",
]


def _register_geometry(form, op):
    """Per cell: insets (left, right, top, bottom) joining the elements of one register into one box,
    and the dotted divider segments between them."""
    rows, cols = form.coords(op)                 # (32, nregs, epr)
    R, C = form.matrix_shape(op)
    insets = np.full((R, C, 4), GAP)
    segs, colours = [], []
    for lane in range(rows.shape[0]):
        for reg in range(rows.shape[1]):
            r, c = rows[lane, reg], cols[lane, reg]
            if len(r) < 2:
                continue
            across = bool((r == r[0]).all() and (np.diff(c) == 1).all())     # a0 a1 side by side
            down = bool((c == c[0]).all() and (np.diff(r) == 1).all())       # b0 over b1
            for (r0, c0), (r1, c1) in zip(zip(r[:-1], c[:-1]), zip(r[1:], c[1:])):
                if across:
                    insets[r0, c0, 1] = insets[r1, c1, 0] = 0.0
                    segs.append([(c1, r1 + GAP), (c1, r1 + 1 - GAP)])
                elif down:
                    insets[r0, c0, 3] = insets[r1, c1, 2] = 0.0
                    segs.append([(c1 + GAP, r1), (c1 + 1 - GAP, r1)])
                else:
                    continue
                colours.append(darker(LANE_RGB[lane]))
    return insets, segs, colours


def cell_labels(form, operand):
    """The PTX figure's cell texts: ("T5\\na2" grid, "T5" grid) of the operand."""
    op = check_operand(operand)
    lane, reg, half = form.owner(op)
    full = np.empty(lane.shape, dtype=object)
    short = np.empty(lane.shape, dtype=object)
    for (r, c), ln in np.ndenumerate(lane):
        full[r, c] = f"T{ln}\n{form.element_name(op, reg[r, c], half[r, c])}"
        short[r, c] = f"T{ln}"
    return full, short


def _words(form, op) -> int:
    """32-bit registers one element spans (2 for f64)."""
    return max(1, form.fmt(op).storage_bits // 32)


def draw_operand(cv: Canvas, form, operand, x0: float, y0: float, *, gid_prefix: str = "", caption=None):
    """One operand's grid at (x0, y0) on ``cv``: cells, joined registers, ldmatrix matrices, numbers."""
    op = check_operand(operand)
    lane = form.owner(op)[0]
    R, C = lane.shape
    colors = LANE_RGB[lane]
    full, short = cell_labels(form, op)
    labels, fs = fit_labels(cv.cell_pt * (1 - 2 * GAP), full, short)
    insets, segs, seg_colours = _register_geometry(form, op)
    gids = [[f"{gid_prefix}{op}-{r}-{c}" for c in range(C)] for r in range(R)]
    draw_cells(cv, x0, y0, colors, labels, fontsize=fs, gids=gids, insets=insets)
    if segs and cv.cell_pt >= 2 * TINY_CELL:      # dividers in tiny cells are only noise
        shifted = [[(x0 + x, y0 + y) for x, y in s] for s in segs]
        lines(cv, shifted, color=seg_colours, lw=max(0.5, cv.cell_pt * 0.025), ls=(0, (1.5, 1.5)))
    blocks = _blocks.blocks(form, op)
    lw = max(1.0, min(2.4, cv.cell_pt * 0.07))
    outline(cv, [(x0 + b.col0, y0 + b.row0, b.ncols, b.nrows) for b in blocks], color=OUTLINE, lw=lw)
    for b in blocks:
        tag(cv, x0 + b.col0 + 0.08, y0 + b.row0 + 0.02, f"m{b.index}", color=OUTLINE,
            gid=f"{gid_prefix}{op}-m{b.index}")
    axis_numbers(cv, x0, y0, R, C)
    fmt = form.fmt(op).name
    text = caption or f"{op}: {R}x{C} {fmt}, {form.nregs(op)} reg{'s' if form.nregs(op) > 1 else ''}"
    cv.text(x0, y0 - cv.units(0.26), text, size=TEXT_FONT, va="bottom", weight="bold")
    return blocks


def _key_lines(form, ops) -> list[str]:
    out = [KEY[0]]
    if any(form.elems_per_reg(o) > 1 for o in ops):
        out.append(KEY[1])
    one = [o for o in ops if form.elems_per_reg(o) == 1 and _words(form, o) == 1]
    if one:
        out.append(f"{'/'.join(one)}: 32-bit elements, one register per cell")
    wide = [o for o in ops if _words(form, o) > 1]
    if wide:
        out.append(f"{'/'.join(wide)}: each element spans {_words(form, wide[0])} registers "
                   "(low word first)")
    if any(_blocks.blocks(form, o) for o in ops):
        out.append(KEY[2])
    for o in ops:
        st = _blocks.storages(form, o)
        if st:
            family = "ldmatrix/stmatrix" if o in "CD" else "ldmatrix"
            out.append(f"{o} moved by {' or '.join(s.op_name(family) + ' (' + s.major + '-major)' for s in st)}")
        else:
            out.append(f"{o}: {form.fmt(o).name} elements, a layout no ldmatrix/stmatrix (.b16) moves")
    return out


def _lane_key(cv: Canvas, x0: float, y0: float, size: float):
    """The lanes as the PTX ISA groups them: column = groupID (lane >> 2), row = threadID_in_group."""
    lanes = np.arange(32).reshape(8, 4).T                   # (tig, group)
    fs = label_font(cv.cell_pt * size, 1, 3)
    for t in range(4):
        for g in range(8):
            ln = lanes[t, g]
            cv.ax.add_patch(_rect(x0 + g * size, y0 + t * size, size * 0.94, size * 0.9, LANE_RGB[ln]))
            if fs:
                cv.text(x0 + (g + 0.47) * size, y0 + (t + 0.45) * size, f"T{ln}", size=fs, ha="center",
                        color=text_color(LANE_RGB[ln]))
    small = max(5.0, min(TEXT_FONT - 1, cv.cell_pt * 0.3))
    wide = cv.units(3.4) <= 8 * size          # the caption fits on one line above the key
    cv.text(x0, y0 - cv.units(0.06), "lanes: column = groupID," + (" " if wide else "\n") + "row = threadID_in_group",
            size=small, va="bottom", color="#333333")


def _rect(x, y, w, h, color):
    from matplotlib.patches import Rectangle
    return Rectangle((x, y), w, h, facecolor=color, edgecolor="none")


def _legend(cv: Canvas, x0: float, y0: float, form, ops) -> float:
    """The legend lines from (x0, y0) down; returns the height used (cells)."""
    text = _key_lines(form, ops)
    step = cv.units(0.17)
    for i, s in enumerate(text):
        cv.text(x0, y0 + step * i, s, size=TEXT_FONT - 1, va="top", color="#333333")
    return step * len(text)


def draw_fragment_map(form, operand, path=None, *, also=()) -> "Figure":  # noqa: F821 (matplotlib type, lazily)
    """The map of ``operand`` (A, B, C or D) of ``form``; saved to ``path`` (.png/.svg/.pdf) if given.
    ``also``: other forms with the same map of this operand, named in the title."""
    form = lookup(form)
    op = check_operand(operand)
    group = [form] + [lookup(f) for f in also]
    R, C = form.matrix_shape(op)
    more = _groups.others(group)
    unit = min(0.42, MAX_IN / C, MAX_IN / R)         # inches per cell, as the canvas will pick it
    width = max(C, 7.2 / unit)                       # room for the legend lines
    key = KEY_IN / unit                              # a lane swatch, in cells
    top = R + 0.5 / unit                             # the lane key, below the numbers' room
    cv = Canvas(width, top + 4 * key + 0.3 / unit, cell_in=unit, max_in=MAX_IN * 2,
                pad=(0.45, 0.2, 1.05 + 0.2 * bool(more), 0.25 + 0.17 * len(_key_lines(form, [op]))),
                target=path)
    cv.title(f"{form.ptx}\noperand {op}: {R}x{C} {_groups.types(group, op).replace('-', '/')}, "
             f"{form.nregs(op)} register(s) x {form.elems_per_reg(op)} element(s) per lane"
             + (f"\n{more}" if more else ""))
    draw_operand(cv, form, op, 0, 0)
    _lane_key(cv, 0, top, key)
    _legend(cv, 0, top + 4 * key + 0.3 / unit, form, [op])
    return finish(cv, path)


def draw_mma(form, path=None, *, gid_prefix: str = "", also=()) -> "Figure":  # noqa: F821
    """The combined view: A (M x K) on the left, B (K x N) above, C/D (M x N) where they meet.
    ``also``: other forms with the same view, named in the title."""
    form = lookup(form)
    group = [form] + [lookup(f) for f in also]
    M, N, K = form.shape
    same_cd = form.layout("C") == form.layout("D")
    gap = 1.6
    xc, yc = K + gap, K + gap                     # C's corner
    width = xc + N + (0 if same_cd else gap + N)
    ops = ["A", "B", "C"] if same_cd else ["A", "B", "C", "D"]
    more = _groups.others(group)
    cv = Canvas(width, yc + M, pad=(0.45, 0.2, 0.75 + 0.2 * bool(more), 0.3 + 0.17 * len(_key_lines(form, ops))),
                max_in=16.0, target=path)
    cv.title(form.ptx + (f"\n{more}" if more else ""))

    def caption(op, name=None):
        R, C = form.matrix_shape(op)
        n = form.nregs(op)
        return f"{name or op}: {R}x{C} {_groups.types(group, op).replace('-', '/')}, {n} reg{'s' if n > 1 else ''}"
    draw_operand(cv, form, "A", 0, yc, gid_prefix=gid_prefix, caption=caption("A"))
    draw_operand(cv, form, "B", xc, 0, gid_prefix=gid_prefix, caption=caption("B"))
    if same_cd:
        draw_operand(cv, form, "C", xc, yc, gid_prefix=gid_prefix,
                     caption=caption("C", "C/D") + "\n(d_i in c_i's register)")
    else:
        draw_operand(cv, form, "C", xc, yc, gid_prefix=gid_prefix, caption=caption("C"))
        draw_operand(cv, form, "D", xc + N + gap, yc, gid_prefix=gid_prefix, caption=caption("D"))
    size = min((K - 0.4) / 8, cv.units(KEY_IN))
    _lane_key(cv, 0, (K - 4 * size) / 2, size)
    _legend(cv, 0, yc + M + cv.units(0.2), form, ops)
    return finish(cv, path)
