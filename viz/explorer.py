"""The explorer page: one self-contained HTML file (no server, no network) with every form's maps.

For each mma form: the combined fragment map (A, B, C/D) and the ldmatrix flows that load A and B,
as inline SVG (the same renderers as the pictures).  Hovering or clicking a lane -- a cell, a row
address, a register, or the lane bar -- highlights every element that lane holds in every operand,
the rows whose addresses it gives, the elements it receives and its registers in the flows, and
lists them in words; a picker switches forms.  The lane -> cell tables the page uses are written
into it from the instruction table.
"""

from __future__ import annotations

import html
import json
import os
import re

import numpy as np

from fragsim.facts.hardware import MATRIX_ROW_BYTES, WAVEFRONT_BYTES, WARP_LANES
from fragsim.instructions import FORMS, lookup

from . import _blocks, _groups
from ._figure import inject_cells, svg_cells, svg_text
from .flow import draw_ldmatrix_flow, flow_data
from .fragment_map import draw_mma
from .palette import LANE_RGB, text_color

# the default family only (the page's CSS sets it); monospace stays, and so does what follows it
_FONT_STYLE = re.compile(r"; font-family: 'DejaVu Sans',[^;\"]*")
_XML_HEAD = re.compile(r"^.*?(<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>", re.S)
_DIGITS = re.compile(r"(\d\.\d)\d+")
_NUM = r"(-?\d+(?:\.\d+)?)"
# a cell as matplotlib writes it: a closed axis-aligned path -> one <rect>
_RECT = re.compile(rf'<path d="M {_NUM} {_NUM}\s+L {_NUM} \2\s+L \3 {_NUM}\s+L \1 \4\s+z\s*"')
_CLIP = re.compile(r' clip-path="url\(#[^)]*\)"')
_TRANSLATE = re.compile(rf' transform="translate\({_NUM} {_NUM}\)"')
_NO_ROTATION = re.compile(r' transform="rotate\(-0 [^)]*\)"')
_ARTIST_ID = re.compile(r'<g id="(?:figure|axes|patch|text|line2d|LineCollection|PolyCollection|PathCollection)_\d+">')
_BETWEEN_TAGS = re.compile(r">\s+<")
_STYLE = re.compile(r' style="([^"]*)"')


def _rect(m) -> str:
    x0, y0, x1, y1 = (float(m.group(i)) for i in (1, 2, 3, 4))
    return (f'<rect x="{min(x0, x1):g}" y="{min(y0, y1):g}" width="{abs(x1 - x0):.1f}" '
            f'height="{abs(y1 - y0):.1f}"')


def _inline(fig) -> str:
    """A figure as compact inline SVG: no XML prologue, scales with the page, fonts from the page's
    CSS; cells as <rect>, no clipping (the axes fill the figure), positions to 1/10 of a point,
    no whitespace between elements, no ids but the ones the page's script uses."""
    s = inject_cells(fig, svg_text(fig))
    s = _XML_HEAD.sub(r"\1", s, count=1)
    s = _METADATA.sub("", s, count=1)       # matplotlib's RDF block: namespaces only, no use on a page
    s = _FONT_STYLE.sub("", s)
    s = _DIGITS.sub(r"\1", s)
    s = _CLIP.sub("", s)
    s = _RECT.sub(_rect, s)
    s = _TRANSLATE.sub(r' x="\1" y="\2"', s)
    s = _NO_ROTATION.sub("", s)
    s = _ARTIST_ID.sub("<g>", s)
    s = _BETWEEN_TAGS.sub("><", s)
    s = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r'<svg\1 class="map"', s, count=1)
    return s


def _shared_styles(svgs) -> tuple[list, str]:
    """The pictures with each inline style replaced by a class, and the CSS of those classes: a few
    dozen styles (lane colours, fonts) repeat on thousands of elements."""
    names: dict = {}

    def cls(m):
        return f' class="{names.setdefault(m.group(1), f"s{len(names)}")}"'
    out = [_STYLE.sub(cls, svg) for svg in svgs]
    css = "\n".join(f"svg.map .{n} {{ {style} }}" for style, n in names.items())
    return out, css


