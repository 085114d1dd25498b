"""Colours shared by every picture.

Lanes: 32 distinguishable colours, lane 4g+t a shade of group g, so the four lanes of a PTX
"group" (groupID = lane >> 2) read as one family and threadID_in_group = lane % 4 as its shade.
Banks: the same idea over the 32 shared-memory banks: the four banks of one 16-byte chunk (one
ldmatrix row, one 128-bit access) share a hue, so a 16-byte access reads as one colour family.
"""

from __future__ import annotations

import colorsys

import numpy as np

from fragsim.facts.hardware import BANK_BYTES, MATRIX_ROW_BYTES, NUM_BANKS, WARP_LANES

LANE_GROUP = 4                                   # lanes per PTX thread group
BANKS_PER_CHUNK = MATRIX_ROW_BYTES // BANK_BYTES  # banks one 16-byte chunk covers

# Eight hues, ordered so that neighbours (lane groups 0/1, bank chunks 0/1) differ strongly.
_HUES = (0.58, 0.08, 0.33, 0.92, 0.15, 0.75, 0.48, 0.0)


def lane_color(lane: int) -> tuple[float, float, float]:
    group, tig = divmod(int(lane) % WARP_LANES, LANE_GROUP)
    light = (0.80, 0.70, 0.60, 0.50)[tig] if group % 2 == 0 else (0.84, 0.74, 0.64, 0.54)[tig]
    return colorsys.hls_to_rgb(_HUES[group], light, 0.62)


def bank_color(bank: int) -> tuple[float, float, float]:
    chunk, sub = divmod(int(bank) % NUM_BANKS, BANKS_PER_CHUNK)
    return colorsys.hls_to_rgb((_HUES[chunk] + 0.04) % 1.0, (0.52, 0.62, 0.72, 0.82)[sub], 0.55)


#: (32, 3) arrays, for vectorized colouring of large grids.
LANE_RGB = np.array([lane_color(i) for i in range(WARP_LANES)])
BANK_RGB = np.array([bank_color(i) for i in range(NUM_BANKS)])

#: Colours with a fixed meaning in every picture.
CONFLICT = "#d62728"      # a bank that needs more than one wavefront
OUTLINE = "#222222"       # ldmatrix matrices, mma tiles, warp tiles
EMPTY = "#eeeeee"         # memory no access touches
PADDING = "#bbbbbb"       # padding bytes of a pitched tile


def text_color(rgb) -> str:
    r, g, b = rgb[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def darker(rgb, f: float = 0.55) -> tuple[float, float, float]:
    r, g, b = rgb[:3]
    return (r * f, g * f, b * f)
