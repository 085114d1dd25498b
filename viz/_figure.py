"""What every picture shares: a canvas measured in cells, cell grids with labels that shrink and
then drop as cells get small, and saving by file extension.

A ``Canvas`` is one matplotlib Figure whose single Axes fills it, in data units where one cell is
1 x 1 and y grows downwards (matrix order).  Knowing the size of a cell in points is what lets the
labels pick a font size that fits, or drop out, instead of overflowing on a 128 x 128 tile.
Figures are built with ``matplotlib.figure.Figure`` (no pyplot: no global state, no backend).
"""

from __future__ import annotations

import io
import os

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .palette import text_color

FORMATS = ("png", "svg", "pdf")
DPI = 110

MAX_FONT = 8.0      # points: cell labels never grow past this
MIN_FONT = 4.0      # points: below this a label is unreadable, so it is dropped
TEXT_FONT = 9.0     # titles, axis labels, legends
AXIS_FONT = 5.5     # smallest row/column numbers (fewer of them are shown instead)
PER_CELL_ARTISTS = 6000   # above this many cells, cells are one collection (no per-cell SVG ids)
TINY_CELL = 9.0     # points: cells smaller than this are drawn without gaps (gaps would be noise)
MAX_LABELS = 4096    # above this many cells, colour only: matplotlib draws ~1000 labels a second

# SVG text as <text> (searchable, testable, and what the explorer page highlights), stable ids.
SVG_RC = {"svg.fonttype": "none", "svg.hashsalt": "fragsim"}


_SVG_CELLS = False


class svg_cells:
    """``with svg_cells(): fig = draw_...()``: the figure's named cells become SVG text (see Canvas)."""

    def __enter__(self):
        global _SVG_CELLS
        self._old, _SVG_CELLS = _SVG_CELLS, True
        return self

    def __exit__(self, *exc):
        global _SVG_CELLS
        _SVG_CELLS = self._old


def inject_cells(fig, svg: str) -> str:
    """The SVG of ``fig`` with the cells ``svg_cells`` kept aside put under everything else."""
    cells = getattr(fig, "fragsim_cells", None)
    if not cells:
        return svg
    i = svg.index(">", svg.index('<g id="axes_1"')) + 1
    return svg[:i] + "".join(cells) + svg[i:]


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
        # Cells as one collection and their labels as glyph outlines (one more) when the picture is
        # going to a PNG or PDF: matplotlib lays out and rasterizes each text separately, ~1 ms a
        # label, and each artist costs more; SVG keeps one named <path> and <text> per cell
        # (searchable, testable, and what the explorer page highlights).
        self.label_paths = target is not None and not os.fspath(target).lower().endswith(".svg")
        # Inside ``svg_cells()`` (the explorer page): named cells and their labels are written as SVG
        # text here, not drawn by matplotlib -- the same elements, several times faster -- and
        # ``inject_cells`` puts them under everything matplotlib draws.
        self.fig.fragsim_cells = [] if _SVG_CELLS else None

    def to_svg(self, x: float, y: float) -> tuple[float, float]:
        """Data units -> SVG user units (points from the figure's top left)."""
        return (x - self.x0) * self.unit * 72.0, (y - self.y0) * self.unit * 72.0

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

    def title(self, s: str, y: float | None = None, x: float | None = None):
        """A title in the top margin (``y`` in data units above the content, default the margin's top)."""
        return self.text(self.x0 + self.units(0.1) if x is None else x,
                         self.y0 + self.units(0.12) if y is None else y, s, size=TEXT_FONT + 1,
                         va="top", weight="bold")


def label_font(cell_pt: float, lines: int, chars: int, fill: float = 0.86) -> float | None:
    """The font size that fits ``lines`` lines of ``chars`` characters in a cell, or None if too small."""
    fs = min(MAX_FONT, cell_pt * fill / (1.22 * lines), cell_pt * fill / (0.62 * max(chars, 1)))
    return fs if fs >= MIN_FONT else None


