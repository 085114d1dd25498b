"""The one rounding of the PTX runner's float results (fragsim.ptx.semantics.ieee), which the arithmetic
(floating.py) and cvt (convert.py) share: round_pack against exact rational arithmetic in every format
and mode, and its documented cases, one property each.  Values are raw bits."""

from fractions import Fraction

import numpy as np
import pytest

from fragsim.facts.formats import FORMATS, FloatFormat
from fragsim.ptx.semantics.ieee import MODES, bit_length, round_pack, round_shift

F32, F16, E4M3, TF32 = FORMATS["f32"], FORMATS["f16"], FORMATS["e4m3"], FORMATS["tf32"]


def exact(sign: bool, M: int, E: int, f: FloatFormat, mode: str, satfinite: bool = False) -> int:
    """The word IEEE 754 gives for (-1)**sign * M * 2**E in ``f``: round to the format's precision with
    an unbounded exponent (subnormal spacing below emin), then overflow as the mode says."""
    word_sign = int(sign) << f.sign_shift
    if M == 0:
        return word_sign
    q = max(M.bit_length() - 1 + E, f.emin) - f.man_bits            # exponent of the last kept bit
    n = Fraction(M) * Fraction(2) ** (E - q)
    k = n.numerator // n.denominator
    if n != k:
        rest = n - k
        up = {"rn": rest > Fraction(1, 2) or (rest == Fraction(1, 2) and k % 2 == 1),
              "rz": False, "rm": sign, "rp": not sign}[mode]
        k += up
    if k >> (f.man_bits + 1):                                        # carried into the next binade
        k, q = k >> 1, q + 1
    biased = q + f.man_bits + f.bias if k >> f.man_bits else 0
    man = k & ((1 << f.man_bits) - 1)
    if biased > f.emax + f.bias or (biased == f.emax + f.bias and man > f.max_finite_man):
        to_inf = not satfinite and {"rn": True, "rz": False, "rm": sign, "rp": not sign}[mode]
        if not to_inf:
            return word_sign | ((f.emax + f.bias) << f.exp_shift) | (f.max_finite_man << f.ignored_low_bits)
        return word_sign | (((1 << f.exp_bits) - 1) << f.exp_shift if f.ieee_specials else f.canonical_nan)
    return word_sign | (biased << f.exp_shift) | (man << f.ignored_low_bits)


def triples(f: FloatFormat, n: int, seed: int):
    """Random exact values around every range of ``f``: subnormal, normal, overflowing, far out; with
    trailing zeros (exact halves and ties) as often as without."""
    rng = np.random.default_rng(seed)
    sign = rng.integers(0, 2, n).astype(bool)
    length = rng.integers(1, 65, n)
    M = (rng.integers(0, 1 << 63, n, dtype=np.uint64) | np.uint64(1 << 63)) >> (64 - length).astype(np.uint64)
    zeros = rng.integers(0, 64, n).astype(np.uint64)
    M = np.where(rng.random(n) < 0.5, (M >> zeros) << zeros, M)
    top = rng.integers(f.emin - f.man_bits - 4, f.emax + 3, n)
    top = np.where(rng.random(n) < 0.1, rng.integers(-1100, 1100, n), top)
    return sign, M, top - (bit_length(M) - 1)


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("satfinite", [False, True])
def test_round_pack_is_the_exact_value_rounded_once(name, satfinite):
    """Every mode, every format of FORMATS (tf32's ignored low bits, e4m3 without infinities): the word
    of the exact value rounded once, IEEE 754 overflow or .satfinite's largest finite number."""
    f = FORMATS[name]
    sign, M, E = triples(f, 600, seed=len(name) + satfinite)
    for mode in MODES:
        got = round_pack(sign, M, E, f, mode, satfinite=satfinite)
        want = [exact(bool(s), int(m), int(e), f, mode, satfinite) for s, m, e in zip(sign, M, E)]
        assert got.dtype == f.dtype
        assert got.tolist() == want, mode


def test_round_pack_zero_keeps_its_sign_whatever_the_exponent():
    assert round_pack(np.array([False, True]), np.zeros(2, np.uint64), np.array([5000, -5000]), F32, "rn").tolist() \
        == [0, 0x80000000]


