"""The floating-point instructions: add, sub, mul, fma, mad, div, rcp, sqrt, min, max, neg, abs,
copysign, testp, and setp/set on float operands, in f16, f16x2, bf16, bf16x2, f32 and f64.

Every result is the exact value rounded once (fragsim.ptx.semantics.ieee) in the instruction's
rounding mode, as the PTX ISA defines ``.rn/.rz/.rm/.rp``; ``.ftz`` flushes subnormal inputs and
tiny results (tiny after rounding, as measured) to the zero of their sign; ``.sat`` clamps to
[0.0, 1.0] with NaN to +0.0; ``.relu`` clamps negatives to +0.0 with NaN to the canonical NaN;
``.oob`` gives +0.0 when a or b is the OOB NaN.  What the ISA leaves unspecified -- which NaN an instruction returns, whether -0.0
saturates to +0.0 -- is what the H100 does (``fragsim gpu-check --family ptx_float``, recorded under
tests/data/ptx/float): see ``NAN_RESULT`` and the notes at each rule.

Refused, by name: the ``.approx`` and ``.full`` forms (their results are the MUFU unit's, not
IEEE), the sm_100 forms (``.f32x2``, mixed-precision ``add.f32.f16``, three-operand min/max),
and ``mad.f32`` without a rounding modifier (the sm_1x form).  The integer family dispatches the
opcodes with integer and float forms: their float types come here, ``setp``/``set`` with a float
source through ``resolve_float_compare``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from . import Semantic, Spec, UnsupportedInstruction
from .ieee import (MODES, exact_div, exact_fma, exact_sqrt, flush_subnormal, fmt, from_double, infinity,
                   is_inf, is_nan, is_subnormal, is_zero, round_pack, two_sum, widen)

SCALARS = ("f16", "bf16", "f32", "f64")
#: packed types and their element type: the low half-word is element 0
PACKED = {"f16x2": "f16", "bf16x2": "bf16"}
FLOATS = SCALARS + tuple(PACKED)

#: The NaN each instruction returns when its result is NaN and the ISA does not name one, by element
#: format, as measured on the H100: f32/f16/bf16 arithmetic returns the canonical NaN (positive, all
#: significand bits set), whatever the operands; f64 arithmetic returns a NaN operand with the quiet
#: bit set -- the first NaN in the order the hardware looks: b then a for add, sub, mul, min and max
#: (DADD, DMUL, DMNMX), b then c then a for fma/mad (DFMA), a then b for div (a subroutine) -- and
#: ``F64_DEFAULT_NAN`` when no operand is NaN (0 * inf, inf - inf, 0/0, sqrt(-1)).
NAN_RESULT = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF}
F64_DEFAULT_NAN = 0xFFF8000000000000
F64_QUIET = 1 << 51

# .ftz flushes a result to the zero of its sign when it is tiny (round_pack's ftz, ieee.tiny): below
# the smallest normal number after rounding to the format's precision with an unbounded exponent, in the
# instruction's rounding mode -- measured on the H100 for every .ftz instruction.  Neither "the result
# rounded to the format is subnormal" (2**-126 * (1 - 2**-24) has 24 bits and is flushed, though
# rounding it to f32 gives 2**-126) nor "before rounding" (2**-126 * (1 - 2**-26), which 24 bits
# round up to 2**-126 under .rn, is kept).

#: The OOB NaN of ``fma.oob`` (PTX ISA "Tensors: out of boundary access"), per element format, as
#: measured on the H100 (every NaN tried in each operand): 0x7FF7 of either sign, in a or b only --
#: an OOB NaN in c is an ordinary NaN.
OOB_NAN = {"f16": 0x7FF7, "bf16": 0x7FF7}

CMP_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
BOOL_OPS = ("and", "or", "xor")
TESTS = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")
SM100 = "an sm_100 form; fragsim models what the H100 (sm_90) runs"
Arrays = tuple[np.ndarray, ...]


def _refuse(spec: Spec, why: str) -> UnsupportedInstruction:
    return UnsupportedInstruction(f"{spec.text}: {why}")


# ---------------------------------------------------------------------------------------- helpers

def _elementwise(t: str, fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """fn over elements of the scalar format; for a packed type, over both half-words of each word."""
    if t not in PACKED:
        return fn

    def packed(*xs: np.ndarray) -> np.ndarray:
        halves = [np.ascontiguousarray(x, np.uint32).view(np.uint16) for x in xs]
        return np.ascontiguousarray(fn(*halves), np.uint16).view(np.uint32)
    return packed


def _nan_of(f: str, ops: list[np.ndarray]) -> np.ndarray:
    """The NaN an arithmetic result takes (NAN_RESULT), given the operands' bits in the order the
    hardware picks a NaN operand (f64)."""
    ff = fmt(f)
    if f != "f64":
        return np.full(ops[0].shape, NAN_RESULT[f], ff.dtype)
    out = np.full(ops[0].shape, F64_DEFAULT_NAN, np.uint64)
    for x in reversed(ops):
        out = np.where(is_nan(x, ff), x | np.uint64(F64_QUIET), out)
    return out


def _signed_zero(sign: np.ndarray, f: str) -> np.ndarray:
    ff = fmt(f)
    return (np.asarray(sign).astype(ff.dtype) << ff.dtype(ff.storage_bits - 1)).astype(ff.dtype)


def _sign(x: np.ndarray, f: str) -> np.ndarray:
    ff = fmt(f)
    return (x >> ff.dtype(ff.storage_bits - 1)) != 0


def _one(f: str) -> int:
    ff = fmt(f)
    return ff.bias << ff.man_bits


# ------------------------------------------------------------------------- add, sub, mul, fma, mad

def _fma_bits(a: np.ndarray, b: np.ndarray, c: np.ndarray, f: str, mode: str, zero_sign: np.ndarray | None,
              nan_ops: list[np.ndarray], ftz: bool = False) -> np.ndarray:
    """a*b + c rounded once to ``f`` (all bits of ``f``); ``zero_sign``: the sign of an exact-zero result
    where the caller knows it (mul), else IEEE's rule for sums; NaNs as NAN_RESULT over ``nan_ops``."""
    ff = fmt(f)
    wa, wb, wc = widen(a, ff), widen(b, ff), widen(c, ff)
    sa, sb, sc = _sign(a, f), _sign(b, f), _sign(c, f)
    sp = sa ^ sb
    nan_in = is_nan(a, ff) | is_nan(b, ff) | is_nan(c, ff)
    ia, ib, ic = is_inf(a, ff), is_inf(b, ff), is_inf(c, ff)
    za, zb = is_zero(a, ff), is_zero(b, ff)
    p_inf = ia | ib
    invalid = (ia & zb) | (ib & za) | (p_inf & ic & (sp != sc))
    finite = ~(nan_in | p_inf | ic)
    fa, fb, fc = (np.where(finite, w, 0.0) for w in (wa, wb, wc))
    if f != "f64":
        # a*b is exact in float64 (at most 48 significand bits), and TwoSum makes the sum exact.
        hi, lo = two_sum(fa * fb, fc)
        sign, M, E = from_double(hi, lo)
        zero = hi == 0
    else:
        sign, M, E, zero = exact_fma(fa, fb, fc)
    out = round_pack(sign, M, E, ff, mode, ftz=ftz)
    p_zero = za | zb
    both_zero = p_zero & is_zero(c, ff)
    if zero_sign is None:
        zsign = np.where(both_zero, (sp & sc) if mode != "rm" else (sp | sc), mode == "rm")
    else:
        zsign = zero_sign
    out = np.where(zero & finite, _signed_zero(zsign, f), out)
    out = np.where(p_inf & ~invalid, infinity(ff, sp), np.where(ic & ~invalid & ~p_inf, infinity(ff, sc), out))
    return np.where(nan_in | invalid, _nan_of(f, nan_ops), out).astype(ff.dtype)


