"""The canonical layouts of wgmma's shared-memory operands: core matrices, swizzle atoms, LBO and SBO.

``draw_canonical(desc, major=, elem_bits=, rows=)`` draws, side by side:

* the operand in 16-byte chunks (K-major: rows x the 2 chunks of K; MN-major: k x chunks of MN),
  each 8 x 1 block of chunks one core matrix, in its own colour;
* shared memory as 128-byte lines x 16-byte slots, each slot labelled with the operand chunk the
  descriptor reads from it (``fragsim.layout.descriptor.operand_addresses``), the swizzle atoms dashed, and
  LBO and SBO as arrows from the first core matrix to the next one along K and along M/N.

``draw_descriptor(desc)`` is the K-major 16-bit picture of one descriptor (its Jupyter repr);
``draw_check(report, tile, path)`` the picture of a ``check_wgmma`` report (``fragsim check --wgmma
--png``): the first wrong k-step with the chunks read from the wrong place outlined in red.
"""

from __future__ import annotations

import colorsys
import textwrap

import numpy as np

from fragsim.facts.hardware import MATRIX_ROW_BYTES, MATRIX_ROWS, WAVEFRONT_BYTES
from fragsim.layout.descriptor import SWIZZLE_BYTES, as_descriptor, check_shape, operand_addresses

from ._figure import TEXT_FONT, Canvas, axis_numbers, draw_cells, finish, fit_labels, outline
from .palette import EMPTY

SLOTS = WAVEFRONT_BYTES // MATRIX_ROW_BYTES    # 16-byte slots of a 128-byte line (one row of the banks)
MAX_LINES = 96       # lines of memory drawn (the rest is elided)
WRONG = "#d62728"
LBO_COLOR, SBO_COLOR = "#1f5fbf", "#2a7d2a"


def _rgb(c):
    from matplotlib.colors import to_rgb
    return to_rgb(c)


def _core_rgb(i: int, n: int):
    """Core matrix i of n: hues around the wheel, alternating lightness so neighbours differ."""
    return colorsys.hls_to_rgb((i * 0.61803) % 1.0, 0.70 if i % 2 else 0.60, 0.55)


