"""pack/unpack of the mma.sync forms: matrix bits <-> per-lane registers, exact inverses (wgmma forms and the one
path both share: test_registers_one_path.py)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import fragsim
from fragsim.instructions import FORMS

CASES = [(f, op) for f in FORMS for op in "ABCD"]


@st.composite
def matrices(draw, form, op):
    fmt = FORMS[form].fmt(op)
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    shape = tuple(batch) + FORMS[form].matrix_shape(op)
    return draw(hnp.arrays(fmt.dtype, shape, elements=st.integers(0, (1 << fmt.storage_bits) - 1)))


@pytest.mark.parametrize("form, op", CASES)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_unpack_inverts_pack(form, op, data):
    m = data.draw(matrices(form, op))
    regs = fragsim.pack(form, op, m)
    assert regs.dtype == np.uint32 and regs.shape == m.shape[:-2] + (32, FORMS[form].nregs(op))
    assert np.array_equal(fragsim.unpack(form, op, regs), m)


@pytest.mark.parametrize("form, op", CASES)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_pack_inverts_unpack(form, op, data):
    n = FORMS[form].nregs(op)
    regs = data.draw(hnp.arrays(np.uint32, (2, 32, n), elements=st.integers(0, 2**32 - 1)))
    assert np.array_equal(fragsim.pack(form, op, fragsim.unpack(form, op, regs)), regs)


def test_low_half_of_a_register_is_the_even_element():
    m = np.arange(256, dtype=np.uint16).reshape(16, 16)
    regs = fragsim.pack("m16n8k16.row.col.f16.f16.f16.f16", "A", m)
    assert regs[0, 0] == (1 << 16) | 0  # {A[0][0], A[0][1]}: a0 low, a1 high


def test_float_matrices_are_refused_with_the_conversion_to_use():
    with pytest.raises(TypeError, match="fragsim.to_bits"):
        fragsim.pack("m16n8k16.row.col.f16.f16.f16.f16", "A", np.zeros((16, 16), np.float16))


def test_wrong_matrix_shape_names_the_operand_and_shape():
    with pytest.raises(ValueError, match=r"operand B .*\(\.\.\., 16, 8\)"):
        fragsim.pack("m16n8k16.row.col.f16.f16.f16.f16", "B", np.zeros((8, 16), np.uint16))


def test_wrong_register_count_names_the_expected_shape():
    with pytest.raises(ValueError, match=r"\(\.\.\., 32, 4\)"):
        fragsim.unpack("m16n8k16.row.col.f32.f16.f16.f32", "C", np.zeros((32, 2), np.uint32))


def test_words_too_wide_for_the_format_are_refused():
    with pytest.raises(ValueError, match="bf16 words"):
        fragsim.pack("m16n8k16.row.col.f32.bf16.bf16.f32", "A", np.full((16, 16), 1 << 16, np.uint32))


def test_unknown_operand_is_refused():
    with pytest.raises(ValueError, match="A, B, C, D"):
        fragsim.pack("m16n8k16.row.col.f16.f16.f16.f16", "E", np.zeros((16, 16), np.uint16))
