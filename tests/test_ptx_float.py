"""The PTX interpreter's floating-point instructions (fragsim.ptx.semantics.floating): one documented
case or property each, in the PTX ISA's words, with the H100's answers where the ISA leaves a choice
(measured by ``fragsim gpu-check --family ptx_float``), and the H100 recording replayed."""

import json
from fractions import Fraction
from math import isqrt
from pathlib import Path

import numpy as np
import pytest

from fragsim.cli import main
from fragsim.facts.formats import FORMATS
from fragsim.gpu_check.ptx import floating_cases as cases
from fragsim.ptx.isa.table import resolve
from fragsim.ptx.semantics import Spec, UnsupportedInstruction, floating
from fragsim.ptx.types import TYPES

DATA = Path(__file__).parent / "data" / "ptx" / "float"


def spec(text: str, ndst: int = 1, nsrc: int | None = None) -> Spec:
    op, *mods = text.split(".")
    if nsrc is None:
        nsrc = {"fma": 3, "mad": 3, "neg": 1, "abs": 1, "rcp": 1, "sqrt": 1, "testp": 1}.get(op, 2)
    return Spec(op, tuple(mods), ndst, nsrc)


def run(text: str, *operands, ndst: int = 1):
    """Resolve ``text`` as the interpreter does and run it on one case; the destinations as ints."""
    sem = resolve(spec(text, ndst, len(operands)))
    arrays = [np.array([x], TYPES[t].dtype) for x, t in zip(operands, sem.src)]
    out = tuple(int(d[0]) for d in sem.fn(*arrays))
    return out[0] if len(out) == 1 else out


def f32(x: float) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0])


def f64(x: float) -> int:
    return int(np.array([x], np.float64).view(np.uint64)[0])


def f16(x: float) -> int:
    return int(np.array([x], np.float16).view(np.uint16)[0])


ONE, TWO, HALF = f32(1.0), f32(2.0), f32(0.5)
MAX32, INF32, QNAN32 = 0x7F7FFFFF, 0x7F800000, 0x7FFFFFFF


# ----------------------------------------------------------------------------- rounding modifiers

@pytest.mark.parametrize("mode, want", [("rn", 0x3F800000), ("rz", 0x3F800000), ("rm", 0x3F800000),
                                        ("rp", 0x3F800001)])
def test_add_rounding_modifiers_on_a_tie(mode, want):
    """.rn: mantissa LSB rounds to nearest even; .rz toward zero; .rm toward -inf; .rp toward +inf:
    1 + 2**-24 is halfway between 1 and its successor."""
    assert run(f"add.{mode}.f32", ONE, f32(2.0 ** -24)) == want


@pytest.mark.parametrize("mode, want", [("rn", 0xBF800000), ("rz", 0xBF800000), ("rm", 0xBF800001),
                                        ("rp", 0xBF800000)])
def test_directed_rounding_of_a_negative_result(mode, want):
    """.rm rounds a negative result away from zero, .rp toward it."""
    assert run(f"add.{mode}.f32", f32(-1.0), f32(-(2.0 ** -24))) == want


def test_add_without_rounding_modifier_is_rn():
    """The default rounding of add is .rn."""
    assert run("add.f32", ONE, f32(2.0 ** -24)) == run("add.rn.f32", ONE, f32(2.0 ** -24))


@pytest.mark.parametrize("mode, a, want", [("rn", MAX32, INF32), ("rz", MAX32, MAX32), ("rm", MAX32, MAX32),
                                           ("rp", MAX32, INF32), ("rm", MAX32 | 1 << 31, INF32 | 1 << 31),
                                           ("rp", MAX32 | 1 << 31, MAX32 | 1 << 31)])
def test_overflow_goes_to_infinity_or_the_largest_finite_number_as_the_mode_says(mode, a, want):
    assert run(f"mul.{mode}.f32", a, TWO) == want


def test_fma_rounds_once():
    """fma computes a*b + c in infinite precision, then rounds: (1 + 2**-12)**2 - its rounded value is
    the exact 2**-24, which a separate mul and add would lose."""
    a = f32(1 + 2.0 ** -12)
    rounded = run("mul.rn.f32", a, a)
    assert run("fma.rn.f32", a, a, rounded | 1 << 31) == f32(2.0 ** -24)
    assert run("add.rn.f32", rounded, rounded | 1 << 31) == 0


