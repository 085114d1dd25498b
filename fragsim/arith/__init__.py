"""The tensor-core arithmetic of ``mma.sync``: one model, parameterised per architecture.

``plan(form, arch)`` resolves what one (form, architecture) pair needs: input and
accumulator formats, block length L, F, e_zero, rounding and the open-choice switches of
the ``ArchParams`` row, plus the index maps between per-lane registers and matrix elements.
The numba kernels live in ``fragsim.arith.kernel`` and load only when ``fragsim.mma`` is
first called; ``fragsim.arith.explain`` retraces one output element in pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..arch import ArchParams, get_arch
from ..formats import FloatFormat
from ..instructions import MmaForm, lookup

__all__ = ["Plan", "plan", "index_maps"]


@dataclass(frozen=True)
class Plan:
    form: MmaForm
    arch: ArchParams
    in_fmt: FloatFormat        # A and B
    acc_fmt: FloatFormat       # C and D (the table only has forms where they match)
    block: int                 # products per block, min(K, L of the arch)
    frac_bits: int             # F
    e_zero: int
    rounding: str              # 'rz' | 'rne'

    @property
    def blocks(self) -> list[tuple[int, int]]:
        """The [k0, k1) ranges of the chained blocks, in ascending logical k."""
        k = self.form.shape[2]
        return [(k0, min(k0 + self.block, k)) for k0 in range(0, k, self.block)]


def plan(form, arch="sm_90") -> Plan:
    f = lookup(form)
    a = get_arch(arch)
    in_fmt, acc_fmt = f.fmt("A"), f.fmt("D")
    if f.fmt("B") != in_fmt or f.fmt("C") != acc_fmt:
        raise ValueError(f"form {f.name}: the arithmetic model needs A, B of one type and C, D of one type")
    if acc_fmt.name not in ("f32", "f16") or in_fmt.name not in ("f16", "bf16", "tf32"):
        raise ValueError(f"form {f.name}: no arithmetic model for .{in_fmt.name} inputs with "
                         f".{acc_fmt.name} accumulators")
    return Plan(form=f, arch=a, in_fmt=in_fmt, acc_fmt=acc_fmt,
                block=min(f.shape[2], a.block_len(in_fmt.name)), frac_bits=a.frac_bits,
                e_zero=a.e_zero(acc_fmt.name), rounding=a.rounding(acc_fmt.name))


@lru_cache(maxsize=None)
def index_maps(form) -> dict[str, np.ndarray]:
    """Where each matrix element sits in the registers, for the kernel.

    For A (M*K), B (K*N) and C (M*N), all row-major: '<op>_src', the register index
    (lane * nregs + reg) holding the element, and '<op>_sh', its bit shift in that register.
    'd_lo'/'d_hi' (32*nregs_D): for each D register, the flat index m*N + n of the output
    element in its low / high half (the same for one-element registers).
    """
    f = lookup(form)
    M, N, K = f.shape
    out = {}
    for op, ncols in (("A", K), ("B", N), ("C", N)):
        rows, cols = f.coords(op)                      # (32, nregs, epr)
        nregs, epr = rows.shape[1], rows.shape[2]
        lane, reg, half = np.meshgrid(np.arange(32), np.arange(nregs), np.arange(epr), indexing="ij")
        flat = (rows * ncols + cols).ravel()
        src = np.full(rows.size, -1, np.int64)
        sh = np.zeros(rows.size, np.int64)
        src[flat] = (lane * nregs + reg).ravel()
        sh[flat] = (half * f.fmt(op).storage_bits).ravel()
        out[op.lower() + "_src"], out[op.lower() + "_sh"] = src, sh
    rows, cols = f.coords("D")
    dst = (rows * N + cols).reshape(32 * rows.shape[1], rows.shape[2]).astype(np.int64)
    out["d_lo"] = np.ascontiguousarray(dst[:, 0])
    out["d_hi"] = np.ascontiguousarray(dst[:, -1])
    for name, v in out.items():
        assert (v >= 0).all(), f"{f.name}: fragment map {name} does not cover the matrix"
        v.setflags(write=False)
    return out
