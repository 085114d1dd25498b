"""Warp and CTA tiles: how mma tiles make up a warp's output, and warps a CTA's (as in the GEMMs users write).

``draw_warp_tile(form, m_tiles, n_tiles)``: one warp computing (m_tiles*M) x (n_tiles*N) with
m_tiles x n_tiles mma instructions -- A's m-tiles on the left, B's n-tiles above, C where they
meet, every element coloured by the lane holding it (``T5`` where the cells are large enough),
each mma tile outlined and tagged (i, j); lane T holds tile (i, j)'s c_r in accumulator register
``(i * n_tiles + j) * nregs + r``.

``draw_cta_tile(cta, warps, form)``: a CTA's output tile split among warps (warp id
``warp_m * warps_n + warp_n``, or column-major), each warp's tile outlined and tagged with its id,
the mma tiles inside drawn thin, A's rows and B's columns coloured by the warps that read them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:      # annotations only: matplotlib loads when a picture is drawn
    from matplotlib.figure import Figure

import colorsys
import numbers

import numpy as np

from fragsim.instructions import lookup

from ._figure import MIN_FONT, TEXT_FONT, Canvas, axis_numbers, draw_cells, finish, fit_labels, outline, tag
from .palette import LANE_RGB, OUTLINE

DEFAULT_FORM = "m16n8k16.row.col.f32.f16.f16.f32"


def _count(v, name, lo=1, hi=64):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not lo <= int(v) <= hi:
        raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {v!r}")
    return int(v)


def _tiled_owner(form, op, tiles_r, tiles_c):
    lane = form.owner(op)[0]
    return np.tile(lane, (tiles_r, tiles_c))


def _lane_labels(lane):
    return np.vectorize(lambda x: f"T{x}", otypes=[object])(lane)


def draw_warp_tile(form=DEFAULT_FORM, m_tiles=4, n_tiles=8, path=None) -> "Figure":  # noqa: F821
    """A warp's (m_tiles*M) x (n_tiles*N) output from m_tiles x n_tiles mma tiles of ``form``."""
    form = lookup(form)
    mt, nt = _count(m_tiles, "m_tiles"), _count(n_tiles, "n_tiles")
    M, N, K = form.shape
    WM, WN = mt * M, nt * N
    gap = 2.0
    xc, yc = K + gap, K + gap
    cv = Canvas(xc + WN, yc + WM, cell_in=0.3, max_in=15.0, pad=(0.45, 0.2, 0.75, 0.55), target=path)
    nregs = form.nregs("C")
    cv.title(f"warp tile {WM}x{WN}: {mt}x{nt} x {form.ptx}")
    parts = [("A", _tiled_owner(form, "A", mt, 1), 0, yc, [(0, i * M, K, M, f"A{i}") for i in range(mt)]),
             ("B", _tiled_owner(form, "B", 1, nt), xc, 0, [(j * N, 0, N, K, f"B{j}") for j in range(nt)]),
             ("C", _tiled_owner(form, "C", mt, nt), xc, yc,
              [(j * N, i * M, N, M, f"{i},{j}") for i in range(mt) for j in range(nt)])]
    lw = max(0.8, min(2.2, cv.cell_pt * 0.08))
    for name, lane, x0, y0, boxes in parts:
        labels, fs = fit_labels(cv.cell_pt * 0.9, _lane_labels(lane))
        draw_cells(cv, x0, y0, LANE_RGB[lane], labels, fontsize=fs)
        outline(cv, [(x0 + x, y0 + y, w, h) for x, y, w, h, _ in boxes], color=OUTLINE, lw=lw)
        size = max(MIN_FONT + 1, min(TEXT_FONT - 1, cv.cell_pt * 0.45))
        for x, y, _, _, t in boxes:
            tag(cv, x0 + x + 0.1, y0 + y + 0.1 + size / cv.cell_pt * 0.6, t, color=OUTLINE, size=size)
        axis_numbers(cv, x0, y0, *lane.shape)
        R, C = lane.shape
        cv.text(x0, y0 - cv.units(0.24), f"{name}: {R}x{C}", size=TEXT_FONT, va="bottom", weight="bold")
    # the key sits in the corner left of B: wrapped to its width (narrow where the cells are small)
    import textwrap
    chars = max(16, int((xc - 0.3) * cv.unit * 72 / ((TEXT_FONT - 1) * 0.56)))
    key = [line for part in ("cells: the lane holding the element", "tile (i,j) = mma(Ai, Bj);",
                             f"its c_r in acc[(i*{nt}+j)*{nregs}+r]") for line in textwrap.wrap(part, chars)]
    for i, line in enumerate(key):
        cv.text(0, 0.3 + cv.units(0.18) * i, line, size=TEXT_FONT - 1, va="top", color="#333333")
    return finish(cv, path)


def _warp_rgb(w: int, n: int):
    return np.array(colorsys.hls_to_rgb((w / max(n, 1) * 0.9 + 0.58) % 1.0, 0.66, 0.55))


