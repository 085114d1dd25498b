"""cvt with a floating-point type (fragsim.ptx.semantics.convert): the H100 recording replayed, the forms
ptxas takes, and the PTX ISA's documented cases, one property each.  Values are raw bits."""

import os

import numpy as np
import pytest

import fragsim
from fragsim.facts.formats import FORMATS
from fragsim.gpu_check.ptx import convert as P
from fragsim.ptx.isa import table
from fragsim.ptx.isa.table import resolve
from fragsim.ptx.isa.table import resolve as resolve_cvt
from fragsim.ptx.semantics import Spec, UnsupportedInstruction
from fragsim.ptx.semantics.convert_round import float_parts, round_float
from fragsim.ptx.types import TYPES

CORPUS = "tests/data/ptx/cvt"
GROUPS = sorted(f for f in os.listdir(CORPUS) if f.endswith(".npz"))

NAN32, INF32, NEG = 0x7FFFFFFF, 0x7F800000, 0x80000000
MIN_SUB32 = 0x00000001


def cvt(text: str, *srcs: int):
    """The destination bits of ``text`` for source bits ``srcs`` (one case), as a Python int."""
    op, *mods = text.split(".")
    sem = resolve_cvt(Spec(op, tuple(mods), 1, len(srcs)))
    args = [np.array([s], TYPES[t].dtype) for s, t in zip(srcs, sem.src)]
    return int(sem.fn(*args)[0][0])


def f32(x: float) -> int:
    return int(np.float32(x).view(np.uint32))


def f16(x: float) -> int:
    return int(np.float16(x).view(np.uint16))


