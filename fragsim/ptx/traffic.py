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
divergent paths and loops with differing trip counts count each time, as the hardware issues them;
a load, store, ldmatrix, stmatrix or cp.async also when its guard turns every lane off
(``MISC_PER_IDLE``).  Atomics on shared memory by ``ATOM_LANES_PER_BANK`` (``ATOM_CAS_WAVEFRONTS``,
``POPC_INC_ADDEND``); wgmma's operand reads as
ldmatrix phases over the core matrices its descriptors name (``WGMMA_METRICS``).

``totals`` names the figures as Nsight Compute's metrics, including what the hardware counts that
the PTX does not show, each a named fact below: ptxas's never-executed ``LDS`` before each basic
block's first cp.async (``PHANTOM_LDS``), and the "misc" wavefronts (``MISC_WAVEFRONTS``: per warp,
per idle execution, per SHFL, per fence by the SASS it becomes (``fence_sass``), per warp that may
wait at a barrier or a CTA-scope MEMBAR -- that part at most, ``SharedReport.barrier_misc``),
which the shared-memory total adds to the loads', stores', copies', atomics' and wgmma reads'.
``cp.async.cg`` bypasses L1: its rows show 0 wavefronts, as the counters do.  gpu_check/ptx/traffic.py
measures all of it on the H100 (docs/traffic.md).

Source lines come from the PTX's ``.loc``/``.file`` directives (``nvcc -lineinfo``); without them
the report is by PTX line.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from fragsim.facts.hardware import (BANK_BYTES, MATRIX_ROW_BYTES, MATRIX_ROWS, NUM_BANKS, WARP_LANES,
                                    WARPGROUP_WARPS)
from fragsim.instructions.shared_op import NCU_METRICS, SharedOp
from fragsim.instructions.shared_ops import SHARED_OPS, cp_async_op, matrix_op, plain_op

from . import ast as A
from .observe import (BarRelease, BulkIssue, BulkRead, CpAsync, GuardOff, MbarrierArrive, Observer, SharedAccess,
                      Wgmma)
from .state import State
from .suggest import Recorded, Touch

#: Nsight Compute's counters (the instruction table's names, ``SharedOp.metrics``).
LD_WAVEFRONTS, LD_CONFLICTS = NCU_METRICS["ld"]
ST_WAVEFRONTS, ST_CONFLICTS = NCU_METRICS["st"]
LDGSTS_CONFLICTS = NCU_METRICS["ldgsts"][1]
#: executed warp instructions per kind ("ldsm", "stsm", "ld", "st", "ldgsts"), from the table
INST_METRICS = {op.kind: op.ncu_inst_metric for op in SHARED_OPS.values()}
#: atom/red on shared memory (ATOMS): executed warp instructions, wavefronts, bank conflicts
ATOM_INST = "smsp__inst_executed_op_shared_atom.sum"
ATOM_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"
ATOM_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum"
#: wgmma's shared-memory operand reads (HGMMA and its kin): their wavefronts
GMMA_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum"
#: the shared-memory wavefronts of every op (loads, stores, cp.async, atomics, wgmma reads and the
#: "misc" op), and those of the misc op, which counts no data access of the PTX (below)
SHARED_WAVEFRONTS = NCU_METRICS["ldgsts"][0]
MISC_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_misc.sum"

