"""The tensor-core data path, through fragsim's own validated models: ``ldmatrix``, ``stmatrix``,
``movmatrix``, ``mma.sync`` and ``cp.async`` (with ``commit_group``/``wait_group``/``wait_all``).

These are ``.sync.aligned`` warp instructions (cp.async excepted): every lane of the warp executes
them together, so each runs once per warp of the step, all warps at once: registers are gathered into
``(warps, 32, registers)`` arrays, the model runs (``fragsim.mma`` on the architecture's row, the
ldmatrix/stmatrix data movement of the shared-memory table), and the results go back.  A warp with
lanes missing (diverged or predicated off) is an error naming the lanes: PTX leaves it undefined.

``cp.async``: the source bytes are read when the instruction issues (a race-free kernel does not
change them before the copy completes) and land in shared memory at the ``cp.async.wait_group`` /
``wait_all`` that covers their group, as PTX defines; ``src-size`` copies that many bytes and fills
the rest with zeros.
"""

from __future__ import annotations

import weakref

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fragsim.arith import Plan, index_maps
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions import lookup
from fragsim.instructions.shared_ops import matrix_op
from fragsim.sim.smem import matrix_movement

from .. import ast as A
from ..memory import put_bytes
from ..observe import CpAsync, CpLand, Mma, SharedAccess, Wgmma
from ..op import Builder, Op, PtxLoadError
from ..state import PtxRuntimeError, State
from ..types import TYPES
from . import UnsupportedInstruction


B32, U32, U64 = TYPES["b32"], TYPES["u32"], TYPES["u64"]
#: Warps of one mma.sync step from which the arithmetic runs on numba's thread pool.
PARALLEL_WARPS = 256


def whole_warps(s: State, idx: np.ndarray, ins: A.Instr) -> int:
    """The number of warps in ``idx`` (ascending thread order), all of whose present lanes execute."""
    if idx is s.span_idx and s.span_warps:
        return s.span_warps
    if len(idx) % WARP_LANES == 0:
        r = idx.reshape(-1, WARP_LANES)
        if not (r[:, 0] % WARP_LANES).any() and (r[:, -1] - r[:, 0] == WARP_LANES - 1).all():
            return len(r)                      # whole warps (threads ascend, so first..last is every lane)
    warps = s.warp[idx]
    first, counts = np.unique(warps, return_counts=True)
    need = np.array([int(s.present[w * WARP_LANES:(w + 1) * WARP_LANES].sum()) for w in first])
    if (counts != need).any() or (need != WARP_LANES).any():
        k = int(np.flatnonzero((counts != need) | (need != WARP_LANES))[0])
        t = int(first[k]) * WARP_LANES
        raise PtxRuntimeError(f"line {ins.line}: {s.where(t).split(' (warp')[0]}: {ins.text} is .sync.aligned: "
                              f"all {WARP_LANES} lanes of the warp must execute it together, "
                              f"{int(counts[k])} do")
    return len(first)


def _registers(c: Builder, operand, n: int, t, ins: A.Instr, what: str) -> list:
    items = operand.items if isinstance(operand, A.Vec) else (operand,)
    if len(items) != n:
        raise PtxLoadError(f"line {ins.line}: {ins.text}: {what} has {n} register(s), the line gives {len(items)}")
    return list(items)


# ------------------------------------------------------------------------------- ldmatrix, stmatrix

def _matrix_entry(ins: A.Instr):
    mods = [m for m in ins.mods if m not in ("sync", "aligned")]
    shape = [m for m in mods if m.startswith("m8n8")]
    nums = [m for m in mods if m in ("x1", "x2", "x4")]
    rest = set(mods) - set(shape) - set(nums) - {"trans", "shared", "shared::cta", "b16"}
    if shape != ["m8n8"] or len(nums) != 1 or rest:
        raise UnsupportedInstruction(f"{ins.text}: modelled are {ins.opcode}.sync.aligned.m8n8.x1|x2|x4"
                                     "{.trans}.shared.b16")
    return matrix_op(ins.opcode, int(nums[0][1]), "trans" in mods)


