"""Inputs for the GPU cross-check: vectorized, seeded, many cases at once.

mma: each case is one warp's A, B, C, drawn as matrices of raw bit patterns from one of
several classes (``MMA_CLASSES``), then packed to registers through the instruction
table.  The classes aim at the places where tensor-core arithmetic departs from IEEE:

- ``uniform``    uniform random bit patterns (reaches NaN, Inf, subnormals by chance)
- ``special``    moderate values with NaN (random payloads and signs), +-Inf, +-0, extremes
- ``subnormal``  subnormal and near-emin inputs, subnormal or tiny C
- ``cancel``     products that cancel in pairs, and c = -(sum of the rest), +-1 ulp
- ``spread``     wide exponent spreads inside a dot product: where truncation bites
- ``zeros``      all terms +-0 (sign of exact-zero results), exact cancellation to zero

tf32 forms always get garbage in the 13 low bits of half of their A/B words (the tensor
core must ignore it), and their specials include NaN payloads that lie only in those bits.

``mma_probes(form)`` gives named single-purpose cases for the open questions of
reference/tensor-core-arithmetic.md (each case repeats one dot product in all 128 outputs).

Shared memory: each case is a tile of ``TILE_BYTES`` bytes, the 32 lanes' byte offsets
into it, an active-lane mask (plain accesses) and the values stored.  Address classes:
random permutations of aligned rows/slots, random with repeats (loads only), contiguous,
strided, row-major tiles as mma fragments read them, CUTLASS-swizzled tiles, broadcast.
Stores never write the same byte from two lanes (PTX leaves the winner undefined).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fragsim.facts.formats import FloatFormat, from_float, to_float
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions import lookup, parse_shared_op

from . import generate_exact as X
from ..prelude import TILE_BYTES

FULL_WARP = (1 << WARP_LANES) - 1     # the active-lane mask of a whole warp

MMA_CLASSES = ("uniform", "special", "subnormal", "cancel", "spread", "zeros")
MMA_WEIGHTS = (0.20, 0.17, 0.15, 0.20, 0.23, 0.05)


# ---------------------------------------------------------------------------------------
# bit-pattern helpers (uint32 arithmetic throughout: 1M cases must generate in seconds)

def _u32(rng, shape):
    return rng.integers(0, 1 << 32, size=shape, dtype=np.uint32)


def _compose(fmt, sign, expfield, man):
    """Words of ``fmt`` from non-negative fields (as uint32)."""
    w = ((np.asarray(sign, np.uint32) << np.uint32(fmt.sign_shift))
         | (np.asarray(expfield, np.uint32) << np.uint32(fmt.exp_shift))
         | (np.asarray(man, np.uint32) << np.uint32(fmt.ignored_low_bits)))
    return w.astype(fmt.dtype, copy=False)


def _rand_bits(rng, shape, fmt):
    return _u32(rng, shape).astype(fmt.dtype, copy=False)


def _from_exp(fmt, sign, e, man):
    """Value (-1)^sign * 1.man * 2^e encoded in ``fmt``; below emin the significand is
    shifted into a subnormal (or zero), above emax it becomes Inf."""
    top = (1 << fmt.exp_bits) - 1
    field = np.asarray(e, np.int32) + np.int32(fmt.bias)
    man = np.asarray(man, np.uint32)
    sub = field < 1
    if sub.any():
        shift = np.clip(1 - field, 0, 31).astype(np.uint32)
        man = np.where(sub, (man | np.uint32(1 << fmt.man_bits)) >> shift, man)
        field = np.where(sub, 0, field)
    over = field >= top
    if over.any():
        field = np.where(over, top, field)
        man = np.where(over, np.uint32(0), man)
    return _compose(fmt, sign, field.astype(np.uint32), man)


def _values(rng, shape, fmt, elo, ehi):
    """Random sign and mantissa, unbiased exponent uniform in [elo, ehi] (per element,
    or per case where elo/ehi broadcast); below emin gives subnormals, above emax Inf."""
    r = _u32(rng, shape)
    sign = r >> np.uint32(31)
    man = r & np.uint32((1 << fmt.man_bits) - 1)
    span = np.asarray(ehi, np.int64) - np.asarray(elo, np.int64) + 1
    e = np.asarray(elo, np.int64) + ((((r >> np.uint32(8)) & np.uint32(0xFFFF)).astype(np.int64) * span) >> 16)
    return _from_exp(fmt, sign, e, man)


def specials(fmt) -> np.ndarray:
    """The special words of a format: zeros, infinities, NaNs, extremes, +-1."""
    top = (1 << fmt.exp_bits) - 1
    mm = (1 << fmt.man_bits) - 1
    vals = []
    for s in (0, 1):
        vals += [(s, 0, 0), (s, top, 0), (s, top, 1), (s, top, mm), (s, top, 1 << (fmt.man_bits - 1)),
                 (s, top - 1, mm), (s, 1, 0), (s, 0, 1), (s, 0, mm), (s, fmt.bias, 0)]
    arr = np.array(vals, dtype=np.uint32)
    return _compose(fmt, arr[:, 0], arr[:, 1], arr[:, 2])


def _special_fill(rng, count, fmt):
    """``count`` specials; NaN payloads and signs randomized half the time, and for tf32
    some NaNs whose payload lies only in the 13 ignored bits (tf32 sees Inf there)."""
    sp = specials(fmt).astype(np.uint32)
    r = _u32(rng, count)
    out = sp[r % np.uint32(sp.size)]
    top = (1 << fmt.exp_bits) - 1
    e = (out >> np.uint32(fmt.exp_shift)) & np.uint32(top)
    m = (out >> np.uint32(fmt.ignored_low_bits)) & np.uint32((1 << fmt.man_bits) - 1)
    nan = (e == top) & (m != 0) & ((r & np.uint32(1 << 20)) != 0)
    payload = ((r >> np.uint32(8)) & np.uint32((1 << fmt.man_bits) - 1)) | np.uint32(1)
    rand_nan = _compose(fmt, (r >> np.uint32(31)), np.full(count, top, np.uint32), payload).astype(np.uint32)
    out = np.where(nan, rand_nan, out)
    if fmt.ignored_low_bits:
        low = ((r >> np.uint32(4)) & np.uint32((1 << fmt.ignored_low_bits) - 1)) | np.uint32(1)
        low_nan = (np.uint32(top) << np.uint32(fmt.exp_shift)) | ((r >> np.uint32(31)) << np.uint32(31)) | low
        out = np.where((r & np.uint32(0x60000)) == 0, low_nan, out)   # a quarter of them
    return out.astype(fmt.dtype)


def _window(fmt):
    """A moderate exponent window: products and sums of 16 stay finite."""
    return {"f16": (-6, 6), "bf16": (-30, 30), "tf32": (-30, 30), "f32": (-30, 30), "e4m3": (-4, 4),
            "e5m2": (-6, 6)}[fmt.name]


def _zero_words(fmt, sign):
    return (np.asarray(sign, np.uint32) << np.uint32(fmt.sign_shift)).astype(fmt.dtype)


def _mix(rng, shape, dtype, parts):
    """Per element, one of ``parts`` = [(weight, fn(flat_index) -> words)], each fn called
    only on the elements that drew it."""
    w = np.array([p for p, _ in parts], float)
    cum = np.cumsum(w / w.sum())[:-1]
    cat = np.searchsorted(cum, rng.random(shape, dtype=np.float32).ravel())
    out = np.empty(int(np.prod(shape)), dtype)
    for c, (_, fn) in enumerate(parts):
        idx = np.flatnonzero(cat == c)
        if idx.size:
            out[idx] = fn(idx)
    return out.reshape(shape)


# ---------------------------------------------------------------------------------------
# mma classes: each returns A (n,M,K), B (n,K,N), C (n,M,N) bit patterns

def _operands(form, n):
    return tuple((op, (n,) + form.matrix_shape(op)) for op in "ABC")


def _cls_uniform(rng, n, form):
    return tuple(_rand_bits(rng, shape, form.fmt(op)) for op, shape in _operands(form, n))


def _cls_special(rng, n, form):
    out = []
    for op, shape in _operands(form, n):
        fmt = form.fmt(op)
        lo, hi = _window(fmt)
        X = _values(rng, shape, fmt, lo, hi).reshape(-1)
        # Per case a density of specials: 2%, 10% or 30%.
        per = int(np.prod(shape[1:]))
        p = np.array([0.02, 0.1, 0.3], np.float32)[rng.integers(0, 3, size=n)]
        hit = np.flatnonzero(rng.random(X.size, dtype=np.float32) < np.repeat(p, per))
        X[hit] = _special_fill(rng, hit.size, fmt)
        out.append(X.reshape(shape))
    return tuple(out)


def _cls_subnormal(rng, n, form):
    out = []
    for op, shape in _operands(form, n):
        fmt = form.fmt(op)
        mm = (1 << fmt.man_bits) - 1

        def sub(idx, fmt=fmt, mm=mm):
            r = _u32(rng, idx.size)
            return _compose(fmt, r >> np.uint32(31), np.zeros(idx.size, np.uint32),
                            (r % np.uint32(mm)) + np.uint32(1))

        def tiny(idx, fmt=fmt):
            return _values(rng, idx.size, fmt, fmt.emin - fmt.man_bits, fmt.emin + 3)

        if op != "C":      # normal inputs of any size: a subnormal times a big number
            def other(idx, fmt=fmt):
                return _values(rng, idx.size, fmt, fmt.emin, fmt.emax)
        elif fmt.name == "f32":
            def other(idx, fmt=fmt):
                return _values(rng, idx.size, fmt, fmt.emin - 12, fmt.emin + 12)
        else:
            other = tiny

        def zero(idx, fmt=fmt):
            return _zero_words(fmt, rng.integers(0, 2, size=idx.size, dtype=np.uint32))

        out.append(_mix(rng, shape, fmt.dtype, [(0.4, sub), (0.3, tiny), (0.2, other), (0.1, zero)]))
    return tuple(out)


def _to_f64(bits, fmt):
    """Finite words -> float64 (fast paths; tf32's ignored bits are dropped)."""
    if fmt.name == "f16":
        return bits.view(np.float16).astype(np.float64)
    if fmt.name == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if fmt.name == "tf32":
        return (bits & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if fmt.storage_bits == 8:
        return to_float(bits, fmt)
    return bits.view(np.float32).astype(np.float64)


def _from_f64(x, fmt):
    """float64 -> words of C's format (f16 or f32), round to nearest even."""
    if fmt.name == "f16":
        return x.astype(np.float16).view(np.uint16)
    if fmt.name == "f32":
        return x.astype(np.float32).view(np.uint32)
    return from_float(x, fmt)


def _cls_cancel(rng, n, form):
    m, nn, k = form.shape
    fa, fb, fc = form.fmt("A"), form.fmt("B"), form.fmt("C")
    lo, hi = _window(fa)
    A = _values(rng, (n, m, k), fa, lo, hi)
    B = _values(rng, (n, k, nn), fb, lo, hi)
    # Pair up columns of A / rows of B: a[k2] = -a[k1], b[k2] = b[k1], so every product
    # a[i,k1]*b[k1,j] meets its negative.  Pairs straddle the k = 8 block boundary at times.
    perm = np.argsort(rng.random((n, k), dtype=np.float32), axis=1)
    npairs = rng.integers(1, k // 2 + 1, size=n)
    k1, k2 = perm[:, 0::2], perm[:, 1::2]
    use = np.arange(k // 2)[None, :] < npairs[:, None]             # (n, k/2)
    rows = np.arange(n)[:, None]
    sb = fa.dtype(1 << fa.sign_shift)
    ia1 = np.broadcast_to(k1[:, None, :], (n, m, k // 2))
    ia2 = np.broadcast_to(k2[:, None, :], (n, m, k // 2))
    a2 = np.where(use[:, None, :], np.take_along_axis(A, ia1, axis=2) ^ sb, np.take_along_axis(A, ia2, axis=2))
    np.put_along_axis(A, ia2, a2, axis=2)
    B[rows, k2] = np.where(use[:, :, None], B[rows, k1], B[rows, k2])   # (n, k/2, N)
    # c = -(sum of the products), rounded to C's format, then half the time nudged by
    # -1 or +1 ulp (finite nonzero words only).
    C = _from_f64(-np.matmul(_to_f64(A, fa), _to_f64(B, fb)), fc)
    mag = C & fc.dtype((1 << fc.sign_shift) - 1)
    ok = (mag != 0) & (mag < fc.dtype(((1 << fc.exp_bits) - 1) << fc.exp_shift))
    r = rng.integers(0, 4, size=C.shape, dtype=np.uint8)
    C = np.where(ok & (r == 1), C + fc.dtype(1), np.where(ok & (r == 2), C - fc.dtype(1), C))
    return A, B, C


def _cls_spread(rng, n, form):
    m, nn, k = form.shape
    fa = form.fmt("A")
    # One top exponent per case; each element sits 0..S binades below it (most near the
    # top), S per case.
    lo, hi = (-4, 8) if fa.name == "f16" else (-60, 60)
    top = rng.integers(lo, hi, size=(n, 1, 1))
    S = rng.choice([4, 12, 24, 30, 40, 60], size=(n, 1, 1))
    out = []
    for op, shape in _operands(form, n)[:2]:
        fmt = form.fmt(op)
        r = _u32(rng, shape)
        u = (r >> np.uint32(16)).astype(np.float32) * np.float32(1.0 / 65536)
        e = top - (u * u * (S + 1)).astype(np.int64)
        out.append(_from_exp(fmt, r >> np.uint32(31), e, r & np.uint32((1 << fmt.man_bits) - 1)))
    fc = form.fmt("C")
    # C: far above the products (2^23-style), near the top product, or far below.
    off = rng.choice([-40, -24, -12, -3, 0, 1, 3, 12, 23, 24, 25, 26, 40], size=(n, 1, 1))
    shape = (n, m, nn)
    r = _u32(rng, shape)
    cman = np.where((r & np.uint32(0x100)) != 0, np.uint32(0), (r >> np.uint32(9)) & np.uint32((1 << fc.man_bits) - 1))
    C = _from_exp(fc, r >> np.uint32(31), np.broadcast_to(2 * top + off, shape), cman)
    return out[0], out[1], C


def _cls_zeros(rng, n, form):
    """Every term +-0 (all -0, all +0, or random signs, per case), or a third of the
    time nonzero A/B whose products cancel exactly, with C = +-0."""
    m, nn, k = form.shape
    out = []
    mode = rng.integers(0, 3, size=(n, 1, 1))   # 0: all -0, 1: random signs, 2: all +0
    for op, shape in _operands(form, n):
        fmt = form.fmt(op)
        sign = np.where(mode == 0, 1, np.where(mode == 2, 0, rng.integers(0, 2, size=shape)))
        if op == "B":
            sign = np.where(mode == 0, 0, sign)       # (-0) * (+0) = -0 products
        out.append(_zero_words(fmt, np.broadcast_to(sign, shape)))
    A, B, C = out
    sel = rng.random(n) < 0.33
    if sel.any():
        ns = int(sel.sum())
        fa, fb = form.fmt("A"), form.fmt("B")
        vals = _values(rng, (ns, m, k // 2), fa, -3, 3)
        A[sel] = np.concatenate([vals, vals ^ fa.dtype(1 << fa.sign_shift)], axis=2)
        bv = _values(rng, (ns, k // 2, nn), fb, -3, 3)
        B[sel] = np.concatenate([bv, bv], axis=1)
    return A, B, C


_CLASS_FN = {"uniform": _cls_uniform, "special": _cls_special, "subnormal": _cls_subnormal,
             "cancel": _cls_cancel, "spread": _cls_spread, "zeros": _cls_zeros}


def _tf32_garbage(rng, X, fmt):
    """Random bits in the ignored low bits of half the words."""
    if not fmt.ignored_low_bits:
        return X
    r = _u32(rng, X.shape)
    low = np.where((r & np.uint32(1 << 31)) != 0, r & np.uint32((1 << fmt.ignored_low_bits) - 1), np.uint32(0))
    return X | low


def _exact(form) -> bool:
    """Integer and f64 forms: their classes and probes are ``generate_exact``'s."""
    fa = form.fmt("A")
    return not isinstance(fa, FloatFormat) or fa.name == "f64"


def mma_classes(form) -> tuple[str, ...]:
    """The input classes of a form (``MMA_CLASSES``, or those of ``generate_exact``)."""
    form = lookup(form)
    return X.classes_of(form)[0] if _exact(form) else MMA_CLASSES


def mma_matrices(form, n, rng, classes=None, weights=None):
    """A, B, C matrices (bit patterns) and a class tag per case (index into ``classes``; default:
    every class of the form)."""
    form = lookup(form)
    if _exact(form):
        return X.matrices(form, n, rng, classes, weights)
    classes = MMA_CLASSES if classes is None else tuple(classes)
    unknown = [c for c in classes if c not in _CLASS_FN]
    if unknown:
        raise ValueError(f"unknown input class(es) {', '.join(unknown)}; expected some of {', '.join(MMA_CLASSES)}")
    if weights is None:
        w = np.array([MMA_WEIGHTS[MMA_CLASSES.index(c)] for c in classes], float)
    else:
        w = np.asarray(weights, float)
    tags = rng.choice(len(classes), size=n, p=w / w.sum()).astype(np.uint8)
    A, B, C = (np.empty((n,) + form.matrix_shape(op), form.fmt(op).dtype) for op in "ABC")
    # a form of several products per warp (m8n8k4 .f16): each case is ``groups`` cases of one product
    # of its class, stacked by rows
    g, one = form.groups, replace(form, groups=1)
    for t, name in enumerate(classes):
        sel = np.flatnonzero(tags == t)
        if sel.size:
            a, b, c = _CLASS_FN[name](rng, sel.size * g, one)
            A[sel], B[sel], C[sel] = (x.reshape((sel.size,) + X.shape[1:]) for x, X in ((a, A), (b, B), (c, C)))
    fa = form.fmt("A")
    if fa.ignored_low_bits:
        A = _tf32_garbage(rng, A, fa)
        B = _tf32_garbage(rng, B, form.fmt("B"))
    return A, B, C, tags


def _flat_index(form, op):
    rows, cols = form.coords(op)
    return (rows * form.matrix_shape(op)[1] + cols).reshape(-1)


def pack_fast(form, op, mat) -> np.ndarray:
    """``fragsim.pack`` as one gather (same result; tested against it): the elements in register
    order, then the bytes of little-endian words (elements lowest first, f64 low word first)."""
    form = lookup(form)
    n = mat.shape[0]
    fmt = form.fmt(op)
    idx = _flat_index(form, op)
    if form.words_per_elem(op) > 1:
        idx = idx[::form.words_per_elem(op)]
    g = np.take(np.ascontiguousarray(mat).reshape(n, -1), idx, axis=1)
    shape = (n, WARP_LANES, form.nregs(op))
    bits = fmt.storage_bits
    if bits == 64:
        return np.ascontiguousarray(g.astype("<u8")).view("<u4").astype(np.uint32).reshape(shape)
    if bits == 32:
        return g.astype(np.uint32).reshape(shape)
    if bits == 16:
        return np.ascontiguousarray(g.astype("<u2")).view("<u4").astype(np.uint32).reshape(shape)
    if bits == 1:
        g = np.packbits(g.astype(np.uint8).reshape(n, -1, 8), axis=-1, bitorder="little").reshape(n, -1)
    elif bits == 4:
        g = g.astype(np.uint8).reshape(n, -1, 2)
        g = g[..., 0] | (g[..., 1] << np.uint8(4))
    return np.ascontiguousarray(g.astype(np.uint8)).view("<u4").astype(np.uint32).reshape(shape)


def mma_inputs(form, n, rng, classes=None, weights=None) -> dict:
    """Registers for ``n`` cases: {'a','b','c': uint32 (n,32,nregs), 'tag': uint8 (n,),
    'tag_names': classes (default: every class of the form)}."""
    form = lookup(form)
    classes = mma_classes(form) if classes is None else tuple(classes)
    A, B, C, tags = mma_matrices(form, n, rng, classes, weights)
    return {"a": pack_fast(form, "A", A), "b": pack_fast(form, "B", B), "c": pack_fast(form, "C", C),
            "tag": tags, "tag_names": list(classes)}


# ---------------------------------------------------------------------------------------
# probes: named cases for the open questions of the arithmetic reference

def _bits(fmt, x):
    return int(from_float(np.array([x], float), fmt)[0])


def _probe_case(form, a_row, b_col, c_val, *, a_bits=None, b_bits=None, c_bits=None):
    """One dot product repeated in every output: all rows of A equal, all columns of B equal."""
    m, nn, k = form.shape
    fa, fb, fc = form.fmt("A"), form.fmt("B"), form.fmt("C")
    if a_bits is None:
        a_bits = [_bits(fa, x) for x in a_row] + [0] * (k - len(a_row))
    if b_bits is None:
        b_bits = [_bits(fb, x) for x in b_col] + [0] * (k - len(b_col))
    if c_bits is None:
        c_bits = _bits(fc, c_val)
    A = np.broadcast_to(np.array(a_bits, np.uint64).astype(fa.dtype), (m, k))
    B = np.broadcast_to(np.array(b_bits, np.uint64).astype(fb.dtype)[:, None], (k, nn))
    C = np.full((m, nn), c_bits, dtype=fc.dtype)
    return A, B, C


def mma_probes(form) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(name, A, B, C) matrices of the probe cases that make sense for ``form``."""
    form = lookup(form)
    if _exact(form):
        return X.probes(form)
    if form.fmt("A").storage_bits == 8:
        return _fp8_probes(form)
    if form.groups > 1:
        return _m884_probes(form)
    m, nn, k = form.shape
    fa, fc = form.fmt("A"), form.fmt("C")
    P = []

    def add(name, *args, **kw):
        A, B, C = _probe_case(form, *args, **kw)
        P.append((name, A, B, C))

    nz, pz = 0x8000 if fa.storage_bits == 16 else 0x80000000, 0
    cnz = (1 << fc.sign_shift)
    # Sign of exact-zero results.
    add("zero: all terms -0 (a=-0, b=+0, c=-0)", None, None, None,
        a_bits=[nz] * k, b_bits=[pz] * k, c_bits=cnz)
    add("zero: products -0, c=+0", None, None, None, a_bits=[nz] * k, b_bits=[pz] * k, c_bits=0)
    add("zero: products +0, c=-0", None, None, None, a_bits=[pz] * k, b_bits=[pz] * k, c_bits=cnz)
    add("zero: 1*1 + (-1)*1, c=-0", [1.0, -1.0], [1.0, 1.0], None, c_bits=cnz)
    add("zero: 1*1 + (-1)*1, c=+0", [1.0, -1.0], [1.0, 1.0], 0.0)
    add("zero: c=1, 1*(-1), rest -0", None, None, 1.0,
        a_bits=[_bits(fa, 1.0)] + [nz] * (k - 1), b_bits=[_bits(fa, -1.0)] + [pz] * (k - 1))
    if k == 16:
        # sm_80: block 1 (k<8) gives -0, block 2 (k>=8) holds +0 products.
        add("zero: -0 products in k<8, +0 products in k>=8, c=-0", None, None, None,
            a_bits=[nz] * 8 + [pz] * 8, b_bits=[pz] * 16, c_bits=cnz)
        add("zero: +0 products in k<8, -0 products in k>=8, c=-0", None, None, None,
            a_bits=[pz] * 8 + [nz] * 8, b_bits=[pz] * 16, c_bits=cnz)
    # Worked examples of the reference (f16/bf16 in; tf32 for the third).
    if fc.name == "f32":
        add("example: c=2^23, a=[-2^13,-.5,-.25,-.125], b=[2^10,1,1,1]",
            [-2.0 ** 13, -0.5, -0.25, -0.125], [2.0 ** 10, 1, 1, 1], 2.0 ** 23)
        if k == 16:
            a = [-2.0 ** 13] + [0] * 7 + [-0.5, -0.25, -0.125]
            b = [2.0 ** 10] + [0] * 7 + [1, 1, 1]
            add("example: same, small products at k=8,9,10", a, b, 2.0 ** 23)
        add("example: c=1, a=[1,2^-12], b=[1,-2^-13]", [1.0, 2.0 ** -12], [1.0, -2.0 ** -13], 1.0)
    # tf32: NaN payload only in the 13 ignored bits (tf32 sees Inf), garbage in low bits.
    if fa.ignored_low_bits:
        one = _bits(fa, 1.0)
        for w in (0x7F800001, 0xFF800001, 0x7F801FFF):
            add(f"tf32: a={w:#010x} (NaN as f32, Inf as tf32) * 1, c=0", None, None, 0.0,
                a_bits=[w] + [0] * (k - 1), b_bits=[one] + [0] * (k - 1))
        add("tf32: a=0x7F800001 * 0, c=0 (Inf*0 if truncated)", None, None, 0.0,
            a_bits=[0x7F800001] + [0] * (k - 1), b_bits=[0] * k)
        add("tf32: a=0x7F800001 * 1 + (-Inf)*1 (Inf-Inf if truncated)", None, None, 0.0,
            a_bits=[0x7F800001, 0xFF800000] + [0] * (k - 2), b_bits=[one, one] + [0] * (k - 2))
        add("tf32: a=0x3F801FFF (1 + garbage) * 1, c=0", None, None, 0.0,
            a_bits=[0x3F801FFF] + [0] * (k - 1), b_bits=[one] + [0] * (k - 1))
        add("tf32: a=0x7FC00000 (NaN) * 1, c=0 (canonical NaN?)", None, None, 0.0,
            a_bits=[0x7FC00001] + [0] * (k - 1), b_bits=[one] + [0] * (k - 1))
    else:
        w = 0x7E01 if fa.name == "f16" else 0x7F81
        add(f"nan: a={w:#06x} (NaN, payload) * 1, c=0 (canonical NaN?)", None, None, 0.0,
            a_bits=[w] + [0] * (k - 1), b_bits=[_bits(fa, 1.0)] + [0] * (k - 1))
    # f16 accumulator, c = +0, products below 2^-20: where does the zero c sit (e_zero)?
    # Sum = 2^-25 (half the smallest f16 subnormal: a tie) + 2^-j.  If 2^-j survives the
    # truncation the result rounds up to 0x0001, else the tie goes to even, 0x0000.
    # The largest j that rounds up gives the truncation point, E_max - F.
    if fc.name == "f16" and fa.name == "f16":
        for j in range(38, 49):
            # 2^-j = 2^-ja * 2^-jb with both factors representable in f16 (>= 2^-24).
            ja = min(24, j - 13)
            jb = j - ja
            add(f"e_zero f16: c=+0, 2^-12*2^-13 + 2^-{ja}*2^-{jb} (=2^-25 + 2^-{j})",
                [2.0 ** -12, 2.0 ** -ja], [2.0 ** -13, 2.0 ** -jb], 0.0)
        # Same with c = -0 (the zero's sign must not matter for the alignment).
        add("e_zero f16: c=-0, 2^-25 + 2^-44", [2.0 ** -12, 2.0 ** -20], [2.0 ** -13, 2.0 ** -24],
            None, c_bits=0x8000)
        # f16 subnormal C with tiny products: c = 2^-24 (0x0001), + 2^-25 is a tie
        # (1.5 units -> 2 = 0x0002 by ties-to-even); a further -2^-j, if it survives
        # truncation, pulls the sum below the tie -> 0x0001.
        for j in range(34, 49):
            ja = min(24, j - 13)
            jb = j - ja
            add(f"subnormal C f16: c=0x0001, 2^-25 - 2^-{j}",
                [2.0 ** -12, -(2.0 ** -ja)], [2.0 ** -13, 2.0 ** -jb], None, c_bits=0x0001)
        add("subnormal C f16: c=0x0003, products 2^-26 each x4", [2.0 ** -13] * 4, [2.0 ** -13] * 4,
            None, c_bits=0x0003)
    if fc.name == "f32" and fa.name == "bf16":
        # f32 accumulator, c = +0, products below 2^-133 (bf16 only reaches there):
        # 2^-140 - 2^-j rounds toward zero to one ulp (2^-149) below 2^-140 if 2^-j
        # survives the truncation, else stays 2^-140.
        for j in range(150, 167):
            add(f"e_zero f32: c=+0, 2^-70*2^-70 - 2^-{j - 75}*2^-75 (=2^-140 - 2^-{j})",
                [2.0 ** -70, -(2.0 ** -(j - 75))], [2.0 ** -70, 2.0 ** -75], 0.0)
    # Fractional bits kept (F): 1 - 2^-j, from products 1*1 and -2^-12*2^-(j-12), c = +0.
    # f32 out (round toward zero): 0x3F7FFFFF if 2^-j survives, 0x3F800000 if not.
    # f16 out (to nearest even): 1 - 2^-12 is a tie that goes to 1.0 (0x3C00); a further
    # -2^-j (j > 12), if kept, pulls it below the tie -> 0x3BFF.
    for j in range(20, 31):
        if fc.name == "f32":
            add(f"F: c=+0, 1*1 - 2^-12*2^-{j - 12} (=1 - 2^-{j})",
                [1.0, -(2.0 ** -12)], [1.0, 2.0 ** -(j - 12)], 0.0)
        else:
            add(f"F: c=+0, 1*1 - 2^-12*1 - 2^-12*2^-{j - 12} (=1 - 2^-12 - 2^-{j})",
                [1.0, -(2.0 ** -12), -(2.0 ** -12)], [1.0, 1.0, 2.0 ** -(j - 12)], 0.0)
    return P


def _fp8_probes(form):
    """Cases that separate the candidate models of fp8 mma (f16 halves k%4<2 / k%4>=2 and C added
    last on sm_90; one block of all K; k < K/2 first; C inside the dot product; MMA-Sim's Ada model)."""
    P = []
    k = form.shape[2]

    def add(name, a, b, c):
        a = list(a) + [0.0] * (k - len(a))
        b = list(b) + [0.0] * (k - len(b))
        P.append((name,) + _probe_case(form, a, b, c))

    add("fp8 split: c=0, 2^16 (k=0) - 2^16 (k=1) + 2^-17 (k=2): k%4<2 cancel alone, 2^-17 kept; "
        "one block truncates it", [256.0, -256.0, 2.0 ** -8], [256.0, 256.0, 2.0 ** -9], 0.0)
    h = k // 2
    add(f"fp8 split: c=0, 2^16 (k=0) + 2^-17 (k=4) - 2^16 (k={h}): k < {h} first would truncate 2^-17",
        [256.0, 0, 0, 0, 2.0 ** -8] + [0.0] * (h - 5) + [-256.0], [256.0, 0, 0, 0, 2.0 ** -9] + [0.0] * (h - 5) + [256.0],
        0.0)
    add("fp8 C last: c=2^11 (f16) / 2^24 (f32), 1+1+1 (k=0,1,4): one rounding of c+3 to nearest",
        [1.0, 1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0, 1.0], 2.0 ** (11 if form.types["C"] == "f16" else 24))
    add("fp8 F: c=0, 2^-6*2^-6 at k=0, -(2^-9*2^-9)... F bits below 2^-12 at k=1", [2.0 ** -6, -(2.0 ** -9)],
        [2.0 ** -6, 2.0 ** -9], 0.0)
    fa = form.fmt("A")
    big = 448.0 if fa.name == "e4m3" else 57344.0
    add(f"fp8 range: c=0, {big:g}*{big:g} (f16 D overflows in the first HMMA)", [big], [big if form.fmt("B").name ==
                                                                                         fa.name else 1.0], 0.0)
    return P


def _m884_probes(form):
    """Cases that separate the orders of the binary32 tree of m8n8k4 .f16 (repeated in each quad pair)."""
    P = []
    one = replace(form, groups=1)
    g = form.groups

    def add(name, a, b, c):
        A, B, C = _probe_case(one, a, b, c)
        P.append((name,) + tuple(np.concatenate([x] * g) for x in (A, B, C)))

    e = 2.0 ** -24
    add("m884 order: c=0, 1 + 2^-24*1 + 2^-24*1 + 2^-24*1 (ascending: 1; other trees more)",
        [1.0, e, e, e], [1.0, 1.0, 1.0, 1.0], 0.0)
    add("m884 order: c=0, 2^-24 x3 then 1 at k=3", [e, e, e, 1.0], [1.0, 1.0, 1.0, 1.0], 0.0)
    add("m884 c last: c=1, products 2^-24 at k=0..3", [e] * 4, [1.0] * 4, 1.0)
    add("m884 zero: c=-0, products -0", [-0.0] * 4, [0.0] * 4, -0.0)
    return P


def probe_inputs(form) -> dict:
    """The probes as registers, with their names as tags."""
    form = lookup(form)
    P = mma_probes(form)
    A = np.stack([p[1] for p in P])
    B = np.stack([p[2] for p in P])
    C = np.stack([p[3] for p in P])
    return {"a": pack_fast(form, "A", A), "b": pack_fast(form, "B", B), "c": pack_fast(form, "C", C),
            "tag": np.arange(len(P), dtype=np.uint8), "tag_names": ["probe: " + p[0] for p in P]}


# ---------------------------------------------------------------------------------------
# shared memory

ADDR_CLASSES = ("perm", "random", "contig", "strided", "rowmajor", "swizzle", "broadcast")
STORE_CLASSES = ("perm", "contig", "strided", "rowmajor", "swizzle")


def _slot_addrs(rng, n, cls, unit, nslots, lanes=WARP_LANES):
    """(n, lanes) slot indices for one address class; a slot is ``unit`` bytes."""
    lane = np.arange(lanes)[None, :]
    if cls == "perm":
        return np.argsort(rng.random((n, nslots)), axis=1)[:, :lanes]
    if cls == "random":
        return rng.integers(0, nslots, size=(n, lanes))
    if cls == "contig":
        base = rng.integers(0, nslots - lanes + 1, size=(n, 1))
        return base + lane
    if cls == "strided":
        # Odd strides keep 32 lanes distinct in a power-of-two number of slots.
        s = rng.choice([1, 3, 5, 7, 9, 15, 17, 31, 33], size=(n, 1))
        base = rng.integers(0, nslots, size=(n, 1))
        return (base + lane * s) % nslots
    if cls == "broadcast":
        return np.broadcast_to(rng.integers(0, nslots, size=(n, 1)), (n, lanes)).copy()
    if cls == "rowmajor":
        # A row-major tile of R rows x W bytes; lane l takes row l % 16, column chunk l // 16
        # (the ldmatrix.x4 addressing of an mma A fragment), in units of ``unit``.
        W = rng.choice([32, 64, 128], size=(n, 1))
        per_row = W // unit
        r = lane % 16
        ch = lane // 16
        off = rng.integers(0, 4, size=(n, 1))
        return (r * per_row + (ch + off) % per_row) % nslots
    if cls == "swizzle":
        # CUTLASS Swizzle<3,4,3> over 128-byte rows: 16-byte chunk c of row r sits at
        # chunk c ^ (r % 8).  Lane l reads row l % 8 (+ 8 * (l // 8) for more matrices),
        # logical chunk given per case; smaller units index inside the chunk.
        r = lane % 8 + 8 * (lane // 8) * rng.integers(0, 2, size=(n, 1))
        c = np.broadcast_to(rng.integers(0, 8, size=(n, 1)), (n, lanes))
        byte = (r % 8) * 128 + ((c ^ (r % 8)) * 16)
        byte = byte + (r // 8) * 1024
        inner = (lane * unit) % 16 if unit < 16 else 0
        return ((byte + inner) // unit) % nslots
    raise ValueError(f"unknown address class {cls!r}")


def _distinct(slots):
    s = np.sort(slots, axis=1)
    return (np.diff(s, axis=1) != 0).all(axis=1)


def shared_inputs(op, n, rng, classes=None, tiles=64, mask_prob=0.3) -> dict:
    """Inputs of ``n`` cases of a shared-memory op.

    Returns {'tiles': (G, TILE) u8, 'tile_idx': (n,) u16, 'addrs': (n, 32) u32,
    'mask': (n,) u32, 'tag', 'tag_names'} plus 'regs' (stmatrix, (n,32,num)),
    'vals' (st.shared, (n,32,nregs): one element per register) or 'src' (cp.async, (n,32,16) u8).
    """
    op = parse_shared_op(op)
    store = op.is_store
    if classes is None:
        classes = STORE_CLASSES if store else ADDR_CLASSES
    classes = tuple(classes)
    unit = op.bytes_per_addr
    nslots = TILE_BYTES // unit
    tags = rng.integers(0, len(classes), size=n).astype(np.uint8)
    slots = np.zeros((n, WARP_LANES), np.int64)
    for t, cls in enumerate(classes):
        sel = np.flatnonzero(tags == t)
        if sel.size:
            slots[sel] = _slot_addrs(rng, sel.size, cls, unit, nslots)
    active = op.address_lanes
    if store:
        # Redraw any case whose active lanes collide (a rowmajor/swizzle set can repeat).
        bad = ~_distinct(slots[:, :active])
        if bad.any():
            slots[bad] = _slot_addrs(rng, int(bad.sum()), "perm", unit, nslots)
    if active < WARP_LANES:
        # Lanes whose addresses ldmatrix/stmatrix ignore: random aligned rows.
        slots[:, active:] = rng.integers(0, nslots, size=(n, WARP_LANES - active))
    addrs = (slots * unit).astype(np.uint32)
    G = max(1, min(tiles, n))
    out = {"tiles": rng.integers(0, 256, size=(G, TILE_BYTES), dtype=np.uint8),
           "tile_idx": rng.integers(0, G, size=n).astype(np.uint16),
           "addrs": addrs, "tag": tags, "tag_names": list(classes)}
    if op.kind in ("ld", "st", "ldgsts"):
        mask = np.full(n, FULL_WARP, np.uint64)
        part = rng.random(n) < mask_prob
        mask[part] = rng.integers(0, 1 << WARP_LANES, size=int(part.sum()), dtype=np.uint64)
        out["mask"] = mask.astype(np.uint32)
    else:
        out["mask"] = np.full(n, FULL_WARP, np.uint32)
    if op.kind == "stsm":
        out["regs"] = rng.integers(0, 1 << 32, size=(n, WARP_LANES, op.num), dtype=np.uint64).astype(np.uint32)
    elif op.kind == "st":
        hi = 1 << (8 * op.element_bytes)
        out["vals"] = rng.integers(0, hi, size=(n, WARP_LANES, op.nregs), dtype=np.uint64).astype(np.uint32)
    elif op.kind == "ldgsts":
        out["src"] = rng.integers(0, 256, size=(n, WARP_LANES, 16), dtype=np.uint8)
    return out


def store_bytes(op, vals: np.ndarray) -> np.ndarray:
    """The bytes each lane of an st.shared stores: ``vals`` (..., 32, nregs) u32, one element of
    ``op.element_bytes`` per register -> u8 (..., 32, bytes_per_addr)."""
    b = np.ascontiguousarray(vals, dtype="<u4").view(np.uint8).reshape(vals.shape + (4,))
    return b[..., :op.element_bytes].reshape(vals.shape[:-1] + (op.bytes_per_addr,))


def overlap_store_probes(op, rng, n=5) -> dict:
    """Stores where lanes write the same bytes (undefined in PTX): who wins on hardware?"""
    op = parse_shared_op(op)
    inp = shared_inputs(op, n, rng, classes=("perm",), mask_prob=0.0)
    unit = op.bytes_per_addr
    a = inp["addrs"].astype(np.int64)
    a[0, :] = a[0, 0]                               # all lanes, one address
    a[1, 1::2] = a[1, 0::2]                         # lane pairs (2i, 2i+1)
    a[2, WARP_LANES // 2:] = a[2, :WARP_LANES // 2]   # lane l and l+16
    a[3, :] = a[3, :] - a[3, :] % max(unit, 16)     # lanes sharing a 16-byte row
    inp["addrs"] = a.astype(np.uint32)
    inp["tag"] = np.minimum(np.arange(n), 4).astype(np.uint8)
    inp["tag_names"] = ["overlap: all lanes one address", "overlap: lanes 2i and 2i+1",
                        "overlap: lanes l and l+16", "overlap: 16-byte rows", "overlap: none"]
    return inp
