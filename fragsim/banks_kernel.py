"""The numba kernel behind ``fragsim.banks.bank_conflicts_batch`` (imported on first use only).

Same rules as ``fragsim.banks`` (see its docstring), for ``n`` instructions at once.  Lanes that
conflict or share data do so on a *unit*: the 4-byte word for accesses of up to 4 bytes, the
lane's whole aligned 8- or 16-byte access otherwise (an aligned 8/16-byte access covers 2/4
consecutive banks, a bank *group*; two distinct units of one group differ in every bank).
"""

from __future__ import annotations

import numpy as np
from numba import njit

KIND_LD, KIND_ST, KIND_LDSM, KIND_STSM, KIND_LDGSTS = 0, 1, 2, 3, 4


@njit(cache=True)
def _partners_agree(addr, m, nlanes, x):
    for n in range(nlanes):
        p = n ^ x
        if p < nlanes and (m >> n) & 1 and (m >> p) & 1 and addr[n] != addr[p]:
            return False
    return True


@njit(cache=True)
def _phase_cost(addr, m, start, stop, shift, groups, count_lanes, seen, counts):
    """Wavefronts of lanes start..stop-1: the most distinct units (or lanes) in one bank group."""
    for g in range(groups):
        counts[g] = 0
    best = 0
    for lane in range(start, stop):
        if not (m >> lane) & 1:
            continue
        u = addr[lane] >> shift
        g = u & (groups - 1)
        c = counts[g]
        if not count_lanes:
            dup = False
            for j in range(c):
                if seen[g, j] == u:
                    dup = True
                    break
            if dup:
                continue
            seen[g, c] = u
        counts[g] = c + 1
        if c + 1 > best:
            best = c + 1
    return best


@njit(cache=True)
def _cp_async(addr, src, m, nbytes, line_of, seen, counts, scount):
    """cp.async: phases = 128-byte source lines (order of first lane); returns (wf, ideal, exact)."""
    nl = 0
    for lane in range(32):
        line_of[lane] = -1
        if not (m >> lane) & 1:
            continue
        ln = src[lane] >> 7
        k = -1
        for j in range(nl):
            if seen[j, 0] == ln:
                k = j
                break
        if k < 0:
            k = nl
            seen[k, 0] = ln
            nl += 1
        line_of[lane] = k
    shift = 2 if nbytes <= 4 else (3 if nbytes == 8 else 4)
    groups = 128 // (nbytes if nbytes > 4 else 4)
    wf = 0
    exact = True
    for k in range(nl):
        for g in range(groups):
            counts[g] = 0
        best = 0
        ns = 0
        first = -1
        prev = -1
        step = 0
        nstep = 0
        for lane in range(32):
            if line_of[lane] != k:
                continue
            if first < 0:
                first = lane
            g = (addr[lane] >> shift) & (groups - 1)
            counts[g] += 1
            if counts[g] > best:
                best = counts[g]
            # lanes reading the same source element
            found = False
            for j in range(ns):
                if seen[j, 1] == src[lane]:
                    scount[j] += 1
                    if scount[j] > best:
                        best = scount[j]
                    found = True
                    break
            if not found:
                seen[ns, 1] = src[lane]
                scount[ns] = 1
                ns += 1
            if prev >= 0:
                ds = src[lane] - src[prev]
                dl = lane - prev
                if ds % dl != 0:
                    exact = False
                else:
                    st = ds // dl
                    if nstep == 0:
                        step = st
                        nstep = 1
                    elif st != step:
                        exact = False
            prev = lane
        if nstep == 1 and step != 0 and step != nbytes and step != -nbytes:
            exact = False
        # the lanes of another line must not fall between this line's first and last lane
        for lane in range(first + 1, prev):
            if line_of[lane] >= 0 and line_of[lane] != k and _first_lane(line_of, line_of[lane]) > first:
                exact = False
        wf += best
    full = m == 0xFFFFFFFF
    if nl > 4 and not full:
        exact = False
    width = 128 // nbytes
    phases = 0
    for s in range(0, 32, width):
        if m & (((1 << width) - 1) << s):
            phases += 1
    lines4 = (nl + 3) // 4
    return wf, (phases if phases > lines4 else lines4), exact


@njit(cache=True)
def _first_lane(line_of, k):
    for lane in range(32):
        if line_of[lane] == k:
            return lane
    return 32


@njit(cache=True)
def _figures(addrs, masks, kind, nbytes, nlanes, srcs, wf, ideal, exact):
    unit = nbytes if nbytes > 4 else 4
    shift = 2 if unit == 4 else (3 if unit == 8 else 4)
    groups = 128 // unit
    base_phase = 8 if (kind == KIND_LDSM or kind == KIND_STSM or kind == KIND_LDGSTS) else min(32, groups)
    count_lanes = kind == KIND_LDGSTS
    seen = np.empty((32, 32), np.int64)
    counts = np.empty(32, np.int32)
    scount = np.empty(32, np.int32)
    line_of = np.empty(32, np.int64)
    full = (1 << nlanes) - 1
    for i in range(addrs.shape[0]):
        m = np.int64(masks[i]) & full
        addr = addrs[i]
        exact[i] = True
        if kind == KIND_LDGSTS:
            w, k, e = _cp_async(addr, srcs[i if srcs.shape[0] > 1 else 0], m, nbytes, line_of, seen, counts, scount)
            wf[i] = w
            ideal[i] = k
            exact[i] = e
            continue
        p = base_phase
        if kind == KIND_LD and nbytes >= 8:
            if _partners_agree(addr, m, nlanes, 1) or _partners_agree(addr, m, nlanes, 2):
                p = 2 * base_phase
        w = 0
        k = 0
        for s in range(0, nlanes, p):
            stop = s + p if s + p < nlanes else nlanes
            phase_mask = ((1 << (stop - s)) - 1) << s
            if m & phase_mask:
                w += _phase_cost(addr, m, s, stop, shift, groups, count_lanes, seen, counts)
                k += 1
        wf[i] = w
        ideal[i] = k


def batch_figures(addrs: np.ndarray, masks: np.ndarray, kind: int, nbytes: int, nlanes: int, srcs=None):
    """(wavefronts, ideal, exact) arrays for addrs int64 (n, 32), masks uint32 (n,) and, for
    cp.async, source addresses int64 (n, 32) or (1, 32)."""
    n = addrs.shape[0]
    wf = np.empty(n, np.int32)
    ideal = np.empty(n, np.int32)
    exact = np.empty(n, np.bool_)
    srcs = np.zeros((1, 32), np.int64) if srcs is None else np.ascontiguousarray(srcs, dtype=np.int64).reshape(-1, 32)
    _figures(np.ascontiguousarray(addrs, dtype=np.int64), np.ascontiguousarray(masks, dtype=np.uint32),
             kind, nbytes, nlanes, srcs, wf, ideal, exact)
    return wf, ideal, exact
