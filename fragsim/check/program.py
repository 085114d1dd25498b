"""The user's instructions, evaluated: each item ``(op, addresses, ...)`` becomes 32 lane addresses.

An address is 32 integers, a C address expression (``fragsim.search.addrexpr``: C semantics, let-bindings,
variables) or a Python callable of the lane (``f(lane)``, or ``f(lane, **variables)`` for the
variables it names).  Loads and stores take one value per variable; a copy by a whole CTA may give
a variable several values (``range(4)``) and ``threads``: the copy is then one instruction per
combination, in order (the first variable outermost, the warp innermost), and the expressions may
read ``warp`` and ``tid = 32 * warp + lane``.
"""

from __future__ import annotations

import inspect
import itertools
import math
import numbers
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from fragsim import validate
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions.shared_op import SharedOp
from fragsim.instructions.shared_ops import parse_shared_op

LANES = np.arange(WARP_LANES, dtype=np.int64)
MAX_CTA_THREADS = 1024          # the most threads a CUDA block has
MAX_INSTRUCTIONS = 1 << 14      # a CTA's program checked instruction by instruction, not a whole kernel
INT64 = (-(1 << 63), (1 << 63) - 1)

#: Which instruction families each check takes.
FAMILIES = {
    "load": ("ldmatrix", "ld.shared"),
    "store": ("stmatrix", "st.shared"),
    "copy": ("cp.async", "st.shared"),
}
NOUN = {"load": "load", "store": "store", "copy": "copy"}


@dataclass
class Instr:
    """One warp instruction of the user's code, with its lanes' addresses."""

    op: SharedOp
    addrs: np.ndarray                  # int64 (32,) byte addresses in shared memory
    mask: np.ndarray                   # bool (32,) lanes that execute it
    label: str                         # "load 0", "copy 5 (pass=1 warp=1)"
    text: str                          # the addresses as written (for reports)
    src: np.ndarray | None = None      # copies: each lane's global source byte offset
    values: dict = field(default_factory=dict)

    @property
    def address_lanes(self) -> np.ndarray:
        """bool (32,): the lanes whose address the instruction uses (ldmatrix.x2: lanes 0-15)."""
        return self.mask & (LANES < self.op.address_lanes)

    @property
    def nbytes(self) -> int:
        """Bytes each lane moves between its registers (or its global source) and shared memory."""
        return 4 * self.op.num if self.op.family in ("ldmatrix", "stmatrix") else self.op.bytes_per_addr

    def describe(self) -> str:
        return f"{self.label} ({self.op.name})"


def _values(value, what: str) -> np.ndarray:
    a = validate.array(value, what)
    if a.dtype == bool or a.dtype.kind not in "ui":
        got = validate.show(value) if a.dtype.kind == "O" else f"dtype {a.dtype}"
        raise TypeError(f"{what} must be integers, got {got}")
    if a.dtype == np.uint64 and a.size and int(a.max()) > INT64[1]:
        raise ValueError(f"{what}: {int(a.max())} does not fit in 64-bit signed (long)")
    return a.astype(np.int64)


def lane_values(value, env: dict, what: str) -> np.ndarray:
    """int64 (32,): an expression, a callable of the lane or integers, for one instruction."""
    if isinstance(value, str):
        from fragsim.search.addrexpr import AddrExprError

        try:
            out = _parse(value).evaluate(LANES, **env)
        except AddrExprError as e:
            raise AddrExprError(f"{what}: {e}") from None
        return np.broadcast_to(out, (WARP_LANES,)).astype(np.int64)
    if callable(value):
        out = _call(value, env, what)
    else:
        out = value
    a = _values(out, what)
    if a.ndim == 0:
        a = np.broadcast_to(a, (WARP_LANES,))
    if a.shape != (WARP_LANES,):
        raise ValueError(f"{what}: expected 32 values (one per lane), got shape {a.shape}")
    return a.astype(np.int64)


@lru_cache(maxsize=256)
def _parse(src: str):
    """An address expression parsed once for all the instructions (and checks) that use it."""
    from fragsim.search.addrexpr import parse

    return parse(src)


def _call(fn, env: dict, what: str):
    try:
        params = dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):     # a builtin without a signature: the lane alone
        params = {}
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        kw = dict(env)
    else:
        kw = {k: v for k, v in env.items() if k in params}
    try:
        return fn(LANES.copy(), **kw)
    except Exception as e:   # the user's function: its failure in one line
        raise TypeError(f"{what}: the callable failed on the lanes 0..31 ({type(e).__name__}: {e})") from None


def lane_mask(value, env: dict, what: str) -> np.ndarray:
    """bool (32,): None (all lanes), an int bit mask, a C condition in ``lane`` or 32 booleans."""
    if value is None:
        return np.ones(WARP_LANES, bool)
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        v = int(value)
        if not 0 <= v < 1 << WARP_LANES:
            raise ValueError(f"{what}: {validate.hex_int(v)} does not fit in 32 bits (bit i = lane i)")
        return ((v >> LANES) & 1).astype(bool)
    a = np.asarray(value) if not isinstance(value, str) and not callable(value) else None
    if a is not None and a.dtype == bool:
        if a.shape != (WARP_LANES,):
            raise ValueError(f"{what}: expected 32 booleans (one per lane), got shape {a.shape}")
        return a.copy()
    return lane_values(value, env, what) != 0


