"""fragsim.trace_fragments: every mma of a run fed the right elements, each D element summed over each
k once and stored where it belongs -- kernels with one mistake injected each (tests/data/ptx/src/trace,
built by its build.sh) are caught with fragsim check's diagnosis, verified by re-running the CTA with
the fix; their correct twins, CuTe's tutorials and Triton's matmul trace clean."""

import struct
from pathlib import Path

import numpy as np
import pytest

from fragsim.trace import ids as T
from fragsim.trace import trace_fragments
from fragsim.trace.passes import make_plan

DATA = Path(__file__).parent / "data" / "ptx"
TRACE = DATA / "trace"


def ldsm(name: str, arch: str = "90a", M: int = 64, N: int = 64, K: int = 128, grid=(1, 1)):
    """The cp.async + ldmatrix + mma.sync HGEMM (64x64 tiles, 4 warps) with mistake ``name``; B is
    given as N x K, or K x N for the bkn_ builds (read with ldmatrix .trans)."""
    smem = 2 * 64 * 72 * 2 if name.startswith("pad") else 16384
    kn = name.startswith("bkn")
    args = [np.zeros((M, K), np.uint16), np.zeros((K, N) if kn else (N, K), np.uint16), np.zeros((M, N), np.float32),
            M, N, K]
    return trace_fragments(TRACE / f"ldsm_gemm.{name}.{arch}.ptx", None, grid=grid, block=128, dynamic_smem=smem,
                           args=args, a=0, b=1 if kn else "1.T", d=2)


def ldshared(name: str, arch: str = "90a"):
    """mma.sync fed by ld.shared.b32 fragment reads (2 warps per 16x64 tile), four CTAs."""
    M, N, K = 32, 128, 64
    args = [np.zeros((M, K), np.uint16), np.zeros((N, K), np.uint16), np.zeros((M, N), np.float32), M, N, K]
    return trace_fragments(TRACE / f"ldshared_mma.{name}.{arch}.ptx", None, grid=(2, 2), block=64, args=args,
                           a=0, b="1.T", d=2)


def wgmma(name: str):
    """One warpgroup, four wgmma m64n64k16 k-steps from 128B-swizzled shared memory by descriptors."""
    args = [np.zeros((64, 64), np.uint16), np.zeros((64, 64), np.uint16), np.zeros((64, 64), np.float32)]
    return trace_fragments(TRACE / f"wgmma_trace.{name}.90a.ptx", None, block=128, args=args, a=0, b="1.T", d=2)


def kinds(trace) -> list:
    return [f.kind for f in trace.first.findings]


# -- correct kernels ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name,arch", [("ok", "90a"), ("ok", "80"), ("pad_ok", "90a"), ("bkn_ok", "90a")])
def test_the_correct_ldmatrix_kernel_traces_clean(name, arch):
    t = ldsm(name, arch)
    assert t.ok and t.first is None and t.passes == 2
    assert t.mmas == 4 * 8 * 8 and t.stored == 64 * 64       # 4 warps x 8 mma x 8 k-steps; every D element


def test_partial_tiles_trace_clean_zero_filled_rows_are_padding():
    """M, N not multiples of the tile: cp.async zero-fills the rows past M and N (no element)."""
    t = ldsm("ok", M=96, N=72, grid=(2, 2))
    assert t.ok and t.stored == 96 * 72


def test_the_correct_ld_shared_kernel_traces_clean():
    assert ldshared("ok").ok and ldshared("ok", "80").ok


def test_the_correct_wgmma_kernel_traces_clean():
    t = wgmma("ok")
    assert t.ok and t.mmas == 4 and t.stored == 64 * 64


# -- each mistake, caught and diagnosed --------------------------------------------------------------

LDSM = {   # mistake -> (the operand at fault, the checker's finding kind, its words)
    "trans": ("A", "transposed", ".trans extra"),
    "bkn_notrans": ("B", "transposed", ".trans missing"),
    "khalves": ("A", "k-halves swapped", "swap the addresses of lanes 0-7 and 16-23"),
    "x4halves": ("B", "matrix order", "swap the addresses of lanes 0-7 and 16-23"),
    "off8": ("A", "offset", "rows off by 8"),
    "noswizzle": ("A", "swizzle missing", "apply no swizzle"),
    "kstep": ("B", "offset", "rows off by 16"),
    "pad_pitch": ("A", "pitch", "use pitch 144"),
}


@pytest.mark.parametrize("name", sorted(LDSM))
def test_each_injected_ldmatrix_mistake_is_named_by_the_checker_and_verified_on_the_kernel(name):
    operand, kind, words = LDSM[name]
    t = ldsm(name)
    bad = t.first
    assert not t.ok and bad.kind == "operand" and bad.operand == operand
    assert kind in kinds(t) and any(words in f.text for f in bad.findings)
    assert bad.verified is True and "receives exactly the elements" in bad.verification


