"""An mma's operands as element words, for ``fragsim.trace_fragments`` (``fragsim.trace``):
registers -> the elements of A, B, C (``fragsim.unpack``'s map, taken once per form), D's elements
-> its registers (``fragsim.pack``'s), a wgmma's operands read from shared memory through its
descriptors by fragsim's operand model, which lane and register hold each position of a fragment,
and the registers a PTX line names for an operand.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fragsim.ptx import ast as A

__all__ = ["operand_elements", "pack_words", "wgmma_operands", "positions", "operand_names"]


@lru_cache(maxsize=None)
def element_map(form, op: str) -> np.ndarray | None:
    """int64 (rows, cols): where each element of an operand sits among the warp's register
    elements, lane-major ((lane * registers + register) * per + part); None for 64-bit and
    sub-byte elements (``fragsim.unpack`` reads those)."""
    bits = form.fmt(op).storage_bits
    if bits not in (8, 16, 32):
        return None
    rows, cols = form.coords(op)                              # (lanes, registers, per)
    lanes, nregs, per = rows.shape
    out = np.empty(form.matrix_shape(op), np.int64)
    out[rows, cols] = np.arange(lanes * nregs * per).reshape(lanes, nregs, per)
    return out


def operand_elements(form, op: str, regs: np.ndarray) -> np.ndarray:
    """An mma operand's registers (units, lanes, registers) uint32 -> its elements' bits (units,
    rows, cols): ``fragsim.unpack`` by a table taken once per form."""
    m = element_map(form, op)
    if m is None:
        from fragsim.sim.registers import unpack
        return unpack(form, op, regs)
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32}[form.fmt(op).storage_bits]
    return np.ascontiguousarray(regs, np.uint32).view(dt).reshape(len(regs), -1)[:, m]


@lru_cache(maxsize=None)
def d_slots(form) -> np.ndarray:
    """int64 (threads, words, parts): the index ``row * N + col`` of the D element each part of each
    32-bit word of D holds -- its two halves for a 16-bit D, the whole word else (``fragsim.pack``'s
    map, once per form)."""
    from fragsim.sim.registers import pack

    M, N = form.matrix_shape("D")
    idx = np.arange(M * N).reshape(M, N)
    if form.fmt("D").storage_bits == 16:
        w = pack(form, "D", idx.astype(np.uint16)).astype(np.int64)
        return np.stack([w & 0xFFFF, w >> 16], -1)
    return pack(form, "D", idx.astype(np.uint32)).astype(np.int64)[..., None]


def pack_words(form, values: np.ndarray) -> np.ndarray:
    """D's element bits (units, M * N) -> its registers (units, threads, words)."""
    from fragsim.sim.registers import pack

    bits = form.fmt("D").storage_bits
    if bits == 64:
        M, N = form.matrix_shape("D")
        return pack(form, "D", values.reshape(-1, M, N))
    m = d_slots(form)
    v = values.astype(np.uint32)[:, m]                               # (units, threads, words, per)
    if bits == 16:
        return v[..., 0] | (v[..., 1] << np.uint32(16))
    return v[..., 0]


def wgmma_operands(form, a, b, smem, trans_a, trans_b) -> tuple[np.ndarray, np.ndarray]:
    """A (g, M, K) and B (g, K, N) element words of a wgmma: A from its registers or, as B, read from
    shared memory through the descriptors by fragsim's operand model."""
    from fragsim.sim.registers import unpack
    from fragsim.sim.wgmma import gather_operand

    M, N, K = form.shape
    if a.dtype == np.uint32 and a.ndim == 3:
        A_ = unpack(form, "A", a)
    else:
        A_ = gather_operand(smem, a, rows=M, k=K, elem_bits=form.fmt("A").storage_bits,
                            major="MN" if trans_a else "K", name="a")
    B_ = gather_operand(smem, b, rows=N, k=K, elem_bits=form.fmt("B").storage_bits, major="MN" if trans_b else "K",
                        name="b")
    return A_, B_.swapaxes(-1, -2)


def positions(form, operand: str, threads: int):
    """(lane, register, element) of each position (row, col) of the operand's fragment: int arrays
    of the matrix's shape (-1 where no register holds it), from the form's fragment map."""
    rows, cols = form.coords(operand)                        # (threads, nregs, epr)
    shape = form.matrix_shape(operand)
    lane, reg, half = (np.full(shape, -1, np.int64) for _ in range(3))
    t, r, h = np.meshgrid(np.arange(rows.shape[0]), np.arange(rows.shape[1]), np.arange(rows.shape[2]),
                          indexing="ij")
    lane[rows, cols], reg[rows, cols], half[rows, cols] = t, r, h
    return lane, reg, half


def operand_names(ev, operand: str) -> list | None:
    """The registers the PTX line of ``ev`` (a trace ``Event``) names for ``operand`` (None for a
    descriptor or an odd width)."""
    ops = ev.op.instr.operands
    k = {"D": 0, "A": 1, "B": 2}[operand]
    x = ops[k] if k < len(ops) else None
    if not isinstance(x, A.Vec):
        return None
    names = [getattr(i, "name", str(i)) for i in x.items]
    return names if len(names) == ev.form.nregs(operand) else None
