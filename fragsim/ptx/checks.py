"""Kernel bugs, found and named while the kernel runs: ``run_kernel(..., check=...)`` -> ``run.issues``,
``fragsim run --check``.

``check`` is ``False`` (no checks: a fault stops the run with a ``PtxRuntimeError``, as always),
``True`` or ``"stop"`` (every check; the first finding stops the run with a ``KernelIssue``, a
``ValueError`` whose ``.issue`` is the finding), or ``"continue"`` (every finding is collected in
``run.issues`` and the run goes on as described below).  Add ``"uninitialized"`` to either
(``"continue,uninitialized"`` or a list of the words) to also report shared memory read before
anything in the run wrote it: off by default, since many kernels read padding on purpose.

Each finding (``Issue``) names its kind, the PTX line (and the CUDA source line where the PTX has
``.loc``), the CTA, the warp (within the CTA) and its lanes, the address, the buffer or shared
variable, and says what happened in one line.  A finding that recurs at the same line in the same
warp (a loop) is one ``Issue`` whose ``count`` grows; at most ``MAX_ISSUES`` are kept.  Races are
also grouped by the pair of lines involved (``Race``, ``run.races``): one per (write, other access)
pair of CUDA lines (``.loc``; else PTX lines), every access counted, the warps and CTAs named, the
barrier that orders the two in a sentence; races between warps first.  Of the accesses of one
instruction, those racing with another warp are reported before those racing only within their
own warp, so ``"stop"`` shows one between warps where there is one.

Kinds (``KINDS``) and what ``"continue"`` does after each:

- ``out_of_bounds``: a global access outside every buffer of the launch, a shared access beyond the
  CTA's static + dynamic shared memory, a local access beyond the thread's stack, a wgmma descriptor
  reading past shared memory.  A faulting load reads zeros, a store is dropped, a cp.async copy is
  dropped (its global source outside: it copies zeros), an ldmatrix/stmatrix/wgmma is skipped for
  its warp or warpgroup (destination registers keep their values).
- ``misaligned``: an address not aligned to the access (ld/st/atom to their width, ldmatrix and
  stmatrix rows to 16 bytes, cp.async to its size); the same as out of bounds after it.
- ``invalid_descriptor``: a wgmma matrix descriptor fragsim's descriptor model refuses (bits set
  outside its fields, a base offset without a swizzle); the warpgroup's wgmma is skipped.
- ``race``: compute-sanitizer racecheck's shared-memory hazards: two threads of a CTA access the same
  bytes, at least one writes, and no synchronisation orders them (read-after-write, write-after-read,
  write-after-write).  Ordering comes from CTA barriers (``bar.sync``/``barrier.sync``/``bar.arrive``:
  a barrier with a thread count orders only the threads that take part in it, a ``bar.arrive``
  thread's earlier accesses are ordered before the accesses of those that wait, not after) and, between
  lanes of one warp, from ``bar.warp.sync`` (``__syncwarp``; any member mask orders the whole warp
  here) -- lanes of a warp are not ordered by executing in lockstep, as under independent thread
  scheduling (sm_70 and later).  The lanes of one instruction are one access; they race only where
  two lanes write different bytes over each other.  A write that leaves the bytes as they were (two
  threads storing the same value) is not reported, as racecheck does not report it; atomics do not
  race with atomics.  ``ldmatrix`` and ``wgmma`` read for the whole warp.  Shadow memory:
  ``fragsim.ptx.shadow``.
- ``cp_async_in_flight``: shared bytes read or written while a ``cp.async`` copy into them has not
  landed, i.e. before the ``cp.async.wait_group``/``wait_all`` of the issuing thread that covers it;
  or while a bulk or tensor copy (``cp.async.bulk``, TMA) into them has not completed: before the
  machine lands it, which it does at the next operation on its mbarrier (semantics/mbarrier.py), so
  a read before any wait is found this way and a read after another thread's wait as a race.
- ``proxy_fence``: shared bytes the async proxy reads (a ``wgmma.mma_async`` operand, the source of a
  bulk or tensor copy to global memory) that the generic proxy wrote (``st``, ``atom``, ``red``,
  ``stmatrix``) with no ``fence.proxy.async`` between the write and the read in causality order
  (PTX ISA, memory consistency model, "proxy-preserved base causality order"): typically threads
  store a tile, ``__syncthreads()``, and a ``wgmma`` or a TMA store reads it without a
  ``fence.proxy.async`` before the barrier.  ``cp.async`` writes are not held to it (CUTLASS's
  cp.async + GMMA mainloops have no proxy fence); a warp's lanes count as one (a fence by one lane
  covers its warp's writes).  After it: nothing changes.
- ``wgmma_in_flight``: a ``wgmma.mma_async``'s accumulator or A registers read or written by another
  instruction, or its shared-memory operands written, before the ``wgmma.wait_group`` that covers it
  (a later ``wgmma.mma_async`` accumulating into the same registers is allowed, as PTX allows it).
- ``wgmma_fence``: a ``wgmma.mma_async`` with no ``wgmma.fence`` of its warpgroup before it, or whose
  accumulator or A registers another instruction accessed since the last one.
- ``divergent``: a ``.sync.aligned`` instruction (``mma``, ``ldmatrix``, ``stmatrix``, ``movmatrix``,
  ``wgmma``; ``bar.sync``/``bar.arrive``/``barrier.sync.aligned``, whose live lanes must all execute
  the same barrier instruction) executed by part of a warp, ``wgmma.mma_async`` by part of a
  warpgroup, ``shfl``/``vote``/``match``/``redux``/``elect`` whose member mask is not the lanes that
  execute it, ``bar.warp.sync`` while member lanes are elsewhere.  After it: the partial warp skips the
  tensor-core instruction (registers unchanged); a warp instruction runs with the lanes that execute
  it and are in its mask; the barriers go on as modelled.
- ``uninitialized`` (opt-in): shared bytes read that nothing in this run wrote.

- ``deadlock``: threads wait at a barrier that can never complete (others exited, or wait at another
  barrier), or at an mbarrier phase that can never complete (arrivals or a tx-count that nothing
  will bring to zero: an ``expect_tx`` larger than the copies, a wait for the wrong phase parity);
  the finding says who waits where.  After it the waiting threads go on as if their barriers had
  completed (the hardware would hang).

mbarriers order accesses as PTX defines (``fragsim.ptx.semantics.mbarrier``'s events): an arrive-on
releases the arriving warp's earlier accesses (all its lanes': one elected lane's arrive covers its
warp here), a test_wait/try_wait that sees the phase complete acquires them; a bulk or tensor copy
(``cp.async.bulk``, TMA) writes its bytes as the issuing warp, released by its complete-tx into the
mbarrier's phase, so reading them before the wait that observes that phase is a read-after-write race
(before it lands: ``cp_async_in_flight``).

Cost: the checks see no ``mma.sync`` events, so the machine keeps running them in batches; shared
accesses update the shadow by array indexing.  ``benchmarks/bench_run.py --check`` measures it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from fragsim.facts.hardware import MATRIX_ROW_BYTES, WARP_LANES, WARPGROUP_WARPS
from fragsim.ranges import format_ranges

from . import ast as A
from .observe import (BarArrive, BarRelease, BulkIssue, BulkLand, BulkRead, CpLand, MbarrierArrive, MbarrierWait, Observer,
                      SharedAccess, SharedStore, WarpSync)
from .program import Compiler, var_bytes
from .shadow import ALL_LANES, LANE_SHIFT, MAX_CELL, Shadow
from .state import EXITED, RUNNING, WAITING, PtxRuntimeError, SkipThreads, State

KINDS: dict[str, str] = {
    "out_of_bounds": "an access outside every global buffer, beyond the CTA's shared memory or the thread's stack",
    "misaligned": "an address not aligned to its access (width, 16-byte ldmatrix/stmatrix rows, cp.async size)",
    "invalid_descriptor": "a wgmma matrix descriptor the descriptor model refuses",
    "race": "two threads of a CTA access the same shared bytes, one writes, nothing orders them",
    "cp_async_in_flight": "shared bytes accessed before the cp.async.wait_group (cp.async) or the mbarrier wait "
                          "(cp.async.bulk, TMA) that completes a copy into them",
    "proxy_fence": "shared bytes written by the generic proxy read by the async proxy (wgmma, a TMA store) with no "
                   "fence.proxy.async between",
    "wgmma_in_flight": "a wgmma's registers or shared operands accessed before the wgmma.wait_group that covers it",
    "wgmma_fence": "a wgmma.mma_async without a wgmma.fence after its registers were last accessed",
    "divergent": "a .sync/.aligned instruction executed by part of a warp or warpgroup, or with a wrong member mask",
    "uninitialized": "shared bytes read that nothing in this run wrote (opt-in)",
    "deadlock": "threads wait at a barrier or an mbarrier phase that can never complete",
}
#: Words ``check`` takes.
WORDS = ("stop", "continue", "uninitialized")
#: Distinct findings a run keeps (a recurring one counts up instead).
MAX_ISSUES = 1000
#: Warp-collective instructions with a member mask: a partial warp is legal there (the mask says who).
MASKED_WARP_OPS = frozenset({"shfl", "vote", "match", "redux", "elect"})
THREADS_PER_WARPGROUP = WARP_LANES * WARPGROUP_WARPS


@dataclass
class Issue:
    """One finding.  ``warp``: the warp's index within its CTA (None for a deadlock, which names
    threads in ``message``); ``lanes``: as fragsim writes lane sets ("0-7,16"); ``address``: the
    first faulting lane's (global: the device address; shared: the offset in the CTA's shared
    memory); ``buffer``: the kernel argument (``args[2]``), global variable or shared variable
    involved; ``count``: how often it happened (same kind, line, CTA and warp)."""

    kind: str
    line: int
    source: str | None
    cta: tuple[int, int, int]
    warp: int | None
    lanes: str
    address: int | None
    buffer: str | None
    message: str
    count: int = 1

    def __str__(self) -> str:
        where = f"line {self.line}" + (f" ({self.source})" if self.source else "")
        who = "CTA ({},{},{})".format(*self.cta)
        if self.warp is not None:
            who += f" warp {self.warp} lane{'s' if not self.lanes.isdigit() else ''} {self.lanes}"
        times = f" [{self.count} times]" if self.count > 1 else ""
        return f"{self.kind}: {where}: {who}: {self.message}{times}"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "line": self.line, "source": self.source, "cta": list(self.cta),
                "warp": self.warp, "lanes": self.lanes, "address": self.address, "buffer": self.buffer,
                "message": self.message, "count": self.count}


#: A race's hazards as findings name them (``dup``: lanes of one store write over each other).
HAZARDS = {"raw": "read-after-write", "war": "write-after-read", "waw": "write-after-write",
           "dup": "write-after-write"}
#: Where a race's access is (``Checker.place``): ``(file, CUDA line)`` where the PTX has ``.loc``, else
#: ``("", PTX line)``; the write of a bulk/tensor copy (TMA) is ``BULK_PLACE``.
BULK_PLACE = ("TMA", 0)
BARRIER = "a barrier (bar.sync / __syncthreads)"
WARP_BARRIER = "__syncwarp (bar.warp.sync) or a barrier (bar.sync / __syncthreads)"


def _label(place: tuple[str, int]) -> str:
    if place == BULK_PLACE:
        return "a bulk/tensor copy (TMA)"
    return f"{place[0]}:{place[1]}" if place[0] else f"PTX line {place[1]}"


@dataclass
class Race:
    """The shared-memory races between two places of the kernel, every access of the run together
    (``Run.races``; ``run.issues`` keeps one finding per warp).  A place is the kernel's own CUDA
    line where the PTX has ``.loc`` (``write``: "gemm64.cu:12"), else its PTX line ("PTX line 104").

    ``write``: where the write is (the earlier write, for write-after-write); ``other``: where the
    access that races with it is (a read, or the later write); ``hazards``: which orders were found
    ("read-after-write", "write-after-read", "write-after-write"); ``count``: the threads' accesses
    that raced (a wgmma's read: one per warp), ``across`` how many of them raced with another warp's
    access (the others only with lanes of their own warp); ``warps``: the warps (within the CTA) on
    either side, ``ctas`` their CTAs; ``write_lines``/``other_lines``: the PTX lines; ``message``:
    what happened, ``fix``: the synchronisation that orders the two, each a sentence; ``issues``:
    the per-warp findings of ``run.issues`` it groups (at most ``MAX_ISSUES`` in all are kept).
    ``str(race)`` is one line: "race: {message}; fix: {fix}"."""

    write: str
    other: str
    hazards: list[str]
    count: int
    across: int
    warps: list[int]
    ctas: list[tuple[int, int, int]]
    write_lines: list[int]
    other_lines: list[int]
    message: str
    fix: str
    issues: list[Issue] = field(default_factory=list, repr=False)

    @property
    def within_warp(self) -> bool:
        """Every access raced only with lanes of its own warp (``__syncwarp`` orders them)."""
        return self.across == 0

    def __str__(self) -> str:
        return f"race: {self.message}; fix: {self.fix}"

    def to_dict(self) -> dict:
        return {"write": self.write, "other": self.other, "hazards": self.hazards, "count": self.count,
                "across": self.across, "warps": self.warps, "ctas": [list(c) for c in self.ctas],
                "write_lines": self.write_lines, "other_lines": self.other_lines, "message": self.message,
                "fix": self.fix}


def _few(lines: list[int]) -> str:
    """PTX lines, the first and last of many: "106, 109, ... 151 [16 lines]"."""
    return ", ".join(map(str, lines)) if len(lines) <= 3 else f"{lines[0]}, {lines[1]}, ... {lines[-1]} " \
        f"[{len(lines)} lines]"


@dataclass
class _Tally:
    """A ``Race`` as the run finds it."""

    write: tuple[str, int]
    other: tuple[str, int]
    kinds: set = field(default_factory=set)
    count: int = 0
    across: int = 0
    warps: set = field(default_factory=set)
    ctas: set = field(default_factory=set)
    write_lines: set = field(default_factory=set)
    other_lines: set = field(default_factory=set)
    issues: list = field(default_factory=list)

    def race(self, ctas: list) -> Race:
        hazards = list(dict.fromkeys(HAZARDS[k] for k in ("raw", "war", "waw", "dup") if k in self.kinds))
        return Race(_label(self.write), _label(self.other), hazards, self.count, self.across, sorted(self.warps),
                    [ctas[c] for c in sorted(self.ctas)], sorted(self.write_lines), sorted(self.other_lines),
                    self.message(hazards), self.fix(), self.issues)

    def _names(self) -> tuple[str, str, str]:
        """(the write's name, the other's, what follows the first mention): "line 12", "line 13",
        " of gemm64.cu" where both are lines of one file (" of the PTX" for PTX lines; where both are
        one CUDA line, its PTX lines and that line), else their labels and ""."""
        w, o = self.write, self.other
        if w == o and w[0] and w != BULK_PLACE and self.write_lines != self.other_lines:
            wl, ol = sorted(self.write_lines), sorted(self.other_lines)
            return f"PTX line {wl[0]}", f"PTX line {ol[0]}", f" ({_label(w)})"
        if w[0] == o[0] and w != BULK_PLACE:
            return f"line {w[1]}", f"line {o[1]}", f" of {w[0]}" if w[0] else " of the PTX"
        return _label(w), _label(o), ""

    def message(self, hazards: list[str]) -> str:
        """What happened, in a sentence: which place accessed what the other did, how often, by whom."""
        w, o, of = self._names()
        what: list[str] = []
        for k in ("raw", "war", "waw", "dup"):
            if k in self.kinds:
                first = not what
                a, b = (o, w) if k in ("raw", "waw") else (w, o)
                a += of if first else ""
                what.append(f"threads of {a} store different values to the same bytes in one instruction"
                            if k == "dup" else
                            f"{a} {'reads' if k == 'raw' else 'overwrites'} what {b} {'read' if k == 'war' else 'wrote'}")
        what = list(dict.fromkeys(what))
        ol = sorted(self.other_lines)
        if self.write[0] in ("", BULK_PLACE[0]) and not self.other[0]:
            ptx = ""                           # the places are PTX lines already
        elif self.write == BULK_PLACE or self.write_lines == self.other_lines:
            ptx = f"; PTX line{'s' if len(ol) > 1 else ''} {_few(ol)}"
        else:
            ptx = f"; PTX lines {_few(sorted(self.write_lines))} -> {_few(ol)}"
        warps = f"warp{'s' if len(self.warps) > 1 else ''} {format_ranges(sorted(self.warps))}"
        if self.across == self.count:
            who = f"between {warps}"
        elif self.across:
            who = f"between {warps} ({self.count - self.across:,} of them only within a warp)"
        else:
            who = f"each within its own warp ({warps})"
        where = f" in {len(self.ctas)} CTAs" if len(self.ctas) > 1 else ""
        return (f"{' and '.join(what)}, nothing ordering them ({', '.join(hazards)}{ptx}): "
                f"{self.count:,} access{'es' if self.count != 1 else ''}{where} {who}")

    def fix(self) -> str:
        """The synchronisation that orders the two places, in a sentence naming both."""
        w, o, of = self._names()
        wl, ol = sorted(self.write_lines), sorted(self.other_lines)
        if self.write == BULK_PLACE:          # a copy's bytes are ordered by its mbarrier, not a barrier
            return f"an mbarrier wait that observes the copy's phase complete, before {o}{of} reads"
        parts = []
        for kind in ("raw", "waw", "war"):
            if kind not in self.kinds:
                continue
            (a, al), (b, bl) = ((o, ol), (w, wl)) if kind == "war" else ((w, wl), (o, ol))
            again = "the next execution of " if max(bl) <= min(al) else ""    # the loop's next iteration
            parts.append(f"between {a} and {again}{b}")
        text = ""
        if parts:
            sync = BARRIER if self.across else WARP_BARRIER
            text = f"{sync} " + ", and another ".join(dict.fromkeys(parts)) + of
        if "dup" in self.kinds:          # lanes of one store: no barrier comes between them
            dup = f"one thread storing each word at {w}{of}"
            text = f"{text}; {dup}" if text else dup
        return text


class KernelIssue(PtxRuntimeError):
    """The first finding of a run with ``check=True``/``"stop"``: ``.issue`` is the ``Issue``; ``.race``
    the ``Race`` it is one of (a race; None for the other kinds), counted as far as the run went."""

    def __init__(self, issue: Issue, race: Race | None = None):
        super().__init__(str(issue))
        self.issue = issue
        self.race = race


def options(check) -> tuple[bool, bool] | None:
    """``run_kernel``'s ``check`` -> (stop at the first finding, report uninitialized reads), or None
    for no checks."""
    if check is None or check is False:
        return None
    if check is True:
        return True, False
    if isinstance(check, str):
        words = [w.strip() for w in check.split(",")]
    elif isinstance(check, (list, tuple, set, frozenset)) and all(isinstance(w, str) for w in check):
        words = list(check)
    else:
        raise TypeError(f"check must be False, True, 'stop', 'continue' (with ',uninitialized'), or a list of "
                        f"{', '.join(map(repr, WORDS))}; got {check!r}")
    bad = [w for w in words if w not in WORDS]
    if bad or not words:
        raise ValueError(f"check: {bad[0]!r} is not one of {', '.join(map(repr, WORDS))}" if bad else
                         "check: give 'stop' or 'continue'")
    if "stop" in words and "continue" in words:
        raise ValueError("check: 'stop' and 'continue' exclude each other")
    return "continue" not in words, "uninitialized" in words


def _short_name(name: str) -> str:
    """A shared variable as the source named it: nvcc's ``_ZZ6kernelPfE4tile`` (``..._$_0``) -> ``tile``."""
    m = re.search(r"E(\d+)([A-Za-z_]\w*?)(_\$_\d+)?$", name) if name.startswith("_ZZ") else None
    if m and len(m.group(2)) == int(m.group(1)):
        return m.group(2)
    return name


class Names:
    """Where an address lies: the kernel argument, global variable or shared variable, and how far."""

    def __init__(self, program, state, labels: dict[int, str]):
        g = state.gmem
        self.global_ = [(int(b.address or 0), int(b.address or 0) + b.nbytes, labels.get(id(b), b.name))
                        for b in g.buffers]
        L = program.layout
        sizes = {}
        for v in [*program.module.vars, *(x for f in program.module.functions.values() for x in f.vars)]:
            if v.space == "shared" and not v.extern:
                sizes[v.name] = var_bytes(v)
        nbytes = state.smem.shape[1]
        self.shared = sorted((off, off + (sizes.get(n, 0) if n != L.dynamic_name else nbytes - off), _short_name(n))
                             for n, off in L.shared.items())

    @staticmethod
    def _near(table, a: int, width: int, space: str) -> tuple[str | None, str]:
        """The buffer of ``table`` (start, end, name) an access lies in or nearest to, and where."""
        inside = [(lo, hi, n) for lo, hi, n in table if lo <= a < hi]
        if inside:
            lo, hi, n = inside[0]
            return n, f"{n}+{a - lo:#x}" + (f", past its {hi - lo} bytes" if a + width > hi else "")
        before = [(a - hi, lo, hi, n) for lo, hi, n in table if hi <= a]
        after = [(lo - a - width, lo, hi, n) for lo, hi, n in table if lo > a]
        if not before and not after:
            return None, f"no {space} buffer"
        if before and (not after or min(before)[0] <= min(after)[0]):
            _, lo, hi, n = min(before)
            return n, f"{n}+{a - lo:#x}, past its {hi - lo} bytes"
        _, lo, hi, n = min(after)
        return n, f"{lo - a} bytes before {n}"

    def of(self, space: str | None, a: int, width: int) -> tuple[str | None, str]:
        """(buffer or variable, a description of where ``a`` lies) for an access of ``width`` bytes."""
        if space == "global":
            return self._near(self.global_, a, width, "global")
        if space == "shared":
            return self._near(self.shared, a, width, "shared")
        return None, f"{space} memory"


def _names(x) -> set[str]:
    if isinstance(x, A.Reg):
        return {x.name}
    if isinstance(x, A.Vec):
        return {n for i in x.items for n in _names(i)}
    if isinstance(x, A.Addr) and isinstance(x.base, A.Reg):
        return {x.base.name}
    return set()


def registers(op) -> tuple[frozenset, frozenset]:
    """The (written, read) registers of an instruction, qualified as the register file names them."""
    ins = op.instr
    dst = {f"{op.function}::{n}" for x in ins.operands[:ins.ndst] for n in _names(x)}
    src = {f"{op.function}::{n}" for x in ins.operands[ins.ndst:] for n in _names(x)}
    return frozenset(dst), frozenset(src)


def cell_bytes(program) -> int:
    """The shadow's cell: the narrowest shared-memory access any instruction of the program can make
    (generic ones included), at most 16 bytes."""
    widths = [MAX_CELL]
    for op in program.ops:
        ins = op.instr
        if "width" in op.extra and op.extra.get("space") in ("shared", None):
            widths.append(int(op.extra["width"]))
        elif "shared_op" in op.extra:
            widths.append(int(op.extra["shared_op"].bytes_per_addr))
        elif ins.opcode == "cp" and len(ins.operands) >= 3 and isinstance(ins.operands[2], A.Imm):
            widths.append(int(ins.operands[2].value))
    w = max(1, min(widths))
    return 1 << (w.bit_length() - 1)       # a power of two dividing every access


@dataclass
class _Flight:
    """A wgmma.mma_async of one warpgroup not yet waited for."""

    line: int
    d: frozenset
    a: frozenset
    cells: np.ndarray
    group: int | None = None


@dataclass
class _Warpgroup:
    flights: list = field(default_factory=list)
    committed: int = 0
    fenced: bool = False
    touched: set = field(default_factory=set)      # wgmma registers accessed since the last fence


class Checker(Observer):
    """The checks of one run: an observer of the machine's events (``fragsim.ptx.observe``) that also
    takes the faults ``State.fault`` routes to it, and wraps the instructions it must see before they
    run (warp-collective ones, wgmma and its registers).  ``issues``: the findings."""

    #: sees no mma.sync events: the machine may run consecutive mma.sync as one call
    batch_mma = True

    def __init__(self, program, state, arch, *, stop: bool, uninitialized: bool, labels: dict[int, str]):
        self.program, self.s, self.arch = program, state, arch
        self.stop, self.uninitialized = stop, uninitialized
        self.issues: list[Issue] = []
        self._seen: dict[tuple, Issue] = {}
        self.names = Names(program, state, labels)
        self.sources = {op.line: op.instr.loc for op in program.ops}
        self.files = program.module.files
        self.shadow = Shadow(state, cell_bytes(program))
        self.warpgroups: dict[int, _Warpgroup] = {}
        self._store: tuple | None = None           # the bytes of the st the next SharedAccess is
        self._compiler: Compiler | None = None
        self._aligned_pc = np.array([op.kind == "barrier" and (op.instr.opcode == "bar" or "aligned" in op.instr.mods)
                                     for op in program.ops] + [False])
        self.bulk_lines = {op.line for op in program.ops if op.instr.opcode == "cp" and "bulk" in op.instr.mods}
        self._races: dict[tuple, _Tally] = {}      # (write place, other place) -> its accesses so far
        self.accessed = False                      # the run accessed shared memory (Run.shared_accessed)

    # ---- findings ---------------------------------------------------------------------------------

    def source(self, line: int) -> str | None:
        """The CUDA line of a PTX line (``.loc``): the kernel's own line where the code was inlined
        into it, then the inlined function's ("k.cu:36, inlined from cuda_fp16.hpp:373")."""
        loc = self.sources.get(line)
        chain = []
        while loc is not None:
            if loc.line > 0 and loc.file in self.files:
                chain.append(f"{self.files[loc.file]}:{loc.line}")
            loc = loc.inlined_at
        if not chain:
            return None
        inner = chain[0].rsplit("/", 1)[-1]
        return chain[-1] + (f", inlined from {inner}" if len(chain) > 1 else "")

    def place(self, line: int) -> tuple[str, int]:
        """Where a race's access is, as ``Race`` groups them: the kernel's own CUDA line (file, line)
        where the PTX has ``.loc``, else ("", the PTX line)."""
        if line < 0:
            return BULK_PLACE
        loc, out = self.sources.get(line), ("", line)
        while loc is not None:
            if loc.line > 0 and loc.file in self.files:
                out = (self.files[loc.file], loc.line)
            loc = loc.inlined_at
        return out

    def races(self) -> list[Race]:
        """The races found, one per pair of places: those between warps first (a barrier fixes them;
        a race only within warps is often a missing __syncwarp), then in the order first found."""
        ctas = self.s.geometry.ctas
        tallies = sorted(self._races.values(), key=lambda t: t.across == 0)
        return [t.race(ctas) for t in tallies]

    def report(self, kind: str, line: int, threads: np.ndarray, message: str, address: int | None = None,
               buffer: str | None = None, key=None, whole_cta: bool = False, race: _Tally | None = None) -> None:
        """A finding of ``threads`` (global indices, all of one warp unless ``whole_cta``); ``race``:
        the pair of places it is one access of."""
        s = self.s
        t0 = int(threads[0])
        cta = s.geometry.ctas[int(s.cta[t0])]
        warp = None if whole_cta else int(s.tid_linear[t0]) // WARP_LANES
        lanes = "" if whole_cta else format_ranges(s.lane[threads].tolist())
        if self.again(kind, line, t0, None if whole_cta else warp, key):
            return
        k = (kind, line, int(s.cta[t0]), warp, key)
        issue = Issue(kind, line, self.source(line), cta, warp, lanes, address, buffer, message)
        if len(self.issues) < MAX_ISSUES:
            self.issues.append(issue)
            self._seen[k] = issue
            if race is not None:
                race.issues.append(issue)
        if self.stop:
            raise KernelIssue(issue, None if race is None else race.race(s.geometry.ctas))

    def again(self, kind: str, line: int, t0: int, warp: int | None, key) -> bool:
        """A finding already made (same kind, line, CTA, warp and key) happened again: counted."""
        seen = self._seen.get((kind, line, int(self.s.cta[t0]), warp, key))
        if seen is not None:
            seen.count += 1
        return seen is not None

    def per_warp(self, threads: np.ndarray):
        """(the entries of each warp, in thread order) of an array of global threads."""
        w = self.s.warp[threads]
        if len(w) and w.min() == w.max():
            return [np.arange(len(threads))]
        order = np.argsort(w, kind="stable")
        cut = np.flatnonzero(np.diff(w[order])) + 1
        return np.split(order, cut)

    def fault(self, s, kind: str, idx: np.ndarray, bad: np.ndarray, line: int, message, addrs=None, width: int = 0,
              space: str | None = None) -> np.ndarray:
        """``State.fault``: threads ``idx[bad]`` faulted; one finding per warp.  Returns ``bad`` (the
        caller skips them) unless the checks stop at the first."""
        ks = np.flatnonzero(bad)
        threads = idx[ks]
        for sel in self.per_warp(threads):
            k = int(ks[sel[0]])
            msg, buf, addr = message(k), None, None
            if addrs is not None:
                addr = int(addrs[k])
                buf, where = self.names.of(space, addr, width)
                msg = f"{msg} ({where})"
            self.report(kind, line, threads[sel], msg, addr, buf)
        return bad

    # ---- shared memory events ------------------------------------------------------------------------

    def on_shared_store(self, s: State, e: SharedStore) -> None:
        self._store = (e.idx, e.data)

    def on_shared_access(self, s: State, e: SharedAccess) -> None:
        idx, addrs, width, write = e.idx, e.addrs, e.width, e.write
        opcode = s.op.instr.opcode
        self.accessed = True
        if opcode == "wgmma":                  # its descriptor reads are recorded before it runs
            return
        sh = self.shadow
        threads = idx.reshape(-1)
        a = addrs.reshape(-1)
        k = width // sh.G
        first = sh.t_cw[threads] // sh.W * sh.ncell + a.astype(np.int64) // sh.G
        if k > 1:
            owner = np.repeat(np.arange(len(threads)), k)
            X = (first[:, None] + np.arange(k)).reshape(-1)
            t = threads[owner]
        else:
            owner, X, t = None, first, threads
        cw = sh.t_cw[t]
        atomic = opcode in ("atom", "red")
        line = s.op.line
        if write:
            store, self._store = self._store, None
            same = None
            if store is not None and store[0] is idx:
                same = self._same(store[1], owner, X, k)
            h = sh.write(X, cw, sh.t_tid[t], sh.t_bit[t], line, atomic, same, issue=opcode == "cp")
        elif opcode == "ldmatrix":             # every lane receives some row: the warp reads
            h = sh.read(X, cw, np.int32(-1), ALL_LANES, line, False, self.uninitialized)
        else:
            h = sh.read(X, cw, sh.t_tid[t], sh.t_bit[t], line, atomic, self.uninitialized)
        if h.any():
            self._hazards(h, X, np.arange(len(X)) if owner is None else owner, threads, a, width, write, line,
                          opcode)

    def _same(self, data: np.ndarray, owner: np.ndarray | None, X: np.ndarray, k: int):
        """``same(j, other)`` for Shadow.write: entry j's bytes equal entry ``other``'s (or, None, the
        bytes shared memory holds now)."""
        sh = self.shadow
        G = sh.G
        part = np.arange(len(X)) % k
        if owner is None:
            owner = np.arange(len(X))
        flat = self.s.smem.reshape(-1)

        def mine(j):
            return data.reshape(len(data), -1, G)[owner[j], part[j]]

        def same(j, other):
            if other is None:
                base = (X[j] // sh.ncell) * sh.nbytes + (X[j] % sh.ncell) * G
                theirs = flat[base[:, None] + np.arange(G)]
            else:
                theirs = mine(other)
            return (mine(j) == theirs).all(axis=1)
        return same

    def on_cp_land(self, s: State, e: CpLand) -> None:
        sh = self.shadow
        X = sh.cells(e.flat // sh.nbytes, e.flat % sh.nbytes, e.width)
        t = np.repeat(e.idx, X.shape[1])
        sh.land(X.reshape(-1), sh.t_cw[t], sh.t_tid[t])

    def on_bulk_land(self, s: State, e: BulkLand) -> None:
        sh = self.shadow
        X = np.unique(e.flat // sh.nbytes * sh.ncell + e.flat % sh.nbytes // sh.G)
        sh.bulk_write(X, int(e.idx[0]), (int(e.cta), int(e.addr), int(e.phase)))

    def on_mbarrier_arrive(self, s: State, e: MbarrierArrive) -> None:
        self.shadow.mb_arrive(e.idx, (int(e.cta), int(e.addr)), np.broadcast_to(np.asarray(e.phase), e.idx.shape))

    def on_mbarrier_wait(self, s: State, e: MbarrierWait) -> None:
        self.shadow.mb_wait(e.idx, (int(e.cta), int(e.addr), int(e.phase)))

    def _bulk_cells(self, idx, flat):
        """(cells, their thread, the first shared address, bytes) of a bulk copy's shared bytes."""
        sh = self.shadow
        X = np.unique(flat // sh.nbytes * sh.ncell + flat % sh.nbytes // sh.G)
        t = np.repeat(idx[:1], len(X))
        return X, t, np.array([int(flat.min()) % sh.nbytes]), len(flat)

    def on_bulk_issue(self, s: State, e: BulkIssue) -> None:
        """A bulk or tensor copy into shared memory issues: its bytes are in flight until they land."""
        idx, flat = e.idx, e.flat
        self.accessed = True
        sh = self.shadow
        X, t, a, n = self._bulk_cells(idx, flat)
        h = sh.write(X, sh.t_cw[t], sh.t_tid[t], sh.t_bit[t], s.op.line, False, None, issue=True)
        if h.any():
            self._hazards(h, X, np.zeros(len(X), np.int64), idx[:1], a, n, True, s.op.line, "bulk")

    def on_bulk_read(self, s: State, e: BulkRead) -> None:
        """A bulk or tensor copy (or reduction) to global memory reads shared bytes through the async proxy."""
        idx, flat = e.idx, e.flat
        self.accessed = True
        sh = self.shadow
        X, t, a, n = self._bulk_cells(idx, flat)
        line = s.op.line
        h = sh.read(X, sh.t_cw[t], sh.t_tid[t], sh.t_bit[t], line, False, self.uninitialized)
        owner = np.zeros(len(X), np.int64)
        if h.any():
            self._hazards(h, X, owner, idx[:1], a, n, False, line, "bulk_read")
        if sh.proxy:
            self._proxy(X[~(h.raw | h.pending)], sh.t_cw[idx[:1]], line, idx[:1], "the bulk copy")

    def _proxy(self, X: np.ndarray, cws: np.ndarray, line: int, threads: np.ndarray, what: str) -> None:
        """The async proxy reads cells ``X`` for warps ``cws``: a finding per generic write not fenced."""
        sh = self.shadow
        bad = X[sh.unfenced(X, cws)] if len(X) else X
        if not len(bad):
            return
        x = int(bad[0])
        addr = sh.address(x)
        buf, where = self.names.of("shared", addr, sh.G)
        wl, wt = int(sh.w_line[x]), int(sh.w_tid[x])
        self.report("proxy_fence", line, threads,
                    f"{what} reads shared bytes at {addr:#x} ({where}) through the async proxy; they were written "
                    f"at {self._at(wl)} by {self._who(wt)} through the generic proxy, with no fence.proxy.async "
                    "between the write and this read", addr, buf, key=wl)

    def _who(self, tid: int) -> str:
        return f"warp {tid // WARP_LANES} lane {tid % WARP_LANES}"

    def _at(self, line: int) -> str:
        if line < 0:
            return "a bulk/tensor copy (TMA)"
        src = self.source(line)
        return f"line {line}" + (f" ({src})" if src else "")

    def _hazards(self, h, X, owner, threads, a, width, write, line, opcode) -> None:
        """Findings of one access set's hazards, one per kind and warp."""
        sh = self.shadow
        verb = {"cp": "cp.async into", "wgmma": "wgmma.mma_async reads", "bulk": "bulk copy into",
                "bulk_read": "bulk copy from"}.get(opcode, "write of" if write else "read of")
        whole = opcode == "wgmma"          # read for the whole warp: every lane is named
        info = h.info

        def access(j) -> tuple[str, int, str | None]:
            addr = int(a[owner[j]])
            buf, where = self.names.of("shared", addr, width)
            return f"{verb} {width} bytes at {addr:#x} ({where})", addr, buf

        def emit(kind, mask, text, key):
            ents = np.flatnonzero(mask)
            if not len(ents):
                return
            for sel in self.per_warp(threads[owner[ents]]):
                j = int(ents[sel[0]])
                what, addr, buf = access(j)
                who = np.unique(threads[owner[ents[sel]]])
                if whole:
                    w = int(who[0]) // WARP_LANES * WARP_LANES
                    who = w + np.flatnonzero(sh.s.present[w:w + WARP_LANES])
                self.report(kind, line, who, f"{what}: {text(j)}", addr, buf, key=key(j))

        def pending(j) -> str:
            pl = int(info["pend_line"][j])
            by = f"of {self._at(pl)} by {self._who(int(info['pend_tid'][j]))} into them"
            how = "read" if not write else "accessed"
            if pl in self.bulk_lines:
                return (f"the bulk copy {by} has not completed: {how} before a wait that observes its "
                        "mbarrier's phase complete")
            return f"the cp.async {by} has not landed: {how} before the cp.async.wait_group that covers it"
        if h.pending.any():
            emit("cp_async_in_flight", h.pending, pending, lambda j: int(info["pend_line"][j]))
        if h.inflight.any():
            emit("wgmma_in_flight", h.inflight & ~h.pending,
                 lambda j: f"the wgmma.mma_async of {self._at(self._flight_line(int(X[j])))} reads them until the "
                           "wgmma.wait_group that covers it", lambda j: self._flight_line(int(X[j])))
        quiet = h.pending | h.inflight

        def prior(what):
            return lambda j: (f"written at {self._at(int(info['w_line'][j]))} by {self._who(int(info['w_tid'][j]))} "
                              f"with no barrier{self._sync_hint(info['w_tid'][j], threads[owner[j]])} between: "
                              f"{what} hazard")

        def war(j):
            u = int(info["war_warp"][j])
            lanes = format_ranges(np.flatnonzero((int(info["r_lanes"][j]) >> np.arange(WARP_LANES)) & 1).tolist())
            own = u == int(sh.s.tid_linear[threads[owner[j]]]) // WARP_LANES
            return (f"read at {self._at(int(info['r_line'][j]))} by warp {u} lane{'s' if not lanes.isdigit() else ''} "
                    f"{lanes} with no barrier{' or __syncwarp' if own else ''} between: write-after-read hazard")
        races = []        # (kind, entries, the other side's warp, write line, other line, the message)
        if h.raw.any() or h.waw.any() or h.dup.any() or h.war.any():
            here = np.full(len(X), line, np.int64)
            for kind, mask, text in (("raw", h.raw, prior("read-after-write")), ("waw", h.waw, prior("write-after-write")),
                                     ("dup", h.dup, lambda j: f"{self._who(int(info['dup_tid'][j]))} writes other "
                                      "bytes there in the same step: write-after-write hazard"),
                                     ("war", h.war & ~h.waw & ~h.dup, war)):
                ents = np.flatnonzero(mask & ~quiet)
                if not len(ents):
                    continue
                other = (info["war_warp"][ents] if kind == "war" else
                         (info["dup_tid" if kind == "dup" else "w_tid"][ents] >> np.int32(LANE_SHIFT)))
                lines = (here[ents], info["r_line"][ents]) if kind == "war" else \
                    (here[ents], here[ents]) if kind == "dup" else (info["w_line"][ents], here[ents])
                races.append((kind, ents, other.astype(np.int64), *lines, text))
        for across in (True, False):         # another warp's races first: with stop, the one shown
            for kind, ents, other, wl, ol, text in races:
                mine = sh.s.tid_linear[threads[owner[ents]]] // WARP_LANES
                sel = (other != mine) == across
                if sel.any():
                    self._race(kind, ents[sel], other[sel], wl[sel], ol[sel], threads[owner[ents[sel]]], text,
                               access, across, whole, line)
        emit("uninitialized", h.uninit, lambda j: "nothing in this run wrote these bytes", lambda j: None)

    def _race(self, kind, ents, other, wl, ol, t, text, access, across: bool, whole: bool, line: int) -> None:
        """Races of one access set (entries ``ents``, their threads ``t``, ascending, the other side's
        warps ``other``, write and other PTX lines ``wl``/``ol``), all ``across`` warps or all within
        them: counted per pair of places (``Race``), one finding per warp and pair of lines."""
        s = self.s
        one = (wl == wl[0]).all() and (ol == ol[0]).all()
        pairs = [(int(wl[0]), int(ol[0]))] if one else np.unique(np.stack([wl, ol], axis=1), axis=0).tolist()
        for a, b in pairs:
            pair = slice(None) if one else (wl == a) & (ol == b)
            places = (self.place(a), self.place(b))
            tally = self._races.get(places)
            if tally is None:
                tally = self._races[places] = _Tally(*places)
            tally.kinds.add(kind)
            tp = t[pair]
            n = len(_distinct(tp))        # threads' accesses (a wide one once; a wgmma's: its warp's once)
            tally.count += n
            tally.across += n if across else 0
            tally.warps.update((s.tid_linear[_distinct(tp)] // WARP_LANES).tolist(), np.unique(other[pair]).tolist())
            tally.ctas.update(_distinct(s.cta[tp]).tolist())
            tally.write_lines.add(a)
            tally.other_lines.add(b)
            ep = ents[pair]
            for sel in self.per_warp(tp):
                t0 = int(tp[sel[0]])
                key = (kind, a if kind != "war" else b, across)
                if self.again("race", line, t0, int(s.tid_linear[t0]) // WARP_LANES, key) or \
                        len(self.issues) >= MAX_ISSUES and not self.stop:
                    continue                   # (past MAX_ISSUES the Race still counts it)
                j = int(ep[sel[0]])
                who = _distinct(tp[sel])
                if whole:
                    w = int(who[0]) // WARP_LANES * WARP_LANES
                    who = w + np.flatnonzero(s.present[w:w + WARP_LANES])
                what, addr, buf = access(j)
                self.report("race", line, who, f"{what}: {text(j)}", addr, buf, key=key, race=tally)

    def _sync_hint(self, writer_tid, thread) -> str:
        same = int(writer_tid) // WARP_LANES == int(self.s.tid_linear[int(thread)]) // WARP_LANES
        return " or __syncwarp" if same else ""

    def _flight_line(self, X: int) -> int:
        for wg in self.warpgroups.values():
            for f in wg.flights:
                if len(f.cells) and (f.cells == X).any():
                    return f.line
        return 0

    # ---- barriers --------------------------------------------------------------------------------------

    def on_bar_arrive(self, s: State, e: BarArrive) -> None:
        self.shadow.arrive(e.idx, e.barrier)

    def on_bar_release(self, s: State, e: BarRelease) -> None:
        self._aligned_barriers(s, e.idx)
        self.shadow.release(e.idx, s.barrier[e.idx])

    def _aligned_barriers(self, s, idx) -> None:
        """``bar.sync`` (``barrier.sync.aligned``) is .aligned: the live lanes of a warp that a barrier
        generation releases all executed the same barrier instruction, and none is missing.  Checked as
        the barrier completes: a warp's lanes may arrive at one instruction at different steps."""
        pcs = s.pc[idx] - 1
        if len(idx) % WARP_LANES == 0 and pcs.min() == pcs.max():
            r = idx.reshape(-1, WARP_LANES)
            if not (r[:, 0] % WARP_LANES).any() and (r[:, -1] - r[:, 0] == WARP_LANES - 1).all():
                return                 # whole warps, one instruction
        aligned = self._aligned_pc[pcs]
        if not aligned.any():
            return
        warps, inv, counts = np.unique(s.warp[idx], return_inverse=True, return_counts=True)
        t = warps[:, None] * WARP_LANES + np.arange(WARP_LANES)
        live = (s.present[t] & (s.status[t] != EXITED)).sum(axis=1)
        lo = np.full(len(warps), np.iinfo(np.int64).max)
        hi = np.full(len(warps), -1)
        np.minimum.at(lo, inv, pcs)
        np.maximum.at(hi, inv, pcs)
        has = np.zeros(len(warps), bool)
        has[inv[aligned]] = True
        for k in np.flatnonzero(has & ((counts < live) | (lo != hi))):
            sel = idx[inv == k]
            here = np.zeros(WARP_LANES, bool)
            here[s.lane[sel]] = True
            first = int(lo[k])
            ins = self.program.ops[first].instr
            split = "" if lo[k] == hi[k] else "; they wait at different barrier instructions (" + ", ".join(
                self._at(self.program.ops[int(p)].line) for p in np.unique(pcs[inv == k])) + ")"
            missing = self._missing(s, int(warps[k]), here) if counts[k] < live[k] else ""
            self.report("divergent", ins.line, sel,
                        f"{ins.text} is .aligned: every lane of the warp that has not exited executes the same "
                        f"barrier instruction{split}{'; ' + missing if missing else ''}")

    def on_warp_sync(self, s: State, e: WarpSync) -> None:
        self.shadow.warp_sync(e.idx)

    def deadlock(self, program, s) -> None:
        """No thread can run and some wait: one finding per barrier waited at (who waits where); then,
        continuing, the waiting threads go on."""
        from .machine import expected
        waiting = np.flatnonzero(s.status == WAITING)
        key = s.cta[waiting].astype(np.int64) * 64 + s.barrier[waiting]
        groups = [waiting[key == k] for k in np.unique(key)]
        for g in groups:
            cta, bar = int(s.cta[g[0]]), int(s.barrier[g[0]])
            mine = (s.cta == cta) & s.present
            exited = int((mine & (s.status == EXITED)).sum())
            lines = sorted({program.ops[int(p) - 1].line for p in s.pc[g]})
            others = [o for o in groups if int(s.cta[o[0]]) == cta and o is not g]
            elsewhere = "".join(
                f"; threads {format_ranges(s.tid_linear[o].tolist())} wait at barrier {int(s.barrier[o[0]])} "
                f"({self._at(program.ops[int(s.pc[o[0]]) - 1].line)})" for o in others)
            count = s.barrier_count.get((cta, bar), 0)
            self.report("deadlock", lines[0], g,
                        f"threads {format_ranges(s.tid_linear[g].tolist())} wait at barrier {bar}, which expects "
                        f"{expected(s, cta, count)}; {exited} thread(s) of the CTA have exited{elsewhere}; "
                        "no other thread can run", whole_cta=True, key=bar)
        s.status[waiting] = RUNNING          # as if the barriers had completed
        s.barrier[waiting] = -1
        s.barrier_count.clear()
        s.barrier_arrivals.clear()

    def mbarrier_deadlock(self, s, units, waiting: list) -> None:
        """No thread can run, and threads wait for mbarrier phases (``waiting``: the mbarriers, of
        ``units``) or the cluster barrier that nothing can complete: one finding per mbarrier; then,
        continuing, the waits return True."""
        for bar in waiting:
            threads = np.concatenate(bar.waiters)
            op = self.program.ops[int(s.pc[int(threads[0])])]
            self.report("deadlock", op.line, threads,
                        f"threads {format_ranges(s.tid_linear[threads].tolist())} wait ({op.instr.text}) for phase "
                        f"{bar.phase} of the mbarrier at shared {bar.addr:#x} to complete; {bar.describe()}; no thread "
                        "can arrive or complete a transaction", whole_cta=True, key=("mbarrier", bar.addr))
            bar.waiters = []
            units.wake(s, threads, True)
        for w in units.cluster_waiters:
            op = self.program.ops[int(s.pc[int(w[0])])]
            self.report("deadlock", op.line, w, f"threads {format_ranges(s.tid_linear[w].tolist())} wait at "
                        "barrier.cluster.wait for threads that cannot arrive", whole_cta=True, key="cluster")
            units.wake(s, w, True)
        units.cluster_waiters = []

    # ---- instructions the checks see before they run -------------------------------------------------

    def compiler(self) -> Compiler:
        if self._compiler is None:
            self._compiler = Compiler(self.program.module, self.program.entry, self.arch)
        return self._compiler

    def reader(self, op, operand, t):
        """A reader of ``operand`` of ``op`` (an address for an ``A.Addr``) as the instruction reads it."""
        c = self.compiler()
        c.function = self.program.module.functions[op.function]
        if isinstance(operand, A.Addr):
            return c.address_of(operand, "shared", op.line)[0]
        return c.reader(operand, t, op.line)

    def install(self) -> None:
        """Wrap the ``run`` of every instruction the checks must see before it runs."""
        from .types import TYPES
        wgmma_regs: set[str] = set()
        for op in self.program.ops:
            ins = op.instr
            if ins.opcode == "wgmma" and ins.mods[:1] == ("mma_async",):
                d, a = ins.operands[0], ins.operands[1]
                wgmma_regs |= {f"{op.function}::{n}" for n in _names(d) | (_names(a) if isinstance(a, A.Vec) else set())}
        ops = self.program.ops
        if any(op.instr.opcode == "wgmma" and op.instr.mods[:1] == ("mma_async",) or op.instr.opcode == "cp" and
               "bulk" in op.instr.mods for op in ops):
            self.shadow.proxy_on()
        for op in ops:
            ins = op.instr
            pre = []
            if self.shadow.proxy and _proxy_fence(ins):
                pre.append(self._proxy_fence)
            if op.collective and ins.opcode not in MASKED_WARP_OPS:
                pre.append(self._whole_warps(op))
            if not self.stop and (ins.opcode in ("ldmatrix", "stmatrix") or ins.opcode == "cp" and
                                  len(ins.operands) >= 3):
                op.run = self._skipping(op.run, ins.opcode != "cp")
            if ins.opcode == "wgmma":
                what = ins.mods[0] if ins.mods else ""
                if what == "mma_async":
                    pre.append(self._wgmma_mma(op, TYPES["u64"]))
                elif what in ("fence", "commit_group", "wait_group"):
                    pre.append(self._wgmma_sync(op, what))
            elif wgmma_regs:
                dst, src = registers(op)
                regs = (dst | src) & wgmma_regs
                if regs:
                    pre.append(self._wgmma_touch(op, frozenset(regs)))
            if pre:
                op.run = _wrapped(op.run, pre)

    def _proxy_fence(self, s, idx):
        self.shadow.proxy_fence(idx)
        return idx

    def _missing(self, s, w: int, here: np.ndarray) -> str:
        """Where the lanes of global warp ``w`` that are not in ``here`` (bool (32,)) are."""
        t = w * WARP_LANES + np.arange(WARP_LANES)
        parts = []
        for what, m in (("do not exist (the block ends)", ~s.present[t]),
                        ("have exited", s.present[t] & (s.status[t] == EXITED) & ~here)):
            if m.any():
                parts.append(f"lanes {format_ranges(np.flatnonzero(m).tolist())} {what}")
        rest = s.present[t] & (s.status[t] != EXITED) & ~here
        for pc in np.unique(s.pc[t][rest]):
            m = rest & (s.pc[t] == pc)
            op = self.program.ops[int(pc)] if pc < len(self.program.ops) else None
            at = f"at {self._at(op.line)}" if op is not None else "elsewhere"
            if s.status[t][m].any() and (s.status[t][m] == WAITING).all() and op is not None:
                at = f"wait at a barrier ({self._at(self.program.ops[int(pc) - 1].line)})"
            parts.append(f"lanes {format_ranges(np.flatnonzero(m).tolist())} are {at}")
        return "; ".join(parts)

    def _whole_warps(self, op):
        """Every lane of a warp executes a .sync.aligned instruction (wgmma.mma_async: every warp of a
        warpgroup); continuing, the others skip it."""
        ins = op.instr
        groups = ins.opcode == "wgmma" and ins.mods[:1] == ("mma_async",)

        def pre(s, idx):
            if idx is s.span_idx and s.span_warps and not groups:
                return idx
            bad = np.zeros(len(idx), bool)
            if len(idx) % WARP_LANES == 0:
                r = idx.reshape(-1, WARP_LANES)
                fast = not (r[:, 0] % WARP_LANES).any() and (r[:, -1] - r[:, 0] == WARP_LANES - 1).all()
            else:
                fast = False
            if not fast:
                warps, inv, counts = np.unique(s.warp[idx], return_inverse=True, return_counts=True)
                full = (counts == WARP_LANES) & s.present.reshape(-1, WARP_LANES)[warps].all(axis=1)
                for k in np.flatnonzero(~full):
                    here = np.zeros(WARP_LANES, bool)
                    sel = inv == k
                    here[s.lane[idx[sel]]] = True
                    self.report("divergent", ins.line, idx[sel],
                                f"{ins.text} is .sync.aligned: all {WARP_LANES} lanes of the warp execute it "
                                f"together; {self._missing(s, int(warps[k]), here)}")
                bad = ~full[inv]
            if groups:
                key = s.cta[idx].astype(np.int64) * 64 + s.tid_linear[idx] // THREADS_PER_WARPGROUP
                keys, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
                ok = counts == THREADS_PER_WARPGROUP
                for k in np.flatnonzero(~ok):
                    sel = (inv == k) & ~bad
                    if sel.any():
                        warps = np.unique(s.tid_linear[idx[sel]] // WARP_LANES).tolist()
                        self.report("divergent", ins.line, idx[sel][:WARP_LANES],
                                    f"{ins.text} is executed by the {WARPGROUP_WARPS} warps of a warpgroup together; "
                                    f"only warp(s) {format_ranges(warps)} of warpgroup {int(keys[k] % 64)} do")
                bad |= ~ok[inv]
            return idx if not bad.any() else idx[~bad]
        return pre

    def _skipping(self, run, matrix: bool):
        """Checks going on past faults: ldmatrix/stmatrix/cp.async run again without the threads whose
        shared addresses faulted (``SkipThreads``): a warp with a bad row skips ldmatrix/stmatrix, a
        thread with a bad destination its copy."""
        def checked(s, idx):
            while len(idx):
                try:
                    return run(s, idx)
                except SkipThreads as e:
                    drop = np.isin(s.warp[idx], s.warp[e.threads]) if matrix else np.isin(idx, e.threads)
                    idx = idx[~drop]
        return checked

    # ---- wgmma ---------------------------------------------------------------------------------------

    def _warpgroups(self, s, idx) -> tuple[np.ndarray, np.ndarray]:
        """(key of each warpgroup of ``idx``, its first thread)."""
        key = s.cta[idx].astype(np.int64) * 64 + s.tid_linear[idx] // THREADS_PER_WARPGROUP
        keys, first = np.unique(key, return_index=True)
        return keys, idx[first]

    def _wgmma_sync(self, op, what: str):
        keep = int(op.instr.operands[0].value) if what == "wait_group" and op.instr.operands and \
            isinstance(op.instr.operands[0], A.Imm) else 0

        def pre(s, idx):
            for key in self._warpgroups(s, idx)[0].tolist():
                wg = self.warpgroups.setdefault(key, _Warpgroup())
                if what == "fence":
                    wg.fenced, wg.touched = True, set()
                elif what == "commit_group":
                    wg.committed += 1
                    for f in wg.flights:
                        if f.group is None:
                            f.group = wg.committed
                else:
                    done = [f for f in wg.flights if f.group is not None and f.group <= wg.committed - keep]
                    warps = (key % 64) * WARPGROUP_WARPS + np.arange(WARPGROUP_WARPS)
                    warps = warps[warps < self.shadow.W]
                    for f in done:      # its reads are over, and ordered before what the warpgroup does next
                        if len(f.cells):
                            self.shadow.wg_reads[f.cells] -= 1
                            self.shadow.reading -= 1
                        self.shadow.r_stamp[f.cells[:, None], warps] = -1
                    wg.flights = [f for f in wg.flights if f not in done]
            return idx
        return pre

    def _wgmma_touch(self, op, regs: frozenset):
        """An instruction that accesses registers some wgmma.mma_async uses."""
        ins = op.instr

        def pre(s, idx):
            keys, first = self._warpgroups(s, idx)
            for key in keys.tolist():
                wg = self.warpgroups.setdefault(key, _Warpgroup())
                wg.touched |= regs
                for f in wg.flights:
                    hit = regs & (f.d | f.a)
                    if hit:
                        sel = idx[s.cta[idx].astype(np.int64) * 64 + s.tid_linear[idx] // THREADS_PER_WARPGROUP == key]
                        self.report("wgmma_in_flight", ins.line, sel[s.warp[sel] == s.warp[sel[0]]],
                                    f"{ins.text} accesses {_reg_list(hit)} of the wgmma.mma_async at "
                                    f"{self._at(f.line)} before the wgmma.wait_group that covers it", key=f.line)
                        break
            return idx
        return pre

    def _wgmma_mma(self, op, u64):
        ins = op.instr
        form = op.extra["form"]
        d, a, b = ins.operands[:3]
        a_regs = isinstance(a, A.Vec)
        imms = [int(x.value) for x in ins.operands[4:] if isinstance(x, A.Imm)]
        trans = imms[2:] if form.scale_ab else imms
        trans_a = bool(trans[0]) if form.trans and not a_regs and trans else False
        trans_b = bool(trans[-1]) if form.trans and trans else False
        dset = frozenset(f"{op.function}::{n}" for n in _names(d))
        aset = frozenset(f"{op.function}::{n}" for n in _names(a)) if a_regs else frozenset()
        M, N, K = form.shape
        operands = [("B", self.reader(op, b, u64), N, form.fmt("B").storage_bits, "MN" if trans_b else "K")]
        if not a_regs:
            operands.insert(0, ("A", self.reader(op, a, u64), M, form.fmt("A").storage_bits, "MN" if trans_a else "K"))

        def pre(s, idx):
            keys, first = self._warpgroups(s, idx)
            drop = []
            sh = self.shadow
            for key, t in zip(keys.tolist(), first.tolist()):
                wg = self.warpgroups.setdefault(key, _Warpgroup())
                threads = idx[s.cta[idx].astype(np.int64) * 64 + s.tid_linear[idx] // THREADS_PER_WARPGROUP == key]
                lead = threads[:WARP_LANES]
                mine = dset | aset
                if not wg.fenced or wg.touched & mine:
                    why = ("no wgmma.fence of the warpgroup comes before it" if not wg.fenced else
                           f"{_reg_list(wg.touched & mine)} were accessed after the last wgmma.fence")
                    self.report("wgmma_fence", ins.line, lead, f"{ins.text}: {why}")
                for f in wg.flights:
                    hit = mine & (f.d | f.a)
                    if hit and not (dset == f.d and not (aset & f.d) and not (dset & f.a)):
                        self.report("wgmma_in_flight", ins.line, lead,
                                    f"{ins.text} uses {_reg_list(hit)} of the wgmma.mma_async at {self._at(f.line)} "
                                    "before the wgmma.wait_group that covers it", key=f.line)
                        break
                cells, bad = [], False
                for name, read, rows, bits, major in operands:
                    desc = int(read(s, np.array([t]))[0])
                    try:
                        got = _operand_cells(desc, rows, bits, major, sh.G)
                    except ValueError as e:
                        self.report("invalid_descriptor", ins.line, lead, f"{ins.text}: {name} descriptor: {e}",
                                    key=name)
                        bad = True
                        continue
                    top = int(got.max()) * sh.G + sh.G
                    if top > sh.nbytes:
                        self.report("out_of_bounds", ins.line, lead,
                                    f"{ins.text}: the {name} descriptor {desc:#018x} reads shared bytes up to "
                                    f"{top - 1:#x}, past the {sh.nbytes} bytes of the CTA's shared memory", key=name)
                        bad = True
                        continue
                    cells.append(got)
                if bad:
                    drop.append(key)
                    continue
                X = int(s.cta[t]) * sh.ncell + np.unique(np.concatenate(cells)) if cells else np.zeros(0, np.int64)
                if len(X):
                    self._wgmma_reads(s, ins.line, threads, X)
                    if sh.proxy:
                        self._proxy(X, np.unique(sh.t_cw[threads]), ins.line, lead, "wgmma.mma_async")
                    sh.wg_reads[X] += 1
                    sh.reading += 1
                wg.flights.append(_Flight(ins.line, dset, aset, X))
            if drop:
                key = s.cta[idx].astype(np.int64) * 64 + s.tid_linear[idx] // THREADS_PER_WARPGROUP
                return idx[~np.isin(key, drop)]
            return idx
        return pre

    def _wgmma_reads(self, s, line: int, threads: np.ndarray, X: np.ndarray) -> None:
        """A warpgroup's wgmma reads shared cells ``X`` (for each of its warps)."""
        sh = self.shadow
        firsts = threads[::WARP_LANES]
        n = len(X)
        Xs = np.tile(X, len(firsts))
        h = sh.read(Xs, np.repeat(sh.t_cw[firsts], n), np.int32(-1), ALL_LANES, line, False, self.uninitialized)
        if h.any():           # named once, for the first warp of the warpgroup that finds a hazard
            hit = h.pending | h.raw | h.uninit
            first = int(np.flatnonzero(hit)[0]) // n
            keep = np.arange(len(Xs)) // n == first
            h.pending, h.raw, h.uninit = h.pending & keep, h.raw & keep, h.uninit & keep
            owner = np.arange(len(Xs))
            addrs = (Xs % sh.ncell) * sh.G
            self._hazards(h, Xs, owner, np.repeat(firsts, n), addrs, sh.G, False, line, "wgmma")


def _distinct(a: np.ndarray) -> np.ndarray:
    """The distinct values of ``a``, ascending already (threads and their CTAs in an access set)."""
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) > 1 else a


def _proxy_fence(ins) -> bool:
    """``fence.proxy.async`` (bidirectional or generic-to-async) covering shared memory."""
    m = ins.mods
    return ins.opcode == "fence" and m[:1] == ("proxy",) and len(m) > 1 and m[1].startswith("async") and \
        "global" not in m[2:]


def _reg_list(regs) -> str:
    names = sorted(r.split("::", 1)[-1] for r in regs)
    return ", ".join(names[:4]) + (f" (+{len(names) - 4} more)" if len(names) > 4 else "")


@lru_cache(maxsize=4096)
def _operand_cells(desc: int, rows: int, bits: int, major: str, cell: int) -> np.ndarray:
    """The shadow cells (offsets in one CTA) a wgmma operand reads through ``desc``."""
    from fragsim.layout.descriptor import operand_addresses
    k = 8 * MATRIX_ROW_BYTES * 2 // bits            # 32 bytes of K per row
    addr = np.asarray(operand_addresses(desc, rows=rows, k=k, elem_bits=bits, major=major), np.int64)
    byte = (addr[..., None] + np.arange(max(1, bits // 8))).reshape(-1)
    out = np.unique(byte // cell)
    out.setflags(write=False)
    return out


def _wrapped(run, pre):
    """``run`` after the checks ``pre`` (each may keep fewer threads; none left: nothing runs)."""
    def checked(s, idx):
        for p in pre:
            idx = p(s, idx)
            if not len(idx):
                return
        run(s, idx)
    return checked

