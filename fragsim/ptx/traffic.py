"""Shared-memory traffic of a run, instruction by instruction, as Nsight Compute counts it.

    run = fragsim.run_kernel("gemm.ptx", grid=(2, 2), block=128, args=[...], report=True)
    run.shared             # SharedReport: one SharedRow per instruction that touched shared memory
    run.totals             # {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": ..., ...}
    print(run.shared)      # the source lines, worst first

``report=True`` attaches a ``Traffic`` observer (``fragsim.ptx.observe``) to the run.  Every warp's
execution of a shared-memory instruction goes through fragsim's bank model (``fragsim.banks``, equal
to Nsight Compute's counters for ld/st.shared of every width, ldmatrix, stmatrix and cp.async), all
warps of a step in one call: a row sums, over the run, its warp-level executions, wavefronts, ideal
wavefronts and bank conflicts (wavefronts - ideal, which Nsight Compute's source page calls excessive
wavefronts).  A warp executes an instruction once per step that reaches it with an active lane:
divergent paths and loops with differing trip counts count each time, as the hardware issues them.

``totals`` names the figures as Nsight Compute's metrics, including what the hardware counts that
the PTX does not show: the never-executed ``LDS`` ptxas puts into every kernel that uses cp.async
(``SharedOp.phantom_lds`` per warp of the launch in ``smsp__inst_executed_op_shared_ld``) and the
"misc" wavefronts (``MISC_WAVEFRONTS``: per warp of the launch, per warp at a barrier, per
never-executed LDS), which the shared-memory total adds to the loads', stores' and copies'.
``cp.async.cg`` bypasses L1: its rows show 0 wavefronts, as the counters do.  What is not in the
model stays out of the totals: atom/red on shared memory (their executions are counted, their
wavefronts are not modelled) and wgmma's shared-memory operand reads (rows of their own, modelled as
ldmatrix phases over the core matrices the descriptors name; which counter, if any, counts them is
``WGMMA_METRICS``, filled in from the H100 measurement of gpu_check/ptx_ncu.py).

Source lines come from the PTX's ``.loc``/``.file`` directives (``nvcc -lineinfo``); without them
the report is by PTX line.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from fragsim.facts.hardware import MATRIX_ROW_BYTES, MATRIX_ROWS, WARP_LANES, WARPGROUP_WARPS
from fragsim.instructions.shared_op import NCU_METRICS, SharedOp
from fragsim.instructions.shared_ops import SHARED_OPS, cp_async_op, matrix_op, plain_op

from . import ast as A

#: Nsight Compute's counters (the instruction table's names, ``SharedOp.metrics``).
LD_WAVEFRONTS, LD_CONFLICTS = NCU_METRICS["ld"]
ST_WAVEFRONTS, ST_CONFLICTS = NCU_METRICS["st"]
LDGSTS_CONFLICTS = NCU_METRICS["ldgsts"][1]
#: executed warp instructions per kind ("ldsm", "stsm", "ld", "st", "ldgsts"), from the table
INST_METRICS = {op.kind: op.ncu_inst_metric for op in SHARED_OPS.values()}
#: atom/red on shared memory (ATOMS): executed warp instructions
ATOM_INST = "smsp__inst_executed_op_shared_atom.sum"
#: the shared-memory wavefronts of every op, and those of the "misc" op (no instruction of the PTX):
#: one per warp of the launch, one per warp per barrier it passes, one per warp per never-executed
#: LDS (docs/validation.md, "Odd counters": 1 in a one-warp probe, 4 with cp.async; 8 in a 4-warp
#: kernel with one barrier, 20 with cp.async)
SHARED_WAVEFRONTS = NCU_METRICS["ldgsts"][0]
MISC_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_misc.sum"
MISC_PER_WARP = 1
MISC_PER_BARRIER = 1
#: What Nsight Compute counts for wgmma's shared-memory operand reads: metric -> the wgmma rows'
#: figure it equals ("wavefronts", "ideal" or "executions").  Unknown until the H100 run of
#: gpu_check/ptx_ncu.py is read: nothing claimed.
WGMMA_METRICS: dict[str, str] = {}

#: Address sets remembered per row with their figures (a loop's steps repeat a few).
MEMO = 16
#: Row kinds: Nsight Compute's op kinds of the table, and two of this report's own.
ATOM, WGMMA = "atom", "wgmma"
_COUNTER = {"ld": "ld", "ldsm": "ld", "st": "st", "stsm": "st", "ldgsts": "ldgsts"}
_FULL = np.uint32((1 << WARP_LANES) - 1)
_LANE_BITS = np.uint32(1) << np.arange(WARP_LANES, dtype=np.uint32)


@dataclass
class SharedRow:
    """One instruction's shared-memory traffic, summed over the run.

    ``line``: its PTX line; ``source``: ``file:line`` of the ``.loc`` in force (None without line
    info); ``instruction``: the PTX opcode as written; ``op``: the table entry the bank model used
    ("ldmatrix.x4", "ld.shared.v4.b32", "cp.async.ca.16"; "atom.shared", "wgmma" for the rows outside
    the table); ``kind``: Nsight Compute's op ("ldsm", "stsm", "ld", "st", "ldgsts", "atom", "wgmma");
    ``generic``: a generic-address ld/st that reached shared memory.  ``executions``: warp-level
    executions; ``wavefronts``/``ideal``/``conflicts`` (= wavefronts - ideal): Nsight Compute's
    figures.  ``exact`` is False where the bank model is an estimate (cp.async outside its measured
    domain); ``modelled`` False where wavefronts are not modelled (atom/red: 0 shown)."""

    line: int
    instruction: str
    op: str
    kind: str
    source: str | None = None
    generic: bool = False
    executions: int = 0
    wavefronts: int = 0
    ideal: int = 0
    exact: bool = True
    modelled: bool = True
    #: the execution with the most conflicts: (conflicts, addrs (32,), mask, src (32,) or None)
    worst: tuple | None = field(default=None, repr=False)
    entry: SharedOp | None = field(default=None, repr=False)

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    def worst_report(self):
        """The ``fragsim.bank_conflicts`` report of the execution with the most conflicts (None for
        rows outside the bank model)."""
        if self.worst is None or self.entry is None:
            return None
        from fragsim.banks import bank_conflicts
        _, addrs, mask, src = self.worst
        if self.entry.kind in ("ldsm", "stsm"):
            mask = None
        return bank_conflicts(self.entry, addrs, mask=mask, src=src)

    def to_dict(self) -> dict:
        return {"line": self.line, "source": self.source, "instruction": self.instruction, "op": self.op,
                "kind": self.kind, "generic": self.generic, "executions": self.executions,
                "wavefronts": self.wavefronts, "ideal": self.ideal, "conflicts": self.conflicts,
                "exact": self.exact, "modelled": self.modelled}


@dataclass
class SourceLine:
    """The rows of one source line (``where``: CUDA ``file:line`` with the file's name only, or "PTX line
    N" without line info; ``text``: the line as written, "" when the file cannot be read), summed."""

    where: str
    text: str
    rows: list[SharedRow]

    @property
    def executions(self) -> int:
        return sum(r.executions for r in self.rows)

    @property
    def wavefronts(self) -> int:
        return sum(r.wavefronts for r in self.rows)

    @property
    def ideal(self) -> int:
        return sum(r.ideal for r in self.rows)

    @property
    def excess(self) -> int:
        return self.wavefronts - self.ideal

    @property
    def worst(self) -> SharedRow | None:
        """The row whose worst execution has the most conflicts (None if none has any)."""
        ranked = [(r.worst[0], -i, r) for i, r in enumerate(self.rows) if r.worst is not None]
        conflicts, _, row = max(ranked, key=lambda x: x[:2], default=(0, 0, None))
        return row if conflicts > 0 else None


# --------------------------------------------------------------------------------------- the report

class SharedReport(Sequence):
    """``run.shared``: the rows (PTX order), the totals under Nsight Compute's names, and the views:
    ``lines()`` (by source line, worst first), ``text()``, ``html()``, Jupyter's ``_repr_html_``."""

    def __init__(self, kernel: str, rows: list[SharedRow], totals: dict[str, int], warps: int,
                 ptx_lines: list[str] | None, sources: dict[str, list[str] | None]):
        self.kernel = kernel
        self.rows = rows
        self.totals = totals
        self.warps = warps
        self._ptx = ptx_lines
        self._sources = sources

    def __getitem__(self, i):
        return self.rows[i]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[SharedRow]:
        return iter(self.rows)

    def __repr__(self) -> str:
        return f"<SharedReport {self.kernel}: {len(self.rows)} instructions, {self.wavefronts:,} wavefronts, " \
               f"{self.conflicts:,} conflicts>"

    def __str__(self) -> str:
        return self.text()

    @property
    def wavefronts(self) -> int:
        return sum(r.wavefronts for r in self.rows)

    @property
    def conflicts(self) -> int:
        return sum(r.conflicts for r in self.rows)

    def ptx_text(self, line: int) -> str:
        return self._ptx[line - 1].strip() if self._ptx and 0 < line <= len(self._ptx) else ""

    def source_text(self, where: str) -> str:
        path, _, num = where.rpartition(":")
        text = self._sources.get(path)
        n = int(num) if num.isdigit() else 0
        return text[n - 1].strip() if text and 0 < n <= len(text) else ""

    def lines(self) -> list[SourceLine]:
        """The rows grouped by source line (by PTX line where the PTX has no line info), worst first:
        most excess wavefronts, then most wavefronts."""
        groups: dict[str, list[SharedRow]] = {}
        for r in self.rows:
            groups.setdefault(r.source or f"PTX line {r.line}", []).append(r)
        out = [SourceLine(os.path.basename(w) if rows[0].source else w,
                          self.source_text(w) if rows[0].source else self.ptx_text(rows[0].line), rows)
               for w, rows in groups.items()]
        return sorted(out, key=lambda s: (-s.excess, -s.wavefronts, s.rows[0].line))

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "rows": [r.to_dict() for r in self.rows], "totals": dict(self.totals)}

    def text(self, top: int | None = None) -> str:
        """The source lines with their executions, wavefronts and excess wavefronts, worst first, then
        the totals (``top``: only that many lines)."""
        lines = self.lines()
        by = "CUDA source line" if any(r.source for r in self.rows) else "PTX line"
        out = [f"shared-memory traffic of {_short(self.kernel, NAME_CHARS)} ({self.warps} warp"
               f"{'s' if self.warps != 1 else ''}), by {by}, worst first:"]
        if not lines:
            out.append("  no instruction touched shared memory")
        else:
            cells = [(f"{s.excess:,}", f"{s.wavefronts:,}", f"{s.ideal:,}", f"{s.executions:,}", s.where,
                      _line_note(s), _short(s.text, TEXT_CHARS)) for s in lines[:top]]
            head = ("excess", "wavefronts", "ideal", "executions", "line", "", "source")
            w = [max(len(c[i]) for c in [head, *cells]) for i in range(6)]
            out.append("  " + "  ".join(h.rjust(w[i]) if i < 4 else h.ljust(w[i]) for i, h in enumerate(head[:6]))
                       + "  " + head[6])
            for c in cells:
                out.append(("  " + "  ".join(x.rjust(w[i]) if i < 4 else x.ljust(w[i]) for i, x in enumerate(c[:6]))
                            + "  " + c[6]).rstrip())
            if top is not None and len(lines) > top:
                out.append(f"  ... {len(lines) - top} more line(s)")
        out.append("Nsight Compute:")
        width = max((len(k) for k in self.totals), default=0)
        out += [f"  {k:<{width}}  {v:,}" for k, v in self.totals.items()]
        return "\n".join(out)

    def html(self, pictures: int = 10, page: bool = True) -> str:
        """The same as ``text()`` as an HTML page (``page`` False: a fragment, as Jupyter shows it):
        costly lines highlighted, and for the ``pictures`` worst lines with bank conflicts the bank
        phases of their worst execution (PNG, embedded)."""
        lines = self.lines()
        top = max((s.excess for s in lines), default=0)
        esc = html.escape
        rows = []
        drawn = 0
        for s in lines:
            share = s.excess / top if top else 0.0
            style = f' style="background: rgba(214, 39, 40, {0.1 + 0.5 * share:.2f})"' if s.excess else ""
            rows.append(f"<tr{style}><td>{s.excess:,}</td><td>{s.wavefronts:,}</td><td>{s.ideal:,}</td>"
                        f"<td>{s.executions:,}</td><td>{esc(s.where)}</td><td>{esc(_line_note(s))}</td>"
                        f"<td><code>{esc(s.text)}</code></td></tr>")
            worst = s.worst
            if worst is not None and drawn < pictures:
                drawn += 1
                rows.append(f'<tr class="detail"><td colspan="7">{_picture(worst)}</td></tr>')
        by = "CUDA source line" if any(r.source for r in self.rows) else "PTX line"
        body = (f"<h2>Shared-memory traffic of <code>{esc(self.kernel)}</code></h2>"
                f"<p>{self.warps} warp{'s' if self.warps != 1 else ''}; by {by}, worst first; excess = wavefronts "
                "- ideal (bank conflicts).</p>"
                "<table class=\"fs-lines\"><tr><th>excess</th><th>wavefronts</th><th>ideal</th><th>executions</th>"
                "<th>line</th><th></th><th>source</th></tr>" + "".join(rows) + "</table>"
                "<h3>Nsight Compute</h3><table class=\"fs-totals\">"
                + "".join(f"<tr><td><code>{esc(k)}</code></td><td>{v:,}</td></tr>" for k, v in self.totals.items())
                + "</table>")
        if not page:
            return f"<div>{_STYLE}{body}</div>"
        return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{esc(self.kernel)}: shared-memory "
                f"traffic</title>{_STYLE}</head><body>{body}</body></html>\n")

    def _repr_html_(self) -> str:
        return self.html(pictures=3, page=False)


