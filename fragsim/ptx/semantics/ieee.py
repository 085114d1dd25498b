"""Exact IEEE 754 arithmetic on raw bits, and the one rounding of an exact value to a float format.

Every floating-point result of the PTX runner -- arithmetic (``floating.py``) and conversion
(``convert.py``, through ``convert_round.py``) -- is an exact value rounded once, here.  An exact
value is a triple ``(sign, M, E)``: ``(-1)**sign * M * 2**E`` with ``M`` a ``uint64``.  Where the
true value is not ``M * 2**E`` exactly, ``M`` has at least two bits below the last bit any format
keeps and its lowest bit is set ("jammed"): a value strictly between ``M - 1`` and ``M + 1`` rounds
as ``M`` does, in every mode, so that bit stands for everything below it.

``round_pack`` rounds such a triple to any ``FloatFormat`` (f16, bf16, tf32, f32, f64, e4m3, e5m2)
in a mode of ``MODES``: subnormal results kept, overflow to infinity or to the largest finite number
as the mode says (``satfinite``: always the largest finite number), and with ``ftz`` the tiny
results (``tiny``) flushed to the zero of their sign.  ``round_shift`` is the integer rounding under
it (``cvt``'s integer results and ``.rni``-style roundings use it too).  The exact operations take
finite float64 operands (every f16, bf16 and f32 value is one, exactly):

- ``exact_fma(a, b, c)``: ``a*b + c`` in integer arithmetic (the product of two 53-bit
  significands is 106 bits; it and the addend are aligned in a 128-bit window, and an addend or
  product that falls below the window is jammed: it can then only move the result by less than
  one unit 60 bits below its leading bit);
- ``exact_div(a, b)``: long division of the significands, 56 quotient bits and a sticky remainder;
- ``exact_sqrt(a)``: the host's correctly rounded square root, and the exact sign of
  ``a - root**2`` (a 106-bit square against the shifted radicand) to say on which side the true
  root lies;
- ``two_sum(a, b)`` and ``from_double(hi, lo)``: a sum of two doubles as the rounded double and
  its exact error (Knuth's TwoSum; exact whenever the sum does not overflow), and that pair as a
  triple -- how f16/bf16/f32 products and sums (exact in float64, or a TwoSum away from exact)
  reach ``round_pack`` without a second rounding.

Shifts of ``uint64`` arrays by 64 or more give 0: NumPy defines them so (numpy/numpy#13739, NumPy
1.18), and a negative count cast to ``uint64`` is such a shift.
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.formats import FORMATS, FloatFormat

__all__ = ["MODES", "fmt", "widen", "is_nan", "is_inf", "is_zero", "is_subnormal", "flush_subnormal",
           "decode64", "bit_length", "round_shift", "round_pack", "tiny", "max_finite", "infinity",
           "two_sum", "from_double", "exact_fma", "exact_div", "exact_sqrt"]

#: PTX rounding modifiers: to nearest even, toward zero, toward -inf, toward +inf.  (``cvt.rna.tf32``,
#: to nearest with ties away, is ptxas' integer sequence on the bits: ``convert._tf32``.)
MODES = ("rn", "rz", "rm", "rp")

_U64 = np.uint64
_ONE = _U64(1)
_M32 = _U64(0xFFFFFFFF)
#: f64 fields
_F64_MAN = 52
_F64_BIAS = 1023
#: exponent given to a zero operand so that aligning it shifts it out of every window
_ZERO_EXP = -(1 << 20)


def fmt(name: str) -> FloatFormat:
    """The format named ``name`` (f16, bf16, f32, f64)."""
    return FORMATS[name]


def _u(x, f: FloatFormat) -> np.ndarray:
    return np.asarray(x).astype(f.dtype, copy=False)


def _magnitude(x: np.ndarray, f: FloatFormat) -> np.ndarray:
    return x & f.dtype((1 << (f.storage_bits - 1)) - 1)


def _inf_bits(f: FloatFormat) -> int:
    return ((1 << f.exp_bits) - 1) << f.man_bits


def is_nan(x: np.ndarray, f: FloatFormat) -> np.ndarray:
    return _magnitude(x, f) > f.dtype(_inf_bits(f))


def is_inf(x: np.ndarray, f: FloatFormat) -> np.ndarray:
    return _magnitude(x, f) == f.dtype(_inf_bits(f))


def is_zero(x: np.ndarray, f: FloatFormat) -> np.ndarray:
    return _magnitude(x, f) == 0


def is_subnormal(x: np.ndarray, f: FloatFormat) -> np.ndarray:
    m = _magnitude(x, f)
    return (m != 0) & (m < f.dtype(1 << f.man_bits))


def flush_subnormal(x: np.ndarray, f: FloatFormat) -> np.ndarray:
    """Subnormals to the zero of their sign (.ftz), everything else unchanged."""
    return np.where(is_subnormal(x, f), x & f.dtype(1 << (f.storage_bits - 1)), x)


def widen(x: np.ndarray, f: FloatFormat) -> np.ndarray:
    """The float64 value of each element of ``x`` (bits of ``f``); exact for every finite value
    and every infinity (NaNs stay NaN, payloads aside)."""
    x = _u(x, f)
    with np.errstate(invalid="ignore"):            # signalling NaNs convert (to some NaN) quietly
        if f.name == "f64":
            return x.view(np.float64)
        if f.name == "f32":
            return x.view(np.float32).astype(np.float64)
        if f.name == "f16":
            return x.view(np.float16).astype(np.float64)
        if f.name == "bf16":
            return (x.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    raise ValueError(f"no exact float64 widening for {f.name}")


def bit_length(x: np.ndarray) -> np.ndarray:
    """Bit length (int64) of each uint64 (0 -> 0).  The float64 nearest ``x`` has the right binade
    or, rounded up to a power of two, the next one; one shift tells which."""
    x = np.asarray(x, _U64)
    e = np.frexp(x.astype(np.float64))[1].astype(np.int64)
    return np.maximum(e - ((x >> (e - 1).astype(_U64)) == 0), 0)


def _shl(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """x << s for s >= 0 (0 from s >= 64 on)."""
    return x << np.asarray(s).astype(_U64)


def _shr(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """x >> s for s >= 0 (0 from s >= 64 on)."""
    return x >> np.asarray(s).astype(_U64)


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"rounding mode must be one of {', '.join(MODES)}, got {mode!r}")


def decode64(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sign bool, significand uint64, exponent int64) of finite float64 values: |d| = m * 2**e."""
    bits = np.asarray(d, np.float64).view(_U64)
    sign = (bits >> _U64(63)) != 0
    ef = ((bits >> _U64(_F64_MAN)) & _U64(0x7FF)).astype(np.int64)
    frac = bits & _U64((1 << _F64_MAN) - 1)
    m = np.where(ef > 0, frac | _U64(1 << _F64_MAN), frac)
    e = np.where(ef > 0, ef, 1) - (_F64_BIAS + _F64_MAN)
    return sign, m, e


