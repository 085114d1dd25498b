"""``check_wgmma``: does a wgmma shared-memory descriptor read the intended matrix?

The user says where the operand sits (a ``fragsim.Tile``, e.g. the box a TMA with a 128-byte swizzle
wrote) and gives the descriptor of each k-step; fragsim computes the address of every (row, k)
element each k-step reads (``fragsim.layout.descriptor.operand_addresses``) and compares it with the
tile's own address of the element it should be.  Where they differ the report lists which tile
element is read instead, and the fix: for every swizzle mode and base offset the one descriptor
whose canonical layout puts the intended elements where they are (start, LBO and SBO follow from
the addresses of three elements; each candidate is checked by running the map), the one that
changes fewest of the user's fields first.  The k-step advance (start address + K bytes inside a
swizzle atom) is diagnosed across the steps.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from fragsim import validate
from fragsim.layout.descriptor import (MAJORS, SWIZZLE_BYTES, SWIZZLE_MODES, MatrixDescriptor, as_descriptor, check_shape,
                          operand_addresses, swizzle_address)
from .report import Finding, Report

__all__ = ["check_wgmma", "WgmmaReport", "WgmmaMismatch", "parse_form"]

#: element bits of the wgmma operand types
TYPE_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}
_FIELDS = ("start_address", "leading_byte_offset", "stride_byte_offset", "base_offset", "swizzle")
_SHORT = {"start_address": "start address", "leading_byte_offset": "LBO", "stride_byte_offset": "SBO",
          "base_offset": "base offset", "swizzle": "swizzle mode"}


@dataclass(frozen=True)
class FormInfo:
    ptx: str
    n: int
    k: int
    types: dict           # operand -> type name

    def bits(self, operand: str) -> int:
        return TYPE_BITS[self.types[operand]]


def parse_form(form) -> FormInfo:
    """A wgmma form in PTX's spelling (with or without ``wgmma.mma_async.sync.aligned.``) -> N, K and
    the A/B types, from the instruction table (``fragsim.instructions.wgmma``)."""
    from fragsim.instructions.wgmma import lookup_wgmma

    f = lookup_wgmma(form)
    _, n, k = f.shape
    return FormInfo(f.name, n, k, {"A": f.types["A"], "B": f.types["B"]})


# -- the descriptors of the k-steps ------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _step_descriptors(descriptor, steps, variables) -> tuple[list, list, bool]:
    """(descriptors, their source text, per_step): one descriptor per k-step."""
    from fragsim.search.addrexpr import evaluate

    if variables is not None and not isinstance(variables, dict):
        raise TypeError(f"variables must be a dict of names and integers, got {validate.show(variables)}")
    env = dict(variables or {})
    for name, v in env.items():
        if not isinstance(name, str) or not _is_int(v):
            raise TypeError(f"variables: {name!r} must be a name with an integer value, got {validate.show(v)}")

    def expr(src, what):
        ks = np.arange(steps, dtype=np.int64)
        try:
            vals = evaluate(src, lane=np.zeros(steps, np.int64), k=ks, **env)
        except ValueError as e:
            raise ValueError(f"descriptor {what} {src!r}: {e}") from None
        return [int(v) for v in vals]

    if isinstance(descriptor, str):
        vals = expr(descriptor, "expression")
        return [as_descriptor(v, f"descriptor at k-step {i}") for i, v in enumerate(vals)], \
            [f"{descriptor} (k = {i})" for i in range(steps)], True
    if isinstance(descriptor, dict) and any(isinstance(v, str) and k != "swizzle" for k, v in descriptor.items()):
        cols = {}
        for name, v in descriptor.items():
            if isinstance(v, str) and name != "swizzle":
                cols[name] = expr(v, f"field {name}")
            else:
                cols[name] = [v] * steps
        out = [as_descriptor({n: c[i] for n, c in cols.items()}, f"descriptor at k-step {i}") for i in range(steps)]
        text = ", ".join(f"{n}={v}" for n, v in descriptor.items())
        return out, [f"{text} (k = {i})" for i in range(steps)], True
    if callable(descriptor) and not isinstance(descriptor, MatrixDescriptor):
        out = []
        for i in range(steps):
            try:
                value = descriptor(i)
            except Exception as e:      # the user's function: its failure, named, as one line
                raise ValueError(f"descriptor({i}) raised {type(e).__name__}: {' '.join(str(e).split())}") from None
            out.append(as_descriptor(value, f"descriptor({i})"))
        return out, [f"descriptor({i})" for i in range(steps)], True
    if isinstance(descriptor, (list, tuple)):
        if not descriptor:
            raise ValueError("descriptor: an empty list; give one descriptor per k-step")
        out = [as_descriptor(d, f"descriptor[{i}]") for i, d in enumerate(descriptor)]
        return out, [str(d) for d in out], True
    d = as_descriptor(descriptor)
    return [d] * steps, [str(d)] * steps, False


# -- the report --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WgmmaMismatch:
    """Element ``element`` = (row, k) of the operand at k-step ``step`` is read from ``address``,
    where tile element ``got`` lives (None: no element of the tile, ``why`` says what is there),
    instead of tile element ``want``."""

    step: int
    element: tuple
    want: tuple
    got: tuple | None
    address: int
    operand: str = "A"
    why: str = ""

    #: what stands for ``got`` where it is None and ``why`` is empty
    _NOTHING = "no tile element"

    @staticmethod
    def _place(e) -> str:
        """How an element (``want``, ``got``) reads."""
        return f"tile({e[0]},{e[1]})"

    def _where(self) -> str:
        """Said after the operand's element."""
        return ""

    def _extra(self) -> dict:
        """The JSON's entries between "element" and "want"."""
        return {}

    def __str__(self) -> str:
        head = (f"k-step {self.step}: {self.operand}[{self.element[0]},{self.element[1]}]{self._where()} reads "
                f"{validate.hex_int(self.address)}")
        got = self._place(self.got) if self.got is not None else (self.why or self._NOTHING)
        return f"{head} = {got}, wants {self._place(self.want)}"

    def to_dict(self) -> dict:
        return {"step": self.step, "element": list(self.element), **self._extra(), "want": list(self.want),
                "got": None if self.got is None else list(self.got), "address": self.address,
                "why": self.why, "text": str(self)}


