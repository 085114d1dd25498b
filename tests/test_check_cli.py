"""fragsim check on the command line: verdict, diagnosis and conflicts; exit codes 0 (right),
1 (wrong), 2 (bad input, or --gpu without a GPU), 3 (the GPU disagrees with fragsim); --json."""

import json

import pytest

from fragsim.cli import main

FORM = ["--form", "m16n8k16.row.col.f32.bf16.bf16.f32"]
TILE = ["--tile", "128x32 bf16 row pitch=64 swizzle=2,4,3"]
RIGHT = ("ldmatrix.x4: int row = mf * 16 + (lane & 15); int atom = (kb << 1) + (lane >> 4); "
         "row * 64 + (atom ^ ((row >> 1) & 3)) * 16")
WRONG = RIGHT.replace("((row >> 1) & 3)", "(row & 3)")


def test_right_address_math_exits_0_with_the_verdict_and_the_conflicts(capsys):
    assert main(["check", *FORM, "--operand", "A", *TILE, "--load", RIGHT, "--var", "mf=1", "--var", "kb=1",
                 "--at", "16,16"]) == 0
    out = capsys.readouterr().out
    assert "OK: all 256 elements are where they must be" in out
    assert "load 0 (ldmatrix.x4): 4 wavefronts, ideal 4, 0 conflicts" in out


def test_wrong_address_math_exits_1_with_the_diagnosis_and_the_first_mismatches(capsys):
    assert main(["check", *FORM, "--operand", "A", *TILE, "--load", WRONG, "--var", "mf=0", "--var", "kb=0"]) == 1
    out = capsys.readouterr().out
    assert "swizzle differs: the read addresses apply Swizzle<2,4,2>, but the tile is laid out with Swizzle<2,4,3>" in out
    assert "lane 4 r0 holds tile(1,8), wants tile(1,0)" in out


def test_json_output(capsys):
    assert main(["check", *FORM, "--operand", "A", *TILE, "--load", WRONG, "--var", "mf=0", "--var", "kb=0",
                 "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["ok"] is False and d["diagnosis"][0]["kind"] == "swizzle differs"


def test_stores_and_copies(capsys):
    assert main(["check", *FORM, "--tile", "16x8 f32", "--store", "st.shared.v2.b32: ((lane / 4) * 8 + (lane % 4) * 2) * 4",
                 "--store", "st.shared.v2.b32: ((lane / 4 + 8) * 8 + (lane % 4) * 2) * 4"]) == 0
    assert main(["check", *TILE, "--copy", "cp.async.cg.16: int row = (tid >> 2) + pass * 32; "
                 "row * 64 + ((tid & 3) ^ ((row >> 1) & 3)) * 16", "--var", "pass=0..3", "--threads", "128"]) == 0
    assert main(["check", "--tile", "16x8 f16", "--copy", "cp.async.cg.16: lane * 16", "--src", "lane * 32",
                 "--mask", "lane < 16", "--global-pitch", "32"]) == 0
    assert main(["check", "--tile", "16x8 f16", "--copy", "cp.async.cg.16: lane * 16", "--src", "lane * 32",
                 "--global-pitch", "32"]) == 1
    assert "lanes 16-31 address bytes that hold no tile element" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    ([*FORM, *TILE, "--load", RIGHT], "--load needs --operand"),
    (["--operand", "A", *TILE, "--load", RIGHT], "--load needs --form"),
    ([*FORM, "--operand", "A", *TILE, "--load", "ldmatrix.x4 lane * 16"], "expected 'OP: EXPR'"),
    ([*FORM, "--operand", "A", *TILE, "--load", RIGHT], "unknown variable 'mf'"),
    ([*FORM, "--operand", "A", *TILE, "--load", RIGHT, "--var", "mf=0..1", "--var", "kb=0", "--png", "x.png"],
     "--png/--svg draw one check"),
    ([*FORM, "--operand", "A", "--tile", "128x32 bf17", "--load", RIGHT], "unknown dtype 'bf17'"),
    ([*TILE, "--copy", "cp.async.cg.16: lane * 16", "--operand", "A"], "--operand is for loads and stores"),
    ([*TILE, "--copy", "cp.async.cg.16: lane * 16", "--copy", "cp.async.cg.16: 512 + lane * 16", "--src", "0",
      "--src", "1", "--src", "2"], "--src is given 3 times for 2 copies"),
])
def test_bad_input_exits_2_with_one_line(argv, message, capsys):
    assert main(["check", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_gpu_without_a_gpu_exits_2_with_one_line(monkeypatch, capsys):
    from fragsim.gpu_check import runner

    def no_cupy():
        raise runner.GpuUnavailable("CuPy is not installed")
    monkeypatch.setattr(runner, "import_cupy", no_cupy)
    monkeypatch.setattr("fragsim.gpu_check.check.program.import_cupy", no_cupy)
    assert main(["check", *FORM, "--operand", "A", *TILE, "--load", RIGHT, "--var", "mf=0", "--var", "kb=0",
                 "--gpu"]) == 2
    err = capsys.readouterr().err
    assert err == "fragsim check: error: --gpu: CuPy is not installed\n"
