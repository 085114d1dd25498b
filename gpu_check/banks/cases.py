"""Address sets for the bank-conflict probe: structured families, random sets, cp.async sources.

Strides, broadcast, duplicates, half/quarter-warp relations, padded and swizzled tiles, partial
warps, and seeded random sets of varied structure, for every instruction of the table.
"""

from __future__ import annotations

import re

import numpy as np

from fragsim.facts.hardware import BANK_BYTES, NUM_BANKS, WARP_LANES
from fragsim.instructions.shared_ops import parse_shared_op

from .probe import OPS, SMEM_BYTES

LANE = np.arange(WARP_LANES, dtype=np.int64)
LANE_BITS = WARP_LANES.bit_length() - 1
FULL = (1 << WARP_LANES) - 1
#: words of one case in the probe's case file: the lane addresses, the mask, the cp.async source offsets
CASE_WORDS = 2 * WARP_LANES + 1


def _align(op):
    o = parse_shared_op(op)
    return o.bytes_per_addr, o.bytes_per_addr, o.kind in ("ld", "st", "ldgsts")


def _fit(addrs, w):
    """Keep aligned addresses inside the probe's shared array."""
    a = np.asarray(addrs, dtype=np.int64)
    a = a - (a % w)
    return a % (SMEM_BYTES - (SMEM_BYTES % w))


