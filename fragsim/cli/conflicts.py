"""fragsim conflicts OP --addrs EXPR: bank conflicts of one shared-memory instruction, per phase.

Also ``fragsim conflicts --ncu-measure --record DIR``: measure every instruction under Nsight
Compute on this machine's GPU and record the counters (see fragsim.gpu_check.banks.measure).
"""

from __future__ import annotations

import json
import re

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from . import args as args_
from .args import load_npy, read_text, writable_dir

NAME = "conflicts"
HELP = "count shared-memory bank conflicts of one instruction (Nsight Compute's figures, per phase)"


def add_arguments(p):
    p.add_argument("op", nargs="?", help="shared-memory instruction in PTX spelling, e.g. ldmatrix.x4, "
                   "ld.shared.v4.b32, st.shared.b32, stmatrix.x2.trans, cp.async.cg.16")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--addrs", metavar="EXPR", help="C expression of each lane's byte offset, in `lane` "
                     "(0..31) and --var variables, e.g. \"(lane %% 16) * 64 + (lane / 16) * 16\"")
    src.add_argument("--addrs-file", metavar="FILE", help="file of byte offsets: 32 per instruction "
                     "(whitespace/comma separated, hex allowed; several lines = several instructions), or .npy")
    p.add_argument("--mask", metavar="MASK", help="active lanes: an int bit mask (0xffff) or a C condition "
                   "in lane (\"lane < 16\")")
    p.add_argument("--src", metavar="EXPR", help="cp.async only: C expression of each lane's global source "
                   "byte address (default lane * size)")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUES",
                   help="values of a variable of the expressions (repeatable): 2, 0..3 (both included) or 0,2; "
                   "with several values the instruction is issued once per combination, e.g. --var k=0..3")
    p.add_argument("--swizzle", action="append", metavar="B,M,S", help="apply Swizzle<B,M,S> (or none) to "
                   "every lane's address: --addrs gives unswizzled offsets (unlike `fragsim swizzle --tile '... "
                   "swizzle=B,M,S'`, whose addresses already follow the tile's swizzle); repeat to compare several in "
                   "one table; with ranged --var (e.g. --var warp=0..3 --var k=0..1) each layout's figures are totals "
                   "over every instruction, as `fragsim swizzle` totals a candidate over the whole tile")
    p.add_argument("--pitch", action="append", type=int, metavar="N", help="value of the variable `pitch` in "
                   "the expressions (a padded row); repeat to compare several")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    g = p.add_argument_group("measure on this machine's GPU (Nsight Compute)")
    g.add_argument("--ncu-measure", action="store_true", help="run the ncu probe for every instruction and "
                   "record the counters (needs nvcc, ncu and a GPU)")
    g.add_argument("--record", metavar="DIR", help="folder for the measured record (with --ncu-measure)")
    g.add_argument("--seed", type=int, default=1, help="seed of the measured address sets (with --ncu-measure)")
    g.add_argument("--budget", type=float, default=300.0, help="seconds of profiling (with --ncu-measure)")


ADDRS_FILE = ("byte offsets as text (32 per instruction, whitespace/comma separated, # comments) "
              "or a .npy integer array")


def _read_file(path: str) -> np.ndarray:
    if path.endswith(".npy"):
        a = load_npy(path, "--addrs-file", ADDRS_FILE)
        if a.ndim > 2 or (a.ndim == 2 and a.shape[1] != WARP_LANES):
            raise ValueError(f"--addrs-file {path}: expected an array shaped (32,), (32 * n,) or (n, 32), "
                             f"got shape {a.shape}")
    else:
        text = read_text(path, "--addrs-file", ADDRS_FILE)
        nums = []
        for i, line in enumerate(text.splitlines(), 1):
            for t in re.split(r"[\s,]+", re.sub(r"#.*", "", line)):
                if t:
                    nums.append(args_.integer(t, f"--addrs-file {path} line {i}"))
        a = np.array(nums, dtype=np.int64)
    if a.dtype.kind not in "iu":
        raise ValueError(f"--addrs-file {path}: expected integer byte offsets, got dtype {a.dtype}")
    if a.size == 0 or a.size % WARP_LANES:
        raise ValueError(f"--addrs-file {path}: expected 32 byte offsets per instruction, got {a.size} numbers")
    return a.reshape(-1, WARP_LANES)


