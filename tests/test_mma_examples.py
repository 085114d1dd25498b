"""Documented cases of mma.sync arithmetic, one per test: the worked examples of the
published tensor-core arithmetic studies (the truncated fused dot-product-add), the cases MMA-Sim checked, and the probes the
H200 corpus recorded (tests/data/hw).  Each builds row 0 of A, column 0 of B and C[0, 0]
(everything else zero) and reads D[0, 0]."""

import numpy as np
import pytest

import fragsim
from fragsim.facts.formats import from_float, to_float
from mma_cases import FLOAT_FORMS

F32_F16 = "m16n8k16.row.col.f32.f16.f16.f32"
F16_F16 = "m16n8k16.row.col.f16.f16.f16.f16"
F32_BF16 = "m16n8k16.row.col.f32.bf16.bf16.f32"
TF32 = "m16n8k8.row.col.f32.tf32.tf32.f32"
FLT_MAX = float(np.finfo(np.float32).max)


def d00(form, arch, a=(), b=(), c=0.0, a_bits=None, b_bits=None, c_bits=None, at=None):
    """D[0, 0] bits for a[k] (row 0 of A) and b[k] (column 0 of B) at k = ``at`` (0, 1, ...)."""
    f = fragsim.lookup(form)
    A = np.zeros(f.matrix_shape("A"), f.fmt("A").dtype)
    B = np.zeros(f.matrix_shape("B"), f.fmt("B").dtype)
    C = np.zeros(f.matrix_shape("C"), f.fmt("C").dtype)
    ks = list(at) if at is not None else list(range(max(len(a), len(a_bits or ()))))
    av = a_bits if a_bits is not None else from_float(np.array(a, float), f.fmt("A"))
    bv = b_bits if b_bits is not None else from_float(np.array(b, float), f.fmt("B"))
    for k, x, y in zip(ks, av, bv):
        A[0, k], B[k, 0] = x, y
    C[0, 0] = c_bits if c_bits is not None else from_float(c, f.fmt("C"))
    d = fragsim.mma(form, fragsim.pack(form, "A", A), fragsim.pack(form, "B", B), fragsim.pack(form, "C", C),
                    arch=arch)
    return int(fragsim.unpack(form, "D", d)[0, 0])


def value(form, word):
    return float(to_float(np.array([word], fragsim.lookup(form).fmt("D").dtype), fragsim.lookup(form).fmt("D"))[0])


# --- the reference doc's worked examples ---------------------------------------------------

EX1 = dict(a=[-2.0**13, -0.5, -0.25, -0.125], b=[2.0**10, 1, 1, 1], c=2.0**23)


@pytest.mark.parametrize("arch, want", [("sm_80", -0.5), ("sm_90", -0.75)])
def test_small_products_after_cancellation_are_truncated_to_the_large_terms_grid(arch, want):
    # exact -0.875; sm_80 keeps F=24 bits below 2^23 over 8 products, sm_90 F=25
    assert value(F32_F16, d00(F32_F16, arch, **EX1)) == want


@pytest.mark.parametrize("arch, want", [("sm_80", -0.875), ("sm_90", -0.75)])
def test_sm80_finishes_the_cancellation_inside_the_first_block(arch, want):
    # the three small products moved to k = 8, 9, 10: on sm_80 they meet the rounded
    # result of block one (c + a0*b0 = 0), not 2^23
    assert value(F32_F16, d00(F32_F16, arch, at=[0, 8, 9, 10], **EX1)) == want


@pytest.mark.parametrize("arch, want", [("sm_80", 0x40000000), ("sm_90", 0x3FFFFFFF)])
def test_c_plus_one_minus_a_tiny_product(arch, want):
    # c = 1, a = [1, 2^-12], b = [1, -2^-13]: sm_80 drops 2^-25 (F=24) and 1 + 1 = 2;
    # sm_90 keeps it and rounds 2 - 2^-25 toward zero
    assert d00(F32_F16, arch, a=[1, 2.0**-12], b=[1, -(2.0**-13)], c=1.0) == want


# --- F: where the last kept bit sits ----------------------------------------------------------

