"""The grammar engine of the PTX instruction table (fragsim.ptx.isa.grammar): PTX ISA syntax lines
read modifiers as ptxas does."""

import pytest

from fragsim.ptx.isa.grammar import Syntax, SyntaxError_

RND = ("rn", "rz", "rm", "rp")


def test_required_tokens_are_read_in_the_isa_order():
    s = Syntax("shf.dir.mode.b32", dir=("l", "r"), mode=("clamp", "wrap"))
    assert s.match(("l", "wrap", "b32")).values == ("l", "wrap", "b32")
    assert s.match(("wrap", "l", "b32")) is None


def test_adjacent_optional_tokens_may_come_in_any_order():
    s = Syntax("add{.rnd}{.ftz}{.sat}.f32", rnd=RND)
    a, b = s.match(("rn", "ftz", "sat", "f32")), s.match(("sat", "rn", "ftz", "f32"))
    assert a == b and a.get("rnd") == "rn" and a.has("sat")


def test_an_optional_token_appears_at_most_once():
    assert Syntax("add{.rnd}{.ftz}.f32", rnd=RND).match(("ftz", "ftz", "f32")) is None


def test_a_slot_takes_one_spelling_of_its_vocabulary():
    s = Syntax("setp.CmpOp.type", CmpOp=("eq", "ne"), type=("b32",))
    assert s.match(("ne", "b32"))["CmpOp"] == "ne"
    assert s.match(("lt", "b32")) is None


def test_a_multi_token_spelling_fills_one_slot():
    s = Syntax("cvt.sat.pair", pair=("u8.s8", "s8.u8"))
    assert s.match(("sat", "u8", "s8"))["pair"] == "u8.s8"
    assert s.match(("sat", "u8", "u8")) is None


def test_a_dotted_literal_is_several_modifiers_in_order():
    s = Syntax("min{.NaN}{.xorsign.abs}.f32")
    assert s.match(("xorsign", "abs", "f32")).has("xorsign.abs")
    assert s.match(("abs", "xorsign", "f32")) is None


def test_forms_lists_every_spelling_once_and_each_reads_back():
    s = Syntax("fma.rnd{.ftz}{.sat}.f32", rnd=RND)
    forms = list(s.forms())
    assert len(forms) == len(set(forms)) == s.count() == 4 * 2 * 2
    assert all(s.match(f) is not None for f in forms)


def test_a_line_must_start_with_its_opcode():
    with pytest.raises(SyntaxError_, match="starts with its opcode"):
        Syntax("{.sat}.s32")


def test_two_optional_neighbours_may_not_share_a_spelling():
    with pytest.raises(SyntaxError_, match="could fill"):
        Syntax("cvt{.a}{.b}.f32", a=("rn",), b=("rn", "rz"))


def test_a_vocabulary_the_line_does_not_use_is_an_error():
    with pytest.raises(SyntaxError_, match="does not use"):
        Syntax("abs.s32", type=("s32",))