def f64(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


# ---------------------------------------------------------------------------------- the H100 recording

@pytest.mark.parametrize("group", GROUPS)
def test_the_h100_recording_replays_bit_for_bit(group):
    """Every variant of a source type, on the probes and bulk cases recorded on the H100
    (fragsim gpu-check --family ptx_cvt --record), and every case that once mismatched."""
    rec = P.load(os.path.join(CORPUS, group))
    assert rec.meta["device"].startswith("NVIDIA H100")
    for text, d in rec.outputs.items():
        assert np.array_equal(P.emulate(text, rec.a, rec.b), d), text
        for _, a, b, dd in rec.mismatches_of(text):
            assert np.array_equal(P.emulate(text, a, b), dd), text


@pytest.mark.parametrize("group", GROUPS)
def test_the_kernels_the_h100_ran_give_its_bits_through_run_kernel(group):
    """The very PTX of each variant (ptx_cvt.module), run by fragsim.run_kernel on the recorded source
    registers: parser, machine (narrow registers, sign extension) and semantics together."""
    rec = P.load(os.path.join(CORPUS, group))
    for text, want in rec.outputs.items():
        ra, rd = P.registers(resolve_cvt(P.spec(text)))
        a = rec.a.astype(f"uint{ra}")
        d = np.zeros(a.size, f"uint{rd}")
        fragsim.run_kernel(P.module([text], 90), P.kernel_name(0), grid=(-(-a.size // P.THREADS),),
                           block=P.THREADS, args=[a, a if rec.b is None else rec.b, d, np.uint32(a.size)])
        assert np.array_equal(d, want), text


def test_the_recording_holds_every_row_of_the_family():
    """Each recorded variant is a form of a cvt row, and every row's forms were recorded (ptxas takes
    .relu before or after .satfinite on the fp8 forms: the recording has it before)."""
    recorded = set()
    for group in GROUPS:
        recorded |= set(P.load(os.path.join(CORPUS, group)).outputs)
    rows = {id(table.lookup("cvt", tuple(v.split(".")[1:]))[0]) for v in recorded}
    assert rows == {id(r) for r in table.ROWS if r.status.family == "ptx_cvt"}


def _admitted(text: str) -> bool:
    try:
        return table.lookup("cvt", tuple(text.split(".")[1:]))[0].status.family == "ptx_cvt"
    except UnsupportedInstruction:
        return False


def test_fragsim_takes_exactly_the_cvt_forms_ptxas_takes_for_sm_90a():
    """Of every modifier combination tried, the resolver accepts those ptxas 13.0 assembles and refuses
    the rest (tests/data/ptx/cvt/ptxas_sm90a.txt, written by ptx_cvt.ptxas_accepts)."""
    with open(os.path.join(CORPUS, "ptxas_sm90a.txt")) as f:
        accepted = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert [v for v in P.candidates() if _admitted(v)] == accepted
    assert len(P.candidates()) > 5 * len(accepted)       # the refusals were tried too


# ---------------------------------------------------------------------------------- packing

def test_f16x2_from_two_f32_puts_a_in_the_upper_half_and_b_in_the_lower():
    assert cvt("cvt.rn.f16x2.f32", f32(1.0), f32(2.0)) == 0x3C004000


def test_bf16x2_from_two_f32_puts_a_in_the_upper_half():
    assert cvt("cvt.rz.bf16x2.f32", f32(-1.0), f32(0.5)) == 0xBF803F00


def test_e4m3x2_from_two_f32_puts_a_in_the_upper_byte():
    assert cvt("cvt.rn.satfinite.e4m3x2.f32", f32(1.0), f32(-2.0)) == 0x38C0


def test_e5m2x2_from_f16x2_converts_each_half_in_place():
    assert cvt("cvt.rn.satfinite.e5m2x2.f16x2", (f16(1.0) << 16) | f16(-0.5)) == 0x3CB8


def test_f16x2_from_e4m3x2_converts_the_upper_byte_into_the_upper_half():
    assert cvt("cvt.rn.f16x2.e4m3x2", 0x38C0) == (f16(1.0) << 16) | f16(-2.0)


# ---------------------------------------------------------------------------------- rounding

def test_rn_rounds_a_halfway_case_to_even():
    """1 + 2**-11 lies halfway between f16 neighbours 1 and 1 + 2**-10: rn keeps the even 1."""
    assert cvt("cvt.rn.f16.f32", f32(1 + 2 ** -11)) == f16(1.0)
    assert cvt("cvt.rn.f16.f32", f32(1 + 3 * 2 ** -11)) == f16(1 + 2 ** -9)


def test_rz_rm_rp_round_toward_zero_minus_and_plus_infinity():
    x = f32(-(1 + 2 ** -12))
    assert cvt("cvt.rz.f16.f32", x) == f16(-1.0)
    assert cvt("cvt.rm.f16.f32", x) == f16(-(1 + 2 ** -10))
    assert cvt("cvt.rp.f16.f32", x) == f16(-1.0)


def test_overflow_follows_the_rounding_mode():
    """rn goes to infinity, rz to the largest finite value, rm/rp to infinity only on their side."""
    big = f32(1e6)
    assert cvt("cvt.rn.f16.f32", big) == 0x7C00
    assert cvt("cvt.rz.f16.f32", big) == 0x7BFF
    assert cvt("cvt.rm.f16.f32", big) == 0x7BFF
    assert cvt("cvt.rp.f16.f32", big) == 0x7C00
    assert cvt("cvt.rm.f16.f32", big | NEG) == 0xFC00


def test_subnormal_results_are_kept_without_ftz():
    assert cvt("cvt.rn.f16.f32", f32(2.0 ** -24)) == 0x0001
    assert cvt("cvt.rn.f32.f64", f64(2.0 ** -149)) == MIN_SUB32


def test_integer_to_float_rounds_in_the_mode():
    """2**24 + 1 is not an f32: rn gives 2**24 (even), rp 2**24 + 2."""
    assert cvt("cvt.rn.f32.s32", 2 ** 24 + 1) == f32(2.0 ** 24)
    assert cvt("cvt.rp.f32.s32", 2 ** 24 + 1) == f32(2.0 ** 24 + 2)
    assert cvt("cvt.rn.f16.u32", 65520) == 0x7C00                   # halfway past the largest f16
    assert cvt("cvt.rz.f16.u32", 65520) == 0x7BFF


def test_rna_tf32_rounds_halfway_away_from_zero_and_clears_the_low_13_bits():
    assert cvt("cvt.rna.tf32.f32", 0x3F801000) == 0x3F802000
    assert cvt("cvt.rn.tf32.f32", 0x3F801000) == 0x3F800000


def test_rounding_to_an_integral_value_keeps_the_type_and_the_sign_of_zero():
    assert cvt("cvt.rni.f32.f32", f32(2.5)) == f32(2.0)
    assert cvt("cvt.rmi.f32.f32", f32(-0.5)) == f32(-1.0)
    assert cvt("cvt.rzi.f32.f32", f32(-0.5)) == NEG
    assert cvt("cvt.rpi.f16.f16", f16(1.25)) == f16(2.0)


def test_round_float_matches_ieee_round_to_nearest_even():
    """convert_round.round_float in rn is NumPy's float64 -> float32 / float16 cast on random values."""
    rng = np.random.default_rng(5)
    x = np.ldexp(rng.random(20000) + 1, rng.integers(-160, 140, 20000)) * rng.choice([-1, 1], 20000)
    bits = x.view(np.uint64)
    with np.errstate(over="ignore"):
        assert np.array_equal(round_float(float_parts(bits, FORMATS["f64"]), FORMATS["f32"], "rn"),
                              x.astype(np.float32).view(np.uint32))
        assert np.array_equal(round_float(float_parts(bits, FORMATS["f64"]), FORMATS["f16"], "rn"),
                              x.astype(np.float16).view(np.uint16))


# ---------------------------------------------------------------------------------- float -> integer

def test_float_to_integer_saturates_to_the_destination_range():
    """"converted to the nearest representable integer, saturating" -- with or without .sat."""
    assert cvt("cvt.rzi.s32.f32", f32(3e9)) == 0x7FFFFFFF
    assert cvt("cvt.rzi.s32.f32", f32(-3e9)) == 0x80000000
    assert cvt("cvt.rzi.u32.f32", f32(-1.5)) == 0
    assert cvt("cvt.rni.u8.f32", INF32) == 0xFF
    assert cvt("cvt.rni.sat.s8.f32", f32(-200.0)) == 0x80


def test_float_to_integer_rounds_in_the_irnd_mode():
    x = f32(-2.5)
    assert [cvt(f"cvt.{r}.s32.f32", x) & 0xFFFFFFFF for r in ("rni", "rzi", "rmi", "rpi")] == [
        0xFFFFFFFE, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFE]


def test_nan_to_a_32_bit_integer_from_f32_is_zero():
    assert cvt("cvt.rni.s32.f32", NAN32) == 0
    assert cvt("cvt.rzi.u16.f16", 0x7E00) == 0


def test_nan_to_a_64_bit_integer_or_from_f64_is_the_word_with_only_the_top_bit_on_the_h100():
    assert cvt("cvt.rzi.u64.f32", NAN32) == 1 << 63
    assert cvt("cvt.rzi.s64.f16", 0x7E00) == 1 << 63
    assert cvt("cvt.rzi.u8.f64", 0x7FF8000000000000) == 0x80
    assert cvt("cvt.rzi.s32.f64", 0xFFF8000000000000) == 0x80000000


# ---------------------------------------------------------------------------------- NaN results

def test_conversions_to_and_from_f64_keep_the_nan_payload_and_quiet_it_on_the_h100():
    assert cvt("cvt.f64.f32", 0x7F800001) == 0x7FF8000020000000
    assert cvt("cvt.rn.f32.f64", 0xFFF254D3182FED55) == 0xFFD2A698
    assert cvt("cvt.rzi.f64.f64", 0x7FF0000000000001) == 0x7FF8000000000001


def test_other_conversions_give_the_canonical_nan():
    assert cvt("cvt.rn.f16.f32", 0xFFC00001) == 0x7FFF
    assert cvt("cvt.rn.bf16.f32", 0x7F800001) == 0x7FFF
    assert cvt("cvt.f32.f16", 0xFC01) == NAN32
    assert cvt("cvt.rn.tf32.f32", 0xFFC00000) == 0x7FFFE000
    assert cvt("cvt.rn.satfinite.e4m3x2.f32", NAN32, f32(1.0)) == 0x7F38


def test_f32_from_bf16_is_a_shift_that_keeps_a_signalling_nan():
    assert cvt("cvt.f32.bf16", 0x7F81) == 0x7F810000


def test_rna_tf32_turns_a_nan_with_only_low_payload_bits_into_infinity_on_the_h100():
    """ptxas' integer sequence clears the 13 low bits of a non-finite word; .satfinite then takes
    0x2000 off an infinity, giving the largest tf32."""
    assert cvt("cvt.rna.tf32.f32", 0x7F800001) == INF32
    assert cvt("cvt.rna.satfinite.tf32.f32", 0x7F800001) == 0x7F7FE000


# ---------------------------------------------------------------------------------- .sat .relu .satfinite

def test_sat_clamps_a_float_result_to_zero_and_one():
    assert cvt("cvt.sat.f32.f32", f32(1.5)) == f32(1.0)
    assert cvt("cvt.sat.f32.f32", f32(-3.0)) == 0
    assert cvt("cvt.rn.sat.f16.f32", f32(0.25)) == f16(0.25)
    assert cvt("cvt.sat.f64.f64", f64(7.0)) == f64(1.0)


def test_sat_gives_positive_zero_for_nan_and_negative_zero():
    for text, nan, nz in (("cvt.sat.f32.f32", NAN32, NEG), ("cvt.sat.f16.f16", 0x7E00, 0x8000),
                          ("cvt.sat.f64.f64", 0x7FF8000000000000, 1 << 63)):
        assert cvt(text, nan) == 0 and cvt(text, nz) == 0, text


def test_relu_clamps_a_negative_result_to_positive_zero_and_gives_the_canonical_nan():
    assert cvt("cvt.rn.relu.f16.f32", f32(-2.0)) == 0
    assert cvt("cvt.rn.relu.bf16.f32", NEG) == 0
    assert cvt("cvt.rn.relu.f16.f32", 0xFFC00000) == 0x7FFF
    assert cvt("cvt.rn.relu.f16x2.f32", f32(-1.0), f32(3.0)) == f16(3.0)


def test_satfinite_clamps_overflow_and_infinity_to_the_largest_finite_value_of_their_sign():
    assert cvt("cvt.rn.satfinite.f16.f32", f32(1e6)) == 0x7BFF
    assert cvt("cvt.rn.satfinite.f16.f32", INF32 | NEG) == 0xFBFF
    assert cvt("cvt.rn.satfinite.e4m3x2.f32", f32(1000.0), f32(-500.0)) == 0x7EFE        # +-448
    assert cvt("cvt.rn.satfinite.e5m2x2.f32", INF32, f32(0.0)) == 0x7B00                 # 57344


def test_satfinite_keeps_a_nan():
    assert cvt("cvt.rn.satfinite.bf16.f32", NAN32) == 0x7FFF


# ---------------------------------------------------------------------------------- .ftz

def test_ftz_reads_a_subnormal_f32_source_as_zero():
    assert cvt("cvt.rpi.s32.f32", MIN_SUB32) == 1
    assert cvt("cvt.rpi.ftz.s32.f32", MIN_SUB32) == 0


def test_ftz_flushes_a_subnormal_f32_result_to_a_zero_of_its_sign():
    assert cvt("cvt.ftz.f32.f32", MIN_SUB32 | NEG) == NEG
    assert cvt("cvt.rn.ftz.f32.f64", f64(-(2.0 ** -140))) == NEG
    assert cvt("cvt.ftz.f32.bf16", 0x0001) == 0


def test_ftz_has_no_effect_on_f16_from_f32_on_the_h100():
    """ptxas emits no FTZ here: a negative f32 subnormal rounds toward minus infinity to -2**-24."""
    assert cvt("cvt.rm.ftz.f16.f32", MIN_SUB32 | NEG) == 0x8001


def test_f32_ftz_from_f64_also_flushes_the_halfway_point_below_2_to_the_minus_126_on_the_h100():
    """2**-126 - 2**-150 rounds up to 2**-126 under rp, yet the H100's code flushes it."""
    x = 0x380FFFFFE0000000
    assert cvt("cvt.rp.f32.f64", x) == 0x00800000
    assert cvt("cvt.rp.ftz.f32.f64", x) == 0
    assert cvt("cvt.rp.ftz.f32.f64", x + 1) == 0x00800000


# ---------------------------------------------------------------------------------- resolving

def test_a_float_cvt_resolves_through_the_package_to_this_family():
    s = Spec("cvt", ("rn", "f16", "f32"), 1, 1)
    assert resolve(s).src == resolve_cvt(s).src == ("f32",)
    assert resolve(s).dst == ("f16",)


def test_integer_only_cvt_is_handed_to_the_integer_family():
    sem = resolve_cvt(Spec("cvt", ("sat", "s8", "s32"), 1, 1))
    assert int(sem.fn(np.array([300], np.uint32))[0][0]) == 127


@pytest.mark.parametrize("text, nsrc, why", [
    ("cvt.f16.f32", 1, r"cvt\.frnd\{\.ftz\}\{\.sat\}\.f16\.f32"),
    ("cvt.rn.ftz.f16.f64", 1, ".ftz"),
    ("cvt.rni.f16.f32", 1, ".rni"),
    ("cvt.rn.e4m3x2.f32", 2, r"cvt\.rn\(\.satfinite"),
    ("cvt.rn.sat.bf16.f32", 1, ".sat"),
    ("cvt.rs.satfinite.e4m3x4.f32", 2, "sm_100"),
    ("cvt.rn.satfinite.e2m1x2.f32", 2, "sm_100"),
    ("cvt.rn.satfinite.tf32.f32", 1, "sm_100"),
    ("cvt.rn.f16x2.f32", 1, "2 source"),
    ("cvt.rn.rz.f16.f32", 1, "not a form of cvt"),
    ("cvt.rn.relu.f32.f64", 1, ".relu"),
])
def test_what_sm_90_does_not_define_is_refused_by_name(text, nsrc, why):
    op, *mods = text.split(".")
    with pytest.raises(UnsupportedInstruction, match=why) as e:
        resolve_cvt(Spec(op, tuple(mods), 1, nsrc))
    assert str(e.value).startswith(text)
