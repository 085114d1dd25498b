"""``run.shared.suggest()``: the swizzle that removes a run's bank conflicts, found and checked on the
addresses the run itself used.

    run = fragsim.run_kernel("tile.ptx", grid=1, block=128, args=[out], report=True)
    print(run.shared.suggest())       # per shared buffer with conflicts: the swizzle, the lines to change,
                                      # and every line's wavefronts and conflicts before and after

The traffic report (``fragsim.ptx.traffic``) keeps, for every ld/st.shared, ldmatrix, stmatrix and
cp.async instruction, the distinct warp executions it saw (the 32 lanes' shared addresses, the active
lanes, cp.async's sources) and how often each came (``Recorded``).  ``suggest`` then:

1. splits shared memory into **buffers**: the byte ranges the instructions touched, ranges that overlap
   merged (a tile written by one line and read by another is one buffer; two tiles that no instruction
   touches both of are two);
2. turns a buffer's recorded executions into the **access set** of ``fragsim.swizzle_search``
   (``fragsim.access.from_exprs`` of the addresses, relative to the buffer's start, one group per
   instruction: writes and reads) over a tile of the buffer's bytes, and scores every
   ``Swizzle<B,M,S>`` valid on it, each execution weighted by how often the run issued it;
3. **verifies** the best: every recorded address of the buffer is mapped through the swizzle (of the
   byte offset from the buffer's start) and every instruction that touches the buffer is recounted with
   the bank model the report used, and the search's round trip (a tagged tile written through the
   store lines and read through the load lines) must read the same elements as without it.

A swizzle applied to every access of a buffer is a permutation of its bytes: the kernel computes the
same thing, the store side and the load side must both apply it -- the suggestion names both.  Buffers
that other accesses touch (wgmma descriptors, TMA/bulk copies, atomics, mbarriers) are not remapped:
their layout is not an address the kernel computes, and the suggestion says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.layout.swizzle import Swizzle

#: Distinct warp executions one instruction's recording keeps (the access sets' ``MAX_INSTANCES``):
#: past it the instruction is counted but not recorded, and its buffer cannot be suggested for.
MAX_DISTINCT = 1 << 16
#: Warp executions held before duplicates are merged.
COMPACT = 1 << 15
#: Candidates (in the weighted search order) that are recounted on the recorded accesses.
RECOUNT = 8
#: Element types of the buffer's tile, by the narrowest access's bytes.
_DTYPES = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}
_BITS = np.uint32(1) << np.arange(WARP_LANES, dtype=np.uint32)


class Recorded:
    """The warp executions of one instruction: distinct (addresses (32,), lane mask, cp.async sources
    (32,)) with how often each came, and the byte range its active address lanes touched.

    ``add`` takes a step's executions (all warps at once) with a key of their bytes (the traffic
    report's memo key): a step that repeats one already held (a loop re-reading its tiles) only
    counts, so that recording costs a dict lookup per repeated step; duplicates across steps and
    warps are merged when ``COMPACT`` executions are held, and by ``distinct``."""

    def __init__(self, address_lanes: int, width: int, sources: bool):
        self.address_lanes = address_lanes
        self.width = width
        self.sources = sources
        self._lo: int | None = None
        self._hi: int | None = None
        self.overflow = False
        self._steps: list = []                  # (addrs, masks, src) of a step, or an array of merged rows
        self._weights: list = []                # per step: how often it came (int); merged rows: their counts
        self._keys: dict[bytes, int] = {}       # a step's key -> its index in _steps
        self._held = 0

    def lanes(self, masks: np.ndarray) -> np.ndarray:
        """bool (w, 32): the lanes whose address an execution used."""
        use = (np.asarray(masks, np.uint32)[:, None] & _BITS) != 0
        use[:, self.address_lanes:] = False
        return use

    def add(self, addrs: np.ndarray, masks: np.ndarray, src: np.ndarray | None = None,
            key: bytes | None = None) -> None:
        if key is not None:
            k = self._keys.get(key)
            if k is not None:
                self._weights[k] += 1
                return
        if self.overflow:                         # no more rows: the byte range only
            self._touched(addrs, self.lanes(masks))
            return
        if key is not None:
            self._keys[key] = len(self._steps)
        self._steps.append((addrs, masks, src))
        self._weights.append(1)
        self._held += len(addrs)
        if self._held > COMPACT:
            self._compact()

    def _touched(self, addrs: np.ndarray, use: np.ndarray) -> None:
        if use.any():
            a = addrs[use]
            lo, hi = int(a.min()), int(a.max()) + self.width
            self._lo = lo if self._lo is None else min(self._lo, lo)
            self._hi = hi if self._hi is None else max(self._hi, hi)

    @property
    def lo(self) -> int | None:
        """The lowest byte an active address lane touched (None: none did)."""
        self._compact()
        return self._lo

    @property
    def hi(self) -> int | None:
        """One past the highest byte an active address lane touched."""
        self._compact()
        return self._hi

    def _rows(self, addrs, masks, src) -> np.ndarray:
        use = self.lanes(masks)
        self._touched(addrs, use)
        cols = [np.where(use, addrs, 0), np.asarray(masks, np.int64)[:, None]]
        if self.sources:
            cols.append(np.where(use, src, 0) if src is not None else np.zeros_like(addrs))
        return np.concatenate(cols, axis=1).astype(np.int64)

    def _compact(self) -> None:
        """Merge what is held into one array of distinct executions with their counts."""
        if not self._steps or (len(self._steps) == 1 and isinstance(self._steps[0], np.ndarray)):
            return
        rows, counts = [], []
        for step, w in zip(self._steps, self._weights):
            if isinstance(step, np.ndarray):         # merged rows already
                rows.append(step)
                counts.append(w)
            else:
                rows.append(self._rows(*step))
                counts.append(np.full(len(step[0]), w, np.int64))
        keys = np.concatenate(rows)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        merged = np.bincount(inverse.reshape(-1), weights=np.concatenate(counts), minlength=len(uniq)).astype(np.int64)
        self._keys.clear()
        if len(uniq) > MAX_DISTINCT:
            self.overflow = True
            self._steps, self._weights, self._held = [], [], 0
            return
        self._steps, self._weights, self._held = [uniq], [merged], len(uniq)

    def distinct(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """(addrs (n, 32) int64, masks (n,) uint32, sources (n, 32) or None, counts (n,)): every
        distinct execution and how many times the run issued it."""
        self._compact()
        if not self._steps:
            k = np.zeros((0, WARP_LANES + 1 + (WARP_LANES if self.sources else 0)), np.int64)
            counts = np.zeros(0, np.int64)
        else:
            k, counts = self._steps[0], self._weights[0]
        addrs = k[:, :WARP_LANES]
        masks = k[:, WARP_LANES].astype(np.uint32)
        src = k[:, WARP_LANES + 1:] if self.sources else None
        return addrs, masks, src, counts


@dataclass
class Touch:
    """An access to shared memory that ``suggest`` does not remap: ``what`` it is ("wgmma", "atom",
    "bulk copy", "mbarrier"), at PTX ``line``, bytes ``[lo, hi)`` of the CTA's shared window."""

    what: str
    line: int
    instruction: str
    source: str | None
    lo: int
    hi: int

    def extend(self, lo: int, hi: int) -> None:
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)


