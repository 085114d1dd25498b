"""Benchmark: how the work of check_copy and swizzle_search grows with their input (one core).

    python benchmarks/bench_check_sizes.py [--copies 2048,8192,16384]

check_copy of a CTA's copy issued as 2,048 .. 16,384 cp.async instructions (the most check_copy
takes): seconds per call and per instruction, which stay flat when the work is linear (a faulting
instruction was once marked with a pass over every element per instruction: 16,384 copies took
239 s).  Then swizzle_search on a tile that fills sm_90's shared memory (128 x 1024 u8, copy + row
reads, the 4-row-bit XOR space): seconds, layouts and lane addresses scored.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import fragsim  # noqa: E402
from fragsim.search import access as A  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--copies", default="2048,8192,16384", help="instruction counts of check_copy")
    args = p.parse_args(argv)
    print(f"one core ({platform.processor() or platform.machine()})")
    copies = [("cp.async.cg.16", "(tid + pass * 32) * 16")]
    fragsim.check_copy("64x64 f16", copies, variables={"pass": range(16)}, threads=32)    # compile, load caches
    for n in (int(x) for x in args.copies.split(",")):
        t0 = time.perf_counter()
        fragsim.check_copy("64x64 f16", copies, variables={"pass": range(n)}, threads=32)
        dt = time.perf_counter() - t0
        print(f"check_copy, {n:6d} instructions: {dt:7.2f} s ({1e3 * dt / n:.2f} ms per instruction)")
    t = fragsim.Tile(128, 1024, "u8")
    s = A.copy(t, threads=128) + A.row_reads(t, threads=128)
    t0 = time.perf_counter()
    r = fragsim.swizzle_search(t, s.reads, s.writes, xor_row_bits=4)
    dt = time.perf_counter() - t0
    lanes = r.scored * len(s) * 32
    print(f"swizzle_search 128x1024 u8, copy + rows, xor_row_bits=4: {dt:.1f} s, {r.scored} layouts, "
          f"{lanes:,} lane addresses ({lanes / dt / 1e6:.1f} million per second)")


if __name__ == "__main__":
    main()
