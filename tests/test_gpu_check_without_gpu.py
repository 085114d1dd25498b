"""fragsim gpu-check on a machine without a GPU: what it says, the recordings installed with fragsim
that ``--replay`` (no path) reads, and the replay's output (one progress line an op, cp.async rows
that show their size)."""

import io
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from fragsim.cli import main
from fragsim.gpu_check.table import bulk
from fragsim.gpu_check import corpus, record, recordings

DATA = Path(__file__).parent / "data"
H200 = DATA / "hw" / "nvidia_h200_sm90"


def _no_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)       # `import cupy` raises ImportError


@pytest.mark.parametrize("argv, command", [([], "fragsim gpu-check --replay"),
                                           (["--family", "shared"], "fragsim gpu-check --family shared --replay"),
                                           (["--family", "gemm"], "fragsim gpu-check --family gemm --replay")])
def test_without_cupy_one_line_names_the_extra_and_the_replay_command_that_then_runs(argv, command, monkeypatch,
                                                                                      capsys):
    _no_cupy(monkeypatch)
    assert main(["gpu-check", *argv, "--cases", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fragsim gpu-check: no GPU to check against: CuPy is not installed")
    assert '".[gpu13]"' in err and '"fragsim[gpu13]"' in err
    assert err.rstrip().endswith(f"without a GPU, replay what H100/H200 GPUs recorded: {command}")
    assert main(command.split()[1:] + ["--cases", "1", "--quiet"]) == 0


@pytest.mark.parametrize("family", sorted(recordings.DEFAULTS))
def test_replay_without_a_path_reads_the_recordings_installed_with_fragsim(family, capsys):
    argv = [] if family == "mma and shared" else ["--family", family]
    assert main(["gpu-check", *argv, "--replay", "--cases", "2", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    cases = sum(r["cases"] for r in rep["results"]) if "results" in rep else rep["cases"]
    assert rep["mismatches"] == 0 and cases > 0
    assert str(rep.get("replay", rep.get("device", ""))).count(recordings.HERE) == 1


def test_the_installed_recordings_are_the_sample_of_tests_data(tmp_path):
    """python -m fragsim.gpu_check.recordings tests/data writes exactly what is committed (so the
    sample follows tests/data: a new recording there fails here until the sample is written again)."""
    recordings.build(str(DATA), str(tmp_path))

    def files(top):
        return sorted(str(p.relative_to(top)) for p in Path(top).rglob("*") if p.is_file())

    stale = "gpu_check/recordings is stale: python -m fragsim.gpu_check.recordings tests/data"
    assert files(tmp_path) == files(recordings.HERE), stale
    for name in files(tmp_path):
        new, old = tmp_path / name, Path(recordings.HERE) / name
        if name.endswith(".json"):
            assert json.loads(new.read_text()) == json.loads(old.read_text()), f"{name}: {stale}"
            continue
        with np.load(new) as a, np.load(old) as b:
            assert a.files == b.files, f"{name}: {stale}"
            assert all(np.array_equal(a[k], b[k]) for k in a.files), f"{name}: {stale}"


def test_the_installed_sample_covers_every_recorded_op_and_stays_small():
    """Every mma form and shared op of tests/data/hw is in the sample; the sample adds ~1.1 MB to the
    wheel (tests/data holds 16 MB)."""
    full = {corpus.load(p).op for p in corpus.find(str(DATA / "hw"))}
    sample = {corpus.load(p).op for p in corpus.find(os.path.join(recordings.HERE, "hw"))}
    assert sample == full
    size = sum(p.stat().st_size for p in Path(recordings.HERE).rglob("*") if p.is_file())
    assert size < 1_500_000
    assert record.load_json(os.path.join(recordings.HERE, recordings.GEMM), "gemm")["sample"]


def test_the_first_progress_line_of_an_op_is_written_once():
    """An op whose cases fit one chunk: its count is shown once, not a second time as the final line."""
    out = io.StringIO()
    backend = bulk.ReplayBackend(str(H200))
    bulk.check_op(backend, "ld.shared.b32", 50, progress=bulk.Progress(stream=out))
    bulk.check_op(backend, "ld.shared.u8", 50, progress=bulk.Progress(stream=out))
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == ["ld.shared.b32: 50/50 cases", "ld.shared.u8: 50/50 cases"]


def test_a_replay_counts_up_to_the_cases_recorded():
    out = io.StringIO()
    backend = bulk.ReplayBackend(str(H200))
    recorded = sum(len(c) for c in backend.corpora["ld.shared.b32"])
    bulk.check_op(backend, "ld.shared.b32", 10 ** 6, progress=bulk.Progress(stream=out))
    assert out.getvalue().startswith(f"ld.shared.b32: {recorded:,}/{recorded:,} cases, 0 mismatches")


def test_cp_async_rows_of_the_results_table_show_their_copy_size(capsys):
    assert main(["gpu-check", "--replay", str(H200), "--forms", "cp.async", "--cases", "3", "--quiet"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("cp.async")]
    assert [r.split("  ")[0] for r in rows] == ["cp.async.ca.shared.global ..., 4", "cp.async.ca.shared.global ..., 8",
                                                "cp.async.ca.shared.global ..., 16", "cp.async.cg.shared.global ..., 16"]


def test_a_replay_of_several_devices_names_them_all_and_lists_ops_in_table_order():
    backend = bulk.ReplayBackend(str(DATA / "hw"))
    assert "NVIDIA H100 80GB HBM3, NVIDIA H200" in backend.info["device"]
    ops = backend.available_ops()
    assert ops.index("ldmatrix.x1") < ops.index("cp.async.ca.4") < ops.index("ld.shared.v2.u8")
