"""fragsim check --wgmma: exit 0 when the descriptor reads the tile, 1 when it does not (with the fix),
2 and one line on bad input."""

import json

import pytest

from fragsim.cli import main

BASE = ["check", "--form", "m64n64k16.f32.bf16.bf16", "--operand", "A", "--tile", "64x64 bf16 swizzle=3,4,3"]


def run(capsys, *args):
    code = main(BASE + list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cute_descriptor_exits_0(capsys):
    code, out, _ = run(capsys, "--wgmma", "start=k*32 lbo=16 sbo=1024 swizzle=128B")
    assert code == 0 and "OK: all 4,096 elements of 4 k-steps" in out


def test_the_64_bit_value_as_an_expression_in_k(capsys):
    code, out, _ = run(capsys, "--wgmma", "0x4000004000010000 + 2 * k")
    assert code == 0


def test_a_wrong_descriptor_exits_1_with_the_fix(capsys):
    code, out, _ = run(capsys, "--wgmma", "start=k*16, lbo=16, sbo=512, swizzle=64B", "--json")
    d = json.loads(out)
    assert code == 1 and d["ok"] is False
    assert d["fix"][1] == {"value": "0x4000004000010002", "start_address": 32, "leading_byte_offset": 16,
                           "stride_byte_offset": 1024, "base_offset": 0, "swizzle": "128B"}
    assert {f["kind"] for f in d["diagnosis"]} == {"SBO", "swizzle mode", "k-step advance", "fix"}


def test_one_descriptor_per_k_step(capsys):
    code, out, _ = run(capsys, *sum((["--wgmma", hex(0x4000004000010000 + 2 * s)] for s in range(4)), []))
    assert code == 0 and "4 k-steps" in out


def test_the_picture_of_a_check(capsys, tmp_path):
    code, out, _ = run(capsys, "--wgmma", "start=k*16 lbo=16 sbo=1024 swizzle=128B", "--svg", str(tmp_path / "c.svg"))
    assert code == 1 and (tmp_path / "c.svg").read_text().count("WRONG at k-step 1") == 1


@pytest.mark.parametrize("args, words", [
    (["--wgmma", "start=0 lbo=16"], "field sbo is missing"),
    (["--wgmma", "start=0 start=0 lbo=16 sbo=16"], "field start is given twice"),
    (["--wgmma", "x start=0 lbo=16 sbo=16"], "unexpected 'x' before the fields"),
    (["--wgmma", "0", "--mask", "1"], "--mask is not for --wgmma"),
    (["--wgmma", "0", "--at", "a,b"], "--wgmma takes integers"),
    (["--wgmma", "0", "--gpu"], "--gpu is not for --wgmma"),
    (["--wgmma", "16384"], "unused bits 14-15"),
])
def test_bad_input_is_exit_2_and_one_line(capsys, args, words):
    import re
    code, _, err = run(capsys, *args)
    assert code == 2 and err.count("\n") == 1 and re.search(words, err), err
