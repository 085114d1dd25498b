"""fragsim.trace_fragments' speed: a one-CTA trace next to the plain run of the same CTA.

    python benchmarks/bench_trace.py [--k 1024] [--repeat 3] [--cpu N]

On one core (the process pins itself to ``--cpu``, default the first it may use, and numba to one
thread).  Each figure is the best of ``--repeat`` after a warm-up, the two runs alternating (A, B,
A, B ...) so that a busy machine slows both alike:

- ``plain``: ``fragsim.run_kernel`` of one CTA of tests/data/ptx/bgemm_128x128.sm90a.ptx (128x128 tile,
  4 warps, 2-stage cp.async, ldmatrix.x4, 32 mma.sync m16n8k16 per k-step of 32) at K = ``--k``;
- ``trace``: ``trace_fragments`` of the same CTA (two passes: row/column numbers, then k numbers
  and D's places), without diagnosis (the kernel is right);
- ``diagnose``: the trace of tests/data/ptx/trace/ldsm_gemm.khalves.90a.ptx (one 64x64 CTA, K = 128)
  including its diagnosis and the verifying re-run, next to that kernel's plain run.

Target: a trace costs a few plain runs (one per pass).  The figures are in docs/trace.md ("Speed").
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)


def pin(cpu: int | None) -> None:
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[0] if cpu is None else cpu})


def best_pair(a, b, repeat: int) -> tuple[float, float]:
    a(), b()                                        # warm-up: imports, numba caches, parsing
    ta, tb = [], []
    for _ in range(repeat):
        for f, out in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            f()
            out.append(time.perf_counter() - t0)
    return min(ta), min(tb)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=None)
    args = ap.parse_args()
    pin(args.cpu)
    import fragsim

    data = os.path.join(ROOT, "tests", "data", "ptx")
    M = N = 128
    K = args.k
    A, Bt, D = np.zeros((M, K), np.uint16), np.zeros((N, K), np.uint16), np.zeros((M, N), np.float32)
    bgemm = os.path.join(data, "bgemm_128x128.sm90a.ptx")
    plain, trace = best_pair(
        lambda: fragsim.run_kernel(bgemm, block=128, args=[A, Bt, D, M, N, K]),
        lambda: fragsim.trace_fragments(bgemm, block=128, args=[A, Bt, D, M, N, K], a=0, b="1.T", d=2),
        args.repeat)
    print(f"bgemm_128x128, one CTA, K={K}: plain {plain:.3f} s, trace {trace:.3f} s ({trace / plain:.1f}x, "
          "2 passes)")
    k16 = os.path.join(data, "trace", "ldsm_gemm.khalves.90a.ptx")
    a2 = [np.zeros((64, 128), np.uint16), np.zeros((64, 128), np.uint16), np.zeros((64, 64), np.float32), 64, 64, 128]
    plain, trace = best_pair(
        lambda: fragsim.run_kernel(k16, block=128, dynamic_smem=16384, args=a2),
        lambda: fragsim.trace_fragments(k16, block=128, dynamic_smem=16384, args=a2, a=0, b="1.T", d=2),
        args.repeat)
    print(f"ldsm_gemm.khalves, one CTA, K=128: plain {plain:.3f} s, trace with diagnosis and verification "
          f"{trace:.3f} s ({trace / plain:.1f}x: 2 passes, 2 re-runs to follow the loads, 2 with the fix)")


if __name__ == "__main__":
    main()
