"""Package layout: viz/ and gpu_check/ sit beside fragsim/ in the repository and exist only as
fragsim.viz and fragsim.gpu_check (pyproject's package-dir mapping), one copy of each module; the
version comes from the package metadata alone."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import pkgutil
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import fragsim
from fragsim.cli import main

ROOT = Path(__file__).resolve().parent.parent
MAPPED = {"fragsim": "fragsim", "viz": "fragsim/viz", "gpu_check": "fragsim/gpu_check"}  # repo dir -> wheel dir


def test_the_source_tree_holds_no_second_copy_of_fragsim_under_fragsim_fragsim():
    """Run from the repository root (its fragsim/ first on sys.path, as PYTHONPATH=. did): the package
    path is fragsim/ alone, so `import fragsim.fragsim` finds nothing."""
    code = "import fragsim; print(fragsim.__path__); import fragsim.fragsim"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == repr([str(ROOT / "fragsim")]), r.stdout + r.stderr
    assert r.returncode != 0 and "ModuleNotFoundError: No module named 'fragsim.fragsim'" in r.stderr, r.stderr


def test_each_gpu_check_and_viz_module_is_loaded_once_under_its_fragsim_name():
    """Every module of fragsim.gpu_check and fragsim.viz imports; each file is one module object,
    named fragsim.<pkg>.<module> (no top-level gpu_check/viz, no fragsim.fragsim.*)."""
    names = []
    for pkg in ("fragsim.gpu_check", "fragsim.viz"):
        mod = importlib.import_module(pkg)
        names += [pkg] + [m.name for m in pkgutil.walk_packages(mod.__path__, pkg + ".")]
    for name in names:
        importlib.import_module(name)
    by_file: dict[str, list[str]] = {}
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f:
            by_file.setdefault(os.path.realpath(f), []).append(name)
    for name in names:
        assert by_file[os.path.realpath(sys.modules[name].__file__)] == [name]
    strays = [n for n in sys.modules if n.split(".")[0] in ("gpu_check", "viz") or n.startswith("fragsim.fragsim")]
    assert strays == []
    assert "fragsim.gpu_check.corpus" in names


def test_gpu_check_comes_from_the_repository_folder_or_the_installed_copy():
    """Editable install: fragsim/ and gpu_check/ of the repository; regular install: fragsim/gpu_check/
    next to the installed fragsim/__init__.py."""
    import fragsim.gpu_check
    pkg_dir = Path(fragsim.__file__).resolve().parent
    expected = ROOT / "gpu_check" if pkg_dir == ROOT / "fragsim" else pkg_dir / "gpu_check"
    assert Path(fragsim.gpu_check.__file__).resolve() == expected / "__init__.py"


def test_version_is_the_installed_metadata_version():
    assert fragsim.__version__ == importlib.metadata.version("fragsim")


def test_fragsim_version_prints_the_metadata_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"fragsim {importlib.metadata.version('fragsim')}\n"


def test_the_fragsim_command_is_the_cli_entry_point():
    eps = importlib.metadata.distribution("fragsim").entry_points
    assert [ep.value for ep in eps if ep.group == "console_scripts" and ep.name == "fragsim"] == ["fragsim.cli:main"]


def _setuptools_version() -> tuple[int, ...] | None:
    try:
        return tuple(int(p) for p in importlib.metadata.version("setuptools").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def _source_files(top: Path) -> list[str]:
    return sorted(p.relative_to(top).as_posix() for p in top.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


@pytest.mark.skipif((_setuptools_version() or (0,)) < (77,),
                    reason="building a wheel offline needs setuptools>=77 here (pip install '.[test]')")
def test_the_wheel_maps_viz_and_gpu_check_under_fragsim_and_holds_every_source_file(tmp_path):
    """Build a wheel from a copy of the repository's packaging inputs (so the checkout gets no build/
    or egg-info from the test) and compare its file list with the source folders."""
    src = tmp_path / "src"
    for name in MAPPED:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    code = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "dist")], cwd=src,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    with zipfile.ZipFile(tmp_path / "dist" / r.stdout.strip().splitlines()[-1]) as whl:
        names = whl.namelist()
    assert sorted({n.split("/")[0] for n in names}) == ["fragsim", f"fragsim-{fragsim.__version__}.dist-info"]
    for repo_dir, wheel_dir in MAPPED.items():
        inside = sorted(n[len(wheel_dir) + 1:] for n in names if n.startswith(wheel_dir + "/"))
        if repo_dir == "fragsim":  # fragsim/viz and fragsim/gpu_check come from the other two folders
            inside = [n for n in inside if n.split("/")[0] not in ("viz", "gpu_check")]
        assert inside == _source_files(src / repo_dir), repo_dir
    assert f"fragsim-{fragsim.__version__}.dist-info/licenses/LICENSE" in names
