"""numba kernels: the truncated fused dot-product-add of every mma output, from raw registers.

One arithmetic over runtime parameters (``make_params``: from an ``ArchParams`` row and the
form), so every form and architecture shares one compiled kernel.  This module imports
numba; ``fragsim.mma`` imports it lazily on first use.

Why float64 is exact here: every input value (f16, bf16, tf32, f32) and every product of two
inputs is exact in float64, and so is scaling by the power of two 2**(F - E).  A term
aligned to E_max and truncated toward zero is ``trunc(a * b * 2**(F - E))``, an integer
below 2**(F + 2); a block sum of at most 65 of them stays far below 2**53, so the float64
sum is the exact integer S, in any order.  IEEE arithmetic then gives the special-value
rules for free: Inf * 0 = NaN, Inf - Inf = NaN, NaN propagates, Inf absorbs finite terms;
and the sign of an exact zero sum (-0 only when every term is -0).

E_max uses the model's nominal exponents: e_a + e_b for a product (never renormalised),
with e = max(floor(log2|x|), emin of the input format).  Each element carries its "hat"
2**e beside its value, so a product's 2**(e_a + e_b) is hat_a * hat_b and E_max is a
float max; 2**(F - E) is then one integer subtraction on the bits.

Vectorised over the 8 columns of an output row (all forms are n8): ``fragsim.arith.simd``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fragsim.facts.hardware import WARP_LANES
from .simd import (f8_add, f8_bcast, f8_bits, f8_eq, f8_from_bits, f8_from_f16, f8_from_f32,
                   f8_load, f8_lt, f8_max, f8_mul, f8_roundeven, f8_splat, f8_store, f8_to_i8,
                   f8_trunc, f8_where, i8_add, i8_and, i8_any, i8_eq, i8_gather, i8_load,
                   i8_lt, i8_max, i8_min, i8_ne, i8_or, i8_shl, i8_shr, i8_splat, i8_store,
                   i8_store_u32, i8_sub, i8_where)

# Hash of the sources this file compiles in (listed in fragsim.arith.stamps.KERNELS).  numba keys
# its disk cache on this file's content only: after editing one of them run
# `python -m fragsim.arith.stamps` (tests/test_numba_cache_key.py fails until then).
INLINED_SOURCE_HASH = "4b73b8de0a5ade4860a4e58dda2c094431a6e4ad4bca023dd32e7566c1020750"

LANES = 8
# Inf/NaN elements get this nominal exponent, so 2**(F - E) stays a normal float64.
SPEXP = 128
EXP_MASK = 0x7FF0000000000000
ABS_MASK = 0x7FFFFFFFFFFFFFFF
NAN_BITS = 0x7FF8000000000000

F16, BF16, TF32, F32 = 0, 1, 2, 3
FMT_CODE = {"f16": F16, "bf16": BF16, "tf32": TF32, "f32": F32}

# Layout of the int64 parameter vector.
(P_M, P_N, P_K, P_L, P_F, P_EZERO, P_IN_CODE, P_IN_EMIN, P_IN_MASK,
 P_ACC_CODE, P_ACC_EMIN, P_ACC_MAN, P_ACC_EBITS, P_RNE, P_ZERO_IEEE, P_C_EXACT, P_NAN_LOW,
 P_AWORDS, P_BWORDS, P_CWORDS, P_DWORDS, P_A_PAIRED, P_B_PAIRED) = range(23)
NPARAMS = 23


def make_params(pl, maps) -> np.ndarray:
    """The parameter vector of a ``fragsim.arith.Plan`` and its ``index_maps``."""
    M, N, K = pl.form.shape
    if N != LANES:
        raise ValueError(f"form {pl.form.name}: the kernel computes rows of {LANES} columns, N is {N}")
    inf, acc, a = pl.in_fmt, pl.acc_fmt, pl.arch
    p = np.zeros(NPARAMS, np.int64)
    p[[P_M, P_N, P_K, P_L, P_F, P_EZERO]] = M, N, K, pl.block, pl.frac_bits, pl.e_zero
    p[[P_IN_CODE, P_IN_EMIN, P_IN_MASK]] = FMT_CODE[inf.name], inf.emin, (1 << inf.storage_bits) - 1
    p[[P_ACC_CODE, P_ACC_EMIN, P_ACC_MAN, P_ACC_EBITS]] = FMT_CODE[acc.name], acc.emin, acc.man_bits, acc.exp_bits
    p[P_RNE] = pl.rounding == "rne"
    p[P_ZERO_IEEE] = a.zero_sign == "ieee"
    p[P_C_EXACT] = a.c_subnormal_exp == "exact"
    p[P_NAN_LOW] = bool(a.tf32_nan_low_bits)
    p[[P_AWORDS, P_BWORDS, P_CWORDS, P_DWORDS]] = [WARP_LANES * pl.form.nregs(op) for op in "ABCD"]
    p[[P_A_PAIRED, P_B_PAIRED]] = bool(maps["a_paired"][0]), bool(maps["b_paired"][0])
    return p


#: (plan, id(maps)) -> (maps, parameter vector); holding ``maps`` keeps its id from being reused.
_PARAMS: dict = {}
#: Entries kept at most (callers that build a new maps dict for every call would otherwise grow it).
PARAMS_CACHED = 256


def plan_params(pl, maps) -> np.ndarray:
    """``make_params(pl, maps)``, computed once per plan and maps: it takes ~20 us, more than the
    arithmetic of a few warps, and ``fragsim.run_kernel`` calls the kernel once per batch of mma.sync)."""
    key = (pl, id(maps))
    hit = _PARAMS.get(key)
    if hit is None or hit[0] is not maps:
        if len(_PARAMS) >= PARAMS_CACHED:
            _PARAMS.clear()
        hit = _PARAMS[key] = (maps, make_params(pl, maps))
    return hit[1]


@njit(inline="always")
def _k(x):
    return i8_splat(np.int64(x))


@njit(inline="always")
def _decode8(w, code, emin, nan_low, exact):
    """(value, hat) of 8 element words of format ``code``: the exact value as float64
    (Inf/NaN as such), and 2**e with e its nominal exponent max(floor(log2|x|), emin)
    (no emin clamp when ``exact``), 0 for a zero, 2**SPEXP for Inf/NaN.  tf32 words lose
    their low 13 bits first; ``nan_low``: unless those make a NaN of an all-ones exponent."""
    if code == F16:
        v = f8_from_f16(w)
    elif code == BF16:
        v = f8_from_f32(i8_shl(w, _k(16)))
    elif code == TF32:
        v = f8_from_f32(i8_and(w, _k(0xFFFFE000)))
        if nan_low:
            lownan = i8_and(i8_eq(i8_and(w, _k(0x7F800000)), _k(0x7F800000)),
                            i8_ne(i8_and(w, _k(0x1FFF)), _k(0)))
            v = f8_where(lownan, f8_from_bits(_k(NAN_BITS)), v)
    else:
        v = f8_from_f32(w)
    hb = i8_and(f8_bits(v), _k(EXP_MASK))          # 2**floor(log2|v|); all-ones for Inf/NaN
    if not exact:
        hb = i8_max(hb, _k((emin + 1023) << 52))
    hb = i8_min(hb, _k((SPEXP + 1023) << 52))
    hb = i8_where(f8_eq(v, f8_splat(0.0)), _k(0), hb)
    return v, f8_from_bits(hb)


@njit(inline="always")
def _round8(v, man, ebits, rne, zero_ieee):
    """Encode 8 exact float64 values in (man, ebits): RNE or toward zero, subnormals
    produced, overflow to Inf (also toward zero), NaN canonical, zero +0 unless ``zero_ieee``."""
    b = f8_bits(v)
    ab = i8_and(b, _k(ABS_MASK))
    bias = (1 << (ebits - 1)) - 1
    emin = 1 - bias
    drop = 52 - man
    # normal range: drop the low float64 mantissa bits (RNE: add half-ulp-minus-one plus the
    # kept lsb); a carry rolls into the exponent field, as it should
    if rne:
        r = i8_add(ab, i8_add(_k((1 << (drop - 1)) - 1), i8_and(i8_shr(ab, _k(drop)), _k(1))))
    else:
        r = ab
    w = i8_sub(i8_shr(r, _k(drop)), _k((1023 - bias) << man))
    # subnormal range: an integer count of 2**(emin - man); rounding up to 2**emin gives the
    # smallest normal's encoding, which is that same integer
    sub = i8_lt(ab, _k((emin + 1023) << 52))
    x = f8_mul(f8_from_bits(i8_where(sub, ab, _k(0))), f8_from_bits(_k((man - emin + 1023) << 52)))
    x = f8_roundeven(x) if rne else f8_trunc(x)
    w = i8_where(sub, f8_to_i8(x), w)
    inf_word = ((1 << ebits) - 1) << man
    w = i8_min(w, _k(inf_word))
    neg = i8_lt(b, _k(0))
    if not zero_ieee:
        neg = i8_and(neg, i8_ne(w, _k(0)))
    w = i8_or(w, i8_and(neg, _k(1 << (man + ebits))))
    return i8_where(i8_lt(_k(EXP_MASK), ab), _k((1 << (man + ebits)) - 1), w)


@njit(inline="always")
def _decode_kmajor(words, base, src, sh, paired, K, X, mask, code, emin, nan_low, vals, hats):
    """Decode an operand k-major (vals[k*X + x]), 8 elements at a time: gather their register
    words and decode.  ``paired``: each word holds rows k (low half) and k+1 (high half) of
    one column, and ``src`` lists the even rows only."""
    if paired:
        for o in range(0, (K // 2) * X, LANES):
            w = i8_gather(words, base, src, o)
            lo = (o // X) * 2 * X + o % X              # row 2*kk, same column block
            v, h = _decode8(i8_and(w, _k(0xFFFF)), code, emin, nan_low, False)
            f8_store(vals, lo, v)
            f8_store(hats, lo, h)
            v, h = _decode8(i8_shr(w, _k(16)), code, emin, nan_low, False)
            f8_store(vals, lo + X, v)
            f8_store(hats, lo + X, h)
    else:
        for o in range(0, K * X, LANES):
            w = i8_and(i8_shr(i8_gather(words, base, src, o), i8_load(sh, o)), _k(mask))
            v, h = _decode8(w, code, emin, nan_low, False)
            f8_store(vals, o, v)
            f8_store(hats, o, h)


@njit(inline="always")
def _emax_row(ah, bh, M, m, k0, k1, chat, cval, zhat8):
    """2**E_max of one output row over products k0..k1-1 and c, as float64 bits.

    A product's hat (hat_a * hat_b) is 0 exactly when it is a zero term.  Zero terms (and a
    zero c) bring e_zero, which can only matter where every other term lies below it: only
    then does the row look for them.  Four partial maxima keep the dependency chains short."""
    N = LANES
    fzero = f8_splat(0.0)
    e0 = chat
    e1 = fzero
    e2 = fzero
    e3 = fzero
    k = k0
    while k + 4 <= k1:
        e0 = f8_max(e0, f8_mul(f8_bcast(ah, k * M + m), f8_load(bh, k * N)))
        e1 = f8_max(e1, f8_mul(f8_bcast(ah, (k + 1) * M + m), f8_load(bh, k * N + N)))
        e2 = f8_max(e2, f8_mul(f8_bcast(ah, (k + 2) * M + m), f8_load(bh, k * N + 2 * N)))
        e3 = f8_max(e3, f8_mul(f8_bcast(ah, (k + 3) * M + m), f8_load(bh, k * N + 3 * N)))
        k += 4
    while k < k1:
        e0 = f8_max(e0, f8_mul(f8_bcast(ah, k * M + m), f8_load(bh, k * N)))
        k += 1
    emax = f8_max(f8_max(e0, e1), f8_max(e2, e3))
    if i8_any(f8_lt(emax, zhat8)):
        zero = f8_eq(cval, fzero)
        for k in range(k0, k1):
            zero = i8_or(zero, f8_eq(f8_mul(f8_bcast(ah, k * M + m), f8_load(bh, k * N)), fzero))
        emax = f8_max(emax, f8_where(zero, zhat8, fzero))
    return f8_bits(emax)


@njit(inline="always")
def _sum_row(av, bv, M, m, k0, k1, cval, scale):
    """The exact sum of c and the products k0..k1-1 of one output row, each term scaled by
    2**(F - E) and truncated toward zero.  Partial sums start at -0.0, the identity of
    IEEE addition for signed zeros too."""
    N = LANES
    s0 = f8_trunc(f8_mul(cval, scale))
    s1 = f8_splat(-0.0)
    s2 = s1
    s3 = s1
    k = k0
    while k + 4 <= k1:
        s0 = f8_add(s0, f8_trunc(f8_mul(f8_mul(f8_bcast(av, k * M + m), f8_load(bv, k * N)), scale)))
        s1 = f8_add(s1, f8_trunc(f8_mul(f8_mul(f8_bcast(av, (k + 1) * M + m), f8_load(bv, k * N + N)), scale)))
        s2 = f8_add(s2, f8_trunc(f8_mul(f8_mul(f8_bcast(av, (k + 2) * M + m), f8_load(bv, k * N + 2 * N)), scale)))
        s3 = f8_add(s3, f8_trunc(f8_mul(f8_mul(f8_bcast(av, (k + 3) * M + m), f8_load(bv, k * N + 3 * N)), scale)))
        k += 4
    while k < k1:
        s0 = f8_add(s0, f8_trunc(f8_mul(f8_mul(f8_bcast(av, k * M + m), f8_load(bv, k * N)), scale)))
        k += 1
    return f8_add(f8_add(s0, s1), f8_add(s2, s3))


@njit(inline="always")
def _block_sums(av, ah, bv, bh, cv, ch, eb, sv, M, k0, k1, F, zhat8):
    """One block's E_max pass and truncated-sum pass over the rows (c in cv/ch): sv[m] = S * 2**(E - F)."""
    N = LANES
    for m in range(M):
        i8_store(eb, m * N, _emax_row(ah, bh, M, m, k0, k1, f8_load(ch, m * N), f8_load(cv, m * N), zhat8))
    for m in range(M):
        ebits = i8_load(eb, m * N)
        scale = f8_from_bits(i8_sub(_k((F + 2046) << 52), ebits))      # 2**(F - E)
        S = _sum_row(av, bv, M, m, k0, k1, f8_load(cv, m * N), scale)
        f8_store(sv, m * N, f8_mul(S, f8_from_bits(i8_sub(ebits, _k(F << 52)))))   # S * 2**(E - F)