@dataclass
class LineFigures:
    """One instruction of a buffer: its figures on the run's recorded accesses as they were
    (``before``) and mapped through the suggested swizzle (``after``; the same where none is)."""

    line: int
    where: str
    instruction: str
    op: str
    role: str                # "store" (st.shared, stmatrix, cp.async) or "load"
    source: str | None       # "kernel.cu:12" (None without line info)
    text: str                # the source line as written, else the PTX line ("" if unknown)
    executions: int
    wavefronts_before: int
    ideal: int
    wavefronts_after: int
    exact: bool = True

    @property
    def conflicts_before(self) -> int:
        return self.wavefronts_before - self.ideal

    @property
    def conflicts_after(self) -> int:
        return self.wavefronts_after - self.ideal

    def to_dict(self) -> dict:
        return {"line": self.line, "where": self.where, "source": self.source, "text": self.text,
                "instruction": self.instruction, "op": self.op, "role": self.role, "executions": self.executions,
                "ideal": self.ideal,
                "wavefronts_before": self.wavefronts_before, "wavefronts_after": self.wavefronts_after,
                "conflicts_before": self.conflicts_before, "conflicts_after": self.conflicts_after,
                "exact": self.exact}


@dataclass
class Suggestion:
    """What ``suggest`` found for one shared buffer (bytes ``[lo, hi)`` of the CTA's shared window,
    ``name`` the variables it lies in).  ``swizzle``: the ``Swizzle`` to apply to the byte offset from
    the buffer's start at every line in ``lines`` (None: none helps, or the buffer cannot be
    remapped: ``reason`` says which); ``lines``: every instruction that touches the buffer, with its
    figures before and after; ``round_trip``: the data check passed (None: not run)."""

    name: str
    lo: int
    hi: int
    swizzle: Swizzle | None
    lines: list[LineFigures]
    reason: str = ""
    round_trip: bool | None = None
    scored: int = 0
    notes: list[str] = field(default_factory=list)
    #: the accesses of the buffer that are not remapped (wgmma, bulk copies, atomics, mbarriers)
    others: list[Touch] = field(default_factory=list)

    @property
    def stores(self) -> list[LineFigures]:
        return [x for x in self.lines if x.role == "store"]

    @property
    def loads(self) -> list[LineFigures]:
        return [x for x in self.lines if x.role == "load"]

    @property
    def conflicts_before(self) -> int:
        return sum(x.conflicts_before for x in self.lines)

    @property
    def conflicts_after(self) -> int:
        return sum(x.conflicts_after for x in self.lines)

    @property
    def wavefronts_before(self) -> int:
        return sum(x.wavefronts_before for x in self.lines)

    @property
    def wavefronts_after(self) -> int:
        return sum(x.wavefronts_after for x in self.lines)

    @property
    def c_expression(self) -> str | None:
        """The swizzle as C on ``off``, the byte offset from the buffer's start."""
        sw = self.swizzle
        if sw is None:
            return None
        shift = f">> {sw.S}" if sw.S >= 0 else f"<< {-sw.S}"
        return f"off ^ ((off {shift}) & {sw.zzz_mask:#x})"

    def to_dict(self) -> dict:
        return {"buffer": self.name, "start": self.lo, "end": self.hi, "bytes": self.hi - self.lo,
                "swizzle": None if self.swizzle is None else repr(self.swizzle), "c": self.c_expression,
                "reason": self.reason or None, "round_trip": self.round_trip, "scored": self.scored,
                "store_lines": [x.where for x in self.stores], "load_lines": [x.where for x in self.loads],
                "wavefronts_before": self.wavefronts_before, "wavefronts_after": self.wavefronts_after,
                "conflicts_before": self.conflicts_before, "conflicts_after": self.conflicts_after,
                "lines": [x.to_dict() for x in self.lines], "notes": self.notes}

    def text(self) -> str:
        n = len(self.lines) + len({t.line for t in self.others})
        out = [f"shared buffer {self.name}: bytes {self.lo:#x}..{self.hi - 1:#x} ({self.hi - self.lo:,} bytes), "
               f"touched by {_count(n, 'instruction')}"]
        bad = [x for x in self.lines if x.conflicts_before]
        for x in bad:
            out.append(f"  conflicts: {x.where} ({x.op}): {x.conflicts_before:,} in {x.executions:,} warp "
                       f"execution{'s' if x.executions != 1 else ''}")
        if self.swizzle is None:
            out.append(f"  no swizzle suggested: {self.reason}")
        else:
            sw = self.swizzle
            what = "removes every bank conflict" if self.conflicts_after == 0 else \
                f"leaves {self.conflicts_after:,} of {self.conflicts_before:,} conflicts (the fewest of the {self.scored} " \
                "swizzles scored)"
            start = self.name.split(", ")[0]
            out.append(f"  suggestion: {sw!r} of off, the byte offset into the buffer each line uses now: address = "
                       f"{start} + ({self.c_expression}); it {what}")
            out.append("  apply it at every line that addresses the buffer, the store side and the load side alike:")
            for role, xs in (("store side", self.stores), ("load side", self.loads)):
                for at, text in _by_line(xs):
                    out.append(f"    {role + ':':<11} {at}  {_short(text)}".rstrip())
        if not self.lines:
            out += [f"  note: {n}" for n in self.notes]
            return "\n".join(out)
        out.append("  " + ("verified on the run's recorded accesses, every address of the buffer mapped through "
                           f"{self.swizzle!r} and recounted:" if self.swizzle is not None else
                           "the run's recorded accesses of the buffer:"))
        head = ("line", "op", "executions", "wavefronts", "ideal", "conflicts")
        cells = []
        for x in self.lines:
            wf = f"{x.wavefronts_before:,}" + (f" -> {x.wavefronts_after:,}" if self.swizzle is not None else "")
            cf = f"{x.conflicts_before:,}" + (f" -> {x.conflicts_after:,}" if self.swizzle is not None else "")
            cells.append((x.where, x.op + ("" if x.exact else " (estimate)"), f"{x.executions:,}", wf,
                          f"{x.ideal:,}", cf))
        wf = f"{self.wavefronts_before:,}" + (f" -> {self.wavefronts_after:,}" if self.swizzle is not None else "")
        cf = f"{self.conflicts_before:,}" + (f" -> {self.conflicts_after:,}" if self.swizzle is not None else "")
        cells.append(("total", "", f"{sum(x.executions for x in self.lines):,}", wf,
                      f"{sum(x.ideal for x in self.lines):,}", cf))
        w = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head))]
        for c in [head, *cells]:
            out.append("    " + "  ".join(v.ljust(w[i]) if i < 2 else v.rjust(w[i]) for i, v in enumerate(c)).rstrip())
        if self.round_trip:
            out.append(f"  round trip: a tagged tile written through the store lines and read through the load lines "
                       f"under {self.swizzle!r} reads every element the unswizzled buffer gives")
        out += [f"  note: {n}" for n in self.notes]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.text()


