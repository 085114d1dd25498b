"""ldmatrix / stmatrix flows: which lane gives each 16-byte row address, and where every element goes.

``draw_ldmatrix_flow(op, addrs)`` draws, for ``ldmatrix``/``stmatrix`` ``.x1/.x2/.x4[.trans]``:

* shared memory, one 16-byte row per address lane (lanes 8i..8i+7 give matrix i's rows), each row
  tagged with its lane and address; each 16-bit element labelled and coloured by the lane whose
  register it lands in (a register's two halves joined, as in the fragment maps);
* the registers, one row per lane, each half labelled with the matrix row and column it comes
  from; arrows for a few lanes (``arrows``) connect the two;
* the memory itself, in 128-byte lines whose 16-byte columns are bank groups (banks 4j..4j+3):
  where each row really is, which lane reads it, and with a ``tile`` (a ``fragsim.Tile`` or a
  ``viz`` placement) which logical tile row it holds -- so a swizzle or a padding shows where the
  logical rows landed.  Each matrix's bank phase cost is printed beside it.

With ``form=`` and ``operand=`` the flow is that operand's load (or store): the default addresses
are the operand stored densely in the layout the instruction needs, and the elements carry their
PTX names (``T5 a2``).  Everything comes from the instruction table's movement layouts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:      # annotations only: matplotlib loads when a picture is drawn
    from matplotlib.figure import Figure

from functools import lru_cache

import numpy as np

from fragsim.facts.hardware import BANK_BYTES, MATRIX_ROW_BYTES, MATRIX_ROWS, WARP_LANES, WAVEFRONT_BYTES
from fragsim.instructions import check_operand, lookup, parse_shared_op

from . import _blocks
from ._figure import TEXT_FONT, Canvas, draw_cells, finish, fit_labels, lines, outline, tag, text_width
from ._tile import placement
from .palette import EMPTY, LANE_RGB, PADDING, darker

HALVES = MATRIX_ROW_BYTES // 2          # 16-bit elements per row
GROUP_GAP = 0.8                         # cells between two matrices (and two groups of 8 lanes)
HEAD = 1.4                              # cells above the first row (panel headings)
CHUNKS = WAVEFRONT_BYTES // MATRIX_ROW_BYTES   # 16-byte chunks per 128-byte line = bank groups
MAX_LINES = 48


def _entry(op):
    e = parse_shared_op(op)
    if e.movement is None:
        raise ValueError(f"op {op!r}: a flow is drawn for ldmatrix/stmatrix (.x1/.x2/.x4[.trans]), not {e.name}")
    return e


def _storage_for(form, operand, entry):
    st = _blocks.storages(form, operand)
    if not st:
        raise ValueError(f"operand {operand} of {form.name}: {form.fmt(operand).name} elements, a layout no "
                         "ldmatrix/stmatrix moves")
    if entry is None:
        return st[0]
    for s in st:
        if s.num == entry.num and s.trans == entry.trans:
            return s
    raise ValueError(f"{entry.name} does not move operand {operand} of {form.name}; "
                     f"{' or '.join(s.op_name(entry.family) for s in st)} does")


def _check_addrs(addrs, entry) -> np.ndarray:
    from fragsim.sim.smem import check_addrs
    a = np.asarray(addrs)
    if a.shape != (WARP_LANES,):
        raise ValueError(f"addrs must hold 32 byte offsets (one per lane), got shape {a.shape}")
    used = np.arange(WARP_LANES) < entry.address_lanes
    return check_addrs(a, entry.bytes_per_addr, 1 << 62, used, entry.what, single=True)


def _row_y(k: int) -> float:
    """y of memory row k (address lane k) and of lane k's registers: groups of 8 with a gap."""
    return HEAD + k + (k // MATRIX_ROWS) * GROUP_GAP


def flow_data(op, addrs=None, *, form=None, operand=None, place=None, coords=None):
    """The facts a flow shows, as arrays: (entry, addrs, dst_lane, dst_half, src, col, storage).

    ``dst_lane[k, j]``/``dst_half[k, j]``: where 16-bit element j of the row lane k addresses goes;
    ``src``/``col`` (32, num, 2): the movement (row lane, element) of each (lane, register, half).
    Addresses: ``addrs``; else ``coords`` (each lane's (row, col) in the tile ``place``); else the
    operand's rows (in ``place`` if given, else stored densely); else rows one after another.
    """
    entry = None if op is None else _entry(op)
    storage = None
    if form is not None or operand is not None:
        if form is None or operand is None:
            raise ValueError("give both form= and operand= (or neither)")
        form = lookup(form)
        storage = _storage_for(form, check_operand(operand), entry)
        if entry is None:
            entry = parse_shared_op(storage.op_name())
    if entry is None:
        entry = _entry("ldmatrix.x4")
    if coords is not None:
        if addrs is not None or place is None:
            raise ValueError("coords (each lane's (row, col) in the tile) go with tile=, instead of addrs")
        rows, cols = coords
        addrs = np.broadcast_to(place.offsets(rows, cols), (WARP_LANES,))
    if addrs is None and storage is not None and place is not None:
        starts = [storage.mem_coords(r, c) for r, c in storage.row_starts()]
        addrs = np.resize(place.offsets([r for r, _ in starts], [c for _, c in starts]), WARP_LANES)
    if addrs is None:
        addrs = storage.addrs() if storage is not None else np.resize(
            np.arange(entry.address_lanes) * MATRIX_ROW_BYTES, WARP_LANES)
    a = _check_addrs(addrs, entry)
    src, col = entry.movement.table()
    n = entry.address_lanes
    dst_lane = np.empty((n, HALVES), np.int64)
    dst_half = np.empty((n, HALVES), np.int64)
    L, _, H = np.meshgrid(np.arange(WARP_LANES), np.arange(entry.num), np.arange(2), indexing="ij")
    dst_lane[src, col] = L
    dst_half[src, col] = H
    return entry, a, dst_lane, dst_half, src, col, storage


def draw_ldmatrix_flow(op=None, addrs=None, *, form=None, operand=None, tile=None, coords=None,
                       arrows=(0,), path=None, gid_prefix: str = "") -> "Figure":  # noqa: F821
    """The flow picture of ``op`` with the lanes' row addresses ``addrs`` (32 byte offsets).

    Without ``addrs``: ``coords`` = (rows, cols) of each lane's row start in ``tile``; or, with
    ``form``/``operand``, the operand's rows (placed in ``tile`` if given, else stored densely); or
    rows one after another.  ``op`` defaults to the instruction that moves the operand, or
    ``ldmatrix.x4``.  ``tile`` (a ``fragsim.Tile``) also names the logical element each row holds.
    """
    place = placement(tile)
    entry, a, dst_lane, dst_half, src, col, storage = flow_data(op, addrs, form=form, operand=operand,
                                                                place=place, coords=coords)
    arrows = _lanes(arrows)
    store = entry.kind == "stsm"
    num, n = entry.num, entry.address_lanes
    by_addr = place.by_address() if place is not None else {}

    LBL = 6.2                                   # row labels left of memory
    mx = LBL                                    # memory rows (16 halves... 8 cells)
    rx = mx + HALVES + 4.2                      # registers
    lines_ = _memory_lines(a[:n], place)
    px = rx + 2 * num + 3.6                     # physical memory lines
    width = px + CHUNKS
    height = _row_y(WARP_LANES - 1) + 1
    cv = Canvas(width, max(height, HEAD + len(lines_) + 1), pad=(0.2, 0.2, 0.95, 0.6), max_in=17.0,
                target=path)

    from fragsim.banks import bank_conflicts
    rep = bank_conflicts(entry, a)
    arrow = "registers -> shared memory" if store else "shared memory -> registers"
    cv.title(f"{entry.ptx}   ({arrow})\n{rep.wavefronts} wavefronts, ideal {rep.ideal}, "
             f"{rep.conflicts} bank conflicts" + (f"   |   {storage.describe()}" if storage else "")
             + (f"   |   tile {place.name}" if place is not None else ""))

    # shared-memory rows -------------------------------------------------------------------------
    full, short, reg_labels, reg_short = flow_labels(dst_lane, dst_half, src, col, storage)
    labels, fs = fit_labels(cv.cell_pt * 0.9, full, short)
    insets = np.full((n, HALVES, 4), 0.05)
    segs, seg_col = [], []
    for k in range(n):
        for j in range(HALVES):
            # a register's two halves are neighbours: side by side, or (.trans) one row apart
            if j + 1 < HALVES and dst_lane[k, j + 1] == dst_lane[k, j] and dst_half[k, j + 1] == dst_half[k, j] + 1:
                insets[k, j, 1] = insets[k, j + 1, 0] = 0
                segs.append([(mx + j + 1, _row_y(k) + 0.05), (mx + j + 1, _row_y(k) + 0.95)])
                seg_col.append(darker(LANE_RGB[dst_lane[k, j]]))
            if (k + 1) % MATRIX_ROWS and k + 1 < n and dst_lane[k + 1, j] == dst_lane[k, j] \
                    and dst_half[k + 1, j] == dst_half[k, j] + 1:
                insets[k, j, 3] = insets[k + 1, j, 2] = 0
                segs.append([(mx + j + 0.05, _row_y(k + 1)), (mx + j + 0.95, _row_y(k + 1))])
                seg_col.append(darker(LANE_RGB[dst_lane[k, j]]))
    for i in range(num):
        rows = slice(i * MATRIX_ROWS, (i + 1) * MATRIX_ROWS)
        gid = [[f"{gid_prefix}flow-s-{k}-{j}" for j in range(HALVES)] for k in range(i * MATRIX_ROWS, (i + 1) * MATRIX_ROWS)]
        draw_cells(cv, mx, _row_y(i * MATRIX_ROWS), LANE_RGB[dst_lane[rows]], None if labels is None else labels[rows],
                   fontsize=fs, gids=gid, insets=insets[rows])
        ph = rep.phases[i] if i < len(rep.phases) else None
        cost = f"   phase {i}: {ph.wavefronts} wavefront{'s' if ph.wavefronts != 1 else ''}" if ph else ""
        cv.text(mx, _row_y(i * MATRIX_ROWS) - 0.12, f"matrix {i} -> register {i}{cost}", size=TEXT_FONT - 1,
                va="bottom", weight="bold")
    lines(cv, segs, color=seg_col, lw=0.7, ls=(0, (1.5, 1.5)))
    small = max(5.0, min(TEXT_FONT - 1.5, cv.cell_pt * 0.27))
    for k in range(n):
        y = _row_y(k) + 0.5
        tag(cv, 0.05, y, f"T{k}", color=darker(LANE_RGB[k], 0.8), gid=f"{gid_prefix}flow-row-{k}", size=small)
        cv.text(1.35, y, f"{a[k]:#06x}", size=small, family="monospace")
        where = _row_name(storage, k, a[k], place, by_addr)
        if where:
            cv.text(3.4, y, where, size=small, color="#333333")
    cv.text(0, HEAD - 0.9, "row address from lane", size=TEXT_FONT - 1, va="bottom", color="#333333")
    cv.text(mx, HEAD - 0.9, "shared memory: 16-byte rows (cell = 16-bit element -> lane)",
            size=TEXT_FONT - 1, va="bottom", color="#333333")

    # registers ------------------------------------------------------------------------------------
    rl, rfs = fit_labels(cv.cell_pt * 0.9, reg_labels, reg_short)
    rins = np.full((WARP_LANES, 2 * num, 4), 0.05)
    rins[:, 0::2, 1] = 0
    rins[:, 1::2, 0] = 0
    for g in range(WARP_LANES // MATRIX_ROWS):
        lanes = slice(g * MATRIX_ROWS, (g + 1) * MATRIX_ROWS)        # the address lanes of matrix g
        gid = [[f"{gid_prefix}flow-r-{l}-{c // 2}-{c % 2}" for c in range(2 * num)] for l in range(lanes.start, lanes.stop)]
        colors = np.repeat(LANE_RGB[lanes, None, :], 2 * num, axis=1)
        draw_cells(cv, rx, _row_y(lanes.start), colors, None if rl is None else rl[lanes], fontsize=rfs, gids=gid,
                   insets=rins[lanes])
    lines(cv, [[(rx + 2 * i + 1, _row_y(l) + 0.05), (rx + 2 * i + 1, _row_y(l) + 0.95)]
               for l in range(WARP_LANES) for i in range(num)], color="#555555", lw=0.6, ls=(0, (1.5, 1.5)))
    for l in range(WARP_LANES):
        cv.text(rx - 0.12, _row_y(l) + 0.5, f"T{l}", size=small, ha="right")
    for i in range(num):
        cv.text(rx + 2 * i + 1, HEAD - 0.1, f"reg {i}\nlo  hi", size=small, ha="center", va="bottom")
    cv.text(rx - 1.2, HEAD - 0.9, "registers: " + ("element, (row, col) in each half" if storage is not None
                                                   else "matrix row r, column c in each half"),
            size=TEXT_FONT - 1, va="bottom", color="#333333")

    # arrows for a few lanes: from the row (its cells outlined) to the lane's registers (outlined too).
    # They run in the free column between memory and registers -- out along the row, up or down a
    # channel of their own, in to the lane's row -- and stop left of the lane labels, so no label is
    # ever under an arrow.
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.path import Path
    end_x = rx - 0.12 - max(text_width(f"T{x}", small) for x in range(WARP_LANES)) / cv.cell_pt - 0.15
    channel = min(0.3, (end_x - (mx + HALVES + 0.4)) / (num + 1))
    marked = []
    for l in arrows:
        dark = darker(LANE_RGB[l], 0.45)
        for i in range(num):
            cells = [(int(src[l, i, h]), int(col[l, i, h])) for h in range(2)]
            marked += [((mx + j + 0.04, _row_y(k) + 0.04, 0.92, 0.92), dark) for k, j in cells]
            marked += [((rx + 2 * i + h + 0.04, _row_y(l) + 0.04, 0.92, 0.92), dark) for h in range(2)]
            y_mem = np.mean([_row_y(k) + 0.5 for k, _ in cells])
            y_reg = _row_y(l) + 0.5 + (i - (num - 1) / 2) * min(0.18, 0.8 / num)
            x_c = end_x - channel * (i + 1)
            route = [(mx + HALVES + 0.08, y_mem), (x_c, y_mem), (x_c, y_reg), (end_x, y_reg)]
            shaft = FancyArrowPatch(path=Path(route[::-1] if store else route), arrowstyle="-|>", color=dark,
                                    lw=1.0, alpha=0.85, mutation_scale=9, zorder=6)
            shaft.set_gid(f"{gid_prefix}flow-arrow-{l}-{i}")
            cv.ax.add_patch(shaft)
    for rect, color in marked:
        outline(cv, [rect], color=color, lw=1.6, zorder=4)

    _physical(cv, px, a[:n], lines_, place, by_addr, small, gid_prefix)
    notes = [f"arrows: lane{'s' if len(arrows) > 1 else ''} {', '.join(map(str, arrows))}" if arrows else "",
             "lanes past the address lanes give no row address (ignored)" if n < WARP_LANES else ""]
    cv.text(0, height + 0.3, "   ".join(x for x in notes if x), size=TEXT_FONT - 1, va="top", color="#333333")
    return finish(cv, path)


def flow_labels(dst_lane, dst_half, src, col, storage):
    """The flow's cell texts (as ``flow_data`` gives the flow): memory rows (n, 8) ``T5 a2`` (without an
    operand: ``T5 r0.l``, register 0's low half) and registers (32, 2 * num) ``a2 9,3`` (the element
    and its operand row, column; without an operand: ``r1 c4``, matrix row 1, column 4), each as
    (two-line labels, one-line labels): (memory, memory short, registers, registers short)."""
    n, num = dst_lane.shape[0], src.shape[1]
    names = _element_names(storage, n)
    mem = np.empty((n, HALVES), dtype=object)
    mem_short = np.empty((n, HALVES), dtype=object)
    for (k, j), ln in np.ndenumerate(dst_lane):
        mem_short[k, j] = f"T{ln}"
        mem[k, j] = f"T{ln}\n{names[k][j]}" if names is not None else f"T{ln}\nr{k // MATRIX_ROWS}.{'lh'[dst_half[k, j]]}"
    regs = np.empty((WARP_LANES, 2 * num), dtype=object)
    regs_short = np.empty((WARP_LANES, 2 * num), dtype=object)
    for l in range(WARP_LANES):
        for i in range(num):
            for h in range(2):
                k, j = src[l, i, h], col[l, i, h]
                if names is not None:
                    r, c = _operand_cell(storage, k, j)
                    regs[l, 2 * i + h] = f"{names[k][j]}\n{r},{c}"
                    regs_short[l, 2 * i + h] = names[k][j]
                else:
                    regs[l, 2 * i + h] = f"r{k % MATRIX_ROWS}\nc{j}"
                    regs_short[l, 2 * i + h] = f"{k % MATRIX_ROWS},{j}"
    return mem, mem_short, regs, regs_short


def row_name(storage, k: int) -> str:
    """The operand row (or column) address lane ``k`` gives the start of: ``A[5, 0:8]``."""
    return _row_name(storage, k, 0, None, {})


def _lanes(arrows):
    lanes = [] if arrows is None else list(np.atleast_1d(np.asarray(arrows)).ravel())
    for x in lanes:
        if not (isinstance(x, (int, np.integer)) and 0 <= x < WARP_LANES):
            raise ValueError(f"arrows must be lane numbers 0..31, got {x!r}")
    return [int(x) for x in lanes]


def _element_names(storage, n):
    """names[k][j]: the PTX element(s) in 16-bit element j of memory row k (a2; a0-3 where one
    16-bit piece holds several 8-, 4- or 1-bit elements), or None."""
    if storage is None:
        return None
    form, op = storage.form, storage.operand
    _, reg, half = form.owner(op)
    per_cell = max(1, 16 // storage.elem_bits)

    def name(k, j):
        first = form.element_name(op, *(x[_operand_cell(storage, k, j)] for x in (reg, half)))
        if per_cell == 1:
            return first
        last = form.element_name(op, *(x[_operand_cell(storage, k, j, per_cell - 1)] for x in (reg, half)))
        return f"{first}-{last[1:]}"
    return [[name(k, j) for j in range(HALVES)] for k in range(n)]


@lru_cache(maxsize=64)
def _row_starts(storage) -> list:
    return storage.row_starts()


def _operand_cell(storage, k, j, sub=0):
    """Operand (row, col) of element ``sub`` within 16-bit piece j of memory row k."""
    mr, mc = storage.mem_coords(*_row_starts(storage)[k])
    return storage.operand_coords(mr, mc + (j * 16) // storage.elem_bits + sub)


def _row_name(storage, k, addr, place, by_addr) -> str:
    if storage is not None:
        r, c = storage.row_starts()[k]
        per = storage.per_row
        if storage.major == "row":
            return f"{storage.operand}[{r}, {c}:{c + per}]"
        return f"{storage.operand}[{r}:{r + per}, {c}]"
    if place is None:
        return ""
    cells = [by_addr.get(addr + b) for b in range(0, MATRIX_ROW_BYTES, place.esize)]
    if any(x is None for x in cells):
        return "outside the tile" if all(x is None for x in cells) else "partly outside the tile"
    rows = {r for r, _ in cells}
    cols = [c for _, c in cells]
    if len(rows) == 1 and cols == list(range(cols[0], cols[0] + len(cols))):
        return f"tile[{rows.pop()}, {cols[0]}:{cols[-1] + 1}]"
    return "tile " + " ".join(f"({r},{c})" for r, c in cells[:2]) + " ..."


def _memory_lines(a, place) -> list:
    """The 128-byte lines to draw: the tile's footprint when small enough, else the lines read."""
    read = sorted({int(x) // WAVEFRONT_BYTES for x in a})
    if place is not None:
        g = place.grid()
        lo, hi = int(g.min()) // WAVEFRONT_BYTES, (int(g.max()) + place.esize - 1) // WAVEFRONT_BYTES
        if hi - lo + 1 <= MAX_LINES:
            return sorted(set(range(lo, hi + 1)) | set(read))[:MAX_LINES]
    return read[:MAX_LINES]


def _physical(cv, px, a, lines_, place, by_addr, small, gid_prefix):
    """Memory as 128-byte lines x 16-byte chunks (bank groups), each chunk read marked with its lane."""
    nl = len(lines_)
    index = {ln: i for i, ln in enumerate(lines_)}
    colors = np.tile(np.array(EMPTY_RGB), (nl, CHUNKS, 1))
    labels = np.full((nl, CHUNKS), "", dtype=object)
    if place is not None:
        g = place.grid()
        lo, hi = int(g.min()), int(g.max())
        for i, ln in enumerate(lines_):
            for ch in range(CHUNKS):
                base = ln * WAVEFRONT_BYTES + ch * MATRIX_ROW_BYTES
                cells = [by_addr.get(base + b) for b in range(0, MATRIX_ROW_BYTES, place.esize)]
                inside = [x for x in cells if x is not None]
                if inside:
                    r, c = inside[0]
                    labels[i, ch] = f"({r},{c})"
                elif lo <= base <= hi:
                    colors[i, ch] = PADDING_RGB
                    labels[i, ch] = "pad"
    readers: dict = {}
    for k, x in enumerate(a):
        readers.setdefault((int(x) // WAVEFRONT_BYTES, (int(x) % WAVEFRONT_BYTES) // MATRIX_ROW_BYTES), []).append(k)
    for (ln, ch), ks in readers.items():
        if ln in index:
            colors[index[ln], ch] = LANE_RGB[ks[0]]
            where = labels[index[ln], ch]
            labels[index[ln], ch] = ",".join(f"T{k}" for k in ks[:2]) + ("+" if len(ks) > 2 else "") \
                + (f"\n{where}" if where and where != "pad" else "")
    first = np.vectorize(lambda s: s.split("\n")[0], otypes=[object])(labels)
    labels, fs = fit_labels(cv.cell_pt * 0.9, labels, first)
    gids = [[f"{gid_prefix}flow-p-{ln}-{ch}" for ch in range(CHUNKS)] for ln in lines_]
    y0 = HEAD
    draw_cells(cv, px, y0, colors, labels, fontsize=fs, gids=gids)
    prev = None
    for i, ln in enumerate(lines_):
        cv.text(px - 0.12, y0 + i + 0.5, f"{ln * WAVEFRONT_BYTES:#06x}", size=small, ha="right", family="monospace")
        if prev is not None and ln != prev + 1:
            lines(cv, [[(px - 2.4, y0 + i), (px + CHUNKS, y0 + i)]], color="#888888", lw=1.0, ls=(0, (4, 2)))
        prev = ln
    for ch in range(CHUNKS):
        b = ch * MATRIX_ROW_BYTES // BANK_BYTES
        cv.text(px + ch + 0.5, y0 - 0.1, f"{b}-{b + 3}", size=small, ha="center", va="bottom")
    cv.text(px - 2.4, y0 - 0.9, "memory: 128-byte lines, columns = banks", size=TEXT_FONT - 1, va="bottom",
            color="#333333")
    if nl and lines_[-1] - lines_[0] + 1 > nl:
        cv.text(px - 2.4, y0 + nl + 0.2, "(dashed: lines skipped)", size=small, va="top", color="#555555")


def _rgb(hexcolor):
    from matplotlib.colors import to_rgb
    return to_rgb(hexcolor)


EMPTY_RGB = _rgb(EMPTY)
PADDING_RGB = _rgb(PADDING)
