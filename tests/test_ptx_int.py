"""Integer, bit and predicate PTX instructions (fragsim.ptx.semantics.integer): the PTX ISA's
definitions and examples, one property or documented case each; what the H100 does where the ISA
leaves it open; the carry flag's hidden operand; the opcodes shared with floating point; the
spellings ptxas takes (when ptxas is on PATH); and the H100 recording replayed bit for bit."""

import importlib
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fragsim.cli import main
from fragsim.gpu_check.ptx import integer as ptx_int
from fragsim.ptx.isa import table
from fragsim.ptx.semantics import Semantic, Spec, UnsupportedInstruction, integer
from fragsim.ptx.types import TYPES, ptx_type

DATA = Path(__file__).parent / "data" / "ptx" / "int"
M32, M64 = (1 << 32) - 1, (1 << 64) - 1
rng = np.random.default_rng(7)


def sem(text: str, ndst: int = 1, nsrc: int = 2) -> Semantic:
    op, *mods = text.split(".")
    return table.resolve(Spec(op, tuple(mods), ndst, nsrc))


def run(text: str, *args, ndst: int = 1):
    """The instruction on the given operand values (Python ints or bools, or arrays); one array per
    destination (a single destination: that array)."""
    s = sem(text, ndst, len(args))
    scalar = all(np.ndim(a) == 0 for a in args)
    ops = [np.atleast_1d(np.asarray(a, dtype=ptx_type(t).dtype)) for a, t in zip(args, s.src)]
    if len(s.src) > len(args):      # the carry in, false unless given
        ops.append(np.zeros(ops[0].shape, bool))
    out = [o[0] if scalar else o for o in s.fn(*ops)]
    return out[0] if len(out) == 1 else out


def rand(bits: int, n: int = 2000) -> np.ndarray:
    return rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64) \
        if bits == 64 else rng.integers(0, 1 << bits, n, dtype=np.uint64).astype(f"uint{bits}")


def s(x: int, bits: int) -> int:
    """Two's complement bits -> signed value."""
    return x - (1 << bits) if x >> (bits - 1) else x


# --- add, sub, the carry flag ----------------------------------------------------------------

def test_add_wraps_modulo_2_to_the_n():
    assert run("add.u32", M32, 2) == 1 and run("add.s16", 0x7FFF, 1) == 0x8000


def test_add_sat_s32_limits_the_result_to_minint_maxint():
    assert list(run("add.sat.s32", [0x7FFFFFFF, 0x80000000, 5], [1, 0xFFFFFFFF, 0xFFFFFFFE])) == \
        [0x7FFFFFFF, 0x80000000, 3]
    assert run("sub.sat.s32", 0x80000000, 1) == 0x80000000


def test_add_u16x2_adds_the_halves_without_a_carry_between_them():
    assert run("add.u16x2", 0x0001FFFF, 0x00010001) == 0x00020000


def test_add_cc_addc_chain_is_extended_precision_addition():
    """PTX ISA addc example: add.cc then addc.cc ... add multi-word values."""
    a, b = rand(64), rand(64)
    lo, cf = sem("add.cc.u32").fn(a.astype(np.uint32), b.astype(np.uint32))
    hi, cf2 = sem("addc.cc.u32").fn((a >> np.uint64(32)).astype(np.uint32), (b >> np.uint64(32)).astype(np.uint32), cf)
    total = (hi.astype(np.uint64) << np.uint64(32)) | lo
    assert all(int(t) == (int(x) + int(y)) & M64 for t, x, y in zip(total, a, b))
    assert all(bool(c) == (int(x) + int(y) > M64) for c, x, y in zip(cf2, a, b))


def test_sub_cc_subc_chain_is_extended_precision_subtraction():
    a, b = rand(64), rand(64)
    lo, cf = sem("sub.cc.u32").fn(a.astype(np.uint32), b.astype(np.uint32))
    hi, cf2 = sem("subc.cc.u32").fn((a >> np.uint64(32)).astype(np.uint32), (b >> np.uint64(32)).astype(np.uint32), cf)
    total = (hi.astype(np.uint64) << np.uint64(32)) | lo
    assert all(int(t) == (int(x) - int(y)) & M64 for t, x, y in zip(total, a, b))
    assert all(bool(c) == (int(x) >= int(y)) for c, x, y in zip(cf2, a, b)), "the flag holds NOT borrow"