def draw_cta_tile(cta=(128, 128), warps=(2, 2), form=DEFAULT_FORM, *, warp_order="row", path=None) -> "Figure":  # noqa: F821
    """A CTA's ``cta`` = (rows, cols) output split into ``warps`` = (warps_m, warps_n) warp tiles of mma tiles."""
    form = lookup(form)
    if not (isinstance(cta, (tuple, list)) and len(cta) == 2 and isinstance(warps, (tuple, list)) and len(warps) == 2):
        raise ValueError(f"cta and warps must be (rows, cols) pairs, got cta={cta!r}, warps={warps!r}")
    BM, BN = _count(cta[0], "cta rows", 1, 1024), _count(cta[1], "cta cols", 1, 1024)
    WMn, WNn = _count(warps[0], "warps_m", 1, 32), _count(warps[1], "warps_n", 1, 32)
    if warp_order not in ("row", "col"):
        raise ValueError(f"warp_order must be 'row' (warp = warp_m * warps_n + warp_n) or 'col', got {warp_order!r}")
    M, N, K = form.shape
    if BM % (WMn * M) or BN % (WNn * N):
        raise ValueError(f"cta {BM}x{BN}: must split into {WMn}x{WNn} warp tiles of whole {M}x{N} mma tiles "
                         f"(rows a multiple of {WMn * M}, cols of {WNn * N})")
    WM, WN = BM // WMn, BN // WNn
    nw = WMn * WNn
    wid = np.empty((WMn, WNn), np.int64)
    for wm in range(WMn):
        for wn in range(WNn):
            wid[wm, wn] = wm * WNn + wn if warp_order == "row" else wn * WMn + wm
    strip = max(2.0, min(BM, BN) / 16)
    gap = max(1.0, strip / 2)
    xc, yc = strip + gap, strip + gap
    cv = Canvas(xc + BN, yc + BM, cell_in=0.3, max_in=14.0, pad=(0.5, 0.2, 0.95, 0.5), target=path)
    cv.title(f"CTA tile {BM}x{BN}: {WMn}x{WNn} warps of {WM}x{WN} ({WM // M}x{WN // N} x {form.shape_name} each), "
             f"warp id = {'warp_m * ' + str(WNn) + ' + warp_n' if warp_order == 'row' else 'warp_n * ' + str(WMn) + ' + warp_m'}")
    # C, element by element, coloured by warp; the lanes' shading inside each mma tile
    warp_of = np.kron(wid, np.ones((WM, WN), np.int64))
    lane = np.tile(form.owner("C")[0], (BM // M, BN // N))
    shade = 0.82 + 0.18 * (lane % 4) / 3                  # threadID_in_group, faintly
    colors = np.stack([_warp_rgb(w, nw) for w in range(nw)])[warp_of] * shade[..., None]
    labels, fs = fit_labels(cv.cell_pt * 0.9, _lane_labels(lane))
    draw_cells(cv, xc, yc, colors, labels, fontsize=fs, gap=0.0 if cv.cell_pt < 10 else 0.04)
    outline(cv, [(xc + j * N, yc + i * M, N, M) for i in range(BM // M) for j in range(BN // N)],
            color="#555555", lw=0.4)
    outline(cv, [(xc + wn * WN, yc + wm * WM, WN, WM) for wm in range(WMn) for wn in range(WNn)],
            color=OUTLINE, lw=2.2)
    size = max(7.0, min(12.0, cv.cell_pt * min(WM, WN) * 0.08))
    for wm in range(WMn):
        for wn in range(WNn):
            cv.text(xc + wn * WN + WN / 2, yc + wm * WM + WM / 2, f"warp {wid[wm, wn]}\n(warp_m {wm}, warp_n {wn})",
                    size=size, ha="center", weight="bold",
                    bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": OUTLINE, "alpha": 0.85}, zorder=5)
    # A rows and B columns, by the warps that read them
    from matplotlib.patches import Rectangle
    for wm in range(WMn):
        readers = ", ".join(str(w) for w in sorted(wid[wm]))
        cv.ax.add_patch(Rectangle((0, yc + wm * WM), strip, WM, facecolor="#e8e8e8", edgecolor=OUTLINE, lw=1.2))
        cv.text(strip / 2, yc + wm * WM + WM / 2, f"A rows {wm * WM}-{(wm + 1) * WM - 1}: warps {readers}",
                size=TEXT_FONT - 1, ha="center", rotation=90)
    for wn in range(WNn):
        readers = ", ".join(str(w) for w in sorted(wid[:, wn]))
        cv.ax.add_patch(Rectangle((xc + wn * WN, 0), WN, strip, facecolor="#e8e8e8", edgecolor=OUTLINE, lw=1.2))
        cv.text(xc + wn * WN + WN / 2, strip / 2, f"B cols {wn * WN}-{(wn + 1) * WN - 1}: warps {readers}",
                size=TEXT_FONT - 1, ha="center")
    axis_numbers(cv, xc, yc, BM, BN)
    cv.text(xc, yc + BM + cv.units(0.12), f"thin: the {form.shape_name} mma tiles ({M}x{N}); shade: "
            "threadID_in_group of the lane holding the element", size=TEXT_FONT - 1, va="top", color="#333333")
    return finish(cv, path)
