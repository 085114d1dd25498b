"""fragsim.arith.explain for the forms beyond the fused dot product: fp8 (exact f16 conversion, two f16
HMMAs, the IEEE add of C), integers (exact sums, wraparound, .satfinite, b1 popc), f64 (the fma chain)
and f16 m8n8k4 (the binary32 tree).  Each trace comes from the form's plan and architecture row, shows
its steps, and ends in the kernel's D bit for bit (the float forms: tests/test_mma_cli.py)."""

import zlib
from fractions import Fraction

import numpy as np
import pytest

import fragsim
from explain_cases import matrices
from fragsim import FORMS, lookup
from fragsim.arith import plan
from fragsim.arith.explain import explain, render, to_json
from fragsim.facts.arch import ARCHS
from fragsim.facts.formats import from_float, int_to_bits

SM90 = ARCHS["sm_90"]
S32_MIN, S32_MAX = -(2**31), 2**31 - 1


def _family(f) -> str:
    a = f.types["A"]
    return ("fp8" if a in ("e4m3", "e5m2") else "f64" if a == "f64" else "m8n8k4" if f.groups > 1
            else "integer" if a in ("s8", "u8", "s4", "u4", "b1") else "float")


def _valid(form, arch) -> bool:
    try:
        plan(form, arch)
    except ValueError:           # fp8 and m8n8k4 .f16 have no sm_80 model
        return False
    return True


CASES = [(n, a) for n, f in FORMS.items() if _family(f) != "float" for a in ("sm_80", "sm_90") if _valid(n, a)]


def _kernel_d(f, A, B, C, arch):
    regs = [fragsim.pack(f, op, x) for op, x in zip("ABC", (A, B, C))]
    return fragsim.unpack(f, "D", fragsim.mma(f, *regs, arch=arch))


def _bits(f, word) -> str:
    return f"{int(word):#0{f.fmt('D').storage_bits // 4 + 2}x}"


@pytest.mark.parametrize("form, arch", CASES)
def test_explanation_ends_in_the_kernels_d(form, arch):
    """Uniform words, special-heavy words (NaN payloads, Inf, subnormals, signed zeros; integer extremes
    and a C near the s32 limits, so sums wrap or saturate) and mixes: two rows of D, every column."""
    f = lookup(form)
    rng = np.random.default_rng(zlib.crc32(f"{form} {arch}".encode()))
    for kinds in (("bits",) * 3, ("special",) * 3, ("mixed",) * 3, ("special", "bits", "special")):
        A, B, C = matrices(f, kinds, rng)
        D = _kernel_d(f, A, B, C, arch)
        for m in rng.choice(D.shape[0], 2, replace=False):
            for n in range(D.shape[1]):
                t = explain(f, A, B, C, int(m), n, arch)
                assert t["d"]["bits"] == _bits(f, D[m, n]), (kinds, m, n)
        assert render(t).splitlines()[-1].startswith(f"D[{m},{n}] = {t['d']['bits']} (")


def test_every_family_has_cases():
    """The agreement test above reaches every kind of plan, on both rows where they exist."""
    assert {(_family(lookup(n)), a) for n, a in CASES} == {
        ("fp8", "sm_90"), ("m8n8k4", "sm_90"), ("integer", "sm_80"), ("integer", "sm_90"), ("f64", "sm_80"),
        ("f64", "sm_90")}


def _one_dot(form, a, b, c, ints=False):
    """Bit matrices whose D[0, 0] is sum_k a[k] b[k] + c (zeros elsewhere)."""
    f = lookup(form)
    mats = [np.zeros(f.matrix_shape(op)) for op in "ABC"]
    mats[0][0, :len(a)] = a
    mats[1][:len(b), 0] = b
    mats[2][0, 0] = c
    if ints:
        return tuple(int_to_bits(x.astype(np.int64), f.fmt(op)) for op, x in zip("ABC", mats))
    return tuple(from_float(x, f.fmt(op)) for op, x in zip("ABC", mats))


def _checked(form, mats, arch=SM90, row=0, col=0):
    """The trace of D[row, col], after checking its D against the kernel's."""
    f = lookup(form)
    t = explain(form, *mats, row, col, arch)
    assert t["d"]["bits"] == _bits(f, _kernel_d(f, *mats, arch)[row, col])
    return t


# -- fp8 -------------------------------------------------------------------------------------------

F8 = "m16n8k32.row.col.f32.e4m3.e4m3.f32"


