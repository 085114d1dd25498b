"""The MUFU forms (fragsim.approx, fragsim.sfu): the H100's recorded results, and the properties the
PTX ISA documents for each ``.approx`` instruction."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import fragsim
from fragsim.ptx.semantics.approx import FORMS
from fragsim.gpu_check.approx.family import FIXED, GROUP, blocks, load, model_digests

RECORDING = "tests/data/approx/approx_h100.npz"
REC = load(RECORDING)


def f32(*values) -> np.ndarray:
    return np.array(values, np.float32).view(np.uint32)


def val(words) -> np.ndarray:
    return np.asarray(words, np.uint32).view(np.float32)


# -- what the H100 returned -------------------------------------------------------------------------

@pytest.mark.parametrize("form", [f for f in FORMS if f"digest:{f}" in REC])
def test_the_h100s_results_on_zeros_ones_extremes_and_specials(form):
    """The recorded digests of the groups of 2^20 inputs holding +-0 and the subnormals, +-1, the
    largest finites, +-inf and the NaNs (div: the first 2^20 pairs) equal fragsim's."""
    for g in blocks(form, len(FIXED) if not form.startswith("div") else 1):
        assert model_digests(form, g) == int(REC[f"digest:{form}"][g]), f"{form}: inputs from {g * GROUP:#x}"


@pytest.mark.parametrize("form", [f for f in FORMS if f"table:{f}" in REC])
def test_every_16_bit_input_as_the_h100_returned_it(form):
    h = np.arange(1 << 16, dtype=np.uint16)
    assert np.array_equal(fragsim.approx(form, h), REC[f"table:{form}"])


def test_each_half_of_an_x2_form_is_computed_alone():
    """Measured on the H100 over all 2^32 pairs: an x2 result is the two scalar results."""
    for f in ("ex2.approx.f16x2", "ex2.approx.ftz.bf16x2"):
        assert int(REC[f"halves_differ:{f}"][0]) == 0
    w = np.random.default_rng(1).integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
    lo, hi = (w & 0xFFFF).astype(np.uint16), (w >> 16).astype(np.uint16)
    got = fragsim.approx("ex2.approx.f16x2", w)
    assert np.array_equal(got & 0xFFFF, fragsim.approx("ex2.approx.f16", lo))
    assert np.array_equal(got >> 16, fragsim.approx("ex2.approx.f16", hi))


# -- special values ---------------------------------------------------------------------------------

def test_every_nan_result_is_the_canonical_nan():
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF], np.uint32)
    for form in [f for f in FORMS if FORMS[f].type == "f32" and FORMS[f].operands == 1]:
        assert (fragsim.approx(form, nans) == 0x7FFFFFFF).all(), form


def test_rcp_of_signed_zero_is_signed_infinity_and_of_infinity_signed_zero():
    r = fragsim.approx("rcp.approx.ftz.f32", f32(0.0, -0.0, np.inf, -np.inf))
    assert r.tolist() == [0x7F800000, 0xFF800000, 0x00000000, 0x80000000]


def test_ftz_forms_take_subnormal_inputs_as_zero_and_plain_forms_scale_them():
    tiny = np.array([0x00000400], np.uint32)                     # 2^-139
    assert fragsim.approx("rcp.approx.ftz.f32", tiny)[0] == 0x7F800000
    assert val(fragsim.approx("rcp.approx.f32", tiny))[0] == np.float32(np.inf)     # 2^139 overflows
    r = float(val(fragsim.approx("rsqrt.approx.f32", tiny))[0])
    assert abs(r / 2.0 ** 69.5 - 1) < 2.0 ** -22.9
    assert val(fragsim.approx("lg2.approx.f32", tiny))[0] == np.float32(-139.0)


def test_rsqrt_and_lg2_of_negatives_are_nan_and_of_minus_zero_minus_infinity():
    assert fragsim.approx("rsqrt.approx.ftz.f32", f32(-1.0, -0.0)).tolist() == [0x7FFFFFFF, 0xFF800000]
    assert fragsim.approx("lg2.approx.ftz.f32", f32(-1.0, -0.0)).tolist() == [0x7FFFFFFF, 0xFF800000]


