"""Bad values are refused with one clear error, and values at the edges give the right answer:
number-format codecs, Swizzle, registers (pack/unpack/mma), the instruction table's shared
index arrays, and batches with many leading dimensions."""

import datetime
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fragsim
from fragsim import Swizzle, from_bits, to_bits
from fragsim.facts.formats import get_format

F32 = "m16n8k16.row.col.f32.f16.f16.f32"
F16 = "m16n8k16.row.col.f16.f16.f16.f16"


# -- from_bits / to_bits -------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, word, index", [("f16", 0x13C00, ()), ("f16", -1, ()), ("e4m3", 0x100, ()),
                                               ("bf16", np.array([0x3F80, 1 << 16], np.uint32), (1,))])
def test_from_bits_refuses_patterns_wider_than_the_format_or_negative(fmt, word, index):
    with pytest.raises(ValueError, match=rf"{fmt} bit patterns must lie in \[0, 2\*\*\d+\), got -?\d+ at index "
                                         rf"{re.escape(str(index))}"):
        from_bits(word, fmt)


def test_from_bits_takes_every_word_of_the_storage_width():
    assert from_bits(np.uint32(0xFFFFFFFF), "tf32") != from_bits(np.uint32(0), "tf32")   # NaN != 0
    assert from_bits(np.int64(0x3C00), "f16") == 1.0


@pytest.mark.parametrize("value", [None, "1.5", datetime.date(2020, 1, 1), np.datetime64("2020-01-01"),
                                   np.array(["1.5"]), [1.0, None], True, np.array([True]), 1 + 2j,
                                   np.array([1.0], np.longdouble)])
def test_to_bits_refuses_what_is_not_a_real_number(value):
    with pytest.raises(TypeError, match="to_bits: values must be real numbers"):
        to_bits(value, "f16")


def test_to_bits_refuses_a_ragged_list():
    with pytest.raises(ValueError, match="rectangular"):
        to_bits([[1.0, 2.0], [3.0]], "f32")


@pytest.mark.parametrize("fmt", ["f16", "bf16", "f32"])
def test_a_huge_python_int_rounds_like_ieee_conversion(fmt):
    f = get_format(fmt)
    inf = ((1 << f.exp_bits) - 1) << f.exp_shift
    largest = inf - (1 << f.ignored_low_bits)
    assert int(to_bits(2**1100, fmt)) == inf
    assert int(to_bits(-2**1100, fmt)) == inf | (1 << f.sign_shift)
    assert int(to_bits(2**1100, fmt, "rz")) == largest


def test_integers_are_rounded_once_not_through_float64():
    # 2**60 - 1 toward zero is the f32 just below 2**60; via float64 it would first round up to 2**60.
    assert int(to_bits(2**60 - 1, "f32", "rz")) == 0x5D7FFFFF
    big = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, -5], np.int64)
    assert to_bits(big, "f32", "rz").tolist() == [int(to_bits(int(v), "f32", "rz")) for v in big]
    assert int(to_bits(np.uint64(2**64 - 1), "f32", "rz")) == 0x5F7FFFFF


@settings(max_examples=200, deadline=None)
@given(st.integers(-2**200, 2**200), st.sampled_from(["f16", "bf16", "f32", "e4m3"]))
def test_python_ints_round_to_nearest_like_floats(n, fmt):
    # float64 has more than 2p + 2 bits for each of these formats: rounding n to float64 first
    # gives the same nearest-even result, so float(n) is a reference here.
    assert int(to_bits(n, fmt)) == int(to_bits(float(n), fmt))


def test_mixed_python_numbers_convert_elementwise():
    got = to_bits([1, 2.5, float("nan"), -float("inf"), 2**70], "bf16")
    assert got.tolist() == to_bits(np.array([1, 2.5, np.nan, -np.inf, 2.0**70]), "bf16").tolist()


