"""Exact conversion arithmetic on raw bits, for ``cvt`` (``convert.py``).

A value is taken apart once (``Parts``: sign, an integer significand, a power of two and its kind)
and rounded once into the destination -- a float format of ``fragsim.facts.formats.FORMATS`` or an
integer width -- in one of the PTX rounding modes:

    rn   to nearest, ties to even          rz   toward zero
    rm   toward minus infinity             rp   toward plus infinity
    rna  to nearest, ties away from zero (tf32)

Significands are ``uint64`` (a ``u64`` source needs all 64 bits), so every source type of ``cvt``
decomposes exactly; rounding keeps the bits shifted out as a round bit and a sticky bit.  Every
function works on whole arrays: no loop over elements.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fragsim.facts.formats import FloatFormat

ZERO, FINITE, INF, NAN = 0, 1, 2, 3
MODES = ("rn", "rz", "rm", "rp", "rna")

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


def bit_length(x: np.ndarray) -> np.ndarray:
    """Bits of each uint64 (0 -> 0), int64."""
    n = np.zeros(x.shape, np.int64)
    y = x.copy()
    for step in (32, 16, 8, 4, 2, 1):
        big = y >= (_ONE << _U64(step))
        n += np.where(big, step, 0)
        y = np.where(big, y >> _U64(step), y)
    return n + (y > 0)


def _shr_round(sig: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sig >> shift, the last bit shifted out, whether any bit below it is set) for shift >= 1."""
    s = np.asarray(shift, np.int64)
    kept = np.where(s >= 64, _U64(0), sig >> np.minimum(s, 63).astype(_U64))
    r = s - 1                                      # position of the round bit
    rbit = np.where(r >= 64, False, ((sig >> np.minimum(r, 63).astype(_U64)) & _ONE) == 1)
    below = np.where(r >= 64, ~_U64(0), (_ONE << np.clip(r, 0, 63).astype(_U64)) - _ONE)
    sticky = (sig & below) != 0
    return kept, rbit, sticky


def _increment(mode: str, kept: np.ndarray, rbit: np.ndarray, sticky: np.ndarray,
               sign: np.ndarray) -> np.ndarray:
    """Whether rounding the magnitude ``kept`` (+ the dropped bits) in ``mode`` adds one."""
    if mode == "rn":
        return rbit & (sticky | ((kept & _ONE) == 1))
    if mode == "rna":
        return rbit
    if mode == "rz":
        return np.zeros(kept.shape, bool)
    inexact = rbit | sticky
    return inexact & (sign if mode == "rm" else ~sign)


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"rounding mode must be one of {', '.join(MODES)}, got {mode!r}")


def max_finite(fmt: FloatFormat, sign: np.ndarray) -> np.ndarray:
    """The largest finite word of ``fmt`` with ``sign``."""
    word = ((fmt.emax + fmt.bias) << fmt.exp_shift) | (fmt.max_finite_man << fmt.ignored_low_bits)
    return (sign.astype(_U64) << _U64(fmt.sign_shift)) | _U64(word)


def infinity(fmt: FloatFormat, sign: np.ndarray) -> np.ndarray:
    """Infinity of ``sign`` (a format without one, e4m3: its NaN with that sign)."""
    word = (((1 << fmt.exp_bits) - 1) << fmt.exp_shift) if fmt.ieee_specials else fmt.canonical_nan
    return (sign.astype(_U64) << _U64(fmt.sign_shift)) | _U64(word)


def round_float(p: Parts, fmt: FloatFormat, mode: str, satfinite: bool = False,
                nan: np.ndarray | int | None = None) -> np.ndarray:
    """``p`` rounded once to ``fmt`` in ``mode``: subnormal results kept, zeros keep their sign.
    Overflow follows IEEE 754 for the mode (rn/rna: infinity; rz: the largest finite number; rm/rp:
    infinity on the side they round to); ``satfinite`` clamps overflows and infinities to the largest
    finite number of their sign.  NaNs give ``nan`` (default: the format's canonical NaN)."""
    _check_mode(mode)
    sig, exp, sign = p.sig, p.exp, p.sign
    lead = exp + bit_length(sig) - 1               # exponent of the leading bit
    q = np.maximum(lead, fmt.emin) - fmt.man_bits  # exponent of the result's last bit
    shift = q - exp
    left = np.clip(-shift, 0, 63).astype(_U64)
    kept, rbit, sticky = _shr_round(sig, np.maximum(shift, 1))
    inc = _increment(mode, kept, rbit, sticky, sign)
    kept = np.where(shift > 0, kept + inc.astype(_U64), sig << left)
    carry = kept >> _U64(fmt.man_bits + 1)          # rounding up into the next binade
    kept = np.where(carry > 0, kept >> _ONE, kept)
    q = q + carry.astype(np.int64)
    normal = (kept >> _U64(fmt.man_bits)) > 0
    biased = np.where(normal, q + fmt.man_bits + fmt.bias, 0)
    man = kept & _U64((1 << fmt.man_bits) - 1)
    over = (biased > fmt.emax + fmt.bias) | ((biased == fmt.emax + fmt.bias) & (man > _U64(fmt.max_finite_man)))
    word = ((sign.astype(_U64) << _U64(fmt.sign_shift)) | (np.maximum(biased, 0).astype(_U64) << _U64(fmt.exp_shift))
            | (man << _U64(fmt.ignored_low_bits)))
    if satfinite:
        to_inf = np.zeros(sign.shape, bool)
    elif mode in ("rn", "rna"):
        to_inf = np.ones(sign.shape, bool)
    elif mode == "rz":
        to_inf = np.zeros(sign.shape, bool)
    else:
        to_inf = ~sign if mode == "rp" else sign
    big = np.where(to_inf, infinity(fmt, sign), max_finite(fmt, sign))
    word = np.where(over, big, word)
    zero = sign.astype(_U64) << _U64(fmt.sign_shift)
    inf = max_finite(fmt, sign) if satfinite else infinity(fmt, sign)
    nan_word = _U64(fmt.canonical_nan) if nan is None else np.asarray(nan).astype(_U64)
    word = np.select([p.kind == ZERO, p.kind == INF, p.kind == NAN], [zero, inf, nan_word], word)
    return word.astype(fmt.dtype)


def round_int(p: Parts, width: int, signed: bool, mode: str, nan: int = 0) -> np.ndarray:
    """``p`` rounded to an integer in ``mode`` and saturated to the range of a ``width``-bit (un)signed
    integer, infinities to the end of the range on their side; a NaN gives the word ``nan``.  Unsigned
    words of ``width``."""
    _check_mode(mode)
    sig, exp, sign = p.sig, p.exp, p.sign
    kept, rbit, sticky = _shr_round(sig, np.maximum(-exp, 1))
    inc = _increment(mode, kept, rbit, sticky, sign)
    up = np.clip(exp, 0, 63).astype(_U64)
    mag = np.where(exp < 0, kept + inc.astype(_U64), sig << up)
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
    _check_mode(mode)
    frac = (p.kind == FINITE) & (p.exp < 0)
    kept, rbit, sticky = _shr_round(p.sig, np.maximum(-p.exp, 1))
    mag = kept + _increment(mode, kept, rbit, sticky, p.sign).astype(_U64)
    kind = np.where(frac & (mag == 0), ZERO, p.kind).astype(np.int8)
    return Parts(p.sign, np.where(frac, mag, p.sig), np.where(frac, 0, p.exp), kind)
