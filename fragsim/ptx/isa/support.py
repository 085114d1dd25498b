"""The support page: the instruction table as a person reads it before trusting a run.

``coverage(recorded)`` maps each row to what the GPU recordings hold for it (``recorded``: variant
text -> validations, as ``fragsim.gpu_check.coverage.recorded`` reads them; this module does not
read recordings itself, so the model never imports the GPU check).  ``markdown(...)`` is
docs/instructions.md; ``listing(filter, ...)`` what ``fragsim run --instructions [FILTER]`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..semantics import UnsupportedInstruction
from .row import LEVELS, Row
from .table import ROWS, lookup

#: The families' sections on the page, in order, with their titles.
SECTIONS = {
    "integer": "Integer arithmetic, bits, logic, comparison",
    "floating": "Floating point, comparison, the MUFU's .approx functions",
    "approx": "Floating point, comparison, the MUFU's .approx functions",
    "convert": "Conversions with a floating-point side",
    "warp": "Warp-collective instructions",
    "data": "Moving data",
    "memory": "Loads, stores, atomics",
    "control": "Control flow, barriers, fences",
    "tensor": "Tensor cores, matrix loads, cp.async",
    "bulk": "Bulk copies and the tensor memory accelerator",
    "mbarrier": "mbarriers and clusters",
    "": "Refused",
}


@dataclass
class Covered:
    """What the recordings hold for one row: variants seen, their cases, the devices."""

    variants: set[str] = field(default_factory=set)
    cases: int = 0
    devices: set[str] = field(default_factory=set)


def coverage(recorded: Mapping[str, Iterable[Any]]) -> tuple[dict[int, Covered], list[str]]:
    """(row index -> Covered, recorded variants no row admits)."""
    index = {id(r): i for i, r in enumerate(ROWS)}
    out: dict[int, Covered] = {}
    orphans: list[str] = []
    for text, validations in recorded.items():
        op, *mods = text.split(".")
        try:
            row, _ = lookup(op, tuple(mods))
        except UnsupportedInstruction:
            orphans.append(text)
            continue
        c = out.setdefault(index[id(row)], Covered())
        c.variants.add(text)
        for v in validations:
            c.cases += int(v.cases)
            c.devices.add(str(v.device))
    return out, sorted(orphans)


def _family(r: Row) -> str:
    return r.family if r.family in SECTIONS else ""


def _status(r: Row, c: Covered | None) -> str:
    s = r.status
    if s.level == "bit-exact":
        n = len(c.variants) if c else 0
        seen = (f"{n} variant{'s' if n != 1 else ''}, {c.cases:,} cases on {', '.join(sorted(c.devices))}" if c
                else "no recording yet")
        return f"bit-exact ({s.family}: {seen})"
    if s.level == "unvalidated":
        return f"unvalidated: no GPU recording of its forms yet ({s.family}{': ' + s.why if s.why else ''})"
    if s.level == "exact":
        return f"exact ({s.family})" if s.family else "exact"
    return f"{s.level}: {s.why}"


def _cell(x: str) -> str:
    return x.replace("|", "\\|")


def markdown(recorded: Mapping[str, Iterable[Any]] | None = None) -> str:
    """docs/instructions.md."""
    cov, _ = coverage(recorded or {})
    lines = [
        "# Supported PTX instructions",
        "",
        "Generated from fragsim's PTX instruction table (`fragsim.ptx.isa`) by `fragsim run --instructions "
        "--markdown`; the same list, filtered, is `fragsim run --instructions FILTER`. One row per syntax line of "
        "the PTX ISA: its modifiers (`{.x}` optional; a slot's spellings after the line), operands, the least "
        "target and PTX ISA version, and how far fragsim's result can be trusted:",
        "",
        *(f"- **{k}**: {v}." for k, v in LEVELS.items()),
        "",
        "Bit-exact rows name the `fragsim gpu-check` family that validates them and what its committed "
        "recordings hold (variants, cases, GPU). An instruction that no row admits is refused when the kernel "
        "loads, naming this page.",
        "",
    ]
    by_section: dict[str, list[tuple[int, Row]]] = {}
    for i, r in enumerate(ROWS):
        by_section.setdefault(SECTIONS[_family(r)], []).append((i, r))
    for title, rows in by_section.items():
        lines += [f"## {title}", "", "| syntax | operands | target | PTX | status | Nsight Compute op |",
                  "|---|---|---|---|---|---|"]
        for i, r in rows:
            lines.append(f"| `{_cell(r.syntax.describe())}` | `{_cell(r.operands)}` | {r.target} | {r.ptx} | "
                         f"{_cell(_status(r, cov.get(i)))} | {r.ncu or ''} |")
        lines.append("")
    return "\n".join(lines)


def _selected(filter_: str, cov: dict[int, Covered]) -> list[tuple[int, Row, str]]:
    f = filter_.lower()
    out = []
    for i, r in enumerate(ROWS):
        status = _status(r, cov.get(i))
        if f and f not in r.syntax.describe().lower() and f not in status.lower():
            continue
        out.append((i, r, status))
    return out


def entries(filter_: str = "", recorded: Mapping[str, Iterable[Any]] | None = None) -> list[dict[str, Any]]:
    """The selected rows as plain data (``fragsim run --instructions --json``)."""
    cov, _ = coverage(recorded or {})
    out = []
    for i, r, _ in _selected(filter_, cov):
        c = cov.get(i)
        out.append({"syntax": r.syntax.text, "slots": {t.name: [".".join(s) for s in t.spellings]
                                                       for t in r.syntax.tokens if t.slot},
                    "operands": r.operands, "target": r.target, "ptx": r.ptx, "status": r.status.level,
                    "family": r.status.family, "why": r.status.why, "ncu": r.ncu, "forms": r.syntax.count(),
                    "recorded_variants": len(c.variants) if c else 0, "recorded_cases": c.cases if c else 0,
                    "devices": sorted(c.devices) if c else []})
    return out


def listing(filter_: str = "", recorded: Mapping[str, Iterable[Any]] | None = None) -> str:
    """The rows whose syntax line or status contains ``filter_`` (case-insensitive), one per line."""
    cov, _ = coverage(recorded or {})
    out = []
    for _, r, status in _selected(filter_, cov):
        out.append(f"{r.syntax.describe()}  {r.operands}\n    {r.target}, PTX {r.ptx}; {status}"
                   + (f"; Nsight Compute op {r.ncu}" if r.ncu else ""))
    if not out:
        return f"no instruction matches {filter_!r}"
    return "\n".join(out) + f"\n{len(out)} of {len(ROWS)} rows"
