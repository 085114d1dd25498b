"""What every picture shares: a canvas measured in cells, cell grids with labels that shrink and
then drop as cells get small, titles that wrap to the figure's width, and saving by file extension.

A ``Canvas`` is one matplotlib Figure whose single Axes fills it, in data units where one cell is
1 x 1 and y grows downwards (matrix order).  Knowing the size of a cell in points is what lets the
labels pick a font size that fits, or drop out, instead of overflowing on a 128 x 128 tile.
Figures are built with ``matplotlib.figure.Figure`` (no pyplot: no global state, no backend).

SVG output writes the named cells itself, compactly (a ``<rect>`` and ``<text>`` per cell, styles
shared as classes), instead of matplotlib's paths with inline styles; grids of more than
``SVG_CELLS`` cells are one image with white gap lines, without per-cell text.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

from .palette import text_color

FORMATS = ("png", "svg", "pdf")
DPI = 110

MAX_FONT = 8.0      # points: cell labels never grow past this
MIN_FONT = 4.0      # points: below this a label is unreadable, so it is dropped
TEXT_FONT = 9.0     # titles, axis labels, legends
TITLE_FONT = TEXT_FONT + 1
LINE_SPACING = 1.2  # matplotlib's, in font sizes
AXIS_FONT = 5.5     # smallest row/column numbers (fewer of them are shown instead)
TINY_CELL = 9.0     # points: cells smaller than this are drawn without gaps (gaps would be noise)
MAX_LABELS = 4096    # above this many cells, colour only: matplotlib draws ~1000 labels a second
# Above this many cells in one grid, SVG gets the grid as one image, no per-cell text: a named cell
# and its label cost ~150 bytes (a 64 x 64 tile would be 600 KB), and in a notebook, which scales
# the picture to its width, such labels are too small to read.
SVG_CELLS = 2048

# SVG text as <text> (searchable, testable), stable ids.
SVG_RC = {"svg.fonttype": "none", "svg.hashsalt": "fragsim"}
#: Attributes a figure carries for svg_text(): its compact SVG grids and their shared CSS classes.
CELLS, STYLES = "fragsim_cells", "fragsim_styles"


@dataclass
class _SvgCells:
    """One grid as SVG text, and the matplotlib artists that draw it in PNG/PDF (hidden for SVG)."""

    artists: list
    svg: str


class Canvas:
    """A figure sized so that one data unit (one cell) is ``unit`` inches, at most ``max_in`` wide/high.

    Content spans x in [0, width], y in [0, height] (y down); ``pad`` (left, right, top, bottom)
    adds margins in inches for titles and labels.
    """

    def __init__(self, width: float, height: float, *, cell_in: float = 0.42, max_in: float = 15.0,
                 pad=(0.6, 0.3, 0.8, 0.3), target=None):
        self.unit = min(cell_in, max_in / max(width, 1e-9), max_in / max(height, 1e-9))
        left, right, top, bottom = (p / self.unit for p in pad)
        self.x0, self.x1, self.y0, self.y1 = -left, width + right, -top, height + bottom
        self.fig = Figure(figsize=((self.x1 - self.x0) * self.unit, (self.y1 - self.y0) * self.unit), dpi=DPI)
        ax = self.fig.add_axes((0.0, 0.0, 1.0, 1.0))
        ax.set_xlim(self.x0, self.x1)
        ax.set_ylim(self.y1, self.y0)
        ax.set_axis_off()
        self.ax = ax
        # PNG and PDF: cells as one collection and their labels as glyph outlines (one more):
        # matplotlib lays out and rasterizes each text separately, ~1 ms a label.  SVG, or no path yet
        # (a notebook asks for SVG or PNG later): the same artists, and the cells as compact SVG too.
        ext = None if target is None else os.path.splitext(os.fspath(target))[1].lower()
        self.vector = ext in (None, ".svg")
        setattr(self.fig, CELLS, [])       # the figure carries its compact SVG grids to svg_text()
        setattr(self.fig, STYLES, {})

    @property
    def label_limit(self) -> int:
        """The most cells of one grid that get labels in this picture's format (see ``draw_cells``)."""
        return SVG_CELLS if self.vector else MAX_LABELS

    def grow_top(self, inches: float):
        """``inches`` more room above the content: the figure grows, nothing moves against the content."""
        w, h = self.fig.get_size_inches()
        self.fig.set_size_inches(w, h + inches)
        self.y0 -= inches / self.unit
        self.ax.set_ylim(self.y1, self.y0)

    @property
    def cell_pt(self) -> float:
        """Size of one data unit in points."""
        return self.unit * 72.0

    def units(self, inches: float) -> float:
        return inches / self.unit

    def text(self, x, y, s, *, size=TEXT_FONT, gid=None, **kw):
        kw.setdefault("ha", "left")
        kw.setdefault("va", "center")
        t = self.ax.text(x, y, s, fontsize=size, **kw)
        if gid:
            t.set_gid(gid)
        return t

    def title(self, s: str, *, top_in: float = 0.12, x: float | None = None):
        """A title ``top_in`` inches below the figure's top edge, wrapped to the figure's width (the
        figure grows upwards by the lines wrapping adds)."""
        x = self.x0 + self.units(0.1) if x is None else x
        room = (self.x1 - x) * self.cell_pt - 0.1 * 72          # points to the right edge, less a margin
        lines_ = wrap_text(s, room, TITLE_FONT, bold=True)
        extra = len(lines_) - (s.count("\n") + 1)
        if extra > 0:
            self.grow_top(extra * TITLE_FONT * LINE_SPACING / 72)
        return self.text(x, self.y0 + self.units(top_in), "\n".join(lines_), size=TITLE_FONT, va="top",
                         weight="bold", gid="title")


