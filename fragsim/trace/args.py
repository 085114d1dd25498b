"""Which of a kernel's arguments are A, B and D, for ``fragsim.trace_fragments``
(``fragsim.trace``): the ``a``/``b``/``d`` specs (``"1.T"``, ``"2:64x64"``) read against the
arguments, and the GEMM's shape they give.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from fragsim.ptx.memory import Buffer

from .ids import CODES

__all__ = ["MatrixArg", "parse_matrix", "gemm_shape", "array_of"]


_SPEC = re.compile(r"^\s*(\d+)\s*(\.T)?\s*(?::\s*(\d+)\s*[xX]\s*(\d+))?\s*$")


@dataclass(frozen=True)
class MatrixArg:
    """One matrix of the GEMM among the kernel's arguments: ``args[arg]`` holds it, transposed when
    ``transposed`` (the array is ``rows x cols`` of the transpose); ``rows x cols`` is the matrix."""

    role: str
    arg: int
    transposed: bool
    rows: int
    cols: int
    dtype: np.dtype

    @property
    def stored(self) -> tuple[int, int]:
        return (self.cols, self.rows) if self.transposed else (self.rows, self.cols)


def array_of(v):
    """A kernel argument's array (a ``Buffer``'s own), any other argument as it is."""
    return v.array if isinstance(v, Buffer) else v


def parse_matrix(spec, role: str, args: list) -> MatrixArg:
    """``spec``: the argument's position (an int), or ``"POS"``, ``"POS.T"`` (the array holds the
    matrix transposed), either with ``":ROWSxCOLS"`` (the array's shape as stored, for a 1-D array)."""
    what = role.lower()
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        m = _SPEC.match(str(int(spec)))
    elif isinstance(spec, str):
        m = _SPEC.match(spec)
    else:
        raise TypeError(f"{what} must be the position of {role}'s array among args (an int) or a spec such as "
                        f"'1.T' or '2:64x64', got {type(spec).__name__}")
    if m is None:
        raise ValueError(f"{what} {spec!r}: expected POS, POS.T (the array holds {role} transposed) or either with "
                         ":ROWSxCOLS (the array's shape as stored), e.g. '1.T' or '0:64x128'")
    pos, trans = int(m.group(1)), bool(m.group(2))
    if pos >= len(args):
        raise ValueError(f"{what} {spec!r}: args has {len(args)} values, no position {pos}")
    arr = array_of(args[pos])
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{what} {spec!r}: args[{pos}] is a {type(arr).__name__}, not an array")
    if arr.dtype.itemsize * 8 not in CODES and role != "D":
        raise ValueError(f"{what}: args[{pos}] holds {arr.dtype.itemsize}-byte elements; tracing takes 1, 2, 4 or "
                         "8-byte elements")
    if m.group(3):
        shape = (int(m.group(3)), int(m.group(4)))
        if shape[0] * shape[1] > arr.size:
            raise ValueError(f"{what} {spec!r}: args[{pos}] has {arr.size} elements, fewer than {shape[0]}x{shape[1]}")
    elif arr.ndim == 2:
        shape = arr.shape
    else:
        raise ValueError(f"{what} {spec!r}: args[{pos}] is {arr.ndim}-D; give its shape as stored, "
                         f"e.g. '{pos}{'.T' if trans else ''}:ROWSxCOLS'")
    rows, cols = (shape[1], shape[0]) if trans else shape
    return MatrixArg(role, pos, trans, int(rows), int(cols), arr.dtype)


def gemm_shape(ma: MatrixArg, mb: MatrixArg, md: MatrixArg) -> tuple[int, int, int]:
    M, K = ma.rows, ma.cols
    if mb.rows != K:
        raise ValueError(f"b: B is {mb.rows}x{mb.cols} but A is {M}x{K}: B must have K = {K} rows "
                         "(a B stored N x K is '.T')")
    N = mb.cols
    if (md.rows, md.cols) != (M, N):
        raise ValueError(f"d: D is {md.rows}x{md.cols}, but A ({M}x{K}) times B ({K}x{N}) is {M}x{N}")
    if len({ma.arg, mb.arg, md.arg}) < 3:
        raise ValueError("a, b, d: three different arguments")
    return M, N, K
