"""What a check found: the verdict, the mismatches, the diagnosis and the bank conflicts.

``Report`` is what every check's report shares (``CheckReport`` here, ``check_wgmma``'s
``WgmmaReport`` and ``check_tma_wgmma``'s ``TmaWgmmaReport``): the verdict, the diagnosis, the text
report and the JSON's common part."""

from __future__ import annotations

from dataclasses import dataclass, field

from fragsim import validate

#: Mismatch lines shown in the text report (all of them are in ``.mismatches`` and the JSON).
SHOWN = 8


def rc(t) -> str:
    return "none" if t is None else f"tile({t[0]},{t[1]})"


@dataclass(frozen=True)
class Mismatch:
    """One element that is not where it should be.

    Loads: lane ``lane``'s register ``reg`` (the ``reg``-th 32-bit register the instructions
    deliver, in order), element ``half`` of it, holds tile element ``got`` and needs ``want``.
    Stores: that register element lands at ``got`` and belongs at ``want``.  Copies: the element
    ``want`` that lane ``lane`` of ``instruction`` copies lands where ``got`` belongs.  ``got`` is
    None where no tile element is there: ``address`` then says where it went (stores and copies:
    outside the tile or in its padding) and ``why`` says what happened (not loaded because the
    instruction cannot run, overwritten, ...).
    """

    kind: str
    lane: int
    instruction: int
    want: tuple
    got: tuple | None
    reg: int | None = None
    half: int | None = None
    epr: int = 1
    fragment: int | None = None
    address: int | None = None
    why: str = ""

    @property
    def register(self) -> str:
        if self.reg is None:
            return ""
        if self.epr == 1 or not self.half:
            return f"r{self.reg}"
        return f"r{self.reg}" + (".hi" if self.epr == 2 else f".e{self.half}")

    def __str__(self) -> str:
        if self.kind == "load":
            head = f"lane {self.lane} {self.register}"
            if self.got is not None:
                return f"{head} holds {rc(self.got)}, wants {rc(self.want)}"
            return f"{head} {self.why or 'holds no tile element'}, wants {rc(self.want)}"
        if self.kind == "store":
            head = f"lane {self.lane} {self.register}"
            if self.got is not None:
                return f"{head} lands at {rc(self.got)}, wants {rc(self.want)}"
            return f"{head} {self._lost()}, wants {rc(self.want)}"
        head = f"copy {self.instruction} lane {self.lane}: {rc(self.want)}"
        if self.got is not None:
            return f"{head} lands where {rc(self.got)} belongs"
        return f"{head} {self._lost()}"

    def _lost(self) -> str:
        if self.why:
            return self.why
        if self.address is not None:
            return f"lands at {validate.hex_int(self.address)}, outside the tile's elements"
        return "is lost (a later write overwrote it)"

    def to_dict(self) -> dict:
        d = {"lane": self.lane, "instruction": self.instruction, "want": list(self.want),
             "got": None if self.got is None else list(self.got)}
        if self.reg is not None:
            d.update(reg=self.reg, half=self.half, fragment=self.fragment)
        if self.address is not None:
            d["address"] = self.address
        if self.why:
            d["why"] = self.why
        d["text"] = str(self)
        return d


@dataclass(frozen=True)
class Finding:
    """One sentence of the diagnosis: ``kind`` names the mistake ("transposed", "matrix order",
    "k-halves swapped", "offset", "swizzle missing", "swizzle differs", "swizzle before offset",
    "pitch", "address", "holes", "overlaps", "register order", "not contiguous", "unexplained")."""

    kind: str
    text: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "text": self.text}


class Report:
    """What every check's report holds and how it reads.

    ``title`` and ``layout`` (lines) say what was checked; ``ok``: every one of the ``compared``
    elements is where it must be; ``mismatches``: each element that is not (the check's mismatch
    record); ``findings``: the diagnosis (``Finding``; ``diagnosis`` holds their sentences, ``kinds``
    their kinds).  ``str(report)`` is the text report: title, layout, ``verdict()``, the diagnosis,
    the first mismatches (``first``), then what the check adds (``_more_lines``); ``to_dict()`` the
    JSON: the check's name, title, ok, elements and layout, then what the check adds (``_json``).
    Each check's report is a dataclass deriving from this one, its fields in its own order.
    """

    title: str
    ok: bool
    compared: int
    layout: list
    mismatches: list
    findings: list

    @property
    def diagnosis(self) -> list[str]:
        return [f.text for f in self.findings]

    @property
    def kinds(self) -> list[str]:
        return [f.kind for f in self.findings]

    def __bool__(self) -> bool:
        return self.ok

    def verdict(self) -> str:            # OK or WRONG, with the counts
        raise NotImplementedError

    def first(self, n: int) -> list:
        """The first ``n`` mismatches, as the text report shows them."""
        return self.mismatches[:n]

    def _name(self) -> str:              # the JSON's "check"
        raise NotImplementedError

    def _json(self) -> dict:             # the JSON's entries after "layout"
        raise NotImplementedError

    def _more_lines(self) -> list[str]:  # the text report's lines after the mismatches
        return []

    def to_dict(self) -> dict:
        return {"check": self._name(), "title": self.title, "ok": self.ok, "elements": self.compared,
                "layout": self.layout, **self._json()}

    def __str__(self) -> str:
        lines = [self.title]
        lines += [f"  {x}" for x in self.layout]
        lines.append(self.verdict())
        if self.findings:
            lines.append("diagnosis:")
            lines += [f"  - {f.text}" for f in self.findings]
        if self.mismatches:
            shown = self.first(SHOWN)
            n = len(self.mismatches)
            lines.append(f"mismatches (the first {len(shown)}; {n:,} wrong elements in all):" if n > len(shown)
                         else "mismatches:")
            lines += [f"  {m}" for m in shown]
        return "\n".join(lines + self._more_lines())


