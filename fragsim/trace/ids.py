"""Element identities in bits, for ``fragsim.trace_fragments`` (``fragsim.trace``): how a
number (a digit of a row, column or k) is written into an element of A or B and read back, and how
the digits the elements of a fragment hold are summarised and combined over the passes.

One identity per element and pass: a 16-bit element carries 15 bits (the 16th says A or B), an
8-bit one 7, a 32-bit one 17 (bits 13-29: ``cvt.rna.tf32.f32`` keeps them, and the exponent never
becomes all ones, which a conversion could canonicalise), a 64-bit one 31.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["IdCode", "CODES", "NONE", "GARBAGE", "OTHER"]


#: Codes of a decoded identity (a value >= 1 is digit + 1): no element (zero bits), bits that are
#: no identity, an element of the other input matrix.
NONE, GARBAGE, OTHER = -1, -2, -3


@dataclass(frozen=True)
class IdCode:
    """Where an identity sits in an element of ``bits`` bits: ``payload`` bits from bit ``shift``,
    and bit ``flag`` set for B's elements (clear for A's)."""

    bits: int
    shift: int
    payload: int
    flag: int

    @property
    def base(self) -> int:
        """Digits 0..base-1 are stored as 1..base (0: no element)."""
        return (1 << self.payload) - 1

    @property
    def dtype(self):
        return np.dtype(f"<u{self.bits // 8}")

    def encode(self, values: np.ndarray, b: bool) -> np.ndarray:
        w = values.astype(np.uint64) << np.uint64(self.shift)
        if b:
            w |= np.uint64(1) << np.uint64(self.flag)
        return w.astype(self.dtype)

    def values(self, words: np.ndarray) -> np.ndarray:
        """The identity field of element words (0: none), flags and stray bits ignored."""
        w = words.astype(np.uint64 if self.bits == 64 else np.int64)
        return ((w >> w.dtype.type(self.shift)) & w.dtype.type(self.base)).astype(np.int64)

    def decode(self, words: np.ndarray, b: bool) -> np.ndarray:
        """Element words -> int64: the value (>= 1), 0 for no element, GARBAGE or OTHER."""
        big = self.bits == 64
        w = words.astype(np.uint64 if big else np.int64)
        one = w.dtype.type(1)
        mask = w.dtype.type(self.base)
        v = ((w >> w.dtype.type(self.shift)) & mask).astype(np.int64)
        flag = (w >> w.dtype.type(self.flag)) & one
        rest = w & ~((mask << w.dtype.type(self.shift)) | (one << w.dtype.type(self.flag)))
        bad = (rest != 0) | (v == 0)
        out = np.where(flag.astype(bool) != b, OTHER, v)
        if bad.any():
            out = np.where(bad, GARBAGE, out)
        return np.where(w == 0, 0, out)


CODES = {8: IdCode(8, 0, 7, 7), 16: IdCode(16, 0, 15, 15), 32: IdCode(32, 13, 17, 31), 64: IdCode(64, 0, 31, 63)}


def ndigits(n: int, base: int) -> int:
    """Digits of base ``base`` that number 0..n-1."""
    d = 1
    while base ** d < n:
        d += 1
    return d


def digit(x: np.ndarray, base: int, i: int) -> np.ndarray:
    return (x // base ** i) % base


def one_value(v: np.ndarray, axis: int) -> np.ndarray:
    """The identity all elements along ``axis`` hold (none left out), 0 where they hold several."""
    hi = v.max(axis)
    lo = np.where(v > 0, v, np.iinfo(np.int64).max).min(axis)
    return np.where(lo == hi, hi, 0)


def agree(v: np.ndarray, axis: int) -> np.ndarray:
    """The value all elements along ``axis`` hold (elements without one left out), NONE where none
    holds one, GARBAGE where they differ, OTHER where one holds the other matrix's element."""
    hi = v.max(axis)                                 # codes are negative, no element 0
    lo = np.where(v > 0, v, np.iinfo(np.int64).max).min(axis)
    out = np.where(hi > 0, np.where(lo == hi, hi, GARBAGE), NONE)
    low = v.min(axis)
    if (low < 0).any():
        out = np.where(low < 0, np.where((v == OTHER).any(axis), OTHER, GARBAGE), out)
    return out


def combine(ds: list, base: int) -> np.ndarray:
    """Digit values (1..base, or codes) of several passes -> coordinates (codes where any is one)."""
    out = np.zeros(np.shape(ds[0]), np.int64)
    code = np.zeros(np.shape(ds[0]), np.int64)
    for i, d in enumerate(ds):
        d = np.asarray(d)
        out += np.maximum(d - 1, 0) * base ** i
        code = np.minimum(code, np.where(d < 1, np.where(d == 0, NONE, d), 0))
    return np.where(code < 0, code, out)
