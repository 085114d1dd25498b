"""The passes and checks of ``fragsim.trace_fragments`` (``fragsim.ptx.trace``): is each ``mma.sync``/``wgmma``
of a kernel fed the right elements?

The kernel runs (``run_kernel`` with an observer) with its A and B buffers holding element
identities instead of numbers: every move (``ld``/``st``/``cp.async``/``ldmatrix``/``prmt``/``mov``
...) keeps bits, so the identities reach the mma's registers -- or shared memory, where ``wgmma``
reads them through its descriptors with fragsim's own operand model.  At each mma the identities
are decoded through the form's fragment map (``fragsim.unpack``: the instruction table is the one
source) and checked, for every warp (warpgroup) of every CTA run:

- every row of the A fragment holds one row of A, every column of the B fragment one column of B,
  none of them twice (*rows*, *cols*);
- each k slot holds one k in A and the same k in B (*k*), no k twice in one mma;
- over the whole run every D element is summed over each k of A exactly once (*k coverage*);
- the accumulators: the mma's D registers are replaced by identities of (A's row, B's column)
  (small integers, exact after the epilogue's conversion to f16/bf16), and every D element the
  epilogue stores must land at that row and column of the output (*stores*).

One identity per element and pass: a 16-bit element carries 15 bits (the 16th says A or B), an
8-bit one 7, a 32-bit one 17 (bits 13-29: ``cvt.rna.tf32.f32`` keeps them, and the exponent never
becomes all ones, which a conversion could canonicalise); pass 1 sends row/column numbers, pass 2
k numbers, larger matrices one more pass per digit.  D's identities are written in the digits the
output format holds exactly (f16 2048, bf16 256, f32 2**24); where A or B holds no element
(padding) the mma passes C through.  Each pass runs every mma.sync on its own (observers stop the
machine's batching) and the tracer supplies D (the arithmetic is skipped); the identities of all
mma's of a pass are decoded together at its end (``Tracing.end_pass``).  Figures: docs/trace.md.

The first inconsistent mma is diagnosed in ``fragsim check``'s words (``fragsim.ptx.trace_diagnose``)
and each diagnosis verified by re-running the kernel with its fix where one can be applied.

Assumptions: the kernel's control flow does not depend on A's and B's values (the same mma's run
in every pass; a different run is an error), A and B reach the mma as the bits they were (no
conversion on the way: refused with the line that shows it), and one CTA computes each D element
over all of K (split-K across CTAs or warps traces as missing k).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions.wgmma import THREADS

from . import ast as A
from .memory import Buffer
from .run import run_kernel

__all__ = ["Trace", "BadMma", "Element", "MatrixArg", "Tracing", "Analysis"]

#: Codes of a decoded identity (a value >= 1 is digit + 1): no element (zero bits), bits that are
#: no identity, an element of the other input matrix.
NONE, GARBAGE, OTHER = -1, -2, -3
#: Per pass, the per-element identities of this many inconsistent mma's are kept for the report.
KEEP = 4
#: Integers each output format holds exactly (D's identities are digits 1..base of these).
EXACT = {"f16": 2048, "bf16": 256, "f32": 1 << 24, "f64": 1 << 31, "s32": (1 << 31) - 1, "s8": 127}
#: The formats an output array's dtype may hold, tried in order when its values are decoded.
OUT_FORMATS = {"float16": ("f16",), "float32": ("f32",), "float64": ("f64",), "bfloat16": ("bf16",),
               "uint16": ("f16", "bf16"), "int16": ("f16", "bf16"), "uint32": ("s32", "f32"),
               "int32": ("s32", "f32"), "int8": ("s8",), "uint8": ("s8",)}
#: The NumPy type of D's identities (small integers) per accumulator format (others: s32).
D_VALUES = {"f32": np.float32, "f16": np.float16, "f64": np.float64}
#: Coverage: at most this many (D element, k) pairs are followed to find the first k summed twice.
COVERAGE_PAIRS = 1 << 24


# ---------------------------------------------------------------------------------------------
# element identities in bits

@dataclass(frozen=True)
class IdCode:
    """Where an identity sits in an element of ``bits`` bits: ``payload`` bits from bit ``shift``,
    and bit ``flag`` set for B's elements (clear for A's)."""

    bits: int
    shift: int
    payload: int
    flag: int

    @property
    def base(self) -> int:
        """Digits 0..base-1 are stored as 1..base (0: no element)."""
        return (1 << self.payload) - 1

    @property
    def dtype(self):
        return np.dtype(f"<u{self.bits // 8}")

    def encode(self, values: np.ndarray, b: bool) -> np.ndarray:
        w = values.astype(np.uint64) << np.uint64(self.shift)
        if b:
            w |= np.uint64(1) << np.uint64(self.flag)
        return w.astype(self.dtype)

    def values(self, words: np.ndarray) -> np.ndarray:
        """The identity field of element words (0: none), flags and stray bits ignored."""
        w = words.astype(np.uint64 if self.bits == 64 else np.int64)
        return ((w >> w.dtype.type(self.shift)) & w.dtype.type(self.base)).astype(np.int64)

    def decode(self, words: np.ndarray, b: bool) -> np.ndarray:
        """Element words -> int64: the value (>= 1), 0 for no element, GARBAGE or OTHER."""
        big = self.bits == 64
        w = words.astype(np.uint64 if big else np.int64)
        one = w.dtype.type(1)
        mask = w.dtype.type(self.base)
        v = ((w >> w.dtype.type(self.shift)) & mask).astype(np.int64)
        flag = (w >> w.dtype.type(self.flag)) & one
        rest = w & ~((mask << w.dtype.type(self.shift)) | (one << w.dtype.type(self.flag)))
        bad = (rest != 0) | (v == 0)
        out = np.where(flag.astype(bool) != b, OTHER, v)
        if bad.any():
            out = np.where(bad, GARBAGE, out)
        return np.where(w == 0, 0, out)


CODES = {8: IdCode(8, 0, 7, 7), 16: IdCode(16, 0, 15, 15), 32: IdCode(32, 13, 17, 31), 64: IdCode(64, 0, 31, 63)}


def ndigits(n: int, base: int) -> int:
    """Digits of base ``base`` that number 0..n-1."""
    d = 1
    while base ** d < n:
        d += 1
    return d


def digit(x: np.ndarray, base: int, i: int) -> np.ndarray:
    return (x // base ** i) % base


# ---------------------------------------------------------------------------------------------
# which arguments are A, B and D

_SPEC = re.compile(r"^\s*(\d+)\s*(\.T)?\s*(?::\s*(\d+)\s*[xX]\s*(\d+))?\s*$")


@dataclass(frozen=True)
class MatrixArg:
    """One matrix of the GEMM among the kernel's arguments: ``args[arg]`` holds it, transposed when
    ``transposed`` (the array is ``rows x cols`` of the transpose); ``rows x cols`` is the matrix."""

    role: str
    arg: int
    transposed: bool
    rows: int
    cols: int
    dtype: np.dtype

    @property
    def stored(self) -> tuple[int, int]:
        return (self.cols, self.rows) if self.transposed else (self.rows, self.cols)


def _array(v):
    return v.array if isinstance(v, Buffer) else v


def parse_matrix(spec, role: str, args: list) -> MatrixArg:
    """``spec``: the argument's position (an int), or ``"POS"``, ``"POS.T"`` (the array holds the
    matrix transposed), either with ``":ROWSxCOLS"`` (the array's shape as stored, for a 1-D array)."""
    what = role.lower()
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        m = _SPEC.match(str(int(spec)))
    elif isinstance(spec, str):
        m = _SPEC.match(spec)
    else:
        raise TypeError(f"{what} must be the position of {role}'s array among args (an int) or a spec such as "
                        f"'1.T' or '2:64x64', got {type(spec).__name__}")
    if m is None:
        raise ValueError(f"{what} {spec!r}: expected POS, POS.T (the array holds {role} transposed) or either with "
                         ":ROWSxCOLS (the array's shape as stored), e.g. '1.T' or '0:64x128'")
    pos, trans = int(m.group(1)), bool(m.group(2))
    if pos >= len(args):
        raise ValueError(f"{what} {spec!r}: args has {len(args)} values, no position {pos}")
    arr = _array(args[pos])
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{what} {spec!r}: args[{pos}] is a {type(arr).__name__}, not an array")
    if arr.dtype.itemsize * 8 not in CODES and role != "D":
        raise ValueError(f"{what}: args[{pos}] holds {arr.dtype.itemsize}-byte elements; tracing takes 1, 2, 4 or "
                         "8-byte elements")
    if m.group(3):
        shape = (int(m.group(3)), int(m.group(4)))
        if shape[0] * shape[1] > arr.size:
            raise ValueError(f"{what} {spec!r}: args[{pos}] has {arr.size} elements, fewer than {shape[0]}x{shape[1]}")
    elif arr.ndim == 2:
        shape = arr.shape
    else:
        raise ValueError(f"{what} {spec!r}: args[{pos}] is {arr.ndim}-D; give its shape as stored, "
                         f"e.g. '{pos}{'.T' if trans else ''}:ROWSxCOLS'")
    rows, cols = (shape[1], shape[0]) if trans else shape
    return MatrixArg(role, pos, trans, int(rows), int(cols), arr.dtype)


def gemm_shape(ma: MatrixArg, mb: MatrixArg, md: MatrixArg) -> tuple[int, int, int]:
    M, K = ma.rows, ma.cols
    if mb.rows != K:
        raise ValueError(f"b: B is {mb.rows}x{mb.cols} but A is {M}x{K}: B must have K = {K} rows "
                         "(a B stored N x K is '.T')")
    N = mb.cols
    if (md.rows, md.cols) != (M, N):
        raise ValueError(f"d: D is {md.rows}x{md.cols}, but A ({M}x{K}) times B ({K}x{N}) is {M}x{N}")
    if len({ma.arg, mb.arg, md.arg}) < 3:
        raise ValueError("a, b, d: three different arguments")
    return M, N, K


def out_formats(dtype: np.dtype) -> tuple[str, ...]:
    fmts = OUT_FORMATS.get(dtype.name)
    if fmts is None:
        raise ValueError(f"d: D's array holds {dtype.name}; traced are f16, bf16, f32, f64, 16-bit (f16 or bf16 "
                         "bits), 32-bit (s32 or f32 bits) and 8-bit integer outputs")
    return fmts


def _decode_out(values: np.ndarray, fmt: str, base: int) -> np.ndarray:
    """Output elements -> D digit + 1 (1..base), 0 where untouched, GARBAGE where no identity."""
    if fmt in ("s32", "s8"):
        v = values.view(np.int32 if values.dtype.itemsize == 4 else np.int8).astype(np.float64)
    elif fmt == "bf16":
        v = (values.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    else:
        v = values.view({"f16": np.float16, "f32": np.float32, "f64": np.float64}[fmt]).astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(v) & (v == np.round(v)) & (v >= 1) & (v <= base)
    return np.where(values.view(f"u{values.dtype.itemsize}") == 0, 0, np.where(ok, v, GARBAGE).astype(np.int64))


# ---------------------------------------------------------------------------------------------
# the passes

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
            arr = _array(v)
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


@lru_cache(maxsize=None)
def element_map(form, op: str) -> np.ndarray | None:
    """int64 (rows, cols): where each element of an operand sits among the warp's register
    elements, lane-major ((lane * registers + register) * per + part); None for 64-bit and
    sub-byte elements (``fragsim.unpack`` reads those)."""
    bits = form.fmt(op).storage_bits
    if bits not in (8, 16, 32):
        return None
    rows, cols = form.coords(op)                              # (lanes, registers, per)
    lanes, nregs, per = rows.shape
    out = np.empty(form.matrix_shape(op), np.int64)
    out[rows, cols] = np.arange(lanes * nregs * per).reshape(lanes, nregs, per)
    return out


def operand_elements(form, op: str, regs: np.ndarray) -> np.ndarray:
    """An mma operand's registers (units, lanes, registers) uint32 -> its elements' bits (units,
    rows, cols): ``fragsim.unpack`` by a table taken once per form."""
    m = element_map(form, op)
    if m is None:
        from fragsim.sim.registers import unpack
        return unpack(form, op, regs)
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32}[form.fmt(op).storage_bits]
    return np.ascontiguousarray(regs, np.uint32).view(dt).reshape(len(regs), -1)[:, m]


@lru_cache(maxsize=None)
def d_slots(form) -> np.ndarray:
    """int64 (threads, words, parts): the index ``row * N + col`` of the D element each part of each
    32-bit word of D holds -- its two halves for a 16-bit D, the whole word else (``fragsim.pack``'s
    map, once per form)."""
    from fragsim.sim.registers import pack

    M, N = form.matrix_shape("D")
    idx = np.arange(M * N).reshape(M, N)
    if form.fmt("D").storage_bits == 16:
        w = pack(form, "D", idx.astype(np.uint16)).astype(np.int64)
        return np.stack([w & 0xFFFF, w >> 16], -1)
    return pack(form, "D", idx.astype(np.uint32)).astype(np.int64)[..., None]


def pack_words(form, values: np.ndarray) -> np.ndarray:
    """D's element bits (units, M * N) -> its registers (units, threads, words)."""
    from fragsim.sim.registers import pack

    bits = form.fmt("D").storage_bits
    if bits == 64:
        M, N = form.matrix_shape("D")
        return pack(form, "D", values.reshape(-1, M, N))
    m = d_slots(form)
    v = values.astype(np.uint32)[:, m]                               # (units, threads, words, per)
    if bits == 16:
        return v[..., 0] | (v[..., 1] << np.uint32(16))
    return v[..., 0]


def one_value(v: np.ndarray, axis: int) -> np.ndarray:
    """The identity all elements along ``axis`` hold (none left out), 0 where they hold several."""
    hi = v.max(axis)
    lo = np.where(v > 0, v, np.iinfo(np.int64).max).min(axis)
    return np.where(lo == hi, hi, 0)


def agree(v: np.ndarray, axis: int) -> np.ndarray:
    """The value all elements along ``axis`` hold (elements without one left out), NONE where none
    holds one, GARBAGE where they differ, OTHER where one holds the other matrix's element."""
    hi = v.max(axis)                                 # codes are negative, no element 0
    lo = np.where(v > 0, v, np.iinfo(np.int64).max).min(axis)
    out = np.where(hi > 0, np.where(lo == hi, hi, GARBAGE), NONE)
    low = v.min(axis)
    if (low < 0).any():
        out = np.where(low < 0, np.where((v == OTHER).any(axis), OTHER, GARBAGE), out)
    return out


def combine(ds: list, base: int) -> np.ndarray:
    """Digit values (1..base, or codes) of several passes -> coordinates (codes where any is one)."""
    out = np.zeros(np.shape(ds[0]), np.int64)
    code = np.zeros(np.shape(ds[0]), np.int64)
    for i, d in enumerate(ds):
        d = np.asarray(d)
        out += np.maximum(d - 1, 0) * base ** i
        code = np.minimum(code, np.where(d < 1, np.where(d == 0, NONE, d), 0))
    return np.where(code < 0, code, out)


# ---------------------------------------------------------------------------------------------
# the observer

class Observer:
    """Watches one pass: tells the tracing each mma (``mma`` and ``wgmma`` events, fragsim/ptx/observe.py)."""

    def __init__(self, tracing: Tracing, p: int):
        self.t, self.p, self.n = tracing, p, 0

    def on_mma(self, s, idx, form, a, b, c, result) -> None:
        result["d"] = self.t.step(s, idx, form, operand_elements(form, "A", a), operand_elements(form, "B", b), c,
                                  self.p, self.n, WARP_LANES)
        self.n += 1

    def on_wgmma(self, s, idx, form, a, b, c, smem, trans_a, trans_b, result) -> None:
        try:
            A_, B_ = wgmma_operands(form, a, b, smem, trans_a, trans_b)
        except ValueError as e:
            raise ValueError(f"line {s.op.line}: {s.op.instr.text}: {e}") from None
        result["d"] = self.t.step(s, idx, form, A_, B_, c, self.p, self.n, THREADS)
        self.n += 1


def wgmma_operands(form, a, b, smem, trans_a, trans_b) -> tuple[np.ndarray, np.ndarray]:
    """A (g, M, K) and B (g, K, N) element words of a wgmma: A from its registers or, as B, read from
    shared memory through the descriptors by fragsim's operand model."""
    from fragsim.sim.registers import unpack
    from fragsim.sim.wgmma import gather_operand

    M, N, K = form.shape
    if a.dtype == np.uint32 and a.ndim == 3:
        A_ = unpack(form, "A", a)
    else:
        A_ = gather_operand(smem, a, rows=M, k=K, elem_bits=form.fmt("A").storage_bits,
                            major="MN" if trans_a else "K", name="a")
    B_ = gather_operand(smem, b, rows=N, k=K, elem_bits=form.fmt("B").storage_bits, major="MN" if trans_b else "K",
                        name="b")
    return A_, B_.swapaxes(-1, -2)


# ---------------------------------------------------------------------------------------------
# what the trace found

@dataclass(frozen=True)
class Element:
    """One element of an mma operand: at ``position`` (row, col) of the operand's fragment, held by
    ``lane``'s ``register`` (None for a wgmma operand read from shared memory); ``want``: the
    element of the matrix it must be, ``got``: the one it is (None: no element of the matrix).  For
    D, ``want`` is where the element belongs in the output and ``got`` where it was stored."""

    position: tuple
    lane: int | None
    register: str | None
    want: tuple | None
    got: tuple | None

    def __str__(self) -> str:
        who = f"lane {self.lane} {self.register}" if self.lane is not None else f"element {self.position}"
        return f"{who}: {_rc(self.got)}, wants {_rc(self.want)}"


def _rc(x) -> str:
    return "none" if x is None else f"({x[0]},{x[1]})"


@dataclass
class BadMma:
    """The first mma of the run fed wrongly, or whose D is summed or stored wrongly.

    ``kind``: "operand" (A's or B's registers hold the wrong elements), "coverage" (a D element is
    summed over some k twice or never) or "store" (the epilogue stores D elements elsewhere);
    ``operand`` "A", "B" or "D"; ``line``/``source``/``text``: the PTX line (and the CUDA line when
    the PTX has ``.loc``), ``cta``/``warp`` who ran it (a wgmma: the warpgroup's first warp);
    ``what``: the inconsistency in one sentence; ``elements``: the wrong ones (``Element``), their
    ``lanes`` and ``registers``; ``findings``: the diagnosis (``fragsim.check``'s findings: kind
    and text); ``verified``: whether re-running the kernel with the fix feeds this mma right (None:
    not verified, ``verification`` says why); ``report``: the checker's report on the instructions
    that fed the operand (its picture is the expected vs received fragment map)."""

    kind: str
    operand: str
    line: int
    source: str | None
    text: str
    cta: tuple
    warp: int
    what: str
    elements: list
    lanes: list
    registers: list
    findings: list = field(default_factory=list)
    verified: bool | None = None
    verification: str = ""
    report: Any = field(default=None, repr=False)
    tile: Any = field(default=None, repr=False)         # the tile of a check_wgmma report
    form: Any = field(default=None, repr=False)
    want: np.ndarray | None = field(default=None, repr=False)   # (rows, cols, 2) per fragment position
    got: np.ndarray | None = field(default=None, repr=False)
    picture: Any = field(default=None, repr=False)   # the report drawn: the checker's, else the mma's map

    @property
    def diagnosis(self) -> list[str]:
        return [f.text for f in self.findings]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "operand": self.operand, "line": self.line, "source": self.source,
                "text": self.text, "cta": list(self.cta), "warp": self.warp, "what": self.what,
                "lanes": self.lanes, "registers": self.registers,
                "elements": [{"position": list(e.position), "lane": e.lane, "register": e.register,
                              "want": None if e.want is None else list(e.want),
                              "got": None if e.got is None else list(e.got)} for e in self.elements],
                "diagnosis": [f.to_dict() for f in self.findings], "verified": self.verified,
                "verification": self.verification}

    def where(self) -> str:
        src = f" ({self.source})" if self.source else ""
        unit = f"warpgroup of warps {self.warp}-{self.warp + 3}" if self.text.startswith("wgmma") else f"warp {self.warp}"
        return f"line {self.line}{src}: {self.text}\n  CTA ({self.cta[0]},{self.cta[1]},{self.cta[2]}), {unit}"

    def lines(self, shown: int = 8) -> list[str]:
        from fragsim.ranges import format_ranges

        out = [self.where(), f"  {self.what}"]
        if self.lanes:
            out.append(f"  lanes {format_ranges(self.lanes, sep=', ')}; registers {', '.join(self.registers)}")
        if self.elements:
            head = "stored at, belongs at" if self.operand == "D" else "received, expected"
            out.append(f"  {head} (the first {min(shown, len(self.elements))} of {len(self.elements)}):")
            out += [f"    {e}" for e in self.elements[:shown]]
        if self.findings:
            out.append("diagnosis:")
            out += [f"  - {f.text}" for f in self.findings]
        if self.verification:
            out.append(("verified: " if self.verified else "not verified: ") + self.verification)
        return out


