"""check_tma_wgmma: the elements the TMA writes are the ones each wgmma k-step reads through its
descriptor, or the mismatch named and its fix verified (PTX ISA 9.7.15.5.1 matrix descriptors;
cuTensorMapEncodeTiled's swizzle modes)."""

import pytest

from fragsim.check.tma_wgmma import check_tma_wgmma
from fragsim.layout.descriptor import MatrixDescriptor as D
from fragsim.tma import TensorMap

BF16 = "m64n64k16.f32.bf16.bf16"
F16 = "m64n64k16.f16.f16.f16"
# tests/data/ptx/src/tma_wgmma.cu: A (M x K) bf16, map dims (K, M), box 64 x 64, 128B swizzle into a
# 1024-byte aligned buffer; desc(smem + 32 * k): LBO 16, SBO 1024, 128B
K, M = 200, 100
TMA_WGMMA = TensorMap("bf16", (K, M), (K * 2,), (64, 64), swizzle="128B")
RIGHT = D(0x400, 16, 1024, 0, "128B")


def check(desc=RIGHT, tmap=TMA_WGMMA, dst=0x400, advance=32, **kw):
    return check_tma_wgmma(tmap, BF16, kw.pop("operand", "A"), desc, dst=dst, advance=advance, **kw)


def test_tma_wgmma_cu_configuration_is_right():
    """The own kernel's maps and descriptors: 4 k-steps of the 64-wide box, both operands (B is Bt, K-major)."""
    r = check()
    assert r.ok and r.compared == 4 * 64 * 16 and not r.findings
    assert check(operand="B").ok


def test_partial_tile_box_at_the_edge_is_right():
    """The last k-tile of K = 200 (coords (192, 64)): the box's out-of-bound elements are still its own."""
    assert check(coords=(192, 64)).ok


def test_cutlass_tn_k_major_configuration_is_right():
    """CuTe's wgmma_tma_sm90 TN: f16 box (64, 128) = the whole 128 x 64 stage, K-major SW128 atoms along M
    (SBO 1024), the second 64 rows 8192 bytes on, k-steps 32 bytes apart."""
    tm = TensorMap("f16", (128, 128), (256,), (64, 128), swizzle="128B")
    assert check_tma_wgmma(tm, F16, "A", D(0, 16, 1024, 0, "128B"), dst=0, advance=32).ok
    assert check_tma_wgmma(tm, F16, "B", D(8192, 16, 1024, 0, "128B"), dst=0, at=(0, 64), advance=32).ok


def test_cutlass_nt_mn_major_configuration_is_right():
    """CuTe's wgmma_tma_sm90 NT: sA ((64,2),(8,8)):((1,512),(64,1024)) f16 filled by 16 boxes of 64 x 8
    (atom (i, j) at (i + 2 j) * 1024 bytes); MN-major SW128 descriptor, SBO 2048 (the next 8 k),
    k-steps 4096 bytes apart; the second 64 rows start 1024 bytes on."""
    tm = TensorMap("f16", (128, 128), (256,), (64, 8), swizzle="128B")
    boxes = [((64 * i, 8 * j), (i + 2 * j) * 1024) for j in range(8) for i in range(2)]
    r = check_tma_wgmma(tm, F16, "A", D(0, 1024, 2048, 0, "128B"), boxes=boxes, major="MN", advance=4096)
    assert r.ok and len(r.descriptors) == 4
    assert check_tma_wgmma(tm, F16, "A", D(1024, 1024, 2048, 0, "128B"), boxes=boxes, major="MN", at=(64, 0),
                           advance=4096).ok


def kinds(r):
    return set(r.kinds)


def test_sbo_wrong_named_in_bytes_and_encoded():
    r = check(D(0x400, 16, 512, 0, "128B"))
    assert not r.ok and "SBO" in kinds(r)
    assert any("stride_byte_offset=1024 (64 encoded)" in t for t in r.diagnosis)
    assert r.fix[0].stride_byte_offset == 1024 and check(r.fix[0]).ok


