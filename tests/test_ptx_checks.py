"""run_kernel(check=...): kernel bugs found and named (fragsim.ptx.checks).

Every buggy kernel of tests/data/ptx/src/checks (sm_90a and sm_80 builds) is caught with the kind of
finding its line marked "// BUG <kind>" names, at that CUDA line, and its correct twin is clean; the
fields of a finding (CTA, warp, lanes, address, buffer) are those of the faulting access; "continue"
goes on as documented; the kernels of the PTX corpus come out clean but for their documented bugs."""

import re

import numpy as np
import pytest

from fragsim.cli import main
from fragsim.gpu_check.ptx import kernels as P
from fragsim.gpu_check.ptx import sanitizer as S
from fragsim.ptx.checks import KINDS, Issue, KernelIssue, options
from fragsim.ptx.run import run_kernel
from fragsim.ptx.state import PtxRuntimeError

BUGS = [(c, arch) for c in S.CASES if c.kind for arch in (("sm90a", "sm80") if c.sm80 else ("sm90a",))]
TWINS = [(c, arch) for c in S.CASES if not c.kind for arch in (("sm90a", "sm80") if c.sm80 else ("sm90a",))]


def ids(cases):
    return [f"{c.name}-{arch}" for c, arch in cases]


def cuda_line(issue: Issue) -> int:
    """The kernel's own CUDA line of a finding (its source is "file.cu:N" or "file.cu:N, inlined from ...")."""
    assert issue.source is not None
    return int(issue.source.split(",")[0].rsplit(":", 1)[1])


@pytest.mark.parametrize("case,arch", BUGS, ids=ids(BUGS))
def test_a_buggy_kernel_is_caught_with_its_kind_at_the_line_marked_bug(case, arch):
    issues = S.run_cpu(case, arch).issues
    assert issues, "no finding"
    assert issues[0].kind == case.kind
    assert {cuda_line(i) for i in issues if i.kind == case.kind} <= S.marked_lines(case)


@pytest.mark.parametrize("case,arch", TWINS, ids=ids(TWINS))
def test_the_correct_twin_is_clean(case, arch):
    assert S.run_cpu(case, arch).issues == []


def test_every_kind_has_a_buggy_kernel_and_every_buggy_kernel_a_twin():
    assert {c.kind for c in S.CASES if c.kind} == set(KINDS)
    assert all(S.twin(c) is not None for c in S.CASES if c.kind)


# ---- the fields of a finding ---------------------------------------------------------------------

def only(issues, kind):
    return [i for i in issues if i.kind == kind]


def test_out_of_bounds_global_names_the_thread_the_address_and_the_buffer_it_ran_past():
    (i,) = S.run_cpu(S.BY_NAME["oob_global_bug"]).issues
    assert (i.cta, i.warp, i.lanes) == ((0, 0, 0), 1, "0")          # thread 32 reads in[32]
    assert i.buffer == "args[0]" and i.address == 0x7F00_0000_0000 + 32 * 4
    assert "past its 128 bytes" in i.message


def test_out_of_bounds_shared_is_beyond_static_plus_dynamic_shared_memory():
    (i,) = S.run_cpu(S.BY_NAME["oob_shared_bug"]).issues
    assert (i.warp, i.lanes, i.address, i.buffer) == (1, "31", 256, "buf")


def test_misaligned_ldmatrix_names_the_address_lanes_whose_rows_are_off_16_bytes():
    (i,) = S.run_cpu(S.BY_NAME["ldmatrix_misaligned_bug"]).issues
    assert (i.kind, i.lanes, i.address, i.buffer) == ("misaligned", "0-7", 8, "tile")


def test_a_read_after_write_race_names_both_warps_and_the_writing_line():
    issues = S.run_cpu(S.BY_NAME["race_raw_bug"]).issues
    assert [(i.warp, i.lanes, i.address) for i in issues] == [(0, "0-31", 0x80), (1, "0-31", 0)]
    assert all("read-after-write" in i.message and "no barrier" in i.message for i in issues)


def test_a_write_after_read_race_recurs_once_per_loop_iteration_as_one_finding():
    issues = S.run_cpu(S.BY_NAME["race_war_bug"]).issues          # three tiles: two overwrite a read tile
    assert {i.count for i in issues} == {2} and all("write-after-read" in i.message for i in issues)


def test_lanes_of_one_warp_race_without_syncwarp():
    (i,) = S.run_cpu(S.BY_NAME["race_warp_bug"]).issues
    assert i.warp == 0 and "__syncwarp" in i.message


