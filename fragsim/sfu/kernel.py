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
def _normalized(res, top):
    """(msb position, 24-bit significand truncated) of a positive fixed-point value."""
    p = 0
    v = res
    while v > 1:
        v >>= 1
        p += 1
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
    fx = m | ((ue & 1) << 23)
    eo = 127 + (ue >> 1)
    x = fx & 0x1FFFF
    return _pack(0, eo, _poly(tab, sq, fx >> 17, x, x) >> 16)


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
    p, f = _normalized(res, 42)
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
    p, f = _normalized(res, 38)
    eo = 127 + p - SIN_FRACTION_BITS
    if eo <= 0:
        return np.uint32(s << 31)
    return np.uint32((s << 31) | (eo << 23) | (f & FRACTION))


UNITS = ("rcp", "rsqrt", "sqrt", "ex2", "lg2", "sin", "cos")


@njit(cache=True)
def run(unit, words, tab, sq):
    """``unit`` (an index of ``UNITS``) over uint32 ``words`` (flat)."""
    out = np.empty(words.shape[0], np.uint32)
    for k in range(words.shape[0]):
        w = np.int64(words[k])
        if unit == 0:
            out[k] = rcp(w, tab, sq)
        elif unit == 1:
            out[k] = rsqrt(w, tab, sq)
        elif unit == 2:
            out[k] = sqrt(w, tab, sq)
        elif unit == 3:
            out[k] = ex2(w, tab, sq)
        elif unit == 4:
            out[k] = lg2(w, tab, sq)
        else:
            out[k] = sincos(w, tab, sq, unit == 6)
    return out
