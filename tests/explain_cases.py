"""Operand bit matrices for the --explain agreement tests, for every element format: uniform words,
and special-heavy words (NaN with payloads, +-Inf, +-0, the extreme subnormals and normals, 1; for
integers the extremes, 0 and +-1, and an accumulator near the s32 limits so that sums wrap or
saturate)."""

from __future__ import annotations

import numpy as np

from fragsim.facts.formats import FloatFormat, IntFormat, get_format

KINDS = ("bits", "special", "mixed")


def _specials(fmt) -> np.ndarray:
    if isinstance(fmt, IntFormat):
        if fmt.name == "s32":      # C: sums near the limits wrap or saturate
            vals = [fmt.min, fmt.min + 1, fmt.min + 1000, -1, 0, 1, fmt.max - 1000, fmt.max - 1, fmt.max]
        else:
            vals = sorted({fmt.min, fmt.min + 1, -1 if fmt.signed else 1, 0, 1, fmt.max - 1, fmt.max})
        return np.array([v % (1 << fmt.storage_bits) for v in vals], np.uint64)
    assert isinstance(fmt, FloatFormat)
    top = (1 << fmt.exp_bits) - 1
    man = (1 << fmt.man_bits) - 1
    largest = ((top - 1 if fmt.ieee_specials else top) << fmt.man_bits) | fmt.max_finite_man
    words = [0, 1, man, 1 << fmt.man_bits, fmt.bias << fmt.man_bits, largest]   # 0, subnormals, min normal, 1, max
    if fmt.ieee_specials:
        words += [top << fmt.man_bits, (top << fmt.man_bits) | 1, (top << fmt.man_bits) | (1 << (fmt.man_bits - 1))]
    else:
        words += [(top << fmt.man_bits) | man]                                         # e4m3's NaN
    words = [w << fmt.ignored_low_bits for w in words]
    sign = 1 << fmt.sign_shift
    return np.array(words + [w | sign for w in words], np.uint64)


def words(fmt, kind: str, shape, rng) -> np.ndarray:
    """Bit matrix of ``fmt`` (its storage dtype) of one kind of KINDS."""
    fmt = get_format(fmt)
    n = int(np.prod(shape))
    uniform = rng.integers(0, 1 << fmt.storage_bits, n, dtype=np.uint64, endpoint=False) \
        if fmt.storage_bits < 64 else rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    if kind == "bits":
        w = uniform
    else:
        sp = _specials(fmt)
        w = sp[rng.integers(0, sp.size, n)]
        if kind == "mixed":
            w = np.where(rng.random(n) < 0.5, w, uniform)
    return w.reshape(shape).astype(fmt.dtype)


def matrices(form, kinds, rng):
    """(A, B, C) bit matrices of an mma form, one kind per operand."""
    return tuple(words(form.fmt(op), kind, form.matrix_shape(op), rng) for op, kind in zip("ABC", kinds))
