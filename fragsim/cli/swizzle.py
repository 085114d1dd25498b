"""fragsim swizzle --tile SPEC (--preset ... | --read/--write "OP: EXPR"): rank the layouts of a tile.

Examples::

    fragsim swizzle --tile "128x32 bf16" --preset copy --preset a --form m16n8k16.row.col.f32.bf16.bf16.f32
    fragsim swizzle --tile "128x32 bf16 swizzle=2,4,2" --var warp=0..3 --var pass=0..3 \\
        --write "cp.async.cg.16: int t = warp*32 + lane; int r = t/4 + pass*32; r*64 + ((t%4 ^ (r&3))*16) | src: ..."
    fragsim swizzle --tile "128x32 bf16" --preset a --form F --compare none 2,4,2 2,4,3 pitch=80

Also the layout options of ``fragsim conflicts`` (``--swizzle``, ``--pitch``): ``conflicts_with_layouts``.
"""

from __future__ import annotations

import json

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from . import args as args_
from .args import variables as parse_variables

NAME = "swizzle"
HELP = "rank the layouts (swizzles, XOR maps, paddings) of a shared-memory tile for a CTA's access set"
PRESETS = ("copy", "a", "b", "epilogue", "rows")


def add_arguments(p):
    p.add_argument("--tile", required=True, metavar="SPEC",
                   help="the tile: 'ROWSxCOLS DTYPE [row|col] [pitch=N] [swizzle=B,M,S] [base=N]', e.g. "
                   "'128x32 bf16'. Its pitch= and swizzle= say how your --read/--write addresses are ALREADY laid "
                   "out: the addresses are read back through that layout to find the element each lane moves, and are "
                   "not swizzled again (the table's 'your tile's layout' row). To try a swizzle on unswizzled "
                   "addresses, leave swizzle= out (every swizzle is tried) or name it in --compare; `fragsim conflicts "
                   "--swizzle B,M,S` applies a swizzle to the addresses it is given. The table's wavefronts and "
                   "conflicts are totals over every instruction of the access set")
    g = p.add_argument_group("access set from presets")
    g.add_argument("--preset", action="append", default=[], metavar="NAME[:OP]",
                   help="copy[:cp.async.ca.16|cp.async.cg.16|cp.async.ca.8|st.shared.v4.b32] (global -> shared "
                   "rows), a[:ldmatrix.x4] / b[:ldmatrix.x4.trans] (mma operand reads; needs --form), "
                   "epilogue[:stmatrix.x4|st.shared.v2.b32] (C stores then ld.shared.v4 rows; needs --form), "
                   "rows[:ld.shared.v4.b32]; repeatable")
    g.add_argument("--form", help="mma form of the a/b/epilogue presets, e.g. m16n8k16.row.col.f32.bf16.bf16.f32")
    g.add_argument("--warps", default="2x2", metavar="MxN", help="warps along M x N (default 2x2)")
    g.add_argument("--warp-tile", metavar="MxN", help="warp tile (default: the tile split over the warps)")
    g.add_argument("--k-steps", type=int, help="k-steps the a/b presets read (default: all of the tile's K)")
    g.add_argument("--dims", help="which tile axis is which: mk|km for a, kn|nk for b, mn|nm for epilogue")
    g.add_argument("--threads", type=int, help="threads of the CTA for copy/rows (default 32 x warps)")
    g.add_argument("--global-pitch", type=int, help="cp.async: bytes between rows of the global source "
                   "(default: the tile's row; with --write, the sources then say which element a lane copies)")
    g.add_argument("--global-base", type=_address, default=0,
                   help="cp.async: the global source's byte address (128-byte aligned; default 0)")
    u = p.add_argument_group("access set from your address math")
    u.add_argument("--read", action="append", default=[], metavar="'OP: EXPR'",
                   help="a load and its C address expression in lane and --var variables, e.g. "
                   "\"ldmatrix.x4: (warp*16 + lane%%16)*64 + (lane/16)*16\"; repeatable")
    u.add_argument("--write", action="append", default=[], metavar="'OP: EXPR [| src: EXPR]'",
                   help="a store or cp.async and its address expression; for cp.async '| src: EXPR' gives the "
                   "global source address; repeatable")
    u.add_argument("--var", action="append", default=[], metavar="NAME=VALUES",
                   help="values of a variable the expressions read: 3, 0..3 (both included) or 0,2,4; an "
                   "expression is issued once per combination of the variables it reads. Nothing is supplied "
                   "for you: an expression that reads warp needs --var warp=0..N-1 (one value per warp of the "
                   "CTA), and then every warp issues every --read/--write of the set")
    s = p.add_argument_group("search")
    s.add_argument("--compare", nargs="+", metavar="CAND", help="score only these layouts: none, B,M,S "
                   "(Swizzle), pitch=N, xor:4^7,5^8 (bit 4 ^= bit 7, bit 5 ^= bit 8)")
    s.add_argument("--top", type=int, default=10, help="layouts to verify and rank (default 10)")
    s.add_argument("--xor-row-bits", type=int, help="row bits the general XOR maps read (default 3-5)")
    s.add_argument("--max-padding", type=int, default=128, help="largest padding tried, bytes (default 128)")
    s.add_argument("--no-swizzles", action="store_true", help="leave out the Swizzle<B,M,S> family")
    s.add_argument("--no-xor", action="store_true", help="leave out the general XOR maps")
    s.add_argument("--no-padding", action="store_true", help="leave out the paddings")
    p.add_argument("--detail", action="store_true", help="also print every instruction's figures")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _address(text: str) -> int:
    """An integer, decimal or 0x hex (argparse names the option when this raises)."""
    return int(text, 0)


