"""A slow, obviously-correct model of mma.sync arithmetic, for the tests only.

It follows the published truncated fused dot-product-add model line by line with exact rationals
(``fractions.Fraction``) and shares no arithmetic with fragsim: its own bit decoding, its
own rounding.  It reads the architecture's numbers from an ``ArchParams`` row, and
implements each open choice of the row (zero_sign, c_subnormal_exp, tf32_nan_low_bits) by
its plain-words definition.  Only the register <-> matrix shuffling (``fragsim.pack`` /
``fragsim.unpack``, tested on their own) is borrowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

import fragsim
from fragsim.facts.arch import get_arch

# name: (exponent bits, mantissa bits, ignored low bits)
FORMATS = {"f16": (5, 10, 0), "bf16": (8, 7, 0), "tf32": (8, 10, 13), "f32": (8, 23, 0)}


@dataclass(frozen=True)
class Num:
    kind: str                  # 'nan' | 'inf' | 'finite'
    sign: int = 0              # 1 for negative (also for -0 and -Inf)
    value: Fraction = Fraction(0)

    @property
    def is_zero(self):
        return self.kind == "finite" and self.value == 0


def floor_log2(x: Fraction) -> int:
    """floor(log2(x)) for x > 0, exactly."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    return e


def decode(word: int, fmt: str, nan_low_bits: bool = False) -> Num:
    ebits, mbits, low = FORMATS[fmt]
    lowpart = word & ((1 << low) - 1)
    w = word >> low                       # tf32: the low 13 bits are not part of the number
    sign = (w >> (ebits + mbits)) & 1
    e = (w >> mbits) & ((1 << ebits) - 1)
    m = w & ((1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    if e == (1 << ebits) - 1:
        if m != 0 or (nan_low_bits and lowpart != 0):
            return Num("nan")
        return Num("inf", sign)
    if e == 0:
        mag = Fraction(m, 1 << mbits) * Fraction(2) ** (1 - bias)
    else:
        mag = (1 + Fraction(m, 1 << mbits)) * Fraction(2) ** (e - bias)
    return Num("finite", sign, -mag if sign else mag)


def emin(fmt: str) -> int:
    ebits = FORMATS[fmt][0]
    return 2 - (1 << (ebits - 1))


def nominal_exponent(x: Num, fmt: str, exact: bool = False) -> int:
    """e = max(floor(log2|x|), emin): subnormals keep their value and take emin."""
    e = floor_log2(abs(x.value))
    return e if exact else max(e, emin(fmt))


def encode(sign: int, mag: Fraction, fmt: str, rounding: str) -> int:
    """Round |value| = mag to fmt ('rz' or 'rne'), overflow to Inf under both; subnormals kept."""
    ebits, mbits, _ = FORMATS[fmt]
    bias = (1 << (ebits - 1)) - 1
    top = ebits + mbits
    inf = ((1 << ebits) - 1) << mbits
    if mag == 0:
        return sign << top
    e = max(floor_log2(mag), 1 - bias)
    ulp = Fraction(2) ** (e - mbits)
    q, r = divmod(mag, ulp)               # q integer count of ulps, r the remainder
    q = int(q)
    if rounding == "rne" and (r > ulp / 2 or (r == ulp / 2 and q % 2 == 1)):
        q += 1
    if q == 0:
        return sign << top
    if q >= (1 << (mbits + 1)):           # carried into the next binade
        q >>= 1
        e += 1
    if q < (1 << mbits):                  # subnormal
        word = q
    else:
        biased = e + bias
        if biased >= (1 << ebits) - 1:
            return (sign << top) | inf
        word = (biased << mbits) | (q - (1 << mbits))
    return (sign << top) | word


def canonical_nan(fmt: str) -> int:
    ebits, mbits, _ = FORMATS[fmt]
    return (1 << (ebits + mbits)) - 1


def dot_block(a_words, b_words, c_word, in_fmt, acc_fmt, arch, trace=None) -> int:
    """One block: c + sum a_i*b_i, truncated and rounded as the reference doc says."""
    nan_low = bool(arch.tf32_nan_low_bits) and in_fmt == "tf32"
    a = [decode(int(w), in_fmt, nan_low) for w in a_words]
    b = [decode(int(w), in_fmt, nan_low) for w in b_words]
    c = decode(int(c_word), acc_fmt)
    F = arch.frac_bits
    e_zero = arch.e_zero(acc_fmt)
    # Special values: NaN if any NaN, Inf*0, or Inf of both signs; else Inf if any.
    infs = set()
    for x, y in zip(a, b):
        if x.kind == "nan" or y.kind == "nan":
            return canonical_nan(acc_fmt)
        if x.kind == "inf" or y.kind == "inf":
            if x.is_zero or y.is_zero:
                return canonical_nan(acc_fmt)
            infs.add(x.sign ^ y.sign)
    if c.kind == "nan":
        return canonical_nan(acc_fmt)
    if c.kind == "inf":
        infs.add(c.sign)
    if len(infs) == 2:
        return canonical_nan(acc_fmt)
    if infs:
        ebits, mbits, _ = FORMATS[acc_fmt]
        return (infs.pop() << (ebits + mbits)) | (((1 << ebits) - 1) << mbits)
    # Terms: exact products with exponent e_a + e_b, and c; zero terms get e_zero.
    terms = []   # (value, exponent, sign bit of the term)
    for x, y in zip(a, b):
        v = x.value * y.value
        if v == 0:
            terms.append((v, e_zero, x.sign ^ y.sign))
        else:
            terms.append((v, nominal_exponent(x, in_fmt) + nominal_exponent(y, in_fmt), x.sign ^ y.sign))
    if c.value == 0:
        terms.append((c.value, e_zero, c.sign))
    else:
        terms.append((c.value, nominal_exponent(c, acc_fmt, arch.c_subnormal_exp == "exact"), c.sign))
    E = max(e for _, e, _ in terms)
    unit = Fraction(2) ** (E - F)
    # Each term to E_max, truncated toward zero (sign-magnitude) to F fractional bits.
    kept = []
    for v, _, s in terms:
        n = int(abs(v) / unit)            # floor of the magnitude
        kept.append((n if v >= 0 else -n, s))
    S = sum(n for n, _ in kept)
    if trace is not None:
        trace.update(E=E, S=S, terms=terms, kept=kept)
    acc_rounding = arch.rounding(acc_fmt)
    if S == 0:
        # IEEE: a sum of zeros is -0 only when every zero is -0 (a term truncated to zero
        # keeps its sign); an exact cancellation is +0.
        neg = all(n == 0 and s == 1 for n, s in kept) if arch.zero_sign == "ieee" else False
        return int(neg) << (sum(FORMATS[acc_fmt][:2]))
    word = encode(int(S < 0), abs(S) * unit, acc_fmt, acc_rounding)
    if arch.zero_sign == "positive" and word == 1 << sum(FORMATS[acc_fmt][:2]):
        word = 0                          # a negative value rounded to zero gives +0
    return word


def dot(a_row, b_col, c_word, in_fmt, acc_fmt, arch) -> int:
    """A whole K: blocks of L in ascending k, each block's rounded result the next's c."""
    arch = get_arch(arch)
    L = min(len(a_row), arch.block_len(in_fmt))
    for k0 in range(0, len(a_row), L):
        c_word = dot_block(a_row[k0:k0 + L], b_col[k0:k0 + L], c_word, in_fmt, acc_fmt, arch)
    return c_word


def mma_matrices(form, A, B, C, arch="sm_90", elements=None) -> np.ndarray:
    """D (bits) from matrices of bits; ``elements``: only these (m, n), the rest left 0."""
    f = fragsim.lookup(form)
    in_fmt, acc_fmt = f.fmt("A").name, f.fmt("C").name
    D = np.zeros(f.matrix_shape("D"), dtype=f.fmt("D").dtype)
    M, N, _ = f.shape
    for m, n in elements if elements is not None else [(m, n) for m in range(M) for n in range(N)]:
        D[m, n] = dot(list(A[m, :]), list(B[:, n]), int(C[m, n]), in_fmt, acc_fmt, arch)
    return D


def mma(form, a, b, c, arch="sm_90") -> np.ndarray:
    """Register-level oracle for one warp: (32, nregs) words in, D registers out."""
    A, B, C = (fragsim.unpack(form, op, x) for op, x in (("A", a), ("B", b), ("C", c)))
    return fragsim.pack(form, "D", mma_matrices(form, A, B, C, arch))
