"""The modifier grammar of one PTX syntax line, written as the PTX ISA writes it.

A ``Syntax`` is built from the ISA's own notation::

    Syntax("add{.rnd}{.ftz}{.sat}.f32", rnd=("rn", "rz", "rm", "rp"))
    Syntax("prmt.b32{.mode}", mode=("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"))
    Syntax("mma.sync.aligned.form", form=MMA_FORMS)          # a slot of multi-token spellings

``.name`` is a required token and ``{.name}`` an optional one; tokens in ``( ... )`` may come in any
order, as ptxas reads ``ld.global.relaxed.gpu`` and ``ld.relaxed.gpu.global`` alike (the required ones
all present); ``name`` is a *slot* when the row
gives it a vocabulary (a keyword argument: a tuple of spellings, each one token or several joined
by dots), otherwise the literal modifier itself.  The opcode is the first token.

``match(mods)`` reads an instruction's modifiers (``ld.global.nc.v4.u32`` -> ``("global", "nc",
"v4", "u32")``) and returns a ``Match`` -- the spelling chosen for every slot and literal present --
or ``None``.  Required tokens are matched in the ISA's order.  Optional tokens that stand next to
each other in the syntax may appear in any order among themselves, as ptxas takes them
(``fma.rn.sat.ftz.f32`` assembles like ``fma.rn.ftz.sat.f32``).  ``forms()`` enumerates every
spelling the syntax admits, in the ISA's order: what gpu_check validates and the support page
lists.

Invariants checked at construction: slot vocabularies are non-empty and free of duplicates; the
tokens of one optional run have disjoint spellings (a modifier never has two readings).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

_TOKEN = re.compile(r"\{\.([^{}()]+)\}|\.([^.{}()]+)|(\()|(\))")


@dataclass(frozen=True)
class Token:
    """One position of a syntax line: ``name`` (a slot or a literal), its ``spellings`` (each a tuple
    of modifier tokens) and whether it may be left out."""

    name: str
    spellings: tuple[tuple[str, ...], ...]
    optional: bool
    slot: bool
    group: int = -1          # tokens of one ``( ... )`` group: any order, the required ones all present

    def text(self) -> str:
        inner = f".{self.name}"
        return "{" + inner + "}" if self.optional else inner


@dataclass(frozen=True)
class Match:
    """The slots and literals of one instruction: ``get("rnd")`` -> ``"rn"`` or ``None``, ``has("sat")``;
    ``tokens`` the (name, spelling) pairs in the order the syntax lists them."""

    tokens: tuple[tuple[str, str], ...]

    def get(self, name: str, default: str | None = None) -> str | None:
        for n, v in self.tokens:
            if n == name:
                return v
        return default

    def has(self, name: str) -> bool:
        return any(n == name for n, _ in self.tokens)

    def __getitem__(self, name: str) -> str:
        v = self.get(name)
        if v is None:
            raise KeyError(name)
        return v

    @property
    def values(self) -> tuple[str, ...]:
        """The spellings present, in the syntax's order (multi-token spellings joined by dots)."""
        return tuple(v for _, v in self.tokens)


class SyntaxError_(ValueError):
    """A syntax line of the table is malformed (a table bug, raised when the module loads)."""


