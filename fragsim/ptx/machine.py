"""The scheduler: every thread of the launch runs the program, warps in lockstep.

Each thread has a PC.  At every step the machine takes the lowest PC of the running threads and runs
that instruction once for every thread there -- of every warp and CTA at once, as array operations
(``Op.run(state, idx)``).  Threads whose branches took them elsewhere wait until the lowest PC reaches
them, so a warp that diverges reconverges where its paths meet (structured code's immediate
post-dominator, which is where the hardware reconverges too), loops whose trip counts differ per
thread run until the last thread leaves, and a ``.sync`` warp instruction finds its lanes together.

The order in which independent threads' instructions interleave is fixed (lowest PC first, threads
in order within a step) and documented; a race-free kernel gives the same bits whatever the order.
Barriers (``bar.sync``/``barrier.sync``): a thread that arrives waits; when every thread the barrier
expects has arrived (all non-exited threads of the CTA, or ``b`` threads), they all go on.  Threads
in an mbarrier wait or ``barrier.cluster.wait`` are suspended until the phase completes
(``fragsim.ptx.semantics.mbarrier``), which the machine asks when no thread can run.  When no
thread can run and some wait, the kernel has deadlocked: a ``PtxRuntimeError`` says who waits where,
never a hang (with checks on, a ``deadlock`` finding: ``fragsim.ptx.checks``); so does a kernel that
runs more than ``max_steps`` steps.

Fast paths (``FAST``), none of which changes a bit or the step count: while every running thread is
at one PC (a converged warp, or a whole grid in lockstep), the machine runs on without searching or
updating the PC array, a branch whose guard is uniform just moves that PC, and a step's threads
that are one run of consecutive threads are read and written as slices (``State.set_span``); there,
consecutive ``mma.sync`` instructions that do not depend on one another run as one call of the
arithmetic (``semantics.tensor.mma_batches``), counting one step each.
"""

from __future__ import annotations

import numpy as np

from .observe import BarRelease, GuardOff
from .program import Program
from .semantics.tensor import mma_batches
from .state import BARRIERS, EXITED, RUNNING, WAITING, PtxRuntimeError, State

#: Steps (instruction executions by a group of threads) after which a run stops with an error.
MAX_STEPS = 50_000_000
#: The fast paths (see above); off, every step searches the lowest PC and indexes its threads.
FAST = True


def execute(program: Program, s: State, max_steps: int = MAX_STEPS) -> int:
    """Run until every thread has exited; returns the number of steps."""
    ops = program.ops
    pc, status = s.pc, s.status
    big = np.iinfo(np.int64).max
    # observers see every instruction on its own (batched mma would run several under one), unless
    # each says it needs no mma events (batch_mma)
    batches = mma_batches(ops) if FAST and all(getattr(o, "batch_mma", False) for o in s.observers) else {}
    steps = 0
    while True:
        running = status == RUNNING
        if not running.any():
            # mbarrier and cluster-barrier waits (semantics/mbarrier.py): their copies land, their phases
            # complete or their waits time out, or a deadlock naming the mbarrier is reported
            if s.async_units is not None and s.async_units.stalled(s):
                continue
            if (status == WAITING).any() and not release(program, s, force=True):
                if s.checker is None:
                    raise PtxRuntimeError(deadlock(program, s))
                s.checker.deadlock(program, s)          # a finding; going on, the waiting threads run
            if not (status == RUNNING).any():
                return steps
            continue
        cur = int(np.where(running, pc, big).min())
        idx = np.flatnonzero(running & (pc == cur))
        if FAST:
            s.set_span(idx)
            if len(idx) == np.count_nonzero(running):
                try:
                    cur, steps = converged(ops, batches, s, idx, cur, steps, max_steps)
                finally:
                    pc[idx] = s.pc_converged
        op = ops[cur]
        act = idx
        if op.guard is not None:
            name, negated = op.guard
            g = s.regs[name][idx].astype(bool)
            act = idx[~g] if negated else idx[g]
            skipped = idx[g] if negated else idx[~g]
            pc[skipped] += 1
            if s.observers and len(skipped):
                s.op = op
                s.emit(GuardOff(idx, off=g if negated else ~g))
        if len(act):
            s.op = op
            op.run(s, act)
        if not op.sets_pc:
            pc[act] += 1
        if op.kind in ("barrier", "exit"):
            release(program, s)
        steps += 1
        s.steps = steps
        if steps >= max_steps:
            raise PtxRuntimeError(f"stopped after {steps} steps (max_steps): at line {op.line}, "
                                  f"{len(idx)} thread(s) still running; an endless loop?")