def test_f64_fma_is_exact_under_massive_cancellation():
    """(1 + 2**-30)(1 - 2**-30) - 1 = -2**-60 exactly."""
    assert run("fma.rn.f64", f64(1 + 2.0 ** -30), f64(1 - 2.0 ** -30), f64(-1.0)) == f64(-(2.0 ** -60))


def test_f16_fma_rounds_once_where_rounding_through_f32_would_not():
    """0x35dd * 0x358b + 0x4707 rounded to f32 first lands on an f16 tie: single rounding gives 0x4727."""
    assert run("fma.rn.f16", 0x35DD, 0x358B, 0x4707) == 0x4727


def test_mad_is_fma():
    """mad.rnd.{f32,f64} is the same as fma.rnd."""
    a, b, c = f32(1 + 2.0 ** -12), f32(1 + 2.0 ** -12), f32(-1.0)
    assert run("mad.rn.f32", a, b, c) == run("fma.rn.f32", a, b, c)


@pytest.mark.parametrize("mode, want", [("rn", 0x3EAAAAAB), ("rz", 0x3EAAAAAA), ("rm", 0x3EAAAAAA),
                                        ("rp", 0x3EAAAAAB)])
def test_div_is_ieee_rounded_in_each_mode(mode, want):
    assert run(f"div.{mode}.f32", ONE, f32(3.0)) == want


@pytest.mark.parametrize("mode, want", [("rn", 0x3FB504F3), ("rz", 0x3FB504F3), ("rm", 0x3FB504F3),
                                        ("rp", 0x3FB504F4)])
def test_sqrt_is_ieee_rounded_in_each_mode(mode, want):
    """sqrt(2) lies between 0x3fb504f3 and 0x3fb504f4, nearer the first."""
    assert run(f"sqrt.{mode}.f32", TWO) == want


def test_rcp_is_one_over_a():
    assert run("rcp.rn.f64", f64(3.0)) == f64(1 / 3)


def test_bf16_add_rounds_to_nearest_even():
    """bf16 has 8 significant bits: 1 + 2**-8 is a tie and stays 1."""
    assert run("add.rn.bf16", 0x3F80, 0x3B80) == 0x3F80


def test_packed_halves_are_independent_elements():
    """f16x2: the low half-word is element 0; each half is added on its own."""
    a = f16(1.0) | f16(2.0) << 16
    b = f16(0.5) | f16(-2.0) << 16
    assert run("add.rn.f16x2", a, b) == f16(1.5) | f16(0.0) << 16


# ---------------------------------------------------------------------------------- subnormals

def test_subnormal_results_without_ftz():
    """sm_20+: subnormal numbers are supported by default."""
    assert run("mul.rn.f32", f32(2.0 ** -100), f32(2.0 ** -30)) == 0x00080000


def test_ftz_flushes_subnormal_inputs_to_sign_preserving_zero():
    assert run("add.f32", 0x00000001, 0) == 0x00000001
    assert run("add.ftz.f32", 0x00000001, 0) == 0
    assert run("add.ftz.f32", 0x80000001, 0x80000000) == 0x80000000


def test_ftz_flushes_results_tiny_after_rounding_with_unbounded_exponent():
    """H100: .ftz flushes a result that stays below 2**-126 when rounded to 24 bits with an unbounded
    exponent, though the subnormal format would round it up to 2**-126; a result that the 24 bits
    round up to 2**-126 is kept."""
    a, b = 0x00800000, 0x3F7FFFFF                 # 2**-126 * (1 - 2**-24): 24 bits, below 2**-126
    assert run("mul.rn.f32", a, b) == 0x00800000
    assert run("mul.rn.ftz.f32", a, b) == 0
    c, d = 0x20000400, 0x1FFFF800                 # (1 + 2**-13)(1 - 2**-13) 2**-126 = 2**-126 (1 - 2**-26)
    assert run("mul.rn.ftz.f32", c, d) == 0x00800000
    assert run("mul.rz.ftz.f32", c, d) == 0


def test_ftz_on_f16():
    """.ftz on f16 flushes the f16 subnormals."""
    assert run("mul.rn.ftz.f16", 0x0400, 0x3BFF) == 0
    assert run("mul.rn.f16", 0x0400, 0x3BFF) == 0x0400


# ------------------------------------------------------------------------------------- clamps

