"""The batch path is generated from the rules, and computes what the rules say.

The rules (fragsim/banks/rules.py) are the model; the detail path runs them as Python, the batch
path is the numba module generated from them.  Both must agree on every recorded Nsight Compute
measurement and on random address sets.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import fragsim
from fragsim.banks import generate
from fragsim.instructions import SHARED_OPS


def test_kernel_generated_is_what_the_generator_writes_from_the_current_rules():
    """A stale generated file (a rule edited, not regenerated) would also be served from numba's cache."""
    with open(generate.TARGET) as f:
        assert f.read() == generate.source(), "run: python -m fragsim.banks.generate"


def test_the_straight_line_phase_code_is_generated_for_8_and_16_lanes():
    with open(generate.TARGET) as f:
        src = f.read()
    assert generate.straight_line_phase(8) in src and generate.straight_line_phase(16) in src


def test_every_phase_structure_of_the_table_has_a_batch_driver():
    from fragsim.banks import kernel_generated as K

    for e in SHARED_OPS.values():
        if e.kind != "ldgsts":
            assert hasattr(K, generate.driver_name(e)), e.name


def _detail(op, addrs, mask, src):
    r = fragsim.bank_conflicts(op, addrs, mask=mask, src=src)
    return r.wavefronts, r.ideal, r.exact


OPS = sorted(SHARED_OPS)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(OPS), st.data())
def test_batch_path_equals_detail_path_on_random_address_sets(op, data):
    e = SHARED_OPS[op]
    w = e.bytes_per_addr
    span = data.draw(st.sampled_from([4, 32, 256]))
    addrs = data.draw(hnp.arrays(np.int64, 32, elements=st.integers(0, span))) * w
    if data.draw(st.booleans()):  # duplicated partners, the case the merge rule is about
        addrs = addrs[np.arange(32) & ~data.draw(st.sampled_from([1, 2, 3]))]
    mask = None if e.kind in ("ldsm", "stsm") else data.draw(st.integers(0, 2**32 - 1))
    src = None
    if e.kind == "ldgsts":
        src = data.draw(hnp.arrays(np.int64, 32, elements=st.integers(0, 64))) * w
    b = fragsim.bank_conflicts(op, addrs[None], mask=None if mask is None else np.array([mask]),
                               src=None if src is None else src[None])
    assert (int(b.wavefronts[0]), int(b.ideal[0]), bool(b.exact[0])) == _detail(op, addrs, mask, src)


def test_batch_path_equals_detail_path_on_every_recorded_measurement():
    from test_banks_hw_replay import ROWS

    if not ROWS:
        pytest.skip("no Nsight Compute records")
    checked = 0
    for op, d in ROWS.items():
        src = d["src"] if op.startswith("cp.async") else None
        b = fragsim.bank_conflicts(op, d["addrs"].astype(np.int64), d["mask"], src)
        for i in range(len(d["mask"])):
            mask = None if SHARED_OPS[op].kind in ("ldsm", "stsm") else int(d["mask"][i])
            got = _detail(op, d["addrs"][i].astype(np.int64), mask, None if src is None else src[i])
            assert (int(b.wavefronts[i]), int(b.ideal[i]), bool(b.exact[i])) == got, (op, i, d["label"][i])
            checked += 1
    assert checked > 5000
