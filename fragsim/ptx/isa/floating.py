"""Rows: floating-point arithmetic, comparison and classification on .f32/.f64/.f16/.bf16 and their
packed pairs (PTX ISA 9.7.3-9.7.5), and the ``.approx`` functions of the MUFU.  Semantics:
``fragsim.ptx.semantics.floating`` (IEEE rounding, bit for bit, validated by ``fragsim gpu-check
--family ptx_float``) and ``fragsim.ptx.semantics.approx`` (the MUFU's bits, ``--family approx``)."""

from __future__ import annotations

from ..semantics import approx as X
from ..semantics import floating as F
from .grammar import Syntax
from .row import Row, Status

V = Status("bit-exact", "ptx_float")
#: the MUFU's forms modelled bit for bit (fragsim.sfu), validated on every input by --family approx
HW = Status("bit-exact", "approx")
SM100 = Status("refused", why="an sm_100 form (fragsim models sm_80 and sm_90)")

RND = ("rn", "rz", "rm", "rp")
CMP = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
BOOL = ("and", "or", "xor")
TESTS = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")
HALF = ("f16", "f16x2")
BF = ("bf16", "bf16x2")
#: set's destination types per source type, with and without .ftz (as ptxas takes them)
SET_FTZ = {"f32": ("u32", "s32", "f32", "f16"), "f64": (), "f16": ("u16", "s16", "u32", "s32", "f16"),
           "f16x2": ("f16x2", "u32", "s32"), "bf16": (), "bf16x2": ()}
SET_PLAIN = {"f32": ("bf16",), "f64": ("u32", "s32", "f32", "f16", "bf16"), "f16": ("bf16",),
             "f16x2": (), "bf16": ("u16", "s16", "u32", "s32", "bf16"), "bf16x2": ("bf16x2", "u32", "s32")}


def _r(text: str, operands: str, run, target: str, ptx: str, status: Status = V, **vocab) -> Row:
    return Row(Syntax(text, **vocab), operands, run, target, ptx, status)


def _binary(op: str) -> tuple[Row, ...]:
    return (
        _r(f"{op}{{.rnd}}{{.ftz}}{{.sat}}.f32", "d, a, b", F.arith, "sm_20", "1.0", rnd=RND),
        _r(f"{op}{{.rnd}}.f64", "d, a, b", F.arith, "sm_20", "1.0", rnd=RND),
        _r(f"{op}{{.rn}}{{.ftz}}{{.sat}}.type", "d, a, b", F.arith, "sm_53", "4.2", type=HALF),
        _r(f"{op}{{.rn}}.type", "d, a, b", F.arith, "sm_90", "7.8", type=BF),
        _r(f"{op}{{.rnd}}{{.ftz}}{{.sat}}.f32x2", "d, a, b", None, "sm_100", "8.6", SM100, rnd=RND),
        _r(f"{op}{{.rnd}}{{.sat}}.f32.atype", "d, a, c", None, "sm_100", "8.6", SM100, rnd=RND, atype=("f16", "bf16")),
    )


def _fused(op: str) -> tuple[Row, ...]:
    return (
        _r(f"{op}.rnd{{.ftz}}{{.sat}}.f32", "d, a, b, c", F.arith, "sm_20", "2.0", rnd=RND),
        _r(f"{op}.rnd.f64", "d, a, b, c", F.arith, "sm_13", "1.4", rnd=RND),
    )


def _minmax(op: str) -> tuple[Row, ...]:
    return (
        _r(f"{op}{{.ftz}}{{.NaN}}{{.xorsign.abs}}.f32", "d, a, b", F.minmax, "sm_20", "1.0"),
        _r(f"{op}.f64", "d, a, b", F.minmax, "sm_13", "1.0"),
        _r(f"{op}{{.ftz}}{{.NaN}}{{.xorsign.abs}}.type", "d, a, b", F.minmax, "sm_80", "7.0", type=HALF),
        _r(f"{op}{{.NaN}}{{.xorsign.abs}}.type", "d, a, b", F.minmax, "sm_80", "7.0", type=BF),
    )


def _unary(op: str) -> tuple[Row, ...]:
    return (
        _r(f"{op}{{.ftz}}.f32", "d, a", F.negabs, "sm_10", "1.0"),
        _r(f"{op}.f64", "d, a", F.negabs, "sm_13", "1.0"),
        _r(f"{op}{{.ftz}}.type", "d, a", F.negabs, "sm_53", "6.0", type=HALF),
        _r(f"{op}.type", "d, a", F.negabs, "sm_80", "7.0", type=BF),
    )


def _rounded(op: str, operands: str) -> tuple[Row, ...]:
    return (
        _r(f"{op}.rnd{{.ftz}}.f32", operands, F.divlike, "sm_20", "2.0", rnd=RND),
        _r(f"{op}.rnd.f64", operands, F.divlike, "sm_13", "1.4", rnd=RND),
        _r(f"{op}.approx{{.ftz}}.f32", operands, X.hardware, "sm_10", "1.4", HW),
    )


def _set(st: str) -> tuple[Row, ...]:
    out = []
    for ftz, dtypes in (("{.ftz}", SET_FTZ[st]), ("", SET_PLAIN[st])):
        if dtypes:
            out.append(_r(f"set.CmpOp{ftz}.dtype.{st}", "d, a, b", F.resolve_float_compare, "sm_10", "1.0",
                          CmpOp=CMP, dtype=dtypes))
            out.append(_r(f"set.CmpOp.BoolOp{ftz}.dtype.{st}", "d, a, b, c:pred", F.resolve_float_compare,
                          "sm_10", "1.0", CmpOp=CMP, BoolOp=BOOL, dtype=dtypes))
    return tuple(out)