# ---- what the H100 counts that the PTX does not show (gpu_check/ptx/traffic.py, docs/traffic.md) ----
#: op_misc: one wavefront per warp of the launch, whatever it runs (every measured launch: 1 in a
#: one-warp kernel, 2 in every two-warp pattern kernel without other misc sources)
MISC_PER_WARP = 1
#: A load, store, ldmatrix, stmatrix or cp.async whose guard is false for every lane of a warp that
#: reaches it still issues: ptxas keeps their PTX guard as the SASS instruction's predicate, and
#: Nsight Compute counts a warp-level execution whatever the predicate.  Issued so, it moves no data
#: (no data wavefront) and costs one op_misc wavefront (traffic/warp0_only: warp 1's ``@!P0 LDS``).
#: A guarded atom, red or shfl.sync ptxas compiles as a branch around it: a warp with no lane on
#: skips it (``IDLE_ISSUES`` lists the opcodes that issue).
MISC_PER_IDLE = 1
IDLE_ISSUES = frozenset({"ld", "ldu", "st", "ldmatrix", "stmatrix", "cp"})
#: ptxas puts ``SharedOp.phantom_lds`` (3) never-executed ``@!PT LDS RZ, [RZ]`` before the first
#: cp.async of every basic block that holds one (a block starts at a label and after a branch, call,
#: ret or exit): a warp that runs that cp.async (any lane, or none) executes them too -- three LDS
#: executions and, as idle executions (``MISC_PER_IDLE``), three misc wavefronts.  Fitted on the
#: pattern kernels, bgemm_128x128 and cutlass_sgemm; hgemm_cpasync's four blocks (two on paths
#: not taken) and cutlass_wgmma's loop body (two trips) follow it.
PHANTOM_LDS = max(e.phantom_lds for e in SHARED_OPS.values())
#: op_misc wavefronts per warp-level execution of instructions that run through the shared-memory
#: pipe without touching shared memory, by the SASS ptxas makes of them (``fence_sass``): SHFL
#: (shfl.sync: shfl3, reduce_shfl's 85), a GPU/system-scope MEMBAR (membar.gl/.sys, fence.sc/acq_rel
#: at .gpu/.cluster/.sys, fence.proxy.async and .shared::cluster: traffic2/fence_proxy_async), the
#: CCTL.IVALL that ends a GPU-scope fence.sc/acq_rel (its ERRBAR and CGAERRBAR count none:
#: traffic2/membar_gl 2 per warp, devfunc_local -G's MEMBAR.SC.VC + ERRBAR + CGAERRBAR 1) and the
#: FENCE.VIEW.ASYNC.S of a fence.proxy.async on shared memory (traffic2/fence_proxy_async and
#: fence_proxy_shared).  redux.sync's REDUX counts none (traffic2/redux3: 3 REDUX in 2 warps, no
#: wavefront), nor do VOTE, ELECT, ERRBAR, FENCE.VIEW.ASYNC.G, LDGDEPBAR/DEPBAR and WARPSYNC
#: (traffic2/shfl_warp0_only, ldmatrix_warp0_only and warpsync_divergent: WARPSYNC.ALL and a
#: WARPSYNC of a partial mask, none).
MISC_PER_SHFL = MISC_PER_MEMBAR_GPU = MISC_PER_CCTL_IVALL = MISC_PER_FENCE_VIEW_ASYNC = 1
MISC_PER_REDUX = 0
#: A warp that has to wait -- at a barrier (bar.sync, barrier.sync: ``on_bar_release``), or at a
#: CTA-scope MEMBAR (membar.cta, fence.sc/acq_rel.cta, fence.proxy.async.shared::cta) for its own
#: memory operations -- may cost one op_misc wavefront; whether it does depends on timing.  The
#: H100 counted from none to one per warp: barriers of 4 warps 0 to 3, bar_one_warp's one warp 1,
#: membar_cta's and fence_acq_rel_cta's 2 warps 1, fence_proxy_shared's 1 of 2, wgmma_desc's 4
#: MEMBAR.ALL.CTA none.  ``totals`` counts every such warp, the report gives this part apart
#: (``SharedReport.barrier_misc``): the hardware's op_misc and shared total lie between the totals
#: less it and the totals.
MISC_PER_BARRIER_WAIT = MISC_PER_MEMBAR_CTA_WAIT = 1
#: atom/red on shared memory (ATOMS): the lanes of a 4-byte atomic go in one phase; every lane that
#: hits a bank takes a wavefront of its own in that bank (``ATOM_LANES_PER_BANK``), lanes at one word
#: too (atomics to one word serialize): wavefronts = the most active lanes in one bank, ideal = 1 (traffic/atom: 1 per warp,
#: traffic/atom_same, 32 lanes at one word: 32).  Fitted on those two kernels only:
#: gpu_check/ptx/traffic.py's second measurement holds the patterns that test it.  ptxas compiles
#: atom.shared.add.f32 and the 8-byte adds as a compare-and-swap loop (an LDS, then ATOMS.CAST.SPIN
#: until no lane lost), whose trips depend on the lanes' contention: those rows are not modelled
#: (``NATIVE_ATOMS``: the operations an ATOMS runs, on 4-byte integers).
ATOM_LANES_PER_BANK = 1
#: atom.shared.cas (ATOMS.CAS): two wavefronts per round of the rule above, ideal 2, and one bank
#: conflict per round after the first (traffic2/atom_cas_same: 32 lanes at one word, 64 wavefronts
#: per warp, ideal 2, 31 conflicts).
ATOM_CAS_WAVEFRONTS = 2
#: red.shared.add of the immediate 1 ptxas makes ATOMS.POPC.INC: the lanes at one word add their
#: count in one go, so lanes at one word count once in their bank (traffic2/red_same: 32 lanes at
#: one word, 1 wavefront per warp, no conflict); ``popc_inc``.
POPC_INC_ADDEND = 1
NATIVE_ATOMS = frozenset({"add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas"})
#: What Nsight Compute counts for wgmma's shared-memory operand reads: metric -> the wgmma rows'
#: figure it equals.  The source page gives every HGMMA's warp-level execution a quarter of its
#: warpgroup's wavefronts, which equal fragsim's ldmatrix phases over the core matrices each
#: descriptor names (wgmma_desc, triton_matmul_sm90, cutlass_wgmma: operand bytes / 128 for their
#: swizzled tiles), and the shared total adds them.
WGMMA_METRICS: dict[str, str] = {GMMA_WAVEFRONTS: "wavefronts"}

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
    executions, ``idle`` of them with no lane on (``MISC_PER_IDLE``); ``wavefronts``/``ideal``/
    ``conflicts`` (= wavefronts - ideal): Nsight Compute's figures.  ``exact`` is False where the
    bank model is an estimate (cp.async outside its measured domain); ``modelled`` False where
    wavefronts are not modelled (an atomic ptxas makes a compare-and-swap loop: 0 shown)."""

    line: int
    instruction: str
    op: str
    kind: str
    source: str | None = None
    generic: bool = False
    executions: int = 0
    idle: int = 0
    wavefronts: int = 0
    ideal: int = 0
    exact: bool = True
    modelled: bool = True
    #: wavefronts per round of bank conflicts (``ATOM_CAS_WAVEFRONTS`` for atom.cas, else 1):
    #: Nsight Compute's conflict counter counts rounds
    per_round: int = 1
    #: the execution with the most conflicts: (conflicts, addrs (32,), mask, src (32,) or None)
    worst: tuple | None = field(default=None, repr=False)
    entry: SharedOp | None = field(default=None, repr=False)
    #: the distinct warp executions and how often each came (rows of the bank model's ops: what
    #: ``SharedReport.suggest`` remaps); None for atomics, wgmma and rows of idle executions only
    recorded: Recorded | None = field(default=None, repr=False)

    @property
    def conflicts(self) -> int:
        return (self.wavefronts - self.ideal) // self.per_round

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
                "kind": self.kind, "generic": self.generic, "executions": self.executions, "idle": self.idle,
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
    ``lines()`` (by source line, worst first), ``text()``, ``html()``, Jupyter's ``_repr_html_``, and
    ``suggest()``: the swizzle that removes the conflicts, checked on the run's own addresses.
    ``barrier_misc``: the op_misc wavefronts of warps waiting at barriers in the totals, the most
    there can be (``MISC_PER_BARRIER_WAIT``): the hardware counts as many or fewer.  ``regions``:
    the shared variables, (name, offset, bytes); ``touches``: the accesses ``suggest`` leaves alone
    (wgmma, atomics, bulk copies, mbarriers)."""

    def __init__(self, kernel: str, rows: list[SharedRow], totals: dict[str, int], warps: int,
                 ptx_lines: list[str] | None, sources: dict[str, list[str] | None], barrier_misc: int = 0,
                 regions: list[tuple[str, int, int]] | None = None, touches: list[Touch] | None = None):
        self.kernel = kernel
        self.rows = rows
        self.totals = totals
        self.warps = warps
        self.barrier_misc = barrier_misc
        self.regions = regions or []
        self.touches = touches or []
        self._ptx = ptx_lines
        self._sources = sources

    @property
    def recorded_rows(self) -> list[SharedRow]:
        """The rows whose warp executions the report recorded (``SharedRow.recorded``)."""
        return [r for r in self.rows if r.recorded is not None]

    def suggest(self, line=None):
        """The swizzle that removes the bank conflicts of each shared buffer with conflicts (``line``:
        only the buffers of that line, a PTX line number or a line as the report prints it,
        ``"kernel.cu:42"``), with the store and load lines that must apply it, verified on the run's
        recorded accesses: each line's wavefronts and conflicts before and after
        (``fragsim.ptx.suggest``)."""
        from .suggest import suggest
        return suggest(self, line)

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
        if self.barrier_misc:
            out.append(f"  ({BARRIER_NOTE.format(self.barrier_misc)})")
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
                + "</table>" + (f"<p>{esc(BARRIER_NOTE.format(self.barrier_misc))}</p>" if self.barrier_misc else ""))
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


