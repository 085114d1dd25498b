"""The ``fragsim`` command: one subcommand per use, each in its own module here.

A subcommand module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``.  Bad input anywhere becomes one line on stderr and exit code 2 (files named on the command
line are checked by ``files``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from fragsim import validate

# Subcommand modules, in the order --help lists them.
COMMANDS = ["tour", "layout", "draw", "mma", "gemm", "conflicts", "swizzle", "check", "run", "approx", "gpu_check", "warmup"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2
        sys.stderr.write(f"{self.prog}: error: {one_line(message)}\n")
        raise SystemExit(2)


def one_line(text) -> str:
    """An error for stderr on one line: argparse and some messages quote the user's arguments,
    which may hold line breaks."""
    return str(text).replace("\r", "\\r").replace("\n", "\\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command's parser; ``only``: the one subcommand whose arguments are built (the others get
    their help line only, so that a command loads no other subcommand's dependencies); None: all."""
    p = _Parser(prog="fragsim", description="Bit-exact simulator of the warp-level tensor-core data "
                "path: fragment maps, mma arithmetic, ldmatrix/stmatrix, bank conflicts, GPU cross-check. "
                "Start with `fragsim tour`: it writes every picture and table into a folder.")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        mod = importlib.import_module(f"fragsim.cli.{name}")
        sp = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        if only is None or only == mod.NAME:
            mod.add_arguments(sp)
        sp.set_defaults(_run=mod.run)
    return p


def _notices_in_one_line(show):
    """``warnings.showwarning`` for a command: fragsim's own notices (``fragsim.arith.jit.CompileNotice``:
    a first numba compile) as their one line on stderr, other warnings through ``show``."""
    def showwarning(message, category, filename, lineno, file=None, line=None):
        jit = sys.modules.get("fragsim.arith.jit")
        if jit is None or not issubclass(category, jit.CompileNotice):
            return show(message, category, filename, lineno, file, line)
        stream = sys.stderr if file is None else file
        if stream is not None:
            stream.write(f"{one_line(message)}\n")
            stream.flush()
    return showwarning


def _version() -> str:
    from fragsim import __version__
    return f"fragsim {__version__}"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=argv[0] if argv and not argv[0].startswith("-") else "")
    if not argv:              # the bare command explains itself and writes nothing
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:    # options but no subcommand, e.g. `fragsim --out x`
        parser.error("give a subcommand, e.g. `fragsim tour`; `fragsim --help` lists them")
    try:
        with validate.command_line_spelling(), warnings.catch_warnings():
            warnings.showwarning = _notices_in_one_line(warnings.showwarning)
            return int(args._run(args) or 0)
    except (ValueError, TypeError) as e:
        sys.stderr.write(f"fragsim {args.command}: error: {one_line(e)}\n")
        return 2
    except BrokenPipeError:
        return 0
    except OSError as e:          # the subcommands check their files up front; this is the backstop
        where = f"{e.filename}: " if e.filename else ""
        sys.stderr.write(f"fragsim {args.command}: error: {one_line(where)}{one_line(e.strerror or e)}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