@njit(inline="always")
def _store_d(dw, base, dout, d_lo, d_hi, nd, acc_ebits):
    """Pack D's elements (dout) into its nd registers at dw[base:]: one (f32) or two (f16, low half
    first) elements a register."""
    for r in range(0, nd, LANES):
        w = i8_gather(dout, 0, d_lo, r)
        if acc_ebits == 5:
            w = i8_or(w, i8_shl(i8_gather(dout, 0, d_hi, r), _k(16)))
        i8_store_u32(dw, base + r, w)


@njit(inline="always")
def _c_words(cw, base, src, sh, o, acc_mask):
    """The accumulator words of 8 elements of C (C's index map entries o..o+7) from its registers."""
    return i8_and(i8_shr(i8_gather(cw, base, src, o), i8_load(sh, o)), _k(acc_mask))


@njit(inline="always")
def _set_c(cv, ch, o, w, prm):
    """c of 8 rows of the next block (value and hat, at cv/ch[o:]) from their accumulator words."""
    cval, chat = _decode8(w, prm[P_ACC_CODE], prm[P_ACC_EMIN], False, prm[P_C_EXACT])
    f8_store(cv, o, cval)
    f8_store(ch, o, chat)


@njit(inline="always")
def _load_c(cw, cbase, c_src, c_sh, prm, cv, ch):
    """C as the first block's c."""
    acc_mask = (np.int64(1) << (1 + prm[P_ACC_MAN] + prm[P_ACC_EBITS])) - 1
    for m in range(prm[P_M]):
        _set_c(cv, ch, m * LANES, _c_words(cw, cbase, c_src, c_sh, m * LANES, acc_mask), prm)