def test_ex2_of_integers_is_exact_and_saturates_past_the_range():
    k = np.arange(-126, 128, dtype=np.float32)
    assert np.array_equal(val(fragsim.approx("ex2.approx.ftz.f32", k.view(np.uint32))),
                          np.ldexp(1.0, k.astype(int)).astype(np.float32))
    assert fragsim.approx("ex2.approx.ftz.f32", f32(128.0, -np.inf, -200.0)).tolist() == [0x7F800000, 0, 0]


def test_ex2_without_ftz_reaches_the_subnormals_by_squaring_half_the_exponent():
    """ptxas: below -126, 2^(x/2) squared; the .ftz form flushes."""
    r = val(fragsim.approx("ex2.approx.f32", f32(-130.0, -149.0)))
    assert r.tolist() == [2.0 ** -130, 2.0 ** -149]
    assert fragsim.approx("ex2.approx.ftz.f32", f32(-130.0)).tolist() == [0]


def test_div_approx_returns_zero_for_divisors_past_2_to_the_126_and_div_full_does_not():
    """PTX ISA: div.approx.f32 flushes for 2^126 < |b| < 2^128; div.full.f32 scales first."""
    a, b = f32(2.0 ** 127), f32(2.0 ** 127)
    assert fragsim.approx("div.approx.ftz.f32", a, b)[0] == 0
    assert val(fragsim.approx("div.full.f32", a, b))[0] == 1.0


def test_sin_is_odd_and_cos_even_bit_for_bit():
    """Measured on the H100 over every finite input."""
    x = np.random.default_rng(2).integers(0, 0x7F800000, 1 << 16, dtype=np.uint32)
    for ftz in ("", ".ftz"):
        assert np.array_equal(fragsim.approx(f"sin.approx{ftz}.f32", x | np.uint32(1 << 31)),
                              fragsim.approx(f"sin.approx{ftz}.f32", x) ^ np.uint32(1 << 31))
        assert np.array_equal(fragsim.approx(f"cos.approx{ftz}.f32", x | np.uint32(1 << 31)),
                              fragsim.approx(f"cos.approx{ftz}.f32", x))


def test_f16_ex2_past_the_largest_half_is_infinity_and_below_it_truncated():
    x = np.float16([16.0, 15.99])
    r = fragsim.approx("ex2.approx.f16", x.view(np.uint16)).view(np.float16)
    exact = 2.0 ** float(x[1])                    # 65182.07; halves are 32 apart up there
    assert r[0] == np.inf and float(r[1]) <= exact < float(r[1]) + 32


# -- the PTX ISA's error bounds ----------------------------------------------------------------------

def _ulps(r, exact):
    r = val(r).astype(np.float64)
    e = np.floor(np.log2(np.abs(exact)))
    return np.abs(r - exact) / 2.0 ** (np.maximum(e, -126) - 23)


def test_rcp_is_within_one_ulp():
    x = np.random.default_rng(3).uniform(1.0, 2.0, 1 << 16).astype(np.float32)
    assert _ulps(fragsim.approx("rcp.approx.ftz.f32", x.view(np.uint32)), 1.0 / x.astype(np.float64)).max() <= 1.0


def test_ex2_is_within_2_plus_1_16_abs_x_ulp():
    """The unit truncates x to 23 fraction bits first: the error grows with |x|."""
    x = np.random.default_rng(4).uniform(-100.0, 100.0, 1 << 16).astype(np.float32)
    u = _ulps(fragsim.approx("ex2.approx.ftz.f32", x.view(np.uint32)), np.exp2(x.astype(np.float64)))
    assert (u <= 2.0 + 1.16 * np.abs(x)).all()


def test_rsqrt_is_within_relative_2_to_the_minus_22_9():
    x = np.random.default_rng(5).uniform(1.0, 4.0, 1 << 16).astype(np.float32)
    exact = 1.0 / np.sqrt(x.astype(np.float64))
    r = val(fragsim.approx("rsqrt.approx.ftz.f32", x.view(np.uint32))).astype(np.float64)
    assert (np.abs(r - exact) / exact).max() <= 2.0 ** -22.9


def test_lg2_is_within_absolute_2_to_the_minus_22_on_half_to_two():
    x = np.random.default_rng(6).uniform(0.5, 2.0, 1 << 16).astype(np.float32)
    r = val(fragsim.approx("lg2.approx.ftz.f32", x.view(np.uint32))).astype(np.float64)
    assert np.abs(r - np.log2(x.astype(np.float64))).max() <= 2.0 ** -22


