"""mbarrier objects, the cluster barrier, and the waits that suspend threads: ``mbarrier.init``,
``inval``, ``arrive`` (``.expect_tx``, ``.noComplete``, a count), ``arrive_drop``, ``expect_tx``,
``complete_tx``, ``test_wait``/``try_wait`` (``.parity`` and state forms), ``pending_count``,
``cp.async.mbarrier.arrive{.noinc}``;
``barrier.cluster.arrive``/``wait``, ``mapa`` and ``getctarank`` for clusters of one CTA (fragsim
runs no larger ones: a kernel that asks for them with ``.reqnctapercluster`` is refused).

**The object** (PTX ISA, "Contents of the mbarrier object").  Per (CTA, 8-byte aligned shared address)
an mbarrier has its current phase, the pending and expected arrival counts and the tx-count; they live
here (``Units.bars``), not in the 8 bytes of shared memory (PTX makes any other access to them
undefined).  ``init`` sets phase 0, pending = expected = count (1 .. 2^20 - 1), tx-count 0; an
arrive-on decrements the pending count by its count; expect-tx adds to the tx-count, complete-tx
subtracts.  The phase completes when the pending count and the tx-count are both zero: the phase
number grows by one and the pending count is reloaded with the expected count (``arrive_drop`` has
lowered it for every later phase).  Undefined uses are errors naming the mbarrier: any operation
but ``init`` on an uninitialized or invalidated one, ``init`` on a valid one, counts or a tx-count
outside their ranges, an arrive-on when no arrival is pending, a ``.noComplete`` arrive that
completes the phase, an ``arrive_drop`` that drops the expected count to zero, a wait for a phase
other than the current or the immediately preceding one.

**The state an arrive returns** is opaque (fragsim's encoding, ``encode_state``): the phase it
arrived in, the pending count before it, some address bits (a state of another mbarrier is refused)
and whether ``.noComplete`` made it (``pending_count`` takes only those, as PTX says).

**Asynchronous copies** (``cp.async.bulk{.tensor}`` with ``.mbarrier::complete_tx::bytes``,
semantics/bulk.py) read their source when they issue; their bytes land in shared memory, and their
complete-tx is performed, in issue order, before the next operation on their mbarrier (an arrive,
expect-tx, complete-tx or wait) or when no thread can run -- one of the orders in which the hardware
may complete them.  A kernel that reads the bytes before a wait that observes the phase complete
reads what was there before (on the GPU, a race).

**Waits.**  ``try_wait`` "is potentially blocking ... the executing thread may be suspended", and
kernels spin on ``try_wait``/``test_wait`` until it returns True.  The scheduler runs the lowest PC
first, so a spinning consumer whose producer sits at a higher PC would spin forever.  Instead a
wait that finds its phase incomplete suspends the thread at the instruction (state ``SUSPENDED``)
until the phase completes; then its ``waitComplete`` is written True and it goes on.  For a
race-free kernel this is observably the same as spinning: a failed test changes nothing but its
predicate, and the hardware may delay a thread's next test arbitrarily, so the run is one the
hardware could make in which the test happens just after the phase completes.  The one kernel it
would wrong is one whose waiting thread must itself go on to complete the phase after a failed test
(``try_wait``'s "system-dependent time limit"): when no thread can run, the suspended waits time out
once -- they return False and go on; if they come back to wait with no mbarrier having changed since,
nothing can complete and the run stops with a deadlock report naming the mbarrier, its phase,
pending arrivals and tx-count (never a hang).  ``barrier.cluster.wait`` suspends the same way until
every non-exited thread of the cluster (the CTA) has arrived.

Events for observers (``State.emit``; their fields in ``fragsim.ptx.observe``), enough to order
accesses by mbarriers (an arrive releases, a wait that returns True acquires what the phase's
arrivals and copies released): ``MbarrierArrive`` (threads performed arrive-on operations),
``MbarrierWait`` (threads observed a phase complete), ``BulkLand`` (a bulk or tensor copy's bytes
landed, its complete-tx counted in a phase); semantics/bulk.py tells ``BulkIssue`` (a copy into
shared memory issues) and ``BulkRead`` (a copy to global memory reads shared memory as it issues).

With checks on (``fragsim.ptx.checks``), a deadlock is a finding instead of an error: the checker
reports it and, going on, the suspended waits return True.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.facts.mbarrier import MBARRIER_BYTES, MBARRIER_MAX_COUNT

from .. import ast as A
from ..observe import BulkLand, MbarrierArrive, MbarrierWait
from ..op import Builder, Op, PtxLoadError
from ..state import (EXITED, RUNNING, SHARED_WINDOW, SUSPENDED, WAITING, WINDOW_BYTES, PtxRuntimeError, State,
                     cluster_shape)
from ..types import TYPES
from . import UnsupportedInstruction


U32, B64, PRED = TYPES["u32"], TYPES["b64"], TYPES["pred"]

# The opaque state of an arrive (fragsim's encoding): bits 0-31 the phase number it arrived in, 32-51
# the pending count before it, 52-61 address bits 3-12 of its mbarrier, 62 set by .noComplete, 63 set.
_PHASE_MASK = (1 << 32) - 1
_PENDING_SHIFT, _ADDR_SHIFT, _ADDR_BITS = 32, 52, 10
_NOCOMPLETE, _MARK = 1 << 62, 1 << 63
#: Mbarriers named in a deadlock report at most.
REPORTED = 3


def encode_state(phase: np.ndarray, pending: np.ndarray, addr: int, no_complete: bool) -> np.ndarray:
    """The opaque 64-bit states of arrive-on operations (see the module's docstring)."""
    tag = _MARK | (_NOCOMPLETE if no_complete else 0) | (((addr // MBARRIER_BYTES) & ((1 << _ADDR_BITS) - 1))
                                                         << _ADDR_SHIFT)
    return (np.uint64(tag) | (pending.astype(np.uint64) << np.uint64(_PENDING_SHIFT))
            | (phase.astype(np.uint64) & np.uint64(_PHASE_MASK)))


def _state_fields(state: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(is a state, phase, pending before, address bits, .noComplete) of opaque states."""
    st = state.astype(np.uint64)
    return ((st & np.uint64(_MARK)) != 0, (st & np.uint64(_PHASE_MASK)).astype(np.int64),
            ((st >> np.uint64(_PENDING_SHIFT)) & np.uint64(MBARRIER_MAX_COUNT)).astype(np.int64),
            ((st >> np.uint64(_ADDR_SHIFT)) & np.uint64((1 << _ADDR_BITS) - 1)).astype(np.int64),
            (st & np.uint64(_NOCOMPLETE)) != 0)


@dataclass
class Flight:
    """An asynchronous copy an mbarrier tracks, not landed yet: the bytes it writes (``flat``: indices
    into ``State.smem`` flattened; ``data`` uint8 alike) and the bytes its complete-tx counts."""

    thread: int
    flat: np.ndarray
    data: np.ndarray
    tx: int
    line: int


@dataclass
class MBarrier:
    """One mbarrier object (PTX ISA, "Contents of the mbarrier object"); ``phase`` counts completed phases."""

    cta: int
    addr: int
    expected: int
    line: int                        # the PTX line of its mbarrier.init
    pending: int = 0
    phase: int = 0
    tx: int = 0
    valid: bool = True
    inval_line: int = 0
    flights: list[Flight] = field(default_factory=list)
    waiters: list[np.ndarray] = field(default_factory=list)      # threads suspended on the current phase

    def describe(self) -> str:
        flying = sum(f.tx for f in self.flights)
        return (f"the mbarrier at shared {self.addr:#x} (mbarrier.init at line {self.line}) is in phase {self.phase}: "
                f"{self.pending} of {self.expected} arrival(s) pending, tx-count {self.tx}"
                + (f", {flying} byte(s) of copies in flight" if flying else ""))


class Units:
    """The asynchronous units of a run: its mbarriers, the cluster barrier of each CTA, the threads they
    hold suspended, and the bulk copies of semantics/bulk.py (``stores``: bulk_group copies to global
    memory not yet written, ``bulk_committed``: each thread's committed bulk async-groups, ``maps``: the
    tensor maps decoded so far).  One per run: ``units(s)``."""

    def __init__(self, s: State):
        n, ncta = s.geometry.slots, len(s.geometry.ctas)
        self.bars: dict[tuple[int, int], MBarrier] = {}
        self.changes = 0                 # mbarrier and cluster-barrier state changes so far
        self.timed_out = -1              # ``changes`` when the waits last timed out
        self.cluster_phase = np.zeros(ncta, np.int64)
        self.cluster_arrived = np.full(n, -1, np.int64)     # the cluster-barrier phase a thread arrived in
        self.cluster_waiters: list[np.ndarray] = []
        self.bulk_committed = np.zeros(n, np.int64)
        self.stores: list = []
        self.maps: dict[bytes, object] = {}

    # ---- mbarriers --------------------------------------------------------------------------------

    def barrier(self, s: State, cta: int, addr: int, t: int, line: int, what: str) -> MBarrier:
        """The valid mbarrier at ``addr`` of CTA ``cta``, or the error of ``what`` done to a missing one."""
        bar = self.bars.get((cta, addr))
        if bar is None or not bar.valid:
            why = ("was invalidated by mbarrier.inval at line " + str(bar.inval_line) if bar is not None
                   else "was never initialized (mbarrier.init)")
            raise PtxRuntimeError(f"line {line}: {s.where(t)}: {what} on the mbarrier at shared {addr:#x}, which {why}; "
                                  "PTX leaves that undefined")
        return bar

    def land(self, s: State, bar: MBarrier) -> None:
        """The copies in flight into ``bar`` complete, in issue order: their bytes land, then their complete-tx."""
        smem = s.smem.reshape(-1)
        while bar.flights:
            f = bar.flights.pop(0)
            smem[f.flat] = f.data
            if s.observers:
                s.emit(BulkLand(np.array([f.thread]), flat=f.flat, cta=bar.cta, addr=bar.addr, phase=bar.phase))
            self.transact(s, bar, -f.tx, f.thread, f.line, "the complete-tx of a copy")

    def transact(self, s: State, bar: MBarrier, delta: int, t: int, line: int, what: str) -> None:
        """tx-count += ``delta`` (expect-tx, or complete-tx with a negative delta), then the phase may complete."""
        bar.tx += delta
        self.changes += 1
        if abs(bar.tx) > MBARRIER_MAX_COUNT:
            raise PtxRuntimeError(f"line {line}: {s.where(t)}: {what} takes the tx-count of the mbarrier at shared "
                                  f"{bar.addr:#x} to {bar.tx}, outside -(2^20 - 1) .. 2^20 - 1 (PTX ISA, Contents of the "
                                  "mbarrier object)")
        if bar.pending == 0 and bar.tx == 0:
            self.complete(s, bar)

    def arrive(self, s: State, bar: MBarrier, counts: np.ndarray, tx: np.ndarray | None, drop: bool,
               no_complete: bool, threads: np.ndarray, line: int, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Arrive-on operations of ``threads`` (in thread order) with ``counts``, each after an expect-tx
        of ``tx`` and (``drop``) a decrement of the expected count; (phase, pending count) before each."""
        n = len(counts)
        total = int(counts.sum())
        if tx is None and not drop and total <= bar.pending:     # one phase, completed at most by the last
            before = bar.pending - np.concatenate(([0], np.cumsum(counts)[:-1]))
            phase = np.full(n, bar.phase, np.int64)
            bar.pending -= total
            self.changes += 1
            if bar.pending == 0 and bar.tx == 0:
                if no_complete:
                    self._no_complete(s, bar, int(threads[-1]), line, text)
                self.complete(s, bar)
            return phase, before
        phase, before = np.empty(n, np.int64), np.empty(n, np.int64)
        for i in range(n):
            t, c = int(threads[i]), int(counts[i])
            if tx is not None:
                self.transact(s, bar, int(tx[i]), t, line, f"{text} (its expect-tx)")
            if drop:
                if bar.expected - c < 1:
                    raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text} drops the expected arrival count of the "
                                          f"mbarrier at shared {bar.addr:#x} from {bar.expected} to {bar.expected - c}; "
                                          "PTX leaves a decrement to zero undefined")
                bar.expected -= c
            if c > bar.pending:
                raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text}: an arrive-on with count {c} when "
                                      f"{bar.describe()}; the pending count would fall "
                                      "below 0 (more arrivals than the phase expects)")
            phase[i], before[i] = bar.phase, bar.pending
            bar.pending -= c
            self.changes += 1
            if bar.pending == 0 and bar.tx == 0:
                if no_complete:
                    self._no_complete(s, bar, t, line, text)
                self.complete(s, bar)
        return phase, before

    def _no_complete(self, s: State, bar: MBarrier, t: int, line: int, text: str) -> None:
        raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text} completes phase {bar.phase} of the mbarrier at "
                              f"shared {bar.addr:#x}; PTX: a .noComplete arrive must not complete the phase (undefined)")

    def complete(self, s: State, bar: MBarrier) -> None:
        """The current phase completes: the next begins, and the threads waiting for it go on."""
        bar.phase += 1
        bar.pending = bar.expected
        self.changes += 1
        woken = np.concatenate(bar.waiters) if bar.waiters else np.zeros(0, np.int64)
        bar.waiters = []
        if len(woken):
            if s.observers:
                s.emit(MbarrierWait(woken, cta=bar.cta, addr=bar.addr, phase=bar.phase - 1))
            self.wake(s, woken, True)

    @staticmethod
    def wake(s: State, threads: np.ndarray, value: bool) -> None:
        """Suspended ``threads`` go on past their wait, its result ``value``."""
        ops = s.program.ops
        for pc in np.unique(s.pc[threads]).tolist():
            sel = threads[s.pc[threads] == pc]
            ops[pc].extra["wake"](s, sel, value)
        s.pc[threads] += 1
        s.status[threads] = RUNNING

    # ---- the cluster barrier (a cluster of one CTA) -----------------------------------------------

    def cluster_check(self, s: State, ctas) -> None:
        """Complete the cluster-barrier phase of each of ``ctas`` whose non-exited threads have all arrived."""
        per = s.geometry.warps_per_cta * WARP_LANES            # the thread slots of one CTA
        for cta in ctas:
            t = np.arange(cta * per, (cta + 1) * per)
            live = s.present[t] & (s.status[t] != EXITED)
            if not (self.cluster_arrived[t][live] == self.cluster_phase[cta]).all():
                continue
            self.cluster_phase[cta] += 1
            self.changes += 1
            mine = [w for w in self.cluster_waiters if int(s.cta[w[0]]) == cta]
            self.cluster_waiters = [w for w in self.cluster_waiters if int(s.cta[w[0]]) != cta]
            if mine:
                self.wake(s, np.concatenate(mine), True)

    # ---- when no thread can run -------------------------------------------------------------------

    def stalled(self, s: State) -> bool:
        """The machine has no running thread: copies in flight land, bulk stores are written, cluster
        barriers whose other threads exited complete; then, if still nothing runs, suspended mbarrier
        waits time out (once per change of any mbarrier) or the deadlock is reported.  Whether some
        thread runs again."""
        for bar in list(self.bars.values()):
            if bar.flights:
                self.land(s, bar)
        while self.stores:
            self.stores.pop(0).land(s)
        if self.cluster_waiters:
            self.cluster_check(s, sorted({int(s.cta[w[0]]) for w in self.cluster_waiters}))
        if (s.status == RUNNING).any():
            return True
        waiting = [bar for bar in self.bars.values() if bar.waiters]
        if not waiting and not self.cluster_waiters:
            return False
        if waiting and self.changes != self.timed_out:
            self.timed_out = self.changes
            for bar in waiting:
                threads = np.concatenate(bar.waiters)
                bar.waiters = []
                self.wake(s, threads, False)
            return True
        if s.checker is not None:
            s.checker.mbarrier_deadlock(s, self, waiting)
            return True
        raise PtxRuntimeError(self.deadlock(s, waiting))

    def deadlock(self, s: State, waiting: list[MBarrier]) -> str:
        parts = []
        for bar in waiting:
            threads = np.concatenate(bar.waiters)
            t = int(threads[0])
            op = s.program.ops[int(s.pc[t])]
            parts.append(f"line {op.line}: {s.where(t).split(' thread')[0]}: {len(threads)} thread(s) wait "
                         f"({op.instr.text}) for phase {bar.phase} to complete; {bar.describe()}")
        for w in self.cluster_waiters:
            t = int(w[0])
            cta = int(s.cta[t])
            mine = s.cta == cta
            late = int((mine & s.present & (s.status != EXITED) & (self.cluster_arrived != self.cluster_phase[cta])).sum())
            parts.append(f"line {s.program.ops[int(s.pc[t])].line}: {s.where(t).split(' thread')[0]}: {len(w)} thread(s) "
                         f"wait at barrier.cluster.wait for {late} thread(s) that have not arrived")
        more = f"; and {len(parts) - REPORTED} more" if len(parts) > REPORTED else ""
        bars = int((s.status == WAITING).sum())
        at_bar = f"; {bars} thread(s) wait at bar.sync" if bars else ""
        return ("deadlock: " + "; ".join(parts[:REPORTED]) + more + at_bar +
                "; no thread can arrive or complete a transaction")


