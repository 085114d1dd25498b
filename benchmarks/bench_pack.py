"""Microseconds per warp of ``fragsim.pack``/``fragsim.unpack`` beside the mma itself.

    taskset -c 0 python benchmarks/bench_pack.py [--batch 1 64 4096] [--repeat 7] [--budget 0.25] [--json] [--forms S ...]

An end-to-end ``fragsim.mma`` on matrices is pack A, pack B, pack C, the mma (registers in,
registers out), unpack D; each is timed alone on a batch of ``--batch`` warps of random bit
patterns (every word of the format), and reported per warp: the best of many samples of about a
millisecond (enough calls to fill it: a batch of 1 shows the per-call cost), ``--budget`` seconds
of them per figure, at least ``--repeat``.  numba runs on one thread; pin the process to one core
(``taskset -c 0``) on a shared machine.  A wgmma form is timed the same way (``pack_wg`` of A and
C, ``unpack_wg`` of D, one warpgroup per batch element), without the wgmma itself: fragsim.wgmma
is NumPy, milliseconds per warpgroup.  ``--forms`` keeps the forms whose name contains one of the
given strings.
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

FORMS = ["m16n8k16.row.col.f32.f16.f16.f32", "m16n8k16.row.col.f32.bf16.bf16.f32", "m16n8k8.row.col.f32.tf32.tf32.f32",
         "m16n8k32.row.col.s32.s8.s8.s32", "m16n8k32.row.col.f32.e4m3.e4m3.f32", "m16n8k64.row.col.s32.s4.s4.s32",
         "m16n8k256.row.col.s32.b1.b1.s32.and.popc", "m64n64k16.f32.bf16.bf16"]
SAMPLE_S = 1e-3


def best_us(fn, batch, repeat, budget):
    """Best time per warp over samples of about a millisecond each (at least ``repeat`` of them,
    else as many as ``budget`` seconds allow): on a shared machine short samples are the ones
    that can run without being preempted."""
    fn()                                   # warm: compile or load the numba cache, fill the caches
    t = time.perf_counter()
    fn()
    one = time.perf_counter() - t
    calls = max(1, int(SAMPLE_S / max(one, 1e-9)))
    best = float("inf")
    for _ in range(max(repeat, int(budget / (calls * max(one, 1e-9))))):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - t)
    return best / (calls * batch) * 1e6


def words(rng, shape, bits):
    return rng.integers(0, 1 << bits, shape, dtype=np.uint64)


def mma_jobs(form, batch, rng):
    """(name, callable) for pack A/B/C, the mma and unpack D of one mma.sync form."""
    f = fragsim.lookup(form)
    mats = {op: words(rng, (batch,) + f.matrix_shape(op), f.fmt(op).storage_bits).astype(f.fmt(op).dtype)
            for op in "ABC"}
    regs = {op: fragsim.pack(f, op, mats[op]) for op in "ABC"}
    d = fragsim.mma(form, regs["A"], regs["B"], regs["C"], parallel=False)
    return [(f"pack {op}", lambda op=op: fragsim.pack(form, op, mats[op])) for op in "ABC"] + [
        ("mma", lambda: fragsim.mma(form, regs["A"], regs["B"], regs["C"], parallel=False)),
        ("unpack D", lambda: fragsim.unpack(form, "D", d))]


def wgmma_jobs(form, batch, rng):
    from fragsim.instructions.wgmma import lookup_wgmma
    from fragsim.sim.wgmma import pack_wg, unpack_wg

    f = lookup_wgmma(form)
    mats = {op: words(rng, (batch,) + f.matrix_shape(op), f.fmt(op).storage_bits).astype(f.fmt(op).dtype)
            for op in "AC"}
    d = pack_wg(f, "D", words(rng, (batch,) + f.matrix_shape("D"), 32).astype(np.uint32))
    return [(f"pack {op}", lambda op=op: pack_wg(form, op, mats[op])) for op in "AC"] + [
        ("unpack D", lambda: unpack_wg(form, "D", d))]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, nargs="+", default=[1, 64, 4096])
    p.add_argument("--repeat", type=int, default=7, help="at least this many samples per figure")
    p.add_argument("--budget", type=float, default=0.25, help="seconds of samples per figure (at least --repeat)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--forms", nargs="+", metavar="S", help="only forms whose name contains one of these")
    args = p.parse_args(argv)

    import numba

    numba.set_num_threads(1)
    rng = np.random.default_rng(0)
    rows = []
    for form in [f for f in FORMS if not args.forms or any(s in f for s in args.forms)]:
        for batch in args.batch:
            jobs = (wgmma_jobs if form.startswith("m64") else mma_jobs)(form, batch, rng)
            row = {"form": form, "batch": batch, **{name: best_us(fn, batch, args.repeat, args.budget) for name, fn in jobs}}
            row["pack+unpack"] = sum(v for k, v in row.items() if k.startswith(("pack ", "unpack ")))
            rows.append(row)
            if not args.json:
                cells = "  ".join(f"{k} {row[k]:7.3f}" if k in row else f"{k} {'-':>7s}"
                                  for k in ("pack A", "pack B", "pack C", "mma", "unpack D", "pack+unpack"))
                print(f"{form:40s} batch {batch:5d}  us/warp: {cells}", flush=True)
    if args.json:
        print(json.dumps({"machine": platform.processor() or platform.machine(), "numpy": np.__version__,
                          "numba": numba.__version__, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
