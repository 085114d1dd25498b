"""Every example of README.md and of the docs site runs and prints what its page shows.

How the pages are read (python blocks and their output, console transcripts, ``...`` cuts, the
``<!-- not-run: REASON -->`` marker) is in tests/doc_examples.py.
"""

from __future__ import annotations

import re

import pytest

from doc_examples import RUNNABLE, SHELL, ROOT, PageRun, blocks, matches, pages

BLOCKS = {path: blocks(path) for path in pages()}
EXAMPLES = [(path, i, b) for path, found in BLOCKS.items()
            for i, b in enumerate([b for b in found if b.lang in RUNNABLE and b.not_run is None])]

# Why a shown block may not run here; each marker's reason starts with one of these.
NOT_RUN_REASONS = ("needs a GPU", "needs Nsight Compute", "installs packages", "is CI's own command",
                   "draws every form's pictures")
#: the installs, and the one command that needs a GPU on each page of a GPU-checked model (mma, TMA, kernel bugs ...)
NOT_RUN_AT_MOST = 12
LANGUAGES = RUNNABLE | SHELL | {"text", "c", "cuda", "json"}


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory):
    runs: dict = {}

    def run(path):
        if path not in runs:
            runs[path] = PageRun(path, tmp_path_factory.mktemp(path.stem))
        return runs[path]
    return run


@pytest.mark.parametrize("path, index", [(p, i) for p, i, _ in EXAMPLES], ids=[b.id for *_, b in EXAMPLES])
def test_the_example_prints_what_its_page_shows(page_runs, path, index):
    failure = page_runs(path).result(index)
    assert failure is None, failure


def test_blocks_that_do_not_run_are_few_and_say_why():
    marked = [b for found in BLOCKS.values() for b in found if b.not_run is not None]
    assert len(marked) <= NOT_RUN_AT_MOST, [b.id for b in marked]
    for b in marked:
        assert b.not_run.startswith(NOT_RUN_REASONS), f"{b.id}: not-run reason {b.not_run!r}"
        assert b.lang in RUNNABLE | SHELL, f"{b.id}: a {b.lang} block is not an example; drop its marker"


def test_every_code_block_names_a_known_language():
    """An example hides from the harness neither behind an unknown language nor behind none (an
    untagged block is plain text: a diagram, never a command or code)."""
    for found in BLOCKS.values():
        for b in found:
            if b.lang == "":
                assert not re.search(r"^(\$ |import |from \w+ import )", b.body, re.M), f"{b.id}: untagged example"
            else:
                assert b.lang in LANGUAGES, f"{b.id}: code block language {b.lang!r}, expected one of {sorted(LANGUAGES)}"


def test_shell_scripts_show_no_output_so_they_are_marked():
    """A bash block has no transcript to compare: it is shown only with a not-run marker
    (a runnable command goes into a console block, as ``$ fragsim ...``)."""
    for found in BLOCKS.values():
        for b in found:
            if b.lang in SHELL:
                assert b.not_run is not None, f"{b.id}: bash block without <!-- not-run: REASON -->"


def test_each_job_of_the_readme_has_an_example_that_runs_or_a_marked_one():
    readme = BLOCKS[ROOT / "README.md"]
    jobs = {b.heading for b in readme if b.lang in RUNNABLE}
    assert len(jobs) >= 4, sorted(jobs)


def test_the_readme_test_command_is_the_one_ci_runs():
    """README line 2 of its commands is what .ci/run runs, verbatim."""
    second = BLOCKS[ROOT / "README.md"][0].body.split("\n")[1]
    ci = (ROOT / ".ci" / "run").read_text().rstrip("\n").split("\n")[-1]
    assert ci == second


@pytest.mark.parametrize("shown, printed, same", [
    ("a\nb\n", "a\nb\n", True),
    ("a\n...\nd\n", "a\nb\nc\nd\n", True),          # a cut stands for lines that were printed
    ("a\n  ...\n", "a\nb\n", True),                   # indented cuts too
    ("a\n...\nb\n", "a\nb\n", False),                 # ... but for at least one
    ("a  \n", "a\n", True),                           # trailing blanks are not compared
    ("n cases  (... s)\n", "n cases  (1.4 s)\n", True),  # a cut inside a line
    ("n (... s)\n", "m (1.4 s)\n", False),
    ("a\nb\n", "a\nB\n", False),
    ("", "", True),
    ("", "x\n", False),
])
def test_shown_output_matching(shown, printed, same):
    assert matches(shown, printed) is same
