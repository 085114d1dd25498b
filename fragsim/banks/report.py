"""One instruction, with the detail: ``BankReport`` and its phases.

The figures come from the rules (``fragsim.banks.rules``, run here as plain Python); the detail
(which banks each phase hits, which words, which lanes collide) explains them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fragsim.facts.hardware import BANK_BYTES, NUM_BANKS, SOURCE_LINE_BYTES, WARP_LANES
from fragsim.instructions.shared_op import SharedOp
from . import rules

CP_ASYNC_NOTE = (
    "cp.async writes shared memory as its global data arrives: lanes go in groups (a 128-byte width "
    "phase x a slot of source lines, at most one line of each of the 4 line classes); inside a group, "
    "lanes writing one bank or reading one source bank take a wavefront each (no broadcast, no merged writes)")
CP_INEXACT_NOTE = (
    "estimate: lanes of different source lines write one bank, or lines share a source bank while a line "
    "collides in itself, or one source element is read twice with a bank written twice, or the lines differ "
    "in address bits >= 22; there the order in which the hardware packs a group's lanes is not known (on the "
    "H100 such copies differed from this estimate by -12..+8 wavefronts; the ideal stays exact)")


@dataclass
class Phase:
    """One phase: its lanes, its cost, and per bank the distinct words (word = byte address >> 2)."""

    index: int
    lanes: list            # every lane of the phase
    active: list           # the lanes that take part
    wavefronts: int
    banks: dict            # bank -> sorted list of distinct word addresses (byte address of the word)
    lanes_by_word: dict    # word byte address -> lanes touching it
    writes_by_bank: dict = field(default_factory=dict)  # cp.async: bank -> lanes writing it
    lanes_by_source: dict = field(default_factory=dict)  # cp.async: source address -> lanes
    reads_by_bank: dict = field(default_factory=dict)    # cp.async: source bank -> lanes reading it
    source_lines: list = field(default_factory=list)     # cp.async: the group's 128-byte source lines
    width_phase: int | None = None                       # cp.async: the width phase the group lies in

    @property
    def collisions(self) -> list:
        """Banks that need more than one wavefront: [(bank, [(word, lanes), ...]), ...]."""
        out = []
        if self.writes_by_bank:
            for b, lanes in sorted(self.writes_by_bank.items()):
                if len(lanes) > 1:
                    out.append((b, [(None, lanes)]))
            return out
        for b, words in sorted(self.banks.items()):
            if len(words) > 1:
                out.append((b, [(w, self.lanes_by_word[w]) for w in words]))
        return out

    def to_dict(self) -> dict:
        d = {"index": self.index, "lanes": self.lanes, "active": self.active, "wavefronts": self.wavefronts,
             "banks": {str(b): [hex(w) for w in ws] for b, ws in sorted(self.banks.items())},
             "collisions": [{"bank": b, "words": [{"word": None if w is None else hex(w), "lanes": ls}
                                                  for w, ls in ws]} for b, ws in self.collisions]}
        if self.writes_by_bank:
            d["writes_by_bank"] = {str(b): ls for b, ls in sorted(self.writes_by_bank.items())}
            d["reads_by_bank"] = {str(b): ls for b, ls in sorted(self.reads_by_bank.items())}
            d["same_source"] = [{"src": hex(k), "lanes": v} for k, v in sorted(self.lanes_by_source.items())
                                if len(v) > 1]
            d["source_lines"] = [{"line": hex(a), "class": c} for a, c in self.source_lines]
            d["width_phase"] = self.width_phase
        return d


@dataclass
class BankReport:
    """Bank conflicts of one warp instruction, in Nsight Compute's terms."""

    entry: SharedOp = field(repr=False)
    wavefronts: int        # what the entry's wavefront metric counts
    ideal: int             # fewest wavefronts possible
    conflicts: int         # what the entry's bank-conflict metric counts (wavefronts - ideal)
    phases: list
    addrs: list
    active: list
    merged_pairs: bool = False
    notes: list = field(default_factory=list)
    modelled_wavefronts: int | None = None   # cp.async.cg: the cost the counters do not show
    exact: bool = True     # False: outside the measured domain (cp.async with irregular sources)
    src: list | None = None

    @property
    def op(self) -> str:
        return self.entry.name

    @property
    def ptx(self) -> str:
        return self.entry.ptx

    @property
    def metrics(self) -> dict:
        wf_name, bc_name = self.entry.metrics
        return {wf_name: self.wavefronts, bc_name: self.conflicts}

    @property
    def collisions(self) -> list:
        return [(p.index, b, ws) for p in self.phases for b, ws in p.collisions]

    def to_dict(self) -> dict:
        return {"op": self.op, "ptx": self.ptx, "wavefronts": self.wavefronts, "ideal": self.ideal,
                "conflicts": self.conflicts, "metrics": self.metrics, "merged_pairs": self.merged_pairs,
                "modelled_wavefronts": self.modelled_wavefronts, "exact": self.exact, "src": self.src,
                "active_lanes": [i for i, a in enumerate(self.active) if a],
                "addrs": self.addrs, "phases": [p.to_dict() for p in self.phases], "notes": self.notes}

    def __str__(self) -> str:
        from .text import format_report
        return format_report(self)

    def _repr_png_(self):   # Jupyter: the phases and the histogram (matplotlib loads only here)
        from fragsim import display
        return display.png(self)

    def _repr_svg_(self):
        from fragsim import display
        return display.svg(self)


