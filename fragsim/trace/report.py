"""The first inconsistent mma of a trace reported (``fragsim.trace``): which mma the checks
(``fragsim.trace.checks``) find first -- fed wrongly, its D stored elsewhere, or a D element
summed over some k twice or never --, as a ``BadMma`` with its wrong elements in lane and register
order and its PTX (and CUDA) line, and the picture of its expected vs received fragment map (a
``fragsim.check`` report, drawn as the checker's).
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.ptx import ast as A

from .checks import Analysis
from .operands import operand_names, positions
from .passes import Event, Tracing
from .result import BadMma, Element
from .suspects import operand_suspects, span, store_suspects, what_is_wrong

__all__ = ["first_bad", "fragment_report", "elements"]


def source_of(module, ev: Event) -> str | None:
    """The CUDA line of the mma's PTX line (its ``.loc``), None without one."""
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
        return bad_mma(t, an, e, u, "operand", "A", None, None, what_is_wrong("A", rows, cols, ka, kb, ka)), [], e, u
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
            what = (f"D({r},{c}) is summed over {t.K - len(cov['missing'])} of K = {t.K} k: k {span(cov['missing'])} "
                    "never (this is the last mma that sums into it)")
        return bad_mma(t, an, e, u, "coverage", "D", None, None, what), [], e, u
    return None


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
