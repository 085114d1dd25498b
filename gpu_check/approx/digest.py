"""Digests of a whole input space, computed the same way on the GPU (CuPy) and the CPU (NumPy).

A form's outputs over consecutive inputs are cut into blocks of ``BLOCK``; a block's digest is the
wrapping uint64 sum of ``mix(output, index)`` over its cases, where ``index`` is the case's position in
the whole space.  A sum needs no ordering, so the GPU forms it with one reduction per block and the
CPU model's digest of the same block is comparable without copying 16 GiB of outputs back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: cases per digest block (2^32 inputs make 65,536 blocks)
BLOCK = 1 << 16
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def mix(out: Any, index: Any, xp: Any = np) -> Any:
    """splitmix64's finalizer of ``out << 32 | index`` (uint64; ``out`` up to 32 bits, ``index`` taken
    mod 2^32): distinct (output, position) pairs land far apart."""
    z = (out.astype(xp.uint64) << xp.uint64(32)) | (index.astype(xp.uint64) & xp.uint64(0xFFFFFFFF))
    z ^= z >> xp.uint64(30)
    z *= xp.uint64(_M1)
    z ^= z >> xp.uint64(27)
    z *= xp.uint64(_M2)
    z ^= z >> xp.uint64(31)
    return z


def block_digests(out: Any, first: int, xp: Any = np) -> Any:
    """Digests of ``out`` (a multiple of ``BLOCK`` outputs; 64-bit outputs count as two 32-bit halves
    mixed at the same index) whose first case is case ``first`` of the space."""
    out = xp.asarray(out)
    index = xp.arange(first, first + out.shape[0], dtype=xp.uint64)
    if out.dtype == xp.uint64:
        z = mix(out & xp.uint64(0xFFFFFFFF), index, xp) + mix(out >> xp.uint64(32), index ^ xp.uint64(0x55555555), xp)
    else:
        z = mix(out, index, xp)
    return z.reshape(-1, BLOCK).sum(axis=1, dtype=xp.uint64)


def cpu_block_digests(out: np.ndarray, first: int) -> np.ndarray:
    """``block_digests`` of uint32 ``out`` on the CPU, fast (numba): the same numbers as NumPy's and
    CuPy's."""
    from ._digest_kernel import digests32
    out = np.ascontiguousarray(out, np.uint32)
    if out.shape[0] % BLOCK:
        raise ValueError(f"{out.shape[0]} outputs: not a multiple of the block ({BLOCK})")
    return digests32(out, np.uint64(first), BLOCK)
