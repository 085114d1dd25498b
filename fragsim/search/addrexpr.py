"""C address expressions, parsed safely and evaluated for every lane at once.

Users paste the address math of their kernel, in C, as a string in ``lane`` (and any named loop
variables)::

    >>> from fragsim.search.addrexpr import evaluate
    >>> evaluate("(lane % 16) * 64 + (((lane / 16) ^ (lane % 16 & 3)) * 16)")[:6]
    array([  0,  80, 160, 240, 256, 336])
    >>> evaluate("int row = lane % 16; int col = lane / 16; row * 64 + (col ^ (row >> 1 & 3)) * 16")[:4]
    array([  0,  64, 144, 208])

The language
------------
A program is ``;``-separated statements: zero or more bindings ``NAME = expr;`` or ``TYPE NAME =
expr;`` (``int``, ``const unsigned``, ``auto``, ``uint32_t``, ...), then the expression to
evaluate (a trailing ``;`` is allowed).  A binding may use the outer variables and earlier
bindings; it cannot rebind ``lane``, an earlier binding, or a name already read as an outer
variable, and ``Expr.variables`` lists only the free (outer) variables.  Every binding is
evaluated, as C would.

Expressions have C's operators with C's precedence and associativity: ``* / %``, ``+ -``,
``<< >>``, comparisons, ``== !=``, ``& ^ |``, ``&& ||`` (0 or 1), ``?:``, unary ``- + ~ !``,
casts ``(T)x``, parentheses; decimal, hex (``0x``), octal (leading ``0``) and binary (``0b``)
literals with ``u``/``l``/``ll`` suffixes; ``sizeof(T)`` for integer types and the usual element
types (``half``, ``float4``, ...); and ``swizzle(B, M, S, x)``, CUTLASS's ``Swizzle<B,M,S>``
applied to ``x`` (``fragsim.layout.swizzle.Swizzle``; ``B``, ``M``, ``S`` are constant expressions).
``&&``, ``||`` and ``?:`` evaluate their right-hand side only for the lanes that need it, so
``lane != 0 ? 64 / lane : 0`` divides no lane by zero.

Types and values: C's, with LP64 widths (as nvcc on Linux)
-----------------------------------------------------------
Every value has a C integer type, tracked per operation exactly as C does: ``char`` (signed, as
on nvcc/x86), ``short``, ``int`` (32 bits), ``long``/``long long`` (64 bits), their ``unsigned``
forms, ``bool`` and the ``<stdint.h>`` names (``size_t`` is ``unsigned long``).

- A literal has C's type: the first of ``int``, ``long`` that holds a decimal literal; ``int``,
  ``unsigned int``, ``long``, ``unsigned long`` for hex/octal/binary; suffixes narrow the list as in
  C.  A decimal literal beyond ``long``'s range without ``u`` (C gives it no type) and any literal
  beyond 64 bits are errors.  ``sizeof`` is ``size_t``.
- ``lane`` and each outer variable are ``int`` when all their values fit in 32 bits, otherwise
  ``long long`` (the rule C applies to a decimal literal).  Declare another type with a binding
  (``unsigned u = k;``).
- Integer promotions and the usual arithmetic conversions apply: mixing ``int`` with
  ``unsigned`` computes in ``unsigned`` (``(unsigned)lane - 1`` wraps at lane 0 to 4294967295),
  comparisons included (``-1 < 0u`` is 0); a shift has the promoted type of its left operand.
- Unsigned arithmetic wraps modulo 2**width, as in C.  A cast or a typed binding converts
  modulo 2**width and sign-extends into signed types (``(char)200`` is -56, ``(unsigned char)256``
  is 0; C calls the signed case implementation-defined, and nvcc wraps); ``(bool)x`` is ``x != 0``.
- What C leaves undefined is an error, never a silent wrap: signed overflow of ``+ - * <<`` and
  unary ``-`` (``0x100000000 * 0x100000000`` overflows ``long``), ``INT_MIN / -1`` and
  ``INT_MIN % -1``, division or remainder by zero, and shift counts that are negative or not below
  the width of the promoted left operand.  ``/`` truncates toward zero and ``%`` has the sign of
  the dividend (also at ``INT64_MIN``); ``>>`` of a negative value is arithmetic, as on nvcc; a
  negative value shifted left gives ``x * 2**n`` when that fits (C++20's and nvcc's result; C
  leaves it undefined).
- The result is returned as int64: an ``unsigned long`` result of 2**63 or more (typically a
  negative offset turned unsigned by ``sizeof`` or a ``u`` suffix) is an error.

No ``eval``: a tokenizer and an explicit-stack (shunting-yard) parser build a flat node list,
which evaluates with NumPy on all lanes at once, without Python recursion, so nesting depth is
limited only by ``MAX_TOKENS`` (100,000 tokens per expression).  ``lane`` may be an array (the
evaluation is batched) and other variables may be arrays that broadcast with it.  Errors name the
position and the token (``position 7: expected ')' but found '+'``) and, at evaluation, the first
lane where they occur (``position 3: division by zero (at lane=3)``).
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.validate import array, broadcast_shape
from fragsim.layout.swizzle import Swizzle

__all__ = ["parse", "evaluate", "Expr", "SIZEOF", "AddrExprError", "MAX_TOKENS"]

MAX_TOKENS = 100_000

# sizeof() for the element types CUDA kernels use
SIZEOF = {
    "char": 1, "signed char": 1, "unsigned char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1,
    "__nv_fp8_e4m3": 1, "__nv_fp8_e5m2": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2,
    "bf16": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
    "half2": 4, "__half2": 4, "__nv_bfloat162": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8,
    "uint64_t": 8, "size_t": 8, "double": 8, "float2": 8, "int2": 8, "uint2": 8,
    "float4": 16, "int4": 16, "uint4": 16, "double2": 16,
}


class CType(NamedTuple):
    bits: int
    signed: bool
    name: str


BOOL = CType(1, False, "bool")
I8, U8 = CType(8, True, "char"), CType(8, False, "unsigned char")
I16, U16 = CType(16, True, "short"), CType(16, False, "unsigned short")
I32, U32 = CType(32, True, "int"), CType(32, False, "unsigned int")
I64, U64 = CType(64, True, "long"), CType(64, False, "unsigned long")

_TYPEDEFS = {"int8_t": I8, "uint8_t": U8, "int16_t": I16, "uint16_t": U16, "int32_t": I32,
             "uint32_t": U32, "int64_t": I64, "uint64_t": U64, "size_t": U64, "ptrdiff_t": I64,
             "intptr_t": I64, "uintptr_t": U64, "bool": BOOL}
_INT_KEYWORDS = {"signed", "unsigned", "char", "short", "int", "long"}
_QUALIFIERS = {"const", "volatile"}
# words that name a type: never a variable, and "(word ...)" is a cast
_TYPE_WORDS = (_INT_KEYWORDS | _QUALIFIERS | set(_TYPEDEFS) | {"auto"}
               | {w for k in SIZEOF for w in k.split()})
_RESERVED = _TYPE_WORDS | {"sizeof", "swizzle"}

# binary operators: precedence (higher binds tighter), as in C; all are left-associative
_BINARY = {
    "*": 10, "/": 10, "%": 10,
    "+": 9, "-": 9,
    "<<": 8, ">>": 8,
    "<": 7, "<=": 7, ">": 7, ">=": 7,
    "==": 6, "!=": 6,
    "&": 5,
    "^": 4,
    "|": 3,
    "&&": 2,
    "||": 1,
}
_PREFIX_PREC = 11          # unary operators and casts
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|0[bB][01]+[uUlL]*|[0-9]+[uUlL]*)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op><<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&^|!~?:()=,;])
""", re.VERBOSE)
_SUFFIX = re.compile(r"(?:[uU](?:ll|LL|[lL])?|(?:ll|LL|[lL])[uU]?)?")


