"""The ptx_float family's cases: every floating-point instruction variant of the PTX interpreter
(fragsim.ptx.semantics.floating), grouped one generated kernel per group, the inputs of each
group, and what fragsim says the kernel writes.

A group is one instruction variant (``add.rz.ftz.f32``), or one comparison variant run with all 14
comparison operators (``setp.CMP.and.ftz.f32`` writes two bits, p and q, per operator; ``set.CMP.
u32.f16`` one destination word per operator).  Inputs are deterministic: a PCG64 stream per group
(seeded from the group's name, so groups do not shift each other), turned into operands by integer
arithmetic and IEEE float64 operations only -- the same bits on every machine.  Cases come in
blocks of ``BLOCK``: block 0 is the grid of special values (every pair of ``specials`` for binary
instructions, a 16-value grid for ternary ones), later blocks cycle through eight classes (random
bits, specials, a mix, short significands for ties and exact results, and per instruction:
cancellation, results at the subnormal boundary, results at the overflow boundary, operands at the
subnormal boundary); the ``.oob`` groups scan every NaN in blocks 1 and 2.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fragsim.facts.formats import FloatFormat
from fragsim.ptx.semantics import Semantic, Spec
from fragsim.ptx.isa import table
from fragsim.ptx.isa.table import resolve
from fragsim.ptx.semantics.floating import CMP_OPS
from fragsim.ptx.semantics.ieee import fmt, widen

#: cases per block (the unit of the recorded digests)
BLOCK = 4096
#: bits of each operand type in the kernels' arrays
BITS = {"f16": 16, "bf16": 16, "f16x2": 32, "bf16x2": 32, "f32": 32, "f64": 64, "pred": 32,
        "u16": 16, "s16": 16, "u32": 32, "s32": 32}
DTYPES = {16: np.uint16, 32: np.uint32, 64: np.uint64}
ELEM = {"f16x2": "f16", "bf16x2": "bf16"}


@dataclass(frozen=True)
class Group:
    """``name``: the instruction as written (CMP for the comparison operator of setp/set groups);
    ``specs``: what the kernel runs on each case, in output order; ``src``: operand types;
    ``out``: "elem" (the destination), "pred" (testp: 0/1), "setp" (bits p | q << 1 of operator
    k at bit 2k), "set" (one destination per operator); ``dst``: the destination type;
    ``role``: which targeted inputs it gets."""

    name: str
    specs: tuple[Spec, ...]
    src: tuple[str, ...]
    out: str
    dst: str
    role: str

    @property
    def out_bits(self) -> int:
        return 32 if self.out in ("pred", "setp") else BITS[self.dst]

    @property
    def width(self) -> int:
        """Output words per case."""
        return len(CMP_OPS) if self.out == "set" else 1


def _spec(text: str, ndst: int, nsrc: int) -> Spec:
    op, *mods = text.split(".")
    return Spec(op, tuple(mods), ndst, nsrc)


def _elem(text: str, t: str, n: int, role: str) -> Group:
    return Group(text, (_spec(text, 1, n),), (t,) * n, "elem", t, role)


def _join(*parts: str | None) -> str:
    return ".".join(p for p in parts if p)


#: the targeted inputs an opcode gets (its hard cases: cancellation, ties, overflow ...)
ROLES = {"add": "add", "sub": "sub", "mul": "mul", "fma": "fma", "mad": "fma", "div": "div", "rcp": "rcp",
         "sqrt": "sqrt", "min": "minmax", "max": "minmax", "copysign": "minmax", "neg": "unary", "abs": "unary",
         "testp": "unary", "setp": "cmp", "set": "cmp"}


def groups() -> list[Group]:
    """Every form of every instruction-table row this family validates (``Status.family ==
    "ptx_float"``), in the table's order.  A comparison's forms that differ only in the operator are
    one group (the kernel runs every operator on each case); all operands are present (``p|q``)."""
    out: list[Group] = []
    seen: set[str] = set()
    for row in table.ROWS:
        if row.status.family != "ptx_float":
            continue
        nd, ns = max(row.operand_counts())
        for form in row.syntax.forms():
            text = ".".join((row.opcode, *form))
            sem = resolve(Spec(row.opcode, form, nd, ns))
            t = sem.src[0]
            if row.opcode not in ("setp", "set"):
                kind, dst = ("pred", "pred") if row.opcode == "testp" else ("elem", t)
                role = "oob" if "oob" in form else ROLES[row.opcode]     # fma.oob: its NaN-operand cases
                out.append(Group(text, (_spec(text, nd, ns),), sem.src, kind, dst, role))
                continue
            m = row.syntax.match(form)
            assert m is not None
            name = text.replace(f".{m['CmpOp']}.", ".CMP.", 1)
            if name in seen:
                continue
            seen.add(name)
            if row.opcode == "set":
                specs = tuple(_spec(name.replace(".CMP.", f".{c}.", 1), nd, ns) for c in CMP_OPS)
                out.append(Group(name, specs, sem.src, "set", sem.dst[0], "cmp"))
                continue
            for d in sorted({d for d, _ in row.operand_counts()}, reverse=True):     # p|q, then p alone
                specs = tuple(_spec(name.replace(".CMP.", f".{c}.", 1), d, ns) for c in CMP_OPS)
                out.append(Group(name + (" p|q" if d == 2 else " p"), specs, sem.src, "setp", "pred", "cmp"))
    return out


# ------------------------------------------------------------------------------------------- CUDA

_CT = {16: "unsigned short", 32: "unsigned", 64: "unsigned long long"}
_CON = {16: "h", 32: "r", 64: "l"}


def kernel_name(index: int) -> str:
    return f"fs_ptx_float_{index}"


def _asm_operands(g: Group) -> tuple[str, str]:
    """The asm operand list and the PTX operand names %1.. of the float sources."""
    ins = []
    names = []
    for k, t in enumerate(g.src):
        ins.append(f'"{_CON[BITS[t]]}"(s{k}[i])')
        names.append(f"%{k + 1}")
    return ", ".join(ins), ", ".join(n for n, t in zip(names, g.src) if t != "pred")


def kernel_source(g: Group, index: int) -> str:
    """One kernel: case i reads operand k from array s_k, runs the group's instruction(s), writes d."""
    loads = "\n".join(f"  const {_CT[BITS[t]]}* s{k} = (const {_CT[BITS[t]]}*)s{k}_;" for k, t in enumerate(g.src))
    ins, fl = _asm_operands(g)
    pred_op = f"%{len(g.src)}" if g.src[-1] == "pred" else None
    od = _CT[g.out_bits]
    head = (f'extern "C" __global__ void {kernel_name(index)}(const void* s0_, const void* s1_, const void* s2_, '
            f'void* d_, long long n) {{\n  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n'
            f"  if (i >= n) return;\n{loads}\n  {od}* d = ({od}*)d_;\n")
    cpred = f"setp.ne.u32 c, {pred_op}, 0; " if pred_op else ""
    body = []
    for k, spec in enumerate(g.specs):
        text = spec.text
        last = ", c" if pred_op else ""
        if g.out == "elem":
            body.append(f'  {{ {od} r; asm volatile("{{ .reg .pred c; {cpred}{text} %0, {fl}{last}; }}" : '
                        f'"={_CON[g.out_bits]}"(r) : {ins}); d[i] = r; }}')
        elif g.out == "pred":
            body.append(f'  {{ unsigned r; asm volatile("{{ .reg .pred p; {text} p, {fl}; selp.u32 %0, 1, 0, p; }}" : '
                        f'"=r"(r) : {ins}); d[i] = r; }}')
        elif g.out == "setp":
            if spec.ndst == 2:
                dst, q = "p|q", " @q add.u32 %0, %0, 2;"
            else:
                dst, q = "p", ""
            body.append(f'  {{ unsigned r; asm volatile("{{ .reg .pred p, q, c; {cpred}{text} {dst}, {fl}{last}; '
                        f'selp.u32 %0, 1, 0, p;{q} }}" : "=r"(r) : {ins}); w |= r << {2 * k}; }}')
        else:
            body.append(f'  {{ {od} r; asm volatile("{{ .reg .pred c; {cpred}{text} %0, {fl}{last}; }}" : '
                        f'"={_CON[g.out_bits]}"(r) : {ins}); d[i * {g.width} + {k}] = r; }}')
    if g.out == "setp":
        return head + "  unsigned w = 0;\n" + "\n".join(body) + "\n  d[i] = w;\n}\n"
    return head + "\n".join(body) + "\n}\n"