def test_fp8_trace_is_two_hmmas_over_k_mod_4_from_plus_zero():
    """fp8_split 'pairs': k % 4 in {0, 1} first, then {2, 3}; the first HMMA starts from c = +0.  Its
    256*256 - 256*256 cancels, so k=2's 2^-17 is the second HMMA's whole sum (one block of all k would
    truncate it against 2^16)."""
    t = _checked(F8, _one_dot(F8, [256.0, -256.0, 2.0**-8], [256.0, 256.0, 2.0**-9], 0.0))
    assert t["model"] == "fp8"
    assert [blk["k"] for blk in t["blocks"]] == [[k for k in range(32) if k % 4 < 2], [k for k in range(32) if k % 4 > 1]]
    assert [blk["hmma"] for blk in t["blocks"]] == [1, 2]
    assert t["blocks"][0]["c"]["bits"] == "0x00000000" and t["blocks"][0]["sum"] == 0
    assert t["blocks"][1]["sum"] == Fraction(1, 2**17)
    assert t["d"]["bits"] == "0x37000000"


def test_fp8_conversion_to_f16_is_exact():
    """Every byte's f16 holds its value, e4m3 and e5m2 alike (e4m3 subnormals are f16 normals; NaN
    stays NaN, e5m2's Inf stays Inf)."""
    form = "m16n8k32.row.col.f32.e4m3.e5m2.f32"
    A = np.arange(32, dtype=np.uint8)[None, :] + np.arange(16, dtype=np.uint8)[:, None] * 16   # rows 2i: all bytes
    B = np.tile(np.arange(256, dtype=np.uint8)[224:256, None], (1, 8)) - np.arange(8, dtype=np.uint8) * 32
    C = np.zeros((16, 8), np.uint32)
    seen = set()
    for row in range(0, 16, 2):
        t = _checked(form, (A, B, C), row=row, col=row // 2)
        for conv in t["conversions"]:
            for op in "ab":
                x, h = conv[op], conv[op + "_f16"]
                assert (x["value"] == h["value"]) if x["class"] != "nan" else h["class"] == "nan", conv
                seen.add((op, x["bits"]))
    assert len(seen) == 2 * 256


def test_fp8_trace_adds_c_last_rounding_to_nearest_even():
    """c = 2^24, products 1 + 1 + 1: the HMMAs give 3 exactly; the IEEE add rounds 2^24 + 3 to
    2^24 + 4 (fp8_c 'add').  With fp8_c 'mma' C enters the first block instead and nothing is added."""
    a = [1.0, 1.0, 0.0, 0.0, 1.0]
    t = _checked(F8, _one_dot(F8, a, a, 2.0**24))
    assert t["c_add"]["sum"] == 2**24 + 3 and t["c_add"]["result"] == 0x4B800002
    assert "C + HMMA 2's result, one IEEE addition rounded to nearest even in f32:" in render(t)
    t = _checked(F8, _one_dot(F8, a, a, 2.0**24), arch=SM90.with_(fp8_c="mma"))
    assert "c_add" not in t and t["blocks"][0]["c"]["bits"] == "0x4b800000" and t["d"]["bits"] == "0x4b800001"


def test_fp8_f16_accumulator_overflows_in_the_first_hmma():
    """448 * 448 = 200704 is past f16's 65504: the first HMMA rounds to +Inf, and so stays D."""
    form = "m16n8k16.row.col.f16.e4m3.e4m3.f16"
    t = _checked(form, _one_dot(form, [448.0], [448.0], 0.0))
    assert t["blocks"][0]["result"] == 0x7C00 and t["d"]["bits"] == "0x7c00"


def test_fp8_nan_input_takes_the_special_value_rule():
    """e4m3 0x7F is NaN: its HMMA is NaN by the special-value rule, and so is D (canonical)."""
    A, B, C = _one_dot(F8, [1.0], [1.0], 0.0)
    A[0, 2] = 0x7F
    t = _checked(F8, (A, B, C))
    assert t["blocks"][1]["special"]["why"] == "k=2: a NaN input" and t["d"]["bits"] == "0x7fffffff"


# -- integers --------------------------------------------------------------------------------------

@pytest.mark.parametrize("sat, exact, want", [("", 2**31, -(2**31)), ("satfinite.", 2**31, S32_MAX)])
def test_int_trace_wraps_or_saturates_past_max_int32(sat, exact, want):
    """MAX_INT32 + 1: wraps modulo 2^32 to MIN_INT32, or under .satfinite clamps to MAX_INT32."""
    form = f"m16n8k16.row.col.{sat}s32.s8.s8.s32"
    t = _checked(form, _one_dot(form, [1], [1], S32_MAX, ints=True))
    assert t["steps"][-1]["exact"] == exact and t["d"]["value"] == want
    text = render(t)
    assert ("wraps modulo 2^32 to -2147483648" in text) == (sat == "")
    assert ("clamped to 2147483647" in text) == (sat != "")


def test_satfinite_trace_clamps_after_every_sat_block_of_the_row():
    """sat_block_8bit = 8: the running sum clamps after k = 0..7 (past MAX) and then comes down;
    sm_90's row clamps once, on the whole sum, which is back inside the range."""
    form = "m16n8k32.row.col.satfinite.s32.s8.s8.s32"
    mats = _one_dot(form, [127] * 16, [127] * 8 + [-127] * 8, S32_MAX - 100, ints=True)
    once = _checked(form, mats)
    assert [s["k"] for s in once["steps"]] == [[0, 31]] and once["d"]["value"] == S32_MAX - 100
    each = _checked(form, mats, arch=SM90.with_(sat_block_8bit=8))
    assert [s["k"] for s in each["steps"]] == [[0, 7], [8, 15], [16, 23], [24, 31]]
    assert each["steps"][0]["result"] == S32_MAX and each["d"]["value"] == S32_MAX - 8 * 127 * 127


def test_int_trace_lists_exact_products_of_the_element_types():
    """u8 x s8: 255 * -128 + 128 * 1, exact, each product shown."""
    form = "m16n8k16.row.col.s32.u8.s8.s32"
    t = _checked(form, _one_dot(form, [255, 128], [-128, 1], 0, ints=True))
    assert [(x["a"], x["b"], x["product"]) for x in t["terms"][:2]] == [(255, -128, -32640), (128, 1, 128)]
    assert t["d"]["value"] == -32512


@pytest.mark.parametrize("op, combined, popc", [("and", 0b10001, 2), ("xor", 0b00110, 2)])
def test_b1_trace_counts_the_bits_of_whole_words(op, combined, popc):
    """b1: a word of 32 k per step (bit i: k = i), popc(a AND/XOR b) added to c."""
    form = f"m16n8k128.row.col.s32.b1.b1.s32.{op}.popc"
    t = _checked(form, _one_dot(form, [1, 1, 0, 0, 1], [1, 0, 1, 0, 1], 10, ints=True))
    w = t["words"][0]
    assert (w["k"], w["a"], w["b"], w[op], w["popc"]) == ([0, 31], 0b10011, 0b10101, combined, popc)
    assert [x["popc"] for x in t["words"][1:]] == [0, 0, 0] and t["d"]["value"] == 10 + popc


# -- f64 -------------------------------------------------------------------------------------------

K16 = "m16n8k16.row.col.f64.f64.f64.f64"


def test_f64_trace_is_the_fma_chain_c_first_then_ascending_k():
    """1 then fifteen 2^-53: each step a*b + acc = 1 + 2^-53 is a tie that rounds to even (1);
    descending, the small products first sum exactly to 7.5 ulps."""
    mats = _one_dot(K16, [1.0] + [2.0**-53] * 15, [1.0] * 16, 0.0)
    t = _checked(K16, mats)
    assert [s["k"] for s in t["steps"]] == list(range(16))
    assert t["steps"][1]["exact"] == 1 + Fraction(1, 2**53) and t["steps"][1]["result"]["value"] == 1
    d = _checked(K16, mats, arch=SM90.with_(f64_order="descending"))
    assert [s["k"] for s in d["steps"]] == list(range(15, -1, -1)) and d["d"]["value"] == 1 + Fraction(1, 2**49)


def test_f64_trace_rounds_once_per_step_unless_the_row_rounds_the_product():
    """(1 + 2^-30)(1 - 2^-30) - 1 = -2^-60 exactly (fused); f64_fused=False rounds the product to 1 first."""
    form = "m8n8k4.row.col.f64.f64.f64.f64"
    mats = _one_dot(form, [1 + 2.0**-30], [1 - 2.0**-30], -1.0)
    assert _checked(form, mats)["d"]["value"] == -Fraction(1, 2**60)
    t = _checked(form, mats, arch=SM90.with_(f64_fused=False))
    assert t["steps"][0]["product"]["value"] == 1 and t["d"]["class"] == "zero"


def test_f64_nan_step_carries_the_first_nan_of_b_acc_a_quieted():
    """b's signalling NaN over a's, quieted with sign and payload; Inf * 0 gives the default NaN."""
    A, B, C = _one_dot(K16, [0.0], [0.0], 0.0)
    A[0, 0], B[0, 0] = 0xFFF0000000000123, 0x7FF0000000000456
    t = _checked(K16, (A, B, C))
    assert t["steps"][0]["nan"] == "b's NaN, quieted" and t["d"]["bits"] == "0x7ff8000000000456"
    A[0, 0], B[0, 0] = 0x7FF0000000000000, 0
    t = _checked(K16, (A, B, C))
    assert t["steps"][0]["nan"] == "the default NaN (no NaN operand)" and t["d"]["bits"] == "0xfff8000000000000"


def test_f64_trace_keeps_subnormals_and_zero_signs():
    """2^-1000 * 2^-50 is a subnormal, kept; -0 * 0 + -0 is -0; under f64_subnormals 'ftz' the
    subnormal input reads as zero."""
    t = _checked(K16, _one_dot(K16, [2.0**-1000], [2.0**-50], 0.0))
    assert t["steps"][0]["result"]["class"] == "subnormal" and t["d"]["value"] == Fraction(1, 2**1050)
    t = _checked(K16, _one_dot(K16, [-0.0] * 16, [0.0] * 16, -0.0))
    assert t["d"]["bits"] == "0x8000000000000000"
    mats = _one_dot(K16, [2.0**-1050], [2.0**60], 0.0)
    t = _checked(K16, mats, arch=SM90.with_(f64_subnormals="ftz"))
    assert t["steps"][0]["a"]["flushed_from"] == "0x0000000001000000" and t["d"]["value"] == 0


# -- f16 m8n8k4 ------------------------------------------------------------------------------------

def test_m884_f16_trace_runs_the_rows_tree_operation_by_operation():
    """sm_90's tree for f16 D, (c + fma(a1, b1, a0*b0)) + fma(a3, b3, a2*b2): with 2^-24, 2^-24,
    -2^-24, -2^-24 and c = 1 the binary32 steps keep 1 + 2^-23 and come back to 1."""
    form = "m8n8k4.row.col.f16.f16.f16.f16"
    e = 2.0**-24
    t = _checked(form, _one_dot(form, [e, e, -e, -e], [1.0] * 4, 1.0))
    assert t["params"]["tree"] == "(c + fma(a1, b1, a0*b0)) + fma(a3, b3, a2*b2)"
    assert [s["expr"] for s in t["steps"]] == ["a0*b0", "fma(a1, b1, s1)", "c + s2", "a2*b2", "fma(a3, b3, s4)",
                                               "s3 + s5"]
    assert [s["result"]["value"] for s in t["steps"]] == [Fraction(1, 2**24), Fraction(1, 2**23), 1 + Fraction(1, 2**23),
                                                          -Fraction(1, 2**24), -Fraction(1, 2**23), 1]
    assert t["d"]["bits"] == "0x3c00"


def test_m884_f32_trace_rounds_each_fma_to_nearest_even():
    """f32 D, fma chain in ascending k then c: 1 + 2^-24 is a tie that rounds to even (1)."""
    form = "m8n8k4.row.col.f32.f16.f16.f32"
    e = 2.0**-24
    t = _checked(form, _one_dot(form, [1.0, e, e, 0.0], [1.0] * 4, 0.0))
    assert t["steps"][1]["exact"] == 1 + Fraction(1, 2**24) and t["steps"][1]["result"]["value"] == 1
    assert "(rounded)" in render(t).splitlines()[-5]


def test_m884_row_of_a_later_quad_pair_reads_its_own_b_rows():
    """Row 9 of the stacked D is quad pair 1's: B rows 4..7."""
    form = "m8n8k4.row.col.f32.f16.f16.f16"
    f = lookup(form)
    A = from_float(np.ones(f.matrix_shape("A")), "f16")
    B = from_float(np.arange(16.0)[:, None] * np.ones((1, 8)), "f16")
    t = _checked(form, (A, B, np.zeros(f.matrix_shape("C"), np.uint16)), row=9, col=3)
    assert t["params"]["group"] == 1 and t["params"]["b_rows"] == [4, 7]
    assert [b["value"] for b in t["inputs"]["b"]] == [4, 5, 6, 7] and t["d"]["value"] == 22


def test_m884_nan_d_is_the_canonical_nan():
    """Inf - Inf in a binary32 step: D is f16's canonical NaN 0x7FFF."""
    form = "m8n8k4.row.col.f16.f16.f16.f16"
    t = _checked(form, _one_dot(form, [np.inf, -np.inf], [1.0, 1.0], 0.0))
    assert t["steps"][1]["result"]["class"] == "nan" and t["d"]["bits"] == "0x7fff"


def test_every_trace_is_json_ready():
    """to_json leaves no Fraction or numpy scalar behind (exact values become strings)."""
    import json
    for form in (F8, "m16n8k32.row.col.satfinite.s32.s8.s8.s32", K16, "m8n8k4.row.col.f16.f16.f16.f16"):
        f = lookup(form)
        A, B, C = matrices(f, ("mixed",) * 3, np.random.default_rng(1))
        data = json.loads(json.dumps(to_json(explain(f, A, B, C, 1, 2))))
        assert data["model"] in ("fp8", "integer", "f64", "binary32 tree") and data["element"] == [1, 2]
