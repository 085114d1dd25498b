"""Matrix bits <-> per-thread registers, through the fragment maps of the instruction table.

One path for both instruction tables: an ``mma.sync`` form's operands live in a warp's registers,
``uint32 (..., 32, nregs)``; a ``wgmma`` form's register A and its C/D in a warpgroup's,
``(..., 128, nregs)``.  Both tables give, per (thread, register, element of the register), the
(row, col) the element holds; ``plan`` turns that map, once per (form, operand), into two gather
indices, so that ``pack`` and ``unpack`` are one ``np.take`` each between views.

The registers of a batch element, read in memory order (thread, register, then the register's
elements from the low bits up; an f64 as two registers, low word first), are a row of *slots*
of the format's width, and a little-endian view of the registers *is* that row.  The matrix,
read row by row, is a *stream* of elements of the same width (4-bit and 1-bit elements packed
two or eight to a byte first, the first in the low bits).  Packing gathers the stream into slot
order; unpacking is the inverse gather.  Where the map sends g consecutive slots to g consecutive
elements of the stream (two f16 of a register to two adjacent columns, the d0/d1 pair of f32
accumulators, the 32 bits of a .b1 A register), the gather moves them as one word of up to 8
bytes.  Where a register's sub-byte elements run down a column (B of the .s4/.b1 forms), the
stream reads the matrix column by column instead, so that each gathered word is whole bytes.

Leading (batch) dimensions are flattened to one, so any number of them works (up to NumPy's 64
dimensions in all).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Union

import numpy as np

from fragsim.facts.formats import FloatFormat, IntFormat
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions import MmaForm, check_operand, lookup
from fragsim.validate import array

if TYPE_CHECKING:
    from fragsim.instructions.wgmma import WgmmaForm

__all__ = ["pack", "unpack", "check_regs", "owners", "resolve", "plan", "RegisterPlan", "pack_plan", "unpack_plan",
           "check_plan_regs"]

WIDEST_GATHER_BYTES = 8    # the widest word np.take moves as one (uint64)
# Read the matrix column by column only where row by row a gathered run would be under a byte:
# for 8-bit and wider formats the transposing copy costs more than the wider gather saves.
TRANSPOSE_BELOW_BITS = 8


def _wgmma_module():
    # instructions.wgmma builds its 528-form table on import (~20 ms): load it only for a wgmma
    # form; an already-built WgmmaForm means the module is loaded.
    return sys.modules.get("fragsim.instructions.wgmma")


def resolve(form):
    """An ``MmaForm`` or ``WgmmaForm`` from either table's spelling (or the form itself).

    Every wgmma shape is m64nNkK and mma.sync has none of M = 64, so a spelling's shape (or PTX's
    ``wgmma.`` prefix) says which table it belongs to; each table's lookup gives its own refusal."""
    if isinstance(form, MmaForm):
        return form
    wg = _wgmma_module()
    if wg is not None and isinstance(form, wg.WgmmaForm):
        return form
    if isinstance(form, str) and form.strip().lower().startswith(("wgmma.", "m64")):
        from fragsim.instructions.wgmma import lookup_wgmma
        return lookup_wgmma(form)
    if not isinstance(form, str):
        raise TypeError(f"form must be a PTX mma.sync or wgmma spelling (str), e.g. "
                        f"'m16n8k16.row.col.f32.bf16.bf16.f32' or 'm64n64k16.f32.bf16.bf16', got {type(form).__name__}")
    return lookup(form)


@dataclass(frozen=True, eq=False)
class RegisterPlan:
    """How one operand of one form moves between its matrix and its registers (everything a call
    needs, worked out once)."""
    form: Union[MmaForm, "WgmmaForm"]
    operand: str                    # "A" .. "D"
    what: str                       # "operand A of m16n8k16.row.col.f32.bf16.bf16.f32", for messages
    fmt: Union[FloatFormat, IntFormat]
    threads: int                    # 32 (a warp) or 128 (a warpgroup)
    thread: str                     # what messages call one of them: "lane" or "thread"
    per_thread: str                 # "per lane" or "per thread of the warpgroup"
    nregs: int                      # uint32 registers per thread
    shape: tuple[int, int]          # the matrix's rows, cols
    bits: int                       # the format's storage bits
    elem: np.dtype                  # little-endian unsigned word of one matrix element ('<u1' below 8 bits)
    transposed: bool                # the element stream is the matrix column by column
    wide: np.dtype                  # the word one gather step moves: a run of elements of the stream
    pack_index: np.ndarray          # register word i <- stream word pack_index[i]
    unpack_index: np.ndarray        # stream word j <- register word unpack_index[j]
    slots: np.ndarray               # slot s holds matrix element slots[s] (row-major flat index)


