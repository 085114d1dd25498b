"""The shared-memory traffic of a run (``run_kernel(..., report=True)``: ``run.shared``, ``run.totals``):
every instruction's warp executions, wavefronts and ideal wavefronts equal fragsim's bank model
(``fragsim.bank_conflicts``, validated against Nsight Compute) over the accesses the kernel makes,
one documented case each, and the report shows them by source line, worst first."""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest

import fragsim
from fragsim.cli import main
from fragsim.facts.hardware import WARP_LANES
from fragsim.gpu_check.ptx import kernels as P
from fragsim.gpu_check.ptx import traffic_kernels as T
from fragsim.ptx.memory import Buffer
from fragsim.ptx import ast as A
from fragsim.ptx import traffic as TR
from fragsim.ptx.traffic import (ATOM_CONFLICTS, ATOM_INST, ATOM_WAVEFRONTS, GMMA_WAVEFRONTS, INST_METRICS,
                                 LD_CONFLICTS, LD_WAVEFRONTS, LDGSTS_CONFLICTS, MISC_WAVEFRONTS, SHARED_WAVEFRONTS,
                                 ST_CONFLICTS, ST_WAVEFRONTS, by_warp)

#: Where the generated kernels' input buffer sits (cp.async's source-line classes read the address).
IN_ADDRESS = 0x7F00_0040_0000


def run_case(name: str, **kw) -> fragsim.ptx.run.Run:
    c = T.BY_NAME[name]
    b = T.buffers(threads=c.block)
    return fragsim.run_kernel(c.ptx(), grid=1, block=c.block, args=[Buffer(b["in"], address=IN_ADDRESS), b["out"]],
                              report=True, **kw)


def model(access: T.Access) -> tuple[int, int, int]:
    """(executions, wavefronts, ideal) of an access set by fragsim.bank_conflicts (the atomics' rule for
    "atom"; "atom.64": a compare-and-swap loop, no figures), warp by warp; an execution with mask 0
    is an idle one (no wavefront)."""
    n = wf = ideal = 0
    for w in range(T.WARPS):
        for addrs, mask in access.executions(w):
            n += 1
            if mask == 0 or access.op == "atom.64":
                continue
            if access.op.startswith("atom"):       # atom.cas: two wavefronts a round; atom.popc: POPC.INC
                a, m = TR.atom_wavefronts(np.asarray([addrs]), np.array([mask], np.uint32),
                                          distinct=access.op == "atom.popc")
                per = TR.ATOM_CAS_WAVEFRONTS if access.op == "atom.cas" else 1
                wf, ideal = wf + per * int(a[0]), ideal + per * int(m[0])
                continue
            src = None if access.src is None else IN_ADDRESS + access.src(w)
            r = fragsim.bank_conflicts(access.op, addrs, mask=None if access.op.startswith(("ldm", "stm")) else mask,
                                       src=src)
            wf, ideal = wf + r.wavefronts, ideal + r.ideal
    return n, wf, ideal


@pytest.mark.parametrize("case", [c for c in T.CASES if c.accesses and c.name != "atom_f32"], ids=lambda c: c.name)
def test_every_instruction_of_a_kernel_has_the_bank_models_figures_for_its_accesses(case):
    run = run_case(case.name)
    rows = list(run.shared)
    assert [r.op if r.kind != "atom" else "atom" for r in rows] == [a.op.split(".")[0] if a.op.startswith("atom")
                                                                    else a.op for a in case.accesses], case.doc
    for row, access in zip(rows, case.accesses):
        assert (row.executions, row.wavefronts, row.ideal) == model(access), f"{case.name}: {case.doc}"


def test_a_row_of_words_is_one_wavefront_per_warp_without_conflict():
    (row,) = run_case("ld_row").shared
    assert (row.executions, row.wavefronts, row.ideal, row.conflicts) == (2, 2, 2, 0)


def test_an_8_byte_stride_of_words_is_a_two_way_conflict_one_extra_wavefront_per_warp():
    (row,) = run_case("ld_stride2").shared
    assert (row.wavefronts, row.ideal, row.conflicts) == (4, 2, 2)