_STYLE = ("<style>table.fs-lines, table.fs-totals {border-collapse: collapse; font-family: sans-serif;"
          " font-size: 13px} table.fs-lines td, table.fs-lines th, table.fs-totals td {padding: 2px 8px;"
          " border-bottom: 1px solid #ddd} table.fs-lines td:nth-child(-n+4) {text-align: right}"
          " tr.detail td {text-align: left !important; background: white} tr.detail pre {font-size: 11px}"
          " tr.detail img {max-width: 900px}</style>")


#: the longest kernel name and source text the text report shows whole (CuTe's mangled names run to
#: thousands of characters)
NAME_CHARS = 80
TEXT_CHARS = 100


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."


def _line_note(s: SourceLine) -> str:
    """What a line's figures are made of, where it matters."""
    notes = []
    if any(not r.exact for r in s.rows):
        notes.append("estimate")
    if any(not r.modelled for r in s.rows):
        notes.append("atom: not modelled")
    if any(r.kind == "ldgsts" and r.entry is not None and not r.entry.counted for r in s.rows):
        notes.append("cp.async.cg: not counted")
    if any(r.kind == WGMMA for r in s.rows):
        notes.append("wgmma: modelled")
    if any(r.generic for r in s.rows):
        notes.append("generic")
    return ", ".join(notes)


