"""The arithmetic of f16 ``mma.m8n8k4`` on architectures that emulate it: a tree of binary32 operations.

sm_90 has no m8n8k4 tensor-core instruction: ptxas calls a subroutine that gathers the quad pair's
operands with SHFL, widens each f16 to f32 (HADD2.F32) and computes every output with FFMA, FMUL
and FADD, then packs f16 D with F2FP.F16.F32.PACK_AB (round to nearest even).  The tree of those
operations is data, one per D type, in the architecture row (``m884_f32``, ``m884_f16``; see
``fragsim.facts.arch``).  Products of two f16 values are exact in binary32, so fma(a, b, x) is the
binary32 sum a*b + x rounded once, which one float32 addition computes; every NaN result is
the canonical NaN (0x7FFFFFFF, 0x7FFF in f16 D).  The tree runs compiled, as a postfix program
(``program``), in ``fragsim.arith.kernel_chain``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fragsim.facts.arch import ArchParams
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions import MmaForm

__all__ = ["ChainPlan", "chain_plan", "program", "run"]


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


def program(tree) -> np.ndarray:
    """The tree as a postfix program of (opcode, k) pairs (``fragsim.arith.kernel_chain``)."""
    from .kernel_chain import ADD, FMA, MUL, PUSH_C, PUSH_ZERO
    from_tree: list[int] = []

    def emit(t):
        if t == "c":
            from_tree.extend((PUSH_C, 0))
        elif t == "+0":
            from_tree.extend((PUSH_ZERO, 0))
        elif t[0] == "add":
            emit(t[1])
            emit(t[2])
            from_tree.extend((ADD, 0))
        elif t[0] == "mul":
            from_tree.extend((MUL, t[1]))
        else:                                   # fma(a_k, b_k, x): x, then the product added onto it
            emit(t[2])
            from_tree.extend((FMA, t[1]))

    emit(tree)
    return np.array(from_tree, np.int64)


@lru_cache(maxsize=None)
def _maps(form: MmaForm) -> tuple:
    """Per register word of A, B, C and D: the flat index of the element in its low and its high half
    (the same one for a 32-bit word) in the stacked matrices A (g*M, K), B (g*K, N), C, D (g*M, N),
    row-major."""
    out = []
    for op in "ABCD":
        rows, cols = form.coords(op)
        width = form.shape[2] if op == "A" else form.shape[1]
        e = (rows * width + cols).reshape(WARP_LANES * rows.shape[1], rows.shape[2]).astype(np.int64)
        out += [np.ascontiguousarray(e[:, 0]), np.ascontiguousarray(e[:, -1])]
    return tuple(out)


@lru_cache(maxsize=None)
def _f32_of_f16() -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)


def run(pl: ChainPlan, a, b, c, parallel: bool = True) -> np.ndarray:
    """D registers (batch, 32, nregs_D) from register batches (batch, 32*nregs)."""
    import numba

    from . import kernel_chain as kc
    f = pl.form
    M, N, K = f.shape
    batch = a.shape[0]
    nd = f.nregs("D")
    d = np.empty(batch * WARP_LANES * nd, np.uint32)
    dims = np.zeros(10, np.int64)
    dims[[kc.D_GM, kc.D_M, kc.D_K, kc.D_N, kc.D_C16, kc.D_D16]] = (f.groups * M, M, K, N, f.types["C"] == "f16",
                                                                   f.types["D"] == "f16")
    dims[[kc.D_AWORDS, kc.D_BWORDS, kc.D_CWORDS, kc.D_DWORDS]] = [WARP_LANES * f.nregs(op) for op in "ABCD"]
    a, b, c = (np.require(x.reshape(-1), np.uint32, ("C", "A", "W")) for x in (a, b, c))
    args = (a, b, c, d, program(pl.tree), dims, *_maps(f), _f32_of_f16())
    threads = numba.get_num_threads()
    if parallel and threads > 1 and batch >= 2 * threads:
        kc.run_parallel(min(batch, 8 * threads), *args)
    else:
        kc.run_serial(*args)
    return d.reshape(batch, WARP_LANES, nd)