@functools.cache
def _host_is_ieee() -> bool:
    """Whether this process's float32/float64 arithmetic keeps subnormals (a library can switch the
    CPU to flush them); the .rn fast paths below rely on it."""
    tiny32, tiny64 = np.array([2.0 ** -149], np.float32), np.array([2.0 ** -1074])
    return bool((tiny32 * np.float32(1.0))[0] != 0 and (tiny64 * 1.0)[0] != 0 and (tiny64 / 2.0)[0] == 0)


#: below this magnitude an f32 result is tiny for .ftz under .rn (it rounds below 2**-126 in 24 bits)
_F32_TINY_RN = 2.0 ** -126 - 2.0 ** -151


def _f32_rn(op: str, src: list[np.ndarray], ftz: bool) -> np.ndarray:
    """add/sub/mul/fma.rn.f32 by the host's float64: a*b is exact there and TwoSum makes a sum exact
    as hi + lo; hi rounded to odd (an inexact hi with an even significand moves one unit toward lo)
    and then to the nearest f32 is the single rounding (53 bits >= 24 + 2)."""
    with np.errstate(all="ignore"):
        a, b = (x.view(np.float32).astype(np.float64) for x in src[:2])
        if op == "mul":
            hi, lo = a * b, np.zeros_like(a)
        else:
            p, c = (a, b) if op == "add" else (a, -b) if op == "sub" else (a * b, src[2].view(np.float32).astype(np.float64))
            hi, lo = two_sum(p, c)
        bits = hi.view(np.uint64)
        fix = np.isfinite(hi) & (lo != 0) & ((bits & np.uint64(1)) == 0)
        away = (lo > 0) == (hi > 0)
        odd = np.where(away, bits + np.uint64(1), bits - np.uint64(1)).view(np.float64)
        r = np.where(fix, odd, hi).astype(np.float32).view(np.uint32)
        if ftz:
            mag = np.abs(hi)
            tiny_r = ((r & np.uint32(0x7FFFFFFF)) == np.uint32(0x00800000)) & (
                (mag < _F32_TINY_RN) | ((mag == _F32_TINY_RN) & ((lo > 0) != (hi > 0)) & (lo != 0)))
            r = np.where(tiny_r, r & np.uint32(0x80000000), flush_subnormal(r, fmt("f32")))
    return np.where(is_nan(r, fmt("f32")), np.uint32(NAN_RESULT["f32"]), r)


