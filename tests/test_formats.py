"""Number formats: bit-level codecs for f16, bf16, tf32, f32 (and e4m3/e5m2 as data)."""

import numpy as np
import pytest

from fragsim.facts import formats as F

ALL16 = np.arange(1 << 16, dtype=np.uint16)


@pytest.mark.parametrize("name", ["f16", "bf16"])
def test_every_16bit_pattern_round_trips(name):
    vals = F.to_float(ALL16, name)
    back = F.from_float(vals, name)
    nan = F.is_nan(ALL16, name)
    assert np.array_equal(back[~nan], ALL16[~nan])
    assert (back[nan] == F.get_format(name).canonical_nan).all()


def test_f16_decodes_like_numpy_on_every_pattern():
    assert np.array_equal(F.to_float(ALL16, "f16"), ALL16.view(np.float16).astype(np.float64), equal_nan=True)


def test_f16_encodes_like_numpy_on_every_pattern_and_between():
    # Every representable value, and every midpoint between neighbours (the ties).
    vals = ALL16.view(np.float16).astype(np.float64)
    finite = np.sort(vals[np.isfinite(vals)])
    mids = (finite[:-1] + finite[1:]) / 2
    x = np.concatenate([finite, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])
    assert np.array_equal(F.from_float(x, "f16"), x.astype(np.float16).view(np.uint16))


def test_f32_encodes_like_numpy_on_random_float64():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(200_000) * np.exp2(rng.integers(-160, 140, 200_000).astype(float))
    with np.errstate(over="ignore"):
        ref = x.astype(np.float32).view(np.uint32)
    assert np.array_equal(F.from_float(x, "f32"), ref)


@pytest.mark.parametrize("name, counts", [
    # (nan, inf, zero, subnormal) patterns among all 2**16
    ("f16", (2 * 1023, 2, 2, 2 * 1023)),
    ("bf16", (2 * 127, 2, 2, 2 * 127)),
])
def test_classification_counts_of_every_16bit_pattern(name, counts):
    got = tuple(int(f(ALL16, name).sum()) for f in (F.is_nan, F.is_inf, F.is_zero, F.is_subnormal))
    assert got == counts


def test_classify_names_each_kind_of_f32_word():
    words = np.array([0x7FC00000, 0xFF800000, 0x80000000, 0x00000001, 0x3F800000], np.uint32)
    assert list(F.classify(words, "f32")) == ["nan", "inf", "zero", "subnormal", "normal"]


def test_subnormals_keep_their_value():
    assert F.to_float(np.uint16(0x0001), "f16") == 2.0 ** -24
    assert F.to_float(np.uint16(0x0001), "bf16") == 2.0 ** -133
    assert F.to_float(np.uint32(0x00000001), "f32") == 2.0 ** -149


def test_tf32_ignores_the_low_13_bits():
    w = np.array([0x3F800000, 0x3F801FFF], np.uint32)
    assert np.array_equal(F.to_float(w, "tf32"), [1.0, 1.0])
    assert F.to_float(np.uint32(0x3F802000), "tf32") == 1.0 + 2.0 ** -10


def test_round_toward_zero_truncates_and_nearest_even_breaks_ties_to_even():
    one_plus_half_ulp = 1.0 + 2.0 ** -11          # f16 ulp at 1.0 is 2**-10
    assert F.from_float(one_plus_half_ulp, "f16") == 0x3C00          # tie -> even (1.0)
    assert F.from_float(1.0 + 3 * 2.0 ** -11, "f16") == 0x3C02       # tie -> even (1 + 2 ulp)
    assert F.from_float(1.0 + 2.0 ** -10 - 2.0 ** -20, "f16", "rz") == 0x3C00
    assert F.from_float(-(1.0 + 2.0 ** -10 - 2.0 ** -20), "f16", "rz") == 0xBC00


def test_overflow_ieee_and_tensor_core_conventions():
    big = 70000.0  # above f16's 65504
    assert F.from_float(big, "f16") == 0x7C00                  # RNE: Inf
    assert F.from_float(big, "f16", "rz") == 0x7BFF            # IEEE RZ: largest finite
    sign, sig, exp = np.int64(0), np.int64(1), np.int64(17)    # 2**17
    assert F.round_to_format(sign, sig, exp, "f16", "rz", overflow="inf") == 0x7C00


def test_signed_zero_and_canonical_nan():
    assert F.from_float(-0.0, "f32") == 0x80000000
    assert F.from_float(np.nan, "bf16") == 0x7FFF
    assert F.from_float(np.nan, "f32") == 0x7FFFFFFF


def test_eight_bit_formats_are_data_rows():
    assert F.to_float(F.from_float(448.0, "e4m3"), "e4m3") == 448.0     # largest e4m3
    assert F.is_nan(np.uint8(0x7F), "e4m3") and not F.is_inf(np.uint8(0x7F), "e4m3").any()
    assert F.to_float(F.from_float(57344.0, "e5m2"), "e5m2") == 57344.0  # largest e5m2
    e5 = np.arange(256, dtype=np.uint8)
    v = F.to_float(e5, "e5m2")
    ok = ~np.isnan(v)
    assert np.array_equal(F.from_float(v[ok], "e5m2"), e5[ok])


def test_unknown_format_names_the_choices():
    with pytest.raises(ValueError, match="f16, bf16, tf32, f32"):
        F.get_format("fp64")


def test_int_to_bits_refuses_ragged_nested_lists_naming_the_values():
    import pytest
    from fragsim.facts.formats import int_to_bits
    with pytest.raises(ValueError, match="int_to_bits: values must be a rectangular array"):
        int_to_bits([[1, [2]]], "s8")
