"""fragsim.mma against a committed MMA-Sim 2.1.1 corpus, on both architectures, in CI.

tests/data/mmasim/ holds, for every form, operands drawn with tests/mma_cases.py's classes and
what MMA-Sim (PyPI ``mmasim`` 2.1.1) returned for them on Ampere (sm_80) and Hopper (sm_90);
``python -m fragsim.gpu_check.mmasim_corpus tests/data/mmasim`` regenerates it (needs mmasim and
torch; this test needs neither).  No A100 corpus exists here, so for sm_80 this is the only
reference CI compares with; sm_90 is settled by the H200 corpus (test_hw_replay.py), which wins
where the two ever disagree.
"""

from pathlib import Path

import numpy as np
import pytest

import fragsim
from fragsim.facts.formats import classify
from fragsim.gpu_check import mmasim_corpus
from mma_cases import FLOAT_FORMS

DATA = Path(__file__).parent / "data" / "mmasim"
CORPORA = {c["meta"]["form"]: c for c in map(mmasim_corpus.load, sorted(DATA.glob("*.npz")))}
ARCHS = ("sm_80", "sm_90")


def test_the_corpus_covers_every_form_on_sm80_and_sm90():
    assert set(CORPORA) == set(FLOAT_FORMS)
    for form, c in CORPORA.items():
        assert list(c["meta"]["archs"]) == list(ARCHS), form
        assert c["d"].shape[:2] == (c["meta"]["cases"], 2) and c["meta"]["cases"] >= 150, form


def test_each_file_names_the_generator_that_made_it():
    for form, c in CORPORA.items():
        m = c["meta"]
        assert m["mmasim"] == "2.1.1" and m["torch"] and isinstance(m["seed"], int), form
        assert m["command"].startswith("python -m fragsim.gpu_check.mmasim_corpus "), form


@pytest.mark.parametrize("form", FLOAT_FORMS)
def test_operands_reach_nan_payloads_inf_zero_and_subnormals(form):
    c = CORPORA[form]
    f = fragsim.lookup(form)
    for op in "abc":
        words = c[op]
        fmt = f.fmt(op.upper())
        kinds = set(classify(words, fmt).ravel())
        assert {"nan", "inf", "zero", "subnormal", "normal"} <= kinds, (form, op, kinds)
        nan = words[classify(words, fmt) == "nan"]
        assert np.unique(nan).size >= 10, f"{form} {op}: too few distinct NaN payloads"


@pytest.mark.parametrize("form", FLOAT_FORMS)
def test_sm80_and_sm90_disagree_on_some_cases(form):
    """The corpus can tell the architectures apart (alignment width, F, e_zero differ)."""
    d = CORPORA[form]["d"]
    assert (d[:, 0] != d[:, 1]).any(axis=(1, 2)).sum() >= 10


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("form", FLOAT_FORMS)
def test_fragsim_equals_mmasim_bit_for_bit(form, arch):
    """Every output word, NaN payloads and signs of zeros included."""
    c = CORPORA[form]
    j = list(c["meta"]["archs"]).index(arch)
    regs = [fragsim.pack(form, x, c[x.lower()]) for x in "ABC"]
    got = fragsim.unpack(form, "D", fragsim.mma(form, *regs, arch=arch))
    want = c["d"][:, j]
    bad = np.argwhere(got != want)
    if bad.size:
        width = fragsim.lookup(form).fmt("D").storage_bits // 4
        lines = []
        for i, r, col in bad[:5]:
            drawn = ", ".join(c["class_names"][k] for k in c["classes"][i])
            lines.append(f"case {i} ({drawn}; {c['scenario_names'][c['scenario'][i]]}): D[{r},{col}] "
                         f"fragsim {int(got[i, r, col]):#0{width + 2}x}, MMA-Sim {int(want[i, r, col]):#0{width + 2}x}")
        cases = np.unique(bad[:, 0]).size
        pytest.fail(f"{form} on {arch}: {len(bad)} output elements in {cases} of {len(want)} cases differ "
                    f"from MMA-Sim {c['meta']['mmasim']}:\n  " + "\n  ".join(lines))
