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


def run(args) -> int:
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
