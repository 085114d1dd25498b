"""The bank-conflict rules, each stated once.

These functions are the model.  The detail path (``fragsim.banks.report``) runs them as plain
Python for one instruction; the batch path (``fragsim.banks.kernel_generated``, written by
``python -m fragsim.banks.generate``) compiles copies of these same functions with numba, swapping
only ``phase_cost`` for straight-line code generated from it and tested equal to it.  They are written in the subset of
Python numba compiles: integers, int64 arrays, loops; scratch arrays come from the caller.

Inputs of one instruction: ``addr`` int64 (32,) byte offsets, ``m`` the active-lane mask as an
int (bit i = lane i; lanes past the instruction's address lanes already cleared).  Accesses are
compared in *units*: the 4-byte bank word for accesses of up to 4 bytes, the lane's whole aligned
8- or 16-byte access otherwise (``unit_shift`` = log2 of the unit).  An aligned unit covers 1, 2
or 4 consecutive banks, its bank *group* (``groups`` = 32, 16 or 8 groups); two distinct units
of one group differ in every bank of it.
"""

from __future__ import annotations

from fragsim.facts.hardware import (BANK_BYTES, NUM_BANKS, SOURCE_LINE_BYTES, SOURCE_LINE_CLASS_MASK0, SOURCE_LINE_CLASS_MASK1,
                        SOURCE_LINE_HASH_BITS, WARP_LANES)

# The functions banks.kernel compiles, callees before callers.
COMPILED = ("phase_cost", "partners_agree", "merges_partners", "phases_cost", "instruction_figures",
            "parity", "source_line_class", "bank_mask", "group_wavefronts", "cp_async_figures")


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
    for s in range(0, WARP_LANES, p):   # a constant bound: the batch path unrolls it
        if s >= address_lanes:
            break
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


def parity(x):
    """1 if ``x`` has an odd number of set bits."""
    p = 0
    while x:
        p ^= 1
        x &= x - 1
    return p


def source_line_class(line):
    """The class (0..3) of 128-byte source line number ``line`` (global address >> 7): a XOR hash
    of the address; two different lines of one class never share a wavefront."""
    a = line * SOURCE_LINE_BYTES
    return parity(a & SOURCE_LINE_CLASS_MASK0) | (parity(a & SOURCE_LINE_CLASS_MASK1) << 1)


