"""The MUFU's functions on f32 words, one numba loop each: table lookup, quadratic interpolation,
and the unit's own handling of exponents and special values.

Every function reduces its input to a 23- or 24-bit fraction ``fx`` whose high bits pick a segment
``i`` and whose low bits are the offset ``x`` in it, then computes one polynomial

    P = a[i] + b[i] * x + c[i] * square(x)                     (int64, exact)

with the segment's coefficients (``fragsim.sfu.tables``: ``a`` holds the rounding constant,
``c`` the scale of the squarer's output) and makes the result from ``P`` by a shift (rcp, rsqrt,
ex2, sqrt), a fixed-point sum with the input's exponent (lg2) or a normalization (sin, cos) --
truncating, never rounding to nearest.  ``square`` is the unit's truncated squarer: the partial
products of ``x * x`` whose weight falls below bit 18 are dropped before the sum (its whole
17-bit domain is precomputed, ``squares()``).  Subnormal inputs count as zero and subnormal
results flush to zero: ptxas wraps the non-``.ftz`` forms in scaling code (``fragsim.sfu.forms``).

The tables are arguments, not globals, so numba's cached machine code depends on this file alone.
"""

from __future__ import annotations

import numpy as np
from numba import njit

NAN = 0x7FFFFFFF            # the canonical NaN every MUFU function returns
INF = 0x7F800000
SIGN = 0x80000000
IONE = 1 << 23              # the implicit one of a significand
FRACTION = IONE - 1
SQUARER_BITS = 17           # the squarer's input width
SQUARER_DROP = 18           # partial products of weight below 2^18 are not summed


def squares() -> np.ndarray:
    """square(x) for every 17-bit x: sum over the set bits i of x of (x >> (18 - i)), halved."""
    x = np.arange(1 << SQUARER_BITS, dtype=np.int64)
    out = np.zeros_like(x)
    for i in range(SQUARER_BITS):
        out += np.where((x >> i) & 1, x >> (SQUARER_DROP - i), 0)
    return out >> 1


@njit(cache=True, inline="always")
def _pack(s, e, f):
    """sign, biased exponent, 24-bit significand (2^24 carries into the exponent); flushes results
    below the normal range to signed zero and saturates above it to infinity."""
    if f >= (IONE << 1):
        f >>= 1
        e += 1
    if e <= 0 or f < IONE:
        return np.uint32(s << 31)
    if e >= 255:
        return np.uint32((s << 31) | INF)
    return np.uint32((s << 31) | (e << 23) | (f & FRACTION))


@njit(cache=True, inline="always")
def _poly(tab, sq, i, x, q_in):
    return tab[i, 0] + tab[i, 1] * x + tab[i, 2] * sq[q_in]


@njit(cache=True, inline="always")
def _normalized(res):
    """(msb position, 24-bit significand truncated) of a positive fixed-point value below 2^52."""
    p = 0                                        # binary search for the top set bit
    for step in (32, 16, 8, 4, 2, 1):
        if res >> (p + step):
            p += step
    f = res >> (p - 23) if p >= 23 else res << (23 - p)
    return p, f


@njit(cache=True)
def rcp(w, tab, sq):
    s, e, m = w >> 31, (w >> 23) & 0xFF, w & FRACTION
    if e == 255:
        return np.uint32(NAN) if m else np.uint32(s << 31)
    if e == 0:
        return np.uint32((s << 31) | INF)
    x = m & 0xFFFF
    return _pack(s, 253 - e, _poly(tab, sq, m >> 16, x, x << 1) >> 15)


@njit(cache=True)
def rsqrt(w, tab, sq):
    s, e, m = w >> 31, (w >> 23) & 0xFF, w & FRACTION
    if e == 255 and m:
        return np.uint32(NAN)
    if e == 0:
        return np.uint32((s << 31) | INF)
    if s:
        return np.uint32(NAN)
    if e == 255:
        return np.uint32(0)
    ue = e - 127
    fx = m | ((ue & 1) << 23)
    eo = 126 - (ue >> 1)
    if fx == 0:
        return _pack(0, eo + 1, IONE)
    x = fx & 0x1FFFF
    return _pack(0, eo, _poly(tab, sq, fx >> 17, x, x) >> 16)


