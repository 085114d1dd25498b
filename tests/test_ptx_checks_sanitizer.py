"""fragsim's checks against NVIDIA compute-sanitizer on an H100 (gpu_check/ptx/sanitizer.py), replayed
from the record tests/data/ptx/checks/sanitizer/ptx_sanitizer.json (no GPU): for every kernel of the
checks and of the corpus and every tool (memcheck, racecheck, synccheck), the tool reported what
fragsim's findings imply it would (``ptx_sanitizer.expected``: memcheck out of bounds and misaligned,
racecheck races and cp.async data read early, synccheck divergent barriers, a hang for a deadlock;
nothing where fragsim finds nothing), or ``DIFFERENCES`` says what it reported instead and why.
Kernels missing from the record (added since) are skipped until it is measured again."""

from pathlib import Path

import pytest

from fragsim.gpu_check.ptx import sanitizer as S

RECORD = Path(__file__).parent / "data" / "ptx" / "checks" / "sanitizer" / "ptx_sanitizer.json"
RACECHECK_WGMMA = ("racecheck reports no hazard with wgmma's shared-memory reads: in wgmma_smem_bug a st.shared "
                   "overwrites B while the wgmma reading it is in flight and racecheck is silent, though memcheck "
                   "sees those reads (wgmma_desc_bug: 'Invalid __shared__ read of size 256 bytes' at the wgmma)")
#: (case, tool) where the tool reported other than fragsim's findings imply: what it reported
#: (``classify``'s words, racecheck's INFO level aside) and why.
DIFFERENCES: dict[tuple[str, str], tuple[frozenset, str]] = {
    ("mma_partial_bug", "synccheck"): (frozenset(), (
        "synccheck checks barriers (__syncthreads, __syncwarp and their cooperative-groups forms), not which "
        "lanes execute a .sync.aligned mma: lanes 0-15 ran it alone without an error")),
    ("shfl_mask_bug", "synccheck"): (frozenset(), (
        "synccheck does not check a shfl.sync member mask against the lanes that execute it (mask 0xffffffff "
        "from lanes 0-15: undefined by the PTX ISA); the H100 ran it without an error")),
    ("syncwarp_partial_bug", "synccheck"): (frozenset(), (
        "lanes 0-15 executed bar.warp.sync -1 while lanes 16-31 branched around it; the H100 let them pass "
        "and synccheck reported nothing")),
    ("syncwarp_partial_bug", "racecheck"): (frozenset({"race"}), (
        "racecheck reports the consequence: lanes 16-31 took no part in the __syncwarp, so the read of "
        "s[lane ^ 1] (line 71) races with the store (line 69), a WARNING-level hazard. fragsim reports the "
        "cause (divergent) and lets any bar.warp.sync order the whole warp")),
    ("corpus:cutlass_wgmma_sm90_tn", "racecheck"): (frozenset(), (
        "the race is between other threads' cp.async bytes (racecheck follows cp.async: cp_async_barrier_bug) "
        f"and the wgmma that reads them with no __syncthreads() between; {RACECHECK_WGMMA}")),
    ("corpus:cutlass_wgmma_sm90_nt", "racecheck"): (frozenset(), (
        f"the TN kernel's race, with MN-major operands; {RACECHECK_WGMMA}")),
    ("bulk_parity_bug", "memcheck"): (frozenset(), (
        "the wait names the phase parity that has already completed, so on the H100 it passes at once and "
        "the kernel reads the buffer before the bulk copy lands: no error, no hang (under racecheck, which "
        "slows the kernel, it hung). fragsim lands the copy before the wait tests the phase, finds the "
        "phase it waits for never completes, and reports the deadlock")),
    ("bulk_parity_bug", "synccheck"): (frozenset(), (
        "as under memcheck: the wrong-parity wait passed at once on the H100, no error, no hang")),
    ("wgmma_race_bug", "racecheck"): (frozenset(), (
        "the operands are stored with st.shared and read by another warp's wgmma with no barrier between: "
        f"{RACECHECK_WGMMA}")),
}
#: Differences of a record made with CuPy's memory pool (before measure allocated each buffer exactly).
POOLED: dict[tuple[str, str], tuple[frozenset, str]] = {
    ("oob_global_bug", "memcheck"): (frozenset(), (
        "in (32 floats, 128 bytes) came from CuPy's memory pool, whose blocks are multiples of 512 bytes: "
        "in[32] lies inside the pool's allocation, and memcheck bounds an access by the allocation it lies "
        "in (its report of misaligned_global_bug names the pool's 1,024-byte block of a 528-byte buffer). "
        "fragsim bounds it by the buffer's own bytes")),
}
NAMES = [c.name for c in S.CASES] + [f"corpus:{k}" for k in S.CORPUS]


