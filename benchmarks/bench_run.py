"""fragsim run's speed: a real tensor-core GEMM kernel's PTX on the CPU, next to fragsim's own arithmetic.

    python benchmarks/bench_run.py [--k 4096] [--size 1024] [--repeat 3] [--batch 8192]
                                   [--only cta grid mma] [--slow] [--check] [--report] [--cpu N] [--json]

On one core: the process pins itself to one CPU (``--cpu``, default the first it may use; or run it
under ``taskset -c 0``) and numba to one thread.  Each figure is the best of ``--repeat`` runs after
a warm-up; two things compared run alternately (A, B, A, B ...), so that a busy machine slows both.

- ``cta``: one CTA of tests/data/ptx/bgemm_128x128.sm90a.ptx -- a 128x128x32-tile bf16 GEMM, 4 warps,
  a two-stage cp.async pipeline, ldmatrix.x4, mma.sync m16n8k16 -- at K = ``--k`` (M = N = 128), its
  D checked against ``fragsim.gemm``.  Target: 1 s.
- ``grid``: the whole ``--size``^3 GEMM of the same kernel (64 CTAs of 128 threads at 1024) and
  ``fragsim.gemm`` of the same product.  Target: the run at most 4x the GEMM.
- ``mma``: microseconds per m16n8k16 bf16 mma of ``fragsim.mma`` on ``--batch`` warps of random
  normal operands, and of the run's own mma.sync batches during the grid run (registers gathered,
  the arithmetic, D written back; a batch is 32 mma.sync x 256 warps there).  Target: 0.3 us.
- ``--slow``: the cta run also with the machine's fast paths off (``fragsim.ptx.machine.FAST``).
- ``--check``: the cta and grid runs also with ``check="continue"`` (``fragsim.ptx.checks``).  Target:
  at most 2x the plain run.
- ``--report``: the cta and grid runs also with ``report=True`` (the shared-memory traffic,
  ``fragsim.ptx.traffic``).  Target: at most 2x the plain run.

The figures, and why tinygrad's mock GPU is not measured beside them, are in docs/run.md ("Speed").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

import fragsim  # noqa: E402
from fragsim.ptx import machine  # noqa: E402
from fragsim.ptx.parse import parse  # noqa: E402

CORPUS = os.path.join(ROOT, "tests", "data", "ptx")
KERNEL = "bgemm_128x128.sm90a.ptx"
FORM = "m16n8k16.row.col.f32.bf16.bf16.f32"


def module(name: str):
    with open(os.path.join(CORPUS, name)) as f:
        return parse(f.read())


def operands(m: int, n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return fragsim.to_bits(rng.standard_normal((m, k)), "bf16"), fragsim.to_bits(rng.standard_normal((n, k)), "bf16")


def best(fns: dict, repeat: int) -> dict:
    """Best seconds of each function, run alternately ``repeat`` times after one warm-up each."""
    for fn in fns.values():
        fn()
    out = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            out[name] = min(out[name], time.perf_counter() - t)
    return out


def gemm_run(mod, a, bt, m: int, n: int, k: int, check=False, report=False):
    """A function that runs the kernel on (a, bt) and returns (D, the run); ``check``, ``report``:
    run_kernel's."""
    def go():
        d = np.zeros((m, n), np.float32)
        r = fragsim.run_kernel(mod, grid=(n // 128, m // 128), block=128, args=[a, bt, d, m, n, k], check=check,
                               report=report)
        return d, r
    return go


@contextlib.contextmanager
def fast_paths(on: bool):
    was = machine.FAST
    machine.FAST = on
    try:
        yield
    finally:
        machine.FAST = was


@contextlib.contextmanager
def timed_mma_batches(stats: dict):
    """Seconds spent in the machine's mma.sync batches, and the mma they ran (instructions x warps)."""
    from fragsim.ptx.semantics import tensor
    if not hasattr(tensor, "MmaBatch"):          # a fragsim from before the batches: nothing to time
        yield stats
        return
    run = tensor.MmaBatch.run

    def timed(self, s, idx):
        t = time.perf_counter()
        done = run(self, s, idx)
        if done:
            stats["s"] += time.perf_counter() - t
            stats["mma"] += self.count * s.span_warps
            stats["calls"] += 1
        return done

    tensor.MmaBatch.run = timed              # type: ignore[method-assign]
    try:
        yield stats
    finally:
        tensor.MmaBatch.run = run            # type: ignore[method-assign]


def bench_cta(args) -> dict:
    mod = module(KERNEL)
    a, bt = operands(128, 128, args.k)
    go = gemm_run(mod, a, bt, 128, 128, args.k)
    d, r = go()
    exact = bool(np.array_equal(d.view(np.uint32), fragsim.gemm(FORM, a, bt.T.copy())))
    fns = {"run": lambda: go()}
    if args.slow:
        fns["run, fast paths off"] = lambda: _slow(go)
    if args.check:
        fns["run, checks"] = gemm_run(mod, a, bt, 128, 128, args.k, check="continue")
    if args.report:
        fns["run, report"] = gemm_run(mod, a, bt, 128, 128, args.k, report=True)
    t = best(fns, args.repeat)
    row = {"k": args.k, "steps": r.steps, "mma": 128 * 128 * args.k // (16 * 8 * 16), "s": t["run"],
           "us_per_step": t["run"] / r.steps * 1e6, "bit_exact": exact}
    if args.slow:
        row["s_fast_off"] = t["run, fast paths off"]
    if args.check:
        row["s_check"] = t["run, checks"]
    if args.report:
        row["s_report"] = t["run, report"]
    return row


def _slow(go):
    with fast_paths(False):
        return go()


def bench_grid(args) -> dict:
    mod = module(KERNEL)
    n = args.size
    a, bt = operands(n, n, n, seed=1)
    b = bt.T.copy()
    go = gemm_run(mod, a, bt, n, n, n)
    d, r = go()
    exact = bool(np.array_equal(d.view(np.uint32), fragsim.gemm(FORM, a, b)))
    fns = {"run": go, "gemm": lambda: fragsim.gemm(FORM, a, b)}
    if args.check:
        fns["run, checks"] = gemm_run(mod, a, bt, n, n, n, check="continue")
    if args.report:
        fns["run, report"] = gemm_run(mod, a, bt, n, n, n, report=True)
    t = best(fns, args.repeat)
    runs = []
    for _ in range(args.repeat):                 # the batches' share of a run, best of --repeat runs
        stats = {"s": 0.0, "mma": 0, "calls": 0}
        with timed_mma_batches(stats):
            go()
        runs.append(stats)
    stats = min(runs, key=lambda x: x["s"])
    row = {"size": n, "ctas": (n // 128) ** 2, "steps": r.steps, "run_s": t["run"], "gemm_s": t["gemm"],
           "ratio": t["run"] / t["gemm"], "bit_exact": exact,
           "run_mma_us": stats["s"] / max(stats["mma"], 1) * 1e6, "run_mma_per_call": stats["mma"] // max(stats["calls"], 1)}
    if args.check:
        row["check_s"] = t["run, checks"]
    if args.report:
        row["report_s"] = t["run, report"]
    return row


def bench_mma(args) -> dict:
    f = fragsim.lookup(FORM)
    rng = np.random.default_rng(2)
    bsz = args.batch
    regs = [fragsim.pack(f, op, fragsim.to_bits(rng.standard_normal((bsz,) + f.matrix_shape(op)), f.fmt(op).name))
            for op in "ABC"]
    t = best({"mma": lambda: fragsim.mma(f, *regs, parallel=False)}, args.repeat)
    return {"batch": bsz, "us_per_mma": t["mma"] / bsz * 1e6}


# ------------------------------------------------------------------------------------------- main

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", type=int, default=4096, help="K of the one-CTA run (default 4096)")
    p.add_argument("--size", type=int, default=1024, help="M = N = K of the whole-grid run (default 1024)")
    p.add_argument("--batch", type=int, default=8192, help="warps of the fragsim.mma batch (default 8192)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", nargs="+", choices=("cta", "grid", "mma"), default=["cta", "grid", "mma"])
    p.add_argument("--slow", action="store_true", help="also the cta run with the fast paths off")
    p.add_argument("--check", action="store_true", help="also the cta and grid runs with check='continue' (the "
                   "kernel-bug checks), alternating with the plain runs")
    p.add_argument("--report", action="store_true", help="also the cta and grid runs with report=True (the "
                   "shared-memory traffic), alternating with the plain runs")
    p.add_argument("--cpu", type=int, help="the CPU to pin to (default: the first this process may use)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.k % 32 or args.size % 128:
        p.error("--k must be a multiple of 32 and --size of 128 (the kernel's tile)")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu if args.cpu is not None else min(os.sched_getaffinity(0))})
    import numba
    numba.set_num_threads(1)

    out = {"machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                       "python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__}}
    benches = {"cta": bench_cta, "grid": bench_grid, "mma": bench_mma}
    for name in args.only:
        out[name] = benches[name](args)
        if not args.json:
            report(name, out[name])
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


def report(name: str, r: dict) -> None:
    if name == "cta":
        slow = f"; fast paths off {r['s_fast_off']:.2f} s" if "s_fast_off" in r else ""
        print(f"one CTA, K={r['k']}: {r['s']:.3f} s ({r['steps']:,} steps, {r['us_per_step']:.1f} us/step, "
              f"{r['mma']:,} mma; bit-exact vs fragsim.gemm: {r['bit_exact']}){slow}   target <= 1 s", flush=True)
        if "s_check" in r:
            print(f"  with checks: {r['s_check']:.3f} s, {r['s_check'] / r['s']:.2f}x the plain run   target <= 2x",
                  flush=True)
        if "s_report" in r:
            print(f"  with the report: {r['s_report']:.3f} s, {r['s_report'] / r['s']:.2f}x the plain run   "
                  "target <= 2x", flush=True)
    elif name == "grid":
        print(f"whole grid {r['size']}^3 ({r['ctas']} CTAs): run {r['run_s']:.3f} s, fragsim.gemm {r['gemm_s']:.3f} s, "
              f"ratio {r['ratio']:.2f}x (bit-exact: {r['bit_exact']})   target <= 4x", flush=True)
        print(f"  the run's mma.sync batches ({r['run_mma_per_call']:,} mma a call): {r['run_mma_us']:.3f} us per mma",
              flush=True)
        if "check_s" in r:
            print(f"  with checks: {r['check_s']:.3f} s, {r['check_s'] / r['run_s']:.2f}x the plain run   target <= 2x",
                  flush=True)
        if "report_s" in r:
            print(f"  with the report: {r['report_s']:.3f} s, {r['report_s'] / r['run_s']:.2f}x the plain run   "
                  "target <= 2x", flush=True)
    elif name == "mma":
        print(f"fragsim.mma {FORM}, {r['batch']:,} warps: {r['us_per_mma']:.3f} us per mma   target <= 0.3 us",
              flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
