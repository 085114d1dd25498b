"""Bit-level codecs for the number formats the tensor cores read and write.

A format is data (``FloatFormat``): adding e.g. another 8-bit float is adding a row to
``FORMATS``.  Everything works on raw bit patterns held in unsigned integer arrays;
values are only materialised as float64 (which holds every value of every format here
exactly) at the edges.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from fragsim.validate import array, broadcast_shape, name_length, show

__all__ = [
    "FloatFormat", "FORMATS", "get_format", "fields", "decompose", "is_nan", "is_inf",
    "is_zero", "is_subnormal", "classify", "to_float", "from_float", "round_to_format",
    "to_bits", "from_bits", "IntFormat", "INT_FORMATS", "int_to_bits", "int_from_bits",
]


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format, as stored in a register or in memory.

    ``ignored_low_bits``: bits of the storage word below the format (tf32 lives in the
    top 19 bits of a 32-bit word; the tensor core ignores the low 13).
    ``ieee_specials``: the all-ones exponent means Inf/NaN (IEEE style).  When False
    (e4m3) only ``nan_fields`` (exponent all ones with mantissa all ones) is NaN and there
    is no infinity.
    """

    name: str
    exp_bits: int
    man_bits: int
    storage_bits: int
    ignored_low_bits: int = 0
    ieee_specials: bool = True
    canonical_nan: int = 0

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number (also that of subnormals)."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite number."""
        top = (1 << self.exp_bits) - 1
        return (top - 1 if self.ieee_specials else top) - self.bias

    @property
    def max_finite_man(self) -> int:
        full = (1 << self.man_bits) - 1
        return full if self.ieee_specials else full - 1

    @property
    def width(self) -> int:
        """Bits the format really has (sign + exponent + mantissa)."""
        return 1 + self.exp_bits + self.man_bits

    @property
    def dtype(self):
        return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[self.storage_bits]

    @property
    def sign_shift(self) -> int:
        return self.storage_bits - 1

    @property
    def exp_shift(self) -> int:
        return self.man_bits + self.ignored_low_bits


FORMATS: dict[str, FloatFormat] = {
    f.name: f
    for f in (
        FloatFormat("f16", 5, 10, 16, canonical_nan=0x7FFF),
        FloatFormat("bf16", 8, 7, 16, canonical_nan=0x7FFF),
        FloatFormat("tf32", 8, 10, 32, ignored_low_bits=13, canonical_nan=0x7FFFFFFF),
        FloatFormat("f32", 8, 23, 32, canonical_nan=0x7FFFFFFF),
        # binary64: one f64 register is two uint32 words, low word first (mma .f64 operands)
        FloatFormat("f64", 11, 52, 64, canonical_nan=0x7FFFFFFFFFFFFFFF),
        # OCP 8-bit formats: data only, to show the structure takes them.
        FloatFormat("e5m2", 5, 2, 8, canonical_nan=0x7F),
        FloatFormat("e4m3", 4, 3, 8, ieee_specials=False, canonical_nan=0x7F),
    )
}


@dataclass(frozen=True)
class IntFormat:
    """An integer element of the integer mma forms: two's complement (``signed``) or unsigned,
    ``storage_bits`` wide (b1 is one unsigned bit).  Words are the raw bits, in the smallest
    unsigned dtype that holds them (uint8 for 1, 4 and 8 bits)."""

    name: str
    storage_bits: int
    signed: bool

    @property
    def width(self) -> int:
        return self.storage_bits

    @property
    def dtype(self):
        return np.uint8 if self.storage_bits <= 8 else np.uint32

    @property
    def min(self) -> int:
        return -(1 << (self.storage_bits - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.storage_bits - 1 if self.signed else self.storage_bits)) - 1


INT_FORMATS: dict[str, IntFormat] = {
    f.name: f
    for f in (IntFormat("s8", 8, True), IntFormat("u8", 8, False), IntFormat("s4", 4, True),
              IntFormat("u4", 4, False), IntFormat("b1", 1, False), IntFormat("s32", 32, True))
}


