"""The diagnosis of the first inconsistent mma a trace finds (``fragsim.trace.report``), in the words of
``fragsim check``, and its verification on the kernel.

mma.sync operands: the CTA runs again (one run per pass) with an observer that follows, for the
mma's warp, which ``ldmatrix``/``ld.shared`` last wrote each register (by name) and what shared
memory held then.  The identities in that shared memory say where each element of A (or B) sits;
the layout is fitted as a ``fragsim.Tile`` (order, pitch, XOR swizzle, base: the linear solve of
``fragsim.check.layouts``).  ``fragsim.check_load`` then runs the loads on that tile against the
fragment the mma should get -- its diagnosis (``.trans`` missing or extra, k halves swapped, the
8x8 matrices of an x4 in the wrong order, rows or columns off, swizzle missing or different,
pitch) is the checker's own, each fix checked by its simulator.  The loads must reproduce what the
mma received, or no diagnosis is given.

wgmma operands read through descriptors: the tile is fitted from the shared memory the wgmma read,
and ``fragsim.check_wgmma`` names the descriptor's mistake (swizzle mode, LBO/SBO, start address,
k-step advance, majorness) and the descriptor that reads the tile right.

Verification: the CTA runs once more with the fix applied -- the fixed loads (the addresses the
tile needs, ``.trans`` toggled where the checker toggles it) read the kernel's real shared memory at
the moment the loads run, or the fixed descriptor is read by fragsim's wgmma operand model -- and
the mma must then receive exactly the elements it should.  Fixes in the epilogue's global stores
(D stored elsewhere) and in the k loop (a D element summed over some k twice) change address
arithmetic that fragsim cannot rewrite in a PTX kernel: those diagnoses are not verified, and say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fragsim.check.report import Finding
from fragsim.facts.hardware import WARP_LANES
from fragsim.ptx import ast as A
from fragsim.ptx.observe import CpLand, Mma, Observer, SharedAccess, Wgmma
from fragsim.ptx.state import State

from .checks import Analysis
from .ids import NONE, combine
from .operands import operand_names, wgmma_operands
from .passes import Launch
from .report import elements
from .result import BadMma
from .suspects import Suspect

#: Pitches tried beyond the line's own: up to this many 16-byte paddings.
PADDINGS = 8


@dataclass
class Load:
    """One ldmatrix / ld.shared of the traced warp: ``op`` (PTX spelling), the warp's 32 ``addrs``
    and ``mask``, the registers it wrote (``dests``), shared memory when it ran (``smem``)."""

    seq: int
    line: int
    occurrence: int                 # which execution of its line by the warp
    op: str
    addrs: np.ndarray
    mask: np.ndarray
    dests: list
    smem: Any
    source: str | None = None        # the CUDA line (.loc)


def _reg_names(x) -> list:
    items = x.items if isinstance(x, A.Vec) else (x,)
    return [getattr(i, "name", None) for i in items]


class Follow(Observer):
    """Observer of one re-run of the target's CTA: for warp ``warp`` the last load into each
    register, and at the target mma (the ``occurrence``-th execution of ``line`` by that warp) what
    it read.  ``fixes``: {(load line, load occurrence): (op, addrs)} loads to replace by those (the
    registers the mma then gets are what the fixed loads read from the real shared memory);
    ``descriptors``: {operand: descriptor value} for a wgmma."""

    def __init__(self, warp: int, line: int, occurrence: int, fixes=None, descriptors=None, majors=None):
        self.warp, self.line, self.occurrence = warp, line, occurrence
        self.fixes, self.descriptors, self.majors = fixes or {}, descriptors or {}, majors or {}
        self.last: dict = {}
        self.fixed: dict = {}              # register name -> the words the fixed loads give (32,) each
        self.version, self.snap_version = 0, -1
        self.snap: Any = None
        self.count = 0
        self.seen: dict = {}               # load line -> executions so far
        self.seq = 0
        self.found: dict | None = None
        self.chain: list = []              # the warpgroup's wgmma's so far: descriptors, D registers

    def on_cp_land(self, s: State, e: CpLand) -> None:
        self.version += 1

    def on_shared_access(self, s: State, e: SharedAccess) -> None:
        idx, addrs = e.idx, e.addrs
        if e.write:
            self.version += 1
            return
        ins = s.op.instr
        if ins.opcode not in ("ldmatrix", "ld"):
            return
        th = np.asarray(idx).reshape(-1)
        warps = s.tid_linear[th] // WARP_LANES
        sel = warps == self.warp
        if not sel.any():
            return
        lanes = s.lane[th[sel]]
        a = np.asarray(addrs).reshape(-1)[sel]
        full = np.zeros(WARP_LANES, np.int64)
        mask = np.zeros(WARP_LANES, bool)
        full[lanes], mask[lanes] = a, True
        if ins.opcode == "ldmatrix":
            op = "ldmatrix." + ".".join(m for m in ins.mods if m in ("x1", "x2", "x4", "trans"))
            mask[:] = True
        else:
            op = "ld.shared." + ".".join(m for m in ins.mods if m.startswith(("v2", "v4", "b", "u", "s", "f"))
                                          and not m.startswith("shared"))
        if self.snap_version != self.version:
            self.snap, self.snap_version = s.smem[0].copy(), self.version
        occ = self.seen.get(ins.line, 0)
        self.seen[ins.line] = occ + 1
        dests = _reg_names(ins.operands[0])
        loc = ins.loc
        src = None
        if loc is not None:
            path = s.program.module.files.get(loc.file) if s.program is not None else None
            src = f"{path}:{loc.line}" if path else None
        rec = Load(self.seq, ins.line, occ, op, full, mask, dests, self.snap, src)
        self.seq += 1
        for n in dests:
            self.last[n] = rec
        fix = self.fixes.get((ins.line, occ))
        for n in dests:
            self.fixed.pop(n, None)
        for f in fix or ():
            words = run_load(f[0], f[1], mask, self.snap)
            for k, n in enumerate(dests):
                if k < words.shape[1]:
                    self.fixed.setdefault(n, []).append(words[:, k])

    def _target(self, s, idx, threads: int):
        if s.op.line != self.line:
            return None
        first = np.asarray(idx)[::threads]
        hit = np.flatnonzero(s.tid_linear[first] // WARP_LANES == self.warp)
        if not hit.size:
            return None
        self.count += 1
        return int(hit[0]) if self.count == self.occurrence + 1 else None

    def on_mma(self, s: State, e: Mma) -> None:
        from fragsim.sim.registers import unpack

        form, a, b = e.form, e.a, e.b
        e.result["d"] = np.zeros(e.c.shape[:2] + (form.nregs("D"),), np.uint32)     # D does not matter here
        g = self._target(s, e.idx, WARP_LANES)
        if g is None:
            return
        regs = {"A": a[g].copy(), "B": b[g].copy()}
        for op, k in (("A", 1), ("B", 2)):
            used: dict = {}
            for j, n in enumerate(_reg_names(s.op.instr.operands[k])):
                if n in self.fixed:          # the c-th use of a register takes the c-th fixed load's word
                    c = used[n] = used.get(n, -1) + 1
                    regs[op][:, j] = self.fixed[n][min(c, len(self.fixed[n]) - 1)]
        self.found = {"A": unpack(form, "A", regs["A"]), "B": unpack(form, "B", regs["B"]),
                      "loads": {op: [self.last.get(n) for n in _reg_names(s.op.instr.operands[k])]
                                for op, k in (("A", 1), ("B", 2))}}

    def on_wgmma(self, s: State, e: Wgmma) -> None:
        e.result["d"] = np.zeros_like(e.c)       # D does not matter here
        idx, form, a, b, smem, trans_a, trans_b = e.idx, e.form, e.a, e.b, e.smem, e.trans_a, e.trans_b
        first = np.asarray(idx)[::4 * WARP_LANES]
        hit = np.flatnonzero(s.tid_linear[first] // WARP_LANES == self.warp)
        if hit.size:                   # every wgmma of the warpgroup: the k-steps of its accumulators
            h = int(hit[0])
            self.chain.append({"A": int(a[h]) if a.ndim == 1 else None, "B": int(b[h]),
                               "d": tuple(_reg_names(s.op.instr.operands[0]))})
        g = self._target(s, idx, 4 * WARP_LANES)
        if g is None:
            return
        av = np.asarray(a)[g:g + 1]
        bv = np.asarray(b)[g:g + 1]
        if "A" in self.descriptors:
            av = np.array([self.descriptors["A"]], np.uint64)
            trans_a = self.majors["A"] == "MN"
        if "B" in self.descriptors:
            bv = np.array([self.descriptors["B"]], np.uint64)
            trans_b = self.majors["B"] == "MN"
        A_, B_ = wgmma_operands(form, av, bv, smem[g:g + 1], trans_a, trans_b)
        self.found = {"A": A_[0], "B": B_[0], "smem": smem[g].copy(), "desc": {"A": int(a[g]) if a.ndim == 1 else None,
                                                                             "B": int(b[g])},
                      "major": {"A": "MN" if trans_a else "K", "B": "MN" if trans_b else "K"},
                      "chain": self.chain, "index": len(self.chain) - 1}     # the chain grows on


def steps_of(found: dict, op: str, tile, at: tuple, K: int) -> tuple[list, tuple, int]:
    """The descriptors of the k-steps of the tile the target wgmma reads (the warpgroup's wgmma's into
    the same accumulators, the target at its step), the tile position of step 0, the target's step;
    the target's descriptor alone where the chain does not cover the tile."""
    chain, q = found["chain"], found["index"]
    same = [i for i, c in enumerate(chain) if c["d"] == chain[q]["d"] and c[op] is not None]
    s_t, n = at[1] // K, tile.cols // K
    if q in same and at[1] % K == 0:
        first = same.index(q) - s_t
        if first >= 0 and first + n <= len(same):
            return [chain[same[first + s]][op] for s in range(n)], (at[0], at[1] - s_t * K), s_t
    return [found["desc"][op]], at, 0


