"""``fragsim gpu-check --family ptx``: the four PTX families as one, each in its own subfolder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fragsim.cli import main
from fragsim.gpu_check.ptx.combined import MEMBERS, PtxFamily
from fragsim.gpu_check.family import families

DATA = Path(__file__).parent / "data" / "ptx"


def test_replay_runs_each_member_on_its_subfolder_and_leaves_out_those_forms_do_not_name(capsys):
    """--forms mma_1warp shfl names ptx_int variants (shfl.sync) and a ptx_kernels kernel, no float or cvt one."""
    assert main(["gpu-check", "--family", "ptx", "--replay", str(DATA), "--forms", "mma_1warp", "shfl", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert set(rep["members"]) == {"ptx_int", "ptx_kernels"}
    assert set(rep["skipped"]) == {"ptx_float", "ptx_cvt"}
    assert rep["cases"] == sum(m["cases"] for m in rep["members"].values()) > 0
    assert rep["mismatches"] == 0


def test_a_replay_folder_without_the_member_subfolders_is_refused_naming_them(tmp_path, capsys):
    (tmp_path / "int").mkdir()
    assert main(["gpu-check", "--family", "ptx", "--replay", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no subfolder float, cvt, kernels" in err[0]


def test_forms_naming_nothing_in_any_member_is_one_error():
    assert main(["gpu-check", "--family", "ptx", "--replay", str(DATA), "--forms", "no-such-variant"]) == 2


def test_each_member_gets_its_own_default_cases_its_subfolder_and_only_the_options_it_takes(tmp_path):
    fam = PtxFamily()
    args = argparse.Namespace(cases=0, seed=7, keep=None, jobs=None, forms=None, record=str(tmp_path),
                              replay=None, quiet=True, json=False, json_file=None)
    fams = families()
    for name, sub in MEMBERS.items():
        a = fam.member_args(fams[name], args)
        assert a.cases == fams[name].default_cases
        assert a.record == str(tmp_path / sub) and (tmp_path / sub).is_dir()
        assert a.seed == (7 if "seed" in fams[name].options else 0)