SQRT_SHIFT = 17            # sqrt's P has 17 bits below the significand (on [2, 4) the terms count twice)


@njit(cache=True)
def sqrt(w, tab, sq):
    s, e, m = w >> 31, (w >> 23) & 0xFF, w & FRACTION
    if e == 255 and m:
        return np.uint32(NAN)
    if e == 0:
        return np.uint32(s << 31)
    if s:
        return np.uint32(NAN)
    if e == 255:
        return np.uint32(INF)
    ue = e - 127
    h = ue & 1                                    # [2, 4): the offset x steps by 2^-22, not 2^-23
    fx = m | (h << 23)
    x = fx & 0x1FFFF
    i = fx >> 17
    p = tab[i, 0] + ((tab[i, 1] * x + tab[i, 2] * sq[x]) << h)
    return _pack(0, 127 + (ue >> 1), p >> SQRT_SHIFT)


@njit(cache=True)
def ex2(w, tab, sq):
    s, e, m = w >> 31, (w >> 23) & 0xFF, w & FRACTION
    if e == 255:
        if m:
            return np.uint32(NAN)
        return np.uint32(0) if s else np.uint32(INF)
    ue = e - 127
    if ue >= 7:                                   # |x| >= 128: past both ends of the range
        return np.uint32(0) if s else np.uint32(INF)
    fixed = 0
    if e != 0:                                    # x as a 7.23 fixed-point magnitude, truncated
        sig = m | IONE
        fixed = sig << ue if ue >= 0 else (sig >> -ue if -ue < 32 else 0)
    ip, fx = fixed >> 23, fixed & FRACTION
    if s:                                         # 2^-(i+f) = 2^-(i+1) * 2^(1-f), 1-f as ~f
        ip = -ip - 1
        if fx:
            fx = ~fx & FRACTION
        else:
            ip += 1
    x = fx & 0x1FFFF
    return _pack(0, ip + 127, _poly(tab, sq, fx >> 17, x, x) >> 15)


LG2_FRACTION_BITS = 36      # lg2's fixed-point result: integer part from the exponent, 36 fraction bits


@njit(cache=True)
def lg2(w, tab, sq):
    s, e, m = w >> 31, (w >> 23) & 0xFF, w & FRACTION
    if e == 255 and m:
        return np.uint32(NAN)
    if e == 0:
        return np.uint32(SIGN | INF)
    if s:
        return np.uint32(NAN)
    if e == 255:
        return np.uint32(INF)
    res = 0
    if not (m == 0 and e == 127):
        x = m & 0x1FFFF
        res = _poly(tab, sq, m >> 17, x, x) >> 2
    res += (e - 127) << LG2_FRACTION_BITS
    neg = 0
    if res < 0:
        neg = 1
        res = ~res
    if res == 0:
        return np.uint32(0)
    p, f = _normalized(res)
    return np.uint32((neg << 31) | ((127 + p - LG2_FRACTION_BITS) << 23) | (f & FRACTION))


SIN_FRACTION_BITS = 37      # sin/cos's fixed-point result


@njit(cache=True)
def sincos(w, tab, sq, cos):
    """sin or cos of ``w`` revolutions (MUFU.SIN/COS take turns; ptxas multiplies by 1/(2 pi) first)."""
    s, e, m = w >> 31, (w >> 23) & 0xFF, w & FRACTION
    if e == 255:
        return np.uint32(NAN)
    fixed = 0
    if e != 0:                                    # quarter turns as 2.23 fixed point, mod 4, truncated
        sig = m | IONE
        sh = e - 127 + 2
        if sh >= 0:
            fixed = (sig << sh) & 0x1FFFFFF if sh < 40 else 0
        else:
            fixed = sig >> -sh if -sh < 40 else 0
    quadrant, fx = fixed >> 23, fixed & FRACTION
    if cos:
        quadrant += 1
        s = 0
    if quadrant & 1:
        fx = ~fx & FRACTION
    s ^= (quadrant >> 1) & 1
    x = fx & 0x1FFFF
    res = _poly(tab, sq, fx >> 17, x, x)
    if res <= 0:
        return np.uint32(s << 31)
    p, f = _normalized(res)
    eo = 127 + p - SIN_FRACTION_BITS
    if eo <= 0:
        return np.uint32(s << 31)
    return np.uint32((s << 31) | (eo << 23) | (f & FRACTION))


