"""The ptx_cvt family: every ``cvt`` with a floating-point type that sm_90 defines, on the GPU against
``fragsim.ptx.semantics.convert``, bit for bit (``fragsim gpu-check --family ptx_cvt``).

One generated PTX kernel per variant (``variants()``: every modifier combination of ``candidates()``
the resolver takes -- the same set ptxas 13.0 takes for sm_90a, tests/test_ptx_cvt.py checks that);
each thread loads its source register(s) from a global array, converts, and stores the destination
register.  The module is loaded as PTX text (the driver compiles it for the device).

Inputs, per source type (a *group*: ``f16``, ``f32``, ``s64`` ..., and ``f32x2`` for the forms that
convert two f32): the *probes* -- signed zeros, infinities, NaNs with payloads in every part of the
mantissa, subnormals, and for every destination format its smallest subnormal, largest subnormal,
smallest normal, largest finite value and the halfway points around them, 1.0, and the ends of every
integer range with their halves, each with its neighbours one bit below and above -- then --cases
*bulk* cases: every word of the 16-bit sources (f16, bf16, e4m3x2, e5m2x2, each half of f16x2, the
low 16 bits of u16/s16), else random words, random values around each destination's range with
forced halfway bits, and random integers of every length.  Integer sources of 8 and 16 bits come in
32-bit registers with random upper bits (cvt reads the low bits); integer results of 8 and 16 bits
go to 32-bit registers (a signed result sign-extends, as fragsim's machine writes it).

``--record DIR`` writes DIR/<group>.npz (record kind "ptx-cvt"): the probes and the first --keep bulk
cases (default 256) with every variant's hardware result, plus every mismatching case (up to
``MISMATCH_CAP`` per variant); ``--replay DIR`` runs them through fragsim again; ``shrink`` keeps a
subset (tests/data/ptx/cvt: the probes and 64 bulk cases of the H100 run).  ``ptxas_accepts`` says
which forms ptxas assembles (tests/data/ptx/cvt/ptxas_sm90a.txt, the resolver's reference).
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fragsim.facts.formats import FORMATS
from fragsim.ptx.semantics import Semantic, Spec
from fragsim.ptx.isa import table
from fragsim.ptx.isa.table import resolve as resolve_cvt
from fragsim.ptx.semantics.convert import FLOATS, INTS
from fragsim.ptx.types import TYPES

from .. import compile, record, runner
from ..family import RunnerFamily, Say

KIND = "ptx-cvt"
#: Mismatching cases kept per variant in a recording (all are counted).
MISMATCH_CAP = 4096
THREADS = 256
PTX_VERSION = "8.7"
PACKED_F32 = ("f16x2", "bf16x2", "e4m3x2", "e5m2x2")
TAGS = ("probe", "bulk")


# ---------------------------------------------------------------------------------------------
# the variants


def candidates() -> list[str]:
    """Every modifier combination tried: each rounding (none, .rn .. .rpi, .rna) with and without
    .ftz, .sat, .relu and .satfinite, between every pair of scalar types with a float on a side, and
    the packed and 8-bit forms."""
    out = []
    rnds = ("", "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna")
    scal = FLOATS + INTS
    for d, a in itertools.product(scal, scal):
        if d in INTS and a in INTS:
            continue
        for r, ftz, sat, relu, sf in itertools.product(rnds, (0, 1), (0, 1), (0, 1), (0, 1)):
            if (relu or sf) and d not in ("f16", "bf16"):
                continue
            mods = [m for m, on in ((r, r), ("ftz", ftz), ("sat", sat), ("relu", relu), ("satfinite", sf)) if on]
            out.append(".".join(["cvt", *mods, d, a]))
    packed = [(d, "f32") for d in (*PACKED_F32, "tf32")] + [
        ("e4m3x2", "f16x2"), ("e5m2x2", "f16x2"), ("f16x2", "e4m3x2"), ("f16x2", "e5m2x2")]
    for (d, a), r, relu, sf in itertools.product(packed, rnds, (0, 1), (0, 1)):
        mods = [m for m, on in ((r, r), ("relu", relu), ("satfinite", sf)) if on]
        out.append(".".join(["cvt", *mods, d, a]))
    return out


def nsrc(text: str) -> int:
    """Source operands of a cvt (two for the forms that pack two f32)."""
    *_, d, a = text.split(".")
    return 2 if a == "f32" and d in PACKED_F32 else 1


def spec(text: str) -> Spec:
    op, *mods = text.split(".")
    return Spec(op, tuple(mods), 1, nsrc(text))


def ptxas_accepts(texts: list[str], arch: str = "sm_90a") -> list[str]:
    """Those of ``texts`` that ptxas assembles for ``arch`` (each as a kernel of one module: ptxas
    names the lines it refuses).  tests/data/ptx/cvt/ptxas_sm90a.txt holds its verdict on
    ``candidates()``."""
    import re
    import subprocess
    lines = [f".version {PTX_VERSION}", f".target {arch}", ".address_size 64"]
    where = {}
    for i, text in enumerate(texts):
        *_, d, a = text.split(".")
        ra, rd = reg_bits(a, d), reg_bits(d, a)
        srcs = "%a, %b" if nsrc(text) == 2 else "%a"
        lines += [f".visible .entry {kernel_name(i)}(.param .u64 p)", "{",
                  f"  .reg .b{ra} %a, %b;", f"  .reg .b{rd} %d;", "  .reg .b64 %q;", "  ld.param.u64 %q, [p];",
                  f"  ld.global.b{ra} %a, [%q];", f"  ld.global.b{ra} %b, [%q+8];"]
        where[len(lines) + 1] = i
        lines += [f"  {text} %d, {srcs};", f"  st.global.b{rd} [%q+16], %d;", "  ret;", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cvt.ptx")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = subprocess.run([compile.tool("ptxas"), f"-arch={arch}", path, "-o", os.path.join(tmp, "cvt.cubin")],
                           capture_output=True, text=True)
    refused = {where.get(int(m.group(1))) for m in re.finditer(r"line (\d+); error", r.stderr)}
    if r.returncode and not refused - {None}:
        raise runner.GpuUnavailable(f"ptxas failed: {runner.one_line(r.stderr)}")
    return [t for i, t in enumerate(texts) if i not in refused]


def variants() -> list[str]:
    """Every form of every instruction-table row this family validates (``Status.family ==
    "ptx_cvt"``: cvt with a float type that sm_90 defines), in the table's order."""
    return [".".join((row.opcode, *form)) for row in table.ROWS if row.status.family == "ptx_cvt"
            for form in row.syntax.forms()]


