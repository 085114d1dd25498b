"""Bank pictures: a tile coloured by bank, one instruction's accesses phase by phase, and the cost.

* ``draw_bank_map(tile)``: every element of a tile in shared memory coloured (and numbered) by the
  bank of its 4-byte word; the two halves of a word joined.  With ``access=(op, addrs)`` the
  elements one phase of that instruction touches are outlined, each lane tagged.
* ``draw_bank_phases(report)``: the instruction's lanes -> banks, then each phase as a bank x
  wavefront grid: a bank's k-th distinct word goes into the k-th wavefront, so a column taller
  than one row is a bank conflict (marked red), and the phase's height is its wavefronts.
* ``draw_bank_histogram(report)``: wavefronts per phase against the ideal, and per phase the
  distinct words in each bank.
* ``draw_bank_report(report)``: the last two in one figure (what a report shows in Jupyter).

A report is a ``fragsim.bank_conflicts`` result for one instruction, or ``(op, addrs)`` given as
arguments (with ``mask``/``src`` as ``bank_conflicts`` takes them).  Every title names the
instruction's address pattern -- ``pattern`` as the caller wrote it, else read off the addresses
(``(lane % 16) * 128 + (lane / 16) * 16``, ``Swizzle<3,4,3>(...)``) -- and the tile, where there is
one, with the lanes' rows and columns in it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:      # annotations only: matplotlib loads when a picture is drawn
    from matplotlib.figure import Figure

import numpy as np

from fragsim.facts.hardware import BANK_BYTES, NUM_BANKS, WARP_LANES
from fragsim.ranges import format_ranges

from ._figure import (MIN_FONT, TEXT_FONT, TITLE_FONT, Canvas, axis_numbers, draw_cells, finish, fit_labels,
                      label_font, outline, tag, wrap_text)
from ._pattern import describe, describe_in_tile
from ._tile import placement
from .palette import BANK_RGB, CONFLICT, EMPTY, LANE_RGB, darker, text_color



def _step(rep) -> str:
    """What a report's steps are called: cp.async goes in groups (width phase x slot of source lines),
    as the text report says; every other instruction in phases."""
    return "group" if rep.entry.kind == "ldgsts" else "phase"

def _report(report, addrs=None, mask=None, src=None):
    from fragsim.banks import BankReport, bank_conflicts
    if isinstance(report, BankReport):
        if addrs is not None or mask is not None or src is not None:
            raise ValueError("give a BankReport, or an op with addrs (and mask/src), not both")
        return report
    if addrs is None:
        raise ValueError("give a BankReport (fragsim.bank_conflicts(...)), or op and addrs")
    r = bank_conflicts(report, addrs, mask=mask, src=src)
    if not isinstance(r, BankReport):
        raise ValueError("addrs: one instruction (32 byte offsets) per picture, got a batch")
    return r


def _ranges(lanes) -> str:
    """T0-7 / T0,T4 / T5: a compact list of lanes."""
    return format_ranges(lanes, prefix="T", short_runs=True)


def _addresses(rep, place=None, pattern=None) -> str:
    """The lanes' addresses, as ``pattern`` or read off them, and where they fall in ``place``."""
    used = np.asarray(rep.active, bool) & (np.arange(WARP_LANES) < rep.entry.address_lanes)
    where = None if place is None else describe_in_tile(place, rep.addrs, used)
    # no-break spaces: a title wraps between the parts, not inside an expression
    return " = ".join(x.replace(" ", "\u00a0") for x in (pattern or describe(rep.addrs, used), where) if x)


# ---------------------------------------------------------------------------------------------------
# a tile coloured by bank

