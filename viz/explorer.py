"""The explorer page: one self-contained HTML file (no server, no network), drawn in the browser from
the tables written into it.

One entry of the picker at a time:

* an mma.sync form: A, B and C/D side by side (D apart where its layout differs from C's), the 8x8
  matrices one ldmatrix moves outlined, and under them the ldmatrix flows that load A and B;
* a wgmma form: A in registers and the accumulator D (C/D), the four warps' row bands outlined;
* ldmatrix / stmatrix on their own, rows one after another: which lane gives each row address and
  where every 16-bit element goes;
* a swizzle view: where each 16-byte chunk of 128-byte rows lands under CuTe's Swizzle<B,4,3> (or a
  padded pitch), and what an ldmatrix phase reading 8 rows of a column costs.

Clicking a lane -- a cell, a row address, a register, or the lane bar (wgmma: that lane of the chosen
warp) -- highlights every element it holds in every operand, the row it addresses, the elements it
receives and its registers, and lists them; hovering previews; a swizzle chunk shows where it lands.

The page holds data, not pictures: each distinct fragment map once, as base64 bytes (per cell, the
lane or thread holding it and its element number; a map equal to the first columns of a wider one is
stored as that one's prefix), the flows' and swizzles' tables, and a small script that draws the
selected entry as SVG.  Everything is read from the instruction tables.
"""

from __future__ import annotations

import base64
import json
import os
import re

import numpy as np

from fragsim.facts.hardware import (BANK_BYTES, MATRIX_ROW_BYTES, MATRIX_ROWS, NUM_BANKS, WARP_LANES,
                                    WARPGROUP_WARPS, WAVEFRONT_BYTES)
from fragsim.instructions import FORMS, SHARED_OPS, lookup
from fragsim.instructions.wgmma import WGMMA_FORMS, lookup_wgmma

from . import _blocks, _groups
from .palette import BANK_RGB, LANE_RGB, text_color

MATRIX_OPS = [name for name in SHARED_OPS if SHARED_OPS[name].movement is not None]   # ldmatrix/stmatrix
#: The swizzle views: (name, Swizzle(B, M, S) arguments or None, row pitch in bytes).
SWIZZLES = [("128-byte rows, no swizzle", None, None), ("Swizzle<1,4,3> (32B)", (1, 4, 3), None),
            ("Swizzle<2,4,3> (64B)", (2, 4, 3), None), ("Swizzle<3,4,3> (128B)", (3, 4, 3), None),
            ("128-byte rows padded to 144 bytes", None, 144)]
ROW_BYTES = 128


def _hex(rgb) -> str:
    return "#" + "".join(f"{int(round(x * 255)):02x}" for x in rgb[:3])


def _bytes(a: np.ndarray, what: str) -> str:
    """Small non-negative integers as base64 bytes (the page decodes them with atob)."""
    a = np.asarray(a)
    if a.size and (a.min() < 0 or a.max() > 255):
        raise ValueError(f"{what}: values {a.min()}..{a.max()} do not fit the page's bytes (0..255)")
    return base64.b64encode(a.astype(np.uint8).tobytes()).decode("ascii")


def _element_numbers(name_of, op: str, reg, half) -> np.ndarray:
    """Each cell's element number: 5 for ``a5`` (the table's name, checked to be the operand's letter
    and a number, which is how the page writes it back)."""
    pattern = re.compile(op.lower() + r"(\d+)")
    span = int(half.max()) + 1
    keys, where = np.unique(reg.ravel().astype(np.int64) * span + half.ravel(), return_inverse=True)
    nums = []
    for r, h in zip(*np.divmod(keys, span)):
        name = name_of(op, int(r), int(h))
        m = pattern.fullmatch(name)
        if m is None:
            raise ValueError(f"operand {op}: element name {name!r} is not {op.lower()}<number>")
        nums.append(int(m.group(1)))
    return np.asarray(nums, np.int64)[np.asarray(where).ravel()].reshape(reg.shape)


class _Maps:
    """Fragment maps, each distinct one stored once: ``add`` gives a map its number, ``finish`` stores
    them and turns each number into a reference [stored map, columns]."""

    def __init__(self):
        self._ids: dict = {}
        self._maps: list = []

    def add(self, owner: np.ndarray, elem: np.ndarray) -> int:
        key = (owner.shape, owner.tobytes(), elem.tobytes())
        if key not in self._ids:
            self._ids[key] = len(self._maps)
            self._maps.append((owner, elem))
        return self._ids[key]

    def finish(self) -> tuple[list, dict]:
        """(the stored maps, number -> [index, columns]): the widest first, so that a map equal to the
        first columns of a wider one becomes a reference to it."""
        stored: list = []
        refs = {}
        for key, (o, e) in sorted(enumerate(self._maps), key=lambda kv: -kv[1][0].shape[1]):
            R, C = o.shape
            for i, (so, se) in enumerate(stored):
                if so.shape[0] == R and so.shape[1] >= C and np.array_equal(so[:, :C], o) \
                        and np.array_equal(se[:, :C], e):
                    refs[key] = [i, C]
                    break
            else:
                stored.append((o, e))
                refs[key] = [len(stored) - 1, C]
        maps = [{"rows": o.shape[0], "cols": o.shape[1], "owner": _bytes(o, "owner"), "elem": _bytes(e, "element")}
                for o, e in stored]
        return maps, refs


