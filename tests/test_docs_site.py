"""The docs site (mkdocs.yml, docs/) builds with warnings as errors, and its API reference covers
every public name."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fragsim

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api" / "index.md"


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    """`mkdocs build --strict`: a broken link or anchor, a page missing from the navigation, a
    docstring mkdocstrings cannot read, or a notebook the plugin cannot render fails it."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install '.[test]' installs it)")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-5000:]
    for page in ("index.html", "api/index.html", "tutorial/index.html", "validation/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_the_docs_build_prints_no_theme_banner(tmp_path):
    """The configured theme prints nothing of its own on `mkdocs build` (Material for MkDocs prints an
    end-of-life banner): mkdocs.yml's theme and extensions, one page, no plugins."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install '.[test]' installs it)")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# fragsim\n")
    (tmp_path / "mkdocs.yml").write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: docs\nsite_dir: site\n"
                                         "nav: [index.md]\nplugins: []\nextra_css: []\nnot_in_nav: ''\n")
    env = {k: v for k, v in os.environ.items() if k not in ("NO_MKDOCS_2_WARNING", "DISABLE_MKDOCS_2_WARNING")}
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--quiet", "-f", str(tmp_path / "mkdocs.yml")],
                       cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-5000:]
    assert (r.stdout + r.stderr).strip() == ""


def test_the_api_reference_has_an_entry_for_every_public_name():
    entries = re.findall(r"^      heading: fragsim\.(\w+)$", API.read_text(), re.M)
    assert sorted(entries) == sorted(fragsim.__all__)


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md") if "research" not in p.parts}
    pages.add("tutorial.ipynb")
    assert {p for p in pages if f": {p}" not in nav} == set()