def _chunks(addr: np.ndarray, major: str, eb: int):
    """Operand chunks (16 bytes each): (grid shape, address of each chunk, core matrix of each chunk).

    K-major: grid rows x 2 (K's two 16-byte halves); MN-major: k x (rows * eb / 16)."""
    per = MATRIX_ROW_BYTES // eb
    if major == "K":
        a = addr[:, ::per]                                   # (rows, 2)
        core = (np.arange(a.shape[0])[:, None] // MATRIX_ROWS) * 2 + np.arange(2)[None, :]
        return a, core
    a = addr[::per, :].T                                     # (k, mn chunks)
    core = (np.arange(a.shape[0])[:, None] // MATRIX_ROWS) * a.shape[1] + np.arange(a.shape[1])[None, :]
    return a, core


def draw_canonical(desc, *, major="K", elem_bits=16, rows=64, wrong=None, reads=None, title=None, path=None):
    """The canonical layout a descriptor reads (see the module docstring).  ``wrong`` (rows, k) bool
    and ``reads`` (rows, k) labels mark what a check found (``draw_check``)."""
    d = as_descriptor(desc)
    k = 256 // elem_bits if isinstance(elem_bits, int) and not isinstance(elem_bits, bool) and elem_bits in (8, 16, 32) \
        else 16
    rows, k, elem_bits, major = check_shape(rows, k, elem_bits, major, "draw_canonical")
    eb = elem_bits // 8
    addr = operand_addresses(d, rows=rows, k=k, elem_bits=elem_bits, major=major)
    ca, core = _chunks(addr, major, eb)
    R, C = ca.shape
    ncore = int(core.max()) + 1
    colors = np.array([[_core_rgb(int(c), ncore) for c in row] for row in core])

    lines_used = sorted({int(a) // WAVEFRONT_BYTES for a in ca.ravel()})
    shown = lines_used[:MAX_LINES]
    index = {ln: i for i, ln in enumerate(shown)}
    nl = len(shown)
    gap = 3.6
    px = C + gap
    what = (f"{'K' if major == 'K' else 'MN'}-major {rows} x {k} of {elem_bits}-bit elements"
            f" ({'imm-trans = 1' if major == 'MN' else 'imm-trans = 0'})")
    head = title or f"{d}\n{what}\nswizzle atom: {_atom(d.swizzle, major)}"
    head = "\n".join(textwrap.fill(line, 78, subsequent_indent="  ") for line in head.split("\n"))
    cv = Canvas(px + SLOTS, max(R, nl), cell_in=0.36, max_in=16.0,
                pad=(0.5, 2.6, 0.95 + 0.2 * (head.count("\n") + 1), 0.3), target=path)
    cv.title(head)

    # the operand, chunk by chunk
    if major == "K":
        labels = np.array([[f"{r},k{c * (k // 2)}" for c in range(C)] for r in range(R)], dtype=object)
        short = np.array([[f"{r}" for c in range(C)] for r in range(R)], dtype=object)
        head = "operand: rows x\n16 B of K"
    else:
        labels = np.array([[f"k{r},{c * (MATRIX_ROW_BYTES // eb)}" for c in range(C)] for r in range(R)], dtype=object)
        short = np.array([[f"{r}" for c in range(C)] for r in range(R)], dtype=object)
        head = "operand: k x\n16 B of M/N"
    lab, fs = fit_labels(cv.cell_pt * 0.95, labels, short)
    draw_cells(cv, 0, 0, colors, lab, fontsize=fs)
    axis_numbers(cv, 0, 0, R, C)
    cv.text(0, -cv.units(0.32), head, size=TEXT_FONT - 1, va="bottom", color="#333333")
    for r0 in range(0, R, MATRIX_ROWS):             # core matrices: 8 chunks of 16 bytes
        outline(cv, [(c, r0, 1, min(MATRIX_ROWS, R - r0)) for c in range(C)], color="#333333", lw=0.8)

    # shared memory
    mem = np.tile(np.array(_rgb(EMPTY)), (nl, SLOTS, 1))
    mlab = np.full((nl, SLOTS), "", dtype=object)
    where = {}
    for (r, c), a in np.ndenumerate(ca):
        ln, slot = int(a) // WAVEFRONT_BYTES, (int(a) % WAVEFRONT_BYTES) // MATRIX_ROW_BYTES
        if ln in index:
            mem[index[ln], slot] = colors[r, c]
            mlab[index[ln], slot] = (f"{r},k{c * (k // 2)}" if major == "K" else f"k{r},{c * (MATRIX_ROW_BYTES // eb)}") \
                if fs else ""
            where[(r, c)] = (index[ln], slot)
    ml, mfs = fit_labels(cv.cell_pt * 0.95, mlab)
    draw_cells(cv, px, 0, mem, ml, fontsize=mfs)
    small = max(5.0, min(TEXT_FONT - 1, cv.cell_pt * 0.3))
    for s in range(SLOTS):
        cv.text(px + s + 0.5, -0.08, f"+{MATRIX_ROW_BYTES * s}", size=small, ha="center", va="bottom", color="#555555")
    for i, ln in enumerate(shown):
        if i == 0 or ln != shown[i - 1] + 1 or i % 4 == 0:
            cv.text(px - 0.1, i + 0.5, f"{ln * WAVEFRONT_BYTES:#06x}", size=small, ha="right", family="monospace")
        if i and ln != shown[i - 1] + 1:       # a gap in the address range
            cv.ax.plot([px - 0.2, px + SLOTS + 0.2], [i, i], color="#888888", lw=1.0, ls=":")
    more = f" (first {MAX_LINES} of {len(lines_used)} lines)" if len(lines_used) > MAX_LINES else ""
    cv.text(px, -cv.units(0.32), f"shared memory: 128-byte lines\nx 16-byte slots{more}", size=TEXT_FONT - 1,
            va="bottom", color="#333333")
    _atoms(cv, px, shown, d.swizzle)
    _arrows(cv, px, d, major, eb, rows, C, where)
    if wrong is not None:
        _wrong(cv, px, ca, major, eb, wrong, where)
    return finish(cv, path)


def _atom(mode: str, major: str) -> str:
    w = SWIZZLE_BYTES[mode]
    if mode == "none":
        return "none (core matrices: 8 rows x 16 B, 128 contiguous bytes)"
    return f"8 x {w} B = {MATRIX_ROWS * w} B, Swizzle<{ {128: 3, 64: 2, 32: 1}[w]},4,3> on the address"


def _atoms(cv, px, shown, mode):
    """Dashed outlines around the swizzle atoms (8 rows of the swizzle width = 1024/512/256 bytes)."""
    if mode == "none":
        return
    size = MATRIX_ROWS * SWIZZLE_BYTES[mode]
    rects, i = [], 0
    while i < len(shown):
        atom = shown[i] * WAVEFRONT_BYTES // size
        j = i
        while j + 1 < len(shown) and shown[j + 1] * WAVEFRONT_BYTES // size == atom and shown[j + 1] == shown[j] + 1:
            j += 1
        rects.append((px, i, SLOTS, j - i + 1))
        i = j + 1
    outline(cv, rects, color="#444444", lw=1.4, ls="--")


def _arrows(cv, px, d, major, eb, rows, C, where):
    """LBO and SBO: from core matrix 0's first chunk to the next core matrix along K / along M,N."""
    mode = d.swizzle
    if major == "K":
        along_k = (0, 1)                               # the second 16 B of K
        along_mn = (MATRIX_ROWS, 0) if rows > MATRIX_ROWS else None
        lbo_pair, sbo_pair = (along_k if mode == "none" else None), along_mn
        lbo_note = "" if mode == "none" else "LBO unused (K-major, swizzled: K is contiguous)"
    else:
        w = SWIZZLE_BYTES[mode] // MATRIX_ROW_BYTES
        along_k = (MATRIX_ROWS, 0)
        nxt = 1 if mode == "none" else w
        along_mn = (0, nxt) if nxt < C else None
        lbo_pair, sbo_pair = (along_k, along_mn) if mode == "none" else (along_mn, along_k)
        lbo_note = "" if lbo_pair else "LBO unused (the operand fits one swizzle row along M/N)"
    notes = []
    for name, pair, value, color in (("LBO", lbo_pair, d.leading_byte_offset, LBO_COLOR),
                                     ("SBO", sbo_pair, d.stride_byte_offset, SBO_COLOR)):
        if pair is None or (0, 0) not in where or pair not in where:
            continue
        (l0, s0), (l1, s1) = where[(0, 0)], where[pair]
        cv.ax.annotate("", xy=(px + s1 + 0.5, l1 + 0.5), xytext=(px + s0 + 0.5, l0 + 0.5),
                       arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.8,
                                   "connectionstyle": "arc3,rad=-0.35"}, zorder=6)
        cv.text(px + SLOTS + 0.3, (l0 + l1) / 2 + 0.5, f"{name} = {value} B", size=TEXT_FONT - 1, color=color,
                weight="bold")
        notes.append(name)
    if lbo_note:
        cv.text(px + SLOTS + 0.3, 0.5 if "SBO" in notes else 1.5, lbo_note.replace(" (", "\n("),
                size=TEXT_FONT - 2, color="#555555", va="top")


def _wrong(cv, px, ca, major, eb, wrong, where):
    per = MATRIX_ROW_BYTES // eb
    w = wrong[:, ::per] | wrong[:, per - 1::per] if major == "K" else (wrong[::per, :] | wrong[per - 1::per, :]).T
    bad = np.argwhere(w)
    outline(cv, [(int(c), int(r), 1, 1) for r, c in bad], color=WRONG, lw=1.6, zorder=7)
    outline(cv, [(px + where[(int(r), int(c))][1], where[(int(r), int(c))][0], 1, 1) for r, c in bad
                 if (int(r), int(c)) in where], color=WRONG, lw=1.6, zorder=7)


def draw_descriptor(desc, path=None):
    """The K-major picture of one descriptor: 64 rows of 16-bit elements (A of every 16-bit form)."""
    return draw_canonical(desc, major="K", elem_bits=16, rows=64, path=path)


def draw_check(report, tile=None, path=None):
    """A ``check_wgmma`` report: the first wrong k-step (or k-step 0) of the user's descriptor, the
    chunks it reads from the wrong place outlined in red."""
    step = next((s for s, ok in enumerate(report.steps_ok) if not ok), 0)
    d = report.descriptors[step]
    ms = [m for m in report.mismatches if m.step == step]
    first = report.layout[0]
    rows = int(first.split(": ")[1].split(" x ")[0])
    k = int(first.split(" x ")[1].split(" ")[0])
    elem_bits = 256 // k
    major = "MN" if "MN-major" in first else "K"
    wrong = np.zeros((rows, k), bool)
    for m in ms:
        wrong[m.element] = True
    verdict = "OK" if report.ok else f"WRONG at k-step {step}: {len(ms)} elements (red) read from the wrong place"
    fix = f"\nfix: {report.fix[step]!r}" if not report.ok and report.fix else ""
    title = f"{report.title}\nk-step {step}: {d}\n{verdict}{fix}"
    return draw_canonical(d, major=major, elem_bits=elem_bits, rows=rows, wrong=wrong, title=title, path=path)