@dataclass
class GpuVerdict:
    """The same instructions run on a GPU: does the hardware deliver what fragsim says?"""

    device: dict
    agrees: bool                 # every register and every byte of shared memory bit for bit
    ok: bool                     # the check's verdict on the hardware's output
    compared: int                # bytes compared
    differences: list = field(default_factory=list)   # the first few differences, as text

    def to_dict(self) -> dict:
        return {"device": self.device, "agrees_with_fragsim": self.agrees, "ok": self.ok,
                "bytes_compared": self.compared, "differences": self.differences}

    def __str__(self) -> str:
        name = f"{self.device.get('device', 'GPU')} ({self.device.get('arch', '?')})"
        if self.agrees:
            return (f"GPU {name}: the hardware delivered exactly what fragsim says ({self.compared:,} bytes "
                    f"compared); verdict on the hardware's output: {'OK' if self.ok else 'WRONG'}")
        return f"GPU {name}: the hardware DISAGREES with fragsim: " + "; ".join(self.differences)


@dataclass
class CheckReport(Report):
    """The result of ``check_load``, ``check_store`` or ``check_copy``.

    ``ok``: every element is where it must be.  ``mismatches``: each element that is not
    (``Mismatch``).  ``diagnosis``: plain sentences naming the mistake and its fix (``findings``
    holds them with their kind).  ``conflicts``: one bank report (``fragsim.bank_conflicts``) per
    instruction, in order (None where the instruction cannot run).  ``gpu``: the hardware's
    verdict when the check ran with ``gpu=True``.
    """

    kind: str
    title: str
    ok: bool
    compared: int
    mismatches: list
    findings: list
    conflicts: list
    layout: list                     # lines: which registers fill which fragment, or what is copied
    instructions: list
    gpu: GpuVerdict | None = None
    # what the run saw, slot by slot (fragsim.check.runs.Evidence): the picture draws it
    evidence: object = field(default=None, repr=False, compare=False)

    def _repr_png_(self):   # Jupyter: expected vs received fragment map (matplotlib loads only here)
        from fragsim import display
        return display.png(self)

    def _repr_svg_(self):
        from fragsim import display
        return display.svg(self)

    def first(self, n: int) -> list:
        """The first ``n`` mismatching registers (their first wrong element each; copies: elements)."""
        out, seen = [], set()
        for m in self.mismatches:
            key = (m.instruction, m.lane, m.reg)
            if key not in seen:
                seen.add(key)
                out.append(m)
                if len(out) == n:
                    break
        return out

    def verdict(self) -> str:
        if self.ok:
            return f"OK: all {self.compared:,} elements are where they must be"
        wrong = len({(m.lane, m.instruction, m.reg, m.half, m.want) for m in self.mismatches})
        if wrong:
            return f"WRONG: {wrong:,} of {self.compared:,} elements are not where they must be"
        return "WRONG: " + self.findings[0].text if self.findings else "WRONG"

    def conflict_lines(self) -> list[str]:
        """One line per run of consecutive instructions with the same op and figures."""
        def figures(r):
            if r is None:
                return "cannot run"
            if r.modelled_wavefronts is not None:
                return f"0 on the counters (.cg bypasses L1); modelled {r.modelled_wavefronts} wavefronts"
            return f"{int(r.wavefronts)} wavefronts, ideal {int(r.ideal)}, {int(r.conflicts)} conflicts"

        rows = [(ins, figures(r)) for ins, r in zip(self.instructions, self.conflicts)]
        out, i = [], 0
        while i < len(rows):
            j = i
            while j + 1 < len(rows) and rows[j + 1][1] == rows[i][1] and rows[j + 1][0].op == rows[i][0].op:
                j += 1
            ins = rows[i][0]
            if i == j:
                out.append(f"{ins.describe()}: {rows[i][1]}")
            else:
                out.append(f"{ins.label.split(' (')[0]}..{rows[j][0].label.split(' (')[0]} ({ins.op.name}): "
                           f"{rows[i][1]} each")
            i = j + 1
        return out

    def _name(self) -> str:
        return self.kind

    def _json(self) -> dict:
        conflicts = []
        for ins, r in zip(self.instructions, self.conflicts):
            d = {"instruction": ins.label, "op": ins.op.name, "addresses": ins.text}
            if r is None:
                d["bank_report"] = None
            else:
                d.update(wavefronts=int(r.wavefronts), ideal=int(r.ideal), conflicts=int(r.conflicts),
                         modelled_wavefronts=r.modelled_wavefronts)
            conflicts.append(d)
        out: dict = {"diagnosis": [f.to_dict() for f in self.findings],
                     "mismatches": [m.to_dict() for m in self.mismatches], "conflicts": conflicts}
        if self.gpu is not None:
            out["gpu"] = self.gpu.to_dict()
        return out

    def _more_lines(self) -> list[str]:
        lines = ["bank conflicts (Nsight Compute's counters, per instruction):"]
        lines += [f"  {x}" for x in self.conflict_lines()]
        if self.gpu is not None:
            lines.append(str(self.gpu))
        return lines
