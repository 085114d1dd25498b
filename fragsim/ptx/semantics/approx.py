"""The ``.approx`` functions -- ``ex2``, ``lg2``, ``rsqrt``, ``sin``, ``cos``, ``tanh`` -- and the
``.approx``/``.full`` forms of ``div``, ``rcp`` and ``sqrt``: the MUFU's results, bit for bit.

Each form is what ptxas makes of it for sm_90 (nvcc 13.0, read with cuobjdump): one MUFU
instruction (``fragsim.sfu``) and, for most forms without ``.ftz``, the code around it that keeps
subnormals out of the unit, which flushes them:

- ``rcp.approx.f32``: x scaled by 2^24 when subnormal, by 1/4 above 2^126; MUFU.RCP; times the scale
- ``rsqrt``/``sqrt``/``lg2.approx.f32``: a subnormal x times 2^24; the result times 2^12 / 2^-12, or
  minus 24
- ``ex2.approx.f32``: below -126, 2^(x/2) squared (a subnormal result)
- ``sin``/``cos.approx(.ftz).f32``: x times 1/(2 pi) rounded toward zero (MUFU.SIN takes turns)
- ``div.approx(.ftz).f32``: MUFU.RCP of the divisor times the dividend (without .ftz, a subnormal
  divisor scales both by 2^24); ``div.full(.ftz).f32`` also scales both by 1/4 when |divisor| > 2^126

The multiplies and adds are the instruction table's own ``mul``/``add`` rows.  Forms whose unit is
not modelled yet keep the IEEE stand-ins (``stand_in``): exact function, rounded to nearest even,
flagged, and run only on request (``run_kernel(..., approx="ieee")``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fragsim import sfu

from . import Semantic, Spec, UnsupportedInstruction
from . import floating as F

#: function -> its float64 implementation, for the IEEE stand-ins
FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "ex2": np.exp2, "lg2": np.log2, "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh,
}
#: what a user adds to run a form whose hardware bits are not modelled
OPT_IN = "run_kernel(..., approx='ieee') or fragsim run --approx ieee computes IEEE stand-ins, flagged as not bit-exact"

@dataclass(frozen=True)
class Form:
    """One modelled PTX spelling: its operand type (every operand and the result), how many operands,
    and the SASS ptxas makes of it on sm_90 (``fragsim.sfu.kernel`` runs that sequence)."""

    type: str
    operands: int
    sass: str

    def run(self, spelling: str, *words: np.ndarray) -> np.ndarray:
        if self.type in ("f16", "bf16", "f16x2", "bf16x2"):
            return sfu.half(spelling.split(".")[0], words[0], self.type)
        if self.type == "f64":
            if ".ftz." in spelling:
                return sfu.unit64(spelling.split(".")[0], words[0])
            return rsqrt_f64(words[0])
        return sfu.form(spelling, *words)


def _f64(text: str):
    """The f64 ``mul``/``fma``/``add`` rows' semantic (``floating.arith``, what the table resolves them to)."""
    opcode, *mods = text.split(".")
    sem = F.arith(Spec(opcode, tuple(mods), 1, 3 if opcode == "fma" else 2))
    return lambda *xs: sem.fn(*(np.asarray(x, np.uint64) for x in xs))[0]


def _d(value: float, like: np.ndarray) -> np.ndarray:
    return np.full(like.shape, np.array([value], np.float64).view(np.uint64)[0], np.uint64)


