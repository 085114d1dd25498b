"""Lane colours shared by every picture: 32 distinguishable colours, lane 4g+t a shade of
group g, so the four lanes of a PTX "group" read as one family."""

from __future__ import annotations

import colorsys


def lane_color(lane: int) -> tuple[float, float, float]:
    group, tig = divmod(int(lane), 4)
    hue = (group * 0.125 + 0.02) % 1.0
    light = (0.80, 0.70, 0.60, 0.50)[tig] if group % 2 == 0 else (0.85, 0.75, 0.65, 0.55)[tig]
    return colorsys.hls_to_rgb(hue, light, 0.65)


def text_color(rgb) -> str:
    r, g, b = rgb
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
