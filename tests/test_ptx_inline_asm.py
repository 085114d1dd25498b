"""Inline-asm statements written over several lines are attributed to the line they start on
(nvcc -lineinfo puts their .loc at the last operand): tests/data/ptx/src/inline_asm.cu, compiled by
nvcc 13.0 (tests/data/ptx/src/build.sh)."""

from pathlib import Path

import numpy as np

import fragsim
from fragsim.ptx.inline_asm import statement_line
from fragsim.ptx.parse import parse

DATA = Path(__file__).parent / "data" / "ptx"
PTX = DATA / "inline_asm.sm90a.lineinfo.ptx"
SOURCE = (DATA / "src" / "inline_asm.cu").read_text().split("\n")


def _line(text: str) -> int:
    """The 1-based line of inline_asm.cu that holds ``text``."""
    return next(i for i, s in enumerate(SOURCE, 1) if text in s)


def _report(ptx):
    inp, out = np.arange(64, dtype=np.uint32), np.zeros(32, np.uint32)
    run = fragsim.run_kernel(ptx, "inline_asm", grid=1, block=32, args=[inp, out], report=True)
    q = (np.arange(32) % 16) * 4
    assert (out == inp[q] + inp[q + 1] + inp[q + 2] + inp[q + 3] + 1).all()
    return {(r.op, r.source.rsplit(":", 1)[1]) for r in run.shared.rows if r.op.startswith("ld.")}


def test_a_run_reports_each_asm_statement_on_the_line_it_starts_on():
    assert _report(PTX) == {
        ("ld.shared.v2.b32", str(_line("asm volatile(  // the template"))),
        ("ld.shared.b32", str(_line("__asm__ __volatile__"))),
        ("ld.shared.b32", str(_line('asm volatile("{'))),
    }


def test_without_the_source_nvcc_s_line_stays():
    text = PTX.read_text().replace('"tests/data/ptx/src/inline_asm.cu"', '"/no/such/folder/inline_asm.cu"')
    assert _report(text) == {("ld.shared.v2.b32", "16"), ("ld.shared.b32", "17"), ("ld.shared.b32", "24")}


def test_the_parser_marks_the_locations_of_inline_asm_instructions_only():
    entry = next(iter(parse(PTX.read_text()).entries.values()))
    marked = {i.text for i in entry.instructions if i.loc is not None and i.loc.asm}
    assert marked == {"ld.shared.v2.b32", "ld.shared.b32", "add.u32", "bar.warp.sync"}


def test_a_statement_without_operands_keeps_the_line_of_its_keyword():
    at = _line('asm volatile("bar.warp.sync -1;"')
    assert statement_line(SOURCE, at, 5) == at


def test_a_position_in_no_asm_statement_has_no_statement_line():
    lines = ["#define LDS(r, p) asm volatile(\"ld.shared.b32 %0, [%1];\" : \"=r\"(r) : \"r\"(p))",
             "__global__ void k() {",
             "    LDS(x, y);",
             "}"]
    assert statement_line(lines, 3, 5) is None