def test_k_advance_in_elements_not_bytes():
    r = check(advance=16)
    assert not r.ok and "k-step advance" in kinds(r)
    assert any("K in elements, not bytes" in t for t in r.diagnosis)
    assert check(r.fix[0]).ok and [f.start_address - 0x400 for f in r.fix] == [0, 32, 64, 96]


def test_k_advance_not_shifted_right_by_4():
    """32 added to the 64-bit value (K bytes where the descriptor holds address >> 4): 512 bytes a step."""
    r = check(advance=512)
    assert any("address >> 4" in t for t in r.diagnosis)


def test_swizzle_modes_differ_descriptor_side():
    r = check(D(0x400, 16, 1024, 0, "64B"))
    assert "swizzle differs" in kinds(r)
    assert any("swizzle '128B' (the tensor map)" in t and "'64B'" in t for t in r.diagnosis)
    assert r.fix[0].swizzle == "128B" and r.tma_fix is None


def test_tma_swizzle_off_descriptor_still_128b():
    """The "87% wrong" report: the map without a swizzle, the descriptor 128B: no descriptor reads
    128-byte rows unswizzled, so the fix is the map's swizzle, verified by the check."""
    plain = TensorMap("bf16", (K, M), (K * 2,), (64, 64), swizzle="none")
    r = check(tmap=plain)
    assert not r.ok and r.fix is None and "swizzle differs" in kinds(r)
    assert r.tma_fix.swizzle == "128B" and check(tmap=r.tma_fix).ok


def test_box_not_1024_aligned_with_base_offset_zero_is_right():
    """Both sides swizzle on the absolute shared address (the H100-validated models): a box at 0x580
    (128B pattern row 3) read from start 0x580 with base_offset 0 is right."""
    assert check(D(0x580, 16, 1024, 0, "128B"), dst=0x580).ok


def test_base_offset_set_for_a_misaligned_box_is_wrong():
    """base_offset = (dst >> 7) & 7, the ISA's words read literally, shifts the descriptor's pattern
    away from the TMA's: diagnosed as alignment, fix base_offset 0, verified."""
    r = check(D(0x580, 16, 1024, 3, "128B"), dst=0x580)
    assert not r.ok and "alignment" in kinds(r)
    assert any("not 1024-byte aligned" in t and "base_offset=0, not 3" in t for t in r.diagnosis)
    assert r.fix[0].base_offset == 0 and check(r.fix[0], dst=0x580).ok


def test_box_narrower_than_swizzle_span():
    """A 32-wide bf16 box (64-byte rows) under the 128B swizzle: rows a 128-byte line apart, so a
    dense 64B-swizzle descriptor (SBO 512) is wrong; both fixes verified."""
    narrow = TensorMap("bf16", (K, M), (K * 2,), (32, 64), swizzle="128B")
    r = check(D(0x400, 16, 512, 0, "64B"), tmap=narrow)
    assert not r.ok and {"box narrower than swizzle", "swizzle differs", "tma fix"} <= kinds(r)
    assert r.fix[0] == D(0x400, 16, 1024, 0, "128B") and check(r.fix[0], tmap=narrow).ok
    assert r.tma_fix.swizzle == "64B" and check(D(0x400, 16, 512, 0, "64B"), tmap=r.tma_fix).ok


def test_k_major_box_read_with_the_transpose_flag():
    """imm-trans-b = 1 on a K-major box (K contiguous, k_dim 0): the fix is K-major, verified."""
    r = check(operand="B", major="MN", k_dim=0, advance=32)
    assert not r.ok and "K-major vs MN-major" in kinds(r) and r.major == "K"
    assert check(r.fix[0], operand="B").ok


def test_mn_major_box_read_without_the_transpose_flag():
    """An MN-major box (N contiguous, k_dim 1) read with imm-trans = 0: the fix sets it."""
    tm = TensorMap("bf16", (64, 64), (128,), (64, 16), swizzle="128B")
    d = D(0, 1024, 1024, 0, "128B")
    assert check_tma_wgmma(tm, BF16, "B", d, dst=0, major="MN").ok
    r = check_tma_wgmma(tm, BF16, "B", d, dst=0, major="K", k_dim=1)
    assert not r.ok and "K-major vs MN-major" in kinds(r) and r.major == "MN"


