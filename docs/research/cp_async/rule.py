"""cp.async (LDGSTS) shared-memory wavefronts and ideal, as Nsight Compute counts them on sm_90.

``cp_async_figures(op_size, level, dst, src, mask) -> (wavefronts, ideal, exact)``

The rule, and the measurements behind each part (NOTES.md has the tables):

1. Width phases.  Lanes are split into phases of 128 / max(4, size) lanes (32 for .4, 16 for .8,
   8 for .16); lanes of different phases never share a wavefront (ca.16 lanes 7 and 8 reading one
   line take 2 wavefronts, ideal 2).
2. Line classes.  Every 128-byte source line has one of 4 classes, a XOR hash of its address bits
   7..21 (``line_class``).  Two different lines of one class never share a wavefront; lines of
   different classes may (two-line probes: 470 line pairs on bits 7..15, 156 probes of bits
   9..21 at three base lines; all consistent).  So at most 4 lines per wavefront, and adjacent 512-byte-aligned line
   quads always share, while e.g. lines 4 KiB + 128 apart mostly do not.
3. Slots.  The warp's lines, in order of their first active lane, are put first-fit into "slots"
   (a slot holds one line per class).  Each (phase, slot) pair with active lanes is a group; the
   groups are processed one after another.  ideal = the number of groups (matched every one of
   the 9,243 .ca launches, H100 and H200), and bank conflicts = wavefronts - ideal.
4. Bank conflicts inside a group.  A lane reads the 4-byte source banks (src >> 2) % 32 .. of its
   size and writes the destination banks (dst >> 2) % 32 ..; two lanes in one wavefront may share
   neither a source bank (also not when they read the same element: no broadcast) nor a
   destination bank (also not for the same address: writes are not merged).  Different lines in
   the same source bank collide like any bank conflict (two-lane probes: only the same word
   index collides).  The group's wavefronts are formed one at a time: lines in order; a line that
   has started takes, in lane order, every pending lane that fits; a line that has not started
   starts only if its first pending lane fits: if that lane's destination collides, no later line
   of the group may start in this wavefront, if only its source collides the line is skipped.
   (Exact on every launch of the recorded regimes listed under ``exact``; the in-order start is
   what makes copies whose lines each write one address take 8 + 3 wavefronts instead of 8.)
5. ``.cg`` copies bypass L1: the counters show 0 wavefronts, 0 ideal (all 1,077 .cg launches).

``exact`` is False where the measurements disagree with step 4 (the schedule inside a group):
 * a group where lanes of different lines write one destination bank,
 * a group where lanes of different lines read one source bank AND two lanes of one line collide,
 * a group where two lanes read one source element and some destination bank is written twice,
 * lines of one instruction whose addresses differ in bits >= 22 (the class hash was measured on
   bits 7..21 only).
Everywhere else every recorded launch matched (8,118 of 10,320 launches; wavefronts and ideal).
"""

from __future__ import annotations

import numpy as np

LINE_BYTES = 128
NUM_BANKS = 32
# line class = (parity(addr & CLASS_MASKS[0]), parity(addr & CLASS_MASKS[1])).  Bits 7..15 from the
# two-line probes of run 2 (262 lines against one, 78 other pairs), bits 16..21 from the validation
# run's probes (each bit k: line A against A ^ 2^k ^ x, x = 0..3, at three A; bits 9..15 re-checked)
CLASS_MASKS = (
    (1 << 7) | (1 << 9) | (1 << 11) | (1 << 12) | (1 << 14) | (1 << 16) | (1 << 18) | (1 << 19) | (1 << 20) | (1 << 21),
    (1 << 8) | (1 << 10) | (1 << 11) | (1 << 13) | (1 << 14) | (1 << 15) | (1 << 17) | (1 << 19),
)
HASH_BITS = 22  # the class hash is known for address bits below this (2 MiB pages: virtual = physical there)


def line_class(addr: int) -> int:
    """The 2-bit class of the 128-byte line holding global byte address ``addr``."""
    return (bin(addr & CLASS_MASKS[0]).count("1") & 1) | ((bin(addr & CLASS_MASKS[1]).count("1") & 1) << 1)


def _banks(addr: int, nwords: int) -> frozenset:
    return frozenset(((addr >> 2) + i) % NUM_BANKS for i in range(nwords))


class _Lane:
    __slots__ = ("lane", "line", "cls", "src_banks", "dst_banks", "words")

    def __init__(self, lane, dst, src, nwords):
        self.lane = lane
        self.line = src // LINE_BYTES
        self.cls = line_class(src)
        self.src_banks = _banks(src, nwords)
        self.dst_banks = _banks(dst, nwords)
        self.words = frozenset((src >> 2) + i for i in range(nwords))