def test_a_cp_async_destination_read_before_its_wait_names_the_copy():
    issues = S.run_cpu(S.BY_NAME["cp_async_early_bug"]).issues
    assert [i.kind for i in issues] == ["cp_async_in_flight"] * 2
    assert all("has not landed" in i.message for i in issues)


def test_a_wgmma_accumulator_read_before_wait_group_names_the_register_and_the_wgmma():
    (i,) = S.run_cpu(S.BY_NAME["wgmma_acc_bug"]).issues
    assert i.kind == "wgmma_in_flight" and i.lanes == "0-31" and "st.global.f32 accesses %f" in i.message


def test_a_deadlock_says_who_waits_at_which_barrier():
    issues = S.run_cpu(S.BY_NAME["deadlock_bug"]).issues
    assert [(i.kind, i.warp) for i in issues] == [("deadlock", None)] * 2
    assert "threads 0-31 wait at barrier 1, which expects 64" in issues[0].message
    assert "threads 32-63 wait at barrier 2" in issues[0].message


def test_uninitialized_reads_are_reported_only_when_asked_for():
    c = S.BY_NAME["uninit_bug"]
    assert S.run_cpu(c, check="continue").issues == []
    (i,) = S.run_cpu(c).issues
    assert (i.kind, i.lanes, i.address, i.buffer) == ("uninitialized", "31", 0x80, "s")


def test_an_issue_prints_as_one_line_naming_kind_line_source_cta_warp_and_lanes():
    (i,) = S.run_cpu(S.BY_NAME["race_warp_bug"]).issues
    text = str(i)
    assert "\n" not in text
    assert text.startswith(f"race: line {i.line} (tests/data/ptx/src/checks/race.cu:")
    assert ": CTA (0,0,0) warp 0 lanes 0-31: read of 4 bytes at " in text
    assert i.to_dict()["kind"] == "race"


# ---- stop, continue, no checks ------------------------------------------------------------------

def test_check_true_stops_at_the_first_finding_with_a_kernel_issue():
    with pytest.raises(KernelIssue) as e:
        S.run_cpu(S.BY_NAME["race_raw_bug"], check=True)
    assert e.value.issue.kind == "race" and isinstance(e.value, ValueError) and str(e.value) == str(e.value.issue)


def test_without_checks_a_fault_stops_the_run_with_the_message_it_always_had():
    with pytest.raises(PtxRuntimeError, match=r"line \d+: CTA \(0,0,0\) thread \(32,0,0\) \(warp 1, lane 0\): global "
                                              r"load of 4 bytes at 0x7f0000000080 is outside every buffer"):
        S.run_cpu(S.BY_NAME["oob_global_bug"], check=False)


def test_without_checks_run_issues_is_none_and_with_them_a_list():
    c = S.BY_NAME["race_raw_ok"]
    assert S.run_cpu(c, check=False).issues is None
    assert S.run_cpu(c, check="stop").issues == []


def test_continuing_an_out_of_bounds_load_reads_zeros():
    c = S.BY_NAME["oob_global_bug"]
    inp, out, n = c.args(np.random.default_rng(0))
    r = run_kernel(str(c.ptx()), c.name, block=c.block, args=[inp, out, n], check="continue")
    assert len(r.issues) == 1 and out[32] == 0 and np.array_equal(out[:32], inp)


def test_continuing_a_misaligned_cp_async_drops_the_copy():
    c = S.BY_NAME["cp_async_misaligned_bug"]
    inp, out = c.args(np.random.default_rng(0))
    run_kernel(str(c.ptx()), c.name, block=c.block, args=[inp, out], check="continue")
    assert not out.any()                          # nothing landed in shared memory, which reads as zeros


def test_continuing_a_partial_warp_mma_skips_it_for_that_warp():
    c = S.BY_NAME["mma_partial_bug"]
    a, b, d = c.args(np.random.default_rng(0))
    r = run_kernel(str(c.ptx()), c.name, block=c.block, args=[a, b, d], check="continue")
    assert [i.kind for i in r.issues] == ["divergent"] and not d.any()


