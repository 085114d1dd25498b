"""The TMA view (viz/tma.py): what it shows is the model's placement, read back from the SVG text."""

import numpy as np

from fragsim.layout.swizzle import Swizzle
from fragsim.tma import TensorMap
from fragsim.viz._figure import svg_text
from fragsim.viz.tma import draw_tma, tma_layout

T = TensorMap("f16", (64, 40), (128,), (64, 12), swizzle="128B", oob_fill="nan")


def test_each_chunk_lands_at_the_swizzled_address_of_its_dense_place():
    """Row r, chunk c of the box: Swizzle<3,4,3>(dst + 128 r + 16 c) (a 128-byte inner dimension)."""
    addr, inside, rows, cols = tma_layout(T, (0, 32), 384)
    r, c = np.mgrid[0:12, 0:8]
    assert np.array_equal(addr, Swizzle(3, 4, 3)(384 + 128 * r + 16 * c))
    assert np.array_equal(inside[:8], np.full((8, 8), 8)) and not inside[8:].any()      # rows 40.. are outside
    assert list(rows[:, 0]) == list(range(32, 44)) and list(cols) == list(range(0, 64, 8))


def test_each_shared_slot_names_the_box_chunk_written_there():
    """dst 0x180 is row 3 of the 1024-byte pattern: chunk 0 of box row 0 goes to slot 0 ^ 3 = 3."""
    svg = svg_text(draw_tma(T, (0, 32), 384))
    assert 'id="smem-3-3"' in svg and svg.count(">0,0<") == 2          # the box and the memory slot
    assert "dst 0x180 starts at pattern row 3" in svg
