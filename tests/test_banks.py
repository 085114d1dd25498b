"""fragsim.bank_conflicts: the documented cases, one property each (rules measured on H200)."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import fragsim

LANE = np.arange(32)


def wf(op, addrs, mask=None, src=None):
    r = fragsim.bank_conflicts(op, np.asarray(addrs), mask, src)
    return r.wavefronts, r.ideal, r.conflicts


# ---- 32 banks of 4 bytes, one phase of 32 lanes up to 4 bytes ----------------------------------

def test_consecutive_words_hit_32_distinct_banks_in_one_wavefront():
    assert wf("ld.shared.b32", LANE * 4) == (1, 1, 0)


def test_stride_of_128_bytes_puts_every_lane_in_bank_0():
    assert wf("ld.shared.b32", LANE * 128) == (32, 1, 31)


def test_stride_of_two_words_is_a_two_way_conflict():
    assert wf("st.shared.b32", LANE * 8) == (2, 1, 1)


def test_odd_word_stride_is_conflict_free():
    assert wf("ld.shared.b32", LANE * 4 * 33) == (1, 1, 0)


def test_padding_one_word_per_128_byte_row_removes_the_column_conflict():
    assert wf("ld.shared.b32", LANE * 128)[0] == 32
    assert wf("ld.shared.b32", LANE * 132)[0] == 1


def test_all_lanes_reading_one_word_is_a_broadcast():
    assert wf("ld.shared.b32", np.full(32, 0x40)) == (1, 1, 0)


def test_stores_to_one_word_take_one_wavefront():
    assert wf("st.shared.b32", np.full(32, 0x40)) == (1, 1, 0)


def test_bytes_of_one_word_are_one_access():
    assert wf("ld.shared.u8", LANE) == (1, 1, 0)
    assert wf("ld.shared.u16", LANE % 2 * 2 + LANE // 16 * 128) == (2, 1, 1)


# ---- wider accesses: phases of 16 and 8 lanes ------------------------------------------------

def test_64_bit_accesses_take_two_phases_of_16_lanes():
    assert wf("st.shared.v2.b32", LANE * 8) == (2, 2, 0)


def test_128_bit_accesses_take_four_phases_of_8_lanes():
    assert wf("ld.shared.v4.b32", LANE * 16) == (4, 4, 0)


def test_conflicts_only_count_within_a_phase():
    # lanes 0 and 16 hit the same banks, but they are in different phases of a 64-bit access
    a = LANE % 16 * 8 + LANE // 16 * 128
    assert wf("st.shared.v2.b32", a) == (2, 2, 0)


def test_64_bit_loads_with_equal_partner_lanes_take_one_phase():
    # lanes 2k and 2k+1 load the same address: 16 distinct 8-byte values in one wavefront
    assert wf("ld.shared.v2.b32", LANE // 2 * 8) == (1, 1, 0)


def test_64_bit_loads_merge_phases_when_lane_n_equals_lane_n_xor_2():
    assert wf("ld.shared.v2.b32", (LANE & ~2) * 8)[1] == 1


def test_partner_rule_does_not_apply_to_lane_n_xor_4():
    assert wf("ld.shared.v2.b32", (LANE & ~4) * 8)[1] == 2


def test_a_single_differing_partner_keeps_the_phases_apart():
    a = LANE // 2 * 8
    a[5] = 0x800
    assert wf("ld.shared.v2.b32", a)[1] == 2


def test_128_bit_broadcast_load_takes_two_wavefronts():
    assert wf("ld.shared.v4.b32", np.zeros(32, int)) == (2, 2, 0)


def test_stores_do_not_merge_partner_phases():
    assert wf("st.shared.v2.b32", LANE // 2 * 8) == (2, 2, 0)
    assert wf("st.shared.v4.b32", np.zeros(32, int)) == (4, 4, 0)


def test_inactive_partners_do_not_break_the_partner_rule():
    # even lanes only: every pair has one inactive lane
    assert wf("ld.shared.v2.b32", LANE * 8, mask=0x55555555)[1] == 1


# ---- ldmatrix / stmatrix: one phase per 8x8 matrix ---------------------------------------------

def test_ldmatrix_x4_of_a_row_major_tile_with_128_byte_rows_is_8_way_per_matrix():
    a = LANE % 16 * 128 + LANE // 16 * 16
    assert wf("ldmatrix.x4", a) == (32, 4, 28)


def test_ldmatrix_x4_with_cutlass_swizzle_3_4_3_is_conflict_free():
    a = fragsim.Swizzle(3, 4, 3)(LANE % 16 * 128 + LANE // 16 * 16)
    assert wf("ldmatrix.x4", a) == (4, 4, 0)


def test_ldmatrix_trans_reads_the_same_bytes_as_ldmatrix():
    a = LANE % 16 * 64 + LANE // 16 * 16
    assert wf("ldmatrix.x4.trans", a) == wf("ldmatrix.x4", a)


def test_ldmatrix_x1_ignores_the_addresses_of_lanes_8_to_31():
    a = LANE * 16
    a[8:] = 7  # neither aligned nor conflict-free: unused
    assert wf("ldmatrix.x1", a) == (1, 1, 0)


def test_ldmatrix_x2_reads_lanes_0_to_15():
    a = np.where(LANE < 16, LANE * 16, 0)
    assert wf("ldmatrix.x2", a) == (2, 2, 0)


def test_duplicate_ldmatrix_rows_are_read_once():
    assert wf("ldmatrix.x4", LANE % 8 * 16) == (4, 4, 0)


def test_stmatrix_follows_the_same_phases_as_ldmatrix():
    a = LANE % 16 * 128 + LANE // 16 * 16
    assert wf("stmatrix.x4", a) == wf("ldmatrix.x4", a)


def test_ldmatrix_takes_no_partial_mask():
    with pytest.raises(ValueError, match="every lane of the warp executes it"):
        fragsim.bank_conflicts("ldmatrix.x4", LANE * 16, mask=0xFFFF)


# ---- active lanes ------------------------------------------------------------------------------

def test_phases_without_an_active_lane_cost_nothing():
    assert wf("ld.shared.v4.b32", LANE * 16, mask=0x000000FF) == (1, 1, 0)


def test_inactive_lanes_do_not_conflict():
    assert wf("st.shared.b32", LANE * 128, mask=0b1) == (1, 1, 0)


def test_no_active_lane_no_wavefront():
    assert wf("ld.shared.b32", LANE * 4, mask=0) == (0, 0, 0)


def test_mask_as_booleans_equals_mask_as_bits():
    a = LANE * 64
    assert wf("ld.shared.b32", a, mask=LANE < 16) == wf("ld.shared.b32", a, mask=0xFFFF)


# ---- cp.async ----------------------------------------------------------------------------------

def test_cp_async_writes_to_one_word_are_not_merged():
    assert wf("cp.async.ca.4", LANE // 2 * 4)[0] == 2
    assert wf("st.shared.b32", LANE // 2 * 4)[0] == 1


def test_cp_async_16_with_contiguous_source_takes_one_phase_per_source_line():
    r = fragsim.bank_conflicts("cp.async.ca.16", LANE * 16)
    assert [p.lanes for p in r.phases] == [list(range(8 * i, 8 * i + 8)) for i in range(4)]
    assert (r.wavefronts, r.ideal, r.exact) == (4, 4, True)


def test_cp_async_lanes_reading_one_source_element_take_a_wavefront_each():
    r = fragsim.bank_conflicts("cp.async.ca.16", LANE * 16, src=np.zeros(32, int))
    assert (r.wavefronts, r.exact) == (32, True)


def test_cp_async_lanes_of_different_lines_writing_one_bank_are_flagged_as_estimates():
    """Lanes 0-15 read line 0, lanes 16-31 line 1 (one group: the lines' classes differ) and every
    lane writes bank 0: the order in which the hardware packs such a group was not pinned down."""
    r = fragsim.bank_conflicts("cp.async.ca.4", LANE * 128, src=LANE * 8)
    assert not r.exact and r.ideal == 1


def test_cp_async_lanes_in_different_width_phases_never_share_a_wavefront():
    """Issue 9's example, measured on an H100: lanes 7 and 8 of a 16-byte copy read one line."""
    r = fragsim.bank_conflicts("cp.async.ca.16", LANE * 16, mask=0x180, src=LANE * 16 + 16)
    assert (r.wavefronts, r.ideal, r.conflicts, r.exact) == (2, 2, 0, True)


@pytest.mark.parametrize("op,measured", [("cp.async.ca.4", 1), ("cp.async.ca.8", 2), ("cp.async.ca.16", 5)])
def test_cp_async_copy_shifted_off_a_source_line_boundary(op, measured):
    """src = lane*size + size, full warp (H100: 1, 2 and 5 wavefronts, no conflict): the source
    side costs one group per (width phase, slot), and a slot holds lines of different classes."""
    size = fragsim.parse_shared_op(op).bytes_per_addr
    r = fragsim.bank_conflicts(op, LANE * size, src=LANE * size + size)
    assert (r.wavefronts, r.conflicts, r.exact) == (measured, 0, True)


def test_cp_async_source_lines_of_one_class_never_share_a_wavefront():
    """Lines 0x0 and 0x280 have class 0 both (the XOR hash of address bits 7..21 reads bits 7 and
    9 into one parity): two lanes reading them take two groups; lines 0x0 and 0x80 (classes 0 and
    1) share one."""
    from fragsim.banks.rules import source_line_class
    assert (source_line_class(0), source_line_class(1), source_line_class(5)) == (0, 1, 0)
    src = np.zeros(32, np.int64)
    src[1] = 0x280
    assert fragsim.bank_conflicts("cp.async.ca.4", LANE * 4, mask=0b11, src=src).ideal == 2
    src[1] = 0x84
    assert fragsim.bank_conflicts("cp.async.ca.4", LANE * 4, mask=0b11, src=src).ideal == 1


def test_cp_async_an_aligned_quad_of_lines_holds_one_line_of_each_class():
    from fragsim.banks.rules import source_line_class
    rng = np.random.default_rng(1)
    for quad in rng.integers(0, 1 << 20, 200) * 4:
        assert sorted(source_line_class(int(quad) + k) for k in range(4)) == [0, 1, 2, 3]


def test_cp_async_lines_beyond_the_measured_hash_bits_are_estimates():
    src = LANE * 4
    src[16:] += 1 << 22
    assert not fragsim.bank_conflicts("cp.async.ca.4", LANE * 4, src=src).exact


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["cp.async.ca.4", "cp.async.ca.8", "cp.async.ca.16", "cp.async.cg.16"]),
       hnp.arrays(np.int64, 32, elements=st.integers(0, 63)), hnp.arrays(np.int64, 32, elements=st.integers(0, 4095)),
       st.integers(0, 2 ** 32 - 1))
