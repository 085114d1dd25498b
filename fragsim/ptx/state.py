"""The state of a simulated launch: every thread of the chosen CTAs, their registers, and the memory
spaces, as NumPy arrays over the threads.

Threads are numbered CTA by CTA, warp by warp, lane by lane: thread ``t`` is lane ``t % 32`` of warp
``t // 32`` (counted over the launch); a CTA whose block is not a multiple of 32 threads has absent
lanes in its last warp, which never execute.  An instruction runs for an index array of threads
(those at its PC whose guard holds) as array operations over them.

Address spaces (the PTX ISA's state spaces): ``.global`` through ``GlobalMemory`` (the kernel's
buffers), ``.shared`` one byte array per CTA (static variables, then the dynamic ``extern`` array),
``.local`` one byte array per thread, ``.param`` the kernel's argument bytes (and, per thread, the
argument/return bytes of ``.func`` calls), ``.const`` the module's constant bytes.  Generic addresses
(``cvta``) put the shared, local and kernel-parameter windows at ``SHARED_WINDOW``, ``LOCAL_WINDOW``
and ``PARAM_WINDOW``; every other generic address is global.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fragsim.facts.hardware import WARP_LANES

from .memory import GlobalMemory, put_bytes, take_bytes
from .observe import Event, Handler, SharedAccess, SharedStore, handlers
from .types import PtxType

#: Generic address of shared byte 0 (``cvta.shared``): a 4 GiB window below the default global buffers.
SHARED_WINDOW = 0x7D00_0000_0000
#: Generic address of local byte 0 (``cvta.local``), each thread seeing its own local memory there.
LOCAL_WINDOW = 0x7E00_0000_0000
#: Generic address of the kernel's parameter byte 0 (``cvta.param``: the address of a ``__grid_constant__``
#: parameter, a CUtensorMap's for one).
PARAM_WINDOW = 0x7C00_0000_0000
WINDOW_BYTES = 1 << 32
#: Generic address of byte 0 of each state space a generic address can name (global addresses are
#: generic already).
WINDOWS = {"global": 0, "shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "param": PARAM_WINDOW}

#: Scheduler states of a thread.  SUSPENDED: in an mbarrier wait or barrier.cluster.wait, until the
#: phase completes (fragsim.ptx.semantics.mbarrier wakes it; the machine asks it when nothing runs).
RUNNING, WAITING, EXITED, ABSENT, SUSPENDED = 0, 1, 2, 3, 4


class PtxRuntimeError(ValueError):
    """A kernel did something the hardware would fault on or PTX leaves undefined; the message names
    the PTX line, the CTA, the thread and the address or value involved."""


#: The cluster special registers (a cluster of one CTA: ``State._cluster_special``).
CLUSTER_REGISTERS = frozenset(("clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid", "cluster_ctarank",
                               "cluster_nctarank", "is_explicit_cluster"))


def cluster_shape(entry) -> tuple[int, int, int]:
    """The CTAs per cluster a kernel's ``.reqnctapercluster`` asks for ((1, 1, 1) without it)."""
    v = tuple(entry.directives.get("reqnctapercluster", ()) if entry is not None else ())
    return tuple(int(x) for x in v) + (1,) * (3 - len(v))  # type: ignore[return-value]