@njit(inline="always")
def _chain(prm, av, ah, bv, bh, cv, ch, eb, sv, dout):
    """The blocks of K in turn, the first from the c in cv/ch: each block's result, rounded into the
    accumulator format, is the next block's c; the last one's accumulator words go to dout.
    Row by row in three passes per block (E_max, sums, rounding): rows are independent, so each
    pass is a stream of independent work instead of one long dependency chain."""
    M, K, L, F = prm[P_M], prm[P_K], prm[P_L], prm[P_F]
    acc_man, acc_ebits, rne, zero_ieee = prm[P_ACC_MAN], prm[P_ACC_EBITS], prm[P_RNE], prm[P_ZERO_IEEE]
    N = LANES
    zhat8 = f8_from_bits(_k((prm[P_EZERO] + 1023) << 52))          # 2**e_zero
    for k0 in range(0, K, L):
        k1 = min(k0 + L, K)
        _block_sums(av, ah, bv, bh, cv, ch, eb, sv, M, k0, k1, F, zhat8)
        for m in range(M):
            w = _round8(f8_load(sv, m * N), acc_man, acc_ebits, rne, zero_ieee)
            if k1 < K:  # the rounded block result is the next block's c
                _set_c(cv, ch, m * N, w, prm)
            else:
                i8_store(dout, m * N, w)