def _mma_view(form, maps: _Maps) -> dict:
    ops = ["A", "B", "C"] + ([] if form.layout("C") == form.layout("D") else ["D"])
    out = []
    for op in ops:
        lane, reg, half = form.owner(op)
        moved = " or ".join(f"{s.op_name('ldmatrix/stmatrix' if op in 'CD' else 'ldmatrix')} ({s.major}-major)"
                            for s in _blocks.storages(form, op))
        out.append({"op": op, "map": maps.add(lane, _element_numbers(form.element_name, op, reg, half)),
                    "epr": form.elems_per_reg(op), "regs": form.nregs(op),
                    "blocks": [[b.index, b.row0, b.col0, b.nrows, b.ncols] for b in _blocks.blocks(form, op)],
                    "moved": moved or "a layout no ldmatrix/stmatrix (.b16) moves"})
    return {"family": "mma", "ops": out, "cd_same": "D" not in ops, "groups": form.groups,
            "group_name": "quad pair" if form.groups == 4 else "product"}


def _wgmma_view(form, maps: _Maps, memo: dict) -> dict:
    from fragsim.sim.wgmma import owners
    same = form.layout("C") == form.layout("D")
    ops = ("A", "D") if same else ("A", "C", "D")
    # forms with the same layouts, register counts and element widths have the same maps
    key = tuple((form.layout(op), form.elems_per_reg(op), form.nregs(op), form.fmt(op).storage_bits) for op in ops)
    if key not in memo:
        out = []
        for op in ops:
            thread, reg, half = owners(form, op)
            out.append({"op": op, "map": maps.add(thread, _element_numbers(form.element_name, op, reg, half)),
                        "epr": form.elems_per_reg(op), "regs": form.nregs(op), "blocks": [], "moved": ""})
        memo[key] = {"family": "wgmma", "ops": out, "cd_same": same, "warps": WARPGROUP_WARPS}
    return memo[key]


def _flow(op=None, form=None, operand=None) -> dict:
    """The tables of one ldmatrix/stmatrix flow (as ``flow.flow_data`` gives it) and its cell texts."""
    from fragsim.banks import bank_conflicts

    from .flow import flow_data, flow_labels, row_name
    entry, a, dst_lane, dst_half, src, col, storage = flow_data(op, form=form, operand=operand)
    n = entry.address_lanes
    rep = bank_conflicts(entry, a)
    mem, _, regs, _ = flow_labels(dst_lane, dst_half, src, col, storage)
    return {"ptx": entry.ptx, "op": entry.name, "num": entry.num, "address_lanes": n,
            "store": entry.kind == "stsm", "addrs": [int(x) for x in a], "dst": dst_lane.ravel().tolist(),
            "half": dst_half.ravel().tolist(),
            "src": src.ravel().tolist(), "col": col.ravel().tolist(), "mem": mem.ravel().tolist(),
            "regs": regs.ravel().tolist(), "storage": storage.describe() if storage is not None else "",
            "rows": [row_name(storage, k) if storage is not None else "" for k in range(n)],
            "cost": f"{rep.wavefronts} wavefronts, ideal {rep.ideal}, {rep.conflicts} bank conflicts",
            "phases": [ph.wavefronts for ph in rep.phases]}


