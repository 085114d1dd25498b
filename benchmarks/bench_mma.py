"""Microseconds per mma.sync (one warp's worth) through ``fragsim.mma``, per form and arch.

    python benchmarks/bench_mma.py [--batch 20000] [--repeat 5] [--values random|normal] [--json]
                                   [--mmasim] [--forms S ...]

Every form of the table on every architecture that has it (``min_cc``): the float forms, the
integer and single-bit forms, f64, fp8 and m8n8k4 .f16 (where the row models them).  Operands are
uniformly random 32-bit register words (every bit pattern: NaN, Inf, subnormals and all), or with
``--values normal`` the float formats' encodings of normally distributed values (what a GEMM
feeds it; the other formats stay random words), a batch of ``--batch`` warps per call; the figure
is the best of ``--repeat`` calls divided by the batch.  ``--forms`` keeps the forms whose name
contains any of the given strings (``s8``, ``f64``, ``m16n8k16.row.col.f16``).  "1 core" sets
numba (and fragsim.arith.kernel16, which splits a batch over as many threads) to one thread; "all
cores" uses every thread numba has.  The load average (1 minute) before and after is printed: the
machine may be shared.  ``--mmasim`` also times MMA-Sim (if installed) on single mmas, for scale (the
forms it models: not the integer ones).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import fragsim  # noqa: E402
from fragsim.facts.arch import get_arch  # noqa: E402
from fragsim.arith import plan  # noqa: E402


def best_us(fn, batch, repeat):
    fn()                                   # warm: compile or load the numba cache
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best / batch * 1e6


def mmasim_us(form, arch, n=50):
    import torch
    from mmasim.nv_ptx import MMA

    f = fragsim.lookup(form)
    sim = MMA({"sm_80": "Ampere", "sm_90": "Hopper"}[arch], form.replace(".row.col", ""))
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f32": torch.float32,
          "f64": torch.float64}
    ops = [torch.randn(*f.matrix_shape(op)).to(dt[f.fmt(op).name]) for op in "ABC"]
    sim(*ops)
    t = time.perf_counter()
    for _ in range(n):
        sim(*ops)
    return (time.perf_counter() - t) / n * 1e6


def modelled(form, arch) -> bool:
    """The architecture has the form (``min_cc``) and a model of it (sm_80 has none of m8n8k4 .f16)."""
    try:
        plan(form, arch)
    except ValueError:
        return False
    return get_arch(arch).cc >= fragsim.lookup(form).min_cc


def operands(f, batch, values, rng):
    """Register words of A, B and C for ``batch`` warps: random words, or normally distributed values."""
    regs = []
    for op in "ABC":
        shape = (batch, 32, f.nregs(op))
        fmt = f.fmt(op).name
        if values == "random" or fmt not in ("f16", "bf16", "tf32", "f32"):
            regs.append(rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32))
            continue
        per = 2 if fmt in ("f16", "bf16") else 1
        x = rng.standard_normal(shape + (per,)).astype(np.float32)
        if fmt == "f16":
            bits = x.astype(np.float16).view(np.uint16).astype(np.uint32)
        elif fmt == "bf16":
            bits = x.view(np.uint32) >> np.uint32(16)
        else:
            bits = x.view(np.uint32)
        regs.append(bits[..., 0] | (bits[..., 1] << np.uint32(16)) if per == 2 else bits[..., 0])
    return regs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--values", choices=("random", "normal"), default="random",
                   help="operands: random register words, or normally distributed values")
    p.add_argument("--json", action="store_true")
    p.add_argument("--mmasim", action="store_true", help="also time MMA-Sim (needs mmasim and torch)")
    p.add_argument("--forms", nargs="+", metavar="S", help="only forms whose name contains one of these")
    args = p.parse_args(argv)

    import numba

    all_threads = numba.get_num_threads()
    load_before = os.getloadavg()[0]
    if not args.json:
        print(f"load average {load_before:.2f} ({os.cpu_count()} CPUs), {args.values} operands", flush=True)
    rng = np.random.default_rng(0)
    rows = []
    forms = [f for f in fragsim.FORMS if not args.forms or any(s in f for s in args.forms)]
    for form in forms:
        f = fragsim.lookup(form)
        regs = operands(f, args.batch, args.values, rng)
        for arch in ("sm_90", "sm_80"):
            if not modelled(form, arch):
                continue
            row = {"form": form, "arch": arch, "batch": args.batch}
            def run(form=form, regs=regs, arch=arch):
                return fragsim.mma(form, *regs, arch=arch)

            numba.set_num_threads(1)
            row["us_1_core"] = best_us(run, args.batch, args.repeat)
            numba.set_num_threads(all_threads)
            row["us_all_cores"] = best_us(run, args.batch, args.repeat)
            row["cores"] = all_threads
            if args.mmasim and f.fmt("A").name in ("f16", "bf16", "tf32", "f64"):
                row["us_mmasim"] = mmasim_us(form, arch)
            rows.append(row)
            if not args.json:
                extra = f"  MMA-Sim {row['us_mmasim']:8.1f} us" if "us_mmasim" in row else ""
                print(f"{form:45s} {arch}  1 core {row['us_1_core']:6.2f} us   {all_threads} cores "
                      f"{row['us_all_cores']:6.2f} us{extra}", flush=True)
    if args.json:
        print(json.dumps({"machine": platform.processor() or platform.machine(), "cores": all_threads,
                          "numba": numba.__version__, "values": args.values,
                          "load_average": [load_before, os.getloadavg()[0]], "rows": rows}, indent=1))
    else:
        print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
