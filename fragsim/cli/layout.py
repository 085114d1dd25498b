"""fragsim layout FORM OPERAND: which thread and register hold which matrix element of an mma.sync
or wgmma operand (as text -- the grid in column blocks that fit --width, or --by-lane --, JSON, or
with --png/--svg the picture); ``fragsim layout movmatrix``: who holds each element of the 8x8
source matrix before and after the transpose."""

from __future__ import annotations

import json

import numpy as np

from fragsim.facts.hardware import MATRIX_ROWS, WARP_LANES
from fragsim.instructions.text import DEFAULT_WIDTH, fragment_grid, fragment_json, fragment_map, lane_list

NAME = "layout"
HELP = "print the thread/register map of an mma or wgmma operand (PTX ISA figure order)"


def add_arguments(p):
    p.add_argument("form", help="mma form, e.g. m16n8k16.row.col.f32.f16.f16.f32, a wgmma form (after "
                   "wgmma.mma_async.sync.aligned., e.g. m64n64k16.f32.bf16.bf16), or movmatrix")
    p.add_argument("operand", nargs="?", help="A, B, C or D (wgmma: A, C or D; none for movmatrix)")
    p.add_argument("--by-lane", action="store_true", help="list each lane's (wgmma: thread's) registers and the "
                   "elements they hold instead of the matrix grid")
    p.add_argument("--cols", metavar="LOW..HIGH", help="print only these columns of the grid (both included), "
                   "e.g. --cols 0..31, or one column: --cols 5")
    p.add_argument("--width", type=int, metavar="CHARS", help=f"characters per line: wider grids come in blocks of "
                   f"columns, longer --by-lane lines continue below; default {DEFAULT_WIDTH}, 0: no limit")
    p.add_argument("--json", action="store_true", help="machine-readable output (one schema for mma and wgmma maps)")
    p.add_argument("--png", metavar="FILE", help="draw the map as a PNG picture (as `fragsim draw fragment`)")
    p.add_argument("--svg", metavar="FILE", help="draw the map as an SVG picture")


def _cols(text: str, ncols: int) -> range:
    """--cols LOW..HIGH (both included) or one column."""
    low, dots, high = text.partition("..")
    try:
        lo = int(low.strip(), 0)
        hi = int(high.strip(), 0) if dots else lo
    except ValueError:
        raise ValueError(f"--cols {text!r}: expected LOW..HIGH (both included), e.g. --cols 0..31, "
                         f"or one column number") from None
    if hi < lo:
        raise ValueError(f"--cols {text}: the range is empty (write LOW..HIGH, LOW <= HIGH)")
    if lo < 0 or hi >= ncols:
        raise ValueError(f"--cols {text}: the matrix has columns 0..{ncols - 1}")
    return range(lo, hi + 1)


def _refuse(args, options, why: str):
    """Options that do not apply to what is printed: refused, not silently ignored."""
    given = [o for o in options if getattr(args, o.lstrip("-").replace("-", "_")) not in (None, False)]
    if given:
        raise ValueError(f"{given[0]}: {why}; leave it out")


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
        lane, half = (np.empty((MATRIX_ROWS, MATRIX_ROWS), np.int64) for _ in range(2))   # the square 8x8 matrix
        lane[rows[:, 0], cols[:, 0]] = np.arange(WARP_LANES)[:, None]
        half[rows[:, 0], cols[:, 0]] = np.arange(2)[None, :]
        grids[which] = lane, half
    if args.json:
        print(json.dumps({"instruction": MOVMATRIX.ptx, "shape": [MATRIX_ROWS, MATRIX_ROWS],
                          **{w: {"lane": lane.tolist(), "half": half.tolist()} for w, (lane, half) in grids.items()}}))
        return 0
    heads = {"src": "source register (before): lane l holds row l/4, columns 2(l%4) and +1",
             "dst": "destination register (after): the same fragment layout of the transpose"}
    out = [f"{MOVMATRIX.ptx}: 8x8 b16 source matrix, 1 register x 2 halves (e0 low, e1 high) per lane"]
    for which, (lane, half) in grids.items():
        out += ["", heads[which], "row\\col " + " ".join(f"{c:>6}" for c in range(MATRIX_ROWS))]
        out += [f"{r:>7} " + " ".join(f"T{lane[r, c]}:e{half[r, c]}".rjust(6) for c in range(MATRIX_ROWS))
                for r in range(MATRIX_ROWS)]
    print("\n".join(out))
    return 0


def _writable(pictures):
    from .args import writable_file
    for path, ext in pictures:
        if not path.lower().endswith(ext):
            raise ValueError(f"--{ext[1:]} {path}: expected a file name ending in {ext}")
        writable_file(path, f"--{ext[1:]}")


def run(args) -> int:
    pictures = [(path, ext) for path, ext in ((args.png, ".png"), (args.svg, ".svg")) if path is not None]
    if args.width is not None and args.width < 0:
        raise ValueError(f"--width {args.width}: expected a number of characters per line (0: no limit)")
    if _is_movmatrix(args.form):
        _refuse(args, ("--cols", "--width"), "movmatrix's grids are 8 columns wide")
        return _run_movmatrix(args, pictures)
    if args.operand is None:
        raise ValueError(f"operand: expected A, B, C or D after the form {args.form!r}")
    m = fragment_map(args.form, args.operand)
    if pictures:
        _refuse(args, ("--by-lane", "--json", "--cols", "--width"), "--png/--svg draw the whole map")
        _writable(pictures)
        for path, _ in pictures:
            if m.warpgroup:
                from fragsim.viz.warpgroup_map import draw_warpgroup_map
                draw_warpgroup_map(m.form, m.operand, path)
            else:
                from fragsim.viz.fragment_map import draw_fragment_map
                draw_fragment_map(m.form, m.operand, path)
            print(f"wrote {path}")
        return 0
    width = DEFAULT_WIDTH if args.width is None else args.width
    if args.json:
        _refuse(args, ("--by-lane", "--cols", "--width"), "--json gives the whole map")
        print(json.dumps(fragment_json(m)))
    elif args.by_lane:
        _refuse(args, ("--cols",), "--cols selects columns of the grid; --by-lane lists every thread")
        print(lane_list(m, width=width))
    else:
        cols = None if args.cols is None else _cols(args.cols, m.shape[1])
        print(fragment_grid(m, width=width, cols=cols))
    return 0
