"""C address expressions, read: C's integer types (LP64, as nvcc on Linux), the tokenizer and an
explicit-stack parser that turns a program of bindings and one expression into a flat node list.
``fragsim.search.addrexpr`` evaluates it; the language is described there."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from fragsim.layout.swizzle import Swizzle

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


#: A floating-point literal, to name it when one turns up in address math.
_FLOAT = re.compile(r"(\d+\.\d*|\.\d+)([eE][-+]?\d+)?[fF]?|\d+[eE][-+]?\d+[fF]?")


def tokenize(src: str) -> list[Token]:
    if not isinstance(src, str):
        raise TypeError(f"address expression must be a str, got {type(src).__name__}")
    out: list[Token] = []
    i = 0
    while i < len(src):
        m = _TOKEN.match(src, i)
        if not m:
            flt = next((x for x in _FLOAT.finditer(src) if x.start() <= i < x.end()), None)
            if flt is not None:
                raise AddrExprError(f"position {flt.start()}: {flt.group()!r} is not an integer: floats are not "
                                    "addresses (C address math is integer arithmetic on byte offsets)")
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

class Node:
    """``kind``: num (arg=(value, type)) | var (arg=name) | un | bin | cond | cast (arg=type) |
    swz (arg=Swizzle).  ``kids`` are indices of earlier nodes."""

    __slots__ = ("kind", "op", "pos", "kids", "arg")

    def __init__(self, kind, op, pos, kids=(), arg=None):
        self.kind, self.op, self.pos, self.kids, self.arg = kind, op, pos, kids, arg


class Parser:
    """``Parser(src, constant).program()`` -> (bindings, root) over ``self.nodes``.  ``constant(nodes,
    root, lo)`` evaluates a constant subtree (swizzle's B, M, S): the evaluator's, passed in."""

    def __init__(self, src: str, constant: Callable[[list, int, int], int]):
        self.src = src
        self.constant = constant
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
            raise AddrExprError(f"position {t.pos}: expected {text!r} but found {show(t)}")
        return self.take()

    def node(self, *args, **kw) -> int:
        self.nodes.append(Node(*args, **kw))
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
                                        f"TYPE NAME = expr; but found {show(name_tok)} after the type")
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
                        raise AddrExprError(f"position {t.pos}: expected ')' but found {show(t)}")
                    if top[0] == "?":
                        raise AddrExprError(f"position {t.pos}: expected ':' but found {show(t)}")
                    self._reduce(ops.pop(), out)
                return out[-1]
            elif t.text == "=":
                raise AddrExprError(f"position {t.pos}: '=' binds a name only at the start of a statement "
                                    "(NAME = expr;); compare with '=='")
            elif ops:
                raise AddrExprError(f"position {t.pos}: expected an operator or ')' but found {show(t)}")
            else:
                raise AddrExprError(f"position {t.pos}: unexpected {show(t)} after a complete expression")
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
                                        f"{show(self.toks[j])}")
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
        raise AddrExprError(f"position {t.pos}: expected a number, a variable or '(' but found {show(t)}")

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
                raise AddrExprError(f"position {start.pos}: sizeof({' '.join(words) or show(start)}) is not "
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
                raise AddrExprError(f"position {t.pos}: expected ':' but found {show(t)}")
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
            consts.append(self.constant(self.nodes, root, lo))
        try:
            swz = Swizzle(*consts)
        except (TypeError, ValueError) as e:
            raise AddrExprError(f"position {pos}: {e}") from None
        out.append(self.node("swz", None, pos, (args[3],), arg=swz))


def show(t: Token) -> str:
    return "the end of the expression" if t.kind == "end" else repr(t.text)


