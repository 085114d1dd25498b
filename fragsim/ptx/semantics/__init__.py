"""What PTX instructions compute, one module per family, resolved once per instruction.

Values are raw bits: a ``.b32``/``.u32``/``.s32``/``.f32`` operand is a ``uint32`` array over the
threads that execute the instruction, ``.b16``/``.f16``/``.bf16`` a ``uint16`` array, ``.b64``/
``.f64`` ``uint64``, ``.b8``/``.u8``/``.s8`` ``uint8``, packed ``.f16x2``/``.bf16x2`` ``uint32``,
and ``.pred`` a ``bool`` array.  Signed integers are their two's-complement bits; floats their
IEEE bits.  A semantic function never sees Python numbers and never loops over threads.

A family module exposes ``RESOLVERS: dict[str, Callable[[Spec], Semantic]]`` keyed by the opcode
(``"add"``, ``"cvt"``, ``"setp"`` ...).  A resolver reads the instruction's modifiers once, when the
program is loaded, and returns a ``Semantic``: the function and the PTX type of each destination and
source operand (which tells the machine how to read registers and immediates).  A variant the PTX
ISA does not define, or that fragsim does not model, is refused there, as ``UnsupportedInstruction``
naming the instruction -- never at run time, never silently.

``resolve(spec)`` looks the opcode up in the families in ``FAMILIES`` order; the first that has it
resolves it.  An opcode with integer and floating-point forms (``add``, ``min``, ``setp``, ``cvt`` ...)
is therefore dispatched by ``integer``, which resolves the integer types itself and hands float
types to ``floating``'s or ``convert``'s resolver of the same opcode.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

#: The family modules of this package, each with a ``RESOLVERS`` dict.
FAMILIES = ("integer", "floating", "convert", "warp", "approx")


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

    @property
    def text(self) -> str:
        return ".".join((self.opcode, *self.mods))


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


def resolve(spec: Spec) -> Semantic:
    """The semantic of ``spec`` from the family that defines its opcode."""
    for family in FAMILIES:
        resolvers = importlib.import_module(f"{__name__}.{family}").RESOLVERS
        if spec.opcode in resolvers:
            return resolvers[spec.opcode](spec)
    raise UnsupportedInstruction(f"{spec.text}: not an instruction fragsim runs")
