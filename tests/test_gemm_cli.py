"""fragsim gemm on the command line: the D that fragsim.gemm gives, saved as bits or values."""

import io
import json

import numpy as np
import pytest

import fragsim
from fragsim.cli import gemm as cli_gemm
from fragsim.cli import main

F32 = "m16n8k16.row.col.f32.f16.f16.f32"


@pytest.fixture
def mats(tmp_path):
    rng = np.random.default_rng(3)
    a, b, c = rng.standard_normal((32, 48)), rng.standard_normal((48, 16)), rng.standard_normal((32, 16))
    for name, x in (("a", a), ("b", b), ("c", c)):
        np.save(tmp_path / f"{name}.npy", x)
    return tmp_path, a, b, c


def test_d_is_fragsim_gemm_of_the_files_rounded_to_the_operand_formats(mats, capsys):
    d, a, b, c = mats
    assert main(["gemm", F32, "--a", str(d / "a.npy"), "--b", str(d / "b.npy"), "--c", str(d / "c.npy"),
                 "--k-order", "2,0,1", "-o", str(d / "d.npy")]) == 0
    want = fragsim.gemm(F32, fragsim.to_bits(a, "f16"), fragsim.to_bits(b, "f16"), fragsim.to_bits(c, "f32"),
                        k_order=[2, 0, 1])
    got = np.load(d / "d.npy")
    assert got.dtype == np.uint32 and np.array_equal(got, want)
    out = capsys.readouterr().out
    assert "D (32 x 16) = A (32 x 48) * B + C, 3 k-steps (in the given order), 12 mma" in out


def test_values_and_json(mats, capsys):
    d, a, b, _ = mats
    assert main(["gemm", "m16n8k16.row.col.s32.s8.s8.s32", "--a", str(d / "ai.npy"), "--b", str(d / "bi.npy"),
                 "-o", str(d / "d.npy")]) == 2     # no such files yet: one line, exit 2
    np.save(d / "ai.npy", np.full((16, 32), -128, np.int8))
    np.save(d / "bi.npy", np.full((32, 8), 127, np.int16))
    capsys.readouterr()
    assert main(["gemm", "m16n8k16.row.col.s32.s8.s8.s32", "--a", str(d / "ai.npy"), "--b", str(d / "bi.npy"),
                 "-o", str(d / "d.npy"), "--values", "--json", "--k-order", "descending"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["mma"] == 2 and summary["k_steps"] == 2 and summary["saved"] == "values"
    assert (np.load(d / "d.npy") == -128 * 127 * 32).all()


def test_a_shape_that_does_not_divide_is_one_line(mats, capsys):
    d, *_ = mats
    np.save(d / "a30.npy", np.zeros((30, 48)))
    assert main(["gemm", F32, "--a", str(d / "a30.npy"), "--b", str(d / "b.npy"), "-o", str(d / "d.npy")]) == 2
    err = capsys.readouterr().err
    assert err == ("fragsim gemm: error: M (rows of A and C) = 30 is not a multiple of 16, the M of m16n8k16: "
                   "A is 30 x 48, B 48 x 16\n")


def test_large_problems_draw_a_progress_bar_on_a_terminal(mats, monkeypatch, capsys):
    d, *_ = mats

    class Tty(io.StringIO):
        def isatty(self):
            return True
    err = Tty()
    monkeypatch.setattr(cli_gemm, "PROGRESS_MIN", 1)
    monkeypatch.setattr("sys.stderr", err)
    assert main(["gemm", F32, "--a", str(d / "a.npy"), "--b", str(d / "b.npy"), "-o", str(d / "d.npy")]) == 0
    assert err.getvalue().startswith("\r[") and "12/12 mma" in err.getvalue() and err.getvalue().endswith("\n")
    err.truncate(0)
    assert main(["gemm", F32, "--a", str(d / "a.npy"), "--b", str(d / "b.npy"), "-o", str(d / "d.npy"),
                 "--quiet"]) == 0
    assert err.getvalue() == ""
