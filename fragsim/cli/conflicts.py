"""fragsim conflicts OP --addrs EXPR: bank conflicts of one shared-memory instruction, per phase.

Also ``fragsim conflicts --ncu-measure --record DIR``: measure every instruction under Nsight
Compute on this machine's GPU and record the counters (see fragsim.gpu_check.ncu_banks).
"""

from __future__ import annotations

import json
import re

import numpy as np

from .files import load_npy, read_text, writable_dir

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
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a variable of the expressions (repeatable), e.g. --var k=2")
    p.add_argument("--swizzle", action="append", metavar="B,M,S", help="apply Swizzle<B,M,S> (or none) to "
                   "every lane's address; repeat to compare several in one table")
    p.add_argument("--pitch", action="append", type=int, metavar="N", help="value of the variable `pitch` in "
                   "the expressions (a padded row); repeat to compare several")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    g = p.add_argument_group("measure on this machine's GPU (Nsight Compute)")
    g.add_argument("--ncu-measure", action="store_true", help="run the ncu probe for every instruction and "
                   "record the counters (needs nvcc, ncu and a GPU)")
    g.add_argument("--record", metavar="DIR", help="folder for the measured record (with --ncu-measure)")
    g.add_argument("--seed", type=int, default=1, help="seed of the measured address sets (with --ncu-measure)")
    g.add_argument("--budget", type=float, default=300.0, help="seconds of profiling (with --ncu-measure)")


INT64 = range(-(1 << 63), 1 << 63)


def _parse_int(text: str, what: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not an integer (decimal or 0x hex)") from None
    if v not in INT64:
        raise ValueError(f"{what}: {text} does not fit in 64-bit signed (long)")
    return v


def _variables(pairs) -> dict:
    out: dict[str, int] = {}
    for item in pairs:
        if "=" not in item:
            raise ValueError(f"--var {item!r}: expected NAME=VALUE, e.g. --var k=2")
        name, value = item.split("=", 1)
        name = name.strip()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name):
            raise ValueError(f"--var {item!r}: {name!r} is not a C identifier")
        if name == "lane":
            raise ValueError("--var lane=...: lane is the lane index 0..31 and cannot be set")
        if name in out:
            raise ValueError(f"--var {name} given twice ({name}={out[name]} and {item.strip()}); give each variable once")
        out[name] = _parse_int(value.strip(), f"--var {name}")
    return out


ADDRS_FILE = ("byte offsets as text (32 per instruction, whitespace/comma separated, # comments) "
              "or a .npy integer array")


def _read_file(path: str) -> np.ndarray:
    if path.endswith(".npy"):
        a = load_npy(path, "--addrs-file", ADDRS_FILE)
        if a.ndim > 2 or (a.ndim == 2 and a.shape[1] != 32):
            raise ValueError(f"--addrs-file {path}: expected an array shaped (32,), (32 * n,) or (n, 32), "
                             f"got shape {a.shape}")
    else:
        text = read_text(path, "--addrs-file", ADDRS_FILE)
        nums = []
        for i, line in enumerate(text.splitlines(), 1):
            for t in re.split(r"[\s,]+", re.sub(r"#.*", "", line)):
                if t:
                    nums.append(_parse_int(t, f"--addrs-file {path} line {i}"))
        a = np.array(nums, dtype=np.int64)
    if a.dtype.kind not in "iu":
        raise ValueError(f"--addrs-file {path}: expected integer byte offsets, got dtype {a.dtype}")
    if a.size == 0 or a.size % 32:
        raise ValueError(f"--addrs-file {path}: expected 32 byte offsets per instruction, got {a.size} numbers")
    return a.reshape(-1, 32)


def _mask(text, variables):
    if text is None:
        return None
    try:
        v = int(text, 0)
    except ValueError:
        from fragsim.search.addrexpr import evaluate

        return np.broadcast_to(evaluate(text, **variables) != 0, (32,)).copy()
    if not 0 <= v <= 0xFFFFFFFF:
        raise ValueError(f"--mask {text}: does not fit in 32 bits (bit i = lane i)")
    return v


def run(args) -> int:
    if args.ncu_measure:
        if not args.record:
            raise ValueError("--ncu-measure needs --record DIR (where the measurements go)")
        writable_dir(args.record, "--record")
        from fragsim.gpu_check.ncu_banks import NcuUnavailable, compare, measure

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
    variables = _variables(args.var)
    if args.swizzle or args.pitch:
        from .swizzle import conflicts_with_layouts

        return conflicts_with_layouts(args, o, variables, _read_file, _mask)
    if args.addrs is not None:
        from fragsim.search.addrexpr import evaluate

        addrs = np.broadcast_to(evaluate(args.addrs, **variables), (32,)).copy()
    elif args.addrs_file is not None:
        addrs = _read_file(args.addrs_file)
        if addrs.shape[0] == 1:
            addrs = addrs[0]
    else:
        raise ValueError("give the lane addresses: --addrs EXPR or --addrs-file FILE")
    src = None
    if args.src is not None:
        from fragsim.search.addrexpr import evaluate

        src = np.broadcast_to(evaluate(args.src, **variables), (32,)).copy()
    mask = _mask(args.mask, variables)
    if o.kind in ("ldsm", "stsm") and mask is not None:
        raise ValueError(f"--mask: {o.name} is .sync.aligned, every lane of the warp executes it")
    r = bank_conflicts(o, addrs, mask, src)
    if args.json:
        print(json.dumps(r.to_dict()))
    elif addrs.ndim == 2:
        print(_batch_text(r))
    else:
        print(r)
    return 0


def _batch_text(r) -> str:
    wf_name, bc_name = r.entry.metrics
    lines = [f"{r.op}: {len(r)} instructions", "   #  wavefronts  ideal  conflicts"]
    for i in range(len(r)):
        flag = "" if r.exact is None or r.exact[i] else "  (estimate)"
        lines.append(f"{i:4d}  {int(r.wavefronts[i]):10d}  {int(r.ideal[i]):5d}  {int(r.conflicts[i]):9d}{flag}")
    lines.append("Nsight Compute (sum):")
    width = max(len(wf_name), len(bc_name))
    lines.append(f"  {wf_name:<{width}}  {int(r.wavefronts.sum())}")
    lines.append(f"  {bc_name:<{width}}  {int(r.conflicts.sum())}")
    return "\n".join(lines)