def _newton(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """One refinement of r ~ 1/sqrt(x): r + r*e*(0.5 + 0.375*e), e = 1 - x*r*r (DMUL, DFMA as ptxas)."""
    mul, fma = _f64("mul.rn.f64"), _f64("fma.rn.f64")
    e = fma(x, mul(r, r) ^ np.uint64(1 << 63), _d(1.0, x))
    t = fma(e, _d(0.375, x), _d(0.5, x))
    return fma(t, mul(r, e), r)


def rsqrt_f64(x: np.ndarray) -> np.ndarray:
    """rsqrt.approx.f64: MUFU.RSQ64H and one Newton step; zeros, subnormals, negatives, infinities and
    NaNs go to ptxas's slow path (a subnormal scaled by 2^54, its root by 2^27)."""
    x = np.asarray(x, np.uint64)
    hi = (x >> np.uint64(32)).astype(np.int64)
    main = ((hi - 0x00100000) & 0xFFFFFFFF) < 0x7FE00000
    out = _newton(x, sfu.unit64("rsqrt", x))
    mag = x & np.uint64((1 << 63) - 1)
    sign = x & np.uint64(1 << 63)
    nan = mag > np.uint64(0x7FF0000000000000)
    sub = ~main & (sign == 0) & (mag != 0) & (mag < np.uint64(1 << 52))
    if sub.any():
        xs = _f64("mul.rn.f64")(x[sub], _d(2.0 ** 54, x[sub]))
        out[sub] = _f64("mul.rn.f64")(_newton(xs, sfu.unit64("rsqrt", xs)), _d(2.0 ** 27, xs))
    out = np.where(~main & (sign != 0), np.uint64(0xFFF8000000000000), out)
    out = np.where(~main & (mag == np.uint64(0x7FF0000000000000)) & (sign == 0), np.uint64(0), out)
    out = np.where(mag == 0, sign | np.uint64(0x7FF0000000000000), out)
    return np.where(nan, _f64("add.rn.f64")(x, x), out)


_SCALE = "FSETP.GEU |x|, 2^-126; @!P FMUL x, 2^24; "
#: every modelled spelling -> its form
FORMS: dict[str, Form] = {
    "rcp.approx.f32": Form("f32", 1, "FSETP |x| (2^-126, 2^126); FSEL s = 2^24, 1/4 or 1; FMUL x, s; MUFU.RCP; FMUL s"),
    "rcp.approx.ftz.f32": Form("f32", 1, "MUFU.RCP"),
    "rsqrt.approx.f32": Form("f32", 1, _SCALE + "MUFU.RSQ; @!P FMUL 4096"),
    "rsqrt.approx.ftz.f32": Form("f32", 1, "MUFU.RSQ"),
    "sqrt.approx.f32": Form("f32", 1, _SCALE + "MUFU.SQRT; @!P FMUL 2^-12"),
    "sqrt.approx.ftz.f32": Form("f32", 1, "MUFU.SQRT"),
    "lg2.approx.f32": Form("f32", 1, _SCALE + "MUFU.LG2; @!P FADD -24"),
    "lg2.approx.ftz.f32": Form("f32", 1, "MUFU.LG2"),
    "ex2.approx.f32": Form("f32", 1, "FSETP.GEU x, -126; @!P FMUL x, 0.5; MUFU.EX2; @!P FMUL r, r"),
    "ex2.approx.ftz.f32": Form("f32", 1, "MUFU.EX2"),
    "sin.approx.f32": Form("f32", 1, "FMUL.RZ x, 1/(2 pi); MUFU.SIN"),
    "sin.approx.ftz.f32": Form("f32", 1, "FMUL.RZ x, 1/(2 pi); MUFU.SIN"),
    "cos.approx.f32": Form("f32", 1, "FMUL.RZ x, 1/(2 pi); MUFU.COS"),
    "cos.approx.ftz.f32": Form("f32", 1, "FMUL.RZ x, 1/(2 pi); MUFU.COS"),
    "div.approx.f32": Form("f32", 2, "FSETP.GEU |b|, 2^-126; @!P FMUL a, b by 2^24; MUFU.RCP b; FMUL a"),
    "div.approx.ftz.f32": Form("f32", 2, "MUFU.RCP b; FMUL.FTZ a"),
    "div.full.f32": Form("f32", 2, "FSETP |b| > 2^126: FMUL a, b by 1/4; |b| < 2^-126: by 2^24; MUFU.RCP b; FMUL a"),
    "div.full.ftz.f32": Form("f32", 2, "FSETP.FTZ |b| > 2^126: FMUL.FTZ a, b by 1/4; MUFU.RCP b; FMUL.FTZ a"),
    "ex2.approx.f16": Form("f16", 1, "MUFU.EX2.F16 (f32 EX2 of the widened half, truncated; past 65504: inf)"),
    "ex2.approx.f16x2": Form("f16x2", 1, "MUFU.EX2.F16 on each half"),
    "ex2.approx.ftz.bf16": Form("bf16", 1, "MUFU.EX2.BF16 (f32 EX2 of the widened bf16, its top 16 bits)"),
    "ex2.approx.ftz.bf16x2": Form("bf16x2", 1, "MUFU.EX2.BF16 on each half"),
    "tanh.approx.f32": Form("f32", 1, "MUFU.TANH"),
    "tanh.approx.f16": Form("f16", 1, "MUFU.TANH.F16 (f32 TANH of the widened half, truncated)"),
    "tanh.approx.f16x2": Form("f16x2", 1, "MUFU.TANH.F16 on each half"),
    "tanh.approx.bf16": Form("bf16", 1, "MUFU.TANH.BF16 (f32 TANH of the widened bf16, its top 16 bits)"),
    "tanh.approx.bf16x2": Form("bf16x2", 1, "MUFU.TANH.BF16 on each half"),
    "rcp.approx.ftz.f64": Form("f64", 1, "MUFU.RCP64H of the high word; the low word 0"),
    "rsqrt.approx.ftz.f64": Form("f64", 1, "MUFU.RSQ64H of the high word; the low word 0"),
    "rsqrt.approx.f64": Form("f64", 1, "MUFU.RSQ64H; DMUL, DFMA x3: one Newton step; a slow path for zeros, "
                                       "subnormals (x 2^54, root x 2^27), negatives, infinities, NaNs"),
}


def refusal(spec: Spec) -> UnsupportedInstruction:
    return UnsupportedInstruction(f"{spec.text}: the hardware's MUFU approximation is not modelled bit for bit; "
                                  f"{OPT_IN}")


def hardware(spec: Spec) -> Semantic:
    """The MUFU's bits for a modelled form; the IEEE stand-in when the user opted into those."""
    if spec.approx:
        return stand_in(spec)
    form = FORMS.get(spec.text)
    if form is None:
        raise refusal(spec)
    words = _WORDS[form.type]
    return Semantic(lambda *xs: (form.run(spec.text, *(np.asarray(x).astype(words, copy=False) for x in xs)),),
                    (form.type,), (form.type,) * form.operands)


#: the word of each operand type, as the machine and ``approx`` hand them over
_WORDS = {"f32": np.uint32, "f16x2": np.uint32, "bf16x2": np.uint32, "f16": np.uint16, "bf16": np.uint16,
          "f64": np.uint64}


def approx(instruction: str, *operands) -> np.ndarray:
    """The result words of the PTX ``instruction`` (``"ex2.approx.ftz.f32"``) on ``operands``: arrays
    (or ints) of words -- uint32 for .f32 and packed x2 forms, uint16 for .f16/.bf16 -- broadcast
    together; bit for bit what an H100 returns."""
    if not isinstance(instruction, str):
        raise TypeError(f"approx: instruction must be a PTX spelling such as 'ex2.approx.ftz.f32', "
                        f"got {type(instruction).__name__}")
    form = FORMS.get(instruction.strip().lstrip("."))
    if form is None:
        raise ValueError(f"approx: {instruction!r} is not a modelled MUFU form; modelled: {', '.join(FORMS)}")
    if len(operands) != form.operands:
        raise TypeError(f"approx: {instruction} takes {form.operands} operand(s), got {len(operands)}")
    words = _WORDS[form.type]
    bits = np.dtype(words).itemsize * 8
    arrays = []
    for k, o in enumerate(operands):
        try:
            a = np.asarray(o)
        except (ValueError, TypeError) as e:
            raise ValueError(f"approx: operand {k} of {instruction}: not an array of words ({e})") from None
        if a.ndim > 32:
            raise ValueError(f"approx: operand {k} of {instruction}: {a.ndim} dimensions, at most 32")
        if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) and not np.issubdtype(a.dtype, np.bool_)):
            raise TypeError(f"approx: operand {k} of {instruction}: expected {bits}-bit words ({np.dtype(words).name}), "
                            f"got {a.dtype}")
        if a.size and (int(a.min()) < 0 or int(a.max()) >= 1 << bits):
            raise ValueError(f"approx: operand {k} of {instruction}: words must lie in [0, 2**{bits}), got "
                             f"{int(a.min()) if int(a.min()) < 0 else int(a.max())}")
        arrays.append(a.astype(words))
    try:
        arrays = list(np.broadcast_arrays(*arrays))
    except (ValueError, RuntimeError):
        raise ValueError(f"approx: operands of {instruction} do not broadcast together: "
                         f"{' and '.join(str(a.shape) for a in arrays)}") from None
    from fragsim.validate import working_memory
    working_memory(arrays[0].size * 16, f"approx {instruction}: {arrays[0].size:,} results", "pass fewer words at a time")
    return form.run(instruction.strip().lstrip("."), *arrays)


