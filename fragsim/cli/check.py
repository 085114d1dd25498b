"""fragsim check: verify hand-written address math (loads into fragments, epilogue stores, copies,
and wgmma's shared-memory matrix descriptors: --wgmma).

Exit code 0 when every element is where it must be, 1 when the address math is wrong (the
diagnosis says how), 2 on bad input or, with --gpu, when no GPU can run it, 3 when the GPU does not
deliver what fragsim says.
"""

from __future__ import annotations

import json
import sys

from . import args as args_

NAME = "check"
HELP = ("check hand-written lane -> address math: do ldmatrix/ld.shared loads fill the mma fragments, "
        "stmatrix/st.shared stores put C where the tile says, cp.async copies fill the tile exactly once, "
        "wgmma descriptors read the operand from the tile?")

EXIT_WRONG, EXIT_INPUT, EXIT_GPU_DISAGREES = 1, 2, 3


def add_arguments(p):
    add_check_arguments(p, tile_required=False)
    p.add_argument("--tma", metavar="SPEC", help="with --wgmma: the tensor map whose TMA boxes fill the operand, "
                   "'dtype=bf16,dims=200x100,box=64x64,swizzle=128B' (lists innermost first; strides=, fill=, base= "
                   "optional): do the k-steps read what the TMA wrote?")
    p.add_argument("--dst", action="append", metavar="ADDR", help="--tma: the shared address of a box (once per box, "
                   "loaded in order)")
    p.add_argument("--coords", action="append", metavar="C0,C1", help="--tma: the box's start, innermost first (once "
                   "per --dst; default 0,0)")
    p.add_argument("--advance", type=int, metavar="BYTES", help="--tma: bytes the kernel adds to the descriptor's "
                   "start address per k-step (one --wgmma: that of k-step 0)")
    p.add_argument("--k-dim", type=int, choices=(0, 1), help="--tma: the map's dimension along K (default: 0 for "
                   "--major K, 1 for --major MN)")
    p.add_argument("--gpu", action="store_true", help="also run the instructions with these addresses on this "
                   "machine's GPU (CuPy) and confirm the hardware delivers what fragsim says")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--png", metavar="FILE", help="also draw expected vs received fragment map as a PNG picture "
                   "(as `fragsim draw check`)")
    p.add_argument("--svg", metavar="FILE", help="also draw it as an SVG picture")


