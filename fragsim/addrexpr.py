"""C address expressions, parsed safely and evaluated for every lane at once.

Users paste the address math of their kernel, in C, as a string in ``lane`` (and any named loop
variables)::

    >>> from fragsim.addrexpr import evaluate
    >>> evaluate("(lane % 16) * 64 + (((lane / 16) ^ (lane % 16 & 3)) * 16)")[:6]
    array([  0,  80, 160, 240, 256, 336])

C semantics: ``/`` is integer division truncating toward zero, ``%`` takes the sign of the
dividend, ``<< >>`` shifts (``>>`` of a negative value is arithmetic, as nvcc does), ``& ^ |``,
comparisons and ``&& || !`` give 0 or 1, ``?:``, unary ``- + ~ !``, parentheses, decimal, hex
(``0x``), octal (leading ``0``) and binary (``0b``) literals with optional ``u``/``l`` suffixes,
``sizeof(T)`` for the usual element types, and casts to integer types (``(int)x``), which are
accepted and do not change the value.  C's precedence and associativity throughout; ``&&``,
``||`` and ``?:`` evaluate their right-hand side only for the lanes that need it, so
``lane != 0 ? 64 / lane : 0`` divides no lane by zero.  Values are 64-bit (no 32-bit wrap-around).

No ``eval``: a tokenizer and a precedence-climbing parser build a small tree that evaluates with
NumPy.  Errors name the position and the token (``position 7: expected ')' but found '+'``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["parse", "evaluate", "Expr", "SIZEOF"]

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
_INT_TYPES = {"int", "unsigned", "signed", "long", "short", "char", "int32_t", "uint32_t", "int64_t",
              "uint64_t", "size_t", "int16_t", "uint16_t", "int8_t", "uint8_t", "unsigned int",
              "unsigned long", "long long", "unsigned long long", "unsigned short", "unsigned char",
              "signed char"}

# binary operators: precedence (higher binds tighter), as in C
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
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|0[bB][01]+[uUlL]*|[0-9]+[uUlL]*)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op><<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&^|!~?:()])
""", re.VERBOSE)


@dataclass(frozen=True)
class Token:
    kind: str      # "num" | "name" | "op" | "end"
    text: str
    pos: int       # 0-based offset in the expression


class AddrExprError(ValueError):
    """A syntax or evaluation error, naming the position and the token."""


def tokenize(src: str) -> list:
    if not isinstance(src, str):
        raise TypeError(f"address expression must be a str, got {type(src).__name__}")
    out, i = [], 0
    while i < len(src):
        m = _TOKEN.match(src, i)
        if not m:
            raise AddrExprError(f"position {i}: unexpected character {src[i]!r} in {src!r}")
        if m.lastgroup != "ws":
            out.append(Token(m.lastgroup, m.group(), i))
        i = m.end()
    out.append(Token("end", "", len(src)))
    return out


def _int_literal(tok: Token) -> int:
    t = tok.text.rstrip("uUlL")
    if t[:2] in ("0x", "0X"):
        return int(t, 16)
    if t[:2] in ("0b", "0B"):
        return int(t, 2)
    if len(t) > 1 and t[0] == "0":
        if not re.fullmatch(r"[0-7]+", t):
            raise AddrExprError(f"position {tok.pos}: {tok.text!r} is not a valid octal literal "
                                "(C reads a leading 0 as octal)")
        return int(t, 8)
    return int(t)


# ---------------------------------------------------------------------------------------------
# the tree
# ---------------------------------------------------------------------------------------------

class Node:
    pos: int


@dataclass
class Num(Node):
    value: int
    pos: int


@dataclass
class Var(Node):
    name: str
    pos: int


@dataclass
class Unary(Node):
    op: str
    arg: Node
    pos: int


@dataclass
class Binary(Node):
    op: str
    left: Node
    right: Node
    pos: int


@dataclass
class Cond(Node):
    cond: Node
    then: Node
    other: Node
    pos: int