def _float_type(name: str):
    return {"f32": np.float32, "f64": np.float64, "f16": np.float16}.get(name)


def stand_in(spec: Spec) -> Semantic:
    """The IEEE stand-in of an ``.approx`` function: the exact function rounded to nearest even."""
    impl = FUNCTIONS[spec.opcode]
    if not spec.approx:
        raise refusal(spec)
    t, ftz = spec.types[-1], "ftz" in spec.flags
    if t not in ("f32", "f64", "f16"):
        raise UnsupportedInstruction(f"{spec.text}: IEEE stand-ins are modelled for .f32, .f64 and .f16 only")
    ft = _float_type(t)
    assert ft is not None
    bits = {np.float32: np.uint32, np.float64: np.uint64, np.float16: np.uint16}[ft]
    tiny = np.finfo(ft).tiny

    def fn(a: np.ndarray) -> tuple[np.ndarray]:
        x = a.view(ft).astype(np.float64)
        if ftz:
            x = np.where(np.abs(x) < tiny, np.copysign(0.0, x), x)
        with np.errstate(all="ignore"):
            y = impl(x).astype(ft)
        if ftz:
            y = np.where(np.abs(y) < tiny, np.copysign(ft(0), y), y)
        return (np.ascontiguousarray(y).view(bits),)
    return Semantic(fn, (t,), (t,))


#: kept for the rows that name it: a form not modelled runs its IEEE stand-in on request
function = stand_in