def test_cp_async_ideal_is_between_zero_and_the_wavefronts(op, dst_units, src_units, mask):
    """A counter is never negative: 0 <= ideal <= wavefronts for any addresses and any active lanes."""
    size = fragsim.parse_shared_op(op).bytes_per_addr
    r = fragsim.bank_conflicts(op, dst_units * size, mask, src=src_units * size)
    assert 0 <= r.ideal <= r.wavefronts and r.conflicts >= 0
    if op.endswith("cg.16") or mask == 0:
        return
    assert r.ideal >= 1 and (r.modelled_wavefronts or r.wavefronts) >= r.ideal


def test_cp_async_cg_counters_show_nothing_but_the_cost_is_modelled():
    r = fragsim.bank_conflicts("cp.async.cg.16", LANE % 8 * 16 + LANE // 8 * 128 * 2)
    assert (r.wavefronts, r.conflicts) == (0, 0)
    assert r.modelled_wavefronts == fragsim.bank_conflicts("cp.async.ca.16", LANE % 8 * 16 + LANE // 8 * 256).wavefronts


def test_src_is_only_for_cp_async():
    with pytest.raises(ValueError, match="only cp.async"):
        fragsim.bank_conflicts("ld.shared.b32", LANE * 4, src=LANE * 4)


# ---- Nsight Compute's terms ----------------------------------------------------------------------

@pytest.mark.parametrize("op,kind", [("ldmatrix.x4", "op_ld"), ("ld.shared.b32", "op_ld"),
                                     ("stmatrix.x2", "op_st"), ("st.shared.u8", "op_st"),
                                     ("cp.async.ca.16", "op_ldgsts")])
def test_report_names_the_ncu_metrics_of_the_instruction(op, kind):
    r = fragsim.bank_conflicts(op, LANE * 16)
    assert any(kind in name for name in r.metrics) and fragsim.parse_shared_op(op).metrics[1] in r.metrics


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["ld.shared.u8", "ld.shared.b32", "ld.shared.v2.b32", "ld.shared.v4.b32",
                        "st.shared.v4.b32", "ldmatrix.x4", "stmatrix.x2", "cp.async.ca.8"]),
       hnp.arrays(np.int64, 32, elements=st.integers(0, 255)), st.integers(0, 2 ** 32 - 1))
