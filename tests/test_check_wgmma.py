"""fragsim.check_wgmma: does a wgmma descriptor read the intended operand from where the tile sits, and
if not, what it reads instead and the descriptor that fixes it (one documented mistake each)."""

import numpy as np
import pytest

import fragsim
from fragsim import Swizzle, Tile
from fragsim.check.wgmma import parse_form
from fragsim.layout.descriptor import MatrixDescriptor as D

BF16 = "m64n64k16.f32.bf16.bf16"
TMA128 = Tile(64, 64, "bf16", swizzle=Swizzle(3, 4, 3))          # a 64 x 64 bf16 TMA box, 128B swizzle
GOOD = {"start_address": "k * 32", "leading_byte_offset": 16, "stride_byte_offset": 1024, "swizzle": "128B"}


def check(desc, tile=TMA128, **kw):
    return fragsim.check_wgmma(BF16, "A", tile, desc, **kw)


def test_the_cute_descriptor_of_a_128b_tma_box_reads_every_k_step():
    r = check(GOOD)
    assert r.ok and r.steps_ok == [True] * 4 and not r.mismatches and not r.findings
    assert r.compared == 4 * 64 * 16


def test_the_64_bit_value_and_a_list_per_k_step_are_the_same_descriptors():
    vals = [D(32 * s, 16, 1024, 0, "128B").encode() for s in range(4)]
    assert check(vals).ok
    assert check("desc + 2 * k", variables={"desc": vals[0]}).ok
    assert check(lambda s: D(32 * s, 16, 1024, 0, "128B")).ok


def test_a_wrong_sbo_is_found_and_fixed():
    r = check({**GOOD, "stride_byte_offset": 512})
    assert not r.ok and r.kinds == ["SBO", "fix"]
    assert all(f.stride_byte_offset == 1024 for f in r.fix)
    m = r.mismatches[0]
    assert m.element == (8, 0) and m.want == (8, 0) and m.got == (4, 0)       # row 8 read from 512 B = row 4


def test_a_wrong_swizzle_mode_is_found_and_fixed():
    r = check({**GOOD, "swizzle": "64B"})
    assert "swizzle mode" in r.kinds and {f.swizzle for f in r.fix} == {"128B"}


def test_the_k_step_advance_in_elements_instead_of_bytes_is_named():
    r = check({**GOOD, "start_address": "k * 16"})
    assert r.kinds == ["k-step advance", "fix"]
    assert "K in elements, not bytes" in r.diagnosis[0] and "start + 32 * k" in r.diagnosis[0]
    assert [f.start_address for f in r.fix] == [0, 32, 64, 96]
    assert r.steps_ok == [True, False, False, False]


def test_a_start_that_never_advances_reads_the_first_k_columns_every_step():
    r = check(D(0, 16, 1024, 0, "128B"), steps=4)
    assert "does not advance the start" in r.diagnosis[0]
    m = next(m for m in r.mismatches if m.step == 1)
    assert m.got == (m.want[0], m.want[1] - 16)


def test_a_k_advance_of_a_whole_swizzle_row_is_refused_and_fixed_inside_the_atom():
    """Advancing by 128 bytes (a row of the atom) instead of 32 reads the next row."""
    r = check({**GOOD, "start_address": "k * 128"})
    assert "k-step advance" in r.kinds and [f.start_address for f in r.fix] == [0, 32, 64, 96]


def test_a_wrong_start_address_is_found():
    t = TMA128.with_layout(base=0x2000)
    r = check(D(0x1000, 16, 1024, 0, "128B"), tile=t)
    assert r.kinds == ["start address", "fix"] and r.fix[0].start_address == 0x2000


def test_an_mn_major_tile_read_k_major_is_fixed_with_imm_trans():
    """A column-order tile (M contiguous, 128B swizzled: the MN-major atom) needs imm-trans-a = 1."""
    t = Tile(64, 16, "bf16", order="col", swizzle=Swizzle(3, 4, 3))
    r = check(D(0, 16, 1024, 0, "128B"), tile=t)
    assert r.major == "MN" and r.kinds[0] == "majorness" and "imm-trans-a = 1" in r.diagnosis[0]
    assert fragsim.check_wgmma(BF16, "A", t, r.fix[0], major="MN").ok


