"""Progress of a long command (``fragsim tour``, ``fragsim gpu-check``) on stderr.

stdout carries the result; the progress goes to stderr: a line when each stage starts, and on a
terminal a count kept up to date in place.  It is shown unless ``--quiet``; with ``--json`` (stdout
is then for a program) only on a terminal, or anywhere with ``--progress``.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):       # a stand-in stream without isatty, or a closed one
        return False


def wanted(args, stream=None) -> bool:
    """Whether a command with ``args`` (``quiet``, ``json``, ``progress``: absent means False) shows
    its progress on ``stream`` (default stderr)."""
    if getattr(args, "quiet", False):
        return False
    if getattr(args, "progress", False) or not getattr(args, "json", False):
        return True
    return is_terminal(sys.stderr if stream is None else stream)


def add_arguments(p, quiet: bool = True) -> None:
    """``--progress`` (and ``--quiet`` unless the command has its own)."""
    if quiet:
        p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--progress", action="store_true",
                   help="progress lines on stderr even with --json where stderr is no terminal (by default "
                        "they are shown unless --quiet; with --json, on a terminal only)")


class Stages:
    """``fragsim tour: drawing 68 pictures (8 processes) ...``: a line when each stage starts; on a
    terminal a stage's count below it, ``  12/68 (3 s)``, kept up to date in place."""

    def __init__(self, command: str, enabled: bool, stream: TextIO | None = None):
        self.command = command
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.tty = is_terminal(self.stream)
        self.t0 = 0.0
        self.open = False          # a count line on the terminal, not yet ended

    def stage(self, text: str) -> None:
        self.end()
        self.t0 = time.perf_counter()
        if self.enabled:
            self.stream.write(f"{self.command}: {text} ...\n")
            self.stream.flush()

    def count(self, done: int, total: int) -> None:
        """``done`` of ``total`` items of the current stage (shown on a terminal only)."""
        if self.enabled and self.tty:
            self.stream.write(f"\r  {done}/{total} ({time.perf_counter() - self.t0:.0f} s)\x1b[K")
            self.stream.flush()
            self.open = True

    def end(self) -> None:
        """End the current stage's count line, if any."""
        if self.open:
            self.stream.write("\n")
            self.stream.flush()
        self.open = False
