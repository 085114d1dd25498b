"""Rows: integer arithmetic, bit manipulation, logic, shifts, comparison and selection, integer cvt
(PTX ISA sections 9.7.1, 9.7.7-9.7.9, 9.7.9.21).  Semantics: ``fragsim.ptx.semantics.integer``;
validated bit for bit by ``fragsim gpu-check --family ptx_int``."""

from __future__ import annotations

from ..semantics import integer as I
from .grammar import Syntax
from .row import Row, Status

V = Status("bit-exact", "ptx_int")
NEW = Status("unvalidated", "ptx_int")

INT = ("u16", "u32", "u64", "s16", "s32", "s64")
SIGNED = ("s16", "s32", "s64")
CARRY = ("u32", "s32", "u64", "s64")
PACKED = ("u16x2", "s16x2")
BITS = ("b16", "b32", "b64")
ALL16_64 = (*BITS, *INT)
CVT_INT = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
CMP_B = ("eq", "ne")
CMP_U = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
CMP_S = ("eq", "ne", "lt", "le", "gt", "ge")
BOOL = ("and", "or", "xor")
PRMT_MODES = ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")


def _range(t: str) -> tuple[int, int]:
    n = int(t[1:])
    return (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)


#: cvt.sat.dtype.atype exists where some .atype value lies outside .dtype's range (ptxas refuses the rest)
CVT_SAT = tuple(f"{d}.{a}" for d in CVT_INT for a in CVT_INT
                if not (_range(d)[0] <= _range(a)[0] and _range(a)[1] <= _range(d)[1]))


def _r(text: str, operands: str, run, target: str, ptx: str, status: Status = V, **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, run, target, ptx, status)