@dataclass
class WgmmaReport(Report):
    """The result of ``check_wgmma``: ``ok``, ``mismatches`` (``WgmmaMismatch``), ``diagnosis``
    (plain sentences; ``findings`` with their kind), ``fix`` (one correct descriptor per k-step,
    None where no descriptor can read the tile), ``descriptors`` (the user's, per k-step), and
    ``major`` (the fix's majorness: "MN" means imm-trans = 1)."""

    title: str
    ok: bool
    compared: int
    layout: list
    descriptors: list
    mismatches: list
    findings: list
    fix: list | None
    major: str
    operand: str
    steps_ok: list = field(default_factory=list)

    #: the JSON's "check" and the verdict's words (check_tma_wgmma's report has its own)
    _CHECK, _RIGHT, _WRONG = "wgmma", "are read from where the tile holds them", "are read from the wrong place"

    def verdict(self) -> str:
        if self.ok:
            return (f"OK: all {self.compared:,} elements of {len(self.descriptors)} k-step"
                    f"{'s' * (len(self.descriptors) > 1)} {self._RIGHT}")
        return f"WRONG: {len(self.mismatches):,} of {self.compared:,} elements {self._WRONG}"

    def _name(self) -> str:
        return self._CHECK

    def _json(self) -> dict:
        return {"descriptors": [d.to_dict() for d in self.descriptors],
                "steps_ok": self.steps_ok, "diagnosis": [f.to_dict() for f in self.findings],
                "fix": None if self.fix is None else [d.to_dict() for d in self.fix], "major": self.major,
                "mismatches": [m.to_dict() for m in self.mismatches]}


# -- the check ---------------------------------------------------------------------------------------

def _tile(tile):
    from fragsim.layout.tile import Tile

    if isinstance(tile, str):
        return Tile.parse(tile)
    if not isinstance(tile, Tile):
        raise TypeError(f"tile must be a fragsim.Tile or a tile spec such as '64x64 bf16 swizzle=3,4,3', "
                        f"got {validate.show(tile)}")
    return tile.shared_only("check_wgmma")


