"""wgmma on the H100: recorded cases (tests/data/wgmma/, from gpu_check/wgmma_run.py) replayed through
fragsim.wgmma, and each alternative parameter row shown to break at least one recorded case."""

import glob
import os

import numpy as np
import pytest

from gpu_check.wgmma_cases import model
from gpu_check.wgmma_corpus import load
from gpu_check.wgmma_run import ALTERNATIVES

DATA = os.path.join(os.path.dirname(__file__), "data", "wgmma")
FAMILIES = {"f16_bf16": "f16/bf16", "tf32": "tf32", "fp8": "fp8", "int8": "int8"}
# Alternatives the recorded random cases cannot separate, and why.
NOT_SEPARATED = {
    ("f16/bf16", "e_zero_f16=-20"): "needs the e_zero probe (gpu_check.wgmma_cases.ezero_matrices), not yet recorded",
    ("f16/bf16", "e_zero_f16=-22"): "needs the e_zero probe (gpu_check.wgmma_cases.ezero_matrices), not yet recorded",
    ("f16/bf16", "e_zero_f32=-134"): "not in the recorded run's alternatives",
    ("fp8", "e_zero_f16=-20"): "no fp8 product reaches below 2**-32, so e_zero <= -19 never truncates (F = 13)",
}


def _cases(fam):
    return load(os.path.join(DATA, f"{fam}.npz"))


@pytest.mark.parametrize("fam", sorted(FAMILIES))
def test_recorded_cases_replay_bit_exact(fam):
    cases = _cases(fam)
    assert len(cases) >= 8
    for v, sw, major, inp, d in cases:
        assert np.array_equal(model(v, inp), d), f"{v.name} {sw} {major}"


@pytest.mark.parametrize("fam, label", [(f, lab) for f in sorted(FAMILIES) for lab in ALTERNATIVES[FAMILIES[f]]])
def test_each_alternative_breaks_a_recorded_case(fam, label):
    if (FAMILIES[fam], label) in NOT_SEPARATED:
        pytest.skip(NOT_SEPARATED[(FAMILIES[fam], label)])
    prm = ALTERNATIVES[FAMILIES[fam]][label]
    broken = sum(not np.array_equal(model(v, inp, prm), d) for v, sw, major, inp, d in _cases(fam))
    assert broken >= 1, f"{label}: no recorded case tells it from the H100"


def test_corpora_cover_every_swizzle_and_major():
    seen = {(FAMILIES[os.path.basename(p)[:-4]], sw, major) for p in glob.glob(os.path.join(DATA, "*.npz"))
            for _, sw, major, _, _ in load(p)}
    for sw in ("none", "128B", "64B", "32B"):
        assert ("f16/bf16", sw, "MN") in seen and all((f, sw, "K") in seen for f in FAMILIES.values())
