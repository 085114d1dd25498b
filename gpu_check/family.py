"""The families of the GPU cross-check: one protocol, one registry.

A family is everything needed to check one kind of instruction against a real GPU, bit for bit:

    name, summary        ``fragsim gpu-check --family NAME`` and what it checks
    default_cases        --cases when not given
    options              the command's options it takes (None: all of them)
    replay_file          whether --replay names a file (else a folder), and ``replay_expects`` what
    validate(args)       one-line ValueError for a bad combination, defaults filled in
    source(cc)           its CUDA, generated from fragsim's tables (one translation unit, the prelude first)
    compile(info)        that CUDA compiled for the device ``info`` describes (gpu_check/compile.py)
    run(args)            on the GPU: generate cases, run them, compare with fragsim, and with --record
                         write what the hardware said (gpu_check/record.py)
    replay(args)         a recording's cases through fragsim on the CPU, no GPU
    summarize(report)    the plain-text account of a ``Report``'s JSON

``FAMILIES`` is the registry ``fragsim gpu-check`` reads (its --family choices, help and defaults);
``DEFAULT`` is what runs without --family.  Adding a family: a module with a class implementing
``Family`` (``RunnerFamily`` gives the common run/replay/summary flow) in the family's subpackage
(``gpu_check/<family>/family.py``, or a module of ``gpu_check/ptx/`` for a PTX family), and one line in
``_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from . import runner

Say = Callable[..., None]

#: family name -> the module that defines it (in its ``FAMILIES``), relative to this package; the order
#: of --family's choices.
_MODULES = {
    "mma": "table.family",
    "shared": "table.family",
    "movmatrix": "movmatrix.family",
    "wgmma": "wgmma.family",
    "gemm": "gemm.family",
    "ptx_int": "ptx.integer",
    "ptx_cvt": "ptx.convert",
    "ptx_float": "ptx.floating",
    "ptx_kernels": "ptx.kernels",
    "ptx_ncu": "ptx.traffic",
    "ptx": "ptx.combined",
    "tma": "tma.family",
    "approx": "approx.family",
}


@dataclass
class Report:
    """What one check found: ``json`` (the --json output), ``text`` (the plain output), ``mismatches``
    (nonzero: the command exits 1)."""

    json: dict[str, Any]
    text: str
    mismatches: int


@runtime_checkable
class Family(Protocol):
    name: str
    summary: str
    default_cases: int
    options: frozenset[str] | None
    replay_file: bool
    replay_expects: str

    def validate(self, args: argparse.Namespace) -> None: ...

    def source(self, cc: int) -> str: ...

    def compile(self, info: dict[str, Any]) -> Any: ...

    def run(self, args: argparse.Namespace) -> Report: ...

    def replay(self, args: argparse.Namespace) -> Report: ...

    def summarize(self, report: dict[str, Any]) -> str: ...


def families() -> dict[str, Family]:
    """The registry: every family by name, in --family's order."""
    out: dict[str, Family] = {}
    for name, module in _MODULES.items():
        fams = importlib.import_module(f"{__package__}.{module}").FAMILIES
        out[name] = fams[name]
    return out


#: What ``fragsim gpu-check`` checks without --family: the table's mma forms and shared ops together
#: (module, name), loaded by name like every family of the registry.
DEFAULT = ("table.family", "BOTH")


def default() -> Family:
    """The family ``DEFAULT`` names."""
    module, name = DEFAULT
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def say(args: argparse.Namespace) -> Say:
    """print; with --json (stdout is the report) print to stderr; nothing with --quiet (``fragsim
    gpu-check`` sets it where no progress is wanted: ``fragsim.cli.progress``)."""
    def silent(*a: Any, **k: Any) -> None:
        return None

    def to_stderr(*a: Any, **k: Any) -> None:
        print(*a, **{**k, "file": sys.stderr})
    if args.quiet:
        return silent
    return to_stderr if args.json else print


def refuse_options(fam: Family, args: argparse.Namespace, defaults: dict[str, Any]) -> None:
    """One line naming an option ``fam`` does not take (``defaults``: the command's default values)."""
    if fam.options is None:
        return
    for name, value in sorted(vars(args).items()):
        if name.startswith("_") or name in ("command", "family", "progress") or name in fam.options:
            continue
        if not (value is None or value is False or (name in defaults and value == defaults[name])):
            raise ValueError(f"--{name.replace('_', '-')} does not apply to --family {fam.name} "
                             f"(it takes {', '.join('--' + o.replace('_', '-') for o in sorted(fam.options))})")


class RunnerFamily:
    """The common flow of a family with a runner of its own: checks of its options, the device, and a
    report of cases and mismatches (``family``, device or replay, the family's fields, ``seconds``).
    A subclass gives ``name``, ``summary``, ``default_cases``, ``options``, ``source``, ``compile``,
    ``check`` (the GPU run) and ``replay_cases``."""

    name = ""
    summary = ""
    default_cases = 0
    options: frozenset[str] | None = frozenset()
    replay_file = False
    replay_expects = "a folder of recorded corpora (*.npz)"

    def validate(self, args: argparse.Namespace) -> None:
        if args.cases < 0:
            raise ValueError(f"--cases must be >= 0, got {args.cases}")
        if args.keep is not None and args.keep < 0:
            raise ValueError(f"--keep must be >= 0, got {args.keep}")
        if args.jobs is not None and args.jobs < 1:
            raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
        if args.replay and args.record:
            raise ValueError("--replay and --record exclude each other")
        if args.record_only and not args.record:
            raise ValueError("--record-only needs --record DIR")

    def device(self) -> dict[str, Any]:
        """Device 0 (GpuUnavailable in one line: no CuPy, no GPU, or not the GPU the family needs)."""
        return runner.device_info(runner.import_cupy())

    def source(self, cc: int) -> str:
        raise NotImplementedError

    def compile(self, info: dict[str, Any]) -> Any:
        raise NotImplementedError

    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        """The GPU run: {"cases", "mismatches", ...}."""
        raise NotImplementedError

    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        """The replay: {"cases", "mismatches", ...}."""
        raise NotImplementedError

    def run(self, args: argparse.Namespace) -> Report:
        t0 = time.time()
        info = self.device()
        return self._report({"device": info["device"], "cc": info.get("cc")} | self.check(args, info, say(args)), t0)

    def replay(self, args: argparse.Namespace) -> Report:
        t0 = time.time()
        return self._report({"replay": args.replay} | self.replay_cases(args, say(args)), t0)

    def _report(self, body: dict[str, Any], t0: float) -> Report:
        rep = {"family": self.name} | body | {"seconds": round(time.time() - t0, 1)}
        return Report(rep, self.summarize(rep), rep["mismatches"])

    def summarize(self, report: dict[str, Any]) -> str:
        compared = "" if report.get("compared", True) else " (recorded, not compared)"
        return (f"{self.name}: {report['cases']:,} cases, {report['mismatches']:,} mismatches{compared}  "
                f"({report['seconds']:.1f} s)")