@dataclass(frozen=True)
class Token:
    kind: str      # "num" | "name" | "op" | "end"
    text: str
    pos: int       # 0-based offset in the expression


class AddrExprError(ValueError):
    """A syntax or evaluation error, naming the position and the token."""


def tokenize(src: str) -> list[Token]:
    if not isinstance(src, str):
        raise TypeError(f"address expression must be a str, got {type(src).__name__}")
    out: list[Token] = []
    i = 0
    while i < len(src):
        m = _TOKEN.match(src, i)
        if not m:
            raise AddrExprError(f"position {i}: unexpected character {src[i]!r} in {src!r}")
        assert m.lastgroup is not None, "every alternative of _TOKEN is a named group"
        if m.lastgroup != "ws":
            if len(out) == MAX_TOKENS:
                raise AddrExprError(f"position {i}: the expression has more than {MAX_TOKENS} tokens "
                                    "(fragsim.search.addrexpr.MAX_TOKENS)")
            out.append(Token(m.lastgroup, m.group(), i))
        i = m.end()
    out.append(Token("end", "", len(src)))
    return out


def _literal(tok: Token) -> tuple:
    """(value, C type) of an integer literal, by C's rules for its base and suffix (LP64)."""
    body = tok.text.rstrip("uUlL")
    suffix = tok.text[len(body):]
    if not _SUFFIX.fullmatch(suffix):
        raise AddrExprError(f"position {tok.pos}: {tok.text!r} has an invalid suffix {suffix!r} "
                            "(C allows u, l, ll and their combinations)")
    if body[:2] in ("0x", "0X"):
        value, decimal = int(body, 16), False
    elif body[:2] in ("0b", "0B"):
        value, decimal = int(body, 2), False
    elif len(body) > 1 and body[0] == "0":
        if not re.fullmatch(r"[0-7]+", body):
            raise AddrExprError(f"position {tok.pos}: {tok.text!r} is not a valid octal literal "
                                "(C reads a leading 0 as octal)")
        value, decimal = int(body, 8), False
    else:
        # past 20 digits it is past 2**64 (and past Python's limit on converting long decimal strings)
        value, decimal = (int(body) if len(body) <= 20 else 1 << 64), True
    unsigned, long_ = "u" in suffix.lower(), "l" in suffix.lower()
    if value >= 1 << 64:
        raise AddrExprError(f"position {tok.pos}: literal {tok.text} does not fit in 64 bits "
                            "(C has no integer type for it)")
    candidates = [t for t in ((I32, U32, I64, U64) if not long_ else (I64, U64))
                  if (not unsigned or not t.signed) and (t.signed or unsigned or not decimal)]
    for t in candidates:
        if value <= (1 << (t.bits - t.signed)) - 1:
            return value, t
    raise AddrExprError(f"position {tok.pos}: literal {tok.text} is too large for long (C gives a "
                        f"decimal literal no unsigned type: write {body}u for unsigned long)")


