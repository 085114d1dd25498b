"""Inputs of the wgmma cross-check, seeded and vectorized: the same seed gives the same cases here
and on the GPU machine, so a recording needs to keep D and the seed only.

Every case is one warpgroup's wgmma: a shared-memory image (zeros, with A and B scattered where
fragsim's descriptor map says the instruction reads them -- a wrong map makes the hardware read
zeros or other elements), two random valid descriptors, A's registers (A from registers), C's
registers and scale-d.  Data classes: those of the mma.sync check (gpu_check.table.generate: uniform,
special, subnormal, cancel, spread, zeros) for f16/bf16/tf32, the integer classes of
gpu_check.table.generate_exact for s8/u8, and fp8 classes here (uniform bytes, specials, spreads,
cancellation, c far above the products).

Descriptor fuzz (``kind='fuzz_b'``/``'fuzz_a'``, .f16 forms): the operand under test holds a unique
f16 id in every 2-byte slot of the image (the slot number) and the other operand is one-hot
(A[m, k] = 1 where k = m % 16; B[k, n] = 1 where k = n % 16), so D shows exactly which smem slot
the hardware read for each (row, k) of the operand.
"""

from __future__ import annotations

import numpy as np

from fragsim.layout.descriptor import MatrixDescriptor, operand_addresses
from fragsim.instructions.wgmma import lookup_wgmma
from fragsim.sim.wgmma import pack_wg

from ..table import generate as G
from ..table import generate_exact as X
from .kernels import SMEM_BYTES, Variant

SWIZZLES = ("none", "128B", "64B", "32B")
ATOM = {"none": 128, "32B": 256, "64B": 512, "128B": 1024}


