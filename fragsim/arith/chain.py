"""The arithmetic of f16 ``mma.m8n8k4`` on architectures that emulate it: a tree of binary32 operations.

sm_90 has no m8n8k4 tensor-core instruction: ptxas calls a subroutine that gathers the quad pair's
operands with SHFL, widens each f16 to f32 (HADD2.F32) and computes every output with FFMA, FMUL
and FADD, then packs f16 D with F2FP.F16.F32.PACK_AB (round to nearest even).  The tree of those
operations is data, one per D type, in the architecture row (``m884_f32``, ``m884_f16``; see
``fragsim.arch``).  Products of two f16 values are exact in binary32, so fma(a, b, x) is the
binary32 sum a*b + x rounded once, which NumPy's float32 addition computes; every NaN result is
the canonical NaN (0x7FFFFFFF, 0x7FFF in f16 D).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..arch import ArchParams
from ..instructions import MmaForm

__all__ = ["ChainPlan", "chain_plan", "run"]


@dataclass(frozen=True)
class ChainPlan:
    form: MmaForm
    arch: ArchParams
    tree: tuple


def chain_plan(form: MmaForm, arch: ArchParams) -> ChainPlan | None:
    """The plan of an f16 m8n8k4 form; None for other forms."""
    if form.shape != (8, 8, 4) or form.types["A"] != "f16":
        return None
    tree = arch.m884_f16 if form.types["D"] == "f16" else arch.m884_f32
    if not tree:
        raise ValueError(f"form {form.name}: arch {arch.name} has no model of m8n8k4 .f16 (the order of its "
                         f"operations has not been measured there)")
    return ChainPlan(form, arch, tree)


def _f32(bits: np.ndarray, fmt: str) -> np.ndarray:
    if fmt == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float32)
    return bits.astype(np.uint32).view(np.float32)


def _eval(t, a, b, c):
    """The tree over a (..., K, M) k-major A, b (..., K, N) and c (..., M, N), as float32."""
    if t == "c":
        return c
    if t == "+0":
        return np.float32(0.0)
    if t[0] == "add":
        return _eval(t[1], a, b, c) + _eval(t[2], a, b, c)
    p = a[..., t[1], :, None] * b[..., t[1], None, :]        # exact: two f16 values
    return p if t[0] == "mul" else p + _eval(t[2], a, b, c)


def run(pl: ChainPlan, a, b, c, parallel: bool = True) -> np.ndarray:
    """D registers (batch, 32, nregs_D) from register batches (batch, 32*nregs); ``parallel``: large
    batches in slices on threads (NumPy releases the GIL in its loops)."""
    n = a.shape[0]
    workers = min(os.cpu_count() or 1, n // 4096)
    if not parallel or workers < 2:
        return _run(pl, a, b, c)
    cuts = np.linspace(0, n, workers + 1).astype(int)
    with ThreadPoolExecutor(workers) as ex:
        parts = ex.map(lambda i: _run(pl, a[cuts[i]:cuts[i + 1]], b[cuts[i]:cuts[i + 1]], c[cuts[i]:cuts[i + 1]]),
                       range(workers))
        return np.concatenate(list(parts))


def _run(pl: ChainPlan, a, b, c) -> np.ndarray:
    from ..registers import pack, unpack
    f = pl.form
    M, N, K = f.shape
    g = f.groups
    n = a.shape[0]
    A = _f32(unpack(f, "A", a.reshape(n, 32, f.nregs("A"))), "f16").reshape(n, g, M, K).transpose(0, 1, 3, 2)
    B = _f32(unpack(f, "B", b.reshape(n, 32, f.nregs("B"))), "f16").reshape(n, g, K, N)
    C = _f32(unpack(f, "C", c.reshape(n, 32, f.nregs("C"))), f.types["C"]).reshape(n, g, M, N)
    with np.errstate(all="ignore"):
        D = _eval(pl.tree, A, B, C)
        if f.types["D"] == "f16":   # float32 -> float16 rounds once, to nearest even
            bits = D.astype(np.float16).view(np.uint16).copy()
            bits[np.isnan(D)] = 0x7FFF
        else:
            bits = D.view(np.uint32).copy()
            bits[np.isnan(D)] = 0x7FFFFFFF
    return pack(f, "D", bits.reshape(n, g * M, N))