def test_ldmatrix_of_64_byte_rows_conflicts_four_ways_and_the_swizzled_tile_not_at_all():
    (plain,) = run_case("ldmatrix_plain").shared
    (swizzled,) = run_case("ldmatrix_swizzled").shared
    assert (plain.wavefronts, plain.ideal) == (2 * 16, 2 * 4)        # 4 phases of 4 wavefronts per warp
    assert (swizzled.wavefronts, swizzled.ideal) == (2 * 4, 2 * 4)


def test_cp_async_ca_of_16_bytes_takes_a_wavefront_per_8_lanes_and_cg_shows_none():
    (ca,) = run_case("cp_async_ca16").shared
    (cg,) = run_case("cp_async_cg16").shared
    assert (ca.kind, ca.executions, ca.wavefronts, ca.ideal) == ("ldgsts", 2, 2 * 4, 2 * 4)
    assert (cg.executions, cg.wavefronts, cg.ideal) == (2, 0, 0)      # bypasses L1: Nsight Compute shows 0


def test_vector_loads_take_one_phase_per_128_bytes_and_partner_lanes_with_one_address_merge():
    assert [(r.wavefronts, r.ideal) for r in run_case("ld_v2_row").shared] == [(2 * 2, 2 * 2)]
    assert [(r.wavefronts, r.ideal) for r in run_case("ld_v4_row").shared] == [(2 * 4, 2 * 4)]
    assert [(r.wavefronts, r.ideal) for r in run_case("ld_v2_pairs").shared] == [(2 * 1, 2 * 1)]


def test_lanes_a_predicate_turns_off_take_no_part():
    (row,) = run_case("predicated").shared       # 16 lanes at an 8-byte stride: no two in one bank
    assert (row.executions, row.wavefronts, row.conflicts) == (2, 2, 0)
    assert row.worst is not None and row.worst[2] == T.LOW


def test_a_warp_executes_an_instruction_once_per_step_that_reaches_it_divergent_paths_and_loop_trips_alike():
    high, low = run_case("branch").shared
    assert (high.executions, high.wavefronts) == (2, 2)        # 16 lanes on 16 banks
    assert (low.executions, low.wavefronts) == (2, 2 * 16)     # 16 lanes in bank 0
    (loop,) = run_case("loop").shared
    assert loop.executions == 2 * 3                            # 24, 16, then 8 lanes of each warp


def test_a_generic_load_that_lands_in_shared_memory_is_counted_as_a_shared_load():
    (row,) = run_case("generic").shared
    assert (row.generic, row.kind, row.wavefronts, row.ideal) == (True, "ld", 4, 2)
    assert run_case("generic").totals[INST_METRICS["ld"]] == 0     # an LD, not an LDS


def test_a_4_byte_atomic_takes_a_wavefront_per_lane_in_its_busiest_bank():
    (same,) = run_case("atom_same").shared      # 32 lanes at one word: they serialize
    assert (same.kind, same.executions, same.wavefronts, same.ideal, same.modelled) == ("atom", 2, 64, 2, True)
    (row,) = run_case("atom").shared            # lane l at word l
    assert (row.wavefronts, row.ideal) == (2, 2)
    (pairs,) = run_case("atom_pairs").shared    # two lanes at each word: the word's bank takes both
    assert pairs.wavefronts == 2 * 2
    t = run_case("atom_same").totals
    assert (t[ATOM_INST], t[ATOM_WAVEFRONTS], t[ATOM_CONFLICTS]) == (2, 64, 62)
    assert t[SHARED_WAVEFRONTS] == 64 + t[MISC_WAVEFRONTS]


def test_an_atomic_ptxas_makes_a_compare_and_swap_loop_is_counted_but_not_modelled():
    (row,) = run_case("atom_f32").shared        # atom.shared.add.f32: LDS, ATOMS.CAST.SPIN, a branch back
    assert (row.executions, row.wavefronts, row.modelled) == (2, 0, False)
    (row,) = run_case("atom_u64").shared
    assert (row.executions, row.modelled) == (2, False)
    assert "atom: not modelled" in run_case("atom_u64").shared.text()


def test_a_guarded_atomic_is_a_branch_a_warp_with_no_lane_on_does_not_issue_it():
    (row,) = run_case("atom_warp0_only").shared
    assert (row.executions, row.idle) == (1, 0)


