"""The integer and f64 mma forms: their fragment maps (PTX ISA "Matrix Fragments for mma.m16n8k*"
with .s8/.u8, .s4/.u4, .b1 and .f64), register packing, and their arithmetic (exact integer sums,
wrapping or saturating; f64 fma chains), each case one property the PTX ISA or the H100 states.
The recorded H100 cases replay in tests/test_hw_replay.py; tests/test_mma_hw_choices.py shows that
each rejected alternative breaks one of them."""

from fractions import Fraction

import numpy as np
import pytest

import fragsim
from fragsim import FORMS, lookup
from fragsim.facts.arch import ARCHS
from fragsim.facts.formats import IntFormat, int_from_bits, int_to_bits
from fragsim.gpu_check.table import generate as G, generate_exact as X

LANE = np.arange(32)
G_, T_ = LANE >> 2, LANE & 3          # groupID, threadID_in_group
S32_MAX, S32_MIN = 2**31 - 1, -2**31
EXACT = [n for n, f in FORMS.items() if isinstance(f.fmt("A"), IntFormat) or f.fmt("A").name == "f64"]


def _element_coords(form, op, i):
    """(row, col) arrays over the lanes of PTX element i of ``op`` (a_i, b_i, c_i)."""
    f = lookup(form)
    rows, cols = f.coords(op)
    epr, w = f.elems_per_reg(op), f.words_per_elem(op)
    reg, half = (i // epr) * w, i % epr
    return rows[:, reg, half], cols[:, reg, half]


# (form, operand, number of elements, formula(i) -> (row, col) over the lanes), as the ISA writes them
def _int8_k16_a(i):
    return G_ + 8 * (i >= 4), T_ * 4 + (i & 3)


def _int8_k32_a(i):
    return G_ + 8 * ((i & 7) >= 4), T_ * 4 + (i & 3) + 16 * (i >= 8)


def _int8_k32_b(i):
    return T_ * 4 + (i & 3) + 16 * (i >= 4), G_


def _int4_k64_a(i):
    return G_ + 8 * ((i & 15) >= 8), T_ * 8 + (i & 7) + 32 * (i >= 16)


def _b1_k256_a(i):
    return G_ + 8 * ((i & 63) >= 32), T_ * 32 + (i & 31) + 128 * (i >= 64)


def _f64_k16_a(i):
    return G_ + 8 * (i % 2), T_ + 4 * (i // 2)


def _acc(i):
    return G_ + 8 * (i >= 2), T_ * 2 + (i & 1)


ISA_MAPS = [
    ("m16n8k16.row.col.s32.s8.u8.s32", "A", 8, _int8_k16_a),
    ("m16n8k16.row.col.s32.s8.u8.s32", "B", 4, lambda i: (T_ * 4 + i, G_)),
    ("m16n8k32.row.col.satfinite.s32.u8.u8.s32", "A", 16, _int8_k32_a),
    ("m16n8k32.row.col.satfinite.s32.u8.u8.s32", "B", 8, _int8_k32_b),
    ("m16n8k32.row.col.s32.s4.s4.s32", "A", 16, lambda i: (G_ + 8 * (i >= 8), T_ * 8 + (i & 7))),
    ("m16n8k32.row.col.s32.s4.s4.s32", "B", 8, lambda i: (T_ * 8 + i, G_)),
    ("m16n8k64.row.col.s32.u4.s4.s32", "A", 32, _int4_k64_a),
    ("m16n8k64.row.col.s32.u4.s4.s32", "B", 16, lambda i: (T_ * 8 + (i & 7) + 32 * (i >= 8), G_)),
    ("m16n8k128.row.col.s32.b1.b1.s32.and.popc", "A", 64, lambda i: (G_ + 8 * (i >= 32), T_ * 32 + (i & 31))),
    ("m16n8k128.row.col.s32.b1.b1.s32.and.popc", "B", 32, lambda i: (T_ * 32 + i, G_)),
    ("m16n8k256.row.col.s32.b1.b1.s32.xor.popc", "A", 128, _b1_k256_a),
    ("m16n8k256.row.col.s32.b1.b1.s32.xor.popc", "B", 64, lambda i: (T_ * 32 + (i & 31) + 128 * (i >= 32), G_)),
    ("m16n8k32.row.col.s32.s8.s8.s32", "C", 4, _acc),
    ("m16n8k64.row.col.satfinite.s32.s4.u4.s32", "D", 4, _acc),
    ("m8n8k4.row.col.f64.f64.f64.f64", "A", 1, lambda i: (G_, T_)),
    ("m8n8k4.row.col.f64.f64.f64.f64", "B", 1, lambda i: (T_, G_)),
    ("m8n8k4.row.col.f64.f64.f64.f64", "C", 2, lambda i: (G_, T_ * 2 + i)),
    ("m16n8k4.row.col.f64.f64.f64.f64", "A", 2, lambda i: (G_ + 8 * i, T_)),
    ("m16n8k4.row.col.f64.f64.f64.f64", "B", 1, lambda i: (T_, G_)),
    ("m16n8k8.row.col.f64.f64.f64.f64", "A", 4, _f64_k16_a),
    ("m16n8k8.row.col.f64.f64.f64.f64", "B", 2, lambda i: (T_ + 4 * i, G_)),
    ("m16n8k16.row.col.f64.f64.f64.f64", "A", 8, _f64_k16_a),
    ("m16n8k16.row.col.f64.f64.f64.f64", "B", 4, lambda i: (T_ + 4 * i, G_)),
    ("m16n8k16.row.col.f64.f64.f64.f64", "D", 4, _acc),
]


@pytest.mark.parametrize("form, op, n, formula", ISA_MAPS, ids=[f"{f.split('.')[0]}-{f.split('.')[-2]}-{o}"
                                                               for f, o, _, _ in ISA_MAPS])
def test_fragment_map_is_the_ptx_isa_formula(form, op, n, formula):
    for i in range(n):
        r, c = _element_coords(form, op, i)
        want_r, want_c = formula(i)
        assert np.array_equal(r, want_r) and np.array_equal(c, want_c), f"{op} element {i}"


@pytest.mark.parametrize("form, nregs", [
    ("m16n8k16.row.col.s32.s8.s8.s32", (4, 2, 1, 4)), ("m16n8k32.row.col.s32.u8.s8.s32", (4, 4, 2, 4)),
    ("m16n8k32.row.col.s32.s4.u4.s32", (4, 2, 1, 4)), ("m16n8k64.row.col.s32.u4.u4.s32", (4, 4, 2, 4)),
    ("m16n8k128.row.col.s32.b1.b1.s32.xor.popc", (4, 2, 1, 4)), ("m16n8k256.row.col.s32.b1.b1.s32.and.popc", (4, 4, 2, 4)),
    ("m8n8k4.row.col.f64.f64.f64.f64", (4, 2, 2, 4)), ("m16n8k4.row.col.f64.f64.f64.f64", (8, 4, 2, 8)),
    ("m16n8k8.row.col.f64.f64.f64.f64", (8, 8, 4, 8)), ("m16n8k16.row.col.f64.f64.f64.f64", (8, 16, 8, 8)),
])
def test_register_counts_are_the_ptx_operand_lists_in_32_bit_words(form, nregs):
    # PTX: {d}, {a}, {b}, {c}; an .f64 register is two 32-bit words here
    assert tuple(lookup(form).nregs(op) for op in "DABC") == nregs


def test_f64_register_is_two_words_low_word_first():
    f = lookup("m8n8k4.row.col.f64.f64.f64.f64")
    A = np.arange(32, dtype=np.float64).reshape(8, 4).view(np.uint64)
    a = fragsim.pack(f, "A", A)
    lane = 4 * 2 + 3                       # a0 of lane 11: row 2 (groupID), col 3 (tig) -> 11.0
    assert a.shape == (32, 2) and (a[lane, 0], a[lane, 1]) == (0, 0x40260000)
    assert f.element_name("A", 1, 0) == "a0" and f.owner("A")[1][2, 3] == 0


def test_integer_elements_are_packed_lowest_k_in_the_lowest_bits():
    f = lookup("m16n8k32.row.col.s32.s4.s4.s32")
    A = np.zeros((16, 32), np.uint8)
    A[0, :8] = np.arange(8)                # lane 0, a0..a7: k = 0..7 of row 0
    assert fragsim.pack(f, "A", A)[0, 0] == 0x76543210


@pytest.mark.parametrize("form", EXACT)
def test_pack_unpack_round_trip(form):
    f = lookup(form)
    rng = np.random.default_rng(len(form))
    for op in "ABCD":
        fmt = f.fmt(op)
        M = rng.integers(0, 2**fmt.storage_bits, (3,) + f.matrix_shape(op), dtype=np.uint64).astype(fmt.dtype)
        regs = fragsim.pack(f, op, M)
        assert regs.dtype == np.uint32 and regs.shape == (3, 32, f.nregs(op))
        assert np.array_equal(fragsim.unpack(f, op, regs), M)


def test_integer_words_outside_the_format_are_refused_by_name():
    with pytest.raises(ValueError, match=r"operand A of m16n8k32\.row\.col\.s32\.s4\.s4\.s32: s4 words must lie in "
                                         r"\[0, 2\*\*4\), got 16 at row 0, col 0"):
        fragsim.pack("m16n8k32.row.col.s32.s4.s4.s32", "A", np.full((16, 32), 16, np.uint8))
    with pytest.raises(TypeError, match="fragsim.facts.formats.int_to_bits"):
        fragsim.pack("m16n8k16.row.col.s32.s8.s8.s32", "A", np.zeros((16, 16)))


def test_int_bits_round_trip_and_range():
    v = np.arange(-8, 8)
    assert np.array_equal(int_from_bits(int_to_bits(v, "s4"), "s4"), v)
    assert list(int_to_bits(np.array([-1, -128, 127]), "s8")) == [0xFF, 0x80, 0x7F]
    with pytest.raises(ValueError, match=r"int_to_bits: u4 holds 0\.\.15, got 16 at index \(1,\)"):
        int_to_bits(np.array([3, 16]), "u4")
    with pytest.raises(TypeError, match="s8 is an integer format; use int_to_bits"):
        fragsim.to_bits([1.0], "s8")


def test_rn_is_the_f64_forms_only_rounding_and_names_the_same_form():
    assert lookup("m16n8k16.row.col.rn.f64.f64.f64.f64") is lookup("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64")


# --- integer arithmetic -----------------------------------------------------------------------

def _int_mma(form, a, b, c, arch="sm_90"):
    """D[0,0] (signed) of one dot product: a (k values), b (k values), c."""
    f = lookup(form)
    M, N, K = f.shape
    A = np.zeros((M, K), np.int64)
    B = np.zeros((K, N), np.int64)
    A[0, :len(a)] = a
    B[:len(b), 0] = b
    C = np.zeros((M, N), np.int64)
    C[0, 0] = c
    words = [int_to_bits(A, f.fmt("A")), int_to_bits(B, f.fmt("B")), int_to_bits(C, "s32")]
    d = fragsim.mma(f, *(fragsim.pack(f, op, w) for op, w in zip("ABC", words)), arch=arch)
    return int(int_from_bits(fragsim.unpack(f, "D", d), "s32")[0, 0])


@pytest.mark.parametrize("sat, want", [("", S32_MIN), ("satfinite.", S32_MAX)])
def test_overflow_past_max_int32_wraps_or_saturates(sat, want):
    assert _int_mma(f"m16n8k16.row.col.{sat}s32.s8.s8.s32", [1], [1], S32_MAX) == want


@pytest.mark.parametrize("sat, want", [("", S32_MAX), ("satfinite.", S32_MIN)])
def test_overflow_past_min_int32_wraps_or_saturates(sat, want):
    assert _int_mma(f"m16n8k32.row.col.{sat}s32.u4.s4.s32", [1], [-1], S32_MIN) == want


def test_satfinite_clamps_once_after_the_whole_sum():
    # c = MAX - 100; +16129 over k < 8 would pass MAX, -16129 over 8 <= k < 16 comes back: the
    # exact c + sum is MAX - 100, inside the range (H100: one clamp, also for the emulated s4 forms)
    a = [127] * 8 + [127] * 8
    b = [127] * 8 + [-127] * 8
    assert _int_mma("m16n8k32.row.col.satfinite.s32.s8.s8.s32", a, b, S32_MAX - 100) == S32_MAX - 100
    clamp_each_8 = ARCHS["sm_90"].with_(sat_block_8bit=8)
    assert _int_mma("m16n8k32.row.col.satfinite.s32.s8.s8.s32", a, b, S32_MAX - 100, clamp_each_8) \
        == S32_MAX - 8 * 127 * 127


def test_unsigned_and_signed_inputs_read_as_their_types():
    assert _int_mma("m16n8k16.row.col.s32.u8.s8.s32", [255, 128], [-128, 1], 0) == 255 * -128 + 128
    assert _int_mma("m16n8k64.row.col.s32.s4.u4.s32", [-8, 7], [15, 15], 5) == (-8 + 7) * 15 + 5
    assert _int_mma("m16n8k32.row.col.s32.u8.u8.s32", [255] * 32, [255] * 32, 0) == 32 * 255 * 255


def test_b1_adds_the_popcount_of_and_or_xor():
    a = [1, 1, 0, 0, 1]
    b = [1, 0, 1, 0, 1]
    assert _int_mma("m16n8k128.row.col.s32.b1.b1.s32.and.popc", a, b, 10) == 10 + 2
    assert _int_mma("m16n8k128.row.col.s32.b1.b1.s32.xor.popc", a, b, 10) == 10 + 2
    assert _int_mma("m16n8k256.row.col.s32.b1.b1.s32.xor.popc", [1] * 256, [0] * 256, S32_MAX) == S32_MIN + 255


def test_integer_forms_agree_with_exact_integer_matmul():
    rng = np.random.default_rng(0)
    for form in [n for n in EXACT if "f64" not in n]:
        f = lookup(form)
        fa, fb = f.fmt("A"), f.fmt("B")
        A = rng.integers(fa.min, fa.max + 1, (4,) + f.matrix_shape("A"))
        B = rng.integers(fb.min, fb.max + 1, (4,) + f.matrix_shape("B"))
        C = rng.integers(S32_MIN, S32_MAX + 1, (4,) + f.matrix_shape("C"))
        if fa.name == "b1":
            prod = A[..., :, :, None] ^ B[..., None, :, :] if "xor" in f.modifiers else A[..., :, :, None] & B[..., None, :, :]
            exact = C + prod.sum(axis=-2)
        else:
            exact = C + np.einsum("nmk,nkj->nmj", A, B)
        want = np.clip(exact, S32_MIN, S32_MAX) if "satfinite" in f.modifiers else (exact + 2**31) % 2**32 - 2**31
        regs = [fragsim.pack(f, op, int_to_bits(x, f.fmt(op))) for op, x in zip("ABC", (A, B, C))]
        got = int_from_bits(fragsim.unpack(f, "D", fragsim.mma(f, *regs)), "s32")
        assert np.array_equal(got, want), form


# --- f64 arithmetic ---------------------------------------------------------------------------

def _bits(x):
    return int(np.array([x], np.float64).view(np.uint64)[0])


def _f64_mma(form, a, b, c, arch="sm_90"):
    """D[0,0] word of one dot product; a, b, c as binary64 words."""
    f = lookup(form)
    M, N, K = f.shape
    A = np.zeros((M, K), np.uint64)
    B = np.zeros((K, N), np.uint64)
    A[0, :len(a)] = a
    B[:len(b), 0] = b
    C = np.zeros((M, N), np.uint64)
    C[0, 0] = c
    d = fragsim.mma(f, *(fragsim.pack(f, op, w) for op, w in zip("ABC", (A, B, C))), arch=arch)
    return int(fragsim.unpack(f, "D", d)[0, 0])


K16 = "m16n8k16.row.col.f64.f64.f64.f64"
ONE = _bits(1.0)


def test_f64_is_a_chain_of_fmas_c_first_then_ascending_k():
    t = _bits(2.0**-53)
    # 1 first: each 2^-53 is half an ulp of 1 and ties to even, so 1 stays (descending: the 15
    # small products sum exactly to 7.5 ulps first, and 1 + 7.5 ulps rounds to 1 + 2^-49)
    assert _f64_mma(K16, [ONE] + [t] * 15, [ONE] * 16, 0) == ONE
    assert _f64_mma(K16, [ONE] + [t] * 15, [ONE] * 16, 0, ARCHS["sm_90"].with_(f64_order="descending")) \
        == _bits(1 + 2.0**-49)
    # c = 1 enters first: the same
    assert _f64_mma("m16n8k4.row.col.f64.f64.f64.f64", [t] * 4, [ONE] * 4, ONE) == ONE


def test_f64_each_step_rounds_once():
    # (1 + 2^-30)(1 - 2^-30) - 1 = -2^-60 exactly; rounding the product first gives 0
    got = _f64_mma("m8n8k4.row.col.f64.f64.f64.f64", [_bits(1 + 2.0**-30)], [_bits(1 - 2.0**-30)], _bits(-1.0))
    assert got == _bits(-(2.0**-60))
    # 2^600 * 2^424 = 2^1024 does not overflow before c = -2^1023 is added
    assert _f64_mma("m8n8k4.row.col.f64.f64.f64.f64", [_bits(2.0**600)], [_bits(2.0**424)], _bits(-(2.0**1023))) \
        == _bits(2.0**1023)


def test_f64_subnormals_are_kept():
    assert _f64_mma(K16, [_bits(2.0**-1000)], [_bits(2.0**-50)], 0) == _bits(2.0**-1050)
    assert _f64_mma(K16, [1], [_bits(2.0**60)], 0) == _bits(2.0**-1014)     # the smallest subnormal * 2^60


def test_f64_nan_carries_b_then_acc_then_a_quieted_with_sign_and_payload():
    snan_a, snan_b, qnan_c = 0xFFF0000000000123, 0x7FF0000000000456, 0x7FF8000000000789
    assert _f64_mma(K16, [snan_a], [ONE], 0) == 0xFFF8000000000123          # a's NaN, quieted
    assert _f64_mma(K16, [snan_a], [snan_b], qnan_c) == 0x7FF8000000000456    # b over c over a
    assert _f64_mma(K16, [snan_a], [ONE], qnan_c) == qnan_c                   # c over a
    # a NaN b at a later k takes over the accumulator's NaN; a later a's NaN does not
    assert _f64_mma(K16, [snan_a, ONE], [ONE, snan_b], 0) == 0x7FF8000000000456
    assert _f64_mma(K16, [ONE, snan_a], [snan_b, ONE], 0) == 0x7FF8000000000456


def test_f64_invalid_operations_give_the_negative_default_nan():
    inf = 0x7FF0000000000000
    assert _f64_mma(K16, [inf], [0], 0) == 0xFFF8000000000000
    assert _f64_mma(K16, [inf, inf | (1 << 63)], [ONE, ONE], 0) == 0xFFF8000000000000


def test_f64_zero_signs_follow_ieee():
    neg0 = 1 << 63
    assert _f64_mma(K16, [neg0] * 16, [0] * 16, neg0) == neg0                 # -0 + -0 ... = -0
    assert _f64_mma(K16, [ONE, ONE | neg0], [ONE, ONE], neg0) == 0             # exact cancellation: +0


def _chain(a, b, c):
    """An independent f64 model for finite inputs: exact rationals, one rounding per step."""
    acc = c
    for x, y in zip(a, b):
        exact = Fraction(x) * Fraction(y) + Fraction(acc)
        r = float(exact)
        if r == 0:
            both_neg = exact == 0 and np.signbit(acc) and (np.signbit(x) != np.signbit(y))
            r = -0.0 if (exact < 0 or both_neg) else 0.0
        acc = r
    return acc


def test_f64_forms_agree_with_an_exact_rational_chain_on_random_finite_inputs():
    rng = np.random.default_rng(3)
    for form in [n for n in EXACT if "f64" in n]:
        f = lookup(form)
        A, B, C = (rng.standard_normal((2,) + f.matrix_shape(op)) * 2.0 ** rng.integers(-540, 500, (2,) + f.matrix_shape(op))
                   for op in "ABC")
        d = fragsim.unpack(f, "D", fragsim.mma(f, *(fragsim.pack(f, op, x.view(np.uint64)) for op, x in zip("ABC", (A, B, C)))))
        got = d.view(np.float64)
        for n in range(2):
            for m in range(f.shape[0]):
                for j in range(f.shape[1]):
                    want = _chain(A[n, m], B[n, :, j], C[n, m, j])
                    assert got[n, m, j] == want or (np.isnan(want) and np.isnan(got[n, m, j])), (form, n, m, j)


@pytest.mark.parametrize("change, message", [
    (dict(sat_block_8bit=12), "sat_block_8bit must be a multiple of 8"),
    (dict(f64_order="random"), "f64_order must be 'ascending' or 'descending'"),
    (dict(f64_nan_order="abd"), "f64_nan_order must be an order of 'a', 'b', 'c'"),
    (dict(f64_default_nan=0x7FF0000000000000), "f64_default_nan must be a binary64 NaN word"),
])
def test_arch_rows_refuse_impossible_exact_fields(change, message):
    with pytest.raises(ValueError, match=message):
        ARCHS["sm_90"].with_(**change)


# --- input generators (gpu_check) ---------------------------------------------------------------

def test_straddle_class_pushes_past_a_limit_and_back():
    f = lookup("m16n8k32.row.col.satfinite.s32.s8.s8.s32")
    A, B, C, _ = X.matrices(f, 200, np.random.default_rng(1), classes=("straddle",))
    a, b, c = (int_from_bits(x, f.fmt(op)) for x, op in ((A, "A"), (B, "B"), (C, "C")))
    prods = a[:, :, :, None] * b[:, None, :, :]                   # (n, M, K, N)
    run = c[:, :, None, :] + np.cumsum(prods, axis=2)
    crossed = ((run > S32_MAX) | (run < S32_MIN)).any(axis=2)
    final = c + prods.sum(axis=2)
    assert (crossed & (final <= S32_MAX) & (final >= S32_MIN)).mean() > 0.1


def test_f64_special_class_reaches_nans_with_payloads_infs_and_subnormals():
    f = lookup("m16n8k8.row.col.f64.f64.f64.f64")
    A, _, _, _ = X.matrices(f, 300, np.random.default_rng(2), classes=("special",))
    kinds = set(fragsim.facts.formats.classify(A, "f64").ravel())
    assert {"nan", "inf", "zero", "subnormal", "normal"} <= kinds
    nan = fragsim.facts.formats.is_nan(A, "f64")
    assert len(np.unique(A[nan])) > 10


@pytest.mark.parametrize("form", ["m16n8k64.row.col.s32.s4.s4.s32", "m16n8k256.row.col.s32.b1.b1.s32.and.popc",
                                  "m16n8k16.row.col.f64.f64.f64.f64"])
def test_probe_cases_repeat_one_dot_product_everywhere(form):
    for name, A, B, C in G.mma_probes(form):
        assert (A == A[0]).all() and (B == B[:, :1]).all() and (C == C[0, 0]).all(), name


def test_mma_command_reads_integer_values_and_prints_s32(tmp_path, capsys):
    from fragsim.cli import main
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, np.full((16, 32), -3, np.int64))
    np.save(b, np.full((32, 8), 2, np.int64))
    assert main(["mma", "m16n8k32.row.col.s32.s4.s4.s32", "--a", str(a), "--b", str(b), "--json"]) == 0
    assert np.array_equal(np.array(__import__("json").loads(capsys.readouterr().out)["d_values"]), np.full((16, 8), -192))
    np.save(a, np.full((16, 32), 8, np.int64))
    assert main(["mma", "m16n8k32.row.col.s32.s4.s4.s32", "--a", str(a), "--b", str(b)]) == 2
    assert "operand A of m16n8k32.row.col.s32.s4.s4.s32: s4 values must lie in -8..7, got 8..8" in capsys.readouterr().err
