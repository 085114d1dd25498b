"""Loads, stores and atomics in every state space: ``ld``, ``ldu``, ``st``, ``atom``, ``red``.

``ld{.space}{.qualifiers}{.vN}.type d, [a]`` reads ``N`` elements of ``type`` from consecutive
addresses (the vector must be aligned to its whole size); a value narrower than its register is
zero-extended, or sign-extended for ``.s8``/``.s16``/``.s32``.  ``st`` writes the low bits of its
registers.  Qualifiers that order or cache accesses (``.volatile``, ``.relaxed.scope``,
``.acquire``/``.release``, ``.weak``, ``.nc``, ``.ca``/``.cg``/``.cs``/``.lu``/``.cv``/``.wb``/``.wt``,
``.L1::...``, ``.L2::...``, ``.level::...``) change nothing here: every access happens in program
order, one step at a time.  Without a space the address is generic (``cvta``).

``atom``/``red`` apply their operation for every thread in thread order; threads of one step that hit
the same address see each other's results in that order (the hardware's order among them is
unspecified: a kernel that depends on it has a race).
"""

from __future__ import annotations

import numpy as np

from .. import ast as A
from ..op import Builder, Op, PtxLoadError
from ..state import State
from ..types import TYPES, PtxType
from . import Spec, UnsupportedInstruction, floating


SPACES = ("global", "shared", "local", "param", "const")
#: Qualifiers with no effect on values in a sequential simulation (their prefixes for the
#: parameterised ones: L1::evict_last, L2::128B, level::cache_hint ...).
NO_EFFECT = {"volatile", "relaxed", "acquire", "release", "weak", "nc", "ca", "cg", "cs", "lu", "cv", "wb",
             "wt", "mmio", "sys", "gpu", "cta", "cluster", "aligned", "unified"}
NO_EFFECT_PREFIXES = ("L1::", "L2::", "level::", "cache_hint")


def _parse(ins: A.Instr) -> tuple[str | None, int, PtxType]:
    """(space or None for generic, vector length, element type) of an ld/st."""
    space, vec, t = None, 1, None
    for m in ins.mods:
        base = m.split("::")[0]
        if base in SPACES:
            if m.startswith("shared::") and m not in ("shared::cta",):
                raise UnsupportedInstruction(f"{ins.text}: .{m} (distributed shared memory) is not modelled")
            space = base
        elif m in ("v2", "v4", "v8"):
            vec = int(m[1:])
        elif m in TYPES:
            t = TYPES[m]
        elif m in NO_EFFECT or m.startswith(NO_EFFECT_PREFIXES):
            continue
        else:
            raise UnsupportedInstruction(f"{ins.text}: qualifier .{m} is not modelled")
    if t is None or t.kind == "pred":
        raise UnsupportedInstruction(f"{ins.text}: a load/store names its element type last")
    if t.bits == 128 and vec != 1:
        raise UnsupportedInstruction(f"{ins.text}: .b128 vectors are not modelled")
    return space, vec, t


def _elements(v, n: int, ins: A.Instr) -> tuple:
    if n == 1:
        if isinstance(v, A.Vec):
            # ``{%rs1}``: one element in braces, as Triton's inline asm writes scalar loads (ptxas takes it)
            if len(v.items) == 1:
                return (v.items[0],)
            raise PtxLoadError(f"line {ins.line}: {ins.text} moves one element, not a vector")
        return (v,)
    if not isinstance(v, A.Vec) or len(v.items) != n:
        raise PtxLoadError(f"line {ins.line}: {ins.text} moves {n} elements: give {{a, b{', c, d' * (n == 4)}}}")
    return tuple(v.items)


def _address(ins: A.Instr, c: Builder, operand, space: str | None):
    if not isinstance(operand, A.Addr):
        raise PtxLoadError(f"line {ins.line}: {ins.text}: expected an address [a]")
    read, implied = c.address_of(operand, space, ins.line)
    if space is not None and implied is not None and implied != space:
        raise PtxLoadError(f"line {ins.line}: {ins.text} names .{space} but {operand.base!r} is a .{implied} variable")
    return read, space if space is not None else implied


def ld(ins: A.Instr, c: Builder) -> Op:
    space, n, t = _parse(ins)
    if len(ins.operands) != 2:
        raise PtxLoadError(f"line {ins.line}: {ins.text} d, [a] takes two operands")
    dsts = _elements(ins.operands[0], n, ins)
    addr, space = _address(ins, c, ins.operands[1], space)
    if t.bits == 128:
        raise UnsupportedInstruction(f"{ins.text}: 128-bit loads are not modelled")
    writers = [c.writer(d, t, ins.line) for d in dsts]
    width, line = t.bytes * n, ins.line

    def run(s: State, idx: np.ndarray) -> None:
        raw = s.load(space, addr(s, idx), width, idx, line)
        vals = raw.view(t.dtype).reshape(len(idx), n)
        for k, w in enumerate(writers):
            w(s, idx, vals[:, k])
    return Op(ins, "", run, extra={"space": space, "width": width})


