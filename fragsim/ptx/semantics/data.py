"""Moving values between registers: ``mov`` (registers, immediates, special registers, a variable's
address, and the vector forms that pack and unpack: ``mov.b64 %rd1, {%r1, %r2}``), ``cvta`` (state-space
addresses to and from generic ones) and ``activemask``."""

from __future__ import annotations

import numpy as np

from .. import ast as A
from ..op import Builder, Op
from ..state import WINDOW_BYTES, WINDOWS, PtxRuntimeError, State
from ..types import TYPES, type_of
from . import UnsupportedInstruction



def build_mov(ins: A.Instr, c: Builder) -> Op:
    t = type_of(ins.mods)
    if t is None or len(ins.operands) != 2:
        raise UnsupportedInstruction(f"{ins.text}: expected mov.TYPE d, a")
    d, a = ins.operands
    if isinstance(d, A.Vec) or isinstance(a, A.Vec):
        return _mov_vector(ins, c, t, d, a)
    read = c.reader(a, t, ins.line)
    write = c.writer(d, t, ins.line)

    def run(s: State, idx: np.ndarray) -> None:
        write(s, idx, read(s, idx))
    return Op(ins, "", run)


def _mov_vector(ins: A.Instr, c: Builder, t, d, a) -> Op:
    """``mov.b64 d, {lo, hi}`` packs (element 0 in the low bits); ``mov.b64 {lo, hi}, a`` unpacks."""
    vec = d if isinstance(d, A.Vec) else a
    n = len(vec.items)
    if t.kind != "b" or n not in (2, 4) or t.bits % n:
        raise UnsupportedInstruction(f"{ins.text}: vector mov packs 2 or 4 elements into .b32/.b64/.b128")
    part = TYPES[f"b{t.bits // n}"]
    shifts = [np.uint64(i * part.bits) for i in range(n)]
    if t.bits > 64:
        raise UnsupportedInstruction(f"{ins.text}: .b128 moves are not modelled")
    if isinstance(a, A.Vec):
        readers = [c.reader(x, part, ins.line) for x in a.items]
        write = c.writer(d, t, ins.line)

        def pack(s: State, idx: np.ndarray) -> None:
            v = np.zeros(len(idx), np.uint64)
            for r, sh in zip(readers, shifts):
                v |= r(s, idx).astype(np.uint64) << sh
            write(s, idx, v.astype(t.dtype))
        return Op(ins, "", pack)
    read = c.reader(a, t, ins.line)
    writers = [c.writer(x, part, ins.line) for x in d.items]
    mask = np.uint64((1 << part.bits) - 1)

    def unpack(s: State, idx: np.ndarray) -> None:
        v = read(s, idx).astype(np.uint64)
        for w, sh in zip(writers, shifts):
            w(s, idx, ((v >> sh) & mask).astype(part.dtype))
    return Op(ins, "", unpack)




def cvta(ins: A.Instr, c: Builder) -> Op:
    """``cvta.SPACE.size d, a`` (SPACE address -> generic) and ``cvta.to.SPACE.size d, a`` (generic ->
    SPACE); ``.shared::cta`` is ``.shared``."""
    mods = [m.split("::")[0] for m in ins.mods]
    to = "to" in mods
    spaces = [m for m in mods if m in ("global", "shared", "local", "const", "param")]
    t = type_of(ins.mods)
    if len(spaces) != 1 or t is None or t.name not in ("u32", "u64") or len(ins.operands) != 2:
        raise UnsupportedInstruction(f"{ins.text}: expected cvta{{.to}}.(global|shared|local).(u32|u64) d, a")
    space = spaces[0]
    if space not in WINDOWS:
        raise UnsupportedInstruction(f"{ins.text}: generic addresses of .{space} are not modelled")
    base = np.uint64(WINDOWS[space])
    d, a = ins.operands
    read = c.reader(a, TYPES["u64"], ins.line)
    write = c.writer(d, t, ins.line)
    line = ins.line

    def run(s: State, idx: np.ndarray) -> None:
        v = read(s, idx)
        if to:
            if space != "global":
                inside = (v >= base) & (v < base + np.uint64(WINDOW_BYTES))
                if not inside.all():
                    k = int(np.flatnonzero(~inside)[0])
                    raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: cvta.to.{space}: {int(v[k]):#x} is "
                                          f"not a generic address of .{space} memory")
            v = v - base
        else:
            v = v + base
        write(s, idx, v.astype(t.dtype))
    return Op(ins, "", run)


def activemask(ins: A.Instr, c: Builder) -> Op:
    if ins.mods != ("b32",) or len(ins.operands) != 1:
        raise UnsupportedInstruction(f"{ins.text}: expected activemask.b32 d")
    write = c.writer(ins.operands[0], TYPES["b32"], ins.line)

    def run(s: State, idx: np.ndarray) -> None:
        warps, inv = np.unique(s.warp[idx], return_inverse=True)
        bits = np.zeros(len(warps), np.uint64)
        np.bitwise_or.at(bits, inv, np.uint64(1) << s.lane[idx].astype(np.uint64))
        write(s, idx, bits[inv].astype(np.uint32))
    return Op(ins, "", run)
