"""Reading PTX text into a ``Module`` (``fragsim.ptx.ast``).

A hand-written tokenizer (regular expressions for the tokens only) and a recursive-descent parser
for what nvcc, CUTLASS/CuTe and Triton emit: module directives (``.version``, ``.target``,
``.address_size``, ``.file``, ``.section`` (skipped), ``.alias``, ``.pragma``), variables in every
state space with alignment, vectors, arrays and initializers, ``.entry``/``.func`` definitions and
declarations with their parameters and performance directives, and bodies of labels, declarations,
``.loc`` lines, nested ``{ }`` blocks and guarded instructions.

The parser checks the grammar, not the instruction set: an opcode it has never heard of is kept as
written (the machine refuses what it does not model, by name).  Errors are ``PtxSyntaxError`` with
the line, column and what was expected.  The work is linear in the text: tokens are produced lazily,
nesting depth is bounded (``MAX_DEPTH``) and a ``%r<N>`` range at most ``MAX_RANGE`` registers.
"""

from __future__ import annotations

import gc
import re
import struct
from bisect import bisect_right
from dataclasses import replace
from pathlib import Path

from .ast import (
    Addr,
    Function,
    Imm,
    Instr,
    Label,
    LabelDef,
    Module,
    Param,
    ParamList,
    Reg,
    RegDecl,
    Sink,
    SourceLoc,
    Special,
    Symbol,
    TexAddr,
    VarDecl,
    Vec,
    destination_count,
)

#: Deepest nesting of ``{ }`` blocks in a body or of braces in an initializer.
MAX_DEPTH = 64
#: Most registers one ``%r<N>`` range may declare.
MAX_RANGE = 1 << 20

#: Special registers (PTX ISA "Special Registers"); ``%name.x`` for those with components.
SPECIAL_REGISTERS = frozenset((
    "tid", "ntid", "laneid", "warpid", "nwarpid", "ctaid", "nctaid", "smid", "nsmid", "gridid",
    "is_explicit_cluster", "clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid",
    "cluster_ctarank", "cluster_nctarank", "lanemask_eq", "lanemask_le", "lanemask_lt",
    "lanemask_ge", "lanemask_gt", "clock", "clock_hi", "clock64", "globaltimer", "globaltimer_lo",
    "globaltimer_hi", "total_smem_size", "aggr_smem_size", "dynamic_smem_size",
    "reserved_smem_offset_begin", "reserved_smem_offset_end", "reserved_smem_offset_cap",
    "reserved_smem_offset_0", "reserved_smem_offset_1", "current_graph_exec",
    *(f"pm{i}" for i in range(8)), *(f"pm{i}_64" for i in range(8)),
    *(f"envreg{i}" for i in range(32)),
))
#: Components a vector special register takes.
COMPONENTS = frozenset(("x", "y", "z"))

#: Fundamental and opaque types a declaration may name.
TYPES = frozenset((
    "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
    "f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2",
    "pred", "texref", "samplerref", "surfref",
))
#: State spaces a variable may live in.
VAR_SPACES = frozenset(("global", "shared", "const", "local", "param", "tex"))
#: Linkage directives before a variable or function.
LINKAGE = frozenset(("visible", "extern", "weak", "common"))
#: Directives between a function's parameters and its body, each with zero or more integers.
FUNCTION_DIRECTIVES = frozenset((
    "maxntid", "reqntid", "minnctapersm", "maxnctapersm", "maxnreg", "explicitcluster",
    "reqnctapercluster", "maxclusterrank", "blocksareclusters", "abi_preserve",
    "abi_preserve_control", "noreturn",
))
#: Opcodes whose name operands are code labels (``call``'s are functions: also ``Label``).
BRANCHES = frozenset(("bra", "brx", "call"))


class PtxSyntaxError(ValueError):
    """The text is not PTX this parser reads; the message names line, column and what was expected."""


# ------------------------------------------------------------------------------------- tokenizer

_TOKEN = re.compile(r"""
  (?P<skip>(?:[ \t\r\f\v\n]+|//[^\n]*|/\*.*?\*/)+)
| (?P<str>"(?:[^"\\\n]|\\.)*")
| (?P<flt>(?:0[fF][0-9A-Fa-f]{8}|0[dD][0-9A-Fa-f]{16}
          |[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)(?![0-9A-Za-z_$.]))
| (?P<int>(?:0[xX][0-9A-Fa-f]+|0[bB][01]+|[0-9]+)U?(?![0-9A-Za-z_$.]))
| (?P<word>(?:[A-Za-z][A-Za-z0-9_$]*|[_$%][A-Za-z0-9_$]+)
           (?:\.[A-Za-z0-9_$]+(?:::[A-Za-z0-9_$]+)*)*)
| (?P<dir>\.[A-Za-z_][A-Za-z0-9_$]*(?:::[A-Za-z0-9_$]+)*)
| (?P<punct>[{}()\[\],;:@!|+\-<>=_])
| (?P<badnum>[0-9][0-9A-Za-z_$.]*)
| (?P<bad>.)
""", re.X | re.S)

