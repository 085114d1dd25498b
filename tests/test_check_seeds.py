"""fragsim.check on the seed documents' address math: the right recipes pass, and each classic
mistake injected into a right recipe is diagnosed by name (gpu_check/check/cases.py)."""

import pytest

import fragsim
from fragsim.gpu_check.check.cases import BF16, CASES, S1_A, S1_A_EXPR, S1_B, S1_B_EXPR

RIGHT = [c for c in CASES if c.ok]
WRONG = [c for c in CASES if not c.ok]


def run(case):
    return getattr(fragsim, "check_" + case.check)(**case.args)


@pytest.mark.parametrize("case", RIGHT, ids=[c.name for c in RIGHT])
def test_the_seeds_right_address_math_passes(case):
    r = run(case)
    assert r.ok and not r.mismatches and not r.diagnosis, str(r)
    assert len(r.conflicts) == len(r.instructions) and all(c is not None for c in r.conflicts)


@pytest.mark.parametrize("case", WRONG, ids=[c.name for c in WRONG])
def test_each_injected_mistake_is_diagnosed_by_name(case):
    r = run(case)
    assert not r.ok
    assert case.mistake in r.kinds, str(r)
    assert "unexplained" not in r.kinds


def test_seed_001_every_warp_m_tile_and_k_block_of_a_and_b_passes():
    """The bf16 GEMM's hoisted ldmatrix offsets, for every (warp, fragment, k-block) it issues."""
    for w in range(2):
        for f in range(4):
            for kb in range(2):
                a = fragsim.check_load(BF16, "A", S1_A, [("ldmatrix.x4", S1_A_EXPR)],
                                       variables={"warp_m": w, "mf": f, "kb": kb}, at=(64 * w + 16 * f, 16 * kb))
                b = fragsim.check_load(BF16, "B", S1_B, [("ldmatrix.x4", S1_B_EXPR)],
                                       variables={"warp_n": w, "np": f, "kb": kb}, at=(16 * kb, 64 * w + 16 * f))
                assert a.ok and b.ok


def test_seed_001_reads_right_but_its_swizzle_leaves_two_way_conflicts():
    """atom ^ (row & 3) on 64-byte rows is Swizzle<2,4,2>: 8 rows of one ldmatrix phase fall into two
    128-byte wavefronts' worth of the same banks -- right data, 8 wavefronts where 4 would do."""
    r = fragsim.check_load(BF16, "A", S1_A, [("ldmatrix.x4", S1_A_EXPR)], variables={"warp_m": 0, "mf": 0, "kb": 0})
    assert r.ok
    assert (r.conflicts[0].wavefronts, r.conflicts[0].ideal) == (8, 4)
    fixed = S1_A_EXPR.replace("(row & 3)", "((row >> 1) & 3)")
    r = fragsim.check_load(BF16, "A", S1_A.replace("2,4,2", "2,4,3"), [("ldmatrix.x4", fixed)],
                           variables={"warp_m": 0, "mf": 0, "kb": 0})
    assert r.ok and r.conflicts[0].conflicts == 0


def test_seed_004_a_load_is_named_transposed_with_the_fix_that_makes_it_right():
    case = next(c for c in CASES if c.name == "s004-A-ldmatrix.x4.trans-as-written")
    r = run(case)
    text = " ".join(r.diagnosis)
    assert "use ldmatrix.x4" in text and "swap the addresses of lanes 8-15 and 16-23" in text
    assert "order='col'" in text