class Suggestions(Sequence):
    """``run.shared.suggest()``: one ``Suggestion`` per shared buffer looked at (those with bank
    conflicts, or those of the line asked for)."""

    def __init__(self, kernel: str, items: list[Suggestion], asked: str | None = None):
        self.kernel = kernel
        self.items = items
        self.asked = asked

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Suggestion]:
        return iter(self.items)

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "line": self.asked, "buffers": [s.to_dict() for s in self.items]}

    def text(self) -> str:
        if not self.items:
            return "suggest: no instruction of the run has bank conflicts in a shared buffer: nothing to fix"
        return "\n".join(s.text() for s in self.items)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"<Suggestions {self.kernel}: " + "; ".join(
            f"{s.name} {s.swizzle!r}" if s.swizzle is not None else f"{s.name} none" for s in self.items) + ">"


def _by_line(xs: list[LineFigures]) -> list[tuple[str, str]]:
    """The lines to change, a source line once with its PTX lines: ("kernel.cu:12 (PTX lines 185, 198)",
    its text)."""
    groups: dict[str, list[LineFigures]] = {}
    for x in xs:
        groups.setdefault(x.source or x.where, []).append(x)
    out = []
    for key, g in groups.items():
        if g[0].source:
            ptx = ", ".join(str(x.line) for x in g)
            out.append((f"{key} (PTX line{'s' if len(g) > 1 else ''} {ptx})", g[0].text))
        else:
            out.append((key, g[0].text or g[0].instruction))
    return out