def test_sat_clamps_to_zero_one_and_flushes_nan_to_plus_zero():
    assert run("add.sat.f32", f32(0.75), HALF) == ONE
    assert run("add.sat.f32", f32(-0.5), f32(0.25)) == 0
    assert run("add.sat.f32", INF32, INF32 | 1 << 31) == 0
    assert run("add.sat.f32", 1 << 31, 1 << 31) == 0          # -0.0 saturates to +0.0 (H100)


def test_relu_clamps_negatives_to_zero_and_nan_to_the_canonical_nan():
    assert run("fma.rn.relu.f16", f16(-1.0), f16(1.0), 0) == 0
    assert run("fma.rn.relu.f16", f16(2.0), f16(1.0), 0) == f16(2.0)
    assert run("fma.rn.relu.bf16", 0x7F80, 0, 0) == 0x7FFF


def test_oob_gives_zero_for_the_oob_nan_in_a_or_b():
    """fma.oob: +0.0 when a or b is the OOB NaN; the H100's is 0x7ff7 of either sign, and in c it is
    an ordinary NaN."""
    assert run("fma.rn.oob.f16", 0x7FF7, f16(1.0), f16(2.0)) == 0
    assert run("fma.rn.oob.bf16", 0x3F80, 0xFFF7, 0x3F80) == 0
    assert run("fma.rn.oob.f16", f16(1.0), f16(1.0), 0x7FF7) == 0x7FFF
    assert run("fma.rn.oob.f16", 0x7FFE, f16(1.0), 0) == 0x7FFF


# ------------------------------------------------------------------------------------------ NaN

@pytest.mark.parametrize("text, a, b, want", [
    ("add.f32", INF32, INF32 | 1 << 31, QNAN32), ("mul.rz.f32", 0x7F800123, ONE, QNAN32),
    ("add.f16", 0x7C00, 0xFC00, 0x7FFF), ("mul.rn.bf16", 0xFF81, 0x3F80, 0x7FFF),
    ("div.rn.f32", 0, 0, QNAN32), ("min.f32", 0xFFC00001, 0x7F800001, QNAN32)])
def test_f32_f16_bf16_nan_results_are_the_canonical_nan(text, a, b, want):
    """H100: single- and half-precision instructions return the canonical NaN (the ISA: unspecified)."""
    assert run(text, a, b) == want


def test_f64_nan_payloads_propagate_quieted_from_b_then_a():
    """f64 supports NaN payloads: add/sub/mul/min/max return b's NaN (else a's) with the quiet bit set."""
    na, nb = 0x7FF0000000000123, 0xFFF4000000000456
    assert run("add.rn.f64", na, nb) == 0xFFFC000000000456
    assert run("sub.rn.f64", na, f64(1.0)) == 0x7FF8000000000123
    assert run("min.f64", na, nb) == 0xFFFC000000000456


def test_f64_fma_takes_b_then_c_then_a_and_div_a_then_b():
    na, nb, nc = 0x7FF0000000000001, 0x7FF0000000000002, 0x7FF0000000000003
    assert run("fma.rn.f64", na, nb, nc) == 0x7FF8000000000002
    assert run("fma.rn.f64", na, f64(1.0), nc) == 0x7FF8000000000003
    assert run("div.rn.f64", na, nb) == 0x7FF8000000000001


def test_f64_invalid_operations_return_the_negative_default_nan():
    """0/0, inf - inf, sqrt(-1): no NaN operand to pass on; the H100 gives 0xfff8000000000000."""
    assert run("div.rn.f64", 0, 0) == 0xFFF8000000000000
    assert run("add.rn.f64", f64(np.inf), f64(-np.inf)) == 0xFFF8000000000000
    assert run("sqrt.rn.f64", f64(-1.0)) == 0xFFF8000000000000


def test_sqrt_of_minus_zero_is_minus_zero():
    assert run("sqrt.rn.f32", 1 << 31) == 1 << 31


# ------------------------------------------------------------------------------- neg abs copysign

def test_neg_and_abs_change_only_the_sign_of_numbers():
    assert run("neg.f32", 0) == 1 << 31
    assert run("abs.f32", 1 << 31) == 0
    assert run("neg.f16", 0x0001) == 0x8001             # subnormals kept without .ftz
    assert run("neg.ftz.f16", 0x0001) == 0x8000         # flushed, then negated


