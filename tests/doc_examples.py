"""The examples of README.md and docs/**/*.md, read out of the Markdown and run as a reader would.

The conventions the pages follow (docs/contributing.md states them for writers):

- A ```` ```python ```` block is executed; what it prints must equal the ```` ```text ```` block
  that follows it (only blank lines, or a paragraph that is just "prints", may stand between). A
  python block that prints and shows no output block is an error; so is one that raises.
- A ```` ```console ```` block is a transcript: lines that start with ``$ `` are commands (a
  trailing `` \\`` continues one on the next line), the lines after one are what it printed,
  stdout and stderr together. ``$ fragsim ...`` runs in this process through
  ``fragsim.cli.main``; ``$ echo $?`` prints the previous command's exit code.
- In any shown output a line that is only ``...`` (indented or not) stands for one or more
  lines cut out, and ``...`` inside a line for text cut out of it (a timing: ``(... s)``);
  trailing blanks of a line are not compared.
- Every block of one page runs in order in one Python namespace and one scratch working
  directory (so a python block can save ``A.npy`` for a later ``--a A.npy``), which holds a
  link to the repository's ``tests/`` (recorded hardware data). Pages run independently.
- A block that must not run here (it needs a GPU, installs packages, ...) is preceded by
  ``<!-- not-run: REASON -->``; bash/sh blocks, which show no output, can only be shown so.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNABLE = {"python", "console"}
SHELL = {"bash", "sh", "shell"}
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.*?)\s*-->")
FENCE = re.compile(r"^```(\S*)\s*$")
PRINTS = re.compile(r"^prints:?$")


@dataclass
class Block:
    """One fenced code block of a page."""

    page: str            # path relative to the repository root
    line: int            # 1-based line of the opening fence
    lang: str
    body: str
    heading: str         # the nearest heading above, as a slug
    not_run: str | None = None          # the reason of a <!-- not-run: ... --> marker
    output: Block | None = field(default=None, repr=False)   # a python block's shown output

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.lang}:{self.heading}"


def pages() -> list[Path]:
    """README.md and every Markdown page of the docs site (docs/research/ is not part of it)."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "research" not in p.relative_to(ROOT / "docs").parts)
    return [ROOT / "README.md", *docs]


def slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one page, python blocks paired with their output blocks."""
    lines = path.read_text().split("\n")
    page = str(path.relative_to(ROOT))
    found: list[Block] = []
    heading, marker, between = "top", None, []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            text = lines[i].strip()
            if re.match(r"#{1,6} ", text):
                heading = slug(text.lstrip("#"))
            n = NOT_RUN.search(text)
            if n:
                marker = n.group(1)
            elif text:
                between.append(text)
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        if i == len(lines):
            raise ValueError(f"{page}:{start + 1}: the code block never closes")
        block = Block(page, start + 1, m.group(1), "\n".join(lines[start + 1:i]) + "\n", heading, marker)
        prev = found[-1] if found else None
        if (block.lang == "text" and prev is not None and prev.lang == "python" and prev.output is None
                and all(PRINTS.match(t) for t in between)):
            prev.output = block
        else:
            found.append(block)
        marker, between = None, []
        i += 1
    return found


# ---- comparing output ------------------------------------------------------------------------

def matches(shown: str, printed: str) -> bool:
    """Does ``printed`` read as ``shown``, where a ``...`` line of ``shown`` stands for one or more lines?"""
    want = [ln.rstrip() for ln in shown.rstrip("\n").split("\n")] if shown.strip("\n") else []
    got = [ln.rstrip() for ln in printed.rstrip("\n").split("\n")] if printed.strip("\n") else []
    pattern = "".join("(?:[^\n]*\n)+" if w.strip() == "..." else "[^\n]*".join(map(re.escape, w.split("..."))) + "\n"
                      for w in want)
    return re.fullmatch(pattern, "".join(g + "\n" for g in got)) is not None


def difference(shown: str, printed: str) -> str:
    return f"the page shows:\n{shown}\n--- but it printed:\n{printed}"


# ---- running ---------------------------------------------------------------------------------

class PageRun:
    """Runs one page's blocks in order, in one namespace and one scratch folder."""

    def __init__(self, path: Path, workdir: Path):
        self.blocks = [b for b in blocks(path) if b.lang in RUNNABLE and b.not_run is None]
        self.workdir = workdir
        (workdir / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
        self.namespace: dict = {"__name__": "__main__"}
        self.exit_code = 0
        self.results: dict[int, str | None] = {}   # block index -> failure message (None: it passed)

    def result(self, index: int) -> str | None:
        for i in range(len(self.results), index + 1):
            try:
                self.results[i] = self._run(self.blocks[i])
            except Exception as e:         # a later block of the page says so; this one shows the traceback
                self.results[i] = f"it raised {type(e).__name__}: {e}"
                if i == index:
                    raise
        return self.results[index]

    def _run(self, block: Block) -> str | None:
        cwd = os.getcwd()
        os.chdir(self.workdir)
        try:
            return self._python(block) if block.lang == "python" else self._console(block)
        finally:
            os.chdir(cwd)

    def _python(self, block: Block) -> str | None:
        # padded so that a traceback's line numbers are the page's
        code = compile("\n" * block.line + block.body, block.page, "exec")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, self.namespace)
        printed = out.getvalue()
        if block.output is None:
            return None if not printed else f"it printed, but the page shows no output block:\n{printed}"
        return None if matches(block.output.body, printed) else difference(block.output.body, printed)

    def _console(self, block: Block) -> str | None:
        failures = []
        for command, shown in transcript(block.body):
            printed = self._command(command)
            if not matches(shown, printed):
                failures.append(f"$ {command}\n{difference(shown, printed)}")
        return "\n\n".join(failures) or None

    def _command(self, command: str) -> str:
        argv = shlex.split(command, comments=True)
        if argv == ["echo", "$?"]:
            return f"{self.exit_code}\n"
        if not argv or argv[0] != "fragsim":
            raise ValueError(f"the harness runs `fragsim ...` and `echo $?` only, not `{command}`: "
                             "mark the block <!-- not-run: REASON --> if it cannot run here")
        from fragsim.cli import main

        out = io.StringIO()
        columns = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "80"     # argparse wraps --help to the terminal, if there is one
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                self.exit_code = main(argv[1:])
        except SystemExit as e:          # argparse: --help, usage errors
            self.exit_code = e.code if isinstance(e.code, int) else 1
        finally:
            if columns is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = columns
        return out.getvalue()


def transcript(body: str) -> list[tuple[str, str]]:
    """(command, shown output) pairs of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    lines = body.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\"):
                i += 1
                command = command[:-1].rstrip() + " " + lines[i].strip()
            pairs.append((command, []))
        elif not pairs:
            raise ValueError(f"a console block must start with a `$ ` command, not {line!r}")
        else:
            pairs[-1][1].append(line)
        i += 1
    return [(c, "\n".join(out) + "\n" if out else "") for c, out in pairs]
