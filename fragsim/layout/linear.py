"""One representation for every layout: a linear map over GF(2) (as Triton's LinearLayout).

A ``LinearLayout`` maps the bits of named inputs (``lane``, ``reg``, ``elem`` …) to named
outputs (``row``, ``col`` …).  Each input bit has a basis vector: the output it produces
when only that bit is set; any input maps to the XOR of the basis vectors of its set bits.
Every PTX fragment map, the ldmatrix/stmatrix data movement, and CUTLASS swizzles are of
this kind, so the instruction table holds nothing but basis vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from fragsim.validate import broadcast_shape, working_memory


@dataclass(frozen=True)
class LinearLayout:
    """bases[in_dim] = one tuple per input bit, each a tuple of outputs in ``out_dims`` order."""

    bases: tuple[tuple[str, tuple[tuple[int, ...], ...]], ...]
    out_dims: tuple[str, ...]

    @staticmethod
    def of(out_dims: Sequence[str], **bases: Sequence[Sequence[int]]) -> "LinearLayout":
        out_dims = tuple(out_dims)
        for name, vecs in bases.items():
            for v in vecs:
                if len(v) != len(out_dims):
                    raise ValueError(f"basis of input {name!r} must have {len(out_dims)} outputs "
                                     f"({', '.join(out_dims)}), got {v}")
        return LinearLayout(tuple((k, tuple(tuple(int(x) for x in v) for v in vecs))
                                  for k, vecs in bases.items()), out_dims)

    @property
    def in_dims(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.bases)

    def in_size(self, dim: str) -> int:
        return 1 << len(dict(self.bases)[dim])

    def in_shape(self) -> tuple[int, ...]:
        return tuple(1 << len(v) for _, v in self.bases)

    def out_size(self, dim: str) -> int:
        """Size of an output: one more than the largest value it takes (a power of two)."""
        j = self.out_dims.index(dim)
        acc = 0
        for _, vecs in self.bases:
            for v in vecs:
                acc |= v[j]
        return 1 << int(acc).bit_length()

    def apply(self, **inputs) -> tuple[np.ndarray, ...]:
        """Map integer arrays (broadcast together) to a tuple of output arrays."""
        arrays = {k: np.asarray(inputs[k], dtype=np.int64) for k in self.in_dims}
        shape = broadcast_shape([a.shape for a in arrays.values()], list(arrays))
        outs = [np.zeros(shape, dtype=np.int64) for _ in self.out_dims]
        for name, vecs in self.bases:
            x = arrays[name]
            for bit, vec in enumerate(vecs):
                on = (x >> bit) & 1
                for j, v in enumerate(vec):
                    if v:
                        outs[j] ^= on * v
        return tuple(outs)

    def table(self) -> tuple[np.ndarray, ...]:
        """Outputs for every input, as arrays shaped ``in_shape()`` (inputs in declared order)."""
        n = int(np.prod(self.in_shape(), dtype=object))
        # the input grids and the outputs, int64, and a temporary of apply's
        working_memory(8 * n * (len(self.in_dims) + len(self.out_dims) + 2),
                       f"LinearLayout.table: {' x '.join(map(str, self.in_shape()))} = {n:,} inputs",
                       "apply() the layout to the inputs needed")
        grids = np.meshgrid(*(np.arange(n) for n in self.in_shape()), indexing="ij")
        return self.apply(**dict(zip(self.in_dims, grids)))

    def matrix(self) -> np.ndarray:
        """The GF(2) matrix: one column per input bit, one row per output bit."""
        widths = [self.out_size(d).bit_length() - 1 for d in self.out_dims]
        cols = []
        for _, vecs in self.bases:
            for vec in vecs:
                col: list[int] = []
                for v, w in zip(vec, widths):
                    col.extend((v >> i) & 1 for i in range(w))
                cols.append(col)
        return np.array(cols, dtype=np.uint8).T if cols else np.zeros((sum(widths), 0), np.uint8)

    def is_bijective(self) -> bool:
        m = self.matrix()
        return m.shape[0] == m.shape[1] and gf2_rank(m) == m.shape[0]

    def compose_output(self, dim: str, other: "LinearLayout") -> "LinearLayout":
        """Feed output ``dim`` through ``other`` (a layout with one input named ``dim``)."""
        j = self.out_dims.index(dim)
        new_out = self.out_dims[:j] + other.out_dims + self.out_dims[j + 1:]
        new_bases = {}
        for name, vecs in self.bases:
            nv = []
            for vec in vecs:
                sub = other.apply(**{other.in_dims[0]: vec[j]})
                nv.append(vec[:j] + tuple(int(s) for s in sub) + vec[j + 1:])
            new_bases[name] = nv
        return LinearLayout.of(new_out, **new_bases)

    def describe(self) -> str:
        parts = []
        for name, vecs in self.bases:
            parts.append(f"{name}: " + ", ".join("(" + ",".join(map(str, v)) + ")" for v in vecs))
        return f"LinearLayout -> ({', '.join(self.out_dims)}) | " + "; ".join(parts)


def gf2_rank(m: np.ndarray) -> int:
    m = (np.array(m, dtype=np.uint8) & 1).copy()
    rank = 0
    rows, cols = m.shape
    for c in range(cols):
        pivot = next((r for r in range(rank, rows) if m[r, c]), None)
        if pivot is None:
            continue
        m[[rank, pivot]] = m[[pivot, rank]]
        for r in range(rows):
            if r != rank and m[r, c]:
                m[r] ^= m[rank]
        rank += 1
    return rank


def from_bit_positions(out_dims: Sequence[str], spec: Mapping[str, Sequence[str]]) -> LinearLayout:
    """Build a layout from bit names: ``{"lane": ["col1", "col2", "row0", ...]}``.

    Each entry names the output bit an input bit drives (``"row3"`` = bit 3 of ``row``),
    which is how the PTX ISA formulas read (``row = groupID + 8*i`` …).
    """
    out_dims = tuple(out_dims)
    bases = {}
    for name, bits in spec.items():
        vecs = []
        for b in bits:
            dim = b.rstrip("0123456789")
            pos = int(b[len(dim):])
            vec = [0] * len(out_dims)
            vec[out_dims.index(dim)] = 1 << pos
            vecs.append(vec)
        bases[name] = vecs
    return LinearLayout.of(out_dims, **bases)
