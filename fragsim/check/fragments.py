"""Which fragment each register of the loads (or stores) belongs to, and the tile element it holds.

The instructions' registers, in order (all of the first instruction's, then the next one's), form
one stream per lane.  By default the stream fills whole fragments one after another: registers
0..n-1 are fragment 0, n..2n-1 fragment 1 ...; ``regmap`` says otherwise (stream register j is
register ``regmap[j][1]`` of fragment ``regmap[j][0]``).  Fragment f sits at ``fragments[f]`` =
(row, col) of the tile, by default ``at`` plus f fragment shapes along A's M, B's N or C's N
(the next m-tile or n-tile: one ``ldmatrix.x4`` of B fills the fragments of two adjacent n-tiles).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fragsim import validate
from fragsim.facts.hardware import BANK_BYTES, WARP_LANES
from fragsim.instructions import FORMS, MmaForm, check_operand, lookup
from fragsim.ranges import format_ranges

EXPRESSION_HINT = "an integer or a C expression of the variables"


@dataclass
class Fragments:
    form: MmaForm
    operand: str
    origins: list                      # (row, col) of each fragment in the tile
    regmap: np.ndarray                 # int (R, 2): stream register -> (fragment, register)
    want: np.ndarray                   # int64 (32, R, epr): tile element (row-major index) each slot needs
    cols: int                          # the tile's columns (element index = row * cols + col)

    @property
    def nregs(self) -> int:
        return self.form.nregs(self.operand)

    @property
    def epr(self) -> int:
        return self.want.shape[2]

    @property
    def wide(self) -> int:
        """32-bit registers per element: 2 for f64 (a register pair holds one element), else 1."""
        return max(1, self.form.fmt(self.operand).storage_bits // 32)

    @property
    def units(self) -> np.ndarray:
        """int64 (32, U, k): the element each slot needs, by unit -- a register of k elements, or the
        register pair of a 64-bit element (k = 1)."""
        return self.want[:, ::self.wide, :]

    def register_name(self, j: int) -> str:
        """Stream register j as the fragment register it is: "B fragment 1 reg 0 (b0, b1)"."""
        f, k = (int(x) for x in self.regmap[j])
        names = ", ".join(self.form.element_name(self.operand, k, h) for h in range(self.epr))
        frag = f"{self.operand} fragment {f}" if len(self.origins) > 1 else f"{self.operand}"
        return f"{frag} register {k} ({names})"

    def describe(self) -> list[str]:
        """One line per fragment: its registers in the stream and where it sits in the tile."""
        r, c = self.form.matrix_shape(self.operand)
        lines = []
        for f, (r0, c0) in enumerate(self.origins):
            js = [j for j in range(len(self.regmap)) if self.regmap[j][0] == f]
            regs = format_ranges(js, sep=", ", prefix="r")
            lines.append(f"{regs}: {self.operand} fragment {f} ({r}x{c}) at tile({r0}, {c0})")
        return lines


def _scalar(value, env: dict, what: str) -> int:
    if isinstance(value, str):
        from fragsim.search.addrexpr import AddrExprError, evaluate

        try:
            return int(evaluate(value, lane=0, **env))
        except AddrExprError as e:
            raise AddrExprError(f"{what}: {e}") from None
    return validate.integer(value, what, hint=EXPRESSION_HINT)


def _pair(value, env: dict, what: str) -> tuple[int, int]:
    if isinstance(value, str) and "," in value:
        value = tuple(value.split(","))
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{what} must be a (row, col) pair, got {validate.show(value)}")
    return _scalar(value[0], env, f"{what} row"), _scalar(value[1], env, f"{what} col")


def store_form(form: MmaForm, elem_bytes: int) -> MmaForm:
    """The form whose accumulator has ``elem_bytes``-byte elements: an epilogue that converts f32
    accumulators to 16 bits stores them where the 16-bit accumulator of the same shape sits."""
    if form.fmt("C").storage_bits // 8 == elem_bytes:
        return form
    for g in FORMS.values():
        if g.shape == form.shape and g.fmt("C").storage_bits // 8 == elem_bytes:
            return g
    raise ValueError(f"no mma form of shape {form.shape_name} has {elem_bytes}-byte accumulators: the tile's "
                     f"elements must match operand C of {form.name} ({form.fmt('C').name})")


def build(form, operand, tile, stream_bytes: int, *, at=None, fragments=None, regmap=None, env=None,
          store=False) -> Fragments:
    """The fragments that ``stream_bytes`` bytes per lane of registers fill (see the module docstring)."""
    env = env or {}
    f = lookup(form)
    op = check_operand(operand)
    if store:
        if op not in ("C", "D"):
            raise ValueError(f"operand must be 'C' (the accumulator an epilogue stores), got {operand!r}")
        f = store_form(f, tile.elem_bytes)
        op = "C"
    elif op == "D":
        op = "C"            # D has C's fragment map
    bits = f.fmt(op).storage_bits
    if bits % 8:
        raise ValueError(f"operand {op} of {f.name} holds {bits}-bit {f.fmt(op).name} elements; the checker follows "
                         "whole bytes (a tile has no sub-byte elements)")
    esize = bits // 8
    if esize != tile.elem_bytes:
        raise ValueError(f"the tile holds {tile.elem_bytes}-byte {tile.dtype} elements, but operand {op} of "
                         f"{f.name} is {f.fmt(op).name} ({esize} bytes per element)")
    if stream_bytes % BANK_BYTES:
        raise ValueError(f"the instructions move {stream_bytes} bytes per lane, not whole 32-bit registers")
    nregs = f.nregs(op)
    total = stream_bytes // BANK_BYTES
    verb = "store" if store else "fill"
    if regmap is None:
        if total % nregs:
            raise ValueError(f"the instructions {verb} {total} registers per lane, but a fragment of operand {op} "
                             f"of {f.shape_name} has {nregs}: move whole fragments, or say which register is "
                             "which with " + validate.spell("regmap=[(fragment, register), ...]",
                                                            "--regmap FRAGMENT:REGISTER,... (e.g. 0:0,0:1)"))
        rmap = np.stack(np.divmod(np.arange(total), nregs), axis=1)
    else:
        rmap = _regmap(regmap, total, nregs, op)
    count = int(rmap[:, 0].max()) + 1
    shape = f.matrix_shape(op)
    if fragments is not None:
        if not isinstance(fragments, (list, tuple)) or not fragments:
            raise TypeError(f"fragments must be a list of (row, col) origins, got {validate.show(fragments)}")
        origins = [_pair(x, env, f"fragments[{i}]") for i, x in enumerate(fragments)]
        if len(origins) != count:
            raise ValueError(f"fragments gives {len(origins)} origins, but the registers fill {count} "
                             f"{op} fragment{'s' * (count > 1)}")
    else:
        r0, c0 = (0, 0) if at is None else _pair(at, env, "at")
        dr, dc = (shape[0], 0) if op == "A" else (0, shape[1])
        origins = [(r0 + i * dr, c0 + i * dc) for i in range(count)]
    for i, (r0, c0) in enumerate(origins):
        if r0 < 0 or c0 < 0 or r0 + shape[0] > tile.rows or c0 + shape[1] > tile.cols:
            raise ValueError(f"{op} fragment {i} ({shape[0]}x{shape[1]}) at tile({r0}, {c0}) does not fit in the "
                             f"{tile.rows}x{tile.cols} tile; say where the fragments sit with "
                             + validate.spell("at=(row, col) or fragments=[(row, col), ...]",
                                              "--at ROW,COL or one --fragment ROW,COL each"))
    rows, cols = f.coords(op)                                   # (32, nregs, epr)
    org = np.array(origins, np.int64)[rmap[:, 0]]              # (R, 2)
    r = org[None, :, None, 0] + rows[:, rmap[:, 1], :]
    c = org[None, :, None, 1] + cols[:, rmap[:, 1], :]
    want = (r * tile.cols + c).astype(np.int64)
    assert want.shape[:2] == (WARP_LANES, total)
    return Fragments(f, op, origins, rmap, want, tile.cols)


def _regmap(regmap, total: int, nregs: int, op: str) -> np.ndarray:
    if not isinstance(regmap, (list, tuple)):
        raise TypeError(f"regmap must be a list of (fragment, register) pairs, got {validate.show(regmap)}")
    if len(regmap) != total:
        raise ValueError(f"regmap names {len(regmap)} registers, but the instructions move {total} per lane")
    out = []
    for j, x in enumerate(regmap):
        if not isinstance(x, (tuple, list)) or len(x) != 2:
            raise TypeError(f"regmap[{j}] must be a (fragment, register) pair, got {validate.show(x)}")
        fr = validate.integer(x[0], f"regmap[{j}] fragment")
        rg = validate.integer(x[1], f"regmap[{j}] register", range(nregs), f"operand {op} has {nregs} registers")
        if fr < 0:
            raise ValueError(f"regmap[{j}]: fragment must be >= 0, got {fr}")
        out.append((fr, rg))
    seen: dict = {}
    for j, key in enumerate(out):
        if key in seen:
            raise ValueError(f"regmap[{seen[key]}] and regmap[{j}] both name fragment {key[0]} register {key[1]}")
        seen[key] = j
    count = max(fr for fr, _ in out) + 1
    missing = [(fr, rg) for fr in range(count) for rg in range(nregs) if (fr, rg) not in seen]
    if missing:
        raise ValueError(f"regmap leaves fragment {missing[0][0]} register {missing[0][1]} unfilled: the registers "
                         "must fill whole fragments")
    return np.array(out, np.int64)
