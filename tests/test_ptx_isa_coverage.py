"""The instruction table and the GPU recordings agree: every bit-exact row has recorded GPU cases,
every recorded variant is a form of a row, and the support page is the table's."""

import functools
import os

from fragsim.cli import main
from fragsim.gpu_check.coverage import recorded
from fragsim.ptx.isa import support, table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")


@functools.lru_cache(maxsize=1)
def _coverage():
    """The table's rows against every recording, read once for the tests of this file."""
    return support.coverage(recorded(DATA))


def test_every_recorded_variant_is_admitted_by_a_row():
    _, orphans = _coverage()
    assert orphans == []


def test_every_bit_exact_row_has_recorded_gpu_cases():
    """The PTX families' recordings, the mma/shared/movmatrix warp corpora, the wgmma corpora and the
    tma runs (gpu_check/coverage.py reads the instructions each ran)."""
    cov, _ = _coverage()
    uncovered = [r.syntax.text for i, r in enumerate(table.ROWS) if r.status.level == "bit-exact" and i not in cov]
    assert uncovered == []


def test_a_row_is_covered_only_by_variants_it_admits():
    cov, _ = _coverage()
    for i, c in cov.items():
        row = table.ROWS[i]
        assert all(row.syntax.match(tuple(v.split(".")[1:])) is not None for v in c.variants)


def test_the_docs_support_page_is_generated_from_the_table(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["run", "--instructions", "--markdown"]) == 0
    with open(os.path.join(ROOT, "docs", "instructions.md")) as f:
        assert f.read() == capsys.readouterr().out, \
            "docs/instructions.md is stale: fragsim run --instructions --markdown > docs/instructions.md"


def test_the_listing_filters_rows():
    text = support.listing("bfind")
    assert "bfind{.shiftamt}.type" in text and "add.type" not in text
    assert support.listing("no-such-thing") == "no instruction matches 'no-such-thing'"


def test_an_unvalidated_row_has_no_recording_yet():
    """Once the GPU has run a row's forms, its status says bit-exact."""
    cov, _ = _coverage()
    stale = [r.syntax.text for i, r in enumerate(table.ROWS) if r.status.level == "unvalidated" and i in cov]
    assert stale == []
