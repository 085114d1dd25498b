"""Where each matrix element of an mma.sync form sits in the per-lane registers, as the arithmetic
kernels read and write them: gather/scatter index arrays computed once per form from its fragment maps."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions import lookup


@lru_cache(maxsize=None)
def index_maps(form) -> dict[str, np.ndarray]:
    """Where each matrix element sits in the registers, for the kernel.

    A and B are read k-major (A transposed: [k][m]; B: [k][n]), so that row k of either is
    contiguous.  '<op>_src' holds the register index (lane * nregs + reg) of each element and
    '<op>_sh' its bit shift.  When every register holds the pair k, k+1 of one column (low
    half, high half; all 16-bit layouts of the PTX ISA do), '<op>_paired' is set and
    '<op>_src' lists only the even rows k: one gathered word gives two rows.  'c_src'/'c_sh'
    (M*N, row-major) likewise for C.  'd_lo'/'d_hi' (32*nregs_D): for each D register, the
    flat index m*N + n of the output element in its low / high half.
    """
    f = lookup(form)
    M, N, K = f.shape
    out = {}
    for op in "ABC":
        rows, cols = f.coords(op)                      # (32, nregs, epr)
        nregs, epr = rows.shape[1], rows.shape[2]
        lane, reg, half = np.meshgrid(np.arange(WARP_LANES), np.arange(nregs), np.arange(epr), indexing="ij")
        if op == "A":
            k, x, width = cols, rows, M
        elif op == "B":
            k, x, width = rows, cols, N
        else:
            k, x, width = rows, cols, N                # C: row-major [m][n]
        flat = (k * width + x).ravel()
        src = np.full(rows.size, -1, np.int64)
        sh = np.zeros(rows.size, np.int64)
        src[flat] = (lane * nregs + reg).ravel()
        sh[flat] = (half * f.fmt(op).storage_bits).ravel()
        paired = op != "C" and epr == 2 and bool((k[..., 0] % 2 == 0).all() and (k[..., 1] == k[..., 0] + 1).all()
                                                 and (x[..., 1] == x[..., 0]).all())
        if paired:
            src = src.reshape(-1, 2, width)[:, 0].ravel()
            sh = np.zeros(0, np.int64)
        key = op.lower()
        out[key + "_src"], out[key + "_sh"] = np.ascontiguousarray(src), sh
        if op != "C":
            out[key + "_paired"] = np.array([paired])
    rows, cols = f.coords("D")
    dst = (rows * N + cols).reshape(WARP_LANES * rows.shape[1], rows.shape[2]).astype(np.int64)
    out["d_lo"] = np.ascontiguousarray(dst[:, 0])
    out["d_hi"] = np.ascontiguousarray(dst[:, -1])
    for name, v in out.items():
        assert (v >= 0).all(), f"{f.name}: fragment map {name} does not cover the matrix"
        v.setflags(write=False)
    return out
