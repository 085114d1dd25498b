"""fragsim.Swizzle: CUTLASS/CuTe Swizzle<B, M, S>."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fragsim
from fragsim import Swizzle

swizzles = st.tuples(st.integers(0, 4), st.integers(0, 5), st.integers(-8, 8)).filter(
    lambda t: abs(t[2]) >= t[0]).map(lambda t: Swizzle(*t))


def test_formula_xors_bits_m_plus_s_into_bits_m():
    sw = Swizzle(3, 4, 3)   # SW128 on byte offsets: bits 7..9 into bits 4..6
    assert sw(0b1_000_0000) == 0b1_001_0000
    assert sw(0b111_000_0000) == 0b111_111_0000
    assert sw(0xF) == 0xF


def test_sw128_permutes_the_16_byte_chunks_of_each_128_byte_row_by_the_row_index():
    sw = Swizzle(3, 4, 3)
    rows = sw(np.arange(0, 1024, 16)).reshape(8, 8)
    chunk = rows % 128 // 16
    assert np.array_equal(chunk, np.arange(8)[None, :] ^ np.arange(8)[:, None])
    assert np.array_equal(rows // 128, np.repeat(np.arange(8)[:, None], 8, 1))


def test_negative_shift_moves_low_bits_up():
    sw = Swizzle(2, 0, -3)  # bits 0..1 into bits 3..4
    assert sw.yyy_mask == 0b11 and sw.zzz_mask == 0b11000
    assert sw(0b01) == 0b01001


def test_masks_match_cute():
    sw = Swizzle(2, 4, 3)
    assert (sw.yyy_mask, sw.zzz_mask) == (0b11 << 7, 0b11 << 4)


@given(swizzles, st.integers(0, 1 << 20))
def test_swizzle_is_an_involution(sw, off):
    assert sw(sw(off)) == off


@given(swizzles, st.lists(st.integers(0, 1 << 16), min_size=1, max_size=40))
def test_arrays_and_ints_agree(sw, offs):
    a = np.array(offs, dtype=np.int64)
    assert sw(a).tolist() == [sw(o) for o in offs]


@given(swizzles, st.integers(0, 1 << 12), st.integers(0, 63))
def test_base_aligned_to_alignment_commutes(sw, off, k):
    base = k * sw.alignment
    assert sw(base + off) == base + sw(off)


@given(swizzles)
def test_as_layout_is_the_same_map_and_bijective(sw):
    lay = sw.as_layout()
    n = lay.in_size("offset")
    (out,) = lay.apply(offset=np.arange(n))
    assert np.array_equal(out, sw(np.arange(n)))
    assert lay.is_bijective()


def test_as_layout_with_more_bits_passes_the_high_bits_through():
    (out,) = Swizzle(3, 4, 3).as_layout(bits=14).apply(offset=np.array([1 << 13 | 0x80]))
    assert out[0] == (1 << 13) | 0x90


@pytest.mark.parametrize("args,msg", [((3, 4, 2), r"Swizzle<3,4,2>: \|S\| must be >= B"),
                                      ((-1, 4, 3), "B .* must be >= 0"), ((2, -1, 3), "M .* must be >= 0")])
def test_invalid_parameters_are_rejected(args, msg):
    with pytest.raises(ValueError, match=msg):
        Swizzle(*args)


def test_non_integer_parameters_and_offsets_are_rejected():
    with pytest.raises(TypeError, match="B must be an integer"):
        Swizzle(3.0, 4, 3)
    with pytest.raises(TypeError, match="integers"):
        Swizzle(3, 4, 3)(np.array([1.5]))
    with pytest.raises(ValueError, match=">= 0"):
        Swizzle(3, 4, 3)(-16)


def test_fragsim_swizzle_is_the_class_and_has_value_semantics():
    assert fragsim.Swizzle is Swizzle
    assert Swizzle(3, 4, 3) == Swizzle(3, 4, 3) != Swizzle(2, 4, 3)
    assert repr(Swizzle(3, 4, 3)) == "Swizzle<3,4,3>"