def get_format(fmt: str | FloatFormat | IntFormat):
    """A format name ('f16', 's8', ...) -> its ``FloatFormat`` or ``IntFormat``."""
    if isinstance(fmt, (FloatFormat, IntFormat)):
        return fmt
    if not isinstance(fmt, str):
        raise TypeError(f"number format must be a name (str) such as 'f16', got {type(fmt).__name__}")
    key = name_length(fmt, "number format").lstrip(".").lower()
    found = FORMATS.get(key) or INT_FORMATS.get(key)
    if found is None:
        raise ValueError(f"unknown number format {fmt!r}; expected one of "
                         f"{', '.join(list(FORMATS) + list(INT_FORMATS))}")
    return found


def _float_format(fmt, what: str) -> FloatFormat:
    f = get_format(fmt)
    if isinstance(f, IntFormat):
        raise TypeError(f"{what}: {f.name} is an integer format; use int_to_bits / int_from_bits")
    return f


def int_to_bits(values, fmt) -> np.ndarray:
    """Integers -> words of an integer format (two's complement for signed ones); a value
    outside the format's range is a ValueError naming it."""
    f = get_format(fmt)
    if not isinstance(f, IntFormat):
        raise TypeError(f"int_to_bits: {f.name} is not an integer format; use to_bits")
    a = array(values, "int_to_bits: values")
    if a.dtype.kind not in "iu":
        raise TypeError(f"int_to_bits: values must be integers, got dtype {a.dtype}")
    bad = (a < f.min) | (a > f.max)
    if bad.any():
        idx = _first_index(bad)
        raise ValueError(f"int_to_bits: {f.name} holds {f.min}..{f.max}, got {a[idx]} at index {idx}")
    return (a.astype(np.int64) & ((1 << f.storage_bits) - 1)).astype(f.dtype)


def int_from_bits(bits, fmt) -> np.ndarray:
    """Words of an integer format -> their int64 values."""
    f = get_format(fmt)
    if not isinstance(f, IntFormat):
        raise TypeError(f"int_from_bits: {f.name} is not an integer format; use from_bits")
    b = _as_bits(bits, f)
    if f.signed:
        b = np.where(b >> (f.storage_bits - 1) & 1, b - (1 << f.storage_bits), b)
    return b


