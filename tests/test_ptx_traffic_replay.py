"""The shared-memory traffic report against Nsight Compute on an H100: every launch that
gpu_check/ptx/traffic.py recorded (tests/data/ptx/ncu: the PTX corpus's kernels and the one-pattern
kernels of gpu_check/ptx/traffic_kernels.py; tests/data/ptx/ncu/<run>: later measurements) has
``run.totals`` equal to the whole-kernel counters (op_misc and the shared total within the barrier
part's range, ``SharedReport.barrier_misc``), and per PTX line the executions, wavefronts and ideal
wavefronts of its shared-memory SASS instruction(s) equal fragsim's row where ptxas keeps one
instruction (or copies of one) for the line -- after what the comparison takes from the SASS
because the PTX does not show it (ptxas's WARPSYNC and REDUX, the idle copies of a line ptxas split).

A record is made on the GPU machine by ``python -m fragsim.gpu_check.ptx.traffic measure --out DIR``.
The comparison itself (building the line table, reading nvdisasm's and Nsight Compute's pages,
matching lines, the ranges and what is taken from the SASS) is tested here on records made of
fragsim's own figures."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from fragsim.gpu_check.ptx import traffic as N
from fragsim.gpu_check import record
from fragsim.gpu_check.ptx import traffic_kernels as T
from fragsim.ptx import ast as A
from fragsim.ptx.parse import parse

DATA = Path(__file__).parent / "data" / "ptx" / "ncu"
RECORDS = {str(p.parent.relative_to(DATA)): N.load(str(p)) for p in sorted(DATA.rglob(N.RECORD))}
LAUNCHES = [(run, k) for run, rec in RECORDS.items() for k in range(len(rec["meta"]["plan"]))]


def _launch_id(x) -> str:
    run, k = x
    return f"{run}:{RECORDS[run]['meta']['plan'][k]['id']}"


def test_the_h100_recording_is_here():
    assert "." in RECORDS, "run `python -m fragsim.gpu_check.ptx.traffic measure --out tests/data/ptx/ncu` on an H100"


@pytest.mark.parametrize("launch", LAUNCHES, ids=_launch_id)
def test_each_recorded_launch_has_nsight_computes_totals_and_per_line_figures(launch):
    run, k = launch
    c = N.compare_one(RECORDS[run], k)
    if c.error:
        pytest.skip(f"not measured on the GPU: {c.error}")
    assert not c.totals, f"{c.id}: whole-kernel counters differ: {c.totals}"
    assert not c.lines, f"{c.id}: per-line figures differ: {c.lines}"


def test_the_first_recording_compares_most_shared_memory_lines_one_to_one():
    cs = [N.compare_one(RECORDS["."], k) for k in range(len(RECORDS["."]["meta"]["plan"]))]
    compared = sum(c.compared for c in cs)
    assert compared >= 4 * sum(len(c.not_compared) for c in cs), "ptxas merged or split most lines: read the SASS"


# ----------------------------------------------------------------- the comparison, on fragsim's own figures

def test_every_instruction_line_gets_a_loc_naming_its_own_line_and_the_entry_a_name_of_its_own():
    c = T.BY_NAME["branch"]
    text = c.ptx()
    out = N.with_ptx_lines(text, c.entry, "fs7__" + c.entry)
    module = parse(out)
    assert "fs7__" + c.entry in module.entries and module.files == {1: N.LINE_FILE}
    before, after = text.split("\n"), out.split("\n")
    body = [ins for ins in module.entries["fs7__" + c.entry].body if isinstance(ins, A.Instr)]
    assert body and all(ins.loc is not None and before[ins.loc.line - 1] == after[ins.line - 1] for ins in body)


def _fake_record(tmp_path, case: str, skew: int = 0, extra: tuple = (), shift: dict | None = None) -> str:
    """A ptx_ncu record of one generated kernel whose SASS is one instruction per shared-memory PTX line
    and whose counters are fragsim's own (the ideal wavefronts of the first line off by ``skew``);
    ``extra``: more SASS rows (text, PTX line, executions), ``shift``: counters moved by so much."""
    it = next(i for i in N.plan() if i.id.endswith(f"/{case}"))
    run = N.run_fragsim(it, {})
    sass = [f"\t.text.{it.name}:"]
    page = ['"# Address","Source","Instructions Executed","L1 Wavefronts Shared","L1 Wavefronts Shared Ideal"']
    rows = [(f"{N.SASS_OF[r.kind][0]} R{k}, [R2]", r.line, r.executions, r.wavefronts, r.ideal + (skew if k == 0 else 0))
            for k, r in enumerate(run.shared)] + [(text, line, n, 0, 0) for text, line, n in extra]
    for k, (text, line, n, wf, ideal) in enumerate(rows):
        sass += [f'\t//## File "{N.LINE_FILE}", line {line}', f"        /*{0x10 * k:04x}*/                   {text} ;"]
        page.append(f'"0x7f00{0x10 * k:04x}","{text}","{n}","{wf}","{ideal}"')
    m = {metric: np.array([run.totals.get(metric, 0) + (shift or {}).get(metric, 0)], np.int64) for metric in N.COMPARED}
    entry = {"index": it.index, "kind": it.kind, "kernel": it.kernel, "file": it.file, "id": it.id,
             "name": it.name, "error": "", "pointers": {}}
    path = str(tmp_path / N.RECORD)
    record.save(path, N.RECORD_KIND, {"plan": [entry], "metrics": list(m)},
                {**{f"m_{k}": v for k, v in m.items()}, f"source_{it.index}": N._bytes("\n".join(page)),
                 f"sass_{it.index}": N._bytes("\n".join(sass))})
    return path


def test_a_record_of_fragsims_own_figures_agrees_line_by_line(tmp_path):
    rec = N.load(_fake_record(tmp_path, "branch"))
    c = N.compare_one(rec, 0)
    assert (c.totals, c.lines, c.compared, c.not_compared, c.error) == ([], [], 2, [], "")


def test_a_line_whose_counters_differ_is_named_with_both_figures(tmp_path):
    rec = N.load(_fake_record(tmp_path, "ldmatrix_plain", skew=3))
    c = N.compare_one(rec, 0)
    (row,) = N.run_fragsim(N.plan(["ldmatrix_plain"])[0], {}).shared
    assert c.lines == [(row.line, "ideal", row.ideal, row.ideal + 3)]


def test_the_source_page_is_read_by_metric_name_too_and_never_executed_padding_is_left_out():
    page = ('"Address","Source","inst_executed","memory_l1_wavefronts_shared","memory_l1_wavefronts_shared_ideal"\n'
            '"0x0000","LDS R4, [R2]","2","4","2"\n"0x0010","@!PT LDS RZ, [RZ]","0","0","0"\n')
    rows = N.source_rows(page)
    assert [(r.address, r.inst, r.wavefronts, r.ideal) for r in rows] == [(0, 2, 4, 2), (16, 0, 0, 0)]
    sass = [N.Sass(0, "LDS R4, [R2]", 12), N.Sass(16, "@!PT LDS RZ, [RZ]", 12)]
    lines, _, note = N.hardware_lines({"k": sass}, rows, "k")
    assert note == "" and [(ln, [s.text for s in f.sass], f.inst) for ln, f in lines.items()] == [(12, ["LDS R4, [R2]"], 2)]


def test_without_a_record_the_replay_says_how_to_make_one(tmp_path):
    with pytest.raises(ValueError, match="not a fragsim GPU record"):
        N.load(os.fspath(tmp_path / "missing.npz"))


def test_every_planned_launch_rewrites_to_a_module_whose_renamed_entry_takes_its_arguments():
    items = N.plan()
    assert len({it.name for it in items}) == len(items) and {it.kind for it in items} == {"corpus", "generated"}
    for it in items:
        entry = it.entry()
        module = parse(N.with_ptx_lines(it.text(), entry.name, it.name))
        assert len(module.entries[it.name].params) == len(it.launch().args) == len(entry.params), it.id


def test_the_family_takes_the_commands_options_and_its_source_is_a_ptx_module_for_sm_90():
    from fragsim.gpu_check.family import Family
    fam = N.FAMILIES["ptx_ncu"]
    assert isinstance(fam, Family) and fam.default_cases > 0 and {"cases", "replay", "json"} <= fam.options
    src = fam.source(90)
    assert src.startswith(".version ") and "\n.target sm_90\n" in src
    assert src.count(".visible .entry") == len([c for c in T.CASES if c.batch == 1])


def test_a_source_page_of_several_kernels_gives_each_its_own_rows():
    page = ('"Kernel Name","fs3__k"\n"# Address","Source","Instructions Executed"\n"0x0000","LDS R1, [R2]","2"\n'
            '"Kernel Name","fs4__k"\n"0x0000","STS [R2], R1","5"\n"0x0010","EXIT","5"\n')
    assert [(r.text, r.inst) for r in N.source_rows(page, "fs3__k")] == [("LDS R1, [R2]", 2)]
    assert [(r.text, r.inst) for r in N.source_rows(page, "fs4__k")] == [("STS [R2], R1", 5), ("EXIT", 5)]


@pytest.mark.parametrize("fewer, agrees", [(0, True), (1, True), (2, True), (3, False), (-1, False)])
def test_op_misc_and_the_shared_total_compare_within_the_barrier_part(tmp_path, fewer, agrees):
    """st_stride2: two warps meet at one bar.sync; each may wait (up to 2 wavefronts)."""
    shift = {N.MISC_WAVEFRONTS: -fewer, N.SHARED_WAVEFRONTS: -fewer}
    c = N.compare_one(N.load(_fake_record(tmp_path, "st_stride2", shift=shift)), 0)
    assert (not c.totals) == agrees, c.totals


def test_a_warpsync_ptxas_adds_is_taken_from_the_sass_as_op_misc(tmp_path):
    bar = next(ins.line for ins in N._ptx_instructions(N.plan(["traffic/st_stride2"])[0]).values() if ins.opcode == "bar")
    shift = {N.MISC_WAVEFRONTS: 2, N.SHARED_WAVEFRONTS: 2}
    c = N.compare_one(N.load(_fake_record(tmp_path, "st_stride2", extra=(("WARPSYNC.ALL", bar, 2),), shift=shift)), 0)
    assert not c.totals and c.adjusted == [(f"WARPSYNC at PTX line {bar} (bar)", 2)]
    assert c.waits == 2                        # a warp may wait at it: in the range part
    c = N.compare_one(N.load(_fake_record(tmp_path, "st_stride2", shift=shift)), 0)
    assert c.totals and c.totals[0][0].startswith(N.SHARED_WAVEFRONTS)


def test_a_warpsync_on_a_shfl_line_costs_nothing():
    """traffic2/shfl_warp0_only, warpsync_divergent (run2): WARPSYNC before a SHFL, no op_misc."""
    assert "shfl" in N.WARPSYNC_FREE_ON and "ldmatrix" in N.WARPSYNC_FREE_ON
    rec = RECORDS["run2"]
    k = next(i for i, e in enumerate(rec["meta"]["plan"]) if e["id"] == "traffic2/warpsync_divergent")
    c = N.compare_one(rec, k)
    assert not c.totals and c.adjusted == []


def test_the_idle_copies_of_a_line_ptxas_split_are_taken_from_the_sass(tmp_path):
    """traffic/loop: ptxas peels the loop into copies of its LDS, one of which runs with no lane on."""
    (row,) = N.run_fragsim(N.plan(["traffic/loop"])[0], {}).shared
    shift = {N.MISC_WAVEFRONTS: 2, N.SHARED_WAVEFRONTS: 2, N.INST_METRICS["ld"]: 2}
    c = N.compare_one(N.load(_fake_record(tmp_path, "loop", extra=(("@P2 LDS R6, [R6]", row.line, 2),), shift=shift)), 0)
    assert (c.totals, c.lines) == ([], []) and c.adjusted == [(f"2 idle execution(s) of ptxas's copies of PTX line "
                                                              f"{row.line}", 2)]
    c = N.compare_one(N.load(_fake_record(tmp_path, "loop", extra=(("@P2 LDS R6, [R6]", row.line, 3),), shift=shift)), 0)
    assert (N.INST_METRICS["ld"], row.executions + 3, row.executions + 2) in c.totals   # 3 idle, the counters say 2


def test_a_source_page_of_a_kernel_and_its_helpers_maps_each_run_of_addresses_to_its_function():
    """A -G build's page holds the kernel's rows and its callees', each a run of consecutive addresses."""
    kernel = [N.Sass(0, "LDS R1, [R2]", 5), N.Sass(16, "EXIT", 6)]
    helper = [N.Sass(0, "SHFL.BFLY PT, R1, R2, 0x1, 0x1f", 9), N.Sass(16, "RET.ABS.NODEC R20 0x0", 9)]
    rows = [N.SourceRow(0x900, "SHFL.BFLY PT, R1, R2, 0x1, 0x1f", 3, 0, 0), N.SourceRow(0x910, "RET.ABS.NODEC R20 0x0", 3, 0, 0),
            N.SourceRow(0x100, "LDS R1, [R2]", 2, 1, 1), N.SourceRow(0x110, "EXIT", 2, 0, 0)]
    by, note = N.page_rows({"k": kernel, "helper": helper}, rows, "k")
    assert note == "" and by[("k", 0)].inst == 2 and by[("helper", 0)].inst == 3
    _, note = N.page_rows({"k": kernel}, rows, "k")
    assert note.startswith("a run of 2 source-page rows at 0x900 matches no function")


def test_a_generic_load_counts_as_shared_only_where_the_page_names_the_shared_space():
    page = ('"Address","Source","Instructions Executed","Address Space"\n'
            '"0x0000","LD.E R4, [R2.64]","2","Shared"\n"0x0010","LD.E R5, [R6.64]","2","Local"\n')
    rows = N.source_rows(page)
    sass = [N.Sass(0, "LD.E R4, [R2.64]", 12), N.Sass(16, "LD.E R5, [R6.64]", 13)]
    lines, _, _ = N.hardware_lines({"k": sass}, rows, "k")
    assert [r.space for r in rows] == ["Shared", "Local"] and list(lines) == [12]
