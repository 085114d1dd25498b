"""Shadow memory of the checks (``fragsim.ptx.checks``): for every cell of every CTA's shared memory,
who last wrote it and who read it since, and when, in the ordering the kernel's barriers give.

**Ordering.**  Each warp has a *stamp*, a counter that grows at every synchronisation the warp takes
part in (a CTA barrier it arrives at, ``bar.warp.sync``); every access is recorded with the stamp of
its warp.  ``VC[cta, v, w]`` (a vector clock over the warps of the CTA) is the latest stamp of warp
``w`` whose accesses are ordered before what warp ``v`` does now; an access recorded as (warp w,
stamp s) is ordered before warp ``v``'s access iff ``VC[cta, v, w] >= s`` or it is the same thread.
A barrier generation joins the clocks of the warps that arrive (``bar.sync``/``barrier.sync`` and
``bar.arrive``) and hands the join to the warps it releases, so ``bar.sync 1, 64`` orders only its
64 threads and a ``bar.arrive`` producer's earlier writes are ordered before the consumers that
wait, not the other way.  ``VC[cta, v, v]`` is ``v``'s stamp minus one: lanes of one warp are ordered
only by a synchronisation between them (``bar.warp.sync``, a barrier), as on GPUs with independent
thread scheduling.

**Cells.**  The shadow is kept per ``G``-byte cell, ``G`` the narrowest shared access of the kernel
(1 to 16 bytes): every access is whole cells, since accesses are aligned to their width (checked).
Per cell: the last writer (CTA-local thread, stamp, PTX line, whether atomic), per warp the stamp
and the lanes of its latest reads since that write, the ``cp.async`` or bulk copy in flight into it,
and how many ``wgmma`` in flight read it.  All of it is arrays updated by indexing, one access set
at a time, never a loop over threads.

**Proxies** (only for kernels whose shared memory the async proxy reads: ``wgmma`` operands, bulk
and tensor copies to global memory).  A write by the generic proxy (``st``, ``atom``, ``red``,
``stmatrix``) is visible to the async proxy once a ``fence.proxy.async`` comes between them in
causality order (PTX ISA, memory consistency model: proxy-preserved base causality order) -- a
fence of any thread that the write is ordered before and that is ordered before the read.  Two
more clocks per warp follow it through the same synchronisations as ``VC``: ``PV[cta, v, w]``, the
latest stamp of warp ``w`` whose writes a fence ordered after them has made visible to the async
proxy, as far as warp ``v`` knows (a fence by warp ``f`` covers what ``VC[f]`` covers), and
``PF[cta, v, w]``, the number of fences warp ``w`` itself had executed, as far as ``v`` knows; each
generic write records its warp's fence count, so a write followed by its own warp's fence is
covered (lanes of a warp count as one here).  A fence starts a new stamp of its warp, so writes
after it are not covered by it.
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import MATRIX_ROW_BYTES, WARP_LANES

from .state import BARRIERS, EXITED

#: Widest cell: ldmatrix rows, cp.async copies and wgmma's core-matrix rows are 16 bytes.
MAX_CELL = MATRIX_ROW_BYTES
#: Bytes the shadow may take before the run is refused (run fewer CTAs with ``ctas=``).
MAX_SHADOW_BYTES = 2 << 30
#: The stamp of a cell never written: below every warp's clock.
NEVER = np.iinfo(np.int32).min
#: The writer of a cell never written, and of bytes a bulk/tensor copy (TMA) wrote (with no mbarrier).
NOBODY, ASYNC_PROXY = -1, -2
#: The "line" of a write a bulk/tensor copy made (its bytes land at an mbarrier operation, not a line).
BULK_LINE = -1

#: A CTA-local thread index shifted right by this is its warp.
LANE_SHIFT = WARP_LANES.bit_length() - 1
_LANE_BITS = np.left_shift(np.uint32(1), np.arange(WARP_LANES, dtype=np.uint32))
ALL_LANES = np.uint32(0xFFFFFFFF)


class Hazards:
    """What one access set found: boolean masks over its entries (cells touched by a thread)."""

    def __init__(self, m: int):
        self.m = m
        none = np.zeros(m, bool)
        self.pending = self.inflight = self.raw = self.waw = self.war = self.dup = self.uninit = none
        self.hit = False                           # any hazard at all
        self.info: dict[str, np.ndarray] = {}      # the shadow as the access found it, for the messages

    def any(self) -> bool:
        return self.hit


class Shadow:
    """The shadow of every simulated CTA's shared memory (see the module docstring).

    Warps are numbered over the launch by ``cw = CTA * W + warp within the CTA``; ``VC`` is
    ``(ctas * W, W)``.  A cell never written holds the lowest stamp, so every warp is ordered after
    its (absent) writer without a separate test."""

    def __init__(self, state, cell: int):
        g = state.geometry
        self.s = state
        self.ctas = len(g.ctas)
        self.W = g.warps_per_cta
        self.nbytes = state.smem.shape[1]
        self.G = cell
        self.ncell = max(1, -(-self.nbytes // cell))
        n = self.ctas * self.ncell
        need = n * (4 * 6 + 2 + 1 + 8 * self.W)
        if need > MAX_SHADOW_BYTES:
            raise ValueError(f"check: the shadow of {self.ctas} CTA(s) x {self.nbytes} bytes of shared memory in "
                             f"{cell}-byte cells takes {need / 2**30:.1f} GiB; check fewer CTAs at once with ctas=")
        self.w_tid = np.full(n, NOBODY, np.int32)        # CTA-local thread that wrote last (or NOBODY, ASYNC_PROXY)
        self.w_stamp = np.full(n, NEVER, np.int32)
        self.w_line = np.zeros(n, np.int32)
        self.w_atomic = np.zeros(n, bool)
        self.r_stamp = np.full((n, self.W), -1, np.int32)   # per warp: stamp of its reads since the write
        self.r_lanes = np.zeros((n, self.W), np.uint32)     # ... and the lanes that read
        self.r_line = np.zeros(n, np.int32)
        self.pend = np.full(n, -1, np.int32)             # cp.async or bulk copy in flight: the issuing thread
        self.pend_line = np.zeros(n, np.int32)
        self.pending = 0                                 # cells with a copy in flight
        self.wg_reads = np.zeros(n, np.int16)            # wgmma in flight reading the cell
        self.reading = 0                                 # wgmma in flight
        self._slot = np.zeros(n, np.int64)               # scratch: same-step duplicates
        self.S = np.zeros(self.ctas * self.W, np.int32)                   # each warp's stamp
        self.VC = np.full((self.ctas * self.W, self.W), -1, np.int32)     # VC[cw, w] (module docstring)
        self.join = np.full((self.ctas, BARRIERS, self.W), -1, np.int32)  # a barrier generation's join
        # per CTA: no write / no read recorded since a barrier that ordered everything before it for every
        # warp (the checks of an access set whose CTAs all have no writes to race with are skipped)
        self.no_writes = np.ones(self.ctas, bool)
        self.no_reads = np.ones(self.ctas, bool)
        self.mb_join: dict[tuple, np.ndarray] = {}       # (CTA, mbarrier address, phase) -> its join (W,)
        t = np.arange(g.slots)
        self.t_cw = (state.cta * self.W + state.tid_linear // WARP_LANES).astype(np.int64)   # per thread
        self.t_w = (state.tid_linear // WARP_LANES).astype(np.int64)
        self.t_tid = state.tid_linear.astype(np.int32)
        self.t_bit = _LANE_BITS[t % WARP_LANES]
        self.proxy = False                               # the proxy clocks (proxy_on)

    def proxy_on(self) -> None:
        """Follow generic-proxy writes to the async proxy (the module docstring's **Proxies**)."""
        n, nw = self.ctas * self.ncell, self.ctas * self.W
        self.proxy = True
        self.w_generic = np.zeros(n, bool)               # written by the generic proxy
        self.w_fence = np.zeros(n, np.int32)             # ... when its warp had executed this many fences
        self.F = np.zeros(nw, np.int32)                  # fences each warp executed
        self.PV = np.full((nw, self.W), -1, np.int32)
        self.PF = np.zeros((nw, self.W), np.int32)
        self.pjoin = np.full((self.ctas, BARRIERS, 2, self.W), -1, np.int32)
        self.mb_pjoin: dict[tuple, np.ndarray] = {}

    def _proxy_rows(self, cw: np.ndarray) -> np.ndarray:
        """(len(cw), 2, W): the PV and PF rows of warps ``cw``."""
        return np.stack([self.PV[cw], self.PF[cw]], axis=1)

    def _proxy_learn(self, cw: np.ndarray, rows: np.ndarray) -> None:
        self.PV[cw] = np.maximum(self.PV[cw], rows[..., 0, :])
        self.PF[cw] = np.maximum(self.PF[cw], rows[..., 1, :])

    # ---- who --------------------------------------------------------------------------------------

    def warps(self, threads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(CTA, warp within the CTA) of global threads."""
        s = self.s
        return s.cta[threads], s.tid_linear[threads] // WARP_LANES

    def cells(self, cta: np.ndarray, addrs: np.ndarray, width: int) -> np.ndarray:
        """Cells of ``width``-byte accesses at shared ``addrs`` of CTAs ``cta``: (n, width // G) flat
        indices into the shadow."""
        k = max(1, width // self.G)
        first = cta.astype(np.int64) * self.ncell + addrs.astype(np.int64) // self.G
        return first[:, None] + np.arange(k) if k > 1 else first[:, None]

    # ---- synchronisation -------------------------------------------------------------------------

    def _own(self, cw: np.ndarray) -> None:
        self.VC[cw, cw % self.W] = self.S[cw] - 1

    def _warps_of(self, threads: np.ndarray, barrier: np.ndarray | None = None):
        cw, first = np.unique(self.t_cw[threads], return_index=True)
        return cw, (None if barrier is None else barrier[first].astype(np.int64))

    def arrive(self, threads: np.ndarray, barrier: np.ndarray) -> None:
        """Threads arrive at barriers (``bar.sync``/``bar.arrive``): their warps' clocks join the
        barrier's generation, and their later accesses get a new stamp."""
        cw, b = self._warps_of(threads, barrier)
        rows = self.VC[cw].copy()
        rows[np.arange(len(cw)), cw % self.W] = self.S[cw]
        np.maximum.at(self.join, (cw // self.W, b), rows)
        if self.proxy:
            np.maximum.at(self.pjoin, (cw // self.W, b), self._proxy_rows(cw))
        self.S[cw] += 1
        self._own(cw)

    def release(self, threads: np.ndarray, barrier: np.ndarray) -> None:
        """A barrier lets threads go: their warps learn the generation's join, which then ends.  Where it
        released every warp of a CTA that has not exited and now orders everything before it for every
        warp, the CTA starts again with nothing to race with."""
        cw, b = self._warps_of(threads, barrier)
        c = cw // self.W
        self.VC[cw] = np.maximum(self.VC[cw], self.join[c, b])
        self._own(cw)
        self.join[c, b] = -1
        if self.proxy:
            self._proxy_learn(cw, self.pjoin[c, b])
            self.pjoin[c, b] = -1
        W, s = self.W, self.s
        live = (s.present & (s.status != EXITED)).reshape(-1, W, WARP_LANES).any(axis=2)   # (ctas, W)
        for cta in np.unique(c).tolist():
            mine = cw[c == cta] % W
            if np.count_nonzero(live[cta]) != len(mine) or not live[cta, mine].all():
                continue
            need = self.S[cta * W:(cta + 1) * W].copy()
            need[mine] -= 1                     # the released warps' accesses before they arrived
            if (self.VC[cta * W:(cta + 1) * W] >= need[None, :]).all():
                self.no_writes[cta] = self.no_reads[cta] = True

    def warp_sync(self, threads: np.ndarray) -> None:
        """``bar.warp.sync``: the lanes of each warp are ordered (any member mask: documented in checks.py)."""
        cw, _ = self._warps_of(threads)
        self.S[cw] += 1
        self._own(cw)

    def proxy_fence(self, threads: np.ndarray) -> None:
        """``fence.proxy.async`` (shared memory) by ``threads``: their warps' own writes so far, and the
        writes ordered before them, are visible to the async proxy; later writes get a new stamp (the
        lanes' ordering, ``VC``'s own entry, is left as it was)."""
        cw, _ = self._warps_of(threads)
        own = cw % self.W
        row = self.VC[cw].copy()
        row[np.arange(len(cw)), own] = self.S[cw]
        self.PV[cw] = np.maximum(self.PV[cw], row)
        self.F[cw] += 1
        self.PF[cw, own] = self.F[cw]
        self.S[cw] += 1

    def unfenced(self, X: np.ndarray, cws: np.ndarray) -> np.ndarray:
        """Entries ``X`` (cells of one CTA) that the async proxy reads for a warpgroup (or one thread's
        warp) ``cws``: which hold a generic-proxy write that no fence.proxy.async has made visible to
        it as far as any of ``cws`` knows."""
        gen = self.w_generic[X]
        if not gen.any():
            return gen
        w = self.w_tid[X] >> LANE_SHIFT
        seen = np.zeros(len(X), bool)
        for cw in np.asarray(cws).tolist():
            seen |= (self.PV[cw, w] >= self.w_stamp[X]) | (self.PF[cw, w] > self.w_fence[X])
        return gen & ~seen

    # ---- accesses ---------------------------------------------------------------------------------

    def read(self, X: np.ndarray, cw: np.ndarray, tid, lanes, line: int, atomic: bool,
             uninit: bool) -> Hazards:
        """Entries ``X`` (cells) read by CTA-local threads ``tid`` of warps ``cw`` (``tid`` -1: the whole
        warp reads, as ldmatrix and wgmma do; ``lanes`` the lane bits, or one value for all): the
        hazards, then the reads recorded (an atomic's read is not: atomics do not race with atomics)."""
        h = Hazards(len(X))
        W = self.W
        c = cw // W
        who = self.w_tid[X] if uninit or not self.no_writes[c].all() else None
        hit = False
        if who is not None:
            # the write is ordered before: its thread's, or its warp's stamp is known to this warp
            h.raw = (self.VC.reshape(-1)[cw * W + (who >> LANE_SHIFT)] < self.w_stamp[X]) & (who != tid)
            if atomic:
                h.raw &= ~self.w_atomic[X]
            hit = bool(h.raw.any())
        if self.pending:
            h.pending = self.pend[X] >= 0
            hit = hit or bool(h.pending.any())
        if uninit:
            h.uninit = (who == NOBODY) & ~h.pending
            hit = hit or bool(h.uninit.any())
        h.hit = bool(hit)
        if hit:
            h.info = {"w_tid": self.w_tid[X], "w_line": self.w_line[X], "pend_tid": self.pend[X],
                      "pend_line": self.pend_line[X]}
        if not atomic:
            self.no_reads[c] = False
            v = cw % W
            st = self.S[cw]
            if isinstance(lanes, np.ndarray):
                # lanes of reads its own lanes are not ordered after yet are kept (a fence starts a new
                # stamp without ordering them)
                old = self.r_stamp[X, v] <= self.VC[cw, v]
                self.r_lanes[X[old], v[old]] = 0
                self.r_stamp[X, v] = st
                np.bitwise_or.at(self.r_lanes, (X, v), lanes)
            else:
                self.r_stamp[X, v] = st
                self.r_lanes[X, v] = lanes
            self.r_line[X] = line
        return h

    def write(self, X: np.ndarray, cw: np.ndarray, tid: np.ndarray, lanes: np.ndarray, line: int,
              atomic: bool, same=None, issue: bool = False) -> Hazards:
        """Entries ``X`` written by threads ``tid`` of warps ``cw`` (``lanes`` their lane bits): the
        hazards, then the write recorded; ``issue``: a cp.async issues it (the bytes land later:
        ``land``).  ``same(j, k)``: whether entries ``j`` write the bytes that entries ``k`` (None: the
        cells) hold -- a write that changes no value is no hazard, as racecheck does not report one --
        or None when the bytes are unknown."""
        h = Hazards(len(X))
        W = self.W
        if self.pending:
            h.pending = self.pend[X] >= 0
        if self.reading:
            h.inflight = self.wg_reads[X] > 0
        c = cw // W
        mine = np.arange(len(X))
        vc = self.VC[cw]                                         # (m, W): what this warp is ordered after
        if not self.no_writes[c].all():
            who = self.w_tid[X]
            h.waw = (vc[mine, who >> LANE_SHIFT] < self.w_stamp[X]) & (who != tid)
            if atomic:
                h.waw &= ~self.w_atomic[X]
            if same is not None and h.waw.any():
                j = np.flatnonzero(h.waw)
                h.waw[j[same(j, None)]] = False
        war = None
        if not self.no_reads[c].all():
            war = self.r_stamp[X] > vc
            v = cw % W
            war[mine, v] &= (self.r_lanes[X, v] & ~lanes) != 0      # its own warp: other lanes read it
            h.war = war.any(axis=1)
        # entries of this one access set that hit one cell: the thread order decides which lands
        slot = self._slot
        slot[X] = mine
        last = slot[X]
        h.dup = last != mine
        if h.dup.any():
            h.dup &= tid[last] != tid
            if same is not None and h.dup.any():
                j = np.flatnonzero(h.dup)
                h.dup[j[same(j, last[j])]] = False
        h.hit = bool(h.waw.any() or h.war.any() or h.dup.any() or (self.pending and h.pending.any()) or
                     (self.reading and h.inflight.any()))
        if h.hit:
            # the reader named: another warp's where there is one (that race no __syncwarp fixes)
            u = np.zeros(len(X), np.int64)
            if war is not None:
                other = war.copy()
                other[mine, cw % W] = False
                u = np.where(other.any(axis=1), other.argmax(axis=1), war.argmax(axis=1))
            who = self.w_tid[X]
            h.info = {"w_tid": who, "w_line": self.w_line[X], "pend_tid": self.pend[X],
                      "pend_line": self.pend_line[X], "war_warp": u, "r_lanes": self.r_lanes[X, u],
                      "r_line": self.r_line[X], "dup_tid": tid[last]}
        if issue:
            self.pending += int(np.count_nonzero(self.pend[X] < 0))
            self.pend[X] = tid
            self.pend_line[X] = line
        else:
            self._record(X, cw, tid, line, atomic, generic=True)
        return h

    def _record(self, X, cw, tid, line, atomic, generic: bool = False) -> None:
        self.no_writes[cw // self.W] = False
        self.w_tid[X] = tid
        self.w_stamp[X] = self.S[cw]
        self.w_line[X] = line
        self.w_atomic[X] = atomic
        self.r_stamp[X] = -1
        if self.proxy:
            self.w_generic[X] = generic
            if generic:
                self.w_fence[X] = self.F[cw]

    # ---- mbarriers: an arrive releases, a wait that sees the phase complete acquires -------------------

    def mb_arrive(self, threads: np.ndarray, bar: tuple[int, int], phases: np.ndarray) -> None:
        """Arrive-on operations of ``threads`` on mbarrier ``bar`` (CTA, address) in ``phases``: their
        warps' clocks join the phase's (a warp's arrive releases all its lanes' accesses: an
        over-approximation when one elected lane arrives), and their later accesses get a new stamp."""
        cw = self.t_cw[threads]
        for ph in np.unique(phases).tolist():
            ws = np.unique(cw[phases == ph])
            rows = self.VC[ws].copy()
            rows[np.arange(len(ws)), ws % self.W] = self.S[ws]
            self._mb_join((*bar, ph), rows.max(axis=0))
            if self.proxy:
                key = (*bar, ph)
                p = self._proxy_rows(ws).max(axis=0)
                old = self.mb_pjoin.get(key)
                self.mb_pjoin[key] = p if old is None else np.maximum(old, p)
            self.S[ws] += 1
            self._own(ws)

    def _mb_join(self, key: tuple, row: np.ndarray) -> None:
        old = self.mb_join.get(key)
        self.mb_join[key] = row if old is None else np.maximum(old, row)

    def mb_wait(self, threads: np.ndarray, key: tuple) -> None:
        """Threads saw phase ``key`` (CTA, address, phase) of an mbarrier complete: they acquire it."""
        row = self.mb_join.get(key)
        if row is None:
            return
        ws = np.unique(self.t_cw[threads])
        self.VC[ws] = np.maximum(self.VC[ws], row)
        if self.proxy and key in self.mb_pjoin:
            self._proxy_learn(ws, self.mb_pjoin[key])
        # a copy this warp issued is released at this stamp: its lanes go on at the next, after it
        self.S[ws[row[ws % self.W] >= self.S[ws]]] += 1
        self._own(ws)

    def bulk_write(self, X: np.ndarray, thread: int, key: tuple) -> None:
        """Bytes a bulk or tensor copy (TMA) issued by ``thread`` wrote, released by its complete-tx into
        mbarrier phase ``key``: a write of the issuing warp, ordered before those that wait for the phase."""
        cw = self.t_cw[thread:thread + 1]
        self._landed(X)
        self._record(X, np.repeat(cw, len(X)), np.full(len(X), self.t_tid[thread], np.int32), BULK_LINE, False)
        row = np.full(self.W, -1, np.int32)
        row[int(cw[0]) % self.W] = self.S[int(cw[0])]
        self._mb_join(key, row)

    def bulk(self, X: np.ndarray) -> None:
        """Bytes a bulk or tensor copy (TMA) wrote: written, by the async proxy, ordered before every
        access (their completion through mbarriers is not followed: documented in checks.py)."""
        self._landed(X)
        self.w_tid[X] = ASYNC_PROXY         # (ordered before everything: no_writes may stay)
        self.w_stamp[X] = NEVER
        self.w_atomic[X] = False
        self.r_stamp[X] = -1
        if self.proxy:
            self.w_generic[X] = False

    def land(self, X: np.ndarray, cw: np.ndarray, tid: np.ndarray) -> None:
        """cp.async bytes land at the wait of the thread that issued them: its write, as of now."""
        self._record(X, cw, tid, self.pend_line[X], False)
        self._landed(X)

    def _landed(self, X: np.ndarray) -> None:
        """No copy is in flight into cells ``X`` any more."""
        if self.pending:
            self.pending -= int(np.count_nonzero(self.pend[X] >= 0))
            self.pend[X] = -1

    def address(self, X: int) -> int:
        """The shared byte address of cell ``X``."""
        return int(X % self.ncell) * self.G
