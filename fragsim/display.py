"""Rich display in Jupyter: every fragsim object's ``_repr_png_``/``_repr_svg_`` is ``png(self)`` /
``svg(self)`` here.

The pictures (``fragsim.viz``) are drawn from the model, so the model's modules never import them:
this module is the one door, and it loads ``fragsim.viz.notebook`` by name on the first display.
Importing fragsim thus never loads matplotlib, and the import graph stays layered (model below
pictures below the command line), which tests/test_architecture.py checks.
"""

from __future__ import annotations

import importlib

#: The pictures' entry point for notebooks (``picture(obj)``, ``repr_png``, ``repr_svg``).
NOTEBOOK = "fragsim.viz.notebook"


def png(obj) -> bytes:
    """The PNG bytes of ``obj``'s picture."""
    return importlib.import_module(NOTEBOOK).repr_png(obj)


def svg(obj) -> str:
    """The SVG text of ``obj``'s picture."""
    return importlib.import_module(NOTEBOOK).repr_svg(obj)
