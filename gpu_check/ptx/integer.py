"""The ptx_int family: fragsim's integer, bit, predicate and warp-collective PTX semantics
(``fragsim.ptx.semantics.integer`` and ``.warp``) against the GPU, bit for bit.

One small kernel per instruction variant (``VARIANTS``): each thread loads its source operands
from global memory, runs the instruction -- written as inline PTX, so ptxas compiles exactly that
line -- and stores the destination bits.  Inputs are drawn per operand from the type's edge values
(0, 1, -1, INT_MIN, INT_MAX, single bits, all-ones runs, 0x55../0xAA..) or at random, with roles of
their own where the instruction reads a field (shift counts and bit positions around the width,
lop3 truth tables, fns offsets, divisors, f32 selectors).  8-bit operands sit in 16-bit registers
whose high byte is garbage on the way in (cvt reads the low byte).

Carry chains (``add.cc`` ... ``madc``) run as one inline-PTX block of two instructions and, after a
``.cc`` second one, ``addc.u32 r, 0, 0`` to read the carry out; fragsim runs the same chain through
the hidden ``%cc`` operand.

Warp variants run one case per warp, with a per-warp set of executing lanes: the whole warp, lanes
that diverged away (membermask = the executing lanes) or lanes that exited first (membermask may
name exited lanes too).  The results of lanes that do not execute are not compared; a ``shfl`` that
reads such a lane is (the H100 gives 0 there).  ``fns`` with a base above 31, which PTX leaves
undefined, is not compared: the report counts how often the hardware agreed with fragsim there.

``--record DIR`` writes DIR/int.npz (thread and chain variants) and DIR/warp.npz: the first cases
of every variant with the most edge operands, every case that mismatched (up to a cap), and the
device; ``--replay DIR`` runs them through fragsim again.  ``--forms`` keeps the variants whose
PTX contains one of the given strings.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from fragsim.facts.arch import arch_for_cc
from fragsim.facts.hardware import WARP_LANES
from fragsim.ptx.isa import table
from fragsim.ptx.semantics import Semantic, Spec, UnsupportedInstruction
from fragsim.ptx.semantics.integer import carry_operands
from fragsim.ptx.types import TYPES

from .. import compile, record, runner
from ..family import RunnerFamily, Say
from ..prelude import THREADS_PER_BLOCK, unit

KIND = "ptx-int"
FILES = ("int", "warp")
KEEP = 64                   # cases (warps for warp variants: KEEP // 4) kept per variant by default
MISMATCH_CAP = 64           # mismatching cases kept per variant
DETAILS = 3                 # mismatches shown per variant
SENTINEL = 0xDEADBEEF
SEGMASK_SHIFT = 8           # shfl's c operand: the segment mask in bits 12..8


@dataclass(frozen=True)
class Variant:
    """One instruction variant: ``ptx`` as written, the PTX line's operand counts, the input role of
    each source (``draw``; none given: "val" for every source), or ``chain``, the instructions of a
    carry chain (spelling, destinations, sources)."""

    ptx: str
    ndst: int = 1
    nsrc: int = 2
    roles: tuple[str, ...] = ()
    chain: tuple[tuple[str, int, int], ...] = ()
    warp: bool = False

    @property
    def kernel(self) -> str:
        return "ptxint_" + "".join(c if c.isalnum() else "_" for c in self.ptx)


def spec_of(ptx: str, ndst: int, nsrc: int) -> Spec:
    op, *mods = ptx.split(".")
    return Spec(op, tuple(mods), ndst, nsrc)


def resolve(spec: Spec) -> Semantic:
    """The semantic of ``spec``, by the instruction table."""
    return table.resolve(spec)


# ---------------------------------------------------------------------------------------------
# the catalogue

#: operand kind of the instruction table -> the input role this family draws for it
ROLE = {"val": "val", "pred": "pred", "shift": "shift", "pos": "bitpos", "width": "width", "lut": "lut",
        "member": "member", "lane": "lane", "clamp": "shflc", "divisor": "divisor", "fnsbase": "fnsbase",
        "fnsoff": "fnsoff", "few": "few", "f32": "f32", "zero": "zero"}


def _resolved(opcode: str, form: tuple[str, ...], counts: list[tuple[int, int]]) -> tuple[int, int, Semantic] | None:
    """The most operands ``counts`` offers that the semantic takes for this form (None: none)."""
    for nd, ns in sorted(counts, reverse=True):
        try:
            return nd, ns, table.resolve(Spec(opcode, form, nd, ns))
        except UnsupportedInstruction:
            continue
    return None


def _table_variants() -> list[Variant]:
    """Every form of every instruction-table row this family validates (``Status.family ==
    "ptx_int"``), with all its operands, its sources drawn by their kinds.  Forms that read the carry
    flag run in ``_chains`` (alone, CF would be undefined)."""
    out: list[Variant] = []
    for row in table.ROWS:
        if row.status.family != KIND.replace("-", "_") or row.kind != "value":
            continue
        for form in row.syntax.forms():
            got = _resolved(row.opcode, form, row.operand_counts())
            if got is None:
                continue
            nd, ns, sem = got
            if len(sem.src) > ns:
                continue
            out.append(Variant(".".join((row.opcode, *form)), nd, ns, tuple(ROLE[o.kind] for o in row.srcs[:ns]),
                               warp=sem.warp))
    return out


_CARRY_FIRST = (("add.cc", 2), ("sub.cc", 2), ("mad.lo.cc", 3), ("mad.hi.cc", 3))
_CARRY_SECOND = (("addc", 2), ("subc", 2), ("madc.lo", 3), ("madc.hi", 3))
READOUT = ("addc.u32", 1, 2)         # d = 0 + 0 + CF, the carry flag as a number


def _chains() -> list[Variant]:
    out = []
    for t in ("u32", "s32", "u64", "s64"):
        for first, n1 in _CARRY_FIRST:
            for second, n2 in _CARRY_SECOND:
                links = [(f"{first}.{t}", 1, n1), (f"{second}.cc.{t}", 1, n2), READOUT]
                out.append(Variant(" ; ".join(x for x, _, _ in links), chain=tuple(links)))
                if t in ("u32", "u64"):
                    links = [(f"{first}.{t}", 1, n1), (f"{second}.{t}", 1, n2)]
                    out.append(Variant(" ; ".join(x for x, _, _ in links), chain=tuple(links)))
    return out


def variants() -> list[Variant]:
    return [*_table_variants(), *_chains()]


# ---------------------------------------------------------------------------------------------
# operands: types, registers, inputs

def _links(v: Variant) -> list[tuple[Spec, Semantic]]:
    """(spec, semantic) of each instruction of ``v`` (one, or a carry chain's)."""
    parts = v.chain or ((v.ptx, v.ndst, v.nsrc),)
    return [(s, resolve(s)) for s in (spec_of(*p) for p in parts)]


def operand_types(v: Variant) -> tuple[list[str], list[str]]:
    """(source types, destination types) the kernel moves, in order (hidden carry operands excluded)."""
    src: list[str] = []
    dst: list[str] = []
    for spec, sem in _links(v):
        src += sem.src[: spec.nsrc]
        dst += sem.dst[: spec.ndst]
    return src, dst


def reg_bits(t: str) -> int:
    """The register width an operand of type ``t`` travels in (8-bit types in 16-bit registers)."""
    return 32 if t == "pred" else max(16, TYPES[t].bits)


_CONSTRAINT = {16: ("h", "unsigned short"), 32: ("r", "unsigned"), 64: ("l", "unsigned long long")}


def _edge_values(bits: int) -> np.ndarray:
    ones = (1 << bits) - 1
    top = 1 << (bits - 1)
    vals = {0, 1, 2, 3, 5, 7, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, ones, ones - 1,
            ones - 2, top, top - 1, top + 1, top >> 1, ones // 3, 2 * (ones // 3)}
    for k in range(bits):
        vals |= {1 << k, ones >> k, ones ^ (1 << k), (ones << k) & ones}
    return np.array(sorted(v & ones for v in vals), np.uint64)


_F32_EDGE = np.array([0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000, 0x3F800000,
                      0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
                      0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF], np.uint64)


def _pick(rng: np.random.Generator, pool: np.ndarray, n: int) -> np.ndarray:
    return pool[rng.integers(0, len(pool), n)]


def _random_bits(rng: np.random.Generator, bits: int, n: int) -> np.ndarray:
    x = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    return x if bits == 64 else x & np.uint64((1 << bits) - 1)


def _mix(rng, n, edge: np.ndarray, rand: np.ndarray, p_edge: float) -> tuple[np.ndarray, np.ndarray]:
    is_edge = rng.random(n) < p_edge
    return np.where(is_edge, edge, rand), is_edge


def draw(role: str, t: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(values as uint64 in the operand's register width, whether each came from the edge pools)."""
    if t == "pred" or role == "pred":
        return rng.integers(0, 2, n, dtype=np.uint64), np.ones(n, bool)
    bits = TYPES[t].bits if t in TYPES else 32
    rb = reg_bits(t)
    if role == "val":
        x, e = _mix(rng, n, _pick(rng, _edge_values(bits), n), _random_bits(rng, bits, n), 0.6)
        if rb > bits:       # an 8-bit operand in a 16-bit register: garbage above it, half the time
            x = x | np.where(rng.random(n) < 0.5, _random_bits(rng, rb, n) & ~np.uint64((1 << bits) - 1),
                             np.uint64(0))
        return x, e
    if role in ("shift", "bitpos", "width"):
        w = {"shift": bits, "bitpos": bits, "width": 32}[role]
        near = np.arange(0, 2 * w + 3, dtype=np.uint64)
        far = np.array([127, 128, 240, 250, 255, 256, 257, 511, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF], np.uint64)
        return _mix(rng, n, _pick(rng, np.concatenate([near, near, far]), n), _random_bits(rng, 32, n), 0.85)
    if role == "lut":
        return rng.integers(0, 256, n, dtype=np.uint64), np.ones(n, bool)
    if role == "fnsbase":
        return _mix(rng, n, rng.integers(0, 32, n, dtype=np.uint64), _random_bits(rng, 32, n), 0.9)
    if role == "fnsoff":
        small = (rng.integers(-35, 36, n) & 0xFFFFFFFF).astype(np.uint64)
        return _mix(rng, n, small, _random_bits(rng, 32, n), 0.85)
    if role == "divisor":
        ones = (1 << bits) - 1
        small = np.array([v & ones for v in (0, 1, -1, 2, -2, 3, -3, 7, -7, 10, 1 << (bits - 1),
                                             (1 << (bits - 1)) - 1)], np.uint64)
        pool = np.concatenate([small, small, _edge_values(bits)])
        return _mix(rng, n, _pick(rng, pool, n), _random_bits(rng, bits, n), 0.6)
    if role == "f32":
        return _mix(rng, n, _pick(rng, _F32_EDGE, n), _random_bits(rng, 32, n), 0.7)
    if role == "zero":
        return np.zeros(n, np.uint64), np.ones(n, bool)
    raise ValueError(f"unknown input role {role!r}")


def thread_inputs(v: Variant, n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
    """The sources of ``n`` cases of a thread or chain variant, and how many of each case's sources
    came from the edge pools."""
    src, _ = operand_types(v)
    roles = list(v.roles) if v.roles else ["val"] * len(src)
    if v.chain and v.chain[-1] == READOUT:
        roles[-2:] = ["zero", "zero"]
    cols, edge = [], np.zeros(n, np.int64)
    for role, t in zip(roles, src):
        x, e = draw(role, t, n, rng)
        cols.append(x)
        edge += e
    if len(src) >= 2 and src[0] == src[1] and roles[0] == roles[1] == "val":
        same = rng.random(n) < 0.125     # equal operands: comparisons, min/max, sad, sub
        cols[1] = np.where(same, cols[0], cols[1])
    return cols, edge


def to_operand(col: np.ndarray, t: str) -> np.ndarray:
    """A register column as the semantic's operand of type ``t`` (the register's low bits)."""
    if t == "pred":
        return col != 0
    return col.astype(np.dtype(f"uint{TYPES[t].bits}"))


# ---------------------------------------------------------------------------------------------
# kernels

def _asm_block(links: list[tuple[str, int, int]], src: list[str], dst: list[str], out_base: int,
               in_base: int, literal: dict[int, int] | None = None) -> str:
    """The inline-PTX text of ``links`` whose sources are operands %in_base.. and destinations
    %out_base..; ``literal`` puts a constant in place of a source (lop3's truth table)."""
    decl, pre, body, post = [], [], [], []
    si = di = 0
    for ptx, ndst, nsrc in links:
        ops_d, ops_s = [], []
        for _ in range(ndst):
            if dst[di] == "pred":
                decl.append(f"pd{di}")
                post.append(f"selp.u32 %{out_base + di}, 1, 0, pd{di};")
                ops_d.append(f"pd{di}")
            else:
                ops_d.append(f"%{out_base + di}")
            di += 1
        for _ in range(nsrc):
            if literal and si in literal:
                ops_s.append(str(literal[si]))
            elif src[si] == "pred":
                decl.append(f"ps{si}")
                pre.append(f"setp.ne.b32 ps{si}, %{in_base + si}, 0;")
                ops_s.append(f"ps{si}")
            else:
                ops_s.append(f"%{in_base + si}")
            si += 1
        operands = "|".join(ops_d) + (", " if ops_s else "") + ", ".join(ops_s)
        body.append(f"{ptx} {operands};")
    text = " ".join(([f".reg .pred {', '.join(decl)};"] if decl else []) + pre + body + post)
    return "{ " + text + " }"


def _constraints(src: list[str], dst: list[str]) -> tuple[str, str]:
    outs = ", ".join(f'"={_CONSTRAINT[reg_bits(t)][0]}"(d{i})' for i, t in enumerate(dst))
    ins = ", ".join(f'"{_CONSTRAINT[reg_bits(t)][0]}"(s{i})' for i, t in enumerate(src))
    return outs, ins


def kernel_source(v: Variant) -> str:
    src, dst = operand_types(v)
    links = list(v.chain) or [(v.ptx, v.ndst, v.nsrc)]
    outs, ins = _constraints(src, dst)
    loads = "".join(f"  {_CONSTRAINT[reg_bits(t)][1]} s{i} = ({_CONSTRAINT[reg_bits(t)][1]})in[{i} * n + i];\n"
                    for i, t in enumerate(src))
    decls = "".join(f"  {_CONSTRAINT[reg_bits(t)][1]} d{i} = 0;\n" for i, t in enumerate(dst))
    stores = "".join(f"  out[{i} * n + i] = d{i};\n" for i in range(len(dst)))
    if v.warp:
        return _warp_kernel(v, src, dst, links, outs, ins, decls, stores)
    if "lut" in v.roles:
        k = v.roles.index("lut")
        cases = "".join(f'    case {lut}: asm volatile("{_asm_block(links, src, dst, 0, len(dst), {k: lut})}" '
                        f': {outs} : {ins}); break;\n' for lut in range(256))
        run = f"  switch (s{k} & 255u) {{\n{cases}  }}\n"
    else:
        run = f'  asm volatile("{_asm_block(links, src, dst, 0, len(dst))}" : {outs} : {ins});\n'
    return (f"// {v.ptx}\n"
            f'extern "C" __global__ void {v.kernel}(const unsigned long long* __restrict__ in, '
            f"unsigned long long* __restrict__ out, long long n) {{\n"
            f"  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"  if (i >= n) return;\n{loads}{decls}{run}{stores}}}\n")


def _warp_kernel(v, src, dst, links, outs, ins, decls, stores) -> str:
    # every lane holds its sources before the branch, so a lane that does not execute still has them
    keep = ", ".join(f'"+{_CONSTRAINT[reg_bits(t)][0]}"(s{i})' for i, t in enumerate(src))
    decls = "".join(f"  {_CONSTRAINT[reg_bits(t)][1]} d{i} = {SENTINEL}u;\n" for i, t in enumerate(dst))
    loads = "".join(f"  {_CONSTRAINT[reg_bits(t)][1]} s{i} = ({_CONSTRAINT[reg_bits(t)][1]})in[{i} * n + i];\n"
                    for i, t in enumerate(src[:-1]))
    return (f"// {v.ptx} ({v.ndst} destination{'s' if v.ndst > 1 else ''})\n"
            f'extern "C" __global__ void {v.kernel}_{v.ndst}(const unsigned long long* __restrict__ in, '
            f"const unsigned* __restrict__ wi, unsigned long long* __restrict__ out, long long nw) {{\n"
            f"  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"  const long long w = i / FS_LANES;\n"
            f"  const unsigned lane = threadIdx.x % FS_LANES;\n"
            f"  if (w >= nw) return;\n"
            f"  const long long n = nw * FS_LANES;\n"
            f"  const unsigned act = wi[w], how = wi[2 * nw + w];\n"
            f"  unsigned s{len(src) - 1} = wi[nw + w];\n{loads}"
            f'  asm volatile("" : {keep});\n{decls}'
            f"  const bool on = (act >> lane) & 1u;\n"
            f"  if (!on && how) return;\n"
            f'  if (on) asm volatile("{_asm_block(links, src, dst, 0, len(dst))}" : {outs} : {ins});\n'
            f"{stores}}}\n")


def kernel_name(v: Variant) -> str:
    return f"{v.kernel}_{v.ndst}" if v.warp else v.kernel


# ---------------------------------------------------------------------------------------------
# fragsim's side

def model_thread(v: Variant, cols: list[np.ndarray]) -> list[np.ndarray]:
    """fragsim's destinations of a thread or chain variant (carry threaded through ``%cc``)."""
    outs: list[np.ndarray] = []
    cf = np.zeros(len(cols[0]) if cols else 0, bool)
    k = 0
    for spec, sem in _links(v):
        args = [to_operand(c, t) for c, t in zip(cols[k: k + spec.nsrc], sem.src)]
        k += spec.nsrc
        reads, writes = carry_operands(spec, sem)
        res = list(sem.fn(*args, *([cf] if reads else [])))
        if writes:
            cf = res.pop()
        outs += res
    return outs


def compare(dst: list[str], hw: list[np.ndarray], model: list[np.ndarray]) -> np.ndarray:
    """Bool per case: some destination differs (in the type's bits; a predicate as 0/1)."""
    bad = np.zeros(hw[0].shape if hw else (0,), bool)
    for t, h, m in zip(dst, hw, model):
        if t == "pred":
            bad |= (h != 0) != np.asarray(m, bool)
        else:
            bits = TYPES[t].bits
            low = h & np.uint64((1 << bits) - 1) if bits < 64 else h
            bad |= low != np.asarray(m).astype(np.uint64)
    return bad


def thread_undefined(v: Variant, cols: list[np.ndarray]) -> np.ndarray:
    """Cases the PTX ISA leaves undefined: fns with a base above 31."""
    if v.ptx == "fns.b32":
        return cols[1] > 31
    return np.zeros(len(cols[0]), bool)


def warp_inputs(v: Variant, nw: int, rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
    """Per-lane sources (nw, 32) each (the membermask last) and per-warp (act, mem, how): the lanes
    that execute, the membermask, and whether the others exited (1) or diverged away (0)."""
    full = np.uint64((1 << WARP_LANES) - 1)
    klass = rng.integers(0, 5, nw)        # 0 whole warp, 1 random, 2 one lane, 3 low half, 4 sparse
    rnd = _random_bits(rng, WARP_LANES, nw)
    act = np.select([klass == 0, klass == 1, klass == 2, klass == 3],
                    [np.full(nw, full), rnd, np.uint64(1) << rng.integers(0, WARP_LANES, nw).astype(np.uint64),
                     np.full(nw, np.uint64((1 << WARP_LANES // 2) - 1))], rnd & _random_bits(rng, WARP_LANES, nw))
    act = np.where(act == 0, np.uint64(1), act)
    how = (rng.random(nw) < 0.5).astype(np.uint64)
    mem = np.where(how == 1, act | (_random_bits(rng, WARP_LANES, nw) & ~act), act)
    src, _ = operand_types(v)
    cols = []
    for role, t in zip(v.roles, src):
        shape = (nw, WARP_LANES)
        per_warp = rng.random(nw) < 0.5                 # a value the whole warp shares, or one per lane
        if role == "member":
            cols.append(np.broadcast_to(mem[:, None], shape).copy())
        elif role == "lane":
            lane_vals = np.concatenate([np.arange(0, WARP_LANES + 8, dtype=np.uint64), _random_bits(rng, 32, 8)])
            x = _pick(rng, lane_vals, nw * WARP_LANES).reshape(shape)
            cols.append(np.where(per_warp[:, None], x[:, :1], x))
        elif role == "shflc":
            # c = ((32 - width) << 8) | clamp: segments of width lanes (PTX ISA shfl.sync)
            widths = np.array([1 << k for k in range(WARP_LANES.bit_length())], np.uint64)
            seg = (np.uint64(WARP_LANES) - _pick(rng, widths, nw * WARP_LANES)) << np.uint64(SEGMASK_SHIFT)
            top = np.full(seg.shape, np.uint64(WARP_LANES - 1))
            common = np.stack([seg | top, seg, top, _random_bits(rng, SEGMASK_SHIFT + 5, seg.size),
                               _random_bits(rng, 32, seg.size)])
            x = common[rng.integers(0, 5, seg.size), np.arange(seg.size)].reshape(shape)
            cols.append(np.where(per_warp[:, None], x[:, :1], x))
        elif role == "pred":
            p = rng.random(nw)[:, None]
            cols.append((rng.random(shape) < np.where(per_warp[:, None], np.round(p), p)).astype(np.uint64))
        elif role == "few":
            bits = TYPES[t].bits
            few = _pick(rng, _edge_values(bits), nw * 4).reshape(nw, 4)
            idx = rng.integers(0, rng.integers(1, 5, nw)[:, None], shape)
            x = np.take_along_axis(few, idx, axis=1)
            if bits == 64:          # equal low halves, different high halves
                x = np.where(rng.random(shape) < 0.2, x ^ (np.uint64(1) << np.uint64(40)), x)
            cols.append(x)
        else:
            x, _ = draw(role, t, nw * WARP_LANES, rng)
            x = x.reshape(shape)
            cols.append(np.where(per_warp[:, None] & (rng.random(nw) < 0.3)[:, None], x[:, :1], x))
    return cols, np.stack([act, mem, how]).astype(np.uint32)


def _lane_mask(bits: np.ndarray) -> np.ndarray:
    return ((bits.astype(np.uint64)[:, None] >> np.arange(WARP_LANES, dtype=np.uint64)) & np.uint64(1)) == 1


def model_warp(v: Variant, cols: list[np.ndarray], wi: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """(fragsim's destinations (nw, 32), the lanes compared: those that execute).  Non-executing
    lanes' sources are zeros, as the machine passes them (a shfl reading one gives 0, as the H100)."""
    ((spec, sem),) = _links(v)
    mask = _lane_mask(wi[0])
    args = [np.where(mask, to_operand(c, t), to_operand(np.zeros_like(c), t)) for c, t in zip(cols, sem.src)]
    return list(sem.fn(mask, *args)), mask


# ---------------------------------------------------------------------------------------------
# the family

def _keep_order(edge: np.ndarray, bad: np.ndarray, undefined: np.ndarray, keep: int) -> np.ndarray:
    """Indices of the cases a recording keeps: mismatches (capped), undefined ones, then the most
    edge operands first."""
    idx = np.arange(len(edge))
    first = np.concatenate([idx[bad][:MISMATCH_CAP], idx[undefined & ~bad][: keep // 4]])
    rest = idx[~bad & ~undefined]
    rest = rest[np.argsort(-edge[rest], kind="stable")][:keep]
    return np.sort(np.concatenate([first, rest]))


def _hex(x: Any) -> str:
    return hex(int(x))


class PtxIntFamily(RunnerFamily):
    name = "ptx_int"
    summary = ("integer, bit, predicate and warp PTX instructions (fragsim.ptx.semantics integer/warp) "
               "(--cases: per variant, default 65,536)")
    default_cases = 1 << 16
    options = frozenset({"cases", "seed", "forms", "record", "keep", "replay", "quiet", "json", "json_file"})
    replay_expects = "a folder with the int.npz and warp.npz that --family ptx_int --record wrote"

    def selected(self, forms: list[str] | None) -> list[Variant]:
        vs = variants()
        if forms:
            vs = [v for v in vs if any(f in v.ptx for f in forms)]
            if not vs:
                raise ValueError(f"--forms {' '.join(forms)}: no ptx_int variant contains any of these")
        return vs

    def source(self, cc: int) -> str:
        return unit(*(kernel_source(v) for v in variants()))

    def compile(self, info: dict[str, Any]) -> Any:
        return compile.nvrtc(self.source(info["cc_int"]), [kernel_name(v) for v in variants()],
                             f"the ptx_int kernels for compute capability {info['cc']}")

    # -- the GPU run ------------------------------------------------------------------------
    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        cp = runner.import_cupy()
        if info["cc_int"] < 90:
            raise runner.GpuUnavailable(f"ptx_int needs an sm_90 GPU (add.u16x2, min.relu.s16x2, elect.sync); "
                                        f"{info['device']} has compute capability {info['cc']}")
        fns = self.compile(info)
        rng = np.random.default_rng(args.seed)
        keep = KEEP if args.keep is None else args.keep
        state = _State()
        for v in self.selected(args.forms):
            if v.warp:
                nw = max(1, args.cases // WARP_LANES)
                cols, wi = warp_inputs(v, nw, rng)
                hw = self.launch_warp(cp, fns[kernel_name(v)], cols, wi, len(operand_types(v)[1]))
                state.warp(v, cols, wi, hw, max(1, keep // 4))
            else:
                cols, edge = thread_inputs(v, args.cases, rng)
                hw = self.launch(cp, fns[kernel_name(v)], cols, len(operand_types(v)[1]))
                state.thread(v, cols, edge, hw, keep)
            say(f"{v.ptx}{'' if v.ndst == 1 or not v.warp else ' (p)'}: {state.last}")
        if args.record:
            meta = dict(info, arch=arch_for_cc(info["cc_int"] // 10, info["cc_int"] % 10, info["device"]),
                        seed=args.seed, of=args.cases,
                        command=f"fragsim gpu-check --family ptx_int --cases {args.cases} --seed {args.seed} "
                                f"--record DIR --keep {keep}")
            state.save(args.record, meta)
        return state.report()

    def launch(self, cp: Any, fn: Any, cols: list[np.ndarray], ndst: int) -> list[np.ndarray]:
        n = len(cols[0])
        if n == 0:
            return [np.zeros(0, np.uint64) for _ in range(ndst)]
        inp = cp.asarray(np.stack(cols))
        out = cp.zeros((ndst, n), cp.uint64)
        fn(((n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK,), (THREADS_PER_BLOCK,), (inp, out, np.int64(n)))
        return list(cp.asnumpy(out))

    def launch_warp(self, cp: Any, fn: Any, cols: list[np.ndarray], wi: np.ndarray, ndst: int) -> list[np.ndarray]:
        nw = wi.shape[1]
        lanes = [c.reshape(-1) for c in cols[:-1]]
        inp = cp.asarray(np.stack(lanes) if lanes else np.zeros((1, nw * WARP_LANES), np.uint64))
        out = cp.zeros((ndst, nw * WARP_LANES), cp.uint64)
        fn(((nw * WARP_LANES + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK,), (THREADS_PER_BLOCK,),
           (inp, cp.asarray(np.ascontiguousarray(wi)), out, np.int64(nw)))
        return [o.reshape(nw, WARP_LANES) for o in cp.asnumpy(out)]

    # -- the replay --------------------------------------------------------------------------
    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        state = _State()
        wanted = {v.ptx + f"/{v.ndst}": v for v in self.selected(args.forms)}
        for name in FILES:
            path = os.path.join(args.replay, f"{name}.npz")
            if not os.path.isfile(path):
                raise ValueError(f"--replay {args.replay}: no {name}.npz there; expected {self.replay_expects}")
            meta, arrays = record.load(path, (KIND,))
            for entry in meta["variants"]:
                v = wanted.get(entry["ptx"] + f"/{entry['ndst']}")
                if v is None:
                    v = recorded_variant(entry["ptx"], int(entry["ndst"]))
                if v is None or not _chosen(v, args.forms):
                    continue
                src, dst = operand_types(v)
                rows = slice(entry["start"], entry["start"] + min(entry["kept"], args.cases))
                cols = list(arrays["src"][rows, : len(src)].swapaxes(0, 1))
                hw = list(arrays["dst"][rows, : len(dst)].swapaxes(0, 1))
                if v.warp:
                    state.warp(v, cols, arrays["w"][rows].T, hw, 0)
                else:
                    state.thread(v, cols, np.zeros(len(hw[0]), np.int64), hw, 0)
        return state.report()


def recorded_variant(ptx: str, ndst: int) -> Variant | None:
    """The variant a recording names (text and destination count) where today's enumeration does
    not list it in that shape (a ``shfl`` without its predicate, say): rebuilt from its table row.
    None for a chain no longer enumerated."""
    if " ; " in ptx:
        return next((v for v in _chains() if v.ptx == ptx), None)
    op, *mods = ptx.split(".")
    row, _ = table.lookup(op, tuple(mods))
    got = _resolved(op, tuple(mods), [c for c in row.operand_counts() if c[0] == ndst])
    if got is None:
        raise ValueError(f"recorded variant {ptx} with {ndst} destination(s): no form of its row takes it")
    nd, ns, sem = got
    return Variant(ptx, nd, ns, tuple(ROLE[o.kind] for o in row.srcs[:ns]), warp=sem.warp)


def _chosen(v: Variant, forms: list[str] | None) -> bool:
    return not forms or any(f in v.ptx for f in forms)


class _State:
    """Counts, mismatch details, undefined-case tallies and the kept cases of one run or replay."""

    def __init__(self) -> None:
        self.cases = self.mismatches = self.variants = 0
        self.failing: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.undefined: dict[str, dict[str, int]] = {}
        self.extension: dict[str, dict[str, int]] = {}
        #: file -> (variant, its kept sources, destinations [, per-warp act/mem/how], counts)
        self.kept: dict[str, list[tuple[Variant, list[np.ndarray], dict[str, Any]]]] = {f: [] for f in FILES}
        self.last = ""

    def _model(self, v: Variant, fn, *a):
        try:
            return fn(v, *a)
        except Exception as e:  # a model bug must not lose the GPU's answers: recorded, counted, reported
            self.errors.append(f"{v.ptx}: {type(e).__name__}: {e}")
            return None

    def thread(self, v: Variant, cols, edge, hw, keep: int) -> None:
        src, dst = operand_types(v)
        n = len(hw[0])
        undefined = thread_undefined(v, cols)
        model = self._model(v, model_thread, cols)
        bad = np.ones(n, bool) if model is None else compare(dst, hw, model) & ~undefined
        self._count(v, n, bad, lambda i: {"in": [_hex(c[i]) for c in cols], "gpu": [_hex(h[i]) for h in hw],
                                          "fragsim": None if model is None else [_hex(m[i]) for m in model]})
        for t, h in zip(dst, hw):
            if t != "pred" and TYPES[t].bits < reg_bits(t):
                self._extension(v, t, h)
        if undefined.any():
            tally = self.undefined.setdefault(v.ptx, {"cases": 0})
            tally["cases"] += int(undefined.sum())
            if model is not None:
                agree = ~compare(dst, hw, model) & undefined
                tally["as fragsim"] = tally.get("as fragsim", 0) + int(agree.sum())
        if keep:
            idx = _keep_order(edge, bad, undefined, keep)
            parts = [np.stack([c[idx] for c in cols], 1), np.stack([h[idx] for h in hw], 1)]
            self.kept["int"].append((v, parts, {"cases": n, "mismatches": int(bad.sum())}))

    def _extension(self, v: Variant, t: str, h: np.ndarray) -> None:
        """How the hardware filled the register above a narrower destination (an 8-bit type in a
        16-bit register): as the type's sign, or with zeros."""
        bits = TYPES[t].bits
        upper = h >> np.uint64(bits)
        negative = ((h >> np.uint64(bits - 1)) & np.uint64(1)) == 1
        fill = np.uint64((1 << (reg_bits(t) - bits)) - 1)
        e = self.extension.setdefault(v.ptx, {"cases": 0, "sign": 0, "zero": 0})
        e["cases"] += len(h)
        e["sign"] += int((upper == np.where(negative, fill, np.uint64(0))).sum())
        e["zero"] += int((upper == 0).sum())

    def warp(self, v: Variant, cols, wi, hw, keep: int) -> None:
        src, dst = operand_types(v)
        res = self._model(v, model_warp, cols, wi)
        if res is None:
            compared = _lane_mask(wi[0])
            bad_lane = compared
            model = None
        else:
            model, compared = res
            bad_lane = compare(dst, [h.reshape(-1) for h in hw],
                               [np.asarray(m).reshape(-1) for m in model]).reshape(compared.shape) & compared
        bad = np.asarray(np.asarray(bad_lane).any(axis=1), bool)
        nw = len(bad)

        def detail(w):
            lanes = np.flatnonzero(bad_lane[w])[:4]
            return {"act": _hex(wi[0, w]), "mem": _hex(wi[1, w]), "exited": bool(wi[2, w]),
                    "lanes": [int(x) for x in lanes],
                    "in": [[_hex(c[w, x]) for x in lanes] for c in cols[:-1]],
                    "gpu": [[_hex(h[w, x]) for x in lanes] for h in hw],
                    "fragsim": None if model is None else [[_hex(np.asarray(m)[w, x]) for x in lanes] for m in model]}
        self._count(v, nw, bad, detail, label=f"{v.ptx} ({v.ndst} dst)")
        if keep:
            idx = _keep_order(np.zeros(nw), bad, np.zeros(nw, bool), keep)
            parts = [np.stack([c[idx] for c in cols], 1), np.stack([h[idx] for h in hw], 1), wi[:, idx].T]
            self.kept["warp"].append((v, parts, {"cases": nw, "mismatches": int(bad.sum())}))

    def _count(self, v: Variant, n: int, bad: np.ndarray, detail, label: str | None = None) -> None:
        self.variants += 1
        self.cases += n
        m = int(bad.sum())
        self.mismatches += m
        self.last = f"{n:,} cases, {m:,} mismatches"
        if m:
            self.failing.append({"ptx": label or v.ptx, "cases": n, "mismatches": m,
                                 "examples": [detail(i) for i in np.flatnonzero(bad)[:DETAILS]]})

    def save(self, directory: str, meta: dict[str, Any]) -> None:
        """One record per file: ``src`` and ``dst`` the kept cases' operands as uint64 rows (zero
        columns past a variant's operands; warp cases (warps, operand, lane)), ``w`` the warps'
        act/mem/how; meta ``variants`` gives each variant's rows (start, kept) and run counts."""
        for name, entries in self.kept.items():
            if not entries:
                continue
            width = [max(e[1][i].shape[1] for e in entries) for i in range(2)]
            listing, start = [], 0
            for v, parts, counts in entries:
                listing.append({"ptx": v.ptx, "ndst": v.ndst, "start": start, "kept": len(parts[0]), **counts})
                start += len(parts[0])

            def padded(i, entries=entries, width=width):
                return np.concatenate([np.pad(p[i], [(0, 0), (0, width[i] - p[i].shape[1])] + [(0, 0)] * (p[i].ndim - 2))
                                       for _, p, _ in entries]).astype(np.uint64)
            arrays = {"src": padded(0), "dst": padded(1)}
            if name == "warp":
                arrays["w"] = np.concatenate([p[2] for _, p, _ in entries]).astype(np.uint32)
            record.save(os.path.join(directory, f"{name}.npz"), KIND, dict(meta, variants=listing), arrays)

    def report(self) -> dict[str, Any]:
        return {"cases": self.cases, "mismatches": self.mismatches, "variants": self.variants,
                "failing": self.failing, "model_errors": self.errors, "undefined": self.undefined,
                "extension": self.extension}


FAMILIES = {"ptx_int": PtxIntFamily()}