def _short(text: str, n: int = 100) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def where(row) -> str:
    """How the suggestion names an instruction: its source line and PTX line, or the PTX line."""
    if row.source:
        return f"{os.path.basename(row.source)} (PTX line {row.line})"
    return f"PTX line {row.line}"


# ---------------------------------------------------------------------------------------- buffers

@dataclass
class _Buffer:
    lo: int
    hi: int
    rows: list = field(default_factory=list)       # recorded SharedRows
    touches: list = field(default_factory=list)    # Touch (wgmma, atoms, bulk copies, mbarriers)


def buffers(rows, touches) -> list[_Buffer]:
    """The byte ranges the recorded rows and the other accesses touched, overlapping ones merged."""
    items = [(r.recorded.lo, r.recorded.hi, r, None) for r in rows
             if r.recorded is not None and r.recorded.lo is not None]
    items += [(t.lo, t.hi, None, t) for t in touches]
    items.sort(key=lambda x: (x[0], x[1]))
    out: list[_Buffer] = []
    for lo, hi, r, t in items:
        if not out or lo >= out[-1].hi:
            out.append(_Buffer(lo, hi))
        b = out[-1]
        b.hi = max(b.hi, hi)
        if r is not None:
            b.rows.append(r)
        else:
            b.touches.append(t)
    for b in out:
        b.rows.sort(key=lambda r: r.line)
    return out