TANH_FRACTION_BITS = 39     # tanh's P: the result with 39 fraction bits
TANH_FIRST_BINADE = -8      # below 2^-8 the result is x itself; from 8 up, +-1
TANH_SEGMENT_BITS = (0, 0, 0, 1, 1, 2, 2, 2, 3, 4, 3)   # fragsim.sfu.tables.TANH_SEGMENT_BITS (held equal by a test)


@njit(cache=True)
def tanh(w, tab, sq):
    s, m = w & SIGN, w & 0x7FFFFFFF
    if m > INF:
        return np.uint32(NAN)
    e = (m >> 23) - 127
    if e < TANH_FIRST_BINADE:
        return np.uint32(w)
    if e >= 3:
        return np.uint32(s | (127 << 23))
    first = 0                                     # the binade's first row
    for j in range(e - TANH_FIRST_BINADE):
        first += 1 << TANH_SEGMENT_BITS[j]
    k = TANH_SEGMENT_BITS[e - TANH_FIRST_BINADE]
    fr = m & FRACTION
    i = first + (fr >> (23 - k))
    x = (fr >> (6 - k)) & 0x1FFFF
    p, f = _normalized(_poly(tab, sq, i, x, x))
    return np.uint32(s | ((127 + p - TANH_FRACTION_BITS) << 23) | (f & FRACTION))


UNITS = ("rcp", "rsqrt", "sqrt", "ex2", "lg2", "sin", "cos", "tanh")


@njit(cache=True, inline="always")
def _unit(u, w, tabs, sq):
    if u == 0:
        return rcp(w, tabs[0], sq)
    if u == 1:
        return rsqrt(w, tabs[1], sq)
    if u == 2:
        return sqrt(w, tabs[2], sq)
    if u == 3:
        return ex2(w, tabs[3], sq)
    if u == 4:
        return lg2(w, tabs[4], sq)
    if u == 7:
        return tanh(w, tabs[7], sq)
    return sincos(w, tabs[5], sq, u == 6)


@njit(cache=True)
def run(unit, words, tabs, sq):
    """MUFU ``unit`` (an index of ``UNITS``) over uint32 ``words`` (flat); ``tabs[u]`` is unit u's table."""
    out = np.empty(words.shape[0], np.uint32)
    for k in range(words.shape[0]):
        out[k] = _unit(unit, np.int64(words[k]), tabs, sq)
    return out


# -- the code ptxas puts around the unit ------------------------------------------------------------
# FMUL/FADD in f32 with the GPU's NaN (one canonical NaN); numba's float32 arithmetic is IEEE's
# round to nearest even with subnormals, FMUL.RZ truncates the exact product (48 bits fit a double).
# tests/test_sfu_forms.py holds these equal to the instruction table's mul/add rows.

@njit(cache=True, inline="always")
def _fl(w, sc):
    sc[0] = np.uint32(w)
    return sc.view(np.float32)[0]


@njit(cache=True, inline="always")
def _bits(f, sc):
    sc.view(np.float32)[0] = f
    w = np.int64(sc[0])
    if (w & 0x7FFFFFFF) > INF:
        return np.int64(NAN)
    return w


@njit(cache=True, inline="always")
def _fmul(a, b, sc):
    return _bits(_fl(a, sc) * _fl(b, sc), sc)


@njit(cache=True, inline="always")
def _fadd(a, b, sc):
    return _bits(_fl(a, sc) + _fl(b, sc), sc)


