"""Matrix bits <-> per-lane registers, through the fragment maps of the instruction table.

Leading (batch) dimensions are flattened to one before indexing, so any number of them
works (up to NumPy's 64 dimensions in all).
"""

from __future__ import annotations

import numpy as np

from fragsim.validate import array
from fragsim.facts.formats import IntFormat
from fragsim.instructions import lookup


def _first_bad(bad: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(bad)[0])


def _check_matrix(form, operand, matrix) -> np.ndarray:
    fmt = form.fmt(operand)
    m = array(matrix, f"operand {operand} of {form.name}")
    shape = form.matrix_shape(operand)
    if m.dtype.kind == "f":
        raise TypeError(f"operand {operand} of {form.name}: expected {fmt.name} bit patterns "
                        f"({np.dtype(fmt.dtype).name}), got float dtype {m.dtype}; convert with "
                        f"fragsim.{'facts.formats.int_to_bits' if isinstance(fmt, IntFormat) else 'to_bits'}"
                        f"(values, {fmt.name!r})")
    if m.dtype.kind not in "ui":
        raise TypeError(f"operand {operand} of {form.name}: expected {np.dtype(fmt.dtype).name} bit "
                        f"patterns, got dtype {m.dtype}")
    if m.ndim < 2 or m.shape[-2:] != shape:
        raise ValueError(f"operand {operand} of {form.name}: expected a matrix shaped (..., {shape[0]}, "
                         f"{shape[1]}), got shape {m.shape}")
    # a 64-bit word can exceed nothing but a negative value (compared as Python ints: uint64)
    limit = 1 << fmt.storage_bits
    if m.size and (int(m.min()) < 0 or int(m.max()) >= limit):
        idx = _first_bad((m < 0) | (m > limit - 1))
        raise ValueError(f"operand {operand} of {form.name}: {fmt.name} words must lie in "
                         f"[0, 2**{fmt.storage_bits}), got {int(m[idx])} at row {idx[-2]}, col {idx[-1]}"
                         + (f" of batch index {idx[:-2]}" if m.ndim > 2 else ""))
    return m.astype(np.uint64 if fmt.storage_bits > 32 else np.uint32)


def pack(form, operand, matrix) -> np.ndarray:
    """Matrix bits (..., rows, cols) -> registers uint32 (..., 32, nregs) of ``operand``."""
    form = lookup(form)
    m = _check_matrix(form, operand, matrix)
    rows, cols = form.coords(operand)           # (32, nregs, epr)
    bits = form.fmt(operand).storage_bits
    lead = m.shape[:-2]
    vals = m.reshape((-1,) + m.shape[-2:])[:, rows, cols]   # (n, 32, nregs, epr)
    w = form.words_per_elem(operand)
    if w > 1:   # register r holds word r % w of its element, low word first
        shift = (np.arange(rows.shape[1], dtype=np.uint64) % np.uint64(w)) * np.uint64(32)
        regs = ((vals[..., 0] >> shift) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        return regs.reshape(lead + regs.shape[1:])
    regs = np.zeros(vals.shape[:-1], dtype=np.uint32)
    for e in range(vals.shape[-1]):
        regs |= vals[..., e] << np.uint32(bits * e)
    return regs.reshape(lead + regs.shape[1:])


def check_regs(form, operand, regs, what: str = "registers") -> np.ndarray:
    """Validate a register array for ``operand``: integer words in [0, 2**32), shaped
    (..., 32, nregs); returns it as uint32."""
    form = lookup(form)
    r = array(regs, f"operand {operand} of {form.name}: {what}")
    n = form.nregs(operand)
    if r.dtype.kind not in "ui":
        raise TypeError(f"operand {operand} of {form.name}: {what} must be uint32 words, got dtype {r.dtype}")
    if r.ndim < 2 or r.shape[-2:] != (32, n):
        raise ValueError(f"operand {operand} of {form.name}: expected {what} shaped (..., 32, {n}) "
                         f"({n} registers per lane), got shape {r.shape}")
    # A negative int8/16/32 word would otherwise wrap to 0xFF..., a silent wrong register.
    if r.size and (r.dtype.kind == "i" or r.dtype.itemsize > 4):
        bad = (r < 0) | (r > 0xFFFFFFFF)
        if bad.any():
            idx = _first_bad(bad)
            raise ValueError(f"operand {operand} of {form.name}: {what} must be 32-bit words in "
                             f"[0, 2**32), got {int(r[idx])} at lane {idx[-2]}, register {idx[-1]}"
                             + (f" of batch index {idx[:-2]}" if r.ndim > 2 else ""))
    return r.astype(np.uint32, copy=False)


def unpack(form, operand, regs) -> np.ndarray:
    """Registers uint32 (..., 32, nregs) -> matrix bits (..., rows, cols) of ``operand``."""
    form = lookup(form)
    r = check_regs(form, operand, regs)
    fmt = form.fmt(operand)
    rows, cols = form.coords(operand)
    bits = fmt.storage_bits
    mask = np.uint32((1 << bits) - 1) if bits < 32 else np.uint32(0xFFFFFFFF)
    lead = r.shape[:-2]
    r = r.reshape((-1,) + r.shape[-2:])
    out = np.zeros((r.shape[0],) + form.matrix_shape(operand), dtype=fmt.dtype)
    w = form.words_per_elem(operand)
    if w > 1:   # the element of registers r..r+w-1 from its words, low word first
        val = np.zeros(r.shape[:-1] + (r.shape[-1] // w,), np.uint64)
        for i in range(w):
            val |= r[..., i::w].astype(np.uint64) << np.uint64(32 * i)
        out[:, rows[:, ::w, 0], cols[:, ::w, 0]] = val
        return out.reshape(lead + out.shape[1:])
    for e in range(rows.shape[-1]):
        out[:, rows[..., e], cols[..., e]] = ((r >> np.uint32(bits * e)) & mask).astype(fmt.dtype)
    return out.reshape(lead + out.shape[1:])
