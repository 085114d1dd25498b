"""Fragment maps, in the PTX ISA's figure style: which lane and register hold each element.

``draw_fragment_map(form, operand)``: one operand (A, B, C or D).  ``draw_mma(form)``: the combined
view (A on the left, B above, C/D at the corner where their rows and columns meet, as CuTe draws a
TiledMMA).  Each cell reads ``T5`` / ``a2`` (lane 5 holds element a2), coloured by lane; the two
16-bit halves of one 32-bit register are joined into one box (split by a dotted line, low half
left or on top); the 8x8 matrices that one ldmatrix/stmatrix moves are outlined and tagged
``m0``..``m3`` (matrix i lands in register i).  Everything is read from the instruction table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:      # annotations only: matplotlib loads when a picture is drawn
    from matplotlib.figure import Figure

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions import check_operand, lookup

from . import _blocks, _groups
from ._figure import (TEXT_FONT, TINY_CELL, Canvas, axis_numbers, draw_cells, finish, fit_labels, label_font, lines,
                      outline, tag)
from .palette import LANE_GROUP, LANE_RGB, OUTLINE, darker, text_color

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


def _group_rows(form, op) -> int:
    """Rows of one product's operand in a form of several stacked products (m8n8k4 .f16 quad pairs)."""
    return form.matrix_shape(op)[0] // form.groups


def draw_operand(cv: Canvas, form, operand, x0: float, y0: float, *, gid_prefix: str = "", caption=None,
                 rows=None):
    """One operand's grid at (x0, y0) on ``cv``: cells, joined registers, ldmatrix matrices, numbers.
    ``rows``: (first, end) -- only those rows of the operand (one quad pair's product), numbered and
    named as in the whole operand."""
    op = check_operand(operand)
    lane = form.owner(op)[0]
    r0, r1 = (0, lane.shape[0]) if rows is None else rows
    lane = lane[r0:r1]
    R, C = lane.shape
    colors = LANE_RGB[lane]
    full, short = (x[r0:r1] for x in cell_labels(form, op))
    labels, fs = fit_labels(cv.cell_pt * (1 - 2 * GAP), full, short)
    insets, segs, seg_colours = _register_geometry(form, op)
    inside = [(s, k) for s, k in zip(segs, seg_colours) if r0 <= min(y for _, y in s) and max(y for _, y in s) <= r1]
    gids = [[f"{gid_prefix}{op}-{r0 + r}-{c}" for c in range(C)] for r in range(R)]
    draw_cells(cv, x0, y0, colors, labels, fontsize=fs, gids=gids, insets=insets[r0:r1])
    if inside and cv.cell_pt >= 2 * TINY_CELL:      # dividers in tiny cells are only noise
        shifted = [[(x0 + x, y0 + y - r0) for x, y in s] for s, _ in inside]
        lines(cv, shifted, color=[k for _, k in inside], lw=max(0.5, cv.cell_pt * 0.025), ls=(0, (1.5, 1.5)))
    blocks = [b for b in _blocks.blocks(form, op) if r0 <= b.row0 and b.row0 + b.nrows <= r1]
    lw = max(1.0, min(2.4, cv.cell_pt * 0.07))
    outline(cv, [(x0 + b.col0, y0 + b.row0 - r0, b.ncols, b.nrows) for b in blocks], color=OUTLINE, lw=lw)
    for b in blocks:
        tag(cv, x0 + b.col0 + 0.08, y0 + b.row0 - r0 + 0.02, f"m{b.index}", color=OUTLINE,
            gid=f"{gid_prefix}{op}-m{b.index}")
    if rows is None and form.groups > 1:         # the stacked products: a dashed box and a name each
        g = _group_rows(form, op)
        outline(cv, [(x0, y0 + q * g, C, g) for q in range(form.groups)], color=OUTLINE, lw=lw * 0.6, ls="--")
        for q in range(form.groups):
            cv.text(x0 + C + cv.units(0.08), y0 + (q + 0.5) * g, f"{_group_name(form)} {q}",
                    size=TEXT_FONT - 1, rotation=90 if g * cv.unit < 1.2 else 0, va="center", color="#333333")
    axis_numbers(cv, x0, y0, R, C, row0=r0)
    fmt = form.fmt(op).name
    text = caption or f"{op}: {R}x{C} {fmt}, {form.nregs(op)} reg{'s' if form.nregs(op) > 1 else ''}"
    cv.text(x0, y0 - cv.units(0.26), text, size=TEXT_FONT, va="bottom", weight="bold")
    return blocks


def _group_name(form) -> str:
    return "quad pair" if form.groups == 4 else "product"