def fit_labels(cell_pt: float, *variants):
    """The first label variant (a 2-D array of strings, or None) whose longest label fits, with its font."""
    for labels in variants:
        if labels is None or np.size(labels) > MAX_LABELS:
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
    ax = cv.ax
    R, C = colors.shape[:2]
    if insets is None or cv.cell_pt < TINY_CELL:
        insets = np.full((R, C, 4), gap if cv.cell_pt >= TINY_CELL else 0.0)
    rr, cc = np.mgrid[0:R, 0:C]
    left = x0 + cc + insets[..., 0]
    right = x0 + cc + 1 - insets[..., 1]
    top = y0 + rr + insets[..., 2]
    bottom = y0 + rr + 1 - insets[..., 3]
    if gids is not None and cv.fig.fragsim_cells is not None:
        cv.fig.fragsim_cells.append(_svg_cells(cv, left, top, right, bottom, colors, gids,
                                               None if fontsize is None else labels, fontsize))
        return
    if gids is not None and R * C <= PER_CELL_ARTISTS and not cv.label_paths:   # ids matter only in SVG
        for r in range(R):
            for c in range(C):
                p = Rectangle((left[r, c], top[r, c]), right[r, c] - left[r, c], bottom[r, c] - top[r, c],
                              facecolor=colors[r, c], edgecolor="none", lw=0)
                p.set_gid(gids[r][c])
                ax.add_artist(p)      # no autoscale work: the limits are fixed
    else:
        verts = np.stack([np.stack([left, top], -1), np.stack([right, top], -1),
                          np.stack([right, bottom], -1), np.stack([left, bottom], -1)], axis=-2)
        ax.add_collection(PolyCollection(verts.reshape(-1, 4, 2), facecolors=colors.reshape(-1, 3),
                                         edgecolors="none", linewidths=0))
    if labels is None or fontsize is None:
        return
    if cv.label_paths:
        _label_paths(cv, x0, y0, colors, labels, fontsize)
        return
    for r in range(R):
        for c in range(C):
            s = labels[r][c]
            if not s:
                continue
            t = ax.text(x0 + c + 0.5, y0 + r + 0.5, s, ha="center", va="center", fontsize=fontsize,
                        color=text_color(colors[r, c]), linespacing=1.05)
            if gids is not None:
                t.set_gid(f"{gids[r][c]}-t")


def _svg_cells(cv: Canvas, left, top, right, bottom, colors, gids, labels, fontsize) -> str:
    """The cells as matplotlib would write them (a named group with the shape, a ``-t`` group with one
    <text> per label line), compactly: <rect>, 1/10-point positions, inline styles (shared later)."""
    k = cv.unit * 72.0
    X0, Y0 = (left - cv.x0) * k, (top - cv.y0) * k
    W, H = (right - left) * k, (bottom - top) * k
    hexes = np.array(["#%02x%02x%02x" % tuple(int(round(v * 255)) for v in c[:3]) for c in colors.reshape(-1, 3)],
                     dtype=object).reshape(colors.shape[:2])
    out = []
    R, C = colors.shape[:2]
    for r in range(R):
        for c in range(C):
            out.append(f'<g id="{gids[r][c]}"><rect x="{X0[r, c]:.1f}" y="{Y0[r, c]:.1f}" width="{W[r, c]:.1f}" '
                       f'height="{H[r, c]:.1f}" style="fill: {hexes[r, c]}"/></g>')
    if labels is not None:
        step = fontsize * 1.05 * 1.2                    # matplotlib's line spacing (linespacing=1.05)
        cx = (left + right) / 2
        cy = (top + bottom) / 2
        for r in range(R):
            for c in range(C):
                s = labels[r][c]
                if not s:
                    continue
                parts = s.split("\n")
                x, y = (float(cx[r, c]) - cv.x0) * k, (float(cy[r, c]) - cv.y0) * k
                style = f"font-size: {fontsize:.2f}px; text-anchor: middle; fill: {_hex(text_color(colors[r, c]))}"
                texts = "".join(f'<text x="{x:.1f}" y="{y + (i - (len(parts) - 1) / 2) * step + fontsize * 0.36:.1f}" '
                                f'style="{style}">{_xml(line)}</text>' for i, line in enumerate(parts))
                out.append(f'<g id="{gids[r][c]}-t">{texts}</g>')
    return "".join(out)


def _hex(color) -> str:
    from matplotlib.colors import to_hex
    return to_hex(color)


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
    if paths:
        points = Affine2D().scale(1 / 72) + cv.fig.dpi_scale_trans      # glyph points -> display
        cv.ax.add_collection(PathCollection(paths, offsets=offsets, offset_transform=cv.ax.transData,
                                            transform=points, facecolors=fills, edgecolors="none", zorder=2.5))


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
        return p
    with matplotlib.rc_context(SVG_RC):
        fig.savefig(p, dpi=DPI, metadata=_metadata(p))
    return p


def _metadata(path: str):
    # Reproducible files: no creation date in SVG/PDF (PNG carries no date by default).
    ext = os.path.splitext(path)[1].lower()
    return {"Date": None} if ext in (".svg", ".pdf") else None


def svg_text(fig: Figure) -> str:
    import matplotlib
    buf = io.StringIO()
    with matplotlib.rc_context(SVG_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


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
