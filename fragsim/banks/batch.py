"""Many instructions at once: ``bank_conflicts_batch`` -> ``BatchReport`` of arrays.

The figures come from the numba kernel generated from the rules (``kernel_generated.py``),
compiled on first use and cached on disk; importing fragsim does not import numba.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions.shared_op import SharedOp
from . import inputs


@dataclass
class BatchReport:
    """Figures for ``n`` instructions: int32 arrays shaped ``(n,)``."""

    entry: SharedOp = field(repr=False)
    wavefronts: np.ndarray
    ideal: np.ndarray
    conflicts: np.ndarray
    exact: np.ndarray      # bool (n,); all True except cp.async outside the measured domain

    @property
    def op(self) -> str:
        return self.entry.name

    def __len__(self):
        return len(self.wavefronts)

    def to_dict(self) -> dict:
        return {"op": self.op, "wavefronts": self.wavefronts.tolist(), "ideal": self.ideal.tolist(),
                "conflicts": self.conflicts.tolist(), "exact": self.exact.tolist(),
                "total_wavefronts": int(self.wavefronts.sum()), "total_conflicts": int(self.conflicts.sum())}


def _raise(o: SharedOp, err, a, s) -> None:
    from .kernel_generated import ERR_SRC

    code, i, lane = (int(x) for x in err)
    if code != ERR_SRC:   # the kernel flagged this lane's address; say why as the detail path does
        raise ValueError(f"instruction {i}, lane {lane}: {inputs.address_problem(o, int(a[i, lane]))}")
    sv = int(s[0 if s.shape[0] == 1 else i, lane])
    raise ValueError(f"instruction {i}, lane {lane}: cp.async source address {sv:#x} is not a "
                     f"non-negative multiple of {o.bytes_per_addr}")


def _int64_rows(x, name: str, what: str, n: int, allow_one: bool = False) -> np.ndarray:
    a = inputs.integer_array(x, name, what)
    shapes = ((n, WARP_LANES), (WARP_LANES,)) if allow_one else ((n, WARP_LANES),)
    if a.shape not in shapes:
        raise ValueError(f"{name} must be shaped {' or '.join(map(str, shapes))}, got {a.shape}")
    if a.dtype == np.uint64 and a.size and a.max() >= 1 << 63:
        idx = tuple(np.argwhere(a >= 1 << 63)[0])
        raise ValueError(f"{name}: instruction {idx[0] if a.ndim == 2 else 0}, lane {idx[-1]}: "
                         f"{int(a[idx]):#x} does not fit in 32 bits")
    return np.ascontiguousarray(a.reshape(-1, WARP_LANES), dtype=np.int64)


def bank_conflicts_batch(op, addrs, mask=None, src=None) -> BatchReport:
    """Wavefronts, ideal and conflicts of ``n`` instructions: ``addrs`` shaped ``(n, 32)``; ``mask``
    one int, ``(n,)`` ints or ``(n, 32)`` booleans; ``src`` (cp.async) ``(32,)`` or ``(n, 32)``."""
    from fragsim.instructions.shared_ops import parse_shared_op

    o = parse_shared_op(op)
    inputs.no_src_unless_cp_async(o, src)
    a0 = inputs.integer_array(addrs, "addrs", "byte offsets into shared memory")
    if a0.ndim != 2 or a0.shape[1] != WARP_LANES:
        raise ValueError(f"addrs must be shaped (n, 32) for a batch, got {a0.shape}")
    n = a0.shape[0]
    a = _int64_rows(a0, "addrs", "byte offsets into shared memory", n)
    m = inputs.batch_masks(o, mask, n)
    inputs.check_batch_extent(o, a, m)
    from fragsim.arith.jit import listen
    from . import kernel_generated as K

    listen()

    wf = np.zeros(n, np.int32)
    ideal = np.zeros(n, np.int32)
    exact = np.ones(n, np.bool_)
    err = np.zeros(3, np.int64)
    s = None
    if o.kind == "ldgsts":
        s = (np.arange(WARP_LANES, dtype=np.int64) * o.bytes_per_addr)[None, :] if src is None else \
            _int64_rows(src, "src", "global byte addresses", n, allow_one=True)
        K.batch_cp_async(a, m, o.bytes_per_addr, o.width_phase_lanes, s, wf, ideal, exact, err)
    else:
        from .drivers import driver_name
        getattr(K, driver_name(o))(a, m, wf, ideal, err)
    if err[0]:
        _raise(o, err, a, s)
    if not o.counted:   # the counters show nothing for it (measured): that much is exact
        wf = np.zeros_like(wf)
        ideal = np.zeros_like(ideal)
        exact = np.ones_like(exact)
    return BatchReport(o, wf, ideal, wf - ideal, exact)
