"""The passes of ``fragsim.trace_fragments`` (``fragsim.trace``): what each pass sends, the
kernel run on each, and what the mma's of a run received.

The kernel runs (``run_kernel`` with an observer) with its A and B buffers holding element
identities (``fragsim.trace.ids``) instead of numbers: every move (``ld``/``st``/``cp.async``/
``ldmatrix``/``prmt``/``mov`` ...) keeps bits, so the identities reach the mma's registers -- or
shared memory, where ``wgmma`` reads them through its descriptors with fragsim's own operand model.
Pass 1 sends row/column numbers, pass 2 k numbers, larger matrices one more pass per digit (the
``Plan``).  Each pass runs every mma.sync on its own (observers stop the machine's batching) and
the tracer supplies D (the arithmetic is skipped): identities of (A's row, B's column), small
integers exact after the epilogue's conversion; where A or B holds no element (padding) the mma
passes C through.  The identities of all mma's of a pass are decoded together at its end
(``Tracing.end_pass``) into per-fragment digit summaries; what they mean is checked by
``fragsim.trace.checks``.

Assumptions: the kernel's control flow does not depend on A's and B's values (the same mma's run
in every pass; a different run is an error) and A and B reach the mma as the bits they were (no
conversion on the way: refused with the line that shows it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions.wgmma import THREADS
from fragsim.ptx.memory import Buffer
from fragsim.ptx.observe import Mma, Observer, Wgmma
from fragsim.ptx.run import run_kernel
from fragsim.ptx.state import State

from .args import MatrixArg, array_of
from .ids import NONE, IdCode, agree, combine, digit, ndigits, one_value
from .operands import operand_elements, pack_words, wgmma_operands

__all__ = ["Plan", "make_plan", "Event", "Tracing", "PassObserver", "Launch"]


#: Per pass, the per-element identities of this many inconsistent mma's are kept for the report.
KEEP = 4
#: The NumPy type of D's identities (small integers) per accumulator format (others: s32).
D_VALUES = {"f32": np.float32, "f16": np.float16, "f64": np.float64}


@dataclass(frozen=True)
class Plan:
    """What each pass sends: ``kinds[p]`` "rc" (A's row and B's column numbers) or "k", with the
    digit ``digits[p]`` (passes past the last k digit repeat it); D's identities (digits of
    ``row * N + col``, base ``d_base``) are written from pass ``d_first`` on, digit ``p - d_first``:
    the pass that completes the row and column numbers."""

    kinds: tuple
    digits: tuple
    k_digits: int
    d_first: int
    d_digits: int
    d_base: int

    @property
    def passes(self) -> int:
        return len(self.kinds)

    def rc(self) -> list[int]:
        return [p for p, k in enumerate(self.kinds) if k == "rc"]

    def k(self) -> list[int]:
        return [p for p, k in enumerate(self.kinds) if k == "k"][:self.k_digits]


def make_plan(M: int, N: int, K: int, ca: IdCode, cb: IdCode, d_base: int) -> Plan:
    n_rc = max(ndigits(M, ca.base), ndigits(N, cb.base))
    n_k = max(ndigits(K, ca.base), ndigits(K, cb.base))
    n_d = ndigits(M * N, d_base)
    total = max(n_rc + n_k, n_rc - 1 + n_d)
    kinds = tuple("rc" if p < n_rc else "k" for p in range(total))
    digits = tuple(p if p < n_rc else min(p - n_rc, n_k - 1) for p in range(total))
    return Plan(kinds, digits, n_k, n_rc - 1, n_d, d_base)


@dataclass
class Event:
    """One mma instruction executed by some units (warps; warpgroups for wgmma) at once."""

    index: int                       # its place among the run's mma executions
    line: int
    op: Any                          # the program's Op
    form: Any                        # its MmaForm or WgmmaForm
    threads: int                     # 32 (mma.sync) or 128 (wgmma)
    first: np.ndarray                # global thread index of each unit's first thread
    ctas: list                       # each unit's CTA (x, y, z)
    warps: np.ndarray                # each unit's (first) warp in its CTA
    dig: dict = field(default_factory=dict)        # (key, pass) -> digit summary per unit
    slots: dict = field(default_factory=dict)      # pass -> (A ids (u, M, K), B ids (u, K, N))
    place: Any = None                              # (u, M, N): each D element's index in the output
    raw: Any = None                                # this pass's (A, B) element words, until it ends
    quick: dict = field(default_factory=dict)      # pass -> (rows, cols) digits for D's place


class Tracing:
    """The state of one trace across its passes (the run's events, the plan, the matrices)."""

    def __init__(self, ma: MatrixArg, mb: MatrixArg, md: MatrixArg, shape, plan: Plan, ca: IdCode, cb: IdCode):
        self.ma, self.mb, self.md = ma, mb, md
        self.M, self.N, self.K = shape
        self.plan, self.ca, self.cb = plan, ca, cb
        self.events: list[Event] = []

    # -- the inputs of each pass -------------------------------------------------------------------

    def grids(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """A's and B's identity words for pass ``p``, as the matrices (rows x cols)."""
        kind, i = self.plan.kinds[p], self.plan.digits[p]
        M, N, K = self.M, self.N, self.K
        if kind == "rc":
            ra = np.broadcast_to(digit(np.arange(M), self.ca.base, i)[:, None] + 1, (M, K))
            rb = np.broadcast_to(digit(np.arange(N), self.cb.base, i)[None, :] + 1, (K, N))
        else:
            ra = np.broadcast_to(digit(np.arange(K), self.ca.base, i)[None, :] + 1, (M, K))
            rb = np.broadcast_to(digit(np.arange(K), self.cb.base, i)[:, None] + 1, (K, N))
        return self.ca.encode(ra, False), self.cb.encode(rb, True)

    def args(self, args: list, p: int) -> list:
        """The kernel's arguments for pass ``p``: copies of every array (the caller's stay as they
        were), A and B holding identities, D zero."""
        ga, gb = self.grids(p)
        out = []
        for k, v in enumerate(args):
            arr = array_of(v)
            if isinstance(arr, np.ndarray):
                arr = arr.copy()
                for m, g in ((self.ma, ga), (self.mb, gb)):
                    if k == m.arg:
                        words = g.T if m.transposed else g
                        arr.reshape(-1).view(words.dtype)[:words.size] = words.reshape(-1)
                if k == self.md.arg:
                    arr[...] = 0
                v = Buffer(arr, address=v.address, name=v.name) if isinstance(v, Buffer) else arr
            out.append(v)
        return out

    # -- an mma ---------------------------------------------------------------------------------

    def operand_check(self, ev: Event, operand: str, bits: int, code: IdCode, m: MatrixArg) -> None:
        if bits != code.bits:
            fmt = ev.form.fmt(operand).name
            raise ValueError(f"line {ev.line}: {ev.op.instr.text}: operand {operand} takes {bits}-bit .{fmt} "
                             f"elements, but {operand}'s array (args[{m.arg}], {m.dtype.name}) holds {code.bits}-bit "
                             f"ones: the kernel converts {operand} on the way, and the identities follow bits, "
                             "not values")

    def step(self, s, idx, form, a_bits, b_bits, c, p: int, n: int, threads: int) -> np.ndarray:
        """Event ``n`` of pass ``p``: A (units, M, K) and B (units, K, N) element words as the mma
        received them (kept until the pass ends, ``end_pass``), C's registers (units, threads,
        registers); returns D's identities, its registers."""
        first = idx[::threads]
        if p == 0:
            ev = Event(n, s.op.line, s.op, form, threads, first.copy(),
                       [s.geometry.ctas[int(c)] for c in s.cta[first]], s.tid_linear[first] // WARP_LANES)
            self.events.append(ev)
            self.operand_check(ev, "A", a_bits.dtype.itemsize * 8, self.ca, self.ma)
            self.operand_check(ev, "B", b_bits.dtype.itemsize * 8, self.cb, self.mb)
        else:
            if n >= len(self.events) or self.events[n].line != s.op.line or not np.array_equal(
                    self.events[n].first, first):
                raise ValueError(f"line {s.op.line}: pass {p + 1} of the trace ran another mma than pass 1 did "
                                 "here: the kernel's control flow depends on A's or B's values, which tracing "
                                 "replaces by element identities")
            ev = self.events[n]
        ev.raw = (a_bits.copy(), b_bits.copy())
        if self.plan.kinds[p] == "rc":
            # D's place needs the rows and columns now (their full check waits for the pass's end)
            ev.quick[p] = (one_value(self.ca.values(a_bits), 2), one_value(self.cb.values(b_bits), 1))
        return self.identities(ev, form, p, c)

    def end_pass(self, p: int) -> None:
        """Decode the pass's identities, all mma's of one form at once: per unit the digit each
        fragment row, column and k slot agrees on (``Event.dig``); the per-element identities of the
        first few mma's with a disagreement (``Event.slots``)."""
        groups: dict = {}
        for ev in self.events:
            groups.setdefault((ev.form.name, ev.threads), []).append(ev)
        bad_events = []                  # (event index, its A and B identities) of those with a disagreement
        for evs in groups.values():
            cut = np.cumsum([0] + [len(ev.first) for ev in evs])
            va = self.ca.decode(np.concatenate([ev.raw[0] for ev in evs]), False)
            vb = self.cb.decode(np.concatenate([ev.raw[1] for ev in evs]), True)
            if self.plan.kinds[p] == "rc":
                x, y, keys = agree(va, 2), agree(vb, 1), ("rows", "cols")
                bad = np.asarray((x < NONE).any(1) | (y < NONE).any(1))
            else:
                x, y, keys = agree(va, 1), agree(vb, 2), ("ka", "kb")
                bad = np.asarray((x < NONE).any(1) | (y < NONE).any(1) | ((x > 0) & (y > 0) & (x != y)).any(1))
            for i, ev in enumerate(evs):
                sl = slice(cut[i], cut[i + 1])
                ev.dig[keys[0], p], ev.dig[keys[1], p] = x[sl], y[sl]
                if bad[sl].any():
                    bad_events.append((ev.index, ev, va[sl], vb[sl]))
                ev.raw = None
        for _, ev, a_ids, b_ids in sorted(bad_events, key=lambda x: x[0])[:KEEP]:
            ev.slots[p] = (a_ids, b_ids)

    def identities(self, ev: Event, form, p: int, c: np.ndarray) -> np.ndarray:
        """D's registers in pass ``p``: digit ``p - d_first`` of each element's place in the output
        (``row * N + col`` by the rows and columns A and B hold); where A or B holds no element
        there (padding: it adds nothing), C as it came."""
        units = len(c)
        j = p - self.plan.d_first
        if j < 0 or j >= self.plan.d_digits:
            return np.zeros(c.shape, np.uint32)
        if ev.place is None:            # the rows and columns are complete from pass d_first on
            rc = self.plan.rc()
            rows = combine([ev.quick[q][0] for q in rc], self.ca.base)
            cols = combine([ev.quick[q][1] for q in rc], self.cb.base)
            ok = (rows >= 0)[:, :, None] & (cols >= 0)[:, None, :]
            ev.place = np.where(ok, np.maximum(rows, 0)[:, :, None] * self.N + np.maximum(cols, 0)[:, None, :], -1)
            ev.quick = {}
        v = digit(ev.place, self.plan.d_base, j) + 1
        bits = v.astype(D_VALUES.get(form.fmt("D").name, np.int32))
        bits = bits.view(f"u{bits.dtype.itemsize}")
        if (ev.place < 0).any():
            bits = np.where(ev.place < 0, operand_elements(form, "C", c).astype(bits.dtype), bits)
        return pack_words(form, bits.reshape(units, -1))

    # -- what the passes found ----------------------------------------------------------------

    def slot_coords(self, ev: Event, operand: str) -> tuple[np.ndarray, np.ndarray]:
        """Per element of ``operand`` (A: (u, M, K), B: (u, K, N)): its (row, col) in the matrix,
        combined over the passes (per-element identities where kept, else the agreed summaries)."""
        out = []
        for kind in ("rc", "k"):
            ps = self.plan.rc() if kind == "rc" else self.plan.k()
            ds = []
            for p in ps:
                if p in ev.slots:
                    v = ev.slots[p][0 if operand == "A" else 1]
                    ds.append(np.where(v == 0, NONE, v))
                else:
                    key = {("A", "rc"): "rows", ("A", "k"): "ka", ("B", "rc"): "cols", ("B", "k"): "kb"}[operand, kind]
                    s = ev.dig[key, p]
                    M, N, K = ev.form.shape
                    if operand == "A":
                        ds.append(np.broadcast_to(s[:, :, None] if kind == "rc" else s[:, None, :], (len(s), M, K)))
                    else:
                        ds.append(np.broadcast_to(s[:, None, :] if kind == "rc" else s[:, :, None], (len(s), K, N)))
            out.append(combine(ds, (self.ca if operand == "A" else self.cb).base))
        if operand == "A":
            return out[0], out[1]            # rows, k
        return out[1], out[0]                # k, cols


class PassObserver(Observer):
    """Watches one pass: tells the tracing each mma (``Mma`` and ``Wgmma`` events, fragsim.ptx.observe)."""

    def __init__(self, tracing: Tracing, p: int):
        self.t, self.p, self.n = tracing, p, 0

    def on_mma(self, s: State, e: Mma) -> None:
        form = e.form
        e.result["d"] = self.t.step(s, e.idx, form, operand_elements(form, "A", e.a), operand_elements(form, "B", e.b),
                                    e.c, self.p, self.n, WARP_LANES)
        self.n += 1

    def on_wgmma(self, s: State, e: Wgmma) -> None:
        try:
            A_, B_ = wgmma_operands(e.form, e.a, e.b, e.smem, e.trans_a, e.trans_b)
        except ValueError as err:
            raise ValueError(f"line {s.op.line}: {s.op.instr.text}: {err}") from None
        e.result["d"] = self.t.step(s, e.idx, e.form, A_, B_, e.c, self.p, self.n, THREADS)
        self.n += 1


@dataclass
class Launch:
    """A kernel launch to run again: each pass, and the diagnosis's re-runs of one CTA."""

    module: Any
    kernel: str
    grid: Any
    block: Any
    dynamic_smem: int
    arch: str | None
    approx: str | None
    max_steps: int
    args: list
    tracing: Tracing
    lines: list

    def run(self, p: int, ctas, observers) -> list:
        """Pass ``p`` (its inputs) for ``ctas``; returns the arguments, as the kernel left them."""
        args = self.tracing.args(self.args, p)
        run_kernel(self.module, self.kernel, grid=self.grid, block=self.block, args=args,
                   dynamic_smem=self.dynamic_smem, arch=self.arch, ctas=ctas, max_steps=self.max_steps,
                   approx=self.approx, observers=observers)
        return args

    def output(self, args: list) -> np.ndarray:
        """D as the matrix (M x N) from a run's arguments."""
        md = self.tracing.md
        arr = array_of(args[md.arg]).reshape(-1)[:md.rows * md.cols].reshape(md.stored)
        return np.ascontiguousarray(arr.T if md.transposed else arr)
