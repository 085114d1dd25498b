"""Bulk and tensor copies (the Tensor Memory Accelerator): ``cp.async.bulk`` (global -> shared with
``.mbarrier::complete_tx::bytes``, shared -> global with ``.bulk_group``), ``cp.async.bulk.tensor.{1..5}d``
(``.tile`` loads into shared memory, stores to global memory) through ``fragsim.tma``, integer
``cp.reduce.async.bulk`` to global memory, ``cp.async.bulk.commit_group``/``wait_group{.read}``, and
the prefetches (``prefetch``, ``prefetchu``, ``cp.async.bulk.prefetch{.tensor}``: no data effect).
``cp.async.mbarrier.arrive`` is semantics/mbarrier.py's and ``cp.async`` semantics/tensor.py's (the
instruction table routes each form to its builder).

**Loads** read their source (global memory) when they issue and land, with their complete-tx on the
mbarrier, as semantics/mbarrier.py says (before the mbarrier's next operation or when no thread can
run).  A tensor load writes the box ``fragsim.tma.box_layout`` places -- innermost first, rows
``smem_pitch`` apart, the swizzle applied on the absolute shared address -- with the bytes
``fragsim.tma.load_values`` gives (out-of-bound elements filled, tf32 rounded), and counts
``TensorMap.box_bytes`` for its complete-tx.
``.multicast::cluster`` is taken with a ``ctaMask`` of CTA 0 only (the cluster is one CTA).

**Stores** (``.bulk_group``) read their source (shared memory) when they issue -- the earliest a
``wait_group.read`` may let the source be reused -- and write global memory at the
``cp.async.bulk.wait_group`` (not ``.read``) of the issuing thread that covers their group, or when no
thread can run (a store always completes).  A tensor store writes the elements ``BoxLayout.stored``
names (those inside the tensor, and the rest of each row's last 16-byte chunk) and refuses a box at
negative coordinates.

**Tensor maps.**  The tensor-map operand is the generic address of a ``CUtensorMap``: a kernel
parameter (``__grid_constant__``, passed to ``run_kernel`` as a ``fragsim.TensorMap``) or 128 bytes
anywhere else.  fragsim's 128 bytes are its own encoding of the map's arguments (``tensormap_bytes``),
not the driver's; a copy decodes them (``tensormap_of``), so a map a kernel copies or passes on
works, and bytes that are no map are refused.

Refusals use the PTX ISA's words: sizes and addresses of ``cp.async.bulk`` not multiples of 16, a
tensor map not 64-byte aligned, a rank other than the instruction's ``.Nd``, what ``fragsim.tma``
refuses at run time (a shared box not 128-byte aligned, a box start not 16-byte aligned), bytes
outside every global buffer or past the CTA's shared memory, a copy to the shared memory of another
CTA of the cluster.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

import numpy as np

from fragsim.facts.mbarrier import TENSORMAP_ALIGN, TENSORMAP_BYTES
from fragsim.facts.tma import BULK_ALIGN, INTERLEAVES, OOB_FILLS, SWIZZLES, TMA_TYPES

from .. import ast as A
from ..observe import BulkIssue, BulkRead
from ..op import Builder, Op, PtxLoadError
from ..state import PtxRuntimeError, State
from ..types import TYPES
from . import UnsupportedInstruction, memory
from .mbarrier import Flight, cp_async_arrive, no_larger_clusters, shared_address, units


U16, U32, U64 = TYPES["u16"], TYPES["u32"], TYPES["u64"]
LOAD_DONE = "mbarrier::complete_tx::bytes"
STORE_DONE = "bulk_group"
#: Qualifiers of bulk copies with no effect on the bytes (the cache policy's operand is read by nobody).
HINTS = ("L2::cache_hint",)

# ---------------------------------------------------------------------------------- tensor maps

#: fragsim's 128 bytes of a tensor map: a magic, the enums, the base, then the arguments (little endian).
_MAGIC = b"fsTMAP1\0"
_LAYOUT = struct.Struct("<8sBBBBB3xQ5I4Q5B5B")
_BY_ENUM = {t.enum: name for name, t in TMA_TYPES.items()}


def tensormap_bytes(tmap) -> bytes:
    """The 128 bytes fragsim holds for ``tmap`` (a ``fragsim.TensorMap``) in kernel memory."""
    r = tmap.rank
    pad = 5 - r
    data = _LAYOUT.pack(_MAGIC, TMA_TYPES[tmap.dtype].enum, r, INTERLEAVES[tmap.interleave][0],
                        SWIZZLES[tmap.swizzle][0], OOB_FILLS[tmap.oob_fill], tmap.base,
                        *[d - 1 for d in tmap.global_dims], *[0] * pad, *tmap.global_strides, *[0] * pad,
                        *[b - 1 for b in tmap.box_dims], *[0] * pad, *tmap.element_strides, *[1] * pad)
    return data.ljust(TENSORMAP_BYTES, b"\0")


def tensormap_of(data: bytes):
    """The ``fragsim.TensorMap`` whose ``tensormap_bytes`` are ``data``, or None if they are not one."""
    from fragsim.tma import TensorMap
    if len(data) < _LAYOUT.size or data[:len(_MAGIC)] != _MAGIC:
        return None
    f = _LAYOUT.unpack(data[:_LAYOUT.size])
    _, dtype, r, inter, swz, fill, base = f[:7]
    dims, strides, box, es = f[7:12], f[12:16], f[16:21], f[21:26]
    names = {v[0]: k for k, v in INTERLEAVES.items()}, {v[0]: k for k, v in SWIZZLES.items()}, \
        {v: k for k, v in OOB_FILLS.items()}
    try:
        return TensorMap(_BY_ENUM[dtype], [d + 1 for d in dims[:r]], strides[:r - 1], [b + 1 for b in box[:r]],
                         es[:r], names[0][inter], names[1][swz], names[2][fill], base)
    except (KeyError, ValueError, TypeError):
        return None


def _tensor_map_reader(ins: A.Instr, c: Builder, operand):
    """``read(s, t) -> TensorMap`` of the tensor-map address a tensor copy names (thread ``t``)."""
    if isinstance(operand, A.Reg):
        read = c.reader(operand, U64, ins.line)
        space = None
    elif isinstance(operand, A.Symbol):
        read, space = c.address_of(A.Addr(operand, 0), None, ins.line)
    else:
        raise PtxLoadError(f"line {ins.line}: {ins.text}: the tensor map is a register or a variable, got {operand!r}")
    line, text = ins.line, ins.text
    words = np.arange(TENSORMAP_BYTES // 8, dtype=np.uint64) * np.uint64(8)

    def tensor_map(s: State, t: int):
        at = np.array([t])
        a = read(s, at).astype(np.uint64)
        if int(a[0]) % TENSORMAP_ALIGN:
            raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text}: the tensor map at {int(a[0]):#x} is not "
                                  f"{TENSORMAP_ALIGN}-byte aligned (a CUtensorMap is)")
        raw = s.load(space, a[0] + words, 8, np.full(len(words), t), line).tobytes()
        cache = units(s).maps
        if raw not in cache:
            cache[raw] = tensormap_of(raw)
        tm = cache[raw]
        if tm is None:
            raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text}: the {TENSORMAP_BYTES} bytes at {int(a[0]):#x} are "
                                  "not a tensor map (pass a fragsim.TensorMap for the CUtensorMap parameter)")
        return tm
    return tensor_map


# ------------------------------------------------------------------------------------ stores

@dataclass
class Store:
    """A bulk copy or reduction to global memory not yet written: ``data`` (n, width) at ``addrs`` (n,),
    read from shared memory when it issued; ``group`` its bulk async-group (-1 until committed);
    ``combine(old, new)`` for a reduction (None: a copy)."""

    thread: int
    group: int
    addrs: np.ndarray
    data: np.ndarray
    line: int
    combine: object = None

    def land(self, s: State) -> None:
        idx = np.full(len(self.addrs), self.thread)
        if self.combine is None:
            s.store("global", self.addrs, self.data, idx, self.line)
            return
        width = self.data.shape[1]
        dt = np.dtype(f"uint{8 * width}")
        old = s.load("global", self.addrs, width, idx, self.line).view(dt).reshape(-1)
        new = self.combine(old, self.data.view(dt).reshape(-1), None).astype(dt)   # type: ignore[operator]
        s.store("global", self.addrs, new.view(np.uint8).reshape(-1, width), idx, self.line)


def _global_inside(s: State, addrs: np.ndarray, width: int, t: int, line: int, text: str, hint: str = "") -> None:
    k, _ = s.gmem.locate(addrs, width)
    if (k < 0).any():
        a = int(addrs[int(np.flatnonzero(k < 0)[0])])
        raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text}: global bytes {a:#x} .. {a + width - 1:#x} are outside "
                              f"every buffer of the launch{hint}")


def _shared_inside(s: State, start: int, top: int, t: int, line: int, text: str, what: str) -> None:
    if start < 0 or top > s.smem.shape[1]:
        raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text}: {what} reaches shared byte {top - 1:#x}, past the "
                              f"{s.smem.shape[1]} bytes of the CTA's shared memory")


# ------------------------------------------------------------------------------- cp.async.bulk

def _aligned(s: State, t: int, line: int, text: str, **values: int) -> None:
    """cp.async.bulk's rule: ``size`` a multiple of 16, ``dstMem``/``srcMem`` aligned to 16 bytes."""
    for name, v in values.items():
        if v % BULK_ALIGN:
            rule = (f"size must be a multiple of {BULK_ALIGN}" if name == "size"
                    else f"the addresses dstMem and srcMem must be aligned to {BULK_ALIGN} bytes")
            raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text}: {name} {v:#x} -- PTX ISA: {rule}")


def _spaces(ins: A.Instr, rest: tuple[str, ...]) -> tuple[list[str], set[str]]:
    spaces = [m for m in rest if m.split("::")[0] in ("shared", "global")]
    return spaces, set(rest) - set(spaces)


def _cta_mask(ins: A.Instr, c: Builder, operand):
    read = c.reader(operand, U16, ins.line)
    line, text = ins.line, ins.text

    def check(s: State, idx: np.ndarray) -> None:
        m = read(s, idx)
        if (m != 1).any():
            k = int(np.flatnonzero(m != 1)[0])
            raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: {text}: ctaMask {int(m[k]):#x} names CTAs "
                                  "other than rank 0; fragsim runs clusters of one CTA")
    return check


def _bulk(ins: A.Instr, c: Builder, rest: tuple[str, ...]) -> Op:
    """cp.async.bulk.dst.src.completion{.multicast::cluster}{.L2::cache_hint} (no tensor map)."""
    spaces, other = _spaces(ins, rest)
    line, text = ins.line, ins.text
    ops = list(ins.operands)
    extra = [m for m in other if m not in (LOAD_DONE, STORE_DONE, "multicast::cluster", *HINTS)]
    if extra:
        raise UnsupportedInstruction(f"{text}: .{extra[0]} is not modelled")
    if spaces == ["shared::cluster", "shared::cta"]:
        raise UnsupportedInstruction(f"{text}: the destination must be the shared memory of another CTA of the "
                                     "cluster (PTX ISA); fragsim runs clusters of one CTA")
    load = spaces in (["shared::cluster", "global"], ["shared::cta", "global"]) and LOAD_DONE in other
    store = spaces == ["global", "shared::cta"] and STORE_DONE in other and "multicast::cluster" not in other
    if not (load or store):
        raise UnsupportedInstruction(f"{text}: modelled are cp.async.bulk.shared::cluster|shared::cta.global."
                                     f"{LOAD_DONE} and cp.async.bulk.global.shared::cta.{STORE_DONE}")
    n_ops = 3 + load + ("multicast::cluster" in other) + bool(set(HINTS) & other)
    if len(ops) != n_ops or not all(isinstance(o, A.Addr) for o in ops[:2] + ops[3:4] * load):
        raise PtxLoadError(f"line {line}: {text} takes [dstMem], [srcMem], size" + (", [mbar]" if load else "")
                           + (", ctaMask" if "multicast::cluster" in other else "")
                           + (", cache-policy" if set(HINTS) & other else ""))
    size = c.reader(ops[2], U32, line)
    if load:
        dst = shared_address(ins, c, ops[0], False, "the destination")
        src, _ = c.address_of(ops[1], "global", line)
        mbar = shared_address(ins, c, ops[3], False, "the mbarrier")
        mask = _cta_mask(ins, c, ops[4]) if "multicast::cluster" in other else None
    else:
        gdst, _ = c.address_of(ops[0], "global", line)
        ssrc = shared_address(ins, c, ops[1], False, "the source")
    no_larger_clusters(ins, c)

    def chunk(nbytes: int) -> np.ndarray:
        return np.arange(nbytes // BULK_ALIGN, dtype=np.uint64) * np.uint64(BULK_ALIGN)

    def run_load(s: State, idx: np.ndarray) -> None:
        u = units(s)
        n, d, a, m = size(s, idx).astype(np.int64), dst(s, idx), src(s, idx).astype(np.uint64), mbar(s, idx)
        if mask is not None:
            mask(s, idx)
        for i, t in enumerate(idx.tolist()):
            _aligned(s, t, line, text, size=int(n[i]), dstMem=int(d[i]), srcMem=int(a[i]))
            _shared_inside(s, int(d[i]), int(d[i] + n[i]), t, line, text, f"the copy's {int(n[i])} bytes from {int(d[i]):#x}")
            cta = int(s.cta[t])
            bar = u.barrier(s, cta, int(m[i]), t, line, text)
            rows = a[i] + chunk(int(n[i]))
            _global_inside(s, rows, BULK_ALIGN, t, line, text)
            data = s.load("global", rows, BULK_ALIGN, np.full(len(rows), t), line).reshape(-1)
            flat = cta * s.smem.shape[1] + int(d[i]) + np.arange(int(n[i]))
            bar.flights.append(Flight(t, flat, data, int(n[i]), line))
            if s.observers:
                s.emit(BulkIssue(np.array([t]), flat=flat))

    def run_store(s: State, idx: np.ndarray) -> None:
        u = units(s)
        n, a, g = size(s, idx).astype(np.int64), ssrc(s, idx), gdst(s, idx).astype(np.uint64)
        for i, t in enumerate(idx.tolist()):
            _aligned(s, t, line, text, size=int(n[i]), dstMem=int(g[i]), srcMem=int(a[i]))
            _shared_inside(s, int(a[i]), int(a[i] + n[i]), t, line, text, f"the copy's {int(n[i])} bytes from {int(a[i]):#x}")
            rows = g[i] + chunk(int(n[i]))
            _global_inside(s, rows, BULK_ALIGN, t, line, text)
            data = s.smem[int(s.cta[t]), int(a[i]):int(a[i] + n[i])].reshape(-1, BULK_ALIGN).copy()
            u.stores.append(Store(t, -1, rows, data, line))
            if s.observers:
                s.emit(BulkRead(np.array([t]), flat=int(s.cta[t]) * s.smem.shape[1] + np.arange(a[i], a[i] + n[i])))

    return Op(ins, "", run_load if load else run_store)


def _reduce(ins: A.Instr, c: Builder) -> Op:
    """cp.reduce.async.bulk.global.shared::cta.bulk_group.OP.TYPE [dstMem], [srcMem], size: an integer
    reduction into global memory, element by element, when its group completes."""
    rest = ins.mods[3:] if ins.mods[:3] == ("reduce", "async", "bulk") else ()
    spaces, other = _spaces(ins, rest)
    types = [m for m in other if m in TYPES]
    hints = other & set(HINTS)
    redops = sorted(other - set(types) - hints - {STORE_DONE})
    if rest[:1] == ("tensor",) or spaces != ["global", "shared::cta"] or STORE_DONE not in other or len(types) != 1 \
            or len(redops) != 1 or TYPES[types[0]].kind not in ("u", "s", "b"):
        raise UnsupportedInstruction(f"{ins.text}: modelled is cp.reduce.async.bulk.global.shared::cta.bulk_group with an "
                                     "integer .op.type (not the tensor, shared::cluster or floating-point forms)")
    t = TYPES[types[0]]
    combine = memory._int_op(redops[0], t)
    line, text = ins.line, ins.text
    ops = list(ins.operands)
    if len(ops) != 3 + bool(hints):
        raise PtxLoadError(f"line {line}: {text} takes [dstMem], [srcMem], size" + (", cache-policy" if hints else ""))
    gdst, _ = c.address_of(ops[0], "global", line)
    ssrc = shared_address(ins, c, ops[1], False, "the source")
    size = c.reader(ops[2], U32, line)
    w = t.bytes

    def run(s: State, idx: np.ndarray) -> None:
        u = units(s)
        n, a, g = size(s, idx).astype(np.int64), ssrc(s, idx), gdst(s, idx).astype(np.uint64)
        for i, th in enumerate(idx.tolist()):
            _aligned(s, th, line, text, size=int(n[i]), dstMem=int(g[i]), srcMem=int(a[i]))
            _shared_inside(s, int(a[i]), int(a[i] + n[i]), th, line, text, f"the {int(n[i])} bytes from {int(a[i]):#x}")
            addrs = g[i] + np.arange(0, int(n[i]), w, dtype=np.uint64)
            _global_inside(s, addrs, w, th, line, text)
            data = s.smem[int(s.cta[th]), int(a[i]):int(a[i] + n[i])].reshape(-1, w).copy()
            u.stores.append(Store(th, -1, addrs, data, line, combine))
            if s.observers:
                s.emit(BulkRead(np.array([th]), flat=int(s.cta[th]) * s.smem.shape[1] + np.arange(a[i], a[i] + n[i])))
    return Op(ins, "", run)


def _groups(ins: A.Instr, c: Builder, rest: tuple[str, ...]) -> Op:
    """cp.async.bulk.commit_group / cp.async.bulk.wait_group{.read} N (bulk async-groups per thread)."""
    if rest == ("commit_group",):
        if ins.operands:
            raise PtxLoadError(f"line {ins.line}: {ins.text} takes no operand")

        def commit(s: State, idx: np.ndarray) -> None:
            u = units(s)
            mine = np.zeros(s.geometry.slots, bool)
            mine[idx] = True
            for st in u.stores:
                if st.group < 0 and mine[st.thread]:
                    st.group = int(u.bulk_committed[st.thread]) + 1
            u.bulk_committed[idx] += 1
        return Op(ins, "", commit)
    if rest not in (("wait_group",), ("wait_group", "read")):
        raise UnsupportedInstruction(f"{ins.text}: expected cp.async.bulk.commit_group or cp.async.bulk.wait_group{{.read}}")
    if len(ins.operands) != 1 or not isinstance(ins.operands[0], A.Imm):
        raise PtxLoadError(f"line {ins.line}: {ins.text} N: N must be an integer constant")
    keep = int(ins.operands[0].value)
    if rest[-1] == "read":
        # the sources were read when the copies issued: they may be reused already
        return Op(ins, "", lambda s, idx: None)

    def wait(s: State, idx: np.ndarray) -> None:
        u = units(s)
        limit = np.full(s.geometry.slots, -1, np.int64)
        limit[idx] = u.bulk_committed[idx] - keep
        left = []
        for st in u.stores:
            if 0 <= st.group <= limit[st.thread]:
                st.land(s)
            else:
                left.append(st)
        u.stores[:] = left
    return Op(ins, "", wait)


# -------------------------------------------------------------------------- cp.async.bulk.tensor

_DIM = re.compile(r"^([1-5])d$")


def _tensor(ins: A.Instr, c: Builder, rest: tuple[str, ...]) -> Op:
    """cp.async.bulk.tensor.Nd.shared::cluster.global{.tile}.mbarrier::complete_tx::bytes{.multicast::cluster}
    {.L2::cache_hint} [dstMem], [tensorMap, coords], [mbar] {, ctaMask} {, cache-policy}, and
    cp.async.bulk.tensor.Nd.global.shared::cta{.tile}.bulk_group{.L2::cache_hint} [tensorMap, coords], [srcMem]."""
    from fragsim.tma import box_layout, load_values
    dim = _DIM.match(rest[0]) if rest else None
    if dim is None:
        raise UnsupportedInstruction(f"{ins.text}: expected cp.async.bulk.tensor.1d .. .5d")
    rank = int(dim.group(1))
    spaces, other = _spaces(ins, rest[1:])
    modes = [m for m in other if m.startswith(("tile", "im2col"))]
    if modes not in ([], ["tile"]):
        raise UnsupportedInstruction(f"{ins.text}: the .{modes[0]} mode is not modelled (only .tile)")
    extra = [m for m in other - set(modes) if m not in (LOAD_DONE, STORE_DONE, "multicast::cluster", *HINTS)]
    if extra:
        raise UnsupportedInstruction(f"{ins.text}: .{extra[0]} is not modelled")
    load = spaces in (["shared::cluster", "global"], ["shared::cta", "global"]) and LOAD_DONE in other
    store = spaces == ["global", "shared::cta"] and STORE_DONE in other and "multicast::cluster" not in other
    if not (load or store):
        raise UnsupportedInstruction(f"{ins.text}: modelled are cp.async.bulk.tensor.Nd.shared::cluster.global.tile."
                                     f"{LOAD_DONE} and cp.async.bulk.tensor.Nd.global.shared::cta.tile.{STORE_DONE}")
    no_larger_clusters(ins, c)
    line, text = ins.line, ins.text
    ops = list(ins.operands)
    multicast = "multicast::cluster" in other
    want = (3 + multicast if load else 2) + bool(set(HINTS) & other)
    tm_op = (ops[1] if load else ops[0]) if len(ops) >= 2 else None
    if len(ops) != want or not isinstance(tm_op, A.TexAddr) or len(tm_op.items) != 2 \
            or not isinstance(tm_op.items[1], A.Vec) or len(tm_op.items[1].items) != rank:
        shape = "[tensorMap, {" + ", ".join(f"c{i}" for i in range(rank)) + "}]"
        raise PtxLoadError(f"line {line}: {text} takes " + (f"[dstMem], {shape}, [mbar]" + (", ctaMask" * multicast)
                                                            if load else f"{shape}, [srcMem]")
                           + (", cache-policy" if set(HINTS) & other else ""))
    tensor_map = _tensor_map_reader(ins, c, tm_op.items[0])
    coords = [c.reader(x, U32, line) for x in tm_op.items[1].items]
    smem_at = shared_address(ins, c, ops[0] if load else ops[1], False, "the shared box")
    mbar = shared_address(ins, c, ops[2], False, "the mbarrier") if load else None
    mask = _cta_mask(ins, c, ops[3]) if multicast else None

    def box_of(s: State, t: int, tmap, start: tuple[int, ...], at: int, fn: str):
        if tmap.rank != rank:
            raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text}: the tensor map has rank {tmap.rank}, the "
                                  f"instruction .{rank}d")
        try:
            box = box_layout(tmap, start, at)
        except ValueError as e:
            raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text}: {str(e).replace('box_layout: ', '')}") from None
        e_ = tmap.element_bytes
        top = int(box.shared_address.max()) + e_ if box.shared_address.size else at
        _shared_inside(s, at, top, t, line, text, f"the {tmap.smem_bytes}-byte box from {at:#x}")
        lanes = np.arange(e_, dtype=np.int64)
        # the global elements the copy reads (a load: those inside the tensor) or writes (BoxLayout.stored)
        moved = box.in_bounds if fn == "load" else box.stored
        addrs = np.uint64(tmap.base) + box.global_offset[moved].astype(np.uint64)
        _global_inside(s, addrs, e_, t, line, text, f" (the box at {start} of the {fn}'s tensor map, base "
                                                    f"{tmap.base:#x}: is that base a Buffer's address?)")
        return box, lanes, addrs, moved

    def run_load(s: State, idx: np.ndarray) -> None:
        u = units(s)
        starts = np.stack([r(s, idx).view(np.int32) for r in coords], axis=1).astype(np.int64)
        at, m = smem_at(s, idx), mbar(s, idx)               # type: ignore[misc]
        if mask is not None:
            mask(s, idx)
        for i, t in enumerate(idx.tolist()):
            tmap = tensor_map(s, t)
            start = tuple(int(x) for x in starts[i])
            cta = int(s.cta[t])
            bar = u.barrier(s, cta, int(m[i]), t, line, text)
            box, lanes, addrs, _ = box_of(s, t, tmap, start, int(at[i]), "load")
            values = load_values(box, s.load("global", addrs, tmap.element_bytes, np.full(len(addrs), t), line))
            flat = (cta * s.smem.shape[1] + box.shared_address[:, None] + lanes).reshape(-1)
            bar.flights.append(Flight(t, flat, values.reshape(-1), tmap.box_bytes, line))
            if s.observers:
                s.emit(BulkIssue(np.array([t]), flat=flat))

    def run_store(s: State, idx: np.ndarray) -> None:
        u = units(s)
        starts = np.stack([r(s, idx).view(np.int32) for r in coords], axis=1).astype(np.int64)
        at = smem_at(s, idx)
        for i, t in enumerate(idx.tolist()):
            tmap = tensor_map(s, t)
            start = tuple(int(x) for x in starts[i])
            if min(start) < 0:
                k = int(np.argmin(start))
                raise PtxRuntimeError(f"line {line}: {s.where(t)}: {text}: coordinate {k} is {start[k]}: a store's box "
                                      "must start at non-negative coordinates (PTX ISA: tensorCoords of the "
                                      ".global.shared::cta direction)")
            box, lanes, addrs, stored = box_of(s, t, tmap, start, int(at[i]), "store")
            rows = box.shared_address[stored][:, None] + lanes
            u.stores.append(Store(t, -1, addrs, s.smem[int(s.cta[t])][rows].copy(), line))
            if s.observers:
                s.emit(BulkRead(np.array([t]), flat=int(s.cta[t]) * s.smem.shape[1] + rows.reshape(-1)))

    return Op(ins, "", run_load if load else run_store)


# --------------------------------------------------------------------------------- the cp opcode

def nothing(ins: A.Instr, c: Builder) -> Op:
    """A prefetch: no effect on data (its address operands are not even read)."""
    if not ins.operands or not isinstance(ins.operands[0], (A.Addr, A.TexAddr)):
        raise PtxLoadError(f"line {ins.line}: {ins.text}: expected an address [a]")
    return Op(ins, "", lambda s, idx: None)


def cp(ins: A.Instr, c: Builder) -> Op:
    mods = ins.mods
    if mods[:1] == ("reduce",):
        return _reduce(ins, c)
    if mods[:2] == ("async", "mbarrier"):
        return cp_async_arrive(ins, c)
    if mods[:2] != ("async", "bulk"):
        raise UnsupportedInstruction(f"{ins.text}: not a bulk copy (cp.async.bulk, cp.reduce.async.bulk); "
                                     "cp.async is semantics/tensor.py's")
    rest = mods[2:]
    if rest[:1] == ("tensor",):
        return _tensor(ins, c, rest[1:])
    if rest[:1] == ("prefetch",):
        return nothing(ins, c)
    if rest[:1] in (("commit_group",), ("wait_group",)):
        return _groups(ins, c, rest)
    return _bulk(ins, c, rest)