def units(s: State) -> Units:
    """The run's ``Units`` (made at its first mbarrier, cluster-barrier or bulk-copy instruction)."""
    if s.async_units is None:
        s.async_units = Units(s)
    return s.async_units


# ------------------------------------------------------------------------------------ addresses

def no_larger_clusters(ins: A.Instr, c: Builder) -> None:
    """Refuse an instruction of a kernel that asks for clusters of several CTAs."""
    shape = cluster_shape(c.entry)
    if shape[0] * shape[1] * shape[2] > 1:
        raise UnsupportedInstruction(f"{ins.text}: the kernel asks for clusters of {shape} CTAs (.reqnctapercluster); "
                                     "fragsim runs clusters of one CTA")


def shared_address(ins: A.Instr, c: Builder, operand, generic: bool, what: str):
    """How to read the shared address an instruction names: from a ``.shared{::cta,::cluster}`` address
    (``generic`` False: the CTA's own shared memory, for a cluster of one CTA) or a generic one inside
    the shared window.  Returns ``read(s, idx) -> int64 shared offsets``, each checked to be a generic
    address of shared memory where it is generic."""
    if not isinstance(operand, A.Addr):
        raise PtxLoadError(f"line {ins.line}: {ins.text}: expected {what} as an address [a]")
    read, implied = c.address_of(operand, None if generic else "shared", ins.line)
    if implied not in (None, "shared"):
        raise PtxLoadError(f"line {ins.line}: {ins.text}: {operand.base!r} is a .{implied} variable; {what} is in "
                           "shared memory")
    window = generic and implied is None
    line = ins.line

    def offsets(s: State, idx: np.ndarray) -> np.ndarray:
        a = read(s, idx).astype(np.uint64)
        if window:
            inside = (a >= np.uint64(SHARED_WINDOW)) & (a < np.uint64(SHARED_WINDOW + WINDOW_BYTES))
            if not inside.all():
                k = int(np.flatnonzero(~inside)[0])
                raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: {ins.text}: {int(a[k]):#x} is not a generic "
                                      f"address of .shared::cta memory (PTX leaves that undefined)")
            a = a - np.uint64(SHARED_WINDOW)
        return a.astype(np.int64)
    return offsets


