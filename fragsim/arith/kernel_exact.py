"""numba kernels of the integer and f64 forms (``fragsim.arith.exact``), from raw registers.

Vectorised like the float kernel (``fragsim.arith.simd``), 8 lanes.  Integer forms: every
register holds consecutive k of one row of A or column of B, so both decode without gathers
into rows of A and columns of B (8 elements from one or two broadcast words), and D[m, n] is a
dot product over k, 8 k per vector.  The products are summed in float64: every product of two
8-bit (or 4-bit) integers and any sum of at most 64 of them is an integer below 2**22, exact in
float64 in any order, whose multiply-adds vectorise on every x86 SIMD level (int64 multiplies do
not).  c, the wrap and the saturation are int64.  Single-bit forms count the bits of whole
register words, 32 k at a time.  f64 forms: one output row of 8 columns is one vector, the
chain of IEEE multiply-adds runs with LLVM's fma (one rounding), A (k-major) broadcast.

``fragsim.mma`` imports this module on first use of such a form.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from fragsim.facts.hardware import WARP_LANES
from .simd import (f8_add, f8_bcast, f8_bits, f8_eq, f8_fma, f8_from_bits, f8_hsum8, f8_load, f8_mul, f8_splat,
                   f8_store, f8_to_i8, i8_add, i8_and, i8_any, i8_gather, i8_load, i8_lt, i8_max, i8_min, i8_or,
                   i8_popc, i8_shl, i8_shr, i8_splat, i8_store, i8_store_u32, i8_sub, i8_to_f8, i8_where,
                   i8_xor)

# Hash of the sources this file compiles in (listed in fragsim.arith.stamps.KERNELS).  numba keys
# its disk cache on this file's content only: after editing one of them run
# `python -m fragsim.arith.stamps` (tests/test_numba_cache_key.py fails until then).
INLINED_SOURCE_HASH = "4b73b8de0a5ade4860a4e58dda2c094431a6e4ad4bca023dd32e7566c1020750"

LANES = 8                   # every form here is n8: one output row is one 8-lane vector
OP_MUL, OP_AND, OP_XOR = 0, 1, 2
S32_MIN, S32_MAX = -(1 << 31), (1 << 31) - 1
SIGN64 = -(1 << 63)         # the sign bit of a binary64, as int64
MIN_NORMAL_BITS = 1 << 52   # binary64 words below this (sign dropped) are zero or subnormal

# int64 parameter vectors
(I_M, I_K, I_ABITS, I_ASIGNED, I_BBITS, I_BSIGNED, I_OP, I_SAT, I_BLOCK,
 I_AWORDS, I_BWORDS, I_CWORDS, I_DWORDS) = range(13)
(F_M, F_K, F_DESC, F_FUSED, F_FTZ, F_NAN1, F_NAN2, F_NAN3, F_DEFNAN, F_AWORDS, F_BWORDS, F_CWORDS,
 F_DWORDS) = range(13)
NAN_A, NAN_B, NAN_C, NAN_NONE = 0, 1, 2, 3   # f64 NaN priority codes (NAN_NONE: canonical)
QUIET_BIT = 1 << 51


@njit(inline="always")
def _k(x):
    return i8_splat(np.int64(x))


# --- integers -------------------------------------------------------------------------------

@njit(inline="always")
def _decode_rows(words, base, grp, lane_sh, lane_lo, bits, signed, out):
    """out[8g:8g+8] (float64) = 8 consecutive elements of a row-major operand, from the one or
    two register words grp[2g], grp[2g+1] (the low lanes from the first): broadcast, shift each
    lane to its element, mask, sign-extend.  No gathers: registers hold consecutive k."""
    mask = _k((1 << bits) - 1)
    sb = _k((1 << (bits - 1)) if signed else 0)
    sh = i8_load(lane_sh, 0)
    lo = i8_load(lane_lo, 0)
    for g in range(grp.size // 2):
        w = i8_where(lo, _k(words[base + grp[2 * g]]), _k(words[base + grp[2 * g + 1]]))
        w = i8_and(i8_shr(w, sh), mask)
        f8_store(out, 8 * g, i8_to_f8(i8_sub(i8_xor(w, sb), sb)))


@njit(inline="always")
def _c_row(cw, cbase, c_src, m):
    """Row m of C as signed s32 values."""
    v = i8_gather(cw, cbase, c_src, m * LANES)
    return i8_sub(v, i8_and(i8_lt(_k(S32_MAX), v), _k(1 << 32)))


@njit(inline="always")
def _int_warp(i, aw, bw, cw, dw, a_grp, b_grp, lanes, c_src, a_words, b_words, d_dst, prm, av, bv, dout):
    M, K = prm[I_M], prm[I_K]
    op, sat, block = prm[I_OP], prm[I_SAT], prm[I_BLOCK]
    abase, bbase, cbase = i * prm[I_AWORDS], i * prm[I_BWORDS], i * prm[I_CWORDS]
    N = LANES
    if op == OP_MUL:
        # A by rows, B by columns; D[m, n] = sum over k of row m times column n, 8 k per vector,
        # the 8 columns of a row in 8 accumulators summed across at the end of each block.
        _decode_rows(aw, abase, a_grp, lanes[:LANES], lanes[LANES:], prm[I_ABITS], prm[I_ASIGNED], av)
        _decode_rows(bw, bbase, b_grp, lanes[:LANES], lanes[LANES:], prm[I_BBITS], prm[I_BSIGNED], bv)
        for m in range(M):
            s = _c_row(cw, cbase, c_src, m)
            for k0 in range(0, K, block):
                z = f8_splat(0.0)
                s0, s1, s2, s3, s4, s5, s6, s7 = z, z, z, z, z, z, z, z
                for k in range(k0, min(k0 + block, K), LANES):
                    x = f8_load(av, m * K + k)
                    s0 = f8_fma(x, f8_load(bv, k), s0)
                    s1 = f8_fma(x, f8_load(bv, K + k), s1)
                    s2 = f8_fma(x, f8_load(bv, 2 * K + k), s2)
                    s3 = f8_fma(x, f8_load(bv, 3 * K + k), s3)
                    s4 = f8_fma(x, f8_load(bv, 4 * K + k), s4)
                    s5 = f8_fma(x, f8_load(bv, 5 * K + k), s5)
                    s6 = f8_fma(x, f8_load(bv, 6 * K + k), s6)
                    s7 = f8_fma(x, f8_load(bv, 7 * K + k), s7)
                s = i8_add(s, f8_to_i8(f8_hsum8(s0, s1, s2, s3, s4, s5, s6, s7)))
                if sat:
                    s = i8_min(i8_max(s, _k(S32_MIN)), _k(S32_MAX))
            i8_store(dout, m * N, s)
    else:  # b1: popc of whole words; a_words[m*kw + j], b_words[j*N + n] hold 32 k each
        kw = K // 32
        for m in range(M):
            s = _c_row(cw, cbase, c_src, m)
            for j in range(kw):
                x = _k(aw[abase + a_words[m * kw + j]])
                y = i8_gather(bw, bbase, b_words, j * N)
                s = i8_add(s, i8_popc(i8_and(x, y) if op == OP_AND else i8_xor(x, y)))
            i8_store(dout, m * N, s)
    nd = prm[I_DWORDS]
    for r in range(0, nd, LANES):
        i8_store_u32(dw, i * nd + r, i8_gather(dout, 0, d_dst, r))


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba's stubs omit its private _nrt option
def _int_range(lo, hi, aw, bw, cw, dw, a_grp, b_grp, lanes, c_src, a_words, b_words, d_dst, prm,
               av, bv, dout):
    for i in range(lo, hi):
        _int_warp(i, aw, bw, cw, dw, a_grp, b_grp, lanes, c_src, a_words, b_words, d_dst, prm, av, bv, dout)


@njit(cache=True)
def _a64(n, dtype):
    """An empty array on a 64-byte boundary (8-lane loads never straddle a cache line)."""
    raw = np.empty(n + 8, dtype)
    off = ((-raw.ctypes.data) % 64) // 8
    return raw[off:off + n]


@njit(cache=True)
def _int_serial(aw, bw, cw, dw, a_grp, b_grp, lanes, c_src, a_words, b_words, d_dst, prm):
    M, K = prm[I_M], prm[I_K]
    _int_range(0, dw.size // prm[I_DWORDS], aw, bw, cw, dw, a_grp, b_grp, lanes, c_src, a_words, b_words,
               d_dst, prm, _a64(M * K, np.float64), _a64(LANES * K, np.float64), _a64(M * LANES, np.int64))


@njit(cache=True, parallel=True)
def _int_parallel(nchunks, aw, bw, cw, dw, a_grp, b_grp, lanes, c_src, a_words, b_words, d_dst, prm):
    M, K = prm[I_M], prm[I_K]
    n = dw.size // prm[I_DWORDS]
    for t in prange(nchunks):
        _int_range(t * n // nchunks, (t + 1) * n // nchunks, aw, bw, cw, dw, a_grp, b_grp, lanes, c_src,
                   a_words, b_words, d_dst, prm, _a64(M * K, np.float64), _a64(K * LANES, np.float64),
                   _a64(M * LANES, np.int64))


# --- f64 ------------------------------------------------------------------------------------

@njit(inline="always")
def _f64_gather(words, base, src, o, ftz):
    """8 binary64 values whose low words are words[base + src[o + j]] (high word next); with
    ``ftz`` subnormals read as zeros of their sign."""
    b = i8_or(i8_gather(words, base, src, o), i8_shl(i8_gather(words, base + 1, src, o), _k(32)))
    if ftz:
        b = i8_where(i8_lt(i8_and(b, _k(~SIGN64)), _k(MIN_NORMAL_BITS)), i8_and(b, _k(SIGN64)), b)
    return b


@njit(inline="always")
def _nan_pick(code, a, b, acc, chosen):
    """Where operand ``code`` is a NaN, that NaN quieted; else ``chosen``."""
    x = a if code == NAN_A else (b if code == NAN_B else acc)
    return i8_where(f8_eq(x, x), chosen, i8_or(f8_bits(x), _k(QUIET_BIT)))


@njit(inline="always")
def _nan_fix(r, a, b, acc, prm):
    """A step's result r = a*b + acc with its NaN lanes as the hardware writes them: the first NaN
    operand in the priority order, quieted, or the default NaN of an invalid operation."""
    chosen = _k(prm[F_DEFNAN])
    for j in range(3):
        code = prm[F_NAN3 - j]               # lowest priority first: the highest is written last
        if code != NAN_NONE:
            chosen = _nan_pick(code, a, b, acc, chosen)
    return f8_from_bits(i8_where(f8_eq(r, r), f8_bits(r), chosen))


@njit(inline="always")
def _f64_warp(i, aw, bw, cw, dw, a_src, b_src, c_src, d_dst, d_word, prm, av, bv, dout):
    M, K = prm[F_M], prm[F_K]
    desc, fused, ftz = prm[F_DESC], prm[F_FUSED], prm[F_FTZ]
    N = LANES
    abase, bbase = i * prm[F_AWORDS], i * prm[F_BWORDS]
    for o in range(0, M * K, LANES):
        f8_store(av, o, f8_from_bits(_f64_gather(aw, abase, a_src, o, ftz)))
    for o in range(0, K * N, LANES):
        f8_store(bv, o, f8_from_bits(_f64_gather(bw, bbase, b_src, o, ftz)))
    for m in range(M):
        acc = f8_from_bits(_f64_gather(cw, i * prm[F_CWORDS], c_src, m * N, ftz))
        for kk in range(K):
            k = K - 1 - kk if desc else kk
            a, b = f8_bcast(av, k * M + m), f8_load(bv, k * N)
            r = f8_fma(a, b, acc) if fused else f8_add(acc, f8_mul(a, b))
            if i8_any(i8_xor(f8_eq(r, r), _k(-1))):     # a NaN lane: the host's NaN is not the GPU's
                r = _nan_fix(r, a, b, acc, prm)
            acc = r
            if ftz:
                bits = f8_bits(acc)
                acc = f8_from_bits(i8_where(i8_lt(i8_and(bits, _k(~SIGN64)), _k(MIN_NORMAL_BITS)),
                                            i8_and(bits, _k(SIGN64)), bits))
        i8_store(dout, m * N, f8_bits(acc))
    nd = prm[F_DWORDS]
    for r in range(0, nd, LANES):   # word d_word of element d_dst: shift it down, keep 32 bits
        w = i8_gather(dout, 0, d_dst, r)
        hi = i8_and(i8_shr(w, _k(32)), _k(0xFFFFFFFF))
        i8_store_u32(dw, i * nd + r, i8_where(i8_load(d_word, r), hi, w))


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]
def _f64_range(lo, hi, aw, bw, cw, dw, a_src, b_src, c_src, d_dst, d_word, prm, av, bv, dout):
    for i in range(lo, hi):
        _f64_warp(i, aw, bw, cw, dw, a_src, b_src, c_src, d_dst, d_word, prm, av, bv, dout)


@njit(cache=True)
def _f64_serial(aw, bw, cw, dw, a_src, b_src, c_src, d_dst, d_word, prm):
    M, K = prm[F_M], prm[F_K]
    _f64_range(0, dw.size // prm[F_DWORDS], aw, bw, cw, dw, a_src, b_src, c_src, d_dst, d_word, prm,
               _a64(M * K, np.float64), _a64(K * LANES, np.float64), _a64(M * LANES, np.int64))


@njit(cache=True, parallel=True)
def _f64_parallel(nchunks, aw, bw, cw, dw, a_src, b_src, c_src, d_dst, d_word, prm):
    M, K = prm[F_M], prm[F_K]
    n = dw.size // prm[F_DWORDS]
    for t in prange(nchunks):
        _f64_range(t * n // nchunks, (t + 1) * n // nchunks, aw, bw, cw, dw, a_src, b_src, c_src, d_dst, d_word,
                   prm, _a64(M * K, np.float64), _a64(K * LANES, np.float64), _a64(M * LANES, np.int64))


# --- entry ----------------------------------------------------------------------------------

def run(pl, maps, a, b, c, parallel: bool = True) -> np.ndarray:
    """D registers (batch, 32, nregs_D) uint32 of an ``IntPlan`` or ``F64Plan``, from register
    batches a, b, c (batch, 32*nregs)."""
    import numba

    from .exact import IntPlan

    f = pl.form
    M, _, K = f.shape
    batch = a.shape[0]
    nd = f.nregs("D")
    d = np.empty(batch * WARP_LANES * nd, np.uint32)
    a, b, c = (np.require(x.reshape(-1), np.uint32, ("C", "A", "W")) for x in (a, b, c))
    words = [WARP_LANES * f.nregs(op) for op in "ABCD"]
    args: tuple
    serial: Any
    par: Any
    if isinstance(pl, IntPlan):
        fa, fb = pl.a_fmt, pl.b_fmt
        prm = np.array([M, K, fa.storage_bits, fa.signed, fb.storage_bits, fb.signed, pl.op, pl.satfinite,
                        pl.sat_block] + words, np.int64)
        args = (a, b, c, d, maps["a_grp"], maps["b_grp"], maps["lanes"], maps["c_src"],
                maps["a_words"], maps["b_words"], maps["d_dst"], prm)
        serial, par = _int_serial, _int_parallel     # the two families' drivers take different arguments
    else:
        order = [NAN_NONE] * 3 if pl.nan_order == "canonical" else ["abc".index(x) for x in pl.nan_order]
        nan = pl.default_nan - (1 << 64) if pl.default_nan >> 63 else pl.default_nan   # the same 64 bits, as int64
        prm = np.array([M, K, pl.descending, pl.fused, pl.ftz] + order + [nan] + words, np.int64)
        args = (a, b, c, d, maps["a_src"], maps["b_src"], maps["c_src"], maps["d_dst"], maps["d_word"], prm)
        serial, par = _f64_serial, _f64_parallel
    threads = numba.get_num_threads()
    if parallel and threads > 1 and batch >= 2 * threads:
        par(min(batch, 8 * threads), *args)
    else:
        serial(*args)
    return d.reshape(batch, WARP_LANES, nd)