def _collide(a: _Lane, b: _Lane) -> bool:
    return bool(a.src_banks & b.src_banks or a.dst_banks & b.dst_banks)


def _by_line(lanes):
    """{line: [lanes in lane order]} in order of each line's first lane."""
    out: dict = {}
    for ln in lanes:
        out.setdefault(ln.line, []).append(ln)
    return out


def _groups(lanes, phase_lanes):
    """The (phase, slot) groups, each a list of per-line lane lists, in processing order."""
    slot_of, slots = {}, []
    for line, ls in _by_line(lanes).items():        # whole warp, first-lane order
        c = ls[0].cls
        for i, s in enumerate(slots):
            if c not in s:
                s.add(c)
                slot_of[line] = i
                break
        else:
            slots.append({c})
            slot_of[line] = len(slots) - 1
    groups = []
    for p in range(0, 32, phase_lanes):
        per_line = _by_line([ln for ln in lanes if p <= ln.lane < p + phase_lanes])
        for s in sorted({slot_of[line] for line in per_line}):
            groups.append([ls for line, ls in per_line.items() if slot_of[line] == s])
    return groups


def _schedule(group) -> int:
    """Wavefronts of one group (step 4 of the module docstring)."""
    pending = [list(ls) for ls in group]
    started = [False] * len(group)
    n = 0
    while any(pending):
        n += 1
        took: list = []
        for k, ls in enumerate(pending):
            if not ls:
                continue
            if not started[k]:
                head = ls[0]
                if any(head.dst_banks & t.dst_banks for t in took):
                    break                      # no later line starts in this wavefront
                if any(head.src_banks & t.src_banks for t in took):
                    continue                   # this line waits; later lines may start
                started[k] = True
            rest = []
            for ln in ls:
                (rest if any(_collide(ln, t) for t in took) else took).append(ln)
            pending[k] = rest
    return n


def _inexact_group(group) -> bool:
    """Where step 4 is not reliable (NOTES.md, "exact domain")."""
    lanes = [ln for ls in group for ln in ls]
    pairs = [(a, b) for i, a in enumerate(lanes) for b in lanes[i + 1:]]
    if any(a.words & b.words for a, b in pairs) and any(a.dst_banks & b.dst_banks for a, b in pairs):
        return True                            # "dup": one source element twice + a destination collision
    if len(group) < 2:
        return False
    if any(a.dst_banks & b.dst_banks for a, b in pairs if a.line != b.line):
        return True                            # lanes of different lines write one bank
    cross = any(a.src_banks & b.src_banks for a, b in pairs if a.line != b.line)
    inner = any(_collide(a, b) for a, b in pairs if a.line == b.line)
    return cross and inner                     # lines collide in the source and a line collides in itself


def cp_async_figures(op_size: int, level: str, dst, src, mask: int):
    """(wavefronts, ideal, exact) of one ``cp.async.<level>.shared.global`` warp instruction.

    op_size: 4, 8 or 16 bytes per lane; level: "ca" or "cg"; dst: 32 shared-memory byte
    addresses; src: 32 global byte addresses (absolute: the class hash reads address bits 7..21);
    mask: active lanes (bit i = lane i).  Counters as ``measured_figures`` reads them:
    wavefronts = l1tex__data_pipe_lsu_wavefronts_mem_shared less op_misc/op_ld/op_st, conflicts
    (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts) = wavefronts - ideal.
    """
    if op_size not in (4, 8, 16):
        raise ValueError(f"op_size: cp.async copies 4, 8 or 16 bytes, got {op_size}")
    if level not in ("ca", "cg"):
        raise ValueError(f"level: 'ca' or 'cg', got {level!r}")
    dst = np.asarray(dst, dtype=np.int64)
    src = np.asarray(src, dtype=np.int64)
    if dst.shape != (32,) or src.shape != (32,):
        raise ValueError(f"dst and src must hold 32 addresses, got shapes {dst.shape} and {src.shape}")
    if level == "cg":
        return 0, 0, True                      # bypasses L1: no shared-memory wavefronts counted
    nwords = max(1, op_size // 4)
    lanes = [_Lane(l, int(dst[l]), int(src[l]), nwords) for l in range(32) if (int(mask) >> l) & 1]
    if not lanes:
        return 0, 0, True
    groups = _groups(lanes, LINE_BYTES // max(4, op_size))
    wavefronts = sum(_schedule(g) for g in groups)
    high = {ln.line * LINE_BYTES >> HASH_BITS for ln in lanes}
    exact = len(high) == 1 and not any(_inexact_group(g) for g in groups)
    return wavefronts, len(groups), exact