def _int_type(words: list, pos: int) -> CType | None:
    """The C integer type spelled by ``words`` (qualifiers allowed); None for ``auto``."""
    core = [w for w in words if w not in _QUALIFIERS]
    spelled = " ".join(words)
    if core == ["auto"]:
        return None
    if len(core) == 1 and core[0] in _TYPEDEFS:
        return _TYPEDEFS[core[0]]
    if not core or any(w not in _INT_KEYWORDS for w in core):
        other = [w for w in core if w not in _INT_KEYWORDS]
        if other and all(w in _TYPE_WORDS for w in other):
            raise AddrExprError(f"position {pos}: {spelled!r} is not an integer type; the expression "
                                "language computes with C integer types only")
        raise AddrExprError(f"position {pos}: {spelled!r} is not a C type")
    n = {w: core.count(w) for w in _INT_KEYWORDS}
    bad = (n["signed"] + n["unsigned"] > 1 or n["char"] > 1 or n["short"] > 1 or n["int"] > 1
           or n["long"] > 2 or (n["char"] and (n["short"] or n["long"] or n["int"]))
           or (n["short"] and n["long"]))
    if bad:
        raise AddrExprError(f"position {pos}: {spelled!r} is not a valid C type")
    signed = not n["unsigned"]
    if n["char"]:
        return I8 if signed else U8
    if n["short"]:
        return I16 if signed else U16
    if n["long"]:
        return I64 if signed else U64
    return I32 if signed else U32


# ---------------------------------------------------------------------------------------------
# the program: a flat list of nodes, children always before their parent
# ---------------------------------------------------------------------------------------------

class _Node:
    """``kind``: num (arg=(value, type)) | var (arg=name) | un | bin | cond | cast (arg=type) |
    swz (arg=Swizzle).  ``kids`` are indices of earlier nodes."""

    __slots__ = ("kind", "op", "pos", "kids", "arg")

    def __init__(self, kind, op, pos, kids=(), arg=None):
        self.kind, self.op, self.pos, self.kids, self.arg = kind, op, pos, kids, arg