def test_the_carry_flag_is_the_adders_carry_so_subc_after_add_cc_subtracts_not_carry():
    """H100 (ptxas: IADD3 P / IMAD.X ~b): one carry bit; subc computes a - b - !CF."""
    d, cf = sem("add.cc.u32").fn(np.array([M32], np.uint32), np.array([1], np.uint32))   # carry out
    assert bool(cf[0])
    assert run("subc.u32", 10, 3) == 10 - 3 - 1                      # CF false: borrow 1
    assert sem("subc.u32").fn(np.array([10], np.uint32), np.array([3], np.uint32), cf)[0][0] == 7
    assert sem("addc.u32").fn(np.array([10], np.uint32), np.array([3], np.uint32),
                              sem("sub.cc.u32").fn(np.array([5], np.uint32), np.array([5], np.uint32))[1])[0][0] == 14


@pytest.mark.parametrize("text, ndst, nsrc, reads, writes", [
    ("add.cc.u32", 1, 2, False, True), ("addc.u64", 1, 2, True, False), ("subc.cc.s32", 1, 2, True, True),
    ("mad.lo.cc.u32", 1, 3, False, True), ("madc.hi.cc.s64", 1, 3, True, True), ("add.u32", 1, 2, False, False),
])
def test_the_carry_is_a_hidden_trailing_pred_operand(text, ndst, nsrc, reads, writes):
    op, *mods = text.split(".")
    spec = Spec(op, tuple(mods), ndst, nsrc)
    s_ = table.resolve(spec)
    assert integer.carry_operands(spec, s_) == (reads, writes)
    assert (s_.src[-1] == "pred") == reads and (s_.dst[-1] == "pred") == writes and integer.CARRY == "%cc"


# --- multiplication ---------------------------------------------------------------------------

@pytest.mark.parametrize("t", ["u64", "s64", "u32", "s32", "u16", "s16"])
def test_mul_hi_is_the_high_half_of_the_double_width_product(t):
    n = int(t[1:])
    a, b = rand(n), rand(n)
    val = (lambda x: s(int(x), n)) if t[0] == "s" else int
    got = run(f"mul.hi.{t}", a, b)
    assert all(int(g) == ((val(x) * val(y)) >> n) & ((1 << n) - 1) for g, x, y in zip(got, a, b))


def test_mul_wide_s32_is_the_exact_64_bit_product():
    a, b = rand(32), rand(32)
    got = run("mul.wide.s32", a, b)
    assert got.dtype == np.uint64
    assert all(int(g) == (s(int(x), 32) * s(int(y), 32)) & M64 for g, x, y in zip(got, a, b))


def test_mad_hi_sat_s32_saturates_the_sum_of_the_high_half_and_c():
    assert run("mad.hi.sat.s32", 0x40000000, 4, 0x7FFFFFFF) == 0x7FFFFFFF        # hi = 1
    assert run("mad.hi.s32", 0x40000000, 4, 0x7FFFFFFF) == 0x80000000


def test_mad_wide_u16_adds_a_32_bit_c():
    assert run("mad.wide.u16", 0xFFFF, 0xFFFF, 1) == 0xFFFE0002


def test_mul24_uses_the_low_24_bits_and_hi_returns_bits_47_to_16():
    assert run("mul24.lo.u32", 0xFF000002, 3) == 6
    assert run("mul24.lo.s32", 0x00FFFFFF, 2) == M32 - 1                  # bit 23 is the sign
    assert run("mul24.hi.u32", 0xFFFFFF, 0xFFFFFF) == ((0xFFFFFF * 0xFFFFFF) >> 16) & M32


def test_sad_adds_the_absolute_difference_to_c():
    assert run("sad.s32", 0xFFFFFFFF, 2, 10) == 13 and run("sad.u32", 0xFFFFFFFF, 2, 10) == (0xFFFFFFFD + 10) & M32


# --- division ----------------------------------------------------------------------------------

@pytest.mark.parametrize("t", ["s16", "s32", "s64"])
def test_signed_div_truncates_and_rem_takes_the_dividends_sign(t):
    n = int(t[1:])
    a, b = rand(n), rand(n)
    b[b == 0] = 1
    q, r = run(f"div.{t}", a, b), run(f"rem.{t}", a, b)
    for qq, rr, x, y in zip(q, r, a, b):
        x, y = s(int(x), n), s(int(y), n)
        tq = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        assert int(qq) == tq & ((1 << n) - 1) and int(rr) == (x - tq * y) & ((1 << n) - 1)


