"""Benchmark: batched bank-conflict model on random ldmatrix.x4 address sets (one core).

    python benchmarks/bench_banks.py [--n 2000000] [--repeat 5]

Prints warp-instructions per second for ``fragsim.bank_conflicts(op, addrs)`` with ``addrs``
shaped (n, 32): random aligned addresses in 16 KiB of shared memory (the numba kernel; compile
time excluded, input checks included).  ``--op all`` times every access width.
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
    p.add_argument("--op", default="ldmatrix.x4", help="instruction, or 'all' for a table over every width")
    args = p.parse_args(argv)
    ops = (["ldmatrix.x4", "stmatrix.x4", "ld.shared.b32", "ld.shared.v2.b32", "ld.shared.v4.b32",
            "st.shared.v4.b32", "cp.async.ca.16"] if args.op == "all" else [args.op])
    print(f"one core ({platform.processor() or platform.machine()}), best of {args.repeat}, {args.n} random address sets")
    for op in ops:
        size = fragsim.parse_shared_op(op).bytes_per_addr
        rng = np.random.default_rng(0)
        addrs = rng.integers(0, 16384 // size, (args.n, 32)) * size
        fragsim.bank_conflicts(op, addrs[:10])          # compile (or load the cache)
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = fragsim.bank_conflicts(op, addrs)
            best = min(best, time.perf_counter() - t0)
        print(f"{op:18s} {args.n / best / 1e6:6.2f} M warp-instructions/s  ({best * 1e3:.0f} ms; "
              f"mean wavefronts {r.wavefronts.mean():.2f}, conflicts {r.conflicts.mean():.2f})", flush=True)


if __name__ == "__main__":
    main()