@dataclass
class Trace:
    """The result of ``trace_fragments``: ``ok`` when every mma of the run is fed the right
    elements, sums each D element over every k once and its D lands where it belongs; ``first``
    the first one that does not (``BadMma``); ``counts`` how many mma executions (one warp or
    warpgroup each) were wrong in each way; ``untraced`` what could not be followed."""

    kernel: str
    grid: tuple
    block: tuple
    ctas: int
    passes: int
    mmas: int
    ok: bool
    first: BadMma | None
    counts: dict
    untraced: list
    seconds: float
    stored: int = 0

    def __bool__(self) -> bool:
        return self.ok

    def verdict(self) -> str:
        if self.ok:
            return (f"OK: {self.mmas:,} mma executions fed the right elements, each D element summed over every k "
                    f"once" + (f", {self.stored:,} D elements stored where they belong" if self.stored else ""))
        wrong = ", ".join(f"{n:,} {k}" for k, n in self.counts.items() if n)
        return f"WRONG: {wrong}"

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "grid": list(self.grid), "block": list(self.block), "ctas": self.ctas,
                "passes": self.passes, "mmas": self.mmas, "ok": self.ok, "counts": self.counts,
                "untraced": self.untraced, "stored": self.stored, "seconds": round(self.seconds, 3),
                "first": None if self.first is None else self.first.to_dict()}

    def __str__(self) -> str:
        out = [f"trace of {self.kernel}: grid {self.grid}, block {self.block}, {self.ctas} CTA(s), "
               f"{self.passes} passes", self.verdict()]
        out += [f"not traced: {u}" for u in self.untraced]
        if self.first is not None:
            out.append("first inconsistent mma:")
            out += self.first.lines()
        return "\n".join(out)

    def _repr_png_(self):    # Jupyter: expected vs received fragment map of the first inconsistent mma
        from fragsim.check.report import CheckReport

        if self.first is None or not isinstance(self.first.picture, CheckReport):
            return None
        from fragsim import display
        return display.png(self.first.picture)