def text_width(s: str, size: float, *, bold: bool = False) -> float:
    """Width of one line of text in points, as matplotlib lays it out (the default font)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path
    prop = FontProperties(size=size, weight="bold" if bold else "normal")
    return text_to_path.get_text_width_height_descent(s, prop, ismath=False)[0]


def wrap_text(s: str, width_pt: float, size: float, *, bold: bool = False) -> list[str]:
    """The lines of ``s`` (its own line breaks kept), each wrapped at spaces to at most ``width_pt``
    points; a word wider than that alone is cut after a '.' or ',' where it can be, else anywhere."""
    def fits(t):
        return text_width(t, size, bold=bold) <= width_pt

    def pieces(t):
        out = []
        while not fits(t) and len(t) > 1:
            cut = _cut(t, width_pt, size, bold)
            out.append(t[:cut].rstrip())
            t = t[cut:].lstrip()
        return out + [t]
    lines_ = []
    for line in s.split("\n"):
        cur = ""
        for w in line.split(" "):
            trial = f"{cur} {w}" if cur else w
            if not cur or fits(trial):
                cur = trial
            else:
                lines_ += pieces(cur)
                cur = w
        lines_ += pieces(cur)
    return lines_


def _cut(s: str, width_pt: float, size: float, bold: bool) -> int:
    """Where to cut ``s`` so that its first part fits: after the last '.', ',' or space that fits."""
    fit = 1
    while fit < len(s) and text_width(s[:fit + 1], size, bold=bold) <= width_pt:
        fit += 1
    soft = max(s.rfind(c, 0, fit) for c in ".,; ")
    return soft + 1 if soft > 0 else fit


def label_font(cell_pt: float, lines: int, chars: int, fill: float = 0.86) -> float | None:
    """The font size that fits ``lines`` lines of ``chars`` characters in a cell, or None if too small."""
    fs = min(MAX_FONT, cell_pt * fill / (1.22 * lines), cell_pt * fill / (0.62 * max(chars, 1)))
    return fs if fs >= MIN_FONT else None


def fit_labels(cell_pt: float, *variants, limit: int = MAX_LABELS):
    """The first label variant (a 2-D array of strings, or None) whose longest label fits, with its font;
    none past ``limit`` cells (``Canvas.label_limit``: what the picture's format draws)."""
    for labels in variants:
        if labels is None or np.size(labels) > limit:
            continue
        flat = [s for s in np.asarray(labels, dtype=object).ravel() if s]
        if not flat:
            continue
        lines = max(s.count("\n") + 1 for s in flat)
        chars = max(len(part) for s in flat for part in s.split("\n"))
        fs = label_font(cell_pt, lines, chars)
        if fs is not None:
            return labels, fs
    return None, None


def draw_cells(cv: Canvas, x0: float, y0: float, colors: np.ndarray, labels=None, *, fontsize=None,
               gids=None, insets=None, gap: float = 0.05):
    """Cells (R, C) at (x0, y0), filled with ``colors`` (R, C, 3); ``labels`` (R, C) strings or None.

    ``insets`` (R, C, 4): per-cell gaps (left, right, top, bottom) in cell units; default ``gap``
    on every side.  A zero inset on one side joins a cell to its neighbour (a register's two
    halves).  ``gids`` (R, C) names each cell in SVG output (cell ``gid``, label ``gid-t``).
    """
    R, C = colors.shape[:2]
    if insets is None or cv.cell_pt < TINY_CELL:
        insets = np.full((R, C, 4), gap if cv.cell_pt >= TINY_CELL else 0.0)
    if cv.vector and R * C > SVG_CELLS:
        _cell_image(cv, x0, y0, colors, insets)
        return
    rr, cc = np.mgrid[0:R, 0:C]
    left = x0 + cc + insets[..., 0]
    right = x0 + cc + 1 - insets[..., 1]
    top = y0 + rr + insets[..., 2]
    bottom = y0 + rr + 1 - insets[..., 3]
    verts = np.stack([np.stack([left, top], -1), np.stack([right, top], -1),
                      np.stack([right, bottom], -1), np.stack([left, bottom], -1)], axis=-2)
    cells = PolyCollection(list(verts.reshape(-1, 4, 2)), facecolors=colors.reshape(-1, 3), edgecolors="none",
                           linewidths=0)
    cv.ax.add_collection(cells)
    if fontsize is None:
        labels = None
    glyphs = None if labels is None else _label_paths(cv, x0, y0, colors, labels, fontsize)
    if cv.vector:
        svg = _svg_cells(cv, left, top, right, bottom, colors, gids, labels, fontsize)
        getattr(cv.fig, CELLS).append(_SvgCells([cells, glyphs], svg))


def _cell_image(cv: Canvas, x0, y0, colors, insets):
    """A large grid as one image, the gaps between its cells as white lines over it."""
    R, C = colors.shape[:2]
    cv.ax.imshow(colors, extent=(x0, x0 + C, y0 + R, y0), interpolation="none", aspect="auto", zorder=1)
    segs, widths = [], []
    for vertical in (True, False):         # gaps between columns, then between rows
        # ins[i, j]: (before, after) insets of cell j along line i (a row, or a column)
        ins = insets[..., :2] if vertical else insets.transpose(1, 0, 2)[..., 2:]
        n, m = ins.shape[:2]
        after_edge = np.concatenate([ins[..., 0], np.zeros((n, 1))], 1)     # cell e's inset at edge e
        before_edge = np.concatenate([np.zeros((n, 1)), ins[..., 1]], 1)    # cell e-1's inset at edge e
        width = after_edge + before_edge
        centre = np.arange(m + 1) + (after_edge - before_edge) / 2
        for e in range(m + 1):
            start = 0
            for i in range(1, n + 1):         # runs of lines with the same gap at this edge: one segment
                if i < n and width[i, e] == width[start, e] and centre[i, e] == centre[start, e]:
                    continue
                if width[start, e] > 0:
                    a = centre[start, e]
                    segs.append([(x0 + a, y0 + start), (x0 + a, y0 + i)] if vertical
                                else [(x0 + start, y0 + a), (x0 + i, y0 + a)])
                    widths.append(width[start, e] * cv.cell_pt)
                start = i
    if segs:
        cv.ax.add_collection(LineCollection(segs, colors="white", linewidths=widths, capstyle="butt", zorder=1.5))


def _style_class(fig, style: str) -> str:
    """A class name for an inline style, shared by every element of the figure that has it."""
    styles = getattr(fig, STYLES)
    return styles.setdefault(style, f"fs{len(styles)}")


def _svg_cells(cv: Canvas, left, top, right, bottom, colors, gids, labels, fontsize) -> str:
    """The cells as SVG: a <rect> each (in a group named ``gid``), and a ``gid-t`` group with one <text>
    per label line; 1/10-point positions, the font a shared class."""
    k = cv.unit * 72.0
    # edges rounded, then sizes from them: joined cells share an edge exactly
    X0, Y0 = np.round((left - cv.x0) * k, 1), np.round((top - cv.y0) * k, 1)
    W, H = np.round((right - cv.x0) * k, 1) - X0, np.round((bottom - cv.y0) * k, 1) - Y0
    R, C = colors.shape[:2]
    hexes = ["#%02x%02x%02x" % tuple(int(round(v * 255)) for v in c[:3]) for c in colors.reshape(-1, 3)]
    out = []
    for r in range(R):
        for c in range(C):
            rect = (f'<rect x="{X0[r, c]:.1f}" y="{Y0[r, c]:.1f}" width="{W[r, c]:.1f}" height="{H[r, c]:.1f}" '
                    f'fill="{hexes[r * C + c]}"/>')
            out.append(rect if gids is None else f'<g id="{gids[r][c]}">{rect}</g>')
    if labels is not None:
        step = fontsize * 1.05 * LINE_SPACING             # matplotlib's line spacing (linespacing=1.05)
        font = _style_class(cv.fig, f"font: {fontsize:.2f}px 'DejaVu Sans', sans-serif; text-anchor: middle")
        cx, cy = ((left + right) / 2 - cv.x0) * k, ((top + bottom) / 2 - cv.y0) * k
        for r in range(R):
            for c in range(C):
                s = labels[r][c]
                if not s:
                    continue
                parts = s.split("\n")
                fill = "" if text_color(colors[r, c]) == "black" else ' fill="white"'
                texts = "".join(
                    f'<text x="{cx[r, c]:.1f}" y="{cy[r, c] + (i - (len(parts) - 1) / 2) * step + fontsize * 0.36:.1f}"'
                    f' class="{font}"{fill}>{_xml(line)}</text>' for i, line in enumerate(parts))
                out.append(texts if gids is None else f'<g id="{gids[r][c]}-t">{texts}</g>')
    return "".join(out)


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_LINES: dict = {}


def _line_path(line: str, fontsize: float):
    """One line of text as an outline in points, centred horizontally, baseline at 0 (cached)."""
    key = (line, fontsize)
    if key not in _LINES:
        from matplotlib.font_manager import FontProperties
        from matplotlib.textpath import TextPath
        tp = TextPath((0, 0), line, size=fontsize, prop=FontProperties(family="DejaVu Sans"))
        _LINES[key] = tp.transformed(_shift(-tp.get_extents().x1 / 2, 0)) if line else tp
    return _LINES[key]


def _glyph_path(s: str, fontsize: float):
    """A label's outline in points, centred on (0, 0), y up; lines stacked as ``ax.text`` would."""
    from matplotlib.path import Path
    fontsize = round(fontsize, 2)
    lines_ = s.split("\n")
    step = fontsize * 1.05 * 1.2
    parts = []
    for i, line in enumerate(lines_):
        y = (len(lines_) - 1) / 2 * step - i * step - fontsize * 0.36   # baseline of line i
        parts.append(_line_path(line, fontsize).transformed(_shift(0, y)))
    return Path.make_compound_path(*parts)


def _shift(dx, dy):
    from matplotlib.transforms import Affine2D
    return Affine2D().translate(dx, dy)


def _label_paths(cv: Canvas, x0, y0, colors, labels, fontsize):
    """The labels as one collection of glyph outlines (None if there are none)."""
    from matplotlib.collections import PathCollection
    from matplotlib.transforms import Affine2D
    paths, offsets, fills = [], [], []
    R, C = colors.shape[:2]
    for r in range(R):
        for c in range(C):
            s = labels[r][c]
            if s:
                paths.append(_glyph_path(s, fontsize))
                offsets.append((x0 + c + 0.5, y0 + r + 0.5))
                fills.append(text_color(colors[r, c]))
    if not paths:
        return None
    points = Affine2D().scale(1 / 72) + cv.fig.dpi_scale_trans      # glyph points -> display
    glyphs = PathCollection(paths, offsets=offsets, offset_transform=cv.ax.transData, transform=points,
                            facecolors=fills, edgecolors="none", zorder=2.5)
    cv.ax.add_collection(glyphs)
    return glyphs


def outline(cv: Canvas, rects, *, color="#222222", lw=2.0, ls="-", zorder=3):
    """Unfilled rectangles (x, y, w, h) in data units, one collection."""
    if not rects:
        return
    verts = [[(x, y), (x + w, y), (x + w, y + h), (x, y + h)] for x, y, w, h in rects]
    cv.ax.add_collection(PolyCollection(verts, facecolors="none", edgecolors=color, linewidths=lw,
                                        linestyles=ls, zorder=zorder))


def lines(cv: Canvas, segs, *, color="#222222", lw=1.0, ls="-", zorder=3):
    if len(segs):
        cv.ax.add_collection(LineCollection(segs, colors=color, linewidths=lw, linestyles=ls, zorder=zorder))


def tag(cv: Canvas, x, y, s, *, size=None, color="#222222", gid=None, ha="left"):
    """A small boxed label (matrix index, mma tile index) sitting on an outline."""
    size = size or max(MIN_FONT + 1, min(TEXT_FONT - 1, cv.cell_pt * 0.3))
    return cv.text(x, y, s, size=size, ha=ha, va="center", color="white", weight="bold", gid=gid,
                   bbox={"boxstyle": "round,pad=0.18", "fc": color, "ec": "none"}, zorder=5)


def axis_numbers(cv: Canvas, x0, y0, rows: int, cols: int, *, top=True, left=True, step=None, size=None,
                 row0: int = 0, col0: int = 0):
    """Row numbers left of a grid and column numbers above it (every ``step``-th when cells are small);
    ``row0``/``col0``: the numbers of the first row and column (a grid showing part of a tile)."""
    size = size or min(TEXT_FONT - 1, max(AXIS_FONT, cv.cell_pt * 0.32))
    if step is None:
        step = 1 if cv.cell_pt >= size * 2.6 else next(s for s in (2, 4, 8, 16, 32, 64)
                                                        if cv.cell_pt * s >= size * 2.6)
    gap = cv.units(0.04)
    if top:
        for c in range(0, cols, step):
            cv.text(x0 + c + 0.5, y0 - gap, str(col0 + c), size=size, ha="center", va="bottom", color="#555555")
    if left:
        for r in range(0, rows, step):
            cv.text(x0 - gap, y0 + r + 0.5, str(row0 + r), size=size, ha="right", va="center", color="#555555")


def check_path(path) -> str:
    """The output path, with a format matplotlib writes (by extension)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name (str or os.PathLike), got {type(path).__name__}")
    p = os.fspath(path)
    ext = os.path.splitext(p)[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise ValueError(f"path {p!r}: the picture format comes from the extension: .png, .svg or .pdf "
                         f"(got {'.' + ext if ext else 'no extension'})")
    return p


def save(fig: Figure, path) -> str:
    """Write ``fig`` as PNG, SVG or PDF (by extension) and return the path."""
    import matplotlib
    p = check_path(path)
    if p.lower().endswith(".png"):
        with open(p, "wb") as f:
            f.write(png_bytes(fig))
    elif p.lower().endswith(".svg"):
        with open(p, "w", encoding="utf-8") as f:
            f.write(svg_text(fig))
    else:
        with matplotlib.rc_context(dict(SVG_RC)):  # type: ignore[arg-type]  # stubs list every rc key
            fig.savefig(p, dpi=DPI, metadata={"Date": None})     # reproducible: no creation date
    return p


def svg_text(fig: Figure) -> str:
    """The figure as SVG, its grids written compactly (see ``draw_cells``) under everything else."""
    import matplotlib
    cells = getattr(fig, CELLS, None) or []
    hidden = [a for c in cells for a in c.artists if a is not None and a.get_visible()]
    for a in hidden:
        a.set_visible(False)
    try:
        buf = io.StringIO()
        with matplotlib.rc_context(dict(SVG_RC)):  # type: ignore[arg-type]  # stubs list every rc key
            fig.savefig(buf, format="svg", metadata={"Date": None})
    finally:
        for a in hidden:
            a.set_visible(True)
    svg = buf.getvalue()
    if not cells:
        return svg
    i = svg.index(">", svg.index('<g id="axes_1"')) + 1
    svg = svg[:i] + "".join(c.svg for c in cells) + svg[i:]
    css = "".join(f"\n  .{name} {{{style}}}" for style, name in getattr(fig, STYLES).items())
    j = svg.index("</style>")
    return svg[:j] + css + "\n  " + svg[j:]


def png_bytes(fig: Figure) -> bytes:
    """The figure as a 256-colour PNG: these pictures are flat colours and text, so a palette
    keeps them sharp at a third of the size, and is quicker to write than matplotlib's RGBA PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image
    canvas = FigureCanvasAgg(fig)
    fig.set_dpi(DPI)
    canvas.draw()
    rgb = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
    buf = io.BytesIO()
    rgb.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(buf, format="png")
    return buf.getvalue()


def finish(cv: Canvas, path=None) -> Figure:
    if path is not None:
        save(cv.fig, path)
    return cv.fig
