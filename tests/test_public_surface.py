"""The public surface outlives every reorganisation: each name of ``fragsim.__all__`` and each
subcommand and option of the command line recorded before the package was split into rooms
(tests/data/public_surface.json, written from commit 4b79f2f) still exists."""

import argparse
import json
from pathlib import Path

import fragsim
from fragsim.cli import build_parser

RECORDED = json.loads((Path(__file__).parent / "data" / "public_surface.json").read_text())


def _options(p: argparse.ArgumentParser) -> dict:
    out: dict = {}
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            out["<subcommands>"] = {name: _options(sp) for name, sp in a.choices.items()}
        elif a.option_strings:
            out[" ".join(sorted(a.option_strings))] = None
        else:
            out[f"<{a.dest}>"] = None
    return out


def _missing(old: dict, new: dict, where: str = "fragsim") -> list:
    out = []
    for key, sub in old.items():
        if key not in new:
            out.append(f"{where} {key}")
        elif isinstance(sub, dict):
            out += _missing(sub, new[key], f"{where} {key}")
    return out


def test_every_recorded_public_name_is_still_exported_and_resolves():
    assert set(RECORDED["__all__"]) <= set(fragsim.__all__)
    for name in fragsim.__all__:
        assert getattr(fragsim, name) is not None


def test_every_recorded_subcommand_and_option_still_exists():
    assert _missing(RECORDED["cli"], _options(build_parser())) == []


def test_the_access_set_module_is_still_importable_from_fragsim():
    from fragsim import access
    assert callable(access.from_exprs) and callable(access.copy)


def test_dir_lists_every_public_name_and_none_of_the_modules_own_imports():
    names = dir(fragsim)
    assert set(fragsim.__all__) <= set(names) and {"run_kernel", "mma", "gemm", "Tile", "trace_fragments"} <= set(names)
    assert "importlib" not in names and "annotations" not in names
