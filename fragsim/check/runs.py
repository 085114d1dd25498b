"""The three checks as programs on a tagged tile, and what their results say element by element.

A *slot* is one element an instruction moves for one lane: a register element of a load (what it
holds) or of a store (where it lands), or an element a copy brings from global memory (where it
lands).  Each slot has the tile element it must be (``want``) and the one it is (``got``: the
element a load received, the element whose place a stored or copied element took), or a reason
why it is none of them (``NONE``: no tile element there; ``NOT_RUN``: its instruction cannot run;
``LOST``: a later write overwrote it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions.shared_op import SharedOp
from fragsim.layout.tile import Tile
from . import machine as M
from .fragments import Fragments
from .program import Instr

NONE, NOT_RUN, LOST = -1, -2, -3


@lru_cache(maxsize=None)
def byte_sources(op: SharedOp) -> tuple[np.ndarray, np.ndarray]:
    """For each (lane, byte) an instruction moves: the lane whose address it uses and the offset
    from that address (ldmatrix/stmatrix: the row's lane and 2 * column + byte; others: itself)."""
    if op.movement is not None:
        src, col = op.movement.table()                    # (32, num, 2) per 16-bit half
        k = np.arange(4 * op.num)
        reg, half, b = k // 4, (k % 4) // 2, k % 2
        s = src[:, reg, half]
        d = 2 * col[:, reg, half] + b
    else:
        nb = op.bytes_per_addr
        s = np.broadcast_to(np.arange(WARP_LANES)[:, None], (WARP_LANES, nb))
        d = np.broadcast_to(np.arange(nb), (WARP_LANES, nb))
    out = (np.ascontiguousarray(s, dtype=np.int64), np.ascontiguousarray(d, dtype=np.int64))
    for x in out:
        x.setflags(write=False)
    return out


def byte_addresses(ins: Instr) -> np.ndarray:
    """int64 (32, nbytes): the shared-memory address of every byte the instruction moves per lane."""
    s, d = byte_sources(ins.op)
    return ins.addrs[s] + d


@dataclass
class Evidence:
    """What a check saw, slot by slot, and what the instructions should have addressed."""

    kind: str
    tile: Tile
    instrs: list
    want: np.ndarray            # (N,) tile element each slot must be
    got: np.ndarray             # (N,) the element it is, or NONE / NOT_RUN / LOST
    address: np.ndarray         # (N,) the byte address it was read from / landed at (-1 unknown)
    lane: np.ndarray            # (N,)
    instr: np.ndarray           # (N,)
    reg: np.ndarray             # (N,) stream register (-1 for copies)
    half: np.ndarray            # (N,) element in the register (-1 for copies)
    wel: list                   # per instruction (32, nbytes): element each byte must belong to (-1: none)
    wby: list                   # per instruction (32, nbytes): byte within that element
    frags: Fragments | None = None
    findings: list = field(default_factory=list)    # what the run itself found (copies: holes, overlaps)

    @property
    def bad(self) -> np.ndarray:
        return self.got != self.want

    @property
    def ok(self) -> bool:
        return not self.bad.any() and not self.findings and not any(M.problem(i) for i in self.instrs)

    def grid(self, a: np.ndarray) -> np.ndarray:
        """A per-slot array of a load or store as (32, registers, elements per register)."""
        assert self.frags is not None
        u = self.frags.units
        return a.reshape(u.shape[1], u.shape[0], u.shape[2]).transpose(1, 0, 2)


def _cannot_run(instrs) -> np.ndarray:
    """bool (instructions,): those that would fault (``machine.problem``)."""
    return np.array([M.problem(ins) is not None for ins in instrs], bool)


# ---------------------------------------------------------------------------------------------
# loads and stores: register streams

class _Stream:
    """The registers the instructions move, in order: stream byte offsets of each instruction."""

    def __init__(self, tile, instrs, frags: Fragments):
        self.tile, self.instrs, self.frags = tile, instrs, frags
        self.esize = tile.elem_bytes
        self.offsets = np.cumsum([0] + [i.nbytes for i in instrs])
        self.size = M.smem_size(tile, instrs)
        self.npass = M.passes(tile)
        # slot order: unit (register, or register pair of a 64-bit element), lane, element in the unit
        w = frags.units                                                         # (32, U, k)
        self.want = w.transpose(1, 0, 2).reshape(-1)
        U, k = w.shape[1], w.shape[2]
        g = np.meshgrid(np.arange(U), np.arange(WARP_LANES), np.arange(k), indexing="ij")
        unit, self.lane, self.half = (x.reshape(-1) for x in g)
        self.reg = unit * frags.wide                                            # its first register
        self.byte = (unit * k + self.half) * self.esize                         # stream byte of the slot
        self.instr = np.searchsorted(self.offsets, self.byte, side="right") - 1
        self.wel, self.wby = [], []
        wslots = w.reshape(WARP_LANES, -1)                                        # (32, slots)
        for i, ins in enumerate(instrs):
            k = self.offsets[i] + np.arange(ins.nbytes)
            self.wel.append(np.ascontiguousarray(wslots[:, k // self.esize]))
            self.wby.append(np.broadcast_to(k % self.esize, (WARP_LANES, ins.nbytes)).copy())
        self.addr = np.full(self.want.shape, -1, np.int64)
        for i, ins in enumerate(instrs):
            at = self.instr == i
            self.addr[at] = byte_addresses(ins)[self.lane[at], self.byte[at] - self.offsets[i]]

    def evidence(self, kind: str, got: np.ndarray) -> Evidence:
        got[_cannot_run(self.instrs)[self.instr]] = NOT_RUN
        return Evidence(kind, self.tile, self.instrs, self.want, got, self.addr, self.lane, self.instr,
                        self.reg, self.half, self.wel, self.wby, self.frags)


class LoadRun(_Stream):
    """Loads from the tagged tile: what each register element holds."""

    kind = "load"

    def program(self):
        return M.tagged(self.tile, self.size, self.npass), [None] * len(self.instrs)

    def decode(self, outs, mem) -> Evidence:
        stream = np.zeros((self.npass, WARP_LANES, int(self.offsets[-1])), np.uint8)
        for i, (ins, out) in enumerate(zip(self.instrs, outs)):
            if out is not None:
                stream[:, :, self.offsets[i]:self.offsets[i + 1]] = M.load_bytes(ins, out)
        slots = M.untag(M.slot_values(stream, self.esize), self.esize)           # (32, S)
        got = slots[self.lane, self.byte // self.esize]
        got = np.where(got >= self.tile.elements, NONE, got)
        return self.evidence(self.kind, got)


class StoreRun(_Stream):
    """Stores of registers tagged with the tile element each must land on: where each landed."""

    kind = "store"

    def program(self):
        mem = np.zeros((self.npass, self.size), np.uint8)
        w = self.frags.units.reshape(WARP_LANES, -1)
        pays = []
        for i, ins in enumerate(self.instrs):
            k = self.offsets[i] + np.arange(ins.nbytes)
            data = np.stack([M.element_bytes(M.digits(w, p, self.esize), self.esize)[:, k]
                             for p in range(self.npass)])
            pays.append(M.store_words(ins, data))
        return mem, pays

    def decode(self, outs, mem) -> Evidence:
        got = landed(self.tile, mem, self.addr, self.want)
        return self.evidence(self.kind, got)


def landed(tile, mem: np.ndarray, addr: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The tile element whose place each slot's element took (its landing address ``addr``), NONE
    where that is no element's place, LOST where shared memory does not hold it there after the run."""
    es = tile.elem_bytes
    inside = (addr >= 0) & (addr + es <= mem.shape[1])
    a = np.where(inside, addr, 0)
    held = M.untag(M.slot_values(mem[:, a[:, None] + np.arange(es)], es)[..., 0], es)
    idx, off = tile.locate(a)
    got = np.where((idx >= 0) & (off == 0), idx, NONE)
    return np.where(inside & (held == want), got, LOST)


# ---------------------------------------------------------------------------------------------
# copies: global -> shared

class CopyRun:
    """A CTA's copies of the tile from global memory: every element once, where the tile says.

    Each lane's global source says which elements it copies: byte offsets into the global matrix
    stored line by line like the tile (rows of a row-order tile, columns of a column-order one),
    ``global_pitch`` bytes apart.  Without sources, the k-th instruction's lane l copies chunk
    ``32 * k + l`` of the densely stored matrix (thread t copying chunk ``t + pass * threads``).
    """

    kind = "copy"

    def __init__(self, tile, instrs, global_pitch: int):
        self.tile, self.instrs, self.gp = tile, instrs, global_pitch
        self.esize = es = tile.elem_bytes
        for ins in instrs:
            if ins.op.bytes_per_addr % es:
                raise ValueError(f"{ins.describe()} moves {ins.op.bytes_per_addr} bytes per lane, not whole "
                                 f"{es}-byte {tile.dtype} elements")
        self.size = M.smem_size(tile, instrs)
        self.npass = M.passes(tile)
        self.wel, self.wby = [], []
        self.sources = []                    # each instruction's global source offsets (byte 0 of each lane)
        lanes, instr, want, addr = [], [], [], []
        for i, ins in enumerate(instrs):
            nb = ins.nbytes
            k = np.arange(nb)
            if ins.src is None:
                g = (WARP_LANES * i + np.arange(WARP_LANES))[:, None] * nb + k
                gp = tile.line_bytes
            else:
                g = ins.src[:, None] + k
                gp = global_pitch
            self.sources.append(g[:, 0].copy())
            line, posb = np.divmod(g, gp)
            ok = (g >= 0) & (line < tile.lines) & (posb < tile.line_bytes) & ins.mask[:, None]
            pos = posb // es
            r, c = (line, pos) if tile.order == "row" else (pos, line)
            el = np.where(ok, r * tile.cols + c, -1)
            self.wel.append(el)
            self.wby.append(np.where(ok, posb % es, 0))
            n = nb // es
            lane_j = np.meshgrid(np.arange(WARP_LANES), np.arange(n), indexing="ij")
            first = el[:, ::es]                                   # element of each element slot
            act = ins.mask[:, None] & np.ones((1, n), bool)
            lanes.append(lane_j[0][act])
            instr.append(np.full(int(act.sum()), i))
            want.append(first[act])
            addr.append((ins.addrs[:, None] + es * np.arange(n))[act])
        self.lane = np.concatenate(lanes).astype(np.int64)
        self.instr = np.concatenate(instr).astype(np.int64)
        self.want = np.concatenate(want).astype(np.int64)
        self.addr = np.concatenate(addr).astype(np.int64)

    def program(self):
        mem = np.zeros((self.npass, self.size), np.uint8)
        pays = []
        for ins, el, eb in zip(self.instrs, self.wel, self.wby):
            data = np.stack([((M.digits(el, p, self.esize) >> (np.uint64(8) * eb.astype(np.uint64)))
                              & np.uint64(0xFF)).astype(np.uint8) for p in range(self.npass)])
            pays.append(data if ins.op.family == "cp.async" else M.store_words(ins, data))
        return mem, pays

    def decode(self, outs, mem) -> Evidence:
        valid = self.want >= 0
        got = landed(self.tile, mem, self.addr, np.where(valid, self.want, -2))
        got[_cannot_run(self.instrs)[self.instr]] = NOT_RUN      # per element, not per instruction: O(n)
        keep = valid
        ev = Evidence(self.kind, self.tile, self.instrs, self.want[keep], got[keep], self.addr[keep],
                      self.lane[keep], self.instr[keep], np.full(int(keep.sum()), -1),
                      np.full(int(keep.sum()), -1), self.wel, self.wby)
        ev.findings.extend(coverage(self))
        return ev


def coverage(run: CopyRun) -> list:
    """Holes, overlaps and sources outside the global tile, from the addresses."""
    from .report import Finding

    tile = run.tile
    out = []
    bad_src = run.want < 0
    if bad_src.any():
        k = int(np.flatnonzero(bad_src)[0])
        ins = run.instrs[int(run.instr[k])]
        out.append(Finding("source", f"{int(bad_src.sum())} element copies read outside the global tile "
                                     f"(lines of {run.gp} bytes): e.g. {ins.describe()} lane {int(run.lane[k])}"))
    runs = np.array([M.problem(ins) is None for ins in run.instrs], bool)[run.instr]
    idx, off = tile.locate(np.where(runs, run.addr, -1))
    hit = runs & (idx >= 0) & (off == 0)
    count = np.bincount(idx[hit], minlength=tile.elements)
    holes = np.flatnonzero(count == 0)
    if holes.size:
        out.append(Finding("holes", f"{holes.size:,} of {tile.elements:,} tile elements are never written, e.g. "
                                    + ", ".join(f"tile({e // tile.cols},{e % tile.cols})" for e in holes[:3])))
    over = np.flatnonzero(count > 1)
    if over.size:
        e = int(over[0])
        who = [f"{run.instrs[int(run.instr[k])].label} lane {int(run.lane[k])}"
               for k in np.flatnonzero(hit & (idx == e))[:3]]
        out.append(Finding("overlaps", f"{over.size:,} tile elements are written more than once: "
                                       f"tile({e // tile.cols},{e % tile.cols}) by " + " and by ".join(who)))
    return out