def _first_index(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _as_bits(bits, fmt: FloatFormat | IntFormat) -> np.ndarray:
    b = array(bits, f"{fmt.name} bit patterns")
    if b.dtype.kind not in "ui":
        raise TypeError(f"{fmt.name} bit patterns must be an unsigned integer array, got dtype {b.dtype}")
    # A wider or negative pattern is not a word of the format: masking it would hand back
    # the value of some other word (0x13c00 as f16 would read as 1.0).
    limit = 1 << fmt.storage_bits
    if b.size and (b.dtype.kind == "i" or b.dtype.itemsize * 8 > fmt.storage_bits):
        bad = (b < 0) | (b >= limit)
        if bad.any():
            idx = _first_index(bad)
            raise ValueError(f"{fmt.name} bit patterns must lie in [0, 2**{fmt.storage_bits}), got "
                             f"{int(b[idx])} at index {idx}")
    return b.astype(np.int64)


def fields(bits, fmt) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split raw words into (sign, biased exponent field, mantissa field) int64 arrays."""
    fmt = _float_format(fmt, "fields")
    b = _as_bits(bits, fmt)
    sign = (b >> fmt.sign_shift) & 1
    exp = (b >> fmt.exp_shift) & ((1 << fmt.exp_bits) - 1)
    man = (b >> fmt.ignored_low_bits) & ((1 << fmt.man_bits) - 1)
    return sign, exp, man


def _special_mask(exp, man, fmt: FloatFormat):
    top = (1 << fmt.exp_bits) - 1
    if fmt.ieee_specials:
        return exp == top
    return (exp == top) & (man == (1 << fmt.man_bits) - 1)


def is_nan(bits, fmt) -> np.ndarray:
    fmt = _float_format(fmt, "is_nan")
    _, e, m = fields(bits, fmt)
    return _special_mask(e, m, fmt) & ((m != 0) | (not fmt.ieee_specials))


def is_inf(bits, fmt) -> np.ndarray:
    fmt = _float_format(fmt, "is_inf")
    _, e, m = fields(bits, fmt)
    return _special_mask(e, m, fmt) & (m == 0) & fmt.ieee_specials


def is_zero(bits, fmt) -> np.ndarray:
    _, e, m = fields(bits, fmt)
    return (e == 0) & (m == 0)


def is_subnormal(bits, fmt) -> np.ndarray:
    _, e, m = fields(bits, fmt)
    return (e == 0) & (m != 0)


def classify(bits, fmt) -> np.ndarray:
    """Per element one of 'nan', 'inf', 'zero', 'subnormal', 'normal' (object-free: a str array)."""
    out = np.full(np.shape(bits), "normal", dtype="<U9")
    out[is_subnormal(bits, fmt)] = "subnormal"
    out[is_zero(bits, fmt)] = "zero"
    out[is_inf(bits, fmt)] = "inf"
    out[is_nan(bits, fmt)] = "nan"
    return out


def decompose(bits, fmt):
    """Finite words as exact integers: value = (-1)**sign * sig * 2**exp.

    ``sig`` includes the hidden bit; subnormals get the exponent of the smallest normal
    (their value is kept, never flushed).  Inf/NaN words decompose as if finite: mask
    them with ``is_nan``/``is_inf`` first.
    """
    fmt = _float_format(fmt, "decompose")
    sign, e, m = fields(bits, fmt)
    normal = e != 0
    sig = np.where(normal, m | (1 << fmt.man_bits), m)
    exp = np.where(normal, e, 1) - fmt.bias - fmt.man_bits
    return sign, sig, exp


def to_float(bits, fmt) -> np.ndarray:
    """Raw words -> float64 values (exact; NaN payloads are not kept)."""
    fmt = _float_format(fmt, "from_bits")
    sign, sig, exp = decompose(bits, fmt)
    with np.errstate(over="ignore"):  # f64 Inf/NaN words decompose past the largest float64
        val = np.ldexp(sig.astype(np.float64), exp.astype(np.int32))
    val = np.where(is_inf(bits, fmt), np.inf, val)
    val = np.where(is_nan(bits, fmt), np.nan, val)
    return np.where(sign == 1, -val, val)


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bit length of non-negative int64 values (0 -> 0), exact for all 63-bit values."""
    x = np.asarray(x, dtype=np.int64)
    n = np.zeros(x.shape, dtype=np.int64)
    y = x.copy()
    for step in (32, 16, 8, 4, 2, 1):
        big = y >= (np.int64(1) << step)
        n = np.where(big, n + step, n)
        y = np.where(big, y >> step, y)
    return n + (y > 0)


def _mode(value, name: str, modes) -> None:
    # `in` on an array would ask NumPy for a truth value: compare only strings
    if not (isinstance(value, str) and value in modes):
        got = repr(value) if isinstance(value, str) else show(value)
        raise ValueError(f"{name} must be {' or '.join(map(repr, modes))}, got {got}")


def round_to_format(sign, sig, exp, fmt, rounding: str = "rne", overflow: str = "ieee") -> np.ndarray:
    """Round the exact values (-1)**sign * sig * 2**exp to ``fmt`` and encode them.

    ``sig`` are non-negative int64 (< 2**62), ``exp`` int64.  ``rounding`` is 'rne'
    (to nearest, ties to even) or 'rz' (toward zero).  ``overflow``: 'ieee' gives the
    largest finite number under 'rz' and Inf under 'rne'; 'inf' gives Inf whenever the
    rounded exponent exceeds the format's range (what the tensor core does).
    Subnormal results are produced; zero keeps its sign.
    """
    fmt = _float_format(fmt, "round_to_format")
    _mode(rounding, "rounding", ("rne", "rz"))
    _mode(overflow, "overflow", ("ieee", "inf"))
    sign = np.asarray(sign, dtype=np.int64)
    sig = np.asarray(sig, dtype=np.int64)
    exp = np.asarray(exp, dtype=np.int64)
    shape = broadcast_shape([sign.shape, sig.shape, exp.shape], ["sign", "sig", "exp"])
    sign, sig, exp = (np.broadcast_to(x, shape) for x in (sign, sig, exp))
    nbits = _bit_length(sig)
    lead = exp + nbits - 1  # exponent of the leading bit
    qexp = np.maximum(lead, fmt.emin) - fmt.man_bits  # exponent of the last kept bit
    shift = qexp - exp  # > 0: bits to drop
    drop = np.clip(shift, 0, 62)
    kept = np.where(shift > 0, sig >> drop, sig << np.clip(-shift, 0, 62))
    if rounding == "rne":
        rem_mask = (np.int64(1) << drop) - 1
        rem = sig & rem_mask
        half = np.where(drop > 0, np.int64(1) << np.maximum(drop - 1, 0), 0)
        big_shift = shift > 62  # everything dropped, and the value is below half an ulp
        rem = np.where(big_shift, 1, rem)
        half = np.where(big_shift, np.int64(1) << 62, half)
        up = (drop > 0) & ((rem > half) | ((rem == half) & ((kept & 1) == 1)))
        kept = kept + up
    # Rounding may carry into a new binade.
    carry = kept >> (fmt.man_bits + 1)
    kept = np.where(carry > 0, kept >> 1, kept)
    qexp = qexp + carry
    is_normal = kept >> fmt.man_bits
    biased = np.where(is_normal > 0, qexp + fmt.man_bits + fmt.bias, 0)
    man = kept & ((1 << fmt.man_bits) - 1)
    too_big = (biased > fmt.emax + fmt.bias) | (
        (biased == fmt.emax + fmt.bias) & (man > fmt.max_finite_man))
    to_inf = too_big & ((rounding == "rne") | (overflow == "inf"))
    max_exp_field, max_man = fmt.emax + fmt.bias, fmt.max_finite_man
    biased = np.where(too_big, max_exp_field, biased)
    man = np.where(too_big, max_man, man)
    word = (sign << fmt.sign_shift) | (biased << fmt.exp_shift) | (man << fmt.ignored_low_bits)
    if fmt.ieee_specials:
        inf_word = (sign << fmt.sign_shift) | (((1 << fmt.exp_bits) - 1) << fmt.exp_shift)
    else:  # no infinity: overflow is NaN
        inf_word = (sign << fmt.sign_shift) | fmt.canonical_nan
    word = np.where(to_inf, inf_word, word)
    return word.astype(fmt.dtype)


def _float_parts(x: np.ndarray):
    """float64 values -> exact (sign, sig, exp) int64 arrays; Inf/NaN give sig 0 (patched later)."""
    m, e = np.frexp(np.abs(x))  # |x| = m * 2**e, 0.5 <= m < 1
    sig = np.where(np.isfinite(x), np.ldexp(m, 53), 0).astype(np.int64)
    return np.signbit(x).astype(np.int64), sig, e.astype(np.int64) - 53


def _int_parts(a: np.ndarray):
    """Integer array (at most 64 bits) -> (sign, sig, exp) with sig < 2**62, no rounding yet:
    bits shifted out are kept as a sticky lowest bit, far below any format's rounding bit."""
    neg = a < 0
    if a.dtype.kind == "i":
        w = a.astype(np.int64)
        mag = np.where(neg, ~w, w).astype(np.uint64) + neg.astype(np.uint64)  # ~w = |w| - 1: no overflow at INT64_MIN
    else:
        mag = a.astype(np.uint64)
    big = mag >= np.uint64(1 << 62)
    sticky = (mag & np.uint64(3)) != 0
    sig = np.where(big, (mag >> np.uint64(2)) | sticky.astype(np.uint64), mag).astype(np.int64)
    return neg.astype(np.int64), sig, np.where(big, 2, 0).astype(np.int64)


def _pyint_parts(n: int) -> tuple[int, int, int]:
    """A Python int of any size -> (sign, sig, exp) with sig < 2**62 and a sticky lowest bit."""
    mag = -n if n < 0 else n
    shift = max(mag.bit_length() - 61, 0)
    sig = mag >> shift
    if mag & ((1 << shift) - 1):
        sig |= 1
    return int(n < 0), sig, shift


def _object_parts(a: np.ndarray):
    """An object array of Python/NumPy numbers -> (sign, sig, exp, special) where ``special``
    holds the float elements (for their Inf/NaN) and 0 at the integers."""
    flat = a.ravel()
    sign, sig, exp = (np.zeros(flat.size, np.int64) for _ in range(3))
    special = np.zeros(flat.size, np.float64)
    is_float = np.zeros(flat.size, bool)
    for i, v in enumerate(flat):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, float, np.floating)) \
                or (isinstance(v, np.floating) and v.dtype.itemsize > 8):
            idx = tuple(int(j) for j in np.unravel_index(i, a.shape))
            raise TypeError(f"to_bits: values must be real numbers (int or float), got "
                            f"{type(v).__name__} {v!r:.40} at index {idx}")
        if isinstance(v, numbers.Integral):
            sign[i], sig[i], exp[i] = _pyint_parts(int(v))
        else:
            special[i], is_float[i] = float(v), True
    fs, fsig, fexp = _float_parts(special[is_float])
    sign[is_float], sig[is_float], exp[is_float] = fs, fsig, fexp
    return (x.reshape(a.shape) for x in (sign, sig, exp, special))


