"""Control flow: ``bra``, ``bar.sync``/``barrier.sync``/``bar.arrive``, ``exit``, ``ret``, ``call``, and
the instructions with no effect on data here (``membar``, ``fence``, ``nanosleep``, ``pmevent``).

Branches set each thread's PC (threads of one warp may go different ways: the scheduler reconverges
them).  ``call`` copies the argument bytes into the callee's parameters, pushes the return PC and
jumps; ``ret`` pops it and copies the callee's return parameter back into the call's result, or, in
the kernel, exits.  A barrier makes its threads wait until the threads it expects have arrived
(``fragsim.ptx.machine.release``).
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.ranges import format_ranges

from .. import ast as A
from ..observe import BarArrive, WarpSync
from ..op import TRAPPING_EXTERNS, Builder, Op, PtxLoadError
from ..state import BARRIERS, EXITED, WAITING, PtxRuntimeError, State
from ..types import TYPES
from . import UnsupportedInstruction


U32 = TYPES["u32"]


def bra(ins: A.Instr, c: Builder) -> Op:
    if not ins.operands or not isinstance(ins.operands[0], A.Label):
        raise UnsupportedInstruction(f"{ins.text}: expected a label (brx.idx tables are not modelled)")
    target = c.label(ins.operands[0].name, ins.line)

    def run(s: State, idx: np.ndarray) -> None:
        s.pc[idx] = target
    return Op(ins, "", run, sets_pc=True, kind="branch", target=target)


def build_exit(ins: A.Instr, c: Builder) -> Op:
    def run(s: State, idx: np.ndarray) -> None:
        s.status[idx] = EXITED
    return Op(ins, "", run, kind="exit")


def build_barrier(ins: A.Instr, c: Builder) -> Op:
    """bar{.cta}.sync / barrier{.cta}.sync{.aligned} a{, b}; bar.arrive a, b (arrives, does not wait)."""
    if ins.mods[:1] == ("warp",):
        return _warp_barrier(ins, c)
    mods = [m for m in ins.mods if m not in ("cta", "aligned")]
    if not mods or mods[0] not in ("sync", "arrive") or len(mods) > 1:
        raise UnsupportedInstruction(f"{ins.text}: only bar.sync/barrier.sync and bar.arrive are modelled "
                                     "(bar.red is not)")
    arrive = mods[0] == "arrive"
    ops = ins.operands
    if not ops or len(ops) > 2:
        raise PtxLoadError(f"line {ins.line}: {ins.text} takes a barrier and an optional thread count")
    bar = c.reader(ops[0], U32, ins.line)
    count = c.reader(ops[1], U32, ins.line) if len(ops) == 2 else None
    line = ins.line

    def run(s: State, idx: np.ndarray) -> None:
        b = bar(s, idx).astype(np.int64)
        n = count(s, idx).astype(np.int64) if count is not None else np.zeros(len(idx), np.int64)
        if (b >= BARRIERS).any():
            k = int(np.flatnonzero(b >= BARRIERS)[0])
            raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: barrier {int(b[k])} (there are {BARRIERS}, "
                                  f"0..{BARRIERS - 1})")
        if (b == b[0]).all() and (n == n[0]).all():        # one barrier and count: each CTA once
            uses = [(cta, int(b[0]), int(n[0])) for cta in np.flatnonzero(np.bincount(s.cta[s.cols(idx)])).tolist()]
        else:
            uses = sorted(set(zip(s.cta[idx].tolist(), b.tolist(), n.tolist())))
        for cta, bb, nn in uses:
            key = (cta, bb)
            if s.barrier_count.get(key, nn) != nn:
                raise PtxRuntimeError(f"line {line}: barrier {bb} of CTA {s.geometry.ctas[cta]} is used with thread "
                                      f"counts {s.barrier_count[key]} and {nn} at once")
            s.barrier_count[key] = nn
        if s.observers:
            s.emit(BarArrive(idx, barrier=b, count=n, wait=not arrive))
        cols = s.cols(idx)
        s.pc[cols] += 1
        if arrive:                  # counted toward the barrier's completion (machine.release)
            keys, counts = np.unique(s.cta[cols] * BARRIERS + b, return_counts=True)
            for k, c in zip(keys.tolist(), counts.tolist()):
                ab = (k // BARRIERS, k % BARRIERS)
                s.barrier_arrivals[ab] = s.barrier_arrivals.get(ab, 0) + c
        else:
            s.status[cols] = WAITING
            s.barrier[cols] = b
    return Op(ins, "", run, sets_pc=True, kind="barrier")


def _warp_barrier(ins: A.Instr, c: Builder) -> Op:
    """bar.warp.sync membermask (__syncwarp): the member lanes of the warp meet.  Lanes of a warp run in
    lockstep here, so when every member lane that has not exited is at this instruction it orders
    nothing more; member lanes elsewhere (a diverged warp) are not modelled and stop the run."""
    if len(ins.operands) != 1:
        raise PtxLoadError(f"line {ins.line}: {ins.text} takes the member mask")
    mask = c.reader(ins.operands[0], U32, ins.line)
    line = ins.line

    def run(s: State, idx: np.ndarray) -> None:
        m = mask(s, idx).astype(np.uint64)
        here = np.zeros(s.geometry.slots, bool)
        here[idx] = True
        lanes = np.arange(WARP_LANES, dtype=np.uint64)
        for w in np.unique(s.warp[idx]):
            t = w * WARP_LANES + np.arange(WARP_LANES)
            mine = s.warp[idx] == w
            bits = m[mine]
            if (bits != bits[0]).any():
                s.fault("divergent", idx, mine & (m != bits[0]), line,
                        lambda k, first=int(bits[0]): f"bar.warp.sync with different member masks in one warp "
                                  f"({first:#x} and {int(m[k]):#x})")
            member = ((bits[0] >> lanes) & np.uint64(1)).astype(bool) & s.present[t] & (s.status[t] != EXITED)
            away = member & ~here[t]
            if away.any():          # the checks go on as if the warp had met
                s.fault("divergent", t, away, line,
                        lambda k, away=away: f"bar.warp.sync while member lanes "
                                  f"{format_ranges(np.flatnonzero(away).tolist())} of the warp are elsewhere (a "
                                  "diverged __syncwarp is not modelled)")
        if s.observers:
            s.emit(WarpSync(idx))
    return Op(ins, "", run)


def build_call(ins: A.Instr, c: Builder) -> Op:
    ops = list(ins.operands)
    rets = ops.pop(0).items if ops and isinstance(ops[0], A.ParamList) else ()
    target = ops.pop(0)
    if not isinstance(target, (A.Label, A.Symbol)):
        raise UnsupportedInstruction(f"{ins.text}: indirect calls are not modelled")
    args = ops[0].items if ops and isinstance(ops[0], A.ParamList) else ()
    callee = c.module.functions[c.module.aliases.get(target.name, target.name)]
    if not callee.defined and callee.name in TRAPPING_EXTERNS:
        return _assertfail(ins, c, args)
    if len(args) != len(callee.params) or len(rets) != len(callee.returns):
        raise PtxLoadError(f"line {ins.line}: call of {callee.name} with {len(args)} argument(s) and {len(rets)} "
                           f"result(s); it takes {len(callee.params)} and {len(callee.returns)}")
    L = c.layout
    base = L.kernel_param_bytes

    def offsets(names, params, side) -> list[tuple[int, int, int]]:
        out = []
        for o, p in zip(names, params):
            if not isinstance(o, (A.Symbol, A.Reg)):
                raise PtxLoadError(f"line {ins.line}: call {side} {o!r} must be a .param variable")
            space, off = c.symbol(o.name, ins.line)
            if space != "param":
                raise PtxLoadError(f"line {ins.line}: call {side} {o.name} is not a .param variable")
            size = (TYPES[p.type].bytes if p.type in TYPES else 8) * (p.count or 1)
            out.append((off - base, L.thread_params[f"{callee.name}::{p.name}"], size))
        return out

    copy_in = offsets(args, callee.params, "argument")
    copy_out = offsets(rets, callee.returns, "result")
    start = c.starts[callee.name]

    def run(s: State, idx: np.ndarray) -> None:
        for src, dst, size in copy_in:
            s.pmem[idx[:, None], dst + np.arange(size)] = s.pmem[idx[:, None], src + np.arange(size)]
        d = s.depth[idx]
        if s.stack.shape[1] <= d.max(initial=0):
            s.stack = np.concatenate([s.stack, np.zeros((s.stack.shape[0], 1), np.int64)], axis=1)
        s.stack[idx, d] = s.pc[idx] + 1
        s.depth[idx] = d + 1
        s.pc[idx] = start
    return Op(ins, "", run, sets_pc=True, kind="call", target=start, extra={"copy_out": copy_out})


#: Bytes of an assertion's message shown at most.
ASSERT_MESSAGE_BYTES = 200


def _assertfail(ins: A.Instr, c: Builder, args) -> Op:
    """``call __assertfail, (message, file, line, function, size)``: the kernel's ``assert`` failed; the
    hardware prints the message and aborts the launch, so the run stops with it."""
    if len(args) < 3:
        raise PtxLoadError(f"line {ins.line}: call of __assertfail with {len(args)} argument(s); it takes 5")
    offs = []
    for o in args[:3]:
        space, off = c.symbol(o.name, ins.line) if isinstance(o, (A.Symbol, A.Reg)) else (None, 0)
        if space != "param":
            raise PtxLoadError(f"line {ins.line}: call argument {o!r} must be a .param variable")
        offs.append(off - c.layout.kernel_param_bytes)
    line = ins.line

    def text(s: State, t: int, off: int) -> str:
        addr = int(s.pmem[t, off:off + 8].view(np.uint64)[0])
        out = bytearray()
        try:
            while len(out) < ASSERT_MESSAGE_BYTES:
                b = int(s.load(None, np.array([addr + len(out)], np.uint64), 1, np.array([t]), line)[0, 0])
                if b == 0:
                    break
                out.append(b)
        except PtxRuntimeError:
            return "?"
        return out.decode("utf-8", "replace")

    def run(s: State, idx: np.ndarray) -> None:
        t = int(idx[0])
        at = int(s.pmem[t, offs[2]:offs[2] + 4].view(np.uint32)[0])
        raise PtxRuntimeError(f"line {line}: {s.where(t)}: assertion failed ({text(s, t, offs[1])}:{at}): "
                              f"{text(s, t, offs[0])}")
    return Op(ins, "", run)


def build_ret(ins: A.Instr, c: Builder) -> Op:
    def run(s: State, idx: np.ndarray) -> None:
        d = s.depth[idx]
        top = d == 0
        if top.any():                       # ret in the kernel itself ends the thread
            s.status[idx[top]] = EXITED
            s.pc[idx[top]] += 1
        inner = idx[~top]
        if not len(inner):
            return
        depth = s.depth[inner] - 1
        back = s.stack[inner, depth]
        s.depth[inner] = depth
        for rp in np.unique(back):
            sel = inner[back == rp]
            call = s.program.ops[int(rp) - 1]
            for dst, src, size in call.extra["copy_out"]:
                s.pmem[sel[:, None], dst + np.arange(size)] = s.pmem[sel[:, None], src + np.arange(size)]
        s.pc[inner] = back          # the call op before each return PC holds its result copies
    return Op(ins, "", run, sets_pc=True, kind="ret")


def nothing(ins: A.Instr, c: Builder) -> Op:
    """No effect on data in a simulation that runs every access in program order."""
    return Op(ins, "", lambda s, idx: None)


def trap(ins: A.Instr, c: Builder) -> Op:
    line = ins.line

    def run(s: State, idx: np.ndarray) -> None:
        raise PtxRuntimeError(f"line {line}: {s.where(int(idx[0]))}: trap (the kernel aborts)")
    return Op(ins, "", run)