def test_the_totals_are_the_rows_summed_under_nsight_computes_counters():
    t = run_case("st_stride2").totals          # st at an 8-byte stride, a barrier, a read-back
    assert (t[ST_WAVEFRONTS], t[ST_CONFLICTS], t[LD_WAVEFRONTS], t[LD_CONFLICTS]) == (4, 2, 2, 0)
    assert (t[INST_METRICS["st"]], t[INST_METRICS["ld"]]) == (2, 2)
    t = run_case("ldmatrix_plain").totals      # ldmatrix: counted with the loads, executed as LDSM
    assert (t[LD_WAVEFRONTS], t[LD_CONFLICTS], t[INST_METRICS["ldsm"]], t[INST_METRICS["ld"]]) == (32, 24, 2, 0)


def test_a_warp_whose_lanes_are_all_off_issues_a_load_store_ldmatrix_or_cp_async_idle():
    """One execution and one op_misc wavefront, no data wavefront (MISC_PER_IDLE)."""
    for name, kind in (("warp0_only", "ld"), ("st_warp0_only", "st"), ("ldmatrix_warp0_only", "ldsm"),
                       ("cp_async_warp0_only", "ldgsts")):
        run = run_case(name)
        row = run.shared[0]
        assert (row.kind, row.executions, row.idle) == (kind, 2, 1), name
        without = run.totals[MISC_WAVEFRONTS] - run.shared.barrier_misc - 3 * 2 * (kind == "ldgsts")
        assert without == T.WARPS + 1, name
    assert run_case("warp0_only").totals[INST_METRICS["ld"]] == 2


def test_ptxas_three_never_executed_lds_come_with_each_basic_blocks_first_cp_async_each_time_it_runs():
    t = run_case("cp_async_ca16_stride").totals              # one block, once per warp
    assert t[INST_METRICS["ld"]] == 3 * T.WARPS
    assert t[INST_METRICS["ldgsts"]] == T.WARPS and t[LDGSTS_CONFLICTS] == 2 * (16 - 4)
    t = run_case("cp_async_loop2").totals                    # a loop's block, two trips
    assert t[INST_METRICS["ld"]] == 3 * T.WARPS * 2 and t[MISC_WAVEFRONTS] == T.WARPS * (1 + 3 * 2)
    t = run_case("cp_async_two_blocks").totals               # warp 0 one block, warp 1 another, both a third
    assert t[INST_METRICS["ld"]] == 3 + 3 + 3 * 2
    t = run_case("cp_async_warp0_only").totals               # the block's first cp.async idle in warp 1
    assert t[INST_METRICS["ld"]] == 3 * T.WARPS


def test_the_first_cp_async_of_every_basic_block_of_hgemm_is_where_ptxas_puts_its_lds():
    k = P.BY_NAME["hgemm_cpasync"]
    g = k.build(k.shapes[0], k.seeds[0])
    run = fragsim.run_kernel(str(P.corpus() / "hgemm_cpasync.sm90a.ptx"), grid=g.grid, block=g.block,
                             dynamic_smem=g.smem, args=[g.buffers[a].copy() if isinstance(a, str) else a for a in g.args])
    assert [op.line for op in TR.block_first_copies(run.program.ops)] == [332, 360, 388, 436]   # the SASS's @!PT LDS


def test_misc_wavefronts_are_one_per_warp_and_one_per_warp_that_may_wait_at_a_barrier():
    assert run_case("ld_row").totals[MISC_WAVEFRONTS] == T.WARPS
    run = run_case("st_stride2")                   # one bar.sync of two warps: each may wait
    assert (run.totals[MISC_WAVEFRONTS], run.shared.barrier_misc) == (2 * T.WARPS, T.WARPS)
    t = run.totals
    assert t[SHARED_WAVEFRONTS] == t[LD_WAVEFRONTS] + t[ST_WAVEFRONTS] + t[MISC_WAVEFRONTS]
    assert run_case("bar_one_warp").shared.barrier_misc == 1          # the H100 counted 1 (run2)
    assert run_case("bar4_a").shared.barrier_misc == 4
    assert run_case("bar8_staggered").shared.barrier_misc == 8
    assert run_case("bar4_twice").shared.barrier_misc == 8
    assert run_case("bar_named").shared.barrier_misc == 2          # bar.sync 1, 64: warps 0 and 1
    t = run_case("cp_async_ca16").totals          # cp.async: 3 LDS that never run
    assert t[MISC_WAVEFRONTS] == T.WARPS * (1 + 3)
    assert t[SHARED_WAVEFRONTS] == 2 * 4 + t[MISC_WAVEFRONTS]    # the copies' 4 wavefronts per warp


