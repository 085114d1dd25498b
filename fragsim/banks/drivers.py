"""The batch loops over many instructions, in the numba-compilable subset of Python.

Never run from here: ``fragsim.banks.generate`` copies these functions, with the rules they call,
into ``kernel_generated.py``, which numba compiles; the batch path imports this module only for the
generated drivers' names.  They only check inputs and call the rules; they hold no rule of their own.
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from .rules import cp_async_figures, instruction_figures

# Error codes the drivers report in err[0] (err[1] = instruction, err[2] = lane).
ERR_NEGATIVE, ERR_TOO_BIG, ERR_ALIGN, ERR_SRC = 1, 2, 3, 4

# The functions generate.py copies, callees before callers.
COMPILED = ("check_row", "batch_instructions", "batch_cp_async")


# Names of the generated drivers (the batch path looks them up; generate.py writes them).

def tag(phase_lanes: int, merges: bool) -> str:
    return f"{phase_lanes}{'m' if merges else ''}"


def driver_params(e) -> tuple:
    """What an entry fixes of ``drivers.batch_instructions``' arguments, in its order after ``masks``
    (the generated driver binds them as constants and takes only addrs, masks and the outputs)."""
    return (e.address_lanes, e.phase_lanes, e.merges_partners, e.unit_shift, e.bank_groups, e.bytes_per_addr)


def driver_name(e) -> str:
    """The generated driver of an entry's structure: ``batch_instructions_<lanes>[m]_<address lanes>_<bytes>``."""
    return f"batch_instructions_{tag(e.phase_lanes, e.merges_partners)}_{e.address_lanes}_{e.bytes_per_addr}"


def check_row(row, m, align, err, i):
    """The active lanes' addresses are non-negative, below 2**32 and aligned (align: a power of two)."""
    bad = 0
    for lane in range(WARP_LANES):   # branch-free first pass: the usual case is a clean row
        a = row[lane]
        bad |= ((a < 0) | ((a >> 32) != 0) | ((a & (align - 1)) != 0)) & ((m >> lane) & 1)
    if not bad:
        return True
    for lane in range(WARP_LANES):
        if (m >> lane) & 1:
            a = row[lane]
            code = ERR_NEGATIVE if a < 0 else (ERR_TOO_BIG if (a >> 32) != 0 else (ERR_ALIGN if a & (align - 1) else 0))
            if code:
                err[0] = code
                err[1] = i
                err[2] = lane
                return False
    return True


def batch_instructions(addrs, masks, address_lanes, phase_lanes, merge_capable, unit_shift, groups, align,
                       wf, ideal, err):
    """ld/st.shared, ldmatrix, stmatrix: figures of every row of ``addrs`` (n, 32)."""
    seen = np.empty((WARP_LANES, WARP_LANES), np.int64)
    counts = np.empty(WARP_LANES, np.int64)
    phase_wf = np.empty(WARP_LANES, np.int64)
    lanes = (1 << address_lanes) - 1
    for i in range(addrs.shape[0]):
        m = np.int64(masks[i]) & lanes
        row = addrs[i]
        if not check_row(row, m, align, err, i):
            return
        w, k, _ = instruction_figures(row, m, address_lanes, phase_lanes, merge_capable, unit_shift, groups,
                                      seen, counts, phase_wf)
        wf[i] = w
        ideal[i] = k


def batch_cp_async(addrs, masks, nbytes, width_phase_lanes, srcs, wf, ideal, exact, err):
    """cp.async: figures of every row; ``srcs`` (n, 32) or (1, 32) global source addresses."""
    line_of = np.empty(WARP_LANES, np.int64)
    group_of = np.empty(WARP_LANES, np.int64)
    lines = np.empty((8, WARP_LANES), np.int64)
    phase_wf = np.empty(WARP_LANES, np.int64)
    one_src = srcs.shape[0] == 1
    for i in range(addrs.shape[0]):
        m = np.int64(masks[i])
        row = addrs[i]
        if not check_row(row, m, nbytes, err, i):
            return
        srow = srcs[0] if one_src else srcs[i]
        for lane in range(WARP_LANES):
            if (m >> lane) & 1 and (srow[lane] < 0 or srow[lane] % nbytes != 0):
                err[0] = ERR_SRC
                err[1] = i
                err[2] = lane
                return
        w, k, e = cp_async_figures(row, srow, m, nbytes, width_phase_lanes, line_of, group_of, lines, phase_wf)
        wf[i] = w
        ideal[i] = k
        exact[i] = e
