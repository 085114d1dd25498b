"""fragsim.check_load / check_store / check_copy: the report, the ways to give addresses and
fragments, and one-line refusals of bad input."""

import json

import numpy as np
import pytest

import fragsim
from fragsim.check import check_copy, check_load, check_store

F16 = "m16n8k16.row.col.f16.f16.f16.f16"
TF32 = "m16n8k8.row.col.f32.tf32.tf32.f32"
LANES = np.arange(32)
A16 = fragsim.Tile(16, 16, "f16")
A_X4 = "(lane % 16) * 32 + (lane / 16) * 16"           # the A fragment of a 16x16 row-major f16 tile


def test_exported_lazily_from_fragsim():
    assert fragsim.check_load is check_load and fragsim.check_store is check_store and fragsim.check_copy is check_copy


def test_a_right_load_reports_ok_every_element_and_one_bank_report_per_instruction():
    r = check_load(F16, "A", A16, [("ldmatrix.x4", A_X4)])
    assert r.ok and bool(r) and r.compared == 256 and r.mismatches == [] and r.diagnosis == []
    from fragsim.search.addrexpr import evaluate
    assert [c.wavefronts for c in r.conflicts] == [fragsim.bank_conflicts("ldmatrix.x4", evaluate(A_X4)).wavefronts]
    assert "OK: all 256 elements" in str(r)