def test_conflicts_are_wavefronts_minus_ideal_and_batch_equals_single(op, units, mask):
    size = fragsim.parse_shared_op(op).bytes_per_addr
    if op.startswith(("ldmatrix", "stmatrix")):
        mask = None
    addrs = units * size
    one = fragsim.bank_conflicts(op, addrs, mask)
    many = fragsim.bank_conflicts(op, np.stack([addrs, addrs]), None if mask is None else np.array([mask, mask]))
    assert one.conflicts == one.wavefronts - one.ideal >= 0
    assert (many.wavefronts[1], many.ideal[1], many.exact[1]) == (one.wavefronts, one.ideal, one.exact)


# ---- the detail a person needs -------------------------------------------------------------------

def test_report_lists_the_colliding_lanes_and_words_per_phase():
    a = LANE * 4
    a[3] = 128  # lane 3 reads bank 0 of the next row: collides with lane 0
    r = fragsim.bank_conflicts("ld.shared.b32", a)
    assert r.collisions == [(0, 0, [(0, [0]), (128, [3])])]
    text = str(r)
    assert "bank  0: 2 words: 0x0 (lane 0), 0x80 (lane 3)" in text
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum  1" in text


def test_report_as_json_dict_has_the_phases_and_totals():
    d = fragsim.bank_conflicts("ldmatrix.x2", LANE * 16).to_dict()
    assert (d["wavefronts"], d["ideal"], d["conflicts"]) == (2, 2, 0)
    assert [p["lanes"] for p in d["phases"]] == [list(range(8)), list(range(8, 16))]