def test_continuing_a_deadlock_lets_the_waiting_threads_go_on():
    c = S.BY_NAME["deadlock_bug"]
    (out,) = c.args(np.random.default_rng(0))
    run_kernel(str(c.ptx()), c.name, block=c.block, args=[out], check="continue")
    assert np.array_equal(out, np.arange(64) // 32)


def test_continuing_an_mbarrier_deadlock_lets_the_waits_return_true():
    c = S.BY_NAME["bulk_tx_bug"]              # expects 16 bytes more than it copies
    inp, out = c.args(np.random.default_rng(0))
    r = run_kernel(str(c.ptx()), c.name, block=c.block, args=[inp, out], check="continue")
    assert r.issues[0].kind == "deadlock" and "tx-count 16" in r.issues[0].message
    assert np.array_equal(out, inp[::-1][:64])           # the copy landed; the reads went on
    with pytest.raises(PtxRuntimeError, match="deadlock: .* wait .* for phase 0 to complete"):
        run_kernel(str(c.ptx()), c.name, block=c.block, args=[inp, out])


def test_a_bulk_copy_read_before_its_mbarrier_wait_names_the_copy():
    issues = S.run_cpu(S.BY_NAME["bulk_early_bug"]).issues
    assert [(i.kind, i.warp) for i in issues] == [("cp_async_in_flight", 0), ("cp_async_in_flight", 1)]
    assert all("the bulk copy of line" in i.message and "has not completed" in i.message for i in issues)


@pytest.mark.parametrize("bad,error", [("sometimes", ValueError), ("stop,continue", ValueError), (5, TypeError),
                                       ("", ValueError)])
def test_check_takes_stop_continue_and_uninitialized(bad, error):
    with pytest.raises(error, match="check"):
        options(bad)


def test_check_words_read_alike_as_a_string_or_a_list():
    assert options("continue,uninitialized") == options(["uninitialized", "continue"]) == (False, True)
    assert options(True) == options("stop") == (True, False) and options(False) is None


# ---- barriers that order only some threads --------------------------------------------------------

NAMED = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .shared .align 4 .b32 s[96];
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, s;
    add.u32 %r4, %r3, %r2;
    st.shared.u32 [%r4], %r1;
    setp.lt.u32 %p1, %r1, 64;
    @!%p1 bra $L_done;
    {sync}
    add.u32 %r5, %r1, {shift};
    rem.u32 %r5, %r5, {mod};
    shl.b32 %r5, %r5, 2;
    add.u32 %r6, %r3, %r5;
    ld.shared.u32 %r7, [%r6];
$L_done:
    ret;
}}
"""


def named(sync: str, shift: int, mod: int):
    """Three warps store their thread index into s[t]; warps 0 and 1 then ``sync`` and thread t reads
    s[(t + shift) % mod]; warp 2 exits."""
    return run_kernel(NAMED.format(sync=sync, shift=shift, mod=mod), "k", block=96, args=[np.zeros(1, np.uint32)],
                      check="continue").issues


def test_bar_sync_with_a_count_orders_the_threads_that_take_part():
    assert named("bar.sync 1, 64;", 32, 64) == []           # warps 0 and 1 read each other's words


def test_bar_sync_with_a_count_does_not_order_a_warp_that_takes_no_part():
    issues = named("bar.sync 1, 64;", 64, 96)              # warp 0 reads warp 2's words, warp 1 warp 0's
    assert [(i.kind, i.warp, i.address) for i in issues] == [("race", 0, 256)]


def test_a_bar_arrive_orders_the_arriving_warps_writes_before_the_waiting_warps_reads_only():
    arrive = "setp.lt.u32 %p2, %r1, 32;\n    @%p2 bar.arrive 1, 64;\n    @!%p2 bar.sync 1, 64;"
    issues = named(arrive, 32, 64)          # warp 1 waits, warp 0 (arrived, not waiting) reads warp 1's words
    assert [(i.kind, i.warp) for i in issues] == [("race", 0)]


# ---- what makes generic-proxy writes visible to the async proxy --------------------------------------

PROXY = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .shared .align 128 .b32 s[64];
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, s;
    add.u32 %r4, %r3, %r2;
    st.shared.u32 [%r4], %r1;
    {before}
    bar.sync 0;
    {after}
    setp.eq.u32 %p1, %r1, 0;
    @!%p1 bra $L_done;
    cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r3], 256;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
$L_done:
    ret;
}}
"""
FENCE = "fence.proxy.async.shared::cta;"


def proxy(before: str = "", after: str = ""):
    """Two warps store s[t] = t, ``before``; bar.sync; ``after``; thread 0 copies s to global memory with
    cp.async.bulk (an async-proxy read of s): the findings."""
    out = np.zeros(64, np.uint32)
    issues = run_kernel(PROXY.format(before=before, after=after), "k", block=64, args=[out], check="continue").issues
    assert np.array_equal(out, np.arange(64))
    return [(i.kind, i.address) for i in issues]


def test_stores_read_by_the_async_proxy_need_a_fence_proxy_async():
    assert proxy() == [("proxy_fence", 0)]
    assert proxy(before=FENCE) == []


