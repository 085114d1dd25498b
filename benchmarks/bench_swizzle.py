"""Benchmark: fragsim.swizzle_search on a 128 x 64-byte tile with a full CTA access set (one core).

    python benchmarks/bench_swizzle.py [--repeat 5] [--cols 32] [--top 10]

The tile: 128 x 32 bf16 (64-byte rows).  The access set of a 4-warp (2x2) CTA: the copy of the tile
by cp.async.cg.16 (4 threads per row, 16 instructions) from a row-major global matrix 8 KiB wide,
and the A fragments of m16n8k16 read by ldmatrix.x4 by every warp at both k-steps (32
instructions).  Times the whole search: enumerating the space, scoring every layout with the
batched bank model, ranking, and the round trip of the verified candidates.  The first call (numba
loading its on-disk cache) is reported apart.  Target: <= 1 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import fragsim  # noqa: E402
from fragsim.search import access  # noqa: E402

FORM = "m16n8k16.row.col.f32.bf16.bf16.f32"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--cols", type=int, default=32, help="bf16 columns of the tile (32: 64-byte rows)")
    p.add_argument("--top", type=int, default=10, help="candidates verified by the round trip")
    args = p.parse_args(argv)
    tile = fragsim.Tile(128, args.cols, "bf16")
    writes = access.copy(tile, "cp.async.cg.16", threads=128, global_pitch=8192)
    reads = access.mma_operand(tile, FORM, "A", warps=(2, 2))
    t0 = time.perf_counter()
    r = fragsim.swizzle_search(tile, reads, writes, top=args.top)
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        r = fragsim.swizzle_search(tile, reads, writes, top=args.top)
        best = min(best, time.perf_counter() - t0)
    print(f"one core ({platform.processor() or platform.machine()}), best of {args.repeat}")
    print(f"tile {tile.describe()}")
    print(f"access set: {len(writes) + len(reads)} warp instructions ({writes.describe()}; {reads.describe()})")
    print(f"{r.scored} distinct layouts scored, {len(r.ranked)} verified by the round trip: "
          + ", ".join(f"{n} {fam}" for fam, n, _ in r.space))
    print(f"search: {best * 1e3:.0f} ms (first call, numba cache load included: {first * 1e3:.0f} ms)")
    print(f"best: {r.best.name}, {r.best.wavefronts} wavefronts ({r.best.conflicts} conflicts); "
          f"unswizzled: {r.nothing.wavefronts} ({r.nothing.conflicts})")


if __name__ == "__main__":
    main()
