"""The text form of a ``BankReport`` (what ``fragsim conflicts`` prints)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fragsim.facts.hardware import BANK_BYTES, NUM_BANKS, SOURCE_LINE_BYTES
from fragsim.ranges import format_ranges

if TYPE_CHECKING:  # annotations only: report.py renders itself through this module
    from .report import BankReport, Phase


def _lanes(lanes) -> str:
    return format_ranges(lanes, empty="none")


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _collision_lines(r: BankReport, p: Phase) -> list:
    """Banks needing more than one wavefront, by bank group (the banks one lane's access spans)."""
    unit = r.entry.unit_bytes
    span = unit // BANK_BYTES
    groups: dict = {}
    for lane in p.active:
        a = r.addrs[lane] // unit * unit
        g = (a // BANK_BYTES) % NUM_BANKS
        groups.setdefault(g, {}).setdefault(a, []).append(lane)
    out = []
    kind = r.entry.kind
    what = "row" if kind in ("ldsm", "stsm") else ("word" if unit == BANK_BYTES else f"{unit}-byte unit")
    for g, units in sorted(groups.items()):
        banks = f"bank {g:2d}" if span == 1 else f"banks {g}-{g + span - 1}"
        if p.writes_by_bank:
            lanes = sorted(l for ls in units.values() for l in ls)
            if len(lanes) > 1:
                out.append(f"    {banks}: {len(lanes)} writes (lanes {_lanes(lanes)}), one wavefront each")
        elif len(units) > 1:
            parts = ", ".join(f"{u:#x} (lane{'s' if len(ls) > 1 else ''} {_lanes(ls)})"
                              for u, ls in sorted(units.items()))
            out.append(f"    {banks}: {len(units)} {what}s: {parts}")
    return out


def format_report(r: BankReport) -> str:
    lines = [f"{r.op}  ({r.ptx})"]
    nact = sum(r.active)
    cp = r.src is not None
    how = ("(width phase x slot of source lines)" if cp else f"of {len(r.phases[0].lanes) if r.phases else 0} lanes")
    lines.append(f"{nact} active lane{'s' if nact != 1 else ''} ({_lanes([i for i, x in enumerate(r.active) if x])}), "
                 f"{_plural(len(r.phases), 'group' if cp else 'phase')} {how}")
    for p in r.phases:
        head = f"{'group' if cp else 'phase'} {p.index}  lanes {_lanes(p.lanes):<7}"
        if cp and p.lanes:
            src_lines = ", ".join(f"{x:#x} (class {c})" for x, c in p.source_lines)
            plural = "s" if len(p.source_lines) > 1 else ""
            head += f" (width phase {p.width_phase}, {SOURCE_LINE_BYTES}-byte source line{plural} {src_lines})"
        if not p.active:
            lines.append(f"{head}  no active lane: 0 wavefronts")
            continue
        nbanks = len(p.banks)
        most = max(len(v) for v in p.banks.values())
        lines.append(f"{head}  {_plural(p.wavefronts, 'wavefront'):<13} {nbanks} bank{'s' if nbanks != 1 else ''} hit, "
                     f"at most {_plural(most, 'distinct word')} per bank")
        lines.extend(_collision_lines(r, p))
        for src_addr, ls in sorted(p.lanes_by_source.items()):
            if len(ls) > 1:
                lines.append(f"    source {src_addr:#x}: read by {len(ls)} lanes ({_lanes(ls)}), one wavefront each")
        for b, ls in sorted(p.reads_by_bank.items()):
            srcs = {r.src[lane] for lane in ls} if r.src is not None else set()
            if len(srcs) > 1:
                lines.append(f"    source bank {b:2d}: read by {len(ls)} lanes ({_lanes(sorted(ls))}), one wavefront each")
    for note in r.notes:
        lines.append(f"note: {note}")
    wf_name, bc_name = r.entry.metrics
    width = max(len(wf_name), len(bc_name))
    lines.append("Nsight Compute:")
    lines.append(f"  {wf_name:<{width}}  {r.wavefronts}")
    lines.append(f"  {bc_name:<{width}}  {r.conflicts}")
    lines.append(f"  {'ideal wavefronts':<{width}}  {r.ideal}")
    return "\n".join(lines)
