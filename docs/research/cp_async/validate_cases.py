"""Fresh cp.async cases for checking rule.py (frozen before they were measured) on new data.

Source offsets lie in a 4 MiB buffer (measure.py SRC_BYTES), whose absolute address the probe
prints, so the rule sees absolute addresses and address bits up to 21 are exercised:

  hb  class-hash probes of address bits 16..21 (and 9..15 again): lane 0 reads word 0 of line A,
      lane 1 word 1 of line A ^ 2^k ^ x, x = 0..3 (one x shares A's class if bit k is in the hash)
  rs  random line sets with no bank collision (each lane its own unit of a line drawn from a small
      pool): wavefronts = ideal = phases x slots
  sh  shifted copies (full and partial warps) at random offsets in the buffer
  rv  random destinations x sources x masks (collisions of every kind)
"""

from __future__ import annotations

import numpy as np

from cases import LANE, FULL, SMEM_BYTES

SRC_BYTES = 4 << 20
LINES = SRC_BYTES // 128


def cases(op: str, seed: int = 0):
    w = int(op.split(".")[-1])
    G = 128 // w
    rng = np.random.default_rng([seed, 99, w, op.startswith("cp.async.cg")])
    out = []

    def add(label, dst, src, mask=FULL):
        dst = np.asarray(dst, np.int64)
        src = np.asarray(src, np.int64)
        assert (dst % w == 0).all() and (src % w == 0).all(), label
        assert (dst >= 0).all() and (dst < SMEM_BYTES).all() and (src >= 0).all() and (src < SRC_BYTES).all(), label
        out.append((label, dst, int(mask) & FULL, src))

    contig = LANE * w
    if op.startswith("cp.async.cg"):
        for k in range(30):
            add(f"rv cg #{k}", rng.integers(0, 2048 // w, 32) * w, rng.integers(0, SRC_BYTES // w, 32) * w,
                int(rng.integers(1, 1 << 32)))
        return out
    if w == 4:
        for A in (3, 1000, 20000):
            for k in range(2, 15):
                for x in range(4):
                    B = A ^ (1 << k) ^ x
                    src = np.zeros(32, np.int64)
                    src[0], src[1] = A * 128, B * 128 + 4
                    add(f"hb A={A} k={k} x={x}", contig, src, 0b11)
    # rs: random line sets, each lane its own unit: no bank collision anywhere
    for k in range(60):
        npool = int(rng.integers(2, 17))
        span = int(rng.choice([8, 64, 1024, 8192, LINES - 1]))
        base = int(rng.integers(0, LINES - span))
        pool = base + rng.integers(0, span, npool)
        lines = pool[rng.integers(0, npool, 32)]
        m = FULL if k % 3 else int(rng.integers(1, 1 << 32))
        add(f"rs pool={npool} span={span}", contig, lines * 128 + (LANE % G) * w, m)
    # sh: shifted copies at random places, full and partial
    for k in range(80):
        s = int(rng.integers(0, (SRC_BYTES - 4096) // w)) * w
        d = int(rng.integers(0, G)) * w
        if k % 4 == 0:
            m = FULL
        elif k % 4 == 1:
            lo = int(rng.integers(0, 32))
            m = ((1 << int(rng.integers(lo + 1, 33))) - 1) ^ ((1 << lo) - 1)
        elif k % 4 == 2:
            i, j = rng.choice(32, 2, replace=False)
            m = (1 << int(i)) | (1 << int(j))
        else:
            m = int(rng.integers(1, 1 << 32))
        add(f"sh s={s} d={d}", d + contig, s + contig, m)
    # rv: random everything
    for k in range(250):
        ds = k % 6
        if ds == 0:
            d = contig
        elif ds == 1:
            d = rng.permutation(32) * w
        elif ds == 2:
            d = rng.integers(0, 1024 // w, 32) * w
        elif ds == 3:
            d = (LANE & ~int(rng.integers(0, 32))) * w
        elif ds == 4:
            d = LANE * int(rng.choice([2 * w, 32, 64, 128, 136])) // w * w
        else:
            d = rng.integers(0, SMEM_BYTES // w, 32) * w
        ss = (k // 6) % 6
        base = int(rng.integers(0, LINES - 64)) * 128
        if ss == 0:
            s = base + int(rng.integers(0, G)) * w + rng.permutation(32) * w
        elif ss == 1:
            s = base + rng.integers(0, 16, 32) * 128 + (LANE % G) * w
        elif ss == 2:
            s = base + rng.integers(0, 2048 // w, 32) * w
        elif ss == 3:
            s = base + (LANE & ~int(rng.integers(0, 32))) * w
        elif ss == 4:
            s = base + LANE * int(rng.choice([2 * w, 32, 64, 128, 128 + w, 256])) // w * w
        else:
            s = rng.integers(0, SRC_BYTES // w, 32) * w
        m = FULL if rng.random() < 0.6 else int(rng.integers(1, 1 << 32))
        add(f"rv d{ds} s{ss}", d, s, m)
    return out


if __name__ == "__main__":
    for op in ("cp.async.ca.4", "cp.async.ca.8", "cp.async.ca.16", "cp.async.cg.16"):
        print(op, len(cases(op)))
