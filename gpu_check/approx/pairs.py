"""The operand pairs of the two-operand forms (``div``): a counter-based stream, the same bits from
NumPy and CuPy, so the GPU's digests over 2^30 pairs are checked on the CPU from the pair index alone.

Pair ``k`` of seed ``s`` is drawn from splitmix64 of ``k`` and ``s``; its class (the low 3 bits of the
first draw) decides how the words are made: random words (3 of 8), exponent corners (both operands'
exponents near 0, 1, 126, 127, 253, 254), a subnormal operand, a special value against a random word,
quotients near 1 (divisor = dividend with its low bits changed), and quotients near overflow or
underflow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .digest import mix

#: every special an operand takes in class 5: zeros, infinities, quiet and signalling NaNs with
#: payloads, one, the largest and smallest normals, the largest and smallest subnormals
SPECIALS = (0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FA00001, 0x7F800001,
            0xFFFFFFFF, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x80800000,
            0x007FFFFF, 0x807FFFFF, 0x00000001, 0x80000001, 0x40000000)
#: biased exponents of class 3's corners
CORNERS = (0, 1, 2, 125, 126, 127, 128, 129, 252, 253, 254)


def _draw(k: Any, salt: int, xp: Any) -> Any:
    return mix(k & xp.uint64(0xFFFFFFFF), (k >> xp.uint64(32)) ^ xp.uint64(salt), xp)


def pairs(first: int, count: int, seed: int, xp: Any = np) -> tuple[Any, Any]:
    """Dividend and divisor words (uint32) of pairs ``first .. first+count-1`` of stream ``seed``."""
    k = xp.arange(first, first + count, dtype=xp.uint64) + xp.uint64((seed & 0xFFFF) << 40)
    h1, h2, h3 = _draw(k, 0x1111, xp), _draw(k, 0x2222, xp), _draw(k, 0x3333, xp)
    cls = (h1 & xp.uint64(7)).astype(xp.uint32)
    lo, hi = (h2 & xp.uint64(0xFFFFFFFF)).astype(xp.uint32), (h2 >> xp.uint64(32)).astype(xp.uint32)
    r3lo, r3hi = (h3 & xp.uint64(0xFFFFFFFF)).astype(xp.uint32), (h3 >> xp.uint64(32)).astype(xp.uint32)
    u = xp.uint32
    corners = xp.asarray(np.array(CORNERS, np.uint32))
    specials = xp.asarray(np.array(SPECIALS, np.uint32))
    sign_man = u(0x807FFFFF)

    def corner(word: Any, r: Any) -> Any:
        return (word & sign_man) | (corners[r % u(len(CORNERS))] << u(23))

    a, b = lo.copy(), hi.copy()
    # 3: exponent corners on both sides
    a = xp.where(cls == 3, corner(lo, r3lo), a)
    b = xp.where(cls == 3, corner(hi, r3hi), b)
    # 4: a subnormal divisor or dividend (or both)
    sub_a, sub_b = lo & u(0x807FFFFF), hi & u(0x807FFFFF)
    which = r3lo % u(3)
    a = xp.where((cls == 4) & (which != 1), sub_a, a)
    b = xp.where((cls == 4) & (which != 0), sub_b, b)
    # 5: a special against a random word (either side), or two specials
    s1, s2 = specials[r3lo % u(len(SPECIALS))], specials[r3hi % u(len(SPECIALS))]
    pick = (r3lo >> u(16)) % u(3)
    a = xp.where((cls == 5) & (pick != 1), s1, a)
    b = xp.where((cls == 5) & (pick != 0), s2, b)
    # 6: quotient near one: the divisor is the dividend with low bits changed
    b = xp.where(cls == 6, lo ^ (r3lo & ((u(1) << (r3hi % u(12))) - u(1))), b)
    # 7: quotients near the overflow and underflow thresholds
    big = (lo & sign_man) | ((u(230) + r3lo % u(25)) << u(23))
    small = (hi & sign_man) | ((u(1) + r3hi % u(25)) << u(23))
    flip = (r3lo >> u(20)) & u(1)
    a = xp.where(cls == 7, xp.where(flip == 1, small, big), a)
    b = xp.where(cls == 7, xp.where(flip == 1, big, small), b)
    return a.astype(xp.uint32), b.astype(xp.uint32)