def structured_cases(op: str, rng: np.random.Generator):
    """Named address sets: strides, broadcast, duplicates, half/quarter relations, padding,
    swizzled tiles and (for maskable instructions) partially active warps."""
    from fragsim.layout.swizzle import Swizzle

    w, al, maskable = _align(op)
    out = []

    def add(label, a, mask=FULL):
        out.append((label, _fit(a, al), int(mask)))

    strides = {1: [1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64, 128, 132, 256],
               2: [2, 4, 6, 8, 10, 12, 16, 32, 64, 128, 130, 132, 256],
               4: [4, 8, 12, 16, 20, 32, 36, 64, 68, 128, 132, 256, 512],
               8: [8, 16, 24, 32, 40, 64, 72, 128, 136, 256, 264, 512],
               16: [16, 32, 48, 64, 80, 128, 144, 256, 272, 512]}[w]
    for s in strides:
        add(f"stride {s}", LANE * s)
    add("stride -w (reversed)", (31 - LANE) * w)
    # broadcast
    for x in (0, 4 * 7, 1040, int(rng.integers(0, SMEM_BYTES // w)) * w):
        add(f"broadcast {x:#x}", np.full(WARP_LANES, x))
    if w < 4:
        add("one word, every byte", (LANE % (4 // w)) * w)
        add("two words same bank", (LANE % (4 // w)) * w + (LANE // 16) * 128)
    # duplicates: lane l reads what lane (l & ~m) would
    perm = rng.permutation(WARP_LANES)
    bases = {"contiguous": LANE * w, "same bank": LANE * 128, "permuted": perm * w,
             "random 1KiB": rng.integers(0, 1024 // w, WARP_LANES) * w}
    for m in (1, 2, 3, 4, 7, 8, 15, 16, 24, 31):
        for bname, f in bases.items():
            add(f"dup l&~{m} of {bname}", f[LANE & ~m])
    pairs = (LANE & ~1) * w
    pairs[5] = 77 * w
    add("pairs equal but one", pairs)
    for k in (2, 4, 8, 16):
        add(f"lane%{k}", (LANE % k) * w)
        add(f"lane%{k} + 128*(lane/{k})", (LANE % k) * w + (LANE // k) * 128)
    # half- and quarter-warp relations (phases of 8- and 16-byte accesses)
    h0 = LANE % 16
    for d in (0, 64, 128, 256, 16 * w):
        add(f"upper half = lower + {d}", h0 * w + (LANE // 16) * d)
    add("upper half reversed", np.where(LANE < 16, h0, 15 - h0) * w)
    add("upper half pair-swapped", np.where(LANE < 16, h0, h0 ^ 1) * w)
    add("upper half permuted", np.concatenate([np.arange(16), rng.permutation(16)]) * w)
    q0 = LANE % 8
    for d in (0, 32, 64, 128, 8 * w, 512):
        add(f"quarter q = quarter 0 + q*{d}", q0 * w + (LANE // 8) * d)
    add("quarters permuted", np.concatenate([rng.permutation(8) for _ in range(4)]) * w)
    # padding: 2-D tiles, rows of R bytes plus a pad
    pads = [0, 4, 8, 16] if w <= 4 else ([0, 8, 16] if w == 8 else [0, 16, 32])
    for R in (64, 128, 256):
        for pad in pads:
            if pad % al:
                continue
            per_row = max(1, min(WARP_LANES, R // w))
            add(f"row access R={R} pad={pad}", (LANE // per_row) * (R + pad) + (LANE % per_row) * w)
            add(f"column access R={R} pad={pad}", LANE * (R + pad))
    if w == 16:  # ldmatrix-style rows: lane -> (row lane%16, 16-byte chunk lane/16)
        for R in (32, 64, 128, 256):
            for pad in (0, 16, 32):
                add(f"A-frag rows R={R} pad={pad}", (LANE % 16) * (R + pad) + (LANE // 16) * 16)
                add(f"B-frag rows R={R} pad={pad}",
                    (((LANE >> 4) << 3) + (LANE & 7)) * (R + pad) + ((LANE >> 3) & 1) * 16)
    # swizzled tiles
    swz = [Swizzle(1, 4, 3), Swizzle(2, 4, 3), Swizzle(3, 4, 3), Swizzle(2, 4, 2), Swizzle(3, 4, 4),
           Swizzle(3, 4, -4), Swizzle(2, 2, 3), Swizzle(3, 2, 3), Swizzle(3, 3, 3)]
    for sz in swz:
        if (1 << sz.M) < al:
            continue
        for R in (64, 128, 256):
            if w == 16:
                for kk in (0, 1):
                    add(f"{sz} A-frag R={R} k={kk}", sz((LANE % 16) * R + (LANE // 16 + 2 * kk) * 16))
                    add(f"{sz} B-frag R={R} k={kk}",
                        sz((((LANE >> 4) << 3) + (LANE & 7)) * R + (((LANE >> 3) & 1) + 2 * kk) * 16))
                per_row = R // 16
                add(f"{sz} chunk writes R={R}", sz((LANE // per_row) * R + (LANE % per_row) * 16))
            else:
                per_row = max(1, R // w)
                add(f"{sz} row access R={R}", sz((LANE // per_row) * R + (LANE % per_row) * w))
                add(f"{sz} column access R={R}", sz(LANE * R + 3 * w))
    # seed 001: 64-byte rows, 16-byte atom ^ (row & 3)
    if w == 16:
        row = LANE % 16
        add("atom^(row&3) R=64 A", row * 64 + (((LANE >> 4)) ^ (row & 3)) * 16)
        rowb = ((LANE >> 4) << 3) + (LANE & 7)
        add("atom^(row&3) R=64 B", rowb * 64 + ((((LANE >> 3) & 1)) ^ (rowb & 3)) * 16)
    if w <= 8:  # XOR-swizzled column reads of a 32-wide tile
        add("column, col^row swizzle", LANE * 32 * w + ((5 ^ LANE) % 32) * w)
        add("column, no swizzle", LANE * 32 * w + 5 * w)
    # partially active warps
    if maskable:
        masks = [0x1, 0x80000000, 0x0000FFFF, 0xFFFF0000, 0x55555555, 0xAAAAAAAA, 0x00010001,
                 0x000000FF, 0x0000FF00, 0x0F0F0F0F, 0x11111111, 0x80000001, 0x7FFFFFFF, 0xFF00FF00,
                 int(rng.integers(1, 1 << WARP_LANES)), int(rng.integers(1, 1 << WARP_LANES))]
        pats = {"contiguous": LANE * w, "stride 128": LANE * 128, "lane%8": (LANE % 8) * w,
                "broadcast": np.zeros(WARP_LANES, np.int64), "dup l&~1": (LANE & ~1) * w * 8}
        for m in masks:
            for pname, p in pats.items():
                add(f"mask {m:#010x} {pname}", p, m)
    return round_robin(out)


def case_category(label: str) -> str:
    """The kind of address set a label names (stride, broadcast, duplicate, ... random style)."""
    label = label.split(" | ")[0]
    if label.startswith("random"):
        return label
    for prefix, cat in (("stride", "stride"), ("broadcast", "broadcast"), ("one word", "broadcast"),
                        ("two words", "broadcast"), ("dup", "duplicate"), ("pairs", "duplicate"),
                        ("lane%", "duplicate"), ("upper", "halves"), ("quarter", "halves"), ("mask", "partial warp")):
        if label.startswith(prefix):
            return cat
    if "Swizzle" in label or "swizzle" in label or "atom^" in label:
        return "swizzled tile"
    return "padding"


def round_robin(cases):
    """Interleave the categories, so a run cut short by its time budget still measures each kind."""
    groups: dict = {}
    for c in cases:
        groups.setdefault(case_category(c[0]), []).append(c)
    out, lists = [], list(groups.values())
    for i in range(max((len(g) for g in lists), default=0)):
        out.extend(g[i] for g in lists if i < len(g))
    return out


def random_cases(op: str, rng: np.random.Generator, n: int):
    """``n`` seeded random address sets of varied structure (some with random active masks)."""
    w, al, maskable = _align(op)
    out = []
    styles = ("uniform", "few distinct", "few banks", "affine", "permuted", "dup", "gf2", "rows", "pairs")
    for i in range(n):
        style = styles[i % len(styles)]
        if style == "uniform":
            R = int(rng.choice([128, 256, 512, 1024, 4096, SMEM_BYTES]))
            a = rng.integers(0, max(1, R // al), WARP_LANES) * al
        elif style == "few distinct":
            k = int(rng.integers(1, 9))
            R = int(rng.choice([128, 512, 4096]))
            pool = rng.integers(0, max(1, R // al), k) * al
            a = pool[rng.integers(0, k, WARP_LANES)]
        elif style == "few banks":
            nb = int(rng.integers(1, 9))
            banks = rng.integers(0, NUM_BANKS, nb)
            rows = rng.integers(0, int(rng.integers(1, 9)), WARP_LANES)
            word = rows * NUM_BANKS + banks[rng.integers(0, nb, WARP_LANES)]
            a = word * BANK_BYTES + (rng.integers(0, BANK_BYTES, WARP_LANES) if al < BANK_BYTES else 0)
        elif style == "affine":
            s = int(rng.integers(0, 300 // al + 1)) * al
            s2 = int(rng.integers(0, 600 // al + 1)) * al
            k = int(rng.integers(1, 5))
            x = int(rng.integers(0, WARP_LANES))
            a = int(rng.integers(0, 64)) * al + ((LANE ^ x) % (1 << k)) * s + ((LANE ^ x) >> k) * s2
        elif style == "permuted":
            a = int(rng.integers(0, 64)) * al + rng.permutation(WARP_LANES) * max(al, int(rng.choice([al, 4, 8, 16])))
        elif style == "dup":
            m = int(rng.integers(1, WARP_LANES))
            f = rng.integers(0, int(rng.choice([256, 1024, 4096])) // al, WARP_LANES) * al
            a = f[LANE & ~m]
        elif style == "gf2":  # lane bits -> XOR of random (aligned) basis offsets, as layouts do
            top = int(rng.choice([256, 1024, 4096]))
            basis = rng.integers(0, top // al, LANE_BITS) * al
            basis[rng.random(LANE_BITS) < 0.2] = 0
            a = np.zeros(WARP_LANES, np.int64)
            for b in range(LANE_BITS):
                a ^= ((LANE >> b) & 1) * basis[b]
        elif style == "pairs":  # partners (lane ^ 1 or lane ^ 2) share an address, sometimes but one
            m = int(rng.choice([1, 2, 3, 5, 6, 9]))
            f = rng.integers(0, int(rng.choice([256, 1024, 4096])) // al, WARP_LANES) * al
            a = f[LANE & ~m]
            if rng.random() < 0.3:
                a[int(rng.integers(0, WARP_LANES))] = int(rng.integers(0, 4096 // al)) * al
        else:  # rows: a tile of rows with random pitch, random lanes-per-row
            per_row = int(rng.choice([1, 2, 4, 8, 16, 32]))
            pitch = int(rng.integers(1, 80)) * al
            a = (LANE // per_row) * pitch + (LANE % per_row) * w
        mask = FULL
        if maskable and rng.random() < 0.3:
            if rng.random() < 0.5:
                mask = int(rng.integers(1, 1 << WARP_LANES))
            else:
                lo = int(rng.integers(0, WARP_LANES))
                hi = int(rng.integers(lo + 1, WARP_LANES + 1))
                mask = ((1 << hi) - 1) ^ ((1 << lo) - 1)
        out.append((f"random {style}", _fit(a, al), mask))
    return out


def interleave(first, second):
    out = []
    for i in range(max(len(first), len(second))):
        if i < len(first):
            out.append(first[i])
        if i < len(second):
            out.append(second[i])
    return out


# The probe's source buffer (probe.SRC_BYTES) held 64 KiB before it grew to 4 MiB; random
# cp.async sources stay inside that much of it, so a seed gives the cases it gave before.
LEGACY_SRC_BYTES = 1 << 16


def src_layouts(w: int, rng: np.random.Generator) -> dict:
    """Per-lane global source offsets for cp.async (they decide how L1 groups the lanes)."""
    return {"src lane*16": LANE * 16, "src contiguous": LANE * w, "src lane*128": LANE * 128,
            "src same": np.zeros(WARP_LANES, np.int64), "src permuted": rng.permutation(WARP_LANES) * w,
            "src lane*32": LANE * 32, "src reversed": (31 - LANE) * w}


def _with_src(cases, src):
    return [(label, a, m, np.asarray(src, np.int64)) for label, a, m in cases]


def cp_async_cases(op: str, rng: np.random.Generator, n_random: int):
    """cp.async: a set of destination patterns under every source layout, then random ones."""
    w, al, _ = _align(op)
    dests = [c for c in structured_cases(op, rng)
             if re.match(r"(stride (4|8|16|32|64|128) |broadcast 0x0|dup l&~(1|3|7|8|15|16|24) of "
                         r"(contiguous|permuted|random)|lane%(2|4)$|upper half|mask 0x(0000ffff|55555555|"
                         r"000000ff|0f0f0f0f) (contiguous|stride 128))", c[0] + " ")]
    dests += random_cases(op, rng, 8)
    out = []
    for sname, src in src_layouts(w, rng).items():
        out += [(f"{label} | {sname}", a, m, src) for label, a, m in dests]
    order = rng.permutation(len(out))
    out = [out[i] for i in order]
    rand = random_cases(op, rng, n_random)
    layouts = list(src_layouts(w, rng).items())
    for label, a, m in rand:
        if rng.random() < 0.25:
            sname, src = "src random", rng.integers(0, LEGACY_SRC_BYTES // w, WARP_LANES) * w
        else:
            sname, src = layouts[int(rng.integers(0, len(layouts)))]
        out.append((f"{label} | {sname}", a, m, np.asarray(src, np.int64)))
    return out


def cases_for(op: str, seed: int, n_random: int, structured: bool = True, cp_sources: bool = False):
    """The address sets for one op: (label, addrs, mask, cp.async source offsets)."""
    rng = np.random.default_rng([seed, OPS.index(op)])
    if cp_sources and parse_shared_op(op).kind == "ldgsts":
        return cp_async_cases(op, rng, n_random)
    s = structured_cases(op, rng) if structured else []
    r = random_cases(op, rng, n_random)
    return _with_src(interleave(s, r), LANE * 16)


def write_case_file(path: str, per_op: dict):
    with open(path, "wb") as f:
        f.write(np.uint32(len(per_op)).tobytes())
        for op, cases in per_op.items():
            arr = np.zeros((len(cases), CASE_WORDS), np.uint32)
            for i, (_, a, m, src) in enumerate(cases):
                arr[i, :WARP_LANES] = a
                arr[i, WARP_LANES] = m
                arr[i, WARP_LANES + 1:] = src
            f.write(np.array([OPS.index(op), len(cases)], np.uint32).tobytes())
            f.write(arr.tobytes())