@pytest.mark.parametrize("arch, want", [("sm_80", 0x3F800000), ("sm_90", 0x3F7FFFFF)])
def test_a_product_of_minus_2_to_the_minus_25_is_kept_only_with_F_25(arch, want):
    assert d00(F32_F16, arch, a=[2.0**-12], b=[-(2.0**-13)], c=1.0) == want


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_bits_below_the_grid_are_dropped_not_rounded(arch):
    # 1 - 2^-30: truncation toward zero of the term leaves exactly 1, not 1 - ulp
    assert d00(F32_F16, arch, a=[2.0**-15], b=[-(2.0**-15)], c=1.0) == 0x3F800000


@pytest.mark.parametrize("arch, want", [("sm_80", 0x3C00), ("sm_90", 0x3C01)])
def test_f16_output_rounds_the_exact_sum_once_to_nearest_even(arch, want):
    # 1 + 2^-11 + 2^-25: sm_80 drops 2^-25 and 1 + 2^-11 is a tie (to even, 1.0); sm_90
    # keeps it, above the tie: no intermediate f32 rounding either
    assert d00(F16_F16, arch, a=[1, 2.0**-11, 2.0**-12], b=[1, 1, 2.0**-13], c=0.0) == want


def test_c_is_truncated_like_any_term():
    # bf16: 2^254 - 2^254 + 1 = +0, since c lies far below 2^(254 - F)
    assert d00(F32_BF16, "sm_90", a=[2.0**127, 2.0**127], b=[2.0**127, -(2.0**127)], c=1.0) == 0


# --- e_zero: the exponent a zero term brings to E_max ----------------------------------------

@pytest.mark.parametrize("arch, want", [("sm_80", 0x0000), ("sm_90", 0x0001)])
def test_f16_zero_terms_take_e_zero(arch, want):
    # c = +0, products 2^-25 + 2^-45: E_max = e_zero (-20 / -21), so 2^-45 falls below the
    # grid 2^-44 on sm_80 (the tie 2^-25 goes to even 0) and stays on sm_90 (rounds up)
    assert d00(F16_F16, arch, a=[2.0**-12, 2.0**-24], b=[2.0**-13, 2.0**-21], c=0.0) == want


@pytest.mark.parametrize("k, want", [(158, 0x000001FF), (159, 0x00000200)])
def test_f32_zero_terms_take_e_zero_minus_133_on_sm90(k, want):
    # bf16, c = +0: 2^-140 - 2^-k; the grid is 2^(-133 - 25) = 2^-158, so 2^-159 truncates
    # away and RZ keeps 2^-140 (subnormal 0x200); 2^-158 stays and RZ steps below it
    assert d00(F32_BF16, "sm_90", a=[2.0**-70, 2.0**-75], b=[2.0**-70, -(2.0**(75 - k))], c=0.0) == want


# --- subnormals in and out --------------------------------------------------------------------

def test_subnormal_inputs_keep_their_value():
    # f16 2^-24 (subnormal) * 2^10 = 2^-14 exactly
    assert d00(F32_F16, "sm_90", a=[2.0**-24], b=[2.0**10], c=0.0) == 0x38800000


def test_subnormal_f32_results_are_produced():
    # bf16 2^-70 * 2^-79 = 2^-149, the smallest f32 subnormal
    assert d00(F32_BF16, "sm_90", a=[2.0**-70], b=[2.0**-79], c=0.0) == 0x00000001


def test_subnormal_f16_c_takes_emin_for_e_max():
    # c = 2^-24 (0x0001) with products 2^-25 - 2^-48: E_max = -14 (c's emin), the grid
    # 2^-39 drops 2^-48, the exact tie 1.5 * 2^-24 goes to even: 0x0002
    assert d00(F16_F16, "sm_90", a=[2.0**-12, 2.0**-24], b=[2.0**-13, -(2.0**-24)], c_bits=0x0001) == 0x0002


# --- overflow, Inf, NaN -----------------------------------------------------------------------

@pytest.mark.parametrize("p, want", [(2.0**103, 0x7F7FFFFF), (2.0**104, 0x7F800000)])
def test_overflow_gives_inf_even_under_round_toward_zero(p, want):
    # FLT_MAX + 2^103 truncates back to FLT_MAX; + 2^104 reaches 2^128
    assert d00(F32_BF16, "sm_90", a=[2.0**52], b=[p / 2.0**52], c=FLT_MAX) == want


def test_exact_products_never_overflow_on_their_own():
    # bf16 2^127 * 2^127 is exact (2^254) and only the f32 result overflows
    assert d00(F32_BF16, "sm_90", a=[2.0**127], b=[2.0**127]) == 0x7F800000