def _normalize53(m: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nonzero significands shifted so their leading bit is bit 52 (subnormals become normal)."""
    sh = np.maximum(53 - bit_length(m), 0)
    return _shl(m, sh), e - sh


# ---------------------------------------------------------------------------------- the rounding

def round_shift(x: np.ndarray, s: np.ndarray, sign: np.ndarray, mode: str) -> np.ndarray:
    """``x * 2**-s`` rounded to an integer in ``mode`` (uint64), for ``s >= 0`` of any size; ``sign``:
    the value's sign (``rm`` and ``rp`` round its magnitude by it)."""
    _check_mode(mode)
    x = np.asarray(x, _U64)
    su = np.asarray(s).astype(_U64)
    kept = x >> su
    if mode == "rz":
        return kept
    rem = x - (kept << su)                    # the bits shifted out
    if mode == "rn":
        r = su - _ONE                         # the round bit's position (s == 0 wraps: no round bit)
        rbit = ((x >> r) & _ONE) != 0
        up = rbit & ((rem != (_ONE << r)) | ((kept & _ONE) != 0))    # above half, or a tie to even
    else:
        up = (rem != 0) & (np.asarray(sign, bool) if mode == "rm" else ~np.asarray(sign, bool))
    return kept + up


def max_finite(f: FloatFormat, sign: np.ndarray) -> np.ndarray:
    """The largest finite word of ``f`` with ``sign``."""
    word = ((f.emax + f.bias) << f.exp_shift) | (f.max_finite_man << f.ignored_low_bits)
    return ((np.asarray(sign).astype(f.dtype) << f.dtype(f.sign_shift)) | f.dtype(word)).astype(f.dtype)


def infinity(f: FloatFormat, sign: np.ndarray) -> np.ndarray:
    """Infinity of ``sign`` (a format without one, e4m3: its NaN with that sign)."""
    word = (((1 << f.exp_bits) - 1) << f.exp_shift) if f.ieee_specials else f.canonical_nan
    return ((np.asarray(sign).astype(f.dtype) << f.dtype(f.sign_shift)) | f.dtype(word)).astype(f.dtype)


def _tiny(sign: np.ndarray, M: np.ndarray, L: np.ndarray, top: np.ndarray, f: FloatFormat,
          mode: str) -> np.ndarray:
    p = f.man_bits + 1
    carry = (round_shift(M, np.maximum(L - p, 0), sign, mode) >> _U64(p)) != 0   # up to the next power of 2
    return (M != 0) & ((top < f.emin - 1) | ((top == f.emin - 1) & ~carry))


def tiny(sign: np.ndarray, M: np.ndarray, E: np.ndarray, f: FloatFormat, mode: str) -> np.ndarray:
    """Which exact values ``(sign, M, E)`` are tiny for ``f``: below its smallest normal number after
    rounding in ``mode`` to its precision with an unbounded exponent (IEEE 754's tininess after
    rounding)."""
    M = np.asarray(M, _U64)
    L = bit_length(M)
    return _tiny(np.asarray(sign, bool), M, L, np.asarray(E, np.int64) + L - 1, f, mode)


def round_pack(sign: np.ndarray, M: np.ndarray, E: np.ndarray, f: FloatFormat, mode: str, *,
               satfinite: bool = False, ftz: bool = False) -> np.ndarray:
    """The exact values ``(-1)**sign * M * 2**E`` (jammed as the module says) rounded to ``f`` in
    ``mode`` and encoded (words of ``f.dtype``); ``M == 0`` gives the zero of ``sign``.  Overflow
    follows IEEE 754 for the mode (rn: infinity; rz: the largest finite number; rm/rp: infinity on
    the side they round to, the largest finite number on the other); a format without infinities
    (e4m3) gives its NaN for infinity.  ``satfinite``: every overflow gives the largest finite
    number.  ``ftz``: tiny results (``tiny``) give the zero of their sign."""
    _check_mode(mode)
    sign = np.asarray(sign, bool)
    M = np.asarray(M, _U64)
    E = np.asarray(E, np.int64)
    p = f.man_bits + 1
    L = bit_length(M)
    top = E + L - 1                                       # exponent of the leading bit
    e_res = np.minimum(np.maximum(top, f.emin), f.emax)   # beyond emax: overflow (below), whatever kept is
    s = (e_res - (p - 1)) - E                             # bits of M below the result's last bit
    kept = np.where(s < 0, _shl(M, -s), round_shift(M, s, sign, mode))
    # the exponent field below the significand (its leading bit, if any, adds the 1 of a normal
    # number's biased exponent, and rounding up into the next binade carries into it)
    mag = ((e_res - f.emin).astype(_U64) << _U64(p - 1)) + kept
    over = (top > f.emax) | (mag > _U64(((f.emax + f.bias) << f.man_bits) | f.max_finite_man))
    word = (mag << _U64(f.ignored_low_bits)).astype(f.dtype)
    if satfinite or mode == "rz":
        big = max_finite(f, sign)
    elif mode == "rn":
        big = infinity(f, sign)
    else:
        big = np.where(sign if mode == "rm" else ~sign, infinity(f, sign), max_finite(f, sign))
    signed = np.where(M == 0, f.dtype(0), word) | (sign.astype(f.dtype) << f.dtype(f.sign_shift))
    word = np.where(over & (M != 0), big, signed)
    if ftz:
        word = np.where(_tiny(sign, M, L, top, f, mode), sign.astype(f.dtype) << f.dtype(f.sign_shift), word)
    return word.astype(f.dtype)


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, err): s = fl(a + b) and a + b = s + err exactly (no overflow)."""
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    return s, err


def from_double(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The triple of ``hi + lo``, where ``hi`` is the double nearest that exact value (finite) and
    only the sign of ``lo`` matters: 3 guard bits below hi's significand, the lowest moved one unit
    toward lo (a neighbouring double lies further away than anything that unit stands for)."""
    sign, m, e = decode64(hi)
    M = m << _U64(3)
    lo_mag = np.where(sign, -lo, lo)             # lo in the direction of |hi|
    M = np.where(lo_mag > 0, M + _U64(1), np.where(lo_mag < 0, M - _U64(1), M))
    return sign, M, e - 3


