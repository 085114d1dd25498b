"""Fragment maps as text, one renderer for the ``mma.sync`` maps (a warp: 32 lanes) and the wgmma
maps (a warpgroup: 128 threads, thread t being lane t % 32 of warp t // 32): the matrix grid of the
PTX ISA figures (in blocks of columns that fit a line width), each thread's registers and the
elements they hold, and one JSON schema for both."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from . import MmaForm, check_operand, invert_coords, lookup
from .wgmma import WgmmaForm, lookup_wgmma

__all__ = ["DEFAULT_WIDTH", "FragmentMap", "fragment_map", "is_wgmma_spelling", "fragment_grid", "lane_list",
           "fragment_json"]

DEFAULT_WIDTH = 120                  # characters per line of text maps (grid blocks, wrapped lane lists)
_CORNER = "row\\col"


def is_wgmma_spelling(form) -> bool:
    """A wgmma form: a ``WgmmaForm``, or a spelling that starts with ``wgmma.`` or ``m64n`` (no
    ``mma.sync`` shape has M = 64)."""
    return isinstance(form, WgmmaForm) or (isinstance(form, str) and
                                           form.strip().lower().startswith(("wgmma.", "m64n")))


@dataclass(frozen=True)
class FragmentMap:
    """One operand's map: ``thread``/``reg``/``half`` (matrix-shaped) say who holds each element,
    ``rows``/``cols`` (threads, registers, elements per register) which element each holds."""

    form: MmaForm | WgmmaForm
    operand: str
    thread: np.ndarray
    reg: np.ndarray
    half: np.ndarray
    rows: np.ndarray
    cols: np.ndarray

    @property
    def threads(self) -> int:
        return self.rows.shape[0]

    @property
    def warpgroup(self) -> bool:
        return self.threads > WARP_LANES

    @property
    def shape(self) -> tuple[int, int]:
        r, c = self.thread.shape
        return r, c

    def cell(self, r: int, c: int) -> str:
        return f"T{self.thread[r, c]}:{self.form.element_name(self.operand, int(self.reg[r, c]), int(self.half[r, c]))}"

    def header(self) -> str:
        f, op = self.form, self.operand
        rows, cols = self.shape
        who = "thread" if self.warpgroup else "lane"
        head = (f"{f.ptx}  operand {op}: {rows}x{cols} {f.fmt(op).name}, {f.nregs(op)} registers x "
                f"{f.elems_per_reg(op)} element(s) per {who}")
        if self.warpgroup:
            warps = self.threads // WARP_LANES
            per = rows // warps
            head += (f"\n{self.threads} threads, {warps} warps: thread t is lane t%{WARP_LANES} of warp "
                     f"w = t/{WARP_LANES}, which holds rows {per}w..{per}w+{per - 1}")
        return head


def fragment_map(form, operand) -> FragmentMap:
    """The map of an operand of an ``mma.sync`` form or (A, C, D) of a wgmma form."""
    op = check_operand(operand)
    if is_wgmma_spelling(form):
        wf = lookup_wgmma(form)
        rows, cols = wf.coords(op)                        # B (shared memory only) refused in one line
        thread, reg, half = invert_coords(rows, cols, wf.matrix_shape(op))
        return FragmentMap(wf, op, thread, reg, half, rows, cols)
    f = lookup(form)
    rows, cols = f.coords(op)
    thread, reg, half = f.owner(op)
    return FragmentMap(f, op, thread, reg, half, rows, cols)


def _as_map(form, operand) -> FragmentMap:
    return form if isinstance(form, FragmentMap) else fragment_map(form, operand)


def _check_width(width) -> int | None:
    if width is None or width == 0:
        return None
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 0:
        raise ValueError(f"width: expected a number of characters per line (0: no limit), got {width!r}")
    return int(width)


def fragment_grid(form, operand=None, *, width: int | None = DEFAULT_WIDTH, cols=None) -> str:
    """The matrix, one cell per element, each ``T<thread>:<element>`` as in the PTX ISA figures:
    a header line, the column numbers, numbered rows.  ``cols`` (a range of column numbers) shows
    only those; when the columns do not fit ``width`` characters (None or 0: no limit) they come in
    blocks, each under its own column numbers."""
    m = _as_map(form, operand)
    nrows, ncols = m.shape
    if cols is None:
        cols = range(ncols)
    cols = list(cols)
    if not cols:
        raise ValueError(f"cols: no columns selected (the matrix has columns 0..{ncols - 1})")
    if cols != list(range(cols[0], cols[0] + len(cols))):
        raise ValueError(f"cols: expected consecutive column numbers (a range), got {cols[:8]}")
    bad = [c for c in cols if not 0 <= c < ncols]
    if bad:
        raise ValueError(f"cols: column {bad[0]} is outside the {nrows}x{ncols} matrix of operand {m.operand} "
                         f"(columns 0..{ncols - 1})")
    width = _check_width(width)
    cells = [[m.cell(r, c) for c in cols] for r in range(nrows)]
    w = max(max(len(x) for row in cells for x in row), len(str(cols[-1])))
    per = len(cols) if width is None else max(1, (width - len(_CORNER)) // (w + 1))
    if per < len(cols):             # blocks of whole 8-column groups, as the fragments repeat
        per = per - per % 8 if per >= 8 else 1 << (per.bit_length() - 1)
    lines = [m.header()]
    for b0 in range(0, len(cols), per):
        block = range(b0, min(b0 + per, len(cols)))
        if len(block) < ncols:      # a part of the columns: say which
            lines += ([""] if b0 else []) + [f"columns {cols[block[0]]}..{cols[block[-1]]} of 0..{ncols - 1}:"]
        lines.append(_CORNER + " " + " ".join(f"{cols[i]:>{w}}" for i in block))
        lines += [f"{r:>{len(_CORNER)}} " + " ".join(f"{cells[r][i]:>{w}}" for i in block) for r in range(nrows)]
    return "\n".join(lines)


def _pieces(reg: int, elems: list[str], room: int) -> list[str]:
    """Register ``reg``'s item ``rN={(r,c),...}``, cut after the commas between its elements into
    pieces of at most ``room`` characters where it is longer (the 32 elements of a b1 register)."""
    tokens = [e + ("}" if i == len(elems) - 1 else ",") for i, e in enumerate(elems)]
    tokens[0] = f"r{reg}={{" + tokens[0]
    out = [tokens[0]]
    for tok in tokens[1:]:
        if len(out[-1]) + len(tok) > room:
            out.append(tok)
        else:
            out[-1] += tok
    return out


def lane_list(form, operand=None, *, width: int | None = DEFAULT_WIDTH) -> str:
    """Per lane (per thread of a warpgroup, with its warp and lane): each register and the
    (row, col) of the elements it holds, low half first; lines longer than ``width`` continue on
    indented lines (None or 0: no limit)."""
    m = _as_map(form, operand)
    width = _check_width(width)
    out = []
    for t in range(m.threads):
        if m.warpgroup:
            label = f"thread {t:>3} (warp {t // WARP_LANES}, lane {t % WARP_LANES:>2}): "
        else:
            label = f"lane {t:>2}: "
        room = 1 << 30 if width is None else max(width - len(label), 1)
        lines: list[str] = []
        cur = ""
        for r in range(m.rows.shape[1]):
            elems = [f"({m.rows[t, r, e]},{m.cols[t, r, e]})" for e in range(m.rows.shape[2])]
            for j, piece in enumerate(_pieces(r, elems, room)):
                if cur and (j > 0 or len(cur) + 2 + len(piece) > room):
                    lines.append(cur)
                    cur = piece
                else:
                    cur = cur + "  " + piece if cur else piece
        lines.append(cur)
        out.append(label + lines[0])
        out += [" " * len(label) + x for x in lines[1:]]
    return "\n".join(out)


def fragment_json(form, operand=None) -> dict:
    """The map as JSON, one schema for warps and warpgroups.  Matrix-shaped: ``thread`` (0..threads-1),
    its ``warp`` and ``lane`` (thread = 32*warp + lane; an mma.sync map has one warp, thread = lane),
    ``register`` and ``half``; ``by_lane[t]``: thread t's registers, each the [row, col] of its
    elements, low half first."""
    m = _as_map(form, operand)
    f, op = m.form, m.operand
    return {
        "form": f.ptx, "operand": op, "shape": list(m.shape), "format": f.fmt(op).name,
        "threads": m.threads, "warps": m.threads // WARP_LANES,
        "registers_per_lane": f.nregs(op), "elements_per_register": f.elems_per_reg(op),
        "thread": m.thread.tolist(), "warp": (m.thread // WARP_LANES).tolist(),
        "lane": (m.thread % WARP_LANES).tolist(), "register": m.reg.tolist(), "half": m.half.tolist(),
        "by_lane": np.stack([m.rows, m.cols], axis=-1).tolist(),
    }
