"""cp.async case families of the H100 study (docs/research/cp_async/NOTES.md): (label, dst, mask, src).

Selected with ``python -m fragsim.gpu_check.banks.measure measure --cp-family NAME``; seed 0 gives the
cases of the records tests/data/banks/ncu_banks_h100_cp_async_*.npz.

``systematic`` (record ``_1``), in measuring priority order, by the label's first word:
  shift     full-warp contiguous copies dst = d + lane*w, src = s + lane*w, s and d every multiple of
            w inside a 128-byte line (all pairs for .16, both axes plus random pairs for .4/.8)
  partial   the same copies with partial warps: contiguous runs (clipped at lane 31), single lanes,
            two lanes in different width phases (ca.16 mask 0x180, src = lane*16 + 16 is issue 9's
            example), every-other / every-fourth lanes, halves, random masks
  lines     sources spread over 2..32 lines, each line's words on the same banks as the other lines
            ("same banks") or on banks no other line uses ("own banks"), lines adjacent or spaced
  srcperm   sources permuted within lines, lines permuted, whole permutation, reversed
  srcdup    several lanes on one source element (lane & ~k, lane % k, all one)
  stride    strided sources
  dstconf   destinations with bank conflicts crossed with source patterns
  twoline   halves / interleaved lanes on two lines, with and without destination conflicts
  random    random destinations, sources and masks
``pairs`` (record ``_pairs``): two-line probes, which word of line B collides with one word of line A.
``validate`` (record ``_validate``): class-hash probes of address bits 9..21, random collision-free
line sets, shifted copies at random places of the whole source buffer, random everything.

Units: w = the op's bytes per lane, G = 128 // w lanes per 128 bytes (one width phase).
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions.shared_ops import parse_shared_op

from .cases import FULL, LANE, LEGACY_SRC_BYTES
from .probe import SMEM_BYTES, SRC_BYTES

# .cg bypasses L1 and counted 0 wavefronts in all 1,077 H100 launches: a sample suffices
CG_CASES = 90


def lanes_mask(lanes) -> int:
    m = 0
    for lane in lanes:
        m |= 1 << int(lane)
    return m


def run_mask(lo: int, n: int) -> int:
    """Lanes lo .. lo+n-1, clipped at lane 31."""
    return lanes_mask(range(lo, min(WARP_LANES, lo + n)))


def _width(op: str):
    o = parse_shared_op(op)
    if o.kind != "ldgsts":
        raise ValueError(f"op {op!r}: the cp.async families need a cp.async op")
    return o.bytes_per_addr, o.level == "cg"


def systematic(op: str, seed: int = 0):
    """The systematic families, round-robin (shift and partial weighted 3x)."""
    w, cg = _width(op)
    G = 128 // w
    rng = np.random.default_rng([seed, w, cg])
    out = []

    def add(label, dst, src, mask=FULL):
        out.append((label, np.asarray(dst, np.int64), int(mask) & FULL, np.asarray(src, np.int64)))

    shifts = list(range(0, 128, w))
    contig = LANE * w
    # ---- shift
    for s in shifts:
        add(f"shift s={s} d=0", contig, s + contig)
    for d in shifts[1:]:
        add(f"shift s=0 d={d}", d + contig, contig)
    if w == 16:
        pairs = [(s, d) for s in shifts[1:] for d in shifts[1:]]
    else:
        pairs = sorted({(int(rng.choice(shifts[1:])), int(rng.choice(shifts[1:]))) for _ in range(48)})
    for s, d in pairs:
        add(f"shift s={s} d={d}", d + contig, s + contig)
    for s in (128, 128 + w, 256 + 3 * w, 4096 + 64, 8192 + 128 - w):
        add(f"shift s={s} d=0 (far)", contig, s + contig)
    for s in (0, w, 64, 128 - w):
        add(f"shift reversed s={s}", contig, s + (WARP_LANES - 1 - LANE) * w)
        add(f"shift dst reversed s={s}", (WARP_LANES - 1 - LANE) * w, s + contig)

    # ---- partial
    pshifts = [0, w, 64, 128 - w] + ([2 * w] if w < 16 else [32])
    runs = sorted({(0, 1), (31, 1), (7, 2), (G - 1, 2), (0, 3), (5, 4), (0, G // 2), (3, G - 1), (0, G),
                   (1, G), (G - 2, 4), (0, G + 1), (G // 2, G), (0, 16), (16, 16), (8, 17), (0, 24), (9, 23),
                   (0, 31), (1, 31)})
    for s in pshifts:
        for lo, n in runs:
            add(f"partial run {lo}+{n} s={s}", contig, s + contig, run_mask(lo, n))
    # lane pairs across width phases; those naming a lane past 31 (.4: G = 32) do not exist
    two = sorted({(G - 1, G), (0, G), (0, 16), (15, 16), (3, 29), (0, 31), (G - 2, G + 1),
                  (1, 2), (G // 2, G + G // 2), (0, 2 * G % WARP_LANES or 1)})
    two = [(i, j) for i, j in two if j < WARP_LANES]
    for s in sorted(set(pshifts + [G * w // 2 if w > 4 else 16, 16])):
        for i, j in two:
            add(f"partial two {i},{j} s={s}", contig, s + contig, lanes_mask([i, j]))
    for s in (0, w, 64):
        for lane in sorted({0, G - 1, G, WARP_LANES - 1} - {WARP_LANES}):
            add(f"partial single {lane} s={s}", contig, s + contig, lanes_mask([lane]))
    named = {"even": 0x55555555, "odd": 0xAAAAAAAA, "every4": 0x11111111, "lo16": 0x0000FFFF,
             "hi16": 0xFFFF0000, "0x00ff00ff": 0x00FF00FF, "0x0f0f0f0f": 0x0F0F0F0F,
             "0x80000001": 0x80000001, "0x01010101": 0x01010101, "0x3c3c3c3c": 0x3C3C3C3C}
    for s in pshifts:
        for nm, m in named.items():
            add(f"partial mask {nm} s={s}", contig, s + contig, m)
    for k in range(24):
        s = int(rng.choice(shifts))
        m = int(rng.integers(1, FULL + 1))
        if k % 2 == 0:
            m &= int(rng.integers(1, FULL + 1))
        add(f"partial random s={s}", contig, s + contig, m)
    if w == 16:  # issue 9's example (two lanes on one line, different width phases) and its mirror
        add("partial issue9 0x180 s=16", contig, 16 + contig, 0x180)
        add("partial issue9 0x180 s=0", contig, contig, 0x180)

    # ---- lines: m lanes per line; "own banks": a lane's offset in its line is (lane*w) % 128, so
    # lines share banks only where w > 4 forces it; "same banks": every line uses 0, w, .., (m-1)*w
    for m in (1, 2, 4, 8, 16, 32):
        for sp, spn in ((128, "adjacent"), (256, "every 2nd"), (4096 + 128, "4KiB+128")):
            line = (LANE // m) * sp
            if line.max() + 128 > LEGACY_SRC_BYTES:
                continue
            add(f"lines m={m} {spn} own banks", contig, line + (LANE * w) % 128)
            if m * w <= 128:
                add(f"lines m={m} {spn} same banks", contig, line + (LANE % m) * w)
    # a contiguous copy split over lines at lane b (lanes >= b on the next line)
    for b in (1, G // 4, G // 2, G - 1, 16, 24, 31):
        add(f"lines split at {b} own banks", contig, contig % 128 + (LANE >= b) * 128)
        add(f"lines split at {b} next line", contig, contig + (LANE >= b) * 128)

    # ---- srcperm
    for k in range(3):
        within = (np.concatenate([(i * G + rng.permutation(G)) for i in range(WARP_LANES // G)]) if G < WARP_LANES
                  else rng.permutation(WARP_LANES))
        add(f"srcperm within lines #{k}", contig, within * w)
        blocks = rng.permutation(WARP_LANES // G) if G < WARP_LANES else np.array([0])
        add(f"srcperm lines permuted #{k}", contig, blocks[LANE // G] * 128 + (LANE % G) * w)
        add(f"srcperm whole #{k}", contig, rng.permutation(WARP_LANES) * w)
        add(f"srcperm whole shifted #{k}", contig, w + rng.permutation(WARP_LANES) * w)
    add("srcperm pair swap", contig, (LANE ^ 1) * w)
    add("srcperm half swap", contig, (LANE ^ 16) * w)
    add("srcperm line-phase swap", contig, (LANE ^ G % WARP_LANES) * w if G < WARP_LANES else (LANE ^ 8) * w)

    # ---- srcdup
    for k in (1, 3, 7, 15, 31):
        add(f"srcdup lane&~{k}", contig, (LANE & ~k) * w)
        add(f"srcdup lane&~{k} shifted", contig, w + (LANE & ~k) * w)
    for k in (2, 4, 8, 16):
        add(f"srcdup lane%{k}", contig, (LANE % k) * w)
        add(f"srcdup lane%{k} +line", contig, (LANE % k) * w + (LANE // k) * 128)
    add("srcdup all one", contig, np.full(WARP_LANES, 64))
    add("srcdup two lines one each", contig, (LANE // 16) * 128)

    # ---- stride
    strides = sorted({2 * w, 4 * w, 8 * w, 32, 64, 96, 128, 128 + w, 128 + 2 * w, 192, 256, 256 + w,
                      132 if w == 4 else 128 + w, 144, 160, 1024 + w})
    for st in strides:
        if st % w:
            continue
        add(f"stride {st}", contig, LANE * st)
        add(f"stride {st} +{w}", contig, w + LANE * st)

    # ---- dstconf
    dsts = {"d stride128": LANE * 128, "d stride64": LANE * 64, "d stride32": LANE * 32,
            "d dup&~1": (LANE & ~1) * w, "d dup&~7": (LANE & ~7) * w, "d dup&~15": (LANE & ~15) * w,
            "d lane%8": (LANE % 8) * w, "d broadcast": np.zeros(WARP_LANES, np.int64),
            "d stride 2w": LANE * 2 * w}
    srcs = {"s contiguous": contig, "s +w": w + contig, "s +64": 64 + contig,
            "s lane*16": LANE * 16, "s lane*32": LANE * 32,
            "s lane*128": LANE * 128, "s lines m=8 own": (LANE // 8) * 128 + (LANE * w) % 128,
            "s lines m=4 same": (LANE // 4) * 128 + (LANE % 4) * w}
    for dn, d in dsts.items():
        for sn, s in srcs.items():
            add(f"dstconf {dn} | {sn}", d, s)

    # ---- twoline
    h = LANE >= 16
    e = LANE & 1
    two_src = {
        "halves own banks": (LANE * w) % 128 + h * 128,
        "halves same banks": (LANE % 16) * w % 128 + h * 128,
        "halves half overlap": ((LANE % 16) * w + h * 8 * w) % 128 + h * 128,
        "interleaved own banks": (LANE * w) % 128 + e * 128,
        "interleaved same banks": ((LANE // 2) * w) % 128 + e * 128,
        "first lane other line": (LANE * w) % 128 + (LANE == 0) * 128,
        "last lane other line": (LANE * w) % 128 + (LANE == WARP_LANES - 1) * 128,
        "middle lane other line": (LANE * w) % 128 + (LANE == 13) * 128,
    }
    two_dst = {"d contiguous": contig, "d dup&~3 low half": np.where(h, LANE, LANE & ~3) * w,
               "d dup&~3 high half": np.where(h, LANE & ~3, LANE) * w, "d stride128": LANE * 128}
    for sn, s in two_src.items():
        for dn, d in two_dst.items():
            add(f"twoline {sn} | {dn}", d, s)

    # ---- random
    for k in range(60):
        style = k % 6
        if style == 0:
            d = rng.integers(0, 1024 // w, WARP_LANES) * w
        elif style == 1:
            d = rng.permutation(WARP_LANES) * w
        elif style == 2:
            d = rng.integers(0, 4, WARP_LANES) * 128 + rng.integers(0, 128 // w, WARP_LANES) * w
        elif style == 3:
            d = (LANE & ~int(rng.integers(0, WARP_LANES))) * w
        elif style == 4:
            d = contig + int(rng.integers(0, G)) * w
        else:
            d = rng.integers(0, SMEM_BYTES // w, WARP_LANES) * w
        sstyle = (k // 6) % 5
        if sstyle == 0:
            s = rng.integers(0, 512 // w, WARP_LANES) * w
        elif sstyle == 1:
            s = int(rng.integers(0, G)) * w + rng.permutation(WARP_LANES) * w
        elif sstyle == 2:
            s = rng.integers(0, 4096 // w, WARP_LANES) * w
        elif sstyle == 3:
            s = rng.integers(0, 8, WARP_LANES) * 128 + (LANE * w) % 128
        else:
            s = (LANE & ~int(rng.integers(0, WARP_LANES))) * w + int(rng.integers(0, G)) * w
        m = FULL if rng.random() < 0.6 else int(rng.integers(1, 1 << WARP_LANES))
        add(f"random d{style} s{sstyle}", d, s, m)
    out = priority_order(out)
    return out[:CG_CASES] if cg else out


def priority_order(cases, heavy=("shift", "partial"), weight=3):
    """Round-robin over the families (``heavy`` ones ``weight`` times as often), so a run cut short
    by its time budget still holds some of every family."""
    fam: dict = {}
    for c in cases:
        fam.setdefault(c[0].split()[0], []).append(c)
    streams = []
    for name, g in fam.items():
        k = weight if name in heavy else 1
        streams += [g[i::k] for i in range(k)]
    out = []
    for i in range(max(len(g) for g in streams)):
        out.extend(g[i] for g in streams if i < len(g))
    return out


def pairs(op: str, seed: int = 0):
    """Two-line probes: which unit (w bytes) of source line B shares a bank with unit a of line A?

    Lane 0 reads (A, a); the probe Z has lane 1 read (B, 0), probe W_j has lane u read (B, u) for
    every u in 1..G-1 with bit j set (lane u writes unit u of a row, so destinations never collide).
    A single colliding unit u* takes 2 wavefronts exactly in the W_j with bit j of u* set (or in Z
    for u* = 0); 2 wavefronts in every probe means the two lines never share a wavefront.  For .4
    also every word of B singly against line 0 (ground truth for the decoding).  .cg: none (L1 is
    bypassed).
    """
    w, cg = _width(op)
    if cg:
        return []
    rng = np.random.default_rng([seed, w, 7])
    dst = LANE * w
    n = 128 // w
    out = []

    def probe_set(A, a, B, tag):
        def launch(label, lanes):
            src = np.zeros(WARP_LANES, np.int64)
            for lane, (line, unit) in lanes.items():
                src[lane] = line * 128 + unit * w
            out.append((f"pair {tag} A={A} a={a} B={B} {label}", dst, lanes_mask(lanes), src))

        launch("Z", {0: (A, a), 1: (B, 0)})
        for j in range(n.bit_length() - 1):
            launch(f"W{j}", {0: (A, a)} | {u: (B, u) for u in range(1, n) if u >> j & 1})

    if w == 4:
        for B in (1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 33, 66):
            for u in range(32):
                lane = u if u else 1
                src = np.zeros(WARP_LANES, np.int64)
                src[lane] = B * 128 + u * 4
                out.append((f"pair scan A=0 a=0 B={B} u={u}", dst, 1 | (1 << lane), src))
        for B in list(range(1, 256)) + [256, 257, 300, 384, 448, 500, 511]:
            probe_set(0, 0, B, "base")
        # other base lines and a nonzero word of A: additive (rotation) vs XOR (swizzle)
        others: tuple[tuple[int, int], ...] = ((1, 5), (3, 0), (4, 9), (5, 17), (33, 3), (100, 30), (7, 12))
        top, nb = 256, 8
    else:
        for B in list(range(1, 64)) + ([99, 132, 165, 231] if w == 16 else []):
            probe_set(0, 0, B, "base")
        others, top, nb = (((3, 5), (5, 0)) if w == 8 else ((3, 5), (33, 2))), 64, 6
    for A, a in others:
        for B in sorted(set(int(x) for x in rng.integers(0, top, nb)) - {A}):
            probe_set(A, a, B, "other")
    return out


def validate(op: str, seed: int = 0):
    """Validation cases over the whole source buffer (address bits up to 21):

    hb  class-hash probes (.4): lane 0 reads word 0 of line A, lane 1 word 1 of line A ^ 2^k ^ x,
        k = 2..14, x = 0..3 (one x shares A's class if line bit k is in the hash)
    rs  random line sets, each lane its own unit of a line from a small pool: no bank collision
    sh  shifted copies (full and partial warps) at random offsets
    rv  random destinations x sources x masks (.cg: 30 of these only)
    """
    w, cg = _width(op)
    G = 128 // w
    lines_n = SRC_BYTES // 128
    rng = np.random.default_rng([seed, 99, w, cg])
    out = []

    def add(label, dst, src, mask=FULL):
        out.append((label, np.asarray(dst, np.int64), int(mask) & FULL, np.asarray(src, np.int64)))

    contig = LANE * w
    if cg:
        for k in range(30):
            add(f"rv cg #{k}", rng.integers(0, 2048 // w, WARP_LANES) * w, rng.integers(0, SRC_BYTES // w, WARP_LANES) * w,
                int(rng.integers(1, 1 << WARP_LANES)))
        return out
    if w == 4:
        for A in (3, 1000, 20000):
            for k in range(2, 15):
                for x in range(4):
                    src = np.zeros(WARP_LANES, np.int64)
                    src[0], src[1] = A * 128, (A ^ (1 << k) ^ x) * 128 + 4
                    add(f"hb A={A} k={k} x={x}", contig, src, 0b11)
    for k in range(60):
        npool = int(rng.integers(2, 17))
        span = int(rng.choice([8, 64, 1024, 8192, lines_n - 1]))
        base = int(rng.integers(0, lines_n - span))
        pool = base + rng.integers(0, span, npool)
        lines = pool[rng.integers(0, npool, WARP_LANES)]
        m = FULL if k % 3 else int(rng.integers(1, 1 << WARP_LANES))
        add(f"rs pool={npool} span={span}", contig, lines * 128 + (LANE % G) * w, m)
    for k in range(80):
        s = int(rng.integers(0, (SRC_BYTES - 4096) // w)) * w
        d = int(rng.integers(0, G)) * w
        if k % 4 == 0:
            m = FULL
        elif k % 4 == 1:
            lo = int(rng.integers(0, WARP_LANES))
            m = run_mask(lo, int(rng.integers(lo + 1, 33)) - lo)
        elif k % 4 == 2:
            m = lanes_mask(rng.choice(WARP_LANES, 2, replace=False))
        else:
            m = int(rng.integers(1, 1 << WARP_LANES))
        add(f"sh s={s} d={d}", d + contig, s + contig, m)
    for k in range(250):
        ds = k % 6
        if ds == 0:
            d = contig
        elif ds == 1:
            d = rng.permutation(WARP_LANES) * w
        elif ds == 2:
            d = rng.integers(0, 1024 // w, WARP_LANES) * w
        elif ds == 3:
            d = (LANE & ~int(rng.integers(0, WARP_LANES))) * w
        elif ds == 4:
            d = LANE * int(rng.choice([2 * w, 32, 64, 128, 136])) // w * w
        else:
            d = rng.integers(0, SMEM_BYTES // w, WARP_LANES) * w
        ss = (k // 6) % 6
        base = int(rng.integers(0, lines_n - 64)) * 128
        if ss == 0:
            s = base + int(rng.integers(0, G)) * w + rng.permutation(WARP_LANES) * w
        elif ss == 1:
            s = base + rng.integers(0, 16, WARP_LANES) * 128 + (LANE % G) * w
        elif ss == 2:
            s = base + rng.integers(0, 2048 // w, WARP_LANES) * w
        elif ss == 3:
            s = base + (LANE & ~int(rng.integers(0, WARP_LANES))) * w
        elif ss == 4:
            s = base + LANE * int(rng.choice([2 * w, 32, 64, 128, 128 + w, 256])) // w * w
        else:
            s = rng.integers(0, SRC_BYTES // w, WARP_LANES) * w
        m = FULL if rng.random() < 0.6 else int(rng.integers(1, 1 << WARP_LANES))
        add(f"rv d{ds} s{ss}", d, s, m)
    return out


FAMILIES = {"systematic": systematic, "pairs": pairs, "validate": validate}