# ---- errors name the lane and what was expected ----------------------------------------------------

def test_misaligned_ldmatrix_row_names_the_lane():
    a = LANE * 16
    a[9] = 0x1238
    with pytest.raises(ValueError, match=r"lane 9: ldmatrix row address 0x1238 is not 16-byte aligned"):
        fragsim.bank_conflicts("ldmatrix.x4", a)


def test_misaligned_address_in_a_batch_names_instruction_and_lane():
    a = np.tile(LANE * 8, (3, 1))
    a[2, 5] += 4
    with pytest.raises(ValueError, match=r"instruction 2, lane 5: .* is not 8-byte aligned"):
        fragsim.bank_conflicts("ld.shared.v2.b32", a)


@pytest.mark.parametrize("addrs,msg", [(np.arange(31), "32 byte offsets"), (LANE * 4.0, "integer"),
                                       (LANE * 4 - 4, "negative")])
def test_bad_addresses_are_rejected(addrs, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        fragsim.bank_conflicts("ld.shared.b32", addrs)


def test_unknown_op_lists_examples():
    with pytest.raises(ValueError, match="expected e.g. ldmatrix.x4"):
        fragsim.bank_conflicts("ld.global.b32", LANE * 4)


def test_importing_fragsim_does_not_import_numba():
    code = "import sys, fragsim; fragsim.bank_conflicts('ld.shared.b32', list(range(0, 128, 4))); " \
           "print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