def run(args) -> int:
    if args.ncu_measure:
        if not args.record:
            raise ValueError("--ncu-measure needs --record DIR (where the measurements go)")
        writable_dir(args.record, "--record")
        from fragsim.gpu_check.banks.measure import NcuUnavailable, compare, measure

        try:
            path = measure(args.record, seed=args.seed, budget=args.budget)
        except NcuUnavailable as e:
            import sys

            sys.stderr.write(f"fragsim conflicts: {e}\n")
            return 2
        compare(path)
        return 0
    if args.record:
        raise ValueError("--record goes with --ncu-measure (it names where the measurements go)")
    if not args.op:
        raise ValueError("give the instruction, e.g. `fragsim conflicts ldmatrix.x4 --addrs \"lane * 16\"`")
    from fragsim.banks import bank_conflicts
    from fragsim.instructions.shared_ops import parse_shared_op

    o = parse_shared_op(args.op)
    many = args_.variables(args.var)
    if args.swizzle or args.pitch:
        from .swizzle import conflicts_with_layouts

        return conflicts_with_layouts(args, o, many, _read_file)
    envs = args_.combinations(many)            # --var k=0..3: one instruction per value
    if o.kind in ("ldsm", "stsm") and args.mask is not None:
        raise ValueError(f"--mask: {o.name} is .sync.aligned, every lane of the warp executes it")
    if args.addrs_file is not None and args.addrs is None:
        if len(envs) > 1:
            raise ValueError("--addrs-file gives every instruction's addresses: give each --var one value "
                             "(ranges issue an --addrs expression once per value)")
        addrs = _read_file(args.addrs_file)
        if addrs.shape[0] == 1:
            addrs = addrs[0]
        src = None if args.src is None else _lanes(args.src, envs[0])
        mask = args_.lane_mask(args.mask, envs[0])
    elif args.addrs is not None:
        addrs = np.stack([_lanes(args.addrs, env) for env in envs])
        src = None if args.src is None else np.stack([_lanes(args.src, env) for env in envs])
        masks = [args_.lane_mask(args.mask, env) for env in envs]
        if len(envs) == 1:
            addrs, src, mask = addrs[0], None if src is None else src[0], masks[0]
        elif masks[0] is None:
            mask = None
        else:   # a batch takes one mask per instruction: bit masks as ints, conditions as 32 booleans
            mask = (np.array(masks, np.int64) if isinstance(masks[0], int)
                    else np.stack([np.asarray(m, bool) for m in masks]))
    else:
        raise ValueError("give the lane addresses: --addrs EXPR or --addrs-file FILE")
    r = bank_conflicts(o, addrs, mask, src)
    labels = [args_.describe({k: v for k, v in env.items() if len(many[k]) > 1}) for env in envs]
    if args.json:
        out = r.to_dict()
        if len(envs) > 1:
            out["variables"] = [{k: v for k, v in env.items()} for env in envs]
        print(json.dumps(out))
    elif addrs.ndim == 2:
        print(_batch_text(r, labels if len(envs) > 1 else None))
    else:
        print(r)
    return 0


def _lanes(expr: str, env: dict) -> np.ndarray:
    """An expression in ``lane`` and the variables -> the 32 lanes' values."""
    from fragsim.search.addrexpr import evaluate

    return np.broadcast_to(evaluate(expr, **env), (WARP_LANES,)).copy()


def _batch_text(r, labels=None) -> str:
    """One row per instruction (``labels``: the --var values that issued it), then the sums."""
    wf_name, bc_name = r.entry.metrics
    lines = [f"{r.op}: {len(r)} instructions", "   #  wavefronts  ideal  conflicts"]
    for i in range(len(r)):
        flag = "" if r.exact is None or r.exact[i] else "  (estimate)"
        label = f"  {labels[i]}" if labels else ""
        lines.append(f"{i:4d}  {int(r.wavefronts[i]):10d}  {int(r.ideal[i]):5d}  {int(r.conflicts[i]):9d}{flag}{label}")
    lines.append("Nsight Compute (sum):")
    width = max(len(wf_name), len(bc_name))
    lines.append(f"  {wf_name:<{width}}  {int(r.wavefronts.sum())}")
    lines.append(f"  {bc_name:<{width}}  {int(r.conflicts.sum())}")
    return "\n".join(lines)
