"""The tensor-core arithmetic of ``mma.sync``: one model, parameterised per architecture.

``plan(form, arch)`` resolves what one (form, architecture) pair needs -- for the integer and
f64 forms an ``exact.IntPlan`` / ``exact.F64Plan`` (their arithmetic is not this model: see
``fragsim.arith.exact``), for the others a ``Plan``: input and
accumulator formats, block length L, F, e_zero, rounding and the open-choice switches of
the ``ArchParams`` row, plus the index maps between per-lane registers and matrix elements.
``run(plan, a, b, c)`` computes D registers.  The numba kernels live in ``fragsim.arith.kernel16``
(the m16n8 forms of the float model), ``kernel`` (the float model's other plans, and the reference the
first is tested against) and ``kernel_exact``, and load only when ``fragsim.mma`` is first called;
``fragsim.arith.explain`` retraces one output element of the float model in pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fragsim.facts.arch import DEFAULT_ARCH, ArchParams, get_arch
from fragsim.facts.formats import FloatFormat
from fragsim.instructions import MmaForm, lookup
from .chain import ChainPlan, chain_plan
from .exact import F64Plan, IntPlan, exact_maps, exact_plan
from .fp8 import Fp8Plan, fp8_plan
from .gather import index_maps

__all__ = ["Plan", "plan", "index_maps", "run", "IntPlan", "F64Plan", "Fp8Plan", "ChainPlan"]


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


def plan(form, arch=DEFAULT_ARCH) -> Plan | IntPlan | F64Plan | Fp8Plan | ChainPlan:
    """The arithmetic of a form on an architecture.  One object per (form, arch) asked again (the
    kernels key what they prepare on it; working it out again costs more than thousands of warps'
    arithmetic in a ``fragsim.mma`` call)."""
    try:
        return _plan_kept(form, arch)
    except TypeError:           # an unhashable form or arch: worked out each time (and its own errors)
        return _plan(form, arch)


@lru_cache(maxsize=256)
def _plan_kept(form, arch):
    return _plan(form, arch)


def _plan(form, arch) -> Plan | IntPlan | F64Plan | Fp8Plan | ChainPlan:
    f = lookup(form)
    a = get_arch(arch)
    if f.min_cc > a.cc:
        raise ValueError(f"form {f.name} needs compute capability {f.min_cc // 10}.{f.min_cc % 10} (PTX ISA); "
                         f"arch {a.name} is {a.cc // 10}.{a.cc % 10}")
    other = exact_plan(f, a) or fp8_plan(f, a, lambda v, block: _float_plan(v, a, block)) or chain_plan(f, a)
    if other is not None:
        return other
    return _float_plan(f, a, min(f.shape[2], a.block_len(f.fmt("A").name)))


def _float_plan(f: MmaForm, a: ArchParams, block: int) -> Plan:
    in_fmt, acc_fmt = f.fmt("A"), f.fmt("D")
    assert isinstance(in_fmt, FloatFormat) and isinstance(acc_fmt, FloatFormat)   # exact_plan took the others
    if f.fmt("B") != in_fmt or f.fmt("C") != acc_fmt:
        raise ValueError(f"form {f.name}: the arithmetic model needs A, B of one type and C, D of one type")
    if acc_fmt.name not in ("f32", "f16") or in_fmt.name not in ("f16", "bf16", "tf32"):
        raise ValueError(f"form {f.name}: no arithmetic model for .{in_fmt.name} inputs with "
                         f".{acc_fmt.name} accumulators")
    return Plan(form=f, arch=a, in_fmt=in_fmt, acc_fmt=acc_fmt, block=block, frac_bits=a.frac_bits,
                e_zero=a.e_zero(acc_fmt.name), rounding=a.rounding(acc_fmt.name))


def run(pl, a, b, c, parallel: bool = True) -> np.ndarray:
    """D registers (batch, 32, nregs_D) uint32 of a plan, from register batches a, b, c
    (batch, 32*nregs).  numba loads here, on first use, not at ``import fragsim``."""
    from .jit import listen
    listen()
    if isinstance(pl, Plan):
        from . import kernel16
        if kernel16.supports(pl):
            return kernel16.run(pl, a, b, c, parallel=parallel)
        from . import kernel
        return kernel.run(pl, index_maps(pl.form), a, b, c, parallel=parallel)
    if isinstance(pl, Fp8Plan):
        from . import fp8
        return fp8.run(pl, a, b, c, parallel=parallel)
    if isinstance(pl, ChainPlan):
        from . import chain
        return chain.run(pl, a, b, c, parallel=parallel)
    from . import kernel_exact
    return kernel_exact.run(pl, exact_maps(pl.form), a, b, c, parallel=parallel)
