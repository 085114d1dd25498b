"""``fragsim run ... --trace A=POS,B=POS,D=POS``: trace the kernel's fragments (``fragsim.trace_fragments``)
instead of a plain run.

Each ``ROLE=POS`` names the ``--arg`` (counted from 0) that holds the GEMM's A (M x K), B (K x N) or
D (M x N); ``POS.T`` when the array holds the matrix transposed (B given as N x K, a column-major
D), ``POS:ROWSxCOLS`` for a 1-D array (its shape as stored).  The result is printed; when an mma
is fed wrongly, its expected vs received fragment map (``fragsim check``'s picture) is written to
``OUT/trace.png``.  Exit status 1 when the trace finds a mistake.
"""

from __future__ import annotations

import json
import os

HELP = ("trace which elements reach every mma.sync/wgmma instead of a plain run: A=POS,B=POS,D=POS name the "
        "--arg positions (from 0) of the GEMM's A (MxK), B (KxN) and D (MxN), POS.T when the array holds the "
        "matrix transposed (e.g. A=0,B=1.T,D=2); prints the first mma fed wrongly with fragsim check's diagnosis, "
        "and writes its fragment map to OUT/trace.png")


def add_argument(p) -> None:
    p.add_argument("--trace", metavar="A=POS,B=POS,D=POS", help=HELP)


def roles(text: str) -> dict:
    """"A=0,B=1.T,D=2" -> {"a": "0", "b": "1.T", "d": "2"}."""
    out = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip().upper()
        if not sep or key not in ("A", "B", "D") or not value.strip():
            raise ValueError(f"--trace {text!r}: expected A=POS,B=POS,D=POS (the --arg positions from 0, POS.T for a "
                             "transposed array), e.g. --trace A=0,B=1.T,D=2")
        if key.lower() in out:
            raise ValueError(f"--trace {text!r}: {key} is given twice")
        out[key.lower()] = value.strip()
    missing = [k.upper() for k in "abd" if k not in out]
    if missing:
        raise ValueError(f"--trace {text!r}: name {', '.join(missing)} too (A=POS,B=POS,D=POS)")
    return out


def picture(bad, path: str) -> bool:
    """Write the first inconsistent mma's fragment map; False when there is none to draw."""
    from fragsim.check.report import CheckReport
    from fragsim.check.wgmma import WgmmaReport

    if isinstance(bad.picture, CheckReport):
        from fragsim.viz.check_result import draw_check
        draw_check(bad.picture, path)
        return True
    if isinstance(bad.picture, WgmmaReport):
        from fragsim.viz.canonical import draw_check as draw_wgmma
        draw_wgmma(bad.picture, bad.tile, path)
        return True
    return False


def run_trace(args, values: list, ctas, dims) -> int:
    from fragsim.trace import trace_fragments

    spec = roles(args.trace)
    out = args.out
    t = trace_fragments(args.ptx, args.kernel, grid=dims(args.grid, "--grid"), block=dims(args.block, "--block"),
                        args=values, dynamic_smem=args.smem, arch=args.arch, ctas=ctas, approx=args.approx, **spec)
    png = None
    if t.first is not None:
        path = os.path.join(out, "trace.png")
        if picture(t.first, path):
            png = path
    if args.json:
        body = t.to_dict()
        body["picture"] = png
        print(json.dumps(body))
    else:
        print(t)
        if png:
            print(f"wrote {png}")
    return 0 if t.ok else 1