def _f64_rn(op: str, src: list[np.ndarray], nan_order: list[np.ndarray]) -> np.ndarray:
    """add/sub/mul.rn.f64: the host's float64 is IEEE's; NaNs as the H100 picks them."""
    a, b = (x.view(np.float64) for x in src)
    with np.errstate(all="ignore"):
        r = (a + b if op == "add" else a - b if op == "sub" else a * b).view(np.uint64)
    nan = is_nan(r, fmt("f64"))
    return np.where(nan, _nan_of("f64", nan_order), r) if nan.any() else r


def _post(x: np.ndarray, f: str, sat: bool, relu: bool) -> np.ndarray:
    """The clamps, applied to the rounded (and flushed) result."""
    ff = fmt(f)
    if sat:
        # [0.0, 1.0], NaN -> +0.0, -0.0 -> +0.0
        one = ff.dtype(_one(f))
        neg = _sign(x, f)
        x = np.where(is_nan(x, ff) | neg, ff.dtype(0), np.where(~neg & (x > one), one, x))
    if relu:
        x = np.where(is_nan(x, ff), ff.dtype(NAN_RESULT[f]), np.where(_sign(x, f), ff.dtype(0), x))
    return x


def arith(spec: Spec) -> Semantic:
    op = spec.opcode
    ternary = op in ("fma", "mad")
    t = spec.types[-1]
    f = PACKED.get(t, t)
    mode = spec.which(MODES) or "rn"          # add/sub/mul without one round to nearest even
    ftz, sat, relu, oob = (m in spec.flags for m in ("ftz", "sat", "relu", "oob"))
    ff = fmt(f)

    fast = mode == "rn" and f in ("f32", "f64") and not (f == "f64" and ternary) and _host_is_ieee()

    def element(*xs: np.ndarray) -> np.ndarray:
        ops = [np.asarray(x).astype(ff.dtype, copy=False) for x in xs]
        src = [flush_subnormal(x, ff) for x in ops] if ftz else ops
        one = np.full(src[0].shape, _one(f), ff.dtype)
        nan_order = [src[1], src[0]] if op != "fma" and op != "mad" else [src[1], src[2], src[0]]
        if fast:
            r = _f32_rn(op, src, ftz) if f == "f32" else _f64_rn(op, src, nan_order)
        elif op == "add":
            r = _fma_bits(src[0], one, src[1], f, mode, None, nan_order, ftz)
        elif op == "sub":
            r = _fma_bits(src[0], one, src[1] ^ ff.dtype(1 << (ff.storage_bits - 1)), f, mode, None, nan_order, ftz)
        elif op == "mul":
            zero = np.zeros_like(src[0])
            r = _fma_bits(src[0], src[1], zero, f, mode, _sign(src[0], f) ^ _sign(src[1], f), nan_order, ftz)
        else:
            r = _fma_bits(src[0], src[1], src[2], f, mode, None, nan_order, ftz)
        r = _post(r, f, sat, relu)
        if oob:
            mag = ff.dtype((1 << (ff.storage_bits - 1)) - 1)
            hit = ((ops[0] & mag) == ff.dtype(OOB_NAN[f])) | ((ops[1] & mag) == ff.dtype(OOB_NAN[f]))
            r = np.where(hit, ff.dtype(0), r)
        return r

    fn = _elementwise(t, element)
    n = 3 if ternary else 2
    return Semantic(lambda *xs: (fn(*xs),), (t,), (t,) * n)


