"""fragsim.gemm's speed, side by side with the single-mma path (``fragsim.mma``).

    python benchmarks/bench_gemm.py [--size 1024] [--big 4096] [--repeat 3] [--json] [--forms S ...]

Per form (default: the m16n8k16 f16 forms):

- ``mma us``: microseconds per mma through ``fragsim.mma`` on a batch of 20,000 warps, one core
  (registers of random normal values);
- ``gemm us``: microseconds per mma of ``fragsim.gemm`` on a size^3 GEMM, one core, everything
  included (decoding the matrices, the chain of every output tile, D's words);
- ``big s``: seconds for a big^3 GEMM on every core numba has (the first form only).

Figures are the best of ``--repeat`` runs after one warm-up call (numba's compile or cache load).
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

FORMS = ["m16n8k16.row.col.f32.f16.f16.f32", "m16n8k16.row.col.f16.f16.f16.f16"]


def best(fn, repeat):
    fn()
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def operands(form, M, N, K, seed=0):
    f = fragsim.lookup(form)
    rng = np.random.default_rng(seed)
    return tuple(fragsim.to_bits(rng.standard_normal(shape).astype(np.float32), f.fmt(op).name)
                 for op, shape in (("A", (M, K)), ("B", (K, N)), ("C", (M, N))))


def mma_us(form, repeat, batch=20000):
    f = fragsim.lookup(form)
    A, B, C = operands(form, batch * f.shape[0], f.shape[1], f.shape[2])
    a = fragsim.pack(f, "A", A.reshape(batch, f.shape[0], f.shape[2]))
    b = fragsim.pack(f, "B", np.broadcast_to(B, (batch,) + B.shape))
    c = fragsim.pack(f, "C", C.reshape(batch, f.shape[0], f.shape[1]))
    return best(lambda: fragsim.mma(f, a, b, c), repeat) / batch * 1e6


def gemm_s(form, n, repeat):
    A, B, C = operands(form, n, n, n)
    fragsim.gemm(form, A[:64, :64], B[:64, :64], C[:64, :64])       # compile / load the cache
    return best(lambda: fragsim.gemm(form, A, B, C), repeat)


def mmas(form, n):
    m, nn, k = fragsim.lookup(form).shape
    return (n // m) * (n // nn) * (n // k)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1024, help="one-core GEMM size (default 1024)")
    p.add_argument("--big", type=int, default=4096, help="all-core GEMM size (default 4096; 0: skip)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--forms", nargs="*", help="forms whose name contains one of these strings")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    import numba

    forms = FORMS if not args.forms else [f for f in fragsim.FORMS if any(s in f for s in args.forms)]
    threads = numba.get_num_threads()
    rows = []
    for form in forms:
        numba.set_num_threads(1)
        row = {"form": form, "mma_us": mma_us(form, args.repeat),
               "gemm_us": gemm_s(form, args.size, args.repeat) / mmas(form, args.size) * 1e6, "size": args.size}
        numba.set_num_threads(threads)
        if args.big and form == forms[0]:
            row["big"] = args.big
            row["big_s"] = gemm_s(form, args.big, max(1, args.repeat - 1))
            row["big_us_per_mma"] = row["big_s"] / mmas(form, args.big) * 1e6
        rows.append(row)
    info = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "numba_threads": threads,
            "python": platform.python_version(), "numba": numba.__version__}
    if args.json:
        print(json.dumps({"machine": info, "results": rows}))
        return 0
    print(f"{info['cores']} cores, numba {info['numba']} with {threads} threads")
    print(f"{'form':40} {'mma us (1 core)':>16} {'gemm us/mma (1 core)':>21} {'speed-up':>9}")
    for r in rows:
        print(f"{r['form']:40} {r['mma_us']:16.3f} {r['gemm_us']:21.3f} {r['mma_us'] / r['gemm_us']:8.1f}x")
    for r in rows:
        if "big_s" in r:
            print(f"{r['form']}: {r['big']}^3 GEMM ({mmas(r['form'], r['big']):,} mma) on {threads} threads: "
                  f"{r['big_s']:.2f} s ({r['big_us_per_mma'] * 1e3:.1f} ns per mma)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