@njit(cache=True, inline="always")
def _fmul_ftz(a, b, sc):
    if (a & INF) == 0:
        a &= SIGN
    if (b & INF) == 0:
        b &= SIGN
    r = _fmul(a, b, sc)
    if (r & INF) == 0:
        r &= SIGN
    return r


@njit(cache=True, inline="always")
def _fmul_rz(a, b, sc):
    p = np.float64(_fl(a, sc)) * np.float64(_fl(b, sc))
    if p != p:
        return np.int64(NAN)
    r = _bits(np.float32(p), sc)
    if abs(np.float64(_fl(r, sc))) > abs(p):      # rounded away from zero: one step back
        r -= 1
    return r


@njit(cache=True, inline="always")
def _small(w):
    """FSETP.GEU |w|, 2^-126 false: zero or subnormal."""
    return (w & 0x7FFFFFFF) < IONE


@njit(cache=True, inline="always")
def _huge(w):
    """FSETP.GT |w|, 2^126 (ordered)."""
    m = w & 0x7FFFFFFF
    return 0x7E800000 < m <= INF


TWO_24, TWO_12, TWO_M12, QUARTER, HALF, ONE, MINUS_24 = (0x4B800000, 0x45800000, 0x39800000, 0x3E800000,
                                                         0x3F000000, 0x3F800000, 0xC1C00000)
INV_2PI = 0x3E22F983            # 1/(2 pi) in f32, as ptxas writes it
MINUS_126 = 0xC2FC0000

# -- MUFU.RCP64H / RSQ64H: the f32 unit on the high word of a double --------------------------------
# The 20 fraction bits of the high word, three zero bits below them, through the f32 table; the
# significand truncated back to 20 bits, the exponent rebiased; the low word of the result is 0.

F64_NAN_HIGH = 0x7FFFFFFF
F64_INF_HIGH = 0x7FF00000


@njit(cache=True, inline="always")
def _high(s, e, f24, carry):
    """A double's high word from sign, biased exponent (carry: the f32 result reached the next
    binade) and a 24-bit significand; results below the normal range flush to signed zero."""
    e += carry
    if e <= 0:
        return s << 31
    return (s << 31) | (e << 20) | ((f24 >> 3) & 0xFFFFF)


@njit(cache=True)
def rcp64h(hi, tab, sq):
    s, e, m = hi >> 31, (hi >> 20) & 0x7FF, hi & 0xFFFFF
    if e == 0x7FF:
        return F64_NAN_HIGH if m else s << 31
    if e == 0:
        return (s << 31) | F64_INF_HIGH
    r = rcp((127 << 23) | (m << 3), tab, sq)
    return _high(s, 2045 - e, np.int64(r) & FRACTION | IONE, ((np.int64(r) >> 23) & 0xFF) - 126)


@njit(cache=True)
def rsq64h(hi, tab, sq):
    s, e, m = hi >> 31, (hi >> 20) & 0x7FF, hi & 0xFFFFF
    if e == 0x7FF and m:
        return F64_NAN_HIGH
    if e == 0:
        return (s << 31) | F64_INF_HIGH
    if s:
        return F64_NAN_HIGH
    if e == 0x7FF:
        return 0
    ue = e - 1023
    r = rsqrt(((127 + (ue & 1)) << 23) | (m << 3), tab, sq)
    return _high(0, 1022 - (ue >> 1), np.int64(r) & FRACTION | IONE, ((np.int64(r) >> 23) & 0xFF) - 126)


@njit(cache=True)
def run64(unit, words, tabs, sq):
    """MUFU.RCP64H (unit 0) or RSQ64H (1) of uint64 doubles: their results, the low word zero."""
    out = np.empty(words.shape[0], np.uint64)
    for k in range(words.shape[0]):
        hi = np.int64(words[k] >> np.uint64(32))
        r = rcp64h(hi, tabs[0], sq) if unit == 0 else rsq64h(hi, tabs[1], sq)
        out[k] = np.uint64(r) << np.uint64(32)
    return out