def test_sin_and_cos_are_within_absolute_2_to_the_minus_20_9_on_minus_pi_to_pi():
    x = np.random.default_rng(7).uniform(-np.pi, np.pi, 1 << 16).astype(np.float32)
    for name, fn in (("sin", np.sin), ("cos", np.cos)):
        r = val(fragsim.approx(f"{name}.approx.ftz.f32", x.view(np.uint32))).astype(np.float64)
        assert np.abs(r - fn(x.astype(np.float64))).max() <= 2.0 ** -20.9


# -- the kernel's own f32 arithmetic is the instruction table's --------------------------------------

def test_the_sequences_multiplies_and_adds_are_the_tables_mul_and_add_rows():
    """fragsim.sfu.kernel's FMUL (rn, rz, ftz) and FADD against the mul/add rows' semantics."""
    from fragsim.ptx.isa.table import resolve
    from fragsim.ptx.semantics import Spec
    from fragsim.sfu import kernel as K
    from numba import njit

    @njit
    def apply(op, a, b):
        sc = np.zeros(1, np.uint32)
        out = np.empty(a.shape[0], np.uint32)
        for k in range(a.shape[0]):
            x, y = np.int64(a[k]), np.int64(b[k])
            out[k] = (K._fmul(x, y, sc) if op == 0 else K._fmul_rz(x, y, sc) if op == 1 else
                      K._fmul_ftz(x, y, sc) if op == 2 else K._fadd(x, y, sc))
        return out
    rng = np.random.default_rng(8)
    specials = np.array([0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000,
                         0x7FC00000, 0x3F800000, 0x3E22F983, 0x4B800000], np.uint32)
    a = np.concatenate([np.repeat(specials, len(specials)), rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32)])
    b = np.concatenate([np.tile(specials, len(specials)), rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32)])
    for op, text in enumerate(("mul.rn.f32", "mul.rz.f32", "mul.rn.ftz.f32", "add.rn.f32")):
        opcode, *mods = text.split(".")
        want = resolve(Spec(opcode, tuple(mods), 1, 2)).fn(a, b)[0]
        assert np.array_equal(apply(op, a, b), want), text


# -- the API and the command ------------------------------------------------------------------------

def test_an_unknown_spelling_lists_the_modelled_forms():
    with pytest.raises(ValueError, match="not a modelled MUFU form; modelled: rcp.approx.f32"):
        fragsim.approx("ex2.approx.f64", 0)


def test_words_broadcast_like_numpy():
    r = fragsim.approx("div.full.f32", f32(1.0, 2.0, 3.0)[:, None], f32(3.0, 4.0))
    assert r.shape == (3, 2) and val(r)[1, 1] == 0.5


def test_the_command_prints_bits_value_and_distance_from_the_exact_result():
    out = subprocess.run([sys.executable, "-m", "fragsim", "approx", "ex2.approx.ftz.f32", "0x3fc00000"],
                         capture_output=True, text=True, check=True).stdout
    assert out == ("ex2.approx.ftz.f32 0x3fc00000 (1.5) -> 0x403504f3 (2.82842708); exact 2.82842712: "
                   "-0.203 ulp (correctly rounded)\n")


def test_the_kernels_tanh_segments_are_the_tables():
    """fragsim.sfu.kernel keeps its own copy of TANH_SEGMENT_BITS (numba's cache keys on that file alone)."""
    from fragsim.sfu import kernel, tables
    assert kernel.TANH_SEGMENT_BITS == tables.TANH_SEGMENT_BITS
    assert len(tables.TANH) == sum(1 << k for k in tables.TANH_SEGMENT_BITS)


def test_each_form_that_is_a_mufu_op_alone_names_its_unit():
    from fragsim.sfu import kernel
    alone = {kernel.FORMS[i]: kernel.UNITS[u] for i, u in enumerate(kernel.FORM_UNIT) if u >= 0}
    assert len(kernel.FORM_UNIT) == len(kernel.FORMS)
    assert alone == {f"{u}.approx.ftz.f32": u for u in ("rcp", "rsqrt", "lg2", "ex2", "sqrt")} | {"tanh.approx.f32": "tanh"}
