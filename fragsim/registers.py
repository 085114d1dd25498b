"""Matrix bits <-> per-lane registers, through the fragment maps of the instruction table."""

from __future__ import annotations

import numpy as np

from .instructions import lookup


def _check_matrix(form, operand, matrix) -> np.ndarray:
    fmt = form.fmt(operand)
    m = np.asarray(matrix)
    shape = form.matrix_shape(operand)
    if m.dtype.kind == "f":
        raise TypeError(f"operand {operand} of {form.name}: expected {fmt.name} bit patterns "
                        f"({np.dtype(fmt.dtype).name}), got float dtype {m.dtype}; convert with "
                        f"fragsim.to_bits(values, {fmt.name!r})")
    if m.dtype.kind not in "ui":
        raise TypeError(f"operand {operand} of {form.name}: expected {np.dtype(fmt.dtype).name} bit "
                        f"patterns, got dtype {m.dtype}")
    if m.ndim < 2 or m.shape[-2:] != shape:
        raise ValueError(f"operand {operand} of {form.name}: expected a matrix shaped (..., {shape[0]}, "
                         f"{shape[1]}), got shape {m.shape}")
    limit = 1 << fmt.storage_bits
    if m.size and (m.min() < 0 or m.max() >= limit):
        raise ValueError(f"operand {operand} of {form.name}: {fmt.name} words must lie in "
                         f"[0, 2**{fmt.storage_bits}), got values up to {int(m.max())}")
    return m.astype(np.uint32)


def pack(form, operand, matrix) -> np.ndarray:
    """Matrix bits (..., rows, cols) -> registers uint32 (..., 32, nregs) of ``operand``."""
    form = lookup(form)
    m = _check_matrix(form, operand, matrix)
    rows, cols = form.coords(operand)           # (32, nregs, epr)
    bits = form.fmt(operand).storage_bits
    vals = m[..., rows, cols]                    # (..., 32, nregs, epr)
    regs = np.zeros(vals.shape[:-1], dtype=np.uint32)
    for e in range(vals.shape[-1]):
        regs |= vals[..., e] << np.uint32(bits * e)
    return regs


def check_regs(form, operand, regs, what: str = "registers") -> np.ndarray:
    """Validate a register array for ``operand``; returns it as uint32."""
    form = lookup(form)
    r = np.asarray(regs)
    n = form.nregs(operand)
    if r.dtype.kind not in "ui":
        raise TypeError(f"operand {operand} of {form.name}: {what} must be uint32 words, got dtype {r.dtype}")
    if r.ndim < 2 or r.shape[-2:] != (32, n):
        raise ValueError(f"operand {operand} of {form.name}: expected {what} shaped (..., 32, {n}) "
                         f"({n} registers per lane), got shape {r.shape}")
    if r.dtype.itemsize > 4 and r.size and (r.min() < 0 or r.max() > 0xFFFFFFFF):
        raise ValueError(f"operand {operand} of {form.name}: {what} must fit in 32 bits")
    return r.astype(np.uint32, copy=False)


def unpack(form, operand, regs) -> np.ndarray:
    """Registers uint32 (..., 32, nregs) -> matrix bits (..., rows, cols) of ``operand``."""
    form = lookup(form)
    r = check_regs(form, operand, regs)
    fmt = form.fmt(operand)
    rows, cols = form.coords(operand)
    bits = fmt.storage_bits
    mask = np.uint32((1 << bits) - 1) if bits < 32 else np.uint32(0xFFFFFFFF)
    out = np.zeros(r.shape[:-2] + form.matrix_shape(operand), dtype=fmt.dtype)
    for e in range(rows.shape[-1]):
        out[..., rows[..., e], cols[..., e]] = ((r >> np.uint32(bits * e)) & mask).astype(fmt.dtype)
    return out
