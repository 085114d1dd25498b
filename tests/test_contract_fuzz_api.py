"""Contract fuzz of the public API (issue 9): valid input gives a sane result, invalid input the
documented error -- ValueError/TypeError, one line, naming the parameter -- never another exception,
never silent acceptance.  The entry points and their adversarial input classes are in
fuzz_entries.py, the contract in contract.py; ``pytest -s`` prints the figures."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fragsim
from contract import ERROR, EITHER, FIGURES, OK, outcome
import fuzz_entries
import fuzz_entries_layouts
import fuzz_entries_gemm
import fuzz_entries_wgmma_desc
import fuzz_entries_mma13
import fuzz_entries_wgmma
import fuzz_entries_tma
import fuzz_entries_tma_wgmma
import fuzz_entries_approx

ENTRIES = (fuzz_entries.ENTRIES + fuzz_entries_layouts.ENTRIES + fuzz_entries_gemm.ENTRIES
           + fuzz_entries_wgmma_desc.ENTRIES + fuzz_entries_mma13.ENTRIES + fuzz_entries_wgmma.ENTRIES
           + fuzz_entries_tma.ENTRIES + fuzz_entries_tma_wgmma.ENTRIES + fuzz_entries_approx.ENTRIES)

CLASSES = [pytest.param(e, p, label, make, expect, id=f"{e.name}-{p}-{label}")
           for e in ENTRIES for p, label, make, expect in e.cases()]


@pytest.fixture(scope="module", autouse=True)
def figures():
    yield
    print(f"\ncontract fuzz, API: {FIGURES['api classes']} input classes ({FIGURES['api classes clean']} clean), "
          f"{FIGURES['api calls']} Hypothesis calls ({FIGURES['api calls clean']} clean; "
          f"{FIGURES['api calls refused']} refused with the documented error)")


@pytest.mark.parametrize("entry, param, label, make, expect", CLASSES)
def test_input_class(entry, param, label, make, expect):
    """One adversarial value for one parameter, the others valid."""
    FIGURES["api classes"] += 1
    kw = entry.default()
    kw[param] = make(kw)
    outcome(lambda: entry.run(kw), entry.names[param], expect, f"{entry.name}({param}={label})",
            check=lambda r: entry.check(r, kw))
    FIGURES["api classes clean"] += 1


def test_every_public_name_is_fuzzed():
    covered = {"mma", "gemm", "wgmma", "movmatrix", "pack", "unpack", "ldmatrix", "stmatrix", "ld_shared",
               "st_shared", "cp_async", "bank_conflicts",
               "Swizzle", "to_bits", "from_bits", "get_format", "lookup", "MmaForm", "parse_shared_op", "Tile", "XorMap",
               "swizzle_search", "check_load", "check_store", "check_copy", "MatrixDescriptor", "check_wgmma", "check_tma_wgmma",
               "run_kernel", "Buffer",     # these two: tests/test_contract_fuzz_ptx.py
               "TensorMap", "tma_load", "tma_store", "approx"}
    data = {"FORMS", "NUMBER_FORMATS"}   # tables: read through lookup/get_format and the entries' strategies
    assert set(fragsim.__all__) == covered | data


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_hypothesis_mix_of_valid_and_adversarial(entry, data):
    """Valid arguments, with none, one or two parameters replaced by adversarial values: all valid ->
    a sane result; a wrong type or edge value from the generic list that the parameter never accepts
    -> the documented error; anything else -> either (a specific class's expectation is stated for
    the default arguments: misaligned for 16 bytes is aligned for 4)."""
    kw = data.draw(entry.valid, label="valid")
    cases = entry.cases()
    k = data.draw(st.sampled_from([0, 0, 1, 1, 2]), label="replaced")
    picks = data.draw(st.lists(st.sampled_from(cases), min_size=k, max_size=k, unique_by=lambda c: c[0]), label="classes")
    expect = OK if picks else kw.get("_expect", OK)   # "_expect": the valid draw's own verdict (C's undefined behaviour)
    valid, params = dict(kw), set()
    for param, label, make, e in picks:
        kw = {key: v for key, v in kw.items() if not key.startswith("_")}   # a reference no longer applies
        kw[param] = make(valid)
        params.add(param)
        e = e if label.startswith("generic ") else EITHER
        expect = ERROR if ERROR in (expect, e) else EITHER
    # with several parameters in play the error may rightly be about another one of them
    names = sum(entry.names.values(), ())
    FIGURES["api calls"] += 1
    got = outcome(lambda: entry.run(kw), names, expect, f"{entry.name}({', '.join(sorted(params))})",
                  check=lambda r: entry.check(r, kw))
    FIGURES["api calls clean"] += 1
    FIGURES["api calls refused"] += got == "refused"


def test_the_contract_catches_what_it_should():
    """The checker itself: another exception type, two lines, a message naming nothing, and a
    result for an invalid value each break the contract."""
    def raises(e):
        def f():
            raise e
        return f
    for bad in (raises(IndexError("x")), raises(np.exceptions.AxisError(1, 1)), raises(ValueError("a\nb")),
                raises(ValueError("nothing named"))):
        with pytest.raises(AssertionError):
            outcome(bad, ("param",))
    with pytest.raises(AssertionError, match="clearly invalid value was accepted"):
        outcome(lambda: 1, ("param",), ERROR)
    assert outcome(raises(ValueError("param: bad")), ("param",)) == "refused"
