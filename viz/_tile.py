"""Where a matrix lives in shared memory, as the pictures read it: logical (row, col) -> byte address.

``placement(tile)`` wraps a ``fragsim.Tile`` -- or any object with its interface: ``rows``,
``cols``, ``elem_bytes`` (or ``dtype``) and a vectorized ``offset(row, col)`` -- with the few
questions the pictures ask (every element's address, which element a byte belongs to).
``placement(rows=..., cols=..., dtype=..., pitch=..., swizzle=..., base=...)`` makes the Tile
first, so that its checks (pitch, bijection, alignment) are the Tile's.
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import BANK_BYTES, NUM_BANKS


class Placement:
    """A Tile as the pictures use it."""

    def __init__(self, tile):
        self.tile = tile
        self.rows, self.cols = int(tile.rows), int(tile.cols)
        self.esize = int(tile.elem_bytes)
        self.pitch = int(getattr(tile, "pitch", self.cols * self.esize))
        self.order = getattr(tile, "order", "row")
        name = f"{self.rows}x{self.cols} {getattr(tile, 'dtype', '')}".rstrip()
        layout = getattr(tile, "layout_name", None)
        self.name = f"{name}, {layout}" if layout and layout != "none" else name

    def offsets(self, r, c) -> np.ndarray:
        """Byte addresses of the elements (r, c) (broadcast integer arrays)."""
        r, c = np.broadcast_arrays(np.asarray(r, np.int64), np.asarray(c, np.int64))
        return np.asarray(self.tile.offset(r, c), dtype=np.int64)

    def grid(self) -> np.ndarray:
        """Byte address of every element, (rows, cols)."""
        r, c = np.mgrid[0:self.rows, 0:self.cols]
        return self.offsets(r, c)

    def banks(self) -> np.ndarray:
        return (self.grid() // BANK_BYTES) % NUM_BANKS

    def by_address(self) -> dict:
        """Byte address of each element's first byte -> (row, col)."""
        return {int(a): (int(r), int(c)) for (r, c), a in np.ndenumerate(self.grid())}


def placement(tile=None, **spec) -> Placement | None:
    """A ``Placement`` of a Tile-like object, or of ``fragsim.Tile(**spec)``; None for neither."""
    if tile is None:
        if not spec:
            return None
        from fragsim.layout.tile import Tile
        return Placement(Tile(**spec))
    if isinstance(tile, Placement):
        return tile
    if not (hasattr(tile, "rows") and hasattr(tile, "cols") and callable(getattr(tile, "offset", None))
            and hasattr(tile, "elem_bytes")):
        raise TypeError(f"tile must be a fragsim.Tile (rows, cols, elem_bytes and offset(row, col)), "
                        f"got {type(tile).__name__}")
    return Placement(tile)