def check_wgmma(form, operand, tile, descriptor, *, major="K", at=None, steps=None, variables=None) -> WgmmaReport:
    """Does ``descriptor`` make wgmma ``form`` read operand ``operand`` ("A" or "B") from ``tile``?

    ``tile``: where the operand sits, in the (MN, K) view of both operands (CuTe's): rows are A's M
    or B's N, columns K; a K-major operand is a row-order tile, an MN-major one a column-order tile.
    ``descriptor``: a ``MatrixDescriptor``, its 64-bit value, a dict of its fields, or one per k-step:
    a list, a callable of the k-step, a C expression in ``k`` (and ``variables``) giving the 64-bit
    value, or a dict whose fields are such expressions (``{"start_address": "0x400 + k * 32", ...}``).
    ``major``: "K" (imm-trans = 0) or "MN" (imm-trans = 1, 16-bit types).  ``at``: the tile (row,
    col) of the operand's element (0, 0) at k-step 0 (default (0, 0)); k-step s reads the K columns
    from ``col + s * K``.  ``steps``: how many k-steps (default: 1 for one descriptor, the list's
    length, or as many as the tile's columns hold).
    """
    info = parse_form(form)
    op = validate.choice(operand.upper() if isinstance(operand, str) else operand, "operand", ("A", "B"))
    t = _tile(tile)
    major = validate.choice(major.upper() if isinstance(major, str) else major, "major", MAJORS)
    bits = info.bits(op)
    rows, k = (64 if op == "A" else info.n), info.k
    check_shape(rows, k, bits, major, "check_wgmma")
    if t.elem_bytes * 8 != bits:
        raise ValueError(f"tile holds {t.dtype} ({t.elem_bytes}-byte) elements; operand {op} of {info.ptx} is "
                         f".{info.types[op]} ({bits // 8}-byte)")
    r0, c0 = (0, 0) if at is None else tuple(validate.integer(v, f"at[{i}]") for i, v in enumerate(_pair(at)))
    if r0 < 0 or c0 < 0 or r0 + rows > t.rows or c0 + k > t.cols:
        raise ValueError(f"at ({r0}, {c0}): operand {op} of {info.ptx} is {rows} x {k} (rows x K); the tile "
                         f"({t.rows} x {t.cols}) must hold rows {r0}..{r0 + rows - 1} and cols {c0}..{c0 + k - 1}")
    per_step_form = isinstance(descriptor, (str, list, tuple)) or callable(descriptor) and \
        not isinstance(descriptor, MatrixDescriptor) or isinstance(descriptor, dict) and \
        any(isinstance(v, str) and n != "swizzle" for n, v in descriptor.items())
    if isinstance(descriptor, (list, tuple)) and not descriptor:
        raise ValueError("descriptor: an empty list; give one descriptor per k-step")
    if steps is None:
        steps = len(descriptor) if isinstance(descriptor, (list, tuple)) else \
            (t.cols - c0) // k if per_step_form else 1
    steps = validate.integer(steps, "steps", hint="the number of k-steps")
    if steps < 1 or c0 + steps * k > t.cols:
        raise ValueError(f"steps {steps}: the tile's columns {c0}..{t.cols - 1} hold {(t.cols - c0) // k} k-step(s) "
                         f"of K = {k}")
    if isinstance(descriptor, (list, tuple)) and len(descriptor) != steps:
        raise ValueError(f"descriptor: {len(descriptor)} descriptors for {steps} k-steps; give one per k-step")
    descs, texts, _ = _step_descriptors(descriptor, steps, variables)

    addrs = t.addresses()
    wants = [addrs[r0:r0 + rows, c0 + s * k:c0 + (s + 1) * k] for s in range(steps)]
    mism, steps_ok = [], []
    for s, (d, want) in enumerate(zip(descs, wants)):
        got = operand_addresses(d, rows=rows, k=k, elem_bits=bits, major=major)
        bad = got != want
        steps_ok.append(not bad.any())
        if bad.any():
            mism += _mismatches(t, s, got, bad, r0, c0 + s * k, op)
    ok = all(steps_ok)
    fix, fix_major = (descs, major) if ok else _fix(descs, wants, rows, k, bits, major)
    findings = [] if ok else _diagnose(descs, fix, fix_major, major, info, op, bits, k, t)
    trans = "imm-trans-" + op.lower()
    layout = [f"operand {op}: {rows} x {k} .{info.types[op]} ({'K' if major == 'K' else 'MN'}-major, {trans} = "
              f"{int(major == 'MN')}) from tile rows {r0}..{r0 + rows - 1}, cols {c0}.. ({steps} k-step"
              f"{'s' * (steps > 1)} of {k})"]
    layout += [f"k-step {s}: {desc}" for s, desc in enumerate(descs)]
    title = f"wgmma {info.ptx}: operand {op} read through its descriptor from {t.describe()}"
    return WgmmaReport(title, ok, steps * rows * k, layout, descs, mism, findings, fix, fix_major, op, steps_ok)