@pytest.mark.parametrize("t", [f"{k}{n}" for k in "us" for n in (16, 32, 64)])
def test_division_and_remainder_by_zero_give_all_ones_on_the_h100(t):
    ones = (1 << int(t[1:])) - 1
    assert run(f"div.{t}", [0, 5, ones], [0, 0, 0]).tolist() == [ones] * 3
    assert run(f"rem.{t}", [0, 5, ones], [0, 0, 0]).tolist() == [ones] * 3


@pytest.mark.parametrize("n", [16, 32, 64])
def test_int_min_divided_by_minus_one_is_int_min_with_remainder_zero(n):
    int_min, minus1 = 1 << (n - 1), (1 << n) - 1
    assert run(f"div.s{n}", int_min, minus1) == int_min and run(f"rem.s{n}", int_min, minus1) == 0


def test_abs_and_neg_of_int_min_are_int_min():
    assert run("abs.s32", 0x80000000) == 0x80000000 and run("neg.s64", 1 << 63) == 1 << 63
    assert run("abs.s16", 0xFFFF) == 1 and run("neg.s16", 1) == 0xFFFF


# --- min, max ----------------------------------------------------------------------------------

def test_min_max_compare_as_the_type_says():
    assert run("min.s32", 0xFFFFFFFF, 1) == 0xFFFFFFFF and run("min.u32", 0xFFFFFFFF, 1) == 1
    assert run("max.s64", 1 << 63, 0) == 0


def test_relu_clamps_a_negative_result_to_zero():
    assert run("min.relu.s32", 0xFFFFFFF0, 5) == 0 and run("max.relu.s32", 0xFFFFFFF0, 0xFFFFFFF1) == 0
    assert run("max.relu.s32", 3, 0xFFFFFFF1) == 3


def test_packed_min_max_work_per_half():
    assert run("min.s16x2", 0x7FFF8000, 0x80007FFF) == 0x80008000
    assert run("min.u16x2", 0x7FFF8000, 0x80007FFF) == 0x7FFF7FFF
    assert run("max.relu.s16x2", 0x8000FFFF, 0x0001FFFE) == 0x00010000


# --- bit counting and fields -------------------------------------------------------------------

@pytest.mark.parametrize("n", [32, 64])
def test_popc_clz_brev_against_their_definitions(n):
    a = np.concatenate([rand(n), np.array([0, 1, (1 << n) - 1, 1 << (n - 1)], f"uint{n}")])
    assert run(f"popc.b{n}", a).tolist() == [bin(int(x)).count("1") for x in a]
    assert run(f"clz.b{n}", a).tolist() == [n - int(x).bit_length() for x in a]
    assert run(f"brev.b{n}", a).tolist() == [int(f"{int(x):0{n}b}"[::-1], 2) for x in a]


def test_bfind_finds_the_most_significant_non_sign_bit():
    assert run("bfind.u32", [0, 1, 0x80000000]).tolist() == [M32, 0, 31]
    assert run("bfind.s32", [0xFFFFFFFF, 0x80000000, 0xFFFFFFFE, 5]).tolist() == [M32, 30, 0, 2]
    assert run("bfind.shiftamt.u64", [1, 1 << 63, 0]).tolist() == [63, 0, M32]


def test_fns_isa_examples():
    """fns.b32 d, 0xaaaaaaaa, 3, 1 -> 3; (3, -1) -> 3; (2, 1) -> 3; (2, -1) -> 1."""
    assert run("fns.b32", [0xAAAAAAAA] * 4, [3, 3, 2, 2], [1, M32, 1, M32]).tolist() == [3, 3, 3, 1]
    assert run("fns.b32", [0xAAAAAAAA, 0xAAAAAAAA, 1], [2, 1, 0], [0, 3, 2]).tolist() == [M32, 5, M32]


def test_bfe_zero_length_is_zero_and_a_start_past_the_msb_replicates_the_sign():
    assert run("bfe.s32", 0xFFFFFFFF, 4, 0) == 0
    assert run("bfe.s32", 0x80000000, 40, 5) == M32 and run("bfe.u32", 0x80000000, 40, 5) == 0
    assert run("bfe.s32", 0x000000F0, 4, 4) == M32 and run("bfe.u32", 0x000000F0, 4, 4) == 0xF


