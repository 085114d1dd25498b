"""Inputs for the integer and f64 mma forms: matrices of raw words by class, and named probes.

Integer classes (s8/u8, s4/u4, b1 inputs; s32 C):

- ``uniform``   every word equally likely (C too)
- ``extreme``   inputs from {min, min+1, -1, 0, 1, max-1, max}, C near MAX_INT32 or MIN_INT32 so
                that c plus the dot product crosses the s32 range about half the time
- ``straddle``  signed forms: the products of k below a split point (8, 16, 24, 32 or 48) all push
                one way, the rest the other way, C near the limit they push toward: a clamp after
                part of k and a clamp at the end give different results (unsigned: as extreme)

b1 forms: ``uniform`` bits, or (``extreme``, ``straddle``) a density per case from all zeros to
all ones with C up to 2K below MAX_INT32, where popc wraps it.

f64 classes:

- ``uniform``    every 64-bit word equally likely (NaN, Inf, subnormals by chance)
- ``normal``     moderate values (exponents in [-30, 30]): rounding of ordinary sums
- ``cancel``     products that cancel in pairs, c = -(their sum) rounded, +-1 ulp
- ``spread``     one top exponent per case, elements up to 60 binades below it, c far above, near
                 or far below the products: which terms are absorbed depends on the order
- ``subnormal``  subnormal inputs and C, products and sums in the subnormal range
- ``special``    NaN (random payloads and signs), +-Inf, +-0, the largest finite, among normal values
- ``overflow``   products near and past 2**1024 with C cancelling part of them (fused or not)
- ``zeros``      every term +-0, or products that cancel exactly, with C = +-0

``probes(form)`` names single-purpose cases (each repeats one dot product in every output).
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.formats import IntFormat, int_to_bits

INT_CLASSES = ("uniform", "extreme", "straddle")
INT_WEIGHTS = (0.4, 0.3, 0.3)
F64_CLASSES = ("uniform", "normal", "cancel", "spread", "subnormal", "special", "overflow", "zeros")
F64_WEIGHTS = (0.08, 0.14, 0.18, 0.2, 0.14, 0.12, 0.08, 0.06)
S32_MIN, S32_MAX = -(1 << 31), (1 << 31) - 1


def is_int(form) -> bool:
    return isinstance(form.fmt("A"), IntFormat)


def classes_of(form) -> tuple[tuple[str, ...], tuple[float, ...]]:
    return (INT_CLASSES, INT_WEIGHTS) if is_int(form) else (F64_CLASSES, F64_WEIGHTS)


def _int_words(v, fmt):
    """Values known to lie in the format's range -> its words (two's complement)."""
    return (v.astype(np.int16) & ((1 << fmt.storage_bits) - 1)).astype(fmt.dtype)


def _s32_words(v):
    return (np.asarray(v, np.int64) & 0xFFFFFFFF).astype(np.uint32)


# ---------------------------------------------------------------------------------------
# integers (values as int16 first -- every 8- and 4-bit value fits -- words at the end)

def _int_values(rng, shape, fmt):
    return rng.integers(fmt.min, fmt.max + 1, size=shape, dtype=np.int16)


def _int_extremes(rng, shape, fmt):
    pool = np.unique(np.clip([fmt.min, fmt.min + 1, -1, 0, 1, fmt.max - 1, fmt.max], fmt.min, fmt.max))
    return pool.astype(np.int16)[rng.integers(0, pool.size, size=shape, dtype=np.uint8)]


def _near_limit(rng, dot, toward_max):
    """C near the limit ``dot`` pushes toward, so that c + dot lands within about |dot| of it,
    over it about half the time."""
    span = np.maximum(np.abs(dot), 1)
    off = (rng.random(dot.shape) * 2 * span).astype(np.int64)
    return np.where(toward_max, S32_MAX - off, S32_MIN + off)


def _dot(A, B):
    """The exact dot products (int64), through float32 matmul: every product of two 8-bit
    integers and every sum of at most 64 of them is below 2**22, exact in float32."""
    return np.matmul(A.astype(np.float32), B.astype(np.float32)).astype(np.int64)


def _int_case(rng, n, form, cls):
    """A, B values (int16) and C values (int64) of one class, for 8- and 4-bit inputs."""
    M, N, K = form.shape
    fa, fb = form.fmt("A"), form.fmt("B")
    if cls == "uniform":
        A, B = _int_values(rng, (n, M, K), fa), _int_values(rng, (n, K, N), fb)
        return A, B, rng.integers(S32_MIN, S32_MAX + 1, size=(n, M, N))
    if cls == "straddle" and (fa.signed or fb.signed):
        # products of k < split all of sign s, the rest of sign -s (s per case); the sign rides
        # on B when B is signed, else on A
        split = rng.choice([x for x in (8, 16, 24, 32, 48) if x < K], size=(n, 1, 1))
        s = np.where(rng.random((n, 1, 1)) < 0.5, 1, -1).astype(np.int16)
        k = np.arange(K)
        amag = rng.integers(max(1, fa.max // 2), fa.max + 1, size=(n, M, K), dtype=np.int16)
        bmag = rng.integers(max(1, fb.max // 2), fb.max + 1, size=(n, K, N), dtype=np.int16)
        if fb.signed:
            A, B = amag, bmag * np.where(k[None, :, None] < split, s, -s)
        else:
            A, B = amag * np.where(k[None, None, :] < split, s, -s), bmag
        head = _dot(np.where(k[None, None, :] < split, A, 0), B)
        return A, B, _near_limit(rng, head, head > 0)
    A, B = _int_extremes(rng, (n, M, K), fa), _int_extremes(rng, (n, K, N), fb)
    dot = _dot(A, B)
    return A, B, _near_limit(rng, dot, dot >= 0)


def _b1_case(rng, n, form, cls):
    """A, B bits (uint8 0/1) and C values (int64): uniform bits, or (extreme, straddle) a density
    per case from all zeros to all ones, C at most 2K below MAX_INT32 (popc only adds)."""
    M, N, K = form.shape
    if cls == "uniform":
        A = rng.integers(0, 2, size=(n, M, K), dtype=np.uint8)
        B = rng.integers(0, 2, size=(n, K, N), dtype=np.uint8)
        return A, B, rng.integers(S32_MIN, S32_MAX + 1, size=(n, M, N))
    dens = np.array([0, 16, 128, 240, 256], np.int16)[rng.integers(0, 5, size=(n, 1, 1))]
    A = (rng.integers(0, 256, size=(n, M, K), dtype=np.uint8) < dens).astype(np.uint8)
    B = (rng.integers(0, 256, size=(n, K, N), dtype=np.uint8) < dens).astype(np.uint8)
    return A, B, S32_MAX - rng.integers(0, 2 * K + 1, size=(n, M, N))


# ---------------------------------------------------------------------------------------
# f64 (words as uint64)

F64_SIGN = np.uint64(1 << 63)


def _f64_from(x):
    return np.ascontiguousarray(x, np.float64).view(np.uint64)


def _f64_values(rng, shape, elo, ehi):
    """Random sign and 52-bit mantissa, unbiased exponent uniform in [elo, ehi] (per element, or
    broadcast); below -1022 subnormal (or zero), above 1023 Inf."""
    man = rng.integers(0, 1 << 52, size=shape, dtype=np.uint64)
    e = rng.integers(0, 1 << 30, size=shape) % (np.asarray(ehi) - np.asarray(elo) + 1) + np.asarray(elo)
    sig = (man | np.uint64(1 << 52)).astype(np.float64)        # exact: 53 bits
    x = np.ldexp(sig, (e - 52).astype(np.int32))                # rounds only below the subnormal grid
    return _f64_from(x) ^ (rng.integers(0, 2, size=shape, dtype=np.uint64) << np.uint64(63))


def f64_specials() -> np.ndarray:
    w = np.array([0, 0x7FF0000000000000, 0x7FF0000000000001, 0x7FF8000000000000, 0x7FFFFFFFFFFFFFFF,
                  0x7FEFFFFFFFFFFFFF, 0x0010000000000000, 0x0000000000000001, 0x000FFFFFFFFFFFFF,
                  0x3FF0000000000000], np.uint64)
    return np.concatenate([w, w | F64_SIGN])


def _f64_case(rng, n, form, cls):
    M, N, K = form.shape
    shapes = ((n, M, K), (n, K, N), (n, M, N))
    if cls == "uniform":
        return tuple(rng.integers(0, 1 << 64, size=s, dtype=np.uint64) for s in shapes)
    if cls == "normal":
        return tuple(_f64_values(rng, s, -30, 30) for s in shapes)
    if cls == "special":
        out = []
        for s in shapes:
            X = _f64_values(rng, s, -30, 30)
            p = np.array([0.03, 0.1, 0.3])[rng.integers(0, 3, size=(n,) + (1,) * (len(s) - 1))]
            hit = rng.random(s) < p
            sp = f64_specials()[rng.integers(0, 20, size=s)]
            nan = (sp & np.uint64(0x7FF0000000000000)) == np.uint64(0x7FF0000000000000)
            payload = rng.integers(1, 1 << 52, size=s, dtype=np.uint64)
            sp = np.where(nan & (sp & np.uint64((1 << 52) - 1) != 0) & (rng.random(s) < 0.5),
                          (sp & ~np.uint64((1 << 52) - 1)) | payload, sp)
            out.append(np.where(hit, sp, X))
        return tuple(out)
    if cls == "subnormal":
        out = []
        for s in shapes:
            sign = rng.integers(0, 2, size=s, dtype=np.uint64) << np.uint64(63)
            sub = rng.integers(1, 1 << 52, size=s, dtype=np.uint64) | sign
            tiny = _f64_values(rng, s, -1074, -1000)
            big = _f64_values(rng, s, -60, 60)
            r = rng.random(s)
            out.append(np.where(r < 0.35, sub, np.where(r < 0.7, tiny, big)))
        return tuple(out)
    if cls == "overflow":
        A = _f64_values(rng, shapes[0], 500, 540)
        B = _f64_values(rng, shapes[1], 470, 524)
        C = _f64_values(rng, shapes[2], 1015, 1023)
        return A, B, C
    if cls == "zeros":
        mode = rng.integers(0, 3, size=(n, 1, 1))
        out = []
        for i, s in enumerate(shapes):
            sign = np.where(mode == 0, 1 if i != 1 else 0, np.where(mode == 2, 0, rng.integers(0, 2, size=s)))
            out.append(np.broadcast_to(sign, s).astype(np.uint64) << np.uint64(63))
        A, B, C = out
        sel = rng.random(n) < 0.33
        if sel.any() and K >= 2:
            v = _f64_values(rng, (int(sel.sum()), M, K // 2), -3, 3)
            A[sel] = np.concatenate([v, v ^ F64_SIGN], axis=2)
            bv = _f64_values(rng, (int(sel.sum()), K // 2, N), -3, 3)
            B[sel] = np.concatenate([bv, bv], axis=1)
        return A, B, C
    if cls == "cancel":
        A = _f64_values(rng, shapes[0], -20, 20)
        B = _f64_values(rng, shapes[1], -20, 20)
        perm = np.argsort(rng.random((n, K)), axis=1)
        npairs = rng.integers(1, K // 2 + 1, size=n) if K >= 2 else np.zeros(n, np.int64)
        for p in range(K // 2):
            use = p < npairs
            k1, k2 = perm[use, 2 * p], perm[use, 2 * p + 1]
            idx = np.flatnonzero(use)
            A[idx, :, k2] = A[idx, :, k1] ^ F64_SIGN
            B[idx, k2, :] = B[idx, k1, :]
        exact = np.matmul(A.view(np.float64), B.view(np.float64))
        C = _f64_from(-exact)
        ok = (C & ~F64_SIGN) != 0
        r = rng.integers(0, 4, size=C.shape)
        C = np.where(ok & (r == 1), C + np.uint64(1), np.where(ok & (r == 2), C - np.uint64(1), C))
        return A, B, C
    if cls == "spread":
        top = rng.integers(-40, 40, size=(n, 1, 1))
        S = rng.choice([4, 12, 30, 53, 60], size=(n, 1, 1))
        out = []
        for s in shapes[:2]:
            u = rng.random(s)
            e = top - (u * u * (S + 1)).astype(np.int64)
            out.append(_f64_values(rng, s, e, e))
        off = rng.choice([-60, -53, -30, -1, 0, 1, 30, 52, 53, 54, 60], size=(n, 1, 1))
        e = np.broadcast_to(2 * top + off, shapes[2])
        C = _f64_values(rng, shapes[2], e, e)
        return out[0], out[1], C
    raise ValueError(f"unknown f64 input class {cls!r}; expected one of {', '.join(F64_CLASSES)}")


def matrices(form, n, rng, classes=None, weights=None):
    """A, B, C words (A (n,M,K), B (n,K,N), C (n,M,N); uint8/uint32 or uint64) and a class tag
    per case (index into ``classes``)."""
    default, dw = classes_of(form)
    classes = default if classes is None else tuple(classes)
    unknown = [c for c in classes if c not in default]
    if unknown:
        raise ValueError(f"unknown input class(es) {', '.join(unknown)}; expected some of {', '.join(default)}")
    w = np.array([dw[default.index(c)] for c in classes] if weights is None else weights, float)
    tags = rng.choice(len(classes), size=n, p=w / w.sum()).astype(np.uint8)
    M, N, K = form.shape
    fa, fb, fc = (form.fmt(op) for op in "ABC")
    A = np.empty((n, M, K), fa.dtype)
    B = np.empty((n, K, N), fb.dtype)
    C = np.empty((n, M, N), fc.dtype)
    for t, name in enumerate(classes):
        sel = np.flatnonzero(tags == t)
        if not sel.size:
            continue
        if fa.name == "b1":
            A[sel], B[sel], c = _b1_case(rng, sel.size, form, name)
            C[sel] = _s32_words(c)
        elif is_int(form):
            a, b, c = _int_case(rng, sel.size, form, name)
            A[sel], B[sel], C[sel] = _int_words(a, fa), _int_words(b, fb), _s32_words(c)
        else:
            A[sel], B[sel], C[sel] = _f64_case(rng, sel.size, form, name)
    return A, B, C, tags


# ---------------------------------------------------------------------------------------
# probes

def _f64_bits(x) -> int:
    return int(np.array([x], np.float64).view(np.uint64)[0])


def _probe(form, a_row, b_col, c):
    """One dot product in every output; a_row, b_col, c as words (padded with zeros)."""
    M, N, K = form.shape
    fa, fb, fc = (form.fmt(op) for op in "ABC")
    a = np.array(list(a_row) + [0] * (K - len(a_row)), np.uint64).astype(fa.dtype)
    b = np.array(list(b_col) + [0] * (K - len(b_col)), np.uint64).astype(fb.dtype)
    A = np.broadcast_to(a, (M, K))
    B = np.broadcast_to(b[:, None], (K, N))
    C = np.full((M, N), c, dtype=fc.dtype)
    return A, B, C


def probes(form) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(name, A, B, C) of the probe cases for an integer or f64 form."""
    M, N, K = form.shape
    P = []

    def add(name, a, b, c):
        P.append((name,) + _probe(form, a, b, c))

    if is_int(form):
        fa, fb = form.fmt("A"), form.fmt("B")
        words = [lambda v, f=f: int(int_to_bits(np.array([v]), f)[0]) for f in (fa, fb)]
        one_a, one_b = words[0](1), words[1](1)
        if fa.name == "b1":
            add("b1: c=MAX_INT32, all bits set (popc K)", [1] * K, [1] * K, S32_MAX)
            add("b1: c=MAX_INT32-K+1, all bits set", [1] * K, [1] * K, S32_MAX - K + 1)
            add("b1: c=-1, a=1, b=0 (popc of AND 0, of XOR 1)", [1], [0], 0xFFFFFFFF)
            return P
        add("wrap: c=MAX_INT32, 1*1", [one_a], [one_b], S32_MAX)
        add("wrap: c=MAX_INT32-1, 1*1 + 1*1", [one_a, one_a], [one_b, one_b], S32_MAX - 1)
        add("wrap: c=MIN_INT32, 0", [], [], 0x80000000)
        if fa.signed or fb.signed:
            neg = (words[0](-1), one_b) if fa.signed else (one_a, words[1](-1))
            add("wrap: c=MIN_INT32, 1*(-1)", [neg[0]], [neg[1]], 0x80000000)
            big_a, big_b = words[0](fa.max), words[1](fb.max)
            nb = words[1](-fb.max) if fb.signed else big_b
            na = big_a if fb.signed else words[0](-fa.max)
            for split in (4, 8, 16, 32):
                if split >= K:
                    continue
                # k < split push up by split*max*max, k >= split pull down by as much: a clamp
                # after k = split (or any block boundary inside) loses what went over MAX.
                s = split * fa.max * fb.max
                c = S32_MAX - s // 2
                a = [big_a] * split + [na] * split
                b = [big_b] * split + [nb] * split
                add(f"satfinite blocks: c=MAX-{s // 2}, +{s} over k<{split}, -{s} over {split}<=k<{2 * split}",
                    a, b, c)
        return P
    one = _f64_bits(1.0)
    t53 = _f64_bits(2.0 ** -53)
    add("f64 order: c=0, 1 + 2^-53 + 2^-53 (+2^-53...): ascending 1, descending or one rounding 1+2^-52",
        [one] + [t53] * (K - 1), [one] * K, 0)
    add("f64 order: c=0, 2^-53 ... + 1 last", [t53] * (K - 1) + [one], [one] * K, 0)
    add("f64 c first: c=1, products 2^-53 each (c first: 1; c last or one rounding: 1 + 2^-52 or more)",
        [t53] * K, [one] * K, one)
    add("f64 fused: c=-1, (1+2^-30)*(1-2^-30) = 1-2^-60 exactly (fma -2^-60, rounded product 0)",
        [_f64_bits(1 + 2.0 ** -30)], [_f64_bits(1 - 2.0 ** -30)], _f64_bits(-1.0))
    add("f64 fused: c=-2^1023, 2^600*2^424 = 2^1024 (fma 2^1023, rounded product Inf)",
        [_f64_bits(2.0 ** 600)], [_f64_bits(2.0 ** 424)], _f64_bits(-(2.0 ** 1023)))
    add("f64 subnormal result: 2^-1000 * 2^-50, c=0", [_f64_bits(2.0 ** -1000)], [_f64_bits(2.0 ** -50)], 0)
    add("f64 subnormal input: 2^-1074 * 2^60, c=0", [1], [_f64_bits(2.0 ** 60)], 0)
    add("f64 subnormal c: c=2^-1074, no products", [], [], 1)
    add("f64 nan: a=0x7FF0000000000123 * 1, c=0", [0x7FF0000000000123], [one], 0)
    add("f64 nan: a=0xFFF8000000000456 * 1, c=0", [0xFFF8000000000456], [one], 0)
    add("f64 nan: c=0x7FF4000000000789, no products", [], [], 0x7FF4000000000789)
    add("f64 nan: Inf * 0, c=0", [0x7FF0000000000000], [0], 0)
    add("f64 nan: Inf*1 + (-Inf)*1", [0x7FF0000000000000, 0xFFF0000000000000], [one, one], 0)
    add("f64 zero: all -0 (a=-0, b=+0, c=-0)", [1 << 63] * K, [0] * K, 1 << 63)
    add("f64 zero: 1*1 + (-1)*1, c=-0", [one, one | (1 << 63)], [one, one], 1 << 63)
    if K >= 8:
        add("f64 blocks: c=0, 1 + 2^-53 at k=4,5,6 (blocks of 4 fused: 1+2^-52)",
            [one, 0, 0, 0, t53, t53, t53], [one] * 7, 0)
    return P