@dataclass(frozen=True)
class Syntax:
    """One syntax line: ``opcode`` and its ``tokens``; see the module docstring."""

    text: str
    vocab: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    opcode: str = field(init=False)
    tokens: tuple[Token, ...] = field(init=False)

    def __init__(self, text: str, **vocab: tuple[str, ...]):
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "vocab", dict(vocab))
        m0 = re.match(r"([A-Za-z_]\w*)(.*)$", text)
        if m0 is None:
            raise SyntaxError_(f"{text!r}: a syntax line starts with its opcode")
        head, rest = m0.group(1), m0.group(2)
        tokens: list[Token] = []
        pos, group, groups = 0, -1, 0
        for m in _TOKEN.finditer(rest):
            if m.start() != pos:
                raise SyntaxError_(f"{text!r}: cannot read {rest[pos:m.start()]!r}")
            pos = m.end()
            if m.group(3) or m.group(4):
                if (m.group(3) is not None) == (group >= 0):
                    raise SyntaxError_(f"{text!r}: unbalanced ( )")
                group, groups = (groups, groups + 1) if m.group(3) else (-1, groups)
                continue
            name, optional = (m.group(1), True) if m.group(1) is not None else (m.group(2), False)
            if name.startswith("."):
                raise SyntaxError_(f"{text!r}: {{.{name}}} has a stray dot")
            if name in vocab:
                spellings = tuple(tuple(s.split(".")) for s in vocab[name])
                if not spellings:
                    raise SyntaxError_(f"{text!r}: slot .{name} has no spellings")
                if len(set(spellings)) != len(spellings):
                    raise SyntaxError_(f"{text!r}: slot .{name} lists a spelling twice")
                tokens.append(Token(name, spellings, optional, True, group))
            else:
                tokens.append(Token(name, (tuple(name.split(".")),), optional, False, group))
        if group >= 0:
            raise SyntaxError_(f"{text!r}: unbalanced ( )")
        if pos != len(rest):
            raise SyntaxError_(f"{text!r}: cannot read {rest[pos:]!r}")
        unused = set(vocab) - {t.name for t in tokens if t.slot}
        if unused:
            raise SyntaxError_(f"{text!r}: vocabulary for {sorted(unused)} that the line does not use")
        for run in _runs(tokens):
            seen: dict[tuple[str, ...], str] = {}
            for t in run:
                for s in t.spellings:
                    if s in seen:
                        raise SyntaxError_(f"{text!r}: .{'.'.join(s)} could fill .{seen[s]} or .{t.name}")
                    seen[s] = t.name
        object.__setattr__(self, "opcode", head)
        object.__setattr__(self, "tokens", tuple(tokens))

    # ---- reading an instruction ---------------------------------------------------------------

    def match(self, mods: tuple[str, ...]) -> Match | None:
        """The reading of ``mods`` (the modifiers after the opcode), or ``None`` when this line does
        not admit them."""
        out = _match(self.tokens, 0, tuple(mods), 0, ())
        return None if out is None else Match(tuple(sorted(out, key=lambda nv: self._order(nv[0]))))

    def _order(self, name: str) -> int:
        return next(i for i, t in enumerate(self.tokens) if t.name == name)

    # ---- enumerating ---------------------------------------------------------------------------

    def forms(self) -> Iterator[tuple[str, ...]]:
        """Every modifier tuple the line admits, in the ISA's order (optional tokens absent first)."""
        choices = [((),) * t.optional + t.spellings for t in self.tokens]
        for pick in itertools.product(*choices):
            yield tuple(x for part in pick for x in part)

    def count(self) -> int:
        """How many spellings ``forms()`` yields."""
        n = 1
        for t in self.tokens:
            n *= len(t.spellings) + t.optional
        return n

    def describe(self) -> str:
        """The line and its slot vocabularies, as the ISA prints them:
        ``add{.rnd}{.ftz}{.sat}.f32   .rnd = {.rn, .rz, .rm, .rp}``."""
        slots = [f".{t.name} = {{{', '.join('.' + '.'.join(s) for s in t.spellings)}}}"
                 for t in self.tokens if t.slot and len(t.spellings) <= 12]
        many = [f".{t.name}: {len(t.spellings)} spellings" for t in self.tokens if t.slot and len(t.spellings) > 12]
        return "   ".join([self.text, *slots, *many])


def _runs(tokens: list[Token] | tuple[Token, ...]) -> Iterator[list[Token]]:
    """The sets of tokens whose order is free: a ``( )`` group, a maximal run of adjacent optional
    tokens outside groups (a required token outside a group is a run of its own)."""
    run: list[Token] = []
    for i, t in enumerate(tokens):
        if t.group >= 0:
            if run:
                yield run
                run = []
            if i == 0 or tokens[i - 1].group != t.group:
                yield [u for u in tokens if u.group == t.group]
            continue
        if t.optional:
            run.append(t)
            continue
        if run:
            yield run
            run = []
        yield [t]
    if run:
        yield run


def _match(tokens: tuple[Token, ...], i: int, mods: tuple[str, ...], j: int,
           got: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...] | None:
    """Backtracking reader: tokens[i:] against mods[j:]; a run of optional tokens takes its members
    in any order."""
    if i == len(tokens):
        return got if j == len(mods) else None
    t = tokens[i]
    if t.group >= 0:
        k = i
        while k < len(tokens) and tokens[k].group == t.group:
            k += 1
        return _match_run(tokens, i, k, frozenset(), mods, j, got)
    if not t.optional:
        for s in t.spellings:
            if mods[j:j + len(s)] == s:
                out = _match(tokens, i + 1, mods, j + len(s), (*got, (t.name, ".".join(s))))
                if out is not None:
                    return out
        return None
    k = i
    while k < len(tokens) and tokens[k].optional and tokens[k].group < 0:
        k += 1
    return _match_run(tokens, i, k, frozenset(), mods, j, got)


def _match_run(tokens, i, k, used, mods, j, got):
    # stop the run here (every remaining member absent: only optional ones may be) ...
    if all(tokens[n].optional for n in range(i, k) if n not in used):
        out = _match(tokens, k, mods, j, got)
        if out is not None:
            return out
    # ... or take one more of its unused members
    for n in range(i, k):
        if n in used:
            continue
        t = tokens[n]
        for s in t.spellings:
            if mods[j:j + len(s)] == s:
                out = _match_run(tokens, i, k, used | {n}, mods, j + len(s), (*got, (t.name, ".".join(s))))
                if out is not None:
                    return out
    return None