#: what the totals say of the barrier part of op_misc
BARRIER_NOTE = ("op_misc and the shared total count {:,} wavefront(s) of warps that may wait at barriers: the "
                "hardware counts that many or fewer, as the warps arrive")
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

class Traffic(Observer):
    """The observer ``run_kernel(report=True)`` attaches: rows accumulate as the machine tells of
    shared-memory accesses (``on_shared_access``, ``on_cp_async``, ``on_wgmma``), of guards that leave a
    warp idle (``on_guard_off``) and of barriers (``on_bar_release``); the instructions with an op_misc
    cost of their own (``misc_cost``) are counted as they run (their ``Op.run`` wrapped, as the checks
    wrap theirs)."""

    #: mma.sync events are not needed: the machine may batch them
    batch_mma = True

    def __init__(self, module: A.Module, program=None):
        self.module = module
        self.rows: dict[int, SharedRow] = {}          # id(op) -> its row
        self.barrier_waits = 0                         # warps that (at most) waited at barriers, summed
        self.waits = 0                                 # op_misc of warps that may wait at a CTA MEMBAR
        self.misc_ops = 0                              # op_misc wavefronts of MISC_PER_* instructions
        self.phantom = 0                               # ptxas's never-executed LDS, executed
        self._memo: dict[int, dict[bytes, tuple]] = {}  # id(row) -> address sets -> their figures
        self._atom: tuple | None = None                # (op, step, [idx], [addrs]) of the atom step open
        self._phantom_ops: set[int] = set()            # id(op): the first cp.async of a basic block
        self.touches: dict[int, Touch] = {}            # id(op) -> what suggest() leaves alone, its bytes
        if program is not None:
            self._phantom_ops = {id(op) for op in block_first_copies(program.ops)}
            for op in program.ops:
                cost, wait = misc_cost(op.instr), misc_wait(op.instr)
                if cost or wait:
                    op.run = self._counting(op.run, cost, wait)

    def _counting(self, run, cost: int, wait: int):
        def counted(s, idx):
            n = warps_in(idx)
            self.misc_ops += cost * n
            self.waits += wait * n
            run(s, idx)
        return counted

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
            native = width == 4 and "f32" not in ins.mods and bool(NATIVE_ATOMS & set(ins.mods))
            return SharedRow(ins.line, ins.text, f"{ins.opcode}.shared", ATOM, source, space is None, modelled=native,
                             per_round=ATOM_CAS_WAVEFRONTS if "cas" in ins.mods else 1)
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
        key = addrs.tobytes() + masks.tobytes() + (b"" if src is None else src.tobytes())
        if count:
            row.executions += len(addrs)
            if row.recorded is None:
                row.recorded = Recorded(e.address_lanes, e.bytes_per_addr, e.kind == "ldgsts")
            row.recorded.add(addrs, masks, src, key)
        if not e.counted:          # cp.async.cg: Nsight Compute shows nothing for it
            return
        memo = self._memo.setdefault(id(row), {})
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

    def on_shared_access(self, s: State, e: SharedAccess) -> None:
        idx, addrs, width, write = e.idx, e.addrs, e.width, e.write
        row = self._row(s, width, write)
        if row.kind == "ldgsts":   # the CpAsync event, which knows the sources, counts it
            return
        if row.kind == ATOM:
            if not write:          # an atom reads then writes each address: its reads are its lanes
                self._atom_lanes(s, idx, addrs)
                if len(addrs):
                    self._touch(s, "atom", int(addrs.min()), int(addrs.max()) + width)
            return
        if idx.ndim == 2:          # ldmatrix/stmatrix: (warps, address lanes), every lane executes
            w, al = addrs.shape
            a = np.zeros((w, WARP_LANES), np.int64)
            a[:, :al] = addrs
            self._add(row, a, np.full(w, _FULL))
            return
        a, m = by_warp(idx, addrs)
        self._add(row, a, m)

    def on_cp_async(self, s: State, e: CpAsync) -> None:
        row = self._row(s, e.size, True)
        a, m, g = by_warp(e.idx, e.dst, e.src.astype(np.int64))
        self._add(row, a, m, g)
        if id(s.op) in self._phantom_ops:
            self.phantom += PHANTOM_LDS * len(a)

    def on_guard_off(self, s: State, e: GuardOff) -> None:
        """Warps whose lanes at ``s.op`` are all off: an idle execution of a shared-memory instruction
        that issues so (``MISC_PER_IDLE``), and the never-executed LDS before a block's first cp.async."""
        idx, off = e.idx, e.off
        op = s.op
        key = id(op)
        ins = op.instr
        shared = ins.opcode in IDLE_ISSUES and shared_instruction(ins, op.extra)
        if not shared:
            return
        warp = idx // WARP_LANES
        on = np.unique(warp[~off])
        idle = np.setdiff1d(np.unique(warp[off]), on, assume_unique=True)
        n = len(idle)
        if not n:
            return
        if key in self._phantom_ops:
            self.phantom += PHANTOM_LDS * n
        if shared:
            row = self.rows.get(key)
            if row is None:
                width = op.extra.get("width") or copy_size(ins)
                row = self.rows[key] = self._new_row(ins, op.extra.get("space", "shared"), width,
                                                     ins.opcode in ("st", "stmatrix", "cp"))
            row.executions += n
            row.idle += n

    def _atom_lanes(self, s, idx: np.ndarray, addrs: np.ndarray) -> None:
        """An atom runs in rounds (threads sharing an address one after another), each told apart:
        the rounds of one step gather into the step's warp executions."""
        cur = self._atom
        if cur is not None and (cur[0] is not s.op or cur[1] != s.steps):
            self._close_atom()
            cur = None
        if cur is None:
            cur = self._atom = (s.op, s.steps, [], [])
        cur[2].append(idx)
        cur[3].append(addrs)

    def _close_atom(self) -> None:
        if self._atom is None:
            return
        op, _, idxs, addrs = self._atom
        self._atom = None
        idx = np.concatenate(idxs)
        order = np.argsort(idx, kind="stable")
        row = self.rows[id(op)]
        a, m = by_warp(idx[order], np.concatenate(addrs)[order])
        row.executions += len(a)
        if row.modelled:
            wf, ideal = atom_wavefronts(a, m, distinct=popc_inc(op.instr))
            wf, ideal = wf * row.per_round, ideal * row.per_round
            row.wavefronts += int(wf.sum())
            row.ideal += int(ideal.sum())

    def _touch(self, s: State, what: str, lo: int, hi: int) -> None:
        """Bytes [lo, hi) of the shared window that ``s.op`` accesses in a way suggest() leaves alone."""
        t = self.touches.get(id(s.op))
        if t is None:
            ins = s.op.instr
            self.touches[id(s.op)] = Touch(what, ins.line, ins.text, self._source(ins), lo, hi)
        else:
            t.extend(lo, hi)

    def _touch_flat(self, s: State, what: str, flat: np.ndarray) -> None:
        if len(flat):
            off = np.asarray(flat, np.int64) % s.smem.shape[1]
            self._touch(s, what, int(off.min()), int(off.max()) + 1)

    def on_bulk_issue(self, s: State, e: BulkIssue) -> None:
        self._touch_flat(s, "bulk copy", e.flat)

    def on_bulk_read(self, s: State, e: BulkRead) -> None:
        self._touch_flat(s, "bulk copy", e.flat)

    def on_mbarrier_arrive(self, s: State, e: MbarrierArrive) -> None:
        self._touch(s, "mbarrier", int(e.addr), int(e.addr) + 8)

    def on_bar_release(self, s: State, e: BarRelease) -> None:
        """Every warp of each (CTA, barrier) released may have waited (``MISC_PER_BARRIER_WAIT``)."""
        if not len(e.idx):
            return
        self.barrier_waits += warps_in(e.idx)

    def on_wgmma(self, s: State, e: Wgmma) -> None:
        """``a``: A's descriptors (groups,) or its registers; ``b``: B's descriptors (groups,)."""
        form, a, b, trans_a, trans_b = e.form, e.a, e.b, e.trans_a, e.trans_b
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
                if units.size:
                    self._touch(s, "wgmma", int(units.min()), int(units.max()) + MATRIX_ROW_BYTES)

    # ---- the end

    def report(self, run, ptx_lines: list[str] | None = None, ptx_path: str | None = None,
               smem_bytes: int | None = None) -> SharedReport:
        """The report of ``run`` (``smem_bytes``: the shared memory of a CTA, which the last shared
        variable, the dynamic one, runs to)."""
        self._close_atom()
        rows = sorted(self.rows.values(), key=lambda r: r.line)
        warps = len(run.ctas) * -(-(run.block[0] * run.block[1] * run.block[2]) // WARP_LANES)
        sources = {}
        for r in rows:
            if r.source:
                path = r.source.rpartition(":")[0]
                if path not in sources:
                    sources[path] = read_source(path, ptx_path)
        misc = warps * MISC_PER_WARP + self.misc_ops
        barrier = self.barrier_waits * MISC_PER_BARRIER_WAIT + self.waits
        return SharedReport(run.kernel, rows, totals(rows, misc + barrier, self.phantom), warps, ptx_lines, sources,
                            barrier_misc=barrier, regions=shared_regions(run.program, smem_bytes),
                            touches=sorted(self.touches.values(), key=lambda t: t.line))


def shared_regions(program, smem_bytes: int | None) -> list[tuple[str, int, int]]:
    """The shared variables of ``program``'s layout as (name, offset, bytes): each runs to the next one's
    offset, the last to ``smem_bytes`` (or the static end)."""
    L = program.layout
    items = sorted(L.shared.items(), key=lambda kv: kv[1])
    end = smem_bytes if smem_bytes is not None else L.shared_static
    out = []
    for i, (name, off) in enumerate(items):
        nxt = items[i + 1][1] if i + 1 < len(items) else max(end, off)
        out.append((name, off, nxt - off))
    return out


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


def warps_in(idx: np.ndarray) -> int:
    """How many warps threads ``idx`` (ascending) belong to."""
    if not len(idx):
        return 0
    w = idx // WARP_LANES
    return int(np.count_nonzero(w[1:] != w[:-1])) + 1


def shared_instruction(ins: A.Instr, extra: dict) -> bool:
    """Whether ``ins`` is a shared-memory instruction of the report whatever its lanes' addresses
    (a generic ld/st is one only where an address lands in shared memory)."""
    if ins.opcode in ("ldmatrix", "stmatrix"):
        return True
    if ins.opcode == "cp":
        return ins.mods[1:2] in (("ca",), ("cg",))
    return ins.opcode in ("ld", "ldu", "st", "atom", "red") and extra.get("space") == "shared"


def copy_size(ins: A.Instr) -> int:
    """A cp.async's cp-size (its third operand)."""
    op = ins.operands[2] if len(ins.operands) > 2 else None
    return int(op.value) if isinstance(op, A.Imm) else 0


def block_first_copies(ops) -> list:
    """The ops that are the first cp.async copy of a basic block (``PHANTOM_LDS``): a block starts at a
    branch target and after a branch, call, ret or exit."""
    out = []
    seen = True
    labels = {op.target for op in ops if op.kind in ("branch", "call")}
    prev = None
    for pc, op in enumerate(ops):
        if pc in labels or prev is None or prev.kind in ("branch", "call", "ret", "exit") \
                or prev.function != op.function:
            seen = False
        if op.instr.opcode == "cp" and op.instr.mods[1:2] in (("ca",), ("cg",)) and not seen:
            out.append(op)
            seen = True
        prev = op
    return out


#: op_misc wavefronts per warp execution of the SASS a fence becomes (``fence_sass``)
FENCE_SASS_COST = {"MEMBAR.GPU": MISC_PER_MEMBAR_GPU, "CCTL.IVALL": MISC_PER_CCTL_IVALL,
                   "FENCE.VIEW.ASYNC.S": MISC_PER_FENCE_VIEW_ASYNC, "MEMBAR.CTA": 0}


def fence_sass(ins: A.Instr) -> tuple[str, ...]:
    """The SASS ptxas (CUDA 13, sm_90a) makes of a membar/fence that costs op_misc, by its scope:
    membar.cta, fence.sc/acq_rel.cta: MEMBAR.CTA; membar.gl/.sys, fence.sc/acq_rel at .gpu, .cluster
    or .sys: MEMBAR.GPU (or .SYS) + ERRBAR + CGAERRBAR + CCTL.IVALL; fence.proxy.async (generic or
    .shared::cluster): MEMBAR.ALL.GPU + FENCE.VIEW.ASYNC.S, .shared::cta: MEMBAR.ALL.CTA +
    FENCE.VIEW.ASYNC.S, .global: FENCE.VIEW.ASYNC.G only; fence.mbarrier_init: nothing."""
    mods = set(ins.mods)
    if ins.opcode == "membar":
        return ("MEMBAR.CTA",) if "cta" in mods else ("MEMBAR.GPU", "CCTL.IVALL")
    if ins.opcode != "fence" or "mbarrier_init" in mods:
        return ()
    if "proxy" in mods:
        if "async" not in mods or any(m.startswith("global") for m in mods):
            return ()
        cta = any(m.startswith("shared") and m.endswith("cta") for m in mods)
        return ("MEMBAR.CTA" if cta else "MEMBAR.GPU", "FENCE.VIEW.ASYNC.S")
    if not {"sc", "acq_rel"} & mods:
        return ()
    return ("MEMBAR.CTA",) if "cta" in mods else ("MEMBAR.GPU", "CCTL.IVALL")


def misc_cost(ins: A.Instr) -> int:
    """The op_misc wavefronts one warp-level execution of ``ins`` surely costs (``MISC_PER_SHFL`` ...)."""
    if ins.opcode == "shfl":
        return MISC_PER_SHFL
    if ins.opcode == "redux":
        return MISC_PER_REDUX
    return sum(FENCE_SASS_COST[x] for x in fence_sass(ins))


def misc_wait(ins: A.Instr) -> int:
    """The op_misc wavefronts one warp-level execution of ``ins`` may cost, by when its memory
    operations complete (``MISC_PER_MEMBAR_CTA_WAIT``)."""
    return MISC_PER_MEMBAR_CTA_WAIT * fence_sass(ins).count("MEMBAR.CTA")


def popc_inc(ins: A.Instr) -> bool:
    """Whether ptxas makes the atomic ``ins`` an ATOMS.POPC.INC (``POPC_INC_ADDEND``)."""
    value = ins.operands[-1]
    return (ins.opcode == "red" and "add" in ins.mods and isinstance(value, A.Imm)
            and value.value == POPC_INC_ADDEND)


def atom_wavefronts(addrs: np.ndarray, masks: np.ndarray, distinct: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(wavefronts, ideal) per warp execution of a 4-byte shared-memory atomic (``ATOM_LANES_PER_BANK``):
    ``addrs`` (w, 32) byte offsets, ``masks`` (w,) active lanes; ``distinct``: lanes at one word
    count once (``popc_inc``)."""
    on = (masks[:, None] >> np.arange(WARP_LANES, dtype=np.uint32)) & 1 == 1       # (w, 32)
    if distinct:         # an active lane that an earlier active lane shares its word with counts none
        word = addrs // BANK_BYTES
        same = (word[:, :, None] == word[:, None, :]) & on[:, None, :] & np.tri(WARP_LANES, k=-1, dtype=bool)
        on = on & ~same.any(axis=2)
    bank = (addrs // BANK_BYTES) % NUM_BANKS
    w = np.broadcast_to(np.arange(len(addrs))[:, None], bank.shape)
    hits = np.zeros((len(addrs), NUM_BANKS), np.int64)
    np.add.at(hits, (w[on], bank[on]), ATOM_LANES_PER_BANK)
    return hits.max(axis=1, initial=0), on.any(axis=1).astype(np.int64)


def totals(rows: list[SharedRow], misc: int, phantom: int) -> dict[str, int]:
    """Nsight Compute's whole-kernel counters from the rows: wavefronts and bank conflicts of loads
    (ld.shared, ldmatrix), stores (st.shared, stmatrix), cp.async and atomics, wgmma's reads
    (``WGMMA_METRICS``), executed instructions per kind (``phantom``: ptxas's never-executed LDS,
    executed, with the loads), the misc wavefronts (``misc``: those of the warps, barriers and
    MISC_PER_* instructions; the idle executions' and the never-executed LDS' added here) and the
    shared total."""
    def total(what: str, pick) -> int:
        return sum(getattr(r, what) for r in rows if pick(r))

    ld_wf = total("wavefronts", lambda r: _COUNTER.get(r.kind) == "ld")
    st_wf = total("wavefronts", lambda r: _COUNTER.get(r.kind) == "st")
    atom_wf = total("wavefronts", lambda r: r.kind == ATOM and not r.generic)
    misc += (total("idle", lambda r: not r.generic) + phantom) * MISC_PER_IDLE
    out = {SHARED_WAVEFRONTS: 0, LD_WAVEFRONTS: ld_wf, ST_WAVEFRONTS: st_wf, MISC_WAVEFRONTS: misc,
           LD_CONFLICTS: total("conflicts", lambda r: _COUNTER.get(r.kind) == "ld"),
           ST_CONFLICTS: total("conflicts", lambda r: _COUNTER.get(r.kind) == "st"),
           LDGSTS_CONFLICTS: total("conflicts", lambda r: r.kind == "ldgsts")}
    for kind, metric in INST_METRICS.items():
        out[metric] = sum(r.executions for r in rows if r.kind == kind and not r.generic)
    out[INST_METRICS["ld"]] += phantom
    out[ATOM_INST] = total("executions", lambda r: r.kind == ATOM and not r.generic)
    out[ATOM_WAVEFRONTS] = atom_wf
    out[ATOM_CONFLICTS] = total("conflicts", lambda r: r.kind == ATOM and not r.generic)
    gmma = 0
    for metric, what in WGMMA_METRICS.items():
        out[metric] = total(what, lambda r: r.kind == WGMMA)
        gmma += out[metric] if what == "wavefronts" else 0
    out[SHARED_WAVEFRONTS] = ld_wf + st_wf + atom_wf + gmma + misc + total("wavefronts", lambda r: r.kind == "ldgsts")
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
