"""Systematic cp.async address sets: (label, dst (32,), mask, src (32,)) per op.

Families (the label's first word), in measuring priority order:
  shift     full-warp contiguous copies dst = d + lane*w, src = s + lane*w, s and d every multiple of
            w inside a 128-byte line (all pairs for .16, both axes plus random pairs for .4/.8)
  partial   the same copies with partial warps: contiguous runs, single lanes, two lanes in
            different width phases (ca.16 mask 0x180, src = lane*16 + 16 is issue 9's example),
            every-other / every-fourth lanes, halves, random masks
  lines     sources spread over k = 2..32 lines, each line's words on the same banks as the other
            lines ("same banks") or on banks no other line uses ("own banks"), lines adjacent or
            spaced (256 B, 4 KiB + 128)
  srcperm   sources permuted within lines, lines permuted, whole permutation, reversed
  srcdup    several lanes on one source element (lane & ~k, lane % k, all one)
  stride    strided sources (2w, 4w, 32, 64, 128, 128+w, 256+w, ...)
  dstconf   destinations with bank conflicts (stride 128/64/32, duplicates, broadcast) crossed with
            source patterns (shifted copies, lane*16, lane*32, lane*128, spread lines)
  twoline   two-line probes: halves / interleaved lanes on two lines, same or own banks, with and
            without destination conflicts inside one line
  random    random destinations, sources and masks
"""

from __future__ import annotations

import numpy as np

LANE = np.arange(32, dtype=np.int64)
FULL = 0xFFFFFFFF
SMEM_BYTES = 16384
SRC_BYTES = 65536
OPS = ("cp.async.ca.4", "cp.async.ca.8", "cp.async.ca.16", "cp.async.cg.16")


def _mask(lanes) -> int:
    m = 0
    for l in lanes:
        m |= 1 << int(l)
    return m


def run_mask(lo: int, n: int) -> int:
    return _mask(range(lo, min(32, lo + n)))