@pytest.mark.parametrize("kw", [{"rounding": "nearest"}, {"overflow": "saturate"}, {"rounding": True}])
def test_rounding_and_overflow_modes_are_checked(kw):
    from fragsim.facts.formats import round_to_format
    with pytest.raises(ValueError, match=f"{next(iter(kw))} must be"):
        round_to_format(0, 1, 0, "f16", **kw)


def test_a_format_must_be_named_by_a_string():
    with pytest.raises(TypeError, match="number format must be a name"):
        to_bits(1.0, 16)


# -- Swizzle -------------------------------------------------------------------------------------

def test_swizzle_arrays_compute_in_64_bits_like_the_int_path():
    sw = Swizzle(4, 20, -10)          # bits 20..23 XORed into bits 30..33: past any 32-bit type
    got = sw(np.array([0xF00000], np.int32))
    assert got.dtype == np.int64 and got.tolist() == [sw(0xF00000)] == [16121856000]


def test_swizzle_of_uint64_stays_uint64():
    got = Swizzle(3, 4, 3)(np.array([2**64 - 1], np.uint64))
    assert got.dtype == np.uint64 and int(got[0]) == Swizzle(3, 4, 3)(2**64 - 1)


@settings(max_examples=100, deadline=None)
@given(st.tuples(st.integers(0, 6), st.integers(0, 20), st.integers(-20, 20)).filter(
           lambda t: abs(t[2]) >= t[0] and t[1] + abs(t[2]) + t[0] <= 62),
       st.sampled_from([np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]),
       st.data())
def test_swizzle_arrays_of_every_integer_dtype_agree_with_ints(bms, dtype, data):
    sw = Swizzle(*bms)
    offs = data.draw(st.lists(st.integers(0, int(np.iinfo(dtype).max)), min_size=1, max_size=20))
    assert sw(np.array(offs, dtype)).tolist() == [sw(o) for o in offs]


@pytest.mark.parametrize("bits, err", [(10**6, ValueError), (64, ValueError), (-1, ValueError),
                                       (3.0, TypeError), (True, TypeError)])
def test_swizzle_layout_bits_are_capped_at_63(bits, err):
    with pytest.raises(err, match=r"as_layout: bits must be"):
        Swizzle(3, 4, 3).as_layout(bits)


def test_swizzle_layout_of_63_bits_is_the_swizzle_extended_by_the_identity():
    lay = Swizzle(3, 4, 3).as_layout(63)
    assert lay.in_size("offset") == 2**63
    (got,) = lay.apply(offset=[0b1_000_0000, (1 << 62) | 0b1_000_0000])
    assert got.tolist() == [0b1_001_0000, (1 << 62) | 0b1_001_0000]


# -- registers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_unpack_refuses_negative_register_words_naming_lane_and_register(dtype):
    regs = np.zeros((2, 32, 4), dtype)
    regs[1, 5, 3] = -1
    with pytest.raises(ValueError, match=r"operand C of .*: registers must be 32-bit words in \[0, 2\*\*32\), "
                                         r"got -1 at lane 5, register 3 of batch index \(1,\)"):
        fragsim.unpack(F32, "C", regs)


def test_unpack_refuses_words_wider_than_32_bits():
    regs = np.zeros((32, 4), np.int64)
    regs[7, 0] = 2**40
    with pytest.raises(ValueError, match=r"got 1099511627776 at lane 7, register 0$"):
        fragsim.unpack(F32, "D", regs)


@pytest.mark.parametrize("operand", ["A", "B", "C"])
def test_mma_refuses_negative_registers_naming_the_operand(operand):
    f = fragsim.lookup(F32)
    regs = {op: np.zeros((32, f.nregs(op)), np.int32) for op in "ABC"}
    regs[operand][31, 0] = -2
    with pytest.raises(ValueError, match=rf"operand {operand} of .*got -2 at lane 31, register 0"):
        fragsim.mma(F32, regs["A"], regs["B"], regs["C"])


