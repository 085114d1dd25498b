"""numba kernel of ``fragsim.gemm`` for the forms of the truncated fused dot-product model.

A GEMM of mma.sync is, per output element, one chain of the model's blocks: each k-step's
mma runs its blocks (``Plan.blocks``) in ascending k, each block's result rounded to the
accumulator format and read back as the next block's c, and the D of one k-step is the C of
the next -- the same bits, since C and D share format and fragment map.  So the whole GEMM
is that chain over the block sequence of ``k_order``, which this kernel runs with the
accumulators of four rows of one 8-column tile held in registers from C to D: inputs are
decoded once per matrix (not once per mma), no registers are packed or unpacked, and the
arithmetic per block is exactly ``fragsim.arith.kernel``'s (its ``_decode8`` and
``_round8``, the rounding between blocks done on float64 bits where it gives a normal number,
``_next_c``; the scaled, truncated sum as its ``_sum_row``; E_max as its ``_emax_row``, but as
a maximum of integer exponent sums instead of products of powers of two).  f16 inputs run two
8-column tiles at once in 32-bit lanes (``_rows4x16``, ``fragsim.arith.simd16``).

Work items (prange): blocks of rows x columns of D, each run a pass of blocks at a time.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .kernel import (ABS_MASK, LANES, P_ACC_CODE, P_ACC_EBITS, P_ACC_EMIN, P_ACC_MAN, P_C_EXACT, P_EZERO,
                           P_F, P_IN_CODE, P_IN_EMIN, P_NAN_LOW, P_RNE, P_ZERO_IEEE, _decode8, _round8)
from .simd import (at, f8_add, f8_bcast, f8_bits, f8_eq, f8_from_bits, f8_load, f8_mul, f8_splat, f8_store,
                         f8_trunc, i8_add, i8_and, i8_any, i8_load, i8_lt, i8_max, i8_or, i8_shl, i8_shr,
                         i8_splat, i8_store, i8_sub, i8_to_f8, i8_ult, i8_where)
from .simd16 import (s16_bcast, s16_join, s16_load, s16_mul, s16_trunc, w16_add, w16_bcast, w16_hi, w16_join,
                           w16_lo, w16_load, w16_max, w16_zeros)

# Hash of the sources this file compiles in (listed in fragsim.arith.stamps.KERNELS).  numba keys
# its disk cache on this file's content only: after editing one of them run
# `python -m fragsim.arith.stamps` (tests/test_numba_cache_key.py fails until then).
INLINED_SOURCE_HASH = "37a49e96e61134c5d153e3d031f4602ccceb5bebf9a3abb2fc1ca8a926001348"

ROWS = 4        # rows whose accumulators one pass keeps in registers
ZERO_EXP = -8192     # a zero's exponent: any sum with it lies below every real product's
SIGN = ~ABS_MASK


@njit(inline="always")
def _k(x):
    return i8_splat(np.int64(x))


@njit(inline="always")
def _exp(hat):
    """The nominal exponent of a hat 2**e, ZERO_EXP for a zero's 0: the exponent of a product is
    then a sum, and E_max a maximum of sums (integer operations, which every SIMD port runs)."""
    return i8_where(f8_eq(hat, f8_splat(0.0)), _k(ZERO_EXP), i8_sub(i8_shr(f8_bits(hat), _k(52)), _k(1023)))


@njit(cache=True, parallel=True)
def decode(words, width, prm, is_acc, vals, exps):
    """Values and exponents (float64, int64) of a row-major matrix of element words ``width``
    columns wide, in 8-column panels: element (k, 8p + j) goes to [(p * rows + k) * 8 + j] (for
    width 8 that is the matrix's own order).  The input format (``is_acc`` False) or the
    accumulator's with C's exponent rule."""
    if is_acc:
        code, emin, nan_low, exact = prm[P_ACC_CODE], prm[P_ACC_EMIN], False, prm[P_C_EXACT] != 0
    else:
        code, emin, nan_low, exact = prm[P_IN_CODE], prm[P_IN_EMIN], prm[P_NAN_LOW] != 0, False
    rows = words.size // width
    groups = words.size // LANES
    chunks = (groups + 1023) // 1024
    for t in prange(chunks):
        buf = np.empty(LANES, np.int64)
        for j in range(t * 1024, min(groups, (t + 1) * 1024)):
            src = (j % rows) * width + (j // rows) * LANES
            for i in range(LANES):
                buf[i] = words[src + i]
            v, h = _decode8(i8_load(buf, 0), code, emin, nan_low, exact)
            f8_store(vals, j * LANES, v)
            i8_store(exps, j * LANES, _exp(h))


@njit(inline="always")
def _zero_rule(e, ae, be, arow, bcol, k0, k1, cval, ezero):
    """Zero terms (and a zero c) bring e_zero, which matters only where every other term lies
    below it (``_emax_row`` of fragsim.arith.kernel)."""
    low = i8_lt(e, ezero)
    if i8_any(low):
        zero = f8_eq(cval, f8_splat(0.0))
        for k in range(k0, k1):
            zero = i8_or(zero, i8_lt(i8_add(_k(at(ae, arow + k)), i8_load(be, bcol + k * LANES)), _k(ZERO_EXP // 2)))
        e = i8_where(i8_and(zero, low), ezero, e)
    return e


@njit(inline="always")
def _scale(e, F):
    """2**(F - e): a term's scale to integers below 2**(F + 2)."""
    return f8_from_bits(i8_shl(i8_sub(_k(F + 1023), e), _k(52)))


@njit(inline="always")
def _unscale(e, F):
    """2**(e - F): the block sum's weight."""
    return f8_from_bits(i8_shl(i8_add(e, _k(1023 - F)), _k(52)))


@njit(_nrt=False)  # type: ignore[call-overload]
def _finish(s, e, F, prm):
    """The block sum S (exact, scaled by 2**(F - E)) -> the accumulator word, and its value and
    exponent as the next c."""
    w = _round8(f8_mul(s, _unscale(e, F)), prm[P_ACC_MAN], prm[P_ACC_EBITS], prm[P_RNE],
                prm[P_ZERO_IEEE])
    v, h = _decode8(w, prm[P_ACC_CODE], prm[P_ACC_EMIN], False, prm[P_C_EXACT] != 0)
    return w, v, _exp(h)


@njit(_nrt=False)  # type: ignore[call-overload]
def _word(x, prm):
    """D's word of the exact block result x."""
    return _round8(x, prm[P_ACC_MAN], prm[P_ACC_EBITS], prm[P_RNE], prm[P_ZERO_IEEE])


@njit(inline="always")
def _acc_rounding(prm):
    """``_next_c``'s constants: RNE or not, the float64 bits dropped, the kept bits, and the
    accumulator's smallest normal and the span of its normals in float64 bits."""
    drop = 52 - prm[P_ACC_MAN]
    bias = (1 << (prm[P_ACC_EBITS] - 1)) - 1
    return prm[P_RNE] != 0, drop, ~((1 << drop) - 1), (1 - bias + 1023) << 52, (2 * bias) << 52


@njit(inline="always")
def _next_c(s, e, F, rc, prm):
    """The block sum S (exact, scaled by 2**(F - E)) -> its exact value x (D's word is
    ``_word(x)``) and the accumulator's value and exponent as the next c.  Where every lane
    rounds to a normal number or zero, the rounding works on x's float64 bits (what encoding the
    word and decoding it back gives, without either); zeros, subnormals, overflow, Inf and NaN
    go through ``_finish``."""
    rne, drop, keep, lo, span = rc
    x = f8_mul(s, _unscale(e, F))
    b = f8_bits(x)
    ab = i8_and(b, _k(ABS_MASK))
    if rne:     # add half-ulp-minus-one plus the kept lsb: a carry rolls into the exponent
        ab = i8_add(ab, i8_add(_k((1 << (drop - 1)) - 1), i8_and(i8_shr(ab, _k(drop)), _k(1))))
    rb = i8_and(ab, _k(keep))
    if i8_any(i8_ult(_k(span - 1), i8_sub(rb, _k(lo)))):
        _, v, h = _finish(s, e, F, prm)
    else:
        v = f8_from_bits(i8_or(rb, i8_and(b, _k(SIGN))))
        h = i8_sub(i8_shr(rb, _k(52)), _k(1023))
    return x, v, h


@njit(inline="always")
def _emax4(ae, be, r0, r1, r2, r3, bcol, k0, k1, e0, e1, e2, e3):
    """E_max of four rows of one 8-column tile, from c's exponents e0..e3: four independent chains."""
    for k in range(k0, k1):
        eb = i8_load(be, bcol + k * LANES)
        e0 = i8_max(e0, i8_add(_k(at(ae, r0 + k)), eb))
        e1 = i8_max(e1, i8_add(_k(at(ae, r1 + k)), eb))
        e2 = i8_max(e2, i8_add(_k(at(ae, r2 + k)), eb))
        e3 = i8_max(e3, i8_add(_k(at(ae, r3 + k)), eb))
    return e0, e1, e2, e3


@njit(inline="always")
def _sum4(av, bv, r0, r1, r2, r3, bcol, k0, k1, s0, s1, s2, s3, sc0, sc1, sc2, sc3):
    """The products of four rows of one 8-column tile added to s0..s3, each scaled and truncated."""
    for k in range(k0, k1):
        b = f8_load(bv, bcol + k * LANES)
        s0 = f8_add(s0, f8_trunc(f8_mul(f8_mul(f8_bcast(av, r0 + k), b), sc0)))
        s1 = f8_add(s1, f8_trunc(f8_mul(f8_mul(f8_bcast(av, r1 + k), b), sc1)))
        s2 = f8_add(s2, f8_trunc(f8_mul(f8_mul(f8_bcast(av, r2 + k), b), sc2)))
        s3 = f8_add(s3, f8_trunc(f8_mul(f8_mul(f8_bcast(av, r3 + k), b), sc3)))
    return s0, s1, s2, s3


@njit(_nrt=False)  # type: ignore[call-overload]  # numba's stubs omit its private _nrt option
def _rows4(m0, nt, K, N, av, ae, bv, be, cv, ce, bstart, bend, j0, j1, prm, ezero, dout):
    """Rows m0..m0+3 of the 8-column tile nt: blocks j0..j1-1 of the chain, the accumulators in
    registers; their value and exponent come from and go back to cv, ce, their word to dout."""
    F = prm[P_F]
    bcol = nt * K * LANES
    r0, r1, r2, r3 = m0 * K, (m0 + 1) * K, (m0 + 2) * K, (m0 + 3) * K
    o = m0 * N + nt * LANES
    v0, v1, v2, v3 = f8_load(cv, o), f8_load(cv, o + N), f8_load(cv, o + 2 * N), f8_load(cv, o + 3 * N)
    h0, h1, h2, h3 = i8_load(ce, o), i8_load(ce, o + N), i8_load(ce, o + 2 * N), i8_load(ce, o + 3 * N)
    rc = _acc_rounding(prm)
    w0 = w1 = w2 = w3 = f8_splat(0.0)
    for j in range(j0, j1):
        k0, k1 = bstart[j], bend[j]
        e0, e1, e2, e3 = _emax4(ae, be, r0, r1, r2, r3, bcol, k0, k1, h0, h1, h2, h3)
        e0 = _zero_rule(e0, ae, be, r0, bcol, k0, k1, v0, ezero)
        e1 = _zero_rule(e1, ae, be, r1, bcol, k0, k1, v1, ezero)
        e2 = _zero_rule(e2, ae, be, r2, bcol, k0, k1, v2, ezero)
        e3 = _zero_rule(e3, ae, be, r3, bcol, k0, k1, v3, ezero)
        sc0, sc1, sc2, sc3 = _scale(e0, F), _scale(e1, F), _scale(e2, F), _scale(e3, F)
        # the exact sum of c and the products, each scaled by 2**(F - E) and truncated
        s0, s1, s2, s3 = _sum4(av, bv, r0, r1, r2, r3, bcol, k0, k1, f8_trunc(f8_mul(v0, sc0)),
                               f8_trunc(f8_mul(v1, sc1)), f8_trunc(f8_mul(v2, sc2)), f8_trunc(f8_mul(v3, sc3)),
                               sc0, sc1, sc2, sc3)
        w0, v0, h0 = _next_c(s0, e0, F, rc, prm)
        w1, v1, h1 = _next_c(s1, e1, F, rc, prm)
        w2, v2, h2 = _next_c(s2, e2, F, rc, prm)
        w3, v3, h3 = _next_c(s3, e3, F, rc, prm)
    _store4(cv, ce, dout, o, N, v0, v1, v2, v3, h0, h1, h2, h3, w0, w1, w2, w3, prm, j1 == bstart.size)


@njit(inline="always")
def _store4(cv, ce, dout, o, N, v0, v1, v2, v3, h0, h1, h2, h3, x0, x1, x2, x3, prm, last):
    """The accumulators back to cv, ce and, after the chain's ``last`` block, the words of their
    exact values x0..x3 to dout."""
    f8_store(cv, o, v0)
    f8_store(cv, o + N, v1)
    f8_store(cv, o + 2 * N, v2)
    f8_store(cv, o + 3 * N, v3)
    i8_store(ce, o, h0)
    i8_store(ce, o + N, h1)
    i8_store(ce, o + 2 * N, h2)
    i8_store(ce, o + 3 * N, h3)
    if last:
        i8_store(dout, o, _word(x0, prm))
        i8_store(dout, o + N, _word(x1, prm))
        i8_store(dout, o + 2 * N, _word(x2, prm))
        i8_store(dout, o + 3 * N, _word(x3, prm))


@njit(_nrt=False)  # type: ignore[call-overload]
def _rows4x16(m0, nt, K, N, av, ae, bv, be, cv, ce, bstart, bend, j0, j1, prm, ezero, dout, s32, bad, L):
    """``_rows4`` for the 8-column tiles nt and nt + 1 at once, f16 inputs: E_max and the products
    in sixteen 32-bit lanes.  An f16 product is exact in float32 and so is its scaled truncation (an
    integer below 2**27, the scale clamped to float32's range: a block whose E lies below F - 127
    has only zero products); the at most 16 terms of a block sum exactly in int32.  ``s32``: A's
    values and exponents as float32 / int32 (rows of K), then B's in 16-column panels (k-major).
    Blocks with an Inf or NaN input (``bad``: one flag per row of A, then per 8-column panel of B,
    and block of length L in k order) take the float64 path of ``_rows4``."""
    F = prm[P_F]
    av32, ae32, bv32, be32 = s32
    nb = K // L
    boff = nb * (dout.size // N)              # B's flags follow A's (M rows)
    low = _k(F - 127)
    bl, bh = nt * K * LANES, (nt + 1) * K * LANES
    b16 = (nt // 2) * K * 16
    r0, r1, r2, r3 = m0 * K, (m0 + 1) * K, (m0 + 2) * K, (m0 + 3) * K
    o, p = m0 * N + nt * LANES, m0 * N + nt * LANES + LANES
    v0, v1, v2, v3 = f8_load(cv, o), f8_load(cv, o + N), f8_load(cv, o + 2 * N), f8_load(cv, o + 3 * N)
    u0, u1, u2, u3 = f8_load(cv, p), f8_load(cv, p + N), f8_load(cv, p + 2 * N), f8_load(cv, p + 3 * N)
    h0, h1, h2, h3 = i8_load(ce, o), i8_load(ce, o + N), i8_load(ce, o + 2 * N), i8_load(ce, o + 3 * N)
    g0, g1, g2, g3 = i8_load(ce, p), i8_load(ce, p + N), i8_load(ce, p + 2 * N), i8_load(ce, p + 3 * N)
    rc = _acc_rounding(prm)
    w0 = w1 = w2 = w3 = x0 = x1 = x2 = x3 = f8_splat(0.0)
    for j in range(j0, j1):
        k0, k1 = bstart[j], bend[j]
        m0e, m1e, m2e, m3e = w16_join(h0, g0), w16_join(h1, g1), w16_join(h2, g2), w16_join(h3, g3)
        for k in range(k0, k1):
            eb = w16_load(be32, b16 + k * 16)
            m0e = w16_max(m0e, w16_add(w16_bcast(ae32, r0 + k), eb))
            m1e = w16_max(m1e, w16_add(w16_bcast(ae32, r1 + k), eb))
            m2e = w16_max(m2e, w16_add(w16_bcast(ae32, r2 + k), eb))
            m3e = w16_max(m3e, w16_add(w16_bcast(ae32, r3 + k), eb))
        e0 = _zero_rule(w16_lo(m0e), ae, be, r0, bl, k0, k1, v0, ezero)
        e1 = _zero_rule(w16_lo(m1e), ae, be, r1, bl, k0, k1, v1, ezero)
        e2 = _zero_rule(w16_lo(m2e), ae, be, r2, bl, k0, k1, v2, ezero)
        e3 = _zero_rule(w16_lo(m3e), ae, be, r3, bl, k0, k1, v3, ezero)
        d0 = _zero_rule(w16_hi(m0e), ae, be, r0, bh, k0, k1, u0, ezero)
        d1 = _zero_rule(w16_hi(m1e), ae, be, r1, bh, k0, k1, u1, ezero)
        d2 = _zero_rule(w16_hi(m2e), ae, be, r2, bh, k0, k1, u2, ezero)
        d3 = _zero_rule(w16_hi(m3e), ae, be, r3, bh, k0, k1, u3, ezero)
        sc0, sc1, sc2, sc3 = _scale(e0, F), _scale(e1, F), _scale(e2, F), _scale(e3, F)
        sd0, sd1, sd2, sd3 = _scale(d0, F), _scale(d1, F), _scale(d2, F), _scale(d3, F)
        s0, s1 = f8_trunc(f8_mul(v0, sc0)), f8_trunc(f8_mul(v1, sc1))
        s2, s3 = f8_trunc(f8_mul(v2, sc2)), f8_trunc(f8_mul(v3, sc3))
        q0, q1 = f8_trunc(f8_mul(u0, sd0)), f8_trunc(f8_mul(u1, sd1))
        q2, q3 = f8_trunc(f8_mul(u2, sd2)), f8_trunc(f8_mul(u3, sd3))
        jn = k0 // L
        if not (bad[m0 * nb + jn] | bad[(m0 + 1) * nb + jn] | bad[(m0 + 2) * nb + jn] | bad[(m0 + 3) * nb + jn]
                | bad[boff + nt * nb + jn] | bad[boff + (nt + 1) * nb + jn]):
            t0 = s16_join(_scale(i8_max(e0, low), F), _scale(i8_max(d0, low), F))
            t1 = s16_join(_scale(i8_max(e1, low), F), _scale(i8_max(d1, low), F))
            t2 = s16_join(_scale(i8_max(e2, low), F), _scale(i8_max(d2, low), F))
            t3 = s16_join(_scale(i8_max(e3, low), F), _scale(i8_max(d3, low), F))
            y0 = y1 = y2 = y3 = w16_zeros()
            for k in range(k0, k1):
                b = s16_load(bv32, b16 + k * 16)
                y0 = w16_add(y0, s16_trunc(s16_mul(s16_mul(s16_bcast(av32, r0 + k), b), t0)))
                y1 = w16_add(y1, s16_trunc(s16_mul(s16_mul(s16_bcast(av32, r1 + k), b), t1)))
                y2 = w16_add(y2, s16_trunc(s16_mul(s16_mul(s16_bcast(av32, r2 + k), b), t2)))
                y3 = w16_add(y3, s16_trunc(s16_mul(s16_mul(s16_bcast(av32, r3 + k), b), t3)))
            s0, q0 = f8_add(s0, i8_to_f8(w16_lo(y0))), f8_add(q0, i8_to_f8(w16_hi(y0)))
            s1, q1 = f8_add(s1, i8_to_f8(w16_lo(y1))), f8_add(q1, i8_to_f8(w16_hi(y1)))
            s2, q2 = f8_add(s2, i8_to_f8(w16_lo(y2))), f8_add(q2, i8_to_f8(w16_hi(y2)))
            s3, q3 = f8_add(s3, i8_to_f8(w16_lo(y3))), f8_add(q3, i8_to_f8(w16_hi(y3)))
        else:
            s0, s1, s2, s3 = _sum4(av, bv, r0, r1, r2, r3, bl, k0, k1, s0, s1, s2, s3, sc0, sc1, sc2, sc3)
            q0, q1, q2, q3 = _sum4(av, bv, r0, r1, r2, r3, bh, k0, k1, q0, q1, q2, q3, sd0, sd1, sd2, sd3)
        w0, v0, h0 = _next_c(s0, e0, F, rc, prm)
        w1, v1, h1 = _next_c(s1, e1, F, rc, prm)
        w2, v2, h2 = _next_c(s2, e2, F, rc, prm)
        w3, v3, h3 = _next_c(s3, e3, F, rc, prm)
        x0, u0, g0 = _next_c(q0, d0, F, rc, prm)
        x1, u1, g1 = _next_c(q1, d1, F, rc, prm)
        x2, u2, g2 = _next_c(q2, d2, F, rc, prm)
        x3, u3, g3 = _next_c(q3, d3, F, rc, prm)
    _store4(cv, ce, dout, o, N, v0, v1, v2, v3, h0, h1, h2, h3, w0, w1, w2, w3, prm, j1 == bstart.size)
    _store4(cv, ce, dout, p, N, u0, u1, u2, u3, g0, g1, g2, g3, x0, x1, x2, x3, prm, j1 == bstart.size)


@njit(cache=True, parallel=True, _nrt=False)  # type: ignore[call-overload]  # numba's stubs omit _nrt
def chain(row0, row1, tm, tn, K, N, av, ae, bv, be, cv, ce, bstart, bend, per_pass, prm, dout, s32, bad, L):
    """D words (int64, row-major M x N: dout) of rows row0..row1-1: for every output element the
    chain of blocks [bstart[j], bend[j]) in order, from C (cv, ce: values and exponents, which
    end as D's).  Work items: tm rows x tn columns, each run ``per_pass`` blocks at a time (so
    that those columns of A's rows and rows of B's panels stay in cache) as 8-column tiles (pairs
    of them in 32-bit lanes where ``s32`` holds f16 inputs: ``_rows4x16``) of four rows."""
    ezero = _k(prm[P_EZERO])
    nrow = (row1 - row0) // tm
    ncol = N // tn
    pairs = s32[0].size > 0 and tn % 16 == 0
    for t in prange(nrow * ncol):
        m_lo = row0 + (t // ncol) * tm
        n_lo = (t % ncol) * tn
        for j0 in range(0, bstart.size, per_pass):
            j1 = min(bstart.size, j0 + per_pass)
            if pairs:
                for nt in range(n_lo // LANES, (n_lo + tn) // LANES, 2):
                    for m0 in range(m_lo, m_lo + tm, ROWS):
                        _rows4x16(m0, nt, K, N, av, ae, bv, be, cv, ce, bstart, bend, j0, j1, prm, ezero, dout,
                                  s32, bad, L)
            else:
                for nt in range(n_lo // LANES, (n_lo + tn) // LANES):
                    for m0 in range(m_lo, m_lo + tm, ROWS):
                        _rows4(m0, nt, K, N, av, ae, bv, be, cv, ce, bstart, bend, j0, j1, prm, ezero, dout)


def supports(pl) -> bool:
    """Whether this kernel computes a plan: the float model's ``Plan`` exactly as this kernel knows
    it (16-bit and tf32 inputs; f32 and f16 accumulators; 8 columns, rows in fours)."""
    from dataclasses import fields

    from . import Plan

    known = ("form", "arch", "in_fmt", "acc_fmt", "block", "frac_bits", "e_zero", "rounding")
    if type(pl) is not Plan or tuple(f.name for f in fields(Plan)) != known:
        return False
    f = pl.form
    return f.groups == 1 and f.shape[1] == LANES and f.shape[0] % ROWS == 0 \
        and pl.in_fmt.name in ("f16", "bf16", "tf32") and pl.acc_fmt.name in ("f16", "f32") \
        and f.fmt("B") == pl.in_fmt and f.fmt("C") == pl.acc_fmt == f.fmt("D")


def params(pl) -> np.ndarray:
    from .gather import index_maps
    from .kernel import make_params

    return make_params(pl, index_maps(pl.form))


__all__ = ["chain", "decode", "supports", "params", "ROWS"]