_address.__name__ = "address"


def parse_candidate(text: str, tile):
    """'none' | 'B,M,S' | 'pitch=N' | 'xor:4^7,5^8' -> a candidate for swizzle_search(candidates=...)."""
    from fragsim.layout.tile import parse_swizzle
    from fragsim.layout.xor_map import XorMap

    t = text.strip().lower()
    if t.startswith("pitch="):
        try:
            return ("pitch", int(t[6:], 0))
        except ValueError:
            raise ValueError(f"candidate {text!r}: pitch=N needs an integer") from None
    if t.startswith("xor:"):
        terms: dict = {}
        for part in t[4:].split(","):
            bits = part.split("^")
            try:
                nums = [int(b) for b in bits]
            except ValueError:
                nums = []
            if len(nums) < 2:
                raise ValueError(f"candidate {text!r}: expected xor:T^S[^S...],... (bit T ^= bits S), e.g. xor:4^7,5^8")
            terms.setdefault(nums[0], []).extend(nums[1:])
        return XorMap.xor(terms)
    return parse_swizzle(t)


def _used(variables: dict, *exprs) -> dict:
    """The --var variables an instruction is issued over: those its expressions read, and ``warp``
    always (every warp of the CTA issues it)."""
    from fragsim.search.addrexpr import parse

    names = {"warp"}
    for e in exprs:
        if e is not None:
            names |= set(parse(e).variables)
    return {k: v for k, v in variables.items() if k in names}


def _split_op(text: str, flag: str):
    op, colon, rest = text.partition(":")
    if not colon or not op.strip() or not rest.strip():
        raise ValueError(f"{flag} {text!r}: expected 'OP: EXPR', e.g. \"ldmatrix.x4: lane * 16\"")
    expr, bar, src = rest.partition("|")
    src_expr = None
    if bar:
        key, colon2, val = src.partition(":")
        if key.strip() != "src" or not colon2 or not val.strip():
            raise ValueError(f"{flag} {text!r}: after '|' expected 'src: EXPR' (cp.async's global source address)")
        src_expr = val.strip()
    return op.strip(), expr.strip(), src_expr


