"""Rows: ``cvt`` with a floating-point type on a side (PTX ISA 9.7.9.21).  Semantics:
``fragsim.ptx.semantics.convert``; validated bit for bit by ``fragsim gpu-check --family ptx_cvt``.

The ISA writes ``cvt{.irnd}{.ftz}{.sat}.dtype.atype`` once for every pair of types; ptxas takes a
rounding modifier, ``.ftz`` and ``.sat`` only where they mean something for the pair (a widening
takes no rounding, ``.ftz`` goes with an ``.f32`` side, 8-bit integers do not convert to ``.bf16``).
The rows below spell that out pair by pair (a ``pair`` slot is ``.dtype.atype``), so that they admit
exactly the 738 spellings ptxas 13.0 assembles for sm_90a (tests/test_ptx_isa_table.py holds them
against ptxas' verdict)."""

from __future__ import annotations

from ..semantics import convert as C
from .grammar import Syntax
from .row import Row, Status

V = Status("bit-exact", "ptx_cvt")

FRND = ("rn", "rz", "rm", "rp")
IRND = ("rni", "rzi", "rmi", "rpi")
INTS = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
WIDE_INTS = ("u16", "u32", "u64", "s16", "s32", "s64")          # .bf16 has no 8-bit partners
F8 = ("e4m3x2", "e5m2x2")
FP_LATER = ("e2m1x2", "e2m3x2", "e3m2x2", "ue8m0x2")
FP_X4 = ("e2m1x4", "e2m3x4", "e3m2x4", "e4m3x4", "e5m2x4")
LATER = Status("refused", why="an sm_100 form (stochastic rounding, 4- and 6-bit floats, ue8m0); fragsim models "
                              "sm_80 and sm_90")


def _pairs(dtypes, atypes) -> tuple[str, ...]:
    return tuple(f"{d}.{a}" for d in dtypes for a in atypes)


def _r(text: str, operands: str, target: str, ptx: str, **vocab) -> Row:
    return Row(Syntax(text, **vocab), operands, C.resolve_cvt, target, ptx, V)


ROWS: tuple[Row, ...] = (
    # integer <-> .f16/.f64, .f64 <-> .f16
    _r("cvt.frnd{.sat}.pair", "d, a", "sm_13", "1.0", frnd=FRND, pair=_pairs(("f16", "f64"), INTS) + ("f16.f64",)),
    _r("cvt.irnd{.sat}.pair", "d, a", "sm_13", "1.0", irnd=IRND, pair=_pairs(INTS, ("f16", "f64"))),
    # integer <-> .f32, .f32 <- .f64: .ftz for the .f32 side
    _r("cvt.frnd{.ftz}{.sat}.pair", "d, a", "sm_10", "1.0", frnd=FRND, pair=_pairs(("f32",), (*INTS, "f64"))),
    _r("cvt.irnd{.ftz}{.sat}.pair", "d, a", "sm_10", "1.0", irnd=IRND, pair=_pairs(INTS, ("f32",))),
    # .bf16 <-> integers, .f64, .f16
    _r("cvt.frnd.pair", "d, a", "sm_90", "7.8", frnd=FRND, pair=_pairs(("bf16",), (*WIDE_INTS, "f64"))),
    _r("cvt.irnd.pair", "d, a", "sm_90", "7.8", irnd=IRND, pair=_pairs(WIDE_INTS, ("bf16",))),
    _r("cvt{.frnd}.pair", "d, a", "sm_90", "7.8", frnd=FRND, pair=("bf16.f16", "f16.bf16", "f64.bf16")),
    _r("cvt{.irnd}.bf16.bf16", "d, a", "sm_90", "7.8", irnd=IRND),
    _r("cvt{.frnd}{.ftz}.f32.bf16", "d, a", "sm_80", "7.1", frnd=FRND),
    # same type: rounding to an integral value
    _r("cvt{.irnd}{.sat}.pair", "d, a", "sm_13", "1.0", irnd=IRND, pair=("f16.f16", "f64.f64")),
    _r("cvt{.irnd}{.ftz}{.sat}.f32.f32", "d, a", "sm_10", "1.0", irnd=IRND),
    # widening
    _r("cvt{.ftz}{.sat}.pair", "d, a", "sm_13", "1.0", pair=("f32.f16", "f64.f32")),
    _r("cvt{.sat}.f64.f16", "d, a", "sm_13", "1.0"),
    # .f32 -> .f16 / .bf16: IEEE roundings, and .relu/.satfinite with .rn/.rz
    _r("cvt.frnd{.ftz}{.sat}.f16.f32", "d, a", "sm_10", "1.0", frnd=FRND),
    _r("cvt.frnd{.ftz}.bf16.f32", "d, a", "sm_80", "7.0", frnd=FRND),
    _r("cvt.frnd2.relu{.satfinite}.dtype.f32", "d, a", "sm_80", "7.0", frnd2=("rn", "rz"), dtype=("f16", "bf16")),
    _r("cvt.frnd2.satfinite.dtype.f32", "d, a", "sm_80", "8.1", frnd2=("rn", "rz"), dtype=("f16", "bf16")),
    # two .f32 into a packed pair (a -> upper half, b -> lower half)
    _r("cvt.frnd2{.relu}{.satfinite}.dtype.f32", "d, a, b", "sm_80", "7.0", frnd2=("rn", "rz"),
       dtype=("f16x2", "bf16x2")),
    # .tf32
    _r("cvt.frnd2{.relu}.tf32.f32", "d, a", "sm_90", "7.8", frnd2=("rn", "rz")),
    _r("cvt.rna{.satfinite}.tf32.f32", "d, a", "sm_80", "7.0"),
    # fp8 pairs (a -> upper byte); ptxas takes .relu before or after .satfinite
    _r("cvt.rn(.satfinite{.relu}).dtype.f32", "d, a, b", "sm_89", "7.8", dtype=F8),
    _r("cvt.rn(.satfinite{.relu}).dtype.f16x2", "d, a", "sm_89", "7.8", dtype=F8),
    _r("cvt.rn{.relu}.f16x2.atype", "d, a", "sm_89", "7.8", atype=F8),
    # Blackwell's: stochastic rounding, the 4- and 6-bit floats, ue8m0
    Row(Syntax("cvt.rs{.relu}{.satfinite}.dtype.f32", dtype=("f16x2", "bf16x2", *F8, *FP_LATER, *FP_X4)),
        "d, a, b, rbits",
        None, "sm_100a", "8.7", LATER),
    Row(Syntax("cvt.frnd{.relu}{.satfinite}.dtype.f32", frnd=("rn", "rz", "rp"), dtype=FP_LATER), "d, a, b", None,
        "sm_100a", "8.6", LATER),
    Row(Syntax("cvt.rn{.relu}.dtype.atype", dtype=("f16x2", "bf16x2"), atype=FP_LATER), "d, a", None, "sm_100a",
        "8.6", LATER),
    Row(Syntax("cvt.frnd2{.relu}.satfinite.tf32.f32", frnd2=("rn", "rz")), "d, a", None, "sm_100", "8.6", LATER),
)
