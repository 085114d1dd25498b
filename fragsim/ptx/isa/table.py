"""The PTX instruction table: the rows of every family, and the one lookup that dispatches on them.

``lookup(opcode, mods)`` -> ``(row, match)``: the row whose syntax admits the modifiers (at most one
does: ``check()`` proves it over every enumerable form, and tests/test_ptx_isa_table.py runs it),
or ``UnsupportedInstruction`` that names the forms the opcode has and the support page.
``resolve(spec)`` is the semantic of a value instruction (``fragsim.ptx.semantics``).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from ..semantics import Semantic, Spec, UnsupportedInstruction
from . import bulk, control, convert, data, floating, integer, mbarrier, memory, tensor, warp
from .grammar import Match
from .row import Row

#: Where a user reads what fragsim runs (the docs page generated from this table; also
#: ``fragsim run --instructions``).
SUPPORT_PAGE = "docs/instructions.md (fragsim run --instructions)"

ROWS: tuple[Row, ...] = (*integer.ROWS, *floating.ROWS, *convert.ROWS, *warp.ROWS, *data.ROWS, *memory.ROWS,
                         *control.ROWS, *tensor.ROWS, *bulk.ROWS, *mbarrier.ROWS)


def _index() -> dict[str, tuple[Row, ...]]:
    out: dict[str, list[Row]] = {}
    for r in ROWS:
        out.setdefault(r.opcode, []).append(r)
    return {k: tuple(v) for k, v in out.items()}


BY_OPCODE: dict[str, tuple[Row, ...]] = _index()


def rows(opcode: str | None = None) -> tuple[Row, ...]:
    """Every row, or the rows of ``opcode``."""
    return ROWS if opcode is None else BY_OPCODE.get(opcode, ())


@lru_cache(maxsize=8192)
def lookup(opcode: str, mods: tuple[str, ...]) -> tuple[Row, Match]:
    """The row that admits ``opcode.mods`` and its reading; ``UnsupportedInstruction`` otherwise."""
    text = ".".join((opcode, *mods))
    candidates = BY_OPCODE.get(opcode)
    if not candidates:
        raise UnsupportedInstruction(f"{text}: not an instruction fragsim runs (see {SUPPORT_PAGE})")
    for r in candidates:
        m = r.syntax.match(mods)
        if m is not None:
            if r.status.level == "refused":
                raise UnsupportedInstruction(f"{text}: {r.status.why}")
            return r, m
    near = _nearest(mods, [r for r in candidates if r.status.level != "refused"])
    more = len(candidates) - len(near)
    raise UnsupportedInstruction(f"{text}: not a form of {opcode} that fragsim runs; nearest: "
                                 + "; ".join(r.syntax.describe() for r in near)
                                 + (f" ({more} other forms of {opcode}" if more else " (")
                                 + f"{': ' if more else ''}see {SUPPORT_PAGE})")


def _nearest(mods: tuple[str, ...], rows_: list[Row], k: int = 3) -> list[Row]:
    """The rows whose tokens can spell the most of ``mods`` (what the user most likely meant)."""
    def score(r: Row) -> tuple[int, int]:
        spell = {x for t in r.syntax.tokens for s in t.spellings for x in s}
        hit = sum(m in spell for m in mods)
        return (-hit, abs(len(r.syntax.tokens) - len(mods)))
    ranked = sorted(rows_, key=score)
    return ranked[:k]


def spec_of(opcode: str, mods: tuple[str, ...], ndst: int, nsrc: int, approx: bool = False) -> tuple[Row, Spec]:
    """The row of an instruction and its ``Spec`` (modifiers read by the row's grammar)."""
    row, m = lookup(opcode, tuple(mods))
    text = ".".join((opcode, *mods))
    if row.kind == "value" and (ndst, nsrc) not in row.operand_counts():
        raise UnsupportedInstruction(f"{text} {row.operands}: takes {_counts(row)}, the line has {ndst} "
                                     f"destination(s) and {nsrc} source(s)")
    return row, Spec(opcode, tuple(mods), ndst, nsrc, approx=approx, match=m)


def _counts(row: Row) -> str:
    return " or ".join(f"{d} destination(s) and {s} source(s)" for d, s in row.operand_counts())


def resolve(spec: Spec) -> Semantic:
    """The semantic of the value instruction ``spec`` (its modifiers read by its row's grammar)."""
    row, full = spec_of(spec.opcode, spec.mods, spec.ndst, spec.nsrc, spec.approx)
    if row.kind != "value":
        raise UnsupportedInstruction(f"{spec.text}: acts on the machine; it is not a value instruction")
    if row.status.level == "stand-in" and not spec.approx:
        raise UnsupportedInstruction(f"{spec.text}: {row.status.why}")
    assert row.run is not None
    return row.run(full)


def check() -> Iterator[str]:
    """The table's invariants, as messages for each breach: no two rows of an opcode admit the same
    modifiers (every form of every row whose forms can be listed is read back by exactly its row)."""
    for opcode, group in BY_OPCODE.items():
        for r in group:
            if r.syntax.count() > 50_000:
                continue
            for form in r.syntax.forms():
                hits = [o for o in group if o.syntax.match(form) is not None]
                if hits != [r]:
                    yield (f"{'.'.join((opcode, *form))}: admitted by "
                           + "; ".join(o.syntax.text for o in hits))