ROWS: tuple[Row, ...] = (
    *_binary("add"), *_binary("sub"), *_binary("mul"),
    *_fused("fma"), *_fused("mad"),
    _r("fma.rn{.ftz}{.sat}.type", "d, a, b, c", F.arith, "sm_53", "4.2", type=HALF),
    _r("fma.rn{.ftz}.relu.type", "d, a, b, c", F.arith, "sm_80", "7.0", type=HALF),
    _r("fma.rn{.relu}.type", "d, a, b, c", F.arith, "sm_80", "7.0", type=BF),
    _r("fma.rn.oob{.relu}.type", "d, a, b, c", F.arith, "sm_90", "8.1", type=(*HALF, *BF)),
    _r("fma.rnd{.ftz}{.sat}.f32x2", "d, a, b, c", None, "sm_100", "8.6", SM100, rnd=RND),
    *_minmax("min"), *_minmax("max"),
    *_unary("neg"), *_unary("abs"),
    *_rounded("div", "d, a, b"), *_rounded("rcp", "d, a"), *_rounded("sqrt", "d, a"),
    _r("div.full{.ftz}.f32", "d, a, b", X.hardware, "sm_10", "1.4", HW),
    _r("rcp.approx.ftz.f64", "d, a", X.hardware, "sm_20", "2.1", HW),
    _r("testp.op.type", "p, a", F.testp, "sm_20", "2.0", op=TESTS, type=("f32", "f64")),
    _r("copysign.type", "d, a, b", F.copysign, "sm_20", "2.0", type=("f32", "f64")),
    # comparisons (a predicate, or set's number or mask)
    _r("setp.CmpOp{.ftz}.f32", "p[|q], a, b", F.resolve_float_compare, "sm_10", "1.0", CmpOp=CMP),
    _r("setp.CmpOp.f64", "p[|q], a, b", F.resolve_float_compare, "sm_13", "1.0", CmpOp=CMP),
    _r("setp.CmpOp{.ftz}.f16", "p, a, b", F.resolve_float_compare, "sm_53", "4.2", CmpOp=CMP),
    _r("setp.CmpOp{.ftz}.f16x2", "p[|q], a, b", F.resolve_float_compare, "sm_53", "4.2", CmpOp=CMP),
    _r("setp.CmpOp.bf16", "p, a, b", F.resolve_float_compare, "sm_90", "7.8", CmpOp=CMP),
    _r("setp.CmpOp.bf16x2", "p[|q], a, b", F.resolve_float_compare, "sm_90", "7.8", CmpOp=CMP),
    _r("setp.CmpOp.BoolOp{.ftz}.f32", "p[|q], a, b, c:pred", F.resolve_float_compare, "sm_10", "1.0", CmpOp=CMP,
       BoolOp=BOOL),
    _r("setp.CmpOp.BoolOp.f64", "p[|q], a, b, c:pred", F.resolve_float_compare, "sm_13", "1.0", CmpOp=CMP,
       BoolOp=BOOL),
    _r("setp.CmpOp.BoolOp{.ftz}.f16", "p, a, b, c:pred", F.resolve_float_compare, "sm_53", "4.2", CmpOp=CMP,
       BoolOp=BOOL),
    _r("setp.CmpOp.BoolOp{.ftz}.f16x2", "p[|q], a, b, c:pred", F.resolve_float_compare, "sm_53", "4.2",
       CmpOp=CMP, BoolOp=BOOL),
    _r("setp.CmpOp.BoolOp.bf16", "p, a, b, c:pred", F.resolve_float_compare, "sm_90", "7.8", CmpOp=CMP,
       BoolOp=BOOL),
    _r("setp.CmpOp.BoolOp.bf16x2", "p[|q], a, b, c:pred", F.resolve_float_compare, "sm_90", "7.8", CmpOp=CMP,
       BoolOp=BOOL),
    *(row for st in SET_FTZ for row in _set(st)),
    # the MUFU's functions: the hardware's bits (IEEE stand-ins on request: approx='ieee')
    _r("ex2.approx{.ftz}.f32", "d, a", X.hardware, "sm_10", "1.4", HW),
    _r("ex2.approx.type", "d, a", X.hardware, "sm_75", "7.0", HW, type=HALF),
    _r("ex2.approx.ftz.type", "d, a", X.hardware, "sm_90", "7.8", HW, type=BF),
    _r("lg2.approx{.ftz}.f32", "d, a", X.hardware, "sm_10", "1.4", HW),
    _r("rsqrt.approx{.ftz}.f32", "d, a", X.hardware, "sm_10", "1.4", HW),
    _r("rsqrt.approx{.ftz}.f64", "d, a", X.hardware, "sm_13", "1.4", HW),
    _r("sin.approx{.ftz}.f32", "d, a", X.hardware, "sm_10", "1.4", HW),
    _r("cos.approx{.ftz}.f32", "d, a", X.hardware, "sm_10", "1.4", HW),
    _r("tanh.approx.type", "d, a", X.hardware, "sm_75", "7.0", HW, type=("f32", *HALF)),
    _r("tanh.approx.type", "d, a", X.hardware, "sm_90", "7.8", HW, type=BF),
)
