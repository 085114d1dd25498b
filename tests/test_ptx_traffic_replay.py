"""The shared-memory traffic report against Nsight Compute on an H100: every launch that
gpu_check/ptx_ncu.py recorded (the PTX corpus's kernels and the one-pattern kernels of
gpu_check/traffic_kernels.py) has ``run.totals`` equal to the whole-kernel counters, and per PTX line
the executions, wavefronts and ideal wavefronts of its shared-memory SASS instruction(s) equal
fragsim's row where ptxas keeps one instruction (or copies of one) for the line.

The record is made on the GPU machine by ``python -m fragsim.gpu_check.ptx_ncu measure --out
tests/data/ptx/ncu``; until it exists those tests skip.  The comparison itself (building the line
table, reading nvdisasm's and Nsight Compute's pages, matching lines) is tested here on a record
made of fragsim's own figures."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from fragsim.gpu_check import ptx_ncu as N
from fragsim.gpu_check import record
from fragsim.gpu_check import traffic_kernels as T
from fragsim.ptx import ast as A
from fragsim.ptx.parse import parse

DATA = Path(__file__).parent / "data" / "ptx" / "ncu"
RECORD = DATA / N.RECORD
MISSING = (f"no H100 recording yet ({RECORD.relative_to(Path(__file__).parent.parent)}): run "
           "`python -m fragsim.gpu_check.ptx_ncu measure --out tests/data/ptx/ncu` on the GPU machine")
LOADED = N.load(str(RECORD)) if RECORD.exists() else None
LAUNCHES = list(range(len(LOADED["meta"]["plan"]))) if LOADED else []


@pytest.mark.skipif(LOADED is None, reason=MISSING)
@pytest.mark.parametrize("k", LAUNCHES, ids=lambda k: LOADED["meta"]["plan"][k]["id"] if LOADED else str(k))
def test_each_recorded_launch_has_nsight_computes_totals_and_per_line_figures(k):
    assert LOADED is not None
    c = N.compare_one(LOADED, k)
    if c.error:
        pytest.skip(f"not measured on the GPU: {c.error}")
    assert not c.totals, f"{c.id}: whole-kernel counters differ: {c.totals}"
    assert not c.lines, f"{c.id}: per-line figures differ: {c.lines}"


@pytest.mark.skipif(LOADED is None, reason=MISSING)
def test_the_recording_compares_most_shared_memory_lines_one_to_one():
    assert LOADED is not None
    cs = [N.compare_one(LOADED, k) for k in LAUNCHES]
    compared = sum(c.compared for c in cs)
    assert compared >= sum(len(c.not_compared) for c in cs), "ptxas merged or split most lines: read the SASS"


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


def _fake_record(tmp_path, case: str, skew: int = 0) -> str:
    """A ptx_ncu record of one generated kernel whose SASS is one instruction per shared-memory PTX line
    and whose counters are fragsim's own (the ideal wavefronts of the first line off by ``skew``)."""
    it = next(i for i in N.plan() if i.id == f"traffic/{case}")
    run = N.run_fragsim(it, {})
    sass = [f"\t.text.{it.name}:"]
    page = ['"# Address","Source","Instructions Executed","L1 Wavefronts Shared","L1 Wavefronts Shared Ideal"']
    for k, r in enumerate(run.shared):
        op = N.SASS_OF[r.kind][0]
        sass += [f'\t//## File "{N.LINE_FILE}", line {r.line}', f"        /*{0x10 * k:04x}*/                   {op} R{k}, [R2] ;"]
        page.append(f'"0x7f00{0x10 * k:04x}","{op} R{k}, [R2]","{r.executions}","{r.wavefronts}",'
                    f'"{r.ideal + (skew if k == 0 else 0)}"')
    m = {metric: np.array([run.totals.get(metric, 0)], np.int64) for metric in N.COMPARED}
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
    lines, note = N.hardware_lines(sass, rows)
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
    assert src.startswith(".version ") and "\n.target sm_90\n" in src and src.count(".visible .entry") == len(T.CASES)


def test_a_source_page_of_several_kernels_gives_each_its_own_rows():
    page = ('"Kernel Name","fs3__k"\n"# Address","Source","Instructions Executed"\n"0x0000","LDS R1, [R2]","2"\n'
            '"Kernel Name","fs4__k"\n"0x0000","STS [R2], R1","5"\n"0x0010","EXIT","5"\n')
    assert [(r.text, r.inst) for r in N.source_rows(page, "fs3__k")] == [("LDS R1, [R2]", 2)]
    assert [(r.text, r.inst) for r in N.source_rows(page, "fs4__k")] == [("STS [R2], R1", 5), ("EXIT", 5)]