def _one_value(name, v) -> int:
    return validate.integer(v, f"variable {name}", hint="one value: check_load and check_store check one set "
                          "of fragments; call them once per value to check several")


def _variable_sets(variables, several: bool) -> list[dict]:
    if variables is None:
        return [{}]
    if not isinstance(variables, dict):
        raise TypeError(f"variables must be a dict of name -> value, got {type(variables).__name__}")
    names, values = [], []
    for k, v in variables.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise ValueError(f"variables: {k!r} is not a variable name")
        if k == "lane":
            raise ValueError("variables: lane is the lane index 0..31 and cannot be set")
        if several and not isinstance(v, numbers.Integral) and hasattr(v, "__iter__"):
            vals = [validate.integer(x, f"variable {k}") for x in itertools.islice(v, MAX_INSTRUCTIONS + 1)]
            if not vals:
                raise ValueError(f"variables: {k} has no values")
            if len(vals) > MAX_INSTRUCTIONS:
                raise ValueError(f"variables: {k} has more than {MAX_INSTRUCTIONS} values (one instruction each)")
        else:
            vals = [_one_value(k, v) if not several else validate.integer(v, f"variable {k}")]
        names.append(k)
        values.append(vals)
    if math.prod(len(v) for v in values) > MAX_INSTRUCTIONS:
        raise ValueError(f"variables: {' x '.join(str(len(v)) for v in values)} combinations of "
                         f"{', '.join(names)} make more than {MAX_INSTRUCTIONS} instructions")
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def _items(items, what: str) -> list:
    if isinstance(items, tuple) and items and isinstance(items[0], (str, SharedOp)):
        items = [items]           # one (op, addrs) pair given bare
    if not isinstance(items, (list, tuple)) or not items:
        raise TypeError(f"{what} must be a non-empty list of (op, addresses) pairs, got {validate.show(items)}")
    return list(items)


def instructions(items, kind: str, variables=None, threads=None) -> list[Instr]:
    """The user's instructions, one ``Instr`` each: loads/stores ``(op, addrs[, mask])``, copies
    ``(op, dst[, src[, mask]])`` expanded over every combination of the variables and warps."""
    what = {"load": "loads", "store": "stores", "copy": "copies"}[kind]
    items = _items(items, what)
    sets = _variable_sets(variables, several=kind == "copy")
    warps: list[int | None] = [None]
    if threads is not None:
        n = validate.integer(threads, "threads", hint="threads of the CTA that runs the copy")
        if n < WARP_LANES or n % WARP_LANES or n > MAX_CTA_THREADS:
            raise ValueError(f"threads must be a positive multiple of {WARP_LANES} (whole warps) up to "
                             f"{MAX_CTA_THREADS} (a CTA), got {n}")
        if any(k in ("warp", "tid") for k in sets[0]):
            raise ValueError("variables: warp and tid come from threads (tid = 32 * warp + lane); do not set them too")
        warps = list(range(n // WARP_LANES))
    total = len(items) * len(sets) * len(warps)
    if total > MAX_INSTRUCTIONS:
        raise ValueError(f"{what}: {len(items)} item(s) x {len(sets)} combination(s) of the variables x {len(warps)} "
                         f"warp(s) = {total:,} instructions; the limit is {MAX_INSTRUCTIONS:,} (a CTA's program, "
                         "checked instruction by instruction)")
    out: list[Instr] = []
    for j, item in enumerate(items):
        if not isinstance(item, (tuple, list)):
            raise TypeError(f"{what}[{j}] must be a tuple (op, addresses{', src' if kind == 'copy' else ''}"
                            f"[, mask]), got {validate.show(item)}")
        width = 4 if kind == "copy" else 3
        if not 2 <= len(item) <= width:
            raise ValueError(f"{what}[{j}] must be (op, addresses{'[, src]' if kind == 'copy' else ''}[, mask]), "
                             f"got {len(item)} values")
        op = parse_shared_op(item[0])
        if op.family not in FAMILIES[kind]:
            raise ValueError(f"{what}[{j}]: {op.name} is not a {NOUN[kind]}; {what} take "
                             + " or ".join(FAMILIES[kind]))
        addr = item[1]
        src = item[2] if kind == "copy" and len(item) > 2 else None
        mask = item[-1] if len(item) == width else None
        if mask is not None and op.family in ("ldmatrix", "stmatrix"):
            raise ValueError(f"{what}[{j}]: {op.name} is .sync.aligned, every lane of the warp executes it (no mask)")
        for values in sets:
            for w in warps:
                env = dict(values)
                if w is not None:
                    env["warp"] = w
                    env["tid"] = WARP_LANES * w + LANES
                k = len(out)
                shown = {a: b for a, b in env.items() if a != "tid"}
                label = f"{NOUN[kind]} {k}"
                if shown and kind == "copy":
                    label += " (" + " ".join(f"{a}={b}" for a, b in shown.items()) + ")"
                where = f"{label} ({op.name})"
                ins = Instr(op, lane_values(addr, env, f"{where} addresses"),
                            lane_mask(mask, env, f"{where} mask"), label,
                            addr if isinstance(addr, str) else validate.show(addr), values=shown)
                if src is not None:
                    ins.src = lane_values(src, env, f"{where} source")
                out.append(ins)
    return out
