"""`fragsim run ... --trace A=POS,B=POS,D=POS`: the fragment trace on the command line -- the first
inconsistent mma with fragsim check's diagnosis, its fragment map in OUT/trace.png, exit 1."""

import json
from pathlib import Path

import numpy as np
import pytest

from fragsim.cli import main

TRACE = Path(__file__).parent / "data" / "ptx" / "trace"


@pytest.fixture
def files(tmp_path):
    np.save(tmp_path / "A.npy", np.zeros((64, 128), np.uint16))
    np.save(tmp_path / "Bt.npy", np.zeros((64, 128), np.uint16))
    np.save(tmp_path / "D.npy", np.zeros((64, 64), np.float32))
    return tmp_path


def argv(kernel: str, files: Path, *more: str) -> list:
    return ["run", str(TRACE / f"ldsm_gemm.{kernel}.90a.ptx"), "--block", "128", "--smem", "16384",
            "--arg", str(files / "A.npy"), "--arg", str(files / "Bt.npy"), "--arg", str(files / "D.npy"),
            "--arg", "64", "--arg", "64", "--arg", "128", "-o", str(files / "out"), *more]


def test_a_correct_kernel_traces_ok_with_exit_0(files, capsys):
    assert main(argv("ok", files, "--trace", "A=0,B=1.T,D=2")) == 0
    out = capsys.readouterr().out
    assert "OK: 256 mma executions fed the right elements" in out and "4,096 D elements stored" in out
    assert not (files / "out" / "trace.png").exists()


def test_a_mistake_prints_the_mma_the_diagnosis_and_its_verification_and_draws_it(files, capsys):
    assert main(argv("khalves", files, "--trace", "A=0,B=1.T,D=2")) == 1
    out = capsys.readouterr().out
    assert "first inconsistent mma:\nline 566: mma.sync.aligned.m16n8k16" in out
    assert "the two k-halves of the A fragment are swapped" in out
    assert "verified: re-running CTA (0,0,0) with the loads at line 554 corrected" in out
    png = files / "out" / "trace.png"
    assert f"wrote {png}" in out and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_json_gives_the_trace_and_the_pictures_path(files, capsys):
    assert main(argv("store", files, "--trace", "a=0, b=1.T, d=2", "--json")) == 1
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is False and body["first"]["kind"] == "store" and body["first"]["verified"] is None
    assert body["first"]["diagnosis"][0]["kind"] == "offset" and body["picture"].endswith("trace.png")


@pytest.mark.parametrize("spec,message", [
    ("A=0,B=1.T", "name D too"),
    ("A=0,B=1.T,D=2,A=1", "A is given twice"),
    ("A0,B=1.T,D=2", "expected A=POS,B=POS,D=POS"),
    ("A=0,B=1.T,D=7", "d '7': args has 6 values, no position 7"),
])
def test_a_bad_trace_spec_is_one_line_with_exit_2(files, capsys, spec, message):
    assert main(argv("ok", files, "--trace", spec)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