def build_access_sets(args, tile):
    """(reads, writes) AccessSets from the presets and the --read/--write expressions."""
    from fragsim.search import access as A

    sets = []
    warps = A.shape_pair(args.warps, "--warps")
    threads = args.threads if args.threads is not None else warps[0] * warps[1] * WARP_LANES
    for item in args.preset:
        name, _, op = item.partition(":")
        name, op = name.strip().lower(), op.strip() or None
        if name not in PRESETS:
            raise ValueError(f"--preset {item!r}: expected one of {', '.join(PRESETS)} (optionally NAME:OP)")
        if name in ("a", "b", "epilogue") and not args.form:
            raise ValueError(f"--preset {name} needs --form (the mma form whose fragments it moves)")
        if name == "copy":
            sets.append(A.copy(tile, op or "cp.async.ca.16", threads=threads, global_pitch=args.global_pitch,
                               global_base=args.global_base))
        elif name == "rows":
            sets.append(A.row_reads(tile, op or "ld.shared.v4.b32", threads=threads))
        elif name in ("a", "b"):
            sets.append(A.mma_operand(tile, args.form, name.upper(), warps=warps, warp_tile=args.warp_tile,
                                      k_steps=args.k_steps, op=op, dims=args.dims))
        else:
            sets.append(A.epilogue(tile, args.form, warps=warps, warp_tile=args.warp_tile, store_op=op,
                                   dims=args.dims or "mn", threads=args.threads))
    variables = parse_variables(args.var)
    for flag, items in (("--write", args.write), ("--read", args.read)):
        for k, item in enumerate(items):
            op, expr, src = _split_op(item, flag)
            sets.append(A.from_exprs(tile, op, expr, src=src, variables=_used(variables, expr, src) or None,
                                     global_pitch=args.global_pitch, global_base=args.global_base,
                                     name=flag[2:] + (f" {k + 1}" if len(items) > 1 else "")))
    if not sets:
        raise ValueError("give an access set: --preset NAME (copy, a, b, epilogue, rows) and/or --read/--write 'OP: EXPR'")
    whole = A.AccessSet(sets)
    return whole.reads, whole.writes


def run(args) -> int:
    from fragsim.search.swizzle_search import swizzle_search
    from fragsim.layout.tile import Tile

    tile = Tile.parse(args.tile)
    reads, writes = build_access_sets(args, tile)
    cands = None if not args.compare else [parse_candidate(c, tile) for c in args.compare]
    r = swizzle_search(tile, reads, writes, candidates=cands, swizzles=not args.no_swizzles,
                       xor_maps=not args.no_xor, xor_row_bits=args.xor_row_bits, paddings=not args.no_padding,
                       max_padding=args.max_padding, top=None if cands else args.top)
    if args.json:
        print(json.dumps(r.to_dict()))
    else:
        print(r.table(detail=args.detail))
    return 0


# ---------------------------------------------------------------------------------------------
# fragsim conflicts --swizzle B,M,S --pitch N: one instruction under several layouts
# ---------------------------------------------------------------------------------------------