@njit(inline="always")
def _warp(i, aw, bw, cw, dw, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi, prm,
          av, ah, bv, bh, cv, ch, eb, sv, dout):
    M, K = prm[P_M], prm[P_K]
    in_code, in_emin, in_mask, nan_low = prm[P_IN_CODE], prm[P_IN_EMIN], prm[P_IN_MASK], prm[P_NAN_LOW]
    N = LANES

    # A and B k-major (av[k*M + m], bv[k*N + n]): a row of B is one vector.
    _decode_kmajor(aw, i * prm[P_AWORDS], a_src, a_sh, prm[P_A_PAIRED], K, M, in_mask, in_code, in_emin,
                   nan_low, av, ah)
    _decode_kmajor(bw, i * prm[P_BWORDS], b_src, b_sh, prm[P_B_PAIRED], K, N, in_mask, in_code, in_emin,
                   nan_low, bv, bh)
    _load_c(cw, i * prm[P_CWORDS], c_src, c_sh, prm, cv, ch)
    _chain(prm, av, ah, bv, bh, cv, ch, eb, sv, dout)
    _store_d(dw, i * prm[P_DWORDS], dout, d_lo, d_hi, prm[P_DWORDS], prm[P_ACC_EBITS])


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba's stubs omit its private _nrt option
def _run_range(lo, hi, aw, bw, cw, dw, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi, prm,
               av, ah, bv, bh, cv, ch, eb, sv, dout):
    # No reference counting in here (_nrt=False): numba would otherwise touch the refcounts
    # of every array handed to the inlined helpers, once per warp -- a fifth of the time.
    for i in range(lo, hi):
        _warp(i, aw, bw, cw, dw, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi, prm,
              av, ah, bv, bh, cv, ch, eb, sv, dout)