def test_neg_and_abs_of_nan():
    """The ISA: unspecified NaN; the H100: f32/f16/bf16 give the canonical NaN, f64 the operand
    quieted, its sign unchanged (abs.f64 passes NaN through, as the ISA says)."""
    assert run("neg.f32", 0xFF800001) == QNAN32
    assert run("abs.bf16x2", 0xFF81FF81) == 0x7FFF7FFF
    assert run("neg.f64", 0x7FF0000000000005) == 0x7FF8000000000005
    assert run("abs.f64", 0xFFF8000000000005) == 0xFFF8000000000005


def test_copysign_copies_the_sign_of_a_into_b_bits_and_all():
    assert run("copysign.f32", f32(-1.0), 0x7F812345) == 0xFF812345
    assert run("copysign.f64", f64(1.0), f64(-2.0)) == f64(2.0)


# ---------------------------------------------------------------------------------------- min max

def test_min_max_return_the_number_when_one_input_is_nan():
    assert run("min.f32", QNAN32, TWO) == TWO
    assert run("max.f16", f16(-3.0), 0x7E00) == f16(-3.0)


def test_min_max_nan_modifier_returns_the_canonical_nan():
    assert run("min.NaN.f32", QNAN32 ^ 5, TWO) == QNAN32
    assert run("max.NaN.bf16", 0x3F80, 0xFF81) == 0x7FFF


def test_minus_zero_is_less_than_plus_zero():
    assert run("min.f32", 0, 1 << 31) == 1 << 31
    assert run("max.f32", 1 << 31, 0) == 0


def test_xorsign_abs():
    """.abs: the magnitude is the min/max of |a|, |b|; .xorsign: the sign is sign(a) ^ sign(b)."""
    assert run("min.xorsign.abs.f32", f32(-2.0), f32(3.0)) == f32(-2.0)
    assert run("max.xorsign.abs.f32", f32(-2.0), f32(3.0)) == f32(-3.0)
    assert run("max.xorsign.abs.f16", f16(-2.0), f16(-3.0)) == f16(3.0)


# ---------------------------------------------------------------------------------------- testp

@pytest.mark.parametrize("test, want", [
    ("finite", [1, 1, 1, 0, 0], ), ("infinite", [0, 0, 0, 1, 0]), ("number", [1, 1, 1, 1, 0]),
    ("notanumber", [0, 0, 0, 0, 1]), ("normal", [1, 1, 0, 0, 0]), ("subnormal", [0, 0, 1, 0, 0])])
def test_testp(test, want):
    """Zero counts as normal (the ISA's special case); values: +0, 1, a subnormal, -inf, NaN."""
    values = [0, ONE, 1, INF32 | 1 << 31, QNAN32]
    assert [run(f"testp.{test}.f32", v) for v in values] == want


# ---------------------------------------------------------------------------------- setp and set

@pytest.mark.parametrize("cmp, want", [("lt", 0), ("ltu", 1), ("ne", 0), ("neu", 1), ("num", 0), ("nan", 1)])
def test_ordered_comparisons_are_false_and_unordered_true_with_nan(cmp, want):
    assert run(f"setp.{cmp}.f32", QNAN32, ONE) == want


def test_setp_q_is_the_complement_combined_with_c():
    """p = BoolOp(t, c), q = BoolOp(!t, c)."""
    assert run("setp.lt.and.f32", ONE, TWO, True, ndst=2) == (1, 0)
    assert run("setp.lt.or.f32", TWO, ONE, True, ndst=2) == (1, 1)
    assert run("setp.lt.xor.f32", ONE, TWO, True, ndst=2) == (0, 1)


def test_setp_ftz_compares_subnormals_as_zero():
    assert run("setp.eq.f32", 1, 0) == 0
    assert run("setp.eq.ftz.f32", 1, 0) == 1


def test_setp_f16x2_writes_one_predicate_per_half():
    a = f16(1.0) | f16(3.0) << 16
    b = f16(2.0) | f16(2.0) << 16
    assert run("setp.lt.f16x2", a, b, ndst=2) == (1, 0)
    assert run("setp.lt.f16x2", a, b) == 1           # p alone: the low half's


@pytest.mark.parametrize("text, want", [("set.lt.f32.f32", 0x3F800000), ("set.lt.u32.f32", 0xFFFFFFFF),
                                        ("set.lt.f16.f32", 0x3C00), ("set.lt.bf16.f32", 0x3F80)])