def record() -> dict:
    if not RECORD.is_file():
        pytest.skip(f"no H100 record ({RECORD.relative_to(Path(__file__).parent.parent)}): "
                    "python -m fragsim.gpu_check.ptx.sanitizer measure --out tests/data/ptx/checks/sanitizer")
    return S.load(RECORD)


def differences(data: dict) -> dict[tuple[str, str], tuple[frozenset, str]]:
    return DIFFERENCES | (POOLED if data.get("allocation") != "exact" else {})


def test_memcheck_records_are_read_as_out_of_bounds_or_misaligned():
    text = """========= Invalid __global__ read of size 4 bytes
=========     at oob_global_bug+0x90
=========     by thread (32,0,0) in block (0,0,0)
=========     Address 0x7f0000000080 is out of bounds
=========
========= Invalid __global__ read of size 16 bytes
=========     at misaligned_global_bug+0x70
=========     Address 0x7f0000000004 is misaligned
========= ERROR SUMMARY: 2 errors"""
    assert S.classify("memcheck", text) == {"out_of_bounds": 1, "misaligned": 1}


def test_only_the_sanitizers_own_lines_are_read():
    """The launched program's "misaligned_global_ok: done" names no misaligned access."""
    text = "========= COMPUTE-SANITIZER\nmisaligned_global_ok: done\n========= ERROR SUMMARY: 0 errors"
    assert S.classify("memcheck", text) == {}


def test_racecheck_and_synccheck_reports_are_read_by_their_level():
    race = """========= Error: Race reported between Write access at race_raw_bug+0x30
=========     and Read access at race_raw_bug+0x50 [64 hazards]
========= Info: Race reported between Write access at race_waw_ok+0x20
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 0 warnings)"""
    assert S.classify("racecheck", race) == {"race": 1, "race_info": 1}
    assert S.classify("synccheck", "========= Barrier error detected. Divergent thread(s) in warp") == {"divergent": 1}


def test_what_a_tool_should_report_follows_from_fragsims_kinds():
    assert S.expected(("race",), "racecheck") == {"race"} and S.expected(("race",), "memcheck") == set()
    assert S.expected(("cp_async_in_flight",), "racecheck") == {"race"}
    assert S.expected(("deadlock",), "memcheck") == {"hang"}
    assert S.expected(("wgmma_fence",), "racecheck") == S.expected((), "synccheck") == set()


@pytest.mark.parametrize("case", NAMES)
def test_each_tool_reports_what_fragsims_findings_imply_or_the_difference_says_why(case):
    data = record()
    rows = {r["case"]: r for r in S.table(data)}
    if case not in rows:
        pytest.skip(f"{case} is not in the record of {data['date']}: measure again")
    row = rows[case]
    diff = differences(data)
    for tool in row["tools"]:
        want = set(diff[(case, tool)][0]) if (case, tool) in diff else S.expected(row["fragsim"], tool)
        assert S.said(row, tool) == want, (
            f"{case}, {tool}: the record says {sorted(S.said(row, tool))}, fragsim finds {list(row['fragsim'])}: "
            "explain the difference in DIFFERENCES")


def test_every_difference_is_one_of_a_known_kernel_and_tool_and_differs():
    data = record()
    rows = {r["case"]: r for r in S.table(data)}
    for (case, tool), (said, why) in differences(data).items():
        assert case in NAMES and tool in S.TOOLS and why, (case, tool)
        assert set(said) != S.expected(S.fragsim_kinds(case), tool), (case, tool)
        if case in rows:
            assert tool in rows[case]["tools"], (case, tool)