@njit(cache=True)
def _a64(n, dtype):
    """An empty array on a 64-byte boundary: 8-lane loads and stores then never straddle a
    cache line."""
    raw = np.empty(n + 8, dtype)
    off = ((-raw.ctypes.data) % 64) // 8
    return raw[off:off + n]


@njit(cache=True)
def _scratch(prm):
    M, K = prm[P_M], prm[P_K]
    return (_a64(M * K, np.float64), _a64(M * K, np.float64), _a64(K * LANES, np.float64),
            _a64(K * LANES, np.float64), _a64(M * LANES, np.float64), _a64(M * LANES, np.float64),
            _a64(M * LANES, np.int64), _a64(M * LANES, np.float64), _a64(M * LANES, np.int64))


@njit(cache=True)
def _run_serial(aw, bw, cw, dw, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi, prm):
    av, ah, bv, bh, cv, ch, eb, sv, dout = _scratch(prm)
    _run_range(0, dw.size // prm[P_DWORDS], aw, bw, cw, dw, a_src, a_sh, b_src, b_sh, c_src, c_sh,
               d_lo, d_hi, prm, av, ah, bv, bh, cv, ch, eb, sv, dout)


@njit(cache=True, parallel=True)
def _run_parallel(nchunks, aw, bw, cw, dw, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi, prm):
    n = dw.size // prm[P_DWORDS]
    for t in prange(nchunks):
        av, ah, bv, bh, cv, ch, eb, sv, dout = _scratch(prm)
        _run_range(t * n // nchunks, (t + 1) * n // nchunks, aw, bw, cw, dw, a_src, a_sh, b_src, b_sh,
                   c_src, c_sh, d_lo, d_hi, prm, av, ah, bv, bh, cv, ch, eb, sv, dout)


def run(pl, maps, a, b, c, parallel: bool = True) -> np.ndarray:
    """D registers (batch, 32, nregs_D) uint32 from register batches a, b, c (batch, 32*nregs)."""
    import numba

    batch = a.shape[0]
    nd = pl.form.nregs("D")
    d = np.empty(batch * WARP_LANES * nd, np.uint32)
    prm = plan_params(pl, maps)
    # One array type per argument, whatever the caller holds (read-only broadcast views,
    # strided slices): numba compiles a new specialization for each distinct type.
    a, b, c = (np.require(x.reshape(-1), np.uint32, ("C", "A", "W")) for x in (a, b, c))
    args = (a, b, c, d, maps["a_src"], maps["a_sh"],
            maps["b_src"], maps["b_sh"], maps["c_src"], maps["c_sh"], maps["d_lo"], maps["d_hi"], prm)
    threads = numba.get_num_threads()
    if parallel and threads > 1 and batch >= 2 * threads:
        _run_parallel(min(batch, 8 * threads), *args)
    else:
        _run_serial(*args)
    return d.reshape(batch, WARP_LANES, nd)
