"""fragsim's checks against NVIDIA compute-sanitizer on an H100 (gpu_check/ptx_sanitizer.py): where a
sanitizer tool checks a kind of finding (memcheck: out of bounds, misaligned; racecheck: shared-memory
races, cp.async data read early; synccheck: divergent barriers and warp synchronisation, deadlocks), it
reports each buggy kernel fragsim catches and is quiet on its correct twin.  The record
(tests/data/ptx/checks/sanitizer/ptx_sanitizer.json) is replayed here; the tests skip until it exists."""

from pathlib import Path

import pytest

from fragsim.gpu_check import ptx_sanitizer as S

RECORD = Path(__file__).parent / "data" / "ptx" / "checks" / "sanitizer" / "ptx_sanitizer.json"
#: (case, tool) where the H100's sanitizer and fragsim part, and why.
DIFFERENCES: dict[tuple[str, str], str] = {}
COVERED = [c for c in S.CASES if c.kind in S.TOOL_OF]
TWINS = [c for c in S.CASES if c.kind is None]


def rows() -> dict:
    if not RECORD.is_file():
        pytest.skip(f"no H100 record yet ({RECORD.relative_to(Path(__file__).parent.parent)}): "
                    "python -m fragsim.gpu_check.ptx_sanitizer measure --out tests/data/ptx/checks/sanitizer")
    return {r["case"]: r for r in S.table(S.load(RECORD))}


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


def test_racecheck_and_synccheck_reports_are_read_by_their_level():
    race = """========= Error: Race reported between Write access at race_raw_bug+0x30
=========     and Read access at race_raw_bug+0x50 [64 hazards]
========= Info: Race reported between Write access at race_waw_ok+0x20
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 0 warnings)"""
    assert S.classify("racecheck", race) == {"race": 1, "race_info": 1}
    assert S.classify("synccheck", "========= Barrier error detected. Divergent thread(s) in warp") == {"divergent": 1}


@pytest.mark.parametrize("case", COVERED, ids=[c.name for c in COVERED])
def test_the_tool_of_each_kind_reports_the_buggy_kernel(case):
    tool = S.TOOL_OF[case.kind]
    if (case.name, tool) in DIFFERENCES:
        pytest.xfail(DIFFERENCES[(case.name, tool)])
    said = rows()[case.name]["tools"][tool]
    wanted = {"race"} if tool == "racecheck" else {case.kind, "hang"} if case.kind == "deadlock" else {case.kind}
    assert set(said) & wanted, said


@pytest.mark.parametrize("case", TWINS, ids=[c.name for c in TWINS])
def test_no_tool_reports_a_correct_twin(case):
    for tool, said in rows()[case.name]["tools"].items():
        if (case.name, tool) in DIFFERENCES:
            continue
        assert set(said) <= {"race_info"}, (tool, said)