ROWS: tuple[Row, ...] = (
    # ---- arithmetic -------------------------------------------------------------------------------
    _r("add.type", "d, a, b", I.add_sub, "sm_10", "1.0", type=INT),
    _r("add.sat.s32", "d, a, b", I.add_sub, "sm_10", "1.0"),
    _r("add.cc.type", "d, a, b", I.add_sub, "sm_10", "1.2", type=CARRY),
    _r("add.type", "d, a, b", I.add_sub, "sm_90", "8.0", type=PACKED),
    _r("sub.type", "d, a, b", I.add_sub, "sm_10", "1.0", type=INT),
    _r("sub.sat.s32", "d, a, b", I.add_sub, "sm_10", "1.0"),
    _r("sub.cc.type", "d, a, b", I.add_sub, "sm_10", "1.2", type=CARRY),
    _r("addc{.cc}.type", "d, a, b", I.addc_subc, "sm_10", "1.2", type=CARRY),
    _r("subc{.cc}.type", "d, a, b", I.addc_subc, "sm_10", "1.2", type=CARRY),
    _r("mul.mode.type", "d, a, b", I.mul, "sm_10", "1.0", mode=("hi", "lo"), type=INT),
    _r("mul.wide.type", "d, a, b", I.mul, "sm_10", "1.0", type=("u16", "u32", "s16", "s32")),
    _r("mad.mode.type", "d, a, b, c", I.mad, "sm_10", "1.0", mode=("hi", "lo"), type=INT),
    _r("mad.wide.type", "d, a, b, c", I.mad, "sm_10", "1.0", type=("u16", "u32", "s16", "s32")),
    _r("mad.hi.sat.s32", "d, a, b, c", I.mad, "sm_10", "1.0"),
    _r("mad.mode.cc.type", "d, a, b, c", I.mad, "sm_20", "3.0", mode=("hi", "lo"), type=CARRY),
    _r("madc.mode{.cc}.type", "d, a, b, c", I.madc, "sm_20", "3.0", mode=("hi", "lo"), type=CARRY),
    _r("mul24.mode.type", "d, a, b", I.mul24_mad24, "sm_10", "1.0", mode=("hi", "lo"), type=("u32", "s32")),
    _r("mad24.mode.type", "d, a, b, c", I.mul24_mad24, "sm_10", "1.0", mode=("hi", "lo"), type=("u32", "s32")),
    _r("mad24.hi.sat.s32", "d, a, b, c", I.mul24_mad24, "sm_10", "1.0"),
    _r("sad.type", "d, a, b, c", I.sad, "sm_10", "1.0", type=INT),
    _r("div.type", "d, a, b:divisor", I.div_rem, "sm_10", "1.0", type=INT),
    _r("rem.type", "d, a, b:divisor", I.div_rem, "sm_10", "1.0", type=INT),
    _r("abs.type", "d, a", I.abs_neg, "sm_10", "1.0", type=SIGNED),
    _r("neg.type", "d, a", I.abs_neg, "sm_10", "1.0", type=SIGNED),
    _r("min.type", "d, a, b", I.min_max, "sm_10", "1.0", type=INT),
    _r("max.type", "d, a, b", I.min_max, "sm_10", "1.0", type=INT),
    _r("min.type", "d, a, b", I.min_max, "sm_90", "8.0", type=PACKED),
    _r("max.type", "d, a, b", I.min_max, "sm_90", "8.0", type=PACKED),
    _r("min.relu.type", "d, a, b", I.min_max, "sm_90", "8.0", type=("s32", "s16x2")),
    _r("max.relu.type", "d, a, b", I.min_max, "sm_90", "8.0", type=("s32", "s16x2")),
    # ---- bit manipulation -------------------------------------------------------------------------
    _r("popc.type", "d, a", I.bitcount, "sm_20", "2.0", type=("b32", "b64")),
    _r("clz.type", "d, a", I.bitcount, "sm_20", "2.0", type=("b32", "b64")),
    _r("brev.type", "d, a", I.bitcount, "sm_20", "2.0", type=("b32", "b64")),
    _r("bfind{.shiftamt}.type", "d, a", I.bfind, "sm_20", "2.0", type=("u32", "u64", "s32", "s64")),
    _r("fns.b32", "d, mask, base:fnsbase, offset:fnsoff", I.fns, "sm_30", "6.0"),
    _r("bfe.type", "d, a, b:pos, c:pos", I.bfe, "sm_20", "2.0", type=("u32", "u64", "s32", "s64")),
    _r("bfi.type", "f, a, b, c:pos, d:pos", I.bfi, "sm_20", "2.0", type=("b32", "b64")),
    _r("prmt.b32{.mode}", "d, a, b, c", I.prmt, "sm_20", "2.0", mode=PRMT_MODES),
    _r("szext.mode.type", "d, a, b:width", I.szext, "sm_70", "7.6", mode=("clamp", "wrap"), type=("u32", "s32")),
    _r("bmsk.mode.b32", "d, a:width, b:width", I.bmsk, "sm_70", "7.6", mode=("clamp", "wrap")),
    # ---- logic and shifts -------------------------------------------------------------------------
    _r("lop3.b32", "d, a, b, c, immLut:lut", I.lop3, "sm_50", "4.3"),
    _r("lop3.BoolOp.b32", "d|p, a, b, c, immLut:lut, q:pred", I.lop3, "sm_50", "8.2", BoolOp=("and", "or")),
    _r("and.type", "d, a, b", I.logic, "sm_10", "1.0", type=("pred", *BITS)),
    _r("or.type", "d, a, b", I.logic, "sm_10", "1.0", type=("pred", *BITS)),
    _r("xor.type", "d, a, b", I.logic, "sm_10", "1.0", type=("pred", *BITS)),
    _r("not.type", "d, a", I.logic, "sm_10", "1.0", type=("pred", *BITS)),
    _r("cnot.type", "d, a", I.cnot, "sm_10", "1.0", type=BITS),
    _r("shl.type", "d, a, b:shift", I.resolve_shift, "sm_10", "1.0", type=BITS),
    _r("shr.type", "d, a, b:shift", I.resolve_shift, "sm_10", "1.0", type=ALL16_64),
    _r("shf.dir.mode.b32", "d, a, b, c:shift", I.shf, "sm_32", "3.1", dir=("l", "r"), mode=("clamp", "wrap")),
    # ---- comparison and selection -----------------------------------------------------------------
    _r("setp.CmpOp.type", "p[|q], a, b", I.setp_set, "sm_10", "1.0", CmpOp=CMP_B, type=BITS),
    _r("setp.CmpOp.type", "p[|q], a, b", I.setp_set, "sm_10", "1.0", CmpOp=CMP_U,
       type=("u16", "u32", "u64")),
    _r("setp.CmpOp.type", "p[|q], a, b", I.setp_set, "sm_10", "1.0", CmpOp=CMP_S, type=SIGNED),
    _r("setp.CmpOp.BoolOp.type", "p[|q], a, b, c:pred", I.setp_set, "sm_10", "1.0", CmpOp=CMP_B, BoolOp=BOOL,
       type=BITS),
    _r("setp.CmpOp.BoolOp.type", "p[|q], a, b, c:pred", I.setp_set, "sm_10", "1.0", CmpOp=CMP_U, BoolOp=BOOL,
       type=("u16", "u32", "u64")),
    _r("setp.CmpOp.BoolOp.type", "p[|q], a, b, c:pred", I.setp_set, "sm_10", "1.0", CmpOp=CMP_S, BoolOp=BOOL,
       type=SIGNED),
    *(_r(text, operands, I.setp_set, target, ptx, V if not boolop or types[0][0] == "u" else NEW, CmpOp=cmp,
         dtype=dtypes, type=types, **boolop)
      for text, operands, boolop in (("set.CmpOp.dtype.type", "d, a, b", {}),
                                     ("set.CmpOp.BoolOp.dtype.type", "d, a, b, c:pred", {"BoolOp": BOOL}))
      for target, ptx, dtypes in (("sm_10", "1.0", ("u32", "s32", "f32")), ("sm_90", "7.8", ("f16", "bf16")))
      for cmp, types in ((CMP_B, BITS), (CMP_U, ("u16", "u32", "u64")), (CMP_S, SIGNED))),
    _r("selp.type", "d, a, b, c:pred", I.selp, "sm_10", "1.0", type=(*ALL16_64, "f32", "f64")),
    _r("slct.dtype.s32", "d, a, b, c", I.slct, "sm_10", "1.0", dtype=(*ALL16_64, "f32", "f64")),
    _r("slct{.ftz}.dtype.f32", "d, a, b, c:f32", I.slct, "sm_10", "1.0", dtype=(*ALL16_64, "f32", "f64")),
    # ---- dot products -----------------------------------------------------------------------------
    _r("dp4a.atype.btype", "d, a, b, c", I.dp, "sm_61", "5.0", atype=("u32", "s32"), btype=("u32", "s32")),
    _r("dp2a.mode.atype.btype", "d, a, b, c", I.dp, "sm_61", "5.0", mode=("lo", "hi"), atype=("u32", "s32"),
       btype=("u32", "s32")),
    # ---- conversion among integer types -----------------------------------------------------------
    _r("cvt.dtype.atype", "d, a", I.resolve_integer_cvt, "sm_10", "1.0", dtype=CVT_INT, atype=CVT_INT),
    _r("cvt.sat.pair", "d, a", I.resolve_integer_cvt, "sm_10", "1.0", pair=CVT_SAT),
    _r("cvt.pack.sat.convertType.s32", "d, a, b", I.cvt_pack, "sm_72", "6.5", NEW, convertType=("u16", "s16")),
    _r("cvt.pack.sat.convertType.s32.b32", "d, a, b, c", I.cvt_pack, "sm_72", "6.5", NEW, convertType=("u8", "s8")),
    _r("cvt.pack.sat.convertType.s32.b32", "d, a, b, c", I.cvt_pack, "sm_75", "6.5", NEW,
       convertType=("u4", "s4", "u2", "s2")),
)