def _mul128(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo) 64-bit halves of the 128-bit products of uint64 arrays."""
    a0, a1 = a & _M32, a >> _U64(32)
    b0, b1 = b & _M32, b >> _U64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> _U64(32)) + (p01 & _M32) + (p10 & _M32)
    lo = (p00 & _M32) | (mid << _U64(32))
    hi = p11 + (p01 >> _U64(32)) + (p10 >> _U64(32)) + (mid >> _U64(32))
    return hi, lo


def _bitlen128(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    return np.where(hi != 0, 64 + bit_length(hi), bit_length(lo))


def _shl128(hi: np.ndarray, lo: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo) << s for 0 <= s < 128 (bits shifted out of the top are lost)."""
    big = s >= 64
    nhi = np.where(big, _shl(lo, s - 64), _shl(hi, s) | np.where(s == 0, _U64(0), _shr(lo, 64 - s)))
    nlo = np.where(big, _U64(0), _shl(lo, s))
    return nhi, nlo


def _shr128_jam(hi: np.ndarray, lo: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo) >> s for s >= 0, the bits shifted out OR'ed into bit 0."""
    s = np.minimum(s, 128)
    big = s >= 64
    nlo = np.where(big, _shr(hi, s - 64),
                   _shr(lo, s) | np.where(s == 0, _U64(0), _shl(hi, 64 - s)))
    nhi = np.where(big, _U64(0), _shr(hi, s))
    back_hi, back_lo = _shl128(nhi, nlo, np.minimum(s, 127))
    lost = np.where(s >= 128, (hi | lo) != 0, (back_hi != hi) | (back_lo != lo))
    return nhi, nlo | lost.astype(_U64)