# ---------------------------------------------------------------------------------- div, rcp, sqrt

def divlike(spec: Spec) -> Semantic:
    op = spec.opcode
    t = spec.types[-1]
    mode = spec.which(MODES)
    if mode is None:         # .approx / .full: the MUFU's (an IEEE stand-in reaches here as .rn)
        raise _refuse(spec, "the MUFU's approximation is not modelled bit for bit")
    ftz, ff = "ftz" in spec.flags, fmt(t)

    def run(*xs: np.ndarray) -> tuple[np.ndarray]:
        ops = [np.asarray(x).astype(ff.dtype, copy=False) for x in xs]
        src = [flush_subnormal(x, ff) for x in ops] if ftz else ops
        if op == "rcp":
            src = [np.full(src[0].shape, _one(t), ff.dtype), src[0]]
        if op == "sqrt":
            a = src[0]
            wa = widen(a, ff)
            neg = _sign(a, t) & ~is_zero(a, ff)
            nan = is_nan(a, ff) | neg
            ok = ~nan & ~is_inf(a, ff) & ~is_zero(a, ff)
            sign, M, E = exact_sqrt(np.where(ok, wa, 1.0))
            r = round_pack(sign, M, E, ff, mode, ftz=ftz)
            r = np.where(is_inf(a, ff) | is_zero(a, ff), a, r)      # sqrt(+inf) = +inf, sqrt(-0) = -0
            r = np.where(nan, _nan_of(t, [a]), r)
        else:
            a, b = src
            sa, sb = _sign(a, t), _sign(b, t)
            ia, ib, za, zb = is_inf(a, ff), is_inf(b, ff), is_zero(a, ff), is_zero(b, ff)
            nan = is_nan(a, ff) | is_nan(b, ff) | (ia & ib) | (za & zb)
            ok = ~nan & ~ia & ~ib & ~zb
            sign, M, E = exact_div(np.where(ok, widen(a, ff), 1.0), np.where(ok, widen(b, ff), 1.0))
            r = round_pack(sign, M, E, ff, mode, ftz=ftz)
            s = sa ^ sb
            r = np.where(ia | zb, infinity(ff, s), np.where(ib | za, _signed_zero(s, t), r))
            r = np.where(nan, _nan_of(t, src if op == "div" else [src[1]]), r)
        return (r.astype(ff.dtype),)

    return Semantic(run, (t,), (t,) * (2 if op == "div" else 1))


# ------------------------------------------------------------------------- min, max, neg, abs, ...