def _operand_table(form, op):
    rows, cols = form.coords(op)
    lane = form.owner(op)[0]
    cells = []
    for l in range(WARP_LANES):
        seen: dict = {}                 # an f64 element sits in two registers: list it once
        for r in range(rows.shape[1]):
            for e in range(rows.shape[2]):
                seen.setdefault((int(rows[l, r, e]), int(cols[l, r, e])), form.element_name(op, r, e))
        cells.append([[rc[0], rc[1], name] for rc, name in seen.items()])
    return {"shape": list(form.matrix_shape(op)), "lane": lane.tolist(), "cells": cells}


def _flow_table(form, op):
    """What a lane touches in the flow that loads ``op``: its row (if it gives one), received cells, registers."""
    st = _blocks.storages(form, op)[0]
    entry, a, dst_lane, _, src, col, _ = flow_data(None, form=form, operand=op)
    n = entry.address_lanes
    recv = [[] for _ in range(WARP_LANES)]
    for (k, j), ln in np.ndenumerate(dst_lane):
        recv[ln].append([k, j])
    chunk = [[int(x) // WAVEFRONT_BYTES, (int(x) % WAVEFRONT_BYTES) // MATRIX_ROW_BYTES] for x in a[:n]]
    return {"op": entry.name, "ptx": entry.ptx, "address_lanes": n, "num": entry.num, "addrs": [int(x) for x in a],
            "dst": dst_lane.tolist(), "recv": recv, "chunk": chunk, "storage": st.describe(),
            "rows": [f"{op}[{r}, {c}:{c + st.per_row}]" if st.major == "row" else
                     f"{op}[{r}:{r + st.per_row}, {c}]" for r, c in st.row_starts()]}


def explorer_data(forms) -> dict:
    """The page's tables: the distinct views (lane -> cells of each operand), the distinct flows that
    load A and B, and for each form which view and flows are its own."""
    views = _groups.group(forms, _groups.view_key)
    view_of = {f.name: i for i, fs in enumerate(views.values()) for f in fs}
    flows: dict = {}
    for f in forms:
        for op in ("A", "B"):
            if _blocks.storages(f, op):
                flows.setdefault(_groups.flow_key(f, op), []).append(f)
    flow_of = {(f.name, key[0]): i for i, (key, fs) in enumerate(flows.items()) for f in fs}
    view_tables = []
    for fs in views.values():
        form = fs[0]
        ops = ["A", "B", "C"] + ([] if form.layout("C") == form.layout("D") else ["D"])
        view_tables.append({"cd_same": "D" not in ops, "ops": {op: _operand_table(form, op) for op in ops},
                            "forms": [f.name for f in fs]})
    flow_tables = [dict(_flow_table(fs[0], key[0]), form=fs[0].name, operand=key[0], key=i)
                   for i, (key, fs) in enumerate(flows.items())]
    out = [{"index": i, "name": f.name, "ptx": f.ptx, "view": view_of[f.name],
            "flows": {op: flow_of[(f.name, op)] for op in ("A", "B") if (f.name, op) in flow_of}}
           for i, f in enumerate(forms)]
    return {"forms": out, "views": view_tables, "flows": flow_tables,
            "lane_rgb": [_hex(c) for c in LANE_RGB], "lane_fg": [text_color(c) for c in LANE_RGB]}


def _hex(rgb) -> str:
    return "#" + "".join(f"{int(round(x * 255)):02x}" for x in rgb[:3])


def figure_tasks(data) -> list:
    """The page's pictures as independent tasks (tuples for ``render``), so that a pool can draw them."""
    return ([("view", g, v["forms"][0], tuple(v["forms"][1:])) for g, v in enumerate(data["views"])]
            + [("flow", fl["key"], fl["form"], fl["operand"]) for fl in data["flows"]])


def render(task) -> str:
    """One picture of the page, as inline SVG with its cells named for the page's script."""
    kind, i, form, arg = task
    with svg_cells():
        if kind == "view":
            return _inline(draw_mma(form, gid_prefix=f"f{i}-", also=arg))
        return _inline(draw_ldmatrix_flow(form=form, operand=arg, arrows=(), gid_prefix=f"g{i}-"))


def write_explorer(out_dir, forms=None, *, name="index.html", svgs=None) -> str:
    """Write the explorer page into ``out_dir``; returns its path.  ``svgs``: ``render`` of each of
    ``figure_tasks`` (drawn here if not given)."""
    forms = [lookup(f) for f in (FORMS.values() if forms is None else forms)]
    data = explorer_data(forms)
    tasks = figure_tasks(data)
    svgs = [render(t) for t in tasks] if svgs is None else list(svgs)
    if len(svgs) != len(tasks):
        raise ValueError(f"svgs: expected {len(tasks)} pictures (one per figure task), got {len(svgs)}")
    svgs, css = _shared_styles(svgs)
    sections = []
    for (kind, i, *_), svg in zip(tasks, svgs):
        if kind == "view":
            sections.append(f'<section class="view" id="view-{i}"><div class="fig">{svg}</div></section>')
        else:
            fl = data["flows"][i]
            sections.append(f'<section class="flow" id="flow-{i}"><h3>{fl["operand"]}: '
                            f'{html.escape(fl["storage"])}</h3><div class="fig">{svg}</div></section>')
    options = "".join(f'<option value="{i}">{html.escape(f.name)}</option>' for i, f in enumerate(forms))
    lanes = "".join(f'<button class="lane" id="lane-{l}" data-lane="{l}" style="background:{data["lane_rgb"][l]};'
                    f'color:{data["lane_fg"][l]}">T{l}</button>' for l in range(WARP_LANES))
    page = (_PAGE.replace("%STYLES%", css).replace("%OPTIONS%", options).replace("%LANES%", lanes)
            .replace("%SECTIONS%", "".join(sections))
            .replace("%DATA%", json.dumps(data, separators=(",", ":")).replace("</", "<\\/")))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>fragsim explorer</title>
<style>
body { font-family: 'DejaVu Sans', Verdana, sans-serif; margin: 0; color: #222; }
header { position: sticky; top: 0; background: #fafafa; border-bottom: 1px solid #ccc; padding: 8px 14px; z-index: 2; }
header h1 { font-size: 17px; margin: 0 0 6px 0; display: inline-block; margin-right: 16px; }
#lanes { margin-top: 6px; }
.hint { font-size: 12px; color: #555; margin-left: 1em; }
button.lane { border: 1px solid #fff; width: 38px; height: 24px; font-size: 11px; cursor: pointer; padding: 0; }
button.lane.on { outline: 3px solid #000; outline-offset: -2px; font-weight: bold; }
#info { font-size: 12px; margin-top: 6px; min-height: 3.2em; white-space: pre-wrap; font-family: monospace; }
main { padding: 8px 14px; }
section.view, section.flow { display: none; } section.active { display: block; }
h2 { font-size: 15px; } h3 { font-size: 13px; margin: 18px 0 4px 0; }
div.fig { overflow-x: auto; }
svg.map { width: 100%; height: auto; max-width: 1500px; }
svg.map text { font-family: 'DejaVu Sans', Verdana, sans-serif; pointer-events: none; }
svg.map g.cell { cursor: pointer; }
svg.map.sel g.cell :is(rect, path) { opacity: 0.25; }
svg.map.sel g.cell.hl :is(rect, path) { opacity: 1; stroke: #000 !important; stroke-width: 2.5px !important; }
svg.map.sel g.lbl.hl text { font-weight: bold; }
svg.map.sel g.lbl:not(.hl) text { opacity: 0.4; }
%STYLES%
</style></head>
<body>
<header>
<h1>fragsim explorer</h1>
<label>form <select id="form-picker">%OPTIONS%</select></label>
<span class="hint">hover or click a lane (a cell, a row address, a register, or below); click again to clear</span>
<div id="lanes">%LANES%</div>
<div id="info"></div>
</header>
<main>%SECTIONS%</main>
<script id="fragsim-data" type="application/json">%DATA%</script>
<script>
"use strict";
const DATA = JSON.parse(document.getElementById("fragsim-data").textContent);
let formIndex = 0, pinned = null;
const CELL = /^(?:f(\\d+)-([ABCD])-(\\d+)-(\\d+)|g(\\d+)-flow-(s|r|p|row)-([\\d-]+))$/;


function laneOf(id) {
  const m = CELL.exec(id);
  if (!m) return null;
  if (m[2]) return DATA.views[+m[1]].ops[m[2]].lane[+m[3]][+m[4]];
  const fl = DATA.flows[+m[5]], nums = m[7].split("-").map(Number);
  if (m[6] === "s") return fl.dst[nums[0]][nums[1]];
  if (m[6] === "r" || m[6] === "row") return nums[0];
  for (let k = 0; k < fl.address_lanes; k++)
    if (fl.chunk[k][0] === nums[0] && fl.chunk[k][1] === nums[1]) return k;
  return null;
}

function idsOf(i, lane) {
  const f = DATA.forms[i], v = DATA.views[f.view], ids = [];
  for (const op in v.ops) for (const c of v.ops[op].cells[lane]) ids.push(`f${f.view}-${op}-${c[0]}-${c[1]}`);
  for (const op in f.flows) {
    const fl = DATA.flows[f.flows[op]], p = `g${fl.key}-flow-`;
    for (const c of fl.recv[lane]) ids.push(`${p}s-${c[0]}-${c[1]}`);
    for (let r = 0; r < fl.num; r++) for (let h = 0; h < 2; h++) ids.push(`${p}r-${lane}-${r}-${h}`);
    if (lane < fl.address_lanes) { ids.push(`${p}row-${lane}`); ids.push(`${p}p-${fl.chunk[lane][0]}-${fl.chunk[lane][1]}`); }
  }
  return ids;
}

function describe(i, lane) {
  const f = DATA.forms[i], v = DATA.views[f.view];
  const lines = [`lane ${lane} (groupID ${lane >> 2}, threadID_in_group ${lane & 3}) in ${f.ptx}`];
  for (const op in v.ops) {
    const name = (op === "C" && v.cd_same) ? "C/D" : op;
    lines.push(`  ${name.padEnd(3)}: ` + v.ops[op].cells[lane].map(c => `${c[2]}=(${c[0]},${c[1]})`).join(" "));
  }
  for (const op in f.flows) {
    const fl = DATA.flows[f.flows[op]];
    const give = lane < fl.address_lanes ? `gives the address of ${fl.rows[lane]} (0x${fl.addrs[lane].toString(16)})`
                                         : "gives no row address";
    lines.push(`  ${fl.op} (${op}): ${give}; receives ${2 * fl.num} halves`);
  }
  return lines.join("\\n");
}

function show(lane) {
  for (const el of document.querySelectorAll(".hl")) el.classList.remove("hl");
  for (const b of document.querySelectorAll("button.lane.on")) b.classList.remove("on");
  const svgs = document.querySelectorAll("section.active svg.map");
  if (lane === null) {
    for (const s of svgs) s.classList.remove("sel");
    document.getElementById("info").textContent = "";
    return;
  }
  for (const s of svgs) s.classList.add("sel");
  for (const id of idsOf(formIndex, lane)) {
    const el = document.getElementById(id); if (el) el.classList.add("hl");
    const t = document.getElementById(id + "-t"); if (t) t.classList.add("hl");
  }
  document.getElementById("lane-" + lane).classList.add("on");
  document.getElementById("info").textContent = describe(formIndex, lane);
}

function select(lane) { pinned = (pinned === lane) ? null : lane; show(pinned); }

function setForm(i) {
  for (const s of document.querySelectorAll("section.active")) s.classList.remove("active");
  formIndex = i;
  document.getElementById("view-" + DATA.forms[i].view).classList.add("active");
  for (const op in DATA.forms[i].flows) document.getElementById("flow-" + DATA.forms[i].flows[op]).classList.add("active");
  document.getElementById("form-picker").value = String(i);
  show(pinned);
}

for (const g of document.querySelectorAll("svg.map g[id]")) {
  if (CELL.test(g.id)) g.classList.add("cell");
  else if (g.id.endsWith("-t") && CELL.test(g.id.slice(0, -2))) g.classList.add("lbl");
}
for (const s of document.querySelectorAll("svg.map")) {
  s.addEventListener("click", e => { const g = e.target.closest("g.cell"); if (g) select(laneOf(g.id)); });
  s.addEventListener("mouseover", e => { const g = e.target.closest("g.cell"); if (g) show(laneOf(g.id)); });
  s.addEventListener("mouseleave", () => show(pinned));
}
for (const b of document.querySelectorAll("button.lane")) {
  b.addEventListener("click", () => select(+b.dataset.lane));
  b.addEventListener("mouseenter", () => show(+b.dataset.lane));
  b.addEventListener("mouseleave", () => show(pinned));
}
document.getElementById("form-picker").addEventListener("change", e => setForm(+e.target.value));
setForm(0);
</script>
</body></html>
"""