@pytest.mark.parametrize("name, per_warp, may", [("shfl3", 3, 0), ("redux3", 0, 0), ("membar_cta", 0, 1),
                                                 ("membar_gl", 2, 0), ("fence_acq_rel_cta", 0, 1),
                                                 ("fence_proxy_async", 2, 0), ("fence_proxy_shared", 1, 1),
                                                 ("fence_proxy_global", 0, 0), ("vote3", 0, 0), ("match1", 0, 0),
                                                 ("elect1", 0, 0)])
def test_shfl_and_membars_cost_op_misc_per_warp_execution_and_a_cta_membar_may(name, per_warp, may):
    """Fitted on traffic2 (run2): ``per_warp`` sure, ``may`` in the range part (barrier_misc)."""
    run = run_case(name)
    assert (run.totals[MISC_WAVEFRONTS], run.shared.barrier_misc) == (T.WARPS * (1 + per_warp + may), T.WARPS * may)


@pytest.mark.parametrize("ptx, sass", [("membar.cta;", ("MEMBAR.CTA",)), ("fence.sc.cta;", ("MEMBAR.CTA",)),
                                       ("membar.gl;", ("MEMBAR.GPU", "CCTL.IVALL")),
                                       ("membar.sys;", ("MEMBAR.GPU", "CCTL.IVALL")),
                                       ("fence.acq_rel.cluster;", ("MEMBAR.GPU", "CCTL.IVALL")),
                                       ("fence.proxy.async.shared::cta;", ("MEMBAR.CTA", "FENCE.VIEW.ASYNC.S")),
                                       ("fence.proxy.async.shared::cluster;", ("MEMBAR.GPU", "FENCE.VIEW.ASYNC.S")),
                                       ("fence.proxy.async;", ("MEMBAR.GPU", "FENCE.VIEW.ASYNC.S")),
                                       ("fence.proxy.async.global;", ()), ("fence.mbarrier_init.release.cluster;", ()),
                                       ("vote.sync.any.pred p, q, -1;", ()), ("bar.warp.sync -1;", ())])
def test_each_fence_spelling_becomes_the_sass_ptxas_makes_of_it(ptx, sass):
    """What ptxas (CUDA 13, sm_90a) emits for each spelling, as cuobjdump shows it."""
    opcode = ptx.partition(" ")[0].rstrip(";").split(".")
    assert TR.fence_sass(A.Instr(opcode[0], tuple(opcode[1:]), (), None, 1, None)) == sass


def test_a_cas_costs_two_wavefronts_a_round_and_its_conflicts_count_rounds():
    (row,) = run_case("atom_cas_same").shared           # 32 lanes at one word, two warps
    assert (row.wavefronts, row.ideal, row.conflicts) == (2 * 2 * 32, 2 * 2, 2 * 31)


def test_a_red_add_of_1_is_popc_inc_whose_lanes_at_one_word_go_as_one():
    (row,) = run_case("red_same").shared
    assert (row.wavefronts, row.ideal, row.conflicts) == (2, 2, 0)
    (row,) = run_case("atom_min_same").shared             # an atom on one word: lane by lane
    assert row.wavefronts == 2 * 32


def test_wgmma_reads_of_128_byte_swizzled_operands_count_in_the_gmma_and_shared_totals():
    k = P.BY_NAME["wgmma_desc"]
    g = k.build(k.shapes[0], k.seeds[0])
    run = fragsim.run_kernel(str(P.corpus() / k.files[0]), grid=g.grid, block=g.block,
                             args=[g.buffers[a].copy() if isinstance(a, str) else a for a in g.args], report=True)
    (w,) = [r for r in run.shared if r.kind == "wgmma"]
    assert w.executions == 4                               # one warpgroup: 4 warps
    assert w.wavefronts == w.ideal == (64 + 64) * 32 // 128   # A and B: 64 rows of 32 bytes each
    t = run.totals
    assert t[GMMA_WAVEFRONTS] == w.wavefronts
    assert t[SHARED_WAVEFRONTS] == t[LD_WAVEFRONTS] + t[ST_WAVEFRONTS] + t[MISC_WAVEFRONTS] + t[GMMA_WAVEFRONTS]
    (r,) = [r for r in run_case("wgmma_rs").shared if r.kind == "wgmma"]
    assert r.wavefronts == 64 * 32 // 128                  # A from registers: B's reads only


