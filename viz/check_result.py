"""Check results: the fragment map the address math should produce next to the one it produces.

``draw_check(report)`` draws a ``fragsim.check_load`` / ``check_store`` / ``check_copy`` report as
two grids over the same part of the tile (tile row and column numbers on the axes):

* expected: each tile element in the cell of the lane and register element that must hold it
  (loads), store it there (stores) or copy it there (copies) -- ``T5 a2`` / ``T5 i3`` for
  instruction 3 of a copy -- coloured by lane, the fragments outlined;
* received: each tile element with the lane and element that actually hold it (loads: the
  register that read it; stores and copies: the one whose write landed on its place).

Cells where the two differ are outlined in red in both grids: a wrong element, none, or more than
one.  Elements that went nowhere in the tile (read outside it, lost, never run) are counted under
the grids, with the diagnosis.  A transposed or shifted load shows as the expected pattern
transposed or shifted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:      # annotations only: matplotlib loads when a picture is drawn
    from matplotlib.figure import Figure

import numpy as np

from ._figure import TEXT_FONT, TINY_CELL, Canvas, axis_numbers, draw_cells, finish, fit_labels, outline, tag
from .palette import CONFLICT, EMPTY, LANE_RGB, OUTLINE

GAP = 2.2             # cells between the grids (when the cells are at most MAX_CELL_IN)
MAX_CELL_IN = 0.42
MARK_PT = 14.0        # points: smaller cells get a third grid of the differences instead of red outlines
RIGHT = "#cfe8cf"     # the differences grid: an element where it must be
SHOWN_FINDINGS = 4    # diagnosis lines under the picture


def _evidence(report):
    ev = getattr(report, "evidence", None)
    if ev is None or not hasattr(report, "mismatches"):
        raise TypeError(f"report must be the result of fragsim.check_load, check_store or check_copy, "
                        f"got {type(report).__name__}")
    return ev


def _slot_names(ev) -> list[str]:
    """Each slot's element: "a2" (the fragment register's element) or "i3" (copy instruction 3)."""
    if ev.frags is None:
        return [f"i{i}" for i in ev.instr]
    fr = ev.frags
    return [fr.form.element_name(fr.operand, int(fr.regmap[r, 1]), int(h)) for r, h in zip(ev.reg, ev.half)]


class _Grids:
    """The expected and received cells of the region (tile rows r0.., cols c0..) the slots touch."""

    def __init__(self, ev):
        cols = ev.tile.cols
        want, got = ev.want.astype(np.int64), ev.got.astype(np.int64)
        placed = got >= 0
        cells = np.concatenate([want, got[placed]])
        rr, cc = np.divmod(cells, cols)
        self.r0, self.c0 = int(rr.min()), int(cc.min())
        self.R, self.C = int(rr.max()) - self.r0 + 1, int(cc.max()) - self.c0 + 1
        self.names = _slot_names(ev)
        self.lane = ev.lane.astype(np.int64)
        self.expected = self._place(want, np.ones(want.shape, bool), cols)
        self.received = self._place(got, placed, cols)
        self.count = np.zeros((self.R, self.C), np.int64)         # slots received in each cell
        np.add.at(self.count, self._rc(got[placed], cols), 1)
        # a cell differs when it does not hold exactly its expected slot, and only that one
        right = np.zeros((self.R, self.C), bool)
        ok = placed & (got == want)
        right[self._rc(got[ok], cols)] = True
        self.bad = ~(right & (self.count == 1) & (self.expected == self.received))
        self.bad &= (self.expected >= 0) | (self.received >= 0)
        self.lost = int((~placed).sum())

    def _rc(self, elements, cols):
        r, c = np.divmod(elements, cols)
        return r - self.r0, c - self.c0

    def _place(self, elements, use, cols) -> np.ndarray:
        """(R, C): the slot drawn in each cell (the first one that lands there), -1 for none."""
        out = np.full((self.R, self.C), -1, np.int64)
        k = np.flatnonzero(use)[::-1]               # the first slot wins: written last
        out[self._rc(elements[k], cols)] = k
        return out

    def colors(self, slots) -> np.ndarray:
        rgb = np.tile(np.array(_rgb(EMPTY)), (self.R, self.C, 1))
        have = slots >= 0
        rgb[have] = LANE_RGB[self.lane[slots[have]]]
        return rgb

    def labels(self, slots, extra=None):
        full = np.full((self.R, self.C), "", dtype=object)
        short = np.full((self.R, self.C), "", dtype=object)
        for (r, c), k in np.ndenumerate(slots):
            if k < 0:
                continue
            more = f" +{extra[r, c] - 1}" if extra is not None and extra[r, c] > 1 else ""
            full[r, c] = f"T{self.lane[k]}{more}\n{self.names[k]}"
            short[r, c] = f"T{self.lane[k]}"
        return full, short


def _captions(kind: str) -> tuple[str, str]:
    who = "lane/instruction" if kind == "copy" else "lane/element"
    want, got = {"load": ("that must hold it", "holding it"), "store": ("to store here", "stored here"),
                 "copy": ("to copy here", "copied here")}[kind]
    return f"expected: {who} {want}", f"received: {who} {got}"


def _text_in(s: str, size: float = TEXT_FONT) -> float:
    """About how many inches a bold line of ``s`` takes."""
    return len(s) * size * 0.66 / 72


def _layout(g: _Grids, n: int, caption_in: float):
    """(cell size in inches, gap in cells, side by side?) for ``n`` grids of the region."""
    side = g.C <= 2 * g.R                      # side by side, or one above the other for wide regions
    long_, short_ = (g.C, g.R) if side else (g.R, g.C)
    unit = min(MAX_CELL_IN, 15.0 / (n * long_ + (n - 1) * GAP), 15.0 / short_)
    gap = max(GAP, 0.9 / unit)                 # the next grid's row numbers
    if side:                                   # and a grid's caption, which may be wider than it
        gap = max(gap, (caption_in + 0.3) / unit - g.C)
    return unit, gap, side


def draw_check(report, path=None) -> "Figure":  # noqa: F821 (matplotlib type, lazily)
    """Expected vs received fragment map of a check report, mismatches outlined in red (or, where
    the cells are too small for an outline to leave the colour readable, a third grid of them)."""
    ev = _evidence(report)
    g = _Grids(ev)
    captions = _captions(ev.kind)
    caption_in = max(map(_text_in, captions))
    unit, gap, side = _layout(g, 2, caption_in)
    third = unit * 72 < MARK_PT and bool(g.bad.any())
    if third:
        unit, gap, side = _layout(g, 3, caption_in)
    step = (g.C + gap, 0.0) if side else (0.0, g.R + gap)
    n = 3 if third else 2
    # the title and notes need about 6.5 inches, the last grid's caption its width
    width = max(step[0] * (n - 1) + max(g.C, caption_in / unit), 6.5 / unit)
    height = step[1] * (n - 1) + g.R
    notes = _notes(report, g, third)
    cv = Canvas(width, height, cell_in=unit, max_in=30.0,
                pad=(0.5, 0.2, 1.35, 0.3 + 0.17 * len(notes)), target=path)
    cv.title(report.title + "\n" + report.verdict(), top_in=0.08)
    if report.gpu is not None:
        cv.text(cv.x0 + cv.units(0.1), -cv.units(0.62), str(report.gpu), size=TEXT_FONT - 1.5, va="bottom",
                color="#333333")
    panels = [("expected", g.expected, None, captions[0]), ("received", g.received, g.count, captions[1])]
    lw = max(0.7, min(2.4, cv.cell_pt * 0.09))
    bad = [(int(r), int(c)) for r, c in zip(*np.nonzero(g.bad))]
    for i, (name, slots, extra, caption) in enumerate(panels):
        x0, y0 = step[0] * i, step[1] * i
        full, short = g.labels(slots, extra)
        labels, fs = fit_labels(cv.cell_pt * 0.9, full, short)
        draw_cells(cv, x0, y0, g.colors(slots), labels, fontsize=fs,
                   gids=[[f"{name}-{g.r0 + r}-{g.c0 + c}" for c in range(g.C)] for r in range(g.R)])
        _frame(cv, g, x0, y0, caption)
        _fragments(cv, ev, g, x0, y0)
        if not third:
            _mark(cv, bad, x0, y0, lw, name)
    if third:
        x0, y0 = step[0] * 2, step[1] * 2
        rgb = np.tile(np.array(_rgb(EMPTY)), (g.R, g.C, 1))
        rgb[(g.expected >= 0) | (g.received >= 0)] = _rgb(RIGHT)
        rgb[g.bad] = _rgb(CONFLICT)
        draw_cells(cv, x0, y0, rgb)
        _frame(cv, g, x0, y0, "red: received is not expected")
        _fragments(cv, ev, g, x0, y0)
    y = height + cv.units(0.12)
    for i, s in enumerate(notes):
        cv.text(0, y + cv.units(0.17) * i, s, size=TEXT_FONT - 1, va="top",
                color=CONFLICT if i == 0 and not report.ok else "#333333")
    return finish(cv, path)


def _frame(cv: Canvas, g: _Grids, x0, y0, caption):
    axis_numbers(cv, x0, y0, g.R, g.C, row0=g.r0, col0=g.c0)
    cv.text(x0, y0 - cv.units(0.26), caption, size=TEXT_FONT, va="bottom", weight="bold")


def _fragments(cv: Canvas, ev, g: _Grids, x0, y0):
    """Outline and tag each fragment of a load or store (where they lie in the region)."""
    if ev.frags is None:
        return
    R, C = ev.frags.form.matrix_shape(ev.frags.operand)
    boxes = [(x0 + c - g.c0, y0 + r - g.r0, C, R) for r, c in ev.frags.origins]
    outline(cv, boxes, color=OUTLINE, lw=max(0.8, min(2.0, cv.cell_pt * 0.06)))
    if len(boxes) > 1 and cv.cell_pt >= TINY_CELL:
        for i, (x, y, _, _) in enumerate(boxes):
            tag(cv, x + 0.08, y + 0.02, f"f{i}", color=OUTLINE)


def _mark(cv: Canvas, bad, x0, y0, lw, name):
    """Red outlines around the cells that differ; named ``{name}-bad-R-C`` in SVG where few."""
    if not bad:
        return
    inset = min(0.12, lw / cv.cell_pt / 2)
    rects = [(x0 + c + inset, y0 + r + inset, 1 - 2 * inset, 1 - 2 * inset) for r, c in bad]
    if len(rects) > 2000 or not cv.vector:
        outline(cv, rects, color=CONFLICT, lw=lw, zorder=4)
        return
    from matplotlib.patches import Rectangle
    for (r, c), (x, y, w, h) in zip(bad, rects):
        p = Rectangle((x, y), w, h, facecolor="none", edgecolor=CONFLICT, lw=lw, zorder=4)
        p.set_gid(f"{name}-bad-{r}-{c}")
        cv.ax.add_artist(p)


def _notes(report, g: _Grids, third: bool) -> list[str]:
    ev = report.evidence
    out = []
    n = int(g.bad.sum())
    if n:
        out.append(f"{'red in the third grid' if third else 'red outline'}: {_marked_cells(report, g, n)}")
    if g.lost:
        where = {"load": "register elements hold no tile element (read outside it, masked off, or not run)",
                 "store": "stored elements land outside the tile's elements, are overwritten, or are not run",
                 "copy": "copied elements land outside the tile's elements, are overwritten, or are not run"}
        out.append(f"{g.lost:,} {where[ev.kind]}")
    for s in report.diagnosis[:SHOWN_FINDINGS]:
        out.append("diagnosis: " + _wrap(s, 150).replace("\n", "\n    "))
    out.append(f"tile {ev.tile.describe()}: rows {g.r0}..{g.r0 + g.R - 1}, cols {g.c0}..{g.c0 + g.C - 1} shown; "
               "colour = lane (T#), grey = no element")
    return [line for s in out for line in s.split("\n")]


def _marked_cells(report, g: _Grids, n: int) -> str:
    """What the ``n`` marked cells are, counted as the text report counts the wrong elements."""
    wrong = {(m.lane, m.instruction, m.reg, m.half, m.want) for m in report.mismatches}   # as report.verdict()
    want = {m.want for m in report.mismatches}
    landed = n - len(want)
    s = (f"{n:,} cell{'s' * (n > 1)}: where the {len(wrong):,} wrong element{'s' * (len(wrong) > 1)} of "
         f"{report.compared:,} must be ({len(want):,} cell{'s' * (len(want) > 1)})")
    if landed:
        s += f" and the {landed:,} other cell{'s' * (landed > 1)} they landed in"
    return s + " (each holds another lane or element, none, or several: +n)"


def _wrap(s: str, width: int) -> str:
    import textwrap
    return "\n".join(textwrap.wrap(s, max(40, width))) or s


def _rgb(c):
    from matplotlib.colors import to_rgb
    return to_rgb(c)