def group_of(text: str) -> str:
    *_, d, a = text.split(".")
    return "f32x2" if nsrc(text) == 2 else a


def reg_bits(t: str, other: str = "") -> int:
    """The register type ``t`` travels in, converted to or from ``other``: 8- and 16-bit integers in
    32-bit registers, except 16-bit ones beside .bf16 (ptxas wants .b16 registers there)."""
    bits = TYPES[t].bits
    if TYPES[t].kind in "us" and bits < 32 and not (bits == 16 and other == "bf16"):
        return 32
    return bits


def registers(sem: Semantic) -> tuple[int, int]:
    """Bits of the source and destination registers of a resolved cvt."""
    return reg_bits(sem.src[0], sem.dst[0]), reg_bits(sem.dst[0], sem.src[0])


# ---------------------------------------------------------------------------------------------
# what fragsim says


def emulate(text: str, a: np.ndarray, b: np.ndarray | None = None, sem: Semantic | None = None) -> np.ndarray:
    """Destination registers of ``text`` for source registers ``a`` (``b``), as the machine reads and
    writes them: the low bits of a wider source register; an 8/16-bit integer result sign-extended
    (signed types) or zero-extended into its 32-bit register."""
    sem = resolve_cvt(spec(text)) if sem is None else sem
    srcs = [x.astype(TYPES[t].dtype) for x, t in zip((a, b), sem.src) if x is not None]
    d = sem.fn(*srcs)[0]
    t = TYPES[sem.dst[0]]
    wide = np.dtype(f"uint{registers(sem)[1]}")
    if t.kind == "s" and wide.itemsize > d.dtype.itemsize:
        return d.view(f"int{t.bits}").astype(f"int{8 * wide.itemsize}").view(wide)
    return d.astype(wide)


