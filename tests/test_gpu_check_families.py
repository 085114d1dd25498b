"""`fragsim gpu-check --family movmatrix|wgmma|gemm`: the runners of their own behind the one command.

No GPU here: the refusals (exit 2, one line naming what is missing), the options each family takes,
the replays of the recorded H100 data, and the GPU paths with the device replaced by a stand-in
(MovmatrixFamily.gpu, wgmma_run.run, gemm.GemmRunner), so the wiring of counts, exit codes and
recordings is exercised.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import fragsim
from fragsim.cli import main
from fragsim.gpu_check import corpus, runner
from fragsim.gpu_check.movmatrix import family as movmatrix
from fragsim.gpu_check.wgmma import family as wgmma_run
from fragsim.gpu_check.gemm import family as G

DATA = Path(__file__).parent / "data"
MOVM = DATA / "hw_movmatrix" / "nvidia_h100_sm90"
GEMM_REC = DATA / "gemm" / "gemm_h100.json"
F16 = "m16n8k16.row.col.f32.f16.f16.f32"


def _no_cupy(monkeypatch):
    def refuse():
        raise runner.GpuUnavailable("CuPy is not installed (pip install cupy-cuda12x or cupy-cuda13x, to match your "
                                    "CUDA driver); the GPU cross-check needs it")
    monkeypatch.setattr(runner, "import_cupy", refuse)


@pytest.mark.parametrize("family", ["movmatrix", "wgmma", "gemm"])
def test_without_cupy_each_family_exits_2_naming_cupy(family, monkeypatch, capsys):
    _no_cupy(monkeypatch)
    assert main(["gpu-check", "--family", family, "--cases", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "CuPy is not installed" in err


def _fake_device(monkeypatch, cc):
    monkeypatch.setattr(runner, "import_cupy", lambda: None)
    monkeypatch.setattr(runner, "device_info", lambda cp=None: {"device": "NVIDIA A100-SXM4-40GB" if cc == 80
                                                                else "NVIDIA H100 80GB HBM3",
                                                                "cc": f"{cc // 10}.{cc % 10}", "cc_int": cc,
                                                                "driver": "stand-in", "cuda_runtime": "0.0"})


def test_wgmma_on_an_sm80_gpu_is_refused_naming_the_compute_capability(monkeypatch, capsys):
    _fake_device(monkeypatch, 80)
    assert main(["gpu-check", "--family", "wgmma"]) == 2
    err = capsys.readouterr().err
    assert "wgmma needs an sm_90a GPU" in err and "A100" in err and "compute capability 8.0" in err


def test_wgmma_without_nvcc_is_refused_naming_nvcc(monkeypatch, capsys):
    _fake_device(monkeypatch, 90)
    monkeypatch.setattr(wgmma_run.shutil, "which", lambda name: None)
    assert main(["gpu-check", "--family", "wgmma"]) == 2
    assert "nvcc is not on PATH" in capsys.readouterr().err


@pytest.mark.parametrize("family, argv, flag", [
    ("gemm", ["--chunk", "3"], "--chunk"), ("wgmma", ["--forms", F16], "--forms"),
    ("movmatrix", ["--dry-run"], "--dry-run"), ("movmatrix", ["--arch", "sm_80"], "--arch"),
    ("wgmma", ["--seed", "4"], "--seed"), ("gemm", ["--probes"], "--probes"), ("wgmma", ["--keep", "0"], "--keep"),
])
def test_an_option_the_family_does_not_take_is_refused_by_name(family, argv, flag, capsys):
    assert main(["gpu-check", "--family", family, *argv]) == 2
    err = capsys.readouterr().err
    assert f"{flag} does not apply to --family {family}" in err and err.count("\n") == 1


@pytest.mark.parametrize("family, form", [("mma", "ldmatrix.x1"), ("shared", F16)])
def test_table_families_refuse_an_op_of_the_other_family(family, form, capsys):
    assert main(["gpu-check", "--family", family, "--forms", form, "--dry-run", "--jobs", "1"]) == 2
    assert f"--forms {form.split('.row')[0] if family == 'shared' else form}" in capsys.readouterr().err


def test_family_shared_dry_run_checks_only_shared_ops(capsys):
    rc = main(["gpu-check", "--family", "shared", "--forms", "ldmatrix", "--dry-run", "--cases", "2", "--jobs", "1",
               "--json"])
    ops = [r["op"] for r in json.loads(capsys.readouterr().out)["results"]]
    assert rc == 0 and ops and all(o.startswith("ldmatrix") for o in ops)


# -- replays of the recorded H100 data ------------------------------------------------------------

def test_movmatrix_replay_of_the_h100_recording_agrees(capsys):
    assert main(["gpu-check", "--family", "movmatrix", "--replay", str(MOVM), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["family"] == "movmatrix" and rep["cases"] == 2000 and rep["mismatches"] == 0


def test_movmatrix_replay_catches_a_changed_word(tmp_path, capsys):
    c = corpus.load(str(MOVM / "movmatrix.trans.npz"))
    c.arrays["d"] = c.arrays["d"].copy()
    c.arrays["d"][5, 7, 0] ^= 1
    corpus.write(str(tmp_path), c)
    assert main(["gpu-check", "--family", "movmatrix", "--replay", str(tmp_path)]) == 1
    assert "2,000 cases, 1 mismatches" in capsys.readouterr().out


def test_movmatrix_replay_of_a_folder_without_its_corpus_names_the_file(tmp_path, capsys):
    assert main(["gpu-check", "--family", "movmatrix", "--replay", str(tmp_path)]) == 2
    assert "no movmatrix.trans.npz there" in capsys.readouterr().err


def test_wgmma_replay_of_the_h100_corpora_agrees(capsys):
    assert main(["gpu-check", "--family", "wgmma", "--replay", str(DATA / "wgmma"), "--cases", "2", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["cases"] == 8 and rep["mismatches"] == 0           # two cases of each of the four families


def test_wgmma_replay_of_a_folder_without_corpora_is_refused(tmp_path, capsys):
    assert main(["gpu-check", "--family", "wgmma", "--replay", str(tmp_path)]) == 2
    assert "no wgmma corpora there" in capsys.readouterr().err


def test_gemm_replay_of_the_h100_recording_agrees(capsys):
    assert main(["gpu-check", "--family", "gemm", "--replay", str(GEMM_REC), "--cases", "1", "--forms", F16,
                 "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["cases"] == 1 and rep["mismatches"] == 0


def test_gemm_replay_catches_a_changed_d(tmp_path, capsys):
    rec = json.loads(GEMM_REC.read_text())
    rec["forms"][F16][0][6] = "0" * 16
    (tmp_path / "g.json").write_text(json.dumps(rec))
    assert main(["gpu-check", "--family", "gemm", "--replay", str(tmp_path / "g.json"), "--cases", "1",
                 "--forms", F16]) == 1
    assert "D differs from the GPU's" in capsys.readouterr().out


@pytest.mark.parametrize("what, problem", [("folder", "is a folder"), ("missing", "no such file"),
                                           ("text", "not a GEMM recording")])
def test_gemm_replay_refuses_what_is_not_a_recording(what, problem, tmp_path, capsys):
    path = {"folder": tmp_path, "missing": tmp_path / "none.json", "text": tmp_path / "t.json"}[what]
    (tmp_path / "t.json").write_text("not json")
    assert main(["gpu-check", "--family", "gemm", "--replay", str(path)]) == 2
    assert problem in capsys.readouterr().err


# -- the GPU paths, the device replaced -----------------------------------------------------------

def test_movmatrix_counts_the_runners_mismatches_and_records(monkeypatch, tmp_path, capsys):
    _fake_device(monkeypatch, 90)
    a = np.random.default_rng(0).integers(0, 1 << 32, (40, 32, 1), dtype=np.uint64).astype(np.uint32)
    d = fragsim.movmatrix(a)
    d[[3, 9], 0, 0] ^= 0x8000                              # two warps the "device" got wrong
    tag = np.zeros(40, np.uint8)
    monkeypatch.setattr(movmatrix.MovmatrixFamily, "gpu", lambda self, cases, seed, info: (a, tag, d, 2))
    assert main(["gpu-check", "--family", "movmatrix", "--cases", "40", "--record", str(tmp_path), "--keep", "40"]) == 1
    assert "movmatrix: 40 cases, 2 mismatches" in capsys.readouterr().out
    assert main(["gpu-check", "--family", "movmatrix", "--replay", str(tmp_path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["mismatches"] == 2


def test_wgmma_passes_cases_as_scale_and_reads_the_summary(monkeypatch, tmp_path, capsys):
    _fake_device(monkeypatch, 90)
    monkeypatch.setattr(wgmma_run.shutil, "which", lambda name: "/usr/bin/nvcc")
    seen = []

    def fake_run(out, scale, workers, sass, log):
        seen.append((out, scale, workers, sass))
        return {"fp8 | 128B | K": {"cases": 1000, "mismatch_cases": 3}, "int8 | none | K": {"cases": 500, "mismatch_cases": 0},
                "_errors": [], "_seconds": 1.0}
    monkeypatch.setattr(wgmma_run, "run", fake_run)
    rc = main(["gpu-check", "--family", "wgmma", "--cases", "1000", "--jobs", "3", "--record", str(tmp_path), "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 1 and rep["cases"] == 1500 and rep["mismatches"] == 3
    assert seen == [(str(tmp_path), 0.01, 3, True)]


class _ModelGemm:
    """fragsim.gemm standing in for the GPU's GEMM kernels."""

    def __init__(self, forms):
        self.info = {"device": "stand-in", "cc": "9.0", "cc_int": 90}
        self.forms = [fragsim.lookup(f) for f in forms]

    def gemm(self, form, A, B, C, order):
        return fragsim.gemm(form, A, B, C, arch="sm_90", k_order=order)


def test_gemm_records_then_compares(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(G.GemmFamily, "device", lambda self: {"device": "stand-in", "cc": "9.0"})
    monkeypatch.setattr(G, "GemmRunner", _ModelGemm)
    form = "m16n8k8.row.col.f32.tf32.tf32.f32"
    rc = main(["gpu-check", "--family", "gemm", "--cases", "1", "--forms", form, "--record", str(tmp_path), "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 0 and rep["cases"] == 1 and rep["mismatches"] == 0
    assert list(json.loads((tmp_path / "gemm.json").read_text())["forms"]) == [form]
    rc = main(["gpu-check", "--family", "gemm", "--cases", "1", "--forms", form, "--record", str(tmp_path / "r"),
               "--record-only"])
    assert rc == 0 and "(recorded, not compared)" in capsys.readouterr().out
    shutil.rmtree(tmp_path / "r")