def conflicts_with_layouts(args, o, many: dict, read_file) -> int:
    """``fragsim conflicts`` with ``--swizzle``/``--pitch``: every (pitch, swizzle) combination in one
    labelled table.  ``--pitch N`` sets the variable ``pitch`` of the expressions; the swizzle is
    applied to every lane's address.  ``many``: the --var variables and their values; an expression is
    issued once per combination of them, and each layout's figures are totals over those instructions
    (with the range per instruction).  ``read_file``: conflicts' reader of ``--addrs-file``."""
    from fragsim.search.addrexpr import evaluate
    from fragsim.banks import bank_conflicts
    from fragsim.layout.tile import parse_swizzle

    if args.pitch and args.addrs is None:
        raise ValueError("--pitch sets the variable `pitch` of --addrs EXPR; a file of addresses has none")
    if args.pitch and "pitch" in many:
        raise ValueError("--pitch sets the variable `pitch`; do not also give --var pitch=...")
    envs = args_.combinations(many)
    if args.addrs is None and len(envs) > 1:
        raise ValueError("--addrs-file gives every instruction's addresses: give each --var one value "
                         "(ranges issue an --addrs expression once per value)")
    pitches = list(args.pitch) if args.pitch else [None]
    swizzles = [parse_swizzle(s) for s in args.swizzle] if args.swizzle else [None]
    rows: list[dict] = []
    n = 1
    for pitch in pitches:
        lanes = [dict(env) if pitch is None else {**env, "pitch": pitch} for env in envs]
        if args.addrs is not None:
            addrs = np.stack([np.broadcast_to(evaluate(args.addrs, **env), (WARP_LANES,)) for env in lanes])
        elif args.addrs_file is not None:
            addrs = read_file(args.addrs_file)
        else:
            raise ValueError("give the lane addresses: --addrs EXPR or --addrs-file FILE")
        src = None if args.src is None else np.stack([np.broadcast_to(evaluate(args.src, **env), (WARP_LANES,))
                                                       for env in lanes])
        if src is not None and len(src) != len(addrs):
            src = np.broadcast_to(src[0], addrs.shape)
        masks = [args_.lane_mask(args.mask, env) for env in lanes]
        if o.kind in ("ldsm", "stsm") and masks[0] is not None:
            raise ValueError(f"--mask: {o.name} is .sync.aligned, every lane of the warp executes it")
        if masks[0] is None:
            mask = None
        elif len(masks) == 1:
            mask = masks[0]
        else:   # a batch takes one mask per instruction: bit masks as ints, conditions as 32 booleans
            mask = (np.array(masks, np.int64) if isinstance(masks[0], int)
                    else np.stack([np.asarray(m, bool) for m in masks]))
        n = len(addrs)
        for sw in swizzles:
            a = addrs if sw is None else sw(np.asarray(addrs, dtype=np.int64))
            r = bank_conflicts(o, a if n > 1 else a[0], mask, src if src is None or n > 1 else src[0])
            wfs, ideals = np.atleast_1d(r.wavefronts).astype(np.int64), np.atleast_1d(r.ideal).astype(np.int64)
            label = ", ".join(x for x in (f"pitch={pitch}" if pitch is not None else "",
                                          repr(sw) if sw is not None else "no swizzle") if x)
            wf, ideal = int(wfs.sum()), int(ideals.sum())
            row = {"layout": label, "wavefronts": wf, "ideal": ideal, "conflicts": wf - ideal, "instructions": n}
            if n > 1:
                row["per_instruction"] = [{"wavefronts": int(w), "ideal": int(i), "conflicts": int(w - i)}
                                          for w, i in zip(wfs, ideals)]
            rows.append(row)
    several = {k: v for k, v in many.items() if len(v) > 1}
    if args.json:
        body: dict = {"op": o.name, "layouts": rows}
        if len(envs) > 1:
            body["variables"] = envs
        print(json.dumps(body))
        return 0
    what = "each swizzle applied to every lane's address" if args.swizzle else "each --pitch the value of `pitch`"
    if n == 1:
        print(f"{o.name}: 1 instruction under {len(rows)} layout(s), {what}")
    else:
        issued = (f" (one per combination of --var {', '.join(several)})" if len(envs) > 1
                  else f" ({args.addrs_file}: one per line)")
        print(f"{o.name}: {n} instructions{issued} under {len(rows)} layout(s), {what}; wavefronts, ideal, "
              f"conflicts: totals over the {n} instructions (per instruction)")
    cells = [(str(x["layout"]), *(_total(x, k) for k in ("wavefronts", "ideal", "conflicts"))) for x in rows]
    head = ("layout", "wavefronts", "ideal", "conflicts")
    w = [max(len(c[i]) for c in [head, *cells]) for i in range(4)]
    for c in [head, *cells]:
        print("  ".join(v.ljust(w[i]) if i == 0 else v.rjust(w[i]) for i, v in enumerate(c)))
    return 0


def _total(row: dict, key: str) -> str:
    """A layout's total, with its range per instruction when there are several: '128 (4/instr)', '80 (4-8/instr)'."""
    if "per_instruction" not in row:
        return str(row[key])
    each = [x[key] for x in row["per_instruction"]]
    lo, hi = min(each), max(each)
    return f"{row[key]} ({lo if lo == hi else f'{lo}-{hi}'}/instr)"