def positions(form, operand: str, threads: int):
    """(lane, register, element) of each position (row, col) of the operand's fragment: int arrays
    of the matrix's shape (-1 where no register holds it), from the form's fragment map."""
    rows, cols = form.coords(operand)                        # (threads, nregs, epr)
    shape = form.matrix_shape(operand)
    lane, reg, half = (np.full(shape, -1, np.int64) for _ in range(3))
    t, r, h = np.meshgrid(np.arange(rows.shape[0]), np.arange(rows.shape[1]), np.arange(rows.shape[2]),
                          indexing="ij")
    lane[rows, cols], reg[rows, cols], half[rows, cols] = t, r, h
    return lane, reg, half


def natural(v: np.ndarray) -> int | None:
    """v0 when the valid entries of ``v`` (1-D) are v0 + their index, else None."""
    ok = v >= 0
    if not ok.any():
        return None
    d = (v - np.arange(len(v)))[ok]
    return int(d[0]) if (d == d[0]).all() else None


def repeated(v: np.ndarray, axis: int) -> np.ndarray:
    """Whether some valid value occurs twice along ``axis``."""
    s = np.sort(np.where(v >= 0, v, -1), axis)
    a, b = np.take(s, np.arange(s.shape[axis] - 1), axis), np.take(s, np.arange(1, s.shape[axis]), axis)
    return ((a == b) & (a >= 0)).any(axis)


