"""What a run reports to those who watch it: the events of the machine, for the shared-memory report,
the bug checks and fragment tracing.

Each kind of event is a frozen dataclass below (``SharedAccess``, ``Mma``, ...), ``idx`` its first
field: the threads concerned, ascending global thread indices.  An observer has an ``on_<kind>``
method for each kind it cares about, named by the event class in snake case (``SharedAccess`` ->
``on_shared_access``, ``CpLand`` -> ``on_cp_land``); ``Observer`` lists them all, each optional.
``State.attach(observers)`` looks the methods up once (``handlers``: event class -> the bound
methods, in the observers' order) and refuses an ``on_`` method that names no event kind (a typo
would otherwise watch nothing); ``State.emit(event)`` then calls ``on_<kind>(state, event)`` of
every observer that has it, one dict lookup per event.  A run with no observers pays one
empty-tuple test (``if s.observers:``) per event site and builds no event.  ``state.op`` is the
instruction running (its ``line``, ``instr.opcode``/``instr.text``, ``extra``).

An observer whose ``batch_mma`` attribute is true needs no ``Mma`` events: with only such observers
the machine keeps running consecutive ``mma.sync`` as one call of the arithmetic.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

import numpy as np

if TYPE_CHECKING:
    from fragsim.instructions import MmaForm
    from fragsim.instructions.wgmma import WgmmaForm

    from .state import State


@dataclass(frozen=True, slots=True)
class Event:
    """What every event names: ``idx``, the threads concerned (ascending global thread indices)."""

    idx: np.ndarray


@dataclass(frozen=True, slots=True)
class SharedAccess(Event):
    """Shared-memory bytes ``[addrs, addrs + width)`` of each thread's CTA read (``write=False``) or
    written, as the instruction issues: ``ld``/``st``/``atom``/``red`` with a ``.shared`` or generic
    address that lands there (``addrs`` (n,) in the CTA's shared window; an atom reads then writes),
    ``ldmatrix``/``stmatrix`` (``idx``, ``addrs`` (warps, address lanes): the row each address lane
    names, ``width`` the row's bytes), ``cp.async`` (the destination, ``write=True``, at issue; the
    bytes land later: ``CpLand``)."""

    addrs: np.ndarray
    width: int
    write: bool


@dataclass(frozen=True, slots=True)
class SharedStore(Event):
    """The bytes an ``st``/``atom``/``red`` writes to shared memory, ``data`` uint8 ``(n, width)`` at
    ``addrs`` (n,), told just before that access's ``SharedAccess`` (the checks tell a write of the
    same value apart)."""

    addrs: np.ndarray
    data: np.ndarray


@dataclass(frozen=True, slots=True)
class CpAsync(Event):
    """One ``cp.async`` copy step as it issues, after its ``SharedAccess``: ``dst`` (n,) the shared
    destinations (CTA window), ``src`` (n,) the absolute global source addresses (the bank model of
    LDGSTS reads them), ``size`` the cp-size in bytes."""

    dst: np.ndarray
    src: np.ndarray
    size: int


@dataclass(frozen=True, slots=True)
class CpLand(Event):
    """cp.async bytes landing at the wait that covers them: ``width`` bytes from ``flat`` (n,) on, as
    indices into ``State.smem`` flattened (CTA-major)."""

    flat: np.ndarray
    width: int


@dataclass(frozen=True, slots=True)
class Mma(Event):
    """One ``mma.sync`` for whole warps (``idx``: their threads, warp after warp), before it computes:
    ``form`` its ``fragsim.MmaForm``; ``a``, ``b``, ``c`` the operand registers as read, uint32
    ``(warps, 32, registers)`` (an ``.f64`` element is two words, low first).  ``result`` is a dict:
    an observer that puts ``result["d"]`` (uint32, that shape for D) gives the instruction's D,
    which is then written instead of fragsim's arithmetic (fragment tracing writes element
    identities there)."""

    form: MmaForm
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    result: dict


@dataclass(frozen=True, slots=True)
class Wgmma(Event):
    """One ``wgmma.mma_async`` for whole warpgroups, before it computes: ``form`` its ``WgmmaForm``;
    ``a`` A's registers uint32 ``(groups, 128, registers)`` or its descriptors uint64 ``(groups,)``,
    ``b`` B's descriptors, ``c`` the accumulator registers; ``smem`` uint8 ``(groups, bytes)`` each
    warpgroup's CTA's shared memory as the instruction reads it; ``trans_a``/``trans_b`` the
    imm-trans operands (MN-major); ``result`` as for ``Mma``."""

    form: WgmmaForm
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    smem: np.ndarray
    trans_a: bool
    trans_b: bool
    result: dict


@dataclass(frozen=True, slots=True)
class BarArrive(Event):
    """Threads arrive at ``bar.sync``/``barrier.sync`` (``wait=True``) or ``bar.arrive``: ``barrier``
    and ``count`` (n,) their operands (count 0: every thread of the CTA)."""

    barrier: np.ndarray
    count: np.ndarray
    wait: bool


@dataclass(frozen=True, slots=True)
class BarRelease(Event):
    """A barrier lets its waiting threads ``idx`` go (``s.barrier[idx]`` still names the barrier each
    waited at)."""


@dataclass(frozen=True, slots=True)
class WarpSync(Event):
    """Threads pass ``bar.warp.sync`` (``__syncwarp``)."""


@dataclass(frozen=True, slots=True)
class GuardOff(Event):
    """Threads ``idx`` reached a guarded instruction (``s.op``) and the guard is false for those where
    ``off`` (bool, ``(len(idx),)``) is true; told before the instruction runs for the others, if any
    (a warp whose lanes are all off may still issue the instruction on the hardware: the traffic
    report counts such idle executions)."""

    off: np.ndarray


# mbarriers and bulk copies (semantics/mbarrier.py, semantics/bulk.py): enough to order accesses by
# mbarriers (an arrive releases, a wait that returns True acquires what the phase's arrivals and
# copies released); ``cta``/``addr`` name the mbarrier, ``phase`` numbers count from 0 at ``init``.

@dataclass(frozen=True, slots=True)
class MbarrierArrive(Event):
    """Threads ``idx`` performed arrive-on operations on the mbarrier at shared ``addr`` of CTA
    ``cta``, each in phase ``phase[k]`` ((n,) int64)."""

    cta: int
    addr: int
    phase: np.ndarray


@dataclass(frozen=True, slots=True)
class MbarrierWait(Event):
    """Threads ``idx`` observed phase ``phase`` of the mbarrier complete (their test_wait/try_wait
    returned True, at once or when the phase completed while they were suspended)."""

    cta: int
    addr: int
    phase: int


@dataclass(frozen=True, slots=True)
class BulkIssue(Event):
    """Thread ``idx`` (one) issued a bulk or tensor copy into shared memory bytes ``flat`` (indices
    into ``State.smem`` flattened; they land later: ``BulkLand``)."""

    flat: np.ndarray


@dataclass(frozen=True, slots=True)
class BulkLand(Event):
    """A bulk or tensor copy issued by thread ``idx`` (one) wrote its bytes into shared memory
    (``flat``: byte indices into ``State.smem`` flattened), its complete-tx counted in phase
    ``phase`` of the mbarrier at ``addr`` of CTA ``cta``."""

    flat: np.ndarray
    cta: int
    addr: int
    phase: int


@dataclass(frozen=True, slots=True)
class BulkRead(Event):
    """Thread ``idx`` (one) issued a bulk or tensor copy (or ``cp.reduce.async.bulk``) to global
    memory, which reads shared memory bytes ``flat`` through the async proxy (fragsim reads them as
    it issues)."""

    flat: np.ndarray


#: Every kind of event, in the order of the module.
EVENTS: tuple[type[Event], ...] = (SharedAccess, SharedStore, CpAsync, CpLand, Mma, Wgmma, BarArrive, BarRelease,
                                   WarpSync, GuardOff, MbarrierArrive, MbarrierWait, BulkIssue, BulkLand, BulkRead)


def method_name(kind: type[Event]) -> str:
    """The observer method an event class calls: ``on_`` and the class name in snake case."""
    return "on_" + re.sub(r"(?<!^)(?=[A-Z])", "_", kind.__name__).lower()


#: Observer method name -> its event class.
METHODS: dict[str, type[Event]] = {method_name(k): k for k in EVENTS}
#: Methods of the string-named kinds before the event classes, whose name changed with them.
RENAMED = {"on_shared": "on_shared_access"}


class Observer(Protocol):
    """What ``run_kernel(observers=...)`` takes: every method is optional (an observer class may
    subclass this one to have mypy check its methods' signatures; the defaults here are never
    called)."""

    #: True: the observer needs no ``Mma`` events (the machine may batch consecutive mma.sync).
    batch_mma: bool = False

    def on_shared_access(self, s: State, e: SharedAccess) -> None:
        return None

    def on_shared_store(self, s: State, e: SharedStore) -> None:
        return None

    def on_cp_async(self, s: State, e: CpAsync) -> None:
        return None

    def on_cp_land(self, s: State, e: CpLand) -> None:
        return None

    def on_mma(self, s: State, e: Mma) -> None:
        return None

    def on_wgmma(self, s: State, e: Wgmma) -> None:
        return None

    def on_bar_arrive(self, s: State, e: BarArrive) -> None:
        return None

    def on_bar_release(self, s: State, e: BarRelease) -> None:
        return None

    def on_warp_sync(self, s: State, e: WarpSync) -> None:
        return None

    def on_guard_off(self, s: State, e: GuardOff) -> None:
        return None

    def on_mbarrier_arrive(self, s: State, e: MbarrierArrive) -> None:
        return None

    def on_mbarrier_wait(self, s: State, e: MbarrierWait) -> None:
        return None

    def on_bulk_issue(self, s: State, e: BulkIssue) -> None:
        return None

    def on_bulk_land(self, s: State, e: BulkLand) -> None:
        return None

    def on_bulk_read(self, s: State, e: BulkRead) -> None:
        return None


Handler = Callable[[Any, Any], None]


def handlers(observers: Iterable[object]) -> dict[type[Event], tuple[Handler, ...]]:
    """Event class -> the bound ``on_<kind>`` methods of ``observers`` that watch it, in their order
    (the ``Observer`` defaults, never overridden, left out).  Raises TypeError for an ``on_`` method
    that names no event kind."""
    out: dict[type[Event], list[Handler]] = {}
    for o in observers:
        for name in dir(o):
            if not name.startswith("on_"):
                continue
            kind = METHODS.get(name)
            if kind is None:
                near = [RENAMED[name]] if name in RENAMED else difflib.get_close_matches(name, METHODS, n=1)
                hint = f"; did you mean {near[0]}?" if near else ""
                raise TypeError(f"observer {type(o).__name__}: {name} names no event kind{hint} (the methods: "
                                f"{', '.join(METHODS)}; fragsim.ptx.observe)")
            fn = getattr(o, name)
            if fn is None or getattr(fn, "__func__", None) is getattr(Observer, name):
                continue                  # None: no method; the Observer default: not overridden
            if not callable(fn):
                raise TypeError(f"observer {type(o).__name__}: {name} is not a method")
            out.setdefault(kind, []).append(fn)
    return {k: tuple(v) for k, v in out.items()}
