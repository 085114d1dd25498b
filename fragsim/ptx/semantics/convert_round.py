"""``cvt``'s view of values (``convert.py``): a source taken apart once, and its integer results.

A value is taken apart once (``Parts``: sign, an integer significand, a power of two and its kind)
and rounded once into the destination in a mode of ``ieee.MODES``: to a float format of
``fragsim.facts.formats.FORMATS`` by ``ieee.round_pack`` (the rounding every float result of the
PTX runner goes through; ``round_float`` adds what ``cvt`` does with zeros, infinities and NaNs),
to an integer width or an integral value by ``ieee.round_shift``.  Significands are ``uint64`` (a
``u64`` source needs all 64 bits), so every source type of ``cvt`` decomposes exactly.  Every
function works on whole arrays: no loop over elements.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fragsim.facts.formats import FloatFormat

from .ieee import bit_length, infinity, max_finite, round_pack, round_shift

ZERO, FINITE, INF, NAN = 0, 1, 2, 3

_U64 = np.uint64
_ONE = _U64(1)


@dataclass
class Parts:
    """Values ``(-1)**sign * sig * 2**exp`` with their ``kind`` (ZERO, FINITE, INF, NAN); ``sig`` is
    0 unless the kind is FINITE, ``sign`` holds for every kind (signed zeros, infinities, NaNs)."""

    sign: np.ndarray    # bool
    sig: np.ndarray     # uint64
    exp: np.ndarray     # int64
    kind: np.ndarray    # int8

    def where(self, mask: np.ndarray, other: Parts) -> Parts:
        """``other`` where ``mask``, these parts elsewhere."""
        return Parts(np.where(mask, other.sign, self.sign), np.where(mask, other.sig, self.sig),
                     np.where(mask, other.exp, self.exp), np.where(mask, other.kind, self.kind))


def float_parts(bits: np.ndarray, fmt: FloatFormat, ftz: bool = False) -> Parts:
    """Raw words of ``fmt`` taken apart; ``ftz``: subnormals read as zeros of their sign."""
    b = bits.astype(_U64)
    sign = ((b >> _U64(fmt.sign_shift)) & _ONE).astype(bool)
    e = ((b >> _U64(fmt.exp_shift)) & _U64((1 << fmt.exp_bits) - 1)).astype(np.int64)
    man_mask = (1 << fmt.man_bits) - 1
    m = (b >> _U64(fmt.ignored_low_bits)) & _U64(man_mask)
    top = (1 << fmt.exp_bits) - 1
    if fmt.ieee_specials:
        nan = (e == top) & (m != 0)
        inf = (e == top) & (m == 0)
    else:  # e4m3: S.1111.111 is NaN and there is no infinity
        nan = (e == top) & (m == _U64(man_mask))
        inf = np.zeros(b.shape, bool)
    zero = (e == 0) & ((m == 0) | ftz)
    kind = np.full(b.shape, FINITE, np.int8)
    kind[zero] = ZERO
    kind[inf] = INF
    kind[nan] = NAN
    sig = np.where(e == 0, m, m | _U64(1 << fmt.man_bits))
    sig = np.where(kind == FINITE, sig, _U64(0))
    exp = np.where(e == 0, 1, e) - (fmt.bias + fmt.man_bits)
    return Parts(sign, sig, exp.astype(np.int64), kind)


def int_parts(bits: np.ndarray, signed: bool) -> Parts:
    """Integer words (unsigned arrays of their width; two's complement when ``signed``) taken apart."""
    width = bits.dtype.itemsize * 8
    b = bits.astype(_U64)
    if signed:
        sign = ((b >> _U64(width - 1)) & _ONE).astype(bool)
        ext = b | _U64(((1 << 64) - 1) ^ ((1 << width) - 1))         # sign-extended to 64 bits
        mag = np.where(sign, (~ext) + _ONE, b)                        # |value|; INT64_MIN is 2**63
    else:
        sign = np.zeros(b.shape, bool)
        mag = b
    kind = np.where(mag == 0, ZERO, FINITE).astype(np.int8)
    return Parts(sign, mag, np.zeros(b.shape, np.int64), kind)


def round_float(p: Parts, fmt: FloatFormat, mode: str, satfinite: bool = False,
                nan: np.ndarray | int | None = None) -> np.ndarray:
    """``p`` rounded once to ``fmt`` in ``mode`` (``round_pack``: subnormal results kept, IEEE 754
    overflow for the mode, ``satfinite`` clamping overflows to the largest finite number of their
    sign); zeros keep their sign, infinities stay infinite (``satfinite``: the largest finite
    number), NaNs give ``nan`` (default: the format's canonical NaN)."""
    word = round_pack(p.sign, p.sig, p.exp, fmt, mode, satfinite=satfinite)   # sig 0: a signed zero
    inf = max_finite(fmt, p.sign) if satfinite else infinity(fmt, p.sign)
    nan_word = fmt.dtype(fmt.canonical_nan) if nan is None else np.asarray(nan).astype(fmt.dtype)
    return np.where(p.kind == NAN, nan_word, np.where(p.kind == INF, inf, word)).astype(fmt.dtype)


def round_int(p: Parts, width: int, signed: bool, mode: str, nan: int = 0) -> np.ndarray:
    """``p`` rounded to an integer in ``mode`` and saturated to the range of a ``width``-bit (un)signed
    integer, infinities to the end of the range on their side; a NaN gives the word ``nan``.  Unsigned
    words of ``width``."""
    sig, exp, sign = p.sig, p.exp, p.sign
    up = np.clip(exp, 0, 63).astype(_U64)
    mag = np.where(exp < 0, round_shift(sig, np.maximum(-exp, 0), sign, mode), sig << up)
    huge = (exp >= 0) & (bit_length(sig) + exp > 64)
    hi = (1 << (width - 1)) - 1 if signed else (1 << width) - 1
    lo = (1 << (width - 1)) if signed else 0         # magnitude of the range's negative end
    pos_over = ~sign & (huge | (mag > _U64(hi)))
    neg_over = sign & (huge | (mag > _U64(lo)))
    value = np.where(sign, (~mag) + _ONE, mag)       # two's complement of the magnitude
    value = np.where(pos_over, _U64(hi), value)
    value = np.where(neg_over, _U64((-lo) & ((1 << 64) - 1)), value)
    value = np.where(p.kind == INF, np.where(sign, _U64((-lo) & ((1 << 64) - 1)), _U64(hi)), value)
    value = np.where(p.kind == ZERO, _U64(0), value)
    value = np.where(p.kind == NAN, _U64(nan), value)
    return (value & _U64((1 << width) - 1)).astype(np.dtype(f"uint{width}"))


def round_integral(p: Parts, mode: str) -> Parts:
    """``p`` rounded to an integral value in ``mode`` (its format holds the result exactly); a result
    of zero keeps the sign (``-0.3`` -> ``-0``)."""
    frac = (p.kind == FINITE) & (p.exp < 0)
    mag = round_shift(p.sig, np.maximum(-p.exp, 0), p.sign, mode)
    kind = np.where(frac & (mag == 0), ZERO, p.kind).astype(np.int8)
    return Parts(p.sign, np.where(frac, mag, p.sig), np.where(frac, 0, p.exp), kind)
