"""The fragsim command: layout maps, the tour, and one-line errors with exit code 2."""

import json
import os
import subprocess
import sys

import pytest

from fragsim.cli import main

F16 = "m16n8k16.row.col.f16.f16.f16.f16"


def test_layout_prints_the_ptx_figure_grid(capsys):
    assert main(["layout", F16, "A"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("mma.sync.aligned." + F16)
    assert out[2].split()[:4] == ["0", "T0:a0", "T0:a1", "T1:a0"]
    assert out[2].split()[9] == "T0:a4"           # column 8 of row 0: lane 0, element a4


def test_layout_by_lane_lists_each_register(capsys):
    assert main(["layout", F16, "B", "--by-lane"]) == 0
    assert capsys.readouterr().out.splitlines()[5] == "lane  5: r0={(2,1),(3,1)}  r1={(10,1),(11,1)}"


def test_layout_json_is_machine_readable(capsys):
    assert main(["layout", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "a", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["shape"] == [16, 8] and data["registers_per_lane"] == 4
    assert data["by_lane"][5][1] == [[9, 1]]       # lane 5, a1: row groupID+8, col tig


def test_bad_form_is_one_line_and_exit_code_2(capsys):
    assert main(["layout", "m16n8k16.row.col.f32.f16.f16.f16", "A"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "D and C types must match" in err


def test_missing_argument_is_one_line_and_exit_code_2(capsys):
    """An mma form without its operand (optional on the parser, as `layout movmatrix` has none)."""
    assert main(["layout", F16]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "operand: expected A, B, C or D" in err


def test_tour_writes_maps_and_pictures(tmp_path, capsys):
    assert main(["tour", "--out", str(tmp_path), "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    from fragsim.instructions import FORMS
    ops = sum(3 if f.layout("C") == f.layout("D") else 4 for f in FORMS.values())
    assert len(written["maps"]) == 2 * ops  # text + JSON for A, B, C (=D unless its map differs) of every form
    for path in written["pictures"]:
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(written["pictures"][0]) > 20_000


def test_tour_conflict_table_shows_the_swizzle_removing_the_conflicts(tmp_path, capsys):
    assert main(["tour", "--out", str(tmp_path), "--no-pictures"]) == 0
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[-3:]
            for line in (tmp_path / "tables" / "bank_conflicts.md").read_text().splitlines()
            if line.startswith("| A, 128")}
    assert rows["A, 128-byte rows (BK=64 fp16), no swizzle"] == ["32", "4", "28 |"]
    assert rows["A, 128-byte rows, Swizzle<3,4,3>"] == ["4", "4", "0 |"]


def test_console_script_entry_runs_help():
    r = subprocess.run([sys.executable, "-m", "fragsim", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "layout" in r.stdout and "tour" in r.stdout


def test_import_is_light():
    code = "import sys, fragsim; print('numba' in sys.modules, 'matplotlib' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("command", ["tour", "layout", "mma", "conflicts", "gpu-check"])
def test_every_subcommand_prints_its_help(command, capsys):
    """argparse formats help strings with %: a stray % in one breaks --help with a traceback."""
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0 and command in capsys.readouterr().out
