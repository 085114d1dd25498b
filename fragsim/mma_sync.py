"""``fragsim.mma``: bit-exact ``mma.sync`` from per-lane registers to per-lane D registers.

(This module is not called ``fragsim/mma.py`` so that ``fragsim.mma`` stays the function.)
"""

from __future__ import annotations

import numpy as np

from .arith import index_maps, plan
from .registers import check_regs

__all__ = ["mma"]


def mma(form, a, b, c, arch="sm_90", *, parallel: bool = True) -> np.ndarray:
    """D = A*B + C of one ``mma.sync`` per warp, as the tensor core computes it.

    ``form``: the PTX spelling, with or without ``mma.sync.aligned.``, e.g.
    ``"m16n8k16.row.col.f32.f16.f16.f32"``.  ``a``, ``b``, ``c``: the operand registers,
    uint32 arrays shaped ``(..., 32, nregs)`` exactly as the PTX operands (f32 as raw bits,
    two f16/bf16 per register, low half first); leading dimensions batch warps and
    broadcast against each other.  ``arch``: 'sm_80' or 'sm_90' (aliases 'a100', 'ampere',
    'h100', 'h200', 'hopper'), or an ``fragsim.arch.ArchParams`` row.  ``parallel``: spread
    large batches over numba's threads.  Returns D registers, uint32 ``(..., 32, nregs_D)``.
    """
    pl = plan(form, arch)
    f = pl.form
    regs = [check_regs(f, op, x) for op, x in (("A", a), ("B", b), ("C", c))]
    try:
        lead = np.broadcast_shapes(*(r.shape[:-2] for r in regs))
    except ValueError:
        raise ValueError(f"{f.name}: the leading (batch) dimensions of A, B and C do not broadcast: "
                         f"{', '.join(str(r.shape) for r in regs)}") from None
    batch = int(np.prod(lead, dtype=np.int64))
    flat = [np.ascontiguousarray(np.broadcast_to(r, lead + r.shape[-2:]).reshape(batch, r.shape[-2] * r.shape[-1]))
            for r in regs]
    from .arith import kernel  # numba loads here, on first use, not at `import fragsim`

    d = kernel.run(pl, index_maps(f), *flat, parallel=parallel)
    return d.reshape(lead + (32, f.nregs("D")))