def test_by_warp_puts_each_threads_value_in_its_warps_row_and_lane():
    idx = np.array([3, 5, 40, 63])
    a, m = by_warp(idx, idx * 10)
    assert a.shape == (2, WARP_LANES) and a[0, 5] == 50 and a[1, 31] == 630
    assert m.tolist() == [(1 << 3) | (1 << 5), (1 << 8) | (1 << 31)]


# ---------------------------------------------------------------------------------------- the report

def test_the_report_lists_source_lines_worst_first_by_ptx_line_without_line_info():
    text = run_case("branch").shared.text()
    lines = text.splitlines()
    assert lines[0].startswith("shared-memory traffic of fs_traffic_branch (2 warps), by PTX line")
    assert re.match(r"\s+30\s+32\s+2\s+2\s+PTX line 38\s+ld.shared.b32 %r11, \[%r10\];", lines[2])
    assert re.match(r"\s+0\s+2\s+2\s+2\s+PTX line 31\s", lines[3])
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum" in text


def test_with_lineinfo_the_report_is_by_cuda_source_line_with_the_lines_text():
    k = P.BY_NAME["mma_1warp"]
    g = k.build(k.shapes[0], k.seeds[0])
    run = fragsim.run_kernel(str(P.corpus() / "mma_1warp.sm90a.lineinfo.ptx"), grid=g.grid, block=g.block,
                             args=[g.buffers[a].copy() if isinstance(a, str) else a for a in g.args], report=True)
    assert all(r.source and r.source.startswith("tests/data/ptx/src/mma_1warp.cu:") for r in run.shared)
    worst = run.shared.lines()[0]        # the x4 ldmatrix of A: an asm statement over lines 18-19, on its first
    assert (worst.where, worst.excess, worst.rows[0].op) == ("mma_1warp.cu:18", 4, "ldmatrix.x4")
    assert worst.text == 'asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"'


def test_without_report_there_is_no_traffic_and_report_must_be_a_bool():
    c = T.BY_NAME["ld_row"]
    b = T.buffers()
    run = fragsim.run_kernel(c.ptx(), grid=1, block=T.THREADS, args=[b["in"], b["out"]])
    assert run.shared is None and run.totals is None
    with pytest.raises(TypeError, match="report must be True or False"):
        fragsim.run_kernel(c.ptx(), grid=1, block=T.THREADS, args=[b["in"], b["out"]], report="yes")


def test_the_html_page_highlights_the_costly_line_and_shows_its_worst_executions_bank_phases():
    page = run_case("branch").shared.html()
    assert page.startswith("<!DOCTYPE html>") and "rgba(214, 39, 40, 0.60)" in page     # the worst line
    (png,) = re.findall(r'src="data:image/png;base64,([^"]+)"', page)                   # one line conflicts
    assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "PTX line 38, <code>ld.shared.b32</code>: its worst warp execution (15 conflicts)" in page
    assert run_case("ld_row").shared._repr_html_().startswith("<div>")


def test_fragsim_run_report_prints_the_lines_and_html_writes_the_page(tmp_path, capsys):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(T.BY_NAME["ld_stride2"].ptx())
    b = T.buffers()
    np.save(tmp_path / "in.npy", b["in"])
    np.save(tmp_path / "out.npy", b["out"])
    page = tmp_path / "k.html"
    assert main(["run", str(ptx), "--block", str(T.THREADS), "--arg", str(tmp_path / "in.npy"), "--arg",
                 str(tmp_path / "out.npy"), "--report", "--html", str(page), "-o", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\n\s+2\s+4\s+2\s+2\s+PTX line \d+\s+ld.shared.b32", out)
    assert f"wrote {page}" in out and page.read_text().startswith("<!DOCTYPE html>")
    assert main(["run", str(ptx), "--block", "64", "--arg", str(tmp_path / "in.npy"), "--arg",
                 str(tmp_path / "out.npy"), "--html", str(tmp_path / "no" / "k.html")]) == 2
    assert "--html" in capsys.readouterr().err
