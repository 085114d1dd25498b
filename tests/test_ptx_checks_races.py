"""run_kernel(check=...).races and `fragsim run --check`: shared-memory races reported one finding per
pair of lines (fragsim.ptx.checks.Race) -- the accesses counted, the warps and CTAs named, races
between warps before races within one, the barrier that fixes each named by both its lines -- and a
plain `fragsim run` of a kernel that accessed shared memory saying that --check would look for them.

The kernels are written here: two warps store s[t] = t, then thread t reads s[(t + shift) % n]."""

import json

import numpy as np
import pytest

from fragsim.cli import main
from fragsim.gpu_check.ptx import sanitizer as S
from fragsim.ptx.checks import KernelIssue
from fragsim.ptx.run import run_kernel

SHARED = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .shared .align 4 .b32 s[64];
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, s;
    add.u32 %r4, %r3, %r2;
    {loc_store}
    st.shared.u32 [%r4], %r1;
    {sync}
    {first}
    add.u32 %r5, %r1, {shift};
    rem.u32 %r5, %r5, {n};
    shl.b32 %r5, %r5, 2;
    add.u32 %r6, %r3, %r5;
    {loc_load}
    ld.shared.u32 %r7, [%r6];
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd3, %rd2, %rd3;
    st.global.u32 [%rd3], %r7;
    ret;
}}
{files}"""

#: a read of the neighbouring lane's word (s[t ^ 1]: its own warp's) before the read of ``shift``
NEIGHBOUR = "xor.b32 %r8, %r1, 1;\n    shl.b32 %r8, %r8, 2;\n    add.u32 %r9, %r3, %r8;\n    ld.shared.u32 %r10, [%r9];"

NO_SHARED = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd3, %rd2, %rd3;
    st.global.u32 [%rd3], %r1;
    ret;
}
"""


def kernel(shift: int = 32, n: int = 64, sync: str = "", first: str = "", loc: bool = False) -> str:
    """The PTX: thread t stores s[t] = t, ``sync``, ``first``, then reads s[(t + shift) % n]; ``loc``:
    with .loc debug lines placing the store at gemm64.cu:15 and the read at gemm64.cu:30."""
    return SHARED.format(shift=shift, n=n, sync=sync, first=first,
                         loc_store=".loc 1 15 5" if loc else "", loc_load=".loc 1 30 5" if loc else "",
                         files='.file 1 "gemm64.cu"' if loc else "")


def line_of(ptx: str, text: str) -> int:
    """The PTX line (1-based) of the instruction ``text`` (the only one)."""
    (k,) = [i for i, x in enumerate(ptx.splitlines(), 1) if x.strip() == text]
    return k


def run(ptx: str, block: int = 64, grid: int = 1, check="continue"):
    return run_kernel(ptx, "k", grid=grid, block=block, args=[np.zeros(grid * block, np.uint32)], check=check)


STORE, LOAD = "st.shared.u32 [%r4], %r1;", "ld.shared.u32 %r7, [%r6];"


# ---- one finding per pair of lines ------------------------------------------------------------------

def test_a_missing_barrier_between_warps_is_one_race_naming_both_lines_and_the_barrier():
    ptx = kernel()
    (race,) = run(ptx).races
    assert (race.write_lines, race.other_lines) == ([line_of(ptx, STORE)], [line_of(ptx, LOAD)])
    assert race.fix == (f"a barrier (bar.sync / __syncthreads) between line {line_of(ptx, STORE)} and line "
                        f"{line_of(ptx, LOAD)} of the PTX")


def test_a_race_counts_every_thread_access_and_names_the_warps_on_both_sides():
    (race,) = run(kernel()).races               # each of the 64 threads reads the other warp's word
    assert (race.hazards, race.count, race.across, race.warps, race.ctas) == (
        ["read-after-write"], 64, 64, [0, 1], [(0, 0, 0)])


def test_a_race_keeps_the_per_warp_findings_it_groups():
    r = run(kernel())
    (race,) = r.races
    assert race.issues == r.issues and [(i.warp, i.lanes) for i in race.issues] == [(0, "0-31"), (1, "0-31")]


def test_a_race_in_several_ctas_counts_them_all_and_names_the_ctas():
    (race,) = run(kernel(), grid=2).races
    assert (race.count, race.ctas) == (128, [(0, 0, 0), (1, 0, 0)])
    assert " in 2 CTAs between warps 0-1" in str(race)


def test_a_race_names_the_cuda_lines_where_the_ptx_has_loc():
    (race,) = run(kernel(loc=True)).races
    assert (race.write, race.other) == ("gemm64.cu:15", "gemm64.cu:30")
    assert race.fix == "a barrier (bar.sync / __syncthreads) between line 15 and line 30 of gemm64.cu"


def test_a_race_prints_as_one_line_saying_what_happened_and_the_fix():
    (race,) = run(kernel(loc=True)).races
    assert str(race) == ("race: line 30 of gemm64.cu reads what line 15 wrote, nothing ordering them "
                         f"(read-after-write; PTX lines {race.write_lines[0]} -> {race.other_lines[0]}): 64 accesses "
                         "between warps 0-1; fix: a barrier (bar.sync / __syncthreads) between line 15 and line 30 "
                         "of gemm64.cu")