def bank_mask(byte_addr, wmask):
    """The banks an aligned access at ``byte_addr`` covers, as bits of a 32-bit mask (``wmask``:
    one bit per 4-byte word of the access)."""
    return wmask << ((byte_addr // BANK_BYTES) & (NUM_BANKS - 1))


def group_wavefronts(addr, src, start, stop, g, group_of, line_of, nwords, lines):
    """(wavefronts, exact) of one cp.async group: the lanes ``start..stop-1`` with ``group_of == g``.

    A lane reads the source banks ``(src >> 2) % 32 ..`` and writes the destination banks
    ``(addr >> 2) % 32 ..`` (``nwords`` each); lanes of one wavefront share neither (no broadcast
    of a source element, no merged writes).  Wavefronts are formed one at a time: the group's lines
    in order of their first lane; a line that has started takes, in lane order, every pending lane
    that fits; a line that has not started starts only if its first pending lane fits -- if that
    lane's destination collides no later line starts in this wavefront, if only its source
    collides the line waits.  ``exact`` is False in the regimes where the H100 measurements
    disagree with this order: lanes of different lines writing one bank, lines sharing a source
    bank while a line collides in itself, or one source element read twice with a destination
    bank written twice.
    """
    wmask = (1 << nwords) - 1
    nlg = 0
    pending = 0
    for lane in range(start, stop):
        if group_of[lane] != g:
            continue
        pending |= 1 << lane
        k = line_of[lane]
        new = True
        for j in range(nlg):
            if lines[4, j] == k:
                new = False
                break
        if new:
            lines[4, nlg] = k
            lines[5, nlg] = 0
            nlg += 1
    # the regimes, in one pass with per-line bank masks (a group holds at most 4 lines, one per class)
    for j in range(nlg):
        lines[6, j] = 0
        lines[7, j] = 0
    dup = False
    dst_twice = False
    cross_dst = False
    cross_src = False
    inner = False
    acc_s = 0
    acc_d = 0
    for a in range(start, stop):
        if not (pending >> a) & 1:
            continue
        sa = bank_mask(src[a], wmask)
        da = bank_mask(addr[a], wmask)
        dst_twice = dst_twice or (da & acc_d) != 0
        if sa & acc_s:                         # rare: is it the same element as an earlier lane's?
            for b in range(start, a):
                if (pending >> b) & 1 and src[b] == src[a]:
                    dup = True
        for j in range(nlg):
            if lines[4, j] == line_of[a]:
                inner = inner or (sa & lines[6, j]) != 0 or (da & lines[7, j]) != 0
                lines[6, j] |= sa
                lines[7, j] |= da
            else:
                cross_src = cross_src or (sa & lines[6, j]) != 0
                cross_dst = cross_dst or (da & lines[7, j]) != 0
        acc_s |= sa
        acc_d |= da
    exact = not ((dup and dst_twice) or cross_dst or (cross_src and inner))
    n = 0
    while pending:
        n += 1
        took_s = 0
        took_d = 0
        for j in range(nlg):
            k = lines[4, j]
            head = -1
            for lane in range(start, stop):
                if (pending >> lane) & 1 and line_of[lane] == k:
                    head = lane
                    break
            if head < 0:
                continue
            if lines[5, j] == 0:
                if bank_mask(addr[head], wmask) & took_d:
                    break                      # no later line starts in this wavefront
                if bank_mask(src[head], wmask) & took_s:
                    continue                   # this line waits; later lines may start
                lines[5, j] = 1
            for lane in range(head, stop):
                if (pending >> lane) & 1 and line_of[lane] == k:
                    sm = bank_mask(src[lane], wmask)
                    dm = bank_mask(addr[lane], wmask)
                    if not (sm & took_s) and not (dm & took_d):
                        took_s |= sm
                        took_d |= dm
                        pending &= ~(1 << lane)
    return n, exact


def cp_async_figures(addr, src, m, nbytes, width_phase_lanes, line_of, group_of, lines, phase_wf):
    """(wavefronts, ideal, exact) of one cp.async (LDGSTS); measured on an H100 (10,320 launches).

    cp.async writes shared memory as its global data arrives.  The active lanes' 128-byte source
    lines (``src`` are absolute global addresses), in order of their first lane, go first-fit into
    *slots* that hold at most one line of each class (``source_line_class``).  The lanes are
    split into width phases of ``width_phase_lanes`` (128 bytes' worth); each (width phase, slot)
    with an active lane is a *group*, the groups are processed in turn, and ideal = the number of
    groups.  A group's wavefronts follow ``group_wavefronts``.  Detail: ``line_of[lane]`` the
    lane's line (-1 inactive), ``group_of[lane]`` its group, ``phase_wf[g]`` group g's cost;
    ``lines`` (8, 32) is scratch.

    ``exact`` is False where a group is in a regime the measurements contradict (see
    ``group_wavefronts``) or the lines differ in address bits at or above SOURCE_LINE_HASH_BITS,
    where the class hash was not measured.
    """
    nwords = nbytes // BANK_BYTES if nbytes > BANK_BYTES else 1
    nl = 0
    nslots = 0
    exact = True
    for lane in range(WARP_LANES):
        line_of[lane] = -1
        group_of[lane] = -1
        if not (m >> lane) & 1:
            continue
        ln = src[lane] // SOURCE_LINE_BYTES
        k = -1
        for j in range(nl):
            if lines[0, j] == ln:
                k = j
                break
        if k < 0:
            k = nl
            nl += 1
            lines[0, k] = ln
            c = source_line_class(ln)
            s = 0
            while s < nslots and (lines[3, s] >> c) & 1:
                s += 1
            if s == nslots:
                lines[3, s] = 0
                nslots += 1
            lines[3, s] |= 1 << c
            lines[2, k] = s
            if (ln * SOURCE_LINE_BYTES) >> SOURCE_LINE_HASH_BITS != (lines[0, 0] * SOURCE_LINE_BYTES) >> SOURCE_LINE_HASH_BITS:
                exact = False
        line_of[lane] = k
    wf = 0
    ng = 0
    for p in range(0, WARP_LANES, width_phase_lanes):
        for s in range(nslots):
            here = False
            for lane in range(p, p + width_phase_lanes):
                if line_of[lane] >= 0 and lines[2, line_of[lane]] == s:
                    group_of[lane] = ng
                    here = True
            if here:
                w, ok = group_wavefronts(addr, src, p, p + width_phase_lanes, ng, group_of, line_of, nwords, lines)
                phase_wf[ng] = w  # detail only
                wf += w
                exact = exact and ok
                ng += 1
    return wf, ng, exact