def _whole_variables(bufs: list[_Buffer], regions) -> list[_Buffer]:
    """A buffer alone in its shared variable takes the variable's bytes (its unused bytes too: a swizzle
    may move data there), where they hold whole accesses of every width the buffer's lines use."""
    for b in bufs:
        for _, off, size in regions:
            if not (off <= b.lo and b.hi <= off + size) or (off, off + size) == (b.lo, b.hi):
                continue
            if any(o is not b and o.lo < off + size and off < o.hi for o in bufs):
                continue
            width = max([r.recorded.width for r in b.rows] + [1])
            if (b.lo - off) % width == 0 and size % width == 0:
                b.lo, b.hi = off, off + size
    return bufs


def _name(b: _Buffer, regions) -> str:
    """The shared variables a buffer lies in ("tile", "tile+0x100", "sa, sb")."""
    names = []
    for name, off, size in regions:
        if off < b.hi and b.lo < off + size:
            names.append(name if b.lo <= off else f"{name}+{b.lo - off:#x}")
    return ", ".join(names) if names else "(no declared variable)"


def _rows_at(report, line) -> list:
    """The rows of ``line``: a PTX line number, or a source line as the report prints it."""
    if isinstance(line, bool) or not isinstance(line, (int, np.integer, str)):
        raise TypeError(f"line must be a PTX line number (int) or a line as the report prints it ('kernel.cu:42', "
                        f"'PTX line 45'), got {type(line).__name__}")
    lines = report.lines()
    if isinstance(line, str):
        text = line.strip()
        hit = [r for s in lines if s.where == text for r in s.rows]
        hit += [r for r in report.rows if r.source and r.source == text and r not in hit]
        if not hit and text.isdigit():
            return _rows_at(report, int(text))
    else:
        hit = [r for r in report.rows if r.line == int(line)]
    if not hit:
        shown = ", ".join(s.where for s in lines[:8]) + (" ..." if len(lines) > 8 else "")
        raise ValueError(f"line {line!r}: no shared-memory instruction of the run is there; the report's lines are "
                         f"{shown or 'none'} (a PTX line number also names one)")
    return hit


# ---------------------------------------------------------------------------------------- the search

def suggest(report, line=None) -> Suggestions:
    """The swizzles that remove the bank conflicts of ``report``'s run (``SharedReport.suggest``)."""
    rows = report.recorded_rows
    bufs = _whole_variables(buffers(rows, report.touches), report.regions)
    asked = None
    if line is None:
        chosen = [b for b in bufs if any(r.conflicts > 0 for r in b.rows)
                  or any(t.what != "mbarrier" and _conflicted(report, t) for t in b.touches)]
    else:
        picked = _rows_at(report, line)
        asked = str(line)
        chosen = [b for b in bufs if any(r in picked for r in b.rows)
                  or any(t.line in {r.line for r in picked} for t in b.touches)]
        if not chosen:
            raise ValueError(f"line {line!r}: its instructions touched no shared-memory address the report recorded "
                             "(only idle executions)")
    return Suggestions(report.kernel, [_suggest(report, b) for b in chosen], asked)