# ------------------------------------------------------------------------------------------ inputs

def seed_of(name: str, seed: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}/{name}".encode()).digest()[:8], "little")


def _consts(f: FloatFormat) -> dict[str, int]:
    man = f.man_bits
    sign = 1 << (f.storage_bits - 1)
    inf = ((1 << f.exp_bits) - 1) << man
    one = f.bias << man
    return {"sign": sign, "inf": inf, "one": one, "man": man, "minnorm": 1 << man, "max": inf - 1}


def specials(name: str) -> np.ndarray:
    """Special values of the format ``name`` (bits, uint64): zeros, subnormal and normal extremes,
    values around 1, infinities, quiet and signalling NaNs with payloads, of both signs."""
    f = fmt(name)
    k = _consts(f)
    s, inf, one, man = k["sign"], k["inf"], k["one"], k["man"]
    vals = [0, s, 1, s | ((1 << man) - 1), 1 << man, s | (1 << man) | 1, one, s | one, one | (1 << (man - 1)),
            one + 1, one - 1, s | ((f.bias + 1) << man), (f.bias - 1) << man, ((f.bias + man) << man) | 1,
            inf - 1, s | (inf - 1), inf, s | inf, f.canonical_nan, inf | (1 << (man - 1)),
            s | inf | (1 << (man - 1)) | 5, inf | 1, inf | (1 << (man - 2)) | 3, s | inf | 1]
    return np.array(vals, np.uint64)


