"""Swizzle views: where each 16-byte chunk of a logical tile lands, and why that spreads the banks.

``draw_swizzle(swizzle)`` draws, side by side:

* the logical tile, rows x 16-byte chunks, each chunk coloured by the bank group (banks 4j..4j+3)
  its bytes land in -- a column of one colour is a column whose rows share banks, which an
  ``ldmatrix`` phase (8 rows of one column) pays for in wavefronts, printed under each column;
* the physical memory in 128-byte lines (16-byte columns = bank groups), each slot labelled with
  the logical chunk it holds and coloured by that chunk's logical column, so the permutation shows.

``swizzle_layout(...)`` is what the view shows, as arrays (the explorer page draws it from those).
``swizzle`` is a ``fragsim.Swizzle``, any XOR map or other callable on offsets (``offset_bytes``:
1 for byte offsets, 2 for fp16 element offsets as in CuTe's ``Swizzle<3,3,3>``), or None;
``pitch`` pads rows; ``tile`` takes all of it from a ``fragsim.Tile``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:      # annotations only: matplotlib loads when a picture is drawn
    from matplotlib.figure import Figure

import colorsys
import numbers

import numpy as np

from fragsim.facts.hardware import BANK_BYTES, MATRIX_ROW_BYTES, MATRIX_ROWS, NUM_BANKS, WARP_LANES, WAVEFRONT_BYTES

from ._figure import TEXT_FONT, Canvas, axis_numbers, draw_cells, finish, fit_labels
from ._tile import placement
from .palette import BANK_RGB, EMPTY, PADDING

SLOTS = WAVEFRONT_BYTES // MATRIX_ROW_BYTES       # 16-byte slots per 128-byte line
MAX_LINES = 64


def _column_rgb(c: int, ncols: int):
    return colorsys.hls_to_rgb((c / max(ncols, 1) * 0.85 + 0.55) % 1.0, 0.72, 0.5)


def _describe(sw) -> str:
    if sw is None:
        return "no swizzle"
    if all(hasattr(sw, k) for k in ("B", "M", "S", "yyy_mask")):
        direction = ">>" if sw.S >= 0 else "<<"
        src_lo = sw.M + max(0, sw.S)
        dst_lo = sw.M - min(0, sw.S)
        return (f"{sw!r}: offset ^ ((offset & {sw.yyy_mask:#x}) {direction} {abs(sw.S)}), bits "
                f"{src_lo}..{src_lo + sw.B - 1} XORed into bits {dst_lo}..{dst_lo + sw.B - 1}")
    name = getattr(sw, "__name__", None)          # a plain function: its name, not its address
    return f"the map {name}()" if name else repr(sw)


def _swizzle_fn(sw, offset_bytes: int):
    """Swizzle of byte offsets, for a swizzle of offsets in units of ``offset_bytes``."""
    if sw is None:
        return None
    if offset_bytes == 1:
        return sw

    def fn(byte_offsets):
        b = np.asarray(byte_offsets, dtype=np.int64)
        return np.asarray(sw(b // offset_bytes), dtype=np.int64) * offset_bytes + b % offset_bytes
    return fn


def swizzle_layout(swizzle=None, *, tile=None, rows=None, row_bytes=128, pitch=None, offset_bytes=1, title=None):
    """What a swizzle view shows, as data: (placement, title, chunk_addr, per_col) -- the byte address of
    each 16-byte chunk (rows, chunks) of the logical tile, and per chunk column the wavefronts of the
    worst ldmatrix phase reading 8 of its rows (None for fewer than 8 rows).  Arguments as ``draw_swizzle``."""
    if isinstance(offset_bytes, bool) or not isinstance(offset_bytes, numbers.Integral) or offset_bytes not in (1, 2, 4, 8, 16):
        raise ValueError(f"offset_bytes must be 1, 2, 4, 8 or 16 (bytes per offset unit), got {offset_bytes!r}")
    if tile is None:
        if isinstance(row_bytes, bool) or not isinstance(row_bytes, numbers.Integral) or row_bytes <= 0 \
                or row_bytes % MATRIX_ROW_BYTES:
            raise ValueError(f"row_bytes must be a positive multiple of 16 (whole 16-byte chunks), got {row_bytes!r}")
        if rows is None:
            period = getattr(swizzle, "alignment", 0) * offset_bytes
            rows = min(32, max(MATRIX_ROWS, period // int(row_bytes)))
        place = placement(rows=rows, cols=int(row_bytes), dtype="u8", pitch=pitch,
                          swizzle=_swizzle_fn(swizzle, offset_bytes))
        head = title or (_describe(swizzle) + (f", rows padded to {place.pitch} bytes"
                                               if place.pitch != row_bytes else ""))
    else:
        place = placement(tile)
        head = title or f"tile {place.name}"
    if place.order != "row" or (place.cols * place.esize) % MATRIX_ROW_BYTES:
        raise ValueError("tile: the swizzle view needs row-major rows of whole 16-byte chunks")
    R, C = place.rows, place.cols * place.esize // MATRIX_ROW_BYTES
    rr, cc = np.arange(R)[:, None], (np.arange(C) * MATRIX_ROW_BYTES)[None, :]

    def addr_of(b):
        return place.offsets(rr, (cc + b) // place.esize) + b % place.esize
    chunk_addr = addr_of(0)
    _check_chunks(addr_of, R, C)
    # what one ldmatrix phase (8 rows of one chunk column) costs, column by column
    from fragsim.banks import bank_conflicts
    wf = []
    for c in range(C):
        for r0 in range(0, R - MATRIX_ROWS + 1, MATRIX_ROWS):
            a = np.resize(chunk_addr[r0:r0 + MATRIX_ROWS, c], WARP_LANES)
            wf.append(bank_conflicts("ldmatrix.x1", a).wavefronts)
    per_col = np.array(wf).reshape(C, -1).max(axis=1) if wf else None
    return place, head, chunk_addr, per_col


def draw_swizzle(swizzle=None, *, tile=None, rows=None, row_bytes=128, pitch=None, offset_bytes=1,
                 title=None, path=None) -> "Figure":  # noqa: F821
    """Logical tile -> physical placement of ``swizzle`` (or ``pitch`` padding, or a ``tile``)."""
    place, head, chunk_addr, per_col = swizzle_layout(swizzle, tile=tile, rows=rows, row_bytes=row_bytes,
                                                      pitch=pitch, offset_bytes=offset_bytes, title=title)
    R, C = chunk_addr.shape
    bank0 = (chunk_addr // BANK_BYTES) % NUM_BANKS

    used = sorted({int(a) // WAVEFRONT_BYTES for a in chunk_addr.ravel()})
    lines = sorted(set(range(used[0], used[-1] + 1))) if used[-1] - used[0] < MAX_LINES else used[:MAX_LINES]
    height = max(R + 1.6, len(lines))
    # sizes in inches where cells get small (a tall tile): the captions and line addresses keep
    # their width, so the memory grid starts at least 4.4 inches in and the figure is 7.4 wide
    unit = min(0.5, 15.0 / (C + 3.4 + SLOTS), 15.0 / height)
    px = max(C + 3.4, 4.4 / unit)
    cv = Canvas(max(px + SLOTS, px + 3.0 / unit), height, cell_in=unit, max_in=30.0,
                pad=(0.45, 0.2, 1.25, 0.2), target=path)
    cv.title(head + "\nrows x 16-byte chunks; bank group g = banks 4g..4g+3")

    # logical tile, coloured by where it lands
    labels = np.empty((R, C), dtype=object)
    short = np.empty((R, C), dtype=object)
    for (r, c), b in np.ndenumerate(bank0):
        labels[r, c] = f"{r},{c}\nb{b}-{b + 3}"
        short[r, c] = f"{r},{c}"
    lab, fs = fit_labels(cv.cell_pt * 0.9, labels, short)
    draw_cells(cv, 0, 0, BANK_RGB[bank0], lab, fontsize=fs,
               gids=[[f"logical-{r}-{c}" for c in range(C)] for r in range(R)])
    axis_numbers(cv, 0, 0, R, C)
    cv.text(0, -cv.units(0.3), "logical tile (row, chunk): colour = banks it lands in", size=TEXT_FONT - 1,
            va="bottom", color="#333333")
    if per_col is not None:
        small = max(5.0, min(TEXT_FONT - 1, cv.cell_pt * 0.3))
        for c in range(C):
            cv.text(c + 0.5, R + 0.25, str(per_col[c]), size=small, ha="center", va="top",
                    color="#d62728" if per_col[c] > 1 else "#2a7d2a", weight="bold")
        cv.text(0, R + 0.95, "wavefronts of an ldmatrix phase reading 8 rows of the column (worst 8-row block)",
                size=TEXT_FONT - 1.5, va="top", color="#333333")

    # physical memory
    index = {ln: i for i, ln in enumerate(lines)}
    nl = len(lines)
    colors = np.tile(np.array(_rgb(EMPTY)), (nl, SLOTS, 1))
    plabels = np.full((nl, SLOTS), "", dtype=object)
    for (r, c), a in np.ndenumerate(chunk_addr):
        ln, slot = int(a) // WAVEFRONT_BYTES, (int(a) % WAVEFRONT_BYTES) // MATRIX_ROW_BYTES
        if ln in index:
            colors[index[ln], slot] = _column_rgb(c, C)
            plabels[index[ln], slot] = f"{r},{c}"
    lo, hi = int(chunk_addr.min()), int(chunk_addr.max())
    for i, ln in enumerate(lines):
        for s in range(SLOTS):
            a = ln * WAVEFRONT_BYTES + s * MATRIX_ROW_BYTES
            if not plabels[i, s] and lo <= a <= hi:
                colors[i, s] = _rgb(PADDING)
                plabels[i, s] = "pad"
    pl, pfs = fit_labels(cv.cell_pt * 0.9, plabels)
    draw_cells(cv, px, 0, colors, pl, fontsize=pfs,
               gids=[[f"physical-{ln}-{s}" for s in range(SLOTS)] for ln in lines])
    small = max(5.0, min(TEXT_FONT - 1, cv.cell_pt * 0.26))
    wide = cv.cell_pt >= 5 * 0.62 * small          # "28-31" fits over a slot, else its first bank
    for s in range(SLOTS):
        b = s * MATRIX_ROW_BYTES // BANK_BYTES
        cv.text(px + s + 0.5, -0.08, f"{b}-{b + 3}" if wide else str(b), size=small, ha="center", va="bottom")
    step = 1 if cv.cell_pt >= small * 1.15 else 2 if cv.cell_pt * 2 >= small * 1.15 else 4
    for i, ln in list(enumerate(lines))[::step]:
        cv.text(px - 0.1, i + 0.5, f"{ln * WAVEFRONT_BYTES:#06x}", size=small, ha="right", family="monospace")
    cv.text(px - cv.units(1.1), -cv.units(0.3), "memory: 128-byte lines x banks; each slot holds the logical\n"
            "(row, chunk) written in it, coloured by that chunk's logical column"
            + ("" if wide else "\ncolumns: the first of the 4 banks of a slot"), size=TEXT_FONT - 1, va="bottom",
            color="#333333")
    if len(lines) < len(used) or lines[-1] < used[-1]:
        cv.text(px, len(lines) + 0.3, f"the first {len(lines)} of the {len(used)} lines the tile uses",
                size=TEXT_FONT - 1.5, va="top", color="#333333")
    return finish(cv, path)


def _check_chunks(addr_of, R, C):
    """Each 16-byte chunk must stay in one piece: the view draws 16-byte chunks (an ldmatrix row)."""
    start = addr_of(0)
    for b in range(1, MATRIX_ROW_BYTES):
        if not np.array_equal(addr_of(b), start + b):
            raise ValueError("swizzle: it moves bytes within a 16-byte chunk (byte %d of a chunk lands "
                             "elsewhere); the swizzle view draws whole 16-byte chunks" % b)


def _rgb(c):
    from matplotlib.colors import to_rgb
    return to_rgb(c)
