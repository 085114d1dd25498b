"""What ``fragsim.trace_fragments`` (``fragsim.trace``) returns: the ``Trace`` of a run, its
first inconsistent mma (``BadMma``) and that mma's wrong elements (``Element``), with their text,
their dicts (``--json``) and the picture Jupyter shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Trace", "BadMma", "Element"]


@dataclass(frozen=True)
class Element:
    """One element of an mma operand: at ``position`` (row, col) of the operand's fragment, held by
    ``lane``'s ``register`` (None for a wgmma operand read from shared memory); ``want``: the
    element of the matrix it must be, ``got``: the one it is (None: no element of the matrix).  For
    D, ``want`` is where the element belongs in the output and ``got`` where it was stored."""

    position: tuple
    lane: int | None
    register: str | None
    want: tuple | None
    got: tuple | None

    def __str__(self) -> str:
        who = f"lane {self.lane} {self.register}" if self.lane is not None else f"element {self.position}"
        return f"{who}: {_rc(self.got)}, wants {_rc(self.want)}"


def _rc(x) -> str:
    return "none" if x is None else f"({x[0]},{x[1]})"


@dataclass
class BadMma:
    """The first mma of the run fed wrongly, or whose D is summed or stored wrongly.

    ``kind``: "operand" (A's or B's registers hold the wrong elements), "coverage" (a D element is
    summed over some k twice or never) or "store" (the epilogue stores D elements elsewhere);
    ``operand`` "A", "B" or "D"; ``line``/``source``/``text``: the PTX line (and the CUDA line when
    the PTX has ``.loc``), ``cta``/``warp`` who ran it (a wgmma: the warpgroup's first warp);
    ``what``: the inconsistency in one sentence; ``elements``: the wrong ones (``Element``), their
    ``lanes`` and ``registers``; ``findings``: the diagnosis (``fragsim.check``'s findings: kind
    and text); ``verified``: whether re-running the kernel with the fix feeds this mma right (None:
    not verified, ``verification`` says why); ``report``: the checker's report on the instructions
    that fed the operand (its picture is the expected vs received fragment map)."""

    kind: str
    operand: str
    line: int
    source: str | None
    text: str
    cta: tuple
    warp: int
    what: str
    elements: list
    lanes: list
    registers: list
    findings: list = field(default_factory=list)
    verified: bool | None = None
    verification: str = ""
    report: Any = field(default=None, repr=False)
    tile: Any = field(default=None, repr=False)         # the tile of a check_wgmma report
    form: Any = field(default=None, repr=False)
    want: np.ndarray | None = field(default=None, repr=False)   # (rows, cols, 2) per fragment position
    got: np.ndarray | None = field(default=None, repr=False)
    picture: Any = field(default=None, repr=False)   # the report drawn: the checker's, else the mma's map

    @property
    def diagnosis(self) -> list[str]:
        return [f.text for f in self.findings]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "operand": self.operand, "line": self.line, "source": self.source,
                "text": self.text, "cta": list(self.cta), "warp": self.warp, "what": self.what,
                "lanes": self.lanes, "registers": self.registers,
                "elements": [{"position": list(e.position), "lane": e.lane, "register": e.register,
                              "want": None if e.want is None else list(e.want),
                              "got": None if e.got is None else list(e.got)} for e in self.elements],
                "diagnosis": [f.to_dict() for f in self.findings], "verified": self.verified,
                "verification": self.verification}

    def where(self) -> str:
        src = f" ({self.source})" if self.source else ""
        unit = f"warpgroup of warps {self.warp}-{self.warp + 3}" if self.text.startswith("wgmma") else f"warp {self.warp}"
        return f"line {self.line}{src}: {self.text}\n  CTA ({self.cta[0]},{self.cta[1]},{self.cta[2]}), {unit}"

    def lines(self, shown: int = 8) -> list[str]:
        from fragsim.ranges import format_ranges

        out = [self.where(), f"  {self.what}"]
        if self.lanes:
            out.append(f"  lanes {format_ranges(self.lanes, sep=', ')}; registers {', '.join(self.registers)}")
        if self.elements:
            head = "stored at, belongs at" if self.operand == "D" else "received, expected"
            out.append(f"  {head} (the first {min(shown, len(self.elements))} of {len(self.elements)}):")
            out += [f"    {e}" for e in self.elements[:shown]]
        if self.findings:
            out.append("diagnosis:")
            out += [f"  - {f.text}" for f in self.findings]
        if self.verification:
            out.append(("verified: " if self.verified else "not verified: ") + self.verification)
        return out


@dataclass
class Trace:
    """The result of ``trace_fragments``: ``ok`` when every mma of the run is fed the right
    elements, sums each D element over every k once and its D lands where it belongs; ``first``
    the first one that does not (``BadMma``); ``counts`` how many mma executions (one warp or
    warpgroup each) were wrong in each way; ``untraced`` what could not be followed."""

    kernel: str
    grid: tuple
    block: tuple
    ctas: int
    passes: int
    mmas: int
    ok: bool
    first: BadMma | None
    counts: dict
    untraced: list
    seconds: float
    stored: int = 0

    def __bool__(self) -> bool:
        return self.ok

    def verdict(self) -> str:
        if self.ok:
            return (f"OK: {self.mmas:,} mma executions fed the right elements, each D element summed over every k "
                    f"once" + (f", {self.stored:,} D elements stored where they belong" if self.stored else ""))
        wrong = ", ".join(f"{n:,} {k}" for k, n in self.counts.items() if n)
        return f"WRONG: {wrong}"

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "grid": list(self.grid), "block": list(self.block), "ctas": self.ctas,
                "passes": self.passes, "mmas": self.mmas, "ok": self.ok, "counts": self.counts,
                "untraced": self.untraced, "stored": self.stored, "seconds": round(self.seconds, 3),
                "first": None if self.first is None else self.first.to_dict()}

    def __str__(self) -> str:
        out = [f"trace of {self.kernel}: grid {self.grid}, block {self.block}, {self.ctas} CTA(s), "
               f"{self.passes} passes", self.verdict()]
        out += [f"not traced: {u}" for u in self.untraced]
        if self.first is not None:
            out.append("first inconsistent mma:")
            out += self.first.lines()
        return "\n".join(out)

    def _repr_png_(self):    # Jupyter: expected vs received fragment map of the first inconsistent mma
        from fragsim.check.report import CheckReport

        if self.first is None or not isinstance(self.first.picture, CheckReport):
            return None
        from fragsim import display
        return display.png(self.first.picture)