# ---------------------------------------------------------------------------------------------
# inputs


def _exact_bits(values: Iterable[float], fmt_name: str) -> np.ndarray:
    """float64 values -> words of a float format, rounded toward zero where not exact."""
    from fragsim.facts.formats import from_float
    v = np.asarray(list(values), np.float64)
    v = v[np.isfinite(v)]
    return from_float(v, fmt_name, "rz").astype(np.uint64)


def _landmarks() -> list[float]:
    """Values where some destination rounds, overflows or saturates (positive; negated later)."""
    out = [0.5, 1.0, 1.5, 2.5, 3.0, 0.25, 0.75, 1.25, 1 - 2.0 ** -12, 1 + 2.0 ** -11]
    for name in ("f16", "bf16", "tf32", "e4m3", "e5m2", "f32"):
        f = FORMATS[name]
        ulp0 = 2.0 ** (f.emin - f.man_bits)               # the smallest subnormal
        top = (2 - 2.0 ** -f.man_bits) * 2.0 ** f.emax if f.ieee_specials else 448.0
        ulp_top = 2.0 ** (f.emax - f.man_bits)
        mn = 2.0 ** f.emin
        out += [ulp0 / 4, ulp0 / 2, ulp0 * 0.75, ulp0, ulp0 * 1.5, ulp0 * 2, ulp0 * 2.5, ulp0 * 3,
                mn - ulp0, mn - ulp0 / 2, mn, mn + ulp0 / 2, mn * 1.5,
                1 + 2.0 ** -(f.man_bits + 1), 1 + 3 * 2.0 ** -(f.man_bits + 1),
                top, top + ulp_top / 4, top + ulp_top / 2, top + ulp_top, 2.0 ** (f.emax + 1)]
    for w in (8, 16, 32, 64):
        for v in (2.0 ** w, 2.0 ** (w - 1)):
            out += [v - 1, v - 0.5, v, v + 0.5, v + 1]
    return out


