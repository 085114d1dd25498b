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
expects has arrived (all non-exited threads of the CTA, or ``b`` threads), they all go on.  When no
thread can run and some wait, the kernel has deadlocked: a ``PtxRuntimeError`` says who waits where,
never a hang; so does a kernel that runs more than ``max_steps`` steps.
"""

from __future__ import annotations

import numpy as np

from .program import Program
from .state import EXITED, RUNNING, WAITING, PtxRuntimeError, State

#: Steps (instruction executions by a group of threads) after which a run stops with an error.
MAX_STEPS = 50_000_000


def execute(program: Program, s: State, max_steps: int = MAX_STEPS) -> int:
    """Run until every thread has exited; returns the number of steps."""
    ops = program.ops
    pc, status = s.pc, s.status
    big = np.iinfo(np.int64).max
    steps = 0
    while True:
        running = status == RUNNING
        if not running.any():
            if (status == WAITING).any() and not release(program, s, force=True):
                raise PtxRuntimeError(deadlock(program, s))
            if not (status == RUNNING).any():
                return steps
            continue
        cur = int(np.where(running, pc, big).min())
        idx = np.flatnonzero(running & (pc == cur))
        op = ops[cur]
        act = idx
        if op.guard is not None:
            name, negated = op.guard
            g = s.regs[name][idx].astype(bool)
            act = idx[~g] if negated else idx[g]
            skipped = idx[g] if negated else idx[~g]
            pc[skipped] += 1
        if len(act):
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


def expected(s: State, cta: int, count: int) -> int:
    """How many threads a barrier of CTA ``cta`` waits for: ``count`` (bar.sync a, b) or every thread
    of the CTA that has not exited (exited threads count as arrived, as on the hardware)."""
    if count:
        return count
    mine = s.cta == cta
    return int((mine & s.present & (s.status != EXITED)).sum())


def release(program: Program, s: State, force: bool = False) -> bool:
    """Let every complete barrier go; returns whether any did."""
    waiting = s.status == WAITING
    if not waiting.any():
        return False
    freed = False
    keys = np.unique(np.stack([s.cta[waiting], s.barrier[waiting]]), axis=1)
    for cta, bar in keys.T:
        mine = waiting & (s.cta == cta) & (s.barrier == bar)
        count = int(s.barrier_count.get((int(cta), int(bar)), 0))
        if int(mine.sum()) >= expected(s, int(cta), count):
            s.status[mine] = RUNNING
            s.barrier[mine] = -1
            s.barrier_count.pop((int(cta), int(bar)), None)
            freed = True
    return freed


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