#: the PTX forms, in ``form``'s order; their SASS is fragsim.ptx.semantics.approx's
FORMS = ("rcp.approx.f32", "rcp.approx.ftz.f32", "rsqrt.approx.f32", "rsqrt.approx.ftz.f32",
         "lg2.approx.f32", "lg2.approx.ftz.f32", "ex2.approx.f32", "ex2.approx.ftz.f32",
         "sin.approx.f32", "sin.approx.ftz.f32", "cos.approx.f32", "cos.approx.ftz.f32",
         "div.approx.f32", "div.approx.ftz.f32", "div.full.f32", "div.full.ftz.f32",
         "sqrt.approx.f32", "sqrt.approx.ftz.f32", "tanh.approx.f32")
#: per form, the UNITS index of the MUFU op it is alone (-1: ptxas puts code around it)
FORM_UNIT = (-1, 0, -1, 1, -1, 4, -1, 3, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 7)


@njit(cache=True, inline="always")
def _form(code, a, b, tabs, sq, sc):
    if FORM_UNIT[code] >= 0:                       # a form that is the MUFU op alone
        return _unit(FORM_UNIT[code], a, tabs, sq)
    if code == 0:                                  # rcp.approx.f32
        s = QUARTER if _huge(a) else (TWO_24 if _small(a) else ONE)
        return _fmul(s, rcp(_fmul(a, s, sc), tabs[0], sq), sc)
    if code == 2:                                  # rsqrt.approx.f32
        if _small(a):
            return _fmul(rsqrt(_fmul(a, TWO_24, sc), tabs[1], sq), TWO_12, sc)
        return rsqrt(a, tabs[1], sq)
    if code == 4:                                  # lg2.approx.f32
        if _small(a):
            return _fadd(lg2(_fmul(a, TWO_24, sc), tabs[4], sq), MINUS_24, sc)
        return lg2(a, tabs[4], sq)
    if code == 6:                                  # ex2.approx.f32: below -126, 2^(x/2) squared
        if _fl(a, sc) < np.float32(-126.0):
            r = ex2(_fmul(a, HALF, sc), tabs[3], sq)
            return _fmul(r, r, sc)
        return ex2(a, tabs[3], sq)
    if code <= 11:                                 # sin, cos: MUFU takes turns
        return sincos(_fmul_rz(a, INV_2PI, sc), tabs[5], sq, code >= 10)
    if code == 12:                                 # div.approx.f32
        if _small(b):
            return _fmul(rcp(_fmul(b, TWO_24, sc), tabs[0], sq), _fmul(a, TWO_24, sc), sc)
        return _fmul(rcp(b, tabs[0], sq), a, sc)
    if code == 13:
        return _fmul_ftz(a, rcp(b, tabs[0], sq), sc)
    if code == 16:                                 # sqrt.approx.f32: a subnormal x times 2^24, the root 2^-12
        if _small(a):
            return _fmul(sqrt(_fmul(a, TWO_24, sc), tabs[2], sq), TWO_M12, sc)
        return sqrt(a, tabs[2], sq)
    if code == 14:                                 # div.full.f32
        small = _small(b)
        if _huge(b):
            a = _fmul(a, QUARTER, sc)
            b = _fmul(b, QUARTER, sc)
        if small:
            a = _fmul(a, TWO_24, sc)
            b = _fmul(b, TWO_24, sc)
        return _fmul(rcp(b, tabs[0], sq), a, sc)
    if _huge(b):                                   # div.full.ftz.f32
        a = _fmul_ftz(a, QUARTER, sc)
        b = _fmul_ftz(b, QUARTER, sc)
    return _fmul_ftz(rcp(b, tabs[0], sq), a, sc)


@njit(cache=True)
def form(code, a, b, tabs, sq):
    """PTX form ``FORMS[code]`` over uint32 ``a`` (and ``b`` for div; same length, flat)."""
    out = np.empty(a.shape[0], np.uint32)
    sc = np.zeros(1, np.uint32)
    for k in range(a.shape[0]):
        out[k] = _form(code, np.int64(a[k]), np.int64(b[k]), tabs, sq, sc)
    return out