@pytest.mark.parametrize("dtype", [np.float32, bool, object])
def test_register_arrays_must_be_integers(dtype):
    with pytest.raises(TypeError, match="operand A .*registers must be uint32 words"):
        fragsim.unpack(F32, "A", np.zeros((32, 4), dtype))


def test_pack_names_the_first_bad_element():
    m = np.zeros((3, 16, 16), np.int32)
    m[2, 4, 9] = -7
    with pytest.raises(ValueError, match=r"f16 words must lie in \[0, 2\*\*16\), got -7 at row 4, col 9 of "
                                         r"batch index \(2,\)"):
        fragsim.pack(F16, "A", m)


def test_mma_parallel_must_be_a_bool():
    f = fragsim.lookup(F32)
    regs = [np.zeros((32, f.nregs(op)), np.uint32) for op in "ABC"]
    with pytest.raises(TypeError, match="parallel must be True or False, got str 'no'"):
        fragsim.mma(F32, *regs, parallel="no")


def test_coords_are_read_only_so_no_caller_can_corrupt_pack():
    m = np.arange(256, dtype=np.uint16).reshape(16, 16)
    before = fragsim.pack(F16, "A", m)
    rows, cols = fragsim.lookup(F16).coords("A")
    with pytest.raises(ValueError, match="read-only"):
        rows[0, 0, 0] = 5
    assert np.array_equal(fragsim.pack(F16, "A", m), before)
    assert np.array_equal(fragsim.unpack(F16, "A", before), m)


def test_pack_and_unpack_take_any_number_of_batch_dimensions():
    m = np.arange(256, dtype=np.uint16).reshape((1,) * 62 + (16, 16))
    regs = fragsim.pack(F16, "A", m)
    assert regs.shape == (1,) * 62 + (32, 4)
    assert np.array_equal(fragsim.unpack(F16, "A", regs), m)


def test_mma_takes_more_batch_dimensions_than_numpy_broadcast_shapes():
    f = fragsim.lookup(F32)
    rng = np.random.default_rng(3)
    a, b, c = (rng.integers(0, 2**32, (2, 32, f.nregs(op)), dtype=np.uint64).astype(np.uint32) for op in "ABC")
    d = fragsim.mma(F32, a.reshape((2,) + (1,) * 39 + (32, 4)), b[0], c.reshape((1,) * 35 + (2, 32, 4)))
    assert d.shape == (2,) + (1,) * 38 + (2, 32, 4)
    want = fragsim.mma(F32, a[:, None], b[0], c[None])          # (2, 2, 32, 4)
    assert np.array_equal(d.reshape(2, 2, 32, 4), want)


def test_mma_batch_dimensions_that_do_not_broadcast_name_the_shapes():
    f = fragsim.lookup(F32)
    a, b, c = (np.zeros((1,) * 33 + (3, 32, f.nregs(op)), np.uint32) for op in "ABC")
    with pytest.raises(ValueError, match="do not broadcast"):
        fragsim.mma(F32, a, b[..., :2, :, :], c)



# -- explain -------------------------------------------------------------------------------------

def _explain_operands():
    f = fragsim.lookup(F32)
    return [np.zeros(f.matrix_shape(op), f.fmt(op).dtype) for op in "ABC"]


@pytest.mark.parametrize("row, col", [(True, 0), (1.5, 0), (0, "1")])
def test_explain_takes_integer_coordinates_only(row, col):
    from fragsim.arith.explain import explain
    with pytest.raises(TypeError, match="(row|col) must be an integer"):
        explain(F32, *_explain_operands(), row, col)


def test_explain_refuses_words_outside_the_format():
    from fragsim.arith.explain import explain
    A, B, C = _explain_operands()
    A = A.astype(np.int32)
    A[3, 2] = 0x13C00
    with pytest.raises(ValueError, match=r"operand A of .*f16 words must lie in \[0, 2\*\*16\), got 80896 at row 3, col 2"):
        explain(F32, A, B, C, 0, 0)