def test_a_padded_tile_has_no_descriptor_and_says_why():
    t = Tile(64, 64, "bf16", pitch=144)
    r = check(D(0, 16, 1152, 0, "none"), tile=t)
    assert r.fix is None and r.kinds == ["not canonical"]


def test_operand_b_has_n_rows():
    t = Tile(128, 64, "bf16", swizzle=Swizzle(3, 4, 3))
    r = fragsim.check_wgmma("m64n128k16.f32.bf16.bf16", "B", t, GOOD)
    assert r.ok and r.compared == 4 * 128 * 16


def test_the_fix_keeps_fields_the_layout_does_not_use():
    """K-major swizzled layouts do not use LBO: a wrong SBO's fix leaves the user's LBO alone."""
    r = check({**GOOD, "leading_byte_offset": 0x100, "stride_byte_offset": 64})
    assert r.fix[0].leading_byte_offset == 0x100 and r.kinds == ["SBO", "fix"]


def test_a_mismatch_outside_the_tile_says_so():
    r = check({**GOOD, "stride_byte_offset": 4096})
    m = next(m for m in r.mismatches if m.got is None)
    assert "no tile element" in str(m)


@pytest.mark.parametrize("form, n, k, a", [
    ("m64n64k16.f32.bf16.bf16", 64, 16, "bf16"), ("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32", 8, 8, "tf32"),
    ("m64n256k32.f16.e4m3.e5m2", 256, 32, "e4m3"), ("m64n32k32.satfinite.s32.s8.u8", 32, 32, "s8"),
])
def test_forms_parse_in_ptx_spelling(form, n, k, a):
    f = parse_form(form)
    assert (f.n, f.k, f.types["A"]) == (n, k, a)


@pytest.mark.parametrize("args, error, words", [
    ((BF16, "C", TMA128, GOOD), ValueError, "operand must be one of"),
    (("m64n64k8.f32.bf16.bf16", "A", TMA128, GOOD), ValueError, "take K = 16"),
    (("m64n12k16.f32.bf16.bf16", "A", TMA128, GOOD), ValueError, "N must be 8..256 in steps of 8"),
    (("m64n64k16.f32.bf16.f16", "A", TMA128, GOOD), ValueError, "must be the same"),
    (("m16n8k16.f32.bf16.bf16", "A", TMA128, GOOD), ValueError, "wgmma shapes are m64nNkK"),
    (("m64n64k8.f32.tf32.tf32", "A", TMA128, GOOD), ValueError, "tile holds bf16"),
    ((BF16, "A", Tile(32, 64, "bf16"), GOOD), ValueError, "must hold rows 0..63"),
    ((BF16, "A", TMA128, "k * "), ValueError, "descriptor expression"),
    ((BF16, "A", TMA128, {**GOOD, "stride": 4}), ValueError, "unknown field 'stride'"),
    ((BF16, "A", TMA128, 3.5), TypeError, "descriptor must be"),
    ((BF16, "A", TMA128, [1 << 14]), ValueError, "1 descriptors for|unused bits"),
    ((BF16, "A", "64x64", GOOD), ValueError, "tile spec"),
])
def test_bad_input_is_one_line_naming_the_parameter(args, error, words):
    with pytest.raises(error, match=words) as e:
        fragsim.check_wgmma(*args)
    assert "\n" not in str(e.value)


def test_the_report_text_and_json_carry_the_verdict_and_the_fix():
    r = check({**GOOD, "stride_byte_offset": 512})
    text = str(r)
    assert "WRONG:" in text and "stride_byte_offset=1024 (64 encoded)" in text and "k-step 0: A[8,0]" in text
    d = r.to_dict()
    assert d["ok"] is False and d["fix"][0]["stride_byte_offset"] == 1024 and d["mismatches"][0]["got"] == [4, 0]


def test_every_mismatch_is_an_element_whose_address_differs():
    r = check({**GOOD, "swizzle": "32B"})
    from fragsim.layout.descriptor import operand_addresses
    got = operand_addresses(r.descriptors[0], rows=64, k=16, elem_bits=16)
    want = TMA128.addresses()[:, :16]
    assert sum(m.step == 0 for m in r.mismatches) == int((got != want).sum())
    assert np.all([TMA128.offset(*m.got) == m.address for m in r.mismatches if m.got is not None])