def minmax(spec: Spec) -> Semantic:
    op = spec.opcode
    t = spec.types[-1]
    f = PACKED.get(t, t)
    ftz, nan_mode, xorsign = (m in spec.flags for m in ("ftz", "NaN", "xorsign"))
    ff = fmt(f)
    signbit = ff.dtype(1 << (ff.storage_bits - 1))

    def element(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = (np.asarray(x).astype(ff.dtype, copy=False) for x in (a, b))
        if ftz:
            a, b = flush_subnormal(a, ff), flush_subnormal(b, ff)
        xs = _sign(a, f) ^ _sign(b, f)
        if xorsign:
            a, b = a & ~signbit, b & ~signbit
        na, nb = is_nan(a, ff), is_nan(b, ff)
        wa, wb = widen(a, ff), widen(b, ff)
        # -0.0 < +0.0 here: order by value, then by sign
        sa, sb = _sign(a, f), _sign(b, f)
        if op == "min":
            take_a = (wa < wb) | ((wa == wb) & (sa | ~sb))
        else:
            take_a = (wa > wb) | ((wa == wb) & (~sa | sb))
        r = np.where(take_a, a, b)
        r = np.where(na, b, np.where(nb, a, r))
        if xorsign:
            r = (r & ~signbit) | (xs.astype(ff.dtype) << ff.dtype(ff.storage_bits - 1))
        both = (na & nb) | (nan_mode & (na | nb))
        r = np.where(both, _minmax_nan(a, b, f), r)
        if ftz:
            r = flush_subnormal(r, ff)
        return r.astype(ff.dtype)

    fn = _elementwise(t, element)
    return Semantic(lambda a, b: (fn(a, b),), (t,), (t, t))


def _minmax_nan(a: np.ndarray, b: np.ndarray, f: str) -> np.ndarray:
    """min/max when the result is NaN: the canonical NaN, and for f64 b's NaN (else a's) quieted."""
    return _nan_of(f, [b, a])


def negabs(spec: Spec) -> Semantic:
    op = spec.opcode
    t = spec.types[-1]
    f = PACKED.get(t, t)
    ftz, ff = "ftz" in spec.flags, fmt(f)
    signbit = ff.dtype(1 << (ff.storage_bits - 1))

    def element(a: np.ndarray) -> np.ndarray:
        a = np.asarray(a).astype(ff.dtype, copy=False)
        if ftz:
            a = flush_subnormal(a, ff)
        r = a ^ signbit if op == "neg" else a & ~signbit
        # a NaN is not negated or made positive: the f64 one comes back quieted (DADD), the others canonical
        return np.where(is_nan(a, ff), _nan_of(f, [a]), r).astype(ff.dtype)

    fn = _elementwise(t, element)
    return Semantic(lambda a: (fn(a),), (t,), (t,))


def copysign(spec: Spec) -> Semantic:
    t = spec.types[-1]
    ff = fmt(t)
    signbit = ff.dtype(1 << (ff.storage_bits - 1))

    def run(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray]:
        a, b = (np.asarray(x).astype(ff.dtype, copy=False) for x in (a, b))
        return ((b & ~signbit) | (a & signbit),)     # the sign of a, everything else of b (NaNs too)
    return Semantic(run, (t,), (t, t))


def testp(spec: Spec) -> Semantic:
    test, t = str(spec.slot("op")), spec.types[-1]
    ff = fmt(t)

    def run(a: np.ndarray) -> tuple[np.ndarray]:
        a = np.asarray(a).astype(ff.dtype, copy=False)
        nan, inf, sub = is_nan(a, ff), is_inf(a, ff), is_subnormal(a, ff)
        return ({"finite": ~nan & ~inf, "infinite": inf, "number": ~nan, "notanumber": nan,
                 "normal": ~nan & ~inf & ~sub, "subnormal": sub}[test],)
    return Semantic(run, ("pred",), (t,))


# ------------------------------------------------------------------------------------ setp, set

def _compare(cmp: str, a: np.ndarray, b: np.ndarray, f: str, ftz: bool) -> np.ndarray:
    """a CmpOp b on bits of ``f`` (PTX ISA "Floating Point Comparisons")."""
    ff = fmt(f)
    a, b = (np.asarray(x).astype(ff.dtype, copy=False) for x in (a, b))
    if ftz:
        a, b = flush_subnormal(a, ff), flush_subnormal(b, ff)
    unordered = is_nan(a, ff) | is_nan(b, ff)
    if cmp == "num":
        return ~unordered
    if cmp == "nan":
        return unordered
    wa, wb = widen(a, ff), widen(b, ff)
    base = cmp[:2]
    with np.errstate(invalid="ignore"):
        t = {"eq": wa == wb, "ne": wa != wb, "lt": wa < wb, "le": wa <= wb, "gt": wa > wb, "ge": wa >= wb}[base]
    t = t & ~unordered
    return t | unordered if len(cmp) == 3 else t


def _bool(op: str | None, t: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    if op is None:
        return t
    assert c is not None
    c = np.asarray(c, bool)
    return {"and": t & c, "or": t | c, "xor": t ^ c}[op]


def _cmp_mods(spec: Spec) -> tuple[str, str | None, bool, tuple[str, ...]]:
    """(comparison, boolean operation or None, .ftz, types) as the row's grammar read them."""
    return str(spec.slot("CmpOp")), spec.slot("BoolOp"), "ftz" in spec.flags, spec.types


def _setp(spec: Spec) -> Semantic:
    cmp, bop, ftz, (t,) = _cmp_mods(spec)
    f = PACKED.get(t, t)
    # p|q: q is the complement's (scalar f32/f64) or the high half-word's (packed); scalar f16 and
    # bf16 write p alone (their rows take no q)
    ndst = spec.ndst

    def run(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> Arrays:
        if t in PACKED:
            ha = np.ascontiguousarray(a, np.uint32).view(np.uint16).reshape(-1, 2)
            hb = np.ascontiguousarray(b, np.uint32).view(np.uint16).reshape(-1, 2)
            p = _bool(bop, _compare(cmp, ha[:, 0], hb[:, 0], f, ftz), c)
            return (p,) if ndst == 1 else (p, _bool(bop, _compare(cmp, ha[:, 1], hb[:, 1], f, ftz), c))
        tt = _compare(cmp, a, b, f, ftz)
        p = _bool(bop, tt, c)
        return (p,) if ndst == 1 else (p, _bool(bop, ~tt, c))

    return Semantic(run, ("pred",) * ndst, (t, t) + (("pred",) if bop else ()))


#: what ``set`` writes for true, by destination type (false writes zero)
SET_TRUE = {"u32": 0xFFFFFFFF, "s32": 0xFFFFFFFF, "u16": 0xFFFF, "s16": 0xFFFF,
            "f32": 0x3F800000, "f16": 0x3C00, "bf16": 0x3F80}



def _set(spec: Spec) -> Semantic:
    cmp, bop, ftz, (dt, st) = _cmp_mods(spec)
    f = PACKED.get(st, st)

    def test(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> Arrays:
        if st in PACKED:
            ha = np.ascontiguousarray(a, np.uint32).view(np.uint16).reshape(-1, 2)
            hb = np.ascontiguousarray(b, np.uint32).view(np.uint16).reshape(-1, 2)
            return (_bool(bop, _compare(cmp, ha[:, 0], hb[:, 0], f, ftz), c),
                    _bool(bop, _compare(cmp, ha[:, 1], hb[:, 1], f, ftz), c))
        return (_bool(bop, _compare(cmp, a, b, f, ftz), c),)
    if st in PACKED:
        half_true = {"f16x2": 0x3C00, "bf16x2": 0x3F80}.get(dt, 0xFFFF)

        def run(*xs: np.ndarray) -> tuple[np.ndarray]:
            lo, hi = test(*xs)
            return ((lo.astype(np.uint32) * np.uint32(half_true))
                    | ((hi.astype(np.uint32) * np.uint32(half_true)) << np.uint32(16)),)
    else:
        dtype = np.uint16 if dt in ("u16", "s16", "f16", "bf16") else np.uint32

        def run(*xs: np.ndarray) -> tuple[np.ndarray]:
            (p,) = test(*xs)[:1]
            return (np.where(p, dtype(SET_TRUE[dt]), dtype(0)),)
    return Semantic(run, (dt,), (st, st) + (("pred",) if bop else ()))


def resolve_float_compare(spec: Spec) -> Semantic:
    """``setp``/``set`` whose source type is a float."""
    return _setp(spec) if spec.opcode == "setp" else _set(spec)