@dataclass
class Geometry:
    """Launch geometry: ``grid``/``block`` as (x, y, z); ``ctas`` the (x, y, z) of each simulated CTA."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    ctas: list[tuple[int, int, int]]

    @property
    def threads_per_cta(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_cta(self) -> int:
        return -(-self.threads_per_cta // WARP_LANES)

    @property
    def slots(self) -> int:
        """Thread slots: whole warps of every simulated CTA."""
        return len(self.ctas) * self.warps_per_cta * WARP_LANES


#: Barriers of a CTA (PTX ``bar.sync a``: a in 0..15).
BARRIERS = 16


@dataclass
class State:
    """Everything a running kernel reads and writes."""

    geometry: Geometry
    gmem: GlobalMemory
    smem: np.ndarray                 # uint8 (ctas, bytes)
    lmem: np.ndarray                 # uint8 (threads, bytes)
    params: np.ndarray               # uint8: the kernel's .param bytes
    cmem: np.ndarray                 # uint8: the module's .const bytes
    pmem: np.ndarray                 # uint8 (threads, bytes): .func parameters and call arguments
    global_vars: dict[str, int] = field(default_factory=dict)     # module .global variable -> address
    program: Any = None              # the Program running (ret finds its call's result copies there)
    regs: dict[str, np.ndarray] = field(default_factory=dict)
    reg_types: dict[str, PtxType] = field(default_factory=dict)
    #: The registers of one array type are the rows of one 2-D array (``declare_all``): an instruction
    #: that reads or writes many (mma.sync, a batch of them) moves them in one indexing.
    files: dict[np.dtype, np.ndarray] = field(default_factory=dict)
    rows: dict[str, tuple[np.dtype, int]] = field(default_factory=dict)     # register -> (its file, row)
    views: dict[str, np.ndarray] = field(default_factory=dict)              # register -> read-only view

    def __post_init__(self) -> None:
        g = self.geometry
        n = g.slots
        t = np.arange(n)
        self.cta = t // (g.warps_per_cta * WARP_LANES)          # index into geometry.ctas
        self.tid_linear = t % (g.warps_per_cta * WARP_LANES)    # thread index within its CTA
        self.lane = t % WARP_LANES
        self.warp = t // WARP_LANES                              # warp over the whole launch
        self.present = self.tid_linear < g.threads_per_cta
        bx, by, _ = g.block
        self.tid = np.stack([self.tid_linear % bx, self.tid_linear // bx % by, self.tid_linear // (bx * by)])
        self.ctaid = np.array(g.ctas, np.int64).reshape(-1, 3).T[:, self.cta] if g.ctas else np.zeros((3, 0))
        self.pc = np.zeros(n, np.int64)
        self.status = np.where(self.present, RUNNING, ABSENT).astype(np.int8)
        self.barrier = np.full(n, -1, np.int16)                 # barrier a waiting thread waits on
        self.cc = np.zeros(n, bool)                             # the carry flag of add.cc and friends
        self.barrier_count: dict[tuple[int, int], int] = {}     # (CTA, barrier) -> its thread count b
        self.barrier_arrivals: dict[tuple[int, int], int] = {}  # (CTA, barrier) -> threads that bar.arrive'd
        self.steps = 0                                           # steps run so far (%clock reads it)
        self.cp_pending: list = []                               # cp.async copies not yet landed
        self.cp_committed = np.zeros(n, np.int64)                # cp.async groups each thread committed
        self.stack = np.zeros((n, 0), np.int64)                  # return PCs of .func calls
        self.depth = np.zeros(n, np.int64)
        self._file_rows: dict = {}
        self.pc_converged = 0                                    # the PC of machine.converged's threads
        self.op: Any = None                                      # the instruction running (observers read it)
        self.observers: tuple = ()                               # see observe.py; set by attach
        self.handlers: dict[type[Event], tuple[Handler, ...]] = {}   # event class -> bound methods (attach)
        self.async_units: Any = None                             # mbarriers, bulk copies: semantics/mbarrier.py
        self.checker: Any = None                                 # run_kernel(check=...): fragsim.ptx.checks
        self.set_span(None)

    def attach(self, observers) -> None:
        """Watch the run with ``observers`` (observe.py): their ``on_<kind>`` methods looked up once,
        an ``on_`` method that names no event kind refused (TypeError)."""
        observers = tuple(observers)
        self.handlers = handlers(observers)
        self.observers = observers

    def emit(self, event: Event) -> None:
        """Tell every observer with a method for ``event``'s kind about it (observe.py)."""
        for fn in self.handlers.get(type(event), ()):
            fn(self, event)

    # ---- the threads of the step ---------------------------------------------------------------

    def set_span(self, idx: np.ndarray | None) -> None:
        """The machine names the thread array of the steps that follow (None: none).  When ``idx`` is one
        ascending run of consecutive threads, register reads of exactly that array are read-only views
        (``span``) instead of copies and writes are slice assignments; ``span_warps`` is then the number
        of whole warps it covers (0 unless it is whole warps of present lanes)."""
        self.span_idx, self.span, self.span_warps = None, slice(0, 0), 0
        if idx is None or not len(idx):
            return
        lo, hi = int(idx[0]), int(idx[-1]) + 1
        if hi - lo != len(idx):
            return
        self.span_idx, self.span = idx, slice(lo, hi)
        if lo % WARP_LANES == 0 and len(idx) % WARP_LANES == 0 and self.present[lo:hi].all():
            self.span_warps = len(idx) // WARP_LANES

    def cols(self, idx: np.ndarray) -> slice | np.ndarray:
        """What indexes threads ``idx`` in a per-thread array: the span's slice for the span itself."""
        return self.span if idx is self.span_idx else idx

    def file_rows(self, names: tuple[str, ...], dtype=np.uint32) -> np.ndarray | None:
        """The rows of registers ``names`` in the file of ``dtype`` (None unless every one is there)."""
        key = (names, np.dtype(dtype))
        if key not in self._file_rows:
            where = [self.rows.get(n) for n in names]
            ok = all(w is not None and w[0] == key[1] for w in where)
            self._file_rows[key] = np.array([w[1] for w in where], np.int64) if ok else None  # type: ignore[index]
        return self._file_rows[key]

    # ---- registers ----------------------------------------------------------------------------

    def declare(self, name: str, t: PtxType) -> None:
        """A register of every thread, zero until written (PTX leaves it undefined; zero is repeatable)."""
        self._place(name, t, np.zeros(self.geometry.slots, t.dtype))

    def declare_all(self, registers: dict[str, PtxType]) -> None:
        """``declare`` each register; those of one array type are the rows of one file (``files``)."""
        groups: dict[np.dtype, list[str]] = {}
        for name, t in registers.items():
            groups.setdefault(t.dtype, []).append(name)
        for dt, names in groups.items():
            file = self.files[dt] = np.zeros((len(names), self.geometry.slots), dt)
            for i, name in enumerate(names):
                self.rows[name] = (dt, i)
                self._place(name, registers[name], file[i])

    def _place(self, name: str, t: PtxType, row: np.ndarray) -> None:
        view = row.view()
        view.flags.writeable = False
        self.regs[name], self.views[name], self.reg_types[name] = row, view, t

    def read_reg(self, name: str, idx: np.ndarray, t: PtxType) -> np.ndarray:
        """Register ``name`` of threads ``idx`` in type ``t``: the low bits when the register is wider
        (ld/st/cvt may name a wider register), zero-extended when narrower.  For the span, a read-only
        view of the register when no conversion is needed."""
        v = self.views[name][self.span] if idx is self.span_idx else self.regs[name][idx]
        if t.kind == "pred":
            return v.astype(bool) if v.dtype != bool else v
        if v.dtype == bool:
            return v.astype(t.dtype)
        return v if v.dtype == t.dtype else v.astype(t.dtype)

    def write_reg(self, name: str, idx: np.ndarray, value: np.ndarray, t: PtxType) -> None:
        """Write ``value`` (bits of type ``t``) into register ``name`` of threads ``idx``; into a wider
        register a signed type sign-extends, every other type zero-extends (ld.s8 %r1 does)."""
        reg = self.regs[name]
        if reg.dtype == bool:
            reg[self.span if idx is self.span_idx else idx] = value.astype(bool)
            return
        if value.dtype == bool:
            value = value.astype(np.uint8)
        if t.kind == "s" and reg.dtype.itemsize > value.dtype.itemsize:
            narrow, wide = np.dtype(f"int{8 * value.dtype.itemsize}"), np.dtype(f"int{8 * reg.dtype.itemsize}")
            value = value.view(narrow).astype(wide).view(reg.dtype)
        reg[self.span if idx is self.span_idx else idx] = value.astype(reg.dtype, copy=False)

    # ---- special registers ---------------------------------------------------------------------

    def special(self, name: str, component: str | None, idx: np.ndarray) -> np.ndarray:
        """The value of a special register for threads ``idx`` (as uint64, the machine narrows it)."""
        g = self.geometry
        axis = {"x": 0, "y": 1, "z": 2}.get(component or "", None)
        if name == "tid" and axis is not None:
            return self.tid[axis][idx].astype(np.uint64)
        if name == "ntid" and axis is not None:
            return np.full(len(idx), g.block[axis], np.uint64)
        if name == "ctaid" and axis is not None:
            return self.ctaid[axis][idx].astype(np.uint64)
        if name == "nctaid" and axis is not None:
            return np.full(len(idx), g.grid[axis], np.uint64)
        if name == "laneid":
            return self.lane[idx].astype(np.uint64)
        if name == "warpid":         # the warp's index in its CTA (the hardware's may differ: documented)
            return (self.tid_linear[idx] // WARP_LANES).astype(np.uint64)
        if name == "nwarpid":
            return np.full(len(idx), g.warps_per_cta, np.uint64)
        if name in ("smid", "nsmid", "gridid"):     # a documented constant: every CTA runs on "SM 0"
            return np.zeros(len(idx), np.uint64)
        if name in ("clock", "clock64", "globaltimer", "globaltimer_lo", "globaltimer_hi"):
            # a documented counter: the machine's step count (it grows, it is repeatable, it is not time)
            v = np.full(len(idx), self.steps, np.uint64)
            return v >> np.uint64(32) if name == "globaltimer_hi" else v
        if name in ("lanemask_eq", "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt"):
            lane = self.lane[idx].astype(np.uint64)
            one = np.uint64(1)
            eq = one << lane
            return {"lanemask_eq": eq, "lanemask_lt": eq - one, "lanemask_le": (eq << one) - one,
                    "lanemask_ge": ~(eq - one) & np.uint64(0xFFFFFFFF),
                    "lanemask_gt": ~((eq << one) - one) & np.uint64(0xFFFFFFFF)}[name]
        if name in CLUSTER_REGISTERS:
            return self._cluster_special(name, axis, idx)
        raise PtxRuntimeError(f"special register %{name}{'.' + component if component else ''} is not modelled")

    def _cluster_special(self, name: str, axis: int | None, idx: np.ndarray) -> np.ndarray:
        """Every CTA is a cluster of one (fragsim runs no larger clusters): cluster id = CTA id, rank 0 of 1."""
        entry = getattr(self.program, "entry", None)
        shape = cluster_shape(entry)
        if shape[0] * shape[1] * shape[2] > 1:
            raise PtxRuntimeError(f"%{name}: the kernel asks for clusters of {shape} CTAs (.reqnctapercluster); "
                                  "fragsim runs clusters of one CTA")
        n = len(idx)
        if name == "is_explicit_cluster":
            return np.full(n, int(entry is not None and bool({"explicitcluster", "reqnctapercluster"}
                                                               & set(entry.directives))), np.uint64)
        if name in ("cluster_ctarank", "cluster_nctarank"):
            return np.full(n, int(name == "cluster_nctarank"), np.uint64)
        if axis is None:
            raise PtxRuntimeError(f"special register %{name} takes a component .x, .y or .z")
        if name == "clusterid":
            return self.ctaid[axis][idx].astype(np.uint64)
        if name == "nclusterid":
            return np.full(n, self.geometry.grid[axis], np.uint64)
        return np.full(n, int(name == "cluster_nctaid"), np.uint64)      # cluster_ctaid 0, cluster_nctaid 1

    # ---- addresses -------------------------------------------------------------------------------

    def shared_rows(self, idx: np.ndarray) -> np.ndarray:
        return self.cta[idx]

    def where(self, t: int) -> str:
        """Thread ``t`` as a user reads it: CTA (x,y,z), thread (x,y,z), warp and lane."""
        c = self.geometry.ctas[int(self.cta[t])]
        return (f"CTA ({c[0]},{c[1]},{c[2]}) thread ({int(self.tid[0][t])},{int(self.tid[1][t])},"
                f"{int(self.tid[2][t])}) (warp {int(self.tid_linear[t]) // WARP_LANES}, lane {int(self.lane[t])})")

    # ---- memory ----------------------------------------------------------------------------------

    def fault(self, kind: str, idx: np.ndarray, bad: np.ndarray, line: int, message, addrs=None, width: int = 0,
              space: str | None = None) -> np.ndarray:
        """Threads ``idx[bad]`` did what the hardware faults on or PTX leaves undefined: ``kind`` (a
        ``fragsim.ptx.checks.KINDS`` name), ``message(k)`` what the k-th of ``idx`` did.  Without checks a
        ``PtxRuntimeError`` names the first; with them (``run_kernel(check=...)``) it is a finding, and
        unless the checks stop at the first, ``bad`` comes back: the caller goes on without those
        threads (a load reads zeros, a store is dropped)."""
        if self.checker is None:
            k = int(np.flatnonzero(bad)[0])
            raise PtxRuntimeError(f"line {line}: {self.where(int(idx[k]))}: {message(k)}")
        return self.checker.fault(self, kind, idx, bad, line, message, addrs, width, space)

    def by_window(self, addrs: np.ndarray) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """Generic addresses split by state space, global first: (space, selection, addresses in that
        space) for each space some of them name (outside the shared and local windows: global)."""
        a = addrs.astype(np.uint64)
        sels = {sp: (a >= np.uint64(b)) & (a < np.uint64(b + WINDOW_BYTES)) for sp, b in WINDOWS.items() if b}
        sels = {"global": ~np.logical_or.reduce(list(sels.values())), **sels}
        for space, sel in sels.items():
            if sel.any():
                yield space, sel, a[sel] - np.uint64(WINDOWS[space])

    def _locate_global(self, addrs: np.ndarray, width: int, idx: np.ndarray, line: int, verb: str):
        """(the buffer located, its offset) of each access, and the faults continued past (None if none)."""
        located = self.gmem.locate(addrs, width)
        skip = None
        if (located[0] < 0).any():
            skip = self.fault("out_of_bounds", idx, located[0] < 0, line, lambda i: f"global {verb} of {width} bytes "
                              f"at {int(addrs[i]):#x} is outside every buffer of the launch", addrs, width, "global")
        return located, skip

    def _offsets(self, space: str, addrs: np.ndarray, width: int, idx: np.ndarray, line: int,
                 verb: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(byte array of ``space``, each access's flat offset in it, the faults continued past or None),
        the accesses checked to lie inside."""
        mem, rows = self._space(space, idx)
        off = addrs.astype(np.int64)
        bad = (addrs.astype(np.uint64) > np.uint64(mem.shape[-1])) | (off + width > mem.shape[-1])
        skip = None
        if bad.any():
            skip = self.fault("out_of_bounds", idx, bad, line, lambda i: f"{space} {verb} of {width} bytes at "
                              f"{int(addrs[i]):#x} is outside the {mem.shape[-1]} bytes of {space} memory",
                              addrs, width, space)
        return mem.reshape(-1), off if rows is None else rows * mem.shape[-1] + off, skip

    def load(self, space: str | None, addrs: np.ndarray, width: int, idx: np.ndarray, line: int) -> np.ndarray:
        """``width`` bytes at each thread's address in ``space`` (None: generic) -> uint8 (n, width)."""
        if space is None:
            out = np.empty((len(idx), width), np.uint8)
            for sp, sel, a in self.by_window(addrs):
                out[sel] = self.load(sp, a, width, idx[sel], line)
            return out
        skip = self._check_alignment(addrs, width, idx, line, space)
        if skip is None and space == "global":
            located, skip = self._locate_global(addrs, width, idx, line, "load")
            if skip is None:
                return self.gmem.load(addrs, width, located)
        if skip is None and space == "param" and self.pmem.shape[1]:
            split = addrs.astype(np.uint64) >= np.uint64(self.params.size)
            if split.any():          # a .func parameter or call argument: this thread's own bytes
                out = np.empty((len(idx), width), np.uint8)
                if (~split).any():
                    out[~split] = self.load("param", addrs[~split], width, idx[~split], line)
                off = addrs[split].astype(np.int64) - self.params.size
                out[split] = self.pmem[idx[split][:, None], off[:, None] + np.arange(width)]
                return out
        if skip is None:
            mem, off, skip = self._offsets(space, addrs, width, idx, line, "load")
            if skip is None:
                if self.observers and space == "shared":
                    self.emit(SharedAccess(idx, addrs=addrs, width=width, write=False))
                return take_bytes(mem, off, width)
        # checks going on past a fault: the faulting threads read zeros
        out = np.zeros((len(idx), width), np.uint8)
        keep = ~skip
        if keep.any():
            out[keep] = self.load(space, addrs[keep], width, idx[keep], line)
        return out

    def store(self, space: str | None, addrs: np.ndarray, data: np.ndarray, idx: np.ndarray, line: int) -> None:
        """Write ``data`` (uint8 (n, width)) at each thread's address; threads in order, the last wins."""
        width = data.shape[1]
        if space is None:
            for sp, sel, a in self.by_window(addrs):
                self.store(sp, a, data[sel], idx[sel], line)
            return
        if space == "const":
            raise PtxRuntimeError(f"line {line}: .const memory is read-only")
        skip = self._check_alignment(addrs, width, idx, line, space)
        if skip is None and space == "global":
            located, skip = self._locate_global(addrs, width, idx, line, "store")
            if skip is None:
                self.gmem.store(addrs, data, located)
                return
        if skip is None and space == "param":
            off = addrs.astype(np.int64) - self.params.size
            bad = (off < 0) | (off + width > self.pmem.shape[1])
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise PtxRuntimeError(f"line {line}: {self.where(int(idx[k]))}: param store at {int(addrs[k]):#x}: a "
                                      "kernel's own parameters are read-only; only call arguments are written")
            self.pmem[idx[:, None], off[:, None] + np.arange(width)] = data
            return
        if skip is None:
            mem, off, skip = self._offsets(space, addrs, width, idx, line, "store")
            if skip is None:
                if self.observers and space == "shared":
                    self.emit(SharedStore(idx, addrs=addrs, data=data))
                    self.emit(SharedAccess(idx, addrs=addrs, width=width, write=True))
                put_bytes(mem, off, data)
                return
        keep = ~skip                 # checks going on past a fault: the faulting threads' stores are dropped
        if keep.any():
            self.store(space, addrs[keep], data[keep], idx[keep], line)

    def _space(self, space: str, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The byte array of a non-global space, and the row of each thread in it (None: one array)."""
        if space == "shared":
            return self.smem, self.cta[idx]
        if space == "local":
            return self.lmem, idx
        if space == "const":
            return self.cmem, None
        if space == "param":
            return self.params, None
        raise PtxRuntimeError(f"state space .{space} is not modelled")

    def _check_alignment(self, addrs: np.ndarray, width: int, idx: np.ndarray, line: int,
                         space: str) -> np.ndarray | None:
        """PTX: an access of ``width`` bytes must be ``width``-aligned (a misaligned one faults).  Returns
        the faults the checks go on past (None if none)."""
        if width > 1 and len(addrs):
            if width & (width - 1) == 0 and not int(np.bitwise_or.reduce(addrs, axis=None)) & (width - 1):
                return None              # every address aligned: one reduction says so
            a = addrs.astype(np.uint64, copy=False)
            bad = (a % np.uint64(width)) != 0
            if bad.any():
                return self.fault("misaligned", idx, bad, line, lambda i: f"{space} access of {width} bytes at "
                                  f"{int(addrs[i]):#x} is not {width}-byte aligned", addrs, width, space)
        return None

    def check_shared(self, addrs: np.ndarray, width: int, idx: np.ndarray, line: int) -> None:
        """Shared addresses (any shape, with ``idx`` alike) of ``width``-byte accesses: aligned and inside
        the CTA's shared memory.  Checks going on past a fault raise ``SkipThreads`` with the faulting
        threads: the instructions that call this do so before they change anything, and the checks
        run them again without those threads (``fragsim.ptx.checks``)."""
        a, t = addrs.reshape(-1), idx.reshape(-1)
        skip = None
        if len(a) and (a.min() < 0 or a.max() + width > self.smem.shape[1]):
            bad = (a < 0) | (a + width > self.smem.shape[1])
            skip = self.fault("out_of_bounds", t, bad, line, lambda i: f"shared access of {width} bytes at "
                              f"{int(a[i]):#x} is outside the {self.smem.shape[1]} bytes of the CTA's shared memory",
                              a, width, "shared")
        if skip is None:
            skip = self._check_alignment(a, width, t, line, "shared")
        if skip is not None:
            raise SkipThreads(t[skip])


class SkipThreads(Exception):
    """Checks going on past a fault: ``threads`` must not run the instruction (see ``State.check_shared``)."""

    def __init__(self, threads: np.ndarray):
        super().__init__(f"{len(threads)} thread(s) skip the instruction")
        self.threads = threads
