"""``fragsim.movmatrix``: ``movmatrix.sync.aligned.m8n8.trans.b16`` on per-lane registers.

(Not ``fragsim/movmatrix.py`` so that ``fragsim.movmatrix`` stays the function.)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fragsim.facts.hardware import MATRIX_ROWS, WARP_LANES
from fragsim.validate import array
from fragsim.instructions.movmatrix import MOVMATRIX

__all__ = ["movmatrix"]


@lru_cache(maxsize=None)
def _gather() -> tuple[np.ndarray, np.ndarray]:
    """For each (lane, elem) of the destination, the source lane and half holding its element."""
    srows, scols = MOVMATRIX.src.table()          # (32, 1, 2)
    drows, dcols = MOVMATRIX.dst.table()
    owner = np.empty((MATRIX_ROWS, MATRIX_ROWS, 2), np.int64)      # the square 8x8 matrix
    owner[srows[:, 0], scols[:, 0]] = np.stack(np.meshgrid(np.arange(WARP_LANES), np.arange(2), indexing="ij"), -1)
    hold = owner[drows[:, 0], dcols[:, 0]]         # (32, 2, 2): (lane, half) of the source
    return hold[..., 0], hold[..., 1] * 16


def movmatrix(regs) -> np.ndarray:
    """The transposed fragment: ``regs`` uint32 (..., 32, 1), each lane's source register (two b16
    elements, low half first) -> uint32 (..., 32, 1), each lane's destination register."""
    r = array(regs, "movmatrix source registers")
    if r.dtype.kind not in "ui":
        raise TypeError(f"movmatrix source registers must be uint32 words, got dtype {r.dtype}")
    if r.ndim < 2 or r.shape[-2:] != (WARP_LANES, 1):
        raise ValueError(f"movmatrix source registers: expected shape (..., 32, 1) (one register per lane), "
                         f"got {r.shape}")
    if r.size and (r.dtype.kind == "i" or r.dtype.itemsize > 4) and ((r < 0) | (r > 0xFFFFFFFF)).any():
        raise ValueError("movmatrix source registers must be 32-bit words in [0, 2**32)")
    r = r.astype(np.uint32)[..., 0]
    lane, shift = _gather()
    halves = (r[..., lane] >> shift.astype(np.uint32)) & np.uint32(0xFFFF)   # (..., 32, 2)
    return (halves[..., 0] | (halves[..., 1] << np.uint32(16)))[..., None]