def add_check_arguments(p, tile_required=True):
    """What is checked: the tile, the instructions and their addresses (``fragsim check`` and ``fragsim draw check``;
    ``fragsim check --tma`` takes no tile)."""
    p.add_argument("--form", metavar="FORM", help="mma form in PTX spelling, e.g. m16n8k16.row.col.f32.bf16.bf16.f32 "
                   "(loads and stores)")
    p.add_argument("--operand", metavar="A|B|C", help="the fragment the loads fill (A, B or C); stores: C")
    p.add_argument("--tile", required=tile_required, metavar="SPEC", help="the tile in shared memory: 'ROWSxCOLS DTYPE [row|col] "
                   "[pitch=N] [swizzle=B,M,S] [base=N]', e.g. '128x32 bf16 row pitch=64 swizzle=2,4,3'")
    kind = p.add_mutually_exclusive_group(required=True)
    kind.add_argument("--load", action="append", metavar="'OP: EXPR'", help="one load, in order: its op and its "
                      "lanes' byte address as a C expression in lane and --var variables, e.g. "
                      "'ldmatrix.x4: (lane %% 16) * 64 + (lane / 16) * 16' (repeatable)")
    kind.add_argument("--store", action="append", metavar="'OP: EXPR'", help="one store (stmatrix or st.shared), in "
                      "order, as --load (repeatable)")
    kind.add_argument("--copy", action="append", metavar="'OP: EXPR'", help="one copy instruction (cp.async or "
                      "st.shared) of the CTA's fill: its destination address (repeatable)")
    kind.add_argument("--wgmma", action="append", metavar="DESC", help="a wgmma matrix descriptor (--form is a wgmma "
                      "form, --operand A or B): its 64-bit value or a C expression in k (the k-step) giving it, or its "
                      "fields 'start=EXPR lbo=N sbo=N swizzle=128B [base=N]' (expressions in k allowed); once for all "
                      "k-steps or once per k-step")
    p.add_argument("--major", choices=("K", "MN"), help="wgmma: the operand's majorness (MN: imm-trans = 1; default K)")
    p.add_argument("--steps", type=int, metavar="N", help="wgmma: the number of k-steps to check (default: as many as "
                   "the tile's columns hold for an expression in k, else 1 or one per --wgmma)")
    p.add_argument("--src", action="append", metavar="EXPR", help="copies: each lane's global byte offset into the "
                   "source matrix (once for all copies, or once per --copy); default: chunk 32*k + lane")
    p.add_argument("--mask", action="append", metavar="COND", help="active lanes of plain ops: a C condition in lane "
                   "(and tid), or an int bit mask (once for all, or once per instruction)")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUES",
                   help="values of a variable of the expressions (repeatable): 2, 0..3 (both included) or 0,2; "
                   "a copy issues one instruction per value (--var pass=0..3), loads and stores are checked "
                   "once per combination (--var k=0..3)")
    p.add_argument("--at", metavar="ROW,COL", help="where fragment 0 sits in the tile (default 0,0; expressions allowed)")
    p.add_argument("--fragment", action="append", metavar="ROW,COL", help="where each fragment sits, in order "
                   "(repeatable; instead of --at)")
    p.add_argument("--regmap", metavar="F:R,...", help="which fragment register each loaded register is, in order, "
                   "e.g. 0:0,1:0,0:1,1:1")
    p.add_argument("--threads", type=int, metavar="N", help="copies: the CTA's threads (adds the warps and the "
                   "variables warp and tid = 32 * warp + lane)")
    p.add_argument("--global-pitch", type=int, metavar="BYTES", help="copies: bytes between two lines of the global "
                   "source matrix (default: a line of the tile)")


def _item(text: str, option: str) -> tuple[str, str]:
    op, sep, expr = text.partition(":")
    while sep and expr.startswith(":"):          # a "::" in the op (shared::cta): the separator comes later
        more, sep, expr = expr[1:].partition(":")
        op = f"{op}::{more}"
    if not sep or not op.strip() or not expr.strip():
        raise ValueError(f"{option} {text!r}: expected 'OP: EXPR', e.g. 'ldmatrix.x4: lane * 16'")
    return op.strip(), expr.strip()


def _per(values, n: int, option: str, what: str) -> list:
    if not values:
        return [None] * n
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise ValueError(f"{option} is given {len(values)} times for {n} {what}: give it once for all, or once each")
    return list(values)


def _mask(text):
    if text is None:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return text


def checker(args, env: dict | None = None):
    """The check the arguments ask for, as a function of ``gpu`` (True or False) returning the report.

    ``env``: one value per --var (loads and stores are checked once per combination of the values;
    a copy takes every value at once, one instruction each)."""
    from fragsim.check import check_copy, check_load, check_store
    from fragsim.layout.tile import Tile

    if getattr(args, "wgmma", None):
        raise ValueError("--wgmma: draw a descriptor check with fragsim check --wgmma ... --png FILE")
    tile = Tile.parse(args.tile)
    kind = "load" if args.load else "store" if args.store else "copy"
    specs = args.load or args.store or args.copy
    items = [_item(s, f"--{kind}") for s in specs]
    masks = _per(args.mask, len(items), "--mask", f"{kind}s")
    if kind == "copy":
        for opt in ("form", "operand", "at", "fragment", "regmap"):
            if getattr(args, opt) is not None:
                raise ValueError(f"--{opt} is for loads and stores; a copy fills the whole tile")
        srcs = _per(args.src, len(items), "--src", "copies")
        copies = [(op, e, s, _mask(m)) for (op, e), s, m in zip(items, srcs, masks)]
        call = lambda g: check_copy(tile, copies, variables=args_.variables(args.var) or None,  # noqa: E731
                                    threads=args.threads, global_pitch=args.global_pitch, gpu=g)
    else:
        if args.src or args.threads or args.global_pitch is not None:
            raise ValueError("--src, --threads and --global-pitch are for copies (--copy)")
        if not args.form:
            raise ValueError(f"--{kind} needs --form (the mma form whose fragments the registers are)")
        operand = args.operand or ("C" if kind == "store" else None)
        if operand is None:
            raise ValueError("--load needs --operand A, B or C (the fragment the loads fill)")
        if args.at and args.fragment:
            raise ValueError("give either --at (fragment 0; the others follow) or --fragment for each, not both")
        ins = [(op, e) if m is None else (op, e, _mask(m)) for (op, e), m in zip(items, masks)]
        kw = dict(variables=env if env is not None else args_.one_value_each(args.var, "a picture shows one check"),
                  at=args_.pair(args.at, "--at") if args.at else None,
                  fragments=[args_.pair(f, "--fragment") for f in args.fragment] if args.fragment else None,
                  regmap=args_.regmap(args.regmap) if args.regmap else None)
        fn = check_load if kind == "load" else check_store
        call = lambda g: fn(args.form, operand, tile, ins, gpu=g, **kw)  # noqa: E731
    return call


