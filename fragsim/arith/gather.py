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


#: Rows of D one 16-lane vector of ``fragsim.arith.kernel16`` holds (a column of an m16n8 D).
COLUMN_ROWS = 16
#: Columns of D (n8).
COLUMNS = 8


#: Where register r of lane l of a warp is, in each layout of a warp's words ``column_maps`` reads: lane-major
#: (as fragsim.mma takes registers) or register-major (as fragsim run's register file holds them).
WORD = {"lane": lambda lane, reg, nregs: lane * nregs + reg,
        "register": lambda lane, reg, nregs: reg * WARP_LANES + lane}


def _owners(f, op: str, major: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(word, bit offset) of every element of operand ``op``, as matrices shaped like it (words laid out
    ``major``), and the elements per register."""
    rows, cols = f.coords(op)
    nregs, epr = rows.shape[1], rows.shape[2]
    lane, reg, half = np.meshgrid(np.arange(WARP_LANES), np.arange(nregs), np.arange(epr), indexing="ij")
    word = np.full(f.matrix_shape(op), -1, np.int64)
    shift = np.full(f.matrix_shape(op), -1, np.int64)
    word[rows, cols] = WORD[major](lane, reg, nregs)
    shift[rows, cols] = half * f.fmt(op).storage_bits
    return word, shift, epr


@lru_cache(maxsize=None)
def column_maps(form, major: str = "lane") -> dict[str, np.ndarray] | None:
    """Where each element of an m16n8 form sits in the registers, as ``fragsim.arith.kernel16`` reads and
    writes them (int32 index arrays, read-only); None for a form whose fragments do not fit its scheme.

    The kernel keeps a column of D (16 rows) in one 16-lane vector, so it wants A by columns (a k of
    every row) and B by rows.  A register of a 16-bit format holds two consecutive k of one row of A
    (of one column of B): a "group" of ``epr`` k (2, or 1 for tf32), the register's halves.  'a_src':
    per group of A, the 16 words holding it, row by row.  'b_src': per pair of groups of B, the 16
    words holding them (lanes 0-7: columns 0-7 of the first group, lanes 8-15 of the second).  The
    kernel stores the decoded k of B in *slots*, in the order it decodes them (half h of B vector v:
    slots 2*(v*epr + h) and 2*(v*epr + h) + 1); 'slot' gives the slot of each k, where A's k go too.
    The k of a block of the arithmetic must fill a range of slots (each block of ``block`` k, for
    every block length given in ``blocks``).  'c_src', 'c_sh': per column of C, the 16 words and bit
    offsets of its rows.  'd_lo', 'd_hi': per D word, the element in its low / high half as the
    index n * 16 + m of a column-major D (one element per word: both the same).  ``major``: the layout
    of a warp's words, "lane" (``lane * nregs + reg``) or "register" (``reg * 32 + lane``), in A, B, C
    and D alike.
    """
    f = lookup(form)
    M, N, K = f.shape
    if (M, N) != (COLUMN_ROWS, COLUMNS) or f.groups != 1:
        return None
    aw, ash, epr = _owners(f, "A", major)
    bw, bsh, bepr = _owners(f, "B", major)
    bits = f.fmt("A").storage_bits
    if bepr != epr or K % (2 * epr):
        return None
    h = np.arange(K) % epr
    g = np.arange(K) - h                                 # first k of each k's group
    # a group: its epr k in one register, the k-th at bits (k % epr) * bits, in A (per row) and B (per column)
    if not ((aw == aw[:, g]).all() and (ash == h * bits).all() and (bw == bw[g, :]).all()
            and (bsh == h[:, None] * bits).all()):
        return None
    groups = np.arange(0, K, epr)
    b_src = np.concatenate([np.concatenate([bw[k], bw[k + epr]]) for k in groups[::2]])
    slot_k = [k + hh + j * epr for k in groups[::2] for hh in range(epr) for j in range(2)]
    slot = np.argsort(slot_k)
    cw, csh, _ = _owners(f, "C", major)
    rows, cols = f.coords("D")
    col = cols * M + rows                                # (lane, reg, half): D's element, column-major
    col = (col if major == "lane" else col.transpose(1, 0, 2)).reshape(-1, rows.shape[2])
    out = {"a_src": np.concatenate([aw[:, k] for k in groups]), "b_src": b_src, "slot": slot,
           "c_src": cw.T.ravel(), "c_sh": csh.T.ravel(), "d_lo": col[:, 0], "d_hi": col[:, -1]}
    out = {k: np.ascontiguousarray(v, np.int32) for k, v in out.items()}
    for v in out.values():
        assert (v >= 0).all(), f"{f.name}: a fragment map does not cover its matrix"
        v.setflags(write=False)
    return out


def blocks_fill_slots(maps, block: int) -> bool:
    """Whether every block of ``block`` consecutive k occupies a range of slots (``column_maps``)."""
    s = maps["slot"].reshape(-1, block)
    return bool((np.sort(s, axis=1) == np.arange(0, s.size).reshape(-1, block)).all())