def test_a_fence_after_the_barrier_covers_the_writes_the_barrier_ordered_before_it():
    assert proxy(after=f"setp.eq.u32 %p2, %r1, 0;\n    @%p2 {FENCE}") == []


def test_a_fence_covers_neither_other_warps_unordered_writes_nor_later_writes():
    assert proxy(before=f"setp.ge.u32 %p2, %r1, 32;\n    @%p2 {FENCE}") == [("proxy_fence", 0)]   # warp 0's s[0]
    assert proxy(before=f"{FENCE}\n    st.shared.u32 [%r4], %r1;") == [("proxy_fence", 0)]


# ---- the corpus -----------------------------------------------------------------------------------

FILES = [c for c in P.cases() if c.shape == 0 and c.seed == P.BY_NAME[c.kernel].seeds[0]]


def corpus_run(case, check, monkeypatch):
    """(the outputs, the Run) of a corpus launch as ptx_kernels builds it, with ``check``."""
    runs = []

    def checked(*args, **kw):
        runs.append(run_kernel(*args, **kw, check=check))
        return runs[-1]

    monkeypatch.setattr("fragsim.ptx.run.run_kernel", checked)
    return P.fragsim_outputs(case, case.launch()), runs[0]


@pytest.mark.parametrize("case", FILES, ids=[c.id for c in FILES])
def test_the_corpus_kernels_are_clean_but_for_their_documented_bugs_and_checks_change_no_bit(case, monkeypatch):
    """Every kernel of the corpus finds what gpu_check.ptx.sanitizer.CORPUS says (the bugs documented in
    docs/kernel-bugs.md; nothing for the kernels it does not name)."""
    plain, _ = corpus_run(case, False, monkeypatch)
    checked, r = corpus_run(case, "continue,uninitialized", monkeypatch)
    assert {i.kind for i in r.issues} == set(S.CORPUS.get(case.kernel, ()))
    assert all(np.array_equal(plain[k].view(np.uint8), checked[k].view(np.uint8)) for k in plain)


def test_a_wgmma_reading_tma_boxes_before_their_mbarrier_completes_is_caught(monkeypatch):
    """tma_wgmma with its mbarrier waits taken out: each wgmma reads boxes whose tensor copies
    (cp.async.bulk.tensor) have not completed."""
    case = next(c for c in FILES if c.kernel == "tma_wgmma")
    text = (P.corpus() / case.file).read_text()
    ptx, n = re.subn(r"mbarrier\.try_wait\.parity\.shared::cta\.b64 done, \[%r\d+\], %r\d+;",
                     "setp.eq.u32 done, 0, 0;", text)
    assert n >= 2
    runs = []

    def mutated(path, *args, **kw):
        runs.append(run_kernel(ptx, *args, **kw, check="continue"))
        return runs[-1]

    monkeypatch.setattr("fragsim.ptx.run.run_kernel", mutated)
    P.fragsim_outputs(case, case.launch())
    assert {i.kind for i in runs[0].issues} == {"cp_async_in_flight"}
    assert all(i.message.startswith("wgmma.mma_async reads") for i in runs[0].issues)


# ---- the command line -------------------------------------------------------------------------------

def test_fragsim_run_check_continue_prints_each_finding_a_race_once_for_its_lines_and_exits_1(tmp_path, capsys):
    np.save(tmp_path / "out.npy", np.zeros(64, np.float32))
    code = main(["run", str(S.BY_NAME["race_raw_bug"].ptx()), "--kernel", "race_raw_bug", "--block", "64",
                 "--arg", str(tmp_path / "out.npy"), "-o", str(tmp_path / "o"), "--check", "continue"])
    out = capsys.readouterr().out           # the two warps' findings are one race: line 9 reads what line 8 wrote
    assert code == 1 and out.count("race: line 9 of ") == 1
    assert out.rstrip().endswith("1 issue(s) (2 per warp: --json lists them)")


def test_fragsim_run_check_stops_at_the_first_finding_and_a_clean_run_exits_0(tmp_path, capsys):
    np.save(tmp_path / "out.npy", np.zeros(64, np.float32))
    common = ["--block", "64", "--arg", str(tmp_path / "out.npy"), "-o", str(tmp_path / "o"), "--check"]
    assert main(["run", str(S.BY_NAME["race_raw_bug"].ptx()), "--kernel", "race_raw_bug", *common]) == 1
    assert capsys.readouterr().out.endswith("stopped at the first issue (--check continue lists them all)\n")
    assert main(["run", str(S.BY_NAME["race_raw_ok"].ptx()), "--kernel", "race_raw_ok", *common]) == 0
