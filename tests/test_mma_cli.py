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


def _save(d, **mats):
    """The matrices saved in d; their command-line options (--a A.npy ...)."""
    argv = []
    for name, x in mats.items():
        np.save(d / f"{name}.npy", x)
        argv += [f"--{name.lower()}", str(d / f"{name}.npy")]
    return argv


def test_explain_fp8_shows_the_f16_conversion_the_two_hmmas_and_the_add_of_c(tmp_path, capsys):
    """An fp8 form: each byte's f16, HMMA 1 over k % 4 in {0, 1} from +0, HMMA 2 over {2, 3}, then C
    added by one IEEE round-to-nearest-even addition; D is the kernel's."""
    form = "m16n8k16.row.col.f32.e4m3.e4m3.f32"
    files = _save(tmp_path, A=np.ones((16, 16)), B=np.arange(128).reshape(16, 8) / 16, C=np.full((16, 8), 0.5))
    assert main(["mma", form, *files, "--json"]) == 0
    want = json.loads(capsys.readouterr().out)["d_bits"][0][3]
    assert main(["mma", form, *files, "--explain", "0", "3"]) == 0
    out = capsys.readouterr().out
    assert "conversion to f16 (exact):" in out
    assert "HMMA 1 of 2: k = 0, 1, 4, 5, 8, 9, 12, 13, c = +0 (C comes last)" in out
    assert "HMMA 2 of 2: k = 2, 3, 6, 7, 10, 11, 14, 15, c = HMMA 1's result" in out
    assert "C + HMMA 2's result, one IEEE addition rounded to nearest even in f32:" in out
    assert out.rstrip().splitlines()[-1].startswith(f"D[0,3] = {want:#010x} (")


def test_explain_m8n8k4_takes_the_rows_of_every_quad_pair(tmp_path, capsys):
    """m8n8k4 .f16 stacks the four quad pairs' products: D is 32x8, row 31 is quad pair 3's (B rows 12..15)."""
    form = "m8n8k4.row.col.f16.f16.f16.f16"
    rng = np.random.default_rng(0)
    files = _save(tmp_path, A=rng.standard_normal((32, 4)), B=rng.standard_normal((16, 8)), C=rng.standard_normal((32, 8)))
    assert main(["mma", form, *files, "--explain", "31", "7"]) == 0
    out = capsys.readouterr().out
    assert "quad pair 3: row 31 of A and C, rows 12..15 of B" in out and "s6 = s3 + s5 = " in out
    assert main(["mma", form, *files, "--explain", "32", "0"]) == 2
    assert "element (32, 0) is outside D (32x8)" in capsys.readouterr().err


def test_explain_json_of_an_integer_form_shows_the_wrap(tmp_path, capsys):
    """s8 with C = MAX_INT32: c + 1 is exact 2^31, and D wraps to MIN_INT32."""
    form = "m16n8k16.row.col.s32.s8.s8.s32"
    A, B = np.zeros((16, 16), np.int64), np.zeros((16, 8), np.int64)
    A[0, 0] = B[0, 0] = 1
    files = _save(tmp_path, A=A, B=B, C=np.full((16, 8), 2**31 - 1))
    assert main(["mma", form, *files, "--explain", "0", "0", "--json"]) == 0
    t = json.loads(capsys.readouterr().out)
    assert t["model"] == "integer" and t["steps"][0]["exact"] == 2**31
    assert t["wrapped"] == -(2**31) and t["d"]["bits"] == "0x80000000"