class _Parser:
    def __init__(self, src: str):
        self.src = src
        self.toks = tokenize(src)
        self.i = 0
        self.nodes: list = []
        self.free: dict = {}       # outer variable -> position of first use
        self.bound: dict = {}      # bound name -> position of its binding
        self.binding = None        # the name whose value is being parsed

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def take(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, text: str) -> Token:
        t = self.tok
        if t.text != text or t.kind == "end":
            raise AddrExprError(f"position {t.pos}: expected {text!r} but found {_show(t)}")
        return self.take()

    def node(self, *args, **kw) -> int:
        self.nodes.append(_Node(*args, **kw))
        return len(self.nodes) - 1

    # -- statements --------------------------------------------------------------------------
    def program(self):
        """[(name, declared type or None, root, pos)] bindings and the root of the final expression."""
        if self.tok.kind == "end":
            raise AddrExprError("position 0: empty address expression")
        bindings = []
        while True:
            t = self.tok
            j = self.i
            while self.toks[j].kind == "name" and self.toks[j].text in _TYPE_WORDS:
                j += 1
            is_decl = j > self.i
            if is_decl or (t.kind == "name" and self.toks[j + 1].text == "=" and self.toks[j + 1].kind == "op"):
                name_tok = self.toks[j]
                if is_decl and (name_tok.kind != "name" or self.toks[j + 1].text != "="):
                    raise AddrExprError(f"position {t.pos}: a statement starting with a type is a binding, "
                                        f"TYPE NAME = expr; but found {_show(name_tok)} after the type")
                ctype = _int_type([x.text for x in self.toks[self.i:j]], t.pos) if is_decl else None
                self._check_new_name(name_tok)
                self.i = j + 2
                self.binding = name_tok.text
                root = self.expression()
                self.binding = None
                self.bound[name_tok.text] = name_tok.pos
                bindings.append((name_tok.text, ctype, root, name_tok.pos))
                end = self.take()
                if end.kind == "end" or self.tok.kind == "end":
                    raise AddrExprError(f"position {end.pos}: the program ends after binding "
                                        f"{name_tok.text!r}; end it with the expression to evaluate")
                continue
            root = self.expression()
            end = self.take()
            if end.kind != "end" and self.tok.kind != "end":
                raise AddrExprError(f"position {t.pos}: only the last statement may be a plain expression; "
                                    "bind the others to names (NAME = expr;)")
            return bindings, root

    def _check_new_name(self, t: Token):
        name = t.text
        if name == "lane":
            raise AddrExprError(f"position {t.pos}: cannot bind 'lane': it is the lane index given to evaluate")
        if name in _RESERVED:
            raise AddrExprError(f"position {t.pos}: cannot bind {name!r}: it is a C keyword or type name")
        if name in self.bound:
            raise AddrExprError(f"position {t.pos}: {name!r} is already bound at position {self.bound[name]}")
        if name in self.free:
            raise AddrExprError(f"position {t.pos}: cannot bind {name!r}: position {self.free[name]} "
                                "already reads it as an outer variable")

    # -- one expression, up to ';' or the end: shunting-yard with an explicit operator stack ---------
    def expression(self) -> int:
        out: list = []             # node indices of finished operands
        ops: list = []             # [kind, text, pos, extra]: un, cast, bin, "(", "?", ":", call
        operand = True             # whether an operand comes next
        while True:
            t = self.tok
            if operand:
                operand = self._operand(t, out, ops)
                continue
            if t.kind == "op" and t.text in _BINARY:
                prec = _BINARY[t.text]
                while ops and ops[-1][0] in ("un", "cast", "bin") and ops[-1][3] >= prec:
                    self._reduce(ops.pop(), out)
                ops.append(["bin", t.text, t.pos, prec])
                operand = True
            elif t.text == "?":
                while ops and ops[-1][0] in ("un", "cast", "bin"):
                    self._reduce(ops.pop(), out)
                ops.append(["?", "?", t.pos, None])
                operand = True
            elif t.text == ":":
                self._reduce_to(ops, out, t, ("?",))
                ops[-1][0] = ":"
                operand = True
            elif t.text == ")":
                opener = self._reduce_to(ops, out, t, ("(", "call"))
                ops.pop()
                if opener[0] == "call":
                    opener[3].append(len(self.nodes))
                    self._call(opener, out)
            elif t.text == ",":
                self._reduce_to(ops, out, t, ("call",))
                ops[-1][3].append(len(self.nodes))
                operand = True
            elif t.kind == "end" or t.text == ";":
                while ops:
                    top = ops[-1]
                    if top[0] in ("(", "call"):
                        raise AddrExprError(f"position {t.pos}: expected ')' but found {_show(t)}")
                    if top[0] == "?":
                        raise AddrExprError(f"position {t.pos}: expected ':' but found {_show(t)}")
                    self._reduce(ops.pop(), out)
                return out[-1]
            elif t.text == "=":
                raise AddrExprError(f"position {t.pos}: '=' binds a name only at the start of a statement "
                                    "(NAME = expr;); compare with '=='")
            elif ops:
                raise AddrExprError(f"position {t.pos}: expected an operator or ')' but found {_show(t)}")
            else:
                raise AddrExprError(f"position {t.pos}: unexpected {_show(t)} after a complete expression")
            self.take()

    def _operand(self, t: Token, out: list, ops: list) -> bool:
        """Consume an operand or a prefix; returns whether an operand still comes next."""
        if t.kind == "num":
            self.take()
            out.append(self.node("num", None, t.pos, arg=_literal(t)))
            return False
        if t.kind == "name":
            self.take()
            if t.text == "sizeof":
                out.append(self._sizeof(t))
                return False
            if t.text == "swizzle":
                self.expect("(")
                ops.append(["call", "swizzle", t.pos, [len(self.nodes)]])
                return True
            if t.text in _TYPE_WORDS:
                raise AddrExprError(f"position {t.pos}: {t.text!r} is a type, not a value "
                                    "(a cast is written (int)x)")
            if t.text == self.binding:
                raise AddrExprError(f"position {t.pos}: {t.text!r} is used in its own binding")
            if t.text not in self.bound:
                self.free.setdefault(t.text, t.pos)
            out.append(self.node("var", None, t.pos, arg=t.text))
            return False
        if t.kind == "op" and t.text in ("-", "+", "~", "!"):
            self.take()
            ops.append(["un", t.text, t.pos, _PREFIX_PREC])
            return True
        if t.kind == "op" and t.text == "(":
            self.take()
            j = self.i
            while self.toks[j].kind == "name" and self.toks[j].text in _TYPE_WORDS:
                j += 1
            if j > self.i:
                if self.toks[j].text != ")":
                    raise AddrExprError(f"position {self.toks[j].pos}: expected ')' to close the cast to "
                                        f"{' '.join(x.text for x in self.toks[self.i:j])!r} but found "
                                        f"{_show(self.toks[j])}")
                ctype = _int_type([x.text for x in self.toks[self.i:j]], t.pos)
                if ctype is None:
                    raise AddrExprError(f"position {t.pos}: (auto) is not a cast")
                self.i = j + 1
                ops.append(["cast", ctype, t.pos, _PREFIX_PREC])
            else:
                ops.append(["(", "(", t.pos, None])
            return True
        if t.kind == "end" or t.text == ";":
            raise AddrExprError(f"position {t.pos}: expression ends where an operand was expected")
        raise AddrExprError(f"position {t.pos}: expected a number, a variable or '(' but found {_show(t)}")

    def _sizeof(self, t: Token) -> int:
        self.expect("(")
        start = self.tok
        words = []
        while self.tok.kind == "name":
            words.append(self.take().text)
        core = " ".join(w for w in words if w not in _QUALIFIERS)
        if core in SIZEOF:
            size = SIZEOF[core]
        else:
            try:
                ctype = _int_type(words, start.pos)
            except AddrExprError:
                ctype = None
            if ctype is None:           # not a type, or `auto`, which has no size
                raise AddrExprError(f"position {start.pos}: sizeof({' '.join(words) or _show(start)}) is not "
                                    f"known; known types: {', '.join(sorted(SIZEOF))}")
            size = max(ctype.bits // 8, 1)
        self.expect(")")
        return self.node("num", None, t.pos, arg=(size, U64))

    def _reduce_to(self, ops: list, out: list, t: Token, openers: tuple) -> list:
        """Reduce down to the innermost opener in ``openers`` (left on the stack) and return it."""
        while ops and ops[-1][0] not in ("(", "call", "?"):
            self._reduce(ops.pop(), out)
        if not ops or ops[-1][0] not in openers:
            if ops and ops[-1][0] == "?":
                raise AddrExprError(f"position {t.pos}: expected ':' but found {_show(t)}")
            what = {":": "':' without a '?' before it", ")": "')' without a '(' before it",
                    ",": "',' outside the arguments of swizzle(...)"}[t.text]
            raise AddrExprError(f"position {t.pos}: unexpected {what}")
        return ops[-1]

    def _reduce(self, op: list, out: list):
        kind, text, pos = op[0], op[1], op[2]
        if kind == "un":
            out.append(self.node("un", text, pos, (out.pop(),)))
        elif kind == "cast":
            out.append(self.node("cast", None, pos, (out.pop(),), arg=text))
        elif kind == "bin":
            b = out.pop()
            out.append(self.node("bin", text, pos, (out.pop(), b)))
        else:                                   # ":" of a conditional: cond, then, else
            c, a, b = out[-3:]
            del out[-3:]
            out.append(self.node("cond", None, pos, (c, a, b)))

    def _call(self, call: list, out: list):
        """``swizzle(B, M, S, x)``: B, M, S are constants, evaluated now."""
        starts = call[3]                        # node index where each argument began, then the end
        pos = call[2]
        if len(starts) != 5:
            raise AddrExprError(f"position {pos}: swizzle takes 4 arguments (B, M, S, x), "
                                f"got {len(starts) - 1}")
        args = out[-4:]
        del out[-4:]
        consts = []
        for name, root, lo, hi in zip("BMS", args, starts, starts[1:]):
            reads = [n for n in self.nodes[lo:hi] if n.kind == "var"]
            if reads:
                raise AddrExprError(f"position {reads[0].pos}: swizzle's {name} must be a constant "
                                    f"expression, but it reads {reads[0].arg!r}")
            value = _Program(self.nodes, [], root).run({}, {}, (), lo)
            consts.append(int(value))
        try:
            swz = Swizzle(*consts)
        except (TypeError, ValueError) as e:
            raise AddrExprError(f"position {pos}: {e}") from None
        out.append(self.node("swz", None, pos, (args[3],), arg=swz))


def _show(t: Token) -> str:
    return "the end of the expression" if t.kind == "end" else repr(t.text)


# ---------------------------------------------------------------------------------------------
# evaluation: values are int64 arrays holding the C value (the two's-complement bit pattern for
# unsigned long); each node's type is computed first, in one pass over the flat node list
# ---------------------------------------------------------------------------------------------

_MIN = {32: -(1 << 31), 64: -(1 << 63)}
_MAX = {32: (1 << 31) - 1, 64: (1 << 63) - 1}


def _promote(t: CType) -> CType:
    return I32 if t.bits < 32 else t


def _common(a: CType, b: CType) -> CType:
    """C's usual arithmetic conversions (LP64)."""
    a, b = _promote(a), _promote(b)
    if a == b:
        return a
    if a.signed == b.signed:
        return a if a.bits >= b.bits else b
    u, s = (b, a) if a.signed else (a, b)
    return u if u.bits >= s.bits else s


def _convert(x, src: CType, dst: CType):
    """C's conversion of value(s) ``x`` of type ``src`` to ``dst`` (modulo 2**width)."""
    if dst == BOOL:
        return (x != 0).astype(np.int64)
    fits = src == dst or dst.bits == 64 or (
        src.bits < dst.bits and (src.signed == dst.signed or not src.signed))
    if fits:
        return x
    y = x & ((1 << dst.bits) - 1)
    if dst.signed:
        half = 1 << (dst.bits - 1)
        y = (y ^ half) - half
    return y


def _value(x, t: CType) -> int:
    v = int(x)
    return v + (1 << 64) if t == U64 and v < 0 else v


class _Program:
    def __init__(self, nodes: list, bindings: list, root: int):
        self.nodes, self.bindings, self.root = nodes, bindings, root

    def types(self, var_types: dict, lo: int = 0) -> tuple:
        """The C type of every node from ``lo`` on (children come before their parent), and the
        type a binary operator converts its operands to."""
        # types: only the nodes from lo on (a subtree's children lie within it); operands: binary
        # operators only, None elsewhere
        nodes = self.nodes
        types: dict[int, CType] = {}
        operands: list[CType | None] = [None] * len(self.nodes)
        binding_at = {root: (name, decl) for name, decl, root, _ in self.bindings}
        var_types = dict(var_types)
        for i in range(lo, self.root + 1):
            n = nodes[i]
            k = n.kind
            if k == "num":
                t = n.arg[1]
            elif k == "var":
                t = var_types[n.arg]
            elif k == "bin":
                a, b = types[n.kids[0]], types[n.kids[1]]
                if n.op in ("<<", ">>"):
                    t = _promote(a)
                elif n.op in ("&&", "||"):
                    t = I32
                else:
                    t = operands[i] = _common(a, b)
                    if n.op in _CMP:
                        t = I32
            elif k == "un":
                t = I32 if n.op == "!" else _promote(types[n.kids[0]])
            elif k == "cond":
                t = _common(types[n.kids[1]], types[n.kids[2]])
            elif k == "cast":
                t = n.arg
            else:                       # swz
                t = _promote(types[n.kids[0]])
            types[i] = t
            if i in binding_at:
                name, decl = binding_at[i]
                var_types[name] = decl or t
        return types, operands

    def run(self, variables: dict, var_types: dict, shape, lo: int = 0):
        """Evaluate the bindings, then the expression (nodes from ``lo`` on); ``variables`` are
        int64 arrays of C type ``var_types``, broadcast to ``shape``; errors name them."""
        types, operands = self.types(var_types, lo)
        live = np.ones(shape, bool)
        env = {k: np.broadcast_to(v, shape) for k, v in variables.items()}
        ev = _Evaluator(self.nodes, types, operands, env, shape, dict(env))
        with np.errstate(over="ignore"):
            for name, decl, root, _ in self.bindings:
                v = ev.run(root, live)
                env[name] = np.broadcast_to(_convert(v, types[root], decl) if decl else v, shape)
            out = ev.run(self.root, live)
        t = types[self.root]
        if t == U64:
            ev.check(np.asarray(out) < 0, live, self.nodes[self.root], t,
                     "the result is {r} ({type}): at 2**63 or more it is no offset (C computes in "
                     "unsigned once an operand is unsigned: sizeof, a 'u' suffix, a cast)", r=(out, t))
        return out


_CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
        "==": np.equal, "!=": np.not_equal}