def grid16(name: str) -> np.ndarray:
    """The 16 values of the ternary grid."""
    return specials(name)[[0, 1, 2, 3, 4, 6, 7, 8, 12, 13, 14, 17, 16, 18, 20, 21]]


class _Gen:
    """Operand bits of one element format from a raw 64-bit stream (uint64 in, uint64 out)."""

    def __init__(self, name: str):
        self.name = name
        self.f = fmt(name)
        self.k = _consts(self.f)
        self.spec = specials(name)

    def mask(self) -> np.uint64:
        return np.uint64((1 << self.f.storage_bits) - 1)

    def rand(self, r: np.ndarray) -> np.ndarray:
        return r & self.mask()

    def special(self, r: np.ndarray) -> np.ndarray:
        return self.spec[(r % np.uint64(len(self.spec))).astype(np.int64)]

    def _sign(self, r: np.ndarray) -> np.ndarray:
        return (r >> np.uint64(63)) << np.uint64(self.f.storage_bits - 1)

    def short(self, r: np.ndarray, spread: int = 4) -> np.ndarray:
        """Exponent within +-spread of 1.0's, only the top 1..man significand bits random."""
        man = self.k["man"]
        e = np.uint64(self.f.bias - spread) + (r >> np.uint64(40)) % np.uint64(2 * spread + 1)
        t = (r >> np.uint64(32)) % np.uint64(man) + np.uint64(1)
        cut = np.uint64(man) - t
        m = ((r & np.uint64((1 << man) - 1)) >> cut) << cut
        return self._sign(r) | (e << np.uint64(man)) | m

    def boundary(self, r: np.ndarray) -> np.ndarray:
        """Within 32 units of the smallest normal number, either sign."""
        d = (r >> np.uint64(8)) % np.uint64(64)
        return self._sign(r) | (np.uint64(self.k["minnorm"]) + d - np.uint64(32))

    def big(self, r: np.ndarray) -> np.ndarray:
        return self._sign(r) | (np.uint64(self.k["max"]) - (r >> np.uint64(8)) % np.uint64(64))

    def nan(self, r: np.ndarray) -> np.ndarray:
        pay = (r >> np.uint64(8)) % np.uint64((1 << self.k["man"]) - 1) + np.uint64(1)
        return self._sign(r) | np.uint64(self.k["inf"]) | pay

    def mixed(self, r: np.ndarray) -> np.ndarray:
        pick = (r >> np.uint64(4)) % np.uint64(6)
        out = self.rand(r)
        for i, g in enumerate((self.special, self.short, self.boundary, self.big, self.nan)):
            out = np.where(pick == i + 1, g(r), out)
        return out

    def normal_exp(self, r: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Positive normal values 2**e * (1 + random), e int64 (clipped to the normal range)."""
        man = self.k["man"]
        eb = np.clip(e + self.f.bias, 1, 2 * self.f.bias).astype(np.uint64)
        return (eb << np.uint64(man)) | (r & np.uint64((1 << man) - 1))

    def value(self, bits: np.ndarray) -> np.ndarray:
        return widen(bits.astype(self.f.dtype), self.f)

    def bits(self, x: np.ndarray) -> np.ndarray:
        """float64 values rounded to the format (to nearest even; the host's exact conversions)."""
        x = np.asarray(x, np.float64)
        if self.name == "f64":
            return x.view(np.uint64)
        if self.name == "f32":
            return x.astype(np.float32).view(np.uint32).astype(np.uint64)
        if self.name == "f16":
            return x.astype(np.float16).view(np.uint16).astype(np.uint64)
        b = x.astype(np.float32).view(np.uint32).astype(np.uint64)        # bf16: f32, then to nearest even
        return ((b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)) & np.uint64(0xFFFF)

    def nudge(self, bits: np.ndarray, r: np.ndarray, span: int = 4) -> np.ndarray:
        """Move bits by up to +-span units (the same sign's neighbours)."""
        d = (r >> np.uint64(20)) % np.uint64(2 * span + 1)
        return (bits + d - np.uint64(span)) & self.mask()


def _targeted(role: str, cls: int, g: _Gen, r: list[np.ndarray], n_ops: int) -> list[np.ndarray]:
    """Operands of one targeted class (4: cancellation or near-equal operands, 5: results at the
    subnormal boundary, 6: results at the overflow boundary)."""
    f, k = g.f, g.k
    p = f.man_bits + 1
    sgn = np.uint64(k["sign"])
    ops = [g.mixed(x) for x in r[:n_ops]]
    with np.errstate(all="ignore"):
        if cls == 4:
            if role in ("add", "sub"):
                a = g.short(r[0], 12)
                b = a ^ sgn if role == "add" else a
                b = g.nudge(b, r[1]) + ((r[1] >> np.uint64(50)) % np.uint64(3) << np.uint64(f.man_bits))
                ops[:2] = [a, b & g.mask()]
            elif role == "mul":
                a = g.short(r[0], 8)
                ops[:2] = [a, g.nudge(g.bits(1.0 / g.value(a)), r[1])]
            elif role == "div":
                b = g.short(r[1], 8)
                m = ((r[0] >> np.uint64(3)) % np.uint64(16) + np.uint64(1)).astype(np.float64)
                exact = g.bits(g.value(b) * m)
                ops[:2] = [np.where((r[0] & np.uint64(1)) == 0, exact, g.nudge(b, r[0])), b]
            elif role == "fma":
                a, b = g.rand(r[0]), g.rand(r[1])
                a = np.where((r[2] & np.uint64(1)) == 0, g.short(r[0], 12), a)
                prod = g.value(a) * g.value(b)
                ops[:3] = [a, b, g.nudge(g.bits(-prod), r[2])]
            elif role == "rcp":
                e = ((r[0] >> np.uint64(8)) % np.uint64(2 * f.bias)).astype(np.int64) - f.bias
                ops[0] = g.nudge(g.normal_exp(np.zeros_like(r[0]), e), r[0]) | ((r[0] >> np.uint64(63)) * sgn)
            elif role == "sqrt":
                x = g.value(g.short(r[0], 8) & ~sgn)
                ops[0] = g.nudge(g.bits(x * x), r[0], 2)
            elif role in ("minmax", "cmp"):
                a = g.mixed(r[0])
                pick = (r[1] >> np.uint64(2)) % np.uint64(4)
                b = np.where(pick == 0, a, np.where(pick == 1, a ^ sgn, np.where(pick == 2, g.nudge(a, r[1], 1),
                                                                                  g.boundary(r[1]))))
                ops[:2] = [a, b]
            elif role == "oob":
                ops = [g.nan(x) if i == 0 else g.mixed(x) for i, x in enumerate(r[:n_ops])]
            else:
                ops = [np.where((x & np.uint64(1)) == 0, g.boundary(x), g.nan(x)) for x in r[:n_ops]]
            return ops
        T = (2.0 ** f.emin if cls == 5 else float(g.value(np.array([k["max"]], np.uint64))[0]))
        rel = (((r[-1] >> np.uint64(30)) % np.uint64(9)).astype(np.float64) - 4.0) * 2.0 ** -(p + 1)
        half_exp = (f.emin if cls == 5 else f.emax) // 2
        if role in ("mul", "fma", "oob"):
            e = half_exp + ((r[0] >> np.uint64(40)) % np.uint64(7)).astype(np.int64) - 3
            a = g.normal_exp(r[0], e)
            b = g.bits(T / g.value(a) * (1.0 + rel))
            ops[:2] = [a | ((r[0] >> np.uint64(63)) * sgn), b | ((r[1] >> np.uint64(63)) * sgn)]
            if n_ops == 3:
                tiny = g.rand(r[2]) & np.uint64((1 << f.man_bits) - 1)
                ops[2] = np.where((r[2] >> np.uint64(61)) % np.uint64(4) == 0, r[2] & sgn,
                                  tiny | ((r[2] >> np.uint64(63)) * sgn))
        elif role in ("add", "sub"):
            gen = g.boundary if cls == 5 else g.big
            ops[:2] = [gen(r[0]), gen(r[1])]
        elif role == "div":
            e = ((r[1] >> np.uint64(40)) % np.uint64(8)).astype(np.int64) + (2 if cls == 5 else -10)
            b = g.normal_exp(r[1], e)
            ops[:2] = [g.bits(T * g.value(b) * (1.0 + rel)) | ((r[0] >> np.uint64(63)) * sgn),
                       b | ((r[1] >> np.uint64(63)) * sgn)]
        elif role == "rcp":
            ops[0] = g.nudge(g.bits(1.0 / T * (1.0 + rel)), r[0], 2) | ((r[0] >> np.uint64(63)) * sgn)
        elif role == "sqrt":
            ops[0] = (g.boundary(r[0]) if cls == 5 else g.big(r[0])) & ~sgn
        else:
            gen = g.boundary if cls == 5 else g.big
            ops = [gen(x) for x in r[:n_ops]]
    return [x & g.mask() for x in ops]


def _grid(g: Group, e: _Gen, n_ops: int) -> list[np.ndarray]:
    """Block 0's special-value grid, element cases (as many as the grid has)."""
    vals = e.spec if n_ops < 3 else grid16(e.name)
    idx = np.indices((len(vals),) * n_ops).reshape(n_ops, -1)
    return [vals[i] for i in idx]


def element_cases(g: Group, elem: str, n: int, seed: int, n_ops: int) -> list[np.ndarray]:
    """``n`` element cases of ``n_ops`` float operands of format ``elem`` (uint64 bits)."""
    e = _Gen(elem)
    bg = np.random.PCG64(seed_of(g.name, seed))
    # interleaved, so that case i's operands depend on i alone (a replay of the first cases is a prefix)
    raw = list(bg.random_raw(n * (n_ops + 1)).reshape(n, n_ops + 1).T)
    out = [np.zeros(n, np.uint64) for _ in range(n_ops)]
    cls = np.arange(n) % 8
    for c in range(8):
        sel = cls == c
        r = [x[sel] for x in raw]
        if c == 0:
            ops = [e.rand(x) for x in r[:n_ops]]
        elif c == 1:
            ops = [e.special(x) for x in r[:n_ops]]
        elif c == 2:
            ops = [e.mixed(x) for x in r[:n_ops]]
        elif c == 3:
            ops = [e.short(x) for x in r[:n_ops]]
        elif c == 7:
            ops = [e.boundary(x) for x in r[:n_ops]]
        else:
            ops = _targeted(g.role, c, e, r, n_ops)
        for o, v in zip(out, ops):
            o[sel] = v
    grid = _grid(g, e, n_ops)
    m = min(len(grid[0]), n, BLOCK)
    for o, v in zip(out, grid):
        o[:m] = v[:m]
    if g.role == "oob" and n > BLOCK:
        # blocks 1-2: every NaN of the format in each operand position, the others 1.0 and +0.0
        every = np.arange(1 << e.f.storage_bits, dtype=np.uint64)
        nans = every[(every & ~np.uint64(e.k["sign"])) > np.uint64(e.k["inf"])]
        start = BLOCK
        for pos in range(n_ops):
            m = min(len(nans), n - start, 3 * BLOCK - start)
            if m <= 0:
                break
            for j, o in enumerate(out):
                o[start:start + m] = nans[:m] if j == pos else (np.uint64(0) if j == 2 else np.uint64(e.k["one"]))
            start += m
    return out


def inputs(g: Group, n: int, seed: int) -> list[np.ndarray]:
    """The kernel's operand arrays for ``n`` cases (float types as their bits, pred as 0/1 words)."""
    floats = [t for t in g.src if t != "pred"]
    t = floats[0]
    elem = ELEM.get(t, t)
    packed = t in ELEM
    m = 2 * n if packed else n
    ops = element_cases(g, elem, m, seed, len(floats))
    arrs: list[np.ndarray] = []
    for x in ops:
        if packed:
            x = x.reshape(n, 2)
            arrs.append((x[:, 0] | (x[:, 1] << np.uint64(16))).astype(np.uint32))
        else:
            arrs.append(x.astype(DTYPES[BITS[t]]))
    if "pred" in g.src:
        bg = np.random.PCG64(seed_of(g.name + "/pred", seed))
        arrs.append((bg.random_raw(n) & np.uint64(1)).astype(np.uint32))
    return arrs


# ------------------------------------------------------------------------------------------ fragsim

def _resolve(spec: Spec) -> Semantic:
    """floating.py's resolver of ``spec`` (not the package's dispatch: what is checked is floating.py)."""
    return resolve(spec)


def _as_operand(x: np.ndarray, t: str) -> np.ndarray:
    return x.astype(bool) if t == "pred" else x


def predict(g: Group, arrays: list[np.ndarray]) -> np.ndarray:
    """What fragsim says the group's kernel writes for the operand arrays (shape (n,) or (n, 14))."""
    ops = [_as_operand(x, t) for x, t in zip(arrays, g.src)]
    dt = DTYPES[g.out_bits]
    if g.out == "elem":
        (d,) = _resolve(g.specs[0]).fn(*ops)
        return np.asarray(d).astype(dt)
    if g.out == "pred":
        (p,) = _resolve(g.specs[0]).fn(*ops)
        return np.asarray(p).astype(dt)
    if g.out == "setp":
        w = np.zeros(len(arrays[0]), np.uint32)
        for k, spec in enumerate(g.specs):
            res = _resolve(spec).fn(*ops)
            bits = res[0].astype(np.uint32) | (res[1].astype(np.uint32) << np.uint32(1) if len(res) > 1 else 0)
            w |= bits << np.uint32(2 * k)
        return w
    cols = [np.asarray(_resolve(s).fn(*ops)[0]).astype(dt) for s in g.specs]
    return np.stack(cols, axis=1)


def block_digests(out: np.ndarray) -> np.ndarray:
    """8-byte digests (uint64) of each block of cases of a kernel's output."""
    n = out.shape[0]
    digests = []
    for s in range(0, n, BLOCK):
        h = hashlib.sha256(np.ascontiguousarray(out[s:s + BLOCK]).tobytes()).digest()
        digests.append(int.from_bytes(h[:8], "little"))
    return np.array(digests, np.uint64)


Predictor = Callable[[Group, list[np.ndarray]], np.ndarray]