def _footprint_bound(start, lbo, sbo, rows):
    """An upper bound of the bytes any reading of the canonical layout (LBO and SBO in either role)
    can reach: the kernel's zeroed shared memory must hold it."""
    return start + (rows // 8 + 2) * max(lbo, sbo) + 2048


def random_descriptors(rng, n, *, swizzle, major, rows, elem_bits, lo=0, limit=SMEM_BYTES // 2):
    """``n`` valid descriptors (uint64) for an operand of ``rows`` rows, start >= ``lo``, everything
    the layout can reach below ``lo + limit``.  LBO/SBO: the canonical (dense) values half the time,
    else random multiples of 16; start: atom-aligned, or k-step offsets inside the atom, or any
    16-byte step; base offset random for swizzled modes."""
    width = {"none": 16, "32B": 32, "64B": 64, "128B": 128}[swizzle]
    eb = elem_bits // 8
    if major == "K":
        dense_sbo = 8 * max(width, 16) if swizzle != "none" else 128
        dense_lbo = 128 if swizzle == "none" else 16
    else:
        run = width // eb if swizzle != "none" else 16 // eb
        dense_lbo = (8 * width) if swizzle != "none" else 128
        dense_sbo = max(rows // run, 1) * dense_lbo if swizzle != "none" else 128 * 2
    out = np.empty(n, np.uint64)
    span = max(16, (limit - 4096) // (rows // 8 + 2) // 16 * 16)
    for i in range(n):
        while True:
            dense = rng.random() < 0.5
            lbo = dense_lbo if dense else int(rng.integers(0, min(span, 4096) // 16 + 1)) * 16
            sbo = dense_sbo if dense else int(rng.integers(1, min(span, 4096) // 16 + 1)) * 16
            r = rng.random()
            atom = ATOM[swizzle]
            base = lo + int(rng.integers(0, 3)) * atom
            if r < 0.4:
                start = base
            elif r < 0.8:
                start = base + 32 * int(rng.integers(0, max(1, width // 32)))      # k-step advance
            else:
                start = base + 16 * int(rng.integers(0, 64))
            boff = int(rng.integers(0, 8)) if swizzle != "none" and rng.random() < 0.3 else 0
            if _footprint_bound(start - lo, lbo, sbo, rows) <= limit and start < (1 << 18):
                break
        out[i] = MatrixDescriptor(start, lbo, sbo, boff, swizzle).encode()
    return out


def _scatter(img, descs, words, *, rows, k, elem_bits, major):
    """Write element words (n, rows, k) into the images through the model's address map."""
    eb = elem_bits // 8
    uniq, inv = np.unique(descs, return_inverse=True)
    w = words.astype(np.uint32)
    for j, d in enumerate(uniq):
        sel = np.nonzero(inv.reshape(-1) == j)[0]
        addr = np.asarray(operand_addresses(int(d), rows=rows, k=k, elem_bits=elem_bits, major=major), np.int64)
        for b in range(eb):
            img[sel[:, None, None], addr[None] + b] = ((w[sel] >> np.uint32(8 * b)) & np.uint32(0xFF)).astype(np.uint8)


# -- data ------------------------------------------------------------------------------------------------

FP8_CLASSES = ("uniform", "special", "spread", "cancel", "bigc")


def _fp8_words(rng, shape, fmt, elo, ehi):
    return G._values(rng, shape, fmt, elo, ehi)


def _fp8_matrices(f, n, rng):
    M, N, K = f.shape
    fa, fb, fc = f.fmt("A"), f.fmt("B"), f.fmt("C")
    tags = rng.integers(0, len(FP8_CLASSES), size=n).astype(np.uint8)
    A = rng.integers(0, 256, size=(n, M, K), dtype=np.uint8)
    B = rng.integers(0, 256, size=(n, K, N), dtype=np.uint8)
    C = G._values(rng, (n, M, N), fc, -10, 10)
    for t, name in enumerate(FP8_CLASSES):
        sel = np.flatnonzero(tags == t)
        s = sel.size
        if not s:
            continue
        if name == "uniform":
            C[sel] = G._rand_bits(rng, (s, M, N), fc) if fc.name == "f32" else G._values(rng, (s, M, N), fc, -14, 15)
        elif name == "special":
            a = _fp8_words(rng, (s, M, K), fa, -3, 3)
            b = _fp8_words(rng, (s, K, N), fb, -3, 3)
            for X_, fmt in ((a, fa), (b, fb)):
                hit = rng.random(X_.shape) < 0.05
                sp = G.specials(fmt).astype(np.uint8)
                X_[hit] = sp[rng.integers(0, sp.size, size=int(hit.sum()))]
            A[sel], B[sel] = a, b
            c = G._values(rng, (s, M, N), fc, -3, 3)
            hit = rng.random(c.shape) < 0.05
            spc = G.specials(fc)
            c[hit] = spc[rng.integers(0, spc.size, size=int(hit.sum()))]
            C[sel] = c
        elif name == "spread":
            top = rng.integers(-4, 6, size=(s, 1, 1))
            S = rng.choice([3, 8, 14, 20], size=(s, 1, 1))
            for op, shape, fmt in (("A", (s, M, K), fa), ("B", (s, K, N), fb)):
                r = G._u32(rng, shape)
                u = (r >> np.uint32(16)).astype(np.float32) / np.float32(65536)
                e = top - (u * u * (S + 1)).astype(np.int64)
                w = G._from_exp(fmt, r >> np.uint32(31), e, r & np.uint32((1 << fmt.man_bits) - 1))
                if op == "A":
                    A[sel] = w
                else:
                    B[sel] = w
            off = rng.choice([-30, -14, -8, -2, 0, 2, 8, 12, 13, 14, 15, 24, 30], size=(s, 1, 1))
            C[sel] = G._values(rng, (s, M, N), fc, 2 * top + off, 2 * top + off)
        elif name == "cancel":
            a = _fp8_words(rng, (s, M, K // 2), fa, -4, 4)
            b = _fp8_words(rng, (s, K // 2, N), fb, -4, 4)
            perm = rng.permutation(K)
            A[np.ix_(sel, np.arange(M), perm)] = np.concatenate([a, a ^ np.uint8(0x80)], axis=2)
            B[np.ix_(sel, perm, np.arange(N))] = np.concatenate([b, b], axis=1)
            C[sel] = G._values(rng, (s, M, N), fc, -20, 4)
        else:   # bigc: c far above the products, products spread below it
            A[sel] = _fp8_words(rng, (s, M, K), fa, -6, 2)
            B[sel] = _fp8_words(rng, (s, K, N), fb, -6, 2)
            C[sel] = G._values(rng, (s, M, N), fc, 8, 14)
    return A, B, C, tags


def ezero_matrices(f, n, rng):
    """The e_zero probe (f16 accumulators, F = 25): products p1 = 2**-25 (a half-ulp tie of f16's
    subnormal grid) and p2 = 2**-(46 + m%2 + n%2), every other term zero, so E_max is e_zero.  The sum
    rounds up to 2**-24 exactly when p2 survives truncation at 2**(e_zero - 25): e_zero = -20 keeps no
    p2, -21 keeps 2**-46, -22 also 2**-47.  Signs random per case (D then +-2**-24 or 0)."""
    M, N, K = f.shape
    A = np.zeros((n, M, K), np.uint16)
    B = np.zeros((n, K, N), np.uint16)
    sign = (rng.random(n) < 0.5).astype(np.uint16) << np.uint16(15)
    A[:, :, 0] = 0x0C00 | sign[:, None]                      # 2**-12
    A[:, :, 1] = np.where(np.arange(M) % 2 == 0, 0x0002, 0x0001)[None, :] | sign[:, None]   # 2**-23, 2**-24
    B[:, 0, :] = 0x0800                                      # 2**-13
    B[:, 1, :] = np.where(np.arange(N) % 2 == 0, 0x0002, 0x0001)[None, :]
    return A, B


def matrices(f, n, rng):
    """A (n, 64, K), B (n, K, N), C (n, 64, N) words and a class tag per case."""
    fa = f.fmt("A")
    if fa.name in ("e4m3", "e5m2"):
        return _fp8_matrices(f, n, rng)
    if fa.name in ("s8", "u8"):
        return X.matrices(f, n, rng)
    return _float_matrices(f, n, rng)


def _float_matrices(f, n, rng):
    classes = G.MMA_CLASSES
    w = np.array(G.MMA_WEIGHTS, float)
    tags = rng.choice(len(classes), size=n, p=w / w.sum()).astype(np.uint8)
    M, N, K = f.shape
    A = np.empty((n, M, K), f.fmt("A").dtype)
    B = np.empty((n, K, N), f.fmt("B").dtype)
    C = np.empty((n, M, N), f.fmt("C").dtype)
    for t, name in enumerate(classes):
        sel = np.flatnonzero(tags == t)
        if sel.size:
            A[sel], B[sel], C[sel] = G._CLASS_FN[name](rng, sel.size, f)
    fa = f.fmt("A")
    if fa.ignored_low_bits:
        A = G._tf32_garbage(rng, A, fa)
        B = G._tf32_garbage(rng, B, f.fmt("B"))
    return A, B, C, tags


# -- batches ---------------------------------------------------------------------------------------------

def batch(v: Variant, n: int, seed: int, *, swizzle: str, kind: str = "arith") -> dict:
    """Inputs of ``n`` cases of kernel variant ``v`` (see gpu_check/wgmma/kernels.py), and what the
    model needs: kind 'arith' (random data, random descriptors), 'fuzz_b' or 'fuzz_a'."""
    f = lookup_wgmma(v.form)
    M, N, K = f.shape
    rng = np.random.default_rng(seed)
    ebits = f.fmt("A").storage_bits
    major_a = "MN" if v.trans_a else "K"
    major_b = "MN" if v.trans_b else "K"
    half = SMEM_BYTES // 3          # A's region below, B's above (A from shared memory)
    if kind == "fuzz_b":            # A one-hot in registers, B ids everywhere
        assert v.a_src == "reg" and f.types["A"] == "f16"
        A = (np.arange(K)[None, :] == (np.arange(M) % K)[:, None]).astype(np.uint16) * np.uint16(0x3C00)
        A = np.broadcast_to(A, (n, M, K))
        db = random_descriptors(rng, n, swizzle=swizzle, major=major_b, rows=N, elem_bits=ebits, lo=0,
                                limit=SMEM_BYTES)
        da = np.zeros(n, np.uint64)
        img = np.broadcast_to(np.arange(SMEM_BYTES // 2, dtype=np.uint16).view(np.uint8), (n, SMEM_BYTES)).copy()
        C = np.zeros((n, M, N), np.uint32 if f.types["D"] == "f32" else np.uint16)
        sd = np.zeros(n, np.int32)
    elif kind == "fuzz_a":          # B one-hot at a dense no-swizzle K-major layout in the upper half, A ids
        assert v.a_src == "smem" and f.types["A"] == "f16" and N == 16
        dbv = MatrixDescriptor(half, 128, 256, 0, "none")
        db = np.full(n, dbv.encode(), np.uint64)
        da = random_descriptors(rng, n, swizzle=swizzle, major=major_a, rows=M, elem_bits=ebits, lo=0, limit=half)
        img = np.broadcast_to(np.arange(SMEM_BYTES // 2, dtype=np.uint16).view(np.uint8), (n, SMEM_BYTES)).copy()
        img[:, half:] = 0
        Bm = (np.arange(K)[:, None] == (np.arange(N) % K)[None, :]).astype(np.uint16) * np.uint16(0x3C00)
        _scatter(img, db, np.broadcast_to(Bm.T, (n, N, K)), rows=N, k=K, elem_bits=16, major="K")
        A = None
        C = np.zeros((n, M, N), np.uint32 if f.types["D"] == "f32" else np.uint16)
        sd = np.zeros(n, np.int32)
    elif kind == "ezero":           # e_zero of f16 accumulators: see ezero_matrices
        A, Bm = ezero_matrices(f, n, rng)
        C = np.zeros((n, M, N), np.uint16)
        img = np.zeros((n, SMEM_BYTES), np.uint8)
        da = np.zeros(n, np.uint64)
        db = np.full(n, MatrixDescriptor(0, 128, 256, 0, "none").encode(), np.uint64)
        _scatter(img, db, np.swapaxes(Bm, 1, 2), rows=N, k=K, elem_bits=16, major="K")
        sd = (rng.random(n) < 0.5).astype(np.int32)
    else:
        A, Bm, C, _ = matrices(f, n, rng)
        img = np.zeros((n, SMEM_BYTES), np.uint8)
        if v.a_src == "smem":
            da = random_descriptors(rng, n, swizzle=swizzle, major=major_a, rows=M, elem_bits=ebits, lo=0, limit=half)
            _scatter(img, da, A, rows=M, k=K, elem_bits=ebits, major=major_a)
        else:
            da = np.zeros(n, np.uint64)
        lo = half if v.a_src == "smem" else 0
        db = random_descriptors(rng, n, swizzle=swizzle, major=major_b, rows=N, elem_bits=ebits, lo=lo,
                                limit=SMEM_BYTES - lo)
        _scatter(img, db, np.swapaxes(Bm, 1, 2), rows=N, k=K, elem_bits=ebits, major=major_b)
        sd = (rng.random(n) < 0.8).astype(np.int32)
    need = 16
    used = np.nonzero(img.any(axis=0))[0]
    if used.size:
        need = int(used.max()) + 1
    S = min(SMEM_BYTES, -(-need // 1024) * 1024)
    out = {"img": np.ascontiguousarray(img[:, :S]), "desc": np.stack([da, db], axis=1),
           "creg": pack_wg(f, "C", C), "scale_d": sd}
    out["areg"] = pack_wg(f, "A", A) if v.a_src == "reg" else np.zeros((n, 128, 4), np.uint32)
    return out


def model(v: Variant, inp: dict, params=None) -> np.ndarray:
    """fragsim's D registers for a batch (the image zero-extended to the kernel's shared memory)."""
    from fragsim.sim.wgmma import wgmma
    n, S = inp["img"].shape
    smem = np.zeros((n, SMEM_BYTES), np.uint8)
    smem[:, :S] = inp["img"]
    a = inp["areg"] if v.a_src == "reg" else inp["desc"][:, 0]
    return wgmma(v.form, a, inp["desc"][:, 1], inp["creg"], smem=smem, scale_d=inp["scale_d"] != 0,
                 scale_a=v.scale_a, scale_b=v.scale_b, trans_a=v.trans_a, trans_b=v.trans_b,
                 arch=params if params is not None else "sm_90")
