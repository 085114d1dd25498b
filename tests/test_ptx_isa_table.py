"""The PTX instruction table (fragsim.ptx.isa.table): one row per PTX ISA syntax line; one lookup
dispatches every instruction; the rows admit what ptxas assembles."""

import os

import numpy as np
import pytest

from fragsim.ptx.isa import table
from fragsim.ptx.isa.row import Status
from fragsim.ptx.semantics import Spec, UnsupportedInstruction

DATA = os.path.join(os.path.dirname(__file__), "data", "ptx")


def test_no_two_rows_of_an_opcode_admit_the_same_modifiers():
    assert list(table.check()) == []


def test_every_row_that_runs_names_its_semantic_and_every_refused_row_says_why():
    for r in table.ROWS:
        assert (r.run is None) == (r.status.level == "refused"), r.syntax.text
        if r.status.level == "refused":
            assert r.status.why


def test_a_bit_exact_status_names_the_family_that_validates_it():
    with pytest.raises(ValueError, match="names the gpu_check family"):
        Status("bit-exact")


def test_cvt_rows_admit_exactly_the_candidates_ptxas_assembles():
    """tests/data/ptx/cvt/ptxas_sm90a.txt: ptxas 13.0's verdict on every cvt spelling with a float side
    that the ptx_cvt family tried."""
    from fragsim.gpu_check.ptx.convert import candidates
    with open(os.path.join(DATA, "cvt", "ptxas_sm90a.txt")) as f:
        accepted = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    admitted = set()
    for text in candidates():
        op, *mods = text.split(".")
        try:
            row, _ = table.lookup(op, tuple(mods))
        except UnsupportedInstruction:
            continue
        assert row.family == "convert", text
        admitted.add(text)
    assert admitted == accepted


def test_an_opcode_with_integer_and_float_forms_goes_to_the_family_of_its_type():
    assert table.lookup("add", ("s32",))[0].family == "integer"
    assert table.lookup("add", ("rn", "f32"))[0].family == "floating"
    assert table.lookup("cvt", ("s32", "s8"))[0].family == "integer"
    assert table.lookup("cvt", ("rn", "f32", "s32"))[0].family == "convert"


def test_an_unknown_opcode_is_refused_naming_the_support_page():
    with pytest.raises(UnsupportedInstruction, match=r"frobnicate\.b32: not an instruction fragsim runs .*instructions"):
        table.lookup("frobnicate", ("b32",))


def test_a_form_no_row_admits_is_refused_listing_the_opcodes_forms():
    with pytest.raises(UnsupportedInstruction, match=r"add\.sat\.u32: not a form of add .*add\.sat\.s32"):
        table.lookup("add", ("sat", "u32"))


def test_a_refused_row_gives_its_reason():
    with pytest.raises(UnsupportedInstruction, match="sm_100"):
        table.lookup("add", ("rn", "f32x2"))


def test_a_modelled_mufu_row_gives_the_hardware_bits_and_its_stand_in_on_request():
    one = np.array([0x3F800000], np.uint32)
    assert table.resolve(Spec("ex2", ("approx", "f32"), 1, 1)).fn(one)[0][0] == 0x40000000
    assert table.resolve(Spec("ex2", ("approx", "f32"), 1, 1, approx=True)).fn(one)[0][0] == 0x40000000


def test_the_resolver_reads_the_grammars_slots():
    row, spec = table.spec_of("fma", ("rn", "ftz", "f32"), 1, 3)
    assert spec.slot("rnd") == "rn" and spec.has("ftz") and not spec.has("sat") and spec.types == ("f32",)
    assert row.run(spec).src == ("f32",) * 3