def test_set_writes_one_in_the_destination_type(text, want):
    assert run(text, ONE, TWO) == want
    assert run(text, TWO, ONE) == 0


def test_set_on_packed_sources_writes_each_half():
    """set.u32.bf16x2 writes 0xffff per true half (not the 1.0 the ISA's pseudo-code shows)."""
    a = 0x3F80 | 0x4000 << 16
    b = 0x4000 | 0x3F80 << 16
    assert run("set.lt.u32.bf16x2", a, b) == 0x0000FFFF
    assert run("set.lt.f16x2.f16x2", f16(1.0) | f16(2.0) << 16, f16(2.0) | f16(1.0) << 16) == 0x3C00


# ------------------------------------------------------------------------------------ refusals

@pytest.mark.parametrize("text, nsrc, ndst, why", [
    ("add.rn.f32x2", 2, 1, "sm_100"), ("add.rn.f32.f16", 2, 1, "sm_100"),
    ("min.f32", 3, 1, r"takes 1 destination\(s\) and 2 source"), ("mad.f32", 3, 1, r"mad\.rnd\{\.ftz\}\{\.sat\}\.f32"),
    ("fma.f16", 3, 1, r"fma\.rn\{\.ftz\}\{\.sat\}\.type"),
    ("add.rz.f16", 2, 1, ".rn"), ("add.ftz.f64", 2, 1, ".ftz"), ("fma.rn.sat.bf16", 3, 1, ".sat"),
    ("fma.rn.ftz.oob.f16", 3, 1, ".oob"), ("min.abs.f32", 2, 1, ".xorsign"), ("testp.normal.f16", 1, 1, "f16"),
    ("rcp.rn.ftz.f64", 1, 1, ".ftz"), ("setp.lt.f16", 2, 2, "p"), ("setp.lo.f32", 2, 1, "not a form of setp"),
    ("set.lt.bf16x2.f16x2", 2, 1, "not a form of set"), ("set.lt.ftz.bf16.f32", 2, 1, ".ftz")])
def test_refused_by_name(text, nsrc, ndst, why):
    """Not on sm_90, or not defined by the ISA: refused when resolved,
    by this family (the integer family hands it float types and float comparisons) and so by the
    package's dispatch."""
    s = spec(text, ndst, nsrc)
    with pytest.raises(UnsupportedInstruction, match=why) as e:
        resolve(s)
    assert str(e.value).startswith(text)


# --------------------------------------------------------------------- exact rounding, property

def _value(bits: int, name: str) -> Fraction | None:
    f = FORMATS[name]
    e = bits >> f.man_bits & ((1 << f.exp_bits) - 1)
    m = bits & ((1 << f.man_bits) - 1)
    if e == (1 << f.exp_bits) - 1:
        return None
    v = Fraction(m if e == 0 else m | 1 << f.man_bits) * Fraction(2) ** (max(e, 1) - f.bias - f.man_bits)
    return -v if bits >> (f.storage_bits - 1) & 1 else v


