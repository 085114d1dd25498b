"""Shared-memory bank conflicts, in Nsight Compute's terms, as measured on sm_90 (H100/H200).

``bank_conflicts(op, addrs, mask=None)`` gives, for one warp instruction, the wavefronts that
``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld/st`` counts, the ideal (fewest possible) and
the bank conflicts that ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld/st/ldgsts``
counts, with the detail behind them: the phases (which lanes), per phase the banks hit and the
distinct words in each bank, and which lanes collide.  ``addrs`` shaped ``(n, 32)`` gives arrays
for ``n`` instructions at once (a numba kernel; see ``bank_conflicts_batch``).

The model, every rule of it checked against Nsight Compute on an H200 (tests/data/banks/):

* 32 banks of 4 bytes: bank = (address >> 2) % 32.  A wavefront reads or writes at most one
  4-byte word per bank; lanes that touch the same word share it (broadcast on loads; on stores
  one write).  Per phase, wavefronts = the most distinct words that fall into one bank.
* Phases, by lane index: 1-, 2- and 4-byte ``ld/st.shared``: one phase of 32 lanes; 8 bytes: two
  of 16; 16 bytes: four of 8.  ``ldmatrix``/``stmatrix``: one phase per 8x8 matrix (lanes 8i..8i+7
  give its rows); lanes past ``8*num`` are ignored.
* Loads of 8 and 16 bytes (not stores) merge phases pairwise when every two active partner lanes
  ``n`` and ``n^1`` -- or every two ``n`` and ``n^2`` -- hold the same address: then 64-bit loads
  take one phase of 32 lanes and 128-bit loads two phases of 16 (the return path packs the
  duplicated registers).  Partners of which one is inactive do not break the rule.
* Phases without an active lane cost nothing.  ideal = the phases with an active lane; Nsight
  Compute's bank-conflict counter = wavefronts - ideal.
* ``cp.async`` (LDGSTS) writes shared memory as its global data arrives: one phase per 128-byte
  *source* line (lanes grouped by ``src >> 7``, in lane order), per phase wavefronts = the most
  lanes writing one bank or reading one source element (writes are never merged);
  ideal = max(width phases with an active lane, ceil(source lines / 4)).  Exact where each source
  line is read by one run of lanes at source stride +size, -size or 0 (``src = base + lane*size``,
  the usual copy) and, with more than 4 lines, the warp is full; elsewhere an estimate
  (``report.exact`` is False).  ``.cg`` copies bypass L1: Nsight Compute shows 0 wavefronts and
  0 conflicts for them; ``modelled_wavefronts`` keeps the cost the counters do not show.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .instructions.shared_ops import SharedOp, parse_shared_op
from .smem import lane_mask

__all__ = ["bank_conflicts", "bank_conflicts_batch", "BankReport", "BatchReport", "Phase",
           "NUM_BANKS", "BANK_BYTES", "phase_lanes", "metric_names"]

NUM_BANKS = 32
BANK_BYTES = 4
FULL_MASK = 0xFFFFFFFF

CP_ASYNC_NOTE = (
    "cp.async writes shared memory one 128-byte source line at a time; lanes writing one bank, or "
    "reading one source element, take a wavefront each (writes are not merged)")
CP_INEXACT_NOTE = (
    "estimate: the source lines are not each read by one run of lanes at stride +size/-size/0 (or "
    "a partial warp reads more than 4 lines); measured counters on H200 differ from this by up to "
    "about +-20 wavefronts here")
SRC_LINE_BYTES = 128


# ---------------------------------------------------------------------------------------------
# the rules, as small functions both paths (detail and batch) use
# ---------------------------------------------------------------------------------------------

def metric_names(op) -> tuple[str, str]:
    """The Nsight Compute metrics (wavefronts, bank conflicts) that count this instruction."""
    o = parse_shared_op(op)
    if o.kind in ("ld", "ldsm"):
        return ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
    if o.kind in ("st", "stsm"):
        return ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
    return ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum")


def _unit_bytes(o: SharedOp) -> int:
    """Bytes of the unit two lanes share or conflict on: a word, or the lane's whole access."""
    return max(BANK_BYTES, o.bytes_per_addr)


