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

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.validate import array, broadcast_shape, working_memory
from .cparse import (BOOL, I32, I64, MAX_TOKENS, SIZEOF, U64, AddrExprError, CType, Parser)

__all__ = ["parse", "evaluate", "Expr", "SIZEOF", "AddrExprError", "MAX_TOKENS"]


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


def _constant(nodes: list, root: int, lo: int) -> int:
    """The value of a constant subtree (swizzle's B, M, S), for the parser."""
    return int(_Program(nodes, [], root).run({}, {}, (), lo))


class Expr:
    """A parsed address program; ``expr(lane=..., **vars)`` evaluates it (vectorized)."""

    def __init__(self, src: str):
        self.src = src
        p = Parser(src, _constant)
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
        n = int(np.prod(shape, dtype=np.int64))
        # the operations' int64 results and overflow masks alive at once: at most 8 bytes a node, and 64
        working_memory((64 + 8 * len(self._program.nodes)) * n,
                       f"{self.src[:40]!r}: lane and the variables broadcast to {shape} = {n:,} values",
                       "evaluate fewer lanes or variable values at a time")
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