def _mbarrier_offsets(s: State, idx: np.ndarray, offsets, line: int, text: str) -> np.ndarray:
    a = offsets(s, idx)
    bad = (a % MBARRIER_BYTES != 0) | (a + MBARRIER_BYTES > s.smem.shape[1])
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        why = (f"is not {MBARRIER_BYTES}-byte aligned (PTX ISA: an mbarrier object is a .b64, {MBARRIER_BYTES}-byte "
               "aligned)" if a[k] % MBARRIER_BYTES else f"is outside the {s.smem.shape[1]} bytes of the CTA's shared memory")
        raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: {text}: the mbarrier address {int(a[k]):#x} {why}")
    return a


def groups(s: State, idx: np.ndarray, addrs: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """(CTA, address, positions in ``idx``) for each mbarrier the threads name; positions ascend."""
    cta = s.cta[idx]
    if len(idx) == 1 or ((cta == cta[0]).all() and (addrs == addrs[0]).all()):
        return [(int(cta[0]), int(addrs[0]), np.arange(len(idx)))]
    key = cta * (s.smem.shape[1] + 1) + addrs
    u, inv = np.unique(key, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    parts = np.split(order, np.cumsum(np.bincount(inv))[:-1])
    return [(int(cta[p[0]]), int(addrs[p[0]]), p) for p in parts]


# ------------------------------------------------------------------------------------ mbarrier.*

#: mbarrier operations: the flags each takes, the .sem qualifiers allowed, whether .shared::cluster is.
_OPS = {
    "init": ((), (), False), "inval": ((), (), False),
    "expect_tx": ((), ("relaxed",), True), "complete_tx": ((), ("relaxed",), True),
    "arrive": (("expect_tx", "noComplete"), ("release", "relaxed"), True),
    "arrive_drop": (("expect_tx", "noComplete"), ("release", "relaxed"), True),
    "test_wait": (("parity",), ("acquire", "relaxed"), False),
    "try_wait": (("parity",), ("acquire", "relaxed"), False),
    "pending_count": ((), (), False),
}


def _qualifiers(ins: A.Instr) -> tuple[str, set[str], bool]:
    """(operation, its flags, whether the address is generic)."""
    what = ins.mods[0] if ins.mods else ""
    if what not in _OPS:
        raise UnsupportedInstruction(f"{ins.text}: mbarrier.{what} is not an mbarrier operation ({', '.join(_OPS)})")
    flags, sems, cluster_ok = _OPS[what]
    rest = list(ins.mods[1:])
    if rest[-1:] != ["b64"]:
        raise UnsupportedInstruction(f"{ins.text}: an mbarrier operation ends in .b64")
    got: set[str] = set()
    space = None
    for m in rest[:-1]:
        if m in flags or m in sems or m in ("cta", "cluster"):
            got.add(m)
        elif m in ("shared", "shared::cta") or (m == "shared::cluster" and cluster_ok):
            space = m
        else:
            raise UnsupportedInstruction(f"{ins.text}: qualifier .{m} is not one of mbarrier.{what}'s")
    if what == "pending_count":
        return what, got, False
    if space == "shared::cluster":
        got.add("shared::cluster")
    return what, got, space is None


def mbarrier(ins: A.Instr, c: Builder) -> Op:
    what, flags, generic = _qualifiers(ins)
    no_larger_clusters(ins, c)
    ops = list(ins.operands)
    text, line = ins.text, ins.line
    if what == "pending_count":
        return _pending_count(ins, c, ops)
    waits = what in ("test_wait", "try_wait")
    has_dst = what in ("arrive", "arrive_drop") or waits
    dst = ops.pop(0) if has_dst and ops else None
    if not ops:
        raise PtxLoadError(f"line {line}: {text}: expected the mbarrier's address [addr]")
    offsets = shared_address(ins, c, ops.pop(0), generic, "the mbarrier")
    if waits:
        return _wait(ins, c, what, flags, dst, offsets, ops)
    if what in ("arrive", "arrive_drop"):
        return _arrive(ins, c, what, flags, dst, offsets, ops)
    want = 0 if what == "inval" else 1
    if len(ops) != want:
        raise PtxLoadError(f"line {line}: {text} takes [addr]{', count' if what == 'init' else ', txCount' * want}")
    count = c.reader(ops[0], U32, line) if ops else None

    def run(s: State, idx: np.ndarray) -> None:
        u = units(s)
        addrs = _mbarrier_offsets(s, idx, offsets, line, text)
        n = count(s, idx).astype(np.int64) if count is not None else None
        for cta, addr, pos in groups(s, idx, addrs):
            t = int(idx[pos[0]])
            if what == "init":
                for p in pos:
                    k = int(n[p])          # type: ignore[index]
                    tp = int(idx[p])
                    old = u.bars.get((cta, addr))
                    if old is not None and old.valid:
                        raise PtxRuntimeError(f"line {line}: {s.where(tp)}: {text} on a valid mbarrier (initialized at "
                                              f"line {old.line}); PTX: invalidate it with mbarrier.inval first (undefined)")
                    if not 1 <= k <= MBARRIER_MAX_COUNT:
                        raise PtxRuntimeError(f"line {line}: {s.where(tp)}: {text}: count {k} is outside 1 .. 2^20 - 1 "
                                              "(PTX ISA, Contents of the mbarrier object)")
                    u.bars[(cta, addr)] = MBarrier(cta, addr, k, line, pending=k)
                    u.changes += 1
                continue
            bar = u.barrier(s, cta, addr, t, line, text)
            u.land(s, bar)
            if what == "inval":
                if bar.waiters:
                    raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text} while {sum(map(len, bar.waiters))} "
                                          "thread(s) wait on it (undefined)")
                bar.valid, bar.inval_line = False, line
                u.changes += 1
                continue
            for p in pos:
                k = int(n[p])              # type: ignore[index]
                u.transact(s, bar, k if what == "expect_tx" else -k, int(idx[p]), line, text)
    return Op(ins, "", run, kind="barrier")


def _arrive(ins: A.Instr, c: Builder, what: str, flags: set[str], dst, offsets, ops: list) -> Op:
    """mbarrier.arrive / arrive_drop {.expect_tx | .noComplete} state, [addr] {, count | txCount}."""
    line, text = ins.line, ins.text
    expect, no_complete = "expect_tx" in flags, "noComplete" in flags
    if expect and no_complete:
        raise UnsupportedInstruction(f"{text}: .expect_tx and .noComplete do not go together")
    if dst is None:
        raise PtxLoadError(f"line {line}: {text}: expected state (or _), [addr]")
    if "shared::cluster" in flags and not isinstance(dst, A.Sink):
        raise PtxLoadError(f"line {line}: {text}: an arrive on .shared::cluster returns no state; the destination "
                           "must be _ (PTX ISA)")
    if len(ops) > 1 or ((expect or no_complete) and len(ops) != 1):
        need = "txCount" if expect else "count" if no_complete else "an optional count"
        raise PtxLoadError(f"line {line}: {text} takes state, [addr] and {need}")
    operand = c.reader(ops[0], U32, line) if ops else None
    write = c.writer(dst, B64, line)
    drop = what == "arrive_drop"

    def run(s: State, idx: np.ndarray) -> None:
        u = units(s)
        addrs = _mbarrier_offsets(s, idx, offsets, line, text)
        v = operand(s, idx).astype(np.int64) if operand is not None else None
        counts = np.ones(len(idx), np.int64) if expect or v is None else v
        bad = (counts < 1) | (counts > MBARRIER_MAX_COUNT)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: {text}: count {int(counts[k])} is outside "
                                  "1 .. 2^20 - 1 (PTX ISA, Contents of the mbarrier object)")
        state = np.zeros(len(idx), np.uint64)
        for cta, addr, pos in groups(s, idx, addrs):
            bar = u.barrier(s, cta, addr, int(idx[pos[0]]), line, text)
            u.land(s, bar)
            phase, before = u.arrive(s, bar, counts[pos], v[pos] if expect else None,  # type: ignore[index]
                                     drop, no_complete, idx[pos], line, text)
            if s.observers:
                s.emit(MbarrierArrive(idx[pos], cta=cta, addr=addr, phase=phase))
            state[pos] = encode_state(phase, before, addr, no_complete)
        write(s, idx, state)
    return Op(ins, "", run, kind="barrier")