class _Parser:
    def __init__(self, src: str):
        self.src = src
        self.toks = tokenize(src)
        self.i = 0

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

    def parse(self) -> Node:
        if self.tok.kind == "end":
            raise AddrExprError("position 0: empty address expression")
        node = self.conditional()
        if self.tok.kind != "end":
            raise AddrExprError(f"position {self.tok.pos}: unexpected {_show(self.tok)} after a complete expression")
        return node

    def conditional(self) -> Node:
        cond = self.binary(1)
        if self.tok.text == "?":
            q = self.take()
            then = self.conditional()
            self.expect(":")
            other = self.conditional()
            return Cond(cond, then, other, q.pos)
        return cond

    def binary(self, min_prec: int) -> Node:
        left = self.unary()
        while self.tok.kind == "op" and self.tok.text in _BINARY and _BINARY[self.tok.text] >= min_prec:
            op = self.take()
            right = self.binary(_BINARY[op.text] + 1)   # all C binary operators are left-associative
            left = Binary(op.text, left, right, op.pos)
        return left

    def unary(self) -> Node:
        t = self.tok
        if t.kind == "op" and t.text in ("-", "+", "~", "!"):
            self.take()
            return Unary(t.text, self.unary(), t.pos)
        if t.kind == "op" and t.text == "(" and self._cast_ahead():
            self.take()
            while self.tok.text != ")":
                self.take()
            self.take()
            return self.unary()
        return self.primary()

    def _cast_ahead(self) -> bool:
        """``(int)``, ``(unsigned int)``, ``(uint32_t)``: a cast to an integer type."""
        j = self.i + 1
        words = []
        while self.toks[j].kind == "name":
            words.append(self.toks[j].text)
            j += 1
        return bool(words) and self.toks[j].text == ")" and " ".join(words) in _INT_TYPES

    def primary(self) -> Node:
        t = self.tok
        if t.kind == "num":
            self.take()
            return Num(_int_literal(t), t.pos)
        if t.kind == "name":
            self.take()
            if t.text == "sizeof":
                self.expect("(")
                words = []
                start = self.tok
                while self.tok.kind == "name":
                    words.append(self.take().text)
                name = " ".join(words)
                if name not in SIZEOF:
                    raise AddrExprError(f"position {start.pos}: sizeof({name or _show(start)}) is not known; "
                                        f"known types: {', '.join(sorted(SIZEOF))}")
                self.expect(")")
                return Num(SIZEOF[name], t.pos)
            return Var(t.text, t.pos)
        if t.kind == "op" and t.text == "(":
            self.take()
            node = self.conditional()
            self.expect(")")
            return node
        if t.kind == "end":
            raise AddrExprError(f"position {t.pos}: expression ends where an operand was expected")
        raise AddrExprError(f"position {t.pos}: expected a number, a variable or '(' but found {_show(t)}")


def _show(t: Token) -> str:
    return "the end of the expression" if t.kind == "end" else repr(t.text)


# ---------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------

def _variables(node: Node, out: dict):
    if isinstance(node, Var):
        out.setdefault(node.name, node.pos)
    for child in ("arg", "left", "right", "cond", "then", "other"):
        if hasattr(node, child):
            _variables(getattr(node, child), out)
    return out


