"""Benchmark: batched bank-conflict model on random ldmatrix.x4 address sets (one core).

    python benchmarks/bench_banks.py [--n 2000000] [--repeat 5]

Prints warp-instructions per second for ``fragsim.bank_conflicts(op, addrs)`` with ``addrs``
shaped (n, 32): random 16-byte-aligned row addresses in 16 KiB of shared memory (the numba
kernel; compile time excluded, input checks included).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import fragsim  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=2_000_000, help="address sets per timed call")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--op", default="ldmatrix.x4")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    addrs = rng.integers(0, 16384 // 16, (args.n, 32)) * 16
    fragsim.bank_conflicts(args.op, addrs[:10])          # compile (or load the cache)
    best = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        r = fragsim.bank_conflicts(args.op, addrs)
        best = min(best, time.perf_counter() - t0)
    rate = args.n / best
    print(f"{args.op}: {args.n} random address sets in {best * 1e3:.1f} ms (best of {args.repeat}) "
          f"= {rate / 1e6:.2f} M warp-instructions/s on one core ({platform.processor() or platform.machine()})")
    print(f"mean wavefronts {r.wavefronts.mean():.3f}, mean conflicts {r.conflicts.mean():.3f}")


if __name__ == "__main__":
    main()