def _wait(ins: A.Instr, c: Builder, what: str, flags: set[str], dst, offsets, ops: list) -> Op:
    """mbarrier.test_wait/try_wait{.parity} waitComplete, [addr], state|phaseParity {, suspendTimeHint}."""
    line, text = ins.line, ins.text
    parity = "parity" in flags
    if dst is None or not ops or len(ops) > (2 if what == "try_wait" else 1):
        hint = " {, suspendTimeHint}" if what == "try_wait" else ""
        raise PtxLoadError(f"line {line}: {text} takes waitComplete, [addr], {'phaseParity' if parity else 'state'}{hint}")
    read = c.reader(ops[0], U32 if parity else B64, line)
    write = c.writer(dst, PRED, line)

    def wake(s: State, threads: np.ndarray, value: bool) -> None:
        write(s, threads, np.full(len(threads), value))

    def run(s: State, idx: np.ndarray) -> None:
        u = units(s)
        addrs = _mbarrier_offsets(s, idx, offsets, line, text)
        v = read(s, idx)
        done = np.zeros(len(idx), bool)
        for cta, addr, pos in groups(s, idx, addrs):
            bar = u.barrier(s, cta, addr, int(idx[pos[0]]), line, text)
            u.land(s, bar)
            if parity:
                p = v[pos].astype(np.int64)
                if ((p != 0) & (p != 1)).any():
                    k = int(pos[np.flatnonzero((p != 0) & (p != 1))[0]])
                    raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: {text}: phaseParity {int(v[k])}; its "
                                          "valid values are 0 and 1 (PTX ISA)")
                # the phase of parity p completed: the current one has the other parity
                done[pos] = p != bar.phase % 2
                if s.observers and done[pos].any():
                    s.emit(MbarrierWait(idx[pos][done[pos]], cta=cta, addr=addr, phase=bar.phase - 1))
                continue
            mark, phase, _, bits, _ = _state_fields(v[pos])
            cur = bar.phase & _PHASE_MASK
            other = mark & (bits != (addr // MBARRIER_BYTES) & ((1 << _ADDR_BITS) - 1))
            stale = mark & ~other & (phase != cur) & (phase != ((bar.phase - 1) & _PHASE_MASK))
            bad = ~mark | other | stale
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                why = ("not a state an mbarrier.arrive returned" if not mark[k] else
                       "the state an arrive on another mbarrier returned" if other[k] else
                       f"the state of phase {int(phase[k])}, and {bar.describe()}; a wait is valid only for the "
                       "current phase or the immediately preceding one (PTX ISA)")
                raise PtxRuntimeError(f"line {line}: {s.where(int(idx[pos[k]]))}: {text}: the state operand is {why}")
            done[pos] = phase != cur
            if s.observers and done[pos].any():
                s.emit(MbarrierWait(idx[pos][done[pos]], cta=cta, addr=addr, phase=bar.phase - 1))
        if done.any():
            wake(s, idx[done], True)
            s.pc[idx[done]] += 1
        if not done.all():
            late = idx[~done]
            s.status[late] = SUSPENDED
            for cta, addr, pos in groups(s, late, addrs[~done]):
                u.bars[(cta, addr)].waiters.append(late[pos])
    return Op(ins, "", run, sets_pc=True, kind="barrier", extra={"wake": wake})


def _pending_count(ins: A.Instr, c: Builder, ops: list) -> Op:
    """mbarrier.pending_count.b64 count, state: the pending count before the .noComplete arrive that made state."""
    if len(ops) != 2:
        raise PtxLoadError(f"line {ins.line}: {ins.text} takes count, state")
    write = c.writer(ops[0], U32, ins.line)
    read = c.reader(ops[1], B64, ins.line)
    line, text = ins.line, ins.text

    def run(s: State, idx: np.ndarray) -> None:
        mark, _, pending, _, no_complete = _state_fields(read(s, idx))
        bad = ~(mark & no_complete)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: {text}: the state operand must come from "
                                  "mbarrier.arrive.noComplete or arrive_drop.noComplete (PTX ISA; otherwise undefined)")
        write(s, idx, pending.astype(np.uint32))
    return Op(ins, "", run)


def cp_async_arrive(ins: A.Instr, c: Builder) -> Op:
    """cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr]: an arrive-on "triggered by the system
    upon the completion of all prior cp.async operations initiated by the executing thread".  Here
    those copies complete now (they may complete any time after they issue): their bytes land, then
    the arrive-on -- which without .noinc follows an increment of the pending count, a net change of
    zero."""
    mods = [m for m in ins.mods[3:] if m not in ("shared", "shared::cta")]
    if ins.mods[:3] != ("async", "mbarrier", "arrive") or mods not in (["b64"], ["noinc", "b64"]):
        raise UnsupportedInstruction(f"{ins.text}: expected cp.async.mbarrier.arrive{{.noinc}}{{.shared{{::cta}}}}.b64")
    if len(ins.operands) != 1:
        raise PtxLoadError(f"line {ins.line}: {ins.text} takes [addr]")
    from .tensor import land
    generic = not any(m.startswith("shared") for m in ins.mods)
    offsets = shared_address(ins, c, ins.operands[0], generic, "the mbarrier")
    noinc = "noinc" in mods
    line, text = ins.line, ins.text

    def run(s: State, idx: np.ndarray) -> None:
        u = units(s)
        addrs = _mbarrier_offsets(s, idx, offsets, line, text)
        mine = np.zeros(s.geometry.slots, bool)
        mine[idx] = True
        smem = s.smem.reshape(-1)
        left = []
        for cp in s.cp_pending:
            done = mine[cp.threads]
            if done.all():
                land(s, smem, cp)
                continue
            if done.any():
                land(s, smem, cp, done)
                cp = cp.part(~done)
            left.append(cp)
        s.cp_pending[:] = left
        for cta, addr, pos in groups(s, idx, addrs):
            bar = u.barrier(s, cta, addr, int(idx[pos[0]]), line, text)
            u.land(s, bar)
            if noinc:
                phase, _ = u.arrive(s, bar, np.ones(len(pos), np.int64), None, False, False, idx[pos], line, text)
                if s.observers:
                    s.emit(MbarrierArrive(idx[pos], cta=cta, addr=addr, phase=phase))
    return Op(ins, "", run, kind="barrier")


# ------------------------------------------------------------------------- barrier.cluster, mapa

def build_barrier(ins: A.Instr, c: Builder) -> Op:
    """barrier.cluster.arrive{.release|.relaxed}{.aligned} / barrier.cluster.wait{.acquire}{.aligned} for a
    cluster of one CTA (bar/barrier{.cta} are control's)."""
    if ins.mods[:1] != ("cluster",):
        raise UnsupportedInstruction(f"{ins.text}: not barrier.cluster; bar/barrier{{.cta}} are semantics/control.py's")
    no_larger_clusters(ins, c)
    what = ins.mods[1] if len(ins.mods) > 1 else ""
    allowed = {"arrive": {"release", "relaxed", "aligned"}, "wait": {"acquire", "aligned"}}.get(what)
    if allowed is None or not set(ins.mods[2:]) <= allowed or ins.operands:
        raise UnsupportedInstruction(f"{ins.text}: expected barrier.cluster.arrive{{.release|.relaxed}}{{.aligned}} or "
                                     "barrier.cluster.wait{.acquire}{.aligned}, without operands")
    line, text = ins.line, ins.text

    def arrive(s: State, idx: np.ndarray) -> None:
        u = units(s)
        cta = s.cta[idx]
        again = u.cluster_arrived[idx] == u.cluster_phase[cta]
        if again.any():
            k = int(np.flatnonzero(again)[0])
            raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: {text}: the thread arrives twice in one phase "
                                  "of the cluster barrier (before its barrier.cluster.wait; undefined)")
        u.cluster_arrived[idx] = u.cluster_phase[cta]
        u.changes += 1
        u.cluster_check(s, np.unique(cta).tolist())

    def wake(s: State, threads: np.ndarray, value: bool) -> None:
        units(s).cluster_arrived[threads] = -1

    def wait(s: State, idx: np.ndarray) -> None:
        u = units(s)
        cta = s.cta[idx]
        arrived = u.cluster_arrived[idx]
        if (arrived < 0).any():
            k = int(np.flatnonzero(arrived < 0)[0])
            raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: {text} without a barrier.cluster.arrive "
                                  "before it (undefined)")
        done = arrived < u.cluster_phase[cta]
        if done.any():
            wake(s, idx[done], True)
            s.pc[idx[done]] += 1
        late = idx[~done]
        if len(late):
            s.status[late] = SUSPENDED
            for k in np.unique(s.cta[late]).tolist():
                u.cluster_waiters.append(late[s.cta[late] == k])

    if what == "arrive":
        return Op(ins, "", arrive, kind="barrier")
    return Op(ins, "", wait, sets_pc=True, kind="barrier", extra={"wake": wake})