def test_directed_overflow_gives_infinity_only_on_the_side_the_mode_rounds_to():
    """rm: -inf for a negative overflow, the largest finite number for a positive one; rp the reverse."""
    sign = np.array([False, True])
    big, e = np.array([1, 1], np.uint64), np.array([200, 200])
    assert round_pack(sign, big, e, F32, "rm").tolist() == [0x7F7FFFFF, 0xFF800000]
    assert round_pack(sign, big, e, F32, "rp").tolist() == [0x7F800000, 0xFF7FFFFF]
    assert round_pack(sign, big, e, F32, "rz").tolist() == [0x7F7FFFFF, 0xFF7FFFFF]


def test_e4m3_overflow_is_its_nan_without_satfinite_and_448_with():
    """e4m3 has no infinity: 480 (S.1111.111 would be it) rounds to NaN, or to 448 under .satfinite."""
    sign, M, E = np.array([False, True]), np.array([15, 15], np.uint64), np.array([5, 5])    # 480
    assert round_pack(sign, M, E, E4M3, "rn").tolist() == [0x7F, 0xFF]
    assert round_pack(sign, M, E, E4M3, "rn", satfinite=True).tolist() == [0x7E, 0xFE]


def test_tf32_words_keep_the_13_ignored_bits_clear():
    """1 + 2**-11 and 1 + 3 * 2**-11 lie halfway between tf32 values (10 significand bits): ties to
    even give 1 and 1 + 2**-9, in the top 19 bits of the word."""
    M, E = np.array([(1 << 11) + 1, (1 << 11) + 3], np.uint64), np.array([-11, -11])
    assert round_pack(np.zeros(2, bool), M, E, TF32, "rn").tolist() == [0x3F800000, 0x3F804000]


def test_ftz_flushes_results_tiny_after_rounding_with_an_unbounded_exponent():
    """2**-126 * (1 - 2**-24) has 24 bits: tiny, flushed (rounded to f32 it would be 2**-126);
    2**-126 * (1 - 2**-26) rounds to 2**-126 in 24 bits under rn: kept, flushed under rz."""
    sign = np.zeros(2, bool)
    M = np.array([(1 << 24) - 1, (1 << 26) - 1], np.uint64)
    E = np.array([-126 - 24, -126 - 26])
    assert round_pack(sign, M, E, F32, "rn").tolist() == [0x00800000, 0x00800000]
    assert round_pack(sign, M, E, F32, "rn", ftz=True).tolist() == [0, 0x00800000]
    assert round_pack(sign, M, E, F32, "rz", ftz=True).tolist() == [0, 0]


def test_round_pack_refuses_a_mode_outside_modes():
    with pytest.raises(ValueError, match="rounding mode must be one of rn, rz, rm, rp, got 'rna'"):
        round_pack(np.zeros(1, bool), np.ones(1, np.uint64), np.zeros(1, np.int64), F16, "rna")


def test_round_shift_rounds_ties_to_even_and_directed_modes_by_the_sign():
    """x * 2**-s rounded to an integer: 5/2 -> 2 and 7/2 -> 4 (rn); 5/2 -> 3 (rp), -5/2 -> -3 (rm)."""
    x, s = np.array([5, 7, 5], np.uint64), np.array([1, 1, 1])
    sign = np.array([False, False, True])
    assert round_shift(x, s, sign, "rn").tolist() == [2, 4, 2]
    assert round_shift(x, s, sign, "rz").tolist() == [2, 3, 2]
    assert round_shift(x, s, sign, "rp").tolist() == [3, 4, 2]
    assert round_shift(x, s, sign, "rm").tolist() == [2, 3, 3]


def test_round_shift_by_64_or_more_keeps_only_the_direction():
    """Shifted out entirely: below half of one unit from s = 65 on (rn 0, rp 1); s = 64 compares with
    2**63; s = 0 is the value itself."""
    x = np.array([1 << 63, (1 << 63) + 1, 2**64 - 1, 7], np.uint64)
    s = np.array([64, 64, 65, 0])
    no = np.zeros(4, bool)
    assert round_shift(x, s, no, "rn").tolist() == [0, 1, 0, 7]
    assert round_shift(x, s, no, "rp").tolist() == [1, 1, 1, 7]


def test_bit_length_around_every_power_of_two():
    """2**k - 1 has k bits, 2**k has k + 1 -- also where float64 rounds 2**k - 1 up to 2**k (k > 53)."""
    k = np.arange(1, 64)
    below = (np.uint64(1) << k.astype(np.uint64)) - np.uint64(1)
    assert bit_length(below).tolist() == k.tolist()
    assert bit_length(below + np.uint64(1)).tolist() == (k + 1).tolist()
    assert bit_length(np.array([0, 2**64 - 1], np.uint64)).tolist() == [0, 64]