def _conflicted(report, t: Touch) -> bool:
    return any(r.line == t.line and r.conflicts > 0 for r in report.rows)


def _figures(row, addrs, masks, src, counts) -> tuple[int, int]:
    """(wavefronts, ideal) of ``row``'s executions at ``addrs``, weighted by ``counts``, by the bank
    model the report used (``Traffic._add``)."""
    from fragsim.banks import bank_conflicts_batch

    e = row.entry
    if not e.counted or not len(addrs):
        return 0, 0
    r = bank_conflicts_batch(e, addrs, masks, src)
    return int((r.wavefronts.astype(np.int64) * counts).sum()), int((r.ideal.astype(np.int64) * counts).sum())


def _mapped(rec: Recorded, addrs, masks, lo: int, sw) -> np.ndarray:
    """Every used address of the executions mapped through ``sw`` of its offset from ``lo``."""
    if sw is None:
        return addrs
    use = rec.lanes(masks)
    out = addrs.copy()
    out[use] = lo + sw(addrs[use] - lo)
    return out


def _lines(report, b: _Buffer, sw) -> list[LineFigures]:
    out = []
    for r in b.rows:
        rec = r.recorded
        a, m, s, n = rec.distinct()
        wf0, ideal = _figures(r, a, m, s, n)
        wf1, _ = _figures(r, _mapped(rec, a, m, b.lo, sw), m, s, n) if sw is not None else (wf0, ideal)
        source = os.path.basename(r.source) if r.source else None
        text = " ".join(((report.source_text(r.source) if r.source else "") or report.ptx_text(r.line)).split())
        out.append(LineFigures(r.line, where(r), r.instruction, r.op, "store" if r.entry.is_store else "load",
                               source, text, int(n.sum()), wf0, ideal, wf1, r.exact))
    return out


def _suggest(report, b: _Buffer) -> Suggestion:
    name = _name(b, report.regions)
    if b.touches:
        why = "; ".join(dict.fromkeys(_why(t) for t in b.touches))
        return Suggestion(name, b.lo, b.hi, None, _lines(report, b, None) if not _overflow(b) else [],
                          reason=why + " -- suggest() remaps the addresses of ld/st.shared, ldmatrix, stmatrix and "
                          "cp.async only", others=list(b.touches))
    if _overflow(b):
        r = next(r for r in b.rows if r.recorded.overflow)
        return Suggestion(name, b.lo, b.hi, None, [], reason=(
            f"{where(r)} ran more than {MAX_DISTINCT:,} distinct warp executions, more than the report records: "
            "run fewer CTAs (ctas=, --cta) or fewer loop trips"))
    before = _lines(report, b, None)
    try:
        res, counts = _search(b)
    except ValueError as e:
        return Suggestion(name, b.lo, b.hi, None, before, reason=f"the swizzle search refused this buffer: {e}")
    nothing = res.nothing

    def weighted(c) -> int:
        return int(sum((f.wavefronts.astype(np.int64) * counts[f.name]).sum() for f in c.figures))

    order = sorted(enumerate(res.candidates), key=lambda x: (weighted(x[1]), x[0]))
    notes: list[str] = []
    res.verify(nothing)
    checked = nothing.verified
    if not checked:
        notes.append(f"the round trip cannot check this buffer's data: without a swizzle already, {nothing.failure} "
                     "(reads of bytes no recorded store wrote); a swizzle applied to every access still permutes the "
                     "buffer's bytes alike")
    base = (sum(x.wavefronts_before for x in before), weighted(nothing))
    best = None
    tried = 0
    for _, c in order:
        if c is nothing or tried >= RECOUNT:
            continue
        sw = c.xor_map.swizzle() if c.xor_map is not None else None
        if sw is None:
            continue
        if checked and not res.verify(c):
            continue
        tried += 1
        lines = _lines(report, b, sw)
        key = (sum(x.wavefronts_after for x in lines), weighted(c))
        if best is None or key < best[0]:
            best = (key, sw, lines)
    scored = sum(1 for c in res.candidates if c is not nothing)
    if best is None or best[0][0] >= base[0]:
        if not any(x.conflicts_before for x in before):
            why = "no instruction of this buffer has bank conflicts"
        elif not scored:
            piece = max(r.entry.bytes_per_addr for r in b.rows)
            why = (f"no Swizzle<B,M,S> of the byte offset is valid on this buffer's {b.hi - b.lo:,} bytes (one must "
                   f"map them onto themselves and keep the {piece}-byte pieces the widest access moves whole)")
        else:
            piece = max(r.entry.bytes_per_addr for r in b.rows)
            why = (f"none of the {scored} Swizzle<B,M,S> of the byte offset valid on this buffer lowers its "
                   f"wavefronts ({base[0]:,} on the lines that touch it); each keeps the {piece}-byte pieces the "
                   f"widest access moves whole (M >= {piece.bit_length() - 1}), so the conflicts come from the access "
                   "pattern itself (lanes of one phase on words of one bank that no XOR of those address bits "
                   "separates), or need a layout a swizzle cannot express (a padded pitch, another thread->data "
                   "mapping)")
        return Suggestion(name, b.lo, b.hi, None, before, reason=why, scored=scored, notes=notes)
    _, sw, lines = best
    if not any(x.role == "store" for x in lines):
        notes.append("no line of the run writes this buffer: whatever fills it must lay its data out by the swizzle too")
    if b.lo % 128:
        notes.append(f"the buffer starts at {b.lo:#x}, not on a 128-byte boundary: swizzle the offset from its start "
                     f"(as shown), not the shared address")
    if any(not x.exact for x in lines):
        notes.append("cp.async figures marked (estimate) are outside the bank model's measured domain")
    return Suggestion(name, b.lo, b.hi, sw, lines, round_trip=True if checked else None, scored=scored, notes=notes)


