"""fragsim check --tma SPEC --wgmma DESC: exit 0 when every k-step reads what the TMA wrote, 1 with the
diagnosis when not, 2 and one line on bad input."""

import json

import pytest

from fragsim.cli import main

TMA = "dtype=bf16,dims=200x100,box=64x64,swizzle=128B"
BASE = ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tma", TMA, "--dst", "0x400"]
RIGHT = "start=0x400 lbo=16 sbo=1024 swizzle=128B"


def run(capsys, *args, base=BASE):
    code = main(base + list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_tma_wgmma_cu_descriptor_exits_0(capsys):
    code, out, _ = run(capsys, "--wgmma", RIGHT, "--advance", "32")
    assert code == 0 and "OK: all 4,096 elements of 4 k-steps are read where the TMA wrote them" in out


def test_an_expression_in_k_instead_of_advance(capsys):
    code, _, _ = run(capsys, "--wgmma", "start=0x400+32*k lbo=16 sbo=1024 swizzle=128B")
    assert code == 0


def test_k_advance_in_elements_exits_1_with_the_verified_fix(capsys):
    code, out, _ = run(capsys, "--wgmma", RIGHT, "--advance", "16", "--json")
    d = json.loads(out)
    assert code == 1 and d["check"] == "tma_wgmma" and {f["kind"] for f in d["diagnosis"]} == {"k-step advance", "fix"}
    assert d["fix"][1]["start_address"] == 0x420


def test_map_without_swizzle_names_the_map_fix(capsys):
    base = [x if x != TMA else TMA.replace("128B", "none") for x in BASE]
    code, out, _ = run(capsys, "--wgmma", RIGHT, "--advance", "32", base=base)
    assert code == 1 and "swizzle modes differ" in out and "swizzle='128B' in the tensor map (verified)" in out


def test_boxes_with_coords(capsys):
    """Two boxes along M (rows 0..63 and 64..99), the second 8 KB on: the second one's rows."""
    base = BASE[:-2] + ["--dst", "0", "--coords", "0,0", "--dst", "8192", "--coords", "0,64"]
    code, out, _ = run(capsys, "--wgmma", "start=8192 lbo=16 sbo=1024 swizzle=128B", "--advance", "32",
                       "--at", "0,64", base=base)
    assert code == 0, out


HEAD = ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--wgmma", RIGHT]


@pytest.mark.parametrize("args, words", [
    (["--tma", "dtype=bf16,dims=200x100,box=64x64,swizle=128B", "--dst", "0"], "unknown key 'swizle'"),
    (["--tma", "dtype=bf16,dims=200x100", "--dst", "0"], "box= is missing"),
    (["--tma", TMA, "--dst", "0x440"], "128-byte aligned"),
    (["--tma", TMA], "--tma needs --dst"),
    (["--tma", TMA, "--dst", "0", "--tile", "64x64 bf16"], "--tile is not for --tma"),
    (["--tma", TMA, "--dst", "0", "--coords", "0,0", "--coords", "0,64"], "--coords is given 2 times for 1 --dst"),
    (["--tma", TMA, "--dst", "0", "--advance", "32", "--wgmma", RIGHT], "advance goes with one descriptor"),
])
def test_bad_input_exits_2_with_one_line(capsys, args, words):
    code, out, err = run(capsys, *args, base=HEAD)
    assert code == 2 and words in err and err.count("\n") == 1


def test_tma_options_without_tma_exit_2(capsys):
    code = main(["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tile", "64x64 bf16 swizzle=3,4,3",
                 "--wgmma", RIGHT, "--advance", "32"])
    assert code == 2 and "--advance is for --tma" in capsys.readouterr().err


def test_picture_of_the_first_wrong_k_step(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "c.png"
    code, out, _ = run(capsys, "--wgmma", RIGHT, "--advance", "16", "--png", str(png))
    assert code == 1 and png.stat().st_size > 0 and f"wrote {png}" in out
