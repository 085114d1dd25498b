"""A kernel made ready to run: the entry and every function it calls flattened into one list of
compiled instructions, registers and variables given their places.

Compiling resolves everything that does not depend on the data once: each instruction's semantic
(``fragsim.ptx.semantics``), how each operand is read and written (``Compiler.reader`` /
``Compiler.writer``: closures over the register's array or the immediate's bits), the byte offset of
every variable in its state space, and the PC of every label.  A variant that fragsim does not model
is refused here, naming the instruction and its PTX line, before anything runs.

Functions are not re-entrant: each ``.func`` has one set of registers and parameters (nvcc emits
recursion only for recursive source, which kernels of this field do not have; a recursive call is
refused).  Registers are named ``function::register``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.ranges import format_ranges

from . import ast as A
from .isa.row import Row
from .isa.table import lookup, resolve, spec_of
from .semantics import Spec, UnsupportedInstruction
from .op import TRAPPING_EXTERNS, Layout, Op, PtxLoadError, Reader, Run, Writer
from .state import EXITED, PtxRuntimeError, State
from .types import TYPES, PtxType, ptx_type

def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def var_bytes(v: A.VarDecl) -> int:
    """Bytes of a variable (0 for an extern array of unknown size)."""
    t = ptx_type(v.type)
    n = 1 if v.count is None and not v.extern else (v.count or 0)
    return max(t.bytes, 1) * v.vector * n


def _param_bytes(p: A.Param) -> tuple[int, int]:
    t = TYPES.get(p.type)
    size = (t.bytes if t is not None else 8) * (p.count or 1)
    align = p.align or (t.bytes if t is not None else 8)
    return size, max(align, 1)


@dataclass
class Program:
    """The compiled kernel: ``ops`` by PC; ``entry`` its name; ``layout`` the variable offsets;
    ``registers`` every register (qualified name -> type)."""

    module: A.Module
    entry: A.Function
    ops: list[Op]
    layout: Layout
    registers: dict[str, PtxType]
    functions: dict[str, int]               # function name -> PC of its first instruction
    approximate: list[int] = field(default_factory=list)    # lines run as IEEE stand-ins (approx="ieee")


class Compiler:
    """Turns instructions into ``Op``s; the machine families call its ``reader``/``writer``/
    ``address_of`` while building their ops."""

    def __init__(self, module: A.Module, entry: A.Function, arch, approx: str | None = None):
        self.approx = approx                # "ieee": .approx functions run as IEEE stand-ins, flagged
        self.approximate: list[int] = []    # lines of the instructions that do
        self.module = module
        self.entry = entry
        self.arch = arch                    # the ArchParams row the tensor-core instructions compute with
        self.layout = Layout()
        self.registers: dict[str, PtxType] = {}
        self.function: A.Function = entry
        self.functions = self._reachable(entry)
        self._lay_out()

    # ---- layout ---------------------------------------------------------------------------------

    def _reachable(self, entry: A.Function) -> list[A.Function]:
        """The entry and every function it calls, directly or not (a recursive call is refused)."""
        out, seen = [entry], {entry.name}
        stack = [entry]
        while stack:
            f = stack.pop()
            for ins in f.instructions:
                if ins.opcode != "call":
                    continue
                target = next((o.name for o in ins.operands if isinstance(o, (A.Label, A.Symbol))), None)
                if target is None:
                    raise PtxLoadError(f"line {ins.line}: call without a target")
                callee = self.module.functions.get(self.module.aliases.get(target, target))
                if callee is not None and not callee.defined and callee.name in TRAPPING_EXTERNS:
                    continue                    # a call that aborts the kernel (semantics/control.py)
                if callee is None or not callee.defined:
                    raise PtxLoadError(f"line {ins.line}: call to {target}, which this module does not define "
                                       "(external functions such as vprintf are not modelled)")
                if callee.name == f.name or callee.name == entry.name:
                    raise PtxLoadError(f"line {ins.line}: recursive call to {callee.name} is not modelled")
                if callee.name not in seen:
                    seen.add(callee.name)
                    out.append(callee)
                    stack.append(callee)
        return out

    def _lay_out(self) -> None:
        L = self.layout
        shared_vars = [v for v in self.module.vars if v.space == "shared"]
        for f in self.functions:
            shared_vars += [v for v in f.vars if v.space == "shared"]
        off = 0
        for v in shared_vars:
            if v.extern:
                L.dynamic_name = v.name
                L.dynamic_align = max(L.dynamic_align, v.align or 1)
                continue
            off = _align(off, v.align or ptx_type(v.type).bytes or 1)
            L.shared[v.name] = off
            off += var_bytes(v)
        L.shared_static = off
        if L.dynamic_name is not None:
            L.shared[L.dynamic_name] = _align(off, L.dynamic_align)
        loff = 0
        for f in self.functions:
            for v in f.vars:
                if v.space == "local":
                    loff = _align(loff, v.align or ptx_type(v.type).bytes or 1)
                    L.local[self.qualify_var(f, v.name)] = loff
                    loff += var_bytes(v)
        L.local_bytes = loff
        coff = 0
        for v in self.module.vars:
            if v.space == "const":
                coff = _align(coff, v.align or ptx_type(v.type).bytes or 1)
                L.const[v.name] = coff
                L.const_bytes.extend(b"\0" * (coff - len(L.const_bytes)))
                L.const_bytes.extend(init_bytes(v))
                coff += var_bytes(v)
            elif v.space == "global":
                L.globals[v.name] = v
        poff = 0
        for p in self.entry.params:
            size, align = _param_bytes(p)
            poff = _align(poff, align)
            L.kernel_params[p.name] = poff
            poff += size
        toff, widest = 0, 1
        for f in self.functions:
            own = [*(f.params if f is not self.entry else ()), *f.returns]
            for p in own:
                size, align = _param_bytes(p)
                toff = _align(toff, align)
                L.thread_params[self.qualify_var(f, p.name)] = toff
                toff += size
                widest = max(widest, align)
            for v in f.vars:
                if v.space == "param":
                    align = v.align or ptx_type(v.type).bytes or 1
                    toff = _align(toff, align)
                    L.thread_params[self.qualify_var(f, v.name)] = toff
                    toff += var_bytes(v)
                    widest = max(widest, align)
        L.thread_param_bytes = toff
        # the per-thread parameters follow the kernel's at an offset aligned for the widest of them
        # (their .param addresses are kernel_param_bytes + offset, and accesses must be aligned)
        L.kernel_param_bytes = _align(poff, widest)
        for f in self.functions:
            for d in f.regs:
                t = ptx_type(d.type)
                for name in d.names:
                    self.registers[self.qualify(f, name)] = t

    def qualify(self, f: A.Function, name: str) -> str:
        return f"{f.name}::{name}"

    def qualify_var(self, f: A.Function, name: str) -> str:
        return f"{f.name}::{name}"

    # ---- operands -------------------------------------------------------------------------------

    def reg(self, name: str, line: int) -> str:
        q = self.qualify(self.function, name)
        if q not in self.registers:
            raise PtxLoadError(f"line {line}: register {name} is not declared in {self.function.name}")
        return q

    def reader(self, operand, t: PtxType, line: int) -> Reader:
        """How to read ``operand`` as type ``t`` for threads ``idx``."""
        if isinstance(operand, A.Reg):
            q = self.reg(operand.name, line)
            if operand.negated:
                return lambda s, idx: ~s.read_reg(q, idx, TYPES["pred"])
            if self.registers[q].dtype == t.dtype:       # no conversion: a view for the span
                return lambda s, idx: s.views[q][s.span] if idx is s.span_idx else s.regs[q][idx]
            return lambda s, idx: s.read_reg(q, idx, t)
        if isinstance(operand, A.Imm):
            bits = immediate_bits(operand, t, line)
            return lambda s, idx: np.full(len(idx), bits, t.dtype)
        if isinstance(operand, A.Special):
            name, comp = operand.name, operand.component
            return lambda s, idx: s.special(name, comp, idx).astype(t.dtype)
        if isinstance(operand, A.Symbol):
            space, off = self.symbol(operand.name, line)
            if space == "global":                 # mov %rd, gvar: its device address
                name = operand.name
                return lambda s, idx: np.full(len(idx), s.global_vars[name], np.uint64).astype(t.dtype)
            value = np.array(off, np.uint64).astype(t.dtype)
            return lambda s, idx: np.full(len(idx), value, t.dtype)
        raise PtxLoadError(f"line {line}: operand {operand!r} cannot be read as a .{t.name} value")

    def writer(self, operand, t: PtxType, line: int) -> Writer:
        """How to write a value of type ``t`` into ``operand`` for threads ``idx``."""
        if isinstance(operand, A.Sink):
            return lambda s, idx, v: None
        if isinstance(operand, A.Reg) and not operand.negated:
            q = self.reg(operand.name, line)
            if self.registers[q].dtype == t.dtype and t.kind != "pred":
                # the register's own type: assigning casts as write_reg does (no extension to make)
                def write(s: State, idx: np.ndarray, v: np.ndarray) -> None:
                    if idx is s.span_idx:
                        s.regs[q][s.span] = v
                    else:
                        s.write_reg(q, idx, v, t)
                return write
            return lambda s, idx, v: s.write_reg(q, idx, v, t)
        raise PtxLoadError(f"line {line}: operand {operand!r} cannot be written")

    def symbol(self, name: str, line: int) -> tuple[str, int]:
        """A variable's state space and its byte offset there (a global variable: offset 0 of its
        own buffer)."""
        L = self.layout
        fq = self.qualify_var(self.function, name)
        if name in L.shared:
            return "shared", L.shared[name]
        if fq in L.local:
            return "local", L.local[fq]
        if fq in L.thread_params:
            return "param", L.kernel_param_bytes + L.thread_params[fq]
        if name in L.kernel_params and self.function is self.entry:
            return "param", L.kernel_params[name]
        if name in L.const:
            return "const", L.const[name]
        if name in L.globals:
            return "global", 0
        raise PtxLoadError(f"line {line}: {name} is not a variable or parameter of {self.function.name}")

    def address_of(self, operand: A.Addr, space: str | None, line: int) -> tuple[Reader, str | None]:
        """``[base+offset]`` -> a reader of the address (uint64) and the state space the base implies
        (a variable's own space, or ``space``)."""
        off = np.uint64(operand.offset & ((1 << 64) - 1))
        base = operand.base
        if base is None:
            return (lambda s, idx: np.full(len(idx), off, np.uint64)), space
        if isinstance(base, A.Reg):
            q = self.reg(base.name, line)
            if self.registers[q].dtype == np.uint64:
                return (lambda s, idx: (s.views[q][s.span] if idx is s.span_idx else s.regs[q][idx]) + off), space
            return (lambda s, idx: s.read_reg(q, idx, TYPES["u64"]) + off), space
        vspace, voff = self.symbol(base.name, line)
        if vspace == "global":
            name = base.name
            return (lambda s, idx: np.full(len(idx), np.uint64(s.global_vars[name]) + off)), "global"
        total = np.uint64((voff + operand.offset) & ((1 << 64) - 1))
        return (lambda s, idx: np.full(len(idx), total, np.uint64)), vspace

    # ---- instructions ---------------------------------------------------------------------------

    def compile(self) -> Program:
        ops: list[Op] = []
        starts: dict[str, int] = {}
        labels: dict[tuple[str, str], int] = {}
        pc = 0
        for f in self.functions:          # PCs first: labels may point forward and into later functions
            starts[f.name] = pc
            for item in f.body:
                if isinstance(item, A.LabelDef):
                    labels[(f.name, item.name)] = pc
                else:
                    pc += 1
            pc += 1                       # the implicit ret/exit when the body runs off its end
        self.labels, self.starts = labels, starts
        for f in self.functions:
            self.function = f
            for item in f.body:
                if isinstance(item, A.Instr):
                    ops.append(self.op(item, len(ops)))
            # a function that runs off its end returns (a kernel exits)
            ops.append(self.op(A.Instr("ret" if f is not self.entry else "exit", (), (), None, f.line, None, 0),
                               len(ops)))
        return Program(self.module, self.entry, ops, self.layout, self.registers, starts,
                       approximate=sorted(set(self.approximate)))

    def label(self, name: str, line: int) -> int:
        pc = self.labels.get((self.function.name, name))
        if pc is None:
            raise PtxLoadError(f"line {line}: label {name} is not defined in {self.function.name}")
        return pc

    def op(self, ins: A.Instr, pc: int) -> Op:
        guard = None
        if ins.guard is not None:
            guard = (self.reg(ins.guard.name, ins.line), ins.guard.negated)
        try:
            row, _ = lookup(ins.opcode, ins.mods)          # the instruction table's one lookup
            if row.kind == "machine":
                assert row.run is not None
                op = row.run(ins, self)
                op.guard, op.function = guard, self.function.name
                return op
            _, spec = spec_of(ins.opcode, ins.mods, ins.ndst, len(ins.operands) - ins.ndst)
            return self.pure(ins, row, spec, guard)
        except UnsupportedInstruction as e:
            raise PtxLoadError(f"line {ins.line}: {e}") from None

    def pure(self, ins: A.Instr, row: Row, spec: Spec, guard) -> Op:
        """An instruction of a value family: read the sources, compute, write the destinations.

        A row whose status is an IEEE stand-in runs only with ``approx="ieee"`` (flagged in
        ``Program.approximate``); otherwise it is refused with the row's reason.

        A semantic with one source more than the line reads the carry flag (``addc``, ``madc``), one
        destination more writes it (``add.cc``): the flag is the thread's own (``State.cc``)."""
        # approx="ieee": every MUFU form runs its IEEE stand-in, the modelled ones too (flagged)
        if row.status.level == "stand-in" or (row.status.family == "approx" and self.approx == "ieee"):
            if self.approx != "ieee":
                raise UnsupportedInstruction(f"{ins.text}: {row.status.why}")
            sem = resolve(_ieee_stand_in(spec))
            self.approximate.append(ins.line)
        else:
            assert row.run is not None
            sem = row.run(spec)
        dsts, srcs = ins.operands[:ins.ndst], ins.operands[ins.ndst:]
        carry_in, carry_out = len(sem.src) == len(srcs) + 1, len(sem.dst) == len(dsts) + 1
        if len(sem.src) - carry_in != len(srcs) or len(sem.dst) - carry_out != len(dsts):
            raise PtxLoadError(f"line {ins.line}: {ins.text} takes {len(sem.dst)} destination(s) and "
                               f"{len(sem.src)} source(s), the line has {len(dsts)} and {len(srcs)}")
        readers = [self.reader(o, ptx_type(t), ins.line) for o, t in zip(srcs, sem.src)]
        writers = [self.writer(o, ptx_type(t), ins.line) for o, t in zip(dsts, sem.dst)]
        if carry_in:
            readers.append(lambda s, idx: s.cc[idx])
        if carry_out:
            def write_cc(s: State, idx: np.ndarray, v: np.ndarray) -> None:
                s.cc[idx] = v
            writers.append(write_cc)
        fn = sem.fn
        if sem.warp:
            return Op(ins, self.function.name, self.warp_op(ins, fn, readers, writers), guard, collective=True)

        if len(writers) == 1:
            write = writers[0]

            def run(s: State, idx: np.ndarray) -> None:
                write(s, idx, fn(*[r(s, idx) for r in readers])[0])
            return Op(ins, self.function.name, run, guard)

        def run_many(s: State, idx: np.ndarray) -> None:
            # a result that is a source register's read-only view (a semantic may return a source as is)
            # is copied first: an earlier destination of this instruction may be that register
            out = [v if v.flags.writeable else v.copy() for v in fn(*[r(s, idx) for r in readers])]
            for w, v in zip(writers, out):
                w(s, idx, v)
        return Op(ins, self.function.name, run_many, guard)

    def warp_op(self, ins: A.Instr, fn, readers: list, writers: list) -> Run:
        """A warp-collective instruction: sources gathered into (warps, 32) arrays in lane order; the
        lanes that take part are those executing it and named in its member mask (the last source).
        A member lane that has not exited but does not execute it is an error (the hardware would
        wait for it forever), as is an executing lane left out of the mask (undefined in PTX)."""
        line = ins.line

        def run(s: State, idx: np.ndarray) -> None:
            warps, inv = np.unique(s.warp[idx], return_inverse=True)
            lanes = s.lane[idx]
            here = np.zeros((len(warps), WARP_LANES), bool)
            here[inv, lanes] = True
            args = []
            for r in readers:
                v = r(s, idx)
                full = np.zeros((len(warps), WARP_LANES), v.dtype)
                full[inv, lanes] = v
                args.append(full)
            members = args[-1].astype(np.uint64)
            member = ((members.max(axis=1)[:, None] >> np.arange(WARP_LANES, dtype=np.uint64)) & np.uint64(1)) == 1
            slots = warps[:, None] * WARP_LANES + np.arange(WARP_LANES)
            live = s.present[slots] & (s.status[slots] != EXITED)
            left_out = here & ~member
            absent = member & live & ~here
            for bad, why in ((left_out, "execute it but are not in its member mask"),
                             (absent, "are in its member mask but do not execute it (the hardware would wait)")):
                if bad.any():          # checks going on: the lanes that execute it and are in the mask do
                    s.fault("divergent", slots.reshape(-1), bad.reshape(-1), line,
                            lambda k, bad=bad, why=why: f"{ins.text}: lanes "
                            f"{format_ranges(np.flatnonzero(bad[k // WARP_LANES]))} {why}")
            out = fn(here & member, *args)
            for wr, v in zip(writers, out):
                wr(s, idx, v[inv, lanes])
        return run


def _ieee_stand_in(spec: Spec) -> Spec:
    """The stand-in of a stand-in row's instruction: ``div.approx``/``div.full``/``rcp.approx``/
    ``sqrt.approx`` -> their ``.rn`` form (resolved by that form's row); the .approx-only functions
    keep their spelling, marked as opted in."""
    if spec.opcode in ("div", "rcp", "sqrt"):
        mods = tuple("rn" if m in ("approx", "full") else m for m in spec.mods)
        return Spec(spec.opcode, mods, spec.ndst, spec.nsrc, approx=True)
    return Spec(spec.opcode, spec.mods, spec.ndst, spec.nsrc, approx=True)


def immediate_bits(imm: A.Imm, t: PtxType, line: int) -> int:
    """The bits an immediate has as an operand of type ``t``."""
    if imm.kind == "int":
        if t.kind == "f" and t.name in ("f32", "f64"):
            # an integer literal where a float is expected is that value, converted (PTX: "integer
            # literals ... are converted to the instruction's floating-point type")
            return int(np.array(float(imm.value), np.float64).astype(t.name.replace("f", "float")).view(
                f"uint{t.bits}"))
        if t.kind == "pred":
            return int(imm.value != 0)
        return imm.value & ((1 << t.bits) - 1)
    value = np.array(imm.value, np.uint64 if imm.kind == "f64" else np.uint32)
    f = value.view(np.float64 if imm.kind == "f64" else np.float32)
    if t.name == "f64":
        return int(f.astype(np.float64).view(np.uint64))
    if t.name == "f32":
        return int(f.astype(np.float32).view(np.uint32))
    if t.bits == imm_bits(imm):
        return imm.value
    raise PtxLoadError(f"line {line}: a .{imm.kind} literal cannot be a .{t.name} operand")


def imm_bits(imm: A.Imm) -> int:
    return 64 if imm.kind == "f64" else 32


def init_bytes(v: A.VarDecl) -> bytes:
    """The initial bytes of a variable (zeros where no initializer)."""
    t = ptx_type(v.type)
    n = var_bytes(v)
    if not v.init:
        return bytes(n)
    out = bytearray()
    for item in v.init:
        if isinstance(item, A.Imm):
            out += int(immediate_bits(item, t, v.line)).to_bytes(max(t.bytes, 1), "little")
        else:
            raise PtxLoadError(f"line {v.line}: initializer {item!r} of {v.name} is not modelled")
    return bytes(out.ljust(n, b"\0"))


def check_runtime(ok: np.ndarray, s: State, idx: np.ndarray, line: int, what: Callable[[int], str]) -> None:
    """Raise a ``PtxRuntimeError`` naming the first thread of ``idx`` where ``ok`` is False."""
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        t = int(idx[k])
        raise PtxRuntimeError(f"line {line}: {s.where(t)}: {what(k)}")
