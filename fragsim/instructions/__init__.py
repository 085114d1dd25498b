"""The instruction table: the single source of truth for every instruction fragsim models.

``lookup(form)`` turns a PTX spelling into an ``MmaForm``; ``FORMS`` lists them all.  The
simulator, the text maps, the GPU kernels and the docs all read these objects.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fragsim import validate
from fragsim.facts.formats import FloatFormat, IntFormat, get_format
from fragsim.layout.linear import LinearLayout
from . import ptx_mma
from .mma import ALIASES, MMA_FORMS
from .movmatrix import REGISTER_OPS, RegisterOp  # noqa: F401  (re-exported)
from .shared_op import SharedOp  # noqa: F401  (re-exported)
from .shared_ops import SHARED_OPS, parse_shared_op  # noqa: F401  (re-exported)

PREFIX = "mma.sync.aligned."
OPERANDS = ("A", "B", "C", "D")


def invert_coords(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]):
    """A fragment map (thread, reg, elem) -> (row, col) turned around: for each (row, col) of the
    matrix the (thread, reg, elem) holding it, the first register where several do."""
    r, c = shape
    T, R, E = np.meshgrid(np.arange(rows.shape[0]), np.arange(rows.shape[1]), np.arange(rows.shape[2]),
                          indexing="ij")
    flat = (rows * c + cols).ravel()
    pos = np.empty(r * c, np.int64)
    # written last to first (fresh arrays: the order NumPy writes them in), so that the first
    # register holding an element is the one kept
    pos[flat[::-1].copy()] = np.arange(flat.size - 1, -1, -1)
    return tuple(g.ravel()[pos].reshape(r, c) for g in (T, R, E))


@dataclass(frozen=True)
class MmaForm:
    name: str                       # "m16n8k16.row.col.f32.bf16.bf16.f32"
    shape: tuple[int, int, int]     # (M, N, K)
    types: dict = field(hash=False)
    layouts: dict = field(hash=False)
    min_cc: int = 80                # lowest compute capability (major*10 + minor) that has it (PTX ISA)
    sass: str = "HMMA"              # the SASS mnemonic it compiles to
    modifiers: tuple = ()           # PTX modifiers that change the arithmetic: ("satfinite",), ("xor", "popc")
    groups: int = 1                 # independent products per warp (m8n8k4 .f16: 4 quad pairs), stacked by rows

    @property
    def ptx(self) -> str:
        return PREFIX + self.name

    @property
    def shape_name(self) -> str:
        return self.name.split(".")[0]

    def fmt(self, operand: str) -> FloatFormat | IntFormat:
        return get_format(self.types[check_operand(operand)])

    def layout(self, operand: str) -> LinearLayout:
        return self.layouts[check_operand(operand)]

    def matrix_shape(self, operand: str) -> tuple[int, int]:
        """Rows and columns of the operand's matrix; a form of several products per warp (``groups``)
        stacks their matrices along rows (m8n8k4 .f16: quad pair q's A is rows 8q..8q+7)."""
        m, n, k = self.shape
        r, c = {"A": (m, k), "B": (k, n), "C": (m, n), "D": (m, n)}[check_operand(operand)]
        return self.groups * r, c

    def elems_per_reg(self, operand: str) -> int:
        return max(1, 32 // self.fmt(operand).storage_bits)

    def words_per_elem(self, operand: str) -> int:
        """uint32 registers one element spans: 2 for f64 (low word first), else 1."""
        return max(1, self.fmt(operand).storage_bits // 32)

    def nregs(self, operand: str) -> int:
        """uint32 registers per lane (an f64 operand register counts as two)."""
        return self.layout(operand).in_size("reg") * self.words_per_elem(operand)

    @cached_property
    def _coords(self):
        out = {}
        for op in OPERANDS:
            lay = self.layouts[op]
            rows, cols = lay.table()  # (32, layout registers, epr)
            w = self.words_per_elem(op)
            if w > 1:  # each word of a wide element holds (a part of) that element
                rows, cols = np.repeat(rows, w, axis=1), np.repeat(cols, w, axis=1)
            # Shared by every caller (pack, unpack, the kernel's index maps): read-only, so
            # that no caller can corrupt the others.
            rows.setflags(write=False)
            cols.setflags(write=False)
            out[op] = (rows, cols)
        return out

    def coords(self, operand: str) -> tuple[np.ndarray, np.ndarray]:
        """(row, col) held by each (lane, register, half): two read-only int arrays (32, nregs, epr)."""
        return self._coords[check_operand(operand)]

    def owner(self, operand: str):
        """Inverse map: for each (row, col) of the matrix the (lane, reg, half) holding it
        (for an f64 element, its low word's register)."""
        return invert_coords(*self.coords(operand), self.matrix_shape(operand))

    def element_name(self, operand: str, reg: int, half: int) -> str:
        """PTX's name for the element: a0..a7, b0.., c0.., d0..."""
        op = check_operand(operand)
        epr = self.elems_per_reg(op)
        r = validate.integer(reg, "reg", range(self.nregs(op)), f"operand {op} of {self.name}")
        h = validate.integer(half, "half", range(epr), f"elements per register of operand {op}")
        return f"{op.lower()}{r // self.words_per_elem(op) * epr + h}"

    def __str__(self) -> str:
        return self.ptx

    def _repr_png_(self):   # Jupyter: the combined fragment map (matplotlib loads only here)
        from fragsim import display
        return display.png(self)

    def _repr_svg_(self):
        from fragsim import display
        return display.svg(self)


FORMS: dict[str, MmaForm] = {f["name"]: MmaForm(**f) for f in MMA_FORMS}


def check_operand(operand) -> str:
    op = str(operand).upper()
    if op not in OPERANDS:
        raise ValueError(f"operand must be one of A, B, C, D; got {operand!r}")
    return op


def _refusal(tokens: list[str], spelled: str) -> str:
    """Why a spelling is not in the table: a PTX form fragsim does not model, or not PTX."""
    return ptx_mma.refusal(tokens, spelled, FORMS)


def lookup(form) -> MmaForm:
    """A PTX mma spelling (with or without ``mma.sync.aligned.``) -> its ``MmaForm``."""
    if isinstance(form, MmaForm):
        return form
    if not isinstance(form, str):
        raise TypeError(f"form must be a PTX mma spelling (str), got {type(form).__name__}")
    s = validate.name_length(form, "form").strip().lower()
    for i, ch in enumerate(s):
        if not (ch.isascii() and (ch.isalnum() or ch in "._:")):
            pos = i + len(form) - len(form.lstrip())
            raise ValueError(f"form {form!r}: character {ch!r} (U+{ord(ch):04X} {unicodedata.name(ch, '')}) "
                             f"at position {pos} cannot be part of a PTX spelling (letters, digits, '.', '_', ':')")
    for pre in (PREFIX, "mma.sync.", "mma."):
        if s.startswith(pre):
            s = s[len(pre):]
            break
    parts = s.split(".")
    if len(parts) == 5:  # "m16n8k16.f32.f16.f16.f32": .row.col is the only layout these shapes take
        s = ".".join(parts[:1] + ["row", "col"] + parts[1:])
    s = ALIASES.get(s, s)
    if s in FORMS:
        return FORMS[s]
    raise ValueError(_refusal(s.split("."), form.strip()))
