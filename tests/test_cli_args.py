"""The command line speaks its own language: one --var syntax in every subcommand, hints spelled as
options (--at 0,16, --var warp=0..3), and the bare command explains itself without writing files."""

import os

import numpy as np

import pytest

import fragsim
from fragsim.cli import main
from fragsim.cli import args as A

FORM = ["--form", "m16n8k16.row.col.f32.bf16.bf16.f32"]
TILE = ["--tile", "128x32 bf16 row pitch=64 swizzle=2,4,3"]
LOAD = ("ldmatrix.x4: int row = mf * 16 + (lane & 15); int atom = (kb << 1) + (lane >> 4); "
        "row * 64 + (atom ^ ((row >> 1) & 3)) * 16")


def test_bare_fragsim_prints_the_help_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    assert "fragsim tour" in capsys.readouterr().out
    assert os.listdir(tmp_path) == []


def test_options_without_a_subcommand_are_refused_not_a_tour(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["--json"])
    assert e.value.code == 2 and os.listdir(tmp_path) == []


@pytest.mark.parametrize("text,values", [("3", [3]), ("0..3", [0, 1, 2, 3]), ("0,2,4", [0, 2, 4]),
                                         ("0x10", [16]), ("-2..-1", [-2, -1])])
def test_var_values_are_an_integer_a_range_with_both_ends_or_a_list(text, values):
    assert A.variables([f"k={text}"]) == {"k": values}


@pytest.mark.parametrize("cmd", [["conflicts", "ld.shared.b32", "--addrs", "lane * 4 * k"],
                                 ["swizzle", "--tile", "32x32 bf16", "--read", "ld.shared.v4.b32: k * 16"],
                                 ["check", *FORM, "--operand", "A", *TILE, "--load", LOAD, "--var", "mf=0"]])
@pytest.mark.parametrize("bad,message", [("k", "expected NAME=VALUES, e.g. --var k=2 or --var warp=0..3"),
                                         ("k=2.5", "--var k: '2.5' is not an integer (floats are not addresses"),
                                         ("lane=3", "lane is the lane index 0..31 and cannot be set"),
                                         ("k=3..1", "--var k=3..1: the range is empty")])
def test_every_subcommand_refuses_a_bad_var_in_the_same_words(cmd, bad, message, capsys):
    assert main([*cmd, "--var", bad]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_conflicts_takes_a_range_and_issues_the_instruction_once_per_value(capsys):
    assert main(["conflicts", "ld.shared.b32", "--addrs", "lane * 4 * k", "--var", "k=1..3"]) == 0
    rows = capsys.readouterr().out.splitlines()[2:5]
    assert [r.split()[1] for r in rows] == ["1", "2", "1"]          # k=2: lanes 0 and 16 share bank 0
    assert [r.split()[-1] for r in rows] == ["k=1", "k=2", "k=3"]


def test_check_of_loads_takes_a_range_and_checks_each_combination(capsys):
    assert main(["check", *FORM, "--operand", "A", *TILE, "--load", LOAD, "--var", "mf=0",
                 "--var", "kb=0..1", "--at", "0,kb*16"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 of 2 combinations of kb correct"


def test_a_misplaced_fragment_is_named_with_the_at_option_on_the_command_line(capsys):
    assert main(["check", *FORM, "--operand", "A", *TILE, "--load", LOAD, "--var", "mf=1", "--var", "kb=0"]) == 1
    out = capsys.readouterr().out
    assert "say so with --at 16,0;" in out and "at=(" not in out


def test_the_same_misplaced_fragment_is_named_with_the_at_parameter_in_python():
    r = fragsim.check_load(FORM[1], "A", TILE[1], [tuple(s.strip() for s in LOAD.split(":", 1))],
                           variables={"mf": 1, "kb": 0})
    assert "say so with at=(16, 0);" in str(r)


def test_a_variable_without_value_is_asked_for_with_var_on_the_command_line(capsys):
    assert main(["swizzle", "--tile", "32x32 bf16", "--read", "ld.shared.v4.b32: warp * 512 + lane * 16"]) == 2
    assert "with --var, e.g. --var warp=0..3" in capsys.readouterr().err


def test_swizzle_help_says_warp_is_not_supplied(capsys):
    with pytest.raises(SystemExit):
        main(["swizzle", "--help"])
    assert "Nothing is supplied for you" in " ".join(capsys.readouterr().out.split())


def test_addresses_counted_in_elements_are_suspected_when_times_the_element_size_they_align(capsys):
    """(lane % 16) * 32 + (lane / 16) * 8 is a 16x16 f16 tile's rows in halves: times 2 it is bytes."""
    assert main(["conflicts", "ldmatrix.x4", "--addrs", "(lane % 16) * 32 + (lane / 16) * 8"]) == 2
    assert "is the expression counting 2-byte elements instead of bytes?" in capsys.readouterr().err


def test_addresses_misaligned_for_another_reason_get_no_element_hint(capsys):
    assert main(["conflicts", "ldmatrix.x4", "--addrs", "lane * 16 + 3"]) == 2
    assert capsys.readouterr().err.endswith("is not 16-byte aligned\n")


def test_the_checker_suspects_elements_too():
    r = fragsim.check_load(FORM[1], "A", "16x16 bf16", [("ldmatrix.x4", "(lane % 16) * 16 + (lane / 16) * 8")])
    assert "counting 2-byte elements instead of bytes" in str(r)


def test_a_pitch_that_misaligns_the_rows_is_named_not_suspected_as_elements():
    """136-byte rows (64 f16 + 8 bytes of padding): every 16-byte ldmatrix row of an odd row is off by
    8 bytes; the checker names the pitch and the one that would do, not "2-byte elements"."""
    tile = fragsim.Tile(16, 64, "f16", pitch=136)
    r = fragsim.check_load(FORM[1], "A", tile, [("ldmatrix.x4", "(lane % 16) * 136 + (lane / 16) * 16")])
    assert r.diagnosis[0] == ("load 0 (ldmatrix.x4): lane 1: ldmatrix row address 0x88 is not 16-byte aligned "
                              "(the tile's row pitch 136 bytes is not a multiple of 16: row 1 starts 136 bytes "
                              "after row 0, where a 16-byte ldmatrix row address cannot be aligned; pad the rows "
                              "to a pitch of 144 bytes); the GPU would fault on it")


def test_a_float_literal_in_address_math_says_floats_are_not_addresses(capsys):
    assert main(["conflicts", "ld.shared.b32", "--addrs", "lane * 1.5"]) == 2
    assert "position 7: '1.5' is not an integer: floats are not addresses" in capsys.readouterr().err


@pytest.mark.parametrize("call", [lambda: fragsim.bank_conflicts("ld.shared.b32", [1.5] * 32),
                                  lambda: fragsim.ldmatrix(np.zeros(512, np.uint8), np.zeros(32), 4)])
def test_float_addresses_are_refused_as_not_addresses(call):
    with pytest.raises(TypeError, match=r"got dtype float64 \(floats are not addresses\)$"):
        call()
