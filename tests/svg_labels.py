"""Reading fragsim's SVG pictures back: the label and the rectangle of every named cell.

The renderers name each cell (``<g id="A-3-5">`` around a ``<rect>``) and its label
(``<g id="A-3-5-t">``, one ``<text>`` per line), so tests compare what a picture says with the
instruction table without looking at pixels.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from fragsim.viz._figure import svg_text

NS = "{http://www.w3.org/2000/svg}"
_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def parse(fig_or_text) -> ET.Element:
    text = fig_or_text if isinstance(fig_or_text, str) else svg_text(fig_or_text)
    return ET.fromstring(text)


def labels(root: ET.Element) -> dict:
    """id of each labelled cell -> its label, lines joined by a space (``"T5 a2"``)."""
    out = {}
    for g in root.iter(f"{NS}g"):
        gid = g.get("id", "")
        if gid.endswith("-t"):
            out[gid[:-2]] = " ".join((t.text or "") for t in g.iter(f"{NS}text"))
    return out


def rects(root: ET.Element) -> dict:
    """id of each named cell -> (left, top, right, bottom) of its rectangle, in SVG points (a <rect>, or
    a matplotlib <path>)."""
    out = {}
    for g in root.iter(f"{NS}g"):
        gid = g.get("id", "")
        if gid.endswith("-t"):
            continue
        rect = g.find(f"{NS}rect")
        if rect is not None:
            x, y, w, h = (float(rect.get(k)) for k in ("x", "y", "width", "height"))
            out[gid] = (x, y, x + w, y + h)
            continue
        path = g.find(f"{NS}path")
        if path is None:
            continue
        nums = [float(x) for x in _NUM.findall(path.get("d", ""))]
        xs, ys = nums[0::2], nums[1::2]
        out[gid] = (min(xs), min(ys), max(xs), max(ys))
    return out


def fills(root: ET.Element) -> dict:
    """id of each named cell -> its fill colour (#rrggbb)."""
    out = {}
    for g in root.iter(f"{NS}g"):
        rect = g.find(f"{NS}rect")
        if rect is not None and g.get("id") and not g.get("id").endswith("-t"):
            out[g.get("id")] = rect.get("fill")
    return out


def ids(root: ET.Element) -> set:
    return {g.get("id") for g in root.iter(f"{NS}g") if g.get("id")}