def mapa(ins: A.Instr, c: Builder) -> Op:
    """mapa{.shared::cluster}.u32|u64 d, a, rank: the address of ``a`` in CTA ``rank`` of the cluster --
    ``a`` itself, the cluster being this CTA alone (rank 0)."""
    mods = [m for m in ins.mods if m != "shared::cluster"]
    if mods not in (["u32"], ["u64"]) or len(ins.operands) != 3:
        raise UnsupportedInstruction(f"{ins.text}: expected mapa{{.shared::cluster}}.u32|u64 d, a, rank")
    no_larger_clusters(ins, c)
    t = TYPES[mods[0]]
    d, a, b = ins.operands
    write, read, rank = c.writer(d, t, ins.line), c.reader(a, t, ins.line), c.reader(b, U32, ins.line)
    line, text = ins.line, ins.text

    def run(s: State, idx: np.ndarray) -> None:
        r = rank(s, idx)
        if (r != 0).any():
            k = int(np.flatnonzero(r != 0)[0])
            raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: {text}: CTA rank {int(r[k])} of the cluster; "
                                  "fragsim runs clusters of one CTA (rank 0)")
        write(s, idx, read(s, idx))
    return Op(ins, "", run)


def getctarank(ins: A.Instr, c: Builder) -> Op:
    """getctarank{.shared::cluster}.u32|u64 d, a: the rank of the CTA whose shared memory ``a`` names: 0."""
    mods = [m for m in ins.mods if m != "shared::cluster"]
    if mods not in (["u32"], ["u64"]) or len(ins.operands) != 2:
        raise UnsupportedInstruction(f"{ins.text}: expected getctarank{{.shared::cluster}}.u32|u64 d, a")
    no_larger_clusters(ins, c)
    write = c.writer(ins.operands[0], U32, ins.line)
    return Op(ins, "", lambda s, idx: write(s, idx, np.zeros(len(idx), np.uint32)))
