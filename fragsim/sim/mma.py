"""``fragsim.mma``: bit-exact ``mma.sync`` from per-lane registers to per-lane D registers.

(This module is not called ``fragsim/mma.py`` so that ``fragsim.mma`` stays the function.)
"""

from __future__ import annotations

import numpy as np

from fragsim.arith import plan, run
from fragsim.facts.arch import DEFAULT_ARCH
from fragsim.facts.hardware import WARP_LANES
from fragsim.validate import broadcast_shape, working_memory
from .registers import check_regs

__all__ = ["mma"]


def mma(form, a, b, c, arch=DEFAULT_ARCH, *, parallel: bool = True) -> np.ndarray:
    """D = A*B + C of one ``mma.sync`` per warp, as the tensor core computes it.

    ``form``: the PTX spelling, with or without ``mma.sync.aligned.``, e.g.
    ``"m16n8k16.row.col.f32.f16.f16.f32"``.  ``a``, ``b``, ``c``: the operand registers,
    uint32 arrays shaped ``(..., 32, nregs)`` exactly as the PTX operands (f32 and s32 as raw
    bits; two f16/bf16, four s8/u8, eight s4/u4 or 32 b1 elements per register, lowest first;
    an f64 as two registers, low word first); leading dimensions batch warps and
    broadcast against each other.  ``arch``: 'sm_80' or 'sm_90' (aliases 'a100', 'ampere',
    'h100', 'h200', 'hopper'), or an ``fragsim.facts.arch.ArchParams`` row.  ``parallel``: spread
    large batches over numba's threads.  Returns D registers, uint32 ``(..., 32, nregs_D)``.
    """
    if not isinstance(parallel, (bool, np.bool_)):
        raise TypeError(f"parallel must be True or False, got {type(parallel).__name__} {parallel!r:.40}")
    pl = plan(form, arch)
    f = pl.form
    regs = [check_regs(f, op, x) for op, x in (("A", a), ("B", b), ("C", c))]
    lead = broadcast_shape([r.shape[:-2] for r in regs], ["operand A", "operand B", "operand C"],
                           f"{f.name}: the leading (batch) dimensions of ")
    batch = int(np.prod(lead, dtype=np.int64))
    # A, B and C flattened to the batch (broadcast operands copied) and D: 4 bytes per register and lane
    working_memory(batch * WARP_LANES * 4 * sum(f.nregs(op) for op in "ABCD"),
                   f"{f.name}: a batch of {' x '.join(map(str, lead))} = {batch:,} warps",
                   "split the batch into several calls")
    fa, fb, fc = ((r if r.shape[:-2] == lead else np.broadcast_to(r, lead + r.shape[-2:]))
                  .reshape(batch, r.shape[-2] * r.shape[-1]) for r in regs)
    d = run(pl, fa, fb, fc, parallel=bool(parallel))
    return d.reshape(lead + (WARP_LANES, f.nregs("D")))