def _why(t: Touch) -> str:
    """Why an access ``t`` keeps its buffer from being remapped."""
    at = f"PTX line {t.line}"
    if t.what == "wgmma":
        return (f"the wgmma at {at} reads this buffer through its matrix descriptors: its layout is the descriptors' "
                "swizzle mode (and that of what fills the buffer), not an address the kernel computes")
    if t.what == "bulk copy":
        return (f"the bulk/TMA copy at {at} moves this buffer's bytes: its layout is the tensor map's swizzle mode, "
                "not an address the kernel computes")
    if t.what == "atom":
        return f"the atomic at {at} ({t.instruction}) accesses this buffer"
    return f"the mbarrier of {at} lies in this buffer's bytes (a swizzle could move data onto it)"


def _overflow(b: _Buffer) -> bool:
    return any(r.recorded.overflow for r in b.rows)


def _search(b: _Buffer):
    """The swizzle search over the buffer's recorded access set: (result, {group name: counts})."""
    from fragsim.layout.tile import Tile
    from fragsim.search import access as A
    from fragsim.search.swizzle_search import swizzle_search

    size = b.hi - b.lo
    esize = min([r.entry.bytes_per_addr for r in b.rows] + [8])
    if any(r.entry.family in ("ldmatrix", "stmatrix") for r in b.rows):
        esize = min(esize, 2)
    line = 128 if size % 128 == 0 else size
    tile = Tile(size // line, line // esize, _DTYPES[esize])
    groups = []
    counts = {}
    for r in b.rows:
        rec = r.recorded
        a, m, s, n = rec.distinct()
        use = rec.lanes(m)
        rel = np.where(use, a - b.lo, 0)
        matrix = r.entry.family in ("ldmatrix", "stmatrix")
        name = where(r)
        g = A.from_exprs(tile, r.entry, rel, mask=None if matrix else use.astype(np.int64),
                         src=np.where(use, s, 0) if s is not None else None,
                         variables={"execution": range(len(a))}, name=name)
        groups.append(g)
        counts[name] = n
    whole = A.AccessSet(groups)
    reads, writes = whole.reads, whole.writes
    res = swizzle_search(tile, reads if len(reads) else None, writes if len(writes) else None, swizzles=True,
                         xor_maps=False, paddings=False, top=1)
    return res, counts
