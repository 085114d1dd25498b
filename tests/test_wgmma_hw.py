"""wgmma on the H100: recorded cases (tests/data/wgmma/, from gpu_check/wgmma/family.py) replayed through
fragsim.wgmma, and each alternative parameter row shown to break at least one recorded case.
The corpora are run 2 (tests/data/wgmma/run2_h100_summary.json), compacted by gpu_check/wgmma/corpus.py."""

import functools
import json
import os

import numpy as np
import pytest

from fragsim.gpu_check.wgmma.cases import model
from fragsim.gpu_check.wgmma.corpus import load
from fragsim.gpu_check.wgmma.family import ALTERNATIVES

DATA = os.path.join(os.path.dirname(__file__), "data", "wgmma")
FAMILIES = {"f16_bf16": "f16/bf16", "tf32": "tf32", "fp8": "fp8", "int8": "int8"}
SUMMARY = os.path.join(DATA, "run2_h100_summary.json")
# The one alternative no input can separate: a zero term's exponent e_zero only matters when it wins
# E_max, and then cuts the products below 2**(e_zero - F).  fp8 products are multiples of 2**-32
# (e5m2's smallest subnormal squared) and F = 13, so no e_zero <= -19 ever cuts one: e_zero_f16 of
# the fp8 forms is unobservable, on the hardware as in the model.
NOT_SEPARABLE = {("fp8", "e_zero_f16=-20")}


@functools.lru_cache(maxsize=None)
def _cases(fam):
    return load(os.path.join(DATA, f"{fam}.npz"))


@pytest.mark.parametrize("fam", sorted(FAMILIES))
def test_recorded_cases_replay_bit_exact(fam):
    cases = _cases(fam)
    assert len(cases) >= 8
    for v, sw, major, inp, d in cases:
        assert np.array_equal(model(v, inp), d), f"{v.name} {sw} {major}"


SEPARABLE = [(f, lab) for f in sorted(FAMILIES) for lab in ALTERNATIVES[FAMILIES[f]]
             if (FAMILIES[f], lab) not in NOT_SEPARABLE]


@pytest.mark.parametrize("fam, label", SEPARABLE)
def test_each_alternative_breaks_a_recorded_case(fam, label):
    """Every alternative row of the fit (e_zero_f16 -20/-22 through the recorded e_zero probe,
    e_zero_f32 -132/-134 through random f32-accumulator cases) disagrees with the H100 somewhere."""
    prm = ALTERNATIVES[FAMILIES[fam]][label]
    broken = sum(not np.array_equal(model(v, inp, prm), d) for v, sw, major, inp, d in _cases(fam))
    assert broken >= 1, f"{label}: no recorded case tells it from the H100"


@pytest.mark.parametrize("fam, label", sorted(NOT_SEPARABLE))
def test_fp8_e_zero_is_not_observable(fam, label):
    """fp8's e_zero_f16 alternative gives the model's D on every recorded case (see NOT_SEPARABLE)."""
    fam_file = next(k for k, v in FAMILIES.items() if v == fam)
    prm = ALTERNATIVES[fam][label]
    assert all(np.array_equal(model(v, inp, prm), d) for v, sw, major, inp, d in _cases(fam_file))


def test_run_summary_backs_the_readme():
    """The recorded H100 run: >= 100,000 cases per family x swizzle x majorness, 0 mismatches, the
    descriptor fuzz clean, and every separable alternative breaking cases of the fit jobs."""
    with open(SUMMARY) as fh:
        summary = json.load(fh)
    assert summary["_errors"] == []
    for key, s in summary.items():
        if key.startswith("_"):
            continue
        assert s["mismatch_cases"] == 0, key
        fam = key.split(" | ")[0]
        assert s["cases"] >= (1600 if fam == "fuzz_b" else 800 if fam == "fuzz_a" else 100_000), key
    for fam, alts in ALTERNATIVES.items():
        counts = summary[f"{fam} | none | K"]["alternatives"]
        assert set(counts) == set(alts)
        for label, cnt in counts.items():
            assert (cnt == 0) == ((fam, label) in NOT_SEPARABLE), (fam, label, cnt)


def test_corpora_cover_every_swizzle_and_major():
    seen = {(FAMILIES[fam], sw, major) for fam in FAMILIES for _, sw, major, _, _ in _cases(fam)}
    for sw in ("none", "128B", "64B", "32B"):
        assert ("f16/bf16", sw, "MN") in seen and all((f, sw, "K") in seen for f in FAMILIES.values())
