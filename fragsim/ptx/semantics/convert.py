"""``cvt`` with a floating-point type on either side: what the PTX ISA defines and the H100 computes.

Forms (PTX ISA 9.0, "cvt"), each refused by name where ptxas 13.0 refuses it for sm_90a:

    cvt{.irnd}{.ftz}{.sat}.dtype.atype          float -> integer, float -> same float rounded to an integer
    cvt{.frnd}{.ftz}{.sat}.dtype.atype          float -> float, integer -> float
    cvt.frnd2{.relu}{.satfinite}.(f16|bf16).f32 d, a
    cvt.frnd2{.relu}{.satfinite}.(f16x2|bf16x2).f32 d, a, b      a -> upper half, b -> lower half
    cvt.rna{.satfinite}.tf32.f32 d, a            cvt.frnd2{.relu}.tf32.f32 d, a
    cvt.rn.satfinite{.relu}.(e4m3x2|e5m2x2).f32 d, a, b           a -> upper byte
    cvt.rn.satfinite{.relu}.(e4m3x2|e5m2x2).f16x2 d, a
    cvt.rn{.relu}.f16x2.(e4m3x2|e5m2x2) d, a

    .irnd = .rni .rzi .rmi .rpi    .frnd = .rn .rz .rm .rp    .frnd2 = .rn .rz

Integer-only ``cvt`` is the integer family's: ``resolve_cvt`` hands it to
``fragsim.ptx.semantics.integer.resolve_integer_cvt``.  Forms of sm_100 and later (``.rs``, the 4- and
6-bit floats, ``ue8m0x2``, ``.satfinite`` with ``.rn``/``.rz`` on tf32) are refused: the H100 has none.

**Rounding** is exact (``convert_round`` over ``ieee.round_pack``, the rounding of every float result
of the PTX runner): one rounding of the exact source value, IEEE 754 overflow
for the mode (rn: infinity, rz: the largest finite value, rm/rp: infinity on their side); subnormal
results are kept unless ``.ftz``.  Float -> integer rounds in the ``.irnd`` mode and saturates to the
destination's range with or without ``.sat``; ``.sat`` on a float result clamps to [0.0, 1.0].

**What the H100 computes where the ISA leaves it open or says otherwise** (ptxas 13.0's code, measured
by ``fragsim gpu-check --family ptx_cvt`` on 69.5 million cases, recorded under tests/data/ptx/cvt):

- NaN -> integer is 0, except from ``.f64`` or to a 64-bit integer: there it is the word
  ``1 << (n - 1)`` (INT_MIN; 2**(n-1) for unsigned types: ``cvt.rzi.u8.f64`` of a NaN is 128);
- NaN -> float: conversions to or from ``.f64`` and ``.rni``-style rounding of ``.f64`` keep the sign and
  the leading payload bits and set the quiet bit (``cvt.f64.f32`` of 0x7f800001 is 0x7ff8000020000000);
  every other conversion gives the positive canonical NaN (``CANONICAL``: 0x7fff, 0x7fffffff, tf32
  0x7fffe000, e4m3/e5m2 0x7f); ``cvt.f32.f32`` and ``cvt.f64.f64`` move the bits, and ``cvt.f32.bf16``
  without ``.ftz`` is a shift (a signalling NaN stays signalling);
- ``.sat`` and ``.relu`` give +0.0 for -0.0, ``.sat`` gives +0.0 for a NaN, ``.relu`` the canonical NaN;
- ``.ftz`` is dropped for ``.f16.f32`` (no FTZ in ptxas' code: ``cvt.rm.ftz.f16.f32`` of a negative f32
  subnormal is -2**-24, not -0); ``.f32`` results of ``.f64`` sources are flushed against thresholds
  that are not 2**-126 (``_f32_from_f64_ftz``);
- ``cvt.rna.tf32.f32`` is integer arithmetic on the bits (add 0x1000 to a finite word, clear the low
  13 bits; ``.satfinite`` then subtracts 0x2000 from an infinity or NaN), so a NaN whose payload lies
  in the low 13 bits becomes an infinity (and, ``.satfinite``, the largest tf32).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fragsim.facts.formats import FORMATS, FloatFormat

from ..types import TYPES
from . import Semantic, Spec
from .convert_round import FINITE, NAN, ZERO, float_parts, int_parts, round_float, round_int, round_integral
from .ieee import MODES

FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
#: .irnd (round to an integral value) -> the mode of ``ieee.MODES`` (.frnd) it rounds in
IRND = {m + "i": m for m in MODES}

_U64 = np.uint64
F16, BF16, F32, F64, TF32 = (FORMATS[n] for n in ("f16", "bf16", "f32", "f64", "tf32"))
E4M3, E5M2 = FORMATS["e4m3"], FORMATS["e5m2"]
_F8 = {"e4m3x2": E4M3, "e5m2x2": E5M2}
#: Bits of 1.0 in each format (``.sat`` clamps to [0, 1]).
_ONE = {"f16": 0x3C00, "bf16": 0x3F80, "f32": 0x3F800000, "f64": 0x3FF0000000000000}

#: The NaN each H100 instruction that ptxas uses for cvt gives (measured): "canonical" (``CANONICAL``,
#: positive) or "payload" (the source's sign and leading payload bits, with the quiet bit set).
NAN_RESULT: dict[str, str] = {
    "F2F": "canonical",         # F2F among f16, bf16 and f32
    "F2F.F64": "payload",       # F2F to or from f64
    "F2FP": "canonical",        # F2FP: f32 -> f16/bf16/tf32/e4m3/e5m2, f16 -> e4m3/e5m2, e4m3/e5m2 -> f16
    "HADD2.F32": "canonical",   # cvt.f32.f16
    "HADD2": "canonical",       # cvt.f16.f16 (x + -0)
    "HFMA2.BF16": "canonical",  # cvt.bf16.bf16 (-0 * 0 + x)
    "FADD": "canonical",        # cvt.ftz.f32.f32 (x + -0)
    "FMUL": "canonical",        # the FTZ of cvt.ftz.f64.f32 (x * 1)
    "FRND": "canonical",        # .rni .rzi .rmi .rpi on f16, bf16, f32
    "FRND.F64": "payload",      # .rni .rzi .rmi .rpi on f64
}
#: The canonical NaN of each destination (tf32's is the f32 one with the 13 low bits cleared).
CANONICAL = {"f16": 0x7FFF, "bf16": 0x7FFF, "tf32": 0x7FFFE000, "f32": 0x7FFFFFFF,
             "f64": 0x7FFFFFFFFFFFFFFF, "e4m3": 0x7F, "e5m2": 0x7F}


# ---------------------------------------------------------------------------------------------
# the pieces: NaN results, .sat, .relu, .ftz


def _nan_result(unit: str, bits: np.ndarray, src: FloatFormat, dst: FloatFormat) -> np.ndarray:
    """The NaN words ``unit`` gives for NaN source words ``bits``."""
    if NAN_RESULT[unit] == "canonical" or not dst.ieee_specials or not src.ieee_specials:
        return np.full(bits.shape, CANONICAL[dst.name], _U64)
    b = bits.astype(_U64)
    man = (b >> _U64(src.ignored_low_bits)) & _U64((1 << src.man_bits) - 1)
    shift = src.man_bits - dst.man_bits
    man = man >> _U64(shift) if shift >= 0 else man << _U64(-shift)
    quiet = _U64(1 << (dst.man_bits - 1))
    sign = (b >> _U64(src.sign_shift)) & _U64(1)
    return ((sign << _U64(dst.sign_shift)) | _U64(((1 << dst.exp_bits) - 1) << dst.exp_shift)
            | ((man | quiet) << _U64(dst.ignored_low_bits)))


def _convert(bits: np.ndarray, src: FloatFormat, dst: FloatFormat, mode: str, unit: str,
             ftz: bool = False, satfinite: bool = False) -> np.ndarray:
    """One float -> float instruction: ``bits`` rounded to ``dst``."""
    p = float_parts(bits, src, ftz)
    return round_float(p, dst, mode, satfinite, _nan_result(unit, bits, src, dst))


def _sat(bits: np.ndarray, fmt: FloatFormat, ftz: bool = False) -> np.ndarray:
    """``.sat``: clamp to [0.0, 1.0]; a NaN, -0.0 and every negative value give +0.0 (measured for
    FADD.SAT, HADD2.SAT and ptxas' f64 sequence alike).  ``ftz``: subnormals first read as zeros."""
    p = float_parts(bits, fmt, ftz)
    out = np.where(bits.astype(_U64) >= _U64(_ONE[fmt.name]), fmt.dtype(_ONE[fmt.name]), bits)  # 1 <= x <= inf
    return np.where(p.sign | (p.kind == NAN) | (p.kind == ZERO), fmt.dtype(0), out).astype(fmt.dtype)


def _relu(bits: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """``.relu``: a negative result (-0.0 included) is +0.0, a NaN the canonical NaN."""
    p = float_parts(bits, fmt)
    out = np.where(p.sign, fmt.dtype(0), bits)
    return np.where(p.kind == NAN, fmt.dtype(CANONICAL[fmt.name]), out).astype(fmt.dtype)


def _flush(bits: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Subnormals to zeros of their sign."""
    p = float_parts(bits, fmt)
    sub = (p.kind == FINITE) & ((bits.astype(_U64) & _U64((1 << (fmt.storage_bits - 1)) - 1))
                                < _U64(1 << fmt.exp_shift))
    return np.where(sub, bits & fmt.dtype(1 << fmt.sign_shift), bits).astype(fmt.dtype)


def _canonical_where_nan(bits: np.ndarray, fmt: FloatFormat, unit: str) -> np.ndarray:
    """An arithmetic instruction's result on a NaN operand (``unit`` of ``NAN_RESULT``)."""
    p = float_parts(bits, fmt)
    return np.where(p.kind == NAN, _nan_result(unit, bits, fmt, fmt).astype(fmt.dtype), bits).astype(fmt.dtype)


# ---------------------------------------------------------------------------------------------
# float -> float

_WIDTH = {"f16": 0, "bf16": 0, "f32": 1, "f64": 2}     # f16 and bf16 hold neither one the other


def _f32_from_f64_ftz(x: np.ndarray, r: np.ndarray, mode: str) -> np.ndarray:
    """The .ftz of .f32 results of .f64 sources: ptxas compares the source (rn, rm, rp) or the F2F
    result ``r`` (rz) with a threshold and multiplies ``r`` (after any .sat) by 2**-126 below it, giving
    a zero of its sign; a NaN compares false.  The thresholds are not 2**-126 itself:

        rn               |x| <  2**-126 - 2**-151
        rz               |r| <  2**-126
        rm, rp toward 0  |x| <  2**-126                 (rm of x > 0, rp of x < 0)
        rm, rp away      |x| <= 2**-126 - 2**-150       (measured: the halfway point itself flushes)
    """
    ax = x & _U64(0x7FFFFFFFFFFFFFFF)
    nan = ax > _U64(0x7FF0000000000000)
    neg = (x >> _U64(63)) == 1
    min_normal = _U64(0x3810000000000000)
    if mode == "rn":
        flush = ax < _U64(0x380FFFFFF0000000)
    elif mode == "rz":
        flush = (r & np.uint32(0x7FFFFFFF)) < np.uint32(0x00800000)
    else:
        away = neg if mode == "rm" else ~neg
        flush = np.where(away, ax <= _U64(0x380FFFFFE0000000), ax < min_normal)
    return np.where(flush & ~nan, r & np.uint32(0x80000000), r).astype(np.uint32)


def _float_to_float(d: str, a: str, flags: set[str], rnd: str | None) -> Callable:
    src, dst = FORMATS[a], FORMATS[d]
    ftz, sat = "ftz" in flags, "sat" in flags
    relu, satfinite = "relu" in flags, "satfinite" in flags
    mode = IRND.get(rnd or "", rnd or "rn")

    def finish(r: np.ndarray) -> np.ndarray:
        return _sat(r, dst, ftz and d == "f32") if sat else r

    if rnd in IRND:                                   # same type, rounded to an integral value
        def integral(x):
            p = round_integral(float_parts(x, src, ftz and a == "f32"), mode)
            r = round_float(p, dst, "rn", nan=_nan_result("FRND.F64" if a == "f64" else "FRND", x, src, dst))
            return (finish(r),)
        return integral
    if d == a:                                        # a move: f32/f64 copy, f16/bf16/ftz add -0
        def same(x):
            r = x
            if d in ("f16", "bf16") or (ftz and not sat):
                r = _canonical_where_nan(x, src, {"f16": "HADD2", "bf16": "HFMA2.BF16"}.get(d, "FADD"))
                r = _flush(r, src) if ftz else r
            return (finish(r),)
        return same
    if (d, a) == ("f32", "bf16") and not ftz:         # a shift: every bit kept, NaN payloads too
        def shift(x):
            return ((x.astype(np.uint32) << np.uint32(16)),)
        return shift
    if (d, a) == ("f32", "f64") and ftz:
        def narrow_ftz(x):
            r = _convert(x, src, dst, mode, "F2F.F64")
            return (_f32_from_f64_ftz(x, finish(r), mode),)
        return narrow_ftz
    if (d, a) == ("f32", "f16"):
        unit = "HADD2.F32"
    elif "f64" in (d, a):
        unit = "F2F.F64"
    elif a == "f32" and d in ("f16", "bf16") and mode in ("rn", "rz") and not (d == "bf16" and ftz):
        unit = "F2FP"
    else:
        unit = "F2F"

    def convert(x):
        xin = x
        if (d, a) == ("f64", "f32") and ftz:          # FMUL.FTZ x, 1 first
            xin = _flush(_canonical_where_nan(x, src, "FMUL"), src)
        r = _convert(xin, src, dst, mode, unit, ftz=ftz and a == "f32" and d != "f16",
                     satfinite=satfinite)
        if ftz and d == "f32":
            r = _flush(r, dst)
        if relu:
            r = _relu(r, dst)
        return (finish(r),)
    return convert


# ---------------------------------------------------------------------------------------------
# float <-> integer

def _float_to_int(d: str, a: str, flags: set[str], rnd: str) -> Callable:
    src, t = FORMATS[a], TYPES[d]
    ftz = "ftz" in flags
    # a NaN gives 0 -- except on F2I from f64 and F2I to 64 bits, where it gives the word 1 << (n - 1)
    # (INT_MIN for signed results, 2**(n-1) for unsigned ones; measured)
    nan = 1 << (t.bits - 1) if a == "f64" or t.bits == 64 else 0

    def f2i(x):
        return (round_int(float_parts(x, src, ftz), t.bits, t.kind == "s", IRND[rnd], nan),)
    return f2i


def _int_to_float(d: str, a: str, flags: set[str], rnd: str) -> Callable:
    dst, t = FORMATS[d], TYPES[a]

    def i2f(x):
        r = round_float(int_parts(x, t.kind == "s"), dst, rnd)
        return (_sat(r, dst) if "sat" in flags else r,)
    return i2f


# ---------------------------------------------------------------------------------------------
# packed and 8-bit forms


def _pack_f32_pair(d: str, flags: set[str], rnd: str) -> Callable:
    """f16x2/bf16x2/e4m3x2/e5m2x2 from two f32: ``a`` to the upper half, ``b`` to the lower."""
    dst = {"f16x2": F16, "bf16x2": BF16}.get(d) or _F8[d]
    half = dst.storage_bits
    wide = np.dtype(f"uint{2 * half}")

    def one(x):
        r = _convert(x, F32, dst, rnd, "F2FP", satfinite="satfinite" in flags)
        return _relu(r, dst) if "relu" in flags else r

    def pack(a, b):
        return ((one(a).astype(wide) << wide.type(half)) | one(b).astype(wide),)
    return pack


def _f8_from_f16x2(d: str, flags: set[str]) -> Callable:
    dst = _F8[d]

    def one(h):
        r = _convert(h, F16, dst, "rn", "F2FP", satfinite=True)
        return _relu(r, dst) if "relu" in flags else r

    def pack(x):
        lo, hi = (x & np.uint32(0xFFFF)).astype(np.uint16), (x >> np.uint32(16)).astype(np.uint16)
        return ((one(hi).astype(np.uint16) << np.uint16(8)) | one(lo).astype(np.uint16),)
    return pack


def _f16x2_from_f8(a: str, flags: set[str]) -> Callable:
    src = _F8[a]

    def one(q):
        r = _convert(q, src, F16, "rn", "F2FP")
        return _relu(r, F16) if "relu" in flags else r

    def unpack(x):
        lo, hi = (x & np.uint16(0xFF)).astype(np.uint8), (x >> np.uint16(8)).astype(np.uint8)
        return ((one(hi).astype(np.uint32) << np.uint32(16)) | one(lo).astype(np.uint32),)
    return unpack


def _tf32(flags: set[str], rnd: str) -> Callable:
    if rnd != "rna":
        def f2fp(x):
            r = _convert(x, F32, TF32, rnd, "F2FP")
            return (_relu(r, TF32) if "relu" in flags else r,)
        return f2fp
    satfinite = "satfinite" in flags

    def rna(x):
        # ptxas: finite words (|x| < inf) get 0x1000 added, then the low 13 bits are cleared; with
        # .satfinite an infinity or NaN word (|r| >= inf or unordered) then loses 0x2000
        special = (x & np.uint32(0x7FFFFFFF)) >= np.uint32(0x7F800000)
        r = np.where(special, x, x + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
        if satfinite:
            r = np.where((r & np.uint32(0x7FFFFFFF)) >= np.uint32(0x7F800000), r - np.uint32(0x2000), r)
        return (r.astype(np.uint32),)
    return rna


# ---------------------------------------------------------------------------------------------
# the resolver


def _packed(spec: Spec, d: str, a: str, flags: set[str], rnd: str | None) -> Semantic:
    if d in ("f16x2", "bf16x2") and a == "f32":
        return Semantic(_pack_f32_pair(d, flags, rnd or ""), (d,), ("f32", "f32"))
    if d == "tf32" and a == "f32":
        return Semantic(_tf32(flags, rnd or ""), ("tf32",), ("f32",))
    if d in _F8 and a == "f32":
        return Semantic(_pack_f32_pair(d, flags, "rn"), (d,), ("f32", "f32"))
    if d in _F8 and a == "f16x2":
        return Semantic(_f8_from_f16x2(d, flags), (d,), ("f16x2",))
    assert d == "f16x2" and a in _F8, spec.text        # the rows admit no other packed conversion
    return Semantic(_f16x2_from_f8(a, flags), ("f16x2",), (a,))


def _scalar(spec: Spec, d: str, a: str, flags: set[str], rnd: str | None) -> Semantic:
    if d in INTS:
        return Semantic(_float_to_int(d, a, flags, rnd or ""), (d,), (a,))
    if a in INTS:
        return Semantic(_int_to_float(d, a, flags, rnd or ""), (d,), (a,))
    return Semantic(_float_to_float(d, a, flags, rnd), (d,), (a,))


def resolve_cvt(spec: Spec) -> Semantic:
    """The semantic of a ``cvt`` instruction with a float side (see the module docstring); its row in
    the instruction table (``fragsim.ptx.isa.convert``) has admitted exactly the forms ptxas takes."""
    d, a = spec.types
    rnd = spec.which((*IRND, *MODES, "rna"))
    flags = set(spec.flags) - {rnd}
    if d in FLOATS and a in FLOATS or (d in FLOATS and a in INTS) or (d in INTS and a in FLOATS):
        return _scalar(spec, d, a, flags, rnd)
    return _packed(spec, d, a, flags, rnd)
