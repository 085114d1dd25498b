"""The CUDA line of an inline-asm statement's instructions: the line the statement starts on.

nvcc -lineinfo puts the ``.loc`` of an inline ``asm`` statement at its last operand (measured with
nvcc 13.0, tests/data/ptx/src/inline_asm.cu): a statement written over several lines, the template
on the first and the operands below, is attributed to its last line -- the one a report would show
is ``: "r"(addr));``.  A statement without operands gets the ``asm`` keyword's own position.  The
parser marks the locations of the instructions between nvcc's ``// begin inline asm`` and
``// end inline asm`` (``SourceLoc.asm``); ``first_lines`` reads the CUDA source the ``.file``
names and moves each to the line of the ``asm`` keyword whose parentheses hold that position.
Where the source cannot be read (or the position lies in no ``asm`` statement of it: a macro's
expansion, a source changed since), nvcc's line stays.
"""

from __future__ import annotations

import re
from dataclasses import replace

from . import ast as A

__all__ = ["statement_line", "first_lines"]

#: What C++ leaves out of the code: comments, string and character literals.
_NOT_CODE = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b")
#: Qualifiers between the keyword and its parenthesis.
_QUALIFIERS = re.compile(r"(?:\s|\b(?:volatile|__volatile__|inline|goto)\b)*")


def _code(text: str) -> str:
    """``text`` with comments and literals blanked (same length, newlines kept)."""
    return _NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def statement_line(lines: list[str], line: int, column: int, code: str | None = None) -> int | None:
    """The 1-based line of the ``asm`` keyword of the statement that holds (``line``, ``column``)
    (1-based; column 0: the line's first character that is not blank) in the source ``lines``, or
    None when no ``asm`` statement holds it.  ``code``: ``lines`` joined with comments and literals
    blanked, when the caller has it."""
    if not 1 <= line <= len(lines):
        return None
    if code is None:
        code = _code("\n".join(lines))
    start = sum(len(s) + 1 for s in lines[:line - 1])
    text = lines[line - 1]
    col = column - 1 if column > 0 else len(text) - len(text.lstrip())
    at = start + min(col, len(text))
    keyword = None
    for m in _ASM.finditer(code, 0, at + len("__asm__")):
        if m.start() > at:
            break
        keyword = m
    if keyword is None:
        return None
    qualifiers = _QUALIFIERS.match(code, keyword.end())   # matches always (it may match nothing)
    open_at = qualifiers.end() if qualifiers else keyword.end()
    if open_at >= len(code) or code[open_at] != "(":
        return None                      # `asm` not followed by its parenthesis: not a statement
    if at > open_at:                     # inside the parentheses, unless they closed before `at`
        depth = 0
        for ch in code[open_at:at]:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return None
    return code.count("\n", 0, keyword.start()) + 1


def first_lines(module: A.Module, ptx_path: str | None = None) -> A.Module:
    """``module`` with the location of every inline-asm instruction (``SourceLoc.asm``) moved to
    its statement's first line, where the ``.file`` source is readable (``traffic.read_source``: as
    written, or beside ``ptx_path``)."""
    if not any(isinstance(s, A.Instr) and s.loc is not None and s.loc.asm
               for f in module.functions.values() for s in f.body):
        return module
    from .traffic import read_source

    sources: dict[int, tuple[list[str], str] | None] = {}
    moved: dict[A.SourceLoc, A.SourceLoc] = {}

    def where(loc: A.SourceLoc) -> A.SourceLoc:
        if loc in moved:
            return moved[loc]
        if loc.file not in sources:
            path = module.files.get(loc.file)
            lines = read_source(path, ptx_path) if path else None
            sources[loc.file] = None if lines is None else (lines, _code("\n".join(lines)))
        src = sources[loc.file]
        first = statement_line(src[0], loc.line, loc.column, src[1]) if src is not None else None
        moved[loc] = loc if first is None or first == loc.line else replace(loc, line=first, column=0)
        return moved[loc]

    functions = {}
    for name, f in module.functions.items():
        body = list(f.body)
        changed = False
        for i, s in enumerate(body):
            if isinstance(s, A.Instr) and s.loc is not None and s.loc.asm:
                loc = where(s.loc)
                if loc is not s.loc:
                    body[i] = replace(s, loc=loc)
                    changed = True
        functions[name] = replace(f, body=tuple(body)) if changed else f
    return replace(module, functions=functions)