def test_32_bit_bfe_and_bfi_read_only_the_low_8_bits_of_position_and_length():
    assert run("bfe.u32", 0xABCD << 8, 0x108, 0x110) == 0xABCD
    assert run("bfi.b32", 0xF, 0, 0x104, 0x204) == 0xF0


def test_64_bit_bfe_and_bfi_use_the_whole_position_and_length_on_the_h100():
    """The ISA masks them to 8 bits; ptxas's 64-bit shift sequence does not (measured)."""
    assert run("bfe.u64", 0xABCD << 8, 0x108, 0x10) == 0 and run("bfe.u64", 0xABCD << 8, 8, 0x110) == 0xABCD
    assert run("bfe.s64", 1 << 63, 0x100, 1) == M64, "a start past the msb: the sign, replicated"
    assert run("bfi.b64", M64, 0x1234, 0x104, 4) == 0x1234


def test_fns_with_a_base_above_31_finds_nothing_as_its_pseudocode_and_the_h100():
    assert run("fns.b32", [M32] * 3, [32, 40, 0xFFFFFFFF], [1, M32, 0]).tolist() == [M32] * 3


def test_bfi_zero_length_or_a_start_past_the_msb_gives_b():
    assert run("bfi.b32", M32, 0x1234, 4, 0) == 0x1234 and run("bfi.b64", M64, 0x1234, 64, 8) == 0x1234
    assert run("bfi.b32", 0xFF, 0, 28, 8) == 0xF0000000


@pytest.mark.parametrize("mode", sorted(integer.PRMT_MODES))
def test_prmt_modes_pick_bytes_by_the_two_low_bits_of_c(mode):
    a, b = 0x33221100, 0x77665544
    for sel in range(4):
        want = sum(0x11 * k << 8 * i for i, k in enumerate(integer.PRMT_MODES[mode][sel]))
        assert run(f"prmt.b32.{mode}", a, b, sel | 0xFFFC) == want


def test_prmt_default_mode_copies_or_replicates_the_sign_of_each_selected_byte():
    assert run("prmt.b32", 0x80FF7F00, 0x01020304, 0x4321) == 0x0480FF7F
    assert run("prmt.b32", 0x80FF7F00, 0x01020304, 0xBA98) == 0xFFFF0000


@pytest.mark.parametrize("lut, f", [(0x80, lambda a, b, c: a & b & c), (0xFE, lambda a, b, c: a | b | c),
                                    (0x40, lambda a, b, c: a & b & ~c), (0x1A, lambda a, b, c: (a & b | c) ^ a)])
def test_lop3_immlut_isa_examples(lut, f):
    a, b, c = rand(32), rand(32), rand(32)
    assert (run("lop3.b32", a, b, c, np.full(a.shape, lut)) == f(a, b, c)).all()


def test_lop3_boolop_combines_d_nonzero_with_q():
    d, p = run("lop3.or.b32", [0, 0, 1], [0, 0, 0], [0, 0, 0], [0xF0] * 3, [False, True, False], ndst=2)
    assert d.tolist() == [0, 0, 1] and p.tolist() == [False, True, True]
    _, p = run("lop3.and.b32", [1, 1], [0, 0], [0, 0], [0xF0] * 2, [False, True], ndst=2)
    assert p.tolist() == [False, True]


def test_szext_and_bmsk_isa_examples():
    assert run("szext.wrap.u32", M32, 0) == 0 and run("bmsk.wrap.b32", 1, 2) == 6
    assert run("szext.clamp.s32", 0x80, 8) == 0xFFFFFF80 and run("szext.clamp.s32", 0x80, 40) == 0x80
    assert run("bmsk.clamp.b32", 4, 40) == 0xFFFFFFF0 and run("bmsk.wrap.b32", 4, 40) == 0xFF0


# --- logic and shifts --------------------------------------------------------------------------

def test_logic_on_predicates_and_cnot():
    assert run("xor.pred", [True, True], [True, False]).tolist() == [False, True]
    assert run("not.pred", [True]).tolist() == [False]
    assert run("cnot.b16", [0, 7]).tolist() == [1, 0] and run("not.b64", 0) == M64