def _picture(row: SharedRow) -> str:
    """The worst execution of ``row``: its bank phases (through fragsim's one picture door) and text."""
    import base64

    from fragsim import display
    rep = row.worst_report()
    png = base64.b64encode(display.png(rep)).decode("ascii")
    return (f"<p>PTX line {row.line}, <code>{html.escape(row.instruction)}</code>: its worst warp execution "
            f"({rep.conflicts} conflicts)</p><img src=\"data:image/png;base64,{png}\"/>"
            f"<details><summary>phases</summary><pre>{html.escape(str(rep))}</pre></details>")


# ---------------------------------------------------------------------------------------- the observer

class Traffic:
    """The observer ``run_kernel(report=True)`` attaches: rows accumulate as the machine tells of
    shared-memory accesses (``on_shared``, ``on_cp_async``, ``on_wgmma``) and barriers
    (``on_bar_release``)."""

    #: mma.sync events are not needed: the machine may batch them
    batch_mma = True

    def __init__(self, module: A.Module):
        self.module = module
        self.rows: dict[int, SharedRow] = {}          # id(op) -> its row
        self.barrier_warps = 0                         # warps released from a barrier, summed
        self._memo: dict[int, dict[bytes, tuple]] = {}  # id(row) -> address sets -> their figures
        self._atoms: dict[int, tuple[int, np.ndarray]] = {}     # atom rows: (step, warps counted in it)

    # ---- rows

    def _row(self, s, width: int, write: bool) -> SharedRow:
        op = s.op
        row = self.rows.get(id(op))
        if row is None:
            row = self.rows[id(op)] = self._new_row(op.instr, op.extra.get("space", "shared"), width, write)
        return row

    def _new_row(self, ins: A.Instr, space, width: int, write: bool) -> SharedRow:
        entry: SharedOp | None = None
        if ins.opcode in ("ldmatrix", "stmatrix"):
            num = next(int(m[1]) for m in ins.mods if m in ("x1", "x2", "x4"))
            entry = matrix_op(ins.opcode, num, "trans" in ins.mods)
        elif ins.opcode == "cp":
            entry = cp_async_op("cg" if "cg" in ins.mods else "ca", width)
        elif ins.opcode in ("ld", "ldu", "st"):
            entry = plain_op("st" if ins.opcode == "st" else "ld", width)
        source = self._source(ins)
        if entry is None:      # atom / red
            return SharedRow(ins.line, ins.text, f"{ins.opcode}.shared", ATOM, source, space is None, modelled=False)
        return SharedRow(ins.line, ins.text, entry.name, entry.kind, source, space is None, entry=entry)

    def _source(self, ins: A.Instr) -> str | None:
        """``file:line`` of the ``.loc`` in force at ``ins`` (None without one)."""
        loc = ins.loc
        if loc is None or loc.file not in self.module.files:
            return None
        return f"{self.module.files[loc.file]}:{loc.line}"

    def _add(self, row: SharedRow, addrs: np.ndarray, masks: np.ndarray, src: np.ndarray | None = None,
             count: bool = True) -> None:
        """Warp executions ``addrs`` (w, 32) with lane masks (w,) through the bank model, into ``row``
        (``count``: as executions too).  A step that repeats one of the row's last ``MEMO`` address
        sets (a loop re-reading its tiles) takes that one's figures."""
        from fragsim.banks import bank_conflicts_batch
        e = row.entry
        assert e is not None
        if count:
            row.executions += len(addrs)
        if not e.counted:          # cp.async.cg: Nsight Compute shows nothing for it
            return
        memo = self._memo.setdefault(id(row), {})
        key = addrs.tobytes() + masks.tobytes() + (b"" if src is None else src.tobytes())
        got = memo.get(key)
        if got is None:
            r = bank_conflicts_batch(e, addrs, masks, src)
            k = int(np.argmax(r.conflicts))
            got = (int(r.wavefronts.sum()), int(r.ideal.sum()), bool(r.exact.all()),
                   (int(r.conflicts[k]), addrs[k].copy(), int(masks[k]), None if src is None else src[k].copy()))
            if len(memo) >= MEMO:
                del memo[next(iter(memo))]
            memo[key] = got
        wf, ideal, exact, worst = got
        row.wavefronts += wf
        row.ideal += ideal
        row.exact = row.exact and exact
        if row.worst is None or worst[0] > row.worst[0]:
            row.worst = worst

    # ---- events

    def on_shared(self, s, idx: np.ndarray, addrs: np.ndarray, width: int, write: bool) -> None:
        row = self._row(s, width, write)
        if row.kind == "ldgsts":   # the cp_async event, which knows the sources, counts it
            return
        if row.kind == ATOM:
            if not write:
                self._atom(s, row, idx)
            return
        if idx.ndim == 2:          # ldmatrix/stmatrix: (warps, address lanes), every lane executes
            w, al = addrs.shape
            a = np.zeros((w, WARP_LANES), np.int64)
            a[:, :al] = addrs
            self._add(row, a, np.full(w, _FULL))
            return
        a, m = by_warp(idx, addrs)
        self._add(row, a, m)

    def on_cp_async(self, s, idx: np.ndarray, dst: np.ndarray, src: np.ndarray, size: int) -> None:
        row = self._row(s, size, True)
        a, m, g = by_warp(idx, dst, src.astype(np.int64))
        self._add(row, a, m, g)

    def _atom(self, s, row: SharedRow, idx: np.ndarray) -> None:
        # an atom runs in rounds (threads sharing an address one after another): a warp counts once a step
        warps = np.unique(idx // WARP_LANES)
        step, seen = self._atoms.get(id(s.op), (-1, np.zeros(0, np.int64)))
        if step == s.steps:
            warps = np.setdiff1d(warps, seen)
            seen = np.union1d(seen, warps)
        else:
            seen = warps
        self._atoms[id(s.op)] = (s.steps, seen)
        row.executions += len(warps)

    def on_bar_release(self, s, idx: np.ndarray) -> None:
        self.barrier_warps += len(np.unique(idx // WARP_LANES))

    def on_wgmma(self, s, idx: np.ndarray, form, a: np.ndarray, b: np.ndarray, trans_a: bool, trans_b: bool,
                 **_) -> None:
        """``a``: A's descriptors (groups,) or its registers; ``b``: B's descriptors (groups,)."""
        row = self.rows.get(id(s.op))
        if row is None:
            ins = s.op.instr
            row = self.rows[id(s.op)] = SharedRow(ins.line, ins.text, WGMMA, WGMMA, self._source(ins),
                                                  entry=SHARED_OPS["ldmatrix.x4"])
        m, n, k = form.shape
        row.executions += len(b) * WARPGROUP_WARPS
        for descs, rows, operand, trans in ((a, m, "A", trans_a), (b, n, "B", trans_b)):
            if descs.ndim != 1:       # A from registers
                continue
            bits = form.fmt(operand).storage_bits
            for d in descs.tolist():
                units = wgmma_rows(int(d), rows, k, bits, "MN" if trans else "K")
                self._add(row, units, np.full(len(units), _FULL), count=False)

    # ---- the end

    def report(self, run, ptx_lines: list[str] | None = None, ptx_path: str | None = None) -> SharedReport:
        rows = sorted(self.rows.values(), key=lambda r: r.line)
        warps = len(run.ctas) * -(-(run.block[0] * run.block[1] * run.block[2]) // WARP_LANES)
        # ptxas's never-executed LDS: in every kernel with a cp.async copy, whatever their number
        copies = any(op.instr.opcode == "cp" and op.instr.mods[1:2] in (("ca",), ("cg",)) for op in run.program.ops)
        phantom = max(e.phantom_lds for e in SHARED_OPS.values() if e.kind == "ldgsts") if copies else 0
        sources = {}
        for r in rows:
            if r.source:
                path = r.source.rpartition(":")[0]
                if path not in sources:
                    sources[path] = read_source(path, ptx_path)
        return SharedReport(run.kernel, rows, totals(rows, warps, phantom, self.barrier_warps), warps, ptx_lines,
                            sources)


def by_warp(idx: np.ndarray, *values: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-thread ``values`` of threads ``idx`` (ascending global thread indices) as one row of 32
    lanes per warp: (each value (w, 32) int64, zero where a lane is absent, ..., masks (w,) uint32)
    -- masks after the first value."""
    n = len(idx)
    if n and n % WARP_LANES == 0 and idx[0] % WARP_LANES == 0 and idx[-1] - idx[0] == n - 1:
        w = n // WARP_LANES                   # whole warps: a reshape
        rows = [np.asarray(v, np.int64).reshape(w, WARP_LANES) for v in values]
        return (rows[0], np.full(w, _FULL), *rows[1:])
    warp = idx // WARP_LANES
    first = np.empty(n, bool)
    first[:1] = True
    first[1:] = warp[1:] != warp[:-1]
    row = np.cumsum(first) - 1
    lane = idx % WARP_LANES
    out = []
    for v in values:
        a = np.zeros((int(row[-1]) + 1 if n else 0, WARP_LANES), np.int64)
        a[row, lane] = v
        out.append(a)
    masks = np.bitwise_or.reduceat(_LANE_BITS[lane], np.flatnonzero(first)) if n else np.zeros(0, np.uint32)
    return (out[0], masks.astype(np.uint32), *out[1:])


def wgmma_rows(desc: int, rows: int, k: int, elem_bits: int, major: str) -> np.ndarray:
    """The 16-byte rows wgmma reads through descriptor ``desc`` (an operand of ``rows`` x ``k``
    elements), as ldmatrix.x4 lanes: (n, 32) byte addresses, each group of 8 lanes one core matrix
    (8 rows of 16 bytes, consecutive along M/N for K-major, along K for MN-major)."""
    from fragsim.layout.descriptor import operand_addresses
    addr = np.asarray(operand_addresses(desc, rows=rows, k=k, elem_bits=elem_bits, major=major), np.int64)
    per = MATRIX_ROW_BYTES * 8 // elem_bits              # elements in 16 bytes
    if major == "K":     # (rows, 16-byte chunks of K): core matrices are 8 consecutive rows
        units = addr[:, ::per]
        cores = units.reshape(rows // MATRIX_ROWS, MATRIX_ROWS, -1).transpose(0, 2, 1).reshape(-1, MATRIX_ROWS)
    else:                # (16-byte chunks of M/N, k): core matrices are 8 consecutive k
        units = addr[::per, :]
        cores = units.reshape(units.shape[0], k // MATRIX_ROWS, MATRIX_ROWS).reshape(-1, MATRIX_ROWS)
    per_row = WARP_LANES // MATRIX_ROWS
    pad = -len(cores) % per_row
    if pad:              # a last ldmatrix row of fewer matrices: repeat one (a repeated row is a broadcast)
        cores = np.concatenate([cores, np.repeat(cores[-1:], pad, axis=0)])
    return cores.reshape(-1, WARP_LANES)


def totals(rows: list[SharedRow], warps: int, phantom_lds: int, barrier_warps: int) -> dict[str, int]:
    """Nsight Compute's whole-kernel counters from the rows: wavefronts and bank conflicts of loads
    (ld.shared, ldmatrix), stores (st.shared, stmatrix) and cp.async, executed instructions per kind
    (``phantom_lds`` never-executed LDS per warp of the ``warps`` launched added to the loads), atoms'
    executions, the misc wavefronts (``barrier_warps``: warps released from barriers) and the shared
    total, and what ``WGMMA_METRICS`` says wgmma's reads count as."""
    def total(what: str, pick) -> int:
        return sum(getattr(r, what) for r in rows if pick(r))

    ld_wf = total("wavefronts", lambda r: _COUNTER.get(r.kind) == "ld")
    st_wf = total("wavefronts", lambda r: _COUNTER.get(r.kind) == "st")
    misc = warps * (MISC_PER_WARP + phantom_lds) + barrier_warps * MISC_PER_BARRIER
    out = {SHARED_WAVEFRONTS: ld_wf + st_wf + misc + total("wavefronts", lambda r: r.kind == "ldgsts"),
           LD_WAVEFRONTS: ld_wf, ST_WAVEFRONTS: st_wf, MISC_WAVEFRONTS: misc,
           LD_CONFLICTS: total("conflicts", lambda r: _COUNTER.get(r.kind) == "ld"),
           ST_CONFLICTS: total("conflicts", lambda r: _COUNTER.get(r.kind) == "st"),
           LDGSTS_CONFLICTS: total("conflicts", lambda r: r.kind == "ldgsts")}
    for kind, metric in INST_METRICS.items():
        out[metric] = sum(r.executions for r in rows if r.kind == kind and not r.generic)
    out[INST_METRICS["ld"]] += phantom_lds * warps
    out[ATOM_INST] = total("executions", lambda r: r.kind == ATOM and not r.generic)
    for metric, what in WGMMA_METRICS.items():
        out[metric] = out.get(metric, 0) + total(what, lambda r: r.kind == WGMMA)
    return out


def ptx_text_lines(ptx) -> tuple[list[str] | None, str | None]:
    """(the PTX's lines, its path) of what ``run_kernel`` was given: text, a path, or a parsed module
    (no text then)."""
    if isinstance(ptx, os.PathLike) or (isinstance(ptx, str) and "\n" not in ptx and ptx.endswith(".ptx")):
        path = os.fspath(ptx)
        with open(path) as f:
            return f.read().split("\n"), path
    if isinstance(ptx, str):
        return ptx.split("\n"), None
    return None, None


def read_source(path: str, ptx_path: str | None) -> list[str] | None:
    """The lines of a ``.file`` source: the path as written (absolute, or from the current folder),
    else beside the PTX file or in its ``src/`` folder; None if none is readable."""
    tries = [path]
    if ptx_path:
        here = os.path.dirname(os.path.abspath(ptx_path))
        tries += [os.path.join(here, os.path.basename(path)), os.path.join(here, "src", os.path.basename(path))]
    for p in tries:
        try:
            with open(p, errors="replace") as f:
                return f.read().split("\n")
        except OSError:
            continue
    return None