def phase_size(o: SharedOp, merged: bool = False) -> int:
    """Lanes per phase."""
    if o.kind in ("ldsm", "stsm"):
        return 8
    n = 128 // _unit_bytes(o)
    return min(32, n * 2 if merged else n)


def partners_agree(addrs, active, x: int) -> bool:
    """Every two active lanes n and n^x hold the same address."""
    lanes = np.arange(32)
    both = active & active[lanes ^ x]
    return bool(np.all(~both | (addrs == addrs[lanes ^ x])))


def merges_pairs(o: SharedOp, addrs, active) -> bool:
    """64-/128-bit loads whose partner lanes (n^1 or n^2) share addresses take half the phases."""
    if o.kind != "ld" or o.bytes_per_addr < 8:
        return False
    return partners_agree(addrs, active, 1) or partners_agree(addrs, active, 2)


def phase_lanes(op, addrs=None, mask=None, src=None) -> list[np.ndarray]:
    """The lanes of each phase (active or not; cp.async: the active lanes of each source line)."""
    o = parse_shared_op(op)
    if o.kind == "ldgsts":
        active = _active(o, _mask_bits(mask, o))
        return [np.array(g) for g in _source_lines(_check_src(o, src, active), active)]
    merged = False
    if addrs is not None:
        a = np.asarray(addrs, dtype=np.int64)
        merged = merges_pairs(o, a, _active(o, _mask_bits(mask, o)))
    p = phase_size(o, merged)
    nl = o.address_lanes
    return [np.arange(s, min(s + p, nl)) for s in range(0, nl, p)]


# ---------------------------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------------------------

def _mask_bits(mask, o: SharedOp) -> np.ndarray:
    """mask -> bool (32,) for one instruction."""
    bits = lane_mask(mask)
    if o.kind in ("ldsm", "stsm") and not bits[: o.address_lanes].all():
        raise ValueError(f"mask: {o.name} is .sync.aligned, every lane of the warp executes it "
                         f"(lanes {_ranges(np.flatnonzero(~bits[:o.address_lanes]))} are masked off)")
    return bits


def _active(o: SharedOp, bits: np.ndarray) -> np.ndarray:
    act = bits.copy()
    act[o.address_lanes:] = False
    return act


def _check_addrs(o: SharedOp, addrs, active) -> np.ndarray:
    a = np.asarray(addrs)
    if a.dtype.kind not in "ui":
        raise TypeError(f"addrs must be integer byte offsets into shared memory, got dtype {a.dtype}")
    if a.shape[-1:] != (32,):
        raise ValueError(f"addrs must hold 32 byte offsets (one per lane, shape (32,) or (n, 32)), got shape {a.shape}")
    a = a.astype(np.int64)
    what = {"ldsm": "ldmatrix row address", "stsm": "stmatrix row address",
            "ldgsts": "cp.async destination"}.get(o.kind, f"{o.name} address")
    align = o.bytes_per_addr
    act = np.broadcast_to(active, a.shape)
    bad = act & (a < 0)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        raise ValueError(f"{_where(idx)}lane {idx[-1]}: {what} {int(a[idx])} is negative")
    bad = act & (a >= 1 << 32)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        raise ValueError(f"{_where(idx)}lane {idx[-1]}: {what} {int(a[idx]):#x} does not fit in 32 bits")
    bad = act & (a % align != 0)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        raise ValueError(f"{_where(idx)}lane {idx[-1]}: {what} {int(a[idx]):#x} is not {align}-byte aligned")
    return a


def _check_src(o: SharedOp, src, active) -> np.ndarray:
    """cp.async source (global) byte addresses; default: lane l copies from base + l * size."""
    if src is None:
        return np.broadcast_to(np.arange(32, dtype=np.int64) * o.bytes_per_addr, np.shape(active)).copy()
    s = np.asarray(src)
    if s.dtype.kind not in "ui":
        raise TypeError(f"src must be integer global byte addresses, got dtype {s.dtype}")
    if s.shape[-1:] != (32,):
        raise ValueError(f"src must hold 32 global byte addresses (one per lane), got shape {s.shape}")
    s = np.broadcast_to(s.astype(np.int64), np.shape(active))
    act = np.broadcast_to(active, s.shape)
    bad = act & ((s < 0) | (s % o.bytes_per_addr != 0))
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        raise ValueError(f"{_where(idx)}lane {idx[-1]}: cp.async source address {int(s[idx]):#x} is not a "
                         f"non-negative multiple of {o.bytes_per_addr}")
    return s