def st(ins: A.Instr, c: Builder) -> Op:
    space, n, t = _parse(ins)
    if len(ins.operands) != 2:
        raise PtxLoadError(f"line {ins.line}: {ins.text} [a], b takes two operands")
    if space == "const":
        raise PtxLoadError(f"line {ins.line}: {ins.text}: .const memory is read-only")
    addr, space = _address(ins, c, ins.operands[0], space)
    srcs = _elements(ins.operands[1], n, ins)
    if t.bits == 128:
        raise UnsupportedInstruction(f"{ins.text}: 128-bit stores are not modelled")
    readers = [c.reader(x, t, ins.line) for x in srcs]
    width, line = t.bytes * n, ins.line

    def run(s: State, idx: np.ndarray) -> None:
        vals = np.stack([r(s, idx) for r in readers], axis=1).astype(t.dtype, copy=False)
        s.store(space, addr(s, idx), np.ascontiguousarray(vals).view(np.uint8).reshape(len(idx), width), idx, line)
    return Op(ins, "", run, extra={"space": space, "width": width})


# ------------------------------------------------------------------------------------- atomics

def _pick(cond: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.asarray(np.where(cond, x, y)).astype(y.dtype)


def _int_op(op: str, t: PtxType):
    """The read-modify-write of an integer atomic on raw bits (old, b[, c]) -> new."""
    signed = t.kind == "s"
    bits = t.bits
    sdt = np.dtype(f"int{bits}")

    def s_(x):
        return x.view(sdt)

    ops = {
        "add": lambda a, b, _: a + b, "and": lambda a, b, _: a & b, "or": lambda a, b, _: a | b,
        "xor": lambda a, b, _: a ^ b, "exch": lambda a, b, _: b,
        "min": (lambda a, b, _: np.minimum(s_(a), s_(b)).view(a.dtype)) if signed else (lambda a, b, _: np.minimum(a, b)),
        "max": (lambda a, b, _: np.maximum(s_(a), s_(b)).view(a.dtype)) if signed else (lambda a, b, _: np.maximum(a, b)),
        # inc/dec (u32): ((old >= b) ? 0 : old + 1) and (((old == 0) | (old > b)) ? b : old - 1)
        "inc": lambda a, b, _: _pick(a >= b, np.zeros_like(a), a + 1),
        "dec": lambda a, b, _: _pick((a == 0) | (a > b), b, a - 1),
        "cas": lambda a, b, c: _pick(np.equal(a, b), c, a),
    }
    if op not in ops:
        raise UnsupportedInstruction(f"atom .{op} on .{t.name} is not modelled")
    return ops[op]


#: atom.add.f32 / red.add.f32 (PTX ISA: "rounds to nearest even and flushes subnormal inputs and
#: results to sign-preserving zero"; the H100 runs it as RED/ATOM .ADD.F32.FTZ.RN): add.rn.ftz.f32.
_F32_ADD = floating.arith(Spec("add", ("rn", "ftz", "f32"), 1, 2)).fn


def _f32_add(a, b, _):
    return _F32_ADD(a, b)[0]


def _atom(ins: A.Instr, c: Builder, red: bool) -> Op:
    mods = [m for m in ins.mods if not (m in NO_EFFECT or m.startswith(NO_EFFECT_PREFIXES))]
    space = None
    for m in list(mods):
        if m.split("::")[0] in SPACES:
            space = m.split("::")[0]
            mods.remove(m)
    ts = [m for m in mods if m in TYPES]
    ops = [m for m in mods if m not in TYPES]
    if len(ts) != 1 or len(ops) != 1 or space not in (None, "global", "shared"):
        raise UnsupportedInstruction(f"{ins.text}: expected {'red' if red else 'atom'}{{.global|.shared}}.OP.TYPE")
    t, op = TYPES[ts[0]], ops[0]
    if t.kind == "f":
        if (op, t.name) != ("add", "f32"):
            raise UnsupportedInstruction(f"{ins.text}: float atomics other than add.f32 are not modelled")
        fn = _f32_add
    else:
        fn = _int_op(op, t)
    operands = ins.operands
    dst = None if red else operands[0]
    rest = operands[0:] if red else operands[1:]
    addr, space = _address(ins, c, rest[0], space)
    srcs = [c.reader(x, t, ins.line) for x in rest[1:]]
    if len(srcs) != (2 if op == "cas" else 1):
        raise PtxLoadError(f"line {ins.line}: {ins.text} takes {'b, c' if op == 'cas' else 'b'} after the address")
    write = c.writer(dst, t, ins.line) if dst is not None else None
    width, line = t.bytes, ins.line

    def run(s: State, idx: np.ndarray) -> None:
        a = addr(s, idx)
        b = srcs[0](s, idx)
        cc = srcs[1](s, idx) if len(srcs) > 1 else b
        old = np.empty(len(idx), t.dtype)
        # threads of this step that share an address go one after another, in thread order
        order = np.lexsort((idx, a))
        sa = a[order]
        first = np.r_[True, sa[1:] != sa[:-1]]
        rank = np.arange(len(sa)) - np.maximum.accumulate(np.where(first, np.arange(len(sa)), 0))
        for r in range(int(rank.max(initial=-1)) + 1):
            sel = order[rank == r]
            cur = s.load(space, a[sel], width, idx[sel], line).view(t.dtype).reshape(-1)
            old[sel] = cur
            new = fn(cur, b[sel], cc[sel]).astype(t.dtype)
            s.store(space, a[sel], new.view(np.uint8).reshape(len(sel), width), idx[sel], line)
        if write is not None:
            write(s, idx, old)
    return Op(ins, "", run, extra={"space": space, "width": width})


def atom(ins: A.Instr, c: Builder) -> Op:
    """atom{.sem}{.scope}{.space}.op.type d, [a], b{, c}: the old value to d."""
    return _atom(ins, c, red=False)


def red(ins: A.Instr, c: Builder) -> Op:
    """red{.sem}{.scope}{.space}.op.type [a], b: atom without the old value."""
    return _atom(ins, c, red=True)