def _swizzle(name, args, pitch) -> dict:
    from fragsim.layout.swizzle import Swizzle

    from .swizzle import _column_rgb, swizzle_layout
    place, head, addr, per_col = swizzle_layout(None if args is None else Swizzle(*args), row_bytes=ROW_BYTES,
                                                pitch=pitch)
    R, C = addr.shape
    return {"name": name, "title": head, "rows": R, "chunks": C, "row_bytes": ROW_BYTES, "addr": addr.ravel().tolist(),
            "bank": ((addr // BANK_BYTES) % NUM_BANKS).ravel().tolist(),
            "cost": None if per_col is None else [int(x) for x in per_col],
            "column_rgb": [_hex(_column_rgb(c, C)) for c in range(C)]}


def explorer_data(forms=None, wgmma_forms=None) -> dict:
    """The page's tables: every mma.sync and wgmma form (default: all of both tables) with the view it
    shows, the distinct views (which stored map each operand is), the maps, the flows and swizzles."""
    forms = [lookup(f) for f in (FORMS.values() if forms is None else forms)]
    wgmma_forms = [lookup_wgmma(f) for f in (WGMMA_FORMS if wgmma_forms is None else wgmma_forms)]
    maps = _Maps()
    views: list = []
    view_index: dict = {}

    def view_of(view) -> int:
        key = json.dumps(view, sort_keys=True, default=str)
        if key not in view_index:
            view_index[key] = len(views)
            views.append(view)
        return view_index[key]
    flows: list = []
    flow_index: dict = {}
    entries = []
    for f in forms:
        fl = {}
        for op in ("A", "B"):
            if _blocks.storages(f, op):
                key = _groups.flow_key(f, op)
                if key not in flow_index:
                    flow_index[key] = len(flows)
                    flows.append(_flow(form=f, operand=op))
                fl[op] = flow_index[key]
        entries.append({"family": "mma", "name": f.name, "ptx": f.ptx, "view": view_of(_mma_view(f, maps)),
                        "types": dict(f.types), "flows": fl})
    memo: dict = {}
    for f in wgmma_forms:
        entries.append({"family": "wgmma", "name": f.name, "ptx": f.ptx, "view": view_of(_wgmma_view(f, maps, memo)),
                        "types": dict(f.types), "flows": {}})
    for name in MATRIX_OPS:
        flows.append(_flow(name))
        entries.append({"family": "ldsm", "name": name, "ptx": SHARED_OPS[name].ptx, "flows": {"X": len(flows) - 1}})
    swizzles = [_swizzle(*s) for s in SWIZZLES]
    for i, s in enumerate(swizzles):
        entries.append({"family": "swizzle", "name": s["name"], "ptx": s["title"], "swizzle": i, "flows": {}})
    stored, refs = maps.finish()
    for v in views:
        for o in v["ops"]:
            o["map"] = refs[o["map"]]
    return {"entries": entries, "views": views, "maps": stored, "flows": flows, "swizzles": swizzles,
            "lane_rgb": [_hex(c) for c in LANE_RGB], "lane_fg": [text_color(c) for c in LANE_RGB],
            "bank_rgb": [_hex(c) for c in BANK_RGB],
            "facts": {"lanes": WARP_LANES, "warpgroup_warps": WARPGROUP_WARPS, "matrix_rows": MATRIX_ROWS,
                      "line_bytes": WAVEFRONT_BYTES,
                      "chunk_bytes": MATRIX_ROW_BYTES, "bank_bytes": BANK_BYTES}}


def map_cells(data: dict, ref) -> tuple[np.ndarray, np.ndarray]:
    """(owner, element number) grids of a stored map reference [index, columns], as the page reads them."""
    m = data["maps"][ref[0]]
    shape = (m["rows"], m["cols"])
    owner, elem = (np.frombuffer(base64.b64decode(m[k]), np.uint8).reshape(shape) for k in ("owner", "elem"))
    return owner[:, :ref[1]].astype(np.int64), elem[:, :ref[1]].astype(np.int64)


def page_data(path) -> dict:
    """The tables written into an explorer page."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r'<script id="fragsim-data" type="application/json">(.*?)</script>', text, re.S)
    if m is None:
        raise ValueError(f"{path}: not an explorer page (no fragsim-data script)")
    return json.loads(m.group(1).replace("<\\/", "</"))


def write_explorer(out_dir, forms=None, wgmma_forms=None, *, name="index.html") -> str:
    """Write the explorer page into ``out_dir``; returns its path."""
    data = explorer_data(forms, wgmma_forms)
    page = _PAGE.replace("%DATA%", json.dumps(data, separators=(",", ":")).replace("</", "<\\/"))
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
header { position: sticky; top: 0; background: #fafafa; border-bottom: 1px solid #ccc; padding: 6px 14px; z-index: 2; }
header h1 { font-size: 17px; margin: 0 12px 4px 0; display: inline-block; }
select { max-width: 36em; }
#lanes { margin-top: 5px; }
.hint { font-size: 12px; color: #555; margin-left: 1em; }
button.lane { border: 1px solid #fff; width: 36px; height: 22px; font-size: 11px; cursor: pointer; padding: 0; }
button.lane.on { outline: 3px solid #000; outline-offset: -2px; font-weight: bold; }
#info { font-size: 12px; margin-top: 4px; max-height: 7.5em; overflow-y: auto; white-space: pre-wrap;
        font-family: monospace; }
main { padding: 6px 14px; }
h2 { font-size: 14px; margin: 4px 0; font-family: monospace; font-weight: normal; }
.row { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
.panel h3 { font-size: 13px; margin: 6px 0 2px 0; }
.panel p { font-size: 11px; color: #555; margin: 0 0 4px 0; max-width: 60em; }
.legend { font-size: 12px; color: #444; margin: 10px 0; white-space: pre-wrap; }
svg { display: block; }
svg text { font-family: 'DejaVu Sans', Verdana, sans-serif; pointer-events: none; }
svg .num { fill: #666; }
svg rect.c { cursor: pointer; }
svg.sel rect.c { opacity: 0.25; }
svg.sel rect.c.hl { opacity: 1; stroke: #000; stroke-width: 2.5px; }
svg.sel text.t { fill: #555; opacity: 0.5; }
svg.sel text.t.hl { fill: revert-layer; opacity: 1; font-weight: bold; }
svg .box { fill: none; stroke: #222; }
svg .tag { fill: #222; font-weight: bold; }
</style></head>
<body>
<header>
<h1>fragsim explorer</h1>
<label>show <select id="form-picker"></select></label>
<label id="warp-pick" hidden>warp <select id="warp-picker"></select></label>
<label>cells <select id="zoom"><option value="1">fit</option><option value="2">2x</option>
  <option value="4">4x</option></select></label>
<span class="hint" id="hint"></span>
<div id="lanes"></div>
<div id="info"></div>
</header>
<main><h2 id="heading"></h2><div id="maps" class="row"></div><div id="flows" class="row"></div>
<div id="legend" class="legend"></div></main>
<script id="fragsim-data" type="application/json">%DATA%</script>
<script>
"use strict";
const DATA = JSON.parse(document.getElementById("fragsim-data").textContent);
const F = DATA.facts, NS = "http://www.w3.org/2000/svg", BANKS_PER_CHUNK = F.chunk_bytes / F.bank_bytes;
const $ = id => document.getElementById(id);
let entry = null, pinned = null, owners = new Map(), describe = () => [];

const bytes = b64 => Uint8Array.from(atob(b64), ch => ch.charCodeAt(0));
const MAPS = DATA.maps.map(m => ({rows: m.rows, cols: m.cols, owner: bytes(m.owner), elem: bytes(m.elem)}));

function cells(ref) {            // a stored map, or its first columns
  const m = MAPS[ref[0]];
  return {R: m.rows, C: ref[1], owner: (r, c) => m.owner[r * m.cols + c], elem: (r, c) => m.elem[r * m.cols + c]};
}

function el(tag, attrs, parent, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

const hex = (a, width = 4) => "0x" + a.toString(16).padStart(width, "0");
const laneFill = t => DATA.lane_rgb[t % F.lanes], laneFg = t => DATA.lane_fg[t % F.lanes];

function own(key, id) { if (!owners.has(key)) owners.set(key, []); owners.get(key).push(id); }

function label(svg, x, y, lines, size, fill, id) {
  lines.forEach((s, i) => {
    const t = el("text", {x, y: y + (i - (lines.length - 1) / 2) * size * 1.15 + size * 0.36, "font-size": size,
                          "text-anchor": "middle", fill, class: "t"}, svg, s);
    t.id = id + "-t" + (i || "");
  });
}

function fitFont(s, lines, chars) {
  const f = Math.min(12, s * 0.86 / (1.22 * lines), s * 0.86 / (0.62 * chars));
  return f >= 6.5 ? f : 0;
}

// R x C cells from x0, row r at rowY(r); cell(r, c) gives fill, fg, id, owner (what a click selects),
// text lines and the sides joined to the neighbour (one register); labels where they fit
function grid(svg, x0, rowY, s, R, C, cell) {
  const g = Math.max(1, Math.min(3, s * 0.06)), all = [];
  let first = 3, any = 3, most = 1;                  // longest first line, longest line, most lines
  for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) {
    const k = cell(r, c);
    all.push([r, c, k]);
    first = Math.max(first, k.text[0].length);
    any = Math.max(any, ...k.text.map(x => x.length));
    most = Math.max(most, k.text.length);
    const gl = k.joinLeft ? 0 : g, gr = k.joinRight ? 0 : g, gt = k.joinUp ? 0 : g, gb = k.joinDown ? 0 : g;
    const rect = el("rect", {x: x0 + c * s + gl, y: rowY(r) + gt, width: Math.max(0.5, s - gl - gr),
                             height: Math.max(0.5, s - gt - gb), fill: k.fill, class: "c", id: k.id}, svg);
    if (k.owner !== undefined) { rect.setAttribute("data-owner", k.owner); own(k.owner, k.id); }
  }
  let lines = most, font = fitFont(s, most, any);
  if (!font && most > 1) { lines = 1; font = fitFont(s, 1, first); }     // the first line only
  if (!font) return;
  for (const [r, c, k] of all) label(svg, x0 + (c + 0.5) * s, rowY(r) + s / 2, k.text.slice(0, lines), font, k.fg, k.id);
}

function numbers(svg, x0, y0, s, R, C) {
  const size = Math.max(7, Math.min(10, s * 0.4));
  const step = [1, 2, 4, 8, 16, 32, 64].find(k => k * s >= size * 2.4) || 64;
  for (let c = 0; c < C; c += step)
    el("text", {x: x0 + (c + 0.5) * s, y: y0 - 3, "font-size": size, "text-anchor": "middle", class: "num"}, svg, c);
  for (let r = 0; r < R; r += step)
    el("text", {x: x0 - 3, y: y0 + (r + 0.5) * s + size * 0.35, "font-size": size, "text-anchor": "end", class: "num"}, svg, r);
}

function panel(parent, title, note) {
  const d = document.createElement("div");
  d.className = "panel";
  const h = document.createElement("h3");
  h.textContent = title;
  d.appendChild(h);
  if (note) { const p = document.createElement("p"); p.textContent = note; d.appendChild(p); }
  parent.appendChild(d);
  return d;
}

function svgIn(parent, w, h) {
  w = Math.ceil(w); h = Math.ceil(h);
  const s = el("svg", {width: w, height: h, viewBox: `0 0 ${w} ${h}`});
  parent.appendChild(s);
  return s;
}

function text(svg, x, y, s, attrs = {}) { return el("text", Object.assign({x, y, "font-size": 10}, attrs), svg, s); }

// ---- fragment maps (mma.sync, wgmma) ----
function drawMaps(e) {
  const v = DATA.views[e.view], ops = v.ops.map(o => ({o, m: cells(o.map)})), pad = 34;
  // one cell size for all operands, side by side on the first screen ("cells" enlarges them); a panel is
  // at least MIN_PANEL wide (its title wraps to that)
  const MIN_PANEL = 160, W = $("maps").clientWidth - (ops.length - 1) * 18 - 4;
  const H = window.innerHeight - $("maps").getBoundingClientRect().top - 90, maxR = Math.max(...ops.map(x => x.m.R));
  let fit = Math.min(30, H / maxR);
  for (let pass = 0; pass < 3; pass++) {
    const wide = ops.filter(x => x.m.C * fit + pad + 6 >= MIN_PANEL), narrow = ops.length - wide.length;
    fit = Math.min(fit, (W - narrow * MIN_PANEL - wide.length * (pad + 6)) / Math.max(1, wide.reduce((a, x) => a + x.m.C, 0)));
  }
  const s = +$("zoom").value * Math.max(2, fit);
  const opName = op => (op === "C" || op === "D") && v.cd_same ? "C/D" : op;
  for (const {o, m} of ops) {
    const what = v.family === "wgmma" ? (o.op === "A" ? " (A in registers)" : " (accumulator)") : "";
    const p = panel($("maps"), `${opName(o.op)}: ${m.R}x${m.C} ${e.types[o.op]}, ${o.regs} reg${o.regs > 1 ? "s" : ""}${what}`,
                    v.family === "mma" ? `${o.op}: ${o.moved}` : "");
    const svg = svgIn(p, m.C * s + pad + 4, m.R * s + pad + 4);
    p.style.width = Math.max(MIN_PANEL, m.C * s + pad + 6) + "px";
    const reg = (r, c) => Math.floor(m.elem(r, c) / o.epr);
    const same = (r, c, r2, c2) => r2 >= 0 && c2 >= 0 && r2 < m.R && c2 < m.C && m.owner(r, c) === m.owner(r2, c2)
                                   && reg(r, c) === reg(r2, c2);
    grid(svg, pad, r => pad + r * s, s, m.R, m.C, (r, c) => {
      const t = m.owner(r, c);
      return {fill: laneFill(t), fg: laneFg(t), id: `${o.op}-${r}-${c}`, owner: t,
              text: [`T${t}`, `${o.op.toLowerCase()}${m.elem(r, c)}`], joinLeft: same(r, c, r, c - 1),
              joinRight: same(r, c, r, c + 1), joinUp: same(r, c, r - 1, c), joinDown: same(r, c, r + 1, c)};
    });
    numbers(svg, pad, pad, s, m.R, m.C);
    for (const b of o.blocks) {              // the 8x8 matrices; tagged where the cells leave room for a tag
      el("rect", {x: pad + b[2] * s, y: pad + b[1] * s, width: b[4] * s, height: b[3] * s, class: "box",
                  "stroke-width": Math.max(1, Math.min(2.4, s * 0.07))}, svg);
      if (s >= 40) text(svg, pad + b[2] * s + 3, pad + b[1] * s + 11, `m${b[0]}`, {class: "tag"});
    }
    const bands = v.family === "wgmma" ? v.warps : v.groups, rows = m.R / bands;
    for (let q = 0; bands > 1 && q < bands; q++) {
      const y = pad + (q + 0.5) * rows * s;
      el("rect", {x: pad, y: pad + q * rows * s, width: m.C * s, height: rows * s, class: "box", "stroke-width": 1.5,
                  "stroke-dasharray": v.family === "wgmma" ? "" : "5 3"}, svg);
      text(svg, 10, y, v.family === "wgmma" ? `warp ${q}` : `${v.group_name} ${q}`,
           {class: "tag", transform: `rotate(-90 10 ${y})`, "text-anchor": "middle"});
    }
  }
  return key => {
    const lines = [v.family === "wgmma" ? `thread ${key} (warp ${Math.floor(key / F.lanes)}, lane ${key % F.lanes}) in ${e.ptx}`
                                        : `lane ${key} (groupID ${key >> 2}, threadID_in_group ${key & 3}) in ${e.ptx}`];
    for (const {o, m} of ops) {
      const held = new Set();               // an f64 element sits in two registers: listed once
      for (let r = 0; r < m.R; r++) for (let c = 0; c < m.C; c++)
        if (m.owner(r, c) === key) held.add(`${o.op.toLowerCase()}${m.elem(r, c)}=(${r},${c})`);
      lines.push(`  ${opName(o.op).padEnd(3)}: ` + [...held].join(" "));
    }
    return lines;
  };
}

// ---- ldmatrix / stmatrix flows ----
function drawFlow(fl, tag, title) {
  const s = 30, n = fl.address_lanes, num = fl.num, R = F.matrix_rows, halves = fl.dst.length / n;
  const chunks = F.line_bytes / F.chunk_bytes;
  const rowY = k => 44 + (k + Math.floor(k / R) * 0.8) * s;
  const mx = 170, rx = mx + halves * s + 60, px = rx + 2 * num * s + 110;
  const lines = [...new Set(fl.addrs.slice(0, n).map(a => Math.floor(a / F.line_bytes)))].sort((a, b) => a - b);
  const p = panel($("flows"), title, `${fl.ptx} (${fl.store ? "registers -> shared memory" : "shared memory -> registers"}): ` +
                  `${fl.cost}`);
  const svg = svgIn(p, px + chunks * s + 10, rowY(F.lanes - 1) + s + 10);
  text(svg, 0, 14, "row address from lane", {"font-size": 11});
  text(svg, mx, 14, "shared memory: 16-byte rows", {"font-size": 11});
  text(svg, rx - 30, 14, "registers", {"font-size": 11});
  text(svg, px - 44, 14, `memory: ${F.line_bytes}-byte lines, columns = banks`, {"font-size": 11});
  for (let k = 0; k < n; k++) {
    const y = rowY(k);
    el("rect", {x: 0, y: y + 4, width: 34, height: s - 8, fill: laneFill(k), class: "c", id: `${tag}-row-${k}`,
                "data-owner": k}, svg);
    own(k, `${tag}-row-${k}`);
    label(svg, 17, y + s / 2, [`T${k}`], 10, laneFg(k), `${tag}-row-${k}`);
    text(svg, 40, y + s / 2 + 4, hex(fl.addrs[k]), {"font-family": "monospace"});
    if (fl.rows[k]) text(svg, 92, y + s / 2 + 4, fl.rows[k]);
  }
  for (let i = 0; i < num; i++)
    text(svg, mx, rowY(i * R) - 4, `matrix ${i} -> register ${i}: ${fl.phases[i]} wavefront${fl.phases[i] === 1 ? "" : "s"}`,
         {"font-weight": "bold"});
  // a register's two halves are neighbours: side by side, or (.trans) one row apart in one matrix
  const pair = (k, j, k2, j2) => k2 >= 0 && k2 < n && j2 >= 0 && j2 < halves && Math.floor(k / R) === Math.floor(k2 / R)
    && fl.dst[k * halves + j] === fl.dst[k2 * halves + j2] && Math.abs(fl.half[k * halves + j] - fl.half[k2 * halves + j2]) === 1;
  grid(svg, mx, rowY, s, n, halves, (k, j) => {
    const t = fl.dst[k * halves + j];
    return {fill: laneFill(t), fg: laneFg(t), id: `${tag}-s-${k}-${j}`, owner: t, text: fl.mem[k * halves + j].split("\\n"),
            joinLeft: pair(k, j, k, j - 1), joinRight: pair(k, j, k, j + 1),
            joinUp: pair(k, j, k - 1, j), joinDown: pair(k, j, k + 1, j)};
  });
  for (let l = 0; l < F.lanes; l++) text(svg, rx - 4, rowY(l) + s / 2 + 4, `T${l}`, {"text-anchor": "end"});
  grid(svg, rx, rowY, s, F.lanes, 2 * num, (l, c) => ({fill: laneFill(l), fg: laneFg(l), id: `${tag}-r-${l}-${c >> 1}-${c & 1}`,
       owner: l, text: fl.regs[l * 2 * num + c].split("\\n"), joinLeft: (c & 1) === 1, joinRight: (c & 1) === 0}));
  for (let i = 0; i < num; i++) text(svg, rx + (2 * i + 1) * s, 36, `reg ${i}: lo hi`, {"font-size": 9, "text-anchor": "middle"});
  const readers = new Map(), chunkOf = a => `${Math.floor(a / F.line_bytes)}-${Math.floor((a % F.line_bytes) / F.chunk_bytes)}`;
  for (let k = 0; k < n; k++) { const key = chunkOf(fl.addrs[k]); readers.set(key, (readers.get(key) || []).concat([k])); }
  lines.forEach((ln, i) => text(svg, px - 4, 44 + (i + 0.5) * s + 4, hex(ln * F.line_bytes),
                                {"text-anchor": "end", "font-family": "monospace"}));
  grid(svg, px, i => 44 + i * s, s, lines.length, chunks, (i, ch) => {
    const ks = readers.get(`${lines[i]}-${ch}`) || [], t = ks[0];
    return {fill: t === undefined ? "#eeeeee" : laneFill(t), fg: t === undefined ? "black" : laneFg(t), owner: t,
            id: `${tag}-p-${lines[i]}-${ch}`, text: [ks.slice(0, 2).map(k => `T${k}`).join(",") + (ks.length > 2 ? "+" : "")]};
  });
  for (let ch = 0; ch < chunks; ch++) {
    const b = ch * BANKS_PER_CHUNK;
    text(svg, px + (ch + 0.5) * s, 40, `${b}-${b + BANKS_PER_CHUNK - 1}`, {"font-size": 8, "text-anchor": "middle"});
  }
  return lane => {
    const give = lane < n ? `gives the address of ${fl.rows[lane] || "row " + lane} (${hex(fl.addrs[lane])})`
                          : "gives no row address";
    return [`  ${fl.op}${tag === "fX" ? "" : " (" + tag.slice(1) + ")"}: ${give}; ${fl.store ? "stores" : "receives"} ` +
            `${2 * num} halves`];
  };
}

// ---- swizzle views ----
function drawSwizzle(sw) {
  const s = 44, R = sw.rows, C = sw.chunks, slots = F.line_bytes / F.chunk_bytes;
  const line = a => Math.floor(a / F.line_bytes), slot = a => Math.floor((a % F.line_bytes) / F.chunk_bytes);
  const used = [...new Set(sw.addr.map(line))].sort((a, b) => a - b);
  const p1 = panel($("maps"), "logical tile: rows x 16-byte chunks",
                   "colour: the banks the chunk lands in (b: their numbers); under each column: the wavefronts of an ldmatrix " +
                   "phase reading 8 of its rows");
  const svg1 = svgIn(p1, C * s + 40, R * s + 60);
  grid(svg1, 30, r => 20 + r * s, s, R, C, (r, c) => {
    const b = sw.bank[r * C + c];
    return {fill: DATA.bank_rgb[b], fg: "black", id: `sw-l-${r}-${c}`, owner: `${r},${c}`,
            text: [`${r},${c}`, `b${b}-${b + BANKS_PER_CHUNK - 1}`]};
  });
  numbers(svg1, 30, 20, s, R, C);
  (sw.cost || []).forEach((w, c) => text(svg1, 30 + (c + 0.5) * s, 20 + R * s + 16, w,
    {"font-size": 12, "text-anchor": "middle", "font-weight": "bold", fill: w > 1 ? "#d62728" : "#2a7d2a"}));
  const p2 = panel($("maps"), `memory: ${F.line_bytes}-byte lines x 16-byte slots (banks)`,
                   "each slot holds the logical (row, chunk) written there, coloured by its logical column");
  const svg2 = svgIn(p2, slots * s + 70, used.length * s + 40);
  const at = new Map();
  sw.addr.forEach((a, i) => at.set(`${line(a)}-${slot(a)}`, i));
  used.forEach((ln, i) => text(svg2, 62, 20 + (i + 0.5) * s + 4, hex(ln * F.line_bytes),
                               {"text-anchor": "end", "font-family": "monospace"}));
  grid(svg2, 66, i => 20 + i * s, s, used.length, slots, (i, sl) => {
    const k = at.get(`${used[i]}-${sl}`), id = `sw-p-${used[i]}-${sl}`;
    if (k === undefined) return {fill: "#bbbbbb", fg: "black", id, text: ["pad"]};
    const r = Math.floor(k / C), c = k % C;
    return {fill: sw.column_rgb[c], fg: "black", id, owner: `${r},${c}`, text: [`${r},${c}`]};
  });
  for (let sl = 0; sl < slots; sl++) {
    const b = sl * BANKS_PER_CHUNK;
    text(svg2, 66 + (sl + 0.5) * s, 16, `${b}-${b + BANKS_PER_CHUNK - 1}`, {"font-size": 9, "text-anchor": "middle"});
  }
  return key => {
    const [r, c] = key.split(",").map(Number), a = sw.addr[r * C + c], b = sw.bank[r * C + c];
    return [`logical row ${r}, chunk ${c} (byte ${r * sw.row_bytes + c * F.chunk_bytes} of the tile) -> ${hex(a)}: ` +
            `line ${line(a)}, slot ${slot(a)} (banks ${b}-${b + BANKS_PER_CHUNK - 1})`];
  };
}

// ---- selection ----
function show(key) {
  for (const x of document.querySelectorAll(".hl")) x.classList.remove("hl");
  for (const b of document.querySelectorAll("button.lane.on")) b.classList.remove("on");
  const svgs = document.querySelectorAll("main svg");
  if (key === null || key === undefined) {
    for (const s of svgs) s.classList.remove("sel");
    $("info").textContent = "";
    return;
  }
  for (const s of svgs) s.classList.add("sel");
  for (const id of owners.get(key) || []) {
    $(id).classList.add("hl");
    for (const t of ["-t", "-t1"]) if ($(id + t)) $(id + t).classList.add("hl");
  }
  if (typeof key === "number") $("lane-" + (key % F.lanes)).classList.add("on");
  $("info").textContent = describe(key).join("\\n");
}

function select(key) { pinned = (pinned === key) ? null : key; show(pinned); }

const laneKey = lane => entry.family === "wgmma" ? +$("warp-picker").value * F.lanes + lane : lane;

function keyOf(target) {
  if (!target.classList.contains("c") || !target.hasAttribute("data-owner")) return undefined;
  const k = target.getAttribute("data-owner");
  return entry.family === "swizzle" ? k : +k;
}

const LEGEND = {
  mma: "cell: the lane (T#) holding the element and its PTX name; joined cells: one 32-bit register; " +
       "bold boxes: the 8x8 matrices ldmatrix/stmatrix moves, box m_i into register i (tagged at 2x)",
  wgmma: "cell: the thread (T#) of the warpgroup holding the element and its PTX name; colour: its lane; " +
         "joined cells: one 32-bit register; boxes: the four warps' rows",
  ldsm: "each address lane gives one 16-byte row; lanes past the address lanes give none",
  swizzle: ""};

function render() {
  owners = new Map();
  $("maps").textContent = "";
  $("flows").textContent = "";
  const e = entry;
  $("heading").textContent = e.ptx;
  $("warp-pick").hidden = e.family !== "wgmma";
  $("lanes").hidden = e.family === "swizzle";
  let base = key => [`lane ${key} in ${e.ptx}`];
  if (e.family === "mma" || e.family === "wgmma") base = drawMaps(e);
  if (e.family === "swizzle") base = drawSwizzle(DATA.swizzles[e.swizzle]);
  const flows = Object.keys(e.flows).map(op => {
    const fl = DATA.flows[e.flows[op]];
    return drawFlow(fl, "f" + op, op === "X" ? fl.op : `${op}: ${fl.storage}`);
  });
  describe = key => base(key).concat(...flows.map(f => f(key)));
  $("hint").textContent = e.family === "swizzle" ? "click a chunk: where it lands"
    : "hover or click a lane (a cell, a row address, a register, or below); click again to clear";
  $("legend").textContent = LEGEND[e.family];
  show(pinned);
}

function setEntry(i) { entry = DATA.entries[i]; pinned = null; $("form-picker").value = String(i); render(); }

(function init() {
  const names = {mma: "mma.sync", wgmma: "wgmma (A in registers, accumulator)", ldsm: "ldmatrix / stmatrix",
                 swizzle: "swizzle (128-byte rows)"};
  const groups = {};
  DATA.entries.forEach((e, i) => {
    if (!groups[e.family]) {
      groups[e.family] = document.createElement("optgroup");
      groups[e.family].label = names[e.family];
      $("form-picker").appendChild(groups[e.family]);
    }
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = e.name;
    groups[e.family].appendChild(o);
  });
  for (let w = 0; w < F.warpgroup_warps; w++) {
    const o = document.createElement("option");
    o.value = o.textContent = String(w);
    $("warp-picker").appendChild(o);
  }
  for (let l = 0; l < F.lanes; l++) {
    const b = document.createElement("button");
    b.className = "lane"; b.id = "lane-" + l; b.textContent = "T" + l;
    b.style.background = DATA.lane_rgb[l]; b.style.color = DATA.lane_fg[l];
    b.addEventListener("click", () => select(laneKey(l)));
    b.addEventListener("mouseenter", () => show(laneKey(l)));
    b.addEventListener("mouseleave", () => show(pinned));
    $("lanes").appendChild(b);
  }
  const main = document.querySelector("main");
  main.addEventListener("click", ev => { const k = keyOf(ev.target); if (k !== undefined) select(k); });
  main.addEventListener("mouseover", ev => { const k = keyOf(ev.target); if (k !== undefined) show(k); });
  main.addEventListener("mouseleave", () => show(pinned));
  $("form-picker").addEventListener("change", ev => setEntry(+ev.target.value));
  $("warp-picker").addEventListener("change", () => { pinned = null; show(null); });
  $("zoom").addEventListener("change", render);
  setEntry(0);
})();
</script>
</body></html>
"""
