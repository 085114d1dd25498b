"""One row of the PTX instruction table: a syntax line of the PTX ISA and everything fragsim knows of it.

A row is data.  ``syntax`` is the line's modifier grammar (``grammar.Syntax``); ``operands`` the
operand list as the ISA writes it, each operand optionally annotated with its kind
(``"d, a, b:shift"``; kinds below); ``run`` the semantic that runs it: for a value instruction a
*resolver* ``(Spec) -> Semantic`` (``fragsim.ptx.semantics``), for an instruction that acts on the
machine (memory, control flow, barriers, the tensor cores) a *builder* ``(Instr, Builder) -> Op``
(``fragsim.ptx.op``); ``target``/``ptx`` the least architecture and PTX ISA version that define it; ``status`` how far
fragsim's result can be trusted (``Status``); ``ncu`` the Nsight Compute shared-memory op it counts
as (``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_<ncu>``), where it can touch shared memory.

Operand kinds (what a source *is*, which the GPU cross-check draws inputs for):

    val      a value of the instruction's type (the default)
    pred     a predicate                       shift    a shift count / bit position / width
    pos      a bit-field position              width    a bit-field or mask width
    lut      an immediate truth table          member   a warp's member mask
    lane     a lane / shuffle source           clamp    shfl's packed clamp and segment mask
    divisor  a divisor (zeros and -1 likely)   fnsbase/fnsoff  fns's base and offset
    few      values drawn from a few (match.sync)          f32  an f32 selector (slct)
    addr     a memory address ``[a]``          label    a branch or call target
    imm      an immediate the instruction requires
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .grammar import Syntax

#: How far fragsim's results for a row can be trusted, strongest first.
Level = Literal["bit-exact", "unvalidated", "exact", "range", "stand-in", "refused"]

LEVELS: dict[str, str] = {
    "bit-exact": "every bit as the GPU computes it, validated on the GPU by a gpu_check family",
    "unvalidated": "modelled from the PTX ISA beside GPU-validated forms of the same semantic, its own forms not yet "
                   "recorded on a GPU by the named gpu_check family",
    "exact": "exact by construction (moves bits, orders threads, or its result has one reading); "
             "validated through whole kernels",
    "range": "a measured range: counts or timings that depend on the hardware's schedule",
    "stand-in": "an IEEE stand-in, only with approx='ieee': plausible values, not the hardware's bits",
    "refused": "refused when the kernel loads, with the reason",
}

KINDS = frozenset({"val", "pred", "shift", "pos", "width", "lut", "member", "lane", "clamp", "divisor",
                   "fnsbase", "fnsoff", "few", "f32", "addr", "label", "imm", "zero"})


@dataclass(frozen=True)
class Status:
    """``level`` (``LEVELS``); ``family``: the gpu_check family that validates the row on the GPU
    (bit-exact rows; whole-kernel families for exact ones); ``why``: the reason, for refused and
    stand-in rows, or what the range is."""

    level: Level
    family: str | None = None
    why: str = ""

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"status {self.level!r}: expected one of {', '.join(LEVELS)}")
        if self.level in ("bit-exact", "unvalidated") and not self.family:
            raise ValueError(f"a {self.level} row names the gpu_check family that validates it")
        if self.level in ("refused", "stand-in", "range") and not self.why:
            raise ValueError(f"a {self.level} row says why")


@dataclass(frozen=True)
class Operand:
    name: str
    kind: str = "val"
    optional: bool = False


_OPERAND = re.compile(r"^(\[)?([A-Za-z_][\w]*)(?::(\w+))?(\])?$")


def parse_operands(text: str) -> tuple[tuple[Operand, ...], tuple[Operand, ...]]:
    """``"d|p, a, b:shift, {c}"`` -> (destinations, sources).  ``d|p``: two destinations, the second
    one ``[|p]`` optional; ``{x}``: an optional source; ``[a]``: an address; ``name:kind`` a kind."""
    if not text.strip():
        return (), ()
    head, *rest = [p.strip() for p in text.split(",")]

    def one(p: str, optional: bool = False) -> Operand:
        if p.startswith("{") and p.endswith("}"):
            return one(p[1:-1], True)
        m = _OPERAND.match(p)
        if m is None:
            raise ValueError(f"operand {p!r} of {text!r}")
        kind = m.group(3) or ("addr" if m.group(1) else "val")
        if kind not in KINDS:
            raise ValueError(f"operand {p!r} of {text!r}: kind {kind!r} is not one of {sorted(KINDS)}")
        return Operand(m.group(2), kind, optional)

    dsts: list[Operand] = []
    if head != "-":
        for i, d in enumerate(head.replace("[|", "|[").split("|")):
            opt = d.startswith("[") and d.endswith("]") and i > 0
            dsts.append(one(d[1:-1] if opt else d, opt))
    return tuple(dsts), tuple(one(p) for p in rest)


@dataclass(frozen=True)
class Row:
    """See the module docstring.  ``family``: the semantics module the row's ``run`` lives in;
    ``kind``: "value" (a resolver) or "machine" (a builder)."""

    syntax: Syntax
    operands: str
    run: Callable[..., Any] | None
    target: str
    ptx: str
    status: Status
    kind: Literal["value", "machine"] = "value"
    ncu: str | None = None
    note: str = ""
    dsts: tuple[Operand, ...] = field(init=False, compare=False)
    srcs: tuple[Operand, ...] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        d, s = parse_operands(self.operands)
        object.__setattr__(self, "dsts", d)
        object.__setattr__(self, "srcs", s)
        if (self.run is None) != (self.status.level == "refused"):
            raise ValueError(f"{self.syntax.text}: a row runs (run given) unless it is refused")
        if not re.fullmatch(r"sm_\d+a?", self.target) or not re.fullmatch(r"\d+\.\d+", self.ptx):
            raise ValueError(f"{self.syntax.text}: target {self.target!r} / ptx {self.ptx!r}")

    @property
    def opcode(self) -> str:
        return self.syntax.opcode

    @property
    def family(self) -> str:
        return "" if self.run is None else self.run.__module__.rsplit(".", 1)[-1]

    def operand_counts(self) -> list[tuple[int, int]]:
        """The (destinations, sources) counts a line of this row may have."""
        nd = [len(self.dsts) - sum(o.optional for o in self.dsts) + k
              for k in range(sum(o.optional for o in self.dsts) + 1)]
        ns = [len(self.srcs) - sum(o.optional for o in self.srcs) + k
              for k in range(sum(o.optional for o in self.srcs) + 1)]
        return [(a, b) for a in nd for b in ns]