def _matrix_rows(s: State, idx: np.ndarray, ins: A.Instr, op, addr) -> tuple[int, np.ndarray, np.ndarray]:
    """(warps, each lane's row address (w, 32), each warp's CTA) of an ldmatrix/stmatrix step; the
    address lanes' rows (the first ``op.address_lanes``) checked: aligned, inside the CTA's shared memory."""
    w = whole_warps(s, idx, ins)
    rows = addr(s, idx).reshape(w, WARP_LANES).astype(np.int64)
    al = op.address_lanes
    s.check_shared(rows[:, :al], op.bytes_per_addr, idx.reshape(w, WARP_LANES)[:, :al], ins.line)
    if s.observers:
        s.emit(SharedAccess(idx.reshape(w, WARP_LANES)[:, :al], addrs=rows[:, :al], width=op.bytes_per_addr,
                            write=ins.opcode == "stmatrix"))
    return w, rows, s.cta[s.cols(idx)].reshape(w, WARP_LANES)[:, 0]


def ldmatrix(ins: A.Instr, c: Builder) -> Op:
    op = _matrix_entry(ins)
    d, a = ins.operands
    if not isinstance(a, A.Addr):
        raise PtxLoadError(f"line {ins.line}: {ins.text}: expected [address]")
    addr, space = c.address_of(a, "shared", ins.line)
    writers = [c.writer(x, B32, ins.line) for x in _registers(c, d, op.nregs, B32, ins, "d")]
    src, col, _ = matrix_movement(op)                    # (32, num, 2): source lane and column
    # a warp's register halves in order (lane, register, half) as indices into the 16-bit elements of
    # the rows its address lanes name, row after row; without .trans the halves of a register are
    # neighbours in one row: one 32-bit word
    per_row = op.bytes_per_addr // 2
    halves = (src * per_row + col).reshape(-1)
    paired = bool((halves[1::2] == halves[0::2] + 1).all() and not (halves[0::2] % 2).any())
    words = halves[0::2] // 2
    row = op.bytes_per_addr

    def run(s: State, idx: np.ndarray) -> None:
        w, rows, cta = _matrix_rows(s, idx, ins, op, addr)
        if s.smem.shape[1] % row == 0:
            # every row (aligned, checked) taken whole, then a fixed shuffle within each warp
            start = (cta * (s.smem.shape[1] // row))[:, None] + rows[:, :op.address_lanes] // row
            data = np.take(s.smem.reshape(-1).view(f"V{row}"), start).view(np.uint8).reshape(w, -1)
            if paired:
                regs = np.take(data.view("<u4"), words, axis=1)
            else:
                regs = np.take(data.view("<u2"), halves, axis=1).view("<u4")
        else:
            byte = (cta * s.smem.shape[1])[:, None, None, None] + rows[:, src] + 2 * col     # (w, 32, num, 2)
            flat = s.smem.reshape(-1)
            mem = flat[byte].astype(np.uint32) | (flat[byte + 1].astype(np.uint32) << 8)
            regs = mem[..., 0] | (mem[..., 1] << 16)
        regs = regs.reshape(w * WARP_LANES, op.nregs)
        for k, wr in enumerate(writers):
            wr(s, idx, regs[:, k])
    return Op(ins, "", run, collective=True, extra={"shared_op": op})


def stmatrix(ins: A.Instr, c: Builder) -> Op:
    op = _matrix_entry(ins)
    a, v = ins.operands
    if not isinstance(a, A.Addr):
        raise PtxLoadError(f"line {ins.line}: {ins.text}: expected [address]")
    addr, space = c.address_of(a, "shared", ins.line)
    readers = [c.reader(x, B32, ins.line) for x in _registers(c, v, op.nregs, B32, ins, "the source")]
    src, col, order = matrix_movement(op)                # and the order the hardware's writes win in
    src_flat, col_flat = src.ravel(), col.ravel()

    def run(s: State, idx: np.ndarray) -> None:
        w, rows, cta = _matrix_rows(s, idx, ins, op, addr)
        regs = np.stack([r(s, idx) for r in readers], axis=-1).reshape(w, WARP_LANES, op.nregs)
        halves = np.stack([regs & 0xFFFF, regs >> 16], axis=-1).reshape(w, -1)     # (w, 32*num*2)
        byte = (rows[:, src_flat] + 2 * col_flat)[:, order]
        val = halves[:, order]
        ctas = np.broadcast_to(cta[:, None], byte.shape)
        s.smem[ctas, byte] = (val & 0xFF).astype(np.uint8)
        s.smem[ctas, byte + 1] = (val >> 8).astype(np.uint8)
    return Op(ins, "", run, collective=True, extra={"shared_op": op})


# ------------------------------------------------------------------------------------ movmatrix

def movmatrix(ins: A.Instr, c: Builder) -> Op:
    if ins.mods != ("sync", "aligned", "m8n8", "trans", "b16"):
        raise UnsupportedInstruction(f"{ins.text}: modelled is movmatrix.sync.aligned.m8n8.trans.b16")
    from fragsim.sim.movmatrix import movmatrix
    d, a = ins.operands
    read = c.reader(a, B32, ins.line)
    write = c.writer(d, B32, ins.line)

    def run(s: State, idx: np.ndarray) -> None:
        w = whole_warps(s, idx, ins)
        out = movmatrix(read(s, idx).reshape(w, WARP_LANES, 1))
        write(s, idx, out.reshape(-1))
    return Op(ins, "", run, collective=True)


# ------------------------------------------------------------------------------------- mma.sync

class MmaBatch:
    """``mma.sync`` instructions that follow one another, of one plan, run as one call of the arithmetic
    (the machine runs it when every thread that runs is at the first of them, ``fragsim.ptx.machine``).

    Each warp's D is a function of that warp's A, B and C registers alone, so gathering the registers
    of all of them first and writing every D after gives the bits of running them one by one exactly
    when no instruction reads a register an earlier one writes, and no two write the same register
    (``mma_batches`` checks both).  ``names``: per instruction, the register names of A, B, C and D."""

    def __init__(self, pl, names: list[dict[str, tuple[str, ...]]]):
        self.pl, self.count = pl, len(names)
        self.names = {op: tuple(n for x in names for n in x[op]) for op in "ABCD"}
        self.width = {op: len(names[0][op]) for op in "ABCD"}
        self.maps = register_major(pl.form) if isinstance(pl, Plan) else None
        self.column = self.maps is not None and _column_kernel(pl)

    def run(self, s: State, idx: np.ndarray) -> bool:
        """Run them for threads ``idx``; False (nothing done) unless ``idx`` is the span, whole warps,
        and every register is in the 32-bit file: then they run one by one."""
        w = s.span_warps if idx is s.span_idx else 0
        if not w:
            return False
        rows = {op: s.file_rows(self.names[op]) for op in "ABCD"}
        if any(r is None for r in rows.values()):
            return False
        n = self.count
        # the span's registers as (warps, registers, 32 lanes): one gather takes every operand register
        # of every instruction for all warps, batch entry q * n + j being instruction j of warp q
        file = s.files[np.dtype(np.uint32)]           # (registers, threads): whole warps of each row
        first = s.span.start // WARP_LANES
        regs = file.reshape(len(file), -1, WARP_LANES)[:, first:first + w].transpose(1, 0, 2)   # a view
        # register-major words (register r of lane l at r * 32 + l) where the kernel takes that order;
        # the other kernels take fragsim.mma's lane-major words
        major = self.maps is not None

        def gather(op: str) -> np.ndarray:
            v = regs[:, rows[op]].reshape(w * n, self.width[op], WARP_LANES)
            return v.reshape(w * n, -1) if major else v.transpose(0, 2, 1).reshape(w * n, -1)

        a, b, c = (gather(op) for op in "ABC")
        # a few warps per call: numba's thread pool costs more than it saves below a few hundred warps
        parallel = n * w >= PARALLEL_WARPS
        if major:
            from fragsim.arith import kernel, kernel16
            from fragsim.arith.jit import listen
            listen()
            # the m16n8 forms: the column kernel (fragsim.mma's), which reads register-major words too
            d = kernel16.run(self.pl, a, b, c, parallel=parallel, major="register") if self.column else \
                kernel.run(self.pl, self.maps, a, b, c, parallel=parallel)
        else:
            from fragsim.arith import run as arithmetic
            d = arithmetic(self.pl, a, b, c, parallel=parallel).transpose(0, 2, 1)
        regs[:, rows["D"]] = d.reshape(w, -1, WARP_LANES)
        return True


def _column_kernel(pl) -> bool:
    """Whether ``fragsim.arith.kernel16`` computes the plan (its module loads numba: imported here, when
    a kernel has an mma.sync, not when fragsim.ptx is)."""
    from fragsim.arith import kernel16
    return kernel16.supports(pl)


@lru_cache(maxsize=None)
def register_major(form) -> dict[str, np.ndarray]:
    """``fragsim.arith.index_maps`` of a form for operands laid out register-major: word ``r * 32 + lane``
    of a warp (not ``lane * nregs + r``) holds register ``r`` of ``lane``, in A, B, C and D alike."""
    maps = dict(index_maps(form))
    for op in "abc":
        k = form.nregs(op.upper())
        v = maps[op + "_src"]
        maps[op + "_src"] = np.ascontiguousarray((v % k) * WARP_LANES + v // k)
    k = form.nregs("D")
    for key in ("d_lo", "d_hi"):
        maps[key] = np.ascontiguousarray(maps[key].reshape(WARP_LANES, k).T.reshape(-1))
    for v in maps.values():
        v.setflags(write=False)
    return maps


def mma_batches(ops: list[Op]) -> dict[int, MmaBatch]:
    """PC -> the batch of mma.sync instructions from there: every run of two or more that follow one
    another unguarded, of one plan, where none reads or writes a D register an earlier one writes
    (each suffix of a run too: a branch may land part way)."""
    out: dict[int, MmaBatch] = {}
    pc = 0
    while pc < len(ops):
        first = ops[pc].extra.get("batch")
        if first is None or ops[pc].guard is not None:
            pc += 1
            continue
        run = [first[1]]
        written = set(first[1]["D"])
        q = pc + 1
        while q < len(ops):
            nxt = ops[q].extra.get("batch")
            if nxt is None or ops[q].guard is not None or nxt[0] != first[0]:
                break
            if written & {n for op in "ABCD" for n in nxt[1][op]}:
                break
            written |= set(nxt[1]["D"])
            run.append(nxt[1])
            q += 1
        for k in range(len(run) - 1):
            out[pc + k] = MmaBatch(first[0], run[k:])
        pc = q
    return out


def mma(ins: A.Instr, c: Builder) -> Op:
    name = ".".join(m for m in ins.mods if m not in ("sync", "aligned"))
    try:
        form = lookup(name)
    except ValueError as e:
        raise UnsupportedInstruction(f"{ins.text}: {e}") from None
    if len(ins.operands) != 4:
        raise PtxLoadError(f"line {ins.line}: {ins.text} takes d, a, b, c")
    arch = c.arch
    wide = {op: form.fmt(op).name == "f64" for op in "ABCD"}       # f64 elements: one .f64 register, two words
    regs = {op: _registers(c, operand, form.nregs(op) // (2 if wide[op] else 1), TYPES["b64"] if wide[op] else B32,
                           ins, op) for operand, op in zip(ins.operands, "DABC")}
    typ = {op: TYPES["b64"] if wide[op] else B32 for op in "ABCD"}
    writers = [c.writer(x, typ["D"], ins.line) for x in regs["D"]]
    readers = {op: [c.reader(x, typ[op], ins.line) for x in regs[op]] for op in "ABC"}

    def gather(s: State, idx: np.ndarray, op: str, w: int) -> np.ndarray:
        vals = [r(s, idx) for r in readers[op]]
        if wide[op]:
            vals = [x for v in vals for x in ((v & np.uint64(0xFFFFFFFF)).astype(np.uint32),
                                              (v >> np.uint64(32)).astype(np.uint32))]
        return np.stack(vals, axis=-1).astype(np.uint32).reshape(w, WARP_LANES, -1)

    from fragsim.arith import plan, run as arithmetic
    try:
        pl = plan(form, arch)              # fragsim.mma's arithmetic, resolved once per instruction
    except ValueError as e:
        raise UnsupportedInstruction(f"{ins.text}: {e}") from None
    extra: dict = {"form": form}
    alone = None
    if not any(wide.values()) and all(isinstance(x, A.Reg) and not x.negated for op in "ABCD" for x in regs[op]):
        names = {op: tuple(c.reg(x.name, ins.line) for x in regs[op]) for op in "ABCD"}
        if len(set(names["D"])) == len(names["D"]):      # one write per register: no order among them
            extra["batch"] = (pl, names)
            alone = MmaBatch(pl, [names])

    def run(s: State, idx: np.ndarray) -> None:
        # an observer of mma events sees each one (batch_mma: an observer that needs none, observe.py)
        if alone is not None and all(getattr(o, "batch_mma", False) for o in s.observers) and alone.run(s, idx):
            return
        w = whole_warps(s, idx, ins)
        a, b, cc = (gather(s, idx, op, w).reshape(w, -1) for op in "ABC")
        result: dict = {}
        if s.observers:        # one may give D itself (fragment tracing: identities), sparing the arithmetic
            s.emit(Mma(idx, form=form, a=a.reshape(w, WARP_LANES, -1), b=b.reshape(w, WARP_LANES, -1),
                       c=cc.reshape(w, WARP_LANES, -1), result=result))
        if "d" in result:
            d = np.asarray(result["d"], np.uint32).reshape(w * WARP_LANES, -1)
        else:
            # a few warps per step: numba's thread pool costs more than it saves below a few hundred warps
            d = arithmetic(pl, a, b, cc, parallel=w >= PARALLEL_WARPS).reshape(w * WARP_LANES, -1)
        if wide["D"]:
            d = d[:, 0::2].astype(np.uint64) | (d[:, 1::2].astype(np.uint64) << np.uint64(32))
        for k, wr in enumerate(writers):
            wr(s, idx, d[:, k])
    return Op(ins, "", run, collective=True, extra=extra)


# ------------------------------------------------------------------------------------- cp.async

def cp(ins: A.Instr, c: Builder) -> Op:
    mods = ins.mods
    if mods[:1] != ("async",):
        raise UnsupportedInstruction(f"{ins.text}: only cp.async is modelled (not cp.async.bulk or cp.reduce)")
    rest = mods[1:]
    if rest in (("commit_group",), ("wait_all",)) or (rest and rest[0] == "wait_group"):
        return _cp_group(ins, c, rest[0])
    levels = [m for m in rest if m in ("ca", "cg")]
    spaces = [m for m in rest if m.startswith(("shared", "global"))]
    others = set(rest) - set(levels) - set(spaces)
    if len(levels) != 1 or sorted(x.split("::")[0] for x in spaces) != ["global", "shared"] or any(
            not o.startswith(("L2::", "L1::")) for o in others):
        raise UnsupportedInstruction(f"{ins.text}: expected cp.async.ca|cg.shared{{::cta}}.global{{.L2::...}}")
    ops = ins.operands
    if len(ops) not in (3, 4) or not isinstance(ops[0], A.Addr) or not isinstance(ops[1], A.Addr):
        raise PtxLoadError(f"line {ins.line}: {ins.text} [dst], [src], cp-size{{, src-size}}")
    if not isinstance(ops[2], A.Imm):
        raise PtxLoadError(f"line {ins.line}: {ins.text}: cp-size must be an immediate (4, 8 or 16)")
    size = ops[2].value
    if size not in (4, 8, 16) or (levels[0] == "cg" and size != 16):
        raise PtxLoadError(f"line {ins.line}: {ins.text}: cp-size {size}: .ca copies 4, 8 or 16 bytes, .cg 16")
    dst, _ = c.address_of(ops[0], "shared", ins.line)
    src, _ = c.address_of(ops[1], "global", ins.line)
    # the fourth operand is src-size, or the predicate ignore-src: true copies zeros, as src-size 0 does
    last = ops[3] if len(ops) == 4 else None
    ignore_src = isinstance(last, A.Reg) and (last.negated or c.registers[c.reg(last.name, ins.line)].kind == "pred")
    src_size = None if last is None else c.reader(last, TYPES["pred"] if ignore_src else U32, ins.line)
    line = ins.line

    def run(s: State, idx: np.ndarray) -> None:
        d = dst(s, idx)
        if src_size is None:
            n = np.full(len(idx), size, np.int64)
        elif ignore_src:
            n = np.where(src_size(s, idx), 0, size).astype(np.int64)
        else:
            n = src_size(s, idx).astype(np.int64)
        if (n > size).any():
            k = int(np.flatnonzero(n > size)[0])
            raise PtxRuntimeError(f"line {line}: {s.where(int(idx[k]))}: src-size {int(n[k])} exceeds cp-size {size}")
        d = d.astype(np.int64)
        s.check_shared(d, size, idx, line)
        if s.observers:
            s.emit(SharedAccess(idx, addrs=d, width=size, write=True))
        a = src(s, idx)
        if s.observers:
            s.emit(CpAsync(idx, dst=d, src=a, size=size))
        full = n == size
        if full.all():
            data = s.load("global", a, size, idx, line)
        else:
            data = np.zeros((len(idx), size), np.uint8)
            if full.any():
                data[full] = s.load("global", a[full], size, idx[full], line)
            for nb in np.unique(n[~full & (n > 0)]):     # src-size < cp-size: read those bytes, zeros after
                sel = n == nb
                for j in range(int(nb)):
                    data[sel, j] = s.load("global", a[sel] + np.uint64(j), 1, idx[sel], line)[:, 0]
        span = (s.span.start, s.span.stop) if idx is s.span_idx else None
        s.cp_pending.append(Copies(idx.copy(), np.full(len(idx), -1, np.int64),
                                   s.cta[s.cols(idx)] * s.smem.shape[1] + d, data, span))
    return Op(ins, "", run)


@dataclass
class Copies:
    """The copies of one cp.async step not landed yet: each thread's commit group (-1 until it commits),
    destination (a byte of ``State.smem`` flattened) and bytes.  ``span``: (first, end) when the threads
    are that run of consecutive threads; ``groups``: the lowest and highest group once every thread's
    is known (None before)."""

    threads: np.ndarray
    group: np.ndarray
    flat: np.ndarray
    data: np.ndarray
    span: tuple[int, int] | None
    groups: tuple[int, int] | None = None

    def within(self, s: State, idx: np.ndarray) -> bool:
        """Every thread of these copies is among threads ``idx``, by their spans alone."""
        return (self.span is not None and idx is s.span_idx and s.span.start <= self.span[0]
                and self.span[1] <= s.span.stop)

    def part(self, keep: np.ndarray) -> Copies:
        return Copies(self.threads[keep], self.group[keep], self.flat[keep], self.data[keep], None,
                      None if self.groups is None else (int(self.group[keep].min()), int(self.group[keep].max())))


def land(s: State, smem: np.ndarray, c: Copies, sel: np.ndarray | None = None) -> None:
    """cp.async copies ``c`` (those ``sel`` selects) write their bytes into shared memory."""
    flat, data = (c.flat, c.data) if sel is None else (c.flat[sel], c.data[sel])
    if s.observers:
        s.emit(CpLand(c.threads if sel is None else c.threads[sel], flat=flat, width=data.shape[1]))
    put_bytes(smem, flat, data)


def _cp_group(ins: A.Instr, c: Builder, what: str) -> Op:
    keep = 0
    if what == "wait_group":
        if len(ins.operands) != 1 or not isinstance(ins.operands[0], A.Imm):
            raise PtxLoadError(f"line {ins.line}: {ins.text} N: N must be an immediate")
        keep = int(ins.operands[0].value)

    def commit(s: State, idx: np.ndarray) -> None:
        cols = s.cols(idx)
        s.cp_committed[cols] += 1
        mine = None
        for c in s.cp_pending:
            if c.groups is not None:
                continue
            if c.within(s, idx):                    # every thread commits: those without a group get one
                c.group = np.where(c.group < 0, s.cp_committed[c.threads], c.group)
            else:
                if mine is None:
                    mine = np.zeros(s.geometry.slots, bool)
                    mine[cols] = True
                new = mine[c.threads] & (c.group < 0)
                c.group[new] = s.cp_committed[c.threads[new]]
                if (c.group < 0).any():
                    continue
            c.groups = (int(c.group.min()), int(c.group.max()))

    def wait(s: State, idx: np.ndarray) -> None:
        if what == "wait_all":
            commit(s, idx)
        cols = s.cols(idx)
        limit = s.cp_committed - keep             # a thread's copies of groups up to its limit land
        lim = limit[cols]
        one = len(lim) and lim.min() == lim.max()
        mine = None
        left = []
        smem = s.smem.reshape(-1)
        for c in s.cp_pending:
            if one and c.groups is not None and c.within(s, idx):     # all of them land, or none
                if c.groups[1] <= lim[0]:
                    land(s, smem, c)
                    continue
                if c.groups[0] > lim[0]:
                    left.append(c)
                    continue
            if mine is None:
                mine = np.zeros(s.geometry.slots, bool)
                mine[cols] = True
            done = mine[c.threads] & (c.group >= 0) & (c.group <= limit[c.threads])
            if done.all():
                land(s, smem, c)
            elif done.any():
                land(s, smem, c, done)
                left.append(c.part(~done))
            else:
                left.append(c)
        s.cp_pending[:] = left

    return Op(ins, "", commit if what == "commit_group" else wait)


# ---------------------------------------------------------------------------------------- wgmma

def whole_warpgroups(s: State, idx: np.ndarray, ins: A.Instr) -> int:
    """The number of warpgroups in ``idx``: 4 consecutive warps of a CTA, warp 4k first, all lanes."""
    from fragsim.instructions.wgmma import THREADS
    whole_warps(s, idx, ins)
    if len(idx) % THREADS or (s.tid_linear[idx[::THREADS]] % THREADS).any():
        raise PtxRuntimeError(f"line {ins.line}: {s.where(int(idx[0])).split(' (warp')[0]}: {ins.text} is executed "
                              "by whole warpgroups (4 consecutive warps, the first a multiple of 4) together")
    tg = s.tid_linear[idx].reshape(-1, THREADS)
    if (tg != tg[:, :1] + np.arange(THREADS)).any():
        raise PtxRuntimeError(f"line {ins.line}: {ins.text}: every warp of a warpgroup must execute it together")
    return len(idx) // THREADS


def wgmma(ins: A.Instr, c: Builder) -> Op:
    what = ins.mods[0] if ins.mods else ""
    if what in ("fence", "commit_group", "wait_group"):
        # D is computed when the mma issues (a race-free kernel reads it only after the wait that
        # covers it, and changes no operand in flight): these order nothing more here
        return Op(ins, "", lambda s, idx: None, collective=True)
    if what != "mma_async" or ins.mods[1:3] != ("sync", "aligned"):
        raise UnsupportedInstruction(f"{ins.text}: modelled are wgmma.fence, commit_group, wait_group and "
                                     "wgmma.mma_async.sync.aligned (dense)")
    from fragsim.instructions.wgmma import THREADS, lookup_wgmma
    name = ".".join(ins.mods[3:])
    try:
        form = lookup_wgmma(name)
    except ValueError as e:
        raise UnsupportedInstruction(f"{ins.text}: {e}") from None
    ops = list(ins.operands)
    d, a, b = ops[:3]
    rest = ops[3:]
    a_regs = isinstance(a, A.Vec)
    want = 1 + (2 if form.scale_ab else 0) + (2 if form.trans and not a_regs else (1 if form.trans else 0))
    if len(rest) != want:
        raise PtxLoadError(f"line {ins.line}: {ins.text} takes d, a, b, scale-d"
                           f"{', imm-scale-a, imm-scale-b' if form.scale_ab else ''}"
                           f"{', imm-trans-a' if form.trans and not a_regs else ''}{', imm-trans-b' if form.trans else ''}")
    imms = []
    for x in rest[1:]:
        if not isinstance(x, A.Imm) or x.kind != "int":
            raise PtxLoadError(f"line {ins.line}: {ins.text}: imm-scale/imm-trans operands are integer immediates")
        imms.append(int(x.value))
    scale_a, scale_b = (imms[0], imms[1]) if form.scale_ab else (1, 1)
    trans = imms[2:] if form.scale_ab else imms
    trans_a = bool(trans[0]) if form.trans and not a_regs else False
    trans_b = bool(trans[-1]) if form.trans else False
    scale_d = c.reader(rest[0], TYPES["pred"], ins.line)
    dregs = _registers(c, d, form.nregs("D"), B32, ins, "d")
    writers = [c.writer(x, B32, ins.line) for x in dregs]
    readers_c = [c.reader(x, B32, ins.line) for x in dregs]
    readers_a = ([c.reader(x, B32, ins.line) for x in _registers(c, a, form.nregs("A"), B32, ins, "a")]
                 if a_regs else c.reader(a, U64, ins.line))
    read_b = c.reader(b, U64, ins.line)
    arch = c.arch
    line = ins.line
    # D (and C) and A's registers by name, where each is a plain register: the arithmetic then reads and
    # writes them in the register file, in place (``fragsim.sim.wgmma.in_file``)
    plain = [x for x in dregs + (_registers(c, a, form.nregs("A"), B32, ins, "a") if a_regs else [])
             if not (isinstance(x, A.Reg) and not x.negated)] == []
    d_names = tuple(c.reg(x.name, ins.line) for x in dregs) if plain else None
    a_names = tuple(c.reg(x.name, ins.line) for x in _registers(c, a, 4, B32, ins, "a")) if plain and a_regs else None

    def rows_of(s: State, names):
        """(the flat words of the 32-bit file holding every register of ``names``, their rows), or None."""
        for dt in (np.uint32, np.float32, np.int32):
            r = s.file_rows(names, dt)
            if r is not None:
                return s.files[np.dtype(dt)].view(np.uint32), r
        return None

    plans: dict = {}

    def plan(s: State):
        """The kernel of this instruction on the registers of run ``s`` (``file_plan``), or None."""
        from fragsim.sim.wgmma import file_plan
        dfile = rows_of(s, d_names)
        afile = rows_of(s, a_names) if a_regs else None
        if dfile is None or (a_regs and afile is None):
            return None
        return file_plan(form, dfile[0], dfile[1], None if afile is None else (afile[0].reshape(-1), afile[1]),
                         scale_a=scale_a, scale_b=scale_b, trans_a=trans_a, trans_b=trans_b, arch=arch)

    def of_run(s: State) -> tuple:
        """(the run, its plan, the spans already found to be whole warpgroups): one run at a time, the
        last run's go."""
        hit = plans.get(id(s))
        if hit is None or hit[0]() is not s:
            plans.clear()
            hit = plans[id(s)] = (weakref.ref(s), plan(s) if d_names is not None else None, set())
        return hit

    def in_place(s: State, idx: np.ndarray, first: np.ndarray) -> bool:
        if d_names is None or idx is not s.span_idx:
            return False
        go = of_run(s)[1]
        return go is not None and go(s.span.start, None if a_regs else readers_a(s, first), read_b(s, first),  # type: ignore[operator]
                                     s.smem, s.cta[first], scale_d(s, first))

    def run(s: State, idx: np.ndarray) -> None:
        from fragsim.sim.wgmma import warpgroups
        if idx is s.span_idx:       # a span of threads checked once per run
            seen = of_run(s)[2]
            span = (s.span.start, s.span.stop)
            if span not in seen:
                whole_warpgroups(s, idx, ins)
                seen.add(span)
            g = len(idx) // THREADS
        else:
            g = whole_warpgroups(s, idx, ins)
        first = idx[::THREADS]
        try:
            # no observer to tell: the numba kernel on the registers where they are
            if not s.observers and in_place(s, idx, first):
                return
        except ValueError as e:
            raise PtxRuntimeError(f"line {line}: {s.where(int(first[0])).split(' (warp')[0]}: {ins.text}: {e}") from None
        cc = np.stack([r(s, idx) for r in readers_c], axis=-1).reshape(g, THREADS, -1)
        if a_regs:
            av = np.stack([r(s, idx) for r in readers_a], axis=-1).reshape(g, THREADS, -1)   # type: ignore[union-attr]
        else:
            av = readers_a(s, first)                                                          # type: ignore[operator]
        bv = read_b(s, first)
        sd = scale_d(s, first)
        result: dict = {}
        if s.observers:        # one may give D itself (fragment tracing: identities), sparing the arithmetic
            s.emit(Wgmma(idx, form=form, a=av, b=bv, c=cc, smem=s.smem[s.cta[first]], trans_a=trans_a,
                         trans_b=trans_b, result=result))
        try:
            out = np.asarray(result["d"], np.uint32) if "d" in result else warpgroups(
                form, av, bv, cc, smem=s.smem, smem_rows=s.cta[first], scale_d=sd, scale_a=scale_a,
                scale_b=scale_b, trans_a=trans_a, trans_b=trans_b, arch=arch)
        except ValueError as e:
            raise PtxRuntimeError(f"line {line}: {s.where(int(first[0])).split(' (warp')[0]}: {ins.text}: {e}") from None
        out = out.reshape(g * THREADS, -1)
        for k, w in enumerate(writers):
            w(s, idx, out[:, k])
    return Op(ins, "", run, collective=True, extra={"form": form})
