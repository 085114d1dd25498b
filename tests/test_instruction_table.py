"""The instruction table: the PTX ISA fragment maps, and the forms PTX refuses."""

import numpy as np
import pytest

import fragsim
from fragsim.instructions import FORMS, lookup

F16 = "m16n8k16.row.col.f16.f16.f16.f16"
LANE = np.arange(32)


@pytest.mark.parametrize("name", list(FORMS))
@pytest.mark.parametrize("op", "ABCD")
def test_every_fragment_map_is_a_bijection_onto_its_matrix(name, op):
    form = FORMS[name]
    w = form.words_per_elem(op)
    rows, cols = (x[:, ::w] for x in form.coords(op))   # one register per element (f64: its low word)
    r, c = form.matrix_shape(op)
    assert rows.size == r * c
    flat = rows.ravel() * c + cols.ravel()
    assert np.array_equal(np.sort(flat), np.arange(r * c))
    assert form.layout(op).is_bijective()


# The get_row/get_col formulas of seed 000 (PTX ISA figures for m16n8k16 .f16), i = element index.
def seed_a(lane, i):
    return (lane >> 2) + 8 * ((i >> 1) & 1), (lane & 3) * 2 + (i & 1) + 8 * (i >> 2)


def seed_b(lane, i):
    return (lane & 3) * 2 + (i & 1) + 8 * (i >> 1), lane >> 2


def seed_c(lane, i):
    return (lane >> 2) + 8 * (i >> 1), (lane & 3) * 2 + (i & 1)


@pytest.mark.parametrize("op, formula, n", [("A", seed_a, 8), ("B", seed_b, 4), ("C", seed_c, 4)])
def test_m16n8k16_maps_match_the_get_row_get_col_formulas(op, formula, n):
    form = lookup(F16)
    rows, cols = form.coords(op)
    for i in range(n):
        r, c = formula(LANE, i)
        assert np.array_equal(rows[:, i // 2, i % 2], r), f"{op} element {i} rows"
        assert np.array_equal(cols[:, i // 2, i % 2], c), f"{op} element {i} cols"


def test_f32_accumulator_holds_c0_to_c3_one_per_register():
    rows, cols = lookup("m16n8k16.row.col.f32.f16.f16.f32").coords("C")
    for i in range(4):
        r, c = seed_c(LANE, i)
        assert np.array_equal(rows[:, i, 0], r) and np.array_equal(cols[:, i, 0], c)


def test_ptx_figure_a_m16n8k16_lane0_holds_rows_0_and_8_cols_0_1_8_9():
    rows, cols = lookup(F16).coords("A")
    assert list(zip(rows[0].ravel(), cols[0].ravel())) == [
        (0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]


def test_m16n8k8_f16_a_is_the_left_half_of_m16n8k16_a():
    small = lookup("m16n8k8.row.col.f16.f16.f16.f16").coords("A")
    big = lookup(F16).coords("A")
    assert all(np.array_equal(s, b[:, :2]) for s, b in zip(small, big))


def test_m16n8k8_f16_b_is_the_top_register_of_m16n8k16_b():
    small = lookup("m16n8k8.row.col.f16.f16.f16.f16").coords("B")
    big = lookup(F16).coords("B")
    assert all(np.array_equal(s, b[:, :1]) for s, b in zip(small, big))


def test_m16n8k8_tf32_a_rows_group_and_group_plus_8_cols_tig_and_tig_plus_4():
    rows, cols = lookup("m16n8k8.row.col.f32.tf32.tf32.f32").coords("A")
    g, t = LANE >> 2, LANE & 3
    expect = [(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)]  # a0..a3 (PTX ISA tf32 figure)
    for i, (r, c) in enumerate(expect):
        assert np.array_equal(rows[:, i, 0], r) and np.array_equal(cols[:, i, 0], c)


def test_m16n8k8_tf32_b_rows_tig_and_tig_plus_4_col_group():
    rows, cols = lookup("m16n8k8.row.col.f32.tf32.tf32.f32").coords("B")
    for i in range(2):
        assert np.array_equal(rows[:, i, 0], (LANE & 3) + 4 * i)
        assert np.array_equal(cols[:, i, 0], LANE >> 2)


@pytest.mark.parametrize("name, nregs", [
    ("m16n8k16.row.col.f16.f16.f16.f16", (4, 2, 2, 2)),
    ("m16n8k16.row.col.f32.bf16.bf16.f32", (4, 2, 4, 4)),
    ("m16n8k8.row.col.f32.f16.f16.f32", (2, 1, 4, 4)),
    ("m16n8k8.row.col.f32.tf32.tf32.f32", (4, 2, 4, 4)),
])
def test_register_counts_match_the_ptx_operand_lists(name, nregs):
    assert tuple(lookup(name).nregs(op) for op in "ABCD") == nregs


def test_form_spellings_with_and_without_prefix_are_one_form():
    assert lookup("mma.sync.aligned." + F16) is lookup(F16) is lookup("m16n8k16.f16.f16.f16.f16")
    assert lookup(F16).ptx == "mma.sync.aligned." + F16


@pytest.mark.parametrize("form, reason", [
    ("m16n8k16.row.col.f32.f16.f16.f16", "D and C types must match"),
    ("m16n8k8.row.col.f16.f16.f16.f32", "D and C types must match"),
    ("m16n8k16.row.col.f16.bf16.bf16.f16", "accumulate in f32 only"),
    ("m16n8k16.row.col.f32.tf32.tf32.f32", "shapes m16n8k4, m16n8k8"),
    ("m16n8k16.col.row.f16.f16.f16.f16", "only .row.col"),
    ("m16n8k16.row.col.f32.f16.bf16.f32", "same type"),
    ("m16n8k32", "expected SHAPE.row.col"),
])
def test_forms_ptx_rejects_are_refused_with_the_reason(form, reason):
    with pytest.raises(ValueError, match=reason):
        lookup(form)


def test_owner_inverts_coords():
    form = lookup(F16)
    lane, reg, half = form.owner("B")
    rows, cols = form.coords("B")
    assert np.array_equal(rows[lane, reg, half], np.arange(16)[:, None].repeat(8, 1))
    assert np.array_equal(cols[lane, reg, half], np.arange(8)[None, :].repeat(16, 0))
    assert form.element_name("A", 3, 1) == "a7"


def test_public_names_are_exported():
    for name in ("pack", "unpack", "ldmatrix", "stmatrix", "to_bits", "from_bits", "lookup"):
        assert callable(getattr(fragsim, name))
