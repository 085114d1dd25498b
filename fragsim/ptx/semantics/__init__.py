"""What PTX instructions compute, one module per family, resolved once per instruction.

Values are raw bits: a ``.b32``/``.u32``/``.s32``/``.f32`` operand is a ``uint32`` array over the
threads that execute the instruction, ``.b16``/``.f16``/``.bf16`` a ``uint16`` array, ``.b64``/
``.f64`` ``uint64``, ``.b8``/``.u8``/``.s8`` ``uint8``, packed ``.f16x2``/``.bf16x2`` ``uint32``,
and ``.pred`` a ``bool`` array.  Signed integers are their two's-complement bits; floats their
IEEE bits.  A semantic function never sees Python numbers and never loops over threads.

Which function runs which instruction is the PTX instruction table's to say
(``fragsim.ptx.isa``): its row for the instruction names the resolver here, and its grammar has read
the modifiers already -- a resolver gets a ``Spec`` whose ``match`` holds them by slot (``spec.slot
("rnd")``, ``spec.has("sat")``, ``spec.types``) and returns a ``Semantic``: the function and the PTX
type of each destination and source operand (which tells the machine how to read registers and
immediates).  A combination the rows admit but fragsim does not model is refused there, as
``UnsupportedInstruction`` naming the instruction -- never at run time, never silently.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from ..isa.grammar import Match
from ..types import TYPES

#: Every type name a modifier may be: the register types and the packed ones.
TYPE_NAMES = frozenset(TYPES) | {"u16x2", "s16x2", "f16x2", "bf16x2", "f32x2", "tf32", "e4m3x2", "e5m2x2"}


class UnsupportedInstruction(ValueError):
    """The instruction (as PTX spells it) is not defined by the PTX ISA or not modelled; the message
    says which and why."""


@dataclass(frozen=True)
class Spec:
    """One instruction as written: ``opcode`` and its dot-separated modifiers in order, e.g.
    ``fma.rn.ftz.sat.f32`` -> opcode ``"fma"``, mods ``("rn", "ftz", "sat", "f32")``; ``ndst``/``nsrc``:
    how many destination and source operands the PTX line has (``setp`` may write ``p|q``)."""

    opcode: str
    mods: tuple[str, ...]
    ndst: int
    nsrc: int
    approx: bool = False      # the user opted into IEEE stand-ins for .approx functions (``approx``)
    match: Match | None = None   # the table's reading of ``mods`` (``fragsim.ptx.isa.grammar``)

    @property
    def text(self) -> str:
        return ".".join((self.opcode, *self.mods))

    def slot(self, name: str, default: str | None = None) -> str | None:
        """The spelling of slot ``name`` (``"rn"`` for ``.rnd``), ``default`` where absent."""
        return default if self.match is None else self.match.get(name, default)

    def has(self, name: str) -> bool:
        """Whether slot or literal ``name`` is present (``has("sat")``)."""
        return self.match is not None and self.match.has(name)

    @property
    def types(self) -> tuple[str, ...]:
        """The PTX types among the modifiers, in order (``cvt.rn.f16.f32`` -> ("f16", "f32"))."""
        return tuple(m for m in self.mods if m in TYPE_NAMES)

    @property
    def flags(self) -> frozenset[str]:
        """The modifiers that are not types."""
        return frozenset(m for m in self.mods if m not in TYPE_NAMES)

    def which(self, group: Collection[str]) -> str | None:
        """The member of ``group`` among the modifiers (``which(("lo", "hi"))`` -> ``"hi"``), or None; the
        row's grammar admits one at most."""
        return next((m for m in self.mods if m in group), None)


@dataclass(frozen=True)
class Semantic:
    """``fn(*sources) -> tuple of destinations`` over raw-bit arrays of equal length; ``dst`` and ``src``
    the PTX types ("b32", "f16x2", "pred", ...) in which the machine delivers each operand.

    ``warp``: a warp-collective instruction (shfl.sync, vote.sync, match.sync, redux.sync): ``fn(mask,
    *sources)`` gets arrays shaped ``(warps, 32)`` (lane order) and ``mask``, a bool ``(warps, 32)`` of
    the lanes that execute it (active and in the member mask); lanes outside ``mask`` hold zeros in
    the sources and their results are ignored."""

    fn: Callable[..., tuple]
    dst: tuple[str, ...]
    src: tuple[str, ...]
    warp: bool = False