def test_addresses_as_integers_a_callable_or_an_expression_agree():
    ints = (LANES % 16) * 32 + (LANES // 16) * 16
    for addrs in (ints, list(ints), lambda lane: (lane % 16) * 32 + (lane // 16) * 16, A_X4):
        assert check_load(F16, "A", A16, [("ldmatrix.x4", addrs)]).ok


def test_a_callable_receives_the_variables_it_names():
    t = fragsim.Tile(32, 16, "f16")
    r = check_load(F16, "A", t, [("ldmatrix.x4", lambda lane, m: (16 * m + lane % 16) * 32 + (lane // 16) * 16)],
                   variables={"m": 1}, at=(16, 0))
    assert r.ok


def test_a_mismatch_reads_lane_register_what_it_holds_and_what_it_wants():
    """The k-halves swapped: lane 4 r0 (row 1, cols 0-1) holds row 1, cols 8-9."""
    r = check_load(F16, "A", A16, [("ldmatrix.x4", "(lane % 16) * 32 + (1 - lane / 16) * 16")])
    m = next(m for m in r.mismatches if m.lane == 4 and m.reg == 0 and m.half == 0)
    assert str(m) == "lane 4 r0 holds tile(1,8), wants tile(1,0)"
    assert (m.got, m.want, m.fragment) == ((1, 8), (1, 0), 0)
    assert r.kinds == ["k-halves swapped"]


def test_one_ldmatrix_x4_fills_the_b_fragments_of_two_n_tiles_and_says_which_register_is_which():
    """B (K x N) stored N-major: a column-order tile; .x4 without .trans gives n-tiles 0 and 1."""
    t = fragsim.Tile(16, 16, "f16", order="col")
    addrs = "((lane >> 4) * 8 + (lane & 7)) * 32 + ((lane >> 3) & 1) * 16"
    r = check_load(F16, "B", t, [("ldmatrix.x4", addrs)])
    assert r.ok
    assert r.layout[-2:] == ["r0-r1: B fragment 0 (16x8) at tile(0, 0)", "r2-r3: B fragment 1 (16x8) at tile(0, 8)"]


def test_regmap_says_which_fragment_register_each_loaded_register_is():
    """Matrices ordered (n0 k-low, n1 k-low, n0 k-high, n1 k-high): wrong as given, right with regmap."""
    t = fragsim.Tile(16, 16, "f16", order="col")
    addrs = "((lane >> 3) & 1) * 8 * 32 + (lane & 7) * 32 + (lane >> 4) * 16"
    r = check_load(F16, "B", t, [("ldmatrix.x4", addrs)])
    assert not r.ok and r.kinds == ["matrix order"] and "regmap=[(0, 0), (1, 0), (0, 1), (1, 1)]" in r.diagnosis[0]
    assert check_load(F16, "B", t, [("ldmatrix.x4", addrs)], regmap=[(0, 0), (1, 0), (0, 1), (1, 1)]).ok


def test_fragments_place_each_fragment_and_at_takes_expressions():
    t = fragsim.Tile(32, 32, "f16")
    two = [("ldmatrix.x4", A_X4), ("ldmatrix.x4", "(16 + lane % 16) * 64 + 32 + (lane / 16) * 16")]
    two[0] = ("ldmatrix.x4", "(lane % 16) * 64 + (lane / 16) * 16")
    assert check_load(F16, "A", t, two, fragments=[(0, 0), (16, 16)]).ok
    one = [("ldmatrix.x4", "(16 * m + lane % 16) * 64 + (lane / 16) * 16")]
    assert check_load(F16, "A", t, one, variables={"m": 1}, at=("16 * m", 0)).ok


def test_plain_and_halfword_loads_fill_fragments_too():
    """tf32 A by ld.shared.b32 (one element per register), f16 A by eight ld.shared.u16 (seed 000)."""
    t = fragsim.Tile(16, 8, "tf32")
    rows, cols = fragsim.lookup(TF32).coords("A")
    loads = [("ld.shared.b32", t.offset(rows[:, j, 0], cols[:, j, 0])) for j in range(4)]
    assert check_load(TF32, "A", t, loads).ok
    rows, cols = fragsim.lookup(F16).coords("A")
    u16 = [("ld.shared.u16", A16.offset(rows[:, i // 2, i % 2], cols[:, i // 2, i % 2])) for i in range(8)]
    assert check_load(F16, "A", A16, u16).ok


def test_64_bit_elements_fill_register_pairs_and_8_bit_ones_share_a_register():
    """f64 m8n8k4: lane l's A element (l/4, l%4) by ld.shared.v2.b32; s8 m16n8k32 A by ldmatrix.x4."""
    f64 = fragsim.Tile(8, 4, "f64")
    assert check_load("m8n8k4.row.col.f64.f64.f64.f64", "A", f64, [("ld.shared.v2.b32", f64.offset(LANES // 4, LANES % 4))]).ok
    s8 = fragsim.Tile(16, 32, "s8")
    form = "m16n8k32.row.col.s32.s8.s8.s32"
    assert check_load(form, "A", s8, [("ldmatrix.x4", "(lane % 16) * 32 + (lane / 16) * 16")]).ok
    r = check_load(form, "A", s8, [("ldmatrix.x4", "(lane % 16) * 32 + (1 - lane / 16) * 16")])
    assert r.kinds == ["k-halves swapped"] and "k 0..15 hold k 16..31" in r.diagnosis[0]


def test_a_plain_load_that_needs_non_adjacent_elements_is_named():
    t = fragsim.Tile(16, 8, "f16")              # B row-major (K x N): a register's two k are a row apart
    rows, cols = fragsim.lookup(F16).coords("B")
    loads = [("ld.shared.b32", t.offset(rows[:, j, 0], cols[:, j, 0])) for j in range(2)]
    r = check_load(F16, "B", t, loads)
    assert not r.ok and "not contiguous" in r.kinds


def test_the_report_is_json():
    r = check_load(F16, "A", A16, [("ldmatrix.x4", "(lane % 16) * 32")])
    d = json.loads(json.dumps(r.to_dict()))
    assert d["ok"] is False and d["diagnosis"][0]["kind"] == "offset"
    assert d["conflicts"][0]["wavefronts"] == r.conflicts[0].wavefronts
    assert d["mismatches"][0]["text"] == str(r.mismatches[0])


def test_the_text_report_names_the_verdict_the_diagnosis_and_the_first_mismatches():
    s = str(check_load(F16, "A", A16, [("ldmatrix.x4", "(lane % 16) * 32")]))
    assert "WRONG: 128 of 256 elements" in s and "diagnosis:" in s and "lane 0 r2 holds tile(0,0), wants tile(0,8)" in s


def test_an_instruction_that_would_fault_is_not_run_and_says_why():
    r = check_load(F16, "A", A16, [("ldmatrix.x4", "(lane % 16) * 32 + 4")])
    assert not r.ok and r.conflicts == [None]
    assert r.diagnosis[0] == ("load 0 (ldmatrix.x4): lane 0: ldmatrix row address 0x4 is not 16-byte aligned; "
                              "the GPU would fault on it")
    assert all(m.got is None and "cannot run" in str(m) for m in r.mismatches)


def test_copies_report_holes_and_overlaps():
    t = fragsim.Tile(16, 16, "f16")
    r = check_copy(t, [("cp.async.ca.16", "(lane % 16) * 16")])
    assert not r.ok and {"holes", "overlaps"} <= set(r.kinds)


def test_copies_expand_variables_and_warps_in_order():
    t = fragsim.Tile(32, 64, "f16")
    r = check_copy(t, [("st.shared.v4.b32", "(tid + pass * 64) * 16")], variables={"pass": range(4)}, threads=64)
    assert r.ok and [i.label for i in r.instructions][:3] == ["copy 0 (pass=0 warp=0)", "copy 1 (pass=0 warp=1)",
                                                              "copy 2 (pass=1 warp=0)"]


def test_stores_of_f32_accumulators_into_a_16_bit_tile_use_the_16_bit_accumulator_map():
    t = fragsim.Tile(16, 8, "bf16")
    r = check_store("m16n8k16.row.col.f32.bf16.bf16.f32", "C", t,
                    [("st.shared.b32", "((lane / 4) * 8 + (lane % 4) * 2) * 2"),
                     ("st.shared.b32", "((lane / 4 + 8) * 8 + (lane % 4) * 2) * 2")])
    assert r.ok


@pytest.mark.parametrize("call, message", [
    (lambda: check_load(F16, "A", A16, [("stmatrix.x4", A_X4)]), "loads take ldmatrix or ld.shared"),
    (lambda: check_load(F16, "E", A16, [("ldmatrix.x4", A_X4)]), "operand must be one of A, B, C, D"),
    (lambda: check_load(F16, "A", fragsim.Tile(16, 16, "f32"), [("ldmatrix.x4", A_X4)]), "4-byte f32 elements"),
    (lambda: check_load(F16, "A", A16, [("ldmatrix.x2", A_X4)]), "fill 2 registers per lane"),
    (lambda: check_load(F16, "A", A16, [("ldmatrix.x4", A_X4)], at=(8, 0)), "does not fit in the 16x16 tile"),
    (lambda: check_load(F16, "A", A16, [("ldmatrix.x4", "k * 16")]), "unknown variable 'k'"),
    (lambda: check_load(F16, "A", A16, [("ldmatrix.x4", A_X4)], variables={"k": range(2)}), "one value"),
    (lambda: check_load(F16, "A", A16, [("ldmatrix.x4", np.arange(16))]), "expected 32 values"),
    (lambda: check_load(F16, "A", A16, [("ldmatrix.x4", A_X4, 0xFF)]), "no mask"),
    (lambda: check_load(F16, "A", A16, [("ldmatrix.x4", A_X4)], regmap=[(0, 0), (0, 0), (0, 1), (0, 2)]),
     "both name fragment 0 register 0"),
    (lambda: check_load(F16, "A", A16, []), "non-empty list"),
    (lambda: check_load(F16, "A", "16x16 f16 nope", [("ldmatrix.x4", A_X4)]), "unexpected 'nope'"),
    (lambda: check_load(F16, "A", 3, [("ldmatrix.x4", A_X4)]), "tile must be a fragsim.Tile"),
    (lambda: check_load(F16, "A", A16, [("ldmatrix.x4", lambda lane: 1 / 0)]), "the callable failed"),
    (lambda: check_store(F16, "A", A16, [("stmatrix.x4", A_X4)]), "operand must be 'C'"),
    (lambda: check_load("m16n8k128.row.col.s32.b1.b1.s32.and.popc", "A", fragsim.Tile(16, 16, "u8"),
                        [("ldmatrix.x2", "lane * 16")]), "1-bit b1 elements"),
    (lambda: check_copy(A16, [("cp.async.cg.16", "lane * 16")], threads=48), "multiple of 32"),
    (lambda: check_copy(A16, [("cp.async.cg.16", "lane * 16", "lane * 16")], global_pitch=8), "smaller than a row"),
    (lambda: check_load(F16, "A", A16, [("ldmatrix.x4", A_X4)], gpu="yes"), "gpu must be True"),
])
def test_bad_input_is_one_line_naming_what_was_expected(call, message):
    with pytest.raises((ValueError, TypeError)) as e:
        call()
    assert message in str(e.value) and "\n" not in str(e.value)