def draw_bank_map(tile=None, *, rows=None, cols=None, dtype="f16", pitch=None, swizzle=None, base=0,
                  access=None, phase=0, pattern=None, title=None, path=None) -> "Figure":  # noqa: F821
    """The tile's elements coloured by bank.  ``tile``: a ``fragsim.Tile``; or give ``rows``, ``cols``,
    ``dtype``, ``pitch`` (bytes), ``swizzle`` (a Swizzle or a callable on byte offsets) and ``base``.
    ``access=(op, addrs)``: outline what phase ``phase`` of that instruction touches; ``pattern``:
    how the addresses were written (for the title; read off them if not given)."""
    if tile is None and (rows is None or cols is None):
        raise ValueError("give a tile, or rows and cols (with dtype, pitch, swizzle, base)")
    place = placement(tile) if tile is not None else placement(
        rows=rows, cols=cols, dtype=dtype, pitch=pitch, swizzle=swizzle, base=base)
    assert place is not None        # a tile, or rows and cols: checked above
    g = place.grid()
    bank = (g // BANK_BYTES) % NUM_BANKS
    R, C = bank.shape
    cv = Canvas(C, R, cell_in=0.34, max_in=15.0, pad=(0.5, 0.2, 1.0 + 0.2 * (access is not None), 0.75),
                target=path)
    head = title or f"banks of a tile: {place.name}"
    rep = None
    if access is not None:
        op, addrs = access
        rep = _report(op, addrs)
        if not 0 <= phase < len(rep.phases):
            raise ValueError(f"phase must be in 0..{len(rep.phases) - 1} ({rep.op} has {len(rep.phases)}), got {phase}")
        ph = rep.phases[phase]
        head += (f"\n{rep.op}, addresses {_addresses(rep, place, pattern)}"
                 f"\n{rep.wavefronts} wavefronts, ideal {rep.ideal}; outlined: phase {phase} "
                 f"(lanes {_ranges(ph.active) or 'none'}), {ph.wavefronts} wavefront{'s' if ph.wavefronts != 1 else ''}")
    cv.title(head)
    labels = np.vectorize(str, otypes=[object])(bank)
    labels, fs = fit_labels(cv.cell_pt * 0.9, labels)
    # join the elements of one 4-byte word (a bank holds words, not elements)
    word = g // BANK_BYTES
    ins = np.full((R, C, 4), 0.04)
    same_right = np.zeros((R, C), bool)
    same_right[:, :-1] = word[:, :-1] == word[:, 1:]
    ins[..., 1][same_right] = 0
    ins[:, 1:, 0][same_right[:, :-1]] = 0
    draw_cells(cv, 0, 0, BANK_RGB[bank], labels, fontsize=fs, insets=ins,
               gids=[[f"bank-{r}-{c}" for c in range(C)] for r in range(R)])
    axis_numbers(cv, 0, 0, R, C)
    if rep is not None:
        by_addr = place.by_address()
        ph = rep.phases[phase]
        for lane in ph.active:
            a0 = rep.addrs[lane]
            found = [by_addr.get(a0 + b) for b in range(0, rep.entry.bytes_per_addr, place.esize)]
            cells: list[tuple[int, int]] = [x for x in found if x is not None]
            dark = darker(LANE_RGB[lane], 0.45)
            outline(cv, [(c + 0.02, r + 0.02, 0.96, 0.96) for r, c in cells], color=dark, lw=2.0, zorder=4)
            if cells and cv.cell_pt >= 24:      # a tag fits beside the bank number only in large cells
                r, c = cells[0]
                tag(cv, c + 0.05, r + 0.5, f"T{lane}", color=dark, size=max(MIN_FONT, min(7.0, cv.cell_pt * 0.3)))
    cv.text(0, R + cv.units(0.15), "colour (and number, in cells large enough): bank = (byte address / 4) % 32; "
            "joined cells share one 4-byte word. A phase needs one wavefront per distinct word in its busiest bank.",
            size=TEXT_FONT - 1, va="top", color="#333333")
    return finish(cv, path)


# ---------------------------------------------------------------------------------------------------
# one instruction, phase by phase

def _slots(rep, ph):
    """Per bank, the wavefront slots of the phase: [(lanes, word or None), ...] in wavefront order."""
    out = {}
    if ph.writes_by_bank:                       # cp.async: every write takes its own slot
        for b, lanes in ph.writes_by_bank.items():
            out[b] = [([lane], None) for lane in lanes]
        return out
    for b, words in ph.banks.items():
        out[b] = [(sorted(ph.lanes_by_word[w]), w) for w in words]
    return out


def _phase_rows(rep):
    return [max([len(s) for s in _slots(rep, ph).values()] + [1]) for ph in rep.phases]


def _lane_strip(cv, rep, y0):
    """The 32 lanes, each coloured by the bank of its (first) word: what the instruction asks for."""
    colors = np.tile(np.array([0.93, 0.93, 0.93]), (1, WARP_LANES, 1))
    labels = np.full((1, WARP_LANES), "", dtype=object)
    for lane in range(WARP_LANES):
        used = rep.active[lane] and lane < rep.entry.address_lanes
        if used:
            b = (rep.addrs[lane] // BANK_BYTES) % NUM_BANKS
            colors[0, lane] = BANK_RGB[b]
            labels[0, lane] = f"T{lane}\n{b}"
        else:
            labels[0, lane] = f"T{lane}\n-"
    labels, fs = fit_labels(cv.cell_pt * 0.9, labels)
    draw_cells(cv, 0, y0, colors, labels, fontsize=fs, gids=[[f"lane-{i}" for i in range(WARP_LANES)]])
    cv.text(0, y0 - 0.1, "lanes -> bank of the first word (- : inactive, or not an address lane)",
            size=TEXT_FONT - 1, va="bottom", color="#333333")


def _phases_on(cv, rep, y0):
    """The phase grids from y0; returns the y below them."""
    entry = rep.entry
    span = max(1, entry.unit_bytes // BANK_BYTES)       # banks one lane's access covers
    y = y0
    fs_small = max(MIN_FONT + 0.5, min(TEXT_FONT - 1, cv.cell_pt * 0.3))
    for ph, nrow in zip(rep.phases, _phase_rows(rep)):
        slots = _slots(rep, ph)
        conflict = sorted(b for b, s in slots.items() if len(s) > 1)
        what = f"{ph.wavefronts} wavefront{'s' if ph.wavefronts != 1 else ''}"
        extra = f", conflicts in banks {_bank_ranges(conflict)}" if conflict else ""
        cv.text(0, y + 0.55, f"{_step(rep)} {ph.index}: lanes {_ranges(ph.lanes) or '-'}  {what}{extra}",
                size=TEXT_FONT - 0.5, va="center", weight="bold", color=CONFLICT if conflict else "#222222")
        y += 1.0
        colors = np.tile(np.array(EMPTY_RGB), (nrow, NUM_BANKS, 1))
        labels = np.full((nrow, NUM_BANKS), "", dtype=object)
        keys = np.full((nrow, NUM_BANKS), None, dtype=object)
        for b, s in slots.items():
            for k, (lanes, w) in enumerate(s):
                colors[k, b] = LANE_RGB[lanes[0]]
                labels[k, b] = _ranges(lanes)
                # one lane's access spans `span` banks: label it once, over the whole unit
                keys[k, b] = (tuple(lanes), None if w is None else (w - (b % span) * BANK_BYTES))
        ins = np.full((nrow, NUM_BANKS, 4), 0.04)
        shown = np.full((nrow, NUM_BANKS), "", dtype=object)
        for k in range(nrow):
            b = 0
            while b < NUM_BANKS:
                e = b
                while keys[k, b] is not None and e + 1 < NUM_BANKS and keys[k, e + 1] == keys[k, b] \
                        and (e + 1) % span:
                    e += 1
                if e > b:
                    ins[k, b:e, 1] = 0
                    ins[k, b + 1:e + 1, 0] = 0
                run = e - b + 1
                if labels[k, b]:
                    lab = labels[k, b]
                    fs = label_font(cv.cell_pt * run * 0.9, 1, len(lab)) or (
                        label_font(cv.cell_pt * run * 0.9, 1, len(lab.split(",")[0]) + 1))
                    if fs:
                        txt = lab if label_font(cv.cell_pt * run * 0.9, 1, len(lab)) else lab.split(",")[0] + "+"
                        cv.text(b + run / 2, y + k + 0.5, txt, size=fs, ha="center",
                                color=text_color(colors[k, b]), zorder=4)
                        shown[k, b] = txt
                b = e + 1
        draw_cells(cv, 0, y, colors, None, insets=ins,
                   gids=[[f"phase{ph.index}-{k}-{b}" for b in range(NUM_BANKS)] for k in range(nrow)])
        for k in range(nrow):
            cv.text(-0.15, y + k + 0.5, f"wf {k + 1}", size=fs_small, ha="right", color="#555555")
        runs: list = []                        # neighbouring conflict banks of equal height: one outline
        for b in conflict:
            if runs and runs[-1][1] == b - 1 and len(slots[b]) == len(slots[runs[-1][0]]):
                runs[-1][1] = b
            else:
                runs.append([b, b])
        outline(cv, [(b0 + 0.01, y + 0.01, b1 - b0 + 0.98, len(slots[b0]) - 0.02) for b0, b1 in runs],
                color=CONFLICT, lw=1.8)
        y += nrow + 0.6
    return y


def _bank_ranges(banks) -> str:
    return _ranges(banks).replace("T", "")


def draw_bank_phases(report, addrs=None, *, mask=None, src=None, tile=None, pattern=None,
                     path=None) -> "Figure":  # noqa: F821
    """One instruction's accesses: lanes -> banks, then each phase as banks x wavefronts, conflicts red.
    ``tile`` (a ``fragsim.Tile``) and ``pattern`` (how the addresses were written) name them in the title."""
    rep = _report(report, addrs, mask, src)
    height = 2.2 + sum(r + 1.6 for r in _phase_rows(rep))
    cv = Canvas(NUM_BANKS, height, cell_in=0.42, max_in=15.0, pad=(0.55, 0.2, 1.05, 0.55), target=path)
    cv.title(_heading(rep, placement(tile), pattern))
    _lane_strip(cv, rep, 0.0)
    axis_numbers(cv, 0, 2.2, 0, NUM_BANKS, left=False)
    cv.text(0, 1.45, "banks ->", size=TEXT_FONT - 1, va="center", color="#333333")
    y = _phases_on(cv, rep, 2.2)
    cv.text(0, y, "each column is a bank; a bank's k-th distinct word waits for wavefront k, so a column "
            "taller than one row (red) is a bank conflict", size=TEXT_FONT - 1, va="top", color="#333333")
    return finish(cv, path)


def _heading(rep, place, pattern) -> str:
    """The instruction, its addresses (in the tile, if there is one) and its cost."""
    s = (f"{rep.ptx}\n{'tile ' + place.name + ', ' if place is not None else ''}addresses {_addresses(rep, place, pattern)}"
         f"\n{rep.wavefronts} wavefronts, ideal {rep.ideal}, {rep.conflicts} bank conflicts")
    if rep.modelled_wavefronts is not None:
        s += f" (counters; modelled cost {rep.modelled_wavefronts})"
    if not rep.exact:
        s += "  [estimate]"
    return s


# ---------------------------------------------------------------------------------------------------
# the cost, as bars

def _histogram_on(fig, rep, top: float, bottom: float):
    """Summary bars (wavefronts vs ideal per phase) on the left, per-phase bank loads on the right,
    between figure fractions ``bottom`` and ``top``."""
    n = len(rep.phases)
    left = fig.add_axes((0.07, bottom, 0.2, top - bottom))
    wf = [ph.wavefronts for ph in rep.phases]
    x = np.arange(n)
    if rep.entry.kind == "ldgsts":
        # cp.async's ideal is a property of the whole copy (width phases, source lines), not per group
        left.bar(x, wf, color="#888888", label="wavefronts")
    else:
        ideal = [1 if ph.active else 0 for ph in rep.phases]
        left.bar(x, ideal, color="#9ecae1", label="ideal")
        left.bar(x, np.subtract(wf, ideal), bottom=ideal, color=CONFLICT, label="conflict")
    for i, w in enumerate(wf):
        left.text(i, w, str(w), ha="center", va="bottom", fontsize=TEXT_FONT - 1)
    left.set_xticks(x, [str(i) for i in x], fontsize=TEXT_FONT - 1)
    left.set_xlabel(_step(rep), fontsize=TEXT_FONT - 1)
    left.set_ylabel("wavefronts", fontsize=TEXT_FONT - 1)
    left.set_ylim(0, max(wf + [1]) * 1.25)
    left.tick_params(labelsize=TEXT_FONT - 1)
    left.legend(fontsize=TEXT_FONT - 2, frameon=False, loc="upper right")
    left.set_title(f"total {rep.wavefronts} = {rep.ideal} ideal + {rep.conflicts} conflicts",
                   fontsize=TEXT_FONT - 1)
    h = (top - bottom) / max(n, 1)
    for i, ph in enumerate(rep.phases):
        ax = fig.add_axes((0.36, top - (i + 1) * h + 0.18 * h, 0.62, 0.72 * h))
        slots = _slots(rep, ph)
        load = np.array([len(slots.get(b, [])) for b in range(NUM_BANKS)])
        edge = [CONFLICT if v > 1 else "none" for v in load]
        ax.bar(np.arange(NUM_BANKS), load, color=BANK_RGB, edgecolor=edge, linewidth=1.4)
        ax.axhline(ph.wavefronts, color="#333333", lw=0.8, ls="--")
        ax.set_xlim(-0.6, NUM_BANKS - 0.4)
        ax.set_ylim(0, max(load.max(initial=0), ph.wavefronts, 1) * 1.3)
        ax.tick_params(labelsize=TEXT_FONT - 2, labelbottom=(i == n - 1))
        ax.set_xticks(range(0, NUM_BANKS, 4))
        ax.text(0.0, 1.0, f"{_step(rep)} {i}: {ph.wavefronts} wavefront{'s' if ph.wavefronts != 1 else ''}",
                transform=ax.transAxes, fontsize=TEXT_FONT - 1, va="bottom")
        if i == n - 1:
            ax.set_xlabel("bank (bar: distinct words, or writes for cp.async; dashed: the phase's wavefronts)",
                          fontsize=TEXT_FONT - 1)
        for s in ("top", "right"):
            ax.spines[s].set_visible(False)
    for s in ("top", "right"):
        left.spines[s].set_visible(False)


def draw_bank_histogram(report, addrs=None, *, mask=None, src=None, tile=None, pattern=None,
                        path=None) -> "Figure":  # noqa: F821
    """Wavefronts per phase (ideal and conflicts), and per phase the load of each bank; ``tile`` and
    ``pattern`` as for ``draw_bank_phases``."""
    from matplotlib.figure import Figure

    from ._figure import DPI, LINE_SPACING
    rep = _report(report, addrs, mask, src)
    n = len(rep.phases)
    width = 10.0
    head = wrap_text(_heading(rep, placement(tile), pattern), (width - 0.2) * 72, TITLE_FONT, bold=True)
    head_in = 0.25 + len(head) * TITLE_FONT * LINE_SPACING / 72
    fig = Figure(figsize=(width, head_in + 0.55 + 1.15 * max(n, 2)), dpi=DPI)
    H = fig.get_figheight()
    t = fig.text(0.01, 1 - 0.08 / H, "\n".join(head), fontsize=TITLE_FONT, weight="bold", va="top")
    t.set_gid("title")
    _histogram_on(fig, rep, top=1 - (head_in + 0.15) / H, bottom=0.55 / H)
    if path is not None:
        from ._figure import save
        save(fig, path)
    return fig


def draw_bank_report(report, addrs=None, *, mask=None, src=None, tile=None, pattern=None,
                     path=None) -> "Figure":  # noqa: F821
    """The phase grids and the histogram of one instruction, in one figure; ``tile`` and ``pattern`` as
    for ``draw_bank_phases``."""
    rep = _report(report, addrs, mask, src)
    rows = _phase_rows(rep)
    grid_h = 2.2 + sum(r + 1.6 for r in rows)
    n = len(rep.phases)
    hist_in = 0.6 + 1.0 * max(n, 2)
    cv = Canvas(NUM_BANKS, grid_h, cell_in=0.3, max_in=11.0, pad=(0.55, 0.2, 1.05, hist_in + 0.5), target=path)
    cv.title(_heading(rep, placement(tile), pattern))
    _lane_strip(cv, rep, 0.0)
    axis_numbers(cv, 0, 2.2, 0, NUM_BANKS, left=False)
    cv.text(0, 1.45, "banks ->", size=TEXT_FONT - 1, va="center", color="#333333")
    _phases_on(cv, rep, 2.2)
    H = cv.fig.get_figheight()
    _histogram_on(cv.fig, rep, top=(hist_in + 0.1) / H, bottom=0.45 / H)
    return finish(cv, path)


def _rgb(c):
    from matplotlib.colors import to_rgb
    return to_rgb(c)


EMPTY_RGB = _rgb(EMPTY)
