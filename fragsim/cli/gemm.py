"""fragsim gemm FORM --a A.npy --b B.npy [--c C.npy] -o D.npy: a whole mma.sync GEMM, bit-exact."""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from fragsim.facts.formats import IntFormat, from_float, int_from_bits, int_to_bits, to_float
from fragsim.instructions import lookup
from .args import load_npy, writable_file

NAME = "gemm"
HELP = "emulate a whole GEMM of mma.sync bit-exactly: one accumulator per output tile, one mma per k-step"

# Problems of at least this many mma draw a progress bar (on a terminal).
PROGRESS_MIN = 1 << 20


def add_arguments(p):
    from fragsim.facts.arch import ARCHS, DEFAULT_ARCH

    p.add_argument("form", help="mma form, e.g. m16n8k16.row.col.f32.f16.f16.f32")
    names = "; ".join(f"{a.name} ({', '.join(a.aliases)})" for a in ARCHS.values())
    p.add_argument("--arch", default=DEFAULT_ARCH,
                   help=f"architecture row, or an alias: {names}; default {DEFAULT_ARCH}")
    for op, need, shape in (("a", True, "M x K"), ("b", True, "K x N"), ("c", False, "M x N")):
        p.add_argument(f"--{op}", required=need, metavar=f"{op.upper()}.npy",
                       help=f"matrix {op.upper()} ({shape}; M, N, K multiples of the form's): floats (rounded to "
                       f"nearest even to the operand format) or raw bits (unsigned integers); integer forms: "
                       f"integer values" + ("" if need else "; default all zero"))
    p.add_argument("-o", "--output", required=True, metavar="D.npy", help="where to save D (M x N)")
    p.add_argument("--values", action="store_true", help="save D's values (float64; s32 forms: int64) instead of "
                   "its bits")
    p.add_argument("--k-order", default="ascending", metavar="ORDER", help="order of the k-steps: ascending "
                   "(default), descending, or the k-step indices separated by commas, e.g. 0,2,1,3")
    p.add_argument("--tile", metavar="ROWSxCOLS", help="one warp's output tile in the modelled kernel, e.g. 64x32 "
                   "(orders the work; the bits do not depend on it)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="machine-readable summary")


def load_matrix(f, op: str, path) -> np.ndarray:
    """An operand matrix (any size; gemm checks the shapes) from a .npy file, as raw bits of its format."""
    fmt = f.fmt(op)
    name = f"--{op.lower()}"
    x = load_npy(path, name, f"the matrix {op} saved by numpy.save (.npy)")
    if x.ndim != 2:
        raise ValueError(f"{name} {path}: expected a matrix (2 dimensions), got shape {x.shape}")
    if isinstance(fmt, IntFormat):
        if x.dtype.kind == "f" and not np.array_equal(x, np.round(x)):
            raise ValueError(f"{name} {path}: {fmt.name} values are integers, got fractions")
        if x.dtype.kind not in "uif":
            raise TypeError(f"{name} {path}: expected integer values, got dtype {x.dtype}")
        if x.size and (x.min() < fmt.min or x.max() > fmt.max):
            raise ValueError(f"{name} {path}: {fmt.name} values must lie in {fmt.min}..{fmt.max}, "
                             f"got {x.min():g}..{x.max():g}")
        return int_to_bits(x.astype(np.int64), fmt)
    if x.dtype.kind == "f":
        return from_float(x, fmt)
    if x.dtype.kind in "ui":
        if x.size and (int(x.min()) < 0 or int(x.max()) >= 1 << fmt.storage_bits):
            raise ValueError(f"{name} {path}: raw {fmt.name} bits must lie in [0, 2**{fmt.storage_bits}), "
                             f"got {int(x.min())}..{int(x.max())}")
        return x.astype(fmt.dtype)
    raise TypeError(f"{name} {path}: expected floats or unsigned integer bits, got dtype {x.dtype}")


def parse_k_order(text: str):
    t = text.strip()
    if t in ("ascending", "descending"):
        return t
    try:
        return [int(s) for s in t.split(",")]
    except ValueError:
        raise ValueError(f"--k-order {text!r}: expected ascending, descending or k-step indices separated by "
                         f"commas (0,2,1,3)") from None


def parse_tile(text: str) -> tuple[int, int]:
    rows, sep, cols = text.lower().partition("x")
    try:
        return int(rows), int(cols)
    except ValueError:
        raise ValueError(f"--tile {text!r}: expected ROWSxCOLS, e.g. 64x32") from None


class Bar:
    """A one-line progress bar on a terminal (stderr): mma done of all, and the time so far."""

    def __init__(self, stream):
        self.stream, self.t0, self.last = stream, time.time(), 0.0

    def __call__(self, done, total):
        now = time.time()
        if done < total and now - self.last < 0.2:
            return
        self.last = now
        width = 30
        full = width * done // max(total, 1)
        self.stream.write(f"\r[{'#' * full}{'.' * (width - full)}] {done:,}/{total:,} mma  {now - self.t0:.1f} s"
                          + ("\n" if done >= total else ""))
        self.stream.flush()


def run(args) -> int:
    import fragsim
    from fragsim.facts.arch import get_arch

    f = lookup(args.form)
    arch = get_arch(args.arch)
    out = writable_file(args.output, "-o")
    order = parse_k_order(args.k_order)
    tile = parse_tile(args.tile) if args.tile else None
    A, B = load_matrix(f, "A", args.a), load_matrix(f, "B", args.b)
    C = None if args.c is None else load_matrix(f, "C", args.c)
    fm, fn, fk = f.shape
    total = (A.shape[0] // fm) * (B.shape[1] // fn) * (A.shape[1] // fk)
    bar = None
    if not (args.quiet or args.json) and total >= PROGRESS_MIN and sys.stderr.isatty():
        bar = Bar(sys.stderr)
    from fragsim.arith.jit import compile_seconds

    t0, compiling = time.time(), compile_seconds()
    D = fragsim.gemm(f, A, B, C, arch=arch, k_order=order, tile=tile, progress=bar)
    seconds = time.time() - t0 - (compile_seconds() - compiling)     # a first run's compile is not the GEMM's time
    fd = f.fmt("D")
    np.save(out, (int_from_bits(D, fd) if isinstance(fd, IntFormat) else to_float(D, fd)) if args.values else D)
    steps = A.shape[1] // fk
    if args.json:
        print(json.dumps({"form": f.ptx, "arch": arch.name, "m": D.shape[0], "n": D.shape[1], "k": A.shape[1],
                          "k_steps": steps, "k_order": order if isinstance(order, str) else list(order),
                          "mma": total, "seconds": round(seconds, 6), "output": out,
                          "saved": "values" if args.values else f"{fd.name} bits ({np.dtype(fd.dtype).name})"}))
        return 0
    what = "values" if args.values else f"{fd.name} bits"
    print(f"{f.ptx} on {arch.name}: D ({D.shape[0]} x {D.shape[1]}) = A ({A.shape[0]} x {A.shape[1]}) * B + C, "
          f"{steps} k-step{'s' if steps != 1 else ''} ({order if isinstance(order, str) else 'in the given order'}), "
          f"{total:,} mma in "
          f"{seconds:.2f} s; {what} saved to {out}")
    return 0