_BIT = {"&": np.bitwise_and, "^": np.bitwise_xor, "|": np.bitwise_or}


def _first(where: np.ndarray) -> tuple:
    return tuple(int(i) for i in np.argwhere(where)[0]) if where.ndim else ()


class _Evaluator:
    """Evaluates a subtree with an explicit stack; ``live`` marks the elements whose value is
    used (C's short-circuit): errors count only there."""

    def __init__(self, nodes, types, operands, env, shape, outer) -> None:
        self.nodes, self.types, self.operands = nodes, types, operands
        self.env, self.shape, self.outer = env, shape, outer
        self.consts: dict = {}                   # literal value -> its (read-only, shared) array
        self.all_live: np.ndarray | None = None                    # the mask of a run's root: every element is used

    def run(self, root: int, live: np.ndarray):
        nodes, leaf = self.nodes, self.leaf
        self.all_live = live
        # node, live mask, values of the finished children
        stack: list[tuple[int, np.ndarray, list[np.ndarray]]] = [(root, live, [])]
        while True:
            frame = stack[-1]
            i, live, vals = frame
            n = nodes[i]
            k = len(vals)
            if k < len(n.kids):
                if k and (n.kind == "cond" or n.op in ("&&", "||")):
                    c = vals[0] != 0
                    live = live & (c if (n.kind == "cond" and k == 1) or n.op == "&&" else ~c)
                    if not live.any():              # no lane uses it: skip the whole subtree
                        vals.append(np.zeros(self.shape, np.int64))
                        continue
                kid = nodes[n.kids[k]]
                if kid.kind == "num" or kid.kind == "var":
                    vals.append(leaf(kid))
                else:
                    stack.append((n.kids[k], live, []))
                continue
            value = self.apply(i, n, vals, live)
            stack.pop()
            if not stack:
                return value
            stack[-1][2].append(value)

    def leaf(self, n):
        if n.kind == "var":
            return self.env[n.arg]
        v = n.arg[0]
        a = self.consts.get(v)
        if a is None:
            a = self.consts[v] = np.full(self.shape, v - (1 << 64) if v >> 63 else v, np.int64)
        return a

    def apply(self, i, n, vals, live):
        kind, types = n.kind, self.types
        if kind == "num" or kind == "var":
            return self.leaf(n)
        t = types[i]
        if kind == "bin":
            a, b = vals
            ta, tb = types[n.kids[0]], types[n.kids[1]]
            op = n.op
            if op == "&&":
                return ((a != 0) & (b != 0)).astype(np.int64)
            if op == "||":
                return ((a != 0) | (b != 0)).astype(np.int64)
            if op in ("<<", ">>"):
                return self.shift(n, t, _convert(a, ta, t), b, tb, live)
            ct = self.operands[i]
            a, b = _convert(a, ta, ct), _convert(b, tb, ct)
            if op in _CMP:
                if ct == U64:
                    a, b = a.view(np.uint64), b.view(np.uint64)
                return _CMP[op](a, b).astype(np.int64)
            if op in _BIT:
                return _BIT[op](a, b)
            if op in ("/", "%"):
                return self.divide(n, t, a, b, live)
            return self.arith(n, t, a, b, live)
        a = vals[0]
        ta = types[n.kids[0]]
        if kind == "un":
            if n.op == "!":
                return (a == 0).astype(np.int64)
            a = _convert(a, ta, t)
            if n.op == "+":
                return a
            if n.op == "~":
                return _wrap(~a, t)
            if t.signed:
                self.check(a == _MIN[t.bits], live, n, t, "-({a}) overflows {type} "
                           "(signed overflow is undefined in C)", a=(a, t))
            return _wrap(-a, t)
        if kind == "cond":
            return np.where(a != 0, _convert(vals[1], types[n.kids[1]], t), _convert(vals[2], types[n.kids[2]], t))
        if kind == "cast":
            return _convert(a, ta, t)
        # swz
        a = _convert(a, ta, t)
        self.check(a < 0, live, n, t, "swizzle offset {a} ({type}) is negative" if t.signed else
                   "swizzle offset {a} ({type}) is 2**63 or more", a=(a, t))
        r = n.arg(np.where(live, a, 0))
        if t.bits < 64:
            self.check(r > (1 << (t.bits - t.signed)) - 1, live, n, t,
                       f"{n.arg!r} of {{a}} gives {{r}}, beyond {{type}}", a=(a, t), r=(r, t))
        return r

    def arith(self, n, t, a, b, live):
        op = n.op
        r = a + b if op == "+" else a - b if op == "-" else a * b
        if not t.signed:
            return _wrap(r, t)
        if t.bits == 32:                        # exact in int64
            bad = (r < _MIN[32]) | (r > _MAX[32])
        elif op == "+":
            bad = ((a ^ r) & (b ^ r)) < 0
        elif op == "-":
            bad = ((a ^ b) & (a ^ r)) < 0
        else:                                   # r // a == b exactly when a * b did not wrap
            nz = np.where(a == 0, 1, a)
            bad = (a != 0) & ((np.floor_divide(r, nz) != b) | ((a == -1) & (b == _MIN[64])))
        self.check(bad, live, n, t, "{a} {op} {b} overflows {type} (signed overflow is undefined in C)",
                   a=(a, t), b=(b, t))
        return r

    def divide(self, n, t, a, b, live):
        op = n.op
        self.check(b == 0, live, n, t, "division by zero" if op == "/" else "remainder by zero")
        if not t.signed:
            ua, ub = a.view(np.uint64), np.where(b == 0, 1, b).view(np.uint64)
            return (ua // ub if op == "/" else ua % ub).view(np.int64)
        self.check((a == _MIN[t.bits]) & (b == -1), live, n, t,
                   "{a} {op} -1 overflows {type} (undefined in C)", a=(a, t))
        safe = np.where((b == 0) | ((a == _MIN[t.bits]) & (b == -1)), 1, b)
        rem = np.fmod(a, safe)                  # C: the remainder has the dividend's sign
        return np.floor_divide(a - rem, safe) if op == "/" else rem

    def shift(self, n, t, a, b, tb, live):
        bad = (b < 0) | (b >= t.bits)           # an unsigned long count of 2**63+ reads negative
        self.check(bad, live, n, t, "shift count {b} out of range 0..{top} for {type} (undefined in C)",
                   b=(b, tb))
        s = np.where(bad, 0, b)
        if n.op == ">>":
            if t == U64:
                return (a.view(np.uint64) >> s.astype(np.uint64)).view(np.int64)
            return a >> s
        r = a << s
        if not t.signed:
            return _wrap(r, t)
        lost = (r < _MIN[32]) | (r > _MAX[32]) if t.bits == 32 else (r >> s) != a
        self.check(lost, live, n, t, "{a} << {b} overflows {type} (undefined in C)", a=(a, t), b=(s, I64))
        return r

    def check(self, bad, live, n, t: CType, message: str, **operands):
        """Raise for the first live element of ``bad``: ``message`` shows the operands there
        (``{a}``-style fields), the operator ``{op}``, the type ``{type}`` and its top bit ``{top}``."""
        if live is not self.all_live:
            bad = bad & live
        if not bad.any():
            return
        bad = np.broadcast_to(bad, self.shape)
        idx = _first(bad)
        shown = {k: _value(np.broadcast_to(v, self.shape)[idx], t) for k, (v, t) in operands.items()}
        text = message.format(op=n.op, type=t.name, top=t.bits - 1, **shown)
        raise AddrExprError(f"position {n.pos}: {text}{self.at(bad)}")

    def at(self, where: np.ndarray) -> str:
        where = np.broadcast_to(where, self.shape)
        idx = _first(where)
        parts = [f"{name}={int(v[idx])}" for name, v in self.outer.items()]
        n = int(where.sum())
        return f" (at {', '.join(parts)}{f'; {n} lanes in all' if n > 1 else ''})" if parts else ""


def _wrap(r, t: CType):
    """Reduce an unsigned result modulo 2**width (int64 arithmetic already wraps modulo 2**64)."""
    return r & ((1 << t.bits) - 1) if not t.signed and t.bits < 64 else r


# ---------------------------------------------------------------------------------------------
# the public face
# ---------------------------------------------------------------------------------------------

def _as_int64(name: str, v) -> np.ndarray:
    what = "lane" if name == "lane" else f"variable {name!r}"
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
        if not _MIN[64] <= int(v) <= _MAX[64]:
            raise AddrExprError(f"{what} = {int(v)} does not fit in 64-bit signed (long)")
        return np.asarray(int(v), dtype=np.int64)
    a = array(v, what)
    if a.dtype == bool and name != "lane":   # a condition as a variable is 0 or 1, as in C
        return a.astype(np.int64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be an integer or integer array, got dtype {a.dtype}")
    if a.dtype == np.uint64 and a.size and a.max() > _MAX[64]:
        raise AddrExprError(f"{what}: value {int(a.max())} does not fit in 64-bit signed (long)")
    return a.astype(np.int64)


class Expr:
    """A parsed address program; ``expr(lane=..., **vars)`` evaluates it (vectorized)."""

    def __init__(self, src: str):
        self.src = src
        p = _Parser(src)
        bindings, root = p.program()
        self._program = _Program(p.nodes, bindings, root)
        self._vars = p.free
        self._bound = {name: pos for name, _, _, pos in bindings}

    @property
    def variables(self) -> tuple:
        """The free (outer) names the expression reads, in order of first use; not the bound ones."""
        return tuple(sorted(self._vars, key=self._vars.__getitem__))

    def __call__(self, lane=None, **variables) -> np.ndarray:
        return self.evaluate(lane, **variables)

    def evaluate(self, lane=None, **variables) -> np.ndarray:
        """int64 array: ``lane`` defaults to 0..31; variables are ints or arrays that broadcast."""
        for name, v in variables.items():
            if name in self._bound:
                raise AddrExprError(f"variable {name!r} is given, but position {self._bound[name]} of "
                                    f"{self.src!r} binds it")
            if name not in self._vars:      # unread (one --var set serves --addrs and --src), still checked
                _as_int64(name, v)
        env = {"lane": np.arange(WARP_LANES, dtype=np.int64) if lane is None else lane}
        env.update(variables)
        arrays, var_types = {}, {}
        for name, pos in self._vars.items():
            if name not in env:
                raise AddrExprError(f"position {pos}: unknown variable {name!r} in {self.src!r}; "
                                    f"give its value, e.g. {name}=0")
            a = arrays[name] = _as_int64(name, env[name])
            var_types[name] = I32 if not a.size or (a.min() >= _MIN[32] and a.max() <= _MAX[32]) else I64
        lane_arr = _as_int64("lane", env["lane"])
        # one value per lane even where the expression does not read `lane`
        shape = broadcast_shape([lane_arr.shape, *(a.shape for a in arrays.values())],
                                ["lane", *(f"variable {name!r}" for name in arrays)])
        # errors name the lane (and the variables) where they occur
        out = self._program.run({"lane": lane_arr, **arrays}, {"lane": I32, **var_types}, shape)
        return np.broadcast_to(out, shape).astype(np.int64)

    def __repr__(self):
        return f"Expr({self.src!r})"


def parse(src: str) -> Expr:
    """Parse a C address program (raises ``ValueError`` naming the position and the token)."""
    return Expr(src)


def evaluate(src: str, lane=None, **variables) -> np.ndarray:
    """Parse and evaluate: int64 array, one value per lane (``lane`` = 0..31 by default; the result
    has the broadcast shape of ``lane`` and the variables, even where the expression reads none)."""
    return Expr(src).evaluate(lane, **variables)