def test_element_no_box_holds_is_named():
    r = check(steps=5)                   # a fifth k-step past the 64-wide box
    assert not r.ok and "box coverage" in kinds(r) and r.fix is None


def test_mismatch_names_step_core_matrix_and_global_coordinates():
    m = check(advance=16).mismatches[0]
    assert (m.step, m.element, m.core, m.want, m.got) == (1, (0, 0), (0, 0), (16, 0), (8, 0))
    assert str(m) == "k-step 1: A[0,0] (core matrix 0,0) reads 0x410 = global (8, 0), wants global (16, 0)"


def test_descriptor_forms_of_check_wgmma():
    """A list per k-step and an expression in k give the same verdict as advance."""
    assert check([RIGHT.advance(32 * s) for s in range(4)], advance=None).ok
    assert check({"start_address": "0x400 + 32 * k", "leading_byte_offset": 16, "stride_byte_offset": 1024,
                  "swizzle": "128B"}, advance=None).ok


@pytest.mark.parametrize("kw, err, words", [
    (dict(tmap="x"), TypeError, "tmap must be a fragsim.TensorMap"),
    (dict(dst=0x440), ValueError, "128-byte aligned"),
    (dict(tmap=TensorMap("f32", (64, 64), (256,), (32, 64), swizzle="128B")), ValueError, r"tmap holds f32 .* is \.bf16"),
    (dict(desc=[RIGHT, RIGHT]), ValueError, "advance goes with one descriptor"),
    (dict(dst=None), TypeError, "dst"),
    (dict(k_dim=2), ValueError, "k_dim"),
])
def test_bad_input_is_one_line(kw, err, words):
    with pytest.raises(err, match=words) as e:
        check(**kw)
    assert "\n" not in str(e.value)


def test_report_json_and_text():
    r = check(advance=16)
    d = r.to_dict()
    assert d["check"] == "tma_wgmma" and d["loads"] == [{"coords": [0, 0], "dst": 0x400}]
    assert "WRONG: 3,072 of 4,096" in str(r)


# gpu_check/ptx/kernels.py's TMA_CHECK cases (src/tma_wgmma_check.cu's -D knobs): the check's verdict on
# each configuration is the product the H100 run is predicted to give (fragsim.run_kernel agrees)
KNOBS = {"tma_check_right": {}, "tma_check_map_noswizzle": {"map": "none"}, "tma_check_sbo512": {"sbo": 512},
         "tma_check_kadv16": {"kadv": 16}, "tma_check_swz64": {"swz": "64B"}, "tma_check_shift384": {"shift": 384},
         "tma_check_shift384_base3": {"shift": 384, "base": 3}, "tma_check_transb": {"trans": True}}


@pytest.mark.parametrize("name", sorted(KNOBS))
def test_gpu_check_cases_verdict_and_finding(name):
    from fragsim.gpu_check.ptx import kernels as P
    _, swz, want, kind = P.TMA_CHECK[name]
    kn = KNOBS[name]
    tm = TensorMap("bf16", (128, 64), (256,), (64, 64), swizzle=kn.get("map", "128B"))
    assert swz == tm.swizzle
    dst = 0x400 + kn.get("shift", 0)
    d = D(dst, 16, kn.get("sbo", 1024), kn.get("base", 0), kn.get("swz", "128B"))
    for op in ("A", "B"):
        major = "MN" if kn.get("trans") and op == "B" else "K"
        r = check_tma_wgmma(tm, BF16, op, d, dst=dst, advance=kn.get("kadv", 32), major=major, k_dim=0)
        assert r.ok == (want == "right") or op == "A" and kn.get("trans")
        if want == "wrong" and not (op == "A" and kn.get("trans")):
            assert kind in r.kinds and any("verified" in t for t in r.diagnosis)