def test_shift_counts_at_or_above_the_width_clamp_to_the_width():
    assert run("shl.b32", 1, 32) == 0 and run("shl.b16", 1, 0x10000) == 0
    assert run("shr.s32", 0x80000000, 0xFFFFFFFF) == M32 and run("shr.u64", M64, 64) == 0
    assert run("shr.b32", 0x80000000, 31) == 1 and run("shr.s16", 0x8000, 15) == 0xFFFF


def test_shf_clamps_or_wraps_the_count():
    assert run("shf.l.clamp.b32", 0x12345678, 0x9ABCDEF0, 40) == 0x12345678
    assert run("shf.l.wrap.b32", 0x12345678, 0x9ABCDEF0, 40) == 0xBCDEF012
    assert run("shf.r.clamp.b32", 0x12345678, 0x9ABCDEF0, 32) == 0x9ABCDEF0
    assert run("shf.r.wrap.b32", 0x12345678, 0x9ABCDEF0, 36) == 0x01234567


# --- comparison and selection ------------------------------------------------------------------

def test_setp_writes_the_combined_result_and_its_complement():
    """setp.lt.and.s32 p|q, a, b, c: p = (a < b) & c, q = !(a < b) & c."""
    p, q = run("setp.lt.and.s32", [1, 1, 5], [2, 2, 2], [True, False, True], ndst=2)
    assert p.tolist() == [True, False, False] and q.tolist() == [False, False, True]


def test_setp_unsigned_orders_and_signed_orders_differ():
    assert bool(run("setp.lt.s32", M32, 0)) and bool(run("setp.hi.u32", M32, 0))
    assert not bool(run("setp.lo.u32", M32, 0)) and not bool(run("setp.lt.u32", M32, 0))


def test_set_writes_all_ones_or_one_point_zero():
    assert run("set.lt.u32.s32", [1, 3], [2, 2]).tolist() == [M32, 0]
    assert run("set.lt.f32.s32", [1, 3], [2, 2]).tolist() == [0x3F800000, 0]


def test_set_with_a_half_precision_destination_writes_one_point_zero_in_that_format():
    """set.CmpOp.f16.stype / set.CmpOp.bf16.stype with integer sources (ptxas accepts them on sm_90)."""
    assert run("set.eq.f16.u32", [3, 3], [3, 4]).tolist() == [0x3C00, 0]
    assert run("set.lt.bf16.s32", [M32, 1], [1, 1]).tolist() == [0x3F80, 0]


def test_the_integer_dispatcher_hands_f32x2_to_the_float_family_which_refuses_it_as_sm_100():
    with pytest.raises(UnsupportedInstruction, match="add.rn.f32x2: an sm_100 form"):
        sem("add.rn.f32x2")


def test_slct_f32_selector_compares_with_zero_as_a_float():
    c = [0x80000000, 0x7FC00000, 0xFFC00000, 0x80000001, 0x3F800000, 0xFF800000]
    assert run("slct.u32.f32", [1] * 6, [2] * 6, c).tolist() == [1, 2, 2, 2, 1, 2]
    assert run("slct.ftz.u32.f32", [1], [2], [0x80000001]).tolist() == [1]


def test_selp_moves_bits_whatever_the_type():
    assert run("selp.f64", [1, 2], [3, 4], [True, False]).tolist() == [1, 4]