def run(args) -> int:
    pictures = _pictures(args)
    if args.tma is not None:
        from . import check_tma
        return check_tma.run(args, pictures)
    for opt in ("dst", "coords", "advance", "k_dim"):
        if getattr(args, opt) is not None:
            raise ValueError(f"--{opt.replace('_', '-')} is for --tma")
    if args.tile is None:
        raise ValueError("--tile is required (the tile in shared memory), except with --tma")
    if args.wgmma:
        from . import check_wgmma as wgmma_cli
        return wgmma_cli.run(args, pictures)
    if args.major is not None or args.steps is not None:
        raise ValueError("--major and --steps are for --wgmma")
    if args.copy:
        return _run_one(args, checker(args), pictures)
    many = args_.variables(args.var)
    envs = args_.combinations(many)
    if len(envs) == 1:
        return _run_one(args, checker(args, envs[0]), pictures)
    if pictures:
        raise ValueError("--png/--svg draw one check: give each --var one value")
    if args.gpu:
        raise ValueError("--gpu runs one check: give each --var one value")
    reports = [(env, checker(args, env)(False)) for env in envs]
    varied = [k for k, v in many.items() if len(v) > 1]
    if args.json:
        print(json.dumps([{"variables": env, **r.to_dict()} for env, r in reports]))
    else:
        for env, r in reports:
            print(f"== {args_.describe({k: env[k] for k in varied})}")
            print(r)
        bad = sum(not r.ok for _, r in reports)
        print(f"{len(reports) - bad} of {len(reports)} combinations of {', '.join(varied)} correct")
    return 0 if all(r.ok for _, r in reports) else EXIT_WRONG


def _run_one(args, call, pictures) -> int:
    if args.gpu:
        from fragsim.gpu_check.runner import GpuUnavailable

        try:
            report = call(True)
        except GpuUnavailable as e:
            sys.stderr.write(f"fragsim check: error: --gpu: {e}\n")
            return EXIT_INPUT
    else:
        report = call(False)
    print(json.dumps(report.to_dict()) if args.json else report)
    if pictures:
        from fragsim.viz.check_result import draw_check
        for path in pictures:
            draw_check(report, path)
            if not args.json:
                print(f"wrote {path}")
    if report.gpu is not None and not report.gpu.agrees:
        return EXIT_GPU_DISAGREES
    return 0 if report.ok else EXIT_WRONG


def _pictures(args) -> list:
    """The --png/--svg files, checked before anything runs (a bad name is one line, exit 2)."""
    from .args import writable_file
    out = []
    for path, ext in ((args.png, ".png"), (args.svg, ".svg")):
        if path is not None:
            if not path.lower().endswith(ext):
                raise ValueError(f"--{ext[1:]} {path}: expected a file name ending in {ext}")
            out.append(writable_file(path, f"--{ext[1:]}"))
    return out
