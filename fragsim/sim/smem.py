"""Shared memory as a 1-D array of bytes, and the warp instructions that read and write it.

``smem`` is a 1-D ``uint8`` array, one CTA's shared memory (no larger than the default
architecture's ``smem_per_cta``: 227 KB on sm_90); ``addrs`` are the 32 lanes' byte offsets into it
(lane order), batched as ``(..., 32)`` for the loads.  Values move as little-endian words, as on the
GPU.  Each function picks its instruction's entry from the shared-memory table
(``fragsim.instructions.SHARED_OPS``) and takes every fact from it: which lanes give addresses,
the bytes per lane, the ldmatrix data movement, and how overlapping stores resolve (PTX leaves
that undefined; the entries record what the H200 did in gpu_check's overlap probes).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fragsim.validate import array, element_units_hint, hex_int
from fragsim.facts.hardware import BANK_BYTES, WARP_LANES
from fragsim.facts.smem import beyond_smem, smem_limit, smem_per_cta
from fragsim.instructions.shared_op import OVERLAP_HIGHEST_LANE, SharedOp
from fragsim.instructions.shared_ops import cp_async_op, matrix_op, plain_op

__all__ = ["ldmatrix", "stmatrix", "ld_shared", "st_shared", "cp_async", "lane_mask"]

LANES = np.arange(WARP_LANES)


def check_smem(smem, stores: bool = False) -> np.ndarray:
    if not isinstance(smem, np.ndarray):
        raise TypeError(f"smem must be a 1-D numpy uint8 array of bytes, got {type(smem).__name__}")
    if smem.dtype != np.uint8 or smem.ndim != 1:
        raise TypeError(f"smem must be a 1-D uint8 array of bytes, got dtype {smem.dtype} with shape {smem.shape}")
    if smem.size > smem_per_cta():
        raise ValueError(f"smem of {smem.size} bytes is larger than {smem_limit()}")
    if stores and not smem.flags.writeable:
        raise ValueError("smem is read-only; stores write into it in place")
    return smem


def check_addrs(addrs, nbytes: int, smem_size: int, lanes=None, what="address", align=None,
                single=False) -> np.ndarray:
    """int64 (..., 32) byte offsets; alignment and bounds of the lanes that are used.

    The bounds are compared without arithmetic on the addresses, so values near 2**63 (or uint64
    values above it) are reported as they are instead of overflowing.
    """
    a = array(addrs, "addrs")
    if a.dtype.kind not in "ui":
        raise TypeError(f"addrs must be integer byte offsets, got dtype {a.dtype}"
                        + (" (floats are not addresses)" if a.dtype.kind == "f" else ""))
    if a.ndim < 1 or a.shape[-1] != WARP_LANES or (single and a.ndim != 1):
        want = "(32,)" if single else "(..., 32)"
        raise ValueError(f"addrs must hold 32 byte offsets (one per lane, shape {want}), got shape {a.shape}")
    used = np.broadcast_to(np.ones(WARP_LANES, bool) if lanes is None else np.asarray(lanes, bool), a.shape)
    limit = smem_size - nbytes
    bad = used.copy() if limit < 0 else used & (a > limit)
    if a.dtype.kind == "i":
        bad |= used & (a < 0)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        v = int(a[idx])
        why = beyond_smem(v, nbytes, what) or f"{what} {hex_int(v)} (+{nbytes} bytes) lies outside smem of {smem_size} bytes"
        raise ValueError(f"{_where(idx)}lane {idx[-1]}: {why}")
    a = np.where(used, a, 0).astype(np.int64)
    align = nbytes if align is None else align
    bad = used & (a % align != 0)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        raise ValueError(f"{_where(idx)}lane {idx[-1]}: {what} {hex_int(a[idx])} is not {align}-byte aligned"
                         + element_units_hint(a[used], align))
    return a


#: Lanes a batched load gathers at once: its byte indices take ~10 times the registers it returns.
BLOCK_LANES = 1 << 19


def _in_blocks(a: np.ndarray, nregs: int, load) -> np.ndarray:
    """A batched load of checked addresses ``a`` (..., 32), ``BLOCK_LANES`` lanes at a time."""
    rows = a.reshape(-1, WARP_LANES)
    out = np.empty((rows.shape[0], WARP_LANES, nregs), np.uint32)
    step = BLOCK_LANES // WARP_LANES
    for i in range(0, rows.shape[0], step):
        out[i:i + step] = load(rows[i:i + step])
    return out.reshape(a.shape + (nregs,))


def _where(idx) -> str:
    return f"instruction {idx[:-1] if len(idx) > 2 else idx[0]}, " if len(idx) > 1 else ""


def lane_mask(mask) -> np.ndarray:
    """An active-lane mask (None = all, an int with bit i = lane i, or 32 booleans) -> bool (32,)."""
    if mask is None:
        return np.ones(WARP_LANES, bool)
    m = array(mask, "mask")
    if m.dtype == bool:
        if m.shape != (WARP_LANES,):
            raise ValueError(f"mask must be 32 booleans (one per lane) or an int bit mask, got shape {m.shape}")
        return m.copy()
    if m.ndim == 0 and m.dtype.kind in "ui":
        v = int(m)
        if not 0 <= v < 1 << WARP_LANES:
            raise ValueError(f"mask {hex_int(v)} does not fit in 32 bits (bit i = lane i)")
        return ((v >> LANES) & 1).astype(bool)
    raise TypeError(f"mask must be an int bit mask (bit i = lane i) or 32 booleans, got {m.dtype} {m.shape}")


def check_words(values, shape, what: str) -> np.ndarray:
    """32-bit register words: integers in [0, 2**32), exactly ``shape``."""
    v = array(values, what)
    if v.dtype.kind not in "ui" or v.shape != shape:
        raise ValueError(f"{what} must be uint32 words shaped {shape}, got {v.dtype} {v.shape}")
    bad = (v < 0) | (v > 0xFFFFFFFF) if v.dtype.kind == "i" else v > 0xFFFFFFFF
    if bad.any():
        lane, reg = (int(x) for x in np.argwhere(bad)[0])
        raise ValueError(f"lane {lane}: {what} word {reg} = {int(v[lane, reg])} is not a 32-bit value (0..2**32-1)")
    return v.astype(np.uint32)


# ---------------------------------------------------------------------------------------------
# ldmatrix / stmatrix

@lru_cache(maxsize=None)
def matrix_movement(op: SharedOp):
    """(src lane, 16-bit column) of each (lane, reg, half) of an ldmatrix/stmatrix entry, and the order
    stmatrix writes them in (the data movement of the table's entry; read-only, computed once)."""
    if op.movement is None:          # only the ldmatrix/stmatrix entries carry one
        raise ValueError(f"{op.name}: has no data-movement layout (not an ldmatrix/stmatrix entry)")
    src, col = op.movement.table()   # (32, num, 2)
    # Matrices (= phases) in order; within one, lower rows written last so that they win.
    order = np.lexsort((col.ravel(), -src.ravel(), src.ravel() // op.phase_lanes))
    for x in (src, col, order):
        x.setflags(write=False)
    return src, col, order


def _row_lanes(op: SharedOp) -> np.ndarray:
    return LANES < op.address_lanes


def ldmatrix(smem, addrs, num, trans=False) -> np.ndarray:
    """``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16`` -> uint32 (..., 32, num).

    Lanes 8i..8i+7 give the row addresses of matrix i; the other lanes' addresses are
    ignored (not even checked).  Each row is 16 bytes and must be 16-byte aligned.
    """
    smem = check_smem(smem)
    op = matrix_op("ldmatrix", num, trans)
    a = check_addrs(addrs, op.bytes_per_addr, smem.size, _row_lanes(op), op.what)
    if a.size > BLOCK_LANES:
        return _in_blocks(a, op.nregs, lambda rows: ldmatrix(smem, rows, num, trans))
    src, col, _ = matrix_movement(op)
    idx = a[..., src] + 2 * col                                   # (..., 32, num, 2)
    halves = smem[idx].astype(np.uint32) | (smem[idx + 1].astype(np.uint32) << 8)
    return halves[..., 0] | (halves[..., 1] << 16)


def _last_writer_wins(smem, idx, vals):
    """Write bytes in order; where an index repeats the last value in order wins."""
    idx = idx.reshape(-1)
    vals = vals.reshape(-1)
    rev_first = np.unique(idx[::-1], return_index=True)[1]
    keep = idx.size - 1 - rev_first
    smem[idx[keep]] = vals[keep]


def stmatrix(smem, addrs, regs, num, trans=False) -> None:
    """``stmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16``: writes ``smem`` in place.

    ``regs`` is uint32 (32, num).  Overlapping rows are undefined in PTX; as the hardware
    did, a later matrix overwrites an earlier one and within a matrix the lowest row wins.
    """
    smem = check_smem(smem, stores=True)
    op = matrix_op("stmatrix", num, trans)
    a = check_addrs(addrs, op.bytes_per_addr, smem.size, _row_lanes(op), op.what, single=True)
    r = check_words(regs, (WARP_LANES, op.nregs), f"{op.name} regs")
    src, col, order = matrix_movement(op)
    idx = a[src] + 2 * col                                        # (32, num, 2)
    halves = np.stack([r & 0xFFFF, r >> 16], axis=-1)             # (32, num, 2)
    byte_idx = np.stack([idx, idx + 1], axis=-1).reshape(-1, 2)[order]
    byte_val = np.stack([halves & 0xFF, halves >> 8], axis=-1).reshape(-1, 2)[order]
    _last_writer_wins(smem, byte_idx, byte_val.astype(np.uint8))


# ---------------------------------------------------------------------------------------------
# plain loads and stores, cp.async

def ld_shared(smem, addrs, nbytes, mask=None, element_bytes=None) -> np.ndarray:
    """``ld.shared`` of 1, 2, 4, 8 or 16 bytes per lane -> uint32 (..., 32, nbytes // element_bytes).

    Each register holds one element of ``element_bytes``, zero-extended (``.u8``/``.u16``): by
    default the whole access up to 4 bytes, else 4-byte words (``.v2.b32``, ``.v4.b32``); 1 or 2 for
    the vectors of 8- and 16-bit elements (``nbytes=4, element_bytes=1``: ``ld.shared.v4.u8``, four
    registers).  Inactive lanes read 0.
    """
    smem = check_smem(smem)
    op = plain_op("ld", nbytes, element_bytes)
    m = lane_mask(mask)
    a = check_addrs(addrs, op.bytes_per_addr, smem.size, m, op.what)
    if a.size > BLOCK_LANES:
        return _in_blocks(a, op.nregs, lambda rows: ld_shared(smem, rows, nbytes, mask, element_bytes))
    nb, e = op.bytes_per_addr, op.element_bytes
    b = np.zeros(a.shape + (nb,), np.uint32)
    b[..., m, :] = smem[a[..., m, None] + np.arange(nb)]            # only active lanes touch smem
    elems = b.reshape(b.shape[:-1] + (op.nregs, e))
    return (elems << (8 * np.arange(e, dtype=np.uint32))).sum(-1, dtype=np.uint32)


def _store_bytes(smem, op: SharedOp, a, data_bytes, m):
    """data_bytes (32, nbytes) uint8, written as ``op.overlap`` says: phase by phase (``phase_lanes``
    lanes each) and within a phase from the highest lane down, so that the lowest lane of the last
    phase touching a byte wins; or lane by lane upwards, so that the highest lane wins."""
    per_phase = 1 if op.overlap == OVERLAP_HIGHEST_LANE else op.phase_lanes
    order = np.lexsort((-LANES, LANES // per_phase))
    lanes = order[m[order]]
    idx = a[lanes][:, None] + np.arange(op.bytes_per_addr)
    _last_writer_wins(smem, idx, data_bytes[lanes])


def st_shared(smem, addrs, values, nbytes, mask=None, element_bytes=None) -> None:
    """``st.shared`` of 1, 2, 4, 8 or 16 bytes per lane; ``values`` uint32 (32, nbytes // element_bytes),
    one element of ``element_bytes`` per register (as ``ld_shared``: ``nbytes=4, element_bytes=1`` is
    ``st.shared.v4.u8``), each below 2**(8 * element_bytes).

    PTX leaves the winner undefined when lanes store to the same bytes; as on the hardware,
    the lanes run in phases (32, 16 or 8 lanes for <=4, 8, 16 bytes), a later phase
    overwrites an earlier one and within a phase the lowest lane wins.
    """
    smem = check_smem(smem, stores=True)
    op = plain_op("st", nbytes, element_bytes)
    m = lane_mask(mask)
    a = check_addrs(addrs, op.bytes_per_addr, smem.size, m, op.what, single=True)
    v = check_words(values, (WARP_LANES, op.nregs), f"{op.name} values")
    e = op.element_bytes
    if e < BANK_BYTES and (v >> (8 * e)).any():
        lane, reg = (int(x) for x in np.argwhere(v >> (8 * e))[0])
        raise ValueError(f"lane {lane}: {op.name} value {reg} = {int(v[lane, reg]):#x} does not fit in {e} byte(s)")
    data = v.astype("<u4").view(np.uint8).reshape(WARP_LANES, op.nregs, BANK_BYTES)[:, :, :e]
    _store_bytes(smem, op, a, data.reshape(WARP_LANES, -1), m)


def cp_async(smem, addrs, src, nbytes, mask=None, level="ca") -> None:
    """``cp.async.{level}`` of 4, 8 or 16 bytes per lane into shared memory; ``src`` uint8 (32, nbytes).

    The global-memory side is given as the bytes each lane copies.  Where copies overlap
    (undefined in PTX) fragsim does what the hardware did: for ``.ca`` the highest lane
    wins; ``.cg`` (16 bytes only) runs in 4 phases of 8 lanes, a later phase overwrites an
    earlier one and within a phase the lowest lane wins.
    """
    smem = check_smem(smem, stores=True)
    op = cp_async_op(level, nbytes)
    m = lane_mask(mask)
    a = check_addrs(addrs, op.bytes_per_addr, smem.size, m, op.what, single=True)
    s = array(src, f"{op.name}: src")
    if s.dtype != np.uint8 or s.shape != (WARP_LANES, op.bytes_per_addr):
        raise ValueError(f"{op.name}: src must be the copied bytes, uint8 shaped (32, {op.bytes_per_addr}), "
                         f"got {s.dtype} {s.shape}")
    _store_bytes(smem, op, a, s, m)