def _scratch():
    return (np.empty((WARP_LANES, WARP_LANES), np.int64), np.empty(WARP_LANES, np.int64),
            np.empty(WARP_LANES, np.int64))


def _phase(o: SharedOp, k: int, lanes: list, a: np.ndarray, active: np.ndarray, wavefronts: int) -> Phase:
    """The detail of one phase (which banks and words its active lanes touch)."""
    act = [lane for lane in lanes if active[lane]]
    banks: dict = {}
    by_word: dict = {}
    writes: dict = {}
    for lane in act:
        base = (int(a[lane]) // BANK_BYTES) * BANK_BYTES
        for j in range(max(1, o.bytes_per_addr // BANK_BYTES)):
            wb = base + BANK_BYTES * j
            b = (wb // BANK_BYTES) % NUM_BANKS
            by_word.setdefault(wb, []).append(lane)
            words = banks.setdefault(b, [])
            if wb not in words:
                words.append(wb)
            if o.kind == "ldgsts":
                writes.setdefault(b, []).append(lane)
    for b in banks:
        banks[b].sort()
    return Phase(k, lanes, act, int(wavefronts), banks, by_word, writes)


def report(o: SharedOp, a: np.ndarray, active: np.ndarray) -> BankReport:
    """ld/st.shared, ldmatrix, stmatrix: int64 addresses (32,), active lanes bool (32,)."""
    m = int(np.sum(active.astype(np.int64) << np.arange(WARP_LANES, dtype=np.int64)))
    seen, counts, phase_wf = _scratch()
    wf, ideal, size = rules.instruction_figures(a, m, o.address_lanes, o.phase_lanes, o.merges_partners,
                                                o.unit_shift, o.bank_groups, seen, counts, phase_wf)
    merged = size != o.phase_lanes
    phases = [_phase(o, k, list(range(s, min(s + size, o.address_lanes))), a, active, phase_wf[k])
              for k, s in enumerate(range(0, o.address_lanes, size))]
    p = len(phases)
    notes = []
    if merged:
        notes.append("partner lanes (n^1 or n^2) load the same addresses: the load takes "
                     f"{p} phase{'s' if p > 1 else ''} of {size} lanes instead of "
                     f"{WARP_LANES // o.phase_lanes} of {o.phase_lanes}")
    return BankReport(o, int(wf), int(ideal), int(wf - ideal), phases, [int(x) for x in a],
                      [bool(x) for x in active], bool(merged), notes)


def cp_async_report(o: SharedOp, a: np.ndarray, src: np.ndarray, active: np.ndarray) -> BankReport:
    """cp.async: one Phase per group (width phase x slot of source lines), in processing order."""
    m = int(np.sum(active.astype(np.int64) << np.arange(WARP_LANES, dtype=np.int64)))
    line_of = np.empty(WARP_LANES, np.int64)
    group_of = np.empty(WARP_LANES, np.int64)
    lines = np.empty((8, WARP_LANES), np.int64)
    phase_wf = np.empty(WARP_LANES, np.int64)
    wf, ideal, exact = rules.cp_async_figures(a, src, m, o.bytes_per_addr, o.width_phase_lanes, line_of, group_of,
                                              lines, phase_wf)
    phases = []
    nwords = max(1, o.bytes_per_addr // BANK_BYTES)
    for g in range(int(ideal)):
        lanes = [int(x) for x in np.flatnonzero(group_of == g)]
        ph = _phase(o, g, lanes, a, active, phase_wf[g])
        ph.width_phase = lanes[0] // o.width_phase_lanes
        for lane in lanes:
            s = int(src[lane])
            ph.lanes_by_source.setdefault(s, []).append(lane)
            for j in range(nwords):
                ph.reads_by_bank.setdefault((s // BANK_BYTES + j) % NUM_BANKS, []).append(lane)
            line = s // SOURCE_LINE_BYTES
            if all(line * SOURCE_LINE_BYTES != x for x, _ in ph.source_lines):
                ph.source_lines.append((line * SOURCE_LINE_BYTES, int(rules.source_line_class(line))))
        phases.append(ph)
    notes = [CP_ASYNC_NOTE] + ([] if exact else [CP_INEXACT_NOTE])
    modelled = None
    if not o.counted:   # the counters show nothing for it (all 1,077 measured .cg launches): exact
        modelled = int(wf)
        notes.append(f"modelled cost {wf} wavefronts ({wf - ideal} from conflicts{'' if exact else ', an estimate'}); "
                     "Nsight Compute counts no shared-memory wavefronts and 0 bank conflicts for .cg (it bypasses L1)")
        wf, ideal, exact = 0, 0, True
    return BankReport(o, int(wf), int(ideal), int(wf - ideal), phases, [int(x) for x in a],
                      [bool(x) for x in active], False, notes, modelled, bool(exact), [int(x) for x in src])