def cases(op: str, seed: int = 0):
    w = int(op.split(".")[-1])
    G = 128 // w  # lanes per 128 bytes (a width phase)
    rng = np.random.default_rng([seed, w, op.startswith("cp.async.cg")])
    out = []

    def add(label, dst, src, mask=FULL):
        dst = np.asarray(dst, np.int64)
        src = np.asarray(src, np.int64)
        assert dst.shape == (32,) and src.shape == (32,)
        assert (dst % w == 0).all() and (src % w == 0).all(), label
        assert (dst >= 0).all() and (dst < SMEM_BYTES).all(), label
        assert (src >= 0).all() and (src < SRC_BYTES).all(), label
        out.append((label, dst, int(mask) & FULL, src))

    shifts = list(range(0, 128, w))
    contig = LANE * w
    # ---- shift ------------------------------------------------------------------------------
    for s in shifts:
        add(f"shift s={s} d=0", contig, s + contig)
    for d in shifts[1:]:
        add(f"shift s=0 d={d}", d + contig, contig)
    if w == 16:
        pairs = [(s, d) for s in shifts[1:] for d in shifts[1:]]
    else:
        pairs = {(int(rng.choice(shifts[1:])), int(rng.choice(shifts[1:]))) for _ in range(48)}
        pairs = sorted(pairs)
    for s, d in pairs:
        add(f"shift s={s} d={d}", d + contig, s + contig)
    for s in (128, 128 + w, 256 + 3 * w, 4096 + 64, 8192 + 128 - w):
        add(f"shift s={s} d=0 (far)", contig, s + contig)
    for s in (0, w, 64, 128 - w):
        add(f"shift reversed s={s}", contig, s + (31 - LANE) * w)
        add(f"shift dst reversed s={s}", (31 - LANE) * w, s + contig)

    # ---- partial ----------------------------------------------------------------------------
    pshifts = [0, w, 64, 128 - w] + ([2 * w] if w < 16 else [32])
    runs = [(0, 1), (31, 1), (7, 2), (G - 1, 2), (0, 3), (5, 4), (0, G // 2), (3, G - 1), (0, G),
            (1, G), (G - 2, 4), (0, G + 1), (G // 2, G), (0, 16), (16, 16), (8, 17), (0, 24), (9, 23),
            (0, 31), (1, 31)]
    runs = sorted(set((lo, n) for lo, n in runs if lo < 32))
    for s in pshifts:
        for lo, n in runs:
            add(f"partial run {lo}+{n} s={s}", contig, s + contig, run_mask(lo, n))
    two = sorted({(G - 1, G), (0, G), (0, 16), (15, 16), (3, 29), (0, 31), (G - 2, G + 1),
                  (1, 2), (G // 2, G + G // 2), (0, 2 * G % 32 or 1)} - {(0, 0)})
    for s in sorted(set(pshifts + [G * w // 2 if w > 4 else 16, 16])):
        for i, j in two:
            add(f"partial two {i},{j} s={s}", contig, s + contig, _mask([i, j]))
    for s in (0, w, 64):
        for l in (0, G - 1, G, 31):
            add(f"partial single {l} s={s}", contig, s + contig, _mask([l]))
    named = {"even": 0x55555555, "odd": 0xAAAAAAAA, "every4": 0x11111111, "lo16": 0x0000FFFF,
             "hi16": 0xFFFF0000, "0x00ff00ff": 0x00FF00FF, "0x0f0f0f0f": 0x0F0F0F0F,
             "0x80000001": 0x80000001, "0x01010101": 0x01010101, "0x3c3c3c3c": 0x3C3C3C3C}
    for s in pshifts:
        for nm, m in named.items():
            add(f"partial mask {nm} s={s}", contig, s + contig, m)
    for k in range(24):
        s = int(rng.choice(shifts))
        m = int(rng.integers(1, 1 << 32)) if k % 2 else int(rng.integers(1, 1 << 32)) & int(rng.integers(1, 1 << 32))
        add(f"partial random s={s}", contig, s + contig, m)
    # the example, and its mirror
    if w == 16:
        add("partial issue9 0x180 s=16", contig, 16 + contig, 0x180)
        add("partial issue9 0x180 s=0", contig, contig, 0x180)

    # ---- lines ------------------------------------------------------------------------------
    # m lanes per line; "own banks": the lane's word offset inside its line is (lane*w) % 128,
    # so lines share banks only where w > 4 forces it; "same banks": every line uses offsets
    # 0, w, ..., (m-1)*w.
    for m in (1, 2, 4, 8, 16, 32):
        for sp, spn in ((128, "adjacent"), (256, "every 2nd"), (4096 + 128, "4KiB+128")):
            line = (LANE // m) * sp
            if line.max() + 128 > SRC_BYTES:
                continue
            add(f"lines m={m} {spn} own banks", contig, line + (LANE * w) % 128)
            if m * w <= 128:
                add(f"lines m={m} {spn} same banks", contig, line + (LANE % m) * w)
    # a contiguous copy split over lines at a lane boundary b (lanes >= b on the next line)
    for b in (1, G // 4, G // 2, G - 1, 16, 24, 31):
        add(f"lines split at {b} own banks", contig, contig % 128 + (LANE >= b) * 128)
        add(f"lines split at {b} next line", contig, contig + (LANE >= b) * 128)

    # ---- srcperm ----------------------------------------------------------------------------
    for k in range(3):
        within = np.concatenate([(i * G + rng.permutation(G)) for i in range(32 // G)]) if G < 32 else rng.permutation(32)
        add(f"srcperm within lines #{k}", contig, within * w)
        blocks = rng.permutation(32 // G) if G < 32 else np.array([0])
        add(f"srcperm lines permuted #{k}", contig, blocks[LANE // G] * 128 + (LANE % G) * w)
        add(f"srcperm whole #{k}", contig, rng.permutation(32) * w)
        add(f"srcperm whole shifted #{k}", contig, w + rng.permutation(32) * w)
    add("srcperm pair swap", contig, (LANE ^ 1) * w)
    add("srcperm half swap", contig, (LANE ^ 16) * w)
    add("srcperm line-phase swap", contig, (LANE ^ G % 32) * w if G < 32 else (LANE ^ 8) * w)

    # ---- srcdup -----------------------------------------------------------------------------
    for k in (1, 3, 7, 15, 31):
        add(f"srcdup lane&~{k}", contig, (LANE & ~k) * w)
        add(f"srcdup lane&~{k} shifted", contig, w + (LANE & ~k) * w)
    for k in (2, 4, 8, 16):
        add(f"srcdup lane%{k}", contig, (LANE % k) * w)
        add(f"srcdup lane%{k} +line", contig, (LANE % k) * w + (LANE // k) * 128)
    add("srcdup all one", contig, np.full(32, 64))
    add("srcdup two lines one each", contig, (LANE // 16) * 128)

    # ---- stride -----------------------------------------------------------------------------
    strides = sorted({2 * w, 4 * w, 8 * w, 32, 64, 96, 128, 128 + w, 128 + 2 * w, 192, 256, 256 + w,
                      132 if w == 4 else 128 + w, 144, 160, 1024 + w})
    for st in strides:
        if st % w:
            continue
        add(f"stride {st}", contig, LANE * st)
        add(f"stride {st} +{w}", contig, w + LANE * st)

    # ---- dstconf ----------------------------------------------------------------------------
    dsts = {"d stride128": LANE * 128, "d stride64": LANE * 64, "d stride32": LANE * 32,
            "d dup&~1": (LANE & ~1) * w, "d dup&~7": (LANE & ~7) * w, "d dup&~15": (LANE & ~15) * w,
            "d lane%8": (LANE % 8) * w, "d broadcast": np.zeros(32, np.int64),
            "d stride 2w": LANE * 2 * w}
    srcs = {"s contiguous": contig, "s +w": w + contig, "s +64": 64 + contig,
            "s lane*16": LANE * 16 if w <= 16 else contig, "s lane*32": LANE * 32,
            "s lane*128": LANE * 128, "s lines m=8 own": (LANE // 8) * 128 + (LANE * w) % 128,
            "s lines m=4 same": (LANE // 4) * 128 + (LANE % 4) * w}
    for dn, d in dsts.items():
        for sn, s in srcs.items():
            add(f"dstconf {dn} | {sn}", d, s)

    # ---- twoline ----------------------------------------------------------------------------
    h = LANE >= 16
    e = LANE & 1
    two_src = {
        "halves own banks": (LANE * w) % 128 + h * 128,
        "halves same banks": (LANE % 16) * w % 128 + h * 128,
        "halves half overlap": ((LANE % 16) * w + h * 8 * w) % 128 + h * 128,
        "interleaved own banks": (LANE * w) % 128 + e * 128,
        "interleaved same banks": ((LANE // 2) * w) % 128 + e * 128,
        "first lane other line": (LANE * w) % 128 + (LANE == 0) * 128,
        "last lane other line": (LANE * w) % 128 + (LANE == 31) * 128,
        "middle lane other line": (LANE * w) % 128 + (LANE == 13) * 128,
    }
    two_dst = {"d contiguous": contig, "d dup&~3 low half": np.where(h, LANE, LANE & ~3) * w,
               "d dup&~3 high half": np.where(h, LANE & ~3, LANE) * w, "d stride128": LANE * 128}
    for sn, s in two_src.items():
        for dn, d in two_dst.items():
            add(f"twoline {sn} | {dn}", d, s)

    # ---- random -----------------------------------------------------------------------------
    for k in range(60):
        style = k % 6
        if style == 0:
            d = rng.integers(0, 1024 // w, 32) * w
        elif style == 1:
            d = rng.permutation(32) * w
        elif style == 2:
            d = rng.integers(0, 4, 32) * 128 + rng.integers(0, 128 // w, 32) * w
        elif style == 3:
            d = (LANE & ~int(rng.integers(0, 32))) * w
        elif style == 4:
            d = contig + int(rng.integers(0, G)) * w
        else:
            d = rng.integers(0, SMEM_BYTES // w, 32) * w
        sstyle = (k // 6) % 5
        if sstyle == 0:
            s = rng.integers(0, 512 // w, 32) * w
        elif sstyle == 1:
            s = int(rng.integers(0, G)) * w + rng.permutation(32) * w
        elif sstyle == 2:
            s = rng.integers(0, 4096 // w, 32) * w
        elif sstyle == 3:
            s = rng.integers(0, 8, 32) * 128 + (LANE * w) % 128
        else:
            s = (LANE & ~int(rng.integers(0, 32))) * w + int(rng.integers(0, G)) * w
        m = FULL if rng.random() < 0.6 else int(rng.integers(1, 1 << 32))
        add(f"random d{style} s{sstyle}", d, s, m)
    return out


def priority_order(cs, heavy=("shift", "partial"), weight=3):
    """Round-robin over the families (shift and partial weighted 3x), so a run cut short by its
    time budget still holds some of every family."""
    fam = {}
    for c in cs:
        fam.setdefault(c[0].split()[0], []).append(c)
    streams = []
    for name, g in fam.items():
        k = weight if name in heavy else 1
        streams += [g[i::k] for i in range(k)]
    out = []
    for i in range(max(len(g) for g in streams)):
        out.extend(g[i] for g in streams if i < len(g))
    return out


if __name__ == "__main__":
    for op in OPS:
        cs = cases(op)
        fams = {}
        for c in cs:
            fams[c[0].split()[0]] = fams.get(c[0].split()[0], 0) + 1
        print(op, len(cs), fams)
