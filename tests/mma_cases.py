"""Random mma operands that reach the corners of the arithmetic, for the property tests.

Hypothesis picks, per operand, a class of bit patterns and a seed; numpy fills the matrix
(fast, reproducible from the drawn values).  Classes: uniform words, specials-heavy (NaN
with any payload, +-Inf, +-0, the extreme subnormals and normals), subnormals, a narrow
exponent band (long carries, near-ties), a wide exponent spread (heavy truncation), tiny
values (subnormal results, e_zero), and two scenarios on top: products that cancel
exactly, and a C that cancels the dot product down to its truncated residue.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fragsim
from fragsim.facts.formats import get_format

# The forms of the truncated fused dot-product model; the integer and f64 forms (fragsim.arith.exact)
# are tests/test_mma_exact.py's, fp8 and f16 m8n8k4 (not one tensor-core instruction on sm_90)
# tests/test_mma_fp8_m884.py's.
FLOAT_FORMS = [n for n, f in fragsim.FORMS.items() if f.fmt("A").name in ("f16", "bf16", "tf32") and f.groups == 1]

CLASSES = ("bits", "special", "subnormal", "narrow", "wide", "tiny", "half", "zero", "mixed")
SCENARIOS = ("none", "none", "cancel", "c_cancels", "sparse", "neg_zeros")


def _words(fmt, cls, shape, rng) -> np.ndarray:
    f = get_format(fmt)
    n = int(np.prod(shape))
    sign = rng.integers(0, 2, n).astype(np.int64)
    man = rng.integers(0, 1 << f.man_bits, n).astype(np.int64)
    top = (1 << f.exp_bits) - 1
    if cls == "bits":
        w = rng.integers(0, 1 << f.storage_bits, n, dtype=np.int64)
        return w.reshape(shape).astype(f.dtype)
    if cls == "mixed":
        picks = rng.choice([c for c in CLASSES if c != "mixed"], n)
        out = np.empty(n, np.int64)
        for c in set(picks):
            sel = picks == c
            out[sel] = _words(fmt, c, (int(sel.sum()),), rng).astype(np.int64)
        return out.reshape(shape).astype(f.dtype)
    if cls == "special":
        specials = np.array([0, top << f.man_bits, (top << f.man_bits) | 1, (top << f.man_bits) | (1 << (f.man_bits - 1)),
                             1, (1 << f.man_bits) - 1, 1 << f.man_bits, ((top - 1) << f.man_bits) | ((1 << f.man_bits) - 1),
                             f.bias << f.man_bits], np.int64)
        body = specials[rng.integers(0, len(specials), n)]
        body = np.where(rng.random(n) < 0.25, (rng.integers(1, top, n) << f.man_bits) | man, body)
        # NaN payloads anywhere in the mantissa
        isnan = rng.random(n) < 0.1
        body = np.where(isnan, (top << f.man_bits) | np.maximum(man, 1), body)
        exp_man = body
    elif cls == "subnormal":
        exp_man = man
    elif cls == "narrow":
        exp_man = ((f.bias + rng.integers(-3, 4, n)) << f.man_bits) | man
    elif cls == "wide":
        exp_man = (rng.integers(1, top, n) << f.man_bits) | man
    elif cls == "tiny":
        e = rng.integers(0, min(10, top), n)
        exp_man = (e << f.man_bits) | man
    elif cls == "half":
        # products near e_zero (2**-21 for f16 outputs, 2**-133 for f32) and the truncation
        # edge below it; mantissas of one or two bits make exact ties likely
        centre = 4 if f.exp_bits == 5 else f.bias // 2
        e = np.clip(centre + rng.integers(-6, 7, n), 0, top - 1)
        man = np.where(rng.random(n) < 0.6, man & (3 << (f.man_bits - 2)), man)
        exp_man = (e << f.man_bits) | man
    elif cls == "zero":
        exp_man = np.zeros(n, np.int64)
    else:
        raise ValueError(cls)
    w = (sign << (f.exp_bits + f.man_bits)) | exp_man
    w <<= f.ignored_low_bits
    if f.ignored_low_bits:   # garbage (and NaN payloads) in the bits the tensor core ignores
        w |= np.where(rng.random(n) < 0.5, rng.integers(0, 1 << f.ignored_low_bits, n), 0)
    return w.reshape(shape).astype(f.dtype)


def matrices(form, classes, seed, scenario="none"):
    """(A, B, C) bit matrices of ``form`` for the drawn classes and seed."""
    f = fragsim.lookup(form)
    rng = np.random.default_rng(seed)
    A, B, C = (_words(f.fmt(op).name, cls, f.matrix_shape(op), rng) for op, cls in zip("ABC", classes))
    if scenario == "cancel":
        # pairs of products that cancel exactly: a[:, j] = -a[:, i], b[j, :] = b[i, :]
        k = f.shape[2]
        sb = 1 << f.fmt("A").sign_shift
        for i in range(0, k - 1, 2):
            j = int(rng.integers(i + 1, k))
            A[:, j] = A[:, i] ^ A.dtype.type(sb)
            B[j, :] = B[i, :]
    elif scenario == "c_cancels":
        # C = -(the dot product rounded to C's format): D is the truncation residue
        from fragsim.facts.formats import from_float, to_float
        with np.errstate(all="ignore"):
            dotp = to_float(A, f.fmt("A")) @ to_float(B, f.fmt("B"))
        C = np.where(np.isfinite(dotp), from_float(-dotp, f.fmt("C")), C).astype(C.dtype)
    elif scenario == "sparse":
        # zero terms beside nonzero ones: e_zero joins E_max
        A = np.where(rng.random(A.shape) < 0.4, A & A.dtype.type(1 << f.fmt("A").sign_shift), A)
        B = np.where(rng.random(B.shape) < 0.4, B & B.dtype.type(1 << f.fmt("B").sign_shift), B)
        C = np.where(rng.random(C.shape) < 0.5, C & C.dtype.type(1 << f.fmt("C").sign_shift), C)
    elif scenario == "neg_zeros":
        # rows where every term is -0 (a = -0, b = +0, c = -0), beside rows of +0/-0 mixes
        rows = rng.random(A.shape[0]) < 0.5
        A[rows] = 1 << f.fmt("A").sign_shift
        B[:] = np.where(rng.random(B.shape) < 0.8, 0, B & B.dtype.type(1 << f.fmt("B").sign_shift))
        C[rows] = 1 << f.fmt("C").sign_shift
    return A, B, C


@st.composite
def mma_case(draw, form):
    classes = tuple(draw(st.sampled_from(CLASSES)) for _ in range(3))
    seed = draw(st.integers(0, 2**32 - 1))
    scenario = draw(st.sampled_from(SCENARIOS))
    rows = draw(st.lists(st.integers(0, fragsim.lookup(form).shape[0] - 1), min_size=1, max_size=2, unique=True))
    return classes, seed, scenario, rows