@pytest.mark.parametrize("name", ["khalves", "noswizzle"])
def test_the_sm80_builds_are_diagnosed_alike(name):
    t = ldsm(name, "80")
    assert LDSM[name][1] in kinds(t) and t.first.verified


def test_k_halves_name_the_mma_its_registers_and_what_they_hold():
    bad = ldsm("khalves").first
    assert bad.text.startswith("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    assert bad.cta == (0, 0, 0) and bad.warp == 0 and bad.lanes == list(range(32))
    assert "A's k slots hold k 8..15, 0..7 where B's hold k 0..15" in bad.what
    e = bad.elements[0]
    assert (e.lane, e.want, e.got) == (0, (0, 0), (0, 8))      # lane 0's a0 holds A(0,8), must hold A(0,0)


def test_a_b_tile_swapped_between_n_tiles_shows_as_d_stored_elsewhere_and_is_traced_to_the_loads():
    """x4 halves swapped in B's ldmatrix: each mma is consistent on its own (B's columns 8..15 where
    0..7 belong), only where its D lands shows that B is the wrong n-tile."""
    t = ldsm("x4halves")
    assert t.counts["D elements not stored where they belong"] == 64 * 64
    assert "its D is stored at columns 0..7, so it must get B's columns 0..7" in t.first.what


def test_the_checkers_loads_and_tile_are_named_as_ptx_lines_and_matrix_coordinates():
    text = [f.text for f in ldsm("noswizzle").first.findings if f.kind == "context"][0]
    assert "load 0 is line" in text and "(ldmatrix.x4)" in text
    assert "64x64 f16 row-major (128-byte rows), layout Swizzle<3,4,3>" in text and "A(row 0 + r, k 0 + c)" in text


def test_with_lineinfo_the_cuda_lines_of_the_mma_and_its_loads_are_named():
    args = [np.zeros((64, 128), np.uint16), np.zeros((64, 128), np.uint16), np.zeros((64, 64), np.float32), 64, 64, 128]
    t = trace_fragments(TRACE / "ldsm_gemm.khalves.90a.lineinfo.ptx", None, block=128, dynamic_smem=16384, args=args,
                        a=0, b="1.T", d=2)
    assert t.first.source == "tests/data/ptx/src/trace/ldsm_gemm.cu:129"      # the mma asm, lines 129-134
    assert "(tests/data/ptx/src/trace/ldsm_gemm.cu:92) (ldmatrix.x4)" in t.first.findings[-1].text


def test_an_epilogue_storing_rows_swapped_is_a_store_mistake_whose_fix_cannot_be_run():
    bad = ldsm("store").first
    assert bad.kind == "store" and bad.operand == "D"
    assert [f.text for f in bad.findings] == ["rows off by 8: d0, d1 land at D(r+8,c) where D(r,c) belongs",
                                              "rows off by 8: d2, d3 land at D(r-8,c) where D(r,c) belongs"]
    assert bad.verified is None and "cannot rewrite in a PTX kernel" in bad.verification


LDSHARED = {"pitch": "pitch", "khalves": "k-halves swapped", "off8": "offset"}


@pytest.mark.parametrize("name", sorted(LDSHARED))
def test_each_injected_ld_shared_mistake_is_named_and_verified(name):
    t = ldshared(name)
    assert LDSHARED[name] in kinds(t) and t.first.operand == "A" and t.first.verified is True
    assert "ld.shared" in t.first.findings[-1].text


def test_a_register_the_compiler_feeds_to_two_a_registers_is_checked_as_two_loads():
    """off8 reads row g twice: nvcc loads it once and passes the register as a0 and a1 (and a2, a3)."""
    t = ldshared("off8")
    assert "{%r216, %r216, %r218, %r218}" in t.first.text
    assert "rows off by 8: r1, r3 hold tile(r-8,c)" in t.first.findings[0].text


WGMMA = {"noswizzle": ("A", "swizzle mode"), "sbo": ("B", "SBO"), "advance": ("A", "k-step advance")}


@pytest.mark.parametrize("name", sorted(WGMMA))
def test_each_injected_descriptor_mistake_is_named_by_check_wgmma_and_verified(name):
    operand, kind = WGMMA[name]
    t = wgmma(name)
    assert t.first.operand == operand and kind in kinds(t)
    assert t.first.verified is True and "reads exactly the elements" in t.first.verification


def test_the_k_step_advance_is_judged_over_the_warpgroups_k_steps():
    t = wgmma("advance")
    assert "k-step 1" in t.first.findings[-1].text        # the second wgmma is the first one read wrongly
    text = [f.text for f in t.first.findings if f.kind == "k-step advance"][0]
    assert "advances the start by 16 bytes per k-step (K in elements, not bytes)" in text


# -- real kernels trace clean ------------------------------------------------------------------------

EMPTY, I32 = b"\0", struct.Struct("<i").pack


def test_cutes_tutorial_hgemm_traces_clean():
    """CuTe's sgemm_sm80 (cp.async, SM75_U32x4_LDSM_N, Swizzle<3,3,3>, mma f16), C column-major."""
    M = N = 128
    K = 64
    args = [struct.pack("<iii", M, N, K), EMPTY, np.zeros((M, K), np.uint16), I32(K), EMPTY, EMPTY, EMPTY,
            np.zeros((N, K), np.uint16), I32(K), EMPTY, EMPTY, EMPTY, np.zeros((N, M), np.uint16), I32(M), EMPTY,
            EMPTY, np.float16(1).tobytes(), np.float16(0).tobytes()]
    t = trace_fragments(DATA / "cutlass_sgemm_sm80.sm80.ptx", "gemm_device", block=128, dynamic_smem=98304,
                        args=args, a=2, b="7.T", d="12.T")
    assert t.ok and t.stored == M * N and t.mmas == 512


@pytest.mark.parametrize("major", ["K", "MN"])
def test_cutes_wgmma_tutorial_traces_clean(major):
    M = N = K = 128
    a_shape, b_shape, ld = ((M, K), (N, K), K) if major == "K" else ((K, M), (K, N), M)
    args = [struct.pack("<iii", M, N, K), EMPTY, np.zeros(a_shape, np.uint16), I32(ld), EMPTY, EMPTY,
            np.zeros(b_shape, np.uint16), I32(ld), EMPTY, EMPTY, np.zeros((N, M), np.uint16), I32(M),
            struct.pack("<II", 1, 0), np.float16(1).tobytes(), np.float16(0).tobytes()]
    t = trace_fragments(DATA / "cutlass_wgmma_sm90.sm90a.ptx", "MajorE0" if major == "K" else "MajorE1", block=128,
                        dynamic_smem=98304, args=args, a=2 if major == "K" else "2.T",
                        b="6.T" if major == "K" else 6, d="10.T")
    assert t.ok and t.stored == M * N


@pytest.mark.parametrize("cc", ["80", "90"])
def test_tritons_matmul_traces_clean_masks_and_partial_tiles_included(cc):
    """M, N, K = 100, 72, 80: the last k tile and the edge tiles are masked (other=0.0)."""
    M, N, K = 100, 72, 80
    args = [np.zeros((M, K), np.uint16), np.zeros((K, N), np.uint16), np.zeros((M, N), np.uint16)] + \
        [np.uint32(x) for x in (M, N, K, K, N, N)] + [np.uint64(0), np.uint64(0)]
    t = trace_fragments(DATA / f"triton_matmul.sm{cc}.ptx", None, grid=(2, 2), block=128, dynamic_smem=49152,
                        args=args, a=0, b=1, d=2)
    assert t.ok and t.stored == M * N


def test_an_epilogue_that_scales_d_leaves_the_stores_untraced_and_says_so():
    """CuTe's alpha = 0.5: D's identities are halved, no longer identities."""
    M = N = 128
    K = 64
    args = [struct.pack("<iii", M, N, K), EMPTY, np.zeros((M, K), np.uint16), I32(K), EMPTY, EMPTY, EMPTY,
            np.zeros((N, K), np.uint16), I32(K), EMPTY, EMPTY, EMPTY, np.zeros((N, M), np.uint16), I32(M), EMPTY,
            EMPTY, np.float16(0.5).tobytes(), np.float16(0).tobytes()]
    t = trace_fragments(DATA / "cutlass_sgemm_sm80.sm80.ptx", "gemm_device", block=128, dynamic_smem=98304,
                        args=args, a=2, b="7.T", d="12.T")
    assert t.ok and t.stored == 0
    assert len(t.untraced) == 1 and "the epilogue changes the accumulators' values" in t.untraced[0]


# -- the passes ------------------------------------------------------------------------------------

def test_coordinates_wider_than_one_identity_take_one_pass_per_digit(monkeypatch):
    """4-bit identities (15 values a pass): rows, columns and k of 64 x 64 x 128 take two digits each,
    D's places (f32: one digit) ride along: four passes, and the mistakes are still caught."""
    monkeypatch.setitem(T.CODES, 16, T.IdCode(16, 0, 4, 15))
    t = ldsm("ok")
    assert t.ok and t.passes == 4
    assert "k-halves swapped" in kinds(ldsm("khalves"))


def test_the_plan_sends_rows_and_columns_then_k_and_d_from_the_pass_that_completes_them():
    c16 = T.CODES[16]
    p = make_plan(64, 64, 64, c16, c16, 2048)               # f16 output: D places 0..4095 in 2 digits
    assert p.kinds == ("rc", "k") and p.d_first == 0 and p.d_digits == 2
    p = make_plan(40000, 64, 64, c16, c16, 1 << 24)          # rows need 2 digits of 15 bits
    assert p.kinds == ("rc", "rc", "k") and p.d_first == 1


def test_identities_survive_the_bits_a_tf32_conversion_keeps():
    """32-bit elements carry the identity in bits 13..29: cvt.rna.tf32.f32 keeps them, and the
    exponent is never all ones (no NaN to canonicalise)."""
    c = T.CODES[32]
    v = np.arange(1, c.base + 1, 997)
    w = c.encode(v, False).view(np.uint32)
    assert not (w & 0x1FFF).any() and ((w >> 23) & 0xFF).max() < 0xFF
    assert np.array_equal(c.decode(w, False), v)
    assert (c.decode(c.encode(v, True), False) == T.OTHER).all()      # an element of B where A's belongs


def test_the_callers_arrays_stay_as_they_were():
    A = np.arange(64 * 128, dtype=np.uint16).reshape(64, 128)
    D = np.full((64, 64), 3.0, np.float32)
    trace_fragments(TRACE / "ldsm_gemm.ok.90a.ptx", None, block=128, dynamic_smem=16384,
                    args=[A, np.zeros((64, 128), np.uint16), D, 64, 64, 128], a=0, b="1.T", d=2)
    assert np.array_equal(A, np.arange(64 * 128, dtype=np.uint16).reshape(64, 128)) and (D == 3.0).all()


# -- refusals ----------------------------------------------------------------------------------------

def _args(M=64, N=64, K=128, a_dtype=np.uint16):
    return [np.zeros((M, K), a_dtype), np.zeros((N, K), np.uint16), np.zeros((M, N), np.float32), M, N, K]


@pytest.mark.parametrize("kw,message", [
    ({"a": "x"}, "a 'x': expected POS, POS.T"),
    ({"a": 9}, "a 9: args has 6 values, no position 9"),
    ({"a": 3}, "a 3: args[3] is a int, not an array"),
    ({"b": 1}, "b: B is 64x128 but A is 64x128: B must have K = 128 rows"),
    ({"d": "1.T"}, "d: D is 128x64, but A (64x128) times B (128x64) is 64x64"),
    ({"a": 2.0}, "a must be the position of A's array"),
])
def test_bad_matrix_specs_are_one_line_errors_naming_the_parameter(kw, message):
    spec = {"a": 0, "b": "1.T", "d": 2, **kw}
    with pytest.raises((ValueError, TypeError)) as e:
        trace_fragments(TRACE / "ldsm_gemm.ok.90a.ptx", None, block=128, dynamic_smem=16384, args=_args(), **spec)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_1d_array_needs_its_shape():
    args = _args()
    args[0] = args[0].reshape(-1)
    with pytest.raises(ValueError, match="args\\[0\\] is 1-D; give its shape as stored, e.g. '0:ROWSxCOLS'"):
        trace_fragments(TRACE / "ldsm_gemm.ok.90a.ptx", None, block=128, dynamic_smem=16384, args=args, a=0,
                        b="1.T", d=2)
    assert trace_fragments(TRACE / "ldsm_gemm.ok.90a.ptx", None, block=128, dynamic_smem=16384, args=args,
                           a="0:64x128", b="1.T", d=2).ok


def test_a_kernel_that_converts_a_on_the_way_is_refused_with_the_line():
    with pytest.raises(ValueError, match=r"operand A takes 16-bit \.f16 elements, but A's array \(args\[0\], "
                                         r"float32\) holds 32-bit ones: the kernel converts A"):
        trace_fragments(TRACE / "ldsm_gemm.ok.90a.ptx", None, block=128, dynamic_smem=16384,
                        args=_args(a_dtype=np.float32), a="0:64x128", b="1.T", d=2)


def test_a_kernel_without_tensor_core_instructions_has_nothing_to_trace():
    args = [np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32), 16, 16, 16]
    with pytest.raises(ValueError, match="executed no mma.sync or wgmma: nothing to trace"):
        trace_fragments(DATA / "gemm_ldshared.sm90a.ptx", None, block=(16, 16), args=args, a=0, b=1, d=2)


def test_the_picture_is_the_checkers_expected_vs_received_fragment_map():
    from fragsim.check.report import CheckReport

    t = ldsm("khalves")
    assert isinstance(t.first.picture, CheckReport) and t.first.picture is t.first.report
    assert t.first.picture.title.startswith("mma at line 566, CTA (0,0,0) warp 0: load of operand A")
    store = ldsm("store").first.picture                        # no checker report: the mma's own map of D
    assert isinstance(store, CheckReport) and store.kind == "store" and len(store.mismatches) == 128
