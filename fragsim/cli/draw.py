"""fragsim draw KIND ... -o FILE: every picture fragsim draws, as PNG, SVG or PDF (by extension).

Kinds: ``fragment`` (one operand's map), ``mma`` (A, B and C/D together), ``flow`` (an
ldmatrix/stmatrix), ``bank-map`` (a tile coloured by bank), ``bank-phases``, ``bank-histogram``,
``bank-report`` (one instruction's accesses and cost), ``swizzle`` (logical -> physical),
``warp-tile``, ``cta-tile``, ``wgmma`` (a warpgroup fragment map), ``canonical`` (a wgmma operand's
canonical layout: core matrices, swizzle atoms, LBO/SBO over the shared-memory bytes), ``movmatrix``
(the source and destination fragment maps of the transpose) and ``check``
(expected vs received fragment map of ``fragsim check``, with its arguments).  Address expressions
are C, as in ``fragsim conflicts``.
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import WARP_LANES

from .args import writable_file

NAME = "draw"
HELP = "draw a picture (fragment map, ldmatrix flow, bank map, swizzle, warp/CTA tile, check result) to PNG/SVG/PDF"

TILE_HELP = ("tile in shared memory: 'ROWSxCOLS DTYPE [row|col] [pitch=N] [swizzle=B,M,S] [base=N]', "
             "e.g. '16x64 f16 swizzle=3,4,3'")
KINDS = {
    "fragment": "one operand's fragment map (which lane and register hold each element)",
    "mma": "the combined view: A left, B above, C/D where they meet",
    "flow": "ldmatrix/stmatrix: row addresses, where each element goes, where the rows are in memory",
    "bank-map": "a tile's elements coloured by bank (optionally one instruction's phase outlined)",
    "bank-phases": "one instruction: lanes -> banks, each phase as banks x wavefronts",
    "bank-histogram": "one instruction: wavefronts per phase, and each phase's load per bank",
    "bank-report": "bank-phases and bank-histogram in one picture",
    "swizzle": "logical tile -> physical placement of a swizzle or padding, with banks",
    "warp-tile": "a warp tile of mma tiles (e.g. 64x64 from 4x8 m16n8k16)",
    "cta-tile": "a CTA tile split among warps (warp ids)",
    "wgmma": "a wgmma form's warpgroup fragment map (A in registers, C or D): thread and element per cell, warp bands",
    "canonical": "a wgmma shared-memory operand: core matrices, swizzle atoms, LBO/SBO arrows over the bytes a "
                 "descriptor reads",
    "movmatrix": "movmatrix.sync.aligned.m8n8.trans.b16: who holds each element of the 8x8 matrix before and after",
    "check": "a check of address math (the arguments of `fragsim check`): expected vs received fragment map, "
             "mismatches in red",
}


def _output(p):
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="picture to write: .png, .svg or .pdf")


def _addresses(p, required=True):
    p.add_argument("--addrs", required=required, metavar="EXPR",
                   help="C expression of each lane's byte offset, in `lane` (0..31) and --var variables")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE", help="a variable of the expressions")
    p.add_argument("--swizzle", metavar="B,M,S", help="apply CUTLASS Swizzle<B,M,S> to the addresses")


def add_arguments(p):
    sub = p.add_subparsers(dest="kind", metavar="KIND", parser_class=type(p), required=True)
    k = {name: sub.add_parser(name, help=h, description=h) for name, h in KINDS.items()}
    k["fragment"].add_argument("form", help="mma form, e.g. m16n8k16.row.col.f32.f16.f16.f32")
    k["fragment"].add_argument("operand", help="A, B, C or D")
    k["mma"].add_argument("form", help="mma form")
    f = k["flow"]
    f.add_argument("op", nargs="?", help="ldmatrix/stmatrix .x1/.x2/.x4[.trans] (default: what moves --operand)")
    f.add_argument("--form", help="draw the load of this form's --operand (names the elements)")
    f.add_argument("--operand", help="A, B, C or D (with --form)")
    _addresses(f, required=False)
    f.add_argument("--tile", metavar="SPEC", help=TILE_HELP + "; names the logical rows, and places --operand")
    f.add_argument("--arrows", default="0", metavar="LANES", help="lanes to draw arrows for, e.g. 0,5 ('' for none)")
    b = k["bank-map"]
    b.add_argument("tile", metavar="TILE", help=TILE_HELP)
    b.add_argument("--op", help="outline what one phase of this instruction touches (with --addrs)")
    _addresses(b, required=False)
    b.add_argument("--phase", type=int, default=0, help="which phase to outline (default 0)")
    for name in ("bank-phases", "bank-histogram", "bank-report"):
        q = k[name]
        q.add_argument("op", help="shared-memory instruction, e.g. ldmatrix.x4, st.shared.v4.b32, cp.async.ca.16")
        _addresses(q)
        q.add_argument("--mask", metavar="MASK", help="active lanes: an int bit mask or a C condition in lane")
        q.add_argument("--src", metavar="EXPR", help="cp.async only: each lane's global source byte address")
    s = k["swizzle"]
    s.add_argument("--swizzle", metavar="B,M,S", help="CUTLASS Swizzle<B,M,S> on byte offsets")
    s.add_argument("--pitch", type=int, help="row pitch in bytes (padding when larger than --row-bytes)")
    s.add_argument("--row-bytes", type=int, default=128, help="bytes of one logical row (default 128)")
    s.add_argument("--rows", type=int, help="rows to draw (default: one period of the swizzle, at least 8)")
    s.add_argument("--tile", metavar="SPEC", help=TILE_HELP + " (instead of --swizzle/--pitch/--row-bytes)")
    w = k["warp-tile"]
    w.add_argument("form", nargs="?", default="m16n8k16.row.col.f32.f16.f16.f32", help="mma form")
    w.add_argument("--tiles", default="4x8", metavar="MxN", help="mma tiles in M and N (default 4x8)")
    c = k["cta-tile"]
    c.add_argument("--form", default="m16n8k16.row.col.f32.f16.f16.f32", help="mma form")
    c.add_argument("--cta", default="128x128", metavar="MxN", help="CTA output tile (default 128x128)")
    c.add_argument("--warps", default="2x2", metavar="MxN", help="warps in M and N (default 2x2)")
    c.add_argument("--warp-order", default="row", choices=("row", "col"),
                   help="warp id = warp_m * warps_n + warp_n (row, default) or warp_n * warps_m + warp_m (col)")
    k["wgmma"].add_argument("form", help="wgmma form after wgmma.mma_async.sync.aligned., e.g. m64n64k16.f32.bf16.bf16")
    k["wgmma"].add_argument("operand", help="A (in registers), C or D")
    g = k["canonical"]
    g.add_argument("--swizzle", default="128B", choices=("none", "128B", "64B", "32B"),
                   help="swizzle mode of CuTe's canonical layout (default 128B; ignored with --desc)")
    g.add_argument("--major", default="K", choices=("K", "MN"), help="K-major (default) or MN-major (imm-trans = 1)")
    g.add_argument("--bits", type=int, default=16, choices=(8, 16, 32), help="element bits (default 16)")
    g.add_argument("--rows", type=int, default=64, help="M = 64 for A, N for B (default 64)")
    g.add_argument("--desc", metavar="DESC", help="a descriptor: its 64-bit value or 'start=N lbo=N sbo=N "
                   "swizzle=MODE [base=N]' (default: CuTe's canonical layout for --swizzle)")
    from .check import add_check_arguments
    add_check_arguments(k["check"])
    for q in k.values():
        _output(q)


def _pair(text: str, what: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(x.strip().isdigit() for x in parts):
        raise ValueError(f"{what} {text!r}: expected MxN, e.g. 4x8")
    return int(parts[0]), int(parts[1])


def _swizzle(text):
    if text is None:
        return None
    from fragsim.layout.swizzle import Swizzle
    parts = text.split(",")
    try:
        b, m, s = (int(x, 0) for x in parts)
    except ValueError:
        raise ValueError(f"--swizzle {text!r}: expected B,M,S (three integers), e.g. 3,4,3") from None
    return Swizzle(b, m, s)


def _tile(spec):
    if spec is None:
        return None
    from fragsim.layout.tile import Tile
    return Tile.parse(spec)


def _addrs(args):
    from fragsim.search.addrexpr import evaluate
    if args.addrs is None:
        return None
    a = np.broadcast_to(evaluate(args.addrs, **_env(args)), (WARP_LANES,)).copy()
    sw = _swizzle(args.swizzle)
    return a if sw is None else sw(a)


def _env(args) -> dict:
    from . import args as args_
    return args_.one_value_each(args.var, "a picture shows one instruction") or {}


def _mask(args):
    from . import args as args_
    return args_.lane_mask(args.mask, _env(args))


def run(args) -> int:
    from fragsim.viz._figure import check_path
    out = writable_file(check_path(args.output), "-o")
    kind = args.kind
    if kind == "fragment":
        from fragsim.viz.fragment_map import draw_fragment_map
        draw_fragment_map(args.form, args.operand, out)
    elif kind == "mma":
        from fragsim.viz.fragment_map import draw_mma
        draw_mma(args.form, out)
    elif kind == "flow":
        from fragsim.viz.flow import draw_ldmatrix_flow
        arrows = [int(x) for x in args.arrows.replace(" ", "").split(",") if x] if args.arrows else []
        draw_ldmatrix_flow(args.op, _addrs(args), form=args.form, operand=args.operand, tile=_tile(args.tile),
                           arrows=arrows, path=out)
    elif kind == "bank-map":
        from fragsim.viz.banks import draw_bank_map
        if (args.op is None) != (args.addrs is None):
            raise ValueError("--op and --addrs go together (the instruction whose phase is outlined)")
        access = None if args.op is None else (args.op, _addrs(args))
        draw_bank_map(_tile(args.tile), access=access, phase=args.phase, path=out)
    elif kind in ("bank-phases", "bank-histogram", "bank-report"):
        from fragsim.viz import banks
        draw = {"bank-phases": banks.draw_bank_phases, "bank-histogram": banks.draw_bank_histogram,
                "bank-report": banks.draw_bank_report}[kind]
        src = None
        if args.src is not None:
            from fragsim.search.addrexpr import evaluate
            src = np.broadcast_to(evaluate(args.src, **_env(args)), (WARP_LANES,)).copy()
        draw(args.op, _addrs(args), mask=_mask(args), src=src, path=out)
    elif kind == "swizzle":
        from fragsim.viz.swizzle import draw_swizzle
        tile = _tile(args.tile)
        if tile is not None and (args.swizzle or args.pitch or args.rows):
            raise ValueError("--tile gives the whole layout; leave out --swizzle, --pitch and --rows")
        draw_swizzle(_swizzle(args.swizzle), tile=tile, rows=args.rows, row_bytes=args.row_bytes,
                     pitch=args.pitch, path=out)
    elif kind == "wgmma":
        from fragsim.instructions import check_operand
        from fragsim.instructions.wgmma import lookup_wgmma
        from fragsim.viz.warpgroup_map import draw_warpgroup_map
        form, op = lookup_wgmma(args.form), check_operand(args.operand)
        form.coords(op)                   # B (shared memory only) refused in one line
        draw_warpgroup_map(form, op, out)
    elif kind == "canonical":
        from fragsim.layout.descriptor import canonical_descriptor
        from fragsim.viz.canonical import draw_canonical
        desc = canonical_descriptor(args.swizzle, major=args.major, elem_bits=args.bits, rows=args.rows)
        if args.desc is not None:
            from .check_wgmma import descriptor
            desc = descriptor(args.desc)
            if isinstance(desc, str):
                raise ValueError(f"--desc {args.desc!r}: expected a 64-bit value or 'start=N lbo=N sbo=N swizzle=MODE'")
        draw_canonical(desc, major=args.major, elem_bits=args.bits, rows=args.rows, path=out)
    elif kind == "movmatrix":
        from fragsim.viz.movmatrix_map import draw_movmatrix_map
        draw_movmatrix_map(out)
    elif kind == "check":
        from fragsim.viz.check_result import draw_check
        from .check import checker
        report = checker(args)(False)
        draw_check(report, out)
        print(report.verdict())
    elif kind == "warp-tile":
        from fragsim.viz.tiles import draw_warp_tile
        m, n = _pair(args.tiles, "--tiles")
        draw_warp_tile(args.form, m, n, out)
    else:
        from fragsim.viz.tiles import draw_cta_tile
        draw_cta_tile(_pair(args.cta, "--cta"), _pair(args.warps, "--warps"), args.form,
                      warp_order=args.warp_order, path=out)
    print(f"wrote {out}")
    return 0