def run_load(op: str, addrs: np.ndarray, mask: np.ndarray, smem) -> np.ndarray:
    """What ``op`` at ``addrs`` reads from ``smem``: the warp's registers (32, n) uint32."""
    from fragsim.instructions.shared_ops import parse_shared_op
    from fragsim.sim import smem as S

    o = parse_shared_op(op)
    if o.family == "ldmatrix":
        return S.ldmatrix(smem, addrs, o.num, o.trans)
    return S.ld_shared(smem, addrs, o.bytes_per_addr, mask)


# ---------------------------------------------------------------------------------------------
# the re-runs

def follow(launch: Launch, bad_e: int, u: int, fixes=None, descriptors=None, majors=None) -> list:
    """Run the target's CTA once per pass that sends row/column and k numbers; the Follow of each."""
    t = launch.tracing
    ev = t.events[bad_e]
    cta, warp = tuple(ev.ctas[u]), int(ev.warps[u])
    occ = sum(1 for e2 in range(bad_e) for u2 in range(len(t.events[e2].first))
              if t.events[e2].line == ev.line and tuple(t.events[e2].ctas[u2]) == cta and t.events[e2].warps[u2] == warp)
    out = []
    for p in t.plan.rc() + t.plan.k():
        f = Follow(warp, ev.line, occ, fixes, descriptors, majors)
        launch.run(p, [cta], [f])
        out.append((p, f))
    return out


