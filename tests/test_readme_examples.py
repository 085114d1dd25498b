"""README examples marked ``<!-- example:NAME -->`` print exactly the output the README shows under them."""

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLE = re.compile(r"<!-- example:([\w-]+) -->\n```python\n(.*?)```\nprints\n\n```text\n(.*?)```", re.S)
EXAMPLES = EXAMPLE.findall(README.read_text())


def test_the_marked_examples_are_found():
    assert {name for name, _, _ in EXAMPLES} >= {"fp8-movmatrix", "wgmma"}


@pytest.mark.parametrize("name,code,printed", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_the_example_prints_what_the_readme_says(name, code, printed):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"README.md example {name}", "exec"), {})
    assert out.getvalue() == printed