def test_the_barrier_removes_the_race():
    assert run(kernel(sync="bar.sync 0;")).races == []


def test_a_write_after_read_in_a_loop_is_fixed_by_a_barrier_before_the_next_iterations_write():
    (race,) = S.run_cpu(S.BY_NAME["race_war_bug"]).races          # the store of line 27, the read of line 29
    assert race.hazards == ["write-after-read"] and race.count == 128      # two later tiles of 64 threads
    assert race.fix == ("a barrier (bar.sync / __syncthreads) between line 29 and the next execution of line 27 of "
                        "tests/data/ptx/src/checks/race.cu")


# ---- between warps first, within a warp after --------------------------------------------------------

def test_a_race_within_one_warp_only_is_fixed_by_syncwarp():
    (race,) = run(kernel(shift=1, n=32), block=32).races
    assert race.within_warp and race.across == 0
    assert race.fix.startswith("__syncwarp (bar.warp.sync) or a barrier (bar.sync / __syncthreads) between line ")


def test_a_race_within_a_warp_comes_after_a_race_between_warps_found_later():
    ptx = kernel(first=NEIGHBOUR)           # s[t ^ 1] (its own warp's) is read before s[(t + 32) % 64]
    races = run(ptx).races
    assert [r.within_warp for r in races] == [False, True]
    assert races[0].other_lines == [line_of(ptx, LOAD)]


def test_a_race_with_both_kinds_of_access_counts_those_only_within_a_warp():
    (race,) = run(kernel(shift=16)).races   # lanes 0-15 of each warp read their own warp's words
    assert (race.count, race.across) == (64, 32) and not race.within_warp
    assert "(32 of them only within a warp)" in str(race)


def test_with_check_stop_the_race_shown_is_one_between_warps():
    with pytest.raises(KernelIssue) as e:
        run(kernel(shift=16), check=True)   # warp 0: lanes 0-15 read warp 0's words, lanes 16-31 warp 1's
    assert (e.value.issue.warp, e.value.issue.lanes) == (0, "16-31")
    assert "by warp 1 lane 0 with no barrier between" in e.value.issue.message


def test_with_check_stop_the_kernel_issue_carries_its_race_and_fix():
    with pytest.raises(KernelIssue) as e:
        run(kernel(loc=True), check=True)
    assert e.value.race is not None
    assert e.value.race.fix == "a barrier (bar.sync / __syncthreads) between line 15 and line 30 of gemm64.cu"


def test_without_checks_run_races_is_none():
    assert run(kernel(), check=False).races is None


# ---- fragsim run ------------------------------------------------------------------------------------

def run_cli(tmp_path, capsys, ptx: str, *extra: str) -> tuple[int, str]:
    """``fragsim run`` of ``ptx`` with 64 threads: (exit status, what it printed)."""
    (tmp_path / "k.ptx").write_text(ptx)
    np.save(tmp_path / "out.npy", np.zeros(64, np.uint32))
    code = main(["run", str(tmp_path / "k.ptx"), "--block", "64", "--arg", str(tmp_path / "out.npy"),
                 "-o", str(tmp_path / "o"), *extra])
    return code, capsys.readouterr().out


def test_fragsim_run_check_continue_prints_one_race_per_pair_of_lines(tmp_path, capsys):
    code, out = run_cli(tmp_path, capsys, kernel(loc=True), "--check", "continue")
    assert code == 1 and out.count("race: ") == 1
    assert "fix: a barrier (bar.sync / __syncthreads) between line 15 and line 30 of gemm64.cu" in out
    assert out.rstrip().endswith("1 issue(s) (2 per warp: --json lists them)")


def test_fragsim_run_check_prints_the_fix_of_the_race_it_stopped_at(tmp_path, capsys):
    code, out = run_cli(tmp_path, capsys, kernel(loc=True), "--check")
    assert code == 1 and out.splitlines()[-2:] == [
        "fix: a barrier (bar.sync / __syncthreads) between line 15 and line 30 of gemm64.cu",
        "stopped at the first issue (--check continue lists them all)"]


def test_fragsim_run_check_json_lists_the_races_and_the_per_warp_issues(tmp_path, capsys):
    code, out = run_cli(tmp_path, capsys, kernel(), "--check", "continue", "--json")
    body = json.loads(out)
    assert code == 1 and len(body["issues"]) == 2 and [r["count"] for r in body["races"]] == [64]


def test_a_plain_run_of_a_kernel_that_accessed_shared_memory_ends_naming_check(tmp_path, capsys):
    code, out = run_cli(tmp_path, capsys, kernel(sync="bar.sync 0;"))
    assert code == 0 and out.splitlines()[-1] == "shared memory was not checked for races: add --check"


def test_a_run_with_check_does_not_name_check(tmp_path, capsys):
    code, out = run_cli(tmp_path, capsys, kernel(sync="bar.sync 0;"), "--check")
    assert code == 0 and "add --check" not in out


def test_a_plain_run_of_a_kernel_without_shared_memory_does_not_name_check(tmp_path, capsys):
    code, out = run_cli(tmp_path, capsys, NO_SHARED)
    assert code == 0 and "add --check" not in out


def test_run_says_whether_it_accessed_shared_memory():
    assert run(kernel(sync="bar.sync 0;"), check=False).shared_accessed
    assert not run(NO_SHARED, check=False).shared_accessed
