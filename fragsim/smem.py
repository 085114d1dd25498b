"""Shared memory as a 1-D array of bytes, and the warp instructions that read and write it.

``smem`` is a 1-D ``uint8`` array; ``addrs`` are the 32 lanes' byte offsets into it (lane
order), optionally batched as ``(..., 32)``.  Values move as little-endian words, as on the
GPU.

Where several lanes store to the same bytes PTX leaves the winner undefined.  fragsim follows
what an H200 (sm_90) did in gpu_check's overlap probes: a store runs in phases (stmatrix: one
per 8x8 matrix; st.shared: 32, 16 or 8 lanes for <=4, 8, 16 bytes; cp.async.cg: 8 lanes);
a later phase overwrites an earlier one, and within a phase the lowest lane wins.
cp.async.ca is the exception: the highest lane wins.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .instructions import NUMS, ldsm_layout
from .instructions.ldmatrix import ROW_BYTES

__all__ = ["ldmatrix", "stmatrix", "ld_shared", "st_shared", "cp_async"]

_LE16 = np.array([1, 256], dtype=np.uint32)


def check_smem(smem) -> np.ndarray:
    if not isinstance(smem, np.ndarray):
        raise TypeError(f"smem must be a 1-D numpy uint8 array of bytes, got {type(smem).__name__}")
    if smem.dtype != np.uint8 or smem.ndim != 1:
        raise TypeError(f"smem must be a 1-D uint8 array of bytes, got dtype {smem.dtype} with shape {smem.shape}")
    return smem


def check_addrs(addrs, nbytes: int, smem_size: int, lanes=None, what="address", align=None) -> np.ndarray:
    """int64 (..., 32) byte offsets; checks alignment and bounds of the lanes that are used."""
    a = np.asarray(addrs)
    if a.dtype.kind not in "ui":
        raise TypeError(f"addrs must be integer byte offsets, got dtype {a.dtype}")
    if a.ndim < 1 or a.shape[-1] != 32:
        raise ValueError(f"addrs must hold 32 byte offsets (one per lane, shape (..., 32)), got shape {a.shape}")
    a = a.astype(np.int64)
    used = np.ones(32, bool) if lanes is None else np.asarray(lanes, bool)
    align = nbytes if align is None else align
    bad_align = (a % align != 0) & used
    if bad_align.any():
        idx = np.argwhere(bad_align)[0]
        lane = int(idx[-1])
        raise ValueError(f"lane {lane}: {what} {int(a[tuple(idx)]):#x} is not {align}-byte aligned")
    bad = ((a < 0) | (a + nbytes > smem_size)) & used
    if bad.any():
        idx = np.argwhere(bad)[0]
        raise ValueError(f"lane {int(idx[-1])}: {what} {int(a[tuple(idx)]):#x} (+{nbytes} bytes) lies "
                         f"outside smem of {smem_size} bytes")
    return a


def _check_num(num) -> int:
    if num not in NUMS:
        raise ValueError(f"num must be 1, 2 or 4 (ldmatrix .x1/.x2/.x4), got {num!r}")
    return int(num)


@lru_cache(maxsize=None)
def _ldsm_table(num: int, trans: bool):
    """(src lane, column) of each (lane, reg, half), and the order stmatrix writes them in."""
    src, col = ldsm_layout(num, trans).table()   # (32, num, 2)
    # Matrices (phases) in order; within one, lower rows written last so they win.
    order = np.lexsort((col.ravel(), -src.ravel(), src.ravel() // 8))
    for a in (src, col, order):
        a.setflags(write=False)
    return src, col, order


def _ldsm_byte_index(addrs: np.ndarray, num: int, trans: bool) -> np.ndarray:
    """Byte offset of each (…, lane, reg, half) element: (..., 32, num, 2)."""
    src, col, _ = _ldsm_table(num, trans)
    return addrs[..., src] + 2 * col


def _row_lanes(num: int) -> np.ndarray:
    return np.arange(32) < 8 * num


def ldmatrix(smem, addrs, num, trans=False) -> np.ndarray:
    """``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16`` -> uint32 (..., 32, num).

    Lanes 8i..8i+7 give the row addresses of matrix i; the other lanes' addresses are
    ignored (not even checked).  Each row is 16 bytes and must be 16-byte aligned.
    """
    smem = check_smem(smem)
    num = _check_num(num)
    a = check_addrs(addrs, ROW_BYTES, smem.size, _row_lanes(num), "ldmatrix row address")
    idx = _ldsm_byte_index(a, num, bool(trans))
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
    smem = check_smem(smem)
    num = _check_num(num)
    a = check_addrs(addrs, ROW_BYTES, smem.size, _row_lanes(num), "stmatrix row address")
    if a.ndim != 1:
        raise ValueError(f"stmatrix writes one smem: addrs must have shape (32,), got {a.shape}")
    r = np.asarray(regs)
    if r.dtype.kind not in "ui" or r.shape != (32, num):
        raise ValueError(f"stmatrix.x{num}: regs must be uint32 shaped (32, {num}), got {r.dtype} {r.shape}")
    r = r.astype(np.uint32)
    idx = _ldsm_byte_index(a, num, bool(trans))                  # (32, num, 2)
    halves = np.stack([r & 0xFFFF, r >> 16], axis=-1)            # (32, num, 2)
    order = _ldsm_table(num, bool(trans))[2]
    byte_idx = np.stack([idx, idx + 1], axis=-1).reshape(-1, 2)[order]
    byte_val = np.stack([halves & 0xFF, halves >> 8], axis=-1).reshape(-1, 2)[order]
    _last_writer_wins(smem, byte_idx, byte_val.astype(np.uint8))


_WIDTHS = (1, 2, 4, 8, 16)


def _check_width(nbytes) -> int:
    if nbytes not in _WIDTHS:
        raise ValueError(f"nbytes must be one of {_WIDTHS} (u8, u16, b32, v2.b32, v4.b32), got {nbytes!r}")
    return int(nbytes)


def lane_mask(mask) -> np.ndarray:
    """An active-lane mask (None = all, an int with bit i = lane i, or 32 booleans) -> bool (32,)."""
    if mask is None:
        return np.ones(32, bool)
    m = np.asarray(mask)
    if m.dtype == bool:
        if m.shape != (32,):
            raise ValueError(f"mask must be 32 booleans (one per lane) or an int bit mask, got shape {m.shape}")
        return m.copy()
    if m.ndim == 0 and m.dtype.kind in "ui":
        v = int(m)
        if not 0 <= v < 1 << 32:
            raise ValueError(f"mask {v:#x} does not fit in 32 bits (bit i = lane i)")
        return ((v >> np.arange(32)) & 1).astype(bool)
    raise TypeError(f"mask must be an int bit mask (bit i = lane i) or 32 booleans, got {m.dtype} {m.shape}")


def ld_shared(smem, addrs, nbytes, mask=None) -> np.ndarray:
    """``ld.shared`` of 1, 2, 4, 8 or 16 bytes per lane -> uint32 (..., 32, max(1, nbytes//4)).

    1- and 2-byte loads are zero-extended (``.u8``/``.u16``).  Inactive lanes read 0.
    """
    smem = check_smem(smem)
    nbytes = _check_width(nbytes)
    m = lane_mask(mask)
    a = check_addrs(addrs, nbytes, smem.size, m)
    a = np.where(m, a, 0)
    b = smem[a[..., None] + np.arange(nbytes)].astype(np.uint32)      # (..., 32, nbytes)
    b = np.where(m[:, None], b, 0)
    if nbytes < 4:
        return (b * (np.uint32(1) << (8 * np.arange(nbytes, dtype=np.uint32)))).sum(-1, dtype=np.uint32)[..., None]
    words = b.reshape(b.shape[:-1] + (nbytes // 4, 4))
    return (words << (8 * np.arange(4, dtype=np.uint32))).sum(-1, dtype=np.uint32)


def _store_bytes(smem, a, data_bytes, m, phase_lanes):
    """data_bytes (32, nbytes) uint8.  Lanes are written phase by phase (``phase_lanes``
    lanes each), and within a phase from the highest lane down, so that the lowest lane of
    the last phase touching a byte wins (``phase_lanes=1``: the highest lane wins)."""
    nbytes = data_bytes.shape[-1]
    lane = np.arange(32)
    order = np.lexsort((-lane, lane // phase_lanes))
    lanes = order[m[order]]
    idx = a[lanes][:, None] + np.arange(nbytes)
    _last_writer_wins(smem, idx, data_bytes[lanes])


def st_shared(smem, addrs, values, nbytes, mask=None) -> None:
    """``st.shared`` of 1, 2, 4, 8 or 16 bytes per lane; ``values`` uint32 (32, max(1, nbytes//4)).

    PTX leaves the winner undefined when lanes store to the same bytes; as on the hardware,
    the lanes run in phases (32, 16 or 8 lanes for <=4, 8, 16 bytes), a later phase
    overwrites an earlier one and within a phase the lowest lane wins.
    """
    smem = check_smem(smem)
    nbytes = _check_width(nbytes)
    m = lane_mask(mask)
    a = check_addrs(addrs, nbytes, smem.size, m)
    if a.ndim != 1:
        raise ValueError(f"st.shared writes one smem: addrs must have shape (32,), got {a.shape}")
    nw = max(1, nbytes // 4)
    v = np.asarray(values)
    if v.dtype.kind not in "ui" or v.shape != (32, nw):
        raise ValueError(f"st.shared of {nbytes} bytes: values must be uint32 shaped (32, {nw}), got {v.dtype} {v.shape}")
    if nbytes < 4 and (v >= (1 << (8 * nbytes))).any():
        lane = int(np.argwhere(v >= (1 << (8 * nbytes)))[0][0])
        raise ValueError(f"lane {lane}: value {int(v[lane, 0]):#x} does not fit in {nbytes} byte(s)")
    data = v.astype("<u4").view(np.uint8).reshape(32, -1)[:, :nbytes]
    _store_bytes(smem, a, data, m, phase_lanes=32 if nbytes <= 4 else 128 // nbytes)


def cp_async(smem, addrs, src, nbytes, mask=None, level="ca") -> None:
    """``cp.async.{level}`` of 4, 8 or 16 bytes per lane into shared memory; ``src`` uint8 (32, nbytes).

    The global-memory side is given as the bytes each lane copies.  Where copies overlap
    (undefined in PTX) fragsim does what the hardware did: for ``.ca`` the highest lane
    wins; ``.cg`` (16 bytes only) runs in 4 phases of 8 lanes, a later phase overwrites an
    earlier one and within a phase the lowest lane wins.
    """
    smem = check_smem(smem)
    if level not in ("ca", "cg"):
        raise ValueError(f"cp.async level must be 'ca' or 'cg', got {level!r}")
    if nbytes not in (4, 8, 16) or (level == "cg" and nbytes != 16):
        raise ValueError(f"cp.async.{level} copies {'16' if level == 'cg' else '4, 8 or 16'} bytes per lane, "
                         f"got {nbytes!r}")
    m = lane_mask(mask)
    a = check_addrs(addrs, nbytes, smem.size, m, "cp.async destination")
    s = np.asarray(src)
    if s.dtype != np.uint8 or s.shape != (32, nbytes):
        raise ValueError(f"cp.async of {nbytes} bytes: src must be uint8 shaped (32, {nbytes}), got {s.dtype} {s.shape}")
    _store_bytes(smem, a, s, m, phase_lanes=1 if level == "ca" else 8)