def _source_lines(src: np.ndarray, active: np.ndarray) -> list:
    """Active lanes grouped by 128-byte source line, lines in order of their first lane."""
    groups: dict = {}
    for lane in range(32):
        if active[lane]:
            groups.setdefault(int(src[lane]) // SRC_LINE_BYTES, []).append(lane)
    return list(groups.values())


def cp_async_exact(o: SharedOp, src, active, groups=None) -> bool:
    """Inside the domain where the cp.async model reproduced every measurement exactly."""
    groups = _source_lines(src, active) if groups is None else groups
    for g in groups:
        if len(g) > 1:
            steps = {(int(src[g[i]]) - int(src[g[i - 1]])) / (g[i] - g[i - 1]) for i in range(1, len(g))}
            if len(steps) != 1 or steps.pop() not in (0, o.bytes_per_addr, -o.bytes_per_addr):
                return False
    spans = [(g[0], g[-1]) for g in groups]
    for i, (lo, hi) in enumerate(spans):
        for j, (lo2, _) in enumerate(spans):
            if i != j and lo < lo2 < hi:
                return False
    partial = not np.all(active)
    # Partial warp, every lane alone on its source line, not as base + lane * size: the H200
    # once merged two such lanes (10 and 11, cp.async.ca.16) into one wavefront; too few
    # measurements to model it.
    lanes = np.flatnonzero(active)
    usual_copy = len(set((np.asarray(src)[lanes] - lanes * o.bytes_per_addr).tolist())) <= 1
    if partial and len(groups) > 1 and all(len(g) == 1 for g in groups) and not usual_copy:
        return False
    return not (len(groups) > 4 and partial)


def _where(idx) -> str:
    return f"instruction {idx[0]}, " if len(idx) > 1 else ""


def _ranges(lanes) -> str:
    lanes = [int(x) for x in lanes]
    out, i = [], 0
    while i < len(lanes):
        j = i
        while j + 1 < len(lanes) and lanes[j + 1] == lanes[j] + 1:
            j += 1
        out.append(str(lanes[i]) if i == j else f"{lanes[i]}-{lanes[j]}")
        i = j + 1
    return ",".join(out) if out else "none"


# ---------------------------------------------------------------------------------------------
# one instruction, with the detail
# ---------------------------------------------------------------------------------------------

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
            d["same_source"] = [{"src": hex(k), "lanes": v} for k, v in sorted(self.lanes_by_source.items())
                                if len(v) > 1]
        return d


@dataclass
class BankReport:
    """Bank conflicts of one warp instruction, in Nsight Compute's terms."""

    op: str
    ptx: str
    wavefronts: int        # what l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld/st counts
    ideal: int             # fewest wavefronts possible: the phases with an active lane
    conflicts: int         # what l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_* counts
    phases: list
    addrs: list
    active: list
    merged_pairs: bool = False
    notes: list = field(default_factory=list)
    modelled_wavefronts: int | None = None   # cp.async.cg: the cost the counters do not show
    exact: bool = True     # False: outside the measured domain (cp.async with irregular sources)
    src: list | None = None

    @property
    def metrics(self) -> dict:
        wf_name, bc_name = metric_names(self.op)
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
        return format_report(self)


def bank_conflicts(op, addrs, mask=None, src=None):
    """Bank conflicts of one warp instruction (``addrs`` shape ``(32,)``) -> ``BankReport``;
    of ``n`` instructions (``addrs`` shape ``(n, 32)``) -> ``BatchReport`` of arrays.

    ``op`` is a shared-memory instruction in PTX spelling (``"ldmatrix.x4"``,
    ``"ld.shared.v4.b32"``, ``"cp.async.cg.16"`` ...); ``addrs`` the lanes' byte offsets in shared
    memory; ``mask`` the active lanes (an int, bit i = lane i, or 32 booleans; batched: ``(n,)``
    ints or ``(n, 32)`` booleans).  ldmatrix/stmatrix take no mask (all lanes execute them).
    ``src`` (cp.async only): the lanes' global source byte addresses; default ``lane * size``.
    """
    o = parse_shared_op(op)
    a = np.asarray(addrs)
    if src is not None and o.kind != "ldgsts":
        raise ValueError(f"src: only cp.async reads global memory; {o.name} takes no source addresses")
    if a.ndim == 2:
        return bank_conflicts_batch(o, a, mask, src)
    if a.ndim != 1:
        raise ValueError(f"addrs must hold 32 byte offsets (one per lane, shape (32,) or (n, 32)), got shape {a.shape}")
    active = _active(o, _mask_bits(mask, o))
    a = _check_addrs(o, a, active)
    if o.kind == "ldgsts":
        return _cp_async_report(o, a, _check_src(o, src, active), active)
    merged = merges_pairs(o, a, active)
    p = phase_size(o, merged)
    phases = []
    for k, s in enumerate(range(0, o.address_lanes, p)):
        lanes = list(range(s, min(s + p, o.address_lanes)))
        phases.append(_phase(o, k, lanes, a, active))
    wf = sum(ph.wavefronts for ph in phases)
    ideal = sum(1 for ph in phases if ph.active)
    notes = []
    modelled = None
    if merged:
        notes.append("partner lanes (n^1 or n^2) load the same addresses: the load takes "
                     f"{len(phases)} phase{'s' if len(phases) > 1 else ''} of {p} lanes instead of "
                     f"{32 // phase_size(o)} of {phase_size(o)}")
    return BankReport(o.name, o.ptx, int(wf), int(ideal), int(wf - ideal), phases,
                      [int(x) for x in a], [bool(x) for x in active], merged, notes, modelled)


def _cp_async_report(o: SharedOp, a, src, active) -> "BankReport":
    groups = _source_lines(src, active)
    phases = []
    for k, g in enumerate(groups):
        ph = _phase(o, k, g, a, active)
        by_src: dict = {}
        for lane in g:
            by_src.setdefault(int(src[lane]), []).append(lane)
        ph.lanes_by_source = by_src
        ph.wavefronts = max(ph.wavefronts, max(len(v) for v in by_src.values()))
        phases.append(ph)
    wf = sum(ph.wavefronts for ph in phases)
    width_phases = len({lane // (128 // o.bytes_per_addr) for lane in np.flatnonzero(active)})
    ideal = max(width_phases, -(-len(groups) // 4))
    exact = cp_async_exact(o, src, active, groups)
    notes = [CP_ASYNC_NOTE]
    if not exact:
        notes.append(CP_INEXACT_NOTE)
    modelled = None
    if o.name.startswith("cp.async.cg"):
        modelled = wf
        notes.append(f"modelled cost {wf} wavefronts ({wf - ideal} from conflicts); Nsight Compute "
                     "counts no shared-memory wavefronts and 0 bank conflicts for .cg (it bypasses L1)")
        wf, ideal = 0, 0
    r = BankReport(o.name, o.ptx, int(wf), int(ideal), int(wf - ideal), phases, [int(x) for x in a],
                   [bool(x) for x in active], False, notes, modelled, exact)
    r.src = [int(x) for x in src]
    return r


def _phase(o: SharedOp, k: int, lanes: list, a: np.ndarray, active: np.ndarray) -> Phase:
    act = [l for l in lanes if active[l]]
    nwords = max(1, o.bytes_per_addr // BANK_BYTES)
    banks: dict = {}
    by_word: dict = {}
    writes: dict = {}
    for l in act:
        base = (int(a[l]) // BANK_BYTES) * BANK_BYTES
        for j in range(nwords):
            wb = base + BANK_BYTES * j
            b = (wb // BANK_BYTES) % NUM_BANKS
            by_word.setdefault(wb, []).append(l)
            words = banks.setdefault(b, [])
            if wb not in words:
                words.append(wb)
            if o.kind == "ldgsts":
                writes.setdefault(b, []).append(l)
    for b in banks:
        banks[b].sort()
    if not act:
        wf = 0
    elif o.kind == "ldgsts":
        wf = max(len(v) for v in writes.values())
    else:
        wf = max(len(v) for v in banks.values())
    return Phase(k, lanes, act, wf, banks, by_word, writes)


# ---------------------------------------------------------------------------------------------
# many instructions
# ---------------------------------------------------------------------------------------------

@dataclass
class BatchReport:
    """Figures for ``n`` instructions: int32 arrays shaped ``(n,)``."""

    op: str
    wavefronts: np.ndarray
    ideal: np.ndarray
    conflicts: np.ndarray
    exact: np.ndarray | None = None   # bool (n,); all True except cp.async with irregular sources

    def __len__(self):
        return len(self.wavefronts)

    def to_dict(self) -> dict:
        return {"op": self.op, "wavefronts": self.wavefronts.tolist(), "ideal": self.ideal.tolist(),
                "conflicts": self.conflicts.tolist(), "exact": self.exact.tolist(), "total_wavefronts": int(self.wavefronts.sum()),
                "total_conflicts": int(self.conflicts.sum())}


KIND_CODE = {"ld": 0, "st": 1, "ldsm": 2, "stsm": 3, "ldgsts": 4}


def _batch_masks(mask, n: int, o: SharedOp) -> np.ndarray:
    """mask -> uint32 (n,) bit masks."""
    if mask is None:
        m = np.full(n, FULL_MASK, np.uint32)
    else:
        arr = np.asarray(mask)
        if arr.dtype == bool:
            if arr.shape == (32,):
                arr = np.broadcast_to(arr, (n, 32))
            if arr.shape != (n, 32):
                raise ValueError(f"mask of booleans must be shaped (32,) or ({n}, 32), got {arr.shape}")
            m = (arr.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(-1).astype(np.uint32)
        elif arr.dtype.kind in "ui":
            if arr.ndim == 0:
                arr = np.full(n, int(arr), np.int64)
            if arr.shape != (n,):
                raise ValueError(f"mask of ints must be one int or shaped ({n},), got {arr.shape}")
            arr = arr.astype(np.int64)
            if arr.size and (arr.min() < 0 or arr.max() > FULL_MASK):
                i = int(np.flatnonzero((arr < 0) | (arr > FULL_MASK))[0])
                raise ValueError(f"instruction {i}: mask {int(arr[i]):#x} does not fit in 32 bits")
            m = arr.astype(np.uint32)
        else:
            raise TypeError(f"mask must be ints (bit i = lane i) or booleans, got dtype {arr.dtype}")
    if o.kind in ("ldsm", "stsm"):
        need = np.uint32((1 << o.address_lanes) - 1 if o.address_lanes < 32 else FULL_MASK)
        bad = (m & need) != need
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"instruction {i}: mask: {o.name} is .sync.aligned, every lane of the warp "
                             f"executes it (mask {int(m[i]):#010x})")
    return m


def bank_conflicts_batch(op, addrs, mask=None, src=None) -> BatchReport:
    """Wavefronts, ideal and conflicts of many instructions: ``addrs`` shaped ``(n, 32)``.

    The numba kernel is compiled on first use (and cached on disk); importing fragsim does not
    import numba.
    """
    o = parse_shared_op(op)
    a = np.asarray(addrs)
    if a.ndim != 2 or a.shape[1] != 32:
        raise ValueError(f"addrs must be shaped (n, 32) for a batch, got {a.shape}")
    n = a.shape[0]
    m = _batch_masks(mask, n, o)
    if a.dtype.kind not in "ui":
        raise TypeError(f"addrs must be integer byte offsets into shared memory, got dtype {a.dtype}")
    if src is not None and o.kind != "ldgsts":
        raise ValueError(f"src: only cp.async reads global memory; {o.name} takes no source addresses")
    s = None
    if o.kind == "ldgsts":
        if src is None:
            s = (np.arange(32, dtype=np.int64) * o.bytes_per_addr)[None, :]
        else:
            s = np.asarray(src)
            if s.dtype.kind not in "ui":
                raise TypeError(f"src must be integer global byte addresses, got dtype {s.dtype}")
            if s.shape not in ((32,), (n, 32)):
                raise ValueError(f"src must be shaped (32,) or ({n}, 32), got {s.shape}")
    from .banks_kernel import batch_figures

    wf, ideal, exact, err = batch_figures(a, m, KIND_CODE[o.kind], o.bytes_per_addr, o.address_lanes, s)
    if err[0]:
        code, i, lane = (int(x) for x in err)
        what = {"ldsm": "ldmatrix row address", "stsm": "stmatrix row address",
                "ldgsts": "cp.async destination"}.get(o.kind, f"{o.name} address")
        v = int(a[i, lane])
        if code == 1:
            raise ValueError(f"instruction {i}, lane {lane}: {what} {v} is negative")
        if code == 2:
            raise ValueError(f"instruction {i}, lane {lane}: {what} {v:#x} does not fit in 32 bits")
        if code == 3:
            raise ValueError(f"instruction {i}, lane {lane}: {what} {v:#x} is not {o.bytes_per_addr}-byte aligned")
        sv = int(np.broadcast_to(s, (n, 32))[i, lane])
        raise ValueError(f"instruction {i}, lane {lane}: cp.async source address {sv:#x} is not a "
                         f"non-negative multiple of {o.bytes_per_addr}")
    if o.name.startswith("cp.async.cg"):
        wf = np.zeros_like(wf)
        ideal = np.zeros_like(ideal)
    return BatchReport(o.name, wf, ideal, wf - ideal, exact)


# ---------------------------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------------------------

def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _collision_lines(r: BankReport, p: Phase) -> list:
    """Banks needing more than one wavefront, by bank group (the banks one lane's access spans)."""
    nbytes = parse_shared_op(r.op).bytes_per_addr
    unit = max(BANK_BYTES, nbytes)
    span = unit // BANK_BYTES
    groups: dict = {}
    for lane in p.active:
        a = r.addrs[lane] // unit * unit
        g = (a // BANK_BYTES) % NUM_BANKS
        groups.setdefault(g, {}).setdefault(a, []).append(lane)
    out = []
    kind = parse_shared_op(r.op).kind
    what = "row" if kind in ("ldsm", "stsm") else ("word" if unit == BANK_BYTES else f"{unit}-byte unit")
    for g, units in sorted(groups.items()):
        banks = f"bank {g:2d}" if span == 1 else f"banks {g}-{g + span - 1}"
        if p.writes_by_bank:
            lanes = sorted(l for ls in units.values() for l in ls)
            if len(lanes) > 1:
                out.append(f"    {banks}: {len(lanes)} writes (lanes {_ranges(lanes)}), one wavefront each")
        elif len(units) > 1:
            parts = ", ".join(f"{u:#x} (lane{'s' if len(ls) > 1 else ''} {_ranges(ls)})"
                              for u, ls in sorted(units.items()))
            out.append(f"    {banks}: {len(units)} {what}s: {parts}")
    return out


def format_report(r: BankReport) -> str:
    lines = [f"{r.op}  ({r.ptx})"]
    nact = sum(r.active)
    how = ("(one per 128-byte source line)" if r.src is not None else
           f"of {len(r.phases[0].lanes) if r.phases else 0} lanes")
    lines.append(f"{nact} active lane{'s' if nact != 1 else ''} ({_ranges([i for i, x in enumerate(r.active) if x])}), "
                 f"{_plural(len(r.phases), 'phase')} {how}")
    for p in r.phases:
        head = f"phase {p.index}  lanes {_ranges(p.lanes):<7}"
        if r.src is not None and p.lanes:
            head += f" (source line {r.src[p.lanes[0]] // SRC_LINE_BYTES * SRC_LINE_BYTES:#x})"
        if not p.active:
            lines.append(f"{head}  no active lane: 0 wavefronts")
            continue
        nbanks = len(p.banks)
        most = max(len(v) for v in p.banks.values())
        lines.append(f"{head}  {_plural(p.wavefronts, 'wavefront'):<13} {nbanks} bank{'s' if nbanks != 1 else ''} hit, "
                     f"at most {_plural(most, 'distinct word')} per bank")
        lines.extend(_collision_lines(r, p))
        for src_addr, ls in sorted(p.lanes_by_source.items()):
            if len(ls) > 1:
                lines.append(f"    source {src_addr:#x}: read by {len(ls)} lanes ({_ranges(ls)}), one wavefront each")
    for note in r.notes:
        lines.append(f"note: {note}")
    wf_name, bc_name = metric_names(r.op)
    width = max(len(wf_name), len(bc_name))
    lines.append("Nsight Compute:")
    lines.append(f"  {wf_name:<{width}}  {r.wavefronts}")
    lines.append(f"  {bc_name:<{width}}  {r.conflicts}")
    lines.append(f"  {'ideal wavefronts':<{width}}  {r.ideal}")
    return "\n".join(lines)