def from_float(x, fmt, rounding: str = "rne") -> np.ndarray:
    """Real values -> raw words of ``fmt``, rounded once ('rne' or 'rz'); NaN -> canonical NaN.

    ``x``: floats (float16/32/64) or integers (NumPy integer arrays or Python ints of any
    size), as a scalar or an array.  Integers are rounded exactly as IEEE converts an exact
    integer: ``2**1100`` is Inf under 'rne' and the largest finite number under 'rz'.
    Anything else (None, strings, dates, booleans, complex) is a ``TypeError``.
    """
    fmt = _float_format(fmt, "to_bits")
    _mode(rounding, "rounding", ("rne", "rz"))
    try:
        a = np.asarray(x)
    except ValueError as e:  # ragged nesting
        raise ValueError(f"to_bits: values must form a rectangular array ({e})") from None
    kind = a.dtype.kind
    special = None
    if kind == "f" and a.dtype.itemsize <= 8:
        special = a.astype(np.float64)
        sign, sig, exp = _float_parts(special)
    elif kind in "iu":
        sign, sig, exp = _int_parts(a)
    elif kind == "O":
        sign, sig, exp, special = _object_parts(a)
    else:
        raise TypeError(f"to_bits: values must be real numbers (int or float), got dtype {a.dtype}")
    word = round_to_format(sign, sig, exp, fmt, rounding).astype(np.int64)
    if special is not None:
        if fmt.ieee_specials:
            inf_word = (sign << fmt.sign_shift) | (((1 << fmt.exp_bits) - 1) << fmt.exp_shift)
        else:
            inf_word = (sign << fmt.sign_shift) | fmt.canonical_nan
        word = np.where(np.isinf(special), inf_word, word)
        word = np.where(np.isnan(special), fmt.canonical_nan, word)
    return word.astype(fmt.dtype)


# Friendly names used by the public API.
to_bits = from_float
from_bits = to_float
