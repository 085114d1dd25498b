"""Where the epilogue stores D, for ``fragsim.trace_fragments`` (``fragsim.trace``): the
accumulators hold identities of (A's row, B's column) written in the digits the output format
holds exactly (f16 2048, bf16 256, f32 2**24); the output arrays of the passes that carry them are
decoded back, and every D element must have landed at its row and column of the output.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ids import GARBAGE, NONE, combine
from .passes import Tracing

__all__ = ["EXACT", "Placement", "out_formats", "placement"]


#: Integers each output format holds exactly (D's identities are digits 1..base of these).
EXACT = {"f16": 2048, "bf16": 256, "f32": 1 << 24, "f64": 1 << 31, "s32": (1 << 31) - 1, "s8": 127}
#: The formats an output array's dtype may hold, tried in order when its values are decoded.
OUT_FORMATS = {"float16": ("f16",), "float32": ("f32",), "float64": ("f64",), "bfloat16": ("bf16",),
               "uint16": ("f16", "bf16"), "int16": ("f16", "bf16"), "uint32": ("s32", "f32"),
               "int32": ("s32", "f32"), "int8": ("s8",), "uint8": ("s8",)}


def out_formats(dtype: np.dtype) -> tuple[str, ...]:
    """The formats D's array may hold (``OUT_FORMATS``); ValueError for one not traced."""
    fmts = OUT_FORMATS.get(dtype.name)
    if fmts is None:
        raise ValueError(f"d: D's array holds {dtype.name}; traced are f16, bf16, f32, f64, 16-bit (f16 or bf16 "
                         "bits), 32-bit (s32 or f32 bits) and 8-bit integer outputs")
    return fmts


def _decode_out(values: np.ndarray, fmt: str, base: int) -> np.ndarray:
    """Output elements -> D digit + 1 (1..base), 0 where untouched, GARBAGE where no identity."""
    if fmt in ("s32", "s8"):
        v = values.view(np.int32 if values.dtype.itemsize == 4 else np.int8).astype(np.float64)
    elif fmt == "bf16":
        v = (values.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    else:
        v = values.view({"f16": np.float16, "f32": np.float32, "f64": np.float64}[fmt]).astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(v) & (v == np.round(v)) & (v >= 1) & (v <= base)
    return np.where(values.view(f"u{values.dtype.itemsize}") == 0, 0, np.where(ok, v, GARBAGE).astype(np.int64))


@dataclass
class Placement:
    """Where the D elements landed in the output (flat indices ``row * N + col``): ``tag`` per output
    element the D element stored there (NONE: none), ``landed`` per D element where it was stored
    (-1: nowhere), ``misplaced`` the output elements holding another element than their own,
    ``lost`` the D elements computed but stored nowhere; ``stored`` how many output elements hold
    one; ``untraced`` why the stores are not checked (None: they are)."""

    tag: np.ndarray
    landed: np.ndarray
    misplaced: np.ndarray
    lost: np.ndarray
    stored: int = 0
    untraced: str | None = None


def placement(t: Tracing, outputs: list, covered: np.ndarray) -> Placement:
    """Decode the passes' outputs (D as M x N each, one digit of the identities each) in the output
    format that reads fewest non-identities; ``covered``: the D elements some mma computes."""
    n = t.M * t.N
    none = Placement(np.full(n, NONE, np.int64), np.full(n, -1, np.int64), np.zeros(n, bool), np.zeros(n, bool))
    if not outputs:
        return none
    best = None
    for fmt in out_formats(t.md.dtype):
        dec = [_decode_out(o.reshape(-1), fmt, t.plan.d_base) for o in outputs]
        g = sum(int((x == GARBAGE).sum()) for x in dec)
        if best is None or g < best[0]:
            best = (g, dec)
    assert best is not None
    tag = combine(best[1], t.plan.d_base)
    tag = np.where(tag >= n, GARBAGE, tag)
    garbage = tag == GARBAGE
    if garbage.any():
        # values changed on the way (a scale, a bias): the ones still integers would be read as wrong places
        none.untraced = (f"D: {int(garbage.sum()):,} of the output's elements hold values that are no identity -- "
                         "the epilogue changes the accumulators' values (alpha, beta, bias, activation) or keeps "
                         "fewer bits than they need -- so where D is stored is not checked")
        return none
    pos = np.arange(n)
    landed = np.full(n, -1, np.int64)
    landed[tag[tag >= 0]] = pos[tag >= 0]
    return Placement(tag, landed, (tag >= 0) & (tag != pos), covered & (tag == NONE), int((tag >= 0).sum()))