class Expr:
    """A parsed address expression; ``expr(lane=..., **vars)`` evaluates it (vectorized)."""

    def __init__(self, src: str):
        self.src = src
        self.tree = _Parser(src).parse()
        self._vars = _variables(self.tree, {})

    @property
    def variables(self) -> tuple:
        """The names the expression reads, in order of first use."""
        return tuple(sorted(self._vars, key=self._vars.get))

    def __call__(self, lane=None, **variables) -> np.ndarray:
        return self.evaluate(lane, **variables)

    def evaluate(self, lane=None, **variables) -> np.ndarray:
        """int64 array: ``lane`` defaults to 0..31; variables are ints or arrays that broadcast."""
        env = {"lane": np.arange(32, dtype=np.int64) if lane is None else lane}
        env.update(variables)
        arrays = {}
        for name, pos in self._vars.items():
            if name not in env:
                raise AddrExprError(f"position {pos}: unknown variable {name!r} in {self.src!r}; "
                                    f"give its value, e.g. {name}=0")
            v = np.asarray(env[name])
            if v.dtype == bool:
                v = v.astype(np.int64)
            if v.dtype.kind not in "iu":
                raise TypeError(f"variable {name!r} must be an integer or integer array, got dtype {v.dtype}")
            arrays[name] = v.astype(np.int64)
        lane_arr = np.asarray(env["lane"])
        if lane_arr.dtype.kind not in "iub":
            raise TypeError(f"lane must be an integer or integer array, got dtype {lane_arr.dtype}")
        # one value per lane even where the expression does not read `lane`
        shape = np.broadcast_shapes(lane_arr.shape, *(a.shape for a in arrays.values()))
        live = np.ones(shape, bool)
        out = self._eval(self.tree, arrays, live, shape)
        return np.broadcast_to(out, shape).astype(np.int64)

    # ``live`` marks the elements whose value is used: errors count only there (C short-circuit)
    def _eval(self, n: Node, env: dict, live: np.ndarray, shape) -> np.ndarray:
        if isinstance(n, Num):
            return np.full(shape, n.value, dtype=np.int64)
        if isinstance(n, Var):
            return np.broadcast_to(env[n.name], shape)
        if isinstance(n, Unary):
            a = self._eval(n.arg, env, live, shape)
            if n.op == "-":
                return -a
            if n.op == "+":
                return a
            if n.op == "~":
                return ~a
            return (a == 0).astype(np.int64)
        if isinstance(n, Cond):
            c = self._eval(n.cond, env, live, shape) != 0
            t = self._eval(n.then, env, live & c, shape)
            o = self._eval(n.other, env, live & ~c, shape)
            return np.where(c, t, o)
        assert isinstance(n, Binary)
        op = n.op
        a = self._eval(n.left, env, live, shape)
        if op == "&&":
            b = self._eval(n.right, env, live & (a != 0), shape)
            return ((a != 0) & (b != 0)).astype(np.int64)
        if op == "||":
            b = self._eval(n.right, env, live & (a == 0), shape)
            return ((a != 0) | (b != 0)).astype(np.int64)
        b = self._eval(n.right, env, live, shape)
        if op in ("/", "%"):
            zero = (b == 0) & live
            if zero.any():
                raise AddrExprError(f"position {n.pos}: {'division' if op == '/' else 'remainder'} by zero"
                                    f"{self._at(zero, env)}")
            safe = np.where(b == 0, 1, b)
            q = np.abs(a) // np.abs(safe)
            q = np.where((a < 0) != (safe < 0), -q, q)       # truncate toward zero
            return q if op == "/" else a - safe * q          # remainder has the dividend's sign
        if op in ("<<", ">>"):
            bad = ((b < 0) | (b > 62)) & live
            if bad.any():
                raise AddrExprError(f"position {n.pos}: shift count {int(b[bad].flat[0])} out of range 0..62"
                                    f"{self._at(bad, env)}")
            bb = np.clip(b, 0, 62)
            return np.left_shift(a, bb) if op == "<<" else np.right_shift(a, bb)
        fn = {"*": np.multiply, "+": np.add, "-": np.subtract, "&": np.bitwise_and, "^": np.bitwise_xor,
              "|": np.bitwise_or}.get(op)
        if fn is not None:
            return fn(a, b)
        cmp = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
               "==": np.equal, "!=": np.not_equal}[op]
        return cmp(a, b).astype(np.int64)

    def _at(self, where: np.ndarray, env: dict) -> str:
        idx = tuple(int(i) for i in np.argwhere(where)[0]) if where.ndim else ()
        parts = []
        for name, v in env.items():
            vv = np.broadcast_to(v, where.shape)
            parts.append(f"{name}={int(vv[idx])}")
        return f" (at {', '.join(parts)})" if parts else ""

    def __repr__(self):
        return f"Expr({self.src!r})"


def parse(src: str) -> Expr:
    """Parse a C address expression (raises ``ValueError`` naming the position and the token)."""
    return Expr(src)


def evaluate(src: str, lane=None, **variables) -> np.ndarray:
    """Parse and evaluate: int64 array, one value per lane (``lane`` = 0..31 by default; the result
    has the broadcast shape of ``lane`` and the variables, even where the expression reads none)."""
    return Expr(src).evaluate(lane, **variables)