def _round(x: Fraction, name: str, mode: str, root: bool = False) -> int | None:
    """x (or sqrt(x) with ``root``) rounded to the format: an independent scalar rounding."""
    f = FORMATS[name]
    p = f.man_bits + 1
    if x == 0:
        return None
    sign = int(x < 0)
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e = e // 2 - 1 if root else e - 1
    while (Fraction(2) ** (2 * (e + 1)) if root else Fraction(2) ** (e + 1)) <= a:
        e += 1
    q = max(e, f.emin) - (p - 1)
    y = a / Fraction(2) ** (2 * q if root else q)
    if root:
        r = isqrt(y.numerator // y.denominator)
        exact, above = Fraction(r) ** 2 == y, y > (Fraction(r) + Fraction(1, 2)) ** 2
        tie = y == (Fraction(r) + Fraction(1, 2)) ** 2
    else:
        r = y.numerator // y.denominator
        exact, above, tie = r == y, y - r > Fraction(1, 2), y - r == Fraction(1, 2)
    up = {"rn": above or (tie and r & 1), "rz": False, "rm": sign and not exact, "rp": not sign and not exact}[mode]
    bits = ((max(e, f.emin) - f.emin) << (p - 1)) + r + int(up)
    inf = ((1 << f.exp_bits) - 1) << f.man_bits
    if bits >= inf:
        to_inf = mode == "rn" or (mode == "rm" and sign) or (mode == "rp" and not sign)
        bits = inf if to_inf else inf - 1
    return bits | sign << (f.storage_bits - 1)


EXACT = [(op, t, mode) for op, t in [("add", "f32"), ("sub", "f64"), ("mul", "f32"), ("mul", "f64"), ("fma", "f32"),
                                      ("fma", "f64"), ("div", "f32"), ("div", "f64"), ("rcp", "f64"),
                                      ("sqrt", "f32"), ("sqrt", "f64")] for mode in ("rn", "rz", "rm", "rp")]
EXACT += [(op, t, "rn") for op in ("add", "mul", "fma") for t in ("f16", "bf16")]


@pytest.mark.parametrize("op, t, mode", EXACT)
def test_results_are_the_exact_value_rounded_once(op, t, mode):
    """On the ptx_float family's targeted inputs (cancellation, results at the subnormal and overflow
    boundaries, short significands), every finite nonzero result is the exact value rounded once,
    checked against rational arithmetic."""
    g = next(x for x in cases.groups() if x.name == f"{op}.{mode}.{t}")
    ops = [a[cases.BLOCK:cases.BLOCK + 400] for a in cases.inputs(g, 2 * cases.BLOCK, 0)]
    got = cases.predict(g, ops)
    checked = 0
    for i in range(len(got)):
        vals = [_value(int(x[i]), t) for x in ops]
        if any(v is None for v in vals):
            continue
        if op == "sqrt":
            want = _round(vals[0], t, mode, root=True) if vals[0] > 0 else None
        elif op in ("div", "rcp") and vals[-1] == 0:
            want = None
        else:
            x = {"add": lambda v: v[0] + v[1], "sub": lambda v: v[0] - v[1], "mul": lambda v: v[0] * v[1],
                 "fma": lambda v: v[0] * v[1] + v[2], "div": lambda v: v[0] / v[1],
                 "rcp": lambda v: 1 / v[0]}[op](vals)
            want = _round(x, t, mode)
        if want is not None:
            assert int(got[i]) == want, (op, t, mode, [hex(int(x[i])) for x in ops])
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("name", ["add.rn.f32", "sub.ftz.f32", "mul.rn.ftz.sat.f32", "fma.rn.ftz.f32", "mad.rn.f32",
                                  "add.rn.f64", "mul.f64"])
def test_the_host_float_path_of_rn_is_the_exact_path(name, monkeypatch):
    """.rn f32/f64 add/sub/mul (and f32 fma) use the host's IEEE float64 where it keeps subnormals;
    the integer path gives the same bits on the family's first two blocks."""
    g = next(x for x in cases.groups() if x.name == name)
    ops = cases.inputs(g, 2 * cases.BLOCK, 0)
    fast = cases.predict(g, ops)
    monkeypatch.setattr(floating, "_host_is_ieee", lambda: False)
    assert np.array_equal(cases.predict(g, ops), fast)


# ------------------------------------------------------------------------------ the H100 recording

def test_the_h100_recording_replays_bit_for_bit(capsys):
    """Block 0 of every variant (the special-value grid and the first cases of each class) and every
    kept case: fragsim writes what the H100 wrote."""
    assert main(["gpu-check", "--family", "ptx_float", "--replay", str(DATA), "--cases", str(cases.BLOCK),
                 "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    recorded = np.load(DATA / "ptx_float.npz")["variants"]
    assert rep["mismatches"] == 0 and rep["variants"] == len(recorded) <= len(cases.groups())


def test_the_replay_sees_a_changed_rule(monkeypatch, capsys):
    """The replay fails when a measured rule changes (here the f32 canonical NaN)."""
    monkeypatch.setitem(floating.NAN_RESULT, "f32", 0x7FC00000)
    assert main(["gpu-check", "--family", "ptx_float", "--replay", str(DATA), "--cases", str(cases.BLOCK),
                 "--forms", "add.rn.f32", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["mismatches"] > 0


def test_every_checked_variant_resolves_and_its_kernel_runs_it_as_written():
    """What the family checks is what the interpreter runs: each instruction of each group resolves
    (through the package's dispatch, not refused) and appears verbatim in its kernel's inline PTX."""
    for i, g in enumerate(cases.groups()):
        src = cases.kernel_source(g, i)
        for s in g.specs:
            assert resolve(s).dst and f"{s.text} " in src, s.text
