"""The bank-conflict rules, each stated once.

These functions are the model.  The detail path (``fragsim.banks.report``) runs them as plain
Python for one instruction; the batch path (``fragsim.banks.kernel``) compiles these same
functions with numba, swapping only ``phase_cost`` for straight-line code generated from it
(``fragsim.banks.phases_generated``) and tested equal to it.  They are written in the subset of
Python numba compiles: integers, int64 arrays, loops; scratch arrays come from the caller.

Inputs of one instruction: ``addr`` int64 (32,) byte offsets, ``m`` the active-lane mask as an
int (bit i = lane i; lanes past the instruction's address lanes already cleared).  Accesses are
compared in *units*: the 4-byte bank word for accesses of up to 4 bytes, the lane's whole aligned
8- or 16-byte access otherwise (``unit_shift`` = log2 of the unit).  An aligned unit covers 1, 2
or 4 consecutive banks, its bank *group* (``groups`` = 32, 16 or 8 groups); two distinct units
of one group differ in every bank of it.
"""

from __future__ import annotations

from ..hardware import NUM_BANKS, SOURCE_LINE_BYTES, WARP_LANES

# The functions banks.kernel compiles, callees before callers.
COMPILED = ("phase_cost", "partners_agree", "merges_partners", "phases_cost", "instruction_figures",
            "cp_async_figures")


def phase_cost(addr, start, stop, m, unit_shift, groups, seen, counts):
    """Wavefronts of one phase (lanes start..stop-1): the most distinct units that fall into one
    bank group among the active lanes (lanes sharing a unit share its wavefront: broadcast on
    loads, one write on stores).  Returns (wavefronts, 1 if any lane is active else 0)."""
    for g in range(groups):
        counts[g] = 0
    best = 0
    active = 0
    for lane in range(start, stop):
        if not (m >> lane) & 1:
            continue
        active = 1
        u = addr[lane] >> unit_shift
        g = u & (groups - 1)
        c = counts[g]
        new = True
        for j in range(c):
            if seen[g, j] == u:
                new = False
                break
        if new:
            seen[g, c] = u
            counts[g] = c + 1
            if c + 1 > best:
                best = c + 1
    return best, active


def partners_agree(addr, m, x):
    """Every two active lanes n and n^x hold the same address (a lane whose partner is inactive
    does not break it)."""
    for n in range(WARP_LANES):
        p = n ^ x
        if (m >> n) & 1 and (m >> p) & 1 and addr[n] != addr[p]:
            return False
    return True


def merges_partners(addr, m):
    """8- and 16-byte loads take half the phases when partner lanes n and n^1 -- or n and n^2 --
    share addresses (the return path packs the duplicated registers; measured on H200)."""
    return partners_agree(addr, m, 1) or partners_agree(addr, m, 2)


def phases_cost(addr, m, address_lanes, p, unit_shift, groups, seen, counts, phase_wf):
    """(wavefronts, ideal) over phases of ``p`` lanes in lane order across the address lanes:
    wavefronts = the sum of the phases' costs, ideal = the phases with an active lane (a phase
    without one costs nothing).  ``phase_wf[k]`` receives phase k's cost."""
    wf = 0
    ideal = 0
    k = 0
    for s in range(0, address_lanes, p):
        stop = s + p if s + p < address_lanes else address_lanes
        c, a = phase_cost(addr, s, stop, m, unit_shift, groups, seen, counts)
        phase_wf[k] = c  # detail only
        wf += c
        ideal += a
        k += 1
    return wf, ideal


def instruction_figures(addr, m, address_lanes, phase_lanes, merge_capable, unit_shift, groups,
                        seen, counts, phase_wf):
    """(wavefronts, ideal, lanes per phase) of ld/st.shared, ldmatrix and stmatrix.

    Phases of ``phase_lanes`` lanes, twice as long when partner lanes merge.  Nsight Compute's
    bank-conflict counter is wavefronts - ideal.
    """
    merged = merge_capable and merges_partners(addr, m)
    p = phase_lanes * 2 if merged else phase_lanes
    if p > WARP_LANES:
        p = WARP_LANES
    wf, ideal = phases_cost(addr, m, address_lanes, p, unit_shift, groups, seen, counts, phase_wf)
    return wf, ideal, p


def cp_async_figures(addr, src, m, nbytes, width_phase_lanes, line_of, seen, counts, scount,
                     phase_wf):
    """(wavefronts, ideal, exact) of one cp.async (LDGSTS).

    cp.async writes shared memory as its global data arrives: one phase per 128-byte *source* line
    (the active lanes grouped by ``src >> 7``, lines in order of their first lane; lane -> line
    index in ``line_of``, -1 if inactive; phase k's cost in ``phase_wf[k]``). Per phase, wavefronts
    = the most lanes writing one bank group, or reading one source element (writes are never
    merged). ideal = max(width phases with an active lane, ceil(source lines / 4)).

    ``exact`` says whether the inputs lie in the domain where this reproduced every measurement:
    each source line read by one run of lanes at source stride +nbytes, -nbytes or 0, no line's
    lanes interleaved with another's, and -- for a partial warp -- at most 4 lines, and lanes
    that each read their own line only as ``src = base + lane * nbytes``.
    """
    shift = 2 if nbytes <= 4 else (3 if nbytes == 8 else 4)
    groups = NUM_BANKS >> (shift - 2)
    nl = 0
    for lane in range(WARP_LANES):
        line_of[lane] = -1
        if not (m >> lane) & 1:
            continue
        ln = src[lane] // SOURCE_LINE_BYTES
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
    wf = 0
    exact = True
    shared_line = False
    for k in range(nl):
        for g in range(groups):
            counts[g] = 0
        best = 0
        ns = 0
        nk = 0
        first = -1
        prev = -1
        step = 0
        nstep = 0
        for lane in range(WARP_LANES):
            if line_of[lane] != k:
                continue
            if first < 0:
                first = lane
            nk += 1
            g = (addr[lane] >> shift) & (groups - 1)
            counts[g] += 1
            if counts[g] > best:
                best = counts[g]
            found = False
            for j in range(ns):            # lanes reading one source element
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
        for lane in range(first + 1, prev):  # another line's lanes inside this line's run
            other = line_of[lane]
            if other >= 0 and other != k:
                for f in range(WARP_LANES):
                    if line_of[f] == other:
                        if f > first:
                            exact = False
                        break
        phase_wf[k] = best
        wf += best
        if nk > 1:
            shared_line = True
    full = m == (1 << WARP_LANES) - 1
    if nl > 4 and not full:
        exact = False
    # A partial warp whose lanes each read their own source line, not as base + lane * size:
    # the H200 once merged two such lanes (10 and 11, cp.async.ca.16) into one wavefront.
    if nl > 1 and not full and not shared_line:
        base = -1
        for lane in range(WARP_LANES):
            if (m >> lane) & 1:
                if base < 0:
                    base = src[lane] - lane * nbytes
                elif src[lane] - lane * nbytes != base:
                    exact = False
    phases = 0
    for s in range(0, WARP_LANES, width_phase_lanes):
        if m & (((1 << width_phase_lanes) - 1) << s):
            phases += 1
    lines4 = (nl + 3) // 4
    return wf, (phases if phases > lines4 else lines4), exact