def converged(ops: list, batches: dict, s: State, idx: np.ndarray, cur: int, steps: int,
              max_steps: int) -> tuple[int, int]:
    """Run from PC ``cur`` while every running thread (``idx``) is there: plain instructions (their
    guard may split the threads: all of them go on to the next PC anyway) and branches whose guard
    is uniform.  Returns the PC and the step count at the first instruction left to the general step
    (a barrier, exit, call, ret, or a branch that splits the threads), not yet run; the PC reached is
    also ``s.pc_converged`` (the caller writes it into the PC array, even when an instruction raises)."""
    n = len(idx)
    cols = s.cols(idx)
    views = s.views
    s.pc_converged = cur
    while True:
        op = ops[cur]
        kind = op.kind
        if (kind != "plain" or op.sets_pc) and kind != "branch":
            return cur, steps
        act: np.ndarray | None = idx
        if op.guard is not None:
            name, negated = op.guard
            g = views[name][cols]
            if g.dtype != bool:
                g = g.astype(bool)
            k = np.count_nonzero(g)
            if k == (0 if negated else n):
                pass
            elif k == (n if negated else 0):
                act = None
            elif kind == "branch":
                return cur, steps
            else:
                act = idx[~g] if negated else idx[g]
            if s.observers and act is not idx:
                s.op = op
                s.emit(GuardOff(idx, off=g if negated else ~g))
        if kind == "branch":                     # a branch moves its threads to its target, nothing else
            cur = op.target if act is not None else cur + 1
        else:
            batch = batches.get(cur) if act is idx else None
            if batch is not None and steps + batch.count < max_steps and batch.run(s, idx):
                cur += batch.count
                steps += batch.count - 1
            else:
                if act is not None:
                    s.op = op
                    op.run(s, act)
                cur += 1
        steps += 1
        s.steps = steps
        s.pc_converged = cur
        if steps >= max_steps:
            raise PtxRuntimeError(f"stopped after {steps} steps (max_steps): at line {op.line}, "
                                  f"{n} thread(s) still running; an endless loop?")


def expected(s: State, cta: int, count: int) -> int:
    """How many threads a barrier of CTA ``cta`` waits for: ``count`` (bar.sync a, b) or every thread
    of the CTA that has not exited (exited threads count as arrived, as on the hardware)."""
    if count:
        return count
    mine = s.cta == cta
    return int((mine & s.present & (s.status != EXITED)).sum())


def release(program: Program, s: State, force: bool = False) -> bool:
    """Let every complete barrier go; returns whether any did.  A barrier completes when the threads
    waiting at it and those that passed it by ``bar.arrive`` (``State.barrier_arrivals``) number what
    it expects."""
    waiting = np.flatnonzero(s.status == WAITING)
    if not len(waiting) and not s.barrier_arrivals:
        return False
    bars = BARRIERS
    key = s.cta[waiting] * bars + s.barrier[waiting]            # (CTA, barrier) of each waiting thread
    arrived = np.bincount(key, minlength=len(s.geometry.ctas) * bars)
    for (cta, bar), n in s.barrier_arrivals.items():
        arrived[cta * bars + bar] += n
    live = np.bincount(s.cta[s.present & (s.status != EXITED)], minlength=len(s.geometry.ctas))
    need = np.repeat(live, bars)                                # expected(): every thread not exited ...
    for (cta, bar), count in s.barrier_count.items():
        if count:                                               # ... or the b of bar.sync a, b
            need[cta * bars + bar] = count
    free = (arrived > 0) & (arrived >= need)
    if not free.any():
        return False
    go = waiting[free[key]]
    if s.observers and len(go):
        s.emit(BarRelease(go))                  # s.barrier[go] still names their barriers
    s.status[go] = RUNNING
    s.barrier[go] = -1
    for k in np.flatnonzero(free).tolist():
        s.barrier_count.pop((k // bars, k % bars), None)
        s.barrier_arrivals.pop((k // bars, k % bars), None)
    return True


def deadlock(program: Program, s: State) -> str:
    """Who waits where, for the error of a kernel that cannot go on."""
    waiting = s.status == WAITING
    t = int(np.flatnonzero(waiting)[0])
    cta, bar = int(s.cta[t]), int(s.barrier[t])
    mine = waiting & (s.cta == cta) & (s.barrier == bar)
    count = s.barrier_count.get((cta, bar), 0)
    line = program.ops[int(s.pc[t]) - 1].line
    exited = int(((s.cta == cta) & (s.status == EXITED) & s.present).sum())
    return (f"deadlock: line {line}: {s.where(t).split(' thread')[0]}: {int(mine.sum())} thread(s) wait at "
            f"barrier {bar}, which expects {expected(s, cta, count)}; {exited} thread(s) of the CTA have exited "
            "and no other thread can run")
