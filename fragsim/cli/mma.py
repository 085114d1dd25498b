"""fragsim mma FORM --a A.npy --b B.npy [--c C.npy]: D as the tensor core computes it."""

from __future__ import annotations

import json
import math

import numpy as np

from fragsim.facts.formats import IntFormat, from_float, int_from_bits, int_to_bits, to_float
from fragsim.instructions import lookup
from .args import load_npy

NAME = "mma"
HELP = "emulate one mma.sync bit-exactly (sm_80 / sm_90) and explain any output element"


def add_arguments(p):
    p.add_argument("form", help="mma form, e.g. m16n8k16.row.col.f32.f16.f16.f32")
    from fragsim.facts.arch import ARCHS, DEFAULT_ARCH

    names = "; ".join(f"{a.name} ({', '.join(a.aliases)})" for a in ARCHS.values())
    p.add_argument("--arch", default=DEFAULT_ARCH,
                   help=f"architecture row, or an alias: {names}; default {DEFAULT_ARCH}")
    # the shapes are the PTX ISA's: A is M x K, B is K x N, C (and D) M x N
    for op, need, shape in (("a", True, "M x K: 16x16 for m16n8k16, 16x8 for m16n8k8"),
                            ("b", True, "K x N: 16x8 for m16n8k16, 8x8 for m16n8k8"),
                            ("c", False, "M x N: 16x8 for m16n8k16 and m16n8k8")):
        p.add_argument(f"--{op}", required=need, metavar=f"{op.upper()}.npy",
                       help=f"matrix {op.upper()}, {shape}; floats (rounded to nearest even to the operand "
                       f"format) or raw bits (unsigned integers); integer forms: integer values (s8: -128..127)"
                       + ("" if need else "; default all zero"))
    p.add_argument("--explain", nargs=2, type=int, metavar=("ROW", "COL"),
                   help="print the computation of D[ROW, COL] step by step, as the architecture row models it: "
                   "f16/bf16/tf32 blocks (E_max, truncation, rounding); fp8 as exact f16 conversions, two f16 HMMAs "
                   "and the IEEE add of C; integers as exact sums, wrapped or clamped (.satfinite), b1 as popc of "
                   "words; f64 as a chain of IEEE fma; m8n8k4 .f16 as its tree of binary32 operations")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def load_operand(form, op: str, path) -> np.ndarray:
    """An operand matrix from a .npy file (or None: zeros), as raw bits of its format."""
    f = lookup(form)
    fmt, shape = f.fmt(op), f.matrix_shape(op)
    if path is None:
        return np.zeros(shape, fmt.dtype)
    x = load_npy(path, f"--{op.lower()}", f"the {shape[0]}x{shape[1]} matrix {op} saved by numpy.save (.npy)")
    if x.shape != shape:
        raise ValueError(f"operand {op} of {f.name}: expected a {shape[0]}x{shape[1]} matrix, "
                         f"got shape {x.shape} from {path}")
    if isinstance(fmt, IntFormat):
        if x.dtype.kind == "f" and not np.array_equal(x, np.round(x)):
            raise ValueError(f"operand {op} of {f.name}: {fmt.name} values are integers, got fractions from {path}")
        if x.dtype.kind in "uif":
            if x.size and (x.min() < fmt.min or x.max() > fmt.max):
                raise ValueError(f"operand {op} of {f.name}: {fmt.name} values must lie in {fmt.min}..{fmt.max}, "
                                 f"got {x.min():g}..{x.max():g} from {path}")
            return int_to_bits(x.astype(np.int64), fmt)
    if x.dtype.kind == "f":
        return from_float(x, fmt)
    if x.dtype.kind in "ui":
        if x.size and (x.min() < 0 or x.max() >= 1 << fmt.storage_bits):
            raise ValueError(f"operand {op} of {f.name}: raw {fmt.name} bits must lie in [0, 2**{fmt.storage_bits}), "
                             f"got {int(x.min())}..{int(x.max())} from {path}")
        return x.astype(fmt.dtype)
    raise TypeError(f"operand {op} of {f.name}: expected floats or unsigned integer bits, got dtype {x.dtype} "
                    f"from {path}")


def _json_value(v: float):
    return v if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))


def run(args) -> int:
    import fragsim
    from fragsim.facts.arch import get_arch
    from fragsim.arith.explain import explain, render, to_json

    f = lookup(args.form)
    arch = get_arch(args.arch)
    A, B, C = (load_operand(f, op, path) for op, path in (("A", args.a), ("B", args.b), ("C", args.c)))
    d = fragsim.mma(f, fragsim.pack(f, "A", A), fragsim.pack(f, "B", B), fragsim.pack(f, "C", C), arch=arch)
    D = fragsim.unpack(f, "D", d)
    fd = f.fmt("D")
    vals = int_from_bits(D, fd) if isinstance(fd, IntFormat) else to_float(D, fd)
    if args.explain is not None:
        row, col = args.explain
        trace = explain(f, A, B, C, row, col, arch)
        if trace["d"]["bits"] != f"{int(D[row, col]):#0{f.fmt('D').storage_bits // 4 + 2}x}":
            raise RuntimeError("explanation and kernel disagree")   # a bug, not bad input
        print(json.dumps(to_json(trace)) if args.json else render(trace))
        return 0
    if args.json:
        print(json.dumps({"form": f.ptx, "arch": arch.name, "d_bits": D.astype(int).tolist(),
                          "d_values": [[_json_value(float(v)) for v in r] for r in vals]}))
        return 0
    width = f.fmt("D").storage_bits // 4
    print(f"{f.ptx} on {arch.name} ({arch.description}): D ({D.shape[0]}x{D.shape[1]})")
    print("values:")
    for r in vals:
        print("  " + " ".join(f"{v:>12.6g}" for v in r))
    print("bits:")
    for r in D:
        print("  " + " ".join(f"{int(w):0{width}x}" for w in r))
    return 0
