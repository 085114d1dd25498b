"""fragsim run KERNEL.ptx --kernel NAME --grid X,Y --block N --arg A.npy --arg 256 ...: run a kernel's
PTX on the CPU, bit for bit, and save what it wrote.

Each ``--arg`` is one ``.param`` of the entry, in order: a ``.npy`` file is a global buffer (its array
after the run is saved under ``--out``, by the file's own name), a number becomes the parameter's
type, ``hex:0011..`` gives the bytes of a struct passed by value (a ``.b8 [N]`` parameter).
"""

from __future__ import annotations

import json
import os
import re
import time

import numpy as np

from .args import load_npy, writable_dir

NAME = "run"
HELP = "run a kernel's PTX on the CPU, bit-exactly (tensor cores included), and save the buffers it wrote"
DEFAULT_OUT = "fragsim-run"
#: The last line of a run without --check that accessed shared memory.
UNCHECKED = "shared memory was not checked for races: add --check"


def add_arguments(p):
    p.add_argument("ptx", metavar="KERNEL.ptx", nargs="?", help="PTX file (nvcc -ptx, Triton's cache, CuTe DSL dump)")
    p.add_argument("--instructions", nargs="?", const="", metavar="FILTER",
                   help="list the PTX instructions fragsim runs (those whose syntax or status contains FILTER): "
                   "modifiers, operands, least target and PTX version, status and the GPU validation; no kernel runs")
    p.add_argument("--markdown", action="store_true", help="with --instructions: the whole support page as "
                   "Markdown (docs/instructions.md)")
    p.add_argument("--kernel", metavar="NAME", help="the .entry to run (its mangled name, or a part of it that "
                   "names one entry); optional when the module has one entry")
    p.add_argument("--grid", default="1", metavar="X[,Y[,Z]]", help="CTAs of the launch (default 1)")
    p.add_argument("--block", default="1", metavar="X[,Y[,Z]]", help="threads per CTA (default 1)")
    p.add_argument("--smem", type=int, default=0, metavar="BYTES", help="dynamic shared memory per CTA (default 0)")
    p.add_argument("--cta", action="append", default=[], metavar="X[,Y[,Z]]",
                   help="run only this CTA of the grid (repeatable; default: every CTA)")
    p.add_argument("--arg", action="append", default=[], metavar="VALUE",
                   help="one per .param of the kernel, in order: FILE.npy (a global buffer), a number, or "
                   "hex:BYTES (a struct by value)")
    from fragsim.facts.arch import ARCHS, DEFAULT_ARCH
    p.add_argument("--arch", default=None, choices=sorted({n for a in ARCHS.values() for n in (a.name, *a.aliases)}),
                   help="architecture whose tensor-core arithmetic the mma instructions use (default: the PTX's "
                   f".target, sm_90a -> sm_90; {DEFAULT_ARCH} where it names none)")
    p.add_argument("--approx", choices=("ieee",), help="run the MUFU forms (.approx, div.full) as IEEE "
                   "stand-ins instead of the hardware's bits fragsim models; their lines are listed as not bit-exact")
    p.add_argument("-o", "--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"folder for the buffers after the run, one .npy per array argument (default ./{DEFAULT_OUT})")
    p.add_argument("--report", action="store_true", help="print the shared-memory traffic by source line (CUDA "
                   "lines with -lineinfo, else PTX lines): executions, wavefronts and excess wavefronts (bank "
                   "conflicts), worst first, and the totals under Nsight Compute's metric names")
    p.add_argument("--suggest", action="store_true", help="for every shared buffer with bank conflicts, the "
                   "swizzle (of the byte offset in the buffer) that removes them, found by the swizzle search over the "
                   "addresses the run used, the store and load lines that must apply it, and every such line's "
                   "wavefronts and conflicts before and after, recounted on the run's recorded accesses")
    p.add_argument("--html", metavar="FILE", help="write that report as an HTML page, costly lines highlighted, "
                   "with the bank phases of each worst line's worst execution")
    p.add_argument("--check", nargs="?", const="stop", metavar="stop|continue[,uninitialized]",
                   help="look for kernel bugs while running (out-of-bounds and misaligned accesses, shared-memory "
                   "races, cp.async/wgmma data used in flight, partial-warp .sync.aligned instructions, deadlocks; "
                   "',uninitialized': shared memory read before written): 'stop' (the default) at the first, "
                   "'continue' to list them all; exit status 1 when any is found")
    from .run_trace import add_argument as add_trace
    add_trace(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _dims(text: str, option: str) -> tuple[int, ...]:
    parts = text.split(",")
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"\s*\d+\s*", x) for x in parts):
        raise ValueError(f"{option} {text!r}: expected 1 to 3 positive integers X[,Y[,Z]], e.g. {option} 2,2")
    return tuple(int(x) for x in parts)


def _value(text: str, k: int):
    """One --arg: a .npy array, hex bytes, or a number (typed by the parameter later)."""
    if text.endswith(".npy"):
        return np.ascontiguousarray(load_npy(text, f"--arg {k + 1}"))
    if text.startswith("hex:"):
        try:
            return bytes.fromhex(text[4:])
        except ValueError:
            raise ValueError(f"--arg {k + 1} {text!r}: hex:BYTES takes an even number of hex digits") from None
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"--arg {k + 1} {text!r}: expected FILE.npy, a number or hex:BYTES") from None


