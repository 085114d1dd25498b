"""Which layout the user's addresses assume: other swizzles and pitches of the same matrix.

The address a lane should give follows from the elements its bytes must be and the tile's layout.
Given the user's addresses, ``solve_xor`` finds the XOR swizzle (a GF(2)-linear map on byte
offsets, ``fragsim.XorMap``; every CUTLASS ``Swizzle<B,M,S>`` is one) under which the same element
lands at each of them, if any: the search over the swizzle space is a linear solve, whose answer
is the smallest map that fits (bits the data does not constrain pass through unchanged).
"""

from __future__ import annotations

import numpy as np

from fragsim.layout.swizzle import Swizzle
from fragsim.layout.tile import describe_swizzle
from fragsim.layout.xor_map import XorMap

#: Pitches tried when the addresses fit none of the tile's own: up to this many 16-byte paddings.
PADDING_STEPS = 8
PADDING_BYTES = 16


def line_pos(tile, elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(line, position in the line) of row-major element indices."""
    r, c = np.divmod(elements, tile.cols)
    return (r, c) if tile.order == "row" else (c, r)


def unswizzled(tile, elements: np.ndarray, pitch: int) -> np.ndarray:
    """Byte offsets of elements with ``pitch`` bytes between lines and no swizzle."""
    line, pos = line_pos(tile, elements)
    return line * pitch + pos * tile.elem_bytes


def solve_xor(lin: np.ndarray, out: np.ndarray) -> XorMap | None:
    """The XOR map X with X(lin[i]) == out[i] for every i (identity on the bits the pairs leave
    free), or None when no GF(2)-linear map fits.  ``lin``, ``out``: non-negative int arrays."""
    pairs = np.unique(np.stack([lin, out], 1), axis=0)
    basis: dict[int, tuple[int, int]] = {}             # pivot bit -> (vector, image)
    for v, x in ((int(a), int(b)) for a, b in pairs):
        while v:
            p = v.bit_length() - 1
            if p not in basis:
                basis[p] = (v, x)
                break
            bv, bx = basis[p]
            v, x = v ^ bv, x ^ bx
        if v == 0 and x != 0:
            return None
    bits = max([int(lin.max(initial=0)).bit_length(), int(out.max(initial=0)).bit_length(), 1])

    def image(v: int) -> int:
        x = 0
        while v:
            p = v.bit_length() - 1
            if p in basis:
                bv, bx = basis[p]
                v, x = v ^ bv, x ^ bx
            else:
                v, x = v ^ (1 << p), x ^ (1 << p)
        return x

    return XorMap([image(1 << b) for b in range(bits)])


def swizzle_like(x: XorMap) -> bool:
    """An XOR swizzle as kernels write them: every bit keeps itself and XORs in bits all on one side
    of it (all higher, as CUTLASS's Swizzle<B,M,S> with S > 0, or all lower).  A bit permutation or
    a map that XORs a bit with bits on both sides is a coincidence of the data, not a layout."""
    if not all(v >> i & 1 for i, v in enumerate(x.images)):
        return False
    terms = [(t, s) for t, srcs in x.terms().items() for s in srcs]
    return all(s > t for t, s in terms) or all(s < t for t, s in terms)


def name(x) -> str:
    """A swizzle as users write it: Swizzle<B,M,S> when it is one, else the XorMap."""
    if x is None:
        return "no swizzle"
    if isinstance(x, XorMap):
        if x.is_identity:
            return "no swizzle"
        sw = x.swizzle()
        return repr(sw) if sw is not None else repr(x)
    if isinstance(x, Swizzle):
        return repr(x)
    return f"the swizzle function {describe_swizzle(x)}"


def as_swizzle(x: XorMap):
    """The value for ``Tile(swizzle=...)``: None, a Swizzle where the map is one, else the XorMap."""
    if x.is_identity:
        return None
    return x.swizzle() or x


def candidate_pitches(tile) -> list[int]:
    """Pitches a hand-written address may have used instead of the tile's: no padding, 16-byte
    paddings, the pitch counted in elements instead of bytes (or the other way), twice or half
    (a pitch shorter than a line is no layout, but a hand-written address can still use one)."""
    es = tile.elem_bytes
    line = tile.line_bytes
    c = [line] + [line + PADDING_BYTES * k for k in range(1, PADDING_STEPS + 1)]
    c += [tile.pitch * es, tile.pitch // es, 2 * tile.pitch, tile.pitch // 2, 2 * line]
    out = []
    for p in c:
        if p > 0 and p % es == 0 and p != tile.pitch and p not in out:
            out.append(p)
    return out