def decoded(launch: Launch, runs: list, operand: str, what) -> np.ndarray | None:
    """Per run's value ``what`` (an operand's element words or a shared-memory snapshot), the
    matrix coordinates (..., 2) of operand ``operand`` it holds: (row, col) of A, (k, col) of B."""
    t = launch.tracing
    code = t.ca if operand == "A" else t.cb
    rc: list = []
    kk: list = []
    for p, f in runs:
        v = f.found[what] if isinstance(what, str) else what(f)
        if v is None:
            return None
        if v.dtype == np.uint8:
            v = v[: v.size // (code.bits // 8) * (code.bits // 8)].view(code.dtype)
        dec = code.decode(v, operand == "B")
        dec = np.where(dec == 0, NONE, dec)
        (rc if t.plan.kinds[p] == "rc" else kk).append(dec)
    r, k = combine(rc, code.base), combine(kk, code.base)
    return np.stack([r, k] if operand == "A" else [k, r], -1)


# ---------------------------------------------------------------------------------------------
# the layout of an operand in shared memory

def fit_tile(coords: np.ndarray, eb: int, need: np.ndarray, dtype: str):
    """The ``fragsim.Tile`` holding the block of the matrix around the elements ``need`` (n, 2),
    from ``coords`` (slots, 2): the matrix element each ``eb``-byte slot of shared memory holds
    (-1: none); with the matrix coordinates of the tile's (0, 0).  None when the layout is no tile."""
    from fragsim.check import layouts as L
    from fragsim.layout.tile import Tile

    ok = (coords >= 0).all(-1)
    if not ok.any():
        return None
    addr = np.flatnonzero(ok) * eb
    r, c = coords[ok, 0], coords[ok, 1]
    r0, c0 = int(r.min()), int(c.min())
    h, w = int(r.max()) - r0 + 1, int(c.max()) - c0 + 1
    if h * w > 1 << 22:
        return None
    G = np.full((h, w), -1, np.int64)
    order = np.argsort(-addr)                       # the lowest address of an element held twice wins
    G[r[order] - r0, c[order] - c0] = addr[order]
    nr, nc = need[:, 0] - r0, need[:, 1] - c0
    if (nr < 0).any() or (nc < 0).any() or (nr >= h).any() or (nc >= w).any() or (G[nr, nc] < 0).any():
        return None
    # the block: elements reached from the needed ones by steps of at most twice the largest step
    # between neighbours among them (another stage or matrix lies further away)
    br = slice(int(nr.min()), int(nr.max()) + 1)
    bc = slice(int(nc.min()), int(nc.max()) + 1)
    sub = G[br, bc]
    steps = [np.abs(np.diff(sub, axis=ax)) for ax in (0, 1) if sub.shape[ax] > 1]
    limit = 2 * max([int(s.max()) for s in steps] or [eb])
    comp = np.zeros_like(G, bool)
    comp[nr, nc] = True
    while True:
        grow = comp.copy()
        for ax in (0, 1):
            d = np.abs(np.diff(G, axis=ax))
            near = (d <= limit) & (np.diff(G >= 0, axis=ax) == 0) & (np.take(G, range(G.shape[ax] - 1), ax) >= 0)
            lo = np.take(comp, range(G.shape[ax] - 1), ax)
            hi = np.take(comp, range(1, G.shape[ax]), ax)
            if ax == 0:
                grow[1:] |= lo & near
                grow[:-1] |= hi & near
            else:
                grow[:, 1:] |= lo & near
                grow[:, :-1] |= hi & near
        if (grow == comp).all():
            break
        comp = grow
    rr, cc = np.nonzero(comp)
    box = (slice(rr.min(), rr.max() + 1), slice(cc.min(), cc.max() + 1))
    if not comp[box].all():
        return None
    B = G[box]
    bh, bw = B.shape
    base = int(B.min())
    ri, ci = np.meshgrid(np.arange(bh), np.arange(bw), indexing="ij")
    for order_ in ("row", "col"):
        line, pos = (ri, ci) if order_ == "row" else (ci, ri)
        line_bytes = (bw if order_ == "row" else bh) * eb
        seen = B[line == 1][pos[line == 1] == 0] - B[line == 0][pos[line == 0] == 0] if line.max() >= 1 else []
        pitches = [line_bytes] + [line_bytes + 16 * j for j in range(1, PADDINGS + 1)]
        pitches += [1 << k for k in range(max(line_bytes - 1, 1).bit_length(), max(line_bytes - 1, 1).bit_length() + 3)]
        pitches += [int(x) for x in seen if x >= line_bytes]
        for pitch in dict.fromkeys(pitches):
            lin = line * pitch + pos * eb
            x = L.solve_xor(lin.ravel(), (B - base).ravel())
            if x is None or not (x.is_identity or L.swizzle_like(x)):
                continue
            try:
                tile = Tile(bh, bw, dtype, order_, pitch, L.as_swizzle(x), base)
            except ValueError:
                continue
            if np.array_equal(tile.offset_of(np.arange(bh * bw)), B.ravel()):
                return tile, (r0 + int(box[0].start), c0 + int(box[1].start))
    return None


# ---------------------------------------------------------------------------------------------
# mma.sync: the loads

def tile_dtype(form, operand: str) -> str:
    from fragsim.layout.tile import ELEMENT_BYTES

    name = form.fmt(operand).name
    return name if name in ELEMENT_BYTES else f"b{form.fmt(operand).storage_bits}"


def diagnose_loads(launch: Launch, sus: Suspect, runs: list, e: int):
    """check_load on the loads that fed ``sus.operand``: ((report, tile, the tile's origin in the
    matrix, the loads as the checker numbers them, its regmap), "") or (None, why not)."""
    from fragsim.check import check_load

    t = launch.tracing
    ev = t.events[e]
    form, op = ev.form, sus.operand
    loads = runs[-1][1].found["loads"][op] if runs[-1][1].found else None
    if loads is None:
        return None, "the re-run of the CTA did not reach the mma"
    if any(x is None for x in loads):
        return None, (f"some of {op}'s registers were not written by a shared-memory load (ldmatrix/ld.shared) "
                      "of this warp under the same name")
    recs = sorted({x.seq: x for x in loads}.values(), key=lambda x: x.seq)
    names = operand_names(ev, op) or []
    # the stream of loaded registers; a load whose register feeds two of the operand's registers (the
    # compiler reused one value) is listed once per use: the right fix may need two loads there
    uses: dict = {}
    for k, n in enumerate(names):
        uses.setdefault(n, []).append(k)
    copies = []
    for rec in recs:
        mine = {n: [k for k in uses.get(n, []) if loads[k] is rec] for n in rec.dests}
        for c in range(max([len(v) for v in mine.values()] + [1])):
            copies.append((rec, {n: (v[c] if c < len(v) else None) for n, v in mine.items()}))
    regmap: list = []
    others = []
    for rec, assign in copies:
        for n in rec.dests:
            if assign[n] is not None:
                regmap.append((0, assign[n]))
            else:
                regmap.append(None)
                others.append(len(regmap) - 1)
    nregs = form.nregs(op)
    # the fragments the other registers fill: whole fragments next to this one, as they sit in the stream
    step = (form.shape[0], 0) if op == "A" else (0, form.shape[1])
    start = regmap.index((0, 0)) if (0, 0) in regmap else 0
    extra = []
    for g in range(0, len(others), nregs):
        chunk = others[g:g + nregs]
        if len(chunk) != nregs or chunk != list(range(chunk[0], chunk[0] + nregs)) or (chunk[0] - start) % nregs:
            return None, f"the loads that fill {op} also fill registers that make no whole fragment"
        extra.append((chunk[0] - start) // nregs)
        for j, pos in enumerate(chunk):
            regmap[pos] = (len(extra), j)
    # shared memory as the loads saw it, decoded; the tile around the fragment the mma should get
    last = recs[-1].seq

    def snapshot(f):
        recs2 = [x for x in f.found["loads"][op] if x is not None and x.seq == last]
        return recs2[0].smem if recs2 else None

    coords = decoded(launch, runs, op, snapshot)
    if coords is None:
        return None, "the loads' shared memory could not be read back"
    eb = form.fmt(op).storage_bits // 8
    need = sus.want.reshape(-1, 2)
    need = need[(need >= 0).all(-1)]
    fitted = fit_tile(coords.reshape(-1, 2), eb, need, tile_dtype(form, op))
    if fitted is None:
        return None, (f"{op}'s elements do not sit in shared memory as one tile (rows or columns at one pitch, "
                      "with an XOR swizzle at most)")
    tile, (R0, C0) = fitted
    o0 = (int(need[:, 0].min()) - R0, int(need[:, 1].min()) - C0)
    origins = [o0] + [(o0[0] + k * step[0], o0[1] + k * step[1]) for k in extra]
    items = [(x.op, x.addrs, x.mask) if x.op.startswith("ld.shared") else (x.op, x.addrs) for x, _ in copies]
    try:
        report = check_load(form.name, op, tile, items, fragments=origins, regmap=regmap)
    except ValueError as err:
        return None, f"fragsim check refuses the loads: {err}"
    why = reproduces(report, sus, form, op, tile, (R0, C0), regmap)
    if why:
        return None, why
    return (report, tile, (R0, C0), [x for x, _ in copies], regmap), ""


def reproduces(report, sus: Suspect, form, op: str, tile, org, regmap) -> str:
    """"" when the checker's run of the loads gives what the mma received, else why not."""
    ev = report.evidence
    rows, cols = form.coords(op)
    got = np.where((sus.got >= 0).all(-1), (sus.got[..., 0] - org[0]) * tile.cols + (sus.got[..., 1] - org[1]), -1)
    for k in range(len(ev.got)):
        f, r = regmap[int(ev.reg[k]) // max(1, ev.frags.wide)]
        if f != 0:
            continue
        i, j = rows[ev.lane[k], r, ev.half[k]], cols[ev.lane[k], r, ev.half[k]]
        mine = int(got[i, j])
        theirs = int(ev.got[k]) if ev.got[k] >= 0 else -1
        if mine != theirs:
            return ("the loads that last wrote the registers, run again on the shared memory they read, do not give "
                    "what the mma received (the registers change between the loads and the mma)")
    return ""


def fixed_loads(report, tile) -> list | None:
    """The loads as the diagnosis corrects them: the addresses the tile needs, ``.trans`` toggled
    where no address can make the instruction right (``fragsim.check.diagnose``)."""
    from fragsim.check.diagnose import Diagnosis, toggled

    dg = Diagnosis(report.evidence, lambda **k: False, lambda n: [])
    out = []
    for i, ins in enumerate(report.instructions):
        op = ins.op
        w = dg.wanted(i, tile.offset_of)
        if w is None and op.family == "ldmatrix":
            op = toggled(op)
            w = dg.wanted(i, tile.offset_of, op)
        if w is None:
            return None
        addr, used = w
        out.append((op.name, np.where(used, addr, ins.addrs)))
    return out


def diagnose(launch: Launch, an: Analysis, bad: BadMma, suspects: list, e: int, u: int) -> None:
    """Fill ``bad``'s findings, report and verification (module docstring)."""
    t = launch.tracing
    ev = t.events[e]
    if bad.kind == "coverage":
        bad.findings = [Finding("k coverage", "each mma must sum a k block of its own: check the k loop's bounds "
                                "and the k offset each k step adds to A's and B's addresses")]
        bad.verification = ("the fix is in the kernel's k loop (its bounds or the offsets it adds), address "
                            "arithmetic fragsim cannot rewrite in a PTX kernel")
        return
    if ev.threads != WARP_LANES:
        return diagnose_wgmma(launch, an, bad, suspects, e, u)
    if not suspects:
        if bad.kind == "store":
            store_findings(bad)
        return
    runs = follow(launch, e, u)
    why_not = ""
    for sus in suspects:
        got, why = diagnose_loads(launch, sus, runs, e)
        if got is None:
            why_not = why_not or why
            continue
        report, tile, org, recs, regmap = got
        if not report.findings or all(f.kind == "unexplained" for f in report.findings):
            why_not = why_not or "fragsim check names no known mistake in the loads"
            if bad.kind == "operand" and bad.operand == sus.operand and bad.report is None:
                bad.report, bad.findings = report, list(report.findings)
            continue
        adopt(bad, sus, ev, report, tile, org, recs)
        verify_loads(launch, bad, sus, report, tile, recs, e, u)
        return
    if bad.kind == "store":
        store_findings(bad)
        return
    bad.verification = f"no diagnosis: {why_not}" if why_not else ""


def adopt(bad: BadMma, sus: Suspect, ev, report, tile, org, recs) -> None:
    """``bad`` becomes the report of ``sus`` (another operand than first shown, or the operand that
    explains D's stores) with the checker's findings."""
    if bad.kind == "store" or bad.operand != sus.operand:
        els, lanes, regs = elements(ev, sus.operand, sus.want, sus.got)
        lead = f"operand {sus.operand}: {sus.why}"
        if bad.kind == "store":
            lead = f"{bad.what}: operand {sus.operand} explains it: {sus.why}"
        bad.kind, bad.operand, bad.what, bad.elements, bad.lanes, bad.registers = \
            "operand", sus.operand, lead, els, lanes, regs
        bad.want, bad.got = sus.want, sus.got
    bad.findings = list(report.findings)
    bad.findings.append(Finding("context", context(sus.operand, recs, tile, org)))
    report.title = f"mma at line {bad.line}, CTA ({bad.cta[0]},{bad.cta[1]},{bad.cta[2]}) warp {bad.warp}: {report.title}"
    bad.report = report


def context(op: str, recs: list, tile, org: tuple) -> str:
    """What the checker's words refer to: its loads as PTX lines, its tile as the matrix."""
    names = {"A": ("row", "k"), "B": ("k", "n")}[op]
    loads = "; ".join(f"load {i} is line {x.line}{' (' + x.source + ')' if x.source else ''} ({x.op})"
                      for i, x in enumerate(recs))
    return (f"the checker's {loads}; its tile is {op} in shared memory, {tile.describe()}: tile(r, c) is "
            f"{op}({names[0]} {org[0]} + r, {names[1]} {org[1]} + c)")


def verify_loads(launch: Launch, bad: BadMma, sus: Suspect, report, tile, recs, e: int, u: int) -> None:
    fix = fixed_loads(report, tile)
    if fix is None:
        bad.verification = "no corrected loads follow from the tile (the checker's fix is on the tile's side)"
        return
    fixes: dict = {}
    for rec, f in zip(recs, fix):
        fixes.setdefault((rec.line, rec.occurrence), []).append(f)
    runs = follow(launch, e, u, fixes=fixes)
    got = decoded(launch, runs, sus.operand, sus.operand)
    if got is None:
        bad.verification = "the re-run with the fix did not reach the mma"
        return
    ok = np.array_equal(np.where(np.asarray((got >= 0).all(-1))[..., None], got, -1), sus.want)
    bad.verified = bool(ok)
    bad.verification = (f"re-running CTA ({bad.cta[0]},{bad.cta[1]},{bad.cta[2]}) with the loads at "
                        f"{', '.join(dict.fromkeys(f'line {r.line}' for r in recs))} corrected as the diagnosis says "
                        f"({', '.join(dict.fromkeys(op for op, _ in fix))} at the addresses the tile needs), the mma at line "
                        f"{bad.line} receives {'exactly' if ok else 'still not'} the elements of {sus.operand} it should")


def store_findings(bad: BadMma) -> None:
    """D lands elsewhere and no operand explains it: the stores' mistake, in the checker's words."""
    from fragsim.check.diagnose import Diagnosis

    shifts: dict = {}
    lost = []
    for el in bad.elements:
        if el.got is None:
            lost.append(el)
            continue
        shifts.setdefault((el.got[0] - el.want[0], el.got[1] - el.want[1]), []).append(el)
    out = []
    if shifts and all(el.got == (el.want[1], el.want[0]) for v in shifts.values() for el in v) and not lost:
        out.append(Finding("transposed", "the stores write D transposed: D(c,r) where D(r,c) belongs (row and "
                           "column swapped in the store address)"))
    else:
        for (dr, dc), els in sorted(shifts.items(), key=lambda x: -len(x[1])):
            regs = sorted({el.register.split(" ")[0] for el in els})
            held = f"D({'r' + format(dr, '+d') if dr else 'r'},{'c' + format(dc, '+d') if dc else 'c'})"
            out.append(Finding("offset", f"{Diagnosis.shift_name(dr, dc)}: {', '.join(regs)} land at {held} where "
                               f"D(r,c) belongs"))
        if lost:
            out.append(Finding("lost", f"{len(lost)} D elements are never stored (or overwritten), e.g. "
                               f"{lost[0].register} of lane {lost[0].lane}"))
    bad.findings = out
    bad.verification = ("the fix is in the epilogue's global store addresses, which fragsim cannot rewrite in a PTX "
                        "kernel (fragsim check verifies shared-memory stores only)")


# ---------------------------------------------------------------------------------------------
# wgmma: the descriptors

def diagnose_wgmma(launch: Launch, an: Analysis, bad: BadMma, suspects: list, e: int, u: int) -> None:
    from fragsim.check.wgmma import check_wgmma

    t = launch.tracing
    ev = t.events[e]
    form = ev.form
    if not suspects:
        if bad.kind == "store":
            store_findings(bad)
        return
    runs = follow(launch, e, u)
    if runs[-1][1].found is None:
        bad.verification = "no diagnosis: the re-run of the CTA did not reach the wgmma"
        return
    why_not = ""
    for sus in suspects:
        op = sus.operand
        f0 = runs[-1][1].found
        if op == "A" and f0["desc"]["A"] is None:
            why_not = why_not or "A comes from registers, not through a descriptor"
            continue
        coords = decoded(launch, runs, op, lambda f: f.found["smem"])
        if coords is None:
            continue
        eb = form.fmt(op).storage_bits // 8
        # the (MN, K) view check_wgmma takes: A (row, k), B (n, k)
        view = coords if op == "A" else coords[..., ::-1]
        want = sus.want if op == "A" else sus.want.swapaxes(0, 1)[..., ::-1]
        need = want.reshape(-1, 2)
        need = need[(need >= 0).all(-1)]
        fitted = fit_tile(view.reshape(-1, 2), eb, need, tile_dtype(form, op))
        if fitted is None:
            why_not = why_not or (f"{op}'s elements do not sit in shared memory as one tile (lines at one pitch, with "
                                  "an XOR swizzle at most)")
            continue
        tile, (R0, C0) = fitted
        at = (int(need[:, 0].min()) - R0, int(need[:, 1].min()) - C0)
        desc = int(f0["desc"][op])
        major = f0["major"][op]
        descs, at0, step = steps_of(f0, op, tile, at, form.shape[2])
        try:
            report = check_wgmma(form.name, op, tile, descs if len(descs) > 1 else desc, major=major, at=at0,
                                 steps=len(descs))
        except ValueError as err:
            why_not = why_not or f"fragsim check refuses the descriptor: {err}"
            continue
        if report.ok:
            why_not = why_not or "the descriptor reads the tile right"
            continue
        if bad.kind == "store" or bad.operand != op:
            els, lanes, regs = elements(ev, op, sus.want, sus.got)
            bad.kind, bad.operand, bad.what, bad.elements, bad.lanes, bad.registers = \
                "operand", op, f"operand {op}: {sus.why}", els, lanes, regs
            bad.want, bad.got = sus.want, sus.got
        rows = "row" if op == "A" else "n"
        bad.findings = list(report.findings) + [Finding("context", (
            f"the checker's k-steps are this warpgroup's wgmma's into the same accumulators (this one is k-step "
            f"{step}); its tile is {op} in shared memory, {tile.describe()}: tile(r, c) is {op}({rows} {R0} + r, "
            f"k {C0} + c)"))]
        report.title = (f"wgmma at line {bad.line}, CTA ({bad.cta[0]},{bad.cta[1]},{bad.cta[2]}) warps {bad.warp}-"
                        f"{bad.warp + 3}: {report.title}")
        bad.report, bad.tile = report, tile
        if report.fix is None:
            bad.verification = "the checker finds no descriptor that reads this tile"
            return
        fixed = int(report.fix[step].encode())
        runs2 = follow(launch, e, u, descriptors={op: fixed}, majors={op: report.major})
        got = decoded(launch, runs2, op, op)
        ok = got is not None and np.array_equal(np.where(np.asarray((got >= 0).all(-1))[..., None], got, -1), sus.want)
        bad.verified = bool(ok)
        bad.verification = (f"re-running CTA ({bad.cta[0]},{bad.cta[1]},{bad.cta[2]}) with {op}'s descriptor "
                            f"{fixed:#018x}{' (major=' + repr(report.major) + ')' if report.major != major else ''}, "
                            f"the wgmma at line {bad.line} reads {'exactly' if ok else 'still not'} the elements of "
                            f"{op} it should")
        return
    if bad.kind == "store":
        store_findings(bad)
        return
    bad.verification = f"no diagnosis: {why_not}" if why_not else ""


__all__ = ["diagnose", "fit_tile", "Follow"]