def _nan_words(fmt_name: str) -> list[int]:
    f = FORMATS[fmt_name]
    e = ((1 << f.exp_bits) - 1) << f.exp_shift
    full = (1 << f.man_bits) - 1
    q = 1 << (f.man_bits - 1)
    pays = {q, 1, full, q | 1, q >> 1, full ^ q, 1 << (f.man_bits // 2)}
    if f.man_bits > 13:                                     # payloads that tf32/bf16/f16 drop
        pays |= {(1 << 13) - 1, 1 << 12, 1 << 13, (1 << 16) - 1, q | ((1 << 13) - 1), 1 << (f.man_bits - 10)}
    return [e | (p << f.ignored_low_bits) for p in sorted(pays)]


def float_probes(fmt_name: str) -> np.ndarray:
    """Probe words of a float format (both signs, each with its neighbours)."""
    f = FORMATS[fmt_name]
    base = _exact_bits(_landmarks(), fmt_name)
    mx = (1 << (f.storage_bits - 1)) - 1
    near = np.concatenate([base, base + np.uint64(1), np.where(base > 0, base - np.uint64(1), base)])
    e_all = ((1 << f.exp_bits) - 1) << f.exp_shift
    special = np.array([0, 1, 2, 3, (1 << f.exp_shift) - 1, 1 << f.exp_shift, e_all - 1, e_all,
                        *_nan_words(fmt_name)], np.uint64)
    w = np.unique(np.concatenate([near[near <= mx], special]))
    return np.concatenate([w, w | np.uint64(1 << f.sign_shift)]).astype(f.dtype)


def int_probes(t: str) -> np.ndarray:
    """Probe words of an integer type: its ends, and around 2**k the points where f16, bf16, f32 and
    f64 round (halfway, just above and below, odd and even), both signs for signed types."""
    bits = TYPES[t].bits
    signed = TYPES[t].kind == "s"
    vals = {0, 1, 2, 3, (1 << bits) - 1, (1 << (bits - 1)) - 1, 1 << (bits - 1)}
    for k in range(bits):
        for p in (11, 8, 24, 53):
            half = 1 << (k - p) if k - p >= 0 else 0
            ulp = 1 << (k - p + 1) if k - p + 1 >= 0 else 1
            for off in (0, 1, -1, half, half + 1, half - 1, half + ulp, half + ulp - 1, ulp):
                vals.add((1 << k) + off)
                if k + 1 < bits:
                    vals.add((1 << (k + 1)) - off)
    for v in (65504, 65519, 65520, 65535):
        vals.add(v)
    mask = (1 << bits) - 1
    out = {v & mask for v in vals if 0 <= v <= mask}
    if signed:
        out |= {(-v) & mask for v in vals if 0 < v <= (1 << (bits - 1))}
    return np.array(sorted(out), np.uint64).astype(np.dtype(f"uint{bits}"))


def _random_float(fmt_name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """A third random words, a third values near each destination's range with random (often
    halfway) low bits, a third random integers plus a half, a quarter or nothing."""
    f = FORMATS[fmt_name]
    dt = np.dtype(f"uint{f.storage_bits}")
    k = n // 3
    words = rng.integers(0, 1 << f.storage_bits, n - 2 * k, dtype=np.uint64, endpoint=False)
    near = []
    for name in ("f16", "bf16", "tf32", "e4m3", "e5m2", "f32"):
        t = FORMATS[name]
        m = k // 6 + 1
        e = rng.integers(t.emin - t.man_bits - 3, t.emax + 3, m)
        mant = rng.random(m) + 1.0
        # round the mantissa to the destination's precision, then add a half ulp (a tie) half the time
        step = 2.0 ** -t.man_bits
        mant = np.floor(mant / step) * step + np.where(rng.random(m) < 0.5, step / 2, 0.0)
        near.append(np.ldexp(mant, e))
    near_v = np.concatenate(near)[:k]
    ints = np.ldexp(rng.random(k) + 1.0, rng.integers(0, 66, k)).round() + rng.choice([0.0, 0.5, 0.25], k)
    vals = np.concatenate([near_v, ints]) * rng.choice([-1.0, 1.0], 2 * k)
    from fragsim.facts.formats import from_float
    with np.errstate(over="ignore"):
        conv = from_float(vals, fmt_name, "rz").astype(np.uint64)
    return np.concatenate([words, conv]).astype(dt)


def _random_int(t: str, n: int, rng: np.random.Generator) -> np.ndarray:
    bits = TYPES[t].bits
    half = n // 2
    words = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    length = rng.integers(0, bits + 1, n - half).astype(np.uint64)
    mask = np.where(length >= 64, ~np.uint64(0), (np.uint64(1) << np.minimum(length, 63)) - np.uint64(1))
    short = words[half:] & mask
    if TYPES[t].kind == "s":
        short = np.where(rng.random(n - half) < 0.5, ~short + np.uint64(1), short)
    return np.concatenate([words[:half], short]).astype(np.dtype(f"uint{bits}"))


@dataclass
class Cases:
    a: np.ndarray                 # source registers
    b: np.ndarray | None          # second source (f32x2)
    tag: np.ndarray               # uint8 index into TAGS
    probes: int                   # the first ``probes`` cases are probes


def _widen(words: np.ndarray, t: str, rng: np.random.Generator) -> np.ndarray:
    """Integer words of 8/16 bits in 32-bit registers with random upper bits (every other case)."""
    bits = TYPES[t].bits
    if reg_bits(t) == bits:
        return words
    hi = rng.integers(0, 1 << (32 - bits), words.size, dtype=np.uint64).astype(np.uint32) << np.uint32(bits)
    hi[::2] = 0
    return words.astype(np.uint32) | hi


def group_cases(group: str, bulk: int, seed: int) -> Cases:
    """The probes and ``bulk`` bulk cases of one source group (16-bit sources: all their words)."""
    rng = np.random.default_rng([seed, sum(map(ord, group))])
    if group == "f32x2":
        p = float_probes("f32")
        pa = np.repeat(p, 2)
        pb = np.concatenate([p, rng.permutation(p)])         # each probe beside itself and a random one
        pb = pb[: pa.size]
        ba = _random_float("f32", bulk, rng)
        bb = rng.permutation(_random_float("f32", bulk, rng))
        return _cases(np.concatenate([pa, ba]), np.concatenate([pb, bb]), pa.size)
    if group in ("e4m3x2", "e5m2x2"):
        f8 = FORMATS[group[:4]]
        p = np.concatenate([float_probes(f8.name).astype(np.uint16),
                            float_probes(f8.name).astype(np.uint16) << np.uint16(8)])
        return _cases(np.concatenate([p, np.arange(1 << 16, dtype=np.uint16)]), None, p.size)
    if group == "f16x2":
        p = float_probes("f16").astype(np.uint32)
        pw = np.concatenate([p, p << np.uint32(16), p | (rng.permutation(p) << np.uint32(16))])
        lo = np.arange(1 << 16, dtype=np.uint32)
        bw = lo | (rng.permutation(lo) << np.uint32(16))
        return _cases(np.concatenate([pw, bw]), None, pw.size)
    if group in FLOATS:
        p = float_probes(group)
        if FORMATS[group].storage_bits == 16:
            b = np.arange(1 << 16, dtype=np.uint16)
        else:
            b = _random_float(group, bulk, rng)
        return _cases(np.concatenate([p, b]), None, p.size)
    bits = TYPES[group].bits
    p = int_probes(group)
    if bits == 8:
        b = np.arange(1 << 8, dtype=np.uint8)
        b = np.concatenate([b, _random_int(group, max(bulk - b.size, 0), rng)])
    elif bits == 16:
        b = np.concatenate([np.arange(1 << 16, dtype=np.uint16), _random_int(group, max(bulk - (1 << 16), 0), rng)])
    else:
        b = _random_int(group, bulk, rng)
    return _cases(_widen(np.concatenate([p, b]), group, rng), None, p.size)


def _cases(a: np.ndarray, b: np.ndarray | None, probes: int) -> Cases:
    tag = np.zeros(a.size, np.uint8)
    tag[probes:] = 1
    return Cases(a, b, tag, probes)


# ---------------------------------------------------------------------------------------------
# the kernels


def kernel_name(i: int) -> str:
    return f"cvt_{i}"


def kernel(i: int, text: str) -> str:
    """PTX of variant ``text``: thread i converts a[i] (and b[i]) into d[i]."""
    sem = resolve_cvt(spec(text))
    ra, rd = registers(sem)
    srcs = "%a, %b" if len(sem.src) == 2 else "%a"
    load_b = (f"  add.s64 %rd5, %rd1, %rd3;\n  ld.global.b{ra} %b, [%rd5];\n" if len(sem.src) == 2 else "")
    return f"""
.visible .entry {kernel_name(i)}(.param .u64 pa, .param .u64 pb, .param .u64 pd, .param .u32 pn)
{{
  .reg .pred %p0;
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  .reg .b{ra} %a, %b;
  .reg .b{rd} %d;
  mov.u32 %r0, %ctaid.x;
  mov.u32 %r1, %ntid.x;
  mov.u32 %r2, %tid.x;
  mad.lo.u32 %r0, %r0, %r1, %r2;
  ld.param.u32 %r3, [pn];
  setp.ge.u32 %p0, %r0, %r3;
  @%p0 bra $L_done;
  ld.param.u64 %rd0, [pa];
  ld.param.u64 %rd1, [pb];
  ld.param.u64 %rd2, [pd];
  cvta.to.global.u64 %rd0, %rd0;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mul.wide.u32 %rd3, %r0, {ra // 8};
  add.s64 %rd4, %rd0, %rd3;
  ld.global.b{ra} %a, [%rd4];
{load_b}  {text} %d, {srcs};
  mul.wide.u32 %rd6, %r0, {rd // 8};
  add.s64 %rd7, %rd2, %rd6;
  st.global.b{rd} [%rd7], %d;
$L_done:
  ret;
}}
"""


def module(texts: list[str], cc: int) -> str:
    """One PTX module with the kernels of ``texts`` (kernel i is ``texts[i]``)."""
    head = f".version {PTX_VERSION}\n.target sm_{cc}\n.address_size 64\n"
    return head + "".join(kernel(i, t) for i, t in enumerate(texts))


# ---------------------------------------------------------------------------------------------
# the family


def _select(names: list[str], forms: list[str] | None) -> list[str]:
    if not forms and names:
        return names
    out = [n for n in names if any(f in n for f in forms or ())]
    if not out:
        raise ValueError(f"--forms {' '.join(forms or ())}: no cvt variant contains any of these "
                         f"(e.g. cvt.rn.f16.f32, f16.f32, e4m3x2)")
    return out


def _spread(idx: np.ndarray, probes: int) -> np.ndarray:
    """At most ``MISMATCH_CAP`` of the mismatching cases ``idx``: the probes among them (up to half the
    cap), then bulk cases evenly spaced over the rest."""
    if idx.size <= MISMATCH_CAP:
        return idx
    p = idx[idx < probes][: MISMATCH_CAP // 2]
    rest = idx[idx >= probes]
    pick = rest[np.linspace(0, rest.size - 1, MISMATCH_CAP - p.size).astype(np.int64)]
    return np.concatenate([p, pick])


def compare(text: str, a: np.ndarray, b: np.ndarray | None, d: np.ndarray) -> np.ndarray:
    """Bool per case: fragsim's destination register differs from ``d``."""
    return emulate(text, a, b) != d


class PtxCvtFamily(RunnerFamily):
    name = "ptx_cvt"
    summary = ("every cvt with a floating-point type (float<->float, float<->integer, packed, tf32, e4m3/e5m2) "
               "as PTX kernels (--cases: random cases per source type, default 100,000; 16-bit sources: all words)")
    default_cases = 100_000
    options = frozenset({"cases", "seed", "record", "keep", "replay", "forms", "quiet", "json", "json_file"})

    def source(self, cc: int) -> str:
        return module(variants(), cc)

    def compile(self, info: dict[str, Any]) -> Any:
        return self.load(variants(), info)

    def load(self, texts: list[str], info: dict[str, Any]) -> dict[str, Any]:
        """The kernels of ``texts`` by variant, compiled by the driver from PTX."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cvt.ptx")
            with open(path, "w") as f:
                f.write(module(texts, info["cc_int"]))
            try:
                fns = compile.functions(path, [kernel_name(i) for i in range(len(texts))])
            except Exception as e:  # CuPy's CUDADriverError: the driver's PTX compiler refused it
                raise runner.GpuUnavailable(f"the driver could not load the cvt kernels: {runner.one_line(e)}") from None
        return {t: fns[kernel_name(i)] for i, t in enumerate(texts)}

    def device_outputs(self, fn: Any, text: str, cases: Cases) -> np.ndarray:
        cp = runner.import_cupy()
        ra, rd = registers(resolve_cvt(spec(text)))
        n = cases.a.size
        a = cp.asarray(cases.a.astype(f"uint{ra}"))
        b = cp.asarray(cases.b) if cases.b is not None else a
        d = cp.empty(n, np.dtype(f"uint{rd}"))
        fn(((n + THREADS - 1) // THREADS,), (THREADS,), (a, b, d, np.uint32(n)))
        return cp.asnumpy(d)

    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        texts = _select(variants(), args.forms)
        fns = self.load(texts, info)
        keep = 256 if args.keep is None else args.keep
        by_group: dict[str, list[str]] = {}
        for t in texts:
            by_group.setdefault(group_of(t), []).append(t)
        total = bad = 0
        per_variant: dict[str, list[int]] = {}
        for group, names in by_group.items():
            cases = group_cases(group, args.cases, args.seed)
            kept = np.arange(min(cases.a.size, cases.probes + keep))
            outs, mis = {}, []
            for text in names:
                d = self.device_outputs(fns[text], text, cases)
                wrong = compare(text, cases.a, cases.b, d)
                k = int(wrong.sum())
                per_variant[text] = [int(d.size), k]
                total += d.size
                bad += k
                outs[text] = d[kept]
                if k:
                    idx = _spread(np.flatnonzero(wrong), cases.probes)
                    mis.append((text, idx, d[idx]))
                    say(f"{text}: {k:,} of {d.size:,} cases differ")
            say(f"{group}: {len(names)} variants, {cases.a.size:,} cases each")
            if args.record:
                save(args.record, group, cases, kept, outs, mis, info,
                     {"of": args.cases, "seed": args.seed, "keep": keep,
                      "command": f"fragsim gpu-check --family ptx_cvt --cases {args.cases} --seed {args.seed} "
                                 f"--record DIR --keep {keep}"},
                     {t: per_variant[t] for t in names})
        return {"variants": len(texts), "cases": total, "mismatches": bad,
                "by_variant": {t: v for t, v in per_variant.items() if v[1]}}

    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        files = sorted(f for f in os.listdir(args.replay) if f.endswith(".npz"))
        if not files:
            raise ValueError(f"--replay {args.replay}: no .npz there; expected the folder --family ptx_cvt "
                             "--record wrote")
        total = bad = nvar = 0
        by_variant: dict[str, list[int]] = {}
        for fname in files:
            rec = load(os.path.join(args.replay, fname))
            for text, d in rec.outputs.items():
                if args.forms and not any(f in text for f in args.forms):
                    continue
                nvar += 1
                a, b = rec.a, rec.b
                if args.cases < a.size:
                    a, b, d = a[: args.cases], None if b is None else b[: args.cases], d[: args.cases]
                wrong = int(compare(text, a, b, d).sum())
                n = int(d.size)
                for mt, ma, mb, md in rec.mismatches_of(text):
                    wrong += int(compare(mt, ma, mb, md).sum())
                    n += int(md.size)
                by_variant[text] = [n, wrong]
                total += n
                bad += wrong
                if wrong:
                    say(f"{text}: {wrong} of {n} recorded cases differ")
        if not nvar:
            _select([], args.forms)
        return {"variants": nvar, "cases": total, "mismatches": bad,
                "by_variant": {t: v for t, v in by_variant.items() if v[1]}}

    def summarize(self, report: dict[str, Any]) -> str:
        lines = [f"{self.name}: {report['variants']} variants, {report['cases']:,} cases, "
                 f"{report['mismatches']:,} mismatches  ({report['seconds']:.1f} s)"]
        for text, (n, k) in sorted(report.get("by_variant", {}).items()):
            lines.append(f"  {text}: {k:,} of {n:,} differ")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# recordings


@dataclass
class Recording:
    """One group's recording: source registers ``a`` (``b``), each variant's hardware result on them,
    and the mismatching cases the run kept (variant, a, b, d)."""

    path: str
    meta: dict[str, Any]
    a: np.ndarray
    b: np.ndarray | None
    tag: np.ndarray
    outputs: dict[str, np.ndarray]
    mis_variant: list[str]
    mis_index: np.ndarray         # per kept mismatch: its variant's index in ``mis_variant``
    mis_a: np.ndarray
    mis_b: np.ndarray | None
    mis_d: np.ndarray

    def mismatches_of(self, text: str) -> list[tuple[str, np.ndarray, np.ndarray | None, np.ndarray]]:
        """The recorded mismatching cases of ``text`` (one entry, or none)."""
        if text not in self.mis_variant:
            return []
        sel = self.mis_index == self.mis_variant.index(text)
        out_dt = self.outputs[text].dtype
        b = None if self.mis_b is None else self.mis_b[sel]
        return [(text, self.mis_a[sel], b, self.mis_d[sel].astype(out_dt))]


def save(directory: str, group: str, cases: Cases, kept: np.ndarray, outs: dict[str, np.ndarray],
         mis: list[tuple[str, np.ndarray, np.ndarray]], info: dict[str, Any], meta: dict[str, Any],
         counts: dict[str, list[int]]) -> str:
    """Write DIR/<group>.npz."""
    arrays: dict[str, Any] = {"a": cases.a[kept], "tag": cases.tag[kept], "tag_names": np.array(TAGS),
                              "variants": np.array(list(outs))}
    if cases.b is not None:
        arrays["b"] = cases.b[kept]
    for i, d in enumerate(outs.values()):
        arrays[f"d{i}"] = d
    names = [t for t, _, _ in mis]
    idx = [np.full(ix.size, i, np.uint16) for i, (_, ix, _) in enumerate(mis)]
    arrays["mis_variants"] = np.array(names if names else [""])
    arrays["mis_index"] = np.concatenate(idx) if idx else np.zeros(0, np.uint16)
    arrays["mis_a"] = cases.a[np.concatenate([ix for _, ix, _ in mis])] if mis else cases.a[:0]
    if cases.b is not None:
        arrays["mis_b"] = cases.b[np.concatenate([ix for _, ix, _ in mis])] if mis else cases.b[:0]
    arrays["mis_d"] = (np.concatenate([d.astype(np.uint64) for _, _, d in mis]) if mis
                       else np.zeros(0, np.uint64))
    full: dict[str, Any] = {k: info[k] for k in ("device", "cc", "driver", "cuda_driver_api", "cuda_runtime",
                                                 "cupy", "date") if k in info}
    full.update(meta)
    full.update(group=group, cases=int(kept.size), counts=counts, ptx_version=PTX_VERSION)
    return record.save(os.path.join(directory, f"{group}.npz"), KIND, full, arrays)


def shrink(src: str, dst: str, keep: int) -> list[str]:
    """Rewrite the recordings of folder ``src`` into ``dst`` with the probes and ``keep`` bulk cases of
    each group, evenly spaced over the recorded ones (every recorded mismatch stays); the rule goes
    into the metadata."""
    out = []
    for fname in sorted(f for f in os.listdir(src) if f.endswith(".npz")):
        meta, arr = record.load(os.path.join(src, fname), (KIND,))
        probes = int((arr["tag"] == TAGS.index("probe")).sum())
        bulk = arr["a"].size - probes
        idx = np.concatenate([np.arange(probes),
                              probes + np.unique(np.linspace(0, bulk - 1, min(keep, bulk)).astype(np.int64))])
        for k in list(arr):
            if k in ("a", "b", "tag") or (k[0] == "d" and k[1:].isdigit()):
                arr[k] = arr[k][idx]
        meta = {k: v for k, v in meta.items() if k not in ("format", "version", "kind")}
        meta.update(cases=int(idx.size), keep=keep,
                    subset=f"the probes and {keep} bulk cases evenly spaced over the {bulk} recorded "
                    "(--keep), and every case that mismatched fragsim when it was recorded")
        out.append(record.save(os.path.join(dst, fname), KIND, meta, arr))
    return out


def load(path: str) -> Recording:
    meta, arr = record.load(path, (KIND,))
    names = [str(s) for s in arr["variants"]]
    outs = {t: arr[f"d{i}"] for i, t in enumerate(names)}
    mis_names = [str(s) for s in arr["mis_variants"] if str(s)]
    return Recording(path, meta, arr["a"], arr.get("b"), arr["tag"], outs, mis_names, arr["mis_index"],
                     arr["mis_a"], arr.get("mis_b"), arr["mis_d"])


FAMILIES = {"ptx_cvt": PtxCvtFamily()}
