"""fragsim layout FORM OPERAND: which lane and register hold which matrix element (as text, JSON,
or with --png/--svg the picture)."""

from __future__ import annotations

import json

from ..instructions import check_operand, lookup
from ..textmap import fragment_grid, fragment_json, lane_list

NAME = "layout"
HELP = "print the lane/register map of an mma operand (PTX ISA figure order)"


def add_arguments(p):
    p.add_argument("form", help="mma form, e.g. m16n8k16.row.col.f32.f16.f16.f32")
    p.add_argument("operand", help="A, B, C or D")
    p.add_argument("--by-lane", action="store_true", help="list each lane's registers instead of the matrix grid")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--png", metavar="FILE", help="draw the map as a PNG picture (as `fragsim draw fragment`)")
    p.add_argument("--svg", metavar="FILE", help="draw the map as an SVG picture")


def _run_wgmma(args, pictures) -> int:
    """A wgmma form (PTX spelling after wgmma.mma_async.sync.aligned.): the warpgroup maps of A, C, D."""
    from ..instructions.wgmma import lookup_wgmma
    from ..warpgroup import owners
    form = lookup_wgmma(args.form)
    op = check_operand(args.operand)
    form.coords(op)                       # B (shared memory only) refused in one line
    if pictures:
        from ..viz.warpgroup_map import draw_warpgroup_map
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


def _is_wgmma(spelling) -> bool:
    return isinstance(spelling, str) and spelling.strip().lower().startswith(("wgmma.", "m64n"))


def run(args) -> int:
    if _is_wgmma(args.form):
        return _run_wgmma(args, [(p, e) for p, e in ((args.png, ".png"), (args.svg, ".svg")) if p is not None])
    form = lookup(args.form)
    op = check_operand(args.operand)
    pictures = [(path, ext) for path, ext in ((args.png, ".png"), (args.svg, ".svg")) if path is not None]
    if pictures:
        from ..viz.fragment_map import draw_fragment_map
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
