"""fragsim mma: D from .npy matrices (floats or raw bits), --explain, --json, errors."""

import json

import numpy as np
import pytest

import fragsim
from fragsim.arith.explain import explain
from fragsim.cli import main
from fragsim.facts.formats import from_float
from mma_cases import FLOAT_FORMS

F32 = "m16n8k16.row.col.f32.f16.f16.f32"


@pytest.fixture
def example(tmp_path):
    """The reference doc's first worked example in D[0, 0]; some other rows too."""
    A = np.zeros((16, 16))
    B = np.zeros((16, 8))
    C = np.zeros((16, 8))
    C[0, 0] = 2.0**23
    A[0, :4] = [-(2.0**13), -0.5, -0.25, -0.125]
    B[:4, 0] = [2.0**10, 1, 1, 1]
    A[1:] = np.arange(15 * 16).reshape(15, 16) / 64
    B[:, 1:] = np.eye(16, 7)
    for name, x in (("A", A), ("B", B), ("C", C)):
        np.save(tmp_path / f"{name}.npy", x)
    return tmp_path


def args(d, *extra, arch="sm_90"):
    return ["mma", F32, "--arch", arch, "--a", str(d / "A.npy"), "--b", str(d / "B.npy"), "--c", str(d / "C.npy"), *extra]


@pytest.mark.parametrize("arch, bits", [("sm_80", "bf000000"), ("sm_90", "bf400000")])
def test_prints_values_and_bits_of_d(example, capsys, arch, bits):
    assert main(args(example, arch=arch)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("mma.sync.aligned." + F32 + " on " + arch)
    assert out[2].split()[0] == ("-0.5" if arch == "sm_80" else "-0.75")
    assert out[out.index("bits:") + 1].split()[0] == bits


def test_json_output(example, capsys):
    assert main(args(example, "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["arch"] == "sm_90" and data["d_values"][0][0] == -0.75 and data["d_bits"][0][0] == 0xBF400000


def test_raw_bit_matrices_give_the_same_d(example, capsys):
    f = fragsim.lookup(F32)
    for name, op in (("A", "A"), ("B", "B"), ("C", "C")):
        np.save(example / f"{name}.npy", from_float(np.load(example / f"{name}.npy"), f.fmt(op)))
    assert main(args(example, "--json")) == 0
    assert json.loads(capsys.readouterr().out)["d_bits"][0][0] == 0xBF400000


def test_explain_shows_terms_e_max_truncation_and_rounding(example, capsys):
    assert main(args(example, "--explain", "0", "0")) == 0
    out = capsys.readouterr().out
    assert "E_max = 23" in out and "2^(E_max - F) = 2^-2" in out
    assert "k=3" in out and "0.125" in out           # -0.125 falls below the grid: dropped
    assert "sum of kept terms = -3 x 2^-2 = -0.75" in out
    assert out.rstrip().endswith("D[0,0] = 0xbf400000 (-0.75)")


def test_explain_on_sm80_shows_each_block(example, capsys):
    assert main(args(example, "--explain", "0", "0", arch="a100")) == 0
    out = capsys.readouterr().out
    assert "block 1 of 2: k = 0..7" in out and "block 2 of 2: k = 8..15, c = block 1's result" in out


def test_explain_json(example, capsys):
    assert main(args(example, "--explain", "0", "0", "--json")) == 0
    t = json.loads(capsys.readouterr().out)
    assert t["blocks"][0]["E_max"] == 23 and t["blocks"][0]["sum_units"] == -3 and t["d"]["bits"] == "0xbf400000"


@pytest.mark.parametrize("form", FLOAT_FORMS)
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_explanation_agrees_with_the_kernel_on_every_element(form, arch):
    import mma_cases
    A, B, C = mma_cases.matrices(form, ("mixed", "mixed", "mixed"), 17, "cancel")
    f = fragsim.lookup(form)
    D = fragsim.unpack(form, "D", fragsim.mma(form, fragsim.pack(form, "A", A), fragsim.pack(form, "B", B),
                                              fragsim.pack(form, "C", C), arch=arch))
    for m in (0, 5, 15):
        for n in range(f.shape[1]):
            t = explain(form, A, B, C, m, n, arch)
            assert t["d"]["bits"] == f"{int(D[m, n]):#0{f.fmt('D').storage_bits // 4 + 2}x}"


def test_wrong_matrix_shape_is_one_line_and_exit_2(example, capsys):
    np.save(example / "A.npy", np.zeros((16, 8)))
    assert main(args(example)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected a 16x16 matrix, got shape (16, 8)" in err


def test_unsupported_arch_is_one_line_and_exit_2(example, capsys):
    assert main(args(example, arch="sm_70")) == 2
    assert "supported: sm_80, sm_90" in capsys.readouterr().err


def test_explain_outside_d_is_refused(example, capsys):
    assert main(args(example, "--explain", "16", "0")) == 2
    assert "outside D (16x8)" in capsys.readouterr().err


def test_out_of_range_bits_are_refused(example, capsys):
    np.save(example / "B.npy", np.full((16, 8), 70000, np.uint32))
    assert main(args(example)) == 2
    assert "raw f16 bits must lie in [0, 2**16)" in capsys.readouterr().err