def _to64(hi: np.ndarray, lo: np.ndarray, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 128-bit significand (exponent E) as 64 bits, jammed: (M, E')."""
    sh = np.maximum(_bitlen128(hi, lo) - 64, 0)
    _, M = _shr128_jam(hi, lo, sh)
    return M, E + sh


def exact_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """(sign, M, E, zero) of a*b + c for finite float64 arrays; ``zero``: the exact result is 0
    (its sign is the caller's: it depends on the mode and on which operands were zeros)."""
    sa, ma, ea = decode64(a)
    sb, mb, eb = decode64(b)
    sc, mc, ec = decode64(c)
    sp = sa ^ sb
    ph, pl = _mul128(ma, mb)
    # Both terms with their leading bit at bit 125 of a 128-bit window (2 bits of headroom).
    lp = _bitlen128(ph, pl)
    shp = np.where(lp > 0, 126 - lp, 0)
    ph, pl = _shl128(ph, pl, shp)
    pe = np.where(lp > 0, ea + eb - shp, _ZERO_EXP)
    lc = bit_length(mc)
    shc = np.where(lc > 0, 126 - lc, 0)
    ch, cl = _shl128(np.zeros_like(mc), mc, shc)
    ce = np.where(lc > 0, ec - shc, _ZERO_EXP)
    p_big = pe >= ce
    xh, xl, xs = np.where(p_big, ph, ch), np.where(p_big, pl, cl), np.where(p_big, sp, sc)
    yh, yl, ys = np.where(p_big, ch, ph), np.where(p_big, cl, pl), np.where(p_big, sc, sp)
    E = np.maximum(pe, ce)
    # The smaller term loses bits only when it is 21+ bits lower: the result then keeps its leading
    # bit at 124 or 125, far above the jammed bit.
    yh, yl = _shr128_jam(yh, yl, np.abs(pe - ce))
    add = xs == ys
    sl = xl + yl
    sum_h = xh + yh + (sl < xl).astype(_U64)
    dl = xl - yl
    dif_h = xh - yh - (xl < yl).astype(_U64)
    neg = ~add & ((xh < yh) | ((xh == yh) & (xl < yl)))
    rl = np.where(add, sl, np.where(neg, yl - xl, dl))
    rh = np.where(add, sum_h, np.where(neg, yh - xh - (yl < xl).astype(_U64), dif_h))
    sign = xs ^ neg
    zero = (rh == 0) & (rl == 0)
    M, E = _to64(rh, rl, E)
    return sign, M, E, zero


def exact_div(a: np.ndarray, b: np.ndarray):
    """(sign, M, E) of a / b for finite nonzero float64 arrays (a may be zero: M is then 0)."""
    sa, ma, ea = decode64(a)
    sb, mb, eb = decode64(b)
    a_zero = ma == 0
    ma, ea = _normalize53(np.where(a_zero, _U64(1 << _F64_MAN), ma), ea)
    mb, eb = _normalize53(np.where(mb == 0, _U64(1 << _F64_MAN), mb), eb)
    q = (ma >= mb).astype(_U64)
    r = ma - q * mb
    step = 11                     # r < mb < 2**53: r << 11 fits, and each quotient digit is < 2**11
    for _ in range(5):
        r = r << _U64(step)
        d = r // mb
        r = r - d * mb
        q = (q << _U64(step)) | d
    M = q | (r != 0).astype(_U64)   # q has 55 or 56 bits: the jammed bit is 2+ bits below any format's
    return sa ^ sb, np.where(a_zero, _U64(0), M), ea - eb - 5 * step


def exact_sqrt(a: np.ndarray):
    """(sign, M, E) of sqrt(a) for finite a >= 0 (float64): the host's correctly rounded root r,
    its 53-bit significand with 3 guard bits, and the sign of a - r*r moving the lowest one unit."""
    r = np.sqrt(a)
    _, ma, ea = decode64(a)
    _, mr, er = decode64(r)
    zero = ma == 0
    ma, ea = _normalize53(np.where(zero, _U64(1 << _F64_MAN), ma), ea)
    mr, er = _normalize53(np.where(zero, _U64(1 << _F64_MAN), mr), er)
    sh, sl = _mul128(mr, mr)
    d = ea - 2 * er                # a = (ma << d) * 2**(2 er): d is 52 or 53 for normalised roots
    ah, al = _shl128(np.zeros_like(ma), ma, np.clip(d, 0, 127))
    above = (ah > sh) | ((ah == sh) & (al > sl))
    below = (ah < sh) | ((ah == sh) & (al < sl))
    M = mr << _U64(3)
    M = np.where(above, M + _U64(1), np.where(below, M - _U64(1), M))
    return np.zeros(a.shape, bool), np.where(zero, _U64(0), M), er - 3
