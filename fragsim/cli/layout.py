"""fragsim layout FORM OPERAND: which lane and register hold which matrix element (as text, JSON,
or with --png/--svg the picture); ``fragsim layout movmatrix``: who holds each element of the 8x8
source matrix before and after the transpose."""

from __future__ import annotations

import json

import numpy as np

from fragsim.instructions import check_operand, lookup
from fragsim.layout.text import fragment_grid, fragment_json, lane_list

NAME = "layout"
HELP = "print the lane/register map of an mma operand (PTX ISA figure order)"


def add_arguments(p):
    p.add_argument("form", help="mma form, e.g. m16n8k16.row.col.f32.f16.f16.f32, a wgmma form, or movmatrix")
    p.add_argument("operand", nargs="?", help="A, B, C or D (none for movmatrix)")
    p.add_argument("--by-lane", action="store_true", help="list each lane's registers instead of the matrix grid")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--png", metavar="FILE", help="draw the map as a PNG picture (as `fragsim draw fragment`)")
    p.add_argument("--svg", metavar="FILE", help="draw the map as an SVG picture")


def _run_wgmma(args, pictures) -> int:
    """A wgmma form (PTX spelling after wgmma.mma_async.sync.aligned.): the warpgroup maps of A, C, D."""
    from fragsim.instructions.wgmma import lookup_wgmma
    from fragsim.sim.wgmma import owners
    form = lookup_wgmma(args.form)
    op = check_operand(args.operand)
    form.coords(op)                       # B (shared memory only) refused in one line
    if pictures:
        from fragsim.viz.warpgroup_map import draw_warpgroup_map
        from .files import writable_file
        for path, ext in pictures:
            if not path.lower().endswith(ext):
                raise ValueError(f"--{ext[1:]} {path}: expected a file name ending in {ext}")
            writable_file(path, f"--{ext[1:]}")
        for path, _ in pictures:
            draw_warpgroup_map(form, op, path)
            print(f"wrote {path}")
        return 0
    thread, reg, half = owners(form, op)
    epr = form.elems_per_reg(op)
    names = [[f"T{t}:{op.lower()}{g * epr + h}" for t, g, h in zip(*row)] for row in zip(thread, reg, half)]
    if args.json:
        print(json.dumps({"form": form.ptx, "operand": op, "threads": 128, "nregs": form.nregs(op),
                          "cells": [[{"thread": int(t), "reg": int(g), "half": int(h)} for t, g, h in zip(*row)]
                                    for row in zip(thread, reg, half)]}))
    else:
        w = max(len(x) for r in names for x in r)
        print("\n".join(" ".join(x.ljust(w) for x in r) for r in names))
    return 0


def _is_movmatrix(spelling) -> bool:
    from fragsim.instructions.movmatrix import MOVMATRIX
    return isinstance(spelling, str) and spelling.strip().lower() in ("movmatrix", MOVMATRIX.name, MOVMATRIX.ptx)


def _run_movmatrix(args, pictures) -> int:
    """movmatrix: the source and destination maps, each cell (r, c) of the source matrix ``T5:e1`` (lane
    5 holds it in the high half of its register)."""
    from fragsim.instructions.movmatrix import MOVMATRIX
    if args.operand is not None:
        raise ValueError(f"operand {args.operand!r}: movmatrix has none (its one register in and one out "
                         "are both printed); leave it out")
    if args.by_lane:
        raise ValueError("--by-lane: movmatrix has one register per lane; the grids are the whole map")
    if pictures:
        from fragsim.viz.movmatrix_map import draw_movmatrix_map
        _writable(pictures)
        for path, _ in pictures:
            draw_movmatrix_map(path)
            print(f"wrote {path}")
        return 0
    grids = {}
    for which in ("src", "dst"):
        rows, cols = getattr(MOVMATRIX, which).table()        # (32, 1, 2)
        lane, half = np.empty((8, 8), np.int64), np.empty((8, 8), np.int64)
        lane[rows[:, 0], cols[:, 0]] = np.arange(32)[:, None]
        half[rows[:, 0], cols[:, 0]] = np.arange(2)[None, :]
        grids[which] = lane, half
    if args.json:
        print(json.dumps({"instruction": MOVMATRIX.ptx, "shape": [8, 8],
                          **{w: {"lane": lane.tolist(), "half": half.tolist()} for w, (lane, half) in grids.items()}}))
        return 0
    heads = {"src": "source register (before): lane l holds row l/4, columns 2(l%4) and +1",
             "dst": "destination register (after): the same fragment layout of the transpose"}
    out = [f"{MOVMATRIX.ptx}: 8x8 b16 source matrix, 1 register x 2 halves (e0 low, e1 high) per lane"]
    for which, (lane, half) in grids.items():
        out += ["", heads[which], "row\\col " + " ".join(f"{c:>6}" for c in range(8))]
        out += [f"{r:>7} " + " ".join(f"T{lane[r, c]}:e{half[r, c]}".rjust(6) for c in range(8)) for r in range(8)]
    print("\n".join(out))
    return 0


def _writable(pictures):
    from .files import writable_file
    for path, ext in pictures:
        if not path.lower().endswith(ext):
            raise ValueError(f"--{ext[1:]} {path}: expected a file name ending in {ext}")
        writable_file(path, f"--{ext[1:]}")


def _is_wgmma(spelling) -> bool:
    return isinstance(spelling, str) and spelling.strip().lower().startswith(("wgmma.", "m64n"))


def run(args) -> int:
    pictures = [(path, ext) for path, ext in ((args.png, ".png"), (args.svg, ".svg")) if path is not None]
    if _is_movmatrix(args.form):
        return _run_movmatrix(args, pictures)
    if args.operand is None:
        raise ValueError(f"operand: expected A, B, C or D after the form {args.form!r}")
    if _is_wgmma(args.form):
        return _run_wgmma(args, [(p, e) for p, e in ((args.png, ".png"), (args.svg, ".svg")) if p is not None])
    form = lookup(args.form)
    op = check_operand(args.operand)
    pictures = [(path, ext) for path, ext in ((args.png, ".png"), (args.svg, ".svg")) if path is not None]
    if pictures:
        from fragsim.viz.fragment_map import draw_fragment_map
        from .files import writable_file
        for path, ext in pictures:
            if not path.lower().endswith(ext):
                raise ValueError(f"--{ext[1:]} {path}: expected a file name ending in {ext}")
            writable_file(path, f"--{ext[1:]}")
        for path, _ in pictures:
            draw_fragment_map(form, op, path)
            print(f"wrote {path}")
        return 0
    if args.json:
        print(json.dumps(fragment_json(form, op)))
    elif args.by_lane:
        print(lane_list(form, op))
    else:
        print(fragment_grid(form, op))
    return 0