@pytest.mark.parametrize("arch, want", [("sm_80", 0x7C00), ("sm_90", 0x7800)])
def test_sm80_block_that_overflowed_stays_inf(arch, want):
    # f16 output, products 2^16 + 2^16 at k = 0, 1 and -2^16 - 2^15 at k = 8, 9: on sm_80
    # block one rounds to Inf (2^17 > 65504) and stays Inf; sm_90 sums all: 2^15 (0x7800)
    assert d00(F16_F16, arch, a=[2.0**15, 2.0**15, -(2.0**15), -(2.0**15)], b=[2.0, 2.0, 2.0, 1.0],
               at=[0, 1, 8, 9]) == want


@pytest.mark.parametrize("a_bits, b_bits", [([0xFE01], [0x3C00]), ([0x7C00], [0x0000]), ([0x7C00, 0xFC00], [0x3C00, 0x3C00])],
                         ids=["nan-payload", "inf-times-zero", "inf-minus-inf"])
def test_nan_results_are_the_canonical_word(a_bits, b_bits):
    assert d00(F16_F16, "sm_90", a_bits=a_bits, b_bits=b_bits) == 0x7FFF
    assert d00(F32_F16, "sm_90", a_bits=a_bits, b_bits=b_bits) == 0x7FFFFFFF


def test_inf_absorbs_finite_terms_and_keeps_its_sign():
    assert d00(F32_F16, "sm_90", a_bits=[0xFC00, 0x3C00], b_bits=[0x3C00, 0x3C00], c=5.0) == 0xFF800000


def test_nan_c_gives_canonical_nan():
    assert d00(F32_F16, "sm_90", a=[1.0], b=[1.0], c_bits=0xFFC00001) == 0x7FFFFFFF


# --- tf32 -------------------------------------------------------------------------------------

def test_tf32_ignores_the_low_13_bits():
    assert d00(TF32, "sm_90", a_bits=[0x3F801FFF], b=[1.0]) == 0x3F800000


def test_tf32_nan_payload_only_in_ignored_bits_reads_as_inf():
    assert d00(TF32, "sm_90", a_bits=[0x7F800001], b=[1.0]) == 0x7F800000
    assert d00(TF32, "sm_90", a_bits=[0x7F802000], b=[1.0]) == 0x7FFFFFFF


def test_tf32_c_is_full_f32():
    # C is f32: a NaN payload in its low bits is still a NaN
    assert d00(TF32, "sm_90", a=[1.0], b=[1.0], c_bits=0x7F800001) == 0x7FFFFFFF


# --- signed zeros -----------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_an_all_negative_zero_sum_is_plus_zero(arch):
    f = fragsim.lookup(F32_F16)
    A = np.full(f.matrix_shape("A"), 0x8000, np.uint16)
    B = np.zeros(f.matrix_shape("B"), np.uint16)
    C = np.full(f.matrix_shape("C"), 0x80000000, np.uint32)
    d = fragsim.mma(F32_F16, fragsim.pack(F32_F16, "A", A), fragsim.pack(F32_F16, "B", B),
                    fragsim.pack(F32_F16, "C", C), arch=arch)
    assert (fragsim.unpack(F32_F16, "D", d) == 0).all()


def test_exact_cancellation_is_plus_zero():
    assert d00(F32_F16, "sm_90", a=[1.0, -1.0], b=[1.0, 1.0], c_bits=0x80000000) == 0


# --- identity -------------------------------------------------------------------------------

@pytest.mark.parametrize("form", FLOAT_FORMS)
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_identity_b_returns_a_where_exact(form, arch):
    f = fragsim.lookup(form)
    M, N, K = f.shape
    rng = np.random.default_rng(3)
    A = from_float(rng.standard_normal((M, K)) * 4.0 ** rng.integers(-3, 4, (M, K)), f.fmt("A"))
    eye = from_float(np.eye(K, N), f.fmt("B"))
    C = np.zeros((M, N), f.fmt("C").dtype)
    d = fragsim.mma(form, fragsim.pack(form, "A", A), fragsim.pack(form, "B", eye), fragsim.pack(form, "C", C), arch=arch)
    got = to_float(fragsim.unpack(form, "D", d), f.fmt("D"))
    want = np.zeros((M, N))            # A's columns k < N; zero beyond K (m16n8k4: K < N)
    want[:, :min(K, N)] = to_float(A[:, :N], f.fmt("A"))
    assert np.array_equal(got, want)