@pytest.mark.parametrize("at, bt", [("u32", "u32"), ("s32", "u32"), ("u32", "s32"), ("s32", "s32")])
def test_dp4a_and_dp2a_against_their_definitions(at, bt):
    a, b, c = rand(32), rand(32), rand(32)

    def parts(x, w, signed):
        v = [(int(x) >> (w * i)) & ((1 << w) - 1) for i in range(32 // w)]
        return [s(y, w) if signed else y for y in v]
    d4 = run(f"dp4a.{at}.{bt}", a, b, c)
    d2 = run(f"dp2a.hi.{at}.{bt}", a, b, c)
    for x, y, z, g4, g2 in zip(a, b, c, d4, d2):
        va, vb = parts(x, 8, at == "s32"), parts(y, 8, bt == "s32")
        assert int(g4) == (int(z) + sum(p * q for p, q in zip(va, vb))) & M32
        va2 = parts(x, 16, at == "s32")
        assert int(g2) == (int(z) + va2[0] * vb[2] + va2[1] * vb[3]) & M32


def test_cvt_truncates_or_with_sat_clamps_to_the_destination_range():
    assert run("cvt.s8.s32", 0x1FF) == 0xFF and run("cvt.u16.s8", 0x80) == 0xFF80
    assert run("cvt.sat.s8.s32", [0x1FF, 0xFFFFFF00, 5]).tolist() == [0x7F, 0x80, 5]
    assert run("cvt.sat.u32.s64", [1 << 63, 1 << 40]).tolist() == [0, M32]
    assert run("cvt.s64.s16", 0x8000) == M64 - 0x7FFF and run("cvt.u64.s16", 0x8000) == M64 - 0x7FFF
    assert run("cvt.sat.s64.u64", M64) == (1 << 63) - 1


# --- refusals, delegation ----------------------------------------------------------------------

@pytest.mark.parametrize("text, ndst, nsrc, why", [
    ("add.sat.u32", 1, 2, r"nearest: add\.sat\.s32"),
    ("add.cc.sat.s32", 1, 2, r"not a form of add .*add\.sat\.s32"),
    ("add.cc.s16", 1, 2, r"add\.cc\.type   \.type = \{\.u32, \.s32, \.u64, \.s64\}"),
    ("sub.u16x2", 1, 2, "not a form of sub"),
    ("mul.u32", 1, 2, r"mul\.mode\.type   \.mode = \{\.hi, \.lo\}"),
    ("mul.wide.u64", 1, 2, r"mul\.wide\.type   \.type = \{\.u16, \.u32, \.s16, \.s32\}"),
    ("mad.lo.sat.s32", 1, 3, r"mad\.hi\.sat\.s32"),
    ("abs.u32", 1, 1, r"abs\.type   \.type = \{\.s16, \.s32, \.s64\}"),
    ("min.relu.u16x2", 1, 2, r"min\.relu\.type   \.type = \{\.s32, \.s16x2\}"),
    ("shf.l.b32", 1, 3, r"\.mode = \{\.clamp, \.wrap\}"),
    ("setp.lt.b32", 2, 2, r"\.CmpOp = \{\.eq, \.ne\}   \.type = \{\.b16"),
    ("setp.lo.s32", 1, 2, r"\.CmpOp = \{\.eq, \.ne, \.lt, \.le, \.gt, \.ge\}   \.type = \{\.s16"),
    ("set.lt.b32.s32", 1, 2, r"\.dtype = \{\.u32, \.s32, \.f32\}"),
    ("lop3.or.b32", 1, 5, "takes 2 destination"),
    ("cvt.sat.u16.u16", 1, 1, "not a form of cvt"),
    ("dp2a.u32.u32", 1, 3, r"dp2a\.mode\.atype\.btype   \.mode = \{\.lo, \.hi\}"),
    ("add.u32", 1, 3, r"takes 1 destination\(s\) and 2 source"),
    ("add.xyz.u32", 1, 2, "add.xyz.u32: not a form of add"),
])
def test_variants_ptx_does_not_define_are_refused_with_the_rule(text, ndst, nsrc, why):
    with pytest.raises(UnsupportedInstruction, match=why):
        sem(text, ndst, nsrc)


@pytest.mark.parametrize("text, family", [
    ("add.rn.f32", "floating"), ("min.NaN.f16x2", "floating"), ("neg.bf16", "floating"),
    ("setp.lt.f32", "floating"), ("set.eq.u32.f64", "floating"), ("cvt.rn.f32.s32", "convert"),
    ("add.s32", "integer"), ("setp.lt.s32", "integer"), ("cvt.s8.u32", "integer"),
])
def test_shared_opcodes_go_to_the_family_of_their_type(text, family):
    op, *mods = text.split(".")
    assert table.lookup(op, tuple(mods))[0].family == family


# --- ptxas agrees on which spellings exist ------------------------------------------------------

def _spellings():
    """(text, ndst, nsrc) candidates around the catalogue: every variant the GPU check runs, and
    spellings next to them that PTX may or may not define."""
    out = {(v.ptx, v.ndst, v.nsrc) for v in ptx_int.variants() if not v.chain and not v.warp}
    for v in ptx_int.variants():
        for text, nd, ns in v.chain:
            out.add((text, nd, ns))
    T = [f"{k}{n}" for k in "bus" for n in (8, 16, 32, 64)] + ["u16x2", "s16x2", "pred"]
    for op, ns in (("add", 2), ("sub", 2), ("min", 2), ("max", 2), ("abs", 1), ("neg", 1), ("div", 2), ("rem", 2),
                   ("and", 2), ("not", 1), ("cnot", 1), ("popc", 1), ("clz", 1), ("brev", 1), ("bfind", 1),
                   ("sad", 3), ("selp", 3), ("shl", 2), ("shr", 2), ("bfe", 3), ("bfi", 4)):
        out |= {(f"{op}.{t}", 1, ns) for t in T}
    for m in ("sat", "cc", "relu", "lo", "hi", "wide"):
        out |= {(f"{op}.{m}.{t}", 1, 2) for op in ("add", "sub", "min", "mul") for t in ("u16", "s32", "u64", "s16x2")}
        out |= {(f"mad.{m}.{t}", 1, 3) for t in ("u16", "s32", "u64")}
    out |= {(f"setp.{c}.{t}", 1, 2) for c in ("lt", "lo", "eq") for t in ("b32", "s64", "u16", "pred")}
    out |= {(f"set.eq.{d}.s32", 1, 2) for d in ("u32", "s32", "f32", "u16", "b32")}
    return sorted(out)


_REG = {8: "h", 16: "h", 32: "r", 64: "rd"}


def _line(text: str, ndst: int, nsrc: int) -> str:
    """A PTX line of ``text`` with registers of the widths the (possibly refused) spelling suggests."""
    op, *mods = text.split(".")
    try:
        sm = table.resolve(Spec(op, tuple(mods), ndst, nsrc))
        dst, src = sm.dst[:ndst], sm.src[:nsrc]
    except UnsupportedInstruction:
        t = next((m for m in reversed(mods) if m in TYPES or m.endswith("x2")), "b32")
        t = "b32" if t.endswith("x2") else t
        dst, src = (t,) * ndst, (t,) * nsrc

    def reg(t, i, kind):
        if t == "pred":
            return f"%p{kind}{i}"
        return f"%{_REG[ptx_type(t).bits]}{kind}{i}"
    ops = "|".join(reg(t, i, "d") for i, t in enumerate(dst)) + ", " + ", ".join(
        "0x3c" if (op == "lop3" and i == 3) else reg(t, i, "s") for i, t in enumerate(src))
    return f"{text} {ops};"


def _ptxas(lines: list[str], tmp_path) -> subprocess.CompletedProcess:
    decl = "".join(f" .reg .{k} %{r}d<4>; .reg .{k} %{r}s<6>;" for r, k in (("h", "b16"), ("r", "b32"), ("rd", "b64")))
    src = (".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k() {\n" + decl +
           " .reg .pred %pd<4>; .reg .pred %ps<6>;\n" + "\n".join(" " + x for x in lines) + "\n ret;\n}\n")
    (tmp_path / "k.ptx").write_text(src)
    return subprocess.run(["ptxas", "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_fragsim_resolves_exactly_the_spellings_ptxas_assembles(tmp_path):
    accepted, refused = [], []
    for text, nd, ns in _spellings():
        op, *mods = text.split(".")
        try:
            table.resolve(Spec(op, tuple(mods), nd, ns))
            accepted.append((text, nd, ns))
        except UnsupportedInstruction:
            refused.append((text, nd, ns))
    r = _ptxas([_line(*x) for x in accepted], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    # every refused spelling alone: ptxas refuses it too (a few at a time keep the test quick)
    wrongly_refused = []
    for x in refused:
        if _ptxas([_line(*x)], tmp_path).returncode == 0:
            wrongly_refused.append(x)
    assert not wrongly_refused


# --- the H100 recording -------------------------------------------------------------------------

def test_the_h100_recording_replays_bit_for_bit(capsys):
    assert main(["gpu-check", "--family", "ptx_int", "--replay", str(DATA), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    from fragsim.gpu_check import record
    recorded = sum(len(record.load(str(DATA / f"{f}.npz"), (ptx_int.KIND,))[0]["variants"]) for f in ptx_int.FILES)
    assert rep["mismatches"] == 0 and rep["variants"] == recorded and rep["cases"] > 10_000


def test_the_recording_was_made_on_an_h100():
    from fragsim.gpu_check import record
    meta, _ = record.load(str(DATA / "int.npz"), (ptx_int.KIND,))
    assert "H100" in meta["device"] and meta["arch"] == "sm_90" and meta["of"] >= 1 << 16


def test_importing_the_family_modules_needs_no_gpu():
    importlib.reload(ptx_int)
    assert ptx_int.FAMILIES["ptx_int"].name == "ptx_int"


# --- the family's GPU path with a stand-in device -----------------------------------------------

def _stand_in(monkeypatch, cc=90):
    """The device replaced by fragsim itself: the run's inputs, comparison and recording are exercised."""
    from fragsim.gpu_check import runner
    fam = ptx_int.PtxIntFamily()
    monkeypatch.setattr(runner, "import_cupy", lambda: None)
    monkeypatch.setattr(runner, "device_info", lambda cp=None: {
        "device": "NVIDIA H100 80GB HBM3", "cc": f"{cc // 10}.{cc % 10}", "cc_int": cc, "driver": "stand-in",
        "cuda_runtime": "0.0"})
    monkeypatch.setattr(ptx_int.PtxIntFamily, "compile", lambda self, info: {ptx_int.kernel_name(v): v
                                                                             for v in ptx_int.variants()})
    monkeypatch.setattr(ptx_int.PtxIntFamily, "launch", lambda self, cp, v, cols, ndst: [
        np.asarray(o).astype(np.uint64) for o in ptx_int.model_thread(v, cols)])
    monkeypatch.setattr(ptx_int.PtxIntFamily, "launch_warp", lambda self, cp, v, cols, wi, ndst: [
        np.asarray(o).astype(np.uint64) for o in ptx_int.model_warp(v, cols, wi)[0]])
    return fam


def test_a_run_records_what_its_replay_reads_back(monkeypatch, tmp_path, capsys):
    _stand_in(monkeypatch)
    rec = tmp_path / "rec"
    rec.mkdir()
    assert main(["gpu-check", "--family", "ptx_int", "--cases", "64", "--forms", "bfe", "shfl", "add.cc",
                 "--record", str(rec), "--json"]) == 0
    run_rep = json.loads(capsys.readouterr().out)
    assert main(["gpu-check", "--family", "ptx_int", "--replay", str(rec), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["variants"] == run_rep["variants"] > 10 and rep["mismatches"] == 0 and 0 < rep["cases"] <= run_rep["cases"]


def test_a_gpu_older_than_sm_90_is_refused_in_one_line(monkeypatch, capsys):
    _stand_in(monkeypatch, cc=80)
    assert main(["gpu-check", "--family", "ptx_int", "--cases", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs an sm_90 GPU" in err


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_families_cuda_builds_with_nvcc(tmp_path):
    cu = tmp_path / "ptx_int.cu"
    cu.write_text(ptx_int.PtxIntFamily().source(90))
    r = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(tmp_path / "k.cubin"), str(cu)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]


# --- cvt.pack (PTX ISA 9.7.9.22) ----------------------------------------------------------------

def _pack(text, *ops):
    args = [np.array([x & 0xFFFFFFFF], np.uint32) for x in ops]
    return int(sem(text, 1, len(ops)).fn(*args)[0][0])


def test_cvt_pack_s16_puts_saturated_a_in_the_high_half_and_b_in_the_low():
    assert _pack("cvt.pack.sat.s16.s32", 70000, -70000) == (0x7FFF << 16) | 0x8000
    assert _pack("cvt.pack.sat.u16.s32", -5, 65536) == 0x0000FFFF


def test_cvt_pack_u8_fills_the_bits_above_from_c():
    # d = c[15:0] << 16 | sat(a) << 8 | sat(b): u8 saturates -1 to 0 and 300 to 255
    assert _pack("cvt.pack.sat.u8.s32.b32", -1, 300, 0xABCD1234) == 0x123400FF


def test_cvt_pack_s4_keeps_four_bits_per_value_and_shifts_c_by_eight():
    # s4 range [-8, 7]: a = 9 -> 7, b = -20 -> -8 (0x8); c shifted left by 2 * 4 bits
    assert _pack("cvt.pack.sat.s4.s32.b32", 9, -20, 0x1) == 0x178