def _pair(at):
    if isinstance(at, (tuple, list)) and len(at) == 2:
        return at
    raise TypeError(f"at must be a (row, col) pair, got {validate.show(at)}")


def _mismatches(t, step, got, bad, r0, c0, op) -> list:
    idx, byte = t.locate(got[bad])
    out = []
    for (r, kk), a, i, b in zip(np.argwhere(bad), got[bad], idx, byte):
        g = divmod(int(i), t.cols) if i >= 0 and b == 0 else None
        why = ""
        if i < 0:
            why = "no tile element (outside the tile or in its padding)"
        elif b:
            why = f"byte {int(b)} of tile{divmod(int(i), t.cols)} (not an element boundary)"
        out.append(WgmmaMismatch(step, (int(r), int(kk)), (r0 + int(r), c0 + int(kk)), g, int(a), op, why))
    return out


# -- the fix -----------------------------------------------------------------------------------------

def _candidates(user: MatrixDescriptor, want, rows, k, bits, major):
    """Every descriptor (all swizzle modes and base offsets) that reads ``want``; fields the layout
    does not use keep the user's values."""
    eb = bits // 8
    out = []
    for mode in SWIZZLE_MODES:
        for base in (range(8) if mode != "none" else (0,)):
            def un(a, mode=mode, base=base):
                return int(swizzle_address(np.int64(a), mode, base))
            start = un(want[0, 0])
            f = {"start_address": start, "leading_byte_offset": user.leading_byte_offset,
                 "stride_byte_offset": user.stride_byte_offset, "base_offset": base, "swizzle": mode}
            w = SWIZZLE_BYTES[mode]
            if major == "K":
                if rows > 8:
                    f["stride_byte_offset"] = un(want[8, 0]) - start
                if mode == "none":
                    f["leading_byte_offset"] = un(want[0, 16 // eb]) - start
            else:
                run = 16 // eb if mode == "none" else w // eb
                along_mn, along_k = ("stride_byte_offset", "leading_byte_offset") if mode == "none" else \
                    ("leading_byte_offset", "stride_byte_offset")
                if rows > run:
                    f[along_mn] = un(want[run, 0]) - start
                f[along_k] = un(want[0, 8]) - start
            try:
                d = MatrixDescriptor(**f)
            except (ValueError, TypeError):
                continue
            if np.array_equal(operand_addresses(d, rows=rows, k=k, elem_bits=bits, major=major), want):
                out.append(d)
    return out


def _changes(user, d) -> int:
    return sum(getattr(user, n) != getattr(d, n) for n in _FIELDS)


def _fix(descs, wants, rows, k, bits, major):
    """One correct descriptor per k-step (the one closest to the user's), trying the user's majorness
    first, then the other (16-bit types); (None, major) where no descriptor reads the tile."""
    majors = [major] + ([m for m in MAJORS if m != major] if bits == 16 else [])
    for m in majors:
        fix = []
        for d, want in zip(descs, wants):
            c = _candidates(d, want, rows, k, bits, m)
            if not c:
                break
            # the k-step fixes should agree on everything but the start: rank by the step-0 fix too
            ref = fix[0] if fix else d
            c.sort(key=lambda x: (_changes(d, x), _changes(ref, x) - (x.start_address != ref.start_address),
                                  x.base_offset))
            fix.append(c[0])
        else:
            return fix, m
    return None, major


# -- the diagnosis -----------------------------------------------------------------------------------

def _fmt(name, v) -> str:
    if name == "swizzle":
        return repr(v)
    if name == "start_address":
        return validate.hex_int(v)
    return str(v)


def _diagnose(descs, fix, fix_major, major, info, op, bits, k, t) -> list:
    out = []
    if fix is None:
        out.append(Finding("not canonical", (
            f"no descriptor reads this tile: wgmma reads 8-row core matrices of 16 contiguous bytes, "
            f"{'rows' if major == 'K' else 'K-lines'} 16 bytes apart or one swizzle row (32/64/128 B) apart "
            f"and swizzled as TMA swizzles; {t.layout_name} is not such a layout (store it with a TMA swizzle: "
            "128B = Swizzle<3,4,3> on rows of 128 bytes)")))
        return out
    trans = f"imm-trans-{op.lower()}"
    if fix_major != major:
        out.append(Finding("majorness", (
            f"the tile is stored {'MN' if fix_major == 'MN' else 'K'}-major: set {trans} = "
            f"{int(fix_major == 'MN')} (major={fix_major!r})")))
    f0 = fix[0]
    # fields other than the start: one finding each, when every k-step needs the same value
    for name in _FIELDS[1:]:
        wanted = {getattr(f, name) for f in fix}
        have = [getattr(d, name) for d in descs]
        if len(wanted) == 1 and any(h != next(iter(wanted)) for h in have):
            v = next(iter(wanted))
            why = _why(name, v, f0, fix_major, bits, t)
            enc = f" ({v >> 4} encoded)" if name in ("leading_byte_offset", "stride_byte_offset") else ""
            out.append(Finding(_SHORT[name], f"{_SHORT[name]} is {_fmt(name, have[0])}; {why}: "
                               f"{name}={_fmt(name, v)}{enc}"))
    # the start and its advance over the k-steps
    starts = [d.start_address for d in descs]
    need = [f.start_address for f in fix]
    if starts != need:
        if len(fix) > 1:
            adv = [b - a for a, b in zip(need, need[1:])]
            have_adv = [b - a for a, b in zip(starts, starts[1:])]
            step_bytes = k * bits // 8
            if starts[0] != need[0]:
                out.append(Finding("start address", f"k-step 0 starts at {validate.hex_int(need[0])}, not "
                                   f"{validate.hex_int(starts[0])}: start_address={validate.hex_int(need[0])}"))
            if len(set(adv)) == 1 and have_adv != adv:
                a = adv[0]
                got = (f"advances the start by {have_adv[0]} bytes per k-step" if len(set(have_adv)) == 1
                       else "advances the start unevenly")
                if set(have_adv) == {0}:
                    got = "does not advance the start: every k-step reads the first K columns"
                elif set(have_adv) == {k}:
                    got += " (K in elements, not bytes)"
                elif set(have_adv) == {step_bytes * 16}:
                    got += " (K bytes in the 64-bit value, where the descriptor holds address >> 4)"
                out.append(Finding("k-step advance", (
                    f"the descriptor {got}; each k-step's K = {k} .{info.types[op]} is {a} bytes further"
                    f"{' inside the swizzle row' if f0.swizzle != 'none' and fix_major == 'K' else ''}: start + {a} * k "
                    f"(+ {a >> 4} * k on the 64-bit value)")))
            elif len(set(adv)) != 1:
                out.append(Finding("start address", "the k-steps start at " + ", ".join(validate.hex_int(s) for s in need)
                                   + " (the tile's layout between them is not one stride)"))
        elif starts[0] != need[0]:
            out.append(Finding("start address", f"the operand's element (0, 0) is read from "
                               f"{validate.hex_int(starts[0])} but sits at {validate.hex_int(need[0])} (unswizzled): "
                               f"start_address={validate.hex_int(need[0])}"))
    if not out:        # the k-steps need different fields: name each step's fix
        out += [Finding("descriptor", f"k-step {s}: use {f!r}") for s, f in enumerate(fix) if f != descs[s]]
    first = fix[0]
    step = fix[1].start_address - fix[0].start_address if len(fix) > 1 else None
    per = f"; k-step k: start + {step} * k (value + {step >> 4} * k)" if step is not None and all(
        f.replace(start_address=first.start_address) == first and f.start_address == first.start_address + s * step
        for s, f in enumerate(fix)) else ""
    out.append(Finding("fix", f"fix: {first!r} = {first.encode():#018x}{per}"
                       + (f" with major={fix_major!r}" if fix_major != major else "")))
    return out


def _why(name, v, f, major, bits, t) -> str:
    if name == "swizzle":
        return f"the tile is stored {('without a swizzle' if v == 'none' else 'with the ' + v + ' swizzle')} ({t.layout_name})"
    if name == "base_offset":
        return "the swizzle pattern starts 128 * base_offset bytes past its boundary"
    eb = bits // 8
    if major == "K":
        if name == "stride_byte_offset":
            return "the next 8 rows sit that far"
        return "the next 16 bytes of K (the next core matrix) sit that far"
    run = 16 // eb if f.swizzle == "none" else SWIZZLE_BYTES[f.swizzle] // eb
    along_mn = (name == "stride_byte_offset") == (f.swizzle == "none")
    return f"the next {run} elements along MN sit that far" if along_mn else "the next 8 k sit that far"