EOF = "eof"
#: Tokens read ahead at a time (the lexer holds one chunk, never the whole text's tokens).
_CHUNK = 4096


class _Lexer:
    """Tokens ``(kind, text, offset)`` one at a time, with lookahead; comments and white space are
    dropped.  Lines and columns are computed from the offset only where needed (``where``)."""

    def __init__(self, text: str):
        self.text = text
        self.matches = _TOKEN.finditer(text)
        self.toks: list[tuple[str, str, int]] = []
        self.i = 0
        self.newlines: list[int] | None = None

    def where(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a text offset."""
        if self.newlines is None:
            self.newlines = [m.start() for m in re.finditer("\n", self.text)]
        line = bisect_right(self.newlines, offset - 1)
        start = self.newlines[line - 1] + 1 if line else 0
        return line + 1, offset - start + 1

    def _fill(self, need: int):
        del self.toks[:self.i]
        need -= self.i
        self.i = 0
        toks = self.toks
        while len(toks) <= need:
            for m in self.matches:
                kind = m.lastgroup
                if kind == "skip":
                    continue
                if kind == "badnum":
                    line, col = self.where(m.start())
                    raise PtxSyntaxError(
                        f"line {line}, column {col}: {m.group()!r} is not a number or a name")
                if kind == "bad":
                    line, col = self.where(m.start())
                    if m.group().startswith("/") and self.text.startswith("/*", m.start()):
                        raise PtxSyntaxError(f"line {line}, column {col}: '/*' comment never closed")
                    raise PtxSyntaxError(
                        f"line {line}, column {col}: unexpected character {m.group()!r}")
                toks.append((kind, m.group(), m.start()))  # type: ignore[arg-type]
                if len(toks) > need + _CHUNK:
                    break
            else:
                toks.append((EOF, "", len(self.text)))
                while len(toks) <= need:
                    toks.append(toks[-1])

    def peek(self, k: int = 0) -> tuple[str, str, int]:
        j = self.i + k
        if j >= len(self.toks):
            self._fill(j)
            j = k
        return self.toks[j]

    def next(self) -> tuple[str, str, int]:
        i = self.i
        if i >= len(self.toks):
            self._fill(i)
            i = 0
        self.i = i + 1
        return self.toks[i]

    def is_(self, ch: str) -> bool:
        """Whether the next token is the punctuation ``ch`` (no other token's text is one of
        those characters)."""
        j = self.i
        if j >= len(self.toks):
            self._fill(j)
            j = 0
        return self.toks[j][1] == ch


def _found(tok) -> str:
    if tok[0] == EOF:
        return "end of file"
    text = tok[1] if len(tok[1]) <= 40 else tok[1][:37] + "..."
    return repr(text)


def _int_value(text: str) -> int:
    """A PTX integer literal's value (``0x``, ``0b``, leading-``0`` octal, decimal; ``U`` dropped)."""
    t = text[:-1] if text.endswith("U") else text
    if t[:2] in ("0x", "0X"):
        return int(t, 16)
    if t[:2] in ("0b", "0B"):
        return int(t, 2)
    if len(t) > 1 and t[0] == "0":
        return int(t, 8)
    return int(t)


def _float_imm(text: str, negative: bool) -> Imm:
    """``0fXXXXXXXX`` -> f32 bits, ``0dXXXXXXXXXXXXXXXX`` -> f64 bits, ``1.5`` -> f64 bits."""
    if text[:2] in ("0f", "0F"):
        bits, kind, sign = int(text[2:], 16), "f32", 1 << 31
    elif text[:2] in ("0d", "0D"):
        bits, kind, sign = int(text[2:], 16), "f64", 1 << 63
    else:
        bits = struct.unpack("<Q", struct.pack("<d", float(text)))[0]
        kind, sign = "f64", 1 << 63
    return Imm(bits ^ sign if negative else bits, kind)


# ---------------------------------------------------------------------------------------- scopes


class _Scope:
    """One ``{ }`` block of a body: source name -> (unique name, is a register); labels likewise."""

    __slots__ = ("parent", "names", "labels")

    def __init__(self, parent: _Scope | None):
        self.parent = parent
        self.names: dict[str, tuple[str, bool]] = {}
        self.labels: dict[str, str] = {}

    def lookup(self, name: str) -> tuple[str, bool] | None:
        s: _Scope | None = self
        while s is not None:
            hit = s.names.get(name)
            if hit is not None:
                return hit
            s = s.parent
        return None

    def label(self, name: str) -> str:
        s: _Scope | None = self
        while s is not None:
            hit = s.labels.get(name)
            if hit is not None:
                return hit
            s = s.parent
        return name


class _Body:
    """What is collected while one function body is read."""

    def __init__(self, params: tuple[Param, ...]):
        self.scope = _Scope(None)
        self.depth = 0
        self.taken: set[str] = set()
        self.taken_labels: set[str] = set()
        self.renamed_labels = False
        self.counter = 0
        self.items: list = []
        self.regs: list[RegDecl] = []
        self.vars: list[VarDecl] = []
        self.tables: dict[str, tuple] = {}
        self.label_uses: list[tuple[int, _Scope]] = []
        self.operands: dict[str, Reg | Symbol] = {}   # one shared node per name, in one scope
        self.loc: SourceLoc | None = None
        for p in params:
            self.scope.names[p.name] = (p.name, p.space == "reg")
            self.taken.add(p.name)

    def _unique(self, name: str, taken: set[str]) -> str:
        if name not in taken:
            return name
        while True:
            self.counter += 1
            new = f"{name}%{self.counter}"
            if new not in taken:
                return new


# ------------------------------------------------------------------------------------------ parser


#: nvcc's comments around the instructions of an inline-asm statement.
_INLINE_ASM = re.compile(r"//[ \t]*(begin|end) inline asm")


class _Parser:
    def __init__(self, text: str):
        self.lx = _Lexer(text)
        # text offsets where inline-asm blocks begin, and where each ends
        self.asm_begins: list[int] = []
        self.asm_ends: list[int] = []
        for m in _INLINE_ASM.finditer(text):
            if m.group(1) == "begin":
                self.asm_begins.append(m.end())
                self.asm_ends.append(len(text))
            elif self.asm_begins:
                self.asm_ends[-1] = min(self.asm_ends[-1], m.start())
        self.asm_locs: dict[SourceLoc, SourceLoc] = {}

    def in_asm(self, offset: int) -> bool:
        """Whether text ``offset`` lies inside an inline-asm block."""
        i = bisect_right(self.asm_begins, offset) - 1
        return i >= 0 and offset < self.asm_ends[i]

    # -- helpers
    def fail(self, tok, message: str):
        line, col = self.lx.where(tok[2])
        raise PtxSyntaxError(f"line {line}, column {col}: {message}")

    def expected(self, what: str, tok=None):
        tok = self.lx.peek() if tok is None else tok
        self.fail(tok, f"expected {what}, found {_found(tok)}")

    def at(self, kind: str, text: str | None = None, k: int = 0) -> bool:
        tok = self.lx.peek(k)
        return tok[0] == kind and (text is None or tok[1] == text)

    def punct(self, ch: str, what: str):
        tok = self.lx.peek()
        if tok[0] != "punct" or tok[1] != ch:
            self.expected(f"'{ch}' {what}")
        return self.lx.next()

    def integer(self, what: str) -> int:
        neg = False
        if self.lx.is_("-"):
            self.lx.next()
            neg = True
        tok = self.lx.peek()
        if tok[0] != "int":
            self.expected(what)
        self.lx.next()
        try:
            v = _int_value(tok[1])
        except ValueError:
            self.fail(tok, f"{tok[1]!r} is not an integer literal (a leading 0 means octal)")
        return -v if neg else v

    def name(self, what: str) -> tuple[str, tuple]:
        tok = self.lx.peek()
        if tok[0] != "word" or "." in tok[1]:
            self.expected(what)
        self.lx.next()
        return tok[1], tok

    def directive(self, allowed, what: str) -> str:
        tok = self.lx.peek()
        if tok[0] != "dir" or tok[1][1:] not in allowed:
            self.expected(what)
        self.lx.next()
        return tok[1][1:]

    # -- module
    def module(self) -> Module:
        version: tuple[int, int] | None = None
        target: tuple[str, ...] = ()
        address_size = 64
        files: dict[int, str] = {}
        aliases: dict[str, str] = {}
        mvars: list[VarDecl] = []
        functions: dict[str, Function] = {}
        lx = self.lx
        while True:
            tok = lx.peek()
            if tok[0] == EOF:
                break
            if tok[0] != "dir":
                self.expected("a module directive (.version, .target, .entry, .func, a variable ...)")
            d = tok[1][1:]
            if d == "version":
                lx.next()
                v = lx.next()
                if v[0] != "flt" or not re.fullmatch(r"[0-9]+\.[0-9]+", v[1]):
                    self.expected("a version 'major.minor' after .version", v)
                major, minor = v[1].split(".")
                version = (int(major), int(minor))
            elif d == "target":
                lx.next()
                names = [self.name("a target name (sm_90a, ...) after .target")[0]]
                while self.lx.is_(","):
                    lx.next()
                    names.append(self.name("a target name after ','")[0])
                target = tuple(names)
            elif d == "address_size":
                lx.next()
                address_size = self.integer("32 or 64 after .address_size")
                if address_size not in (32, 64):
                    self.fail(tok, f".address_size {address_size}: expected 32 or 64")
            elif d == "file":
                lx.next()
                index = self.integer("a file index after .file")
                s = lx.next()
                if s[0] != "str":
                    self.expected("a quoted path after '.file N'", s)
                files[index] = s[1][1:-1]
                while self.lx.is_(","):   # optional timestamp and size
                    lx.next()
                    self.integer("a number after ',' in .file")
            elif d == "section":
                self.skip_section()
            elif d == "pragma":
                self.pragma()
            elif d == "alias":
                lx.next()
                a = self.name("a function name after .alias")[0]
                self.punct(",", "between the names of .alias")
                aliases[a] = self.name("the aliased function's name")[0]
                self.punct(";", "after .alias")
            elif d == "loc":
                self.loc()
            elif d in LINKAGE or d in ("entry", "func") or d in VAR_SPACES:
                linkage = ""
                if d in LINKAGE:
                    lx.next()
                    linkage = d
                    tok = lx.peek()
                    d = tok[1][1:] if tok[0] == "dir" else ""
                if d in ("entry", "func"):
                    f = self.function(linkage)
                    old = functions.get(f.name)
                    if old is not None and old.defined and f.defined:
                        self.fail(tok, f"function {f.name!r} defined twice (first at line {old.line})")
                    if old is None or f.defined:
                        functions[f.name] = f
                elif d in VAR_SPACES:
                    mvars.extend(self.var_decl(linkage, None))
                else:
                    self.expected(f"'.entry', '.func' or a state space after '.{linkage}'")
            else:
                self.expected("a module directive (.version, .target, .entry, .func, a variable ...)")
        if version is None:
            raise PtxSyntaxError("line 1, column 1: expected '.version' before the module's contents"
                                 " (none found)")
        return Module(version, target, address_size, tuple(mvars), functions, files, aliases)

    def skip_section(self):
        """``.section .debug_xxx { ... }``: debug data, skipped (balanced braces)."""
        lx = self.lx
        lx.next()
        tok = lx.next()
        if tok[0] not in ("dir", "word"):
            self.expected("a section name after .section", tok)
        self.punct("{", "after the section name")
        depth = 1
        while depth:
            tok = lx.next()
            if tok[0] == EOF:
                self.expected("'}' closing .section", tok)
            if tok[0] == "punct":
                depth += {"{": 1, "}": -1}.get(tok[1], 0)

    def pragma(self):
        self.lx.next()
        s = self.lx.next()
        if s[0] != "str":
            self.expected("a quoted string after .pragma", s)
        while self.lx.is_(","):
            self.lx.next()
            if self.lx.next()[0] != "str":
                self.expected("a quoted string after ',' in .pragma")
        self.punct(";", "after .pragma")

    def loc(self) -> SourceLoc:
        """``.loc file line column`` and the extended form's ``, function_name L, inlined_at f l c``."""
        self.lx.next()
        file = self.integer("a file index after .loc")
        line = self.integer("a line number after '.loc file'")
        col = self.integer("a column after '.loc file line'")
        inlined = None
        while self.lx.is_(","):
            self.lx.next()
            attr, tok = self.name("'function_name' or 'inlined_at' after ',' in .loc")
            if attr == "function_name":
                self.name("a label after function_name")
                if self.lx.is_("+"):
                    self.lx.next()
                    self.integer("an offset after '+'")
            elif attr == "inlined_at":
                inlined = SourceLoc(self.integer("a file index after inlined_at"),
                                    self.integer("a line after 'inlined_at file'"),
                                    self.integer("a column after 'inlined_at file line'"))
            else:
                self.fail(tok, f"expected 'function_name' or 'inlined_at' in .loc, found {attr!r}")
        return SourceLoc(file, line, col, inlined)

    # -- functions
    def function(self, linkage: str) -> Function:
        lx = self.lx
        head = lx.next()
        kind = head[1][1:]
        returns: tuple[Param, ...] = ()
        if kind == "func" and self.lx.is_("("):
            returns = self.param_list("the return parameters")
        name, _ = self.name(f"the {kind}'s name")
        params: tuple[Param, ...] = ()
        if self.lx.is_("("):
            params = self.param_list(f"the parameters of {name!r}")
        directives: dict[str, tuple] = {}
        noreturn = False
        while self.at("dir"):
            tok = lx.peek()
            d = tok[1][1:]
            if d == "pragma":
                lx.next()
                s = lx.next()
                if s[0] != "str":
                    self.expected("a quoted string after .pragma", s)
                directives.setdefault("pragma", ())
                directives["pragma"] += (s[1][1:-1],)
                self.punct(";", "after .pragma")
                continue
            if d not in FUNCTION_DIRECTIVES:
                self.expected(f"'{{', ';' or a performance directive (.maxntid ...) after {name!r}'s"
                              " parameters")
            lx.next()
            values = []
            if self.at("int"):
                values.append(self.integer("a number"))
                while self.lx.is_(","):
                    lx.next()
                    values.append(self.integer(f"a number after ',' in .{d}"))
            if d == "noreturn":
                noreturn = True
            else:
                directives[d] = tuple(values)
        common = dict(name=name, kind=kind, params=params, returns=returns, directives=directives,
                      line=self.lx.where(head[2])[0], visible=linkage == "visible", weak=linkage == "weak",
                      extern=linkage == "extern", noreturn=noreturn)
        if self.lx.is_(";"):
            lx.next()
            return Function(body=(), regs=(), vars=(), defined=False, **common)  # type: ignore[arg-type]
        if not self.lx.is_("{"):
            self.expected(f"'{{' or ';' after {name!r}'s parameters")
        lx.next()
        body = self.body(_Body(returns + params), name)
        return Function(**common, **body)  # type: ignore[arg-type]

    def param_list(self, what: str) -> tuple[Param, ...]:
        self.punct("(", f"opening {what}")
        out: list[Param] = []
        if self.lx.is_(")"):
            self.lx.next()
            return ()
        while True:
            out.append(self.param())
            tok = self.lx.next()
            if tok[0] == "punct" and tok[1] == ")":
                return tuple(out)
            if not (tok[0] == "punct" and tok[1] == ","):
                self.expected(f"',' or ')' in {what}", tok)

    def param(self) -> Param:
        lx = self.lx
        space = self.directive(("param", "reg"), "'.param' or '.reg' (a parameter)")
        type_ = None
        align = None
        ptr_space = None
        while self.at("dir"):
            tok = lx.next()
            d = tok[1][1:]
            if d == "align" and ptr_space is not None:
                # .ptr .space .align N: the alignment of what the pointer points to (PTX ISA, "Kernel
                # Function Parameter Attributes"), not of the parameter, which keeps its type's
                self.integer("an alignment after .align")
            elif d == "align":
                align = self.integer("an alignment after .align")
            elif d == "ptr":
                ptr_space = "generic"
                if self.at("dir") and lx.peek()[1][1:] in ("global", "shared", "const", "local"):
                    ptr_space = lx.next()[1][1:]
            elif d in TYPES and type_ is None:
                type_ = d
            else:
                self.fail(tok, f"expected a type, .ptr or .align in a parameter, found {tok[1]!r}")
        if type_ is None:
            self.expected("a parameter's type (.u64, .b32, ...)")
        name, _ = self.name("a parameter name")
        count = None
        if self.lx.is_("["):
            lx.next()
            count = self.integer("an array size")
            self.punct("]", "after the array size")
        return Param(name, type_, count, align, ptr_space, space)  # type: ignore[arg-type]

    # -- declarations
    def var_decl(self, linkage: str, body: _Body | None) -> list[VarDecl]:
        lx = self.lx
        head = lx.next()
        line = self.lx.where(head[2])[0]
        space = head[1][1:]
        align = None
        vector = 1
        type_ = None
        while True:
            tok = lx.peek()
            if tok[0] != "dir":
                break
            d = tok[1][1:]
            if d == "align":
                lx.next()
                align = self.integer("an alignment after .align")
            elif d in ("v2", "v4", "v8"):
                lx.next()
                vector = int(d[1:])
            elif d == "attribute":    # .attribute(.managed) / (.unified(...))
                lx.next()
                self.punct("(", "after .attribute")
                depth = 1
                while depth:
                    t = lx.next()
                    if t[0] == EOF:
                        self.expected("')' closing .attribute", t)
                    if t[0] == "punct":
                        depth += {"(": 1, ")": -1}.get(t[1], 0)
            elif d in TYPES and type_ is None:
                lx.next()
                type_ = d
            else:
                break
        if type_ is None:
            self.expected(f"a type (.b32, .u64, ...) in the .{space} declaration")
        out = []
        while True:
            name, ntok = self.name(f"a variable name in the .{space} declaration")
            dims: list[int | None] = []
            while self.lx.is_("["):
                lx.next()
                if self.lx.is_("]"):
                    dims.append(None)
                else:
                    n = self.integer("an array size or ']'")
                    if n < 0:
                        self.fail(ntok, f"{name}: negative array size {n}")
                    dims.append(n)
                self.punct("]", "after the array size")
            init = None
            if self.lx.is_("="):
                lx.next()
                items: list = []
                self.initializer(items, 0)
                init = tuple(items)
            count: int | None = None
            if dims and None not in dims:
                count = 1
                for extent in dims:
                    count *= extent or 0
            if body is not None:
                name = self.declare(body, name, False, ntok)
            out.append(VarDecl(space, type_, name, count, align, init, line,  # type: ignore[arg-type]
                               extern=linkage == "extern", dims=tuple(dims), vector=vector,
                               linkage=linkage))
            if not self.lx.is_(","):
                break
            lx.next()
        self.punct(";", f"after the .{space} declaration")
        return out

    def initializer(self, items: list, depth: int):
        lx = self.lx
        if self.lx.is_("{"):
            if depth >= MAX_DEPTH:
                self.fail(lx.peek(), f"initializer nested deeper than {MAX_DEPTH} braces")
            lx.next()
            if self.lx.is_("}"):
                lx.next()
                return
            while True:
                self.initializer(items, depth + 1)
                tok = lx.next()
                if tok[0] == "punct" and tok[1] == "}":
                    return
                if not (tok[0] == "punct" and tok[1] == ","):
                    self.expected("',' or '}' in the initializer", tok)
        tok = lx.peek()
        if tok[0] == "word" and tok[1] == "generic":
            lx.next()
            self.punct("(", "after generic")
            sym = Symbol(self.name("a variable name in generic(...)")[0], generic=True)
            self.punct(")", "closing generic(")
            items.append(self.plus_offset(sym))
        elif tok[0] == "word":
            items.append(self.plus_offset(Symbol(self.name("a variable name")[0])))
        else:
            neg = False
            if self.lx.is_("-"):
                lx.next()
                neg = True
            tok = lx.next()
            if tok[0] == "flt":
                items.append(_float_imm(tok[1], neg))
            elif tok[0] == "int":
                try:
                    v = _int_value(tok[1])
                except ValueError:
                    self.fail(tok, f"{tok[1]!r} is not an integer literal")
                items.append(Imm(-v if neg else v, "int"))
            else:
                self.expected("a number, a name or '{' in the initializer", tok)

    def plus_offset(self, sym: Symbol):
        if self.lx.is_("+"):
            self.lx.next()
            return Addr(sym, self.integer("a byte offset after '+'"))
        return sym

    def reg_decl(self, body: _Body):
        lx = self.lx
        head = lx.next()
        vector = 1
        if self.at("dir") and lx.peek()[1][1:] in ("v2", "v4", "v8"):
            vector = int(lx.next()[1][2:])
        type_ = self.directive(TYPES, "a register type (.b32, .pred, ...) after .reg")
        names: list[str] = []
        while True:
            name, ntok = self.name("a register name in the .reg declaration")
            if self.lx.is_("<"):
                lx.next()
                n = self.integer("a register count after '<'")
                if not 0 <= n <= MAX_RANGE:
                    self.fail(ntok, f"{name}<{n}>: a range declares 0 to {MAX_RANGE} registers")
                self.punct(">", "after the register count")
                names.extend(self.declare(body, f"{name}{i}", True, ntok) for i in range(n))
            else:
                names.append(self.declare(body, name, True, ntok))
            if not self.lx.is_(","):
                break
            lx.next()
        self.punct(";", "after the .reg declaration")
        body.regs.append(RegDecl(type_, tuple(names), self.lx.where(head[2])[0], vector))

    def declare(self, body: _Body, name: str, is_reg: bool, tok) -> str:
        scope = body.scope
        if name in scope.names:
            self.fail(tok, f"{name!r} declared twice in the same block")
        unique = body._unique(name, body.taken)
        body.taken.add(unique)
        scope.names[name] = (unique, is_reg)
        body.operands.pop(name, None)
        return unique

    # -- bodies
    def body(self, b: _Body, fname: str) -> dict:
        lx = self.lx
        while True:
            tok = lx.peek()
            kind, text = tok[0], tok[1]
            if kind == "punct" and text == "{":
                lx.next()
                if b.depth + 1 >= MAX_DEPTH:
                    self.fail(tok, f"blocks nested deeper than {MAX_DEPTH}")
                b.depth += 1
                b.scope = _Scope(b.scope)
            elif kind == "punct" and text == "}":
                lx.next()
                if b.depth == 0:
                    break
                b.depth -= 1
                b.scope = b.scope.parent  # type: ignore[assignment]
            elif kind == "dir":
                d = text[1:]
                if d == "reg":
                    self.reg_decl(b)
                elif d in VAR_SPACES:
                    b.vars.extend(self.var_decl("", b))
                elif d in ("extern", "visible", "weak") and lx.peek(1)[0] == "dir" \
                        and lx.peek(1)[1][1:] in VAR_SPACES:
                    lx.next()
                    b.vars.extend(self.var_decl(d, b))
                elif d == "loc":
                    b.loc = self.loc()
                elif d == "pragma":
                    self.pragma()
                else:
                    self.expected(f"an instruction, a label, a declaration or '}}' in {fname!r}")
            elif kind == "word" and lx.peek(1)[0] == "punct" and lx.peek(1)[1] == ":":
                if "." in text:
                    self.fail(tok, f"{text!r} is not a label name")
                lx.next()
                lx.next()
                if self.at("dir") and lx.peek()[1][1:] in ("branchtargets", "calltargets",
                                                             "callprototype"):
                    self.table(b, text)
                    continue
                if text in b.scope.labels:
                    self.fail(tok, f"label {text!r} defined twice")
                unique = b._unique(text, b.taken_labels)
                if unique != text:
                    b.renamed_labels = True
                b.taken_labels.add(unique)
                b.scope.labels[text] = unique
                b.items.append(LabelDef(unique, self.lx.where(tok[2])[0]))
            elif kind == "word" or (kind == "punct" and text == "@"):
                b.items.append(self.instruction(b))
            elif kind == EOF:
                self.expected(f"'}}' closing the body of {fname!r}")
            else:
                self.expected(f"an instruction, a label, a declaration or '}}' in {fname!r}")
        items = b.items
        if b.renamed_labels:
            for index, scope in b.label_uses:
                ins = items[index]
                ops = tuple(Label(scope.label(o.name)) if isinstance(o, Label) else o
                            for o in ins.operands)
                items[index] = replace(ins, operands=ops)
        labels = {s.name: i for i, s in enumerate(items) if isinstance(s, LabelDef)}
        return dict(body=tuple(items), regs=tuple(b.regs), vars=tuple(b.vars), labels=labels,
                    tables=b.tables)

    def table(self, b: _Body, name: str):
        """``name: .branchtargets L1, L2;`` / ``.calltargets f, g;`` / ``.callprototype ...;``."""
        lx = self.lx
        d = lx.next()[1][1:]
        if d == "callprototype":
            while not self.lx.is_(";"):
                if lx.next()[0] == EOF:
                    self.expected("';' after .callprototype")
            b.tables[name] = ()
        else:
            names = [self.name(f"a target after .{d}")[0]]
            while self.lx.is_(","):
                lx.next()
                names.append(self.name(f"a target after ',' in .{d}")[0])
            b.tables[name] = tuple(names)
        lx.next()

    def instruction(self, b: _Body) -> Instr:
        lx = self.lx
        guard = None
        first = lx.peek()
        if first[0] == "punct":      # '@'
            lx.next()
            neg = False
            if self.lx.is_("!"):
                lx.next()
                neg = True
            g, _ = self.name("a predicate after '@'")
            guard = Reg(self.resolve_reg(b, g), neg)
        tok = lx.peek()
        if tok[0] != "word":
            self.expected("an instruction after the guard")
        lx.next()
        parts = tok[1].split(".")
        opcode, mods = parts[0], tuple(parts[1:])
        operands: list = []
        extra = 0
        if not self.lx.is_(";"):
            while True:
                operands.append(self.operand(b, opcode, tok[1]))
                if self.lx.is_("|"):
                    if len(operands) != 1:
                        self.fail(lx.peek(), f"'|' pairs destinations of {tok[1]!r}: only after its"
                                             " first operand")
                    lx.next()
                    operands.append(self.operand(b, opcode, tok[1]))
                    extra = 1
                if not self.lx.is_(","):
                    break
                lx.next()
        if not self.lx.is_(";"):
            self.expected(f"';' after the operands of {tok[1]!r}")
        lx.next()
        if opcode in BRANCHES:
            operands = [Label(o.name) if isinstance(o, Symbol) else o for o in operands]
            b.label_uses.append((len(b.items), b.scope))
        ops = tuple(operands)
        ndst = 1 + extra if extra else destination_count(opcode, mods, ops)
        line, col = self.lx.where(tok[2])
        if first is not tok:
            col = self.lx.where(first[2])[1]
        loc = b.loc
        if loc is not None and self.asm_begins and self.in_asm(tok[2]):
            loc = self.asm_locs.setdefault(loc, replace(loc, asm=True))
        return Instr(opcode, mods, ops, guard, line, loc, ndst, col)

    def resolve_reg(self, b: _Body, name: str) -> str:
        hit = b.scope.lookup(name)
        return hit[0] if hit is not None else name

    def operand(self, b: _Body, opcode: str, op_text: str, in_vec: bool = False):
        lx = self.lx
        tok = lx.peek()
        kind, text = tok[0], tok[1]
        if kind == "word":
            lx.next()
            return self.name_operand(b, tok)
        if kind == "int" or kind == "flt" or (kind == "punct" and text == "-"):
            neg = False
            if kind == "punct":
                lx.next()
                neg = True
                tok = lx.peek()
            if tok[0] == "int":
                lx.next()
                try:
                    v = _int_value(tok[1])
                except ValueError:
                    self.fail(tok, f"{tok[1]!r} is not an integer literal (a leading 0 means octal)")
                return Imm(-v if neg else v, "int")
            if tok[0] == "flt":
                lx.next()
                return _float_imm(tok[1], neg)
            self.expected(f"a number after '-' in the operands of {op_text!r}", tok)
        if kind == "punct":
            if text == "_":
                lx.next()
                return Sink()
            if text == "!":
                lx.next()
                t = lx.peek()
                if t[0] != "word" or "." in t[1]:
                    self.expected("a predicate after '!'")
                lx.next()
                op = self.name_operand(b, t)
                if not isinstance(op, Reg):
                    self.fail(t, f"'!' negates a predicate register, not {t[1]!r}")
                return Reg(op.name, True)
            if text == "{" and not in_vec:
                lx.next()
                items = [self.operand(b, opcode, op_text, True)]
                while self.lx.is_(","):
                    lx.next()
                    items.append(self.operand(b, opcode, op_text, True))
                self.punct("}", f"closing the vector operand of {op_text!r}")
                return Vec(tuple(items))
            if text == "[" and not in_vec:
                return self.address(b, opcode, op_text)
            if text == "(" and not in_vec:
                lx.next()
                items = []
                if not self.lx.is_(")"):
                    items.append(self.operand(b, opcode, op_text, True))
                    while self.lx.is_(","):
                        lx.next()
                        items.append(self.operand(b, opcode, op_text, True))
                self.punct(")", f"closing the parameter list of {op_text!r}")
                return ParamList(tuple(items))
        self.expected(f"an operand of {op_text!r}")

    def name_operand(self, b: _Body, tok):
        text = tok[1]
        base, _, comp = text.partition(".")
        if base[0] == "%" and base[1:] in SPECIAL_REGISTERS and b.scope.lookup(base) is None:
            if comp and comp not in COMPONENTS:
                self.fail(tok, f"{text!r}: a special register's component is .x, .y or .z")
            return Special(base[1:], comp or None)
        if comp:
            self.fail(tok, f"{text!r}: unexpected '.{comp}' after a name")
        scope = b.scope
        if scope.parent is None:     # the function's own scope: names never change meaning
            op = b.operands.get(text)
            if op is None:
                op = b.operands[text] = self.resolve(scope, text)
            return op
        return self.resolve(scope, text)

    @staticmethod
    def resolve(scope: _Scope, text: str) -> Reg | Symbol:
        hit = scope.lookup(text)
        if hit is not None:
            return Reg(hit[0]) if hit[1] else Symbol(hit[0])
        return Reg(text) if text[0] == "%" else Symbol(text)

    def address(self, b: _Body, opcode: str, op_text: str):
        lx = self.lx
        lx.next()
        tok = lx.peek()
        if tok[0] == "int" or (tok[0] == "punct" and tok[1] == "-"):
            off = self.integer(f"an address in the operands of {op_text!r}")
            self.punct("]", "closing the address")
            return Addr(None, off)
        if tok[0] != "word":
            self.expected(f"a register, a variable or a number in the address of {op_text!r}")
        lx.next()
        base = self.name_operand(b, tok)
        if not isinstance(base, (Reg, Symbol)):
            self.fail(tok, f"{tok[1]!r} cannot be an address")
        if self.lx.is_(","):
            items = [base]
            while self.lx.is_(","):
                lx.next()
                items.append(self.operand(b, opcode, op_text))
            self.punct("]", f"closing the texture/tensor operand of {op_text!r}")
            return TexAddr(tuple(items))
        off = 0
        if self.lx.is_("+"):
            lx.next()
            off = self.integer(f"a byte offset after '+' in the address of {op_text!r}")
        elif self.lx.is_("-"):
            off = self.integer(f"a byte offset after '-' in the address of {op_text!r}")
        self.punct("]", f"closing the address of {op_text!r}")
        return Addr(base, off)


def parse(text: str) -> Module:
    """The module of PTX ``text``; ``PtxSyntaxError`` (line, column, what was expected) if it is not
    PTX this parser reads."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected PTX as a str, got {type(text).__name__}")
    # The tree has no reference cycles: the cyclic collector only slows the build of a big module
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _Parser(text).module()
    finally:
        if gc_was_enabled:
            gc.enable()


def parse_file(path) -> Module:
    """``parse`` of the file at ``path`` (UTF-8; PTX is ASCII)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise PtxSyntaxError(f"{p}: not a text file ({e.reason} at byte {e.start})") from None
    return parse(text)
