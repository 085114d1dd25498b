"""docs/tutorial.ipynb runs from top to bottom and prints what its stored outputs show; each picture
cell shows a picture."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install '.[test]' installs it)")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install '.[test]' installs it)")

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "tutorial.ipynb"


def _shown(cell) -> tuple[str, list[list[str]]]:
    """A code cell's printed text and the kinds of its rich outputs (image/png, text/plain)."""
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    rich = [sorted(o.data) for o in cell.outputs if o.output_type in ("execute_result", "display_data")]
    return text, rich


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    stored = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return stored, nb


def test_the_tutorial_prints_what_it_shows(executed):
    stored, ran = executed
    for i, (old, new) in enumerate(zip(stored.cells, ran.cells)):
        if old.cell_type == "code":
            assert _shown(new)[0] == _shown(old)[0], (
                f"cell {i}: printed text differs from the stored output; if fragsim's output changed on purpose, "
                "store the new one: jupyter nbconvert --to notebook --execute --inplace docs/tutorial.ipynb")


def test_the_tutorial_shows_pictures_inline(executed):
    _, ran = executed
    pictures = [r for c in ran.cells if c.cell_type == "code" for r in _shown(c)[1] if "image/png" in r]
    assert len(pictures) >= 3
