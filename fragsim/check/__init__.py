"""Verify hand-written address math: ``check_load``, ``check_store``, ``check_copy``.

Every element of the tile is tagged with its own (row, col); the user's instructions run on it
through fragsim's shared-memory simulator (and, with ``gpu=True``, on the GPU); the registers
are decoded through the mma form's fragment map and compared with what ``fragsim.pack`` would
put there (loads), or shared memory with where the tile says each element lives (stores, copies).
The report says ``ok``, lists the ``mismatches``, gives a ``diagnosis`` (the mistake by name and
its fix, each fix checked by running it) and the bank ``conflicts`` of every instruction.

Modules: ``program`` (the instructions and their addresses), ``fragments`` (which register is
which fragment element), ``machine`` (tags, running, decoding), ``runs`` (the three checks as
programs, element by element), ``diagnose`` and ``layouts`` (the diagnosis), ``report``,
``gpu`` (the same program on a GPU, or a recorded run).
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from . import fragments as F
from . import program as P
from .diagnose import Diagnosis
from .machine import Simulator, problem
from .report import CheckReport, GpuVerdict, Mismatch
from .runs import LOST, NONE, NOT_RUN, CopyRun, LoadRun, StoreRun

__all__ = ["check_load", "check_store", "check_copy", "CheckReport", "Mismatch", "GpuVerdict"]


def _tile(tile, what: str):
    from fragsim.layout.tile import Tile

    if isinstance(tile, str):
        tile = Tile.parse(tile)
    if not isinstance(tile, Tile):
        raise TypeError(f"tile must be a fragsim.Tile or a tile spec such as '128x32 bf16 swizzle=2,4,3', "
                        f"got {type(tile).__name__}")
    return tile.shared_only(what)


def check_load(form, operand, tile, loads, *, variables=None, at=None, fragments=None, regmap=None,
               gpu=False) -> CheckReport:
    """Do ``loads`` fill the ``operand`` fragments of ``form`` from ``tile``?

    ``loads``: a list of ``(op, addrs)`` (``(op, addrs, mask)`` for ``ld.shared``): ``op`` an
    ``ldmatrix`` or ``ld.shared`` spelling, ``addrs`` 32 byte addresses, a C address expression in
    ``lane`` and ``variables`` (a dict of ints), or a callable of the lane.  Their registers, in
    order, fill whole fragments: by default fragment 0 at ``at`` (tile row, col; default (0, 0)),
    the next ones one fragment further along A's M or B's and C's N (one ``ldmatrix.x4`` of B fills
    two n-tiles); ``fragments=[(row, col), ...]`` places each, ``regmap=[(fragment, register), ...]``
    says which fragment register each loaded register is.  ``gpu``: also run the loads on this
    machine's GPU (True) or replay a recorded run (``fragsim.check.gpu.Recorded``).
    """
    t = _tile(tile, "check_load")
    instrs = P.instructions(loads, "load", variables)
    fr = F.build(form, operand, t, sum(i.nbytes for i in instrs), at=at, fragments=fragments, regmap=regmap,
                 env=variables)
    title = (f"load of operand {fr.operand} of {fr.form.ptx} from {t.describe()}")
    return _check("load", title, t, instrs, lambda tt, ii: LoadRun(tt, ii, fr), _layout(instrs, fr), gpu)


def check_store(form, operand, tile, stores, *, variables=None, at=None, fragments=None, regmap=None,
                gpu=False) -> CheckReport:
    """Do ``stores`` (``stmatrix`` or ``st.shared``) put the C/D fragments of ``form`` where ``tile``
    says?  ``operand`` is "C" (or "D"); a tile of 16-bit elements takes the 16-bit accumulator map
    of the form's shape (f32 accumulators converted before the store).  The other arguments are
    ``check_load``'s: the stores' registers, in order, are whole fragments at ``at`` / ``fragments``.
    """
    t = _tile(tile, "check_store")
    instrs = P.instructions(stores, "store", variables)
    fr = F.build(form, operand, t, sum(i.nbytes for i in instrs), at=at, fragments=fragments, regmap=regmap,
                 env=variables, store=True)
    title = f"store of operand C of {fr.form.ptx} into {t.describe()}"
    return _check("store", title, t, instrs, lambda tt, ii: StoreRun(tt, ii, fr), _layout(instrs, fr), gpu)


def check_copy(tile, copies, *, variables=None, threads=None, global_pitch=None, source=None,
               gpu=False) -> CheckReport:
    """Does a CTA's global -> shared fill write every element of ``tile`` exactly once, where the
    tile (its swizzle included) says?

    ``copies``: a list of ``(op, dst[, src[, mask]])`` with ``op`` a ``cp.async`` or
    ``st.shared`` spelling, ``dst`` each lane's shared-memory address and ``src`` each lane's
    global byte offset into the source matrix, stored line by line like the tile with
    ``global_pitch`` bytes between lines (default: the tile's line), or as ``source`` says: the same
    matrix as a global tile, ``Tile(rows, cols, dtype, order, pitch=..., space="global")``.  Without ``src`` the k-th
    instruction's lane l copies chunk ``32 * k + l`` of the dense matrix (CUTLASS's thread t, chunk
    ``t + pass * threads``).  ``variables`` may give a name several values (``{"pass": range(4)}``):
    one instruction per combination, in order; ``threads`` adds the warps of the CTA (innermost) and
    the variables ``warp`` and ``tid = 32 * warp + lane``.  ``mask``: active lanes (an int bit mask or
    a C condition such as ``"tid < 16"``).
    """
    t = _tile(tile, "check_copy")
    instrs = P.instructions(copies, "copy", variables, threads)
    if source is not None and global_pitch is not None:
        raise ValueError("check_copy: give the source's pitch once, as global_pitch or as source's pitch")
    if source is not None:
        gp = _source_pitch(source, t)
    else:
        gp = t.line_bytes if global_pitch is None else _global_pitch(global_pitch, t)
    run = CopyRun(t, instrs, gp)
    given = any(i.src is not None for i in instrs)
    layout = [f"{len(instrs)} instruction{'s' * (len(instrs) > 1)} ({', '.join(sorted({i.op.name for i in instrs}))})"
              + (f" by {threads} threads" if threads else "")
              + (f"; sources: offsets into the global matrix, {gp} bytes per {t.order}" if given else
                 "; sources: chunk 32*k + lane of the dense matrix (no src given)")]
    title = f"copy into {t.describe()}"
    return _check("copy", title, t, instrs, lambda tt, ii: CopyRun(tt, ii, gp), layout, gpu, run)


def _global_pitch(value, tile) -> int:
    from fragsim import validate

    gp = validate.integer(value, "global_pitch", hint="bytes between two lines of the global source matrix")
    if gp < tile.line_bytes:
        raise ValueError(f"global_pitch {gp} is smaller than a {tile.order} of the tile ({tile.line_bytes} bytes)")
    if gp * tile.lines >= 1 << 62:        # the bank model's bound on a global source address
        raise ValueError(f"global_pitch {gp}: {tile.lines} lines of the source matrix would pass 2**62 bytes")
    return gp


def _source_pitch(source, tile) -> int:
    """The global pitch of check_copy's ``source``: the tile's matrix in global memory."""
    from fragsim.layout.tile import Tile

    if isinstance(source, str):
        try:
            source = Tile.parse(source)
        except ValueError as e:
            raise ValueError(f"source: {e}") from None
    if not isinstance(source, Tile):
        raise TypeError(f"source must be a fragsim.Tile in global memory, got {type(source).__name__}")
    if source.space != "global":
        raise ValueError(f"source {source!r} is a shared-memory tile; the copies' source is global: "
                         "Tile(..., space='global')")
    if (source.rows, source.cols, source.dtype, source.order) != (tile.rows, tile.cols, tile.dtype, tile.order):
        raise ValueError(f"source {source!r} is not the tile's matrix ({tile.rows}x{tile.cols} {tile.dtype}, "
                         f"{tile.order} order): the copies move that matrix from global to shared memory")
    return _global_pitch(source.pitch, tile)


def _layout(instrs, fr) -> list[str]:
    lines = []
    b = 0
    for ins in instrs:
        lo, hi = b // 4, (b + ins.nbytes - 1) // 4
        if ins.nbytes < 4:
            regs = f"r{lo} bytes {b % 4}-{b % 4 + ins.nbytes - 1}"
        else:
            regs = f"r{lo}" if lo == hi else f"r{lo}-r{hi}"
        lines.append(f"{ins.describe()}: {regs} <- {ins.text}")
        b += ins.nbytes
    return lines + fr.describe()


def _run(run, instrs, machine):
    mem, pays = run.program()
    outs, after = machine.run(instrs, mem, pays)
    return (mem, pays), (outs, after)


def _check(kind, title, tile, instrs, make, layout, gpu, run=None) -> CheckReport:
    run = run if run is not None else make(tile, instrs)
    (mem, pays), (outs, after) = _run(run, instrs, Simulator())
    ev = run.decode(outs, after)

    def recheck(tile=tile, instrs=instrs) -> bool:
        r = make(tile, instrs)
        _, (o, a) = _run(r, instrs, Simulator())
        return r.decode(o, a).ok

    report = CheckReport(kind, title, ev.ok, int(ev.want.size), _mismatches(ev), [], _conflicts(instrs, run),
                         layout, instrs, evidence=ev)
    report.findings = Diagnosis(ev, recheck, lambda n: [str(m) for m in report.first(n)]).findings()
    if gpu is not False and gpu is not None:
        from .gpu import verdict

        report.gpu = verdict(gpu, run, instrs, mem, pays, outs, after)
    return report


def _mismatches(ev) -> list[Mismatch]:
    out = []
    t = ev.tile
    epr = ev.frags.epr if ev.frags is not None else 1
    for k in np.flatnonzero(ev.bad):
        g, w = int(ev.got[k]), int(ev.want[k])
        i = int(ev.instr[k])
        ins = ev.instrs[i]
        lane = int(ev.lane[k])
        why = ""
        if g == NOT_RUN:
            why = f"is not {'loaded' if ev.kind == 'load' else 'written'} ({ins.describe()} cannot run)"
        elif g == LOST:
            why = "is lost (a later write overwrote it)"
        elif g == NONE and ev.kind == "load":
            why = ("is not loaded (the lane is masked off)" if not ins.mask[lane] else
                   f"holds no tile element (read at {_hex(ev.address[k])})")
        addr = int(ev.address[k]) if g == NONE and ev.kind != "load" else None
        reg = int(ev.reg[k]) if ev.reg[k] >= 0 else None
        out.append(Mismatch(ev.kind, lane, i, divmod(w, t.cols), divmod(g, t.cols) if g >= 0 else None,
                            reg, int(ev.half[k]) if reg is not None else None, epr,
                            int(ev.frags.regmap[reg, 0]) if reg is not None and ev.frags is not None else None,
                            addr, why))
    return out


def _hex(v) -> str:
    from fragsim import validate

    return validate.hex_int(int(v))


def _conflicts(instrs, run) -> list:
    from fragsim.banks import bank_conflicts

    out: list = []
    for i, ins in enumerate(instrs):
        if problem(ins):
            out.append(None)
            continue
        o = ins.op
        mask = None if o.kind in ("ldsm", "stsm") else int(np.sum(ins.mask.astype(np.int64) << np.arange(WARP_LANES)))
        src = None
        if o.family == "cp.async":
            s = run.sources[i] if isinstance(run, CopyRun) else None
            src = s if s is not None and (s >= 0).all() else None
        try:
            out.append(bank_conflicts(o, ins.addrs, mask, src))
        except ValueError:
            out.append(None)
    return out