def _run(stream: np.ndarray, most: int) -> int:
    """The longest aligned run (a power of two, at most ``most``): every run of that many slots holds
    that many consecutive elements of the stream, the first at a multiple of it."""
    g = 1
    while 2 * g <= most and stream.size % (2 * g) == 0:
        runs = stream.reshape(-1, 2 * g)
        if not ((runs[:, 0] % (2 * g) == 0).all() and (runs == runs[:, :1] + np.arange(2 * g)).all()):
            break
        g *= 2
    return g


def _plan(form, op: str) -> RegisterPlan:
    rows, cols = form.coords(op)                    # (threads, nregs, elements per register)
    fmt = form.fmt(op)
    bits = fmt.storage_bits
    w = max(1, bits // 32)                          # an f64 spans two registers, both in the map
    rows, cols = rows[:, ::w], cols[:, ::w]
    nrows, ncols = form.matrix_shape(op)
    slots = (rows * ncols + cols).ravel()
    if not np.array_equal(np.sort(slots), np.arange(nrows * ncols)):
        raise RuntimeError(f"operand {op} of {form.name}: the fragment map is not one slot per matrix element")
    # The stream the gather reads: the matrix row by row, or column by column where a register's
    # elements run down a column and row by row a run would not fill a byte (B of .s4/.b1).
    most = WIDEST_GATHER_BYTES * 8 // bits
    by_col = (cols * nrows + rows).ravel()
    g_row, g_col = _run(slots, most), _run(by_col, most)
    transposed = g_col > g_row and g_row * bits < TRANSPOSE_BELOW_BITS
    stream, g = (by_col, g_col) if transposed else (slots, g_row)
    if g * bits % 8:
        raise RuntimeError(f"operand {op} of {form.name}: no register's elements fill a byte of the matrix")
    pack_index = (stream[::g] // g).astype(np.intp)
    unpack_index = np.argsort(pack_index).astype(np.intp)
    for a in (pack_index, unpack_index, slots):
        a.setflags(write=False)
    warp = rows.shape[0] == WARP_LANES
    return RegisterPlan(form, op, f"operand {op} of {form.name}", fmt, rows.shape[0], "lane" if warp else "thread",
                        "per lane" if warp else "per thread of the warpgroup", form.nregs(op), (nrows, ncols), bits,
                        np.dtype(f"<u{max(1, bits // 8)}"), transposed, np.dtype(f"<u{g * bits // 8}"),
                        pack_index, unpack_index, slots)


@lru_cache(maxsize=4096)
def _cached_plan(form, operand) -> RegisterPlan:
    return _plan(resolve(form), check_operand(operand))


def plan(form, operand) -> RegisterPlan:
    """The ``RegisterPlan`` of ``operand`` of ``form`` (an mma.sync or wgmma form), built once."""
    try:
        return _cached_plan(form, operand)
    except TypeError:       # an unhashable argument (a list, an array): the refusals, uncached
        return _plan(resolve(form), check_operand(operand))


def _first_bad(bad: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(bad)[0])


def _check_matrix(p: RegisterPlan, matrix) -> np.ndarray:
    """``matrix`` validated, as little-endian words of the format, shaped (..., rows, cols)."""
    fmt = p.fmt
    m = array(matrix, p.what)
    if m.dtype.kind == "f":
        raise TypeError(f"{p.what}: expected {fmt.name} bit patterns "
                        f"({np.dtype(fmt.dtype).name}), got float dtype {m.dtype}; convert with "
                        f"fragsim.{'facts.formats.int_to_bits' if isinstance(fmt, IntFormat) else 'to_bits'}"
                        f"(values, {fmt.name!r})")
    if m.dtype.kind not in "ui":
        raise TypeError(f"{p.what}: expected {np.dtype(fmt.dtype).name} bit patterns, got dtype {m.dtype}")
    if m.ndim < 2 or m.shape[-2:] != p.shape:
        raise ValueError(f"{p.what}: expected a matrix shaped (..., {p.shape[0]}, {p.shape[1]}), got shape {m.shape}")
    # an unsigned dtype no wider than the format holds nothing else; a 64-bit word can exceed
    # nothing but a negative value (compared as Python ints: uint64)
    if m.size and not (m.dtype.kind == "u" and m.dtype.itemsize * 8 <= p.bits):
        limit = 1 << p.bits
        if (m.dtype.kind == "i" and int(m.min()) < 0) or int(m.max()) >= limit:
            idx = _first_bad((m < 0) | (m > limit - 1))
            raise ValueError(f"{p.what}: {fmt.name} words must lie in [0, 2**{p.bits}), got {int(m[idx])} at "
                             f"row {idx[-2]}, col {idx[-1]}" + (f" of batch index {idx[:-2]}" if m.ndim > 2 else ""))
    return m.astype(p.elem, copy=False)


def _rows(x: np.ndarray, width: int) -> np.ndarray:
    """``x`` as (batch, width), its rows contiguous (a view where the layout allows)."""
    x = x.reshape(-1, width)
    return x if x.strides[-1] == x.itemsize else np.ascontiguousarray(x)


def pack_plan(p: RegisterPlan, matrix) -> np.ndarray:
    """``pack`` with the plan already looked up."""
    m = _check_matrix(p, matrix)
    lead = m.shape[:-2]
    stream = _rows(m.swapaxes(-1, -2) if p.transposed else m, p.shape[0] * p.shape[1])
    if p.bits == 4:     # two elements a byte, the first in the low nibble: lo | hi << 8 -> lo | hi << 4
        pairs = stream.view("<u2")
        stream = (pairs | (pairs >> np.uint16(4))).astype(np.uint8)
    elif p.bits == 1:
        stream = np.packbits(stream, axis=-1, bitorder="little")
    regs = stream.view(p.wide).take(p.pack_index, axis=1)
    return regs.view("<u4").astype(np.uint32, copy=False).reshape(lead + (p.threads, p.nregs))


def unpack_plan(p: RegisterPlan, regs) -> np.ndarray:
    """``unpack`` with the plan already looked up."""
    r = check_plan_regs(p, regs)
    lead = r.shape[:-2]
    flat = _rows(r.astype("<u4", copy=False), p.threads * p.nregs)
    stream = flat.view(p.wide).take(p.unpack_index, axis=1).view(np.uint8 if p.bits < 8 else p.elem)
    if p.bits == 4:     # byte lo | hi << 4 -> the two bytes lo, hi (a little-endian lo | hi << 8)
        pairs = stream.astype("<u2")
        stream = ((pairs | (pairs << np.uint16(4))) & np.uint16(0x0F0F)).view(np.uint8)
    elif p.bits == 1:
        stream = np.unpackbits(stream, axis=-1, bitorder="little")
    out = stream.astype(p.fmt.dtype, copy=False)
    if p.transposed:
        out = np.ascontiguousarray(out.reshape((-1,) + p.shape[::-1]).swapaxes(-1, -2))
    return out.reshape(lead + p.shape)


def pack(form, operand, matrix) -> np.ndarray:
    """Matrix bits (..., rows, cols) -> registers uint32 (..., threads, nregs) of ``operand``.

    ``form``: an mma.sync form (``"m16n8k16.row.col.f32.bf16.bf16.f32"``: a warp, 32 lanes) or a
    wgmma form (``"m64n64k16.f32.bf16.bf16"``: a warpgroup, 128 threads; A, C and D)."""
    return pack_plan(plan(form, operand), matrix)


def unpack(form, operand, regs) -> np.ndarray:
    """Registers uint32 (..., threads, nregs) -> matrix bits (..., rows, cols) of ``operand``
    (the inverse of ``pack``)."""
    return unpack_plan(plan(form, operand), regs)


def check_regs(form, operand, regs, what: str = "registers") -> np.ndarray:
    """Validate a register array for ``operand``: integer words in [0, 2**32), shaped
    (..., threads, nregs); returns it as uint32."""
    return check_plan_regs(plan(form, operand), regs, what)


def check_plan_regs(p: RegisterPlan, regs, what: str = "registers") -> np.ndarray:
    """``check_regs`` with the plan already looked up."""
    r = array(regs, f"{p.what}: {what}")
    if r.dtype.kind not in "ui":
        raise TypeError(f"{p.what}: {what} must be uint32 words, got dtype {r.dtype}")
    if r.ndim < 2 or r.shape[-2:] != (p.threads, p.nregs):
        raise ValueError(f"{p.what}: expected {what} shaped (..., {p.threads}, {p.nregs}) "
                         f"({p.nregs} registers {p.per_thread}), got shape {r.shape}")
    # A negative int8/16/32 word would otherwise wrap to 0xFF..., a silent wrong register.
    if r.size and (r.dtype.kind == "i" or r.dtype.itemsize > 4):
        bad = (r < 0) | (r > 0xFFFFFFFF)
        if bad.any():
            idx = _first_bad(bad)
            raise ValueError(f"{p.what}: {what} must be 32-bit words in [0, 2**32), got {int(r[idx])} at "
                             f"{p.thread} {idx[-2]}, register {idx[-1]}"
                             + (f" of batch index {idx[:-2]}" if r.ndim > 2 else ""))
    return r.astype(np.uint32, copy=False)


def owners(form, operand) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(thread, register, element of the register) holding each (row, col) of ``operand``: three
    int arrays shaped like the matrix (an f64 element: its low word's register)."""
    p = plan(form, operand)
    w = max(1, p.bits // 32)
    epr = max(1, 32 // p.bits)
    slot = np.empty(p.slots.size, np.int64)
    slot[p.slots] = np.arange(p.slots.size)
    slot = slot.reshape(p.shape)
    per_thread = p.nregs // w * epr
    return slot // per_thread, slot % per_thread // epr * w, slot % epr