def _group_lanes(form, q: int) -> str:
    """The lanes of product q, read off the table (A's rows of that product)."""
    g = _group_rows(form, "A")
    lanes = sorted({int(x) for x in form.owner("A")[0][q * g:(q + 1) * g].ravel()})
    runs, i = [], 0
    while i < len(lanes):
        j = i
        while j + 1 < len(lanes) and lanes[j + 1] == lanes[j] + 1:
            j += 1
        runs.append(f"T{lanes[i]}" if i == j else f"T{lanes[i]}-T{lanes[j]}")
        i = j + 1
    return ", ".join(runs)


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
    lanes = np.arange(WARP_LANES).reshape(-1, LANE_GROUP).T      # (tig, group)
    fs = label_font(cv.cell_pt * size, 1, 3)
    for t in range(lanes.shape[0]):
        for g in range(lanes.shape[1]):
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
    """The combined view: A (M x K) on the left, B (K x N) above, C/D (M x N) where they meet; a form
    of several products per warp (m8n8k4 .f16: one per quad pair) gets one such view per product.
    ``also``: other forms with the same view, named in the title."""
    form = lookup(form)
    group = [form] + [lookup(f) for f in also]
    M, N, K = form.shape
    G = form.groups
    same_cd = form.layout("C") == form.layout("D")
    ops = ["A", "B", "C"] if same_cd else ["A", "B", "C", "D"]
    more = _groups.others(group)
    # 1.6 cells between the grids, or room for C's caption and B's row numbers where cells are small
    span = K + N + (0 if same_cd else 1.6 + N)
    gap = max(1.6, 0.67 / min(0.42, 16.0 / (span + 1.6), 16.0 / (K + M + 1.6)))
    xc, yc = K + gap, K + gap                     # C's corner in a product's view
    view_w, view_h = xc + N + (0 if same_cd else gap + N), yc + M
    per_row = 2 if G == 4 else G                  # the products' views: 2 x 2 for the quad pairs

    def caption(op, name=None):
        R, C = form.matrix_shape(op)
        n = form.nregs(op)
        return (f"{name or op}: {R // G}x{C} {_groups.types(group, op).replace('-', '/')}, "
                f"{n} reg{'s' if n > 1 else ''}")
    # the rightmost grids' captions may be wider than the grids (a K=256 form's 8 columns): pad for them
    right = [caption("D")] if not same_cd else [caption("B"), caption("C", "C/D")]
    right_in = max(len(c) for c in right) * TEXT_FONT * 0.66 / 72
    if G == 1:
        unit = min(0.42, 16.0 / view_w, 16.0 / view_h)
        step_x = step_y = 0.0
        key_h = 0.0
    else:                                         # room for each view's title and the next one's captions
        unit = 0.42
        step_x = view_w + max(gap, (right_in + 0.3) / unit - N)
        step_y = view_h + 1.5 / unit
        key_h = 4 * KEY_IN / unit + 0.5 / unit    # the lane key goes under the views
    rows_of_views = -(-G // per_row)
    width = step_x * (min(G, per_row) - 1) + view_w
    height = step_y * (rows_of_views - 1) + view_h
    right_pad = max(0.2, right_in - N * unit + 0.1)
    top = 0.75 + 0.2 * bool(more) + (0.5 if G > 1 else 0.0)
    cv = Canvas(width, height + key_h, pad=(0.45, right_pad, top, 0.3 + 0.17 * len(_key_lines(form, ops))),
                max_in=16.0, target=path)
    cv.title(form.ptx + (f"\n{more}" if more else "")
             + (f"\n{G} independent {M}x{N}x{K} products, stacked by rows in the table" if G > 1 else ""))
    for q in range(G):
        ox, oy = step_x * (q % per_row), step_y * (q // per_row)

        def rows(op, q=q):
            g = _group_rows(form, op)
            return None if G == 1 else (q * g, (q + 1) * g)
        if G > 1:
            cv.text(ox, oy - cv.units(0.62), f"{_group_name(form)} {q}: lanes {_group_lanes(form, q)}",
                    size=TEXT_FONT, va="bottom", weight="bold", color="#333333")
        kw = dict(gid_prefix=gid_prefix)
        draw_operand(cv, form, "A", ox, oy + yc, caption=caption("A"), rows=rows("A"), **kw)
        draw_operand(cv, form, "B", ox + xc, oy, caption=caption("B"), rows=rows("B"), **kw)
        if same_cd:
            draw_operand(cv, form, "C", ox + xc, oy + yc, caption=caption("C", "C/D") + "\n(d_i in c_i's register)",
                         rows=rows("C"), **kw)
        else:
            draw_operand(cv, form, "C", ox + xc, oy + yc, caption=caption("C"), rows=rows("C"), **kw)
            draw_operand(cv, form, "D", ox + xc + N + gap, oy + yc, caption=caption("D"), rows=rows("D"), **kw)
    if G == 1:
        size = min((K - 0.4) / 8, cv.units(KEY_IN))
        _lane_key(cv, 0, (K - 4 * size) / 2, size)
    else:
        _lane_key(cv, 0, height + cv.units(0.45), cv.units(KEY_IN))
    _legend(cv, 0, height + key_h + cv.units(0.2), form, ops)
    return finish(cv, path)