@dataclass
class Suspect:
    """A hypothesis about the first inconsistent mma: ``operand`` should hold ``want`` and holds
    ``got`` (int64 (rows, cols, 2): the matrix element at each position of the operand's fragment,
    -1 where none); ``why``: what makes it the suspect."""

    operand: str
    want: np.ndarray
    got: np.ndarray
    why: str


class Analysis:
    """The checks on the combined identities of every mma of the run (module docstring)."""

    def __init__(self, t: Tracing, outputs: list, lines: list, module):
        self.t, self.lines, self.module = t, lines, module
        self.untraced: list[str] = []
        self.counts = {"mma executions fed wrong elements": 0, "D elements not summed over every k once": 0,
                       "D elements not stored where they belong": 0}
        keys = list(self.counts)
        self.first_local = self.summarize()
        self.counts[keys[0]] = self.n_local
        self.coverage()
        self.counts[keys[1]] = int(self.bad_cov.sum())
        self.stored = self.stores(outputs)
        self.counts[keys[2]] = int(self.misplaced.sum() + self.lost.sum())

    # -- per mma --------------------------------------------------------------------------------

    def summarize(self) -> tuple[int, int] | None:
        """``sums``: per event the rows, columns and k (A's, B's) its units' fragments hold, combined
        over the passes, all mma's of one form at once; the first unit fed wrongly (event, unit)."""
        t = self.t
        self.sums: list = [None] * len(t.events)
        groups: dict = {}
        for e, ev in enumerate(t.events):
            groups.setdefault((ev.form.name, ev.threads), []).append(e)
        first, n = None, 0
        for es in groups.values():
            cut = np.cumsum([0] + [len(t.events[e].first) for e in es])
            stacked = []
            for key in ("rows", "cols", "ka", "kb"):
                ps = t.plan.rc() if key in ("rows", "cols") else t.plan.k()
                code = t.ca if key in ("rows", "ka") else t.cb
                stacked.append(combine([np.concatenate([t.events[e].dig[key, p] for e in es]) for p in ps], code.base))
            bad = local_bad(*stacked)
            n += int(bad.sum())
            for i, e in enumerate(es):
                sl = slice(cut[i], cut[i + 1])
                self.sums[e] = tuple(x[sl] for x in stacked)
                if bad[sl].any() and (first is None or e < first[0]):
                    first = (e, int(np.flatnonzero(bad[sl])[0]))
        self.n_local = n
        return first

    # -- k coverage -----------------------------------------------------------------------------

    def hashes(self) -> np.ndarray:
        # a random 64-bit value per k: a D element's sum of them is its k's sum only for the right set
        return np.random.default_rng(0).integers(0, 1 << 63, self.t.K, dtype=np.int64).astype(np.uint64) * 2 + 1

    def contributions(self, e: int):
        """(flat D index (u, M, N), valid (u, M, N), k of each slot (u, K), -1 where not summed)."""
        rows, cols, ka, kb = self.sums[e]
        ok = (rows >= 0)[:, :, None] & (cols >= 0)[:, None, :]
        flat = np.maximum(rows, 0)[:, :, None] * self.t.N + np.maximum(cols, 0)[:, None, :]
        k = np.where((ka >= 0) & (ka == kb), ka, -1)
        return flat, ok, k

    def coverage(self) -> None:
        t = self.t
        H = self.hashes()
        n = t.M * t.N
        self.units = max((len(ev.first) for ev in t.events), default=1)
        flats, nks, hs, whos = [], [], [], []
        for e, ev in enumerate(t.events):
            flat, ok, k = self.contributions(e)
            nk = (k >= 0).sum(1)
            h = np.where(k >= 0, H[np.maximum(k, 0)], np.uint64(0)).sum(1, dtype=np.uint64)
            u = np.broadcast_to(np.arange(len(ev.first))[:, None, None], flat.shape)[ok]
            flats.append(flat[ok])
            nks.append(nk[u])
            hs.append(h[u])
            whos.append(e * self.units + u)
        flat_all = np.concatenate(flats) if flats else np.zeros(0, np.int64)
        count = np.bincount(flat_all, np.concatenate(nks) if nks else None, minlength=n).astype(np.int64)
        hsum = np.zeros(n, np.uint64)
        if flats:
            np.add.at(hsum, flat_all, np.concatenate(hs))
        self.last = np.full(n, -1, np.int64)          # event * units + unit of the last mma computing it
        if flats:
            np.maximum.at(self.last, flat_all, np.concatenate(whos))
        self.covered = count > 0
        self.bad_cov = self.covered & ((count != t.K) | (hsum != H.sum(dtype=np.uint64)))

    def first_coverage(self) -> dict | None:
        """The first mma that sums a k into a D element a second time, or the element missing k."""
        t = self.t
        F = np.flatnonzero(self.bad_cov)
        if not F.size:
            return None
        F = F[:max(1, COVERAGE_PAIRS // t.K)]
        index = np.full(t.M * t.N, -1, np.int64)
        index[F] = np.arange(F.size)
        who = np.full((F.size, t.K), -1, np.int64)
        for e in range(len(t.events)):
            flat, ok, k = self.contributions(e)
            f = np.where(ok, index[flat], -1)                         # (u, M, N)
            sel = (f[..., None] >= 0) & (k[:, None, None, :] >= 0)     # (u, M, N, K)
            if not sel.any():
                continue
            uu, ii, jj, kk = np.nonzero(sel)
            ff, kv = f[uu, ii, jj], k[uu, kk]
            prev = who[ff, kv]
            if (prev >= 0).any():
                j = int(np.flatnonzero(prev >= 0)[0])
                return {"event": e, "unit": int(uu[j]), "element": divmod(int(F[ff[j]]), t.N), "k": int(kv[j]),
                        "before": int(prev[j]) // self.units}
            who[ff, kv] = e * self.units + uu
        summed = np.flatnonzero(who[0] >= 0)
        last = int(who[0].max())
        return {"event": last // self.units, "unit": last % self.units, "element": divmod(int(F[0]), t.N),
                "missing": np.setdiff1d(np.arange(t.K), summed)}

    # -- where D lands --------------------------------------------------------------------------

    def stores(self, outputs: list) -> int:
        t = self.t
        n = t.M * t.N
        self.tag = np.full(n, NONE, np.int64)
        self.misplaced = np.zeros(n, bool)
        self.lost = np.zeros(n, bool)
        if not outputs:
            return 0
        best = None
        for fmt in out_formats(t.md.dtype):
            dec = [_decode_out(o.reshape(-1), fmt, t.plan.d_base) for o in outputs]
            g = sum(int((x == GARBAGE).sum()) for x in dec)
            if best is None or g < best[0]:
                best = (g, dec)
        assert best is not None
        tag = combine(best[1], t.plan.d_base)
        tag = np.where(tag >= n, GARBAGE, tag)
        garbage = tag == GARBAGE
        self.landed = np.full(n, -1, np.int64)        # where each D element was stored (one place)
        if garbage.any():
            # values changed on the way (a scale, a bias): the ones still integers would be read as wrong places
            self.untraced.append(f"D: {int(garbage.sum()):,} of the output's elements hold values that are no "
                                 "identity -- the epilogue changes the accumulators' values (alpha, beta, bias, "
                                 "activation) or keeps fewer bits than they need -- so where D is stored is not "
                                 "checked")
            return 0
        self.tag = tag
        pos = np.arange(n)
        self.misplaced = (tag >= 0) & (tag != pos)
        self.lost = self.covered & (tag == NONE)
        self.landed[tag[tag >= 0]] = pos[tag >= 0]
        return int((tag >= 0).sum())

    def first_store(self) -> tuple[int, int] | None:
        who = np.concatenate([self.last[self.tag[self.misplaced]], self.last[self.lost]])
        who = who[who >= 0]
        if not who.size:
            return None
        w = int(who.min())
        return w // self.units, w % self.units


def local_bad(rows, cols, ka, kb) -> np.ndarray:
    """Per unit: its A rows, B columns or k slots are not one element each, or A and B disagree."""
    return ((rows < NONE).any(1) | (cols < NONE).any(1) | repeated(rows, 1) | repeated(cols, 1)
            | (ka < NONE).any(1) | (kb < NONE).any(1) | ((ka >= 0) & (kb >= 0) & (ka != kb)).any(1)
            | repeated(ka, 1) | repeated(kb, 1))


# ---------------------------------------------------------------------------------------------
# the suspects of the first inconsistent mma

def _runs(v) -> str:
    """A sequence as its runs of consecutive values: [8..15, 0..7] -> "8..15, 0..7"."""
    v = [int(x) for x in v]
    out, i = [], 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[j + 1] == v[j] + 1 and v[i] >= 0:
            j += 1
        out.append("none" if v[i] < 0 else f"{v[i]}..{v[j]}" if j > i else str(v[i]))
        i = j + 1
    return ", ".join(out)


def _span(v) -> str:
    v = np.unique(np.asarray(v)[np.asarray(v) >= 0])
    if not v.size:
        return "none"
    if v.size == v[-1] - v[0] + 1:
        return f"{v[0]}..{v[-1]}" if v.size > 1 else str(v[0])
    return ", ".join(map(str, v[:6])) + (" ..." if v.size > 6 else "")


def origin(v: np.ndarray, index: np.ndarray, step: int) -> int | None:
    """The origin o that best explains elements ``v`` as o + their ``index`` in the fragment: of the
    origins some element gives, the one explaining most elements, aligned to ``step`` (the
    fragment's size there, as kernels tile) if one is; None when no element is valid."""
    ok = v >= 0
    if not ok.any():
        return None
    vals, counts = np.unique((v - index)[ok], return_counts=True)
    aligned = vals % step == 0
    if aligned.any():
        vals, counts = vals[aligned], counts[aligned]
    return int(vals[np.argmax(counts)])


def chain_k0s(t: Tracing, an: Analysis, e: int, u: int) -> set:
    """The k blocks (first k) the earlier mma's of this warp into the same accumulators summed."""
    ev = t.events[e]
    mine = operand_names(ev, "D")
    used = set()
    for e2 in range(e):
        ev2 = t.events[e2]
        if (operand_names(ev2, "D") != mine) if mine is not None else ev2.line != ev.line:
            continue
        for u2 in range(len(ev2.first)):
            if tuple(ev2.ctas[u2]) == tuple(ev.ctas[u]) and ev2.warps[u2] == ev.warps[u]:
                k0 = natural(an.sums[e2][2][u2])
                if k0 is not None:
                    used.add(k0)
    return used


def operand_suspects(t: Tracing, an: Analysis, e: int, u: int) -> list[Suspect]:
    """A or B (or both, in the order worth trying): what it holds, what it should hold, and why."""
    ev = t.events[e]
    M, N, K = ev.form.shape
    rows, cols, ka, kb = (x[u] for x in an.sums[e])
    ra, kA = (x[u] for x in t.slot_coords(ev, "A"))              # (M, K)
    kB, cB = (x[u] for x in t.slot_coords(ev, "B"))              # (K, N)
    r0 = origin(ra, np.broadcast_to(np.arange(M)[:, None], ra.shape), M)
    c0 = origin(cB, np.broadcast_to(np.arange(N)[None, :], cB.shape), N)
    kA0, kB0 = natural(ka), natural(kb)
    order = []
    if kA0 is not None and kB0 is not None and kA0 != kB0:
        # two k blocks: suspect the operand that repeats a block this warp summed into these accumulators
        used = chain_k0s(t, an, e, u)
        first = "B" if kB0 in used and kA0 not in used else "A"
        order = [first, "B" if first == "A" else "A"]
        k_for: dict = {"A": kB0, "B": kA0}
    else:
        k0 = kB0 if kB0 is not None else kA0
        if k0 is None:
            k0 = origin(np.concatenate([kA.ravel(), kB.ravel()]),
                        np.concatenate([np.broadcast_to(np.arange(K)[None, :], kA.shape).ravel(),
                                        np.broadcast_to(np.arange(K)[:, None], kB.shape).ravel()]), K)
        k_for = {"A": k0, "B": k0}
    got = {"A": np.stack([ra, kA], -1), "B": np.stack([kB, cB], -1)}
    want: dict = {}
    if r0 is not None and k_for["A"] is not None:
        r, k = np.meshgrid(r0 + np.arange(M), k_for["A"] + np.arange(K), indexing="ij")
        out = (r < 0) | (r >= t.M) | (k < 0) | (k >= t.K)
        want["A"] = np.where(out[..., None], -1, np.stack([r, k], -1))
    if c0 is not None and k_for["B"] is not None:
        k, c = np.meshgrid(k_for["B"] + np.arange(K), c0 + np.arange(N), indexing="ij")
        out = (c < 0) | (c >= t.N) | (k < 0) | (k >= t.K)
        want["B"] = np.where(out[..., None], -1, np.stack([k, c], -1))
    for op in ("A", "B"):
        if op not in order:
            order.append(op)
    out_s = []
    for op in order:
        if op not in want:
            continue
        g = np.where(got[op] < 0, -1, got[op])
        if (g != want[op]).any():
            out_s.append(Suspect(op, want[op], g, _why(op, rows, cols, ka, kb, got[op])))
    return out_s


def _why(op: str, rows, cols, ka, kb, got) -> str:
    """What is wrong with operand ``op`` of one mma, in a sentence."""
    if op == "A":
        lines, line_name, mine, theirs, other = rows, "row", ka, kb, "B"
    else:
        lines, line_name, mine, theirs, other = cols, "column", kb, ka, "A"
    parts = []
    if (got == OTHER).any():
        parts.append(f"{op} holds elements of {other}")
    if (got == GARBAGE).any():
        parts.append(f"{op} holds bits that are no element of {op} (not loaded from it, or changed on the way)")
    if (lines == GARBAGE).any():
        i = int(np.flatnonzero(lines == GARBAGE)[0])
        parts.append(f"{line_name} {i} of the {op} fragment holds elements of several {line_name}s of {op}")
    elif repeated(lines[None], 1)[0]:
        v = lines[lines >= 0]
        dup = int(v[np.flatnonzero(np.bincount(v) > 1)[0]]) if v.size else -1
        where = np.flatnonzero(lines == dup)
        parts.append(f"the {op} fragment holds {line_name} {dup} of {op} twice ({line_name}s "
                     f"{', '.join(map(str, where))} of the fragment)")
    if (mine == GARBAGE).any():
        parts.append(f"a k slot of {op} holds elements of several k")
    elif ((mine >= 0) & (theirs >= 0) & (mine != theirs)).any():
        parts.append(f"{op}'s k slots hold k {_runs(mine)} where {other}'s hold k {_runs(theirs)}")
    elif repeated(mine[None], 1)[0]:
        parts.append(f"{op} holds some k twice")
    return "; ".join(parts) or f"{op} holds other elements than its fragment's"


def store_suspects(t: Tracing, an: Analysis, e: int, u: int) -> tuple[list[Suspect], np.ndarray, np.ndarray]:
    """For an mma whose D lands elsewhere: (the operands that would explain it -- their rows or
    columns are not the ones the stores give them --, D's want and got (M, N, 2))."""
    ev = t.events[e]
    M, N, K = ev.form.shape
    rows, cols, ka, kb = (x[u] for x in an.sums[e])
    ok = (rows >= 0)[:, None] & (cols >= 0)[None, :]
    tag = np.maximum(rows, 0)[:, None] * t.N + np.maximum(cols, 0)[None, :]
    where = np.where(ok, an.landed[tag], -1)
    got = np.where((where >= 0)[..., None], np.stack(np.divmod(np.maximum(where, 0), t.N), -1), -1)
    want = np.where(ok[..., None], np.stack([np.broadcast_to(rows[:, None], (M, N)),
                                             np.broadcast_to(cols[None, :], (M, N))], -1), -1)
    out = []
    lr, lc = agree(np.where(where >= 0, got[..., 0] + 1, 0), 1) - 1, agree(np.where(where >= 0, got[..., 1] + 1, 0), 0) - 1
    if natural(lr) is not None and natural(lc) is not None:
        ra, kA = (x[u] for x in t.slot_coords(ev, "A"))
        kB, cB = (x[u] for x in t.slot_coords(ev, "B"))
        if ((lr >= 0) & (lr != rows)).any():
            w = np.stack([np.broadcast_to(lr[:, None], (M, K)), kA], -1)
            out.append(Suspect("A", np.where((lr < 0)[:, None, None], -1, w), np.stack([ra, kA], -1),
                               f"its D is stored at rows {_span(lr)}, so it must get A's rows {_span(lr)}; A holds rows "
                               f"{_span(rows)}"))
        if ((lc >= 0) & (lc != cols)).any():
            w = np.stack([kB, np.broadcast_to(lc[None, :], (K, N))], -1)
            out.append(Suspect("B", np.where((lc < 0)[None, :, None], -1, w), np.stack([kB, cB], -1),
                               f"its D is stored at columns {_span(lc)}, so it must get B's columns {_span(lc)}; B "
                               f"holds columns {_span(cols)}"))
    return out, want, got


# ---------------------------------------------------------------------------------------------
# the report of one mma

def operand_names(ev: Event, operand: str) -> list | None:
    """The registers the PTX line names for ``operand`` (None for a descriptor or an odd width)."""
    ops = ev.op.instr.operands
    k = {"D": 0, "A": 1, "B": 2}[operand]
    x = ops[k] if k < len(ops) else None
    if not isinstance(x, A.Vec):
        return None
    names = [getattr(i, "name", str(i)) for i in x.items]
    return names if len(names) == ev.form.nregs(operand) else None


def source_of(module, ev: Event) -> str | None:
    loc = ev.op.instr.loc
    if loc is None:
        return None
    path = module.files.get(loc.file)
    return f"{path}:{loc.line}" if path else f"file {loc.file} line {loc.line}"


def elements(ev: Event, operand: str, want: np.ndarray, got: np.ndarray) -> tuple[list, list, list]:
    """(the wrong elements in lane and register order, their lanes, their registers)."""
    in_smem = ev.threads != WARP_LANES and (operand == "B" or (operand == "A" and not isinstance(
        ev.op.instr.operands[1], A.Vec)))
    bad = (want != got).any(-1)
    if in_smem:
        return [Element((int(i), int(j)), None, None, _pair(want[i, j]), _pair(got[i, j]))
                for i, j in zip(*np.nonzero(bad))], [], []
    op = "C" if operand == "D" else operand
    lane, reg, half = positions(ev.form, op, ev.threads)
    names = operand_names(ev, operand)
    epr = ev.form.coords(op)[0].shape[2]
    keys = sorted((int(lane[i, j]), int(reg[i, j]), int(half[i, j]), int(i), int(j)) for i, j in zip(*np.nonzero(bad)))
    out = []
    for ln, r, h, i, j in keys:
        who = ev.form.element_name(operand, r, h) + (f" in {names[r]}" if names else "")
        out.append(Element((i, j), ln, who, _pair(want[i, j]), _pair(got[i, j])))
    regs = []
    for r in sorted({k[1] for k in keys}):
        els = ", ".join(ev.form.element_name(operand, r, h) for h in range(epr))
        regs.append(f"{names[r]} ({els})" if names else f"register {r} ({els})")
    return out, sorted({k[0] for k in keys}), regs


def _pair(x) -> tuple | None:
    return None if x[0] < 0 or x[1] < 0 else (int(x[0]), int(x[1]))
# ---------------------------------------------------------------------------------------------
# the trace

@dataclass
class Launch:
    """A kernel launch to run again: each pass, and the diagnosis's re-runs of one CTA."""

    module: Any
    kernel: str
    grid: Any
    block: Any
    dynamic_smem: int
    arch: str
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
        arr = _array(args[md.arg]).reshape(-1)[:md.rows * md.cols].reshape(md.stored)
        return np.ascontiguousarray(arr.T if md.transposed else arr)


def accumulators(entry: A.Function) -> list[str]:
    """The D formats of the entry's mma.sync and wgmma instructions."""
    from fragsim.instructions import lookup
    from fragsim.instructions.wgmma import lookup_wgmma

    out = set()
    for ins in entry.instructions:
        try:
            if ins.opcode == "mma":
                out.add(lookup(".".join(m for m in ins.mods if m not in ("sync", "aligned"))).fmt("D").name)
            elif ins.opcode == "wgmma" and ins.mods[:1] == ("mma_async",):
                out.add(lookup_wgmma(".".join(ins.mods[3:])).fmt("D").name)
        except ValueError:
            continue               # a form the run refuses, with its own message
    return sorted(out)


def ptx_text(ptx) -> str | None:
    import os

    if isinstance(ptx, os.PathLike) or (isinstance(ptx, str) and "\n" not in ptx and ptx.endswith(".ptx")):
        try:
            with open(os.fspath(ptx)) as f:
                return f.read()
        except OSError as e:
            raise ValueError(f"ptx: cannot read {os.fspath(ptx)}: {e.strerror or e}") from None
    return ptx if isinstance(ptx, str) else None


def bad_mma(t: Tracing, an: Analysis, e: int, u: int, kind: str, operand: str, want, got, what: str) -> BadMma:
    ev = t.events[e]
    els, lanes, regs = elements(ev, operand, want, got) if want is not None else ([], [], [])
    text = an.lines[ev.line - 1].strip().rstrip(";") if 0 < ev.line <= len(an.lines) else ev.op.instr.text
    return BadMma(kind, operand, ev.line, source_of(an.module, ev), " ".join(text.split()), tuple(ev.ctas[u]),
                  int(ev.warps[u]), what, els, lanes, regs, form=ev.form, want=want, got=got)


def first_bad(t: Tracing, an: Analysis):
    """(the first inconsistent mma, its suspects, its event and unit), or None."""
    if an.first_local is not None:
        e, u = an.first_local
        sus = operand_suspects(t, an, e, u)
        if sus:
            s0 = sus[0]
            return bad_mma(t, an, e, u, "operand", s0.operand, s0.want, s0.got, f"operand {s0.operand}: {s0.why}"), \
                sus, e, u
        rows, cols, ka, kb = (x[u] for x in an.sums[e])
        return bad_mma(t, an, e, u, "operand", "A", None, None, _why("A", rows, cols, ka, kb, ka)), [], e, u
    store = an.first_store()
    if store is not None:
        e, u = store
        sus, want, got = store_suspects(t, an, e, u)
        n = int((want != got).any(-1).sum())
        lost = int(((got < 0).all(-1) & (want >= 0).all(-1)).sum())
        what = (f"D: {n} of its {want.shape[0] * want.shape[1]} elements are not stored where they belong"
                + (f" ({lost} nowhere)" if lost else ""))
        return bad_mma(t, an, e, u, "store", "D", want, got, what), sus, e, u
    cov = an.first_coverage()
    if cov is not None:
        e, u = cov["event"], cov["unit"]
        r, c = cov["element"]
        if "k" in cov:
            before = t.events[cov["before"]]
            what = (f"D({r},{c}): this mma sums k {cov['k']} into it a second time (the first time at line "
                    f"{before.line}): each k of A must be summed once")
        else:
            what = (f"D({r},{c}) is summed over {t.K - len(cov['missing'])} of K = {t.K} k: k {_span(cov['missing'])} "
                    "never (this is the last mma that sums into it)")
        return bad_mma(t, an, e, u, "coverage", "D", None, None, what), [], e, u
    return None


# ---------------------------------------------------------------------------------------------
# the picture

def fragment_report(bad: BadMma, ev: Event):
    """The mma's expected vs received fragment map as a ``fragsim.check`` report (its picture is the
    checker's), for an operand held in registers or for D; None for a wgmma operand in shared memory."""
    from fragsim.check.fragments import Fragments
    from fragsim.check.report import CheckReport, Mismatch
    from fragsim.check.runs import Evidence
    from fragsim.layout.tile import MAX_TILE_BYTES, Tile

    if bad.want is None or (ev.threads != WARP_LANES and bad.operand == "B") or (
            ev.threads != WARP_LANES and bad.operand == "A" and not isinstance(ev.op.instr.operands[1], A.Vec)):
        return None
    op = "C" if bad.operand == "D" else bad.operand
    form = ev.form
    want, got = np.asarray(bad.want), np.asarray(bad.got)
    ok_w, ok_g = np.asarray((want >= 0).all(-1)), np.asarray((got >= 0).all(-1))
    pts = np.concatenate([want[ok_w], got[ok_g]])
    if not pts.size:
        return None
    fmt = form.fmt(op)
    eb = max(1, fmt.storage_bits // 8)
    hi = pts.max(0) + 1
    org = (0, 0) if int(hi[0]) * int(hi[1]) * eb <= MAX_TILE_BYTES else tuple(int(x) for x in pts.min(0))
    rows, cols = int(hi[0]) - org[0], int(hi[1]) - org[1]
    dtype = fmt.name if fmt.name in ("f16", "bf16", "f32", "tf32", "e4m3", "e5m2", "s8", "u8", "f64", "s32") else "b16"
    try:
        tile = Tile(rows, cols, {"tf32": "f32"}.get(dtype, dtype), "row", space="global")
    except ValueError:
        return None
    index = lambda x, ok: np.where(ok, (x[..., 0] - org[0]) * cols + (x[..., 1] - org[1]), -1)  # noqa: E731
    wi, gi = index(want, ok_w), index(got, ok_g)
    lane, reg, half = positions(form, op, ev.threads)
    nregs, epr = form.coords(op)[0].shape[1:]
    fw = np.full((ev.threads, nregs, epr), -1, np.int64)
    fg = np.full((ev.threads, nregs, epr), -1, np.int64)
    fw[lane, reg, half], fg[lane, reg, half] = wi, gi
    o0 = want[0, 0] if ok_w[0, 0] else (want[ok_w].min(0) if ok_w.any() else np.array(org))
    origin = (int(o0[0]) - org[0], int(o0[1]) - org[1])
    frags = Fragments(form, op, [origin], np.stack([np.zeros(nregs, np.int64), np.arange(nregs)], 1), fw, cols)
    r_, l_, h_ = (x.ravel() for x in np.meshgrid(np.arange(nregs), np.arange(ev.threads), np.arange(epr),
                                                   indexing="ij"))
    keep = fw[l_, r_, h_] >= 0
    r_, l_, h_ = r_[keep], l_[keep], h_[keep]
    sw, sg = fw[l_, r_, h_], fg[l_, r_, h_]
    n = len(sw)
    kind = "store" if bad.operand == "D" else "load"
    evidence = Evidence(kind, tile, [], sw, sg, np.full(n, -1, np.int64), l_, np.zeros(n, np.int64), r_, h_, [], [],
                        frags)
    mism = [Mismatch(kind, int(l_[k]), 0, divmod(int(sw[k]), cols), divmod(int(sg[k]), cols) if sg[k] >= 0 else None,
                     int(r_[k]), int(h_[k]), epr, 0) for k in np.flatnonzero(sw != sg)]
    name = {"A": "A", "B": "B", "C": "D"}[op]
    what = ("where its D elements are stored in the output" if kind == "store" else f"the elements of {name} it holds")
    title = (f"line {bad.line}: {bad.text.split(' ')[0]}, CTA ({bad.cta[0]},{bad.cta[1]},{bad.cta[2]}) warp "
             f"{bad.warp}: {what} (tile = {name}" + (f" from ({org[0]}, {org[1]})" if org != (0, 0) else "") + ")")
    return CheckReport(kind, title, False, n, mism, list(bad.findings), [], [], [], evidence=evidence)
