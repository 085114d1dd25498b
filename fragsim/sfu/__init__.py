"""The special function unit (MUFU): its functions on raw words, bit for bit as an H100 computes them.

``unit(function, words)`` is one MUFU instruction (``"rcp"``, ``"rsqrt"``, ``"sqrt"``, ``"ex2"``,
``"lg2"``, ``"sin"``, ``"cos"``, ``"tanh"``: MUFU.RCP ... MUFU.TANH) over uint32 f32 words, any shape.  What a PTX form adds
around it (ptxas's scaling of subnormals, sin's multiply by 1/(2 pi), div's reciprocal times the
dividend) is ``fragsim.ptx.semantics.approx``; ``fragsim.approx`` runs a PTX spelling.

- ``kernel``  the interpolator and each function's exponent and special-value rules (numba)
- ``tables``  the coefficient tables, recovered from the GPU's own results
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

#: MUFU functions modelled, in the kernel's order
FUNCTIONS = ("rcp", "rsqrt", "sqrt", "ex2", "lg2", "sin", "cos", "tanh")


@lru_cache(maxsize=None)
def _tables():
    from . import kernel, tables
    tabs = np.zeros((len(kernel.UNITS), 128, 3), np.int64)
    for u, t in {"rcp": tables.RCP, "rsqrt": tables.RSQRT, "sqrt": tables.SQRT, "ex2": tables.EX2, "lg2": tables.LG2,
                 "sin": tables.SIN, "cos": tables.SIN, "tanh": tables.TANH}.items():
        tabs[kernel.UNITS.index(u), :len(t)] = t
    return kernel.squares(), tabs


def unit(function: str, words) -> np.ndarray:
    """MUFU.``function`` of uint32 f32 ``words`` (any shape) -> uint32 result words."""
    from . import kernel
    if function not in FUNCTIONS:
        raise ValueError(f"MUFU function {function!r}: expected one of {', '.join(FUNCTIONS)}")
    w = np.asarray(words)
    if w.dtype != np.uint32:
        raise TypeError(f"MUFU.{function.upper()}: words must be uint32 f32 bits, got {w.dtype}")
    sq, tabs = _tables()
    flat = np.ascontiguousarray(w).reshape(-1)
    return kernel.run(kernel.UNITS.index(function), flat, tabs, sq).reshape(w.shape)


def unit64(function: str, words) -> np.ndarray:
    """MUFU.RCP64H / RSQ64H (``"rcp"``, ``"rsqrt"``) of uint64 double words: the f32 unit on the high
    word (its 20 fraction bits), the result's low word zero."""
    from . import kernel
    if function not in ("rcp", "rsqrt"):
        raise ValueError(f"MUFU.{function.upper()}64H: expected rcp or rsqrt")
    w = np.asarray(words)
    sq, tabs = _tables()
    flat = np.ascontiguousarray(w, np.uint64).reshape(-1)
    return kernel.run64(0 if function == "rcp" else 1, flat, tabs, sq).reshape(w.shape)


HALF_FORMATS = ("f16", "bf16", "f16x2", "bf16x2")


def half(function: str, words, fmt: str) -> np.ndarray:
    """MUFU.``function``.F16/.BF16 (``ex2``, ``tanh``) of 16-bit words (uint16; uint32 pairs for the x2 formats,
    each half on its own): the f32 unit on the exactly widened input, the result truncated toward
    zero to the format (f16: past its largest finite, infinity; NaN: 0x7FFF)."""
    if function not in ("ex2", "tanh"):
        raise ValueError(f"MUFU.{function.upper()} on 16-bit words: the unit has ex2 and tanh")
    w = np.asarray(words)
    if fmt.endswith("x2"):
        lo, hi = (w & np.uint32(0xFFFF)).astype(np.uint16), (w >> np.uint32(16)).astype(np.uint16)
        return (half(function, lo, fmt[:-2]).astype(np.uint32)
                | (half(function, hi, fmt[:-2]).astype(np.uint32) << np.uint32(16)))
    h = w.astype(np.uint16)
    wide = (h.astype(np.uint32) << np.uint32(16)) if fmt == "bf16" else h.view(np.float16).astype(np.float32).view(np.uint32)
    r = unit(function, wide)
    nan = (r & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    if fmt == "bf16":
        out = (r >> np.uint32(16)).astype(np.uint16)
    else:
        out = _f32_to_f16_rz(r)
    return np.where(nan, np.uint16(0x7FFF), out).astype(np.uint16)


def _f32_to_f16_rz(r: np.ndarray) -> np.ndarray:
    """f32 words -> f16 words truncated toward zero; at or past 2^16, infinity (the unit's overflow)."""
    f = r.view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        h = f.astype(np.float16)
        away = np.abs(h.astype(np.float32)) > np.abs(f)
        h = np.where(away, np.nextafter(h, np.float16(0)), h).astype(np.float16)
        h = np.where(np.abs(f) >= np.float32(65536.0), np.copysign(np.float16(np.inf), h), h).astype(np.float16)
    return h.view(np.uint16)


def form(spelling: str, *operands) -> np.ndarray:
    """A PTX form the unit runs (``fragsim.sfu.kernel.FORMS``) over uint32 words, broadcast."""
    from . import kernel
    code = kernel.FORMS.index(spelling)
    ops = np.broadcast_arrays(*(np.asarray(o) for o in operands))
    shape = ops[0].shape
    a = np.ascontiguousarray(ops[0], np.uint32).reshape(-1)
    b = np.ascontiguousarray(ops[1], np.uint32).reshape(-1) if len(ops) > 1 else a
    sq, tabs = _tables()
    return kernel.form(code, a, b, tabs, sq).reshape(shape)