def _recorded() -> dict:
    """What the GPU recordings of a clone of the repository hold (its tests/data: the working
    directory's, else the one beside this package when it runs from a clone); none elsewhere (the page
    then says which rows have no recording here)."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests", "data")
    for root in (os.path.join(os.getcwd(), "tests", "data"), here):
        if os.path.isdir(os.path.join(root, "ptx")):
            from fragsim.gpu_check.coverage import recorded
            return recorded(root)
    return {}


def instructions(args) -> int:
    from fragsim.ptx.isa import support

    if args.json:
        print(json.dumps(support.entries(args.instructions, _recorded()), indent=1))
    elif args.markdown:
        print(support.markdown(_recorded()))
    else:
        print(support.listing(args.instructions, _recorded()))
    return 0


def run(args) -> int:
    from fragsim.ptx.run import run_kernel

    if args.instructions is not None:
        return instructions(args)
    if args.ptx is None:
        raise ValueError("run: name the kernel's PTX file (fragsim run KERNEL.ptx), or list the instructions "
                         "fragsim runs with --instructions")
    out = writable_dir(args.out, "--out")
    if args.html and not os.path.isdir(os.path.dirname(os.path.abspath(args.html))):
        raise ValueError(f"--html {args.html}: no folder {os.path.dirname(os.path.abspath(args.html))} to write it in")
    values = [_value(a, k) for k, a in enumerate(args.arg)]
    ctas = [_dims(c, "--cta") for c in args.cta] or None
    if args.trace and args.suggest:
        raise ValueError("--suggest reads the traffic of a plain run; --trace runs the fragment trace instead: "
                         "leave one out")
    if args.trace:                     # the passes of a fragment trace instead of one plain run
        from .run_trace import run_trace
        return run_trace(args, values, ctas, _dims)
    t0 = time.time()
    from fragsim.ptx.checks import KernelIssue
    try:
        r = run_kernel(args.ptx, args.kernel, grid=_dims(args.grid, "--grid"), block=_dims(args.block, "--block"),
                       args=values, dynamic_smem=args.smem, arch=args.arch, ctas=ctas, approx=args.approx,
                       report=bool(args.report or args.html or args.suggest), check=args.check or False)
    except KernelIssue as e:           # --check stop: the first finding ends the run
        if args.json:
            print(json.dumps({"issues": [e.issue.to_dict()], "stopped": True} |
                             ({"races": [e.race.to_dict()]} if e.race is not None else {})))
        else:
            print(e.issue)
            if e.race is not None:
                print(f"fix: {e.race.fix}")
            print("stopped at the first issue (--check continue lists them all)")
        return 1
    seconds = time.time() - t0
    saved = []
    for text, v in zip(args.arg, values):
        if isinstance(v, np.ndarray):
            path = os.path.join(out, os.path.basename(text))
            np.save(path, v)
            saved.append(path)
    if args.html:
        assert r.shared is not None
        with open(args.html, "w") as f:
            f.write(r.shared.html())
    if args.json:
        body = {"kernel": r.kernel, "grid": r.grid, "block": r.block, "ctas": len(r.ctas), "steps": r.steps,
                "seconds": round(seconds, 3), "saved": saved, "approximate_lines": r.approximate}
        if args.report and r.shared is not None:
            body["shared"] = r.shared.to_dict()
        if args.suggest and r.shared is not None:
            body["suggest"] = r.shared.suggest().to_dict()
        if r.issues is not None:
            body["issues"] = [i.to_dict() for i in r.issues]
            body["races"] = [race.to_dict() for race in r.races or ()]
        elif r.shared_accessed:
            body["unchecked"] = UNCHECKED
        print(json.dumps(body))
        return 1 if r.issues else 0
    print(f"{r.kernel}: grid {r.grid}, block {r.block}, {len(r.ctas)} CTA(s) run, {r.steps:,} steps in {seconds:.2f} s")
    if r.approximate:
        print(f"not bit-exact: lines {', '.join(map(str, r.approximate))} ran .approx instructions as IEEE stand-ins")
    for path in saved:
        print(f"wrote {path}")
    if args.report and r.shared is not None:
        print(r.shared.text())
    if args.suggest and r.shared is not None:
        print(r.shared.suggest().text())
    if args.html:
        print(f"wrote {args.html}")
    if r.issues is not None:           # --check continue: the races one per pair of lines, after the rest
        others, races = [i for i in r.issues if i.kind != "race"], r.races or []
        for finding in [*others, *races]:
            print(finding)
        shown = len(others) + len(races)
        per_warp = f" ({len(r.issues)} per warp: --json lists them)" if len(r.issues) != shown else ""
        print(f"{shown} issue(s){per_warp}" if r.issues else "checks: no issues")
        return 1 if r.issues else 0
    if r.shared_accessed:
        print(UNCHECKED)
    return 0
